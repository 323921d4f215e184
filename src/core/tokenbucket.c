/*
 * tokenbucket.c - a token bucket that keeps credit: rate_per_s tokens accrue
 * per second up to the burst, and a call spends n of them.
 *
 * Tokens are counted in integer units of 1e-9 token.  A refill over d
 * nanoseconds is d * rate_per_s units, which is an exact integer whenever
 * the rate is, so the bucket's arithmetic on a virtual clock has no
 * rounding drift: twenty refills of 0.05 token each make exactly one
 * token.  For a fractional rate the refill is rounded down, and next()
 * searches upward from its estimate so that a take after the wait it
 * reports always succeeds.
 */
#include <errno.h>
#include <math.h>

#include "agile_resilience.h"
#include "resilience_internal.h"

/* Units in n tokens, or -1 when n is negative, NaN or too large to count. */
static int64_t units_of(double n)
{
	if (!(n >= 0))
		return -1;
	double units = ceil(n * (double)AGILE_TOKEN_UNITS);
	if (units >= 9.2e18)
		return -1;
	return (int64_t)units;
}

/* Units accrued over elapsed_ns > 0, saturating at `room` (what fits). */
static int64_t refill(const struct agile_token_bucket *b, int64_t elapsed_ns,
                      int64_t room)
{
	double add = floor((double)elapsed_ns * b->rate_per_s);
	return add >= (double)room ? room : (int64_t)add;
}

int agile_token_bucket_init(struct agile_token_bucket *b, double rate_per_s,
                            double burst, int64_t now_ns)
{
	if (!(rate_per_s >= 0) || isinf(rate_per_s))
		return -EINVAL;
	if (!(burst > 0))
		burst = rate_per_s;
	if (burst < 1)
		burst = 1;
	int64_t burst_units = units_of(burst);
	if (burst_units < 0)
		return -EINVAL;
	b->rate_per_s = rate_per_s;
	b->burst_units = burst_units;
	b->tokens_units = burst_units;
	b->at_ns = now_ns;
	return 0;
}

int64_t agile__token_bucket_units(const struct agile_token_bucket *b,
                                  int64_t now_ns)
{
	if (now_ns <= b->at_ns)
		return b->tokens_units;
	/* The unsigned difference is exact for now_ns > at_ns; past INT64_MAX
	 * nanoseconds the bucket is full anyway. */
	uint64_t gap = (uint64_t)now_ns - (uint64_t)b->at_ns;
	int64_t elapsed_ns = gap > (uint64_t)INT64_MAX ? INT64_MAX
	                                               : (int64_t)gap;
	return b->tokens_units +
	       refill(b, elapsed_ns, b->burst_units - b->tokens_units);
}

bool agile_token_bucket_take(struct agile_token_bucket *b, int64_t now_ns,
                             double n)
{
	int64_t want = units_of(n);

	if (want < 0)
		return false;
	/* Bring the bucket up to date whether or not the take succeeds; a
	 * clock that stepped back leaves the last reading in place. */
	if (now_ns > b->at_ns) {
		b->tokens_units = agile__token_bucket_units(b, now_ns);
		b->at_ns = now_ns;
	}
	if (b->tokens_units < want)
		return false;
	b->tokens_units -= want;
	return true;
}

int64_t agile_token_bucket_next(const struct agile_token_bucket *b,
                                int64_t now_ns, double n)
{
	int64_t want = units_of(n);

	if (want < 0 || want > b->burst_units)
		return INT64_MAX;
	int64_t have = agile__token_bucket_units(b, now_ns);
	if (have >= want)
		return 0;
	if (!(b->rate_per_s > 0))
		return INT64_MAX;
	int64_t deficit = want - have;
	double estimate = ceil((double)deficit / b->rate_per_s);
	if (estimate >= 9.2e18)
		return INT64_MAX;
	/* The estimate may be a nanosecond off either way once refill()
	 * rounds down: settle on the shortest wait whose refill, computed as
	 * the take will compute it, covers the deficit. */
	int64_t wait_ns = estimate < 1 ? 1 : (int64_t)estimate;
	while (refill(b, wait_ns, deficit) < deficit && wait_ns < INT64_MAX)
		wait_ns++;
	while (wait_ns > 1 && refill(b, wait_ns - 1, deficit) >= deficit)
		wait_ns--;
	return wait_ns;
}

double agile_token_bucket_tokens(const struct agile_token_bucket *b,
                                 int64_t now_ns)
{
	return (double)agile__token_bucket_units(b, now_ns) /
	       (double)AGILE_TOKEN_UNITS;
}
