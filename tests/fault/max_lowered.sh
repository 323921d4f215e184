#!/bin/sh
# max_lowered.sh - lowering max while a process of the old configuration
# lives: the processes of the new one share one budget, and where the two
# configurations meet the stricter ceiling holds for both.
#
# The incident of issue 16, item 10: one process with max=100 keeps
# running while five processes are started with max=2.  The slot of the
# name held the old configuration, a live process used it, so each new
# process got a limiter of its own: 9.3/s in all against a 2/s ceiling.
# Here the old process makes requests as fast as its 100/s allows, and
# five new ones make two requests each at once.  The new ones must share
# one budget (their ten requests take at least nine intervals of 500 ms,
# less 10%); and once the old process has seen the stricter configuration
# (it looks once a second), all six together must make at most 2/s: from
# 1.5 s after the first new request to the last, counted by the times the
# clients' requests ended, no more than twice that span plus 3.  The old process's own rate before them shows
# it was not idle.  A ceiling, so the bounds are generous.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/fault/lib.sh"
need python3

port=$(start_server http api)
now() { python3 -c 'import time; print(time.monotonic())'; }

# Each client appends the CLOCK_MONOTONIC time each of its requests ended
# (-T): the old process's to old.times, the new ones' to new.times.
AGILE_DEST_API="127.0.0.1:$port max=100 floor=100 initial=100" \
	LD_PRELOAD="$PRELOAD" "$CLIENT" -T "$tmp/old.times" -n 100000 "$port" \
	>/dev/null 2>"$tmp/old.err" &
old=$!
started "$old"
sleep 1.5
before=$(count_lines "$tmp/old.times")

start=$(now)
for i in 1 2 3 4 5; do
	AGILE_DEST_API="127.0.0.1:$port max=2 floor=2 initial=2" LD_PRELOAD="$PRELOAD" \
		"$CLIENT" -T "$tmp/new.times" -n 2 "$port" >"$tmp/new$i.out" 2>"$tmp/new$i.err" &
	eval "pid$i=\$!"
done
for i in 1 2 3 4 5; do
	eval "wait \$pid$i" || fail "new process $i: $(cat "$tmp/new$i.out" "$tmp/new$i.err")"
done
end=$(now)
kill -0 "$old" 2>/dev/null || fail "the old process ended: $(cat "$tmp/old.err")"
note "the old process alone: $before requests in its first 1.5 s"
note "new processes said: $(cat "$tmp"/new?.err | sort | uniq -c | head -3)"
check "v[0] >= 50" "the old process was busy" "$before"
check "v[1] - v[0] >= 9 * 0.5 * 0.9" "the five new processes shared one budget" "$start" "$end"
# From 1.5 s after the first new request ended (the old process looks for
# a stricter configuration once a second) to the last one's end.
python3 - "$tmp/old.times" "$tmp/new.times" <<'PY' >"$tmp/window"
import sys
old = [float(x) for x in open(sys.argv[1]) if x.strip()]
new = [float(x) for x in open(sys.argv[2]) if x.strip()]
start, end = min(new) + 1.5, max(new)
print(sum(start <= t <= end for t in old + new), end - start, len(new))
PY
set -- $(cat "$tmp/window")
note "all six: $1 requests in the last $2 s of the new processes' run"
check "v[0] == 10" "the new processes' requests all ended" "$3"
check "v[0] <= 2 * v[1] + 3" "the stricter ceiling held for both configurations" "$1" "$2"
