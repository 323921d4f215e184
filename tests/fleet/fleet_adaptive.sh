#!/bin/sh
# fleet_adaptive.sh - fleet=adaptive: three hosts, one controller, one rate.
#
# Three hosts call one downstream as fast as the preload lets them (eight
# threads each).  The downstream serves 150 requests a second, then 50
# from 9 s on (scripts/downstream.py: a FIFO worker, 10 ms base latency).
# With fleet=adaptive each host sends its ticks' round trips to Redis, one
# host per tick runs the control step on the merged histogram, and the
# fleet bucket runs at the rate it publishes.  So:
#  - the hosts take turns winning the step (no host is the fleet's only
#    brain, and each epoch has one winner);
#  - every host shows the one rate Redis holds (none guesses alone);
#  - the fleet finds the first capacity (its busiest second before the
#    drop carries two thirds of it), and after the drop backs all three
#    hosts off together, below the second one's excess (how far below,
#    and how long it holds the first capacity, is the control law's
#    business, the same as one host alone: tests/core/check_stories.c).  On a
#    loaded machine the slow start's overshoot queues at the downstream
#    and is cut a second or two after the peak, some runs before the drop
#    (per second: 96, 143, 153, 144, 95, 6 from 3 s on), so the mean
#    over 5 to 9 s came to 75 to 121 requests a second, and held to 100
#    it failed runs that had found the capacity.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/fleet/lib.sh"

start_redis
dport=$(closed_port)
python3 "$srcdir/scripts/downstream.py" --port "$dport" --base-ms 10 \
	--slo-ms 100 --schedule "0:150,9:50" --lifetime 60 \
	--ready-file "$tmp/ready" >"$tmp/downstream.log" 2>&1 &
started $!
i=0
until [ -s "$tmp/ready" ]; do
	i=$((i + 1))
	[ "$i" -le 100 ] || fail "the downstream did not start"
	sleep 0.05
done
export AGILE_REDIS="redis://127.0.0.1:$redis_port/0"
export AGILE_DEST_API="127.0.0.1:$dport max=300 floor=5 slo=100ms fleet_max=300 fleet=adaptive redis_timeout=500ms"

t0=$(now_mono)
for n in 1 2 3; do
	host_bg "$n" "$CLIENT" "$dport" 20 8 "$tmp/client$n.json"
	pids="${pids:-} $!"
done
sleep 19
for n in 1 2 3; do
	host_json "$n" api 'f["fleet_rate"]' >"$tmp/rate$n"
done
check_keys_expire "$redis_port"
published=$(redis-cli -p "$redis_port" hget '{agile:api}:fleet' rate)
for p in $pids; do
	wait "$p" || fail "a client failed"
done
t1=$(now_mono)

# combined FROM TO: the three hosts' calls per second in [t0+FROM, t0+TO).
combined() {
	python3 - "$t0" "$1" "$2" "$tmp"/client1.json "$tmp"/client2.json "$tmp"/client3.json <<'PY'
import json, sys
t0, a, b = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
n = sum(1 for f in sys.argv[4:] for x in json.load(open(f))["calls"]
        if t0 + a <= x[0] < t0 + b)
print("%.2f" % (n / (b - a)))
PY
}
# busiest FROM TO: the three hosts' most calls in one second of [t0+FROM,
# t0+TO), counted per second from t0+FROM.
busiest() {
	python3 - "$t0" "$1" "$2" "$tmp"/client1.json "$tmp"/client2.json "$tmp"/client3.json <<'PY'
import collections, json, sys
t0, a, b = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
c = collections.Counter(int(x[0] - t0 - a) for f in sys.argv[4:]
                        for x in json.load(open(f))["calls"]
                        if t0 + a <= x[0] < t0 + b)
print(max(c.values(), default=0))
PY
}
before=$(busiest 2 9)
after=$(combined 14 20)
note "combined rate: $before in the busiest second at capacity 150, $after/s at capacity 50"
note "fleet rate: Redis $published/s; hosts see $(cat "$tmp/rate1") $(cat "$tmp/rate2") $(cat "$tmp/rate3")"
check "v[0] >= 100" "the fleet finds the first capacity" "$before"
check "v[0] <= 50 * 1.2" "the fleet backs off below the new capacity" "$after"
for n in 1 2 3; do
	check "abs(v[0] - v[1]) <= 0.35 * v[1]" \
		"host $n runs at the fleet's one rate" "$(cat "$tmp/rate$n")" "$published"
done
won=""
for n in 1 2 3; do
	won="$won $(host_json "$n" api 'f["steps_won"]')"
done
note "control steps won by each host:$won"
# One winner per epoch (SET NX on the epoch's key), so the steps can be no
# more than the 1 s epochs the hosts ran through: from the first host's
# start to the last one's exit, plus one for the epoch already begun.  A
# fixed 23 was too tight when a loaded machine stretched start-up (24 seen).
epochs=$(python3 -c "import math; print(math.ceil($t1 - $t0) + 1)")
check "10 <= v[0] + v[1] + v[2] <= v[3]" "at most one step ran per tick, on one host" $won "$epochs"
check "sum(1 for x in v if x > 0) >= 2" "the hosts took turns" $won
