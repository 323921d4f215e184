/*
 * hotpath.c - what libagile's hot-path calls cost: ns per call, on one
 * thread and with two threads hammering one shared limiter, and (through
 * scripts/bench-hotpath and callgrind) instructions per call.
 *
 * The calls measured are the ones a paced request makes (observe, take,
 * the concurrency limiter's try-take and release, the tick-if-due check every
 * event pays, the check of the whole limiter the preload makes before each
 * grant it takes from the shared file) plus the control step itself, which
 * runs once per tick.  A
 * clock_gettime(CLOCK_MONOTONIC) is timed alongside: it is what a caller pays
 * to get the `now_ns` the core takes as an argument, and the row "take +
 * clock read" is a take as a real caller issues it, the figure comparable to
 * a leaky bucket that reads the clock itself (uber-go/ratelimit's 37 ns/op).
 *
 * Method.  Each run times a loop of calls by the calling thread's CPU time
 * (CLOCK_THREAD_CPUTIME_ID), so a run that another process preempts on a
 * busy host is not charged for the time it spent off the CPU, and divides
 * by the number of calls; the loop's own overhead (an index increment and a
 * load) is included, so the figures are a slight overestimate.  A run is
 * repeated (-r, 21 by default) and the median kept.  The contended column
 * pins two threads to two CPUs, starts them together at a barrier, and
 * reports the time per call as each thread sees it (the mean of the two
 * threads' ns/call).  A contended run counts only when both threads were
 * on their CPUs through it (see ran_together); with a single CPU there is
 * no such run and the column says n/a.  It measures cache lines moving
 * between cores, so it depends on where the host placed the two CPUs: on a
 * virtual machine it varies several-fold between invocations while the
 * one-thread column and the instruction counts stay put.
 *
 * The control step (tick) is timed one call at a time, because it needs
 * samples recorded between calls to have work to do: 100 observes (untimed)
 * precede each step, whose clock reads are subtracted using the measured
 * cost of a clock read.  Contended, the second thread observes without
 * pause while the first runs the steps.
 *
 * Observed round trips are drawn log-uniformly from 200 us to 20 ms (a
 * seeded table), so records spread over ~400 histogram buckets as real
 * traffic does instead of hitting one counter.
 *
 * Usage: hotpath [-r RUNS] [-i FILE]   print the markdown table; FILE holds
 *                                       "op instructions-per-call" lines
 *        hotpath -c OP -n CALLS         call OP CALLS times through its
 *                                       noinline wrapper op_OP, untimed, for
 *                                       callgrind --toggle-collect=op_OP
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "agile.h"

#define RTT_TABLE 1024 /* a power of two: indexed with a mask */
#define DEFAULT_RUNS 21
#define MAX_RUNS 101
#define TICK_BATCH 100 /* observes recorded before each timed step */

static int64_t rtt_table[RTT_TABLE];

/* The two limiters every op works on; shared by both threads when
 * contended.  Aligned as the state file aligns a slot's limiter. */
static struct agile_rate_limiter rate __attribute__((aligned(64)));
static struct agile_conc_limiter conc __attribute__((aligned(64)));

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * AGILE_NS_PER_S + ts.tv_nsec;
}

/* CPU time of the calling thread: a run that another process preempts on a
 * busy host is not charged for the time it spent off the CPU. */
static int64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * AGILE_NS_PER_S + ts.tv_nsec;
}

/* --- the operations, each behind a noinline wrapper ----------------------- */

/* The wrappers are what callgrind's --toggle-collect names, so the counted
 * instructions are exactly one call plus the wrapper's call and return. */
#define OP __attribute__((noinline))

OP int64_t op_clock(void);
OP void op_observe(uint64_t i);
OP int64_t op_take(int64_t now);
OP int64_t op_take_clock(void);
OP void op_try_release(void);
OP bool op_tick_check(int64_t now);
OP int op_validate(int64_t now);
OP int op_bucket_check(int64_t now);
OP void op_tick(int64_t now);

OP int64_t op_clock(void)
{
	return now_ns();
}

OP void op_observe(uint64_t i)
{
	agile_rate_observe(&rate, rtt_table[i & (RTT_TABLE - 1)]);
}

OP int64_t op_take(int64_t now)
{
	return agile_rate_take(&rate, now);
}

OP int64_t op_take_clock(void)
{
	return agile_rate_take(&rate, now_ns());
}

