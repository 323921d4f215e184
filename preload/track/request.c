/*
 * request.c - the end of a request and its round-trip sample: the verdict
 * of proto=http on the answer (http.c), an HTTP/2 stream's end, a
 * truncation, and TLS 1.3's ticket rule, which holds a connection's first
 * round trip open past the server's session tickets.
 */
#include "config.h"

#include "agile.h"
#include "atomics.h"
#include "clock.h"
#include "destinations.h"
#include "h2conn.h"
#include "resilience_hook.h"
#include "track_internal.h"

/* Record a round trip of rtt as a verdict says (http.c). */
static void record_verdict(struct agile_fd *t, struct agile_state_slot *s,
                           enum agile_http_verdict verdict, int64_t rtt,
                           int64_t now)
{
	switch (verdict) {
	case AGILE_HTTP_SAMPLE:
		agile_rate_observe(&s->limiter, rtt);
		agile__resilience_outcome(t, s, AGILE_OUTCOME_ANSWERED, rtt,
		                          now);
		break;
	case AGILE_HTTP_SKIP:
		agile__resilience_outcome(t, s, AGILE_OUTCOME_ANSWERED, 0, now);
		break;
	case AGILE_HTTP_REFUSED:
		agile_rate_unavailable(&s->limiter);
		agile__add_u64(&s->unreachable, 1);
		agile__resilience_outcome(t, s, AGILE_OUTCOME_TRUNCATED, rtt,
		                          now);
		break;
	case AGILE_HTTP_FAILED:
		agile_rate_observe(&s->limiter, rtt);
		agile__resilience_outcome(t, s, AGILE_OUTCOME_TRUNCATED, rtt,
		                          now);
		break;
	case AGILE_HTTP_TRUNCATED:
		agile_rate_observe_truncated(&s->limiter, rtt);
		agile__add_u64(&s->truncated, 1);
		agile__resilience_outcome(t, s, AGILE_OUTCOME_TRUNCATED, rtt,
		                          now);
		break;
	}
}

/* A stream's round trip ended (h2conn.h): a sample, or a truncation;
 * with proto=http and its answer decoded, what its status says, as for
 * HTTP/1 (http.c). */
void agile__track_h2_ended(struct agile_fd *t, int64_t rtt_ns, int64_t now,
                           bool answered,
                           const struct agile_h2_fields *fields,
                           bool excluded)
{
	struct agile_state_slot *s = slot_of(t);
	enum agile_http_verdict verdict = answered ? AGILE_HTTP_SAMPLE :
	                                             AGILE_HTTP_TRUNCATED;

	if (answered && excluded) {
		agile__add_u64(&s->resilience.http_excluded, 1);
		verdict = AGILE_HTTP_SKIP;
	} else if (answered && fields != NULL) {
		verdict = agile__http_h2_verdict(s,
		                                 &agile__destinations_rule(t->dest)->resilience,
		                                 fields, now, agile__unix_ns());
	}
	record_verdict(t, s, verdict, rtt_ns, now);
	agile__destinations_tick(t->dest, s, now);
}

/* Whether an HTTP/2 request's :path is one of exclude= (h2conn.h). */
bool agile__track_h2_excluded(const struct agile_fd *t, const char *path,
                              size_t len)
{
	const struct agile_resilience_config *c =
		&agile__destinations_rule(t->dest)->resilience;

	return c->proto == AGILE_PROTO_HTTP && c->exclude_count > 0 &&
	       agile__http_path_excluded(c, path, len);
}

/* The first response bytes of a request: one round-trip sample, unless
 * proto=http says otherwise (http.c). */
void agile__track_answered(struct agile_fd *t, struct agile_state_slot *s,
                           int64_t rtt, int64_t now, const void *data,
                           size_t len)
{
	enum agile_http_verdict verdict = AGILE_HTTP_SAMPLE;

	const struct agile_resilience_config *c =
		&agile__destinations_rule(t->dest)->resilience;

	if (c->proto == AGILE_PROTO_HTTP)
		verdict = agile__http_response(t, c, s, data, len, now,
		                               agile__unix_ns());
	record_verdict(t, s, verdict, rtt, now);
}

/*
 * The first request of a TLS 1.3 connection usually goes out before the
 * server's NewSessionTickets, its answer to the client's Finished, have
 * arrived; taken as the response they would end the round trip early, at
 * the handshake's echo, however long the request itself takes.  So that
 * request (AGILE_TLS_TICKET_RULE) is answered at the server's first record
 * as far as pacing goes (the next request takes a grant), but its round
 * trip is held open until a record arrives that is not as long as that
 * first one: a server's tickets all have one length (tls.c leaves records
 * of that length out of AGILE_TLS_RECV_RESPONSE), its response's records
 * another.  When none comes before the client's next send, close or end
 * of file, the round trip ends at the first record: there were no tickets
 * and the response was one record, or tickets and response came together.
 * No timing is involved: Python's server, with Nagle's algorithm against
 * the client's delayed ACK, sends its second ticket 40 ms after the first,
 * and a response's header and body records may come as far apart.  What
 * this gets wrong: a server that sends no tickets is measured to the second
 * record of its response, late by the time between the two when they come
 * apart (a streamed body), and a response as long as the tickets is
 * skipped.
 */

/* End the round trip the ticket rule holds, if any, at tls_end_ns.  With
 * none held and no request in flight, the rule did not take hold (the
 * first request was answered some other way): it is dropped.  `now` is 0
 * when the caller has not read the clock: it is read only if a round trip
 * is held (a plain connection's end of file and close read none). */
__attribute__((noinline)) void
agile__track_tls_answer_now(struct agile_fd *t, int64_t now)
{
	int64_t start = __atomic_exchange_n(&t->tls_start_ns, 0,
	                                    __ATOMIC_ACQ_REL);

	if (start == 0)
		return;
	__atomic_fetch_and(&t->tls.flags, (uint16_t)~AGILE_TLS_TICKET_RULE,
	                   __ATOMIC_RELAXED);
	agile__track_answered(t, slot_of(t),
	         __atomic_load_n(&t->tls_end_ns, __ATOMIC_RELAXED) - start,
	         now != 0 ? now : agile__now_ns(), NULL, 0);
}

void agile__track_truncate_request(struct agile_fd *t)
{
	int64_t start = claim_request(t);
	struct agile_state_slot *s;
	int64_t now;

	if (start == 0)
		return;
	s = slot_of(t);
	now = agile__now_ns();
	agile_rate_observe_truncated(&s->limiter, now - start);
	agile__add_u64(&s->truncated, 1);
	agile__resilience_outcome(t, s, AGILE_OUTCOME_TRUNCATED, now - start,
	                          now);
	agile__destinations_tick(t->dest, s, now);
}
