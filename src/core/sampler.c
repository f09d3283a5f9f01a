/*
 * sampler.c: BFS per seed (phase 1, threads across the B sequences), then
 * batch-wide collation (phase 2: fk_adj, text dedup).  Semantics in
 * sampler.h.
 *
 * Threads: a small pthread pool of its own (n_threads - 1 workers, the
 * caller is the last one), not OpenMP: its workers block on a condition
 * variable between batches instead of spinning, so the sampler coexists
 * with the trainer's OpenMP team (and with other load) on the same cores.
 * Sequences are handed out by an atomic counter; each depends only on its
 * spec, never on the thread that built it.
 *
 * Speed notes: no allocation per cell or per sequence in steady state; each
 * thread owns a scratch with a visited array stamped by a generation counter
 * (no hash maps: global row -> sequence-local id is an array lookup), a
 * binary heap for the frontier, and buffers for edges and permutations.
 * Phase 1 writes cells straight into the batch tensors at offset b*S; only
 * fk_adj and text_batch_embeddings wait for phase 2 (their sizes R and U
 * are known only then).
 */
#include "sampler.h"
#include "timeenc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

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
static uint32_t
text_key(const char *buf, int n, size_t cap)
{
	size_t   len = n < 0 ? 0 : (size_t) n < cap ? (size_t) n : cap - 1;
	uint64_t h = hw_hash_key_text(buf, len);
	uint32_t key = (uint32_t) (h ^ (h >> 32));

	return key ? key : 1;
}

/*
 * Link key of FK f crossed towards the parent (dir 0) or the child (dir 1):
 * a hash of the child table's, the constraint's and the parent table's
 * names, so it stays the same across rt_refresh (FK indices may not); never
 * 0 (0 is "no link": the seed, the anchor, label-history rows).  The model
 * turns it into a fixed code (model.h, link_types).
 */
static uint32_t
fk_link_key(const HwSnapshot *snap, int f, int dir)
{
	const HwForeignKey *k = &snap->fks[f];
	const char *ct = k->child_table >= 0 && k->child_table < snap->ntables ? snap->tables[k->child_table].name : "";
	const char *pt = k->parent_table >= 0 && k->parent_table < snap->ntables ? snap->tables[k->parent_table].name : "";
	const char *nm = k->name ? k->name : "";
	char        buf[512];
	int         n = snprintf(buf, sizeof(buf), "%s\x1f%s\x1f%s\x1f%d", ct ? ct : "", nm, pt ? pt : "", dir);

	return text_key(buf, n, sizeof(buf));
}

#define MEAN_COLS_PER_FK 4      /* columns of a child table that child means average */
#define MEAN_SCAN_MAX    1024   /* children read per row and FK for child means */
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

/*
 * Keyed bijection of [0, n): a 4-round Feistel network on 2h bits with
 * cycle walking (each seed exactly once per epoch without storing a
 * permutation).
 */
static uint64_t
feistel_perm(uint64_t x, uint64_t n, uint64_t key)
{
	if (n <= 1)
		return 0;
	int bits = 64 - __builtin_clzll(n - 1);
	int h = (bits + 1) / 2;

	if (h < 1)
		h = 1;
	uint64_t mask = (1ULL << h) - 1;

	do
	{
		uint64_t L = x >> h, R = x & mask;

		for (int r = 0; r < 4; r++)
		{
			uint64_t F = mix64(R ^ (key + (uint64_t) r * 0x632be59bd9b4e019ULL)) & mask;
			uint64_t nl = R;

			R = L ^ F;
			L = nl;
		}
		x = (L << h) | R;
	} while (x >= n);
	return x;
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

typedef struct Pool
{
	int             nworkers;   /* threads besides the caller */
	pthread_t      *th;
	int             started;
	pthread_mutex_t mu;
	pthread_cond_t  go, done;
	uint64_t        job;        /* job generation */
	int             active;     /* workers still on the current job */
	bool            quit;
	/* the current job */
	const struct HwSampler *s;
	HwBatch        *bt;
	const SeqSpec  *specs;
	int             B;
	atomic_int      next;
	atomic_int      failed;
} Pool;

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
	TableInfo *tinfo;
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
	uint8_t  *fk_child_timed;   /* [nfks] 1: FK f's child table has a time column */
	int64_t   cnt_win_us[HW_CHILD_WINDOWS];   /* child-count windows (row_child_counts); [0] unused */
	uint8_t  *fk_mean_n;        /* [nfks] columns of FK f's child table that child means average */
	int16_t  *fk_mean_col;      /* [nfks][MEAN_COLS_PER_FK] their column indices in the child table */
	uint32_t *fk_mean_key;      /* [nfks][MEAN_COLS_PER_FK] their mean keys (init_fk_means) */
	uint32_t *desc_off;         /* [ntables+1] table t's descendant paths: desc[desc_off[t] ..
								 * desc_off[t+1]) (init_descendant_paths; all 0 when off) */
	DescPath *desc;
	int32_t   ncols_total;
	int       nthreads;
	Scratch **scratch;          /* [nthreads]; scratch[nthreads-1] is the caller's */
	Pool     *pool;             /* NULL when nthreads == 1 */
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

/* --------------------------------------------------------------- utilities */

void
hw_sampler_config_default(HwSamplerConfig *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->batch_size = 32;
	cfg->seq_len = 1024;
	cfg->max_rows = 200;
	cfg->bfs_child_width = 16;
	cfg->child_sampling = HW_CHILD_RECENT;
	cfg->recent_children = -1;
	cfg->key_cells = false;
	cfg->future_parents = HW_FUTURE_PARENTS_HIDE;
	cfg->cell_dropout = 0.0f;
	cfg->descendant_counts = true;    /* churn closer to its planted rule, orders_30d and pagila unchanged: BENCHMARKS.md, session 24 */
	cfg->world_size = 1;
}

/* indexed by HwChildSampling and HwFutureParents */
static const char *const child_sampling_names[] = {"recent", "uniform"};
static const char *const future_parents_names[] = {"hide", "follow"};
#define N_NAMES(a) ((int) (sizeof(a) / sizeof((a)[0])))

const char *
hw_child_sampling_name(int policy)
{
	return hw_enum_name(child_sampling_names, N_NAMES(child_sampling_names), policy);
}

int
hw_child_sampling_from_name(const char *name)
{
	return hw_enum_from_name(child_sampling_names, N_NAMES(child_sampling_names), name);
}

const char *
hw_future_parents_name(int policy)
{
	return hw_enum_name(future_parents_names, N_NAMES(future_parents_names), policy);
}

int
hw_future_parents_from_name(const char *name)
{
	return hw_enum_from_name(future_parents_names, N_NAMES(future_parents_names), name);
}

static int
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

static void
scratch_free(Scratch *w)
{
	if (w == NULL)
		return;
	free(w->visit_gen); free(w->local); free(w->heap); free(w->buf);
	free(w->colmark); free(w->colslot); free(w->edges);
	free(w->row_start); free(w->row_len); free(w->row_hops);
	free(w->deg); free(w->nb_off); free(w->nb_cur); free(w->nb); free(w->order); free(w->queue);
	free(w->seen); free(w->distinct); free(w->count);
	free(w);
}

static Scratch *
scratch_new(const HwSampler *s)
{
	Scratch *w = calloc(1, sizeof(Scratch));
	size_t R = (size_t) s->cfg.max_rows + 1;
	size_t S = (size_t) s->cfg.seq_len + 1;

	if (w == NULL)
		return NULL;
	w->visit_gen = calloc((size_t) s->snap->nrows + 1, sizeof(uint32_t));
	w->local = malloc(((size_t) s->snap->nrows + 1) * sizeof(uint16_t));
	w->colmark = calloc((size_t) s->ncols_total + 1, sizeof(uint32_t));
	w->colslot = malloc(((size_t) s->ncols_total + 1) * sizeof(uint16_t));
	w->row_start = malloc(R * 2);
	w->row_len = malloc(R * 2);
	w->row_hops = malloc(R * 2);
	w->deg = malloc(R * 2);
	w->nb_off = malloc((R + 1) * sizeof(uint32_t));
	w->nb_cur = malloc((R + 1) * sizeof(uint32_t));
	w->order = malloc(R * 2);
	w->queue = malloc(R * 2);
	w->seen = malloc(R);
	w->distinct = malloc(S * sizeof(int32_t));
	w->count = malloc((S + 1) * 2);
	if (!w->visit_gen || !w->local || !w->colmark || !w->colslot || !w->row_start ||
		!w->row_len || !w->row_hops || !w->deg || !w->nb_off || !w->nb_cur || !w->order ||
		!w->queue || !w->seen || !w->distinct || !w->count)
	{
		scratch_free(w);
		return NULL;
	}
	return w;
}

/* ------------------------------------------------------------------- heap */

static inline bool
heap_push(Scratch *w, uint64_t key, uint32_t row, uint16_t hops, uint16_t table, uint8_t virt)
{
	if (w->heap_n == w->heap_cap &&
		grow((void **) &w->heap, &w->heap_cap, w->heap_n + 1, sizeof(HeapEnt)) != 0)
		return false;
	size_t i = w->heap_n++;
	HeapEnt e = {key, row, hops, table, virt, w->cur_link};

	while (i > 0)
	{
		size_t p = (i - 1) / 2;

		if (w->heap[p].key <= key)
			break;
		w->heap[i] = w->heap[p];
		i = p;
	}
	w->heap[i] = e;
	return true;
}

static inline HeapEnt
heap_pop(Scratch *w)
{
	HeapEnt top = w->heap[0];
	HeapEnt last = w->heap[--w->heap_n];
	size_t n = w->heap_n, i = 0;

	for (;;)
	{
		size_t c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && w->heap[c + 1].key < w->heap[c].key)
			c++;
		if (w->heap[c].key >= last.key)
			break;
		w->heap[i] = w->heap[c];
		i = c;
	}
	if (n > 0)
		w->heap[i] = last;
	return top;
}

/* priority: parents (via_child 0) first, then fewest hops, then random */
static inline uint64_t
prio(int via_child, unsigned hops, uint64_t *rng)
{
	return ((uint64_t) via_child << 63) | ((uint64_t) (hops & 0xffff) << 47) |
		(rng_next(rng) >> 17);
}

/*
 * Priority of a child row.  RECENT policy: below (via child, hops) the tie
 * key is (class, rank, random): class 0 = a most-recent pick, a child of a
 * table without time, a label-history row; class 1 = an older child drawn
 * to fill the width.  rank (0..63) orders class 0 newest first: 0 for the
 * most recent child of its group, 1 for the next, ...; children of a table
 * without time get a random rank below the width.  So when S or R runs out
 * within a hop level, the newest rows of every group are the ones kept.
 * UNIFORM: prio() (rank and class unused).
 */
static inline uint64_t
child_prio(const HwSampler *s, unsigned hops, unsigned older, unsigned rank, uint64_t *rng)
{
	if (!s->recent)
		return prio(1, hops, rng);
	return (1ULL << 63) | ((uint64_t) (hops & 0xffff) << 47) | ((uint64_t) older << 46) |
		((uint64_t) (rank < 63 ? rank : 63) << 40) | (rng_next(rng) >> 24);
}

/* rank of a child of a table without time (RECENT): random below the width */
static inline unsigned
untimed_rank(const HwSampler *s, uint64_t *rng)
{
	return s->recent ? rng_below(rng, (uint32_t) s->cfg.bfs_child_width) : 0;
}

/* -------------------------------------------------------------- cell values */

static void
fill_phase_table(float (*tab)[2], int n, double period)
{
	for (int i = 0; i < n; i++)
	{
		tab[i][0] = (float) sin(2.0 * M_PI * (i / period));
		tab[i][1] = (float) cos(2.0 * M_PI * (i / period));
	}
}

/* The columns whose child means FK f carries (row_child_means): the first
 * MEAN_COLS_PER_FK numerical or boolean columns of its child table, and
 * their keys: a hash of the child link key and the column's name, so a key
 * survives rt_refresh like the link key; never 0. */
static void
init_fk_means(HwSampler *s, int f)
{
	const HwSnapshot *snap = s->snap;
	int ct = snap->fks[f].child_table;

	s->fk_mean_n[f] = 0;
	if (ct < 0 || ct >= snap->ntables)
		return;
	for (int c = 0; c < snap->tables[ct].ncols && s->fk_mean_n[f] < MEAN_COLS_PER_FK; c++)
	{
		const HwColumn *col = &snap->tables[ct].cols[c];
		char     buf[512];
		int      n;

		if (col->global_id < 0 || !((col->stype == HW_ST_NUMERICAL && col->f32) ||
									(col->stype == HW_ST_BOOLEAN && col->u8)))
			continue;
		n = snprintf(buf, sizeof(buf), "mean\x1f%u\x1f%s", (unsigned) s->fk_link[2 * f + 1], col->name ? col->name : "");
		s->fk_mean_col[f * MEAN_COLS_PER_FK + s->fk_mean_n[f]] = (int16_t) c;
		s->fk_mean_key[f * MEAN_COLS_PER_FK + s->fk_mean_n[f]] = text_key(buf, n, sizeof(buf));
		s->fk_mean_n[f]++;
	}
}

