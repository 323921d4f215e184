/*
 * check_h2walk.c - the HTTP/2 frame walker (src/common/h2walk.c) and the
 * HPACK decoder behind it (src/common/h2hpack.c, libnghttp2's inflater
 * loaded by src/common/nghttp2_load.c), on real exchanges and built ones.
 *
 * The real exchanges are in tests/vectors/http2/, recorded at 127.0.0.1 by
 * record.py between nghttp2's clients (nghttp, h2load) and two servers,
 * nghttpd and h2server.py (Python's h2), one piece per read: ten streams
 * in one write (h2load -m 10), nghttp's PRIORITY frames and priority
 * flags, 429 and 503 with Retry-After, 103 then 200, cache hits, padded
 * DATA, RST_STREAM, GOAWAY, gRPC with trailers and trailers-only, and a
 * client that allows the server no dynamic table (nghttp -c 0, so the
 * server's encoder shrinks its table in the middle of the connection).
 * Each is walked as recorded, cut at every byte boundary, a byte at a
 * time and through iovec arrays, and must say the same each time.
 *
 * The built ones use libnghttp2's own HPACK encoder for their header
 * blocks: CONTINUATION frames cutting a block mid-field, padding with
 * priority, dynamic table size updates in the middle of a connection
 * within and beyond what the receiver allowed, frames that no HTTP/2 peer
 * sends, the spacing plan of a send that opens several streams, and the
 * decoder without its library.
 */
#include "config.h"

#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h2hpack.h"
#include "h2walk.h"

#define PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define LOG_MAX 65536

/* --- a connection walked both ways, as a log of what it said ------------ */

struct session {
	struct agile_h2 w;
	struct agile_hpack dec[2]; /* 0: the client's blocks, 1: the server's */
	uint64_t at[2];            /* bytes walked each way */
	char log[LOG_MAX];
	size_t log_len;
};

