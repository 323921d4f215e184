/*
 * check_adaptx.c - adaptx's limiter contracts over libagile, on a virtual
 * clock.
 *
 * The hooks below are the whole environment of the limiter: `now_ns` reads
 * the virtual clock, `sleep_until_ns` jumps it forward and may run a scripted
 * action (release a permit, close the limiter, cancel), `cancelled` reads a
 * flag, `draw` hands out fixed jitter draws, and `on_limit_change` logs the
 * changes.  So every wait, timeout and window boundary is exact.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agile.h"
#include "agile_adaptx.h"
#include "agile_laws.h"
#include "check_suites.h"

#define MS AGILE_NS_PER_MS
#define SEC AGILE_NS_PER_S

/* The limiter is large (the latency history); one per test process. */
static struct agile_adaptx lim;

struct env {
	int64_t now;
	int sleeps;
	int64_t slept_until[64];
	bool cancel;
	/* Scripted action on the n-th sleep (1-based), 0: none. */
	int act_on_sleep;
	void (*action)(struct env *e);
	struct agile_adaptx_permit *to_release;
	/* Fixed draws handed out in turn. */
	double draws[8];
	int ndraws;
	int drawn;
	int draw_calls;
	/* Limit changes seen by the hook. */
	int changes;
	int64_t change_old[16];
	int64_t change_new[16];
	/* What the execute callback saw and does. */
	int64_t seen_limit;
	int64_t seen_in_flight;
	enum agile_law_kind seen_law;
	int64_t fn_duration;
	int fn_result;
	bool fn_skip;
	int fn_runs;
};

static struct env env;

static int64_t env_now(void *arg)
{
	return ((struct env *)arg)->now;
}

static void env_sleep(int64_t when, void *arg)
{
	struct env *e = arg;

	if (e->sleeps < 64)
		e->slept_until[e->sleeps] = when;
	e->sleeps++;
	if (when > e->now)
		e->now = when;
	if (e->action != NULL && e->sleeps == e->act_on_sleep)
		e->action(e);
}

static bool env_cancelled(void *arg)
{
	return ((struct env *)arg)->cancel;
}

static double env_draw(void *arg)
{
	struct env *e = arg;

	e->draw_calls++;
	return e->drawn < e->ndraws ? e->draws[e->drawn++] : 0.5;
}

static void env_change(int64_t old_limit, int64_t new_limit, void *arg)
{
	struct env *e = arg;

	if (e->changes < 16) {
		e->change_old[e->changes] = old_limit;
		e->change_new[e->changes] = new_limit;
	}
	e->changes++;
}

static const struct agile_adaptx_hooks hooks = {
	.now_ns = env_now,
	.sleep_until_ns = env_sleep,
	.cancelled = env_cancelled,
	.draw = env_draw,
	.on_limit_change = env_change,
	.poll_ns = 0,
	.arg = &env,
};

static void setup(void)
{
	memset(&env, 0, sizeof(env));
	memset(&lim, 0, sizeof(lim));
}

/* Options with warm-up and jitter off. */
static struct agile_law_options plain(enum agile_law_kind kind, int64_t initial,
                                      int64_t max)
{
	struct agile_law_options o;

	agile_law_options_init(&o);
	agile_law_set_kind(&o, kind);
	agile_law_set_max_limit(&o, max);
	agile_law_set_initial_limit(&o, initial);
	agile_law_set_warmup_samples(&o, 0);
	agile_law_set_jitter(&o, 0);
	return o;
}

static void start(enum agile_law_kind kind, int64_t initial, int64_t max)
{
	struct agile_law_options o = plain(kind, initial, max);

	ck_assert_int_eq(agile_adaptx_init(&lim, &o, NULL, env.now), 0);
}

static void take(struct agile_adaptx_permit *p)
{
	ck_assert_int_eq(agile_adaptx_try_acquire(&lim, p), 0);
}

static void give(struct agile_adaptx_permit *p, bool ok, int64_t latency)
{
	ck_assert_int_eq(agile_adaptx_release(&lim, p, ok, latency, env.now, &hooks),
	                 0);
}

static int callback(struct agile_adaptx_call *call, void *arg)
{
	struct env *e = arg;

	e->fn_runs++;
	e->seen_limit = call->limit;
	e->seen_in_flight = call->in_flight;
	e->seen_law = call->law;
	if (e->fn_skip) {
		agile_adaptx_call_skip(call);
		agile_adaptx_call_skip(call); /* idempotent */
	}
	e->now += e->fn_duration;
	return e->fn_result;
}

static void release_scripted(struct env *e)
{
	agile_adaptx_release(&lim, e->to_release, true, 5 * MS, e->now, &hooks);
}

static void close_scripted(struct env *e)
{
	(void)e;
	agile_adaptx_close(&lim);
}

static void cancel_scripted(struct env *e)
{
	e->cancel = true;
}

/* --- construction ------------------------------------------------------------ */

START_TEST(adaptx_defaults_are_adaptx_defaults)
{
	struct agile_adaptx_stats st;

	ck_assert_int_eq(agile_adaptx_init(&lim, NULL, NULL, 0), 0);
	agile_adaptx_stats(&lim, 0, &st);
	ck_assert_int_eq(st.law, AGILE_LAW_AIMD);
	ck_assert_str_eq(agile_law_name(st.law), "aimd");
	ck_assert_int_eq(st.limit, 10);
	ck_assert_int_eq(st.min_limit, 1);
	ck_assert_int_eq(st.max_limit, 1000);
	ck_assert_int_eq(st.in_flight, 0);
	ck_assert_int_eq(st.available, 10);
	ck_assert_int_eq(st.debt, 0);
	ck_assert_uint_eq(st.total + st.success + st.failures + st.rejected, 0);
	ck_assert(!st.closed);
	/* 10,000 samples per second of window: 1 s holds 10,000. */
	ck_assert_int_eq(lim.ring_capacity, 10000);
}
END_TEST

START_TEST(adaptx_options_are_validated_as_documented)
{
	struct agile_law_options o;
	struct agile_adaptx_stats st;

	agile_law_options_init(&o);
	agile_law_set_min_limit(&o, 0);        /* ignored */
	agile_law_set_max_limit(&o, 3);
	agile_law_set_initial_limit(&o, 50);   /* clamped to max */
	agile_law_set_kind(&o, 12);            /* unknown: AIMD */
	agile_law_set_sample_window_ns(&o, 5 * MS);
	ck_assert_int_eq(agile_adaptx_init(&lim, &o, NULL, 0), 0);
	agile_adaptx_stats(&lim, 0, &st);
	ck_assert_int_eq(st.law, AGILE_LAW_AIMD);
	ck_assert_int_eq(st.min_limit, 1);
	ck_assert_int_eq(st.max_limit, 3);
	ck_assert_int_eq(st.limit, 3);
	/* 5 ms of window would hold 50 samples: floored to 100. */
	ck_assert_int_eq(lim.ring_capacity, 100);

	/* A min above the max raises the max; the initial follows. */
	agile_law_options_init(&o);
	o.min_limit = 40;
	o.max_limit = 20;
	ck_assert_int_eq(agile_adaptx_init(&lim, &o, NULL, 0), 0);
	agile_adaptx_stats(&lim, 0, &st);
	ck_assert_int_eq(st.min_limit, 40);
	ck_assert_int_eq(st.max_limit, 40);
	ck_assert_int_eq(st.limit, 40);
}
END_TEST

