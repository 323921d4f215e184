#!/bin/sh
# inflight.sh - inflight=: a cap on the requests each process keeps in
# flight, gain x rate x window (agile_rate_inflight_cap), held in the send
# that would start one more, for threads and for an event loop alike.
#
# A Python ThreadingHTTPServer speaking HTTP/1.1 answers each request after
# 100 ms and records the interval each was in service.  The destination is
# fixed at 100 requests a second with slo=50ms (a window of 40 ms), so
# inflight=1 caps it at ceil(100 x 0.040) = 4 requests in flight:
#   A. 16 Python threads, each on its own kept-alive connection, 5
#      requests each: the server never has more than 4 in service, and
#      every request is answered;
#   B. the same with inflight=off: the rate alone lets about 10 in at once
#      (100 a second, 100 ms each), which is what A's cap prevents (the
#      check fails without it);
#   C. ab -c 16, one event-loop thread with a connection per request (HTTP
#      1.0, closed after each answer): never more than 4 in service and no
#      failed request.  ab cannot read an answer while it waits in one
#      socket's send; the wait watches its other sockets and gives a place
#      back as their answers arrive, so it is not waiting for itself.
# None of the checks reads a clock.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3

cat >"$tmp/server.py" <<'PY'
import sys, threading, time
from httpd import Quiet, serve
port_file, intervals = sys.argv[1], sys.argv[2]
lock = threading.Lock()
class Handler(Quiet):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        start = time.monotonic()
        time.sleep(0.1)
        end = time.monotonic()
        with lock, open(intervals, "a") as out:
            out.write("%.6f %.6f\n" % (start, end))
        self.ok()
serve(Handler, port_file, lifetime_s=120)
PY
python3 "$tmp/server.py" "$tmp/port" "$tmp/intervals" </dev/null >"$tmp/server.log" 2>&1 &
started $!
port=$(await_port "$tmp/port" "$tmp/server.log")

threads() {
	preloaded python3 - "$port" <<'PY'
import http.client, sys, threading
port = int(sys.argv[1])
errors = []
def worker():
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for _ in range(5):
        try:
            c.request("GET", "/")
            r = c.getresponse()
            assert r.status == 200 and r.read() == b"ok\n"
        except Exception as e:
            errors.append(repr(e))
workers = [threading.Thread(target=worker) for _ in range(16)]
for t in workers: t.start()
for t in workers: t.join()
if errors:
    sys.exit("%d errors, first: %s" % (len(errors), errors[0]))
PY
}

dest="127.0.0.1:$port floor=100 max=100 slo=50ms"

export AGILE_DEST_API="$dest inflight=1"
threads || fail "A: the threads' requests failed"
peak=$(peak_in_service "$tmp/intervals")
note "A: 16 threads, inflight=1: peak in service $peak, $(count_lines "$tmp/intervals") answered"
check "v[0] <= 4" "A: never more than the cap of 4 in service" "$peak"
check "v[0] == 80" "A: every request answered" "$(count_lines "$tmp/intervals")"

rm -f "$tmp/intervals" "$AGILE_STATE"
export AGILE_DEST_API="$dest inflight=off"
threads || fail "B: the threads' requests failed"
peak=$(peak_in_service "$tmp/intervals")
note "B: 16 threads, inflight=off: peak in service $peak"
check "v[0] > 4" "B: without the cap more than 4 are in service" "$peak"

if have ab; then
	rm -f "$tmp/intervals" "$AGILE_STATE"
	export AGILE_DEST_API="$dest inflight=1"
	preloaded ab -q -c 16 -n 60 "http://127.0.0.1:$port/" >"$tmp/ab.out" 2>&1 ||
		fail "C: ab failed: $(tail -3 "$tmp/ab.out")"
	peak=$(peak_in_service "$tmp/intervals")
	failed=$(sed -n 's/^Failed requests: *//p' "$tmp/ab.out")
	note "C: ab -c 16, inflight=1: peak in service $peak, failed ${failed:-?}"
	check "v[0] <= 4" "C: ab never has more than 4 in service" "$peak"
	check "v[0] == 60" "C: every one of ab's requests answered" \
		"$(count_lines "$tmp/intervals")"
	check "v[0] == 0" "C: no failed request" "${failed:-1}"
else
	note "C: ab is not installed; the event-loop part did not run"
fi
