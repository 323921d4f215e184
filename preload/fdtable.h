/*
 * fdtable.h - per-descriptor state of the sockets the preload tracks.
 *
 * One entry per possible fd number, indexed directly: the question every
 * hook asks first ("is this fd a matched socket?") is one array load.  An
 * fd that is not a matched socket (a file, a pipe, an unmatched socket) has
 * tracked == 0 and its hook goes straight to libc.
 *
 * The table is sized from RLIMIT_NOFILE and mapped lazily, at the first
 * matched connect(), with MAP_NORESERVE: only the pages holding tracked
 * fds are ever touched.  A process that never connects to a configured
 * destination never allocates it.  An fd beyond the table (the program
 * raised its limit past the hard limit seen at start-up) is left untracked.
 *
 * A socket can also be closed where no hook sees it, and its number reused
 * by a file, a pipe or a new socket; its entry must not outlive it.  For a
 * dynamically linked program the ways are few, and each is handled where it
 * happens rather than checked for on every request:
 *   - fclose() of a stream made with fdopen() closes the descriptor inside
 *     libc: fclose is hooked (hooks_socket.c) and closes the entry first.
 *   - The other stdio path that closes a stream's descriptor inside libc,
 *     freopen() (glibc opens the new file and dup3()s it onto the stream's
 *     number), and any a future libc adds, are not hooked one by one:
 *     fdopen() marks the entry AGILE_FD_STDIO and records the socket's
 *     inode, and only marked entries have their inode compared with the
 *     descriptor's own (one fstat) before a request is paced, started or
 *     ended (preload/track/).  (glibc's fcloseall() flushes streams but
 *     closes no descriptor.)
 *   - syscall(SYS_close), SYS_close_range, SYS_dup2 and SYS_dup3 made
 *     through libc's syscall(): syscall is hooked for those numbers and
 *     does what close, close_range, dup2 and dup3 do.
 *   - close_range() and closefrom() are hooked like close().
 *   - A vfork child's closes are its own descriptors', not its parent's
 *     (process.h); they leave the table alone.
 * What remains unseen is what every other hook misses too: system calls
 * made with the syscall instruction itself (Go, a second C library) and
 * io_uring, whose sends and receives the preload never sees either.  Of
 * those, a number that dup(), dup2(), dup3() or fcntl(F_DUPFD,
 * F_DUPFD_CLOEXEC) then hands out through libc has its entry and its type
 * forgotten there (hooks_socket.c).
 *
 * Rejected: comparing every entry's inode with fstat() before each request
 * (as the preload did first).  It caught all of these at once, but cost two
 * system calls per request and four per connection-per-request: +13% of
 * redis-benchmark's CPU per request and +7% of ab's in
 * scripts/bench-overhead, against +2-5% and +3-9% for the whole matched
 * path without it.  getsockopt(SO_COOKIE) would cost the same system call.  Hooking
 * every call that creates a descriptor (open, openat, pipe, socket, accept,
 * eventfd, memfd_create, recvmsg with SCM_RIGHTS, ...) to forget a stale
 * entry when its number comes back is a long list that a raw system call
 * still bypasses, and costs every process on every open.  An epoch that
 * invalidates entries has nothing to count: every close the preload can
 * see is handled directly above.
 *
 * Entries are read and written with relaxed atomics: the usual owner of a
 * socket is one thread, but a reader thread and a writer thread may share
 * one, and the fields that hand a value from one to the other (the grant,
 * the request start) are claimed with an atomic exchange so each is used
 * exactly once.
 */
#ifndef AGILE_PRELOAD_FDTABLE_H
#define AGILE_PRELOAD_FDTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tls.h"

/* Where the socket's connection is. */
enum agile_fd_phase {
	AGILE_FD_CONNECTING = 0, /* connect() started, result not yet known */
	AGILE_FD_CONNECTED,      /* connected, or data moved */
	AGILE_FD_FAILED          /* the connect failed; a new connect() on the
	                            socket is a new attempt */
};

/* Where the socket's current request is. */
enum agile_fd_request {
	AGILE_REQ_GRANTED = 0, /* a grant is held for the next request; its
	                          planned time is in grant_ns until waited for */
	AGILE_REQ_IN_FLIGHT,   /* sent, no response byte read yet */
	AGILE_REQ_NEEDS_GRANT, /* pace=request: answered; the next send takes
	                          a new grant */
	AGILE_REQ_FREE         /* pace=connect: answered; the next send starts a
	                          request without a grant */
};

