/*
 * synth_snapshot.h: small hand-made and random snapshots for tests and
 * benchmarks (plain C; bench/ includes "../test/unit/synth_snapshot.c").
 *
 * Hand-made use:
 *     HwSnapshot *s = synth_new(8);                        // d_text = 8
 *     int t = synth_add_table(s, "customer", 3, "id:identifier,name:text,age:numerical", -1);
 *     ... set values: synth_col(s, t, "age")->f32[r] = ... (raw values;
 *         synth_finish z-scores numerical columns), ->valid[r] = 0 for NULL,
 *         categorical ->u32[r] = local category 0..K-1 (K via synth_set_ncat),
 *         text ->u32[r] = global text index (< s->ntext, set synth_set_ntext).
 *     synth_add_fk(s, "fk_name", child_table, parent_table);
 *     synth_edge(s, child_global_row, parent_global_row, fk);  (after all tables)
 *     synth_finish(s);
 * Every table has a PK whose canonical key text is the decimal row number
 * + 1 ("1", "2", ...), so key_hash[r] = hw_hash_key_text of that text.
 * Global ids: tables in order, columns in order, ignored ones skipped;
 * category blocks in the same order; embeddings are deterministic
 * pseudo-random f16 vectors; ts_mean_us/ts_std_us over all timestamp cells.
 * Free with synth_free (works whether or not snapshot.c is linked).
 */
#ifndef HW_SYNTH_SNAPSHOT_H
#define HW_SYNTH_SNAPSHOT_H

#include "core/snapshot.h"

HwSnapshot *synth_new(int32_t d_text);
/* spec: "name:stype,name:stype,..." (stype names of hw_stype_name);
 * time_col: index of the time column in spec order, or -1. */
int       synth_add_table(HwSnapshot *s, const char *name, uint32_t nrows, const char *spec, int time_col);
HwColumn *synth_col(HwSnapshot *s, int table, const char *col);
int       synth_col_index(const HwSnapshot *s, int table, const char *col);
void      synth_set_ncat(HwSnapshot *s, int table, const char *col, uint32_t k);
void      synth_set_ntext(HwSnapshot *s, uint32_t ntext);
int       synth_add_fk(HwSnapshot *s, const char *name, int child_table, int parent_table);
void      synth_edge(HwSnapshot *s, uint32_t child_row, uint32_t parent_row, int fk);
/* global row of local row r of table t (valid after all tables are added) */
uint32_t  synth_row(const HwSnapshot *s, int table, uint32_t r);
int       synth_finish(HwSnapshot *s);
void      synth_free(HwSnapshot *s);

/*
 * A random "shop" database of about `total_rows` rows (>= 200):
 *   category(id, name categorical)                       tiny
 *   customer(id, segment cat, signup_at ts*, age num, vip bool, bio text)
 *   product(id, category_id FK, price num, title text, added_at ts*)
 *   orders(id, customer_id FK, ordered_at ts*, status cat, total num)
 *   order_item(id, order_id FK, product_id FK, qty num)
 *   review(id, customer_id FK, product_id FK, rating num, body text, created_at ts*)
 * (* = the table's time column).  ~5% NULLs in non-key columns.
 */
HwSnapshot *synth_shop(uint32_t total_rows, uint64_t seed, int32_t d_text);

#endif
