/*
 * fleet_lease.c - leases of fleet slots from Redis: the LEASE script's
 * round trip (synchronous, or fetched ahead and collected by the next
 * caller), installing its reply as this host's slots, and admission, which
 * takes a call's slot from the current lease or waits for the next.  The
 * Redis turn and the clock offsets are fleet.c's opening comment.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "destinations.h"
#include "fleet_internal.h"
#include "fleet_scripts.h"
#include "log.h"
#include "symbols.h"

/* ------------------------------------------------------------------------ */
/* Leases                                                                    */
/* ------------------------------------------------------------------------ */

#define CURSOR(number, used) (((uint64_t)(number) << 32) | (uint64_t)(used))

/* Note unused window members of a lease left behind, for the next round
 * trip to hand back (one pending hand-back at a time; a second one is
 * simply left to expire in Redis). */
static void note_handback(struct agile_fleet_record *rec, uint64_t number,
                          uint64_t used, uint64_t count)
{
	uint64_t zero = 0;
	uint64_t word;

	if (used >= count || count > 0xffff || number >= 0xffffffffu)
		return;
	word = ((number + 1) << 32) | (used << 16) | count;
	agile__cas_u64(&rec->handback, &zero, word);
}

/*
 * Take the next slot of the lease under the cursor: its time (>= now), or
 * -1 when no installed lease has one left.  Exhausted and expired leases
 * are stepped over.
 */
static int64_t lease_take(struct agile_fleet_record *rec, int64_t now)
{
	for (;;) {
		uint64_t cur = agile__load_u64(&rec->cursor);
		uint64_t number = cur >> 32, used = cur & 0xffffffffu;
		struct agile_fleet_lease *l =
			&rec->lease[number % AGILE_FLEET_LEASES];
		uint64_t seen = agile__load_u64(&l->number);
		int64_t start = agile__load_i64(&l->start_ns);
		int64_t interval = agile__load_i64(&l->interval_ns);
		uint64_t count = agile__load_u64(&l->count);
		int64_t expires = agile__load_i64(&l->expires_ns);
		uint64_t window_id = agile__load_u64(&l->window_id);
		int64_t slot;

		if (seen != number + 1 || agile__load_u64(&l->number) != seen) {
			/* Not installed yet, or rewritten under a stale
			 * cursor: look again only if the cursor moved. */
			if (agile__load_u64(&rec->cursor) != cur)
				continue;
			return -1;
		}
		if (used >= count || now >= expires) {
			struct agile_fleet_lease *next =
				&rec->lease[(number + 1) % AGILE_FLEET_LEASES];

			if (agile__load_u64(&next->number) != number + 2)
				return -1;
			if (agile__cas_u64(&rec->cursor, &cur,
			                   CURSOR(number + 1, 0)) &&
			    window_id != 0)
				note_handback(rec, number, used, count);
			continue;
		}
		if (!agile__cas_u64(&rec->cursor, &cur, cur + 1))
			continue;
		slot = start + (int64_t)used * interval;
		return slot > now ? slot : now;
	}
}

/* Slots left in the installed leases from the cursor on, and how many
 * leases are installed ahead of the cursor's. */
static uint64_t lease_remaining(struct agile_fleet_record *rec, int64_t now,
                                uint64_t *ahead)
{
	uint64_t cur = agile__load_u64(&rec->cursor);
	uint64_t number = cur >> 32, used = cur & 0xffffffffu;
	uint64_t installed = agile__load_u64(&rec->leases);
	uint64_t left = 0;

	*ahead = installed > number + 1 ? installed - number - 1 : 0;
	for (uint64_t n = number; n < installed; n++) {
		struct agile_fleet_lease *l = &rec->lease[n % AGILE_FLEET_LEASES];
		uint64_t count = agile__load_u64(&l->count);

		if (agile__load_u64(&l->number) != n + 1 ||
		    now >= agile__load_i64(&l->expires_ns))
			continue;
		left += n == number ? (count > used ? count - used : 0) : count;
	}
	return left;
}

