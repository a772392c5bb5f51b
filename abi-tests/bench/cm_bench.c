/*
 * cm_bench.c — per-operation cost of the CM core (make bench, in the VM).
 *
 *   cm_bench ops N REF OURS
 *       Loads two librdmacm builds into one process (dlopen, RTLD_LOCAL:
 *       the program itself links no librdmacm, so each library keeps its
 *       own symbols and state) and runs N ids through create_id, bind_addr,
 *       resolve_addr (+ its event), resolve_route (+ event) and destroy_id,
 *       interleaved: for each id the step runs once with REF, once with
 *       OURS and once as "raw" (the kernel commands REF issues for it,
 *       written straight to /dev/infiniband/rdma_cm with no library), the
 *       order rotating from id to id. Interleaving cancels the drift of a
 *       TCG guest's speed, which moves whole-run medians by +-50 %.
 *       Prints one line per step: median us of REF, OURS, raw.
 *   cm_bench first
 *       Microseconds of the first rdma_create_id of a process (library
 *       initialisation included).
 *   cm_bench first-floor PROVIDER
 *       Microseconds libibverbs alone takes from a fresh process to an
 *       open device context with only PROVIDER (the device's provider
 *       library) loaded: the least a library that opens devices lazily
 *       pays at its first rdma_bind_addr.
 *   cm_bench cycle N
 *       N ids through the five steps, nothing timed (for counting system
 *       calls with strace and instructions with callgrind).
 *   cm_bench conn N
 *       N connections, one after another, between a client id and a
 *       listener in this process over the device's address: resolve
 *       address and route, a QP on each side (rdma_create_qp with the
 *       library's PD and CQs), connect, accept, both ESTABLISHED,
 *       disconnect from the client, DISCONNECTED on the server, which
 *       disconnects too (its DREP), DISCONNECTED on the client, QPs and
 *       ids destroyed; nothing
 *       timed (for callgrind: the connection steps' instructions).
 *   cm_bench port N
 *       N calls of rdma_get_src_port on one id bound to the device's
 *       address, nothing timed (for callgrind: an export that reads one
 *       field, so its count is what the library's C boundary costs a call).
 *   cm_bench scale N
 *       N ids created and bound (to the device's address, port chosen by
 *       the kernel) and kept, then destroyed: prints "scale N BYTES FIRST
 *       LAST DFIRST DLAST", the growth of the resident set per id, the
 *       median microseconds of create+bind over the first and the last
 *       100 ids, and of destroy over the first and last 100.
 *   cm_bench pairs N
 *       N connected RC pairs (as in conn mode) made and kept, then torn
 *       down: prints "pairs N BYTES FIRST LAST DFIRST DLAST", the growth of
 *       the resident set per pair, the median microseconds of making a pair
 *       over the first and the last 100, and of tearing one down with the
 *       most (first 100) and the fewest (last 100) alive.
 *   cm_bench threads T SECONDS
 *       T threads, each with its own event channel, each creating,
 *       binding, resolving (address, with its event) and destroying ids of
 *       its own for SECONDS; prints "threads T IDS_PER_SECOND" (a failed
 *       step ends the run with exit 1). Measures what a multi-threaded
 *       server feels of the library's locking.
 *   "first", "cycle" and "threads" use the library the dynamic linker finds for
 *   librdmacm.so.1 (run them with LD_PRELOAD for ours).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_cma_abi.h>

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp);
	return v[n / 2];
}

/* The librdmacm entry points the benchmark uses, from one dlopen'ed copy. */
struct lib {
	const char *name;
	struct rdma_event_channel *(*create_channel)(void);
	void (*destroy_channel)(struct rdma_event_channel *);
	int (*create_id)(struct rdma_event_channel *, struct rdma_cm_id **, void *, enum rdma_port_space);
	int (*bind_addr)(struct rdma_cm_id *, struct sockaddr *);
	int (*resolve_addr)(struct rdma_cm_id *, struct sockaddr *, struct sockaddr *, int);
	int (*resolve_route)(struct rdma_cm_id *, int);
	int (*get_event)(struct rdma_event_channel *, struct rdma_cm_event **);
	int (*ack_event)(struct rdma_cm_event *);
	int (*destroy_id)(struct rdma_cm_id *);
	struct rdma_event_channel *ch;
	struct rdma_cm_id **ids;
};

