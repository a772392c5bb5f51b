/*
 * conn_diff.c — differential test of CONNECTION management on a real
 * kernel (the soft-RoCE guest): listen/connect/accept/reject/disconnect
 * with private data, QPs made by rdma_create_qp, a message over them,
 * UD (SIDR) connections, sync endpoints (rdma_create_ep, rdma_get_request),
 * rdma_init_qp_attr, rdma_establish with an application-owned QP, ECE,
 * multicast, and faults (a peer SIGKILLed, a listener destroyed under a
 * pending request, device removal, calls in the wrong state, bad input).
 *
 * Server and client run in one process over rxe0 (192.0.2.1, fd00::1), each
 * on its own event channel, and the case reads the channels in a fixed
 * order, so the output does not depend on timing. Where a side must block
 * (sync endpoints) it runs in a thread that prints into its own buffer,
 * printed after the thread ends; a peer that is to be SIGKILLed is a forked
 * process whose output comes back through a pipe.
 *
 * Built against Debian's v44 header (abi-tests/conn/build.sh). Every
 * connection function is looked up with dlsym(RTLD_DEFAULT), so the binary
 * loads on a librdmacm that lacks some of them; a case then prints one line
 * "  SKIP: library lacks NAME..." (the runner reports it as skipped, never
 * as passed).
 *
 * Every case runs in its own child process (forked before the library is
 * touched) with a hard timeout; a crash or hang is a line of that case.
 * Printed: return values and errno, events (type, status, which id), the
 * conn/ud parameters of events including the private data bytes and
 * length, initiator depth and responder resources, whether a QP number is
 * there (never the number), the deterministic parts of address handles,
 * QP attributes and the ids' fields. Never printed: pointers, QP numbers,
 * PSNs, kernel-chosen ports, flow labels (hashed from the ports).
 * Lines: "  LABEL: RESULT" (LABEL unique within a case) followed by detail
 * lines indented by 4, as cm_diff, so abi-tests/cm/compare.py can excuse
 * exactly the lines documented in abi-tests/conn/expected-diffs.txt.
 *
 *   conn_diff [CASE...]   every case, or the named ones, in table order
 *   conn_diff --list      the case names
 *
 * Environment (set by abi-tests/vm/tests.d/30-conn-diff.sh):
 *   CONN_DEVREM_IP, CONN_DEVREM_DEV — an address on a dedicated rxe device
 *   that the device-removal case may delete (`rdma link delete DEV`).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

/* seconds a case may run before it is killed and reported as hung */
#define CASE_TIMEOUT 40
/* how long a case waits for an event that should come (ms) */
#define EV_WAIT 8000

/*
 * The connection functions, resolved at run time. Each call below goes
 * through p_NAME (the #defines after the table).
 */
#define CONN_FNS(X)                                                              \
	X(rdma_listen) X(rdma_connect) X(rdma_accept) X(rdma_reject) X(rdma_disconnect) \
	X(rdma_get_request) X(rdma_establish) X(rdma_init_qp_attr) X(rdma_create_qp)    \
	X(rdma_destroy_qp) X(rdma_create_ep) X(rdma_destroy_ep) X(rdma_join_multicast)  \
	X(rdma_join_multicast_ex) X(rdma_leave_multicast) X(rdma_set_local_ece)         \
	X(rdma_get_remote_ece) X(rdma_reject_ece) X(rdma_create_srq) X(rdma_destroy_srq) X(rdma_create_qp_ex)
#define X_DECL(n) static __typeof__(&n) p_##n;
CONN_FNS(X_DECL)
#define rdma_listen(...) p_rdma_listen(__VA_ARGS__)
#define rdma_connect(...) p_rdma_connect(__VA_ARGS__)
#define rdma_accept(...) p_rdma_accept(__VA_ARGS__)
#define rdma_reject(...) p_rdma_reject(__VA_ARGS__)
#define rdma_disconnect(...) p_rdma_disconnect(__VA_ARGS__)
#define rdma_get_request(...) p_rdma_get_request(__VA_ARGS__)
#define rdma_establish(...) p_rdma_establish(__VA_ARGS__)
#define rdma_init_qp_attr(...) p_rdma_init_qp_attr(__VA_ARGS__)
#define rdma_create_qp(...) p_rdma_create_qp(__VA_ARGS__)
#define rdma_destroy_qp(...) p_rdma_destroy_qp(__VA_ARGS__)
#define rdma_create_ep(...) p_rdma_create_ep(__VA_ARGS__)
#define rdma_destroy_ep(...) p_rdma_destroy_ep(__VA_ARGS__)
#define rdma_join_multicast(...) p_rdma_join_multicast(__VA_ARGS__)
#define rdma_join_multicast_ex(...) p_rdma_join_multicast_ex(__VA_ARGS__)
#define rdma_leave_multicast(...) p_rdma_leave_multicast(__VA_ARGS__)
#define rdma_set_local_ece(...) p_rdma_set_local_ece(__VA_ARGS__)
#define rdma_get_remote_ece(...) p_rdma_get_remote_ece(__VA_ARGS__)
#define rdma_reject_ece(...) p_rdma_reject_ece(__VA_ARGS__)
#define rdma_create_srq(...) p_rdma_create_srq(__VA_ARGS__)
#define rdma_destroy_srq(...) p_rdma_destroy_srq(__VA_ARGS__)
#define rdma_create_qp_ex(...) p_rdma_create_qp_ex(__VA_ARGS__)

/* ---- output: per thread (a thread prints into its own buffer) ---- */

static __thread FILE *out_f;
#define OUT (out_f ? out_f : stdout)
#define P(...) fprintf(OUT, __VA_ARGS__)

static const char *en(int e)
{
	static __thread char buf[16];
	const char *n = e > 0 ? strerrorname_np(e) : NULL;

	if (n)
		return n;
	snprintf(buf, sizeof(buf), "%d", e);
	return buf;
}

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

/* One call in a child process; a crash (a known upstream NULL
 * dereference) becomes a result line instead of ending the case. */
#define IN_CHILD(label, call)                                                                 \
	do {                                                                                  \
		int _st;                                                                      \
		pid_t _p;                                                                     \
		fflush(OUT);                                                                  \
		_p = fork();                                                                  \
		if (_p == 0) {                                                                \
			alarm(10);                                                            \
			R(label, call);                                                       \
			fflush(OUT);                                                          \
			_exit(0);                                                             \
		}                                                                             \
		if (_p < 0 || waitpid(_p, &_st, 0) != _p)                                     \
			P("  %s: fork/wait failed\n", label);                                 \
		else if (WIFSIGNALED(_st))                                                    \
			P("  %s: killed by SIG%s\n", label, sigabbrev_np(WTERMSIG(_st)));     \
	} while (0)

/* ---- names for ids (events say which id they are for) ---- */

static pthread_mutex_t names_mut = PTHREAD_MUTEX_INITIALIZER;
static struct {
	struct rdma_cm_id *id;
	const char *name;
} names[32];

static void name_id(struct rdma_cm_id *id, const char *name)
{
	int i;

	pthread_mutex_lock(&names_mut);
	for (i = 0; i < 32; i++)
		if (!names[i].id || names[i].id == id) {
			names[i].id = id;
			names[i].name = name;
			break;
		}
	pthread_mutex_unlock(&names_mut);
}

static void unname_id(struct rdma_cm_id *id)
{
	int i;

	pthread_mutex_lock(&names_mut);
	for (i = 0; i < 32; i++)
		if (names[i].id == id)
			names[i].id = NULL;
	pthread_mutex_unlock(&names_mut);
}

static const char *idname(struct rdma_cm_id *id)
{
	const char *n = "unknown";
	int i;

	if (!id)
		return "NULL";
	pthread_mutex_lock(&names_mut);
	for (i = 0; i < 32; i++)
		if (names[i].id == id) {
			n = names[i].name;
			break;
		}
	pthread_mutex_unlock(&names_mut);
	return n;
}

/* ---- printing ---- */

static void sa_set(struct sockaddr_storage *ss, const char *ip, int port)
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

static void hex(const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n--)
		P("%02x", *b++);
}

/* private data: its bytes up to the last non-zero one, then how many zero
 * bytes follow (the kernel pads to the CM message's private data size) */
static void print_pd(const void *p, unsigned len)
{
	const unsigned char *b = p;
	unsigned n = len;

	if (!p) {
		P("NULL");
		return;
	}
	while (n && !b[n - 1])
		n--;
	P("[");
	hex(b, n);
	P("]");
	if (len > n)
		P("+%u zero", len - n);
}

/* ports this program chooses are below 32768; others are ephemeral */
static const char *port_str(uint16_t be)
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

static void print_sa(const char *what, const struct sockaddr *sa)
{
	char buf[INET6_ADDRSTRLEN];

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

static const char *qpn_str(uint32_t q)
{
	return q == 0xffffff ? "0xffffff" : q ? "set" : "0";
}

/* Every field of the id, decoded (no pointers, no QP numbers). */
static void print_id(struct rdma_cm_id *id)
{
	struct rdma_addr *a = &id->route.addr;
	int i;

	P("    [%s] verbs=%s pd=%s port_num=%u ps=%#x qp_type=%d\n", idname(id),
	  id->verbs ? ibv_get_device_name(id->verbs->device) : "NULL", id->pd ? "set" : "NULL", id->port_num, id->ps,
	  id->qp_type);
	P("    channel=%s event=%s qp=%s srq=%s send_cq=%s recv_cq=%s send_cq_channel=%s recv_cq_channel=%s\n",
	  id->channel ? "set" : "NULL", id->event ? "set" : "NULL", id->qp ? "set" : "NULL", id->srq ? "set" : "NULL",
	  id->send_cq ? "set" : "NULL", id->recv_cq ? "set" : "NULL", id->send_cq_channel ? "set" : "NULL",
	  id->recv_cq_channel ? "set" : "NULL");
	if (id->qp)
		P("    qp: type=%d pd is id->pd=%s send_cq is id's=%s recv_cq is id's=%s\n", id->qp->qp_type,
		  id->qp->pd == id->pd ? "yes" : "no", id->qp->send_cq == id->send_cq ? "yes" : "no",
		  id->qp->recv_cq == id->recv_cq ? "yes" : "no");
	print_sa("src", &a->src_addr);
	print_sa("dst", &a->dst_addr);
	P("    ibaddr sgid=");
	hex(&a->addr.ibaddr.sgid, 16);
	P(" dgid=");
	hex(&a->addr.ibaddr.dgid, 16);
	P(" pkey=%#x\n", ntohs(a->addr.ibaddr.pkey));
	P("    num_paths=%d path_rec=%s\n", id->route.num_paths, id->route.path_rec ? "set" : "NULL");
	for (i = 0; id->route.path_rec && i < id->route.num_paths; i++) {
		struct ibv_sa_path_rec *p = &id->route.path_rec[i];
		P("    path %d: dgid=", i);
		hex(&p->dgid, 16);
		P(" sgid=");
		hex(&p->sgid, 16);
		P(" dlid=%#x slid=%#x raw=%d flow=%s hop=%u tclass=%u rev=%d numb=%u pkey=%#x sl=%u"
		  " mtu=%u/%u rate=%u/%u plt=%u/%u pref=%u\n",
		  ntohs(p->dlid), ntohs(p->slid), p->raw_traffic, p->flow_label ? "set" : "0", p->hop_limit,
		  p->traffic_class, p->reversible, p->numb_path, ntohs(p->pkey), p->sl, p->mtu_selector, p->mtu,
		  p->rate_selector, p->rate, p->packet_life_time_selector, p->packet_life_time, p->preference);
	}
	P("    get_src_port=%s get_dst_port=%s\n", port_str(rdma_get_src_port(id)), port_str(rdma_get_dst_port(id)));
}

static void print_ah(const struct ibv_ah_attr *ah)
{
	P("    ah dlid=%u sl=%u src_path_bits=%u static_rate=%u is_global=%u port=%u sgid_index=%u hop=%u"
	  " tclass=%u flow=%s dgid=",
	  ah->dlid, ah->sl, ah->src_path_bits, ah->static_rate, ah->is_global, ah->port_num, ah->grh.sgid_index,
	  ah->grh.hop_limit, ah->grh.traffic_class, ah->grh.flow_label ? "set" : "0");
	hex(&ah->grh.dgid, 16);
	P("\n");
}

static int mc_token;
static void *mc_context = &mc_token; /* the context the multicast cases join with */
static struct rdma_ud_param last_ud;  /* the ud param of the last event get_ev read */

static void print_event(struct rdma_cm_event *ev)
{
	P("    event %d %s status=%d id=%s listen_id=%s\n", ev->event, rdma_event_str(ev->event), ev->status,
	  idname(ev->id), idname(ev->listen_id));
	if (ev->event == RDMA_CM_EVENT_MULTICAST_JOIN || ev->event == RDMA_CM_EVENT_MULTICAST_ERROR) {
		struct rdma_ud_param *u = &ev->param.ud;
		P("    param.ud private_data=%s len=%u qp_num=%s qkey=%#x\n",
		  u->private_data == mc_context ? "the join context" : u->private_data ? "other" : "NULL",
		  u->private_data_len, qpn_str(u->qp_num), u->qkey);
		print_ah(&u->ah_attr);
	} else if (ev->id && ev->id->qp_type == IBV_QPT_UD) {
		struct rdma_ud_param *u = &ev->param.ud;
		P("    param.ud private_data=");
		print_pd(u->private_data, u->private_data_len);
		P(" len=%u qp_num=%s qkey=%#x\n", u->private_data_len, qpn_str(u->qp_num), u->qkey);
		print_ah(&u->ah_attr);
	} else {
		struct rdma_conn_param *c = &ev->param.conn;
		P("    param.conn private_data=");
		print_pd(c->private_data, c->private_data_len);
		P(" len=%u resp_res=%u init_depth=%u flow_control=%u retry=%u rnr_retry=%u srq=%u qp_num=%s\n",
		  c->private_data_len, c->responder_resources, c->initiator_depth, c->flow_control, c->retry_count,
		  c->rnr_retry_count, c->srq, qpn_str(c->qp_num));
	}
}

/*
 * Wait up to ms for an event on ch (poll), read it, print it and ack it.
 * Returns the event type, -1 on an error, -2 when none came. With `child`
 * the event's id is stored there (for CONNECT_REQUEST: the new id, named
 * `child_name`).
 */
static int get_ev(const char *label, struct rdma_event_channel *ch, int ms, struct rdma_cm_id **child,
		  const char *child_name)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	int type;

	if (poll(&pfd, 1, ms) != 1) {
		P("  %s: no event within %d ms\n", label, ms);
		return -2;
	}
	errno = 0;
	if (rdma_get_cm_event(ch, &ev)) {
		P("  %s: ret=-1 errno=%s\n", label, en(errno));
		return -1;
	}
	if (child) {
		*child = ev->id;
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST && child_name)
			name_id(ev->id, child_name);
	}
	P("  %s: ret=0\n", label);
	print_event(ev);
	last_ud = ev->param.ud; /* for the multicast data path (the private data is not kept) */
	last_ud.private_data = NULL;
	type = ev->event;
	errno = 0;
	if (rdma_ack_cm_event(ev))
		P("    ack: ret=-1 errno=%s\n", en(errno));
	return type;
}

