/*
 * fault_walk.c — the allocation-failure walk: runs one scenario of
 * librdmacm calls again and again, the k-th allocation failing in run k
 * (k = 1, 2, ...; failmalloc.so, preloaded, does the failing), until a run
 * ends without reaching its failure point. Every run must end cleanly: the
 * scenario's calls either all succeed or one fails with an error (an errno,
 * an EAI code, an error event) and the scenario tears down what it made.
 * After the failing run, the same process runs the scenario once more with
 * nothing failing: it must succeed (the library is still usable).
 *
 *   fault_walk [OPTIONS] SCENARIO    the walk; prints the anomalies, the
 *                                    errors seen and one summary line
 *   fault_walk --count SCENARIO      one run, nothing failing: its allocations
 *   fault_walk --list                the scenarios
 *   fault_walk --self-test           checks of the shim itself
 * OPTIONS:
 *   --label L     the library's name in the summary line (default: the file
 *                 that rdma_create_event_channel was bound to)
 *   --from K      start at point K (default 1; to look at a few points)
 *   --max N       stop after point N (default 100000)
 *   --dense D     walk every point up to D, then every STEP-th (default:
 *   --step STEP   every point; STEP 1)
 *   --samples N   after D, a step large enough that about N more points are
 *                 walked (the count comes from the run with nothing failing;
 *                 never smaller than STEP)
 *   --timeout S   a run that takes more than S seconds is killed: a hang
 *                 (default 30)
 *   --wait MS     how long a scenario waits for an event, a connection or a
 *                 datagram before it calls the run stalled (default 5000)
 *   --ip ADDR     the local RDMA address (default 192.0.2.1, the bed's rxe0)
 *
 * Each run is a child forked before the library is touched (the driver does
 * not call it), so every run starts from the library's initial state; the
 * child arms the shim, runs the scenario, disarms it, runs the scenario
 * again and exits. The run's outcome and the step it was in live in a
 * MAP_SHARED page, read after the child ended however it ended.
 *
 * A run is one of:
 *   ok        every call succeeded (the failed allocation was absorbed, e.g.
 *             by libibverbs or a retry);
 *   error     a call failed and the scenario cleaned up; the error is
 *             tallied by step and errno/EAI code/event (printed at the end);
 *   abort     the process died of a signal (the step and where the failed
 *             allocation was made are printed);
 *   hang      killed after --timeout, or a scenario's wait for something
 *             that its calls had promised (an event after a successful
 *             resolve/connect, the peer's data) ran out (--wait);
 *   lost      (rdgram) a datagram that never arrived although every call
 *             succeeded: datagram sockets may drop one under memory
 *             pressure, as UDP does (not a failure);
 * and, independently, "unusable after" when the second, unfailing run of
 * the scenario in the same process did not succeed; counted apart when the
 * allocation that failed was the library's own (the innermost frame that
 * is not glibc, the loader or libgcc is in the librdmacm under test), as
 * opposed to another library's (libibverbs, for one, never retries a
 * provider whose registration failed in its constructor).
 * Summary line:
 *   SCENARIO LABEL: P points, R runs, O ok, E errors, L lost, A aborts, H hangs, U unusable after
 *       (N after the library's own allocation failed)
 * (P: the failure points the walk found; R: the runs made, fewer than P
 * with --dense/--step). Exit 0 when A + H == 0, else 1; 2 for usage errors,
 * 3 when the shim is not preloaded.
 *
 * Scenarios (the ones that need a device use --ip):
 *   gai      rdma_getaddrinfo/rdma_freeaddrinfo: numeric active (IPv4, IPv6
 *            with UD hints), passive, a name (localhost) and a service name,
 *            a source hint, an AF_IB hint
 *   libc-gai the control: glibc's getaddrinfo alone (localhost, a service
 *            name), no librdmacm call
 *   ids      event channel, async id: bind, resolve addr and route (events),
 *            rdma_get_devices; sync id (IPv6): resolve addr and route; query
 *            of the route; destroy
 *   conn     async listener and client on two channels: QPs, connect with
 *            private data, accept, disconnect; a second client rejected
 *   ep       sync: rdma_create_ep (passive, with getaddrinfo), listen, a
 *            client thread with rdma_create_ep + QP, rdma_connect;
 *            rdma_get_request, rdma_accept, rdma_disconnect, rdma_destroy_ep
 *   mcast    UD id with a QP: join an IPv4 group, wait for the join, leave
 *   rstream  rsockets: listener, a client thread connecting, 64 KiB each
 *            way, rclose
 *   rdgram   datagram rsockets: two sockets, a datagram each way
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>
#include "fault.h"

/* ---- the shim ---- */

static struct fault_shim *(*p_shim)(void);
static void (*p_arm)(long);
static long (*p_disarm)(void);
static struct fault_shim *shim;

/* ---- one run's report, shared with the parent ---- */

enum { RUN_NONE, RUN_OK, RUN_ERR, RUN_STALL, RUN_LOST };

struct report {
	char step[64];	/* the scenario's current step (main thread) */
	char peer_step[64]; /* the peer thread's (ep, rstream) */
	int phase;	/* 0: the failing run, 1: the run after */
	int result[2];	/* RUN_* per phase */
	char err[2][160];
	long count;	/* allocations counted in the failing run */
	int fired;
	int ncrash;	/* frames of the fatal signal's handler (raw addresses) */
	void *crash[32];
};
static struct report *rep;

static int opt_wait = 5000;
static long opt_samples; /* --samples: 0, the step as given */
static __thread int is_peer;
/* waiting for a datagram: one that never comes was lost, not a hang */
static __thread int lost_ok;
static const char *opt_ip = "192.0.2.1";

static void step(const char *s)
{
	if (is_peer)
		snprintf(rep->peer_step, sizeof(rep->peer_step), "%s", s);
	else
		snprintf(rep->step, sizeof(rep->step), "%s", s);
}

