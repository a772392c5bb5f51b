/* server_faults.c — faults a server meets, one case per run, with whichever
 * librdmacm LD_LIBRARY_PATH picks (tests.d/71-server-faults.sh runs each
 * case with our library and with Debian's v44 and judges ours):
 *
 *   eintr          a signal (SIGUSR1) without SA_RESTART interrupts a blocking
 *                  rdma_get_cm_event on an empty channel: what it returns
 *                  and errno; then the channel still delivers an event.
 *   eintr-restart  the same with SA_RESTART: the call stays blocked through
 *                  the signal and returns the event a thread causes later.
 *   emfile-cold    every descriptor in use before the library's first call:
 *                  rdma_create_event_channel, rdma_create_id without a
 *                  channel fail (EMFILE, or ENODEV: the devices could not
 *                  be opened, as Debian's v44 reports it); then,
 *                  descriptors freed, both work.
 *   emfile-warm    the same after the library has been used.
 *   fork           a process holding a bound, resolved id forks: the child
 *                  creates its own channel and id and resolves (it may use
 *                  the library), and its calls on the parent's id end
 *                  (no hang); the parent then resolves the route of its
 *                  id and gets its event.
 *   netdev         d0 (rxe0's netdev) down: rdma_resolve_addr to rxe0's
 *                  address; up again: it resolves. A connected pair over
 *                  rxe0 while d0 goes down and up: the events each side
 *                  gets within 3 s, then disconnect and destroy end.
 *   hotplug        a second soft-RoCE device (rxe9 on dummy d9,
 *                  198.51.100.1) added after the library listed its
 *                  devices: rdma_get_devices counts it and an id binds to
 *                  its address with id->verbs on rxe9.
 *
 * Output: lines "# ..." (details) and "result NAME: TEXT" (what the case
 * observed; the script compares them between libraries) and last
 * "verdict NAME: ok" or "verdict NAME: bad REASON" (the case's own checks,
 * the same for every library). Every case runs under alarm(60).
 * Build: abi-tests/fault/build.sh. Needs root and the bed's network
 * (abi-tests/vm/net-setup.sh).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../rsdiff/rscase.h"

static const char *cname;
static void result(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void result(const char *fmt, ...)
{
	va_list ap;

	printf("result %s: ", cname);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static const char *errname(int e)
{
	static char buf[32];

	switch (e) {
	case 0: return "0";
	case EINTR: return "EINTR";
	case EMFILE: return "EMFILE";
	case ENFILE: return "ENFILE";
	case ENODEV: return "ENODEV";
	case EINVAL: return "EINVAL";
	case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
	case ENETUNREACH: return "ENETUNREACH";
	case EHOSTUNREACH: return "EHOSTUNREACH";
	case ENOMEM: return "ENOMEM";
	case ENODATA: return "ENODATA";
	case ETIMEDOUT: return "ETIMEDOUT";
	case EAGAIN: return "EAGAIN";
	case EBADF: return "EBADF";
	case ENOENT: return "ENOENT";
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	case ENXIO: return "ENXIO";
	}
	snprintf(buf, sizeof buf, "errno %d", e);
	return buf;
}

static void sin_of(struct sockaddr_in *s, const char *ip, int port)
{
	memset(s, 0, sizeof *s);
	s->sin_family = AF_INET;
	s->sin_port = htons(port);
	inet_pton(AF_INET, ip, &s->sin_addr);
}

/* The next event on ch within ms (the channel made non-blocking for the
 * wait): its type, or -1 (none; errno ETIMEDOUT) / -2 (an error). The
 * event is acked; its status goes to *status. */
static int next_event(struct rdma_event_channel *ch, int ms, int *status, struct rdma_cm_id **id)
{
	struct rdma_cm_event *ev;
	int fl = fcntl(ch->fd, F_GETFL), type;

	fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK);
	for (int waited = 0;; waited += 10) {
		if (rdma_get_cm_event(ch, &ev) == 0)
			break;
		if (errno != EAGAIN) {
			fcntl(ch->fd, F_SETFL, fl);
			return -2;
		}
		if (waited >= ms) {
			fcntl(ch->fd, F_SETFL, fl);
			errno = ETIMEDOUT;
			return -1;
		}
		usleep(10000);
	}
	fcntl(ch->fd, F_SETFL, fl);
	type = ev->event;
	if (status)
		*status = ev->status;
	if (id)
		*id = ev->id;
	rdma_ack_cm_event(ev);
	return type;
}

