/*
 * fuzz_tls_plain.c - libFuzzer harness for the TLS path of the preload
 * (preload/hooks/tls_plain.h, docs/tls.md): the table that maps a session
 * to its socket when the library hides it (src/common/tls_sessions.c), the
 * record walker that follows a connection's handshake (src/common/tls.c)
 * until the library hands over the first plaintext, where it stops
 * (agile__tls_stop), and the plaintext after it: HTTP/1 requests and
 * responses (src/common/http.c) or HTTP/2's frames (src/common/h2walk.c)
 * and header blocks (src/common/h2hpack.c), in whatever pieces the calls
 * move them.  The bytes go where track.c sends them (its after_send and
 * after_recv, mirrored here in send_path and recv_path): the preload's own
 * state around them (grants, samples, the fd table) is not linked, its
 * decisions are.
 *
 * The input is a first byte, then a script of operations:
 *     first   bits 0-1: the session table's size, 1 << 12 slots (the
 *             preload's), 1 << 4, 1 << 5 or 1 << 6 (small, so that windows
 *             fill and slots are taken again); bit 2: decode HTTP/2 header
 *             blocks with HPACK (libnghttp2, opened at run time)
 *     op      1 byte: bits 0-2 what, bit 3 and bits 4-7 a session's
 *             number (16 times bit 3, plus bits 4-7: 0 to 31):
 *       0 CONNECT  fd: a new connection on descriptor fd (tracked)
 *       1 CLOSE    fd: the descriptor is closed (no longer tracked)
 *       2 HANDSHAKE: the session starts a handshake (SSL_connect, ...):
 *                  its mapping is forgotten and it is named, as the hooks
 *                  name it while the library's call runs, until RETURN
 *       3 LEARNING: the session is named (an unmapped read or write)
 *       4 RETURN:  the library's call returns: no session named
 *       5 SOCKET   fd call: the socket's own send or receive (ciphertext,
 *                  or a plain connection's bytes); the first tracked one
 *                  while a session is named maps the session to fd
 *       6 PLAIN    fd call: the session writes or reads plaintext
 *                  (SSL_write, SSL_read), on fd as SSL_get_fd says, or
 *                  the table's for NO_FD
 *     fd      1 byte: 0 to 31 that descriptor, 32 to 63 65535, 64 to 95
 *             65536 (never mapped), 96 to 127 -1, 128 and above NO_FD (in
 *             CONNECT and CLOSE: its low 5 bits)
 *     call    a byte: bits 0-2 iovecs less one, bit 3 a receive (else a
 *             send), bits 5-7 how much the call moved in eighths (0: all);
 *             2 bytes of length, big-endian (cut to what is left); the
 *             bytes; one byte per iovec boundary, where it falls modulo
 *             length + 1
 * Every iovec is its own allocation of exactly its size.  The seeds in
 * corpus/tls_plain/ are curl's connections over TLS (--http1.1 and
 * --http2) recorded at 127.0.0.1 by tests/vectors/tls/record.py, ciphertext
 * and plaintext, written by tests/vectors/tls/seeds.py.
 *
 * Besides the sanitizers' own checks, the harness aborts when:
 *   - the table disagrees with a model of it: a session it finds is mapped
 *     to the descriptor it was last learnt on, unless forgotten; one it
 *     does not find was never learnt, forgotten, or its descriptor was
 *     closed since (its slot may be taken); a learn refused only for an
 *     unmappable address or descriptor, or a window full of other
 *     sessions on tracked descriptors; a session on a tracked descriptor
 *     never loses its slot to another;
 *   - the walker does not stop at a connection's first plaintext: off,
 *     its other flags kept, the ticket rule dropped, and every send then
 *     plain to it (until TLS starts inside the plaintext, as through a
 *     proxy's tunnel);
 *   - an HTTP/1 answer's verdict disagrees with its status (REFUSED for
 *     429 and 503, FAILED for another 5xx), or a request's exclude= mark
 *     is not its path's;
 *   - an HTTP/2 event comes where it cannot (a stream opened by the
 *     server's flow, an even or non-increasing id, a fragment outside the
 *     call's bytes), a decoder leaves its states or comes back from
 *     BROKEN, or a stream's verdict disagrees with its :status and
 *     grpc-status, or its :path's exclude= mark with the list.
 *
 * tests/fuzz/replay.c turns this file into a program that replays the
 * committed corpus in every `make check`.
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agile.h"
#include "fdtable.h"
#include "h2hpack.h"
#include "h2walk.h"
#include "http2.h"
#include "resilience.h"
#include "resilience_hook.h"
#include "state.h"
#include "tls.h"
#include "tls_sessions.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define OP_CONNECT 0
#define OP_CLOSE 1
#define OP_HANDSHAKE 2
#define OP_LEARNING 3
#define OP_RETURN 4
#define OP_SOCKET 5
#define OP_PLAIN 6

#define CONNS 33 /* descriptors 0 to 31, and 65535 */
#define SESSIONS 32
#define NO_FD (-2)
#define IOV_MAX_FUZZ 8
#define NOW_NS ((int64_t)AGILE_NS_PER_S)
#define WALL_NS ((int64_t)1796032800 * AGILE_NS_PER_S)