/* Record the first failure of this phase; returns -1. */
static int failf(int kind, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int failf(int kind, const char *fmt, ...)
{
	va_list ap;

	if (rep->result[rep->phase] != RUN_NONE)
		return -1;
	rep->result[rep->phase] = kind;
	va_start(ap, fmt);
	vsnprintf(rep->err[rep->phase], sizeof(rep->err[0]), fmt, ap);
	va_end(ap);
	return -1;
}

static const char *ename(int e)
{
	const char *n = strerrorname_np(e);
	static __thread char b[16];

	if (n)
		return n;
	snprintf(b, sizeof(b), "%d", e);
	return b;
}

/* a failed call: "STEP: ENAME" */
static int fail_errno(void)
{
	return failf(RUN_ERR, "%s: %s", rep->step, ename(errno));
}

#define CALL(name, expr)                      \
	({                                    \
		int _r;                       \
		step(name);                   \
		errno = 0;                    \
		_r = (expr);                  \
		if (_r)                       \
			fail_errno();         \
		_r;                           \
	})

static void set_addr(struct sockaddr_storage *ss, const char *ip, int port)
{
	memset(ss, 0, sizeof(*ss));
	if (strchr(ip, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		inet_pton(AF_INET6, ip, &s6->sin6_addr);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		inet_pton(AF_INET, ip, &s4->sin_addr);
	}
}

/* ---- gai ---- */

static int gai_one(const char *what, const char *node, const char *service, struct rdma_addrinfo *hints)
{
	struct rdma_addrinfo *res = NULL;
	int r;

	step(what);
	errno = 0;
	r = rdma_getaddrinfo(node, service, hints, &res);
	if (r) {
		int e = errno;
		/* upstream returns -1 (errno) or, for some glibc failures, the EAI code */
		if (r == -1)
			return failf(RUN_ERR, "%s: ret -1 %s", what, ename(e));
		return failf(RUN_ERR, "%s: %s%s%s", what, gai_strerror(r), r == EAI_SYSTEM ? " " : "",
			     r == EAI_SYSTEM ? ename(e) : "");
	}
	if (!res)
		return failf(RUN_ERR, "%s: success without a result", what);
	rdma_freeaddrinfo(res);
	return 0;
}

static int sc_gai(void)
{
	struct rdma_addrinfo h;
	struct sockaddr_in src;

	memset(&h, 0, sizeof(h));
	h.ai_port_space = RDMA_PS_TCP;
	if (gai_one("getaddrinfo active numeric", "192.0.2.1", "7471", &h))
		return -1;
	memset(&h, 0, sizeof(h));
	h.ai_flags = RAI_PASSIVE;
	if (gai_one("getaddrinfo passive", NULL, "7471", &h))
		return -1;
	memset(&h, 0, sizeof(h));
	h.ai_family = AF_INET6;
	h.ai_qp_type = IBV_QPT_UD;
	h.ai_port_space = RDMA_PS_UDP;
	if (gai_one("getaddrinfo active IPv6 UD", "fd00::1", "7472", &h))
		return -1;
	if (gai_one("getaddrinfo name", "localhost", "7471", NULL))
		return -1;
	memset(&h, 0, sizeof(h));
	h.ai_flags = RAI_PASSIVE;
	if (gai_one("getaddrinfo passive service name", "localhost", "echo", &h))
		return -1;
	memset(&h, 0, sizeof(h));
	memset(&src, 0, sizeof(src));
	src.sin_family = AF_INET;
	inet_pton(AF_INET, "192.0.2.1", &src.sin_addr);
	h.ai_src_addr = (struct sockaddr *)&src;
	h.ai_src_len = sizeof(src);
	if (gai_one("getaddrinfo source hint", "192.0.2.2", "7471", &h))
		return -1;
	/* AF_IB: an error with every library when AF_IB is unsupported (the
	 * same error with and without a failure, so not a scenario error) */
	{
		struct rdma_addrinfo *res = NULL;
		int r;

		memset(&h, 0, sizeof(h));
		h.ai_family = AF_IB;
		step("getaddrinfo AF_IB");
		r = rdma_getaddrinfo("192.0.2.1", "7471", &h, &res);
		if (!r)
			rdma_freeaddrinfo(res);
	}
	return 0;
}

/* The control: glibc's getaddrinfo alone, for the names sc_gai resolves
 * (run with FAULT_IN_GETADDRINFO=1 to see what glibc does with its own
 * allocation failures). */
static int sc_libc_gai(void)
{
	static const char *const q[][2] = { { "localhost", "7471" }, { "localhost", "echo" } };
	struct addrinfo *res;
	size_t i;
	int r;

	for (i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
		step("getaddrinfo (glibc)");
		res = NULL;
		r = getaddrinfo(q[i][0], q[i][1], NULL, &res);
		if (r)
			return failf(RUN_ERR, "getaddrinfo %s %s: %s", q[i][0], q[i][1], gai_strerror(r));
		freeaddrinfo(res);
	}
	return 0;
}

/* ---- events ---- */

/* Wait for an event on ch; it must be `want`. The event is acked unless
 * keep is given (then *keep gets it). The child id of a CONNECT_REQUEST
 * goes to *id. */
static int wait_ev(const char *what, struct rdma_event_channel *ch, enum rdma_cm_event_type want,
		   struct rdma_cm_id **id, struct rdma_cm_event **keep)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	int r;

	step(what);
	r = poll(&pfd, 1, opt_wait);
	if (r == 0)
		return failf(RUN_STALL, "%s: no event within %d ms", what, opt_wait);
	if (r < 0)
		return fail_errno();
	errno = 0;
	if (rdma_get_cm_event(ch, &ev))
		return failf(RUN_ERR, "%s: rdma_get_cm_event: %s", what, ename(errno));
	if (ev->event != want) {
		failf(RUN_ERR, "%s: event %s status %d", what, rdma_event_str(ev->event), ev->status);
		/* a request we did not want: reject it so no peer waits */
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			struct rdma_cm_id *c = ev->id;
			rdma_ack_cm_event(ev);
			rdma_reject(c, NULL, 0);
			rdma_destroy_id(c);
			return -1;
		}
		rdma_ack_cm_event(ev);
		return -1;
	}
	if (id)
		*id = ev->id;
	if (keep)
		*keep = ev;
	else
		rdma_ack_cm_event(ev);
	return 0;
}

/* ---- ids ---- */

