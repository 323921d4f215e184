/*
 * fuzz_tls.c - libFuzzer harness for the TLS record walker
 * (src/common/tls.c), which reads the record headers a server sends, and the
 * client's, of every TLS connection to a rule's destination.
 *
 * The input is a script of operations, each:
 *     op      1 byte: bits 0-1 what (0 the client sends, 1 the client
 *             receives, 2 a send is classified and not made, 3 the walker
 *             is copied, as a dup() shares it, and the copy carries on);
 *             bits 2-4 the number of iovecs less one; bits 5-7 how much
 *             of the bytes the call moved, in eighths (0: all of them,
 *             else a short write or read of k/8)
 *     length  2 bytes, big-endian (cut to what the input has left)
 *     bytes   that many
 *     splits  one byte per iovec boundary: where it falls, modulo
 *             length + 1 (so iovecs may be empty)
 * Every iovec is its own allocation of exactly its size, so the walker
 * reading past one is caught by AddressSanitizer.  The seeds in
 * corpus/tls/ are real exchanges (OpenSSL's s_client and s_server, curl,
 * Python's ssl) recorded one read or write per operation.
 *
 * Besides the sanitizers' own checks, the harness aborts when:
 *   - a stage, a flag or a result is not one tls.h defines, or a stream's
 *     place is impossible (more head bytes than its header needs, a body
 *     to skip longer than a record);
 *   - the stage moves backwards (UNKNOWN, HELLO, HANDSHAKE, FINISHING,
 *     APP in that order), or leaves OFF;
 *   - a flag is set in a stage that cannot have it (TLS 1.3's flags
 *     before the server's encrypted flight, the ticket rule without a
 *     request);
 *   - a result disagrees with the stage: a send is AGILE_TLS_SEND_PLAIN
 *     exactly when the walker is off or the first record is not whole, a
 *     receive carries AGILE_TLS_RECV_PLAIN exactly when the walker is off;
 *   - classifying a send changes the walker, or says less than the send
 *     then says (classify also judges a record whose header is cut);
 *   - the differential: a second walker is fed the same byte streams with
 *     each run of same-direction calls made into one call of one iovec.
 *     The walker promises (tls.h) to keep its place across partial
 *     writes, reads and iovec arrays, so at every change of direction the
 *     two must agree on the stage, the flags and the ticket length, and,
 *     unless the walker gave up, on each stream's place; and over each run
 *     they must agree on what it carried, except where tls.h says a
 *     result depends on the pieces: a send before the first record is
 *     whole is AGILE_TLS_SEND_PLAIN, and giving up returns that alone.
 *
 * tests/fuzz/replay.c turns this file into a program that replays the
 * committed corpus in every `make check`.
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tls.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define OP_SEND 0
#define OP_RECV 1
#define OP_CLASSIFY 2
#define OP_DUP 3
#define IOV_MAX_FUZZ 8
#define RECORD_MAX (16384 + 2048)
#define FLAGS_ALL 0xff
#define RECV_ALL 0x1f

/* The order a followed connection's stage moves in. */
static int rank(uint8_t stage)
{
	switch (stage) {
	case AGILE_TLS_UNKNOWN: return 0;
	case AGILE_TLS_HELLO: return 1;
	case AGILE_TLS_HANDSHAKE: return 2;
	case AGILE_TLS_FINISHING: return 3;
	case AGILE_TLS_APP: return 4;
	case AGILE_TLS_OFF: return 5;
	default: abort();
	}
}

static void check_stream(const struct agile_tls_stream *st)
{
	/* A head is acted on, and emptied, as soon as it is whole. */
	if (st->have >= sizeof(st->head) || st->skip > RECORD_MAX)
		abort();
	/* A body is skipped only once its head was whole and acted on. */
	if (st->skip > 0 && st->have != 0)
		abort();
}

