/*
 * check_knobs.c - the seed knobs from the variable to the behaviour: each
 * test parses a rule as the preload does (rules.c), initialises a slot's
 * resilience region from it (resilience.c), and drives the libagile
 * primitive the key tunes on a virtual clock, next to the same rule
 * without the key.  So each key's test fails when the key is not read, is
 * read into the wrong field, or its field does not reach the primitive.
 * The keys' parsing and one-line errors are check_rules.c's.
 *
 * The controller's rules a-d (delivered_share=, knee_ramp=,
 * probe_acceleration=, goodput_cut=, each also "off") resolve into the
 * controller's configuration here; their behaviour with each rule off is
 * tests/core/check_controller.c's controller_rules_off_one_by_one.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resilience.h"
#include "rules.h"

#define MS AGILE_NS_PER_MS
#define SEC AGILE_NS_PER_S

static struct agile_rule rule;
static char first_message[512];
static int messages;

static void collect(const char *message, void *arg)
{
	(void)arg;
	if (messages++ == 0)
		snprintf(first_message, sizeof(first_message), "%s", message);
}

/* The region is large (the client table alone is 45 KB): one, static. */
static struct agile_state_resilience zone;

/* Parse `value` as AGILE_DEST_API (or AGILE_LISTEN_WEB when it starts with
 * ':'), cleanly, and initialise the region from it at time 0. */
static struct agile_state_resilience *slot(const char *value)
{
	int errors;

	messages = 0;
	if (value[0] == ':')
		errors = agile__listen_parse("AGILE_LISTEN_WEB", "web", value,
		                            &rule, collect, NULL);
	else
		errors = agile__rule_parse("AGILE_DEST_API", "API", value, &rule,
		                          collect, NULL);
	ck_assert_msg(errors == 0, "\"%s\": %d errors, first: %s", value,
	              errors, first_message);
	ck_assert_int_eq(agile__resilience_state_init(&zone, &rule.resilience,
	                                             &rule.config, 0), 0);
	return &zone;
}

/* `n` calls admitted at once, each observed while all are in flight. */
static void conc_calls(struct agile_conc_limiter *l, int n, int64_t latency)
{
	for (int i = 0; i < n; i++)
		ck_assert(agile_conc_try_take(l));
	for (int i = 0; i < n; i++)
		agile_conc_observe(l, latency);
	for (int i = 0; i < n; i++)
		agile_conc_release(l);
}

/* One window of `n` calls at once, then the window's close at `at`. */
static uint64_t window(struct agile_conc_limiter *l, int n, int64_t at)
{
	conc_calls(l, n, 10 * MS);
	ck_assert(agile_conc_tick_if_due(l, at));
	return agile_conc_limit(l);
}

#define AIMD "127.0.0.1:80 max=5 concurrency=adaptive,law=aimd "

/*
 * law_warmup=, law_increase=, law_decrease=, law_utilization= on an AIMD
 * cap of 10: no warm-up, +2 a window whose peak reaches half the limit,
 * cuts to 0.8 x.  adaptx's defaults wait for ten samples, then add 1 only
 * at 90% of the limit, and halve.
 */
START_TEST(knobs_law_aimd)
{
	struct agile_conc_limiter *l;

	l = &slot(AIMD "law_warmup=0 law_increase=2 law_decrease=0.8 "
	          "law_utilization=0.5")->core;
	ck_assert_uint_eq(window(l, 5, SEC), 12);
	ck_assert(agile_conc_try_take(l));
	agile_conc_unavailable(l);
	agile_conc_release(l);
	ck_assert(agile_conc_tick_if_due(l, 2 * SEC));
	ck_assert_uint_eq(agile_conc_limit(l), 9); /* 0.8 x 12 = 9.6 */

	l = &slot(AIMD)->core;
	ck_assert_uint_eq(window(l, 5, SEC), 10);  /* warming up */
	ck_assert_uint_eq(window(l, 5, 2 * SEC), 10); /* 5 < ceil(9) */
	ck_assert_uint_eq(window(l, 10, 3 * SEC), 11);
	ck_assert(agile_conc_try_take(l));
	agile_conc_unavailable(l);
	agile_conc_release(l);
	ck_assert(agile_conc_tick_if_due(l, 4 * SEC));
	ck_assert_uint_eq(agile_conc_limit(l), 5);
}
END_TEST