static void
init_time_tables(HwSampler *s)
{
	/* child-count windows: 2^((j - 10) / 2) timestamp std, j = 1..11 (about
	 * 0.044 to 1.41 std), the spacing of the model's recency ramps */
	double sd = s->snap->ts_std_us > 0 ? s->snap->ts_std_us : 1.0;

	s->cnt_win_us[0] = 0;
	for (int j = 1; j < HW_CHILD_WINDOWS; j++)
		s->cnt_win_us[j] = (int64_t) llround(sd * pow(2.0, (j - 10) / 2.0));
	fill_phase_table(s->tab_min, 60, 60.0);
	fill_phase_table(s->tab_hour, 24, 24.0);
	fill_phase_table(s->tab_wday, 7, 7.0);
	fill_phase_table(s->tab_mday, 31, 31.0);
	fill_phase_table(s->tab_mon, 12, 12.0);
	fill_phase_table(s->tab_yday, 366, 366.0);
}

/*
 * hw_time_encode through lookup tables: every phase except fractional
 * seconds takes integer values, and sin/cos of those are the same doubles
 * rounded to float as hw_time_encode computes, so the result is
 * bit-identical (checked by a unit test) at a fraction of the cost.
 */
static void
enc_time(const HwSampler *s, int64_t us, float *out)
{
	HwTimeFields f;

	hw_time_fields(us, &f);
	if (f.us_in_minute % 1000000LL != 0)
	{
		/* fractional seconds: the one phase computed here, the same
		 * expression as hw_time_encode, so the same bits */
		double ph = 2.0 * M_PI * ((double) f.us_in_minute / 1e6 / 60.0);

		out[0] = (float) sin(ph);
		out[1] = (float) cos(ph);
	}
	else
	{
		int sec = (int) (f.us_in_minute / 1000000LL);

		out[0] = s->tab_min[sec][0];
		out[1] = s->tab_min[sec][1];
	}
	out[2] = s->tab_min[f.minute][0]; out[3] = s->tab_min[f.minute][1];
	out[4] = s->tab_hour[f.hour][0]; out[5] = s->tab_hour[f.hour][1];
	out[6] = s->tab_wday[f.wday][0]; out[7] = s->tab_wday[f.wday][1];
	out[8] = s->tab_mday[f.mday - 1][0]; out[9] = s->tab_mday[f.mday - 1][1];
	out[10] = s->tab_mon[f.month - 1][0]; out[11] = s->tab_mon[f.month - 1][1];
	out[12] = s->tab_yday[f.yday][0]; out[13] = s->tab_yday[f.yday][1];
	double sd = s->snap->ts_std_us > 0 ? s->snap->ts_std_us : 1.0;

	out[14] = (float) (((double) us - s->snap->ts_mean_us) / sd);
}

/* Writes the value of a target (query task or label history) at pos. */
static void
write_task_value(const HwSampler *s, HwBatch *bt, size_t pos, const HwTask *t,
				 double v, bool null)
{
	if (null)
	{
		bt->is_null[pos] = 1;
		return;
	}
	switch (t->target_stype)
	{
		case HW_ST_NUMERICAL:
			bt->numeric_values[pos] = (float) ((v - t->target_mean) / (t->target_std > 0 ? t->target_std : 1.0));
			break;
		case HW_ST_TIMESTAMP:
			enc_time(s, (int64_t) v, bt->timestamp_values + pos * HW_TS_DIM);
			break;
		case HW_ST_BOOLEAN:
			bt->bool_values[pos] = v != 0.0;
			break;
		case HW_ST_CATEGORICAL:
			bt->categorical_embed_ids[pos] = (uint32_t) t->cat_base + (uint32_t) v;
			break;
		default:
			break;
	}
}

/* Emits the cells of one virtual task-table row (obs time, target). */
static int
emit_virtual(const HwSampler *s, HwBatch *bt, size_t base, int ncells, uint16_t local,
			 const HwTask *t, int64_t obs, double target, bool tnull, bool is_target,
			 bool with_truth)
{
	int S = s->cfg.seq_len;

	if (ncells < S)
	{
		size_t pos = base + ncells++;

		bt->semantic_types[pos] = HW_ST_TIMESTAMP;
		bt->column_ids[pos] = t->col_base;
		bt->seq_row_ids[pos] = local;
		if (obs == HW_NO_CUTOFF)
			bt->is_null[pos] = 1;
		else
			enc_time(s, obs, bt->timestamp_values + pos * HW_TS_DIM);
	}
	if (ncells < S)
	{
		size_t pos = base + ncells++;

		bt->semantic_types[pos] = t->target_stype;
		bt->column_ids[pos] = t->col_base + 1;
		bt->seq_row_ids[pos] = local;
		bt->is_target[pos] = is_target;
		if (!is_target || with_truth)
			write_task_value(s, bt, pos, t, target, tnull);
	}
	return ncells;
}

/* Emits the cells of real row g (table ti) from position ncells; target_c >=
 * 0 marks that column index as the target. */
static int
emit_row(const HwSampler *s, HwBatch *bt, size_t base, int ncells, uint16_t local,
		 uint32_t g, int ti, int target_c, bool with_truth)
{
	const HwTable *tb = &s->snap->tables[ti];
	const TableInfo *inf = &s->tinfo[ti];
	uint32_t r = g - tb->row_offset;
	const uint8_t *rec = inf->rec + (size_t) r * inf->stride;
	int S = s->cfg.seq_len;
	int n = inf->n;
	int skip_from = n;          /* row 0 of a cell task cut before its target */

	if (target_c >= 0 && ncells + n > S)
	{
		for (int k = 0; k < n; k++)
			if (inf->col[k] == target_c && ncells + k >= S)
				skip_from = S - 1 - ncells;   /* leave one slot for the target */
	}
	for (int k = 0; k < n && ncells < S; k++)
	{
		int c = inf->col[k];

		if (k >= skip_from && c != target_c)
			continue;
		size_t pos = base + ncells++;
		int8_t st = inf->stype[k];

		bt->semantic_types[pos] = st;
		bt->column_ids[pos] = inf->gid[k];
		bt->seq_row_ids[pos] = local;
		if (c == target_c)
		{
			bt->is_target[pos] = 1;
			if (!with_truth)
				continue;
		}
		if ((rec[k >> 3] >> (k & 7)) & 1)
		{
			bt->is_null[pos] = 1;
			continue;
		}
		const uint8_t *v = rec + inf->off[k];

		switch (st)
		{
			case HW_ST_NUMERICAL:
				memcpy(&bt->numeric_values[pos], v, 4);
				break;
			case HW_ST_TIMESTAMP:
				{
					int64_t us;

					memcpy(&us, v, 8);
					enc_time(s, us, bt->timestamp_values + pos * HW_TS_DIM);
				}
				break;
			case HW_ST_BOOLEAN:
				bt->bool_values[pos] = v[0];
				break;
			case HW_ST_CATEGORICAL:
				memcpy(&bt->categorical_embed_ids[pos], v, 4);
				break;
			case HW_ST_TEXT:
				memcpy(&bt->text_embed_ids[pos], v, 4);   /* global; phase 2 remaps */
				break;
			default:
				break;
		}
	}
	return ncells;
}

/* ------------------------------------------------------------ child sampling */

/*
 * Pushes up to `width` children of group [e0, e1) of P->F (one FK).  The
 * time filter reads pf_time (sequential, no per-child cache miss); children
 * already taken are not excluded here (that would cost a miss per child):
 * a pushed duplicate is skipped when popped.
 */
