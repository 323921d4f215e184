#!/bin/sh
# goodbye_mysql_memcached.sh - proto=mysql's COM_QUIT and proto=memcached's quit are
# no requests.
#
# MariaDB: the mariadb client and mysqlslap end every connection with a
# COM_QUIT (five bytes) sent alone, which the server does not answer: it
# closes.  Without proto=mysql each waited for a grant and was recorded as
# truncated at the close (a failure for breaker=sre): three `mariadb -e
# 'select 1'` sessions left 3 truncated requests, mysqlslap with four
# clients 5 (one more for its own set-up connection; with 8 clients and 200
# queries at max=50, 9 truncated and 218 grants for its 209 requests, 4.36
# s).  With proto=mysql none is truncated, and the samples are the same:
# each session's log-in and each query (the server's greeting, which comes
# first, is none).
#
# memcached: memcslap (libmemcached) ends its four clients' connections
# with the text protocol's "quit\r\n", and with --binary with a binary
# QUITQ; neither is answered.  Without proto=memcached 4 truncated each
# time, with it none, and the same samples.
#
# The servers run on free loopback ports with their data in the test's
# directory; as root mariadbd and memcached are told to stay root.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
PATH=$PATH:/usr/sbin
need mariadbd
need mariadb-install-db
need mariadb
need mysqlslap
need memcached
need memcslap

as_root=""
[ "$(id -u)" -ne 0 ] || as_root="--user=root"
mariadb-install-db --no-defaults --datadir="$tmp/my" $as_root \
	--auth-root-authentication-method=normal >"$tmp/install.log" 2>&1 ||
	fail "mariadb-install-db failed: $(tail -n 5 "$tmp/install.log")"
myport=$(closed_port)
mariadbd --no-defaults --datadir="$tmp/my" $as_root --port="$myport" \
	--bind-address=127.0.0.1 --socket="$tmp/my.sock" --skip-log-bin \
	--pid-file="$tmp/my.pid" --log-error="$tmp/mariadb.log" \
	</dev/null >/dev/null 2>&1 &
started $!
i=0
until mariadb --no-defaults -h 127.0.0.1 -P "$myport" -u root \
	-e 'select 1' >/dev/null 2>&1; do
	i=$((i + 1))
	[ "$i" -le 400 ] ||
		fail "mariadbd did not start: $(tail -n 5 "$tmp/mariadb.log")"
	sleep 0.05
done

sessions() {
	for _ in 1 2 3; do
		[ "$(preloaded mariadb --no-defaults -h 127.0.0.1 -P "$myport" \
			-u root -N -e 'select 1')" = 1 ] || fail "mariadb failed"
	done
}
slap() {
	preloaded mysqlslap --no-defaults -h 127.0.0.1 -P "$myport" -u root \
		--concurrency=4 --iterations=1 --number-of-queries=40 \
		--query='select 1' --create-schema=mysql >"$tmp/slap.out" 2>&1 ||
		fail "mysqlslap failed: $(cat "$tmp/slap.out")"
}
for proto in none mysql; do
	rm -f "$AGILE_STATE"
	export AGILE_DEST_DB="127.0.0.1:$myport max=50 pace=request proto=$proto"
	sessions
	truncated=$(stat_json db 'd["truncated"]')
	samples=$(stat_json db 'd["samples_total"]')
	note "proto=$proto: three mariadb sessions, $samples samples, $truncated truncated"
	check "v[0] == 6" "proto=$proto: a log-in and a query a session" "$samples"
	if [ "$proto" = none ]; then
		check "v[0] == 3" "without proto=mysql each COM_QUIT is truncated" "$truncated"
	else
		check "v[0] == 0" "with proto=mysql no COM_QUIT is truncated" "$truncated"
	fi
	rm -f "$AGILE_STATE"
	slap
	truncated=$(stat_json db 'd["truncated"]')
	samples=$(stat_json db 'd["samples_total"]')
	note "proto=$proto: mysqlslap, 4 clients, 40 queries: $samples samples, $truncated truncated"
	check "v[0] >= 45" "proto=$proto: mysqlslap's log-ins and queries are samples" "$samples"
	if [ "$proto" = none ]; then
		check "v[0] >= 4" "without proto=mysql each COM_QUIT is truncated" "$truncated"
	else
		check "v[0] == 0" "with proto=mysql no COM_QUIT is truncated" "$truncated"
	fi
done
unset AGILE_DEST_DB

mcport=$(closed_port)
as_root=""
[ "$(id -u)" -ne 0 ] || as_root="-u root"
memcached $as_root -l 127.0.0.1 -p "$mcport" -U 0 </dev/null \
	>"$tmp/memcached.log" 2>&1 &
started $!
i=0
until memcping --servers="127.0.0.1:$mcport" >/dev/null 2>&1; do
	i=$((i + 1))
	[ "$i" -le 200 ] || fail "memcached did not start: $(cat "$tmp/memcached.log")"
	sleep 0.05
done
for proto in none memcached; do
	for binary in "" --binary; do
		what="proto=$proto${binary:+ $binary}"
		rm -f "$AGILE_STATE"
		export AGILE_DEST_MC="127.0.0.1:$mcport max=100 pace=request proto=$proto"
		preloaded memcslap $binary --servers="127.0.0.1:$mcport" \
			--concurrency=4 --execute-number=10 --test=get \
			>"$tmp/memcslap.out" 2>&1 ||
			fail "memcslap $binary failed: $(cat "$tmp/memcslap.out")"
		truncated=$(stat_json mc 'd["truncated"]')
		samples=$(stat_json mc 'd["samples_total"]')
		note "$what: memcslap, 4 clients: $samples samples, $truncated truncated"
		check "v[0] >= 40" "$what: the gets are samples" "$samples"
		if [ "$proto" = none ]; then
			check "v[0] >= 4" "without proto=memcached each quit is truncated" "$truncated"
		else
			check "v[0] == 0" "with proto=memcached no quit is truncated" "$truncated"
		fi
	done
done
