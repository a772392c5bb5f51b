// rs_closefirst.c — connections that the CLIENT closes first, the way rcopy
// ends: per cycle the client connects, sends 1 KiB, reads the echo, then
// rshutdown(SHUT_RDWR) and rclose; the server echoes, reads to end of
// stream, then rshutdown(SHUT_RDWR) and rclose at once.
//
// An upstream client's rshutdown waits (without a time limit) until the
// device has acknowledged its DISCONNECT message. A server that moves its
// QP to the error state, or destroys it, in the moment between the
// DISCONNECT's completion and the ACK the device sends for it, leaves that
// client retransmitting forever on soft-RoCE (retry count 7 means "no
// limit" there). Each side is a separate process, so each can run on a
// different librdmacm (LD_LIBRARY_PATH); tests.d/60-rsockets-interop.sh
// runs it in every pairing.
//
//   rs_closefirst server PORT CYCLES
//   rs_closefirst client ADDR PORT CYCLES
// The client gives each cycle 10 s (an alarm) and exits 3 naming the cycle
// and the call it hung in; otherwise both print "ok N cycles" and exit 0.
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <rdma/rsocket.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static volatile const char *stage = "start";
static volatile int cycle;

static void on_alarm(int sig)
{
	char m[160];
	int n;

	(void)sig;
	n = snprintf(m, sizeof m, "cycle %d failed: not finished within 10 s (hung in %s)\n", cycle, (const char *)stage);
	if (n > 0 && write(2, m, (size_t)n) < 0) {
	}
	_exit(3);
}

static int die(const char *what)
{
	fprintf(stderr, "cycle %d: %s failed: %s\n", cycle, what, strerror(errno));
	return 1;
}

static int server(int port, int cycles)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	char b[1024];
	int l, fd, one = 1;

	l = rsocket(AF_INET, SOCK_STREAM, 0);
	if (l < 0)
		return die("rsocket");
	rsetsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (rbind(l, (struct sockaddr *)&sin, sizeof sin) || rlisten(l, 16))
		return die("rbind/rlisten");
	printf("listening\n");
	fflush(stdout);
	for (cycle = 0; cycle < cycles; cycle++) {
		ssize_t n;

		fd = raccept(l, NULL, NULL);
		if (fd < 0)
			return die("raccept");
		n = rrecv(fd, b, sizeof b, MSG_WAITALL);
		if (n != (ssize_t)sizeof b)
			return die("rrecv");
		if (rsend(fd, b, sizeof b, 0) != (ssize_t)sizeof b)
			return die("rsend");
		/* the client's shutdown: end of stream */
		n = rrecv(fd, b, sizeof b, 0);
		if (n != 0) {
			fprintf(stderr, "cycle %d: expected end of stream, rrecv returned %zd (%s)\n", cycle, n,
				n < 0 ? strerror(errno) : "data");
			return 1;
		}
		rshutdown(fd, SHUT_RDWR);
		rclose(fd);
	}
	rclose(l);
	printf("ok %d cycles\n", cycles);
	return 0;
}

static int client(const char *addr, int port, int cycles)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	char b[1024], c[1024];

	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1) {
		fprintf(stderr, "bad address %s\n", addr);
		return 2;
	}
	signal(SIGALRM, on_alarm);
	for (cycle = 0; cycle < cycles; cycle++) {
		int fd, tries;

		alarm(10);
		memset(b, 'a' + cycle % 26, sizeof b);
		stage = "rconnect";
		for (tries = 0;; tries++) {
			fd = rsocket(AF_INET, SOCK_STREAM, 0);
			if (fd < 0)
				return die("rsocket");
			if (!rconnect(fd, (struct sockaddr *)&sin, sizeof sin))
				break;
			/* the server may not be back in raccept yet */
			if (errno != ECONNREFUSED || tries == 50)
				return die("rconnect");
			rclose(fd);
			usleep(20000);
		}
		stage = "rsend";
		if (rsend(fd, b, sizeof b, 0) != (ssize_t)sizeof b)
			return die("rsend");
		stage = "rrecv";
		if (rrecv(fd, c, sizeof c, MSG_WAITALL) != (ssize_t)sizeof c || memcmp(b, c, sizeof b)) {
			fprintf(stderr, "cycle %d: the echo differs\n", cycle);
			return 1;
		}
		stage = "rshutdown";
		rshutdown(fd, SHUT_RDWR);
		stage = "rclose";
		rclose(fd);
	}
	alarm(0);
	printf("ok %d cycles\n", cycles);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "server"))
		return server(atoi(argv[2]), atoi(argv[3]));
	if (argc == 5 && !strcmp(argv[1], "client"))
		return client(argv[2], atoi(argv[3]), atoi(argv[4]));
	fprintf(stderr, "usage: %s server PORT CYCLES | client ADDR PORT CYCLES\n", argv[0]);
	return 2;
}
