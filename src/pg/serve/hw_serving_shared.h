/* hw_serving_shared.h: the model cache shared by all backends
 * (serving_shared.c): one read-only file per (model, checkpoint, weights,
 * model state) under $PGDATA/pg_headwater/serving, holding the snapshot and the
 * checkpoint's parameters in the layout they are used in, mapped by every
 * backend that serves it. */
#ifndef HW_SERVING_SHARED_H
#define HW_SERVING_SHARED_H

#include "postgres.h"

#include "core/model.h"
#include "core/snapshot.h"

/* headwater.serving_shared_cache (on by default): off makes this session
 * load models privately, as before the shared cache. */
extern bool hw_serving_shared_enabled;
void hw_serving_shared_guc_init(void);

/* One mapped file.  snap's tables, columns, names and foreign keys are
 * malloc'd; every array it points to (rows, edges, embeddings, column
 * values) lies in the read-only mapping, as do params[numel]. */
typedef struct HwSharedModel
{
	void           *base;         /* the mapping */
	size_t          len;
	HwSnapshot     *snap;
	HwModelConfig   cfg;
	const float    *params;       /* [numel] flat-buffer order (hw_model_get_flat) */
	int64           numel;
} HwSharedModel;

/* What a file serves: a checkpoint's last parameters or their average
 * (HwCheckpointInfo.average). */
typedef struct HwServedAt
{
	int64   checkpoint_id;
	bool    average;
} HwServedAt;

/* key: the model state key (serving.c); version: the checkpoint's stored
 * state version (its rows' versions), so that a checkpoint changed in the
 * database is not served from a file of its former bytes. */

/* The valid file of (model, at, key, version) mapped read-only, or
 * NULL when there is none.  A file that fails its checks (truncated, bad
 * checksum, another format) is removed (LOG), so that it is rebuilt; never
 * ERROR for a bad file.  ERROR only for out of memory. */
HwSharedModel *hw_serving_shared_open(int32 model_id, HwServedAt at, const char *key,
									  const char *version);

/* Writes the file of (model, at, key, version) from a loaded snapshot and a
 * model holding the weights served (at.average: loaded with them): to a temporary name, then
 * renamed (atomic: a reader sees the whole file or none).  False (LOG, no
 * ERROR) when it cannot (disk full, permissions): the caller serves from
 * its private copy. */
bool hw_serving_shared_write(int32 model_id, HwServedAt at, const char *key, const char *version,
							 const HwSnapshot *snap, HwModel *model);

/* Unmaps and frees. */
void hw_serving_shared_close(HwSharedModel *sm);

/* Removes the files of model_id that can no longer be asked for: another
 * state key (rt_refresh, tasks changed), a (checkpoint, weights) that is
 * not in keep[nkeep] (those its tasks are served from), at's checkpoint
 * with another version; and the files of models that no longer exist, stale
 * temporary files too.  Caller in SPI as the owner.  Errors of unlink are
 * ignored (a cache). */
void hw_serving_shared_cleanup(int32 model_id, const char *key, HwServedAt at, const char *version,
							   const HwServedAt *keep, int nkeep);

/* Removes every file of a model (rt_drop_model); a rolled-back drop only
 * costs a rebuild. */
void hw_serving_shared_remove_model(int32 model_id);

#endif
