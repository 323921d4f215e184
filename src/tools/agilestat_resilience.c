/*
 * agilestat_resilience.c - agilestat's view of the resilience features (see
 * agilestat_resilience.h).
 *
 * Everything is read from the read-only mapping without the region's locks
 * (agilestat never writes the file): counters with atomic loads, and the
 * breaker, quota and window from a copy, so a value may be one call stale
 * but never torn beyond a single call's update.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "agile_resilience.h"
#include "agilestat_json.h"
#include "agilestat_resilience.h"
#include "resilience.h"

/* What is shown of one region at one instant. */
struct reading {
	uint32_t features;
	const char *conc_name;
	int64_t conc_limit, conc_held;
	uint64_t conc_admitted, conc_waited, conc_timeouts, conc_reclaimed;
	/* A windowed law's counters (agile_laws.h); 0 for any other cap. */
	uint64_t law_windows, law_adjustments, law_increases, law_decreases;
	double breaker_ratio;
	uint64_t breaker_allowed, breaker_refused, breaker_failures;
	uint64_t breaker_passes;
	int32_t quota, quota_left;
	int64_t quota_period_ns, quota_reset_ns;
	bool quota_align;
	uint64_t quota_refused, quota_waited;
	int32_t window, window_left;
	int64_t window_span_ns, window_next_ns;
	uint64_t window_refused, window_waited;
	int64_t paused_ns;
	uint64_t http_pauses, http_cache_hits, http_excluded, http_5xx;
	uint64_t http_ignored;
	uint64_t connect_retries, connect_timeouts;
	uint64_t keys_held, key_refused, key_idle, key_capacity;
	uint64_t accepted, shed, shed_cpu;
	/* client_rate=: the shared client table (agile_clients.h), read
	 * without its lock, so the counts may be a moment apart */
	uint64_t clients_held, clients_bound, client_allowed, client_refused;
	uint64_t client_idle, client_capacity;
	struct agile_stats core; /* the adaptive cap's controller */
};

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * AGILE_NS_PER_S + ts.tv_nsec;
}

