/*
 * failmalloc.c — an allocation-failure shim (LD_PRELOAD) for the
 * fault-injection walk (fault_walk.c, walk.sh, tests.d/70-fault.sh).
 *
 * Once armed with fault_arm(k), it counts every allocation the process
 * makes, in any thread, and makes the k-th return NULL with errno ENOMEM;
 * every other allocation, before and after, succeeds. fault_arm(0) only
 * counts. fault_disarm() stops counting and returns the count.
 *
 * Counted: malloc, calloc, realloc (except realloc(p, 0), which frees),
 * reallocarray, posix_memalign, aligned_alloc, memalign, valloc, pvalloc.
 * glibc's own functions that allocate (strdup, asprintf, fopen, getaddrinfo,
 * pthread_create's thread descriptor, dlopen after start-up, ...) call
 * malloc through the PLT, so they are counted as the malloc they make
 * (`fault_walk --self-test` checks this for strdup and fopen). Rust's
 * allocator calls malloc/calloc/realloc/posix_memalign: counted too.
 *
 * What it must not break, and how:
 *  - Bootstrapping: the real allocator is reached through glibc's exported
 *    __libc_malloc/__libc_calloc/__libc_realloc/__libc_memalign/... , never
 *    through dlsym (dlsym itself allocates, which would recurse before the
 *    pointer is known). free() is not interposed: every block is glibc's.
 *  - The dynamic loader: before libc is relocated, ld.so uses its own
 *    minimal allocator (never seen here); afterwards its allocations (dlopen
 *    of libibverbs' providers, TLS of new threads) come here and are counted
 *    and may fail like any other: that is what the process does.
 *  - Re-entrance: recording where a failure happened (backtrace, dladdr)
 *    runs inside the allocation; a per-thread flag (initial-exec TLS, which
 *    never allocates for a preloaded object) makes allocations made by the
 *    shim itself pass through uncounted. backtrace() is called once in the
 *    constructor, so libgcc_s is already loaded when a failure records one.
 *  - Processes: the state lives in one MAP_SHARED page made by the
 *    constructor, so a driver that forks one child per run reads the count,
 *    whether the failure fired and where, after the child ended, even when
 *    it died of a signal.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <netdb.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "fault.h"

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

static struct fault_shim *st;
static __thread int busy __attribute__((tls_model("initial-exec")));
static __thread int in_gai __attribute__((tls_model("initial-exec")));
static int fail_in_gai;
static int (*real_getaddrinfo)(const char *, const char *, const struct addrinfo *, struct addrinfo **);

__attribute__((constructor)) static void shim_init(void)
{
	void *warm[2];
	void *p = mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p != MAP_FAILED)
		st = p;
	busy = 1;
	backtrace(warm, 2); /* loads libgcc_s now, not inside a failure */
	real_getaddrinfo = dlsym(RTLD_NEXT, "getaddrinfo");
	busy = 0;
	fail_in_gai = getenv("FAULT_IN_GETADDRINFO") && *getenv("FAULT_IN_GETADDRINFO") == '1';
}

/*
 * glibc's getaddrinfo (2.36) does not survive some of its own allocation
 * failures: it crashes (SIGSEGV, SIGABRT) or hangs, called by any program
 * (`fault_walk libc-gai` shows it without librdmacm). So that the walk
 * judges the library and not glibc, allocations made inside getaddrinfo
 * are neither counted nor failed, unless FAULT_IN_GETADDRINFO=1.
 */
int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints, struct addrinfo **res)
{
	int r;

	if (!real_getaddrinfo)
		return EAI_SYSTEM;
	if (fail_in_gai)
		return real_getaddrinfo(node, service, hints, res);
	in_gai++;
	r = real_getaddrinfo(node, service, hints, res);
	in_gai--;
	return r;
}

struct fault_shim *fault_shim(void)
{
	return st;
}

void fault_arm(long k)
{
	if (!st)
		return;
	__atomic_store_n(&st->armed, 0, __ATOMIC_SEQ_CST);
	st->target = k;
	st->fired = 0;
	st->fired_tid = 0;
	st->nframes = 0;
	__atomic_store_n(&st->count, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&st->armed, 1, __ATOMIC_SEQ_CST);
}

long fault_disarm(void)
{
	if (!st)
		return -1;
	__atomic_store_n(&st->armed, 0, __ATOMIC_SEQ_CST);
	return __atomic_load_n(&st->count, __ATOMIC_SEQ_CST);
}

/* "object+0xOFFSET" without stdio (which may allocate) */
static void put_frame(char *out, size_t cap, void *addr)
{
	Dl_info di;
	const char *name = "?";
	uintptr_t off = (uintptr_t)addr;
	size_t n = 0, i;
	char hex[2 + 16];
	int h = 0;

	if (dladdr(addr, &di) && di.dli_fname) {
		name = di.dli_fname;
		if (!*name)
			name = "(main)";
		off -= (uintptr_t)di.dli_fbase;
	}
	for (i = 0; name[i] && n + 1 < cap; i++)
		out[n++] = name[i];
	do {
		hex[h++] = "0123456789abcdef"[off & 15];
		off >>= 4;
	} while (off && h < 16);
	if (n + 3 + (size_t)h < cap) {
		out[n++] = '+';
		out[n++] = '0';
		out[n++] = 'x';
		while (h)
			out[n++] = hex[--h];
	}
	out[n] = 0;
}

/* 1: this allocation is the one to fail */
static int should_fail(void)
{
	long n;

	if (!st || busy || in_gai || !__atomic_load_n(&st->armed, __ATOMIC_RELAXED))
		return 0;
	n = __atomic_add_fetch(&st->count, 1, __ATOMIC_SEQ_CST);
	if (n != st->target)
		return 0;
	busy = 1;
	{
		void *fr[FAULT_FRAMES + 2];
		int k = backtrace(fr, FAULT_FRAMES + 2), i;

		/* frame 0 is should_fail, frame 1 the interposed function */
		for (i = 2; i < k; i++)
			put_frame(st->frames[i - 2], sizeof(st->frames[0]), fr[i]);
		st->nframes = k > 2 ? k - 2 : 0;
	}
	st->fired_tid = gettid();
	__atomic_store_n(&st->fired, 1, __ATOMIC_SEQ_CST);
	busy = 0;
	errno = ENOMEM;
	return 1;
}

void *malloc(size_t n)
{
	return should_fail() ? NULL : __libc_malloc(n);
}

void *calloc(size_t n, size_t m)
{
	return should_fail() ? NULL : __libc_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
	if (p && !n)
		return __libc_realloc(p, n);
	return should_fail() ? NULL : __libc_realloc(p, n);
}

void *reallocarray(void *p, size_t n, size_t m)
{
	size_t b;

	if (__builtin_mul_overflow(n, m, &b)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, b);
}

void *memalign(size_t a, size_t n)
{
	return should_fail() ? NULL : __libc_memalign(a, n);
}

void *aligned_alloc(size_t a, size_t n)
{
	return memalign(a, n);
}

int posix_memalign(void **out, size_t a, size_t n)
{
	int e = errno;
	void *p;

	if (a < sizeof(void *) || (a & (a - 1)))
		return EINVAL;
	if (should_fail()) {
		errno = e; /* posix_memalign reports, it does not set errno */
		return ENOMEM;
	}
	p = __libc_memalign(a, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

void *valloc(size_t n)
{
	return should_fail() ? NULL : __libc_valloc(n);
}

void *pvalloc(size_t n)
{
	return should_fail() ? NULL : __libc_pvalloc(n);
}
