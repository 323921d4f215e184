#!/bin/sh
# fleet_max.sh - three hosts share one fleet_max through one redis-server.
#
# Each of three hosts (three state files) runs a client of four threads
# that connects as fast as the preload lets it, against one downstream.
# Each host alone may go at max=100/s, so only the fleet budget holds them:
# fleet_max=60 for all three together.  The downstream must see 60/s within
# 10% over the run after its first second (and before the clients stop), each host must report three live
# hosts and no fallback, Redis must be called a few times per second per
# host rather than once per call, and every key the fleet wrote must expire.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/fleet/lib.sh"

start_redis
port=$(start_httpd api)
export AGILE_REDIS="redis://127.0.0.1:$redis_port/0"
export AGILE_DEST_API="127.0.0.1:$port max=100 floor=100 initial=100 fleet_max=60 redis_timeout=500ms"

t0=$(now_mono)
for n in 1 2 3; do
	host_bg "$n" "$CLIENT" "$port" 6 4 "$tmp/client$n.json"
	pids="${pids:-} $!"
done
sleep 3
check_keys_expire "$redis_port"
for p in $pids; do
	wait "$p" || fail "a client failed"
done

rate=$(arrivals_between "$tmp/api.arrivals" "$(echo "$t0 + 1" | bc)" "$(echo "$t0 + 5.5" | bc)")
note "the downstream saw $rate/s from three hosts with fleet_max=60"
check "54 <= v[0] <= 66" "combined rate within 10% of fleet_max" "$rate"
for n in 1 2 3; do
	calls=$(client_json "$tmp/client$n.json" 'len(c)')
	trips=$(host_json "$n" api 'f["round_trips"]')
	note "host $n: $calls calls, $trips Redis round trips, $(host_json "$n" api 'f["hosts"]') live hosts, source $(host_json "$n" api 'f["source"]')"
	check "v[0] == 3" "host $n counts three live hosts" "$(host_json "$n" api 'f["hosts"]')"
	check "v[0] == 0" "host $n never fell back" "$(host_json "$n" api 'f["fallback_admitted"]')"
	check "v[0] < v[1]" "host $n calls Redis less than once per call" "$trips" "$calls"
done
