#!/bin/sh
# units.sh - a slow rate waits exactly as long as it says (trickle: 10x).
#
# A units bug in trickle makes curl wait ten times too long.  At the
# slowest rate there is, floor=max=1/s, curl fetches four URLs over one
# kept-alive connection and then three curl processes fetch one each,
# sharing the bucket.  The server must see the seven requests one second
# apart: every gap between two arrivals between 0.85 s and 1.5 s (never 10
# s, never a burst), and the kept-alive curl must take about 3 s.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need curl

port=$(start_httpd api)
export AGILE_DEST_API="127.0.0.1:$port max=1 floor=1 initial=1"
url="http://127.0.0.1:$port"

start=$(date +%s.%N)
preloaded curl -sf -o /dev/null -o /dev/null -o /dev/null -o /dev/null \
	"$url/1" "$url/2" "$url/3" "$url/4" || fail "curl failed"
end=$(date +%s.%N)
for i in 5 6 7; do
	preloaded curl -sf -o /dev/null "$url/$i" || fail "curl failed"
done
gaps=$(python3 - "$tmp/api.arrivals" <<'PY'
import sys
t = sorted(float(x) for x in open(sys.argv[1]) if x.strip())
g = [b - a for a, b in zip(t, t[1:])]
print("%d %.3f %.3f" % (len(t), min(g), max(g)))
PY
)
set -- $gaps
note "4 requests on one connection in $(echo "$end - $start" | bc) s; $1 arrivals, gaps $2 s to $3 s"
check "v[0] == 7" "the server saw every request" "$1"
check "0.85 <= v[0] and v[1] <= 1.5" "every wait at 1/s is one second" "$2" "$3"
check "2.7 <= v[0] <= 4.5" "four requests at 1/s take 3 s" "$(echo "$end - $start" | bc)"
