#!/bin/sh
# fd_reuse.sh - a socket closed where the close hook does not see it leaves
# nothing behind.
#
# A C program makes a request through stdio (fdopen, fprintf, fgets,
# fclose: glibc writes, reads and closes the socket inside libc), then opens
# a file, which takes the socket's old number; it later closes a socket with
# syscall(SYS_close) and a Unix socket pair takes the number.  The preload
# used to keep the dead socket's entry: the file's and the pair's writes
# waited for grants (20 at 4/s took 5 s) and their reads were timed as round
# trips, and a new socket to the same destination on that number was taken
# for the old one's second connect() and not paced at all (five stdio
# requests went out in 2 ms).  That was fixed by comparing each socket's
# inode with fstat() before every request, two system calls per request;
# now the closes themselves are seen: fclose is hooked, and so is syscall()
# for SYS_close, SYS_close_range, SYS_dup2 and SYS_dup3, which the program
# also uses, each followed by file I/O on the number.  freopen() on a stdio
# socket replaces the descriptor inside libc (glibc dup3()s the new file
# onto its number), unseen: a socket handed to fdopen() is the only kind
# whose inode is still checked.  Last, under concurrency=1, a stdio socket's
# permit must come back at its fclose, before any hook sees its number
# again.  fdopen() waits for the connection's grant, since the stream's
# first write is invisible.
# At floor=max=4/s: every plain-I/O step must take well under a second, the
# thirteen connections must each be paced (the server sees 4/s within 15%,
# the run takes at least 2.7 s) and counted, and the five requests made
# with write/read must be the only samples.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
client=$builddir/tests/preload/fd_reuse_client
[ -x "$client" ] || fail "$client not built"

port=$(start_httpd api)
export AGILE_DEST_API="127.0.0.1:$port max=4 floor=4 initial=4 concurrency=1 acquire_timeout=2s"
start=$(python3 -c 'import time; print(time.monotonic())')
times=$(preloaded "$client" "$port" "$tmp/file") || fail "fd_reuse_client failed"
elapsed=$(python3 -c "import time; print(time.monotonic() - $start)")
n=$(count_lines "$tmp/api.arrivals")
rate=$(arrival_rate "$tmp/api.arrivals")
note "plain I/O seconds (file, socket pair, close_range, dup2, dup3, freopen): $times; $n requests at $rate/s in $elapsed s"
set -- $times
check "v[0] < 1.0" "writes to a file on a number stdio closed are not paced" "$1"
check "v[0] < 1.0" "writes to a socket pair on a number SYS_close closed are not paced" "$2"
check "v[0] < 1.0" "writes to a file on a number SYS_close_range closed are not paced" "$3"
check "v[0] < 1.0" "writes to a file SYS_dup2 put on a socket's number are not paced" "$4"
check "v[0] < 1.0" "writes to a file SYS_dup3 put on a socket's number are not paced" "$5"
check "v[0] < 1.0" "writes to a file freopen put on a socket's number are not paced" "$6"
check "v[0] == 13" "the server saw every request" "$n"
check "4 * 0.85 <= v[0] <= 4 * 1.15" "every connection was paced" "$rate"
check "v[0] >= 2.7" "thirteen connections at 4/s take 3 s" "$elapsed"
check "v[0] == 13" "every connection counted" "$(stat_json api 'd["connects"]')"
check "v[0] == 5" "only the write/read requests are samples" \
	"$(stat_json api 'd["samples_total"]')"

# Python closes its sockets through close() whatever wraps them: a
# makefile() stream (a socket.SocketIO, not stdio), os.fdopen() of a
# detached socket (io.FileIO), and os.close() of a detached number.  None
# needs the inode check; after each, a file on the number must be plain I/O
# and the next connection paced.  Five connections at 4/s.
rm -f "$AGILE_STATE"
pyport=$(start_httpd py)
export AGILE_DEST_PY="127.0.0.1:$pyport max=4 floor=4 initial=4"
unset AGILE_DEST_API
cat >"$tmp/reuse.py" <<'PY'
import os, socket, sys, time
port, path = int(sys.argv[1]), sys.argv[2]
REQUEST = b"GET /py HTTP/1.0\r\nHost: x\r\n\r\n"

def file_io(number):
    """20 writes and reads on a file that must take `number`; seconds."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    assert fd == number, "the file got fd %d, not %d" % (fd, number)
    start = time.monotonic()
    for _ in range(20):
        os.write(fd, b"line\n")
        os.lseek(fd, 0, os.SEEK_SET)
        os.read(fd, 5)
    os.close(fd)
    return time.monotonic() - start

def makefile():
    s = socket.create_connection(("127.0.0.1", port))
    number = s.fileno()
    f = s.makefile("rwb")
    f.write(REQUEST)
    f.flush()
    assert f.readline().startswith(b"HTTP/")
    f.read()
    f.close()
    s.close()
    return number

def fdopen():
    s = socket.create_connection(("127.0.0.1", port))
    f = os.fdopen(s.detach(), "r+b", buffering=0)
    number = f.fileno()
    f.write(REQUEST)
    assert f.read(5) == b"HTTP/"
    while f.read(4096):
        pass
    f.close()
    return number

def detached():
    s = socket.create_connection(("127.0.0.1", port))
    number = s.detach()
    os.write(number, REQUEST)
    assert os.read(number, 5) == b"HTTP/"
    while os.read(number, 4096):
        pass
    os.close(number)
    return number

times = [file_io(case()) for case in (makefile, fdopen, detached, makefile,
                                      fdopen)]
print(" ".join("%.3f" % t for t in times))
PY
start=$(python3 -c 'import time; print(time.monotonic())')
times=$(preloaded python3 "$tmp/reuse.py" "$pyport" "$tmp/pyfile") ||
	fail "the Python client failed"
elapsed=$(python3 -c "import time; print(time.monotonic() - $start)")
note "Python: plain I/O seconds after makefile, fdopen, detach+close, makefile, fdopen: $times; $elapsed s"
for t in $times; do
	check "v[0] < 1.0" "Python: writes to a file on a closed socket's number are not paced" "$t"
done
check "v[0] == 5" "Python: every connection counted" "$(stat_json py 'd["connects"]')"
check "4 * 0.85 <= v[0] <= 4 * 1.15" "Python: every connection was paced" \
	"$(arrival_rate "$tmp/py.arrivals")"
check "v[0] >= 0.9" "Python: five connections at 4/s take 1 s" "$elapsed"
