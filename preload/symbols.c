/*
 * symbols.c - bind the real libc symbols once (see symbols.h).
 *
 * Binding is lazy: the first hook that runs, in whatever thread, fills the
 * table through pthread_once.  A constructor is not enough on its own,
 * because another library's constructor may call read() or close() before
 * ours runs.  A symbol the C library lacks stays NULL and its hook falls back
 * as documented there.
 */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "pacer.h"
#include "symbols.h"
#include "process.h"

struct agile_libc agile__libc;
int agile__bound;
int agile__disabled;
__thread int agile__busy __attribute__((tls_model("initial-exec")));

static pthread_once_t bind_once = PTHREAD_ONCE_INIT;

/*
 * connect(2) carrying the pacer's mark (pacer.h): what the hooks call for
 * connect in a process `agilerun --seccomp` started (AGILE_SECCOMP set, and
 * under a seccomp filter), so that its pacer does not pace a second time the
 * connections this library paces.  Made through libc's syscall(),
 * which, unlike connect(), is no cancellation point: a thread cancelled
 * while it connects under the filter is cancelled at its next one.
 */
static int marked_connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	return (int)agile__next_syscall()(SYS_connect, (long)fd, addr,
	                                  (long)len, AGILE_PACER_MARK);
}

#define BIND(field, name) \
	(*(void **)&agile__libc.field = dlsym(RTLD_NEXT, name))

static void bind_all(void)
{
	agile__enter();
	BIND(socket, "socket");
	BIND(connect, "connect");
	if (agile__env("AGILE_SECCOMP") != NULL &&
	    prctl(PR_GET_SECCOMP, 0, 0, 0, 0) == 2 && agile__next_syscall())
		agile__libc.connect = marked_connect;
	BIND(send, "send");
	BIND(sendto, "sendto");
	BIND(sendmsg, "sendmsg");
	BIND(sendmmsg, "sendmmsg");
	BIND(sendfile, "sendfile");
	BIND(splice, "splice");
	BIND(write, "write");
	BIND(writev, "writev");
	BIND(recv, "recv");
	BIND(recvfrom, "recvfrom");
	BIND(recvmsg, "recvmsg");
	BIND(recvmmsg, "recvmmsg");
	BIND(read, "read");
	BIND(readv, "readv");
	BIND(read_chk, "__read_chk");
	BIND(recv_chk, "__recv_chk");
	BIND(recvfrom_chk, "__recvfrom_chk");
	BIND(close, "close");
	BIND(close_range, "close_range");
	BIND(closefrom, "closefrom");
	BIND(shutdown, "shutdown");
	BIND(dup, "dup");
	BIND(dup2, "dup2");
	BIND(dup3, "dup3");
	BIND(fcntl, "fcntl");
	BIND(fcntl64, "fcntl64");
	BIND(getsockopt, "getsockopt");
	BIND(fdopen, "fdopen");
	BIND(fclose, "fclose");
	BIND(accept, "accept");
	BIND(accept4, "accept4");
	BIND(getaddrinfo, "getaddrinfo");
	BIND(gethostbyname, "gethostbyname");
	/* A program without fcntl64 in its libc still calls fcntl. */
	if (agile__libc.fcntl64 == NULL)
		agile__libc.fcntl64 = agile__libc.fcntl;
	agile__process_register_atfork();
	__atomic_store_n(&agile__bound, 1, __ATOMIC_RELEASE);
	agile__leave();
}

/* Threads racing to look it up store the same address. */
static long (*next_syscall)(long, ...);

long (*agile__next_syscall(void))(long, ...)
{
	long (*next)(long, ...) = __atomic_load_n(&next_syscall,
	                                          __ATOMIC_ACQUIRE);

	if (next == NULL) {
		*(void **)&next = dlsym(RTLD_NEXT, "syscall");
		__atomic_store_n(&next_syscall, next, __ATOMIC_RELEASE);
	}
	return next;
}

void agile__bind_slow(void)
{
	pthread_once(&bind_once, bind_all);
}
