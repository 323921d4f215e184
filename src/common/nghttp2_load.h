/*
 * nghttp2_load.h - libnghttp2's HPACK inflater, loaded at run time.
 *
 * The preload is loaded into every process a program starts and must not
 * pull a library into all of them for the few that speak HTTP/2 to a
 * proto=http or proto=grpc destination; so it does not link libnghttp2,
 * and nghttp2_load.c opens it (by its soname, libnghttp2.so.14, whose ABI
 * has been stable since 2015) the first time a decoder is wanted.  Debian
 * installs it with curl.  The declarations below are the library's own
 * (nghttp2.h), restated so that building the preload needs no
 * libnghttp2-dev: the inflater is an opaque pointer, and nghttp2_nv's
 * layout is part of the ABI.
 */
#ifndef AGILE_PRELOAD_NGHTTP2_LOAD_H
#define AGILE_PRELOAD_NGHTTP2_LOAD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define AGILE_NGHTTP2_SONAME "libnghttp2.so.14"

/* nghttp2_nv. */
struct agile_nghttp2_nv {
	uint8_t *name;
	uint8_t *value;
	size_t namelen;
	size_t valuelen;
	uint8_t flags;
};

/* nghttp2_hd_inflate_flag. */
#define AGILE_NGHTTP2_INFLATE_FINAL 0x01
#define AGILE_NGHTTP2_INFLATE_EMIT 0x02

/* The functions of the inflater, nghttp2_hd_inflate_*. */
struct agile_nghttp2 {
	int (*inflate_new)(void **inflater);
	void (*inflate_del)(void *inflater);
	int (*inflate_change_table_size)(void *inflater, size_t max);
	ssize_t (*inflate_hd2)(void *inflater, struct agile_nghttp2_nv *nv,
	                       int *flags, const uint8_t *in, size_t in_len,
	                       int in_final);
	int (*inflate_end_headers)(void *inflater);
};

/* The library's functions, loaded the first time this is called; NULL
 * when it cannot be loaded (then, every time).  dlopen reads files through
 * the preload's hooks: the caller holds the re-entrancy guard
 * (agile__enter, preload/symbols.h) around the first call. */
const struct agile_nghttp2 *agile__nghttp2(void);

/* Load the library named `soname` into *lib: 0, or -ENOENT when it or one
 * of the functions is missing.  agile__nghttp2() calls it once. */
int agile__nghttp2_bind(const char *soname, struct agile_nghttp2 *lib);

#endif /* AGILE_PRELOAD_NGHTTP2_LOAD_H */
