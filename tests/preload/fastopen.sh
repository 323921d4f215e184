#!/bin/sh
# fastopen.sh - TCP Fast Open without connect() is paced and measured.
#
# sendto(…, MSG_FASTOPEN, address) on a fresh socket connects and sends in
# one call; no connect() ever runs, so the preload never tracked the
# socket: a Python client making 10 such requests at floor=max=10 reached
# the server at 976/s, with no connection, sample or grant recorded.  The
# call now starts the connection as connect() would, and is its first
# send: the server must see about 10/s (10.0 measured; 7 to 10.5 allowed,
# since a busy machine wakes the client late and only the ceiling is the
# promise), and the destination count 10 connections and 10 samples.  The
# same call to a port nothing listens on must still fail with
# ECONNREFUSED, and be counted unreachable.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3
# The client side of Fast Open is bit 1 of this setting (Linux's default);
# without it the kernel refuses MSG_FASTOPEN, and there is nothing to test.
[ $(( $(cat /proc/sys/net/ipv4/tcp_fastopen 2>/dev/null || echo 0) & 1 )) -eq 1 ] ||
	skip "net.ipv4.tcp_fastopen does not enable the client side"

port=$(start_httpd fast)
closed=$(closed_port)

cat >"$tmp/client.py" <<'PY'
import errno, socket, sys
port, closed = int(sys.argv[1]), int(sys.argv[2])
request = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
for i in range(10):
    s = socket.socket()
    s.sendto(request, socket.MSG_FASTOPEN, ("127.0.0.1", port))
    answer = b""
    while True:
        data = s.recv(4096)
        if not data:
            break
        answer += data
    assert answer.endswith(b"ok\n"), answer
    s.close()
s = socket.socket()
try:
    s.sendto(request, socket.MSG_FASTOPEN, ("127.0.0.1", closed))
    sys.exit("a Fast Open to a closed port succeeded")
except OSError as e:
    if e.errno != errno.ECONNREFUSED:
        sys.exit("a Fast Open to a closed port failed with %r" % e)
PY

export AGILE_DEST_FAST="127.0.0.1:$port max=10 floor=10 initial=10"
export AGILE_DEST_CLOSED="127.0.0.1:$closed max=10 floor=10 initial=10"
preloaded python3 "$tmp/client.py" "$port" "$closed" || fail "the client failed"

rate=$(arrival_rate "$tmp/fast.arrivals")
note "server saw $rate/s"
check "7 <= v[0] <= 10 * 1.05" "Fast Open requests are paced" "$rate"
connects=$(stat_json fast 'd["connects"]')
samples=$(stat_json fast 'd["samples_total"]')
note "$connects connections, $samples samples"
check "v[0] == 10" "each is a connection" "$connects"
check "v[0] == 10" "and a sample" "$samples"
check "v[0] == 1" "the refused one is unreachable" \
	"$(stat_json closed 'd["unreachable"]')"
