#!/bin/sh
# fd_reuse.sh - a socket closed where no hook sees it leaves nothing behind.
#
# A C program makes a request through stdio (fdopen, fprintf, fgets,
# fclose: glibc writes, reads and closes the socket inside libc, where no
# hook sees it), then opens a file, which takes the socket's old number; it
# later closes a socket with the close system call itself and a pipe takes
# the number.  The preload used to keep the dead socket's entry: the file's
# and the pipe's writes waited for grants (20 at 4/s took 5 s) and their
# reads were timed as round trips, and a new socket to the same destination
# on that number was taken for the old one's second connect() and not paced
# at all (five stdio requests went out in 2 ms).  Now the socket's inode is
# checked before a request is paced, started or ended, and fdopen() waits
# for the connection's grant, since the stream's first write is invisible.
# At floor=max=4/s: the file and pipe I/O must take well under a second,
# the seven connections must each be paced (the server sees 4/s within 15%,
# the run takes at least 1.3 s) and counted, and the one request made with
# write/read must be the only sample.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
client=$builddir/tests/preload/fd_reuse_client
[ -x "$client" ] || fail "$client not built"

port=$(start_httpd api)
export AGILE_DEST_API="127.0.0.1:$port max=4 floor=4 initial=4"
start=$(python3 -c 'import time; print(time.monotonic())')
times=$(preloaded "$client" "$port" "$tmp/file") || fail "fd_reuse_client failed"
elapsed=$(python3 -c "import time; print(time.monotonic() - $start)")
file_s=${times% *}
pipe_s=${times#* }
n=$(count_lines "$tmp/api.arrivals")
rate=$(arrival_rate "$tmp/api.arrivals")
note "file I/O $file_s s, pipe I/O $pipe_s s; $n requests at $rate/s in $elapsed s"
check "v[0] < 1.0" "writes to a file on a reused number are not paced" "$file_s"
check "v[0] < 1.0" "writes to a pipe on a reused number are not paced" "$pipe_s"
check "v[0] == 7" "the server saw every request" "$n"
check "4 * 0.85 <= v[0] <= 4 * 1.15" "every connection was paced" "$rate"
check "v[0] >= 1.3" "seven connections at 4/s take 1.5 s" "$elapsed"
check "v[0] == 7" "every connection counted" "$(stat_json api 'd["connects"]')"
check "v[0] == 1" "only the write/read request is a sample" \
	"$(stat_json api 'd["samples_total"]')"