static const char *evname(int t)
{
	return t == -1 ? "none" : t == -2 ? "error" : rdma_event_str(t);
}

/* ---- eintr ---- */

/* SIGUSR1 (SIGALRM is the case's hang guard), sent to the main thread
 * by a thread after a delay. */
static volatile sig_atomic_t signals;
static void on_signal(int s)
{
	(void)s;
	signals++;
}

struct kicker {
	pthread_t target;
	int ms;
};

static void *kick(void *arg)
{
	struct kicker *k = arg;

	usleep(k->ms * 1000);
	pthread_kill(k->target, SIGUSR1);
	return NULL;
}

static void arm_signal(int restart, struct kicker *k, pthread_t *t)
{
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = restart ? SA_RESTART : 0 };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	k->target = pthread_self();
	k->ms = 500;
	pthread_create(t, NULL, kick, k);
}

struct later {
	struct rdma_cm_id *id;
	int ms;
};

static void *resolve_later(void *arg)
{
	struct later *l = arg;
	struct sockaddr_in dst;

	usleep(l->ms * 1000);
	sin_of(&dst, "192.0.2.1", 0);
	if (rdma_resolve_addr(l->id, NULL, (struct sockaddr *)&dst, 2000))
		printf("# resolve_later: rdma_resolve_addr failed: %s\n", errname(errno));
	return NULL;
}

static void c_eintr(int restart)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev = NULL;
	pthread_t t, kt;
	struct kicker k;
	struct later l;
	int ret, e;

	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP)) {
		fail("setup: %s", errname(errno));
		return;
	}
	l.id = id;
	l.ms = restart ? 1500 : 0;
	if (restart)
		pthread_create(&t, NULL, resolve_later, &l);
	signals = 0;
	arm_signal(restart, &k, &kt);
	errno = 0;
	ret = rdma_get_cm_event(ch, &ev);
	e = errno;
	pthread_join(kt, NULL);
	if (ret == 0) {
		result("returned an event (%s) after %d signal(s)", rdma_event_str(ev->event), (int)signals);
		if (!restart)
			fail("no signal interruption seen");
		else if (ev->event != RDMA_CM_EVENT_ADDR_RESOLVED)
			fail("unexpected event %s", rdma_event_str(ev->event));
		rdma_ack_cm_event(ev);
	} else {
		result("returned %d, %s, after %d signal(s)", ret, errname(e), (int)signals);
		if (restart)
			fail("SA_RESTART: the call returned %d (%s)", ret, errname(e));
		else if (e != EINTR)
			fail("interrupted: %s instead of EINTR", errname(e));
	}
	if (restart) {
		pthread_join(t, NULL);
	} else {
		/* the channel still works */
		pthread_create(&t, NULL, resolve_later, &l);
		pthread_join(t, NULL);
		ret = next_event(ch, 5000, NULL, NULL);
		result("afterwards: %s", evname(ret));
		if (ret != RDMA_CM_EVENT_ADDR_RESOLVED)
			fail("the channel delivered %s after the interruption", evname(ret));
	}
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

/* ---- emfile ---- */

static int fill_fds(int *fds, int max)
{
	int n = 0, fd;

	while (n < max && (fd = open("/dev/null", O_RDONLY)) >= 0)
		fds[n++] = fd;
	return n;
}

