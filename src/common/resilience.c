/*
 * resilience.c - the parts of resilience.h that both the preload and
 * agilestat need: initialising a slot's region from a rule's settings, the
 * configuration hash, and reading the permit table.  Pure: no clock, no
 * I/O, no globals.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "resilience.h"

bool agile__resilience_any(const struct agile_resilience_config *c)
{
	return c->conc_mode != AGILE_CONC_OFF || c->breaker || c->quota > 0 ||
	       c->window > 0 || c->proto == AGILE_PROTO_HTTP ||
	       c->connect_timeout_ns > 0 ||
	       c->retry > 0 || c->key_rate > 0 || c->inbound;
}

uint64_t agile__resilience_hash(const struct agile_resilience_config *c,
                               uint64_t h)
{
	const unsigned char *p = (const unsigned char *)c;

	/* The struct is memset before parsing and has explicit padding, so
	 * its bytes are a function of the settings alone. */
	for (size_t i = 0; i < sizeof(*c); i++)
		h = (h ^ p[i]) * UINT64_C(1099511628211);
	return h;
}

/* The core concurrency limiter's configuration, law included.  A
 * listener's rule is a concurrency configuration already (max= is
 * connections at once); an outbound adaptive cap keeps the rule's latency
 * settings (its slo is Vegas's target, its tick the laws' window) but takes
 * adaptx's bounds (1, 10 and 1000), or concurrency_min=, _initial= and
 * _max=, since the rule's rates are requests per second. */
static void core_config(const struct agile_resilience_config *c,
                        const struct agile_config *config,
                        struct agile_config *out)
{
	*out = *config;
	out->law = (enum agile_law_kind)c->conc_law;
	/* The baseline probe by default only where the cap counts requests
	 * (a listener with proto=http): a connection held for as long as it
	 * is open (a pool's, a connection listener's) would keep the cap at
	 * its floor while the probe waits for answers, and the connections
	 * behind it wait, or are shed, meanwhile. */
	if (out->baseline_probe_ns == 0 &&
	    !(c->inbound && c->proto == AGILE_PROTO_HTTP))
		out->baseline_probe_ns = AGILE_BASELINE_PROBE_OFF;
	if (c->inbound) {
		if (out->max_rate > AGILE_STATE_PERMITS)
			out->max_rate = AGILE_STATE_PERMITS;
		return;
	}
	out->max_rate = c->conc_max > 0 ? c->conc_max
	                                : AGILE_LAW_DEFAULT_MAX_LIMIT;
	out->initial_rate = c->conc_initial > 0 ? c->conc_initial
	                                        : AGILE_LAW_DEFAULT_INITIAL_LIMIT;
	out->min_rate = c->conc_min > 0 ? c->conc_min
	                                : AGILE_LAW_DEFAULT_MIN_LIMIT;
	out->floor_rate = out->min_rate;
	out->probe_rate = out->min_rate;
}

void agile__resilience_law(const struct agile_resilience_config *c,
                          struct agile_law_options *out)
{
	uint32_t given = c->law_given;

	agile_law_options_init(out);
	if (given & AGILE_LAW_GIVEN_SMOOTHING)
		out->smoothing = c->law_smoothing;
	if (given & AGILE_LAW_GIVEN_INCREASE)
		out->increase_rate = c->law_increase_rate;
	if (given & AGILE_LAW_GIVEN_DECREASE)
		out->decrease_ratio = c->law_decrease_ratio;
	if (given & AGILE_LAW_GIVEN_UTILIZATION)
		out->utilization = c->law_utilization;
	if (given & AGILE_LAW_GIVEN_TOLERANCE)
		out->tolerance = c->law_tolerance;
	if (given & AGILE_LAW_GIVEN_MIN_DECAY)
		out->min_latency_decay = c->law_min_latency_decay;
	if (given & AGILE_LAW_GIVEN_JITTER)
		out->jitter = c->law_jitter;
	if (given & AGILE_LAW_GIVEN_WARMUP)
		out->warmup_samples = c->law_warmup_samples;
}

