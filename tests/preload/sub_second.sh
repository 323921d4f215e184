#!/bin/sh
# sub_second.sh - a rate below one request per second paces real programs.
#
# Four curl processes, one after another, fetch from a local server through
# the preload with floor=max=1/2s: one request every 2 s, the pace of a
# polite scraper.  Each curl is a separate process, so the spacing comes
# from the shared bucket in the state file.  The bucket plans the four
# grants exactly 2 s apart, the first no earlier than the start, so the run
# takes at least 6 s (5.9 allows for the clocks' rounding); the server sees
# the first and last 6 s apart, less however late the first curl was
# scheduled after its grant (0.5 s of slack; measured here: 6.03 s in all,
# 5.991 s first to last, the shortest gap 1.991 s).  agilestat must show
# the rate as 0.5, not 0.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need curl

port=$(start_httpd api)
export AGILE_DEST_API="127.0.0.1:$port max=1/2s floor=1/2s"
start=$(date +%s.%N)
for i in 1 2 3 4; do
	preloaded curl -sf -o /dev/null "http://127.0.0.1:$port/$i" ||
		fail "curl $i failed"
done
end=$(date +%s.%N)

n=$(count_lines "$tmp/api.arrivals")
span=$(python3 -c '
import sys
t = sorted(float(x) for x in open(sys.argv[1]) if x.strip())
print("%.3f %.3f" % (t[-1] - t[0], min(b - a for a, b in zip(t, t[1:]))))
' "$tmp/api.arrivals")
elapsed=$(echo "$end - $start" | bc)
note "$n requests in $elapsed s; server: first to last, shortest gap $span s"
check "v[0] == 4" "the server saw every request" "$n"
check "v[0] >= 5.9" "four grants 2 s apart take 6 s" "$elapsed"
check "v[0] >= 5.5" "the server saw them 2 s apart" $span
check "v[0] == 0.5 and v[1] == 0.5 and v[2] == 0.5" \
	"agilestat --json shows the fractional bounds" \
	"$(stat_json api 'd["max"]')" "$(stat_json api 'd["floor"]')" \
	"$(stat_json api 'd["rate"]')"
"$AGILESTAT" >"$tmp/table" || fail "agilestat failed"
grep -q "rate 0.5/s (floor 0.5, max 0.5)" "$tmp/table" ||
	fail "the table does not show rate 0.5/s: $(cat "$tmp/table")"
