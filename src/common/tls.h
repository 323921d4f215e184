/*
 * tls.h - what a client's TLS connection looks like from its record
 * headers, so that a request means an application request and not a
 * handshake flight or an alert.  Nothing is decrypted: the walker reads the
 * 5-byte header of each record the client sends and receives (type,
 * version, length) and, of the client's plaintext handshake records, the
 * 4-byte handshake header that names a ClientHello.  It keeps its place
 * across partial writes, reads and iovec arrays, and gives up (stage
 * AGILE_TLS_OFF: the byte-level rules of track.h apply from there on) at
 * the first header that is not a TLS record's, or at bytes it cannot see.
 *
 * What is recognised from the headers and the order of the flights:
 *   - A connection is TLS when the first bytes the client sends are a
 *     ClientHello in one record: type 22, version 3.0 to 3.4, handshake
 *     type 1 whose length fills the record.  A plain connection becomes TLS
 *     where the client sends such a record later (SMTP's, IMAP's or POP3's
 *     STARTTLS, MySQL's SSL request; a proxy's tunnel and PostgreSQL's
 *     SSLRequest, which track.c recognises as setting up): the caller asks
 *     agile__tls_starts_hello and starts the walker afresh.
 *   - The server's first record answers the ClientHello.  The version is
 *     TLS 1.3 when the server sends application-data records (type 23, its
 *     encrypted handshake) while the client has sent nothing but
 *     ClientHellos and change_cipher_spec; TLS 1.2 and older encrypt nothing
 *     before the client's Finished, which is a handshake record (type 22).
 *   - TLS 1.2: every type-23 record the client sends is application data.
 *   - Alerts (type 21) are never requests: close_notify before a close is a
 *     goodbye.
 * What needs a heuristic (each fails towards more grants, never fewer):
 *   - TLS 1.3's client Finished is encrypted, as a type-23 record.  The
 *     client's type-23 records after the server's encrypted flight are its
 *     handshake (Certificate, CertificateVerify under client authentication)
 *     up to and including the first of a Finished's size, 45, 53 or 69
 *     bytes (a 4-byte header, a 32- or 48-byte MAC, the inner type and a 16-
 *     or 8-byte AEAD tag; no padding, as OpenSSL, BoringSSL, NSS, Go and
 *     rustls send it).  If none has been seen when the server's next record
 *     arrives, the flight is taken as over there, and the connection's next
 *     request takes a grant of its own (AGILE_TLS_RECV_LATE_FINISH).
 *   - TLS 1.3's close_notify is encrypted too: a type-23 record of 19 (or,
 *     with an 8-byte tag, 11) bytes is taken as a goodbye.  If the server
 *     answers one with application data it was a request after all: the
 *     connection drops the rule and track.c charges the missed grant
 *     (AGILE_TLS_RECV_GOODBYE_ANSWERED).
 *   - TLS 1.3 servers answer the client's Finished with NewSessionTickets,
 *     which usually arrive after the first request went out.  For the first
 *     request of a TLS 1.3 connection (AGILE_TLS_TICKET_RULE) track.c ends
 *     the round trip at the first record that is not as long as the first
 *     record after the request (a server's tickets are as long as each
 *     other), when one comes before the client's next send, and otherwise
 *     at the first record.
 *   - Early data (0-RTT, type 23 before the server's first record) and a
 *     ClientHello split over records are not followed: AGILE_TLS_OFF.
 *
 * A receive is classified twice over.  agile__tls_received returns the
 * set of AGILE_TLS_RECV_* facts its records carried, because one read may
 * hold several records and a read split in pieces must carry the same
 * facts as the whole (the union of the pieces': tests/fuzz/fuzz_tls.c
 * checks it).  agile__tls_read_verdict makes of that set the read's one
 * verdict (read_verdict.h), the one the receive path dispatches on; the
 * two facts that can come beside it, LATE_FINISH and GOODBYE_ANSWERED,
 * are not verdicts of their own but corrections of what the walker took
 * for a send earlier (a client flight's end, a goodbye), and stay bits for
 * the caller to apply with whatever the verdict is.
 *
 * Pure: no system call, no clock; the caller passes the bytes.  Fields are
 * read and written with relaxed atomics (a TLS library never drives one
 * connection from two threads at once, but a plain socket's detection must
 * not race with a reader thread's look at the stage).
 */