static void say(struct session *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void say(struct session *s, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(s->log + s->log_len, sizeof(s->log) - s->log_len, fmt, ap);
	va_end(ap);
	ck_assert_int_ge(n, 0);
	ck_assert_uint_lt(s->log_len + (size_t)n, sizeof(s->log));
	s->log_len += (size_t)n;
}

static void session_init(struct session *s, bool hpack)
{
	memset(s, 0, sizeof(*s));
	agile__h2_reset(&s->w, AGILE_H2_CLIENT);
	if (hpack) {
		ck_assert_ptr_nonnull(agile__nghttp2());
		ck_assert_int_eq(agile__hpack_open(&s->dec[0], agile__nghttp2()), 0);
		ck_assert_int_eq(agile__hpack_open(&s->dec[1], agile__nghttp2()), 0);
	}
}

static void session_free(struct session *s)
{
	agile__hpack_close(&s->dec[0]);
	agile__hpack_close(&s->dec[1]);
}

static void say_fields(struct session *s, const struct agile_h2_fields *f)
{
	if (f == NULL) {
		say(s, " unreadable");
		return;
	}
	if (f->status != 0)
		say(s, " status=%d", f->status);
	if (f->grpc)
		say(s, " grpc");
	if (f->grpc_status >= 0)
		say(s, " grpc-status=%d", f->grpc_status);
	if (f->retry_after_len > 0)
		say(s, " retry-after=%.*s", f->retry_after_len, f->retry_after);
	if (f->cache_hit)
		say(s, " cache-hit");
	if (f->path_len > 0)
		say(s, " path=%.*s%s", f->path_len, f->path,
		    f->path_cut ? "..." : "");
}

/* Handle one event of direction `way` (0: the client's bytes, sent; 1:
 * the server's, received), at `base` bytes into that direction. */
static void handle(struct session *s, int way, uint64_t base,
                   const struct agile_h2_event *ev)
{
	char who = way == 0 ? 'C' : 'S';

	switch (ev->type) {
	case AGILE_H2_EV_NONE:
		break;
	case AGILE_H2_EV_STREAM_OPEN:
		say(s, "%c open %u at %lld\n", who, ev->stream,
		    (long long)base + (long long)ev->frame_at);
		break;
	case AGILE_H2_EV_FRAGMENT:
		ck_assert_uint_gt(ev->fragment_len, 0);
		agile__hpack_fragment(&s->dec[way], ev->fragment,
		                      ev->fragment_len);
		break;
	case AGILE_H2_EV_HEADERS_END:
		say(s, "%c %s %u", who,
		    ev->flags & AGILE_H2_PUSH ? "promise" : "headers",
		    ev->stream);
		if (ev->flags & AGILE_H2_END_STREAM)
			say(s, " end");
		if (s->dec[way].state != AGILE_HPACK_NONE ||
		    s->dec[way].lib != NULL)
			say_fields(s, agile__hpack_end(&s->dec[way]));
		say(s, "\n");
		break;
	case AGILE_H2_EV_END_STREAM:
		say(s, "%c end %u\n", who, ev->stream);
		break;
	case AGILE_H2_EV_RST_STREAM:
		say(s, "%c rst %u %u\n", who, ev->stream, ev->value);
		break;
	case AGILE_H2_EV_GOAWAY:
		say(s, "%c goaway %u %u\n", who, ev->stream, ev->value);
		break;
	case AGILE_H2_EV_TABLE_SIZE:
		say(s, "%c table %u\n", who, ev->value);
		/* The sender's decoder limit is the other side's encoder's. */
		agile__hpack_table_size(&s->dec[1 - way], ev->value);
		break;
	case AGILE_H2_EV_OFF:
		say(s, "%c off\n", who);
		break;
	default:
		ck_abort_msg("event type %d", ev->type);
	}
}

static struct agile_h2_flow *flow_of(struct session *s, int way)
{
	return way == 0 ? &s->w.out : &s->w.in;
}

/* Walk n bytes of direction `way` in one call sequence. */
static void feed(struct session *s, int way, const uint8_t *p, size_t n)
{
	struct agile_h2_event ev;
	size_t i = 0;
	int calls = 0;

	do {
		size_t used = agile__h2_walk(flow_of(s, way), p + i, n - i, &ev);

		ck_assert_uint_le(used, n - i);
		if (ev.type == AGILE_H2_EV_FRAGMENT) {
			/* A slice of the caller's bytes, never a copy. */
			ck_assert(ev.fragment >= p + i &&
			          ev.fragment + ev.fragment_len <= p + i + used);
		}
		handle(s, way, s->at[way] + i, &ev);
		i += used;
		ck_assert_int_lt(++calls, 100000);
	} while (ev.type != AGILE_H2_EV_NONE);
	ck_assert_uint_eq(i, n);
	s->at[way] += n;
}

/* The same through a cursor over iov[0, count). */
static void feed_iov(struct session *s, int way, const struct iovec *iov,
                     int count, size_t len)
{
	struct agile_h2_cursor c;
	struct agile_h2_event ev;

	agile__h2_cursor_init(&c, iov, count, len);
	do {
		agile__h2_next(flow_of(s, way), &c, &ev);
		handle(s, way, s->at[way], &ev);
	} while (ev.type != AGILE_H2_EV_NONE);
	ck_assert_uint_eq(c.done, len);
	s->at[way] += len;
}

/* --- recorded exchanges ---------------------------------------------------- */

struct piece {
	int way;
	const uint8_t *p;
	size_t n;
};

struct vector {
	uint8_t *bytes;
	size_t size;
	struct piece piece[64];
	int count;
};

static void vector_load(struct vector *v, const char *name)
{
	const char *srcdir = getenv("AGILE_SRCDIR");
	char path[4096];
	FILE *f;
	long size;
	size_t i = 0;

	snprintf(path, sizeof(path), "%s/tests/vectors/http2/%s",
	         srcdir != NULL ? srcdir : "..", name);
	f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	size = ftell(f);
	ck_assert_int_gt(size, 0);
	rewind(f);
	v->bytes = malloc((size_t)size);
	ck_assert_ptr_nonnull(v->bytes);
	ck_assert_uint_eq(fread(v->bytes, 1, (size_t)size, f), (size_t)size);
	fclose(f);
	v->size = (size_t)size;
	v->count = 0;
	while (i < v->size) {
		struct piece *pc = &v->piece[v->count++];

		ck_assert_int_le(v->count, 64);
		ck_assert_uint_le(i + 5, v->size);
		ck_assert(v->bytes[i] == 'C' || v->bytes[i] == 'S');
		pc->way = v->bytes[i] == 'S';
		pc->n = (size_t)v->bytes[i + 1] << 24 |
		        (size_t)v->bytes[i + 2] << 16 |
		        (size_t)v->bytes[i + 3] << 8 | v->bytes[i + 4];
		pc->p = v->bytes + i + 5;
		i += 5 + pc->n;
		ck_assert_uint_le(i, v->size);
	}
}

/* The log of the vector walked piece by piece as recorded. */
static void walk_recorded(struct session *s, const struct vector *v)
{
	session_init(s, true);
	for (int i = 0; i < v->count; i++)
		feed(s, v->piece[i].way, v->piece[i].p, v->piece[i].n);
}

/* The same, each piece fed `step` bytes at a time, or (step 0) cut at
 * `cut` of piece `which`. */
static void walk_cut(struct session *s, const struct vector *v, int which,
                     size_t cut, size_t step)
{
	session_init(s, true);
	for (int i = 0; i < v->count; i++) {
		const struct piece *pc = &v->piece[i];

		if (step > 0) {
			for (size_t j = 0; j < pc->n; j += step)
				feed(s, pc->way, pc->p + j,
				     pc->n - j < step ? pc->n - j : step);
		} else if (i == which) {
			feed(s, pc->way, pc->p, cut);
			feed(s, pc->way, pc->p + cut, pc->n - cut);
		} else {
			feed(s, pc->way, pc->p, pc->n);
		}
	}
}

/* The same through iovec arrays: each piece cut into up to 5 iovecs of
 * sizes from a fixed sequence, some empty, each its own allocation. */
static void walk_iov(struct session *s, const struct vector *v,
                     unsigned seed)
{
	session_init(s, true);
	for (int i = 0; i < v->count; i++) {
		const struct piece *pc = &v->piece[i];
		struct iovec iov[5];
		size_t off = 0;
		int count = 0;

		while (count < 5) {
			size_t n = pc->n - off;

			seed = seed * 1103515245u + 12345u;
			if (count < 4)
				n = n == 0 ? 0 : (seed >> 16) % (n + 1);
			iov[count].iov_base = malloc(n > 0 ? n : 1);
			ck_assert_ptr_nonnull(iov[count].iov_base);
			memcpy(iov[count].iov_base, pc->p + off, n);
			iov[count].iov_len = n;
			off += n;
			count++;
		}
		feed_iov(s, pc->way, iov, count, pc->n);
		for (int k = 0; k < count; k++)
			free(iov[k].iov_base);
	}
}

/* Every way of cutting the vector says what the recorded pieces say. */
static void check_every_cut(const char *name)
{
	static struct session whole, cut;
	struct vector v;

	vector_load(&v, name);
	walk_recorded(&whole, &v);
	for (int i = 0; i < v.count; i++)
		for (size_t k = 0; k <= v.piece[i].n; k++) {
			walk_cut(&cut, &v, i, k, 0);
			ck_assert_msg(strcmp(whole.log, cut.log) == 0,
			              "%s: piece %d cut at %zu:\n%s\nnot\n%s",
			              name, i, k, cut.log, whole.log);
			session_free(&cut);
		}
	for (size_t step = 1; step <= 13; step += 4) {
		walk_cut(&cut, &v, -1, 0, step);
		ck_assert_msg(strcmp(whole.log, cut.log) == 0,
		              "%s: %zu bytes at a time:\n%s", name, step, cut.log);
		session_free(&cut);
	}
	for (unsigned seed = 1; seed <= 20; seed++) {
		walk_iov(&cut, &v, seed);
		ck_assert_msg(strcmp(whole.log, cut.log) == 0,
		              "%s: iovecs (seed %u):\n%s", name, seed, cut.log);
		session_free(&cut);
	}
	session_free(&whole);
	free(v.bytes);
}

static int count_lines(const char *log, const char *pattern)
{
	int n = 0;

	for (const char *p = log; (p = strstr(p, pattern)) != NULL; p++)
		n++;
	return n;
}

START_TEST(h2walk_nghttp_verdicts)
{
	static struct session s;
	struct vector v;

	vector_load(&v, "nghttp-verdicts.h2");
	walk_recorded(&s, &v);
	/* nghttp opens 8 streams in one write, after the preface, its
	 * SETTINGS and its PRIORITY frames (streams 3 to 11, the nodes of
	 * its dependency tree); the server (h2server.py) answers each as its
	 * path says, /reset's with RST_STREAM(REFUSED_STREAM), and the
	 * client says GOAWAY before it closes. */
	ck_assert_msg(strcmp(s.log,
		"C open 13 at 115\n"
		"C headers 13 end path=/ok\n"
		"C open 15 at 167\n"
		"C headers 15 end path=/429\n"
		"C open 17 at 192\n"
		"C headers 17 end path=/503\n"
		"C open 19 at 217\n"
		"C headers 19 end path=/early\n"
		"C open 21 at 244\n"
		"C headers 21 end path=/cached\n"
		"C open 23 at 271\n"
		"C headers 23 end path=/padded\n"
		"C open 25 at 298\n"
		"C headers 25 end path=/reset\n"
		"C open 27 at 324\n"
		"C headers 27 end path=/404\n"
		"S table 4096\n"
		"S headers 13 status=200\n"
		"S end 13\n"
		"S headers 15 end status=429 retry-after=2\n"
		"S headers 17 end status=503 "
		"retry-after=Sun, 06 Nov 2044 08:49:37 GMT\n"
		"S headers 19 status=103\n"
		"S headers 19 status=200\n"
		"S end 19\n"
		"S headers 21 status=200 cache-hit\n"
		"S end 21\n"
		"S headers 23 status=200\n"
		"S end 23\n"
		"S rst 25 7\n"
		"S headers 27 end status=404\n"
		"C goaway 0 0\n") == 0, "%s", s.log);
	session_free(&s);
	free(v.bytes);
}
END_TEST

START_TEST(h2walk_nghttp_grpc)
{
	static struct session s;
	struct vector v;

	vector_load(&v, "nghttp-grpc.h2");
	walk_recorded(&s, &v);
	ck_assert_msg(count_lines(s.log, "C open") == 2, "%s", s.log);
	/* Headers, a message, trailers: the trailers end the stream. */
	ck_assert_msg(strstr(s.log, "S headers 13 status=200 grpc\n"
	                            "S headers 13 end grpc-status=0\n") != NULL,
	              "%s", s.log);
	/* Trailers-only: one block, status, grpc-status and the end. */
	ck_assert_msg(strstr(s.log, "S headers 15 end status=200 grpc "
	                            "grpc-status=14\n") != NULL, "%s", s.log);
	ck_assert_int_eq(count_lines(s.log, "unreadable"), 0);
	session_free(&s);
	free(v.bytes);
}
END_TEST

START_TEST(h2walk_nghttp_table_size)
{
	static struct session s;
	struct vector v;

	vector_load(&v, "nghttp-table-size.h2");
	walk_recorded(&s, &v);
	/* nghttp -c 0 allows the server's encoder no table: the server's
	 * first block opens with a size update to 0, read by the decoder. */
	ck_assert_msg(strstr(s.log, "C table 0\n") != NULL, "%s", s.log);
	ck_assert_int_eq(count_lines(s.log, "C open"), 3);
	ck_assert_msg(strstr(s.log, "status=200 cache-hit") != NULL, "%s",
	              s.log);
	ck_assert_msg(strstr(s.log, "status=429 retry-after=2") != NULL, "%s",
	              s.log);
	ck_assert_int_eq(count_lines(s.log, "unreadable"), 0);
	session_free(&s);
	free(v.bytes);
}
END_TEST

START_TEST(h2walk_nghttp_goaway)
{
	static struct session s;
	struct vector v;

	vector_load(&v, "nghttp-goaway.h2");
	walk_recorded(&s, &v);
	ck_assert_msg(strstr(s.log, "S headers 13 end status=200\n"
	                            "S goaway 13 0\n") != NULL, "%s", s.log);
	session_free(&s);
	free(v.bytes);
}
END_TEST

START_TEST(h2walk_h2load_ten_streams)
{
	static struct session s;
	struct vector v;

	vector_load(&v, "h2load-m10.h2");
	walk_recorded(&s, &v);
	/* 30 requests, 10 at a time: 30 streams, each answered once. */
	ck_assert_int_eq(count_lines(s.log, "C open"), 30);
	ck_assert_int_eq(count_lines(s.log, "C headers"), 30);
	ck_assert_int_eq(count_lines(s.log, "S headers"), 30);
	ck_assert_int_eq(count_lines(s.log, "status=200"), 30);
	ck_assert_int_eq(count_lines(s.log, "S end"), 30);
	ck_assert_int_eq(count_lines(s.log, "path=/index.html"), 30);
	ck_assert_msg(strstr(s.log, "C open 1 at ") != NULL &&
	              strstr(s.log, "C open 59 at ") != NULL, "%s", s.log);
	session_free(&s);
	free(v.bytes);
}
END_TEST

START_TEST(h2walk_every_cut)
{
	static const char *const names[] = {
		"nghttp-verdicts.h2", "nghttp-grpc.h2", "nghttp-table-size.h2",
		"nghttp-goaway.h2", "h2load-m10.h2",
	};

	check_every_cut(names[_i]);
}
END_TEST

/* --- the spacing plan --------------------------------------------------- */

START_TEST(h2walk_plan_one_stream_per_send)
{
	struct vector v;
	struct agile_h2 w;
	const struct piece *first;
	size_t off = 0;
	uint32_t opened = 0;

	vector_load(&v, "h2load-m10.h2");
	first = &v.piece[0];
	ck_assert_int_eq(first->way, 0);
	agile__h2_reset(&w, AGILE_H2_CLIENT);
	/* h2load's first write: the preface, SETTINGS, and ten requests.
	 * Sent by the plan, it goes out in ten sends of one stream each,
	 * the first with the preface and SETTINGS before its HEADERS. */
	while (off < first->n) {
		struct iovec iov = { .iov_base = (void *)(first->p + off),
		                     .iov_len = first->n - off };
		struct agile_h2_plan plan;
		struct agile_h2_flow before;
		struct session s;

		memcpy(&before, &w.out, sizeof(before));
		agile__h2_plan(&w.out, &iov, 1, iov.iov_len, &plan);
		ck_assert_mem_eq(&before, &w.out, sizeof(before));
		ck_assert_uint_eq(plan.opens, 10 - opened);
		ck_assert_uint_eq(plan.stream, 2 * opened + 1);
		/* h2load keeps HTTP/2's default table: its SETTINGS
		 * says nothing of it. */
		ck_assert_uint_eq(plan.table_size, 0);
		if (plan.opens > 1)
			ck_assert_uint_lt(plan.cut, iov.iov_len);
		else
			ck_assert_uint_eq(plan.cut, iov.iov_len);
		ck_assert_uint_gt(plan.cut, 0);
		/* Send up to the cut: one stream opens. */
		memset(&s, 0, sizeof(s));
		memcpy(&s.w, &w, sizeof(w));
		feed(&s, 0, iov.iov_base, plan.cut);
		ck_assert_int_eq(count_lines(s.log, "C open"), 1);
		memcpy(&w, &s.w, sizeof(w));
		off += plan.cut;
		opened++;
	}
	ck_assert_uint_eq(opened, 10);
	free(v.bytes);
}
END_TEST

/* A flow reporting only some events says exactly those lines of the full
 * log, and ends where the full walk ends; a send's plan ends where walking
 * its bytes ends, with the streams the walk opens, quiet only when opens
 * are all the bytes say. */
START_TEST(h2walk_report_mask_and_plan_after)
{
	static struct session all, some;
	struct vector v;
	const uint8_t wanted = AGILE_H2_REPORT(AGILE_H2_EV_STREAM_OPEN) |
	                       AGILE_H2_REPORT(AGILE_H2_EV_HEADERS_END);
	char expect[LOG_MAX];
	size_t expect_len = 0;
	const char *line;
	struct agile_h2 w;
	int quiet = 0;

	vector_load(&v, "h2load-m10.h2");
	walk_recorded(&all, &v);
	session_init(&some, false);
	some.w.out.report = wanted;
	some.w.in.report = wanted;
	for (int i = 0; i < v.count; i++)
		feed(&some, v.piece[i].way, v.piece[i].p, v.piece[i].n);
	/* The full log's open and headers lines, fields cut off (the
	 * masked walk had no decoder: no FRAGMENT reported). */
	for (line = all.log; *line != '\0';) {
		const char *end = strchr(line, '\n');
		size_t n = (size_t)(end - line);

		if (strncmp(line + 1, " open", 5) == 0) {
			memcpy(expect + expect_len, line, n + 1);
			expect_len += n + 1;
		} else if (strncmp(line + 1, " headers", 8) == 0) {
			const char *sp = memchr(line + 10, ' ', n - 10);
			size_t k = sp != NULL && strncmp(sp, " end", 4) == 0 ?
			           (size_t)(sp - line) + 4 :
			           sp != NULL ? (size_t)(sp - line) : n;

			memcpy(expect + expect_len, line, k);
			expect_len += k;
			expect[expect_len++] = '\n';
		}
		line = end + 1;
	}
	expect[expect_len] = '\0';
	ck_assert_str_eq(some.log, expect);
	some.w.out.report = AGILE_H2_REPORT_ALL;
	some.w.in.report = AGILE_H2_REPORT_ALL;
	ck_assert_mem_eq(&some.w, &all.w, sizeof(all.w));

	/* Each client piece planned whole, then walked. */
	agile__h2_reset(&w, AGILE_H2_CLIENT);
	for (int i = 0; i < v.count; i++) {
		const struct piece *pc = &v.piece[i];
		struct iovec iov = { .iov_base = (void *)pc->p,
		                     .iov_len = pc->n };
		struct agile_h2_plan plan;
		static struct session s;
		uint32_t k = 0;

		if (pc->way != 0)
			continue;
		agile__h2_plan(&w.out, &iov, 1, pc->n, &plan);
		memset(&s, 0, sizeof(s));
		memcpy(&s.w, &w, sizeof(w));
		s.w.out.report = AGILE_H2_REPORT_ALL;
		feed(&s, 0, pc->p, pc->n);
		memcpy(&w, &s.w, sizeof(w));
		plan.after.report = w.out.report;
		ck_assert_mem_eq(&plan.after, &w.out, sizeof(w.out));
		/* The streams the walk opened, in order, are the plan's. */
		for (line = s.log; (line = strstr(line, "C open ")) != NULL;
		     line++, k++)
			if (k < AGILE_H2_PLAN_STREAMS)
				ck_assert_uint_eq(strtoul(line + 7, NULL, 10),
				                  plan.streams[k]);
		ck_assert_uint_eq(k, plan.opens);
		/* Quiet: nothing but opens (h2load's SETTINGS says nothing
		 * of the table, and it resets nothing). */
		ck_assert_int_eq(plan.quiet, plan.opens <= AGILE_H2_PLAN_STREAMS);
		quiet += plan.quiet;
	}
	ck_assert_int_gt(quiet, 0);
	session_free(&all);
	session_free(&some);
	free(v.bytes);
}
END_TEST

/* --- built frames ---------------------------------------------------------- */

/* libnghttp2's encoder, for the header blocks of the built frames. */
struct deflater {
	void *handle, *d;
	int (*new_)(void **, size_t);
	ssize_t (*hd)(void *, uint8_t *, size_t, const struct agile_nghttp2_nv *,
	              size_t);
	int (*change)(void *, size_t);
	void (*del)(void *);
};

static void deflater_open(struct deflater *z)
{
	z->handle = dlopen(AGILE_NGHTTP2_SONAME, RTLD_NOW | RTLD_LOCAL);
	ck_assert_ptr_nonnull(z->handle);
	*(void **)&z->new_ = dlsym(z->handle, "nghttp2_hd_deflate_new");
	*(void **)&z->hd = dlsym(z->handle, "nghttp2_hd_deflate_hd");
	*(void **)&z->change = dlsym(z->handle,
	                             "nghttp2_hd_deflate_change_table_size");
	*(void **)&z->del = dlsym(z->handle, "nghttp2_hd_deflate_del");
	ck_assert(z->new_ && z->hd && z->change && z->del);
	/* Allowed up to 1 MiB, starting at HTTP/2's 4 KiB. */
	ck_assert_int_eq(z->new_(&z->d, 1 << 20), 0);
}

static void deflater_close(struct deflater *z)
{
	z->del(z->d);
	dlclose(z->handle);
}

/* Encode the NULL-terminated name, value list into out: its length. */
static size_t block(struct deflater *z, uint8_t *out, size_t cap, ...)
{
	struct agile_nghttp2_nv nv[16];
	size_t n = 0;
	ssize_t len;
	va_list ap;
	const char *name;

	va_start(ap, cap);
	while ((name = va_arg(ap, const char *)) != NULL) {
		const char *value = va_arg(ap, const char *);

		ck_assert_uint_lt(n, 16);
		nv[n].name = (uint8_t *)name;
		nv[n].namelen = strlen(name);
		nv[n].value = (uint8_t *)value;
		nv[n].valuelen = strlen(value);
		nv[n].flags = 0;
		n++;
	}
	va_end(ap);
	len = z->hd(z->d, out, cap, nv, n);
	ck_assert_int_gt(len, 0);
	return (size_t)len;
}

/* A frame into out: its length. */
static size_t frame(uint8_t *out, uint8_t type, uint8_t flags,
                    uint32_t stream, const void *payload, size_t len)
{
	out[0] = (uint8_t)(len >> 16);
	out[1] = (uint8_t)(len >> 8);
	out[2] = (uint8_t)len;
	out[3] = type;
	out[4] = flags;
	out[5] = (uint8_t)(stream >> 24);
	out[6] = (uint8_t)(stream >> 16);
	out[7] = (uint8_t)(stream >> 8);
	out[8] = (uint8_t)stream;
	if (len > 0)
		memcpy(out + 9, payload, len);
	return 9 + len;
}

#define T_DATA 0
#define T_HEADERS 1
#define T_PRIORITY 2
#define T_RST_STREAM 3
#define T_SETTINGS 4
#define T_PUSH_PROMISE 5
#define T_PING 6
#define T_GOAWAY 7
#define T_WINDOW_UPDATE 8
#define T_CONTINUATION 9
#define F_END_STREAM 0x1
#define F_END_HEADERS 0x4
#define F_PADDED 0x8
#define F_PRIORITY 0x20

static const uint8_t server_settings[] = {
	0, 0, 6, T_SETTINGS, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 100
};

/* A client session with the preface and SETTINGS walked both ways. */
static void opened(struct session *s, bool hpack)
{
	static const uint8_t settings[] = {
		0, 0, 0, T_SETTINGS, 0, 0, 0, 0, 0
	};

	session_init(s, hpack);
	feed(s, 0, (const uint8_t *)PREFACE, 24);
	feed(s, 0, settings, sizeof(settings));
	feed(s, 1, server_settings, sizeof(server_settings));
}

START_TEST(h2walk_continuation)
{
	static struct session s;
	struct deflater z;
	uint8_t hb[512], buf[1024];
	size_t hl, n = 0;

	deflater_open(&z);
	hl = block(&z, hb, sizeof(hb), ":status", "429", "retry-after",
	           "Wed, 21 Oct 2043 07:28:00 GMT", "x-filler",
	           "a value long enough to be cut in the middle", NULL);
	ck_assert_uint_gt(hl, 40);
	opened(&s, true);
	/* The block in three frames, cut inside fields. */
	n += frame(buf + n, T_HEADERS, F_END_STREAM, 1, hb, 7);
	n += frame(buf + n, T_CONTINUATION, 0, 1, hb + 7, 20);
	n += frame(buf + n, T_CONTINUATION, F_END_HEADERS, 1, hb + 27, hl - 27);
	feed(&s, 1, buf, n);
	ck_assert_msg(strcmp(s.log, "S headers 1 end status=429 "
	                            "retry-after=Wed, 21 Oct 2043 07:28:00 GMT\n")
	              == 0, "%s", s.log);
	session_free(&s);

	/* A frame of another kind, or of another stream, between them:
	 * not HTTP/2. */
	opened(&s, false);
	n = frame(buf, T_HEADERS, 0, 1, hb, 7);
	n += frame(buf + n, T_PING, 0, 0, "12345678", 8);
	feed(&s, 1, buf, n);
	ck_assert_str_eq(s.log, "S off\n");
	opened(&s, false);
	n = frame(buf, T_HEADERS, 0, 1, hb, 7);
	n += frame(buf + n, T_CONTINUATION, F_END_HEADERS, 3, hb + 7, hl - 7);
	feed(&s, 1, buf, n);
	ck_assert_str_eq(s.log, "S off\n");
	/* A CONTINUATION with no block open. */
	opened(&s, false);
	n = frame(buf, T_CONTINUATION, F_END_HEADERS, 1, hb, hl);
	feed(&s, 1, buf, n);
	ck_assert_str_eq(s.log, "S off\n");
	deflater_close(&z);
}
END_TEST

START_TEST(h2walk_padding_and_priority)
{
	static struct session s;
	struct deflater z;
	uint8_t hb[256], payload[512], buf[1024];
	size_t hl, n, pl;

	deflater_open(&z);
	opened(&s, true);
	/* The client's HEADERS, padded, with a priority: pad length 10,
	 * 5 priority bytes, the block, 10 bytes of padding. */
	hl = block(&z, hb, sizeof(hb), ":method", "GET", ":path", "/padded",
	           ":scheme", "http", ":authority", "x", NULL);
	payload[0] = 10;
	memcpy(payload + 1, "\x80\0\0\0\x0f", 5);
	memcpy(payload + 6, hb, hl);
	memset(payload + 6 + hl, 0, 10);
	pl = 6 + hl + 10;
	n = frame(buf, T_HEADERS, F_PADDED | F_PRIORITY | F_END_HEADERS |
	          F_END_STREAM, 1, payload, pl);
	/* A PRIORITY frame of its own: nothing to say. */
	n += frame(buf + n, T_PRIORITY, 0, 3, "\0\0\0\x01\x10", 5);
	feed(&s, 0, buf, n);
	/* The server's DATA, padded, with END_STREAM. */
	payload[0] = 200;
	memset(payload + 1, 'x', 250);
	n = frame(buf, T_DATA, F_PADDED | F_END_STREAM, 1, payload, 251);
	feed(&s, 1, buf, n);
	ck_assert_msg(strcmp(s.log, "C open 1 at 33\n"
	                            "C headers 1 end path=/padded\n"
	                            "S end 1\n") == 0, "%s", s.log);
	session_free(&s);

	/* Padding longer than the frame: not HTTP/2. */
	opened(&s, false);
	payload[0] = 50;
	n = frame(buf, T_DATA, F_PADDED, 1, payload, 20);
	n += frame(buf + n, T_HEADERS, F_END_HEADERS, 1, hb, hl);
	feed(&s, 1, buf, n);
	ck_assert_str_eq(s.log, "S off\n");
	opened(&s, false);
	payload[0] = 3;
	n = frame(buf, T_HEADERS, F_PADDED | F_PRIORITY | F_END_HEADERS, 1,
	          payload, 6);
	feed(&s, 0, buf, n);
	ck_assert_str_eq(s.log, "C open 1 at 33\nC off\n");
	deflater_close(&z);
}
END_TEST

/* Dynamic table size updates in the middle of a connection: down to 0,
 * back to 4096, then up to what the client allowed in a SETTINGS. */
START_TEST(h2walk_table_size_update)
{
	static struct session s;
	struct deflater z;
	uint8_t hb[256], buf[1024];
	size_t hl, n;
	uint8_t settings[6] = { 0, 1, 0, 0, 0x40, 0 }; /* 16384 */
	uint32_t stream = 1;

	deflater_open(&z);
	opened(&s, true);
#define RESPOND(status) do { \
		hl = block(&z, hb, sizeof(hb), ":status", status, \
		           "x-repeated", "a value indexed in the table", NULL); \
		n = frame(buf, T_HEADERS, F_END_HEADERS | F_END_STREAM, \
		          stream, hb, hl); \
		feed(&s, 1, buf, n); \
		stream += 2; \
	} while (0)
	RESPOND("201");
	RESPOND("202"); /* x-repeated now from the dynamic table */
	ck_assert_int_eq(z.change(z.d, 0), 0);
	RESPOND("203"); /* opens with an update to 0 */
	ck_assert_int_eq(z.change(z.d, 4096), 0);
	RESPOND("204");
	/* The client allows 16384 (which its send's plan tells); the
	 * encoder takes it all. */
	n = frame(buf, T_SETTINGS, 0, 0, settings, 6);
	{
		struct iovec iov = { .iov_base = buf, .iov_len = n };
		struct agile_h2_plan plan;

		agile__h2_plan(&s.w.out, &iov, 1, n, &plan);
		ck_assert_uint_eq(plan.table_size, 16384);
		ck_assert_uint_eq(plan.opens, 0);
		ck_assert_uint_eq(plan.stream, 0);
		ck_assert_uint_eq(plan.cut, n);
	}
	feed(&s, 0, buf, n);
	ck_assert_int_eq(z.change(z.d, 16384), 0);
	RESPOND("205");
	RESPOND("206");
	ck_assert_msg(strcmp(s.log, "S headers 1 end status=201\n"
	                            "S headers 3 end status=202\n"
	                            "S headers 5 end status=203\n"
	                            "S headers 7 end status=204\n"
	                            "C table 16384\n"
	                            "S headers 9 end status=205\n"
	                            "S headers 11 end status=206\n") == 0,
	              "%s", s.log);
	session_free(&s);

	/* An update beyond what the client allowed is not HPACK the
	 * decoder reads: that block and every later one are unreadable,
	 * and the streams are still walked.  (A new connection: a new
	 * encoder.) */
	deflater_close(&z);
	deflater_open(&z);
	opened(&s, true);
	stream = 1;
	RESPOND("201");
	ck_assert_int_eq(z.change(z.d, 1 << 20), 0);
	RESPOND("202");
	RESPOND("203");
	ck_assert_msg(strcmp(s.log, "S headers 1 end status=201\n"
	                            "S headers 3 end unreadable\n"
	                            "S headers 5 end unreadable\n") == 0,
	              "%s", s.log);
	session_free(&s);

	/* A client that allows 1 MiB gets AGILE_HPACK_TABLE_MAX only. */
	deflater_close(&z);
	deflater_open(&z);
	opened(&s, true);
	settings[3] = 0x10; /* 1 MiB */
	settings[4] = 0;
	n = frame(buf, T_SETTINGS, 0, 0, settings, 6);
	feed(&s, 0, buf, n);
	ck_assert_uint_eq(s.dec[1].table_max, AGILE_HPACK_TABLE_MAX);
	ck_assert_int_eq(z.change(z.d, 1 << 20), 0);
	stream = 1;
	RESPOND("201");
	ck_assert_msg(strcmp(s.log, "C table 1048576\n"
	                            "S headers 1 end unreadable\n") == 0,
	              "%s", s.log);
	session_free(&s);
#undef RESPOND
	deflater_close(&z);
}
END_TEST

