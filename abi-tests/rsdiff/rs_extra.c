/*
 * rs_extra.c — what our rsockets do better than upstream's, checked on a
 * real kernel with OUR library only (abi-tests/vm/tests.d/63-rsockets-extra.sh
 * runs it with LD_LIBRARY_PATH): each case prints "ok   NAME ..." or
 * "FAIL NAME: why", and the program ends with "N passed, M failed".
 *
 *   plain-poll       an rsocket descriptor in plain poll(2), epoll(7) and
 *                    select(2): writable at once, readable when data
 *                    arrives (no library call in between), not readable
 *                    once read (also when rpoll saw the data first, at
 *                    once or after sleeping),
 *                    readable and hung up after the peer's shutdown
 *   close-bounded    rclose of a blocking socket whose peer was killed with
 *                    sends outstanding returns within its 2 s drain; a
 *                    non-blocking socket's rclose returns at once
 *   unaccepted-freed a connection the application never raccept()ed is
 *                    closed (the client sees EOF) and its resources freed
 *                    when the listener is closed
 *   accept-parallel  a client that stops in the middle of its handshake
 *                    does not hold up raccept for the next client
 *   high-fd          descriptors above 65535 work (connect, send, receive)
 *   repoll-away      a thread that waits in repoll_wait, calls in after
 *                    each wake-up (200 round trips), takes data in a
 *                    blocking rrecv and then stays away: data the peer
 *                    sends next still makes the descriptor readable for
 *                    plain poll(2) within 1 s, with no library call on the
 *                    socket (the progress engine takes the socket over,
 *                    though the loop's calls no longer wake it one by one)
 *   credits-away     the sender uses all its credits (one-byte messages, one
 *                    per receive of the peer's queue); the receiver takes
 *                    them all in one rrecv (a credit update is then due and
 *                    nothing is left to read) and makes no call on the
 *                    socket after: the sender still gets that update and
 *                    can send a whole queue's worth more (a guard for any
 *                    change that delays the update past the receive: the
 *                    receiver's next call may never come)
 *   busy-away        the receiver keeps calling in (a second of non-blocking
 *                    peeks while the sender has used all its credits): the
 *                    process's other threads (the progress engine) wake
 *                    fewer than 16 times in that second (looks every 16 ms
 *                    would be 62); then, as in credits-away, it takes the
 *                    data in one rrecv and stays away, and the sender still
 *                    gets the credit update
 *   blocked-away     a call ends on the socket and the next is a blocking
 *                    receive that waits 1.3 s for the peer: the process's
 *                    other threads wake fewer than 16 times in a second of
 *                    that wait (looks every 16 ms while a call lasts would
 *                    be 62), and the receive gets the peer's byte
 *   cycles           1000 connect / 1 KiB exchange / close cycles from 8
 *                    threads against one listener: no failure, no hang, no
 *                    descriptor or CM id left behind
 *
 *   rs_extra [CASE...]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rscase.h"

#define ADDR "192.0.2.1"

static void sin_of(struct sockaddr_in *sin, int port)
{
	memset(sin, 0, sizeof *sin);
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	inet_pton(AF_INET, ADDR, &sin->sin_addr);
}

static int listener(int port)
{
	struct sockaddr_in sin;
	int one = 1, l = rsocket(AF_INET, SOCK_STREAM, 0);

	sin_of(&sin, port);
	if (l < 0)
		return -1;
	rsetsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (rbind(l, (struct sockaddr *)&sin, sizeof sin) || rlisten(l, 64)) {
		rclose(l);
		return -1;
	}
	return l;
}

static int connect_to(int port)
{
	struct sockaddr_in sin;
	int fd = rsocket(AF_INET, SOCK_STREAM, 0);

	sin_of(&sin, port);
	if (fd >= 0 && rconnect(fd, (struct sockaddr *)&sin, sizeof sin)) {
		int e = errno;
		rclose(fd);
		errno = e;
		return -1;
	}
	return fd;
}

struct acc {
	int l, fd;
};

static void *accept_one(void *arg)
{
	struct acc *a = arg;

	a->fd = raccept(a->l, NULL, NULL);
	return NULL;
}

static int pair(int port, int *l, int *srv, int *cli)
{
	struct acc a;
	pthread_t t;

	*l = a.l = listener(port);
	if (a.l < 0)
		return -1;
	a.fd = -1;
	pthread_create(&t, NULL, accept_one, &a);
	*cli = connect_to(port);
	pthread_join(t, NULL);
	*srv = a.fd;
	return (*cli < 0 || *srv < 0) ? -1 : 0;
}

/* ---- plain-poll ---- */