#ifndef AGILE_PRELOAD_TLS_H
#define AGILE_PRELOAD_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "read_verdict.h"

/* Where the connection is, as far as its records tell. */
enum agile_tls_stage {
	AGILE_TLS_UNKNOWN = 0, /* no complete first record sent yet */
	AGILE_TLS_OFF,         /* not TLS, or no longer followed */
	AGILE_TLS_HELLO,       /* ClientHello sent; the server has not answered */
	AGILE_TLS_HANDSHAKE,   /* the server answered; TLS 1.2 or older so far */
	AGILE_TLS_FINISHING,   /* TLS 1.3: the client's encrypted flight */
	AGILE_TLS_APP          /* application data */
};

#define AGILE_TLS_V13 0x001          /* TLS 1.3 */
#define AGILE_TLS_NOT_V13 0x02       /* the client sent a plaintext handshake
                                        record that is not a ClientHello */
#define AGILE_TLS_FLIGHT_SENT 0x04   /* FINISHING: a type-23 record went out */
#define AGILE_TLS_SERVER_APP 0x08    /* APP: the server sent type-23 data */
#define AGILE_TLS_REQUESTED 0x10     /* APP: the client sent a request */
#define AGILE_TLS_TICKET_RULE 0x20   /* the first request of a TLS 1.3
                                        connection went out before any
                                        server data: track.c ends its round
                                        trip by the ticket rule, and clears
                                        this when it has */
#define AGILE_TLS_GOODBYE_SENT 0x40  /* a close_notify-sized record went out
                                        and has not been answered */
#define AGILE_TLS_NO_GOODBYE 0x80    /* one was answered: no more goodbyes by
                                        size on this connection */

/* The walker's place in one direction's bytes. */
struct agile_tls_stream {
	uint32_t skip;   /* body bytes of the current record still to come */
	uint8_t have;    /* bytes of the next record's head in head[] */
	uint8_t head[9]; /* its 5-byte header, then (client side) up to 4 bytes
	                    of its body: a handshake message's header */
};

struct agile_tls {
	uint8_t stage;       /* enum agile_tls_stage */
	uint16_t flags;      /* AGILE_TLS_* */
	uint16_t ticket_len; /* the ticket rule: the length of the server's
	                        first record after the request; later records
	                        as long are taken for more tickets */
	struct agile_tls_stream out; /* client to server */
	struct agile_tls_stream in;  /* server to client */
};

/* What a send carries, ordered so the larger wins when a send carries
 * several records. */
enum agile_tls_send {
	AGILE_TLS_SEND_NONE = 0, /* handshake, change_cipher_spec, heartbeat, or
	                            the rest of a record already counted */
	AGILE_TLS_SEND_GOODBYE,  /* an alert, or TLS 1.3's close_notify by size:
	                            no grant, no request */
	AGILE_TLS_SEND_HELLO,    /* the ClientHello: the connection's grant is
	                            waited for, and the handshake starts */
	AGILE_TLS_SEND_REQUEST,  /* application data: a request */
	AGILE_TLS_SEND_PLAIN     /* not TLS, not yet known, or no longer
	                            followed: the byte-level rules */
};

/* What a receive carried: a set of these bits. */
#define AGILE_TLS_RECV_HELLO_ANSWER 0x01 /* the server's first record: the
                                            handshake's answer, no sample */
#define AGILE_TLS_RECV_RESPONSE 0x02     /* application data (a response);
                                            under the ticket rule, not a
                                            record as long as the first */
#define AGILE_TLS_RECV_LATE_FINISH 0x04  /* TLS 1.3's Finished was not
                                            recognised by size; the client's
                                            flight is taken as over here */
