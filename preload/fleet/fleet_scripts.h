/*
 * fleet_scripts.h - the Lua scripts the fleet runs in Redis with EVALSHA
 * (loaded with SCRIPT LOAD on every new connection, see redis_client.c).
 *
 * Every script reads Redis's own clock (TIME) and no host's: hosts never
 * compare their clocks, they only apply the offsets Redis returns to their
 * own monotonic clock.  Every key a script writes gets an expiry, so a
 * fleet that stops leaves nothing behind.  All keys of one destination
 * share the hash tag {agile:NAME}, so in a Redis Cluster they sit in one
 * slot (the scripts build the per-tick keys from that prefix, which
 * Cluster allows because they hash to the same slot).
 *
 * Times are microseconds of Redis's clock; numbers that may be fractional
 * travel as strings, since Redis truncates Lua numbers in replies.
 */
#ifndef AGILE_PRELOAD_FLEET_SCRIPTS_H
#define AGILE_PRELOAD_FLEET_SCRIPTS_H

/* Script indexes, in the order of agile__fleet_scripts[]. */
enum { AGILE_SCRIPT_LEASE = 0, AGILE_SCRIPT_FLUSH, AGILE_SCRIPT_PUBLISH,
       AGILE_SCRIPT_COUNT };

/* The heartbeat, shared by LEASE and FLUSH: this host's score in the
 * destination's sorted set of hosts is Redis's time of its last call; a
 * host silent for longer than ARGV hb (microseconds) is no longer live. */
#define AGILE_LUA_HEARTBEAT(hosts, host, hb) \
	"local hb = tonumber(" hb ")\n" \
	"redis.call('ZADD', " hosts ", now, " host ")\n" \
	"redis.call('ZREMRANGEBYSCORE', " hosts ", '-inf', now - hb)\n" \
	"redis.call('PEXPIRE', " hosts ", math.floor(hb / 1000) + 1000)\n" \
	"local hosts = redis.call('ZCARD', " hosts ")\n"

#define AGILE_LUA_NOW \
	"local t = redis.call('TIME')\n" \
	"local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"

/*
 * LEASE: take up to `want` slots of the fleet bucket and of the shared
 * window, heartbeat, and hand back unused window members of an expired
 * lease.
 *
 * The fleet bucket is a GCRA: the key tat is the theoretical arrival time
 * of the next slot, advanced by one interval (1 / rate) per slot granted
 * and never kept in the past, so an idle fleet saves no burst.  Slots may
 * be reserved up to `horizon` ahead of now: a host gets slots in the near
 * future rather than a refusal and waits for them locally, so a fleet
 * with more demand than rate queues in time order instead of polling.
 * When less than half of `want` fits before the horizon the lease is
 * refused (0 slots) and `retry` says when room for `want` comes back.
 *
 * The shared window is a sorted set with one member per call, scored with
 * the Redis time of the slot it goes with.  A host uses a member at most
 * `validity` after that time, so counting the members scored after
 * `slot - span - validity` keeps every SPAN-long stretch of real time at
 * N calls or fewer.
 *
 * KEYS: 1 tat, 2 window zset, 3 hosts zset, 4 fleet hash (rate)
 * ARGV: 1 host, 2 want, 3 fleet_max (0: none), 4 rate when none published,
 *       5 adaptive (1/0), 6 horizon_us, 7 window N (0: none), 8 span_us,
 *       9 validity_us, 10 heartbeat_us, 11 hand-back member prefix ("":
 *       none), 12 its first index, 13 its end index, 14 new member prefix
 * Returns: { granted, start_us (offset from now, string), interval_us
 *            (string), retry_us, live hosts, fleet rate (string) }
 */
#define AGILE_LUA_LEASE \
	AGILE_LUA_NOW \
	"local want = tonumber(ARGV[2])\n" \
	AGILE_LUA_HEARTBEAT("KEYS[3]", "ARGV[1]", "ARGV[10]") \
	"local quota = tonumber(ARGV[7])\n" \
	"local span = tonumber(ARGV[8]) + tonumber(ARGV[9])\n" \
	"if ARGV[11] ~= '' then\n" \
	"  for i = tonumber(ARGV[12]), tonumber(ARGV[13]) - 1 do\n" \
	"    redis.call('ZREM', KEYS[2], ARGV[11] .. ':' .. i)\n" \
	"  end\n" \
	"end\n" \
	"local n, interval, retry, rate = want, 0, 0, 0\n" \
	"local fleet_max = tonumber(ARGV[3])\n" \
	"local horizon = tonumber(ARGV[6])\n" \
	"local tat = now\n" \
	"if fleet_max > 0 then\n" \
	"  rate = fleet_max\n" \
	"  if ARGV[5] == '1' then\n" \
	"    local r = tonumber(redis.call('HGET', KEYS[4], 'rate') or ARGV[4])\n" \
	"    if r ~= nil and r > 0 and r < rate then rate = r end\n" \
	"  end\n" \
	"  interval = 1000000 / rate\n" \
	"  tat = tonumber(redis.call('GET', KEYS[1]) or '0')\n" \
	"  if tat < now then tat = now end\n" \
	"  local room = math.floor((now + horizon - tat) / interval)\n" \
	"  if room < n then n = room end\n" \
	"  if n < math.ceil(want / 2) then\n" \
	"    n = 0\n" \
	"    retry = tat - horizon - now + want * interval\n" \
	"  end\n" \
	"end\n" \
	"if quota > 0 and n > 0 then\n" \
	"  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - span)\n" \
	"  local room = quota - redis.call('ZCOUNT', KEYS[2], tat - span, '+inf')\n" \
	"  if room < n then n = room end\n" \
	"  if n < 1 then\n" \
	"    n = 0\n" \
	"    local oldest = redis.call('ZRANGEBYSCORE', KEYS[2], tat - span,\n" \
	"                              '+inf', 'WITHSCORES', 'LIMIT', 0, 1)\n" \
	"    retry = 1000\n" \
	"    if oldest[2] then retry = tonumber(oldest[2]) + span - now + 1 end\n" \
	"  else\n" \
	"    local i = 0\n" \
	"    while i < n do\n" \
	"      local args = {}\n" \
	"      while i < n and #args < 512 do\n" \
	"        args[#args + 1] = string.format('%.3f', tat + i * interval)\n" \
	"        args[#args + 1] = ARGV[14] .. ':' .. i\n" \
	"        i = i + 1\n" \
	"      end\n" \
	"      redis.call('ZADD', KEYS[2], unpack(args))\n" \
	"    end\n" \
	"  end\n" \
	"  redis.call('PEXPIRE', KEYS[2],\n" \
	"             math.floor((span + horizon) / 1000) + 1000)\n" \
	"end\n" \
	"if fleet_max > 0 and n > 0 then\n" \
	"  redis.call('SET', KEYS[1], string.format('%.3f', tat + n * interval),\n" \
	"             'PX', math.floor(horizon / 1000) + 1000)\n" \
	"end\n" \
	"return {n, string.format('%.3f', tat - now),\n" \
	"        string.format('%.6f', interval), math.ceil(retry), hosts,\n" \
	"        string.format('%.6f', rate)}\n"

