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
 *
 * Four rules refine steps 4-7 when their knobs are on: preset none with an
 * SLO turns them on, preset seed is the law above alone.  They, and rule
 * a's measure of what the downstream delivered, are controller_rules.c's,
 * which says what failure of the seed's law each one answers.
 *
 * agile_controller_step is these, one function each, in this order (each
 * reads what the ones before it decided, through struct tick, in
 * controller_internal.h): rule_a_measure (rule a's span and backlog come
 * first: the outage and the blind tick carry the span on), step_outage,
 * step_blind, step_fast_signal, step_window, step_hysteresis, rules_region
 * (what a cut acts on, and where rules a-c apply), step_proportional (with
 * rule_c_take_back, rule_b_after_break, rule_b_ramp and
 * rule_c_probe_step), step_tail_guard (with
 * rule_d_own_share and rule_d_goodput_cut), rule_a_deficit_cut,
 * rule_a_knee, rule_c_streak, rule_a_calibrate, step_clamp, step_baseline.
 * The step_ functions are static here; the rules are controller_rules.c's,
 * named agile__rule_... (agile__rules_region).
 */
#include <math.h>
#include <string.h>

#include "agile.h"
#include "atomics.h"
#include "controller_internal.h"
#include "internal.h"

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
	[AGILE_ACTION_BASELINE] = "baseline-probe",
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
	c->rate = r->initial_rate;
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
	uint64_t above = agile_hist_count_above(h, agile__trunc_i64(tail));
	double share = (double)above / n;
	double tol = r->tail_tolerance;
	/* Averaging with the previous value smooths over about two ticks, so
	 * one slow request in a quiet tick decays instead of costing a step. */
	next->tail_ratio = 0.5 * next->tail_ratio + 0.5 * share;
	/* A listener's tail found not to be its load's is tolerated too
	 * (tail_not_ours). */
	next->tail_threshold = tol + AGILE_TAIL_SIGMA * sqrt(tol * (1.0 - tol) / n) +
	                       next->tail_own;
	return next->tail_ratio > next->tail_threshold;
}

/* Copy the step's result into the shared struct, each field whole and
 * atomically, so a concurrent reader of stats or a check of the whole body
 * (agile_controller_validate) never sees a torn value. */
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
	agile__store_i32(&c->up_agree, n->up_agree);
	agile__store_i32(&c->down_agree, n->down_agree);
	agile__store_u32(&c->last_action, n->last_action);
	agile__store_double(&c->delivered, n->delivered);
	agile__store_double(&c->knee_rate, n->knee_rate);
	agile__store_double(&c->peak_knee, n->peak_knee);
	agile__store_i32(&c->increase_streak, n->increase_streak);
	agile__store_u32(&c->cutting, n->cutting);
	agile__store_u32(&c->backlog_ms, n->backlog_ms);
	agile__store_double(&c->answer_ratio, n->answer_ratio);
	agile__store_double(&c->span_grants, n->span_grants);
	agile__store_double(&c->span_s, n->span_s);
	agile__store_double(&c->span_answers, n->span_answers);
	agile__store_u32(&c->span_split, n->span_split);
	agile__store_u32(&c->cut_from_used, n->cut_from_used);
	agile__store_u32(&c->cut_ended_cold, n->cut_ended_cold);
	agile__store_u32(&c->slo_broke, n->slo_broke);
	agile__store_double(&c->tail_series_share, n->tail_series_share);
	agile__store_double(&c->tail_series_load, n->tail_series_load);
	agile__store_double(&c->tail_own, n->tail_own);
	agile__store_double(&c->last_step, n->last_step);
	agile__store_u32(&c->fast_series, n->fast_series);
	agile__store_double(&c->fastest_ns, n->fastest_ns);
	agile__store_double(&c->paired_grants, n->paired_grants);
	agile__store_double(&c->paired_answers, n->paired_answers);
	agile__store_u32(&c->paired, n->paired);
	/* probe_mode is only ever set here; the hot path clears it when an
	 * observed sample arrives, and that clear must not be overwritten. */
	if (n->probe_mode)
		agile__store_u32(&c->probe_mode, 1);
}

