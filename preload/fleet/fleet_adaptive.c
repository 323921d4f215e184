/*
 * fleet_adaptive.c - fleet=adaptive: every host sends its tick (its
 * histogram and counts) to Redis, the host that wins the tick merges them
 * and runs the controller's step for the whole fleet, and publishes the
 * fleet rate and its controller, which every host's slot then shows.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "fleet_internal.h"
#include "fleet_scripts.h"
#include "log.h"
#include "symbols.h"

/* A controller state published to Redis: this header, then the struct. */
struct ctl_blob {
	char magic[4];      /* "AGC1" */
	uint32_t size;      /* sizeof(struct agile_controller) */
	uint64_t tag;       /* which build and configuration wrote it */
	struct agile_controller ctl;
};

/* Scratch for the adaptive tick (two histograms, too big for a hook's
 * stack), mapped once. */
struct scratch {
	struct agile_hist_snapshot local;
	struct agile_hist_snapshot merged;
	char text[AGILE_HIST_BUCKETS * 24];
};
static struct scratch *scratch;

/* Held while the scratch is in use (a pid lock, fleet_internal.h). */
static int32_t scratch_owner;

/* "i:c,i:c,..." of a snapshot's non-empty buckets. */
static size_t hist_text(const struct agile_hist_snapshot *h, char *buf,
                        size_t cap)
{
	size_t at = 0;

	buf[0] = '\0';
	for (int i = 0; i < AGILE_HIST_BUCKETS; i++) {
		int n;

		if (h->counts[i] == 0)
			continue;
		n = snprintf(buf + at, cap - at, "%s%d:%llu", at ? "," : "", i,
		             (unsigned long long)h->counts[i]);
		if (n < 0 || (size_t)n >= cap - at)
			break;
		at += (size_t)n;
	}
	return at;
}

/* Parse "i:c,..." (a bulk string) into a snapshot. */
static void hist_parse(const struct agile_resp *r, struct agile_hist_snapshot *h)
{
	const char *p = r->str, *end = r->str + r->len;

	memset(h, 0, sizeof(*h));
	while (p < end) {
		char *stop;
		unsigned long long i = strtoull(p, &stop, 10);
		unsigned long long c;

		if (stop >= end || *stop != ':')
			break;
		c = strtoull(stop + 1, &stop, 10);
		if (i < AGILE_HIST_BUCKETS)
			h->counts[i] += c;
		p = stop + 1;
	}
}

static uint64_t reply_u64(const struct agile_resp *r)
{
	int64_t v = 0;

	return agile__resp_int64(r, &v) == 0 && v > 0 ? (uint64_t)v : 0;
}

/* The published controller, if it was written by a build and settings
 * like ours. */
static bool blob_read(const struct fleet_dest *f, const struct agile_resp *r,
                      struct agile_controller *out)
{
	struct ctl_blob blob;

	if (r->type != AGILE_RESP_BULK || r->len != sizeof(blob))
		return false;
	memcpy(&blob, r->str, sizeof(blob));
	if (memcmp(blob.magic, "AGC1", 4) != 0 ||
	    blob.size != sizeof(struct agile_controller) || blob.tag != f->ctl_tag)
		return false;
	/* Redis is written by every host, and by whatever else reaches it: a
	 * controller that fails the core's check is no fleet's, and the
	 * winner starts a fresh one instead (fleet_step). */
	if (agile_controller_validate(&blob.ctl, &f->fleet_config, NULL) < 0)
		return false;
	*out = blob.ctl;
	return true;
}

/* The winner's step: merged histogram in, new fleet rate out (published). */
static void fleet_step(struct fleet_dest *f, const struct agile_resp *r,
                       struct agile_controller *ctl, int64_t deadline)
{
	const int64_t tick_ns = f->fleet_config.tick_ns;
	struct agile_tick_input in;
	struct ctl_blob blob;
	char epoch_s[24], rate_s[32], ttl_s[24];
	const char *keys[1] = { f->key[KEY_FLEET] };
	const char *args[4];
	size_t lens[4] = { (size_t)-1, (size_t)-1, sizeof(blob), (size_t)-1 };
	const struct agile_resp *ok;
	double rate;
	int64_t epoch = 0;