/* 200 ms later, two bytes from the socket at arg */
static void *send_later(void *arg)
{
	usleep(200000);
	rsend(*(int *)arg, "st", 2, 0);
	return NULL;
}

/* `who` (an rpoll) reported 2 bytes on cli and nothing read them: the
 * descriptor turns readable for plain poll() with no further library call,
 * the bytes are there, and it is not readable once they are read */
static void announced(int cli, const char *who)
{
	char b[64];
	short r = plain_poll(cli, POLLIN, 2000);
	if (!(r & POLLIN))
		fail("poll() after %s reported data: not readable within 2 s (revents %#x)", who, r);
	if (rrecv(cli, b, sizeof b, MSG_DONTWAIT) != 2)
		fail("rrecv after %s and poll() did not return the 2 bytes", who);
	if (plain_poll(cli, POLLIN, 200) & POLLIN)
		fail("still readable after the data %s announced was read", who);
}

static void c_plain_poll(void)
{
	int l, srv, cli, ep;
	char b[64];
	short r;
	struct epoll_event ev = { .events = EPOLLIN }, out;
	fd_set rs;
	struct timeval tv;

	if (pair(7400, &l, &srv, &cli)) {
		fail("no connection (errno %d)", errno);
		return;
	}
	if (!(plain_poll(cli, POLLOUT, 2000) & POLLOUT))
		fail("a connected socket is not writable in poll()");
	if (plain_poll(cli, POLLIN, 100) & POLLIN)
		fail("readable before any data");
	/* data: poll() must wake without a library call on cli */
	rsend(srv, "0123456789", 10, 0);
	r = plain_poll(cli, POLLIN, 5000);
	if (!(r & POLLIN))
		fail("poll(): data sent, descriptor not readable within 5 s (revents %#x)", r);
	if (rrecv(cli, b, sizeof b, MSG_DONTWAIT) != 10)
		fail("rrecv after poll() did not return the 10 bytes");
	if (plain_poll(cli, POLLIN, 200) & POLLIN)
		fail("still readable after everything was read");
	/* epoll */
	ep = epoll_create1(0);
	ev.data.fd = cli;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, cli, &ev))
		fail("epoll_ctl ADD of an rsocket: errno %d", errno);
	if (epoll_wait(ep, &out, 1, 100) != 0)
		fail("epoll: readable before data");
	rsend(srv, "abc", 3, 0);
	if (epoll_wait(ep, &out, 1, 5000) != 1 || !(out.events & EPOLLIN))
		fail("epoll: data sent, no EPOLLIN within 5 s");
	if (rrecv(cli, b, sizeof b, MSG_DONTWAIT) != 3)
		fail("rrecv after epoll did not return the 3 bytes");
	close(ep);
	/* select */
	rsend(srv, "xy", 2, 0);
	FD_ZERO(&rs);
	FD_SET(cli, &rs);
	tv.tv_sec = 5;
	tv.tv_usec = 0;
	if (select(cli + 1, &rs, NULL, NULL, &tv) != 1 || !FD_ISSET(cli, &rs))
		fail("select: data sent, not readable within 5 s");
	if (rrecv(cli, b, sizeof b, MSG_DONTWAIT) != 2)
		fail("rrecv after select did not return the 2 bytes");
	/* rpoll saw the data first (its quick look, timeout 0): the descriptor
	 * still turns readable for plain poll() with no further library call,
	 * and not readable once read */
	rsend(srv, "pq", 2, 0);
	{
		struct pollfd p = { .fd = cli, .events = POLLIN };
		int n = 0, i;
		for (i = 0; i < 5000000 && (n = rpoll(&p, 1, 0)) == 0; i++)
			;
		if (n != 1 || !(p.revents & POLLIN))
			fail("rpoll(timeout 0): data sent, never POLLIN (%d, revents %#x)", n, p.revents);
	}
	announced(cli, "rpoll");
	/* the same when rpoll slept until the data came (it spins 10 us,
	 * then sleeps; the data is sent 200 ms later by another thread) */
	{
		struct pollfd p = { .fd = cli, .events = POLLIN };
		pthread_t t;
		int n;
		if (pthread_create(&t, NULL, send_later, &srv)) {
			fail("pthread_create");
			return;
		}
		n = rpoll(&p, 1, 5000);
		pthread_join(t, NULL);
		if (n != 1 || !(p.revents & POLLIN))
			fail("rpoll(timeout 5000): data sent after 200 ms, not POLLIN (%d, revents %#x)", n, p.revents);
	}
	announced(cli, "a sleeping rpoll");
	/* the peer shuts down: readable (EOF) and hung up */
	rshutdown(srv, SHUT_RDWR);
	r = plain_poll(cli, POLLIN, 5000);
	if (!(r & POLLIN) || !(r & POLLHUP))
		fail("after the peer's shutdown poll() gives revents %#x, not POLLIN|POLLHUP", r);
	if (rrecv(cli, b, sizeof b, MSG_DONTWAIT) != 0)
		fail("rrecv after the peer's shutdown is not EOF");
	rclose(cli);
	rclose(srv);
	rclose(l);
}

