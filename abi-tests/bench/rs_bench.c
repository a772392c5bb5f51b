/* rs_bench.c — rsocket data-path steps for make bench, with whichever
 * librdmacm the loader picks (LD_LIBRARY_PATH): user-space instructions
 * per step under callgrind (two run lengths, subtracted) and wall time.
 *
 *   rs_bench server PORT             serves one connection at a time
 *   rs_bench client ADDR PORT STEP N SIZE
 *
 * Steps (the client tells the server which in a 12-byte header):
 *   eagain  N non-blocking rrecv calls on an idle connection (each EAGAIN)
 *   lat     N round trips of SIZE bytes, blocking calls
 *   latnb   N round trips of SIZE bytes, non-blocking calls retried in a
 *           loop (rstream's default)
 *   latpoll N round trips of SIZE bytes, each non-blocking call after
 *           rpoll(timeout 0) called until the socket is ready (rstream -T a)
 *   latwait N round trips of SIZE bytes, each non-blocking call after
 *           rpoll(timeout -1): the caller sleeps until the socket is ready
 *           (a poll loop with a timeout, as programs under the preload run)
 *   bw      N sends of SIZE bytes, then a 1-byte answer
 *   idlepoll N rpoll(POLLIN, timeout 0) calls on an idle connection (each
 *           returns 0): one turn of a polling loop, which sets how soon a
 *           side waiting in such a loop sees a message
 * The client prints "STEP N SIZE usec_per_step", and on stderr how many of
 * its calls in the steps found nothing ("rs_bench empty: rpoll A rrecv B
 * rsend C": rpoll returning 0, rrecv or rsend failing with EAGAIN), which
 * only wait and vary from run to run. Exit 0 on success. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <rdma/rsocket.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { EAGAIN_STEP = 1, LAT, LATNB, BW, LATPOLL, IDLEPOLL, LATWAIT };

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* Calls in the steps that found nothing (see the top). */
static unsigned long empty_rpoll, empty_rrecv, empty_rsend;

/* nb: 0 blocking calls, 1 non-blocking, 2 non-blocking after rpoll (timeout 0,
 * retried), 3 non-blocking after rpoll (timeout -1) */
static int xfer(int fd, void *buf, size_t len, int send, int nb)
{
	size_t off = 0;
	while (off < len) {
		if (nb >= 2) {
			struct pollfd p = { .fd = fd, .events = send ? POLLOUT : POLLIN };
			int n;
			while ((n = rpoll(&p, 1, nb == 3 ? -1 : 0)) == 0)
				empty_rpoll++;
			/* A hang-up that comes with the awaited event still
			 * lets the call go (upstream's rpoll reports POLLHUP
			 * as soon as the peer has left, data unread or not). */
			if (n < 0 || ((p.revents & (POLLERR | POLLHUP)) && !(p.revents & p.events)))
				return -1;
		}
		ssize_t r = send ? rsend(fd, (char *)buf + off, len - off, nb ? MSG_DONTWAIT : 0)
				 : rrecv(fd, (char *)buf + off, len - off, nb ? MSG_DONTWAIT : 0);
		if (r > 0)
			off += r;
		else if (r == 0)
			return -1;
		else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		else if (errno != EINTR)
			++*(send ? &empty_rsend : &empty_rrecv);
	}
	return 0;
}

static int nb_of(uint32_t step)
{
	return step == LATNB ? 1 : step == LATPOLL ? 2 : step == LATWAIT ? 3 : 0;
}

static int serve(int fd)
{
	uint32_t h[3];
	if (xfer(fd, h, sizeof h, 0, 0))
		return -1;
	uint32_t step = ntohl(h[0]), n = ntohl(h[1]), size = ntohl(h[2]);
	char *buf = malloc(size ? size : 1);
	if (!buf)
		return -1;
	int ret = 0;
	switch (step) {
	case EAGAIN_STEP:
	case IDLEPOLL: {
		char c;
		ret = rrecv(fd, &c, 1, 0) == 0 ? 0 : -1; /* until the client closes */
		break;
	}
	case LAT:
	case LATNB:
	case LATPOLL:
	case LATWAIT:
		for (uint32_t i = 0; i < n && !ret; i++)
			ret = xfer(fd, buf, size, 0, nb_of(step)) || xfer(fd, buf, size, 1, nb_of(step));
		break;
	case BW:
		for (uint32_t i = 0; i < n && !ret; i++)
			ret = xfer(fd, buf, size, 0, 0);
		if (!ret)
			ret = xfer(fd, buf, 1, 1, 0);
		break;
	default:
		ret = -1;
	}
	free(buf);
	return ret;
}