static void lease_install(struct agile_fleet_record *rec, int64_t start,
                          int64_t interval, uint64_t count, int64_t expires,
                          uint64_t window_id)
{
	uint64_t number = agile__load_u64(&rec->leases);
	uint64_t at = agile__load_u64(&rec->cursor) >> 32;
	struct agile_fleet_lease *l = &rec->lease[number % AGILE_FLEET_LEASES];

	if (number >= at + AGILE_FLEET_LEASES) {
		/* The ring is full of leases nobody took from, which only a
		 * cursor stuck on a live lease can cause: move it on. */
		agile__store_u64(&rec->cursor, CURSOR(number -
		                                      AGILE_FLEET_LEASES + 1, 0));
	}
	agile__store_u64(&l->number, 0);
	agile__store_i64(&l->start_ns, start);
	agile__store_i64(&l->interval_ns, interval);
	agile__store_u64(&l->count, count);
	agile__store_i64(&l->expires_ns, expires);
	agile__store_u64(&l->window_id, window_id);
	agile__store_u64(&l->number, number + 1);
	agile__store_u64(&rec->leases, number + 1);
}
/* ------------------------------------------------------------------------ */
/* Round trips                                                               */
/* ------------------------------------------------------------------------ */

/* Run a script within the deadline and count the round trips. */
int agile__fleet_eval(struct fleet_dest *f, int script, int nkeys,
                      const char **keys, int nargs, const char **args,
                      const size_t *lens, const struct agile_resp **reply,
                      int64_t deadline)
{
	uint64_t before = f->conn.round_trips, connects = f->conn.connects;
	int64_t start = agile__now_ns();
	int rc;

	pid_lock(&f->io_owner);
	if (__atomic_load_n(&f->pending_pid, __ATOMIC_ACQUIRE) != 0) {
		/* An asynchronous LEASE never collected: its turn expired, or
		 * this holder would not be here.  Its reply would be read as
		 * this call's, so the connection goes with it. */
		agile__redis_drop(&f->conn);
		__atomic_store_n(&f->pending_pid, 0, __ATOMIC_RELEASE);
	}
	agile__enter();
	rc = agile__redis_eval(&f->conn, script, nkeys, keys, nargs, args, lens,
	                      reply, deadline);
	agile__leave();
	pid_unlock(&f->io_owner);
	agile__add_u64(&f->rec->round_trips, f->conn.round_trips - before);
	agile__max_u64((uint64_t *)&f->rec->max_wait_ns,
	               (uint64_t)(agile__now_ns() - start));
	if (rc == 0 && f->conn.connects == connects)
		f->rtt_ns = agile__now_ns() - start;
	if (f->conn.connects != connects && agile__log_enabled(AGILE_LOG_INFO)) {
		char where[300];

		agile__redis_addr_format(&f->conn.addr, where, sizeof(where));
		agile__log(AGILE_LOG_INFO, "destination %s: connected to Redis "
		           "%s (descriptor %d)", f->rule->name, where,
		           f->conn.fd);
	}
	return rc;
}

/* How many slots to ask for: about LEASE_SPAN of this host's demand (its
 * admissions per second, smoothed over DEMAND_TAU_S), or as many as calls
 * found none since the last lease if more, within LEASE_SPAN of the whole
 * fleet's rate. */
static uint64_t lease_want(struct fleet_dest *f, int64_t now)
{
	struct agile_fleet_record *rec = f->rec;
	const struct agile_fleet_rule *fr = &f->rule->fleet;
	uint64_t admits = agile__load_u64(&rec->admits);
	int64_t last = agile__load_i64(&rec->fetch_ns);
	double demand = agile__load_double(&rec->demand_per_s);
	double want, starved, cap = 1e9;

	if (last > 0 && now > last) {
		double elapsed = (double)(now - last) / AGILE_NS_PER_S;
		double sample = (double)(admits - agile__load_u64(
		                         &rec->admits_at_fetch)) / elapsed;

		/* exp(-t/tau) as exp2: the preload binds only the libm
		 * functions the core uses (lazymath.c). */
		demand += (1 - exp2(-elapsed / (DEMAND_TAU_S * M_LN2))) *
		          (sample - demand);
	}
	/* The first lease is sized by the calls waiting for it alone: a
	 * guess from the local rate would hoard the fleet's slots for a host
	 * that may want a few. */
	agile__store_double(&rec->demand_per_s, demand);
	want = ceil(demand * LEASE_SPAN_NS / AGILE_NS_PER_S);
	starved = (double)__atomic_exchange_n(&rec->starved, 0,
	                                      __ATOMIC_ACQ_REL);
	if (want < starved)
		want = starved;
	if (fr->max_rate > 0) {
		double fleet = agile__load_double(&rec->fleet_rate);

		if (fleet <= 0)
			fleet = (double)fr->max_rate;
		cap = ceil(fleet * LEASE_SPAN_NS / AGILE_NS_PER_S);
	}
	if (fr->window > 0 && cap > fr->window)
		cap = fr->window;
	if (fr->window > 0 && cap > 0xffff)
		cap = 0xffff;
	if (want > cap)
		want = cap;
	return want < 1 ? 1 : (uint64_t)want;
}

