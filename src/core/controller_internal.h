/*
 * controller_internal.h - what the control law's two files share: the
 * tick's reading that the steps (controller.c) and the rules
 * (controller_rules.c) fill in for each other, the clamp both use, and
 * the rules' entry points, in the order agile_controller_step calls them
 * (controller_rules.c says what each one does).
 */
#ifndef AGILE_CONTROLLER_INTERNAL_H
#define AGILE_CONTROLLER_INTERNAL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "agile.h"

/*
 * One tick's reading, shared by the steps (controller.c) and the rules
 * (controller_rules.c) in the order agile_controller_step calls them: each
 * fills in what the later ones read.  It lives on the stack for one step;
 * the shared state is the struct agile_controller copy `n` the step
 * publishes at its end.
 */
struct tick {
	const struct agile_resolved *r;
	const struct agile_tick_input *in;
	uint64_t observed;  /* samples in the tick's histogram */
	double rate;        /* the target the tick ran at */
	double floor;       /* the clamp's lower bound, probe_rate in probe mode */
	bool cold;          /* the tick ran in cold start (the step may end it) */
	bool after_cut;     /* the tick before cut (rule d) */
	bool after_step;    /* the tick before stepped up at the knee (rule c) */
	bool after_outage;  /* the tick before was an outage (step 1) */
	bool took_back;     /* this tick takes that step back (rule c) */
	double used_before; /* what the tick before used (rule c) */
	double p50_before;  /* the tick before's p50, 0 if blind (rule d) */
	/* Rule a's measure of the span ending at this tick. */
	bool measured;      /* rule a applies and the tick's length is known */
	double used;        /* grants per second over the span */
	double span_s;
	double answers;
	double span_grants;
	double delivered;   /* answers per second over the span */
	bool delivered_known; /* answers are trusted to pair with grants */
	double slack;       /* what the two may differ by without meaning it */
	bool carried_split; /* the span carried in was a split one */
	bool split;         /* this span is taken for a split one */
	bool deficit;       /* answers lag the grants: a queue growing */
	bool backlog;       /* the last cut's backlog outlasts this tick */
	/* Steps 2-4. */
	double p50, p99;
	double window;
	bool healthy, congested;
	/* What the cut acts on, and the rules' regions. */
	bool held;          /* the program is held to its answers */
	double load;        /* what a cut starts from */
	bool draining;      /* an earlier backlog drains: cut no further */
	double knee_cap;    /* delivered_share x knee, or 0 while not trusted */
	bool below_knee;    /* rule b applies */
	bool at_knee;       /* rule c applies */
	double peak_cap;    /* delivered_share x the peak knee, or 0 */
	double last_step;   /* rule c's step the tick before, 0 if none */
	double step;        /* rule c's step this tick, 0 if none */
	bool fast;          /* that step is rule c's fast series' */
	bool faster;        /* and begins it */
	/* Step 6 and rule d. */
	bool tail;
	double inside;      /* the tick's share of answers inside the target */
	bool slo_break;     /* rule d cut to that share: slow at any rate */
	double next;        /* the new target before step 7's clamp */
};

void agile__rule_a_measure(struct agile_controller *n, struct tick *t);
void agile__rules_region(const struct agile_controller *n, struct tick *t);
double agile__rule_b_ramp(const struct tick *t, double cap);
/* The share of the way a tick forgets a peak toward where it is now: the
 * peak knee toward the knee, the lowest baseline toward the baseline, at
 * a half-life of AGILE_PEAK_HALF_LIFE_S. */
static inline double agile__peak_forget(const struct agile_resolved *r)
{
	return 1.0 - exp2(-(double)r->tick_ns /
	                  (AGILE_PEAK_HALF_LIFE_S * (double)AGILE_NS_PER_S));
}

double agile__rule_b_after_break(const struct agile_controller *n,
                                 const struct tick *t);
bool agile__rule_b_below_peak(const struct agile_controller *n,
                              const struct tick *t);
double agile__rule_c_take_back(const struct agile_controller *n,
                               const struct tick *t);
double agile__rule_c_fast_step(const struct agile_controller *n,
                               const struct tick *t, bool *start);
double agile__rule_c_probe_step(const struct agile_controller *n,
                                const struct tick *t);
void agile__rule_d_own_share(struct tick *t);
void agile__rule_d_goodput_cut(const struct agile_controller *n,
                               struct tick *t);
void agile__rule_a_deficit_cut(struct agile_controller *n, struct tick *t);
void agile__rule_a_knee(struct agile_controller *n, const struct tick *t);
void agile__rule_c_streak(struct agile_controller *n, const struct tick *t);
void agile__rule_a_calibrate(struct agile_controller *n, const struct tick *t);

#endif
