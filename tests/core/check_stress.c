/*
 * check_stress.c - the lock-free paths under real concurrency: recorders
 * racing a drainer on one histogram, takers racing a rate changer on one
 * bucket, and both again across fork()ed processes sharing an anonymous
 * MAP_SHARED mapping, which is how the preload shares a limiter between the
 * processes of one program.
 *
 * The loops are bounded and every value is derived from the thread's index
 * and loop counter, so the expected totals are computed exactly rather than
 * estimated.  Only the interleaving varies between runs, and no interleaving
 * may change the outcome.
 */
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <pthread.h>
#include <unistd.h>

#include "agile.h"
#include "check_suites.h"

enum {
	RECORDERS = 6,
	SAMPLES_PER_RECORDER = 100000,
	TAKERS = 8,
	TAKES_PER_TAKER = 20000,
	PROCESSES = 4,
	SAMPLES_PER_PROCESS = 50000,
	TAKES_PER_PROCESS = 10000,
};

/* 1000 grants per second: a 1 ms minimum spacing. */
#define CEILING_PER_S 1000.0
#define MIN_INTERVAL_NS AGILE_NS_PER_MS

/*
 * The sample recorded by `worker` on iteration i.  Half the samples hit one
 * hot bucket so that recorders contend on the same counter; the rest spread
 * over the whole range, with negative values (recorded as 0) and values past
 * the last resolved bucket mixed in.
 */
static int64_t sample_for(int worker, int i)
{
	if (i % 2 == 0)
		return 10 * AGILE_NS_PER_MS;
	if (i % 17 == 1)
		return -(int64_t)i;
	if (i % 101 == 3)
		return INT64_MAX / 4;
	uint64_t spread = ((uint64_t)i * 2654435761u + (uint64_t)worker * 40503u)
	                  % (UINT64_C(1) << 21);
	return (int64_t)(spread << 16);
}

/* What a drain-everything reader must end up with: the expected per-bucket
 * counts and value sum (modulo 2^64, like the histogram's own sum_ns). */
struct expected {
	uint64_t counts[AGILE_HIST_BUCKETS];
	uint64_t total;
	uint64_t sum_ns;
};

static void expect_samples(struct expected *e, int workers, int per_worker)
{
	memset(e, 0, sizeof(*e));
	for (int w = 0; w < workers; w++) {
		for (int i = 0; i < per_worker; i++) {
			int64_t v = sample_for(w, i);
			e->counts[agile_hist_index(v)]++;
			e->total++;
			e->sum_ns += v < 0 ? 0 : (uint64_t)v;
		}
	}
}

/* Add one drain to a running total.  Returns 1 when the snapshot's total
 * disagrees with its own bucket counts, 0 otherwise: the drainer thread
 * counts these instead of asserting, because Check's assertions must run on
 * the test's own thread. */
static int accumulate(struct expected *acc,
                      const struct agile_hist_snapshot *snap)
{
	uint64_t sum = 0;
	for (int i = 0; i < AGILE_HIST_BUCKETS; i++) {
		acc->counts[i] += snap->counts[i];
		sum += snap->counts[i];
	}
	acc->total += snap->total;
	acc->sum_ns += snap->sum_ns;
	return snap->total != sum;
}

static void assert_same(const struct expected *got, const struct expected *want)
{
	ck_assert_uint_eq(got->total, want->total);
	ck_assert_uint_eq(got->sum_ns, want->sum_ns);
	for (int i = 0; i < AGILE_HIST_BUCKETS; i++)
		ck_assert_uint_eq(got->counts[i], want->counts[i]);
}

static int compare_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a;
	int64_t y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Sorted, the planned times of every grant must be at least the ceiling's
 * spacing apart, which also makes them distinct.  Workers store INT64_MIN
 * for a slot that was planned before their own `now`. */
static void assert_spaced(int64_t *planned, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ck_assert_int_ne(planned[i], INT64_MIN);
	qsort(planned, n, sizeof(planned[0]), compare_i64);
	for (size_t i = 1; i < n; i++)
		ck_assert_int_ge(planned[i] - planned[i - 1], MIN_INTERVAL_NS);
}

/* One taker's virtual clock: it advances by a pseudo-random step of 0 to 2
 * minimum intervals per take, so takers run sometimes ahead of the bucket
 * and sometimes behind it, and their clocks disagree with one another. */
static int64_t advance(uint64_t *lcg, int64_t now_ns)
{
	*lcg = *lcg * 6364136223846793005ULL + 1442695040888963407ULL;
	return now_ns + (int64_t)((*lcg >> 24) % (2 * MIN_INTERVAL_NS));
}

/* ------------------------------------------------------------------------ */
/* Threads                                                                   */
/* ------------------------------------------------------------------------ */