OP void op_try_release(void)
{
	if (agile_conc_try_take(&conc))
		agile_conc_release(&conc);
}

/* The check every event makes; hardly ever due here (see init_limiters). */
OP bool op_tick_check(int64_t now)
{
	return agile_rate_tick_if_due(&rate, now);
}

/* The configuration the preload checks a slot's limiter against: its own
 * copy, as preload/destinations.c keeps one, not the limiter's. */
static struct agile_resolved expected;
/* And the bucket's bounds, worked out from it once per destination. */
static struct agile_bucket_bounds expected_bounds;

OP int op_validate(int64_t now)
{
	return agile_rate_validate(&rate, &expected, now, NULL);
}

/* The check before each grant: the bucket against its bounds. */
OP int op_bucket_check(int64_t now)
{
	return agile_bucket_check(&rate.bucket, &expected_bounds, now, NULL);
}

OP void op_tick(int64_t now)
{
	agile_rate_tick(&rate, now);
}

/* --- set-up --------------------------------------------------------------- */

static void fill_rtt_table(void)
{
	uint64_t x = 0x9e3779b97f4a7c15u; /* splitmix64, seeded: same table */

	for (int i = 0; i < RTT_TABLE; i++) {
		x += 0x9e3779b97f4a7c15u;
		uint64_t z = x;
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
		z ^= z >> 31;
		double u = (double)(z >> 11) / 9007199254740992.0;
		rtt_table[i] = (int64_t)(200e3 * pow(100.0, u));
	}
}

/* Fresh limiters with a ceiling far above any load a benchmark offers, so
 * takes are never spaced out and the tick check is never due. */
static void init_limiters(void)
{
	struct agile_config rc = {
		.max_rate = 1000000000,
		.slo_ns = 100 * AGILE_NS_PER_MS,
	};
	struct agile_config cc = {
		.max_rate = 1000,
		.slo_ns = 100 * AGILE_NS_PER_MS,
	};

	/* The longest tick, a minute, from now: op_tick_check does not win
	 * in the first minute of the run, and once a minute at most after. */
	rc.tick_ns = AGILE_TICK_MAX_NS;
	if (agile_rate_init(&rate, &rc, now_ns()) < 0 ||
	    agile_conc_init(&conc, &cc, 0) < 0) {
		fprintf(stderr, "hotpath: limiter init failed\n");
		exit(1);
	}
	expected = rate.loop.config;
	agile_bucket_bounds(&expected, &expected_bounds);
}

/* --- timing --------------------------------------------------------------- */

enum op_id {
	OP_CLOCK,
	OP_OBSERVE,
	OP_TAKE,
	OP_TAKE_CLOCK,
	OP_TRY_RELEASE,
	OP_TICK_CHECK,
	OP_VALIDATE,
	OP_BUCKET_CHECK,
	OP_TICK,
	OP_VM_READ,
	OP_PAGE_PROBE,
	OP_COUNT
};

struct op_desc {
	const char *name;  /* as given to -c and in -f output */
	const char *label; /* the table's row */
	uint64_t calls;    /* per timed run */
	double target_ns;  /* single-thread target; 0 none */
};

static const struct op_desc ops[OP_COUNT] = {
	[OP_CLOCK] = {"clock", "clock_gettime(CLOCK_MONOTONIC)", 200000, 0},
	[OP_OBSERVE] = {"observe", "observe (rate limiter)", 200000, 20},
	[OP_TAKE] = {"take", "take (caller's now)", 200000, 40},
	[OP_TAKE_CLOCK] = {"take_clock", "take + clock read", 200000, 40},
	[OP_TRY_RELEASE] = {"try_release",
	                    "try-take + release (concurrency)", 200000, 0},
	[OP_TICK_CHECK] = {"tick_check", "tick_if_due, not due", 200000, 0},
	[OP_VALIDATE] = {"validate", "validate: the preload's whole-limiter "
	                 "check, once a step is due", 200000, 0},
	[OP_BUCKET_CHECK] = {"bucket_check", "bucket check: the preload's "
	                     "check before each grant", 200000, 0},
	[OP_TICK] = {"tick", "tick: drain + control step", 2000, 0},
	[OP_VM_READ] = {"vm_read", "process_vm_readv of one byte of one's "
	                "own (the preload's check of a send, before)",
	                20000, 0},
	[OP_PAGE_PROBE] = {"page_probe", "rt_sigprocmask probe of one page "
	                   "(the check of a send of up to 4 pages, now)",
	                   20000, 0},
};

