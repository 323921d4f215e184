/*
 * h2conn.c - the side pool of HTTP/2 connections (h2conn.h).
 *
 * A fixed array of pointers, each entry allocated when its connection
 * sends the preface and freed when its last descriptor lets it go.  1,024
 * connections speaking HTTP/2 at once is far more than a client keeps
 * (one per origin is the rule of RFC 9113 section 9.1); past it a new
 * connection keeps the byte-level rules, which pace it per connection.
 *
 * Rejected: the walker in struct agile_fd.  The table has an entry per
 * possible descriptor and the walker is about 70 bytes; the per-stream
 * table to come (docs/http2.md) is kilobytes.  Every connection would pay
 * for what only HTTP/2 ones use.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "h2conn.h"
#include "log.h"
#include "symbols.h"

#define H2CONN_MAX 1024
/* Streams in flight a connection's table holds: nghttpd allows 100
 * concurrent streams by default, curl's --parallel-max is 50.  A power of
 * two: a stream's home slot is its id's (home_of). */
#define H2CONN_STREAMS 128

/* A stream in flight: id 0 is a free slot.  The sender claims a slot by
 * its id, then stores the start; whoever ends the stream takes the start
 * (exchanged with 0, so that it ends once) and frees the slot. */
struct h2stream {
	uint32_t id;
	int64_t start_ns;
	int64_t ready_ns; /* its answer began (a peek saw it, or a gRPC
	                   * answer's headers came before its trailers), 0 not */
	uint8_t excluded; /* its :path is one of exclude= */
};

struct h2conn {
	struct agile_h2 walk; /* the connection's two flows */
	uint32_t refs;        /* descriptors naming it */
	uint32_t peeked;      /* bytes the last peek saw, 0 when read since */
	struct agile_hpack out_hp; /* the client's blocks (sends only) */
	struct agile_hpack in_hp;  /* the server's blocks (reads only) */
	/* Streams of the table outside their home slot, counted before one
	 * is claimed there and after one is freed, so that a lookup that
	 * reads 0 may stop at the home slot. */
	uint32_t displaced;
	/* The highest stream id entered in the table (agile__h2conn_opening),
	 * 0 none; lowered again to what the walker saw sent when a send
	 * fails (drop_unsent). */
	uint32_t entered_max;
	struct h2stream streams[H2CONN_STREAMS];
};

/*
 * A stream's home slot.  A client's stream ids are odd and rise by two,
 * so the streams in flight at once have distinct home slots until one
 * is still in flight 128 streams later; such a stream takes another free
 * slot (displaced).  Every stream a send opens and every answer it gets
 * looked its slot up by walking all 128: h2load -m 10 paid about 2,000
 * instructions a stream for it (bench-overhead --profile).
 */
static unsigned home_of(uint32_t stream)
{
	return (stream >> 1) & (H2CONN_STREAMS - 1);
}

/* The slot holding `stream`, or NULL. */
static struct h2stream *find_stream(struct h2conn *c, uint32_t stream)
{
	struct h2stream *st = &c->streams[home_of(stream)];

	if (__atomic_load_n(&st->id, __ATOMIC_ACQUIRE) == stream)
		return st;
	if (__atomic_load_n(&c->displaced, __ATOMIC_ACQUIRE) == 0)
		return NULL;
	for (int i = 0; i < H2CONN_STREAMS; i++)
		if (__atomic_load_n(&c->streams[i].id, __ATOMIC_ACQUIRE) ==
		    stream)
			return &c->streams[i];
	return NULL;
}

/* Free the slot st, which holds `id`. */
static void free_stream(struct h2conn *c, struct h2stream *st, uint32_t id)
{
	__atomic_store_n(&st->id, 0, __ATOMIC_RELEASE);
	if (st != &c->streams[home_of(id)])
		__atomic_sub_fetch(&c->displaced, 1, __ATOMIC_ACQ_REL);
}

/* Claim a free slot for `stream` and time it from start_ns: its home
 * slot, else any; false when the table is full. */
