/*
 * caller_query.c: the caller's query of rt_predict_table / rt_predict_into,
 * accepted only as one plain SELECT.
 *
 * The query is the caller's own text, run as the caller: it can do nothing
 * the role could not do in its own session.  But the functions promise to
 * read rows, and a caller (or code building the text from input) may rely
 * on that: an INSERT ... RETURNING, a writable WITH, EXPLAIN ANALYZE of a
 * write or SELECT ... FOR UPDATE would otherwise run (SPI opens any of them
 * as a cursor).  So the text is checked twice before it runs: the raw parse
 * tree (one SelectStmt, no INTO, no locking clause) refuses a statement
 * before parse analysis takes any lock for it, and the analysed Query (a
 * CMD_SELECT without utility statement, data-modifying CTE or row marks,
 * at any depth) catches what only analysis shows.  The cursor is then
 * opened read-only, so PostgreSQL itself refuses anything that is not
 * read-only.  Volatile functions the SELECT calls still run, as the caller
 * with the caller's rights (docs/security.md).
 */
#include "postgres.h"

#include "nodes/nodeFuncs.h"
#include "nodes/parsenodes.h"
#include "parser/parser.h"
#include "tcop/utility.h"
#include "utils/plancache.h"

#include "pg/serve/hw_caller_query.h"

static void
refuse(const char *fn, const char *task_ref, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("%s accepts one plain SELECT as the query of task \"%s\", not %s", fn, task_ref, what),
			 errhint("Pass one SELECT returning the key columns and optionally obs_time; "
					 "no other statement, no INSERT/UPDATE/DELETE in WITH, no FOR UPDATE/SHARE, no INTO.")));
}

/* A syntax error points into the caller's query, not the outer statement
 * (as SPI reports it). */
static void
raw_parse_error_callback(void *arg)
{
	int pos = geterrposition();

	if (pos > 0)
	{
		errposition(0);
		internalerrposition(pos);
		internalerrquery((const char *) arg);
	}
}

/* The raw parse tree: one SelectStmt, checked before parse analysis. */
static void
check_raw(const char *query, const char *fn, const char *task_ref)
{
	ErrorContextCallback cb = {.previous = error_context_stack, .callback = raw_parse_error_callback,
							   .arg = (void *) query};
	List       *stmts;
	RawStmt    *raw;
	SelectStmt *sel;

	error_context_stack = &cb;
	stmts = raw_parser(query, RAW_PARSE_DEFAULT);
	error_context_stack = cb.previous;

	if (list_length(stmts) != 1)
		refuse(fn, task_ref, list_length(stmts) == 0 ? "an empty query" : "several statements");
	raw = linitial_node(RawStmt, stmts);
	if (!IsA(raw->stmt, SelectStmt))
		refuse(fn, task_ref, psprintf("a %s statement", CreateCommandName(raw->stmt)));
	sel = (SelectStmt *) raw->stmt;
	if (sel->intoClause != NULL)
		refuse(fn, task_ref, "SELECT INTO");
	if (sel->lockingClause != NIL)
		refuse(fn, task_ref, "SELECT ... FOR UPDATE/SHARE");
}

/* True when a Query of the analysed tree (subqueries, CTEs and sublinks
 * included) is not a plain SELECT. */
static bool
query_writes_or_locks(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
	{
		Query *q = (Query *) node;

		if (q->commandType != CMD_SELECT || q->utilityStmt != NULL)
			return true;
		if (q->hasModifyingCTE || q->rowMarks != NIL)
			return true;
		return query_tree_walker(q, query_writes_or_locks, context, 0);
	}
	return expression_tree_walker(node, query_writes_or_locks, context);
}

static void
check_analysed(SPIPlanPtr plan, const char *fn, const char *task_ref)
{
	List     *sources = SPI_plan_get_plan_sources(plan);
	ListCell *lc;

	if (list_length(sources) != 1)
		refuse(fn, task_ref, "several statements");
	foreach(lc, sources)
	{
		CachedPlanSource *src = (CachedPlanSource *) lfirst(lc);

		if (list_length(src->query_list) != 1)
			refuse(fn, task_ref, "a statement that rewrites into several");
		if (query_writes_or_locks((Node *) linitial(src->query_list), NULL))
			refuse(fn, task_ref, "a statement that writes, locks rows or is not a query");
	}
}

Portal
hw_caller_select_open(const char *query, const char *fn, const char *task_ref)
{
	SPIPlanPtr plan;

	check_raw(query, fn, task_ref);
	plan = SPI_prepare(query, 0, NULL);
	if (plan == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s could not prepare the query of task \"%s\": %s", fn, task_ref,
						SPI_result_code_string(SPI_result)),
				 errhint("Pass one SELECT returning the key columns and optionally obs_time.")));
	check_analysed(plan, fn, task_ref);
	/* read-only: PostgreSQL refuses any statement that is not */
	return SPI_cursor_open(NULL, plan, NULL, NULL, true);
}
