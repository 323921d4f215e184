/*
 * controller.c - the control law: one step per tick turns the tick's latency
 * samples and outcome counts into a new target (a rate, or a concurrency
 * limit; the law only scales a scalar and clamps it, so it does not care).
 *
 * One step, in order:
 *
 *  1. Outage rule.  Calls that never reached the downstream say nothing about
 *     its latency.  When they outnumber the observed calls two to one, the
 *     tick is an outage: a synthetic sample placed above the tolerated window
 *     and above the tail target is what the controller "sees", so both the
 *     proportional back-off and the tail guard fire, and the floor falls to the
 *     probe rate.  Without an SLO and without a baseline there is no honest
 *     number to place, and the step is a no-op.  Fewer unreachable calls only
 *     let the floor fall to the probe rate until the next observed call.
 *  2. Fast signal: the tick's p50 (the API reference wins over the README's
 *     fast EWMA).  Blind ticks (no samples) change nothing.
 *  3. Window: 0.8 x SLO under the SLO anchor; (1 + inflation) x the slow
 *     baseline under the baseline anchor, capped from above (only) by
 *     0.8 x SLO.  Healthy at or below window x (1 - deadband), congested at or
 *     above the window, hold in between.
 *  4. Tick hysteresis: a step needs backoff_ticks (recover_ticks) consecutive
 *     ticks on the same side; a hold tick resets both counts.
 *  5. Congested: multiply by 1 - min(down_step, gain x excess / window).
 *     Healthy: hold if used < rate / 2 (the utilisation gate); otherwise
 *     multiply by slow_start_gain while cold (or, with recover_ramp, while the
 *     latency sits at or below recover_ramp x window), else by 1 + up_step.
 *  6. Tail guard, not gated by the hysteresis: in quantile mode when the p99
 *     exceeds slo x tail_factor; in ratio mode when the share of samples above
 *     that target, smoothed over about two ticks, exceeds the tolerance plus
 *     AGILE_TAIL_SIGMA standard errors of a share estimated from n samples.
 *     It forces a full down_step.
 *  7. Clamp to [floor, max] (floor = probe_rate in probe mode).  Cold start
 *     ends at the first back-off or when the ceiling is reached, and never
 *     re-arms.
 *  8. Baseline: a slow EWMA of p50, following rises with slow_half_life and
 *     falls with slow_down_half_life, and never rising more than
 *     max_baseline_rise per tick, so a sustained overload cannot drag the
 *     window up after it.
 */
#include <math.h>
#include <string.h>

#include "agile.h"
#include "atomics.h"

/* Where the synthetic outage sample sits relative to the highest of the
 * window and the tail target: far enough above both that neither the
 * proportional law nor the guard can read it as healthy. */
#define OUTAGE_SAMPLE_FACTOR 1.5

static const char *const action_names[AGILE_ACTION_COUNT] = {
	[AGILE_ACTION_NONE] = "none",
	[AGILE_ACTION_BLIND] = "blind",
	[AGILE_ACTION_HOLD] = "hold",
	[AGILE_ACTION_GATED] = "gated",
	[AGILE_ACTION_INCREASE] = "increase",
	[AGILE_ACTION_MULTIPLY] = "multiply",
	[AGILE_ACTION_DECREASE] = "decrease",
	[AGILE_ACTION_TAIL] = "tail",
	[AGILE_ACTION_OUTAGE] = "outage",
};

const char *agile_action_name(enum agile_action a)
{
	if ((unsigned)a >= AGILE_ACTION_COUNT)
		return "unknown";
	return action_names[a];
}

void agile_controller_init(struct agile_controller *c,
                           const struct agile_resolved *r)
{
	memset(c, 0, sizeof(*c));
	c->rate = (double)r->initial_rate;
	c->cold_start = 1;
}

static double window_for(double baseline_ns, const struct agile_resolved *r)
{
	double slo_window = AGILE_SLO_WINDOW_FRACTION * (double)r->slo_ns;

	if (r->anchor == AGILE_ANCHOR_SLO)
		return slo_window;
	if (baseline_ns <= 0)
		return 0;
	double w = baseline_ns * (1.0 + r->target_inflation);
	/* The SLO caps the relative window one way only: it can lower it,
	 * never raise it above (1 + inflation) x baseline. */
	if (r->slo_ns > 0 && slo_window < w)
		w = slo_window;
	return w;
}

