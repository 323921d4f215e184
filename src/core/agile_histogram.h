/*
 * agile_histogram.h - the latency histogram the controller reads each
 * tick (histogram.c).
 *
 * A part of libagile's interface: a program includes agile.h, which
 * includes every part in order.
 */
#ifndef AGILE_HISTOGRAM_H
#define AGILE_HISTOGRAM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Log-linear buckets: values below 2^AGILE_HIST_SUB_BITS ns are exact; above,
 * each power of two is split into 2^AGILE_HIST_SUB_BITS sub-buckets, so a
 * bucket is at most 1/64 = 1.6% of its value wide and the reported midpoint
 * is within 0.8% of any value in it.  Values from 0 to 2^36 ns (68.7 s) are
 * resolved; larger ones land in the last bucket.  16 KiB, no allocation.
 */
#define AGILE_HIST_SUB_BITS 6
#define AGILE_HIST_MAX_EXPONENT 35
#define AGILE_HIST_BUCKETS \
	((AGILE_HIST_MAX_EXPONENT - AGILE_HIST_SUB_BITS + 2) << AGILE_HIST_SUB_BITS)

/* No running total: it would cost every record a second contended atomic
 * add, and the drain sums the counts it takes anyway. */
struct agile_histogram {
	uint64_t counts[AGILE_HIST_BUCKETS];
	uint64_t sum_ns; /* sum of recorded values, for a mean */
};

/* A private copy taken by agile_hist_drain(); never shared. */
struct agile_hist_snapshot {
	uint64_t counts[AGILE_HIST_BUCKETS];
	uint64_t total;  /* sum of counts */
	uint64_t sum_ns;
};

void agile_hist_reset(struct agile_histogram *h);
/* Lock-free, allocation-free; safe from many threads and processes.
 * Negative values record as 0. */
void agile_hist_record(struct agile_histogram *h, int64_t value_ns);
/*
 * Move the current counts into `out` and subtract exactly what was read, so
 * a sample recorded concurrently is counted in this drain or the next one,
 * never lost and never counted twice.
 */
void agile_hist_drain(struct agile_histogram *h, struct agile_hist_snapshot *out);
int agile_hist_index(int64_t value_ns);
int64_t agile_hist_bucket_low(int index);  /* smallest value in the bucket */
int64_t agile_hist_bucket_mid(int index);  /* representative value */
/* The q-quantile (0 < q <= 1): the representative value of the bucket
 * holding the ceil(q x total)-th smallest sample; 0 when empty. */
int64_t agile_hist_quantile(const struct agile_hist_snapshot *s, double q);
/* How many samples lie above threshold_ns (bucket representatives). */
uint64_t agile_hist_count_above(const struct agile_hist_snapshot *s,
                                int64_t threshold_ns);

#ifdef __cplusplus
}
#endif

#endif /* AGILE_HISTOGRAM_H */
