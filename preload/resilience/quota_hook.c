/*
 * quota_hook.c - quota=N/PERIOD[,align] and window=N/SPAN on a destination:
 * libagile's period quota and exact sliding window, kept in the slot's
 * region of the state file so that they hold across every process and every
 * run of a program until the machine reboots (a cron job limited to 1000
 * calls a day across all its runs).
 *
 * Clocks: an aligned quota runs on the wall clock, so that a period of one
 * day rolls over at 00:00 UTC whatever the uptime; an unaligned quota and the
 * sliding window run on the monotonic clock, which every process of one boot
 * shares and which no clock adjustment moves.
 *
 * Over the limit, connect fails at once with ECONNREFUSED (over=refuse, the
 * default).  With over=wait the connect sleeps until there is room — until
 * the quota's period ends, or the window's oldest call leaves it — and tries
 * again.  A non-blocking connect waits too (curl, and Python sockets with a
 * timeout, are non-blocking underneath): over=wait asks for the program to
 * be held back, and an event loop is held back with it, as its pacing wait
 * does.  Each connect that gets through counts one call against both.
 */
#include "config.h"

#include <errno.h>

#include "atomics.h"
#include "clock.h"
#include "resilience_hook.h"
#include "shlock.h"

/* One attempt at both limits; 0, or how long until there may be room,
 * with *by_window telling which limit said no. */
static int64_t try_both(struct agile_state_resilience *z,
                        const struct agile_resilience_config *c,
                        bool *by_window)
{
	int64_t mono = agile__now_ns();
	int64_t quota_now = c->quota_align ? agile__unix_ns() : mono;
	struct agile_sliding_window *w = agile_state_window(z);
	int64_t wait = 0;

	*by_window = true;
	/* The window is checked first and the quota taken first: each is
	 * counted only when both have room. */
	if (c->window > 0) {
		agile__shlock(&z->window_lock);
		wait = agile_sliding_window_next(w, mono);
		agile__shunlock(&z->window_lock);
		if (wait > 0)
			return wait;
	}
	if (c->quota > 0) {
		enum agile_quota_state q;

		agile__shlock(&z->quota_lock);
		q = agile_period_quota_take(&z->quota, quota_now);
		if (q == AGILE_QUOTA_OVER)
			wait = agile_period_quota_next(&z->quota, quota_now);
		agile__shunlock(&z->quota_lock);
		if (q == AGILE_QUOTA_OVER) {
			*by_window = false;
			return wait > 0 ? wait : 1;
		}
	}
	if (c->window > 0) {
		bool taken;

		agile__shlock(&z->window_lock);
		taken = agile_sliding_window_take(w, mono);
		if (!taken)
			wait = agile_sliding_window_next(w, mono);
		agile__shunlock(&z->window_lock);
		/* Another process took the last room between the check and
		 * the take: the quota's unit is spent, as for any call the
		 * window then refuses. */
		if (!taken)
			return wait > 0 ? wait : 1;
	}
	return 0;
}

int agile__quota_admit(struct agile_state_resilience *z,
                       const struct agile_resilience_config *c)
{
	bool counted = false;

	for (;;) {
		bool by_window;
		int64_t wait = try_both(z, c, &by_window);

		if (wait == 0)
			return 0;
		if (c->over != AGILE_OVER_WAIT) {
			agile__add_u64(by_window ? &z->window_refused
			                         : &z->quota_refused, 1);
			return -ECONNREFUSED;
		}
		if (!counted) {
			agile__add_u64(by_window ? &z->window_waited
			                         : &z->quota_waited, 1);
			counted = true;
		}
		agile__sleep_until(agile__now_ns() + wait);
	}
}
