#!/bin/sh
# valgrind.sh - Valgrind's memcheck finds nothing wrong with the preload in
# real programs.
#
# curl (two paced requests on one command line), this project's C client
# (eight threads, blocking and non-blocking connects) and Python (threads,
# urllib, a fork) each run under memcheck with the preload loaded and a
# destination configured, so the whole path runs: first-use binding, the
# configuration, the state file's creation and mapping, the fd table,
# grants, waits, samples and ticks.  Any memcheck error (an invalid read or
# write, a use of an uninitialised value, a bad free, a definite leak in
# curl or the client) makes the program exit 99 and the test fail; every
# request must also be recorded.  Python runs with PYTHONMALLOC=malloc, so
# memcheck sees its allocations, and without leak checking (CPython does
# not free everything at exit, by design).
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need valgrind
need curl
need python3
[ -z "${AGILE_TEST_PRELOAD_FIRST:-}" ] || skip "valgrind cannot run an ASan build"
client=$builddir/tests/fault/fault_client
[ -x "$client" ] || fail "$client not built"

port=$(start_httpd api)
export AGILE_DEST_API="127.0.0.1:$port max=50 floor=50 initial=50"
memcheck() {
	LD_PRELOAD="$PRELOAD" valgrind -q --error-exitcode=99 "$@"
}

memcheck --leak-check=full --errors-for-leak-kinds=definite \
	curl -sf -o /dev/null -o /dev/null "http://127.0.0.1:$port/a" \
	"http://127.0.0.1:$port/b" 2>"$tmp/err" ||
	fail "curl under memcheck: $(cat "$tmp/err")"
note "curl: clean"
memcheck --leak-check=full --errors-for-leak-kinds=definite \
	"$client" -t 8 -n 2 "$port" >/dev/null 2>"$tmp/err" ||
	fail "fault_client under memcheck: $(cat "$tmp/err")"
memcheck --leak-check=full --errors-for-leak-kinds=definite \
	"$client" -b -t 8 -n 2 "$port" >/dev/null 2>"$tmp/err" ||
	fail "fault_client -b under memcheck: $(cat "$tmp/err")"
note "fault_client, 8 threads, blocking and non-blocking: clean"

cat >"$tmp/client.py" <<'PY'
import os, sys, threading, urllib.request
url = "http://127.0.0.1:%s/" % sys.argv[1]
def get():
    urllib.request.urlopen(url, timeout=30).read()
threads = [threading.Thread(target=get) for _ in range(4)]
for t in threads: t.start()
for t in threads: t.join()
pid = os.fork()
if pid == 0:
    get()
    os._exit(0)
_, status = os.waitpid(pid, 0)
sys.exit(status)
PY
PYTHONMALLOC=malloc memcheck --leak-check=no \
	python3 "$tmp/client.py" "$port" 2>"$tmp/err" ||
	fail "python3 under memcheck: $(cat "$tmp/err")"
note "python3, 4 threads and a fork: clean"
check "v[0] == 39" "every request is a sample" \
	"$(stat_json api 'd["samples_total"]')"