/* The two ways preload/usermem.c asks the kernel whether the program's
 * memory can be read: process_vm_readv on the process itself (the id
 * cached, as the preload caches it), or the rt_sigprocmask probe, which
 * copies 8 bytes of the page in and rejects its invalid `how`. */
static char probe_bytes[64];
static pid_t self_pid;

OP void op_vm_read(void);
OP void op_vm_read(void)
{
	char sink;
	struct iovec local = { &sink, 1 }, remote = { probe_bytes, 1 };

	(void)process_vm_readv(self_pid, &local, 1, &remote, 1, 0);
}

OP void op_page_probe(void);
OP void op_page_probe(void)
{
	(void)syscall(SYS_rt_sigprocmask, -1L,
	              (long)((uintptr_t)probe_bytes & ~(uintptr_t)4095), 0L,
	              (long)(_NSIG / 8));
}

/* Measured once, subtracted from each timed control step. */
static double clock_cost_ns;

/* Run `calls` calls of op; returns ns per call.  `stream` offsets the
 * round-trip table so two threads do not record in lockstep. */
static double run_op(enum op_id op, uint64_t calls, uint64_t stream)
{
	int64_t start = thread_cpu_ns();
	int64_t virtual_now = now_ns();
	double tick_ns = 0;

	switch (op) {
	case OP_CLOCK:
		for (uint64_t i = 0; i < calls; i++)
			(void)op_clock();
		break;
	case OP_OBSERVE:
		for (uint64_t i = 0; i < calls; i++)
			op_observe(i + stream);
		break;
	case OP_TAKE:
		/* The caller's clock advances 100 ns a call. */
		for (uint64_t i = 0; i < calls; i++)
			(void)op_take(virtual_now + (int64_t)i * 100);
		break;
	case OP_TAKE_CLOCK:
		for (uint64_t i = 0; i < calls; i++)
			(void)op_take_clock();
		break;
	case OP_TRY_RELEASE:
		for (uint64_t i = 0; i < calls; i++)
			op_try_release();
		break;
	case OP_TICK_CHECK:
		for (uint64_t i = 0; i < calls; i++)
			(void)op_tick_check(virtual_now);
		break;
	case OP_VALIDATE:
		for (uint64_t i = 0; i < calls; i++)
			if (op_validate(virtual_now) != 0)
				abort(); /* a healthy limiter passes */
		break;
	case OP_BUCKET_CHECK:
		for (uint64_t i = 0; i < calls; i++)
			if (op_bucket_check(virtual_now) != 0)
				abort();
		break;
	case OP_TICK: {
		/* stream 0 records its own samples; the contended run's
		 * second thread records for it (stream != 0 never ticks). */
		int64_t total = 0;

		for (uint64_t i = 0; i < calls; i++) {
			if (stream == 0)
				for (int k = 0; k < TICK_BATCH; k++)
					op_observe(i * TICK_BATCH + (uint64_t)k);
			int64_t t0 = now_ns();
			op_tick(t0);
			total += now_ns() - t0;
		}
		tick_ns = (double)total / (double)calls - clock_cost_ns;
		return tick_ns < 0 ? 0 : tick_ns;
	}
	case OP_VM_READ:
		for (uint64_t i = 0; i < calls; i++)
			op_vm_read();
		break;
	case OP_PAGE_PROBE:
		for (uint64_t i = 0; i < calls; i++)
			op_page_probe();
		break;
	case OP_COUNT:
		break;
	}
	return (double)(thread_cpu_ns() - start) / (double)calls;
}

/* --- two threads ---------------------------------------------------------- */

struct worker {
	pthread_t thread;
	int cpu;         /* -1: not pinned */
	enum op_id op;
	uint64_t calls;
	uint64_t stream;
	double ns_per_call;
	int64_t wall_start_ns; /* when the thread started and ended its calls */
	int64_t wall_end_ns;
	int64_t cpu_ns;        /* CPU time it spent in between */
};

static pthread_barrier_t start_line;
static int observer_stop;

static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	(void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	pin(w->cpu);
	pthread_barrier_wait(&start_line);
	w->wall_start_ns = now_ns();
	w->cpu_ns = thread_cpu_ns();
	w->ns_per_call = run_op(w->op, w->calls, w->stream);
	w->cpu_ns = thread_cpu_ns() - w->cpu_ns;
	w->wall_end_ns = now_ns();
	return NULL;
}

