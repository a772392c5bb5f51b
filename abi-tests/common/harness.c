/*
 * harness.c — the shared part of the differential C test programs
 * (harness.h says what each piece does).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include "harness.h"

__thread FILE *out_f;
unsigned harness_in_child_timeout;

FILE *out_buffer(void)
{
	FILE *f = tmpfile();

	setvbuf(f, NULL, _IOLBF, 0);
	return f;
}

void out_buffer_print(FILE *f)
{
	char buf[4096];
	ssize_t n;
	off_t off = 0;

	while ((n = pread(fileno(f), buf, sizeof(buf), off)) > 0) {
		fwrite(buf, 1, n, stdout);
		off += n;
	}
}

const char *en(int e)
{
	static __thread char buf[16];
	const char *n = e > 0 ? strerrorname_np(e) : NULL;

	if (n)
		return n;
	snprintf(buf, sizeof(buf), "%d", e);
	return buf;
}

void sa_set(struct sockaddr_storage *ss, const char *ip, int port)
{
	memset(ss, 0, sizeof(*ss));
	if (strchr(ip, ':')) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;
		s->sin6_family = AF_INET6;
		s->sin6_port = htons(port);
		inet_pton(AF_INET6, ip, &s->sin6_addr);
	} else {
		struct sockaddr_in *s = (struct sockaddr_in *)ss;
		s->sin_family = AF_INET;
		s->sin_port = htons(port);
		inet_pton(AF_INET, ip, &s->sin_addr);
	}
}

void hex(const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n--)
		P("%02x", *b++);
}

const char *port_str(uint16_t be)
{
	static __thread char buf[2][16];
	static __thread int i;
	unsigned p = ntohs(be);

	i ^= 1;
	if (p >= 32768)
		return "ephemeral";
	snprintf(buf[i], sizeof(buf[i]), "%u", p);
	return buf[i];
}

void print_sa(const char *what, const struct sockaddr *sa)
{
	char buf[INET6_ADDRSTRLEN];

	if (!sa) {
		P("    %s: NULL\n", what);
		return;
	}
	switch (sa->sa_family) {
	case AF_INET: {
		const struct sockaddr_in *s = (const void *)sa;
		inet_ntop(AF_INET, &s->sin_addr, buf, sizeof(buf));
		P("    %s: inet %s port %s\n", what, buf, port_str(s->sin_port));
		break;
	}
	case AF_INET6: {
		const struct sockaddr_in6 *s = (const void *)sa;
		inet_ntop(AF_INET6, &s->sin6_addr, buf, sizeof(buf));
		P("    %s: inet6 %s port %s flowinfo %#x scope %u\n", what, buf, port_str(s->sin6_port),
		  ntohl(s->sin6_flowinfo), s->sin6_scope_id);
		break;
	}
	default:
		P("    %s: family %d\n", what, sa->sa_family);
	}
}

int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Run one case in a child with a hard timeout; report abnormal ends.
 * With no_fork (--no-fork: for one valgrind leak check over several
 * cases) the case runs in this process; a hang still ends it (SIGALRM). */
static void run_case(const struct harness *h, const struct tcase *t, int no_fork)
{
	const char *miss = h->missing ? h->missing() : NULL;
	struct timespec t0, t1;
	int st;
	pid_t p;

	printf("case %s:\n", t->name);
	if (miss) {
		printf("  SKIP: library lacks %s\n", miss);
		return;
	}
	fflush(stdout);
	if (no_fork) {
		alarm(h->timeout);
		t->fn();
		alarm(0);
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	p = fork();
	if (p == 0) {
		alarm(h->timeout);
		t->fn();
		fflush(stdout);
		exit(0);
	}
	if (p < 0 || waitpid(p, &st, 0) != p)
		printf("  [case: fork/wait failed]\n");
	else if (WIFSIGNALED(st))
		printf("  [case killed by SIG%s%s]\n", sigabbrev_np(WTERMSIG(st)),
		       WTERMSIG(st) == SIGALRM ? ": hung, timeout" : "");
	else if (WEXITSTATUS(st))
		printf("  [case exited %d]\n", WEXITSTATUS(st));
	if (h->timing) {
		clock_gettime(CLOCK_MONOTONIC, &t1);
		fprintf(stderr, "%s: %.1f s\n", t->name, (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	}
}

int harness_main(const struct harness *h, int argc, char **argv)
{
	struct rlimit no_core = { 0, 0 };
	int a, no_fork = 0;
	size_t i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	setrlimit(RLIMIT_CORE, &no_core); /* crashes are expected in IN_CHILD */
	harness_in_child_timeout = h->in_child_timeout;
	if (h->init)
		h->init();
	if (argc == 2 && !strcmp(argv[1], "--list")) {
		for (i = 0; i < h->ncases; i++)
			printf("%s\n", h->cases[i].name);
		return 0;
	}
	if (h->no_fork_option && argc > 1 && !strcmp(argv[1], "--no-fork")) {
		no_fork = 1;
		argv[1] = argv[0];
		argv++;
		argc--;
	}
	for (a = 1; a < argc; a++) {
		for (i = 0; i < h->ncases && strcmp(argv[a], h->cases[i].name); i++)
			;
		if (i == h->ncases) {
			fprintf(stderr, "%s: unknown case %s\n", h->prog, argv[a]);
			return 2;
		}
	}
	for (i = 0; i < h->ncases; i++) {
		int run = argc == 1;
		for (a = 1; a < argc; a++)
			run |= !strcmp(argv[a], h->cases[i].name);
		if (run)
			run_case(h, &h->cases[i], no_fork);
	}
	return 0;
}
