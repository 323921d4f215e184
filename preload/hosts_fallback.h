/*
 * hosts_fallback.h - resolving the configured host names the program has
 * not looked up itself, once per process, off the connect path
 * (hosts_fallback.c says how and why).
 */
#ifndef AGILE_PRELOAD_HOSTS_FALLBACK_H
#define AGILE_PRELOAD_HOSTS_FALLBACK_H

#include <stdbool.h>

/* A connect matched no rule: start the lookup if it has not started (the
 * names /etc/hosts gives are learnt at once), and, unless the connect is
 * non-blocking, wait for it at most until 20 ms after it started.  True
 * when something was learnt meanwhile (match again), false when the
 * lookup goes on.  errno is preserved. */
bool agile__hosts_fallback_wait(void);

/* The socket whose connect the next match is for (-1: none, as for the
 * pacer's matches): a non-blocking one never waits for the lookup. */
void agile__hosts_fallback_connecting(int fd);

/* Whether the lookup is over, without waiting or starting it. */
bool agile__hosts_fallback_done(void);

/* In a fork() child: the lookup's thread stayed in the parent. */
void agile__hosts_fallback_atfork_child(void);

#endif /* AGILE_PRELOAD_HOSTS_FALLBACK_H */
