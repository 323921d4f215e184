/*
 * rules_dest.c - the first word of a rule: a destination (IPv4:PORT,
 * [IPv6]:PORT, CIDR:PORT, HOST:PORT, unix:/path or unix:@name) or a
 * listening address, read into the rule, and the message for each way it
 * can be wrong.
 *
 * Addresses are stored as IPv4-mapped IPv6 with their host bits cleared,
 * so matching (rules_match.c) is one masked comparison for both families.
 */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "rules_internal.h"

/* PORT := 1..65535 | *  ->  0 for `*`. */
static enum dest_error parse_port(const char *text, int *port)
{
	uint64_t value;

	if (strcmp(text, "*") == 0) {
		*port = 0;
		return DEST_OK;
	}
	switch (agile__lex_whole(text, UINT32_MAX, &value)) {
	case NUMBER_OK:
		break;
	case NUMBER_TOO_LARGE:
	case NUMBER_NEGATIVE:
		return DEST_BAD_PORT;
	default:
		return DEST_UNREADABLE;
	}
	if (value == 0 || value > 65535)
		return DEST_BAD_PORT;
	*port = (int)value;
	return DEST_OK;
}

/* "/len" after an address, or nothing: the full length. */
static enum dest_error parse_prefix_len(const char *text, int bits, int *len)
{
	uint64_t value;

	if (text == NULL) {
		*len = bits;
		return DEST_OK;
	}
	if (agile__lex_whole(text, 1000, &value) != NUMBER_OK)
		return *text == '\0' ? DEST_UNREADABLE : DEST_BAD_PREFIX;
	if (value > (uint64_t)bits)
		return DEST_BAD_PREFIX;
	*len = (int)value;
	return DEST_OK;
}

/* Zero the bits past the prefix so matching is one masked comparison and
 * 10.0.0.1/8 means the same as 10.0.0.0/8; returns whether any was set. */
static bool mask_prefix(struct agile_inet_prefix *p)
{
	bool dropped = false;

	for (int i = 0; i < 16; i++) {
		int keep = p->prefix_len - i * 8;
		uint8_t mask;

		if (keep >= 8)
			continue;
		mask = keep <= 0 ? 0 : (uint8_t)(0xff << (8 - keep));
		dropped |= (p->addr[i] & ~mask) != 0;
		p->addr[i] &= mask;
	}
	return dropped;
}

void agile__rules_map_ipv4(struct agile_inet_prefix *p,
                           const struct in_addr *a)
{
	memset(p->addr, 0, 10);
	p->addr[10] = 0xff;
	p->addr[11] = 0xff;
	memcpy(p->addr + 12, a, 4);
}

/* An address with an optional "/len", in a buffer we may cut. */
static enum dest_error parse_address(char *text, bool ipv6,
                                     struct agile_inet_prefix *out)
{
	char *slash = strchr(text, '/');
	const char *len_text = NULL;
	int len;
	enum dest_error e;

	if (slash != NULL) {
		*slash = '\0';
		len_text = slash + 1;
	}
	if (ipv6) {
		struct in6_addr a6;
		if (inet_pton(AF_INET6, text, &a6) != 1)
			return DEST_UNREADABLE;
		e = parse_prefix_len(len_text, 128, &len);
		if (e != DEST_OK)
			return e;
		memcpy(out->addr, &a6, 16);
		out->prefix_len = (uint8_t)len;
	} else {
		struct in_addr a4;
		if (inet_pton(AF_INET, text, &a4) != 1)
			return DEST_UNREADABLE;
		e = parse_prefix_len(len_text, 32, &len);
		if (e != DEST_OK)
			return e;
		agile__rules_map_ipv4(out, &a4);
		out->prefix_len = (uint8_t)(96 + len);
	}
	return mask_prefix(out) ? DEST_HOST_BITS : DEST_OK;
}

/* A hostname: letters, digits, '-', '_' and '.', in non-empty labels, with
 * at least one character that is not a digit or a dot (else it is a
 * mistyped IPv4 address, and saying so is kinder than a DNS failure). */
static bool is_hostname(const char *text)
{
	size_t label = 0;
	bool has_letter = false;

	if (*text == '\0' || strlen(text) >= AGILE_RULE_DEST_MAX)
		return false;
	for (const char *p = text; *p != '\0'; p++) {
		unsigned char c = (unsigned char)*p;
		if (c == '.') {
			if (label == 0)
				return false;
			label = 0;
			continue;
		}
		if (!isalnum(c) && c != '-' && c != '_')
			return false;
		if (!isdigit(c))
			has_letter = true;
		label++;
	}
	return has_letter;
}

static enum dest_error parse_unix(const char *path, struct agile_rule *rule)
{
	if (path[0] != '/' && path[0] != '@')
		return DEST_UNREADABLE;
	if (path[1] == '\0')
		return DEST_UNREADABLE;
	if (strlen(path) >= sizeof(rule->unix_path))
		return DEST_TOO_LONG;
	rule->kind = AGILE_DEST_UNIX;
	strcpy(rule->unix_path, path);
	return DEST_OK;
}

void agile__rules_copy_text(char *dst, size_t size, const char *src,
                            size_t len, bool lower)
{
	size_t n = 0;

	for (; n < len && n + 1 < size; n++)
		dst[n] = lower ? (char)tolower((unsigned char)src[n]) : src[n];
	dst[n] = '\0';
}

