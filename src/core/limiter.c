/*
 * limiter.c - the two limiters: a rate limiter (leaky bucket + controller)
 * for the outbound direction and a concurrency limiter (semaphore + a law:
 * the controller, or one of adaptx's windowed laws from laws.c) for the
 * inbound one.  They share one "loop": the resolved configuration, the
 * controller, the per-tick histogram, the outcome counters and the tick
 * clock; a windowed law keeps its own window and claims its own steps.
 *
 * Everything here may run in many threads and many processes at once on one
 * struct in shared memory.  The hot path (take, observe, try-take, release)
 * is a handful of atomic operations.  The control step runs once per tick:
 * tick_if_due lets exactly one caller win a compare-and-swap on next_tick_ns,
 * and that caller alone drains the histogram and writes the controller.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "agile.h"
#include "atomics.h"
#include "internal.h"

/* --- the shared loop ------------------------------------------------------ */

static int loop_init(struct agile_loop *loop, const struct agile_config *config,
                     enum agile_kind kind, int64_t now_ns)
{
	struct agile_resolved resolved;
	int rc = agile_resolve(config, kind, &resolved);

	if (rc < 0)
		return rc;
	memset(loop, 0, sizeof(*loop));
	loop->config = resolved;
	agile_controller_init(&loop->ctl, &loop->config);
	loop->next_tick_ns = agile__add_sat(now_ns, resolved.tick_ns);
	loop->last_tick_ns = now_ns;
	return 0;
}

static void loop_observe(struct agile_loop *loop, int64_t rtt_ns)
{
	agile_hist_record(&loop->hist, rtt_ns);
	agile__add_u64(&loop->totals.samples, 1);
	/* What the downstream delivered: an answer, unlike a truncated call,
	 * which only says how long the caller waited. */
	agile__add_u64(&loop->answered_tick, 1);
	/* An answered call proves the downstream is back: the floor returns
	 * from the probe rate.  Check first so the common case only reads. */
	if (agile__load_u32(&loop->ctl.probe_mode))
		agile__store_u32(&loop->ctl.probe_mode, 0);
}

static void loop_observe_truncated(struct agile_loop *loop, int64_t d_ns)
{
	/* A call cut short after d lasted at least d.  Past the SLO that lower
	 * bound is evidence of slowness; shorter, it says nothing.  It never
	 * ends probe mode: nobody saw the downstream answer. */
	if (loop->config.slo_ns > 0 && d_ns > loop->config.slo_ns) {
		agile_hist_record(&loop->hist, d_ns);
		agile__add_u64(&loop->totals.samples, 1);
		agile__add_u64(&loop->totals.truncated, 1);
	} else {
		agile__add_u64(&loop->totals.dropped_truncated, 1);
	}
}

static void loop_unavailable(struct agile_loop *loop)
{
	agile__add_u64(&loop->unreachable_tick, 1);
	agile__add_u64(&loop->totals.unreachable, 1);
}

static void loop_aborted(struct agile_loop *loop)
{
	agile__add_u64(&loop->totals.aborted, 1);
}

static void loop_outcome(struct agile_loop *loop, int64_t d_ns, int error,
                         const struct agile_hooks *hooks)
{
	enum agile_outcome outcome = AGILE_REACHED;

	if (error != 0 && hooks != NULL && hooks->classify != NULL)
		outcome = hooks->classify(error, hooks->arg);
	switch (outcome) {
	case AGILE_UNREACHABLE:
		loop_unavailable(loop);
		break;
	case AGILE_ABORTED:
		loop_aborted(loop);
		break;
	case AGILE_REACHED:
	default:
		loop_observe(loop, d_ns);
		break;
	}
}

/* Win the right to run this tick's step.  next_tick_ns moves to now + tick,
 * not to next + tick: after an idle spell one step runs, never a burst of
 * catch-up steps that would compound the per-tick gains. */