/* --- admission --------------------------------------------------------------- */

START_TEST(adaptx_try_acquire_admits_up_to_the_limit)
{
	struct agile_adaptx_permit p[4], extra;
	struct agile_adaptx_stats st;

	start(AGILE_LAW_AIMD, 3, 10);
	for (int i = 0; i < 3; i++) {
		take(&p[i]);
		ck_assert_int_eq(p[i].limit, 3);
		ck_assert_int_eq(p[i].in_flight, i); /* excluding itself */
	}
	ck_assert_int_eq(agile_adaptx_try_acquire(&lim, &extra), AGILE_EOVERLOADED);
	agile_adaptx_stats(&lim, env.now, &st);
	ck_assert_int_eq(st.in_flight, 3);
	ck_assert_uint_eq(st.total, 3);
	ck_assert_uint_eq(st.rejected, 1);
	ck_assert_int_eq(st.available, 0);
	give(&p[1], true, MS);
	take(&p[3]);
	ck_assert_int_eq(agile_adaptx_in_flight(&lim), 3);
}
END_TEST

START_TEST(adaptx_release_takes_effect_once)
{
	struct agile_adaptx_permit p;
	struct agile_adaptx_stats st;

	start(AGILE_LAW_AIMD, 2, 10);
	take(&p);
	ck_assert_uint_eq(p.held, 1);
	ck_assert_int_eq(agile_adaptx_release(&lim, &p, true, MS, 0, &hooks), 0);
	ck_assert_int_eq(agile_adaptx_release(&lim, &p, false, MS, 0, &hooks),
	                 -EALREADY);
	ck_assert_int_eq(agile_adaptx_release(&lim, &p, true, MS, 0, NULL),
	                 -EALREADY);
	agile_adaptx_stats(&lim, 0, &st);
	ck_assert_int_eq(st.in_flight, 0);
	ck_assert_uint_eq(st.success, 1);
	ck_assert_uint_eq(st.failures, 0);

	/* A permit never admitted releases nothing either. */
	struct agile_adaptx_permit blank = {0};
	ck_assert_int_eq(agile_adaptx_release(&lim, &blank, true, MS, 0, NULL),
	                 -EALREADY);
	ck_assert_int_eq(agile_adaptx_in_flight(&lim), 0);
}
END_TEST

START_TEST(adaptx_in_flight_never_exceeds_the_maximum)
{
	struct agile_adaptx_permit p[8];
	int admitted = 0;

	start(AGILE_LAW_AIMD, 5, 5);
	for (int i = 0; i < 8; i++)
		if (agile_adaptx_try_acquire(&lim, &p[i]) == 0)
			admitted++;
	ck_assert_int_eq(admitted, 5);
	ck_assert_int_eq(agile_adaptx_in_flight(&lim), 5);
	/* Saturated windows push the law toward more, but the ceiling is 5. */
	for (int w = 1; w <= 3; w++) {
		env.now = w * SEC;
		give(&p[0], true, MS);
		take(&p[0]);
	}
	ck_assert_int_eq(agile_adaptx_limit(&lim), 5);
	ck_assert_int_eq(agile_adaptx_try_acquire(&lim, &p[7]), AGILE_EOVERLOADED);
}
END_TEST

START_TEST(adaptx_allow_is_a_hint_that_claims_nothing)
{
	struct agile_adaptx_permit p[2];
	struct agile_adaptx_stats st;

	start(AGILE_LAW_AIMD, 2, 10);
	for (int i = 0; i < 5; i++)
		ck_assert(agile_adaptx_allow(&lim));
	agile_adaptx_stats(&lim, 0, &st);
	ck_assert_int_eq(st.in_flight, 0);
	ck_assert_uint_eq(st.total + st.rejected, 0);
	take(&p[0]);
	take(&p[1]);
	ck_assert(!agile_adaptx_allow(&lim));
	agile_adaptx_stats(&lim, 0, &st);
	ck_assert_uint_eq(st.rejected, 0); /* a "no" is not a rejection */
	give(&p[0], true, MS);
	ck_assert(agile_adaptx_allow(&lim));
	agile_adaptx_close(&lim);
	ck_assert(!agile_adaptx_allow(&lim));
}
END_TEST

/* --- acquire with a deadline ------------------------------------------------- */

START_TEST(adaptx_acquire_cancelled_first_never_consumes_a_permit)
{
	struct agile_adaptx_permit p;
	struct agile_adaptx_stats st;

	start(AGILE_LAW_AIMD, 4, 10);
	env.cancel = true;
	ck_assert_int_eq(agile_adaptx_acquire(&lim, AGILE_ADAPTX_NO_DEADLINE, &hooks,
	                                      &p), -ECANCELED);
	agile_adaptx_stats(&lim, 0, &st);
	ck_assert_int_eq(st.in_flight, 0);
	ck_assert_int_eq(st.available, 4);
	ck_assert_uint_eq(st.total, 0);
	ck_assert_uint_eq(st.rejected, 1);
	ck_assert_int_eq(env.sleeps, 0);
}
END_TEST

START_TEST(adaptx_acquire_past_deadline_never_consumes_a_permit)
{
	struct agile_adaptx_permit p;

	start(AGILE_LAW_AIMD, 4, 10);
	env.now = 5 * SEC;
	ck_assert_int_eq(agile_adaptx_acquire(&lim, 5 * SEC, &hooks, &p), -ETIMEDOUT);
	ck_assert_int_eq(agile_adaptx_in_flight(&lim), 0);
	ck_assert_uint_eq(lim.counters.rejected, 1);
	/* One nanosecond before the deadline it is admitted at once. */
	ck_assert_int_eq(agile_adaptx_acquire(&lim, 5 * SEC + 1, &hooks, &p), 0);
	ck_assert_int_eq(env.sleeps, 0);
}
END_TEST

START_TEST(adaptx_acquire_waits_for_a_release)
{
	struct agile_adaptx_permit held, p;

	start(AGILE_LAW_AIMD, 1, 10);
	take(&held);
	env.to_release = &held;
	env.action = release_scripted;
	env.act_on_sleep = 3;
	ck_assert_int_eq(agile_adaptx_acquire(&lim, AGILE_ADAPTX_NO_DEADLINE, &hooks,
	                                      &p), 0);
	/* Three polls a default period apart, admitted on the fourth try. */
	ck_assert_int_eq(env.sleeps, 3);
	ck_assert_int_eq(env.slept_until[0], 1 * MS);
	ck_assert_int_eq(env.slept_until[2], 3 * MS);
	ck_assert_int_eq(p.in_flight, 0);
	ck_assert_int_eq(agile_adaptx_in_flight(&lim), 1);
	ck_assert_uint_eq(lim.counters.rejected, 0);
}
END_TEST

