/*
 * histogram.c - the per-tick latency histogram: a fixed array of log-linear
 * buckets that many threads and processes record into without a lock, and
 * that the tick winner drains into a private snapshot to read quantiles from.
 *
 * Layout (see agile.h): values below 2^SUB_BITS ns each have their own bucket;
 * every power of two above that is split into 2^SUB_BITS equal sub-buckets.
 * Bucket group g (g >= 1) holds the values with exponent e = g + SUB_BITS - 1,
 * so the index of a value v >= 2^SUB_BITS is
 *
 *     (e - SUB_BITS + 1) << SUB_BITS  |  (v >> (e - SUB_BITS)) - 2^SUB_BITS
 *
 * which makes the index space contiguous: group 0 is the exact values, group 1
 * the 64..127 ns range (still one value per bucket), and the last group the
 * values with exponent AGILE_HIST_MAX_EXPONENT.  Its last bucket also takes
 * everything at or above 2^(MAX_EXPONENT + 1), so recording never fails.
 */
#include <math.h>
#include <stdint.h>

#include "agile.h"
#include "atomics.h"

#define SUB_COUNT (1 << AGILE_HIST_SUB_BITS)
#define LAST_INDEX (AGILE_HIST_BUCKETS - 1)
#define RESOLVED_LIMIT_NS (INT64_C(1) << (AGILE_HIST_MAX_EXPONENT + 1))

int agile_hist_index(int64_t value_ns)
{
	if (value_ns < 0)
		return 0;
	if (value_ns < SUB_COUNT)
		return (int)value_ns;
	if (value_ns >= RESOLVED_LIMIT_NS)
		return LAST_INDEX;

	/* value_ns is in [2^SUB_BITS, 2^(MAX_EXPONENT+1)), so it is non-zero
	 * and its exponent is in [SUB_BITS, MAX_EXPONENT]. */
	int exponent = 63 - __builtin_clzll((unsigned long long)value_ns);
	int shift = exponent - AGILE_HIST_SUB_BITS;
	int sub = (int)(value_ns >> shift) - SUB_COUNT;
	return ((shift + 1) << AGILE_HIST_SUB_BITS) + sub;
}

/* Out-of-range indexes are clamped rather than rejected: the callers pass
 * indexes they got from agile_hist_index() or from walking the array, and a
 * value is a more useful answer than an error code for a pure lookup. */
static int clamp_index(int index)
{
	if (index < 0)
		return 0;
	if (index > LAST_INDEX)
		return LAST_INDEX;
	return index;
}

int64_t agile_hist_bucket_low(int index)
{
	index = clamp_index(index);
	if (index < SUB_COUNT)
		return index;

	int group = index >> AGILE_HIST_SUB_BITS;
	int64_t sub = index & (SUB_COUNT - 1);
	return (SUB_COUNT + sub) << (group - 1);
}

int64_t agile_hist_bucket_mid(int index)
{
	index = clamp_index(index);
	if (index < SUB_COUNT)
		return index;

	/* A bucket of group g is 2^(g-1) ns wide.  The midpoint of the half-open
	 * range [low, low + width) is at most width/2 = low/128 away from any
	 * value in it, which is the 0.8% the header promises.  Groups 0 and 1
	 * have width 1, so their representative is the value itself. */
	int group = index >> AGILE_HIST_SUB_BITS;
	int64_t width = INT64_C(1) << (group - 1);
	return agile_hist_bucket_low(index) + width / 2;
}

void agile_hist_reset(struct agile_histogram *h)
{
	/* Stores, not a memset, so a concurrent reader never sees a torn word.
	 * A record racing with a reset may survive it or not; reset is meant
	 * for initialisation, and the drain is the concurrent-safe way to empty
	 * the histogram. */
	for (int i = 0; i < AGILE_HIST_BUCKETS; i++)
		agile__store_u64(&h->counts[i], 0);
	agile__store_u64(&h->sum_ns, 0);
}