/* No event within ms (used where none may come). */
static void no_ev(const char *label, struct rdma_event_channel *ch, int ms)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };

	if (poll(&pfd, 1, ms) == 1) {
		get_ev(label, ch, 0, NULL, NULL);
		return;
	}
	P("  %s: none within %d ms\n", label, ms);
}

static struct rdma_event_channel *new_channel(const char *label)
{
	struct rdma_event_channel *ch;

	errno = 0;
	ch = rdma_create_event_channel();
	if (!ch)
		P("  %s: NULL errno=%s\n", label, en(errno));
	return ch;
}

/* ---- building blocks ---- */

static struct rdma_cm_id *new_id(const char *name, struct rdma_event_channel *ch, enum rdma_port_space ps)
{
	struct rdma_cm_id *id;
	char label[64];

	snprintf(label, sizeof(label), "%s: create_id", name);
	if (R(label, rdma_create_id(ch, &id, NULL, ps)))
		return NULL;
	name_id(id, name);
	return id;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void destroy_id(const char *name, struct rdma_cm_id *id)
{
	char label[64];
	double t0 = now();

	if (!id)
		return;
	snprintf(label, sizeof(label), "%s: destroy_id", name);
	R(label, rdma_destroy_id(id));
	unname_id(id);
	/* diagnostics only (stderr): a destroy that waits in the kernel */
	if (now() - t0 > 1)
		fprintf(stderr, "  (%s took %.1f s)\n", label, now() - t0);
}

/* create_id, bind ip:port, listen; prints the listener */
static struct rdma_cm_id *listener(const char *name, struct rdma_event_channel *ch, const char *ip, int port,
				   enum rdma_port_space ps, int backlog)
{
	struct sockaddr_storage a;
	struct rdma_cm_id *id = new_id(name, ch, ps);
	char label[64];

	if (!id)
		return NULL;
	sa_set(&a, ip, port);
	snprintf(label, sizeof(label), "%s: bind_addr", name);
	if (R(label, rdma_bind_addr(id, (struct sockaddr *)&a)))
		goto err;
	snprintf(label, sizeof(label), "%s: listen", name);
	if (R(label, rdma_listen(id, backlog)))
		goto err;
	print_id(id);
	return id;
err:
	destroy_id(name, id);
	return NULL;
}

/* resolve addr (from src, when given) and, with `route`, route; 0 when
 * resolved */
static int resolve(const char *name, struct rdma_cm_id *id, const char *src, const char *ip, int port, int route)
{
	struct sockaddr_storage s, d;
	char label[64];

	sa_set(&d, ip, port);
	if (src)
		sa_set(&s, src, 0);
	snprintf(label, sizeof(label), "%s: resolve_addr", name);
	if (R(label, rdma_resolve_addr(id, src ? (struct sockaddr *)&s : NULL, (struct sockaddr *)&d, 2000)))
		return -1;
	snprintf(label, sizeof(label), "%s: addr event", name);
	if (get_ev(label, id->channel, EV_WAIT, NULL, NULL) != RDMA_CM_EVENT_ADDR_RESOLVED)
		return -1;
	if (!route)
		return 0;
	snprintf(label, sizeof(label), "%s: resolve_route", name);
	if (R(label, rdma_resolve_route(id, 2000)))
		return -1;
	snprintf(label, sizeof(label), "%s: route event", name);
	if (get_ev(label, id->channel, EV_WAIT, NULL, NULL) != RDMA_CM_EVENT_ROUTE_RESOLVED)
		return -1;
	return 0;
}

/* a client id on ch, resolved to ip:port (addr and route) */
static struct rdma_cm_id *client(const char *name, struct rdma_event_channel *ch, const char *ip, int port,
				 enum rdma_port_space ps)
{
	struct rdma_cm_id *id = new_id(name, ch, ps);

	if (id && resolve(name, id, NULL, ip, port, 1)) {
		destroy_id(name, id);
		return NULL;
	}
	return id;
}

static void qp_attr_init(struct ibv_qp_init_attr *a, enum ibv_qp_type t)
{
	memset(a, 0, sizeof(*a));
	a->qp_type = t;
	a->cap.max_send_wr = 4;
	a->cap.max_recv_wr = 4;
	a->cap.max_send_sge = 1;
	a->cap.max_recv_sge = 1;
}

/* rdma_create_qp(id, NULL, ...) with 4/4 work requests */
static int make_qp(const char *name, struct rdma_cm_id *id, enum ibv_qp_type t)
{
	struct ibv_qp_init_attr a;
	char label[64];

	qp_attr_init(&a, t);
	snprintf(label, sizeof(label), "%s: create_qp", name);
	return R(label, rdma_create_qp(id, NULL, &a));
}

static void drop_qp(struct rdma_cm_id *id)
{
	if (id && id->qp)
		rdma_destroy_qp(id);
}

/* private data pattern: seed, seed+1, ... */
static unsigned char *pattern(unsigned char *b, int n, int seed)
{
	int i;

	for (i = 0; i < n; i++)
		b[i] = seed + i;
	return b;
}

static void conn_param(struct rdma_conn_param *p, const void *pd, int len)
{
	memset(p, 0, sizeof(*p));
	p->private_data = pd;
	p->private_data_len = len;
	p->responder_resources = 1;
	p->initiator_depth = 1;
	p->retry_count = 7;
	p->rnr_retry_count = 7;
}

/* ---- a message over the QPs ---- */

struct msgbuf {
	struct ibv_mr *mr;
	char data[256];
};

static struct msgbuf *msg_new(const char *label, struct ibv_pd *pd)
{
	struct msgbuf *m = calloc(1, sizeof(*m));

