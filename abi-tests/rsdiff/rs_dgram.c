/*
 * rs_dgram.c — datagram rsockets of OUR library on a real kernel (the
 * soft-RoCE guest; abi-tests/vm/tests.d/64-rsockets-dgram.sh runs it with
 * LD_LIBRARY_PATH), checked against what rsocket(7), the socket man pages
 * (sendto(2), recvfrom(2), recvmsg(2), poll(2)) and upstream's datagram
 * protocol (docs/rsockets.md, "Datagram sockets") require. Each case prints
 * "ok   NAME" or "FAIL NAME: why"; the program ends with "N passed, M
 * failed".
 *
 *   exchange      100 round trips between two sockets, sizes 0..1000:
 *                 every datagram intact, its source the sender's name
 *   fresh         before rbind/rconnect/rsendto: rrecv EINVAL (upstream's
 *                 rule), rpoll neither readable nor writable
 *   unbound       a socket that sends without rbind gets a port: the
 *                 receiver sees a source it can answer (over UDP first,
 *                 then over UD), and the answers arrive
 *   peek-trunc    MSG_PEEK, a datagram cut to a short buffer (the rest
 *                 dropped), a short address buffer (cut, full length
 *                 reported), MSG_TRUNC, rrecvmsg (scatter, msg_name,
 *                 MSG_TRUNC in msg_flags), rsendmsg (gather, msg_name)
 *   sizes         the largest datagram (a 2048-byte slot and the port's
 *                 MTU, less the 8-byte header) goes through intact over UDP
 *                 and over UD; one byte more, 3000 and 65507 bytes are
 *                 EMSGSIZE
 *   connected     rconnect: rsend/rwrite/rwritev/rsendto without an
 *                 address/rrecv/rread/rreadv with the default destination,
 *                 rgetpeername; EDESTADDRREQ without one, EAFNOSUPPORT for
 *                 the other family
 *   readiness     rpoll and rselect; the descriptor itself in plain poll(2)
 *                 and epoll: readable when a datagram arrives (no library
 *                 call in between), not once it is read
 *   blocking      SOCK_NONBLOCK and MSG_DONTWAIT (EAGAIN); a blocking
 *                 rrecvfrom woken by a datagram sent later
 *   hostile-udp   garbage on the socket's UDP port (short, bad tag,
 *                 version, length, operation, QPN 0) is dropped; a valid
 *                 DATA header from a plain UDP socket is answered with a
 *                 CTRL in the documented format and its payload delivered
 *   hostile-ud    messages from a raw UD QP to the socket's QP with bad
 *                 headers (version, length, too short for the header it
 *                 announces, empty) are dropped; a valid one is delivered
 *                 with the source its header names
 *   many          300 datagrams sent back to back: what arrives is intact
 *   close         rclose with sends in flight returns within its drain and
 *                 frees the descriptor; 40 socket/exchange/close cycles
 *                 leave no descriptor and no CM id behind
 *   ipv6          an exchange over fd00::1
 *   repoll        repoll_create/ctl/wait (RDMACM_1.5, looked up at run time)
 *                 with a datagram socket: writable at once, readable with
 *                 the caller's data when a datagram arrives while waiting,
 *                 not once it is read
 *
 *   rs_dgram [CASE...]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rscase.h"

#define ADDR "192.0.2.1"
#define ADDR6 "fd00::1"
#define QKEY 0x01234567

static void sin_of(struct sockaddr_in *sin, const char *ip, int port)
{
	memset(sin, 0, sizeof *sin);
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	inet_pton(AF_INET, ip, &sin->sin_addr);
}

/* A datagram rsocket bound to ADDR:port (-1 on failure). */
static int dsock(int port)
{
	struct sockaddr_in sin;
	int fd = rsocket(AF_INET, SOCK_DGRAM, 0);

	if (fd < 0)
		return -1;
	sin_of(&sin, ADDR, port);
	if (rbind(fd, (struct sockaddr *)&sin, sizeof sin)) {
		rclose(fd);
		return -1;
	}
	return fd;
}

/* Wait (at most ms) until rpoll shows events on fd. */
static short wait_for(int fd, short events, int ms)
{
	struct pollfd p = { .fd = fd, .events = events };
	double end = now_ms() + ms;

	do {
		p.revents = 0;
		if (rpoll(&p, 1, 100) > 0 && p.revents)
			return p.revents;
	} while (now_ms() < end);
	return 0;
}

static void pattern(uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(seed * 31 + i * 7 + (i >> 8));
}

static int same_addr(const struct sockaddr_in *a, const struct sockaddr_in *b)
{
	return a->sin_family == b->sin_family && a->sin_port == b->sin_port &&
	       a->sin_addr.s_addr == b->sin_addr.s_addr;
}

/* Receive one datagram (waiting at most ms): its length, its source. */
static ssize_t recv_wait(int fd, void *b, size_t n, struct sockaddr_in *src, int ms)
{
	socklen_t sl = sizeof *src;
	ssize_t r;

	if (!(wait_for(fd, POLLIN, ms) & POLLIN)) {
		errno = ETIMEDOUT;
		return -1;
	}
	memset(src, 0, sizeof *src);
	r = rrecvfrom(fd, b, n, MSG_DONTWAIT, (struct sockaddr *)src, &sl);
	if (r >= 0 && sl != sizeof(struct sockaddr_in)) {
		fail("rrecvfrom reported an address length of %u", sl);
	}
	return r;
}

