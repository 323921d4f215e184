/*
 * deepbind_loader.c - open deepbind_plugin.c's library as a plugin host.
 *
 *     deepbind_loader deep PATH PORT N      dlopen(PATH, RTLD_NOW | RTLD_DEEPBIND)
 *     deepbind_loader runpath NAME PORT N   dlopen(NAME, RTLD_NOW), found
 *                                           through this program's RUNPATH
 *     deepbind_loader runpath-deep NAME PORT N   the same with RTLD_DEEPBIND
 *
 * Then N requests through the library.  Prints the seconds they took.
 * Exit 0 on success; 3 when dlerror() reports an error after a dlopen that
 * succeeded.  Built by tests/preload/deepbind.sh with a RUNPATH of
 * $ORIGIN/plugins.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int (*requests)(int, int);
	int mode = RTLD_NOW;
	const char *error;
	double start;
	void *lib;

	if (argc != 5) {
		fprintf(stderr, "usage: deepbind_loader deep|runpath|runpath-deep "
		        "LIBRARY PORT N\n");
		return 2;
	}
	if (strcmp(argv[1], "runpath") != 0)
		mode |= RTLD_DEEPBIND;
	lib = dlopen(argv[2], mode);
	if (lib == NULL) {
		fprintf(stderr, "deepbind_loader: %s\n", dlerror());
		return 1;
	}
	error = dlerror();
	if (error != NULL) {
		fprintf(stderr, "deepbind_loader: an error after success: %s\n",
		        error);
		return 3;
	}
	*(void **)&requests = dlsym(lib, "deepbind_requests");
	if (requests == NULL) {
		fprintf(stderr, "deepbind_loader: %s\n", dlerror());
		return 1;
	}
	start = now_s();
	if (requests(atoi(argv[3]), atoi(argv[4])) != 0) {
		fprintf(stderr, "deepbind_loader: a request failed\n");
		return 1;
	}
	printf("%.3f\n", now_s() - start);
	return 0;
}
