/*
 * conn_common.c — conn_diff's printing (ids, events, address handles) and
 * the building blocks of its cases (conn.h lists them).
 */
#define _GNU_SOURCE
#include "conn.h"

#define X_DEF(n) __typeof__(&n) p_##n;
CONN_FNS(X_DEF)

/* ---- names for ids (events say which id they are for) ---- */

static pthread_mutex_t names_mut = PTHREAD_MUTEX_INITIALIZER;
static struct {
	struct rdma_cm_id *id;
	const char *name;
} names[32];

void name_id(struct rdma_cm_id *id, const char *name)
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

const char *idname(struct rdma_cm_id *id)
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

/* private data: its bytes up to the last non-zero one, then how many zero
 * bytes follow (the kernel pads to the CM message's private data size) */
void print_pd(const void *p, unsigned len)
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

const char *qpn_str(uint32_t q)
{
	return q == 0xffffff ? "0xffffff" : q ? "set" : "0";
}

/* Every field of the id, decoded (no pointers, no QP numbers). */
void print_id(struct rdma_cm_id *id)
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

void print_ah(const struct ibv_ah_attr *ah)
{
	P("    ah dlid=%u sl=%u src_path_bits=%u static_rate=%u is_global=%u port=%u sgid_index=%u hop=%u"
	  " tclass=%u flow=%s dgid=",
	  ah->dlid, ah->sl, ah->src_path_bits, ah->static_rate, ah->is_global, ah->port_num, ah->grh.sgid_index,
	  ah->grh.hop_limit, ah->grh.traffic_class, ah->grh.flow_label ? "set" : "0");
	hex(&ah->grh.dgid, 16);
	P("\n");
}

/* how a QP was asked for: which CQs and SRQ, the capabilities */
void print_qp_attr(struct ibv_qp_init_attr *a, struct rdma_cm_id *id)
{
	P("    attr: send_cq=%s recv_cq=%s srq=%s qp_type=%d sq_sig_all=%d cap=%u/%u/%u/%u/%u\n",
	  !a->send_cq ? "NULL" : a->send_cq == id->send_cq ? "id->send_cq" : "other",
	  !a->recv_cq ? "NULL" : a->recv_cq == id->recv_cq ? "id->recv_cq" : "other", a->srq ? "set" : "NULL",
	  a->qp_type, a->sq_sig_all, a->cap.max_send_wr, a->cap.max_recv_wr, a->cap.max_send_sge,
	  a->cap.max_recv_sge, a->cap.max_inline_data);
}

static int mc_token;
void *mc_context = &mc_token; /* the context the multicast cases join with */
struct rdma_ud_param last_ud;  /* the ud param of the last event get_ev read */

void print_event(struct rdma_cm_event *ev)
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
int get_ev(const char *label, struct rdma_event_channel *ch, int ms, struct rdma_cm_id **child,
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
void no_ev(const char *label, struct rdma_event_channel *ch, int ms)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };

	if (poll(&pfd, 1, ms) == 1) {
		get_ev(label, ch, 0, NULL, NULL);
		return;
	}
	P("  %s: none within %d ms\n", label, ms);
}

struct rdma_event_channel *new_channel(const char *label)
{
	struct rdma_event_channel *ch;

	errno = 0;
	ch = rdma_create_event_channel();
	if (!ch)
		P("  %s: NULL errno=%s\n", label, en(errno));
	return ch;
}

/* ---- building blocks ---- */

struct rdma_cm_id *new_id(const char *name, struct rdma_event_channel *ch, enum rdma_port_space ps)
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

void destroy_id(const char *name, struct rdma_cm_id *id)
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
struct rdma_cm_id *listener(const char *name, struct rdma_event_channel *ch, const char *ip, int port,
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
int resolve(const char *name, struct rdma_cm_id *id, const char *src, const char *ip, int port, int route)
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
struct rdma_cm_id *client(const char *name, struct rdma_event_channel *ch, const char *ip, int port,
				 enum rdma_port_space ps)
{
	struct rdma_cm_id *id = new_id(name, ch, ps);

	if (id && resolve(name, id, NULL, ip, port, 1)) {
		destroy_id(name, id);
		return NULL;
	}
	return id;
}

void qp_attr_init(struct ibv_qp_init_attr *a, enum ibv_qp_type t)
{
	memset(a, 0, sizeof(*a));
	a->qp_type = t;
	a->cap.max_send_wr = 4;
	a->cap.max_recv_wr = 4;
	a->cap.max_send_sge = 1;
	a->cap.max_recv_sge = 1;
}

/* rdma_create_qp(id, NULL, ...) with 4/4 work requests */
int make_qp(const char *name, struct rdma_cm_id *id, enum ibv_qp_type t)
{
	struct ibv_qp_init_attr a;
	char label[64];

	qp_attr_init(&a, t);
	snprintf(label, sizeof(label), "%s: create_qp", name);
	return R(label, rdma_create_qp(id, NULL, &a));
}

void drop_qp(struct rdma_cm_id *id)
{
	if (id && id->qp)
		rdma_destroy_qp(id);
}

/* private data pattern: seed, seed+1, ... */
unsigned char *pattern(unsigned char *b, int n, int seed)
{
	int i;

	for (i = 0; i < n; i++)
		b[i] = seed + i;
	return b;
}

void conn_param(struct rdma_conn_param *p, const void *pd, int len)
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

struct msgbuf *msg_new(const char *label, struct ibv_pd *pd)
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

void msg_free(struct msgbuf *m)
{
	if (m) {
		ibv_dereg_mr(m->mr);
		free(m);
	}
}

void post_recv(const char *label, struct ibv_qp *qp, struct msgbuf *m)
{
	struct ibv_sge sge = { (uintptr_t)m->data, sizeof(m->data), m->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *bad;

	memset(m->data, 0, sizeof(m->data));
	P("  %s: %s\n", label, ibv_post_recv(qp, &wr, &bad) ? "failed" : "ok");
}

/* send text; ah != NULL: UD to (qpn, qkey) */
void post_send(const char *label, struct ibv_qp *qp, struct msgbuf *m, const char *text, struct ibv_ah *ah,
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
void poll_cq(const char *label, struct ibv_cq *cq, int ms, struct msgbuf *m, int skip)
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

void query_qp_state(const char *label, struct ibv_qp *qp)
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

/*
 * listener on ip:port, client connects with `cpd` bytes of private data,
 * the server gets the request, makes its QP, posts a receive, accepts with
 * `spd` bytes; ESTABLISHED on both. Returns 0 when connected.
 */
int rc_connect(struct conn *c, const char *ip, int port, int cpd, int spd)
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

void rc_message(struct conn *c, const char *text)
{
	post_send("client: post_send", c->cid->qp, c->cm, text, NULL, 0, 0);
	poll_cq("client: send completion", c->cid->send_cq, 5000, NULL, 0);
	poll_cq("server: recv completion", c->sid->recv_cq, 5000, c->sm, 0);
}

void rc_teardown(struct conn *c)
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
