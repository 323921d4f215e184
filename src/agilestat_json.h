/*
 * agilestat_json.h - how agilestat's modules write a string into its --json
 * output, so the destinations' names and the fleet's Redis address and
 * error are escaped the one same way.
 */
#ifndef AGILESTAT_JSON_H
#define AGILESTAT_JSON_H

#include <stdio.h>

/* `s` as a JSON string on stdout: quoted, '"' and '\' escaped, and every
 * control character as \u00XX. */
static inline void agilestat_json_string(const char *s)
{
	putchar('"');
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

#endif /* AGILESTAT_JSON_H */
