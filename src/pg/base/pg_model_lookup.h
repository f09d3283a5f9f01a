/*
 * pg_model_lookup.h: a model's id from its name.  No access check: the
 * caller checks the right it needs (hw_model_require, access.c).
 */
#ifndef HW_PG_MODEL_LOOKUP_H
#define HW_PG_MODEL_LOOKUP_H

#include "postgres.h"

/* Model id of `model_name` (headwater.model.model_id); ERROR with SQLSTATE
 * 42704 and a hint when it does not exist, unless missing_ok (then -1).
 * Connects to SPI itself: the caller must not be connected. */
int32 hw_pg_model_id(const char *model_name, bool missing_ok);

#endif
