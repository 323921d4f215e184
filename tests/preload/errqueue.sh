#!/bin/sh
# errqueue.sh - a read of the socket's error queue is no response.
#
# recvmsg(MSG_ERRQUEUE) returns what the kernel queued about the socket's
# own sends, never the peer's bytes.  Two Python clients make 8 requests
# each on a kept-alive connection to a server that answers after 50 ms, at
# floor=max=20, reading the error queue after every send as their kind of
# program does:
#   - transmit timestamps (SO_TIMESTAMPING, software): each read returns a
#     copy of the packet sent (93 bytes), which the preload took for the
#     response: 8 samples of about 0.1 ms instead of the server's 50 ms;
#   - MSG_ZEROCOPY: each read returns a completion of no bytes, which the
#     preload took for an end of file: 8 requests truncated, no sample.
# Each must now give 8 samples, none truncated, with a median at the
# server's 50 ms (45 ms or more; 50.6 measured).
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3

port=$(start_httpd slow 50)

cat >"$tmp/client.py" <<'PY'
import socket, sys, time
port, mode = int(sys.argv[1]), sys.argv[2]
SO_TIMESTAMPING, SO_ZEROCOPY, MSG_ZEROCOPY = 37, 60, 0x4000000
s = socket.create_connection(("127.0.0.1", port))
if mode == "timestamps":
    # SOF_TIMESTAMPING_TX_SOFTWARE | SOFTWARE | OPT_ID
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPING, (1 << 1) | (1 << 4) | (1 << 7))
else:
    s.setsockopt(socket.SOL_SOCKET, SO_ZEROCOPY, 1)
request = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
for i in range(8):
    if mode == "timestamps":
        s.sendall(request)
    else:
        s.sendmsg([request], [], MSG_ZEROCOPY)
    # The kernel queues the timestamp or completion as the send leaves.
    deadline = time.monotonic() + 5
    while True:
        try:
            s.recvmsg(4096, 1024, socket.MSG_ERRQUEUE | socket.MSG_DONTWAIT)
            break
        except BlockingIOError:
            if time.monotonic() > deadline:
                sys.exit("nothing on the error queue")
            time.sleep(0.001)
    answer = b""
    while not answer.endswith(b"ok\n"):
        data = s.recv(4096)
        if not data:
            sys.exit("end of file before the answer")
        answer += data
s.close()
PY

for mode in timestamps zerocopy; do
	export AGILE_DEST_SLOW="127.0.0.1:$port max=20 floor=20 initial=20 tick=200ms"
	rm -f "$AGILE_STATE"
	preloaded python3 "$tmp/client.py" "$port" "$mode" ||
		fail "the $mode client failed"
	samples=$(stat_json slow 'd["samples_total"]')
	truncated=$(stat_json slow 'd["truncated"]')
	p50=$(history_p50 slow)
	note "$mode: $samples samples, $truncated truncated, p50 $p50 ms"
	check "v[0] == 8" "$mode: one sample per request" "$samples"
	check "v[0] == 0" "$mode: nothing truncated" "$truncated"
	check "v[0] >= 45" "$mode: the samples time the server's answer" "$p50"
done
