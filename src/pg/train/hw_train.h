/*
 * hw_train.h: the training job shared by the calling backend (train_job.c)
 * and the background worker (train_worker.c, train_loop.c).
 *
 * The caller creates a dynamic shared memory segment holding HwJobShared,
 * fills in the request, starts the worker and (by default) waits: it reads
 * progress from the segment and relays it as NOTICEs.  Cancellation is a flag
 * in the segment (set by a cancelled caller or by rt_cancel, which attaches
 * through headwater.job.dsm_handle); the worker checkpoints and stops.
 * A query cancel of the worker (pg_cancel_backend) is an rt_cancel.  SIGTERM
 * (pg_terminate_backend, shutdown) makes the worker stop at once (a running
 * data-parallel step is aborted) and mark the job failed; the last
 * checkpoint stays intact.
 */
#ifndef HW_TRAIN_H
#define HW_TRAIN_H

#include "postgres.h"

#include "lib/stringinfo.h"
#include "port/atomics.h"
#include "storage/dsm.h"
#include "storage/spin.h"
#include "utils/array.h"
#include "utils/jsonb.h"

#include "core/model.h"
#include "core/sampler.h"
#include "core/settings.h"

#define HW_JOB_REQUEST_MAX 8192

/* Advisory-lock classes (pg_locks.classid; objid = model id, objsubid =
 * HW_LOCK_SUBID): the training lock, held (session-level) by the worker
 * training model X; the launch lock, held (transaction-level) by a backend
 * starting one, or dropping the model.  The launch lock with database 0 and
 * objid 0 serialises every launch of the server (the worker caps,
 * train_limits.c).
 *
 * objsubid 3 because SQL cannot build it: pg_advisory_lock(bigint) and its
 * siblings use objsubid 1, pg_advisory_lock(int, int) objsubid 2
 * (SET_LOCKTAG_INT64 / SET_LOCKTAG_INT32, utils/adt/lockfuncs.c).  With 2,
 * any role could hold pg_advisory_lock(26744, <model id>) and block or
 * refuse every training of a model it has no rights on. */
#define HW_TRAIN_LOCK_CLASS  0x6877   /* 'hw' */
#define HW_LAUNCH_LOCK_CLASS 0x6878
#define HW_LOCK_SUBID        3
#define HW_SET_LOCKTAG(tag, dboid, class, id) \
	SET_LOCKTAG_ADVISORY(tag, dboid, class, (uint32) (id), HW_LOCK_SUBID)

typedef enum HwJobPhase
{
	HW_PHASE_LAUNCHED = 0,   /* segment created, worker not attached yet */
	HW_PHASE_RUNNING,        /* worker attached and owns the job row */
	HW_PHASE_FINISHED        /* worker wrote the final job row and exits */
} HwJobPhase;

typedef struct HwJobShared
{
	/* request: written by the caller before the worker starts */
	int64       job_id;
	int32       model_id;
	Oid         dboid;
	Oid         roleoid;
	int32       steps_target;
	bool        wait;                         /* a caller relays progress */
	int32       debug_rank_stall_ms;          /* headwater.debug_rank_stall_ms of the caller */
	HwSettings  settings;                     /* validated by the caller (train_options.c), resume merged */
	int64       resume_checkpoint_id;         /* the checkpoint the job resumes; -1: a new run */
	char        request[HW_JOB_REQUEST_MAX];  /* jsonb text: {model, tasks, preset, device, options}:
											   * the job row's record; the worker reads the tasks
											   * and task_weights */

	pg_atomic_uint32 cancel_requested;

	/* progress: written by the worker under mutex */
	slock_t     mutex;
	int         phase;                        /* HwJobPhase */
	uint64      progress_seq;                 /* bumped on every update */
	int32       step;
	int32       start_step;
	double      loss;
	double      lr;
	double      grad_norm;
	double      tokens_per_s;
	double      eta_s;
	double      val_loss;
	char        message[1024];                /* last status line / error */
} HwJobShared;

/* Limits of rt_train's arguments (train_options.c; docs/user_guide.md). */
#define HW_TRAIN_MAX_STEPS   1000000000
/* rt_train's steps when left out without a budget */
#define HW_TRAIN_DEFAULT_STEPS 10000
#define HW_TRAIN_MAX_TOKENS  1048576      /* batch_size * seq_len */
#define HW_TRAIN_MAX_RANKS   HW_SETTINGS_MAX_RANKS   /* data-parallel ranks (threads or GPUs) */

/* The validated settings of one training job, from rt_train's arguments
 * and options (src/core/settings.h): the calling backend parses and checks
 * them and hands them to the worker in HwJobShared. */
