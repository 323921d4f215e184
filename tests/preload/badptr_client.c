/*
 * badptr_client.c - every hooked call with bad pointers and bad lengths,
 * on sockets a rule matches and on sockets none does, printing each call's
 * return value and errno (tests/preload/badptr.sh runs it with and without
 * the preload and compares the two outputs line by line).
 *
 * The kernel answers a pointer it cannot read with EFAULT and a length it
 * will not take with EINVAL or EMSGSIZE; a hook that looked at the same
 * memory first killed the program with SIGSEGV instead: sendmsg(fd,
 * (void *)8, 0) and accept(fd, (void *)8, (void *)8) with no rule at all;
 * connect with a bad address, MSG_FASTOPEN with one, recvmsg with a bad
 * msghdr or iovec array, readv and writev with a bad array, and iovec
 * counts of 1 << 30 or 100,000 on a two-entry array on a matched socket
 * (issue 16, item 1).  Each case's name is printed before the call, so a
 * crash shows which.
 *
 * Usage: badptr_client UNMATCHED_PORT MATCHED_PORT.  The program listens
 * on both ports of 127.0.0.1 itself (non-blocking: a connection made by
 * connect() on loopback is already queued when it returns); the caller's
 * rules name the second, as a destination and as a listener.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

/* The bad arguments are the point: the compiler is not to refuse them. */
#pragma GCC diagnostic ignored "-Wpragmas"
#pragma GCC diagnostic ignored "-Wunknown-warning-option"
#pragma GCC diagnostic ignored "-Wstringop-overread"
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#pragma GCC diagnostic ignored "-Wnonnull"

/* The fortified variants, called by name as _FORTIFY_SOURCE builds do. */
ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen);
ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags,
                       struct sockaddr *addr, socklen_t *addrlen);

#define BAD ((void *)8)

static int listener[2];
static unsigned short ports[2];
static const char *kind_name;

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static struct sockaddr_in address_of(int kind)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
	                         .sin_port = htons(ports[kind]),
	                         .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	return a;
}

/* The server's end of the last pair, closed with the next one. */
static int server_end = -1;

/* A client socket connected to listener `kind`, with 64 bytes waiting to
 * be read on it. */
static int pair(int kind)
{
	struct sockaddr_in a = address_of(kind);
	char bytes[64];
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
		die("connect");
	if (server_end >= 0)
		close(server_end);
	server_end = accept(listener[kind], NULL, NULL);
	if (server_end < 0)
		die("accept");
	memset(bytes, 'x', sizeof(bytes));
	if (write(server_end, bytes, sizeof(bytes)) != sizeof(bytes))
		die("write");
	return fd;
}

/* Accept and close what a failed accept left pending on listener l. */
static void drain(int l)
{
	int fd;

	while ((fd = accept(l, NULL, NULL)) >= 0)
		close(fd);
}

static void report(long rc, int error, int is_fd)
{
	if (rc < 0)
		printf("-1 %s\n", strerrorname_np(error));
	else if (is_fd)
		printf("a descriptor\n");
	else
		printf("%ld\n", rc);
	fflush(stdout);
}

/* Run `expr` once on a fresh connected socket `fd` of the current kind. */
#define ON_PAIR(name, expr) do { \
	int fd = pair(kind); \
	long rc_; \
	printf("%s, %s: ", name, kind_name); \
	fflush(stdout); \
	errno = 0; \
	rc_ = (long)(expr); \
	report(rc_, errno, 0); \
	close(fd); \
} while (0)

/* Run `expr` once on a fresh unconnected stream socket `fd`. */
#define ON_FRESH(name, expr) do { \
	int fd = socket(AF_INET, SOCK_STREAM, 0); \
	long rc_; \
	printf("%s, %s: ", name, kind_name); \
	fflush(stdout); \
	errno = 0; \
	rc_ = (long)(expr); \
	report(rc_, errno, 0); \
	close(fd); \
} while (0)

/* Run `expr` on listener `l` of the current kind with one connection
 * pending on it (made by `c`, closed after). */
