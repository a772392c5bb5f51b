/*
 * conn_qp.c — conn_diff's cases of QPs: rdma_create_qp, rdma_init_qp_attr,
 * rdma_establish with an application-owned QP, ECE.
 */
#define _GNU_SOURCE
#include "conn.h"

/* ---- rdma_create_qp ---- */

void c_create_qp(void)
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

void c_init_qp_attr(void)
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

void c_establish(void)
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
