/*
 * pacer.h - the contract between agilerun --seccomp, the seccomp pacer
 * (preload/pacer/pacer.c, built as libagilepacer.so) and the preload: the
 * pacer's entry point, and the mark the preload's own connects carry.
 * agilerun loads libagilepacer.so into a process of its own and calls
 * agile_pacer_run there.
 */
#ifndef AGILE_COMMON_PACER_H
#define AGILE_COMMON_PACER_H

/* Load the rules and attach each destination's slot, then take the
 * listener of the seccomp filter from `handshake(arg)` and answer its
 * connect notifications until no process is left under the filter.
 * `command` is a pidfd of the command's first process, or -1: once that
 * process has ended, the pacer's standard error is /dev/null, so that a
 * caller reading the command's output (`$(agilerun ... 2>&1)`) is not kept
 * waiting by the processes it left running.  Returns 0 when no process is
 * left, or when `handshake` returns -1 (there is no listener to answer);
 * -1 (errno set) when the listener cannot be used.  Configured from the
 * environment like the preload (AGILE_DEST_*, AGILE_STATE), and stopped
 * by AGILE_STRICT=1 as the preload is, before `handshake` only. */
int agile_pacer_run(int (*handshake)(void *arg), void *arg, int command);

/*
 * The mark the preload puts in the fourth argument of its connect(2) calls
 * when the process is under a seccomp filter (symbols.c): the kernel reads
 * three, and agilerun's filter lets a marked connect through without waking
 * the pacer, since the preload paces those itself.  Sixty-four bits, so
 * that the garbage a three-argument call leaves in that register is never
 * taken for it.
 */
#define AGILE_PACER_MARK 0x61676c65706163edULL

/* Its name, for dlsym. */
#define AGILE_PACER_SYMBOL "agile_pacer_run"

#endif /* AGILE_COMMON_PACER_H */
