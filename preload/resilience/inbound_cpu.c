/*
 * inbound_cpu.c - the CPU reading that a listener rule's shed=cpu runs on
 * (inbound.c asks for it at each accept).
 *
 * The CPU reading.  Once per 100 ms at most, a process compares its CPU time
 * (CLOCK_PROCESS_CPUTIME_ID) with the wall time since the last reading,
 * over the CPUs it may use: the smaller of its affinity mask and its cgroup
 * v2 quota (cpu.max of the cgroup named in /proc/self/cgroup), so a server
 * limited to half a CPU reads 1000 when it uses half a CPU.  Each process
 * reads its own use; the shedder they share sees the last one that
 * admitted a connection.
 */
#include "config.h"

#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agile.h"
#include "inbound_internal.h"

#define CPU_PERIOD_NS (100 * AGILE_NS_PER_MS)

static int64_t cpus_milli;    /* thousandths of the CPUs this process may
                                 use; 0 until read */
static int64_t cpu_read_ns;   /* when the CPU was last read (claimed) */
static int64_t cpu_time_ns;   /* the process's CPU time then */
static int32_t cpu_permille;  /* the last reading */

/* The cgroup v2 quota of this process in CPUs, or 0 when it has none. */
static double cgroup_cpus(void)
{
	char line[512], path[600], buf[64];
	double quota = 0, period = 0;
	FILE *f = fopen("/proc/self/cgroup", "re");
	int fd;
	ssize_t n;

	path[0] = '\0';
	if (f != NULL) {
		while (fgets(line, sizeof(line), f) != NULL)
			if (strncmp(line, "0::", 3) == 0) {
				line[strcspn(line, "\n")] = '\0';
				snprintf(path, sizeof(path),
				         "/sys/fs/cgroup%s/cpu.max", line + 3);
			}
		fclose(f);
	}
	fd = path[0] != '\0' ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0)
		fd = open("/sys/fs/cgroup/cpu.max", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* "max 100000" is no quota; "50000 100000" is half a CPU. */
	if (sscanf(buf, "%lf %lf", &quota, &period) != 2 || period <= 0)
		return 0;
	return quota / period;
}

static double usable_cpus(void)
{
	int64_t milli = __atomic_load_n(&cpus_milli, __ATOMIC_ACQUIRE);
	cpu_set_t set;
	double cpus, quota;

	if (milli > 0)
		return (double)milli / 1000;
	cpus = (double)sysconf(_SC_NPROCESSORS_ONLN);
	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0 &&
	    CPU_COUNT(&set) < cpus)
		cpus = CPU_COUNT(&set);
	quota = cgroup_cpus();
	if (quota > 0 && quota < cpus)
		cpus = quota;
	if (cpus < 0.001)
		cpus = 1;
	__atomic_store_n(&cpus_milli, (int64_t)(cpus * 1000), __ATOMIC_RELEASE);
	return cpus;
}

/* This process's CPU use in thousandths of what it may use. */
int32_t agile__inbound_read_cpu(int64_t now)
{
	int64_t last = __atomic_load_n(&cpu_read_ns, __ATOMIC_ACQUIRE);
	struct timespec ts;
	int64_t cpu, before;
	double use;

	if (now - last < CPU_PERIOD_NS ||
	    !__atomic_compare_exchange_n(&cpu_read_ns, &last, now, false,
	                                 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return __atomic_load_n(&cpu_permille, __ATOMIC_ACQUIRE);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	cpu = (int64_t)ts.tv_sec * AGILE_NS_PER_S + ts.tv_nsec;
	before = __atomic_exchange_n(&cpu_time_ns, cpu, __ATOMIC_ACQ_REL);
	if (last == 0 || before == 0)
		return 0; /* the first reading has nothing to compare with */
	use = (double)(cpu - before) / ((double)(now - last) * usable_cpus());
	use = use < 0 ? 0 : use > 1 ? 1 : use;
	__atomic_store_n(&cpu_permille, (int32_t)(use * 1000), __ATOMIC_RELEASE);
	return (int32_t)(use * 1000);
}
