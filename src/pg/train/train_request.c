/*
 * train_request.c: the training worker's reading of its job (settings,
 * task weights) and of the checkpoint it resumes, before the loop starts.
 */
#include "postgres.h"

#include <math.h>

#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"

#include "pg/base/hw_pg.h"
#include "pg/train/train_request.h"

/* A string member of the request, or dflt. */
static const char *
request_string(Jsonb *req, const char *key, const char *dflt)
{
	JsonbValue *v = getKeyJsonValueFromContainer(&req->root, key, strlen(key), NULL);

	if (v == NULL || v->type != jbvString)
		return dflt;
	return pnstrdup(v->val.string.val, v->val.string.len);
}

/* Whether the request trains this task (its "tasks" array names it, or it
 * has none: every task). */
static bool
request_trains_task(Jsonb *req, const char *task)
{
	JsonbValue *v = getKeyJsonValueFromContainer(&req->root, "tasks", strlen("tasks"), NULL);
	JsonbValue  name;

	if (v == NULL || v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data))
		return true;
	name.type = jbvString;
	name.val.string.val = (char *) task;
	name.val.string.len = strlen(task);
	return findJsonbValueFromContainer(v->val.binary.data, JB_FARRAY, &name) != NULL;
}

/*
 * The job's settings (validated by the calling backend, HwJobShared) and
 * the weight of each task, from the request ({model, tasks, preset, device,
 * options}: the tasks and options.task_weights, parsed once here).  Caller
 * in a transaction.
 */
void
hw_train_read_settings(HwJobShared *job, TrainSettings *st, HwTask **tasks, int ntasks)
{
	Jsonb      *req = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(job->request)));
	JsonbValue *ov = getKeyJsonValueFromContainer(&req->root, "options", strlen("options"), NULL);
	JsonbContainer *options = ov != NULL && ov->type == jbvBinary ? ov->val.binary.data : NULL;
	double      total = 0;

	strlcpy(st->model_name, request_string(req, "model", "?"), sizeof(st->model_name));
	st->s = job->settings;
	st->threads = hw_train_clamp_threads(st->s.threads);
	if (st->threads != st->s.threads)
		ereport(LOG, (errmsg("headwater: training job %lld uses %d threads (asked for %d; the server has %d CPUs)",
							 (long long) job->job_id, st->threads, st->s.threads, st->threads)));
	st->s.scfg.n_threads = st->threads;

	/* Selected tasks train, others get weight 0.  With options.task_weights
	 * a task weighs what it says (absent: 1); without, several tasks weigh
	 * sqrt(their train seeds) each (at least 1), so a big task is seen more
	 * often without drowning a small one; a single task weighs 1. */
	/* outlives the transaction (and SPI): the worker's top context */
	bool        given = options != NULL &&
		getKeyJsonValueFromContainer(options, "task_weights", strlen("task_weights"), NULL) != NULL;
	int         ntrained = 0;

	for (int t = 0; t < ntasks; t++)
		ntrained += request_trains_task(req, tasks[t]->name) ? 1 : 0;
	st->task_weights = MemoryContextAllocZero(TopMemoryContext, sizeof(double) * Max(1, ntasks));
	for (int t = 0; t < ntasks; t++)
	{
		if (request_trains_task(req, tasks[t]->name))
		{
			double dflt = 1.0;

			if (!given && ntrained > 1)
				dflt = sqrt((double) Max(1, tasks[t]->split_count[HW_SPLIT_TRAIN]));
			st->task_weights[t] = hw_train_task_weight(options, tasks[t]->name, dflt);
			if (ntrained > 1)
				ereport(LOG, (errmsg("headwater: training job %lld: task \"%s\" weighs %g (%u train seeds%s)",
									 (long long) job->job_id, tasks[t]->name, st->task_weights[t],
									 tasks[t]->split_count[HW_SPLIT_TRAIN],
									 given ? ", task_weights" : ", sqrt of them")));
		}
		total += st->task_weights[t];
	}
	if (!(total > 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("no task of model \"%s\" is trained with a positive weight", st->model_name),
				 errhint("Name existing tasks in tasks => ... and give at least one a weight above 0 in task_weights.")));
	st->s.scfg.task_weights = st->task_weights;
}

/*
 * The state of the checkpoint the calling backend chose to resume
 * (HwJobShared.resume_checkpoint_id; its settings are merged already), or
 * NULL for a new run.  Caller in SPI, as owner; the blob outlives the
 * transaction.
 */
uint8 *
hw_train_load_resume_state(HwJobShared *job, HwCheckpointInfo *resume, size_t *len)
{
	uint8      *b, *blob;

	if (job->resume_checkpoint_id < 0)
		return NULL;
	if (!hw_checkpoint_find(job->model_id, job->resume_checkpoint_id, resume))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("checkpoint %lld to resume from no longer exists", (long long) job->resume_checkpoint_id),
				 errhint("Call rt_train again; it resumes from the latest checkpoint.")));
	b = hw_checkpoint_load_state(resume->checkpoint_id, len);
	blob = MemoryContextAlloc(TopMemoryContext, Max(*len, 1));
	memcpy(blob, b, *len);
	return blob;
}