static bool claim_stream(struct h2conn *c, uint32_t stream, int64_t start_ns)
{
	unsigned home = home_of(stream);
	struct h2stream *st = NULL;
	uint32_t none = 0;

	if (__atomic_compare_exchange_n(&c->streams[home].id, &none, stream,
	                                false, __ATOMIC_ACQ_REL,
	                                __ATOMIC_RELAXED)) {
		st = &c->streams[home];
	} else {
		__atomic_add_fetch(&c->displaced, 1, __ATOMIC_ACQ_REL);
		for (int i = 0; i < H2CONN_STREAMS && st == NULL; i++) {
			none = 0;
			if ((unsigned)i != home &&
			    __atomic_compare_exchange_n(&c->streams[i].id,
			                                &none, stream, false,
			                                __ATOMIC_ACQ_REL,
			                                __ATOMIC_RELAXED))
				st = &c->streams[i];
		}
		if (st == NULL) {
			__atomic_sub_fetch(&c->displaced, 1, __ATOMIC_ACQ_REL);
			return false;
		}
	}
	__atomic_store_n(&st->ready_ns, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&st->excluded, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&st->start_ns, start_ns, __ATOMIC_RELEASE);
	return true;
}

/* Slot i holds the entry of index i + 1. */
static struct h2conn *pool[H2CONN_MAX];

static struct h2conn *entry_of(const struct agile_fd *t)
{
	uint16_t index = __atomic_load_n(&t->h2conn, __ATOMIC_ACQUIRE);

	if (index == 0 || index > H2CONN_MAX)
		return NULL;
	return __atomic_load_n(&pool[index - 1], __ATOMIC_ACQUIRE);
}

/* Set once the missing library has been said. */
static bool no_library_said;

static void free_entry(struct h2conn *c)
{
	agile__hpack_close(&c->out_hp);
	agile__hpack_close(&c->in_hp);
	free(c);
}

/* The events this connection's flows report: only what
 * agile__h2conn_sent and agile__h2conn_received act on; a direction's
 * header blocks (and the other's table sizes, which that direction's
 * decoder takes) only when it has a decoder: without one they are
 * skipped like DATA bodies. */
static void set_reports(struct h2conn *c)
{
	bool out_hp = c->out_hp.state != AGILE_HPACK_NONE;
	bool in_hp = c->in_hp.state != AGILE_HPACK_NONE;

	c->walk.out.report = AGILE_H2_REPORT(AGILE_H2_EV_STREAM_OPEN) |
	                     AGILE_H2_REPORT(AGILE_H2_EV_RST_STREAM);
	c->walk.in.report = AGILE_H2_REPORT(AGILE_H2_EV_HEADERS_END) |
	                    AGILE_H2_REPORT(AGILE_H2_EV_RST_STREAM) |
	                    AGILE_H2_REPORT(AGILE_H2_EV_GOAWAY);
	if (out_hp) {
		c->walk.out.report |= AGILE_H2_REPORT(AGILE_H2_EV_FRAGMENT) |
		                      AGILE_H2_REPORT(AGILE_H2_EV_HEADERS_END);
		c->walk.in.report |= AGILE_H2_REPORT(AGILE_H2_EV_TABLE_SIZE);
	}
	if (in_hp) {
		c->walk.in.report |= AGILE_H2_REPORT(AGILE_H2_EV_FRAGMENT);
		c->walk.out.report |= AGILE_H2_REPORT(AGILE_H2_EV_TABLE_SIZE);
	}
}

bool agile__h2conn_open(struct agile_fd *t, bool verdicts)
{
	struct h2conn *c;

	agile__h2conn_release(t, 0, NULL);
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return false;
	agile__h2_reset(&c->walk, AGILE_H2_CLIENT);
	c->refs = 1;
	if (verdicts) {
		const struct agile_nghttp2 *lib = agile__nghttp2();

		if (lib == NULL) {
			if (!__atomic_exchange_n(&no_library_said, true,
			                         __ATOMIC_ACQ_REL))
				agile__log(AGILE_LOG_WARN,
				           "libnghttp2 could not be loaded: "
				           "HTTP/2 streams are paced and "
				           "sampled without proto=http "
				           "verdicts");
		} else {
			agile__hpack_open(&c->out_hp, lib);
			agile__hpack_open(&c->in_hp, lib);
		}
	}
	set_reports(c);
	for (int i = 0; i < H2CONN_MAX; i++) {
		struct h2conn *none = NULL;

		if (__atomic_load_n(&pool[i], __ATOMIC_RELAXED) == NULL &&
		    __atomic_compare_exchange_n(&pool[i], &none, c, false,
		                                __ATOMIC_ACQ_REL,
		                                __ATOMIC_RELAXED)) {
			__atomic_store_n(&t->h2conn, (uint16_t)(i + 1),
			                 __ATOMIC_RELEASE);
			return true;
		}
	}
	free_entry(c);
	return false;
}

