/*
 * hooks_accept.c - accept and accept4, for AGILE_LISTEN_ rules (inbound.c).
 *
 * A connection the listener sheds is closed before the program sees it, and
 * the hook accepts the next one in its place: a blocking accept waits for
 * it as it would have anyway, a non-blocking one returns EAGAIN when none is
 * pending, which the program's event loop already handles.
 */
#include "config.h"

#include <errno.h>
#include <sys/socket.h>

#include "destinations.h"
#include "hooks.h"
#include "inbound.h"
#include "usermem.h"

static int hook_accept4(int fd, struct sockaddr *addr, socklen_t *len,
                        int flags, bool four)
{
	socklen_t given = 0;

	agile__bind();
	/* Without listener rules nothing is shed and nothing is read; with
	 * them, the length is read from a copy, and one the kernel would
	 * refuse is its to refuse (usermem.h). */
	if (agile__busy || agile__disabled ||
	    !agile__destinations_any_listen() ||
	    (len != NULL && agile__copy_in(&given, len, sizeof(given)) < 0))
		return four ? agile__libc.accept4(fd, addr, len, flags)
		            : agile__libc.accept(fd, addr, len);
	for (;;) {
		int rc;

		if (len != NULL)
			*len = given;
		rc = four ? agile__libc.accept4(fd, addr, len, flags)
		          : agile__libc.accept(fd, addr, len);
		if (rc < 0 || agile__busy || agile__disabled ||
		    agile__inbound_accepted(fd, rc) == 0)
			return rc;
	}
}

AGILE_EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	return hook_accept4(fd, addr, len, 0, false);
}

AGILE_EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *len,
                         int flags)
{
	return hook_accept4(fd, addr, len, flags, true);
}