static double outage_step(struct agile_controller *n,
                          const struct agile_resolved *r)
{
	n->increase_streak = 0;
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
	/* A latency past what a signed 64-bit count of nanoseconds holds
	 * (an SLO near it times a large tail_factor) could be infinite,
	 * which the check of a limiter's body rejects as garbage; the
	 * largest such count says as much. */
	if (synthetic > 0x1p63)
		synthetic = 0x1p63;
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

/* Step 1, the outage rule: true when the tick is an outage and the step
 * is taken (outage_step). */
static bool step_outage(struct agile_controller *n, struct tick *t)
{
	uint64_t unreachable = t->in->unreachable;

	if (unreachable == 0 ||
	    unreachable < (uint64_t)AGILE_OUTAGE_RATIO * t->observed)
		return false;
	n->blind_ticks = t->observed ? 0 : n->blind_ticks + 1;
	t->next = outage_step(n, t->r);
	t->floor = t->r->probe_rate;
	return true;
}

/* Step 2's blind tick: no samples change nothing, but a span with grants
 * outstanding carries on into the next tick (rule a). */
static bool step_blind(struct agile_controller *n, struct tick *t)
{
	if (t->observed > 0)
		return false;
	if (t->measured && (t->in->used > 0 || t->in->pending)) {
		n->span_grants = t->span_grants;
		n->span_answers = t->answers;
		n->span_s = t->span_s;
		n->span_split = t->carried_split;
	}
	n->blind_ticks++;
	n->last_action = AGILE_ACTION_BLIND;
	t->next = t->rate;
	return true;
}

/* Step 2: the fast signal is the tick's p50; the first one sets the
 * baseline. */
static void step_fast_signal(struct agile_controller *n, struct tick *t)
{
	n->blind_ticks = 0;
	t->p50 = (double)agile_hist_quantile(t->in->hist, 0.5);
	t->p99 = (double)agile_hist_quantile(t->in->hist, 0.99);
	n->p50_ns = t->p50;
	n->p99_ns = t->p99;
	n->fast_ns = t->p50;
	if (n->baseline_ns <= 0)
		n->baseline_ns = t->p50;
}

/* Step 3: the window, and which side of it the p50 is on. */
static void step_window(struct agile_controller *n, struct tick *t)
{
	t->window = window_for(n->baseline_ns, t->r);
	double low = t->window * (1.0 - t->r->deadband);
	t->healthy = t->p50 <= low;
	t->congested = !t->healthy && t->p50 >= t->window;
}

/* Step 4: the tick hysteresis; a hold tick resets both counts. */
static void step_hysteresis(struct agile_controller *n, const struct tick *t)
{
	if (t->healthy) {
		n->up_agree = agile__inc_sat_i32(n->up_agree);
		n->down_agree = 0;
	} else if (t->congested) {
		n->down_agree = agile__inc_sat_i32(n->down_agree);
		n->up_agree = 0;
	} else {
		n->up_agree = 0;
		n->down_agree = 0;
	}
}

/* Step 5: the proportional cut when congested, the increase when healthy
 * (rules b and c refine it), each once step 4 agrees. */
static void step_proportional(struct agile_controller *n, struct tick *t)
{
	const struct agile_resolved *r = t->r;

	t->next = t->rate;
	n->last_action = AGILE_ACTION_HOLD;
	if (t->congested && (n->down_agree >= r->backoff_ticks || t->deficit) &&
	    !t->draining) {
		/* window > 0 here but for a configuration no resolve
		 * writes (an SLO anchor without an SLO): the full step. */
		double cut = t->window > 0 ?
		             r->gain * (t->p50 - t->window) / t->window :
		             r->down_step;
		if (cut > r->down_step)
			cut = r->down_step;
		t->next = t->load * (1.0 - cut);
		n->cold_start = 0;
		n->last_action = AGILE_ACTION_DECREASE;
		return;
	}
	/* Rule c's step back does not wait for agreement, nor does the tail
	 * guard cut past it while most of the tick's answers are inside the
	 * tail target (AGILE_TAKE_BACK_TAIL): the step that queued is known,
	 * and the rate before it was not queueing (the Python client at 80 a
	 * second: 77.2 -> 85.0, p99 51.6 ms against 50, and the guard's cut
	 * to 59.5 swung the rate 30%).  An SLO that broke as the step was
	 * taken is the guard's. */
	double back = agile__rule_c_take_back(n, t);
	if (back < 0 && !t->healthy) {
		t->next = t->rate * (1.0 + back);
		t->took_back = true;
		n->up_agree = 0;
		n->last_action = AGILE_ACTION_DECREASE;
		return;
	}
	/* Nor rule b's return after an SLO break or an outage. */
	double after_break = agile__rule_b_after_break(n, t);
	if (after_break > 0) {
		t->next = after_break;
		n->last_action = AGILE_ACTION_MULTIPLY;
		return;
	}
	/* Rule c's cold start does not wait for agreement either: nothing
	 * is known yet to agree with, and each tick held is a tick of the
	 * slow start's climb. */
	bool faster = false;
	double fast = n->cold_start ? 0 :
	              agile__rule_c_fast_step(n, t, &faster);
	bool eager = t->below_knee || fast > 0 ||
	             (n->cold_start && r->probe_acceleration > 1);
	if (!t->healthy || (n->up_agree < r->recover_ticks && !eager))
		return;
	if (t->used < t->rate / 2 && !t->below_knee) {
		/* Raising a rate nobody uses only grows a promise that has
		 * never been tested against the downstream.  Below the knee it
		 * has been (the downstream delivered it), and an event loop
		 * that reserves its grants at connect spends the span after a
		 * raise at the rate before it, so the gate would cost rule b a
		 * span per doubling. */
		n->last_action = AGILE_ACTION_GATED;
	} else if (n->cold_start ||
	           (r->recover_ramp > 0 &&
	            t->p50 <= r->recover_ramp * t->window)) {
		t->next = t->rate * r->slow_start_gain;
		n->last_action = AGILE_ACTION_MULTIPLY;
	} else if (fast > 0) {
		/* Rule c's fast series, at the knee or under it: the knee
		 * is as stale as the baseline. */
		t->next = t->rate * (1.0 + fast);
		t->step = fast;
		t->fast = true;
		t->faster = faster;
		n->last_action = AGILE_ACTION_INCREASE;
	} else if (t->below_knee) {
		t->next = agile__rule_b_ramp(t, t->knee_cap);
		n->last_action = AGILE_ACTION_MULTIPLY;
	} else if (agile__rule_b_below_peak(n, t)) {
		t->next = agile__rule_b_ramp(t, t->peak_cap);
		n->last_action = AGILE_ACTION_MULTIPLY;
	} else {
		double step = agile__rule_c_probe_step(n, t);
		t->next = t->rate * (1.0 + step);
		t->step = step;
		n->last_action = step > 0 ? AGILE_ACTION_INCREASE :
		                 step < 0 ? AGILE_ACTION_DECREASE :
		                            AGILE_ACTION_HOLD;
		/* A step taken back waits out the patience again. */
		if (step < 0) {
			n->up_agree = 0;
			t->took_back = true;
		}
	}
}

/* Step 6's listener case: a tail that is not its load's.  A server whose
 * fifth request takes 60 ms at any load, behind slo=50ms, had its limit
 * cut tick after tick by the ratio guard and served 59% of its capacity
 * (bench/RESULTS.md, issue 19): shedding makes no slow request faster.
 * The guard's series of cuts (until the limit is back where it began)
 * keeps the share and the limit of its first; a cut at
 * AGILE_TAIL_OWN_LOAD of that limit or less, with AGILE_TAIL_OWN_SHARE of
 * the share still past the target and the p50 inside the window, is not
 * made: the limit goes back to where the series began, and tail_own
 * tolerates that share from then on (the guard fires on a share past it
 * plus the tolerance: the part the load adds), until the share falls
 * inside the plain tolerance.  Rate limiters have rule d's SLO break for
 * a downstream slow at any rate. */
static void tail_not_ours(struct agile_controller *n, struct tick *t)
{
	const struct agile_resolved *r = t->r;

	if (r->kind != AGILE_KIND_CONCURRENCY || !(r->tail_tolerance > 0))
		return;
	if (!t->tail) {
		/* The series lasts, through the ticks between its cuts,
		 * until the limit is back where it began. */
		if (t->load >= n->tail_series_load) {
			n->tail_series_share = 0;
			n->tail_series_load = 0;
		}
		if (n->tail_own > 0 &&
		    n->tail_ratio <= n->tail_threshold - n->tail_own)
			n->tail_own = 0;
		return;
	}
	if (!(n->tail_series_load > 0)) {
		n->tail_series_share = n->tail_ratio;
		n->tail_series_load = t->load;
		return;
	}
	if (t->load <= AGILE_TAIL_OWN_LOAD * n->tail_series_load &&
	    n->tail_ratio >= AGILE_TAIL_OWN_SHARE * n->tail_series_share &&
	    t->p50 <= t->window) {
		n->tail_own = n->tail_ratio;
		if (t->next < n->tail_series_load)
			t->next = n->tail_series_load;
		n->tail_series_share = 0;
		n->tail_series_load = 0;
		t->tail = false;
	}
}

/* Step 6: the tail guard, not gated by the hysteresis, nor while a
 * backlog drains (rule a); rule d sizes its cut. */
static void step_tail_guard(struct agile_controller *n, struct tick *t)
{
	t->tail = tail_guard_fires(n, t->r, t->in->hist, t->p99) &&
	          !t->draining;
	agile__rule_d_own_share(t);
	tail_not_ours(n, t);
	if (!t->tail)
		return;
	double full = t->load * (1.0 - t->r->down_step);
	if (t->next > full)
		t->next = full;
	agile__rule_d_goodput_cut(n, t);
	n->up_agree = 0;
	n->cold_start = 0;
	n->last_action = AGILE_ACTION_TAIL;
}

/* Step 7: the clamp; cold start ends at the ceiling. */
static void step_clamp(struct agile_controller *n, const struct tick *t)
{
	n->rate = agile__clamp(t->next, t->floor, t->r->max_rate);
	if (n->cold_start && n->rate >= t->r->max_rate)
		n->cold_start = 0;
}

/* Step 8: the slow baseline follows the tick's p50. */
static void step_baseline(struct agile_controller *n, const struct tick *t)
{
	/* Rule c's fast series begins at a downstream faster than the
	 * baseline knows: its p50 is the unloaded latency now.  So is the
	 * p50 of any tick whose p99 is under the baseline (the delivered
	 * rules only): every answer it saw was faster than the latency the
	 * baseline says is unloaded.  A slow start that overshot leaves a
	 * baseline its queue inflated (49 ms where the downstream answers
	 * in 27.5), and with a half-life of 5 s rule c read p50s 40% over
	 * the unloaded latency as quiet for ten seconds, and stepped 20%
	 * at a time past its knee (issue 15, the closed loop's low start). */
	if ((t->faster && n->last_action == AGILE_ACTION_INCREASE) ||
	    (t->measured && t->p99 > 0 && t->p99 < n->baseline_ns))
		n->baseline_ns = t->p50;
	else
		n->baseline_ns = update_baseline(n->baseline_ns, t->p50, t->r);
	/* The lowest baseline learned (the delivered rules only), forgotten
	 * toward the baseline as the peak knee is toward the knee: what rule
	 * c's fast series calls "faster than ever". */
	double b = n->baseline_ns;
	if (t->r->delivered_share > 0 && b > 0) {
		if (!(n->fastest_ns > 0) || b < n->fastest_ns)
			n->fastest_ns = b;
		else
			n->fastest_ns += (b - n->fastest_ns) *
			                 agile__peak_forget(t->r);
	}
}

double agile_controller_step(struct agile_controller *c,
                             const struct agile_resolved *r,
                             const struct agile_tick_input *in)
{
	struct agile_controller n = *c;
	struct tick t = { .r = r, .in = in, .observed = in->hist->total };

	t.rate = agile__load_double(&c->rate);
	t.cold = n.cold_start != 0;
	t.p50_before = agile__load_double(&c->p50_ns);
	t.after_cut = n.last_action == AGILE_ACTION_DECREASE ||
	              n.last_action == AGILE_ACTION_TAIL;
	t.after_step = n.last_action == AGILE_ACTION_INCREASE;
	t.after_outage = n.last_action == AGILE_ACTION_OUTAGE;
	t.used_before = n.used;
	n.rate = t.rate;
	n.probe_mode = agile__load_u32(&c->probe_mode);
	n.ticks++;
	n.samples = t.observed;
	n.unreachable = in->unreachable;
	n.used = in->used;
	n.p50_ns = 0;
	n.p99_ns = 0;
	if (in->unreachable > 0)
		n.probe_mode = 1;
	t.floor = n.probe_mode ? r->probe_rate : r->floor_rate;

	agile__rule_a_measure(&n, &t);
	if (step_outage(&n, &t) || step_blind(&n, &t)) {
		/* Step 7's clamp alone: neither tick ends cold start at the
		 * ceiling (an outage ended it, a blind tick moves nothing). */
		n.rate = agile__clamp(t.next, t.floor, r->max_rate);
		publish(c, &n);
		return n.rate;
	}
	step_fast_signal(&n, &t);
	step_window(&n, &t);
	step_hysteresis(&n, &t);
	agile__rules_region(&n, &t);
	step_proportional(&n, &t);
	step_tail_guard(&n, &t);
	agile__rule_a_deficit_cut(&n, &t);
	agile__rule_a_knee(&n, &t);
	agile__rule_c_streak(&n, &t);
	agile__rule_a_calibrate(&n, &t);
	step_clamp(&n, &t);
	step_baseline(&n, &t);
	publish(c, &n);
	return n.rate;
}
