#!/bin/sh
# limits.sh - what README.md and docs/design.md say about the calls the
# preload cannot see, checked: each case below behaves as written there.
#
# - Raw system calls (fault_client -r: socket, connect, sendto, recvfrom
#   and close through syscall(2), the way Go's runtime makes them): the
#   preload is mapped but sees nothing, so 10 requests at a configured 5/s
#   go out unthrottled and the state file is never created.
# - io_uring (uring_client, built here when liburing is installed): the
#   connect, send and receive are submitted through the ring; unthrottled
#   and unseen as well.
# - posix_spawn and vfork+exec: the child program loads the preload anew
#   from the environment it inherits, so it is throttled, through the same
#   budget as its parent: a preloaded Python makes 5 requests, starts the
#   C client with os.posix_spawn (5 more) and then with subprocess
#   (vfork+exec, 5 more); all 15 share floor=max=10/s (at least 1.3 s) and
#   are counted in one slot.  (vfork.sh checks that a vfork child's closes
#   leave the parent's sockets tracked.)
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/fault/lib.sh"
need python3

port=$(start_server http api)
export AGILE_DEST_API="127.0.0.1:$port max=5 floor=5 initial=5"
out=$(preloaded "$CLIENT" -r -n 10 "$port") || fail "raw system calls: $out"
note "raw system calls: $out"
set -- $out
check "v[0] < 1.0" "raw system calls are not throttled" "$6"
check "v[0] == 1" "though the preload is mapped" "${14}"
[ ! -e "$AGILE_STATE" ] || fail "raw system calls reached the state file"

if [ -f /usr/include/liburing.h ] && command -v cc >/dev/null 2>&1 &&
   cc -O2 -o "$tmp/uring_client" "$srcdir/tests/fault/uring_client.c" \
	-luring 2>"$tmp/cc.err"; then
	status=0
	out=$(preloaded "$tmp/uring_client" "$port" 10) || status=$?
	if [ "$status" -eq 77 ]; then
		note "NOT RUN: io_uring is not available here"
	else
		[ "$status" -eq 0 ] || fail "io_uring: $out"
		note "io_uring: $out"
		set -- $out
		check "v[0] < 1.0" "io_uring is not throttled" "$6"
		[ ! -e "$AGILE_STATE" ] || fail "io_uring reached the state file"
	fi
else
	note "NOT RUN: io_uring (liburing-dev is not installed)"
fi

export AGILE_DEST_API="127.0.0.1:$port max=10 floor=10 initial=10"
cat >"$tmp/spawn.py" <<'PY'
import os, socket, subprocess, sys, time
client, port = sys.argv[1], sys.argv[2]
def request():
    s = socket.create_connection(("127.0.0.1", int(port)))
    s.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
    while s.recv(4096):
        pass
    s.close()
start = time.monotonic()
for _ in range(5):
    request()
pid = os.posix_spawn(client, [client, "-n", "5", port], os.environ,
                     file_actions=[(os.POSIX_SPAWN_OPEN, 1, "/dev/null",
                                    os.O_WRONLY, 0)])
_, status = os.waitpid(pid, 0)
assert status == 0, status
subprocess.run([client, "-n", "5", port], check=True, stdout=subprocess.DEVNULL)
print("%.3f" % (time.monotonic() - start))
PY
elapsed=$(preloaded python3 "$tmp/spawn.py" "$CLIENT" "$port") ||
	fail "posix_spawn and subprocess: $elapsed"
note "5 requests, then 5 from a posix_spawn child and 5 from a subprocess: $elapsed s"
check "v[0] >= 1.3" "the children share the parent's budget" "$elapsed"
check "v[0] == 15" "in one slot" "$(stat_json api 'd["connects"]')"
