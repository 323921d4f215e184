/*
 * h2walk.h - the HTTP/2 frame walker: what the frames of one connection
 * say about its streams, from the bytes the program sends and receives,
 * in whatever pieces the calls move them (RFC 9113).
 *
 * One walker per connection, one flow per direction.  Each flow keeps its
 * place across partial writes, split reads, iovec arrays and frames that
 * straddle calls; it reads frame headers and the few fixed fields it
 * needs (a pad length, RST_STREAM's and GOAWAY's codes, SETTINGS entries),
 * skips DATA payloads and everything else by length without looking at
 * them, and hands the header block fragments of HEADERS, PUSH_PROMISE and
 * CONTINUATION frames to the caller as slices of the caller's own bytes
 * (padding and priority fields removed), which the caller may pass to an
 * HPACK decoder (h2hpack.h).  Nothing is copied, allocated or buffered
 * beyond a 9-byte frame header and an 8-byte field.
 *
 * What it reports (struct agile_h2_event), one event per call:
 *   STREAM_OPEN   the client's HEADERS opening a new stream: an odd id above
 *                 every id opened before on the connection.  frame_at says
 *                 where the frame began, so that a sender can stop just
 *                 before the next stream's frame (agile__h2_plan).
 *   FRAGMENT      header block bytes of `stream`.
 *   HEADERS_END   the end of a header block (END_HEADERS, after its
 *                 CONTINUATIONs): the request's or response's headers, a
 *                 1xx, trailers, or (AGILE_H2_PUSH) a server push's promise.
 *                 AGILE_H2_END_STREAM: the HEADERS also ended the stream.
 *   END_STREAM    a DATA frame with END_STREAM, once its last byte came.
 *   RST_STREAM    either side reset `stream` (value: the error code).
 *   GOAWAY        the sender stops at stream `stream` (its last stream id;
 *                 value: the error code).
 *   TABLE_SIZE    a SETTINGS entry SETTINGS_HEADER_TABLE_SIZE of `value`:
 *                 the most the sender lets the other side's HPACK encoder
 *                 use, so the decoder of the other direction may need it.
 *   OFF           these are not HTTP/2 frames (no client preface, a first
 *                 frame that no HTTP/2 peer sends, a CONTINUATION out of
 *                 place, a frame field too short): the flow gives up for
 *                 good and every later call reports nothing.
 * SETTINGS, PING, WINDOW_UPDATE and PRIORITY frames, the bodies of DATA
 * frames and frames of unknown types report nothing: they neither take
 * grants nor end round trips.
 *
 * Which response is a stream's answer (the first HEADERS that is not 1xx)
 * is the caller's to decide with the decoded :status: a 1xx is told apart
 * only by HPACK (:status 1xx is no static-table entry and may be a
 * dynamic-table reference).  Which stream ids are in flight is also the
 * caller's: the walker keeps only the highest one opened.
 *
 * Pure: no system call, no clock, no allocation, no pointer in its state
 * (a walker may be copied, as agile__h2_plan does).  A flow is driven by
 * one thread at a time (the sending side and the receiving side may be
 * two threads: the two flows share nothing).
 *
 * Rejected: gathering each header block whole into a fixed buffer in the
 * walker.  It copies every header byte, costs the buffer in every
 * connection's state, and a block larger than it is lost to HPACK, whose
 * dynamic table then no longer matches the sender's for the rest of the
 * connection.  nghttp2's inflater is made to be fed a block in pieces (as
 * nghttp2_session feeds it each read's share of a frame), so the fragments
 * go to it as they come.
 */
#ifndef AGILE_PRELOAD_H2WALK_H
#define AGILE_PRELOAD_H2WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Which side of the connection the program is. */
enum agile_h2_role {
	AGILE_H2_CLIENT = 0, /* it connected: it sends requests */
	AGILE_H2_SERVER      /* it accepted: it receives them */
};