static void *sym(void *h, const char *lib, const char *name)
{
	void *p = dlsym(h, name);

	if (!p) {
		fprintf(stderr, "%s: no %s\n", lib, name);
		exit(1);
	}
	return p;
}

/* The library the dynamic linker would give a program (librdmacm.so.1,
 * ours when preloaded), opened once. */
static void *linked(void)
{
	static void *h;

	if (!h && !(h = dlopen("librdmacm.so.1", RTLD_NOW | RTLD_GLOBAL))) {
		fprintf(stderr, "librdmacm.so.1: %s\n", dlerror());
		exit(1);
	}
	return h;
}

static void load_from(struct lib *l, void *h, const char *path, int n)
{
	l->name = path;
	l->create_channel = sym(h, path, "rdma_create_event_channel");
	l->destroy_channel = sym(h, path, "rdma_destroy_event_channel");
	l->create_id = sym(h, path, "rdma_create_id");
	l->bind_addr = sym(h, path, "rdma_bind_addr");
	l->resolve_addr = sym(h, path, "rdma_resolve_addr");
	l->resolve_route = sym(h, path, "rdma_resolve_route");
	l->get_event = sym(h, path, "rdma_get_cm_event");
	l->ack_event = sym(h, path, "rdma_ack_cm_event");
	l->destroy_id = sym(h, path, "rdma_destroy_id");
	l->ch = l->create_channel();
	l->ids = calloc(n, sizeof(*l->ids));
	if (!l->ch || !l->ids) {
		fprintf(stderr, "%s: no event channel\n", path);
		exit(1);
	}
}

static void load(struct lib *l, const char *path, int n)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
		exit(1);
	}
	load_from(l, h, path, n);
}

static int lib_wait(struct lib *l, int type)
{
	struct rdma_cm_event *ev;
	int t;

	if (l->get_event(l->ch, &ev))
		return -1;
	t = ev->event;
	l->ack_event(ev);
	return t == type ? 0 : -1;
}

static struct sockaddr_in src = { .sin_family = AF_INET }, dst = { .sin_family = AF_INET };

/* One step of one id with a library; 0 on success. */
static int lib_step(struct lib *l, int step, int i)
{
	switch (step) {
	case 0:
		return l->create_id(l->ch, &l->ids[i], NULL, RDMA_PS_TCP);
	case 1:
		return l->bind_addr(l->ids[i], (struct sockaddr *)&src);
	case 2:
		return l->resolve_addr(l->ids[i], NULL, (struct sockaddr *)&dst, 2000) ||
		       lib_wait(l, RDMA_CM_EVENT_ADDR_RESOLVED);
	case 3:
		return l->resolve_route(l->ids[i], 2000) || lib_wait(l, RDMA_CM_EVENT_ROUTE_RESOLVED);
	default:
		return l->destroy_id(l->ids[i]);
	}
}

/* "raw": the reference library's kernel commands for each step, no library. */
static int raw_fd;
static uint32_t *raw_ids;

/* Fill the command header inside a ucma_abi_* struct and write it. */
#define RAW(c, code, out_len)                                                      \
	((c).cmd = (code), (c).in = sizeof(c) - sizeof(struct ucma_abi_cmd_hdr), \
	 (c).out = (out_len), write(raw_fd, &(c), sizeof(c)) == (ssize_t)sizeof(c) ? 0 : -1)

static int raw_query(uint32_t id, uint32_t option)
{
	static char resp[sizeof(struct ucma_abi_query_path_resp) + 6 * sizeof(struct ibv_path_data)];
	struct ucma_abi_query q = { .response = (uintptr_t)resp, .id = id, .option = option };

	return RAW(q, UCMA_CMD_QUERY, option == UCMA_QUERY_PATH ? sizeof(resp) : sizeof(struct ucma_abi_query_addr_resp));
}

