/*
 * settings.h: every setting of a training job, defined once (no PostgreSQL
 * headers).
 *
 * hw_settings[] (settings.c) has one row per setting: its name, type and
 * range, its default, the group it belongs to, the field of HwSettings it
 * fills, whether a resumed run keeps it from its checkpoint, whether each
 * checkpoint stores it, whether rt_sample_batches takes it too, and the one
 * line that describes it.  Everything else reads the table: rt_train's
 * options, their hints and the merge of a resumed run
 * (src/pg/train/train_options.c), rt_sample_batches's sampler options
 * (src/pg/task/batch_sql.c), the config each checkpoint stores, written and read
 * as one jsonb (src/pg/base/settings_json.c, src/pg/train/checkpoint.c), rt_settings() and
 * the option table of docs/user_guide.md (checked against the table by
 * test/unit/test_settings.c).
 *
 * Adding an option is one row in hw_settings[] plus the code that uses its
 * field: a new field goes in HwSettings (or in HwModelConfig /
 * HwSamplerConfig, which it contains), the row points at it with offsetof,
 * and the user guide's table gets the line rt_settings() prints for it.
 */
#ifndef HW_SETTINGS_H
#define HW_SETTINGS_H

#include "core/hw_common.h"
#include "core/model.h"
#include "core/sampler.h"

typedef enum HwSettingType
{
	HW_SETTING_BOOL,        /* true / false */
	HW_SETTING_FLAG,        /* true / false, or 1 / 0 */
	HW_SETTING_INT,         /* an integral number in [min, max] */
	HW_SETTING_NUM,         /* a number in [min, max] ((min, max] when min_exclusive) */
	HW_SETTING_ENUM,        /* one of the names of names_of(0), names_of(1), ... */
	HW_SETTING_DEVICES,     /* "all" or an integral number in [min, max] */
	HW_SETTING_WEIGHTS      /* {"task": number in [min, max], ...}; no field (the caller reads it) */
} HwSettingType;

typedef enum HwSettingGroup
{
	HW_GROUP_MODEL,         /* the model's shape, inputs and optimiser */
	HW_GROUP_SAMPLER,       /* what a sequence holds */
	HW_GROUP_SCHEDULE,      /* when to validate, checkpoint, log, stop */
	HW_GROUP_INFRA          /* threads, ranks, devices */
} HwSettingGroup;

/* The C type of the field a setting fills. */
typedef enum HwFieldType
{
	HW_FIELD_NONE,
	HW_FIELD_BOOL,
	HW_FIELD_I32,
	HW_FIELD_U64,
	HW_FIELD_F32,
	HW_FIELD_F64
} HwFieldType;

/* HwSettingDef.flags */
#define HW_SETTING_KEPT     0x1  /* a resumed run keeps its checkpoint's value unless the call names it */
#define HW_SETTING_STORED   0x2  /* each checkpoint's config holds it */
#define HW_SETTING_SAMPLE   0x4  /* also an option of rt_sample_batches */

typedef struct HwSettingDef
{
	const char *name;
	HwSettingType type;
	double      min, max;
	bool        min_exclusive;
	const char *(*names_of)(int value);  /* HW_SETTING_ENUM: a value's name, NULL past the last */
	double      dflt;                    /* the default, unless dflt_text says otherwise */
	const char *dflt_text;               /* NULL: dflt; else how the default is found (preset, computed) */
	HwSettingGroup group;
	size_t      offset;                  /* of the field in HwSettings */
	HwFieldType field;
	unsigned    flags;
	const char *absent;                  /* HW_SETTING_STORED: what a config without it (written before the
										  * setting existed) means, as JSON; NULL: it keeps the current value */
	const char *hint;                    /* a hint of its own (else the one its type and range make) */
	const char *choices;                 /* HW_SETTING_ENUM: what each name means (rt_sample_batches's hint) */
	const char *what;                    /* one line: what the value means */
} HwSettingDef;

/* The validated settings of one training job: rt_train's arguments and
 * options.  The calling backend fills it (hw_settings_defaults, one
 * hw_setting_apply per option, hw_settings_finish) and hands it to the
 * training worker as it is. */
