/*
 * rs_bwtime.c — (make bench only) an LD_PRELOAD library that splits the
 * data phase of an rstream bandwidth run (one process) into where its time
 * went, for whichever librdmacm comes after it in the lookup order:
 *   send_ok     rsend calls that sent something (their whole time)
 *   send_again  rsend calls that sent nothing (EAGAIN)
 *   recv_data   rrecv calls that returned data (their whole time)
 *   recv_none   rrecv calls that returned nothing (EAGAIN, end of file)
 *   w_send      write(2) calls made inside an rsend: libibverbs' doorbells,
 *               in which soft-RoCE does the messages' protocol work
 *   w_recv      write(2) calls made inside an rrecv (credit updates)
 *   w_other     any other write(2) of the process (other threads included)
 * The data phase runs from the first rsend or rrecv of at least 4 KiB to
 * exit. Times come from the time-stamp counter, converted to milliseconds
 * with the counter's rate over the whole process (measured against
 * CLOCK_MONOTONIC from load to exit). At exit one line is appended to the
 * file named by RS_BWTIME_OUT:
 *   TAG data_ms MS send_ok MS N send_again MS N recv_data MS N recv_none MS N
 *       w_send MS N w_recv MS N w_other MS N utime MS stime MS nivcsw N
 * (TAG from RS_BWTIME_TAG; utime, stime and nivcsw from getrusage, the
 * whole process). Nothing is written for a process that moved less than
 * 1 MiB.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <time.h>
#include <x86intrin.h>

enum { SEND_OK, SEND_AGAIN, RECV_DATA, RECV_NONE, W_SEND, W_RECV, W_OTHER, KINDS };
static const char *const names[KINDS] = { "send_ok", "send_again", "recv_data", "recv_none",
					  "w_send", "w_recv", "w_other" };
static unsigned long long cycles[KINDS], calls[KINDS], moved, start_tsc, data_tsc;
static struct timespec start_wall;

static ssize_t (*real_rsend)(int, const void *, size_t, int);
static ssize_t (*real_rrecv)(int, void *, size_t, int);
static ssize_t (*real_write)(int, const void *, size_t);

/* 1 inside an rsend, 2 inside an rrecv (this thread). */
static __thread int inside;

__attribute__((constructor)) static void bwtime_start(void)
{
	real_rsend = (ssize_t(*)(int, const void *, size_t, int))dlsym(RTLD_NEXT, "rsend");
	real_rrecv = (ssize_t(*)(int, void *, size_t, int))dlsym(RTLD_NEXT, "rrecv");
	real_write = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	clock_gettime(CLOCK_MONOTONIC, &start_wall);
	start_tsc = __rdtsc();
}

static double ms(unsigned long long c, double per_ns)
{
	return c / per_ns / 1e6;
}

__attribute__((destructor)) static void bwtime_report(void)
{
	struct timespec end_wall;
	struct rusage ru;
	unsigned long long end_tsc = __rdtsc();
	const char *path = getenv("RS_BWTIME_OUT"), *tag = getenv("RS_BWTIME_TAG");
	double ns, per_ns;
	FILE *f;
	int k;

	clock_gettime(CLOCK_MONOTONIC, &end_wall);
	ns = (end_wall.tv_sec - start_wall.tv_sec) * 1e9 + (end_wall.tv_nsec - start_wall.tv_nsec);
	if (!path || moved < (1 << 20) || !data_tsc || ns <= 0 || end_tsc <= start_tsc)
		return;
	per_ns = (end_tsc - start_tsc) / ns;
	getrusage(RUSAGE_SELF, &ru);
	f = fopen(path, "a");
	if (!f)
		return;
	fprintf(f, "%s data_ms %.3f", tag ? tag : "-", ms(end_tsc - data_tsc, per_ns));
	for (k = 0; k < KINDS; k++)
		fprintf(f, " %s %.3f %llu", names[k], ms(__atomic_load_n(&cycles[k], __ATOMIC_RELAXED), per_ns),
			__atomic_load_n(&calls[k], __ATOMIC_RELAXED));
	fprintf(f, " utime %.3f stime %.3f nivcsw %ld\n", ru.ru_utime.tv_sec * 1e3 + ru.ru_utime.tv_usec / 1e3,
		ru.ru_stime.tv_sec * 1e3 + ru.ru_stime.tv_usec / 1e3, ru.ru_nivcsw);
	fclose(f);
}

static void count(int kind, unsigned long long t0)
{
	__atomic_fetch_add(&cycles[kind], __rdtsc() - t0, __ATOMIC_RELAXED);
	__atomic_fetch_add(&calls[kind], 1, __ATOMIC_RELAXED);
}

/* The start of an rsend (1) or rrecv (2) of len bytes. */
static unsigned long long begin(int where, size_t len)
{
	unsigned long long t0 = __rdtsc();

	if (!data_tsc && len >= 4096)
		data_tsc = t0;
	inside = where;
	return t0;
}

/* Its end: counted as `ok` if it moved data, else as `none`. */
static ssize_t end(ssize_t r, int ok, int none, unsigned long long t0)
{
	inside = 0;
	count(r > 0 ? ok : none, t0);
	if (r > 0)
		moved += r;
	return r;
}

ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	unsigned long long t0 = begin(1, len);

	return end(real_rsend(socket, buf, len, flags), SEND_OK, SEND_AGAIN, t0);
}

ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	unsigned long long t0 = begin(2, len);

	return end(real_rrecv(socket, buf, len, flags), RECV_DATA, RECV_NONE, t0);
}

ssize_t write(int fd, const void *buf, size_t len)
{
	unsigned long long t0 = __rdtsc();
	ssize_t r = real_write(fd, buf, len);

	count(inside == 1 ? W_SEND : inside == 2 ? W_RECV : W_OTHER, t0);
	return r;
}
