/* rscase.h — what the case programs rs_extra.c and rs_dgram.c share: the
 * first failure's reason (fail), a monotonic clock, a plain poll(2) on one
 * descriptor, counts of descriptors and CM ids, and the runner: each
 * selected case in its own forked process with a hard time limit (alarm),
 * reported as "ok   NAME" or "FAIL NAME: reason", then "N passed, M
 * failed". Included once per program (static definitions; a program
 * that runs one case per process, such as abi-tests/fault/server_faults.c,
 * uses only why/fail). */
#ifndef RSCASE_H
#define RSCASE_H

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct rscase {
	const char *name;
	void (*fn)(void);
	unsigned timeout; /* seconds */
};

static char why[512];

/* The case fails; the first reason given counts. */
static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;

	if (why[0])
		return;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
}

__attribute__((unused)) static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* poll(2) (not rpoll) on one descriptor: its revents, 0 on a timeout. */
__attribute__((unused)) static short plain_poll(int fd, short events, int ms)
{
	struct pollfd p = { .fd = fd, .events = events };

	return poll(&p, 1, ms) > 0 ? p.revents : 0;
}

/* Descriptors and CM ids of this process (to see that nothing is left):
 * open descriptors below 70000 (the high-fd case goes past 65535), and
 * the lines of `rdma res show cm_id` with this pid (-1: rdma failed). */
__attribute__((unused)) static int count_fds(void)
{
	int n = 0;

	for (int fd = 0; fd < 70000; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			n++;
	return n;
}

__attribute__((unused)) static int count_cm_ids(void)
{
	char pid[32], line[512];
	int n = 0;
	FILE *f = popen("rdma res show cm_id 2>/dev/null", "r");

	if (!f)
		return -1;
	snprintf(pid, sizeof pid, " pid %d ", (int)getpid());
	while (fgets(line, sizeof line, f))
		if (strstr(line, pid))
			n++;
	pclose(f);
	return n;
}

/* Runs the cases named in argv[1..] (all without arguments); exit status
 * for main: 0 when none failed. */
__attribute__((unused)) static int run_cases(const struct rscase *cases, size_t n, int argc, char **argv)
{
	int passed = 0, failed = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; i < n; i++) {
		int want = argc < 2, st;

		for (int a = 1; a < argc; a++)
			want |= !strcmp(argv[a], cases[i].name);
		if (!want)
			continue;
		int p[2];

		if (pipe(p))
			return 1;
		pid_t pid = fork();

		if (pid == 0) {
			close(p[0]);
			alarm(cases[i].timeout);
			why[0] = 0;
			cases[i].fn();
			if (write(p[1], why, strlen(why) + 1) < 0)
				_exit(1);
			_exit(0);
		}
		close(p[1]);
		char r[sizeof why] = { 0 };
		ssize_t got = read(p[0], r, sizeof r - 1);

		close(p[0]);
		waitpid(pid, &st, 0);
		if (got <= 0 && WIFSIGNALED(st))
			snprintf(r, sizeof r, "killed by signal %d%s", WTERMSIG(st),
				 WTERMSIG(st) == SIGALRM ? " (hung past its time limit)" : "");
		else if (got <= 0)
			snprintf(r, sizeof r, "ended without a result (status %#x)", st);
		if (r[0]) {
			printf("FAIL %s: %s\n", cases[i].name, r);
			failed++;
		} else {
			printf("ok   %s\n", cases[i].name);
			passed++;
		}
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}

#endif
