/*
 * train_request.h: what the training worker reads from its job before the
 * loop starts (train_request.c): the settings and task weights of the
 * request, and the state of the checkpoint it resumes.
 */
#ifndef HW_TRAIN_REQUEST_H
#define HW_TRAIN_REQUEST_H

#include "postgres.h"

#include "pg/train/hw_train.h"
#include "pg/train/hw_checkpoint.h"
#include "core/task.h"

typedef struct TrainSettings
{
	char        model_name[NAMEDATALEN];
	HwTrainSettings s;            /* as the calling backend validated them (HwJobShared) */
	int         threads;          /* s.threads clamped to the server's CPUs */
	double     *task_weights;     /* [ntasks] */
} TrainSettings;

/* The job's settings and each task's weight; caller in a transaction. */
void hw_train_read_settings(HwJobShared *job, TrainSettings *st, HwTask **tasks, int ntasks);

/* The resumed checkpoint's state (NULL for a new run); caller in SPI, as owner. */
uint8 *hw_train_load_resume_state(HwJobShared *job, HwCheckpointInfo *resume, size_t *len);

#endif
