/*
 * format.c - a resolved configuration as text: the one-line window and
 * tail summaries, the full listing and its JSON, and the numbers, factors
 * and durations every message of the core prints.
 *
 * Text goes into caller buffers with snprintf semantics, and numbers are
 * printed with '.' as the decimal point whatever the host program's locale.
 * Everything here is pure: no clock, no allocation, no I/O.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "agile.h"
#include "internal.h"

#define PRINTF_LIKE(fmt, args) __attribute__((format(printf, fmt, args)))

/* Large enough for any number, duration or name printed below. */
#define SHORT_TEXT AGILE__NUMBER_TEXT

/* ------------------------------------------------------------------------ */
/* Text helpers                                                              */
/* ------------------------------------------------------------------------ */

/*
 * An output buffer with snprintf semantics spread over many appends: `need`
 * counts every byte that would have been written, the buffer receives what
 * fits, and it stays NUL-terminated whenever len > 0.
 */
struct text {
	char *buf;
	size_t len;
	size_t need;
};

static struct text text_start(char *buf, size_t len)
{
	struct text t = { .buf = len > 0 ? buf : NULL, .len = buf ? len : 0 };

	if (t.len > 0)
		t.buf[0] = '\0';
	return t;
}

static void PRINTF_LIKE(2, 3) text_printf(struct text *t, const char *fmt, ...)
{
	char *dst = NULL;
	size_t room = 0;
	va_list ap;
	int n;

	/* Once one append has been cut short nothing later is written, so the
	 * buffer always holds a prefix of the full text. */
	if (t->need < t->len) {
		dst = t->buf + t->need;
		room = t->len - t->need;
	}
	va_start(ap, fmt);
	n = vsnprintf(dst, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		t->need += (size_t)n;
}

/*
 * Print a double and force '.' as the decimal point.  printf follows
 * LC_NUMERIC, and this library runs inside host programs that may have called
 * setlocale(); a decimal comma would break the JSON and blur every message.
 * With %g and %f the decimal point is the only run of characters that is not
 * a digit, a sign or an exponent marker, so that run is replaced by '.'.
 *
 * `fixed` prints "%.Nf" with N = `precision` (falling back to %g for values
 * too large to print that way in a short buffer); otherwise "%.Ng" with N
 * significant digits.
 */
static void format_real(char out[SHORT_TEXT], double value, bool fixed,
                        int precision)
{
	char raw[SHORT_TEXT];
	size_t from = 0;
	size_t to = 0;

	if (isnan(value)) {
		snprintf(out, SHORT_TEXT, "nan");
		return;
	}
	if (isinf(value)) {
		snprintf(out, SHORT_TEXT, "%sinf", value < 0 ? "-" : "");
		return;
	}
	if (fixed && fabs(value) < 1e15)
		snprintf(raw, sizeof raw, "%.*f", precision, value);
	else
		snprintf(raw, sizeof raw, "%.*g", fixed ? 15 : precision, value);

	while (raw[from] != '\0') {
		char c = raw[from];

		if ((c >= '0' && c <= '9') || c == '-' || c == '+' || c == 'e'
		    || c == 'E') {
			out[to++] = c;
			from++;
			continue;
		}
		out[to++] = '.';
		while (raw[from] != '\0' && !(raw[from] >= '0' && raw[from] <= '9'))
			from++;
	}
	out[to] = '\0';
}

/*
 * The usual way to print a double here: 15 significant digits print any
 * decimal typed with 15 or fewer digits back exactly as it was typed, without
 * the binary noise %.17g shows ("0.05", not "0.050000000000000003").
 */
static void format_number(char out[SHORT_TEXT], double value)
{
	format_real(out, value, false, 15);
}

void agile__format_number(char out[AGILE__NUMBER_TEXT], double value)
{
	format_number(out, value);
}

/* A factor as in "1.0x": like format_number, but always with a point. */
static void format_factor(char out[SHORT_TEXT], double value)
{
	format_number(out, value);
	if (isfinite(value) && strpbrk(out, ".e") == NULL)
		strcat(out, ".0");
}

/*
 * Durations use the largest unit in which the value is exact with at most
 * three decimals for minutes and hours, and exact to the nanosecond for
 * seconds and below: "250us", "1.5s", "1.234567ms", "2m", "1.5m", "61s".
 * The text is therefore exact, and any parser that accepts decimal
 * fractions (Go's time.ParseDuration among them) reads back the same value.
 */
static void format_duration(char out[SHORT_TEXT], int64_t ns)
{
	static const struct {
		const char *suffix;
		uint64_t ns;
		uint64_t step; /* the smallest fraction printed in this unit */
		int decimals;
	} units[] = {
		{ "h", UINT64_C(3600000000000), UINT64_C(3600000000), 3 },
		{ "m", UINT64_C(60000000000), UINT64_C(60000000), 3 },
		{ "s", UINT64_C(1000000000), 1, 9 },
		{ "ms", UINT64_C(1000000), 1, 6 },
		{ "us", UINT64_C(1000), 1, 3 },
		{ "ns", 1, 1, 0 },
	};
	/* Negate in unsigned arithmetic so INT64_MIN is handled too. */
	uint64_t magnitude = ns < 0 ? UINT64_C(0) - (uint64_t)ns : (uint64_t)ns;
	const char *sign = ns < 0 ? "-" : "";

	if (magnitude == 0) {
		snprintf(out, SHORT_TEXT, "0s");
		return;
	}
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
		char fraction[16] = "";

		if (magnitude < units[i].ns || magnitude % units[i].step != 0)
			continue;
		if (magnitude % units[i].ns != 0) {
			uint64_t digits = magnitude % units[i].ns / units[i].step;
			size_t end;

			snprintf(fraction, sizeof fraction, ".%0*" PRIu64,
			         units[i].decimals, digits);
			end = strlen(fraction);
			while (fraction[end - 1] == '0')
				fraction[--end] = '\0';
		}
		snprintf(out, SHORT_TEXT, "%s%" PRIu64 "%s%s", sign,
		         magnitude / units[i].ns, fraction, units[i].suffix);
		return;
	}
}