START_TEST(h2walk_resets_and_goaway)
{
	static struct session s;
	uint8_t buf[256];
	size_t n;

	opened(&s, false);
	n = frame(buf, T_HEADERS, F_END_HEADERS, 1, "\x82\x86\x84", 3);
	n += frame(buf + n, T_RST_STREAM, 0, 1, "\0\0\0\x08", 4);
	n += frame(buf + n, T_HEADERS, F_END_HEADERS, 3, "\x82\x86\x84", 3);
	feed(&s, 0, buf, n);
	n = frame(buf, T_RST_STREAM, 0, 3, "\0\0\0\x07", 4);
	/* GOAWAY with debug data, cut inside its fields. */
	n += frame(buf + n, T_GOAWAY, 0, 0, "\0\0\0\x03\0\0\0\x02" "debug", 13);
	feed(&s, 1, buf, 5);
	feed(&s, 1, buf + 5, 17);
	feed(&s, 1, buf + 22, n - 22);
	ck_assert_str_eq(s.log, "C open 1 at 33\n"
	                        "C headers 1\n"
	                        "C rst 1 8\n"
	                        "C open 3 at 58\n"
	                        "C headers 3\n"
	                        "S rst 3 7\n"
	                        "S goaway 3 2\n");
	/* Trailers on stream 3 open nothing; nor does an older id. */
	s.log_len = 0;
	s.log[0] = '\0';
	n = frame(buf, T_HEADERS, F_END_HEADERS | F_END_STREAM, 3, "\x40", 0);
	n += frame(buf + n, T_HEADERS, F_END_HEADERS, 1, "\x82", 1);
	feed(&s, 0, buf, n);
	ck_assert_str_eq(s.log, "C headers 3 end\nC headers 1\n");
	/* A send carrying a reset is not quiet: its walk must end it. */
	{
		struct iovec iov = { .iov_base = buf, .iov_len = 0 };
		struct agile_h2_plan plan;

		n = frame(buf, T_HEADERS, F_END_HEADERS, 5, "\x82\x86\x84", 3);
		iov.iov_len = n;
		agile__h2_plan(&s.w.out, &iov, 1, n, &plan);
		ck_assert(plan.quiet);
		ck_assert_uint_eq(plan.opens, 1);
		ck_assert_uint_eq(plan.streams[0], 5);
		n += frame(buf + n, T_RST_STREAM, 0, 5, "\0\0\0\x08", 4);
		iov.iov_len = n;
		agile__h2_plan(&s.w.out, &iov, 1, n, &plan);
		ck_assert(!plan.quiet);
		ck_assert_uint_eq(plan.opens, 1);
	}
}
END_TEST

