/*
 * inbound_h2.c - a listener's limit counts the streams of an HTTP/2
 * connection the program accepted (proto=http or proto=grpc; HTTP/2 over
 * cleartext with prior knowledge, whose first bytes are the client's
 * preface).
 *
 * Each connection gets an entry of a side pool (as outbound ones do,
 * preload/track/h2conn.c): the frame walker of src/common/h2walk.h, its
 * received flow the client's frames, its sent flow the program's, and a
 * table of the client's streams in flight.  A stream takes a permit when
 * the program reads the HEADERS that open it, and gives it back when the
 * program writes the frame that ends it (END_STREAM on its HEADERS or
 * DATA, or a RST_STREAM either way) or the connection closes; its handling
 * time, the limiter's sample, runs from that read to the program's first
 * response HEADERS on the stream.  Control frames take nothing, and an
 * idle connection holds nothing.  DATA payloads are skipped by length and
 * no header block is decoded: the walk is all it costs.
 *
 * A stream that gets no permit (or whose client is over client_rate=) is
 * shed, and the connection kept.  The program must still read its HEADERS
 * (its HPACK decoder would lose its dynamic table without them), so they
 * are left in the read, and a RST_STREAM(CANCEL) of the stream is put in
 * the program's buffer right after the frame that ends them: the
 * program's HTTP/2 library sees the request and, in the same read, its
 * cancellation, before its application can answer.  The read returns that
 * many bytes more; there must be room for them in the buffer the program
 * gave (a read filled to the brim, or more than 32 streams shed in one
 * read, leaves the stream served beyond the limit, with one warning).
 * The client is answered by the preload as shed_response= says: a HEADERS
 * frame of the status (503, with Retry-After when retry_after= is set;
 * 429 over client_rate=) ending the stream, or with proto=grpc a gRPC
 * trailers-only answer, grpc-status 14 UNAVAILABLE (8 RESOURCE_EXHAUSTED
 * over client_rate=), or with shed_response=close a
 * RST_STREAM(REFUSED_STREAM).  The header blocks use only the static table
 * and literals without indexing, so neither the program's encoder nor the
 * client's decoder has its dynamic table changed; a client that lowered
 * SETTINGS_HEADER_TABLE_SIZE (whose decoder then expects a size update at
 * the start of the next block) is answered with RST_STREAM instead.
 *
 * The answer goes into the program's outgoing bytes only between two of
 * its frames, and never while one of its sends is under way: the thread in
 * a send of the program's owns the outgoing bytes (busy) from before the
 * real call to after it, and the answers queued are written by whichever
 * thread holds them at a frame boundary: the reading thread at once when
 * no send is under way, or the sending thread before or after its call.
 * A program whose last write ended inside a frame has its next send cut at
 * that frame's end, and the answers go after it.  A program writing from
 * several threads still writes one send at a time on one connection (or
 * its frames would interleave): they take turns for busy.  What the
 * program may still write on a shed stream passes (a RST_STREAM, which a
 * client ignores on a closed stream; a HEADERS block must pass in any case,
 * for the client's decoder).
 *
 * Rejected: taking the shed HEADERS out of what the program reads.  Its
 * HPACK decoder would then miss the dynamic-table entries that block adds,
 * and every later request on the connection could decode wrong.
 */
#include "config.h"

#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "atomics.h"
#include "clock.h"
#include "destinations.h"
#include "h2walk.h"
#include "inbound_h2.h"
#include "log.h"
#include "resilience_hook.h"
#include "symbols.h"
#include "usermem.h"

#define POOL_MAX 1024
/* Streams in flight a connection's table holds: a stream past them is
 * served without a permit (one warning). */
#define STREAMS 256
#define QUEUE_MAX 2048
#define INSERT_MAX 32
#define RST_LEN 13
#define ERROR_REFUSED_STREAM 0x7
#define ERROR_CANCEL 0x8
/* HPACK's default dynamic table size (RFC 7541, section 4.2). */
#define TABLE_SIZE_DEFAULT 4096

