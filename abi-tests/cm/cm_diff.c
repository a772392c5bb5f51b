/*
 * cm_diff.c — differential test of the CM core on a real kernel (the
 * soft-RoCE guest): event channels, ids, bind, address and route
 * resolution, events, devices, options, migration, and the RDMACM_1.4
 * calls. Built against Debian's header; the 1.4 functions are looked up
 * with dlsym so the binary also runs on Debian's v44 library.
 *
 * Every case prints deterministic lines (no pointers, fds, ports chosen by
 * the kernel, or timings); abi-tests/vm/tests.d/20-cm-diff.sh runs it with
 * the reference library and with ours and compares case by case.
 *
 *   cm_diff [CASE...]   all cases, or these
 *   cm_diff --list
 *   cm_diff --threads [CYCLES]   the thread test (8 threads x 200 cycles,
 *                       on one shared and on separate channels)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define EV_ADDRINFO_RESOLVED 16
#define EV_USER 18
#ifndef RAI_SA
#define RAI_SA 0x10
#define RAI_DNS 0x20
#endif

static int (*p_write_cm_event)(struct rdma_cm_id *, enum rdma_cm_event_type, int, uint64_t);
static int (*p_resolve_addrinfo)(struct rdma_cm_id *, const char *, const char *, const struct rdma_addrinfo *);
static int (*p_query_addrinfo)(struct rdma_cm_id *, struct rdma_addrinfo **);

static const char *en(int e)
{
	const char *n = strerrorname_np(e);
	static char buf[16];

	if (n)
		return n;
	snprintf(buf, sizeof(buf), "%d", e);
	return buf;
}

/* "ret=0" or "ret=-1 errno=NAME" */
#define R(label, call)                                                    \
	do {                                                              \
		int _r;                                                   \
		errno = 0;                                                \
		_r = (call);                                              \
		if (_r == -1)                                             \
			printf("  %s: ret=-1 errno=%s\n", label, en(errno)); \
		else                                                      \
			printf("  %s: ret=%d\n", label, _r);              \
	} while (0)

static void sa_in(struct sockaddr_storage *ss, const char *ip, int port)
{
	memset(ss, 0, sizeof(*ss));
	if (strchr(ip, ':')) {
		struct sockaddr_in6 *s = (void *)ss;
		s->sin6_family = AF_INET6;
		s->sin6_port = htons(port);
		inet_pton(AF_INET6, ip, &s->sin6_addr);
	} else {
		struct sockaddr_in *s = (void *)ss;
		s->sin_family = AF_INET;
		s->sin_port = htons(port);
		inet_pton(AF_INET, ip, &s->sin_addr);
	}
}

static void hex(const void *p, size_t n)
{
	const unsigned char *b = p;
	while (n--)
		printf("%02x", *b++);
}

static void print_sa(const char *what, const struct sockaddr *sa)
{
	char buf[64];

	switch (sa->sa_family) {
	case AF_INET:
		inet_ntop(AF_INET, &((struct sockaddr_in *)sa)->sin_addr, buf, sizeof(buf));
		printf("    %s: inet %s port %s\n", what, buf,
		       ((struct sockaddr_in *)sa)->sin_port ? "set" : "0");
		break;
	case AF_INET6:
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)sa)->sin6_addr, buf, sizeof(buf));
		printf("    %s: inet6 %s port %s\n", what, buf,
		       ((struct sockaddr_in6 *)sa)->sin6_port ? "set" : "0");
		break;
	default:
		printf("    %s: family %d\n", what, sa->sa_family);
	}
}