static bool loop_claim_tick(struct agile_loop *loop, int64_t now_ns)
{
	int64_t next = agile__load_i64(&loop->next_tick_ns);

	if (now_ns < next)
		return false;
	return agile__cas_i64(&loop->next_tick_ns, &next,
	                      agile__add_sat(now_ns, loop->config.tick_ns));
}

/* Take the tick's samples, unreachable and answered counts out of the
 * loop, for the step (or the baseline probe's tick) to read. */
static void loop_drain(struct agile_loop *loop,
                       struct agile_hist_snapshot *snap,
                       uint64_t *unreachable, uint64_t *answered)
{
	agile_hist_drain(&loop->hist, snap);
	*unreachable = agile__load_u64(&loop->unreachable_tick);
	agile__sub_u64(&loop->unreachable_tick, *unreachable);
	*answered = agile__load_u64(&loop->answered_tick);
	agile__sub_u64(&loop->answered_tick, *answered);
}

/* Drain the tick, run the law, and return the new target.  `used` is what
 * the actuator saw since the last step, which was `elapsed_s` ago;
 * `pending` says it holds grants still ahead of now. */
static double loop_step(struct agile_loop *loop, int64_t now_ns, double used,
                        double elapsed_s, bool pending)
{
	struct agile_hist_snapshot snap;
	struct agile_tick_input in;

	loop_drain(loop, &snap, &in.unreachable, &in.answered);
	in.hist = &snap;
	in.used = used;
	in.elapsed_s = elapsed_s;
	in.pending = pending;
	double rate = agile_controller_step(&loop->ctl, &loop->config, &in);
	agile__store_i64(&loop->last_tick_ns, now_ns);
	return rate;
}

/* llround, clamped into int64_t and NaN read as 0: the controller's doubles
 * come from a file other processes write.  The clamp repeats
 * agile__trunc_i64's because round() is no function the preload binds
 * (preload/lazymath.c), and llround() must not see what does not fit. */
static int64_t round_ns(double v)
{
	if (v != v)
		return 0;
	if (v >= 0x1p63)
		return INT64_MAX;
	if (v <= -0x1p63)
		return INT64_MIN;
	return (int64_t)llround(v);
}

static void loop_stats(const struct agile_loop *loop, struct agile_stats *out)
{
	const struct agile_controller *c = &loop->ctl;

	memset(out, 0, sizeof(*out));
	out->rate = agile__load_double(&c->rate);
	out->baseline_ns = round_ns(agile__load_double(&c->baseline_ns));
	out->fast_ns = round_ns(agile__load_double(&c->fast_ns));
	out->samples = agile__load_u64(&c->samples);
	out->p50_ns = round_ns(agile__load_double(&c->p50_ns));
	out->p99_ns = round_ns(agile__load_double(&c->p99_ns));
	out->tail_ratio = agile__load_double(&c->tail_ratio);
	out->tail_threshold = agile__load_double(&c->tail_threshold);
	out->cold_start = agile__load_u32(&c->cold_start) != 0;
	out->probe_mode = agile__load_u32(&c->probe_mode) != 0;
	out->used = agile__load_double(&c->used);
	out->unreachable = agile__load_u64(&c->unreachable);
	out->ticks = agile__load_u64(&c->ticks);
	out->blind_ticks = agile__load_u64(&c->blind_ticks);
	out->last_action = (enum agile_action)agile__load_u32(&c->last_action);
	out->totals.samples = agile__load_u64(&loop->totals.samples);
	out->totals.unreachable = agile__load_u64(&loop->totals.unreachable);
	out->totals.truncated = agile__load_u64(&loop->totals.truncated);
	out->totals.dropped_truncated =
		agile__load_u64(&loop->totals.dropped_truncated);
	out->totals.aborted = agile__load_u64(&loop->totals.aborted);
	out->totals.grants = agile__load_u64(&loop->totals.grants);
	out->totals.refused = agile__load_u64(&loop->totals.refused);
	out->delivered = agile__load_double(&c->delivered);
	out->knee_rate = agile__load_double(&c->knee_rate);
}

/* Elapsed seconds between two ticks, never zero (a step forced twice at
 * one instant must not divide by zero), and saturating rather than
 * overflowing when from_ns is garbage. */
