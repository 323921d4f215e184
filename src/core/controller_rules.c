/*
 * controller_rules.c - the four rules that refine the control law's steps
 * 4-7 (controller.c), and rule a's measure of what the downstream
 * delivered, which the step takes first.  controller.c calls each rule at
 * its place in the step; they share the tick's reading, struct tick
 * (controller_internal.h).
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
 *     Above the knee, while the p50 is back within AGILE_PROBE_QUIET of
 *     the baseline and the highest knee learned (the peak knee, forgotten
 *     toward the knee with a half-life of AGILE_PEAK_HALF_LIFE_S) is
 *     AGILE_PEAK_SHARE times the knee or more, it multiplies so toward
 *     delivered_share x the peak knee: a capacity that dipped is back.
 *     After an SLO break (rule d) the first healthy tick goes to
 *     delivered_share x the knee at once, the peak knee once the break
 *     has lasted AGILE_BREAK_TICKS, and so does the first healthy tick
 *     after an outage (agile__rule_b_after_break).
 *  c. Probing at the knee (probe_acceleration).  From delivered_share x knee
 *     up (anywhere before a knee is known), a healthy tick steps up only
 *     while its p50 sits within AGILE_PROBE_QUIET (5%) of the baseline,
 *     nothing queueing, and holds otherwise; each such step in a row is
 *     probe_acceleration times the last, from up_step up to
 *     AGILE_PROBE_MAX_STEP, so capacity that came back is found in a
 *     handful of ticks, while a rate at its knee stays there instead of
 *     walking into the queue at up_step a tick.  A step whose tick's p50
 *     rose past the band and by more than AGILE_PROBE_BACK_RISE is taken
 *     back.  Past the band, from the AGILE_PROBE_PATIENCE-th healthy tick
 *     in a row on, a tick whose p50 is flat (within AGILE_PROBE_QUIET of
 *     the tick before's) tries one step, and the series goes on while
 *     each step is used and leaves the p50 flat, at most
 *     AGILE_PROBE_FLAT_STEPS up_steps a tick: a capacity that fell may
 *     answer slower unloaded than the baseline learned, which no queue
 *     explains, and only a step shows which it is.  A step taken back
 *     returns to the rate before it, or to delivered_share x what its tick
 *     delivered when that is more.  Its fast series: a tick whose p50 fell
 *     AGILE_PROBE_FAST_FALL, to as far under the baseline, its p99 under
 *     the baseline too, is a downstream faster than ever learned: the
 *     baseline takes that p50, and the rate doubles (knee_ramp), at the
 *     knee or under it (that knee is as stale), each step after it half
 *     the last while the p50 stays put (agile__rule_c_fast_step).
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
 *     rate) is cut to the share inside; with every grant answered (or at
 *     the floor, with the tick's answers late) that tick is an SLO break,
 *     which learns no knee (rule a) and which rule b climbs back from in
 *     one tick.  Nor does the guard cut on
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
 */
#include <math.h>

#include "agile.h"
#include "controller_internal.h"
#include "internal.h"

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
void agile__rule_a_measure(struct agile_controller *n, struct tick *t)
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
void agile__rules_region(const struct agile_controller *n, struct tick *t)
{
	const struct agile_resolved *r = t->r;

	t->held = t->measured && t->used < t->rate * (1.0 - r->down_step);
	t->load = t->held ? t->used : t->rate;
	/* A backlog drains: the p50 falls, by AGILE_BACKLOG_FALL at least.
	 * One held level after a cut from the rate is a downstream slower at
	 * any rate (bench-matrix's slo-breaks: 144 then 140 ms at 130 ms of
	 * service time, and the held tick cost a tick of answers outside the
	 * SLO), unless the cut was from what the program used: such a program
	 * reads the last of its queue's answers late (ab after a drop: 400
	 * then 390 ms, controller_backlog_holds_the_next_cut). */
	bool level = t->p50_before > 0 &&
	             t->p50 > t->p50_before * (1 - AGILE_BACKLOG_FALL);
	t->draining = ((t->delivered_known && (!t->split || n->cutting) &&
	                t->delivered - t->used > t->slack) ||
	               (t->backlog && !t->held)) &&
	              (!level || n->cut_from_used);
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
	t->peak_cap = t->delivered_known ? r->delivered_share * n->peak_knee
	                                 : 0;
	/* The step rule c took the tick before, if it took one.  Kept, not
	 * worked out again from the streak: the tick before's quiet band
	 * was around a baseline that has moved since, and its fast series
	 * leaves no trace in the streak. */
	t->last_step = t->after_step && (t->at_knee || n->fast_series) ?
	               n->last_step : 0;
}

