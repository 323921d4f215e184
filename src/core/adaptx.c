/*
 * adaptx.c - adaptx's adaptive concurrency limiter over libagile: admission
 * against a live limit, idempotent permits, the caller-driven waits of
 * acquire and drain, the latency history behind the stats, and the window
 * step that moves the limit (a law from laws.c, or the core's own
 * concurrency limiter for AGILE_LAW_AGILE).
 *
 * The release order follows adaptx: the outcome is recorded and the window
 * closed (so the closing call is still counted in flight in the window's
 * peak) before the slot is given back.
 *
 * The laws' arithmetic lives in laws.c alone: this file and the core's
 * concurrency limiter (limiter.c, config.law) both record into and advance
 * a struct agile_law.  The windowed laws do not run through the core
 * limiter here, although it can carry them, because the two configure them
 * differently on purpose: adaptx hands the caller every option of its law
 * (smoothing, increase rate, warm-up, jitter, ...), while the core limiter
 * derives a law's options from its own configuration (floor, max, initial,
 * tick, SLO) and keeps adaptx's defaults for the rest.  adaptx also counts
 * its own admissions and rejections, where the core counts every refused
 * try.  What the two share beyond the law is the compare-and-swap
 * admission below, a dozen lines.
 */
#include <errno.h>
#include <string.h>

#include "agile_adaptx.h"
#include "atomics.h"

static bool uses_core(const struct agile_adaptx *l)
{
	return l->law.config.kind == AGILE_LAW_AGILE;
}

static int64_t ring_capacity_for(int64_t window_ns)
{
	double n = (double)AGILE_ADAPTX_RING_PER_S * (double)window_ns /
	           (double)AGILE_NS_PER_S;

	if (n < AGILE_ADAPTX_RING_MIN)
		return AGILE_ADAPTX_RING_MIN;
	if (n > AGILE_ADAPTX_RING_MAX)
		return AGILE_ADAPTX_RING_MAX;
	return (int64_t)n;
}

/* The core limiter's configuration when the caller gives none: the adaptx
 * bounds carry over, the sample window becomes the tick, and every policy
 * field keeps the core's default. */
static void derive_core_config(const struct agile_law_options *o,
                               struct agile_config *c)
{
	memset(c, 0, sizeof(*c));
	c->max_rate = o->max_limit;
	c->initial_rate = o->initial_limit;
	c->min_rate = o->min_limit;
	c->floor_rate = o->min_limit;
	c->probe_rate = o->min_limit;
	c->tick_ns = o->sample_window_ns;
	/* adaptx's options name no baseline probe, and its limiter starts
	 * at the initial limit they give; a core configuration passed in
	 * says for itself. */
	c->baseline_probe_ns = AGILE_BASELINE_PROBE_OFF;
}