/* The law's options as the slot's limiter runs them. */
static struct agile_law_options law_of(const char *value)
{
	return slot(value)->core.law.config;
}

/* One closed window's summary for the pure law steps. */
static struct agile_law_summary summary(double mean_ns)
{
	struct agile_law_summary w = { .samples = 10, .peak_in_flight = 10,
	                               .mean_ns = mean_ns,
	                               .min_ns = (int64_t)mean_ns,
	                               .timed = 10 };
	return w;
}

#define GRADIENT "127.0.0.1:80 max=5 concurrency=adaptive,law=gradient "
#define VEGAS "127.0.0.1:80 max=5 concurrency=adaptive,law=vegas "

/*
 * law_smoothing= and law_tolerance= through Gradient: its average starts
 * at the first window's 100 ms mean; a 130 ms window folds in as
 * 0.5 x 130 + 0.5 x 100 = 115 (adaptx's 0.2: 106), and its gradient
 * (130 - 115) / 115 = 0.13 is inside a tolerance of 0.2, a +1; with the
 * defaults 0.226 is past 0.1, a cut to 10 x (1 - 0.226 x 0.5) = 8.
 */
START_TEST(knobs_law_gradient)
{
	struct agile_law_options o;
	struct agile_law_summary w;
	struct agile_gradient g;

	o = law_of(GRADIENT "law_smoothing=0.5 law_tolerance=0.2");
	memset(&g, 0, sizeof(g));
	w = summary(100 * MS);
	ck_assert_int_eq(agile_gradient_step(&g, &o, 10, &w), 10);
	w = summary(130 * MS);
	ck_assert_int_eq(agile_gradient_step(&g, &o, 10, &w), 11);
	ck_assert_double_eq_tol(g.avg_ns, 115 * MS, 1);

	o = law_of(GRADIENT);
	memset(&g, 0, sizeof(g));
	w = summary(100 * MS);
	agile_gradient_step(&g, &o, 10, &w);
	w = summary(130 * MS);
	ck_assert_int_eq(agile_gradient_step(&g, &o, 10, &w), 8);
	ck_assert_double_eq_tol(g.avg_ns, 106 * MS, 1);
}
END_TEST

/*
 * law_min_decay= through Vegas: at each window the minimum first drifts
 * toward the average by the decay.  Minimum 50 ms, average 150 ms, a
 * window whose own minimum is higher: at 0.5 the minimum becomes 100 ms,
 * at adaptx's 0.001 it stays near 50.
 */
START_TEST(knobs_law_min_decay)
{
	struct agile_law_options o;
	struct agile_law_summary w = summary(150 * MS);
	struct agile_vegas v = { .avg_ns = 150 * MS, .min_ns = 50 * MS };

	o = law_of(VEGAS "law_min_decay=0.5");
	agile_vegas_step(&v, &o, 10, &w);
	ck_assert_double_eq_tol(v.min_ns, 100 * MS, 1);

	o = law_of(VEGAS);
	v.avg_ns = 150 * MS;
	v.min_ns = 50 * MS;
	agile_vegas_step(&v, &o, 10, &w);
	ck_assert_double_eq_tol(v.min_ns, 50.1 * MS, 1);
}
END_TEST

/* law_jitter=: the share of an increase that may be withheld.  An
 * increase from 10 to 30 with the largest draw: at 0.5 nine calls are
 * withheld, at 0 none, at adaptx's 0.1 one. */
START_TEST(knobs_law_jitter)
{
	const struct agile_law_draw draw = { .amount = 0.999, .coin = 0 };
	struct agile_law_options o;

	o = law_of(AIMD "law_jitter=0.5");
	ck_assert_int_eq(agile_law_jitter(&o, 10, 30, &draw), 21);
	o = law_of(AIMD "law_jitter=0");
	ck_assert_int_eq(agile_law_jitter(&o, 10, 30, &draw), 30);
	o = law_of(AIMD);
	ck_assert_int_eq(agile_law_jitter(&o, 10, 30, &draw), 29);
}
END_TEST

#define BREAKER "127.0.0.1:80 max=5 breaker=sre "

/* Fail `n` calls at now_ns. */
static void fail_calls(struct agile_breaker *b, int n, int64_t now_ns)
{
	for (int i = 0; i < n; i++) {
		struct agile_breaker_call call;

		ck_assert(agile_breaker_allow(b, now_ns, 0.999, &call));
		agile_breaker_fail(b, &call, now_ns);
	}
}

