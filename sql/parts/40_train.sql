-- ---------------------------------------------------------------------------
-- Training jobs, training log, checkpoints (code: src/pg/train/).  User state: dumped with the extension.
-- ---------------------------------------------------------------------------
CREATE TABLE headwater.job (
    job_id        bigserial PRIMARY KEY,
    model_id      int NOT NULL REFERENCES headwater.model ON DELETE CASCADE,
    state         text NOT NULL DEFAULT 'starting'
                  CHECK (state IN ('starting', 'running', 'succeeded', 'failed', 'cancelled')),
    steps_target  int NOT NULL,
    step          int NOT NULL DEFAULT 0,
    start_step    int NOT NULL DEFAULT 0,
    tasks         text[] NOT NULL,
    preset        text NOT NULL,
    device        text NOT NULL,
    options       jsonb NOT NULL DEFAULT '{}',
    role_oid      oid NOT NULL,
    pid           int,
    dsm_handle    bigint,
    loss          float8,
    val_metrics   jsonb,
    tokens_per_s  float8,
    checkpoint_id bigint,
    lineage       bigint,                -- the run it trains (headwater.checkpoint.lineage), set when it starts training
    error         text,
    result        jsonb,
    started_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz
);
CREATE INDEX job_model_idx ON headwater.job (model_id, job_id);

