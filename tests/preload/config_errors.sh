#!/bin/sh
# config_errors.sh - every configuration error reaches the user as one line,
# through a real program under the real preload and through agilerun.
#
# The scenario: a user exports AGILE_DEST_* variables with mistakes in them
# and runs an unmodified program.  Under AGILE_STRICT=1 the preload must
# print each mistake as "agilepreload: AGILE_DEST_<NAME>: ..." and stop the
# program with exit status 2 before its main() runs (the program's own output
# never appears).  Without AGILE_STRICT the program must run to completion
# with its own exit status, the same lines printed once it makes its first
# connection (the preload reads its configuration lazily, so a process that
# never connects pays nothing).  agilerun must refuse the same mistakes in
# -d with exit status 2 and run nothing, and exit 127/126 like env(1).
#
# Run by `make check` from the top of the build tree; AGILE_BUILDDIR
# overrides where the build is.  Exit 77 (skip) when the preload is missing.
set -u

builddir=${AGILE_BUILDDIR:-$(pwd)}
preload=$builddir/preload/.libs/libagilepreload.so
agilerun=$builddir/src/tools/agilerun
if [ ! -f "$preload" ] || [ ! -x "$agilerun" ]; then
	echo "SKIP: $preload or $agilerun is not built"
	exit 77
fi
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is missing"; exit 77; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
failures=0
checks=0

fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

# expect_status NAME WANT GOT
expect_status() {
	checks=$((checks + 1))
	[ "$2" = "$3" ] || fail "$1: exit status $3, expected $2"
}

# expect_file NAME FILE: FILE must hold exactly the lines on stdin.
expect_file() {
	checks=$((checks + 1))
	cat >"$tmp/want"
	if ! cmp -s "$tmp/want" "$2"; then
		fail "$1: output differs (- expected, + actual):"
		diff -u "$tmp/want" "$2" | sed -n '3,$p'
	fi
}

# expect_empty NAME FILE
expect_empty() {
	checks=$((checks + 1))
	[ ! -s "$2" ] || { fail "$1: expected no output, got:"; cat "$2"; }
}

