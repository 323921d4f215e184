/* bucket.c - placeholder until its module lands. */