static int raw_event(void)
{
	struct ucma_abi_event_resp r;
	struct ucma_abi_get_event g = { .response = (uintptr_t)&r };

	return RAW(g, UCMA_CMD_GET_EVENT, sizeof(r));
}

static int raw_step(int step, int i)
{
	switch (step) {
	case 0: {
		struct ucma_abi_create_id_resp r;
		/* uid 0 would make the kernel drop the id's events */
		struct ucma_abi_create_id c = {
			.uid = i + 1, .response = (uintptr_t)&r, .ps = RDMA_PS_TCP, .qp_type = IBV_QPT_RC };

		if (RAW(c, UCMA_CMD_CREATE_ID, sizeof(r)))
			return -1;
		raw_ids[i] = r.id;
		return 0;
	}
	case 1: {
		struct ucma_abi_bind b = { .id = raw_ids[i], .addr_size = sizeof(src) };

		memcpy(&b.addr, &src, sizeof(src));
		return RAW(b, UCMA_CMD_BIND, 0) || raw_query(raw_ids[i], UCMA_QUERY_ADDR) ||
		       raw_query(raw_ids[i], UCMA_QUERY_GID);
	}
	case 2: {
		struct ucma_abi_resolve_addr r = { .id = raw_ids[i], .timeout_ms = 2000, .dst_size = sizeof(dst) };

		memcpy(&r.dst_addr, &dst, sizeof(dst));
		return RAW(r, UCMA_CMD_RESOLVE_ADDR, 0) || raw_event() || raw_query(raw_ids[i], UCMA_QUERY_ADDR) ||
		       raw_query(raw_ids[i], UCMA_QUERY_GID);
	}
	case 3: {
		struct ucma_abi_resolve_route r = { .id = raw_ids[i], .timeout_ms = 2000 };

		return RAW(r, UCMA_CMD_RESOLVE_ROUTE, 0) || raw_event() || raw_query(raw_ids[i], UCMA_QUERY_PATH);
	}
	default: {
		struct ucma_abi_destroy_id_resp r;
		struct ucma_abi_destroy_id d = { .response = (uintptr_t)&r, .id = raw_ids[i] };

		return RAW(d, UCMA_CMD_DESTROY_ID, sizeof(r));
	}
	}
}

/* threads mode: one worker per thread, its own channel and ids. */
struct worker {
	struct lib *l;
	struct rdma_event_channel *ch;
	long done;
	int failed;
};
static volatile int stop_workers;

static void *work(void *arg)
{
	struct worker *w = arg;
	struct lib *l = w->l;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	while (!stop_workers) {
		int ok;

		if (l->create_id(w->ch, &id, NULL, RDMA_PS_TCP)) {
			w->failed = 1;
			break;
		}
		ok = !l->bind_addr(id, (struct sockaddr *)&src) &&
		     !l->resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000) && !l->get_event(w->ch, &ev);
		if (ok) {
			ok = ev->event == RDMA_CM_EVENT_ADDR_RESOLVED;
			l->ack_event(ev);
		}
		if (l->destroy_id(id) || !ok) {
			w->failed = 1;
			break;
		}
		w->done++;
	}
	return NULL;
}

static int threads(int nt, int secs)
{
	void *h = dlopen("librdmacm.so.1", RTLD_NOW | RTLD_GLOBAL);
	struct worker *w = calloc(nt, sizeof(*w));
	pthread_t *tid = calloc(nt, sizeof(*tid));
	struct lib l;
	long total = 0;
	double t0, t1;
	int i;

	if (!h || !w || !tid)
		return 1;
	load_from(&l, h, "librdmacm.so.1", 1);
	for (i = 0; i < nt; i++) {
		w[i].l = &l;
		w[i].ch = l.create_channel();
		if (!w[i].ch)
			return 1;
	}
	t0 = now_us();
	for (i = 0; i < nt; i++)
		pthread_create(&tid[i], NULL, work, &w[i]);
	sleep(secs);
	stop_workers = 1;
	for (i = 0; i < nt; i++) {
		pthread_join(tid[i], NULL);
		total += w[i].done;
		if (w[i].failed) {
			fprintf(stderr, "thread %d: a step failed\n", i);
			return 1;
		}
		l.destroy_channel(w[i].ch);
	}
	t1 = now_us();
	printf("threads %d %.0f\n", nt, total / ((t1 - t0) / 1e6));
	return 0;
}

