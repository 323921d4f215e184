/*
 * h2walk.c - the HTTP/2 frame walker (see h2walk.h).
 *
 * Each flow is a small state machine over one direction's bytes: the
 * client's preface, then frames, each a 9-byte header (length, type,
 * flags, stream id) and a payload walked in parts.  The parts a payload
 * can have, in order: a pad length (PADDED), HEADERS' 5 priority bytes
 * (PRIORITY) or PUSH_PROMISE's promised stream id, the header block
 * fragment, the padding; or fixed fields gathered into field[] (RST_STREAM,
 * GOAWAY, each SETTINGS entry); or bytes skipped by length (DATA, PING,
 * WINDOW_UPDATE, PRIORITY, GOAWAY's debug data, frames of unknown type).
 *
 * What makes a flow give up is what RFC 9113 makes a connection error that
 * no working peer commits, and that garbage commits at once: a frame on
 * the wrong kind of stream, a control frame of the wrong size, a pad
 * longer than its frame, a CONTINUATION out of place, a PUSH_PROMISE or an
 * even stream id from the client.  Limits that depend on SETTINGS
 * (SETTINGS_MAX_FRAME_SIZE, concurrent streams) are not checked: the
 * walker never sees both sides' settings agreed, and needs no such limit
 * to keep its place.
 */
#include "config.h"

#include <string.h>

#include "h2walk.h"

#define PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define PREFACE_LEN (sizeof(PREFACE) - 1)
#define FRAME_HEADER 9
/* The largest frame a peer may send before SETTINGS_MAX_FRAME_SIZE is
 * raised: the bound on a server's first frame. */
#define FIRST_FRAME_MAX 16384

/* Frame types (RFC 9113, section 6). */
enum {
	DATA = 0, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING,
	GOAWAY, WINDOW_UPDATE, CONTINUATION
};

/* Frame flags. */
#define FLAG_END_STREAM 0x01
#define FLAG_ACK 0x01
#define FLAG_END_HEADERS 0x04
#define FLAG_PADDED 0x08
#define FLAG_PRIORITY 0x20

#define SETTINGS_HEADER_TABLE_SIZE 1

/* Where in the current frame's payload the flow is. */
enum part {
	PART_HEAD = 0,   /* no payload: gathering the next frame's header */
	PART_PAD_LENGTH, /* the pad length byte */
	PART_PRIORITY,   /* HEADERS' stream dependency and weight, skipped */
	PART_PROMISED,   /* PUSH_PROMISE's promised stream id, skipped */
	PART_FRAGMENT,   /* header block bytes */
	PART_FIELD,      /* a fixed field gathered into field[] */
	PART_SKIP        /* bytes passed over: DATA, padding, the rest */
};

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

void agile__h2_reset(struct agile_h2 *w, enum agile_h2_role role)
{
	memset(w, 0, sizeof(*w));
	w->out.from_client = role == AGILE_H2_CLIENT;
	w->in.from_client = role == AGILE_H2_SERVER;
	w->out.stage = w->out.from_client ? AGILE_H2_PREFACE : AGILE_H2_FIRST;
	w->in.stage = w->in.from_client ? AGILE_H2_PREFACE : AGILE_H2_FIRST;
	w->out.report = AGILE_H2_REPORT_ALL;
	w->in.report = AGILE_H2_REPORT_ALL;
}

/* Does the flow report events of this type? */
static inline bool wants(const struct agile_h2_flow *f, uint8_t type)
{
	return (f->report & AGILE_H2_REPORT(type)) != 0;
}

/* Where a header block's bytes go: to the caller, or past it. */
static inline uint8_t block_part(const struct agile_h2_flow *f)
{
	return wants(f, AGILE_H2_EV_FRAGMENT) ? PART_FRAGMENT : PART_SKIP;
}

/* Give up on the flow: everything from here on is walked unread. */
static size_t give_up(struct agile_h2_flow *f, size_t n,
                      struct agile_h2_event *ev)
{
	f->stage = AGILE_H2_OFF;
	ev->type = AGILE_H2_EV_OFF;
	return n;
}