#define ON_LISTENER(name, is_fd, expr) do { \
	struct sockaddr_in a_ = address_of(kind); \
	int l = listener[kind]; \
	int c = socket(AF_INET, SOCK_STREAM, 0); \
	long rc_; \
	if (connect(c, (struct sockaddr *)&a_, sizeof(a_)) != 0) \
		die("connect"); \
	printf("%s, %s: ", name, kind_name); \
	fflush(stdout); \
	errno = 0; \
	rc_ = (long)(expr); \
	report(rc_, errno, is_fd); \
	if (rc_ >= 0) \
		close((int)rc_); \
	drain(l); \
	close(c); \
} while (0)

static void cases(int kind)
{
	struct sockaddr_in a = address_of(kind);
	struct sockaddr_storage big;
	char buf[64];
	struct iovec two[2] = { { buf, 8 }, { buf + 8, 8 } };
	struct iovec bad_base[2] = { { BAD, 8 }, { buf, 8 } };
	struct msghdr m;
	struct mmsghdr mm;
	socklen_t alen;
	int value;

#define MSG(iov_, n_) (m = (struct msghdr){ .msg_iov = (iov_), \
                                           .msg_iovlen = (n_) }, &m)

	/* connect: the address. */
	ON_FRESH("connect bad address", connect(fd, BAD, sizeof(a)));
	ON_FRESH("connect NULL address", connect(fd, NULL, sizeof(a)));
	ON_FRESH("connect bad address, length 0", connect(fd, BAD, 0));
	ON_FRESH("connect length 1000",
	         connect(fd, (struct sockaddr *)&big, 1000));
	ON_FRESH("connect address cut short",
	         connect(fd, (struct sockaddr *)&a, 3));

	/* send, sendto, write: the buffer. */
	ON_PAIR("send bad buffer", send(fd, BAD, 10, 0));
	ON_PAIR("send NULL buffer", send(fd, NULL, 10, 0));
	ON_PAIR("send bad buffer, length 0", send(fd, BAD, 0, 0));
	ON_PAIR("sendto bad buffer", sendto(fd, BAD, 10, 0, NULL, 0));
	ON_FRESH("sendto MSG_FASTOPEN bad address",
	         sendto(fd, buf, 10, MSG_FASTOPEN, BAD, sizeof(a)));
	ON_FRESH("sendto MSG_FASTOPEN length 1000",
	         sendto(fd, buf, 10, MSG_FASTOPEN,
	                (struct sockaddr *)&big, 1000));
	ON_PAIR("write bad buffer", write(fd, BAD, 10));

	/* sendmsg: the msghdr, its iovec array, the array's length. */
	ON_PAIR("sendmsg bad msghdr", sendmsg(fd, BAD, 0));
	ON_PAIR("sendmsg NULL msghdr", sendmsg(fd, NULL, 0));
	ON_PAIR("sendmsg bad iovec array", sendmsg(fd, MSG(BAD, 1), 0));
	ON_PAIR("sendmsg bad iov_base", sendmsg(fd, MSG(bad_base, 2), 0));
	ON_PAIR("sendmsg 1<<30 iovecs", sendmsg(fd, MSG(two, 1 << 30), 0));
	ON_PAIR("sendmsg 1<<32 iovecs", sendmsg(fd, MSG(two, 1UL << 32), 0));
	ON_PAIR("sendmsg 100000 iovecs in 2",
	        sendmsg(fd, MSG(two, 100000), 0));
	ON_PAIR("sendmsg IOV_MAX+1 iovecs",
	        sendmsg(fd, MSG(two, IOV_MAX + 1), 0));
	ON_FRESH("sendmsg MSG_FASTOPEN bad msghdr",
	         sendmsg(fd, BAD, MSG_FASTOPEN));
	ON_FRESH("sendmsg MSG_FASTOPEN bad address",
	         sendmsg(fd, (m = (struct msghdr){ .msg_name = BAD,
	                                           .msg_namelen = sizeof(a),
	                                           .msg_iov = two,
	                                           .msg_iovlen = 2 }, &m),
	                 MSG_FASTOPEN));
	ON_PAIR("sendmmsg bad vector", sendmmsg(fd, BAD, 1, 0));
	mm = (struct mmsghdr){ .msg_hdr = { .msg_iov = BAD, .msg_iovlen = 1 } };
	ON_PAIR("sendmmsg bad iovec array", sendmmsg(fd, &mm, 1, 0));

	/* writev: the array and its length. */
	ON_PAIR("writev bad iovec array", writev(fd, BAD, 1));
	ON_PAIR("writev bad iov_base", writev(fd, bad_base, 2));
	ON_PAIR("writev 1<<30 iovecs", writev(fd, two, 1 << 30));
	ON_PAIR("writev 100000 iovecs in 2", writev(fd, two, 100000));
	ON_PAIR("writev IOV_MAX+1 iovecs", writev(fd, two, IOV_MAX + 1));
	ON_PAIR("writev -1 iovecs", writev(fd, two, -1));

	/* The receives: the buffer, the msghdr, the array, the address. */
	ON_PAIR("recv bad buffer", recv(fd, BAD, 10, 0));
	ON_PAIR("recv bad buffer, MSG_PEEK", recv(fd, BAD, 10, MSG_PEEK));
	ON_PAIR("recvfrom bad buffer", recvfrom(fd, BAD, 10, 0, NULL, NULL));
	alen = sizeof(big);
	ON_PAIR("recvfrom bad address",
	        recvfrom(fd, buf, 10, 0, BAD, (alen = sizeof(big), &alen)));
	ON_PAIR("recvfrom bad address length",
	        recvfrom(fd, buf, 10, 0, (struct sockaddr *)&big, BAD));
	ON_PAIR("read bad buffer", read(fd, BAD, 10));
	ON_PAIR("recvmsg bad msghdr", recvmsg(fd, BAD, 0));
	ON_PAIR("recvmsg NULL msghdr", recvmsg(fd, NULL, 0));
	ON_PAIR("recvmsg bad iovec array", recvmsg(fd, MSG(BAD, 1), 0));
	ON_PAIR("recvmsg bad iov_base", recvmsg(fd, MSG(bad_base, 2), 0));
	ON_PAIR("recvmsg 1<<30 iovecs", recvmsg(fd, MSG(two, 1 << 30), 0));
	ON_PAIR("recvmsg 100000 iovecs in 2",
	        recvmsg(fd, MSG(two, 100000), 0));
	ON_PAIR("recvmsg IOV_MAX+1 iovecs",
	        recvmsg(fd, MSG(two, IOV_MAX + 1), 0));
	ON_PAIR("recvmmsg bad vector", recvmmsg(fd, BAD, 1, 0, NULL));
	mm = (struct mmsghdr){ .msg_hdr = { .msg_iov = two, .msg_iovlen = 2 } };
	ON_PAIR("recvmmsg bad timeout", recvmmsg(fd, &mm, 1, 0, BAD));
	ON_PAIR("readv bad iovec array", readv(fd, BAD, 1));
	ON_PAIR("readv bad iov_base", readv(fd, bad_base, 2));
	ON_PAIR("readv 1<<30 iovecs", readv(fd, two, 1 << 30));
	ON_PAIR("readv 100000 iovecs in 2", readv(fd, two, 100000));
	ON_PAIR("readv IOV_MAX+1 iovecs", readv(fd, two, IOV_MAX + 1));
	ON_PAIR("readv -1 iovecs", readv(fd, two, -1));
	ON_PAIR("__read_chk bad buffer", __read_chk(fd, BAD, 10, 10));
	ON_PAIR("__recv_chk bad buffer", __recv_chk(fd, BAD, 10, 10, 0));
	ON_PAIR("__recvfrom_chk bad buffer",
	        __recvfrom_chk(fd, BAD, 10, 10, 0, NULL, NULL));
	ON_PAIR("__recvfrom_chk bad address length",
	        __recvfrom_chk(fd, buf, 10, sizeof(buf), 0,
	                       (struct sockaddr *)&big, BAD));

	/* The rest: getsockopt's value and length, sendfile's offset,
	 * splice's, and the descriptor calls' bad numbers. */
	ON_PAIR("getsockopt SO_ERROR bad value",
	        getsockopt(fd, SOL_SOCKET, SO_ERROR, BAD,
	                   (alen = sizeof(value), &alen)));
	ON_PAIR("getsockopt SO_ERROR bad length",
	        getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, BAD));
	ON_PAIR("sendfile bad offset", sendfile(fd, 0, BAD, 10));
	ON_PAIR("splice bad offset", splice(fd, BAD, 1, NULL, 10, 0));
	ON_PAIR("shutdown bad how", shutdown(fd, 99));
	ON_PAIR("dup2 onto -1", dup2(fd, -1));
	ON_PAIR("dup3 bad flags", dup3(fd, fd + 100, 12345));
	ON_PAIR("fcntl F_DUPFD -1", fcntl(fd, F_DUPFD, -1));
	ON_PAIR("close_range backwards", close_range(fd + 10, fd + 5, 0));
	ON_PAIR("syscall close -1", syscall(SYS_close, -1));
	ON_FRESH("close -1", close(-1));

	/* accept and accept4: the address and its length. */
	ON_FRESH("accept on a socket not listening, bad pointers",
	         accept(fd, BAD, BAD));
	ON_FRESH("accept4 on a socket not listening, bad pointers",
	         accept4(fd, BAD, BAD, 0));
	ON_LISTENER("accept bad address", 1,
	            accept(l, BAD, (alen = sizeof(big), &alen)));
	ON_LISTENER("accept bad length", 1, accept(l, BAD, BAD));
	ON_LISTENER("accept4 bad length", 1,
	            accept4(l, (struct sockaddr *)&big, BAD, 0));
	ON_LISTENER("accept4 bad flags", 1,
	            accept4(l, (struct sockaddr *)&big, BAD, 12345));
