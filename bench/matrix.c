/*
 * matrix.c - the scenario matrix: every arm (libagile's laws and presets,
 * two fixed-rate leaky buckets, adaptx's three concurrency laws) against the
 * seed's seven scenarios and an event loop's capacity drop (at a tick, and
 * half way through one), on a virtual clock, with the same table every
 * run.
 *
 * In the seed's scenarios the client always has work to send.  A rate arm
 * sends each request at the slot its leaky bucket plans; a concurrency arm
 * keeps as many requests in flight as its law allows and sends the next one
 * the instant one returns.  Such a client hands the limiter a smooth
 * signal: grants and answers every tick.  A real program does not, and
 * loop-drop's client is ab -c 16 as the preload paces it (simulate_loop):
 * sixteen sockets on one thread, each grant taken at connect and waited for
 * at the send, answers read only when the thread is free, so grants and
 * answers arrive in lumps in different ticks, a tick runs only when a call
 * finds one due, and the program starts cold.  The seed's scenarios showed
 * the default recovering from the capacity drop while this client, for real,
 * stayed at the floor after it: the sim must catch that class of problem.
 *
 * drop-recover and loop-drop-recover are the other such class (issue 15):
 * a recovery after a drop, where the baseline was learned at the high
 * capacity and the answers at a quarter of that load jitter around it,
 * read through the histogram's buckets as a real p50 is.  The seed's
 * scenarios recover from a cold start at the low capacity, whose
 * baseline sits far above the answers once the capacity is back, and so
 * never showed the default holding its rate at the old knee for good, as
 * it did for real (both read "never" under rule c's old p50 <= baseline).
 *
 * The downstream is priced from what the arm actually sends, one request at
 * a time, not from the arm's nominal rate:
 *
 *   - a request travels base/2 to the server and base/2 back, each leg
 *     jittered by a log-normal factor (sigma LEG_JITTER), so arrivals at the
 *     server bunch and reorder a little even when sends are evenly paced;
 *   - the server is one FIFO queue whose capacity is C(t) requests per
 *     second: each request needs 1/C(t) of work on average, Gamma
 *     distributed with shape SERVICE_SHAPE (a coefficient of variation of
 *     0.5, between M/D/1's constant work and M/M/1's exponential work), and
 *     starts when the server is free.  Exponential work was tried first and
 *     rejected: at 40 req/s a request's own 25 ms of work then has a p99 of
 *     115 ms, so no limiter at any rate could hold a 100 ms SLO's p99 after
 *     the capacity drop, and the scenario would measure the model instead
 *     of the laws;
 *   - the client gives up after CLIENT_TIMEOUT_NS; a request the server has
 *     not started by then is dropped unserved (its client is gone), one it
 *     finishes too late still cost the server its work.
 *
 * The latency a request reports is its round trip from the actual send
 * (never the throttle wait), and the client timeout, reported as a truncated
 * call to the limiter (a lower bound, counted only past the SLO) and as a
 * failure to a concurrency law.
 *
 * Each (scenario, arm) runs ROUNDS times with different seeds: from a cold
 * start, WARMUP_S seconds of the scenario's opening conditions (LOOP_WARMUP_S
 * for the event loop), unmeasured, then the measured span.  A request
 * belongs to the tick (second) it was sent in.  Per arm:
 * goodput (answers inside the SLO per second), the share inside the SLO, the
 * p99 (a timed-out request counts as the timeout), and after a capacity step
 * the ticks until the arm's sending rate is within 10% of the new capacity
 * and until a tick's p99 is back under the SLO (the worst round of each).
 *
 * Output: a markdown table on stdout, OUT/matrix.csv, and for each scenario
 * OUT/<scenario>.dat (round one's per-tick series) with OUT/<scenario>.gp, a
 * gnuplot script drawing OUT/<scenario>.png.  No timing or host detail is
 * printed, so two runs produce identical files.
 *
 * Usage: matrix [-a] [-o OUTDIR] [-p PRESET] [-r ROUNDS] [-t SCENARIO:ARM]
 *   -t traces one arm's control steps on stderr, every round: a rate arm's
 *      ticks, a concurrency arm's windows (trace_law).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agile.h"
#include "agile_adaptx.h"

#define MS AGILE_NS_PER_MS
#define SEC AGILE_NS_PER_S

#define TICK_NS SEC
#define WARMUP_S 30
/* The event-loop scenarios measure a program 5 s after it started: cold
 * enough that its first cut (its slow start overshooting) came before it
 * had seen enough to trust its answers, as in a real run. */
#define LOOP_WARMUP_S 5
#define DEFAULT_ROUNDS 5
#define MAX_ROUNDS 15
#define CLIENT_TIMEOUT_NS SEC
#define LEG_JITTER 0.1     /* sigma of each leg's log-normal factor */
#define SERVICE_SHAPE 4    /* Gamma shape of the work: CV 1/sqrt(4) */
#define SLO_NS (100 * MS)
#define MAX_TICKS 300      /* longest measured span, in ticks */
#define LOOP_CONNECTIONS 16 /* the event-loop client's sockets, ab -c 16 */
#define PI 3.14159265358979323846

/* The adaptive rate arms share these bounds: a ceiling of twice the
 * steady capacity and a floor that still probes. */
#define ARM_MAX_RATE 300
#define ARM_MIN_RATE 5

/* ------------------------------------------------------------------------ */
/* A reproducible PRNG                                                       */
/* ------------------------------------------------------------------------ */

/* xorshift64*, seeded through splitmix64 so nearby seeds diverge at once. */
struct prng {
	uint64_t s;
};

static void prng_seed(struct prng *p, uint64_t seed)
{
	uint64_t z = seed + UINT64_C(0x9e3779b97f4a7c15);

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	z ^= z >> 31;
	p->s = z ? z : 1;
}

static uint64_t prng_next(struct prng *p)
{
	uint64_t x = p->s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	p->s = x;
	return x * UINT64_C(2685821657736338717);
}

/* Uniform in (0, 1): never 0, so log() is always defined. */
static double prng_unit(struct prng *p)
{
	return ((double)(prng_next(p) >> 11) + 0.5) * 0x1.0p-53;
}

static double prng_normal(struct prng *p)
{
	double u = prng_unit(p);
	double v = prng_unit(p);

	return sqrt(-2.0 * log(u)) * cos(2.0 * PI * v);
}

/* Gamma(shape k, mean 1) for an integer k: the mean of k exponentials. */
static double prng_gamma_mean1(struct prng *p, int k)
{
	double sum = 0;

	for (int i = 0; i < k; i++)
		sum -= log(prng_unit(p));
	return sum / k;
}

/* ------------------------------------------------------------------------ */
/* Scenarios                                                                 */
/* ------------------------------------------------------------------------ */

/* Who sends the requests. */
enum client_kind {
	CLIENT_BACKLOG = 0, /* always has work: a request at every planned slot */
	CLIENT_EVENT_LOOP   /* ab: one thread driving LOOP_CONNECTIONS sockets */
};

/* `rel` is seconds since the measured span began; negative in warm-up. */
struct scenario {
	const char *name;
	const char *title;
	int measured_s;
	int step_at_s;          /* capacity step at this second, or -1 */
	double (*base_ms)(double rel);
	double (*capacity)(double rel);
	enum client_kind client;
	int warmup_s;           /* the opening conditions run this long,
	                           unmeasured, from a cold start */
};