#define AGILE_FD_UNREACHABLE_COUNTED 0x1 /* unavailable recorded once */
/* The resilience features' per-socket marks (resilience_hook.c, http.c,
 * inbound.c), set and cleared with atomic or/and like the one above. */
#define AGILE_FD_BREAKER_OPEN 0x2 /* a breaker call awaits its outcome */
#define AGILE_FD_EXCLUDED 0x4     /* proto=http: the request in flight is to
                                     an excluded path; no sample */
#define AGILE_FD_INBOUND 0x8      /* a connection accepted on a listener
                                     (AGILE_LISTEN_): requests are read and
                                     responses written, nothing is paced */
#define AGILE_FD_SHED_OPEN 0x10   /* inbound: a shed=cpu call awaits its
                                     outcome */
#define AGILE_FD_STDIO 0x20       /* handed to stdio by fdopen(): may be
                                     closed inside libc, so stdio_inode is
                                     checked before the entry is trusted */
#define AGILE_FD_ABORT_PENDING 0x40 /* the failed connect was reported
                                       by SO_ERROR, a send or a receive:
                                       Linux answers the next connect() on
                                       the socket with ECONNABORTED (or the
                                       error itself) and only the one after
                                       tries again (track.c) */
#define AGILE_FD_TUNNEL 0x80 /* a proxy's handshake (HTTP CONNECT,
                                SOCKS) is under way: its answers are no
                                samples, and a ClientHello sent next
                                starts a TLS connection inside the tunnel
                                (track.c) */

#define AGILE_TLS_PLAIN_RETRY 0x2

struct agile_fd {
	uint8_t tracked;          /* 1: a matched stream socket */
	uint8_t phase;            /* enum agile_fd_phase */
	uint8_t request;          /* enum agile_fd_request */
	uint8_t flags;            /* AGILE_FD_* */
	int32_t dest;             /* rule index of the destination */
	int64_t grant_ns;         /* planned time of an unwaited grant, 0 none */
	int64_t grant_interval_ns; /* the bucket's spacing when grant_ns was
	                              planned (its wait moves it closer by a
	                              rise since), 0 unknown */
	int64_t request_start_ns; /* when the request in flight was sent */
	int64_t response_ns;      /* when its response became readable, seen
	                             while the sending thread waited for another
	                             socket's grant; 0 when not seen that way */
	int32_t permit;           /* concurrency permit held (index + 1) by
	                             this descriptor's process; 0 none */
	int32_t permit_tid;       /* the thread that acquired it */
	uint64_t conn_id;         /* which connection this is, unique in the
	                             process and shared by its duplicates: tells
	                             a duplicate from a new socket that reused
	                             the peer's number (close.c) */
	uint64_t stdio_inode;     /* AGILE_FD_STDIO: the socket's inode (fstat
	                             st_ino) at fdopen(), compared with the
	                             descriptor's own to notice a close inside
	                             libc */
	int32_t peer;             /* fd + 1 of the last descriptor this one was
	                             duplicated from or to; 0 none */
	uint8_t http2;            /* 1: the client sent HTTP/2's connection
	                             preface (http2.h) */
	uint8_t tls_plain;        /* not 0: the program's TLS library hands
	                             the preload the connection's plaintext
	                             (preload/hooks/tls_plain.h): its
	                             ciphertext sends and receives pass
	                             through, and the record walker is off;
	                             AGILE_TLS_PLAIN_RETRY: its last write
	                             failed, and the retry is not cut */
	uint16_t h2conn;          /* its entry in the side pool of HTTP/2
	                             connections (h2conn.h), 0 none */
	struct agile_tls tls;     /* the connection's TLS records (tls.h) */
	int64_t tls_start_ns;     /* TLS 1.3's first request, answered, whose
	                             round trip the ticket rule holds open: its
	                             start; 0 none (request.c) */
	int64_t tls_end_ns;       /* the first record's arrival: its end unless
	                             a record of another length comes */
	int64_t inbound_left;     /* a listener's proto=http: bytes of the
	                             response still to write before the
	                             request's permit returns
	                             (inbound_requests.c); AGILE_HTTP_CHUNKED,
	                             AGILE_HTTP_TO_CLOSE, 0 none */
	uint8_t inbound_head;     /* 1: the request in service is a HEAD */
	uint8_t inbound_shed;     /* inbound_shed.c's answer to the read
	                             just made (enum agile_inbound_recv) */
	uint8_t inbound_drain;    /* 1: answered and shut: drain before the
	                             close */
	uint8_t client_len;       /* client_rate=: bytes of client */
	uint8_t client[17];       /* the peer as client_prefix= names it
	                             (clients_hook.c) */
	uint64_t inflight_place;  /* inflight=: the place under its
	                             destination's cap the request in flight
	                             holds (preload/track/inflight.c); 0 none */
	uint16_t inbound_h2;      /* a listener's proto=http|grpc: its entry
	                             in the pool of HTTP/2 connections the
	                             program accepted (inbound_h2.h), 0 none */
};