/* The contended tick's second thread: observe until told to stop. */
static void *observer_main(void *arg)
{
	struct worker *w = arg;
	uint64_t i = 0;

	pin(w->cpu);
	pthread_barrier_wait(&start_line);
	w->wall_start_ns = now_ns();
	w->cpu_ns = thread_cpu_ns();
	while (!__atomic_load_n(&observer_stop, __ATOMIC_ACQUIRE))
		op_observe(i++);
	w->cpu_ns = thread_cpu_ns() - w->cpu_ns;
	w->wall_end_ns = now_ns();
	return NULL;
}

/*
 * Whether the two threads really ran side by side.  On a busy host one of
 * them can be descheduled for most of a run; the other then runs alone and
 * the run measures no contention at all.  A run counts only when each thread
 * was on its CPU for at least 90% of its span and the spans overlap for at
 * least 90% of the first thread's (the contended tick's observer runs from
 * before the first thread's calls to after them).
 */
static bool ran_together(const struct worker *w)
{
	int64_t from = w[0].wall_start_ns > w[1].wall_start_ns ?
	               w[0].wall_start_ns : w[1].wall_start_ns;
	int64_t to = w[0].wall_end_ns < w[1].wall_end_ns ? w[0].wall_end_ns
	                                                 : w[1].wall_end_ns;
	int64_t span0 = w[0].wall_end_ns - w[0].wall_start_ns;

	for (int t = 0; t < 2; t++) {
		int64_t span = w[t].wall_end_ns - w[t].wall_start_ns;

		if (span <= 0 || (double)w[t].cpu_ns < 0.9 * (double)span)
			return false;
	}
	return (double)(to - from) >= 0.9 * (double)span0;
}

/* The CPUs this process may run on; the first two are used for pinning. */
static void usable_cpus(int *first, int *second)
{
	cpu_set_t set;

	*first = *second = -1;
	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return;
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &set))
			continue;
		if (*first < 0) {
			*first = c;
		} else {
			*second = c;
			return;
		}
	}
}

/* One contended run; *together says whether it counts (ran_together). */
static double run_contended(enum op_id op, uint64_t calls, bool *together)
{
	struct worker w[2];
	int cpu0, cpu1;

	usable_cpus(&cpu0, &cpu1);
	if (cpu1 < 0)
		cpu0 = -1; /* one CPU: let the scheduler share it */
	pthread_barrier_init(&start_line, NULL, 2);
	__atomic_store_n(&observer_stop, 0, __ATOMIC_RELEASE);
	for (int t = 0; t < 2; t++) {
		w[t] = (struct worker){
			.cpu = t == 0 ? cpu0 : cpu1,
			.op = op,
			.calls = calls,
			.stream = (uint64_t)t * (RTT_TABLE / 2),
		};
		void *(*fn)(void *) = op == OP_TICK && t == 1 ? observer_main
		                                              : worker_main;
		if (pthread_create(&w[t].thread, NULL, fn, &w[t]) != 0) {
			fprintf(stderr, "hotpath: pthread_create: %s\n",
			        strerror(errno));
			exit(1);
		}
	}
	pthread_join(w[0].thread, NULL);
	__atomic_store_n(&observer_stop, 1, __ATOMIC_RELEASE);
	pthread_join(w[1].thread, NULL);
	pthread_barrier_destroy(&start_line);
	*together = ran_together(w);
	if (op == OP_TICK)
		return w[0].ns_per_call;
	return (w[0].ns_per_call + w[1].ns_per_call) / 2;
}

/* --- medians -------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The median of `runs` runs; NAN when no contended run had both threads
 * running together in as many as 20 x runs tries. */
static double measure(enum op_id op, int runs, bool contended)
{
	double v[MAX_RUNS];
	int kept = 0;

	init_limiters();
	/* One untimed run warms caches, page tables and the branch
	 * predictors. */
	(void)run_op(op, ops[op].calls / 10 + 1, 0);
	for (int tries = 0; kept < runs && tries < 20 * runs; tries++) {
		bool together = true;
		/* Contended runs are a tenth as long: a short run is more
		 * likely to find both CPUs free on a busy host. */
		double ns = contended ?
			run_contended(op, ops[op].calls / 10, &together) :
			run_op(op, ops[op].calls, 0);

		if (together)
			v[kept++] = ns;
	}
	return kept > 0 ? median(v, kept) : NAN;
}