START_TEST(adaptx_acquire_times_out_while_waiting)
{
	struct agile_adaptx_permit held, p;
	struct agile_adaptx_hooks h = hooks;

	start(AGILE_LAW_AIMD, 1, 10);
	take(&held);
	h.poll_ns = 4 * MS;
	ck_assert_int_eq(agile_adaptx_acquire(&lim, 10 * MS, &h, &p), -ETIMEDOUT);
	/* Sleeps at 4 and 8 ms, the last one cut to the deadline. */
	ck_assert_int_eq(env.sleeps, 3);
	ck_assert_int_eq(env.slept_until[1], 8 * MS);
	ck_assert_int_eq(env.slept_until[2], 10 * MS);
	ck_assert_int_eq(env.now, 10 * MS);
	ck_assert_int_eq(agile_adaptx_in_flight(&lim), 1);
	ck_assert_uint_eq(lim.counters.rejected, 1);
	ck_assert_uint_eq(p.held, 0);
}
END_TEST

START_TEST(adaptx_acquire_cancelled_while_waiting)
{
	struct agile_adaptx_permit held, p;

	start(AGILE_LAW_AIMD, 1, 10);
	take(&held);
	env.action = cancel_scripted;
	env.act_on_sleep = 2;
	ck_assert_int_eq(agile_adaptx_acquire(&lim, AGILE_ADAPTX_NO_DEADLINE, &hooks,
	                                      &p), -ECANCELED);
	ck_assert_int_eq(env.sleeps, 2);
	ck_assert_uint_eq(lim.counters.rejected, 1);
}
END_TEST

START_TEST(adaptx_acquire_wakes_on_close)
{
	struct agile_adaptx_permit held, p;

	start(AGILE_LAW_AIMD, 1, 10);
	take(&held);
	env.action = close_scripted;
	env.act_on_sleep = 1;
	ck_assert_int_eq(agile_adaptx_acquire(&lim, AGILE_ADAPTX_NO_DEADLINE, &hooks,
	                                      &p), -ESHUTDOWN);
	ck_assert_int_eq(env.sleeps, 1);
	ck_assert_uint_eq(lim.counters.rejected, 1);
}
END_TEST

START_TEST(adaptx_acquire_needs_a_clock)
{
	struct agile_adaptx_permit p;
	struct agile_adaptx_hooks h = hooks;

	start(AGILE_LAW_AIMD, 1, 10);
	h.now_ns = NULL;
	ck_assert_int_eq(agile_adaptx_acquire(&lim, AGILE_ADAPTX_NO_DEADLINE, &h, &p),
	                 -EINVAL);
	ck_assert_int_eq(agile_adaptx_acquire(&lim, AGILE_ADAPTX_NO_DEADLINE, NULL,
	                                      &p), -EINVAL);
	ck_assert_int_eq(agile_adaptx_in_flight(&lim), 0);
}
END_TEST

/* --- execute ----------------------------------------------------------------- */

START_TEST(adaptx_execute_passes_the_admission_snapshot)
{
	struct agile_adaptx_permit p[2];
	int rc = -1;

	start(AGILE_LAW_VEGAS, 6, 10);
	take(&p[0]);
	take(&p[1]);
	env.fn_duration = 7 * MS;
	ck_assert_int_eq(agile_adaptx_execute(&lim, AGILE_ADAPTX_NO_DEADLINE, &hooks,
	                                      callback, &env, &rc), 0);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(env.fn_runs, 1);
	ck_assert_int_eq(env.seen_limit, 6);
	ck_assert_int_eq(env.seen_in_flight, 2); /* the two held, not itself */
	ck_assert_int_eq(env.seen_law, AGILE_LAW_VEGAS);
	/* Released: back to the two held. */
	ck_assert_int_eq(agile_adaptx_in_flight(&lim), 2);
	ck_assert_uint_eq(lim.counters.success, 1);
	ck_assert_uint_eq(lim.law.seen, 1);
}
END_TEST

START_TEST(adaptx_execute_reports_the_callback_failure)
{
	int rc = 0;
	struct agile_adaptx_stats st;

	start(AGILE_LAW_AIMD, 6, 10);
	env.fn_duration = 3 * MS;
	env.fn_result = -EIO;
	ck_assert_int_eq(agile_adaptx_execute(&lim, AGILE_ADAPTX_NO_DEADLINE, &hooks,
	                                      callback, &env, &rc), 0);
	ck_assert_int_eq(rc, -EIO);
	/* NULL fn_rc is allowed. */
	ck_assert_int_eq(agile_adaptx_execute(&lim, AGILE_ADAPTX_NO_DEADLINE, &hooks,
	                                      callback, &env, NULL), 0);
	agile_adaptx_stats(&lim, env.now, &st);
	ck_assert_uint_eq(st.failures, 2);
	ck_assert_uint_eq(st.success, 0);
	ck_assert_int_eq(st.in_flight, 0);
	ck_assert_uint_eq(lim.law.window.failures, 2);
	ck_assert_int_eq(st.max_latency_ns, 3 * MS);
}
END_TEST

START_TEST(adaptx_execute_without_a_callback_is_einval_first)
{
	int rc = 123;

	start(AGILE_LAW_AIMD, 6, 10);
	agile_adaptx_close(&lim);
	/* adaptx checks the function before the closed state. */
	ck_assert_int_eq(agile_adaptx_execute(&lim, AGILE_ADAPTX_NO_DEADLINE, &hooks,
	                                      NULL, &env, &rc), -EINVAL);
	ck_assert_int_eq(agile_adaptx_execute(&lim, AGILE_ADAPTX_NO_DEADLINE, &hooks,
	                                      callback, &env, &rc), -ESHUTDOWN);
	ck_assert_int_eq(rc, 123);
	ck_assert_int_eq(env.fn_runs, 0);
}
END_TEST

START_TEST(adaptx_execute_skip_keeps_the_totals_only)
{
	struct agile_adaptx_stats st;
	struct agile_adaptx_permit p[3];

	start(AGILE_LAW_AIMD, 4, 10);
	/* Three held plus the call: a peak of 4 would pass the gate
	 * (ceil(4 x 0.9) = 4), but a skipped call does not raise it. */
	for (int i = 0; i < 3; i++)
		take(&p[i]);
	env.fn_duration = 900 * MS;
	env.fn_result = 1;
	env.fn_skip = true;
	ck_assert_int_eq(agile_adaptx_execute(&lim, AGILE_ADAPTX_NO_DEADLINE, &hooks,
	                                      callback, &env, NULL), 0);
	agile_adaptx_stats(&lim, env.now, &st);
	ck_assert_uint_eq(st.failures, 1);
	ck_assert_int_eq(st.max_latency_ns, 0); /* not in the history */
	ck_assert_uint_eq(lim.law.seen, 0);
	ck_assert_uint_eq(lim.law.window.samples, 0);
	ck_assert_uint_eq(lim.law.window.failures, 0);
	ck_assert_uint_eq(lim.law.window.peak_in_flight, 0);
}
END_TEST

START_TEST(adaptx_execute_waits_with_the_deadline)
{
	struct agile_adaptx_permit held;
	int rc;

	start(AGILE_LAW_AIMD, 1, 10);
	take(&held);
	ck_assert_int_eq(agile_adaptx_execute(&lim, 3 * MS, &hooks, callback, &env,
	                                      &rc), -ETIMEDOUT);
	ck_assert_int_eq(env.fn_runs, 0);
	env.to_release = &held;
	env.action = release_scripted;
	env.act_on_sleep = env.sleeps + 1;
	ck_assert_int_eq(agile_adaptx_execute(&lim, AGILE_ADAPTX_NO_DEADLINE, &hooks,
	                                      callback, &env, &rc), 0);
	ck_assert_int_eq(env.fn_runs, 1);
	ck_assert_int_eq(agile_adaptx_in_flight(&lim), 0);
}
END_TEST

