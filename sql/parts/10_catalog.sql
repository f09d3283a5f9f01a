-- ---------------------------------------------------------------------------
-- 10_catalog.sql: the relational catalog (rt_create_model and friends) and
-- the persisted snapshot (code: src/pg/catalog/).
--
-- The tables hold user state (models and their derived snapshot): they are
-- dumped with the extension, and PUBLIC cannot touch them.  The C entry points
-- read the SOURCE tables as the calling role and write these tables as the
-- extension owner (see src/pg/catalog/catalog_priv.h).
-- ---------------------------------------------------------------------------

CREATE TABLE headwater.model (
	model_id        serial PRIMARY KEY,
	name            text NOT NULL UNIQUE,
	source_schema   text NOT NULL,
	options         jsonb NOT NULL DEFAULT '{}',   -- includes the user's overrides
	d_text          int NOT NULL,
	embedder        text NOT NULL,
	owner           regrole NOT NULL,
	created_at      timestamptz NOT NULL DEFAULT now(),
	refreshed_at    timestamptz,
	snapshot_format int,                           -- HW_SNAPSHOT_FORMAT_VERSION of the stored snapshot
	snapshot_bytes  bigint,
	n_tables        int,
	n_rows          bigint,
	n_cells         bigint,                        -- non-ignored cells (rows x columns)
	n_edges         bigint                         -- FK edges (child -> parent)
);

CREATE TABLE headwater.model_table (
	model_id     int NOT NULL REFERENCES headwater.model ON DELETE CASCADE,
	table_idx    int NOT NULL,                     -- index in the snapshot
	table_name   text NOT NULL,
	n_rows       bigint NOT NULL,
	pk_columns   text[],                           -- NULL: no primary key (child only)
	time_column  text,
	row_order    text NOT NULL,                    -- how rows are numbered
	time_reason  text NOT NULL,                    -- why time_column was chosen, or why there is none
	PRIMARY KEY (model_id, table_idx)
);

CREATE TABLE headwater.model_column (
	model_id       int NOT NULL REFERENCES headwater.model ON DELETE CASCADE,
	table_idx      int NOT NULL,
	column_idx     int NOT NULL,                   -- index in the snapshot table (source order)
	table_name     text NOT NULL,
	column_name    text NOT NULL,
	sql_type       text NOT NULL,
	stype          text NOT NULL,                  -- semantic type in use
	inferred_stype text NOT NULL,                  -- what inference chose
	overridden     bool NOT NULL DEFAULT false,
	is_time_column bool NOT NULL DEFAULT false,
	global_id      int,                            -- row of col_emb; NULL when ignored
	null_count     bigint NOT NULL,
	n_rows         bigint NOT NULL,
	stats          jsonb NOT NULL,
	cat_emb_start  int,
	cat_emb_count  int,
	fk_target      text,                           -- 'table.column' (several: comma-separated)
	inference      text NOT NULL,                  -- why stype (and, for a timestamp, why it is or is not the time column)
	PRIMARY KEY (model_id, table_idx, column_idx)
);

CREATE TABLE headwater.model_fk (
	model_id       int NOT NULL REFERENCES headwater.model ON DELETE CASCADE,
	fk_idx         int NOT NULL,
	name           text NOT NULL,
	child_table    text NOT NULL,
	child_columns  text[] NOT NULL,
	parent_table   text NOT NULL,
	parent_columns text[] NOT NULL,
	n_edges        bigint NOT NULL,
	PRIMARY KEY (model_id, fk_idx)
);

CREATE TABLE headwater.model_category (
	model_id    int NOT NULL REFERENCES headwater.model ON DELETE CASCADE,
	cat_idx     int NOT NULL,                      -- global category index (row of cat_emb)
	table_name  text NOT NULL,
	column_name text NOT NULL,
	value       text NOT NULL,
	count       bigint NOT NULL,
	PRIMARY KEY (model_id, cat_idx)
);

CREATE TABLE headwater.snapshot_chunk (
	model_id  int NOT NULL REFERENCES headwater.model ON DELETE CASCADE,
	chunk_no  int NOT NULL,
	data      bytea NOT NULL,
	PRIMARY KEY (model_id, chunk_no)
);
-- the chunks are already compact binary: skip pglz, store out of line
ALTER TABLE headwater.snapshot_chunk ALTER COLUMN data SET STORAGE EXTERNAL;

