#!/bin/sh
# tls.sh - over TLS the handshake is a request like any other.
#
# The preload sees TLS records, not HTTP: the ClientHello is the first
# request of a connection (it uses the connect's grant, and its answer, the
# server's first flight, is the first sample), the client's second flight
# carries the first HTTP request, and curl's close_notify alert before it
# closes is one more request, with no answer (truncated).  Against a local
# HTTPS server at floor=max=10/s: curl fetching ten URLs over one kept-alive
# connection must give eleven samples and reach the server at 10/s; six curl
# processes, one request each, must give two samples per connection and
# stay under the ceiling, and the rate the server sees is printed: each
# connection takes three grants (about 3.3 requests/s here, which README.md
# quotes), so a client that opens a TLS connection per request gets a third
# of the configured rate in requests.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need curl
need openssl
need python3

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-keyout "$tmp/key.pem" -out "$tmp/cert.pem" -days 1 -subj /CN=localhost \
	>"$tmp/openssl.log" 2>&1 || fail "openssl: $(cat "$tmp/openssl.log")"
cat >"$tmp/server.py" <<'PY'
import http.server, os, socketserver, ssl, sys, threading, time
tmp = sys.argv[1]
log = open(tmp + "/tls.arrivals", "a")
lock = threading.Lock()
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        with lock:
            log.write("%.6f\n" % time.monotonic())
            log.flush()
        self.send_response(200)
        self.send_header("Content-Length", "3")
        self.end_headers()
        self.wfile.write(b"ok\n")
    def log_message(self, *args):
        pass
class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
server = Server(("127.0.0.1", 0), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(tmp + "/cert.pem", tmp + "/key.pem")
server.socket = context.wrap_socket(server.socket, server_side=True)
threading.Timer(120, lambda: os._exit(0)).start()
with open(tmp + "/port.tmp", "w") as f:
    f.write("%d\n" % server.server_address[1])
os.rename(tmp + "/port.tmp", tmp + "/port")
server.serve_forever()
PY
python3 "$tmp/server.py" "$tmp" >"$tmp/server.log" 2>&1 &
started $!
i=0
while [ ! -s "$tmp/port" ]; do
	i=$((i + 1))
	[ "$i" -le 200 ] || fail "the TLS server did not start: $(cat "$tmp/server.log")"
	sleep 0.05
done
port=$(cat "$tmp/port")
export AGILE_DEST_TLS="127.0.0.1:$port max=10 floor=10 initial=10"
url="https://127.0.0.1:$port"

urls=""
for i in $(seq 10); do urls="$urls $url/$i"; done
# shellcheck disable=SC2086
preloaded curl -skf $urls >/dev/null || fail "curl failed"
samples=$(stat_json tls 'd["samples_total"]')
rate=$(arrival_rate "$tmp/tls.arrivals")
note "one kept-alive TLS connection, 10 requests: $samples samples, server saw $rate/s"
check "v[0] == 11" "the handshake and each request are samples" "$samples"
check "10 * 0.85 <= v[0] <= 10 * 1.15" "kept-alive requests get the configured rate" "$rate"

rm -f "$AGILE_STATE"
: >"$tmp/tls.arrivals"
for i in 1 2 3 4 5 6; do
	preloaded curl -skf -o /dev/null "$url/new/$i" || fail "curl failed"
done
samples=$(stat_json tls 'd["samples_total"]')
connects=$(stat_json tls 'd["connects"]')
rate=$(arrival_rate "$tmp/tls.arrivals")
note "six TLS connections, one request each: $samples samples, $connects connects, server saw $rate/s at max=10"
check "v[0] == 6" "every connection is paced" "$connects"
check "v[0] == 12" "handshake and request are a sample each" "$samples"
check "v[0] <= 10 * 1.15" "no more than the ceiling" "$rate"
