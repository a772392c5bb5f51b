/*
 * conn_ep.c — conn_diff's cases of sync endpoints: rdma_getaddrinfo,
 * rdma_create_ep, rdma_get_request, ai_connect; server and client each
 * block in a thread of their own that prints into its own buffer.
 */
#define _GNU_SOURCE
#include "conn.h"

/* rdma_create_ep failing: no route, the port taken, a QP the device
 * cannot make; and the qp_type it takes from the addrinfo */
void c_ep_errors(void)
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
	for (i = 0; i < 2; i++)
		thread_file[i] = out_buffer();
	pthread_create(&t[0], NULL, a, NULL);
	pthread_create(&t[1], NULL, b, NULL);
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += secs;
	for (i = 0; i < 2; i++) {
		int done = pthread_timedjoin_np(t[i], NULL, &dl) == 0;

		if (done)
			fflush(thread_file[i]);
		out_buffer_print(thread_file[i]);
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

void c_ep_sync(void)
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
 * reference library's u8 length wraps to 0 (upstream bug: no bound on
 * the sum).
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

void c_ep_ai_connect(void)
{
	aic_len = 8;
	aic_user = 8;
	run_threads(aic_server, aic_client, 25);
}

void c_ep_ai_connect_wrap(void)
{
	aic_len = 200;
	aic_user = 56;
	run_threads(aic_server, aic_client, 25);
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

void c_ep_ud(void)
{
	run_threads(ep_ud_server, ep_ud_client, 25);
}
