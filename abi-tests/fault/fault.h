/*
 * fault.h — the state failmalloc.so (the LD_PRELOAD allocation-failure
 * shim) shares with the program it runs in and with that program's forked
 * children: one MAP_SHARED page, reached with fault_shim().
 */
#ifndef ABI_TESTS_FAULT_H
#define ABI_TESTS_FAULT_H

#define FAULT_FRAMES 24

struct fault_shim {
	long target;   /* the allocation to fail (1-based); 0: count only */
	long count;    /* allocations counted since fault_arm */
	int armed;     /* counting */
	int fired;     /* the target allocation was made (and failed) */
	int fired_tid; /* the thread that made it */
	int nframes;   /* frames[] filled: where the failed allocation was made */
	char frames[FAULT_FRAMES][96]; /* "object+0xOFFSET", innermost first */
};

/* Exported by the shim (the driver finds them with dlsym). */
struct fault_shim *fault_shim(void);
void fault_arm(long k);
long fault_disarm(void);

#endif