/* Rule b's ramp: multiply by knee_ramp, capped at `cap` (the knee cap
 * below the knee, the peak cap above it). */
double agile__rule_b_ramp(const struct tick *t, double cap)
{
	double next = t->rate * t->r->knee_ramp;

	return next > cap ? cap : next;
}

/*
 * Rule b after an SLO break (rule d's cut to the share inside): the first
 * healthy tick goes back to delivered_share x the knee at once, whatever
 * the agreement, the utilisation gate and the trust in the answers say.
 * The rate sat at the floor because the downstream was slow at any rate,
 * not because it delivered less; the knee was learned before the break,
 * from answers trusted then; and at the floor no queue of ours is left to
 * drain.  Doubling from the floor of 1 a second took the closed loop's
 * slo-bump eight ticks, the downstream at 1-2 requests a second for five
 * of them with 200 on offer; and ab -c 32, which reserves its grants at
 * its connects, a burst every 32 s at that floor, used none of its rate
 * in most ticks and was gated there for good (issue 15).  0 when the rule
 * does not apply.
 */
double agile__rule_b_after_break(const struct agile_controller *n,
                                 const struct tick *t)
{
	/* After an outage (step 1) too: the first healthy tick after the
	 * ticks whose calls were refused.  Those cut the rate by down_step
	 * each, to the probe rate, and taught the knee nothing: the calls
	 * never reached the downstream.  The knee from before is what a
	 * downstream that restarted delivered then, and the next tick cuts
	 * if it delivers less now.  Doubling from what five refusing ticks
	 * left took the closed loop's refusing schedule three ticks back to
	 * 200 (wrk: 25, 50, 100, 185), about 600 answers (issue 15). */
	if (!n->slo_broke && !t->after_outage)
		return 0;
	/* The highest knee, not the last, once the break has lasted
	 * AGILE_BREAK_TICKS: the cuts that took the rate down as it began
	 * learned what our own inflight= cap let through at its latency
	 * (the Python client, 2.4 requests in flight at 66 ms: 36 a second),
	 * and the peak knee is the one from before.  Not after one such tick
	 * alone: an event loop's own queue after a capacity drop reads the
	 * same for a tick (bench-matrix's loop-drop, 139 then 152 ms), drains
	 * the next, and the peak from before the drop is no knee now. */
	double knee = n->knee_rate;

	if (n->slo_broke >= AGILE_BREAK_TICKS && n->peak_knee > knee)
		knee = n->peak_knee;
	double back = t->r->delivered_share * knee;

	if (!t->measured || !t->healthy || t->deficit ||
	    t->r->knee_ramp <= 1 || !(t->rate < back))
		return 0;
	return back;
}

/*
 * Rule b above the knee: below delivered_share x the peak knee, with the
 * p50 back within AGILE_PROBE_QUIET of the baseline, the downstream that
 * delivered the peak answers as it did then, and the climb back is rule
 * b's.  A capacity that dips and comes back (a failover, a pause, a noisy
 * neighbour) is the common case: ab after 250 -> 80 -> 250 req/s climbed
 * back in five of rule c's steps, 80 -> 88 -> 106 -> 148 -> 237 -> 379,
 * about 650 answers short of the capacity and an overshoot past it (issue
 * 15).  The peak is forgotten toward the knee (half-life
 * AGILE_PEAK_HALF_LIFE_S), so a capacity that fell for good stops luring
 * the rate up.
 */