static double base_20(double rel)
{
	(void)rel;
	return 20;
}

static double base_bump(double rel)
{
	return rel < 10 ? 20 : 60;
}

/* 130 ms is above the SLO at any load: nobody can answer inside it until
 * the downstream recovers at +40 s. */
static double base_breaks(double rel)
{
	return rel >= 10 && rel < 40 ? 130 : 20;
}

static double base_flapping(double rel)
{
	if (rel < 0)
		return 20;
	return ((long)floor(rel / 5)) % 2 == 1 ? 60 : 20;
}

static double cap_150(double rel)
{
	(void)rel;
	return 150;
}

static double cap_drop(double rel)
{
	return rel < 10 ? 150 : 40;
}

/* The same drop half way through a tick of the event loop (its ticks fall
 * about 0.1 s past each second): the tick that sees it mixes the old
 * capacity with the new, as scripts/demo.sh's drop at 15 s can. */
static double cap_drop_mid(double rel)
{
	return rel < 10.5 ? 150 : 40;
}

static double cap_recover(double rel)
{
	return rel < 10 ? 40 : 150;
}

/* A drop and a recovery: 150 req/s for the first 10 s of the warm-up,
 * where the baseline is learned, 40 from 20 s before the measured span
 * (the baseline may not follow it up), 150 again from +10 s, where the
 * measures start.  The recovery finds the rate at the knee of 40 and the
 * baseline a 150 req/s downstream's, which the answers at a quarter of
 * that load jitter around: a p50 a bucket above it held the rate there
 * for good before rule c had its 5% (issue 15). */
static double cap_drop_recover(double rel)
{
	return rel < -20 || rel >= 10 ? 150 : 40;
}

/* The same for the event loop, which starts 5 s before the measured
 * span: the drop at +10 s, the recovery at +30 s. */
static double cap_loop_drop_recover(double rel)
{
	return rel < 10 || rel >= 30 ? 150 : 40;
}

/* 150 at the top, 40 at the bottom, a 120 s day. */
static double cap_diurnal(double rel)
{
	if (rel < 0)
		return 150;
	return 95 + 55 * cos(2 * PI * rel / 120);
}

static const struct scenario scenarios[] = {
	{ .name = "steady", .title = "steady: 20 ms, 150 req/s",
	  .measured_s = 60, .step_at_s = -1, .base_ms = base_20,
	  .capacity = cap_150, .warmup_s = WARMUP_S },
	{ .name = "benign-bump",
	  .title = "benign bump: 20 -> 60 ms at +10 s, 150 req/s",
	  .measured_s = 60, .step_at_s = -1, .base_ms = base_bump,
	  .capacity = cap_150, .warmup_s = WARMUP_S },
	{ .name = "slo-breaks",
	  .title = "SLO breaks: 20 -> 130 ms from +10 s to +40 s",
	  .measured_s = 70, .step_at_s = -1, .base_ms = base_breaks,
	  .capacity = cap_150, .warmup_s = WARMUP_S },
	{ .name = "capacity-drop",
	  .title = "capacity drop: 150 -> 40 req/s at +10 s",
	  .measured_s = 60, .step_at_s = 10, .base_ms = base_20,
	  .capacity = cap_drop, .warmup_s = WARMUP_S },
	{ .name = "capacity-recover",
	  .title = "capacity recovery: 40 -> 150 req/s at +10 s",
	  .measured_s = 60, .step_at_s = 10, .base_ms = base_20,
	  .capacity = cap_recover, .warmup_s = WARMUP_S },
	{ .name = "flapping", .title = "flapping latency: 20 <-> 60 ms every 5 s",
	  .measured_s = 60, .step_at_s = -1, .base_ms = base_flapping,
	  .capacity = cap_150, .warmup_s = WARMUP_S },
	{ .name = "diurnal",
	  .title = "diurnal: capacity 150 -> 40 -> 150 req/s over 120 s",
	  .measured_s = 240, .step_at_s = -1, .base_ms = base_20,
	  .capacity = cap_diurnal, .warmup_s = WARMUP_S },
	{ .name = "loop-drop",
	  .title = "event loop (ab -c 16) started 5 s before: capacity "
	           "150 -> 40 req/s at +10 s",
	  .measured_s = 60, .step_at_s = 10, .base_ms = base_20,
	  .capacity = cap_drop, .client = CLIENT_EVENT_LOOP,
	  .warmup_s = LOOP_WARMUP_S },
	{ .name = "loop-drop-mid",
	  .title = "event loop (ab -c 16) started 5 s before: capacity "
	           "150 -> 40 req/s at +10.5 s, mid-tick",
	  .measured_s = 60, .step_at_s = 10, .base_ms = base_20,
	  .capacity = cap_drop_mid, .client = CLIENT_EVENT_LOOP,
	  .warmup_s = LOOP_WARMUP_S },
	/* Appended, not inserted: a scenario's seeds follow its index, so
	 * the figures of those above stay as they were. */
	{ .name = "drop-recover",
	  .title = "recovery after a drop: 150 -> 40 at -20 s, 40 -> 150 req/s "
	           "at +10 s",
	  .measured_s = 60, .step_at_s = 10, .base_ms = base_20,
	  .capacity = cap_drop_recover, .warmup_s = WARMUP_S },
	{ .name = "loop-drop-recover",
	  .title = "event loop (ab -c 16) started 5 s before: capacity "
	           "150 -> 40 req/s at +10 s, back to 150 at +30 s",
	  .measured_s = 60, .step_at_s = 30, .base_ms = base_20,
	  .capacity = cap_loop_drop_recover, .client = CLIENT_EVENT_LOOP,
	  .warmup_s = LOOP_WARMUP_S },
};
#define SCENARIO_COUNT (sizeof scenarios / sizeof scenarios[0])

/* ------------------------------------------------------------------------ */
/* Arms                                                                      */
/* ------------------------------------------------------------------------ */

enum arm_kind {
	ARM_AGILE, /* a libagile rate limiter */
	ARM_FIXED, /* a leaky bucket at a fixed rate */
	ARM_LAW    /* an adaptx concurrency limiter */
};

/* The rules preset none adds to the seed's law (agile.h), one bit each, so
 * the ablation (-a) can run the seed's law with all of them but one. */
enum knob {
	KNOB_DELIVERED = 1 << 0, /* delivered_share */
	KNOB_KNEE = 1 << 1,      /* knee_ramp */
	KNOB_ACCEL = 1 << 2,     /* probe_acceleration */
	KNOB_GOODPUT = 1 << 3,   /* goodput_cut */
	KNOB_ALL = (1 << 4) - 1
};

struct arm {
	const char *name;
	const char *color; /* in the plots */
	const char *label; /* as the table shows it */
	enum arm_kind kind;
	enum agile_preset preset;
	double recover_ramp;
	double fixed_rate;
	enum agile_law_kind law;
	unsigned knobs;    /* enum knob: set explicitly at their defaults */
};

