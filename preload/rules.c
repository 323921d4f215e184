/* rules.c - placeholder until the rules parser lands. */