/*
 * breaker_floor=, breaker_buckets=, breaker_probe=: an outage of 20
 * failed calls in the last bucket.  With 4 buckets the failing run of one
 * bucket is a quarter of the window, so k decays a quarter of the way to
 * its floor: 1.5 - 0.1 x 1/4 with a floor of 1.1 given as 1.4 (the
 * preset's 40 buckets: 1.5 - 0.4 / 40).  Every call is then refused at a
 * roll of 0 but the probe: one call goes through once more than the quiet
 * spell (3 s; the preset's 1 s) has passed since the last one let
 * through.
 */
START_TEST(knobs_breaker)
{
	struct agile_breaker_reading reading;
	struct agile_breaker_call call;
	struct agile_breaker *b;

	b = &slot(BREAKER "breaker_floor=1.4 breaker_buckets=4 "
	          "breaker_probe=3s")->breaker;
	fail_calls(b, 20, 0);
	agile_breaker_read(b, 0, &reading);
	ck_assert_int_eq(reading.failing, 1);
	ck_assert_double_eq_tol(reading.weight, 1.5 - 0.1 / 4, 1e-9);
	ck_assert(!agile_breaker_allow(b, 3 * SEC, 0.0, &call));
	ck_assert(agile_breaker_allow(b, 3 * SEC + 1, 0.0, &call));

	b = &slot(BREAKER)->breaker;
	fail_calls(b, 20, 0);
	agile_breaker_read(b, 0, &reading);
	ck_assert_double_eq_tol(reading.weight, 1.5 - 0.4 / 40, 1e-9);
	ck_assert(agile_breaker_allow(b, 2 * SEC, 0.0, &call));
}
END_TEST

#define SHED ":80 max=8 shed=cpu "

/*
 * shed_latency=, shed_window=, shed_buckets=, shed_floor=: with nothing
 * measured the capacity is max(1, 1 x latency / width) x factor: a 1 s
 * latency over 100 ms buckets (2 s in 20) is 10 calls, 5 at the CPU's
 * full 999 with a floor of 0.5.  The preset's 1 s over 100 ms (5 s in 50)
 * is 10 too, and at 999 its floor of 0.1 leaves 1; a latency of 50 ms
 * gives the least capacity, 1.
 */
START_TEST(knobs_shed_capacity)
{
	struct agile_shedder_reading reading;
	struct agile_shedder *s;

	s = &slot(SHED "shed_latency=1s shed_window=2s shed_buckets=20 "
	          "shed_floor=0.5")->shedder;
	agile_shedder_read(s, 0, 999, &reading);
	ck_assert_double_eq(reading.fastest_ns, 1e9);
	ck_assert_double_eq_tol(reading.capacity, 10, 1e-9);
	ck_assert_double_eq(reading.factor, 0.5);

	s = &slot(SHED "shed_latency=50ms")->shedder;
	agile_shedder_read(s, 0, 999, &reading);
	ck_assert_double_eq(reading.capacity, 1);
	ck_assert_double_eq(reading.factor, 0.1);

	s = &slot(SHED "shed_window=1s shed_buckets=20")->shedder;
	agile_shedder_read(s, 0, 0, &reading);
	ck_assert_double_eq_tol(reading.capacity, 20, 1e-9); /* 1 s / 50 ms */
}
END_TEST

/* Five calls admitted on a cool CPU and one failed, four left in flight;
 * then one more asked for at 1 ms with the CPU at 950: whether it was
 * admitted. */
static bool shed_after_four(struct agile_shedder *s)
{
	struct agile_shedder_ticket tickets[6];

	for (int i = 0; i < 5; i++)
		ck_assert(agile_shedder_allow(s, 0, 0, &tickets[i]));
	agile_shedder_fail(s, &tickets[0]);
	return agile_shedder_allow(s, MS, 950, &tickets[5]);
}

/*
 * shed_beta= and shed_cool=: after shed_after_four the moving average is
 * 0.5 x 0 + 0.5 x 4 = 2 at a beta of 0.5 (the preset's 0.9: 0.4).  At a
 * CPU of 950 the server is hot, and full when the average and the count
 * both exceed the capacity (1: 50 ms of latency over 100 ms buckets,
 * scaled by the CPU's factor of 0.5): refused at 0.5, admitted at 0.9.  Two seconds later on a cool CPU the
 * server is still hot within shed_cool=3s of that refusal, and no longer
 * with the preset's 1 s.
 */