static struct arm arms[] = {
	{ .name = "default", .color = "#009e73", .label = "default (none + SLO)",
	  .kind = ARM_AGILE, .preset = AGILE_PRESET_NONE },
	{ .name = "balanced", .color = "#56b4e9",
	  .label = "baseline anchor (balanced)", .kind = ARM_AGILE,
	  .preset = AGILE_PRESET_BALANCED },
	{ .name = "throughput-first", .color = "#0072b2",
	  .label = "throughput-first", .kind = ARM_AGILE,
	  .preset = AGILE_PRESET_THROUGHPUT_FIRST },
	{ .name = "seed", .color = "#000080", .label = "seed (the seed's default)",
	  .kind = ARM_AGILE, .preset = AGILE_PRESET_SEED },
	{ .name = "recover-ramp", .color = "#e69f00",
	  .label = "seed + recover-ramp 0.5", .kind = ARM_AGILE,
	  .preset = AGILE_PRESET_SEED, .recover_ramp = 0.5 },
	{ .name = "fixed-100", .color = "#999999", .label = "fixed 100 req/s",
	  .kind = ARM_FIXED, .fixed_rate = 100 },
	{ .name = "fixed-140", .color = "#d55e00", .label = "fixed 140 req/s",
	  .kind = ARM_FIXED, .fixed_rate = 140 },
	{ .name = "aimd", .color = "#cc79a7", .label = "adaptx AIMD",
	  .kind = ARM_LAW, .law = AGILE_LAW_AIMD },
	{ .name = "vegas", .color = "#8b4513", .label = "adaptx Vegas",
	  .kind = ARM_LAW, .law = AGILE_LAW_VEGAS },
	{ .name = "gradient", .color = "#9400d3", .label = "adaptx Gradient",
	  .kind = ARM_LAW, .law = AGILE_LAW_GRADIENT },
};
#define ARM_COUNT (sizeof arms / sizeof arms[0])

/* ------------------------------------------------------------------------ */
/* Events                                                                    */
/* ------------------------------------------------------------------------ */

enum event_type {
	EV_ARRIVE, /* the request reaches the server */
	EV_DONE    /* the answer (or the timeout) reaches the client */
};

struct event {
	int64_t at_ns;
	uint64_t seq;       /* ties break in the order events were made */
	int type;
	bool timed_out;
	int conn;           /* the event loop's connection; -1 for a backlog */
	int64_t sent_ns;
	int64_t down_ns;    /* the return leg, drawn at send */
	struct agile_adaptx_permit permit;
};

struct heap {
	struct event *v;
	size_t n, cap;
	uint64_t seq;
};

static bool event_before(const struct event *a, const struct event *b)
{
	if (a->at_ns != b->at_ns)
		return a->at_ns < b->at_ns;
	return a->seq < b->seq;
}

static void heap_push(struct heap *h, struct event e)
{
	if (h->n == h->cap) {
		h->cap = h->cap ? 2 * h->cap : 1024;
		h->v = realloc(h->v, h->cap * sizeof(*h->v));
		if (h->v == NULL) {
			perror("matrix: realloc");
			exit(1);
		}
	}
	e.seq = h->seq++;
	size_t i = h->n++;
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (!event_before(&e, &h->v[parent]))
			break;
		h->v[i] = h->v[parent];
		i = parent;
	}
	h->v[i] = e;
}

static struct event heap_pop(struct heap *h)
{
	struct event top = h->v[0];
	struct event last = h->v[--h->n];
	size_t i = 0;

	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		const struct event *best = &last;
		if (l < h->n && event_before(&h->v[l], best)) {
			m = l;
			best = &h->v[l];
		}
		if (r < h->n && event_before(&h->v[r], best))
			m = r;
		if (m == i)
			break;
		h->v[i] = h->v[m];
		i = m;
	}
	if (h->n > 0)
		h->v[i] = last;
	return top;
}

/* ------------------------------------------------------------------------ */
/* One run: a scenario, an arm, a seed                                       */
/* ------------------------------------------------------------------------ */

/* One connection of the event-loop client, from connect to the read of its
 * answer; the client then closes it and connects again, as ab does without
 * keep-alive. */
enum conn_state {
	CONN_CLOSED = 0,  /* past the end of the run */
	CONN_WAITING,     /* a concurrency arm has no permit for it yet */
	CONN_CONNECTED,   /* its grant is taken; the request is not sent */
	CONN_IN_FLIGHT,   /* sent; the answer has not arrived */
	CONN_READABLE     /* the answer has arrived and waits to be read */
};

struct conn {
	enum conn_state state;
	int64_t grant_ns;   /* the planned send time its connect reserved */
	struct agile_adaptx_permit permit;
	struct event answer; /* valid in CONN_READABLE */
};

/* A measured request: the tick it was sent in and what it saw. */
struct record {
	int tick;
	int64_t latency_ns;
	bool inside; /* answered within the SLO */
};

struct run {
	const struct scenario *sc;
	const struct arm *arm;
	struct prng prng;
	struct heap heap;
	int64_t warmup_ns;
	int64_t end_ns;      /* sends stop here */
	int64_t server_free_ns;
	struct record *rec;
	size_t nrec, caprec;
	/* the arm */
	struct agile_rate_limiter limiter;
	struct agile_bucket bucket;
	struct agile_adaptx *adaptx;
	struct agile_adaptx_hooks hooks;
	bool trace;
	uint64_t traced_windows;  /* a concurrency arm's windows traced so far */
	uint64_t traced_answers;  /* its successes and failures by then */
	uint64_t traced_failures;
	/* the event-loop client */
	struct conn conns[LOOP_CONNECTIONS];
	int64_t next_law_tick_ns; /* a concurrency arm's next window */
};

static double rel_s(const struct run *r, int64_t t_ns)
{
	return (double)(t_ns - r->warmup_ns) / (double)SEC;
}

static double draw_hook(void *arg)
{
	return prng_unit(&((struct run *)arg)->prng);
}

static int64_t leg_ns(struct run *r, double base_ms)
{
	double f = exp(LEG_JITTER * prng_normal(&r->prng));

	return (int64_t)(base_ms / 2 * f * (double)MS);
}

static void send_request(struct run *r, int64_t now,
                         const struct agile_adaptx_permit *permit, int conn)
{
	double base = r->sc->base_ms(rel_s(r, now));
	struct event e = { 0 };

	e.type = EV_ARRIVE;
	e.conn = conn;
	e.sent_ns = now;
	e.at_ns = now + leg_ns(r, base);
	e.down_ns = leg_ns(r, base);
	if (permit != NULL)
		e.permit = *permit;
	heap_push(&r->heap, e);
}

/* The server takes the request in arrival order: it starts when the server
 * is free, or is dropped if its client has given up by then. */
static void server_arrive(struct run *r, struct event e)
{
	int64_t give_up = e.sent_ns + CLIENT_TIMEOUT_NS;
	int64_t start = e.at_ns > r->server_free_ns ? e.at_ns : r->server_free_ns;

	e.type = EV_DONE;
	if (start >= give_up) {
		e.timed_out = true;
		e.at_ns = give_up;
		heap_push(&r->heap, e);
		return;
	}
	double cap = r->sc->capacity(rel_s(r, start));
	double work_s = prng_gamma_mean1(&r->prng, SERVICE_SHAPE) / cap;
	r->server_free_ns = start + (int64_t)(work_s * (double)SEC);
	int64_t back = r->server_free_ns + e.down_ns;
	e.timed_out = back > give_up;
	e.at_ns = e.timed_out ? give_up : back;
	heap_push(&r->heap, e);
}

