/*
 * nghttp2_load.c - libnghttp2's HPACK inflater, opened with dlopen at
 * first use (see nghttp2_load.h).  RTLD_LOCAL: its symbols stay out of
 * the program's scope, so a program that probes for nghttp2 with dlsym
 * finds what it would have found without the preload.  A program that
 * links libnghttp2 itself (curl) has it mapped already, and dlopen only
 * takes a reference.  The library is never closed: decoders hold its
 * inflaters until their connections close.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "nghttp2_load.h"

static struct agile_nghttp2 loaded;
static const struct agile_nghttp2 *loaded_ok;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

#define BIND(field, name) \
	(*(void **)&lib->field = dlsym(handle, name)) != NULL

int agile__nghttp2_bind(const char *soname, struct agile_nghttp2 *lib)
{
	void *handle = dlopen(soname, RTLD_LAZY | RTLD_LOCAL);

	if (handle == NULL)
		return -ENOENT;
	if (BIND(inflate_new, "nghttp2_hd_inflate_new") &&
	    BIND(inflate_del, "nghttp2_hd_inflate_del") &&
	    BIND(inflate_change_table_size,
	         "nghttp2_hd_inflate_change_table_size") &&
	    BIND(inflate_hd2, "nghttp2_hd_inflate_hd2") &&
	    BIND(inflate_end_headers, "nghttp2_hd_inflate_end_headers"))
		return 0;
	memset(lib, 0, sizeof(*lib));
	dlclose(handle);
	return -ENOENT;
}

static void load(void)
{
	if (agile__nghttp2_bind(AGILE_NGHTTP2_SONAME, &loaded) == 0)
		__atomic_store_n(&loaded_ok, &loaded, __ATOMIC_RELEASE);
}

const struct agile_nghttp2 *agile__nghttp2(void)
{
	pthread_once(&load_once, load);
	return __atomic_load_n(&loaded_ok, __ATOMIC_ACQUIRE);
}