enum { SLOT_FREE = 0, SLOT_CLAIMED, SLOT_LIVE, SLOT_ENDING };

/* A client stream in flight.  The reading thread claims a free slot,
 * fills it and makes it live; whoever ends the stream moves it from live
 * to ending (once) and frees it. */
struct stream {
	uint8_t state;      /* SLOT_* */
	uint8_t answered;   /* the program's first response HEADERS went */
	uint32_t id;
	int32_t permit;     /* 0: none (served past a full table or read) */
	int32_t permit_tid;
	int64_t start_ns;   /* the read of its HEADERS */
};

struct h2in {
	struct agile_h2 walk;  /* in: the client's frames; out: the program's */
	uint32_t refs;         /* descriptors naming it */
	uint8_t busy;          /* 1: a thread owns the outgoing bytes */
	uint8_t queue_lock;    /* guards queue[], queue_len and torn */
	uint8_t torn;          /* the queue was written in part: the rest goes
	                          before any byte of the program's */
	uint8_t small_table;   /* the client lowered its HPACK table size */
	uint32_t shedding;     /* the stream whose header block is being read,
	                          to be shed; 0 none (the reading thread's) */
	int32_t shed_status;   /* its answer's status; 0: RST_STREAM */
	int64_t shed_retry_ns; /* its Retry-After (agile__retry_after_s) */
	uint16_t queue_len;
	uint8_t queue[QUEUE_MAX]; /* answers not written yet, whole frames */
	struct stream streams[STREAMS];
};

/* Slot i holds the entry of index i + 1. */
static struct h2in *pool[POOL_MAX];

/* The entry whose outgoing bytes this thread owns, in a send. */
static __thread struct h2in *held __attribute__((tls_model("initial-exec")));

static bool pool_full_said, table_full_said, no_room_said;

static void say_once(bool *said, const char *what)
{
	if (!__atomic_exchange_n(said, true, __ATOMIC_ACQ_REL))
		agile__log(AGILE_LOG_WARN, "%s", what);
}

static struct h2in *entry_of(const struct agile_fd *t)
{
	uint16_t index = __atomic_load_n(&t->inbound_h2, __ATOMIC_ACQUIRE);

	if (index == 0 || index > POOL_MAX)
		return NULL;
	return __atomic_load_n(&pool[index - 1], __ATOMIC_ACQUIRE);
}

static int fd_of(const struct agile_fd *t)
{
	return (int)(t - __atomic_load_n(&agile__fd_table, __ATOMIC_ACQUIRE));
}

static void spin_lock(uint8_t *lock)
{
	while (__atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE))
		sched_yield();
}

static void spin_unlock(uint8_t *lock)
{
	__atomic_store_n(lock, 0, __ATOMIC_RELEASE);
}

