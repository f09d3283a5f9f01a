/*
 * hw_common.h: shared vocabulary of headwater's core (no PostgreSQL headers).
 *
 * Semantic types, the error record every core function reports through, and
 * f16 <-> f32 conversion (frozen embeddings are stored as IEEE half).
 */
#ifndef HW_COMMON_H
#define HW_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

/* Semantic types of a cell; stored as int8 in batches. */
typedef enum HwSemanticType
{
	HW_ST_IDENTIFIER = 0,
	HW_ST_NUMERICAL = 1,
	HW_ST_TIMESTAMP = 2,
	HW_ST_BOOLEAN = 3,
	HW_ST_CATEGORICAL = 4,
	HW_ST_TEXT = 5,
	HW_ST_IGNORED = 6
} HwSemanticType;

#define HW_N_STYPES 7

/* Loss of a numerical target (a task option; carried by each batch).
 * HUBER:   Huber (delta 1) on the z-score: fits the mean, robust to outliers.
 * MAE:     smooth L1 (delta HW_MAE_SMOOTH on the z-score): fits the median,
 *          which is what the MAE that rt_evaluate reports rewards.
 * ORDINAL: integer labels spanning at most HW_ORD_LEVELS + 1 values (counts,
 *          ratings): one logistic loss per threshold k, on "label > min + k"
 *          (the model's ordinal head, head.ord); the prediction is the
 *          median of that distribution.  On request (task.h
 *          hw_task_ordinal_levels). */
typedef enum HwNumLoss
{
	HW_NUM_LOSS_HUBER = 0,
	HW_NUM_LOSS_MAE = 1,
	HW_NUM_LOSS_ORDINAL = 2
} HwNumLoss;
#define HW_N_NUM_LOSSES 3
/* The ordinal head's thresholds: P(label > min + k), k = 0..HW_ORD_LEVELS-1. */
#define HW_ORD_LEVELS 16

#define HW_MAE_SMOOTH 0.05f

/* The name tables of the enums: names[v] for 0 <= v < n, else NULL; and
 * the index of s among names[0..n), -1 if absent or s is NULL. */
const char *hw_enum_name(const char *const *names, int n, int v);
int         hw_enum_from_name(const char *const *names, int n, const char *s);

const char *hw_num_loss_name(int loss);           /* "huber", "mae", "ordinal"; NULL if out of range */
int         hw_num_loss_from_name(const char *s); /* -1 if unknown */
const char *hw_stype_name(int stype);      /* "identifier", ... ; NULL if out of range */
int         hw_stype_from_name(const char *name);  /* -1 if unknown */

/* Observation time meaning "no cutoff" and row time meaning "table has no time". */
#define HW_NO_CUTOFF   INT64_MAX
#define HW_NO_TIME     INT64_MIN

/* Error codes of the core; src/pg maps them to SQLSTATEs. */
typedef enum HwErrorCode
{
	HW_OK = 0,
	HW_ERR_NOMEM,        /* allocation failed */
	HW_ERR_INVALID,      /* bad argument / shape / config */
	HW_ERR_CORRUPT,      /* serialized data malformed or of another format version */
	HW_ERR_NUMERIC,      /* NaN/Inf in loss or gradients */
	HW_ERR_CANCELLED,    /* stopped on request */
	HW_ERR_INTERNAL      /* broken invariant */
} HwErrorCode;

typedef struct HwError
{
	int  code;
	char msg[512];
} HwError;

/* Sets err (if not NULL) and returns code; printf-style message. */
int hw_error_set(HwError *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Stable 64-bit hash of a key's canonical text (FNV-1a 64 then a murmur3
 * finaliser); fixed forever: persisted snapshots depend on it. */
uint64_t hw_hash_key_text(const char *s, size_t len);

/* IEEE 754 binary16 conversion (round to nearest even). */
uint16_t hw_f32_to_f16(float f);
float    hw_f16_to_f32(uint16_t h);

#endif /* HW_COMMON_H */