void agile__rules_normalise_host(char *dst, size_t size, const char *src)
{
	size_t n;

	agile__rules_copy_text(dst, size, src, strlen(src), true);
	n = strlen(dst);
	if (n > 0 && dst[n - 1] == '.')
		dst[n - 1] = '\0';
}

enum dest_error agile__rules_dest(const char *text, struct agile_rule *rule)
{
	char buf[AGILE_RULE_DEST_MAX];
	char *host;
	char *port_text;
	enum dest_error e;

	if (strncmp(text, "unix:", 5) == 0)
		return parse_unix(text + 5, rule);
	if (strlen(text) >= sizeof(buf))
		return DEST_UNREADABLE;
	strcpy(buf, text);

	if (buf[0] == '[') {
		char *close = strchr(buf, ']');
		if (close != NULL && close[1] == '\0')
			return DEST_NO_PORT;
		if (close != NULL && close[1] == '/')
			return DEST_PREFIX_OUTSIDE;
		if (close == NULL || close[1] != ':')
			return DEST_UNREADABLE;
		*close = '\0';
		host = buf + 1;
		port_text = close + 2;
		e = parse_port(port_text, &rule->port);
		if (e != DEST_OK)
			return e;
		rule->kind = AGILE_DEST_INET;
		return parse_address(host, true, &rule->prefix);
	}

	port_text = strrchr(buf, ':');
	if (port_text == NULL)
		return buf[0] != '\0' && strchr(buf, '=') == NULL ? DEST_NO_PORT
		                                                 : DEST_UNREADABLE;
	*port_text++ = '\0';
	host = buf;
	/* A second colon means an IPv6 address without its brackets. */
	if (strchr(host, ':') != NULL)
		return DEST_BRACKETS;
	e = parse_port(port_text, &rule->port);
	if (e != DEST_OK)
		return e;

	if (strcmp(host, "*") == 0) {
		rule->kind = AGILE_DEST_INET;
		memset(&rule->prefix, 0, sizeof(rule->prefix));
		return DEST_OK;
	}
	if (host[0] != '\0' && strspn(host, "0123456789./") == strlen(host)) {
		rule->kind = AGILE_DEST_INET;
		return parse_address(host, false, &rule->prefix);
	}
	if (!is_hostname(host))
		return DEST_UNREADABLE;
	/* getaddrinfo would read "0x7f.0.0.1", "127.1" or "2130706433" as
	 * an IPv4 address, never look it up: not a host name. */
	if (inet_aton(host, &(struct in_addr){ 0 }) != 0)
		return DEST_NUMERIC_FORM;
	rule->kind = AGILE_DEST_HOST;
	agile__rules_normalise_host(rule->host, sizeof(rule->host), host);
	return DEST_OK;
}

void agile__rules_report_dest(struct reporter *r, const char *text,
                              enum dest_error e, bool inbound)
{
	const char *what = inbound ? "listening address" : "destination";

	switch (e) {
	case DEST_NO_PORT:
		report(r, "%s \"%.*s\" has no port; %s", what, QUOTE_MAX, text,
		       inbound ? LISTEN_EXPECTED
		               : "expected ADDRESS:PORT, with PORT from 1 to "
		                 "65535 or *");
		break;
	case DEST_BRACKETS:
		report(r, "%s \"%.*s\": an IPv6 address needs brackets; "
		       "expected [IPv6]:PORT such as [::1]:5432", what, QUOTE_MAX,
		       text);
		break;
	case DEST_PREFIX_OUTSIDE:
		report(r, "%s \"%.*s\": the prefix length goes inside the "
		       "brackets; expected [IPv6/LEN]:PORT such as "
		       "[fd00::/8]:443", what, QUOTE_MAX, text);
		break;
	case DEST_BAD_PORT:
		report(r, "%s \"%.*s\": the port is out of range; expected 1 to "
		       "65535, or * for any port", what, QUOTE_MAX, text);
		break;
	case DEST_BAD_PREFIX:
		report(r, "%s \"%.*s\": the prefix length is out of range; "
		       "expected /0 to /32 for IPv4 and /0 to /128 for IPv6",
		       what, QUOTE_MAX, text);
		break;
	case DEST_TOO_LONG:
		report(r, "%s \"%.*s\": the path is too long; expected at most "
		       "%zu bytes", what, QUOTE_MAX, text,
		       sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
		break;
	case DEST_NOT_LISTENABLE:
		report(r, "listening address \"%.*s\": a listener is matched "
		       "by the address its socket is bound to, never by a host "
		       "name or a path; " LISTEN_EXPECTED, QUOTE_MAX, text);
		break;
	case DEST_NUMERIC_FORM:
		report(r, "%s \"%.*s\": an IPv4 address must be written in "
		       "dotted decimal, not in hexadecimal, octal or fewer "
		       "parts; expected ADDRESS:PORT such as 127.0.0.1:8080",
		       what, QUOTE_MAX, text);
		break;
	case DEST_HOST_BITS:
		report(r, "%s \"%.*s\": the address has bits set past its "
		       "prefix length, which are ignored; expected the "
		       "network's first address, such as 10.0.0.0/8", what,
		       QUOTE_MAX, text);
		break;
	case DEST_OK:
	case DEST_UNREADABLE:
		report(r, "cannot read %s \"%.*s\"; %s", what, QUOTE_MAX, text,
		       inbound ? LISTEN_EXPECTED : DEST_EXPECTED);
		break;
	}
}
