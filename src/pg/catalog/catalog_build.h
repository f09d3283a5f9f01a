/* catalog_build.h: one build of a model (catalog_build.c). */
#ifndef HW_CATALOG_BUILD_H
#define HW_CATALOG_BUILD_H

#include "postgres.h"

/* Builds model `model` from `schema` with `options` (jsonb Datum) and
 * persists it; model_id < 0 creates a new model owned by `owner`, otherwise
 * replaces the derived rows of model_id.  Returns a palloc'd summary line.
 * Caller must not be connected to SPI. */
char *hw_catalog_build(const char *model, int32 model_id, const char *schema, Datum options, Oid owner);

#endif
