/* limiter.c - placeholder until its module lands. */
