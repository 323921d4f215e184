/*
 * h2hpack.c - the fields of HTTP/2 header blocks the verdicts read, and
 * the decoder that feeds each block's fragments to libnghttp2's inflater
 * (see h2hpack.h).
 *
 * The inflater is fed each fragment as the walker hands it over, with
 * in_final only at the block's end (an empty last piece): the library
 * keeps a field cut between fragments in its own buffers, as it does for
 * nghttp2_session, so nothing is gathered here.  A field is emitted once
 * whole and read at once: only the fields h2hpack.h names are kept, cut to
 * the sizes of struct agile_h2_fields.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

#include "h2hpack.h"

void agile__h2_fields_clear(struct agile_h2_fields *out)
{
	out->status = 0;
	out->grpc_status = -1;
	out->grpc = 0;
	out->cache_hit = 0;
	out->retry_after_len = 0;
	out->path_cut = 0;
	out->path_len = 0;
}

static bool named(const uint8_t *name, size_t len, const char *want)
{
	return len == strlen(want) && memcmp(name, want, len) == 0;
}

/* The number in the v_len digits at v, or -1 (none, more than `most`, or
 * not all digits). */
static long number(const uint8_t *v, size_t v_len, size_t most)
{
	long x = 0;

	if (v_len == 0 || v_len > most)
		return -1;
	for (size_t i = 0; i < v_len; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		x = x * 10 + (v[i] - '0');
	}
	return x;
}

static bool holds_hit(const uint8_t *v, size_t v_len)
{
	for (size_t i = 0; i + 3 <= v_len; i++)
		if (strncasecmp((const char *)v + i, "HIT", 3) == 0)
			return true;
	return false;
}

void agile__h2_field(struct agile_h2_fields *out, const uint8_t *name,
                     size_t name_len, const uint8_t *value,
                     size_t value_len)
{
	long x;

	if (name_len == 0)
		return;
	if (name[0] == ':') {
		if (named(name, name_len, ":status")) {
			x = value_len == 3 ? number(value, 3, 3) : -1;
			out->status = (int16_t)(x >= 100 ? x : 0);
		} else if (named(name, name_len, ":path")) {
			size_t n = value_len < sizeof(out->path)
			           ? value_len : sizeof(out->path);

			memcpy(out->path, value, n);
			out->path_len = (uint16_t)n;
			out->path_cut = value_len > sizeof(out->path);
		}
	} else if (named(name, name_len, "grpc-status")) {
		/* gRPC's codes are 0 to 16; three digits leave room. */
		x = number(value, value_len, 3);
		out->grpc_status = (int16_t)x;
	} else if (named(name, name_len, "content-type")) {
		out->grpc = value_len >= 16 &&
		            memcmp(value, "application/grpc", 16) == 0 &&
		            (value_len == 16 || value[16] == '+' ||
		             value[16] == ';');
	} else if (named(name, name_len, "retry-after")) {
		if (value_len < sizeof(out->retry_after)) {
			memcpy(out->retry_after, value, value_len);
			out->retry_after_len = (uint8_t)value_len;
		} else {
			out->retry_after_len = 0;
		}
	} else if (named(name, name_len, "x-cache")) {
		if (holds_hit(value, value_len))
			out->cache_hit = 1;
	} else if (named(name, name_len, "age")) {
		/* As on HTTP/1.1 (http.c): a whole number of seconds. */
		if (number(value, value_len, 9) > 0)
			out->cache_hit = 1;
	}
}

int agile__hpack_open(struct agile_hpack *h, const struct agile_nghttp2 *lib)
{
	memset(h, 0, sizeof(*h));
	if (lib == NULL)
		return -ENOENT;
	if (lib->inflate_new(&h->inflater) != 0) {
		h->inflater = NULL;
		return -ENOMEM;
	}
	h->lib = lib;
	h->state = AGILE_HPACK_READY;
	/* HTTP/2's initial SETTINGS_HEADER_TABLE_SIZE, the inflater's own. */
	h->table_max = 4096;
	h->want_max = 4096;
	agile__h2_fields_clear(&h->fields);
	return 0;
}

void agile__hpack_close(struct agile_hpack *h)
{
	if (h->inflater != NULL)
		h->lib->inflate_del(h->inflater);
	memset(h, 0, sizeof(*h));
}

/* The block could not be decoded: its table is lost for good. */
static void broken(struct agile_hpack *h)
{
	h->lib->inflate_del(h->inflater);
	h->inflater = NULL;
	h->state = AGILE_HPACK_BROKEN;
}

/* Between blocks: let the inflater accept the largest table allowed. */
static void grow_table(struct agile_hpack *h)
{
	if (h->want_max <= h->table_max)
		return;
	if (h->lib->inflate_change_table_size(h->inflater, h->want_max) != 0) {
		broken(h);
		return;
	}
	h->table_max = h->want_max;
}

void agile__hpack_table_size(struct agile_hpack *h, uint32_t size)
{
	if (h->state != AGILE_HPACK_READY && h->state != AGILE_HPACK_IN_BLOCK)
		return;
	if (size > AGILE_HPACK_TABLE_MAX)
		size = AGILE_HPACK_TABLE_MAX;
	if (size > h->want_max)
		h->want_max = size;
	if (h->state == AGILE_HPACK_READY)
		grow_table(h);
}

/* Feed in[0, in_len) to the inflater, noting each field it emits; with
 * last, the block ends there.  False when the block cannot be decoded. */
static bool inflate(struct agile_hpack *h, const uint8_t *in, size_t in_len,
                    bool last)
{
	for (;;) {
		struct agile_nghttp2_nv nv;
		int flags = 0;
		ssize_t used = h->lib->inflate_hd2(h->inflater, &nv, &flags, in,
		                                   in_len, last);

		if (used < 0 || (size_t)used > in_len)
			return false;
		in += used;
		in_len -= (size_t)used;
		if (flags & AGILE_NGHTTP2_INFLATE_EMIT)
			agile__h2_field(&h->fields, nv.name, nv.namelen,
			                nv.value, nv.valuelen);
		if (flags & AGILE_NGHTTP2_INFLATE_FINAL) {
			h->lib->inflate_end_headers(h->inflater);
			return in_len == 0;
		}
		if (!(flags & AGILE_NGHTTP2_INFLATE_EMIT) && in_len == 0)
			return !last; /* the last piece must end the block */
	}
}

/* A block's first piece (or its end, when it had none). */
static void begin_block(struct agile_hpack *h)
{
	grow_table(h);
	if (h->state == AGILE_HPACK_BROKEN)
		return;
	agile__h2_fields_clear(&h->fields);
	h->state = AGILE_HPACK_IN_BLOCK;
}

void agile__hpack_fragment(struct agile_hpack *h, const uint8_t *p, size_t n)
{
	if (h->state == AGILE_HPACK_READY)
		begin_block(h);
	if (h->state != AGILE_HPACK_IN_BLOCK || n == 0)
		return;
	if (!inflate(h, p, n, false))
		broken(h);
}

const struct agile_h2_fields *agile__hpack_end(struct agile_hpack *h)
{
	/* An empty last piece, from somewhere: the library adds its length
	 * to the pointer. */
	static const uint8_t nothing[1];

	if (h->state == AGILE_HPACK_READY)
		begin_block(h);
	if (h->state != AGILE_HPACK_IN_BLOCK)
		return NULL;
	if (!inflate(h, nothing, 0, true)) {
		broken(h);
		return NULL;
	}
	h->state = AGILE_HPACK_READY;
	return &h->fields;
}
