#!/bin/sh
# torture.sh - fork, threads, dup2 and close-all never crash or leak fds.
#
# One Python process under the preload does everything a host program may
# do to its descriptors while requests are in flight on matched sockets:
# eight threads making requests on fresh connections; a socket dup2()ed onto
# another number, used through the copy and closed twice over; os.dup
# (fcntl F_DUPFD_CLOEXEC); forks from several threads at once whose children
# make requests of their own; a child that closes every descriptor
# (closerange) and then connects again; shutdown(SHUT_WR) before reading.
# Afterwards the process's /proc/self/fd must list exactly what it listed
# after its first request (the state file's descriptor is closed right after
# mapping it: nothing of the preload's stays open), every child must exit 0,
# and the same script without the preload must list the same descriptors.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3

port=$(start_httpd api)
export AGILE_DEST_API="127.0.0.1:$port max=400 floor=400 initial=400"
cat >"$tmp/torture.py" <<'PY'
import os, socket, sys, threading
port = int(sys.argv[1])
REQ = b"GET / HTTP/1.0\r\nHost: x\r\n\r\n"

def fds():
    return sorted(int(x) for x in os.listdir("/proc/self/fd"))

def request(shut=False):
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(REQ)
    if shut:
        s.shutdown(socket.SHUT_WR)
    data = b""
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    s.close()
    assert b"200" in data.split(b"\r\n")[0], data

request()
before = fds()
errors = []

def worker(n):
    try:
        for _ in range(n):
            request()
    except Exception as e:
        errors.append(repr(e))

threads = [threading.Thread(target=worker, args=(5,)) for _ in range(8)]
for t in threads: t.start()

# dup2 onto a fixed number, use the copy, close both.  (Blocking: a
# socket with a timeout is non-blocking underneath, and os.read on the copy
# would see EAGAIN.)
s = socket.create_connection(("127.0.0.1", port))
os.dup2(s.fileno(), 100)
os.write(100, REQ)
assert os.read(100, 4096).startswith(b"HTTP/")
os.close(100)
s.close()
# os.dup is fcntl(F_DUPFD_CLOEXEC) in CPython.
s = socket.create_connection(("127.0.0.1", port))
d = os.dup(s.fileno())
os.write(d, REQ)
assert os.read(d, 4096).startswith(b"HTTP/")
os.close(d)
s.close()
request(shut=True)

# Forks from several threads at once; each child makes a request.
children = []
lock = threading.Lock()
def forker():
    pid = os.fork()
    if pid == 0:
        try:
            request()
            os._exit(0)
        except Exception:
            os._exit(3)
    with lock:
        children.append(pid)
forkers = [threading.Thread(target=forker) for _ in range(4)]
for t in forkers: t.start()
for t in forkers: t.join()

# A child that closes everything (daemon style) and connects again.
pid = os.fork()
if pid == 0:
    try:
        os.closerange(3, 1 << 16)
        bare = fds()
        request()
        os._exit(0 if fds() == bare else 4)
    except Exception:
        os._exit(5)
children.append(pid)

for t in threads: t.join()
for pid in children:
    _, status = os.waitpid(pid, 0)
    if status != 0:
        errors.append("child exit status %d" % status)
after = fds()
if before != after:
    errors.append("fds before %s, after %s" % (before, after))
print(" ".join(map(str, after)))
if errors:
    print(errors, file=sys.stderr)
    sys.exit(1)
PY
with=$(preloaded python3 "$tmp/torture.py" "$port") || fail "torture under the preload failed"
without=$(python3 "$tmp/torture.py" "$port") || fail "torture without the preload failed"
note "fds after: with the preload [$with], without [$without]"
[ "$with" = "$without" ] || fail "the preload changed the descriptor table"
samples=$(stat_json api 'd["samples_total"]')
note "samples recorded: $samples"
# 1 + 40 + 2 + 1 + 4 + 1 requests in the preloaded run.
check "v[0] == 49" "every request of parent and children is a sample" "$samples"
