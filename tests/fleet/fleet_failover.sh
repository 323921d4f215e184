#!/bin/sh
# fleet_failover.sh - Redis hangs, comes back, dies, comes back: each host
# falls back to fleet_max / hosts at once and returns to the fleet budget.
#
# Three hosts share fleet_max=60 with redis_timeout=100ms.  Host 1 calls as
# fast as it may (four threads); hosts 2 and 3 make 5 calls a second each,
# well inside any budget, so a slow call of theirs can only be the
# preload's waiting on Redis.  On the fleet budget host 1 gets what the
# others leave, about 50/s; on its fallback it gets its third, 20/s.
#
#   0-3 s   Redis up                       host 1 about 50/s
#   3-6 s   Redis stopped (SIGSTOP): every round trip times out
#                                          host 1 20/s within 10%
#   6-9 s   Redis continued (SIGCONT)      host 1 back to about 50/s
#   9-12 s  Redis killed (SIGKILL): refused
#                                          host 1 20/s within 10%
#   12-15 s Redis restarted, empty         host 1 back to about 50/s
#
# Every host must have fallen back within half a second of each outage and
# said so in one log line per outage; during the outages no call of hosts 2
# and 3 may take longer than the 100 ms timeout plus the call itself (from
# one second in: a call may still be waiting for a fleet slot reserved
# before the outage, up to the fleet's one-second horizon, which is pacing,
# not Redis); and the longest Redis round trip each host measured itself
# must be within the timeout (plus 25 ms: on a loaded machine a process
# wakes up a little after its deadline).
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/fleet/lib.sh"

start_redis
port=$(start_httpd api)
export AGILE_REDIS="redis://127.0.0.1:$redis_port/0"
export AGILE_DEST_API="127.0.0.1:$port max=100 floor=100 initial=100 fleet_max=60 redis_timeout=100ms"

t0=$(now_mono)
host_bg 1 "$CLIENT" "$port" 15 4 "$tmp/client1.json" 2>"$tmp/log1"
c1=$!
host_bg 2 "$CLIENT" "$port" 15 1 "$tmp/client2.json" 5 2>"$tmp/log2"
c2=$!
host_bg 3 "$CLIENT" "$port" 15 1 "$tmp/client3.json" 5 2>"$tmp/log3"
c3=$!

at() { python3 -c 'import sys, time; d = float(sys.argv[1]) + float(sys.argv[2]) - time.monotonic(); time.sleep(max(d, 0))' "$t0" "$1"; }
# fallen_back WHEN 0|1: every host is (1) or is not (0) on its fallback.
fallen_back() {
	for n in 1 2 3; do
		check "v[0] == $2" "host $n fallback is $2 $1" \
			"$(host_json "$n" api 'int(f["fallback"])')"
	done
}
at 3
kill -STOP "$redis_pid"
at 3.5
fallen_back "half a second after Redis stopped" 1
at 6
kill -CONT "$redis_pid"
at 7
fallen_back "a second after Redis continued" 0
at 9
kill_redis "$redis_pid"
at 9.5
fallen_back "half a second after Redis was killed" 1
at 12
restart_redis "$redis_port"
at 13
fallen_back "a second after Redis restarted" 0
wait "$c1" && wait "$c2" && wait "$c3" || fail "a client failed"

# host_rate N FROM TO: host N's calls per second started in [t0+FROM, t0+TO).
host_rate() {
	client_json "$tmp/client$1.json" "'%.3f' % (sum(1 for x in c if $t0 + $2 <= x[0] < $t0 + $3) / ($3 - $2))"
}
a=$(host_rate 1 0.8 3) b=$(host_rate 1 3.7 6) c=$(host_rate 1 6.8 9)
d=$(host_rate 1 9.7 12) e=$(host_rate 1 13 15)
note "host 1: $a/s up, $b/s Redis stopped, $c/s continued, $d/s killed, $e/s restarted"
check "v[0] >= 40" "host 1 gets the fleet's spare budget" "$a"
check "18 <= v[0] <= 22" "host 1 falls back to fleet_max/3 when Redis hangs" "$b"
check "v[0] >= 40" "host 1 back on the fleet budget" "$c"
check "18 <= v[0] <= 22" "host 1 falls back to fleet_max/3 when Redis dies" "$d"
check "v[0] >= 40" "host 1 back on the fleet budget after a restart" "$e"

for n in 2 3; do
	slow=$(client_json "$tmp/client$n.json" "'%.1f' % (1000 * max(x[2] for x in c if $t0 + 4 <= x[0] < $t0 + 6 or $t0 + 10 <= x[0] < $t0 + 12))")
	note "host $n: slowest call during the outages ${slow} ms"
	check "v[0] < 100 + 30" "no call of host $n waits out more than the timeout" "$slow"
done
for n in 1 2 3; do
	wait_ms=$(host_json "$n" api 'f["max_redis_wait_ms"]')
	falls=$(host_json "$n" api 'f["fallbacks"]')
	lines=$(grep -c "falls back to" "$tmp/log$n" || true)
	note "host $n: $falls fallbacks, $lines log lines, longest Redis wait $wait_ms ms, source $(host_json "$n" api 'f["source"]')"
	check "v[0] <= 100 + 25" "host $n never waited on Redis past the timeout (and the scheduler)" "$wait_ms"
	check "v[0] == 2" "host $n fell back once per outage" "$falls"
	check "v[0] == v[1]" "host $n logged one line per outage" "$lines" "$falls"
	check "v[0] == 0" "host $n is on the fleet budget again" "$(host_json "$n" api 'int(f["fallback"])')"
done
