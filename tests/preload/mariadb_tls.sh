#!/bin/sh
# mariadb_tls.sh - MySQL's SSL request: the TLS after it is followed as TLS.
#
# A MySQL client that uses TLS reads the server's greeting, sends a short
# SSL request that the server does not answer, and then its ClientHello:
# the connection's first bytes are the server's, not a ClientHello, and the
# TLS walker counted the TLS byte by byte (preload/track/track.c, start_tls).
# Three sessions of the mariadb client (three statements each) against a
# mariadbd with a fresh certificate, at floor=max=20/s, with --ssl and with
# --skip-ssl: the TLS sessions must count exactly the samples and grants of
# the plain ones (12 samples and 15 grants here: a login and three
# statements a session, and COM_QUIT, a goodbye the client sends without
# waiting for an answer, which is a truncated request without proto=).
# Before, the TLS sessions gave 15 samples and took 18 grants.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need openssl
need mariadb
need mariadbd
need mariadb-install-db

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-keyout "$tmp/key.pem" -out "$tmp/cert.pem" -days 1 -subj /CN=localhost \
	>"$tmp/openssl.log" 2>&1 || fail "openssl: $(cat "$tmp/openssl.log")"
# mariadbd runs as the user it is started by; as root it must be told so.
user=$(id -un)
mariadb-install-db --no-defaults --datadir="$tmp/db" --user="$user" \
	--auth-root-authentication-method=normal --skip-test-db \
	>"$tmp/install.log" 2>&1 ||
	fail "mariadb-install-db: $(tail -n 5 "$tmp/install.log")"
port=$(closed_port)
mariadbd --no-defaults --datadir="$tmp/db" --user="$user" --port="$port" \
	--bind-address=127.0.0.1 --socket="$tmp/mysql.sock" --skip-log-bin \
	--innodb-buffer-pool-size=16M --ssl-cert="$tmp/cert.pem" \
	--ssl-key="$tmp/key.pem" >"$tmp/mariadbd.log" 2>&1 </dev/null &
started $!
i=0
until mariadb -h 127.0.0.1 -P "$port" -u root --skip-ssl -e 'select 1' \
	>/dev/null 2>&1; do
	i=$((i + 1))
	[ "$i" -le 200 ] || fail "mariadbd did not start: $(tail -n 5 "$tmp/mariadbd.log")"
	sleep 0.1
done
export AGILE_DEST_DB="127.0.0.1:$port max=20 floor=20 initial=20"

# sessions MODE: three sessions with --ssl or --skip-ssl, from a fresh
# state file; prints "SAMPLES GRANTS TRUNCATED CONNECTS".
sessions() {
	rm -f "$AGILE_STATE"
	for i in 1 2 3; do
		preloaded mariadb -h 127.0.0.1 -P "$port" -u root "$1" -N \
			-e "select 1; show status like 'Ssl_version'; select 3" \
			>"$tmp/out" 2>&1 || fail "mariadb $1: $(cat "$tmp/out")"
	done
	stat_json db '"%d %d %d %d" % (d["samples_total"], d["grants_total"], d["truncated"], d["connects"])'
}

plain=$(sessions --skip-ssl)
grep -q 'TLSv' "$tmp/out" && fail "--skip-ssl used TLS: $(cat "$tmp/out")"
tls=$(sessions --ssl)
grep -q 'TLSv1' "$tmp/out" || fail "--ssl did not use TLS: $(cat "$tmp/out")"
note "samples, grants, truncated, connects of three sessions: plain $plain, TLS $tls"
set -- $plain $tls
check "v[0] == v[1]" "TLS gives the samples of the plain sessions" "$1" "$5"
check "v[0] == v[1]" "TLS takes the grants of the plain sessions" "$2" "$6"
check "v[0] == v[1]" "TLS truncates what the plain sessions do" "$3" "$7"
check "v[0] == 3 and v[1] == 3" "three connections each" "$4" "$8"
