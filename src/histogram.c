/* histogram.c - placeholder until its module lands. */
