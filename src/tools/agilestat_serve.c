/*
 * agilestat_serve.c - agilestat --serve ADDRESS: a small HTTP/1.1 server
 * that answers
 *
 *   GET /          the live page (agilestat_page.html, embedded)
 *   GET /json      what agilestat --json prints
 *   GET /metrics   what agilestat --prometheus prints, or OpenMetrics 1.0
 *                  when the request's Accept header prefers it
 *   GET /history   what agilestat --history prints (CSV), which the page
 *                  reads once to start with the ticks it missed
 *
 * Each answer is made when it is asked for, from the state file mapped
 * read-only as plain agilestat maps it: the server takes no lock and writes
 * nothing, so no scrape can make a watched program wait.
 *
 * The HTTP is GNU libmicrohttpd's (Debian 12: libmicrohttpd12, 0.9.75).
 * It is a well-kept C library of about 300 KB made for embedding a server
 * in a small tool, and it already does what a server facing any local
 * client must get right: request parsing with a 400 for what does not
 * parse, a bound on each connection's memory (a request line or headers
 * beyond it get a 431), an idle timeout for slow clients, a limit on
 * connections, keep-alive and pipelining, HEAD.  A hand-written poll loop
 * would have to re-implement each of these, and the preload's reasons for
 * hand-writing (it lives inside other programs and may load nothing) do
 * not apply to agilestat, which is a program of its own; the preload does
 * not link libmicrohttpd.
 *
 * One thread runs all connections (MHD_USE_INTERNAL_POLLING_THREAD with
 * epoll, no thread per connection): an answer takes microseconds to make,
 * so one thread serves a hundred scrapers (scripts/bench-serve), and it
 * lets the server capture agilestat's printers by pointing stdout at a
 * memory stream for the length of one call (capture() says why that is
 * safe).
 */
#include "config.h"

#include <arpa/inet.h>
#include <err.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "agilestat_serve.h"

/* A connection idle this long, mid-request or between requests, is
 * closed: a client sending nothing holds a slot no longer. */
#define SERVE_TIMEOUT_S 10
/* Connections open at once; more are closed as they arrive.  A hundred
 * scrapers fit with room to spare, and the file descriptors fit the usual
 * limit of 1024. */
#define SERVE_CONNECTIONS 512
/* Each connection's memory for its request line and headers (and for
 * MHD's own bookkeeping): a request that needs more gets a 431.  A
 * browser's request is under 1 KiB. */
#define SERVE_REQUEST_BYTES (16 * 1024)

#define CONTENT_PROMETHEUS "text/plain; version=0.0.4; charset=utf-8"
#define CONTENT_OPENMETRICS \
	"application/openmetrics-text; version=1.0.0; charset=utf-8"

struct server {
	const char *state_path;
	agilestat_render_fn *render;
};

/* The quality ("q") of one element of an Accept header, 1 when it has
 * none; `params` points after the media type. */
static double accept_quality(const char *params, const char *end)
{
	for (const char *p = params; p < end; p++) {
		if (*p != ';')
			continue;
		p++;
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (end - p > 2 && (p[0] == 'q' || p[0] == 'Q') && p[1] == '=')
			return strtod(p + 2, NULL);
	}
	return 1;
}

/*
 * Whether an Accept header prefers OpenMetrics to the Prometheus text
 * format: application/openmetrics-text with a quality above zero and at
 * least that of text/plain (or of the wildcards that stand for it).
 * Prometheus 2 asks for OpenMetrics first; curl's "*" gets the text
 * format, as does a request with no Accept at all.
 */
static bool wants_openmetrics(const char *accept)
{
	double openmetrics = 0, text = 0;

	if (accept == NULL)
		return false;
	for (const char *item = accept; *item != '\0';) {
		const char *end = strchr(item, ',');
		const char *type_end;
		size_t len;
		double q;

		if (end == NULL)
			end = item + strlen(item);
		while (item < end && (*item == ' ' || *item == '\t'))
			item++;
		type_end = item;
		while (type_end < end && *type_end != ';' && *type_end != ' ')
			type_end++;
		len = (size_t)(type_end - item);
		q = accept_quality(type_end, end);
		if (len == 28 &&
		    strncasecmp(item, "application/openmetrics-text", len) == 0) {
			if (q > openmetrics)
				openmetrics = q;
		} else if ((len == 10 && strncasecmp(item, "text/plain", len) == 0) ||
		           (len == 6 && strncasecmp(item, "text/*", len) == 0) ||
		           (len == 3 && strncmp(item, "*/*", len) == 0)) {
			if (q > text)
				text = q;
		}
		item = *end == ',' ? end + 1 : end;
	}
	return openmetrics > 0 && openmetrics >= text;
}