/* The fixed field of a frame type, in bytes. */
static uint8_t field_size(uint8_t type)
{
	return type == RST_STREAM ? 4 : type == GOAWAY ? 8 : 6;
}

/* Is the frame whose header is at head one this flow may carry here? */
static bool frame_fits(const struct agile_h2_flow *f, const uint8_t *head,
                       uint32_t length)
{
	uint8_t type = head[3], flags = head[4];
	uint32_t stream = be32(head + 5) & 0x7fffffff;
	uint32_t least = 0;

	if (f->stage == AGILE_H2_FIRST &&
	    (type > WINDOW_UPDATE || length > FIRST_FRAME_MAX))
		return false;
	/* A header block is a HEADERS or PUSH_PROMISE frame and the
	 * CONTINUATIONs right after it, on its stream. */
	if (f->block_stream != 0)
		return type == CONTINUATION && stream == f->block_stream;
	switch (type) {
	case DATA:
		return stream != 0 && length >= (flags & FLAG_PADDED ? 1u : 0u);
	case CONTINUATION:
		return false; /* no header block is open */
	case HEADERS:
		if (f->from_client && stream % 2 == 0)
			return false;
		least = (flags & FLAG_PADDED ? 1 : 0) +
		        (flags & FLAG_PRIORITY ? 5 : 0);
		break;
	case PUSH_PROMISE:
		if (f->from_client)
			return false;
		least = (flags & FLAG_PADDED ? 1 : 0) + 4;
		break;
	case PRIORITY:
		return stream != 0 && length == 5;
	case RST_STREAM:
		return stream != 0 && length == 4;
	case SETTINGS:
		return stream == 0 && length % 6 == 0 &&
		       !(flags & FLAG_ACK && length != 0);
	case PING:
		return stream == 0 && length == 8;
	case GOAWAY:
		return stream == 0 && length >= 8;
	case WINDOW_UPDATE:
		return length == 4;
	default:
		return true; /* an extension's frame: ignored */
	}
	return stream != 0 && length >= least;
}

/* The frame header at head (the caller's bytes, or f->head gathered
 * across calls) is whole: start its payload.  Reports STREAM_OPEN (the
 * frame began `at` bytes into this call's) or OFF. */
static void begin_frame(struct agile_h2_flow *f, const uint8_t *head,
                        int64_t at, struct agile_h2_event *ev)
{
	uint32_t length = (uint32_t)head[0] << 16 |
	                  (uint32_t)head[1] << 8 | head[2];
	uint8_t type = head[3], flags = head[4];

	if (!frame_fits(f, head, length)) {
		give_up(f, 0, ev);
		return;
	}
	f->stage = AGILE_H2_FRAMES;
	f->type = type;
	f->flags = flags;
	f->stream = be32(head + 5) & 0x7fffffff;
	f->left = length;
	f->pad = 0;
	f->field_have = 0;
	switch (type) {
	case HEADERS:
	case PUSH_PROMISE:
		f->block_stream = f->stream;
		f->block_flags = type == PUSH_PROMISE ? AGILE_H2_PUSH :
		                 flags & FLAG_END_STREAM ? AGILE_H2_END_STREAM :
		                 0;
		f->part = flags & FLAG_PADDED ? PART_PAD_LENGTH :
		          type == PUSH_PROMISE ? PART_PROMISED :
		          flags & FLAG_PRIORITY ? PART_PRIORITY : block_part(f);
		if (type == HEADERS && f->from_client &&
		    f->stream > f->last_opened) {
			f->last_opened = f->stream;
			if (wants(f, AGILE_H2_EV_STREAM_OPEN)) {
				ev->type = AGILE_H2_EV_STREAM_OPEN;
				ev->stream = f->stream;
				ev->frame_at = at;
			}
		}
		break;
	case DATA:
		/* The body is skipped, but a pad longer than the frame is
		 * garbage, as for HEADERS. */
		f->part = flags & FLAG_PADDED ? PART_PAD_LENGTH : PART_SKIP;
		break;
	case CONTINUATION:
		f->part = block_part(f);
		break;
	case RST_STREAM:
	case GOAWAY:
		f->part = PART_FIELD;
		break;
	case SETTINGS:
		f->part = flags & FLAG_ACK ? PART_SKIP : PART_FIELD;
		break;
	default:
		f->part = PART_SKIP;
		break;
	}
}