static void record(struct run *r, const struct event *e)
{
	if (e->sent_ns < r->warmup_ns || e->sent_ns >= r->end_ns)
		return;
	if (r->nrec == r->caprec) {
		r->caprec = r->caprec ? 2 * r->caprec : 4096;
		r->rec = realloc(r->rec, r->caprec * sizeof(*r->rec));
		if (r->rec == NULL) {
			perror("matrix: realloc");
			exit(1);
		}
	}
	struct record *rc = &r->rec[r->nrec++];
	rc->tick = (int)((e->sent_ns - r->warmup_ns) / TICK_NS);
	rc->latency_ns = e->at_ns - e->sent_ns;
	rc->inside = !e->timed_out && rc->latency_ns <= SLO_NS;
}

/*
 * A concurrency arm's trace: one line per window its law closed, with what
 * the window held (answers, failures, and the latencies of the samples
 * recorded within the last window, failures included), the limit it left
 * and the law's estimators, so the table's figures can be read off the
 * steps that made them.
 */
static void trace_law(struct run *r, int64_t now)
{
	const struct agile_law *law = &r->adaptx->law;
	struct agile_adaptx_stats st;

	if (!r->trace || law->windows == r->traced_windows)
		return;
	r->traced_windows = law->windows;
	agile_adaptx_stats(r->adaptx, now, &st);
	uint64_t answers = st.success + st.failures;
	fprintf(stderr, "%6.1f cap %5.1f base %3.0f | answers %4" PRIu64
	        " failed %4" PRIu64 " | mean %6.1f min %6.1f p99 %7.1f | ",
	        rel_s(r, now), r->sc->capacity(rel_s(r, now)),
	        r->sc->base_ms(rel_s(r, now)), answers - r->traced_answers,
	        st.failures - r->traced_failures,
	        (double)st.avg_latency_ns / MS, (double)st.min_latency_ns / MS,
	        (double)st.p99_latency_ns / MS);
	r->traced_answers = answers;
	r->traced_failures = st.failures;
	switch (law->config.kind) {
	case AGILE_LAW_VEGAS:
		fprintf(stderr, "rtt_min %6.1f avg %6.1f | ",
		        law->state.vegas.min_ns / MS,
		        law->state.vegas.avg_ns / MS);
		break;
	case AGILE_LAW_GRADIENT:
		fprintf(stderr, "avg %6.1f | ", law->state.gradient.avg_ns / MS);
		break;
	default:
		fprintf(stderr, "credit %.2f | ", law->state.aimd.credit);
		break;
	}
	fprintf(stderr, "in flight %3" PRId64 " limit %4" PRId64 "\n",
	        st.in_flight, st.limit);
}

/* Keep a concurrency arm's pipe full: send while the law admits. */
static void law_fill(struct run *r, int64_t now)
{
	struct agile_adaptx_permit permit;

	if (now >= r->end_ns)
		return;
	while (agile_adaptx_try_acquire(r->adaptx, &permit) == 0)
		send_request(r, now, &permit, -1);
}

static void answer(struct run *r, const struct event *e)
{
	int64_t latency = e->at_ns - e->sent_ns;
	struct agile_adaptx_permit permit = e->permit;

	record(r, e);
	switch (r->arm->kind) {
	case ARM_AGILE:
		if (e->timed_out)
			agile_rate_observe_truncated(&r->limiter, latency);
		else
			agile_rate_observe(&r->limiter, latency);
		break;
	case ARM_FIXED:
		break;
	case ARM_LAW:
		agile_adaptx_release(r->adaptx, &permit, !e->timed_out, latency,
		                     e->at_ns, &r->hooks);
		trace_law(r, e->at_ns);
		law_fill(r, e->at_ns);
		break;
	}
}

static void arm_init(struct run *r)
{
	struct agile_config c = { 0 };
	struct agile_law_options o;

	switch (r->arm->kind) {
	case ARM_AGILE:
		c.preset = r->arm->preset;
		c.max_rate = ARM_MAX_RATE;
		c.min_rate = ARM_MIN_RATE;
		c.slo_ns = SLO_NS;
		c.recover_ramp = r->arm->recover_ramp;
		if (r->arm->knobs & KNOB_DELIVERED)
			c.delivered_share = AGILE_DEFAULT_DELIVERED_SHARE;
		if (r->arm->knobs & KNOB_KNEE)
			c.knee_ramp = AGILE_DEFAULT_KNEE_RAMP;
		if (r->arm->knobs & KNOB_ACCEL)
			c.probe_acceleration = AGILE_DEFAULT_PROBE_ACCELERATION;
		if (r->arm->knobs & KNOB_GOODPUT)
			c.goodput_cut = AGILE_DEFAULT_GOODPUT_CUT;

		if (agile_rate_init(&r->limiter, &c, 0) < 0) {
			fprintf(stderr, "matrix: %s: bad configuration\n",
			        r->arm->name);
			exit(1);
		}
		break;
	case ARM_FIXED:
		agile_bucket_init(&r->bucket, r->arm->fixed_rate, r->arm->fixed_rate);
		break;
	case ARM_LAW:
		agile_law_options_init(&o);
		agile_law_set_kind(&o, (int)r->arm->law);
		agile_law_set_target_latency_ns(&o, SLO_NS);
		agile_law_set_sample_window_ns(&o, TICK_NS);
		r->adaptx = calloc(1, sizeof(*r->adaptx));
		if (r->adaptx == NULL || agile_adaptx_init(r->adaptx, &o, NULL, 0) < 0) {
			fprintf(stderr, "matrix: %s: cannot start\n", r->arm->name);
			exit(1);
		}
		r->hooks.draw = draw_hook;
		r->hooks.arg = r;
		break;
	}
}

static void trace_tick(const struct run *r, int64_t now)
{
	struct agile_stats st;

	agile_rate_stats(&r->limiter, &st);
	fprintf(stderr, "%6.1f cap %5.1f base %3.0f | used %6.1f deliv %6.1f "
	        "knee %6.1f | p50 %6.1f bl %5.1f p99 %7.1f tail %.2f | %-8s -> %6.1f\n",
	        rel_s(r, now), r->sc->capacity(rel_s(r, now) - 0.5),
	        r->sc->base_ms(rel_s(r, now) - 0.5), st.used, st.delivered,
	        st.knee_rate, (double)st.p50_ns / MS, (double)st.baseline_ns / MS,
	        (double)st.p99_ns / MS,
	        st.tail_ratio, agile_action_name(st.last_action), st.rate);
}

static int64_t take_slot(struct run *r, int64_t now)
{
	if (r->arm->kind == ARM_AGILE)
		return agile_rate_take(&r->limiter, now);
	return agile_bucket_take(&r->bucket, now);
}