static double elapsed_s(int64_t from_ns, int64_t to_ns)
{
	int64_t d = agile__sub_sat(to_ns, from_ns);

	if (d < 1)
		d = 1;
	return (double)d / (double)AGILE_NS_PER_S;
}

/* --- rate limiter ----------------------------------------------------------- */

int agile_rate_init(struct agile_rate_limiter *l,
                    const struct agile_config *config, int64_t now_ns)
{
	/* adaptx's laws bound requests in flight; a bucket has no such
	 * thing to bound. */
	if (config != NULL && config->law != AGILE_LAW_AGILE)
		return -EINVAL;
	int rc = loop_init(&l->loop, config, AGILE_KIND_RATE, now_ns);

	if (rc < 0)
		return rc;
	rc = agile_bucket_init(&l->bucket, l->loop.config.initial_rate,
	                       l->loop.config.max_rate);
	if (rc < 0)
		return rc;
	l->grants_at_tick = 0;
	return 0;
}

int64_t agile_rate_take(struct agile_rate_limiter *l, int64_t now_ns)
{
	int64_t planned = agile_bucket_take(&l->bucket, now_ns);

	agile__add_u64(&l->loop.totals.grants, 1);
	return planned;
}

bool agile_rate_try_take(struct agile_rate_limiter *l, int64_t now_ns,
                         int64_t max_wait_ns, int64_t *planned_ns)
{
	if (!agile_bucket_try_take(&l->bucket, now_ns, max_wait_ns, planned_ns))
		return false;
	agile__add_u64(&l->loop.totals.grants, 1);
	return true;
}

void agile_rate_observe(struct agile_rate_limiter *l, int64_t rtt_ns)
{
	loop_observe(&l->loop, rtt_ns);
}

void agile_rate_observe_truncated(struct agile_rate_limiter *l, int64_t d_ns)
{
	loop_observe_truncated(&l->loop, d_ns);
}

void agile_rate_unavailable(struct agile_rate_limiter *l)
{
	loop_unavailable(&l->loop);
}

void agile_rate_aborted(struct agile_rate_limiter *l)
{
	loop_aborted(&l->loop);
}

void agile_rate_observe_outcome(struct agile_rate_limiter *l, int64_t d_ns,
                                int error, const struct agile_hooks *hooks)
{
	loop_outcome(&l->loop, d_ns, error, hooks);
}

int agile_rate_do(struct agile_rate_limiter *l, const struct agile_hooks *hooks,
                  int (*fn)(void *), void *fn_arg)
{
	int64_t now = hooks->now_ns(hooks->arg);
	int64_t planned = agile_rate_take(l, now);

	if (planned > now && hooks->sleep_until_ns != NULL)
		hooks->sleep_until_ns(planned, hooks->arg);
	/* The clock starts when the call is actually sent, after the wait:
	 * feeding the wait in as latency collapses the rate. */
	int64_t start = hooks->now_ns(hooks->arg);
	int error = fn(fn_arg);
	int64_t end = hooks->now_ns(hooks->arg);
	agile_rate_observe_outcome(l, end - start, error, hooks);
	return error;
}

void agile_rate_tick(struct agile_rate_limiter *l, int64_t now_ns)
{
	uint64_t grants = agile__load_u64(&l->loop.totals.grants);
	double elapsed = elapsed_s(agile__load_i64(&l->loop.last_tick_ns), now_ns);
	double used = (double)(grants - agile__load_u64(&l->grants_at_tick)) /
	              elapsed;

	agile__store_u64(&l->grants_at_tick, grants);
	/* A grant planned after now is a request still waiting to be sent
	 * (an event loop sleeps through its sockets' grants one by one). */
	bool pending = agile__load_i64(&l->bucket.last_ns) > now_ns;
	double rate = loop_step(&l->loop, now_ns, used, elapsed, pending);
	agile_bucket_retime(&l->bucket, rate, now_ns,
	                    l->loop.config.tick_ns);
}

