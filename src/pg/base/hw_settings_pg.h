/*
 * hw_settings_pg.h: the settings table (settings.h) meets jsonb
 * (settings_json.c): options objects walked into name/value pairs for the
 * table, a checkpoint's config written and read as one jsonb.
 */
#ifndef HW_SETTINGS_PG_H
#define HW_SETTINGS_PG_H

#include "postgres.h"

#include "utils/jsonb.h"

#include "core/settings.h"

/* A JSON value as the table reads it (strings copied, NUL-terminated). */
void        hw_pg_setting_value(const JsonbValue *v, HwSettingValue *out);

/* A JSON value as text for a message, clipped to about 60 bytes. */
char       *hw_pg_json_value_text(const JsonbValue *v);

/* A JSON value for "got ...": a string without its quotes, else its JSON text. */
char       *hw_pg_json_scalar_text(const JsonbValue *v);

/* Calls fn(key, value, arg) for each member of a JSON object, in jsonb's order. */
typedef void (*HwJsonMemberFn) (const char *key, const JsonbValue *value, void *arg);
void        hw_pg_jsonb_each(JsonbContainer *object, HwJsonMemberFn fn, void *arg);

/* pushJsonbValue of a string (a key, a value or an array element). */
void        hw_pg_jsonb_push_string(JsonbParseState **ps, JsonbIteratorToken tok, const char *s);

/* The table's hint of a setting, palloc'd. */
char       *hw_pg_setting_hint(const HwSettingDef *d);

/* "a, b, c": the names of the rows with every flag of `flags` (0: all). */
char       *hw_pg_setting_names(unsigned flags);

/* A checkpoint's config: "preset", "total_steps", every
 * HW_SETTING_STORED setting of st, and "hidden_names" (the anchor names
 * its sampler hid, sampler.h) when st->scfg.hidden_names is set. */
Jsonb      *hw_pg_settings_to_jsonb(const HwSettings *st, const char *preset);

/* A stored config's "hidden_names" as the sampler takes them (joined by
 * HW_NAME_SEP; palloc'd), or NULL when it has none (a checkpoint from
 * before the list: the rule decides). */
char       *hw_pg_hidden_names_from_jsonb(JsonbContainer *config);

/* Reads a stored config into st (which holds the defaults of what it
 * lacks): a stored setting present in it is read as found (present[i]); one
 * absent takes the row's absent value when it has one; valid[i] is false
 * where the stored value is not of its type or range. */
void        hw_pg_settings_from_jsonb(JsonbContainer *config, HwSettings *st, bool *present, bool *valid);

#endif
