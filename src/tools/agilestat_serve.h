/*
 * agilestat_serve.h - agilestat --serve ADDRESS: the state file over
 * HTTP/1.1, for Prometheus and for a browser (agilestat_serve.c).
 *
 * The documents themselves are agilestat's own --json, --prometheus and
 * --history output: agilestat.c passes a function that prints one of them
 * on stdout, and the server captures what it prints.
 */
#ifndef AGILESTAT_SERVE_H
#define AGILESTAT_SERVE_H

#include <stddef.h>

/* The documents the server asks agilestat.c for. */
enum agilestat_document {
	AGILESTAT_DOC_JSON,       /* what --json prints */
	AGILESTAT_DOC_PROMETHEUS, /* what --prometheus prints */
	AGILESTAT_DOC_HISTORY,    /* what --history prints (CSV) */
};

/*
 * Print DOC for the state file at STATE_PATH on stdout.  A state file that
 * does not exist yet is no destination, not an error (the server is often
 * started before the programs it watches).  Returns 0, or a negative errno
 * with a one-line reason in WHY.
 */
typedef int agilestat_render_fn(const char *state_path,
                                enum agilestat_document doc, char *why,
                                size_t why_len);

/*
 * Serve the state file at STATE_PATH on ADDRESS until SIGINT or SIGTERM:
 * "PORT" or ":PORT" (127.0.0.1), "HOST:PORT", "[IPV6]:PORT", or
 * "unix:/PATH".  Prints the address it listens on (with the port chosen
 * when PORT is 0) on stdout.  Returns the exit status: 0 after a signal,
 * 1 when it cannot listen, 2 for an ADDRESS it cannot read (with a message
 * on stderr).
 */
int agilestat_serve(const char *address, const char *state_path,
                    agilestat_render_fn *render);

/* The live page served at "/" (agilestat_page.html, embedded at build
 * time by src/tools/embed.sh into agilestat_page.c). */
extern const char agilestat_page[];
extern const size_t agilestat_page_size;

#endif /* AGILESTAT_SERVE_H */
