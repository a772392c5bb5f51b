/*
 * rs_delay.c — (make bench only, part 7) preloaded into both rstream
 * processes: after every rrecv that returns data, before the call returns
 * to the program,
 *   RS_DELAY_N      iterations of a three-instruction loop (a memory
 *                   increment, a decrement, a branch), and
 *   RS_DELAY_PAGES  calls (through a table) to as many small functions,
 *                   each on a 4 KiB code page of its own (at most 64).
 * The latency a run gains per added instruction, and per added code page
 * reached (a call there and the return), says what a library's own code on
 * that path weighs in rstream's latency on this bed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/types.h>

static ssize_t (*next_rrecv)(int, void *, size_t, int);
static long iterations, pages;

static void spin(long n)
{
	long x = 0;

	if (n > 0)
		__asm__ volatile("1:\n\tincq %1\n\tdecq %0\n\tjnz 1b" : "+r"(n), "+m"(x) : : "cc");
}

/* 64 functions, one per code page (each starts a page of its own). */
#define PAGE_FN(i) \
	__attribute__((noinline, aligned(4096))) static long page_fn##i(long x) { return x + i; }
#define PAGE_FN8(a) PAGE_FN(a##0) PAGE_FN(a##1) PAGE_FN(a##2) PAGE_FN(a##3) \
	PAGE_FN(a##4) PAGE_FN(a##5) PAGE_FN(a##6) PAGE_FN(a##7)
PAGE_FN8(1) PAGE_FN8(2) PAGE_FN8(3) PAGE_FN8(4) PAGE_FN8(5) PAGE_FN8(6) PAGE_FN8(7) PAGE_FN8(8)
#define PAGE_REF8(a) page_fn##a##0, page_fn##a##1, page_fn##a##2, page_fn##a##3, \
	page_fn##a##4, page_fn##a##5, page_fn##a##6, page_fn##a##7,
static long (*const page_fns[64])(long) = { PAGE_REF8(1) PAGE_REF8(2) PAGE_REF8(3) PAGE_REF8(4)
					     PAGE_REF8(5) PAGE_REF8(6) PAGE_REF8(7) PAGE_REF8(8) };
static volatile long sink;

static void visit(long n)
{
	long x = 0;

	for (long i = 0; i < n; i++)
		x = page_fns[i](x);
	sink = x;
}

ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	ssize_t r;

	if (!next_rrecv) {
		const char *e = getenv("RS_DELAY_N");

		iterations = e ? atol(e) : 0;
		e = getenv("RS_DELAY_PAGES");
		pages = e ? atol(e) : 0;
		if (pages > 64)
			pages = 64;
		next_rrecv = (ssize_t (*)(int, void *, size_t, int))dlsym(RTLD_NEXT, "rrecv");
		if (!next_rrecv)
			abort();
	}
	r = next_rrecv(socket, buf, len, flags);
	if (r > 0) {
		spin(iterations);
		visit(pages);
	}
	return r;
}
