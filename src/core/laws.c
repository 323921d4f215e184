/*
 * laws.c - adaptx's three windowed concurrency laws (AIMD, Vegas, Gradient):
 * their options and defaults, the open sample window, and the once-per-window
 * adjustment with jitter and clamp.  The rules themselves are documented in
 * agile_laws.h; this file only adds the reasons behind the mechanics.
 *
 * Concurrency: many threads (or processes sharing the struct) record into
 * the open window with atomic adds.  Closing is claimed by a compare-and-swap
 * on window.start_ns, as the core's tick is claimed on next_tick_ns, and the
 * winner drains the counters by subtracting what it read: a sample recorded
 * while the window closes is counted in this window or the next, never lost
 * and never twice.  The law's estimators and the limit are written only by
 * the winner.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "agile_laws.h"
#include "atomics.h"
#include "internal.h"

static const char *const law_names[AGILE_LAW_COUNT] = {
	[AGILE_LAW_AGILE] = "agile",
	[AGILE_LAW_AIMD] = "aimd",
	[AGILE_LAW_VEGAS] = "vegas",
	[AGILE_LAW_GRADIENT] = "gradient",
};

/* --- options ----------------------------------------------------------------- */

/* The ranges adaptx's With* options accept.  Written as positive tests so
 * NaN fails every one of them. */
static bool fraction_open_closed(double f) /* (0, 1] */
{
	return f > 0 && f <= 1;
}

static bool fraction_open(double f) /* (0, 1) */
{
	return f > 0 && f < 1;
}

static bool fraction_closed(double f) /* [0, 1] */
{
	return f >= 0 && f <= 1;
}

/* A positive finite rate.  adaptx accepts any r > 0; +Inf is refused here
 * because converting it to an integer step is undefined in C. */
static bool positive_finite(double r)
{
	return r > 0 && isfinite(r);
}

static bool known_kind(int64_t kind)
{
	return kind >= 0 && kind < AGILE_LAW_COUNT;
}

void agile_law_options_init(struct agile_law_options *o)
{
	memset(o, 0, sizeof(*o));
	o->kind = AGILE_LAW_DEFAULT_KIND;
	o->initial_limit = AGILE_LAW_DEFAULT_INITIAL_LIMIT;
	o->min_limit = AGILE_LAW_DEFAULT_MIN_LIMIT;
	o->max_limit = AGILE_LAW_DEFAULT_MAX_LIMIT;
	o->target_latency_ns = AGILE_LAW_DEFAULT_TARGET_LATENCY_NS;
	o->sample_window_ns = AGILE_LAW_DEFAULT_SAMPLE_WINDOW_NS;
	o->warmup_samples = AGILE_LAW_DEFAULT_WARMUP_SAMPLES;
	o->smoothing = AGILE_LAW_DEFAULT_SMOOTHING;
	o->increase_rate = AGILE_LAW_DEFAULT_INCREASE_RATE;
	o->decrease_ratio = AGILE_LAW_DEFAULT_DECREASE_RATIO;
	o->utilization = AGILE_LAW_DEFAULT_UTILIZATION;
	o->tolerance = AGILE_LAW_DEFAULT_TOLERANCE;
	o->min_latency_decay = AGILE_LAW_DEFAULT_MIN_LATENCY_DECAY;
	o->jitter = AGILE_LAW_DEFAULT_JITTER;
}

int agile_law_set_kind(struct agile_law_options *o, int kind)
{
	if (!known_kind(kind)) {
		o->kind = AGILE_LAW_AIMD;
		return -EINVAL;
	}
	o->kind = (uint32_t)kind;
	return 0;
}

/* One setter per option; each keeps the old value on a refusal. */
#define SETTER(name, type, field, valid)                                     \
	int agile_law_set_##name(struct agile_law_options *o, type v)        \
	{                                                                    \
		if (!(valid))                                                \
			return -EINVAL;                                      \
		o->field = v;                                                \
		return 0;                                            \
	}