/* ---- repoll-away ---- */

/* The peer, in a process of its own (so that no other thread of ours calls
 * into the library): 200 ping/pong rounds, then 3 bytes after 100 ms, then
 * 10 bytes once the parent writes to `go`; then it waits for EOF. */
static void away_peer(int port, int go)
{
	int fd = -1, i;
	char b[64];

	for (i = 0; i < 100 && fd < 0; i++) {
		fd = connect_to(port);
		if (fd < 0)
			usleep(50000);
	}
	if (fd < 0)
		_exit(1);
	for (i = 0; i < 200; i++)
		if (rsend(fd, "ping", 4, 0) != 4 || rrecv(fd, b, 4, MSG_WAITALL) != 4)
			_exit(2);
	usleep(100000);
	rsend(fd, "abc", 3, 0);
	if (read(go, b, 1) != 1)
		_exit(3);
	rsend(fd, "0123456789", 10, 0);
	while (rrecv(fd, b, sizeof b, 0) > 0)
		;
	rclose(fd);
	_exit(0);
}

static void c_repoll_away(void)
{
	int (*create)(int) = (int (*)(int))dlsym(RTLD_DEFAULT, "repoll_create");
	int (*ctl)(int, int, int, struct epoll_event *) =
		(int (*)(int, int, int, struct epoll_event *))dlsym(RTLD_DEFAULT, "repoll_ctl");
	int (*wait)(int, struct epoll_event *, int, int) =
		(int (*)(int, struct epoll_event *, int, int))dlsym(RTLD_DEFAULT, "repoll_wait");
	struct epoll_event ev = { .events = EPOLLIN }, out;
	int l, s, ep, i, n, go[2], st;
	char b[64];
	pid_t pid;
	short r;
	double t;

	if (!create || !ctl || !wait) {
		fail("repoll_create/ctl/wait not exported");
		return;
	}
	if (pipe(go)) {
		fail("pipe");
		return;
	}
	pid = fork();
	if (pid == 0) {
		close(go[1]);
		away_peer(7410, go[0]);
	}
	close(go[0]);
	l = listener(7410);
	s = l < 0 ? -1 : raccept(l, NULL, NULL);
	if (s < 0) {
		fail("no connection (errno %d)", errno);
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		return;
	}
	ep = create(0);
	ev.data.u64 = 77;
	if (ep < 0 || ctl(ep, EPOLL_CTL_ADD, s, &ev)) {
		fail("repoll_create/ctl failed (errno %d)", errno);
		return;
	}
	/* an event loop: wait, take the data, answer */
	for (i = 0; i < 200; i++) {
		n = wait(ep, &out, 1, 5000);
		if (n != 1 || !(out.events & EPOLLIN) || out.data.u64 != 77) {
			fail("round %d: repoll_wait gave %d (events %#x)", i, n, n == 1 ? out.events : 0);
			break;
		}
		if (rrecv(s, b, 4, MSG_WAITALL) != 4 || rsend(s, "pong", 4, 0) != 4) {
			fail("round %d: the exchange after the wake-up failed (errno %d)", i, errno);
			break;
		}
	}
	/* The loop's thread sleeps in a blocking rrecv (it watches the
	 * completions itself, the engine does not) until the peer sends, then
	 * stays away from the socket: what the peer sends next must show on
	 * the descriptor without any call on it. */
	if (rrecv(s, b, 3, MSG_WAITALL) != 3)
		fail("blocking rrecv after the loop did not return the 3 bytes (errno %d)", errno);
	t = now_ms();
	if (write(go[1], "g", 1) != 1)
		fail("pipe write");
	r = plain_poll(s, POLLIN, 5000);
	t = now_ms() - t;
	printf("# data sent while the loop's thread is away: readable in poll() after %.1f ms\n", t);
	if (!(r & POLLIN))
		fail("data sent after the repoll loop: descriptor not readable within 5 s (revents %#x)", r);
	else if (t > 1000)
		fail("data sent after the repoll loop: readable only after %.0f ms (bound 1000)", t);
	if (rrecv(s, b, sizeof b, MSG_DONTWAIT) != 10)
		fail("rrecv after poll() did not return the 10 bytes");
	rclose(ep);
	rclose(s);
	rclose(l);
	close(go[1]);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail("the peer process ended with status %#x", st);
}