/*
 * agilestat's printer for DOC, its output captured in a malloc'd buffer
 * (*out, *out_len).  Returns 0, or a negative errno with a reason in WHY.
 *
 * The printers write to stdout (printf, putchar), and glibc's stdout is a
 * variable a program may assign (the GNU C Library manual, "Standard
 * Streams"), so for the length of the call it is a memory stream.  That
 * is safe because only this server's one thread calls printers while it
 * runs: the main thread waits in sigwait() and prints nothing.
 */
static int capture(const struct server *srv, enum agilestat_document doc,
                   char **out, size_t *out_len, char *why, size_t why_len)
{
	FILE *stream, *saved = stdout;
	int rc;

	*out = NULL;
	*out_len = 0;
	stream = open_memstream(out, out_len);
	if (stream == NULL) {
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	stdout = stream;
	rc = srv->render(srv->state_path, doc, why, why_len);
	stdout = saved;
	if (fclose(stream) != 0 && rc == 0) {
		snprintf(why, why_len, "out of memory");
		rc = -ENOMEM;
	}
	if (rc < 0) {
		free(*out);
		*out = NULL;
	}
	return rc;
}

/* One metric family of the Prometheus text, as OpenMetrics names it. */
struct family {
	const char *name; /* in the Prometheus text, not terminated */
	size_t len;
	bool counter;
	bool strip_total; /* OpenMetrics names it without "_total" */
};

/* The family named NAME (LEN bytes) among N, or NULL. */
static const struct family *find_family(const struct family *f, size_t n,
                                        const char *name, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (f[i].len == len && memcmp(f[i].name, name, len) == 0)
			return &f[i];
	return NULL;
}

/* The name after "# HELP " or "# TYPE " on LINE: its length, 0 for a
 * line that is neither. */
static size_t comment_name(const char *line, const char *end,
                           const char **name)
{
	const char *p;

	if (end - line < 8 || (strncmp(line, "# HELP ", 7) != 0 &&
	                       strncmp(line, "# TYPE ", 7) != 0))
		return 0;
	*name = line + 7;
	for (p = *name; p < end && *p != ' '; p++)
		;
	return (size_t)(p - *name);
}

/*
 * The Prometheus text format TEXT (LEN bytes) as OpenMetrics 1.0: the
 * same samples, a counter's family named without the "_total" its samples
 * keep, and "# EOF" at the end.  A counter whose short name is already
 * another family's (agile_samples_total beside the gauge agile_samples)
 * is written as an "unknown" family under its full name instead, since an
 * OpenMetrics document may not name two families alike.  Returns a
 * malloc'd document, or NULL when out of memory.
 */
static char *to_openmetrics(const char *text, size_t len, size_t *out_len)
{
	struct family *families = NULL;
	size_t count = 0, cap = 0;
	const char *end = text + len;
	char *out = NULL;
	FILE *stream;

	/* First every family and its type, so a clash is known before the
	 * first line is written. */
	for (const char *line = text; line < end;) {
		const char *eol = memchr(line, '\n', (size_t)(end - line));
		const char *name;
		size_t name_len;

		if (eol == NULL)
			eol = end;
		name_len = comment_name(line, eol, &name);
		if (name_len > 0 && line[2] == 'T') {
			if (count == cap) {
				struct family *grown;

				cap = cap ? 2 * cap : 64;
				grown = reallocarray(families, cap,
				                     sizeof(*families));
				if (grown == NULL) {
					free(families);
					return NULL;
				}
				families = grown;
			}
			families[count++] = (struct family){
				.name = name, .len = name_len,
				.counter = eol - (name + name_len) == 8 &&
				           memcmp(name + name_len, " counter", 8) == 0,
			};
		}
		line = eol + 1;
	}
	for (size_t i = 0; i < count; i++) {
		struct family *f = &families[i];

		f->strip_total = f->counter && f->len > 6 &&
		                 memcmp(f->name + f->len - 6, "_total", 6) == 0 &&
		                 find_family(families, count, f->name,
		                             f->len - 6) == NULL;
	}

	stream = open_memstream(&out, out_len);
	if (stream == NULL) {
		free(families);
		return NULL;
	}
	for (const char *line = text; line < end;) {
		const char *eol = memchr(line, '\n', (size_t)(end - line));
		const char *name;
		size_t name_len;
		const struct family *f;

		if (eol == NULL)
			eol = end;
		name_len = comment_name(line, eol, &name);
		f = name_len ? find_family(families, count, name, name_len)
		             : NULL;
		if (f == NULL || !f->counter) {
			fwrite(line, 1, (size_t)(eol - line), stream);
		} else if (line[2] == 'T') {
			fprintf(stream, "# TYPE %.*s %s",
			        (int)(f->strip_total ? f->len - 6 : f->len),
			        f->name, f->strip_total ? "counter" : "unknown");
		} else {
			fprintf(stream, "# HELP %.*s%.*s",
			        (int)(f->strip_total ? f->len - 6 : f->len),
			        f->name, (int)(eol - (name + name_len)),
			        name + name_len);
		}
		fputc('\n', stream);
		line = eol + 1;
	}
	fputs("# EOF\n", stream);
	free(families);
	if (fclose(stream) != 0) {
		free(out);
		return NULL;
	}
	return out;
}

/* Queue RESPONSE with STATUS and the headers every answer carries. */
static enum MHD_Result send_response(struct MHD_Connection *connection,
                                     unsigned int status,
                                     struct MHD_Response *response,
                                     const char *content_type)
{
	enum MHD_Result ret;

	if (response == NULL)
		return MHD_NO;
	MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE,
	                        content_type);
	/* Every answer is the state of this instant. */
	MHD_add_response_header(response, MHD_HTTP_HEADER_CACHE_CONTROL,
	                        "no-store");
	MHD_add_response_header(response, "X-Content-Type-Options", "nosniff");
	ret = MHD_queue_response(connection, status, response);
	MHD_destroy_response(response);
	return ret;
}

