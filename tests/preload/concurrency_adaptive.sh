#!/bin/sh
# concurrency_adaptive.sh - concurrency=adaptive under each law.
#
# 32 Python threads make 20 requests each, on fresh connections, to a
# downstream that takes 50 ms per request.  adaptx's windowed laws (aimd,
# vegas, gradient) start at a limit of 10 and move it at most once per
# 1 s window, so the server never sees 32 requests in service at once, and
# the limit has moved by the end; law=agile (the core controller) starts at
# 10 too and doubles while the round trips stay healthy.  No connect may
# fail or time out under any of them.
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
	note "law=$law: limit now $limit, at most $peak in service at once"
	check "v[0] == 640" "law=$law: every request answered" "$(count_lines "$tmp/intervals")"
	check "v[0] != 10" "law=$law: the limit moved from its start" "$limit"
	check "v[0] == 0" "law=$law: no connect timed out" \
		"$(stat_json api 'd["concurrency"]["timeouts"]')"
	if [ "$law" != agile ]; then
		check "v[0] < 32" "law=$law: the cap held the 32 threads back" "$peak"
	fi
done
