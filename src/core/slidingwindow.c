/*
 * slidingwindow.c - an exact sliding-window counter: the stamps of the
 * events still inside the window, kept in a ring of `quota` slots.
 *
 * The ring never needs more than `quota` slots, because an event is only
 * stored when fewer than `quota` are inside the window.  Stamps are stored
 * in arrival order, so the ones that have aged out are always at the oldest
 * end and a take drops them in O(aged out); left and next scan from the
 * oldest end without writing.
 */
#include <errno.h>

#include "agile_resilience.h"

/* Whether a stamp still counts at now_ns: now - stamp < window.  A stamp
 * from a clock reading later than now (a clock that stepped back) counts. */
static bool inside(const struct agile_sliding_window *w, int64_t stamp_ns,
                   int64_t now_ns)
{
	if (now_ns <= stamp_ns)
		return true;
	return (uint64_t)now_ns - (uint64_t)stamp_ns < (uint64_t)w->window_ns;
}

/* How many of the oldest stamps have aged out at now_ns. */
static int32_t aged_out(const struct agile_sliding_window *w, int64_t now_ns)
{
	int32_t n = 0;

	while (n < w->count &&
	       !inside(w, w->stamps[(w->oldest + n) % w->quota], now_ns))
		n++;
	return n;
}

int agile_sliding_window_init(struct agile_sliding_window *w, int32_t quota,
                              int64_t window_ns)
{
	if (quota < 0)
		return -EINVAL;
	w->window_ns = window_ns < 1 ? 1 : window_ns;
	w->quota = quota;
	w->oldest = 0;
	w->count = 0;
	w->pad = 0;
	return 0;
}

bool agile_sliding_window_take(struct agile_sliding_window *w, int64_t now_ns)
{
	if (w->quota == 0)
		return false;
	int32_t gone = aged_out(w, now_ns);
	w->oldest = (w->oldest + gone) % w->quota;
	w->count -= gone;
	if (w->count >= w->quota)
		return false;
	w->stamps[(w->oldest + w->count) % w->quota] = now_ns;
	w->count++;
	return true;
}

int32_t agile_sliding_window_left(const struct agile_sliding_window *w,
                                  int64_t now_ns)
{
	if (w->quota == 0)
		return 0;
	return w->quota - (w->count - aged_out(w, now_ns));
}

int64_t agile_sliding_window_next(const struct agile_sliding_window *w,
                                  int64_t now_ns)
{
	if (w->quota == 0)
		return INT64_MAX;
	int32_t gone = aged_out(w, now_ns);
	if (w->count - gone < w->quota)
		return 0;
	/* Full: room comes back when the oldest stamp still inside leaves,
	 * window_ns after it was taken. */
	int64_t oldest_ns = w->stamps[(w->oldest + gone) % w->quota];
	if (now_ns < oldest_ns)
		return w->window_ns;
	return w->window_ns - (int64_t)((uint64_t)now_ns - (uint64_t)oldest_ns);
}