START_TEST(knobs_shed_beta_cool)
{
	struct agile_shedder_reading reading;
	struct agile_shedder *s;

	s = &slot(SHED "shed_latency=50ms shed_beta=0.5 shed_cool=3s")->shedder;
	ck_assert(!shed_after_four(s));
	ck_assert_double_eq(s->average, 2);
	agile_shedder_read(s, 2 * SEC, 0, &reading);
	ck_assert(reading.hot);

	s = &slot(SHED "shed_latency=50ms shed_beta=0.5")->shedder;
	ck_assert(!shed_after_four(s));
	agile_shedder_read(s, 2 * SEC, 0, &reading);
	ck_assert(!reading.hot);

	s = &slot(SHED "shed_latency=50ms")->shedder;
	ck_assert(shed_after_four(s));
	ck_assert_double_eq_tol(s->average, 0.4, 1e-9);
}
END_TEST

#define RETRY "127.0.0.1:80 max=5 retry=3 "

/* The waits of retry='s three retries at draws of 0.5. */
static void retry_waits(const char *value, int64_t out[3])
{
	const double draws[3] = { 0.5, 0.5, 0.5 };
	struct agile_backoff b;

	slot(value);
	agile__resilience_backoff(&rule.resilience, &b);
	ck_assert_int_eq(b.attempts, 4);
	/* The slot keeps what the connect hook uses, for agilestat. */
	ck_assert_mem_eq(&zone.retry_backoff, &b, sizeof(b));
	ck_assert_uint_eq(agile_backoff_schedule(&b, draws, 3, out, 3), 3);
}

/*
 * retry_base=, retry_cap=, retry_factor=, retry_jitter=: 50 ms, x3, held
 * to 120 ms, rigid: 50, 120, 120.  The preset's 100 ms x2 up to 1 s with
 * a 20% spread gives its ceilings at a draw of 0.5: 100, 200, 400; full
 * jitter halves them, spread:0 keeps them.
 */
START_TEST(knobs_retry_backoff)
{
	int64_t w[3];

	retry_waits(RETRY "retry_base=50ms retry_cap=120ms retry_factor=3 "
	            "retry_jitter=rigid", w);
	ck_assert_int_eq(w[0], 50 * MS);
	ck_assert_int_eq(w[1], 120 * MS);
	ck_assert_int_eq(w[2], 120 * MS);
	retry_waits(RETRY, w);
	ck_assert_int_eq(w[0], 100 * MS);
	ck_assert_int_eq(w[1], 200 * MS);
	ck_assert_int_eq(w[2], 400 * MS);
	retry_waits(RETRY "retry_jitter=full", w);
	ck_assert_int_eq(w[2], 200 * MS);
	retry_waits(RETRY "retry_jitter=spread:0", w);
	ck_assert_int_eq(w[2], 400 * MS);
	ck_assert_double_eq(zone.retry_backoff.spread, 0);
}
END_TEST

/*
 * client_rate=5,burst=10: ten requests of one client pass at once, the
 * eleventh waits for the next token, 200 ms later; then 5 a second.
 * Without burst= the burst is the rate: the sixth is refused.
 */
START_TEST(knobs_client_burst)
{
	struct agile_client_table *t;
	int64_t retry;
	int allowed = 0;

	t = &slot(":80 max=8 client_rate=5,burst=10")->clients;
	t->hash_key[0] = 1; /* the preload draws it; any will do here */
	for (int i = 0; i < 10; i++)
		ck_assert(agile_clients_allow(t, 7, 0, &retry));
	ck_assert(!agile_clients_allow(t, 7, 0, &retry));
	ck_assert_int_eq(retry, 200 * MS);
	for (int64_t now = 10 * MS; now <= 2 * SEC; now += 10 * MS)
		allowed += agile_clients_allow(t, 7, now, &retry);
	ck_assert_int_eq(allowed, 10);

	t = &slot(":80 max=8 client_rate=5")->clients;
	for (int i = 0; i < 5; i++)
		ck_assert(agile_clients_allow(t, 7, 0, &retry));
	ck_assert(!agile_clients_allow(t, 7, 0, &retry));
}
END_TEST

/* The rules a-d keys into the controller's configuration: a value, or off
 * (which resolves to the rule's off value whatever the preset says). */
/* baseline_probe=: a listener's cap of requests (proto=http) starts held
 * at its floor for the probe by default, at its initial limit with the
 * probe off, and probes at the interval given; a cap of connections
 * probes only when asked. */