# A port with nothing listening, so a connect is refused at once.
closed_port=$(python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# A program that connects once (to the configured, closed port) and says so.
connect_once="import socket
s = socket.socket()
s.connect_ex(('127.0.0.1', $closed_port))
s.close()
print('main ran')"

# The environment of every preload run: only the variables under test, and
# a private state file.  The default one in /dev/shm may have been written by
# a build with another layout, and replacing it prints a warning that the
# expected outputs below do not hold.
run_preloaded() {
	env -i PATH="$PATH" AGILE_STATE="$tmp/state" LD_PRELOAD="$preload" "$@"
}

# --- 1. Each message, exactly, under AGILE_STRICT=1 --------------------------
# name|value|expected message (without the "agilepreload: " prefix)
cat >"$tmp/cases" <<'EOF'
API|127.0.0.1:8080 max=500 flor=20|AGILE_DEST_API: unknown key "flor"; did you mean "floor"?
API|127.0.0.1:8080 max=500 slo=200|AGILE_DEST_API: key "slo": "200" has no unit; expected a duration such as 250us, 200ms or 1.5s
API|127.0.0.1:8080 max=fast|AGILE_DEST_API: key "max": "fast" is not a number; expected a rate greater than 0: requests per second such as 5 or 0.5, or a count per period such as 1/10s or 30/1m
API|127.0.0.1:8080 max=500 floor=600|AGILE_DEST_API: floor (600) is above max (500); expected floor <= max
API|127.0.0.1:8080 max=1/0s|AGILE_DEST_API: key "max": "1/0s" has a period of 0; expected a rate greater than 0: requests per second such as 5 or 0.5, or a count per period such as 1/10s or 30/1m
API|127.0.0.1:8080 max=0.5 floor=1/2h|AGILE_DEST_API: key "floor": "1/2h" is below one request per hour, the slowest rate; expected a rate, 0 or more: requests per second such as 5 or 0.5, or a count per period such as 1/10s or 30/1m
API|127.0.0.1: max=500|AGILE_DEST_API: cannot read destination "127.0.0.1:"; expected IPv4:PORT, [IPv6]:PORT, CIDR:PORT, HOST:PORT or unix:/path
DB|[::1]:5432 floor=5|AGILE_DEST_DB: key "max" is missing; expected max=N, a rate greater than 0: requests per second such as 5 or 0.5, or a count per period such as 1/10s or 30/1m
DB|[::1]:5432 max=200 pace=stream|AGILE_DEST_DB: key "pace": "stream" is not a pace; expected request or connect
DB|[::1]:5432 max=200 preset=fast|AGILE_DEST_DB: key "preset": "fast" is not a preset; expected none, balanced, latency-first, throughput-first or seed
DB|[::1]:5432 max=200 anchor=p99|AGILE_DEST_DB: key "anchor": "p99" is not an anchor; expected unset, baseline or slo
DB|[::1]:5432 max=200 deadband=wide|AGILE_DEST_DB: key "deadband": "wide" is not a number; expected a decimal number, 0 or more, such as 0.1
DB|[::1]:5432 max=200 tick=5d|AGILE_DEST_DB: key "tick": "5d" has an unknown unit; expected a duration from 10ms to 60s such as 500ms, or 0s for the default of 1s
DB|[::1]:5432 max=200 tick=1ns|AGILE_DEST_DB: key "tick": "1ns" is too short; expected a duration from 10ms to 60s such as 500ms, or 0s for the default of 1s
DB|[::1]:5432 max=200 tick=2m|AGILE_DEST_DB: key "tick": "2m" is too long; expected a duration from 10ms to 60s such as 500ms, or 0s for the default of 1s
DB|1.2.3.4:70000 max=200|AGILE_DEST_DB: destination "1.2.3.4:70000": the port is out of range; expected 1 to 65535, or * for any port
EOF

while IFS='|' read -r name value message; do
	status=0
	run_preloaded AGILE_STRICT=1 "AGILE_DEST_$name=$value" \
		sh -c 'echo main ran' >"$tmp/out" 2>"$tmp/err" || status=$?
	expect_status "strict '$value'" 2 "$status"
	expect_empty "strict '$value': main must not run" "$tmp/out"
	expect_file "strict '$value'" "$tmp/err" <<EOF
agilepreload: $message
agilepreload: AGILE_STRICT=1: 1 configuration error; not starting
EOF
done <"$tmp/cases"

# --- 2. Several mistakes at once: every one reported, in NAME order ----------
status=0
run_preloaded AGILE_STRICT=1 \
	"AGILE_DEST_WEB=127.0.0.1:80 max=10 slo=200" \
	"AGILE_DEST_API=127.0.0.1:81 max=500 flor=20 tick=1" \
	true >"$tmp/out" 2>"$tmp/err" || status=$?
expect_status "strict, three mistakes" 2 "$status"
expect_file "strict, three mistakes" "$tmp/err" <<'EOF'
agilepreload: AGILE_DEST_API: unknown key "flor"; did you mean "floor"?
agilepreload: AGILE_DEST_API: key "tick": "1" has no unit; expected a duration from 10ms to 60s such as 500ms, or 0s for the default of 1s
agilepreload: AGILE_DEST_WEB: key "slo": "200" has no unit; expected a duration such as 250us, 200ms or 1.5s
agilepreload: AGILE_STRICT=1: 3 configuration errors; not starting
EOF

# --- 3. A correct configuration under AGILE_STRICT=1 runs, silently ----------
status=0
run_preloaded AGILE_STRICT=1 \
	"AGILE_DEST_API=127.0.0.1:$closed_port max=500 floor=20 slo=200ms" \
	sh -c 'echo main ran' >"$tmp/out" 2>"$tmp/err" || status=$?
expect_status "strict, clean" 0 "$status"
expect_file "strict, clean: main runs" "$tmp/out" <<'EOF'
main ran
EOF
expect_empty "strict, clean: nothing on stderr" "$tmp/err"

# --- 4. Without AGILE_STRICT the program runs, and is told ------------------
# A process that never connects is never charged for the configuration.
status=0
run_preloaded "AGILE_DEST_API=127.0.0.1:8080 max=500 flor=20" \
	sh -c 'echo main ran; exit 3' >"$tmp/out" 2>"$tmp/err" || status=$?
expect_status "lenient, no connection: the program's own status" 3 "$status"
expect_file "lenient, no connection: main runs" "$tmp/out" <<'EOF'
main ran
EOF

# One that connects reads the configuration then, and reports each mistake
# once, as a warning; it runs on with its own exit status.
status=0
run_preloaded \
	"AGILE_DEST_API=127.0.0.1:$closed_port max=500 flor=20 slo=200" \
	"AGILE_DEST_BAD=127.0.0.1: max=5" \
	python3 -c "$connect_once" >"$tmp/out" 2>"$tmp/err" || status=$?
expect_status "lenient, connecting" 0 "$status"
expect_file "lenient, connecting: main runs" "$tmp/out" <<'EOF'
main ran
EOF
expect_file "lenient, connecting: the warnings" "$tmp/err" <<'EOF'
agilepreload: AGILE_DEST_API: unknown key "flor"; did you mean "floor"?
agilepreload: AGILE_DEST_API: key "slo": "200" has no unit; expected a duration such as 250us, 200ms or 1.5s
agilepreload: AGILE_DEST_BAD: cannot read destination "127.0.0.1:"; expected IPv4:PORT, [IPv6]:PORT, CIDR:PORT, HOST:PORT or unix:/path
EOF

# AGILE_STRICT takes the usual spellings of yes and no: "yes" is strict,
# and anything else is reported, not silently run lax (issue 16, item 13).
status=0
run_preloaded AGILE_STRICT=yes \
	"AGILE_DEST_API=127.0.0.1:$closed_port max=500 flor=20" \
	python3 -c "$connect_once" >"$tmp/out" 2>"$tmp/err" || status=$?
expect_status "AGILE_STRICT=yes" 2 "$status"
expect_empty "AGILE_STRICT=yes: main never runs" "$tmp/out"
status=0
run_preloaded AGILE_STRICT=2 \
	"AGILE_DEST_API=127.0.0.1:$closed_port max=500" \
	python3 -c "$connect_once" >"$tmp/out" 2>"$tmp/err" || status=$?
expect_status "AGILE_STRICT=2" 0 "$status"
expect_file "AGILE_STRICT=2: the warning" "$tmp/err" <<'EOF'
agilepreload: AGILE_STRICT: "2" is not a yes or a no; expected 1, true, yes or on (stop on a configuration error), or 0, false, no or off (using 0)
EOF

# One line per variable and problem, with a count; h is a unit, so 9999h is
# out of range; an IPv4 address in hexadecimal is no host name; bits past a
# prefix are a warning; control bytes from the environment are escaped
# (issue 16, item 13).
repeated="127.0.0.1:$closed_port max=5"
i=0
while [ "$i" -lt 500 ]; do
	repeated="$repeated max=$i stray$i"
	i=$((i + 1))
done
status=0
run_preloaded "AGILE_DEST_API=$repeated" \
	"AGILE_DEST_HEX=0x7f.0.0.1:$closed_port max=5" \
	"AGILE_DEST_NET=10.1.2.3/8:$closed_port max=5 tick=9999h" \
	"AGILE_DEST_TTY=127.0.0.1:$closed_port max=5 $(printf 'x\033]0;OWNED\007')=1" \
	python3 -c "$connect_once" >"$tmp/out" 2>"$tmp/err" || status=$?
expect_status "repeats and forms" 0 "$status"
expect_file "repeats and forms: the warnings" "$tmp/err" <<EOF
agilepreload: AGILE_DEST_API: key "max" is set twice; expected each key once (the first value is kept) (and 499 more like it)
agilepreload: AGILE_DEST_API: "stray0" is not a setting; expected key=value (and 499 more like it)
agilepreload: AGILE_DEST_HEX: destination "0x7f.0.0.1:$closed_port": an IPv4 address must be written in dotted decimal, not in hexadecimal, octal or fewer parts; expected ADDRESS:PORT such as 127.0.0.1:8080
agilepreload: AGILE_DEST_NET: destination "10.1.2.3/8:$closed_port": the address has bits set past its prefix length, which are ignored; expected the network's first address, such as 10.0.0.0/8
agilepreload: AGILE_DEST_NET: key "tick": "9999h" is too long; expected a duration from 10ms to 60s such as 500ms, or 0s for the default of 1s
agilepreload: AGILE_DEST_TTY: unknown key "x\\x1b]0;OWNED\\x07"; expected one of max, min, floor, probe, initial, slo, anchor, preset, tail_factor, tail_tolerance, tick, up, down, gain, inflation, deadband, backoff_ticks, recover_ticks, slow_start, recover_ramp, slow_half_life, slow_down_half_life, max_baseline_rise, delivered_share, knee_ramp, probe_acceleration, goodput_cut, pace, inflight, or a resilience key such as concurrency, breaker, quota, window or proto (see agilepreload(7))
EOF

# AGILE_LOG=error silences the warnings, not the program.
status=0
run_preloaded AGILE_LOG=error \
	"AGILE_DEST_API=127.0.0.1:$closed_port max=500 flor=20" \
	python3 -c "$connect_once" >"$tmp/out" 2>"$tmp/err" || status=$?
expect_status "AGILE_LOG=error" 0 "$status"
expect_empty "AGILE_LOG=error: no warnings" "$tmp/err"

# Two live processes that configure one NAME differently cannot share its
# limiter: the second is told which variable to look at and what it gets
# (a budget its configuration's processes share, the lower max holding for
# both; tests/fault/max_lowered.sh shows it).
run_preloaded "AGILE_DEST_API=127.0.0.1:$closed_port max=5" \
	python3 -c "$connect_once
import time; open('$tmp/first', 'w').close(); time.sleep(3)" \
	>/dev/null 2>&1 &
first=$!
i=0
while [ ! -e "$tmp/first" ] && [ "$i" -lt 100 ]; do i=$((i + 1)); sleep 0.05; done
status=0
run_preloaded "AGILE_DEST_API=127.0.0.1:$closed_port max=6" \
	python3 -c "$connect_once" >"$tmp/out" 2>"$tmp/err" || status=$?
wait "$first"
expect_status "a second configuration" 0 "$status"
# $! is the shell running the function; the pid in the line is python's.
sed 's/process [0-9]* uses/process PID uses/' "$tmp/err" >"$tmp/err.pid"
expect_file "a second configuration: the warning" "$tmp/err.pid" <<'EOF'
agilepreload: destination api: process PID uses it with a different configuration (destination, pace or a setting of its AGILE_DEST_ variable); the processes of this one share a budget of their own beside it, and where the two meet the lower max holds for both
EOF

# --- 5. agilerun refuses the same mistakes before running anything ----------
status=0
env -i PATH="$PATH" "$agilerun" \
	-d 'api=127.0.0.1:8080 max=500 flor=20' \
	-d 'db=[::1]:5432 max=fast' \
	-d 'x-y=127.0.0.1:1 max=1' \
	-- sh -c 'echo main ran' >"$tmp/out" 2>"$tmp/err" || status=$?
expect_status "agilerun, bad -d" 2 "$status"
expect_empty "agilerun, bad -d: nothing runs" "$tmp/out"
expect_file "agilerun, bad -d" "$tmp/err" <<'EOF'
agilerun: AGILE_DEST_API: unknown key "flor"; did you mean "floor"?
agilerun: AGILE_DEST_DB: key "max": "fast" is not a number; expected a rate greater than 0: requests per second such as 5 or 0.5, or a count per period such as 1/10s or 30/1m
agilerun: -d "x-y": the name may hold only letters, digits and '_'
agilerun: 3 configuration errors; nothing was run
EOF

# Two -d of one NAME (compared without case, as the variable is upper-cased)
# would set one variable twice, the second silently replacing the first; and
# the preload reads at most 32 rules, ignoring the rest.  Both are refused.
status=0
env -i PATH="$PATH" "$agilerun" -d 'api=127.0.0.1:1 max=5' \
	-d 'API=127.0.0.1:2 max=7' -- sh -c 'echo main ran' \
	>"$tmp/out" 2>"$tmp/err" || status=$?
expect_status "agilerun, one NAME twice" 2 "$status"
expect_empty "agilerun, one NAME twice: nothing runs" "$tmp/out"
expect_file "agilerun, one NAME twice" "$tmp/err" <<'EOF'
agilerun: -d "API": the name is given twice (names are compared without case); expected each NAME once
agilerun: 1 configuration error; nothing was run
EOF
set --
i=0
while [ "$i" -lt 32 ]; do
	i=$((i + 1))
	set -- "$@" -d "d$i=127.0.0.1:$i max=5"
done
status=0
env -i PATH="$PATH" "$agilerun" "$@" -- sh -c 'echo main ran' \
	>"$tmp/out" 2>"$tmp/err" || status=$?
expect_status "agilerun, 32 -d" 0 "$status"
status=0
env -i PATH="$PATH" AGILE_LISTEN_WEB=':8080 max=5' "$agilerun" "$@" -- \
	sh -c 'echo main ran' >"$tmp/out" 2>"$tmp/err" || status=$?
expect_status "agilerun, 32 -d and a listener" 2 "$status"
expect_empty "agilerun, 33 rules: nothing runs" "$tmp/out"
expect_file "agilerun, 33 rules" "$tmp/err" <<'EOF'
agilerun: 33 destinations and listeners (-d and AGILE_DEST_* or AGILE_LISTEN_* variables); expected at most 32, the most one process reads
agilerun: 1 configuration error; nothing was run
EOF

status=0
env -i PATH="$PATH" "$agilerun" -s "$tmp/a.state" -s "$tmp/b.state" \
	-d 'api=127.0.0.1:1 max=5' -- sh -c 'echo main ran' \
	>"$tmp/out" 2>"$tmp/err" || status=$?
expect_status "agilerun, -s twice" 2 "$status"
expect_empty "agilerun, -s twice: nothing runs" "$tmp/out"
expect_file "agilerun, -s twice" "$tmp/err" <<EOF
agilerun: -s "$tmp/b.state": -s is given twice; expected one state file
agilerun: 1 configuration error; nothing was run
EOF

# Fleet settings need AGILE_REDIS: without it (or with one the preload
# cannot use) they would hold on this host alone.
status=0
env -i PATH="$PATH" "$agilerun" -d 'pay=127.0.0.1:1 max=5 fleet_max=10' -- \
	sh -c 'echo main ran' >"$tmp/out" 2>"$tmp/err" || status=$?
expect_status "agilerun, fleet_max without AGILE_REDIS" 2 "$status"
expect_empty "agilerun, fleet_max without AGILE_REDIS: nothing runs" "$tmp/out"
expect_file "agilerun, fleet_max without AGILE_REDIS" "$tmp/err" <<'EOF'
agilerun: AGILE_REDIS is not set: 1 -d destination with fleet settings would enforce them on this host alone; expected AGILE_REDIS=redis://HOST:PORT/DB
agilerun: 1 configuration error; nothing was run
EOF
status=0
env -i PATH="$PATH" AGILE_REDIS=http://127.0.0.1:1 "$agilerun" \
	-d 'pay=127.0.0.1:1 max=5 fleet_max=10' -- sh -c 'echo main ran' \
	>"$tmp/out" 2>"$tmp/err" || status=$?
expect_status "agilerun, fleet_max with a bad AGILE_REDIS" 2 "$status"
checks=$((checks + 1))
grep -q '^agilerun: AGILE_REDIS: "http://127.0.0.1:1" is not a Redis URL; expected ' \
	"$tmp/err" || fail "agilerun, bad AGILE_REDIS: $(cat "$tmp/err")"
status=0
env -i PATH="$PATH" AGILE_REDIS=redis://127.0.0.1:1/0 "$agilerun" \
	-d 'pay=127.0.0.1:1 max=5 fleet_max=10' -- sh -c 'echo main ran' \
	>"$tmp/out" 2>"$tmp/err" || status=$?
expect_status "agilerun, fleet_max with AGILE_REDIS" 0 "$status"
expect_empty "agilerun, fleet_max with AGILE_REDIS: quiet" "$tmp/err"

# A good -d: the variables are set and the command's status comes back.
status=0
env -i PATH="$PATH" "$agilerun" -d "api=127.0.0.1:$closed_port max=500" \
	-s "$tmp/state" -- \
	sh -c 'echo "$AGILE_DEST_API|$AGILE_STATE|$LD_PRELOAD"; exit 4' \
	>"$tmp/out" 2>"$tmp/err" || status=$?
expect_status "agilerun, good -d" 4 "$status"
expect_file "agilerun, good -d: the environment" "$tmp/out" <<EOF
127.0.0.1:$closed_port max=500|$tmp/state|$(realpath "$preload")
EOF
expect_empty "agilerun, good -d: quiet" "$tmp/err"

# A -d replaces an exported variable of the same NAME in any case: the
# preload compares NAMEs without case, so an exported AGILE_DEST_api left
# beside the -d's AGILE_DEST_API was a second rule for "api" (max=1 where
# the -d said max=500), and the command warned about it on every run.
status=0
env -i PATH="$PATH" AGILE_DEST_api="127.0.0.1:$closed_port max=1" \
	AGILE_DEST_Api="127.0.0.1:$closed_port max=2" AGILE_DEST_APIS="127.0.0.1:1 max=3" \
	"$agilerun" -d "api=127.0.0.1:$closed_port max=500" -s "$tmp/state" -- \
	sh -c 'env | grep "^AGILE_DEST_" | sort; exec python3 -c "$1"' sh "$connect_once" \
	>"$tmp/out" 2>"$tmp/err" || status=$?
expect_status "agilerun, -d over an exported NAME in another case" 0 "$status"
expect_file "agilerun, -d over an exported NAME in another case" "$tmp/out" <<EOF
AGILE_DEST_API=127.0.0.1:$closed_port max=500
AGILE_DEST_APIS=127.0.0.1:1 max=3
main ran
EOF
expect_empty "agilerun, -d over an exported NAME in another case: quiet" "$tmp/err"

# Like env(1): 127 for a missing command, 126 for one that cannot run.
status=0
"$agilerun" -d 'a=127.0.0.1:1 max=1' -- "$tmp/no-such-program" \
	>"$tmp/out" 2>"$tmp/err" || status=$?
expect_status "agilerun, missing command" 127 "$status"
printf '#!/bin/sh\n' >"$tmp/not-executable"
status=0
"$agilerun" -d 'a=127.0.0.1:1 max=1' -- "$tmp/not-executable" \
	>"$tmp/out" 2>"$tmp/err" || status=$?
expect_status "agilerun, not executable" 126 "$status"

echo "config_errors: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