static void print_id(struct rdma_cm_id *id)
{
	int i;

	printf("    verbs=%s pd=%s port_num=%u ps=%#x qp_type=%d channel=%s qp=%s\n",
	       id->verbs ? ibv_get_device_name(id->verbs->device) : "NULL", id->pd ? "set" : "NULL",
	       id->port_num, id->ps, id->qp_type, id->channel ? "set" : "NULL", id->qp ? "set" : "NULL");
	print_sa("src", &id->route.addr.src_addr);
	print_sa("dst", &id->route.addr.dst_addr);
	printf("    sgid=");
	hex(&id->route.addr.addr.ibaddr.sgid, 16);
	printf(" dgid=");
	hex(&id->route.addr.addr.ibaddr.dgid, 16);
	printf(" pkey=%#x\n", ntohs(id->route.addr.addr.ibaddr.pkey));
	printf("    num_paths=%d path_rec=%s\n", id->route.num_paths, id->route.path_rec ? "set" : "NULL");
	for (i = 0; i < id->route.num_paths; i++) {
		struct ibv_sa_path_rec *p = &id->route.path_rec[i];
		printf("    path %d: dgid=", i);
		hex(&p->dgid, 16);
		printf(" sgid=");
		hex(&p->sgid, 16);
		/* The kernel derives the RoCE flow label from the source port,
		 * which differs per run: print only whether it is set. */
		printf(" dlid=%#x slid=%#x raw=%d flow=%s hop=%u tclass=%u rev=%d numb=%u pkey=%#x sl=%u"
		       " mtu=%u/%u rate=%u/%u plt=%u/%u pref=%u\n",
		       ntohs(p->dlid), ntohs(p->slid), p->raw_traffic, p->flow_label ? "set" : "0", p->hop_limit,
		       p->traffic_class, p->reversible, p->numb_path, ntohs(p->pkey), p->sl, p->mtu_selector, p->mtu,
		       p->rate_selector, p->rate, p->packet_life_time_selector, p->packet_life_time, p->preference);
	}
	printf("    src_port=%s dst_port=%u\n", rdma_get_src_port(id) ? "set" : "0", ntohs(rdma_get_dst_port(id)));
}

static void print_event(struct rdma_cm_event *ev, struct rdma_cm_id *expect_id)
{
	printf("    event %d %s status=%d id=%s listen_id=%s\n", ev->event, rdma_event_str(ev->event), ev->status,
	       ev->id == expect_id ? "ours" : (ev->id ? "other" : "NULL"), ev->listen_id ? "set" : "NULL");
}

/* Wait for the next event on ch, print it, ack it; 0 if one came. */
static int next_event(struct rdma_event_channel *ch, struct rdma_cm_id *id)
{
	struct rdma_cm_event *ev;

	errno = 0;
	if (rdma_get_cm_event(ch, &ev)) {
		printf("  get_cm_event: ret=-1 errno=%s\n", en(errno));
		return -1;
	}
	print_event(ev, id);
	rdma_ack_cm_event(ev);
	return 0;
}

/* async resolve addr+route of dst (optionally from src) on a fresh id */
static void async_flow(const char *src, const char *dst, int timeout)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_storage s, d;
	struct rdma_cm_id *id;

	if (!ch) {
		printf("  create_event_channel: errno=%s\n", en(errno));
		return;
	}
	R("create_id", rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	sa_in(&d, dst, 7471);
	if (src)
		sa_in(&s, src, 0);
	errno = 0;
	if (rdma_resolve_addr(id, src ? (struct sockaddr *)&s : NULL, (struct sockaddr *)&d, timeout)) {
		printf("  resolve_addr: ret=-1 errno=%s\n", en(errno));
	} else {
		printf("  resolve_addr: ret=0\n");
		next_event(ch, id);
		print_id(id);
		if (id->verbs) {
			R("resolve_route", rdma_resolve_route(id, timeout));
			next_event(ch, id);
			print_id(id);
		}
	}
	R("destroy_id", rdma_destroy_id(id));
	rdma_destroy_event_channel(ch);
}

static void c_async_local(void) { async_flow(NULL, "192.0.2.1", 2000); }
static void c_async_src(void) { async_flow("192.0.2.1", "192.0.2.1", 2000); }
static void c_async_v6(void) { async_flow(NULL, "fd00::1", 2000); }
static void c_async_noroute(void) { async_flow(NULL, "198.51.100.1", 500); }
/* The two-namespace bed's other host; the runner starts this case inside
 * namespace a with CM_PEER=1. */
static void c_async_peer(void)
{
	if (!getenv("CM_PEER")) {
		printf("  (needs the two-namespace bed)\n");
		return;
	}
	async_flow(NULL, "192.0.2.2", 2000);
}

/* From namespace a: an address on the veth link that nobody answers, so
 * resolution runs into its timeout (ADDR_ERROR). */
static void c_peer_unreachable(void)
{
	if (!getenv("CM_PEER")) {
		printf("  (needs the two-namespace bed)\n");
		return;
	}
	async_flow(NULL, "192.0.2.99", 1000);
}