static int (*conn_get)(struct rdma_event_channel *, struct rdma_cm_event **);
static int (*conn_ack)(struct rdma_cm_event *);

/* The next event on ch must be `type` (status 0): its id in *idp, acked;
 * 0 if so. */
static int conn_wait(int i, struct rdma_event_channel *ch, int type, struct rdma_cm_id **idp)
{
	struct rdma_cm_event *ev;
	int bad = conn_get(ch, &ev);

	if (bad)
		return bad;
	bad = ev->event != type || ev->status;
	if (bad)
		fprintf(stderr, "conn %d: event %d (status %d), wanted %d\n", i, ev->event, ev->status, type);
	*idp = ev->id;
	conn_ack(ev);
	return bad;
}
#define WAIT(ch, type, idp) conn_wait(i, ch, type, idp)

/* The calls of conn and pairs modes, from the library the dynamic linker
 * finds. */
struct connlib {
	struct rdma_event_channel *(*create_channel)(void);
	int (*create_id)(struct rdma_event_channel *, struct rdma_cm_id **, void *, enum rdma_port_space);
	int (*bind_addr)(struct rdma_cm_id *, struct sockaddr *);
	int (*listen)(struct rdma_cm_id *, int);
	int (*resolve_addr)(struct rdma_cm_id *, struct sockaddr *, struct sockaddr *, int);
	int (*resolve_route)(struct rdma_cm_id *, int);
	int (*create_qp)(struct rdma_cm_id *, struct ibv_pd *, struct ibv_qp_init_attr *);
	void (*destroy_qp)(struct rdma_cm_id *);
	int (*connect)(struct rdma_cm_id *, struct rdma_conn_param *);
	int (*accept)(struct rdma_cm_id *, struct rdma_conn_param *);
	int (*disconnect)(struct rdma_cm_id *);
	int (*destroy_id)(struct rdma_cm_id *);
	struct rdma_event_channel *sch, *cch;
	struct rdma_cm_id *lis;
};

/* The calls, two channels (server, client) and a listener on port 7473;
 * 0 on success. */
static int connlib_open(struct connlib *l, int backlog)
{
	void *h = linked();
	const char *L = "librdmacm.so.1";
	struct sockaddr_in la = src;

	l->create_channel = sym(h, L, "rdma_create_event_channel");
	l->create_id = sym(h, L, "rdma_create_id");
	l->bind_addr = sym(h, L, "rdma_bind_addr");
	l->listen = sym(h, L, "rdma_listen");
	l->resolve_addr = sym(h, L, "rdma_resolve_addr");
	l->resolve_route = sym(h, L, "rdma_resolve_route");
	l->create_qp = sym(h, L, "rdma_create_qp");
	l->destroy_qp = sym(h, L, "rdma_destroy_qp");
	l->connect = sym(h, L, "rdma_connect");
	l->accept = sym(h, L, "rdma_accept");
	l->disconnect = sym(h, L, "rdma_disconnect");
	l->destroy_id = sym(h, L, "rdma_destroy_id");
	conn_get = sym(h, L, "rdma_get_cm_event");
	conn_ack = sym(h, L, "rdma_ack_cm_event");
	l->sch = l->create_channel();
	l->cch = l->create_channel();
	la.sin_port = htons(7473);
	if (!l->sch || !l->cch || l->create_id(l->sch, &l->lis, NULL, RDMA_PS_TCP) ||
	    l->bind_addr(l->lis, (struct sockaddr *)&la) || l->listen(l->lis, backlog)) {
		fprintf(stderr, "conn: no listener\n");
		return 1;
	}
	return 0;
}

/* Connection i: a client id resolved to the listener, a QP on each side,
 * connected and accepted, both ESTABLISHED; the two ids in *c and *s. */