bool agile_rate_tick_if_due(struct agile_rate_limiter *l, int64_t now_ns)
{
	if (!loop_claim_tick(&l->loop, now_ns))
		return false;
	agile_rate_tick(l, now_ns);
	return true;
}

double agile_rate_rate(const struct agile_rate_limiter *l)
{
	return agile__load_double(&l->loop.ctl.rate);
}

uint64_t agile_rate_inflight_cap(const struct agile_rate_limiter *l,
                                 double gain)
{
	double rate = agile_rate_rate(l);
	double window = agile_controller_window_ns(&l->loop.ctl,
	                                           &l->loop.config);
	double cap;

	if (!(gain > 0) || !(rate > 0) || !(window > 0))
		return 0;
	cap = ceil(gain * rate * window / (double)AGILE_NS_PER_S);
	if (!(cap >= 1))
		return 1;
	if (cap > (double)AGILE_INFLIGHT_CAP_MAX)
		return AGILE_INFLIGHT_CAP_MAX;
	return (uint64_t)cap;
}

void agile_rate_stats(const struct agile_rate_limiter *l, struct agile_stats *out)
{
	loop_stats(&l->loop, out);
}

/* --- concurrency limiter ---------------------------------------------------- */

/* The whole requests of a target, at least 1; a NaN target (garbage in
 * the shared controller) reads as 1, one too large as the most there is. */
static uint64_t limit_for(double target)
{
	double f = floor(target);

	if (!(f >= 1))
		return 1;
	if (f >= 0x1p64)
		return UINT64_MAX;
	return (uint64_t)f;
}

/* True when one of adaptx's windowed laws moves the limit.  The kind is
 * written once, at init, so a plain read is enough. */
static bool windowed(const struct agile_conc_limiter *l)
{
	return l->law.config.kind != AGILE_LAW_AGILE;
}

/* A windowed law's options from the limiter's resolved configuration: its
 * bounds in requests in flight, its tick as the sample window, and its SLO
 * as Vegas's target; the rest are the caller's `tuning`, or adaptx's
 * defaults without it. */
static void law_options_for(const struct agile_resolved *r,
                            enum agile_law_kind kind,
                            const struct agile_law_options *tuning,
                            struct agile_law_options *o)
{
	if (tuning != NULL)
		*o = *tuning;
	else
		agile_law_options_init(o);
	o->kind = (uint32_t)kind;
	o->min_limit = r->floor_rate;
	o->max_limit = r->max_rate;
	o->initial_limit = r->initial_rate;
	o->sample_window_ns = r->tick_ns;
	if (r->slo_ns > 0)
		o->target_latency_ns = r->slo_ns;
	agile_law_options_resolve(o);
}

/* The baseline probe's interval, 0 when it is off: the agile law under
 * the baseline anchor (the SLO anchor's window is no multiple of the
 * baseline), every preset but seed unless baseline_probe_ns says. */
static int64_t probe_interval(const struct agile_config *config,
                              const struct agile_resolved *r)
{
	int64_t every = config->baseline_probe_ns;

	if (r->anchor != AGILE_ANCHOR_BASELINE || every < 0)
		return 0;
	if (every == 0)
		every = r->preset == AGILE_PRESET_SEED ?
		        0 : AGILE_DEFAULT_BASELINE_PROBE_NS;
	return every;
}

/* Hold the limit at the floor, setting the target aside. */
static void probe_start(struct agile_conc_limiter *l)
{
	agile__store_double(&l->probe.saved,
	                    agile__load_double(&l->loop.ctl.rate));
	agile__store_u64(&l->probe.samples, 0);
	agile__store_u32(&l->probe.ticks, 0);
	agile__store_u64(&l->limit, limit_for(l->loop.config.floor_rate));
	agile__store_u32(&l->probe.active, 1);
}

/*
 * A tick while the probe runs: no step of the law (its answers are the
 * floor's, which the law would read as room), but the probe's p50, once
 * it has AGILE_BASELINE_PROBE_SAMPLES answers or has run
 * AGILE_BASELINE_PROBE_TICKS ticks, becomes the baseline, and the target
 * set aside returns.  A probe that saw no answer leaves the baseline.
 */
