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
# the sends themselves, half an interval of tolerance included, so no
# second holds more than 21.  Node's fetch runs the same check where node
# is installed.
#
# A request's arrival is the kernel's receive stamp of its first bytes
# (SO_TIMESTAMPNS), taken on loopback inside the client's send, not the
# time the server's thread got to it: with the two cores loaded a
# server stalled for a quarter of a second and then stamped the requests
# queued meanwhile at once, and its busiest second held 26 sends the
# preload had spaced correctly (reproduced by stopping the server for
# 300 ms: 26 by the thread's clock, 21 by the kernel's).  A send the
# client makes late can only land later, but to be safe the bound allows
# what max=20 grants in one measured scheduling delay, the latest wake-up
# of a process sleeping 10 ms at a time beside the test.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3

cat >"$tmp/stamped_httpd.py" <<'PY'
import socket, struct, sys, threading, time
from httpd import Quiet, serve

SO_TIMESTAMPNS = 35  # Linux's; Python's socket module has no name for it
TIMESPEC = struct.Struct("@ql")


class Handler(Quiet):
    protocol_version = "HTTP/1.1"
    lock = threading.Lock()
    arrivals = None

    def setup(self):
        super().setup()
        # Peek at the first byte for its receive stamp (CLOCK_REALTIME),
        # taken back to the monotonic clock the preload paces on.
        data, anc, _, _ = self.connection.recvmsg(
            1, socket.CMSG_SPACE(TIMESPEC.size), socket.MSG_PEEK)
        stamps = [TIMESPEC.unpack(d[:TIMESPEC.size]) for level, kind, d in anc
                  if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS]
        if data and not stamps:
            raise RuntimeError("a request came without a receive stamp")
        self.arrived = (stamps[0][0] + stamps[0][1] / 1e9 - time.time() +
                        time.monotonic()) if stamps else None

    def do_GET(self):
        with Handler.lock, open(Handler.arrivals, "a") as out:
            out.write("%.6f\n" % self.arrived)
        # One request per connection: the stamp is its first bytes'.
        self.ok(close=True)


# The kernel stamps arrivals only while some socket asks for stamps, and
# turns that on from a work queue a while after the first asks (see
# tests/fault/server.py): this listener asks first and keeps asking, and
# the server starts once a byte sent to it came stamped.
probe = socket.socket()
probe.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
probe.bind(("127.0.0.1", 0))
probe.listen()
for _ in range(1000):
    with socket.create_connection(probe.getsockname()) as c:
        conn, _ = probe.accept()
        with conn:
            c.sendall(b"x")
            _, anc, _, _ = conn.recvmsg(1, socket.CMSG_SPACE(TIMESPEC.size))
            if anc:
                break
    time.sleep(0.01)
else:
    sys.exit("the kernel stamps no arrival")
Handler.arrivals = sys.argv[2]
serve(Handler, sys.argv[1], lifetime_s=120, backlog=256,
      sockopts=[(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)])
PY
python3 "$tmp/stamped_httpd.py" "$tmp/api.port" "$tmp/api.arrivals" </dev/null >"$tmp/api.log" 2>&1 &
started $!
port=$(await_port "$tmp/api.port" "$tmp/api.log")
start_lateness sched 60
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
late=$(lateness_max sched 0 1e12)
note "written last first: at most $most requests in one second at max=20; scheduling delay $late ms"
check "v[0] <= 21 + 20 * v[1] / 1000" "the ceiling holds per second when sends are out of order" "$most" "$late"

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
late=$(lateness_max sched 0 1e12)
note "node fetch, 200 at once: at most $most requests in one second at max=20; scheduling delay $late ms"
check "v[0] <= 21 + 20 * v[1] / 1000" "node: the ceiling holds per second" "$most" "$late"