/* rdma_resolve_route on an id whose address resolution failed: upstream
 * dereferences the NULL id->verbs, so reference runs (CM_REF=1) skip it. */
static void c_route_after_failed_addr(void)
{
	struct sockaddr_storage d;
	struct rdma_cm_id *id;

	R("create_id", rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP));
	sa_in(&d, "198.51.100.1", 7471);
	R("resolve_addr", rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 500));
	if (getenv("CM_REF"))
		printf("  resolve_route: skipped (crashes the reference library: NULL id->verbs)\n");
	else
		R("resolve_route", rdma_resolve_route(id, 500));
	R("destroy_id", rdma_destroy_id(id));
}

static void sync_flow(const char *dst, int ps)
{
	struct sockaddr_storage d;
	struct rdma_cm_id *id;

	R("create_id", rdma_create_id(NULL, &id, NULL, ps));
	sa_in(&d, dst, 7471);
	R("resolve_addr", rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 2000));
	if (id->event)
		print_event(id->event, id);
	print_id(id);
	if (id->verbs) {
		R("resolve_route", rdma_resolve_route(id, 2000));
		if (id->event)
			print_event(id->event, id);
		print_id(id);
	}
	R("destroy_id", rdma_destroy_id(id));
}

static void c_sync_tcp(void) { sync_flow("192.0.2.1", RDMA_PS_TCP); }
static void c_sync_udp(void) { sync_flow("192.0.2.1", RDMA_PS_UDP); }
static void c_sync_ipoib(void) { sync_flow("fd00::1", RDMA_PS_IPOIB); }
static void c_sync_ib(void) { sync_flow("192.0.2.1", RDMA_PS_IB); }
static void c_sync_noroute(void) { sync_flow("198.51.100.1", RDMA_PS_TCP); }

static void bind_case(const char *ip, int port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_storage a;
	struct rdma_cm_id *id;

	R("create_id", rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	sa_in(&a, ip, port);
	R("bind_addr", rdma_bind_addr(id, (struct sockaddr *)&a));
	print_id(id);
	R("bind_addr again", rdma_bind_addr(id, (struct sockaddr *)&a));
	R("destroy_id", rdma_destroy_id(id));
	rdma_destroy_event_channel(ch);
}

static void c_bind_v4(void) { bind_case("192.0.2.1", 7471); }
static void c_bind_v6(void) { bind_case("fd00::1", 7472); }
static void c_bind_any4(void) { bind_case("0.0.0.0", 0); }
static void c_bind_any6(void) { bind_case("::", 0); }
static void c_bind_foreign(void) { bind_case("203.0.113.1", 0); }

static void c_bind_then_resolve(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_storage a, d;
	struct rdma_cm_id *id;

	R("create_id", rdma_create_id(ch, &id, NULL, RDMA_PS_UDP));
	sa_in(&a, "192.0.2.1", 0);
	R("bind_addr", rdma_bind_addr(id, (struct sockaddr *)&a));
	sa_in(&d, "192.0.2.1", 7000);
	R("resolve_addr", rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 2000));
	next_event(ch, id);
	R("resolve_route", rdma_resolve_route(id, 2000));
	next_event(ch, id);
	print_id(id);
	R("destroy_id", rdma_destroy_id(id));
	rdma_destroy_event_channel(ch);
}

static void c_devices(void)
{
	struct ibv_context **l;
	int n = -1, i;
	char *names[16];

	l = rdma_get_devices(&n);
	printf("  get_devices: %s n=%d\n", l ? "list" : "NULL", n);
	for (i = 0; l && l[i] && i < 16; i++)
		names[i] = strdup(ibv_get_device_name(l[i]->device));
	/* sorted, so that enumeration order does not matter */
	for (int a = 0; a < i; a++)
		for (int b = a + 1; b < i; b++)
			if (strcmp(names[a], names[b]) > 0) {
				char *t = names[a];
				names[a] = names[b];
				names[b] = t;
			}
	for (int a = 0; a < i; a++) {
		printf("    %s\n", names[a]);
		free(names[a]);
	}
	if (l)
		rdma_free_devices(l);
	l = rdma_get_devices(NULL);
	printf("  get_devices(NULL): %s\n", l ? "list" : "NULL");
	if (l)
		rdma_free_devices(l);
}

