/*
 * rs_window.c — (make bench only, part 8) an LD_PRELOAD library for both
 * rstream processes: each notes CLOCK_MONOTONIC at its first and its last
 * rsend of a 64-byte message (rstream's timed loop: its warm-up exchange
 * sends 16 bytes) and appends on exit to the file RS_WINDOW_OUT (else
 * stderr: bench_out.h) "rs_window: FIRST LAST COUNT" in seconds, on the
 * clock `perf record -k CLOCK_MONOTONIC` stamps its events with; part 8
 * takes the span both lines share as the loop. Only a process that sent
 * such a message writes a line (a preload reaches timeout's process too).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>

#include "bench_out.h"

static ssize_t (*real_rsend)(int, const void *, size_t, int);
static double first, last;
static long count;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

__attribute__((constructor)) static void init(void)
{
	real_rsend = (ssize_t(*)(int, const void *, size_t, int))dlsym(RTLD_NEXT, "rsend");
}

ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	if (len == 64) {
		double t = now();

		if (!count++)
			first = t;
		last = t;
	}
	if (!real_rsend)
		abort();
	return real_rsend(socket, buf, len, flags);
}

__attribute__((destructor)) static void fini(void)
{
	if (count)
		bench_out("RS_WINDOW_OUT", "rs_window: %.6f %.6f %ld\n", first, last, count);
}
