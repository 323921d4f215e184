#!/bin/sh
# postgres_tls.sh - psql over TLS: its SSLRequest is setting up, and the TLS
# after it is followed as TLS.
#
# libpq asks the server whether it speaks TLS (an 8-byte SSLRequest,
# answered with one byte) before anything else whenever it may use TLS,
# which by default (sslmode=prefer) it does.  The connection's first bytes
# were not a ClientHello, so the preload counted the TLS that followed byte
# by byte: three `psql -c 'select 1'` sessions with sslmode=require at
# floor=max=10 gave 15 samples (each handshake flight a request) and took
# 1.73 s.  The SSLRequest now takes the connection's grant and gives no
# sample, and the ClientHello after it is followed as on a TLS connection:
# the three sessions must give the 6 samples they give without TLS (the
# startup and the query of each).  The Terminate, inside TLS, was a
# request closed unanswered (3 truncated); libpq's OpenSSL now hands the
# preload its plaintext (preload/hooks/openssl.c), where it is read as
# PostgreSQL's goodbye as over plain TCP: none truncated.  With
# sslmode=disable nothing changes: 6 samples, none truncated.
# PostgreSQL refuses to run as root, so as root the server runs as nobody.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need openssl
init_postgres
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-keyout "$tmp/pg/data/server.key" -out "$tmp/pg/data/server.crt" \
	-days 1 -subj /CN=127.0.0.1 >"$tmp/openssl.log" 2>&1 ||
	fail "openssl: $(cat "$tmp/openssl.log")"
chmod 600 "$tmp/pg/data/server.key"
[ -z "$as_server" ] || chown nobody:nogroup "$tmp/pg/data/server.key" \
	"$tmp/pg/data/server.crt"
start_postgres -c ssl=on

export AGILE_DEST_PG="127.0.0.1:$pgport max=10 floor=10 initial=10 proto=postgres"
for mode in require disable; do
	rm -f "$AGILE_STATE"
	for _ in 1 2 3; do
		[ "$(preloaded psql "host=127.0.0.1 port=$pgport user=postgres dbname=postgres sslmode=$mode" -Atc 'select 1')" = 1 ] ||
			fail "psql failed (sslmode=$mode)"
	done
	samples=$(stat_json pg 'd["samples_total"]')
	note "sslmode=$mode: $samples samples over $(stat_json pg 'd["connects"]') connections"
	check "v[0] == 6" "sslmode=$mode: a sample for the startup and the query of each session" "$samples"
	check "v[0] == 0" "sslmode=$mode: the Terminate is a goodbye, not truncated" \
		"$(stat_json pg 'd["truncated"]')"
done