/* ---- close-bounded ---- */

/* A peer process that connects to PORT, reads nothing, and waits to be
 * killed; returns its pid once connected (-1 on failure). */
static pid_t silent_peer(int port)
{
	int p[2];
	pid_t pid;
	char c;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		alarm(30);
		int fd = connect_to(port);
		if (fd < 0 || write(p[1], "c", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	if (read(p[0], &c, 1) != 1) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	close(p[0]);
	return pid;
}

static void c_close_bounded(void)
{
	static char big[1 << 20];
	int l, fd, nb;
	pid_t pid;
	double t;

	/* the peers are forked before this process has an rsocket */
	l = -1;
	for (nb = 0; nb < 2; nb++) {
		int port = 7420 + nb;
		int go[2];
		if (pipe(go))
			return;
		pid = fork();
		if (pid == 0) {
			char c;
			close(go[1]);
			if (read(go[0], &c, 1) != 1)
				_exit(1);
			alarm(30);
			int s = connect_to(port);
			if (s < 0)
				_exit(1);
			for (;;)
				pause();
		}
		close(go[0]);
		l = listener(port);
		if (l < 0 || write(go[1], "g", 1) != 1) {
			kill(pid, SIGKILL);
			fail("no listener");
			return;
		}
		close(go[1]);
		fd = raccept(l, NULL, NULL);
		if (fd < 0) {
			kill(pid, SIGKILL);
			fail("raccept failed (errno %d)", errno);
			return;
		}
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		if (nb)
			rfcntl(fd, F_SETFL, O_NONBLOCK);
		/* sends that will not complete: the peer is gone */
		rsend(fd, big, sizeof big, MSG_DONTWAIT);
		t = now_ms();
		rclose(fd);
		t = now_ms() - t;
		if (!nb && t > 3000)
			fail("blocking rclose took %.0f ms (bound: 2 s drain)", t);
		if (nb && t > 500)
			fail("non-blocking rclose took %.0f ms", t);
		printf("# %s rclose with the peer killed: %.0f ms\n", nb ? "non-blocking" : "blocking", t);
		rclose(l);
	}
	(void)silent_peer;
}

/* ---- unaccepted-freed ---- */

static void c_unaccepted_freed(void)
{
	int go[2], res[2], l, ids;
	pid_t pid;
	char c = 0;
	double t;

	if (pipe(go) || pipe(res))
		return;
	pid = fork();
	if (pid == 0) {
		char b[8];
		close(go[1]);
		close(res[0]);
		if (read(go[0], b, 1) != 1)
			_exit(1);
		alarm(30);
		int fd = connect_to(7440);
		if (fd < 0 || write(res[1], "c", 1) != 1)
			_exit(2);
		/* EOF (0) or an error once the listener is gone */
		ssize_t n = rrecv(fd, b, sizeof b, 0);
		_exit(n <= 0 ? 0 : 3);
	}
	close(go[0]);
	close(res[1]);
	l = listener(7440);
	if (l < 0 || write(go[1], "g", 1) != 1 || read(res[0], &c, 1) != 1) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		fail("the client did not connect");
		return;
	}
	/* connected, never accepted by the application */
	usleep(200000);
	rclose(l);
	int st = 0;
	t = now_ms();
	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (now_ms() - t > 10000) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			fail("the client still waits 10 s after the listener was closed");
			break;
		}
		usleep(50000);
	}
	if (!why[0] && (!WIFEXITED(st) || WEXITSTATUS(st) != 0))
		fail("the client ended with status %#x (not EOF)", st);
	t = now_ms();
	while ((ids = count_cm_ids()) > 0 && now_ms() - t < 5000)
		usleep(100000);
	if (ids != 0)
		fail("%d CM ids of this process are left after closing the listener", ids);
}

