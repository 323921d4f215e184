/*
 * read_verdict.h - what one read on a client connection means for the
 * request in flight on it: the one value that the protocol readers (tls.h's
 * record walker, http.h's interim responses, http2.h's control frames) and
 * the preload's receive path (preload/track/recv.c) classify a read as, and
 * that recv.c looks its handler up by.
 *
 * A reader says only what its bytes are; whether a request is in flight, a
 * tunnel is being set up or the connect is still pending is the caller's to
 * add.  The HTTP/2 walker (h2walk.h) classifies frame by frame, stream by
 * stream, and records each stream's answer itself: a read it walked is
 * AGILE_READ_NONE for the connection.  The goodbyes of goodbye.h are sends,
 * never reads, and have no verdict here.
 */
#ifndef AGILE_COMMON_READ_VERDICT_H
#define AGILE_COMMON_READ_VERDICT_H

enum agile__read_verdict {
	AGILE_READ_NONE = 0,     /* nothing to record: a failure that is not
	                            the connection's (EAGAIN, EINTR), a read of
	                            nothing, a peek whose bytes come again, or
	                            bytes a walker recorded itself */
	AGILE_READ_DATA,         /* bytes that answer nothing by themselves:
	                            the rest of a response, TLS records that
	                            carry no answer (the handshake, tickets,
	                            alerts); the connection is up */
	AGILE_READ_SETUP,        /* the answer to the connection's setting up,
	                            not to a request: the server's first TLS
	                            record, a proxy's answer in its handshake */
	AGILE_READ_INTERIM,      /* answers no request while one is in flight:
	                            HTTP's 1xx, HTTP/2's SETTINGS, PING,
	                            PRIORITY and WINDOW_UPDATE; the request
	                            stays in flight */
	AGILE_READ_RESPONSE,     /* the first bytes of the answer to the
	                            request in flight (for a reader: bytes that
	                            may be one) */
	AGILE_READ_TRUNCATED,    /* an end of file or a reset: the request in
	                            flight, if any, got no answer */
	AGILE_READ_UNREACHABLE,  /* the connect failed (refused, no route), as
	                            the first read after it tells */
	AGILE_READ_VERDICTS      /* their number: the size of a table of them */
};

#endif /* AGILE_COMMON_READ_VERDICT_H */
