#!/bin/sh
# handler_send.sh - a signal handler that makes requests on the paced
# destination does not livelock the waits it interrupts (issue 16, item 5).
#
# handler_send_client makes 12 requests at floor=max=4 while a SIGALRM
# every 150 ms runs a handler that makes one request of its own to the
# same destination.  Paced inside the handler, each of its requests
# waited for a grant, the next SIGALRM arrived first and ran the handler
# again, nested: the 12 requests never finished (on main the client was
# still running when the timeout killed it).  A handler that interrupts a
# paced call (the wait, and the receive: on a loaded machine the answer
# can take longer than 150 ms, and a handler paced there nested again) is
# not paced (agilepreload(7), beside the other signal rules), so the program's
# requests keep their pace: 12 at 4/s, after the initial burst, in about
# 2 s, and none of the handler's requests is one of the destination's.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
client=$builddir/tests/preload/handler_send_client
[ -x "$client" ] || fail "$client not built"

port=$(start_httpd api)
export AGILE_DEST_API="127.0.0.1:$port max=4 floor=4 initial=4"
status=0
out=$(timeout 30 env LD_PRELOAD="$PRELOAD" "$client" "$port" 12 150) ||
	status=$?
[ "$status" -eq 0 ] ||
	fail "the 12 requests did not finish (exit status $status${out:+: $out})"
set -- $out
note "12 requests in $1 s; the handler made $3 of its own"
check "v[0] == 12" "every request answered" "$2"
check "v[0] >= 1" "the handler ran and made requests" "$3"
check "v[0] >= 1.5" "the program's requests kept the pace of 4/s" "$1"
check "v[0] == 12" "only the program's requests are the destination's" \
	"$(stat_json api 'd["connects"]')"