	m->mr = ibv_reg_mr(pd, m->data, sizeof(m->data), IBV_ACCESS_LOCAL_WRITE);
	if (!m->mr) {
		P("  %s: reg_mr failed errno=%s\n", label, en(errno));
		free(m);
		return NULL;
	}
	return m;
}

static void msg_free(struct msgbuf *m)
{
	if (m) {
		ibv_dereg_mr(m->mr);
		free(m);
	}
}

static void post_recv(const char *label, struct ibv_qp *qp, struct msgbuf *m)
{
	struct ibv_sge sge = { (uintptr_t)m->data, sizeof(m->data), m->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *bad;

	memset(m->data, 0, sizeof(m->data));
	P("  %s: %s\n", label, ibv_post_recv(qp, &wr, &bad) ? "failed" : "ok");
}

/* send text; ah != NULL: UD to (qpn, qkey) */
static void post_send(const char *label, struct ibv_qp *qp, struct msgbuf *m, const char *text, struct ibv_ah *ah,
		      uint32_t qpn, uint32_t qkey)
{
	struct ibv_sge sge = { (uintptr_t)m->data, strlen(text) + 1, m->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	strcpy(m->data, text);
	if (ah) {
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = qpn;
		wr.wr.ud.remote_qkey = qkey;
	}
	P("  %s: %s\n", label, ibv_post_send(qp, &wr, &bad) ? "failed" : "ok");
}

/* one completion within ms; with m, the received text (after `skip`
 * bytes: 40 for the GRH of a UD receive) */
static void poll_cq(const char *label, struct ibv_cq *cq, int ms, struct msgbuf *m, int skip)
{
	struct timespec t0, t;
	struct ibv_wc wc;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		n = ibv_poll_cq(cq, 1, &wc);
		if (n)
			break;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > ms) {
			P("  %s: no completion within %d ms\n", label, ms);
			return;
		}
		usleep(1000);
	}
	if (n < 0) {
		P("  %s: poll_cq failed\n", label);
		return;
	}
	P("  %s: status=%s opcode=%d wr_id=%llu", label, ibv_wc_status_str(wc.status), wc.opcode,
	  (unsigned long long)wc.wr_id);
	if (m && wc.status == IBV_WC_SUCCESS)
		P(" byte_len=%u grh=%s src_qp=%s text='%.*s'", wc.byte_len, wc.wc_flags & IBV_WC_GRH ? "yes" : "no",
		  qpn_str(wc.src_qp), (int)(wc.byte_len > (unsigned)skip ? wc.byte_len - skip : 0), m->data + skip);
	P("\n");
}

static void query_qp_state(const char *label, struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	memset(&a, 0, sizeof(a));
	if (ibv_query_qp(qp, &a, IBV_QP_STATE | IBV_QP_QKEY | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
			 &ia)) {
		P("  %s: query_qp failed\n", label);
		return;
	}
	P("  %s: state=%d qkey=%#x pkey_index=%u port=%u access=%#x\n", label, a.qp_state, a.qkey, a.pkey_index,
	  a.port_num, a.qp_access_flags);
}

/* ---- an RC connection between a listener and a client ---- */

struct conn {
	struct rdma_event_channel *sch, *cch; /* server (listener, child), client */
	struct rdma_cm_id *lid, *sid, *cid;   /* listener, accepted child, client */
	struct msgbuf *sm, *cm;
};

/*
 * listener on ip:port, client connects with `cpd` bytes of private data,
 * the server gets the request, makes its QP, posts a receive, accepts with
 * `spd` bytes; ESTABLISHED on both. Returns 0 when connected.
 */
static int rc_connect(struct conn *c, const char *ip, int port, int cpd, int spd)
{
	unsigned char pd[256], pd2[256];
	struct rdma_conn_param p;

	memset(c, 0, sizeof(*c));
	if (!(c->sch = new_channel("server channel")) || !(c->cch = new_channel("client channel")))
		return -1;
	if (!(c->lid = listener("listener", c->sch, ip, port, RDMA_PS_TCP, 4)))
		return -1;
	if (!(c->cid = client("client", c->cch, ip, port, RDMA_PS_TCP)))
		return -1;
	if (make_qp("client", c->cid, IBV_QPT_RC))
		return -1;
	conn_param(&p, cpd ? pattern(pd, cpd, 1) : NULL, cpd);
	if (R("client: connect", rdma_connect(c->cid, &p)))
		return -1;
	if (get_ev("server: request", c->sch, EV_WAIT, &c->sid, "server") != RDMA_CM_EVENT_CONNECT_REQUEST)
		return -1;
	print_id(c->sid);
	if (make_qp("server", c->sid, IBV_QPT_RC))
		return -1;
	if (!(c->sm = msg_new("server", c->sid->pd)) || !(c->cm = msg_new("client", c->cid->pd)))
		return -1;
	post_recv("server: post_recv", c->sid->qp, c->sm);
	conn_param(&p, spd ? pattern(pd2, spd, 0xa1) : NULL, spd);
	if (R("server: accept", rdma_accept(c->sid, &p)))
		return -1;
	if (get_ev("client: established", c->cch, EV_WAIT, NULL, NULL) != RDMA_CM_EVENT_ESTABLISHED)
		return -1;
	if (get_ev("server: established", c->sch, EV_WAIT, NULL, NULL) != RDMA_CM_EVENT_ESTABLISHED)
		return -1;
	return 0;
}

static void rc_message(struct conn *c, const char *text)
{
	post_send("client: post_send", c->cid->qp, c->cm, text, NULL, 0, 0);
	poll_cq("client: send completion", c->cid->send_cq, 5000, NULL, 0);
	poll_cq("server: recv completion", c->sid->recv_cq, 5000, c->sm, 0);
}

static void rc_teardown(struct conn *c)
{
	msg_free(c->sm);
	msg_free(c->cm);
	drop_qp(c->sid);
	drop_qp(c->cid);
	destroy_id("server", c->sid);
	destroy_id("client", c->cid);
	destroy_id("listener", c->lid);
	if (c->sch)
		rdma_destroy_event_channel(c->sch);
	if (c->cch)
		rdma_destroy_event_channel(c->cch);
}

/* ---- cases: RC connections ---- */

/*
 * Connect with cpd bytes of private data, accept with spd bytes, a
 * message, disconnect from the client (or the server), DISCONNECTED on
 * both; with timewait, wait for TIMEWAIT_EXIT on both.
 */
static void rc_case(const char *ip, int port, int cpd, int spd, int server_disconnects, int timewait)
{
	struct conn c;

	if (rc_connect(&c, ip, port, cpd, spd) == 0) {
		print_id(c.cid);
		print_id(c.sid);
		rc_message(&c, "hello over RC");
		/* the side that starts sends a DREQ; the other gets DISCONNECTED
		 * and answers with its own rdma_disconnect (the DREP), which
		 * brings DISCONNECTED to the first */
		if (server_disconnects) {
			R("server: disconnect", rdma_disconnect(c.sid));
			get_ev("client: disconnected", c.cch, EV_WAIT, NULL, NULL);
			query_qp_state("server qp after its disconnect", c.sid->qp);
			query_qp_state("client qp after DISCONNECTED", c.cid->qp);
			R("client: disconnect", rdma_disconnect(c.cid));
			get_ev("server: disconnected", c.sch, EV_WAIT, NULL, NULL);
		} else {
			R("client: disconnect", rdma_disconnect(c.cid));
			get_ev("server: disconnected", c.sch, EV_WAIT, NULL, NULL);
			query_qp_state("client qp after its disconnect", c.cid->qp);
			query_qp_state("server qp after DISCONNECTED", c.sid->qp);
			R("server: disconnect", rdma_disconnect(c.sid));
			get_ev("client: disconnected", c.cch, EV_WAIT, NULL, NULL);
		}
		R("client: disconnect again", rdma_disconnect(c.cid));
		no_ev("client: after disconnect again", c.cch, 300);
		if (timewait) {
			get_ev("client: timewait", c.cch, EV_WAIT, NULL, NULL);
			get_ev("server: timewait", c.sch, EV_WAIT, NULL, NULL);
		}
		R("client: destroy_qp", (rdma_destroy_qp(c.cid), 0));
		print_id(c.cid);
	}
	rc_teardown(&c);
}

static void c_rc_v4_pd0(void) { rc_case("192.0.2.1", 7501, 0, 0, 0, 0); }
static void c_rc_v4_pd1(void) { rc_case("192.0.2.1", 7502, 1, 1, 1, 0); }
static void c_rc_v4_pd56(void) { rc_case("192.0.2.1", 7503, 56, 196, 0, 1); }
static void c_rc_v6(void) { rc_case("fd00::1", 7504, 8, 8, 1, 0); }

/* connect/accept with NULL param (the QP supplies qp_num, defaults for the
 * rest: depth/resources = device maximum), and 0xff (RDMA_MAX_*) */
static void c_rc_defaults(void)
{
	struct rdma_event_channel *sch = new_channel("server channel"), *cch = new_channel("client channel");
	struct rdma_cm_id *lid, *cid, *sid = NULL;
	struct rdma_conn_param p;

	if (!sch || !cch || !(lid = listener("listener", sch, "192.0.2.1", 7505, RDMA_PS_TCP, 0)))
		return;
	if ((cid = client("client", cch, "192.0.2.1", 7505, RDMA_PS_TCP)) && !make_qp("client", cid, IBV_QPT_RC) &&
	    !R("client: connect NULL param", rdma_connect(cid, NULL)) &&
	    get_ev("server: request", sch, EV_WAIT, &sid, "server") == RDMA_CM_EVENT_CONNECT_REQUEST &&
	    !make_qp("server", sid, IBV_QPT_RC) && !R("server: accept NULL param", rdma_accept(sid, NULL))) {
		get_ev("client: established", cch, EV_WAIT, NULL, NULL);
		get_ev("server: established", sch, EV_WAIT, NULL, NULL);
		R("client: disconnect", rdma_disconnect(cid));
		get_ev("server: disconnected", sch, EV_WAIT, NULL, NULL);
		R("server: disconnect", rdma_disconnect(sid));
		get_ev("client: disconnected", cch, EV_WAIT, NULL, NULL);
	}
	drop_qp(sid);
	drop_qp(cid);
	destroy_id("server", sid);
	destroy_id("client", cid);
	sid = NULL;
	/* the same with 0xff for depth and resources */
	if ((cid = client("client2", cch, "192.0.2.1", 7505, RDMA_PS_TCP)) && !make_qp("client2", cid, IBV_QPT_RC)) {
		conn_param(&p, NULL, 0);
		p.responder_resources = RDMA_MAX_RESP_RES;
		p.initiator_depth = RDMA_MAX_INIT_DEPTH;
		if (!R("client2: connect 0xff", rdma_connect(cid, &p)) &&
		    get_ev("server2: request", sch, EV_WAIT, &sid, "server2") == RDMA_CM_EVENT_CONNECT_REQUEST &&
		    !make_qp("server2", sid, IBV_QPT_RC) && !R("server2: accept 0xff", rdma_accept(sid, &p))) {
			get_ev("client2: established", cch, EV_WAIT, NULL, NULL);
			get_ev("server2: established", sch, EV_WAIT, NULL, NULL);
			R("server2: disconnect", rdma_disconnect(sid));
			get_ev("client2: disconnected", cch, EV_WAIT, NULL, NULL);
			R("client2: disconnect", rdma_disconnect(cid));
			get_ev("server2: disconnected", sch, EV_WAIT, NULL, NULL);
		}
	}
	drop_qp(sid);
	drop_qp(cid);
	destroy_id("server2", sid);
	destroy_id("client2", cid);
	destroy_id("listener", lid);
	rdma_destroy_event_channel(sch);
	rdma_destroy_event_channel(cch);
}

/* ---- rdma_create_qp ---- */

static void print_qp_attr(struct ibv_qp_init_attr *a, struct rdma_cm_id *id)
{
	P("    attr: send_cq=%s recv_cq=%s srq=%s qp_type=%d sq_sig_all=%d cap=%u/%u/%u/%u/%u\n",
	  !a->send_cq ? "NULL" : a->send_cq == id->send_cq ? "id->send_cq" : "other",
	  !a->recv_cq ? "NULL" : a->recv_cq == id->recv_cq ? "id->recv_cq" : "other", a->srq ? "set" : "NULL",
	  a->qp_type, a->sq_sig_all, a->cap.max_send_wr, a->cap.max_recv_wr, a->cap.max_send_sge,
	  a->cap.max_recv_sge, a->cap.max_inline_data);
}

static void c_create_qp(void)
{
	struct rdma_event_channel *ch = new_channel("channel");
	struct rdma_cm_id *id, *uid = NULL, *fresh;
	struct ibv_qp_init_attr a;
	struct ibv_cq *cq;

	if (!ch || !(id = new_id("rc", ch, RDMA_PS_TCP)))
		return;
	if (resolve("rc", id, NULL, "192.0.2.1", 7510, 0))
		goto out;
	qp_attr_init(&a, IBV_QPT_RC);
	R("create_qp NULL pd", rdma_create_qp(id, NULL, &a));
	print_qp_attr(&a, id);
	print_id(id);
	query_qp_state("rc qp", id->qp);
	R("create_qp again", rdma_create_qp(id, NULL, &a));
	print_id(id);
	R("destroy_qp", (rdma_destroy_qp(id), 0));
	print_id(id);
	/* the application's CQ for both directions: the library makes none */
	cq = ibv_create_cq(id->verbs, 8, NULL, NULL, 0);
	qp_attr_init(&a, IBV_QPT_RC);
	a.send_cq = a.recv_cq = cq;
	a.sq_sig_all = 1;
	R("create_qp with the application's CQ and id->pd", rdma_create_qp(id, id->pd, &a));
	print_qp_attr(&a, id);
	print_id(id);
	R("destroy_qp", (rdma_destroy_qp(id), 0));
	if (cq)
		ibv_destroy_cq(cq);
	/* only a send CQ of the application: the library makes the receive CQ */
	cq = ibv_create_cq(id->verbs, 8, NULL, NULL, 0);
	qp_attr_init(&a, IBV_QPT_RC);
	a.send_cq = cq;
	R("create_qp with an application send CQ", rdma_create_qp(id, NULL, &a));
	print_qp_attr(&a, id);
	print_id(id);
	R("destroy_qp", (rdma_destroy_qp(id), 0));
	print_id(id);
	if (cq)
		ibv_destroy_cq(cq);
	/* rdma_create_qp_ex without the PD bit: the library adds it */
	{
		struct ibv_qp_init_attr_ex ax;

		memset(&ax, 0, sizeof(ax));
		ax.qp_type = IBV_QPT_RC;
		ax.cap.max_send_wr = ax.cap.max_recv_wr = 2;
		ax.cap.max_send_sge = ax.cap.max_recv_sge = 1;
		R("create_qp_ex without a PD", rdma_create_qp_ex(id, &ax));
		P("    attr_ex: comp_mask=%#x pd is id->pd=%s send_cq=%s recv_cq=%s cap=%u/%u\n", ax.comp_mask,
		  ax.pd == id->pd ? "yes" : "no", ax.send_cq == id->send_cq ? "id->send_cq" : "other",
		  ax.recv_cq == id->recv_cq ? "id->recv_cq" : "other", ax.cap.max_send_wr, ax.cap.max_recv_wr);
		drop_qp(id);
	}
	/* a PD of another device */
	{
		struct ibv_device **l = ibv_get_device_list(NULL);
		struct ibv_context *ctx = NULL;
		struct ibv_pd *opd = NULL;
		int i;

		for (i = 0; l && l[i] && !ctx; i++)
			if (strcmp(ibv_get_device_name(l[i]), ibv_get_device_name(id->verbs->device)))
				ctx = ibv_open_device(l[i]);
		if (ctx && (opd = ibv_alloc_pd(ctx))) {
			qp_attr_init(&a, IBV_QPT_RC);
			R("create_qp with a PD of another device", rdma_create_qp(id, opd, &a));
			print_id(id);
			drop_qp(id);
			ibv_dealloc_pd(opd);
		} else {
			P("  create_qp with a PD of another device: (no other device)\n");
		}
		if (ctx)
			ibv_close_device(ctx);
		if (l)
			ibv_free_device_list(l);
	}
	/* UD on a PS_UDP id: the library moves the QP to RTS */
	if ((uid = new_id("ud", ch, RDMA_PS_UDP)) && !resolve("ud", uid, NULL, "192.0.2.1", 7510, 0)) {
		qp_attr_init(&a, IBV_QPT_UD);
		R("create_qp UD", rdma_create_qp(uid, NULL, &a));
		print_qp_attr(&a, uid);
		print_id(uid);
		if (uid->qp)
			query_qp_state("ud qp", uid->qp);
		drop_qp(uid);
	}
	destroy_id("ud", uid);
	/* an id without a device (no PD) */
	if ((fresh = new_id("fresh", ch, RDMA_PS_TCP))) {
		qp_attr_init(&a, IBV_QPT_RC);
		IN_CHILD("create_qp on an id without a device", rdma_create_qp(fresh, NULL, &a));
		destroy_id("fresh", fresh);
	}
out:
	destroy_id("rc", id);
	rdma_destroy_event_channel(ch);
}

/* ---- private data limits ---- */

/* REQ: 56 bytes for the user on PS_TCP (92 minus the 36-byte CMA header);
 * REP 196; a failing accept makes the kernel reject the request. */
static void c_pd_limits(void)
{
	struct rdma_event_channel *sch = new_channel("server channel"), *cch = new_channel("client channel");
	struct rdma_cm_id *lid, *cid, *sid = NULL;
	struct rdma_conn_param p;
	unsigned char pd[256];

	if (!sch || !cch || !(lid = listener("listener", sch, "192.0.2.1", 7511, RDMA_PS_TCP, 4)))
		return;
	if ((cid = client("client", cch, "192.0.2.1", 7511, RDMA_PS_TCP)) && !make_qp("client", cid, IBV_QPT_RC)) {
		conn_param(&p, pattern(pd, 255, 1), 255);
		R("client: connect pd 255", rdma_connect(cid, &p));
		p.private_data_len = 57;
		R("client: connect pd 57", rdma_connect(cid, &p));
		p.private_data_len = 56;
		if (!R("client: connect pd 56", rdma_connect(cid, &p)) &&
		    get_ev("server: request", sch, EV_WAIT, &sid, "server") == RDMA_CM_EVENT_CONNECT_REQUEST &&
		    !make_qp("server", sid, IBV_QPT_RC)) {
			conn_param(&p, pattern(pd, 255, 0x31), 255);
			R("server: accept pd 255", rdma_accept(sid, &p));
			query_qp_state("server qp after failed accept", sid->qp);
			get_ev("client: after failed accept", cch, EV_WAIT, NULL, NULL);
			no_ev("server: after failed accept", sch, 300);
		}
	}
	drop_qp(sid);
	drop_qp(cid);
	destroy_id("server", sid);
	destroy_id("client", cid);
	sid = NULL;
	if ((cid = client("client2", cch, "192.0.2.1", 7511, RDMA_PS_TCP)) && !make_qp("client2", cid, IBV_QPT_RC)) {
		conn_param(&p, NULL, 10);
		p.retry_count = 9;
		p.rnr_retry_count = 9;
		p.flow_control = 1;
		if (!R("client2: connect private_data NULL len 10, retry 9, rnr_retry 9, flow_control 1",
		       rdma_connect(cid, &p)) &&
		    get_ev("server2: request", sch, EV_WAIT, &sid, "server2") == RDMA_CM_EVENT_CONNECT_REQUEST &&
		    !make_qp("server2", sid, IBV_QPT_RC)) {
			conn_param(&p, pattern(pd, 197, 0x31), 197);
			R("server2: accept pd 197", rdma_accept(sid, &p));
			get_ev("client2: after failed accept", cch, EV_WAIT, NULL, NULL);
		}
	}
	drop_qp(sid);
	drop_qp(cid);
	destroy_id("server2", sid);
	destroy_id("client2", cid);
	destroy_id("listener", lid);
	rdma_destroy_event_channel(sch);
	rdma_destroy_event_channel(cch);
}

/* ---- reject ---- */

static void reject_case(int port, int ece)
{
	struct rdma_event_channel *sch = new_channel("server channel"), *cch = new_channel("client channel");
	struct rdma_cm_id *lid, *cid, *sid = NULL;
	struct rdma_conn_param p;
	unsigned char pd[256];

	if (!sch || !cch || !(lid = listener("listener", sch, "192.0.2.1", port, RDMA_PS_TCP, 4)))
		return;
	if ((cid = client("client", cch, "192.0.2.1", port, RDMA_PS_TCP)) && !make_qp("client", cid, IBV_QPT_RC)) {
		conn_param(&p, pattern(pd, 4, 1), 4);
		if (!R("client: connect", rdma_connect(cid, &p)) &&
		    get_ev("server: request", sch, EV_WAIT, &sid, "server") == RDMA_CM_EVENT_CONNECT_REQUEST) {
			if (ece) {
				R("server: reject_ece pd 3", rdma_reject_ece(sid, pattern(pd, 3, 0x71), 3));
			} else {
				R("server: reject pd 149", rdma_reject(sid, pattern(pd, 149, 0x71), 149));
				R("server: reject pd 148", rdma_reject(sid, pattern(pd, 148, 0x71), 148));
			}
			get_ev("client: rejected", cch, EV_WAIT, NULL, NULL);
			query_qp_state("client qp after reject", cid->qp);
			print_id(cid);
			R("server: reject again", rdma_reject(sid, NULL, 0));
			p.qp_num = 0x123;
			R("server: accept after reject", rdma_accept(sid, &p));
			no_ev("server: after reject", sch, 300);
		}
	}
	drop_qp(cid);
	destroy_id("server", sid);
	destroy_id("client", cid);
	destroy_id("listener", lid);
	rdma_destroy_event_channel(sch);
	rdma_destroy_event_channel(cch);
}

static void c_reject(void) { reject_case(7512, 0); }
static void c_reject_ece(void) { reject_case(7513, 1); }

/* ---- no listener ---- */

static void c_no_listener(void)
{
	struct rdma_event_channel *ch = new_channel("channel");
	struct rdma_cm_id *cid, *uid;
	struct rdma_conn_param p;
	unsigned char pd[8];

	if (!ch)
		return;
	if ((cid = client("rc", ch, "192.0.2.1", 7599, RDMA_PS_TCP)) && !make_qp("rc", cid, IBV_QPT_RC)) {
		conn_param(&p, pattern(pd, 8, 1), 8);
		if (!R("rc: connect", rdma_connect(cid, &p))) {
			get_ev("rc: event", ch, EV_WAIT, NULL, NULL);
			query_qp_state("rc qp after the event", cid->qp);
		}
		print_id(cid);
		drop_qp(cid);
	}
	destroy_id("rc", cid);
	if ((uid = client("ud", ch, "192.0.2.1", 7599, RDMA_PS_UDP)) && !make_qp("ud", uid, IBV_QPT_UD)) {
		conn_param(&p, pattern(pd, 8, 1), 8);
		if (!R("ud: connect", rdma_connect(uid, &p)))
			get_ev("ud: event", ch, EV_WAIT, NULL, NULL);
		drop_qp(uid);
	}
	destroy_id("ud", uid);
	rdma_destroy_event_channel(ch);
}

/* ---- UD (SIDR) ---- */

static void ud_case(int port, int limits)
{
	struct rdma_event_channel *sch = new_channel("server channel"), *cch = new_channel("client channel");
	struct rdma_cm_id *lid, *cid = NULL, *sid = NULL;
	struct msgbuf *sm = NULL, *cm = NULL;
	struct rdma_cm_event *ev;
	struct rdma_conn_param p;
	unsigned char pd[256];
	struct ibv_ah_attr ah_attr;
	uint32_t qpn = 0, qkey = 0;
	struct ibv_ah *ah;

	if (!sch || !cch || !(lid = listener("listener", sch, "192.0.2.1", port, RDMA_PS_UDP, 4)))
		return;
	if (!(cid = client("client", cch, "192.0.2.1", port, RDMA_PS_UDP)) || make_qp("client", cid, IBV_QPT_UD))
		goto out;
	conn_param(&p, pattern(pd, 255, 1), 255);
	if (limits) {
		R("client: connect pd 255", rdma_connect(cid, &p));
		p.private_data_len = 181;
		R("client: connect pd 181", rdma_connect(cid, &p));
		p.private_data_len = 180;
	} else {
		p.private_data_len = 12;
	}
	if (R("client: connect", rdma_connect(cid, &p)) ||
	    get_ev("server: request", sch, EV_WAIT, &sid, "server") != RDMA_CM_EVENT_CONNECT_REQUEST)
		goto out;
	print_id(sid);
	if (make_qp("server", sid, IBV_QPT_UD) || !(sm = msg_new("server", sid->pd)) ||
	    !(cm = msg_new("client", cid->pd)))
		goto out;
	post_recv("server: post_recv", sid->qp, sm);
	conn_param(&p, pattern(pd, 255, 0xa1), limits ? 137 : 5);
	if (limits) {
		R("server: accept pd 137", rdma_accept(sid, &p));
		get_ev("client: after failed accept", cch, EV_WAIT, NULL, NULL);
		goto out;
	}
	R("server: accept", rdma_accept(sid, &p));
	/* the ESTABLISHED event carries the server's QP and an AH */
	{
		struct pollfd pfd = { .fd = cch->fd, .events = POLLIN };
		if (poll(&pfd, 1, EV_WAIT) != 1) {
			P("  client: established: no event within %d ms\n", EV_WAIT);
			goto out;
		}
	}
	if (R("client: established", rdma_get_cm_event(cch, &ev)))
		goto out;
	print_event(ev);
	ah_attr = ev->param.ud.ah_attr;
	qpn = ev->param.ud.qp_num;
	qkey = ev->param.ud.qkey;
	R("ack", rdma_ack_cm_event(ev));
	no_ev("server: after accept", sch, 300);
	print_id(cid);
	ah = ibv_create_ah(cid->pd, &ah_attr);
	P("  client: create_ah from the event: %s\n", ah ? "ok" : "failed");
	if (ah) {
		post_send("client: post_send", cid->qp, cm, "hello over UD", ah, qpn, qkey);
		poll_cq("client: send completion", cid->send_cq, 5000, NULL, 0);
		poll_cq("server: recv completion", sid->recv_cq, 5000, sm, 40);
		ibv_destroy_ah(ah);
	}
	R("client: disconnect (UD)", rdma_disconnect(cid));
	no_ev("client: after disconnect", cch, 300);
out:
	msg_free(sm);
	msg_free(cm);
	drop_qp(sid);
	drop_qp(cid);
	destroy_id("server", sid);
	destroy_id("client", cid);
	destroy_id("listener", lid);
	rdma_destroy_event_channel(sch);
	rdma_destroy_event_channel(cch);
}

static void c_ud(void) { ud_case(7520, 0); }
static void c_ud_limits(void) { ud_case(7521, 1); }

/* a SIDR request rejected: UNREACHABLE with the reject's private data */
static void c_ud_reject(void)
{
	struct rdma_event_channel *sch = new_channel("server channel"), *cch = new_channel("client channel");
	struct rdma_cm_id *lid, *cid = NULL, *sid = NULL;
	struct rdma_conn_param p;
	unsigned char pd[256];

	if (!sch || !cch || !(lid = listener("listener", sch, "192.0.2.1", 7522, RDMA_PS_UDP, 4)))
		return;
	if ((cid = client("client", cch, "192.0.2.1", 7522, RDMA_PS_UDP)) && !make_qp("client", cid, IBV_QPT_UD)) {
		conn_param(&p, pattern(pd, 4, 1), 4);
		if (!R("client: connect", rdma_connect(cid, &p)) &&
		    get_ev("server: request", sch, EV_WAIT, &sid, "server") == RDMA_CM_EVENT_CONNECT_REQUEST) {
			R("server: reject pd 137", rdma_reject(sid, pattern(pd, 137, 0x71), 137));
			R("server: reject pd 136", rdma_reject(sid, pattern(pd, 136, 0x71), 136));
			get_ev("client: rejected", cch, EV_WAIT, NULL, NULL);
			query_qp_state("client qp after the reject", cid->qp);
		}
		drop_qp(cid);
	}
	destroy_id("server", sid);
	destroy_id("client", cid);
	destroy_id("listener", lid);
	rdma_destroy_event_channel(sch);
	rdma_destroy_event_channel(cch);
}

/* rdma_create_ep failing: no route, the port taken, a QP the device
 * cannot make; and the qp_type it takes from the addrinfo */
static void c_ep_errors(void)
{
	struct rdma_addrinfo hints, *res = NULL, *res2 = NULL;
	static struct rdma_cm_id sentinel;
	struct rdma_cm_id *id = &sentinel, *l1 = NULL;
	struct ibv_qp_init_attr attr;

	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	if (!R("getaddrinfo 198.51.100.1 (no route)", rdma_getaddrinfo("198.51.100.1", "7533", &hints, &res))) {
		R("create_ep to no route", rdma_create_ep(&id, res, NULL, NULL));
		P("    id %s\n", id == &sentinel ? "untouched" : "written");
		rdma_freeaddrinfo(res);
		res = NULL;
	}
	hints.ai_flags = RAI_PASSIVE;
	if (!R("getaddrinfo passive", rdma_getaddrinfo("192.0.2.1", "7534", &hints, &res))) {
		R("create_ep passive 1", rdma_create_ep(&l1, res, NULL, NULL));
		id = &sentinel;
		R("create_ep passive 2, same port", rdma_create_ep(&id, res, NULL, NULL));
		P("    id %s\n", id == &sentinel ? "untouched" : "written");
		if (id != &sentinel)
			rdma_destroy_ep(id);
		if (l1)
			R("destroy_ep passive 1", (rdma_destroy_ep(l1), 0));
		rdma_freeaddrinfo(res);
	}
	hints.ai_flags = 0;
	if (!R("getaddrinfo active", rdma_getaddrinfo("192.0.2.1", "7534", &hints, &res2))) {
		qp_attr_init(&attr, IBV_QPT_UD);
		id = &sentinel;
		if (!R("create_ep with a UD qp_type in the attributes", rdma_create_ep(&id, res2, NULL, &attr))) {
			name_id(id, "ep");
			P("    attr.qp_type=%d\n", attr.qp_type);
			print_id(id);
			R("destroy_ep", (rdma_destroy_ep(id), 0));
		}
		qp_attr_init(&attr, IBV_QPT_RC);
		attr.cap.max_send_wr = 1 << 24;
		id = &sentinel;
		R("create_ep with max_send_wr 1<<24", rdma_create_ep(&id, res2, NULL, &attr));
		P("    id %s\n", id == &sentinel ? "untouched" : "written");
		rdma_freeaddrinfo(res2);
	}
}

/* ---- sync endpoints: rdma_getaddrinfo, rdma_create_ep, rdma_get_request ---- */

static sem_t sem_listening, sem_sent, sem_disc;
static FILE *thread_file[2];

/*
 * The server side: rdma_getaddrinfo (passive), rdma_create_ep with QP
 * attributes (kept for rdma_get_request), listen, get_request (makes the
 * QP), accept (blocks until ESTABLISHED), a message. It disconnects only
 * after the client's DREQ is queued on its private channel (the fd is
 * polled, nothing is read), so the order of the two disconnects is fixed.
 */
static void *ep_server(void *arg)
{
	struct rdma_addrinfo hints, *res = NULL;
	struct rdma_cm_id *lid = NULL, *id = NULL;
	struct ibv_qp_init_attr attr;
	struct msgbuf *m = NULL;

	(void)arg;
	out_f = thread_file[0];
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_PASSIVE;
	hints.ai_port_space = RDMA_PS_TCP;
	if (R("server: getaddrinfo", rdma_getaddrinfo("192.0.2.1", "7530", &hints, &res)))
		goto out;
	qp_attr_init(&attr, IBV_QPT_RC);
	attr.sq_sig_all = 1;
	if (R("server: create_ep", rdma_create_ep(&lid, res, NULL, &attr)))
		goto out;
	name_id(lid, "listener");
	print_id(lid);
	if (R("server: listen", rdma_listen(lid, 0)))
		goto out;
	sem_post(&sem_listening);
	if (R("server: get_request", rdma_get_request(lid, &id)))
		goto out;
	name_id(id, "server");
	if (id->event)
		print_event(id->event);
	print_id(id);
	if (id->qp && (m = msg_new("server", id->pd)))
		post_recv("server: post_recv", id->qp, m);
	if (R("server: accept", rdma_accept(id, NULL)) == 0) {
		P("    id->event after accept: %s\n", id->event ? rdma_event_str(id->event->event) : "NULL");
		if (m)
			poll_cq("server: recv completion", id->recv_cq, 5000, m, 0);
		print_id(id);
	}
	sem_post(&sem_sent);
	sem_wait(&sem_disc);
	{
		struct pollfd pfd = { .fd = id->channel->fd, .events = POLLIN };
		P("  server: the client's disconnect %s\n",
		  poll(&pfd, 1, EV_WAIT) == 1 ? "is queued" : "did not come");
	}
	R("server: disconnect", rdma_disconnect(id));
	if (id->event)
		print_event(id->event);
out:
	sem_post(&sem_listening);
	sem_post(&sem_sent);
	msg_free(m);
	if (id)
		R("server: destroy_ep", (rdma_destroy_ep(id), 0));
	if (lid)
		R("listener: destroy_ep", (rdma_destroy_ep(lid), 0));
	if (res)
		rdma_freeaddrinfo(res);
	return NULL;
}

static void *ep_client(void *arg)
{
	struct rdma_addrinfo hints, *res = NULL;
	struct rdma_cm_id *id = NULL;
	struct ibv_qp_init_attr attr;
	struct msgbuf *m = NULL;

	(void)arg;
	out_f = thread_file[1];
	sem_wait(&sem_listening);
	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	if (R("client: getaddrinfo", rdma_getaddrinfo("192.0.2.1", "7530", &hints, &res)))
		goto out;
	qp_attr_init(&attr, IBV_QPT_RC);
	attr.sq_sig_all = 1;
	if (R("client: create_ep", rdma_create_ep(&id, res, NULL, &attr)))
		goto out;
	name_id(id, "client");
	print_qp_attr(&attr, id);
	print_id(id);
	if (R("client: connect", rdma_connect(id, NULL)) == 0) {
		if (id->event)
			print_event(id->event);
		if ((m = msg_new("client", id->pd))) {
			post_send("client: post_send", id->qp, m, "hello over an endpoint", NULL, 0, 0);
			poll_cq("client: send completion", id->send_cq, 5000, NULL, 0);
		}
		print_id(id);
	}
	sem_wait(&sem_sent);
	sem_post(&sem_disc);
	R("client: disconnect", rdma_disconnect(id));
	if (id->event)
		print_event(id->event);
out:
	sem_post(&sem_disc);
	msg_free(m);
	if (id)
		R("client: destroy_ep", (rdma_destroy_ep(id), 0));
	if (res)
		rdma_freeaddrinfo(res);
	return NULL;
}

/*
 * Two threads, each printing into its own file; their outputs are printed
 * one after the other once both ended. A thread still running after
 * `secs` (a hang) is reported, and the case ends there.
 */
static void run_threads(void *(*a)(void *), void *(*b)(void *), int secs)
{
	const char *who[2] = { "server", "client" };
	pthread_t t[2];
	struct timespec dl;
	int i, hung = 0;

	sem_init(&sem_listening, 0, 0);
	sem_init(&sem_sent, 0, 0);
	sem_init(&sem_disc, 0, 0);
	for (i = 0; i < 2; i++) {
		thread_file[i] = tmpfile();
		setvbuf(thread_file[i], NULL, _IOLBF, 0);
	}
	pthread_create(&t[0], NULL, a, NULL);
	pthread_create(&t[1], NULL, b, NULL);
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += secs;
	for (i = 0; i < 2; i++) {
		int done = pthread_timedjoin_np(t[i], NULL, &dl) == 0;
		char buf[4096];
		ssize_t n;
		off_t off = 0;

		if (done)
			fflush(thread_file[i]);
		while ((n = pread(fileno(thread_file[i]), buf, sizeof(buf), off)) > 0) {
			fwrite(buf, 1, n, stdout);
			off += n;
		}
		if (!done) {
			printf("  [%s thread still running after %d s: hung]\n", who[i], secs);
			hung = 1;
		}
	}
	if (hung) {
		fflush(stdout);
		_exit(0);
	}
	fclose(thread_file[0]);
	fclose(thread_file[1]);
}

static void c_ep_sync(void)
{
	struct rdma_cm_id *a, *l;
	struct rdma_event_channel *ch = new_channel("channel");

	run_threads(ep_server, ep_client, 25);
	/* rdma_get_request needs a sync listener */
	if (ch && (a = new_id("async", ch, RDMA_PS_TCP))) {
		R("get_request on an async id", rdma_get_request(a, &l));
		destroy_id("async", a);
	}
	if (ch)
		rdma_destroy_event_channel(ch);
}

/*
 * ai_connect: data the endpoint puts in front of the user's private data
 * on its first connect (rdma_create_ep keeps a copy). The server prints
 * what it received and rejects. With 200 + 56 bytes the sum is 256: the
 * reference library's u8 length wraps to 0 (upstream bug, reference §6
 * #12: no bound on the sum).
 */
static int aic_len, aic_user;
static void *aic_client(void *arg)
{
	struct rdma_addrinfo hints, *res = NULL, copy;
	struct rdma_cm_id *id = NULL;
	struct rdma_conn_param p;
	unsigned char aic[256], pd[256];
	(void)arg;
	out_f = thread_file[1];
	sem_wait(&sem_listening);
	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	if (R("client: getaddrinfo", rdma_getaddrinfo("192.0.2.1", "7531", &hints, &res)))
		goto out;
	copy = *res;
	copy.ai_connect = pattern(aic, aic_len, 0x41);
	copy.ai_connect_len = aic_len;
	copy.ai_next = NULL;
	if (R("client: create_ep with ai_connect", rdma_create_ep(&id, &copy, NULL, NULL)))
		goto out;
	name_id(id, "client");
	conn_param(&p, pattern(pd, aic_user, 1), aic_user);
	p.qp_num = 0x123; /* no QP: this endpoint only talks to the CM */
	R("client: connect", rdma_connect(id, &p));
	/* one line, so that a documented difference is one line */
	if (id->event)
		P("  client: id->event after connect: %s status=%d\n", rdma_event_str(id->event->event),
		  id->event->status);
	else
		P("  client: id->event after connect: NULL\n");
out:
	sem_post(&sem_sent);
	if (id)
		R("client: destroy_ep", (rdma_destroy_ep(id), 0));
	if (res)
		rdma_freeaddrinfo(res);
	return NULL;
}

static void *aic_server(void *arg)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *lid = NULL, *sid = NULL;
	struct pollfd pfd;
	struct rdma_cm_event *ev;
	(void)arg;
	out_f = thread_file[0];
	if (!(ch = new_channel("server channel")) || !(lid = listener("listener", ch, "192.0.2.1", 7531, RDMA_PS_TCP, 4)))
		goto out;
	sem_post(&sem_listening);
	pfd.fd = ch->fd;
	pfd.events = POLLIN;
	if (poll(&pfd, 1, 4000) != 1) {
		P("  server request: none within 4000 ms\n");
		goto out;
	}
	if (rdma_get_cm_event(ch, &ev)) {
		P("  server request: get_cm_event failed errno=%s\n", en(errno));
		goto out;
	}
	name_id(ev->id, "server");
	sid = ev->id;
	/* one line, so that a documented difference is one line */
	P("  server request: %s len=%u private_data=", rdma_event_str(ev->event), ev->param.conn.private_data_len);
	print_pd(ev->param.conn.private_data, ev->param.conn.private_data_len);
	P("\n");
	rdma_ack_cm_event(ev);
	rdma_reject(sid, NULL, 0);
out:
	sem_post(&sem_listening);
	sem_wait(&sem_sent);
	/* quietly: whether there is a request to destroy differs */
	if (sid)
		rdma_destroy_id(sid);
	destroy_id("listener", lid);
	if (ch)
		rdma_destroy_event_channel(ch);
	return NULL;
}