/* Where a flow is. */
enum agile_h2_stage {
	AGILE_H2_PREFACE = 0, /* the client's flow: its 24-byte preface */
	AGILE_H2_FIRST,       /* the server's flow: its first frame */
	AGILE_H2_FRAMES,      /* frames */
	AGILE_H2_OFF          /* not HTTP/2: given up */
};

enum agile_h2_event_type {
	AGILE_H2_EV_NONE = 0, /* the bytes are walked: nothing more to say */
	AGILE_H2_EV_STREAM_OPEN,
	AGILE_H2_EV_FRAGMENT,
	AGILE_H2_EV_HEADERS_END,
	AGILE_H2_EV_END_STREAM,
	AGILE_H2_EV_RST_STREAM,
	AGILE_H2_EV_GOAWAY,
	AGILE_H2_EV_TABLE_SIZE,
	AGILE_H2_EV_OFF
};

/* The bit of event type t in a flow's report mask.  A caller that has
 * no use for an event clears its bit: each event reported is a return
 * from the walk and a call back into it, most of the walk's cost on
 * small frames (a connection with no HPACK decoder has no use for
 * FRAGMENT, a send's plan only for STREAM_OPEN and TABLE_SIZE).  OFF is
 * always reported. */
#define AGILE_H2_REPORT(t) ((uint8_t)(1u << (t)))
#define AGILE_H2_REPORT_ALL ((uint8_t)0xfe)

/* Event flags. */
#define AGILE_H2_END_STREAM 0x1 /* HEADERS_END: the HEADERS ended the stream */
#define AGILE_H2_PUSH 0x2       /* HEADERS_END, FRAGMENT: a PUSH_PROMISE's */

struct agile_h2_event {
	uint8_t type;           /* enum agile_h2_event_type */
	uint8_t flags;          /* AGILE_H2_* above */
	uint32_t stream;        /* the stream id (GOAWAY: the last one) */
	uint32_t value;         /* an error code, or the table size */
	int64_t frame_at;       /* STREAM_OPEN: where its frame's first byte
	                           is, from the start of the bytes of this
	                           call; below 0 when it came in an earlier
	                           one */
	const uint8_t *fragment; /* FRAGMENT: the bytes, in the caller's */
	size_t fragment_len;
};

/* One direction's place. */
struct agile_h2_flow {
	uint8_t stage;        /* enum agile_h2_stage */
	uint8_t from_client;  /* 1: the client's bytes (requests) */
	uint8_t have;         /* bytes of head[] gathered, or of the preface
	                         matched */
	uint8_t head[9];      /* the frame header being gathered */
	uint8_t part;         /* where in the frame's payload (h2walk.c) */
	uint8_t type;         /* the current frame's type */
	uint8_t flags;        /* and flags */
	uint8_t pad;          /* padding bytes still to come at its end */
	uint8_t field_have;   /* bytes of field[] gathered */
	uint8_t field[8];     /* a fixed field of the payload being gathered */
	uint8_t block_flags;  /* the open header block's AGILE_H2_* */
	uint8_t report;       /* the events the flow reports, a bit each
	                         (AGILE_H2_REPORT); the others are walked past
	                         in silence, and header block bytes no one
	                         asked for are skipped like a DATA body */
	uint32_t stream;      /* the current frame's stream id */
	uint32_t left;        /* its payload bytes still to come */
	uint32_t block_stream; /* the stream whose header block awaits its
	                          CONTINUATION, 0 none */
	uint32_t last_opened; /* the client's flow: the highest stream id a
	                         HEADERS opened, 0 none */
};

struct agile_h2 {
	struct agile_h2_flow out; /* the bytes the program sends */
	struct agile_h2_flow in;  /* the bytes it receives */
};

/* Start walking a new connection from its first byte either way, both
 * flows reporting every event.  A
 * client's walker may start late on the receiving side (the server's first
 * frames read before the preface was sent), as long as it starts there at
 * a frame boundary: the server's flow only checks that its first frame is
 * one an HTTP/2 server may send. */