/* Send to peer, then receive it there; checks data and source. */
static int one_way(int from, int to, size_t n, unsigned seed)
{
	uint8_t out[2048], in[2048];
	struct sockaddr_in dst, src, self;
	socklen_t l = sizeof dst;
	ssize_t r;

	if (rgetsockname(to, (struct sockaddr *)&dst, &l)) {
		fail("rgetsockname of the receiver: errno %d", errno);
		return -1;
	}
	l = sizeof self;
	rgetsockname(from, (struct sockaddr *)&self, &l);
	pattern(out, n, seed);
	r = rsendto(from, out, n, 0, (struct sockaddr *)&dst, sizeof dst);
	if (r != (ssize_t)n) {
		fail("rsendto of %zu bytes returned %zd (errno %d)", n, r, errno);
		return -1;
	}
	r = recv_wait(to, in, sizeof in, &src, 5000);
	if (r != (ssize_t)n) {
		fail("received %zd bytes for a datagram of %zu (errno %d)", r, n, errno);
		return -1;
	}
	if (memcmp(in, out, n)) {
		fail("a datagram of %zu bytes arrived changed", n);
		return -1;
	}
	if (!same_addr(&src, &self)) {
		fail("source %s:%d is not the sender %s:%d", inet_ntoa(src.sin_addr), ntohs(src.sin_port),
		     inet_ntoa(self.sin_addr), ntohs(self.sin_port));
		return -1;
	}
	return 0;
}

/* ---- exchange ---- */

static void c_exchange(void)
{
	int a = dsock(7501), b = dsock(7502);

	if (a < 0 || b < 0) {
		fail("sockets: errno %d", errno);
		return;
	}
	for (unsigned i = 0; i < 100 && !why[0]; i++) {
		size_t n = (i * 97) % 1001;
		if (!one_way(a, b, n, i))
			one_way(b, a, 1000 - n, i + 1000);
	}
	rclose(a);
	rclose(b);
}

/* ---- fresh ---- */

static void c_fresh(void)
{
	int fd = rsocket(AF_INET, SOCK_DGRAM, 0);
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLOUT };
	char b[8];
	int r;

	if (fd < 0) {
		fail("rsocket: errno %d", errno);
		return;
	}
	errno = 0;
	if (rrecv(fd, b, sizeof b, MSG_DONTWAIT) != -1 || errno != EINVAL)
		fail("rrecv before the endpoint exists: errno %d, not EINVAL", errno);
	r = rpoll(&p, 1, 0);
	if (r != 0 || p.revents)
		fail("rpoll of a fresh socket: %d, revents %#x (nothing expected)", r, p.revents);
	rclose(fd);
}

/* ---- unbound ---- */

static void c_unbound(void)
{
	int a = rsocket(AF_INET, SOCK_DGRAM, 0), b = dsock(7622);
	struct sockaddr_in dst, src, self;
	socklen_t l = sizeof dst;
	char in[64];
	ssize_t r;

	if (a < 0 || b < 0) {
		fail("sockets: errno %d", errno);
		return;
	}
	rgetsockname(b, (struct sockaddr *)&dst, &l);
	for (int i = 0; i < 20 && !why[0]; i++) {
		if (rsendto(a, "ping", 4, 0, (struct sockaddr *)&dst, sizeof dst) != 4) {
			fail("rsendto %d: errno %d", i, errno);
			break;
		}
		r = recv_wait(b, in, sizeof in, &src, 5000);
		if (r != 4) {
			fail("datagram %d: %zd (errno %d)", i, r, errno);
			break;
		}
		if (src.sin_port == 0 || src.sin_addr.s_addr != dst.sin_addr.s_addr) {
			fail("datagram %d comes from %s port %d", i, inet_ntoa(src.sin_addr), ntohs(src.sin_port));
			break;
		}
		if (rsendto(b, "pong", 4, 0, (struct sockaddr *)&src, sizeof src) != 4) {
			fail("answer %d: errno %d", i, errno);
			break;
		}
		r = recv_wait(a, in, sizeof in, &src, 5000);
		if (r != 4 || memcmp(in, "pong", 4)) {
			fail("answer %d did not arrive: %zd (errno %d)", i, r, errno);
			break;
		}
	}
	l = sizeof self;
	if (!why[0] && (rgetsockname(a, (struct sockaddr *)&self, &l) || self.sin_port == 0))
		fail("the sender has no port after sending");
	rclose(a);
	rclose(b);
}

/* ---- peek-trunc ---- */