static void c_ep_ai_connect(void)
{
	aic_len = 8;
	aic_user = 8;
	run_threads(aic_server, aic_client, 25);
}

static void c_ep_ai_connect_wrap(void)
{
	aic_len = 200;
	aic_user = 56;
	run_threads(aic_server, aic_client, 25);
}

/* ---- rdma_init_qp_attr ---- */

static void print_init_attr(const char *label, struct rdma_cm_id *id, enum ibv_qp_state s)
{
	struct ibv_qp_attr a;
	int mask = 0;

	memset(&a, 0, sizeof(a));
	a.qp_state = s;
	if (R(label, rdma_init_qp_attr(id, &a, &mask)))
		return;
	P("    mask=%#x state=%d pkey_index=%u port=%u access=%#x path_mtu=%d dest_qp=%s rq_psn=%s sq_psn=%s"
	  " max_dest_rd_atomic=%u max_rd_atomic=%u min_rnr_timer=%u timeout=%u retry=%u rnr_retry=%u qkey=%#x\n",
	  mask, a.qp_state, a.pkey_index, a.port_num, a.qp_access_flags, a.path_mtu, qpn_str(a.dest_qp_num),
	  a.rq_psn ? "set" : "0", a.sq_psn ? "set" : "0", a.max_dest_rd_atomic, a.max_rd_atomic, a.min_rnr_timer,
	  a.timeout, a.retry_cnt, a.rnr_retry, a.qkey);
	print_ah(&a.ah_attr);
}

