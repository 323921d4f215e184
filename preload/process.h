/*
 * process.h - the preload's per-process life cycle: the constructor (setuid
 * check, AGILE_STRICT), and the fork handlers that keep per-process state
 * right in a child while the shared mapping stays as it is.
 */
#ifndef AGILE_PRELOAD_PROCESS_H
#define AGILE_PRELOAD_PROCESS_H

#include <stdbool.h>

/* True when AGILE_STRICT=1: configuration and state-file failures stop the
 * process (exit status 2) instead of degrading. */
bool agile__strict(void);

/* Register the fork handlers; called once, from symbol binding, before any
 * preload lock can be taken. */
void agile__process_register_atfork(void);

/* Stop the process because of a failure under AGILE_STRICT=1. */
__attribute__((noreturn)) void agile__strict_exit(void);

#endif /* AGILE_PRELOAD_PROCESS_H */
