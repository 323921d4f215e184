#!/bin/sh
# serve_scrapers.sh - agilestat --serve under 100 concurrent scrapers.
#
# A paced Python client runs under the preload while 100 Python threads
# (tests/tools/scrapers.py), each on its own keep-alive connection, ask
# agilestat --serve for /metrics in both formats, /json and / for 10 s.
# Every answer must be valid and every thread must have been answered.
# Meanwhile tests/tools/hostile.py sends what a server facing any local
# client must survive (an unknown path, a POST, HEAD, 40 KiB of headers, a
# GET whose body never ends, a line that is not HTTP, and half a request
# line left hanging, which the server's 10 s idle timeout must cut off):
# each must get its answer.  The server must still answer afterwards, and
# the paced client must have gone on making requests throughout.  What the scrapers cost the paced
# program's throughput is a figure, measured by scripts/bench-serve, not
# a bound here: on a busy machine it would fail for reasons of its own.
# scripts/test.sh --sanitize runs it too, agilestat and the preload built
# with ASan and UBSan (so it uses no curl, which hangs under ASan).
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
. "$srcdir/tests/tools/lib_serve.sh"
need python3

start_paced 60
start_serve
await_destination api

before=$(count_lines "$tmp/paced.done")
python3 "$srcdir/tests/tools/hostile.py" "$serve_url" >"$tmp/hostile.out" 2>&1 &
hostile=$!
started $hostile
python3 "$srcdir/tests/tools/scrapers.py" "$serve_url" 100 10 ||
	fail "an answer to the scrapers was invalid"
status=0
wait "$hostile" || status=$?
cat "$tmp/hostile.out"
[ "$status" -eq 0 ] || fail "a hostile request was not handled"
after=$(count_lines "$tmp/paced.done")
check "v[1] - v[0] >= 50" "the paced client stalled while the scrapers ran" \
	"$before" "$after"
kill -0 "$serve_pid" 2>/dev/null || fail "agilestat --serve is gone"
python3 -c 'import sys, urllib.request
urllib.request.urlopen(sys.argv[1] + "json", timeout=10).read()' "$serve_url" ||
	fail "no answer after the scrapers"
