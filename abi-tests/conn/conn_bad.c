/*
 * conn_bad.c — conn_diff's cases of calls in the wrong state and bad
 * arguments.
 */
#define _GNU_SOURCE
#include "conn.h"

/* calls in the wrong state */
void c_wrong_state(void)
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
void c_bad_args(void)
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
