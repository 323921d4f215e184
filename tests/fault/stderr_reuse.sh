#!/bin/sh
# stderr_reuse.sh - the preload never writes into a descriptor the program
# reused for fd 2.
#
# A program that closes its stderr (daemons do, and so does anything run
# with 2>&-) gets number 2 back for its next socket, pipe or file.  The
# preload's messages went to fd 2 whatever it had become: here the program
# closes fd 2, opens a connection to a sink server (it gets fd 2), writes its
# own bytes on it, then connects to a configured destination while the state
# file cannot be created; the preload's one warning about that ("cannot use
# state file ...") went into the program's connection, and the sink
# received it in the middle of the program's data.  Now the constructor
# notes which file fd 2 is, and a message is written only while fd 2 is
# still that file.  The sink must receive exactly the program's bytes, and
# the same program with its stderr left open must still get the warning on
# stderr.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3

cat >"$tmp/sink.py" <<'PY'
import socket, sys, threading
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
out = open(sys.argv[2], "ab", buffering=0)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
import os
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
def serve(c):
    while True:
        d = c.recv(4096)
        if not d:
            break
        out.write(d)
    c.close()
s.settimeout(60)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
python3 "$tmp/sink.py" "$tmp/sink.port" "$tmp/sink.bytes" </dev/null 2>&1 &
started $!
sink=$(await_port "$tmp/sink.port")
port=$(start_httpd api)
export AGILE_DEST_API="127.0.0.1:$port max=100 floor=100"
export AGILE_STATE="$tmp/no-such-dir/state"

cat >"$tmp/client.py" <<'PY'
import os, socket, sys
sink, api, close_stderr = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
if close_stderr:
    os.close(2)
s = socket.create_connection(("127.0.0.1", sink))
if close_stderr:
    assert s.fileno() == 2, s.fileno()
s.sendall(b"program data 1\n")
t = socket.create_connection(("127.0.0.1", api))
t.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
assert t.recv(100).startswith(b"HTTP/")
t.close()
s.sendall(b"program data 2\n")
s.close()
PY
preloaded python3 "$tmp/client.py" "$sink" "$port" 1 2>"$tmp/err" ||
	fail "the client failed: $(cat "$tmp/err")"
i=0
while [ "$(wc -l <"$tmp/sink.bytes" 2>/dev/null || echo 0)" -lt 2 ]; do
	i=$((i + 1))
	[ "$i" -le 100 ] || break
	sleep 0.05
done
printf 'program data 1\nprogram data 2\n' >"$tmp/expected"
cmp -s "$tmp/sink.bytes" "$tmp/expected" ||
	fail "the program's connection on fd 2 received: $(cat "$tmp/sink.bytes")"
note "fd 2 reused by a socket: the peer got only the program's bytes"

# With stderr open, the warning is still said, once, on stderr.
: >"$tmp/sink.bytes"
preloaded python3 "$tmp/client.py" "$sink" "$port" 0 2>"$tmp/err" ||
	fail "the client failed with stderr open: $(cat "$tmp/err")"
grep -q "^agilepreload: cannot use state file" "$tmp/err" ||
	fail "no warning on an open stderr: $(cat "$tmp/err")"
check "v[0] == 1" "one line on stderr" "$(wc -l <"$tmp/err")"
note "stderr open: $(cat "$tmp/err")"