static int connlib_pair(struct connlib *l, int i, struct rdma_cm_id **c, struct rdma_cm_id **s)
{
	struct ibv_qp_init_attr qa = { .cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
				       .qp_type = IBV_QPT_RC },
				qb = qa;
	struct rdma_conn_param p = { .responder_resources = 1, .initiator_depth = 1, .retry_count = 7,
				     .rnr_retry_count = 7 };
	struct sockaddr_in da = dst;
	struct rdma_cm_id *x;

	da.sin_port = htons(7473);
	return l->create_id(l->cch, c, NULL, RDMA_PS_TCP) || l->resolve_addr(*c, NULL, (struct sockaddr *)&da, 2000) ||
	       WAIT(l->cch, RDMA_CM_EVENT_ADDR_RESOLVED, &x) || l->resolve_route(*c, 2000) ||
	       WAIT(l->cch, RDMA_CM_EVENT_ROUTE_RESOLVED, &x) || l->create_qp(*c, NULL, &qa) || l->connect(*c, &p) ||
	       WAIT(l->sch, RDMA_CM_EVENT_CONNECT_REQUEST, s) || l->create_qp(*s, NULL, &qb) || l->accept(*s, &p) ||
	       WAIT(l->cch, RDMA_CM_EVENT_ESTABLISHED, &x) || WAIT(l->sch, RDMA_CM_EVENT_ESTABLISHED, &x);
}

/* Disconnect pair i from the client, the server answering; QPs and ids
 * destroyed. */
static int connlib_unpair(struct connlib *l, int i, struct rdma_cm_id *c, struct rdma_cm_id *s)
{
	struct rdma_cm_id *x;

	if (l->disconnect(c) || WAIT(l->sch, RDMA_CM_EVENT_DISCONNECTED, &x) || l->disconnect(s) ||
	    WAIT(l->cch, RDMA_CM_EVENT_DISCONNECTED, &x))
		return 1;
	l->destroy_qp(c);
	l->destroy_qp(s);
	return l->destroy_id(c) || l->destroy_id(s);
}

/* conn mode: the connection steps with the library the dynamic linker
 * finds. */
static int conn_cycle(int n)
{
	struct connlib l;
	int i;

	if (connlib_open(&l, 8))
		return 1;
	for (i = 0; i < n; i++) {
		struct rdma_cm_id *c, *s;

		if (connlib_pair(&l, i, &c, &s) || connlib_unpair(&l, i, c, s)) {
			fprintf(stderr, "conn %d failed\n", i);
			return 1;
		}
	}
	return l.destroy_id(l.lis);
}

/* port mode: n calls of rdma_get_src_port on one bound id, with the
 * library the dynamic linker finds; 0 when every call gave the bound port. */
static int port_calls(int n)
{
	void *h = linked();
	const char *L = "librdmacm.so.1";
	struct rdma_event_channel *(*create_channel)(void) = sym(h, L, "rdma_create_event_channel");
	int (*create_id)(struct rdma_event_channel *, struct rdma_cm_id **, void *, enum rdma_port_space) =
		sym(h, L, "rdma_create_id");
	int (*bind_addr)(struct rdma_cm_id *, struct sockaddr *) = sym(h, L, "rdma_bind_addr");
	uint16_t (*get_port)(struct rdma_cm_id *) = sym(h, L, "rdma_get_src_port");
	struct rdma_event_channel *ch = create_channel();
	struct sockaddr_in a = src;
	struct rdma_cm_id *id;
	int i, bad = 0;

	a.sin_port = htons(7475);
	if (!ch || create_id(ch, &id, NULL, RDMA_PS_TCP) || bind_addr(id, (struct sockaddr *)&a)) {
		fprintf(stderr, "port: no bound id\n");
		return 1;
	}
	for (i = 0; i < n; i++)
		bad |= get_port(id) != a.sin_port;
	return bad;
}

static long rss_bytes(void);

/* pairs mode: n connected RC pairs made and kept, then torn down; prints
 * "pairs N BYTES FIRST LAST DFIRST DLAST": the growth of the resident set
 * per pair (both ids, their QPs and CQs: the library's and the
 * provider's), the median microseconds of making a pair over the first and
 * the last 100, and of tearing one down with the most and the fewest alive. */
