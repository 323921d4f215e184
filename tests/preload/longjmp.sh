#!/bin/sh
# longjmp.sh - a request timed out by siglongjmp leaves the thread paced.
#
# A C program's classic timeout for a blocking call is a SIGALRM handler
# that calls siglongjmp(); when the preload was waiting for a grant inside
# that call, the jump skipped the end of its hook, which left the thread's
# re-entrancy guard up: every later call of the thread went straight
# through, unpaced and unmeasured (at floor=max=5, three timed-out requests
# and then ten in 0.004 s, instead of 2 s).  Here longjmp_client times out
# three requests after 30 ms each at floor=max=10 (each waits up to 100 ms
# for its grant), first with nothing else in flight (the wait sleeps), then
# with a request in flight on another connection (the wait polls it); then
# ten plain requests must take at least 0.8 s (0.9 s nominal, measured 1.1
# s and 1.0 s), with no second at the server above the ceiling +1.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3
client=$builddir/tests/preload/longjmp_client
[ -x "$client" ] || fail "$client not built"

# The busiest calendar second of the arrivals after $2 (monotonic seconds).
busiest_second() {
	python3 - "$1" "$2" <<'PY'
import collections, sys
after = float(sys.argv[2])
t = [float(x) for x in open(sys.argv[1]) if x.strip() and float(x) >= after]
print(max(collections.Counter(int(x) for x in t).values(), default=0))
PY
}

port=$(start_httpd api)
export AGILE_DEST_API="127.0.0.1:$port max=10 floor=10 initial=10"
for mode in sleep poll; do
	rm -f "$AGILE_STATE"
	: >"$tmp/api.arrivals"
	out=$(preloaded "$client" "$port" "$mode" 30 3 10) ||
		fail "longjmp_client $mode failed"
	set -- $out
	note "$mode: $1 of 3 requests timed out, then 10 requests in $2 s"
	check "v[0] >= 1" "$mode: a request timed out in its pacing wait" "$1"
	check "v[0] >= 0.8" "$mode: the thread is still paced after the jump" "$2"
	check "v[0] <= 11" "$mode: no second above the ceiling +1" \
		"$(busiest_second "$tmp/api.arrivals" 0)"
	check "v[0] >= 10" "$mode: the plain requests are samples" \
		"$(stat_json api 'd["samples_total"]')"
done
