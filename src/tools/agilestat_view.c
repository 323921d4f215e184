/*
 * agilestat_view.c - read each destination of a state file once, and print
 * the views in agilestat's formats (contract in agilestat_view.h).
 *
 * Every value is read with an atomic load from agilestat's private copy of
 * the file; every string from it is untrusted and printed escaped for its
 * format (agilestat_json.h).
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agilestat_fleet.h"
#include "agilestat_resilience.h"
#include "agilestat_view.h"

/* Ticks without a sample after which a destination is reported blind: its
 * rate is frozen, which looks exactly like a steady one. */
#define BLIND_TICKS 3

static int64_t unix_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * AGILE_NS_PER_S + ts.tv_nsec;
}

static int64_t monotonic_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * AGILE_NS_PER_S + ts.tv_nsec;
}

static uint64_t load_u64(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void read_view(const struct agile_state_slot *s,
                      struct agilestat_view *v)
{
	int64_t since_tick;

	struct agile_problem why;

	memset(v, 0, sizeof(*v));
	v->slot = s;
	agile_rate_stats(&s->limiter, &v->stats);
	v->config = agile_rate_config(&s->limiter);
	if (agile_rate_validate(&s->limiter, v->config, monotonic_now_ns(),
	                        &why) < 0) {
		v->damaged = true;
		snprintf(v->damage, sizeof(v->damage), "%s", why.message);
		memset(&v->stats, 0, sizeof(v->stats));
	}
	v->live = agile__state_slot_live_pids(s, v->pids, AGILE_STATE_PIDS);
	v->connects = load_u64(&s->connects);
	v->unreachable = load_u64(&s->unreachable);
	v->truncated = load_u64(&s->truncated);
	/* Blind: the controller ran ticks without samples, or a live process
	 * has not run a tick for a while (it makes no calls at all). */
	if (__builtin_sub_overflow(unix_now_ns(),
	                           __atomic_load_n(&s->last_tick_unix_ns,
	                                           __ATOMIC_ACQUIRE),
	                           &since_tick))
		since_tick = INT64_MAX; /* a garbage stamp: long ago */
	v->blind_for = v->stats.blind_ticks;
	if (v->live > 0 && v->config->tick_ns > 0 &&
	    (uint64_t)(since_tick / v->config->tick_ns) > v->blind_for)
		v->blind_for = (uint64_t)(since_tick / v->config->tick_ns);
	v->blind = v->blind_for >= BLIND_TICKS;
	/* A listener's samples go to its concurrency limiter (shown on its
	 * listener line), never to the rate limiter, which always looks
	 * blind. */
	if (__atomic_load_n(&s->resilience.features, __ATOMIC_ACQUIRE) &
	    AGILE_FEATURE_INBOUND)
		v->blind = false;
}

/* Escaped with agilestat_text. */
const struct agilestat_labels *
agilestat_labels(const struct agile_state_slot *s,
                 struct agilestat_labels *out)
{
	agilestat_text(s->name, out->name, sizeof(out->name));
	agilestat_text(s->dest, out->dest, sizeof(out->dest));
	return out;
}

static int compare_views(const void *a, const void *b)
{
	const struct agilestat_view *x = a, *y = b;

	return strcmp(x->slot->name, y->slot->name);
}

int agilestat_read_views(const struct agile_state_map *m,
                         struct agilestat_view *out)
{
	int n = 0;

	for (unsigned int i = 0; i < AGILE_STATE_SLOTS; i++) {
		const struct agile_state_slot *s = agile_state_slot(m, i);

		if (load_u64(&s->state) == AGILE_SLOT_READY)
			read_view(s, &out[n++]);
	}
	qsort(out, (size_t)n, sizeof(*out), compare_views);
	return n;
}

static double ms(int64_t ns)
{
	return (double)ns / AGILE_NS_PER_MS;
}

static void print_ms(const char *label, double ns)
{
	if (ns <= 0)
		printf("  %s -", label);
	else
		printf("  %s %.1fms", label, ns / AGILE_NS_PER_MS);
}

/* The tail guard as configured: the ratio guard's smoothed share and the
 * threshold it is compared with, or the quantile guard's target, or off.
 * Only the ratio guard keeps a share; the others showed "0.000 / 0.000". */
static void print_tail(const struct agile_stats *st,
                       const struct agile_resolved *c)
{
	char target[32];
	double target_ns;

	if (c->slo_ns <= 0) {
		printf("tail guard off (no slo)\n");
		return;
	}
	if (c->tail_tolerance > 0) {
		printf("tail %.3f / %.3f\n", st->tail_ratio, st->tail_threshold);
		return;
	}
	/* A file's values are not trusted: saturate rather than overflow. */
	target_ns = (double)c->slo_ns * c->tail_factor;
	if (!(target_ns < 9.2e18))
		target_ns = 9.2e18;
	agile_duration_format((int64_t)target_ns, target, sizeof(target));
	printf("tail guard p99 > %s\n", target);
}

/* A rate for the table: one decimal from 1/s up, as always; below that
 * three significant digits, so one request every 10 s reads 0.1/s and one
 * a minute 0.0167/s rather than 0.0/s. */
static const char *per_second(char buf[32], double rate)
{
	if (rate > 0 && rate < 1)
		snprintf(buf, 32, "%.3g", rate);
	else
		snprintf(buf, 32, "%.1f", rate);
	return buf;
}

/* The rate limiter's lines of the table: rate, latency, samples, counts. */
static void print_rate(const struct agilestat_view *v)
{
	const struct agile_stats *st = &v->stats;
	const struct agile_resolved *c = v->config;
	char rate[32], used[32], floor[48], max[48];

	agile_rate_format(c->floor_rate, floor, sizeof floor);
	agile_rate_format(c->max_rate, max, sizeof max);
	printf("  rate %s/s (floor %s, max %s)  used %s/s  "
	       "last step %s%s%s\n", per_second(rate, st->rate), floor, max,
	       per_second(used, st->used), agile_action_name(st->last_action),
	       st->cold_start ? "  cold start" : "",
	       st->probe_mode ? "  probing" : "");
	print_ms("p50", (double)st->p50_ns);
	print_ms("p99", (double)st->p99_ns);
	print_ms("fast", (double)st->fast_ns);
	print_ms("baseline", (double)st->baseline_ns);
	printf("\n  samples %llu last tick, %llu total  ",
	       (unsigned long long)st->samples,
	       (unsigned long long)st->totals.samples);
	print_tail(st, c);
	printf("  connects %llu  unreachable %llu  truncated %llu\n",
	       (unsigned long long)v->connects,
	       (unsigned long long)v->unreachable,
	       (unsigned long long)v->truncated);
}

/* Views without a live process: the slots a new name may reclaim. */
static int idle_views(const struct agilestat_view *v, int n)
{
	int idle = 0;

	for (int i = 0; i < n; i++)
		idle += v[i].live == 0;
	return idle;
}

/* Whether a new destination still gets a slot, once every slot is taken. */
static void print_full(const struct agilestat_view *v, int n)
{
	int idle = idle_views(v, n);

	if (n < AGILE_STATE_SLOTS)
		return;
	if (idle > 0)
		printf("\nstate file full: %d of %d slots; a new destination "
		       "reclaims the one of the %d without a live process "
		       "that ticked longest ago\n", n, AGILE_STATE_SLOTS,
		       idle);
	else
		printf("\nSTATE FILE FULL: a live process uses each of its %d "
		       "slots; a new destination gets a limiter of each "
		       "process's own, not a shared budget\n",
		       AGILE_STATE_SLOTS);
}

void agilestat_print_table(const struct agilestat_view *v, int n)
{
	if (n == 0) {
		printf("no destination has been used yet\n");
		return;
	}
	for (int i = 0; i < n; i++, v++) {
		/* A listener's limit and samples are its concurrency
		 * limiter's, on its listener line; the rate limiter's lines
		 * would show one it never uses (no step, no sample). */
		bool listener = __atomic_load_n(&v->slot->resilience.features,
		                                __ATOMIC_ACQUIRE) &
		                AGILE_FEATURE_INBOUND;
		struct agilestat_labels l;

		agilestat_labels(v->slot, &l);
		printf("%s  %s  %s  live processes %d", l.name, l.dest,
		       listener ? "listener"
		       : v->slot->pace == 1 ? "pace=connect" : "pace=request",
		       v->live);
		for (int k = 0; k < v->live && k < 4; k++)
			printf("%s%d", k == 0 ? " (" : " ", (int)v->pids[k]);
		printf("%s\n", v->live > 4 ? " ...)" : v->live > 0 ? ")" : "");
		if (!listener)
			print_rate(v);
		/* The resilience features it configured, if any. */
		agilestat_resilience_table(v->slot);
		/* Its fleet budget on Redis, if it has one. */
		agilestat_fleet_table(v->slot);
		if (v->blind)
			printf("  BLIND: no samples for %llu ticks; the rate is "
			       "frozen, not steady\n",
			       (unsigned long long)v->blind_for);
		if (v->damaged)
			printf("  DAMAGED: %s The next process to use it "
			       "re-initialises it.\n", v->damage);
		if (i + 1 < n)
			printf("\n");
	}
	print_full(v - n, n);
}

/* The preload's messages a program's stderr could not take (state.h),
 * copied out of the shared file with a terminating NUL whatever it holds. */
static uint64_t unsaid(const struct agile_state_map *m, char *last,
                       size_t size)
{
	const struct agile_state_header *h;
	size_t n;

	if (m == NULL) {
		last[0] = '\0';
		return 0;
	}
	h = m->header;
	n = sizeof(h->unsaid_last) < size ? sizeof(h->unsaid_last) : size;

	memcpy(last, h->unsaid_last, n);
	last[n - 1] = '\0';
	return __atomic_load_n(&h->unsaid, __ATOMIC_ACQUIRE);
}

void agilestat_print_unsaid_table(const struct agile_state_map *m)
{
	char last[sizeof(m->header->unsaid_last)];
	char shown[AGILESTAT_TEXT_SIZE(sizeof(m->header->unsaid_last))];
	uint64_t count = unsaid(m, last, sizeof(last));

	if (count == 0)
		return;
	/* No control byte reaches the terminal, whoever wrote the file. */
	agilestat_text(last, shown, sizeof(shown));
	printf("\n%llu preload message%s could not be written to a program's "
	       "stderr (a socket, or a closed pipe); the last: %s\n",
	       (unsigned long long)count, count == 1 ? "" : "s", shown);
}

void agilestat_print_json(const struct agilestat_view *v, int n,
                          const struct agile_state_map *m)
{
	char last[sizeof(m->header->unsaid_last)];
	uint64_t count = unsaid(m, last, sizeof(last));

	printf("{\"destinations\":[");
	for (int i = 0; i < n; i++, v++) {
		const struct agile_stats *st = &v->stats;

		printf("%s{\"name\":", i ? "," : "");
		agilestat_json_string(v->slot->name);
		printf(",\"dest\":");
		agilestat_json_string(v->slot->dest);
		printf(",\"pace\":\"%s\"", v->slot->pace == 1 ? "connect"
		                                              : "request");
		/* Three decimals, or six significant digits below 1/s so a
		 * rate of one request an hour is not 0.000. */
		printf(st->rate > 0 && st->rate < 1 ? ",\"rate\":%.6g"
		                                    : ",\"rate\":%.3f", st->rate);
		printf(st->used > 0 && st->used < 1 ? ",\"used\":%.6g"
		                                    : ",\"used\":%.3f", st->used);
		printf(",\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"fast_ms\":%.3f"
		       ",\"baseline_ms\":%.3f", ms(st->p50_ns), ms(st->p99_ns),
		       ms(st->fast_ns), ms(st->baseline_ns));
		printf(",\"samples\":%llu,\"samples_total\":%llu"
		       ",\"grants_total\":%llu",
		       (unsigned long long)st->samples,
		       (unsigned long long)st->totals.samples,
		       (unsigned long long)st->totals.grants);
		printf(",\"connects\":%llu,\"unreachable\":%llu"
		       ",\"truncated\":%llu",
		       (unsigned long long)v->connects,
		       (unsigned long long)v->unreachable,
		       (unsigned long long)v->truncated);
		printf(",\"tail_ratio\":%.4f,\"tail_threshold\":%.4f",
		       st->tail_ratio, st->tail_threshold);
		printf(",\"cold_start\":%s,\"probe_mode\":%s,\"blind\":%s"
		       ",\"blind_ticks\":%llu,\"ticks\":%llu,\"action\":\"%s\"",
		       st->cold_start ? "true" : "false",
		       st->probe_mode ? "true" : "false",
		       v->blind ? "true" : "false",
		       (unsigned long long)v->blind_for,
		       (unsigned long long)st->ticks,
		       agile_action_name(st->last_action));
		char max[48], floor[48], probe[48];

		agile_rate_format(v->config->max_rate, max, sizeof max);
		agile_rate_format(v->config->floor_rate, floor, sizeof floor);
		agile_rate_format(v->config->probe_rate, probe, sizeof probe);
		printf(",\"max\":%s,\"floor\":%s,\"probe\":%s"
		       ",\"slo_ms\":%.3f", max, floor, probe,
		       ms(v->config->slo_ns));
		printf(",\"live_processes\":%d,\"pids\":[", v->live);
		for (int k = 0; k < v->live && k < AGILE_STATE_PIDS; k++)
			printf("%s%d", k ? "," : "", (int)v->pids[k]);
		printf("]");
		if (v->damaged) {
			printf(",\"damaged\":");
			agilestat_json_string(v->damage);
		}
		agilestat_resilience_json(v->slot);
		agilestat_fleet_json(v->slot);
		printf("}");
	}
	printf("],\"unsaid\":%llu", (unsigned long long)count);
	if (count > 0) {
		printf(",\"unsaid_last\":");
		agilestat_json_string(last);
	}
	printf(",\"slots\":%d,\"slots_used\":%d,\"slots_idle\":%d}\n",
	       AGILE_STATE_SLOTS, n, idle_views(v - n, n));
}

static void prom_labels(const struct agilestat_view *v)
{
	const char *fields[2] = { v->slot->name, v->slot->dest };
	const char *keys[2] = { "name", "dest" };

	putchar('{');
	for (int f = 0; f < 2; f++) {
		printf("%s%s=", f ? "," : "", keys[f]);
		agilestat_prometheus_label(fields[f]);
	}
	putchar('}');
}

static void prom_labels_of(int i, void *arg)
{
	prom_labels(&((const struct agilestat_view *)arg)[i]);
}

void agilestat_print_prometheus(const struct agilestat_view *v, int n)
{
	const struct agile_state_slot *slots[AGILE_STATE_SLOTS];

	static const struct {
		const char *name, *type, *help;
	} metric[] = {
		{ "agile_rate", "gauge", "Current target rate, requests per second." },
		{ "agile_used", "gauge", "Requests per second granted during the last tick." },
		{ "agile_max_rate", "gauge", "Configured ceiling, requests per second." },
		{ "agile_p50_seconds", "gauge", "Median round trip of the last tick." },
		{ "agile_p99_seconds", "gauge", "99th percentile round trip of the last tick." },
		{ "agile_baseline_seconds", "gauge", "Slow EWMA baseline of the round trip." },
		{ "agile_samples", "gauge", "Round-trip samples the last tick saw." },
		{ "agile_samples_total", "counter", "Round-trip samples since the destination was created." },
		{ "agile_connects_total", "counter", "Connections paced." },
		{ "agile_unreachable_total", "counter", "Connections refused or unreachable, and failed lookups." },
		{ "agile_truncated_total", "counter", "Requests cut short by close, shutdown or end of file." },
		{ "agile_cold_start", "gauge", "1 until the first back-off or saturation." },
		{ "agile_blind", "gauge", "1 when no samples arrived for several ticks." },
		{ "agile_live_processes", "gauge", "Processes attached to the destination that are alive." },
	};

	for (size_t m = 0; m < sizeof(metric) / sizeof(metric[0]); m++) {
		printf("# HELP %s %s\n# TYPE %s %s\n", metric[m].name,
		       metric[m].help, metric[m].name, metric[m].type);
		for (int i = 0; i < n; i++) {
			const struct agile_stats *st = &v[i].stats;
			double value = 0;
			uint64_t count = 0;

			switch (m) {
			case 0: value = st->rate; break;
			case 1: value = st->used; break;
			case 2: value = v[i].config->max_rate; break;
			case 3: value = (double)st->p50_ns / 1e9; break;
			case 4: value = (double)st->p99_ns / 1e9; break;
			case 5: value = (double)st->baseline_ns / 1e9; break;
			case 6: value = (double)st->samples; break;
			case 7: count = st->totals.samples; break;
			case 8: count = v[i].connects; break;
			case 9: count = v[i].unreachable; break;
			case 10: count = v[i].truncated; break;
			case 11: value = st->cold_start; break;
			case 12: value = v[i].blind; break;
			case 13: value = v[i].live; break;
			}
			printf("%s", metric[m].name);
			prom_labels(&v[i]);
			if (strcmp(metric[m].type, "counter") == 0)
				agilestat_prometheus_counter(count);
			else
				agilestat_prometheus_gauge(value);
		}
	}
	for (int i = 0; i < n; i++)
		slots[i] = v[i].slot;
	agilestat_resilience_prometheus(slots, n, prom_labels_of, (void *)v);
	agilestat_fleet_prometheus(slots, n, prom_labels_of, (void *)v);
}

/* The ring's entries oldest first, at most `last`. */
int agilestat_ring_entries(const struct agile_state_slot *s, unsigned int last,
                           struct agile_state_tick *out)
{
	uint64_t count = load_u64(&s->ring_count);
	uint64_t n = count < AGILE_STATE_RING ? count : AGILE_STATE_RING;

	if (n > last)
		n = last;
	for (uint64_t k = 0; k < n; k++)
		out[k] = s->ring[(count - n + k) % AGILE_STATE_RING];
	return (int)n;
}

void agilestat_print_history(const struct agilestat_view *v, int n)
{
	struct agile_state_tick ticks[AGILE_STATE_RING];

	printf("name,unix_time,rate,used,p50_ms,p99_ms,samples,unreachable,"
	       "truncated\n");
	for (int i = 0; i < n; i++) {
		int count = agilestat_ring_entries(v[i].slot, AGILE_STATE_RING, ticks);

		for (int k = 0; k < count; k++) {
			agilestat_csv_field(v[i].slot->name);
			printf(",%.3f,%.3f,%.3f,%.3f,%.3f,%llu,%llu,%llu\n",
			       (double)ticks[k].unix_ns / 1e9,
			       ticks[k].rate, ticks[k].used,
			       ms(ticks[k].p50_ns), ms(ticks[k].p99_ns),
			       (unsigned long long)ticks[k].samples,
			       (unsigned long long)ticks[k].unreachable,
			       (unsigned long long)ticks[k].truncated);
		}
	}
}

void agilestat_print_config(const struct agilestat_view *v, int n)
{
	char buf[4096];

	for (int i = 0; i < n; i++) {
		struct agilestat_labels l;

		agilestat_labels(v[i].slot, &l);
		agile_resolved_format(v[i].config, buf, sizeof(buf));
		printf("%s%s  %s  pace=%s\n", i ? "\n" : "", l.name, l.dest,
		       v[i].slot->pace == 1 ? "connect" : "request");
		for (char *line = strtok(buf, "\n"); line != NULL;
		     line = strtok(NULL, "\n"))
			printf("  %s\n", line);
		agilestat_resilience_config(v[i].slot);
	}
}