static void c_peek_trunc(void)
{
	int a = dsock(7511), b = dsock(7512);
	struct sockaddr_in dst, src, self;
	socklen_t l = sizeof dst;
	uint8_t out[300], in[300];
	struct iovec iov[3];
	struct msghdr m;
	ssize_t r;

	if (a < 0 || b < 0) {
		fail("sockets: errno %d", errno);
		return;
	}
	rgetsockname(b, (struct sockaddr *)&dst, &l);
	l = sizeof self;
	rgetsockname(a, (struct sockaddr *)&self, &l);
	pattern(out, sizeof out, 5);
	/* MSG_PEEK leaves it queued */
	rsendto(a, out, 100, 0, (struct sockaddr *)&dst, sizeof dst);
	if (!(wait_for(b, POLLIN, 5000) & POLLIN)) {
		fail("nothing arrived");
		goto out;
	}
	r = rrecv(b, in, sizeof in, MSG_PEEK);
	if (r != 100 || memcmp(in, out, 100))
		fail("MSG_PEEK: %zd bytes", r);
	r = rrecv(b, in, sizeof in, 0);
	if (r != 100 || memcmp(in, out, 100))
		fail("read after MSG_PEEK: %zd bytes", r);
	/* cut: the rest is dropped */
	rsendto(a, out, 100, 0, (struct sockaddr *)&dst, sizeof dst);
	wait_for(b, POLLIN, 5000);
	r = rrecv(b, in, 10, 0);
	if (r != 10 || memcmp(in, out, 10))
		fail("a datagram cut to 10 bytes: %zd", r);
	errno = 0;
	r = rrecv(b, in, sizeof in, MSG_DONTWAIT);
	if (r != -1 || errno != EAGAIN)
		fail("after a cut datagram: %zd errno %d (EAGAIN expected: the rest is dropped)", r, errno);
	/* a short address buffer: cut, the full length reported (recvfrom(2)) */
	rsendto(a, out, 10, 0, (struct sockaddr *)&dst, sizeof dst);
	wait_for(b, POLLIN, 5000);
	memset(&src, 0xee, sizeof src);
	l = 8;
	r = rrecvfrom(b, in, sizeof in, 0, (struct sockaddr *)&src, &l);
	if (r != 10 || l != sizeof(struct sockaddr_in) || memcmp(&src, &self, 8) ||
	    ((uint8_t *)&src)[8] != 0xee)
		fail("rrecvfrom with an 8-byte address buffer: %zd, length %u", r, l);
	/* MSG_TRUNC: the full length */
	rsendto(a, out, 100, 0, (struct sockaddr *)&dst, sizeof dst);
	wait_for(b, POLLIN, 5000);
	r = rrecv(b, in, 10, MSG_TRUNC);
	if (r != 100)
		fail("MSG_TRUNC: %zd, not the datagram's length 100", r);
	/* rsendmsg gathers and names its destination; rrecvmsg scatters */
	iov[0] = (struct iovec){ out, 50 };
	iov[1] = (struct iovec){ out + 50, 0 };
	iov[2] = (struct iovec){ out + 50, 150 };
	memset(&m, 0, sizeof m);
	m.msg_name = &dst;
	m.msg_namelen = sizeof dst;
	m.msg_iov = iov;
	m.msg_iovlen = 3;
	r = rsendmsg(a, &m, 0);
	if (r != 200)
		fail("rsendmsg: %zd (errno %d)", r, errno);
	wait_for(b, POLLIN, 5000);
	memset(in, 0, sizeof in);
	iov[0] = (struct iovec){ in, 120 };
	iov[1] = (struct iovec){ in + 120, 40 };
	memset(&m, 0, sizeof m);
	memset(&src, 0, sizeof src);
	m.msg_name = &src;
	m.msg_namelen = sizeof src;
	m.msg_iov = iov;
	m.msg_iovlen = 2;
	r = rrecvmsg(b, &m, 0);
	if (r != 160 || memcmp(in, out, 160))
		fail("rrecvmsg into 120 + 40 bytes: %zd", r);
	if (!(m.msg_flags & MSG_TRUNC))
		fail("rrecvmsg of 200 bytes into 160: no MSG_TRUNC in msg_flags");
	if (m.msg_namelen != sizeof src || !same_addr(&src, &self))
		fail("rrecvmsg's msg_name is not the sender");
out:
	rclose(a);
	rclose(b);
}

/* ---- sizes ---- */

/* The active MTU of rxe0's port 1, in bytes (0 if unknown). */
static int port_mtu(void)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_port_attr pa;
	int mtu = 0;

	for (int i = 0; l && l[i]; i++) {
		if (strcmp(ibv_get_device_name(l[i]), "rxe0"))
			continue;
		struct ibv_context *c = ibv_open_device(l[i]);
		if (c && !ibv_query_port(c, 1, &pa))
			mtu = 128 << pa.active_mtu;
		if (c)
			ibv_close_device(c);
	}
	if (l)
		ibv_free_device_list(l);
	return mtu;
}

static void c_sizes(void)
{
	int a = dsock(7521), b = dsock(7522), mtu = port_mtu(), max;
	struct sockaddr_in dst;
	socklen_t l = sizeof dst;
	static uint8_t big[65507];
	size_t bad[] = { 0, 3000, 65507 };

	if (a < 0 || b < 0 || !mtu) {
		fail("sockets: errno %d (port MTU %d)", errno, mtu);
		return;
	}
	max = (mtu < 2048 ? mtu : 2048) - 8;
	bad[0] = max + 1;
	rgetsockname(b, (struct sockaddr *)&dst, &l);
	/* the first datagram goes over UDP (no address handle yet) */
	for (size_t i = 0; i < 3; i++) {
		errno = 0;
		if (rsendto(a, big, bad[i], 0, (struct sockaddr *)&dst, sizeof dst) != -1 || errno != EMSGSIZE)
			fail("a datagram of %zu bytes (largest %d): errno %d, not EMSGSIZE", bad[i], max, errno);
	}
	one_way(a, b, max, 1);
	/* some round trips: the address handles exist, UD carries them */
	for (int i = 0; i < 20 && !why[0]; i++)
		if (!one_way(a, b, 100, i))
			one_way(b, a, 100, i);
	one_way(a, b, max, 2);
	one_way(b, a, max, 3);
	for (size_t i = 0; i < 3; i++) {
		errno = 0;
		if (rsendto(a, big, bad[i], 0, (struct sockaddr *)&dst, sizeof dst) != -1 || errno != EMSGSIZE)
			fail("over UD, a datagram of %zu bytes (largest %d): errno %d, not EMSGSIZE", bad[i], max,
			     errno);
	}
	rclose(a);
	rclose(b);
}

/* ---- connected ---- */