/* One connection, as far as the TLS path goes: its entry's fields. */
struct conn {
	bool tracked;
	bool plain;         /* the library handed over its plaintext */
	bool h2;            /* HTTP/2's preface went: walked */
	struct agile_tls tls;
	struct agile_fd t;  /* its exclude= mark */
	struct agile_h2 walk;
	struct agile_hpack dec[2]; /* 0: the blocks sent, 1: those received */
};

/* What the table should say of a session. */
struct expect {
	int fd;          /* learnt on, -1 none */
	bool may_lose;   /* its descriptor closed since: its slot may go */
};

static struct {
	unsigned bits;
	bool hpack;
	uint64_t slots[AGILE_TLS_SESSIONS];
	struct conn conn[CONNS];
	struct expect expect[SESSIONS];
	int named;        /* the session named, -1 none */
	struct agile_resilience_config config;
	struct agile_state_slot slot;
} h;

/* Sessions are 16-byte allocations in a row, as malloc gives them: their
 * homes are the hash's, not neighbours. */
static const void *session_of(int i)
{
	return (const void *)(uintptr_t)(0x7f3a5c001000ULL + 16 * (uint64_t)i);
}

static int conn_index(int fd)
{
	if (fd >= 0 && fd < 32)
		return fd;
	return fd == 0xffff ? 32 : -1;
}

static bool tracked(int fd)
{
	int i = conn_index(fd);

	return i >= 0 && h.conn[i].tracked;
}

static int fd_of(uint8_t b)
{
	if (b < 32)
		return b;
	if (b < 64)
		return 0xffff;
	if (b < 96)
		return 0x10000;
	if (b < 128)
		return -1;
	return NO_FD;
}

/* The table against the model, for every session. */
static void check_table(void)
{
	for (int i = 0; i < SESSIONS; i++) {
		int fd = agile__tls_sessions_fd(h.slots, h.bits,
		                                session_of(i));
		const struct expect *e = &h.expect[i];

		if (fd == e->fd)
			continue;
		if (fd == -1 && e->may_lose)
			continue;
		abort();
	}
	if (agile__tls_sessions_fd(h.slots, h.bits, NULL) != -1 ||
	    agile__tls_sessions_fd(h.slots, h.bits,
	                           (const void *)((uintptr_t)1 << 47)) != -1)
		abort();
}

/* Could a learn of session i find no slot?  Only when at least a window's
 * worth of other sessions hold slots on tracked descriptors. */
static bool window_may_fill(int i)
{
	int held = 0;

	for (int j = 0; j < SESSIONS; j++)
		if (j != i && h.expect[j].fd >= 0 && tracked(h.expect[j].fd) &&
		    agile__tls_sessions_fd(h.slots, h.bits, session_of(j)) ==
		    h.expect[j].fd)
			held++;
	return held >= AGILE_TLS_SESSION_PROBES;
}

