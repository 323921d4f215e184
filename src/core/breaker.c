/*
 * breaker.c - client-side throttling in the manner of the Google SRE book's
 * "Handling Overload" chapter, with three refinements that keep an outage
 * from being remembered longer than it lasted:
 *
 *  - k decays towards its floor as the run of failing buckets grows, so a
 *    long outage stops crediting successes from before it;
 *  - after a quiet spell with nothing let through, one call goes through
 *    whatever the roll, so recovery is noticed even at a high refusal ratio;
 *  - the refusal ratio is scaled down by the run of working buckets, so once
 *    the backend answers again the throttle lifts bucket by bucket instead of
 *    waiting for the failures to age out of the whole window.
 *
 * Refusals are recorded as drops and count towards `total`.  Were they not
 * counted, a breaker refusing most calls would see its window thin out, its
 * refusal ratio fall, and the throttle release while the backend is still
 * down.
 */
#include <errno.h>
#include <math.h>

#include "agile_resilience.h"
#include "internal.h"

enum outcome { SUCCESS, FAILURE, DROP };

static bool finite_non_negative(double v)
{
	return isfinite(v) && v >= 0;
}

int agile_breaker_init(struct agile_breaker *b, const struct agile_sre *sre,
                       int64_t now_ns)
{
	static const struct agile_sre preset = AGILE_SRE_PRESET;

	if (sre == NULL)
		sre = &preset;
	if (!finite_non_negative(sre->k) || !finite_non_negative(sre->floor) ||
	    !finite_non_negative(sre->protection) || sre->probe_ns < 0)
		return -EINVAL;
	int rc = agile_rolling_init(&b->window, sre->size, sre->window_ns,
	                            now_ns, b->tallies, sizeof(b->tallies[0]));
	if (rc < 0)
		return rc;
	b->sre = *sre;
	b->sre.size = b->window.size;
	b->last_pass_ns = 0;
	b->has_passed = 0;
	b->pad = 0;
	return 0;
}

/* Sum the live buckets and find the runs at the newest end.  A bucket with a
 * failure and no success extends the failing run and ends the working one;
 * one with a success and no failure does the opposite; a bucket with both
 * ends both runs; an empty or drop-only bucket leaves both as they are. */
static void read_window(const struct agile_breaker *b, int64_t now_ns,
                        struct agile_breaker_reading *r)
{
	int32_t oldest;
	int32_t count = agile_rolling_live(&b->window, now_ns, true, &oldest);

	r->total = 0;
	r->accepts = 0;
	r->failing = 0;
	r->working = 0;
	for (int32_t i = 0; i < count; i++) {
		const struct agile_tally *t =
			&b->tallies[(oldest + i) % b->window.size];

		/* Saturating: the tallies live in a file other processes
		 * can write, and garbage there must not overflow a sum. */
		r->total = agile__add_sat(r->total, t->total);
		r->accepts = agile__add_sat(r->accepts, t->success);
		if (t->failure > 0)
			r->working = 0;
		else if (t->success > 0)
			r->working++;
		if (t->success > 0)
			r->failing = 0;
		else if (t->failure > 0)
			r->failing++;
	}

	const struct agile_sre *s = &b->sre;
	double size = (double)b->window.size;
	double w = s->k - (s->k - s->floor) * r->failing / size;
	r->weight = w > s->floor ? w : s->floor;
}

/* The refusal fraction before the working-run scaling. */
static double raw_drop(const struct agile_breaker *b,
                       const struct agile_breaker_reading *r)
{
	return ((double)r->total - b->sre.protection -
	        r->weight * (double)r->accepts) /
	       ((double)r->total + 1);
}

static double scaled(const struct agile_breaker *b,
                     const struct agile_breaker_reading *r, double drop)
{
	double size = (double)b->window.size;
	return drop * (size - r->working) / size;
}

void agile_breaker_read(const struct agile_breaker *b, int64_t now_ns,
                        struct agile_breaker_reading *out)
{
	read_window(b, now_ns, out);
	double drop = raw_drop(b, out);
	out->drop = drop <= 0 ? 0 : scaled(b, out, drop);
}

double agile_breaker_ratio(const struct agile_breaker *b, int64_t now_ns)
{
	struct agile_breaker_reading r;

	agile_breaker_read(b, now_ns, &r);
	return r.drop;
}

static void record(struct agile_breaker *b, int64_t now_ns, enum outcome o)
{
	struct agile_tally *t = &b->tallies[agile_rolling_slot(
		&b->window, now_ns, b->tallies, sizeof(b->tallies[0]))];

	t->total = agile__add_sat(t->total, 1);
	switch (o) {
	case SUCCESS:
		t->success = agile__add_sat(t->success, 1);
		break;
	case FAILURE:
		t->failure = agile__add_sat(t->failure, 1);
		break;
	case DROP:
		t->drop = agile__add_sat(t->drop, 1);
		break;
	}
}

/* Nanoseconds from since_ns to now_ns, zero when now_ns is not later; the
 * unsigned difference cannot overflow. */
static uint64_t quiet_for(int64_t since_ns, int64_t now_ns)
{
	return now_ns <= since_ns ? 0 : (uint64_t)now_ns - (uint64_t)since_ns;
}

static bool let_through(struct agile_breaker *b, int64_t now_ns,
                        struct agile_breaker_call *call)
{
	b->last_pass_ns = now_ns;
	b->has_passed = 1;
	call->allowed_ns = now_ns;
	call->open = 1;
	call->pad = 0;
	return true;
}

bool agile_breaker_allow(struct agile_breaker *b, int64_t now_ns,
                         double roll, struct agile_breaker_call *call)
{
	struct agile_breaker_reading r;

	read_window(b, now_ns, &r);
	double drop = raw_drop(b, &r);
	if (drop <= 0)
		return let_through(b, now_ns, call);
	/* The probe: the window is refusing, but nothing has been let through
	 * for longer than probe_ns, so this one call finds out whether the
	 * backend is back. */
	if (b->has_passed && quiet_for(b->last_pass_ns, now_ns) >
	                         (uint64_t)b->sre.probe_ns)
		return let_through(b, now_ns, call);
	if (roll < scaled(b, &r, drop)) {
		record(b, now_ns, DROP);
		call->allowed_ns = now_ns;
		call->open = 0;
		call->pad = 0;
		return false;
	}
	return let_through(b, now_ns, call);
}

static int settle(struct agile_breaker *b, struct agile_breaker_call *call,
                  int64_t now_ns, enum outcome o)
{
	if (call->open != 1)
		return -EALREADY;
	call->open = 0;
	record(b, now_ns, o);
	return 0;
}

int agile_breaker_pass(struct agile_breaker *b,
                       struct agile_breaker_call *call, int64_t now_ns)
{
	return settle(b, call, now_ns, SUCCESS);
}

int agile_breaker_fail(struct agile_breaker *b,
                       struct agile_breaker_call *call, int64_t now_ns)
{
	return settle(b, call, now_ns, FAILURE);
}