void agile_hist_record(struct agile_histogram *h, int64_t value_ns)
{
	if (value_ns < 0)
		value_ns = 0;

	/* Two independent atomic adds, no lock and no ordering between them:
	 * the drain treats the bucket counts as the truth and only needs each
	 * field, on its own, never to lose or double an add.  There is no
	 * running total to add to: the drain sums the counts it takes, which
	 * also keeps a record caught between its two adds from making the
	 * snapshot disagree with itself.  sum_ns keeps the unclamped value and
	 * wraps modulo 2^64 only after 2^28 samples of 2^36 ns in one tick,
	 * far beyond any real per-tick volume. */
	agile__add_u64(&h->counts[agile_hist_index(value_ns)], 1);
	agile__add_u64(&h->sum_ns, (uint64_t)value_ns);
}

/* Move what a shared counter holds now into the caller's copy: read it, then
 * subtract exactly what was read.  An add that lands between the two stays
 * in the shared counter for the next drain, so nothing is lost or counted
 * twice.  An atomic exchange with zero would be just as exact, but it writes
 * every one of the ~2000 counters on every drain; most are empty, and a
 * plain load leaves their cache lines shared with the recorders in other
 * threads and processes. */
static uint64_t take_counter(uint64_t *p)
{
	uint64_t seen = agile__load_u64(p);
	if (seen != 0)
		agile__sub_u64(p, seen);
	return seen;
}

void agile_hist_drain(struct agile_histogram *h, struct agile_hist_snapshot *out)
{
	uint64_t total = 0;

	for (int i = 0; i < AGILE_HIST_BUCKETS; i++) {
		out->counts[i] = take_counter(&h->counts[i]);
		total += out->counts[i];
	}

	/* The total is the sum of the buckets the snapshot actually holds, so
	 * quantile ranks always agree with the counts.  sum_ns can be off by a
	 * sample whose two adds straddle the drain; the next drain carries
	 * it. */
	out->total = total;
	out->sum_ns = take_counter(&h->sum_ns);
}

int64_t agile_hist_quantile(const struct agile_hist_snapshot *s, double q)
{
	uint64_t total = s->total;
	if (total == 0)
		return 0;

	/* The rank is ceil(q x total), clamped to [1, total] so that q <= 0 or
	 * NaN reads the minimum and q > 1 the maximum.  q x total is computed in
	 * binary floating point, where an exact product such as 0.07 x 100
	 * comes out as 7.000000000000001 and would round up a whole rank; the
	 * product is therefore shrunk by a few ulps before the ceiling: a q
	 * within rounding error of k / total is read as k / total, which is what
	 * a caller who wrote 0.07 meant. */
	uint64_t rank = 1;
	if (q > 0) {
		double x = q * (double)total * (1.0 - 4 * 0x1p-52);
		if (x >= (double)total)
			rank = total;
		else if (x > 1)
			rank = (uint64_t)ceil(x);
	}

	uint64_t seen = 0;
	int last_nonempty = 0;
	for (int i = 0; i < AGILE_HIST_BUCKETS; i++) {
		if (s->counts[i] == 0)
			continue;
		seen += s->counts[i];
		last_nonempty = i;
		if (seen >= rank)
			return agile_hist_bucket_mid(i);
	}

	/* Only a hand-built snapshot whose total exceeds its counts gets here;
	 * its largest recorded bucket is the closest honest answer. */
	return seen == 0 ? 0 : agile_hist_bucket_mid(last_nonempty);
}

uint64_t agile_hist_count_above(const struct agile_hist_snapshot *s,
                                int64_t threshold_ns)
{
	uint64_t above = 0;

	/* Representatives grow strictly with the index, so the answer is the
	 * tail of the array from the first bucket whose representative passes
	 * the threshold.  That bucket is the threshold's own or the next one:
	 * the next bucket's representative lies above its low edge, which lies
	 * above the threshold.  Finding it directly replaces a walk down from
	 * the top that computed a representative per bucket: about 600 of
	 * them above a 100 ms threshold, which was 40% of a control step's
	 * instructions (scripts/bench-hotpath: 60,600 before, 35,000 after). */
	int first = agile_hist_index(threshold_ns);

	if (agile_hist_bucket_mid(first) <= threshold_ns)
		first++;
	for (int i = first; i <= LAST_INDEX; i++)
		above += s->counts[i];
	return above;
}