static void c_connected(void)
{
	int a = dsock(7531), b = dsock(7532), c = rsocket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in dst, peer, self, src;
	struct sockaddr_in6 s6;
	socklen_t l = sizeof dst;
	char in[64];
	struct iovec iov[2];
	ssize_t r;

	if (a < 0 || b < 0 || c < 0) {
		fail("sockets: errno %d", errno);
		return;
	}
	rgetsockname(b, (struct sockaddr *)&dst, &l);
	l = sizeof self;
	rgetsockname(a, (struct sockaddr *)&self, &l);
	if (rconnect(a, (struct sockaddr *)&dst, sizeof dst)) {
		fail("rconnect: errno %d", errno);
		goto out;
	}
	l = sizeof peer;
	if (rgetpeername(a, (struct sockaddr *)&peer, &l) || !same_addr(&peer, &dst))
		fail("rgetpeername is not the connected address");
	if (rsend(a, "one", 3, 0) != 3 || rwrite(a, "two!", 4) != 4)
		fail("rsend/rwrite to the default destination: errno %d", errno);
	iov[0] = (struct iovec){ "thr", 3 };
	iov[1] = (struct iovec){ "ee", 2 };
	if (rwritev(a, iov, 2) != 5)
		fail("rwritev: errno %d", errno);
	r = recv_wait(b, in, sizeof in, &src, 5000);
	if (r != 3 || memcmp(in, "one", 3) || !same_addr(&src, &self))
		fail("first datagram: %zd", r);
	wait_for(b, POLLIN, 5000);
	r = rread(b, in, sizeof in);
	if (r != 4 || memcmp(in, "two!", 4))
		fail("rread: %zd", r);
	wait_for(b, POLLIN, 5000);
	memset(in, 0, sizeof in);
	iov[0] = (struct iovec){ in, 1 };
	iov[1] = (struct iovec){ in + 1, 10 };
	r = rreadv(b, iov, 2);
	if (r != 5 || memcmp(in, "three", 5))
		fail("rreadv: %zd '%.5s'", r, in);
	if (rsendto(a, "four", 4, 0, NULL, 0) != 4)
		fail("rsendto without an address on a connected socket: errno %d", errno);
	r = recv_wait(b, in, sizeof in, &src, 5000);
	if (r != 4 || memcmp(in, "four", 4) || !same_addr(&src, &self))
		fail("rsendto without an address: %zd bytes arrived", r);
	errno = 0;
	if (rsend(c, "x", 1, 0) != -1 || errno != EDESTADDRREQ)
		fail("rsend without a destination: errno %d, not EDESTADDRREQ", errno);
	memset(&s6, 0, sizeof s6);
	s6.sin6_family = AF_INET6;
	s6.sin6_port = htons(7532);
	inet_pton(AF_INET6, ADDR6, &s6.sin6_addr);
	errno = 0;
	if (rsendto(c, "x", 1, 0, (struct sockaddr *)&s6, sizeof s6) != -1 || errno != EAFNOSUPPORT)
		fail("an IPv6 destination on an IPv4 socket: errno %d, not EAFNOSUPPORT", errno);
out:
	rclose(a);
	rclose(b);
	rclose(c);
}

/* ---- readiness ---- */

static void c_readiness(void)
{
	int a = dsock(7541), b = dsock(7542), ep;
	struct sockaddr_in dst;
	socklen_t l = sizeof dst;
	struct epoll_event ev = { .events = EPOLLIN }, out;
	struct pollfd p = { .fd = b, .events = POLLIN | POLLOUT };
	fd_set rs, ws;
	struct timeval tv = { 0, 0 };
	char in[16];

	if (a < 0 || b < 0) {
		fail("sockets: errno %d", errno);
		return;
	}
	rgetsockname(b, (struct sockaddr *)&dst, &l);
	if (rpoll(&p, 1, 0) != 1 || p.revents != POLLOUT)
		fail("rpoll of a bound socket: revents %#x, POLLOUT only expected", p.revents);
	if (!(plain_poll(b, POLLOUT, 1000) & POLLOUT))
		fail("poll(2): a bound socket is not writable");
	if (plain_poll(b, POLLIN, 100) & POLLIN)
		fail("poll(2): readable before any datagram");
	ep = epoll_create1(0);
	epoll_ctl(ep, EPOLL_CTL_ADD, b, &ev);
	if (epoll_wait(ep, &out, 1, 0) != 0)
		fail("epoll: readable before any datagram");
	/* a datagram: the descriptor turns readable with no call on b */
	rsendto(a, "wake", 4, 0, (struct sockaddr *)&dst, sizeof dst);
	if (!(plain_poll(b, POLLIN, 5000) & POLLIN))
		fail("poll(2): not readable after a datagram arrived");
	if (epoll_wait(ep, &out, 1, 1000) != 1 || !(out.events & EPOLLIN))
		fail("epoll: not readable after a datagram arrived");
	FD_ZERO(&rs);
	FD_ZERO(&ws);
	FD_SET(b, &rs);
	FD_SET(b, &ws);
	if (rselect(b + 1, &rs, &ws, NULL, &tv) != 2 || !FD_ISSET(b, &rs) || !FD_ISSET(b, &ws))
		fail("rselect: not readable and writable");
	p.revents = 0;
	if (rpoll(&p, 1, 0) != 1 || p.revents != (POLLIN | POLLOUT))
		fail("rpoll with a datagram queued: revents %#x", p.revents);
	if (rrecv(b, in, sizeof in, 0) != 4)
		fail("rrecv: errno %d", errno);
	if (plain_poll(b, POLLIN, 0) & POLLIN)
		fail("poll(2): still readable once the datagram was read");
	if (epoll_wait(ep, &out, 1, 0) != 0)
		fail("epoll: still readable once the datagram was read");
	close(ep);
	rclose(a);
	rclose(b);
}