static int sc_ids(void)
{
	struct rdma_event_channel *ch = NULL;
	struct rdma_cm_id *id = NULL, *sid = NULL;
	struct sockaddr_storage src, dst;
	struct ibv_context **devs;
	int n, r = -1;

	step("rdma_create_event_channel");
	errno = 0;
	ch = rdma_create_event_channel();
	if (!ch)
		return fail_errno();
	if (CALL("rdma_create_id async", rdma_create_id(ch, &id, NULL, RDMA_PS_TCP)))
		goto out;
	set_addr(&src, opt_ip, 0);
	if (CALL("rdma_bind_addr", rdma_bind_addr(id, (struct sockaddr *)&src)))
		goto out;
	set_addr(&dst, opt_ip, 7999);
	if (CALL("rdma_resolve_addr async", rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000)))
		goto out;
	if (wait_ev("wait ADDR_RESOLVED", ch, RDMA_CM_EVENT_ADDR_RESOLVED, NULL, NULL))
		goto out;
	if (CALL("rdma_resolve_route async", rdma_resolve_route(id, 2000)))
		goto out;
	if (wait_ev("wait ROUTE_RESOLVED", ch, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL, NULL))
		goto out;
	step("rdma_get_devices");
	errno = 0;
	devs = rdma_get_devices(&n);
	if (!devs) {
		fail_errno();
		goto out;
	}
	rdma_free_devices(devs);
	if (CALL("rdma_create_id sync", rdma_create_id(NULL, &sid, NULL, RDMA_PS_UDP)))
		goto out;
	set_addr(&dst, strchr(opt_ip, ':') ? opt_ip : "fd00::1", 7999);
	if (CALL("rdma_resolve_addr sync", rdma_resolve_addr(sid, NULL, (struct sockaddr *)&dst, 2000)))
		goto out;
	if (CALL("rdma_resolve_route sync", rdma_resolve_route(sid, 2000)))
		goto out;
	r = 0;
out:
	step("teardown");
	if (sid && rdma_destroy_id(sid))
		r = fail_errno();
	if (id && rdma_destroy_id(id))
		r = fail_errno();
	if (ch)
		rdma_destroy_event_channel(ch);
	return r;
}

/* ---- conn ---- */

static int qp_for(struct rdma_cm_id *id, enum ibv_qp_type t)
{
	struct ibv_qp_init_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_type = t;
	a.cap.max_send_wr = 4;
	a.cap.max_recv_wr = 4;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	return rdma_create_qp(id, NULL, &a);
}

/* A client on cch: resolve the listener's address and route, a QP, connect. */
static int client_connect(struct rdma_event_channel *cch, struct rdma_cm_id **cli, int port)
{
	struct sockaddr_storage dst;
	struct rdma_conn_param cp;
	static const char pd[8] = "fault-w";

	if (CALL("rdma_create_id client", rdma_create_id(cch, cli, NULL, RDMA_PS_TCP)))
		return -1;
	set_addr(&dst, opt_ip, port);
	if (CALL("rdma_resolve_addr", rdma_resolve_addr(*cli, NULL, (struct sockaddr *)&dst, 2000)))
		return -1;
	if (wait_ev("client wait ADDR_RESOLVED", cch, RDMA_CM_EVENT_ADDR_RESOLVED, NULL, NULL))
		return -1;
	if (CALL("rdma_resolve_route", rdma_resolve_route(*cli, 2000)))
		return -1;
	if (wait_ev("client wait ROUTE_RESOLVED", cch, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL, NULL))
		return -1;
	if (CALL("rdma_create_qp client", qp_for(*cli, IBV_QPT_RC)))
		return -1;
	memset(&cp, 0, sizeof(cp));
	cp.private_data = pd;
	cp.private_data_len = sizeof(pd);
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.retry_count = 3;
	cp.rnr_retry_count = 3;
	return CALL("rdma_connect", rdma_connect(*cli, &cp));
}

static void drop_id(struct rdma_cm_id **id)
{
	if (!*id)
		return;
	if ((*id)->qp)
		rdma_destroy_qp(*id);
	if (rdma_destroy_id(*id))
		fail_errno();
	*id = NULL;
}

static int sc_conn(void)
{
	struct rdma_event_channel *sch = NULL, *cch = NULL;
	struct rdma_cm_id *lis = NULL, *cli = NULL, *child = NULL;
	struct sockaddr_storage src;
	struct rdma_conn_param cp;
	int port, r = -1;

	step("rdma_create_event_channel");
	if (!(sch = rdma_create_event_channel()) || !(cch = rdma_create_event_channel())) {
		fail_errno();
		goto out;
	}
	if (CALL("rdma_create_id listener", rdma_create_id(sch, &lis, NULL, RDMA_PS_TCP)))
		goto out;
	set_addr(&src, opt_ip, 0);
	if (CALL("rdma_bind_addr listener", rdma_bind_addr(lis, (struct sockaddr *)&src)))
		goto out;
	if (CALL("rdma_listen", rdma_listen(lis, 4)))
		goto out;
	port = ntohs(rdma_get_src_port(lis));
	if (client_connect(cch, &cli, port))
		goto out;
	if (wait_ev("server wait CONNECT_REQUEST", sch, RDMA_CM_EVENT_CONNECT_REQUEST, &child, NULL))
		goto out;
	if (CALL("rdma_create_qp server", qp_for(child, IBV_QPT_RC)))
		goto out;
	memset(&cp, 0, sizeof(cp));
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	if (CALL("rdma_accept", rdma_accept(child, &cp)))
		goto out;
	if (wait_ev("client wait ESTABLISHED", cch, RDMA_CM_EVENT_ESTABLISHED, NULL, NULL))
		goto out;
	if (wait_ev("server wait ESTABLISHED", sch, RDMA_CM_EVENT_ESTABLISHED, NULL, NULL))
		goto out;
	/* the client's DREQ; the server answers with its own disconnect (the
	 * DREP), then the client sees its DISCONNECTED */
	if (CALL("rdma_disconnect client", rdma_disconnect(cli)))
		goto out;
	if (wait_ev("server wait DISCONNECTED", sch, RDMA_CM_EVENT_DISCONNECTED, NULL, NULL))
		goto out;
	if (CALL("rdma_disconnect server", rdma_disconnect(child)))
		goto out;
	if (wait_ev("client wait DISCONNECTED", cch, RDMA_CM_EVENT_DISCONNECTED, NULL, NULL))
		goto out;
	step("destroy the connection");
	drop_id(&child);
	drop_id(&cli);
	/* the second client is rejected */
	if (client_connect(cch, &cli, port))
		goto out;
	if (wait_ev("server wait CONNECT_REQUEST 2", sch, RDMA_CM_EVENT_CONNECT_REQUEST, &child, NULL))
		goto out;
	if (CALL("rdma_reject", rdma_reject(child, "no", 2)))
		goto out;
	drop_id(&child);
	if (wait_ev("client wait REJECTED", cch, RDMA_CM_EVENT_REJECTED, NULL, NULL))
		goto out;
	r = 0;
out:
	step("teardown");
	drop_id(&child);
	drop_id(&cli);
	drop_id(&lis);
	if (cch)
		rdma_destroy_event_channel(cch);
	if (sch)
		rdma_destroy_event_channel(sch);
	return r;
}

