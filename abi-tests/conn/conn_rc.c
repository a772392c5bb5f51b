/*
 * conn_rc.c — conn_diff's cases of RC connections: connect, accept,
 * reject and disconnect with private data, the defaults, wildcard
 * listeners, an SRQ, a connected id migrated, connect errors.
 */
#define _GNU_SOURCE
#include "conn.h"

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

void c_rc_v4_pd0(void) { rc_case("192.0.2.1", 7501, 0, 0, 0, 0); }
void c_rc_v4_pd1(void) { rc_case("192.0.2.1", 7502, 1, 1, 1, 0); }
void c_rc_v4_pd56(void) { rc_case("192.0.2.1", 7503, 56, 196, 0, 1); }
void c_rc_v6(void) { rc_case("fd00::1", 7504, 8, 8, 1, 0); }

/* connect/accept with NULL param (the QP supplies qp_num, defaults for the
 * rest: depth/resources = device maximum), and 0xff (RDMA_MAX_*) */
void c_rc_defaults(void)
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

/* ---- private data limits ---- */

/* REQ: 56 bytes for the user on PS_TCP (92 minus the 36-byte CMA header);
 * REP 196; a failing accept makes the kernel reject the request. */
void c_pd_limits(void)
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

void c_reject(void) { reject_case(7512, 0); }
void c_reject_ece(void) { reject_case(7513, 1); }

/* ---- no listener ---- */

void c_no_listener(void)
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

/* ---- more connection flows ---- */

/* listeners on the wildcards: what the new ids say about their addresses */
void c_listen_wildcard(void)
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
void c_srq(void)
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
void c_migrate_connected(void)
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
void c_connect_error(void)
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
		 * library swallows it after a CONNECT_ERROR;
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
void c_client_gone_before_accept(void)
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
