/*
 * variadic_shim.c — exported functions whose C prototype is variadic.
 * Rust cannot define C-variadic functions (on stable), so each of these
 * reads its arguments and calls the Rust implementation. Nothing else
 * lives here.
 */
#include <fcntl.h>
#include <stdarg.h>

int rdmacm_rs_fcntl(int socket, int cmd, long arg);

/* rfcntl(3): F_SETFL and F_SETFD take an int; the other commands none. */
int rfcntl(int socket, int cmd, ...)
{
	long arg = 0;
	va_list ap;

	va_start(ap, cmd);
	if (cmd == F_SETFL || cmd == F_SETFD)
		arg = va_arg(ap, int);
	va_end(ap);
	return rdmacm_rs_fcntl(socket, cmd, arg);
}
