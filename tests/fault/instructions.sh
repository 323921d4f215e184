#!/bin/sh
# instructions.sh - what the preload adds to each paced request stays small.
#
# Timing belongs in scripts/bench-overhead, but the instructions the
# preload itself runs are counted exactly by callgrind, whatever else the
# machine does.  redis-benchmark sends 2 x 5,000 PINGs on 4 kept-alive
# connections, once without the preload and once through a matched
# destination (pace=request, ceiling far above the load); the difference
# of the two whole-program totals (the preload's code, the C library it
# calls, start-up included), divided by the 10,000 requests, is what the
# preload adds per request.  A change that put a formatted double on every
# grant (agile_bucket_validate writing out max_rate for a message it did
# not send: 2,500 instructions in printf) read 3,961, against 1,225 to
# 1,402 without it (three runs: redis-benchmark's own count moves a
# little); the bound leaves room for the compiler and for honest features,
# not for work per request that no request needs.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need valgrind
need callgrind_annotate
need redis-server
need redis-benchmark
[ -z "${AGILE_TEST_PRELOAD_FIRST:-}" ] || skip "callgrind cannot run an ASan build"

start_redis
port=$redis_port

# total_ir NAME [VAR=VALUE...]: callgrind's total for the benchmark run
# with those variables set.
total_ir() {
	name=$1
	shift
	env "$@" valgrind --tool=callgrind \
		--callgrind-out-file="$tmp/callgrind.$name" \
		redis-benchmark -p "$port" -c 4 -n 5000 -t ping -q \
		>"$tmp/bench.$name" 2>"$tmp/err" ||
		fail "redis-benchmark under callgrind ($name): $(tail -n 5 "$tmp/err")"
	callgrind_annotate "$tmp/callgrind.$name" |
		awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }'
}

none=$(total_ir none)
matched=$(total_ir matched LD_PRELOAD="$PRELOAD" \
	AGILE_DEST_REDIS="127.0.0.1:$port max=1000000 initial=1000000 pace=request")
check "v[0] >= 10000" "every request is a sample (and the benchmark's own CONFIG GET)" \
	"$(stat_json redis 'd["samples_total"]')"
per=$(python3 -c 'import sys; print("%.0f" % ((int(sys.argv[2]) - int(sys.argv[1])) / 10000))' "$none" "$matched")
note "instructions per request added by the preload: $per ($none without it, $matched with it, for 10,000 requests)"
check "v[0] > 100 and v[0] < 2500" "at most 2,500 instructions added per request" "$per"
