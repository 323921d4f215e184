#!/bin/sh
# expect_continue.sh - "100 Continue" answers no request: an upload that
# waits for it is one request, one grant and one sample.
#
# curl sends "Expect: 100-continue" with any upload above 1 MiB (Debian
# 12's curl 7.88; the header is asked for explicitly here so that a small
# body does the same), then waits for the server's interim "HTTP/1.1 100
# Continue" before it sends the body.  The preload took that interim
# response for the answer and the body for a new request: each upload
# took two grants, so twelve uploads at floor=max=10 reached the server at
# 5.0/s, and gave two samples, the first the interim's sub-millisecond
# echo (24 samples).  Now the request stays in flight until the final
# response: the server must see about 10/s (10.0 measured; 7 to 10.5
# allowed, since a busy machine wakes curl late, and 5.0 is what two
# grants an upload give) and the destination count 12 samples, none
# truncated, whose median is the server's 50 ms answer, not the echo.
#
# The server runs under AGILE_LISTEN_ as well: Python's http.server writes
# the 100 Continue itself, and a listener's handling time ended at that
# write (24 samples of about 0 ms and of the rest).  It must count 12
# handling times, with a median near the 50 ms the handler sleeps.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need curl
need python3

cat >"$tmp/server.py" <<'PY'
import http.server, sys, time
from httpd import Quiet, serve
port_file, arrivals = sys.argv[1], open(sys.argv[2], "a", buffering=1)
class Handler(Quiet):
    # HTTP/1.1: keep-alive, and the interim response to an Expect.
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        arrivals.write("%.6f %s %d\n" % (time.monotonic(),
                                         self.headers.get("Expect", "-"),
                                         len(body)))
        time.sleep(0.05)
        self.ok()
serve(Handler, port_file)
PY
AGILE_LISTEN_UPLOADS="127.0.0.1:* max=64" LD_PRELOAD="$PRELOAD" \
	python3 "$tmp/server.py" "$tmp/port" "$tmp/arrivals" </dev/null \
	>"$tmp/server.log" 2>&1 &
started $!
port=$(await_port "$tmp/port" "$tmp/server.log")

head -c 65536 /dev/zero >"$tmp/body"
set --
for i in $(seq 12); do
	set -- "$@" -o /dev/null "http://127.0.0.1:$port/$i"
done
export AGILE_DEST_UP="127.0.0.1:$port max=10 floor=10 initial=10 tick=200ms"
preloaded curl -sf -H 'Expect: 100-continue' --data-binary @"$tmp/body" "$@" ||
	fail "curl failed"

# Every upload expected the interim response and was received whole, so
# the test reaches the case it is about.
check "v[0] == 12" "12 uploads, each sent after a 100 Continue" \
	"$(grep -c ' 100-continue 65536$' "$tmp/arrivals")"
cut -d' ' -f1 "$tmp/arrivals" >"$tmp/times"
rate=$(arrival_rate "$tmp/times")
samples=$(stat_json up 'd["samples_total"]')
p50=$(history_p50 up)
note "server saw $rate/s; $samples samples, p50 $p50 ms"
check "7 <= v[0] <= 10 * 1.05" "uploads at the ceiling, one grant each" "$rate"
check "v[0] == 12" "one sample per upload" "$samples"
check "v[0] == 0" "nothing truncated" "$(stat_json up 'd["truncated"]')"
# The echo took about 0.5 ms; the server's answer takes its 50 ms sleep
# and, on a loaded machine, more.
check "v[0] >= 45" "the samples time the answer, not the echo" "$p50"

sleep 0.3
listen_samples=$(stat_json uploads 'd["listener"]["samples_total"]')
listen_p50=$(stat_json uploads 'd["listener"]["p50_ms"]')
note "listener: $listen_samples handling times, p50 $listen_p50 ms"
check "v[0] == 12" "one handling time per upload" "$listen_samples"
