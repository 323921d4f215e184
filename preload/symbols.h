/*
 * symbols.h - the real libc functions behind every hook, bound once.
 *
 * Each hook calls the next definition of its symbol (dlsym(RTLD_NEXT)), never
 * the raw syscall, so other preloads and libc's own bookkeeping (cancellation
 * points, fortify checks) keep working.  The table is filled once behind
 * pthread_once; after that a hook pays one load and a branch to reach it.
 *
 * agile__busy is the thread-local re-entrancy guard: it is set while the
 * preload runs its own code (opening the state file, logging, resolving a
 * configured hostname), so the libc calls made from there pass straight
 * through the hooks instead of being tracked or paced.
 */
#ifndef AGILE_PRELOAD_SYMBOLS_H
#define AGILE_PRELOAD_SYMBOLS_H

#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

/* The only symbols the preload exports: the hooks (see preload.map). */
#define AGILE_EXPORT __attribute__((visibility("default")))

struct agile_libc {
	int (*socket)(int, int, int);
	int (*connect)(int, const struct sockaddr *, socklen_t);
	ssize_t (*send)(int, const void *, size_t, int);
	ssize_t (*sendto)(int, const void *, size_t, int,
	                  const struct sockaddr *, socklen_t);
	ssize_t (*sendmsg)(int, const struct msghdr *, int);
	int (*sendmmsg)(int, struct mmsghdr *, unsigned int, int);
	ssize_t (*sendfile)(int, int, off_t *, size_t);
	ssize_t (*splice)(int, loff_t *, int, loff_t *, size_t, unsigned int);
	ssize_t (*write)(int, const void *, size_t);
	ssize_t (*writev)(int, const struct iovec *, int);
	ssize_t (*recv)(int, void *, size_t, int);
	ssize_t (*recvfrom)(int, void *, size_t, int, struct sockaddr *,
	                    socklen_t *);
	ssize_t (*recvmsg)(int, struct msghdr *, int);
	int (*recvmmsg)(int, struct mmsghdr *, unsigned int, int,
	                struct timespec *);
	ssize_t (*read)(int, void *, size_t);
	ssize_t (*readv)(int, const struct iovec *, int);
	ssize_t (*read_chk)(int, void *, size_t, size_t);
	ssize_t (*recv_chk)(int, void *, size_t, size_t, int);
	ssize_t (*recvfrom_chk)(int, void *, size_t, size_t, int,
	                        struct sockaddr *, socklen_t *);
	int (*close)(int);
	int (*close_range)(unsigned int, unsigned int, int);
	void (*closefrom)(int);
	int (*shutdown)(int, int);
	int (*dup)(int);
	int (*dup2)(int, int);
	int (*dup3)(int, int, int);
	int (*fcntl)(int, int, ...);
	int (*fcntl64)(int, int, ...);
	int (*getsockopt)(int, int, int, void *, socklen_t *);
	FILE *(*fdopen)(int, const char *);
	int (*fclose)(FILE *);
	int (*accept)(int, struct sockaddr *, socklen_t *);   /* inbound.c */
	int (*accept4)(int, struct sockaddr *, socklen_t *, int);
	int (*getaddrinfo)(const char *, const char *, const struct addrinfo *,
	                   struct addrinfo **);
	struct hostent *(*gethostbyname)(const char *);
};

/* The bound table; valid after agile__bind() returned. */
extern struct agile_libc agile__libc;
/* 1 once the table is filled. */
extern int agile__bound;
/* 1 when the preload must stay out of the way entirely (setuid program). */
extern int agile__disabled;
/* Re-entrancy guard, see above.  initial-exec: the preload is loaded at
 * start-up, so its TLS is static and reading it never calls malloc. */
extern __thread int agile__busy __attribute__((tls_model("initial-exec")));

void agile__bind_slow(void);

/* Whether the table is filled. */
static inline bool agile__is_bound(void)
{
	return __atomic_load_n(&agile__bound, __ATOMIC_ACQUIRE);
}

/* Fill the table on first use; afterwards one load and a branch. */
static inline void agile__bind(void)
{
	if (!agile__is_bound())
		agile__bind_slow();
}

/* The next syscall(), looked up on first use apart from the table: the
 * syscall hook must not bind the whole table, because syscall() is what
 * allocators and other low-level code call while the process is still
 * starting up (jemalloc reads its settings that way), possibly from inside
 * the binding itself, where pthread_once would wait on itself. */
long (*agile__next_syscall(void))(long, ...);

/* Enter and leave preload-internal code (see agile__busy). */
static inline void agile__enter(void) { agile__busy++; }
static inline void agile__leave(void) { agile__busy--; }

/*
 * Lower the guard for a wait, and raise it again after.  A program may leave
 * a blocking send or connect through a signal handler that calls
 * siglongjmp (alarm() as a timeout: POSIX allows it, both calls being
 * async-signal-safe), and when the preload is waiting for a grant there the
 * jump skips its agile__leave: a guard left up would pass every later call
 * of the thread straight through, unpaced and unseen
 * (tests/preload/longjmp.sh).  While it sleeps the thread runs none of the
 * preload's own libc calls, so a handler that runs meanwhile is treated like
 * the program it belongs to, and a jump out of it leaves the hooks working.
 */
static inline int agile__busy_suspend(void)
{
	int busy = agile__busy;

	agile__busy = 0;
	return busy;
}

static inline void agile__busy_resume(int busy) { agile__busy = busy; }

#endif /* AGILE_PRELOAD_SYMBOLS_H */
