#!/bin/sh
# seccomp.sh - agilerun --seccomp paces the connections of programs that
# LD_PRELOAD cannot reach, in one budget with the preloaded ones, and never
# paces a preloaded program's connection twice.
#
# At floor=max=5, each of these makes 10 connections, one request each,
# which the ceiling spreads over at least 1.8 s (a lower bound only: a busy
# machine makes them slower, never faster); without --seccomp the first
# three take well under a second (exec.sh):
# - fault_client built with `cc -static`: no dynamic loader; then with
#   the result of each non-blocking connect collected by a second connect;
# - fault_client -r, dynamic and preloaded, making its socket calls with
#   syscall(2), as Go's runtime does; then 4 threads of it, whose connects
#   the pacer holds at once;
# - a Go program (net/http, no keep-alive), when `go` is installed;
# - curl, preloaded and under the filter: the preload paces it and marks
#   its connects, so each takes one grant (agilestat's connects equal the
#   connections made: with two grants each, 20 curl connections would take
#   3.8 s and count 40).
# Under an outer agilerun --seccomp, an inner one leaves the pacing to its
# pacer.  A refused connect still fails with ECONNREFUSED, paced.  A command's
# output ends with it, not with a child it left running.  Under
# AGILE_STRICT=1 a state file the pacer cannot use stops agilerun before
# the command runs.  When the command ends, its pacer ends too.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/fault/lib.sh"
need python3
need cc
need curl
# The pacer loads the library into agilerun's own process, which an ASan
# build cannot be without the sanitizer's runtime loaded first.
[ -z "${AGILE_TEST_PRELOAD_FIRST:-}" ] ||
	skip "an ASan build cannot be loaded into agilerun's pacer"
[ -r /proc/sys/kernel/seccomp/actions_avail ] &&
	grep -qw user_notif /proc/sys/kernel/seccomp/actions_avail ||
	skip "this kernel has no seccomp user notification"

port=$(start_server http api)
cc -static -O2 -o "$tmp/static_client" "$srcdir/tests/fault/fault_client.c" \
	-lpthread 2>"$tmp/cc.err" || skip "no static C library: $(cat "$tmp/cc.err")"
agilerun() {
	"$builddir/src/tools/agilerun" -s "$AGILE_STATE" --seccomp \
		-d "api=127.0.0.1:$port max=5 floor=5" "$@"
}
connects() { stat_json api 'd["connects"]'; }
# ours: the process ids of this test's pacers, told apart from any other
# test's by their state file.
ours() {
	for pid in $(pgrep -x agilerun-pacer 2>/dev/null); do
		{ tr '\0' '\n' <"/proc/$pid/environ"; } 2>/dev/null |
			grep -qx "AGILE_STATE=$AGILE_STATE" && echo "$pid"
	done
	return 0
}
# pacers_gone WHAT: wait up to 5 s for this test's pacers to end, as each
# does once its command and what that left running have.
pacers_gone() {
	i=0
	while [ -n "$(ours)" ]; do
		i=$((i + 1))
		[ "$i" -le 50 ] || fail "$1: a pacer outlived its command: $(ours)"
		sleep 0.1
	done
}

# paced NAME CONNECTIONS OUTPUT: fault_client's summary line says every
# request was answered, over at least the ceiling's time, and agilestat
# counted the connections, once each.
paced() {
	note "$1: $3"
	set -- "$1" "$2" $3
	check "v[0] == $2 and v[1] == 0" "$1: every request answered" "$4" "$6"
	check "v[0] >= 0.95 * ($2 - 1) / 5" "$1: paced at 5/s" "$8"
}

out=$(agilerun -- "$tmp/static_client" -n 10 "$port" 2>"$tmp/err") ||
	fail "static: $out $(cat "$tmp/err")"
paced "static" 10 "$out"
[ ! -s "$tmp/err" ] || fail "agilerun warned: $(cat "$tmp/err")"
check "v[0] == 10" "static: 10 connects counted" "$(connects)"

# A second connect() on a socket whose connection is made or under way
# starts none: some event loops collect a non-blocking connect's result
# so (the kernel answers EISCONN), and a blocking connect a signal handler
# interrupted is restarted so.  It takes no grant: with one each, these 10
# connections counted 20 and took 3.8 s.
out=$(agilerun -- "$tmp/static_client" -B -n 10 "$port") ||
	fail "second connect: $out"
