#!/bin/sh
# vfork.sh - a vfork child's closes are its own, not its parent's.
#
# A vfork() child runs in its parent's memory until it execs, so the
# preload's descriptor table there is the parent's.  Python's subprocess
# starts every command that way and closes all descriptors above 2 in the
# child (close_fds=True, the default) with close_range(); the preload took
# that for the parent closing its own sockets and forgot them, so after one
# subprocess.run() a kept-alive connection went unpaced (10 requests at 5/s
# took 0.46 s instead of 2 s) and unmeasured.  Here a C client (vfork, then
# close() and dup2() over the connection's number in the child; and again
# with syscall(SYS_close) and syscall(SYS_dup3), hooked as well; and, in a
# process of its own, clone(CLONE_VM | CLONE_VFORK), whose hook is what
# tells the preload such a child may exist) and a
# Python client (subprocess.run) each make one request, start /bin/true, and
# make ten more on the same connection at floor=max=10/s: the ten must take
# at least 0.8 s (1 s nominal) and all eleven must be samples of one
# connection.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3
client=$builddir/tests/preload/vfork_client
[ -x "$client" ] || fail "$client not built"

port=$(start_httpd api)
export AGILE_DEST_API="127.0.0.1:$port max=10 floor=10 initial=10"
for how in vfork clone; do
	rm -f "$AGILE_STATE"
	elapsed=$(preloaded "$client" "$port" 10 $how) ||
		fail "vfork_client $how failed"
	note "C, $how + close + dup2 in the child: 10 requests in $elapsed s"
	check "v[0] >= 0.8" "the parent's connection is still paced" "$elapsed"
	check "v[0] == 11" "every request is a sample" \
		"$(stat_json api 'd["samples_total"]')"
	check "v[0] == 1" "one connection" "$(stat_json api 'd["connects"]')"
done

rm -f "$AGILE_STATE"
cat >"$tmp/spawner.py" <<'PY'
import http.client, subprocess, sys, time
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]))
def get():
    c.request("GET", "/subprocess")
    c.getresponse().read()
get()
subprocess.run(["/bin/true"], check=True)
start = time.monotonic()
for _ in range(10):
    get()
print("%.3f" % (time.monotonic() - start))
PY
elapsed=$(preloaded python3 "$tmp/spawner.py" "$port") || fail "python failed"
note "Python, subprocess.run: 10 requests in $elapsed s"
check "v[0] >= 0.8" "the parent's connection is still paced" "$elapsed"
check "v[0] == 11" "every request is a sample" "$(stat_json api 'd["samples_total"]')"