static void check_walker(const struct agile_tls *tls)
{
	uint8_t stage = agile__tls_stage(tls);
	uint16_t flags = agile__tls_flags(tls);

	rank(stage);
	if (flags & ~FLAGS_ALL)
		abort();
	if (stage == AGILE_TLS_OFF)
		return;
	check_stream(&tls->out);
	check_stream(&tls->in);
	/* Nothing but the first record is read before it is whole. */
	if (stage == AGILE_TLS_UNKNOWN &&
	    (flags != 0 || tls->in.have != 0 || tls->in.skip != 0 ||
	     tls->out.skip != 0))
		abort();
	/* TLS 1.3 is told by the server's encrypted flight, after which the
	 * stage is FINISHING or APP. */
	if ((flags & AGILE_TLS_V13) && rank(stage) < rank(AGILE_TLS_FINISHING))
		abort();
	if ((flags & (AGILE_TLS_TICKET_RULE | AGILE_TLS_GOODBYE_SENT |
	              AGILE_TLS_NO_GOODBYE)) && !(flags & AGILE_TLS_V13))
		abort();
	if ((flags & AGILE_TLS_TICKET_RULE) && !(flags & AGILE_TLS_REQUESTED))
		abort();
	if ((flags & AGILE_TLS_V13) && (flags & AGILE_TLS_NOT_V13))
		abort();
	if ((flags & AGILE_TLS_REQUESTED) && stage != AGILE_TLS_APP)
		abort();
	if ((flags & AGILE_TLS_FLIGHT_SENT) && !(flags & AGILE_TLS_V13))
		abort();
	if (tls->ticket_len != 0 && !(flags & AGILE_TLS_TICKET_RULE))
		abort();
}

/* The stage moved forwards, or to OFF, and never out of OFF. */
static void check_moved(uint8_t before, uint8_t after)
{
	if (before == AGILE_TLS_OFF && after != AGILE_TLS_OFF)
		abort();
	if (rank(after) < rank(before))
		abort();
}

static bool same_place(const struct agile_tls *a, const struct agile_tls *b)
{
	if (agile__tls_stage(a) != agile__tls_stage(b) ||
	    agile__tls_flags(a) != agile__tls_flags(b) ||
	    a->ticket_len != b->ticket_len)
		return false;
	if (agile__tls_stage(a) == AGILE_TLS_OFF)
		return true; /* where in a header it gave up depends on the
		                pieces: a header is checked as it is gathered */
	return memcmp(&a->out, &b->out, sizeof(a->out)) == 0 &&
	       memcmp(&a->in, &b->in, sizeof(a->in)) == 0;
}

/* One call's iovecs, each in an allocation of its own. */
struct call {
	struct iovec iov[IOV_MAX_FUZZ];
	int count;
	size_t total; /* bytes in the iovecs */
	size_t moved; /* bytes the call moved, the first of them */
};

static void call_free(struct call *c)
{
	for (int i = 0; i < c->count; i++)
		free(c->iov[i].iov_base);
}

/* The differential's walker, fed each run of same-direction calls as one
 * buffer, and what the run carried as the walker under test saw it. */
struct reference {
	struct agile_tls tls;
	int dir;        /* OP_SEND or OP_RECV: the run's direction, -1 none */
	uint8_t *bytes; /* the run's bytes */
	size_t len, cap;
	uint8_t start;  /* the walker's stage as the run began */
	unsigned sent;  /* the largest send result of the run */
	unsigned recv;  /* the receive bits of the run */
};

static void reference_append(struct reference *r, const struct call *c)
{
	size_t left = c->moved;

	if (r->len + left > r->cap) {
		size_t cap = (r->len + left) * 2 + 64;
		uint8_t *bigger = realloc(r->bytes, cap);

		if (bigger == NULL)
			abort();
		r->bytes = bigger;
		r->cap = cap;
	}
	for (int i = 0; i < c->count && left > 0; i++) {
		size_t n = c->iov[i].iov_len < left ? c->iov[i].iov_len : left;

		memcpy(r->bytes + r->len, c->iov[i].iov_base, n);
		r->len += n;
		left -= n;
	}
}

/* End the run: feed it to the reference in one call and compare. */
static void reference_flush(struct reference *r, const struct agile_tls *tls)
{
	uint8_t *copy;
	struct iovec one;

	if (r->dir < 0)
		return;
	copy = malloc(r->len > 0 ? r->len : 1);
	if (copy == NULL)
		abort();
	if (r->len > 0)
		memcpy(copy, r->bytes, r->len);
	one.iov_base = copy;
	one.iov_len = r->len;
	if (r->dir == OP_SEND) {
		unsigned whole = agile__tls_sent(&r->tls, &one, 1, r->len);
		uint8_t after = agile__tls_stage(&r->tls);

		/* Pieces of a first record are each PLAIN (tls.h), and a
		 * walker that gave up says PLAIN alone; otherwise the run
		 * carried the same records either way. */
		if (r->start != AGILE_TLS_UNKNOWN && after != AGILE_TLS_OFF &&
		    r->len > 0 && whole != r->sent)
			abort();
	} else {
		unsigned whole = agile__tls_received(&r->tls, &one, 1, r->len);

		if (agile__tls_stage(&r->tls) != AGILE_TLS_OFF &&
		    whole != r->recv)
			abort();
	}
	free(copy);
	if (!same_place(tls, &r->tls))
		abort();
	r->dir = -1;
	r->len = 0;
}