static int pairs(int n)
{
	struct connlib l;
	struct rdma_cm_id **c = calloc(n, sizeof(*c)), **s = calloc(n, sizeof(*s));
	double *t = calloc(n, sizeof(double)), *d = calloc(n, sizeof(double));
	long before, after;
	int i, k = n < 100 ? n : 100;

	if (!c || !s || !t || !d || connlib_open(&l, 1024))
		return 1;
	before = rss_bytes();
	for (i = 0; i < n; i++) {
		double t0 = now_us();

		if (connlib_pair(&l, i, &c[i], &s[i])) {
			fprintf(stderr, "pairs: pair %d failed\n", i);
			return 1;
		}
		t[i] = now_us() - t0;
	}
	after = rss_bytes();
	for (i = 0; i < n; i++) {
		double t0 = now_us();

		if (connlib_unpair(&l, i, c[n - 1 - i], s[n - 1 - i])) {
			fprintf(stderr, "pairs: teardown %d failed\n", i);
			return 1;
		}
		d[i] = now_us() - t0;
	}
	printf("pairs %d %ld %.2f %.2f %.2f %.2f\n", n, (after - before) / n, median(t, k), median(t + n - k, k),
	       median(d + n - k, k), median(d, k));
	return l.destroy_id(l.lis);
}

static long rss_bytes(void)
{
	long pages = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &res) != 2)
			res = 0;
		fclose(f);
	}
	return res * sysconf(_SC_PAGESIZE);
}

/* scale mode: many ids at once with the library the dynamic linker finds */
static int scale(int n)
{
	struct lib l;
	double *t = calloc(n, sizeof(double)), *d = calloc(n, sizeof(double));
	struct sockaddr_in a = src;
	long before, after;
	int i, k = n < 100 ? n : 100;

	if (!t || !d)
		return 1;
	load_from(&l, linked(), "librdmacm.so.1", n);
	a.sin_port = 0;
	before = rss_bytes();
	for (i = 0; i < n; i++) {
		double t0 = now_us();

		if (l.create_id(l.ch, &l.ids[i], NULL, RDMA_PS_TCP) || l.bind_addr(l.ids[i], (struct sockaddr *)&a)) {
			fprintf(stderr, "scale: id %d failed\n", i);
			return 1;
		}
		t[i] = now_us() - t0;
	}
	after = rss_bytes();
	for (i = 0; i < n; i++) {
		double t0 = now_us();

		if (l.destroy_id(l.ids[n - 1 - i]))
			return 1;
		d[i] = now_us() - t0;
	}
	/* destroys in reverse: d[0..k) ran with n ids alive, d[n-k..n) with few */
	printf("scale %d %ld %.2f %.2f %.2f %.2f\n", n, (after - before) / n, median(t, k), median(t + n - k, k),
	       median(d + n - k, k), median(d, k));
	return 0;
}

static const char *const step_names[] = { "create_id", "bind", "resolve_addr", "resolve_route", "destroy" };

