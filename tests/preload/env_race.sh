#!/bin/sh
# env_race.sh [RUNS] - the environment changed by other threads during the
# first connect neither crashes the program nor changes its configuration
# (issue 16, item 2).
#
# env_race_client runs RUNS times (default 200), each a new process whose
# first connects race four threads' setenv, unsetenv and clearenv of
# AGILE_DEST_ variables (see the client).  On main some runs died with
# SIGSEGV; now every run must exit 0, and all its four connections count
# for the destination the process started with.  tests/fault/tsan_threads.sh
# runs it too, under ThreadSanitizer.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
client=$builddir/tests/preload/env_race_client
[ -x "$client" ] || fail "$client not built"
runs=${1:-200}

port=$(closed_port)
export AGILE_DEST_RACE="127.0.0.1:$port max=100000 floor=100000 initial=100000"
crashed=0
i=0
while [ "$i" -lt "$runs" ]; do
	i=$((i + 1))
	status=0
	preloaded "$client" "$port" 2>>"$tmp/client.err" || status=$?
	if [ "$status" -ne 0 ]; then
		crashed=$((crashed + 1))
		echo "run $i: exit status $status" >>"$tmp/client.err"
	fi
done
[ "$crashed" -eq 0 ] ||
	fail "$crashed of $runs runs failed: $(grep "exit status" "$tmp/client.err" | sort | uniq -c | head -n 3)"
connects=$(stat_json race 'd["connects"]')
check "v[0] == 4 * $runs" "every connect counted for the destination the processes started with" "$connects"
note "$runs runs of 4 threads changing the environment while 4 connect: none failed, $connects connects"
