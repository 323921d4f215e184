/*
 * tunnel.c - a connection's traffic that is not yet its requests: the
 * setup of a tunnel through a proxy (HTTP CONNECT, SOCKS 4 and 5,
 * PostgreSQL's SSLRequest) and TLS started on a plain connection.
 */
#include "config.h"

#include <string.h>

#include "track_internal.h"

/*
 * Tunnels through a proxy.  A program whose traffic goes through a proxy
 * connects to the proxy, asks it for a tunnel to the destination and then
 * speaks to the destination through it, usually TLS.  Taken as ordinary
 * requests, the proxy's handshake and then each flight of the tunnelled TLS
 * handshake took a grant of its own and gave a sample of the proxy's or
 * the handshake's round trip, and TLS's close_notify, unrecognised, was a
 * truncated request: curl through an HTTP proxy, a connection per request,
 * reached the server at 2.5/s at floor=max=10, with three sub-millisecond
 * samples and one truncation a request (through a SOCKS 5 proxy, 2.0/s and
 * four samples).  The proxy's handshake is setting up, like the TCP
 * handshake: its first message takes the connection's grant, the rest
 * ride on it, and none of its answers is a sample (AGILE_FD_TUNNEL; see
 * agile__track_after_recv).  A ClientHello sent after it starts the tunnel:
 * the TLS walker starts over, so that the handshake is followed and the
 * first request rides on the connection's grant, as on a direct
 * connection.  The tunnel is told by that ClientHello rather than by the
 * proxy's answer, which curl reads a byte at a time: a client sends one
 * only into an open tunnel.  Whatever else the client sends first after
 * the handshake (a plain protocol through the tunnel, a CONNECT again after
 * a 407) rides on the connection's grant too, and the requests after it
 * are ordinary ones.  PostgreSQL's SSLRequest, which asks the server
 * whether it speaks TLS before anything else, is such a handshake of one
 * exchange: three psql sessions over TLS gave 15 samples, and give the 6
 * of three plain ones now.
 */

/* Does a request open a tunnel: an HTTP CONNECT, or, as the connection's
 * first bytes, a SOCKS 5 greeting (version, count, that many methods), a
 * SOCKS 4 request (version, command, port, address, user id, NUL) or
 * PostgreSQL's SSLRequest (length 8, code 80877103), which libpq sends
 * first whenever it may use TLS and which the server answers with one
 * byte?  The binary forms are short, so they count only first, where a
 * protocol that happened to match would lose one sample. */
bool agile__track_opens_tunnel(const uint8_t *p, size_t n, bool first)
{
	if (n >= 8 && memcmp(p, "CONNECT ", 8) == 0)
		return true;
	if (!first || n < 3)
		return false;
	if (n == 8 && memcmp(p, "\0\0\0\x08\x04\xd2\x16\x2f", 8) == 0)
		return true;
	if (p[0] == 5)
		return p[1] >= 1 && n == 2 + (size_t)p[1];
	return p[0] == 4 && (p[1] == 1 || p[1] == 2) && n >= 9 &&
	       p[n - 1] == 0;
}

/* Is iov[0] the rest of a SOCKS 5 handshake: a username and password
 * (RFC 1929: version 1, length and name, length and password) or the
 * request (version 5, command, 0, address type and address, port)? */
static bool socks_setup(const struct iovec *iov, int count)
{
	const uint8_t *p = count > 0 && iov != NULL ? iov[0].iov_base : NULL;
	size_t n = p != NULL ? iov[0].iov_len : 0;

	if (n >= 3 && p[0] == 1 && (size_t)p[1] + 3 <= n)
		return n == (size_t)p[1] + 3 + p[2 + p[1]];
	if (n < 7 || p[0] != 5 || p[1] < 1 || p[1] > 3 || p[2] != 0)
		return false;
	return (p[3] == 1 && n == 10) || (p[3] == 4 && n == 22) ||
	       (p[3] == 3 && n == 7 + (size_t)p[4]);
}

/* The client sends again on a connection setting up a tunnel, the last
 * answer read: the request state this send goes on with.  The rest of the
 * proxy's handshake and the first message through the tunnel ride on the
 * connection's grant; a ClientHello also restarts the TLS walker. */
uint8_t agile__track_tunnel_send(struct agile_fd *t, const struct iovec *iov,
                                 int count, uint8_t request)
{
	struct agile_tls fresh;
	uint8_t expected = request;
	bool hello = false;

	if (!socks_setup(iov, count)) {
		__atomic_fetch_and(&t->flags, (uint8_t)~AGILE_FD_TUNNEL,
		                   __ATOMIC_ACQ_REL);
		agile__tls_reset(&fresh);
		hello = agile__tls_classify(&fresh, iov, count,
		                            iov_total(iov, count)) ==
		        AGILE_TLS_SEND_HELLO;
	}
	if (!__atomic_compare_exchange_n(&t->request, &expected,
	                                 AGILE_REQ_GRANTED, false,
	                                 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return expected;
	if (hello)
		agile__tls_reset(&t->tls);
	/* grant_ns is 0: the handshake's first message waited for it. */
	return AGILE_REQ_GRANTED;
}

/*
 * TLS started on a plain connection: the client sends a ClientHello after
 * exchanges of the protocol's own (SMTP's, IMAP's or POP3's STARTTLS,
 * MySQL's SSL request, LDAP's StartTLS, or TLS through a tunnel the
 * preload did not recognise).  The walker decided at the connection's
 * first bytes that it was not TLS, and counted the TLS that followed byte
 * by byte: the ClientHello a request whose answer, the server's handshake
 * flight, was a sample, and the client's Finished another request with a
 * grant of its own (smtplib, STARTTLS and 10 NOOPs: 15 samples and 15
 * grants a session with TLS 1.3, 16 and 16 with TLS 1.2, for 14 commands).
 * The walker starts afresh at the ClientHello, before it is sent, so the
 * server's answer cannot be read by another thread first: from there the
 * connection is followed as one that began with it.  The ClientHello takes
 * a grant as the next request would (none under pace=connect), or joins
 * the request in flight (MySQL's SSL request is not answered); the
 * handshake's answer ends that request without a sample; the first
 * request inside TLS rides on its grant (tests/preload/starttls.sh: 14
 * and 14).  The plain exchanges before it stay ordinary requests: that
 * STARTTLS was setting up is known only once the ClientHello comes, after
 * its answer was sampled.  Bytes of another protocol that only look like
 * a ClientHello (0x16, 3, a version up to 4, a length, 1, and a 3-byte
 * length 4 short of the first) are still counted as the request they are:
 * the walker gives up at the server's answer, which is no TLS record, and
 * that answer is the request's sample, as on any plain connection.
 */
void agile__track_start_tls(struct agile_fd *t)
{
	agile__tls_reset(&t->tls);
}