	if (!blob_read(f, &r->element[4], ctl))
		agile_controller_init(ctl, &f->fleet_config);
	hist_parse(&r->element[5], &scratch->merged);
	scratch->merged.total = reply_u64(&r->element[6]);
	scratch->merged.sum_ns = reply_u64(&r->element[7]);
	memset(&in, 0, sizeof(in));
	in.hist = &scratch->merged;
	in.unreachable = reply_u64(&r->element[8]);
	in.used = (double)reply_u64(&r->element[9]) * AGILE_NS_PER_S /
	          (double)tick_ns;
	rate = agile_controller_step(ctl, &f->fleet_config, &in);
	agile__add_u64(&f->rec->steps_won, 1);
	memset(&blob, 0, sizeof(blob));
	memcpy(blob.magic, "AGC1", 4);
	blob.size = sizeof(struct agile_controller);
	blob.tag = f->ctl_tag;
	blob.ctl = *ctl;
	agile__resp_int64(&r->element[1], &epoch);
	snprintf(epoch_s, sizeof(epoch_s), "%lld", (long long)epoch);
	format_decimal(rate_s, sizeof(rate_s), rate);
	snprintf(ttl_s, sizeof(ttl_s), "%lld",
	         (long long)(FLEET_TTL_TICKS * tick_ns / AGILE_NS_PER_MS));
	args[0] = epoch_s;
	args[1] = rate_s;
	args[2] = (const char *)&blob;
	args[3] = ttl_s;
	if (agile__fleet_eval(f, AGILE_SCRIPT_PUBLISH, 1, keys, 4, args, lens,
	                      &ok, deadline) < 0)
		agile__fleet_redis_failed(f, agile__now_ns());
	else
		agile__store_double(&f->rec->fleet_rate, rate);
}

/* Send this tick to Redis; run and publish the step if this host won. */
static void flush(struct fleet_dest *f, uint64_t admitted,
                  uint64_t unreachable, int64_t deadline)
{
	struct agile_state_slot *s = f->slot;
	const struct agile_resp *r = NULL;
	const char *keys[4] = { f->key[KEY_HOSTS], f->key[KEY_HIST],
	                        f->key[KEY_STEP], f->key[KEY_FLEET] };
	char tick_s[24], hb_s[24], total_s[24], sum_s[24], unr_s[24];
	char adm_s[24];
	const char *args[8];
	struct agile_controller ctl;
	double rate = 0;
	int64_t won = 0, hosts = 0;

	hist_text(&scratch->local, scratch->text, sizeof(scratch->text));
	snprintf(tick_s, sizeof(tick_s), "%lld",
	         (long long)(f->fleet_config.tick_ns / AGILE_NS_PER_MS));
	snprintf(hb_s, sizeof(hb_s), "%lld",
	         (long long)(HEARTBEAT_NS / AGILE_NS_PER_US));
	snprintf(total_s, sizeof(total_s), "%llu",
	         (unsigned long long)scratch->local.total);
	snprintf(sum_s, sizeof(sum_s), "%llu",
	         (unsigned long long)scratch->local.sum_ns);
	snprintf(unr_s, sizeof(unr_s), "%llu", (unsigned long long)unreachable);
	snprintf(adm_s, sizeof(adm_s), "%llu", (unsigned long long)admitted);
	args[0] = agile__fleet_host_id;
	args[1] = tick_s;
	args[2] = hb_s;
	args[3] = scratch->text;
	args[4] = total_s;
	args[5] = sum_s;
	args[6] = unr_s;
	args[7] = adm_s;
	if (agile__fleet_eval(f, AGILE_SCRIPT_FLUSH, 4, keys, 8, args, NULL,
	                      &r, deadline) < 0) {
		agile__fleet_redis_failed(f, agile__now_ns());
		return;
	}
	if (r->type != AGILE_RESP_ARRAY || (r->count != 5 && r->count != 11) ||
	    agile__resp_int64(&r->element[0], &won) < 0) {
		snprintf(f->conn.error, sizeof(f->conn.error),
		         "FLUSH answered something unexpected");
		agile__fleet_redis_failed(f, agile__now_ns());
		return;
	}
	agile__fleet_redis_answered(f);
	if (agile__resp_int64(&r->element[2], &hosts) == 0 && hosts > 0)
		agile__store_u32(&f->rec->hosts, (uint32_t)hosts);
	agile__resp_int64(&r->element[1], &f->rec->last_epoch);
	if (won == 1 && r->count == 11) {
		fleet_step(f, r, &ctl, deadline + timeout_of(f));
	} else {
		if (agile__resp_double(&r->element[3], &rate) == 0 && rate > 0)
			agile__store_double(&f->rec->fleet_rate, rate);
		if (!blob_read(f, &r->element[4], &ctl))
			return;
	}
	/* agilestat shows the slot's controller: make it the fleet's, so
	 * every host shows the one rate the fleet runs at. */
	memcpy(&s->limiter.loop.ctl, &ctl, sizeof(ctl));
}