/* ---- ep (sync ids, rdma_create_ep) ---- */

struct ep_client {
	int port;
	volatile int done; /* 1 ok, -1 failed */
	/* the server's rdma_accept returned (or the server gave up): the
	 * client disconnects only then, so that the server's sync accept
	 * cannot meet the client's disconnect before ESTABLISHED (it then
	 * fails with EPROTO: a race between the two sides, not what this
	 * scenario walks) */
	volatile int accepted;
};

static void *ep_client(void *arg)
{
	struct ep_client *c = arg;
	struct rdma_addrinfo h, *res = NULL;
	struct ibv_qp_init_attr a;
	struct rdma_cm_id *id = NULL;
	char port[16];
	int ok = 0;

	is_peer = 1;
	memset(&h, 0, sizeof(h));
	h.ai_port_space = RDMA_PS_TCP;
	snprintf(port, sizeof(port), "%d", c->port);
	errno = 0;
	if (rdma_getaddrinfo(opt_ip, port, &h, &res)) {
		failf(RUN_ERR, "client rdma_getaddrinfo: %s", ename(errno));
		goto out;
	}
	memset(&a, 0, sizeof(a));
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = a.cap.max_recv_wr = 4;
	a.cap.max_send_sge = a.cap.max_recv_sge = 1;
	errno = 0;
	if (rdma_create_ep(&id, res, NULL, &a)) {
		failf(RUN_ERR, "client rdma_create_ep: %s", ename(errno));
		goto out;
	}
	errno = 0;
	if (rdma_connect(id, NULL)) {
		failf(RUN_ERR, "client rdma_connect: %s", ename(errno));
		goto out;
	}
	for (int waited = 0; !__atomic_load_n(&c->accepted, __ATOMIC_SEQ_CST) && waited < opt_wait; waited += 5)
		usleep(5000);
	errno = 0;
	if (rdma_disconnect(id)) {
		failf(RUN_ERR, "client rdma_disconnect: %s", ename(errno));
		goto out;
	}
	ok = 1;
out:
	if (id)
		rdma_destroy_ep(id);
	if (res)
		rdma_freeaddrinfo(res);
	__atomic_store_n(&c->done, ok ? 1 : -1, __ATOMIC_SEQ_CST);
	return NULL;
}

/* poll fd for POLLIN in slices, until it is readable (0), the peer flag
 * says the peer failed (-1, an error already recorded by the peer) or
 * opt_wait ran out (a stall) */
static int wait_fd(const char *what, int fd, volatile int *peer, int (*pollfn)(struct pollfd *, nfds_t, int))
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int waited = 0, r;

	step(what);
	for (;;) {
		r = pollfn(&pfd, 1, 100);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return fail_errno();
		if (peer && __atomic_load_n(peer, __ATOMIC_SEQ_CST) < 0)
			return failf(RUN_ERR, "%s: the peer failed", what);
		waited += 100;
		if (waited >= opt_wait)
			return failf(lost_ok ? RUN_LOST : RUN_STALL, "%s: nothing within %d ms", what, opt_wait);
	}
}

static int join_peer(pthread_t t, volatile int *done)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += opt_wait / 1000 + 2;
	step("join the peer thread");
	if (pthread_timedjoin_np(t, NULL, &ts))
		return failf(RUN_STALL, "the peer thread did not end (its last step: %s)", rep->peer_step);
	return *done == 1 ? 0 : -1;
}

static int sc_ep(void)
{
	struct rdma_addrinfo h, *res = NULL;
	struct rdma_cm_id *lis = NULL, *child = NULL;
	struct ep_client c = { 0, 0, 0 };
	struct ibv_qp_init_attr a;
	pthread_t t;
	int started = 0, r = -1, e;

	memset(&h, 0, sizeof(h));
	h.ai_flags = RAI_PASSIVE;
	h.ai_port_space = RDMA_PS_TCP;
	step("rdma_getaddrinfo passive");
	errno = 0;
	if (rdma_getaddrinfo(opt_ip, "0", &h, &res)) {
		fail_errno();
		goto out;
	}
	if (CALL("rdma_create_ep passive", rdma_create_ep(&lis, res, NULL, NULL)))
		goto out;
	if (CALL("rdma_listen", rdma_listen(lis, 2)))
		goto out;
	c.port = ntohs(rdma_get_src_port(lis));
	step("pthread_create");
	e = pthread_create(&t, NULL, ep_client, &c);
	if (e) {
		failf(RUN_ERR, "pthread_create (the scenario's own): %s", ename(e));
		goto out;
	}
	started = 1;
	if (wait_fd("server wait for the request", lis->channel->fd, &c.done, poll))
		goto out;
	if (CALL("rdma_get_request", rdma_get_request(lis, &child)))
		goto out;
	memset(&a, 0, sizeof(a));
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = a.cap.max_recv_wr = 4;
	a.cap.max_send_sge = a.cap.max_recv_sge = 1;
	if (CALL("rdma_create_qp server", rdma_create_qp(child, NULL, &a)))
		goto out;
	if (CALL("rdma_accept", rdma_accept(child, NULL)))
		goto out;
	r = 0;
out:
	__atomic_store_n(&c.accepted, 1, __ATOMIC_SEQ_CST);
	if (child) {
		step("server disconnect");
		if (r == 0)
			rdma_disconnect(child);
		rdma_destroy_ep(child);
	}
	if (lis)
		rdma_destroy_ep(lis);
	if (res)
		rdma_freeaddrinfo(res);
	if (started && join_peer(t, &c.done))
		r = -1;
	return r;
}