START_TEST(adaptx_try_execute_runs_only_with_a_free_permit)
{
	struct agile_adaptx_permit held;
	int rc = 9;

	start(AGILE_LAW_AIMD, 1, 10);
	env.fn_duration = MS;
	ck_assert_int_eq(agile_adaptx_try_execute(&lim, AGILE_ADAPTX_NO_DEADLINE,
	                                          &hooks, callback, &env, &rc), 0);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(env.fn_runs, 1);
	take(&held);
	ck_assert_int_eq(agile_adaptx_try_execute(&lim, AGILE_ADAPTX_NO_DEADLINE,
	                                          &hooks, callback, &env, &rc),
	                 AGILE_EOVERLOADED);
	ck_assert_int_eq(env.fn_runs, 1);
	ck_assert_int_eq(env.sleeps, 0); /* never waits */
	ck_assert_uint_eq(lim.counters.rejected, 1);
}
END_TEST

START_TEST(adaptx_try_execute_checks_in_adaptx_order)
{
	int rc;

	start(AGILE_LAW_AIMD, 1, 10);
	/* Open: a missing callback, then a cancelled or expired caller, all
	 * before any permit is taken. */
	ck_assert_int_eq(agile_adaptx_try_execute(&lim, AGILE_ADAPTX_NO_DEADLINE,
	                                          &hooks, NULL, &env, &rc), -EINVAL);
	env.cancel = true;
	ck_assert_int_eq(agile_adaptx_try_execute(&lim, AGILE_ADAPTX_NO_DEADLINE,
	                                          &hooks, callback, &env, &rc),
	                 -ECANCELED);
	env.cancel = false;
	env.now = SEC;
	ck_assert_int_eq(agile_adaptx_try_execute(&lim, SEC, &hooks, callback, &env,
	                                          &rc), -ETIMEDOUT);
	ck_assert_int_eq(agile_adaptx_in_flight(&lim), 0);
	ck_assert_uint_eq(lim.counters.rejected, 0);
	/* Closed comes first of all. */
	agile_adaptx_close(&lim);
	ck_assert_int_eq(agile_adaptx_try_execute(&lim, AGILE_ADAPTX_NO_DEADLINE,
	                                          &hooks, NULL, &env, &rc),
	                 -ESHUTDOWN);
	ck_assert_int_eq(env.fn_runs, 0);
}
END_TEST

/* --- shrink debt --------------------------------------------------------------- */

START_TEST(adaptx_shrink_pulls_idle_permits_at_once)
{
	struct agile_adaptx_permit p[3];
	struct agile_adaptx_stats st;

	start(AGILE_LAW_AIMD, 10, 100);
	take(&p[0]);
	take(&p[1]);
	take(&p[2]);
	give(&p[2], false, MS); /* a failure in the window */
	env.now = SEC;
	give(&p[1], true, MS);  /* closes it: 10 -> 5 */
	agile_adaptx_stats(&lim, env.now, &st);
	ck_assert_int_eq(st.limit, 5);
	ck_assert_int_eq(st.in_flight, 1);
	/* Of the 8 idle permits at the close, 5 were pulled at once: 4 are
	 * left beside the one call still held. */
	ck_assert_int_eq(st.available, 4);
	ck_assert_int_eq(st.debt, 0);
	ck_assert_uint_eq(st.decreases, 1);
}
END_TEST

START_TEST(adaptx_shrink_retires_held_permits_on_release)
{
	struct agile_adaptx_permit p[10], q;
	struct agile_adaptx_stats st;

	start(AGILE_LAW_AIMD, 10, 100);
	for (int i = 0; i < 10; i++)
		take(&p[i]);
	give(&p[0], false, MS);
	take(&p[0]);
	env.now = SEC;
	give(&p[1], true, MS); /* window closes with a failure: 10 -> 5 */
	agile_adaptx_stats(&lim, env.now, &st);
	ck_assert_int_eq(st.limit, 5);
	ck_assert_int_eq(st.in_flight, 9);
	ck_assert_int_eq(st.debt, 4);
	ck_assert_int_eq(st.available, 0);
	ck_assert(!agile_adaptx_allow(&lim));
	/* Four releases pay the debt: no admission in between. */
	for (int i = 2; i < 6; i++) {
		give(&p[i], true, MS);
		ck_assert_int_eq(agile_adaptx_try_acquire(&lim, &q), AGILE_EOVERLOADED);
	}
	agile_adaptx_stats(&lim, env.now, &st);
	ck_assert_int_eq(st.debt, 0);
	ck_assert_int_eq(st.in_flight, 5);
	/* The next release returns its permit. */
	give(&p[6], true, MS);
	take(&q);
	ck_assert_int_eq(agile_adaptx_in_flight(&lim), 5);
}
END_TEST

START_TEST(adaptx_growth_pays_the_debt_first)
{
	struct agile_adaptx_permit p[8];
	struct agile_adaptx_stats st;
	struct agile_law_options o = plain(AGILE_LAW_AIMD, 8, 100);

	agile_law_set_increase_rate(&o, 3);
	agile_law_set_utilization(&o, 0.1);
	ck_assert_int_eq(agile_adaptx_init(&lim, &o, NULL, 0), 0);
	for (int i = 0; i < 8; i++)
		take(&p[i]);
	give(&p[0], false, MS);
	take(&p[0]);
	env.now = SEC;
	give(&p[1], true, MS); /* 8 -> 4 with 7 in flight: debt 3 */
	ck_assert_int_eq(agile_adaptx_try_acquire(&lim, &p[1]), AGILE_EOVERLOADED);
	agile_adaptx_stats(&lim, env.now, &st);
	ck_assert_int_eq(st.limit, 4);
	ck_assert_int_eq(st.debt, 3);
	/* A healthy window: 4 + 3 = 7 pays the 3 of debt, nothing left idle. */
	env.now = 2 * SEC;
	give(&p[2], true, MS);
	agile_adaptx_stats(&lim, env.now, &st);
	ck_assert_int_eq(st.limit, 7);
	ck_assert_int_eq(st.in_flight, 6);
	ck_assert_int_eq(st.debt, 0);
	ck_assert_int_eq(st.available, 1);
}
END_TEST

/* --- the window through the limiter ------------------------------------------ */

START_TEST(adaptx_one_adjustment_per_window_however_many_failures)
{
	struct agile_adaptx_permit p;

	start(AGILE_LAW_AIMD, 64, 100);
	for (int i = 0; i < 40; i++) {
		take(&p);
		env.now += 10 * MS;
		give(&p, false, 10 * MS);
	}
	/* 40 failures over 400 ms: no window has closed yet. */
	ck_assert_int_eq(agile_adaptx_limit(&lim), 64);
	env.now = SEC;
	take(&p);
	give(&p, false, 10 * MS);
	ck_assert_int_eq(agile_adaptx_limit(&lim), 32);
	ck_assert_int_eq(env.changes, 1);
	ck_assert_int_eq(env.change_old[0], 64);
	ck_assert_int_eq(env.change_new[0], 32);
}
END_TEST

