/*
 * clients_hook.c - client_rate=R[,burst=B] on a listener: one token bucket
 * per client, in the slot's table of the state file (agile_clients.h), so
 * every worker process of the server (nginx's, a pre-forked Python's)
 * spends the same client's tokens.  A client is its peer address, cut to
 * client_prefix= bits (64 by default: an IPv6 /64, an IPv4 address whole),
 * or with proto=http and client_key=header:NAME the value of that request
 * header (the address when a request has none).
 *
 * The table is bounded by clients= (at most AGILE_CLIENTS_MAX): idle keys
 * go after twice their refill window, and beyond the bound the least
 * recently seen one is displaced; agilestat shows both counts apart.  The
 * first process to use it draws the hash key that defends it against
 * chosen collisions; the lock (a pid word, shlock.h) is held for one
 * lookup.
 *
 * Refused with proto=http, a request is answered 429 with the Retry-After
 * of its bucket's next token (inbound.c); without it the connection is
 * shed at accept.  Whole seconds cannot say a next token that is under a
 * second away, so the header says the whole second nearest it within one
 * refill interval: rounded up where that is close enough (a retry then is
 * served unless the client spent the token meanwhile), rounded down
 * otherwise.  A bucket that refills faster than once a second
 * (client_rate=5: a token every 200 ms) has its next token at most one
 * interval away, where "1" would be up to 0.8 s late, so its refusals say
 * "Retry-After: 0": retry now, the token is moments away.  A client that
 * retries at once may be refused again, as it would without the header;
 * the common ones (urllib3's Retry, curl --retry) read a 0 as no advice
 * and back off their own way.
 */
#include "config.h"

#include <string.h>
#include <sys/random.h>

#include "clock.h"
#include "resilience_hook.h"
#include "shlock.h"

/* The slot's initialisation set the table up (resilience.c) with no hash
 * key yet: the first process to use it draws one, before any key is
 * hashed.  A table another process garbled into "not set up" is set up
 * again. */
static void set_up(struct agile_client_table *t,
                   const struct agile_resilience_config *c, int64_t now)
{
	uint64_t key[2] = { 0, 0 };

	if (getrandom(key, sizeof(key), GRND_NONBLOCK) != (ssize_t)sizeof(key)) {
		key[0] = (uint64_t)now;
		key[1] = (uint64_t)getpid();
	}
	if (t->capacity == 0) {
		/* The rules parser bounded every setting: init cannot
		 * refuse them. */
		(void)agile_clients_init(t, c->client_rate, c->client_burst,
		                         c->clients > 0 ? c->clients
		                                        : AGILE_CLIENTS_MAX,
		                         key);
	} else {
		t->hash_key[0] = key[0];
		t->hash_key[1] = key[1] | 1; /* never both zero again */
	}
}

bool agile__clients_admit(struct agile_state_resilience *z,
                          const struct agile_resilience_config *c,
                          const void *key, size_t len, int64_t now_ns,
                          int64_t *retry_ns)
{
	struct agile_client_table *t = &z->clients;
	bool allowed;

	agile__shlock(&z->clients_lock);
	if (t->capacity == 0 || (t->hash_key[0] == 0 && t->hash_key[1] == 0))
		set_up(t, c, now_ns);
	allowed = agile_clients_allow(t, agile_clients_key(t, key, len), now_ns,
	                              retry_ns);
	agile__shunlock(&z->clients_lock);
	if (!allowed && *retry_ns > 0 && c->client_rate > 0) {
		int64_t up = (*retry_ns + AGILE_NS_PER_S - 1) / AGILE_NS_PER_S *
		             AGILE_NS_PER_S;

		/* The next token is at most one interval away: where "1" is
		 * later than that, "0" is within it. */
		*retry_ns = (double)(up - *retry_ns) > 1e9 / c->client_rate
		            ? AGILE__RETRY_NOW : up;
	}
	return allowed;
}

size_t agile__clients_address(const struct agile_resilience_config *c,
                              const struct sockaddr *addr, socklen_t len,
                              uint8_t out[AGILE_CLIENTS_ADDRESS_MAX])
{
	return agile_clients_address(c->client_prefix, addr, len, out);
}