/* ---- mcast ---- */

static int sc_mcast(void)
{
	struct rdma_event_channel *ch = NULL;
	struct rdma_cm_id *id = NULL;
	struct sockaddr_storage src, grp;
	struct rdma_cm_event *ev = NULL;
	int joined = 0, r = -1;

	step("rdma_create_event_channel");
	if (!(ch = rdma_create_event_channel()))
		return fail_errno();
	if (CALL("rdma_create_id UDP", rdma_create_id(ch, &id, NULL, RDMA_PS_UDP)))
		goto out;
	set_addr(&src, opt_ip, 0);
	if (CALL("rdma_bind_addr", rdma_bind_addr(id, (struct sockaddr *)&src)))
		goto out;
	if (CALL("rdma_create_qp UD", qp_for(id, IBV_QPT_UD)))
		goto out;
	set_addr(&grp, strchr(opt_ip, ':') ? "ff0e::1:2:30" : "239.1.2.30", 0);
	if (CALL("rdma_join_multicast", rdma_join_multicast(id, (struct sockaddr *)&grp, NULL)))
		goto out;
	joined = 1;
	if (wait_ev("wait MULTICAST_JOIN", ch, RDMA_CM_EVENT_MULTICAST_JOIN, NULL, &ev))
		goto out;
	if (ev->param.ud.qkey == 0)
		failf(RUN_ERR, "MULTICAST_JOIN without a Q_Key");
	rdma_ack_cm_event(ev);
	joined = 0;
	if (CALL("rdma_leave_multicast", rdma_leave_multicast(id, (struct sockaddr *)&grp)))
		goto out;
	r = rep->result[rep->phase] == RUN_NONE ? 0 : -1;
out:
	step("teardown");
	if (joined)
		rdma_leave_multicast(id, (struct sockaddr *)&grp);
	drop_id(&id);
	if (ch)
		rdma_destroy_event_channel(ch);
	return r;
}

/* ---- rsockets ---- */

#define RS_BYTES (64 * 1024)

struct rs_client {
	struct sockaddr_storage addr;
	volatile int done;  /* the client: 1 ok, -1 failed */
	volatile int sdone; /* the server: -1 failed */
};

static int rpoll_fn(struct pollfd *p, nfds_t n, int ms)
{
	return rpoll(p, n, ms);
}

static int rs_xfer(const char *what, int fd, int send, volatile int *peer)
{
	static __thread char buf[8192];
	size_t done = 0;
	ssize_t n;

	while (done < RS_BYTES) {
		size_t want = RS_BYTES - done < sizeof(buf) ? RS_BYTES - done : sizeof(buf);

		if (send) {
			memset(buf, (int)(done & 0xff), want);
			step(what);
			n = rsend(fd, buf, want, 0);
		} else {
			if (wait_fd(what, fd, peer, rpoll_fn))
				return -1;
			n = rrecv(fd, buf, want, MSG_DONTWAIT);
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				continue;
			if (n == 0)
				return failf(RUN_ERR, "%s: the peer closed after %zu bytes", what, done);
		}
		if (n < 0)
			return fail_errno();
		done += (size_t)n;
	}
	return 0;
}

static void *rs_client(void *arg)
{
	struct rs_client *c = arg;
	int fd, ok = 0;

	is_peer = 1;
	step("client rsocket");
	errno = 0;
	fd = rsocket(c->addr.ss_family, SOCK_STREAM, 0);
	if (fd < 0) {
		fail_errno();
		goto out;
	}
	if (CALL("client rconnect", rconnect(fd, (struct sockaddr *)&c->addr, sizeof(c->addr))))
		goto out;
	if (rs_xfer("client rsend", fd, 1, &c->sdone) || rs_xfer("client rrecv", fd, 0, &c->sdone))
		goto out;
	ok = 1;
out:
	if (fd >= 0 && rclose(fd)) {
		fail_errno();
		ok = 0;
	}
	__atomic_store_n(&c->done, ok ? 1 : -1, __ATOMIC_SEQ_CST);
	return NULL;
}

static int sc_rstream(void)
{
	struct rs_client c;
	socklen_t len = sizeof(c.addr);
	int l = -1, a = -1, started = 0, r = -1, e;
	pthread_t t;

	memset(&c, 0, sizeof(c));
	set_addr(&c.addr, opt_ip, 0);
	step("rsocket listener");
	errno = 0;
	l = rsocket(c.addr.ss_family, SOCK_STREAM, 0);
	if (l < 0)
		return fail_errno();
	if (CALL("rbind", rbind(l, (struct sockaddr *)&c.addr, len)))
		goto out;
	if (CALL("rlisten", rlisten(l, 2)))
		goto out;
	if (CALL("rgetsockname", rgetsockname(l, (struct sockaddr *)&c.addr, &len)))
		goto out;
	step("pthread_create");
	e = pthread_create(&t, NULL, rs_client, &c);
	if (e) {
		failf(RUN_ERR, "pthread_create (the scenario's own): %s", ename(e));
		goto out;
	}
	started = 1;
	if (wait_fd("server wait for the connection", l, &c.done, rpoll_fn))
		goto out;
	step("raccept");
	errno = 0;
	a = raccept(l, NULL, NULL);
	if (a < 0) {
		fail_errno();
		goto out;
	}
	if (rs_xfer("server rrecv", a, 0, &c.done) || rs_xfer("server rsend", a, 1, &c.done))
		goto out;
	r = 0;
out:
	if (r)
		__atomic_store_n(&c.sdone, -1, __ATOMIC_SEQ_CST);
	step("server rclose");
	if (a >= 0 && rclose(a))
		r = fail_errno();
	if (l >= 0 && rclose(l))
		r = fail_errno();
	if (started && join_peer(t, &c.done))
		r = -1;
	return r;
}