#define AGILE_TLS_RECV_GOODBYE_ANSWERED 0x08 /* application data after a
                                            close_notify-sized record: it
                                            was a request */
#define AGILE_TLS_RECV_PLAIN 0x10        /* not TLS, or no longer followed */

/* The facts of a receive that are not its verdict but correct an earlier
 * send's (see the opening comment): the caller applies them beside it. */
#define AGILE_TLS_RECV_CORRECTIONS (AGILE_TLS_RECV_LATE_FINISH | \
                                    AGILE_TLS_RECV_GOODBYE_ANSWERED)

/* The verdict on a receive whose facts are `bits`, without
 * AGILE_TLS_RECV_PLAIN (a receive with it is not the walker's to judge):
 * the server's first record is the handshake's answer, AGILE_READ_SETUP,
 * even with application data behind it in the same read (the caller then
 * applies AGILE_TLS_RECV_RESPONSE after the setup); otherwise application
 * data is
 * AGILE_READ_RESPONSE, and anything else (handshake records, tickets,
 * alerts, the rest of a record) AGILE_READ_DATA. */
static inline enum agile__read_verdict agile__tls_read_verdict(unsigned bits)
{
	if (bits & AGILE_TLS_RECV_HELLO_ANSWER)
		return AGILE_READ_SETUP;
	if (bits & AGILE_TLS_RECV_RESPONSE)
		return AGILE_READ_RESPONSE;
	return AGILE_READ_DATA;
}

/* The stage and the flags, loaded relaxed. */
static inline uint8_t agile__tls_stage(const struct agile_tls *tls)
{
	return __atomic_load_n(&tls->stage, __ATOMIC_RELAXED);
}

static inline uint16_t agile__tls_flags(const struct agile_tls *tls)
{
	return __atomic_load_n(&tls->flags, __ATOMIC_RELAXED);
}

/* Start following a new connection. */
void agile__tls_reset(struct agile_tls *tls);

/* The program's TLS library hands over the connection's plaintext
 * (preload/hooks/tls_plain.h): the walker stops where it is (AGILE_TLS_OFF)
 * and drops the ticket rule, its other flags kept.  The caller ends a
 * round trip the rule held first. */
void agile__tls_stop(struct agile_tls *tls);

/* Are the 9 bytes at p a ClientHello record's header and handshake
 * header, the record's length filled by the message? */
bool agile__tls_hello_record(const uint8_t *p);

/*
 * Does a send of iov[0..count) begin with a whole ClientHello record's
 * header and handshake header, in its first 9 bytes (tls.c checks them as
 * the walker checks a connection's first record)?  Asked of each send on a
 * plain connection, so the test of the first byte is inline: 0x16, the
 * handshake type, is no printable character, and a binary protocol that
 * sends it still has to match the eight bytes after it.
 */
static inline bool agile__tls_starts_hello(const struct iovec *iov,
                                           int count)
{
	const uint8_t *p;

	if (iov == NULL || count < 1 || iov[0].iov_len < 9 ||
	    (p = iov[0].iov_base) == NULL || p[0] != 22)
		return false;
	return agile__tls_hello_record(p);
}

/* What sending the first `len` bytes of iov[0..count) would carry, without
 * moving the walker: asked before the call, to know whether it waits for a
 * grant.  iov == NULL (the bytes are not visible) is AGILE_TLS_SEND_PLAIN. */
enum agile_tls_send agile__tls_classify(const struct agile_tls *tls,
                                        const struct iovec *iov, int count,
                                        size_t len);

/* The first `len` bytes of iov[0..count) were sent: move the walker, and
 * return what they carried. */
enum agile_tls_send agile__tls_sent(struct agile_tls *tls,
                                    const struct iovec *iov, int count,
                                    size_t len);

/* The first `len` bytes of iov[0..count) were received: move the walker,
 * and return the AGILE_TLS_RECV_* bits of what they carried. */
unsigned agile__tls_received(struct agile_tls *tls, const struct iovec *iov,
                             int count, size_t len);

#endif /* AGILE_PRELOAD_TLS_H */
