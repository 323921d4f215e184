/*
 * deepbind_stress.c - deep-binding dlopens racing with dlopen and dlclose.
 *
 *     deepbind_stress PRELOAD DEEP_PLUGIN OTHER_PLUGIN ROUNDS
 *
 * Two threads dlopen DEEP_PLUGIN with RTLD_DEEPBIND and dlclose it, ROUNDS
 * times each, while a third dlopens OTHER_PLUGIN (without RTLD_DEEPBIND)
 * and dlcloses it until they are done.  After each deep-binding dlopen the
 * preload reads every object loaded after the plugin, OTHER_PLUGIN among
 * them whenever it is loaded then, while the third thread may be unloading
 * it.  The deep-binding dlopens call PRELOAD's dlopen directly, the one the
 * program would reach first without a sanitizer: ASan's runtime, which the
 * sanitizer pass loads ahead of the preload, refuses RTLD_DEEPBIND outright
 * (google/sanitizers issue 611).  Prints the rounds the third thread made.
 * Exit 0 on success; 1 when a dlopen failed; killed by SIGALRM when the
 * threads did not finish within 120 s, the mark of a deadlock between the
 * preload and the loader.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef void *(*dlopen_fn)(const char *, int);

static dlopen_fn preload_dlopen;
static const char *deep_plugin, *other_plugin;
static long rounds;
static int deep_done, failed;

static void *deep_thread(void *arg)
{
	(void)arg;
	for (long i = 0; i < rounds; i++) {
		void *lib = preload_dlopen(deep_plugin, RTLD_NOW | RTLD_DEEPBIND);

		if (lib == NULL) {
			fprintf(stderr, "deepbind_stress: %s\n", dlerror());
			__atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
			break;
		}
		dlclose(lib);
	}
	__atomic_add_fetch(&deep_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void *other_thread(void *arg)
{
	long *made = arg;

	while (__atomic_load_n(&deep_done, __ATOMIC_ACQUIRE) < 2) {
		void *lib = dlopen(other_plugin, RTLD_NOW);

		if (lib == NULL) {
			fprintf(stderr, "deepbind_stress: %s\n", dlerror());
			__atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
			break;
		}
		dlclose(lib);
		(*made)++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t deep[2], other;
	long made = 0;
	void *preload;

	if (argc != 5) {
		fprintf(stderr, "usage: deepbind_stress PRELOAD DEEP_PLUGIN "
		        "OTHER_PLUGIN ROUNDS\n");
		return 2;
	}
	preload = dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD);
	if (preload == NULL ||
	    (*(void **)&preload_dlopen = dlsym(preload, "dlopen")) == NULL) {
		fprintf(stderr, "deepbind_stress: %s is not loaded\n", argv[1]);
		return 1;
	}
	deep_plugin = argv[2];
	other_plugin = argv[3];
	rounds = atol(argv[4]);
	/* A deadlock ends the run: SIGALRM's default action kills the
	 * process (a handler could block in the very loader lock the threads
	 * wait for, through the preload's hooks). */
	alarm(120);
	/* Loaded for the whole run, the plugin stays ahead of OTHER_PLUGIN
	 * in the loader's list: each deep-binding dlopen then reaches it. */
	if (preload_dlopen(deep_plugin, RTLD_NOW | RTLD_DEEPBIND) == NULL) {
		fprintf(stderr, "deepbind_stress: %s\n", dlerror());
		return 1;
	}
	pthread_create(&other, NULL, other_thread, &made);
	for (int i = 0; i < 2; i++)
		pthread_create(&deep[i], NULL, deep_thread, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(deep[i], NULL);
	pthread_join(other, NULL);
	printf("%ld\n", made);
	return failed ? 1 : 0;
}
