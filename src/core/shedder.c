/*
 * shedder.c - adaptive load shedding for a server: refuse work only when the
 * CPU is hot and more calls are in flight than the server has lately shown
 * it can finish.
 *
 * Capacity is learnt from the rolling window: the busiest whole bucket's
 * passes over the bucket width is a throughput, and the fastest whole
 * bucket's mean response time is how long a call takes when the server is
 * not queueing; their product (Little's law) is how many calls can be in
 * flight without a queue.  The current, partial bucket is left out of both
 * readings so it is never compared with whole ones.
 *
 * Hotness has hysteresis: once the CPU was at or over the threshold and the
 * shedder refused something, the server stays hot for cool_ns after the last
 * hot reading, so shedding does not flap off the moment the CPU dips.
 */
#include <errno.h>
#include <math.h>

#include "agile_resilience.h"

/* CPU use is in thousandths: 1000 is every core busy. */
#define CPU_FULL 1000

int agile_shedder_init(struct agile_shedder *s, const struct agile_shed *shed,
                       int64_t now_ns)
{
	static const struct agile_shed preset = AGILE_SHED_PRESET;

	if (shed == NULL)
		shed = &preset;
	if (shed->cpu < 0 || shed->cpu >= CPU_FULL || !(shed->beta >= 0) ||
	    !(shed->beta <= 1) || !(shed->floor >= 0) || !(shed->floor <= 1) ||
	    shed->latency_ns < 0 || shed->cool_ns < 0)
		return -EINVAL;
	int rc = agile_rolling_init(&s->window, shed->size, shed->window_ns,
	                            now_ns, s->latencies,
	                            sizeof(s->latencies[0]));
	if (rc < 0)
		return rc;
	s->shed = *shed;
	s->shed.size = s->window.size;
	s->flying = 0;
	s->average = 0;
	s->hot_ns = 0;
	s->was_hot = 0;
	s->dropped = 0;
	return 0;
}

/* The hot test without its side effects: hot now, or refused since the
 * last hot reading and still within the cooling time of it. */
static bool is_hot(const struct agile_shedder *s, int64_t now_ns,
                   int32_t cpu_permille)
{
	if (cpu_permille >= s->shed.cpu)
		return true;
	if (!s->dropped || !s->was_hot)
		return false;
	/* A reading before the last hot one (a clock that stepped back)
	 * counts as no time since it. */
	uint64_t since = now_ns <= s->hot_ns
	                         ? 0
	                         : (uint64_t)now_ns - (uint64_t)s->hot_ns;
	return since < (uint64_t)s->shed.cool_ns;
}

void agile_shedder_read(const struct agile_shedder *s, int64_t now_ns,
                        int32_t cpu_permille,
                        struct agile_shedder_reading *out)
{
	int32_t oldest;
	int32_t count = agile_rolling_live(&s->window, now_ns, false, &oldest);
	int64_t busiest = 1;
	double fastest_ns = (double)s->shed.latency_ns;
	bool measured = false;

	for (int32_t i = 0; i < count; i++) {
		const struct agile_total *t =
			&s->latencies[(oldest + i) % s->window.size];

		if (t->count <= 0)
			continue;
		if (t->count > busiest)
			busiest = t->count;
		double mean = (double)t->sum / (double)t->count;
		if (!measured || mean < fastest_ns)
			fastest_ns = mean;
		measured = true;
	}

	double capacity = (double)busiest * fastest_ns /
	                  (double)s->window.width_ns;
	double factor = (double)(CPU_FULL - cpu_permille) /
	                (double)(CPU_FULL - s->shed.cpu);

	out->busiest = busiest;
	out->fastest_ns = fastest_ns;
	out->capacity = capacity < 1 ? 1 : capacity;
	out->factor = factor < s->shed.floor ? s->shed.floor
	              : factor > 1           ? 1
	                                     : factor;
	out->average = s->average;
	out->flying = s->flying;
	out->hot = is_hot(s, now_ns, cpu_permille);
}

bool agile_shedder_allow(struct agile_shedder *s, int64_t now_ns,
                         int32_t cpu_permille,
                         struct agile_shedder_ticket *ticket)
{
	struct agile_shedder_reading r;

	agile_shedder_read(s, now_ns, cpu_permille, &r);
	if (cpu_permille >= s->shed.cpu) {
		s->hot_ns = now_ns;
		s->was_hot = 1;
	} else if (s->dropped && !r.hot) {
		/* Cooled off: the next spike starts a fresh hot spell. */
		s->dropped = 0;
	}
	if (r.hot) {
		double limit = r.capacity * r.factor;
		if (s->average > limit && (double)s->flying > limit) {
			s->dropped = 1;
			ticket->open = 0;
			return false;
		}
	}
	s->flying++;
	ticket->start_ns = now_ns;
	ticket->open = 1;
	ticket->pad = 0;
	return true;
}

/* A call leaves flight; the average follows with the count left behind. */
static void land(struct agile_shedder *s)
{
	s->flying--;
	s->average = s->average * s->shed.beta +
	             (double)s->flying * (1 - s->shed.beta);
}

int agile_shedder_pass(struct agile_shedder *s,
                       struct agile_shedder_ticket *ticket, int64_t now_ns)
{
	if (ticket->open != 1)
		return -EALREADY;
	ticket->open = 0;
	land(s);
	int64_t latency_ns = now_ns - ticket->start_ns;
	struct agile_total *t = &s->latencies[agile_rolling_slot(
		&s->window, now_ns, s->latencies, sizeof(s->latencies[0]))];
	t->sum += latency_ns < 0 ? 0 : latency_ns;
	t->count++;
	return 0;
}

int agile_shedder_fail(struct agile_shedder *s,
                       struct agile_shedder_ticket *ticket)
{
	if (ticket->open != 1)
		return -EALREADY;
	ticket->open = 0;
	land(s);
	return 0;
}

int64_t agile_shedder_flying(const struct agile_shedder *s)
{
	return s->flying;
}
