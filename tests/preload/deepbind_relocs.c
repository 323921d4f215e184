/*
 * deepbind_relocs.c - a library with 65536 relocations, built by
 * tests/preload/deepbind_stress.sh.
 *
 * Each entry of the table below is the address of a variable of the
 * library, which the loader relocates at load time: the preload's pass over
 * the relocations of the objects a deep-binding dlopen leaves after it
 * takes long enough on this one for another thread's dlclose to unload it
 * meanwhile.
 */
static int cell;

#define CELL1 &cell,
#define CELL4 CELL1 CELL1 CELL1 CELL1
#define CELL16 CELL4 CELL4 CELL4 CELL4
#define CELL256 CELL16 CELL16 CELL16 CELL16 CELL16 CELL16 CELL16 CELL16 \
	CELL16 CELL16 CELL16 CELL16 CELL16 CELL16 CELL16 CELL16
#define CELL4096 CELL256 CELL256 CELL256 CELL256 CELL256 CELL256 CELL256 \
	CELL256 CELL256 CELL256 CELL256 CELL256 CELL256 CELL256 CELL256 CELL256

int *deepbind_cells[] = {
	CELL4096 CELL4096 CELL4096 CELL4096 CELL4096 CELL4096 CELL4096 CELL4096
	CELL4096 CELL4096 CELL4096 CELL4096 CELL4096 CELL4096 CELL4096 CELL4096
};