paced "static, result by a second connect()" 10 "$out"
check "v[0] == 20" "second connect: 10 more connects counted, one each" \
	"$(connects)"

# A signal the program catches while its connect is held waits for the
# grant, but for those asking it to stop (the ^C below): a SIGALRM every
# 100 ms, restarting, does not let the connects go early (they went at
# twice the rate when any caught signal did).
out=$(agilerun -- "$tmp/static_client" -a 100000 -R -n 10 "$port") ||
	fail "alarm: $out"
paced "static, SIGALRM every 100 ms" 10 "$out"
check "v[0] == 30" "alarm: 10 more connects counted" "$(connects)"

out=$(agilerun -- "$CLIENT" -r -n 10 "$port") || fail "raw: $out"
paced "syscall(2), preloaded" 10 "$out"
set -- $out
check "v[0] == 1" "the preload is mapped into it" "${14}"
check "v[0] == 40" "raw: 10 more connects counted" "$(connects)"

out=$(agilerun -- "$CLIENT" -r -t 4 -n 3 "$port") || fail "threads: $out"
paced "syscall(2), 4 threads" 12 "$out"
check "v[0] == 52" "threads: 12 more connects counted" "$(connects)"
before=52

if command -v go >/dev/null 2>&1; then
	mkdir "$tmp/go"
	cat >"$tmp/go/main.go" <<'EOF'
package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

// 10 requests, a connection each; prints "requests R failed F elapsed S"
// like fault_client.  With "burst", 20 dials at once, and nothing printed.
func main() {
	if len(os.Args) > 2 && os.Args[2] == "burst" {
		var wg sync.WaitGroup
		for i := 0; i < 20; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := net.Dial("tcp", "127.0.0.1:"+os.Args[1])
				if err == nil {
					c.Close()
				}
			}()
		}
		wg.Wait()
		return
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	start := time.Now()
	failed := 0
	for i := 0; i < 10; i++ {
		r, err := client.Get("http://127.0.0.1:" + os.Args[1] + "/")
		if err != nil {
			failed++
			continue
		}
		io.ReadAll(r.Body)
		r.Body.Close()
	}
	fmt.Printf("requests 10 failed %d elapsed %.3f\n", failed,
		time.Since(start).Seconds())
}
EOF
	printf 'module pacedgo\n\ngo 1.19\n' >"$tmp/go/go.mod"
	(cd "$tmp/go" && GOCACHE="$tmp/gocache" GOFLAGS=-mod=mod \
		go build -o "$tmp/goclient" . >"$tmp/go.log" 2>&1) ||
		fail "go build: $(cat "$tmp/go.log")"
	"$builddir/src/tools/agilerun" -d "api=127.0.0.1:$port max=5" -- \
		"$tmp/goclient" "$port" >/dev/null 2>"$tmp/err" || true
	grep -q "is a Go program" "$tmp/err" ||
		fail "agilerun did not warn about a Go program: $(cat "$tmp/err")"
	out=$(agilerun -- "$tmp/goclient" "$port") || fail "go: $out"
	paced "Go" 10 "$out"
	before=$((before + 10))
	check "v[0] == $before" "Go: 10 more connects counted" "$(connects)"

	# ^C while 20 dials of the Go program are held (at 1/m, the last for
	# 19 minutes): its runtime catches SIGINT, and the kernel may hand the
	# signal to a held thread, whose wait is killable only, so the handler
	# waited for the connect's grant (8 to 38 s with 20 held at 1/10s, in
	# 4 runs of 4).  The pacer lets a connect whose thread has a caught
	# signal waiting go on, and the program ends at once (17 to 40 ms);
	# 10 s is the bound.  The program runs in a process group of its own,
	# with SIGINT not ignored, as a terminal's foreground job.
	closed=$(closed_port)
	python3 - "$AGILESTAT" "$builddir/src/tools/agilerun" -s "$AGILE_STATE" \
		--seccomp -d "slow=127.0.0.1:$closed max=1/m floor=1/m" -- \
		"$tmp/goclient" "$closed" burst >"$tmp/int.out" 2>&1 <<'PY' ||
