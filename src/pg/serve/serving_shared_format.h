/*
 * serving_shared_format.h: the layout of a shared model cache file
 * (serving_shared_format.c); only for serving_shared*.c.
 */
#ifndef HW_SERVING_SHARED_FORMAT_H
#define HW_SERVING_SHARED_FORMAT_H

#include "postgres.h"

#include "core/model.h"
#include "core/snapshot.h"
#include "pg/serve/hw_serving_shared.h"

#define SHARED_PARENT "pg_headwater"
#define SHARED_DIR SHARED_PARENT "/serving"
#define SHARED_VERSION 11      /* 3: HwModelConfig gained child_means (same size on x86-64); 4: ema_decay (served parameters may be the average);
								* 5: which weights (last or average) in the name and header; 6: HwModelConfig gained ordinal_head;
								* 7: count_ramps; 8: head_adamw; 9: head_weight_decay; 10: count_ramps 1 means the anchor row only;
								* 11: absolute_time */
#define SHARED_MAGIC "HWSERVE"        /* 8 bytes with its NUL */
#define SHARED_ALIGN 64
/* a temporary file older than this is an abandoned one */
#define SHARED_TMP_MAX_AGE_S 3600

/* At offset 0 of the file; everything after `checksum` is covered by it. */
typedef struct HwSharedFileHeader
{
	char          magic[8];
	uint64        checksum;        /* file_hash of bytes [16, file_len) */
	uint32        version;
	uint32        header_bytes;    /* sizeof(HwSharedFileHeader) */
	uint32        config_bytes;    /* sizeof(HwModelConfig) */
	int32         model_id;
	uint64        file_len;
	int64         checkpoint_id;
	int32         average;         /* the weights: 1 the parameter average, 0 the last parameters */
	int32         pad;
	uint64        key_hash;
	uint64        version_hash;
	HwModelConfig cfg;
	uint64        params_off;      /* float[numel] */
	int64         numel;
	uint64        meta_off;        /* the snapshot's description (hw_shared_write_snapshot) */
	uint64        meta_len;
} HwSharedFileHeader;


/* A growing malloc'd buffer; fail is set (and kept) when it cannot grow. */
typedef struct HwSharedBuf
{
	uint8  *p;
	size_t  n, cap;
	bool    fail;
} HwSharedBuf;

/* Reads the snapshot description of a mapped file; fail is set when it
 * does not fit the file. */
typedef struct HwSharedReader
{
	const uint8 *base;       /* the whole file */
	size_t       len;
	const uint8 *p;          /* meta */
	size_t       n, off;
	bool         fail;
} HwSharedReader;

/* the hash of a model state key or a checkpoint version (in the file name) */
uint64 hw_shared_key_hash(const char *key);
/* the 64-bit checksum of bytes p[0..n) */
uint64 hw_shared_file_hash(const uint8 *p, size_t n);
/* out[MAXPGPATH]: the file of (model, at, key hash, version hash) */
void   hw_shared_file_path(char *out, int32 model_id, HwServedAt at, uint64 kh, uint64 vh);

void   hw_shared_buf_put(HwSharedBuf *b, const void *src, size_t n);
void   hw_shared_buf_align(HwSharedBuf *b);

/* Appends the snapshot's arrays to data and its description to meta. */
void   hw_shared_write_snapshot(HwSharedBuf *data, HwSharedBuf *meta, const HwSnapshot *s);

/* The snapshot described by r (malloc'd; arrays point into the mapping),
 * or NULL (r->fail) when the description does not fit the file. */
HwSnapshot *hw_shared_read_snapshot(HwSharedReader *r);
void   hw_shared_snapshot_free(HwSnapshot *s);

/* Why the mapped file is not the one asked for (format, length, checksum,
 * names, section bounds), or NULL; *h gets its header. */
const char *hw_shared_check_header(const uint8 *base, size_t len, int32 model_id, HwServedAt at, uint64 kh,
								   uint64 vh, HwSharedFileHeader *h);

#endif
