#!/bin/sh
# fork_linger.sh - a server that forks while the preload sheds connections
# in another of its threads: the child must not inherit the lock of the
# lingering connections held.
#
# A connection shed with shed_response= lingers (preload/resilience/
# inbound_shed.c): answered, its write side shut, and drained and closed by a
# later accept under linger_lock, which is held across those recv() and
# close() calls.  That lock had no fork handler: a child forked by another
# thread at that moment inherited it held by a thread that does not exist
# there, and deadlocked at its next accept on a listener of the rule (the
# first thing it does there is close the lingering connections it
# inherited).  fork_linger_client.c keeps one connection open behind
# max=1 so that an acceptor thread sheds every other one, floods it with
# connections each carrying 64 KiB for the drain to read, and forks up to
# 400 children (for at most 20 s), each of which accepts once on a
# listener of its own and exits: every child must exit within 5 s.  Before
# the fix a child hung in each of three runs, after 6, 28 and 72 forks;
# after it, 400 forks take under 3 s.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
client=$builddir/tests/preload/fork_linger_client
[ -x "$client" ] || fail "$client not built"

export AGILE_LISTEN_WEB="127.0.0.1:* max=1 shed_response=503"
status=0
forks=$(preloaded "$client" 400 20) || status=$?
[ "$status" -ne 1 ] || fail "a child forked while connections were shed deadlocked (after $forks forks)"
[ "$status" -eq 0 ] || fail "fork_linger_client failed ($status)"
note "$forks children forked while connections were shed, each accepted and exited"
check "v[0] >= 50" "enough children forked to meet a held lock" "$forks"
check "v[0] >= 1000" "connections were shed meanwhile" \
	"$(stat_json web 'd["listener"]["shed"]')"
