/*
 * fuzz_agilestat.c - libFuzzer harness for agilestat's reader of a hostile
 * state file: the read of the file into a private copy (agile__state_read_fd,
 * what agile__state_open_ro does after its owner check), cut short as if the
 * file were truncated while agilestat reads it, then, for a file it
 * accepts, every format agilestat prints (agilestat_view.c: the table,
 * --watch's history, JSON, Prometheus, the CSV history, the resolved
 * configuration), whatever the slots hold.  Any process of the user's can
 * write the file; agilestat must neither crash nor read past its copy.
 *
 * Input: a mode byte, a 4-byte little-endian cut, then
 *
 *   mode even  the whole file, as found on disk;
 *   mode odd   a list of patches applied to a freshly formatted file, as in
 *              fuzz_state.c: each a 4-byte little-endian offset (modulo the
 *              file's size), a length byte and that many bytes.  This
 *              reaches valid headers over slots holding anything: names
 *              and destinations of any bytes, garbage limiters, rings.
 *
 * The cut, when not 0, keeps only the file's first (cut modulo its size)
 * bytes, while the reader is told the size before the cut: a file
 * truncated between agilestat's fstat and its read.  The file's boot id is
 * set to this machine's (the reader checks it), so the corpus is valid on
 * every machine.  The file lives in a memfd; stdout goes to /dev/null.
 *
 * tests/fuzz/replay.c turns this file into replay_agilestat, which replays
 * the committed corpus in every `make check`.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agilestat_view.h"
#include "shmfile.h"
#include "state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static uint8_t *image; /* AGILE_STATE_SIZE bytes: the file to be read */
static char boot_id[AGILE_SHMFILE_BOOT_ID_MAX];
static int fd = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* agilestat's printers write to stdout. */
	if (freopen("/dev/null", "w", stdout) == NULL)
		abort();
	image = malloc(AGILE_STATE_SIZE);
	fd = memfd_create("fuzz_agilestat", MFD_CLOEXEC);
	if (image == NULL || fd < 0)
		abort();
	agile__shmfile_boot_id(boot_id);
	return 0;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* The file of a patch-mode input: a fresh one, patched.  Returns its size. */
static size_t patched_file(const uint8_t *p, size_t size)
{
	memset(image, 0, AGILE_STATE_SIZE);
	agile__state_format(image, boot_id, 1);
	while (size >= 5) {
		size_t at = le32(p) % AGILE_STATE_SIZE;
		size_t len = p[4];

		p += 5;
		size -= 5;
		if (len > size)
			len = size;
		if (len > AGILE_STATE_SIZE - at)
			len = AGILE_STATE_SIZE - at;
		memcpy(image + at, p, len);
		p += len;
		size -= len;
	}
	return AGILE_STATE_SIZE;
}

/* The file of a whole-file input, with this machine's boot id. */
static size_t whole_file(const uint8_t *p, size_t size)
{
	const size_t at = offsetof(struct agile_state_header, boot_id);

	if (size > AGILE_STATE_SIZE)
		size = AGILE_STATE_SIZE;
	memcpy(image, p, size);
	if (size >= at + sizeof(boot_id))
		memcpy(image + at, boot_id, sizeof(boot_id));
	return size;
}

/* Everything agilestat prints of an accepted file. */
static void print_all(const struct agile_state_map *m)
{
	static struct agilestat_view views[AGILE_STATE_SLOTS];
	static struct agile_state_tick ticks[AGILE_STATE_RING];
	int n = agilestat_read_views(m, views);

	if (n < 0 || n > AGILE_STATE_SLOTS)
		abort();
	agilestat_print_table(views, n);
	agilestat_print_unsaid_table(m);
	for (int i = 0; i < n; i++) {
		struct agilestat_labels l;
		int count = agilestat_ring_entries(views[i].slot, 60, ticks);

		if (count < 0 || count > 60)
			abort();
		printf("%s %d\n", agilestat_labels(views[i].slot, &l)->name,
		       count);
	}
	agilestat_print_json(views, n, m);
	agilestat_print_prometheus(views, n);
	agilestat_print_history(views, n);
	agilestat_print_config(views, n);
	fflush(stdout);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct agile_state_map m = { 0 };
	size_t file_size, kept;
	uint32_t cut;
	char why[256];
	int rc;

	if (image == NULL)
		LLVMFuzzerInitialize(NULL, NULL);
	if (size < 5)
		return 0;
	cut = le32(data + 1);
	file_size = (data[0] & 1) ? patched_file(data + 5, size - 5)
	                          : whole_file(data + 5, size - 5);
	kept = cut != 0 ? cut % (file_size + 1) : file_size;
	if (ftruncate(fd, 0) != 0 ||
	    pwrite(fd, image, kept, 0) != (ssize_t)kept)
		abort();
	why[0] = 'x';
	rc = agile__state_read_fd(fd, (off_t)file_size, &m, why, sizeof(why));
	if (rc != 0) {
		/* A rejection says why, in a terminated phrase. */
		if (rc != -EINVAL || memchr(why, '\0', sizeof(why)) == NULL ||
		    why[0] == '\0')
			abort();
		return 0;
	}
	if (kept < AGILE_STATE_SIZE)
		abort(); /* a cut file is never accepted */
	print_all(&m);
	agile__state_close(&m);
	return 0;
}
