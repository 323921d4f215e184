#!/bin/sh
# listen_tls.sh - a listener with proto=http in front of an HTTPS server:
# the preload never answers inside a TLS session.
#
# A Python HTTPS server (its ssl module, OpenSSL) behind AGILE_LISTEN_
# proto=http max=1 (floor=initial=1) takes 50 ms per request; 4 clients
# send 3 requests each at once on kept-alive connections.  A TLS
# handshake's records are no HTTP/1 request and take no permit, and a
# request read through the TLS library beyond the limit is served, since
# a plaintext 503 written into the session would break it: all 12 get
# 200.  (Taking the ClientHello of the second connection for a request
# over the limit, the preload answered it in plaintext and the handshake
# failed.)
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3
need openssl

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-keyout "$tmp/key.pem" -out "$tmp/cert.pem" -days 1 -subj /CN=localhost \
	>"$tmp/openssl.log" 2>&1 || fail "openssl: $(cat "$tmp/openssl.log")"
cat >"$tmp/server.py" <<'PY'
import ssl, sys, time
from httpd import Quiet, serve
tmp = sys.argv[1]
class Handler(Quiet):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        time.sleep(0.05)
        self.ok()
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(tmp + "/cert.pem", tmp + "/key.pem")
serve(Handler, tmp + "/port", ssl_context=context)
PY
export AGILE_LISTEN_WEB="127.0.0.1:* max=1 floor=1 initial=1 proto=http"
LD_PRELOAD="$PRELOAD" python3 "$tmp/server.py" "$tmp" </dev/null >"$tmp/server.log" 2>&1 &
started $!
port=$(await_port "$tmp/port" "$tmp/server.log")
ok=$(python3 - "$port" <<'PY'
import http.client, ssl, sys, threading
port = int(sys.argv[1])
context = ssl._create_unverified_context()
statuses = []
def client():
    try:
        c = http.client.HTTPSConnection("127.0.0.1", port, timeout=10,
                                        context=context)
        for _ in range(3):
            c.request("GET", "/")
            r = c.getresponse()
            r.read()
            statuses.append(r.status)
    except Exception as e:
        statuses.append(repr(e))
threads = [threading.Thread(target=client) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(sum(1 for s in statuses if s == 200))
PY
)
check "v[0] == 12" "every HTTPS request is served, none broken by a plaintext answer" "$ok"