/* ---- blocking ---- */

struct later {
	int fd, port, ms;
};

static void *send_later(void *arg)
{
	struct later *lt = arg;
	struct sockaddr_in dst;

	usleep(lt->ms * 1000);
	sin_of(&dst, ADDR, lt->port);
	rsendto(lt->fd, "late", 4, 0, (struct sockaddr *)&dst, sizeof dst);
	return NULL;
}

static void c_blocking(void)
{
	int a = dsock(7551), b = dsock(7552), n = rsocket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	struct sockaddr_in sin;
	struct later lt = { a, 7552, 300 };
	pthread_t t;
	char in[16];
	double t0;
	ssize_t r;

	if (a < 0 || b < 0 || n < 0) {
		fail("sockets: errno %d", errno);
		return;
	}
	sin_of(&sin, ADDR, 7553);
	rbind(n, (struct sockaddr *)&sin, sizeof sin);
	errno = 0;
	if (rrecv(n, in, sizeof in, 0) != -1 || errno != EAGAIN)
		fail("SOCK_NONBLOCK: rrecv errno %d, not EAGAIN", errno);
	errno = 0;
	if (rrecv(b, in, sizeof in, MSG_DONTWAIT) != -1 || errno != EAGAIN)
		fail("MSG_DONTWAIT: rrecv errno %d, not EAGAIN", errno);
	/* a blocking receive, woken by a datagram sent 300 ms later */
	pthread_create(&t, NULL, send_later, &lt);
	t0 = now_ms();
	r = rrecv(b, in, sizeof in, 0);
	pthread_join(t, NULL);
	if (r != 4 || memcmp(in, "late", 4))
		fail("blocking rrecv: %zd (errno %d)", r, errno);
	else if (now_ms() - t0 < 250)
		fail("blocking rrecv returned before the datagram was sent");
	rclose(a);
	rclose(b);
	rclose(n);
}

/* ---- hostile-udp ---- */

/* A plain UDP socket bound to ADDR (any port). */
static int plain_udp(void)
{
	struct sockaddr_in sin;
	int u = socket(AF_INET, SOCK_DGRAM, 0);

	sin_of(&sin, ADDR, 0);
	bind(u, (struct sockaddr *)&sin, sizeof sin);
	return u;
}

static void put_hdr(uint8_t *h, uint8_t ver, uint8_t op, uint8_t len, uint32_t qpn)
{
	memset(h, 0, 16);
	h[0] = h[1] = h[2] = h[3] = 0x55;
	h[4] = ver;
	h[5] = op;
	h[6] = len;
	h[8] = qpn >> 24;
	h[9] = qpn >> 16;
	h[10] = qpn >> 8;
	h[11] = qpn;
	inet_pton(AF_INET, ADDR, h + 12);
}

/* Send a forged DATA from u to dst; the QPN of the CTRL answer (0: none). */
static uint32_t forge_data(int u, const struct sockaddr_in *dst, const char *payload)
{
	uint8_t d[64], ans[64];
	size_t n = strlen(payload);
	ssize_t r;
	struct pollfd p = { .fd = u, .events = POLLIN };

	put_hdr(d, 4, 0, 16, 0x123);
	memcpy(d + 16, payload, n);
	sendto(u, d, 16 + n, 0, (const struct sockaddr *)dst, sizeof *dst);
	if (poll(&p, 1, 5000) != 1) {
		fail("no CTRL answer to a DATA header");
		return 0;
	}
	r = recv(u, ans, sizeof ans, 0);
	if (r != 16 || ans[0] != 0x55 || ans[1] != 0x55 || ans[2] != 0x55 || ans[3] != 0x55 || ans[4] != 4 ||
	    ans[5] != 7 || ans[6] != 16 || ans[7] != 0 || ans[8] != 0) {
		fail("the answer is not a 16-byte IPv4 CTRL header (%zd bytes, %02x %02x %02x %02x)", r, ans[4],
		     ans[5], ans[6], ans[8]);
		return 0;
	}
	return (uint32_t)ans[9] << 16 | (uint32_t)ans[10] << 8 | ans[11];
}

static void c_hostile_udp(void)
{
	int a = dsock(7561), b = dsock(7562), u = plain_udp();
	struct sockaddr_in dst, src, us;
	socklen_t l = sizeof dst;
	uint8_t g[64];
	char in[64];
	uint32_t qpn;
	ssize_t r;

	if (a < 0 || b < 0 || u < 0) {
		fail("sockets: errno %d", errno);
		return;
	}
	rgetsockname(b, (struct sockaddr *)&dst, &l);
	l = sizeof us;
	getsockname(u, (struct sockaddr *)&us, &l);
	/* garbage: every one of these is dropped, none answered */
	struct {
		uint8_t ver, op, len;
		uint32_t qpn;
		size_t n;
	} bad[] = {
		{ 4, 0, 16, 0x123, 3 },	 /* shorter than a header */
		{ 4, 0, 16, 0x123, 0 },	 /* empty */
		{ 6, 0, 28, 0x123, 30 }, /* IPv6 header from an IPv4 address */
		{ 4, 0, 28, 0x123, 30 }, /* IPv4 with the IPv6 length */
		{ 4, 0, 20, 0x123, 30 }, /* a length of nothing */
		{ 5, 0, 16, 0x123, 30 }, /* version 5 */
		{ 4, 3, 16, 0x123, 30 }, /* operation 3 */
		{ 4, 0, 16, 0, 30 },	 /* QP 0 */
		{ 4, 0, 16, 1, 30 },	 /* QP 1 */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		memset(g, 'G', sizeof g);
		put_hdr(g, bad[i].ver, bad[i].op, bad[i].len, bad[i].qpn);
		sendto(u, g, bad[i].n, 0, (struct sockaddr *)&dst, sizeof dst);
	}
	memset(g, 0, sizeof g);
	sendto(u, g, 40, 0, (struct sockaddr *)&dst, sizeof dst); /* wrong tag */
	usleep(300000);
	if (plain_poll(u, POLLIN, 0))
		fail("garbage was answered");
	if (wait_for(b, POLLIN, 200))
		fail("garbage was delivered");
	/* a valid DATA header: answered with our QP number, payload delivered */
	qpn = forge_data(u, &dst, "forged");
	if (qpn < 2 && !why[0])
		fail("the CTRL answer names QP %u", qpn);
	r = recv_wait(b, in, sizeof in, &src, 5000);
	if (r != 6 || memcmp(in, "forged", 6))
		fail("the forged DATA's payload: %zd bytes", r);
	else if (!same_addr(&src, &us))
		fail("the forged DATA's source is not the plain socket's address");
	/* the socket still works */
	if (!why[0])
		if (!one_way(a, b, 500, 9))
			one_way(b, a, 500, 10);
	close(u);
	rclose(a);
	rclose(b);
}

