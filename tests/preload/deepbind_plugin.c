/*
 * deepbind_plugin.c - a client library, as libcurl is to PHP's extension.
 *
 *     int deepbind_requests(int port, int n);
 *
 * Makes n HTTP/1.0 requests to 127.0.0.1:port, a connection each, through
 * connect(), write() and read() bound when the library is loaded.  Returns
 * 0 when every response was read whole.  Built by tests/preload/deepbind.sh.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int deepbind_requests(int port, int n);

int deepbind_requests(int port, int n)
{
	static const char request[] = "GET /deepbind HTTP/1.0\r\n\r\n";

	for (int i = 0; i < n; i++) {
		struct sockaddr_in a = { .sin_family = AF_INET,
		                         .sin_port = htons((unsigned short)port) };
		char buf[4096];
		size_t total = 0;
		ssize_t got;
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
		    write(fd, request, strlen(request)) !=
		    (ssize_t)strlen(request))
			return -1;
		while ((got = read(fd, buf, sizeof(buf))) > 0)
			total += (size_t)got;
		close(fd);
		if (got < 0 || total == 0)
			return -1;
	}
	return 0;
}