/* The first tracked send or receive while a session is named
 * (agile__tls_learn). */
static void learn(int fd)
{
	int i = h.named;
	bool full, mapped;

	if (i < 0 || !tracked(fd))
		return;
	h.named = -1;
	full = window_may_fill(i);
	mapped = agile__tls_sessions_learn(h.slots, h.bits, session_of(i), fd,
	                                   tracked);
	if (mapped) {
		h.expect[i].fd = fd;
		h.expect[i].may_lose = false;
	} else {
		/* Every descriptor here is mappable: only a full window. */
		if (!full)
			abort();
		if (agile__tls_sessions_fd(h.slots, h.bits, session_of(i)) !=
		    -1)
			abort();
		h.expect[i].fd = -1;
	}
}

/* One call's iovecs, each in an allocation of its own. */
struct call {
	struct iovec iov[IOV_MAX_FUZZ];
	int count;
	bool recv;    /* a receive, else a send */
	size_t moved; /* bytes the call moved, the first of them */
};

static void call_free(struct call *c)
{
	for (int i = 0; i < c->count; i++)
		free(c->iov[i].iov_base);
}

static bool parse_call(const uint8_t **data, size_t *size, struct call *c)
{
	size_t len, cut[IOV_MAX_FUZZ + 1];
	const uint8_t *bytes;
	uint8_t shape;
	int count;
	unsigned eighths;

	if (*size < 3)
		return false;
	shape = (*data)[0];
	count = 1 + (shape & 7);
	eighths = shape >> 5;
	len = (size_t)(*data)[1] << 8 | (*data)[2];
	*data += 3;
	*size -= 3;
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
	c->recv = (shape & 8) != 0;
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

/* The first iovec's share of the bytes moved: what track.c reads of a
 * request or response (it reads the first iovec alone). */
static size_t first_len(const struct call *c)
{
	return c->iov[0].iov_len < c->moved ? c->iov[0].iov_len : c->moved;
}

static bool inside(const struct call *c, const uint8_t *p, size_t n)
{
	for (int i = 0; i < c->count; i++) {
		const uint8_t *b = c->iov[i].iov_base;

		if (p >= b && p + n <= b + c->iov[i].iov_len)
			return true;
	}
	return false;
}

static void check_decoder(const struct agile_hpack *d, uint8_t before)
{
	if (d->state > AGILE_HPACK_BROKEN ||
	    (before == AGILE_HPACK_BROKEN && d->state != AGILE_HPACK_BROKEN) ||
	    d->fields.path_len > sizeof(d->fields.path) ||
	    d->fields.retry_after_len > sizeof(d->fields.retry_after))
		abort();
}

/* A stream's answer: what h2_ended in track.c records, against the
 * verdict its fields call for under the default status lists. */
static void check_h2_answer(const struct agile_h2_fields *f)
{
	enum agile_http_verdict v = agile__http_h2_verdict(&h.slot, &h.config,
	                                                   f, NOW_NS, WALL_NS);
	enum agile_http_verdict want;

	if (f->grpc_status == 14 || f->grpc_status == 8)
		want = AGILE_HTTP_REFUSED;
	else if (f->grpc_status == 4)
		want = AGILE_HTTP_TRUNCATED;
	else if (f->status == 429 || f->status == 503)
		want = AGILE_HTTP_REFUSED;
	else if (f->cache_hit)
		want = AGILE_HTTP_SKIP;
	else
		want = f->status >= 500 ? AGILE_HTTP_FAILED : AGILE_HTTP_SAMPLE;
	if (v != want)
		abort();
}

/* A request's :path against exclude= (h2_excluded in track.c): marked
 * only if it begins with one of the paths, and marked when it is one. */
static void check_h2_request(const struct agile_h2_fields *f)
{
	bool excluded = agile__http_path_excluded(&h.config, f->path,
	                                          f->path_len);
	bool prefix = false, exact = false;

	for (uint32_t i = 0; i < h.config.exclude_count; i++) {
		size_t n = strlen(h.config.exclude[i]);

		if (f->path_len >= n &&
		    memcmp(f->path, h.config.exclude[i], n) == 0) {
			prefix = true;
			exact = exact || f->path_len == n;
		}
	}
	if ((excluded && !prefix) || (exact && !excluded))
		abort();
}

/* Walk one call's bytes on a connection's HTTP/2 flow (dir 0 sent, 1
 * received), decoding its header blocks as h2conn.c does. */
static void h2_walk(struct conn *k, int dir, const struct call *c)
{
	struct agile_h2_flow *f = dir == 0 ? &k->walk.out : &k->walk.in;
	struct agile_hpack *d = &k->dec[dir];
	struct agile_h2_cursor cur;
	struct agile_h2_event ev;
	struct agile_h2_plan plan = { 0 };
	uint32_t last = f->last_opened;
	size_t steps = 0;
	bool off = agile__h2_stage(f) == AGILE_H2_OFF;

	if (dir == 0)
		agile__h2_plan(f, c->iov, c->count, c->moved, &plan);
	agile__h2_cursor_init(&cur, c->iov, c->count, c->moved);
	do {
		uint8_t before = d->state;

		agile__h2_next(f, &cur, &ev);
		if (ev.type > AGILE_H2_EV_OFF || cur.done > c->moved ||
		    steps++ > 2 * c->moved + 8 ||
		    (off && ev.type != AGILE_H2_EV_NONE))
			abort();
		switch (ev.type) {
		case AGILE_H2_EV_STREAM_OPEN:
			if (dir != 0 || ev.stream % 2 == 0 ||
			    ev.stream <= last ||
			    ev.frame_at >= (int64_t)c->moved)
				abort();
			last = ev.stream;
			break;
		case AGILE_H2_EV_FRAGMENT:
			if (ev.fragment_len == 0 ||
			    !inside(c, ev.fragment, ev.fragment_len))
				abort();
			agile__hpack_fragment(d, ev.fragment,
			                      ev.fragment_len);
			break;
		case AGILE_H2_EV_HEADERS_END: {
			const struct agile_h2_fields *fields =
				agile__hpack_end(d);

			if (fields != NULL && dir == 1 &&
			    !(ev.flags & AGILE_H2_PUSH))
				check_h2_answer(fields);
			if (fields != NULL && dir == 0)
				check_h2_request(fields);
			break;
		}
		case AGILE_H2_EV_TABLE_SIZE:
			agile__hpack_table_size(&k->dec[1 - dir], ev.value);
			break;
		case AGILE_H2_EV_OFF:
			off = true;
			break;
		default:
			break;
		}
		check_decoder(d, before);
	} while (ev.type != AGILE_H2_EV_NONE);
	if (cur.done != c->moved)
		abort();
	if (dir == 0 && !off && plan.opens > 0 &&
	    (plan.stream == 0 || plan.cut > c->moved))
		abort();
}

static void h2_open(struct conn *k)
{
	k->h2 = true;
	agile__h2_reset(&k->walk, AGILE_H2_CLIENT);
	if (h.hpack) {
		(void)agile__hpack_open(&k->dec[0], agile__nghttp2());
		(void)agile__hpack_open(&k->dec[1], agile__nghttp2());
	}
}

static void conn_end(struct conn *k)
{
	agile__hpack_close(&k->dec[0]);
	agile__hpack_close(&k->dec[1]);
	memset(k, 0, sizeof(*k));
}

/* track.c's after_send for bytes that went: the walker while it follows
 * the connection, then HTTP/2's preface and walk, or the request line. */
static void send_path(struct conn *k, const struct call *c)
{
	const uint8_t *p = c->iov[0].iov_base;
	size_t n = first_len(c);
	bool plain = true;

	/* before_send: both on the bytes offered, whatever goes. */
	if (agile__tls_stage(&k->tls) == AGILE_TLS_OFF &&
	    agile__tls_starts_hello(c->iov, c->count))
		agile__tls_reset(&k->tls); /* STARTTLS, or TLS inside */
	if (!k->h2 && c->iov[0].iov_len > 0 && p[0] == 'P' &&
	    agile__h2_preface(p, c->iov[0].iov_len))
		h2_open(k);
	if (c->moved == 0)
		return;
	if (agile__tls_stage(&k->tls) != AGILE_TLS_OFF) {
		enum agile_tls_send sent = agile__tls_sent(&k->tls, c->iov,
		                                           c->count, c->moved);

		if (sent > AGILE_TLS_SEND_PLAIN)
			abort();
		if (sent < AGILE_TLS_SEND_HELLO)
			return;
		plain = sent == AGILE_TLS_SEND_PLAIN;
	}
	if (k->h2) {
		h2_walk(k, 0, c);
		return;
	}
	if (plain) {
		bool found = false;

		agile__http_request(&k->t, &h.config, p, n);
		for (uint32_t i = 0; i < h.config.exclude_count; i++)
			found = found || memmem(p, n, h.config.exclude[i],
			                        strlen(h.config.exclude[i])) !=
			                 NULL;
		if ((k->t.flags & ~AGILE_FD_EXCLUDED) != 0 ||
		    ((k->t.flags & AGILE_FD_EXCLUDED) && !found))
			abort();
	}
}

static void check_status(const char *p, size_t n, int status)
{
	if (status == 0)
		return;
	if (status < 100 || status > 599 || n < 12 ||
	    memcmp(p, "HTTP/1.", 7) != 0 || p[8] != ' ' ||
	    (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0') != status)
		abort();
}

/* track.c's after_recv for bytes that came. */
static void recv_path(struct conn *k, const struct call *c)
{
	const char *p = c->iov[0].iov_base;
	size_t n = first_len(c);
	enum agile_http_verdict v;
	bool marked;
	int status;

	if (c->moved == 0)
		return;
	if (agile__tls_stage(&k->tls) != AGILE_TLS_OFF) {
		unsigned bits = agile__tls_received(&k->tls, c->iov, c->count,
		                                    c->moved);

		if (bits & ~0x1fu)
			abort();
		if (!(bits & AGILE_TLS_RECV_PLAIN))
			return;
	}
	if (k->h2) {
		h2_walk(k, 1, c);
		return;
	}
	if (agile__http_interim(p, n))
		return; /* the request stays in flight */
	status = agile__http_status(p, n);
	check_status(p, n, status);
	marked = (k->t.flags & AGILE_FD_EXCLUDED) != 0;
	v = agile__http_response(&k->t, &h.config, &h.slot, p, n, NOW_NS,
	                         WALL_NS);
	if (k->t.flags & AGILE_FD_EXCLUDED)
		abort();
	if (marked) {
		if (v != AGILE_HTTP_SKIP)
			abort();
		return;
	}
	switch (v) {
	case AGILE_HTTP_SAMPLE:
	case AGILE_HTTP_SKIP:
		if (status == 429 || status == 503)
			abort();
		break;
	case AGILE_HTTP_REFUSED:
		if (status != 429 && status != 503)
			abort();
		break;
	case AGILE_HTTP_FAILED:
		if (status < 500 || status == 503)
			abort();
		break;
	default:
		abort();
	}
}

/* The socket's own bytes (agile__track_before_send and after_send,
 * after_recv): learning, then nothing for a connection whose plaintext
 * the library hands over. */
static void socket_call(int fd, const struct call *c)
{
	struct conn *k;
	struct agile_tls before;

	if (!tracked(fd))
		return;
	learn(fd);
	k = &h.conn[conn_index(fd)];
	if (k->plain)
		return;
	memcpy(&before, &k->tls, sizeof(before));
	if (!c->recv) {
		enum agile_tls_send guess = agile__tls_classify(
			&k->tls, c->iov, c->count, c->moved);

		if (guess > AGILE_TLS_SEND_PLAIN ||
		    memcmp(&before, &k->tls, sizeof(before)) != 0)
			abort();
		send_path(k, c);
	} else {
		recv_path(k, c);
	}
}

/* The library's plaintext call for session i (tls_plain.c): the entry by
 * SSL_get_fd's descriptor or the table's, then the switch and the
 * ordinary paths. */
static void plain_call(int i, int named_fd, const struct call *c)
{
	int fd = named_fd;
	struct conn *k;

	if (fd == NO_FD)
		fd = agile__tls_sessions_fd(h.slots, h.bits, session_of(i));
	if (!tracked(fd))
		return; /* passed through, record-level */
	if (named_fd == NO_FD && fd != h.expect[i].fd)
		abort();
	k = &h.conn[conn_index(fd)];
	if (!k->plain) {
		/* plaintext_starts in track.c: the walker stops where it is,
		 * and stays off unless the plaintext itself starts TLS (a
		 * proxy's tunnel: send_path). */
		struct agile_tls before;

		memcpy(&before, &k->tls, sizeof(before));
		agile__tls_stop(&k->tls);
		k->plain = true;
		if (agile__tls_stage(&k->tls) != AGILE_TLS_OFF ||
		    agile__tls_flags(&k->tls) !=
		    (agile__tls_flags(&before) & ~AGILE_TLS_TICKET_RULE) ||
		    agile__tls_classify(&k->tls, c->iov, c->count,
		                        c->moved) != AGILE_TLS_SEND_PLAIN)
			abort();
	}
	if (c->recv)
		recv_path(k, c);
	else
		send_path(k, c);
}

static void setup(uint8_t first)
{
	static const unsigned sizes[] = { AGILE_TLS_SESSIONS_BITS, 4, 5, 6 };

	memset(&h, 0, offsetof(__typeof__(h), config));
	h.bits = sizes[first & 3];
	h.hpack = (first & 4) != 0;
	h.named = -1;
	for (int i = 0; i < SESSIONS; i++)
		h.expect[i].fd = -1;
	memset(&h.config, 0, sizeof(h.config));
	h.config.proto = AGILE_PROTO_HTTP;
	h.config.exclude_count = 2;
	strcpy(h.config.exclude[0], "/health");
	strcpy(h.config.exclude[1], "/static/");
	memset(&h.slot, 0, sizeof(h.slot));
	h.slot.limiter.bucket.interval_ns = 10000000;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	setup(data[0]);
	data++;
	size--;
	while (size > 0) {
		uint8_t op = *data++;
		int what = op & 7, a = (op >> 3 & 1) * 16 + (op >> 4);
		int fd = NO_FD;
		struct call c;

		size--;
		if (what == OP_CONNECT || what == OP_CLOSE ||
		    what == OP_SOCKET || what == OP_PLAIN) {
			if (size == 0)
				break;
			fd = what <= OP_CLOSE ? fd_of(*data & 31) : fd_of(*data);
			data++;
			size--;
		}
		switch (what) {
		case OP_CONNECT:
		case OP_CLOSE: {
			struct conn *k = &h.conn[conn_index(fd)];

			conn_end(k);
			k->tracked = what == OP_CONNECT;
			agile__tls_reset(&k->tls);
			for (int i = 0; i < SESSIONS; i++)
				if (h.expect[i].fd == fd)
					h.expect[i].may_lose = true;
			break;
		}
		case OP_HANDSHAKE:
			agile__tls_sessions_forget(h.slots, h.bits,
			                           session_of(a));
			h.expect[a].fd = -1;
			h.named = a;
			break;
		case OP_LEARNING:
			h.named = a;
			break;
		case OP_RETURN:
			h.named = -1;
			break;
		case OP_SOCKET:
		case OP_PLAIN:
			if (!parse_call(&data, &size, &c))
				goto done;
			if (what == OP_SOCKET)
				socket_call(fd, &c);
			else
				plain_call(a, fd, &c);
			call_free(&c);
			break;
		default:
			break;
		}
		check_table();
	}
done:
	for (int i = 0; i < CONNS; i++)
		conn_end(&h.conn[i]);
	return 0;
}