/* One LEASE call's arguments, and what applying its reply needs. */
struct lease_call {
	char want[24], max[24], rate[32], horizon[24], quota[16], span[24];
	char validity[24], hb[24], back[64], from[16], to[16], id[64];
	const char *keys[4];
	const char *args[14];
	int64_t send_ns;    /* local time the request went out */
	uint64_t number;    /* the lease number it will be installed as */
};

static void lease_prepare(struct fleet_dest *f, struct lease_call *lc,
                          int64_t now)
{
	struct agile_fleet_record *rec = f->rec;
	const struct agile_fleet_rule *fr = &f->rule->fleet;
	uint64_t handback = __atomic_exchange_n(&rec->handback, 0,
	                                        __ATOMIC_ACQ_REL);
	double fleet_rate = agile__load_double(&rec->fleet_rate);

	lc->send_ns = now;
	lc->number = agile__load_u64(&rec->leases);
	snprintf(lc->want, sizeof(lc->want), "%llu",
	         (unsigned long long)lease_want(f, now));
	snprintf(lc->max, sizeof(lc->max), "%lld", (long long)fr->max_rate);
	format_decimal(lc->rate, sizeof(lc->rate), fleet_rate > 0 ? fleet_rate
	               : f->fleet_config.initial_rate);
	snprintf(lc->horizon, sizeof(lc->horizon), "%lld",
	         (long long)(HORIZON_NS / AGILE_NS_PER_US));
	snprintf(lc->quota, sizeof(lc->quota), "%d", (int)fr->window);
	snprintf(lc->span, sizeof(lc->span), "%lld",
	         (long long)(fr->window_span_ns / AGILE_NS_PER_US));
	snprintf(lc->validity, sizeof(lc->validity), "%lld",
	         (long long)(WINDOW_VALIDITY_NS / AGILE_NS_PER_US));
	snprintf(lc->hb, sizeof(lc->hb), "%lld",
	         (long long)(HEARTBEAT_NS / AGILE_NS_PER_US));
	lc->back[0] = '\0';
	if (handback != 0)
		snprintf(lc->back, sizeof(lc->back), "%s:%llu", agile__fleet_host_id,
		         (unsigned long long)((handback >> 32) - 1));
	snprintf(lc->from, sizeof(lc->from), "%u",
	         (unsigned)((handback >> 16) & 0xffff));
	snprintf(lc->to, sizeof(lc->to), "%u", (unsigned)(handback & 0xffff));
	snprintf(lc->id, sizeof(lc->id), "%s:%llu", agile__fleet_host_id,
	         (unsigned long long)lc->number);
	lc->keys[0] = f->key[KEY_TAT];
	lc->keys[1] = f->key[KEY_WINDOW];
	lc->keys[2] = f->key[KEY_HOSTS];
	lc->keys[3] = f->key[KEY_FLEET];
	lc->args[0] = agile__fleet_host_id;
	lc->args[1] = lc->want;
	lc->args[2] = lc->max;
	lc->args[3] = lc->rate;
	lc->args[4] = fr->mode == AGILE_FLEET_ADAPTIVE ? "1" : "0";
	lc->args[5] = lc->horizon;
	lc->args[6] = lc->quota;
	lc->args[7] = lc->span;
	lc->args[8] = lc->validity;
	lc->args[9] = lc->hb;
	lc->args[10] = lc->back;
	lc->args[11] = lc->from;
	lc->args[12] = lc->to;
	lc->args[13] = lc->id;
}

/*
 * Apply LEASE's reply `r`, received at recv_ns, of a call sent at send_ns
 * as lease `number` (the caller holds the turn `mine`): install the slots,
 * or note when the fleet has room again.  0, or -EPROTO for a reply that is
 * not LEASE's (the caller then falls back).
 */