/* ---- accept-parallel ---- */

/* rsocket connection data (docs/rsockets.md): version 1, credits, an
 * (unused) SGL and buffer; enough for a server to accept. */
static void conn_data(unsigned char *b)
{
	memset(b, 0, 40);
	b[0] = 1;
	b[1] = 2;
	b[3] = 16;   /* credits 16, big-endian */
	b[23] = 2;   /* target SGL: 2 entries */
	b[38] = 0x10; /* data buffer 4096 bytes */
}

static void c_accept_parallel(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id = NULL;
	struct rdma_cm_event *e;
	struct rdma_conn_param p = { 0 };
	struct ibv_qp_init_attr qa = { 0 };
	struct sockaddr_in sin;
	unsigned char pd[40];
	struct acc a;
	pthread_t t;
	int l, cli;

	l = listener(7460);
	if (!ch || l < 0 || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP)) {
		fail("setup failed");
		return;
	}
	/* a raw client that sends its request and then stops: it never reads
	 * the reply, so its side never completes the handshake */
	sin_of(&sin, 7460);
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 2000) || rdma_get_cm_event(ch, &e)) {
		fail("resolve_addr failed");
		return;
	}
	rdma_ack_cm_event(e);
	if (rdma_resolve_route(id, 2000) || rdma_get_cm_event(ch, &e)) {
		fail("resolve_route failed");
		return;
	}
	rdma_ack_cm_event(e);
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qa.qp_type = IBV_QPT_RC;
	if (rdma_create_qp(id, NULL, &qa)) {
		fail("create_qp failed");
		return;
	}
	conn_data(pd);
	p.private_data = pd;
	p.private_data_len = sizeof pd;
	p.responder_resources = p.initiator_depth = 1;
	p.retry_count = p.rnr_retry_count = 7;
	if (rdma_connect(id, &p)) {
		fail("raw connect failed");
		return;
	}
	usleep(300000);
	/* a good client now: raccept must hand it over */
	a.l = l;
	a.fd = -1;
	pthread_create(&t, NULL, accept_one, &a);
	double t0 = now_ms();
	cli = connect_to(7460);
	pthread_join(t, NULL);
	if (cli < 0 || a.fd < 0)
		fail("the second client was not accepted (connect errno %d)", errno);
	else if (rsend(cli, "ok", 2, 0) != 2 || rrecv(a.fd, pd, 2, MSG_WAITALL) != 2)
		fail("no data over the second connection");
	printf("# second client accepted after %.0f ms while the first is stuck\n", now_ms() - t0);
	rclose(cli);
	rclose(a.fd);
	rclose(l);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

/* ---- high-fd ---- */

static void c_high_fd(void)
{
	struct rlimit rl = { 70000, 70000 };
	int l, srv, cli, n = 0, lo;
	char b[16];

	if (setrlimit(RLIMIT_NOFILE, &rl)) {
		fail("cannot raise RLIMIT_NOFILE to 70000 (errno %d)", errno);
		return;
	}
	static unsigned char mine[65600];
	lo = open("/dev/null", O_RDONLY);
	/* use up every descriptor below 65600 */
	for (int fd = lo + 1; fd < 65600; fd++)
		if (fcntl(fd, F_GETFD) < 0 && dup2(lo, fd) == fd)
			mine[fd] = 1, n++;
	if (pair(7480, &l, &srv, &cli)) {
		fail("no connection with descriptors above 65535 (errno %d)", errno);
		return;
	}
	if (cli < 65536 || srv < 65536 || l < 65536)
		fail("descriptors %d/%d/%d not above 65535", l, srv, cli);
	if (rsend(cli, "high", 4, 0) != 4 || rrecv(srv, b, 4, MSG_WAITALL) != 4 || memcmp(b, "high", 4))
		fail("no data over descriptors above 65535");
	printf("# listener %d, server %d, client %d\n", l, srv, cli);
	rclose(cli);
	rclose(srv);
	rclose(l);
	for (int fd = lo + 1; fd < 65600; fd++)
		if (mine[fd])
			close(fd);
	(void)n;
}