/* Shared by the threads of one test.  Static because the histogram and
 * snapshots are 16 KiB each. */
static struct agile_histogram shared_hist;
static struct agile_bucket shared_bucket;
static struct expected drained;
static struct expected wanted;
static int64_t planned_by_thread[TAKERS * TAKES_PER_TAKER];
static uint64_t drains;
static uint64_t inconsistent_drains;
static uint64_t stop;
static pthread_barrier_t start_line;

static void *record_worker(void *arg)
{
	int worker = (int)(intptr_t)arg;

	pthread_barrier_wait(&start_line);
	for (int i = 0; i < SAMPLES_PER_RECORDER; i++) {
		/* Halfway through, wait for one drain to have happened, so at
		 * least one drain provably overlaps the recording. */
		if (i == SAMPLES_PER_RECORDER / 2)
			while (__atomic_load_n(&drains, __ATOMIC_ACQUIRE) == 0)
				sched_yield();
		agile_hist_record(&shared_hist, sample_for(worker, i));
	}
	return NULL;
}

static void *drain_worker(void *arg)
{
	static struct agile_hist_snapshot snap;
	(void)arg;

	pthread_barrier_wait(&start_line);
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		agile_hist_drain(&shared_hist, &snap);
		inconsistent_drains += accumulate(&drained, &snap);
		__atomic_add_fetch(&drains, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

START_TEST(stress_hist_record_vs_drain)
{
	pthread_t recorders[RECORDERS], drainer;
	static struct agile_hist_snapshot last;

	agile_hist_reset(&shared_hist);
	memset(&drained, 0, sizeof(drained));
	drains = 0;
	inconsistent_drains = 0;
	stop = 0;
	ck_assert_int_eq(pthread_barrier_init(&start_line, NULL, RECORDERS + 1), 0);

	for (int t = 0; t < RECORDERS; t++)
		ck_assert_int_eq(pthread_create(&recorders[t], NULL, record_worker,
		                                (void *)(intptr_t)t), 0);
	ck_assert_int_eq(pthread_create(&drainer, NULL, drain_worker, NULL), 0);
	for (int t = 0; t < RECORDERS; t++)
		ck_assert_int_eq(pthread_join(recorders[t], NULL), 0);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	ck_assert_int_eq(pthread_join(drainer, NULL), 0);
	pthread_barrier_destroy(&start_line);

	/* Whatever the drainer left behind is still in the histogram. */
	agile_hist_drain(&shared_hist, &last);
	ck_assert_int_eq(accumulate(&drained, &last), 0);

	expect_samples(&wanted, RECORDERS, SAMPLES_PER_RECORDER);
	assert_same(&drained, &wanted);
	ck_assert_uint_ge(drains, 1);
	ck_assert_uint_eq(inconsistent_drains, 0);
	ck_assert_uint_eq(shared_hist.sum_ns, 0);
}
END_TEST

static void *take_worker(void *arg)
{
	int worker = (int)(intptr_t)arg;
	int64_t *planned = &planned_by_thread[worker * TAKES_PER_TAKER];
	uint64_t lcg = (uint64_t)worker + 1;
	int64_t now = 0;

	pthread_barrier_wait(&start_line);
	for (int i = 0; i < TAKES_PER_TAKER; i++) {
		now = advance(&lcg, now);
		planned[i] = agile_bucket_take(&shared_bucket, now);
		/* No ck_assert off the test's thread: a slot in the past is
		 * stored as a sentinel that assert_spaced() cannot miss. */
		if (planned[i] < now)
			planned[i] = INT64_MIN;
	}
	return NULL;
}

static void *rate_worker(void *arg)
{
	uint64_t lcg = 99;
	(void)arg;

	/* Ask for anything from 1 to 10x the ceiling, as a buggy controller
	 * might; the bucket must clamp every one of them. */
	pthread_barrier_wait(&start_line);
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
		agile_bucket_set_rate(&shared_bucket,
		                      1.0 + (double)((lcg >> 33) % 10000));
	}
	return NULL;
}

START_TEST(stress_bucket_take_threads)
{
	pthread_t takers[TAKERS], changer;
	const size_t n = TAKERS * TAKES_PER_TAKER;

	ck_assert_int_eq(agile_bucket_init(&shared_bucket, CEILING_PER_S,
	                                   CEILING_PER_S), 0);
	ck_assert_int_eq(shared_bucket.min_interval_ns, MIN_INTERVAL_NS);
	stop = 0;
	ck_assert_int_eq(pthread_barrier_init(&start_line, NULL, TAKERS + 1), 0);

	for (int t = 0; t < TAKERS; t++)
		ck_assert_int_eq(pthread_create(&takers[t], NULL, take_worker,
		                                (void *)(intptr_t)t), 0);
	ck_assert_int_eq(pthread_create(&changer, NULL, rate_worker, NULL), 0);
	for (int t = 0; t < TAKERS; t++)
		ck_assert_int_eq(pthread_join(takers[t], NULL), 0);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	ck_assert_int_eq(pthread_join(changer, NULL), 0);
	pthread_barrier_destroy(&start_line);

	ck_assert_uint_eq(shared_bucket.grants, n);
	assert_spaced(planned_by_thread, n);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Processes                                                                 */
/* ------------------------------------------------------------------------ */

/* Everything the processes share, in one anonymous MAP_SHARED mapping. */
struct shared_area {
	struct agile_histogram hist;
	struct agile_bucket bucket;
	uint64_t gate;    /* 1 once every child is forked: start together */
	int64_t planned[PROCESSES * TAKES_PER_PROCESS];
};

/* A child's whole life.  It must not use ck_assert (a failure would be
 * reported from the wrong process); problems show up in what it leaves in
 * the shared area, and its exit status says it ran to the end. */
static void run_child(struct shared_area *area, int worker)
{
	int64_t *planned = &area->planned[worker * TAKES_PER_PROCESS];
	uint64_t lcg = (uint64_t)worker + 1000;
	int64_t now = 0;
	int takes = 0;

	while (!__atomic_load_n(&area->gate, __ATOMIC_ACQUIRE))
		sched_yield();

	/* Interleave the two jobs so records and takes race each other too. */
	for (int i = 0; i < SAMPLES_PER_PROCESS; i++) {
		agile_hist_record(&area->hist, sample_for(worker, i));
		if (i % (SAMPLES_PER_PROCESS / TAKES_PER_PROCESS) == 0 &&
		    takes < TAKES_PER_PROCESS) {
			now = advance(&lcg, now);
			int64_t slot = agile_bucket_take(&area->bucket, now);
			planned[takes++] = slot < now ? INT64_MIN : slot;
		}
	}
	_exit(takes == TAKES_PER_PROCESS ? 0 : 1);
}

START_TEST(stress_fork_shared_mapping)
{
	static struct agile_hist_snapshot snap;
	int live = PROCESSES;

	struct shared_area *area = mmap(NULL, sizeof(*area),
	                                PROT_READ | PROT_WRITE,
	                                MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(area, MAP_FAILED);
	agile_hist_reset(&area->hist);
	ck_assert_int_eq(agile_bucket_init(&area->bucket, CEILING_PER_S,
	                                   CEILING_PER_S), 0);
	memset(&drained, 0, sizeof(drained));

	for (int w = 0; w < PROCESSES; w++) {
		pid_t pid = fork();
		if (pid == 0)
			run_child(area, w);
		if (pid == -1) {
			/* Open the gate first, so the children already forked
			 * finish instead of spinning on it forever. */
			__atomic_store_n(&area->gate, 1, __ATOMIC_RELEASE);
			ck_abort_msg("fork() failed for child %d", w);
		}
	}
	__atomic_store_n(&area->gate, 1, __ATOMIC_RELEASE);

	/* The parent is the drainer, as the tick winner would be, until every
	 * child has exited. */
	while (live > 0) {
		agile_hist_drain(&area->hist, &snap);
		ck_assert_int_eq(accumulate(&drained, &snap), 0);

		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);
		ck_assert_int_ne(pid, -1);
		if (pid > 0) {
			ck_assert(WIFEXITED(status));
			ck_assert_int_eq(WEXITSTATUS(status), 0);
			live--;
		}
	}
	agile_hist_drain(&area->hist, &snap);
	ck_assert_int_eq(accumulate(&drained, &snap), 0);

	expect_samples(&wanted, PROCESSES, SAMPLES_PER_PROCESS);
	assert_same(&drained, &wanted);

	const size_t n = PROCESSES * TAKES_PER_PROCESS;
	ck_assert_uint_eq(area->bucket.grants, n);
	assert_spaced(area->planned, n);

	ck_assert_int_eq(munmap(area, sizeof(*area)), 0);
}
END_TEST

Suite *stress_suite(void)
{
	Suite *s = suite_create("stress");

	/* Generous timeouts: under valgrind the threads run one at a time. */
	TCase *threads = tcase_create("threads");
	tcase_set_timeout(threads, 120);
	tcase_add_test(threads, stress_hist_record_vs_drain);
	tcase_add_test(threads, stress_bucket_take_threads);
	suite_add_tcase(s, threads);

	TCase *processes = tcase_create("processes");
	tcase_set_timeout(processes, 120);
	tcase_add_test(processes, stress_fork_shared_mapping);
	suite_add_tcase(s, processes);

	return s;
}