static int lease_apply(struct fleet_dest *f, uint64_t mine, int64_t send_ns,
                       uint64_t number, const struct agile_resp *r,
                       int64_t recv_ns)
{
	struct agile_fleet_record *rec = f->rec;
	const struct agile_fleet_rule *fr = &f->rule->fleet;
	double start = 0, interval = 0, rate = 0;
	int64_t n = 0, hosts = 0, retry_us = 0;

	if (r->type != AGILE_RESP_ARRAY || r->count != 6 ||
	    agile__resp_int64(&r->element[0], &n) < 0 ||
	    agile__resp_double(&r->element[1], &start) < 0 ||
	    agile__resp_double(&r->element[2], &interval) < 0 ||
	    agile__resp_int64(&r->element[3], &retry_us) < 0 ||
	    agile__resp_int64(&r->element[4], &hosts) < 0 ||
	    agile__resp_double(&r->element[5], &rate) < 0) {
		snprintf(f->conn.error, sizeof(f->conn.error),
		         "LEASE answered something else than its six values");
		return -EPROTO;
	}
	if (hosts > 0)
		agile__store_u32(&rec->hosts, (uint32_t)hosts);
	if (rate > 0)
		agile__store_double(&rec->fleet_rate, rate);
	agile__store_u64(&rec->admits_at_fetch, agile__load_u64(&rec->admits));
	agile__store_i64(&rec->fetch_ns, recv_ns);
	if (n > 0 && turn_held(f, mine)) {
		int64_t first = recv_ns + (int64_t)llround(start * AGILE_NS_PER_US);
		int64_t spacing = (int64_t)llround(interval * AGILE_NS_PER_US);
		int64_t expires = first + n * spacing + LEASE_GRACE_NS;

		if (fr->window > 0 && send_ns + WINDOW_VALIDITY_NS < expires)
			expires = send_ns + WINDOW_VALIDITY_NS;
		lease_install(rec, first, spacing, (uint64_t)n, expires,
		              fr->window > 0 ? number + 1 : 0);
		agile__add_u64(&rec->slots_leased, (uint64_t)n);
	} else if (n == 0) {
		agile__add_u64(&rec->leases_short, 1);
		agile__store_i64(&rec->retry_at_ns, recv_ns +
		                 (retry_us > 0 ? retry_us : 1000) *
		                 AGILE_NS_PER_US);
	}
	agile__fleet_redis_answered(f);
	return 0;
}

/*
 * Fetch one lease (the caller holds the turn `mine`), by `deadline`.
 * Returns 0 when Redis answered (with slots or with "full until"), or a
 * negative errno after switching to the fallback.
 */
static int fetch(struct fleet_dest *f, uint64_t mine, int64_t deadline)
{
	struct lease_call lc;
	const struct agile_resp *r;
	int rc;

	lease_prepare(f, &lc, agile__now_ns());
	rc = agile__fleet_eval(f, AGILE_SCRIPT_LEASE, 4, lc.keys, 14, lc.args,
	                       NULL, &r, deadline);
	if (rc == 0)
		rc = lease_apply(f, mine, lc.send_ns, lc.number, r,
		                 agile__now_ns());
	if (rc < 0)
		agile__fleet_redis_failed(f, agile__now_ns());
	return rc;
}

/*
 * The same without holding up the call that starts it: send the LEASE now
 * and collect its reply in a later call of this process (collect_lease),
 * keeping the turn meanwhile.  Only a process that makes calls often does
 * this (maybe_prefetch), so its next call comes long before the slots
 * left run out; if it does not, the turn expires and another process
 * fetches as usual.
 */
static void fetch_async(struct fleet_dest *f, uint64_t mine, int64_t deadline)
{
	struct lease_call lc;
	uint64_t before;
	int rc;

	if (!pid_lock_try(&f->io_owner)) {
		turn_release(f, mine);
		return;
	}
	lease_prepare(f, &lc, agile__now_ns());
	before = f->conn.round_trips;
	agile__enter();
	rc = agile__redis_eval_send(&f->conn, AGILE_SCRIPT_LEASE, 4, lc.keys, 14,
	                           lc.args, NULL, deadline);
	agile__leave();
	agile__add_u64(&f->rec->round_trips, f->conn.round_trips - before);
	if (rc < 0) {
		pid_unlock(&f->io_owner);
		agile__fleet_redis_failed(f, agile__now_ns());
		turn_release(f, mine);
		return;
	}
	/* Hold the turn only as long as the reply should take. */
	{
		int64_t hold = ASYNC_HOLD_RTTS * f->rtt_ns;
		uint64_t shorter;

		if (hold < ASYNC_HOLD_MIN_NS)
			hold = ASYNC_HOLD_MIN_NS;
		if (hold > timeout_of(f))
			hold = timeout_of(f);
		shorter = turn_word(agile__now_ns() + hold);
		if (agile__cas_u64(&f->rec->turn, &mine, shorter))
			mine = shorter;
	}
	f->pending_turn = mine;
	f->pending_send_ns = lc.send_ns;
	f->pending_deadline = deadline;
	f->pending_number = lc.number;
	__atomic_store_n(&f->pending_pid, (int32_t)getpid(), __ATOMIC_RELEASE);
	pid_unlock(&f->io_owner);
}

