/*
 * usermem.c - reading the host program's memory without faulting (see
 * usermem.h).
 *
 * Hand-written because no library offers it: the kernel is the only thing
 * that can say whether a range is readable without a signal, and a SIGSEGV
 * handler is out of the question in a guest library (it would take the
 * program's own).  Readability is a property of pages, so a range is
 * checked by asking about one byte of each page it touches, in one of two
 * ways:
 *
 *   - rt_sigprocmask(2) given an invalid `how`, one call per page: the
 *     kernel copies the page's first 8 bytes in as the set (EFAULT when it
 *     cannot) before it rejects `how` (EINVAL), and changes nothing;
 *   - process_vm_readv(2) on this very process (always permitted: no
 *     ptrace check applies to one's own address space), one call for up to
 *     PROBE_BATCH pages (a 1 MiB send touches 257 pages: two calls).
 *
 * process_vm_readv pins the pages it reads: on this project's machine
 * (KVM, Linux 6.18) one byte of one's own costs it 1.5 us of CPU, where
 * the probe costs 0.22 us, about what any trivial system call does
 * (scripts/bench-hotpath), and a send's check was most of what the preload
 * added to a redis request.  So up to PROBE_PAGES_MAX pages are probed one
 * by one, more go in one process_vm_readv, and every page is probed where a
 * seccomp filter refuses process_vm_readv.  Not under Valgrind: memcheck
 * checks the probe's 8 bytes, and would report the program's own
 * uninitialised bytes near a buffer as errors.
 *
 * The process's own id for process_vm_readv is cached in a page of its own
 * that the kernel zeroes in every child (MADV_WIPEONFORK, Linux 4.14): a
 * fork, or a raw clone(2) without CLONE_VM that no hook of the preload saw,
 * reads 0 there and asks getpid() once; a thread, a vfork child or a
 * CLONE_VM child shares the memory, and the id of the process whose memory
 * it is is the right one to read it through.  A getpid() per check was
 * half of the system calls the preload added to a send.  Without the page
 * (an older kernel, a filter refusing madvise) each such check asks
 * getpid().
 *
 * Rejected: msync(2) and mincore(2), one call for a whole range, say
 * whether pages are mapped but not whether they may be read (a PROT_NONE
 * guard page passes); reading through /proc/self/mem needs a descriptor
 * the program would see.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "symbols.h"
#include "usermem.h"

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define AGILE_UNDER_VALGRIND() (RUNNING_ON_VALGRIND != 0)
#endif
#endif
#ifndef AGILE_UNDER_VALGRIND
#define AGILE_UNDER_VALGRIND() false
#endif

/* Permissions are per page, and every Linux page size is a multiple of
 * this: probing every 4 KiB checks each page at least once. */
#define PROBE_STEP 4096u
/* Pages asked about per process_vm_readv: its remote iovec array, 4 KiB,
 * on the stack. */
#define PROBE_BATCH 256

/* 1 once process_vm_readv has failed with anything but EFAULT (ENOSYS,
 * EPERM from a seccomp filter): the fallback is used from then on. */
static int vm_read_refused;

/* The wipe-on-fork page holding the cached process id, NULL none; set up
 * by the first check (pid_page_tried: by one thread only). */
static pid_t *pid_page;
static int pid_page_tried;

