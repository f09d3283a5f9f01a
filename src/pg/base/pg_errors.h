/*
 * pg_errors.h: mapping of core errors (hw_common.h) to ereport(ERROR).
 */
#ifndef HW_PG_ERRORS_H
#define HW_PG_ERRORS_H

#include "postgres.h"

#include "core/hw_common.h"

/* Maps a core HwError to ereport(ERROR) with a fitting SQLSTATE; the message
 * is "context_msg: core message". */
void hw_pg_raise_core_error(const HwError *err, const char *context_msg) pg_attribute_noreturn();

#endif
