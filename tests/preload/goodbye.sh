#!/bin/sh
# goodbye.sh - proto=redis's QUIT and proto=postgres's Terminate are no
# requests.
#
# redis: a Python client on one connection sends PING, PING and QUIT and
# closes without reading QUIT's +OK (as clients that send QUIT from their
# close() do), at max=floor=1/s with pace=request.  Each PING waits for a
# grant; the QUIT used to as well (a second) and, closed unanswered, was
# recorded as truncated.  With proto=redis it must go out at once (under
# 0.5 s allowed; milliseconds measured), and the destination count two
# samples and nothing truncated.  The same client without proto=redis
# still sees the old behaviour, which shows the test reaches the case.
# redis-cli's one-shot QUIT must also answer and count nothing.
#
# postgres: psql -c 'select 1', three times.  libpq sends Terminate alone
# as the session ends, and the server closes without answering: without
# proto=postgres each run left one truncated request (three), with it none.
# PostgreSQL refuses to run as root, so as root the server runs as nobody.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3
need redis-server
need redis-cli

start_redis
port=$redis_port

cat >"$tmp/quit.py" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
for _ in range(2):
    s.sendall(b"*1\r\n$4\r\nPING\r\n")
    assert s.recv(64) == b"+PONG\r\n"
start = time.monotonic()
s.sendall(b"*1\r\n$4\r\nQUIT\r\n")
print("%.3f" % (time.monotonic() - start))
s.close()
PY

export AGILE_DEST_REDIS="127.0.0.1:$port max=1 floor=1 initial=1 pace=request proto=redis"
quit=$(preloaded python3 "$tmp/quit.py" "$port") || fail "the redis client failed"
note "proto=redis: QUIT went out in $quit s"
check "v[0] < 0.5" "QUIT waits for no grant" "$quit"
check "v[0] == 2" "the PINGs are the samples" "$(stat_json redis 'd["samples_total"]')"
check "v[0] == 0" "QUIT closed unanswered is not truncated" "$(stat_json redis 'd["truncated"]')"
preloaded redis-cli -p "$port" QUIT >"$tmp/cli.out" || fail "redis-cli QUIT failed"
[ "$(cat "$tmp/cli.out")" = OK ] || fail "redis-cli QUIT printed $(cat "$tmp/cli.out")"
check "v[0] == 2" "redis-cli's QUIT and its +OK are no sample" "$(stat_json redis 'd["samples_total"]')"
check "v[0] == 0" "nor truncated" "$(stat_json redis 'd["truncated"]')"

rm -f "$AGILE_STATE"
export AGILE_DEST_REDIS="127.0.0.1:$port max=1 floor=1 initial=1 pace=request"
quit=$(preloaded python3 "$tmp/quit.py" "$port") || fail "the redis client failed"
note "without proto=redis: QUIT went out in $quit s"
check "v[0] >= 0.5" "without proto=redis QUIT is a request and waits" "$quit"
check "v[0] == 1" "and is truncated at the close" "$(stat_json redis 'd["truncated"]')"
unset AGILE_DEST_REDIS

init_postgres
start_postgres

sessions() {
	for _ in 1 2 3; do
		[ "$(preloaded psql -h 127.0.0.1 -p "$pgport" -U postgres -Atc 'select 1' postgres)" = 1 ] ||
			fail "psql failed"
	done
}
rm -f "$AGILE_STATE"
export AGILE_DEST_PG="127.0.0.1:$pgport max=50 pace=request"
sessions
truncated=$(stat_json pg 'd["truncated"]')
note "without proto=postgres: $truncated truncated in three psql sessions"
check "v[0] == 3" "without proto=postgres each Terminate is truncated" "$truncated"
rm -f "$AGILE_STATE"
export AGILE_DEST_PG="127.0.0.1:$pgport max=50 pace=request proto=postgres"
sessions
truncated=$(stat_json pg 'd["truncated"]')
note "proto=postgres: $truncated truncated, $(stat_json pg 'd["samples_total"]') samples in three psql sessions"
check "v[0] == 0" "with proto=postgres no Terminate is truncated" "$truncated"
