/*
 * agilerun_seccomp.c - agilerun --seccomp: a seccomp filter in this
 * process, inherited through the exec by the command and everything it
 * starts, hands each connect(2) to a supervisor, the pacer
 * (libagilepacer.so, preload/pacer/pacer.c), which lets it go on when its
 * grant is due.  The pacer is a grandchild, so the
 * command keeps this process's id and is parent to nothing it did not
 * start; it leaves the terminal's session, so the terminal's signals go to
 * the command alone, and it ends when the last process under the filter
 * does.
 *
 * The handshake over a socket pair: the pacer loads its library and sends
 * its process id (it is ready: the rules read, the state file open); this
 * process installs the filter and sends the listener; the pacer answers one
 * byte once it holds it.  Until the filter is installed, any failure leaves
 * the command to run unpaced, with one line on stderr (under
 * AGILE_STRICT=1, not to run).  After, there is no going back: a connect
 * with no supervisor fails with ENOSYS, so agilerun exits rather than run
 * the command that way.
 */
#include "config.h"

#include <dlfcn.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "agilerun.h"
#include "pacer.h"

/* --seccomp cannot pace the command, for reason `why`: say so and run it
 * unpaced (false); under AGILE_STRICT=1, which never lets a command run
 * unthrottled for a problem it can report, exit 2 instead, as the preload
 * stops a program whose state file cannot be used. */
static bool unpaced(const char *why)
{
	const char *strict = getenv("AGILE_STRICT");

	if (strict != NULL && strcmp(strict, "1") == 0)
		errx(EXIT_CONFIG, "--seccomp: %s; AGILE_STRICT=1: not running "
		     "the command", why);
	warnx("--seccomp: %s; running unpaced", why);
	return false;
}

#if defined(__x86_64__)
#define PACER_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define PACER_ARCH AUDIT_ARCH_AARCH64
#endif

#ifdef PACER_ARCH
/* The offset of the low (0) or high (1) 32 bits of connect's fourth
 * argument in struct seccomp_data. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define MARK_WORD(high) \
	(offsetof(struct seccomp_data, args) + 3 * sizeof(uint64_t) + \
	 (high) * sizeof(uint32_t))
#else
#define MARK_WORD(high) \
	(offsetof(struct seccomp_data, args) + 3 * sizeof(uint64_t) + \
	 (1 - (high)) * sizeof(uint32_t))
#endif

/* The pacer's side of the handshake over socket `*arg`, called by the
 * library once it is ready: send our process id, take the listener,
 * acknowledge it.  The listener, or -1 when agilerun went on without us. */
static int pacer_handshake(void *arg)
{
	char byte = 1, control[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &byte, 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
	                      .msg_control = control,
	                      .msg_controllen = sizeof(control) };
	struct cmsghdr *cmsg;
	int sock = *(int *)arg, listener = -1;
	pid_t self = getpid();

	if (write(sock, &self, sizeof(self)) != (ssize_t)sizeof(self))
		return -1;
	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) == 1 &&
	    (cmsg = CMSG_FIRSTHDR(&msg)) != NULL &&
	    cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_RIGHTS)
		memcpy(&listener, CMSG_DATA(cmsg), sizeof(listener));
	if (listener >= 0 && write(sock, &byte, 1) != 1) {
		close(listener);
		listener = -1;
	}
	close(sock);
	return listener;
}

/* The pacer, in the grandchild, for the command that will run as process
 * `command`: never returns. */
static void __attribute__((noreturn)) pacer_main(int sock, const char *library,
                                                 pid_t command)
{
	int (*run)(int (*)(void *), void *, int);
	int null, watch;
	void *handle;

	/* Out of the terminal's session and process group: ^C, ^Z and a
	 * hang-up are the command's.  Nothing of agilerun's caller stays
	 * open in here but stderr, for the pacer's warnings, and that only
	 * while the command's first process runs (the library watches it
	 * through `watch`): a caller that reads the command's output until
	 * its end must not wait for us, nor for what the command left
	 * running, a daemon say, which the pacer goes on pacing. */
	setsid();
	prctl(PR_SET_NAME, (unsigned long)"agilerun-pacer", 0, 0, 0);
	signal(SIGPIPE, SIG_IGN);
	if (sock != 3) {
		if (dup2(sock, 3) < 0)
			_exit(EXIT_AGILERUN);
		sock = 3;
	}
	close_range(4, ~0U, 0);
#ifdef SYS_pidfd_open
	watch = (int)syscall(SYS_pidfd_open, command, 0);
#else
	(void)command;
	watch = -1;
#endif
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		close(null);
	}
	handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
	*(void **)&run = handle != NULL ? dlsym(handle, AGILE_PACER_SYMBOL)
	                                : NULL;
	if (run == NULL) {
		warnx("--seccomp: %s", dlerror());
		_exit(EXIT_AGILERUN);
	}
	/* The library reads the rules and opens the state file before it
	 * calls pacer_handshake: under AGILE_STRICT=1 a problem with either
	 * stops it there, before the filter is installed. */
	if (run(pacer_handshake, &sock, watch) < 0) {
		warn("--seccomp: the pacer stopped");
		_exit(EXIT_AGILERUN);
	}
	_exit(0);
}

