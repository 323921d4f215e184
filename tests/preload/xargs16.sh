#!/bin/sh
# xargs16.sh - sixteen processes share one budget.
#
# `xargs -P 16 curl` runs sixteen curl processes at once, 64 in all, against
# one destination limited to floor=max=25/s.  They share the bucket through
# the state file, so together they must get 25/s (within 15%), and no
# one-second window may hold more than the 26 grants the bucket can plan in
# it, plus 3: the ceiling is exact on the planned send times (see the
# bucket's unit tests), but a process the scheduler wakes late sends late,
# never early, and on a loaded two-core CI machine a few late sends land in
# the next second (seen: 28), and as many more as the ceiling grants in
# one scheduling delay, the latest wake-up of a process sleeping 10 ms at a
# time beside the test (31 seen with the two cores loaded four times over).
# A per-process limiter would let them send 16 times as fast, 64 in the
# first second.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need curl

port=$(start_httpd api)
export AGILE_DEST_API="127.0.0.1:$port max=25 floor=25 initial=25"
start_lateness sched 60
seq 64 | preloaded xargs -P 16 -I{} curl -sf -o /dev/null "http://127.0.0.1:$port/{}" ||
	fail "curl failed"

n=$(count_lines "$tmp/api.arrivals")
rate=$(arrival_rate "$tmp/api.arrivals")
burst=$(arrival_max_window "$tmp/api.arrivals" 1.0)
late=$(lateness_max sched 0 1e12)
note "$n requests from 16 concurrent processes: $rate/s, busiest second $burst; scheduling delay $late ms"
check "v[0] == 64" "the server saw every request" "$n"
check "25 * 0.85 <= v[0] <= 25 * 1.15" "the processes together get 25/s" "$rate"
check "v[0] <= 29 + 25 * v[1] / 1000" "no second far above the shared ceiling" "$burst" "$late"
check "v[0] == 64" "every request is a sample in the one shared record" \
	"$(stat_json api 'd["samples_total"]')"
