/*
 * inbound.c - AGILE_LISTEN_<NAME>: protect a server program.  This file is
 * a connection's lifecycle: its admission at accept, and its close.
 *
 * A listener rule matches the local address of a listening socket.  Each
 * connection the program accepts there asks, in order:
 *
 *   shed=cpu      libagile's CPU-aware shedder, fed this process's CPU use
 *                 (inbound_cpu.c): refuses only when the CPU is hot and more
 *                 connections are in flight than the server has shown it
 *                 can finish within one response time;
 *   the cap       a permit of the slot's table (concurrency_hook.c) below
 *                 the adaptive limit that the core concurrency limiter sets
 *                 from the handling times, with the rule's max, slo and
 *                 other knobs.
 *
 * A connection refused by either is shed at once, before the program sees
 * it: closed, or with shed_response=STATUS answered first with a minimal
 * HTTP/1.1 response of that status (503 Service Unavailable, say) and a
 * Retry-After header only when retry_after= is set — an invented one would
 * tell clients something the operator never decided.  The accept hook then
 * accepts the next connection, so the program's accept returns one it may
 * serve (or EAGAIN on a non-blocking listener with none left).
 *
 * The rest of a listener rule is in the files beside this one:
 *
 *   inbound_shed.c      turning a connection or a request away: the
 *                       answer, and the ring of answered connections
 *                       that linger before their close
 *   inbound_requests.c  a connection's requests: their permits with
 *                       proto=http, and the handling time each one takes
 *   inbound_cpu.c       the CPU reading shed=cpu runs on
 *   inbound_h2.c        HTTP/2 connections, whose streams take the permits
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>

#include "atomics.h"
#include "clock.h"
#include "destinations.h"
#include "inbound.h"
#include "inbound_h2.h"
#include "inbound_internal.h"
#include "process.h"
#include "resilience_hook.h"
#include "shlock.h"
#include "symbols.h"

/* A shed=cpu call admitted at accept that will have no outcome. */
static void fail_shedder(struct agile_state_resilience *z)
{
	struct agile_shedder_ticket ticket = { .open = 1 };

	agile__shlock(&z->shed_lock);
	agile_shedder_fail(&z->shedder, &ticket);
	agile__shunlock(&z->shed_lock);
}

int agile__inbound_accepted(int listen_fd, int fd)
{
	struct sockaddr_storage local;
	socklen_t len = sizeof(local);
	const struct agile_resilience_config *c;
	struct agile_state_resilience *z;
	struct agile_state_slot *s;
	struct agile_fd *t;
	bool shed_open = false, per_request;
	uint8_t client[17];
	size_t client_len = 0;
	int64_t retry = 0;
	int saved = errno;
	int32_t permit;
	int64_t now;
	int rule;

	if (!agile__destinations_any_listen() ||
	    getsockname(listen_fd, (struct sockaddr *)&local, &len) != 0 ||
	    (rule = agile__destinations_match_listen((struct sockaddr *)&local,
	                                             len)) < 0) {
		errno = saved;
		return 0;
	}
	agile__enter();
	c = &agile__destinations_rule(rule)->resilience;
	s = agile__destinations_slot(rule);
	z = &s->resilience;
	now = agile__now_ns();
	agile__add_u64(&z->accepted, 1);
	if (c->shed_cpu) {
		struct agile_shedder_ticket ticket;
		int32_t cpu = agile__inbound_read_cpu(now);

		agile__shlock(&z->shed_lock);
		shed_open = agile_shedder_allow(&z->shedder, now, cpu, &ticket);
		agile__shunlock(&z->shed_lock);
		if (!shed_open) {
			agile__add_u64(&z->shed, 1);
			agile__add_u64(&z->shed_cpu, 1);
			agile__inbound_shed(fd, shed_status(c), c->retry_after_ns, now);
			agile__leave();
			errno = saved;
			return -1;
		}
	}
	agile__inbound_linger_expire(now);
	if (c->client_rate > 0) {
		struct sockaddr_storage peer;
		socklen_t plen = sizeof(peer);

		client_len = getpeername(fd, (struct sockaddr *)&peer,
		                         &plen) == 0
		             ? agile__clients_address(c, (struct sockaddr *)&peer,
		                                      plen, client) : 0;
		/* Without proto=http the client's connections are what its
		 * bucket counts. */
		if (c->proto != AGILE_PROTO_HTTP && client_len > 0 &&
		    !agile__clients_admit(z, c, client, client_len, now,
		                          &retry)) {
			if (shed_open)
				fail_shedder(z);
			agile__inbound_shed(fd, c->shed_response == AGILE_SHED_HTTP ? 429 : 0,
			                    retry, now);
			agile__leave();
			errno = saved;
			return -1;
		}
	}
	/* A server killed with connections open left their permits held by
	 * its pid: they are reclaimed here, or a restarted server would shed
	 * everything. */
	per_request = c->proto == AGILE_PROTO_HTTP;
	permit = per_request ? 0 : agile__permit_try_reclaiming(z, now);
	t = permit > 0 || per_request ? agile__fd_entry(fd) : NULL;
	if (t == NULL) {
		if (shed_open)
			fail_shedder(z);
		if (permit > 0) {
			agile__permit_release(z, permit, 0);
		} else if (!per_request) {
			agile__add_u64(&z->shed, 1);
			agile__inbound_shed(fd, shed_status(c), c->retry_after_ns, now);
			agile__leave();
			errno = saved;
			return -1;
		}
		agile__leave();
		errno = saved;
		return 0; /* no table: served, unprotected */
	}
	/* A connection on this number whose close no hook saw. */
	if (__atomic_load_n(&t->inbound_h2, __ATOMIC_ACQUIRE) != 0)
		agile__inbound_h2_close(t);
	__atomic_store_n(&t->tracked, 0, __ATOMIC_RELEASE);
	t->dest = rule;
	t->phase = AGILE_FD_CONNECTED;
	t->request = AGILE_REQ_FREE;
	t->flags = AGILE_FD_INBOUND | (shed_open ? AGILE_FD_SHED_OPEN : 0);
	t->grant_ns = 0;
	t->request_start_ns = 0;
	t->response_ns = 0;
	t->permit = permit;
	t->permit_tid = 0;
	t->conn_id = agile__fd_new_conn_id();
	t->stdio_inode = 0;
	t->peer = 0;
	t->inbound_left = 0;
	t->inbound_head = 0;
	t->inbound_shed = AGILE_INBOUND_KEEP;
	t->inbound_drain = 0;
	t->client_len = (uint8_t)client_len;
	memcpy(t->client, client, client_len);
	__atomic_store_n(&t->tracked, 1, __ATOMIC_RELEASE);
	agile__add_u64(&s->connects, 1);
	agile__leave();
	errno = saved;
	return 0;
}