/*
 * This thread's last plan, for the send after it.  A send that takes
 * every planned byte, on a flow no other thread has moved since the plan
 * (the flow compared whole), would walk them to where the plan's copy of
 * the flow ended, and find what the plan found: so agile__h2conn_sent
 * takes the flow from here and enters the streams the plan saw open,
 * instead of walking the bytes a second time (the walk of a send was a
 * third of the preload's instructions per stream under h2load -m 10).
 * Only when the plan is quiet (its bytes' only events are stream opens)
 * and the connection's own walk would act on nothing else: no HPACK
 * decoder (which would want the header blocks).  Per thread, because the
 * plan is of this thread's bytes; the flows are copied with memcpy and
 * compared with memcmp, padding included (a flow is only ever copied
 * whole, from a calloc'd entry).
 */
struct planned {
	const struct h2conn *c; /* NULL: nothing to take */
	size_t len;
	uint32_t opens;
	uint32_t streams[AGILE_H2_PLAN_STREAMS];
	struct agile_h2_flow before, after;
};
static __thread struct planned planned __attribute__((tls_model("initial-exec")));

/* The report mask of a connection whose sends' walk acts on stream opens
 * and resets alone. */
#define OPENS_ONLY (AGILE_H2_REPORT(AGILE_H2_EV_STREAM_OPEN) | \
                    AGILE_H2_REPORT(AGILE_H2_EV_RST_STREAM))

bool agile__h2conn_plan(const struct agile_fd *t, const struct iovec *iov,
                        int count, size_t len, struct agile_h2_plan *plan)
{
	struct h2conn *c = entry_of(t);

	planned.c = NULL;
	if (c == NULL || iov == NULL ||
	    agile__h2_stage(&c->walk.out) == AGILE_H2_OFF)
		return false;
	agile__h2_plan(&c->walk.out, iov, count, len, plan);
	if (plan->quiet && c->walk.out.report == OPENS_ONLY) {
		planned.c = c;
		planned.len = len;
		planned.opens = plan->opens;
		memcpy(planned.streams, plan->streams,
		       plan->opens * sizeof(planned.streams[0]));
		memcpy(&planned.before, &c->walk.out, sizeof(planned.before));
		memcpy(&planned.after, &plan->after, sizeof(planned.after));
		planned.after.report = OPENS_ONLY;
	}
	return true;
}

/* The plan of this send, if the bytes it took are all the planned ones
 * and the flow is where the plan found it: the flow moved past them and
 * their streams entered (timed from start_ns), as a walk would do.
 * Returns the streams opened, or -1 to walk. */
static int take_plan(struct agile_fd *t, struct h2conn *c, size_t sent,
                     int64_t start_ns)
{
	if (planned.c != c || planned.len != sent ||
	    memcmp(&planned.before, &c->walk.out, sizeof(planned.before)) != 0) {
		planned.c = NULL;
		return -1;
	}
	planned.c = NULL;
	memcpy(&c->walk.out, &planned.after, sizeof(c->walk.out));
	for (uint32_t i = 0; i < planned.opens; i++)
		agile__h2conn_opening(t, planned.streams[i], start_ns);
	return (int)planned.opens;
}