/* ---- credits-away, busy-away ---- */

/* Voluntary context switches of this process's threads but the calling one
 * (each wake-up of a thread that sleeps costs one). */
static long other_switches(void)
{
	char path[96], line[128];
	long sum = 0;
	int me = gettid();
	DIR *dir;
	struct dirent *e;

	snprintf(path, sizeof path, "/proc/%d/task", getpid());
	if (!(dir = opendir(path)))
		return -1;
	while ((e = readdir(dir))) {
		int tid = atoi(e->d_name);
		FILE *f;

		if (tid <= 0 || tid == me)
			continue;
		snprintf(path, sizeof path, "/proc/%d/task/%d/status", getpid(), tid);
		if (!(f = fopen(path, "r")))
			continue;
		while (fgets(line, sizeof line, f))
			if (!strncmp(line, "voluntary_ctxt_switches:", 24))
				sum += atol(line + 24);
		fclose(f);
	}
	closedir(dir);
	return sum;
}

/* The sender uses all its credits (one-byte messages, one per receive of
 * the receiver's queue); with `busy`, the receiver then keeps calling in
 * for 1.2 s (non-blocking peeks) and the process's other threads must not
 * wake in its last second; the receiver takes the data in one rrecv (a
 * credit update is then due and nothing is left to read) and makes no call
 * after: the sender must still be able to send a whole queue's worth more. */
static void credits_case(int port, int busy)
{
	int l, srv, cli, rq = 0, more = 0;
	socklen_t len = sizeof rq;
	static char b[4096];
	double last;
	ssize_t got;

	if (pair(port, &l, &srv, &cli)) {
		fail("no connection (errno %d)", errno);
		return;
	}
	if (rgetsockopt(srv, SOL_RDMA, RDMA_RQSIZE, &rq, &len) || rq < 4 || rq > (int)sizeof b) {
		fail("receive queue size %d (errno %d)", rq, errno);
		return;
	}
	/* the sender's whole allowance: one message per receive of srv's queue */
	for (int i = 0; i < rq; i++)
		if (rsend(cli, "c", 1, 0) != 1) {
			fail("send %d of the first %d failed (errno %d)", i, rq, errno);
			return;
		}
	usleep(300000);
	if (busy) {
		/* keep calling in: 200 ms, then a second counted */
		double t0 = now_ms();
		long sw0 = -1, sw1;
		int peeks = 0;

		while (now_ms() - t0 < 1200) {
			if (sw0 < 0 && now_ms() - t0 >= 200)
				sw0 = other_switches();
			if (rrecv(srv, b, 1, MSG_PEEK | MSG_DONTWAIT) != 1) {
				fail("a peek found no data (errno %d)", errno);
				return;
			}
			peeks++;
		}
		sw1 = other_switches();
		printf("# %d peeks in 1.2 s; the other threads woke %ld times in the last second\n", peeks, sw1 - sw0);
		if (sw0 < 0 || sw1 < 0)
			fail("the threads' switches could not be read");
		else if (sw1 - sw0 >= 16)
			fail("the other threads woke %ld times in a second while the application kept calling in",
			     sw1 - sw0);
	}
	/* one receive takes them all: a credit update is due, nothing is left */
	got = rrecv(srv, b, rq, 0);
	if (got != rq) {
		fail("one rrecv took %zd of the %d bytes sent before (errno %d)", got, rq, errno);
		return;
	}
	/* srv makes no call from here on: the sender can send only once that
	 * update reaches it (then a whole queue's worth) */
	last = now_ms();
	while (now_ms() - last < 1000 && more < 2 * rq) {
		ssize_t r = rsend(cli, "c", 1, MSG_DONTWAIT);

		if (r == 1) {
			more++;
			last = now_ms();
		} else if (r < 0 && errno == EAGAIN) {
			usleep(1000);
		} else {
			fail("send after the first %d: %zd (errno %d)", rq, r, errno);
			return;
		}
	}
	printf("# receive queue %d: %d more sent after the%s receiver took the first %d and stayed away\n", rq, more,
	       busy ? " busy" : "", rq);
	if (more < rq)
		fail("only %d more messages could be sent (the receiver's queue is %d): its credit update did not come",
		     more, rq);
	if (more > rq)
		fail("%d more messages could be sent: more than the receiver's queue of %d", more, rq);
	rclose(cli);
	rclose(srv);
	rclose(l);
}

