/*
 * sampler_internal.h: what the sampler's files share (not an interface:
 * callers use sampler.h).  The sampler's state (HwSampler), the per-thread
 * scratch of the BFS, the specification and output of one sequence, and the
 * small inline helpers (hashing, the per-sequence RNG, edge-group searches)
 * that several files need on their hot paths.
 *
 * The files, one concern each:
 *   sampler.c           create, clone, free; scratch and threads
 *   sampler_config.c    defaults, option names, validation, accessors
 *   sampler_cache.c     read-only tables built once: emitted columns and the
 *                       row cache, per-edge child times, per-FK tables
 *   sampler_cells.c     cell values: timestamp encoding, a row's cells
 *   sampler_features.c  child counts, child means, descendant counts
 *   sampler_labels.c    label means: a row's mean of its own or its anchors' known labels
 *   sampler_bfs.c       one sequence: frontier, child sampling, history
 *   sampler_order.c     a sequence's edges, padding and permutations (RCM)
 *   sampler_collate.c   a batch: phase 1 on the threads, phase 2 (fk_adj,
 *                       text dedup), cell dropout
 *   sampler_seeds.c     which seeds form a batch; evaluation and prediction
 *                       batches, context labels
 */
#ifndef HW_SAMPLER_INTERNAL_H
#define HW_SAMPLER_INTERNAL_H

#include "core/sampler.h"
#include "core/thread_pool.h"

#include <stdlib.h>
#include <string.h>

/* a create/clone step ran out of memory (err not set yet: the caller names
 * what it was creating) */
#define SAMPLER_OOM (-1)

/* ------------------------------------------------------------------ hashing */

static inline uint64_t
mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

static inline uint64_t
hash5(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e)
{
	uint64_t h = mix64(a + 0x9e3779b97f4a7c15ULL);

	h = mix64(h ^ b);
	h = mix64(h ^ c);
	h = mix64(h ^ d);
	h = mix64(h ^ e);
	return h;
}

/* A nonzero 32-bit key of the text snprintf wrote into buf (n its return
 * value, cap the buffer's size): the folded hash of what fits. */
static inline uint32_t
text_key(const char *buf, int n, size_t cap)
{
	size_t   len = n < 0 ? 0 : (size_t) n < cap ? (size_t) n : cap - 1;
	uint64_t h = hw_hash_key_text(buf, len);
	uint32_t key = (uint32_t) (h ^ (h >> 32));

	return key ? key : 1;
}

#define MEAN_COLS_PER_FK 4      /* columns of a child table that child means average */
#define MEAN_SCAN_MAX    1024   /* children read per row and FK for child means */
/* mean_windows "recent": windows 1-5 of the child means over the last
 * 1, 3, 5, 10, 20 children (sampler_features.c, recent_window_sums) */
#define MEAN_RECENT_WINDOWS 5
#define MEAN_RECENT_COUNTS  {1, 3, 5, 10, 20}
#define LABEL_LINKS_MAX  3      /* label means of a row: its own labels, and those of its
								 * anchors through 2 FKs of the anchor table */
#define DESC_DEPTH_MAX   3      /* FKs in a descendant path (row_descendant_counts) */
#define DESC_SCAN_MAX    4096   /* edges read per row and descendant path */
#define DESC_MEAN_MAX    64     /* descendants per row of its table, on average, beyond
								 * which a path is not counted (init_descendant_paths) */

/* A descendant path of a table (init_descendant_paths): child FKs
 * fk[0..depth) crossed from a row down to the rows it counts. */
typedef struct DescPath
{
	uint16_t fk[DESC_DEPTH_MAX];
	uint8_t  depth;
	uint32_t key;               /* link key of the path (never 0) */
} DescPath;

/* A row (or seed) and a time: what the sorted groups are sorted by */
typedef struct TimedRow
{
	int64_t  t;
	uint32_t row;
} TimedRow;