static void pid_page_init(void)
{
#ifdef MADV_WIPEONFORK
	void *p = mmap(NULL, PROBE_STEP, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return;
	if (madvise(p, PROBE_STEP, MADV_WIPEONFORK) != 0) {
		munmap(p, PROBE_STEP);
		return;
	}
	__atomic_store_n(&pid_page, (pid_t *)p, __ATOMIC_RELEASE);
#endif
}

/* The id to name this process's memory by (see the top).  errno is the
 * caller's to keep. */
static pid_t self_pid(void)
{
	pid_t *page = __atomic_load_n(&pid_page, __ATOMIC_ACQUIRE);
	pid_t pid;

	if (page == NULL) {
		if (__atomic_exchange_n(&pid_page_tried, 1, __ATOMIC_ACQ_REL))
			return getpid();
		pid_page_init();
		page = __atomic_load_n(&pid_page, __ATOMIC_ACQUIRE);
		if (page == NULL)
			return getpid();
	}
	pid = __atomic_load_n(page, __ATOMIC_RELAXED);
	if (pid == 0) {
		pid = getpid();
		__atomic_store_n(page, pid, __ATOMIC_RELAXED);
	}
	return pid;
}

/* Is the page holding p readable (the probe)?  Never the first page: its
 * address, 0, would tell the kernel there is no set to copy in (and Linux
 * maps nothing there, vm.mmap_min_addr). */
static bool page_readable(uintptr_t p)
{
	uintptr_t page = p & ~(uintptr_t)(PROBE_STEP - 1);

	if (page == 0)
		return false;
	return agile__next_syscall()(SYS_rt_sigprocmask, -1L, (long)page, 0L,
	                             (long)(_NSIG / 8)) != -1 ||
	       errno != EFAULT;
}

/* Whether n pages are checked one by one (see the top): 1 yes, 0 no;
 * decided once whether Valgrind runs the process. */
#define PROBE_PAGES_MAX 4
static int probe_allowed = -1;

static bool probe_one_by_one(int n)
{
	int allowed = __atomic_load_n(&probe_allowed, __ATOMIC_RELAXED);

	if (allowed < 0) {
		allowed = AGILE_UNDER_VALGRIND() ? 0 : 1;
		__atomic_store_n(&probe_allowed, allowed, __ATOMIC_RELAXED);
	}
	return (allowed && n <= PROBE_PAGES_MAX) ||
	       __atomic_load_n(&vm_read_refused, __ATOMIC_RELAXED);
}

/* The probes of `batch` in one call: 1 all readable, 0 one is not, -1 the
 * call itself is refused. */
static int probe_batch(struct iovec *remote, int n)
{
	char sink[PROBE_BATCH];
	struct iovec local = { sink, (size_t)n };
	ssize_t got;

	if (probe_one_by_one(n)) {
		for (int i = 0; i < n; i++)
			if (!page_readable((uintptr_t)remote[i].iov_base))
				return 0;
		return 1;
	}
	got = process_vm_readv(self_pid(), &local, 1, remote, (unsigned long)n,
	                       0);
	if (got == n)
		return 1;
	if (got >= 0 || errno == EFAULT)
		return 0;
	__atomic_store_n(&vm_read_refused, 1, __ATOMIC_RELAXED);
	return -1;
}

/* A set of ranges being checked: probes gathered until a batch is full. */
struct probes {
	struct iovec remote[PROBE_BATCH];
	int n;
	bool bad;
};

static void flush(struct probes *p)
{
	int rc;

	if (p->n == 0 || p->bad)
		return;
	rc = probe_batch(p->remote, p->n);
	if (rc < 0)
		rc = probe_batch(p->remote, p->n); /* by the fallback */
	p->bad = rc == 0;
	p->n = 0;
}

/* Add the pages of [base, base + len) to the check. */
static void add_range(struct probes *p, const void *base, size_t len)
{
	uintptr_t at = (uintptr_t)base;
	uintptr_t last;

	if (len == 0 || p->bad)
		return;
	if (at + len - 1 < at) { /* wraps around the address space */
		p->bad = true;
		return;
	}
	last = at + len - 1;
	for (;;) {
		if (p->n == PROBE_BATCH)
			flush(p);
		if (p->bad)
			return;
		p->remote[p->n++] = (struct iovec){ (void *)at, 1 };
		/* The next page's first byte, if the range reaches it. */
		at = (at & ~(uintptr_t)(PROBE_STEP - 1)) + PROBE_STEP;
		if (at == 0 || at > last)
			return;
	}
}

static bool finish(struct probes *p)
{
	flush(p);
	return !p->bad;
}

int agile__copy_in(void *dst, const void *src, size_t n)
{
	int saved = errno;
	struct iovec local = { dst, n };
	struct iovec remote = { (void *)src, n };
	int rc = 0;

	if (n == 0)
		return 0;
	if (!probe_one_by_one((int)((n + PROBE_STEP - 1) / PROBE_STEP + 1))) {
		ssize_t got = process_vm_readv(self_pid(), &local, 1, &remote, 1,
		                               0);

		if (got == (ssize_t)n) {
			errno = saved;
			return 0;
		}
		if (got >= 0 || errno == EFAULT) {
			errno = saved;
			return -EFAULT;
		}
		__atomic_store_n(&vm_read_refused, 1, __ATOMIC_RELAXED);
	}
	{
		struct probes p;

		p.n = 0;
		p.bad = false;

		add_range(&p, src, n);
		if (finish(&p))
			memcpy(dst, src, n);
		else
			rc = -EFAULT;
	}
	errno = saved;
	return rc;
}

bool agile__iov_array_readable(const struct iovec *iov, long count)
{
	struct probes p;
	int saved = errno;
	bool ok;

	if (count < 0 || count > IOV_MAX)
		return false;
	/* Not zeroed whole: the batch is filled before it is read. */
	p.n = 0;
	p.bad = false;
	add_range(&p, iov, (size_t)count * sizeof(*iov));
	ok = finish(&p);
	errno = saved;
	return ok;
}

/* The common send: one buffer on at most two pages, asked without the
 * ranges' batch and probe_batch's sink (callgrind: those cost
 * redis-benchmark 500, then about 100, instructions a request,
 * tests/fault/instructions.sh).  -1 when process_vm_readv is refused. */
static int one_buffer_readable(const void *base, size_t len)
{
	uintptr_t at = (uintptr_t)base, last = at + len - 1;
	uintptr_t next = (at & ~(uintptr_t)(PROBE_STEP - 1)) + PROBE_STEP;
	struct iovec remote[2] = { { (void *)at, 1 }, { (void *)next, 1 } };
	char sink[2];
	struct iovec local = { sink, 2 };
	unsigned long n = last >= next ? 2 : 1;
	ssize_t got;

	if (probe_one_by_one((int)n))
		return page_readable(at) && (n == 1 || page_readable(next));
	local.iov_len = n;
	got = process_vm_readv(self_pid(), &local, 1, remote, n, 0);
	if (got == (ssize_t)n)
		return 1;
	if (got >= 0 || errno == EFAULT)
		return 0;
	__atomic_store_n(&vm_read_refused, 1, __ATOMIC_RELAXED);
	return -1;
}

bool agile__iov_readable(const struct iovec *iov, int count)
{
	struct probes p;
	int saved = errno;
	bool ok;

	if (count == 1 && iov != NULL && iov[0].iov_len > 0 &&
	    iov[0].iov_len <= PROBE_STEP &&
	    (uintptr_t)iov[0].iov_base + iov[0].iov_len >
	            (uintptr_t)iov[0].iov_base) {
		int rc = one_buffer_readable(iov[0].iov_base, iov[0].iov_len);

		if (rc >= 0) {
			errno = saved;
			return rc == 1;
		}
		/* Refused (noted by probe_batch): the ranges' way probes. */
	}

	if (count < 0 || count > IOV_MAX)
		return false;
	p.n = 0;
	p.bad = false;
	for (int i = 0; iov != NULL && i < count && !p.bad; i++)
		add_range(&p, iov[i].iov_base, iov[i].iov_len);
	ok = finish(&p);
	errno = saved;
	return ok;
}
