-- ---------------------------------------------------------------------------
-- 30_model_state.sql: model inspection and the autograd-tape debug dump.
-- Code: src/pg/serve/model_store.c, src/core/model*.c.
--
-- The training state (parameters, optimiser moments, step, RNG, config) is
-- one versioned, checksummed blob (src/core/model_state.c) stored in chunks
-- by checkpoint.c in headwater.checkpoint_state (40_train.sql, STORAGE
-- EXTERNAL).  rt_model_params shows it parameter by parameter.
-- ---------------------------------------------------------------------------

-- One forward/backward of a model, op by op, written on request by
-- rt_debug_tape (never during training).  Times are wall-clock ms of the op's
-- kernels on the backend that ran it.
CREATE TABLE headwater.tape (
    model_id      int NOT NULL REFERENCES headwater.model ON DELETE CASCADE,
    checkpoint_id bigint,
    seq           int NOT NULL,          -- order of the op in the forward pass
    op            text NOT NULL,         -- linear, norm_linear, qknorm, attention, ...
    label         text NOT NULL,         -- output name, e.g. layer0.out.qkvg
    inputs        text NOT NULL,
    shape         bigint[] NOT NULL,     -- output shape
    fwd_ms        float8 NOT NULL,
    bwd_ms        float8 NOT NULL,
    recorded_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (model_id, seq)
);
-- The tape is the owner's (ops, shapes, timings), like the weights: PUBLIC
-- cannot read the table; rt_tape(task) returns a model's rows to its owner.
REVOKE ALL ON headwater.tape FROM PUBLIC;

CREATE FUNCTION rt_debug_tape(task text, checkpoint bigint DEFAULT NULL)
RETURNS integer
AS 'MODULE_PATHNAME', 'rt_debug_tape' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION rt_debug_tape(text, bigint) IS
'runs one forward/backward (no update) of the model serving task on its first training batch and writes the op-by-op tape (read it with rt_tape); returns the number of ops';

CREATE FUNCTION rt_tape(task text)
RETURNS TABLE (checkpoint_id bigint, seq int, op text, label text, inputs text, shape bigint[],
               fwd_ms float8, bwd_ms float8, recorded_at timestamptz)
AS 'MODULE_PATHNAME', 'rt_tape' LANGUAGE C STABLE;
COMMENT ON FUNCTION rt_tape(text) IS
'the op-by-op tape rt_debug_tape last wrote for the model serving task, in forward order; model owner only';

CREATE FUNCTION rt_model_params(task text, checkpoint bigint DEFAULT NULL)
RETURNS TABLE (name text, shape int[], numel bigint, optimizer text, weight_decay bool,
               rms float8, data bytea)
AS 'MODULE_PATHNAME', 'rt_model_params' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION rt_model_params(text, bigint) IS
'the parameters serving task (its best checkpoint unless given; the last parameters or their average, as its validation chose): name, shape, optimiser, RMS and the raw little-endian float32 data';