void agile__format_duration(char out[AGILE__NUMBER_TEXT], int64_t ns)
{
	format_duration(out, ns);
}

/* The SLO as printed in the window and the resolved listings. */
static void format_slo(char out[SHORT_TEXT], int64_t slo_ns)
{
	if (slo_ns > 0)
		format_duration(out, slo_ns);
	else
		snprintf(out, SHORT_TEXT, "unset");
}

static const char *kind_name(uint32_t kind)
{
	switch (kind) {
	case AGILE_KIND_RATE:
		return "rate";
	case AGILE_KIND_CONCURRENCY:
		return "concurrency";
	default:
		return "unknown";
	}
}

/* ------------------------------------------------------------------------ */
/* Rendering                                                                 */
/* ------------------------------------------------------------------------ */

size_t agile_duration_format(int64_t ns, char *buf, size_t len)
{
	struct text t = text_start(buf, len);
	char shown[SHORT_TEXT];

	format_duration(shown, ns);
	text_printf(&t, "%s", shown);
	return t.need;
}

size_t agile_rate_format(double rate, char *buf, size_t len)
{
	struct text t = text_start(buf, len);
	char shown[SHORT_TEXT];

	format_number(shown, rate);
	text_printf(&t, "%s", shown);
	return t.need;
}

static void window_text(struct text *t, const struct agile_resolved *r)
{
	char fraction[SHORT_TEXT], slo[SHORT_TEXT], inflation[SHORT_TEXT];

	format_number(fraction, AGILE_SLO_WINDOW_FRACTION);
	format_slo(slo, r->slo_ns);
	format_real(inflation, r->target_inflation, true, 2);
	if (r->anchor == AGILE_ANCHOR_SLO && r->slo_ns > 0)
		text_printf(t, "%s x %s", fraction, slo);
	else if (r->slo_ns > 0)
		text_printf(t, "min((1+%s) x baseline, %s x %s)", inflation,
		            fraction, slo);
	else
		text_printf(t, "(1+%s) x baseline", inflation);
}

static void tail_text(struct text *t, const struct agile_resolved *r)
{
	char target[SHORT_TEXT], factor[SHORT_TEXT], percent[SHORT_TEXT];
	double target_ns;

	if (r->slo_ns <= 0) {
		text_printf(t, "off (SLO unset)");
		return;
	}
	/* Saturate rather than overflow for an absurd tail_factor. */
	target_ns = (double)r->slo_ns * r->tail_factor;
	if (!(target_ns < 9.2e18))
		target_ns = 9.2e18;
	else if (!(target_ns > 0))
		target_ns = 0;
	format_duration(target, (int64_t)(target_ns + 0.5));
	format_factor(factor, r->tail_factor);
	text_printf(t, "%s (%sx SLO)", target, factor);
	if (r->tail_tolerance > 0) {
		/* Six significant digits hide the binary noise of x 100. */
		format_real(percent, r->tail_tolerance * 100, false, 6);
		text_printf(t, ", ratio > %s%% + margin", percent);
	}
}

size_t agile_resolved_window(const struct agile_resolved *r, char *buf,
                             size_t len)
{
	struct text t = text_start(buf, len);

	if (r != NULL)
		window_text(&t, r);
	return t.need;
}

size_t agile_resolved_tail(const struct agile_resolved *r, char *buf,
                           size_t len)
{
	struct text t = text_start(buf, len);

	if (r != NULL)
		tail_text(&t, r);
	return t.need;
}

/*
 * One renderer serves both listings, so the "key: value" lines and the JSON
 * object cannot disagree about which fields exist.
 */
struct listing {
	struct text t;
	bool json;
	bool first;
};

static void listing_key(struct listing *l, const char *key, const char *suffix)
{
	if (l->json)
		text_printf(&l->t, "%s\"%s%s\":", l->first ? "" : ",", key, suffix);
	else
		text_printf(&l->t, "%s%s: ", key, suffix);
	l->first = false;
}