static void c_init_qp_attr(void)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *fresh;
	struct conn c;

	if (rc_connect(&c, "192.0.2.1", 7540, 0, 0) == 0) {
		print_init_attr("client INIT", c.cid, IBV_QPS_INIT);
		print_init_attr("client RTR", c.cid, IBV_QPS_RTR);
		print_init_attr("client RTS", c.cid, IBV_QPS_RTS);
		print_init_attr("client SQD", c.cid, IBV_QPS_SQD);
		print_init_attr("server INIT", c.sid, IBV_QPS_INIT);
		print_init_attr("server RTR", c.sid, IBV_QPS_RTR);
		print_init_attr("server RTS", c.sid, IBV_QPS_RTS);
		print_init_attr("listener INIT", c.lid, IBV_QPS_INIT);
		print_init_attr("listener RTR", c.lid, IBV_QPS_RTR);
		/* calls in the wrong state on connected ids */
		R("client: connect again", rdma_connect(c.cid, NULL));
		R("server: accept again", rdma_accept(c.sid, NULL));
		R("server: reject after accept", rdma_reject(c.sid, NULL, 0));
		R("client: establish (has a QP)", rdma_establish(c.cid));
		R("client: listen", rdma_listen(c.cid, 1));
		R("listener: disconnect", rdma_disconnect(c.lid));
		R("server: notify COMM_EST", rdma_notify(c.sid, IBV_EVENT_COMM_EST));
		no_ev("client: after the calls", c.cch, 300);
		no_ev("server: after the calls", c.sch, 300);
	}
	rc_teardown(&c);
	if ((ch = new_channel("channel")) && (fresh = new_id("fresh", ch, RDMA_PS_UDP))) {
		print_init_attr("fresh id INIT", fresh, IBV_QPS_INIT);
		if (!resolve("fresh", fresh, NULL, "192.0.2.1", 7540, 0)) {
			print_init_attr("resolved UD id INIT", fresh, IBV_QPS_INIT);
			print_init_attr("resolved UD id RTR", fresh, IBV_QPS_RTR);
			print_init_attr("resolved UD id RTS", fresh, IBV_QPS_RTS);
		}
		destroy_id("fresh", fresh);
	}
	if (ch)
		rdma_destroy_event_channel(ch);
}

/* ---- rdma_establish with an application-owned QP; ECE ---- */

static void print_ece(const char *label, struct rdma_cm_id *id)
{
	struct ibv_ece e;

	memset(&e, 0x5a, sizeof(e));
	if (R(label, rdma_get_remote_ece(id, &e)) == 0)
		P("    vendor_id=%#x options=%#x comp_mask=%#x\n", e.vendor_id, e.options, e.comp_mask);
}

/* modify the application's QP with the attributes rdma_init_qp_attr gives */
static void app_modify(const char *label, struct rdma_cm_id *id, struct ibv_qp *qp, enum ibv_qp_state s)
{
	struct ibv_qp_attr a;
	int mask = 0, r;

	memset(&a, 0, sizeof(a));
	a.qp_state = s;
	if (R(label, rdma_init_qp_attr(id, &a, &mask)))
		return;
	r = ibv_modify_qp(qp, &a, mask);
	P("    ibv_modify_qp: %s\n", r ? en(r) : "ok");
}

static void c_establish(void)
{
	struct rdma_event_channel *sch = new_channel("server channel"), *cch = new_channel("client channel");
	struct rdma_cm_id *lid, *cid = NULL, *sid = NULL;
	struct ibv_ece ece = { .vendor_id = 0x15b3, .options = 0x1234, .comp_mask = 0 };
	struct msgbuf *sm = NULL, *cm = NULL;
	struct ibv_qp_init_attr a;
	struct rdma_conn_param p;
	struct ibv_cq *cq = NULL;
	struct ibv_qp *qp = NULL;
	unsigned char pd[8];

	if (!sch || !cch || !(lid = listener("listener", sch, "192.0.2.1", 7541, RDMA_PS_TCP, 4)))
		return;
	if (!(cid = client("client", cch, "192.0.2.1", 7541, RDMA_PS_TCP)))
		goto out;
	/* ECE on the client, before the connect; the bad ones first */
	R("set_local_ece NULL ece", rdma_set_local_ece(cid, NULL));
	R("set_local_ece vendor 0", rdma_set_local_ece(cid, &(struct ibv_ece){ 0, 1, 0 }));
	R("set_local_ece comp_mask 1", rdma_set_local_ece(cid, &(struct ibv_ece){ 0x15b3, 1, 1 }));
	R("set_local_ece", rdma_set_local_ece(cid, &ece));
	print_ece("client: get_remote_ece before connect", cid);
	/* the application's QP on the id's PD */
	cq = ibv_create_cq(cid->verbs, 8, NULL, NULL, 0);
	qp_attr_init(&a, IBV_QPT_RC);
	a.send_cq = a.recv_cq = cq;
	qp = cq ? ibv_create_qp(cid->pd, &a) : NULL;
	P("  client: application QP: %s\n", qp ? "ok" : "failed");
	if (!qp)
		goto out;
	conn_param(&p, pattern(pd, 8, 1), 8);
	p.qp_num = qp->qp_num;
	if (R("client: connect with qp_num of the application's QP", rdma_connect(cid, &p)) ||
	    get_ev("server: request", sch, EV_WAIT, &sid, "server") != RDMA_CM_EVENT_CONNECT_REQUEST)
		goto out;
	print_ece("server: get_remote_ece", sid);
	R("server: set_local_ece", rdma_set_local_ece(sid, &(struct ibv_ece){ 0x15b3, 0x5678, 0 }));
	if (make_qp("server", sid, IBV_QPT_RC) || !(sm = msg_new("server", sid->pd)) || !(cm = msg_new("client", cid->pd)))
		goto out;
	print_ece("server: get_remote_ece with a QP", sid);
	R("server: set_local_ece with a QP", rdma_set_local_ece(sid, &ece));
	post_recv("server: post_recv", sid->qp, sm);
	conn_param(&p, pattern(pd, 6, 0xa1), 6);
	if (R("server: accept", rdma_accept(sid, &p)))
		goto out;
	if (get_ev("client: response", cch, EV_WAIT, NULL, NULL) != RDMA_CM_EVENT_CONNECT_RESPONSE)
		goto out;
	print_ece("client: get_remote_ece", cid);
	no_ev("server: before establish", sch, 300);
	app_modify("client: init_qp_attr INIT", cid, qp, IBV_QPS_INIT);
	app_modify("client: init_qp_attr RTR", cid, qp, IBV_QPS_RTR);
	app_modify("client: init_qp_attr RTS", cid, qp, IBV_QPS_RTS);
	R("server: establish (has a QP)", rdma_establish(sid));
	R("client: establish", rdma_establish(cid));
	get_ev("server: established", sch, EV_WAIT, NULL, NULL);
	no_ev("client: after establish", cch, 300);
	post_send("client: post_send", qp, cm, "hello from the application's QP", NULL, 0, 0);
	poll_cq("client: send completion", cq, 5000, NULL, 0);
	poll_cq("server: recv completion", sid->recv_cq, 5000, sm, 0);
	print_id(cid);
	R("server: disconnect", rdma_disconnect(sid));
	get_ev("client: disconnected", cch, EV_WAIT, NULL, NULL);
	R("client: disconnect (no QP of its own)", rdma_disconnect(cid));
	get_ev("server: disconnected", sch, EV_WAIT, NULL, NULL);
out:
	msg_free(sm);
	msg_free(cm);
	if (qp)
		ibv_destroy_qp(qp);
	if (cq)
		ibv_destroy_cq(cq);
	drop_qp(sid);
	destroy_id("server", sid);
	destroy_id("client", cid);
	destroy_id("listener", lid);
	rdma_destroy_event_channel(sch);
	rdma_destroy_event_channel(cch);
}

/* ---- multicast ---- */