static void reference_add(struct reference *r, const struct agile_tls *tls,
                          int dir, const struct call *c)
{
	if (r->dir != dir) {
		reference_flush(r, tls);
		r->dir = dir;
		r->start = agile__tls_stage(&r->tls);
		r->sent = 0;
		r->recv = 0;
	}
	reference_append(r, c);
}

/* Read one operation's bytes and splits into c; false at the end. */
static bool parse_call(const uint8_t **data, size_t *size, uint8_t op,
                       struct call *c)
{
	size_t len, cut[IOV_MAX_FUZZ + 1];
	const uint8_t *bytes;
	int count = 1 + (op >> 2 & 7);
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

		if (*size > 0) {
			at = **data % (len + 1);
			(*data)++;
			(*size)--;
		}
		/* Insertion into the sorted cuts. */
		int j = i;
		while (j > 1 && cut[j - 1] > at) {
			cut[j] = cut[j - 1];
			j--;
		}
		cut[j] = at;
	}
	c->count = count;
	c->total = len;
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct agile_tls tls;
	struct reference ref = { .dir = -1 };

	agile__tls_reset(&tls);
	agile__tls_reset(&ref.tls);
	while (size > 0) {
		uint8_t op = *data++;
		struct call c;
		struct agile_tls before;

		size--;
		if ((op & 3) == OP_DUP) {
			/* A duplicate shares the walker; a copy that carries on
			 * is the same walker. */
			struct agile_tls copy;

			memcpy(&copy, &tls, sizeof(copy));
			if (!same_place(&copy, &tls))
				abort();
			memcpy(&tls, &copy, sizeof(tls));
			continue;
		}
		if (!parse_call(&data, &size, op, &c))
			break;
		memcpy(&before, &tls, sizeof(before));
		if ((op & 3) == OP_CLASSIFY) {
			unsigned guess = agile__tls_classify(&tls, c.iov,
			                                     c.count, c.moved);
			struct agile_tls copy;
			unsigned sent;

			if (guess > AGILE_TLS_SEND_PLAIN ||
			    memcmp(&before, &tls, sizeof(tls)) != 0)
				abort();
			/* What the send would then say is no more than the
			 * guess: a cut header's record is guessed by type.
			 * track.c asks only past the first record (before
			 * it, every send may be a request). */
			memcpy(&copy, &tls, sizeof(copy));
			sent = agile__tls_sent(&copy, c.iov, c.count, c.moved);
			if (agile__tls_stage(&before) != AGILE_TLS_UNKNOWN &&
			    sent > guess)
				abort();
			if (agile__tls_classify(&tls, NULL, 0, c.moved) !=
			    AGILE_TLS_SEND_PLAIN)
				abort();
		} else if ((op & 3) == OP_SEND) {
			unsigned guess = agile__tls_classify(&tls, c.iov,
			                                     c.count, c.moved);
			unsigned r = agile__tls_sent(&tls, c.iov, c.count,
			                             c.moved);
			uint8_t after = agile__tls_stage(&tls);

			if (r > AGILE_TLS_SEND_PLAIN ||
			    (agile__tls_stage(&before) != AGILE_TLS_UNKNOWN &&
			     r > guess))
				abort();
			if ((r == AGILE_TLS_SEND_PLAIN) !=
			    (after == AGILE_TLS_OFF ||
			     after == AGILE_TLS_UNKNOWN))
				abort();
			reference_add(&ref, &before, OP_SEND, &c);
			if (r > ref.sent)
				ref.sent = r;
		} else {
			unsigned r = agile__tls_received(&tls, c.iov, c.count,
			                                 c.moved);
			uint8_t after = agile__tls_stage(&tls);

			if (r & ~RECV_ALL)
				abort();
			if (!!(r & AGILE_TLS_RECV_PLAIN) !=
			    (after == AGILE_TLS_OFF))
				abort();
			reference_add(&ref, &before, OP_RECV, &c);
			ref.recv |= r;
		}
		check_moved(agile__tls_stage(&before), agile__tls_stage(&tls));
		check_walker(&tls);
		call_free(&c);
	}
	reference_flush(&ref, &tls);
	free(ref.bytes);
	return 0;
}
