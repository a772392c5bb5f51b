/*
 * conn_fault.c — conn_diff's cases of faults: a peer process SIGKILLed,
 * listeners destroyed under requests, a full backlog, device removal.
 */
#define _GNU_SOURCE
#include "conn.h"

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

void c_kill_client(void)
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

void c_kill_server(void)
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
void c_listener_destroy_pending(void)
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
void c_listener_destroy_child(void)
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
void c_backlog(void)
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
void c_device_removal(void)
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