REVOKE ALL ON headwater.model, headwater.model_table, headwater.model_column,
	headwater.model_fk, headwater.model_category, headwater.snapshot_chunk FROM PUBLIC;
REVOKE ALL ON SEQUENCE headwater.model_model_id_seq FROM PUBLIC;

SELECT pg_catalog.pg_extension_config_dump('headwater.model', '');
SELECT pg_catalog.pg_extension_config_dump('headwater.model_model_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('headwater.model_table', '');
SELECT pg_catalog.pg_extension_config_dump('headwater.model_column', '');
SELECT pg_catalog.pg_extension_config_dump('headwater.model_fk', '');
SELECT pg_catalog.pg_extension_config_dump('headwater.model_category', '');
SELECT pg_catalog.pg_extension_config_dump('headwater.snapshot_chunk', '');

CREATE FUNCTION rt_create_model(name text, source_schema text DEFAULT 'public',
                                options jsonb DEFAULT '{}')
RETURNS text AS 'MODULE_PATHNAME', 'rt_create_model' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION rt_create_model(text, text, jsonb) IS
	'discover the tables of a schema, type their columns, embed, and build the snapshot';

CREATE FUNCTION rt_refresh(model text)
RETURNS text AS 'MODULE_PATHNAME', 'rt_refresh' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION rt_refresh(text) IS 'rebuild a model from its source tables, keeping overrides';

CREATE FUNCTION rt_drop_model(model text)
RETURNS void AS 'MODULE_PATHNAME', 'rt_drop_model' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION rt_drop_model(text) IS 'remove a model and everything derived from it';

CREATE FUNCTION rt_set_column_type(model text, table_name text, column_name text, stype text)
RETURNS text AS 'MODULE_PATHNAME', 'rt_set_column_type' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION rt_set_column_type(text, text, text, text) IS
	'override the semantic type of a column (NULL: back to inference) and rebuild';

CREATE FUNCTION rt_set_time_column(model text, table_name text, column_name text)
RETURNS text AS 'MODULE_PATHNAME', 'rt_set_time_column' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION rt_set_time_column(text, text, text) IS
	'set the time column of a table (NULL: the table has none) and rebuild';

CREATE FUNCTION rt_describe(model text)
RETURNS TABLE (table_name text, column_name text, sql_type text, semantic_type text,
               is_time_column bool, null_count bigint, n_rows bigint, stats jsonb,
               fk_target text, inference text)
AS 'MODULE_PATHNAME', 'rt_describe' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION rt_describe(text) IS
	'tables, columns, semantic types, statistics, FK targets of a model, and why each type and time column was inferred';

CREATE FUNCTION rt_snapshot_info(model text)
RETURNS jsonb AS 'MODULE_PATHNAME', 'rt_snapshot_info' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION rt_snapshot_info(text) IS 'size and shape of a model''s stored snapshot';

CREATE FUNCTION rt_snapshot_bytes(model text)
RETURNS bytea AS 'MODULE_PATHNAME', 'rt_snapshot_bytes' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION rt_snapshot_bytes(text) IS
	'the serialized snapshot (snapshot_deserialize reads it); model owner or superuser';

-- Inspection of the stored snapshot (loaded with hw_pg_snapshot_load, the
-- same path the sampler and the trainer use); model owner or superuser.
CREATE FUNCTION rt_snapshot_row(model text, table_name text, key text)
RETURNS bigint AS 'MODULE_PATHNAME', 'rt_snapshot_row' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION rt_snapshot_row(text, text, text) IS
	'global snapshot row of the row whose canonical key text (PK columns ::text joined by E''\x1f'') is key; NULL if absent';

CREATE FUNCTION rt_snapshot_edges(model text)
RETURNS TABLE (fk_name text, child_table text, child_row bigint, parent_table text, parent_row bigint)
AS 'MODULE_PATHNAME', 'rt_snapshot_edges' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION rt_snapshot_edges(text) IS
	'every FK edge of the snapshot (rows numbered within their table from 0), read from the F->P CSR';
