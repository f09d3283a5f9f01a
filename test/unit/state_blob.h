/*
 * state_blob.h: test helper for model state blobs (model_state.c).
 */
#ifndef HW_UNIT_STATE_BLOB_H
#define HW_UNIT_STATE_BLOB_H

#include <stddef.h>
#include <stdint.h>

/* blob rewritten as an older version: `drop` bytes cut from the end of its
 * config (version 8 -> 7: count_ramps, 4 bytes; -> 6: also ordinal_head,
 * 4 bytes; -> 5: also ema_decay, 4 bytes; -> 4: also child_means, 4
 * bytes; -> 3: also child_counts, 4 bytes; -> 2: also rel_time and
 * link_types, 8 bytes; -> 1: also the 8 bytes of the schedule
 * continuation), the rest unchanged, checksum redone; *olen its length;
 * malloc'ed.  A blob carrying a parameter average keeps it: an older
 * version has no place for one, so such a rewrite must be refused. */
uint8_t *unit_state_as_version(const uint8_t *blob, size_t len, uint32_t ver, uint32_t drop, size_t *olen);

#endif