static void c_event_str(void)
{
	int e;

	for (e = 0; e <= 15; e++)
		printf("  %d %s\n", e, rdma_event_str(e));
	for (e = 18; e <= 21; e++)
		printf("  %d %s\n", e, rdma_event_str(e));
	printf("  1000 %s\n", rdma_event_str(1000));
	printf("  -1 %s\n", rdma_event_str(-1));
}

static void c_bad_input(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_storage a;
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;

	R("ack(NULL)", rdma_ack_cm_event(NULL));
	R("get_cm_event(ch, NULL)", rdma_get_cm_event(ch, NULL));
	R("create_id ps 0x999", rdma_create_id(ch, &id, NULL, 0x999));
	R("create_id", rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	memset(&a, 0, sizeof(a));
	a.ss_family = 99;
	R("bind_addr family 99", rdma_bind_addr(id, (struct sockaddr *)&a));
	R("bind_addr NULL", rdma_bind_addr(id, NULL));
	R("resolve_addr dst family 99", rdma_resolve_addr(id, NULL, (struct sockaddr *)&a, 100));
	R("resolve_addr dst NULL", rdma_resolve_addr(id, NULL, NULL, 100));
	sa_in(&a, "192.0.2.1", 1);
	{
		struct sockaddr_storage bad;
		memset(&bad, 0, sizeof(bad));
		bad.ss_family = 99;
		R("resolve_addr src family 99", rdma_resolve_addr(id, (struct sockaddr *)&bad, (struct sockaddr *)&a, 100));
	}
	R("notify unconnected", rdma_notify(id, IBV_EVENT_COMM_EST));
	/* non-blocking channel with nothing queued */
	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	R("get_cm_event nonblocking, empty", rdma_get_cm_event(ch, &ev));
	R("destroy_id", rdma_destroy_id(id));
	rdma_destroy_event_channel(ch);
}

static void c_options(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;
	uint8_t tos = 32, ack = 14;
	int one = 1, tos4 = 32;

	R("create_id", rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	R("set TOS u8", rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, sizeof(tos)));
	R("set TOS int", rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos4, sizeof(tos4)));
	R("set REUSEADDR", rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one, sizeof(one)));
	R("set AFONLY", rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &one, sizeof(one)));
	R("set ACK_TIMEOUT", rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &ack, sizeof(ack)));
	R("set unknown level", rdma_set_option(id, 7, 0, &one, sizeof(one)));
	R("set unknown name", rdma_set_option(id, RDMA_OPTION_ID, 99, &one, sizeof(one)));
	R("set IB_PATH bad len", rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, &one, sizeof(one)));
	R("destroy_id", rdma_destroy_id(id));
	rdma_destroy_event_channel(ch);
}

static void c_migrate(void)
{
	struct rdma_event_channel *ch1 = rdma_create_event_channel(), *ch2 = rdma_create_event_channel();
	struct sockaddr_storage d;
	struct rdma_cm_id *id;

	R("create_id", rdma_create_id(ch1, &id, NULL, RDMA_PS_TCP));
	R("migrate to ch2", rdma_migrate_id(id, ch2));
	printf("    channel is ch2: %s\n", id->channel == ch2 ? "yes" : "no");
	sa_in(&d, "192.0.2.1", 7471);
	R("resolve_addr", rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 2000));
	next_event(ch2, id);
	R("migrate to NULL (sync)", rdma_migrate_id(id, NULL));
	printf("    channel is new: %s\n", id->channel != ch1 && id->channel != ch2 ? "yes" : "no");
	R("resolve_route (sync)", rdma_resolve_route(id, 2000));
	if (id->event)
		print_event(id->event, id);
	R("migrate sync to NULL", rdma_migrate_id(id, NULL));
	R("migrate back to ch1", rdma_migrate_id(id, ch1));
	R("destroy_id", rdma_destroy_id(id));
	rdma_destroy_event_channel(ch1);
	rdma_destroy_event_channel(ch2);
}

static void c_unacked_destroy(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_storage d;
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;

	R("create_id", rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	sa_in(&d, "192.0.2.1", 7471);
	R("resolve_addr", rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 2000));
	R("get_cm_event", rdma_get_cm_event(ch, &ev));
	print_event(ev, id);
	/* ack first, then destroy: must not hang */
	R("ack", rdma_ack_cm_event(ev));
	R("destroy_id", rdma_destroy_id(id));
	rdma_destroy_event_channel(ch);
}