double agile_controller_window_ns(const struct agile_controller *c,
                                  const struct agile_resolved *r)
{
	return window_for(agile__load_double(&c->baseline_ns), r);
}

double agile_controller_tail_ns(const struct agile_resolved *r)
{
	if (r->slo_ns <= 0)
		return 0;
	return (double)r->slo_ns * r->tail_factor;
}

/* 1 - 2^(-tick / half_life): the EWMA weight that halves a gap in
 * half_life. */
static double ewma_alpha(int64_t tick_ns, int64_t half_life_ns)
{
	if (half_life_ns <= 0)
		return 1.0;
	return 1.0 - exp2(-(double)tick_ns / (double)half_life_ns);
}

static double update_baseline(double baseline, double p50,
                              const struct agile_resolved *r)
{
	if (baseline <= 0)
		return p50;
	if (p50 > baseline) {
		double next = baseline + ewma_alpha(r->tick_ns, r->slow_half_life_ns) *
		                             (p50 - baseline);
		double cap = baseline * (1.0 + r->max_baseline_rise);
		return next < cap ? next : cap;
	}
	return baseline + ewma_alpha(r->tick_ns, r->slow_down_half_life_ns) *
	                      (p50 - baseline);
}

static double clamp(double v, double lo, double hi)
{
	if (v < lo)
		v = lo;
	if (v > hi)
		v = hi;
	return v;
}

/*
 * The tail guard.  Updates the smoothed ratio and its threshold in `next`
 * (ratio mode only) and says whether the guard fires for this tick.
 */
static bool tail_guard_fires(struct agile_controller *next,
                             const struct agile_resolved *r,
                             const struct agile_hist_snapshot *h,
                             double p99_ns)
{
	double tail = agile_controller_tail_ns(r);

	if (tail <= 0 || h->total == 0)
		return false;
	if (r->tail_tolerance <= 0)
		return p99_ns > tail;

	double n = (double)h->total;
	double share = (double)agile_hist_count_above(h, (int64_t)tail) / n;
	double tol = r->tail_tolerance;
	/* Averaging with the previous value smooths over about two ticks, so
	 * one slow request in a quiet tick decays instead of costing a step. */
	next->tail_ratio = 0.5 * next->tail_ratio + 0.5 * share;
	next->tail_threshold = tol + AGILE_TAIL_SIGMA * sqrt(tol * (1.0 - tol) / n);
	return next->tail_ratio > next->tail_threshold;
}

/* Copy the step's result into the shared struct, each field whole, so a
 * concurrent reader of stats never sees a torn double. */
static void publish(struct agile_controller *c, const struct agile_controller *n)
{
	agile__store_double(&c->rate, n->rate);
	agile__store_double(&c->baseline_ns, n->baseline_ns);
	agile__store_double(&c->fast_ns, n->fast_ns);
	agile__store_double(&c->p50_ns, n->p50_ns);
	agile__store_double(&c->p99_ns, n->p99_ns);
	agile__store_double(&c->tail_ratio, n->tail_ratio);
	agile__store_double(&c->tail_threshold, n->tail_threshold);
	agile__store_double(&c->used, n->used);
	agile__store_u64(&c->samples, n->samples);
	agile__store_u64(&c->unreachable, n->unreachable);
	agile__store_u64(&c->ticks, n->ticks);
	agile__store_u64(&c->blind_ticks, n->blind_ticks);
	agile__store_u32(&c->cold_start, n->cold_start);
	c->up_agree = n->up_agree;
	c->down_agree = n->down_agree;
	agile__store_u32(&c->last_action, n->last_action);
	/* probe_mode is only ever set here; the hot path clears it when an
	 * observed sample arrives, and that clear must not be overwritten. */
	if (n->probe_mode)
		agile__store_u32(&c->probe_mode, 1);
}

