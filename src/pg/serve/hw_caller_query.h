/*
 * hw_caller_query.h: a caller's query text, checked to be one plain SELECT
 * before anything of it runs (rt_predict_table, rt_predict_into).
 */
#ifndef HW_CALLER_QUERY_H
#define HW_CALLER_QUERY_H

#include "postgres.h"
#include "executor/spi.h"
#include "utils/portal.h"

/*
 * Parses and analyses query as the calling role (connected to SPI), ERROR
 * 0A000 naming fn and task unless it is exactly one plain SELECT (no other
 * statement, no data-modifying WITH, no FOR UPDATE/SHARE, no SELECT INTO,
 * no utility statement such as EXPLAIN or SHOW), then opens it as a
 * read-only cursor.  Nothing of a refused query is executed.
 */
Portal hw_caller_select_open(const char *query, const char *fn, const char *task_ref);

#endif