SETTER(initial_limit, int64_t, initial_limit, v > 0)
SETTER(min_limit, int64_t, min_limit, v > 0)
SETTER(max_limit, int64_t, max_limit, v > 0)
SETTER(smoothing, double, smoothing, fraction_open_closed(v))
SETTER(increase_rate, double, increase_rate, positive_finite(v))
SETTER(decrease_ratio, double, decrease_ratio, fraction_open(v))
SETTER(utilization, double, utilization, fraction_open_closed(v))
SETTER(target_latency_ns, int64_t, target_latency_ns, v > 0)
SETTER(tolerance, double, tolerance, fraction_open_closed(v))
SETTER(sample_window_ns, int64_t, sample_window_ns, v > 0)
SETTER(warmup_samples, int64_t, warmup_samples, v >= 0)
SETTER(min_latency_decay, double, min_latency_decay, fraction_closed(v))
SETTER(jitter, double, jitter, fraction_closed(v))

#undef SETTER

void agile_law_options_resolve(struct agile_law_options *o)
{
	struct agile_law_options d;

	agile_law_options_init(&d);
	/* A field written out of range directly is treated like a refused
	 * option: the default stands. */
	if (!known_kind(o->kind))
		o->kind = AGILE_LAW_AIMD;
	if (o->initial_limit <= 0)
		o->initial_limit = d.initial_limit;
	if (o->min_limit <= 0)
		o->min_limit = d.min_limit;
	if (o->max_limit <= 0)
		o->max_limit = d.max_limit;
	if (o->target_latency_ns <= 0)
		o->target_latency_ns = d.target_latency_ns;
	if (o->sample_window_ns <= 0)
		o->sample_window_ns = d.sample_window_ns;
	if (o->warmup_samples < 0)
		o->warmup_samples = d.warmup_samples;
	if (!fraction_open_closed(o->smoothing))
		o->smoothing = d.smoothing;
	if (!positive_finite(o->increase_rate))
		o->increase_rate = d.increase_rate;
	if (!fraction_open(o->decrease_ratio))
		o->decrease_ratio = d.decrease_ratio;
	if (!fraction_open_closed(o->utilization))
		o->utilization = d.utilization;
	if (!fraction_open_closed(o->tolerance))
		o->tolerance = d.tolerance;
	if (!fraction_closed(o->min_latency_decay))
		o->min_latency_decay = d.min_latency_decay;
	if (!fraction_closed(o->jitter))
		o->jitter = d.jitter;
	o->pad = 0;

	/* adaptx's cross-field invariants, in its order. */
	if (o->min_limit < 1)
		o->min_limit = 1;
	if (o->max_limit < o->min_limit)
		o->max_limit = o->min_limit;
	if (o->initial_limit < o->min_limit)
		o->initial_limit = o->min_limit;
	if (o->initial_limit > o->max_limit)
		o->initial_limit = o->max_limit;
}

const char *agile_law_name(int kind)
{
	return known_kind(kind) ? law_names[kind] : law_names[AGILE_LAW_AIMD];
}

/* Matched as the presets' names are (ASCII case ignored); no law's name
 * has a '-' for a '_' to stand for. */
int agile_law_parse(const char *name, enum agile_law_kind *out)
{
	int i;

	if (name == NULL || out == NULL)
		return -EINVAL;
	i = agile__name_index(name, law_names, AGILE_LAW_COUNT);
	if (i < 0)
		return -EINVAL;
	*out = (enum agile_law_kind)i;
	return 0;
}

/* --- the laws ---------------------------------------------------------------- */

/*
 * limit x factor truncated toward zero, as adaptx's int(float64(limit) * f).
 * Factors here are in (0, 1], so the product never exceeds the limit; the
 * clamp is for options read from a state file someone else wrote, where a
 * factor can be anything a double can hold.
 */
static int64_t scaled(int64_t limit, double factor)
{
	return agile__trunc_i64((double)limit * factor);
}

