#!/bin/sh
# fleet_hostile.sh - the preload's Redis connection survives the program.
#
# tests/fleet/fleet_hostile.c closes every descriptor behind the preload's
# back, dup2()s a file onto the number of its Redis connection, and forks,
# between rounds of calls to a destination with fleet_max=50 (so every
# few calls need a lease, and a round trip).  Every call must succeed, the
# program's own descriptor must be left alone, and the host must never
# have fallen back: each time, the preload noticed its connection was gone
# (fstat) or was not its own any more, or that it was in a new process,
# and made a new one.  Redis must have seen a new connection for each.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/fleet/lib.sh"

hostile=$builddir/tests/fleet/fleet_hostile
[ -x "$hostile" ] || fail "$hostile not built"
start_redis
port=$(start_httpd api)
export AGILE_REDIS="redis://127.0.0.1:$redis_port/0"
export AGILE_DEST_API="127.0.0.1:$port max=100 floor=100 initial=100 fleet_max=50 redis_timeout=500ms"

host 1 "$hostile" "$port" 20 || fail "fleet_hostile failed"
connections=$(redis-cli -p "$redis_port" info stats | sed -n 's/^total_connections_received:\([0-9]*\).*/\1/p')
note "$(host_json 1 api 'f["admitted"]') calls, $(host_json 1 api 'f["round_trips"]') round trips, Redis saw $connections connections"
check "v[0] == 0" "the host never fell back" "$(host_json 1 api 'f["fallbacks"]')"
check "v[0] == 100" "every call was admitted from a lease" "$(host_json 1 api 'f["admitted"] - f["fallback_admitted"]')"
# One connection per round after the first, the child's, and
# redis-cli's own.
check "v[0] >= 4 + 1" "a new connection each time the old one was lost" "$connections"