int main(int argc, char **argv)
{
	struct lib libs[2];
	double *t[5][3];
	int n, i, s, k;

	inet_pton(AF_INET, "192.0.2.1", &src.sin_addr);
	inet_pton(AF_INET, "192.0.2.1", &dst.sin_addr);
	dst.sin_port = htons(7471);
	if (argc == 2 && !strcmp(argv[1], "first")) {
		int (*create)(struct rdma_event_channel *, struct rdma_cm_id **, void *, enum rdma_port_space) =
			sym(linked(), "librdmacm.so.1", "rdma_create_id");
		int (*bind)(struct rdma_cm_id *, struct sockaddr *) = sym(linked(), "librdmacm.so.1", "rdma_bind_addr");
		int (*destroy)(struct rdma_cm_id *) = sym(linked(), "librdmacm.so.1", "rdma_destroy_id");
		struct rdma_cm_id *id;
		double t0;

		t0 = now_us();
		if (create(NULL, &id, NULL, RDMA_PS_TCP))
			return 1;
		printf("first_create_id %.1f\n", now_us() - t0);
		/* the first bind to the device's address (where a library that
		 * opens devices lazily pays for it) */
		t0 = now_us();
		if (bind(id, (struct sockaddr *)&src))
			return 1;
		printf("first_bind %.1f\n", now_us() - t0);
		destroy(id);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "first-gai")) {
		int (*gai)(const char *, const char *, const struct rdma_addrinfo *, struct rdma_addrinfo **) =
			sym(linked(), "librdmacm.so.1", "rdma_getaddrinfo");
		void (*gai_free)(struct rdma_addrinfo *) = sym(linked(), "librdmacm.so.1", "rdma_freeaddrinfo");
		struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP }, *res;
		double t0;

		/* a server's first call: the passive lookup with no node */
		t0 = now_us();
		if (gai(NULL, "7471", &hints, &res))
			return 1;
		printf("first_getaddrinfo %.1f\n", now_us() - t0);
		gai_free(res);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "first-floor")) {
		/* What libibverbs alone takes, from a fresh process, to give a
		 * lazy library its first device context: load the one provider
		 * the device needs (argv[2]), list the devices, open the first.
		 * libibverbs itself is loaded before the clock starts, as it is
		 * for a program linked to either library. */
		void *v = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_GLOBAL);
		struct ibv_device **(*list)(int *);
		struct ibv_context *(*open_dev)(struct ibv_device *);
		struct ibv_device **devs;
		double t0;

		if (!v) {
			fprintf(stderr, "libibverbs.so.1: %s\n", dlerror());
			return 1;
		}
		list = sym(v, "libibverbs.so.1", "ibv_get_device_list");
		open_dev = sym(v, "libibverbs.so.1", "ibv_open_device");
		t0 = now_us();
		if (!dlopen(argv[2], RTLD_NOW)) {
			fprintf(stderr, "%s: %s\n", argv[2], dlerror());
			return 1;
		}
		devs = list(&n);
		if (!devs || n < 1 || !open_dev(devs[0]))
			return 1;
		printf("first_floor %.1f\n", now_us() - t0);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "cycle")) {
		n = atoi(argv[2]);
		load_from(&libs[0], linked(), "librdmacm.so.1", n);
		for (s = 0; s < 5; s++)
			for (i = 0; i < n; i++)
				if (lib_step(&libs[0], s, i))
					return 1;
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "scale"))
		return scale(atoi(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "pairs"))
		return pairs(atoi(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "conn"))
		return conn_cycle(atoi(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "port"))
		return port_calls(atoi(argv[2]));
	if (argc == 4 && !strcmp(argv[1], "threads"))
		return threads(atoi(argv[2]), atoi(argv[3]));
	if (argc != 5 || strcmp(argv[1], "ops"))
		return 2;
	n = atoi(argv[2]);
	load(&libs[0], argv[3], n);
	load(&libs[1], argv[4], n);
	raw_fd = open("/dev/infiniband/rdma_cm", O_RDWR | O_CLOEXEC);
	raw_ids = calloc(n, sizeof(*raw_ids));
	if (raw_fd < 0 || !raw_ids)
		return 1;
	for (s = 0; s < 5; s++)
		for (k = 0; k < 3; k++)
			t[s][k] = calloc(n, sizeof(double));
	for (s = 0; s < 5; s++) {
		for (i = 0; i < n; i++) {
			for (int j = 0; j < 3; j++) {
				double t0;
				int rc;

				k = (i + j) % 3;
				t0 = now_us();
				rc = k < 2 ? lib_step(&libs[k], s, i) : raw_step(s, i);
				t[s][k][i] = now_us() - t0;
				if (rc) {
					fprintf(stderr, "%s failed for id %d with %s\n", step_names[s], i,
						k < 2 ? libs[k].name : "raw");
					return 1;
				}
			}
		}
	}
	for (s = 0; s < 5; s++)
		printf("%s %.2f %.2f %.2f\n", step_names[s], median(t[s][0], n), median(t[s][1], n),
		       median(t[s][2], n));
	libs[0].destroy_channel(libs[0].ch);
	libs[1].destroy_channel(libs[1].ch);
	return 0;
}