/* limit + step for the small additive steps, saturating at INT64_MAX. */
static int64_t plus(int64_t limit, int64_t step)
{
	return limit > INT64_MAX - step ? INT64_MAX : limit + step;
}

/* The EMA of window means, seeded with the first mean rather than blended
 * with zero (a zero seed would read the second window as a huge rise). */
static void fold_average(double *avg_ns, double mean_ns, double smoothing)
{
	if (*avg_ns <= 0)
		*avg_ns = mean_ns;
	else
		*avg_ns = smoothing * mean_ns + (1 - smoothing) * *avg_ns;
}

int64_t agile_aimd_step(struct agile_aimd *s, const struct agile_law_options *o,
                        int64_t limit, const struct agile_law_summary *w)
{
	/* However many calls failed, the window is one decrease: ten failures
	 * in one window must not halve the limit ten times. */
	if (w->failures > 0)
		return scaled(limit, o->decrease_ratio);
	/* The utilisation gate: a window that never came near the limit says
	 * nothing about whether more concurrency would be served, so idle
	 * successes do not inflate it. */
	if ((double)w->peak_in_flight < ceil((double)limit * o->utilization))
		return limit;
	s->credit += o->increase_rate;
	double step = floor(s->credit);
	s->credit -= step;
	/* Summed in double and saturated so an absurd increase_rate cannot
	 * overflow; the clamp to max_limit follows the jitter, as in adaptx. */
	return agile__trunc_i64((double)limit + step);
}

int64_t agile_vegas_step(struct agile_vegas *s, const struct agile_law_options *o,
                         int64_t limit, const struct agile_law_summary *w)
{
	double rtt = w->mean_ns;

	/* A window of failures without a latency says nothing about the
	 * queue, and folding its mean of 0 would pull the average down. */
	if (rtt <= 0)
		return limit;
	fold_average(&s->avg_ns, rtt, o->smoothing);
	/* Decay first, then take the window's minimum: the drift lets a
	 * minimum set by one anomalously fast sample wear off, while a real
	 * floor is re-established by the very next window that sees it. */
	if (o->min_latency_decay > 0 && s->min_ns > 0)
		s->min_ns += o->min_latency_decay * (s->avg_ns - s->min_ns);
	if (w->min_ns > 0 && (s->min_ns <= 0 || (double)w->min_ns < s->min_ns))
		s->min_ns = (double)w->min_ns;
	if (s->min_ns <= 0)
		return limit;

	/* Queued work: the share of the window's mean RTT that is not the
	 * floor, in units of the limit.  The denominator is the window mean,
	 * not the minimum, so the estimate stays within [0, limit). */
	double queue = (double)limit * (1 - s->min_ns / rtt);
	double alpha = (double)limit * o->tolerance;
	double target = (double)o->target_latency_ns;

	if (target > s->min_ns)
		alpha *= 1 - s->min_ns / target;
	if (queue < alpha)
		return plus(limit, 1);
	if (queue > alpha * AGILE_LAW_VEGAS_BACKOFF_BAND)
		return scaled(limit, o->decrease_ratio);
	return limit;
}

int64_t agile_gradient_step(struct agile_gradient *s,
                            const struct agile_law_options *o, int64_t limit,
                            const struct agile_law_summary *w)
{
	double rtt = w->mean_ns;

	/* Only failures without a latency: nothing to fold into the average,
	 * but the failures still back off once there is one. */
	if (rtt <= 0)
		return s->avg_ns > 0 && w->failures > 0
		       ? scaled(limit, o->decrease_ratio) : limit;
	/* The first window only seeds the average: comparing it with nothing
	 * would let a high opening RTT read as "at the average" and grow. */
	if (s->avg_ns <= 0) {
		s->avg_ns = rtt;
		return limit;
	}
	fold_average(&s->avg_ns, rtt, o->smoothing);
	if (w->failures > 0)
		return scaled(limit, o->decrease_ratio);

	double g = (rtt - s->avg_ns) / s->avg_ns;

	if (g < -o->tolerance)
		return plus(limit, AGILE_LAW_GRADIENT_FAST_STEP);
	if (g <= o->tolerance)
		return plus(limit, 1);
	/* Proportional backoff, never deeper than one decrease_ratio. */
	return scaled(limit, fmax(1 - g * o->decrease_ratio, o->decrease_ratio));
}