static void c_credits_away(void)
{
	credits_case(7490, 0);
}

static void c_busy_away(void)
{
	credits_case(7495, 1);
}

/* ---- blocked-away ---- */

struct blocked {
	int cli;
	long woke;
	int err;
};

/* Counts the wake-ups of the process's threads but its own in one second of
 * the main thread's blocking receive, then sends what ends that receive. */
static void *blocked_peer(void *arg)
{
	struct blocked *b = arg;
	long sw0, sw1;

	usleep(300000);
	sw0 = other_switches();
	usleep(1000000);
	sw1 = other_switches();
	b->woke = sw0 < 0 || sw1 < 0 ? -1 : sw1 - sw0;
	if (rsend(b->cli, "w", 1, 0) != 1)
		b->err = errno ? errno : -1;
	return NULL;
}

/* A call ends on the socket (the engine starts its looks for the hand-off)
 * and the next one is a blocking receive that waits 1.3 s: inside it the
 * thread looks after the socket itself, and the other threads of the
 * process (the progress engine) wake fewer than 16 times in a second of it
 * (looks every 16 ms while the call lasts would be 62; the main thread's
 * own wake-ups count too). The receive then gets the peer's byte. */
static void c_blocked_away(void)
{
	int l, srv, cli;
	struct blocked b = { 0 };
	pthread_t t;
	char c = 0;
	ssize_t got;

	if (pair(7470, &l, &srv, &cli)) {
		fail("no connection (errno %d)", errno);
		return;
	}
	b.cli = cli;
	if (rsend(srv, "h", 1, 0) != 1) {
		fail("send before the blocking receive failed (errno %d)", errno);
		return;
	}
	if (pthread_create(&t, NULL, blocked_peer, &b)) {
		fail("no thread");
		return;
	}
	got = rrecv(srv, &c, 1, 0);
	pthread_join(t, NULL);
	printf("# the other threads woke %ld times in a second of the blocking receive\n", b.woke);
	if (got != 1 || c != 'w')
		fail("the blocking receive returned %zd ('%c', errno %d), not the peer's byte", got, c ? c : '?', errno);
	if (b.err)
		fail("the peer's send failed (errno %d)", b.err);
	if (b.woke < 0)
		fail("the threads' switches could not be read");
	else if (b.woke >= 16)
		fail("the other threads woke %ld times in a second while the application waited in a blocking receive",
		     b.woke);
	rclose(cli);
	rclose(srv);
	rclose(l);
}

/* ---- cycles ---- */

#define THREADS 8
static int CYCLES = 1000;

static int cyc_port = 7500, cyc_fail;
static pthread_mutex_t cyc_mut = PTHREAD_MUTEX_INITIALIZER;

static volatile int clients_done;

static void *server_loop(void *arg)
{
	int l = *(int *)arg;
	char b[1024];

	for (int i = 0; i < CYCLES; i++) {
		struct pollfd p = { .fd = l, .events = POLLIN };
		while (!clients_done && rpoll(&p, 1, 500) == 0)
			;
		if (!(p.revents & POLLIN))
			break; /* the clients are done: no more connections */
		int fd = raccept(l, NULL, NULL);
		if (fd < 0) {
			pthread_mutex_lock(&cyc_mut);
			cyc_fail++;
			pthread_mutex_unlock(&cyc_mut);
			continue;
		}
		if (rrecv(fd, b, sizeof b, MSG_WAITALL) != sizeof b || rsend(fd, b, sizeof b, 0) != sizeof b) {
			pthread_mutex_lock(&cyc_mut);
			cyc_fail++;
			pthread_mutex_unlock(&cyc_mut);
		}
		rclose(fd);
		if (getenv("RS_CYCLES_VERBOSE") && i % 50 == 0)
			printf("# server: %d\n", i);
	}
	return NULL;
}