START_TEST(adaptx_warmup_and_utilisation_on_defaults)
{
	struct agile_adaptx_permit p[12];

	/* adaptx's defaults: warm-up 10, utilisation 0.9, jitter 0.1. */
	ck_assert_int_eq(agile_adaptx_init(&lim, NULL, NULL, 0), 0);
	for (int w = 0; w < 3; w++) {
		int64_t limit = agile_adaptx_limit(&lim);

		/* Fill the limit, then release all: the peak is the limit. */
		for (int i = 0; i < limit; i++)
			take(&p[i]);
		env.now = w * SEC + 500 * MS;
		for (int i = 0; i < limit; i++)
			give(&p[i], true, 20 * MS);
		env.now = (w + 1) * SEC;
		agile_adaptx_advance(&lim, env.now, &hooks);
	}
	/* Window 0 held 10 samples: warm-up done, 10 -> 11; then 12, 13. */
	ck_assert_int_eq(agile_adaptx_limit(&lim), 13);
	ck_assert_uint_eq(lim.counters.increases, 3);
	/* Two draws per closed window, taken only once a window was due. */
	ck_assert_int_eq(env.draw_calls, 6);
}
END_TEST

START_TEST(adaptx_jitter_draws_come_from_the_hook)
{
	struct agile_adaptx_permit p;
	struct agile_law_options o = plain(AGILE_LAW_AIMD, 10, 1000);

	agile_law_set_jitter(&o, 0.5);
	agile_law_set_increase_rate(&o, 40);
	agile_law_set_utilization(&o, 0.01); /* one in flight opens the gate */
	ck_assert_int_eq(agile_adaptx_init(&lim, &o, NULL, 0), 0);
	env.draws[0] = 0.5; /* amount */
	env.draws[1] = 0.2; /* coin: withhold */
	env.draws[2] = 0.9; /* amount */
	env.draws[3] = 0.6; /* coin: keep */
	env.ndraws = 4;
	take(&p);
	env.now = SEC;
	give(&p, true, MS);
	/* +40, less int(40 x 0.5 x 0.5) = 10: 40. */
	ck_assert_int_eq(agile_adaptx_limit(&lim), 40);
	take(&p);
	env.now = 2 * SEC;
	give(&p, true, MS);
	ck_assert_int_eq(agile_adaptx_limit(&lim), 80);
	ck_assert_int_eq(env.drawn, 4);
}
END_TEST

START_TEST(adaptx_limit_change_hook_sees_old_and_new)
{
	struct agile_adaptx_permit p;
	struct agile_adaptx_hooks quiet = hooks;

	start(AGILE_LAW_GRADIENT, 10, 100);
	for (int w = 0; w < 3; w++) {
		take(&p);
		env.now = (w + 1) * SEC;
		give(&p, true, (w == 2 ? 400 : 100) * MS);
	}
	/* Window 0 seeds, window 1 +1, window 2 backs off: 11 x max(1 -
	 * 0.5 x g, 0.5) with avg 160 ms and g = 1.5, so 11 x 0.5 = 5. */
	ck_assert_int_eq(env.changes, 2);
	ck_assert_int_eq(env.change_old[0], 10);
	ck_assert_int_eq(env.change_new[0], 11);
	ck_assert_int_eq(env.change_old[1], 11);
	ck_assert_int_eq(env.change_new[1], 5);
	/* Without the hook the limit still moves. */
	quiet.on_limit_change = NULL;
	take(&p);
	env.now = 4 * SEC;
	ck_assert_int_eq(agile_adaptx_release(&lim, &p, false, MS, env.now, &quiet),
	                 0);
	ck_assert_int_eq(agile_adaptx_limit(&lim), 2);
	ck_assert_int_eq(env.changes, 2);
	ck_assert_uint_eq(lim.counters.decreases, 2);
}
END_TEST

/* Vegas through execute: calls at the floor latency grow the limit, calls
 * three times slower back it off, each once per window. */
START_TEST(adaptx_vegas_backs_off_when_latency_climbs)
{
	start(AGILE_LAW_VEGAS, 10, 100); /* rtt_min decay 0.001 */
	env.fn_duration = 10 * MS;
	for (int i = 0; i < 3; i++)
		agile_adaptx_execute(&lim, AGILE_ADAPTX_NO_DEADLINE, &hooks, callback,
		                     &env, NULL);
	env.now = SEC;
	agile_adaptx_execute(&lim, AGILE_ADAPTX_NO_DEADLINE, &hooks, callback, &env,
	                     NULL);
	/* queue 0 < alpha 0.9: +1. */
	ck_assert_int_eq(agile_adaptx_limit(&lim), 11);
	env.fn_duration = 30 * MS;
	for (int i = 0; i < 3; i++)
		agile_adaptx_execute(&lim, AGILE_ADAPTX_NO_DEADLINE, &hooks, callback,
		                     &env, NULL);
	ck_assert_int_eq(agile_adaptx_limit(&lim), 11);
	env.now = 2 * SEC;
	agile_adaptx_execute(&lim, AGILE_ADAPTX_NO_DEADLINE, &hooks, callback, &env,
	                     NULL);
	/* avg 14 ms, rtt_min 10 + 0.001 x 4 = 10.004 ms; queue = 11 x (1 -
	 * 10.004/30) = 7.33 > 2 alpha = 1.98: 11 x 0.5 -> 5. */
	ck_assert_int_eq(agile_adaptx_limit(&lim), 5);
	ck_assert_uint_eq(lim.counters.increases, 1);
	ck_assert_uint_eq(lim.counters.decreases, 1);
	ck_assert_int_eq(env.fn_runs, 8);
}
END_TEST

START_TEST(adaptx_advance_closes_a_window_without_a_release)
{
	struct agile_adaptx_permit p;

	start(AGILE_LAW_AIMD, 10, 100);
	take(&p);
	give(&p, false, MS);
	ck_assert_int_eq(agile_adaptx_advance(&lim, SEC - 1, &hooks),
	                 AGILE_LAW_NOT_DUE);
	ck_assert_int_eq(agile_adaptx_advance(&lim, SEC, &hooks),
	                 AGILE_LAW_DECREASED);
	ck_assert_int_eq(agile_adaptx_limit(&lim), 5);
	ck_assert_int_eq(agile_adaptx_advance(&lim, 2 * SEC, &hooks), AGILE_LAW_EMPTY);
}
END_TEST

/* --- close ----------------------------------------------------------------- */