bool agile__fleet_tick_slow(struct agile_state_slot *s, int64_t now)
{
	struct agile_rate_limiter *l = &s->limiter;
	struct fleet_dest *f;
	uint64_t unreachable, admits, mine;
	int64_t next;

	if ((f = agile__fleet_adaptive_of(s)) == NULL)
		return false;
	next = agile__load_i64(&l->loop.next_tick_ns);
	if (now < next)
		return true;
	if (scratch == NULL) {
		void *p = mmap(NULL, sizeof(*scratch), PROT_READ | PROT_WRITE,
		               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			return false;
		if (!__atomic_compare_exchange_n(&scratch, &(struct scratch *){
		                                 NULL }, p, false,
		                                 __ATOMIC_ACQ_REL,
		                                 __ATOMIC_ACQUIRE))
			munmap(p, sizeof(*scratch));
	}
	if (!pid_lock_try(&scratch_owner))
		return true; /* another destination's tick: this one next time */
	/* The local tick's claim, as limiter.c's: one winner per tick. */
	if (!agile__cas_i64(&l->loop.next_tick_ns, &next,
	                    now + l->loop.config.tick_ns)) {
		pid_unlock(&scratch_owner);
		return true;
	}
	agile_hist_drain(&l->loop.hist, &scratch->local);
	unreachable = agile__load_u64(&l->loop.unreachable_tick);
	agile__sub_u64(&l->loop.unreachable_tick, unreachable);
	agile__store_i64(&l->loop.last_tick_ns, now);
	admits = agile__load_u64(&f->rec->admits);
	/* The local bucket only keeps max= here: the fleet bucket paces. */
	agile_bucket_set_rate(&l->bucket, l->loop.config.max_rate);
	if (agile__load_u32(&f->rec->source) == AGILE_FLEET_FROM_REDIS ||
	    (agile__load_u32(&f->rec->source) == AGILE_FLEET_FALLBACK &&
	     now >= agile__load_i64(&f->rec->next_probe_ns))) {
		int64_t deadline = now + timeout_of(f);

		/* Wait for the turn as a caller would, within the timeout;
		 * a lease this process is fetching holds it, so take that
		 * first. */
		agile__fleet_collect_lease(f, true);
		while ((mine = turn_claim(f, agile__now_ns())) == 0 &&
		       agile__now_ns() < deadline)
			nap(TURN_POLL_NS);
		if (mine != 0) {
			flush(f, admits -
			      agile__load_u64(&f->rec->admits_at_tick),
			      unreachable, deadline);
			turn_release(f, mine);
		}
	}
	agile__store_u64(&f->rec->admits_at_tick, admits);
	pid_unlock(&scratch_owner);
	agile__state_slot_append_tick(s, agile__unix_ns());
	return true;
}