void agile__h2conn_opening(const struct agile_fd *t, uint32_t stream,
                           int64_t start_ns)
{
	struct h2conn *c = entry_of(t);
	uint32_t seen;

	if (c == NULL || stream == 0)
		return;
	/* Entered already, and perhaps ended since: a send's first stream
	 * enters before the call, and the walk of the same bytes after it
	 * finds that stream opened again, by when another thread may have
	 * read its answer and taken it out of the table (grpcio's reader
	 * did, and the stream entered a second time was truncated at close
	 * a second later: grpc_status.sh's extra sample); or a kernel's
	 * short write cut its frame header, and the send of the rest plans
	 * it again.  A client's stream ids only rise. */
	seen = __atomic_load_n(&c->entered_max, __ATOMIC_ACQUIRE);
	do {
		if (stream <= seen)
			return;
	} while (!__atomic_compare_exchange_n(&c->entered_max, &seen, stream,
	                                      false, __ATOMIC_ACQ_REL,
	                                      __ATOMIC_ACQUIRE));
	(void)claim_stream(c, stream, start_ns);
}

/* End the stream in slot st, which held `id` when it was looked at. */
static void end_stream(struct agile_fd *t, struct h2conn *c,
                       struct h2stream *st, uint32_t id, int64_t now,
                       bool answered, const struct agile_h2_fields *fields,
                       agile_h2conn_ended_fn *ended)
{
	int64_t start = __atomic_exchange_n(&st->start_ns, 0, __ATOMIC_ACQ_REL);
	int64_t end = now, ready;

	if (start == 0)
		return; /* another thread ended it */
	ready = __atomic_exchange_n(&st->ready_ns, 0, __ATOMIC_ACQ_REL);
	if (answered && ready >= start && ready != 0 && ready < now)
		end = ready;
	bool excluded = __atomic_load_n(&st->excluded, __ATOMIC_ACQUIRE) != 0;

	free_stream(c, st, id);
	ended(t, end > start ? end - start : 0, end, answered,
	      answered ? fields : NULL, excluded);
}

/* End the streams of the table with ids in [low, high]: one, found from
 * its home slot, or every slot's. */
static void end_streams(struct agile_fd *t, struct h2conn *c, uint32_t low,
                        uint32_t high, int64_t now, bool answered,
                        const struct agile_h2_fields *fields,
                        agile_h2conn_ended_fn *ended)
{
	if (low == high) {
		struct h2stream *st = find_stream(c, low);

		if (st != NULL)
			end_stream(t, c, st, low, now, answered, fields, ended);
		return;
	}
	for (int i = 0; i < H2CONN_STREAMS; i++) {
		struct h2stream *st = &c->streams[i];
		uint32_t id = __atomic_load_n(&st->id, __ATOMIC_ACQUIRE);

		if (id != 0 && id >= low && id <= high)
			end_stream(t, c, st, id, now, answered, fields, ended);
	}
}

/* The request of `stream` has an excluded :path. */
static void mark_excluded(struct h2conn *c, uint32_t stream)
{
	struct h2stream *st = find_stream(c, stream);

	if (st != NULL)
		__atomic_store_n(&st->excluded, 1, __ATOMIC_RELEASE);
}

/* The answer of `stream` began at `now`, its verdict to come: the time
 * a peek saw it first stays. */