bool agile__rule_b_below_peak(const struct agile_controller *n,
                              const struct tick *t)
{
	return t->at_knee && t->r->knee_ramp > 1 && t->rate < t->peak_cap &&
	       n->peak_knee >= AGILE_PEAK_SHARE * n->knee_rate &&
	       t->p50 <= n->baseline_ns * (1 + AGILE_PROBE_QUIET);
}

/* Rule c's step number `streak` (0 the first): up_step times
 * probe_acceleration for each before it, at most AGILE_PROBE_MAX_STEP, or
 * AGILE_PROBE_FLAT_STEPS up_steps away from the baseline. */
static double probe_step(const struct agile_resolved *r, int32_t streak,
                         bool quiet)
{
	double most = quiet ? AGILE_PROBE_MAX_STEP :
	                      AGILE_PROBE_FLAT_STEPS * r->up_step;
	double step = r->up_step * pow(r->probe_acceleration, streak);

	if (most < r->up_step)
		most = r->up_step;
	return step > most ? most : step;
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
 * 15).  A queue at the knee shows as tens of percent, and the step that
 * raised it by AGILE_PROBE_BACK_RISE or more is taken back: held, it
 * queued at the rate it tried.
 *
 * Nor only near the baseline: a downstream whose capacity fell answers
 * slower unloaded (one worker at 80 a second takes 12.5 ms more a request
 * than at 250), and the baseline, which rises 0.2% a tick, takes minutes
 * to learn it; ab held 46 a second against a capacity of 80 for the whole
 * phase, its p50 flat at 23.5 ms against a baseline of 14.6 (issue 15).
 * No latency tells a slower answer from a standing queue; a step does.  So
 * after AGILE_PROBE_PATIENCE healthy ticks a flat p50 tries up_step; a
 * step the program used (half of it at least: an event loop's ticks
 * alternate, and a tick that sent less shows nothing) whose p50 stayed
 * flat is followed by the next, at most AGILE_PROBE_FLAT_STEPS up_steps,
 * and one that raised the p50 is taken back, the patience starting over.
 * A step back is a cut: rule a learns the knee at what its tick
 * delivered.
 * The patience and the smaller step are what a knee with a standing queue
 * pays: bench-matrix's steady and slo-breaks scenarios, whose p50 at the
 * knee wanders across the band, kept 90% inside the SLO with a patience
 * of eight and lost it (88.5-90.0%) with two to five.  Negative: the step
 * back; 0 holds.
 */
/*
 * Rule c's step back: the step the tick before took raised the p50, past
 * the quiet band, by more than AGILE_PROBE_BACK_RISE.  Negative, the
 * step that returns to the rate before it; 0 when there is none to take
 * back.  It is taken whether the tick is healthy or not: a step that
 * queued is known to be the one to undo, and a tick of congestion held
 * while the hysteresis agrees grows the queue it started (wrk after the
 * drop: 77 -> 84.8 into 80, the p50 23 -> 40 ms, held a tick, then the
 * tail guard's 30% cut to 59.3, a swing of twice the target; issue 15).
 */
