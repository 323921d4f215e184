#!/bin/sh
# listen_keepalive.sh - proto=http on a listener counts requests, not
# connections: a request takes a permit when its first bytes are read and
# gives it back when its response is complete; an idle keep-alive
# connection holds none, and a shed request is answered 503 on a
# connection that stays open.
#
# A Python ThreadingHTTPServer speaking HTTP/1.1 (keep-alive) behind
# AGILE_LISTEN_ proto=http max=4 (floor=initial=4: a fixed cap) answers each request after 50 ms and
# counts how many it has in service at once.  32 idle connections are
# opened first and stay open; then 32 clients, each on one kept-alive
# connection, send 6 requests each.  The server must never see more than
# 4 requests at once, the idle connections must hold nothing (requests
# are served while they are open), every answer must be a 200 or the
# preload's 503 with Retry-After, and every client must have used one
# connection throughout.  Counting connections (no proto=), the 32 idle
# ones would take every permit and the clients' connections would be shed
# and closed.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3

cat >"$tmp/server.py" <<'PY'
import sys, threading, time
from httpd import Quiet, serve
port_file, peak_file = sys.argv[1], sys.argv[2]
lock = threading.Lock()
state = {"now": 0, "peak": 0}
class Handler(Quiet):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
            peak = state["peak"]
        time.sleep(0.05)
        # Out of service once answered: the count drops before the answer
        # is written, which is when the preload can next admit one.
        with lock:
            state["now"] -= 1
        with open(peak_file, "w") as f:
            f.write("%d\n" % peak)
        self.ok()
serve(Handler, port_file)
PY
export AGILE_LISTEN_WEB="127.0.0.1:* max=4 floor=4 initial=4 proto=http retry_after=1s"
LD_PRELOAD="$PRELOAD" python3 "$tmp/server.py" "$tmp/port" "$tmp/peak" </dev/null >"$tmp/server.log" 2>&1 &
started $!
port=$(await_port "$tmp/port" "$tmp/server.log")

python3 - "$port" "$tmp/result" <<'PY' || fail "the clients failed"
import http.client, socket, sys, threading
port, out = int(sys.argv[1]), sys.argv[2]
idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(32)]
lock = threading.Lock()
counts = {"200": 0, "503": 0, "other": 0, "no_retry_after": 0,
          "reconnected": 0}
start = threading.Barrier(32)
def client():
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.connect()
    local = c.sock.getsockname()
    start.wait()
    for _ in range(6):
        c.request("GET", "/")
        r = c.getresponse()
        r.read()
        with lock:
            if r.status == 503 and r.getheader("Retry-After") != "1":
                counts["no_retry_after"] += 1
            key = str(r.status) if r.status in (200, 503) else "other"
            counts[key] += 1
            if c.sock is None or c.sock.getsockname() != local:
                counts["reconnected"] += 1
        if c.sock is None:
            c.connect()
threads = [threading.Thread(target=client) for _ in range(32)]
for t in threads:
    t.start()
for t in threads:
    t.join()
# The idle connections are still open: what is held now is theirs.
import subprocess, os
with open(out, "w") as f:
    f.write(" ".join(str(counts[k]) for k in
                     ("200", "503", "other", "no_retry_after", "reconnected")))
    f.write("\n")
PY
open_now=$(stat_json web 'd["listener"]["open"]')
read ok shed other bare reconnected <"$tmp/result"
note "200: $ok, 503: $shed, other: $other, peak in service: $(cat "$tmp/peak")"
check "v[0] <= 4" "never more than 4 requests in service" "$(cat "$tmp/peak")"
check "v[0] >= 4" "requests are served while 32 idle connections are open" "$ok"
check "v[0] > 0" "some requests are shed" "$shed"
check "v[0] + v[1] == 192" "every request is answered 200 or 503" "$ok" "$shed"
check "v[0] == 0" "every 503 carries Retry-After: 1" "$bare"
check "v[0] == 0" "every client kept its one connection" "$reconnected"
check "v[0] == $shed" "agilestat counts the shed requests" \
	"$(stat_json web 'd["listener"]["shed"]')"
check "v[0] == 0" "no permit is held once the responses are complete" \
	"$open_now"
check "v[0] == 0" "agilestat --json reads no tail of the server's own" \
	"$(stat_json web 'd["listener"]["tail_own"]')"