static void mark_answered(struct h2conn *c, uint32_t stream, int64_t now)
{
	struct h2stream *st = find_stream(c, stream);
	int64_t zero = 0;

	if (st != NULL)
		__atomic_compare_exchange_n(&st->ready_ns, &zero, now, false,
		                            __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

/* A send failed: the stream it was to open (entered by
 * agile__h2conn_opening, above every id the sent flow has opened) was not
 * opened, and leaves the table unsampled. */
static void drop_unsent(struct h2conn *c)
{
	uint32_t last = c->walk.out.last_opened;

	for (int i = 0; i < H2CONN_STREAMS; i++) {
		struct h2stream *st = &c->streams[i];
		uint32_t id = __atomic_load_n(&st->id, __ATOMIC_ACQUIRE);

		if (id > last &&
		    __atomic_exchange_n(&st->start_ns, 0, __ATOMIC_ACQ_REL) != 0)
			free_stream(c, st, id);
	}
	/* The send of those goes again, and enters them again. */
	__atomic_store_n(&c->entered_max, last, __ATOMIC_RELEASE);
}

int agile__h2conn_sent(struct agile_fd *t, const struct iovec *iov,
                       int count, ssize_t result, int64_t start_ns,
                       int64_t now, agile_h2conn_ended_fn *ended,
                       agile_h2conn_excluded_fn *excluded)
{
	struct h2conn *c = entry_of(t);
	struct agile_h2_cursor cursor;
	struct agile_h2_event ev;
	const struct agile_h2_fields *f;
	int opened = 0;

	if (c == NULL || agile__h2_stage(&c->walk.out) == AGILE_H2_OFF)
		return -1;
	if (iov == NULL) {
		/* Bytes not in memory: the walker would lose its place. */
		c->walk.out.stage = AGILE_H2_OFF;
		end_streams(t, c, 1, UINT32_MAX, now, false, NULL, ended);
		return -1;
	}
	if (result <= 0) {
		planned.c = NULL;
		drop_unsent(c);
		return 0;
	}
	if ((opened = take_plan(t, c, (size_t)result, start_ns)) >= 0)
		return opened;
	opened = 0;
	agile__h2_cursor_init(&cursor, iov, count, (size_t)result);
	do {
		agile__h2_next(&c->walk.out, &cursor, &ev);
		if (ev.type == AGILE_H2_EV_STREAM_OPEN) {
			/* The send's first stream is in the table already;
			 * those after it in a send that was not cut enter
			 * now, timed from the same start. */
			agile__h2conn_opening(t, ev.stream, start_ns);
			opened++;
		}
		else if (ev.type == AGILE_H2_EV_RST_STREAM)
			end_streams(t, c, ev.stream, ev.stream, now, false,
			            NULL, ended);
		else if (ev.type == AGILE_H2_EV_FRAGMENT)
			agile__hpack_fragment(&c->out_hp, ev.fragment,
			                      ev.fragment_len);
		else if (ev.type == AGILE_H2_EV_TABLE_SIZE)
			agile__hpack_table_size(&c->in_hp, ev.value);
		else if (ev.type == AGILE_H2_EV_HEADERS_END &&
		         (f = agile__hpack_end(&c->out_hp)) != NULL &&
		         f->path_len > 0 && excluded != NULL &&
		         excluded(t, f->path, f->path_len))
			mark_excluded(c, ev.stream);
	} while (ev.type != AGILE_H2_EV_NONE && ev.type != AGILE_H2_EV_OFF);
	if (ev.type == AGILE_H2_EV_OFF) {
		end_streams(t, c, 1, UINT32_MAX, now, false, NULL, ended);
		return -1;
	}
	return opened;
}

bool agile__h2conn_received(struct agile_fd *t, const struct iovec *iov,
                            int count, size_t received, int64_t now,
                            agile_h2conn_ended_fn *ended)
{
	struct h2conn *c = entry_of(t);
	struct agile_h2_cursor cursor;
	struct agile_h2_event ev;
	const struct agile_h2_fields *fields;

	if (c == NULL || agile__h2_stage(&c->walk.out) == AGILE_H2_OFF ||
	    agile__h2_stage(&c->walk.in) == AGILE_H2_OFF)
		return false;
	if (iov == NULL) {
		/* Bytes not in memory (splice): the walker loses its place. */
		c->walk.in.stage = AGILE_H2_OFF;
		end_streams(t, c, 1, UINT32_MAX, now, false, NULL, ended);
		return false;
	}
	__atomic_store_n(&c->peeked, 0, __ATOMIC_RELAXED);
	agile__h2_cursor_init(&cursor, iov, count, received);
	for (;;) {
		agile__h2_next(&c->walk.in, &cursor, &ev);
		switch (ev.type) {
		case AGILE_H2_EV_NONE:
			return true;
		case AGILE_H2_EV_OFF:
			/* Not HTTP/2 after all: what is in flight ends. */
			end_streams(t, c, 1, UINT32_MAX, now, false, NULL, ended);
			return false;
		case AGILE_H2_EV_FRAGMENT:
			agile__hpack_fragment(&c->in_hp, ev.fragment,
			                      ev.fragment_len);
			break;
		case AGILE_H2_EV_TABLE_SIZE:
			agile__hpack_table_size(&c->out_hp, ev.value);
			break;
		case AGILE_H2_EV_HEADERS_END:
			/* Every block goes through the decoder, or its table
			 * is lost.  A push's promise answers nothing; nor do
			 * 1xx headers, once decoded. */
			fields = agile__hpack_end(&c->in_hp);
			if (fields != NULL && fields->status >= 100 &&
			    fields->status <= 199)
				break;
			if (ev.flags & AGILE_H2_PUSH)
				break;
			/* A gRPC answer that goes on (messages, then
			 * trailers) says how the call went in its trailers:
			 * the round trip ends at these headers, the verdict
			 * waits for the grpc-status to come. */
			if (fields != NULL && fields->grpc &&
			    fields->grpc_status < 0 &&
			    !(ev.flags & AGILE_H2_END_STREAM)) {
				mark_answered(c, ev.stream, now);
				break;
			}
			end_streams(t, c, ev.stream, ev.stream, now, true,
			            fields, ended);
			break;
		case AGILE_H2_EV_RST_STREAM:
			end_streams(t, c, ev.stream, ev.stream, now, false,
			            NULL, ended);
			break;
		case AGILE_H2_EV_GOAWAY:
			if (ev.stream < UINT32_MAX)
				end_streams(t, c, ev.stream + 1, UINT32_MAX,
				            now, false, NULL, ended);
			break;
		default:
			break;
		}
	}
}

bool agile__h2conn_waiting(const struct agile_fd *t)
{
	struct h2conn *c = entry_of(t);

	if (c == NULL)
		return false;
	for (int i = 0; i < H2CONN_STREAMS; i++)
		if (__atomic_load_n(&c->streams[i].id, __ATOMIC_ACQUIRE) != 0)
			return true;
	return false;
}

bool agile__h2conn_peek(const struct agile_fd *t, int fd, int64_t now)
{
	struct h2conn *c = entry_of(t);
	struct agile_h2_flow flow;
	struct agile_h2_event ev;
	uint8_t buf[8192];
	ssize_t n;
	size_t at = 0;

	if (c == NULL)
		return false;
	n = agile__libc.recv(fd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
	if (n <= 0 || (uint32_t)n == __atomic_load_n(&c->peeked,
	                                             __ATOMIC_ACQUIRE))
		return false;
	__atomic_store_n(&c->peeked, (uint32_t)n, __ATOMIC_RELEASE);
	/* A copy: the bytes will be walked for real when the program
	 * reads them. */
	flow = c->walk.in;
	while (at < (size_t)n) {
		at += agile__h2_walk(&flow, buf + at, (size_t)n - at, &ev);
		if (ev.type == AGILE_H2_EV_OFF || ev.type == AGILE_H2_EV_NONE)
			break;
		if (ev.type != AGILE_H2_EV_HEADERS_END ||
		    (ev.flags & AGILE_H2_PUSH))
			continue;
		mark_answered(c, ev.stream, now);
	}
	return true;
}

void agile__h2conn_end(struct agile_fd *t, int64_t now,
                       agile_h2conn_ended_fn *ended)
{
	struct h2conn *c = entry_of(t);

	if (c != NULL)
		end_streams(t, c, 1, UINT32_MAX, now, false, NULL, ended);
}

void agile__h2conn_dup(const struct agile_fd *from, struct agile_fd *to)
{
	struct h2conn *c = entry_of(from);

	agile__h2conn_release(to, 0, NULL);
	if (c == NULL)
		return;
	__atomic_add_fetch(&c->refs, 1, __ATOMIC_ACQ_REL);
	__atomic_store_n(&to->h2conn, __atomic_load_n(&from->h2conn,
	                                               __ATOMIC_ACQUIRE),
	                 __ATOMIC_RELEASE);
}

void agile__h2conn_release(struct agile_fd *t, int64_t now,
                           agile_h2conn_ended_fn *ended)
{
	uint16_t index = __atomic_exchange_n(&t->h2conn, 0, __ATOMIC_ACQ_REL);
	struct h2conn *c;

	if (index == 0 || index > H2CONN_MAX)
		return;
	c = __atomic_load_n(&pool[index - 1], __ATOMIC_ACQUIRE);
	if (c == NULL || __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	if (ended != NULL)
		end_streams(t, c, 1, UINT32_MAX, now, false, NULL, ended);
	__atomic_store_n(&pool[index - 1], NULL, __ATOMIC_RELEASE);
	free_entry(c);
}