static bool
push_children(const HwSampler *s, Scratch *w, uint64_t e0, uint64_t e1, int64_t obs,
			  unsigned hops, uint16_t ctable, uint64_t *rng)
{
	const int64_t *pt = s->pf_time;
	uint32_t width = (uint32_t) s->cfg.bfs_child_width;
	uint64_t deg = e1 - e0;

	if (width == 0 || deg == 0)
		return true;
	if (deg > 4 * (uint64_t) width)
	{
		/* hub: rejection sampling keeps the cost O(width), not O(degree) */
		uint64_t chosen[64];
		uint32_t nch = 0, lim = width < 64 ? width : 64;

		for (uint32_t a = 0; a < 4 * lim && nch < lim; a++)
		{
			uint64_t e = e0 + rng_below(rng, (uint32_t) (deg > UINT32_MAX ? UINT32_MAX : deg));

			if (pt[e] > obs)
				continue;
			bool dup = false;

			for (uint32_t k = 0; k < nch; k++)
				if (chosen[k] == e)
				{
					dup = true;
					break;
				}
			if (!dup)
				chosen[nch++] = e;
		}
		if (nch == lim)
		{
			for (uint32_t k = 0; k < nch; k++)
				if (!heap_push(w, child_prio(s, hops, 0, untimed_rank(s, rng), rng), s->pf_child[chosen[k]],
							   (uint16_t) hops, ctable, 0))
					return false;
			return true;
		}
		/* too few eligible found: fall through to the exact scan */
	}
	if (grow((void **) &w->buf, &w->buf_cap, deg, sizeof(uint32_t)) != 0)
		return false;
	uint32_t m = 0;

	for (uint64_t e = e0; e < e1; e++)
		if (pt[e] <= obs)
			w->buf[m++] = s->pf_child[e];
	uint32_t k = m < width ? m : width;

	for (uint32_t i = 0; i < k; i++)
	{
		if (m > width)
		{
			/* partial Fisher-Yates: uniform k-subset */
			uint32_t j = i + rng_below(rng, m - i);
			uint32_t tmp = w->buf[i];

			w->buf[i] = w->buf[j];
			w->buf[j] = tmp;
		}
		if (!heap_push(w, child_prio(s, hops, 0, untimed_rank(s, rng), rng), w->buf[i], (uint16_t) hops, ctable, 0))
			return false;
	}
	return true;
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

/*
 * RECENT policy for group [e0, e1) of a child table with a time column:
 * pf_time/pf_child of the group are sorted by (time, row) ascending, so the
 * children at or before obs are the prefix [e0, e0 + m) (binary search; NULL
 * times, HW_NO_TIME, sort first), the most recent k are its last k, and the
 * older fill is a uniform (width - k)-subset of the rest drawn with Floyd's
 * algorithm: exactly width - k draws, no scan of the group, whatever its
 * size.
 */
static bool
push_children_recent(const HwSampler *s, Scratch *w, uint64_t e0, uint64_t e1, int64_t obs,
					 unsigned hops, uint16_t ctable, uint64_t *rng)
{
	const int64_t *pt = s->pf_time;
	const uint32_t *dst = s->pf_child;
	uint32_t width = (uint32_t) s->cfg.bfs_child_width;
	uint64_t end = e1;

	if (width == 0 || e1 == e0)
		return true;
	if (pt[e1 - 1] > obs)
		end = first_after(pt, e0, e1 - 1, obs);
	uint64_t m = end - e0;

	if (m <= width)
	{
		for (uint64_t e = end; e-- > e0;)
			if (!heap_push(w, child_prio(s, hops, 0, (unsigned) (end - 1 - e), rng), dst[e], (uint16_t) hops, ctable, 0))
				return false;
		return true;
	}
	uint32_t k = s->recent_k;

	for (uint64_t e = end; e-- > end - k;)
		if (!heap_push(w, child_prio(s, hops, 0, (unsigned) (end - 1 - e), rng), dst[e], (uint16_t) hops, ctable, 0))
			return false;
	/* Floyd: a uniform need-subset of [0, nold) in exactly need draws */
	uint32_t need = width - k;
	uint32_t nold = (uint32_t) (m - k);
	uint32_t chosen[64];
	uint32_t nch = 0;

	for (uint32_t j = nold - need; j < nold; j++)
	{
		uint32_t t = rng_below(rng, j + 1);

		for (uint32_t q = 0; q < nch; q++)
			if (chosen[q] == t)
			{
				t = j;
				break;
			}
		chosen[nch++] = t;
	}
	for (uint32_t q = 0; q < nch; q++)
		if (!heap_push(w, child_prio(s, hops, 1, 0, rng), dst[e0 + chosen[q]], (uint16_t) hops, ctable, 0))
			return false;
	return true;
}

/* Saturating count for the uint16 child_count slots. */
static inline uint16_t
sat16(uint64_t n)
{
	return n > UINT16_MAX ? UINT16_MAX : (uint16_t) n;
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
	b = snap->pf_off[r + 1];
	while (a < b && snap->pf_fk[a] == fk)
		a++;
	*hi = a;
}

/* Window tally of one counted row dated t at or before obs (HW_NO_TIME:
 * counted in all only): row_child_counts' scan and descendant counts. */
static inline void
tally_windows(const HwSampler *s, int64_t t, int64_t obs, uint64_t n[HW_CHILD_WINDOWS])
{
	n[0]++;
	if (t == HW_NO_TIME || obs == HW_NO_CUTOFF)
		return;
	for (int j = HW_CHILD_WINDOWS - 1; j >= 1 && t > obs - s->cnt_win_us[j]; j--)
		n[j]++;
}

/* One level of row_descendant_counts: row r's children through
 * p->fk[level] at or before obs, newest first (RECENT groups are sorted by
 * time); a child of a table without time is dated like its nearest dated
 * ancestor on the path (t_in).  Reads at most *budget edges in all. */
static void
descend(const HwSampler *s, uint32_t r, int64_t obs, const DescPath *p, int level, int64_t t_in,
		uint64_t n[HW_CHILD_WINDOWS], uint32_t *budget)
{
	uint16_t fk = p->fk[level];
	uint64_t k0, e1;

	fk_group(s->snap, r, fk, &k0, &e1);
	uint64_t end = s->fk_recent[fk] ? first_after(s->pf_time, k0, e1, obs) : e1;

	for (uint64_t e = end; e-- > k0 && *budget > 0;)
	{
		int64_t te = s->pf_time[e];

		(*budget)--;
		if (te > obs)
			continue;
		if (te == HW_NO_TIME)
			te = t_in;
		if (level + 1 >= p->depth || level + 1 >= DESC_DEPTH_MAX)
			tally_windows(s, te, obs, n);
		else
			descend(s, s->pf_child[e], obs, p, level + 1, te, n, budget);
	}
}

/*
 * Descendant counts of row g at obs along path p: the rows reached by
 * crossing p's child FKs down from g (every row on the way at or before
 * obs, as the sampler could show them), counted like row_child_counts
 * counts children -- [0] all, [j] those dated in window j -- where a row of
 * a table without time takes the time of its nearest dated ancestor on the
 * path.  Why: a customer's returns hang three hops down (orders -> order
 * lines -> returns); "any return in the last 90 days" is a count the
 * sequence rarely shows whole.  At most DESC_SCAN_MAX edges are read (the
 * newest first in sorted groups), so a row with more descendants gets a
 * lower bound.
 */
static void
row_descendant_counts(const HwSampler *s, uint32_t g, int64_t obs, const DescPath *p, uint16_t *cnt)
{
	uint64_t n[HW_CHILD_WINDOWS] = {0};
	uint32_t budget = DESC_SCAN_MAX;

	descend(s, g, obs, p, 0, s->snap->row_time_us[g], n, &budget);
	for (int j = 0; j < HW_CHILD_WINDOWS; j++)
		cnt[j] = sat16(n[j]);
}

/* Path instances of p from every row of table t (no time filter): how
 * much of the data the path reaches, to rank candidate paths. */
static uint64_t
path_instances(const HwSnapshot *snap, uint32_t r, const DescPath *p, int level)
{
	uint64_t k0, e1, n = 0;

	fk_group(snap, r, p->fk[level], &k0, &e1);
	if (level + 1 >= p->depth || level + 1 >= DESC_DEPTH_MAX)
		return e1 - k0;
	for (uint64_t e = k0; e < e1; e++)
		n += path_instances(snap, snap->pf_dst[e], p, level + 1);
	return n;
}

/* init_descendant_paths' search: extends cur (cur->fk[0..level) lead from
 * table root to table at) by each child FK of at; at full depth, a leaf
 * table not taken is a candidate, kept if it reaches more rows than the
 * best path to the same leaf so far (best/best_n, *nbest of at most 64). */
static void
collect_paths(const HwSnapshot *snap, const int *cf_off, const int *cf, const bool *taken, int root, int at,
			  DescPath *cur, int level, DescPath *best, uint64_t *best_n, int *nbest)
{
	for (int i = cf_off[at]; i < cf_off[at + 1]; i++)
	{
		int f = cf[i], child = snap->fks[f].child_table;

		cur->fk[level] = (uint16_t) f;
		if (level + 1 < cur->depth && level + 1 < DESC_DEPTH_MAX)
		{
			collect_paths(snap, cf_off, cf, taken, root, child, cur, level + 1, best, best_n, nbest);
			continue;
		}
		if (taken[child])
			continue;
		uint64_t n = 0;

		for (uint32_t r = snap->tables[root].row_offset;
			 r < snap->tables[root].row_offset + (uint32_t) snap->tables[root].nrows; r++)
			n += path_instances(snap, r, cur, 0);
		/* a path reaching thousands of rows from a typical row (a
		 * category's order lines) costs thousands of reads per row and is
		 * a lower bound at the edge budget */
		if (n > (uint64_t) DESC_MEAN_MAX * (uint64_t) snap->tables[root].nrows)
			n = 0;
		int b = 0;

		while (b < *nbest && snap->fks[best[b].fk[cur->depth - 1]].child_table != child)
			b++;
		if (b == *nbest && *nbest < 64)
		{
			best[b] = *cur;
			best_n[(*nbest)++] = n;
		}
		else if (b < *nbest && n > best_n[b])
		{
			best[b] = *cur;
			best_n[b] = n;
		}
	}
}

/*
 * The descendant paths of each table (descendant_counts): the child-count
 * slots a table's own child FKs leave free (HW_CHILD_LINKS minus their
 * number) go to paths of 2 or 3 child FKs to a table that is neither the
 * table itself nor one of its child tables -- one path per such table, the
 * shortest, among those the one that reaches the most rows in the data
 * (so a customer counts the returns of the orders it placed, not of those
 * it received as gifts), unless it reaches more than DESC_MEAN_MAX rows
 * per row of the table on average; shorter paths first.  Deterministic for a
 * snapshot; the key hashes the path's child link keys, so it survives
 * rt_refresh like a link key.
 */
static int
init_descendant_paths(HwSampler *s)
{
	const HwSnapshot *snap = s->snap;
	int nt = snap->ntables, nf = snap->nfks;
	uint32_t cap = 0;

	s->desc_off = calloc((size_t) nt + 1, sizeof(uint32_t));
	if (s->desc_off == NULL)
		return -1;
	if (!s->cfg.descendant_counts || nf == 0 || snap->pf_off == NULL)
		return 0;
	/* the child FKs of each table (those with a valid child table) */
	int *cf_off = calloc((size_t) nt + 1, sizeof(int)), *cf = malloc(sizeof(int) * (size_t) nf);
	int  rc = cf_off && cf ? 0 : -1, ncf = 0;

	/* FKs grouped by parent table, in FK order within a group */
	for (int t = 0; t < nt && rc == 0; t++)
	{
		cf_off[t] = ncf;
		for (int f = 0; f < nf; f++)
			if (snap->fks[f].parent_table == t && snap->fks[f].child_table >= 0 && snap->fks[f].child_table < nt)
				cf[ncf++] = f;
	}
	if (rc == 0)
		cf_off[nt] = ncf;

	for (int t = 0; t < nt && rc == 0; t++)
	{
		int      nchild = 0, nsel = 0;
		bool    *taken = calloc((size_t) nt, sizeof(bool));
		DescPath sel[HW_CHILD_LINKS];

		if (taken == NULL)
		{
			rc = -1;
			break;
		}
		taken[t] = true;
		for (int f = 0; f < nf; f++)
			if (snap->fks[f].parent_table == t)
				nchild++;
		for (int i = cf_off[t]; i < cf_off[t + 1]; i++)
			taken[snap->fks[cf[i]].child_table] = true;
		for (int depth = 2; depth <= DESC_DEPTH_MAX && nsel < HW_CHILD_LINKS - nchild; depth++)
		{
			/* every path of this depth: depth-first over the child FKs of
			 * each table on the way (cf_off/cf), the best per leaf table */
			DescPath best[64];
			uint64_t best_n[64];
			int      nbest = 0;
			DescPath cur = {.depth = (uint8_t) depth};

			collect_paths(snap, cf_off, cf, taken, t, t, &cur, 0, best, best_n, &nbest);
			/* the leaf tables of this depth, most rows reached first */
			while (nsel < HW_CHILD_LINKS - nchild)
			{
				int b = -1;

				for (int i = 0; i < nbest; i++)
					if (best_n[i] > 0 && (b < 0 || best_n[i] > best_n[b]))
						b = i;
				if (b < 0)
					break;
				taken[snap->fks[best[b].fk[depth - 1]].child_table] = true;
				sel[nsel++] = best[b];
				best_n[b] = 0;
			}
		}
		free(taken);
		s->desc_off[t + 1] = s->desc_off[t] + (uint32_t) nsel;
		if (nsel > 0)
		{
			if (s->desc_off[t + 1] > cap)
			{
				cap = s->desc_off[t + 1] * 2;
				DescPath *d = realloc(s->desc, sizeof(DescPath) * cap);

				if (d == NULL)
				{
					rc = -1;
					break;
				}
				s->desc = d;
			}
			for (int i = 0; i < nsel; i++)
			{
				char buf[256];
				int  n = snprintf(buf, sizeof(buf), "desc");

				for (int l = 0; l < sel[i].depth; l++)
					n += snprintf(buf + n, sizeof(buf) - (size_t) n, "\x1f%u", (unsigned) s->fk_link[2 * sel[i].fk[l] + 1]);
				sel[i].key = text_key(buf, n, sizeof(buf));
				s->desc[s->desc_off[t] + (uint32_t) i] = sel[i];
			}
		}
	}
	free(cf_off);
	free(cf);
	return rc;
}

/*
 * The temporal degree of row g at obs: for each of its first HW_CHILD_LINKS
 * child FKs (pf_fk order), the FK's child link key and HW_CHILD_WINDOWS
 * counts of its children that the sampler could show -- [0] every child at
 * or before obs (NULL times and children of a table without time count, as
 * push_children keeps them), [j] those dated in (obs - cnt_win_us[j], obs]
 * (0 with no cutoff).  Counts, unlike the sampled children, are exact
 * whatever the width: attention averages, so a row's count of children is
 * otherwise hard to read.  Sorted groups (RECENT) take binary searches; a
 * table without time needs no look at its children; else one scan.
 */
static void
row_child_counts(const HwSampler *s, uint32_t g, int64_t obs, uint32_t *key, uint16_t *cnt)
{
	const HwSnapshot *snap = s->snap;
	const int64_t *pt = s->pf_time;
	uint64_t k0 = snap->pf_off[g], k1 = snap->pf_off[g + 1];
	int l = 0;

	memset(key, 0, sizeof(uint32_t) * HW_CHILD_LINKS);
	memset(cnt, 0, sizeof(uint16_t) * HW_CHILD_LINKS * HW_CHILD_WINDOWS);
	while (k0 < k1 && l < HW_CHILD_LINKS)
	{
		uint16_t fk = snap->pf_fk[k0];
		uint64_t e1 = k0 + 1;
		uint16_t *c = cnt + l * HW_CHILD_WINDOWS;

		while (e1 < k1 && snap->pf_fk[e1] == fk)
			e1++;
		key[l++] = s->fk_link[2 * fk + 1];
		if (!s->fk_child_timed[fk])
			c[0] = sat16(e1 - k0);
		else if (s->fk_recent[fk])
		{
			/* sorted by time, HW_NO_TIME first: [k0, end) is at or before obs */
			uint64_t end = first_after(pt, k0, e1, obs);

			c[0] = sat16(end - k0);
			/* window j is (obs - win_j, obs], nested: from the widest down,
			 * and once one is empty so are the narrower ones */
			uint64_t lo = k0;

			for (int j = HW_CHILD_WINDOWS - 1; j >= 1 && obs != HW_NO_CUTOFF && lo < end; j--)
			{
				lo = first_after(pt, lo, end, obs - s->cnt_win_us[j]);
				c[j] = sat16(end - lo);
			}
		}
		else
		{
			uint64_t n[HW_CHILD_WINDOWS] = {0};

			for (uint64_t e = k0; e < e1; e++)
				if (pt[e] <= obs)
					tally_windows(s, pt[e], obs, n);
			for (int j = 0; j < HW_CHILD_WINDOWS; j++)
				c[j] = sat16(n[j]);
		}
		k0 = e1;
	}
	/* then the table's descendant paths, while slots are free */
	uint16_t t = snap->row_table[g];

	for (uint32_t i = s->desc_off[t]; i < s->desc_off[t + 1] && l < HW_CHILD_LINKS; i++)
	{
		row_descendant_counts(s, g, obs, &s->desc[i], cnt + l * HW_CHILD_WINDOWS);
		if (cnt[l * HW_CHILD_WINDOWS] > 0)
			key[l++] = s->desc[i].key;
	}
}

/*
 * The child means of row g at obs: for each of its first HW_CHILD_LINKS
 * child FKs (the links of row_child_counts) and each of the first
 * MEAN_COLS_PER_FK numerical or boolean columns of the child table, in that
 * order, up to HW_MEAN_SLOTS (FK, column) pairs: the pair's key and the mean
 * of the column over the children row_child_counts counts -- [0] all at or
 * before obs, [j] those in window j -- NULLs left out, a numerical value as
 * its z-score, a boolean as -1 / +1; 0 where no child has a value.  At most
 * the MEAN_SCAN_MAX most recent children are read (all of them in a group
 * that small, which is every group of the demo shop).  Why: "the customer's
 * average rating", like a count, is a feature attention can only estimate
 * from the few children a sequence shows.  A cell task's own target column
 * (excl_table, excl_col) is never averaged: the seed row is a child of its
 * parents, dated at obs, and its masked value would reach them.
 */
static void
row_child_means(const HwSampler *s, uint32_t g, int64_t obs, int excl_table, int excl_col,
				uint32_t *key, float *mean)
{
	const HwSnapshot *snap = s->snap;
	const int64_t *pt = s->pf_time;
	uint64_t k0 = snap->pf_off[g], k1 = snap->pf_off[g + 1];
	int l = 0, m = 0;

	memset(key, 0, sizeof(uint32_t) * HW_MEAN_SLOTS);
	memset(mean, 0, sizeof(float) * HW_MEAN_SLOTS * HW_CHILD_WINDOWS);
	while (k0 < k1 && l < HW_CHILD_LINKS && m < HW_MEAN_SLOTS)
	{
		uint16_t fk = snap->pf_fk[k0];
		uint64_t e1 = k0 + 1;
		int      ct = s->fk_child_table[fk];
		const HwColumn *cols[MEAN_COLS_PER_FK];
		int      nc = 0;

		while (e1 < k1 && snap->pf_fk[e1] == fk)
			e1++;
		l++;
		for (int i = 0; i < s->fk_mean_n[fk] && m + nc < HW_MEAN_SLOTS; i++)
		{
			int c = s->fk_mean_col[fk * MEAN_COLS_PER_FK + i];

			if (ct == excl_table && c == excl_col)
				continue;
			cols[nc] = &snap->tables[ct].cols[c];
			key[m + nc] = s->fk_mean_key[fk * MEAN_COLS_PER_FK + i];
			nc++;
		}
		if (nc > 0)
		{
			double   sum[MEAN_COLS_PER_FK][HW_CHILD_WINDOWS];
			uint32_t n[MEAN_COLS_PER_FK][HW_CHILD_WINDOWS];
			uint32_t off = snap->tables[ct].row_offset, seen = 0;
			/* a sorted (RECENT) group: [k0, end) is at or before obs, newest last */
			uint64_t end = s->fk_recent[fk] ? first_after(pt, k0, e1, obs) : e1;

			memset(sum, 0, sizeof(sum));
			memset(n, 0, sizeof(n));
			for (uint64_t e = end; e-- > k0 && seen < MEAN_SCAN_MAX;)
			{
				int64_t  te = pt[e];
				uint32_t r = s->pf_child[e] - off;

				if (te > obs)
					continue;
				seen++;
				for (int i = 0; i < nc; i++)
				{
					const HwColumn *c = cols[i];
					double   v;

					if (c->valid && !c->valid[r])
						continue;
					v = c->stype == HW_ST_BOOLEAN ? (c->u8[r] ? 1.0 : -1.0) : (double) c->f32[r];
					sum[i][0] += v;
					n[i][0]++;
					if (te == HW_NO_TIME || obs == HW_NO_CUTOFF)
						continue;
					for (int j = HW_CHILD_WINDOWS - 1; j >= 1 && te > obs - s->cnt_win_us[j]; j--)
					{
						sum[i][j] += v;
						n[i][j]++;
					}
				}
			}
			for (int i = 0; i < nc; i++)
				for (int j = 0; j < HW_CHILD_WINDOWS; j++)
					mean[(m + i) * HW_CHILD_WINDOWS + j] = n[i][j] ? (float) (sum[i][j] / n[i][j]) : 0.0f;
			m += nc;
		}
		k0 = e1;
	}
}

/* Pushes label-history rows of the anchor: its seeds whose label is
 * visible at obs (hw_task_label_visible: observed before obs, known by obs)
 * merged with the caller's context labels (prediction), the most recent
 * first.  max_split >= 0 (caller-given splits): seeds of a later split
 * (train < val < test) are left out, so a train sequence never shows a val
 * or test label even when one anchor's seeds are in several splits. */
static bool
push_history(const HwSampler *s, Scratch *w, const HwTask *t, const SeqSpec *sp, uint32_t anchor,
			 int64_t obs, unsigned hops, int max_split, uint64_t *rng)
{
	if (!t->label_history || obs == HW_NO_CUTOFF)
		return true;
	/* lower bound of (anchor, obs) in hist_order: candidates lie below it */
	uint32_t lo = 0, hi = t->hist_order ? t->nseeds : 0;

	while (lo < hi)
	{
		uint32_t mid = lo + (hi - lo) / 2;
		uint32_t i = t->hist_order[mid];

		if (t->anchor_row[i] < anchor || (t->anchor_row[i] == anchor && t->obs_time_us[i] < obs))
			lo = mid + 1;
		else
			hi = mid;
	}
	int lim = t->history_max < s->cfg.bfs_child_width ? t->history_max : s->cfg.bfs_child_width;
	uint32_t c = sp->nctx;      /* context labels left, newest at c - 1 */

	for (int k = 0; k < lim;)
	{
		/* the newest stored label still eligible */
		while (lo > 0)
		{
			uint32_t i = t->hist_order[lo - 1];

			if (t->anchor_row[i] != anchor)
				lo = 0;
			else if ((max_split >= 0 && t->split[i] > max_split) || !hw_task_label_visible(t, i, obs))
				lo--;
			else
				break;
		}
		if (lo == 0 && c == 0)
			break;
		bool take_ctx = c > 0 && (lo == 0 || sp->ctx[c - 1].obs_time_us >= t->obs_time_us[t->hist_order[lo - 1]]);
		uint32_t row = take_ctx ? --c : t->hist_order[--lo];

		if (!heap_push(w, child_prio(s, hops, 0, (unsigned) k, rng), row, (uint16_t) hops, 0, take_ctx ? 2 : 1))
			return false;
		k++;
	}
	return true;
}

/* ------------------------------------------------------------ permutations */

static void
sort_by_deg(uint16_t *a, int n, const uint16_t *deg)
{
	for (int i = 1; i < n; i++)
	{
		uint16_t v = a[i];
		int j = i;

		while (j > 0 && (deg[a[j - 1]] > deg[v] || (deg[a[j - 1]] == deg[v] && a[j - 1] > v)))
		{
			a[j] = a[j - 1];
			j--;
		}
		a[j] = v;
	}
}

/*
 * Reverse Cuthill-McKee over the symmetrised row graph; deg decides the
 * start rows and the neighbour order (sampler.h).  order[0..n) out.
 */
static void
rcm_order(Scratch *w, int n, const uint16_t *deg, uint16_t *order)
{
	int head = 0, tail = 0, done = 0;

	memset(w->seen, 0, (size_t) n);
	while (done < n)
	{
		int start = -1;

		for (int r = 0; r < n; r++)
			if (!w->seen[r] && (start < 0 || deg[r] < deg[start]))
				start = r;
		w->seen[start] = 1;
		w->queue[tail++] = (uint16_t) start;
		while (head < tail)
		{
			uint16_t v = w->queue[head++];
			int first = tail;

			order[done++] = v;
			for (uint32_t k = w->nb_off[v]; k < w->nb_off[v + 1]; k++)
			{
				uint16_t u = w->nb[k];

				if (!w->seen[u])
				{
					w->seen[u] = 1;
					w->queue[tail++] = u;
				}
			}
			sort_by_deg(w->queue + first, tail - first, deg);
		}
	}
	for (int i = 0; i < n / 2; i++)
	{
		uint16_t tmp = order[i];

		order[i] = order[n - 1 - i];
		order[n - 1 - i] = tmp;
	}
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;

	return x < y ? -1 : x > y;
}

/* fk edges (deduplicated), row adjacency and the three permutations */
static bool
finish_sequence(const HwSampler *s, Scratch *w, HwBatch *bt, int b, int nrows, int ncells,
				SeqOut *so)
{
	int S = s->cfg.seq_len;
	size_t base = (size_t) b * S;

	/* dedupe edges: sort keys r1<<16|r2 */
	if (w->edges_n > 1)
	{
		qsort(w->edges, w->edges_n, sizeof(uint32_t), cmp_u32);
		size_t m = 1;

		for (size_t i = 1; i < w->edges_n; i++)
			if (w->edges[i] != w->edges[m - 1])
				w->edges[m++] = w->edges[i];
		w->edges_n = m;
	}
	if (grow((void **) &so->edges, &so->cap, w->edges_n + 1, sizeof(uint32_t)) != 0)
		return false;
	memcpy(so->edges, w->edges, w->edges_n * sizeof(uint32_t));
	so->nedges = w->edges_n;
	so->nrows = nrows;

	/* padding */
	for (int p = ncells; p < S; p++)
		bt->is_padding[base + p] = 1;

	/* col_perm: stable counting sort by column id, padding last */
	{
		int nd = 0;

		if (++w->colgen == 0)
		{
			memset(w->colmark, 0, sizeof(uint32_t) * ((size_t) s->ncols_total + 1));
			w->colgen = 1;
		}
		for (int p = 0; p < ncells; p++)
		{
			int32_t c = bt->column_ids[base + p];

			if (w->colmark[c] != w->colgen)
			{
				w->colmark[c] = w->colgen;
				w->distinct[nd++] = c;
			}
		}
		/* insertion sort of the (few) distinct ids */
		for (int i = 1; i < nd; i++)
		{
			int32_t v = w->distinct[i];
			int j = i;

			while (j > 0 && w->distinct[j - 1] > v)
			{
				w->distinct[j] = w->distinct[j - 1];
				j--;
			}
			w->distinct[j] = v;
		}
		for (int i = 0; i < nd; i++)
		{
			w->colslot[w->distinct[i]] = (uint16_t) i;
			w->count[i] = 0;
		}
		for (int p = 0; p < ncells; p++)
			w->count[w->colslot[bt->column_ids[base + p]]]++;
		uint16_t acc = 0;

		for (int i = 0; i < nd; i++)
		{
			uint16_t c = w->count[i];

			w->count[i] = acc;
			acc += c;
		}
		uint16_t *cp = bt->col_perm + base;

		for (int p = 0; p < ncells; p++)
			cp[w->count[w->colslot[bt->column_ids[base + p]]]++] = (uint16_t) p;
		for (int p = ncells; p < S; p++)
			cp[p] = (uint16_t) p;
	}

	/* symmetrised neighbour lists (CSR over rows) */
	memset(w->nb_off, 0, sizeof(uint32_t) * ((size_t) nrows + 1));
	for (size_t e = 0; e < w->edges_n; e++)
	{
		uint32_t r1 = w->edges[e] >> 16, r2 = w->edges[e] & 0xffff;

		if (r1 == r2)
			continue;
		w->nb_off[r1 + 1]++;
		w->nb_off[r2 + 1]++;
	}
	for (int r = 0; r < nrows; r++)
		w->nb_off[r + 1] += w->nb_off[r];
	if (grow((void **) &w->nb, &w->nb_cap, (size_t) w->nb_off[nrows] + 1, sizeof(uint16_t)) != 0)
		return false;
	{
		uint32_t *cur = w->nb_cur;

		memcpy(cur, w->nb_off, sizeof(uint32_t) * (size_t) nrows);
		for (size_t e = 0; e < w->edges_n; e++)
		{
			uint32_t r1 = w->edges[e] >> 16, r2 = w->edges[e] & 0xffff;

			if (r1 == r2)
				continue;
			w->nb[cur[r1]++] = (uint16_t) r2;
			w->nb[cur[r2]++] = (uint16_t) r1;
		}
		/* a pair linked both ways appears twice: harmless for BFS (seen[]) */
	}

	/* out_perm: deg = 1 + #parents (row counts of I + fk_adj) */
	for (int r = 0; r < nrows; r++)
		w->deg[r] = 1;
	for (size_t e = 0; e < w->edges_n; e++)
		w->deg[w->edges[e] >> 16]++;
	rcm_order(w, nrows, w->deg, w->order);
	{
		uint16_t *op = bt->out_perm + base;
		int k = 0;

		for (int i = 0; i < nrows; i++)
		{
			int r = w->order[i];

			for (int p = 0; p < w->row_len[r]; p++)
				op[k++] = (uint16_t) (w->row_start[r] + p);
		}
		for (int p = k; p < S; p++)
			op[p] = (uint16_t) p;
	}
	/* in_perm: deg = #children (row counts of fk_adj^T) */
	for (int r = 0; r < nrows; r++)
		w->deg[r] = 0;
	for (size_t e = 0; e < w->edges_n; e++)
		w->deg[w->edges[e] & 0xffff]++;
	rcm_order(w, nrows, w->deg, w->order);
	{
		uint16_t *ip = bt->in_perm + base;
		int k = 0;

		for (int i = 0; i < nrows; i++)
		{
			int r = w->order[i];

			for (int p = 0; p < w->row_len[r]; p++)
				ip[k++] = (uint16_t) (w->row_start[r] + p);
		}
		for (int p = k; p < S; p++)
			ip[p] = (uint16_t) p;
	}
	return true;
}

/* ---------------------------------------------------------------- one sequence */

static bool
add_edge(Scratch *w, uint16_t r1, uint16_t r2)
{
	if (grow((void **) &w->edges, &w->edges_cap, w->edges_n + 1, sizeof(uint32_t)) != 0)
		return false;
	w->edges[w->edges_n++] = ((uint32_t) r1 << 16) | r2;
	return true;
}

static inline void
prefetch_row(const HwSampler *s, const Scratch *w, const HeapEnt *e)
{
	if (e->virt)
		return;
	const TableInfo *inf = &s->tinfo[e->table];

	__builtin_prefetch(&w->visit_gen[e->row]);
	__builtin_prefetch(&s->snap->fp_off[e->row]);
	__builtin_prefetch(&s->snap->pf_off[e->row]);
	__builtin_prefetch(inf->rec + (size_t) (e->row - s->snap->tables[e->table].row_offset) * inf->stride);
}

static bool
build_sequence(const HwSampler *s, Scratch *w, HwBatch *bt, int b, const SeqSpec *sp, SeqOut *so)
{
	const HwSnapshot *snap = s->snap;
	const HwTask *t = s->tasks[sp->task];
	int S = s->cfg.seq_len;
	int Rmax = s->cfg.max_rows;
	size_t base = (size_t) b * S;
	uint64_t rng = sp->rng;
	int nrows = 0, ncells = 0;
	int64_t obs = sp->obs_time_us;
	int vseed_local = -1;       /* local id of the query seed's virtual row */
	/* parents dated after obs are dropped (with no cutoff none is) */
	bool hide_future = s->cfg.future_parents == HW_FUTURE_PARENTS_HIDE && obs != HW_NO_CUTOFF;

	if (++w->gen == 0)
	{
		memset(w->visit_gen, 0, sizeof(uint32_t) * ((size_t) snap->nrows + 1));
		w->gen = 1;
	}
	w->heap_n = 0;
	w->edges_n = 0;
	w->cur_link = 0;            /* the anchor: reached by no FK */
	/* the observation time, z-scored exactly as enc_time's last slot (the
	 * model's relative-time features compare the two) */
	if (obs == HW_NO_CUTOFF)
		bt->seed_time[b] = NAN;
	else
	{
		double sd = snap->ts_std_us > 0 ? snap->ts_std_us : 1.0;

		bt->seed_time[b] = (float) (((double) obs - snap->ts_mean_us) / sd);
	}

	/* row 0: the seed */
	if (t->kind == HW_TASK_QUERY)
	{
		double tv = sp->seed_idx >= 0 ? t->target[sp->seed_idx] : 0.0;
		bool tn = sp->seed_idx >= 0 ? t->target_null[sp->seed_idx] != 0 : false;

		so->rows[0].row = -1;
		so->rows[0].vseed = sp->seed_idx;
		w->row_start[0] = 0;
		ncells = emit_virtual(s, bt, base, 0, 0, t, obs, tv, tn, true, sp->with_truth);
		w->row_len[0] = (uint16_t) ncells;
		w->row_hops[0] = 0;
		vseed_local = 0;
		nrows = 1;
		if (!heap_push(w, prio(0, 1, &rng), sp->anchor_row, 1, (uint16_t) t->anchor_table, 0))
			return false;
	}
	else
	{
		if (!heap_push(w, 0, sp->anchor_row, 0, (uint16_t) t->anchor_table, 0))
			return false;
	}

	while (w->heap_n > 0 && nrows < Rmax && ncells < S)
	{
		HeapEnt e = heap_pop(w);
		uint16_t local = (uint16_t) nrows;

		if (e.virt)
		{
			/* label-history row: seed e.row of this task, or context label
			 * e.row of the caller; label visible */
			bool is_ctx = e.virt == 2;

			so->rows[nrows].row = -1;
			so->rows[nrows].vseed = is_ctx ? HW_VSEED_CONTEXT - (int64_t) e.row : e.row;
			w->row_start[nrows] = (uint16_t) ncells;
			ncells = is_ctx ?
				emit_virtual(s, bt, base, ncells, local, t, sp->ctx[e.row].obs_time_us,
							 sp->ctx[e.row].target, sp->ctx[e.row].target_null != 0, false, true) :
				emit_virtual(s, bt, base, ncells, local, t, t->obs_time_us[e.row],
							 t->target[e.row], t->target_null[e.row] != 0, false, true);
			w->row_len[nrows] = (uint16_t) (ncells - w->row_start[nrows]);
			nrows++;
			if (w->visit_gen[sp->anchor_row] == w->gen &&
				!add_edge(w, local, w->local[sp->anchor_row]))
				return false;
			continue;
		}
		uint32_t g = e.row;

		if (w->visit_gen[g] == w->gen)
			continue;
		w->visit_gen[g] = w->gen;
		w->local[g] = local;
		/* software pipelining: the BFS is bound by cache misses, so start
		 * loading what the next pops will need (the heap top is the next
		 * row unless this row pushes a better one) and this row's edges
		 * before emitting its cells */
		for (size_t q = 0; q < 3 && q < w->heap_n; q++)
			prefetch_row(s, w, &w->heap[q]);
		uint64_t fp0 = snap->fp_off[g], fp1 = snap->fp_off[g + 1];
		uint64_t k0 = snap->pf_off[g], k1 = snap->pf_off[g + 1];

		__builtin_prefetch(&snap->fp_dst[fp0]);
		__builtin_prefetch(&snap->fp_fk[fp0]);
		__builtin_prefetch(&snap->pf_fk[k0]);
		__builtin_prefetch(&s->pf_time[k0]);
		__builtin_prefetch(&s->pf_child[k0]);
		so->rows[nrows].row = g;
		so->rows[nrows].vseed = -1;
		w->row_start[nrows] = (uint16_t) ncells;
		bool is_seed_row = (t->kind == HW_TASK_CELL && nrows == 0);

		ncells = emit_row(s, bt, base, ncells, local, g, e.table,
						  is_seed_row ? t->target_col : -1, sp->with_truth);
		{
			uint32_t ckey[HW_CHILD_LINKS];
			uint16_t ccnt[HW_CHILD_LINKS * HW_CHILD_WINDOWS];
			uint32_t mkey[HW_MEAN_SLOTS];
			float    mval[HW_MEAN_SLOTS * HW_CHILD_WINDOWS];

			row_child_counts(s, g, obs, ckey, ccnt);
			row_child_means(s, g, obs, t->kind == HW_TASK_CELL ? t->anchor_table : -1,
							t->kind == HW_TASK_CELL ? t->target_col : -1, mkey, mval);
			for (int c = w->row_start[nrows]; c < ncells; c++)
			{
				bt->link_key[base + c] = e.link;
				memcpy(bt->child_key + (base + c) * HW_CHILD_LINKS, ckey, sizeof(ckey));
				memcpy(bt->child_count + (base + c) * HW_CHILD_LINKS * HW_CHILD_WINDOWS, ccnt, sizeof(ccnt));
				memcpy(bt->mean_key + (base + c) * HW_MEAN_SLOTS, mkey, sizeof(mkey));
				memcpy(bt->child_mean + (base + c) * HW_MEAN_SLOTS * HW_CHILD_WINDOWS, mval, sizeof(mval));
			}
		}
		w->row_len[nrows] = (uint16_t) (ncells - w->row_start[nrows]);
		w->row_hops[nrows] = e.hops;
		nrows++;
		if (nrows >= Rmax || ncells >= S)
			break;
		unsigned h = (unsigned) e.hops + 1;

		/* parents: all of them, except (hide_future) those dated after
		 * obs -- the children's test, so NULL times and "no cutoff" keep
		 * them; a dropped parent is simply never taken, as one that did
		 * not fit (the anchor was taken first, so it is never dropped) */
		for (uint64_t k = fp0; k < fp1; k++)
		{
			__builtin_prefetch(&w->visit_gen[snap->fp_dst[k]]);
			if (hide_future)
				__builtin_prefetch(&snap->row_time_us[snap->fp_dst[k]]);
		}
		for (uint64_t k = fp0; k < fp1; k++)
		{
			uint32_t p = snap->fp_dst[k];

			if (w->visit_gen[p] == w->gen || (hide_future && snap->row_time_us[p] > obs))
				continue;
			w->cur_link = s->fk_link[2 * snap->fp_fk[k]];
			if (!heap_push(w, prio(0, h, &rng), p, (uint16_t) h, s->fk_parent_table[snap->fp_fk[k]], 0))
				return false;
		}
		/* children, per FK, time-filtered and sampled */
		while (k0 < k1)
		{
			uint16_t fk = snap->pf_fk[k0];
			uint64_t k = k0 + 1;

			while (k < k1 && snap->pf_fk[k] == fk)
				k++;
			w->cur_link = s->fk_link[2 * fk + 1];
			if (!(s->fk_recent[fk] ? push_children_recent(s, w, k0, k, obs, h, s->fk_child_table[fk], &rng)
				  : push_children(s, w, k0, k, obs, h, s->fk_child_table[fk], &rng)))
				return false;
			k0 = k;
		}
		w->cur_link = 0;        /* label-history rows: no FK */
		if (vseed_local >= 0 && g == sp->anchor_row && e.hops == 1 &&
			!push_history(s, w, t, sp, g, obs, h,
						  t->split_method != HW_SPLIT_BY_HASH && sp->seed_idx >= 0 ? t->split[sp->seed_idx] : -1,
						  &rng))
			return false;
	}

	/* fk edges among taken rows: real rows' parents, virtual rows -> anchor */
	for (int r = 0; r < nrows; r++)
	{
		if (so->rows[r].row >= 0)
		{
			uint32_t g = (uint32_t) so->rows[r].row;

			for (uint64_t k = snap->fp_off[g]; k < snap->fp_off[g + 1]; k++)
			{
				uint32_t p = snap->fp_dst[k];

				if (w->visit_gen[p] == w->gen && !add_edge(w, (uint16_t) r, w->local[p]))
					return false;
			}
		}
		else if (r == vseed_local && w->visit_gen[sp->anchor_row] == w->gen)
		{
			if (!add_edge(w, (uint16_t) r, w->local[sp->anchor_row]))
				return false;
		}
	}
	return finish_sequence(s, w, bt, b, nrows, ncells, so);
}

/* -------------------------------------------------------------------- pool */

/* Builds sequences of the current job until none is left. */
static void
pool_work(Pool *p, Scratch *w)
{
	for (;;)
	{
		int b = atomic_fetch_add(&p->next, 1);

		if (b >= p->B)
			break;
		if (!build_sequence(p->s, w, p->bt, b, &p->specs[b], &p->s->seq[b]))
			atomic_store(&p->failed, 1);
	}
}

typedef struct WorkerArg
{
	Pool    *p;
	Scratch *w;
} WorkerArg;

static void *
pool_worker(void *arg)
{
	WorkerArg a = *(WorkerArg *) arg;
	Pool *p = a.p;
	uint64_t seen = 0;

	free(arg);
	pthread_mutex_lock(&p->mu);
	for (;;)
	{
		while (!p->quit && p->job == seen)
			pthread_cond_wait(&p->go, &p->mu);
		if (p->quit)
			break;
		seen = p->job;
		pthread_mutex_unlock(&p->mu);
		pool_work(p, a.w);
		pthread_mutex_lock(&p->mu);
		if (--p->active == 0)
			pthread_cond_signal(&p->done);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

static void
pool_stop(Pool *p)
{
	if (p == NULL)
		return;
	pthread_mutex_lock(&p->mu);
	p->quit = true;
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < p->started; i++)
		pthread_join(p->th[i], NULL);
	pthread_cond_destroy(&p->go);
	pthread_cond_destroy(&p->done);
	pthread_mutex_destroy(&p->mu);
	free(p->th);
	free(p);
}

static Pool *
pool_start(HwSampler *s, HwError *err)
{
	Pool *p = calloc(1, sizeof(Pool));

	if (p == NULL || (p->th = calloc((size_t) s->nthreads, sizeof(pthread_t))) == NULL)
	{
		free(p);
		hw_error_set(err, HW_ERR_NOMEM, "out of memory for the sampler's threads");
		return NULL;
	}
	p->nworkers = s->nthreads - 1;
	p->s = s;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->go, NULL);
	pthread_cond_init(&p->done, NULL);
	/* workers start with every signal blocked: inside PostgreSQL, signal
	 * handlers must run on the main thread only */
	sigset_t all, old;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (int i = 0; i < p->nworkers; i++)
	{
		WorkerArg *a = malloc(sizeof(WorkerArg));

		if (a == NULL)
			break;
		a->p = p;
		a->w = s->scratch[i];
		if (pthread_create(&p->th[i], NULL, pool_worker, a) != 0)
		{
			free(a);
			break;
		}
		p->started++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (p->started != p->nworkers)
	{
		pool_stop(p);
		hw_error_set(err, HW_ERR_INTERNAL, "could not start %d sampler threads", s->nthreads - 1);
		return NULL;
	}
	return p;
}

/* Phase 1 on the pool; the caller works too (with the last scratch).
 * Returns 1 if a sequence failed (out of memory). */
static int
pool_run(Pool *p, HwBatch *bt, const SeqSpec *specs, int B)
{
	pthread_mutex_lock(&p->mu);
	p->bt = bt;
	p->specs = specs;
	p->B = B;
	atomic_store(&p->next, 0);
	atomic_store(&p->failed, 0);
	p->active = p->nworkers;
	p->job++;
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	pool_work(p, p->s->scratch[p->s->nthreads - 1]);
	pthread_mutex_lock(&p->mu);
	while (p->active > 0)
		pthread_cond_wait(&p->done, &p->mu);
	pthread_mutex_unlock(&p->mu);
	return atomic_load(&p->failed);
}

/* ------------------------------------------------------------------- create */

static int
build_row_cache(const HwTable *tb, TableInfo *inf)
{
	uint32_t nullbytes = ((uint32_t) inf->n + 7) / 8;
	uint32_t off = (nullbytes + 3) & ~3u;

	inf->off = malloc(sizeof(uint16_t) * ((size_t) inf->n + 1));
	if (inf->off == NULL)
		return -1;
	for (int k = 0; k < inf->n; k++)
	{
		int8_t st = inf->stype[k];

		inf->off[k] = (uint16_t) off;
		off += st == HW_ST_IDENTIFIER ? 0 : st == HW_ST_TIMESTAMP ? 8 : 4;
		if (off > 60000)
			return -1;
	}
	inf->stride = (off + 7) & ~7u;
	inf->rec = calloc((size_t) tb->nrows * inf->stride + 8, 1);
	if (inf->rec == NULL)
		return -1;
	for (uint32_t r = 0; r < tb->nrows; r++)
	{
		uint8_t *rec = inf->rec + (size_t) r * inf->stride;

		for (int k = 0; k < inf->n; k++)
		{
			const HwColumn *col = &tb->cols[inf->col[k]];
			uint8_t *v = rec + inf->off[k];

			if (col->valid && !col->valid[r])
			{
				rec[k >> 3] |= (uint8_t) (1u << (k & 7));
				continue;
			}
			switch (inf->stype[k])
			{
				case HW_ST_NUMERICAL: memcpy(v, &col->f32[r], 4); break;
				case HW_ST_TIMESTAMP: memcpy(v, &col->i64[r], 8); break;
				case HW_ST_BOOLEAN: v[0] = col->u8[r] != 0; break;
				case HW_ST_CATEGORICAL:
				case HW_ST_TEXT: memcpy(v, &col->u32[r], 4); break;
				default: break;
			}
		}
	}
	return 0;
}

typedef struct TimedChild
{
	int64_t  t;
	uint32_t row;
} TimedChild;

static int
cmp_timed(const void *a, const void *b)
{
	const TimedChild *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->row < y->row ? -1 : x->row > y->row;
}

/*
 * RECENT policy: sorts each P->F group of a temporal FK by (child time,
 * child row) ascending, in pf_time and pf_child_own together.  The groups
 * stay where they are (pf_off/pf_fk unchanged).  Children usually arrive
 * in time order already, so an insertion sort does the small groups in
 * about one pass; large ones go through qsort.
 */
static int
sort_recent_groups(HwSampler *s)
{
	const HwSnapshot *snap = s->snap;
	TimedChild *tmp = NULL;
	size_t tmp_cap = 0;

	for (uint32_t r = 0; r < snap->nrows; r++)
	{
		uint64_t e = snap->pf_off[r], e1 = snap->pf_off[r + 1];

		while (e < e1)
		{
			uint16_t fk = snap->pf_fk[e];
			uint64_t g1 = e + 1;

			while (g1 < e1 && snap->pf_fk[g1] == fk)
				g1++;
			uint64_t n = g1 - e;

			if (s->fk_recent[fk] && n > 1)
			{
				int64_t *pt = s->pf_time + e;
				uint32_t *pd = s->pf_child_own + e;

				if (n <= 32)
				{
					for (uint64_t i = 1; i < n; i++)
					{
						int64_t t = pt[i];
						uint32_t d = pd[i];
						uint64_t j = i;

						while (j > 0 && (pt[j - 1] > t || (pt[j - 1] == t && pd[j - 1] > d)))
						{
							pt[j] = pt[j - 1];
							pd[j] = pd[j - 1];
							j--;
						}
						pt[j] = t;
						pd[j] = d;
					}
				}
				else
				{
					if (grow((void **) &tmp, &tmp_cap, n, sizeof(TimedChild)) != 0)
					{
						free(tmp);
						return -1;
					}
					for (uint64_t i = 0; i < n; i++)
					{
						tmp[i].t = pt[i];
						tmp[i].row = pd[i];
					}
					qsort(tmp, n, sizeof(TimedChild), cmp_timed);
					for (uint64_t i = 0; i < n; i++)
					{
						pt[i] = tmp[i].t;
						pd[i] = tmp[i].row;
					}
				}
			}
			e = g1;
		}
	}
	free(tmp);
	return 0;
}

void
hw_sampler_free(HwSampler *s)
{
	if (s == NULL)
		return;
	if (s->is_clone && !s->own_shards)
		goto own;
	for (int sp = 0; sp < HW_N_SPLITS; sp++)
	{
		if (s->shard_idx[sp])
			for (int t = 0; t < s->ntasks; t++)
				free(s->shard_idx[sp][t]);
		free(s->shard_idx[sp]);
		free(s->shard_n[sp]);
		if (!s->is_clone)
			free(s->shard[sp]);
	}
	if (s->is_clone)
		goto own;
	if (s->tinfo)
		for (int t = 0; t < s->snap->ntables; t++)
		{
			free(s->tinfo[t].col);
			free(s->tinfo[t].gid);
			free(s->tinfo[t].stype);
			free(s->tinfo[t].off);
			free(s->tinfo[t].rec);
		}
	free(s->tinfo);
	free(s->pf_time);
	free(s->pf_child_own);
	free(s->fk_recent);
	free(s->fk_child_timed);
	free(s->fk_mean_n);
	free(s->fk_mean_col);
	free(s->fk_mean_key);
	free(s->desc_off);
	free(s->desc);
	free(s->fk_child_table);
	free(s->fk_parent_table);
	free(s->fk_link);
	free(s->weights);
	free(s->task_key);
	free(s->tasks);
own:
	pool_stop(s->pool);
	if (s->scratch)
		for (int i = 0; i < s->nthreads; i++)
			scratch_free(s->scratch[i]);
	free(s->scratch);
	for (int i = 0; i < s->seq_cap; i++)
	{
		free(s->seq[i].rows);
		free(s->seq[i].edges);
	}
	free(s->seq);
	free(s->tmap_key);
	free(s->tmap_val);
	free(s->tmap_gen);
	free(s->uniq);
	free(s);
}

static int
ensure_slots(HwSampler *s, int n, HwError *err)
{
	if (n <= s->seq_cap)
		return HW_OK;
	SeqOut *q = realloc(s->seq, sizeof(SeqOut) * (size_t) n);

	if (q == NULL)
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory for %d sequences", n);
	s->seq = q;
	for (int i = s->seq_cap; i < n; i++)
	{
		memset(&s->seq[i], 0, sizeof(SeqOut));
		s->seq[i].rows = malloc(sizeof(HwCellSource) * ((size_t) s->cfg.max_rows + 1));
		if (s->seq[i].rows == NULL)
		{
			s->seq_cap = i;
			return hw_error_set(err, HW_ERR_NOMEM, "out of memory for %d sequences", n);
		}
	}
	s->seq_cap = n;
	return HW_OK;
}

HwSampler *
hw_sampler_create(const HwSnapshot *snap, HwTask *const *tasks, int ntasks,
				  const HwSamplerConfig *cfg, HwError *err)
{
	if (snap == NULL || tasks == NULL || ntasks < 1)
	{
		hw_error_set(err, HW_ERR_INVALID, "a sampler needs a snapshot and at least one task");
		return NULL;
	}
	if (cfg->batch_size < 1 || cfg->batch_size > 65535 || cfg->seq_len < 2 || cfg->seq_len > 65535 ||
		cfg->max_rows < 1 || cfg->max_rows > 65535 || cfg->bfs_child_width < 0 ||
		cfg->bfs_child_width > 64 || cfg->world_size < 1 || cfg->rank < 0 ||
		cfg->rank >= cfg->world_size || cfg->n_threads < 0 ||
		hw_child_sampling_name(cfg->child_sampling) == NULL ||
		cfg->recent_children < -1 || cfg->recent_children > cfg->bfs_child_width ||
		hw_future_parents_name(cfg->future_parents) == NULL ||
		!(cfg->cell_dropout >= 0.0f && cfg->cell_dropout <= 0.9f))
	{
		hw_error_set(err, HW_ERR_INVALID,
					 "bad sampler config: batch_size %d (1..65535), seq_len %d (2..65535), max_rows %d "
					 "(1..65535), bfs_child_width %d (0..64), rank %d of world_size %d, child_sampling %d "
					 "(recent 0, uniform 1), recent_children %d (-1..bfs_child_width), future_parents %d "
					 "(hide 0, follow 1), cell_dropout %g (0..0.9)",
					 cfg->batch_size, cfg->seq_len, cfg->max_rows, cfg->bfs_child_width,
					 cfg->rank, cfg->world_size, cfg->child_sampling, cfg->recent_children,
					 cfg->future_parents, (double) cfg->cell_dropout);
		return NULL;
	}
	HwSampler *s = calloc(1, sizeof(HwSampler));

	if (s == NULL)
		goto oom;
	s->snap = snap;
	s->cfg = *cfg;
	s->cfg.task_weights = NULL;
	s->recent = cfg->child_sampling == HW_CHILD_RECENT;
	s->recent_k = (uint32_t) (cfg->recent_children < 0 ? (cfg->bfs_child_width + 1) / 2 : cfg->recent_children);
	s->ntasks = ntasks;
	s->tasks = malloc(sizeof(HwTask *) * (size_t) ntasks);
	s->weights = malloc(sizeof(double) * (size_t) ntasks);
	s->task_key = malloc(sizeof(uint64_t) * (size_t) ntasks);
	if (!s->tasks || !s->weights || !s->task_key)
		goto oom;
	for (int i = 0; i < ntasks; i++)
	{
		s->tasks[i] = tasks[i];
		s->task_key[i] = hw_hash_key_text(tasks[i]->name, strlen(tasks[i]->name));
		s->weights[i] = cfg->task_weights ? cfg->task_weights[i] : 1.0;
		if (!(s->weights[i] >= 0))
		{
			hw_error_set(err, HW_ERR_INVALID, "task weight %g of task %s is negative", s->weights[i], tasks[i]->name);
			hw_sampler_free(s);
			return NULL;
		}
		const HwTask *t = tasks[i];

		if (t->anchor_table < 0 || t->anchor_table >= snap->ntables)
		{
			hw_error_set(err, HW_ERR_INVALID, "task %s: anchor table not in the snapshot", t->name);
			hw_sampler_free(s);
			return NULL;
		}
		const HwTable *at = &snap->tables[t->anchor_table];

		for (uint32_t k = 0; k < t->nseeds; k++)
			if (t->anchor_row[k] < at->row_offset || t->anchor_row[k] >= at->row_offset + at->nrows)
			{
				hw_error_set(err, HW_ERR_INVALID, "task %s: seed %u has anchor row %u outside table %s",
							 t->name, k, t->anchor_row[k], at->name);
				hw_sampler_free(s);
				return NULL;
			}
		if (t->kind == HW_TASK_CELL &&
			(t->target_col < 0 || t->target_col >= at->ncols ||
			 at->cols[t->target_col].stype == HW_ST_IGNORED || at->cols[t->target_col].global_id < 0))
		{
			hw_error_set(err, HW_ERR_INVALID, "task %s: target column is not a column of %s the model sees",
						 t->name, at->name);
			hw_sampler_free(s);
			return NULL;
		}
	}
	if (hw_task_layout(snap, s->tasks, ntasks, err) != HW_OK)
	{
		hw_sampler_free(s);
		return NULL;
	}
	s->ncols_total = snap->ncolumns;
	for (int i = 0; i < ntasks; i++)
	{
		if (s->tasks[i]->kind == HW_TASK_QUERY)
			s->ncols_total += 2;
		if (s->tasks[i]->kind == HW_TASK_QUERY && s->tasks[i]->label_history &&
			s->tasks[i]->hist_order == NULL &&
			hw_task_build_history(s->tasks[i], err) != HW_OK)
		{
			hw_sampler_free(s);
			return NULL;
		}
	}
	/* shards */
	for (int sp = 0; sp < HW_N_SPLITS; sp++)
	{
		s->shard_idx[sp] = calloc((size_t) ntasks, sizeof(uint32_t *));
		s->shard_n[sp] = calloc((size_t) ntasks, sizeof(uint32_t));
		if (!s->shard_idx[sp] || !s->shard_n[sp])
			goto oom;
		for (int t = 0; t < ntasks; t++)
			if (hw_task_shard(s->tasks[t], sp, cfg->rank, cfg->world_size,
							  &s->shard_idx[sp][t], &s->shard_n[sp][t], err) != HW_OK)
			{
				hw_sampler_free(s);
				return NULL;
			}
	}
	/* emitted columns per table */
	s->tinfo = calloc((size_t) snap->ntables + 1, sizeof(TableInfo));
	if (s->tinfo == NULL)
		goto oom;
	for (int ti = 0; ti < snap->ntables; ti++)
	{
		const HwTable *tb = &snap->tables[ti];
		TableInfo *inf = &s->tinfo[ti];

		inf->col = malloc(sizeof(int32_t) * ((size_t) tb->ncols + 1));
		inf->gid = malloc(sizeof(int32_t) * ((size_t) tb->ncols + 1));
		inf->stype = malloc((size_t) tb->ncols + 1);
		if (!inf->col || !inf->gid || !inf->stype)
			goto oom;
		/* key cells: without key_cells, identifier columns are left out,
		 * except a cell task's target and, in a table of nothing but
		 * identifiers, the first one (sampler.h) */
		int keep_id = -1;

		if (!cfg->key_cells)
		{
			bool any_value = false;

			for (int c = 0; c < tb->ncols; c++)
			{
				const HwColumn *col = &tb->cols[c];

				if (col->global_id < 0 || col->stype <= HW_ST_IDENTIFIER || col->stype >= HW_ST_IGNORED)
					continue;
				any_value = true;
			}
			for (int c = 0; c < tb->ncols && !any_value && keep_id < 0; c++)
				if (tb->cols[c].stype == HW_ST_IDENTIFIER && tb->cols[c].global_id >= 0)
					keep_id = c;
		}
		for (int c = 0; c < tb->ncols; c++)
		{
			const HwColumn *col = &tb->cols[c];

			if (col->stype == HW_ST_IGNORED || col->global_id < 0 || col->stype < 0 ||
				col->stype >= HW_N_STYPES)
				continue;
			if (col->stype == HW_ST_IDENTIFIER && !cfg->key_cells && c != keep_id)
			{
				bool target = false;

				for (int i = 0; i < ntasks; i++)
					target |= s->tasks[i]->kind == HW_TASK_CELL && s->tasks[i]->anchor_table == ti &&
						s->tasks[i]->target_col == c;
				if (!target)
					continue;
			}
			bool ok = col->stype == HW_ST_IDENTIFIER ||
				(col->stype == HW_ST_NUMERICAL && col->f32) ||
				(col->stype == HW_ST_TIMESTAMP && col->i64) ||
				(col->stype == HW_ST_BOOLEAN && col->u8) ||
				((col->stype == HW_ST_CATEGORICAL || col->stype == HW_ST_TEXT) && col->u32);

			if (!ok)
			{
				hw_error_set(err, HW_ERR_CORRUPT, "column %s of %s has no values for its type %s",
							 col->name, tb->name, hw_stype_name(col->stype));
				hw_sampler_free(s);
				return NULL;
			}
			inf->col[inf->n] = c;
			inf->gid[inf->n] = col->global_id;
			inf->stype[inf->n] = col->stype;
			inf->n++;
		}
		if (build_row_cache(tb, inf) != 0)
			goto oom;
	}
	/* per-edge child time and per-FK tables */
	{
		uint64_t ne = snap->pf_off ? snap->pf_off[snap->nrows] : 0;

		s->pf_time = malloc(sizeof(int64_t) * (ne + 1));
		s->fk_child_table = malloc(sizeof(uint16_t) * ((size_t) snap->nfks + 1));
		s->fk_parent_table = malloc(sizeof(uint16_t) * ((size_t) snap->nfks + 1));
		s->fk_recent = calloc((size_t) snap->nfks + 1, 1);
		s->fk_link = malloc(sizeof(uint32_t) * 2 * ((size_t) snap->nfks + 1));
		s->fk_child_timed = calloc((size_t) snap->nfks + 1, 1);
		s->fk_mean_n = calloc((size_t) snap->nfks + 1, 1);
		s->fk_mean_col = calloc(((size_t) snap->nfks + 1) * MEAN_COLS_PER_FK, sizeof(int16_t));
		s->fk_mean_key = calloc(((size_t) snap->nfks + 1) * MEAN_COLS_PER_FK, sizeof(uint32_t));
		if (!s->pf_time || !s->fk_child_table || !s->fk_parent_table || !s->fk_recent || !s->fk_link ||
			!s->fk_child_timed || !s->fk_mean_n || !s->fk_mean_col || !s->fk_mean_key)
			goto oom;
		for (uint64_t e = 0; e < ne; e++)
			s->pf_time[e] = snap->row_time_us[snap->pf_dst[e]];
		bool any_recent = false;

		for (int f = 0; f < snap->nfks; f++)
		{
			s->fk_child_table[f] = (uint16_t) snap->fks[f].child_table;
			s->fk_parent_table[f] = (uint16_t) snap->fks[f].parent_table;
			for (int dir = 0; dir < 2; dir++)
				s->fk_link[2 * f + dir] = fk_link_key(snap, f, dir);
			s->fk_child_timed[f] = snap->fks[f].child_table >= 0 &&
				snap->fks[f].child_table < snap->ntables &&
				snap->tables[snap->fks[f].child_table].time_col >= 0;
			s->fk_recent[f] = s->recent && s->fk_child_timed[f];
			any_recent |= s->fk_recent[f] != 0;
			init_fk_means(s, f);
		}
		s->pf_child = snap->pf_dst;
		if (any_recent && ne > 0)
		{
			s->pf_child_own = malloc(sizeof(uint32_t) * ne);
			if (s->pf_child_own == NULL)
				goto oom;
			memcpy(s->pf_child_own, snap->pf_dst, sizeof(uint32_t) * ne);
			if (sort_recent_groups(s) != 0)
				goto oom;
			s->pf_child = s->pf_child_own;
		}
	}
	if (init_descendant_paths(s) != 0)
		goto oom;
	init_time_tables(s);
	/* threads and their scratch */
	{
		int nt = cfg->n_threads;

		if (nt <= 0)
			nt = (int) sysconf(_SC_NPROCESSORS_ONLN);
		if (nt <= 0)
			nt = 1;
		if (nt > 256)
			nt = 256;
		s->nthreads = nt;
		s->scratch = calloc((size_t) nt, sizeof(Scratch *));
		if (s->scratch == NULL)
			goto oom;
		for (int i = 0; i < nt; i++)
			if ((s->scratch[i] = scratch_new(s)) == NULL)
				goto oom;
	}
	if (ensure_slots(s, cfg->batch_size, err) != HW_OK)
	{
		hw_sampler_free(s);
		return NULL;
	}
	if (s->nthreads > 1 && (s->pool = pool_start(s, err)) == NULL)
	{
		hw_sampler_free(s);
		return NULL;
	}
	return s;
oom:
	hw_sampler_free(s);
	hw_error_set(err, HW_ERR_NOMEM, "out of memory creating the sampler (%u snapshot rows)", snap->nrows);
	return NULL;
}

HwSampler *
hw_sampler_clone(const HwSampler *base, HwError *err)
{
	HwSampler *s = malloc(sizeof(HwSampler));

	if (s == NULL)
		goto oom;
	*s = *base;
	s->is_clone = true;
	s->scratch = NULL;
	s->pool = NULL;
	s->seq = NULL;
	s->seq_cap = 0;
	s->last_B = 0;
	s->tmap_key = s->tmap_val = s->tmap_gen = s->uniq = NULL;
	s->tmap_cap = s->tmap_genc = 0;
	s->scratch = calloc((size_t) s->nthreads, sizeof(Scratch *));
	if (s->scratch == NULL)
		goto oom;
	for (int i = 0; i < s->nthreads; i++)
		if ((s->scratch[i] = scratch_new(s)) == NULL)
			goto oom;
	if (ensure_slots(s, s->cfg.batch_size, err) != HW_OK)
	{
		hw_sampler_free(s);
		return NULL;
	}
	if (s->nthreads > 1 && (s->pool = pool_start(s, err)) == NULL)
	{
		hw_sampler_free(s);
		return NULL;
	}
	return s;
oom:
	hw_sampler_free(s);
	hw_error_set(err, HW_ERR_NOMEM, "out of memory cloning the sampler");
	return NULL;
}

HwSampler *
hw_sampler_clone_rank(const HwSampler *base, int rank, int world_size, HwError *err)
{
	if (world_size < 1 || rank < 0 || rank >= world_size)
	{
		hw_error_set(err, HW_ERR_INVALID, "sampler for rank %d of world_size %d", rank, world_size);
		return NULL;
	}
	HwSampler *s = hw_sampler_clone(base, err);

	if (s == NULL)
		return NULL;
	/* until the own arrays exist, free() must not touch the base's */
	for (int sp = 0; sp < HW_N_SPLITS; sp++)
	{
		s->shard_idx[sp] = NULL;
		s->shard_n[sp] = NULL;
	}
	s->own_shards = true;
	s->cfg.rank = rank;
	s->cfg.world_size = world_size;
	for (int sp = 0; sp < HW_N_SPLITS; sp++)
	{
		s->shard_idx[sp] = calloc((size_t) s->ntasks, sizeof(uint32_t *));
		s->shard_n[sp] = calloc((size_t) s->ntasks, sizeof(uint32_t));
		if (!s->shard_idx[sp] || !s->shard_n[sp])
		{
			hw_sampler_free(s);
			hw_error_set(err, HW_ERR_NOMEM, "out of memory sharding the seeds for rank %d", rank);
			return NULL;
		}
		for (int t = 0; t < s->ntasks; t++)
			if (hw_task_shard(s->tasks[t], sp, rank, world_size, &s->shard_idx[sp][t], &s->shard_n[sp][t],
							  err) != HW_OK)
			{
				hw_sampler_free(s);
				return NULL;
			}
	}
	return s;
}

/* ------------------------------------------------------------------- batches */

/* phase 2: fk_adj and text dedup; the batch was allocated with R = U = 0 */
static int
collate(HwSampler *s, HwBatch *bt, int B, HwError *err)
{
	int S = s->cfg.seq_len;
	int R = 1;

	for (int b = 0; b < B; b++)
		if (s->seq[b].nrows > R)
			R = s->seq[b].nrows;
	uint8_t *adj = calloc((size_t) B * R * R + 1, 1);

	if (adj == NULL)
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory for fk_adj [%d,%d,%d]", B, R, R);
	for (int b = 0; b < B; b++)
	{
		const SeqOut *so = &s->seq[b];
		uint8_t *a = adj + (size_t) b * R * R;

		for (size_t e = 0; e < so->nedges; e++)
			a[(size_t) (so->edges[e] >> 16) * R + (so->edges[e] & 0xffff)] = 1;
	}
	free(bt->fk_adj);
	bt->fk_adj = adj;
	bt->R = R;

	/* text: global -> batch-local in first-occurrence order */
	uint32_t need = 1;

	while (need < (uint32_t) (2 * (size_t) B * S) && need < (1u << 31))
		need <<= 1;
	if (need > s->tmap_cap)
	{
		free(s->tmap_key);
		free(s->tmap_val);
		free(s->tmap_gen);
		free(s->uniq);
		s->tmap_key = malloc(sizeof(uint32_t) * need);
		s->tmap_val = malloc(sizeof(uint32_t) * need);
		s->tmap_gen = calloc(need, sizeof(uint32_t));
		s->uniq = malloc(sizeof(uint32_t) * need);
		s->tmap_cap = need;
		s->tmap_genc = 0;
		if (!s->tmap_key || !s->tmap_val || !s->tmap_gen || !s->uniq)
		{
			s->tmap_cap = 0;
			return hw_error_set(err, HW_ERR_NOMEM, "out of memory for text dedup");
		}
	}
	if (++s->tmap_genc == 0)
	{
		memset(s->tmap_gen, 0, sizeof(uint32_t) * s->tmap_cap);
		s->tmap_genc = 1;
	}
	uint32_t U = 0, mask = s->tmap_cap - 1;
	size_t BS = (size_t) B * S;

	for (size_t p = 0; p < BS; p++)
	{
		if (bt->semantic_types[p] != HW_ST_TEXT || bt->is_null[p] || bt->is_padding[p] || bt->is_target[p])
			continue;
		uint32_t g = bt->text_embed_ids[p];
		uint32_t h = (uint32_t) (mix64(g) & mask);

		while (s->tmap_gen[h] == s->tmap_genc && s->tmap_key[h] != g)
			h = (h + 1) & mask;
		if (s->tmap_gen[h] != s->tmap_genc)
		{
			s->tmap_gen[h] = s->tmap_genc;
			s->tmap_key[h] = g;
			s->tmap_val[h] = U;
			s->uniq[U++] = g;
		}
		bt->text_embed_ids[p] = s->tmap_val[h];
	}
	int d = s->snap->d_text > 0 ? s->snap->d_text : 1;
	uint16_t *te = calloc((size_t) U * d + 1, sizeof(uint16_t));

	if (te == NULL)
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory for %u text embeddings", U);
	if (s->snap->text_emb)
		for (uint32_t u = 0; u < U; u++)
			if (s->uniq[u] < s->snap->ntext)
				memcpy(te + (size_t) u * d, s->snap->text_emb + (size_t) s->uniq[u] * d, (size_t) d * 2);
	free(bt->text_batch_embeddings);
	bt->text_batch_embeddings = te;
	bt->U = (int32_t) U;
	bt->d_text = d;
	return HW_OK;
}

static int
build_batch(HwSampler *s, const SeqSpec *specs, int B, HwBatch **out, HwError *err)
{
	*out = NULL;
	int rc = ensure_slots(s, B, err);

	if (rc != HW_OK)
		return rc;
	HwBatch *bt = hw_batch_alloc(B, s->cfg.seq_len, 0, 0, s->snap->d_text > 0 ? s->snap->d_text : 1);

	if (bt == NULL)
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory for a batch of %d x %d", B, s->cfg.seq_len);
	const HwTask *t = s->tasks[specs[0].task];

	bt->target_stype = (uint8_t) t->target_stype;
	bt->num_loss = (uint8_t) t->num_loss;
	bt->ord_levels = (uint8_t) hw_task_ordinal_levels(t);
	hw_task_ordinal_map(t, &bt->ord_scale, &bt->ord_shift);
	bt->task_idx = (uint32_t) specs[0].task;
	bt->cat_emb_start = t->target_stype == HW_ST_CATEGORICAL ? (uint32_t) t->cat_base : 0;
	bt->cat_emb_count = t->target_stype == HW_ST_CATEGORICAL ? t->cat_count : 0;

	int failed = 0;

	if (s->pool && B > 1)
		failed = pool_run(s->pool, bt, specs, B);
	else
		for (int b = 0; b < B; b++)
			if (!build_sequence(s, s->scratch[s->nthreads - 1], bt, b, &specs[b], &s->seq[b]))
				failed = 1;
	s->last_B = B;
	if (failed)
	{
		hw_batch_free(bt);
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory while sampling a batch");
	}
	rc = collate(s, bt, B, err);
	if (rc != HW_OK)
	{
		hw_batch_free(bt);
		return rc;
	}
	*out = bt;
	return HW_OK;
}

/*
 * Cell dropout (sampler.h): each cell of bt that is not padding, not the
 * target and not in the seed row becomes NULL with probability p, drawn
 * from mix64(key + i * golden ratio), i = b * S + s, key = hash of (seed,
 * rank, split, k): the batch stays a pure function of its number.
 * Only values change; the NULL contract (value slots 0) holds.
 */
static void
drop_cells(HwBatch *bt, float p, uint64_t key)
{
	const uint64_t threshold = (uint64_t) ((double) p * 0x1.0p64);     /* p <= 0.9: fits */

	for (int b = 0; b < bt->B; b++)
		for (int s = 0; s < bt->S; s++)
		{
			size_t i = (size_t) b * (size_t) bt->S + (size_t) s;

			if (bt->is_padding[i] || bt->is_target[i] || bt->is_null[i] || bt->seq_row_ids[i] == 0)
				continue;
			if (mix64(key + (uint64_t) i * 0x9e3779b97f4a7c15ULL) >= threshold)   /* one mix per cell */
				continue;
			bt->is_null[i] = 1;
			bt->numeric_values[i] = 0.0f;
			bt->bool_values[i] = 0;
			bt->categorical_embed_ids[i] = 0;
			bt->text_embed_ids[i] = 0;
			memset(bt->timestamp_values + i * HW_TS_DIM, 0, sizeof(float) * HW_TS_DIM);
		}
}

int
hw_sampler_batch(HwSampler *s, int split, uint64_t k, HwBatch **out, uint32_t *seed_idx, HwError *err)
{
	*out = NULL;
	if (split < 0 || split >= HW_N_SPLITS)
		return hw_error_set(err, HW_ERR_INVALID, "unknown split %d", split);
	/* task: weighted draw among tasks with seeds in this shard */
	double total = 0;

	for (int t = 0; t < s->ntasks; t++)
		if (s->shard_n[split][t] > 0)
			total += s->weights[t];
	if (!(total > 0))
		return hw_error_set(err, HW_ERR_INVALID, "no task has %s seeds for rank %d of %d",
							hw_split_name(split), s->cfg.rank, s->cfg.world_size);
	const uint64_t seed = s->cfg.seed, rank = (uint64_t) s->cfg.rank;
	double u = (double) (hash5(seed, rank, (uint64_t) split, k, 0x7461736bULL) >> 11) * 0x1.0p-53 * total;
	int task = -1;

	for (int t = 0; t < s->ntasks; t++)
		if (s->shard_n[split][t] > 0 && s->weights[t] > 0)
		{
			task = t;
			if (u < s->weights[t])
				break;
			u -= s->weights[t];
		}
	int B = s->cfg.batch_size;
	uint32_t n = s->shard_n[split][task];
	const uint32_t *idx = s->shard_idx[split][task];
	SeqSpec specs_stack[64] = {{0}};
	SeqSpec *specs = B <= 64 ? specs_stack : calloc((size_t) B, sizeof(SeqSpec));

	if (specs == NULL)
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory");
	const HwTask *t = s->tasks[task];

	for (int b = 0; b < B; b++)
	{
		uint64_t p = k * (uint64_t) B + (uint64_t) b;
		uint64_t epoch = p / n;
		uint64_t key = hash5(seed, rank, (uint64_t) split, s->task_key[task], epoch ^ 0x65706f6368ULL);
		uint32_t si = idx[feistel_perm(p % n, n, key)];

		specs[b].task = task;
		specs[b].anchor_row = t->anchor_row[si];
		specs[b].obs_time_us = t->obs_time_us[si];
		specs[b].seed_idx = si;
		specs[b].with_truth = true;
		specs[b].rng = hash5(seed, rank, (uint64_t) split, k, (uint64_t) b);
		if (seed_idx)
			seed_idx[b] = si;
	}
	int rc = build_batch(s, specs, B, out, err);

	if (rc == HW_OK && split == HW_SPLIT_TRAIN && s->cfg.cell_dropout > 0.0f)
		drop_cells(*out, s->cfg.cell_dropout, hash5(seed, rank, (uint64_t) split, k, 0x64726f70ULL));
	if (specs != specs_stack)
		free(specs);
	return rc;
}

/*
 * The random choices of an evaluation or prediction sequence, keyed by what
 * it is about -- (cfg.seed, task, anchor row, obs time) -- and not by the
 * seed's index: rt_evaluate (seed batches) and rt_predict (ad-hoc seeds)
 * then build the same sequence for the same (anchor, obs time), so the
 * metric rt_evaluate reports is the one of the served predictions.
 */
static uint64_t
sequence_rng(const HwSampler *s, int task, uint32_t anchor_row, int64_t obs_time_us)
{
	return hash5(s->cfg.seed, 0x70726564ULL, s->task_key[task], anchor_row, (uint64_t) obs_time_us);
}

int
hw_sampler_seed_batch(HwSampler *s, int task, const uint32_t *seed_idx, int n,
					  HwBatch **out, HwError *err)
{
	*out = NULL;
	if (task < 0 || task >= s->ntasks || n < 1 || n > 65535)
		return hw_error_set(err, HW_ERR_INVALID, "bad seed batch: task %d, %d seeds", task, n);
	const HwTask *t = s->tasks[task];
	SeqSpec *specs = calloc((size_t) n, sizeof(SeqSpec));

	if (specs == NULL)
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory");
	for (int b = 0; b < n; b++)
	{
		uint32_t si = seed_idx[b];

		if (si >= t->nseeds)
		{
			free(specs);
			return hw_error_set(err, HW_ERR_INVALID, "seed %u of task %s out of range (%u seeds)",
								si, t->name, t->nseeds);
		}
		specs[b].task = task;
		specs[b].anchor_row = t->anchor_row[si];
		specs[b].obs_time_us = t->obs_time_us[si];
		specs[b].seed_idx = si;
		specs[b].with_truth = true;
		specs[b].rng = sequence_rng(s, task, t->anchor_row[si], t->obs_time_us[si]);
	}
	int rc = build_batch(s, specs, n, out, err);

	free(specs);
	return rc;
}

int
hw_sampler_build_for_seeds(HwSampler *s, int task, const uint32_t *anchor_rows,
						   const int64_t *obs_time_us, int n, HwBatch **out, HwError *err)
{
	return hw_sampler_build_for_seeds_ctx(s, task, anchor_rows, obs_time_us, n, NULL, NULL, out, err);
}

static int
cmp_ctx(const void *a, const void *b)
{
	const HwContextLabel *x = a, *y = b;

	return x->obs_time_us < y->obs_time_us ? -1 : x->obs_time_us > y->obs_time_us;
}

/* A context label's value fits the task's target type. */
static bool
ctx_value_ok(const HwTask *t, const HwContextLabel *c)
{
	if (c->target_null)
		return true;
	switch (t->target_stype)
	{
		case HW_ST_NUMERICAL:
			return isfinite(c->target);
		case HW_ST_BOOLEAN:
			return c->target == 0.0 || c->target == 1.0;
		case HW_ST_CATEGORICAL:
			return c->target >= 0 && c->target < (double) t->ncat_own && c->target == floor(c->target);
		case HW_ST_TIMESTAMP:
			return isfinite(c->target) && fabs(c->target) < 9.0e18;
		default:
			return false;
	}
}

int
hw_sampler_build_for_seeds_ctx(HwSampler *s, int task, const uint32_t *anchor_rows,
							   const int64_t *obs_time_us, int n,
							   const HwContextLabel *const *ctx, const uint32_t *nctx,
							   HwBatch **out, HwError *err)
{
	*out = NULL;
	if (task < 0 || task >= s->ntasks || n < 1 || n > 65535)
		return hw_error_set(err, HW_ERR_INVALID, "bad prediction batch: task %d, %d seeds", task, n);
	const HwTask *t = s->tasks[task];
	const HwTable *at = &s->snap->tables[t->anchor_table];
	SeqSpec *specs = calloc((size_t) n, sizeof(SeqSpec));
	size_t total_ctx = 0;
	HwContextLabel *sorted = NULL;
	int rc = HW_OK;

	if (specs == NULL)
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory");
	for (int b = 0; ctx && nctx && b < n; b++)
		total_ctx += nctx[b];
	if (total_ctx > 0 && (sorted = malloc(sizeof(HwContextLabel) * total_ctx)) == NULL)
	{
		free(specs);
		return hw_error_set(err, HW_ERR_NOMEM, "out of memory");
	}
	size_t used = 0;

	for (int b = 0; b < n; b++)
	{
		if (anchor_rows[b] < at->row_offset || anchor_rows[b] >= at->row_offset + at->nrows)
		{
			rc = hw_error_set(err, HW_ERR_INVALID, "row %u is not a row of %s, the anchor table of task %s",
							  anchor_rows[b], at->name, t->name);
			goto done;
		}
		int64_t obs = obs_time_us ? obs_time_us[b] : HW_NO_CUTOFF;

		if (t->kind == HW_TASK_CELL && obs_time_us == NULL)
		{
			int64_t rt = s->snap->row_time_us[anchor_rows[b]];

			obs = rt == HW_NO_TIME ? HW_NO_CUTOFF : rt;
		}
		specs[b].task = task;
		specs[b].anchor_row = anchor_rows[b];
		specs[b].obs_time_us = obs;
		specs[b].seed_idx = -1;
		specs[b].with_truth = false;
		specs[b].rng = sequence_rng(s, task, anchor_rows[b], obs);
		uint32_t m = ctx && nctx ? nctx[b] : 0;

		if (m == 0)
			continue;
		if (ctx[b] == NULL)
		{
			rc = hw_error_set(err, HW_ERR_INVALID, "context labels of seed %d of task %s are missing", b, t->name);
			goto done;
		}
		if (t->kind != HW_TASK_QUERY || !t->label_history)
		{
			rc = hw_error_set(err, HW_ERR_INVALID, "task %s has no label history, so it takes no context labels",
							  t->name);
			goto done;
		}
		if (obs == HW_NO_CUTOFF)
		{
			rc = hw_error_set(err, HW_ERR_INVALID, "context labels of task %s need an observation time", t->name);
			goto done;
		}
		for (uint32_t k = 0; k < m; k++)
		{
			const HwContextLabel *c = &ctx[b][k];

			if (c->obs_time_us >= obs)
			{
				rc = hw_error_set(err, HW_ERR_INVALID,
								  "context label %u of task %s is observed at %lld, not before the observation time %lld",
								  k + 1, t->name, (long long) c->obs_time_us, (long long) obs);
				goto done;
			}
			if (!ctx_value_ok(t, c))
			{
				rc = hw_error_set(err, HW_ERR_INVALID, "context label %u of task %s is not a %s value",
								  k + 1, t->name, hw_stype_name(t->target_stype));
				goto done;
			}
		}
		memcpy(sorted + used, ctx[b], sizeof(HwContextLabel) * m);
		/* stable by obs time: equal times keep the caller's order */
		for (uint32_t i = 1; i < m; i++)
			for (uint32_t j = i; j > 0 && cmp_ctx(&sorted[used + j - 1], &sorted[used + j]) > 0; j--)
			{
				HwContextLabel x = sorted[used + j];

				sorted[used + j] = sorted[used + j - 1];
				sorted[used + j - 1] = x;
			}
		specs[b].ctx = sorted + used;
		specs[b].nctx = m;
		used += m;
	}
	rc = build_batch(s, specs, n, out, err);
done:
	free(sorted);
	free(specs);
	return rc;
}

const uint32_t *
hw_sampler_shard(const HwSampler *s, int task, int split, uint32_t *n)
{
	if (task < 0 || task >= s->ntasks || split < 0 || split >= HW_N_SPLITS)
	{
		*n = 0;
		return NULL;
	}
	*n = s->shard_n[split][task];
	return s->shard_idx[split][task];
}

int
hw_sampler_ntasks(const HwSampler *s)
{
	return s->ntasks;
}

const HwSamplerConfig *
hw_sampler_config(const HwSampler *s)
{
	return &s->cfg;
}

int
hw_sampler_last_rows(const HwSampler *s, int b, const HwCellSource **rows, int *nrows)
{
	if (b < 0 || b >= s->last_B)
		return HW_ERR_INVALID;
	*rows = s->seq[b].rows;
	*nrows = s->seq[b].nrows;
	return HW_OK;
}
