/*
 * close.c - the end of a matched socket and its copies: shutdown() and
 * close() truncate the request in flight and release what the connection
 * holds; dup(), dup2() and dup3() hand the socket's grant and request to
 * the new number, which stdio may then use unseen.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "agile.h"
#include "atomics.h"
#include "clock.h"
#include "destinations.h"
#include "h2conn.h"
#include "inbound.h"
#include "resilience_hook.h"
#include "symbols.h"
#include "track.h"
#include "track_internal.h"

void agile__track_shutdown(struct agile_fd *t, int how)
{
	int saved = errno;

	/* SHUT_WR after a request is how HTTP/1.0 clients and netcat say
	 * "that was all": the response is still coming. */
	if (load8(&t->flags) & AGILE_FD_INBOUND) {
		errno = saved;
		return;
	}
	agile__enter();
	tls_answer_held(t, 0);
	if (how == SHUT_RD || how == SHUT_RDWR)
		agile__track_truncate_request(t);
	agile__leave();
	errno = saved;
}

void agile__track_close(int fd, struct agile_fd *t)
{
	int saved = errno;

	agile__enter();
	/* An unwaited grant is simply spent: the connection was made (the
	 * downstream saw it), and sleeping in close() would only stall the
	 * program, e.g. when it drops the loser of a happy-eyeballs race. */
	if (load8(&t->flags) & AGILE_FD_INBOUND) {
		agile__inbound_close(t); /* a listener's connection */
	} else {
		tls_answer_held(t, 0);
		agile__track_truncate_request(t);
	}
	agile__resilience_close(t); /* its permit, its breaker call */
	agile__h2conn_release(t, agile__now_ns(), agile__track_h2_ended);
	agile__fd_untrack(fd);
	agile__leave();
	errno = saved;
}

/*
 * A socket duplicated onto 0, 1 or 2 is written and read through stdin,
 * stdout and stderr, stdio's streams, inside libc where no hook sees it,
 * or by a program exec()ed next that does not know it: its pending grant is
 * waited for here, as at fdopen().  bash runs `echo … >/dev/tcp/HOST/PORT`
 * as connect(), dup2() onto 1, a write by stdio, close(): the grant taken
 * at the connect was never waited for, and at floor=max=5 twenty such
 * connections took 0.1 s (tests/preload/bash_tcp.sh).  A launcher that
 * connects, dup2()s the socket onto 0 and 1 and execs its client is paced
 * per connection the same way.  Only a grant already taken is waited for,
 * so a second dup of the same connection waits for nothing.
 */
static void settle_for_stdio(struct agile_fd *t)
{
	int64_t now;

	if ((load8(&t->flags) & AGILE_FD_INBOUND) ||
	    __atomic_load_n(&t->grant_ns, __ATOMIC_ACQUIRE) == 0)
		return;
	now = agile__track_settle_grant(t, agile__now_ns(), false, NULL);
	agile__destinations_tick(t->dest, slot_of(t), now);
}

void agile__track_dup(int oldfd, int newfd)
{
	struct agile_fd *from = agile__fd_lookup(oldfd);
	struct agile_fd *to;
	int saved = errno;

	if (from == NULL || oldfd == newfd)
		return;
	agile__enter();
	to = agile__fd_entry(newfd);
	if (to != NULL) {
		/* The new descriptor takes the socket's pending grant and its
		 * request in flight; the old one stays tracked (it is the same
		 * socket) with neither, so the common hand-off "dup2(s, 1);
		 * close(s)" neither loses the request nor truncates it, and a
		 * request sent through the old one takes a grant of its own
		 * (one unpaced request per dup otherwise).  Each
		 * names the other as its peer, so a response read through one
		 * ends a request sent through the other (see request_owner). */
		store8(&to->tracked, 0);
		to->dest = from->dest;
		to->phase = load8(&from->phase);
		/* The breaker call moves with the request; the permit is
		 * shared (resilience_hook.c counts its references).  stdio
		 * holds the old number, not the new one, so the new one is
		 * closed only where a hook sees it. */
		to->flags = __atomic_fetch_and(&from->flags,
		                               (uint8_t)~AGILE_FD_BREAKER_OPEN,
		                               __ATOMIC_ACQ_REL) &
		            (uint8_t)~AGILE_FD_STDIO;
		agile__resilience_dup(from, to);
		to->request = load8(&from->request);
		to->grant_interval_ns = __atomic_load_n(&from->grant_interval_ns,
		                                        __ATOMIC_RELAXED);
		to->grant_ns = __atomic_exchange_n(&from->grant_ns, 0,
		                                   __ATOMIC_ACQ_REL);
		to->request_start_ns = __atomic_exchange_n(
			&from->request_start_ns, 0, __ATOMIC_ACQ_REL);
		/* Its place under inflight= moves with the request. */
		agile__inflight_release(to);
		__atomic_store_n(&to->inflight_place,
		                 __atomic_exchange_n(&from->inflight_place, 0,
		                                     __ATOMIC_ACQ_REL),
		                 __ATOMIC_RELEASE);
		to->response_ns = __atomic_exchange_n(&from->response_ns, 0,
		                                      __ATOMIC_ACQ_REL);
		to->conn_id = from->conn_id;
		to->stdio_inode = 0;
		/* The new number follows the connection's TLS records; the
		 * old one, if the program goes on using it, falls back to the
		 * byte-level rules rather than walk half the records. */
		memcpy(&to->tls, &from->tls, sizeof(to->tls));
		__atomic_store_n(&from->tls.stage, AGILE_TLS_OFF,
		                 __ATOMIC_RELAXED);
		to->tls_end_ns = from->tls_end_ns;
		to->tls_start_ns = __atomic_exchange_n(&from->tls_start_ns, 0,
		                                       __ATOMIC_ACQ_REL);
		to->http2 = load8(&from->http2);
		to->tls_plain = load8(&from->tls_plain);
		agile__h2conn_dup(from, to);
		agile__inbound_dup(from, to);
		to->peer = oldfd + 1;
		__atomic_store_n(&from->peer, newfd + 1, __ATOMIC_RELAXED);
		if (to->request == AGILE_REQ_IN_FLIGHT &&
		    to->request_start_ns == 0) {
			to->request = answered_state(to);
			agile__inflight_release(to);
		}
		store8(&from->request, answered_state(from));
		store8(&to->tracked, 1);
		if (newfd <= STDERR_FILENO)
			settle_for_stdio(to);
	}
	agile__leave();
	errno = saved;
}