/* ---- RDMACM_1.4 (reference: upstream v65) ---- */

static void print_ai(struct rdma_addrinfo *ai)
{
	for (; ai; ai = ai->ai_next) {
		printf("    ai flags=%#x family=%d qp=%d ps=%#x src_len=%u dst_len=%u\n", ai->ai_flags, ai->ai_family,
		       ai->ai_qp_type, ai->ai_port_space, ai->ai_src_len, ai->ai_dst_len);
		if (ai->ai_src_addr)
			print_sa("ai_src", ai->ai_src_addr);
		if (ai->ai_dst_addr)
			print_sa("ai_dst", ai->ai_dst_addr);
	}
}

static int have14(void)
{
	if (!p_write_cm_event || !p_resolve_addrinfo || !p_query_addrinfo) {
		printf("  SKIP: library lacks the RDMACM_1.4 functions\n");
		return 0;
	}
	return 1;
}

static void c14_write_event(void)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;

	if (!have14())
		return;
	ch = rdma_create_event_channel();
	R("create_id", rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	R("write_cm_event USER", p_write_cm_event(id, EV_USER, 5, 0x1122334455667788ULL));
	R("write_cm_event ESTABLISHED", p_write_cm_event(id, RDMA_CM_EVENT_ESTABLISHED, 0, 1));
	R("write_cm_event NULL id", p_write_cm_event(NULL, RDMA_CM_EVENT_ESTABLISHED, 0, 1));
	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	errno = 0;
	if (!rdma_get_cm_event(ch, &ev)) {
		uint64_t arg;
		memcpy(&arg, &ev->param, sizeof(arg));
		print_event(ev, id);
		printf("    arg=%#llx\n", (unsigned long long)arg);
		rdma_ack_cm_event(ev);
	} else {
		printf("  get_cm_event: ret=-1 errno=%s\n", en(errno));
	}
	R("destroy_id", rdma_destroy_id(id));
	rdma_destroy_event_channel(ch);
}

static void c14_event_str(void)
{
	printf("  16 %s\n", rdma_event_str(16));
	printf("  17 %s\n", rdma_event_str(17));
}

static void resolve_ai_async(int flags)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct rdma_addrinfo hints, *ai = NULL;

	if (!have14())
		return;
	ch = rdma_create_event_channel();
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = flags;
	hints.ai_port_space = RDMA_PS_UDP;
	R("create_id", rdma_create_id(ch, &id, NULL, RDMA_PS_UDP));
	errno = 0;
	if (p_resolve_addrinfo(id, "192.0.2.1", "7471", &hints)) {
		printf("  resolve_addrinfo: ret=-1 errno=%s\n", en(errno));
	} else {
		printf("  resolve_addrinfo: ret=0\n");
		R("resolve_addrinfo again (pending)", p_resolve_addrinfo(id, "192.0.2.1", "7471", &hints));
		next_event(ch, id);
		errno = 0;
		if (!p_query_addrinfo(id, &ai)) {
			printf("  query_addrinfo: ret=0\n");
			print_ai(ai);
			rdma_freeaddrinfo(ai);
		} else {
			printf("  query_addrinfo: ret=-1 errno=%s\n", en(errno));
		}
		R("query_addrinfo again", p_query_addrinfo(id, &ai));
	}
	R("destroy_id", rdma_destroy_id(id));
	rdma_destroy_event_channel(ch);
}

static void c14_resolve_active(void) { resolve_ai_async(0); }
static void c14_resolve_passive(void) { resolve_ai_async(RAI_PASSIVE); }

static void c14_resolve_sync(void)
{
	struct rdma_cm_id *id;
	struct rdma_addrinfo *ai = NULL;

	if (!have14())
		return;
	R("create_id sync", rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP));
	R("resolve_addrinfo (no hints)", p_resolve_addrinfo(id, "fd00::1", "7471", NULL));
	if (id->event)
		print_event(id->event, id);
	errno = 0;
	if (!p_query_addrinfo(id, &ai)) {
		printf("  query_addrinfo: ret=0\n");
		print_ai(ai);
		rdma_freeaddrinfo(ai);
	} else {
		printf("  query_addrinfo: ret=-1 errno=%s\n", en(errno));
	}
	R("destroy_id", rdma_destroy_id(id));
}

