/*
 * config_presets.c - passes 3 and 4 of the resolving walk (config.c): what
 * each preset fills in that the user left unset, the rules turned off by
 * name, and the AGILE_DEFAULT_* values for every field still unset.
 *
 * Everything here is pure: no clock, no allocation, no I/O.
 */
#include <stdbool.h>
#include <stdint.h>

#include "agile.h"
#include "config_internal.h"

/* What a preset contributes; zero members contribute nothing. */
struct preset_row {
	enum agile_anchor anchor;
	double tail_tolerance;
	double target_inflation;
	int backoff_ticks;
	int recover_ticks;
	double delivered_share;
	double knee_ramp;
	double probe_acceleration;
	double goodput_cut;
};

/*
 * The preset table.  PRESET_NONE is the recommendation and depends on the
 * SLO: with one it is latency-first plus the ratio guard (its two-tick
 * hysteresis comes from the SLO anchor default below) plus the three rules
 * the scenario matrix justified (bench/RESULTS.md); without one it is
 * exactly balanced.  PRESET_SEED is PRESET_NONE as the seed ran it, before
 * those three rules, so the seed's law stays reproducible by name.
 */
static struct preset_row preset_row(enum agile_preset preset, bool have_slo)
{
	struct preset_row row = { .anchor = AGILE_ANCHOR_UNSET };

	switch (preset) {
	case AGILE_PRESET_NONE:
	case AGILE_PRESET_SEED:
		if (have_slo) {
			row.anchor = AGILE_ANCHOR_SLO;
			row.tail_tolerance = AGILE_DEFAULT_TAIL_TOLERANCE_SLO;
			if (preset == AGILE_PRESET_SEED)
				break;
			row.delivered_share = AGILE_DEFAULT_DELIVERED_SHARE;
			row.knee_ramp = AGILE_DEFAULT_KNEE_RAMP;
			row.probe_acceleration = AGILE_DEFAULT_PROBE_ACCELERATION;
			row.goodput_cut = AGILE_DEFAULT_GOODPUT_CUT;
			break;
		}
		/* fall through */
	case AGILE_PRESET_BALANCED:
	default:
		row.anchor = AGILE_ANCHOR_BASELINE;
		row.target_inflation = AGILE_DEFAULT_TARGET_INFLATION;
		row.backoff_ticks = 1;
		row.recover_ticks = 1;
		break;
	case AGILE_PRESET_LATENCY_FIRST:
		row.anchor = AGILE_ANCHOR_SLO;
		row.backoff_ticks = 2;
		row.recover_ticks = 2;
		break;
	case AGILE_PRESET_THROUGHPUT_FIRST:
		row.anchor = AGILE_ANCHOR_BASELINE;
		row.target_inflation = AGILE_THROUGHPUT_FIRST_INFLATION;
		row.backoff_ticks = 2;
		row.recover_ticks = 2;
		break;
	}
	return row;
}

static double or_default(double value, double fallback)
{
	return value > 0 ? value : fallback;
}

static int64_t or_default_ns(int64_t value, int64_t fallback)
{
	return value > 0 ? value : fallback;
}

/* After pass 3: the rules turned off by name, whatever the preset gave
 * them (rules_off).  Bits no rule has are reported and ignored. */
void agile__apply_rules_off(const struct agile_config *c,
                            struct agile_resolved *r, struct report *rep)
{
	uint32_t off = c->rules_off;

	if ((off & ~AGILE_RULES_ALL) != 0)
		problem(rep, "rules_off",
		        "rules_off (0x%x) has bits that name no rule (only 0x1 "
		        "to 0x8, rules a to d); they would be ignored.",
		        (unsigned)off);
	if (off & AGILE_RULE_DELIVERED)
		r->delivered_share = 0;
	if (off & AGILE_RULE_KNEE_RAMP)
		r->knee_ramp = 1;
	if (off & AGILE_RULE_PROBE)
		r->probe_acceleration = 1;
	if (off & AGILE_RULE_GOODPUT)
		r->goodput_cut = 0;
}