/* A task's label-means index (sampler_labels.c) */
typedef struct LabelIndex LabelIndex;

/* splitmix64 stream: the per-sequence RNG */
static inline uint64_t
rng_next(uint64_t *s)
{
	*s += 0x9e3779b97f4a7c15ULL;
	return mix64(*s);
}

static inline uint32_t
rng_below(uint64_t *s, uint32_t n)
{
	/* multiply-shift: bias < n / 2^32, irrelevant here */
	return (uint32_t) (((rng_next(s) >> 32) * (uint64_t) n) >> 32);
}

/* --------------------------------------------------------------- structures */

/*
 * Per table: the emitted columns and a row-major copy of their values (the
 * "row cache").  The snapshot is columnar, so visiting a row there touches
 * one cache line per column array; here a row is one record of `stride`
 * bytes: a NULL bitmap (bit k = cell k is NULL) then each cell's value at
 * off[k] (4 bytes; 8 for timestamps; none for identifiers).  The BFS is
 * memory-latency bound, so this roughly halves the misses per row.
 */
typedef struct TableInfo
{
	int32_t   n;                /* emitted columns (non-ignored; key cells: sampler.h) */
	int32_t  *col;              /* [n] column index in the table */
	int32_t  *gid;              /* [n] global column id */
	int8_t   *stype;            /* [n] */
	uint8_t  *hidden;           /* [ncols of the table] 1 = a hidden anchor name (sampler.h) */
	uint16_t *off;              /* [n] byte offset of the value in a record */
	uint32_t  stride;           /* bytes per row record */
	uint8_t  *rec;              /* [nrows * stride] */
} TableInfo;

typedef struct HeapEnt
{
	uint64_t key;
	uint32_t row;               /* global row, or seed index for a virtual row */
	uint16_t hops;
	uint16_t table;             /* table of a real row (saves a row_table miss) */
	uint8_t  virt;              /* 1: history virtual row (row = task seed index);
								 * 2: context label (row = index in SeqSpec.ctx) */
	uint32_t link;              /* link key of the edge that reached the row (0: none) */
} HeapEnt;

/*
 * A row's count and mean features at an observation time (sampler_features.c)
 * are a pure function of (row, obs, the excluded target column), and the
 * same parents recur across the sequences of a batch and across batches
 * (every player of a team observed on the same day reaches the team row,
 * whose thousands of matches the means read).  Each thread keeps the last
 * results of rows with at least FEAT_MEMO_MIN_EDGES children in a
 * direct-mapped table of FEAT_MEMO entries (~0.6 MB), so a repeat costs a
 * copy; a row with fewer is cheaper to compute than to keep.  The features
 * are the same bits either way.
 */
#define FEAT_MEMO           1024
#define FEAT_MEMO_MIN_EDGES 64

typedef struct FeatMemo
{
	uint32_t g;
	int32_t  excl_table, excl_col;
	bool     used;
	int64_t  obs;
	uint32_t ckey[HW_CHILD_LINKS];
	uint16_t ccnt[HW_CHILD_LINKS * HW_CHILD_WINDOWS];
	uint32_t mkey[HW_MEAN_SLOTS];
	float    mval[HW_MEAN_SLOTS * HW_CHILD_WINDOWS];
} FeatMemo;

