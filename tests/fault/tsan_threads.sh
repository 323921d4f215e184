#!/bin/sh
# tsan_threads.sh BUILD - ThreadSanitizer over the preload's threaded paths.
#
# Run by scripts/test.sh --sanitize against build-tsan/ (everything built
# with -fsanitize=thread), never by make check.  fault_client, instrumented,
# loads the instrumented preload and sends 64 threads' requests through it
# at once, blocking and then with non-blocking connects: the fd table, the
# grants taken and claimed by atomic exchange, the shared slot's limiter,
# the tick, the attach lock; then env_race.sh, 200 processes whose first
# connects race setenv and clearenv.  TSAN_OPTIONS comes from the caller (every
# report is fatal and logged).  Every request must succeed and be a sample.
AGILE_BUILDDIR=$(cd "$1" && pwd)
AGILE_SRCDIR=${AGILE_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
export AGILE_BUILDDIR AGILE_SRCDIR
. "$AGILE_SRCDIR/tests/preload/lib.sh"
need python3
client=$builddir/tests/fault/fault_client
[ -x "$client" ] || fail "$client not built"

port=$(start_httpd api)
export AGILE_DEST_API="127.0.0.1:$port max=2000 floor=2000 initial=2000"
out=$(preloaded "$client" -t 64 -n 5 "$port") || fail "blocking: $out"
note "blocking: $out"
out=$(preloaded "$client" -b -t 64 -n 5 "$port") || fail "non-blocking: $out"
note "non-blocking: $out"
check "v[0] == 640" "every request is a sample" "$(stat_json api 'd["samples_total"]')"

# The environment changed by four threads while four make the first
# connects, in 200 processes (tests/preload/env_race.sh).
sh "$AGILE_SRCDIR/tests/preload/env_race.sh" 200 ||
	fail "the environment race under ThreadSanitizer"
