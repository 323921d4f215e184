/*
 * log.h - the preload's diagnostics: one line per message on stderr, prefixed
 * "agilepreload: ", never on stdout (the host program owns it).
 *
 * AGILE_LOG=error|warn|info|debug selects the level; the default is warn, so
 * a correctly configured program prints nothing.
 */
#ifndef AGILE_PRELOAD_LOG_H
#define AGILE_PRELOAD_LOG_H

enum agile_log_level {
	AGILE_LOG_ERROR = 0, /* the preload cannot do what was asked */
	AGILE_LOG_WARN,      /* it does less than asked (fallback, bad setting) */
	AGILE_LOG_INFO,      /* one line per attachment and state file event */
	AGILE_LOG_DEBUG      /* per-connection detail */
};

/* Read AGILE_LOG; called once from the configuration load.  An unknown
 * value keeps the default and is reported. */
void agile__log_init(void);

/*
 * Note which open file descriptor 2 is (its device and inode); called by the
 * constructor, before main() can change it.  Messages are written only while
 * fd 2 is still that file: a program that closes its stderr may get the
 * number back for a socket, a pipe or a file of its own, and a line of ours
 * written there would corrupt its data.  When fd 2 is closed at start-up,
 * is a socket other than journald's, or is found a closed pipe, nothing is
 * printed there (log.c).
 */
void agile__log_note_stderr(void);

struct agile_state_header;

/* The state file is mapped: messages stderr cannot take are counted in its
 * header from now on, with those kept since the start (log.c). */
void agile__log_attach(struct agile_state_header *header);

/* True when a message at `level` would be printed. */
int agile__log_enabled(enum agile_log_level level);

/* Print one line; errno is preserved. */
void agile__log(enum agile_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif /* AGILE_PRELOAD_LOG_H */