static void probe_tick(struct agile_conc_limiter *l, int64_t now_ns)
{
	struct agile_loop *loop = &l->loop;
	struct agile_controller *c = &loop->ctl;
	const struct agile_resolved *r = &loop->config;
	struct agile_hist_snapshot snap;
	uint64_t unreachable, answered;

	/* The tick's counts are the floor's: drained, and not read. */
	loop_drain(loop, &snap, &unreachable, &answered);
	agile__store_u64(&l->peak_in_flight, agile__load_u64(&l->in_flight));
	uint32_t ticks = agile__load_u32(&l->probe.ticks) + 1;

	agile__store_u64(&c->samples, snap.total);
	if (snap.total > 0) {
		double p50 = (double)agile_hist_quantile(&snap, 0.5);

		agile__store_double(&c->p50_ns, p50);
		agile__store_double(&c->fast_ns, p50);
		agile__store_double(&c->p99_ns,
		                    (double)agile_hist_quantile(&snap, 0.99));
	}
	if (snap.total >= AGILE_BASELINE_PROBE_SAMPLES ||
	    ticks >= AGILE_BASELINE_PROBE_TICKS) {
		if (snap.total > 0)
			agile__store_double(&c->baseline_ns,
			                    agile__load_double(&c->p50_ns));
		/* The target set aside, within the bounds (the state is
		 * shared: a NaN reads as the floor). */
		double target = agile__clamp(agile__load_double(&l->probe.saved),
		                             r->floor_rate, r->max_rate);

		agile__store_double(&c->rate, target);
		agile__store_u64(&l->limit, limit_for(target));
		agile__store_i64(&l->probe.next_ns,
		                 agile__add_sat(now_ns, l->probe.interval_ns));
		agile__store_u32(&l->probe.active, 0);
		agile__add_u64(&l->probe.probes, 1);
	} else {
		agile__store_u32(&l->probe.ticks, ticks);
	}
	agile__store_u64(&c->ticks, agile__load_u64(&c->ticks) + 1);
	agile__store_u32(&c->last_action, AGILE_ACTION_BASELINE);
	agile__store_i64(&loop->last_tick_ns, now_ns);
}

int agile_conc_init(struct agile_conc_limiter *l,
                    const struct agile_config *config, int64_t now_ns)
{
	return agile_conc_init_law(l, config, NULL, now_ns);
}

int agile_conc_init_law(struct agile_conc_limiter *l,
                        const struct agile_config *config,
                        const struct agile_law_options *tuning,
                        int64_t now_ns)
{
	struct agile_law_options options;

	if (config != NULL && (unsigned)config->law >= AGILE_LAW_COUNT)
		return -EINVAL;
	int rc = loop_init(&l->loop, config, AGILE_KIND_CONCURRENCY, now_ns);

	if (rc < 0)
		return rc;
	l->in_flight = 0;
	l->peak_in_flight = 0;
	memset(&l->probe, 0, sizeof(l->probe));
	law_options_for(&l->loop.config, config->law, tuning, &options);
	agile_law_init(&l->law, &options, now_ns);
	if (windowed(l)) {
		l->limit = (uint64_t)agile_law_limit(&l->law);
		l->loop.ctl.rate = (double)l->limit;
	} else {
		l->limit = limit_for(l->loop.ctl.rate);
		l->probe.interval_ns = probe_interval(config, &l->loop.config);
		if (l->probe.interval_ns > 0)
			probe_start(l);
	}
	return 0;
}

enum agile_law_kind agile_conc_law(const struct agile_conc_limiter *l)
{
	return (enum agile_law_kind)l->law.config.kind;
}

/* One outcome for a windowed law, counted in the totals as the loop counts
 * it.  The calls in flight include this one: callers observe before they
 * release. */
static void law_record(struct agile_conc_limiter *l, bool success,
                       int64_t d_ns)
{
	if (agile_law_record(&l->law, success, d_ns,
	                     agile__load_u64(&l->in_flight)))
		agile__add_u64(&l->loop.totals.samples, 1);
}

