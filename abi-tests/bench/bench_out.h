/*
 * bench_out.h — (make bench only) where a preload library of the bench
 * writes its one line on exit: appended to the file named by the
 * environment variable `env`, else (unset, or the file cannot be opened)
 * to stderr. Shared by rs_pushes.c and rs_window.c.
 */
#ifndef BENCH_OUT_H
#define BENCH_OUT_H
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((format(printf, 2, 3))) static void bench_out(const char *env, const char *fmt, ...)
{
	const char *path = getenv(env);
	FILE *f = path ? fopen(path, "a") : NULL;
	va_list ap;

	va_start(ap, fmt);
	vfprintf(f ? f : stderr, fmt, ap);
	va_end(ap);
	if (f)
		fclose(f);
}
#endif
