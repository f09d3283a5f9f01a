-- sql/include/err.sql: shared by the pg_regress suites (\i from the repo
-- root, where pg_regress runs psql).  pg_temp.err(call): the error of a call
-- as (sqlstate, message, hint); ('-', 'no error', NULL) if it succeeds.
CREATE FUNCTION pg_temp.err(call text, OUT code text, OUT message text, OUT hint text)
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE call;
	code := '-';
	message := 'no error';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS code = RETURNED_SQLSTATE, message = MESSAGE_TEXT, hint = PG_EXCEPTION_HINT;
END $$;
