/*
 * agilestat - show what libagilepreload.so is doing: one record per
 * configured destination, read from the shared state file.
 *
 *   agilestat [-s PATH] [--json | --prometheus | --history | --config]
 *   agilestat [-s PATH] --watch SECONDS
 *   agilestat [-s PATH] --serve ADDRESS    (agilestat_serve.c)
 *
 * The file is read into a private copy with pread and never modified, so
 * agilestat can run at any moment next to the programs that write it, and a
 * file truncated under it (any process of the user's can) is a rejection,
 * not a SIGBUS; values of one destination may come from two neighbouring
 * instants.  Every string in the file is untrusted and printed escaped
 * (agilestat_json.h).
 */
#include "config.h"

#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agile.h"
#include "agilestat_resilience.h"
#include "agilestat_fleet.h"
#include "agilestat_json.h"
#include "agilestat_serve.h"
#include "state.h"

/* Ticks without a sample after which a destination is reported blind: its
 * rate is frozen, which looks exactly like a steady one. */
#define BLIND_TICKS 3

enum output { OUT_TABLE, OUT_JSON, OUT_PROMETHEUS, OUT_HISTORY, OUT_CONFIG };

/* Everything printed about one destination, read once. */
struct view {
	const struct agile_state_slot *slot;
	struct agile_stats stats;
	const struct agile_resolved *config;
	int32_t pids[AGILE_STATE_PIDS];
	int live;
	bool blind;
	uint64_t blind_for; /* ticks without a sample, or without any step */
	/* The limiter fails the core's check (agile_rate_validate): another
	 * process left garbage there, which the next process to take a
	 * grant repairs.  Its statistics are shown as 0, not as garbage. */
	bool damaged;
	char damage[sizeof(((struct agile_problem *)0)->message)];
	uint64_t connects, unreachable, truncated;
};

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

static void read_view(const struct agile_state_slot *s, struct view *v)
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
	v->live = agile_state_slot_live_pids(s, v->pids, AGILE_STATE_PIDS);
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

/* A slot's name and destination as the terminal may be shown them
 * (agilestat_text): the file is anyone's of this user's to write. */
struct labels {
	char name[AGILESTAT_TEXT_SIZE(AGILE_STATE_NAME_MAX)];
	char dest[AGILESTAT_TEXT_SIZE(AGILE_STATE_DEST_MAX)];
};

static const struct labels *labels_of(const struct agile_state_slot *s,
                                      struct labels *out)
{
	agilestat_text(s->name, out->name, sizeof(out->name));
	agilestat_text(s->dest, out->dest, sizeof(out->dest));
	return out;
}

static int compare_views(const void *a, const void *b)
{
	const struct view *x = a, *y = b;

	return strcmp(x->slot->name, y->slot->name);
}