void agile__h2_reset(struct agile_h2 *w, enum agile_h2_role role);

static inline uint8_t agile__h2_stage(const struct agile_h2_flow *f)
{
	return f->stage;
}

/*
 * Walk the n bytes at p, the next of the flow's: report the next event in
 * *ev and return how many of the bytes were walked up to it.  Call again
 * with the bytes after those, until an event AGILE_H2_EV_NONE says all n
 * were walked and nothing is left to report; an event may come with 0
 * bytes walked (two at one place), and a call with n == 0 may still have
 * one to report.
 */
size_t agile__h2_walk(struct agile_h2_flow *f, const uint8_t *p, size_t n,
                      struct agile_h2_event *ev);

/* The bytes of one call, walked in order across its iovecs. */
struct agile_h2_cursor {
	const struct iovec *iov;
	int count;
	int index;      /* the iovec being walked */
	size_t offset;  /* bytes of it walked */
	size_t left;    /* bytes of the call still to walk */
	size_t done;    /* bytes of the call walked */
};

/* Walk the first len bytes of iov[0, count). */
void agile__h2_cursor_init(struct agile_h2_cursor *c, const struct iovec *iov,
                           int count, size_t len);

/* agile__h2_walk across the cursor's iovecs: the next event, with frame_at
 * measured from the start of the call's bytes; AGILE_H2_EV_NONE when they
 * are all walked. */
void agile__h2_next(struct agile_h2_flow *f, struct agile_h2_cursor *c,
                    struct agile_h2_event *ev);

#define AGILE_H2_PLAN_STREAMS 10

/* What a send would carry, by the spacing rule: a send opens at most one
 * stream, and waits for that stream's grant. */
struct agile_h2_plan {
	uint32_t opens; /* new streams the bytes open (a frame header that the
	                   bytes complete counts, wherever it began) */
	uint32_t stream; /* the first of them, the one a send cut at `cut`
	                    opens, 0 none: the caller enters it in its stream
	                    table before the call, since the answer may be
	                    read before this thread has walked the send */
	size_t cut;     /* where the second of them begins: send no more than
	                   this; len when they open fewer than two */
	uint32_t table_size; /* the largest SETTINGS_HEADER_TABLE_SIZE the
	                        bytes carry, 0 none: the caller grows the
	                        other direction's decoder before the call,
	                        since the peer may answer with a block that
	                        uses it before this thread has walked the
	                        bytes sent */
	/* What walking all len bytes again would find, for a send that
	 * takes them all (h2conn.c): the flow after them (its report mask
	 * the plan's own), and, when `quiet`, that their only events are
	 * the opens of `streams` (the first AGILE_H2_PLAN_STREAMS of them,
	 * and quiet only if there are no more). */
	bool quiet;
	uint32_t streams[AGILE_H2_PLAN_STREAMS];
	struct agile_h2_flow after;
};

/* Plan the send of the first len bytes of iov[0, count) on the flow f,
 * without moving it (a copy is walked). */
void agile__h2_plan(const struct agile_h2_flow *f, const struct iovec *iov,
                    int count, size_t len, struct agile_h2_plan *plan);

/* Whether the flow is between two frames: a whole frame of someone else's
 * may go into its bytes here without the peer seeing a torn frame (its
 * first frame sent, no frame header or payload begun). */
static inline bool agile__h2_between_frames(const struct agile_h2_flow *f)
{
	return f->stage == AGILE_H2_FRAMES && f->part == 0 && f->have == 0;
}

/* How many of the first len bytes of iov[0, count), the flow's next, end
 * the frame it is in (or, before its first frame, that frame): 0 between
 * frames; len when the frame does not end within them or they do not say
 * where it ends. */
size_t agile__h2_frame_rest(const struct agile_h2_flow *f,
                            const struct iovec *iov, int count, size_t len);

#endif /* AGILE_PRELOAD_H2WALK_H */