/* The payload is all walked: what the frame's end says, if anything. */
static void end_frame(struct agile_h2_flow *f, struct agile_h2_event *ev)
{
	f->part = PART_HEAD;
	switch (f->type) {
	case HEADERS:
	case PUSH_PROMISE:
	case CONTINUATION:
		if (!(f->flags & FLAG_END_HEADERS))
			return; /* a CONTINUATION comes next */
		if (wants(f, AGILE_H2_EV_HEADERS_END)) {
			ev->type = AGILE_H2_EV_HEADERS_END;
			ev->stream = f->block_stream;
			ev->flags = f->block_flags;
		}
		f->block_stream = 0;
		f->block_flags = 0;
		return;
	case DATA:
		if ((f->flags & FLAG_END_STREAM) &&
		    wants(f, AGILE_H2_EV_END_STREAM)) {
			ev->type = AGILE_H2_EV_END_STREAM;
			ev->stream = f->stream;
		}
		return;
	default:
		return;
	}
}

/* field[] holds one whole fixed field of the frame: report it. */
static void field_done(struct agile_h2_flow *f, struct agile_h2_event *ev)
{
	f->field_have = 0;
	switch (f->type) {
	case RST_STREAM:
		if (!wants(f, AGILE_H2_EV_RST_STREAM))
			return;
		ev->type = AGILE_H2_EV_RST_STREAM;
		ev->stream = f->stream;
		ev->value = be32(f->field);
		return;
	case GOAWAY:
		f->part = PART_SKIP; /* the debug data */
		if (!wants(f, AGILE_H2_EV_GOAWAY))
			return;
		ev->type = AGILE_H2_EV_GOAWAY;
		ev->stream = be32(f->field) & 0x7fffffff;
		ev->value = be32(f->field + 4);
		return;
	default: /* SETTINGS: one entry, an identifier and a value */
		if ((f->field[0] << 8 | f->field[1]) ==
		    SETTINGS_HEADER_TABLE_SIZE &&
		    wants(f, AGILE_H2_EV_TABLE_SIZE)) {
			ev->type = AGILE_H2_EV_TABLE_SIZE;
			ev->value = be32(f->field + 2);
		}
		return;
	}
}

/* The part after the pad length and the priority or promised id. */
static void after_prefix(struct agile_h2_flow *f)
{
	f->field_have = 0;
	if (f->part == PART_PAD_LENGTH)
		f->part = f->type == DATA ? PART_SKIP :
		          f->type == PUSH_PROMISE ? PART_PROMISED :
		          f->flags & FLAG_PRIORITY ? PART_PRIORITY :
		          block_part(f);
	else
		f->part = block_part(f);
}

/* The preface's next bytes, from p[0, n): how many were walked. */
static size_t walk_preface(struct agile_h2_flow *f, const uint8_t *p,
                           size_t n, struct agile_h2_event *ev)
{
	size_t take = PREFACE_LEN - f->have;

	if (take > n)
		take = n;
	if (memcmp(p, &PREFACE[f->have], take) != 0)
		return give_up(f, n, ev);
	f->have = (uint8_t)(f->have + take);
	if (f->have == PREFACE_LEN) {
		f->have = 0;
		f->stage = AGILE_H2_FRAMES;
	}
	return take;
}

/* The header block bytes of the current frame among the n at p (its
 * padding after them is skipped): how many are walked, reported as a
 * FRAGMENT when the flow asks for them.  A flow that does not, inside a
 * block begun under another mask (a plan's copy of a flow in one), walks
 * them in silence. */
static size_t walk_fragment(struct agile_h2_flow *f, const uint8_t *p,
                            size_t n, struct agile_h2_event *ev)
{
	size_t take = f->left - f->pad;

	if (take > n)
		take = n;
	f->left -= (uint32_t)take;
	if (f->left == f->pad)
		f->part = PART_SKIP;
	if (take > 0 && wants(f, AGILE_H2_EV_FRAGMENT)) {
		ev->type = AGILE_H2_EV_FRAGMENT;
		ev->stream = f->block_stream;
		ev->flags = f->block_flags & AGILE_H2_PUSH;
		ev->fragment = p;
		ev->fragment_len = take;
	}
	return take;
}