static void mcast_case(const char *src, const char *grp, const char *grp2, const char *other)
{
	struct rdma_event_channel *ch = new_channel("channel");
	struct rdma_cm_join_mc_attr_ex mx;
	struct sockaddr_storage g, g2, o;
	struct rdma_cm_id *id;
	void *ctx = mc_context;
	struct rdma_ud_param full, so;
	int have_full = 0, have_so = 0;
	struct msgbuf *rm = NULL, *sm = NULL;
	struct ibv_ah *ah = NULL, *ah2 = NULL;

	if (!ch || !(id = new_id("mc", ch, RDMA_PS_UDP)))
		return;
	if (resolve("mc", id, src, grp, 0, 0) || make_qp("mc", id, IBV_QPT_UD))
		goto out;
	sa_set(&g, grp, 0);
	sa_set(&g2, grp2, 0);
	sa_set(&o, other, 0);
	if (!R("join_multicast", rdma_join_multicast(id, (struct sockaddr *)&g, ctx)) &&
	    get_ev("join event", ch, EV_WAIT, NULL, NULL) == RDMA_CM_EVENT_MULTICAST_JOIN)
		full = last_ud, have_full = 1;
	memset(&mx, 0, sizeof(mx));
	mx.addr = (struct sockaddr *)&g2;
	mx.comp_mask = 4;
	R("join_multicast_ex comp_mask 4", rdma_join_multicast_ex(id, &mx, ctx));
	mx.comp_mask = RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
	mx.join_flags = RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;
	R("join_multicast_ex without ADDRESS", rdma_join_multicast_ex(id, &mx, ctx));
	mx.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS;
	R("join_multicast_ex without JOIN_FLAGS", rdma_join_multicast_ex(id, &mx, ctx));
	mx.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
	mx.join_flags = 2;
	R("join_multicast_ex flags 2", rdma_join_multicast_ex(id, &mx, ctx));
	mx.join_flags = RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;
	if (!R("join_multicast_ex send-only", rdma_join_multicast_ex(id, &mx, ctx)) &&
	    get_ev("send-only join event", ch, EV_WAIT, NULL, NULL) == RDMA_CM_EVENT_MULTICAST_JOIN)
		so = last_ud, have_so = 1;
	/* datagrams to both groups: the library attached the QP to the full
	 * member group only (multicast comes back through the IP stack) */
	if (have_full && have_so && (rm = msg_new("recv", id->pd)) && (sm = msg_new("send", id->pd))) {
		ah = ibv_create_ah(id->pd, &full.ah_attr);
		ah2 = ibv_create_ah(id->pd, &so.ah_attr);
		P("  create_ah for both groups: %s\n", ah && ah2 ? "ok" : "failed");
		if (ah && ah2) {
			post_recv("post_recv", id->qp, rm);
			post_send("send to the group", id->qp, sm, "to the group", ah, full.qp_num, full.qkey);
			poll_cq("send completion", id->send_cq, 5000, NULL, 0);
			poll_cq("recv completion (attached)", id->recv_cq, 3000, rm, 40);
			post_recv("post_recv 2", id->qp, rm);
			post_send("send to the send-only group", id->qp, sm, "to the send-only group", ah2, so.qp_num,
				  so.qkey);
			poll_cq("send completion 2", id->send_cq, 5000, NULL, 0);
			poll_cq("recv completion (send-only, not attached)", id->recv_cq, 500, rm, 40);
		}
	}
	R("leave_multicast never joined", rdma_leave_multicast(id, (struct sockaddr *)&o));
	R("leave_multicast", rdma_leave_multicast(id, (struct sockaddr *)&g));
	if (ah) {
		post_send("send to the group after leaving", id->qp, sm, "after leaving", ah, full.qp_num, full.qkey);
		poll_cq("send completion 3", id->send_cq, 5000, NULL, 0);
		poll_cq("recv completion (left, detached)", id->recv_cq, 500, rm, 40);
	}
	R("leave_multicast again", rdma_leave_multicast(id, (struct sockaddr *)&g));
	R("leave_multicast send-only", rdma_leave_multicast(id, (struct sockaddr *)&g2));
	no_ev("after leaving", ch, 300);
	print_id(id);
	/* a join left to rdma_destroy_id */
	if (!R("join_multicast before destroy", rdma_join_multicast(id, (struct sockaddr *)&g, ctx)))
		get_ev("join event 2", ch, EV_WAIT, NULL, NULL);
out:
	if (ah)
		ibv_destroy_ah(ah);
	if (ah2)
		ibv_destroy_ah(ah2);
	msg_free(rm);
	msg_free(sm);
	drop_qp(id);
	destroy_id("mc", id);
	rdma_destroy_event_channel(ch);
}

static void c_mcast_v4(void) { mcast_case("192.0.2.1", "239.1.2.10", "239.1.2.11", "239.1.2.12"); }
static void c_mcast_v6(void) { mcast_case("fd00::1", "ff15::1:10", "ff15::1:11", "ff15::1:12"); }

/* an id only bound (no QP): join, event, leave */
static void c_mcast_bound(void)
{
	struct rdma_event_channel *ch = new_channel("channel");
	struct sockaddr_storage a, g;
	struct rdma_cm_id *id;
	void *ctx = mc_context;

	if (!ch || !(id = new_id("mc", ch, RDMA_PS_UDP)))
		return;
	sa_set(&g, "239.1.2.20", 0);
	R("join_multicast unbound", rdma_join_multicast(id, (struct sockaddr *)&g, ctx));
	sa_set(&a, "192.0.2.1", 0);
	R("bind_addr", rdma_bind_addr(id, (struct sockaddr *)&a));
	if (!R("join_multicast bound, no QP", rdma_join_multicast(id, (struct sockaddr *)&g, ctx)))
		get_ev("join event", ch, EV_WAIT, NULL, NULL);
	R("leave_multicast", rdma_leave_multicast(id, (struct sockaddr *)&g));
	destroy_id("mc", id);
	rdma_destroy_event_channel(ch);
}

/* ---- more connection flows ---- */

/* listeners on the wildcards: what the new ids say about their addresses */
static void c_listen_wildcard(void)
{
	struct rdma_event_channel *sch = new_channel("server channel"), *cch = new_channel("client channel");
	struct rdma_cm_id *l4 = NULL, *l6 = NULL, *cid, *sid;
	char lc[80], lr[80];
	static const struct {
		const char *cname, *sname, *ip;
		int port;
	} t[] = { { "client to 0.0.0.0", "server on 0.0.0.0", "192.0.2.1", 7506 },
		  { "client4 to [::]", "server on [::] (v4)", "192.0.2.1", 7507 },
		  { "client6 to [::]", "server on [::] (v6)", "fd00::1", 7507 } };
	unsigned i;

	if (!sch || !cch || !(l4 = listener("listener 0.0.0.0", sch, "0.0.0.0", 7506, RDMA_PS_TCP, 4)) ||
	    !(l6 = listener("listener [::]", sch, "::", 7507, RDMA_PS_TCP, 4)))
		goto out;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		sid = NULL;
		snprintf(lc, sizeof(lc), "%s: connect", t[i].cname);
		snprintf(lr, sizeof(lr), "%s: reject", t[i].sname);
		if ((cid = client(t[i].cname, cch, t[i].ip, t[i].port, RDMA_PS_TCP)) &&
		    !make_qp(t[i].cname, cid, IBV_QPT_RC) && !R(lc, rdma_connect(cid, NULL)) &&
		    get_ev(t[i].sname, sch, EV_WAIT, &sid, t[i].sname) == RDMA_CM_EVENT_CONNECT_REQUEST) {
			print_id(sid);
			R(lr, rdma_reject(sid, NULL, 0));
			get_ev(t[i].cname, cch, EV_WAIT, NULL, NULL);
		}
		drop_qp(cid);
		destroy_id(t[i].sname, sid);
		destroy_id(t[i].cname, cid);
	}
out:
	destroy_id("listener [::]", l6);
	destroy_id("listener 0.0.0.0", l4);
	rdma_destroy_event_channel(sch);
	rdma_destroy_event_channel(cch);
}

/* an SRQ on the client: rdma_create_srq, the QP takes it, the request
 * says srq=1, a message arrives through it */
static void c_srq(void)
{
	struct rdma_event_channel *sch = new_channel("server channel"), *cch = new_channel("client channel");
	struct rdma_cm_id *lid, *cid = NULL, *sid = NULL;
	struct msgbuf *sm = NULL, *cm = NULL;
	struct ibv_srq_init_attr sa;
	struct ibv_qp_init_attr a;

	if (!sch || !cch || !(lid = listener("listener", sch, "192.0.2.1", 7508, RDMA_PS_TCP, 4)))
		return;
	if (!(cid = client("client", cch, "192.0.2.1", 7508, RDMA_PS_TCP)))
		goto out;
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 4;
	sa.attr.max_sge = 1;
	if (R("client: create_srq", rdma_create_srq(cid, NULL, &sa)))
		goto out;
	P("    srq attr after: max_wr=%u max_sge=%u srq_limit=%u\n", sa.attr.max_wr, sa.attr.max_sge, sa.attr.srq_limit);
	print_id(cid);
	qp_attr_init(&a, IBV_QPT_RC);
	if (R("client: create_qp", rdma_create_qp(cid, NULL, &a)))
		goto out;
	P("    attr after: srq is id->srq=%s\n", a.srq == cid->srq ? "yes" : "no");
	print_qp_attr(&a, cid);
	print_id(cid);
	if (!(cm = msg_new("client", cid->pd)))
		goto out;
	{
		struct ibv_sge sge = { (uintptr_t)cm->data, sizeof(cm->data), cm->mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 3, .sg_list = &sge, .num_sge = 1 }, *bad;
		P("  client: post_srq_recv: %s\n", ibv_post_srq_recv(cid->srq, &wr, &bad) ? "failed" : "ok");
	}
	if (R("client: connect", rdma_connect(cid, NULL)) ||
	    get_ev("server: request", sch, EV_WAIT, &sid, "server") != RDMA_CM_EVENT_CONNECT_REQUEST ||
	    make_qp("server", sid, IBV_QPT_RC) || !(sm = msg_new("server", sid->pd)) ||
	    R("server: accept", rdma_accept(sid, NULL)) ||
	    get_ev("client: established", cch, EV_WAIT, NULL, NULL) != RDMA_CM_EVENT_ESTABLISHED ||
	    get_ev("server: established", sch, EV_WAIT, NULL, NULL) != RDMA_CM_EVENT_ESTABLISHED)
		goto out;
	post_send("server: post_send", sid->qp, sm, "hello into an SRQ", NULL, 0, 0);
	poll_cq("server: send completion", sid->send_cq, 5000, NULL, 0);
	poll_cq("client: recv completion", cid->recv_cq, 5000, cm, 0);
	R("client: disconnect", rdma_disconnect(cid));
	get_ev("server: disconnected", sch, EV_WAIT, NULL, NULL);
	R("server: disconnect", rdma_disconnect(sid));
	get_ev("client: disconnected", cch, EV_WAIT, NULL, NULL);
	R("client: destroy_qp", (rdma_destroy_qp(cid), 0));
	R("client: destroy_srq", (rdma_destroy_srq(cid), 0));
	print_id(cid);
out:
	msg_free(sm);
	msg_free(cm);
	drop_qp(sid);
	drop_qp(cid);
	if (cid && cid->srq)
		rdma_destroy_srq(cid);
	destroy_id("server", sid);
	destroy_id("client", cid);
	destroy_id("listener", lid);
	rdma_destroy_event_channel(sch);
	rdma_destroy_event_channel(cch);
}

/* a connected id moved to another channel: its events follow it */
static void c_migrate_connected(void)
{
	struct rdma_event_channel *ch2 = NULL;
	struct conn c;

	if (rc_connect(&c, "192.0.2.1", 7509, 0, 0) == 0 && (ch2 = new_channel("channel 2"))) {
		R("server: migrate_id to channel 2", rdma_migrate_id(c.sid, ch2));
		P("    channel is channel 2: %s\n", c.sid->channel == ch2 ? "yes" : "no");
		R("client: disconnect", rdma_disconnect(c.cid));
		get_ev("server: disconnected (channel 2)", ch2, EV_WAIT, NULL, NULL);
		no_ev("server channel", c.sch, 300);
		R("server: disconnect", rdma_disconnect(c.sid));
		get_ev("client: disconnected", c.cch, EV_WAIT, NULL, NULL);
		R("server: migrate_id back", rdma_migrate_id(c.sid, c.sch));
	}
	rc_teardown(&c);
	if (ch2)
		rdma_destroy_event_channel(ch2);
}

/*
 * The client's QP cannot be moved to RTR when the response comes (it was
 * put in the error state): the library sends no RTU and reports
 * CONNECT_ERROR with its status; a REJECTED that follows is swallowed.
 */
static void c_connect_error(void)
{
	struct rdma_event_channel *sch = new_channel("server channel"), *cch = new_channel("client channel");
	struct rdma_cm_id *lid, *cid = NULL, *sid = NULL;
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };

	if (!sch || !cch || !(lid = listener("listener", sch, "192.0.2.1", 7514, RDMA_PS_TCP, 4)))
		return;
	if ((cid = client("client", cch, "192.0.2.1", 7514, RDMA_PS_TCP)) && !make_qp("client", cid, IBV_QPT_RC) &&
	    !R("client: connect", rdma_connect(cid, NULL)) &&
	    get_ev("server: request", sch, EV_WAIT, &sid, "server") == RDMA_CM_EVENT_CONNECT_REQUEST &&
	    !make_qp("server", sid, IBV_QPT_RC) && !R("server: accept", rdma_accept(sid, NULL))) {
		P("  client: qp to ERR: %s\n", ibv_modify_qp(cid->qp, &qa, IBV_QP_STATE) ? "failed" : "ok");
		get_ev("client: response", cch, EV_WAIT, NULL, NULL);
		query_qp_state("client qp", cid->qp);
		no_ev("server: no RTU", sch, 300);
		/* the server goes away: its REJ reaches the client, whose
		 * library swallows it after a CONNECT_ERROR (reference §4.10);
		 * non-blocking, so a swallowed event does not leave the read
		 * waiting for the next one. (A rdma_reject here instead makes
		 * the server's destroy wait about a minute in the kernel.) */
		drop_qp(sid);
		destroy_id("server", sid);
		sid = NULL;
		fcntl(cch->fd, F_SETFL, fcntl(cch->fd, F_GETFL) | O_NONBLOCK);
		no_ev("client: after the server went away", cch, 500);
		R("client: disconnect", rdma_disconnect(cid));
		no_ev("client: after disconnect", cch, 500);
	}
	drop_qp(sid);
	drop_qp(cid);
	destroy_id("server", sid);
	destroy_id("client", cid);
	destroy_id("listener", lid);
	rdma_destroy_event_channel(sch);
	rdma_destroy_event_channel(cch);
}

/* the client goes away before the request is accepted: the kernel keeps
 * the events of a not yet accepted id to itself */
