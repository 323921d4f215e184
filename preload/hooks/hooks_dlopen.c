/*
 * hooks_dlopen.c - libraries opened with RTLD_DEEPBIND reach the hooks too.
 *
 * RTLD_DEEPBIND makes a library look its symbols up in its own dependencies
 * first, the C library among them, ahead of the global scope where
 * LD_PRELOAD sits: its socket calls went straight to the C library.  PHP
 * opens every extension that way, so its curl extension was never paced
 * (20 requests at floor=max=10 in 0.9 s, no connect seen).  After such a
 * dlopen, the objects it loaded have their relocations to the preload's
 * hooks pointed at the hooks, as the global scope would have bound them;
 * a relocation bound to any other definition than the C library's (the
 * library's own, or another library's) is left alone.
 *
 * dlopen finds the library relative to its caller (its RUNPATH, $ORIGIN, its
 * namespace), so every other call is passed on as a sibling call, which
 * leaves the caller's return address in place; a deep-binding call is made
 * by the preload itself only for a path with a '/' and no '$', where the
 * caller plays no part (tests/preload/deepbind.sh checks both).  The
 * relocations are read as x86-64's and AArch64's; elsewhere every call is
 * passed on.
 */
#include "config.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "process.h"
#include "symbols.h"

#if defined(__x86_64__)
#define JUMP_SLOT R_X86_64_JUMP_SLOT
#define GLOB_DAT R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define JUMP_SLOT R_AARCH64_JUMP_SLOT
#define GLOB_DAT R_AARCH64_GLOB_DAT
#endif

/* One patcher at a time: two threads lifting and restoring the protection
 * of one RELRO page around their stores would fault the store that comes
 * after the other's restore.  Held across fork() (forklist.c), so a child is
 * never born with it taken. */
static pthread_mutex_t patch_lock = PTHREAD_MUTEX_INITIALIZER;

void agile__dlopen_atfork_prepare(void)
{
	pthread_mutex_lock(&patch_lock);
}

void agile__dlopen_atfork_release(void)
{
	pthread_mutex_unlock(&patch_lock);
}

typedef void *(*dlopen_fn)(const char *, int);

static dlopen_fn next_dlopen;

/* Threads racing to look it up store the same address. */
static dlopen_fn dlopen_next(void)
{
	dlopen_fn next = __atomic_load_n(&next_dlopen, __ATOMIC_ACQUIRE);

	if (next == NULL) {
		*(void **)&next = dlsym(RTLD_NEXT, "dlopen");
		__atomic_store_n(&next_dlopen, next, __ATOMIC_RELEASE);
	}
	return next;
}

#if defined(JUMP_SLOT)

/* What the dynamic section of a loaded object says, for the relocations. */
struct dynamic {
	const ElfW(Sym) *symtab;
	const char *strtab;
	const uint32_t *gnu_hash;
	const ElfW(Rela) *jmprel, *rela;
	size_t jmprel_count, rela_count;
	bool jmprel_is_rela;
};

/* d_ptr values are relocated in place by the loader on most architectures;
 * one that is still an offset gets the load address added. */
static const void *dyn_ptr(const struct link_map *map, ElfW(Addr) p)
{
	return (const void *)(p < map->l_addr ? map->l_addr + p : p);
}

static void read_dynamic(const struct link_map *map, struct dynamic *d)
{
	memset(d, 0, sizeof(*d));
	for (const ElfW(Dyn) *e = map->l_ld; e != NULL && e->d_tag != DT_NULL;
	     e++) {
		switch (e->d_tag) {
		case DT_SYMTAB:
			d->symtab = dyn_ptr(map, e->d_un.d_ptr);
			break;
		case DT_STRTAB:
			d->strtab = dyn_ptr(map, e->d_un.d_ptr);
			break;
		case DT_GNU_HASH:
			d->gnu_hash = dyn_ptr(map, e->d_un.d_ptr);
			break;
		case DT_JMPREL:
			d->jmprel = dyn_ptr(map, e->d_un.d_ptr);
			break;
		case DT_PLTRELSZ:
			d->jmprel_count = e->d_un.d_val / sizeof(ElfW(Rela));
			break;
		case DT_PLTREL:
			d->jmprel_is_rela = e->d_un.d_val == DT_RELA;
			break;
		case DT_RELA:
			d->rela = dyn_ptr(map, e->d_un.d_ptr);
			break;
		case DT_RELASZ:
			d->rela_count = e->d_un.d_val / sizeof(ElfW(Rela));
			break;
		default:
			break;
		}
	}
}

/* How many symbols a GNU hash table covers: past the highest bucket's
 * chain, which ends with a value whose low bit is set. */