static int sockaddr_of(const char *host, const char *port, struct sockaddr_storage *ss, socklen_t *len)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST }, *ai;
	if (getaddrinfo(host, port, &hints, &ai))
		return -1;
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

int main(int argc, char **argv)
{
	int one = 1;
	if (argc == 3 && !strcmp(argv[1], "server")) {
		struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(atoi(argv[2])) };
		int l = rsocket(AF_INET, SOCK_STREAM, 0);
		if (l < 0 || rsetsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
		    rbind(l, (struct sockaddr *)&sin, sizeof sin) || rlisten(l, 4)) {
			perror("server");
			return 1;
		}
		for (;;) {
			int fd = raccept(l, NULL, NULL);
			if (fd < 0) {
				perror("raccept");
				return 1;
			}
			rsetsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
			if (serve(fd))
				fprintf(stderr, "serve failed\n");
			rshutdown(fd, SHUT_RDWR);
			rclose(fd);
		}
	}
	if (argc != 7 || strcmp(argv[1], "client")) {
		fprintf(stderr, "usage: rs_bench server PORT | client ADDR PORT eagain|lat|latnb|latpoll|bw|idlepoll|latwait N SIZE\n");
		return 2;
	}
	const char *steps[] = { "", "eagain", "lat", "latnb", "bw", "latpoll", "idlepoll", "latwait" };
	uint32_t step = 0;
	for (uint32_t i = 1; i < sizeof steps / sizeof steps[0]; i++)
		if (!strcmp(argv[4], steps[i]))
			step = i;
	uint32_t n = atoi(argv[5]), size = atoi(argv[6]);
	if (!step || !size) {
		fprintf(stderr, "bad step or size\n");
		return 2;
	}
	struct sockaddr_storage ss;
	socklen_t len;
	if (sockaddr_of(argv[2], argv[3], &ss, &len)) {
		fprintf(stderr, "bad address\n");
		return 2;
	}
	int fd = rsocket(ss.ss_family, SOCK_STREAM, 0);
	if (fd < 0 || rconnect(fd, (struct sockaddr *)&ss, len)) {
		perror("client");
		return 1;
	}
	rsetsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	char *buf = calloc(1, size);
	uint32_t h[3] = { htonl(step), htonl(n), htonl(size) };
	if (!buf || xfer(fd, h, sizeof h, 1, 0))
		return 1;
	double t0 = now_us();
	int ret = 0;
	switch (step) {
	case EAGAIN_STEP:
		for (uint32_t i = 0; i < n && !ret; i++) {
			char c;
			if (rrecv(fd, &c, 1, MSG_DONTWAIT) != -1 || errno != EAGAIN)
				ret = -1;
		}
		break;
	case IDLEPOLL:
		for (uint32_t i = 0; i < n && !ret; i++) {
			struct pollfd p = { .fd = fd, .events = POLLIN };
			if (rpoll(&p, 1, 0) != 0)
				ret = -1;
		}
		break;
	case LAT:
	case LATNB:
	case LATPOLL:
	case LATWAIT:
		for (uint32_t i = 0; i < n && !ret; i++)
			ret = xfer(fd, buf, size, 1, nb_of(step)) || xfer(fd, buf, size, 0, nb_of(step));
		break;
	case BW:
		for (uint32_t i = 0; i < n && !ret; i++)
			ret = xfer(fd, buf, size, 1, 0);
		if (!ret)
			ret = xfer(fd, buf, 1, 0, 0);
		break;
	}
	double t1 = now_us();
	rshutdown(fd, SHUT_RDWR);
	rclose(fd);
	if (ret) {
		fprintf(stderr, "%s failed\n", argv[4]);
		return 1;
	}
	printf("%s %u %u %.3f\n", argv[4], n, size, n ? (t1 - t0) / n : 0);
	fprintf(stderr, "rs_bench empty: rpoll %lu rrecv %lu rsend %lu\n", empty_rpoll, empty_rrecv, empty_rsend);
	return 0;
}
