/*
 * hw_pg_model.h: PostgreSQL side of the model (model_store.c).
 *
 * The training state itself is stored by checkpoint.c (hw_checkpoint.h) as
 * the versioned blob of hw_model_state_serialize (model.h / model_state.c)
 * in headwater.checkpoint_state.  This file adds the inspection surface:
 * per-parameter rows (rt_model_params) and the autograd-tape debug dump
 * (headwater.tape, rt_debug_tape).
 */
#ifndef HW_PG_MODEL_H
#define HW_PG_MODEL_H

#include "postgres.h"

#include "core/model.h"

/* Replaces headwater.tape's rows of model_id by the tape of m's last
 * forward/backward (op, label, inputs, shape, fwd/bwd ms).  Main thread only;
 * connects to SPI itself and writes as the extension owner.  Never call it on
 * the training hot path: it is a debugging aid (one step, on request). */
void hw_pg_tape_save(int32 model_id, int64 checkpoint_id, const HwModel *m);

#endif
