#!/bin/sh
# tls_plain_http2.sh - the ceiling holds per stream on one HTTP/2 connection
# over TLS, as over cleartext (http2_pacing.sh).
#
# h2load -m 10 against nghttpd with a certificate made here: h2load's
# OpenSSL hands the preload the plaintext of its SSL_write calls
# (preload/hooks/openssl.c), which the HTTP/2 walker reads as it reads a
# cleartext connection's sends (h2conn.h): each new stream takes a grant,
# and a write carrying the HEADERS of several is cut at the second one's
# frame, SSL_write returning the short count (nghttp2 keeps the rest for
# its next write).  At floor=max=20, 60 requests: all succeed, at most 21
# reach the server in any second of its clock, the median gap is at least
# half the 50 ms interval, and 60 grants are taken.  curl --http2
# --parallel (ten streams at a time on its one connection) likewise.
# What does not hold over TLS: while a program waits in its write for the
# next stream's grant, the wait cannot peek at the answers that arrive
# meanwhile (they are ciphertext), so a stream's round trip includes the
# program's own stall (p50 50 ms against nghttpd's instant answers here,
# both clients).  Before, over TLS the
# preload saw records, and the 60 requests went through in well under a
# second.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need nghttpd
need h2load
need openssl

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-keyout "$tmp/key.pem" -out "$tmp/cert.pem" -days 1 -subj /CN=localhost \
	>"$tmp/openssl.log" 2>&1 || fail "openssl: $(cat "$tmp/openssl.log")"
mkdir "$tmp/www"
echo ok >"$tmp/www/index.html"
port=$(closed_port)
nghttpd -v --address=127.0.0.1 -d "$tmp/www" "$port" "$tmp/key.pem" "$tmp/cert.pem" \
	>"$tmp/nghttpd.log" 2>&1 </dev/null &
started $!
i=0
until h2load -n 1 "https://127.0.0.1:$port/index.html" 2>/dev/null |
	grep -q '1 succeeded'; do
	i=$((i + 1))
	[ "$i" -le 100 ] || fail "nghttpd did not start: $(cat "$tmp/nghttpd.log")"
	sleep 0.05
done
export AGILE_DEST_H2="127.0.0.1:$port max=20 floor=20 initial=20"

: >"$tmp/nghttpd.log"
preloaded h2load -n 60 -c 1 -m 10 "https://127.0.0.1:$port/index.html" \
	>"$tmp/h2load.out" 2>&1 || fail "h2load failed: $(cat "$tmp/h2load.out")"
grep -q '60 succeeded' "$tmp/h2load.out" || fail "h2load: $(cat "$tmp/h2load.out")"
grep -q 'TLS Protocol' "$tmp/h2load.out" || fail "h2load did not use TLS: $(cat "$tmp/h2load.out")"

nghttpd_arrivals "$tmp/nghttpd.log" "$tmp/arrivals"
check_paced "$tmp/arrivals" 60 "60 requests on one TLS connection"
check "v[0] == 60" "one grant per stream" \
	"$(stat_json h2 'd["grants_total"]')"
check "v[0] == 60" "one sample per stream" \
	"$(stat_json h2 'd["samples_total"]')"

if have curl; then
	: >"$tmp/nghttpd.log"
	rm -f "$AGILE_STATE"
	urls=""
	for i in $(seq 60); do
		urls="$urls https://127.0.0.1:$port/index.html"
	done
	# shellcheck disable=SC2086
	preloaded curl --http2 --parallel --parallel-max 10 -sk $urls \
		>"$tmp/curl.out" 2>&1 || fail "curl failed: $(tail -3 "$tmp/curl.out")"
	nghttpd_arrivals "$tmp/nghttpd.log" "$tmp/arrivals"
	note "curl --http2 --parallel: $(stat_json h2 'd["connects"]') connections"
	check_paced "$tmp/arrivals" 60 "curl --http2 --parallel"
	check "v[0] == 60" "curl: one sample per stream" \
		"$(stat_json h2 'd["samples_total"]')"
else
	note "curl not installed (or under ASan): its arm skipped"
fi
