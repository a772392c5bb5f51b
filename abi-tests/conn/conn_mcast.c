/*
 * conn_mcast.c — conn_diff's cases of multicast: joins (full member and
 * send-only), datagrams to the groups, leaves.
 */
#define _GNU_SOURCE
#include "conn.h"

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

void c_mcast_v4(void) { mcast_case("192.0.2.1", "239.1.2.10", "239.1.2.11", "239.1.2.12"); }
void c_mcast_v6(void) { mcast_case("fd00::1", "ff15::1:10", "ff15::1:11", "ff15::1:12"); }

/* an id only bound (no QP): join, event, leave */
void c_mcast_bound(void)
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