START_TEST(knobs_baseline_probe)
{
	struct agile_state_resilience *z = slot(":8080 max=64 proto=http");

	ck_assert_uint_eq(agile_conc_limit(&z->core), 1);
	ck_assert_int_eq(z->core.probe.interval_ns, 60 * SEC);
	z = slot(":8080 max=64 proto=http baseline_probe=off");
	ck_assert_uint_eq(agile_conc_limit(&z->core), 8);
	ck_assert_int_eq(z->core.probe.interval_ns, 0);
	z = slot(":8080 max=64 proto=http baseline_probe=10s");
	ck_assert_int_eq(z->core.probe.interval_ns, 10 * SEC);
	/* Its sixteen answers end it; the initial limit returns. */
	for (int i = 0; i < AGILE_BASELINE_PROBE_SAMPLES; i++)
		conc_calls(&z->core, 1, 20 * MS);
	ck_assert(agile_conc_tick_if_due(&z->core, 400 * MS));
	ck_assert_uint_eq(agile_conc_limit(&z->core), 8);
	/* Where a permit is a connection, held while it is open, none
	 * unless asked for. */
	z = slot(":8080 max=64");
	ck_assert_uint_eq(agile_conc_limit(&z->core), 8);
	z = slot("127.0.0.1:80 max=5 concurrency=adaptive");
	ck_assert_uint_eq(agile_conc_limit(&z->core),
	                  AGILE_LAW_DEFAULT_INITIAL_LIMIT);
	z = slot("127.0.0.1:80 max=5 concurrency=adaptive baseline_probe=60s");
	ck_assert_uint_eq(agile_conc_limit(&z->core), 1);
	/* The SLO anchor's cap has none. */
	z = slot(":8080 max=64 proto=http slo=50ms");
	ck_assert_int_eq(z->core.probe.interval_ns, 0);
}
END_TEST

START_TEST(knobs_controller_rules)
{
	struct agile_resolved r;

	slot("127.0.0.1:80 max=300 slo=100ms");
	ck_assert_int_eq(agile_resolve(&rule.config, AGILE_KIND_RATE, &r), 0);
	ck_assert_double_eq(r.delivered_share, AGILE_DEFAULT_DELIVERED_SHARE);
	ck_assert_double_eq(r.goodput_cut, AGILE_DEFAULT_GOODPUT_CUT);

	slot("127.0.0.1:80 max=300 slo=100ms goodput_cut=off knee_ramp=off "
	     "probe_acceleration=3 delivered_share=0.8");
	ck_assert_uint_eq(rule.config.rules_off,
	                  AGILE_RULE_GOODPUT | AGILE_RULE_KNEE_RAMP);
	ck_assert_int_eq(agile_resolve(&rule.config, AGILE_KIND_RATE, &r), 0);
	ck_assert_double_eq(r.goodput_cut, 0);
	ck_assert_double_eq(r.knee_ramp, 1);
	ck_assert_double_eq(r.probe_acceleration, 3);
	ck_assert_double_eq(r.delivered_share, 0.8);

	slot("127.0.0.1:80 max=300 slo=100ms delivered_share=off "
	     "probe_acceleration=off");
	ck_assert_int_eq(agile_resolve(&rule.config, AGILE_KIND_RATE, &r), 0);
	ck_assert_double_eq(r.delivered_share, 0);
	ck_assert_double_eq(r.probe_acceleration, 1);
	ck_assert_double_eq(r.knee_ramp, AGILE_DEFAULT_KNEE_RAMP);

}
END_TEST

static Suite *knobs_suite(void)
{
	Suite *s = suite_create("knobs");
	TCase *tc = tcase_create("knobs");

	tcase_add_test(tc, knobs_law_aimd);
	tcase_add_test(tc, knobs_law_gradient);
	tcase_add_test(tc, knobs_law_min_decay);
	tcase_add_test(tc, knobs_law_jitter);
	tcase_add_test(tc, knobs_breaker);
	tcase_add_test(tc, knobs_shed_capacity);
	tcase_add_test(tc, knobs_shed_beta_cool);
	tcase_add_test(tc, knobs_retry_backoff);
	tcase_add_test(tc, knobs_client_burst);
	tcase_add_test(tc, knobs_controller_rules);
	tcase_add_test(tc, knobs_baseline_probe);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(knobs_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