/* ---- hostile-ud ---- */

/* A raw UD QP (port space UDP: Q_Key 0x01234567) and an address handle to
 * ADDR, made with librdmacm and libibverbs directly. */
struct raw_ud {
	struct rdma_cm_id *id;
	struct ibv_ah *ah;
	struct ibv_mr *mr;
	uint8_t buf[4096];
};

static int raw_ud_open(struct raw_ud *r, int port)
{
	struct sockaddr_in src, dst;
	struct ibv_qp_init_attr qa;
	struct ibv_ah_attr aa;
	struct ibv_port_attr pa;
	union ibv_gid gid;
	int idx = -1;

	memset(r, 0, sizeof *r);
	if (rdma_create_id(NULL, &r->id, NULL, RDMA_PS_UDP))
		return -1;
	sin_of(&src, ADDR, 0);
	sin_of(&dst, ADDR, port);
	if (rdma_resolve_addr(r->id, (struct sockaddr *)&src, (struct sockaddr *)&dst, 2000) ||
	    rdma_resolve_route(r->id, 2000))
		return -1;
	memset(&qa, 0, sizeof qa);
	qa.qp_type = IBV_QPT_UD;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 8;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qa.sq_sig_all = 1;
	if (rdma_create_qp(r->id, NULL, &qa))
		return -1;
	if (ibv_query_port(r->id->verbs, r->id->port_num, &pa))
		return -1;
	for (int i = 0; i < pa.gid_tbl_len && idx < 0; i++)
		if (!ibv_query_gid(r->id->verbs, r->id->port_num, i, &gid) &&
		    !memcmp(&gid, &r->id->route.path_rec->sgid, sizeof gid))
			idx = i;
	if (idx < 0)
		return -1;
	memset(&aa, 0, sizeof aa);
	aa.is_global = 1;
	aa.grh.dgid = r->id->route.path_rec->dgid;
	aa.grh.sgid_index = idx;
	aa.grh.hop_limit = 64;
	aa.port_num = r->id->port_num;
	r->ah = ibv_create_ah(r->id->pd, &aa);
	r->mr = ibv_reg_mr(r->id->pd, r->buf, sizeof r->buf, IBV_ACCESS_LOCAL_WRITE);
	return r->ah && r->mr ? 0 : -1;
}

/* Send n bytes of r->buf to qpn; 0 when the send completed. */
static int raw_ud_send(struct raw_ud *r, uint32_t qpn, size_t n)
{
	struct ibv_sge sge = { (uintptr_t)r->buf, (uint32_t)n, r->mr->lkey };
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;
	double end = now_ms() + 5000;
	int k;

	memset(&wr, 0, sizeof wr);
	wr.sg_list = &sge;
	wr.num_sge = n ? 1 : 0;
	wr.opcode = IBV_WR_SEND;
	wr.wr.ud.ah = r->ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = QKEY;
	if (ibv_post_send(r->id->qp, &wr, &bad))
		return -1;
	while ((k = ibv_poll_cq(r->id->send_cq, 1, &wc)) == 0 && now_ms() < end)
		;
	return k == 1 && wc.status == IBV_WC_SUCCESS ? 0 : -1;
}

static void raw_ud_close(struct raw_ud *r)
{
	if (r->mr)
		ibv_dereg_mr(r->mr);
	if (r->ah)
		ibv_destroy_ah(r->ah);
	if (r->id) {
		if (r->id->qp)
			rdma_destroy_qp(r->id);
		rdma_destroy_id(r->id);
	}
}

