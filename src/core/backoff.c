/*
 * backoff.c - retry waits: an exponential ceiling and five ways of
 * randomising it, all from a draw the caller supplies.
 *
 * Clients that fail at the same moment and retry on the same fixed schedule
 * arrive again in lockstep, and the synchronised wave can knock over a
 * backend that was just recovering.  FULL, EQUAL and
 * DECORRELATED are the three shapes AWS's "Exponential Backoff and Jitter"
 * measures; SPREAD keeps each wait within a fixed fraction of the ceiling,
 * for a caller whose schedule is prescribed and only needs de-synchronising.  All arithmetic is in double nanoseconds, rounded once at the end.
 */
#include <math.h>

#include "agile_resilience.h"

static double clamp_draw(double u)
{
	if (!(u >= 0))
		return 0; /* NaN and negatives */
	return u < 1 ? u : nextafter(1.0, 0.0);
}

/* Round a non-negative wait to whole nanoseconds, saturating. */
static int64_t to_ns(double ns)
{
	if (!(ns > 0))
		return 0;
	if (ns >= 9.2e18)
		return INT64_MAX;
	return llround(ns);
}

/* The ceiling before retry r >= 1, unrounded. */
static double ceiling_of(const struct agile_backoff *b, int32_t retry)
{
	double c = (double)b->base_ns * pow(b->factor, (double)(retry - 1));
	double cap = (double)b->cap_ns;
	/* pow may overflow to infinity for a late retry; the cap holds it. */
	return !(c < cap) ? cap : c;
}

int64_t agile_backoff_ceiling(const struct agile_backoff *b, int32_t retry)
{
	if (retry <= 0)
		return 0;
	return to_ns(ceiling_of(b, retry));
}

int64_t agile_backoff_delay(const struct agile_backoff *b, int32_t retry,
                            double u, int64_t previous_ns)
{
	if (retry <= 0)
		return 0;
	double c = ceiling_of(b, retry);
	double base = (double)b->base_ns;
	double f;

	u = clamp_draw(u);
	switch (b->jitter) {
	case AGILE_JITTER_FULL:
		return to_ns(u * c);
	case AGILE_JITTER_EQUAL:
		return to_ns(c / 2 + u * c / 2);
	case AGILE_JITTER_DECORRELATED: {
		double previous = previous_ns > 0 ? (double)previous_ns : base;
		double high = 3 * previous;
		double wait = high > base ? base + u * (high - base) : base;
		double cap = (double)b->cap_ns;
		return to_ns(wait > cap ? cap : wait);
	}
	case AGILE_JITTER_SPREAD:
		f = !(b->spread > 0) ? 0 : b->spread > 1 ? 1 : b->spread;
		return to_ns(c * (1 - f) + u * 2 * f * c);
	case AGILE_JITTER_RIGID:
	default:
		return to_ns(c);
	}
}

bool agile_backoff_more(const struct agile_backoff *b, int32_t made)
{
	return made < b->attempts;
}

size_t agile_backoff_schedule(const struct agile_backoff *b,
                              const double *draws, size_t n_draws,
                              int64_t *out_ns, size_t cap)
{
	size_t retries = b->attempts > 1 ? (size_t)b->attempts - 1 : 0;
	int64_t previous_ns = 0;

	for (size_t i = 0; i < retries && i < cap; i++) {
		double u = i < n_draws ? draws[i] : 0;
		previous_ns = agile_backoff_delay(b, (int32_t)(i + 1), u,
		                                  previous_ns);
		out_ns[i] = previous_ns;
	}
	return retries;
}