size_t agile__h2_walk(struct agile_h2_flow *f, const uint8_t *p, size_t n,
                      struct agile_h2_event *ev)
{
	size_t i = 0;

	memset(ev, 0, sizeof(*ev));
	/* Every way to give up returns at once. */
	if (f->stage == AGILE_H2_OFF)
		return n;
	for (;;) {
		size_t take;

		if (f->part != PART_HEAD && f->left == 0) {
			end_frame(f, ev);
			if (ev->type != AGILE_H2_EV_NONE)
				return i;
			continue;
		}
		if (i == n)
			return i;
		if (f->stage == AGILE_H2_PREFACE) {
			i += walk_preface(f, p + i, n - i, ev);
			if (ev->type != AGILE_H2_EV_NONE)
				return n;
			continue;
		}
		switch (f->part) {
		case PART_HEAD: {
			const uint8_t *head = p + i;

			if (f->have != 0 || n - i < FRAME_HEADER) {
				/* Gathered across calls; the usual case, a
				 * whole header in the caller's bytes, is read
				 * where it is. */
				take = FRAME_HEADER - f->have;
				if (take > n - i)
					take = n - i;
				memcpy(f->head + f->have, p + i, take);
				f->have = (uint8_t)(f->have + take);
				if (f->have < FRAME_HEADER)
					return i + take;
				head = f->head;
				f->have = 0;
				i += take;
			} else {
				i += FRAME_HEADER;
			}
			begin_frame(f, head, (int64_t)i - FRAME_HEADER, ev);
			if (ev->type == AGILE_H2_EV_OFF)
				return n;
			if (ev->type != AGILE_H2_EV_NONE)
				return i;
			/* A payload passed over and whole in the bytes (a
			 * DATA body, a block no decoder reads, a
			 * WINDOW_UPDATE): past it at once, to its end. */
			if (f->part == PART_SKIP && f->left <= n - i) {
				i += f->left;
				f->left = 0;
			}
			break;
		}
		case PART_PAD_LENGTH:
			f->pad = p[i++];
			f->left--;
			/* The priority fields or the promised id, and the
			 * padding, within the frame. */
			if ((uint32_t)f->pad +
			    (f->type == PUSH_PROMISE ? 4 :
			     f->type == HEADERS && f->flags & FLAG_PRIORITY ? 5 :
			     0) > f->left)
				return give_up(f, n, ev);
			after_prefix(f);
			break;
		case PART_PRIORITY:
		case PART_PROMISED:
			take = (size_t)(f->part == PART_PRIORITY ? 5 : 4) -
			       f->field_have;
			if (take > n - i)
				take = n - i;
			f->field_have = (uint8_t)(f->field_have + take);
			f->left -= (uint32_t)take;
			i += take;
			if (f->field_have == (f->part == PART_PRIORITY ? 5 : 4))
				after_prefix(f);
			break;
		case PART_FRAGMENT:
			i += walk_fragment(f, p + i, n - i, ev);
			if (ev->type != AGILE_H2_EV_NONE)
				return i;
			break;
		case PART_FIELD:
			take = field_size(f->type) - f->field_have;
			if (take > n - i)
				take = n - i;
			memcpy(f->field + f->field_have, p + i, take);
			f->field_have = (uint8_t)(f->field_have + take);
			f->left -= (uint32_t)take;
			i += take;
			if (f->field_have == field_size(f->type)) {
				field_done(f, ev);
				if (ev->type != AGILE_H2_EV_NONE)
					return i;
			}
			break;
		default: /* PART_SKIP */
			take = f->left;
			if (take > n - i)
				take = n - i;
			f->left -= (uint32_t)take;
			i += take;
			break;
		}
	}
}

void agile__h2_cursor_init(struct agile_h2_cursor *c, const struct iovec *iov,
                           int count, size_t len)
{
	memset(c, 0, sizeof(*c));
	c->iov = iov;
	c->count = iov != NULL && count > 0 ? count : 0;
	c->left = len;
}

