-- ---------------------------------------------------------------------------
-- 30_model_state.sql: model inspection and the autograd-tape debug dump.
-- Owner: model engineer (src/pg/model_store.c, src/core/model*.c).
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
REVOKE ALL ON headwater.tape FROM PUBLIC;
GRANT SELECT ON headwater.tape TO PUBLIC;

CREATE FUNCTION rt_debug_tape(task text, checkpoint bigint DEFAULT NULL)
RETURNS integer
AS 'MODULE_PATHNAME', 'rt_debug_tape' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION rt_debug_tape(text, bigint) IS
'runs one forward/backward (no update) of the model serving task on its first training batch and writes the op-by-op tape to headwater.tape; returns the number of ops';

CREATE FUNCTION rt_model_params(task text, checkpoint bigint DEFAULT NULL)
RETURNS TABLE (name text, shape int[], numel bigint, optimizer text, weight_decay bool,
               rms float8, data bytea)
AS 'MODULE_PATHNAME', 'rt_model_params' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION rt_model_params(text, bigint) IS
'the parameters serving task (its best checkpoint unless given; the last parameters or their average, as its validation chose): name, shape, optimiser, RMS and the raw little-endian float32 data';
