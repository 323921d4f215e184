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
# startup and the query of each).  (The Terminate, inside TLS, is still a
# request closed unanswered: README, "What it cannot throttle".)  With
# sslmode=disable nothing changes: 6 samples.
# PostgreSQL refuses to run as root, so as root the server runs as nobody.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need openssl
# PostgreSQL, from Debian's package (its programs are not on PATH) or any.
for dir in /usr/lib/postgresql/*/bin; do
	[ -x "$dir/initdb" ] && PATH=$PATH:$dir
done
need initdb
need postgres
need psql
as_server=""
if [ "$(id -u)" -eq 0 ]; then
	need setpriv
	as_server="setpriv --reuid=nobody --regid=nogroup --clear-groups"
	chmod 755 "$tmp"
fi
mkdir -m 755 "$tmp/pg"
[ -z "$as_server" ] || chown nobody:nogroup "$tmp/pg"
$as_server initdb -D "$tmp/pg/data" -U postgres -A trust --no-sync \
	>"$tmp/initdb.log" 2>&1 || fail "initdb failed: $(tail -n 5 "$tmp/initdb.log")"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-keyout "$tmp/pg/data/server.key" -out "$tmp/pg/data/server.crt" \
	-days 1 -subj /CN=127.0.0.1 >"$tmp/openssl.log" 2>&1 ||
	fail "openssl: $(cat "$tmp/openssl.log")"
chmod 600 "$tmp/pg/data/server.key"
[ -z "$as_server" ] || chown nobody:nogroup "$tmp/pg/data/server.key" \
	"$tmp/pg/data/server.crt"
pgport=$(closed_port)
$as_server postgres -D "$tmp/pg/data" -p "$pgport" -k "$tmp/pg" \
	-c listen_addresses=127.0.0.1 -c fsync=off -c ssl=on \
	>"$tmp/postgres.log" 2>&1 </dev/null &
started $!
i=0
until psql -h 127.0.0.1 -p "$pgport" -U postgres -Atc 'select 1' postgres >/dev/null 2>&1; do
	i=$((i + 1))
	[ "$i" -le 200 ] || fail "postgres did not start: $(tail -n 5 "$tmp/postgres.log")"
	sleep 0.05
done

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
done
