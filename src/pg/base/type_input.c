/*
 * type_input.c: a user's text read through a built-in type's input function
 * (a timestamp, an interval), where a value the type rejects must become
 * headwater's own error, worded with the object it belongs to, and anything
 * else (a cancel, out of memory) must go on as it was.
 */
#include "postgres.h"

#include "fmgr.h"
#include "pg/base/hw_pg.h"

bool
hw_pg_try_type_input(PGFunction input_fn, const char *s, Datum *result)
{
	MemoryContext mcx = CurrentMemoryContext;
	volatile bool ok = true;
	volatile Datum d = (Datum) 0;

	PG_TRY();
	{
		d = DirectFunctionCall3(input_fn, CStringGetDatum(s), ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
	}
	PG_CATCH();
	{
		ErrorData *ed;

		MemoryContextSwitchTo(mcx);
		ed = CopyErrorData();
		/* only a value the type rejects is ours to word */
		if (ERRCODE_TO_CATEGORY(ed->sqlerrcode) != ERRCODE_DATA_EXCEPTION)
			PG_RE_THROW();
		FlushErrorState();
		FreeErrorData(ed);
		ok = false;
	}
	PG_END_TRY();
	*result = d;
	return ok;
}
