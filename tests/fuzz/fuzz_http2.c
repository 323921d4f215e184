/*
 * fuzz_http2.c - libFuzzer harness for the HTTP/2 frame walker
 * (src/common/h2walk.c) and the HPACK decoder behind it
 * (src/common/h2hpack.c, on libnghttp2's inflater), which read the
 * bytes of every HTTP/2 connection to a proto=http or proto=grpc
 * destination, both ways.
 *
 * The input is a first byte, then a script of calls:
 *     first   bit 0: the program is the server (AGILE_H2_SERVER), else
 *             the client; bit 1: decode the header blocks with HPACK
 *     op      1 byte: bit 0 the direction (0 sent, 1 received); bits 1-3
 *             the number of iovecs less one; bit 4: plan the call first
 *             (agile__h2_plan, as a send is planned); bits 5-7 how much
 *             of the bytes the call moved, in eighths (0: all of them)
 *     length  2 bytes, big-endian (cut to what the input has left)
 *     bytes   that many
 *     splits  one byte per iovec boundary: where it falls, modulo
 *             length + 1 (so iovecs may be empty)
 * Every iovec is its own allocation of exactly its size, so a read past
 * one is caught by AddressSanitizer.  The seeds in corpus/http2/ are the
 * exchanges of tests/vectors/http2/ (nghttp and h2load against nghttpd and
 * Python's h2), whole and cut, and frames with bogus lengths.
 *
 * Besides the sanitizers' own checks, the harness aborts when:
 *   - an event is not one h2walk.h defines, or comes where it cannot:
 *     STREAM_OPEN on the server's flow, or with an even id, or an id not
 *     above the last; a frame start outside the bytes walked; an empty
 *     fragment or one outside the call's iovecs; any event after OFF;
 *   - a call walks more than its bytes, or takes more steps than bytes;
 *   - planning a call moves the flow, counts other than the walk's
 *     openings, first stream or table sizes, or cuts where the bytes up to the cut open other than
 *     exactly one stream;
 *   - the end of the current frame (agile__h2_frame_rest) lies beyond the
 *     call's bytes, is 0 other than between frames, or a walk up to it
 *     does not end between frames;
 *   - the decoder leaves a state h2hpack.h defines, comes back from
 *     BROKEN, or says more than its fields hold;
 *   - the differential: each direction's bytes, fed at the end to a new
 *     flow in one call, must give the same events in the same order, with
 *     the same frame starts and the same header block bytes: h2walk.h
 *     promises its place across any pieces.
 *
 * tests/fuzz/replay.c turns this file into a program that replays the
 * committed corpus in every `make check`.
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "h2hpack.h"
#include "h2walk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define IOV_MAX_FUZZ 8
#define EVENTS_MAX 1024

/* What one event said, as the differential compares it: fragments are
 * folded into a hash of the block's bytes, reported at its end. */
struct said {
	uint8_t type, flags;
	uint32_t stream, value;
	int64_t frame_at; /* STREAM_OPEN: from the direction's first byte */
	uint64_t block;   /* HEADERS_END: the hash of the block's bytes */
};

/* One direction's record. */
struct way {
	struct said said[EVENTS_MAX];
	int count;
	bool full;      /* more events than said[] holds: not compared */
	uint64_t block; /* the hash of the open block's bytes so far */
	uint64_t at;    /* bytes walked */
	bool off;
	uint32_t last_open;
	uint8_t *bytes; /* every byte walked, for the differential */
	size_t len, cap;
};