static double unit_interval(double v)
{
	if (!(v > 0))
		return 0;
	return v < 1 ? v : 1;
}

int64_t agile_law_jitter(const struct agile_law_options *o, int64_t old,
                         int64_t next, const struct agile_law_draw *draw)
{
	if (next <= old || draw == NULL || !(o->jitter > 0))
		return next;
	/* Many limiters that grow in the same window would otherwise step up
	 * in lockstep; withholding a random share half of the time spreads
	 * them out.  A step of 1 at jitter 0.1 is never withheld. */
	int64_t withheld = agile__trunc_i64(
		(double)agile__sub_sat(next, old) * o->jitter *
		unit_interval(draw->amount));

	if (unit_interval(draw->coin) < AGILE_LAW_JITTER_COIN)
		next = agile__sub_sat(next, withheld);
	return next;
}

/* --- the window -------------------------------------------------------------- */

static void window_open(struct agile_law_window *w, int64_t now_ns)
{
	memset(w, 0, sizeof(*w));
	w->start_ns = now_ns;
	w->min_ns = INT64_MAX;
}

/* Lower *p to at most v. */
static void atomic_min_i64(int64_t *p, int64_t v)
{
	int64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);

	while (v < cur && !__atomic_compare_exchange_n(p, &cur, v, true,
	                                               __ATOMIC_RELAXED,
	                                               __ATOMIC_RELAXED))
		;
}

static uint64_t drain_u64(uint64_t *p)
{
	uint64_t v = agile__load_u64(p);

	agile__sub_u64(p, v);
	return v;
}

int agile_law_init(struct agile_law *law, const struct agile_law_options *o,
                   int64_t now_ns)
{
	if (law == NULL)
		return -EINVAL;
	memset(law, 0, sizeof(*law));
	if (o != NULL)
		law->config = *o;
	else
		agile_law_options_init(&law->config);
	agile_law_options_resolve(&law->config);
	law->limit = law->config.initial_limit;
	window_open(&law->window, now_ns);
	return 0;
}

void agile_law_reset(struct agile_law *law, int64_t now_ns, int64_t in_flight)
{
	int64_t limit = law->config.initial_limit;

	/* Never below what is already admitted: the calls in flight hold
	 * their permits, and a limit under them would be debt no release was
	 * asked to pay. */
	if (in_flight > limit)
		limit = in_flight;
	if (limit > law->config.max_limit)
		limit = law->config.max_limit;
	agile__store_i64(&law->limit, limit);
	law->seen = 0;
	law->windows = 0;
	law->adjustments = 0;
	law->increases = 0;
	law->decreases = 0;
	memset(&law->state, 0, sizeof(law->state));
	window_open(&law->window, now_ns);
}

bool agile_law_record(struct agile_law *law, bool success, int64_t latency_ns,
                      uint64_t in_flight)
{
	struct agile_law_window *w = &law->window;

	if (law->config.kind == AGILE_LAW_AGILE || latency_ns <= 0)
		return false;
	agile__add_u64(&w->samples, 1);
	if (!success)
		agile__add_u64(&w->failures, 1);
	__atomic_add_fetch(&w->sum_ns, latency_ns, __ATOMIC_RELAXED);
	atomic_min_i64(&w->min_ns, latency_ns);
	agile__add_u64(&w->timed, 1);
	agile__max_u64(&w->peak_in_flight, in_flight);
	agile__add_u64(&law->seen, 1);
	return true;
}

bool agile_law_record_failure(struct agile_law *law, uint64_t in_flight)
{
	struct agile_law_window *w = &law->window;

	if (law->config.kind == AGILE_LAW_AGILE)
		return false;
	agile__add_u64(&w->samples, 1);
	agile__add_u64(&w->failures, 1);
	agile__max_u64(&w->peak_in_flight, in_flight);
	agile__add_u64(&law->seen, 1);
	return true;
}

