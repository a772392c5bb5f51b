/*
 * conn_ud.c — conn_diff's cases of UD (SIDR) connections.
 */
#define _GNU_SOURCE
#include "conn.h"

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

void c_ud(void) { ud_case(7520, 0); }
void c_ud_limits(void) { ud_case(7521, 1); }

/* a SIDR request rejected: UNREACHABLE with the reject's private data */
void c_ud_reject(void)
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
