/*
 * h2hpack.h - what an HTTP/2 header block says, of the fields the
 * verdicts read, decoded by libnghttp2's HPACK inflater.
 *
 * The frame walker (h2walk.h) hands over each header block's fragments as
 * they come; one decoder per direction of a connection takes them, since
 * HPACK's dynamic table is the sending side's and each direction has its
 * own.  Every block of its direction must go through it, those whose
 * fields nobody wants too (a server push's promise, trailers), or its
 * table no longer matches the sender's.
 *
 * Read from a response: :status, grpc-status (in trailers, or in a
 * trailers-only response's one block), content-type application/grpc,
 * Retry-After (for 429 and 503), X-Cache holding HIT and an Age above 0
 * (cache hits); from a request: :path (for exclude=).  Names arrive in
 * lower case, as HTTP/2 requires.
 *
 * The decoder breaks for good when the library says the block cannot be
 * decoded (bytes that are not HPACK, a field longer than the library's
 * 64 KiB limit, a dynamic table beyond AGILE_HPACK_TABLE_MAX): the block
 * is unreadable and so is every later one of its direction, since its
 * table is lost.  The walker keeps its place regardless, so streams are
 * still counted and timed; only the verdicts stop.
 *
 * The library is loaded at run time (nghttp2_load.c); the decoder holds a
 * pointer to the library's inflater, so it lives in the process's own
 * memory, never in the shared state file.
 */
#ifndef AGILE_PRELOAD_H2HPACK_H
#define AGILE_PRELOAD_H2HPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nghttp2_load.h"

/* The most of a dynamic table a decoder keeps, whatever the peer allows
 * (SETTINGS_HEADER_TABLE_SIZE): 64 KiB, sixteen times HTTP/2's default
 * of 4 KiB, which curl, nghttp2, grpc-core and Go keep. */
#define AGILE_HPACK_TABLE_MAX 65536

/* What one header block said. */
struct agile_h2_fields {
	int16_t status;          /* :status, 0 none (or not three digits) */
	int16_t grpc_status;     /* grpc-status, -1 none (or not a number) */
	uint8_t grpc;            /* content-type is application/grpc[+...] */
	uint8_t cache_hit;       /* X-Cache holds HIT, or Age is above 0 */
	uint8_t retry_after_len; /* 0: none, or too long to be a Retry-After */
	char retry_after[40];    /* its value, not NUL-terminated */
	uint8_t path_cut;        /* :path was longer than path[] */
	uint16_t path_len;       /* bytes of path[] */
	char path[256];          /* :path, not NUL-terminated */
};

/* Forget what a block said, for the next one. */
void agile__h2_fields_clear(struct agile_h2_fields *out);

/* One decoded field, name[0, name_len) and value[0, value_len): note it in
 * *out if it is one of the fields above.  Pure. */
void agile__h2_field(struct agile_h2_fields *out, const uint8_t *name,
                     size_t name_len, const uint8_t *value,
                     size_t value_len);

/* A decoder's state. */
enum agile_hpack_state {
	AGILE_HPACK_NONE = 0, /* no inflater: not opened, or no library */
	AGILE_HPACK_READY,    /* between blocks */
	AGILE_HPACK_IN_BLOCK, /* a block's fragments are coming */
	AGILE_HPACK_BROKEN    /* a block could not be decoded: no more */
};

/* One direction's decoder. */
struct agile_hpack {
	const struct agile_nghttp2 *lib; /* the library's functions */
	void *inflater;           /* nghttp2_hd_inflater *, NULL none */
	uint8_t state;            /* enum agile_hpack_state */
	uint32_t table_max;       /* the table size the inflater allows */
	uint32_t want_max;        /* the largest the peer allowed since */
	struct agile_h2_fields fields; /* the block being decoded */
};

/* Open a decoder with the library's functions `lib` (agile__nghttp2();
 * NULL when it could not be loaded).  Returns 0, -ENOENT without a
 * library, -ENOMEM when it cannot make an inflater; on failure the
 * decoder stays AGILE_HPACK_NONE and every call below does nothing. */
int agile__hpack_open(struct agile_hpack *h, const struct agile_nghttp2 *lib);

/* Free the inflater; the decoder is AGILE_HPACK_NONE after. */
void agile__hpack_close(struct agile_hpack *h);

/* The receiver of this direction's blocks allowed their sender a dynamic
 * table of `size` bytes (SETTINGS_HEADER_TABLE_SIZE, from the walker's
 * TABLE_SIZE event of the other direction).  The decoder only ever grows
 * its allowance, up to AGILE_HPACK_TABLE_MAX, between blocks: a sender
 * that shrinks its table says so in its next block, which the library
 * reads. */
void agile__hpack_table_size(struct agile_hpack *h, uint32_t size);

/* The next fragment of the current block (the walker's FRAGMENT). */
void agile__hpack_fragment(struct agile_hpack *h, const uint8_t *p, size_t n);

/* The block ended (the walker's HEADERS_END): what it said, or NULL when
 * it could not be read (no decoder, or broken, now or before). */
const struct agile_h2_fields *agile__hpack_end(struct agile_hpack *h);

#endif /* AGILE_PRELOAD_H2HPACK_H */