START_TEST(h2walk_control_frames_say_nothing)
{
	static struct session s;
	uint8_t buf[256];
	size_t n;

	opened(&s, false);
	n = frame(buf, T_PING, 0, 0, "12345678", 8);
	n += frame(buf + n, T_PING, 1, 0, "12345678", 8);
	n += frame(buf + n, T_WINDOW_UPDATE, 0, 0, "\0\0\x10\0", 4);
	n += frame(buf + n, T_WINDOW_UPDATE, 0, 1, "\0\0\x10\0", 4);
	n += frame(buf + n, T_SETTINGS, 1, 0, NULL, 0);
	n += frame(buf + n, T_PRIORITY, 0, 5, "\0\0\0\x01\x10", 5);
	/* An extension's frame (PRIORITY_UPDATE) is skipped. */
	n += frame(buf + n, 0x10, 0, 0, "\0\0\0\x01u=1", 7);
	n += frame(buf + n, T_DATA, 0, 1, "body", 4);
	feed(&s, 0, buf, n);
	feed(&s, 1, buf, n);
	ck_assert_str_eq(s.log, "");
	ck_assert_int_eq(s.w.out.stage, AGILE_H2_FRAMES);
	ck_assert_int_eq(s.w.in.stage, AGILE_H2_FRAMES);
}
END_TEST

