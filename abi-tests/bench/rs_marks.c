/*
 * rs_marks.c — (make bench only) an LD_PRELOAD library that brackets each
 * rsend, rrecv and rpoll call of whichever librdmacm comes after it with a
 * one-byte store to a fixed page (mapped at load, 0x200000000), so that a
 * memory trace (valgrind --tool=lackey --trace-mem=yes) shows where each
 * call begins and ends and how it ended; rs_footprint.c reads such a trace.
 *   entry:  offset 0 (rsend), 64 (rrecv), 128 (rpoll)
 *   exit:   4096 + 64 x kind, kind 0 rsend, 1 rrecv with data, 2 rrecv
 *           without (EAGAIN, end of file), 3 rpoll with an event, 4 rpoll
 *           without
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/types.h>

#define MARKS ((volatile char *)0x200000000UL)

static ssize_t (*real_rsend)(int, const void *, size_t, int);
static ssize_t (*real_rrecv)(int, void *, size_t, int);
static int (*real_rpoll)(struct pollfd *, nfds_t, int);
static int mapped;

__attribute__((constructor)) static void init(void)
{
	mapped = mmap((void *)MARKS, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
		      -1, 0) == (void *)MARKS;
	real_rsend = (ssize_t(*)(int, const void *, size_t, int))dlsym(RTLD_NEXT, "rsend");
	real_rrecv = (ssize_t(*)(int, void *, size_t, int))dlsym(RTLD_NEXT, "rrecv");
	real_rpoll = (int (*)(struct pollfd *, nfds_t, int))dlsym(RTLD_NEXT, "rpoll");
}

static void mark(int off)
{
	if (mapped)
		MARKS[off] = 1;
}

ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	mark(0);
	ssize_t r = real_rsend(socket, buf, len, flags);
	mark(4096);
	return r;
}

ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	mark(64);
	ssize_t r = real_rrecv(socket, buf, len, flags);
	mark(4096 + 64 * (r > 0 ? 1 : 2));
	return r;
}

int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	mark(128);
	int r = real_rpoll(fds, nfds, timeout);
	mark(4096 + 64 * (r > 0 ? 3 : 4));
	return r;
}