START_TEST(adaptx_close_is_idempotent_and_final)
{
	struct agile_adaptx_permit p;

	start(AGILE_LAW_AIMD, 4, 10);
	ck_assert_int_eq(agile_adaptx_close(&lim), 0);
	ck_assert_int_eq(agile_adaptx_close(&lim), 0);
	ck_assert(agile_adaptx_is_closed(&lim));
	ck_assert_int_eq(agile_adaptx_try_acquire(&lim, &p), -ESHUTDOWN);
	ck_assert_int_eq(agile_adaptx_acquire(&lim, AGILE_ADAPTX_NO_DEADLINE, &hooks,
	                                      &p), -ESHUTDOWN);
	/* Refused at the door, not counted as rejections. */
	ck_assert_uint_eq(lim.counters.rejected, 0);
	ck_assert_uint_eq(lim.counters.total, 0);
	/* A reset does not reopen it. */
	agile_adaptx_reset_stats(&lim, env.now);
	ck_assert(agile_adaptx_is_closed(&lim));
	ck_assert_int_eq(agile_adaptx_close_drain(&lim, SEC, &hooks), -ESHUTDOWN);
	ck_assert_int_eq(agile_adaptx_close(&lim), 0);
}
END_TEST

START_TEST(adaptx_release_after_close_still_frees_and_counts)
{
	struct agile_adaptx_permit p;
	struct agile_adaptx_stats st;

	start(AGILE_LAW_AIMD, 4, 10);
	take(&p);
	agile_adaptx_close(&lim);
	env.now = 20 * MS;
	give(&p, true, 20 * MS);
	agile_adaptx_stats(&lim, env.now, &st);
	ck_assert_int_eq(st.in_flight, 0);
	ck_assert_uint_eq(st.success, 1);
	ck_assert_int_eq(st.available, 0); /* closed: nothing to acquire */
	ck_assert(st.closed);
}
END_TEST

START_TEST(adaptx_close_drain_waits_for_in_flight_work)
{
	struct agile_adaptx_permit p;

	start(AGILE_LAW_AIMD, 4, 10);
	take(&p);
	env.to_release = &p;
	env.action = release_scripted;
	env.act_on_sleep = 5;
	ck_assert_int_eq(agile_adaptx_close_drain(&lim, SEC, &hooks), 0);
	/* Polled every 10 ms; the release came on the fifth poll. */
	ck_assert_int_eq(env.sleeps, 5);
	ck_assert_int_eq(env.slept_until[0], 10 * MS);
	ck_assert_int_eq(env.now, 50 * MS);
	ck_assert(agile_adaptx_is_closed(&lim));
}
END_TEST

START_TEST(adaptx_close_drain_that_times_out_says_so)
{
	struct agile_adaptx_permit p, q;

	start(AGILE_LAW_AIMD, 4, 10);
	take(&p);
	ck_assert_int_eq(agile_adaptx_close_drain(&lim, 35 * MS, &hooks), -ETIMEDOUT);
	ck_assert_int_eq(env.now, 35 * MS);
	ck_assert_int_eq(env.slept_until[3], 35 * MS); /* cut to the deadline */
	/* Still closed, and a second drain is refused as closed. */
	ck_assert(agile_adaptx_is_closed(&lim));
	ck_assert_int_eq(agile_adaptx_try_acquire(&lim, &q), -ESHUTDOWN);
	ck_assert_int_eq(agile_adaptx_close_drain(&lim, SEC, &hooks), -ESHUTDOWN);
	give(&p, true, MS);
	ck_assert_int_eq(agile_adaptx_in_flight(&lim), 0);
}
END_TEST

START_TEST(adaptx_close_drain_without_timeout_does_not_wait)
{
	struct agile_adaptx_permit p;

	start(AGILE_LAW_AIMD, 4, 10);
	take(&p);
	ck_assert_int_eq(agile_adaptx_close_drain(&lim, 0, NULL), -ETIMEDOUT);
	ck_assert_int_eq(env.sleeps, 0);
	ck_assert(agile_adaptx_is_closed(&lim));

	setup();
	start(AGILE_LAW_AIMD, 4, 10);
	ck_assert_int_eq(agile_adaptx_close_drain(&lim, -5, NULL), 0);
	/* A positive timeout needs a clock, and nothing closes without one. */
	setup();
	start(AGILE_LAW_AIMD, 4, 10);
	ck_assert_int_eq(agile_adaptx_close_drain(&lim, SEC, NULL), -EINVAL);
	ck_assert(!agile_adaptx_is_closed(&lim));
}
END_TEST

/* --- reset and stats ---------------------------------------------------------- */

START_TEST(adaptx_reset_stats_restores_the_initial_state)
{
	struct agile_adaptx_permit p;
	struct agile_adaptx_stats st;

	start(AGILE_LAW_AIMD, 8, 100);
	for (int w = 0; w < 3; w++) {
		take(&p);
		env.now = (w + 1) * SEC;
		give(&p, false, 10 * MS);
	}
	agile_adaptx_try_acquire(&lim, &p); /* leave one in flight */
	agile_adaptx_stats(&lim, env.now, &st);
	ck_assert_int_eq(st.limit, 1);
	ck_assert_uint_eq(st.decreases, 3);
	agile_adaptx_reset_stats(&lim, env.now);
	agile_adaptx_stats(&lim, env.now, &st);
	ck_assert_int_eq(st.limit, 8);
	ck_assert_int_eq(st.in_flight, 1);
	ck_assert_uint_eq(st.total + st.success + st.failures + st.rejected, 0);
	ck_assert_uint_eq(st.increases + st.decreases, 0);
	ck_assert_int_eq(st.max_latency_ns, 0);
	ck_assert_uint_eq(lim.law.seen, 0);
	ck_assert_int_eq(st.available, 7);
	/* The held permit still releases cleanly. */
	give(&p, true, MS);
	ck_assert_int_eq(agile_adaptx_in_flight(&lim), 0);
}
END_TEST

START_TEST(adaptx_reset_stats_raises_the_limit_to_in_flight)
{
	struct agile_adaptx_permit p[6];
	struct agile_adaptx_stats st;

	start(AGILE_LAW_AIMD, 6, 100);
	for (int i = 0; i < 6; i++)
		take(&p[i]);
	give(&p[0], false, MS);
	take(&p[0]);
	env.now = SEC;
	agile_adaptx_advance(&lim, env.now, &hooks); /* 6 -> 3, debt 3 */
	ck_assert_int_eq(agile_adaptx_limit(&lim), 3);
	struct agile_law_options o = lim.law.config;
	o.initial_limit = 2; /* pretend a smaller initial limit */
	lim.law.config = o;
	agile_adaptx_reset_stats(&lim, env.now);
	agile_adaptx_stats(&lim, env.now, &st);
	/* 6 in flight > initial 2: the limit is 6, no debt, nothing idle. */
	ck_assert_int_eq(st.limit, 6);
	ck_assert_int_eq(st.debt, 0);
	ck_assert_int_eq(st.available, 0);
}
END_TEST

