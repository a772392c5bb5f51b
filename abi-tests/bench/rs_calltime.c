/*
 * rs_calltime.c — (make bench only) an LD_PRELOAD library that measures the
 * wall time a program spends inside each rsend, rrecv and rpoll call of
 * whichever librdmacm comes after it in the lookup order, by kind of call:
 *   send        every rsend
 *   recv_data   an rrecv that returned data
 *   recv_none   an rrecv that returned nothing (EAGAIN, end of file)
 *   poll_ready  an rpoll that reported an event
 *   doorbell    the first write(2) made inside an rsend by the same
 *               thread: the send's doorbell, the system call in which
 *               soft-RoCE does the message's protocol work (a later one in
 *               the same rsend, such as a credit update posted after the
 *               data, is not the data's doorbell)
 * Times come from the time-stamp counter read around each call, converted
 * to nanoseconds with the counter's rate over the whole process (measured
 * against CLOCK_MONOTONIC from load to exit). At exit one line is appended
 * to the file named by RS_CALLTIME_OUT:
 *   TAG send NS COUNT recv_data NS COUNT recv_none NS COUNT poll_ready NS COUNT doorbell NS COUNT
 * (TAG from RS_CALLTIME_TAG). Meant for single-threaded programs such as
 * rstream; nothing is written for a process that made fewer than 100 sends.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>
#include <x86intrin.h>

enum { SEND, RECV_DATA, RECV_NONE, POLL_READY, DOORBELL, KINDS };
static const char *const names[KINDS] = { "send", "recv_data", "recv_none", "poll_ready", "doorbell" };
static unsigned long long cycles[KINDS], calls[KINDS], start_tsc;
static struct timespec start_wall;

static ssize_t (*real_rsend)(int, const void *, size_t, int);
static ssize_t (*real_rrecv)(int, void *, size_t, int);
static ssize_t (*real_write)(int, const void *, size_t);
static int (*real_rpoll)(struct pollfd *, nfds_t, int);

__attribute__((constructor)) static void calltime_start(void)
{
	real_rsend = (ssize_t(*)(int, const void *, size_t, int))dlsym(RTLD_NEXT, "rsend");
	real_rrecv = (ssize_t(*)(int, void *, size_t, int))dlsym(RTLD_NEXT, "rrecv");
	real_write = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	real_rpoll = (int (*)(struct pollfd *, nfds_t, int))dlsym(RTLD_NEXT, "rpoll");
	clock_gettime(CLOCK_MONOTONIC, &start_wall);
	start_tsc = __rdtsc();
}

__attribute__((destructor)) static void calltime_report(void)
{
	struct timespec end_wall;
	unsigned long long end_tsc = __rdtsc();
	const char *path = getenv("RS_CALLTIME_OUT"), *tag = getenv("RS_CALLTIME_TAG");
	double ns, per_ns;
	FILE *f;
	int k;

	clock_gettime(CLOCK_MONOTONIC, &end_wall);
	ns = (end_wall.tv_sec - start_wall.tv_sec) * 1e9 + (end_wall.tv_nsec - start_wall.tv_nsec);
	if (!path || calls[SEND] < 100 || ns <= 0 || end_tsc <= start_tsc)
		return;
	per_ns = (end_tsc - start_tsc) / ns;
	f = fopen(path, "a");
	if (!f)
		return;
	fprintf(f, "%s", tag ? tag : "-");
	for (k = 0; k < KINDS; k++)
		fprintf(f, " %s %.1f %llu", names[k], calls[k] ? cycles[k] / per_ns / calls[k] : 0.0, calls[k]);
	fprintf(f, "\n");
	fclose(f);
}

/* Set inside rsend until its first write: that write is the send's doorbell
 * (libibverbs' command to the kernel). */
static __thread int in_send;

static void count(int kind, unsigned long long t0)
{
	cycles[kind] += __rdtsc() - t0;
	calls[kind]++;
}

ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	unsigned long long t0 = __rdtsc();
	ssize_t r;

	in_send = 1;
	r = real_rsend(socket, buf, len, flags);
	in_send = 0;

	count(SEND, t0);
	return r;
}

ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	unsigned long long t0 = __rdtsc();
	ssize_t r = real_rrecv(socket, buf, len, flags);

	count(r > 0 ? RECV_DATA : RECV_NONE, t0);
	return r;
}

int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	unsigned long long t0 = __rdtsc();
	int r = real_rpoll(fds, nfds, timeout);

	if (r > 0)
		count(POLL_READY, t0);
	return r;
}

ssize_t write(int fd, const void *buf, size_t len)
{
	unsigned long long t0 = __rdtsc();
	ssize_t r = real_write(fd, buf, len);

	if (in_send) {
		in_send = 0;
		count(DOORBELL, t0);
	}
	return r;
}