/* Server push: the promise's block goes through the server's decoder
 * (its table), and is told apart from a response. */
START_TEST(h2walk_push_promise)
{
	static struct session s;
	struct deflater z;
	uint8_t hb[256], payload[300], buf[1024];
	size_t hl, n;

	deflater_open(&z);
	opened(&s, true);
	hl = block(&z, hb, sizeof(hb), ":method", "GET", ":path", "/pushed",
	           ":scheme", "http", ":authority", "x", NULL);
	payload[0] = 4;
	memcpy(payload + 1, "\0\0\0\x02", 4);
	memcpy(payload + 5, hb, hl);
	memset(payload + 5 + hl, 0, 4);
	n = frame(buf, T_PUSH_PROMISE, F_PADDED | F_END_HEADERS, 1, payload,
	          9 + hl);
	hl = block(&z, hb, sizeof(hb), ":status", "200", NULL);
	n += frame(buf + n, T_HEADERS, F_END_HEADERS, 1, hb, hl);
	feed(&s, 1, buf, n);
	ck_assert_msg(strcmp(s.log, "S promise 1 path=/pushed\n"
	                            "S headers 1 status=200\n") == 0,
	              "%s", s.log);
	session_free(&s);
	/* The client sends no PUSH_PROMISE. */
	opened(&s, false);
	n = frame(buf, T_PUSH_PROMISE, F_END_HEADERS, 1, payload + 1, 8);
	feed(&s, 0, buf, n);
	ck_assert_str_eq(s.log, "C off\n");
	deflater_close(&z);
}
END_TEST