static void c_hostile_ud(void)
{
	int a = dsock(7571), b = dsock(7572), u = plain_udp();
	struct sockaddr_in dst, src;
	socklen_t l = sizeof dst;
	static struct raw_ud r;
	uint32_t qpn;
	char in[64];
	ssize_t n;

	if (a < 0 || b < 0 || u < 0) {
		fail("sockets: errno %d", errno);
		return;
	}
	rgetsockname(b, (struct sockaddr *)&dst, &l);
	/* the socket's QP number, from its answer to a DATA */
	qpn = forge_data(u, &dst, "x");
	recv_wait(b, in, sizeof in, &src, 5000);
	if (!qpn)
		goto out;
	if (raw_ud_open(&r, 7572)) {
		fail("raw UD QP: errno %d", errno);
		goto out;
	}
	struct {
		uint8_t h[8];
		size_t n;
	} bad[] = {
		{ { 5, 8, 0, 1, 10, 1, 2, 3 }, 20 },	/* version 5 */
		{ { 4, 24, 0, 1, 10, 1, 2, 3 }, 40 },	/* IPv4 with the IPv6 length */
		{ { 6, 8, 0, 1, 10, 1, 2, 3 }, 40 },	/* IPv6 with the IPv4 length */
		{ { 4, 8, 0, 1, 10, 1, 2, 3 }, 5 },	/* shorter than its header */
		{ { 6, 24, 0, 1, 0, 0, 0, 0 }, 12 },	/* IPv6 header, 12 bytes */
		{ { 0, 0, 0, 0, 0, 0, 0, 0 }, 0 },	/* empty */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0] && !why[0]; i++) {
		memset(r.buf, 'B', sizeof r.buf);
		memcpy(r.buf, bad[i].h, 8);
		if (raw_ud_send(&r, qpn, bad[i].n))
			fail("raw UD send %zu did not complete", i);
	}
	if (wait_for(b, POLLIN, 300))
		fail("a bad UD message was delivered");
	/* a valid message: its header names 10.1.2.3 port 4444 */
	uint8_t ok[] = { 4, 8, 0x11, 0x5c, 10, 1, 2, 3, 'u', 'd', '-', 'o', 'k' };
	memcpy(r.buf, ok, sizeof ok);
	raw_ud_send(&r, qpn, sizeof ok);
	n = recv_wait(b, in, sizeof in, &src, 5000);
	if (n != 5 || memcmp(in, "ud-ok", 5))
		fail("the valid UD message: %zd bytes", n);
	else if (src.sin_port != htons(4444) || src.sin_addr.s_addr != inet_addr("10.1.2.3"))
		fail("the valid UD message's source is %s:%d, not the one its header names", inet_ntoa(src.sin_addr),
		     ntohs(src.sin_port));
	if (wait_for(b, POLLIN, 200))
		fail("more than the valid UD message was delivered");
	if (!why[0])
		if (!one_way(a, b, 700, 11))
			one_way(b, a, 700, 12);
	raw_ud_close(&r);
out:
	close(u);
	rclose(a);
	rclose(b);
}

/* ---- many ---- */

static void c_many(void)
{
	int a = dsock(7581), b = dsock(7582), got = 0;
	struct sockaddr_in dst, src;
	socklen_t l = sizeof dst;
	uint8_t out[512], in[600];
	ssize_t r;

	if (a < 0 || b < 0) {
		fail("sockets: errno %d", errno);
		return;
	}
	rgetsockname(b, (struct sockaddr *)&dst, &l);
	/* resolve first, so that what follows goes over UD */
	for (int i = 0; i < 10 && !why[0]; i++)
		if (!one_way(a, b, 64, i))
			one_way(b, a, 64, i);
	for (int i = 0; i < 300 && !why[0]; i++) {
		out[0] = i & 0xff;
		out[1] = i >> 8;
		pattern(out + 2, sizeof out - 2, i);
		while ((r = rsendto(a, out, sizeof out, MSG_DONTWAIT, (struct sockaddr *)&dst, sizeof dst)) < 0 &&
		       errno == EAGAIN)
			wait_for(a, POLLOUT, 1000);
		if (r != sizeof out)
			fail("rsendto %d: %zd errno %d", i, r, errno);
	}
	while (!why[0] && recv_wait(b, in, sizeof in, &src, 1500) >= 0) {
		uint8_t want[510];
		int i = in[0] | in[1] << 8;
		pattern(want, sizeof want, i);
		if (memcmp(in + 2, want, sizeof want))
			fail("datagram %d arrived changed", i);
		got++;
	}
	if (!why[0] && got == 0)
		fail("none of 300 datagrams arrived");
	printf("# many: %d of 300 datagrams arrived (UD may drop when the receive queue is full)\n", got);
	rclose(a);
	rclose(b);
}

/* ---- close ---- */

static void c_close(void)
{
	int a = dsock(7591), b = dsock(7592), fds0, ids0;
	struct sockaddr_in dst;
	socklen_t l = sizeof dst;
	uint8_t out[1000] = { 0 };
	double t0;

	if (a < 0 || b < 0) {
		fail("sockets: errno %d", errno);
		return;
	}
	rgetsockname(b, (struct sockaddr *)&dst, &l);
	for (int i = 0; i < 5 && !why[0]; i++)
		if (!one_way(a, b, 64, i))
			one_way(b, a, 64, i);
	for (int i = 0; i < 50; i++)
		rsendto(a, out, sizeof out, MSG_DONTWAIT, (struct sockaddr *)&dst, sizeof dst);
	t0 = now_ms();
	if (rclose(a))
		fail("rclose: errno %d", errno);
	if (now_ms() - t0 > 2500)
		fail("rclose took %.0f ms", now_ms() - t0);
	if (fcntl(a, F_GETFD) >= 0)
		fail("the descriptor is still open after rclose");
	rclose(b);
	/* cycles: nothing left behind */
	fds0 = count_fds();
	ids0 = count_cm_ids();
	for (int i = 0; i < 40 && !why[0]; i++) {
		int x = dsock(7593), y = dsock(7594);
		if (x < 0 || y < 0) {
			fail("cycle %d: sockets errno %d", i, errno);
			break;
		}
		if (!one_way(x, y, 200, i))
			one_way(y, x, 200, i);
		rclose(x);
		rclose(y);
	}
	usleep(200000);
	if (count_fds() != fds0)
		fail("descriptors: %d before the cycles, %d after", fds0, count_fds());
	if (ids0 >= 0 && count_cm_ids() != ids0)
		fail("CM ids: %d before the cycles, %d after", ids0, count_cm_ids());
}