extern struct agile_fd *agile__fd_table;
extern size_t agile__fd_table_size;

/* The entry of a tracked fd, or NULL: the fast path of every hook.
 * tracked is the entry's publication flag, loaded with acquire (a plain
 * load on x86): a thread that sees it set sees the fields written before
 * it was set, and a thread that sees it cleared by close sees the last
 * owner's accesses finished, so it may reinitialise the entry for a new
 * socket that got the same number. */
static inline struct agile_fd *agile__fd_lookup(int fd)
{
	struct agile_fd *table = __atomic_load_n(&agile__fd_table,
	                                         __ATOMIC_ACQUIRE);

	if (table == NULL || fd < 0 || (size_t)fd >= agile__fd_table_size)
		return NULL;
	if (!__atomic_load_n(&table[fd].tracked, __ATOMIC_ACQUIRE))
		return NULL;
	return &table[fd];
}

/* The entry for `fd`, mapping the table on first use; NULL when the table
 * cannot be mapped or fd is beyond it. */
struct agile_fd *agile__fd_entry(int fd);

/* A new connection id (see conn_id), for an entry being tracked. */
uint64_t agile__fd_new_conn_id(void);

/* Forget `fd` (closed, or reconnected elsewhere). */
void agile__fd_untrack(int fd);

/* Forget every tracked fd in [first, last] (close_range, closefrom). */
void agile__fd_untrack_range(unsigned int first, unsigned int last);

/*
 * Which descriptors are stream sockets the program made itself: a bit per
 * fd below AGILE_FD_TYPE_BITS, set by the socket() hook for a SOCK_STREAM
 * socket and cleared for any other, and cleared by every close, close_range,
 * closefrom, fclose and dup onto the number that the hooks see.  A first
 * connect() to a destination needs to know the socket is a stream one (a
 * datagram socket is never paced); a set bit answers that without the
 * getsockopt(SO_TYPE) system call (0.6-0.8 us here, +1.5% of ab's CPU per
 * connection in scripts/bench-overhead).  A clear bit only means "ask".
 *
 * A bit can be wrong only when its socket was closed where no hook sees it
 * (a raw system call) and the number then came back as a datagram socket
 * that was also made unseen (a raw system call, or received with
 * SCM_RIGHTS) and is connect()ed through libc to a destination: then that
 * socket's sends are paced as requests.  Made in a vfork child, whose
 * numbers are not its parent's, a socket sets no bit.
 *
 * The bitmap is in the preload's data (8 KiB, untouched until a socket is
 * made), shared by threads, updated with atomic or/and; fork copies it with
 * the descriptors, exec starts the new program with none set.
 */
#define AGILE_FD_TYPE_BITS 65536
extern uint64_t agile__fd_stream[AGILE_FD_TYPE_BITS / 64];

static inline bool agile__fd_known_stream(int fd)
{
	if (fd < 0 || fd >= AGILE_FD_TYPE_BITS)
		return false;
	return (__atomic_load_n(&agile__fd_stream[fd / 64], __ATOMIC_RELAXED) >>
	        (fd % 64)) & 1;
}

/* fd is a new socket: a stream one (stream) or not. */
static inline void agile__fd_note_socket(int fd, bool stream)
{
	uint64_t bit;

	if (fd < 0 || fd >= AGILE_FD_TYPE_BITS)
		return;
	bit = (uint64_t)1 << (fd % 64);
	if (stream)
		__atomic_fetch_or(&agile__fd_stream[fd / 64], bit,
		                  __ATOMIC_RELAXED);
	else if (__atomic_load_n(&agile__fd_stream[fd / 64],
	                         __ATOMIC_RELAXED) & bit)
		__atomic_fetch_and(&agile__fd_stream[fd / 64], ~bit,
		                   __ATOMIC_RELAXED);
}

/* fd is being closed or replaced: its type is no longer known. */
static inline void agile__fd_forget_type(int fd)
{
	agile__fd_note_socket(fd, false);
}

/* The same for every fd in [first, last] (close_range, closefrom). */
void agile__fd_forget_type_range(unsigned int first, unsigned int last);

#endif /* AGILE_PRELOAD_FDTABLE_H */
