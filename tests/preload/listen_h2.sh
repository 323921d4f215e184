#!/bin/sh
# listen_h2.sh - a listener's limit counts the streams of an HTTP/2
# connection, and a shed stream is answered 503 on a connection that stays
# open.
#
# An HTTP/2 server over cleartext (Python's h2) behind AGILE_LISTEN_
# proto=http max=4 (floor=initial=4: a fixed cap) answers each request
# 200 ms after its HEADERS arrived, and counts the streams it has in
# service after each read (a request it read, neither answered nor reset
# yet).  h2load makes 60 requests on one connection, at most 10 streams
# open at once, 50 a second.  Counted per connection, as before, all ten
# were in service at once.  Per stream: the server never has more than 4
# in service, each request is answered 200 or the preload's 503 (with
# Retry-After), none errs, more than the first 4 are served (later streams
# of the same connection, after shed ones), the server accepted one
# connection, and what the server read of each shed stream is its HEADERS
# followed by the preload's RST_STREAM(CANCEL), which it counts as a reset.
# Each served stream is one handling-time sample, and no permit is held
# once the connection is gone.  Then client_rate=5 on a second server:
# twelve streams at once get the burst, the rest 429 with retry-after: 0.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need h2load
need nghttp
# Python's h2 is Debian's python3-h2, for the system's interpreter.
py=/usr/bin/python3
"$py" -c 'import h2' 2>/dev/null || skip "python3-h2 not installed"

cat >"$tmp/server.py" <<'PY'
import heapq, selectors, socket, sys, time
import h2.config, h2.connection, h2.events, h2.exceptions

port_file, stats_file = sys.argv[1], sys.argv[2]
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(16)
listener.setblocking(False)
sel = selectors.DefaultSelector()
sel.register(listener, selectors.EVENT_READ)
conns, due, active = {}, [], set()
stats = {"peak": 0, "served": 0, "reset": 0, "connections": 0}
with open(port_file, "w") as f:
    f.write("%d\n" % listener.getsockname()[1])


def save():
    with open(stats_file, "w") as f:
        f.write(" ".join("%s=%d" % kv for kv in sorted(stats.items())) + "\n")


def flush(sock):
    sock.setblocking(True)
    sock.sendall(conns[sock].data_to_send())
    sock.setblocking(False)


while True:
    timeout = max(0.0, due[0][0] - time.time()) if due else None
    for key, _ in sel.select(timeout):
        if key.fileobj is listener:
            sock, _ = listener.accept()
            sock.setblocking(False)
            conn = h2.connection.H2Connection(h2.config.H2Configuration(
                client_side=False, header_encoding="utf-8"))
            conn.initiate_connection()
            conns[sock] = conn
            sel.register(sock, selectors.EVENT_READ)
            stats["connections"] += 1
            flush(sock)
            continue
        sock = key.fileobj
        try:
            data = sock.recv(65536)
        except ConnectionError:
            data = b""
        if not data:
            sel.unregister(sock)
            conns.pop(sock, None)
            sock.close()
            continue
        for ev in conns[sock].receive_data(data):
            if isinstance(ev, h2.events.RequestReceived):
                active.add((sock, ev.stream_id))
                heapq.heappush(due, (time.time() + 0.2, ev.stream_id, sock))
            elif isinstance(ev, h2.events.StreamReset):
                if (sock, ev.stream_id) in active:
                    active.discard((sock, ev.stream_id))
                    stats["reset"] += 1
        stats["peak"] = max(stats["peak"], len(active))
        save()
        flush(sock)
    while due and due[0][0] <= time.time():
        _, stream, sock = heapq.heappop(due)
        if (sock, stream) not in active:
            continue
        active.discard((sock, stream))
        conn = conns.get(sock)
        if conn is None:
            continue
        try:
            conn.send_headers(stream, [(":status", "200"),
                                       ("content-length", "3")])
            conn.send_data(stream, b"ok\n", end_stream=True)
            flush(sock)
            stats["served"] += 1
            save()
        except (h2.exceptions.ProtocolError,
                h2.exceptions.StreamClosedError, OSError):
            pass