/* Install the filter in this process; its listener, or -1 (errno set). */
static int install_filter(void)
{
	/* connect(2) of this architecture goes to the pacer unless its
	 * fourth argument carries the preload's mark (pacer.h); everything
	 * else is allowed. */
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		         offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PACER_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		         offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_connect, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, MARK_WORD(0)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
		         (uint32_t)AGILE_PACER_MARK, 0, 2),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, MARK_WORD(1)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
		         (uint32_t)(AGILE_PACER_MARK >> 32), 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {
		.len = (unsigned short)(sizeof(filter) / sizeof(filter[0])),
		.filter = filter,
	};
	/* Killable: once the pacer holds a connect, only a fatal signal
	 * ends its wait (Linux 5.19).  Otherwise every signal the program
	 * takes meanwhile (Go's preemption signals among them) would end
	 * it, and the restarted call would take a second grant. */
	unsigned long flags = SECCOMP_FILTER_FLAG_NEW_LISTENER |
	                      SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV;
	bool nnp = false;

	for (;;) {
		int fd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
		                      flags, &prog);

		if (fd >= 0)
			return fd;
		if (errno == EINVAL &&
		    (flags & SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV)) {
			flags &= ~(unsigned long)SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV;
			continue;
		}
		/* Without CAP_SYS_ADMIN a filter needs no_new_privs, which
		 * the command then keeps: a set-user-ID program it runs
		 * runs without its privileges (agilerun(1)). */
		if (errno == EACCES && !nnp) {
			if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
				return -1;
			nnp = true;
			if (agilerun_verbose)
				warnx("--seccomp: no_new_privs set");
			continue;
		}
		return -1;
	}
}

/* Start the pacer and install the filter: true when the command's
 * connects will be paced. */
bool agilerun_start_pacer(const char *library)
{
	char byte, control[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &byte, 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
	                      .msg_control = control,
	                      .msg_controllen = sizeof(control) };
	struct cmsghdr *cmsg;
	pid_t self = getpid(), middle, pacer;
	int sv[2], listener, status, error;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return unpaced(strerror(errno));
	middle = fork();
	if (middle < 0) {
		error = errno;
		close(sv[0]);
		close(sv[1]);
		return unpaced(strerror(error));
	}
	if (middle == 0) {
		close(sv[0]);
		if (fork() == 0)
			pacer_main(sv[1], library, self);
		_exit(0);
	}
	close(sv[1]);
	while (waitpid(middle, &status, 0) < 0 && errno == EINTR)
		continue;
	if (read(sv[0], &pacer, sizeof(pacer)) != (ssize_t)sizeof(pacer)) {
		close(sv[0]);
		return unpaced("the pacer did not start");
	}
	/* Under Yama's ptrace_scope 1 only an ancestor may read a process's
	 * memory; the pacer is none, so the command names it (kept across
	 * the exec).  Without Yama this fails, harmlessly. */
	prctl(PR_SET_PTRACER, (unsigned long)pacer, 0, 0, 0);
	listener = install_filter();
	if (listener < 0 && errno == EBUSY) {
		/* A process has one seccomp supervisor at most (the kernel
		 * refuses a second filter with a listener), and AGILE_SECCOMP
		 * says whose this one is: an outer agilerun --seccomp's pacer,
		 * which goes on pacing the command, by its own rules. */
		const char *outer = getenv("AGILE_SECCOMP");

		close(sv[0]);
		if (outer != NULL && strcmp(outer, "1") == 0) {
			warnx("--seccomp: already under an outer agilerun "
			      "--seccomp, whose pacer paces what the preload "
			      "cannot reach by its destinations; those given "
			      "here reach preloaded programs only");
			return true;
		}
		return unpaced("cannot install the filter: another seccomp "
		               "supervisor already watches this process");
	}
	if (listener < 0) {
		char why[128];

		snprintf(why, sizeof(why), "cannot install the filter (%s)",
		         strerror(errno));
		close(sv[0]); /* the pacer reads the end and exits */
		return unpaced(why);
	}
	memset(control, 0, sizeof(control));
	byte = 1;
	cmsg = CMSG_FIRSTHDR(&msg);
	cmsg->cmsg_level = SOL_SOCKET;
	cmsg->cmsg_type = SCM_RIGHTS;
	cmsg->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cmsg), &listener, sizeof(listener));
	if (sendmsg(sv[0], &msg, 0) != 1 || read(sv[0], &byte, 1) != 1)
		errx(EXIT_AGILERUN, "--seccomp: the pacer did not take the "
		     "filter's listener; not running the command, whose "
		     "connects would fail");
	close(listener);
	close(sv[0]);
	/* The preload in the command's processes marks its own connects
	 * for the filter (pacer.h). */
	agilerun_set_variable("AGILE_SECCOMP", "1");
	return true;
}
#else
bool agilerun_start_pacer(const char *library)
{
	(void)library;
	return unpaced("not supported on this architecture");
}
#endif