CREATE TABLE headwater.train_log (
    job_id       bigint NOT NULL,
    model_id     int NOT NULL REFERENCES headwater.model ON DELETE CASCADE,
    step         int NOT NULL,
    split        text NOT NULL,          -- 'train' | 'val'
    task         text,
    loss         float8,
    metrics      jsonb,
    lr           float8,
    grad_norm    float8,
    tokens_per_s float8,
    at           timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX train_log_model_idx ON headwater.train_log (model_id, step);

-- One row per checkpoint; the state itself (parameters, optimiser moments,
-- step, RNG) lives in headwater's model-state tables keyed by checkpoint_id.
CREATE TABLE headwater.checkpoint (
    checkpoint_id    bigserial PRIMARY KEY,
    model_id         int NOT NULL REFERENCES headwater.model ON DELETE CASCADE,
    job_id           bigint,
    step             int NOT NULL,
    sampler_position bigint NOT NULL,     -- next train batch number
    val_metric       float8,              -- lower is better (val loss)
    is_best          bool NOT NULL DEFAULT false,   -- the best of its run
    config           jsonb NOT NULL,
    -- the training run from scratch it belongs to: the id of the job that
    -- started it.  Resuming follows the newest job's run (a restart starts a
    -- new one); prediction uses the newest run that has checkpoints.
    lineage          bigint NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX checkpoint_model_idx ON headwater.checkpoint (model_id, step);

-- Per-task validation of a checkpoint: at each validation every trained task
-- is evaluated on a fixed sample of its val split (the same rows each time,
-- at most options.val_rows), with its own metric: auroc (boolean), accuracy
-- (categorical), mae (numerical), mae_days (timestamp).  A run that keeps a
-- parameter average (ema_decay > 0) validates both weights of the checkpoint:
-- its last parameters and their average.  Prediction serves a task from the
-- (checkpoint, weights) of the current run with its best metric (higher
-- auroc/accuracy, lower mae); checkpoints without a row fall back to is_best.
CREATE TABLE headwater.checkpoint_metric (
    checkpoint_id bigint NOT NULL REFERENCES headwater.checkpoint ON DELETE CASCADE,
    task_id       int NOT NULL REFERENCES headwater.task ON DELETE CASCADE,
    weights       text NOT NULL CHECK (weights IN ('last', 'average')),  -- no default: every row says
    metric        text NOT NULL,          -- auroc | accuracy | mae | mae_days
    value         float8,                 -- NULL when undefined (e.g. one class only)
    loss          float8,                 -- the task's mean val loss on the same rows
    n_rows        int NOT NULL,
    PRIMARY KEY (checkpoint_id, task_id, weights)
);
CREATE INDEX checkpoint_metric_task_idx ON headwater.checkpoint_metric (task_id);

-- The ranks of a data-parallel job (docs/distributed.md), one row each,
-- written by the job's worker: state follows the job, heartbeat moves with
-- every train_log row.  Across machines (designed, not built) this is the
-- rendezvous: rank 0 stores NCCL's unique id (128 bytes) in unique_id and the
-- workers of the other hosts read it; on one machine it stays NULL.
CREATE TABLE headwater.rendezvous (
    job_id     bigint NOT NULL REFERENCES headwater.job ON DELETE CASCADE,
    rank       int NOT NULL CHECK (rank >= 0),
    host       text NOT NULL,
    device     text NOT NULL,                -- 'cpu' (a thread) | 'cuda:N'
    unique_id  bytea,
    state      text NOT NULL DEFAULT 'waiting'
               CHECK (state IN ('waiting', 'running', 'succeeded', 'failed', 'cancelled')),
    heartbeat  timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (job_id, rank)
);

REVOKE ALL ON headwater.job, headwater.train_log, headwater.checkpoint, headwater.checkpoint_metric,
              headwater.rendezvous FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('headwater.rendezvous', '');
SELECT pg_catalog.pg_extension_config_dump('headwater.job', '');
SELECT pg_catalog.pg_extension_config_dump('headwater.train_log', '');
SELECT pg_catalog.pg_extension_config_dump('headwater.checkpoint', '');
SELECT pg_catalog.pg_extension_config_dump('headwater.checkpoint_metric', '');
SELECT pg_catalog.pg_extension_config_dump('headwater.job_job_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('headwater.checkpoint_checkpoint_id_seq', '');

CREATE FUNCTION rt_train(model text,
                         steps int DEFAULT NULL,
                         tasks text[] DEFAULT NULL,
                         preset text DEFAULT 'auto',
                         options jsonb DEFAULT '{}',
                         device text DEFAULT 'auto',
                         wait bool DEFAULT true)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'rt_train' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION rt_train(text, int, text[], text, jsonb, text, bool) IS
'train a model in a background worker; steps is the total (NULL: 10000, or as many as options max_minutes allows; resumes from the last checkpoint of the current run; options => ''{"restart": true}'' starts a new run); returns final metrics, or the job id when wait => false';

CREATE FUNCTION rt_settings()
RETURNS TABLE (name text, type text, value_range text, default_value text, setting_group text,
               kept_on_resume boolean, description text)
AS 'MODULE_PATHNAME', 'rt_settings' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION rt_settings() IS
'the options of rt_train: type, range, default, group (model, sampler, schedule, infrastructure), whether a resumed run keeps its checkpoint''s value unless the call names it, and what each means';

CREATE FUNCTION rt_wait(job bigint) RETURNS jsonb
AS 'MODULE_PATHNAME', 'rt_wait' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION rt_wait(bigint) IS 'wait for a training job, relaying progress; returns its result';

CREATE FUNCTION rt_cancel(model text) RETURNS bigint
AS 'MODULE_PATHNAME', 'rt_cancel' LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION rt_cancel(text) IS 'ask the running training job of a model to checkpoint and stop; returns its job id';

CREATE FUNCTION rt_status(model text DEFAULT NULL)
RETURNS TABLE (job_id bigint, model text, state text, step int, steps_target int,
               loss float8, val_metrics jsonb, tokens_per_s float8, checkpoint_id bigint,
               started_at timestamptz, updated_at timestamptz, finished_at timestamptz,
               error text)
AS 'MODULE_PATHNAME', 'rt_status' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION rt_status(text) IS 'training jobs (of one model, or all), newest first; a job whose worker vanished is shown as failed';

CREATE VIEW rt_training AS SELECT * FROM rt_status(NULL);
-- readable by everyone, like rt_status itself (which decides what it shows)
GRANT SELECT ON rt_training TO PUBLIC;

-- The serialized training state of each checkpoint (parameters, optimiser
-- moments, step, RNG, config), chunked; EXTERNAL: dense floats do not compress.
CREATE TABLE headwater.checkpoint_state (
    checkpoint_id bigint NOT NULL REFERENCES headwater.checkpoint ON DELETE CASCADE,
    chunk_no      int NOT NULL,
    data          bytea NOT NULL,
    PRIMARY KEY (checkpoint_id, chunk_no)
);
ALTER TABLE headwater.checkpoint_state ALTER COLUMN data SET STORAGE EXTERNAL;
REVOKE ALL ON headwater.checkpoint_state FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('headwater.checkpoint_state', '');
