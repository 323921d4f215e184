#!/bin/sh
# grant_rise.sh - a rise reaches the grants planned before it, whenever
# their waits begin.
#
# A connection's grant is planned at its connect and waited for at its
# first send.  ab -c 32 at the floor of 1 req/s plans 32 of them, up to 32
# s ahead, and then, the rate raised to 164, went on sending one request a
# second (issue 15, the closed loop's slo-bump): a wait that began after
# the rise read the new spacing as the one its grant was planned at, and
# moved nothing; and each of the event loop's waits, begun when the last
# ended, a second before its grant, kept it as inside the next tick.
# grant_rise_client connects 6 sockets at 1 req/s (grants 0 to 5 s ahead),
# raises the rate to 100 in the state file as another process's
# controller does, and sends on the last socket first, then on the others
# one after another.  The first send must wait about a tick (under 3 s;
# it waited 5 s), and all of them about as long (under 3 s; 4 s when each
# wait kept the tick after its own start).
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
client=$builddir/tests/preload/grant_rise_client
[ -x "$client" ] || fail "$client not built"

port=$(start_httpd api)
export AGILE_DEST_API="127.0.0.1:$port max=100 floor=1 initial=1"
times=$(preloaded "$client" "$port" "$AGILE_STATE" api 6 100) ||
	fail "grant_rise_client failed"
note "seconds of the first send and of all six after the rise: $times"
set -- $times
check "v[0] < 3" "the last grant, planned 5 s ahead, moved by the rise" "$1"
check "v[0] < 3" "each grant after it moved too, waited for one by one" "$2"
check "v[0] == 6" "every request answered and counted" \
	"$(stat_json api 'd["samples_total"]')"
