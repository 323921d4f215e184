#!/bin/sh
# http2_verdicts.sh - proto=http reads an HTTP/2 response's :status and
# Retry-After as it does HTTP/1.1's.
#
# tests/preload/h2status.py answers the first request on its one HTTP/2
# connection 429 with Retry-After: 2, the rest 200; tests/preload/h2get.py
# asks four times on one connection, each request after the last one's
# answer, at floor=max=50 (20 ms apart).  With proto=http the HPACK
# decoder (h2hpack.h, on libnghttp2) reads the 429 and pauses the bucket
# as http.c does for HTTP/1.1: the second request reaches the server no
# earlier than 1.8 s after the first, and the 429 counts as unreachable,
# not as a sample.
# Last, exclude=/health read from the request's :path leaves its three
# streams out of the samples.
# Not curl: Debian 12's curl 7.88.1 cannot reuse a prior-knowledge HTTP/2
# connection (every request after the first on it fails, exit 16, with or
# without the preload; sequential or --parallel), so it never sends a
# second stream to be held.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3
py=/usr/bin/python3
"$py" -c 'import h2' 2>/dev/null || skip "python3-h2 not installed"

gap() {
	python3 - "$1" <<'PY'
import sys
t = [float(x) for x in open(sys.argv[1]) if x.strip()]
print("%.3f" % (t[1] - t[0]) if len(t) > 1 else -1)
PY
}

port=$(closed_port)
"$py" "$srcdir/tests/preload/h2status.py" "$port" 429 1 "$tmp/arrivals" \
	"$tmp/h2status.port" >"$tmp/h2status.log" 2>&1 </dev/null &
started $!
await_file "$tmp/h2status.port" "h2status.py did not start" "$tmp/h2status.log"
export AGILE_DEST_H2="127.0.0.1:$port max=50 floor=50 initial=50 proto=http"
preloaded "$py" "$srcdir/tests/preload/h2get.py" "$port" 4 >"$tmp/get.out" \
	2>&1 || fail "h2get.py failed: $(cat "$tmp/get.out")"
[ "$(head -n 1 "$tmp/get.out")" = 429 ] || fail "h2get.py: $(cat "$tmp/get.out")"
g=$(gap "$tmp/arrivals")
note "429 + Retry-After: 2 over HTTP/2: the next request came $g s later"
check "v[0] >= 1.8" "the next request waits for Retry-After" "$g"
check "v[0] >= 1" "the 429 is unreachable" "$(stat_json h2 'd["unreachable"]')"
check "v[0] == 3" "the three 200s are the samples" \
	"$(stat_json h2 'd["samples_total"]')"

# exclude= on the request's :path: three requests for /health, no sample.
port=$(closed_port)
"$py" "$srcdir/tests/preload/h2status.py" "$port" 429 0 "$tmp/health" \
	"$tmp/h2health.port" >"$tmp/h2health.log" 2>&1 </dev/null &
started $!
await_file "$tmp/h2health.port" "h2status.py did not start" "$tmp/h2health.log"
export AGILE_DEST_H2X="127.0.0.1:$port max=50 floor=50 initial=50 proto=http exclude=/health"
preloaded "$py" "$srcdir/tests/preload/h2get.py" "$port" 3 /health \
	>"$tmp/get.out" 2>&1 || fail "h2get.py failed: $(cat "$tmp/get.out")"
check "v[0] == 3" "the server saw the three requests" "$(count_lines "$tmp/health")"
check "v[0] == 0" "an excluded :path is no sample" \
	"$(stat_json h2x 'd["samples_total"]')"
