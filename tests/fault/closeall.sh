#!/bin/sh
# closeall.sh - a program that closes every descriptor, its stdin, stdout
# and stderr included, keeps throttling and keeps its shared budget.
#
# tests/preload/torture.sh has a fork child close everything above stdio
# and connect again; here stdio goes too, and the budget must stay shared.
# The preload keeps no descriptor of its own: the state file is closed as
# soon as it is mapped, so there is none for a daemonising program to close
# from under it.  The client makes one request, then closes every
# descriptor from 0 to its limit with close(), then everything again with
# close_range() and closefrom(), and makes 19 more requests.  While it
# runs, its /proc/PID/maps must show the state file mapped and /proc/PID/fd
# no descriptor of it.  Two such clients run at once against one
# destination at floor=max=20/s: all 40 requests must succeed, all must be
# counted in the one shared slot (the mapping survived the closes), and
# together they must take at least 39 intervals of 50 ms, less 5% (one
# budget for both, still shared after the closes).
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/fault/lib.sh"
need python3

port=$(start_server http api)
export AGILE_DEST_API="127.0.0.1:$port max=20 floor=20 initial=20"
# Create the state file first, so that both clients map the same one.
preloaded "$CLIENT" "$port" >/dev/null || fail "the first request failed"
start=$(python3 -c 'import time; print(time.monotonic())')
LD_PRELOAD="$PRELOAD" "$CLIENT" -c -n 20 "$port" &
a=$!
LD_PRELOAD="$PRELOAD" "$CLIENT" -c -n 20 "$port" &
b=$!
started "$a $b"
sleep 0.5
grep -q "$AGILE_STATE" "/proc/$a/maps" || fail "the state file is not mapped"
for fd in "/proc/$a/fd"/*; do
	[ "$(readlink "$fd")" != "$AGILE_STATE" ] ||
		fail "a descriptor of the state file is open"
done
note "the state file is mapped, with no descriptor open"
wait "$a" || fail "client 1 failed after closing every descriptor"
wait "$b" || fail "client 2 failed after closing every descriptor"
elapsed=$(python3 -c "import time; print(time.monotonic() - $start)")
note "40 requests from two clients that closed every descriptor: $elapsed s"
check "v[0] >= 39 * 0.05 * 0.95" "one budget, shared after the closes" "$elapsed"
check "v[0] == 41" "every request counted in the shared slot" \
	"$(stat_json api 'd["connects"]')"
check "v[0] == 41" "every request reached the server" "$(count_lines "$tmp/api.requests")"
