/*
 * pg_model_lookup.c: a model's id from its name (see pg_model_lookup.h).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "pg/base/pg_spi_saved.h"
#include "pg/base/pg_model_lookup.h"
#include "pg/base/pg_owner.h"

int32
hw_pg_model_id(const char *model_name, bool missing_ok)
{
	HwAsOwner as;
	int32 id = -1;
	bool isnull;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	hw_become_owner(&as);
	if (hw_spi_execute_saved("SELECT model_id FROM headwater.model WHERE name = $1",
							  1, (Oid[]) {TEXTOID}, (Datum[]) {CStringGetTextDatum(model_name)},
							  NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "model lookup failed");
	if (SPI_processed == 1)
		id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	hw_restore_user(&as);
	SPI_finish();
	if (id < 0 && !missing_ok)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("model \"%s\" does not exist", model_name),
				 errhint("Create it with SELECT rt_create_model(%s, '<schema>').", quote_literal_cstr(model_name))));
	return id;
}