static void c14_resolve_errors(void)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct rdma_addrinfo hints, *ai;

	if (!have14())
		return;
	ch = rdma_create_event_channel();
	R("create_id", rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_SA | RAI_DNS;
	R("RAI_SA|RAI_DNS", p_resolve_addrinfo(id, NULL, "1", &hints));
	hints.ai_flags = RAI_SA;
	R("RAI_SA with node", p_resolve_addrinfo(id, "192.0.2.1", "1", &hints));
	R("RAI_SA without service", p_resolve_addrinfo(id, NULL, NULL, &hints));
	R("resolve_addrinfo NULL id", p_resolve_addrinfo(NULL, "192.0.2.1", "1", NULL));
	R("query_addrinfo nothing pending", p_query_addrinfo(id, &ai));
	R("query_addrinfo NULL id", p_query_addrinfo(NULL, &ai));
	R("query_addrinfo NULL out", p_query_addrinfo(id, NULL));
	R("destroy_id", rdma_destroy_id(id));
	rdma_destroy_event_channel(ch);
}

static void c14_resolve_sa_rxe(void)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct rdma_addrinfo hints;
	struct sockaddr_storage a;

	if (!have14())
		return;
	ch = rdma_create_event_channel();
	R("create_id PS_IB", rdma_create_id(ch, &id, NULL, RDMA_PS_IB));
	sa_in(&a, "192.0.2.1", 0);
	R("bind_addr", rdma_bind_addr(id, (struct sockaddr *)&a));
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_SA;
	R("RAI_SA on RoCE", p_resolve_addrinfo(id, NULL, "0x10", &hints));
	R("destroy_id", rdma_destroy_id(id));
	rdma_destroy_event_channel(ch);
}

static void c14_resolve_eai(void)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct rdma_addrinfo hints;

	if (!have14())
		return;
	ch = rdma_create_event_channel();
	R("create_id", rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_NUMERICHOST;
	R("numeric flag with a name", p_resolve_addrinfo(id, "localhost", "1", &hints));
	R("destroy_id", rdma_destroy_id(id));
	rdma_destroy_event_channel(ch);
}

struct tcase {
	const char *name;
	void (*fn)(void);
};

static const struct tcase tcases[] = {
	{ "async-local", c_async_local },
	{ "async-src", c_async_src },
	{ "async-ipv6", c_async_v6 },
	{ "async-noroute", c_async_noroute },
	{ "async-peer", c_async_peer },
	{ "peer-unreachable", c_peer_unreachable },
	{ "route-after-failed-addr", c_route_after_failed_addr },
	{ "sync-tcp", c_sync_tcp },
	{ "sync-udp", c_sync_udp },
	{ "sync-ipoib-v6", c_sync_ipoib },
	{ "sync-ib", c_sync_ib },
	{ "sync-noroute", c_sync_noroute },
	{ "bind-v4", c_bind_v4 },
	{ "bind-v6", c_bind_v6 },
	{ "bind-any4", c_bind_any4 },
	{ "bind-any6", c_bind_any6 },
	{ "bind-foreign", c_bind_foreign },
	{ "bind-then-resolve", c_bind_then_resolve },
	{ "devices", c_devices },
	{ "event-str", c_event_str },
	{ "bad-input", c_bad_input },
	{ "options", c_options },
	{ "migrate", c_migrate },
	{ "ack-then-destroy", c_unacked_destroy },
	{ "v14-write-event", c14_write_event },
	{ "v14-event-str", c14_event_str },
	{ "v14-resolve-active", c14_resolve_active },
	{ "v14-resolve-passive", c14_resolve_passive },
	{ "v14-resolve-sync", c14_resolve_sync },
	{ "v14-resolve-errors", c14_resolve_errors },
	{ "v14-resolve-sa-rxe", c14_resolve_sa_rxe },
	{ "v14-resolve-eai", c14_resolve_eai },
};
#define NT (sizeof(tcases) / sizeof(tcases[0]))

/* ---- thread test ---- */
#define THREADS 8
static int CYCLES = 200;

static struct rdma_event_channel *shared_ch;
static pthread_mutex_t lk = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static long events_seen, errors;

struct waiter {
	int done;
};