static int sc_rdgram(void)
{
	struct sockaddr_storage aa, ba, from;
	socklen_t len, flen;
	int a = -1, b = -1, r = -1;
	char buf[64];
	ssize_t n;

	set_addr(&aa, opt_ip, 0);
	step("rsocket dgram");
	errno = 0;
	if ((a = rsocket(aa.ss_family, SOCK_DGRAM, 0)) < 0 || (b = rsocket(aa.ss_family, SOCK_DGRAM, 0)) < 0) {
		fail_errno();
		goto out;
	}
	len = sizeof(aa);
	if (CALL("rbind a", rbind(a, (struct sockaddr *)&aa, len)) ||
	    CALL("rbind b", rbind(b, (struct sockaddr *)&aa, len)))
		goto out;
	len = sizeof(aa);
	if (CALL("rgetsockname a", rgetsockname(a, (struct sockaddr *)&aa, &len)))
		goto out;
	len = sizeof(ba);
	if (CALL("rgetsockname b", rgetsockname(b, (struct sockaddr *)&ba, &len)))
		goto out;
	step("rsendto a->b");
	errno = 0;
	if (rsendto(a, "ping", 4, 0, (struct sockaddr *)&ba, len) != 4) {
		fail_errno();
		goto out;
	}
	lost_ok = 1;
	r = wait_fd("b waits for the datagram", b, NULL, rpoll_fn);
	lost_ok = 0;
	if (r)
		goto out;
	flen = sizeof(from);
	step("rrecvfrom b");
	n = rrecvfrom(b, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&from, &flen);
	if (n != 4) {
		n < 0 ? fail_errno() : failf(RUN_ERR, "rrecvfrom b: %zd bytes", n);
		r = -1;
		goto out;
	}
	step("rsendto b->a");
	if (rsendto(b, "pong", 4, 0, (struct sockaddr *)&from, flen) != 4) {
		r = fail_errno();
		goto out;
	}
	lost_ok = 1;
	r = wait_fd("a waits for the reply", a, NULL, rpoll_fn);
	lost_ok = 0;
	if (r)
		goto out;
	step("rrecvfrom a");
	n = rrecvfrom(a, buf, sizeof(buf), MSG_DONTWAIT, NULL, NULL);
	if (n != 4) {
		n < 0 ? fail_errno() : failf(RUN_ERR, "rrecvfrom a: %zd bytes", n);
		r = -1;
		goto out;
	}
	r = 0;
out:
	step("rclose");
	if (a >= 0 && rclose(a))
		r = fail_errno();
	if (b >= 0 && rclose(b))
		r = fail_errno();
	return r;
}

/* ---- the walk ---- */

static const struct {
	const char *name;
	int (*fn)(void);
} scenarios[] = {
	{ "libc-gai", sc_libc_gai }, { "gai", sc_gai },	 { "ids", sc_ids },	{ "conn", sc_conn },	 { "ep", sc_ep },
	{ "mcast", sc_mcast }, { "rstream", sc_rstream }, { "rdgram", sc_rdgram },
};

static void print_frame(const char *f);

#define MAX_KINDS 64
static struct {
	char what[160];
	long n, first;
} kinds[MAX_KINDS];
static int nkinds, kinds_dropped;

static void tally(const char *what, long k)
{
	int i;

	for (i = 0; i < nkinds; i++)
		if (!strcmp(kinds[i].what, what)) {
			kinds[i].n++;
			return;
		}
	if (nkinds == MAX_KINDS) {
		kinds_dropped++;
		return;
	}
	snprintf(kinds[nkinds].what, sizeof(kinds[0].what), "%s", what);
	kinds[nkinds].n = 1;
	kinds[nkinds].first = k;
	nkinds++;
}

static void print_frames(void)
{
	int i;

	if (!shim->fired)
		return;
	printf("    the failed allocation:\n");
	for (i = 0; i < shim->nframes && i < FAULT_FRAMES; i++)
		print_frame(shim->frames[i]);
}

static const char *lib_file(void);

/* Whose allocation failed: the object of the innermost frame that is not
 * glibc, the loader or libgcc (whose functions allocate for their caller).
 * 1: the librdmacm under test. */
static int failed_in_library(void)
{
	static const char *const infra[] = { "/libc.so.6+", "/ld-linux-x86-64.so.2+", "/libgcc_s.so.1+" };
	const char *lib = lib_file();
	size_t n = strlen(lib), j;
	int i;

	for (i = 0; i < shim->nframes && i < FAULT_FRAMES; i++) {
		const char *f = shim->frames[i];
		int skip = 0;

		for (j = 0; j < sizeof(infra) / sizeof(infra[0]); j++)
			skip |= strstr(f, infra[j]) != NULL;
		if (skip)
			continue;
		return !strncmp(f, lib, n) && f[n] == '+';
	}
	return 0;
}

static const char *lib_file(void)
{
	Dl_info di;

	if (dladdr((void *)rdma_create_event_channel, &di) && di.dli_fname)
		return di.dli_fname;
	return "?";
}

/* In the child: where a fatal signal came from (raw addresses; the parent
 * names them: the libraries loaded at start are at the same addresses in
 * both). The handler returns; the signal, reset to its default, then ends
 * the process as it would have. */
static void on_fatal(int sig)
{
	(void)sig;
	rep->ncrash = backtrace(rep->crash, 32);
}

static void catch_fatal(void)
{
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE, SIGTRAP };
	struct sigaction sa;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fatal;
	sa.sa_flags = SA_RESETHAND | SA_NODEFER;
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

/* "      OBJ+0xOFF  FUNCTION" (addr2line names the function from the
 * object's symbol table; "?" where it has none) */
static void print_frame(const char *f)
{
	char cmd[512], fn[1024] = "";
	const char *plus = strrchr(f, '+');
	FILE *p;

	if (plus && memchr(f, '/', (size_t)(plus - f)) && !getenv("FAULT_NO_SYMBOLS")) {
		char line[256];
		int odd = 0;

		/* -i: with line tables, the functions inlined there too
		 * (innermost first), joined by " < " */
		snprintf(cmd, sizeof(cmd), "addr2line -f -C -i -e '%.*s' %#lx 2>/dev/null", (int)(plus - f), f,
			 strtoul(plus + 1, NULL, 16) - 1);
		p = popen(cmd, "r");
		if (p) {
			while (fgets(line, sizeof(line), p)) {
				if (!(odd++ & 1)) {
					line[strcspn(line, "\n")] = 0;
					if (fn[0] && strlen(fn) + 4 < sizeof(fn))
						strcat(fn, " < ");
					strncat(fn, line, sizeof(fn) - strlen(fn) - 1);
				}
			}
			pclose(p);
		}
	}
	printf("      %s  %s\n", f, fn);
}