static uint64_t fold(uint64_t h, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

#define HASH_START 0xcbf29ce484222325ull

static void record(struct way *w, const struct agile_h2_event *ev,
                   int64_t at)
{
	struct said *s;

	if (ev->type == AGILE_H2_EV_NONE)
		return;
	if (ev->type == AGILE_H2_EV_FRAGMENT) {
		w->block = fold(w->block, ev->fragment, ev->fragment_len);
		return;
	}
	if (w->count == EVENTS_MAX) {
		w->full = true;
		return;
	}
	s = &w->said[w->count++];
	memset(s, 0, sizeof(*s));
	s->type = ev->type;
	s->flags = ev->flags;
	s->stream = ev->stream;
	s->value = ev->value;
	if (ev->type == AGILE_H2_EV_STREAM_OPEN)
		s->frame_at = at + ev->frame_at;
	if (ev->type == AGILE_H2_EV_HEADERS_END) {
		s->block = w->block;
		w->block = HASH_START;
	}
}

/* The invariants of one event of flow f, `walked` bytes into the call. */
static void check_event(const struct agile_h2_flow *f, struct way *w,
                        const struct agile_h2_event *ev, size_t walked)
{
	if (ev->type > AGILE_H2_EV_OFF)
		abort();
	if (ev->type != AGILE_H2_EV_NONE && w->off)
		abort();
	switch (ev->type) {
	case AGILE_H2_EV_OFF:
		w->off = true;
		if (agile__h2_stage(f) != AGILE_H2_OFF)
			abort();
		break;
	case AGILE_H2_EV_STREAM_OPEN:
		if (!f->from_client || ev->stream % 2 == 0 ||
		    ev->stream <= w->last_open || ev->stream > 0x7fffffff)
			abort();
		w->last_open = ev->stream;
		/* Its header ends in this call's bytes, and began at most
		 * eight bytes before them. */
		if (ev->frame_at < -8 || ev->frame_at + 9 > (int64_t)walked)
			abort();
		break;
	case AGILE_H2_EV_FRAGMENT:
		if (ev->fragment_len == 0 || ev->fragment == NULL)
			abort();
		break;
	case AGILE_H2_EV_HEADERS_END:
	case AGILE_H2_EV_END_STREAM:
	case AGILE_H2_EV_RST_STREAM:
		if (ev->stream == 0)
			abort();
		break;
	default:
		break;
	}
}

static void check_decoder(const struct agile_hpack *h, uint8_t before)
{
	const struct agile_h2_fields *f = &h->fields;

	if (h->state > AGILE_HPACK_BROKEN ||
	    (before == AGILE_HPACK_BROKEN && h->state != AGILE_HPACK_BROKEN) ||
	    (before == AGILE_HPACK_NONE && h->state != AGILE_HPACK_NONE))
		abort();
	if ((h->state == AGILE_HPACK_BROKEN) != (h->inflater == NULL &&
	                                         h->lib != NULL))
		abort();
	if (f->retry_after_len >= sizeof(f->retry_after) ||
	    f->path_len > sizeof(f->path) || (f->path_cut && f->path_len !=
	                                      sizeof(f->path)) ||
	    f->grpc_status < -1 || f->grpc_status > 999 ||
	    (f->status != 0 && (f->status < 100 || f->status > 999)) ||
	    h->table_max > AGILE_HPACK_TABLE_MAX || h->want_max <
	    h->table_max)
		abort();
}

/* One call's iovecs, each in an allocation of its own. */
struct call {
	struct iovec iov[IOV_MAX_FUZZ];
	int count;
	size_t moved; /* bytes the call moved, the first of them */
};

static void call_free(struct call *c)
{
	for (int i = 0; i < c->count; i++)
		free(c->iov[i].iov_base);
}

/* Read one operation's bytes and splits into c; false at the end. */
static bool parse_call(const uint8_t **data, size_t *size, uint8_t op,
                       struct call *c)
{
	size_t len, cut[IOV_MAX_FUZZ + 1];
	const uint8_t *bytes;
	int count = 1 + (op >> 1 & 7);
	unsigned eighths = op >> 5;

	if (*size < 2)
		return false;
	len = (size_t)(*data)[0] << 8 | (*data)[1];
	*data += 2;
	*size -= 2;
	if (len > *size)
		len = *size;
	bytes = *data;
	*data += len;
	*size -= len;
	cut[0] = 0;
	cut[count] = len;
	for (int i = 1; i < count; i++) {
		size_t at = 0;
		int j = i;

		if (*size > 0) {
			at = **data % (len + 1);
			(*data)++;
			(*size)--;
		}
		while (j > 1 && cut[j - 1] > at) {
			cut[j] = cut[j - 1];
			j--;
		}
		cut[j] = at;
	}
	c->count = count;
	c->moved = eighths == 0 ? len : len * eighths / 8;
	for (int i = 0; i < count; i++) {
		size_t n = cut[i + 1] - cut[i];

		c->iov[i].iov_base = malloc(n > 0 ? n : 1);
		if (c->iov[i].iov_base == NULL)
			abort();
		memcpy(c->iov[i].iov_base, bytes + cut[i], n);
		c->iov[i].iov_len = n;
	}
	return true;
}

static void keep_bytes(struct way *w, const struct call *c)
{
	size_t left = c->moved;

	if (w->len + left > w->cap) {
		size_t cap = (w->len + left) * 2 + 64;
		uint8_t *bigger = realloc(w->bytes, cap);

		if (bigger == NULL)
			abort();
		w->bytes = bigger;
		w->cap = cap;
	}
	for (int i = 0; i < c->count && left > 0; i++) {
		size_t n = c->iov[i].iov_len < left ? c->iov[i].iov_len : left;

		memcpy(w->bytes + w->len, c->iov[i].iov_base, n);
		w->len += n;
		left -= n;
	}
}

/* Is p inside one of the call's iovecs, with n bytes after it? */
static bool inside(const struct call *c, const uint8_t *p, size_t n)
{
	for (int i = 0; i < c->count; i++) {
		const uint8_t *b = c->iov[i].iov_base;

		if (p >= b && p + n <= b + c->iov[i].iov_len)
			return true;
	}
	return false;
}

/* Plan the call on f, then check the plan against the walk of a copy. */
static void check_plan(const struct agile_h2_flow *f, const struct call *c)
{
	struct agile_h2_flow before, copy;
	struct agile_h2_plan plan;
	struct agile_h2_cursor cur;
	struct agile_h2_event ev;
	uint32_t opens = 0, table_size = 0, first = 0;
	bool quiet = true;

	memcpy(&before, f, sizeof(before));
	agile__h2_plan(f, c->iov, c->count, c->moved, &plan);
	if (memcmp(&before, f, sizeof(before)) != 0 || plan.cut > c->moved)
		abort();
	/* Walked with the events the plan asks for: header blocks skipped
	 * as the plan skips them (a flow that reports FRAGMENT is mid-block
	 * in another part after a cut inside one). */
	memcpy(&copy, f, sizeof(copy));
	copy.report = AGILE_H2_REPORT(AGILE_H2_EV_STREAM_OPEN) |
	              AGILE_H2_REPORT(AGILE_H2_EV_TABLE_SIZE) |
	              AGILE_H2_REPORT(AGILE_H2_EV_RST_STREAM);
	agile__h2_cursor_init(&cur, c->iov, c->count, c->moved);
	do {
		agile__h2_next(&copy, &cur, &ev);
		if (ev.type == AGILE_H2_EV_STREAM_OPEN &&
		    (opens >= AGILE_H2_PLAN_STREAMS ||
		     plan.streams[opens] != ev.stream))
			quiet = false;
		opens += ev.type == AGILE_H2_EV_STREAM_OPEN;
		if (ev.type == AGILE_H2_EV_STREAM_OPEN && first == 0)
			first = ev.stream;
		if (ev.type == AGILE_H2_EV_TABLE_SIZE && ev.value > table_size)
			table_size = ev.value;
		if (ev.type == AGILE_H2_EV_TABLE_SIZE ||
		    ev.type == AGILE_H2_EV_RST_STREAM ||
		    ev.type == AGILE_H2_EV_OFF)
			quiet = false;
	} while (ev.type != AGILE_H2_EV_NONE && ev.type != AGILE_H2_EV_OFF);
	/* The plan's flow ends where the walk of its bytes ends, and it is
	 * quiet exactly when their events are its streams' opens (h2conn.c
	 * takes both instead of walking a send again). */
	plan.after.report = copy.report;
	if (opens != plan.opens || table_size != plan.table_size ||
	    first != plan.stream ||
	    (plan.opens < 2) != (plan.cut == c->moved) ||
	    memcmp(&plan.after, &copy, sizeof(copy)) != 0 ||
	    plan.quiet != quiet)
		abort();
	if (plan.opens >= 2) {
		/* The bytes up to the cut open the first stream alone. */
		if (plan.cut == 0)
			abort();
		memcpy(&copy, f, sizeof(copy));
		agile__h2_cursor_init(&cur, c->iov, c->count, plan.cut);
		opens = 0;
		do {
			agile__h2_next(&copy, &cur, &ev);
			opens += ev.type == AGILE_H2_EV_STREAM_OPEN;
		} while (ev.type != AGILE_H2_EV_NONE &&
		         ev.type != AGILE_H2_EV_OFF);
		if (opens != 1)
			abort();
	}
}

/* Where the frame the flow is in ends (agile__h2_frame_rest, as a
 * listener's send is cut before an answer of the preload's goes in): no
 * further than the call's bytes, 0 exactly between frames, and a walk of a
 * copy over the bytes up to a cut before the end leaves it between frames
 * (or given up). */
static void check_frame_rest(const struct agile_h2_flow *f,
                             const struct call *c)
{
	struct agile_h2_flow copy;
	struct agile_h2_cursor cur;
	struct agile_h2_event ev;
	size_t rest = agile__h2_frame_rest(f, c->iov, c->count, c->moved);

	if (rest > c->moved || (rest == 0) != (agile__h2_between_frames(f) ||
	                                       c->moved == 0))
		abort();
	if (rest == 0 || rest == c->moved)
		return;
	memcpy(&copy, f, sizeof(copy));
	agile__h2_cursor_init(&cur, c->iov, c->count, rest);
	do
		agile__h2_next(&copy, &cur, &ev);
	while (ev.type != AGILE_H2_EV_NONE && ev.type != AGILE_H2_EV_OFF);
	if (agile__h2_stage(&copy) != AGILE_H2_OFF &&
	    !agile__h2_between_frames(&copy))
		abort();
}

/* Feed each direction's bytes to a new flow in one call: the same events. */
static void check_whole(const struct way *w, enum agile_h2_role role,
                        int dir)
{
	struct agile_h2 fresh;
	struct agile_h2_flow *f;
	struct way *again = calloc(1, sizeof(*again));
	struct agile_h2_event ev;
	size_t i = 0;

	if (again == NULL)
		abort();
	agile__h2_reset(&fresh, role);
	f = dir == 0 ? &fresh.out : &fresh.in;
	again->block = HASH_START;
	static const uint8_t nothing[1];
	const uint8_t *bytes = w->bytes != NULL ? w->bytes : nothing;

	do {
		size_t used = agile__h2_walk(f, bytes + i, w->len - i, &ev);

		if (used > w->len - i)
			abort();
		record(again, &ev, (int64_t)i);
		i += used;
	} while (ev.type != AGILE_H2_EV_NONE);
	if (!w->full && !again->full &&
	    (again->count != w->count ||
	     memcmp(again->said, w->said, sizeof(w->said[0]) *
	                                  (size_t)w->count) != 0))
		abort();
	free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct agile_h2 walker;
	struct agile_hpack dec[2]; /* 0: the blocks sent, 1: those received */
	struct way *way[2];
	enum agile_h2_role role;

	if (size < 1)
		return 0;
	role = data[0] & 1 ? AGILE_H2_SERVER : AGILE_H2_CLIENT;
	agile__h2_reset(&walker, role);
	memset(dec, 0, sizeof(dec));
	if (data[0] & 2) {
		(void)agile__hpack_open(&dec[0], agile__nghttp2());
		(void)agile__hpack_open(&dec[1], agile__nghttp2());
	}
	data++;
	size--;
	for (int d = 0; d < 2; d++) {
		way[d] = calloc(1, sizeof(*way[d]));
		if (way[d] == NULL)
			abort();
		way[d]->block = HASH_START;
	}
	while (size > 0) {
		uint8_t op = *data++;
		int dir = op & 1;
		struct agile_h2_flow *f = dir == 0 ? &walker.out : &walker.in;
		struct agile_h2_cursor cur;
		struct agile_h2_event ev;
		struct call c;
		size_t steps = 0;

		size--;
		if (!parse_call(&data, &size, op, &c))
			break;
		if (op & 0x10)
			check_plan(f, &c);
		check_frame_rest(f, &c);
		agile__h2_cursor_init(&cur, c.iov, c.count, c.moved);
		do {
			uint8_t states[2] = { dec[0].state, dec[1].state };
			size_t before = cur.done;

			agile__h2_next(f, &cur, &ev);
			if (cur.done < before || cur.done > c.moved ||
			    ++steps > c.moved + 2 * (size_t)EVENTS_MAX)
				abort();
			check_event(f, way[dir], &ev, cur.done);
			if (ev.type == AGILE_H2_EV_FRAGMENT &&
			    !inside(&c, ev.fragment, ev.fragment_len))
				abort();
			record(way[dir], &ev, (int64_t)way[dir]->at);
			if (ev.type == AGILE_H2_EV_FRAGMENT)
				agile__hpack_fragment(&dec[dir], ev.fragment,
				                      ev.fragment_len);
			else if (ev.type == AGILE_H2_EV_HEADERS_END)
				(void)agile__hpack_end(&dec[dir]);
			else if (ev.type == AGILE_H2_EV_TABLE_SIZE)
				agile__hpack_table_size(&dec[1 - dir],
				                        ev.value);
			check_decoder(&dec[0], states[0]);
			check_decoder(&dec[1], states[1]);
		} while (ev.type != AGILE_H2_EV_NONE);
		if (cur.done != c.moved)
			abort();
		way[dir]->at += c.moved;
		keep_bytes(way[dir], &c);
		call_free(&c);
	}
	for (int d = 0; d < 2; d++) {
		check_whole(way[d], role, d);
		free(way[d]->bytes);
		free(way[d]);
		agile__hpack_close(&dec[d]);
	}
	return 0;
}
