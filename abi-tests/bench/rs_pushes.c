/*
 * rs_pushes.c — (make bench only, part 4) an LD_PRELOAD library that counts
 * a process's rsend calls and timerfd_settime calls (in our library nearly
 * all of them a steady socket's calls pushing its timer forward:
 * docs/architecture.md) and appends on exit to the file RS_PUSHES_OUT (else
 * stderr: bench_out.h) "rs_pushes: rsend N timerfd_settime M" (only in a process that
 * has an rsend: a preload reaches every program started with it, timeout's
 * and valgrind's launcher included). Kept apart from
 * rs_marks.c, so that the footprint's trace holds none of its code.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <sys/timerfd.h>
#include <sys/types.h>

#include "bench_out.h"

static ssize_t (*real_rsend)(int, const void *, size_t, int);
static int (*real_timerfd_settime)(int, int, const struct itimerspec *, struct itimerspec *);
static long sends, pushes;

__attribute__((constructor)) static void init(void)
{
	real_rsend = (ssize_t(*)(int, const void *, size_t, int))dlsym(RTLD_NEXT, "rsend");
	real_timerfd_settime = (int (*)(int, int, const struct itimerspec *, struct itimerspec *))dlsym(
		RTLD_NEXT, "timerfd_settime");
}

ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	__atomic_fetch_add(&sends, 1, __ATOMIC_RELAXED);
	if (!real_rsend) {
		errno = ENOSYS;
		return -1;
	}
	return real_rsend(socket, buf, len, flags);
}

int timerfd_settime(int fd, int flags, const struct itimerspec *new_value, struct itimerspec *old_value)
{
	__atomic_fetch_add(&pushes, 1, __ATOMIC_RELAXED);
	if (!real_timerfd_settime) {
		errno = ENOSYS;
		return -1;
	}
	return real_timerfd_settime(fd, flags, new_value, old_value);
}

__attribute__((destructor)) static void report(void)
{
	if (real_rsend)
		bench_out("RS_PUSHES_OUT", "rs_pushes: rsend %ld timerfd_settime %ld\n", sends, pushes);
}