static uint64_t u64(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void read_region(const struct agile_state_slot *s, struct reading *r)
{
	const struct agile_state_resilience *z = &s->resilience;
	int64_t mono = clock_ns(CLOCK_MONOTONIC);
	struct agile_breaker breaker;
	struct agile_period_quota quota;
	int64_t paused_until;

	memset(r, 0, sizeof(*r));
	r->features = __atomic_load_n(&z->features, __ATOMIC_ACQUIRE);
	r->conc_name = agile__resilience_conc_name(z);
	r->conc_limit = __atomic_load_n(&z->conc_limit, __ATOMIC_ACQUIRE);
	r->conc_held = agile__resilience_permits_held(z);
	r->conc_admitted = u64(&z->conc_admitted);
	r->conc_waited = u64(&z->conc_waited);
	r->conc_timeouts = u64(&z->conc_timeouts);
	r->conc_reclaimed = u64(&z->conc_reclaimed);
	r->law_windows = u64(&z->core.law.windows);
	r->law_adjustments = u64(&z->core.law.adjustments);
	r->law_increases = u64(&z->core.law.increases);
	r->law_decreases = u64(&z->core.law.decreases);
	memcpy(&breaker, &z->breaker, sizeof(breaker));
	r->breaker_ratio = agile_breaker_ratio(&breaker, mono);
	r->breaker_allowed = u64(&z->breaker_allowed);
	r->breaker_refused = u64(&z->breaker_refused);
	r->breaker_failures = u64(&z->breaker_failures);
	r->breaker_passes = u64(&z->breaker_passes);
	memcpy(&quota, &z->quota, sizeof(quota));
	{
		int64_t now = quota.align ? clock_ns(CLOCK_REALTIME) : mono;

		r->quota = quota.quota;
		r->quota_period_ns = quota.period_ns;
		r->quota_align = quota.align != 0;
		r->quota_left = agile_period_quota_left(&quota, now);
		r->quota_reset_ns = agile_period_quota_next(&quota, now);
	}
	r->quota_refused = u64(&z->quota_refused);
	r->quota_waited = u64(&z->quota_waited);
	{
		const struct agile_sliding_window *w =
			agile_state_window_const(z);

		r->window = w->quota;
		r->window_span_ns = w->window_ns;
		r->window_left = agile_sliding_window_left(w, mono);
		r->window_next_ns = agile_sliding_window_next(w, mono);
	}
	r->window_refused = u64(&z->window_refused);
	r->window_waited = u64(&z->window_waited);
	paused_until = __atomic_load_n(&z->paused_until_ns, __ATOMIC_ACQUIRE);
	r->paused_ns = paused_until > mono ? paused_until - mono : 0;
	r->http_pauses = u64(&z->http_pauses);
	r->http_cache_hits = u64(&z->http_cache_hits);
	r->http_excluded = u64(&z->http_excluded);
	r->http_5xx = u64(&z->http_5xx);
	r->http_ignored = u64(&z->http_ignored);
	r->connect_retries = u64(&z->connect_retries);
	r->connect_timeouts = u64(&z->connect_timeouts);
	r->keys_held = u64(&z->keys_held);
	r->key_refused = u64(&z->key_refused);
	r->key_idle = u64(&z->key_idle_evictions);
	r->key_capacity = u64(&z->key_capacity_evictions);
	r->accepted = u64(&z->accepted);
	r->shed = u64(&z->shed);
	r->shed_cpu = u64(&z->shed_cpu);
	r->clients_held = __atomic_load_n(&z->clients.count, __ATOMIC_ACQUIRE);
	r->clients_bound = __atomic_load_n(&z->clients.capacity,
	                                   __ATOMIC_ACQUIRE);
	r->client_allowed = u64(&z->clients.allowed);
	r->client_refused = u64(&z->clients.refused);
	r->client_idle = u64(&z->clients.idle_evictions);
	r->client_capacity = u64(&z->clients.capacity_evictions);
	agile_conc_stats(&z->core, &r->core);
}

static double seconds(int64_t ns)
{
	return (double)ns / AGILE_NS_PER_S;
}

#define ULL(x) ((unsigned long long)(x))

void agilestat_resilience_table(const struct agile_state_slot *s)
{
	char period[32], span[32];
	struct reading r;

	read_region(s, &r);
	if (r.features & AGILE_FEATURE_INBOUND) {
		printf("  listener: accepted %llu  shed %llu (cpu %llu)  "
		       "open %lld of %lld  ", ULL(r.accepted), ULL(r.shed),
		       ULL(r.shed_cpu), (long long)r.conc_held,
		       (long long)r.conc_limit);
		/* A windowed law keeps window means, not the controller's
		 * quantiles: name it rather than print zeros.  A tick
		 * without a sample shows "-", as the rate limiter's p50
		 * does, not a 0.0ms answer. */
		if (agile_conc_law(&s->resilience.core) != AGILE_LAW_AGILE)
			printf("law %s", r.conc_name);
		else if (r.core.p50_ns <= 0)
			printf("handling p50 - p99 -");
		else
			printf("handling p50 %.1fms p99 %.1fms",
			       r.core.p50_ns / 1e6, r.core.p99_ns / 1e6);
		if (agile_conc_law(&s->resilience.core) == AGILE_LAW_AGILE &&
		    r.core.baseline_ns > 0)
			printf(" baseline %.1fms", r.core.baseline_ns / 1e6);
		if (__atomic_load_n(&s->resilience.core.probe.active,
		                    __ATOMIC_ACQUIRE))
			printf(" (baseline probe: limit at its floor)");
		printf("  samples %llu\n", ULL(r.core.totals.samples));
		/* The SLO below what the server answers at any load: said
		 * loudly, since the guard now tolerates that share. */
		double own;
		__atomic_load(&s->resilience.core.loop.ctl.tail_own, &own,
		              __ATOMIC_ACQUIRE);
		if (own > 0 && own <= 1)
			printf("  SLO BELOW THE SERVER'S OWN TAIL: %.0f%% of its "
			       "answers past the tail target at half the limit "
			       "and at the full one; shedding cannot meet it, "
			       "the tail guard cuts only past that share\n",
			       own * 100);
	} else if (r.features & AGILE_FEATURE_CONCURRENCY)
		printf("  concurrency %s: open %lld of %lld  admitted %llu  "
		       "waited %llu  timeouts %llu  reclaimed %llu\n",
		       r.conc_name, (long long)r.conc_held,
		       (long long)r.conc_limit, ULL(r.conc_admitted),
		       ULL(r.conc_waited), ULL(r.conc_timeouts),
		       ULL(r.conc_reclaimed));
	if (r.features & AGILE_FEATURE_BREAKER)
		printf("  breaker sre: drop ratio %.3f  allowed %llu  refused "
		       "%llu  failures %llu  successes %llu\n", r.breaker_ratio,
		       ULL(r.breaker_allowed), ULL(r.breaker_refused),
		       ULL(r.breaker_failures), ULL(r.breaker_passes));
	/* Periods print as written (1d, 1.5s, 250ms), not rounded to whole
	 * seconds, which showed window=100/250ms as "per 0s". */
	agile_duration_format(r.quota_period_ns, period, sizeof(period));
	agile_duration_format(r.window_span_ns, span, sizeof(span));
	if (r.features & AGILE_FEATURE_QUOTA)
		printf("  quota %d per %s%s: %d left, resets in %.1fs  "
		       "refused %llu  waited %llu\n", (int)r.quota,
		       period, r.quota_align ? " aligned" : "",
		       (int)r.quota_left, seconds(r.quota_reset_ns),
		       ULL(r.quota_refused), ULL(r.quota_waited));
	if (r.features & AGILE_FEATURE_WINDOW)
		printf("  window %d per %s: %d left, room in %.1fs  refused "
		       "%llu  waited %llu\n", (int)r.window,
		       span, (int)r.window_left,
		       seconds(r.window_next_ns), ULL(r.window_refused),
		       ULL(r.window_waited));
	if (r.features & AGILE_FEATURE_HTTP)
		printf("  http: paused %.1fs  pauses %llu  cache hits %llu  "
		       "excluded %llu  ignored %llu  fast 5xx %llu\n",
		       seconds(r.paused_ns), ULL(r.http_pauses),
		       ULL(r.http_cache_hits), ULL(r.http_excluded),
		       ULL(r.http_ignored), ULL(r.http_5xx));
	if (r.features & AGILE_FEATURE_CONNECT)
		printf("  connect: retries %llu  timeouts %llu\n",
		       ULL(r.connect_retries), ULL(r.connect_timeouts));
	if (r.features & AGILE_FEATURE_KEYS)
		printf("  keys: %llu held  refused %llu  evicted idle %llu, "
		       "over the bound %llu\n", ULL(r.keys_held),
		       ULL(r.key_refused), ULL(r.key_idle), ULL(r.key_capacity));
	if (r.features & AGILE_FEATURE_CLIENTS)
		printf("  clients: %llu held of %llu  allowed %llu  refused %llu  "
		       "evicted idle %llu, over the bound %llu\n",
		       ULL(r.clients_held), ULL(r.clients_bound),
		       ULL(r.client_allowed), ULL(r.client_refused),
		       ULL(r.client_idle), ULL(r.client_capacity));
}

/* A duration as agile_duration_format writes it, in one of two buffers a
 * printf may use at once. */
static const char *duration(int64_t ns, char buf[32])
{
	agile_duration_format(ns, buf, 32);
	return buf;
}

/* The seed knobs a slot runs with, under the keys that set them: the
 * windowed law's options, the breaker's, the shedder's and retry='s
 * backoff, each as the state holds it (so as every process uses it). */
static void seed_knobs_config(const struct agile_state_slot *s,
                              uint32_t features)
{
	static const char *const jitters[] = {
		"rigid", "full", "equal", "decorrelated", "spread"
	};
	const struct agile_state_resilience *z = &s->resilience;
	char a[32], b[32], c[32];

	if ((features & AGILE_FEATURE_CONCURRENCY) &&
	    agile_conc_law(&z->core) != AGILE_LAW_AGILE) {
		const struct agile_law_options *o = &z->core.law.config;

		printf("  law %s: law_smoothing=%g law_increase=%g "
		       "law_decrease=%g law_utilization=%g law_tolerance=%g "
		       "law_warmup=%lld law_min_decay=%g law_jitter=%g "
		       "(window %s, target %s)\n", agile_law_name((int)o->kind),
		       o->smoothing, o->increase_rate, o->decrease_ratio,
		       o->utilization, o->tolerance,
		       (long long)o->warmup_samples, o->min_latency_decay,
		       o->jitter, duration(o->sample_window_ns, a),
		       duration(o->target_latency_ns, b));
	}
	if (features & AGILE_FEATURE_BREAKER) {
		const struct agile_sre *o = &z->breaker.sre;

		printf("  breaker sre: breaker_k=%g breaker_floor=%g "
		       "breaker_protection=%g breaker_probe=%s "
		       "breaker_window=%s breaker_buckets=%d\n", o->k, o->floor,
		       o->protection, duration(o->probe_ns, a),
		       duration(o->window_ns, b), (int)o->size);
	}
	if (features & AGILE_FEATURE_SHED_CPU) {
		const struct agile_shed *o = &z->shedder.shed;

		printf("  shed cpu:%d: shed_window=%s shed_buckets=%d "
		       "shed_latency=%s shed_cool=%s shed_beta=%g "
		       "shed_floor=%g\n", (int)o->cpu, duration(o->window_ns, a),
		       (int)o->size, duration(o->latency_ns, b),
		       duration(o->cool_ns, c), o->beta, o->floor);
	}
	if ((features & AGILE_FEATURE_CONNECT) && z->retry_backoff.attempts > 1) {
		const struct agile_backoff *o = &z->retry_backoff;
		uint32_t j = o->jitter < 5 ? o->jitter : AGILE_JITTER_RIGID;

		printf("  retry=%d: retry_base=%s retry_cap=%s retry_factor=%g "
		       "retry_jitter=%s", (int)o->attempts - 1,
		       duration(o->base_ns, a), duration(o->cap_ns, b),
		       o->factor, jitters[j]);
		if (j == AGILE_JITTER_SPREAD)
			printf(":%g", o->spread);
		printf("\n");
	}
}

void agilestat_resilience_config(const struct agile_state_slot *s)
{
	const struct agile_client_table *t = &s->resilience.clients;
	uint32_t features = __atomic_load_n(&s->resilience.features,
	                                    __ATOMIC_ACQUIRE);

	/* An outbound adaptive cap's bounds (concurrency_min= and so on). */
	if (!(features & AGILE_FEATURE_INBOUND) &&
	    __atomic_load_n(&s->resilience.conc_mode, __ATOMIC_ACQUIRE) ==
	    AGILE_CONC_ADAPTIVE) {
		const struct agile_resolved *c =
			agile_conc_config(&s->resilience.core);

		printf("  concurrency adaptive: min=%.0f initial=%.0f max=%.0f "
		       "law=%s\n", c->min_rate, c->initial_rate, c->max_rate,
		       agile__resilience_conc_name(&s->resilience));
	}
	/* The agile law's baseline probe, on every adaptive cap it runs. */
	if (((features & AGILE_FEATURE_INBOUND) ||
	     __atomic_load_n(&s->resilience.conc_mode, __ATOMIC_ACQUIRE) ==
	     AGILE_CONC_ADAPTIVE) &&
	    agile_conc_law(&s->resilience.core) == AGILE_LAW_AGILE) {
		const struct agile_baseline_probe *p =
			&s->resilience.core.probe;
		int64_t every = __atomic_load_n(&p->interval_ns,
		                                __ATOMIC_ACQUIRE);
		char a[32];

		if (every > 0)
			printf("  baseline_probe=%s: the limit held at its floor "
			       "for %d answers at the start and every %s; %llu "
			       "run\n", duration(every, a),
			       AGILE_BASELINE_PROBE_SAMPLES, a,
			       ULL(__atomic_load_n(&p->probes,
			                           __ATOMIC_ACQUIRE)));
		else
			printf("  baseline_probe=off\n");
	}
	seed_knobs_config(s, features);
	if (!(features & AGILE_FEATURE_CLIENTS))
		return;
	printf("  client_rate=%g,burst=%g clients=%u (idle after %.3fs)\n",
	       t->rate_per_s, t->burst, (unsigned)t->capacity,
	       seconds(t->idle_ns));
}

void agilestat_resilience_json(const struct agile_state_slot *s)
{
	struct reading r;

	read_region(s, &r);
	if (r.features & AGILE_FEATURE_CONCURRENCY)
		printf(",\"concurrency\":{\"mode\":\"%s\",\"limit\":%lld"
		       ",\"open\":%lld,\"admitted\":%llu,\"waited\":%llu"
		       ",\"timeouts\":%llu,\"reclaimed\":%llu"
		       ",\"windows\":%llu,\"adjustments\":%llu"
		       ",\"increases\":%llu,\"decreases\":%llu}", r.conc_name,
		       (long long)r.conc_limit, (long long)r.conc_held,
		       ULL(r.conc_admitted), ULL(r.conc_waited),
		       ULL(r.conc_timeouts), ULL(r.conc_reclaimed),
		       ULL(r.law_windows), ULL(r.law_adjustments),
		       ULL(r.law_increases), ULL(r.law_decreases));
	if (r.features & AGILE_FEATURE_BREAKER)
		printf(",\"breaker\":{\"drop_ratio\":%.4f,\"allowed\":%llu"
		       ",\"refused\":%llu,\"failures\":%llu,\"successes\":%llu}",
		       r.breaker_ratio, ULL(r.breaker_allowed),
		       ULL(r.breaker_refused), ULL(r.breaker_failures),
		       ULL(r.breaker_passes));
	if (r.features & AGILE_FEATURE_QUOTA)
		printf(",\"quota\":{\"limit\":%d,\"period_s\":%.3f,\"align\":%s"
		       ",\"left\":%d,\"reset_s\":%.3f,\"refused\":%llu"
		       ",\"waited\":%llu}", (int)r.quota,
		       seconds(r.quota_period_ns),
		       r.quota_align ? "true" : "false", (int)r.quota_left,
		       seconds(r.quota_reset_ns), ULL(r.quota_refused),
		       ULL(r.quota_waited));
	if (r.features & AGILE_FEATURE_WINDOW)
		printf(",\"window\":{\"limit\":%d,\"span_s\":%.3f,\"left\":%d"
		       ",\"room_in_s\":%.3f,\"refused\":%llu,\"waited\":%llu}",
		       (int)r.window, seconds(r.window_span_ns),
		       (int)r.window_left, seconds(r.window_next_ns),
		       ULL(r.window_refused), ULL(r.window_waited));
	if (r.features & AGILE_FEATURE_HTTP)
		printf(",\"http\":{\"paused_s\":%.3f,\"pauses\":%llu"
		       ",\"cache_hits\":%llu,\"excluded\":%llu,\"ignored\":%llu"
		       ",\"fast_5xx\":%llu}",
		       seconds(r.paused_ns), ULL(r.http_pauses),
		       ULL(r.http_cache_hits), ULL(r.http_excluded),
		       ULL(r.http_ignored), ULL(r.http_5xx));
	if (r.features & AGILE_FEATURE_CONNECT)
		printf(",\"connect\":{\"retries\":%llu,\"timeouts\":%llu}",
		       ULL(r.connect_retries), ULL(r.connect_timeouts));
	if (r.features & AGILE_FEATURE_KEYS)
		printf(",\"keys\":{\"held\":%llu,\"refused\":%llu"
		       ",\"idle_evictions\":%llu,\"capacity_evictions\":%llu}",
		       ULL(r.keys_held), ULL(r.key_refused), ULL(r.key_idle),
		       ULL(r.key_capacity));
	if (r.features & AGILE_FEATURE_INBOUND) {
		/* The share the guard tolerates as the server's own tail
		 * (the text view's "SLO BELOW THE SERVER'S OWN TAIL"); 0
		 * none, and a value no rule could set reads as none. */
		double own;

		__atomic_load(&s->resilience.core.loop.ctl.tail_own, &own,
		              __ATOMIC_ACQUIRE);
		if (!(own > 0 && own <= 1))
			own = 0;
		printf(",\"listener\":{\"accepted\":%llu,\"shed\":%llu"
		       ",\"shed_cpu\":%llu,\"limit\":%lld,\"open\":%lld"
		       ",\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"samples_total\":%llu"
		       ",\"action\":\"%s\",\"tail_own\":%.3f}", ULL(r.accepted),
		       ULL(r.shed), ULL(r.shed_cpu), (long long)r.conc_limit,
		       (long long)r.conc_held, r.core.p50_ns / 1e6,
		       r.core.p99_ns / 1e6, ULL(r.core.totals.samples),
		       agile_action_name(r.core.last_action), own);
	}
	if (r.features & AGILE_FEATURE_CLIENTS)
		printf(",\"clients\":{\"held\":%llu,\"bound\":%llu"
		       ",\"allowed\":%llu,\"refused\":%llu"
		       ",\"idle_evictions\":%llu,\"capacity_evictions\":%llu}",
		       ULL(r.clients_held), ULL(r.clients_bound),
		       ULL(r.client_allowed), ULL(r.client_refused),
		       ULL(r.client_idle), ULL(r.client_capacity));
}

/* One Prometheus family: the feature it belongs to and how to read it, a
 * gauge's value or a counter's count (the other NULL), so a counter is
 * written as the whole number it is. */
struct family {
	const char *name, *help;
	uint32_t feature;
	double (*value)(const struct reading *r);
	uint64_t (*count)(const struct reading *r);
};

#define GAUGE(fn, expr) \
	static double fn(const struct reading *r) { return (double)(expr); }
#define COUNTER(fn, expr) \
	static uint64_t fn(const struct reading *r) { return (expr); }
GAUGE(conc_limit, r->conc_limit)
GAUGE(conc_open, r->conc_held)
COUNTER(conc_waited, r->conc_waited)
COUNTER(conc_timeouts, r->conc_timeouts)
COUNTER(conc_reclaimed, r->conc_reclaimed)
GAUGE(breaker_ratio, r->breaker_ratio)
COUNTER(breaker_refused, r->breaker_refused)
GAUGE(quota_left, r->quota_left)
GAUGE(quota_reset, seconds(r->quota_reset_ns))
COUNTER(quota_refused, r->quota_refused)
GAUGE(window_left, r->window_left)
COUNTER(window_refused, r->window_refused)
GAUGE(http_paused, seconds(r->paused_ns))
COUNTER(http_pauses, r->http_pauses)
COUNTER(http_cache_hits, r->http_cache_hits)
COUNTER(connect_retries, r->connect_retries)
COUNTER(connect_timeouts, r->connect_timeouts)
GAUGE(keys_held, r->keys_held)
COUNTER(key_idle, r->key_idle)
COUNTER(key_capacity, r->key_capacity)
COUNTER(accepted, r->accepted)
COUNTER(shed, r->shed)
GAUGE(clients_held, r->clients_held)
COUNTER(client_refused, r->client_refused)
COUNTER(client_idle, r->client_idle)
COUNTER(client_capacity, r->client_capacity)
#undef COUNTER
#undef GAUGE

static const struct family families[] = {
	{ "agile_concurrency_limit",
	  "Connections allowed open at once.",
	  AGILE_FEATURE_CONCURRENCY, conc_limit, NULL },
	{ "agile_concurrency_open",
	  "Connections open now.", AGILE_FEATURE_CONCURRENCY, conc_open, NULL },
	{ "agile_concurrency_waits_total",
	  "Connects that waited for a permit.",
	  AGILE_FEATURE_CONCURRENCY, NULL, conc_waited },
	{ "agile_concurrency_timeouts_total",
	  "Connects that gave up waiting (ETIMEDOUT).",
	  AGILE_FEATURE_CONCURRENCY, NULL, conc_timeouts },
	{ "agile_concurrency_reclaimed_total",
	  "Permits taken back from processes that died.",
	  AGILE_FEATURE_CONCURRENCY, NULL, conc_reclaimed },
	{ "agile_breaker_drop_ratio",
	  "Share of calls the breaker turns away now.",
	  AGILE_FEATURE_BREAKER, breaker_ratio, NULL },
	{ "agile_breaker_refused_total",
	  "Connects the breaker refused.",
	  AGILE_FEATURE_BREAKER, NULL, breaker_refused },
	{ "agile_quota_remaining",
	  "Calls left in the quota's period.",
	  AGILE_FEATURE_QUOTA, quota_left, NULL },
	{ "agile_quota_reset_seconds",
	  "Seconds until the quota's period ends.",
	  AGILE_FEATURE_QUOTA, quota_reset, NULL },
	{ "agile_quota_refused_total",
	  "Connects refused over the quota.",
	  AGILE_FEATURE_QUOTA, NULL, quota_refused },
	{ "agile_window_remaining",
	  "Calls left in the sliding window.",
	  AGILE_FEATURE_WINDOW, window_left, NULL },
	{ "agile_window_refused_total",
	  "Connects refused over the sliding window.",
	  AGILE_FEATURE_WINDOW, NULL, window_refused },
	{ "agile_http_paused_seconds",
	  "Seconds the bucket stays paused by a Retry-After.",
	  AGILE_FEATURE_HTTP, http_paused, NULL },
	{ "agile_http_pauses_total",
	  "429/503 responses with a Retry-After.",
	  AGILE_FEATURE_HTTP, NULL, http_pauses },
	{ "agile_http_cache_hits_total",
	  "Responses kept out of the signal as cache hits.",
	  AGILE_FEATURE_HTTP, NULL, http_cache_hits },
	{ "agile_connect_retries_total",
	  "Connect retries after a refusal.",
	  AGILE_FEATURE_CONNECT, NULL, connect_retries },
	{ "agile_connect_timeouts_total",
	  "Connects that hit connect_timeout.",
	  AGILE_FEATURE_CONNECT, NULL, connect_timeouts },
	{ "agile_keys",
	  "Addresses with their own bucket.",
	  AGILE_FEATURE_KEYS, keys_held, NULL },
	{ "agile_key_idle_evictions_total",
	  "Addresses reclaimed after going idle.",
	  AGILE_FEATURE_KEYS, NULL, key_idle },
	{ "agile_key_capacity_evictions_total",
	  "Addresses evicted by the key bound.",
	  AGILE_FEATURE_KEYS, NULL, key_capacity },
	{ "agile_accepted_total",
	  "Connections a listener accepted.",
	  AGILE_FEATURE_INBOUND, NULL, accepted },
	{ "agile_shed_total",
	  "Connections a listener shed.", AGILE_FEATURE_INBOUND, NULL, shed },
	{ "agile_clients",
	  "Clients of a listener with their own bucket.",
	  AGILE_FEATURE_CLIENTS, clients_held, NULL },
	{ "agile_client_refused_total",
	  "Requests a listener refused over their client's rate.",
	  AGILE_FEATURE_CLIENTS, NULL, client_refused },
	{ "agile_client_idle_evictions_total",
	  "Clients reclaimed after going idle.",
	  AGILE_FEATURE_CLIENTS, NULL, client_idle },
	{ "agile_client_capacity_evictions_total",
	  "Clients evicted by the clients= bound.",
	  AGILE_FEATURE_CLIENTS, NULL, client_capacity },
};

void agilestat_resilience_prometheus(const struct agile_state_slot *const *s,
                                     int n,
                                     void (*labels)(int i, void *arg),
                                     void *arg)
{
	for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++) {
		bool header = false;

		for (int i = 0; i < n; i++) {
			struct reading r;

			read_region(s[i], &r);
			if (!(r.features & families[f].feature))
				continue;
			if (!header) {
				printf("# HELP %s %s\n# TYPE %s %s\n",
				       families[f].name, families[f].help,
				       families[f].name,
				       families[f].count != NULL ? "counter"
				                                 : "gauge");
				header = true;
			}
			printf("%s", families[f].name);
			labels(i, arg);
			if (families[f].count != NULL)
				agilestat_prometheus_counter(
					families[f].count(&r));
			else
				agilestat_prometheus_gauge(
					families[f].value(&r));
		}
	}
}
