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
 * SLO turns them on, preset seed is the law above alone.  Each answers a
 * failure the scenario matrix measured in the seed's law, and its ablation
 * row there shows what the default loses without it (bench/RESULTS.md).
 *
 *  a. Delivered rate (delivered_share; rate limiters only, and only when the
 *     caller measured the tick).  The tick's answers per second say what the
 *     downstream actually delivered.  When they lag the grants (less the
 *     calls refused, which owe no answer) by more than
 *     AGILE_DEFICIT_SHARE of them plus two answers, and the tick's p99 is
 *     past the window (a FIFO queue that grows delays the answers it lets
 *     through; flat answers that lag are ones the program has not read
 *     yet), a queue is growing: the tick cuts at once, whatever the p50
 *     and the hysteresis say yet, to at most delivered_share x delivered
 *     minus the excess it sent, so the next tick also pays the backlog
 *     back.  When the answers exceed the grants by as much, an earlier
 *     backlog is draining and the last cut is already working: neither
 *     the proportional step nor the tail guard cuts again on that
 *     backlog's latency.  The knee is what the
 *     downstream delivered when trouble began: at a deficit cut, or at the
 *     first cut since the rate last rose (unless the rate was still
 *     climbing back under the knee and the p50 healthy: a guard cut there
 *     measured the rate, not the capacity), raised by what a draining tick
 *     delivers (the downstream then works flat out).  A fixed fraction
 *     cannot learn this: after a drop from 150 to 40 req/s, three 30% steps
 *     still leave 51 req/s.  A cut that leaves the rate under the knee
 *     drains the queue the tick saw by itself: its p50's excess over the
 *     baseline, times the knee, is that queue, and it drains at the knee
 *     less the new rate.  While twice that time (AGILE_BACKLOG_FACTOR: the
 *     program reads the last of those answers late) outlasts a tick, and
 *     for AGILE_BACKLOG_MAX_TICKS at most, that tick's slow answers are
 *     the backlog's, and the tick counts as draining, unless the program
 *     is held to its answers (below): then the cut did not take it under
 *     what the downstream delivers, and nothing drains.  A program whose
 *     answers pace its sends can never show answers exceeding grants, so
 *     this is the only way its backlog is seen for what it is.
 *  b. Knee ramp (knee_ramp).  Below delivered_share x knee a healthy tick
 *     multiplies the rate by knee_ramp, capped there, without waiting for
 *     the agreement of step 4: the downstream delivered that much already.
 *     The cap is what the seed's recover_ramp lacks, and why it overshoots.
 *  c. Probing at the knee (probe_acceleration).  From delivered_share x knee
 *     up (anywhere before a knee is known), a healthy tick steps up only
 *     while its p50 sits within AGILE_PROBE_QUIET (5%) of the baseline,
 *     nothing queueing, and holds otherwise; each such step in a
 *     row is probe_acceleration times the last, from up_step up to
 *     AGILE_PROBE_MAX_STEP, so capacity that came back is found in a
 *     handful of ticks, while a rate at its knee stays there instead of
 *     walking into the queue at up_step a tick.
 *  d. Goodput cut (goodput_cut).  The guard's cut is sized by the tick's own
 *     answers: a tick whose own share past the tail target is within the
 *     tolerance does not cut on the smoothing's memory, and a second cut in
 *     a row keeps at most goodput_cut x the share of answers inside the
 *     target, so a downstream that answers nothing inside the SLO falls to
 *     the floor in two ticks rather than in 30% steps.  Not at or after a
 *     cut that started from what was used: a program held to its answers
 *     queues no more than its own connections, and its slow answers are
 *     that queue, which a cut drains, not a downstream that can answer
 *     nothing inside the SLO.  Nor right after the cut that ended cold
 *     start: slow start's overshoot filled that queue itself.  While the
 *     tick's p50 still rises past AGILE_GOODPUT_QUEUE_RISE times the last
 *     tick's, its answers were sent before the last cut reached the
 *     downstream, and the cut keeps at least AGILE_GOODPUT_KEEP_DELIVERED
 *     of what the tick delivered; while it falls by as much, the last cut
 *     is draining the queue, and the cut is the plain full step: a rate at
 *     the floor has a program of 32 threads reserve its grants 32 s ahead.
 *     Only a p50 the last cut left where it was (a downstream slow at any
 *     rate) is cut to the share inside.  Nor does the guard cut on
 *     the tick right after a cut whose p50 is back inside the window.
 *
 * The same four rules hold for a real program, whose signal is lumpy where
 * a simulated backlog's is smooth.  ab -c 16 paced at its sends takes its
 * sixteen grants at connect, sleeps through them in one socket's send after
 * another, then reads sixteen answers at once: below sixteen requests a
 * second, grants and answers land in different ticks, and ticks without
 * answers alternate with ticks holding fifteen.  And its sockets each wait
 * for their answer, so it never sends faster than it is answered: no queue
 * of its own making ever grows past sixteen, and a rate far above what it
 * uses is no load at all.  Hence, when the rules are on:
 *
 *  - rule a measures a span, from one tick with answers to the next: a
 *    tick without answers while grants are outstanding joins the next
 *    tick's measure, an idle one (no grant taken, none planned ahead)
 *    starts it afresh, and a span with more answers than grants (a tick
 *    fell between the program's reads and its reconnects) is measured
 *    with the next;
 *  - its calibration is a ratio of two averages over healthy spans, not
 *    an average of ratios, is not fed by cold start (whose spans fill the
 *    pipeline), and, once trusted, holds until the ratio leaves a wider
 *    band (answers_pair);
 *  - the knee is learned at a cut even before answers are trusted, and
 *    used once they are: a program's first cut is its slow start
 *    overshooting, a few ticks in;
 *  - a cut starts from what was used when even the full step from the
 *    rate would stay above it (the program is held to its answers), and
 *    a congested tick so held, or the congested tick after such a cut,
 *    a full queue throughout, gives the knee;
 *  - the utilisation gate does not hold rule b: below the knee the
 *    promise has been tested;
 *  - a cut's backlog (rule a) and the answers the program had not read
 *    yet hold the next cut, and rule d leaves a program held to its
 *    answers alone: after a capacity drop ab's tick after the cut read
 *    p50 388 ms from sixteen requests the cut was already draining, and
 *    rule d cut 28 req/s to the floor of 5 with 37 a second delivered.
 *
 * bench/matrix.c's loop-drop scenario is that program; without these the
 * default sat at the floor there after the capacity drop, as it did for
 * real (bench/RESULTS.md).
 *
 * agile_controller_step is these, one static function each, in this order
 * (each reads what the ones before it decided, through struct tick):
 * rule_a_measure (rule a's span and backlog come first: the outage and the
 * blind tick carry the span on), step_outage, step_blind, step_fast_signal,
 * step_window, step_hysteresis, rules_region (what a cut acts on, and
 * where rules a-c apply), step_proportional (with rule_b_knee_ramp and
 * rule_c_probe_step), step_tail_guard (with rule_d_own_share and
 * rule_d_goodput_cut), rule_a_deficit_cut, rule_a_knee, rule_c_streak,
 * rule_a_calibrate, step_clamp, step_baseline.
 */
#include <math.h>
#include <string.h>

#include "agile.h"
#include "atomics.h"
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

/* v within [lo, hi]; a NaN (garbage in the shared state, carried through
 * the arithmetic) reads as lo, the cautious end. */
static double clamp(double v, double lo, double hi)
{
	if (v < lo || v != v)
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
	uint64_t above = agile_hist_count_above(h, agile__trunc_i64(tail));
	double share = (double)above / n;
	double tol = r->tail_tolerance;
	/* Averaging with the previous value smooths over about two ticks, so
	 * one slow request in a quiet tick decays instead of costing a step. */
	next->tail_ratio = 0.5 * next->tail_ratio + 0.5 * share;
	next->tail_threshold = tol + AGILE_TAIL_SIGMA * sqrt(tol * (1.0 - tol) / n);
	return next->tail_ratio > next->tail_threshold;
}

/*
 * Rule a's trust: answers stand for grants while their ratio sits in
 * [AGILE_ANSWER_RATIO_LOW, AGILE_ANSWER_RATIO_HIGH], and once trusted, until
 * it leaves the wider [..._KEEP_LOW, ..._KEEP_HIGH].  A span of an event
 * loop can end between its reads and the reconnects they cause (15 answers,
 * 1 grant; the other 14 in the next span), and one such span is enough to
 * move the ratio out of the narrow band for a tick; a caller whose
 * connections really carry many requests, or none, leaves the wide one.
 */
static bool answers_pair(const struct agile_controller *n)
{
	double low = AGILE_ANSWER_RATIO_LOW, high = AGILE_ANSWER_RATIO_HIGH;

	if (n->paired) {
		low = AGILE_ANSWER_RATIO_KEEP_LOW;
		high = AGILE_ANSWER_RATIO_KEEP_HIGH;
	}
	return n->answer_ratio >= low && n->answer_ratio <= high;
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

/*
 * One tick's reading, shared by the steps and rules below in the order
 * agile_controller_step calls them: each fills in what the later ones
 * read.  It lives on the stack for one step; the shared state is the
 * struct agile_controller copy `n` the step publishes at its end.
 */
struct tick {
	const struct agile_resolved *r;
	const struct agile_tick_input *in;
	uint64_t observed;  /* samples in the tick's histogram */
	double rate;        /* the target the tick ran at */
	double floor;       /* the clamp's lower bound, probe_rate in probe mode */
	bool cold;          /* the tick ran in cold start (the step may end it) */
	bool after_cut;     /* the tick before cut (rule d) */
	double p50_before;  /* the tick before's p50, 0 if blind (rule d) */
	/* Rule a's measure of the span ending at this tick. */
	bool measured;      /* rule a applies and the tick's length is known */
	double used;        /* grants per second over the span */
	double span_s;
	double answers;
	double span_grants;
	double delivered;   /* answers per second over the span */
	bool delivered_known; /* answers are trusted to pair with grants */
	double slack;       /* what the two may differ by without meaning it */
	bool carried_split; /* the span carried in was a split one */
	bool split;         /* this span is taken for a split one */
	bool deficit;       /* answers lag the grants: a queue growing */
	bool backlog;       /* the last cut's backlog outlasts this tick */
	/* Steps 2-4. */
	double p50, p99;
	double window;
	bool healthy, congested;
	/* What the cut acts on, and the rules' regions. */
	bool held;          /* the program is held to its answers */
	double load;        /* what a cut starts from */
	bool draining;      /* an earlier backlog drains: cut no further */
	double knee_cap;    /* delivered_share x knee, or 0 while not trusted */
	bool below_knee;    /* rule b applies */
	bool at_knee;       /* rule c applies */
	/* Step 6 and rule d. */
	bool tail;
	double inside;      /* the tick's share of answers inside the target */
	double next;        /* the new target before step 7's clamp */
};

/*
 * Rule a's measurement: what the downstream delivered, and whether it fell
 * short of what was granted (a queue growing).  Answers stand for grants
 * only while healthy spans have shown the two pair up: a caller granting
 * connections that carry many requests, or none, would otherwise read as a
 * queue draining, or growing, forever.
 *
 * The measure is the span since the last tick with answers, not the tick:
 * an event loop paced at its sends (ab) takes sixteen grants at one
 * instant and reads sixteen answers at another, so below sixteen a second
 * its ticks alternate between grants without answers and answers without
 * grants.  A tick without answers while grants are outstanding (taken in
 * it, or planned ahead of now) joins the span (blind_step); a truly idle
 * one ends it, so an idle spell never dilutes the next busy tick's rate.
 */
static void rule_a_measure(struct agile_controller *n, struct tick *t)
{
	const struct agile_tick_input *in = t->in;

	t->measured = t->r->delivered_share > 0 &&
	              t->r->kind == AGILE_KIND_RATE && in->elapsed_s > 0;
	t->used = in->used;
	t->span_s = in->elapsed_s;
	t->answers = (double)in->answered;
	t->carried_split = n->span_split != 0;
	if (t->measured && n->span_s > 0) {
		t->span_s += n->span_s;
		t->used = (n->span_grants + in->used * in->elapsed_s) / t->span_s;
		t->answers += n->span_answers;
	}
	t->span_grants = t->used * t->span_s;
	t->delivered = t->measured ? t->answers / t->span_s : 0;
	t->delivered_known = t->measured && answers_pair(n);
	/* Two answers of slack keep a quiet span's rounding from reading as
	 * a deficit. */
	t->slack = t->delivered_known ?
	           AGILE_DEFICIT_SHARE * t->used + 2 / t->span_s : 0;
	/* A tick can also fall between a program's reads and the reconnects
	 * they cause: one span then holds sixteen answers and one grant, and
	 * the next the other fifteen grants, the next cycle's sixteen and its
	 * sixteen answers.  Any surplus is taken for such a split span: rule
	 * a judges nothing on it, and measures it together with the next one,
	 * where a cut's backlog still draining shows as it would have (and an
	 * event loop, whose sockets bound its queue, has none to drain).  One
	 * at a time, so a program whose connections each carry many requests
	 * is still measured, every other span. */
	t->split = t->delivered_known && t->observed > 0 && !t->carried_split &&
	           t->delivered - t->used > t->slack;
	/* A grant whose call was refused never reached the downstream: it
	 * is no answer owed by a queue.  Refusals counted as one cut the
	 * python client's 185 req/s to the probe rate at the first tick of
	 * a refusal, before the outage rule had a say (issue 15). */
	double refused = t->span_s > 0 ? (double)in->unreachable / t->span_s
	                               : 0;
	t->deficit = t->delivered_known && !t->split &&
	             t->used - refused - t->delivered > t->slack;
	n->delivered = t->delivered;
	n->span_grants = t->split ? t->span_grants : 0;
	n->span_answers = t->split ? t->answers : 0;
	n->span_s = t->split ? t->span_s : 0;
	n->span_split = t->split;

	/* The backlog the last cut left under the knee: while it outlasts
	 * this tick, the tick's slow answers are that backlog's.  A value no
	 * cut could have set (the state file is shared) is none. */
	uint32_t most_ms = agile__backlog_most_ms(t->r->tick_ns);
	t->backlog = false;
	if (t->measured && n->backlog_ms <= most_ms) {
		double left_ms = n->backlog_ms - 1000 * in->elapsed_s;
		t->backlog = left_ms > 0;
		n->backlog_ms = t->backlog ? (uint32_t)left_ms : 0;
	} else {
		n->backlog_ms = 0;
	}
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

/*
 * Where the tick stands for the rules: what a cut acts on, whether a
 * backlog drains, and which of rules b and c the rate is in.
 *
 * A program that sends less than its rate (an event loop with sixteen
 * sockets sends no faster than they are answered) loads the downstream
 * with what it sends: a cut that leaves the rate above that changes
 * nothing, and the queue it was meant to drain stays full another tick.
 * So when even the full step from the rate would stay above what was
 * used, the program is held to its answers and the cut starts from what
 * was used (the delivered rules only; the seed's law cuts the rate).
 *
 * Rule a: a growing queue (a deficit) acts now, whatever the latency and
 * the hysteresis say yet; a shrinking one (more answers than grants: an
 * earlier tick's backlog draining, or the backlog a cut under the knee
 * left) means the last cut is already working, and neither the
 * proportional step nor the guard cuts again on the backlog's latency.  A
 * program held to its answers cannot use its rate: the last cut did not
 * take it under what the downstream delivers, and no backlog drains.
 */
static void rules_region(const struct agile_controller *n, struct tick *t)
{
	const struct agile_resolved *r = t->r;

	t->held = t->measured && t->used < t->rate * (1.0 - r->down_step);
	t->load = t->held ? t->used : t->rate;
	t->draining = (t->delivered_known && (!t->split || n->cutting) &&
	               t->delivered - t->used > t->slack) ||
	              (t->backlog && !t->held);
	/* A deficit whose answers all came back inside the window is no
	 * queue's: wrk -t2 -c32 at 41 req/s reads the fifteen answers each
	 * thread's wait stamped in one go, 30 or 45 a tick, all in 23 ms, and
	 * a tick of 30 cut it to 16.6 (issue 15). */
	t->deficit = t->deficit && t->p99 >= t->window;
	/* Rule b: below the knee the climb back needs no agreement. */
	t->knee_cap = t->delivered_known ? r->delivered_share * n->knee_rate : 0;
	t->below_knee = r->knee_ramp > 1 && t->knee_cap > 0 &&
	                t->rate < t->knee_cap;
	/* Rule c: from delivered_share x knee up (everywhere while no knee is
	 * known). */
	t->at_knee = r->probe_acceleration > 1 && t->delivered_known &&
	             t->rate >= t->knee_cap;
}

/* Rule b, the knee ramp: multiply, capped at delivered_share x knee. */
static double rule_b_knee_ramp(const struct tick *t)
{
	double next = t->rate * t->r->knee_ramp;

	return next > t->knee_cap ? t->knee_cap : next;
}

/*
 * Rule c, probing at the knee: the step up from the knee on.  It is taken
 * only while nothing queues, the p50 within AGILE_PROBE_QUIET of the
 * baseline: then the knee is stale, or still to be found, and each step in
 * a row doubles.  Not "at or below the baseline": a real p50 is a
 * histogram bucket's midpoint, and a downstream at a third of its capacity
 * answers a few percent slower than when the baseline was learned, while
 * the baseline approaches such a p50 from below and never reaches it, so
 * after a capacity recovery the rate held at the old knee for good (issue
 * 15).  A queue at the knee shows as tens of percent.  0 holds.
 */
static double rule_c_probe_step(const struct agile_controller *n,
                                const struct tick *t)
{
	const struct agile_resolved *r = t->r;
	double step = r->up_step;

	if (!t->at_knee)
		return step;
	if (t->p50 > n->baseline_ns * (1 + AGILE_PROBE_QUIET))
		return 0;
	double most = r->up_step > AGILE_PROBE_MAX_STEP ? r->up_step
	                                                : AGILE_PROBE_MAX_STEP;
	step *= pow(r->probe_acceleration, n->increase_streak);
	return step > most ? most : step;
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
	if (!t->healthy || (n->up_agree < r->recover_ticks && !t->below_knee))
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
	} else if (t->below_knee) {
		t->next = rule_b_knee_ramp(t);
		n->last_action = AGILE_ACTION_MULTIPLY;
	} else {
		double step = rule_c_probe_step(n, t);
		t->next = t->rate * (1.0 + step);
		n->last_action = step > 0 ? AGILE_ACTION_INCREASE
		                          : AGILE_ACTION_HOLD;
	}
}

/* Rule d's first half: the tick's own share of answers inside the target;
 * at or past the tolerance's complement only the smoothing's memory fired
 * the guard, and a clean tick does not cut.  Nor does the tick right after
 * a cut whose p50 is back inside the window: its slow answers are the last
 * of the queue that cut drained.  The Python client's probe overshot to
 * 367 req/s into 250, the cut took it to 172, and the tick after (p50
 * 18 ms, 6% of its answers past the SLO) cut again to 120 (issue 15); a
 * backlog that drains within the tick is not one rule a carries. */
static void rule_d_own_share(struct tick *t)
{
	const struct agile_resolved *r = t->r;

	t->inside = 1;
	if (!t->tail || r->goodput_cut <= 0)
		return;
	t->inside = 1 - (double)agile_hist_count_above(
		t->in->hist, agile__trunc_i64(agile_controller_tail_ns(r))) /
		(double)t->observed;
	if (1 - t->inside <= r->tail_tolerance ||
	    (t->after_cut && t->p50 < t->window))
		t->tail = false;
}

/* Rule d's second half: a second cut in a row keeps no more of the rate
 * than the share of answers that met the target (but half of what was
 * delivered while the p50 still rises: the Python client's 32 threads,
 * started above a capacity of 60, were cut from 51.5 to the floor of 1 on
 * answers sent before the cut, and sent one request a second for 22 s,
 * issue 15), and none while the p50 falls past that factor: the last cut
 * is draining the queue (ab and wrk at that start, 252 -> 175 ms, were cut
 * to 1 req/s and stayed there), unless this cut or the
 * last found the program held to its answers, or the last ended cold
 * start: slow start's overshoot filled the queue it cut, as a program held
 * to its answers fills its own, and the tick after reads that queue.  wrk
 * -c32 at 300 req/s into 200 read every answer at 156 ms, and this cut
 * took it to the floor of 1 req/s (issue 15). */
static void rule_d_goodput_cut(const struct agile_controller *n,
                               struct tick *t)
{
	double keep = t->r->goodput_cut * t->inside * t->load;
	bool known = t->p50_before > 0;

	if (known && t->p50 * AGILE_GOODPUT_QUEUE_RISE < t->p50_before)
		return;
	if (t->measured && known &&
	    t->p50 > AGILE_GOODPUT_QUEUE_RISE * t->p50_before &&
	    keep < AGILE_GOODPUT_KEEP_DELIVERED * t->delivered)
		keep = AGILE_GOODPUT_KEEP_DELIVERED * t->delivered;
	if (t->r->goodput_cut > 0 && n->cutting && !n->cut_from_used &&
	    !n->cut_ended_cold && !t->held && t->next > keep)
		t->next = keep;
}

/* Step 6: the tail guard, not gated by the hysteresis, nor while a
 * backlog drains (rule a); rule d sizes its cut. */
static void step_tail_guard(struct agile_controller *n, struct tick *t)
{
	t->tail = tail_guard_fires(n, t->r, t->in->hist, t->p99) &&
	          !t->draining;
	rule_d_own_share(t);
	if (!t->tail)
		return;
	double full = t->load * (1.0 - t->r->down_step);
	if (t->next > full)
		t->next = full;
	rule_d_goodput_cut(n, t);
	n->up_agree = 0;
	n->cold_start = 0;
	n->last_action = AGILE_ACTION_TAIL;
}

/* Rule a's cut: under what was delivered, less the excess the tick sent,
 * which the next tick pays back. */
static void rule_a_deficit_cut(struct agile_controller *n, struct tick *t)
{
	if (!t->deficit)
		return;
	double cap = t->r->delivered_share * t->delivered -
	             (t->used - t->delivered);
	if (t->next > cap)
		t->next = cap;
	n->up_agree = 0;
	n->cold_start = 0;
	if (n->last_action != AGILE_ACTION_TAIL)
		n->last_action = AGILE_ACTION_DECREASE;
}

/*
 * Rule a's knee and backlog, after the tick's cut is known.
 *
 * The knee: what the downstream delivered when trouble began, that is at
 * a deficit cut or at the first cut since the rate last rose; not at a
 * guard's cut on a healthy tick while rule b climbs back to a knee already
 * known, which measures the rate, not the capacity.  It is learned even
 * while the answers are not yet trusted to pair with the grants, and used
 * only once they are: a program's first cut comes a few ticks after its
 * start, before the calibration has seen enough healthy spans, and a knee
 * missed then is not offered again until the rate has climbed back to it.
 *
 * A program held to its answers (this cut, or the last, had to start from
 * what it used) that is congested ran it against its queue, full or
 * draining: what it delivered then is at most the capacity, where the
 * first cut's tick mixed the time before the queue filled with the time
 * after (ab saw a knee of 64 for a capacity of 40, and climbed into the
 * queue twice more to learn it).  A program that sends its rate whatever
 * the answers (into an SLO that broke) is never cut from what it used.
 */
static void rule_a_knee(struct agile_controller *n, const struct tick *t)
{
	bool cut_now = n->last_action == AGILE_ACTION_DECREASE ||
	               n->last_action == AGILE_ACTION_TAIL;
	bool learns = t->measured && !t->split && cut_now;

	if (learns && (t->deficit || !n->cutting) &&
	    (t->deficit || t->congested || !t->below_knee))
		n->knee_rate = t->delivered;
	else if (learns && t->congested && (n->cut_from_used || t->held))
		n->knee_rate = t->delivered;
	if (cut_now) {
		n->cut_from_used = t->load < t->rate;
		n->cut_ended_cold = t->measured && t->cold;
	}
	/* While a cut's backlog drains the downstream works flat out, so what
	 * it delivers then is the better measure of its capacity: the tick
	 * that cut saw answers lag by the queue it was building. */
	if (t->draining && n->cutting && t->delivered > n->knee_rate)
		n->knee_rate = t->delivered;

	/* The backlog: the queue this tick saw, p50's excess over the
	 * baseline times the knee it was delivered at, drains at the knee
	 * less the rate the cut leaves; until then, and until its answers
	 * are read (AGILE_BACKLOG_FACTOR), the next ticks' answers are that
	 * queue's. */
	double cut_to = clamp(t->next, t->floor, t->r->max_rate);
	uint32_t most_ms = agile__backlog_most_ms(t->r->tick_ns);
	if (cut_now && t->delivered_known && n->knee_rate > cut_to &&
	    t->p50 > n->baseline_ns) {
		double drain_s = AGILE_BACKLOG_FACTOR *
		                 (t->p50 - n->baseline_ns) / AGILE_NS_PER_S *
		                 n->knee_rate / (n->knee_rate - cut_to);
		double drain_ms = 1000 * drain_s;
		n->backlog_ms = drain_ms < most_ms ? (uint32_t)drain_ms : most_ms;
	} else if (cut_now) {
		n->backlog_ms = 0;
	}
	bool rose = n->last_action == AGILE_ACTION_INCREASE ||
	            n->last_action == AGILE_ACTION_MULTIPLY;
	if (cut_now)
		n->cutting = 1;
	else if (rose)
		n->cutting = 0;
	/* A rate that rises has left any backlog behind. */
	if (rose)
		n->backlog_ms = 0;
}

/* Rule c's series: increases in a row from the knee on. */
static void rule_c_streak(struct agile_controller *n, const struct tick *t)
{
	if (n->last_action == AGILE_ACTION_INCREASE && t->at_knee)
		n->increase_streak = agile__inc_sat_i32(n->increase_streak);
	else
		n->increase_streak = 0;
}

/*
 * Rule a's calibration, from healthy spans only: a congested one's answers
 * lag by its queue, which is what the rule is there to see; and from none
 * in cold start: each of its spans doubles the rate, so its answers lag by
 * everything the program just put in flight (ab's first tick answers 29 of
 * its 45 grants, and at the floor a ratio that starts that low needs twenty
 * seconds to recover).  The ratio is one of two averages, answers over
 * grants, so a span weighs what it holds.
 */
static void rule_a_calibrate(struct agile_controller *n, const struct tick *t)
{
	if (t->measured && t->healthy && !t->cold && !t->split &&
	    t->span_grants > 0) {
		if (n->paired_grants <= 0) {
			/* The first span sets the averages; a ratio already
			 * known (set by hand) is continued. */
			n->paired_grants = t->span_grants;
			n->paired_answers = n->answer_ratio > 0 ?
			                    n->answer_ratio * t->span_grants :
			                    t->answers;
		}
		n->paired_grants += AGILE_ANSWER_RATIO_WEIGHT *
		                    (t->span_grants - n->paired_grants);
		n->paired_answers += AGILE_ANSWER_RATIO_WEIGHT *
		                     (t->answers - n->paired_answers);
		n->answer_ratio = n->paired_answers / n->paired_grants;
	}
	if (t->measured)
		n->paired = answers_pair(n);
}

/* Step 7: the clamp; cold start ends at the ceiling. */
static void step_clamp(struct agile_controller *n, const struct tick *t)
{
	n->rate = clamp(t->next, t->floor, t->r->max_rate);
	if (n->cold_start && n->rate >= t->r->max_rate)
		n->cold_start = 0;
}

/* Step 8: the slow baseline follows the tick's p50. */
static void step_baseline(struct agile_controller *n, const struct tick *t)
{
	n->baseline_ns = update_baseline(n->baseline_ns, t->p50, t->r);
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

	rule_a_measure(&n, &t);
	if (step_outage(&n, &t) || step_blind(&n, &t)) {
		/* Step 7's clamp alone: neither tick ends cold start at the
		 * ceiling (an outage ended it, a blind tick moves nothing). */
		n.rate = clamp(t.next, t.floor, r->max_rate);
		publish(c, &n);
		return n.rate;
	}
	step_fast_signal(&n, &t);
	step_window(&n, &t);
	step_hysteresis(&n, &t);
	rules_region(&n, &t);
	step_proportional(&n, &t);
	step_tail_guard(&n, &t);
	rule_a_deficit_cut(&n, &t);
	rule_a_knee(&n, &t);
	rule_c_streak(&n, &t);
	rule_a_calibrate(&n, &t);
	step_clamp(&n, &t);
	step_baseline(&n, &t);
	publish(c, &n);
	return n.rate;
}
