/*
 * rolling.c - the time bookkeeping of a rolling window of buckets.
 *
 * The window keeps where its head bucket starts and which array index holds
 * it; the buckets themselves belong to the caller.  A write that arrives
 * `span` bucket widths after the head's start zeroes the `span` buckets after
 * the head (the ones the gap swept past, which now hold stale data from a
 * window ago) and moves the head forward by `span`, snapping its start back
 * to a bucket boundary.  A read computes the same span and leaves those
 * buckets out instead of clearing them, so reads never write.
 */
#include <errno.h>
#include <string.h>

#include "agile_resilience.h"

/* Whole bucket widths between the head's start and now_ns, capped at the
 * window size (everything has aged out past that).  A now before the head's
 * start counts as inside the head bucket.  The difference is taken in
 * unsigned arithmetic, which is exact for now_ns >= start_ns even when the
 * signed subtraction would overflow. */
static int32_t span_at(const struct agile_rolling *w, int64_t now_ns)
{
	if (now_ns <= w->start_ns)
		return 0;
	uint64_t gap = (uint64_t)now_ns - (uint64_t)w->start_ns;
	uint64_t span = gap / (uint64_t)w->width_ns;
	return span >= (uint64_t)w->size ? w->size : (int32_t)span;
}

static void clear_bucket(void *buckets, size_t bucket_size, int32_t index)
{
	memset((char *)buckets + (size_t)index * bucket_size, 0, bucket_size);
}

int agile_rolling_init(struct agile_rolling *w, int32_t size,
                       int64_t window_ns, int64_t now_ns, void *buckets,
                       size_t bucket_size)
{
	if (size > AGILE_ROLLING_MAX_BUCKETS)
		return -EINVAL;
	if (size < 1)
		size = 1;
	int64_t width_ns = window_ns / size;
	w->width_ns = width_ns < 1 ? 1 : width_ns;
	w->start_ns = now_ns;
	w->size = size;
	w->head = 0;
	memset(buckets, 0, (size_t)size * bucket_size);
	return 0;
}

int32_t agile_rolling_slot(struct agile_rolling *w, int64_t now_ns,
                           void *buckets, size_t bucket_size)
{
	int32_t span = span_at(w, now_ns);

	if (span == 0)
		return w->head;
	for (int32_t i = 1; i <= span; i++)
		clear_bucket(buckets, bucket_size, (w->head + i) % w->size);
	w->head = (w->head + span) % w->size;
	/* Snap to the boundary at or before now_ns on the grid the window
	 * opened on, even when the gap was longer than the window. */
	uint64_t gap = (uint64_t)now_ns - (uint64_t)w->start_ns;
	w->start_ns = (int64_t)((uint64_t)now_ns - gap % (uint64_t)w->width_ns);
	return w->head;
}

int32_t agile_rolling_live(const struct agile_rolling *w, int64_t now_ns,
                           bool current, int32_t *oldest)
{
	int32_t span = span_at(w, now_ns);
	/* The window at now_ns is the bucket now falls in, head + span, and
	 * the size - 1 before it.  Those after the head were swept past and
	 * hold stale data, so the live ones are the size - span buckets
	 * ending at the head.  When now falls in the head bucket itself
	 * (span 0) leaving out the current bucket drops the head; otherwise
	 * the current bucket is already among the skipped ones. */
	int32_t count = w->size - span;

	if (span == 0 && !current)
		count--;
	*oldest = (w->head + span + 1) % w->size;
	return count;
}

void agile_rolling_each(const struct agile_rolling *w, int64_t now_ns,
                        bool current, const void *buckets, size_t bucket_size,
                        void (*visit)(const void *bucket, void *arg),
                        void *arg)
{
	int32_t oldest;
	int32_t count = agile_rolling_live(w, now_ns, current, &oldest);

	for (int32_t i = 0; i < count; i++) {
		int32_t index = (oldest + i) % w->size;
		visit((const char *)buckets + (size_t)index * bucket_size, arg);
	}
}