int agile_adaptx_init(struct agile_adaptx *l,
                      const struct agile_law_options *options,
                      const struct agile_config *core, int64_t now_ns)
{
	if (l == NULL)
		return -EINVAL;
	memset(l, 0, sizeof(*l));
	agile_law_init(&l->law, options, now_ns);
	l->ring_capacity = ring_capacity_for(l->law.config.sample_window_ns);
	if (uses_core(l)) {
		struct agile_config derived;

		if (core == NULL) {
			derive_core_config(&l->law.config, &derived);
			core = &derived;
		}
		l->core_config = *core;
		int rc = agile_conc_init(&l->core, core, now_ns);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* --- queries ----------------------------------------------------------------- */

int64_t agile_adaptx_limit(const struct agile_adaptx *l)
{
	if (uses_core(l))
		return (int64_t)agile_conc_limit(&l->core);
	return agile_law_limit(&l->law);
}

int64_t agile_adaptx_in_flight(const struct agile_adaptx *l)
{
	if (uses_core(l))
		return (int64_t)agile_conc_in_flight(&l->core);
	return (int64_t)agile__load_u64(&l->in_flight);
}

bool agile_adaptx_is_closed(const struct agile_adaptx *l)
{
	return agile__load_u64(&l->closed) != 0;
}

bool agile_adaptx_allow(const struct agile_adaptx *l)
{
	if (agile_adaptx_is_closed(l))
		return false;
	return agile_adaptx_limit(l) - agile_adaptx_in_flight(l) > 0;
}

/* --- admission --------------------------------------------------------------- */

/* Claim a slot if in_flight < limit; on success *before is the count in
 * flight just before this admission. */
static bool take_slot(struct agile_adaptx *l, int64_t *before)
{
	if (uses_core(l)) {
		/* Checked first so a waiting acquire's retries do not pile
		 * up in the core's refused counter. */
		if (agile_conc_in_flight(&l->core) >= agile_conc_limit(&l->core))
			return false;
		if (!agile_conc_try_take(&l->core))
			return false;
		*before = (int64_t)agile_conc_in_flight(&l->core) - 1;
		return true;
	}

	uint64_t cur = agile__load_u64(&l->in_flight);

	for (;;) {
		if ((int64_t)cur >= agile_law_limit(&l->law))
			return false;
		if (agile__cas_u64(&l->in_flight, &cur, cur + 1))
			break;
	}
	*before = (int64_t)cur;
	return true;
}

static void give_back_slot(struct agile_adaptx *l)
{
	if (uses_core(l)) {
		agile_conc_release(&l->core);
		return;
	}

	uint64_t cur = agile__load_u64(&l->in_flight);

	/* Never below zero: a stray release must not open unbounded
	 * admission. */
	while (cur > 0 && !agile__cas_u64(&l->in_flight, &cur, cur - 1))
		;
}

/*
 * One admission attempt: 0 with the permit filled, AGILE_EOVERLOADED, or
 * -ESHUTDOWN when a close raced the claim (the slot is given back, as adaptx
 * returns a permit it grabbed from a closed limiter).
 */
static int attempt(struct agile_adaptx *l, struct agile_adaptx_permit *permit)
{
	int64_t before;

	if (!take_slot(l, &before))
		return AGILE_EOVERLOADED;
	if (agile_adaptx_is_closed(l)) {
		give_back_slot(l);
		return -ESHUTDOWN;
	}
	agile__add_u64(&l->counters.total, 1);
	permit->limit = agile_adaptx_limit(l);
	permit->in_flight = before;
	agile__store_u64(&permit->held, 1);
	return 0;
}

int agile_adaptx_try_acquire(struct agile_adaptx *l,
                             struct agile_adaptx_permit *permit)
{
	if (permit == NULL)
		return -EINVAL;
	agile__store_u64(&permit->held, 0);
	if (l == NULL)
		return -EINVAL;
	if (agile_adaptx_is_closed(l))
		return -ESHUTDOWN;

	int rc = attempt(l, permit);

	if (rc < 0)
		agile__add_u64(&l->counters.rejected, 1);
	return rc;
}

static bool cancelled(const struct agile_adaptx_hooks *hooks)
{
	return hooks->cancelled != NULL && hooks->cancelled(hooks->arg);
}

static int64_t poll_period(const struct agile_adaptx_hooks *hooks,
                           int64_t fallback_ns)
{
	return hooks->poll_ns > 0 ? hooks->poll_ns : fallback_ns;
}

/* The earlier of now + period and the deadline, without overflow. */
static int64_t wake_time(int64_t now_ns, int64_t period_ns, int64_t deadline_ns)
{
	if (now_ns > deadline_ns - period_ns)
		return deadline_ns;
	return now_ns + period_ns;
}

static int reject(struct agile_adaptx *l, int rc)
{
	agile__add_u64(&l->counters.rejected, 1);
	return rc;
}

int agile_adaptx_acquire(struct agile_adaptx *l, int64_t deadline_ns,
                         const struct agile_adaptx_hooks *hooks,
                         struct agile_adaptx_permit *permit)
{
	if (permit == NULL)
		return -EINVAL;
	agile__store_u64(&permit->held, 0);
	if (l == NULL || hooks == NULL || hooks->now_ns == NULL)
		return -EINVAL;
	if (agile_adaptx_is_closed(l))
		return -ESHUTDOWN;
	for (;;) {
		/* The caller's give-up comes first on every round: a
		 * cancelled or expired call never consumes a permit, even
		 * one that is free. */
		if (cancelled(hooks))
			return reject(l, -ECANCELED);
		int64_t now = hooks->now_ns(hooks->arg);
		if (now >= deadline_ns)
			return reject(l, -ETIMEDOUT);

		int rc = attempt(l, permit);
		if (rc == 0)
			return 0;
		if (rc == -ESHUTDOWN || agile_adaptx_is_closed(l))
			return reject(l, -ESHUTDOWN);
		if (hooks->sleep_until_ns != NULL)
			hooks->sleep_until_ns(
				wake_time(now, poll_period(hooks,
				                           AGILE_ADAPTX_DEFAULT_POLL_NS),
				          deadline_ns),
				hooks->arg);
		if (agile_adaptx_is_closed(l))
			return reject(l, -ESHUTDOWN);
	}
}

/* --- the window step --------------------------------------------------------- */

static void count_change(struct agile_adaptx *l, int64_t old_limit,
                         int64_t new_limit,
                         const struct agile_adaptx_hooks *hooks)
{
	if (new_limit == old_limit)
		return;
	if (new_limit > old_limit)
		agile__add_u64(&l->counters.increases, 1);
	else
		agile__add_u64(&l->counters.decreases, 1);
	if (hooks != NULL && hooks->on_limit_change != NULL)
		hooks->on_limit_change(old_limit, new_limit, hooks->arg);
}

enum agile_law_result agile_adaptx_advance(struct agile_adaptx *l,
                                           int64_t now_ns,
                                           const struct agile_adaptx_hooks *hooks)
{
	if (uses_core(l)) {
		int64_t old = (int64_t)agile_conc_limit(&l->core);

		if (!agile_conc_tick_if_due(&l->core, now_ns))
			return AGILE_LAW_NOT_DUE;
		int64_t next = (int64_t)agile_conc_limit(&l->core);
		count_change(l, old, next, hooks);
		return next > old ? AGILE_LAW_INCREASED :
		       next < old ? AGILE_LAW_DECREASED : AGILE_LAW_HELD;
	}
	if (!agile_law_due(&l->law, now_ns))
		return AGILE_LAW_NOT_DUE;

	/* Drawn only when a window is due, two per window, so a caller's
	 * sequence of draws is reproducible from the windows alone. */
	struct agile_law_draw draw = {0, 0};
	const struct agile_law_draw *drawp = NULL;
	if (hooks != NULL && hooks->draw != NULL) {
		draw.amount = hooks->draw(hooks->arg);
		draw.coin = hooks->draw(hooks->arg);
		drawp = &draw;
	}

	struct agile_law_change change;
	enum agile_law_result r = agile_law_advance(&l->law, now_ns, drawp,
	                                            &change);
	if (r == AGILE_LAW_INCREASED || r == AGILE_LAW_DECREASED)
		count_change(l, change.old_limit, change.new_limit, hooks);
	return r;
}

/* --- release ----------------------------------------------------------------- */

static void ring_push(struct agile_adaptx *l, int64_t at_ns, int64_t latency_ns)
{
	uint64_t n = __atomic_fetch_add(&l->ring_written, 1, __ATOMIC_RELAXED);
	struct agile_adaptx_sample *s =
		&l->ring[n % (uint64_t)l->ring_capacity];

	/* Two stores: a stats reader racing this writer may pair an old
	 * time with a new latency.  Stats are a best-effort snapshot, and
	 * adaptx's are taken under a lock it does not want on this path. */
	agile__store_i64(&s->latency_ns, latency_ns);
	agile__store_i64(&s->at_ns, at_ns);
}

int agile_adaptx_release(struct agile_adaptx *l,
                         struct agile_adaptx_permit *permit, bool success,
                         int64_t latency_ns, int64_t now_ns,
                         const struct agile_adaptx_hooks *hooks)
{
	uint64_t held = 1;

	if (l == NULL || permit == NULL)
		return -EINVAL;
	if (!agile__cas_u64(&permit->held, &held, 0))
		return -EALREADY;

	agile__add_u64(success ? &l->counters.success : &l->counters.failures, 1);
	if (latency_ns > 0) {
		ring_push(l, now_ns, latency_ns);
		if (uses_core(l))
			/* adaptx's failures are answers that went wrong: the
			 * core's "reached" outcome, whose latency counts. */
			agile_conc_observe(&l->core, latency_ns);
		else
			agile_law_record(&l->law, success, latency_ns,
			                 agile__load_u64(&l->in_flight));
	}
	agile_adaptx_advance(l, now_ns, hooks);
	give_back_slot(l);
	return 0;
}

/* --- execute ----------------------------------------------------------------- */

void agile_adaptx_call_skip(struct agile_adaptx_call *call)
{
	call->skip = true;
}

/* Run fn on an admitted permit and release it: the one exit path. */
static void run_admitted(struct agile_adaptx *l,
                         struct agile_adaptx_permit *permit,
                         const struct agile_adaptx_hooks *hooks,
                         agile_adaptx_fn fn, void *fn_arg, int *fn_rc)
{
	struct agile_adaptx_call call = {
		.limit = permit->limit,
		.in_flight = permit->in_flight,
		.law = (enum agile_law_kind)l->law.config.kind,
		.skip = false,
	};
	int64_t start = hooks->now_ns(hooks->arg);
	int rc = fn(&call, fn_arg);
	int64_t end = hooks->now_ns(hooks->arg);

	agile_adaptx_release(l, permit, rc == 0, call.skip ? 0 : end - start,
	                     end, hooks);
	if (fn_rc != NULL)
		*fn_rc = rc;
}

int agile_adaptx_execute(struct agile_adaptx *l, int64_t deadline_ns,
                         const struct agile_adaptx_hooks *hooks,
                         agile_adaptx_fn fn, void *fn_arg, int *fn_rc)
{
	struct agile_adaptx_permit permit;

	if (fn == NULL)
		return -EINVAL;

	int rc = agile_adaptx_acquire(l, deadline_ns, hooks, &permit);
	if (rc < 0)
		return rc;
	run_admitted(l, &permit, hooks, fn, fn_arg, fn_rc);
	return 0;
}

int agile_adaptx_try_execute(struct agile_adaptx *l, int64_t deadline_ns,
                             const struct agile_adaptx_hooks *hooks,
                             agile_adaptx_fn fn, void *fn_arg, int *fn_rc)
{
	struct agile_adaptx_permit permit;

	if (l == NULL || hooks == NULL || hooks->now_ns == NULL)
		return -EINVAL;
	if (agile_adaptx_is_closed(l))
		return -ESHUTDOWN;
	if (fn == NULL)
		return -EINVAL;
	if (cancelled(hooks))
		return -ECANCELED;
	if (hooks->now_ns(hooks->arg) >= deadline_ns)
		return -ETIMEDOUT;

	int rc = agile_adaptx_try_acquire(l, &permit);
	if (rc < 0)
		return agile_adaptx_is_closed(l) ? -ESHUTDOWN : rc;
	run_admitted(l, &permit, hooks, fn, fn_arg, fn_rc);
	return 0;
}

/* --- lifecycle --------------------------------------------------------------- */

static bool mark_closed(struct agile_adaptx *l)
{
	uint64_t open = 0;

	return agile__cas_u64(&l->closed, &open, 1);
}

int agile_adaptx_close(struct agile_adaptx *l)
{
	mark_closed(l);
	return 0;
}

int agile_adaptx_close_drain(struct agile_adaptx *l, int64_t timeout_ns,
                             const struct agile_adaptx_hooks *hooks)
{
	if (timeout_ns > 0 && (hooks == NULL || hooks->now_ns == NULL))
		return -EINVAL;
	if (!mark_closed(l))
		return -ESHUTDOWN;
	if (timeout_ns > 0) {
		int64_t now = hooks->now_ns(hooks->arg);
		int64_t deadline = timeout_ns > INT64_MAX - now ? INT64_MAX :
		                   now + timeout_ns;
		int64_t period = poll_period(hooks, AGILE_ADAPTX_DRAIN_POLL_NS);

		while (agile_adaptx_in_flight(l) > 0 && now < deadline) {
			if (hooks->sleep_until_ns != NULL)
				hooks->sleep_until_ns(
					wake_time(now, period, deadline),
					hooks->arg);
			now = hooks->now_ns(hooks->arg);
		}
	}
	return agile_adaptx_in_flight(l) > 0 ? -ETIMEDOUT : 0;
}

void agile_adaptx_reset_stats(struct agile_adaptx *l, int64_t now_ns)
{
	int64_t in_flight = agile_adaptx_in_flight(l);

	if (uses_core(l)) {
		/* The core has no reset of its own: re-initialise it from the
		 * configuration it was started with and carry the in-flight
		 * count over, so the calls still running release cleanly. */
		if (agile_conc_init(&l->core, &l->core_config, now_ns) == 0)
			agile__store_u64(&l->core.in_flight, (uint64_t)in_flight);
	} else {
		agile_law_reset(&l->law, now_ns, in_flight);
	}
	memset(&l->counters, 0, sizeof(l->counters));
	agile__store_u64(&l->ring_written, 0);
	memset(l->ring, 0, sizeof(l->ring));
}

/* --- stats ------------------------------------------------------------------- */

/* The part of the history the stats look at: the first `used` ring slots,
 * and of those only the samples recorded after `cutoff_ns`. */
struct history {
	const struct agile_adaptx *l;
	uint64_t used;
	int64_t cutoff_ns;
};

static bool history_at(const struct history *h, uint64_t i, int64_t *latency)
{
	const struct agile_adaptx_sample *s = &h->l->ring[i];

	if (agile__load_i64(&s->at_ns) <= h->cutoff_ns)
		return false;
	*latency = agile__load_i64(&s->latency_ns);
	return *latency > 0;
}

/* How many in-window samples are <= v. */
static uint64_t count_at_most(const struct history *h, int64_t v)
{
	uint64_t n = 0;
	int64_t lat;

	for (uint64_t i = 0; i < h->used; i++)
		if (history_at(h, i, &lat) && lat <= v)
			n++;
	return n;
}

/* The in-window sample of rank k (0-based, ascending), found by bisecting
 * the value range [lo, hi] on the count of samples at or below a value. */
static int64_t select_rank(const struct history *h, uint64_t k, int64_t lo,
                           int64_t hi)
{
	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;

		if (count_at_most(h, mid) >= k + 1)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

void agile_adaptx_stats(const struct agile_adaptx *l, int64_t now_ns,
                        struct agile_adaptx_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->law = (enum agile_law_kind)l->law.config.kind;
	out->limit = agile_adaptx_limit(l);
	out->min_limit = l->law.config.min_limit;
	out->max_limit = l->law.config.max_limit;
	out->in_flight = agile_adaptx_in_flight(l);
	out->total = agile__load_u64(&l->counters.total);
	out->success = agile__load_u64(&l->counters.success);
	out->failures = agile__load_u64(&l->counters.failures);
	out->rejected = agile__load_u64(&l->counters.rejected);
	out->increases = agile__load_u64(&l->counters.increases);
	out->decreases = agile__load_u64(&l->counters.decreases);
	out->closed = agile_adaptx_is_closed(l);
	if (out->in_flight > out->limit)
		out->debt = out->in_flight - out->limit;
	else if (!out->closed)
		out->available = out->limit - out->in_flight;

	uint64_t written = agile__load_u64(&l->ring_written);
	struct history h = {
		.l = l,
		.used = written < (uint64_t)l->ring_capacity ?
		        written : (uint64_t)l->ring_capacity,
		.cutoff_ns = now_ns - l->law.config.sample_window_ns,
	};
	uint64_t n = 0;
	int64_t sum = 0, lo = INT64_MAX, hi = 0, lat;

	for (uint64_t i = 0; i < h.used; i++) {
		if (!history_at(&h, i, &lat))
			continue;
		n++;
		sum += lat;
		if (lat < lo)
			lo = lat;
		if (lat > hi)
			hi = lat;
	}
	if (n == 0)
		return;
	out->avg_latency_ns = sum / (int64_t)n;
	out->min_latency_ns = lo;
	out->max_latency_ns = hi;
	out->p50_latency_ns =
		select_rank(&h, (uint64_t)((double)(n - 1) * 0.50), lo, hi);
	out->p99_latency_ns =
		select_rank(&h, (uint64_t)((double)(n - 1) * 0.99), lo, hi);
}