/* Collect this process's asynchronous LEASE, if it has one: waiting for
 * it until its deadline when `wait`, else only if it has arrived. */
void agile__fleet_collect_lease(struct fleet_dest *f, bool wait)
{
	int32_t pid = __atomic_load_n(&f->pending_pid, __ATOMIC_ACQUIRE);
	const struct agile_resp *r;
	int64_t start;
	int rc;

	if (pid == 0)
		return;
	if (pid != (int32_t)getpid()) {
		/* A fork child: the request and the turn are the parent's. */
		f->pending_pid = 0;
		return;
	}
	if (!pid_lock_try(&f->io_owner))
		return;
	if (f->pending_pid == 0) {
		pid_unlock(&f->io_owner);
		return;
	}
	start = agile__now_ns();
	agile__enter();
	rc = agile__redis_eval_collect(&f->conn, &r, f->pending_deadline, wait);
	agile__leave();
	if (rc == -EAGAIN) {
		pid_unlock(&f->io_owner);
		return;
	}
	if (wait)
		agile__max_u64((uint64_t *)&f->rec->max_wait_ns,
		               (uint64_t)(agile__now_ns() - start));
	if (rc == 0)
		rc = lease_apply(f, f->pending_turn, f->pending_send_ns,
		                 f->pending_number, r, agile__now_ns());
	/* NOSCRIPT or MOVED (-ESTALE) cost this lease only: the next fetch,
	 * synchronous, reloads or follows. */
	if (rc < 0 && rc != -ESTALE)
		agile__fleet_redis_failed(f, agile__now_ns());
	turn_release(f, f->pending_turn);
	__atomic_store_n(&f->pending_pid, 0, __ATOMIC_RELEASE);
	pid_unlock(&f->io_owner);
}
/* ------------------------------------------------------------------------ */
/* Admission                                                                 */
/* ------------------------------------------------------------------------ */

/* Update the per-second rates agilestat shows, once a second. */
static void meter(struct agile_fleet_record *rec, int64_t now)
{
	int64_t mark = agile__load_i64(&rec->meter_ns);
	uint64_t admits, trips;
	double elapsed;

	if (mark != 0 && now - mark < AGILE_NS_PER_S)
		return;
	if (!agile__cas_i64(&rec->meter_ns, &mark, now))
		return;
	admits = agile__load_u64(&rec->admits);
	trips = agile__load_u64(&rec->round_trips);
	if (mark != 0) {
		elapsed = (double)(now - mark) / AGILE_NS_PER_S;
		agile__store_double(&rec->admits_per_s, (double)(admits -
		                    agile__load_u64(&rec->meter_admits)) / elapsed);
		agile__store_double(&rec->round_trips_per_s, (double)(trips -
		                    agile__load_u64(&rec->meter_round_trips)) /
		                    elapsed);
	}
	agile__store_u64(&rec->meter_admits, admits);
	agile__store_u64(&rec->meter_round_trips, trips);
}