static void c_emfile(int warm)
{
	static int fds[1100];
	struct rlimit rl = { 1024, 1024 };
	struct rdma_event_channel *ch = NULL;
	struct rdma_cm_id *id = NULL;
	int n, e1, e2;

	setrlimit(RLIMIT_NOFILE, &rl);
	if (warm) {
		struct rdma_event_channel *c = rdma_create_event_channel();
		struct rdma_cm_id *i;
		struct sockaddr_in a;

		if (!c || rdma_create_id(c, &i, NULL, RDMA_PS_TCP)) {
			fail("warm-up: %s", errname(errno));
			return;
		}
		sin_of(&a, "192.0.2.1", 0);
		if (rdma_bind_addr(i, (struct sockaddr *)&a))
			fail("warm-up bind: %s", errname(errno));
		rdma_destroy_id(i);
		rdma_destroy_event_channel(c);
	}
	n = fill_fds(fds, 1100);
	errno = 0;
	ch = rdma_create_event_channel();
	e1 = errno;
	errno = 0;
	int r2 = rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP);
	e2 = errno;
	result("descriptors full: rdma_create_event_channel %s (%s), rdma_create_id without a channel %d (%s)",
	       ch ? "ok" : "NULL", ch ? "-" : errname(e1), r2, r2 ? errname(e2) : "-");
	if (ch)
		fail("rdma_create_event_channel succeeded with every descriptor in use");
	else if (e1 != EMFILE && e1 != ENFILE && !(warm == 0 && e1 == ENODEV))
		fail("rdma_create_event_channel: %s", errname(e1));
	if (!r2) {
		fail("rdma_create_id without a channel succeeded with every descriptor in use");
		rdma_destroy_id(id);
	}
	if (ch)
		rdma_destroy_event_channel(ch);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	ch = rdma_create_event_channel();
	int r3 = rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP);
	result("descriptors freed: rdma_create_event_channel %s, rdma_create_id without a channel %d",
	       ch ? "ok" : errname(errno), r3);
	if (!ch || r3)
		fail("not usable after the descriptors were freed");
	if (!r3) {
		struct sockaddr_in dst;

		sin_of(&dst, "192.0.2.1", 0);
		/* a synchronous id: the call blocks until resolved */
		if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000))
			fail("sync rdma_resolve_addr afterwards: %s", errname(errno));
		rdma_destroy_id(id);
	}
	if (ch)
		rdma_destroy_event_channel(ch);
}

/* ---- fork ---- */

static void c_fork(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;
	struct sockaddr_in dst;
	int st, t;
	pid_t pid;

	sin_of(&dst, "192.0.2.1", 0);
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000)) {
		fail("setup: %s", errname(errno));
		return;
	}
	t = next_event(ch, 5000, NULL, NULL);
	if (t != RDMA_CM_EVENT_ADDR_RESOLVED) {
		fail("setup: %s", evname(t));
		return;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		struct rdma_event_channel *c2;
		struct rdma_cm_id *i2;
		int r;

		alarm(20);
		c2 = rdma_create_event_channel();
		r = c2 ? rdma_create_id(c2, &i2, NULL, RDMA_PS_TCP) : -1;
		if (!r)
			r = rdma_resolve_addr(i2, NULL, (struct sockaddr *)&dst, 2000);
		if (!r) {
			t = next_event(c2, 5000, NULL, NULL);
			printf("result fork: child, its own id: %s\n", evname(t));
		} else {
			printf("result fork: child, its own id: %s\n", errname(errno));
		}
		/* a call on the parent's id: it must end */
		errno = 0;
		r = rdma_resolve_route(id, 2000);
		printf("# child, rdma_resolve_route on the parent's id: %d (%s)\n", r, r ? errname(errno) : "-");
		fflush(stdout);
		_exit(0);
	}
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st))
		fail("the child %s", WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM ? "hung" : "crashed");
	/* The parent: the child may have taken its route request (the kernel
	 * id is shared); resolve again if no event comes. */
	int r = rdma_resolve_route(id, 2000);
	int e = errno;
	t = r ? -2 : next_event(ch, 5000, NULL, NULL);
	result("parent after the child: rdma_resolve_route %d (%s), event %s", r, r ? errname(e) : "-", evname(t));
	/* what counts: the parent can still make and use ids */
	struct rdma_cm_id *i3;

	if (rdma_create_id(ch, &i3, NULL, RDMA_PS_TCP) || rdma_resolve_addr(i3, NULL, (struct sockaddr *)&dst, 2000)) {
		fail("parent: a new id: %s", errname(errno));
	} else {
		struct rdma_cm_id *who = NULL;

		do
			t = next_event(ch, 5000, NULL, &who);
		while (t >= 0 && who != i3);
		result("parent, a new id: %s", evname(t));
		if (t != RDMA_CM_EVENT_ADDR_RESOLVED)
			fail("parent: a new id after the fork: %s", evname(t));
		rdma_destroy_id(i3);
	}
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