/* Pass 3: the preset fills what is still unset, then the anchor is checked
 * against the SLO it needs; the anchor as it will run. */
enum agile_anchor agile__apply_preset(struct agile_resolved *r,
                                      struct report *rep,
                                      enum agile_preset preset,
                                      enum agile_anchor anchor, int64_t slo)
{
	bool anchor_from_preset;
	struct preset_row row;

	row = preset_row(preset, slo > 0);
	anchor_from_preset = anchor == AGILE_ANCHOR_UNSET;
	if (anchor_from_preset)
		anchor = row.anchor;
	if (r->tail_tolerance == 0)
		r->tail_tolerance = row.tail_tolerance;
	if (r->target_inflation == 0)
		r->target_inflation = row.target_inflation;
	if (r->backoff_ticks == 0)
		r->backoff_ticks = row.backoff_ticks;
	if (r->recover_ticks == 0)
		r->recover_ticks = row.recover_ticks;
	if (r->delivered_share == 0)
		r->delivered_share = row.delivered_share;
	if (r->knee_ramp == 0)
		r->knee_ramp = row.knee_ramp;
	if (r->probe_acceleration == 0)
		r->probe_acceleration = row.probe_acceleration;
	if (r->goodput_cut == 0)
		r->goodput_cut = row.goodput_cut;

	if (anchor == AGILE_ANCHOR_SLO && slo == 0) {
		if (anchor_from_preset)
			problem(rep, "preset",
			        "preset %s needs slo_ns for its slo anchor; without it "
			        "the baseline anchor runs.", agile_preset_name(preset));
		else
			problem(rep, "anchor",
			        "anchor slo needs slo_ns; without it the baseline anchor "
			        "runs.");
		anchor = AGILE_ANCHOR_BASELINE;
		r->anchor_degraded = 1;
	}

	/* The SLO anchor's threshold is fixed, so jitter across it is the main
	 * false-positive risk and two agreeing ticks are the default there; the
	 * baseline anchor keeps the historical single-tick decisions. */
	if (r->backoff_ticks == 0)
		r->backoff_ticks = anchor == AGILE_ANCHOR_SLO ? 2 : 1;
	if (r->recover_ticks == 0)
		r->recover_ticks = anchor == AGILE_ANCHOR_SLO ? 2 : 1;
	return anchor;
}

/* Pass 4: plain defaults.  recover_ramp and tail_tolerance stay 0, which
 * means "off" and "quantile guard", and so do the three matrix rules when
 * the preset left them unset. */
void agile__apply_defaults(struct agile_resolved *r)
{
	r->tail_factor = or_default(r->tail_factor, AGILE_DEFAULT_TAIL_FACTOR);
	r->target_inflation = or_default(r->target_inflation,
	                                 AGILE_DEFAULT_TARGET_INFLATION);
	r->slow_half_life_ns = or_default_ns(r->slow_half_life_ns,
	                                     AGILE_DEFAULT_SLOW_HALF_LIFE_NS);
	r->slow_down_half_life_ns = or_default_ns(
		r->slow_down_half_life_ns, AGILE_DEFAULT_SLOW_DOWN_HALF_LIFE_NS);
	r->max_baseline_rise = or_default(r->max_baseline_rise,
	                                  AGILE_DEFAULT_MAX_BASELINE_RISE);
	r->tick_ns = or_default_ns(r->tick_ns, AGILE_DEFAULT_TICK_NS);
	r->up_step = or_default(r->up_step, AGILE_DEFAULT_UP_STEP);
	r->down_step = or_default(r->down_step, AGILE_DEFAULT_DOWN_STEP);
	r->gain = or_default(r->gain, AGILE_DEFAULT_GAIN);
	r->slow_start_gain = or_default(r->slow_start_gain,
	                                AGILE_DEFAULT_SLOW_START_GAIN);
	r->deadband = or_default(r->deadband, AGILE_DEFAULT_DEADBAND);
}
