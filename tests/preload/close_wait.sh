#!/bin/sh
# close_wait.sh - a socket closed by another thread while a send waits for
# its grant: the send must not go to whatever reuses the number.
#
# A Python client at floor=max=1 uses up the grant with one request, then
# sends on a second connection, which waits about a second for its grant.
# Meanwhile another thread gives up on that connection (as a watchdog or a
# pool's reaper does): it closes it and at once opens something that takes
# the same descriptor number.  Without the preload the send would have gone
# out long before the close; with it, the send woke up on the new owner of
# the number and wrote the request there:
#   - a new connection to another server (not a configured destination),
#     which received the GET meant for the first one;
#   - a log file, which received the request's 35 bytes (through write()).
# Each send must now fail with EBADF, as a send after the close would, and
# the other server and the file receive nothing.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3

port=$(start_httpd paced)
other=$(start_httpd other)

cat >"$tmp/client.py" <<'PY'
import errno, os, socket, sys, threading, time
port, other, log = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
request = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"

def answer(s):
    data = b""
    while not data.endswith(b"ok\n"):
        chunk = s.recv(4096)
        if not chunk:
            sys.exit("end of file before the answer")
        data += chunk

first = socket.create_connection(("127.0.0.1", port))
first.sendall(request)
answer(first)   # the only grant of this second is spent

def round(replace, send):
    s = socket.create_connection(("127.0.0.1", port))
    fd = s.fileno()
    reused = []
    def reaper():
        time.sleep(0.3)
        s.close()
        reused.append(replace())
    t = threading.Thread(target=reaper)
    t.start()
    try:
        send(s, fd)
        outcome = "sent"
    except OSError as e:
        outcome = errno.errorcode.get(e.errno, str(e.errno))
    t.join()
    new = reused[0]
    new_fd = new.fileno() if hasattr(new, "fileno") else new
    if new_fd != fd:
        sys.exit("the number was not reused (%d, then %d)" % (fd, new_fd))
    return outcome, new

outcome, new = round(lambda: socket.create_connection(("127.0.0.1", other)),
                     lambda s, fd: s.send(request))
print("socket", outcome)
new.close()
outcome, new = round(lambda: os.open(log, os.O_WRONLY | os.O_CREAT, 0o600),
                     lambda s, fd: os.write(fd, request))
print("file", outcome)
os.close(new)
PY

export AGILE_DEST_PACED="127.0.0.1:$port max=1 floor=1 initial=1"
preloaded python3 "$tmp/client.py" "$port" "$other" "$tmp/victim.log" \
	>"$tmp/out" || fail "the client failed: $(cat "$tmp/out")"
cat "$tmp/out"
grep -qx 'socket EBADF' "$tmp/out" ||
	fail "a send whose socket was closed while it waited did not fail with EBADF"
grep -qx 'file EBADF' "$tmp/out" ||
	fail "a write whose socket was closed while it waited did not fail with EBADF"
sleep 0.2
check "v[0] == 0" "the other server received nothing" \
	"$(count_lines "$tmp/other.arrivals")"
check "v[0] == 0" "the file received nothing" \
	"$(wc -c <"$tmp/victim.log" | tr -d ' ')"