/* ---- netdev ---- */

static int sh(const char *cmd)
{
	int r = system(cmd);

	if (r)
		printf("# '%s' exit %d\n", cmd, r);
	return r;
}

static void wait_active(const char *dev)
{
	char cmd[160];

	snprintf(cmd, sizeof cmd,
		 "for i in $(seq 100); do rdma link show %s/1 2>/dev/null | grep -q 'state ACTIVE' && exit 0; "
		 "sleep 0.1; done; exit 1",
		 dev);
	if (sh(cmd))
		fail("%s did not come back ACTIVE", dev);
}

static const char *resolve_once(struct rdma_event_channel *ch, const char *ip, int *status)
{
	static char buf[96];
	struct rdma_cm_id *id;
	struct sockaddr_in dst;
	int t;

	sin_of(&dst, ip, 0);
	*status = 0;
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		return "create_id failed";
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000)) {
		snprintf(buf, sizeof buf, "rdma_resolve_addr: %s", errname(errno));
		*status = -1;
	} else {
		t = next_event(ch, 5000, status, NULL);
		snprintf(buf, sizeof buf, "%s%s%s", evname(t), *status ? " status " : "",
			 *status ? errname(-*status) : "");
		if (t != RDMA_CM_EVENT_ADDR_RESOLVED && !*status)
			*status = -1;
	}
	rdma_destroy_id(id);
	return buf;
}

struct side {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
};