bool agile_law_due(const struct agile_law *law, int64_t now_ns)
{
	if (law->config.kind == AGILE_LAW_AGILE)
		return false;
	return now_ns - agile__load_i64(&law->window.start_ns) >=
	       law->config.sample_window_ns;
}

/* Take the closing window's counters, leaving the next window empty. */
static void window_drain(struct agile_law_window *w,
                         struct agile_law_summary *out)
{
	out->samples = drain_u64(&w->samples);
	out->failures = drain_u64(&w->failures);
	out->timed = drain_u64(&w->timed);
	int64_t sum = __atomic_load_n(&w->sum_ns, __ATOMIC_ACQUIRE);
	__atomic_sub_fetch(&w->sum_ns, sum, __ATOMIC_RELAXED);
	out->min_ns = __atomic_exchange_n(&w->min_ns, INT64_MAX, __ATOMIC_ACQ_REL);
	out->peak_in_flight =
		__atomic_exchange_n(&w->peak_in_flight, 0, __ATOMIC_ACQ_REL);
	out->mean_ns = out->timed > 0 ? (double)sum / (double)out->timed : 0;
	if (out->timed == 0 || out->min_ns == INT64_MAX)
		out->min_ns = 0;
}

static int64_t run_law(struct agile_law *law, int64_t limit,
                       const struct agile_law_summary *w)
{
	switch (law->config.kind) {
	case AGILE_LAW_VEGAS:
		return agile_vegas_step(&law->state.vegas, &law->config, limit, w);
	case AGILE_LAW_GRADIENT:
		return agile_gradient_step(&law->state.gradient, &law->config,
		                           limit, w);
	case AGILE_LAW_AIMD:
	default:
		return agile_aimd_step(&law->state.aimd, &law->config, limit, w);
	}
}

enum agile_law_result agile_law_advance(struct agile_law *law, int64_t now_ns,
                                        const struct agile_law_draw *draw,
                                        struct agile_law_change *change)
{
	const struct agile_law_options *o = &law->config;
	struct agile_law_summary w;
	int64_t start = agile__load_i64(&law->window.start_ns);
	enum agile_law_result result;

	if (o->kind == AGILE_LAW_AGILE ||
	    agile__sub_sat(now_ns, start) < o->sample_window_ns)
		return AGILE_LAW_NOT_DUE;
	/* The next window opens now, not at start + window: after an idle
	 * spell one window closes, rather than a burst of empty ones. */
	if (!agile__cas_i64(&law->window.start_ns, &start, now_ns))
		return AGILE_LAW_NOT_DUE;
	window_drain(&law->window, &w);
	agile__add_u64(&law->windows, 1);

	int64_t old = agile__load_i64(&law->limit);
	int64_t next = old;

	if (agile__load_u64(&law->seen) < (uint64_t)o->warmup_samples) {
		result = AGILE_LAW_WARMING;
	} else if (w.samples == 0) {
		result = AGILE_LAW_EMPTY;
	} else {
		next = run_law(law, old, &w);
		next = agile_law_jitter(o, old, next, draw);
		if (next < o->min_limit)
			next = o->min_limit;
		if (next > o->max_limit)
			next = o->max_limit;
		agile__add_u64(&law->adjustments, 1);
		if (next > old) {
			result = AGILE_LAW_INCREASED;
			agile__add_u64(&law->increases, 1);
		} else if (next < old) {
			result = AGILE_LAW_DECREASED;
			agile__add_u64(&law->decreases, 1);
		} else {
			result = AGILE_LAW_HELD;
		}
		agile__store_i64(&law->limit, next);
	}
	if (change != NULL) {
		change->old_limit = old;
		change->new_limit = next;
		change->summary = w;
	}
	return result;
}

int64_t agile_law_limit(const struct agile_law *law)
{
	return agile__load_i64(&law->limit);
}