static uint32_t gnu_hash_symbols(const uint32_t *h)
{
	uint32_t nbuckets = h[0], symoffset = h[1], bloom_size = h[2];
	const uint32_t *buckets = h + 4 + bloom_size * (sizeof(ElfW(Addr)) / 4);
	const uint32_t *chain = buckets + nbuckets;
	uint32_t last = 0;

	for (uint32_t i = 0; i < nbuckets; i++)
		if (buckets[i] > last)
			last = buckets[i];
	if (last < symoffset)
		return symoffset;
	while (!(chain[last - symoffset] & 1))
		last++;
	return last + 1;
}

/*
 * The preload's hooks, by name: the functions its dynamic symbol table
 * defines and exports (preload.map's list), each with the definition the
 * next object in the search order has, the C library's.  Read once from
 * the preload's own symbol table, so a hook added to preload.map is
 * covered, and a relocation costs a binary search, not a dlsym(): PHP's
 * extensions bring thousands.
 */
#define HOOKS_MAX 96

struct hook {
	const char *name;
	void *hook, *next;
};

static struct hook hooks[HOOKS_MAX];
static size_t hooks_count;
static uintptr_t self_base;
static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;

static void load_hooks(void)
{
	struct link_map *self = NULL;
	struct dynamic d;
	Dl_info info;
	uint32_t n;

	if (dladdr1((void *)load_hooks, &info, (void **)&self,
	            RTLD_DL_LINKMAP) == 0 || self == NULL)
		return;
	read_dynamic(self, &d);
	if (d.symtab == NULL || d.strtab == NULL || d.gnu_hash == NULL)
		return;
	n = gnu_hash_symbols(d.gnu_hash);
	for (uint32_t i = 1; i < n && hooks_count < HOOKS_MAX; i++) {
		const ElfW(Sym) *sym = &d.symtab[i];
		struct hook h;
		size_t at;

		if (sym->st_shndx == SHN_UNDEF ||
		    ELF64_ST_TYPE(sym->st_info) != STT_FUNC ||
		    ELF64_ST_VISIBILITY(sym->st_other) != STV_DEFAULT)
			continue;
		h.name = d.strtab + sym->st_name;
		h.hook = (void *)(self->l_addr + sym->st_value);
		h.next = dlsym(RTLD_NEXT, h.name);
		if (h.next == NULL)
			continue;
		/* Insertion keeps the table sorted by name. */
		for (at = hooks_count; at > 0 &&
		     strcmp(hooks[at - 1].name, h.name) > 0; at--)
			hooks[at] = hooks[at - 1];
		hooks[at] = h;
		hooks_count++;
	}
	self_base = self->l_addr;
	/* Names the C library lacks were looked up in vain. */
	(void)dlerror();
}

static const struct hook *hook_named(const char *name)
{
	size_t lo = 0, hi = hooks_count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(name, hooks[mid].name);

		if (c == 0)
			return &hooks[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

/* Whether `addr` lies in one of the object's loadable segments, as dladdr
 * would have said, which the patching may not call: dladdr takes the
 * loader's main lock, which a dlopen in another thread holds while it waits
 * for the lock that dl_iterate_phdr holds around the patching. */
static bool inside_object(const struct dl_phdr_info *info, uintptr_t addr)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && addr >= start &&
		    addr - start < ph->p_memsz)
			return true;
	}
	return false;
}

/* The object's RELRO range, [start, end), empty when it has none. */
struct relro {
	uintptr_t start, end;
};

static struct relro find_relro(const struct dl_phdr_info *info)
{
	struct relro r = { 0, 0 };

	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_GNU_RELRO) {
			r.start = info->dlpi_addr + ph->p_vaddr;
			r.end = r.start + ph->p_memsz;
		}
	}
	return r;
}

/* Store `value` in the slot, lifting RELRO's protection around the store.
 * The loader makes read-only only the whole pages of the range (its last
 * page goes on with writable data), and so is the store's page put back. */
static void store_slot(void **slot, void *value, const struct relro *r)
{
	uintptr_t at = (uintptr_t)slot;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t first = at & ~(page - 1);

	if (at >= r->start && at < (r->end & ~(page - 1))) {
		if (mprotect((void *)first, page, PROT_READ | PROT_WRITE) != 0)
			return;
		__atomic_store_n(slot, value, __ATOMIC_RELEASE);
		mprotect((void *)first, page, PROT_READ);
		return;
	}
	__atomic_store_n(slot, value, __ATOMIC_RELEASE);
}