static void simulate_backlog(struct run *r)
{
	bool paced = r->arm->kind != ARM_LAW;
	int64_t next_tick = TICK_NS;
	int64_t next_send = INT64_MAX;

	arm_init(r);
	if (paced)
		next_send = take_slot(r, 0);
	else
		law_fill(r, 0);

	for (;;) {
		int64_t next_event = r->heap.n ? r->heap.v[0].at_ns : INT64_MAX;
		bool sending = next_send < r->end_ns;
		bool ticking = next_tick <= r->end_ns;

		if (!sending && !ticking && r->heap.n == 0)
			break;
		/* Ties: answers before the tick that reads them, the tick
		 * before the send that uses its rate. */
		if (r->heap.n && next_event <= next_tick &&
		    (!sending || next_event <= next_send)) {
			struct event e = heap_pop(&r->heap);
			if (e.type == EV_ARRIVE)
				server_arrive(r, e);
			else
				answer(r, &e);
		} else if (ticking && (!sending || next_tick <= next_send)) {
			if (r->arm->kind == ARM_AGILE) {
				agile_rate_tick_if_due(&r->limiter, next_tick);
				if (r->trace)
					trace_tick(r, next_tick);
			}
			else if (r->arm->kind == ARM_LAW) {
				agile_adaptx_advance(r->adaptx, next_tick, &r->hooks);
				trace_law(r, next_tick);
				law_fill(r, next_tick);
			}
			next_tick += TICK_NS;
		} else if (sending) {
			send_request(r, next_send, NULL, -1);
			next_send = take_slot(r, next_send);
		} else {
			/* Only the last ticks are left, past the final send. */
			next_tick = INT64_MAX;
		}
	}
}

/*
 * The event-loop client: ab -c 16 as the preload paces it.  One thread
 * drives LOOP_CONNECTIONS sockets.  Each connect takes its grant at once
 * (a rate arm's planned slot; a concurrency arm's permit, or the socket
 * waits for one), and the wait happens at the socket's send, where the
 * thread sleeps: while it does, answers arrive but nobody reads them.
 * When the thread is free it polls, and handles what was ready at that
 * instant in socket order: an answer is read (the sample is recorded then,
 * its round trip stamped when it arrived, as the preload's ppoll does),
 * the socket closed and connected again; a connected socket sends.  So at
 * a low rate grants are taken sixteen at a time and answers read sixteen
 * at a time, in different ticks.  A rate arm steps only when a call of the
 * client finds a tick due (the preload has no timer), a concurrency arm's
 * window closes on the clock.
 */

/* Handle every event due by `until`: the server's arrivals, answers
 * reaching their sockets, and a concurrency arm's windows. */
static void loop_advance(struct run *r, int64_t until)
{
	for (;;) {
		int64_t next_event = r->heap.n ? r->heap.v[0].at_ns : INT64_MAX;
		int64_t next_law = r->arm->kind == ARM_LAW ?
		                   r->next_law_tick_ns : INT64_MAX;

		if (next_law <= until && next_law < next_event) {
			agile_adaptx_advance(r->adaptx, next_law, &r->hooks);
			trace_law(r, next_law);
			r->next_law_tick_ns += TICK_NS;
			continue;
		}
		if (next_event > until)
			return;
		struct event e = heap_pop(&r->heap);
		if (e.type == EV_ARRIVE) {
			server_arrive(r, e);
		} else {
			r->conns[e.conn].answer = e;
			r->conns[e.conn].state = CONN_READABLE;
		}
	}
}

/* A rate arm's tick, run the way the preload runs it: by a call. */
static void loop_tick(struct run *r, int64_t now)
{
	if (r->arm->kind == ARM_AGILE &&
	    agile_rate_tick_if_due(&r->limiter, now) && r->trace)
		trace_tick(r, now);
}

static void loop_connect(struct run *r, int c, int64_t now)
{
	struct conn *k = &r->conns[c];

	if (now >= r->end_ns) {
		k->state = CONN_CLOSED;
		return;
	}
	if (r->arm->kind == ARM_LAW) {
		if (agile_adaptx_try_acquire(r->adaptx, &k->permit) != 0) {
			k->state = CONN_WAITING;
			return;
		}
		k->grant_ns = now;
	} else {
		k->grant_ns = take_slot(r, now);
	}
	k->state = CONN_CONNECTED;
	loop_tick(r, now);
}

/* Send on a connected socket: sleep until its grant, then send.  Returns
 * the time after. */
static int64_t loop_send(struct run *r, int c, int64_t now)
{
	struct conn *k = &r->conns[c];

	if (k->grant_ns > now) {
		loop_advance(r, k->grant_ns);
		now = k->grant_ns;
	}
	if (now >= r->end_ns) {
		if (r->arm->kind == ARM_LAW)
			agile_adaptx_release(r->adaptx, &k->permit, true, 0, now,
			                     &r->hooks);
		k->state = CONN_CLOSED;
		return now;
	}
	send_request(r, now, &k->permit, c);
	k->state = CONN_IN_FLIGHT;
	loop_tick(r, now);
	return now;
}

/* Read an answer, close the socket and connect it again. */
static void loop_read(struct run *r, int c, int64_t now)
{
	struct conn *k = &r->conns[c];
	const struct event *e = &k->answer;
	int64_t latency = e->at_ns - e->sent_ns;

	record(r, e);
	switch (r->arm->kind) {
	case ARM_AGILE:
		if (e->timed_out)
			agile_rate_observe_truncated(&r->limiter, latency);
		else
			agile_rate_observe(&r->limiter, latency);
		/* The preload's read ticks at the time the answer arrived
		 * (its ppoll stamp), so reads after a sleep never find a tick
		 * due: the reconnect that follows the first of them does,
		 * and a tick ends between the reads and their reconnects. */
		loop_tick(r, e->at_ns);
		break;
	case ARM_FIXED:
		break;
	case ARM_LAW:
		agile_adaptx_release(r->adaptx, &k->permit, !e->timed_out,
		                     latency, now, &r->hooks);
		trace_law(r, now);
		break;
	}
	loop_connect(r, c, now);
}

static void simulate_loop(struct run *r)
{
	int64_t now = 0;

	arm_init(r);
	r->next_law_tick_ns = TICK_NS;
	for (int c = 0; c < LOOP_CONNECTIONS; c++)
		loop_connect(r, c, now);
	for (;;) {
		enum conn_state what[LOOP_CONNECTIONS];
		int ready[LOOP_CONNECTIONS], n = 0;
		bool waiting = false;

		loop_advance(r, now);
		for (int c = 0; c < LOOP_CONNECTIONS; c++) {
			if (r->conns[c].state == CONN_WAITING)
				loop_connect(r, c, now);
			waiting |= r->conns[c].state == CONN_WAITING;
			if (r->conns[c].state == CONN_READABLE ||
			    r->conns[c].state == CONN_CONNECTED) {
				what[n] = r->conns[c].state;
				ready[n++] = c;
			}
		}
		if (n == 0) {
			/* Poll: sleep until an answer arrives (or, for a
			 * socket waiting for a permit, the next window). */
			int64_t next = r->heap.n ? r->heap.v[0].at_ns : INT64_MAX;
			if (waiting && r->next_law_tick_ns < next)
				next = r->next_law_tick_ns;
			if (next == INT64_MAX)
				break;
			now = next > now ? next : now;
			continue;
		}
		for (int i = 0; i < n; i++) {
			if (what[i] == CONN_READABLE)
				loop_read(r, ready[i], now);
			else
				now = loop_send(r, ready[i], now);
		}
	}
}