static bool take(struct h2in *c)
{
	uint8_t free_ = 0;

	return __atomic_compare_exchange_n(&c->busy, &free_, 1, false,
	                                   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

static void give(struct h2in *c)
{
	__atomic_store_n(&c->busy, 0, __ATOMIC_RELEASE);
}

bool agile__inbound_h2_open(struct agile_fd *t)
{
	struct h2in *c;

	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return false;
	agile__h2_reset(&c->walk, AGILE_H2_SERVER);
	c->refs = 1;
	for (int i = 0; i < POOL_MAX; i++) {
		struct h2in *none = NULL;

		if (__atomic_load_n(&pool[i], __ATOMIC_RELAXED) == NULL &&
		    __atomic_compare_exchange_n(&pool[i], &none, c, false,
		                                __ATOMIC_ACQ_REL,
		                                __ATOMIC_RELAXED)) {
			__atomic_store_n(&t->inbound_h2, (uint16_t)(i + 1),
			                 __ATOMIC_RELEASE);
			return true;
		}
	}
	free(c);
	say_once(&pool_full_said, "no room for another accepted HTTP/2 "
	         "connection: its streams are not counted");
	return false;
}

/* ---- the stream table --------------------------------------------------- */

static bool stream_add(struct h2in *c, uint32_t id, int32_t permit,
                       int64_t now)
{
	for (int i = 0; i < STREAMS; i++) {
		struct stream *st = &c->streams[i];
		uint8_t free_ = SLOT_FREE;

		if (!__atomic_compare_exchange_n(&st->state, &free_,
		                                 SLOT_CLAIMED, false,
		                                 __ATOMIC_ACQ_REL,
		                                 __ATOMIC_RELAXED))
			continue;
		st->id = id;
		st->permit = permit;
		st->permit_tid = permit > 0 ? agile__thread_id() : 0;
		st->answered = 0;
		st->start_ns = now;
		__atomic_store_n(&st->state, SLOT_LIVE, __ATOMIC_RELEASE);
		return true;
	}
	return false;
}

static struct stream *stream_find(struct h2in *c, uint32_t id)
{
	for (int i = 0; i < STREAMS; i++) {
		struct stream *st = &c->streams[i];

		if (__atomic_load_n(&st->state, __ATOMIC_ACQUIRE) == SLOT_LIVE &&
		    st->id == id)
			return st;
	}
	return NULL;
}

/* The stream ends: its permit back, and a truncated observation when the
 * program never answered it. */
static void stream_end(struct agile_state_slot *s, struct stream *st,
                       int64_t now)
{
	uint8_t live = SLOT_LIVE;

	if (!__atomic_compare_exchange_n(&st->state, &live, SLOT_ENDING, false,
	                                 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return; /* another thread ended it */
	if (st->permit > 0)
		agile__permit_release(&s->resilience, st->permit,
		                      st->permit_tid);
	if (!__atomic_load_n(&st->answered, __ATOMIC_ACQUIRE)) {
		agile__add_u64(&s->truncated, 1);
		agile__conc_outcome(&s->resilience, AGILE_OUTCOME_TRUNCATED,
		                    now - st->start_ns, now);
	}
	st->id = 0;
	__atomic_store_n(&st->state, SLOT_FREE, __ATOMIC_RELEASE);
}

/* End the streams with ids in [low, high]. */
static void streams_end(struct agile_state_slot *s, struct h2in *c,
                        uint32_t low, uint32_t high, int64_t now)
{
	for (int i = 0; i < STREAMS; i++) {
		struct stream *st = &c->streams[i];

		if (__atomic_load_n(&st->state, __ATOMIC_ACQUIRE) == SLOT_LIVE &&
		    st->id >= low && st->id <= high)
			stream_end(s, st, now);
	}
}

/* ---- the answers -------------------------------------------------------- */

static size_t put_frame_head(uint8_t *p, size_t len, uint8_t type,
                             uint8_t flags, uint32_t id)
{
	p[0] = (uint8_t)(len >> 16);
	p[1] = (uint8_t)(len >> 8);
	p[2] = (uint8_t)len;
	p[3] = type;
	p[4] = flags;
	p[5] = (uint8_t)(id >> 24 & 0x7f);
	p[6] = (uint8_t)(id >> 16);
	p[7] = (uint8_t)(id >> 8);
	p[8] = (uint8_t)id;
	return 9;
}

static size_t put_rst(uint8_t *p, uint32_t id, uint32_t code)
{
	put_frame_head(p, 4, 0x3, 0, id);
	p[9] = (uint8_t)(code >> 24);
	p[10] = (uint8_t)(code >> 16);
	p[11] = (uint8_t)(code >> 8);
	p[12] = (uint8_t)code;
	return RST_LEN;
}

/* An HPACK string literal, not Huffman-coded, of at most 126 bytes. */
static size_t put_string(uint8_t *p, const char *s)
{
	size_t n = strlen(s);

	p[0] = (uint8_t)n;
	memcpy(p + 1, s, n);
	return n + 1;
}

/* The answer to a shed stream into out (room for 160 bytes): its length.
 * Header fields: indexed ones of the static table, and literals without
 * indexing (RFC 7541, section 6.2.2), which touch no dynamic table. */
static size_t answer(uint8_t *out, uint32_t id, int status, int64_t retry_ns,
                     bool grpc, bool small_table)
{
	uint8_t *b = out + 9;
	size_t n = 0;
	char text[24];
	long long retry_s = agile__retry_after_s(retry_ns);

	if (status <= 0 || small_table)
		return put_rst(out, id, ERROR_REFUSED_STREAM);
	if (grpc) {
		b[n++] = 0x88; /* :status 200, static entry 8 */
		b[n++] = 0x0f; /* content-type, static entry 31 */
		b[n++] = 31 - 15;
		n += put_string(b + n, "application/grpc");
		b[n++] = 0x00;
		n += put_string(b + n, "grpc-status");
		n += put_string(b + n, status == 429 ? "8" : "14");
		b[n++] = 0x00;
		n += put_string(b + n, "grpc-message");
		n += put_string(b + n, "shed by the listener's limit");
	} else {
		b[n++] = 0x08; /* :status, static entry 8, literal value */
		snprintf(text, sizeof(text), "%d", status);
		n += put_string(b + n, text);
		if (retry_s >= 0) {
			b[n++] = 0x0f; /* retry-after, static entry 53 */
			b[n++] = 53 - 15;
			snprintf(text, sizeof(text), "%lld", retry_s);
			n += put_string(b + n, text);
		}
	}
	/* HEADERS, END_STREAM | END_HEADERS */
	put_frame_head(out, n, 0x1, 0x5, id);
	return 9 + n;
}

/* Queue the answer to `id`: false when the queue is full. */
static bool queue_answer(struct h2in *c, uint32_t id, int status,
                         int64_t retry_ns, bool grpc)
{
	uint8_t frame[160];
	size_t n = answer(frame, id, status, retry_ns, grpc,
	                  __atomic_load_n(&c->small_table, __ATOMIC_ACQUIRE));
	bool ok;

	spin_lock(&c->queue_lock);
	ok = c->queue_len + n <= QUEUE_MAX;
	if (ok) {
		memcpy(c->queue + c->queue_len, frame, n);
		__atomic_store_n(&c->queue_len, (uint16_t)(c->queue_len + n),
		                 __ATOMIC_RELEASE);
	}
	spin_unlock(&c->queue_lock);
	return ok;
}

/* With the outgoing bytes owned: write what the queue holds, when the
 * program's frames are at a boundary (and not before its first frame,
 * the SETTINGS a server must begin with). */
static void flush(int fd, struct h2in *c)
{
	ssize_t n;

	if (__atomic_load_n(&c->queue_len, __ATOMIC_ACQUIRE) == 0 ||
	    !agile__h2_between_frames(&c->walk.out))
		return;
	spin_lock(&c->queue_lock);
	n = c->queue_len == 0 ? 0
	    : agile__libc.send(fd, c->queue, c->queue_len,
	                       MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n > 0) {
		memmove(c->queue, c->queue + n, c->queue_len - (size_t)n);
		__atomic_store_n(&c->queue_len, (uint16_t)(c->queue_len - n),
		                 __ATOMIC_RELEASE);
		__atomic_store_n(&c->torn, c->queue_len > 0, __ATOMIC_RELEASE);
	}
	spin_unlock(&c->queue_lock);
}

/* Write the rest of a queue written in part, waiting for room (at most
 * about 5 s): the program's next byte must not land inside an answer. */
static void finish_torn(int fd, struct h2in *c)
{
	for (int i = 0; i < 50 && __atomic_load_n(&c->torn, __ATOMIC_ACQUIRE);
	     i++) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };

		(void)poll(&p, 1, 100);
		flush(fd, c);
	}
}

/* Write the queue now if no send is under way; the thread in one writes
 * it when done (agile__inbound_h2_sent looks again after letting go). */
static void try_flush(int fd, struct h2in *c)
{
	if (__atomic_load_n(&c->queue_len, __ATOMIC_ACQUIRE) == 0 || !take(c))
		return;
	flush(fd, c);
	give(c);
}

/* ---- reads: the client's frames ----------------------------------------- */

static int shed_status_of(const struct agile_resilience_config *rc)
{
	return rc->shed_response == AGILE_SHED_HTTP ? (int)rc->shed_status : 0;
}

/* A new client stream: a permit, or it is to be shed once its header
 * block is read. */
static void stream_open(struct agile_fd *t, struct h2in *c,
                        const struct agile_resilience_config *rc,
                        struct agile_state_slot *s, uint32_t id, int64_t now)
{
	int64_t retry = 0;
	int32_t permit;

	if (rc->client_rate > 0 && t->client_len > 0 &&
	    !agile__clients_admit(&s->resilience, rc, t->client,
	                          t->client_len, now, &retry)) {
		c->shedding = id;
		c->shed_status = 429;
		c->shed_retry_ns = retry;
		return;
	}
	permit = agile__permit_try_reclaiming(&s->resilience, now);
	if (permit <= 0) {
		c->shedding = id;
		c->shed_status = shed_status_of(rc);
		c->shed_retry_ns = rc->retry_after_ns;
		return;
	}
	if (!stream_add(c, id, permit, now)) {
		agile__permit_release(&s->resilience, permit,
		                      agile__thread_id());
		say_once(&table_full_said, "more than 256 streams in flight "
		         "on one accepted HTTP/2 connection: those past them "
		         "are served without a permit");
	}
}

/* Byte `at` of iov[0, count). */
static uint8_t *byte_at(const struct iovec *iov, int count, size_t at)
{
	for (int i = 0; i < count; i++) {
		if (at < iov[i].iov_len)
			return (uint8_t *)iov[i].iov_base + at;
		at -= iov[i].iov_len;
	}
	return NULL;
}

/* Put a RST_STREAM(CANCEL) of ids[j] at offset at[j] (ascending, in the
 * read's own bytes) of the first `result` bytes of iov[0, count), which
 * have room for k more frames. */
static void insert_resets(const struct iovec *iov, int count, size_t result,
                          const size_t *at, const uint32_t *ids, int k)
{
	size_t src = result, dst = result + (size_t)k * RST_LEN;

	for (int j = k - 1; j >= 0; j--) {
		uint8_t frame[RST_LEN];
		size_t len = src - at[j];

		if (count == 1) {
			uint8_t *p = iov[0].iov_base;

			memmove(p + dst - len, p + at[j], len);
		} else {
			for (size_t i = len; i-- > 0;)
				*byte_at(iov, count, dst - len + i) =
					*byte_at(iov, count, at[j] + i);
		}
		dst -= len;
		src = at[j];
		put_rst(frame, ids[j], ERROR_CANCEL);
		dst -= RST_LEN;
		for (size_t i = 0; i < RST_LEN; i++)
			*byte_at(iov, count, dst + i) = frame[i];
	}
}

size_t agile__inbound_h2_received(struct agile_fd *t, const struct iovec *iov,
                                  int count, size_t result, size_t asked)
{
	struct h2in *c = entry_of(t);
	const struct agile_resilience_config *rc;
	struct agile_state_slot *s;
	struct agile_h2_cursor cursor;
	struct agile_h2_event ev;
	size_t at[INSERT_MAX];
	uint32_t ids[INSERT_MAX];
	int k = 0;
	int64_t now;

	if (c == NULL || agile__h2_stage(&c->walk.in) == AGILE_H2_OFF)
		return 0;
	agile__enter();
	rc = &agile__destinations_rule(t->dest)->resilience;
	s = agile__destinations_slot(t->dest);
	now = agile__now_ns();
	if (iov == NULL) {
		/* Bytes not in memory (splice): the walker loses its place,
		 * and the connection is served uncounted from here on. */
		c->walk.in.stage = AGILE_H2_OFF;
		streams_end(s, c, 1, UINT32_MAX, now);
		agile__leave();
		return 0;
	}
	agile__h2_cursor_init(&cursor, iov, count, result);
	do {
		agile__h2_next(&c->walk.in, &cursor, &ev);
		switch (ev.type) {
		case AGILE_H2_EV_STREAM_OPEN:
			stream_open(t, c, rc, s, ev.stream, now);
			break;
		case AGILE_H2_EV_HEADERS_END:
			if (ev.stream != c->shedding)
				break;
			c->shedding = 0;
			/* The frame that ends the block ends here: the reset
			 * goes right after it, if the buffer has room. */
			if (k < INSERT_MAX &&
			    asked - result >= (size_t)(k + 1) * RST_LEN &&
			    queue_answer(c, ev.stream, c->shed_status,
			                 c->shed_retry_ns, rc->grpc != 0)) {
				at[k] = cursor.done;
				ids[k++] = ev.stream;
				if (c->shed_status != 429)
					agile__add_u64(&s->resilience.shed, 1);
				break;
			}
			say_once(&no_room_said, "a read of an accepted HTTP/2 "
			         "connection had no room for the reset of a "
			         "stream over the limit: it is served");
			stream_add(c, ev.stream, 0, now);
			break;
		case AGILE_H2_EV_RST_STREAM: {
			struct stream *st = stream_find(c, ev.stream);

			if (st != NULL)
				stream_end(s, st, now);
			break;
		}
		case AGILE_H2_EV_TABLE_SIZE:
			if (ev.value < TABLE_SIZE_DEFAULT)
				__atomic_store_n(&c->small_table, 1,
				                 __ATOMIC_RELEASE);
			break;
		case AGILE_H2_EV_OFF:
			streams_end(s, c, 1, UINT32_MAX, now);
			break;
		default:
			break;
		}
	} while (ev.type != AGILE_H2_EV_NONE && ev.type != AGILE_H2_EV_OFF);
	if (k > 0) {
		insert_resets(iov, count, result, at, ids, k);
		try_flush(fd_of(t), c);
	}
	agile__leave();
	return (size_t)k * RST_LEN;
}

/* ---- sends: the program's frames ---------------------------------------- */

void agile__inbound_h2_before_send(struct agile_fd *t, const struct iovec *iov,
                                   int count, size_t *limit)
{
	struct h2in *c = entry_of(t);
	int fd = fd_of(t);

	held = NULL;
	if (c == NULL || agile__h2_stage(&c->walk.out) == AGILE_H2_OFF)
		return;
	/* Whoever holds the bytes now writes a few of its own, without
	 * waiting, or is one of the program's sends: a program that
	 * (wrongly) sends from two threads at once, or a child forked while
	 * a thread of its parent was in a send, goes on after about 1 s. */
	for (int i = 0; !take(c); i++) {
		struct timespec pause = { 0, 50000 };

		if (i > 20000)
			return;
		if (i < 100)
			sched_yield();
		else
			nanosleep(&pause, NULL);
	}
	held = c;
	if (__atomic_load_n(&c->queue_len, __ATOMIC_ACQUIRE) == 0)
		return;
	if (agile__h2_between_frames(&c->walk.out)) {
		flush(fd, c);
		finish_torn(fd, c);
	} else if (iov != NULL && agile__iov_readable(iov, count)) {
		size_t len = 0, rest;

		for (int i = 0; i < count; i++)
			len += iov[i].iov_len;
		rest = agile__h2_frame_rest(&c->walk.out, iov, count, len);
		if (rest > 0 && rest < len)
			*limit = rest;
	}
}

void agile__inbound_h2_sent(struct agile_fd *t, const struct iovec *iov,
                            int count, ssize_t result)
{
	struct h2in *c = entry_of(t);
	struct agile_state_slot *s;
	struct agile_h2_cursor cursor;
	struct agile_h2_event ev;
	struct stream *st;
	int fd = fd_of(t);
	int64_t now;

	if (c == NULL)
		return;
	agile__enter();
	s = agile__destinations_slot(t->dest);
	now = agile__now_ns();
	if (result > 0 && iov == NULL &&
	    agile__h2_stage(&c->walk.out) != AGILE_H2_OFF) {
		/* sendfile, splice: frames the walker cannot see. */
		c->walk.out.stage = AGILE_H2_OFF;
		streams_end(s, c, 1, UINT32_MAX, now);
	}
	if (result > 0 && iov != NULL) {
		agile__h2_cursor_init(&cursor, iov, count, (size_t)result);
		do {
			agile__h2_next(&c->walk.out, &cursor, &ev);
			switch (ev.type) {
			case AGILE_H2_EV_HEADERS_END:
				if ((ev.flags & AGILE_H2_PUSH) ||
				    (st = stream_find(c, ev.stream)) == NULL)
					break;
				if (!__atomic_exchange_n(&st->answered, 1,
				                         __ATOMIC_ACQ_REL))
					agile__conc_outcome(
						&s->resilience,
						AGILE_OUTCOME_ANSWERED,
						now - st->start_ns, now);
				if (ev.flags & AGILE_H2_END_STREAM)
					stream_end(s, st, now);
				break;
			case AGILE_H2_EV_END_STREAM:
			case AGILE_H2_EV_RST_STREAM:
				if ((st = stream_find(c, ev.stream)) != NULL)
					stream_end(s, st, now);
				break;
			case AGILE_H2_EV_GOAWAY:
				if (ev.stream < UINT32_MAX)
					streams_end(s, c, ev.stream + 1,
					            UINT32_MAX, now);
				break;
			case AGILE_H2_EV_OFF:
				streams_end(s, c, 1, UINT32_MAX, now);
				break;
			default:
				break;
			}
		} while (ev.type != AGILE_H2_EV_NONE &&
		         ev.type != AGILE_H2_EV_OFF);
	}
	if (held == c) {
		flush(fd, c);
		held = NULL;
		give(c);
	}
	/* Answers the reading thread queued while this one held the
	 * bytes. */
	try_flush(fd, c);
	agile__leave();
}

/* ---- the connection's end ----------------------------------------------- */

static void release(struct agile_fd *t)
{
	uint16_t index = __atomic_exchange_n(&t->inbound_h2, 0,
	                                     __ATOMIC_ACQ_REL);
	struct h2in *c;

	if (index == 0 || index > POOL_MAX)
		return;
	c = __atomic_load_n(&pool[index - 1], __ATOMIC_ACQUIRE);
	if (c == NULL || __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	streams_end(agile__destinations_slot(t->dest), c, 1, UINT32_MAX,
	            agile__now_ns());
	__atomic_store_n(&pool[index - 1], NULL, __ATOMIC_RELEASE);
	free(c);
}

void agile__inbound_h2_close(struct agile_fd *t)
{
	struct h2in *c = entry_of(t);

	if (c != NULL && held == c) {
		held = NULL;
		give(c);
	}
	release(t);
}

void agile__inbound_h2_dup(const struct agile_fd *from, struct agile_fd *to)
{
	struct h2in *c = entry_of(from);

	__atomic_store_n(&to->inbound_h2, 0, __ATOMIC_RELEASE);
	if (c == NULL)
		return;
	__atomic_add_fetch(&c->refs, 1, __ATOMIC_ACQ_REL);
	__atomic_store_n(&to->inbound_h2,
	                 __atomic_load_n(&from->inbound_h2, __ATOMIC_ACQUIRE),
	                 __ATOMIC_RELEASE);
}