/* Point the relocations in rela[0..n) that reach the C library's
 * definition of a hooked name, or are not bound yet (the lazy binding's
 * stub, inside the object itself), at the hook. */
static void patch_relocs(const struct link_map *map,
                         const struct dl_phdr_info *info,
                         const struct dynamic *d, const ElfW(Rela) *rela,
                         size_t n, const struct relro *r)
{
	for (size_t i = 0; i < n; i++) {
		unsigned long type = ELF64_R_TYPE(rela[i].r_info);
		const ElfW(Sym) *sym = &d->symtab[ELF64_R_SYM(rela[i].r_info)];
		void **slot = (void **)(map->l_addr + rela[i].r_offset);
		const struct hook *h;

		if ((type != JUMP_SLOT && type != GLOB_DAT) ||
		    ELF64_R_SYM(rela[i].r_info) == 0 ||
		    sym->st_shndx != SHN_UNDEF ||
		    (h = hook_named(d->strtab + sym->st_name)) == NULL ||
		    *slot == h->hook)
			continue;
		if (*slot != h->next && !inside_object(info, (uintptr_t)*slot))
			continue;
		store_slot(slot, h->hook, r);
	}
}

static void patch_object(const struct link_map *map,
                         const struct dl_phdr_info *info)
{
	struct relro r = find_relro(info);
	struct dynamic d;

	if (map->l_addr == self_base || map->l_ld == NULL)
		return;
	read_dynamic(map, &d);
	if (d.symtab == NULL || d.strtab == NULL)
		return;
	if (d.jmprel != NULL && d.jmprel_is_rela)
		patch_relocs(map, info, &d, d.jmprel, d.jmprel_count, &r);
	if (d.rela != NULL)
		patch_relocs(map, info, &d, d.rela, d.rela_count, &r);
}

/*
 * dl_iterate_phdr's callback, one object at a time in the loader's list
 * order: from the object the dlopen returned, each object up to the end of
 * its namespace's list is patched.  `next` is the next object to patch,
 * NULL when done.  dl_iterate_phdr holds the loader's lock on that list
 * across the whole walk, so no dlclose in another thread can unload an
 * object while it is read, nor unlink the `l_next` followed here (reading
 * the list outside it, the preload crashed in every run of
 * tests/preload/deepbind_stress.sh, within a second).  Objects are matched by address and
 * name pointer, which dl_iterate_phdr takes from the same link map.
 */
static int patch_in_list_order(struct dl_phdr_info *info, size_t size,
                               void *data)
{
	struct link_map **next = data;

	(void)size;
	if (info->dlpi_addr != (*next)->l_addr ||
	    info->dlpi_name != (*next)->l_name)
		return 0;
	patch_object(*next, info);
	*next = (*next)->l_next;
	return *next == NULL;
}

/* The deep-binding dlopen: open, then patch what it loaded. */
__attribute__((noinline)) static void *deepbind_open(const char *file,
                                                     int mode)
{
	void *handle = dlopen_next()(file, mode);
	int saved = errno;
	struct link_map *map = NULL;

	if (handle == NULL)
		return NULL;
	agile__enter();
	pthread_once(&hooks_once, load_hooks);
	/* The objects loaded after it in the namespace: its own
	 * dependencies, and whatever other threads opened meanwhile, whose
	 * relocations to the hooks reach them already.  The handle keeps
	 * `map` itself loaded until the walk reaches it. */
	pthread_mutex_lock(&patch_lock);
	if (hooks_count > 0 && dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 &&
	    map != NULL)
		dl_iterate_phdr(patch_in_list_order, &map);
	pthread_mutex_unlock(&patch_lock);
	agile__leave();
	errno = saved;
	return handle;
}

#endif /* JUMP_SLOT */

/* The pass-through must be a sibling call: clang is told so; GCC before 15
 * (which knows musttail too) is asked to optimise sibling calls here, which
 * it does from -O1 up (the default build is -O2; at -O0 it makes a plain
 * call, and dlopen then searches as if the preload had called it). */
#if defined(__has_attribute)
#if __has_attribute(musttail)
#define SIBLING_CALL __attribute__((musttail))
#endif
#endif
#ifndef SIBLING_CALL
#define SIBLING_CALL
#endif
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("optimize-sibling-calls")))
#endif
AGILE_EXPORT void *dlopen(const char *file, int mode)
{
#if defined(JUMP_SLOT)
	if ((mode & RTLD_DEEPBIND) && file != NULL && !agile__disabled &&
	    strchr(file, '/') != NULL && strchr(file, '$') == NULL)
		return deepbind_open(file, mode);
#endif
	SIBLING_CALL return dlopen_next()(file, mode);
}