import json, os, signal, subprocess, sys, time

agilestat, command = sys.argv[1], sys.argv[2:]
go = subprocess.Popen(command, preexec_fn=lambda: (
    signal.signal(signal.SIGINT, signal.SIG_DFL), os.setpgid(0, 0)))
for _ in range(200):
    # Every dial has had its grant: one went on, 19 are held.
    d = json.loads(subprocess.run([agilestat, "--json"], check=True,
                                  capture_output=True).stdout)
    if any(x["name"] == "slow" and x["connects"] >= 20
           for x in d["destinations"]):
        break
    time.sleep(0.05)
else:
    os.killpg(go.pid, signal.SIGKILL)
    sys.exit("the 20 dials were not all made")
start = time.monotonic()
os.killpg(go.pid, signal.SIGINT)
try:
    status = go.wait(timeout=10)
except subprocess.TimeoutExpired:
    os.killpg(go.pid, signal.SIGKILL)
    sys.exit("still running 10 s after SIGINT")
print("ended by SIGINT after %.3f s, status %d"
      % (time.monotonic() - start, status))
sys.exit(0 if status == -signal.SIGINT else 1)
PY
		fail "^C: $(cat "$tmp/int.out")"
	note "Go, ^C with 20 dials held: $(cat "$tmp/int.out")"
else
	note "NOT RUN: the Go program (go is not installed); fault_client -r makes its calls the same way"
fi

# curl, preloaded: paced by the preload alone (one grant a connection).
start=$(date +%s.%N)
agilerun -- sh -c 'i=0; while [ $i -lt 10 ]; do
	curl -s -o /dev/null "http://127.0.0.1:$0/" || exit 1; i=$((i + 1)); done' \
	"$port" || fail "curl failed"
end=$(date +%s.%N)
check "v[1] - v[0] >= 0.95 * 9 / 5" "curl: paced at 5/s" "$start" "$end"
before=$((before + 10))
check "v[0] == $before" "curl: one grant a connection" "$(connects)"
check "v[0] >= 10" "curl: its round trips measured" \
	"$(stat_json api 'd["samples_total"]')"

# A datagram socket connected to the destination's address is no
# connection: the pacer asks the socket its type and lets it go, as the
# preload does for its own.
cat >"$tmp/udp.c" <<'EOF'
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int ok = 0;

	(void)argc;
	a.sin_port = htons((unsigned short)atoi(argv[1]));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (int i = 0; i < 10; i++) {
		int fd = socket(AF_INET, SOCK_DGRAM, 0);

		ok += fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
		close(fd);
	}
	printf("%d\n", ok);
	return ok == 10 ? 0 : 1;
}
EOF
cc -static -O2 -o "$tmp/udp" "$tmp/udp.c" || fail "cc udp.c"
out=$(agilerun -- "$tmp/udp" "$port") || fail "udp: $out"
check "v[0] == $before" "udp: no grant for a datagram socket" "$(connects)"

# agilerun --seccomp under agilerun --seccomp: a process has one seccomp
# supervisor at most, so the inner agilerun installs no filter (EBUSY) and
# says that the outer pacer paces the static client, by the outer rules
# (api, at 5/s, not inner's 100/s).  It said it ran the client unpaced,
# and that the client would run unthrottled, and under AGILE_STRICT=1 it
# would not run it at all.
out=$(AGILE_STRICT=1 agilerun -- "$builddir/src/tools/agilerun" --seccomp \
	-d "inner=127.0.0.1:$port max=100" -- \
	"$tmp/static_client" -n 10 "$port" 2>"$tmp/err") ||
	fail "nested: $out $(cat "$tmp/err")"
paced "nested, by the outer pacer" 10 "$out"
grep -q "already under an outer agilerun --seccomp" "$tmp/err" ||
	fail "nested: agilerun did not say who paces: $(cat "$tmp/err")"
! grep -q "unpaced\|unthrottled" "$tmp/err" ||
	fail "nested: agilerun said unpaced: $(cat "$tmp/err")"
before=$((before + 10))
check "v[0] == $before" "nested: 10 more connects counted in the outer rule" \
	"$(connects)"

