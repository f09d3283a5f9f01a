/*
 * train_signals.h: the training worker's signal handlers (train_signals.c).
 * The progress and stop checks the loop uses are declared in hw_train.h.
 */
#ifndef HW_TRAIN_SIGNALS_H
#define HW_TRAIN_SIGNALS_H

/* SIGTERM: stop now; SIGINT (query cancel): cancel at the next step. */
void hw_worker_install_signal_handlers(void);

#endif