typedef struct Scratch
{
	uint32_t *visit_gen;        /* [nrows] == gen: taken in this sequence */
	uint16_t *local;            /* [nrows] sequence-local id when taken */
	uint32_t  gen;
	HeapEnt  *heap;
	size_t    heap_n, heap_cap;
	uint32_t *buf;              /* child candidates */
	size_t    buf_cap;
	uint32_t *colmark;          /* [ncols_total] generation stamps for col_perm */
	uint16_t *colslot;          /* [ncols_total] */
	uint32_t  colgen;
	/* per-sequence working arrays, sized max_rows / seq_len */
	uint32_t *edges;            /* (r1 << 16 | r2) */
	size_t    edges_n, edges_cap;
	uint16_t *row_start, *row_len, *row_hops;
	uint16_t *deg, *nb, *order, *queue;
	uint32_t *nb_off, *nb_cur;  /* [R+1] CSR of the symmetrised row graph (32-bit: 2 x edges) */
	uint8_t  *seen;
	size_t    nb_cap;
	int32_t  *distinct;         /* distinct column ids of a sequence */
	uint16_t *count;
	uint32_t  cur_link;         /* link key heap_push gives the rows it pushes (0: none) */
	FeatMemo *memo;             /* [FEAT_MEMO], allocated at first use; NULL: none */
	bool      memo_failed;      /* its allocation failed: compute every time */
} Scratch;

typedef struct SeqOut
{
	int32_t       nrows;
	HwCellSource *rows;         /* [max_rows] */
	uint32_t     *edges;        /* unique (r1<<16|r2), sorted */
	size_t        nedges, cap;
} SeqOut;

struct SeqSpec
{
	int      task;
	uint32_t anchor_row;
	int64_t  obs_time_us;
	int64_t  seed_idx;          /* task seed index, -1 for a prediction */
	bool     with_truth;
	uint64_t rng;
	const HwContextLabel *ctx;  /* prediction: context labels sorted by obs time */
	uint32_t nctx;
};

typedef struct SeqSpec SeqSpec;

struct HwSampler
{
	bool      is_clone;         /* shares the read-only tables of another sampler */
	bool      own_shards;       /* a clone for another rank: shard_n/shard_idx are its own */
	const HwSnapshot *snap;
	HwTask  **tasks;
	int       ntasks;
	HwSamplerConfig cfg;
	double   *weights;          /* [ntasks] */
	uint64_t *task_key;         /* [ntasks] hash of the task name: keys its seed order, so a
								 * task's batches do not depend on its position among the tasks */
	uint32_t *shard[HW_N_SPLITS];       /* per task: shard_off into shard_idx */
	uint32_t *shard_n[HW_N_SPLITS];     /* [ntasks] */
	uint32_t **shard_idx[HW_N_SPLITS];  /* [ntasks] arrays */
	double  **train_cdf;        /* [ntasks], recent_weight > 1 only: running sums of the train
								 * shard's draw weights (sampler_seeds.c); owned with the shards */
	TableInfo *tinfo;
	const int64_t *row_time;    /* [nrows] each row's time as the sampler filters it: the
								 * snapshot's, or with date_undated row_time_own */
	int64_t  *row_time_own;     /* [nrows] date_undated: undated tables' rows dated by the rows
								 * they link to (sampler_undated.c); NULL when off */
	uint8_t  *table_dated;      /* [ntables] 1: the table has a time column, or (date_undated)
								 * some of its rows were dated */
	int64_t  *pf_time;          /* [n P->F edges] time of the child (sequential filter) */
	const uint32_t *pf_child;   /* [n P->F edges] the child: snap->pf_dst, or (recent) a copy
								 * whose temporal FK groups are sorted by (time, row) */
	uint32_t *pf_child_own;     /* the copy (NULL when pf_child is snap->pf_dst) */
	uint8_t  *fk_recent;        /* [nfks] 1: RECENT policy on this FK (child table has a time) */
	bool      recent;           /* child_sampling == HW_CHILD_RECENT */
	uint32_t  recent_k;         /* resolved recent_children */
	uint16_t *fk_child_table;   /* [nfks] */
	uint16_t *fk_parent_table;  /* [nfks] */
	uint32_t *fk_link;          /* [nfks][2] link keys: [f][0] a parent reached through FK f, [f][1] a child */
	uint8_t  *fk_child_timed;   /* [nfks] 1: FK f's child table is dated (table_dated) */
	int64_t   cnt_win_us[HW_CHILD_WINDOWS];   /* child-count windows (row_child_counts); [0] unused */
	float     rel_time_scale;   /* what each batch's rel_time_scale is (time_ramps; >= 1) */
	uint8_t  *fk_mean_n;        /* [nfks] columns of FK f's child table that child means average */
	int16_t  *fk_mean_col;      /* [nfks][MEAN_COLS_PER_FK] their column indices in the child table */
	uint32_t *fk_mean_key;      /* [nfks][MEAN_COLS_PER_FK] their mean keys (init_fk_means) */
	uint32_t *desc_off;         /* [ntables+1] table t's descendant paths: desc[desc_off[t] ..
								 * desc_off[t+1]) (init_descendant_paths; all 0 when off) */
	DescPath *desc;
	LabelIndex **label_idx;     /* [ntasks] label means (NULL entries: a task without; NULL: off) */
	int32_t   ncols_total;
	int       nthreads;
	Scratch **scratch;          /* [nthreads]; scratch[nthreads-1] is the caller's */
	HwThreadPool *pool;         /* the workers besides the caller; NULL when nthreads == 1 */
	SeqOut   *seq;
	int       seq_cap;
	int       last_B;
	/* phase 2 text dedup */
	uint32_t *tmap_key, *tmap_val, *tmap_gen;
	uint32_t  tmap_cap, tmap_genc;
	uint32_t *uniq;
	/* timestamp encoding lookup tables (see enc_time) */
	float     tab_min[60][2], tab_hour[24][2], tab_wday[7][2], tab_mday[31][2],
			  tab_mon[12][2], tab_yday[366][2];   /* tab_min serves seconds too */
};

