#!/bin/sh
# concurrency_adaptive.sh - concurrency=adaptive under each law.
#
# 32 Python threads make 20 requests each, on fresh connections, to a
# downstream that takes 50 ms per request.  adaptx's windowed laws (aimd,
# vegas, gradient) start at a limit of 10 and move it at most once per
# 1 s window, so the server never sees 32 requests in service at once, and
# each law has run on at least one window of samples (agilestat's
# adjustments).  Not "the limit is no longer 10" at the end: with the two
# cores loaded the round trips swing, and Gradient went up twice and down
# once back to 10 in 4 windows, and Vegas held 10 through 3 windows whose
# queue estimate stayed inside its band; both laws at work, which that
# check took for laws that never ran.  law=agile (the core controller,
# which counts no windows) starts at 10 too and doubles while the round
# trips stay healthy.  No connect may fail or time out under any of them.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3

python3 "$SLOW_HTTPD" "$tmp/port" "$tmp/intervals" </dev/null >"$tmp/server.log" 2>&1 &
started $!
port=$(await_port "$tmp/port" "$tmp/server.log")

for law in aimd vegas gradient agile; do
	rm -f "$tmp/intervals"
	export AGILE_DEST_API="127.0.0.1:$port max=1000 floor=1000 concurrency=adaptive,law=$law"
	get_in_threads "$port" 32 20 || fail "the client failed under law=$law"
	peak=$(peak_in_service "$tmp/intervals")
	limit=$(stat_json api 'd["concurrency"]["limit"]')
	moves=$(stat_json api '" ".join(str(d["concurrency"][k]) for k in ("windows", "adjustments", "increases", "decreases"))')
	note "law=$law: limit now $limit, at most $peak in service at once; windows, adjustments, increases, decreases: $moves"
	check "v[0] == 640" "law=$law: every request answered" "$(count_lines "$tmp/intervals")"
	if [ "$law" = agile ]; then
		check "v[0] != 10" "law=$law: the limit moved from its start" "$limit"
	else
		# shellcheck disable=SC2086 # four numbers
		check "v[1] >= 1" "law=$law: the law ran on its windows of samples" $moves
	fi
	check "v[0] == 0" "law=$law: no connect timed out" \
		"$(stat_json api 'd["concurrency"]["timeouts"]')"
	if [ "$law" != agile ]; then
		check "v[0] < 32" "law=$law: the cap held the 32 threads back" "$peak"
	fi
done