void agile__resilience_sre(const struct agile_resilience_config *c,
                          struct agile_sre *out)
{
	struct agile_sre sre = AGILE_SRE_PRESET;

	if (c->breaker_k > 0)
		sre.k = c->breaker_k;
	if (c->breaker_floor > 0)
		sre.floor = c->breaker_floor;
	/* The parser refuses a floor above breaker_k; the preset's 1.1
	 * under a k given lower follows it down. */
	if (sre.floor > sre.k)
		sre.floor = sre.k;
	if (c->breaker_protection >= 0)
		sre.protection = c->breaker_protection;
	if (c->breaker_window_ns > 0)
		sre.window_ns = c->breaker_window_ns;
	if (c->breaker_probe_ns > 0)
		sre.probe_ns = c->breaker_probe_ns;
	if (c->breaker_buckets > 0)
		sre.size = c->breaker_buckets;
	*out = sre;
}

void agile__resilience_shed(const struct agile_resilience_config *c,
                           struct agile_shed *out)
{
	struct agile_shed shed = AGILE_SHED_PRESET;

	if (c->shed_cpu_permille > 0 && c->shed_cpu_permille < 1000)
		shed.cpu = c->shed_cpu_permille;
	if (c->shed_window_ns > 0)
		shed.window_ns = c->shed_window_ns;
	if (c->shed_latency_ns > 0)
		shed.latency_ns = c->shed_latency_ns;
	if (c->shed_cool_ns > 0)
		shed.cool_ns = c->shed_cool_ns;
	if (c->knobs_given & AGILE_KNOB_SHED_BETA)
		shed.beta = c->shed_beta;
	if (c->knobs_given & AGILE_KNOB_SHED_FLOOR)
		shed.floor = c->shed_floor;
	if (c->shed_buckets > 0)
		shed.size = c->shed_buckets;
	*out = shed;
}

void agile__resilience_backoff(const struct agile_resilience_config *c,
                              struct agile_backoff *out)
{
	struct agile_backoff b = AGILE_BACKOFF_PRESET;

	b.attempts = c->retry + 1;
	if (c->retry_base_ns > 0)
		b.base_ns = c->retry_base_ns;
	if (c->retry_cap_ns > 0)
		b.cap_ns = c->retry_cap_ns;
	if (c->retry_factor > 0)
		b.factor = c->retry_factor;
	if (c->retry_jitter > 0)
		b.jitter = c->retry_jitter - 1;
	if (c->knobs_given & AGILE_KNOB_RETRY_SPREAD)
		b.spread = c->retry_spread;
	*out = b;
}

static uint32_t features_of(const struct agile_resilience_config *c)
{
	uint32_t f = 0;

	if (c->conc_mode != AGILE_CONC_OFF || c->inbound)
		f |= AGILE_FEATURE_CONCURRENCY;
	if (c->breaker)
		f |= AGILE_FEATURE_BREAKER;
	if (c->quota > 0)
		f |= AGILE_FEATURE_QUOTA;
	if (c->window > 0)
		f |= AGILE_FEATURE_WINDOW;
	if (c->proto == AGILE_PROTO_HTTP)
		f |= AGILE_FEATURE_HTTP;
	if (c->connect_timeout_ns > 0 || c->retry > 0)
		f |= AGILE_FEATURE_CONNECT;
	if (c->key_rate > 0)
		f |= AGILE_FEATURE_KEYS;
	if (c->inbound)
		f |= AGILE_FEATURE_INBOUND;
	if (c->shed_cpu)
		f |= AGILE_FEATURE_SHED_CPU;
	if (c->client_rate > 0)
		f |= AGILE_FEATURE_CLIENTS;
	return f;
}

