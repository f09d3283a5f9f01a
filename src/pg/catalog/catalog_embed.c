/*
 * catalog_embed.c: text embeddings of category labels, column and table
 * names and text cells, with the built-in hash or the model's embedding
 * function (called as the calling role, in batches).
 */
#include "postgres.h"

#include "pg/catalog/catalog_build_priv.h"

/* ------------------------------------------------------------- embeddings */

typedef struct EmbedList
{
	int		n, cap;
	char  **s;
	int	   *len;
} EmbedList;

static void
embed_push(EmbedList *l, char *s, int len)
{
	if (l->n == l->cap)
	{
		l->cap = l->cap ? l->cap * 2 : 256;
		l->s = l->s ? repalloc(l->s, sizeof(char *) * l->cap) : palloc(sizeof(char *) * l->cap);
		l->len = l->len ? repalloc(l->len, sizeof(int) * l->cap) : palloc(sizeof(int) * l->cap);
	}
	l->s[l->n] = s;
	l->len[l->n] = len;
	l->n++;
}

static const char *embed_fn_name;

static void
embed_error_context(void *arg)
{
	errcontext("embedding texts with function %s (option \"embedder\")", embed_fn_name);
}

/* out[n, d_text] f16 (malloc'd) */
static uint16 *
embed_texts(Build *b, int n, char **s, const int *len, const char *what)
{
	size_t d = (size_t) b->d_text;
	uint16 *out = hw_build_xrealloc(NULL, sizeof(uint16) * d * (n ? n : 1));

	if (strcmp(b->embedder, "hash") == 0)
	{
		for (int i = 0; i < n; i++)
		{
			hw_embed_hash_f16(s[i], (size_t) len[i], b->d_text, out + d * i);
			if ((i & 8191) == 0)
				CHECK_FOR_INTERRUPTS();
		}
		return out;
	}
	/* user function, called as the calling role, EMBED_FN_BATCH texts a call */
	ErrorContextCallback ecb;
	char *sql = psprintf("SELECT i, (%s(t))::pg_catalog.float4[] FROM pg_catalog.unnest($1::pg_catalog.text[]) "
						 "WITH ORDINALITY AS u(t, i) ORDER BY i",
						 b->embedder);
	Oid argt = TEXTARRAYOID;
	SPIPlanPtr plan;

	embed_fn_name = b->embedder;
	ecb.callback = embed_error_context;
	ecb.arg = NULL;
	ecb.previous = error_context_stack;
	error_context_stack = &ecb;
	plan = SPI_prepare(sql, 1, &argt);
	if (plan == NULL)
		elog(ERROR, "could not prepare the call of embedding function %s", b->embedder);
	for (int start = 0; start < n; start += EMBED_FN_BATCH)
	{
		int m = Min(EMBED_FN_BATCH, n - start);
		Datum *el = palloc(sizeof(Datum) * m);
		ArrayType *arr;
		Datum arg;

		for (int i = 0; i < m; i++)
			el[i] = PointerGetDatum(cstring_to_text_with_len(s[start + i], len[start + i]));
		arr = construct_array(el, m, TEXTOID, -1, false, TYPALIGN_INT);
		arg = PointerGetDatum(arr);
		if (SPI_execute_plan(plan, &arg, NULL, false, 0) != SPI_OK_SELECT || SPI_processed != (uint64) m)
			elog(ERROR, "embedding function %s returned no rows", b->embedder);
		for (int i = 0; i < m; i++)
		{
			bool isnull;
			Datum v = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull);
			ArrayType *a;
			Datum *vals;
			bool *vnull;
			int nv;

			if (isnull)
				ereport(ERROR, (errcode(ERRCODE_DATA_EXCEPTION),
								errmsg("embedding function %s returned NULL for a %s", b->embedder, what),
								errhint("The function must return float4[] of exactly %d values (option d_text).", b->d_text)));
			a = DatumGetArrayTypeP(v);
			deconstruct_array(a, FLOAT4OID, 4, true, TYPALIGN_INT, &vals, &vnull, &nv);
			if (nv != b->d_text)
				ereport(ERROR, (errcode(ERRCODE_DATA_EXCEPTION),
								errmsg("embedding function %s returned %d values for a %s, expected %d",
									   b->embedder, nv, what, b->d_text),
								errhint("Make the function return d_text values, or set options {\"d_text\": %d}.", nv)));
			for (int k = 0; k < nv; k++)
			{
				float f = vnull[k] ? NAN : DatumGetFloat4(vals[k]);

				if (isnan(f) || isinf(f))
					ereport(ERROR, (errcode(ERRCODE_DATA_EXCEPTION),
									errmsg("embedding function %s returned a NULL, NaN or infinite value for a %s", b->embedder, what)));
				out[d * (start + i) + k] = hw_f32_to_f16(f);
			}
		}
		SPI_freetuptable(SPI_tuptable);
		CHECK_FOR_INTERRUPTS();
	}
	SPI_freeplan(plan);
	error_context_stack = ecb.previous;
	return out;
}

void
hw_build_embed_all(Build *b, HwSnapshot *s)
{
	EmbedList cols = {0}, cats = {0}, texts = {0};

	s->d_text = b->d_text;
	for (int t = 0; t < b->ntables; t++)
		for (int c = 0; c < b->tabs[t].ncols; c++)
		{
			ColB *col = &b->tabs[t].cols[c];

			if (col->global_id < 0)
				continue;
			char *e = col->comment ? psprintf("%s of %s: %s", col->name, b->tabs[t].name, col->comment)
				: psprintf("%s of %s", col->name, b->tabs[t].name);

			embed_push(&cols, e, (int) strlen(e));
		}
	for (int t = 0; t < b->ntables; t++)
		for (int c = 0; c < b->tabs[t].ncols; c++)
		{
			ColB *col = &b->tabs[t].cols[c];

			if (col->stype != HW_ST_CATEGORICAL)
				continue;
			/* block order = rank order; recover value by rank */
			uint32 n = col->map->n;
			uint32 *byrank = palloc(sizeof(uint32) * (n ? n : 1));

			for (uint32 i = 0; i < n; i++)
				byrank[i] = i;
			if (!col->enum_seeded)
			{
				hw_build_sort_ids_by_text(byrank, n, col->map);
			}
			for (uint32 i = 0; i < n; i++)
			{
				char *e = psprintf("%s is %s", col->name, hw_strmap_get(col->map, byrank[i], NULL));

				embed_push(&cats, e, (int) strlen(e));
			}
		}
	for (uint32 i = 0; i < b->texts->n; i++)
	{
		size_t len;
		const char *tx = hw_strmap_get(b->texts, i, &len);

		embed_push(&texts, (char *) tx, (int) len);
	}
	s->ncolumns = cols.n;
	s->col_emb = embed_texts(b, cols.n, cols.s, cols.len, "column name");
	s->ncat = (uint32) cats.n;
	s->cat_emb = embed_texts(b, cats.n, cats.s, cats.len, "category");
	s->ntext = (uint32) texts.n;
	s->text_emb = embed_texts(b, texts.n, texts.s, texts.len, "text value");
}
