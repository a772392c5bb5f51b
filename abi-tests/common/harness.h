/*
 * harness.h — what the differential C test programs share (cm_diff,
 * conn_diff, gai_diff): the output stream of the calling thread, errno
 * names, the result-line macros R() and IN_CHILD(), addresses (setting and
 * printing them without anything that differs per run), and the case
 * runner: a table of named cases, each run in its own child process with a
 * hard timeout, and the programs' common command line
 * (`PROG [CASE...]`, `PROG --list`, optionally `PROG --no-fork [CASE...]`).
 *
 * Compile harness.c into the program; it needs _GNU_SOURCE (strerrorname_np,
 * sigabbrev_np), which every user defines before its first #include.
 */
#ifndef ABI_TESTS_HARNESS_H
#define ABI_TESTS_HARNESS_H

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- output: per thread (a thread may print into its own buffer) ---- */

/* The calling thread's output; NULL: stdout. A thread that runs beside
 * another sets it to a buffer of its own (out_buffer()), printed once the
 * thread ended (out_buffer_print()). */
extern __thread FILE *out_f;
#define OUT (out_f ? out_f : stdout)
#define P(...) fprintf(OUT, __VA_ARGS__)

/* A new output buffer (an unlinked temporary file, line-buffered). */
FILE *out_buffer(void);
/* Copy what `f` holds so far to stdout (what is still in its stdio buffer
 * is not: fflush it first where the writer is done). */
void out_buffer_print(FILE *f);

/* errno as its symbolic name; a value that is no errno (upstream v65
 * sometimes leaves -1 or an EAI code there) prints as the number. The
 * text lives until the thread's next call. */
const char *en(int e);

/* "  LABEL: ret=0" or "  LABEL: ret=-1 errno=NAME"; evaluates to ret. */
#define R(label, call)                                                  \
	({                                                              \
		int _r;                                                 \
		errno = 0;                                              \
		_r = (call);                                            \
		if (_r == -1)                                           \
			P("  %s: ret=-1 errno=%s\n", label, en(errno)); \
		else                                                    \
			P("  %s: ret=%d\n", label, _r);                 \
		_r;                                                     \
	})

/* seconds an IN_CHILD call may run (0: no limit of its own); the program
 * sets it through struct harness */
extern unsigned harness_in_child_timeout;

/*
 * Run one call in a child process and report how it ended. Used for calls
 * that crash some reference library (documented upstream bugs), so the
 * crash is shown as a result line instead of killing the case.
 */
#define IN_CHILD(label, call)                                                             \
	do {                                                                              \
		int _st;                                                                  \
		pid_t _p;                                                                 \
		fflush(OUT);                                                              \
		_p = fork();                                                              \
		if (_p == 0) {                                                            \
			if (harness_in_child_timeout)                                     \
				alarm(harness_in_child_timeout);                          \
			R(label, call);                                                   \
			fflush(OUT);                                                      \
			_exit(0);                                                         \
		}                                                                         \
		if (_p < 0 || waitpid(_p, &_st, 0) != _p)                                 \
			P("  %s: fork/wait failed\n", label);                             \
		else if (WIFSIGNALED(_st))                                                \
			P("  %s: killed by SIG%s\n", label, sigabbrev_np(WTERMSIG(_st))); \
	} while (0)

/* ---- addresses and bytes ---- */

/* ip (IPv4 or IPv6 literal) and port (host order) into ss */
void sa_set(struct sockaddr_storage *ss, const char *ip, int port);
/* the bytes as lower-case hex, nothing between them */
void hex(const void *p, size_t n);
/* A port (network order) as text: the ports these programs choose are all
 * below 32768; anything else was picked by the kernel from the ephemeral
 * range, differs per run, and prints as "ephemeral". Two results may be
 * used in one printf. */
const char *port_str(uint16_t be);
/* "    WHAT: inet ADDR port PORT" (inet6 adds flowinfo and scope), or
 * "    WHAT: family N", or "    WHAT: NULL" */
void print_sa(const char *what, const struct sockaddr *sa);
/* qsort comparison of strings (char *) */
int cmp_str(const void *a, const void *b);

/* ---- cases ---- */

struct tcase {
	const char *name;
	void (*fn)(void);
};

struct harness {
	const char *prog;	  /* in "PROG: unknown case NAME" */
	const struct tcase *cases; /* in the order they run and are listed */
	size_t ncases;
	unsigned timeout;	  /* seconds a case may run before it is killed as hung */
	unsigned in_child_timeout; /* for IN_CHILD (0: none) */
	int no_fork_option;	  /* accept --no-fork (cases run in this process) */
	int timing;		  /* "NAME: S s" per case on stderr */
	/* optional: called once, after stdout is made line-buffered and
	 * before the command line is read (so for --list too), e.g. to look
	 * functions up */
	void (*init)(void);
	/* optional: what the library lacks for the cases to run ("name1
	 * name2"), or NULL; a case then prints "  SKIP: library lacks ..." */
	const char *(*missing)(void);
};

/*
 *   PROG [CASE...]            every case, or the named ones, in table order
 *   PROG --no-fork [CASE...]  (with no_fork_option) the same in this process
 *   PROG --list               the case names
 * Each case prints "case NAME:" and then, in a child process (forked before
 * the library is touched) with an alarm of `timeout` seconds, what the case
 * prints; an abnormal end adds "  [case killed by SIGNAME]" (": hung,
 * timeout" for SIGALRM), "  [case exited N]" or "  [case: fork/wait
 * failed]". An unknown case name: a line on stderr, exit 2.
 */
int harness_main(const struct harness *h, int argc, char **argv);

#endif