START_TEST(adaptx_stats_latency_fields_are_exact)
{
	struct agile_adaptx_permit p;
	struct agile_adaptx_stats st;
	/* 11 samples, recorded out of order: 10, 20, ..., 110 ms. */
	int64_t lat[] = {70, 10, 110, 30, 50, 20, 90, 40, 100, 60, 80};

	start(AGILE_LAW_AIMD, 4, 10);
	for (int i = 0; i < 11; i++) {
		env.now = (i + 1) * MS;
		take(&p);
		give(&p, true, lat[i] * MS);
	}
	agile_adaptx_stats(&lim, env.now, &st);
	ck_assert_int_eq(st.min_latency_ns, 10 * MS);
	ck_assert_int_eq(st.max_latency_ns, 110 * MS);
	ck_assert_int_eq(st.avg_latency_ns, 60 * MS);
	/* Ranks (n - 1) x q rounded down: 5 -> 60 ms and 9 -> 100 ms. */
	ck_assert_int_eq(st.p50_latency_ns, 60 * MS);
	ck_assert_int_eq(st.p99_latency_ns, 100 * MS);
	ck_assert_uint_eq(st.total, 11);
	ck_assert_uint_eq(st.success, 11);

	/* The average truncates: 1, 2 ns -> 1 ns. */
	setup();
	start(AGILE_LAW_AIMD, 4, 10);
	take(&p);
	give(&p, true, 1);
	take(&p);
	give(&p, true, 2);
	agile_adaptx_stats(&lim, env.now, &st);
	ck_assert_int_eq(st.avg_latency_ns, 1);
	ck_assert_int_eq(st.p99_latency_ns, 1); /* rank int(1 x 0.99) = 0 */
}
END_TEST

START_TEST(adaptx_stats_cover_only_the_last_sample_window)
{
	struct agile_adaptx_permit p;
	struct agile_adaptx_stats st;

	start(AGILE_LAW_AIMD, 4, 10);
	env.now = 100 * MS;
	take(&p);
	give(&p, true, 900 * MS);
	env.now = 1500 * MS;
	take(&p);
	give(&p, true, 5 * MS);
	/* At 1.5 s the window reaches back past 0.5 s: only the 5 ms one. */
	agile_adaptx_stats(&lim, env.now, &st);
	ck_assert_int_eq(st.max_latency_ns, 5 * MS);
	ck_assert_int_eq(st.p50_latency_ns, 5 * MS);
	/* At 1.1 s both are in; at 2.5 s neither (a sample exactly a window
	 * old is out). */
	agile_adaptx_stats(&lim, 1100 * MS - 1, &st);
	ck_assert_int_eq(st.max_latency_ns, 900 * MS);
	agile_adaptx_stats(&lim, 2500 * MS, &st);
	ck_assert_int_eq(st.max_latency_ns, 0);
	ck_assert_int_eq(st.avg_latency_ns, 0);
	ck_assert_uint_eq(st.success, 2);
}
END_TEST

START_TEST(adaptx_history_keeps_the_newest_samples)
{
	struct agile_adaptx_permit p;
	struct agile_adaptx_stats st;
	struct agile_law_options o = plain(AGILE_LAW_AIMD, 4, 10);

	agile_law_set_sample_window_ns(&o, 10 * MS); /* capacity 100 */
	ck_assert_int_eq(agile_adaptx_init(&lim, &o, NULL, 0), 0);
	ck_assert_int_eq(lim.ring_capacity, 100);
	for (int i = 1; i <= 150; i++) {
		take(&p);
		give(&p, true, i); /* all at t = 0 */
	}
	agile_adaptx_stats(&lim, 0, &st);
	/* The ring holds 51..150. */
	ck_assert_int_eq(st.min_latency_ns, 51);
	ck_assert_int_eq(st.max_latency_ns, 150);
	ck_assert_int_eq(st.p50_latency_ns, 100); /* rank 49 */
}
END_TEST

/* --- the core controller as the law ---------------------------------------------- */

START_TEST(adaptx_agile_law_drives_the_core_limiter)
{
	struct agile_law_options o = plain(AGILE_LAW_AGILE, 8, 64);
	struct agile_adaptx_permit p[9];
	struct agile_adaptx_stats st;

	ck_assert_int_eq(agile_adaptx_init(&lim, &o, NULL, 0), 0);
	ck_assert_int_eq(agile_adaptx_limit(&lim), 8);
	for (int i = 0; i < 8; i++)
		take(&p[i]);
	ck_assert_int_eq(p[7].in_flight, 7);
	ck_assert_int_eq(agile_adaptx_try_acquire(&lim, &p[8]), AGILE_EOVERLOADED);
	ck_assert(!agile_adaptx_allow(&lim));
	for (int i = 0; i < 8; i++)
		give(&p[i], true, 10 * MS);
	ck_assert_int_eq(agile_adaptx_in_flight(&lim), 0);
	/* The core's tick runs at the sample window. */
	ck_assert_int_eq(agile_adaptx_advance(&lim, SEC - 1, &hooks),
	                 AGILE_LAW_NOT_DUE);
	ck_assert_int_ne(agile_adaptx_advance(&lim, SEC, &hooks), AGILE_LAW_NOT_DUE);
	agile_adaptx_stats(&lim, SEC, &st);
	ck_assert_int_eq(st.law, AGILE_LAW_AGILE);
	ck_assert_uint_eq(st.success, 8);
	ck_assert_int_eq(st.limit, agile_adaptx_limit(&lim));
	ck_assert_int_ge(st.limit, 1);
	ck_assert_int_le(st.limit, 64);
}
END_TEST

START_TEST(adaptx_agile_law_runs_with_a_given_core_config)
{
	struct agile_law_options o = plain(AGILE_LAW_AGILE, 8, 64);
	struct agile_config core = {.max_rate = 32, .initial_rate = 3,
	                            .floor_rate = 2, .tick_ns = 250 * MS,
	                            .baseline_probe_ns =
	                            AGILE_BASELINE_PROBE_OFF};

	ck_assert_int_eq(agile_adaptx_init(&lim, &o, &core, 0), 0);
	ck_assert_int_eq(agile_adaptx_limit(&lim), 3);
	ck_assert_int_eq(agile_conc_config(&lim.core)->tick_ns, 250 * MS);
	ck_assert_int_eq(agile_adaptx_advance(&lim, 250 * MS - 1, &hooks),
	                 AGILE_LAW_NOT_DUE);
	ck_assert_int_ne(agile_adaptx_advance(&lim, 250 * MS, &hooks),
	                 AGILE_LAW_NOT_DUE);
	/* A configuration the core refuses fails the init. */
	core.max_rate = 0;
	ck_assert_int_eq(agile_adaptx_init(&lim, &o, &core, 0), -EINVAL);
}
END_TEST

START_TEST(adaptx_agile_law_execute_and_reset_keep_in_flight)
{
	struct agile_law_options o = plain(AGILE_LAW_AGILE, 4, 16);
	struct agile_adaptx_permit p;
	int rc = 1;

	ck_assert_int_eq(agile_adaptx_init(&lim, &o, NULL, 0), 0);
	env.fn_duration = 3 * MS;
	ck_assert_int_eq(agile_adaptx_execute(&lim, AGILE_ADAPTX_NO_DEADLINE, &hooks,
	                                      callback, &env, &rc), 0);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(env.seen_law, AGILE_LAW_AGILE);
	ck_assert_int_eq(env.seen_limit, 4);
	ck_assert_uint_eq(lim.core.loop.totals.samples, 1);
	take(&p);
	agile_adaptx_reset_stats(&lim, env.now);
	ck_assert_int_eq(agile_adaptx_in_flight(&lim), 1);
	ck_assert_uint_eq(lim.core.loop.totals.samples, 0);
	give(&p, true, MS);
	ck_assert_int_eq(agile_adaptx_in_flight(&lim), 0);
}
END_TEST

/* --- threads ------------------------------------------------------------------ */