/* Settle the connection's shedder call: a pass with the handling time, or
 * a failure. */
void agile__inbound_settle_shedder(struct agile_fd *t,
                                   struct agile_state_resilience *z,
                                   bool pass, int64_t start, int64_t now)
{
	struct agile_shedder_ticket ticket = { .start_ns = start, .open = 1 };
	uint8_t flags = __atomic_fetch_and(&t->flags,
	                                   (uint8_t)~AGILE_FD_SHED_OPEN,
	                                   __ATOMIC_ACQ_REL);

	if (!(flags & AGILE_FD_SHED_OPEN))
		return;
	agile__shlock(&z->shed_lock);
	if (pass)
		agile_shedder_pass(&z->shedder, &ticket, now);
	else
		agile_shedder_fail(&z->shedder, &ticket);
	agile__shunlock(&z->shed_lock);
}

void agile__inbound_before_send(struct agile_fd *t, const struct iovec *iov,
                                int count, size_t *limit)
{
	if (__atomic_load_n(&t->inbound_h2, __ATOMIC_ACQUIRE) != 0)
		agile__inbound_h2_before_send(t, iov, count, limit);
}

void agile__inbound_dup(const struct agile_fd *from, struct agile_fd *to)
{
	agile__inbound_h2_dup(from, to);
}

void agile__inbound_close(struct agile_fd *t)
{
	struct agile_state_slot *s;
	int64_t start, now;

	agile__enter();
	agile__inbound_h2_close(t);
	s = agile__destinations_slot(t->dest);
	now = agile__now_ns();
	start = __atomic_exchange_n(&t->request_start_ns, 0, __ATOMIC_ACQ_REL);
	if (start != 0 && __atomic_load_n(&t->request, __ATOMIC_ACQUIRE) ==
	    AGILE_REQ_IN_FLIGHT) {
		agile__add_u64(&s->truncated, 1);
		agile__conc_outcome(&s->resilience, AGILE_OUTCOME_TRUNCATED,
		                    now - start, now);
	}
	agile__inbound_settle_shedder(t, &s->resilience, false, start, now);
	agile__resilience_close(t); /* the permit */
	if (__atomic_exchange_n(&t->inbound_drain, 0, __ATOMIC_ACQ_REL)) {
		char buf[4096];

		/* The rest of a request answered and shut
		 * (agile__inbound_shed_request). */
		while (agile__libc.recv(fd_of(t), buf, sizeof(buf),
		                        MSG_DONTWAIT) > 0)
			;
	}
	agile__leave();
}