static void c_client_gone_before_accept(void)
{
	struct rdma_event_channel *sch = new_channel("server channel"), *cch = new_channel("client channel");
	struct rdma_cm_id *lid, *cid = NULL, *sid = NULL;

	if (!sch || !cch || !(lid = listener("listener", sch, "192.0.2.1", 7515, RDMA_PS_TCP, 4)))
		return;
	if ((cid = client("client", cch, "192.0.2.1", 7515, RDMA_PS_TCP)) && !make_qp("client", cid, IBV_QPT_RC) &&
	    !R("client: connect", rdma_connect(cid, NULL)) &&
	    get_ev("server: request", sch, EV_WAIT, &sid, "server") == RDMA_CM_EVENT_CONNECT_REQUEST) {
		drop_qp(cid);
		destroy_id("client", cid);
		cid = NULL;
		no_ev("server: after the client went away", sch, 500);
	}
	drop_qp(cid);
	destroy_id("client", cid);
	destroy_id("server", sid);
	destroy_id("listener", lid);
	rdma_destroy_event_channel(sch);
	rdma_destroy_event_channel(cch);
}

/* UD sync endpoints: the accept returns at once and acks the request (a
 * listener destroy after it must not hang, upstream fix 9a0fc3afd) */
static void *ep_ud_server(void *arg)
{
	struct rdma_addrinfo hints, *res = NULL;
	struct rdma_cm_id *lid = NULL, *id = NULL;
	struct ibv_qp_init_attr attr;
	struct msgbuf *m = NULL;

	(void)arg;
	out_f = thread_file[0];
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_PASSIVE;
	hints.ai_port_space = RDMA_PS_UDP;
	hints.ai_qp_type = IBV_QPT_UD;
	if (R("server: getaddrinfo", rdma_getaddrinfo("192.0.2.1", "7532", &hints, &res)))
		goto out;
	qp_attr_init(&attr, IBV_QPT_UD);
	if (R("server: create_ep", rdma_create_ep(&lid, res, NULL, &attr)))
		goto out;
	name_id(lid, "listener");
	if (R("server: listen", rdma_listen(lid, 0)))
		goto out;
	sem_post(&sem_listening);
	if (R("server: get_request", rdma_get_request(lid, &id)))
		goto out;
	name_id(id, "server");
	if (id->event)
		print_event(id->event);
	print_id(id);
	if (id->qp && (m = msg_new("server", id->pd)))
		post_recv("server: post_recv", id->qp, m);
	if (R("server: accept", rdma_accept(id, NULL)) == 0) {
		P("    id->event after accept: %s\n", id->event ? rdma_event_str(id->event->event) : "NULL");
		if (m)
			poll_cq("server: recv completion", id->recv_cq, 5000, m, 40);
	}
out:
	sem_post(&sem_listening);
	msg_free(m);
	if (id)
		R("server: destroy_ep", (rdma_destroy_ep(id), 0));
	if (lid)
		R("listener: destroy_ep", (rdma_destroy_ep(lid), 0));
	if (res)
		rdma_freeaddrinfo(res);
	return NULL;
}

static void *ep_ud_client(void *arg)
{
	struct rdma_addrinfo hints, *res = NULL;
	struct rdma_cm_id *id = NULL;
	struct ibv_qp_init_attr attr;
	struct msgbuf *m = NULL;
	struct ibv_ah *ah;

	(void)arg;
	out_f = thread_file[1];
	sem_wait(&sem_listening);
	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_UDP;
	hints.ai_qp_type = IBV_QPT_UD;
	if (R("client: getaddrinfo", rdma_getaddrinfo("192.0.2.1", "7532", &hints, &res)))
		goto out;
	qp_attr_init(&attr, IBV_QPT_UD);
	if (R("client: create_ep", rdma_create_ep(&id, res, NULL, &attr)))
		goto out;
	name_id(id, "client");
	print_id(id);
	if (R("client: connect", rdma_connect(id, NULL)) || !id->event)
		goto out;
	print_event(id->event);
	ah = ibv_create_ah(id->pd, &id->event->param.ud.ah_attr);
	P("  client: create_ah from id->event: %s\n", ah ? "ok" : "failed");
	if (ah && (m = msg_new("client", id->pd))) {
		post_send("client: post_send", id->qp, m, "hello over a UD endpoint", ah, id->event->param.ud.qp_num,
			  id->event->param.ud.qkey);
		poll_cq("client: send completion", id->send_cq, 5000, NULL, 0);
	}
	if (ah)
		ibv_destroy_ah(ah);
out:
	msg_free(m);
	if (id)
		R("client: destroy_ep", (rdma_destroy_ep(id), 0));
	if (res)
		rdma_freeaddrinfo(res);
	return NULL;
}

static void c_ep_ud(void)
{
	run_threads(ep_ud_server, ep_ud_client, 25);
}

/* ---- faults ---- */

/*
 * A peer in its own process (forked before the library is touched, dies
 * with us): its output comes back through a pipe and is printed where the
 * case says. Sync bytes through two pipes.
 */
struct peer {
	pid_t pid;
	int out, to_peer, from_peer;
};

static int peer_wait_byte(int fd, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char b;

	return poll(&pfd, 1, ms) == 1 && read(fd, &b, 1) == 1 ? 0 : -1;
}

static int peer_start(struct peer *p, void (*fn)(int in, int out))
{
	int o[2], a[2], b[2];

	if (pipe(o) || pipe(a) || pipe(b))
		return -1;
	fflush(stdout);
	p->pid = fork();
	if (p->pid < 0)
		return -1;
	if (p->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(o[1], 1);
		close(o[0]);
		close(a[1]);
		close(b[0]);
		setvbuf(stdout, NULL, _IOLBF, 0);
		fn(a[0], b[1]);
		fflush(stdout);
		_exit(0);
	}
	close(o[1]);
	close(a[0]);
	close(b[1]);
	p->out = o[0];
	p->to_peer = a[1];
	p->from_peer = b[0];
	return 0;
}

static void peer_kill_and_print(struct peer *p, const char *what)
{
	char buf[4096];
	ssize_t n;
	int st;

	kill(p->pid, SIGKILL);
	waitpid(p->pid, &st, 0);
	printf("  %s: %s\n", what,
	       WIFSIGNALED(st) ? sigabbrev_np(WTERMSIG(st)) : WIFEXITED(st) ? "exited" : "?");
	printf("  (the peer's output:)\n");
	while ((n = read(p->out, buf, sizeof(buf))) > 0)
		fwrite(buf, 1, n, stdout);
	close(p->out);
	close(p->to_peer);
	close(p->from_peer);
}

/* the peer as client: connect, ESTABLISHED, tell the parent, wait */
static void kill_peer_client(int in, int out)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *cid;

	if (peer_wait_byte(in, 10000)) {
		printf("  peer: the server did not start\n");
		return;
	}
	if ((ch = new_channel("peer channel")) && (cid = client("peer", ch, "192.0.2.1", 7550, RDMA_PS_TCP)) &&
	    !make_qp("peer", cid, IBV_QPT_RC) && !R("peer: connect", rdma_connect(cid, NULL)))
		get_ev("peer: established", ch, EV_WAIT, NULL, NULL);
	fflush(stdout);
	if (write(out, "x", 1) != 1)
		return;
	pause();
}

static void c_kill_client(void)
{
	struct rdma_event_channel *sch;
	struct rdma_cm_id *lid, *sid = NULL;
	struct peer pr;

	if (peer_start(&pr, kill_peer_client)) {
		printf("  fork failed\n");
		return;
	}
	if ((sch = new_channel("server channel")) && (lid = listener("listener", sch, "192.0.2.1", 7550, RDMA_PS_TCP, 4))) {
		if (write(pr.to_peer, "x", 1) == 1 &&
		    get_ev("server: request", sch, EV_WAIT, &sid, "server") == RDMA_CM_EVENT_CONNECT_REQUEST &&
		    !make_qp("server", sid, IBV_QPT_RC) && !R("server: accept", rdma_accept(sid, NULL)) &&
		    get_ev("server: established", sch, EV_WAIT, NULL, NULL) == RDMA_CM_EVENT_ESTABLISHED) {
			printf("  peer connected: %s\n", peer_wait_byte(pr.from_peer, 10000) ? "no" : "yes");
			peer_kill_and_print(&pr, "client process killed");
			get_ev("server: after the peer died", sch, EV_WAIT, NULL, NULL);
			query_qp_state("server qp", sid->qp);
			R("server: disconnect", rdma_disconnect(sid));
			no_ev("server: after disconnect", sch, 300);
		} else {
			peer_kill_and_print(&pr, "client process killed");
		}
		drop_qp(sid);
		destroy_id("server", sid);
		destroy_id("listener", lid);
	} else {
		peer_kill_and_print(&pr, "client process killed");
	}
}

/* the peer as server: listen, accept, ESTABLISHED, tell the parent, wait */
static void kill_peer_server(int in, int out)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *lid, *sid;

	(void)in;
	if ((ch = new_channel("peer channel")) && (lid = listener("peer listener", ch, "192.0.2.1", 7551, RDMA_PS_TCP, 4))) {
		if (write(out, "l", 1) != 1)
			return;
		if (get_ev("peer: request", ch, EV_WAIT, &sid, "peer") == RDMA_CM_EVENT_CONNECT_REQUEST &&
		    !make_qp("peer", sid, IBV_QPT_RC) && !R("peer: accept", rdma_accept(sid, NULL)))
			get_ev("peer: established", ch, EV_WAIT, NULL, NULL);
	}
	fflush(stdout);
	if (write(out, "x", 1) != 1)
		return;
	pause();
}

static void c_kill_server(void)
{
	struct rdma_event_channel *cch;
	struct rdma_cm_id *cid = NULL;
	struct peer pr;

	if (peer_start(&pr, kill_peer_server)) {
		printf("  fork failed\n");
		return;
	}
	if (peer_wait_byte(pr.from_peer, 10000)) {
		peer_kill_and_print(&pr, "server process killed");
		return;
	}
	if ((cch = new_channel("client channel")) && (cid = client("client", cch, "192.0.2.1", 7551, RDMA_PS_TCP)) &&
	    !make_qp("client", cid, IBV_QPT_RC) && !R("client: connect", rdma_connect(cid, NULL)) &&
	    get_ev("client: established", cch, EV_WAIT, NULL, NULL) == RDMA_CM_EVENT_ESTABLISHED) {
		printf("  peer accepted: %s\n", peer_wait_byte(pr.from_peer, 10000) ? "no" : "yes");
		peer_kill_and_print(&pr, "server process killed");
		get_ev("client: after the peer died", cch, EV_WAIT, NULL, NULL);
		query_qp_state("client qp", cid->qp);
		R("client: disconnect", rdma_disconnect(cid));
		no_ev("client: after disconnect", cch, 300);
	} else {
		peer_kill_and_print(&pr, "server process killed");
	}
	drop_qp(cid);
	destroy_id("client", cid);
}

/* the listener destroyed while a request is queued, unread */
static void c_listener_destroy_pending(void)
{
	struct rdma_event_channel *sch = new_channel("server channel"), *cch = new_channel("client channel");
	struct rdma_cm_id *lid, *cid;
	struct pollfd pfd;

	if (!sch || !cch || !(lid = listener("listener", sch, "192.0.2.1", 7552, RDMA_PS_TCP, 4)))
		return;
	if ((cid = client("client", cch, "192.0.2.1", 7552, RDMA_PS_TCP)) && !make_qp("client", cid, IBV_QPT_RC) &&
	    !R("client: connect", rdma_connect(cid, NULL))) {
		pfd.fd = sch->fd;
		pfd.events = POLLIN;
		P("  server channel: %s\n", poll(&pfd, 1, EV_WAIT) == 1 ? "request queued" : "nothing queued");
		destroy_id("listener", lid);
		lid = NULL;
		get_ev("client: after the listener was destroyed", cch, EV_WAIT, NULL, NULL);
		fcntl(sch->fd, F_SETFL, fcntl(sch->fd, F_GETFL) | O_NONBLOCK);
		{
			struct rdma_cm_event *ev;
			R("server channel: get_cm_event", rdma_get_cm_event(sch, &ev));
		}
	}
	drop_qp(cid);
	destroy_id("client", cid);
	destroy_id("listener", lid);
	rdma_destroy_event_channel(sch);
	rdma_destroy_event_channel(cch);
}

/* the listener destroyed after the request was read: the new id lives on
 * and can still accept */
static void c_listener_destroy_child(void)
{
	struct rdma_event_channel *sch = new_channel("server channel"), *cch = new_channel("client channel");
	struct rdma_cm_id *lid, *cid, *sid = NULL;

	if (!sch || !cch || !(lid = listener("listener", sch, "192.0.2.1", 7553, RDMA_PS_TCP, 4)))
		return;
	if ((cid = client("client", cch, "192.0.2.1", 7553, RDMA_PS_TCP)) && !make_qp("client", cid, IBV_QPT_RC) &&
	    !R("client: connect", rdma_connect(cid, NULL)) &&
	    get_ev("server: request", sch, EV_WAIT, &sid, "server") == RDMA_CM_EVENT_CONNECT_REQUEST) {
		destroy_id("listener", lid);
		lid = NULL;
		print_id(sid);
		if (!make_qp("server", sid, IBV_QPT_RC) && !R("server: accept", rdma_accept(sid, NULL))) {
			get_ev("client: established", cch, EV_WAIT, NULL, NULL);
			get_ev("server: established", sch, EV_WAIT, NULL, NULL);
			R("client: disconnect", rdma_disconnect(cid));
			get_ev("server: disconnected", sch, EV_WAIT, NULL, NULL);
			R("server: disconnect", rdma_disconnect(sid));
			get_ev("client: disconnected", cch, EV_WAIT, NULL, NULL);
		}
	}
	drop_qp(sid);
	drop_qp(cid);
	destroy_id("server", sid);
	destroy_id("client", cid);
	destroy_id("listener", lid);
	rdma_destroy_event_channel(sch);
	rdma_destroy_event_channel(cch);
}

/* backlog 1: a second request is held back by the kernel while the first
 * is unread (no event for either side) */