START_TEST(h2walk_not_http2)
{
	static struct session s;
	uint8_t buf[64];

	/* HTTP/1.1 from the client: no preface. */
	session_init(&s, false);
	feed(&s, 0, (const uint8_t *)"GET / HTTP/1.1\r\n", 16);
	feed(&s, 0, (const uint8_t *)"\0\0\0\x04\0\0\0\0\0", 9);
	ck_assert_str_eq(s.log, "C off\n");
	ck_assert_int_eq(s.w.out.stage, AGILE_H2_OFF);
	/* A preface cut and then wrong. */
	session_init(&s, false);
	feed(&s, 0, (const uint8_t *)PREFACE, 10);
	feed(&s, 0, (const uint8_t *)"HTTP/1.1\r\n", 10);
	ck_assert_str_eq(s.log, "C off\n");
	/* A server answering in HTTP/1.1. */
	session_init(&s, false);
	feed(&s, 1, (const uint8_t *)"HTTP/1.1 400 Bad Request\r\n", 26);
	ck_assert_str_eq(s.log, "S off\n");
	/* Frames of the wrong size or on the wrong stream. */
	static const struct {
		int way;
		uint8_t type, flags;
		uint32_t stream;
		size_t len;
	} bad[] = {
		{ 1, T_SETTINGS, 0, 0, 7 },
		{ 1, T_SETTINGS, 1, 0, 6 },
		{ 1, T_SETTINGS, 0, 1, 6 },
		{ 1, T_RST_STREAM, 0, 1, 5 },
		{ 1, T_RST_STREAM, 0, 0, 4 },
		{ 1, T_PING, 0, 0, 7 },
		{ 1, T_GOAWAY, 0, 0, 7 },
		{ 1, T_GOAWAY, 0, 1, 8 },
		{ 1, T_WINDOW_UPDATE, 0, 0, 5 },
		{ 1, T_PRIORITY, 0, 0, 5 },
		{ 1, T_DATA, 0, 0, 1 },
		{ 1, T_HEADERS, F_END_HEADERS, 0, 1 },
		{ 1, T_HEADERS, F_PRIORITY | F_END_HEADERS, 1, 4 },
		{ 1, T_PUSH_PROMISE, F_END_HEADERS, 1, 3 },
		{ 0, T_HEADERS, F_END_HEADERS, 2, 1 },
	};
	uint8_t zero[16] = { 0 };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t n;

		opened(&s, false);
		n = frame(buf, bad[i].type, bad[i].flags, bad[i].stream, zero,
		          bad[i].len);
		feed(&s, bad[i].way, buf, n);
		ck_assert_msg(strcmp(s.log, bad[i].way ? "S off\n" : "C off\n")
		              == 0, "case %zu: %s", i, s.log);
		/* Nothing more is said. */
		feed(&s, bad[i].way, server_settings, sizeof(server_settings));
		ck_assert_msg(strcmp(s.log, bad[i].way ? "S off\n" : "C off\n")
		              == 0, "case %zu: %s", i, s.log);
	}
	/* Bytes not in memory: the flow cannot keep its place. */
	opened(&s, false);
	struct iovec none = { .iov_base = NULL, .iov_len = 9 };
	feed_iov(&s, 0, &none, 1, 9);
	ck_assert_str_eq(s.log, "C off\n");
}
END_TEST