double agile__rule_c_take_back(const struct agile_controller *n,
                               const struct tick *t)
{
	double last = t->last_step;
	bool quiet = t->p50 <= n->baseline_ns * (1 + AGILE_PROBE_QUIET);

	if (quiet || last <= 0 ||
	    !(t->p50 > t->p50_before * (1 + AGILE_PROBE_BACK_RISE)))
		return 0;
	/* Back to the rate before the step, or to delivered_share x what
	 * the tick delivered when that is more: a step past the capacity
	 * queued, but its tick's answers say what the downstream delivers
	 * flat out.  The steps after a low start's recovery, 173 -> 277
	 * into 240 a second, were taken back to 173, and the tick after it
	 * sent 178 with 240 on offer (issue 15).  But the lower of the two
	 * when the p50 is past the window (below).  A tick that delivered
	 * that share of its rate or more is not one whose step queued: no
	 * step back, and the guard judges it. */
	double rate_before = t->rate / (1.0 + last);
	double keep = t->r->delivered_share * t->delivered;

	if (!t->delivered_known)
		return rate_before / t->rate - 1.0;
	/* A p50 past the window is a queue, which the rate before the step,
	 * close under the capacity, drains slowly: under delivered_share x
	 * what was delivered it drains at the share's rate at least.  No
	 * lower than the guard's full step from the rate would go: a tick
	 * of an event loop can hold few of its answers. */
	if (t->p50 > t->window) {
		double most = t->rate * (1.0 - t->r->down_step);
		double back = keep < rate_before ? keep : rate_before;

		return (back > most ? back : most) / t->rate - 1.0;
	}
	if (keep <= rate_before)
		return rate_before / t->rate - 1.0;
	if (keep >= t->rate)
		return 0;
	return keep / t->rate - 1.0;
}

/*
 * Rule c's fast series: the p50 fell AGILE_PROBE_FAST_FALL in one tick
 * (from the tick before's p50, or from the baseline when that was lower:
 * the tick before may have queued a step), to as far under the baseline,
 * and under the lowest baseline learned (forgotten toward the baseline
 * with a half-life of AGILE_PEAK_HALF_LIFE_S), with the tick's p99 under
 * the baseline too: the downstream answers faster than it ever did while
 * the baseline was learned, and its capacity rose with it (a pool that
 * grew, a neighbour gone).  Not a queue
 * draining: its tick's first answers are the queue's, and its p99 is past
 * the baseline (the stale baseline of a slow start that overshot, 49 -> 27
 * ms, reads so).  The series' first step sets the baseline to that p50 at
 * once (step_baseline): it is the downstream's unloaded latency now, and
 * a baseline that falls with a half-life of seconds would read every p50
 * that comes back from a probe's queue as another such fall.
 *
 * The first step multiplies the rate by knee_ramp, as rule b does below
 * the knee; each after it is half the last, while the p50 stays within
 * AGILE_PROBE_QUIET of that baseline and of the tick before's, down to
 * up_step, where rule c's own series starts over: x2, x1.5, x1.25 ... is
 * x4.5 in five ticks, and no step past the capacity is larger than the
 * one before it (a doubling at 231 a second into 240, its p50 still
 * unloaded, sent 463 and answered the tick after at 79 ms).  The first
 * step that queues is taken back (agile__rule_c_take_back) to what its
 * tick delivered.  A low start's recovery, 60 -> 240 a second with the
 * p50 from 27.5 to 15 ms, took rule c's series of 20, 40, 60 and 60%
 * seven seconds to reach 216 (issue 15).  0 when the series does not
 * apply; *start says whether this step begins it.
 */
double agile__rule_c_fast_step(const struct agile_controller *n,
                               const struct tick *t, bool *start)
{
	double fast = t->r->knee_ramp - 1;
	double b = n->baseline_ns;

	*start = false;
	if (!t->delivered_known || t->r->probe_acceleration <= 1 ||
	    !(fast > 0) || !(b > 0) || !(t->p50_before > 0))
		return 0;
	if (n->fast_series && t->last_step > 0) {
		double next = t->last_step / 2;

		if (next >= t->r->up_step &&
		    t->p50 <= b * (1 + AGILE_PROBE_QUIET) &&
		    t->p50 <= t->p50_before * (1 + AGILE_PROBE_QUIET))
			return next;
		return 0;
	}
	/* Faster than ever: than the lowest baseline learned too, not only
	 * than the baseline now.  A benign latency bump (10 -> 25 ms for 16
	 * s) took the baseline from 16 to 31 ms; the p50 back at 16 when it
	 * ended fell a half under it, and the series doubled a rate already
	 * at the capacity, 193 -> 308, 184 answers past the SLO (issue 15). */
	double fastest = n->fastest_ns > 0 && n->fastest_ns < b ?
	                 n->fastest_ns : b;
	double from = t->p50_before < fastest ? t->p50_before : fastest;

	if (t->p50 <= from * (1 - AGILE_PROBE_FAST_FALL) && t->p99 <= b) {
		*start = true;
		return fast;
	}
	return 0;
}