/* Count one call of this process, for proc_rate. */
static void proc_count(struct fleet_dest *f, int64_t now)
{
	int64_t start = __atomic_load_n(&f->proc_window_ns, __ATOMIC_RELAXED);

	if (now - start >= LEASE_SPAN_NS &&
	    __atomic_compare_exchange_n(&f->proc_window_ns, &start, now, false,
	                                __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
		__atomic_store_n(&f->proc_last,
		                 __atomic_exchange_n(&f->proc_count, 0,
		                                     __ATOMIC_RELAXED),
		                 __ATOMIC_RELAXED);
	}
	__atomic_add_fetch(&f->proc_count, 1, __ATOMIC_RELAXED);
}

/*
 * After taking a slot: fetch the next lease now if this one is running
 * out, so the calls after this one find slots without a round trip.  A
 * process that makes at least half of the host's calls, and 100 a second,
 * fetches it asynchronously (its next calls collect it, and no call waits
 * for the round trip); another fetches it in this call, which then waits
 * one round trip, so a short-lived process never leaves a request behind.
 */
static void maybe_prefetch(struct fleet_dest *f, int64_t now,
                           int64_t redis_deadline)
{
	struct agile_fleet_record *rec = f->rec;
	double demand = agile__load_double(&rec->demand_per_s);
	double per_lease = demand * LEASE_SPAN_NS / AGILE_NS_PER_S;
	uint64_t ahead, mine;

	if (per_lease < PREFETCH_MIN_SLOTS || now >= redis_deadline ||
	    now < agile__load_i64(&rec->retry_at_ns))
		return;
	if (lease_remaining(rec, now, &ahead) > (uint64_t)(per_lease / 2) ||
	    ahead > 0)
		return;
	mine = turn_claim(f, now);
	if (mine == 0)
		return;
	if ((double)__atomic_load_n(&f->proc_last, __ATOMIC_RELAXED) >=
	    per_lease / 2 &&
	    __atomic_load_n(&f->proc_last, __ATOMIC_RELAXED) >= ASYNC_MIN_CALLS)
		fetch_async(f, mine, now + timeout_of(f));
	else {
		fetch(f, mine, redis_deadline);
		turn_release(f, mine);
	}
}

int64_t agile__fleet_admit_slow(int dest, int64_t now,
                                void (*wait)(int64_t until_ns))
{
	struct fleet_dest *f;
	struct agile_fleet_record *rec;
	int64_t redis_deadline, planned;
	bool counted_starved = false;

	if ((f = agile__fleet_dest(dest)) == NULL)
		return now;
	rec = f->rec;
	/* All the waiting on Redis one call may do, whatever happens. */
	redis_deadline = now + timeout_of(f);
	meter(rec, now);
	proc_count(f, now);
	agile__fleet_collect_lease(f, false);
	for (;;) {
		uint32_t source = agile__load_u32(&rec->source);
		uint64_t mine;

		if (source == AGILE_FLEET_FALLBACK &&
		    now >= agile__load_i64(&rec->next_probe_ns) &&
		    now < redis_deadline && (mine = turn_claim(f, now)) != 0) {
			/* Try Redis again; whichever way it goes the
			 * loop takes the matching branch. */
			agile__store_i64(&rec->next_probe_ns,
			                 now + PROBE_INTERVAL_NS);
			fetch(f, mine, redis_deadline);
			turn_release(f, mine);
			now = agile__now_ns();
			continue;
		}
		if (source != AGILE_FLEET_FROM_REDIS)
			break;
		planned = lease_take(rec, now);
		if (planned >= 0) {
			agile__add_u64(&rec->admits, 1);
			maybe_prefetch(f, agile__now_ns(), redis_deadline);
			return planned;
		}
		if (!counted_starved) {
			agile__add_u64(&rec->starved, 1);
			counted_starved = true;
		}
		if (now < agile__load_i64(&rec->retry_at_ns)) {
			/* The fleet is full: wait for it like for any other
			 * pacing, then ask again. */
			wait(agile__load_i64(&rec->retry_at_ns));
			now = agile__now_ns();
			redis_deadline = now + timeout_of(f);
			continue;
		}
		if (now >= redis_deadline)
			break; /* this call's Redis budget is spent */
		if (__atomic_load_n(&f->pending_pid, __ATOMIC_ACQUIRE) ==
		    (int32_t)getpid()) {
			/* This process's own lease is on its way (another
			 * thread may be collecting it: then wait a little). */
			agile__fleet_collect_lease(f, true);
			if (__atomic_load_n(&f->pending_pid,
			                    __ATOMIC_ACQUIRE) != 0)
				nap(TURN_POLL_NS);
		} else if ((mine = turn_claim(f, now)) != 0) {
			fetch(f, mine, redis_deadline);
			turn_release(f, mine);
		} else {
			/* Another process is fetching: its lease is ours
			 * too. */
			nap(TURN_POLL_NS);
		}
		now = agile__now_ns();
	}
	agile__add_u64(&rec->admits, 1);
	return agile__fleet_fallback_take(f, now);
}