int agile__resilience_state_init(struct agile_state_resilience *z,
                                const struct agile_resilience_config *c,
                                const struct agile_config *config,
                                int64_t now_ns)
{
	struct agile_config core;
	struct agile_law_options law;
	struct agile_sre sre;
	struct agile_shed shed;
	int rc;

	memset(z, 0, sizeof(*z));
	z->features = features_of(c);
	z->conc_mode = c->inbound ? AGILE_CONC_ADAPTIVE : c->conc_mode;
	z->conc_law = c->conc_law;

	core_config(c, config, &core);
	agile__resilience_law(c, &law);
	if (agile_conc_init_law(&z->core, &core, &law, now_ns) < 0) {
		/* Only a listener's own settings can be rejected here, and the
		 * parser has reported them; a cap at max keeps its promise. */
		struct agile_config fallback = { .max_rate = core.max_rate,
		                                 .law = core.law };

		rc = agile_conc_init_law(&z->core, &fallback, &law, now_ns);
		if (rc < 0)
			return rc;
	}
	if (c->conc_mode == AGILE_CONC_FIXED)
		z->conc_limit = c->conc_limit;
	else if (z->conc_mode == AGILE_CONC_ADAPTIVE)
		z->conc_limit = (int64_t)agile_conc_limit(&z->core);

	agile__resilience_backoff(c, &z->retry_backoff);
	agile__resilience_sre(c, &sre);
	rc = agile_breaker_init(&z->breaker, &sre, now_ns);
	if (rc < 0)
		return rc;
	agile__resilience_shed(c, &shed);
	rc = agile_shedder_init(&z->shedder, &shed, now_ns);
	if (rc < 0)
		return rc;
	if (c->client_rate > 0) {
		/* Its hash key is drawn by the first process that uses it
		 * (clients_hook.c): the core draws nothing. */
		static const uint64_t undrawn[2] = { 0, 0 };

		rc = agile_clients_init(&z->clients, c->client_rate,
		                        c->client_burst, c->clients > 0
		                        ? c->clients : AGILE_CLIENTS_MAX,
		                        undrawn);
		if (rc < 0)
			return rc;
	}
	rc = agile_period_quota_init(&z->quota, c->quota, c->quota_period_ns > 0
	                             ? c->quota_period_ns : 1, c->quota_align);
	if (rc < 0)
		return rc;
	return agile_sliding_window_init(agile_state_window(z), c->window,
	                                 c->window_span_ns > 0
	                                 ? c->window_span_ns : 1);
}

static bool rolling_valid(const struct agile_rolling *w)
{
	return w->size >= 1 && w->size <= AGILE_ROLLING_MAX_BUCKETS &&
	       w->head >= 0 && w->head < w->size && w->width_ns >= 1;
}

bool agile__resilience_state_valid(const struct agile_state_resilience *z)
{
	const struct agile_sliding_window *w = agile_state_window_const(z);
	int32_t room = w->quota > 0 ? w->quota : 1;

	return z->conc_mode <= AGILE_CONC_ADAPTIVE &&
	       rolling_valid(&z->breaker.window) &&
	       rolling_valid(&z->shedder.window) &&
	       z->quota.period_ns >= 1 && z->quota.count >= 0 &&
	       z->quota.count <= z->quota.quota &&
	       w->window_ns >= 1 && w->quota >= 0 &&
	       w->quota <= AGILE_STATE_WINDOW_MAX && w->count >= 0 &&
	       w->count <= w->quota && w->oldest >= 0 && w->oldest < room;
}

int64_t agile__resilience_permits_held(const struct agile_state_resilience *z)
{
	uint32_t high = __atomic_load_n(&z->permit_high, __ATOMIC_ACQUIRE);
	int64_t held = 0;

	if (high > AGILE_STATE_PERMITS)
		high = AGILE_STATE_PERMITS;
	for (uint32_t i = 0; i < high; i++)
		if (__atomic_load_n(&z->permit_owner[i], __ATOMIC_RELAXED) != 0)
			held++;
	return held;
}

const char *agile__resilience_conc_name(const struct agile_state_resilience *z)
{
	switch (z->conc_mode) {
	case AGILE_CONC_FIXED:
		return "fixed";
	case AGILE_CONC_ADAPTIVE:
		return agile_law_name((int)z->conc_law);
	default:
		return "off";
	}
}