double agile__rule_c_probe_step(const struct agile_controller *n,
                                const struct tick *t)
{
	const struct agile_resolved *r = t->r;

	if (!t->at_knee)
		return r->up_step;
	double quiet_ns = n->baseline_ns * (1 + AGILE_PROBE_QUIET);
	bool quiet = t->p50 <= quiet_ns;
	bool flat = t->p50_before > 0 &&
	            t->p50 <= t->p50_before * (1 + AGILE_PROBE_QUIET);
	double last = t->last_step;
	double back = agile__rule_c_take_back(n, t);

	if (back < 0)
		return back;
	/* It was used, and the p50 did not rise: go on. */
	bool held_flat = last > 0 && flat &&
	                 t->in->used >= t->used_before * (1 + last / 2);
	/* Or try one step: patience, flat all along. */
	bool try = flat && !t->after_step &&
	           n->up_agree >= AGILE_PROBE_PATIENCE;
	if (!quiet && !held_flat && !try)
		return 0;
	return probe_step(r, n->increase_streak, quiet);
}

/* Rule d's first half: the tick's own share of answers inside the target;
 * at or past the tolerance's complement only the smoothing's memory fired
 * the guard, and a clean tick does not cut.  Nor does the tick right after
 * a cut whose p50 is back inside the window: its slow answers are the last
 * of the queue that cut drained.  The Python client's probe overshot to
 * 367 req/s into 250, the cut took it to 172, and the tick after (p50
 * 18 ms, 6% of its answers past the SLO) cut again to 120 (issue 15); a
 * backlog that drains within the tick is not one rule a carries. */
