/*
 * settings_json.c: the settings table (settings.h) read from and written to
 * jsonb (hw_settings_pg.h), and rt_settings(), the table as rows.
 *
 * Options objects are walked once with a JsonbIterator and each member goes
 * to the table; a checkpoint's config is built with pushJsonbValue and read
 * with container lookups: no JSON text is concatenated and no SQL is run to
 * read JSON.
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "pg/base/hw_settings_pg.h"

void
hw_pg_setting_value(const JsonbValue *v, HwSettingValue *out)
{
	memset(out, 0, sizeof(*out));
	switch (v->type)
	{
		case jbvNull:
			out->kind = HW_JSON_NULL;
			break;
		case jbvBool:
			out->kind = HW_JSON_BOOL;
			out->b = v->val.boolean;
			break;
		case jbvString:
			out->kind = HW_JSON_STRING;
			out->str = pnstrdup(v->val.string.val, v->val.string.len);
			break;
		case jbvNumeric:
			{
				char       *s = DatumGetCString(DirectFunctionCall1(numeric_out,
																	NumericGetDatum(v->val.numeric)));

				out->num = strtod(s, NULL);
				out->kind = isfinite(out->num) ? HW_JSON_NUMBER : HW_JSON_OTHER;
				break;
			}
		default:
			out->kind = HW_JSON_OTHER;
			break;
	}
}

char *
hw_pg_json_value_text(const JsonbValue *v)
{
	char       *s;
	int         len;

	if (v->type == jbvBinary)
		s = JsonbToCString(NULL, v->val.binary.data, v->val.binary.len);
	else
	{
		JsonbValue  copy = *v;
		Jsonb      *j = JsonbValueToJsonb(&copy);

		s = JsonbToCString(NULL, &j->root, VARSIZE(j));
	}
	len = strlen(s);
	if (len > 60)
		s = psprintf("%.*s...", pg_mbcliplen(s, len, 57), s);
	return s;
}

char *
hw_pg_json_scalar_text(const JsonbValue *v)
{
	if (v->type == jbvString)
		return pnstrdup(v->val.string.val, v->val.string.len);
	return hw_pg_json_value_text(v);
}

void
hw_pg_jsonb_each(JsonbContainer *object, HwJsonMemberFn fn, void *arg)
{
	JsonbIterator *it = JsonbIteratorInit(object);
	JsonbValue  k, v;
	JsonbIteratorToken tok;

	while ((tok = JsonbIteratorNext(&it, &k, true)) != WJB_DONE)
	{
		char       *key;

		if (tok != WJB_KEY)
			continue;
		key = pnstrdup(k.val.string.val, k.val.string.len);
		(void) JsonbIteratorNext(&it, &v, true);
		fn(key, &v, arg);
	}
}

char *
hw_pg_setting_hint(const HwSettingDef *d)
{
	char        buf[1024];

	hw_setting_hint(d, buf, sizeof(buf));
	return pstrdup(buf);
}

char *
hw_pg_setting_names(unsigned flags)
{
	StringInfoData s;

	initStringInfo(&s);
	for (const HwSettingDef *d = hw_settings; d->name != NULL; d++)
		if ((d->flags & flags) == flags)
			appendStringInfo(&s, "%s%s", s.len ? ", " : "", d->name);
	return s.data;
}

/* ------------------------------------------------------------ checkpoint config */

void
hw_pg_jsonb_push_string(JsonbParseState **ps, JsonbIteratorToken tok, const char *s)
{
	JsonbValue  v;

	v.type = jbvString;
	v.val.string.val = pstrdup(s);     /* the parse state keeps the pointer */
	v.val.string.len = strlen(s);
	(void) pushJsonbValue(ps, tok, &v);
}

static void
push_key(JsonbParseState **ps, const char *key)
{
	hw_pg_jsonb_push_string(ps, WJB_KEY, key);
}

/* One value from its JSON text (hw_setting_format's kinds); the parse
 * state keeps pointers into the value until the end, so a string is copied. */
static void
push_value(JsonbParseState **ps, HwJsonKind kind, const char *text)
{
	JsonbValue  v;

	if (kind == HW_JSON_BOOL)
	{
		v.type = jbvBool;
		v.val.boolean = strcmp(text, "true") == 0;
	}
	else if (kind == HW_JSON_STRING)
	{
		v.type = jbvString;
		v.val.string.val = pstrdup(text);
		v.val.string.len = strlen(text);
	}
	else
	{
		v.type = jbvNumeric;
		v.val.numeric = DatumGetNumeric(DirectFunctionCall3(numeric_in, CStringGetDatum(text),
															ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1)));
	}
	(void) pushJsonbValue(ps, WJB_VALUE, &v);
}

/* "hidden_names": the sampler's list (HW_NAME_SEP between names) as an array
 * of "table.column" strings */
