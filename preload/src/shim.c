/*
 * shim.c — the preload's exports whose C prototype is variadic (Rust
 * cannot define C-variadic functions on stable): each reads its one
 * optional argument and calls the Rust implementation. fcntl's argument
 * is an int or a pointer depending on the command; it is read as a long,
 * which covers both on LP64 (as libc's own fcntl reads it).
 */
#include <stdarg.h>

int rspreload_fcntl(int fd, int cmd, long arg, int wide);

int fcntl(int fd, int cmd, ...)
{
	long arg;
	va_list ap;

	va_start(ap, cmd);
	arg = va_arg(ap, long);
	va_end(ap);
	return rspreload_fcntl(fd, cmd, arg, 0);
}

int fcntl64(int fd, int cmd, ...)
{
	long arg;
	va_list ap;

	va_start(ap, cmd);
	arg = va_arg(ap, long);
	va_end(ap);
	return rspreload_fcntl(fd, cmd, arg, 1);
}