bool agile_conc_try_take(struct agile_conc_limiter *l)
{
	uint64_t cur = agile__load_u64(&l->in_flight);

	for (;;) {
		if (cur >= agile__load_u64(&l->limit)) {
			agile__add_u64(&l->loop.totals.refused, 1);
			return false;
		}
		if (agile__cas_u64(&l->in_flight, &cur, cur + 1))
			break;
	}
	agile__max_u64(&l->peak_in_flight, cur + 1);
	agile__add_u64(&l->loop.totals.grants, 1);
	return true;
}

void agile_conc_release(struct agile_conc_limiter *l)
{
	uint64_t cur = agile__load_u64(&l->in_flight);

	/* A release without a take is a caller bug; never wrap below zero,
	 * which would admit without bound. */
	while (cur > 0 && !agile__cas_u64(&l->in_flight, &cur, cur - 1))
		;
}

uint64_t agile_conc_limit(const struct agile_conc_limiter *l)
{
	return agile__load_u64(&l->limit);
}

uint64_t agile_conc_in_flight(const struct agile_conc_limiter *l)
{
	return agile__load_u64(&l->in_flight);
}

void agile_conc_observe(struct agile_conc_limiter *l, int64_t d_ns)
{
	if (windowed(l)) {
		law_record(l, true, d_ns);
		return;
	}
	if (agile__load_u32(&l->probe.active)) {
		/* A request admitted before the probe queued behind the
		 * others: only one admitted under the floor (it is still in
		 * flight, callers observe before they release) measures the
		 * baseline.  Once the probe has its answers, the next call's
		 * tick-if-due ends it. */
		if (agile__load_u64(&l->in_flight) > agile__load_u64(&l->limit))
			return;
		loop_observe(&l->loop, d_ns);
		if (agile__add_u64(&l->probe.samples, 1) ==
		    AGILE_BASELINE_PROBE_SAMPLES)
			agile__store_i64(&l->loop.next_tick_ns, INT64_MIN);
		return;
	}
	loop_observe(&l->loop, d_ns);
}

void agile_conc_observe_truncated(struct agile_conc_limiter *l, int64_t d_ns)
{
	if (!windowed(l)) {
		loop_observe_truncated(&l->loop, d_ns);
		return;
	}
	/* A call cut short is a call that failed, whatever its length: for
	 * AIMD a timeout is the overload signal itself. */
	if (d_ns > 0)
		law_record(l, false, d_ns);
	else if (agile_law_record_failure(&l->law,
	                                  agile__load_u64(&l->in_flight)))
		agile__add_u64(&l->loop.totals.samples, 1);
	agile__add_u64(&l->loop.totals.truncated, 1);
}

void agile_conc_unavailable(struct agile_conc_limiter *l)
{
	if (!windowed(l)) {
		loop_unavailable(&l->loop);
		return;
	}
	agile__add_u64(&l->loop.totals.unreachable, 1);
	agile_law_record_failure(&l->law, agile__load_u64(&l->in_flight));
}

void agile_conc_observe_outcome(struct agile_conc_limiter *l, int64_t d_ns,
                                int error, const struct agile_hooks *hooks)
{
	enum agile_outcome outcome = AGILE_REACHED;

	if (!windowed(l)) {
		loop_outcome(&l->loop, d_ns, error, hooks);
		return;
	}
	if (error != 0 && hooks != NULL && hooks->classify != NULL)
		outcome = hooks->classify(error, hooks->arg);
	switch (outcome) {
	case AGILE_UNREACHABLE:
		agile_conc_unavailable(l);
		break;
	case AGILE_ABORTED:
		loop_aborted(&l->loop);
		break;
	case AGILE_REACHED:
	default:
		/* adaptx's release: an error is a failure, with its latency. */
		law_record(l, error == 0, d_ns);
		break;
	}
}

