/* controller.c - placeholder until its module lands. */