/* ------------------------------------------------------------ small helpers */

/* Grows *p (of *cap elements of elem bytes) to hold need, doubling. */
static inline int
grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t nc = *cap ? *cap : 64;

	while (nc < need)
		nc *= 2;
	void *q = realloc(*p, nc * elem);

	if (q == NULL)
		return -1;
	*p = q;
	*cap = nc;
	return 0;
}

/* First edge of [lo, hi) whose child is dated after t (hi if none): the
 * edges of a sorted group are in time order, HW_NO_TIME first. */
static inline uint64_t
first_after(const int64_t *pt, uint64_t lo, uint64_t hi, int64_t t)
{
	while (lo < hi)
	{
		uint64_t mid = lo + (hi - lo) / 2;

		if (pt[mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}


/* Saturating count for the uint16 child_count slots. */
static inline uint16_t
sat16(uint64_t n)
{
	return n > UINT16_MAX ? UINT16_MAX : (uint16_t) n;
}

/* The end of the FK group that starts at child edge k0 of a row whose
 * child edges end at k1 (k0 < k1): the first edge in (k0, k1] of another
 * FK.  A row's child edges are grouped by FK index, ascending, and a group
 * can hold thousands of edges (a team's matches), so the end is found by
 * doubling steps and then halving them, not edge by edge. */
static inline uint64_t
fk_group_end(const HwSnapshot *snap, uint64_t k0, uint64_t k1)
{
	uint16_t fk = snap->pf_fk[k0];
	uint64_t in = k0, step = 1, out;     /* pf_fk[in] == fk; out: first known past it */

	while (in + step < k1 && snap->pf_fk[in + step] == fk)
	{
		in += step;
		step *= 2;
	}
	out = in + step < k1 ? in + step : k1;
	while (out - in > 1)
	{
		uint64_t mid = in + (out - in) / 2;

		if (snap->pf_fk[mid] == fk)
			in = mid;
		else
			out = mid;
	}
	return out;
}

/* Edges [*lo, *hi) of row r's children through FK fk (empty if none):
 * a row's child edges are grouped by FK index, ascending. */
static inline void
fk_group(const HwSnapshot *snap, uint32_t r, uint16_t fk, uint64_t *lo, uint64_t *hi)
{
	uint64_t a = snap->pf_off[r], b = snap->pf_off[r + 1];

	while (a < b)
	{
		uint64_t mid = a + (b - a) / 2;

		if (snap->pf_fk[mid] < fk)
			a = mid + 1;
		else
			b = mid;
	}
	*lo = a;
	*hi = a < snap->pf_off[r + 1] && snap->pf_fk[a] == fk ? fk_group_end(snap, a, snap->pf_off[r + 1]) : a;
}

/* ------------------------------------------------ shared between the files */

/* sampler_config.c: false (err set) when a field is out of range */
bool sampler_config_check(const HwSamplerConfig *cfg, HwError *err);

/* sampler_cache.c: the emitted columns and row cache of every table; the
 * per-edge child times and per-FK tables (and, RECENT, the sorted groups).
 * HW_OK, SAMPLER_OOM, or an error code with err set. */
int  sampler_build_row_cache(HwSampler *s, HwError *err);
int  sampler_build_edge_tables(HwSampler *s);
/* sampler_undated.c: row_time and table_dated (with date_undated, the rows
 * of undated tables dated by the rows they link to); before the edge
 * tables, which read them.  HW_OK or SAMPLER_OOM. */
int  sampler_build_row_times(HwSampler *s);
/* qsort order of TimedRow: by time, then row */
int  sampler_cmp_timed(const void *a, const void *b);

/* sampler_cells.c */
void sampler_init_time_tables(HwSampler *s);
int  sampler_emit_virtual(const HwSampler *s, HwBatch *bt, size_t base, int ncells, uint16_t local,
						  const HwTask *t, int64_t obs, double target, bool tnull, bool is_target,
						  bool with_truth);
int  sampler_emit_row(const HwSampler *s, HwBatch *bt, size_t base, int ncells, uint16_t local,
					  uint32_t g, int ti, int target_c, bool with_truth);

/* sampler_features.c */
void sampler_init_fk_means(HwSampler *s, int f);
int  sampler_init_descendant_paths(HwSampler *s);
void sampler_row_child_counts(const HwSampler *s, uint32_t g, int64_t obs, uint32_t *key, uint16_t *cnt);
void sampler_row_count_mean_features(const HwSampler *s, Scratch *w, uint32_t g, int64_t obs, int excl_table,
									 int excl_col, uint32_t *ckey, uint16_t *ccnt, uint32_t *mkey, float *mval);
void sampler_row_child_means(const HwSampler *s, uint32_t g, int64_t obs, int excl_table, int excl_col,
							 uint32_t *key, float *mean);

/* sampler_labels.c: the label-means index of every task (cfg.label_means),
 * and row g's label means for a sequence of task `task` at obs: up to cap
 * (key, mean per window) slots, returns how many.  max_split >= 0: labels of
 * a later split are left out (as label history does). */
int  sampler_init_label_means(HwSampler *s);
void sampler_free_label_means(HwSampler *s);
int  sampler_row_label_means(const HwSampler *s, int task, uint32_t g, int64_t obs, int max_split, uint32_t *key,
							 float *mean, int cap);

/* sampler_bfs.c: sequence b of bt from spec sp; false when out of memory */
bool sampler_build_sequence(const HwSampler *s, Scratch *w, HwBatch *bt, int b, const SeqSpec *sp,
							SeqOut *so);

/* sampler_order.c: edges, padding and permutations of a built sequence */
bool sampler_finish_sequence(const HwSampler *s, Scratch *w, HwBatch *bt, int b, int nrows, int ncells,
							 SeqOut *so);

/* sampler.c: output slots for n sequences */
int  sampler_ensure_slots(HwSampler *s, int n, HwError *err);

/* sampler_collate.c: the batch of specs[0..B) (one task), and cell dropout */
int  sampler_build_batch(HwSampler *s, const SeqSpec *specs, int B, HwBatch **out, HwError *err);
void sampler_drop_cells(HwBatch *bt, float p, uint64_t key);
int  sampler_build_recency(HwSampler *s);

#endif /* HW_SAMPLER_INTERNAL_H */