static int connect_pair(struct side *srv, struct side *cli, struct rdma_cm_id **conn)
{
	struct rdma_cm_id *lid;
	struct sockaddr_in a;
	struct ibv_qp_init_attr qa = { .cap = { 4, 4, 1, 1, 0 }, .qp_type = IBV_QPT_RC };
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1, .retry_count = 1 };
	int t;

	srv->ch = rdma_create_event_channel();
	cli->ch = rdma_create_event_channel();
	sin_of(&a, "192.0.2.1", 7471);
	if (!srv->ch || !cli->ch || rdma_create_id(srv->ch, &lid, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(lid, (struct sockaddr *)&a) || rdma_listen(lid, 4))
		return -1;
	srv->id = lid;
	if (rdma_create_id(cli->ch, &cli->id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(cli->id, NULL, (struct sockaddr *)&a, 2000) ||
	    next_event(cli->ch, 5000, NULL, NULL) != RDMA_CM_EVENT_ADDR_RESOLVED || rdma_resolve_route(cli->id, 2000) ||
	    next_event(cli->ch, 5000, NULL, NULL) != RDMA_CM_EVENT_ROUTE_RESOLVED ||
	    rdma_create_qp(cli->id, NULL, &qa) || rdma_connect(cli->id, &cp))
		return -2;
	if (next_event(srv->ch, 5000, NULL, conn) != RDMA_CM_EVENT_CONNECT_REQUEST || rdma_create_qp(*conn, NULL, &qa) ||
	    rdma_accept(*conn, &cp))
		return -3;
	t = next_event(cli->ch, 5000, NULL, NULL);
	if (t != RDMA_CM_EVENT_ESTABLISHED)
		return -4;
	t = next_event(srv->ch, 5000, NULL, NULL);
	return t == RDMA_CM_EVENT_ESTABLISHED ? 0 : -5;
}

static void c_netdev(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct side srv = { 0 }, cli = { 0 };
	struct rdma_cm_id *conn = NULL;
	const char *r;
	int st, t;
	char evs[2][256];

	if (!ch) {
		fail("setup");
		return;
	}
	r = resolve_once(ch, "192.0.2.1", &st);
	result("d0 up: %s", r);
	if (st)
		fail("resolve with d0 up: %s", r);
	sh("ip link set d0 down");
	r = resolve_once(ch, "192.0.2.1", &st);
	result("d0 down: %s", r);
	sh("ip link set d0 up");
	wait_active("rxe0");
	r = resolve_once(ch, "192.0.2.1", &st);
	result("d0 up again: %s", r);
	if (st)
		fail("resolve after d0 came back: %s", r);
	rdma_destroy_event_channel(ch);

	st = connect_pair(&srv, &cli, &conn);
	if (st) {
		fail("connecting over rxe0: step %d (%s)", -st, errname(errno));
		return;
	}
	sh("ip link set d0 down; sleep 1; ip link set d0 up");
	wait_active("rxe0");
	for (int s = 0; s < 2; s++) {
		struct rdma_event_channel *c = s ? cli.ch : srv.ch;
		int n = 0;

		evs[s][0] = 0;
		while ((t = next_event(c, n ? 500 : 3000, NULL, NULL)) >= 0 && n < 6) {
			n++;
			strncat(evs[s], rdma_event_str(t), sizeof evs[s] - strlen(evs[s]) - 2);
			strcat(evs[s], " ");
		}
	}
	result("connected, d0 down and up: server events [%s], client events [%s]", evs[0], evs[1]);
	rdma_disconnect(cli.id);
	rdma_disconnect(conn);
	rdma_destroy_qp(cli.id);
	rdma_destroy_qp(conn);
	rdma_destroy_id(cli.id);
	rdma_destroy_id(conn);
	rdma_destroy_id(srv.id);
	rdma_destroy_event_channel(cli.ch);
	rdma_destroy_event_channel(srv.ch);
	/* and a fresh connection works */
	memset(&srv, 0, sizeof srv);
	memset(&cli, 0, sizeof cli);
	st = connect_pair(&srv, &cli, &conn);
	result("a new connection afterwards: %s", st ? "fails" : "ESTABLISHED");
	if (st)
		fail("a new connection after d0 came back: step %d", -st);
	else {
		rdma_disconnect(cli.id);
		rdma_destroy_qp(cli.id);
		rdma_destroy_qp(conn);
		rdma_destroy_id(cli.id);
		rdma_destroy_id(conn);
		rdma_destroy_id(srv.id);
	}
}

/* ---- hotplug ---- */

static void c_hotplug(void)
{
	struct ibv_context **list;
	struct rdma_cm_id *id;
	struct sockaddr_in a;
	int n1 = 0, n2 = 0;

	list = rdma_get_devices(&n1);
	if (list)
		rdma_free_devices(list);
	if (sh("ip link add d9 type dummy && ip addr add 198.51.100.1/24 dev d9 && ip link set d9 up && "
	       "rdma link add rxe9 type rxe netdev d9")) {
		fail("could not add rxe9");
		return;
	}
	wait_active("rxe9");
	list = rdma_get_devices(&n2);
	if (list)
		rdma_free_devices(list);
	result("rdma_get_devices: %d before, %d after rxe9 was added", n1, n2);
	if (n2 != n1 + 1)
		fail("rdma_get_devices went from %d to %d", n1, n2);
	sin_of(&a, "198.51.100.1", 0);
	if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) || rdma_bind_addr(id, (struct sockaddr *)&a)) {
		result("bind to rxe9's address: %s", errname(errno));
		fail("bind to the new device's address: %s", errname(errno));
	} else {
		const char *dev = id->verbs ? ibv_get_device_name(id->verbs->device) : "(no device)";

		result("bind to rxe9's address: device %s", dev);
		if (strcmp(dev, "rxe9"))
			fail("bound to %s, not rxe9", dev);
		rdma_destroy_id(id);
	}
	/* rxe9 is deleted by the script once this process is gone: deleting
	 * it here would wait for this process to close the device the
	 * library holds open */
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 2) {
		fprintf(stderr, "usage: %s eintr|eintr-restart|emfile-cold|emfile-warm|fork|netdev|hotplug\n", argv[0]);
		return 2;
	}
	cname = argv[1];
	alarm(60);
	if (!strcmp(cname, "eintr"))
		c_eintr(0);
	else if (!strcmp(cname, "eintr-restart"))
		c_eintr(1);
	else if (!strcmp(cname, "emfile-cold"))
		c_emfile(0);
	else if (!strcmp(cname, "emfile-warm"))
		c_emfile(1);
	else if (!strcmp(cname, "fork"))
		c_fork();
	else if (!strcmp(cname, "netdev"))
		c_netdev();
	else if (!strcmp(cname, "hotplug"))
		c_hotplug();
	else {
		fprintf(stderr, "unknown case %s\n", cname);
		return 2;
	}
	alarm(0);
	if (why[0])
		printf("verdict %s: bad %s\n", cname, why);
	else
		printf("verdict %s: ok\n", cname);
	return 0;
}