#define STRESS_THREADS 8
#define STRESS_ROUNDS 20000
#define STRESS_MAX 5

static int64_t stress_clock;
static int64_t stress_peak;

static int64_t stress_now(void *arg)
{
	(void)arg;
	return __atomic_add_fetch(&stress_clock, 1000, __ATOMIC_RELAXED);
}

static void *stress_worker(void *arg)
{
	struct agile_adaptx_hooks h = {.now_ns = stress_now};
	struct agile_adaptx_permit p;

	(void)arg;
	for (int i = 0; i < STRESS_ROUNDS; i++) {
		if (agile_adaptx_try_acquire(&lim, &p) != 0)
			continue;
		int64_t n = agile_adaptx_in_flight(&lim);
		int64_t cur = __atomic_load_n(&stress_peak, __ATOMIC_RELAXED);
		while (n > cur && !__atomic_compare_exchange_n(
			&stress_peak, &cur, n, true, __ATOMIC_RELAXED,
			__ATOMIC_RELAXED))
			;
		agile_adaptx_release(&lim, &p, i % 7 != 0, 50000, stress_now(NULL),
		                     &h);
		agile_adaptx_release(&lim, &p, true, 50000, stress_now(NULL), &h);
	}
	return NULL;
}

/* Many threads admit and release (twice each, the second a no-op) while
 * windows close and the AIMD limit moves: in flight never passes the
 * maximum and returns to zero. */
START_TEST(adaptx_threads_never_exceed_the_maximum)
{
	pthread_t t[STRESS_THREADS];
	struct agile_law_options o = plain(AGILE_LAW_AIMD, 3, STRESS_MAX);
	struct agile_adaptx_stats st;

	agile_law_set_sample_window_ns(&o, 5 * MS);
	ck_assert_int_eq(agile_adaptx_init(&lim, &o, NULL, 0), 0);
	for (int i = 0; i < STRESS_THREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, stress_worker, NULL), 0);
	for (int i = 0; i < STRESS_THREADS; i++)
		pthread_join(t[i], NULL);
	agile_adaptx_stats(&lim, stress_clock, &st);
	ck_assert_int_eq(st.in_flight, 0);
	ck_assert_int_le(stress_peak, STRESS_MAX);
	ck_assert_uint_eq(st.success + st.failures, st.total);
	ck_assert_uint_eq(st.total + st.rejected,
	                  (uint64_t)STRESS_THREADS * STRESS_ROUNDS);
	ck_assert_int_ge(st.limit, 1);
	ck_assert_int_le(st.limit, STRESS_MAX);
}
END_TEST

Suite *adaptx_suite(void)
{
	Suite *s = suite_create("adaptx");
	TCase *admission = tcase_create("admission");
	TCase *acquire = tcase_create("acquire");
	TCase *execute = tcase_create("execute");
	TCase *debt = tcase_create("debt");
	TCase *window = tcase_create("window");
	TCase *close = tcase_create("close");
	TCase *stats = tcase_create("stats");
	TCase *core = tcase_create("core");
	TCase *threads = tcase_create("threads");
	TCase *all[] = {admission, acquire, execute, debt, window, close, stats,
	                core, threads};

	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		tcase_add_checked_fixture(all[i], setup, NULL);

	tcase_add_test(admission, adaptx_defaults_are_adaptx_defaults);
	tcase_add_test(admission, adaptx_options_are_validated_as_documented);
	tcase_add_test(admission, adaptx_try_acquire_admits_up_to_the_limit);
	tcase_add_test(admission, adaptx_release_takes_effect_once);
	tcase_add_test(admission, adaptx_in_flight_never_exceeds_the_maximum);
	tcase_add_test(admission, adaptx_allow_is_a_hint_that_claims_nothing);
	suite_add_tcase(s, admission);

	tcase_add_test(acquire, adaptx_acquire_cancelled_first_never_consumes_a_permit);
	tcase_add_test(acquire, adaptx_acquire_past_deadline_never_consumes_a_permit);
	tcase_add_test(acquire, adaptx_acquire_waits_for_a_release);
	tcase_add_test(acquire, adaptx_acquire_times_out_while_waiting);
	tcase_add_test(acquire, adaptx_acquire_cancelled_while_waiting);
	tcase_add_test(acquire, adaptx_acquire_wakes_on_close);
	tcase_add_test(acquire, adaptx_acquire_needs_a_clock);
	suite_add_tcase(s, acquire);

	tcase_add_test(execute, adaptx_execute_passes_the_admission_snapshot);
	tcase_add_test(execute, adaptx_execute_reports_the_callback_failure);
	tcase_add_test(execute, adaptx_execute_without_a_callback_is_einval_first);
	tcase_add_test(execute, adaptx_execute_skip_keeps_the_totals_only);
	tcase_add_test(execute, adaptx_execute_waits_with_the_deadline);
	tcase_add_test(execute, adaptx_try_execute_runs_only_with_a_free_permit);
	tcase_add_test(execute, adaptx_try_execute_checks_in_adaptx_order);
	suite_add_tcase(s, execute);

	tcase_add_test(debt, adaptx_shrink_pulls_idle_permits_at_once);
	tcase_add_test(debt, adaptx_shrink_retires_held_permits_on_release);
	tcase_add_test(debt, adaptx_growth_pays_the_debt_first);
	suite_add_tcase(s, debt);

	tcase_add_test(window, adaptx_one_adjustment_per_window_however_many_failures);
	tcase_add_test(window, adaptx_warmup_and_utilisation_on_defaults);
	tcase_add_test(window, adaptx_jitter_draws_come_from_the_hook);
	tcase_add_test(window, adaptx_limit_change_hook_sees_old_and_new);
	tcase_add_test(window, adaptx_vegas_backs_off_when_latency_climbs);
	tcase_add_test(window, adaptx_advance_closes_a_window_without_a_release);
	suite_add_tcase(s, window);

	tcase_add_test(close, adaptx_close_is_idempotent_and_final);
	tcase_add_test(close, adaptx_release_after_close_still_frees_and_counts);
	tcase_add_test(close, adaptx_close_drain_waits_for_in_flight_work);
	tcase_add_test(close, adaptx_close_drain_that_times_out_says_so);
	tcase_add_test(close, adaptx_close_drain_without_timeout_does_not_wait);
	suite_add_tcase(s, close);

	tcase_add_test(stats, adaptx_reset_stats_restores_the_initial_state);
	tcase_add_test(stats, adaptx_reset_stats_raises_the_limit_to_in_flight);
	tcase_add_test(stats, adaptx_stats_latency_fields_are_exact);
	tcase_add_test(stats, adaptx_stats_cover_only_the_last_sample_window);
	tcase_add_test(stats, adaptx_history_keeps_the_newest_samples);
	suite_add_tcase(s, stats);

	tcase_add_test(core, adaptx_agile_law_drives_the_core_limiter);
	tcase_add_test(core, adaptx_agile_law_runs_with_a_given_core_config);
	tcase_add_test(core, adaptx_agile_law_execute_and_reset_keep_in_flight);
	suite_add_tcase(s, core);

	tcase_add_test(threads, adaptx_threads_never_exceed_the_maximum);
	tcase_set_timeout(threads, 60);
	suite_add_tcase(s, threads);
	return s;
}