typedef struct HwSettings
{
	int32_t     steps;              /* total optimiser steps */
	char        preset[16];         /* tiny | small | base ('auto' resolved) */
	char        device[16];         /* auto | cpu | cuda */
	bool        restart;
	int32_t     log_every;
	int32_t     val_every;          /* -1 until hw_settings_finish: checkpoint_every */
	bool        val_by_time;        /* max_minutes without val_every: validations spaced by time (core/budget.h) */
	int32_t     val_batches;
	int32_t     val_rows;           /* per task: its own metric on min(n_val, val_rows) val rows */
	int32_t     checkpoint_every;
	int32_t     threads;            /* as asked; 0 = every CPU (the worker clamps) */
	int32_t     train_precision;    /* HwPrecision of the layers' training GEMMs (model.h) */
	double      progress_seconds;
	double      max_minutes;        /* time budget of the call; 0: none */
	/* data parallel (docs/distributed.md): ranks x grad_accum micro-batches per step */
	int32_t     ranks;              /* options ranks / devices (1) */
	bool        devices_all;        /* devices: "all": every visible GPU (the worker resolves it) */
	bool        ranks_given;
	int32_t     grad_accum;         /* micro-batches per rank and step (1) */
	int32_t     check_every;        /* steps between parameter checksum comparisons (100) */
	double      rank_timeout;       /* seconds a collective waits for every rank (600) */
	HwModelConfig   mcfg;           /* preset + overrides */
	HwSamplerConfig scfg;           /* batch_size, seq_len, seed copied from mcfg by hw_settings_finish */
} HwSettings;

/* The table, NULL-terminated (name NULL), in the order hints and docs list it. */
extern const HwSettingDef hw_settings[];
#define HW_SETTINGS_MAX 64          /* rows at most (bitmaps of settings) */
#define HW_SETTINGS_MAX_RANKS 64    /* data-parallel ranks (threads or GPUs) */

int         hw_settings_count(void);
/* The row of a name, or NULL. */
const HwSettingDef *hw_setting_find(const char *name);
int         hw_setting_index(const HwSettingDef *d);

/* A JSON value handed to the table (the PostgreSQL layer reads the JSON). */
typedef enum HwJsonKind
{
	HW_JSON_NULL,
	HW_JSON_BOOL,
	HW_JSON_NUMBER,         /* finite */
	HW_JSON_STRING,
	HW_JSON_OTHER           /* object, array, or a number out of double's range */
} HwJsonKind;

typedef struct HwSettingValue
{
	HwJsonKind  kind;
	bool        b;
	double      num;
	const char *str;        /* NUL-terminated */
} HwSettingValue;

/* Defaults: the preset's model, the sampler's defaults, every row's default
 * and the computed ones (warmup_steps, checkpoint_every) for `steps`.
 * HW_ERR_INVALID for an unknown preset. */
int         hw_settings_defaults(HwSettings *st, const char *preset, int32_t steps, HwError *err);
/* Checks v against d's type and range and writes it; HW_ERR_INVALID when
 * it does not fit (the caller reports with hw_setting_hint).  WEIGHTS: only
 * "an object" is checked here (each weight: hw_setting_number_ok). */
int         hw_setting_apply(HwSettings *st, const HwSettingDef *d, const HwSettingValue *v, HwError *err);
/* Whether x is in d's range (min exclusive or not, max inclusive). */
bool        hw_setting_number_ok(const HwSettingDef *d, double x);
/* After the options: val_every's default, and the sampler's copies of
 * batch_size, seq_len, seed and threads. */
void        hw_settings_finish(HwSettings *st);

/* A setting's value as a number (bools 0/1, enums their index, devices -1 for all). */
double      hw_setting_get(const HwSettings *st, const HwSettingDef *d);
void        hw_setting_set(HwSettings *st, const HwSettingDef *d, double x);
/* A stored value (a checkpoint's config): written without the range check;
 * false when it is not of d's type or out of its range (its default is
 * always in range).  An enum name it does not know leaves d's absent value. */
bool        hw_setting_read_stored(HwSettings *st, const HwSettingDef *d, const HwSettingValue *v);
/* The value as JSON text into buf ("16", "0.003", "true"; strings without
 * quotes); returns its kind (HW_JSON_NUMBER, _BOOL or _STRING). */
HwJsonKind  hw_setting_format(const HwSettings *st, const HwSettingDef *d, char *buf, size_t n);

/* Texts (into buf, n bytes): the hint of a bad value ("x must be an integer
 * from 1 to 64 (...)."), the type and range ("integer 1..64"), the default
 * ("16", "preset"), the group ("sampler"). */
void        hw_setting_hint(const HwSettingDef *d, char *buf, size_t n);
void        hw_setting_range_text(const HwSettingDef *d, char *buf, size_t n);
void        hw_setting_default_text(const HwSettingDef *d, char *buf, size_t n);
const char *hw_setting_group_name(HwSettingGroup g);
const char *hw_setting_type_name(HwSettingType t);
/* A number as the texts show it: integers without a fraction, else %g. */
void        hw_setting_fmt_num(double x, char *buf, size_t n);

#endif
