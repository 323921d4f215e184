/*
 * resilience_hook.c - where the resilience features meet the socket's life
 * (see resilience_hook.h): the gates a connect passes, in this order, and
 * what each socket holds until it closes.
 *
 *   1. breaker=sre   refuses at once, before anything is taken;
 *   2. quota=, window=, key_rate=   refuse, or wait with over=wait;
 *   3. concurrency=  waits for a permit, last, so that a connect never
 *                    holds a permit while it waits for anything else.
 *
 * A refusal after the breaker admitted the call leaves that call unsettled,
 * which the breaker reads as nothing at all (neither success nor failure
 * reaches its window).  A quota unit, once counted, is spent even when the
 * concurrency cap then times out: the quota counts connects admitted.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>

#include "clock.h"
#include "destinations.h"
#include "resilience_hook.h"
#include "symbols.h"
#include "track.h"

static const struct agile_resilience_config *config_of(int dest)
{
	return &agile__destinations_rule(dest)->resilience;
}

int agile__resilience_admit(int fd, int dest, struct agile_state_slot *s,
                            const struct sockaddr *addr, socklen_t len,
                            struct agile_admission *adm)
{
	const struct agile_resilience_config *c = config_of(dest);
	struct agile_state_resilience *z = &s->resilience;
	bool blocking;
	int flags, rc;

	adm->permit = 0;
	adm->permit_tid = 0;
	adm->breaker_open = false;
	if (!agile__resilience_any(c))
		return 0;
	flags = agile__libc.fcntl(fd, F_GETFL);
	blocking = flags >= 0 && !(flags & O_NONBLOCK);
	if (c->breaker) {
		if (!agile__breaker_allow(z, agile__now_ns()))
			return -ECONNREFUSED;
		adm->breaker_open = true;
	}
	if (c->quota > 0 || c->window > 0) {
		rc = agile__quota_admit(z, c);
		if (rc < 0)
			return rc;
	}
	if (c->key_rate > 0) {
		rc = agile__keys_admit(dest, z, c, addr, len);
		if (rc < 0)
			return rc;
	}
	if (c->conc_mode != AGILE_CONC_OFF) {
		int32_t tid = agile__thread_id();
		int32_t permit = agile__permit_acquire(z, c->acquire_timeout_ns,
		                                       !blocking, tid);

		if (permit < 0)
			return permit;
		adm->permit = permit;
		adm->permit_tid = tid;
	}
	return 0;
}

void agile__resilience_outcome(struct agile_fd *t, struct agile_state_slot *s,
                               enum agile_call_end outcome, int64_t latency_ns,
                               int64_t now_ns)
{
	struct agile_state_resilience *z = &s->resilience;
	uint8_t flags = __atomic_fetch_and(&t->flags,
	                                   (uint8_t)~AGILE_FD_BREAKER_OPEN,
	                                   __ATOMIC_ACQ_REL);

	if (flags & AGILE_FD_BREAKER_OPEN)
		agile__breaker_settle(z, outcome == AGILE_OUTCOME_ANSWERED,
		                      now_ns);
	if (z->conc_mode == AGILE_CONC_OFF)
		return;
	agile__conc_outcome(z, outcome, latency_ns, now_ns);
	/* A connect that failed holds no connection: its permit goes back
	 * now, and a new connect on the socket is a new admission. */
	if (outcome == AGILE_OUTCOME_UNREACHABLE) {
		int32_t permit = __atomic_exchange_n(&t->permit, 0,
		                                     __ATOMIC_ACQ_REL);

		agile__permit_release(z, permit, t->permit_tid);
	}
}

void agile__resilience_close(struct agile_fd *t)
{
	struct agile_state_slot *s;
	uint8_t flags;
	int32_t permit;

	agile__inflight_release(t); /* its place under inflight= */
	if (t->dest < 0 || (__atomic_load_n(&t->permit, __ATOMIC_ACQUIRE) == 0 &&
	    !(__atomic_load_n(&t->flags, __ATOMIC_ACQUIRE) &
	      AGILE_FD_BREAKER_OPEN)))
		return;
	s = agile__destinations_slot(t->dest);
	flags = __atomic_fetch_and(&t->flags, (uint8_t)~AGILE_FD_BREAKER_OPEN,
	                           __ATOMIC_ACQ_REL);
	/* A connection made and closed without a request: the downstream
	 * took it, which is all the call asked. */
	if ((flags & AGILE_FD_BREAKER_OPEN) &&
	    __atomic_load_n(&t->phase, __ATOMIC_ACQUIRE) == AGILE_FD_CONNECTED)
		agile__breaker_settle(&s->resilience, true, agile__now_ns());
	permit = __atomic_exchange_n(&t->permit, 0, __ATOMIC_ACQ_REL);
	agile__permit_release(&s->resilience, permit, t->permit_tid);
}

void agile__resilience_dup(struct agile_fd *from, struct agile_fd *to)
{
	int32_t permit = __atomic_load_n(&from->permit, __ATOMIC_ACQUIRE);

	to->permit_tid = from->permit_tid;
	__atomic_store_n(&to->permit, permit, __ATOMIC_RELEASE);
	if (permit > 0)
		agile__permit_ref(&agile__destinations_slot(from->dest)->resilience,
		                  permit);
}

void agile__resilience_forget_range(unsigned int first, unsigned int last)
{
	struct agile_fd *table = __atomic_load_n(&agile__fd_table,
	                                         __ATOMIC_ACQUIRE);

	if (table == NULL || first >= agile__fd_table_size)
		return;
	if (last >= agile__fd_table_size)
		last = (unsigned int)agile__fd_table_size - 1;
	for (size_t fd = first; fd <= last; fd++) {
		struct agile_fd *t = &table[fd];

		/* Reading `tracked` first keeps untouched pages unmapped. */
		if (__atomic_load_n(&t->tracked, __ATOMIC_RELAXED) &&
		    (__atomic_load_n(&t->permit, __ATOMIC_ACQUIRE) != 0 ||
		     __atomic_load_n(&t->inflight_place, __ATOMIC_ACQUIRE) != 0))
			agile__resilience_close(t);
	}
}
