#!/bin/sh
# fleet_window.sh - window=50/10s,shared holds across three hosts.
#
# Three hosts (state files) each run a client that calls as fast as the
# preload lets it for 12.5 s against one downstream, with a shared window of
# 50 calls per 10 s and no other limit that binds (max=100 each).  The
# downstream must never see more than 50 arrivals in any 10 s stretch,
# must see the window's 50 at the start (the window is a quota, spent at
# once, not a rate), and again once the first ones leave the window.
# Unused members of a lease are handed back, so the 50 are not lost to
# leases that expired in a host that no longer needed them.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/fleet/lib.sh"

start_redis
port=$(start_httpd api)
export AGILE_REDIS="redis://127.0.0.1:$redis_port/0"
export AGILE_DEST_API="127.0.0.1:$port max=100 floor=100 initial=100 window=50/10s,shared redis_timeout=500ms"

for n in 1 2 3; do
	host_bg "$n" "$CLIENT" "$port" 12.5 2 "$tmp/client$n.json"
	pids="${pids:-} $!"
done
# A client's last calls wait for the window to move on, up to 10 s: stop
# them at the end of the run rather than wait.
sleep 5
check_keys_expire "$redis_port"
sleep 7.5
kill $pids 2>/dev/null || true

n=$(count_lines "$tmp/api.arrivals")
busiest=$(arrival_max_window "$tmp/api.arrivals" 10.0)
first=$(python3 - "$tmp/api.arrivals" <<'PY'
import sys
t = sorted(float(x) for x in open(sys.argv[1]) if x.strip())
print(sum(1 for x in t if x < t[0] + 2))
PY
)
note "$n calls in 12.5 s; busiest 10 s: $busiest; in the first 2 s: $first"
check "v[0] <= 50" "no 10 s stretch holds more than 50 calls" "$busiest"
check "v[0] >= 45" "the window is spent at once" "$first"
check "v[0] >= 80" "it refills once its first calls are 10 s old" "$n"
for n in 1 2 3; do
	note "host $n: $(host_json "$n" api 'f["admitted"]') calls, $(host_json "$n" api 'f["round_trips"]') round trips"
done