typedef HwSettings HwTrainSettings;

/* train_options.c.  Validates steps, preset, device and options (a JSON
 * object, or NULL) and fills st; any bad value is ERROR 22023 naming the
 * argument or option, the value, and (in the hint) the valid range.  Task
 * names in task_weights are checked by the caller, against the model. */
void   hw_train_settings_parse(HwTrainSettings *st, int32 steps, const char *preset,
							   const char *device, JsonbContainer *options);
/* ERROR 22023 when the model these settings create (with ncols columns and
 * ncat categories; 1 and 0 for a lower bound) needs more memory than the
 * server has (physical memory or the cgroup limit, whichever is lower). */
void   hw_train_check_memory(const HwTrainSettings *st, int32 ncols, int32 ncat);
/* threads clamped to the server's online CPUs (0 stays 0: all of them). */
int    hw_train_clamp_threads(int threads);
/* options.task_weights[task] (validated: 0..1e6), or dflt when absent. */
double hw_train_task_weight(JsonbContainer *options, const char *task, double dflt);
/* A run that resumes from checkpoint ck keeps the sampler ck was trained
 * with: each sampler option (and the seed) that options (may be NULL) does
 * not name is taken from ck, not from today's default.  ERROR 22023 when
 * the mix is invalid (recent_children above child_width), XX001 when ck's
 * value is out of the option's range.  A run that does not resume calls
 * hw_train_settings_check_sampler instead (the same mix check). */
struct HwCheckpointInfo;
void   hw_train_settings_check_sampler(const HwTrainSettings *st);
void   hw_train_settings_resume_sampler(HwTrainSettings *st, const struct HwCheckpointInfo *ck,
										JsonbContainer *options);

/* train_checks.c: rt_train's checks before a launch (caller in SPI, as
 * owner; each an ERROR with SQLSTATE and hint): the model has tasks and
 * tasks (may be NULL: all) names only existing ones; the tasks array has
 * no NULL and is not empty; options.task_weights names tasks being trained
 * and leaves one a positive weight; the calling role can SELECT every
 * source table.  hw_train_worker_request: the request text of the worker
 * ({model, tasks, preset, device, options}). */
void   hw_train_check_tasks_exist(int32 model_id, ArrayType *tasks_arr, const char *model_name);
void   hw_train_check_tasks_array(ArrayType *tasks_arr);
void   hw_train_check_task_weights(int32 model_id, ArrayType *tasks_arr, Jsonb *options, const char *model_name);
void   hw_train_check_source_privileges(int32 model_id, const char *model_name, Oid role);
char  *hw_train_worker_request(const char *model_name, ArrayType *tasks, const char *preset,
							   const char *device, Jsonb *options);

/* train_limits.c: the caps on training workers (GUCs in headwater.c).
 * hw_train_launch_limits_lock takes the server's launch lock (transaction
 * level; the caller keeps it until its worker runs or stops) and raises
 * 53400 when the server or role already runs its maximum of training
 * workers; hw_train_launch_limits_unlock releases it.  hw_train_require_idle takes the model's launch lock and raises
 * 55006 when a job trains the model (rt_drop_model). */
extern int hw_max_training_workers;
extern int hw_max_training_workers_per_role;
extern int hw_debug_rank_stall_ms;
void   hw_train_launch_limits_lock(Oid role, const char *model_name);
void   hw_train_launch_limits_unlock(void);
void   hw_train_require_idle(int32 model_id, const char *model_name, const char *action);
/* bgw_type of the training workers (counted by train_limits.c) */
#define HW_TRAIN_WORKER_TYPE "headwater training"
/* Live background workers of bgw_type type_name: on the server, and of role. */
void   hw_count_background_workers(const char *type_name, Oid role, int *server, int *of_role);
/* the lock classes of other launches that share the advisory tag's scheme */
#define HW_SERVING_WORKER_LOCK_CLASS 0x6879

/* train_worker.c */
PGDLLEXPORT void hw_train_worker_main(Datum main_arg);

/* train_loop.c: runs the training job inside the worker, connected and
 * outside any transaction; reports through hw_job_report_progress(); returns
 * the final state ("succeeded" | "cancelled") and fills result (jsonb text). */
const char *hw_train_loop_run(HwJobShared *job, StringInfo result);

/* train_worker.c: progress and stop checks for the loop */
void hw_job_report_progress(HwJobShared *job, int32 step, double loss, double lr,
							double grad_norm, double tokens_per_s, double eta_s);
bool hw_job_should_stop(HwJobShared *job, bool *terminated);
/* SIGTERM received: stop now, even in the middle of a step. */
bool hw_job_terminated(void);

#endif
