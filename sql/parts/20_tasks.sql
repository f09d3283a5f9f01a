-- ---------------------------------------------------------------------------
-- 20_tasks.sql: prediction tasks, their materialised seeds, and sampled
-- batches for inspection (code: src/pg/task/, src/core/task.c,
-- src/core/sampler*.c).
--
-- headwater.task and headwater.task_seed are user state (dumped with the
-- extension); PUBLIC cannot touch them.  The C entry points run the task
-- query as the calling role and write these tables as the extension owner
-- (the catalog's privilege model).  headwater.batch is an UNLOGGED cache.
-- ---------------------------------------------------------------------------

CREATE TABLE headwater.task (
	task_id         serial PRIMARY KEY,
	model_id        int NOT NULL REFERENCES headwater.model ON DELETE CASCADE,
	name            text NOT NULL CHECK (strpos(name, '.') = 0),  -- serving names it 'model.task' (task_ref.c)
	kind            text NOT NULL CHECK (kind IN ('cell', 'query')),
	anchor_table    text NOT NULL,
	target_column   text NOT NULL,                 -- cell: the table's column; query: the result column
	target_stype    text NOT NULL CHECK (target_stype IN ('numerical', 'boolean', 'categorical', 'timestamp')),
	obs_time_source text NOT NULL,                 -- 'query column <c>', 'time column <c> of <t>', 'none'
	query           text,                          -- query tasks only
	options         jsonb NOT NULL DEFAULT '{}',
	split_seed      bigint NOT NULL DEFAULT 0,
	split_ratios    float8[] NOT NULL DEFAULT '{0.8,0.1,0.1}',
	label_history   bool NOT NULL,
	history_max     int NOT NULL DEFAULT 16,
	target_mean     float8 NOT NULL DEFAULT 0,     -- numerical: de-normalise predictions with these
	target_std      float8 NOT NULL DEFAULT 1,
	n_seeds         bigint NOT NULL,
	n_train         bigint NOT NULL,
	n_val           bigint NOT NULL,
	n_test          bigint NOT NULL,
	n_null_targets  bigint NOT NULL,
	categories      text[],                        -- query task, categorical target: its own block, in order
	cat_emb         bytea,                         -- [n categories, d_text] f16 "<target> is <value>"
	vcol_emb        bytea,                         -- query task: [2, d_text] f16 of its virtual columns
	owner           regrole NOT NULL,
	created_at      timestamptz NOT NULL DEFAULT now(),
	-- how the seeds were split: 'hash' (split_seed, split_ratios), 'column'
	-- (the query's split column) or 'time' (options val_from / test_from);
	-- column and time splits are stored with the seeds (task_seed.data)
	split_method    text NOT NULL DEFAULT 'hash' CHECK (split_method IN ('hash', 'column', 'time')),
	-- a task belongs to its model: another model may use the same name
	UNIQUE (model_id, name)
);
CREATE INDEX task_name_idx ON headwater.task (name);
CREATE INDEX task_model_idx ON headwater.task (model_id, task_id);

-- Seeds of query tasks, packed (hw_task_seeds_serialize: 29 bytes a seed, 30
-- with a caller-given split).
-- Cell tasks store none: their seeds are the anchor table's rows, rebuilt
-- from the current snapshot when loaded.
CREATE TABLE headwater.task_seed (
	task_id  int PRIMARY KEY REFERENCES headwater.task ON DELETE CASCADE,
	n_seeds  bigint NOT NULL,
	data     bytea NOT NULL
);
ALTER TABLE headwater.task_seed ALTER COLUMN data SET STORAGE EXTERNAL;

CREATE UNLOGGED TABLE headwater.batch (
	batch_id      bigserial PRIMARY KEY,
	model_id      int NOT NULL REFERENCES headwater.model ON DELETE CASCADE,
	task_id       int NOT NULL REFERENCES headwater.task ON DELETE CASCADE,
	split         text NOT NULL,
	batch_number  bigint NOT NULL,
	seed          bigint NOT NULL,
	batch_size    int NOT NULL,
	seq_len       int NOT NULL,
	n_rows        int NOT NULL,                    -- R
	n_texts       int NOT NULL,                    -- U
	vcol_base     int,                             -- first virtual column id of the task (query tasks)
	seed_idx      int[] NOT NULL,                  -- task seed index of each sequence
	created_at    timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE UNLOGGED TABLE headwater.batch_tensor (
	batch_id  bigint NOT NULL REFERENCES headwater.batch ON DELETE CASCADE,
	name      text NOT NULL,
	dtype     text NOT NULL,
	shape     int[] NOT NULL,
	data      bytea NOT NULL,                      -- little-endian, row-major
	PRIMARY KEY (batch_id, name)
);

REVOKE ALL ON headwater.task, headwater.task_seed, headwater.batch, headwater.batch_tensor FROM PUBLIC;
REVOKE ALL ON SEQUENCE headwater.task_task_id_seq, headwater.batch_batch_id_seq FROM PUBLIC;

SELECT pg_catalog.pg_extension_config_dump('headwater.task', '');
SELECT pg_catalog.pg_extension_config_dump('headwater.task_task_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('headwater.task_seed', '');

CREATE FUNCTION rt_create_task(model text, task text, query text DEFAULT NULL,
                               anchor_table text DEFAULT NULL, target_column text DEFAULT NULL,
                               target_stype text DEFAULT NULL,
                               observation_time_column text DEFAULT NULL,
                               options jsonb DEFAULT '{}')
RETURNS jsonb AS 'MODULE_PATHNAME', 'rt_create_task' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION rt_create_task(text, text, text, text, text, text, text, jsonb) IS
	'define a prediction task: a query yielding (anchor key, observation time, target), or a column to predict';

CREATE FUNCTION rt_drop_task(model text, task text)
RETURNS void AS 'MODULE_PATHNAME', 'rt_drop_task' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION rt_drop_task(text, text) IS 'remove a task, its seeds and its sampled batches';

CREATE FUNCTION rt_tasks(model text)
RETURNS TABLE (task text, kind text, anchor_table text, target text, target_stype text,
               observation_time text, n_seeds bigint, n_train bigint, n_val bigint, n_test bigint,
               null_targets bigint, target_mean float8, target_std float8, n_categories int,
               label_history bool, options jsonb, split_method text)
AS 'MODULE_PATHNAME', 'rt_tasks' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION rt_tasks(text) IS 'the tasks of a model, in training order';

CREATE FUNCTION rt_sample_batches(model text, task text, split text DEFAULT 'train', n int DEFAULT 1,
                                  batch_size int DEFAULT 32, seq_len int DEFAULT 1024, seed bigint DEFAULT 0,
                                  options jsonb DEFAULT '{}')
RETURNS SETOF bigint AS 'MODULE_PATHNAME', 'rt_sample_batches' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION rt_sample_batches(text, text, text, int, int, int, bigint, jsonb) IS
	'sample batch numbers 0..n-1 of a task''s split into headwater.batch (options: the sampler keys of rt_train: '
	'max_rows, child_width, child_sampling, recent_children, key_cells, future_parents, descendant_counts, count_windows, mean_windows, label_means); returns the batch ids';

CREATE FUNCTION rt_batch_tensor(batch_id bigint, name text)
RETURNS TABLE (shape int[], dtype text, "values" float8[])
AS 'MODULE_PATHNAME', 'rt_batch_tensor' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION rt_batch_tensor(bigint, text) IS 'one tensor of a sampled batch as a flat array and its shape';

CREATE FUNCTION rt_batch_sequence(batch_id bigint, b int)
RETURNS TABLE ("position" int, table_name text, column_name text, row_key text, value text,
               semantic_type text, is_target bool, is_null bool, is_padding bool, seq_row int)
AS 'MODULE_PATHNAME', 'rt_batch_sequence' LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION rt_batch_sequence(bigint, int) IS
	'sequence b of a sampled batch as rows: what the model sees, cell by cell (values from the source tables)';

CREATE FUNCTION rt_debug_predict_batch(task text, row_id anyelement, obs_time timestamptz DEFAULT NULL,
                                       context jsonb DEFAULT NULL, checkpoint bigint DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'rt_debug_predict_batch' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION rt_debug_predict_batch(text, anyelement, timestamptz, jsonb, bigint) IS
	'store the batch rt_predict would build for a row (split ''predict'') and return its id, for rt_batch_tensor '
	'and rt_batch_sequence; model owner only';