/* The READY slots of the file, sorted by name.  Returns their number. */
static int read_views(const struct agile_state_map *m, struct view *out)
{
	int n = 0;

	for (unsigned int i = 0; i < m->header->slot_count; i++) {
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
static void print_rate(const struct view *v)
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

static void print_table(const struct view *v, int n)
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
		struct labels l;

		labels_of(v->slot, &l);
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

static void print_unsaid_table(const struct agile_state_map *m)
{
	char last[sizeof(m->header->unsaid_last)];
	uint64_t count = unsaid(m, last, sizeof(last));

	if (count == 0)
		return;
	/* No control byte reaches the terminal, whoever wrote the file. */
	for (char *p = last; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	printf("\n%llu preload message%s could not be written to a program's "
	       "stderr (a socket, or a closed pipe); the last: %s\n",
	       (unsigned long long)count, count == 1 ? "" : "s", last);
}

static void print_json(const struct view *v, int n,
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
	printf("}\n");
}

static void prom_labels(const struct view *v)
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
	prom_labels(&((const struct view *)arg)[i]);
}

static void print_prometheus(const struct view *v, int n)
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

/* The ring's entries oldest first: calls fn for each, at most `last`. */
static int ring_entries(const struct agile_state_slot *s, unsigned int last,
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

static void print_history(const struct view *v, int n)
{
	struct agile_state_tick ticks[AGILE_STATE_RING];

	printf("name,unix_time,rate,used,p50_ms,p99_ms,samples,unreachable,"
	       "truncated\n");
	for (int i = 0; i < n; i++) {
		int count = ring_entries(v[i].slot, AGILE_STATE_RING, ticks);

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

static void print_config(const struct view *v, int n)
{
	char buf[4096];

	for (int i = 0; i < n; i++) {
		struct labels l;

		labels_of(v[i].slot, &l);
		agile_resolved_format(v[i].config, buf, sizeof(buf));
		printf("%s%s  %s  pace=%s\n", i ? "\n" : "", l.name, l.dest,
		       v[i].slot->pace == 1 ? "connect" : "request");
		for (char *line = strtok(buf, "\n"); line != NULL;
		     line = strtok(NULL, "\n"))
			printf("  %s\n", line);
	}
}

/* A sparkline of `count` values scaled to their maximum. */
static void sparkline(const char *label, const double *values, int count,
                      const char *unit, double scale)
{
	static const char *const bars[] = { "\u2581", "\u2582", "\u2583",
		"\u2584", "\u2585", "\u2586", "\u2587", "\u2588" };
	double max = 0;

	for (int k = 0; k < count; k++)
		if (values[k] > max)
			max = values[k];
	printf("  %-5s", label);
	for (int k = 0; k < count; k++) {
		int level = max > 0 ? (int)lrint(values[k] / max * 7) : 0;

		printf("%s", bars[level < 0 ? 0 : level > 7 ? 7 : level]);
	}
	printf("  max %.1f%s\n", max * scale, unit);
}

static volatile sig_atomic_t stop_watch;

static void on_signal(int sig)
{
	(void)sig;
	stop_watch = 1;
}

static void watch(const char *path, unsigned int seconds)
{
	struct view views[AGILE_STATE_SLOTS];
	struct agile_state_tick ticks[AGILE_STATE_RING];
	double rate[AGILE_STATE_RING], p99[AGILE_STATE_RING];
	char why[256], shown_path[AGILESTAT_TEXT_SIZE(4096)];

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	while (!stop_watch) {
		struct agile_state_map m = { 0 };
		time_t now = time(NULL);
		int rc = agile_state_open_ro(path, &m, why, sizeof(why));

		/* Home the cursor and clear: refresh in place. */
		printf("\033[H\033[2J");
		printf("agilestat %s  every %us  %s",
		       agilestat_text(path, shown_path, sizeof(shown_path)),
		       seconds, ctime(&now));
		if (rc < 0) {
			printf("%s\n", rc == -ENOENT ? "no state file yet"
			                             : why);
		} else {
			int n = read_views(&m, views);

			agilestat_fleet_open(path);
			print_table(views, n);
			for (int i = 0; i < n; i++) {
				int count = ring_entries(views[i].slot, 60,
				                         ticks);

				if (count == 0)
					continue;
				for (int k = 0; k < count; k++) {
					rate[k] = ticks[k].rate;
					p99[k] = (double)ticks[k].p99_ns;
				}
				struct labels l;

				printf("\n%s, last %d ticks\n",
				       labels_of(views[i].slot, &l)->name,
				       count);
				sparkline("rate", rate, count, "/s", 1);
				sparkline("p99", p99, count, "ms", 1e-6);
			}
			agile_state_close(&m);
		}
		fflush(stdout);
		sleep(seconds);
	}
}

/* The document OUTPUT for the state file open in M (NULL: there is none
 * yet, so no destination), on stdout. */
static void emit(const struct agile_state_map *m, const char *path,
                 enum output output)
{
	struct view views[AGILE_STATE_SLOTS];
	int n = 0;

	if (m != NULL) {
		n = read_views(m, views);
		agilestat_fleet_open(path);
	}
	switch (output) {
	case OUT_TABLE:
		print_table(views, n);
		if (m != NULL)
			print_unsaid_table(m);
		break;
	case OUT_JSON: print_json(views, n, m); break;
	case OUT_PROMETHEUS: print_prometheus(views, n); break;
	case OUT_HISTORY: print_history(views, n); break;
	case OUT_CONFIG: print_config(views, n); break;
	}
}

/* agilestat_render_fn for --serve: the file is opened afresh for every
 * request, so a state file created, replaced or removed while the server
 * runs is the one it shows. */
static int serve_render(const char *path, enum agilestat_document doc,
                        char *why, size_t why_len)
{
	static const enum output outputs[] = {
		[AGILESTAT_DOC_JSON] = OUT_JSON,
		[AGILESTAT_DOC_PROMETHEUS] = OUT_PROMETHEUS,
		[AGILESTAT_DOC_HISTORY] = OUT_HISTORY,
	};
	struct agile_state_map m = { 0 };
	int rc = agile_state_open_ro(path, &m, why, why_len);

	if (rc == -ENOENT) {
		emit(NULL, path, outputs[doc]);
		return 0;
	}
	if (rc < 0) {
		if (rc != -EINVAL && rc != -EPERM)
			snprintf(why, why_len, "%s", strerror(-rc));
		return rc;
	}
	emit(&m, path, outputs[doc]);
	agile_state_close(&m);
	return 0;
}

/* The preload's default path (state.h), found by the same rules and owner
 * checks but never created: a place passed over is said on stderr, since
 * another user may be taking this user's directory. */
static void default_path(char *path, size_t len)
{
	const struct agile_state_env env = {
		.state = getenv("AGILE_STATE"),
		.runtime_dir = getenv("XDG_RUNTIME_DIR"),
		.home = getenv("HOME"),
	};
	char note[512];

	if (agile_state_path(&env, false, path, len, note, sizeof(note)) < 0)
		errx(1, "no usable state file location: %s", note);
	if (note[0] != '\0')
		warnx("default state file: %s", note);
}

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: agilestat [-s PATH] [-j | -p | -H | -c]\n"
	        "       agilestat [-s PATH] -w SECONDS\n"
	        "       agilestat [-s PATH] --serve ADDRESS\n"
	        "  -s, --state PATH     state file (default: $AGILE_STATE, else\n"
	        "                       $XDG_RUNTIME_DIR/agilepreload.state, else\n"
	        "                       /dev/shm/agilepreload-<uid>/state)\n"
	        "  -j, --json           one JSON document\n"
	        "  -p, --prometheus     Prometheus text exposition format\n"
	        "  -w, --watch SECONDS  refresh in place, with sparklines\n"
	        "  -H, --history        the last 120 ticks as CSV\n"
	        "  -c, --config         each destination's resolved configuration\n"
	        "  -S, --serve ADDRESS  HTTP on PORT, HOST:PORT or unix:PATH:\n"
	        "                       /metrics, /json and a live page at /\n"
	        "  -h, --help           print this help\n");
}

/* One output format per run: a second one would silently win. */
static void set_output(enum output *output, enum output want)
{
	static const char *const names[] = {
		[OUT_JSON] = "--json", [OUT_PROMETHEUS] = "--prometheus",
		[OUT_HISTORY] = "--history", [OUT_CONFIG] = "--config",
	};

	if (*output != OUT_TABLE && *output != want)
		errx(2, "%s and %s: expected one output format", names[*output],
		     names[want]);
	*output = want;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "state", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "prometheus", no_argument, NULL, 'p' },
		{ "watch", required_argument, NULL, 'w' },
		{ "history", no_argument, NULL, 'H' },
		{ "config", no_argument, NULL, 'c' },
		{ "serve", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct agile_state_map m = { 0 };
	enum output output = OUT_TABLE;
	unsigned int watch_seconds = 0;
	const char *serve = NULL;
	char path[4096] = "", why[256];
	static char shown_path[AGILESTAT_TEXT_SIZE(4096)];
	const char *errstr;
	int opt, rc;

	while ((opt = getopt_long(argc, argv, "s:jpw:HcS:h", longopts,
	                          NULL)) != -1) {
		switch (opt) {
		case 's':
			if (strlcpy(path, optarg, sizeof(path)) >= sizeof(path))
				errx(2, "state path too long");
			break;
		case 'j': set_output(&output, OUT_JSON); break;
		case 'p': set_output(&output, OUT_PROMETHEUS); break;
		case 'H': set_output(&output, OUT_HISTORY); break;
		case 'c': set_output(&output, OUT_CONFIG); break;
		case 'w':
			watch_seconds = (unsigned int)strtonum(optarg, 1, 3600,
			                                       &errstr);
			if (errstr != NULL)
				errx(2, "--watch %s: %s (expected 1 to 3600 "
				     "seconds)", optarg, errstr);
			break;
		case 'S': serve = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (path[0] == '\0')
		default_path(path, sizeof(path));
	if (optind != argc) {
		warnx("unexpected argument \"%s\"; agilestat takes options "
		      "only", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (watch_seconds > 0 && output != OUT_TABLE)
		errx(2, "--watch redraws the table; expected it without "
		     "--json, --prometheus, --history or --config");
	if (serve != NULL && (output != OUT_TABLE || watch_seconds > 0))
		errx(2, "--serve answers every format itself; expected it "
		     "without --json, --prometheus, --history, --config or "
		     "--watch");
	if (serve != NULL)
		return agilestat_serve(serve, path, serve_render);
	if (watch_seconds > 0) {
		watch(path, watch_seconds);
		return 0;
	}
	rc = agile_state_open_ro(path, &m, why, sizeof(why));
	agilestat_text(path, shown_path, sizeof(shown_path));
	if (rc == -ENOENT)
		errx(1, "%s: no state file (no program has used a configured "
		     "destination yet; set AGILE_STATE or -s PATH)", shown_path);
	if (rc == -EINVAL || rc == -EPERM)
		errx(1, "%s: %s", shown_path, why);
	if (rc < 0)
		errx(1, "%s: %s", shown_path, strerror(-rc));
	emit(&m, path, output);
	agile_state_close(&m);
	if (fflush(stdout) != 0 || ferror(stdout))
		err(1, "stdout");
	return 0;
}
