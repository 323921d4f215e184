#!/bin/sh
# connect_rate.sh - a fixed rate (floor = max) is what the server sees.
#
# Sixty curl processes, four at a time, fetch from a local server through
# the preload with floor=max=20/s.  Each curl is a separate process, so the
# spacing comes from the shared bucket in the state file: the server must
# see 20 requests per second within 15%, every request must be one sample
# and one paced connection, and no one-second window may hold more than the
# ceiling allows (20 + the one grant a window's edge can add, plus one for
# timestamp jitter on a loaded machine).
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need curl

port=$(start_httpd api)
export AGILE_DEST_API="127.0.0.1:$port max=20 floor=20 initial=20"
start=$(date +%s.%N)
seq 60 | preloaded xargs -P 4 -I{} curl -sf -o /dev/null "http://127.0.0.1:$port/{}" ||
	fail "curl failed"
end=$(date +%s.%N)

n=$(count_lines "$tmp/api.arrivals")
rate=$(arrival_rate "$tmp/api.arrivals")
burst=$(arrival_max_window "$tmp/api.arrivals" 1.0)
note "$n requests in $(echo "$end - $start" | bc) s, server saw $rate/s, busiest second $burst"
check "v[0] == 60" "the server saw every request" "$n"
check "17 <= v[0] <= 23" "rate within 15% of 20/s" "$rate"
check "v[0] <= 22" "no second above the ceiling" "$burst"
check "v[0] == 60" "one paced connection per curl" "$(stat_json api 'd["connects"]')"
check "v[0] == 60" "one sample per request" "$(stat_json api 'd["samples_total"]')"