/* A server's walker: the client's bytes are the ones it receives. */
START_TEST(h2walk_server_role)
{
	struct vector v;
	struct agile_h2 w;
	struct agile_h2_cursor c;
	struct agile_h2_event ev;
	struct iovec iov;
	int opens = 0;

	vector_load(&v, "h2load-m10.h2");
	agile__h2_reset(&w, AGILE_H2_SERVER);
	ck_assert_int_eq(w.in.stage, AGILE_H2_PREFACE);
	ck_assert_int_eq(w.out.stage, AGILE_H2_FIRST);
	for (int i = 0; i < v.count; i++) {
		iov.iov_base = (void *)v.piece[i].p;
		iov.iov_len = v.piece[i].n;
		agile__h2_cursor_init(&c, &iov, 1, iov.iov_len);
		do {
			agile__h2_next(v.piece[i].way == 0 ? &w.in : &w.out, &c,
			               &ev);
			ck_assert_int_ne(ev.type, AGILE_H2_EV_OFF);
			opens += ev.type == AGILE_H2_EV_STREAM_OPEN;
		} while (ev.type != AGILE_H2_EV_NONE);
	}
	ck_assert_int_eq(opens, 30);
	free(v.bytes);
}
END_TEST

/* The server's flow as inbound_h2.c sees it: a frame of the preload's own
 * may go in only between two of the program's frames, never before its
 * first (the SETTINGS), and a send that begins inside a frame can be cut
 * where that frame ends, wherever its header was split. */
START_TEST(h2walk_frame_boundaries)
{
	static const uint8_t data[] = "hello";
	struct agile_h2 w;
	struct agile_h2_event ev;
	struct iovec iov[2];
	uint8_t buf[64];
	size_t n, rest;

	agile__h2_reset(&w, AGILE_H2_SERVER);
	ck_assert(!agile__h2_between_frames(&w.out));
	iov[0].iov_base = (void *)server_settings;
	iov[0].iov_len = sizeof(server_settings);
	/* Before its first frame: that frame, 9 + 6 bytes, ends it. */
	ck_assert_uint_eq(agile__h2_frame_rest(&w.out, iov, 1, 15), 15);
	ck_assert_uint_eq(agile__h2_walk(&w.out, server_settings, 4, &ev), 4);
	ck_assert(!agile__h2_between_frames(&w.out));
	/* The header split after 4 bytes, the rest split across iovecs. */
	iov[0].iov_base = (void *)(server_settings + 4);
	iov[0].iov_len = 2;
	iov[1].iov_base = (void *)(server_settings + 6);
	iov[1].iov_len = 9;
	ck_assert_uint_eq(agile__h2_frame_rest(&w.out, iov, 2, 11), 11);
	ck_assert_uint_eq(agile__h2_frame_rest(&w.out, iov, 2, 3), 3);
	do
		(void)agile__h2_walk(&w.out, server_settings + 4, 11, &ev);
	while (ev.type != AGILE_H2_EV_NONE);
	ck_assert(agile__h2_between_frames(&w.out));
	/* Between frames: nothing to finish. */
	n = frame(buf, T_DATA, F_END_STREAM, 1, data, 5);
	iov[0].iov_base = buf;
	iov[0].iov_len = n;
	ck_assert_uint_eq(agile__h2_frame_rest(&w.out, iov, 1, n), 0);
	/* Inside a DATA payload: its bytes left, and no more than the
	 * send's. */
	ck_assert_uint_eq(agile__h2_walk(&w.out, buf, 11, &ev), 11);
	ck_assert(!agile__h2_between_frames(&w.out));
	rest = agile__h2_frame_rest(&w.out, iov, 1, 64);
	ck_assert_uint_eq(rest, 3);
	ck_assert_uint_eq(agile__h2_frame_rest(&w.out, iov, 1, 2), 2);
	agile__h2_walk(&w.out, buf + 11, n - 11, &ev);
	ck_assert_int_eq(ev.type, AGILE_H2_EV_END_STREAM);
	ck_assert(agile__h2_between_frames(&w.out));
	/* The client's flow before its preface is never cut. */
	ck_assert_uint_eq(agile__h2_frame_rest(&w.in, iov, 1, 7), 7);
}
END_TEST