void agile__h2_next(struct agile_h2_flow *f, struct agile_h2_cursor *c,
                    struct agile_h2_event *ev)
{
	for (;;) {
		const uint8_t *p = NULL;
		size_t n = 0, used;

		if (c->index < c->count && c->left > 0) {
			n = c->iov[c->index].iov_len - c->offset;
			if (n > c->left)
				n = c->left;
			p = c->iov[c->index].iov_base;
			if (p == NULL && n > 0) {
				/* Bytes that are not in memory cannot be
				 * walked: the flow loses its place. */
				memset(ev, 0, sizeof(*ev));
				if (f->stage != AGILE_H2_OFF)
					give_up(f, 0, ev);
				c->done += c->left;
				c->left = 0;
				return;
			}
			if (p != NULL)
				p += c->offset;
		}
		used = agile__h2_walk(f, p, n, ev);
		if (ev->type == AGILE_H2_EV_STREAM_OPEN)
			ev->frame_at += (int64_t)c->done;
		c->offset += used;
		c->done += used;
		c->left -= used;
		if (c->index < c->count &&
		    c->offset >= c->iov[c->index].iov_len) {
			c->index++;
			c->offset = 0;
		}
		if (ev->type != AGILE_H2_EV_NONE || c->left == 0 ||
		    c->index >= c->count)
			return;
	}
}

void agile__h2_plan(const struct agile_h2_flow *f, const struct iovec *iov,
                    int count, size_t len, struct agile_h2_plan *plan)
{
	struct agile_h2_flow *copy = &plan->after;
	struct agile_h2_cursor c;
	struct agile_h2_event ev;

	memcpy(copy, f, sizeof(*copy));
	copy->report = AGILE_H2_REPORT(AGILE_H2_EV_STREAM_OPEN) |
	               AGILE_H2_REPORT(AGILE_H2_EV_TABLE_SIZE) |
	               AGILE_H2_REPORT(AGILE_H2_EV_RST_STREAM);
	agile__h2_cursor_init(&c, iov, count, len);
	plan->opens = 0;
	plan->stream = 0;
	plan->cut = len;
	plan->table_size = 0;
	plan->quiet = true;
	do {
		agile__h2_next(copy, &c, &ev);
		switch (ev.type) {
		case AGILE_H2_EV_STREAM_OPEN:
			if (plan->opens < AGILE_H2_PLAN_STREAMS)
				plan->streams[plan->opens] = ev.stream;
			else
				plan->quiet = false;
			if (++plan->opens == 1)
				plan->stream = ev.stream;
			else if (plan->opens == 2)
				plan->cut = ev.frame_at > 0 ? (size_t)ev.frame_at
				                            : 0;
			break;
		case AGILE_H2_EV_TABLE_SIZE:
			if (ev.value > plan->table_size)
				plan->table_size = ev.value;
			plan->quiet = false;
			break;
		case AGILE_H2_EV_NONE:
			break;
		default: /* RST_STREAM, OFF */
			plan->quiet = false;
			break;
		}
	} while (ev.type != AGILE_H2_EV_NONE && ev.type != AGILE_H2_EV_OFF);
}

size_t agile__h2_frame_rest(const struct agile_h2_flow *f,
                            const struct iovec *iov, int count, size_t len)
{
	uint8_t head[FRAME_HEADER];
	size_t have = f->have, rest;
	int i;

	if (f->stage == AGILE_H2_OFF || f->stage == AGILE_H2_PREFACE)
		return len;
	if (agile__h2_between_frames(f))
		return 0;
	if (f->part != PART_HEAD)
		return f->left < len ? f->left : len;
	/* A frame header begun or to come: its length says the rest. */
	memcpy(head, f->head, have);
	for (i = 0; i < count && have < FRAME_HEADER; i++) {
		const uint8_t *p = iov[i].iov_base;

		for (size_t j = 0; j < iov[i].iov_len && have < FRAME_HEADER &&
		     have - f->have < len; j++)
			head[have++] = p[j];
	}
	if (have < FRAME_HEADER)
		return len;
	rest = FRAME_HEADER - f->have +
	       ((size_t)head[0] << 16 | (size_t)head[1] << 8 | head[2]);
	return rest < len ? rest : len;
}
