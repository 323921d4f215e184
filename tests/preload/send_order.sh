#!/bin/sh
# send_order.sh - sockets written in another order than they connected.
#
# A new connection's grant is planned at connect() and waited for at the
# first send.  Node's fetch (undici) opened 200 sockets at once and wrote
# them in whatever order its poller listed them: it slept in one socket's
# write through the grants of others, then wrote all of those at once, and
# the server saw 51 to 66 requests inside one second at max=20.  The
# deterministic form below connects 40 non-blocking sockets and writes them
# last first: before the fix the first write waited 1.95 s and the other 39
# followed within a millisecond (40 in one second); the preload now spaces
# the sends themselves, so no second may see much more than 20 (measured:
# 21).  Node's fetch runs the same check where node is installed.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3

port=$(start_httpd api)
export AGILE_DEST_API="127.0.0.1:$port max=20 floor=20 initial=20"
preloaded python3 - "$port" 40 >"$tmp/python.out" <<'PY' || fail "the client failed"
import select, socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
socks = []
for i in range(n):
    s = socket.socket()
    s.setblocking(False)
    try:
        s.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    socks.append(s)
select.select([], socks, [], 5)
for s in reversed(socks):
    s.setblocking(True)
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
ok = 0
for s in socks:
    data = b""
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    ok += data.endswith(b"ok\n")
    s.close()
print(ok)
PY
check "v[0] == 40" "every request is answered" "$(cat "$tmp/python.out")"
check "v[0] == 40" "the server saw every request" "$(count_lines "$tmp/api.arrivals")"
most=$(arrival_max_window "$tmp/api.arrivals" 1)
note "written last first: at most $most requests in one second at max=20"
# Slack for a loaded machine: the server's arrival stamps can bunch by its
# threads' wake-up latency.
check "v[0] <= 24" "the ceiling holds per second when sends are out of order" "$most"

command -v node >/dev/null 2>&1 || { note "node is not installed: its part is not run"; exit 0; }
node -e 'process.exit(typeof fetch === "function" ? 0 : 1)' 2>/dev/null ||
	{ note "this node has no fetch: its part is not run"; exit 0; }
: >"$tmp/api.arrivals"
preloaded node - "http://127.0.0.1:$port/" 200 >"$tmp/node.out" 2>"$tmp/node.err" <<'JS' ||
const [url, n] = [process.argv[2], +process.argv[3]];
let ok = 0;
Promise.all(Array.from({length: n}, async () => {
	const r = await fetch(url);
	if ((await r.text()) === "ok\n") ok++;
})).then(() => console.log(ok));
JS
	fail "node failed: $(cat "$tmp/node.err")"
check "v[0] == 200" "node: every request is answered" "$(cat "$tmp/node.out")"
most=$(arrival_max_window "$tmp/api.arrivals" 1)
note "node fetch, 200 at once: at most $most requests in one second at max=20"
check "v[0] <= 24" "node: the ceiling holds per second" "$most"
