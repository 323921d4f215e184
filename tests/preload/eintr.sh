#!/bin/sh
# eintr.sh - a signal during the pacing wait runs the program's handler,
# and the wait goes on for what is left of it.
#
# A Python client with a SIGALRM handler firing every 5 ms (installed
# without SA_RESTART, as Python does) makes six requests on a kept-alive
# connection at floor=max=2/s, so every request after the first sleeps
# 0.5 s in the preload while hundreds of signals arrive.  Each signal fails
# the send with EINTR (a blocking socket, a handler without SA_RESTART:
# tests/fault/eintr.sh) and Python, having run the handler, retries it.
# The wait must neither end early (a retried send that did not wait for
# the rest of the same grant would let the request out ahead of it) nor
# start over from scratch: the six take 2.5 s within 15%, the server sees 2/s, no call
# fails, the handler runs, and every request is a sample.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3

port=$(start_httpd api)
export AGILE_DEST_API="127.0.0.1:$port max=2 floor=2 initial=2"
cat >"$tmp/eintr.py" <<'PY'
import http.client, signal, sys, time
calls = [0]
def handler(signum, frame):
    calls[0] += 1
signal.signal(signal.SIGALRM, handler)
signal.setitimer(signal.ITIMER_REAL, 0.005, 0.005)
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]))
start = time.monotonic()
for i in range(6):
    c.request("GET", "/eintr")
    c.getresponse().read()
elapsed = time.monotonic() - start
signal.setitimer(signal.ITIMER_REAL, 0)
print("%.3f %d" % (elapsed, calls[0]))
PY
out=$(preloaded python3 "$tmp/eintr.py" "$port") || fail "the client failed"
set -- $out
note "6 requests at 2/s under SIGALRM every 5 ms: $1 s, handler ran $2 times"
check "2.5 * 0.85 <= v[0] <= 2.5 * 1.15" "the waits were neither cut short nor restarted" "$1"
check "v[0] >= 1" "the handler ran" "$2"
check "2 * 0.85 <= v[0] <= 2 * 1.15" "the server saw 2/s" "$(arrival_rate "$tmp/api.arrivals")"
check "v[0] == 6" "every request is a sample" "$(stat_json api 'd["samples_total"]')"