static void listing_end(struct listing *l)
{
	if (!l->json)
		text_printf(&l->t, "\n");
}

/* Every string is generated here and plain ASCII, but escape what JSON
 * requires anyway, so a future string cannot break the object. */
static void json_string(struct text *t, const char *s)
{
	text_printf(t, "\"");
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			text_printf(t, "\\%c", c);
		else if (c < 0x20)
			text_printf(t, "\\u%04x", c);
		else
			text_printf(t, "%c", c);
	}
	text_printf(t, "\"");
}

static void listing_string(struct listing *l, const char *key,
                           const char *value)
{
	listing_key(l, key, "");
	if (l->json)
		json_string(&l->t, value);
	else
		text_printf(&l->t, "%s", value);
	listing_end(l);
}

static void listing_int(struct listing *l, const char *key, int64_t value)
{
	listing_key(l, key, "");
	text_printf(&l->t, "%" PRId64, value);
	listing_end(l);
}

static void listing_bool(struct listing *l, const char *key, bool value)
{
	listing_key(l, key, "");
	if (l->json)
		text_printf(&l->t, "%s", value ? "true" : "false");
	else
		text_printf(&l->t, "%s", value ? "yes" : "no");
	listing_end(l);
}

static void listing_real(struct listing *l, const char *key, double value)
{
	char shown[SHORT_TEXT];

	format_number(shown, value);
	listing_key(l, key, "");
	/* JSON has no spelling for NaN or infinity; a resolved config never
	 * holds one, but a hand-built struct might. */
	text_printf(&l->t, "%s", l->json && !isfinite(value) ? "null" : shown);
	listing_end(l);
}

/* A duration is one human line, or in JSON the exact "<key>_ns" integer
 * followed by the human form under "<key>". */
static void listing_duration(struct listing *l, const char *key,
                             int64_t ns, const char *human)
{
	if (l->json) {
		listing_key(l, key, "_ns");
		text_printf(&l->t, "%" PRId64, ns);
	}
	listing_string(l, key, human);
}

static void listing_all(struct listing *l, const struct agile_resolved *r)
{
	char text[256];
	char human[SHORT_TEXT];

	if (l->json)
		text_printf(&l->t, "{");
	listing_string(l, "kind", kind_name(r->kind));
	listing_string(l, "preset",
	               agile_preset_name((enum agile_preset)r->preset));
	listing_string(l, "anchor", agile_resolved_anchor_name(r));
	listing_bool(l, "anchor_degraded", r->anchor_degraded != 0);
	agile_resolved_window(r, text, sizeof text);
	listing_string(l, "window", text);
	agile_resolved_tail(r, text, sizeof text);
	listing_string(l, "tail", text);
	listing_real(l, "max_rate", r->max_rate);
	listing_real(l, "min_rate", r->min_rate);
	listing_real(l, "floor_rate", r->floor_rate);
	listing_real(l, "probe_rate", r->probe_rate);
	listing_real(l, "initial_rate", r->initial_rate);
	format_slo(human, r->slo_ns);
	listing_duration(l, "slo", r->slo_ns, human);
	listing_real(l, "tail_factor", r->tail_factor);
	listing_real(l, "tail_tolerance", r->tail_tolerance);
	listing_int(l, "backoff_ticks", r->backoff_ticks);
	listing_int(l, "recover_ticks", r->recover_ticks);
	format_duration(human, r->tick_ns);
	listing_duration(l, "tick", r->tick_ns, human);
	format_duration(human, r->slow_half_life_ns);
	listing_duration(l, "slow_half_life", r->slow_half_life_ns, human);
	format_duration(human, r->slow_down_half_life_ns);
	listing_duration(l, "slow_down_half_life", r->slow_down_half_life_ns,
	                 human);
	listing_real(l, "max_baseline_rise", r->max_baseline_rise);
	listing_real(l, "target_inflation", r->target_inflation);
	listing_real(l, "up_step", r->up_step);
	listing_real(l, "down_step", r->down_step);
	listing_real(l, "gain", r->gain);
	listing_real(l, "slow_start_gain", r->slow_start_gain);
	listing_real(l, "deadband", r->deadband);
	listing_real(l, "recover_ramp", r->recover_ramp);
	listing_real(l, "delivered_share", r->delivered_share);
	listing_real(l, "knee_ramp", r->knee_ramp);
	listing_real(l, "probe_acceleration", r->probe_acceleration);
	listing_real(l, "goodput_cut", r->goodput_cut);
	if (l->json)
		text_printf(&l->t, "}");
}

size_t agile_resolved_format(const struct agile_resolved *r, char *buf,
                             size_t len)
{
	struct listing l = { .t = text_start(buf, len), .first = true };

	if (r != NULL)
		listing_all(&l, r);
	return l.t.need;
}

size_t agile_resolved_json(const struct agile_resolved *r, char *buf,
                           size_t len)
{
	struct listing l = { .t = text_start(buf, len), .json = true,
	                     .first = true };

	if (r != NULL)
		listing_all(&l, r);
	return l.t.need;
}
