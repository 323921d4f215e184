#!/bin/sh
# http2_pacing.sh - the ceiling holds per stream on one HTTP/2 connection.
#
# h2load -m 10 keeps ten streams open on its one connection and writes
# the HEADERS of all ten in one call.  Paced per connection, the preload
# let its 100 requests through a floor=max=20 ceiling in 0.45 s, about
# 220/s: a connection's grant, then nothing to wait for.  Each new stream
# (a HEADERS frame opening a new odd stream id) is a request now: it takes
# a grant (the connection's covers the first), and a send carrying the
# HEADERS of several is cut at the second one's frame, its short count
# returned, so that the next send waits for the next grant and the
# requests are spaced rather than let out ten at a time (track.c,
# h2_send).  h2load, on nghttp2, keeps the rest of its buffer on a short
# write.  Against nghttpd without TLS, which logs each frame it receives
# with its time, at floor=max=20: all 60 requests succeed, at most 21
# reach the server in any second of its clock, the median gap between two
# is at least half the 50 ms interval, and 60 grants were taken.
#
# One sample per stream, from the send of its HEADERS to the first
# response HEADERS on that stream, not to the connection's next read.
# h2load sleeps in its sends waiting for the next stream's grant and reads
# nothing meanwhile, so the wait peeks at the connection and stamps the
# streams whose answers are there (h2conn.h): against tests/preload/
# h2delay.py, which answers each request 100 ms after it came, 40 requests
# give 40 samples, none truncated, and a median round trip within 10% of
# the server's 100 ms (300 ms, h2load's stall, without the peek).
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need h2load
start_nghttpd -v
port=$nghttpd_port
export AGILE_DEST_H2="127.0.0.1:$port max=20 floor=20 initial=20"

: >"$tmp/nghttpd.log"
preloaded h2load -n 60 -c 1 -m 10 "http://127.0.0.1:$port/index.html" \
	>"$tmp/h2load.out" 2>&1 || fail "h2load failed: $(cat "$tmp/h2load.out")"
grep -q '60 succeeded' "$tmp/h2load.out" || fail "h2load: $(cat "$tmp/h2load.out")"

nghttpd_arrivals "$tmp/nghttpd.log" "$tmp/arrivals"
check_paced "$tmp/arrivals" 60 "60 requests on one connection"
check "v[0] == 60" "one grant per stream" \
	"$(stat_json h2 'd["grants_total"]')"

# Python's h2 is Debian's python3-h2, for the system's interpreter.
py=/usr/bin/python3
if ! "$py" -c 'import h2' 2>/dev/null; then
	note "python3-h2 not installed: the per-stream samples did not run"
	exit 0
fi
port=$(closed_port)
"$py" "$srcdir/tests/preload/h2delay.py" "$port" 0.1 "$tmp/delayed" \
	"$tmp/h2delay.port" \
	>"$tmp/h2delay.log" 2>&1 </dev/null &
started $!
await_file "$tmp/h2delay.port" "h2delay.py did not start" "$tmp/h2delay.log"
export AGILE_DEST_SLOW="127.0.0.1:$port max=20 floor=20 initial=20"
preloaded h2load -n 40 -c 1 -m 10 "http://127.0.0.1:$port/" \
	>"$tmp/h2load.out" 2>&1 || fail "h2load failed: $(cat "$tmp/h2load.out")"
grep -q '40 succeeded' "$tmp/h2load.out" || fail "h2load: $(cat "$tmp/h2load.out")"
# shellcheck disable=SC2046
set -- $(stat_json slow \
	'"%d %d %.3f" % (d["samples_total"], d["truncated"], d["p50_ms"])')
note "40 streams answered after 100 ms: $1 samples, $2 truncated, p50 $3 ms"
check "v[0] == 40" "one sample per stream" "$1"
check "v[0] == 0" "nothing truncated" "$2"
check "abs(v[0] - 100) <= 10" "p50 within 10% of the server's 100 ms" "$3"
