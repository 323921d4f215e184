#!/bin/sh
# ab.sh - ApacheBench: non-blocking sockets, one event loop, 8 concurrent.
#
# ab (APR) connects non-blocking, polls, and calls connect() a second time
# to learn the result; it drives all its connections from one loop.  The
# grant is taken at connect() and waited for at the first send, so the
# requests reach the server evenly spaced: 100 requests at floor=max=50/s
# must arrive at 50/s within 15%, spaced evenly: the median gap between two
# arrivals must be at least half the 20 ms interval (with the wait inside
# connect() ab sends its 8 connections' requests in bunches, and most gaps
# are near zero).  Every request must be a sample, and ab must report no
# failed request.  The server answers after 20 ms, and that is what the
# samples must say: while ab's one thread sleeps in one socket's send, the
# responses of the other seven wait unread, and counting that stall (up to
# 8 x 20 ms) as round trip would make the median several times larger
# (150 ms before it was fixed).  The median also holds the server's own
# delay and the event loop's wake-ups, which grow when the machine is busy
# (33 to 63 ms seen with two cores loaded four times over, under ASan or
# not): so the bound is 30 ms or, when more, twice the median of ab's own
# request times measured just before without the preload, one request at
# a time (32 to 35 ms then; 49 ms paced against 35 ms alone was the
# widest gap seen).  A program the machine starves of CPU also falls
# behind its grants, and the time it lost is not given back (no burst
# after idle): 39/s was seen under ASan at that load.  So a run below the
# rate's range is made again, twice at most; one above it, or three
# below, fail.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need ab

port=$(start_httpd api 20)
ab -q -n 20 -c 1 "http://127.0.0.1:$port/" >"$tmp/alone.out" 2>&1 ||
	fail "ab failed: $(cat "$tmp/alone.out")"
alone=$(sed -n 's/^ *50% *\([0-9]*\).*/\1/p' "$tmp/alone.out")
export AGILE_DEST_API="127.0.0.1:$port max=50 floor=50 initial=50"
for attempt in 1 2 3; do
	rm -f "$AGILE_STATE"
	: >"$tmp/api.arrivals"
	preloaded ab -q -n 100 -c 8 "http://127.0.0.1:$port/" >"$tmp/ab.out" 2>&1 ||
		fail "ab failed: $(cat "$tmp/ab.out")"
	rate=$(arrival_rate "$tmp/api.arrivals")
	note "attempt $attempt: $rate/s"
	python3 -c 'import sys; sys.exit(float(sys.argv[1]) < 50 * 0.85)' "$rate" && break
done
failed=$(sed -n 's/^Failed requests: *\([0-9]*\).*/\1/p' "$tmp/ab.out")

n=$(count_lines "$tmp/api.arrivals")
gap=$(python3 - "$tmp/api.arrivals" <<'PY'
import statistics, sys
t = sorted(float(x) for x in open(sys.argv[1]) if x.strip())
print("%.2f" % (1000 * statistics.median(b - a for a, b in zip(t, t[1:]))))
PY
)
note "ab: $n requests at $rate/s, median gap $gap ms, failed $failed"
check "v[0] == 0" "ab saw no failed request" "$failed"
check "v[0] == 100" "the server saw every request" "$n"
check "50 * 0.85 <= v[0] <= 50 * 1.15" "ab gets 50/s" "$rate"
check "v[0] >= 10" "requests arrive evenly spaced, not in bunches" "$gap"
check "v[0] >= 100" "every request is a sample" "$(stat_json api 'd["samples_total"]')"
check "v[0] == 0" "no connection counted unreachable" "$(stat_json api 'd["unreachable"]')"
p50=$(history_p50 api)
note "ab: round-trip p50 $p50 ms for a 20 ms downstream (${alone} ms one at a time without the preload)"
check "15 <= v[0] <= max(30, 2 * v[1])" "the event loop's stall is not measured as round trip" "$p50" "$alone"