/* A short text/plain answer. */
static enum MHD_Result send_text(struct MHD_Connection *connection,
                                 unsigned int status, const char *text)
{
	struct MHD_Response *response = MHD_create_response_from_buffer(
		strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);

	return send_response(connection, status, response,
	                     "text/plain; charset=utf-8");
}

/* The live page.  Its policy lets it fetch from this server only, so a
 * page changed to load something from elsewhere would fail to. */
static enum MHD_Result send_page(struct MHD_Connection *connection)
{
	struct MHD_Response *response = MHD_create_response_from_buffer(
		agilestat_page_size, (void *)agilestat_page,
		MHD_RESPMEM_PERSISTENT);

	if (response == NULL)
		return MHD_NO;
	MHD_add_response_header(response, "Content-Security-Policy",
	                        "default-src 'none'; connect-src 'self'; "
	                        "script-src 'unsafe-inline'; "
	                        "style-src 'unsafe-inline'; img-src data:");
	return send_response(connection, MHD_HTTP_OK, response,
	                     "text/html; charset=utf-8");
}

/* One of agilestat's documents, made now. */
static enum MHD_Result send_document(struct MHD_Connection *connection,
                                     const struct server *srv,
                                     enum agilestat_document doc,
                                     const char *content_type,
                                     bool openmetrics)
{
	struct MHD_Response *response;
	char why[200], *body, line[240];
	size_t len;

	if (capture(srv, doc, &body, &len, why, sizeof(why)) < 0) {
		/* A damaged or foreign state file: say why, as agilestat
		 * does, and let a scraper see the target as down. */
		snprintf(line, sizeof(line), "%s: %s\n", srv->state_path, why);
		return send_text(connection, MHD_HTTP_SERVICE_UNAVAILABLE,
		                 line);
	}
	if (openmetrics) {
		char *converted = to_openmetrics(body, len, &len);

		free(body);
		if (converted == NULL)
			return send_text(connection,
			                 MHD_HTTP_INTERNAL_SERVER_ERROR,
			                 "out of memory\n");
		body = converted;
	}
	response = MHD_create_response_from_buffer(len, body,
	                                           MHD_RESPMEM_MUST_FREE);
	if (response == NULL) {
		free(body);
		return MHD_NO;
	}
	return send_response(connection, MHD_HTTP_OK, response, content_type);
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *connection,
                              const char *url, const char *method,
                              const char *version, const char *upload_data,
                              size_t *upload_data_size, void **request)
{
	static int headers_read;
	const struct server *srv = cls;
	bool has_body = MHD_lookup_connection_value(
		connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH) ||
		MHD_lookup_connection_value(
		connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);

	(void)version;
	(void)upload_data;
	(void)upload_data_size;
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
	    strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
		struct MHD_Response *response = MHD_create_response_from_buffer(
			strlen("GET or HEAD only\n"), (void *)"GET or HEAD only\n",
			MHD_RESPMEM_PERSISTENT);

		if (response != NULL)
			MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW,
			                        "GET, HEAD");
		return send_response(connection, MHD_HTTP_METHOD_NOT_ALLOWED,
		                     response, "text/plain; charset=utf-8");
	}
	/*
	 * libmicrohttpd calls once when the headers are in, then for each
	 * piece of a body, then once more.  An answer queued at the first
	 * call makes it close the connection after the answer, without
	 * reading the body: right for a request that has one (a GET has no
	 * use for it, and a client could send one for ever), wrong for one
	 * that has none, whose keep-alive connection would be lost.  So a
	 * request without a body is answered at the second call.
	 */
	if (*request == NULL && !has_body) {
		*request = &headers_read;
		return MHD_YES;
	}
	if (strcmp(url, "/") == 0)
		return send_page(connection);
	if (strcmp(url, "/json") == 0)
		return send_document(connection, srv, AGILESTAT_DOC_JSON,
		                     "application/json", false);
	if (strcmp(url, "/history") == 0)
		return send_document(connection, srv, AGILESTAT_DOC_HISTORY,
		                     "text/csv; charset=utf-8", false);
	if (strcmp(url, "/metrics") == 0) {
		bool om = wants_openmetrics(MHD_lookup_connection_value(
			connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT));

		return send_document(connection, srv, AGILESTAT_DOC_PROMETHEUS,
		                     om ? CONTENT_OPENMETRICS
		                        : CONTENT_PROMETHEUS, om);
	}
	return send_text(connection, MHD_HTTP_NOT_FOUND,
	                 "not found; try /, /metrics, /json or /history\n");
}

