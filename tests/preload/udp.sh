#!/bin/sh
# udp.sh - a datagram socket connected to a destination is never tracked.
#
# Only stream sockets are paced.  The first connect() of a socket the
# program made with socket() knows its type from the socket() hook, not
# from a getsockopt(SO_TYPE) (preload/fdtable.h); here every way the
# remembered type could outlive its socket is tried: the number of a stream
# socket comes back as a datagram socket after close(), dup2(), and, with
# the new socket made by a raw socket system call that no hook sees, after
# close_range() and raw close and close_range system calls; and after raw
# dup2 and dup3 system calls (udp_client.c).  Each sends 40 datagrams to
# the destination.  Then one stream socket connects to the same port over
# TCP.  The destination must count exactly that one connection (a datagram
# socket taken for a stream one counts one more each).  The raw system
# calls go through the preload's syscall() hook, which forgets the types
# once, before the call (hooks_socket.c): without that, the raw close,
# close_range, dup2 and dup3 ways each count one more.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
client=$builddir/tests/preload/udp_client
[ -x "$client" ] || fail "$client not built"

# A port number free for both UDP and TCP.
port=$(python3 -c 'import socket
for _ in range(100):
    u = socket.socket(type=socket.SOCK_DGRAM); u.bind(("127.0.0.1", 0))
    p = u.getsockname()[1]
    t = socket.socket()
    try:
        t.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        t.close(); u.close()
    print(p); break')
[ -n "$port" ] || fail "no port free for both UDP and TCP"
export AGILE_DEST_DNS="127.0.0.1:$port max=5 floor=5 initial=5"
out=$(preloaded "$client" "$port" 40) || fail "udp_client failed"
note "${out% *} x 40 datagrams in ${out#* } s"
check "v[0] == 1" "only the stream socket is tracked" \
	"$(stat_json dns 'd["connects"]')"
