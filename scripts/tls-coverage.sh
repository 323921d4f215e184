#!/bin/sh
# tls-coverage.sh - which installed HTTPS clients hand the preload their
# plaintext (preload/hooks/tls_plain.h) and which keep the record-level
# following (src/common/tls.h): README's "HTTPS" list comes from here.
#
# Each client makes one HTTPS GET to a local Python server (a certificate
# made here) under AGILE_LOG=debug with a matched destination; the preload
# logs "the TLS library hands over the plaintext" at a connection's first
# plaintext.  Prints one line a client: its name, "plaintext",
# "record-level" or "not installed".
#
# Usage: scripts/tls-coverage.sh [BUILDDIR]   (default: ./build)
set -eu
build=${1:-build}
preload=$(cd "$build" && pwd)/preload/.libs/libagilepreload.so
[ -f "$preload" ] || { echo "tls-coverage.sh: no $preload" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'kill $server 2>/dev/null; rm -rf "$tmp"' EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-keyout "$tmp/key.pem" -out "$tmp/cert.pem" -days 1 -subj /CN=localhost \
	>/dev/null 2>&1
cat >"$tmp/server.py" <<'PY'
import http.server, os, ssl, sys, threading
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "3")
        self.end_headers()
        self.wfile.write(b"ok\n")
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
c.load_cert_chain(sys.argv[1] + "/cert.pem", sys.argv[1] + "/key.pem")
s.socket = c.wrap_socket(s.socket, server_side=True)
open(sys.argv[1] + "/port", "w").write(str(s.server_address[1]))
threading.Timer(120, lambda: os._exit(0)).start()
s.serve_forever()
PY
python3 "$tmp/server.py" "$tmp" </dev/null >/dev/null 2>&1 &
server=$!
i=0
while [ ! -s "$tmp/port" ] && [ "$i" -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
port=$(cat "$tmp/port")
url="https://127.0.0.1:$port/info/refs"

# try NAME PROGRAM COMMAND...: run COMMAND under the preload, say what it got.
try() {
	name=$1 program=$2
	shift 2
	if ! command -v "$program" >/dev/null 2>&1; then
		echo "$name: not installed"
		return
	fi
	AGILE_STATE="$tmp/state" AGILE_LOG=debug \
		AGILE_DEST_WEB="127.0.0.1:$port max=100" LD_PRELOAD="$preload" \
		timeout 20 "$@" >/dev/null 2>"$tmp/log" || true
	if grep -q 'hands over the plaintext' "$tmp/log"; then
		echo "$name: plaintext"
	elif grep -q "connect to web" "$tmp/log"; then
		echo "$name: record-level"
	else
		echo "$name: no connection seen"
	fi
}

try "curl ($(curl --version | head -1 | cut -d' ' -f1-2), OpenSSL)" curl curl -sk --http1.1 "$url"
try "curl --http2" curl curl -sk --http2 "$url"
try "wget (GnuTLS)" wget wget -q --no-check-certificate -O /dev/null "$url"
try "git (libcurl-gnutls)" git env GIT_SSL_NO_VERIFY=1 git ls-remote "https://127.0.0.1:$port/"
try "Python http.client ($(python3 -V))" python3 python3 -c "
import http.client, ssl
c = http.client.HTTPSConnection('127.0.0.1', $port, context=ssl._create_unverified_context())
c.request('GET', '/'); c.getresponse().read()"
try "Python requests" python3 python3 -c "
import requests, urllib3
urllib3.disable_warnings()
requests.get('$url', verify=False)"
try "Debian's /usr/bin/python3" /usr/bin/python3 /usr/bin/python3 -c "
import http.client, ssl
c = http.client.HTTPSConnection('127.0.0.1', $port, context=ssl._create_unverified_context())
c.request('GET', '/'); c.getresponse().read()"
# shellcheck disable=SC2016
try "PHP file_get_contents" php php -r 'file_get_contents("'"$url"'", false, stream_context_create(["ssl" => ["verify_peer" => false, "verify_peer_name" => false]]));'
# shellcheck disable=SC2016
try "Perl IO::Socket::SSL" perl perl -MIO::Socket::SSL -e '
my $s = IO::Socket::SSL->new(PeerAddr => "127.0.0.1:'"$port"'", SSL_verify_mode => 0) or die;
print $s "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"; my $r = <$s>;'
try "openssl s_client" openssl sh -c 'printf "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" | openssl s_client -quiet -connect 127.0.0.1:'"$port"
try "Node.js ($(node --version 2>/dev/null))" node node -e '
require("https").get({host: "127.0.0.1", port: '"$port"', rejectUnauthorized: false}, r => r.resume());'