/* Where to listen, read from ADDRESS. */
struct listen_address {
	bool unix_socket;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char host[256];
	char port[8];
};

/* Read ADDRESS ("unix:/PATH", "[V6]:PORT", "HOST:PORT", ":PORT" or
 * "PORT").  Returns 0, or -1 with a message on stderr. */
static int parse_address(const char *address, struct listen_address *out)
{
	const char *colon, *port;
	const char *errstr;

	memset(out, 0, sizeof(*out));
	if (strncmp(address, "unix:", 5) == 0) {
		out->unix_socket = true;
		if (address[5] == '\0' ||
		    strlcpy(out->path, address + 5, sizeof(out->path)) >=
		            sizeof(out->path)) {
			warnx("--serve %s: expected unix:PATH with a path of 1 "
			      "to %zu bytes", address, sizeof(out->path) - 1);
			return -1;
		}
		return 0;
	}
	if (address[0] == '[') {
		const char *close = strchr(address, ']');

		if (close == NULL || close[1] != ':' ||
		    (size_t)(close - address - 1) >= sizeof(out->host)) {
			warnx("--serve %s: expected [IPV6]:PORT", address);
			return -1;
		}
		memcpy(out->host, address + 1, (size_t)(close - address - 1));
		port = close + 2;
	} else if ((colon = strrchr(address, ':')) != NULL) {
		if (strchr(address, ':') != colon ||
		    (size_t)(colon - address) >= sizeof(out->host)) {
			warnx("--serve %s: expected HOST:PORT (an IPv6 address "
			      "in brackets: [::1]:9464)", address);
			return -1;
		}
		memcpy(out->host, address, (size_t)(colon - address));
		port = colon + 1;
	} else {
		port = address;
	}
	/* No host is loopback: exposing the page and the metrics beyond
	 * this machine is a choice to make by name (agilestat(1)). */
	if (out->host[0] == '\0')
		strlcpy(out->host, "127.0.0.1", sizeof(out->host));
	(void)strtonum(port, 0, 65535, &errstr);
	if (errstr != NULL || port[0] == '\0') {
		warnx("--serve %s: port \"%s\" is %s (expected 0 to 65535)",
		      address, port, errstr ? errstr : "empty");
		return -1;
	}
	strlcpy(out->port, port, sizeof(out->port));
	return 0;
}