static void simulate(struct run *r)
{
	if (r->sc->client == CLIENT_EVENT_LOOP)
		simulate_loop(r);
	else
		simulate_backlog(r);
	free(r->adaptx);
	r->adaptx = NULL;
	free(r->heap.v);
	r->heap.v = NULL;
}

/* ------------------------------------------------------------------------ */
/* Measures                                                                  */
/* ------------------------------------------------------------------------ */

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* The nearest-rank p99 of n values (sorted in place); 0 when n is 0. */
static int64_t p99_of(int64_t *v, size_t n)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), cmp_i64);
	size_t rank = (size_t)ceil(0.99 * (double)n);
	return v[rank - 1];
}

/* Per tick of one run: how many were sent, how many inside, the p99. */
struct tick_stats {
	int sent[MAX_TICKS];
	int inside[MAX_TICKS];
	int64_t p99_ns[MAX_TICKS];
};

static void tick_stats(const struct run *r, struct tick_stats *t, int ticks)
{
	int64_t *lat = malloc((r->nrec ? r->nrec : 1) * sizeof(*lat));
	size_t *start = calloc((size_t)ticks + 1, sizeof(*start));
	size_t *fill = calloc((size_t)ticks, sizeof(*fill));

	if (lat == NULL || start == NULL || fill == NULL) {
		perror("matrix: malloc");
		exit(1);
	}
	memset(t, 0, sizeof(*t));
	for (size_t i = 0; i < r->nrec; i++) {
		t->sent[r->rec[i].tick]++;
		t->inside[r->rec[i].tick] += r->rec[i].inside;
	}
	for (int k = 0; k < ticks; k++)
		start[k + 1] = start[k] + (size_t)t->sent[k];
	for (size_t i = 0; i < r->nrec; i++) {
		int k = r->rec[i].tick;
		lat[start[k] + fill[k]++] = r->rec[i].latency_ns;
	}
	for (int k = 0; k < ticks; k++)
		t->p99_ns[k] = p99_of(lat + start[k], (size_t)t->sent[k]);
	free(lat);
	free(start);
	free(fill);
}

#define NEVER (-1)
#define NO_STEP (-2)

/* What the table shows for one scenario and arm, over all rounds. */
struct result {
	double goodput;      /* answers inside the SLO per second */
	double inside_pct;
	int64_t p99_ns;
	int to_capacity;     /* median round; NEVER, or NO_STEP */
	int to_slo;          /* median round; NEVER, or NO_STEP */
	int round_capacity[MAX_ROUNDS]; /* each round's, for the targets */
	int round_slo[MAX_ROUNDS];
	int round_starved[MAX_ROUNDS]; /* ticks after a step sending under
	                                  half the new capacity */
};

/* Whole ticks from the step to the first tick whose sending rate is within
 * 10% of the new capacity, and to the first tick whose requests have their
 * p99 under the SLO: the step's own tick, which the limiter has not yet
 * seen when it starts, counts as one.  0 means the arm was already there;
 * -1 that it never got there in the measured span.  An event loop sends
 * at the capacity by itself once its sockets all wait on a full queue, so
 * for it the first measure also asks the tick's p99 to be under the SLO:
 * served at the capacity, not queued at it. */
static void step_measures(const struct scenario *sc, const struct tick_stats *t,
                          int *to_capacity, int *to_slo)
{
	double target = sc->capacity(sc->step_at_s + 0.5);
	bool loop = sc->client == CLIENT_EVENT_LOOP;

	*to_capacity = NEVER;
	*to_slo = NEVER;
	for (int k = sc->step_at_s; k < sc->measured_s; k++) {
		int n = k - sc->step_at_s;
		if (*to_capacity < 0 && fabs(t->sent[k] - target) <= 0.1 * target &&
		    (!loop || t->p99_ns[k] <= SLO_NS))
			*to_capacity = n;
		if (*to_slo < 0 && t->sent[k] > 0 && t->p99_ns[k] <= SLO_NS)
			*to_slo = n;
	}
}

/* Ticks from a capacity step to the end of the run in which the arm sent
 * less than half of the capacity: the rate cut far past what the
 * downstream delivered.  The share inside the SLO cannot show that (a rate
 * at the floor is all inside), and the real ab, after the drop, sat at
 * its floor of 5 req/s for four seconds with 37 a second delivered. */
static int starved_ticks(const struct scenario *sc, const struct tick_stats *t)
{
	int n = 0;

	for (int k = sc->step_at_s; k < sc->measured_s; k++)
		n += t->sent[k] < 0.5 * sc->capacity(k + 0.5);
	return n;
}

/* Ascending, NEVER last. */
static int cmp_ticks(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	if (x == NEVER)
		x = INT32_MAX;
	if (y == NEVER)
		y = INT32_MAX;
	return (x > y) - (x < y);
}

/* The median of n rounds' tick counts (the lower one for even n): a single
 * round's p99 at 5 req/s is the slowest of five answers, so one unlucky
 * answer should not decide the figure; the targets list every round. */
static int median_ticks(const int *v, int n)
{
	int sorted[MAX_ROUNDS];

	memcpy(sorted, v, (size_t)n * sizeof(*v));
	qsort(sorted, (size_t)n, sizeof(*sorted), cmp_ticks);
	return sorted[(n - 1) / 2];
}

/* ------------------------------------------------------------------------ */
/* Output                                                                    */
/* ------------------------------------------------------------------------ */

static const char *outdir = "bench/out";
static int nrounds = DEFAULT_ROUNDS;
/* -t: the scenario and arm whose control steps are traced on stderr. */
static const char *trace_arm;
static const char *trace_scenario;

