/*
 * replay.c - the main() that runs a fuzz harness over files without
 * libFuzzer, so that every `make check`, with any compiler, replays the
 * committed corpus through tests/fuzz/replay_rules, replay_state,
 * replay_tls, replay_http and replay_http2.
 *
 *     replay_NAME [FILE|DIR]...
 *
 * With no argument it replays $AGILE_SRCDIR/tests/fuzz/corpus/NAME (NAME
 * is the program's name after "replay_"): the seeds, and every input that
 * once crashed a harness, kept there as a regression test.  A crash is the
 * harness aborting or a sanitizer stopping the program; otherwise it prints
 * how many inputs it replayed and exits 0.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

static int replayed;

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *data = NULL;
	size_t size = 0, cap = 0;

	if (f == NULL) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (;;) {
		if (size == cap) {
			uint8_t *bigger;

			cap = cap == 0 ? 4096 : cap * 2;
			bigger = realloc(data, cap);
			if (bigger == NULL) {
				free(data);
				fclose(f);
				return -1;
			}
			data = bigger;
		}
		size_t n = fread(data + size, 1, cap - size, f);
		if (n == 0)
			break;
		size += n;
	}
	fclose(f);
	/* A copy of exactly `size` bytes, so a read past the input is caught
	 * by the sanitizers as it would be under libFuzzer. */
	uint8_t *exact = malloc(size > 0 ? size : 1);
	if (exact == NULL) {
		free(data);
		return -1;
	}
	memcpy(exact, data, size);
	free(data);
	LLVMFuzzerTestOneInput(exact, size);
	free(exact);
	replayed++;
	return 0;
}

static int replay_path(const char *path)
{
	struct stat st;
	DIR *dir;
	struct dirent *e;
	int rc = 0;

	if (stat(path, &st) != 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return replay_file(path);
	dir = opendir(path);
	if (dir == NULL) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while ((e = readdir(dir)) != NULL) {
		char child[4096];

		if (e->d_name[0] == '.')
			continue;
		snprintf(child, sizeof(child), "%s/%s", path, e->d_name);
		if (replay_path(child) != 0)
			rc = -1;
	}
	closedir(dir);
	return rc;
}

int main(int argc, char **argv)
{
	const char *self = strrchr(argv[0], '/');
	const char *srcdir = getenv("AGILE_SRCDIR");
	char corpus[4096];
	int rc = 0;

	self = self != NULL ? self + 1 : argv[0];
	if (strncmp(self, "lt-", 3) == 0)
		self += 3;
	if (strncmp(self, "replay_", 7) == 0)
		self += 7;
	if (LLVMFuzzerInitialize != NULL)
		LLVMFuzzerInitialize(&argc, &argv);
	if (argc > 1) {
		for (int i = 1; i < argc; i++)
			if (replay_path(argv[i]) != 0)
				rc = 1;
	} else {
		snprintf(corpus, sizeof(corpus), "%s/tests/fuzz/corpus/%s",
		         srcdir != NULL ? srcdir : ".", self);
		if (replay_path(corpus) != 0)
			rc = 1;
	}
	printf("replay_%s: %d inputs replayed\n", self, replayed);
	if (replayed == 0) {
		fprintf(stderr, "replay: no input found\n");
		rc = 1;
	}
	return rc;
}