static void c_backlog(void)
{
	struct rdma_event_channel *sch = new_channel("server channel"), *cch = new_channel("client channel"),
				  *cch2 = new_channel("client2 channel");
	struct rdma_cm_id *lid, *c1 = NULL, *c2 = NULL, *s1 = NULL;
	struct pollfd pfd;

	if (!sch || !cch || !cch2 || !(lid = listener("listener", sch, "192.0.2.1", 7554, RDMA_PS_TCP, 1)))
		return;
	if ((c1 = client("client1", cch, "192.0.2.1", 7554, RDMA_PS_TCP)) && !make_qp("client1", c1, IBV_QPT_RC) &&
	    (c2 = client("client2", cch2, "192.0.2.1", 7554, RDMA_PS_TCP)) && !make_qp("client2", c2, IBV_QPT_RC) &&
	    !R("client1: connect", rdma_connect(c1, NULL))) {
		pfd.fd = sch->fd;
		pfd.events = POLLIN;
		P("  server channel: %s\n", poll(&pfd, 1, EV_WAIT) == 1 ? "request queued" : "nothing queued");
		R("client2: connect", rdma_connect(c2, NULL));
		no_ev("client2: while the backlog is full", cch2, 1000);
		get_ev("server: request 1", sch, EV_WAIT, &s1, "server1");
		no_ev("server: request 2", sch, 1000);
		R("server1: reject", rdma_reject(s1, NULL, 0));
		get_ev("client1: rejected", cch, EV_WAIT, NULL, NULL);
	}
	drop_qp(c1);
	drop_qp(c2);
	destroy_id("server1", s1);
	destroy_id("client1", c1);
	destroy_id("client2", c2);
	destroy_id("listener", lid);
	rdma_destroy_event_channel(sch);
	rdma_destroy_event_channel(cch);
	rdma_destroy_event_channel(cch2);
}

/* sort printed events (events of several ids on one channel come in the
 * kernel's order) */
static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Device removal on the server channel: read until `n` DEVICE_REMOVAL
 * events came (each within ms) and print the events sorted, leaving out
 * DISCONNECTED: whether the kernel's IB CM disconnects the connected id
 * before the RDMA CM reports the removal is a race inside the kernel (seen
 * both ways with Debian's library on 6.1), not something a library decides.
 */
static void drain_removal(const char *label, struct rdma_event_channel *ch, int n, int ms)
{
	char *txt[8];
	int i, k = 0, removals = 0;

	for (i = 0; i < 8 && removals < n; i++) {
		FILE *save = out_f;
		size_t len;
		char *buf;
		int t;

		out_f = open_memstream(&buf, &len);
		t = get_ev(label, ch, ms, NULL, NULL);
		fclose(out_f);
		out_f = save;
		if (t == RDMA_CM_EVENT_DISCONNECTED) {
			free(buf);
			continue;
		}
		txt[k++] = buf;
		if (t == RDMA_CM_EVENT_DEVICE_REMOVAL)
			removals++;
		if (t < 0)
			break;
	}
	qsort(txt, k, sizeof(txt[0]), cmp_str);
	for (i = 0; i < k; i++) {
		P("%s", txt[i]);
		free(txt[i]);
	}
}

/*
 * `rdma link delete` of a dedicated rxe device (the runner makes it: a
 * veth pair with CONN_DEVREM_IP and rxe device CONN_DEVREM_DEV) while a
 * connection over it is up: DEVICE_REMOVAL for every id on it.
 */
static void c_device_removal(void)
{
	const char *ip = getenv("CONN_DEVREM_IP"), *dev = getenv("CONN_DEVREM_DEV");
	struct conn c;
	pid_t p;
	int st, i;

	if (!ip || !dev) {
		printf("  (needs the runner's dedicated rxe device: CONN_DEVREM_IP, CONN_DEVREM_DEV)\n");
		return;
	}
	if (rc_connect(&c, ip, 7560, 0, 0) == 0) {
		print_id(c.cid);
		fflush(stdout);
		p = fork();
		if (p == 0) {
			int fd = open("/dev/null", O_WRONLY);
			dup2(fd, 1);
			dup2(fd, 2);
			execlp("rdma", "rdma", "link", "delete", dev, (char *)NULL);
			_exit(127);
		}
		P("  rdma link delete %s: started\n", "DEV");
		drain_removal("client: event", c.cch, 1, 15000);
		drain_removal("server channel: event", c.sch, 2, 15000);
		no_ev("client: more", c.cch, 300);
		query_qp_state("client qp", c.cid->qp);
		R("client: disconnect", rdma_disconnect(c.cid));
		print_id(c.cid);
		R("client: destroy_qp", (rdma_destroy_qp(c.cid), 0));
		R("server: destroy_qp", (rdma_destroy_qp(c.sid), 0));
		msg_free(c.sm);
		msg_free(c.cm);
		c.sm = c.cm = NULL;
		destroy_id("server", c.sid);
		destroy_id("client", c.cid);
		destroy_id("listener", c.lid);
		c.sid = c.cid = c.lid = NULL;
		/* the deletion may wait for the last user of the device */
		for (i = 0; i < 30 && waitpid(p, &st, WNOHANG) == 0; i++)
			usleep(100000);
		if (i == 30)
			P("  rdma link delete: still running 3 s after the ids were destroyed\n");
		else
			P("  rdma link delete: %s %d\n", WIFEXITED(st) ? "exit" : "signal",
			  WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	}
	rc_teardown(&c);
}

/* calls in the wrong state */
static void c_wrong_state(void)
{
	struct rdma_event_channel *ch = new_channel("channel");
	struct rdma_cm_id *fresh, *bound, *res;
	struct sockaddr_storage a;
	struct rdma_conn_param p;

	if (!ch || !(fresh = new_id("fresh", ch, RDMA_PS_TCP)) || !(bound = new_id("bound", ch, RDMA_PS_TCP)) ||
	    !(res = new_id("resolved", ch, RDMA_PS_TCP)))
		return;
	sa_set(&a, "192.0.2.1", 0);
	R("bound: bind_addr", rdma_bind_addr(bound, (struct sockaddr *)&a));
	resolve("resolved", res, NULL, "192.0.2.1", 7570, 1);
	conn_param(&p, NULL, 0);
	p.qp_num = 0x123;

	R("fresh: disconnect", rdma_disconnect(fresh));
	R("bound: disconnect", rdma_disconnect(bound));
	R("resolved: disconnect", rdma_disconnect(res));
	R("bound: accept", rdma_accept(bound, &p));
	R("resolved: accept", rdma_accept(res, &p));
	R("bound: reject", rdma_reject(bound, NULL, 0));
	R("resolved: reject", rdma_reject(res, NULL, 0));
	R("resolved: establish", rdma_establish(res));
	R("bound: connect", rdma_connect(bound, &p));
	R("resolved: init_qp_attr INIT", rdma_init_qp_attr(res, &(struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT },
							   &(int){ 0 }));
	R("bound: listen", rdma_listen(bound, 1));
	R("bound: listen again", rdma_listen(bound, 1));
	R("bound (listening): accept", rdma_accept(bound, &p));
	R("bound (listening): connect", rdma_connect(bound, &p));
	R("resolved: connect (no QP, qp_num given)", rdma_connect(res, &p));
	R("resolved: connect again", rdma_connect(res, &p));
	R("resolved: listen while connecting", rdma_listen(res, 1));
	no_ev("after the calls", ch, 300);
	R("fresh: listen (binds to the wildcard)", rdma_listen(fresh, 1));
	print_id(fresh);
	destroy_id("fresh", fresh);
	destroy_id("bound", bound);
	destroy_id("resolved", res);
	rdma_destroy_event_channel(ch);
}

/* bad input; calls the reference library crashes on run in a child */
static void c_bad_args(void)
{
	struct rdma_event_channel *ch = new_channel("channel");
	struct rdma_cm_id *fresh, *res;
	struct rdma_conn_param p;
	unsigned char pd[8];
	struct ibv_ece e;

	if (!ch || !(fresh = new_id("fresh", ch, RDMA_PS_TCP)) || !(res = new_id("resolved", ch, RDMA_PS_TCP)))
		return;
	resolve("resolved", res, NULL, "192.0.2.1", 7571, 1);
	conn_param(&p, NULL, 0);
	R("resolved: connect NULL param, no QP", rdma_connect(res, NULL));
	p.responder_resources = 200;
	R("resolved: connect resp_res 200", rdma_connect(res, &p));
	p.responder_resources = 1;
	p.initiator_depth = 200;
	R("resolved: connect init_depth 200", rdma_connect(res, &p));
	p.initiator_depth = 1;
	IN_CHILD("resolved: accept NULL param, no QP", rdma_accept(res, NULL));
	IN_CHILD("fresh: connect (no device)", rdma_connect(fresh, &p));
	IN_CHILD("fresh: accept (no device)", rdma_accept(fresh, &p));
	R("resolved: reject pd NULL len 5", rdma_reject(res, NULL, 5));
	R("resolved: reject pd set len 0", rdma_reject(res, pattern(pd, 8, 1), 0));
	R("set_local_ece NULL id", rdma_set_local_ece(NULL, &(struct ibv_ece){ 0x15b3, 0, 0 }));
	R("get_remote_ece NULL id", rdma_get_remote_ece(NULL, &e));
	R("get_remote_ece NULL ece", rdma_get_remote_ece(res, NULL));
	IN_CHILD("join_multicast NULL addr", rdma_join_multicast(res, NULL, NULL));
	{
		struct sockaddr_storage u;
		memset(&u, 0, sizeof(u));
		u.ss_family = AF_UNIX;
		R("join_multicast AF_UNIX", rdma_join_multicast(res, (struct sockaddr *)&u, NULL));
		R("leave_multicast AF_UNIX", rdma_leave_multicast(res, (struct sockaddr *)&u));
		sa_set(&u, "192.0.2.1", 0);
		R("join_multicast unicast address", rdma_join_multicast(res, (struct sockaddr *)&u, NULL));
		no_ev("after the unicast join", ch, 300);
	}
	R("init_qp_attr bad state 99", rdma_init_qp_attr(res, &(struct ibv_qp_attr){ .qp_state = 99 }, &(int){ 0 }));
	R("listen backlog -1", rdma_listen(fresh, -1));
	print_id(res);
	destroy_id("fresh", fresh);
	destroy_id("resolved", res);
	rdma_destroy_event_channel(ch);
}

struct tcase {
	const char *name;
	void (*fn)(void);
};

static const struct tcase tcases[] = {
	{ "rc-v4-pd0", c_rc_v4_pd0 },
	{ "rc-v4-pd1-server-disc", c_rc_v4_pd1 },
	{ "rc-v4-pd56-timewait", c_rc_v4_pd56 },
	{ "rc-v6-server-disc", c_rc_v6 },
	{ "rc-defaults", c_rc_defaults },
	{ "listen-wildcard", c_listen_wildcard },
	{ "srq", c_srq },
	{ "migrate-connected", c_migrate_connected },
	{ "connect-error", c_connect_error },
	{ "client-gone-before-accept", c_client_gone_before_accept },
	{ "create-qp", c_create_qp },
	{ "pd-limits", c_pd_limits },
	{ "reject", c_reject },
	{ "reject-ece", c_reject_ece },
	{ "no-listener", c_no_listener },
	{ "ud", c_ud },
	{ "ud-limits", c_ud_limits },
	{ "ud-reject", c_ud_reject },
	{ "ep-sync", c_ep_sync },
	{ "ep-errors", c_ep_errors },
	{ "ep-ai-connect", c_ep_ai_connect },
	{ "ep-ai-connect-wrap", c_ep_ai_connect_wrap },
	{ "ep-ud-sync", c_ep_ud },
	{ "init-qp-attr", c_init_qp_attr },
	{ "establish-ece", c_establish },
	{ "mcast-v4", c_mcast_v4 },
	{ "mcast-v6", c_mcast_v6 },
	{ "mcast-bound", c_mcast_bound },
	{ "kill-client", c_kill_client },
	{ "kill-server", c_kill_server },
	{ "listener-destroy-pending", c_listener_destroy_pending },
	{ "listener-destroy-child", c_listener_destroy_child },
	{ "backlog", c_backlog },
	{ "device-removal", c_device_removal },
	{ "wrong-state", c_wrong_state },
	{ "bad-args", c_bad_args },
};
#define NT (sizeof(tcases) / sizeof(tcases[0]))

/* the connection functions this library lacks, as one line; NULL: none */
static const char *missing(void)
{
	static char buf[1024];

	buf[0] = 0;
#define X_CHECK(n)                                                   \
	if (!p_##n)                                                  \
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s", buf[0] ? " " : "", #n);
	CONN_FNS(X_CHECK)
	return buf[0] ? buf : NULL;
}

static void run_case(const struct tcase *t)
{
	const char *miss = missing();
	struct timespec t0, t1;
	int st;
	pid_t p;

	printf("case %s:\n", t->name);
	if (miss) {
		printf("  SKIP: library lacks %s\n", miss);
		return;
	}
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	p = fork();
	if (p == 0) {
		alarm(CASE_TIMEOUT);
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
	clock_gettime(CLOCK_MONOTONIC, &t1);
	fprintf(stderr, "%s: %.1f s\n", t->name, (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
}

int main(int argc, char **argv)
{
	struct rlimit no_core = { 0, 0 };
	size_t i;
	int a;

	setvbuf(stdout, NULL, _IOLBF, 0);
	setrlimit(RLIMIT_CORE, &no_core); /* crashes are expected in IN_CHILD */
#define X_RESOLVE(n) p_##n = (__typeof__(p_##n))dlsym(RTLD_DEFAULT, #n);
	CONN_FNS(X_RESOLVE)
	if (argc == 2 && !strcmp(argv[1], "--list")) {
		for (i = 0; i < NT; i++)
			printf("%s\n", tcases[i].name);
		return 0;
	}
	for (a = 1; a < argc; a++) {
		for (i = 0; i < NT && strcmp(argv[a], tcases[i].name); i++)
			;
		if (i == NT) {
			fprintf(stderr, "conn_diff: unknown case %s\n", argv[a]);
			return 2;
		}
	}
	for (i = 0; i < NT; i++) {
		int run = argc == 1;
		for (a = 1; a < argc; a++)
			run |= !strcmp(argv[a], tcases[i].name);
		if (run)
			run_case(&tcases[i]);
	}
	return 0;
}