/*
 * FLUSH (fleet=adaptive), once per host per tick: add this host's tick of
 * round-trip histogram counts and outcomes to the destination's hash for
 * the current tick epoch (Redis time / tick), heartbeat, and try to win
 * the epoch's control step with SET NX PX.  The winner gets the previous
 * epoch's merged counts back (complete: every host's flush for it came in
 * before the epoch ended) and the fleet controller's state, runs the step
 * and PUBLISHes; everyone gets the published rate and controller.
 *
 * KEYS: 1 hosts zset, 2 histogram prefix, 3 step prefix, 4 fleet hash
 * ARGV: 1 host, 2 tick_ms, 3 heartbeat_us, 4 "bucket:count,..." of the
 *       tick, 5 total, 6 sum_ns, 7 unreachable, 8 admitted
 * Returns: { won, epoch, hosts, rate or "", controller or "", merged
 *            "bucket:count,...", total, sum_ns, unreachable, admitted,
 *            reports } (the last six only when won)
 */
#define AGILE_LUA_FLUSH \
	AGILE_LUA_NOW \
	"local tick = tonumber(ARGV[2])\n" \
	"local e = math.floor(now / 1000 / tick)\n" \
	AGILE_LUA_HEARTBEAT("KEYS[1]", "ARGV[1]", "ARGV[3]") \
	"local hk = KEYS[2] .. ':' .. e\n" \
	"for i, c in string.gmatch(ARGV[4], '(%d+):(%d+)') do\n" \
	"  redis.call('HINCRBY', hk, i, c)\n" \
	"end\n" \
	"redis.call('HINCRBY', hk, 'total', ARGV[5])\n" \
	"redis.call('HINCRBY', hk, 'sum', ARGV[6])\n" \
	"redis.call('HINCRBY', hk, 'unreachable', ARGV[7])\n" \
	"redis.call('HINCRBY', hk, 'admitted', ARGV[8])\n" \
	"redis.call('HINCRBY', hk, 'reports', 1)\n" \
	"redis.call('PEXPIRE', hk, 3 * tick)\n" \
	"local won = redis.call('SET', KEYS[3] .. ':' .. e, ARGV[1], 'NX', 'PX', 3 * tick)\n" \
	"local f = redis.call('HMGET', KEYS[4], 'rate', 'ctl')\n" \
	"local rate, ctl = f[1] or '', f[2] or ''\n" \
	"if not won then return {0, e, hosts, rate, ctl} end\n" \
	"local prev = redis.call('HGETALL', KEYS[2] .. ':' .. (e - 1))\n" \
	"local v = {total = '0', sum = '0', unreachable = '0', admitted = '0',\n" \
	"           reports = '0'}\n" \
	"local buckets = {}\n" \
	"for k = 1, #prev, 2 do\n" \
	"  if v[prev[k]] then v[prev[k]] = prev[k + 1]\n" \
	"  else buckets[#buckets + 1] = prev[k] .. ':' .. prev[k + 1] end\n" \
	"end\n" \
	"return {1, e, hosts, rate, ctl, table.concat(buckets, ','), v.total,\n" \
	"        v.sum, v.unreachable, v.admitted, v.reports}\n"

/*
 * PUBLISH: the step winner's new fleet rate and controller state, unless a
 * later epoch's winner got there first (a slow winner must not undo it).
 *
 * KEYS: 1 fleet hash.  ARGV: 1 epoch, 2 rate, 3 controller, 4 ttl_ms.
 * Returns 1 when written, 0 when a later epoch had been.
 */
#define AGILE_LUA_PUBLISH \
	"local cur = tonumber(redis.call('HGET', KEYS[1], 'epoch') or '-1')\n" \
	"if tonumber(ARGV[1]) <= cur then return 0 end\n" \
	"redis.call('HSET', KEYS[1], 'epoch', ARGV[1], 'rate', ARGV[2],\n" \
	"           'ctl', ARGV[3])\n" \
	"redis.call('PEXPIRE', KEYS[1], ARGV[4])\n" \
	"return 1\n"

#endif /* AGILE_PRELOAD_FLEET_SCRIPTS_H */
