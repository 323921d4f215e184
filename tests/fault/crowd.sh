#!/bin/sh
# crowd.sh - 200 short processes and 64 threads at once share one ceiling.
#
# One destination at floor=max=100 requests per second.  Two crowds run at
# the same time: a shell loop starting 200 short processes one after the
# other (each maps the state file, takes one grant from the shared bucket,
# makes one request and exits), and one process whose 64 threads are
# released together from a barrier and make 4 requests each.  All 456
# requests must succeed, and the whole must take at least 455 intervals of
# 10 ms, less 5%: the crowds got one budget, not one each.
#
# Counted at the server (the kernel's receive time of each request's first
# byte, which every request must have: one the server timed at its read,
# when it got to it, would count a late server, not the clients; see
# server.py), every second since the first request must hold at most the
# ceiling plus 5, and any window of one second at most the ceiling plus 8,
# and both as many more as the ceiling grants in one scheduling delay.
# The grants themselves are spaced exactly (libagile's bucket tests show it
# on a virtual clock); a request is sent at its grant or later, never
# earlier: later by the client's wake-up latency after its wait and the
# work to its send, which lets a late request land next to the one after
# it.  That is 20 to 40 ms at worst with 64 threads and a loop of processes
# on two cores loaded by CI's parallel make check (103 seen in one calendar
# second), and more on a machine busier still: 109 to 114 in a window of
# one second under ASan with the two cores loaded four times over, where a
# process sleeping 10 ms at a time wakes up 65 to 230 ms late.  That latest
# wake-up, measured beside the test, is the scheduling delay allowed here
# (19 to 62 ms seen on a less busy machine).  With three busy loops on the
# two cores, ten runs saw 99 to 101 in a calendar second and 101 to 103 in
# any window (8 to 99 ms of scheduling delay); before every request had
# its stamp, those timed at the server's read put 121 and 135 in a
# calendar second and 148 and 163 in a window (in the run of 163, 175
# requests had no stamp, and the stamped ones held at most 101 in any).
#
# The server also logs when it accepted each connection.  Those are not
# held to the ceiling: a connection's handshake is never delayed, its first
# request is (the wait is at the first send, so an event loop's requests
# are spaced, not its connects), and the 64 threads connect at once.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/fault/lib.sh"
need python3

port=$(start_server http api)
export AGILE_DEST_API="127.0.0.1:$port max=100 floor=100 initial=100"
start=$(python3 -c 'import time; print(time.monotonic())')
start_lateness sched 120
(
	i=0
	while [ "$i" -lt 200 ]; do
		LD_PRELOAD="$PRELOAD" "$CLIENT" "$port" >/dev/null || exit 1
		i=$((i + 1))
	done
) &
loop=$!
threads=$(preloaded "$CLIENT" -t 64 -n 4 "$port") || fail "64 threads: $threads"
wait "$loop" || fail "a process of the loop failed"
elapsed=$(python3 -c "import time; print(time.monotonic() - $start)")
note "64 threads: $threads; 200 processes and 256 thread requests in $elapsed s"

requests=$(count_lines "$tmp/api.requests")
check "v[0] == 456" "the server saw every request" "$requests"
check "v[0] == 0" "the kernel stamped every request on arrival" \
	"$(count_lines "$tmp/api.unstamped")"
late=$(lateness_max sched 0 1e12)
calendar=$(busiest_calendar_second "$tmp/api.requests")
busiest=$(busiest_second "$tmp/api.requests")
note "busiest second: $calendar requests ($busiest in any 1 s window), $(busiest_second "$tmp/api.accepts") accepted connections; scheduling delay $late ms"
check "v[0] <= 105 + 100 * v[1] / 1000" "no second held more requests than the ceiling (and one scheduling delay)" "$calendar" "$late"
check "v[0] <= 108 + 100 * v[1] / 1000" "nor any window of one second" "$busiest" "$late"
check "v[0] >= 455 * 0.01 * 0.95" "one budget for both crowds" "$elapsed"
check "v[0] == 456" "one connect per request" "$(stat_json api 'd["connects"]')"
