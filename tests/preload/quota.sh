#!/bin/sh
# quota.sh - quota= and window= hold across separate runs of a program.
#
# A cron job that must not exceed its calls per period across all its runs
# cannot count in memory: the count is kept in the state file.  Two
# separate runs of a shell loop of curl against one downstream, with
# quota=10/1h: the first makes 6 requests (all answered), the second 6 more,
# of which 4 are answered and 2 refused at once with ECONNREFUSED (curl exit
# status 7) without reaching the server, which sees exactly 10.  agilestat
# shows 0 left and a reset about an hour away.
#
# The same across runs for window=5/1m on a second destination (4 + 4
# requests: 5 answered); with over=wait, window=3/1s makes 7 requests in
# one run wait for room (at least 2 s) instead of failing; and an aligned
# daily quota resets at the next 00:00 UTC.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3
need curl

port=$(start_httpd api)
wport=$(start_httpd win)
dport=$(start_httpd day)
export AGILE_DEST_API="127.0.0.1:$port max=100 quota=10/1h"
export AGILE_DEST_WIN="127.0.0.1:$wport max=100 window=5/1m"
export AGILE_DEST_DAY="127.0.0.1:$dport max=100 quota=3/1d,align"

# One run of a job: $1 requests to port $2; prints how many were answered
# and how many refused.
run() {
	LD_PRELOAD="$PRELOAD" sh -c '
		ok=0 refused=0 i=0
		while [ "$i" -lt "$1" ]; do
			i=$((i + 1))
			if curl -fsS -o /dev/null "http://127.0.0.1:$2/" 2>/dev/null; then
				ok=$((ok + 1))
			elif [ $? -eq 7 ]; then
				refused=$((refused + 1))
			fi
		done
		echo "$ok $refused"' run "$1" "$2"
}

set -- $(run 6 "$port")
note "quota, first run: $1 answered, $2 refused"
check "v[0] == 6 and v[1] == 0" "the first run is within the quota" "$1" "$2"
set -- $(run 6 "$port")
note "quota, second run: $1 answered, $2 refused"
check "v[0] == 4 and v[1] == 2" "the second run gets what the first left" "$1" "$2"
check "v[0] == 10" "the server saw exactly the quota" "$(count_lines "$tmp/api.arrivals")"
check "v[0] == 0" "agilestat: nothing left" "$(stat_json api 'd["quota"]["left"]')"
check "3500 < v[0] <= 3600" "agilestat: resets within the hour" \
	"$(stat_json api 'd["quota"]["reset_s"]')"
check "v[0] == 2" "agilestat: two refused" "$(stat_json api 'd["quota"]["refused"]')"

set -- $(run 4 "$wport")
set -- $(run 4 "$wport")
note "window, second run: $1 answered, $2 refused"
check "v[0] == 1 and v[1] == 3" "the window holds across runs" "$1" "$2"
check "v[0] == 5" "the server saw the window's 5" "$(count_lines "$tmp/win.arrivals")"

export AGILE_DEST_WIN="127.0.0.1:$wport max=100 window=3/1s over=wait"
start=$(python3 -c 'import time; print(time.monotonic())')
set -- $(run 7 "$wport")
elapsed=$(python3 -c "import time; print(time.monotonic() - $start)")
note "over=wait: 7 requests through window=3/1s in $elapsed s ($1 answered)"
check "v[0] == 7" "over=wait refuses nothing" "$1"
check "v[0] >= 1.9" "over=wait waits for room" "$elapsed"
check "v[0] >= 1" "agilestat counts the waits" "$(stat_json win 'd["window"]["waited"]')"

set -- $(run 2 "$dport")
set -- $(run 2 "$dport")
check "v[0] == 1 and v[1] == 1" "an aligned quota holds across runs too" "$1" "$2"
reset=$(stat_json day 'd["quota"]["reset_s"]')
midnight=$(python3 -c 'import time; print(86400 - time.time() % 86400)')
check "abs(v[0] - v[1]) < 5" "an aligned daily quota resets at 00:00 UTC" "$reset" "$midnight"
"$AGILESTAT" | grep -q '^  quota 10 per 1h: 0 left, resets in ' ||
	fail "agilestat's table does not show what is left and when it resets"
"$AGILESTAT" --prometheus | grep -q '^agile_quota_reset_seconds{name="api",' ||
	fail "agilestat --prometheus has no agile_quota_reset_seconds series"
