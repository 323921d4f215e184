/*
 * hooks_dns.c - name lookups: getaddrinfo and gethostbyname.  The addresses
 * a program resolves for a configured hostname are what its connects to
 * that name will use, so they are fed to the hostname rules; a lookup of a
 * configured name that fails counts as unreachable for its destination.
 */
#include "config.h"

#include <errno.h>
#include <netdb.h>

#include "destinations.h"
#include "hooks.h"

static int hook_getaddrinfo(const char *node, const char *service,
                            const struct addrinfo *hints,
                            struct addrinfo **res)
{
	int rc, saved;

	agile__bind();
	rc = agile__libc.getaddrinfo(node, service, hints, res);
	if (agile__busy || agile__disabled || node == NULL)
		return rc;
	saved = errno;
	agile__enter();
	agile__destinations_learn_addrinfo(node, rc == 0 ? *res : NULL, rc);
	agile__leave();
	errno = saved;
	return rc;
}

static struct hostent *hook_gethostbyname(const char *name)
{
	struct hostent *he;
	int saved, herr;

	agile__bind();
	he = agile__libc.gethostbyname(name);
	if (agile__busy || agile__disabled || name == NULL)
		return he;
	saved = errno;
	herr = h_errno;
	agile__enter();
	if (he != NULL)
		agile__destinations_learn_hostent(name, he);
	else if (herr == HOST_NOT_FOUND || herr == TRY_AGAIN ||
	         herr == NO_RECOVERY)
		agile__destinations_learn_addrinfo(name, NULL, EAI_NONAME);
	agile__leave();
	h_errno = herr;
	errno = saved;
	return he;
}

AGILE_EXPORT int getaddrinfo(const char *node, const char *service,
                             const struct addrinfo *hints,
                             struct addrinfo **res)
{
	return hook_getaddrinfo(node, service, hints, res);
}

AGILE_EXPORT struct hostent *gethostbyname(const char *name)
{
	return hook_gethostbyname(name);
}