static FILE *open_out(const char *name, const char *ext)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s%s", outdir, name, ext);
	f = fopen(path, "w");
	if (f == NULL) {
		fprintf(stderr, "matrix: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	return f;
}

static void ticks_text(char *buf, size_t len, int ticks)
{
	if (ticks == NO_STEP)
		buf[0] = '\0';
	else if (ticks == NEVER)
		snprintf(buf, len, "never");
	else
		snprintf(buf, len, "%d", ticks);
}

/* The series of round one, and a gnuplot script drawing it. */
static void write_series(const struct scenario *sc,
                         const struct tick_stats *series /* [ARM_COUNT] */)
{
	FILE *dat = open_out(sc->name, ".dat");
	FILE *gp = open_out(sc->name, ".gp");

	fprintf(dat, "# %s: per tick of round one: capacity, then each arm's "
	        "sending rate (req/s) and p99 (ms)\n# t capacity", sc->title);
	for (size_t a = 0; a < ARM_COUNT; a++)
		fprintf(dat, " %s_rate %s_p99", arms[a].name, arms[a].name);
	fprintf(dat, "\n");
	for (int k = 0; k < sc->measured_s; k++) {
		fprintf(dat, "%d %.1f", k, sc->capacity(k + 0.5));
		for (size_t a = 0; a < ARM_COUNT; a++)
			fprintf(dat, " %d %.1f", series[a].sent[k],
			        (double)series[a].p99_ns[k] / (double)MS);
		fprintf(dat, "\n");
	}
	fclose(dat);

	fprintf(gp,
	        "set terminal png size 900,640 font ',9'\n"
	        "set output '%s.png'\n"
	        "set multiplot layout 2,1 title '%s (round one)'\n"
	        "set key outside right top\n"
	        "set grid\n"
	        "set xlabel 't (s)'\n"
	        "set ylabel 'sent (req/s)'\n"
	        "plot '%s.dat' using 1:2 with steps lw 3 lc 'black' "
	        "title 'capacity'",
	        sc->name, sc->title, sc->name);
	for (size_t a = 0; a < ARM_COUNT; a++)
		fprintf(gp, ", \\\n  '' using 1:%zu with lines lw %d lc '%s' "
		        "title '%s'", 3 + 2 * a, a == 0 ? 3 : 1, arms[a].color,
		        arms[a].name);
	fprintf(gp,
	        "\nset logscale y\n"
	        "set ylabel 'p99 (ms)'\n"
	        "plot %g with lines lw 3 lc 'black' dt 2 title 'SLO'",
	        (double)SLO_NS / (double)MS);
	for (size_t a = 0; a < ARM_COUNT; a++)
		fprintf(gp, ", \\\n  '%s.dat' using 1:%zu with lines lw %d "
		        "lc '%s' title '%s'", sc->name, 4 + 2 * a, a == 0 ? 3 : 1,
		        arms[a].color, arms[a].name);
	fprintf(gp, "\nunset multiplot\n");
	fclose(gp);
}

static struct result results[SCENARIO_COUNT][ARM_COUNT];

/* The best goodput among the arms that keep 90% inside the SLO; -1 when
 * none does. */
static int best_qualified(size_t s)
{
	int best = -1;

	for (size_t a = 0; a < ARM_COUNT; a++) {
		if (results[s][a].inside_pct < 90)
			continue;
		if (best < 0 || results[s][a].goodput > results[s][best].goodput)
			best = (int)a;
	}
	return best;
}

static void print_table(void)
{
	FILE *csv = open_out("matrix", ".csv");

	fprintf(csv, "scenario,arm,goodput_per_s,inside_slo_pct,p99_ms,"
	        "ticks_to_capacity,ticks_to_p99_under_slo\n");
	printf("| scenario | arm | goodput/s | %% ≤ SLO | p99 ms | "
	       "ticks to ±10%% cap | ticks to p99 ≤ SLO |\n");
	printf("|---|---|--:|--:|--:|--:|--:|\n");
	for (size_t s = 0; s < SCENARIO_COUNT; s++) {
		int best = best_qualified(s);
		for (size_t a = 0; a < ARM_COUNT; a++) {
			const struct result *res = &results[s][a];
			char cap[16], slo[16];
			bool bold = (int)a == best;

			ticks_text(cap, sizeof cap, res->to_capacity);
			ticks_text(slo, sizeof slo, res->to_slo);
			printf("| %s | %s | %s%.1f%s | %.1f | %.0f | %s | %s |\n",
			       a == 0 ? scenarios[s].name : "", arms[a].label,
			       bold ? "**" : "", res->goodput, bold ? "**" : "",
			       res->inside_pct, (double)res->p99_ns / (double)MS,
			       cap, slo);
			fprintf(csv, "%s,%s,%.2f,%.2f,%.1f,%s,%s\n", scenarios[s].name,
			        arms[a].name, res->goodput, res->inside_pct,
			        (double)res->p99_ns / (double)MS, cap, slo);
		}
	}
	fclose(csv);
}

/* Run one arm through one scenario, every round, into `res`; round one's
 * per-tick figures go to `first` when it is not NULL. */
static void measure(size_t s, const struct arm *arm, struct result *res,
                    struct tick_stats *first)
{
	static struct tick_stats ts;
	const struct scenario *sc = &scenarios[s];
	uint64_t inside = 0, sent = 0;
	int64_t *all = NULL;
	size_t nall = 0;

	memset(res, 0, sizeof(*res));
	res->to_capacity = NO_STEP;
	res->to_slo = NO_STEP;
	for (int round = 0; round < nrounds; round++) {
		struct run r;

		memset(&r, 0, sizeof r);
		r.sc = sc;
		r.arm = arm;
		r.trace = trace_arm != NULL && strcmp(trace_arm, arm->name) == 0 &&
		          strncmp(trace_scenario, sc->name, strlen(sc->name)) == 0 &&
		          trace_scenario[strlen(sc->name)] == ':';
		r.warmup_ns = sc->warmup_s * SEC;
		r.end_ns = r.warmup_ns + sc->measured_s * SEC;
		/* Every arm draws from the same stream: a change to one arm
		 * never moves another's numbers. */
		prng_seed(&r.prng, (uint64_t)s << 32 | (uint64_t)round);
		if (r.trace)
			fprintf(stderr, "-- %s, %s, round %d\n", sc->name, arm->name,
			        round + 1);
		simulate(&r);
		tick_stats(&r, &ts, sc->measured_s);
		if (round == 0 && first != NULL)
			*first = ts;
		if (sc->step_at_s >= 0) {
			step_measures(sc, &ts, &res->round_capacity[round],
			              &res->round_slo[round]);
			res->round_starved[round] = starved_ticks(sc, &ts);
		}
		all = realloc(all, (nall + r.nrec + 1) * sizeof(*all));
		if (all == NULL) {
			perror("matrix: realloc");
			exit(1);
		}
		for (size_t i = 0; i < r.nrec; i++) {
			all[nall++] = r.rec[i].latency_ns;
			inside += r.rec[i].inside;
		}
		sent += r.nrec;
		free(r.rec);
	}
	if (sc->step_at_s >= 0) {
		res->to_capacity = median_ticks(res->round_capacity, nrounds);
		res->to_slo = median_ticks(res->round_slo, nrounds);
	}
	res->goodput = (double)inside / ((double)nrounds * sc->measured_s);
	res->inside_pct = sent ? 100.0 * (double)inside / (double)sent : 0;
	res->p99_ns = p99_of(all, nall);
	free(all);
}

/* One tick target: the median against the bound, then every round. */
static void print_tick_target(const char *what, int median, const int *each,
                              int bound)
{
	char n[16];
	int met = 0;

	ticks_text(n, sizeof n, median);
	printf("- %s %s: median %s (rounds:", median >= 0 && median <= bound ?
	       "met:" : "NOT met:", what, n);
	for (int i = 0; i < nrounds; i++) {
		ticks_text(n, sizeof n, each[i]);
		printf("%s %s", i ? "," : "", n);
		met += each[i] >= 0 && each[i] <= bound;
	}
	printf("; %d of %d within)\n", met, nrounds);
}

/* Where one arm's row stands against the targets. */
struct verdict {
	double worst_inside;        /* lowest % inside the SLO */
	const char *worst_inside_at;
	double worst_ratio;         /* lowest goodput / best qualified arm's */
	const char *worst_ratio_at;
	const struct result *recover; /* the capacity-recover result */
	const struct result *drop;    /* the capacity-drop result */
	const struct result *drop_recover; /* the drop-recover result */
	const struct result *loop_recover; /* the loop-drop-recover result */
};

/* `row[s]` is the arm's result in scenario s; the best arm of each scenario
 * is taken from the main table. */
static void judge(const struct result *row, struct verdict *v)
{
	memset(v, 0, sizeof(*v));
	v->worst_inside = 101;
	v->worst_ratio = 10;
	for (size_t s = 0; s < SCENARIO_COUNT; s++) {
		int best = best_qualified(s);

		if (row[s].inside_pct < v->worst_inside) {
			v->worst_inside = row[s].inside_pct;
			v->worst_inside_at = scenarios[s].name;
		}
		if (best >= 0 && results[s][best].goodput > 0) {
			double ratio = row[s].goodput / results[s][best].goodput;
			if (ratio < v->worst_ratio) {
				v->worst_ratio = ratio;
				v->worst_ratio_at = scenarios[s].name;
			}
		}
		if (strcmp(scenarios[s].name, "capacity-recover") == 0)
			v->recover = &row[s];
		if (strcmp(scenarios[s].name, "capacity-drop") == 0)
			v->drop = &row[s];
		if (strcmp(scenarios[s].name, "drop-recover") == 0)
			v->drop_recover = &row[s];
		if (strcmp(scenarios[s].name, "loop-drop-recover") == 0)
			v->loop_recover = &row[s];
	}
}

/* The targets for the default arm (arms[0]), each with its number. */
static void print_targets(void)
{
	struct result row[SCENARIO_COUNT];
	struct verdict v;

	for (size_t s = 0; s < SCENARIO_COUNT; s++)
		row[s] = results[s][0];
	judge(row, &v);
	printf("\nTargets for the default arm:\n\n");
	printf("- %s ≥ 90%% inside the SLO in every scenario: lowest %.1f%% "
	       "(%s)\n", v.worst_inside >= 90 ? "met:" : "NOT met:",
	       v.worst_inside, v.worst_inside_at);
	printf("- %s goodput ≥ 90%% of the best arm keeping 90%% inside: lowest "
	       "%.0f%% (%s)\n", v.worst_ratio >= 0.9 ? "met:" : "NOT met:",
	       100 * v.worst_ratio, v.worst_ratio_at);
	print_tick_target("recovery 40 -> 150 within 10% of 150 in ≤ 10 ticks",
	                  v.recover->to_capacity, v.recover->round_capacity, 10);
	print_tick_target("drop 150 -> 40 p99 back under the SLO in ≤ 3 ticks",
	                  v.drop->to_slo, v.drop->round_slo, 3);
	print_tick_target("recovery after a drop (baseline learned at 150) "
	                  "within 10% of 150 in ≤ 10 ticks",
	                  v.drop_recover->to_capacity,
	                  v.drop_recover->round_capacity, 10);
	print_tick_target("the event loop's recovery after a drop within 10% "
	                  "of 150 in ≤ 10 ticks", v.loop_recover->to_capacity,
	                  v.loop_recover->round_capacity, 10);
	/* Not one of issue 4's targets: what the real ab showed them to
	 * miss, an event loop cut far under what was delivered. */
	printf("\nThe event loop after the drop, ticks sending under half the "
	       "new capacity:\n\n");
	for (size_t s = 0; s < SCENARIO_COUNT; s++) {
		if (scenarios[s].client != CLIENT_EVENT_LOOP)
			continue;
		printf("- %s: median %d (rounds:", scenarios[s].name,
		       median_ticks(row[s].round_starved, nrounds));
		for (int i = 0; i < nrounds; i++)
			printf("%s %d", i ? "," : "", row[s].round_starved[i]);
		printf(")\n");
	}
}

/*
 * The ablation (-a): the seed's law with the rules of preset none turned on
 * one by one as preset none does, all of them but one, so each rule's row
 * shows what the default loses without it.
 */
static void print_ablation(void)
{
	static const struct {
		unsigned knob;
		const char *name;
	} knobs[] = {
		{ KNOB_DELIVERED, "delivered_share" },
		{ KNOB_KNEE, "knee_ramp" },
		{ KNOB_ACCEL, "probe_acceleration" },
		{ KNOB_GOODPUT, "goodput_cut" },
	};
	const size_t variants = 2 + sizeof knobs / sizeof knobs[0];

	printf("\nAblation: the seed's law plus preset none's rules, each row "
	       "without one of them:\n\n");
	printf("| rules | lowest %% ≤ SLO | lowest goodput vs best | "
	       "recovery ticks | drop p99 ticks |\n");
	printf("|---|--:|--:|--:|--:|\n");
	for (size_t i = 0; i < variants; i++) {
		struct arm arm = arms[0];
		struct result row[SCENARIO_COUNT];
		struct verdict v;
		char label[64], rec[16], drop[16];

		arm.preset = AGILE_PRESET_SEED;
		if (i == 0) {
			arm.knobs = KNOB_ALL;
			snprintf(label, sizeof label, "all four (= default)");
		} else if (i == variants - 1) {
			arm.knobs = 0;
			snprintf(label, sizeof label, "none (= seed)");
		} else {
			arm.knobs = KNOB_ALL & ~knobs[i - 1].knob;
			snprintf(label, sizeof label, "without %s",
			         knobs[i - 1].name);
		}
		for (size_t s = 0; s < SCENARIO_COUNT; s++)
			measure(s, &arm, &row[s], NULL);
		judge(row, &v);
		ticks_text(rec, sizeof rec, v.recover->to_capacity);
		ticks_text(drop, sizeof drop, v.drop->to_slo);
		printf("| %s | %.1f (%s) | %.0f%% (%s) | %s | %s |\n", label,
		       v.worst_inside, v.worst_inside_at, 100 * v.worst_ratio,
		       v.worst_ratio_at, rec, drop);
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: matrix [-a] [-o OUTDIR] [-p PRESET] [-r ROUNDS] "
	        "[-t SCENARIO:ARM]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static struct tick_stats series[ARM_COUNT];
	bool ablation = false;
	enum agile_preset preset;
	static char label[64];
	int opt;

	while ((opt = getopt(argc, argv, "ao:p:r:t:")) != -1) {
		switch (opt) {
		case 'a':
			ablation = true;
			break;
		case 'p':
			/* The default arm under another preset: -p seed is the
			 * matrix as it was before preset none's rules. */
			if (agile_preset_parse(optarg, &preset) < 0)
				usage();
			arms[0].preset = preset;
			snprintf(label, sizeof label, "default (preset %s)",
			         agile_preset_name(preset));
			arms[0].label = label;
			break;
		case 't':
			/* SCENARIO:ARM */
			trace_scenario = optarg;
			trace_arm = strchr(optarg, ':');
			if (trace_arm == NULL)
				usage();
			trace_arm++;
			break;
		case 'o':
			outdir = optarg;
			break;
		case 'r':
			nrounds = atoi(optarg);
			if (nrounds < 1 || nrounds > MAX_ROUNDS)
				usage();
			break;
		default:
			usage();
		}
	}
	if (mkdir(outdir, 0777) < 0 && errno != EEXIST) {
		fprintf(stderr, "matrix: %s: %s\n", outdir, strerror(errno));
		return 1;
	}

	for (size_t sc = 0; sc < SCENARIO_COUNT; sc++) {
		for (size_t a = 0; a < ARM_COUNT; a++)
			measure(sc, &arms[a], &results[sc][a], &series[a]);
		write_series(&scenarios[sc], series);
	}
	print_table();
	print_targets();
	if (ablation)
		print_ablation();
	return 0;
}