void agile__rule_d_own_share(struct tick *t)
{
	const struct agile_resolved *r = t->r;

	t->inside = 1;
	if (!t->tail || (r->goodput_cut <= 0 && !t->took_back))
		return;
	double inside = 1 - (double)agile_hist_count_above(
		t->in->hist, agile__trunc_i64(agile_controller_tail_ns(r))) /
		(double)t->observed;
	/* Rule c's step back stands in for the guard's cut (step_proportional
	 * says why) while AGILE_TAKE_BACK_TAIL of the answers at most are
	 * past the target. */
	if (t->took_back && 1 - inside <= AGILE_TAKE_BACK_TAIL) {
		t->tail = false;
		return;
	}
	if (r->goodput_cut <= 0)
		return;
	t->inside = inside;
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
void agile__rule_d_goodput_cut(const struct agile_controller *n,
                               struct tick *t)
{
	double keep = t->r->goodput_cut * t->inside * t->load;
	bool known = t->p50_before > 0;

	bool rising = known && t->p50 > AGILE_GOODPUT_QUEUE_RISE * t->p50_before;

	/* At the floor no queue of ours explains answers past the target:
	 * a tick there whose p50 holds level, with no backlog draining and
	 * (all but the tolerance) of its answers late, is slow at any rate
	 * as well.  An event loop at its floor is held to its answers, and
	 * the cut below leaves it alone: ab -c 32 after the
	 * closed loop's slo-bump sat at 1 a second, its answers at 15 ms,
	 * with no break counted to climb back from (issue 15). */
	if (t->measured && known && t->rate <= t->floor && !t->draining &&
	    !t->backlog && t->inside <= t->r->tail_tolerance && !rising &&
	    !(t->p50 < t->p50_before * (1 - AGILE_BACKLOG_FALL)))
		t->slo_break = true;
	if (known && t->p50 * AGILE_GOODPUT_QUEUE_RISE < t->p50_before)
		return;
	if (t->measured && rising &&
	    keep < AGILE_GOODPUT_KEEP_DELIVERED * t->delivered)
		keep = AGILE_GOODPUT_KEEP_DELIVERED * t->delivered;
	if (t->r->goodput_cut > 0 && n->cutting && !n->cut_from_used &&
	    !n->cut_ended_cold && !t->held && t->next > keep) {
		t->next = keep;
		/* A p50 the last cut left where it was, with every grant
		 * answered and no backlog draining: slow at any rate. */
		t->slo_break = t->slo_break ||
		               (!rising && t->delivered_known &&
		                fabs(t->delivered - t->used) <= t->slack);
	}
}

/* Rule a's cut: under what was delivered, less the excess the tick sent,
 * which the next tick pays back. */
void agile__rule_a_deficit_cut(struct agile_controller *n, struct tick *t)
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
 * What it delivered under the rate in force measures that rate, not the
 * capacity: ab after 250 -> 80 req/s was cut to 45.6, read its queue's
 * last answers late the next tick (p50 124 ms, 45 delivered at 45.6), and
 * a knee of 52 held it at 47.8 for eight ticks with 80 on offer (issue
 * 15).  So the knee is what was delivered under delivered_share x the
 * rate, or with the p50 still rising (the queue full throughout, growing:
 * the event loop's 37 at 35.7 below, 180 then 390 ms).
 */
void agile__rule_a_knee(struct agile_controller *n, const struct tick *t)
{
	bool cut_now = n->last_action == AGILE_ACTION_DECREASE ||
	               n->last_action == AGILE_ACTION_TAIL;
	bool learns = t->measured && !t->split && cut_now && !t->slo_break;
	bool capacity = t->delivered < t->r->delivered_share * t->rate ||
	                t->p50 > t->p50_before;

	if (learns && (t->deficit || !n->cutting) &&
	    (t->deficit || t->congested || !t->below_knee) &&
	    (capacity || !n->cutting))
		n->knee_rate = t->delivered;
	else if (learns && t->congested && (n->cut_from_used || t->held) &&
	         capacity)
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
	/* The peak knee (rule b above the knee), forgotten toward it. */
	if (n->knee_rate >= n->peak_knee)
		n->peak_knee = n->knee_rate;
	else
		n->peak_knee -= (n->peak_knee - n->knee_rate) *
		                agile__peak_forget(t->r);

	/* The backlog: the queue this tick saw, p50's excess over the
	 * baseline times the knee it was delivered at, drains at the knee
	 * less the rate the cut leaves; until then, and until its answers
	 * are read (AGILE_BACKLOG_FACTOR), the next ticks' answers are that
	 * queue's. */
	double cut_to = agile__clamp(t->next, t->floor, t->r->max_rate);
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
	/* An SLO break's ticks, counted from rule d's first until the rate
	 * rises again or a deficit says the capacity fell
	 * (agile__rule_b_after_break returns from it in one tick). */
	if (t->measured && t->slo_break)
		n->slo_broke = n->slo_broke < AGILE_BREAK_TICKS_MOST ?
		               n->slo_broke + 1 : AGILE_BREAK_TICKS_MOST;
	else if (rose || t->deficit)
		n->slo_broke = 0;
	/* A rate that rises has left any backlog behind. */
	if (rose)
		n->backlog_ms = 0;
}

/* Rule c's series: increases in a row from the knee on. */
void agile__rule_c_streak(struct agile_controller *n, const struct tick *t)
{
	n->last_step = 0;
	n->fast_series = 0;
	if (n->last_action == AGILE_ACTION_INCREASE &&
	    (t->at_knee || t->fast)) {
		n->increase_streak = agile__inc_sat_i32(n->increase_streak);
		n->last_step = t->step > 0 ? t->step : 0;
		/* The fast series is not rule c's own: that one starts over
		 * from up_step after it. */
		if (t->fast && n->last_step > 0) {
			n->fast_series = 1;
			n->increase_streak = 0;
		}
	} else {
		n->increase_streak = 0;
	}
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
void agile__rule_a_calibrate(struct agile_controller *n, const struct tick *t)
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