static void *client_loop(void *arg)
{
	char b[1024], c[1024];
	(void)arg;

	memset(b, 'r', sizeof b);
	for (int i = 0; i < CYCLES / THREADS; i++) {
		int fd = connect_to(cyc_port), e = errno;
		const char *stage = fd < 0 ? "connect" : NULL;
		ssize_t n = 0;
		if (!stage && rsend(fd, b, sizeof b, 0) != sizeof b)
			stage = "send", e = errno;
		if (!stage && (n = rrecv(fd, c, sizeof c, MSG_WAITALL)) != sizeof c)
			stage = "recv", e = errno;
		if (!stage && memcmp(b, c, sizeof b))
			stage = "compare";
		if (fd >= 0)
			rclose(fd);
		if (stage) {
			pthread_mutex_lock(&cyc_mut);
			if (cyc_fail++ < 5)
				printf("# cycle failed at %s: errno %d (%s), received %zd\n", stage, e, strerror(e), n);
			if (cyc_fail == 1 && getenv("RS_CYCLES_VERBOSE") &&
			    system("ls -l /proc/$PPID/fd/ | awk '{ sub(/:.*/, \"\", $NF); print $NF }' | sort | uniq -c")) {
			}
			pthread_mutex_unlock(&cyc_mut);
		}
	}
	return NULL;
}

static void c_cycles(void)
{
	pthread_t s, c[THREADS];
	int l, fds0, fds1, ids = -1;

	if (getenv("RS_CYCLES"))
		CYCLES = atoi(getenv("RS_CYCLES")) / THREADS * THREADS;
	double t = now_ms();

	/* a warm-up connection first, so the library's own descriptors (the
	 * device context) exist before counting */
	int wl, ws, wc;
	if (pair(cyc_port - 1, &wl, &ws, &wc)) {
		fail("warm-up connection failed");
		return;
	}
	rclose(wc);
	rclose(ws);
	rclose(wl);
	fds0 = count_fds();
	l = listener(cyc_port);
	if (l < 0) {
		fail("no listener");
		return;
	}
	pthread_create(&s, NULL, server_loop, &l);
	for (int i = 0; i < THREADS; i++)
		pthread_create(&c[i], NULL, client_loop, NULL);
	for (int i = 0; i < THREADS; i++)
		pthread_join(c[i], NULL);
	clients_done = 1;
	pthread_join(s, NULL);
	rclose(l);
	fds1 = count_fds();
	for (int i = 0; i < 50 && (ids = count_cm_ids()) > 0; i++)
		usleep(100000);
	printf("# %d cycles from %d threads in %.1f s\n", CYCLES, THREADS, (now_ms() - t) / 1000);
	if (cyc_fail)
		fail("%d of %d cycles failed", cyc_fail, CYCLES);
	if (fds1 > fds0) {
		fail("descriptors: %d before, %d after", fds0, fds1);
		if (getenv("RS_CYCLES_VERBOSE"))
			if (system("ls -l /proc/$PPID/fd/ 2>&1 | tail -n +2; grep -i threads /proc/$PPID/status")) {}
	}
	if (ids != 0)
		fail("%d CM ids left", ids);
}

static const struct rscase cases[] = {
	{ "plain-poll", c_plain_poll, 60 },	    { "close-bounded", c_close_bounded, 60 },
	{ "unaccepted-freed", c_unaccepted_freed, 60 }, { "accept-parallel", c_accept_parallel, 60 },
	{ "high-fd", c_high_fd, 60 },		    { "repoll-away", c_repoll_away, 60 },
	{ "credits-away", c_credits_away, 60 },	    { "busy-away", c_busy_away, 60 },
	{ "blocked-away", c_blocked_away, 60 },	    { "cycles", c_cycles, 240 },
};

int main(int argc, char **argv)
{
	return run_cases(cases, sizeof cases / sizeof cases[0], argc, argv);
}