static void print_addr(void *a)
{
	char b[160];
	Dl_info di;

	if (dladdr(a, &di) && di.dli_fname)
		snprintf(b, sizeof(b), "%s+%#lx", di.dli_fname, (unsigned long)((char *)a - (char *)di.dli_fbase));
	else
		snprintf(b, sizeof(b), "?+%p", a);
	print_frame(b);
}

static void print_crash(void)
{
	int i;

	if (!rep->ncrash)
		return;
	printf("    where the signal came from:\n");
	/* frame 0 is the handler */
	for (i = 1; i < rep->ncrash && i < 20; i++)
		print_addr(rep->crash[i]);
}

/* One run in a child: fail the k-th allocation (k == 0: none). Returns the
 * wait status, or -1 when it was killed after the timeout. */
static int run_child(int (*fn)(void), long k, int timeout)
{
	sigset_t set, old;
	struct timespec ts = { timeout, 0 };
	siginfo_t si;
	pid_t pid, walker;
	int st;

	memset(rep, 0, sizeof(*rep));
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, &old);
	fflush(stdout);
	walker = getpid();
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (pid == 0) {
		/* a run must not outlive the walk (70-fault.sh stops a walk
		 * with timeout(1): its hung run would go on holding ids, QPs
		 * and ports while later tests run) */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != walker)
			_exit(1);
		sigprocmask(SIG_SETMASK, &old, NULL);
		catch_fatal();
		p_arm(k);
		rep->result[0] = fn() ? rep->result[0] : RUN_OK;
		if (rep->result[0] == RUN_NONE)
			rep->result[0] = RUN_ERR; /* failed without saying why */
		rep->count = p_disarm();
		rep->fired = shim->fired;
		rep->phase = 1;
		rep->result[1] = fn() ? rep->result[1] : RUN_OK;
		if (rep->result[1] == RUN_NONE)
			rep->result[1] = RUN_ERR;
		exit(0);
	}
	for (;;) {
		int s = sigtimedwait(&set, &si, &ts);
		if (s == SIGCHLD && waitpid(pid, &st, WNOHANG) == pid)
			break;
		if (s < 0 && errno == EAGAIN) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			st = -1;
			break;
		}
		/* SIGCHLD of something else or EINTR: the remaining time is
		 * not tracked precisely; a new full slice is fine for a hang
		 * verdict */
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	return st;
}

static int walk(const char *name, int (*fn)(void), const char *label, long from, long max, long dense, long stepk,
		int timeout)
{
	long k, points = 0, runs = 0, ok = 0, errs = 0, lost = 0, aborts = 0, hangs = 0, unusable = 0, unusable_own = 0;
	int st, i;

	/* how many allocations one run makes, nothing failing */
	st = run_child(fn, 0, timeout);
	printf("# %s with %s: one run, nothing failing: %s, %ld allocations\n", name, label,
	       st == -1		? "hung"
	       : WIFSIGNALED(st) ? "killed by a signal"
	       : rep->result[0] == RUN_OK ? "ok"
				: rep->err[0],
	       rep->count);
	if (st == -1 || !WIFEXITED(st) || rep->result[0] != RUN_OK || rep->result[1] != RUN_OK) {
		printf("# %s: the scenario does not pass without failures (%s / %s): not walked\n", name,
		       rep->err[0], rep->err[1]);
		printf("%s %s: not walked (the scenario fails without failures)\n", name, label);
		return 1;
	}
	if (opt_samples > 0 && rep->count > dense) {
		long spread = (rep->count - dense + opt_samples - 1) / opt_samples;

		if (spread > stepk)
			stepk = spread;
	}
	for (k = from; k <= max; k += (k < dense ? 1 : stepk)) {
		st = run_child(fn, k, timeout);
		runs++;
		if (st != -1 && WIFEXITED(st) && !shim->fired && !rep->fired) {
			/* the run ended before its k-th allocation: k - 1 points */
			runs--;
			break;
		}
		points = k;
		if (st == -1) {
			hangs++;
			printf("  k=%ld: hang (killed after %d s) in step '%s'%s%s%s\n", k, timeout, rep->step,
			       rep->peer_step[0] ? " (peer thread: '" : "", rep->peer_step, rep->peer_step[0] ? "')" : "");
			print_frames();
			continue;
		}
		if (WIFSIGNALED(st)) {
			aborts++;
			printf("  k=%ld: abort (SIG%s) in step '%s' (phase %d)\n", k, sigabbrev_np(WTERMSIG(st)),
			       rep->step, rep->phase);
			print_frames();
			print_crash();
			continue;
		}
		if (WEXITSTATUS(st) != 0) {
			aborts++;
			printf("  k=%ld: exit %d in step '%s'\n", k, WEXITSTATUS(st), rep->step);
			continue;
		}
		switch (rep->result[0]) {
		case RUN_OK:
			ok++;
			break;
		case RUN_LOST:
			lost++;
			printf("  k=%ld: lost: %s\n", k, rep->err[0]);
			print_frames();
			break;
		case RUN_STALL:
			hangs++;
			printf("  k=%ld: hang: %s\n", k, rep->err[0]);
			print_frames();
			break;
		default:
			errs++;
			tally(rep->err[0], k);
		}
		if (rep->result[1] != RUN_OK) {
			int own = failed_in_library();

			unusable++;
			unusable_own += own;
			printf("  k=%ld: unusable after (%s): the next run: %s; the failed allocation was %s\n", k,
			       rep->result[0] == RUN_OK ? "ok" : rep->err[0], rep->err[1],
			       own ? "the library's own" : "another library's");
			print_frames();
		}
	}
	if (k > max)
		printf("# %s: stopped at --max %ld (more points may exist)\n", name, max);
	if (nkinds) {
		printf("# errors (count, first k):\n");
		for (i = 0; i < nkinds; i++)
			printf("#   %5ld  k=%-5ld %s\n", kinds[i].n, kinds[i].first, kinds[i].what);
		if (kinds_dropped)
			printf("#   (%d more kinds not listed)\n", kinds_dropped);
	}
	printf("%s %s: %ld points, %ld runs, %ld ok, %ld errors, %ld lost, %ld aborts, %ld hangs, %ld unusable after "
	       "(%ld after the library's own allocation failed)\n",
	       name, label, points, runs, ok, errs, lost, aborts, hangs, unusable, unusable_own);
	return aborts + hangs ? 1 : 0;
}

