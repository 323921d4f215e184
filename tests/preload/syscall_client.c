/*
 * syscall_client.c - syscall(2) through the preload's hook, called with as
 * few arguments as each number takes and with all six.
 *
 *     syscall_client
 *
 * The hook is syscall() itself (preload/hooks/hooks_socket.c), and it must pass
 * every call on unchanged whatever the number of arguments the caller
 * wrote: getpid with none, close with one, dup3 with three, mmap with six.
 * It used to read six longs with va_arg whatever the caller passed, and
 * under AddressSanitizer a caller that passed one read its own stack's
 * redzone: "stack-buffer-underflow" for syscall(SYS_close, fd).  The calls
 * are made from a function compiled without optimisation, whose locals
 * ASan keeps at the bottom of its frame on the real stack (when its fake
 * stack is off), where that read landed.  Exit 0 when every call did what
 * the system call does.
 */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__clang__)
#define UNOPTIMISED __attribute__((noinline, optnone))
#else
#define UNOPTIMISED __attribute__((noinline, optimize("O0")))
#endif

static int failures;

static void expect(const char *what, long got, long want)
{
	if (got != want) {
		fprintf(stderr, "%s: %ld, expected %ld\n", what, got, want);
		failures++;
	}
}

UNOPTIMISED static void calls(void)
{
	char buf[16];
	int pipe_fds[2];
	long rc;
#ifdef SYS_mmap
	void *map;
#endif

	memset(buf, 0, sizeof(buf));
	expect("getpid", syscall(SYS_getpid), getpid());
	if (pipe(pipe_fds) != 0) {
		perror("pipe");
		failures++;
		return;
	}
	rc = syscall(SYS_dup3, pipe_fds[0], 100, O_CLOEXEC);
	expect("dup3 onto 100", rc, 100);
	expect("100 is close-on-exec", fcntl(100, F_GETFD), FD_CLOEXEC);
	expect("close(100)", syscall(SYS_close, 100), 0);
	expect("100 closed", fcntl(100, F_GETFD), -1);
	expect("close(pipe)", syscall(SYS_close, pipe_fds[0]), 0);
	expect("close(pipe)", syscall(SYS_close, pipe_fds[1]), 0);
#ifdef SYS_mmap
	map = (void *)syscall(SYS_mmap, NULL, 4096, PROT_READ | PROT_WRITE,
	                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	expect("mmap", map == MAP_FAILED, 0);
	if (map != MAP_FAILED) {
		memcpy(map, buf, sizeof(buf));
		expect("munmap", syscall(SYS_munmap, map, 4096), 0);
	}
#endif
}

int main(void)
{
	calls();
	return failures == 0 ? 0 : 1;
}