/* --- callgrind mode ------------------------------------------------------- */

static int count_op(const char *name, uint64_t calls)
{
	for (int op = 0; op < OP_COUNT; op++) {
		if (strcmp(ops[op].name, name) != 0)
			continue;
		init_limiters();
		if (op == OP_TICK) {
			/* The same work as timed: 100 samples per step. */
			for (uint64_t i = 0; i < calls; i++) {
				for (int k = 0; k < TICK_BATCH; k++)
					op_observe(i * TICK_BATCH + (uint64_t)k);
				op_tick((int64_t)(i + 1) * AGILE_NS_PER_S);
			}
		} else if (op == OP_OBSERVE) {
			for (uint64_t i = 0; i < calls; i++)
				op_observe(i);
		} else {
			(void)run_op((enum op_id)op, calls, 0);
		}
		return 0;
	}
	fprintf(stderr, "hotpath: unknown op %s\n", name);
	return 2;
}

/* Read "op instructions-per-call" lines (scripts/bench-hotpath writes them
 * from callgrind's counts); ops missing from the file print as "-". */
static void read_instructions(const char *path, double *out)
{
	FILE *f = fopen(path, "r");
	char name[32];
	double v;

	for (int op = 0; op < OP_COUNT; op++)
		out[op] = -1;
	if (f == NULL) {
		fprintf(stderr, "hotpath: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	while (fscanf(f, "%31s %lf", name, &v) == 2)
		for (int op = 0; op < OP_COUNT; op++)
			if (strcmp(ops[op].name, name) == 0)
				out[op] = v;
	fclose(f);
}

static void print_table(const double *single, const double *contended,
                        const double *instructions, int runs)
{
	printf("| call | ns/call, 1 thread | ns/call, 2 threads contending | "
	       "instructions/call | target (1 thread) |\n"
	       "|---|---:|---:|---:|---|\n");
	for (int op = 0; op < OP_COUNT; op++) {
		char target[64] = "", instr[32] = "-", both[32] = "n/a";

		if (ops[op].target_ns > 0)
			snprintf(target, sizeof(target), "<= %.0f ns: %s",
			         ops[op].target_ns,
			         single[op] <= ops[op].target_ns ? "met"
			                                         : "MISSED");
		if (instructions[op] >= 0)
			snprintf(instr, sizeof(instr), "%.0f", instructions[op]);
		if (!isnan(contended[op]))
			snprintf(both, sizeof(both), "%.1f", contended[op]);
		printf("| %s | %.1f | %s | %s | %s |\n", ops[op].label,
		       single[op], both, instr, target);
	}
	printf("\nns/call: median of %d runs; instructions: callgrind, "
	       "user space only.\n", runs);
}

int main(int argc, char **argv)
{
	int runs = DEFAULT_RUNS;
	const char *count = NULL, *instr_path = NULL;
	uint64_t calls = 100000;
	double single[OP_COUNT], contended[OP_COUNT], instructions[OP_COUNT];
	int c;

	self_pid = getpid();

	while ((c = getopt(argc, argv, "r:i:c:n:")) != -1) {
		switch (c) {
		case 'r':
			runs = atoi(optarg);
			break;
		case 'i':
			instr_path = optarg;
			break;
		case 'c':
			count = optarg;
			break;
		case 'n':
			calls = strtoull(optarg, NULL, 10);
			break;
		default:
			fprintf(stderr, "usage: hotpath [-r RUNS] [-i FILE] | "
			        "-c OP -n CALLS\n");
			return 2;
		}
	}
	if (runs < 1 || runs > MAX_RUNS) {
		fprintf(stderr, "hotpath: -r takes 1 to %d\n", MAX_RUNS);
		return 2;
	}
	fill_rtt_table();
	if (count != NULL)
		return count_op(count, calls);

	for (int op = 0; op < OP_COUNT; op++)
		instructions[op] = -1;
	if (instr_path != NULL)
		read_instructions(instr_path, instructions);
	clock_cost_ns = measure(OP_CLOCK, runs, false);
	for (int op = 0; op < OP_COUNT; op++) {
		single[op] = op == OP_CLOCK ? clock_cost_ns
		                            : measure((enum op_id)op, runs, false);
		contended[op] = measure((enum op_id)op, runs, true);
	}
	print_table(single, contended, instructions, runs);
	return 0;
}
