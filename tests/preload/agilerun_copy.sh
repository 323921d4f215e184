#!/bin/sh
# agilerun_copy.sh - agilerun does not load a second copy of the library.
#
# A user who exported LD_PRELOAD=/usr/local/lib/libagilepreload.so, as the
# README's quick start shows, and then runs agilerun from a build tree has
# two copies of the library: agilerun put its own in front of the exported
# one, since it only looked for its own path.  Both copies hook every call
# and each takes a grant for every request, so a client paced at
# floor=max=20 reached the server at 10.0/s.  agilerun now leaves an
# LD_PRELOAD that names any libagilepreload.so as it is, and the client
# gets its 20/s.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3
agilerun=$builddir/src/tools/agilerun

# The "installed" copy: the same library, another file.
mkdir "$tmp/lib"
cp "$builddir/preload/.libs/libagilepreload.so" "$tmp/lib/"

port=$(start_httpd api)
LD_PRELOAD="$tmp/lib/libagilepreload.so" "$agilerun" \
	-d "api=127.0.0.1:$port floor=20 max=20" -- \
	sh -c 'echo "$LD_PRELOAD" >"$1"; exec python3 -c "$2" "$3"' sh \
	"$tmp/preload" '
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
for _ in range(20):
    c.request("GET", "/")
    c.getresponse().read()
' "$port" || fail "the client failed"

[ "$(count_lines "$tmp/api.arrivals")" -eq 20 ] || fail "not 20 requests at the server"
# Measured 20.0/s with one copy, 10.0/s with two: 16 leaves room for a
# slow machine while telling the two apart.
check "16 <= v[0] <= 21" "20 requests at floor=max=20 reach the server at 20/s" \
	"$(arrival_rate "$tmp/api.arrivals")"
[ "$(cat "$tmp/preload")" = "$tmp/lib/libagilepreload.so" ] ||
	fail "LD_PRELOAD was $(cat "$tmp/preload"); expected the exported copy alone"