#undef MSG
}

/*
 * A child made by a raw clone(2), with no CLONE_VM and no hook of the
 * preload's to see it (as a program calling syscall() makes one), sends
 * from a page it unmapped after the clone, which its parent still has
 * mapped.  The kernel answers EFAULT.  A preload that named the child's
 * memory by an id cached in the parent would ask the parent's memory,
 * find the page readable, read it, and die (usermem.c keeps that id in a
 * page the kernel zeroes in every child).
 */
static void raw_clone_case(void)
{
	char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
	                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long child;
	int status;

	if (page == MAP_FAILED)
		die("mmap");
	memset(page, 'x', 4096);
	printf("send from a page unmapped in a raw clone's child, matched: ");
	fflush(stdout);
	child = syscall(SYS_clone, (long)SIGCHLD, 0L, 0L, 0L, 0L);
	if (child < 0)
		die("clone");
	if (child == 0) {
		int fd = pair(1);
		long rc;

		munmap(page, 4096);
		errno = 0;
		rc = (long)send(fd, page, 64, 0);
		report(rc, errno, 0);
		_exit(0);
	}
	if (waitpid((pid_t)child, &status, 0) != (pid_t)child)
		die("waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		printf("the child ended with status %d\n", status);
	munmap(page, 4096);
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	for (int kind = 0; kind < 2; kind++) {
		struct sockaddr_in a;

		ports[kind] = (unsigned short)atoi(argv[1 + kind]);
		a = address_of(kind);
		listener[kind] = socket(AF_INET, SOCK_STREAM, 0);
		if (listener[kind] < 0 ||
		    setsockopt(listener[kind], SOL_SOCKET, SO_REUSEADDR,
		               &(int){ 1 }, sizeof(int)) != 0 ||
		    bind(listener[kind], (struct sockaddr *)&a,
		         sizeof(a)) != 0 ||
		    listen(listener[kind], 64) != 0 ||
		    fcntl(listener[kind], F_SETFL, O_NONBLOCK) != 0)
			die("listen");
	}
	kind_name = "unmatched";
	cases(0);
	kind_name = "matched";
	cases(1);
	raw_clone_case();
	return 0;
}
