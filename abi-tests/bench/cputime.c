/*
 * cputime.c — run a command and write its wall time and the CPU time it
 * and its descendants used, in milliseconds ("wall user sys"), to a file
 * (abi-tests/bench/programs-bench-guest.sh). SIGTERM and SIGINT are passed
 * on to the command, so a daemon stopped through this process still ends
 * with its times written. The exit status is the command's.
 * usage: cputime OUTFILE command [args...]
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pid_t child;

static void forward(int sig)
{
	if (child > 0)
		kill(child, sig);
}

static double ms(struct timeval tv)
{
	return tv.tv_sec * 1e3 + tv.tv_usec / 1e3;
}

int main(int argc, char **argv)
{
	struct timespec t0, t1;
	struct rusage ru;
	int status;
	FILE *f;

	if (argc < 3) {
		fprintf(stderr, "usage: cputime OUTFILE command [args...]\n");
		return 2;
	}
	signal(SIGTERM, forward);
	signal(SIGINT, forward);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	child = fork();
	if (child < 0) {
		perror("fork");
		return 2;
	}
	if (child == 0) {
		execvp(argv[2], argv + 2);
		perror(argv[2]);
		_exit(127);
	}
	while (wait4(child, &status, 0, &ru) < 0) {
		if (errno != EINTR) {
			perror("wait4");
			return 2;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	f = fopen(argv[1], "w");
	if (!f) {
		perror(argv[1]);
		return 2;
	}
	fprintf(f, "%.0f %.0f %.0f\n",
		(t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6,
		ms(ru.ru_utime), ms(ru.ru_stime));
	fclose(f);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
