#!/bin/sh
# stderr_socket.sh - the preload's messages never raise SIGPIPE and never go
# into a socket on fd 2; agilestat says them instead (issue 16, item 4).
#
# A program whose stderr is a pipe nobody reads any more (`prog 2>&1 |
# head -1`, head gone) and which keeps SIGPIPE's default action was killed
# by the preload's own warning: the write raised SIGPIPE (exit status 141).
# And a program started with a socket as fds 0 to 2 (inetd, a socket-
# activated service) had the warning injected into its peer's byte stream.
# Each program here gets one warning (a key the rule does not have) and
# must exit 0; the socket's peer must receive exactly the program's bytes;
# agilestat must count the two messages and show the last.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3

port=$(start_httpd api)
export AGILE_DEST_API="127.0.0.1:$port max=100 floor=100 nosuchkey=1"

cat >"$tmp/client.py" <<'PY'
import signal, socket, sys, time
signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # as a C program has it
time.sleep(float(sys.argv[2]))  # the pipe's reader is gone by then
t = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
t.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
assert t.recv(100).startswith(b"HTTP/")
t.close()
PY

# stderr a pipe whose reader has exited.
{ preloaded python3 "$tmp/client.py" "$port" 0.3 2>&1 &&
	echo 0 >"$tmp/status" || echo $? >"$tmp/status"; } | true
status=$(cat "$tmp/status")
check "v[0] == 0" "the program's exit status with stderr a closed pipe" "$status"
note "stderr a closed pipe: exit status $status"

# stdin, stdout and stderr a TCP connection to a sink, as inetd gives them.
cat >"$tmp/sink.py" <<'PY'
import os, socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
s.settimeout(30)
c, _ = s.accept()
c.settimeout(30)
data = b""
while True:
    d = c.recv(4096)
    if not d:
        break
    data += d
open(sys.argv[2], "wb").write(data)
PY
python3 "$tmp/sink.py" "$tmp/sink.port" "$tmp/sink.bytes" </dev/null 2>&1 &
started $!
sink=$(await_port "$tmp/sink.port")
python3 - "$sink" "$PRELOAD" "$tmp/client.py" "$port" <<'PY' ||
import os, socket, sys
sink, preload, client, port = sys.argv[1:]
s = socket.create_connection(("127.0.0.1", int(sink)))
for fd in (0, 1, 2):
    os.dup2(s.fileno(), fd)
s.close()
pid = os.fork()
if pid == 0:
    os.environ["LD_PRELOAD"] = preload
    os.execvp("sh", ["sh", "-c",
                     'echo "program data" && python3 "$0" "$1" 0 && '
                     'echo "program done"', client, port])
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
PY
	fail "the program on a socket failed"
await_file "$tmp/sink.bytes" "the sink received nothing"
printf 'program data\nprogram done\n' >"$tmp/expected"
cmp -s "$tmp/sink.bytes" "$tmp/expected" ||
	fail "the socket's peer received: $(cat "$tmp/sink.bytes")"
note "fd 2 a socket: the peer got only the program's bytes"

"$AGILESTAT" >"$tmp/table"
unsaid=$(stat_json api 'j["unsaid"]')
check "v[0] == 2" "messages counted for agilestat" "$unsaid"
grep -q "could not be written to a program's stderr.*nosuchkey" "$tmp/table" ||
	fail "agilestat does not show the message: $(cat "$tmp/table")"
note "agilestat: $(grep "could not be written" "$tmp/table")"