int agile_conc_do(struct agile_conc_limiter *l, const struct agile_hooks *hooks,
                  int (*fn)(void *), void *fn_arg)
{
	if (!agile_conc_try_take(l))
		return AGILE_EOVERLOADED;
	/* Admission never waits, so the handling time is clean by
	 * construction: no throttle wait can leak into it. */
	int64_t start = hooks->now_ns(hooks->arg);
	int error = fn(fn_arg);
	int64_t end = hooks->now_ns(hooks->arg);
	agile_conc_observe_outcome(l, end - start, error, hooks);
	agile_conc_release(l);
	return error;
}

/* What the controller's last action says about a windowed law's window,
 * so agile_conc_stats reads the same for every law. */
static enum agile_action law_action(enum agile_law_result r)
{
	switch (r) {
	case AGILE_LAW_INCREASED:
		return AGILE_ACTION_INCREASE;
	case AGILE_LAW_DECREASED:
		return AGILE_ACTION_DECREASE;
	case AGILE_LAW_HELD:
		return AGILE_ACTION_HOLD;
	default:
		return AGILE_ACTION_BLIND; /* warming up, or no sample */
	}
}

/* Close a windowed law's window if it is due (the law's own claim picks
 * one winner), publish its limit and mirror the window into the
 * controller's fields for the stats.  True when a window closed. */
static bool law_tick(struct agile_conc_limiter *l, int64_t now_ns,
                     const struct agile_law_draw *draw)
{
	struct agile_law_change change;
	enum agile_law_result r = agile_law_advance(&l->law, now_ns, draw,
	                                            &change);
	struct agile_controller *c = &l->loop.ctl;

	if (r == AGILE_LAW_NOT_DUE)
		return false;
	agile__store_u64(&l->limit, (uint64_t)change.new_limit);
	agile__store_u64(&l->peak_in_flight, agile__load_u64(&l->in_flight));
	agile__store_double(&c->rate, (double)change.new_limit);
	agile__store_double(&c->used, (double)change.summary.peak_in_flight);
	agile__store_u64(&c->samples, change.summary.samples);
	agile__store_u64(&c->ticks, agile__load_u64(&c->ticks) + 1);
	agile__store_u32(&c->last_action, (uint32_t)law_action(r));
	agile__store_i64(&l->loop.last_tick_ns, now_ns);
	return true;
}

void agile_conc_tick(struct agile_conc_limiter *l, int64_t now_ns)
{
	if (windowed(l)) {
		/* A law runs at most once per window: that is its contract,
		 * and a forced step cannot override it. */
		law_tick(l, now_ns, NULL);
		return;
	}
	if (agile__load_u32(&l->probe.active)) {
		probe_tick(l, now_ns);
		return;
	}
	/* Used is the most requests in flight at once during the tick; the
	 * next tick starts from what is in flight now. */
	uint64_t peak = agile__load_u64(&l->peak_in_flight);
	agile__store_u64(&l->peak_in_flight, agile__load_u64(&l->in_flight));
	double rate = loop_step(&l->loop, now_ns, (double)peak,
	                        elapsed_s(agile__load_i64(&l->loop.last_tick_ns),
	                                  now_ns), false);
	agile__store_u64(&l->limit, limit_for(rate));
	if (l->probe.interval_ns > 0 &&
	    now_ns >= agile__load_i64(&l->probe.next_ns))
		probe_start(l);
}

bool agile_conc_tick_if_due_jitter(struct agile_conc_limiter *l,
                                   int64_t now_ns,
                                   const struct agile_law_draw *draw)
{
	if (windowed(l))
		return law_tick(l, now_ns, draw);
	if (!loop_claim_tick(&l->loop, now_ns))
		return false;
	agile_conc_tick(l, now_ns);
	return true;
}

bool agile_conc_tick_if_due(struct agile_conc_limiter *l, int64_t now_ns)
{
	return agile_conc_tick_if_due_jitter(l, now_ns, NULL);
}

void agile_conc_stats(const struct agile_conc_limiter *l, struct agile_stats *out)
{
	loop_stats(&l->loop, out);
}