static double outage_step(struct agile_controller *n,
                          const struct agile_resolved *r)
{
	double window = window_for(n->baseline_ns, r);
	double tail = agile_controller_tail_ns(r);
	double anchor = window > tail ? window : tail;

	if ((double)r->slo_ns > anchor)
		anchor = (double)r->slo_ns;
	if (anchor <= 0) {
		/* Nothing to anchor a synthetic sample to: no SLO and no sample
		 * has ever been seen.  Inventing a latency would corrupt the
		 * baseline, so the rate holds. */
		n->last_action = AGILE_ACTION_BLIND;
		return n->rate;
	}
	double synthetic = OUTAGE_SAMPLE_FACTOR * anchor;
	n->fast_ns = synthetic;
	n->p50_ns = synthetic;
	n->p99_ns = synthetic;
	n->up_agree = 0;
	n->down_agree = 0;
	n->cold_start = 0;
	n->last_action = AGILE_ACTION_OUTAGE;
	/* The synthetic sample is above the tail target, so the guard's full
	 * step is what the tick amounts to. */
	return n->rate * (1.0 - r->down_step);
}

double agile_controller_step(struct agile_controller *c,
                             const struct agile_resolved *r,
                             const struct agile_tick_input *in)
{
	struct agile_controller n = *c;
	const struct agile_hist_snapshot *h = in->hist;
	uint64_t observed = h->total;
	double max = (double)r->max_rate;
	double rate = agile__load_double(&c->rate);
	double next;

	n.rate = rate;
	n.probe_mode = agile__load_u32(&c->probe_mode);
	n.ticks++;
	n.samples = observed;
	n.unreachable = in->unreachable;
	n.used = in->used;
	n.p50_ns = 0;
	n.p99_ns = 0;
	if (in->unreachable > 0)
		n.probe_mode = 1;

	if (in->unreachable > 0 &&
	    in->unreachable >= (uint64_t)AGILE_OUTAGE_RATIO * observed) {
		n.blind_ticks = observed ? 0 : n.blind_ticks + 1;
		next = outage_step(&n, r);
		n.rate = clamp(next, (double)r->probe_rate, max);
		publish(c, &n);
		return n.rate;
	}

	double floor = n.probe_mode ? (double)r->probe_rate : (double)r->floor_rate;

	if (observed == 0) {
		n.blind_ticks++;
		n.last_action = AGILE_ACTION_BLIND;
		n.rate = clamp(rate, floor, max);
		publish(c, &n);
		return n.rate;
	}

	n.blind_ticks = 0;
	double p50 = (double)agile_hist_quantile(h, 0.5);
	double p99 = (double)agile_hist_quantile(h, 0.99);
	n.p50_ns = p50;
	n.p99_ns = p99;
	n.fast_ns = p50;
	if (n.baseline_ns <= 0)
		n.baseline_ns = p50;

	double window = window_for(n.baseline_ns, r);
	double low = window * (1.0 - r->deadband);
	bool healthy = p50 <= low;
	bool congested = !healthy && p50 >= window;

	if (healthy) {
		n.up_agree++;
		n.down_agree = 0;
	} else if (congested) {
		n.down_agree++;
		n.up_agree = 0;
	} else {
		n.up_agree = 0;
		n.down_agree = 0;
	}

	next = rate;
	n.last_action = AGILE_ACTION_HOLD;
	if (congested && n.down_agree >= r->backoff_ticks) {
		double cut = r->gain * (p50 - window) / window;
		if (cut > r->down_step)
			cut = r->down_step;
		next = rate * (1.0 - cut);
		n.cold_start = 0;
		n.last_action = AGILE_ACTION_DECREASE;
	} else if (healthy && n.up_agree >= r->recover_ticks) {
		if (in->used < rate / 2) {
			/* Raising a rate nobody uses only grows a promise that
			 * has never been tested against the downstream. */
			n.last_action = AGILE_ACTION_GATED;
		} else if (n.cold_start ||
		           (r->recover_ramp > 0 && p50 <= r->recover_ramp * window)) {
			next = rate * r->slow_start_gain;
			n.last_action = AGILE_ACTION_MULTIPLY;
		} else {
			next = rate * (1.0 + r->up_step);
			n.last_action = AGILE_ACTION_INCREASE;
		}
	}

	if (tail_guard_fires(&n, r, h, p99)) {
		double full = rate * (1.0 - r->down_step);
		if (next > full)
			next = full;
		n.up_agree = 0;
		n.cold_start = 0;
		n.last_action = AGILE_ACTION_TAIL;
	}

	n.rate = clamp(next, floor, max);
	if (n.cold_start && n.rate >= max)
		n.cold_start = 0;
	n.baseline_ns = update_baseline(n.baseline_ns, p50, r);
	publish(c, &n);
	return n.rate;
}
