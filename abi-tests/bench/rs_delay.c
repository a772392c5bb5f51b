/*
 * rs_delay.c — (make bench only, part 7) preloaded into both rstream
 * processes: after every rrecv that returns data, RS_DELAY_N iterations of
 * a three-instruction loop (a memory increment, a decrement, a branch) run
 * before the call returns to the program. The latency a run gains per added
 * instruction says what a library's own instructions on that path weigh in
 * rstream's latency on this bed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/types.h>

static ssize_t (*next_rrecv)(int, void *, size_t, int);
static long iterations;

static void spin(long n)
{
	long x = 0;

	if (n > 0)
		__asm__ volatile("1:\n\tincq %1\n\tdecq %0\n\tjnz 1b" : "+r"(n), "+m"(x) : : "cc");
}

ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	ssize_t r;

	if (!next_rrecv) {
		const char *e = getenv("RS_DELAY_N");

		iterations = e ? atol(e) : 0;
		next_rrecv = (ssize_t (*)(int, void *, size_t, int))dlsym(RTLD_NEXT, "rrecv");
		if (!next_rrecv)
			abort();
	}
	r = next_rrecv(socket, buf, len, flags);
	if (r > 0)
		spin(iterations);
	return r;
}
