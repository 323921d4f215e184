/*
 * fdtable.c - the per-descriptor table (see fdtable.h).
 */
#include "config.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "fdtable.h"
#include "log.h"

struct agile_fd *agile__fd_table;
size_t agile__fd_table_size;
uint64_t agile__fd_stream[AGILE_FD_TYPE_BITS / 64];

void agile__fd_forget_type_range(unsigned int first, unsigned int last)
{
	unsigned int end = last < AGILE_FD_TYPE_BITS - 1 ? last
	                                                  : AGILE_FD_TYPE_BITS - 1;

	/* Word by word: closefrom(3) must not cost 65,536 steps. */
	for (unsigned int fd = first; fd <= end && first <= last;) {
		unsigned int word = fd / 64, low = fd % 64;
		unsigned int high = end / 64 == word ? end % 64 : 63;
		uint64_t mask = (high - low == 63 ? ~(uint64_t)0
		                 : (((uint64_t)1 << (high - low + 1)) - 1))
		                << low;

		if (__atomic_load_n(&agile__fd_stream[word], __ATOMIC_RELAXED) &
		    mask)
			__atomic_fetch_and(&agile__fd_stream[word], ~mask,
			                   __ATOMIC_RELAXED);
		fd = (word + 1) * 64;
	}
}

/* A million entries (24 MiB of address space, untouched until used) covers
 * the hard limit of every common distribution; beyond it fds stay
 * untracked rather than costing more address space. */
#define FD_TABLE_CAP ((size_t)1 << 20)
#define FD_TABLE_MIN ((size_t)1 << 16)

static size_t table_size_from_limit(void)
{
	struct rlimit lim;
	size_t n = FD_TABLE_MIN;

	if (getrlimit(RLIMIT_NOFILE, &lim) == 0) {
		if (lim.rlim_max != RLIM_INFINITY && lim.rlim_max > n)
			n = (size_t)lim.rlim_max;
		else if (lim.rlim_max == RLIM_INFINITY)
			n = FD_TABLE_CAP;
		if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur > n)
			n = (size_t)lim.rlim_cur;
	}
	return n > FD_TABLE_CAP ? FD_TABLE_CAP : n;
}

/* Map the table, once per process, in whichever thread first needs it.
 * Once: the size is written before the pointer is published and never
 * again, so a reader that sees the pointer (acquire) reads a size that
 * matches it.  Two threads racing to map it, each publishing the size it
 * computed, could leave the size of one table next to the other (the
 * limit may change between them), and the loser's store raced with the
 * readers of the winner's.  A table that cannot be mapped stays NULL. */
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void)
{
	size_t n = table_size_from_limit();
	struct agile_fd *fresh = mmap(NULL, n * sizeof(*fresh),
	                              PROT_READ | PROT_WRITE,
	                              MAP_PRIVATE | MAP_ANONYMOUS |
	                              MAP_NORESERVE, -1, 0);

	if (fresh == MAP_FAILED) {
		agile__log(AGILE_LOG_WARN, "cannot map the descriptor table "
		           "(%zu entries): %m; sockets stay unthrottled", n);
		return;
	}
	agile__fd_table_size = n;
	__atomic_store_n(&agile__fd_table, fresh, __ATOMIC_RELEASE);
}

static struct agile_fd *table_map(void)
{
	struct agile_fd *table = __atomic_load_n(&agile__fd_table,
	                                         __ATOMIC_ACQUIRE);

	if (table != NULL)
		return table;
	pthread_once(&table_once, table_init);
	return __atomic_load_n(&agile__fd_table, __ATOMIC_ACQUIRE);
}

struct agile_fd *agile__fd_entry(int fd)
{
	struct agile_fd *table = table_map();

	if (table == NULL || fd < 0 || (size_t)fd >= agile__fd_table_size)
		return NULL;
	return &table[fd];
}

/* One relaxed atomic add per tracked connection; 0 is never handed out. */
static uint64_t last_conn_id;

uint64_t agile__fd_new_conn_id(void)
{
	return __atomic_add_fetch(&last_conn_id, 1, __ATOMIC_RELAXED);
}

void agile__fd_untrack(int fd)
{
	struct agile_fd *table = __atomic_load_n(&agile__fd_table,
	                                         __ATOMIC_ACQUIRE);

	if (table == NULL || fd < 0 || (size_t)fd >= agile__fd_table_size)
		return;
	__atomic_store_n(&table[fd].tracked, 0, __ATOMIC_RELEASE);
}

void agile__fd_untrack_range(unsigned int first, unsigned int last)
{
	struct agile_fd *table = __atomic_load_n(&agile__fd_table,
	                                         __ATOMIC_ACQUIRE);

	if (table == NULL || first >= agile__fd_table_size)
		return;
	if (last >= agile__fd_table_size)
		last = (unsigned int)agile__fd_table_size - 1;
	for (size_t fd = first; fd <= last; fd++) {
		/* Reading first keeps untouched pages of the table unmapped. */
		if (__atomic_load_n(&table[fd].tracked, __ATOMIC_RELAXED))
			__atomic_store_n(&table[fd].tracked, 0,
			                 __ATOMIC_RELEASE);
	}
}
