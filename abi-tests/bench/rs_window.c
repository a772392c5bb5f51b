/*
 * rs_window.c — (make bench only, part 8) an LD_PRELOAD library for the
 * rstream client: it notes CLOCK_MONOTONIC at the first and the last rsend
 * of a 64-byte message (rstream's timed loop: its warm-up exchange sends 16
 * bytes) and appends on exit to the file RS_WINDOW_OUT (else stderr)
 * "rs_window: FIRST LAST COUNT" in seconds, on the clock `perf record -k
 * CLOCK_MONOTONIC` stamps its events with. Only a process that sent such a
 * message writes the line (a preload reaches timeout's process too).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>

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
	const char *path = getenv("RS_WINDOW_OUT");
	FILE *f;

	if (!count)
		return;
	f = path ? fopen(path, "a") : NULL;
	fprintf(f ? f : stderr, "rs_window: %.6f %.6f %ld\n", first, last, count);
	if (f)
		fclose(f);
}