/* ---- ipv6 ---- */

static void c_ipv6(void)
{
	struct sockaddr_in6 sa, sb, src, self;
	socklen_t l;
	int a = rsocket(AF_INET6, SOCK_DGRAM, 0), b = rsocket(AF_INET6, SOCK_DGRAM, 0);
	char in[1100], out[1000];
	ssize_t r;

	memset(&sa, 0, sizeof sa);
	sa.sin6_family = AF_INET6;
	inet_pton(AF_INET6, ADDR6, &sa.sin6_addr);
	sb = sa;
	sa.sin6_port = htons(7601);
	sb.sin6_port = htons(7602);
	if (a < 0 || b < 0 || rbind(a, (struct sockaddr *)&sa, sizeof sa) || rbind(b, (struct sockaddr *)&sb, sizeof sb)) {
		fail("IPv6 sockets: errno %d", errno);
		return;
	}
	l = sizeof self;
	rgetsockname(a, (struct sockaddr *)&self, &l);
	for (int i = 0; i < 20 && !why[0]; i++) {
		int from = i & 1 ? b : a, to = i & 1 ? a : b;
		struct sockaddr_in6 *d = i & 1 ? &sa : &sb;
		pattern((uint8_t *)out, sizeof out, i);
		if (rsendto(from, out, sizeof out, 0, (struct sockaddr *)d, sizeof *d) != sizeof out) {
			fail("rsendto %d: errno %d", i, errno);
			break;
		}
		if (!(wait_for(to, POLLIN, 5000) & POLLIN)) {
			fail("datagram %d did not arrive", i);
			break;
		}
		l = sizeof src;
		r = rrecvfrom(to, in, sizeof in, 0, (struct sockaddr *)&src, &l);
		if (r != sizeof out || memcmp(in, out, sizeof out))
			fail("datagram %d: %zd bytes", i, r);
		if (l != sizeof src || src.sin6_family != AF_INET6 ||
		    memcmp(&src.sin6_addr, &sa.sin6_addr, 16) || src.sin6_port != (i & 1 ? sb.sin6_port : sa.sin6_port))
			fail("datagram %d: the source is not the sender", i);
	}
	rclose(a);
	rclose(b);
}

/* ---- repoll ---- */

static void c_repoll(void)
{
	int (*create)(int) = (int (*)(int))dlsym(RTLD_DEFAULT, "repoll_create");
	int (*ctl)(int, int, int, struct epoll_event *) =
		(int (*)(int, int, int, struct epoll_event *))dlsym(RTLD_DEFAULT, "repoll_ctl");
	int (*wait)(int, struct epoll_event *, int, int) =
		(int (*)(int, struct epoll_event *, int, int))dlsym(RTLD_DEFAULT, "repoll_wait");
	int a = dsock(7611), b = dsock(7612), ep, n;
	struct epoll_event ev, out[4];
	struct later lt = { a, 7612, 300 };
	pthread_t t;
	char in[16];

	if (!create || !ctl || !wait) {
		fail("the library has no repoll_create/ctl/wait");
		return;
	}
	if (a < 0 || b < 0 || (ep = create(0)) < 0) {
		fail("sockets: errno %d", errno);
		return;
	}
	ev.events = EPOLLIN | EPOLLOUT;
	ev.data.u64 = 42;
	if (ctl(ep, EPOLL_CTL_ADD, b, &ev))
		fail("repoll_ctl ADD: errno %d", errno);
	n = wait(ep, out, 4, 0);
	if (n != 1 || out[0].events != EPOLLOUT || out[0].data.u64 != 42)
		fail("a bound socket: %d events %#x (EPOLLOUT only expected)", n, n > 0 ? out[0].events : 0);
	ev.events = EPOLLIN;
	ctl(ep, EPOLL_CTL_MOD, b, &ev);
	if (wait(ep, out, 4, 0) != 0)
		fail("readable before any datagram");
	/* a datagram sent while the caller sleeps in repoll_wait */
	pthread_create(&t, NULL, send_later, &lt);
	n = wait(ep, out, 4, 10000);
	pthread_join(t, NULL);
	if (n != 1 || out[0].events != EPOLLIN || out[0].data.u64 != 42)
		fail("a datagram arrived while waiting: %d events %#x", n, n > 0 ? out[0].events : 0);
	if (rrecv(b, in, sizeof in, 0) != 4)
		fail("rrecv: errno %d", errno);
	if (wait(ep, out, 4, 0) != 0)
		fail("still readable once the datagram was read");
	rclose(ep);
	rclose(a);
	rclose(b);
}

static const struct rscase cases[] = {
	{ "exchange", c_exchange, 120 },   { "fresh", c_fresh, 30 },	      { "unbound", c_unbound, 60 },	      { "peek-trunc", c_peek_trunc, 60 },
	{ "sizes", c_sizes, 60 },	   { "connected", c_connected, 60 },  { "readiness", c_readiness, 60 },
	{ "blocking", c_blocking, 60 },	   { "hostile-udp", c_hostile_udp, 60 }, { "hostile-ud", c_hostile_ud, 60 },
	{ "many", c_many, 120 },	   { "close", c_close, 180 },	      { "ipv6", c_ipv6, 60 },
	{ "repoll", c_repoll, 60 },
};

int main(int argc, char **argv)
{
	return run_cases(cases, sizeof cases / sizeof cases[0], argc, argv);
}
