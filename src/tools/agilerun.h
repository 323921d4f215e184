/*
 * agilerun.h - what the files of agilerun share: its exit statuses, the
 * libraries it looks for, -v, and each file's entry point for main().
 *
 *   agilerun.c          the options and the order of the steps, main()
 *   agilerun_env.c      -d and -s checked and turned into the environment
 *   agilerun_library.c  finding the preload (and the pacer) and LD_PRELOAD
 *   agilerun_elf.c      the warnings for programs LD_PRELOAD cannot reach
 *   agilerun_seccomp.c  --seccomp: the filter and the pacer's process
 */
#ifndef AGILE_TOOLS_AGILERUN_H
#define AGILE_TOOLS_AGILERUN_H

#include <stdbool.h>

#define LIBRARY_NAME "libagilepreload.so"
/* The seccomp pacer (pacer.h), installed beside the preload and found the
 * same way: a library of its own, so that the preload every target loads
 * does not carry the supervisor. */
#define PACER_LIBRARY_NAME "libagilepacer.so"

/* Exit statuses, as documented in agilerun(1). */
#define EXIT_CONFIG 2        /* bad option or -d, like AGILE_STRICT=1 */
#define EXIT_AGILERUN 125    /* agilerun itself failed (env(1)'s 125) */
#define EXIT_CANNOT_RUN 126  /* the command exists but cannot be run */
#define EXIT_NOT_FOUND 127   /* the command was not found */

/* -v: print the environment set and the command run. */
extern bool agilerun_verbose;

/* setenv(3), or exit EXIT_AGILERUN; printed under -v (agilerun_env.c). */
void agilerun_set_variable(const char *name, const char *value);
/* Check one -d SPEC and set its variable: the number of problems reported
 * (agilerun_env.c). */
int agilerun_apply_spec(const char *spec);
/* Problems with AGILE_REDIS, which -d options with fleet settings need;
 * then with the rules the environment holds as a whole. */
int agilerun_check_redis(void);
int agilerun_count_rules(void);
/* -s STATE: AGILE_STATE, as an absolute path. */
void agilerun_set_state(const char *path);

/* The absolute path of library `name` (LIBRARY_NAME or PACER_LIBRARY_NAME)
 * in out (PATH_MAX bytes), or exit EXIT_AGILERUN; LD_PRELOAD with the
 * preload first (agilerun_library.c). */
void agilerun_find_library(const char *name, char *out);
void agilerun_set_preload(const char *library);

/* One line for each reason the command will escape the preload, unless
 * --seccomp (`paced`) reaches it anyway (agilerun_elf.c). */
void agilerun_warn_unthrottled(const char *command, bool paced);

/* --seccomp: start the pacer (loading `library`) and install the filter;
 * true when the command's connects will be paced (agilerun_seccomp.c). */
bool agilerun_start_pacer(const char *library);

#endif /* AGILE_TOOLS_AGILERUN_H */
