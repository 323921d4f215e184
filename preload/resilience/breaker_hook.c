/*
 * breaker_hook.c - breaker=sre on a destination: libagile's SRE breaker
 * (agile_resilience.h) shared by every process in the slot's region.
 *
 * A connect asks the breaker first; a refusal fails the connect at once with
 * ECONNREFUSED, before any grant or permit is taken, and is counted by the
 * breaker as a drop (traffic it turned away), never as unreachable for the
 * rate controller: the downstream never saw it.  An admitted connect is one
 * call, settled once (the socket's AGILE_FD_BREAKER_OPEN mark, cleared with
 * an atomic and): a response is a success; an unreachable or timed-out
 * connect, a request cut short, and (proto=http) a 5xx are failures; a
 * socket closed after connecting without a request is a success, since the
 * downstream took the connection.  The roll is drawn here (getrandom) and
 * passed into the pure breaker.
 */
#include "config.h"

#include "atomics.h"
#include "resilience_hook.h"
#include "shlock.h"

bool agile__breaker_allow(struct agile_state_resilience *z, int64_t now_ns)
{
	struct agile_breaker_call call;
	double roll = agile__draw();
	bool allowed;

	agile__shlock(&z->breaker_lock);
	allowed = agile_breaker_allow(&z->breaker, now_ns, roll, &call);
	agile__shunlock(&z->breaker_lock);
	agile__add_u64(allowed ? &z->breaker_allowed : &z->breaker_refused, 1);
	return allowed;
}

void agile__breaker_settle(struct agile_state_resilience *z, bool success,
                           int64_t now_ns)
{
	/* The call's own record is the socket's mark, settled exactly once by
	 * the caller; the struct the primitive wants is rebuilt here. */
	struct agile_breaker_call call = { .allowed_ns = now_ns, .open = 1 };

	agile__shlock(&z->breaker_lock);
	if (success)
		agile_breaker_pass(&z->breaker, &call, now_ns);
	else
		agile_breaker_fail(&z->breaker, &call, now_ns);
	agile__shunlock(&z->breaker_lock);
	agile__add_u64(success ? &z->breaker_passes : &z->breaker_failures, 1);
}
