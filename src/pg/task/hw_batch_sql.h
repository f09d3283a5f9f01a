/*
 * hw_batch_sql.h: what batch_sql.c (storing sampled batches) and
 * batch_read.c (reading them back) share.
 */
#ifndef HW_BATCH_SQL_H
#define HW_BATCH_SQL_H

#include "postgres.h"

#include "utils/array.h"

/* _row_global / _row_vseed of no row */
#define NO_ROW 0xffffffffu
/* _row_vseed of context label k (prediction): CTX_ROW_BASE - k */
#define CTX_ROW_BASE 0xfffffffeu

/* ERROR unless the caller may use the model (owner, member, superuser);
 * caller connected to SPI.  Returns the model's source schema. */
char       *hw_batch_check_model(int32 model_id, const char *what);
/* int4[] of n values. */
ArrayType  *hw_batch_int_array(const int64 *v, int n);

#endif