static void
push_hidden_names(JsonbParseState **ps, const char *list)
{
	push_key(ps, "hidden_names");
	(void) pushJsonbValue(ps, WJB_BEGIN_ARRAY, NULL);
	for (const char *p = list; *p;)
	{
		const char *end = strchr(p, HW_NAME_SEP);
		size_t      n = end ? (size_t) (end - p) : strlen(p);

		hw_pg_jsonb_push_string(ps, WJB_ELEM, pnstrdup(p, n));
		p += n + (end != NULL);
	}
	(void) pushJsonbValue(ps, WJB_END_ARRAY, NULL);
}

char *
hw_pg_hidden_names_from_jsonb(JsonbContainer *config)
{
	JsonbValue *arr = config ? getKeyJsonValueFromContainer(config, "hidden_names", strlen("hidden_names"), NULL) : NULL;
	StringInfoData buf;

	if (arr == NULL || arr->type != jbvBinary || !JsonContainerIsArray(arr->val.binary.data))
		return NULL;
	initStringInfo(&buf);
	for (uint32 i = 0; i < JsonContainerSize(arr->val.binary.data); i++)
	{
		JsonbValue *e = getIthJsonbValueFromContainer(arr->val.binary.data, i);

		if (e == NULL || e->type != jbvString)
			continue;
		if (buf.len > 0)
			appendStringInfoChar(&buf, HW_NAME_SEP);
		appendBinaryStringInfo(&buf, e->val.string.val, e->val.string.len);
	}
	return buf.data;
}

Jsonb *
hw_pg_settings_to_jsonb(const HwSettings *st, const char *preset)
{
	JsonbParseState *ps = NULL;
	char        buf[64];

	(void) pushJsonbValue(&ps, WJB_BEGIN_OBJECT, NULL);
	push_key(&ps, "preset");
	push_value(&ps, HW_JSON_STRING, preset);
	push_key(&ps, "total_steps");
	snprintf(buf, sizeof(buf), "%d", st->mcfg.total_steps);
	push_value(&ps, HW_JSON_NUMBER, buf);
	for (const HwSettingDef *d = hw_settings; d->name != NULL; d++)
	{
		HwJsonKind  kind;

		if (!(d->flags & HW_SETTING_STORED))
			continue;
		kind = hw_setting_format(st, d, buf, sizeof(buf));
		push_key(&ps, d->name);
		push_value(&ps, kind, buf);
	}
	if (st->scfg.hidden_names != NULL)
		push_hidden_names(&ps, st->scfg.hidden_names);
	return JsonbValueToJsonb(pushJsonbValue(&ps, WJB_END_OBJECT, NULL));
}

/* A row's absent value (JSON text of a scalar) as the table reads it. */
static void
absent_value(const char *json, HwSettingValue *v)
{
	memset(v, 0, sizeof(*v));
	if (strcmp(json, "true") == 0 || strcmp(json, "false") == 0)
	{
		v->kind = HW_JSON_BOOL;
		v->b = json[0] == 't';
	}
	else if (json[0] == '"')
	{
		v->kind = HW_JSON_STRING;
		v->str = pnstrdup(json + 1, strlen(json) - 2);
	}
	else
	{
		v->kind = HW_JSON_NUMBER;
		v->num = strtod(json, NULL);
	}
}

void
hw_pg_settings_from_jsonb(JsonbContainer *config, HwSettings *st, bool *present, bool *valid)
{
	for (const HwSettingDef *d = hw_settings; d->name != NULL; d++)
	{
		int         i = hw_setting_index(d);
		JsonbValue *v;
		HwSettingValue sv;

		present[i] = false;
		valid[i] = true;
		if (!(d->flags & HW_SETTING_STORED))
			continue;
		if (d->absent != NULL)
		{
			absent_value(d->absent, &sv);
			(void) hw_setting_read_stored(st, d, &sv);
		}
		v = config != NULL && JsonContainerIsObject(config)
			? getKeyJsonValueFromContainer(config, d->name, strlen(d->name), NULL) : NULL;
		if (v == NULL)
			continue;
		present[i] = true;
		hw_pg_setting_value(v, &sv);
		valid[i] = hw_setting_read_stored(st, d, &sv);
	}
}

/* ------------------------------------------------------------ rt_settings() */

PG_FUNCTION_INFO_V1(rt_settings);
Datum
rt_settings(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	for (const HwSettingDef *d = hw_settings; d->name != NULL; d++)
	{
		char        range[256], dflt[256];
		Datum       values[7];
		bool        nulls[7] = {0};

		hw_setting_range_text(d, range, sizeof(range));
		hw_setting_default_text(d, dflt, sizeof(dflt));
		values[0] = CStringGetTextDatum(d->name);
		values[1] = CStringGetTextDatum(hw_setting_type_name(d->type));
		values[2] = CStringGetTextDatum(range);
		values[3] = CStringGetTextDatum(dflt);
		values[4] = CStringGetTextDatum(hw_setting_group_name(d->group));
		values[5] = BoolGetDatum((d->flags & HW_SETTING_KEPT) != 0);
		values[6] = CStringGetTextDatum(d->what);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
