/* config.c - placeholder until its module lands. */