/* A listening Unix socket at PATH.  A socket file left by a server that
 * is gone (nothing accepts on it) is replaced; one in use is not. */
static int listen_unix(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct stat st;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	strlcpy(sun.sun_path, path, sizeof(sun.sun_path));
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0)
		goto bound;
	if (errno != EADDRINUSE || lstat(path, &st) != 0 ||
	    !S_ISSOCK(st.st_mode))
		goto fail;
	{
		int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		bool in_use = probe >= 0 &&
		              connect(probe, (struct sockaddr *)&sun,
		                      sizeof(sun)) == 0;

		if (probe >= 0)
			close(probe);
		if (in_use) {
			errno = EADDRINUSE;
			goto fail;
		}
	}
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0)
		goto fail;
bound:
	if (listen(fd, 128) < 0)
		goto fail;
	return fd;
fail:
	{
		int saved = errno;

		close(fd);
		errno = saved;
		return -1;
	}
}

/* A listening TCP socket on HOST:PORT; the address it took is written to
 * SHOWN ("http://HOST:PORT/"). */
static int listen_tcp(const struct listen_address *a, char *shown,
                      size_t shown_len)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
	                          .ai_flags = AI_ADDRCONFIG };
	struct addrinfo *res, *ai;
	int fd = -1, rc, one = 1;

	rc = getaddrinfo(a->host, a->port, &hints, &res);
	if (rc != 0) {
		warnx("--serve %s:%s: %s", a->host, a->port, gai_strerror(rc));
		errno = 0;
		return -1;
	}
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
		            ai->ai_protocol);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
		    listen(fd, 128) == 0)
			break;
		rc = errno;
		close(fd);
		fd = -1;
		errno = rc;
	}
	freeaddrinfo(res);
	if (fd >= 0) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		char host[INET6_ADDRSTRLEN] = "?";
		unsigned int port = 0;

		getsockname(fd, (struct sockaddr *)&ss, &len);
		if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

			inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
			port = ntohs(s6->sin6_port);
			snprintf(shown, shown_len, "http://[%s]:%u/", host, port);
		} else {
			struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

			inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
			port = ntohs(s4->sin_port);
			snprintf(shown, shown_len, "http://%s:%u/", host, port);
		}
	}
	return fd;
}

int agilestat_serve(const char *address, const char *state_path,
                    agilestat_render_fn *render)
{
	struct server srv = { .state_path = state_path, .render = render };
	struct listen_address a;
	struct MHD_Daemon *daemon;
	sigset_t stop;
	char shown[sizeof(a.path) + 64];
	int fd, sig;

	if (parse_address(address, &a) < 0)
		return 2;
	errno = 0;
	if (a.unix_socket) {
		fd = listen_unix(a.path);
		snprintf(shown, sizeof(shown), "unix:%s", a.path);
	} else {
		fd = listen_tcp(&a, shown, sizeof(shown));
	}
	if (fd < 0) {
		if (errno != 0)
			warn("--serve %s", address);
		return 1;
	}
	/* The server's thread inherits this mask, so the signals reach the
	 * main thread's sigwait() alone.  A client gone mid-answer is an
	 * EPIPE to libmicrohttpd (it sends with MSG_NOSIGNAL), never a
	 * SIGPIPE. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	daemon = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO, 0, NULL, NULL,
		answer, &srv,
		MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)SERVE_TIMEOUT_S,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned int)SERVE_CONNECTIONS,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)SERVE_REQUEST_BYTES,
		MHD_OPTION_END);
	if (daemon == NULL) {
		warnx("--serve %s: libmicrohttpd could not start its server",
		      address);
		close(fd);
		if (a.unix_socket)
			unlink(a.path);
		return 1;
	}
	printf("agilestat: serving %s on %s\n", state_path, shown);
	fflush(stdout);
	sigwait(&stop, &sig);
	/* It closes the listening socket too. */
	MHD_stop_daemon(daemon);
	if (a.unix_socket)
		unlink(a.path);
	return 0;
}
