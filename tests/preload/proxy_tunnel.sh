#!/bin/sh
# proxy_tunnel.sh - HTTPS through a proxy's tunnel (HTTP CONNECT, SOCKS 5):
# one grant and one sample per request, as without the proxy.
#
# A program whose traffic goes through a proxy connects to the proxy, so
# the rule names the proxy's address.  For an HTTPS URL curl sends
# "CONNECT host:port", reads the proxy's "200 Connection established" (a
# byte at a time) and starts TLS inside the tunnel.  The preload took the
# CONNECT for a request and, the connection's first bytes not being a
# ClientHello, followed the TLS inside it byte by byte: each handshake
# flight was a request of its own, and the close_notify a truncated one.
# Ten curl runs through a local proxy at floor=max=10 reached the server at
# 2.5/s, with 30 samples of 0.3 to 0.9 ms (the proxy's and the handshake's
# round trips) and 10 truncated requests; through a SOCKS 5 proxy, whose
# handshake is two exchanges, 2.0/s with 40 samples.  Now the proxy's
# handshake takes the connection's grant and gives no sample, and the
# ClientHello that follows it restarts the TLS walker: the server must see
# about 10/s (10.1 measured; 7 to 10.5 allowed), and the rule count 10
# samples at the server's 50 ms (45 ms or more) and nothing truncated.  The
# same through one kept-alive curl, ten URLs on one tunnel, and through
# SOCKS 5.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need curl
need openssl
need python3

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-keyout "$tmp/key.pem" -out "$tmp/cert.pem" -days 1 -subj /CN=127.0.0.1 \
	-addext subjectAltName=IP:127.0.0.1 >"$tmp/openssl.log" 2>&1 ||
	fail "openssl: $(cat "$tmp/openssl.log")"
cat >"$tmp/server.py" <<'PY'
import http.server, ssl, sys, time
from httpd import Quiet, serve
tmp = sys.argv[1]
log = open(tmp + "/https.arrivals", "a", buffering=1)
class Handler(Quiet):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        log.write("%.6f\n" % time.monotonic())
        time.sleep(0.05)
        self.ok()
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(tmp + "/cert.pem", tmp + "/key.pem")
serve(Handler, tmp + "/https.port", ssl_context=context)
PY
# A forwarding proxy that speaks HTTP CONNECT and SOCKS 5 (no
# authentication, an IPv4 address): it answers once it has connected to
# the address asked for, then relays bytes both ways.
cat >"$tmp/proxy.py" <<'PY'
import os, socket, struct, sys, threading
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(64)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write("%d\n" % listener.getsockname()[1])
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
threading.Timer(60, lambda: os._exit(0)).start()
def relay(a, b):
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
        b.shutdown(socket.SHUT_WR)
    except OSError:
        pass
def exactly(sock, n):
    data = b""
    while len(data) < n:
        more = sock.recv(n - len(data))
        if not more:
            raise OSError("closed")
        data += more
    return data
def handle(client):
    head = exactly(client, 1)
    if head == b"\x05":
        exactly(client, exactly(client, 1)[0])
        client.sendall(b"\x05\x00")
        request = exactly(client, 10)
        address = (socket.inet_ntoa(request[4:8]),
                   struct.unpack("!H", request[8:10])[0])
        answer = b"\x05\x00\x00\x01" + request[4:10]
    else:
        while b"\r\n\r\n" not in head:
            data = client.recv(4096)
            if not data:
                return
            head += data
        host, port = head.split(b"\r\n")[0].split()[1].rsplit(b":", 1)
        address = (host.decode(), int(port))
        answer = b"HTTP/1.1 200 Connection established\r\n\r\n"
    upstream = socket.create_connection(address)
    client.sendall(answer)
    back = threading.Thread(target=relay, args=(upstream, client))
    back.start()
    relay(client, upstream)
    back.join()
    client.close()
    upstream.close()
while True:
    client, _ = listener.accept()
    threading.Thread(target=handle, args=(client,), daemon=True).start()
PY
python3 "$tmp/server.py" "$tmp" </dev/null >"$tmp/server.log" 2>&1 &
started $!
python3 "$tmp/proxy.py" "$tmp/proxy.port" </dev/null >"$tmp/proxy.log" 2>&1 &
started $!
port=$(await_port "$tmp/https.port" "$tmp/server.log")
proxy=$(await_port "$tmp/proxy.port" "$tmp/proxy.log")

export AGILE_DEST_PROXY="127.0.0.1:$proxy max=10 floor=10 initial=10 tick=200ms"
for mode in connection-each kept-alive socks5; do
	rm -f "$AGILE_STATE"
	: >"$tmp/https.arrivals"
	if [ "$mode" != kept-alive ]; then
		via="-x http://127.0.0.1:$proxy"
		[ "$mode" = socks5 ] && via="--socks5 127.0.0.1:$proxy"
		for i in $(seq 10); do
			# shellcheck disable=SC2086
			preloaded curl -sf --cacert "$tmp/cert.pem" $via \
				-o /dev/null "https://127.0.0.1:$port/$i" ||
				fail "curl failed"
		done
	else
		set --
		for i in $(seq 10); do
			set -- "$@" -o /dev/null "https://127.0.0.1:$port/$i"
		done
		preloaded curl -sf --cacert "$tmp/cert.pem" \
			-x "http://127.0.0.1:$proxy" "$@" || fail "curl failed"
	fi
	rate=$(arrival_rate "$tmp/https.arrivals")
	samples=$(stat_json proxy 'd["samples_total"]')
	truncated=$(stat_json proxy 'd["truncated"]')
	p50=$(history_p50 proxy)
	note "$mode: server saw $rate/s; $samples samples, $truncated truncated, p50 $p50 ms"
	check "7 <= v[0] <= 10 * 1.05" "$mode: one grant per request" "$rate"
	check "v[0] == 10" "$mode: one sample per request" "$samples"
	check "v[0] == 0" "$mode: nothing truncated" "$truncated"
	check "v[0] >= 45" "$mode: the samples time the server's answer" "$p50"
done