static void *event_thread(void *arg)
{
	long want = (long)arg, n;
	struct rdma_cm_event *ev;

	for (n = 0; n < want; n++) {
		if (rdma_get_cm_event(shared_ch, &ev)) {
			__atomic_add_fetch(&errors, 1, __ATOMIC_SEQ_CST);
			break;
		}
		struct waiter *w = ev->id->context;
		if (ev->event != RDMA_CM_EVENT_ADDR_RESOLVED)
			__atomic_add_fetch(&errors, 1, __ATOMIC_SEQ_CST);
		rdma_ack_cm_event(ev);
		pthread_mutex_lock(&lk);
		events_seen++;
		w->done = 1;
		pthread_cond_broadcast(&cv);
		pthread_mutex_unlock(&lk);
	}
	return NULL;
}

static void *worker(void *arg)
{
	int shared = (long)arg, i;
	struct sockaddr_storage d;

	sa_in(&d, "192.0.2.1", 7471);
	for (i = 0; i < CYCLES; i++) {
		struct rdma_cm_id *id;
		struct waiter w = { 0 };
		struct sockaddr_storage b;

		if (shared) {
			if (rdma_create_id(shared_ch, &id, &w, RDMA_PS_TCP)) {
				__atomic_add_fetch(&errors, 1, __ATOMIC_SEQ_CST);
				continue;
			}
			sa_in(&b, "192.0.2.1", 0);
			if (rdma_bind_addr(id, (struct sockaddr *)&b) ||
			    rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 2000))
				__atomic_add_fetch(&errors, 1, __ATOMIC_SEQ_CST);
			pthread_mutex_lock(&lk);
			while (!w.done)
				pthread_cond_wait(&cv, &lk);
			pthread_mutex_unlock(&lk);
		} else {
			/* separate channels: a sync id owns its own */
			if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP)) {
				__atomic_add_fetch(&errors, 1, __ATOMIC_SEQ_CST);
				continue;
			}
			sa_in(&b, "192.0.2.1", 0);
			if (rdma_bind_addr(id, (struct sockaddr *)&b) ||
			    rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 2000))
				__atomic_add_fetch(&errors, 1, __ATOMIC_SEQ_CST);
			else
				__atomic_add_fetch(&events_seen, 1, __ATOMIC_SEQ_CST);
		}
		if (rdma_destroy_id(id))
			__atomic_add_fetch(&errors, 1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

static int thread_test(int cycles_scale)
{
	pthread_t t[THREADS], ev;
	int shared, i;
	long want = (long)THREADS * CYCLES;

	(void)cycles_scale;
	for (shared = 1; shared >= 0; shared--) {
		events_seen = errors = 0;
		if (shared) {
			shared_ch = rdma_create_event_channel();
			pthread_create(&ev, NULL, event_thread, (void *)want);
		}
		for (i = 0; i < THREADS; i++)
			pthread_create(&t[i], NULL, worker, (void *)(long)shared);
		for (i = 0; i < THREADS; i++)
			pthread_join(t[i], NULL);
		if (shared) {
			pthread_join(ev, NULL);
			rdma_destroy_event_channel(shared_ch);
		}
		printf("threads %s channel: %d x %d cycles, %ld events, %ld errors\n", shared ? "one shared" : "separate",
		       THREADS, CYCLES, events_seen, errors);
		if (errors || events_seen != want)
			return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	size_t i;
	int a;

	setvbuf(stdout, NULL, _IOLBF, 0);
	p_write_cm_event = dlsym(RTLD_DEFAULT, "rdma_write_cm_event");
	p_resolve_addrinfo = dlsym(RTLD_DEFAULT, "rdma_resolve_addrinfo");
	p_query_addrinfo = dlsym(RTLD_DEFAULT, "rdma_query_addrinfo");
	if (argc == 2 && !strcmp(argv[1], "--list")) {
		for (i = 0; i < NT; i++)
			printf("%s\n", tcases[i].name);
		return 0;
	}
	if (argc >= 2 && !strcmp(argv[1], "--threads")) {
		if (argc == 3)
			CYCLES = atoi(argv[2]);
		return thread_test(1);
	}
	for (i = 0; i < NT; i++) {
		int run = argc == 1;
		for (a = 1; a < argc; a++)
			run |= !strcmp(argv[a], tcases[i].name);
		if (!run)
			continue;
		printf("case %s:\n", tcases[i].name);
		tcases[i].fn();
	}
	return 0;
}