PY

export AGILE_LISTEN_WEB="127.0.0.1:* max=4 floor=4 initial=4 proto=http retry_after=1s"
LD_PRELOAD="$PRELOAD" "$py" "$tmp/server.py" "$tmp/port" "$tmp/stats" \
	</dev/null >"$tmp/server.log" 2>&1 &
started $!
port=$(await_port "$tmp/port" "$tmp/server.log")

timeout 60 h2load -n 60 -c 1 -m 10 --rps 50 "http://127.0.0.1:$port/" \
	>"$tmp/h2load.out" 2>&1 || fail "h2load failed: $(cat "$tmp/h2load.out")"
sleep 0.5
note "$(grep -E '^(requests|status codes):' "$tmp/h2load.out" | tr '\n' ' ')"
note "server: $(cat "$tmp/stats")"
stat() { sed -n "s/.*\\<$1=\\([0-9]*\\).*/\\1/p" "$tmp/stats"; }
ok=$(sed -n 's/^status codes: \([0-9]*\) 2xx.*/\1/p' "$tmp/h2load.out")
shed=$(sed -n 's/^status codes: .* \([0-9]*\) 5xx.*/\1/p' "$tmp/h2load.out")
errored=$(sed -n 's/^requests: .* \([0-9]*\) errored.*/\1/p' "$tmp/h2load.out")

check "v[0] <= 4" "never more than 4 streams in service" "$(stat peak)"
check "v[0] + v[1] == 60 and v[2] == 0" \
	"every request answered 200 or 503, none errored" "$ok" "$shed" "$errored"
check "v[0] > 4 and v[1] > 0" \
	"later streams of the connection served after shed ones" "$ok" "$shed"
check "v[0] == 1" "one connection, kept" "$(stat connections)"
check "v[0] == v[1]" "the server saw each shed stream reset" \
	"$(stat reset)" "$shed"
check "v[0] == v[1]" "the server served what h2load got as 200" \
	"$(stat served)" "$ok"
check "v[0] == v[1]" "agilestat counts the shed streams" \
	"$(stat_json web 'd["listener"]["shed"]')" "$shed"
check "v[0] == v[1]" "one handling-time sample per served stream" \
	"$(stat_json web 'd["listener"]["samples_total"]')" "$ok"
check "v[0] == 0" "no permit is held with no stream in flight" \
	"$(stat_json web 'd["listener"]["open"]')"

# client_rate= per stream: twelve requests at once from one address (nghttp
# -m 12 on one connection) against client_rate=5 get its burst of 5 (6 if
# the machine is slow enough for a token to come meanwhile), the rest 429
# with retry-after: 0, their next token being at most one 200 ms interval
# away, on the connection that stays open.
rm -f "$tmp/port" "$AGILE_STATE"
export AGILE_LISTEN_WEB="127.0.0.1:* max=64 floor=64 initial=64 proto=http client_rate=5"
LD_PRELOAD="$PRELOAD" "$py" "$tmp/server.py" "$tmp/port" "$tmp/stats" \
	</dev/null >"$tmp/server2.log" 2>&1 &
started $!
port=$(await_port "$tmp/port" "$tmp/server2.log")
timeout 30 nghttp -v -n -m 12 "http://127.0.0.1:$port/" >"$tmp/nghttp.out" 2>&1 ||
	fail "nghttp failed: $(tail -n 20 "$tmp/nghttp.out")"
ok=$(grep -c ':status: 200' "$tmp/nghttp.out" || true)
refused=$(grep -c ':status: 429' "$tmp/nghttp.out" || true)
zero=$(grep -c 'retry-after: 0$' "$tmp/nghttp.out" || true)
note "client_rate=5 over HTTP/2: $ok served, $refused refused, $zero with retry-after: 0"
check "v[0] + v[1] == 12 and 5 <= v[0] <= 6" \
	"twelve streams at once get the burst of 5, the rest 429" "$ok" "$refused"
check "v[0] == v[1]" "every 429 says retry-after: 0" "$zero" "$refused"