/* ---- the shim's own checks ---- */

static int self_test(void)
{
	int bad = 0, n = 0;
	void *p, *q;
	char *s;
	FILE *f;

#define CHECK(cond, ...)                          \
	do {                                      \
		n++;                              \
		if (cond)                         \
			printf("ok   " __VA_ARGS__); \
		else {                            \
			printf("FAIL " __VA_ARGS__); \
			bad++;                    \
		}                                 \
	} while (0)
	p_arm(0);
	s = strdup("abc");
	CHECK(p_disarm() == 1, "strdup counts as one allocation\n");
	free(s);
	p_arm(0);
	f = fopen("/proc/self/stat", "r");
	CHECK(p_disarm() >= 1, "fopen's allocation is counted\n");
	if (f)
		fclose(f);
	if (!getenv("FAULT_IN_GETADDRINFO")) {
		struct addrinfo *ai = NULL;

		p_arm(0);
		if (!getaddrinfo("127.0.0.1", "7471", NULL, &ai))
			freeaddrinfo(ai);
		CHECK(p_disarm() == 0, "allocations inside getaddrinfo are left alone\n");
	}
	p_arm(2);
	p = malloc(16);
	errno = 0;
	q = malloc(16);
	CHECK(p && !q && errno == ENOMEM && shim->fired, "the 2nd malloc fails with ENOMEM, the 1st does not\n");
	free(q);
	q = malloc(16);
	CHECK(q != NULL, "after the failure, allocations succeed again\n");
	CHECK(shim->nframes > 0, "the failed allocation's frames were recorded (%s)\n",
	      shim->nframes ? shim->frames[0] : "none");
	p_disarm();
	free(p);
	free(q);
	p_arm(1);
	{
		void *m = (void *)1;
		errno = 0;
		int e = posix_memalign(&m, 64, 100);
		CHECK(e == ENOMEM && m == (void *)1 && errno == 0, "posix_memalign reports ENOMEM, errno untouched\n");
	}
	p_arm(1);
	CHECK(calloc(2, 8) == NULL, "calloc fails\n");
	p_arm(1);
	p = malloc(8);
	p_disarm();
	CHECK(p == NULL, "malloc fails at k=1\n");
	p = malloc(8);
	p_arm(1);
	q = realloc(p, 4096);
	p_disarm();
	CHECK(q == NULL, "realloc fails (the block is kept)\n");
	free(q ? q : p);
	printf("%d passed, %d failed\n", n - bad, bad);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *label = NULL;
	long max = 100000, dense = 0, stepk = 1, from = 1;
	int timeout = 30, count = 0, i;
	size_t s;

	setvbuf(stdout, NULL, _IOLBF, 0);
	p_shim = (struct fault_shim * (*)(void)) dlsym(RTLD_DEFAULT, "fault_shim");
	p_arm = (void (*)(long))dlsym(RTLD_DEFAULT, "fault_arm");
	p_disarm = (long (*)(void))dlsym(RTLD_DEFAULT, "fault_disarm");
	rep = mmap(NULL, sizeof(*rep), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (rep == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--list")) {
			for (s = 0; s < sizeof(scenarios) / sizeof(scenarios[0]); s++)
				printf("%s\n", scenarios[s].name);
			return 0;
		} else if (!strcmp(argv[i], "--label") && i + 1 < argc)
			label = argv[++i];
		else if (!strcmp(argv[i], "--from") && i + 1 < argc)
			from = atol(argv[++i]);
		else if (!strcmp(argv[i], "--max") && i + 1 < argc)
			max = atol(argv[++i]);
		else if (!strcmp(argv[i], "--dense") && i + 1 < argc)
			dense = atol(argv[++i]);
		else if (!strcmp(argv[i], "--step") && i + 1 < argc)
			stepk = atol(argv[++i]);
		else if (!strcmp(argv[i], "--timeout") && i + 1 < argc)
			timeout = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--wait") && i + 1 < argc)
			opt_wait = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--samples") && i + 1 < argc)
			opt_samples = atol(argv[++i]);
		else if (!strcmp(argv[i], "--ip") && i + 1 < argc)
			opt_ip = argv[++i];
		else if (!strcmp(argv[i], "--count"))
			count = 1;
		else if (!strcmp(argv[i], "--self-test")) {
			if (!p_shim || !p_arm || !p_disarm || !(shim = p_shim())) {
				printf("failmalloc.so is not preloaded\n0 passed, 1 failed\n");
				return 3;
			}
			return self_test();
		} else
			break;
	}
	if (i != argc - 1 || stepk < 1) {
		fprintf(stderr, "usage: %s [--label L] [--from K] [--max N] [--dense D --step S] [--samples N] [--timeout S] [--wait MS] "
				"[--ip ADDR] [--count] SCENARIO | --list | --self-test\n",
			argv[0]);
		return 2;
	}
	if (!p_shim || !p_arm || !p_disarm || !(shim = p_shim())) {
		fprintf(stderr, "fault_walk: failmalloc.so is not preloaded (LD_PRELOAD)\n");
		return 3;
	}
	if (!dense)
		dense = max;
	for (s = 0; s < sizeof(scenarios) / sizeof(scenarios[0]); s++) {
		if (strcmp(argv[i], scenarios[s].name))
			continue;
		if (!label)
			label = lib_file();
		printf("# library: %s\n", lib_file());
		if (count) {
			int st = run_child(scenarios[s].fn, 0, timeout);
			printf("%s: %ld allocations, %s\n", scenarios[s].name, rep->count,
			       st == -1 ? "hung" : !WIFEXITED(st) ? "killed" : rep->result[0] == RUN_OK ? "ok" : rep->err[0]);
			return st == -1 || !WIFEXITED(st) || rep->result[0] != RUN_OK;
		}
		return walk(scenarios[s].name, scenarios[s].fn, label, from, max, dense, stepk, timeout);
	}
	fprintf(stderr, "fault_walk: unknown scenario %s\n", argv[i]);
	return 2;
}