/* --- the decoder's fields, and no library ---------------------------------- */

#define FIELD(f, name, value) \
	agile__h2_field(f, (const uint8_t *)(name), strlen(name), \
	                (const uint8_t *)(value), strlen(value))

START_TEST(h2hpack_fields)
{
	struct agile_h2_fields f;
	char longer[300];

	agile__h2_fields_clear(&f);
	ck_assert_int_eq(f.status, 0);
	ck_assert_int_eq(f.grpc_status, -1);
	FIELD(&f, ":status", "20");
	ck_assert_int_eq(f.status, 0);
	FIELD(&f, ":status", "2x0");
	ck_assert_int_eq(f.status, 0);
	FIELD(&f, ":status", "099");
	ck_assert_int_eq(f.status, 0);
	FIELD(&f, ":status", "503");
	ck_assert_int_eq(f.status, 503);
	FIELD(&f, "grpc-status", "14");
	ck_assert_int_eq(f.grpc_status, 14);
	FIELD(&f, "grpc-status", "1x");
	ck_assert_int_eq(f.grpc_status, -1);
	FIELD(&f, "content-type", "application/grpcx");
	ck_assert(!f.grpc);
	FIELD(&f, "content-type", "application/grpc;charset=x");
	ck_assert(f.grpc);
	/* Names are lower case in HTTP/2: another spelling is another name. */
	FIELD(&f, "Retry-After", "5");
	ck_assert_int_eq(f.retry_after_len, 0);
	FIELD(&f, "retry-after", "Sunday, 06-Nov-94 08:49:37 GMT");
	ck_assert_int_eq(f.retry_after_len, 30);
	FIELD(&f, "retry-after", "a value far too long to be any Retry-After");
	ck_assert_int_eq(f.retry_after_len, 0);
	FIELD(&f, "age", "0");
	ck_assert(!f.cache_hit);
	FIELD(&f, "x-cache", "MISS");
	ck_assert(!f.cache_hit);
	FIELD(&f, "x-cache", "hit");
	ck_assert(f.cache_hit);
	memset(longer, 'p', sizeof(longer) - 1);
	longer[0] = '/';
	longer[sizeof(longer) - 1] = '\0';
	FIELD(&f, ":path", longer);
	ck_assert_uint_eq(f.path_len, sizeof(f.path));
	ck_assert(f.path_cut);
	FIELD(&f, ":path", "/health");
	ck_assert_uint_eq(f.path_len, 7);
	ck_assert(!f.path_cut);
	agile__h2_field(&f, NULL, 0, NULL, 0);
}
END_TEST

START_TEST(h2hpack_without_library)
{
	static struct session s;
	struct agile_nghttp2 lib;
	struct agile_hpack h;
	struct vector v;

	ck_assert_int_eq(agile__nghttp2_bind("libnghttp2.so.0-not-there", &lib),
	                 -ENOENT);
	ck_assert_int_eq(agile__hpack_open(&h, NULL), -ENOENT);
	ck_assert_int_eq(h.state, AGILE_HPACK_NONE);
	agile__hpack_table_size(&h, 8192);
	agile__hpack_fragment(&h, (const uint8_t *)"\x88", 1);
	ck_assert_ptr_null(agile__hpack_end(&h));
	agile__hpack_close(&h);
	/* The streams are walked all the same. */
	vector_load(&v, "nghttp-verdicts.h2");
	session_init(&s, false);
	for (int i = 0; i < v.count; i++)
		feed(&s, v.piece[i].way, v.piece[i].p, v.piece[i].n);
	ck_assert_int_eq(count_lines(s.log, "C open"), 8);
	ck_assert_int_eq(count_lines(s.log, "S headers"), 8);
	ck_assert_int_eq(count_lines(s.log, "status="), 0);
	free(v.bytes);
}
END_TEST

START_TEST(h2hpack_garbage_breaks_the_direction)
{
	static struct session s;
	uint8_t buf[256];
	size_t n;

	opened(&s, true);
	/* Index 0 is no entry: not HPACK. */
	n = frame(buf, T_HEADERS, F_END_HEADERS | F_END_STREAM, 1, "\x80", 1);
	n += frame(buf + n, T_HEADERS, F_END_HEADERS | F_END_STREAM, 3,
	           "\x88", 1);
	feed(&s, 1, buf, n);
	/* A block cut inside a field, at its end. */
	n = frame(buf, T_HEADERS, F_END_HEADERS, 1, "\x82\x44\x05/he", 5);
	feed(&s, 0, buf, n);
	ck_assert_str_eq(s.log, "S headers 1 end unreadable\n"
	                        "S headers 3 end unreadable\n"
	                        "C open 1 at 33\n"
	                        "C headers 1 unreadable\n");
	ck_assert_int_eq(s.dec[0].state, AGILE_HPACK_BROKEN);
	ck_assert_ptr_null(s.dec[0].inflater);
	session_free(&s);
	/* The server's :status 200 is one byte of the static table. */
	opened(&s, true);
	n = frame(buf, T_HEADERS, F_END_HEADERS, 1, "\x88", 1);
	feed(&s, 1, buf, n);
	ck_assert_str_eq(s.log, "S headers 1 status=200\n");
	session_free(&s);
}
END_TEST

static Suite *h2walk_suite(void)
{
	Suite *s = suite_create("h2walk");
	TCase *tc = tcase_create("recorded");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, h2walk_nghttp_verdicts);
	tcase_add_test(tc, h2walk_nghttp_grpc);
	tcase_add_test(tc, h2walk_nghttp_table_size);
	tcase_add_test(tc, h2walk_nghttp_goaway);
	tcase_add_test(tc, h2walk_h2load_ten_streams);
	tcase_add_loop_test(tc, h2walk_every_cut, 0, 5);
	tcase_add_test(tc, h2walk_plan_one_stream_per_send);
	tcase_add_test(tc, h2walk_report_mask_and_plan_after);
	tcase_add_test(tc, h2walk_server_role);
	tcase_add_test(tc, h2walk_frame_boundaries);
	suite_add_tcase(s, tc);
	tc = tcase_create("built");
	tcase_add_test(tc, h2walk_continuation);
	tcase_add_test(tc, h2walk_padding_and_priority);
	tcase_add_test(tc, h2walk_table_size_update);
	tcase_add_test(tc, h2walk_resets_and_goaway);
	tcase_add_test(tc, h2walk_control_frames_say_nothing);
	tcase_add_test(tc, h2walk_push_promise);
	tcase_add_test(tc, h2walk_not_http2);
	suite_add_tcase(s, tc);
	tc = tcase_create("hpack");
	tcase_add_test(tc, h2hpack_fields);
	tcase_add_test(tc, h2hpack_without_library);
	tcase_add_test(tc, h2hpack_garbage_breaks_the_direction);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *runner = srunner_create(h2walk_suite());
	int failed;

	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