# Refused: the program sees ECONNREFUSED (111), after its grant.
closed=$(closed_port)
out=$("$builddir/src/tools/agilerun" -s "$AGILE_STATE" --seccomp \
	-d "down=127.0.0.1:$closed max=5 floor=5" -- \
	"$tmp/static_client" -n 6 "$closed") && fail "refused: succeeded: $out"
note "refused: $out"
set -- $out
check "v[0] == 6 and v[1] == 111" "refused: 6 connects failed with ECONNREFUSED" \
	"$4" "${16}"
check "v[0] >= 0.95 * 5 / 5" "refused: paced" "$6"

# A command that leaves a process running, as a daemon does (here a
# shell's background sleep, its output elsewhere): a caller reading
# agilerun's output and errors until their end (`$(agilerun ... 2>&1)`)
# has them when the command ends.  The pacer goes on pacing what was left,
# but no longer holds agilerun's standard error: it did, and such a caller
# waited for the daemon, here 60 s (await_file gives up after 10).
( "$builddir/src/tools/agilerun" -s "$AGILE_STATE" --seccomp \
	-d "api=127.0.0.1:$port max=5 floor=5" -- \
	sh -c 'sleep 60 </dev/null >/dev/null 2>&1 & echo $! >"$0"' \
	"$tmp/daemon.pid" 2>&1 | cat >"$tmp/daemon.out"
  echo ended >"$tmp/daemon.ended" ) &
started $!
await_file "$tmp/daemon.ended" \
	"daemon: agilerun's output stayed open while its command's child ran"
kill "$(cat "$tmp/daemon.pid")"

# The pacer asked to stop (SIGTERM, as `kill` sends, or a service manager
# stopping the command with it) while it holds connects: it stops pacing
# and lets them all go on, and every later one, so the command runs to its
# end with every request answered, and says so on stderr.  It used to end
# there, and the command's connects failed with ENOSYS (38): 7 of 10.
# The signal is sent once the server has had 2 of its requests, at 2/s
# (so the others are held or to come), when it is the only pacer left.
pacers_gone "before term"
served=$(wc -l <"$tmp/api.requests")
"$builddir/src/tools/agilerun" -s "$AGILE_STATE" --seccomp \
	-d "api=127.0.0.1:$port max=2 floor=2" -- \
	"$tmp/static_client" -n 10 "$port" >"$tmp/term.out" 2>"$tmp/term.err" &
term=$!
started $term
i=0
while [ "$(wc -l <"$tmp/api.requests")" -lt $((served + 2)) ]; do
	i=$((i + 1))
	[ "$i" -le 200 ] || fail "term: the client made no 2 requests"
	sleep 0.05
done
pacer=$(ours)
[ -n "$pacer" ] || fail "term: no pacer"
kill -TERM $pacer
wait $term || fail "term: $(cat "$tmp/term.out" "$tmp/term.err")"
note "term: $(cat "$tmp/term.out")"
set -- $(cat "$tmp/term.out")
check "v[0] == 10 and v[1] == 0" "term: every request answered" "$2" "$4"
grep -q "lets every connect go on unpaced" "$tmp/term.err" ||
	fail "term: the pacer did not say it stopped pacing: $(cat "$tmp/term.err")"

# AGILE_STRICT=1 and a state file that cannot be used: the pacer stops
# before the filter is installed, and agilerun with it, with status 2 and
# the command not run, as the preload stops a program.  The pacer used to
# stop at the first connect, with the filter in place: the command ran on,
# every connect failing with ENOSYS (38).
out=$(AGILE_STRICT=1 "$builddir/src/tools/agilerun" -s "$tmp/none/state" \
	--seccomp -d "api=127.0.0.1:$port max=5 floor=5" -- \
	"$tmp/static_client" -n 1 "$port" 2>"$tmp/err") && rc=0 || rc=$?
[ "$rc" -eq 2 ] && [ -z "$out" ] ||
	fail "strict: exit $rc, output \"$out\": $(cat "$tmp/err")"
grep -q "AGILE_STRICT=1: not running the command" "$tmp/err" ||
	fail "strict: agilerun did not say why: $(cat "$tmp/err")"

# Each command's pacer has ended with it.
pacers_gone "at the end"
