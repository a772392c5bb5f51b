/*
 * cm_diff.c — differential test of the CM core on a real kernel (the
 * soft-RoCE guest): event channels, sync and async ids, bind, address and
 * route resolution, events, devices, ports, options, notify, migration,
 * bad input, and the RDMACM_1.4 calls (rdma_write_cm_event,
 * rdma_resolve_addrinfo, rdma_query_addrinfo).
 *
 * Built against Debian's v44 header (abi-tests/cm/build.sh). The 1.4
 * functions are looked up with dlsym(RTLD_DEFAULT) so the binary loads on
 * any librdmacm; a library without them makes those cases print
 * "SKIP: library lacks ...".
 *
 * Every case runs in its own child process (forked before the library is
 * touched, so each case starts from an uninitialised library), with a hard
 * timeout (the case runner of abi-tests/common/harness.c); a crash or hang is reported as a line of that case and does not
 * take the other cases down. Each case prints deterministic lines only: no
 * pointers, no fd numbers, no kernel-chosen (ephemeral) ports, no flow
 * labels, no timings. Lines have the form "  LABEL: RESULT" (one LABEL per
 * call, unique within a case) followed by indented detail lines, so that
 * abi-tests/vm/tests.d/20-cm-diff.sh can compare case by case and excuse
 * exactly the lines documented in abi-tests/cm/expected-diffs.txt.
 *
 *   cm_diff [--no-fork] [CASE...]
 *                       every case, or the named ones, in table order; each
 *                       in a child process unless --no-fork (used for one
 *                       valgrind leak check over several cases)
 *   cm_diff --list      the case names (peer-* cases need the two-namespace
 *                       bed and CM_PEER=1 in namespace a)
 *
 * Environment: CM_PEER=1 — running inside namespace a of the two-namespace
 * bed (192.0.2.1 on rxe_a, 192.0.2.2 on rxe_b in namespace b).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include "../common/harness.h"

/* v60+ (RDMACM_1.4) values that Debian 44's header lacks. */
#define EV_ADDRINFO_RESOLVED 16
#define EV_ADDRINFO_ERROR 17
#define EV_USER 18
#define EV_INTERNAL 19
#ifndef RAI_SA
#define RAI_SA 0x00000010
#define RAI_DNS 0x00000020
#endif

/* seconds a case may run before it is killed and reported as hung */
#define CASE_TIMEOUT 60

static int (*p_write_cm_event)(struct rdma_cm_id *, enum rdma_cm_event_type, int, uint64_t);
static int (*p_resolve_addrinfo)(struct rdma_cm_id *, const char *, const char *, const struct rdma_addrinfo *);
static int (*p_query_addrinfo)(struct rdma_cm_id *, struct rdma_addrinfo **);

/* ---- printing ---- */

static const char *fd_state(struct rdma_event_channel *ch)
{
	if (!ch)
		return "NULL";
	return fcntl(ch->fd, F_GETFD) == -1 ? "set(fd invalid)" : "set(fd valid)";
}

/* Every field of the id, decoded; `ctx` is the context the case passed. */
static void print_id(struct rdma_cm_id *id, void *ctx)
{
	struct rdma_addr *a = &id->route.addr;
	int i;

	printf("    verbs=%s pd=%s port_num=%u ps=%#x qp_type=%d context=%s\n",
	       id->verbs ? ibv_get_device_name(id->verbs->device) : "NULL", id->pd ? "set" : "NULL", id->port_num,
	       id->ps, id->qp_type, id->context == ctx ? "as given" : "CHANGED");
	printf("    channel=%s event=%s qp=%s srq=%s send_cq=%s recv_cq=%s send_cq_channel=%s recv_cq_channel=%s\n",
	       fd_state(id->channel), id->event ? "set" : "NULL", id->qp ? "set" : "NULL", id->srq ? "set" : "NULL",
	       id->send_cq ? "set" : "NULL", id->recv_cq ? "set" : "NULL", id->send_cq_channel ? "set" : "NULL",
	       id->recv_cq_channel ? "set" : "NULL");
	print_sa("src", &a->src_addr);
	print_sa("dst", &a->dst_addr);
	printf("    ibaddr sgid=");
	hex(&a->addr.ibaddr.sgid, 16);
	printf(" dgid=");
	hex(&a->addr.ibaddr.dgid, 16);
	printf(" pkey=%#x\n", ntohs(a->addr.ibaddr.pkey));
	printf("    num_paths=%d path_rec=%s\n", id->route.num_paths, id->route.path_rec ? "set" : "NULL");
	for (i = 0; id->route.path_rec && i < id->route.num_paths; i++) {
		struct ibv_sa_path_rec *p = &id->route.path_rec[i];
		printf("    path %d: dgid=", i);
		hex(&p->dgid, 16);
		printf(" sgid=");
		hex(&p->sgid, 16);
		/* RoCE: the kernel hashes the (ephemeral) source port into
		 * the flow label, so only whether it is set is stable. */
		printf(" dlid=%#x slid=%#x raw=%d flow=%s hop=%u tclass=%u rev=%d numb=%u pkey=%#x sl=%u"
		       " mtu=%u/%u rate=%u/%u plt=%u/%u pref=%u\n",
		       ntohs(p->dlid), ntohs(p->slid), p->raw_traffic, p->flow_label ? "set" : "0", p->hop_limit,
		       p->traffic_class, p->reversible, p->numb_path, ntohs(p->pkey), p->sl, p->mtu_selector, p->mtu,
		       p->rate_selector, p->rate, p->packet_life_time_selector, p->packet_life_time, p->preference);
	}
	printf("    get_src_port=%s get_dst_port=%s\n", port_str(rdma_get_src_port(id)),
	       port_str(rdma_get_dst_port(id)));
}

/* The event and the param fields that matter for it. */
static void print_event(struct rdma_cm_event *ev, struct rdma_cm_id *expect_id)
{
	printf("    event %d %s status=%d id=%s listen_id=%s\n", ev->event, rdma_event_str(ev->event), ev->status,
	       ev->id == expect_id ? "ours" : (ev->id ? "other" : "NULL"), ev->listen_id ? "set" : "NULL");
	if ((int)ev->event == EV_USER) {
		uint64_t arg; /* param.arg (v60+; Debian 44's union lacks it) */
		memcpy(&arg, &ev->param, sizeof(arg));
		printf("    param.arg=%#llx\n", (unsigned long long)arg);
	} else if (ev->id && ev->id->qp_type == IBV_QPT_UD) {
		struct rdma_ud_param *u = &ev->param.ud;
		printf("    param.ud private_data=%s len=%u qp_num=%u qkey=%#x ah dlid=%u sl=%u global=%u port=%u"
		       " sgid_index=%u hop=%u tclass=%u flow=%#x dgid=",
		       u->private_data ? "set" : "NULL", u->private_data_len, u->qp_num, u->qkey, u->ah_attr.dlid,
		       u->ah_attr.sl, u->ah_attr.is_global, u->ah_attr.port_num, u->ah_attr.grh.sgid_index,
		       u->ah_attr.grh.hop_limit, u->ah_attr.grh.traffic_class, u->ah_attr.grh.flow_label);
		hex(&u->ah_attr.grh.dgid, 16);
		printf("\n");
	} else {
		struct rdma_conn_param *c = &ev->param.conn;
		printf("    param.conn private_data=%s len=%u resp_res=%u init_depth=%u flow_control=%u retry=%u"
		       " rnr_retry=%u srq=%u qp_num=%u\n",
		       c->private_data ? "set" : "NULL", c->private_data_len, c->responder_resources,
		       c->initiator_depth, c->flow_control, c->retry_count, c->rnr_retry_count, c->srq, c->qp_num);
	}
}

/* Wait for the next event on ch, print it, ack it; returns the event type
 * or -1. `what` labels the result line. */
static int next_event(const char *what, struct rdma_event_channel *ch, struct rdma_cm_id *id)
{
	struct rdma_cm_event *ev;
	int type;

	errno = 0;
	if (rdma_get_cm_event(ch, &ev)) {
		printf("  %s: ret=-1 errno=%s\n", what, en(errno));
		return -1;
	}
	printf("  %s: ret=0\n", what);
	print_event(ev, id);
	type = ev->event;
	R("ack", rdma_ack_cm_event(ev));
	return type;
}

/* A sync id keeps its last event in id->event. */
static void print_sync_event(struct rdma_cm_id *id)
{
	if (id->event)
		print_event(id->event, id);
	else
		printf("    id->event=NULL\n");
}

static struct rdma_event_channel *new_channel(void)
{
	struct rdma_event_channel *ch;

	errno = 0;
	ch = rdma_create_event_channel();
	printf("  create_event_channel: %s", ch ? "ok" : "NULL");
	if (ch)
		printf(" fd %s\n", fcntl(ch->fd, F_GETFD) == -1 ? "invalid" : "valid");
	else
		printf(" errno=%s\n", en(errno));
	return ch;
}

/* ---- address and route resolution ---- */

static int ctx_token; /* the context every id gets */

/*
 * Async id on a fresh channel: optional bind, resolve_addr (optionally
 * from src), the event, and, when the address resolved, resolve_route and
 * its event; every step prints the id. When the address did not resolve
 * but the id has a device (it was bound), resolve_route is tried too (the
 * kernel refuses it; upstream does not crash because id->verbs is set).
 */
static void async_flow(const char *bind_ip, const char *src, const char *dst, int timeout)
{
	struct rdma_event_channel *ch = new_channel();
	struct sockaddr_storage b, s, d;
	struct rdma_cm_id *id;
	int ev;

	if (!ch)
		return;
	if (R("create_id", rdma_create_id(ch, &id, &ctx_token, RDMA_PS_TCP)))
		goto out_ch;
	print_id(id, &ctx_token);
	if (bind_ip) {
		sa_set(&b, bind_ip, 0);
		R("bind_addr", rdma_bind_addr(id, (struct sockaddr *)&b));
		print_id(id, &ctx_token);
	}
	sa_set(&d, dst, 7471);
	if (src)
		sa_set(&s, src, 0);
	if (R("resolve_addr", rdma_resolve_addr(id, src ? (struct sockaddr *)&s : NULL, (struct sockaddr *)&d,
						 timeout)) == 0) {
		ev = next_event("get_cm_event (addr)", ch, id);
		print_id(id, &ctx_token);
		if (ev == RDMA_CM_EVENT_ADDR_RESOLVED) {
			if (R("resolve_route", rdma_resolve_route(id, timeout)) == 0) {
				next_event("get_cm_event (route)", ch, id);
				print_id(id, &ctx_token);
			}
		} else if (id->verbs) {
			R("resolve_route after ADDR_ERROR", rdma_resolve_route(id, timeout));
		}
	} else {
		print_id(id, &ctx_token);
	}
	R("destroy_id", rdma_destroy_id(id));
out_ch:
	rdma_destroy_event_channel(ch);
}

static void c_async_local(void) { async_flow(NULL, NULL, "192.0.2.1", 1000); }
static void c_async_src(void) { async_flow(NULL, "192.0.2.1", "192.0.2.1", 1000); }
static void c_async_wild_src(void) { async_flow(NULL, "0.0.0.0", "192.0.2.1", 1000); }
static void c_async_v6(void) { async_flow(NULL, NULL, "fd00::1", 1000); }
static void c_async_v6_src(void) { async_flow(NULL, "fd00::1", "fd00::1", 1000); }
static void c_async_v6_wild_src(void) { async_flow(NULL, "::", "fd00::1", 1000); }
/* no route at all: the kernel refuses synchronously */
static void c_async_noroute(void) { async_flow(NULL, NULL, "198.51.100.1", 500); }
/* on-link address nobody owns (single-namespace bed: d0 is a dummy) */
static void c_async_unreach(void) { async_flow(NULL, NULL, "192.0.2.99", 1000); }
static void c_bind_then_resolve(void) { async_flow("192.0.2.1", NULL, "192.0.2.1", 1000); }
static void c_bind_any4_then_resolve(void) { async_flow("0.0.0.0", NULL, "192.0.2.1", 1000); }
static void c_bind_any6_then_resolve(void) { async_flow("::", NULL, "fd00::1", 1000); }
/* an id bound to :: resolving an IPv4 destination (family mismatch) */
static void c_bind_any6_resolve_v4(void) { async_flow("::", NULL, "192.0.2.1", 1000); }

/* Cases that need a part of the bed that is not there print one line
 * "  (needs ...)" and nothing else; the runner reports them as skipped. */
static int peer_mode(void)
{
	if (!getenv("CM_PEER")) {
		printf("  (needs the two-namespace bed: CM_PEER=1 inside namespace a)\n");
		return 0;
	}
	return 1;
}

/* The two-namespace bed: from namespace a (192.0.2.1, rxe_a) to b. */
static void c_peer(void)
{
	if (peer_mode())
		async_flow(NULL, NULL, "192.0.2.2", 1000);
}

/* From namespace a, an address on the veth link that nobody answers:
 * resolution runs into its timeout (ADDR_ERROR). */
static void c_peer_unreach(void)
{
	if (peer_mode())
		async_flow(NULL, NULL, "192.0.2.99", 1000);
}

/* The same from a bound id (it has a device), then resolve_route. */
static void c_peer_unreach_bound(void)
{
	if (peer_mode())
		async_flow("192.0.2.1", NULL, "192.0.2.99", 1000);
}

/* Sync id: resolve_addr blocks and maps the event status to errno. */
static void sync_flow(const char *dst, int ps, int timeout)
{
	struct sockaddr_storage d;
	struct rdma_cm_id *id;

	if (R("create_id (sync)", rdma_create_id(NULL, &id, &ctx_token, ps)))
		return;
	print_id(id, &ctx_token);
	sa_set(&d, dst, 7471);
	R("resolve_addr", rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, timeout));
	print_sync_event(id);
	print_id(id, &ctx_token);
	if (id->event && id->event->event == RDMA_CM_EVENT_ADDR_RESOLVED) {
		R("resolve_route", rdma_resolve_route(id, timeout));
		print_sync_event(id);
		print_id(id, &ctx_token);
	}
	R("destroy_id", rdma_destroy_id(id));
}

static void c_sync_tcp(void) { sync_flow("192.0.2.1", RDMA_PS_TCP, 1000); }
static void c_sync_udp(void) { sync_flow("192.0.2.1", RDMA_PS_UDP, 1000); }
static void c_sync_ipoib(void) { sync_flow("fd00::1", RDMA_PS_IPOIB, 1000); }
static void c_sync_ib(void) { sync_flow("192.0.2.1", RDMA_PS_IB, 1000); }
static void c_sync_v6(void) { sync_flow("fd00::1", RDMA_PS_TCP, 1000); }
static void c_sync_noroute(void) { sync_flow("198.51.100.1", RDMA_PS_TCP, 500); }
static void c_sync_unreach(void) { sync_flow("192.0.2.99", RDMA_PS_TCP, 1000); }

static void c_peer_sync(void)
{
	if (peer_mode())
		sync_flow("192.0.2.2", RDMA_PS_UDP, 1000);
}

static void c_peer_unreach_sync(void)
{
	if (peer_mode())
		sync_flow("192.0.2.99", RDMA_PS_TCP, 1000);
}

/*
 * ADDR_ERROR after the timeout on any kernel: the runner adds a veth pair
 * cmv0/cmv1 in the initial namespace, 198.18.0.1/24 on cmv0 with an rxe
 * device on it, cmv1 up without an address, and sets CM_TIMEOUT_NET=1.
 * ARP for 198.18.0.99 goes unanswered. (192.0.2.99 on the dummy d0 does
 * not time out: a dummy device does no ARP, so the address "resolves".)
 */
static int timeout_net(void)
{
	if (!getenv("CM_TIMEOUT_NET")) {
		printf("  (needs the runner's veth pair cmv0/cmv1: CM_TIMEOUT_NET=1)\n");
		return 0;
	}
	return 1;
}

static void c_timeout_async(void)
{
	if (timeout_net())
		async_flow(NULL, NULL, "198.18.0.99", 500);
}

static void c_timeout_bound(void)
{
	if (timeout_net())
		async_flow("198.18.0.1", NULL, "198.18.0.99", 500);
}

static void c_timeout_sync(void)
{
	if (timeout_net())
		sync_flow("198.18.0.99", RDMA_PS_UDP, 500);
}

/*
 * rdma_resolve_route on ids without a device: a fresh id, and one whose
 * address resolution failed. Upstream reads id->verbs->device without a
 * check and crashes; the call runs in a child so
 * the crash is a result line. Ours must answer EINVAL
 * (expected-diffs.txt).
 */
static void c_route_after_failed_addr(void)
{
	struct sockaddr_storage d;
	struct rdma_cm_id *id;

	if (R("create_id (sync)", rdma_create_id(NULL, &id, &ctx_token, RDMA_PS_TCP)))
		return;
	IN_CHILD("resolve_route on a fresh id", rdma_resolve_route(id, 500));
	sa_set(&d, "198.51.100.1", 7471);
	R("resolve_addr", rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 500));
	print_id(id, &ctx_token);
	IN_CHILD("resolve_route after failed resolve_addr", rdma_resolve_route(id, 500));
	R("destroy_id", rdma_destroy_id(id));
}

/* The same with a bound id (id->verbs set): the kernel refuses, no crash. */
static void c_route_after_failed_bound(void)
{
	struct sockaddr_storage b, d;
	struct rdma_cm_id *id;

	if (R("create_id (sync)", rdma_create_id(NULL, &id, &ctx_token, RDMA_PS_TCP)))
		return;
	sa_set(&b, "192.0.2.1", 0);
	R("bind_addr", rdma_bind_addr(id, (struct sockaddr *)&b));
	R("resolve_route before resolve_addr", rdma_resolve_route(id, 500));
	sa_set(&d, "198.51.100.1", 7471);
	R("resolve_addr", rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 500));
	R("resolve_route after failed resolve_addr", rdma_resolve_route(id, 500));
	print_id(id, &ctx_token);
	R("destroy_id", rdma_destroy_id(id));
}

/* ---- bind ---- */

static void bind_case(const char *ip, int port, int sync)
{
	struct rdma_event_channel *ch = NULL;
	struct sockaddr_storage a;
	struct rdma_cm_id *id;

	if (!sync && !(ch = new_channel()))
		return;
	if (R(sync ? "create_id (sync)" : "create_id", rdma_create_id(ch, &id, &ctx_token, RDMA_PS_TCP)) == 0) {
		sa_set(&a, ip, port);
		R("bind_addr", rdma_bind_addr(id, (struct sockaddr *)&a));
		print_id(id, &ctx_token);
		R("bind_addr again", rdma_bind_addr(id, (struct sockaddr *)&a));
		R("destroy_id", rdma_destroy_id(id));
	}
	if (ch)
		rdma_destroy_event_channel(ch);
}

static void c_bind_v4(void) { bind_case("192.0.2.1", 7471, 0); }
static void c_bind_v6(void) { bind_case("fd00::1", 7472, 0); }
static void c_bind_any4(void) { bind_case("0.0.0.0", 0, 0); }
static void c_bind_any6(void) { bind_case("::", 0, 0); }
static void c_bind_any4_port(void) { bind_case("0.0.0.0", 7473, 1); }
static void c_bind_v4_sync(void) { bind_case("192.0.2.1", 0, 1); }
static void c_bind_foreign(void) { bind_case("203.0.113.1", 0, 0); }

/* Two ids on one port, then with REUSEADDR; AFONLY on a v6 wildcard. */
static void c_bind_port_clash(void)
{
	struct rdma_event_channel *ch = new_channel();
	struct sockaddr_storage a;
	struct rdma_cm_id *id1, *id2, *id3;
	int one = 1;

	if (!ch)
		return;
	R("create_id 1", rdma_create_id(ch, &id1, NULL, RDMA_PS_TCP));
	R("create_id 2", rdma_create_id(ch, &id2, NULL, RDMA_PS_TCP));
	R("create_id 3", rdma_create_id(ch, &id3, NULL, RDMA_PS_TCP));
	sa_set(&a, "192.0.2.1", 7474);
	R("bind 1", rdma_bind_addr(id1, (struct sockaddr *)&a));
	R("bind 2 same port", rdma_bind_addr(id2, (struct sockaddr *)&a));
	R("set REUSEADDR on 3", rdma_set_option(id3, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one, sizeof(one)));
	R("bind 3 same port", rdma_bind_addr(id3, (struct sockaddr *)&a));
	R("destroy_id 1", rdma_destroy_id(id1));
	R("destroy_id 2", rdma_destroy_id(id2));
	R("destroy_id 3", rdma_destroy_id(id3));
	R("create_id 4", rdma_create_id(ch, &id1, NULL, RDMA_PS_TCP));
	R("set AFONLY on 4", rdma_set_option(id1, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &one, sizeof(one)));
	sa_set(&a, "::", 7475);
	R("bind 4 [::]:7475", rdma_bind_addr(id1, (struct sockaddr *)&a));
	R("create_id 5", rdma_create_id(ch, &id2, NULL, RDMA_PS_TCP));
	sa_set(&a, "0.0.0.0", 7475);
	R("bind 5 0.0.0.0:7475", rdma_bind_addr(id2, (struct sockaddr *)&a));
	R("destroy_id 4", rdma_destroy_id(id1));
	R("destroy_id 5", rdma_destroy_id(id2));
	rdma_destroy_event_channel(ch);
}

/* ---- devices, strings ---- */
static void c_devices(void)
{
	struct ibv_context **l;
	char *names[64];
	int n = -1, i, k;

	for (k = 0; k < 2; k++) {
		errno = 0;
		l = rdma_get_devices(&n);
		printf("  get_devices #%d: %s n=%d\n", k + 1, l ? "list" : "NULL", n);
		for (i = 0; l && l[i] && i < 64; i++)
			names[i] = strdup(ibv_get_device_name(l[i]->device));
		printf("    entries before NULL=%d\n", i);
		/* enumeration order is the kernel's; compare as a set */
		qsort(names, i, sizeof(names[0]), cmp_str);
		while (i--) {
			printf("    %s\n", names[i]);
			free(names[i]);
		}
		if (l)
			rdma_free_devices(l);
	}
	l = rdma_get_devices(NULL);
	printf("  get_devices(NULL): %s\n", l ? "list" : "NULL");
	if (l)
		rdma_free_devices(l);
}

/* Values 0..15 and 18..21 compare against v44; 16 and 17 (the ADDRINFO
 * events) only against v65 (v14-event-str). */
static void c_event_str(void)
{
	int e;

	for (e = 0; e <= 21; e++)
		if (e != EV_ADDRINFO_RESOLVED && e != EV_ADDRINFO_ERROR)
			printf("  %d: %s\n", e, rdma_event_str(e));
	printf("  1000: %s\n", rdma_event_str(1000));
	printf("  0x7fffffff: %s\n", rdma_event_str(0x7fffffff));
	printf("  -1: %s\n", rdma_event_str(-1));
}

/* ---- bad input, options, notify, nonblocking channel ---- */

static void c_bad_input(void)
{
	struct rdma_event_channel *ch = new_channel();
	struct sockaddr_storage a, bad;
	struct rdma_cm_id *id;

	if (!ch)
		return;
	R("ack_cm_event(NULL)", rdma_ack_cm_event(NULL));
	R("get_cm_event(ch, NULL)", rdma_get_cm_event(ch, NULL));
	R("create_id ps 0x999", rdma_create_id(ch, &id, NULL, 0x999));
	if (R("create_id", rdma_create_id(ch, &id, &ctx_token, RDMA_PS_TCP)))
		return;
	memset(&bad, 0, sizeof(bad));
	bad.ss_family = 99;
	R("bind_addr family 99", rdma_bind_addr(id, (struct sockaddr *)&bad));
	bad.ss_family = AF_UNIX;
	R("bind_addr AF_UNIX", rdma_bind_addr(id, (struct sockaddr *)&bad));
	bad.ss_family = 99;
	R("bind_addr NULL", rdma_bind_addr(id, NULL));
	R("resolve_addr dst family 99", rdma_resolve_addr(id, NULL, (struct sockaddr *)&bad, 100));
	R("resolve_addr dst NULL", rdma_resolve_addr(id, NULL, NULL, 100));
	sa_set(&a, "192.0.2.1", 1);
	R("resolve_addr src family 99", rdma_resolve_addr(id, (struct sockaddr *)&bad, (struct sockaddr *)&a, 100));
	R("notify unconnected COMM_EST", rdma_notify(id, IBV_EVENT_COMM_EST));
	R("notify unconnected LID_CHANGE", rdma_notify(id, IBV_EVENT_LID_CHANGE));
	print_id(id, &ctx_token);
	R("destroy_id", rdma_destroy_id(id));
	rdma_destroy_event_channel(ch);
}

/* O_NONBLOCK on ch->fd: an empty channel answers EAGAIN, and once an
 * event is queued poll() sees the fd readable and the event is read. */
static void c_nonblocking(void)
{
	struct rdma_event_channel *ch = new_channel();
	struct sockaddr_storage d;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct pollfd pfd;
	int r;

	if (!ch)
		return;
	R("set O_NONBLOCK", fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK));
	R("get_cm_event on empty channel", rdma_get_cm_event(ch, &ev));
	R("create_id", rdma_create_id(ch, &id, &ctx_token, RDMA_PS_TCP));
	R("get_cm_event with an idle id", rdma_get_cm_event(ch, &ev));
	sa_set(&d, "192.0.2.1", 7471);
	R("resolve_addr", rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 1000));
	pfd.fd = ch->fd;
	pfd.events = POLLIN;
	r = poll(&pfd, 1, 10000);
	printf("  poll: %s\n", r == 1 && (pfd.revents & POLLIN) ? "readable" : "not readable");
	if (R("get_cm_event", rdma_get_cm_event(ch, &ev)) == 0) {
		print_event(ev, id);
		R("ack", rdma_ack_cm_event(ev));
	}
	R("get_cm_event after draining", rdma_get_cm_event(ch, &ev));
	R("destroy_id", rdma_destroy_id(id));
	rdma_destroy_event_channel(ch);
}

static void c_options(void)
{
	struct rdma_event_channel *ch = new_channel();
	struct sockaddr_storage d;
	struct rdma_cm_id *id;
	uint8_t tos = 32, ack = 14;
	int one = 1, tos4 = 32;

	if (!ch || R("create_id", rdma_create_id(ch, &id, &ctx_token, RDMA_PS_TCP)))
		return;
	R("set TOS u8", rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, sizeof(tos)));
	R("set TOS optlen 4", rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos4, sizeof(tos4)));
	R("set REUSEADDR", rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one, sizeof(one)));
	R("set REUSEADDR optlen 1", rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &tos, 1));
	R("set AFONLY", rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &one, sizeof(one)));
	R("set ACK_TIMEOUT", rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &ack, sizeof(ack)));
	R("set ACK_TIMEOUT optlen 4", rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &one, 4));
	R("set unknown level", rdma_set_option(id, 7, 0, &one, sizeof(one)));
	R("set unknown name", rdma_set_option(id, RDMA_OPTION_ID, 99, &one, sizeof(one)));
	R("set IB_PATH bad len", rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, &one, sizeof(one)));
	/* the TOS set above shows up in the resolved route */
	sa_set(&d, "192.0.2.1", 7471);
	if (R("resolve_addr", rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 1000)) == 0 &&
	    next_event("get_cm_event (addr)", ch, id) == RDMA_CM_EVENT_ADDR_RESOLVED &&
	    R("resolve_route", rdma_resolve_route(id, 1000)) == 0) {
		next_event("get_cm_event (route)", ch, id);
		print_id(id, &ctx_token);
	}
	R("set AFONLY after bind", rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &one, sizeof(one)));
	R("set REUSEADDR after bind", rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one, sizeof(one)));
	R("destroy_id", rdma_destroy_id(id));
	rdma_destroy_event_channel(ch);
}

/* ---- migrate, destroy ---- */

static void c_migrate(void)
{
	struct rdma_event_channel *ch1 = new_channel(), *ch2 = new_channel(), *priv;
	struct sockaddr_storage d;
	struct rdma_cm_id *id;

	if (!ch1 || !ch2 || R("create_id on ch1", rdma_create_id(ch1, &id, &ctx_token, RDMA_PS_TCP)))
		return;
	R("migrate_id to ch2", rdma_migrate_id(id, ch2));
	printf("    channel is ch2: %s, %s\n", id->channel == ch2 ? "yes" : "no", fd_state(id->channel));
	sa_set(&d, "192.0.2.1", 7471);
	R("resolve_addr", rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 1000));
	next_event("get_cm_event on ch2", ch2, id);
	R("migrate_id to NULL (async to sync)", rdma_migrate_id(id, NULL));
	priv = id->channel;
	printf("    channel is a new one: %s, %s\n", priv && priv != ch1 && priv != ch2 ? "yes" : "no",
	       fd_state(id->channel));
	R("resolve_route (now sync)", rdma_resolve_route(id, 1000));
	print_sync_event(id);
	print_id(id, &ctx_token);
	R("migrate_id sync to NULL", rdma_migrate_id(id, NULL));
	R("migrate_id back to ch1 (sync to async)", rdma_migrate_id(id, ch1));
	printf("    channel is ch1: %s, %s, id->event=%s\n", id->channel == ch1 ? "yes" : "no", fd_state(id->channel),
	       id->event ? "set" : "NULL");
	R("migrate_id to its own channel", rdma_migrate_id(id, ch1));
	R("destroy_id", rdma_destroy_id(id));
	rdma_destroy_event_channel(ch1);
	rdma_destroy_event_channel(ch2);
}

/* Events held unacked, then acked, then destroy: must not hang (the case
 * timeout would report a hang). Also events of two ids on one channel. */
static void c_ack_then_destroy(void)
{
	struct rdma_event_channel *ch = new_channel();
	struct rdma_cm_event *ev[4];
	struct sockaddr_storage d;
	struct rdma_cm_id *id1, *id2;
	int i, n = 0, c1 = 0, c2 = 0;

	if (!ch)
		return;
	R("create_id 1", rdma_create_id(ch, &id1, NULL, RDMA_PS_TCP));
	R("create_id 2", rdma_create_id(ch, &id2, NULL, RDMA_PS_UDP));
	sa_set(&d, "192.0.2.1", 7471);
	R("resolve_addr 1", rdma_resolve_addr(id1, NULL, (struct sockaddr *)&d, 1000));
	R("resolve_addr 2", rdma_resolve_addr(id2, NULL, (struct sockaddr *)&d, 1000));
	for (i = 0; i < 2; i++)
		if (rdma_get_cm_event(ch, &ev[n]) == 0)
			n++;
	/* the two ids' events may come in either order: count per id */
	for (i = 0; i < n; i++) {
		c1 += ev[i]->id == id1 && ev[i]->event == RDMA_CM_EVENT_ADDR_RESOLVED;
		c2 += ev[i]->id == id2 && ev[i]->event == RDMA_CM_EVENT_ADDR_RESOLVED;
	}
	printf("  got %d events: id1 ADDR_RESOLVED x%d, id2 ADDR_RESOLVED x%d\n", n, c1, c2);
	R("resolve_route 1 while its event is unacked", rdma_resolve_route(id1, 1000));
	if (rdma_get_cm_event(ch, &ev[n]) == 0) {
		printf("  route event: %s for id%d\n", rdma_event_str(ev[n]->event), ev[n]->id == id1 ? 1 : 2);
		n++;
	}
	for (i = 0; i < n; i++)
		R("ack", rdma_ack_cm_event(ev[i]));
	R("destroy_id 1", rdma_destroy_id(id1));
	R("destroy_id 2", rdma_destroy_id(id2));
	rdma_destroy_event_channel(ch);
}

/* destroy_id of an id whose event was never read (not reported, so
 * nothing to wait for), and of an id with a queued unread route event */
static void c_destroy_unread(void)
{
	struct rdma_event_channel *ch = new_channel();
	struct sockaddr_storage d;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct pollfd pfd = { 0 };

	if (!ch)
		return;
	R("create_id", rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	sa_set(&d, "192.0.2.1", 7471);
	R("resolve_addr", rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 1000));
	pfd.fd = ch->fd;
	pfd.events = POLLIN;
	printf("  poll: %s\n", poll(&pfd, 1, 10000) == 1 ? "readable" : "not readable");
	R("destroy_id with its event unread", rdma_destroy_id(id));
	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	R("get_cm_event after destroy", rdma_get_cm_event(ch, &ev));
	rdma_destroy_event_channel(ch);
}

/* ---- RDMACM_1.4 (reference: upstream v65) ---- */

/*
 * Raw ucma probe: does the kernel itself accept a command?
 * Shows the kernel's own errno next to what the libraries report, so that
 * the expectation for ours in expected-diffs.txt can be checked against
 * the kernel, not against either library. Uses a private fd.
 */
struct ucma_hdr {
	uint32_t cmd;
	uint16_t in, out;
};

static int ucma_cmd(int fd, uint32_t cmd, const void *payload, uint16_t in, uint16_t out)
{
	char buf[8 + 512];
	struct ucma_hdr h = { cmd, in, out };

	memcpy(buf, &h, 8);
	memcpy(buf + 8, payload, in);
	return write(fd, buf, 8 + in) == 8 + in ? 0 : -1;
}

static void kernel_probe(uint32_t cmd)
{
	struct {
		uint64_t uid, response;
		uint16_t ps;
		uint8_t qp_type, reserved[5];
	} create = { 1, 0, RDMA_PS_IB, IBV_QPT_RC, { 0 } };
	struct {
		uint32_t id;
		uint16_t addr_size, reserved;
		struct sockaddr_storage addr;
	} bind = { 0 };
	union {
		struct { /* WRITE_CM_EVENT (24), kernel size 320 */
			uint32_t id, reserved, event, status;
			uint64_t arg;
			uint8_t rest[296];
		} wev;
		struct { /* RESOLVE_IB_SERVICE (23), 88 */
			uint32_t id, reserved;
			uint64_t service_id;
			char name[64];
			uint32_t flags, reserved2;
		} ibs;
	} u;
	uint32_t kid = 0;
	int fd, r;

	fd = open("/dev/infiniband/rdma_cm", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		printf("  kernel probe: open: errno=%s\n", en(errno));
		return;
	}
	create.response = (uintptr_t)&kid;
	bind.addr_size = sizeof(struct sockaddr_in);
	sa_set(&bind.addr, "192.0.2.1", 0);
	memset(&u, 0, sizeof(u));
	if (ucma_cmd(fd, 0 /* CREATE_ID */, &create, sizeof(create), sizeof(kid)) ||
	    (bind.id = kid, ucma_cmd(fd, 20 /* BIND */, &bind, sizeof(bind), 0))) {
		printf("  kernel probe: setup: errno=%s\n", en(errno));
	} else if (cmd == 24) {
		u.wev.id = kid;
		u.wev.event = EV_USER;
		u.wev.arg = 1;
		r = ucma_cmd(fd, cmd, &u.wev, sizeof(u.wev), 0);
		printf("  kernel probe WRITE_CM_EVENT(USER): %s%s\n", r ? "errno=" : "ok", r ? en(errno) : "");
	} else {
		u.ibs.id = kid;
		u.ibs.service_id = 0x10;
		u.ibs.flags = 1; /* by id */
		r = ucma_cmd(fd, cmd, &u.ibs, sizeof(u.ibs), 0);
		printf("  kernel probe RESOLVE_IB_SERVICE on bound RoCE id: %s%s\n", r ? "errno=" : "ok",
		       r ? en(errno) : "");
	}
	close(fd);
}

static void print_ai(struct rdma_addrinfo *ai)
{
	int n = 0;

	for (; ai; ai = ai->ai_next, n++) {
		printf("    ai[%d] flags=%#x family=%d qp_type=%d ps=%#x src_len=%u dst_len=%u route_len=%zu"
		       " connect_len=%zu src_canon=%s dst_canon=%s\n",
		       n, ai->ai_flags, ai->ai_family, ai->ai_qp_type, ai->ai_port_space, ai->ai_src_len,
		       ai->ai_dst_len, ai->ai_route_len, ai->ai_connect_len,
		       ai->ai_src_canonname ? ai->ai_src_canonname : "NULL",
		       ai->ai_dst_canonname ? ai->ai_dst_canonname : "NULL");
		print_sa("ai_src", ai->ai_src_addr);
		print_sa("ai_dst", ai->ai_dst_addr);
	}
	printf("    %d entries\n", n);
}

static void query_print(const char *label, struct rdma_cm_id *id)
{
	struct rdma_addrinfo *ai = NULL;

	if (R(label, p_query_addrinfo(id, &ai)) == 0) {
		print_ai(ai);
		rdma_freeaddrinfo(ai);
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

static void c14_event_str(void)
{
	printf("  16: %s\n", rdma_event_str(EV_ADDRINFO_RESOLVED));
	printf("  17: %s\n", rdma_event_str(EV_ADDRINFO_ERROR));
	printf("  18: %s\n", rdma_event_str(EV_USER));
	printf("  19: %s\n", rdma_event_str(EV_INTERNAL));
	printf("  20: %s\n", rdma_event_str(20));
}

static void c14_write_event(void)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;

	kernel_probe(24);
	if (!have14() || !(ch = new_channel()))
		return;
	if (R("create_id", rdma_create_id(ch, &id, &ctx_token, RDMA_PS_TCP)))
		return;
	R("write_cm_event USER status 5", p_write_cm_event(id, EV_USER, 5, 0x1122334455667788ULL));
	R("write_cm_event USER status -3", p_write_cm_event(id, EV_USER, -3, 0));
	R("write_cm_event ESTABLISHED", p_write_cm_event(id, RDMA_CM_EVENT_ESTABLISHED, 0, 1));
	R("write_cm_event INTERNAL", p_write_cm_event(id, EV_INTERNAL, 0, 16));
	R("write_cm_event ADDRINFO_RESOLVED", p_write_cm_event(id, EV_ADDRINFO_RESOLVED, 0, 1));
	R("write_cm_event NULL id, ESTABLISHED", p_write_cm_event(NULL, RDMA_CM_EVENT_ESTABLISHED, 0, 1));
	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	next_event("get_cm_event 1", ch, id);
	next_event("get_cm_event 2", ch, id);
	next_event("get_cm_event 3", ch, id);
	R("destroy_id", rdma_destroy_id(id));
	rdma_destroy_event_channel(ch);
}

/* write_cm_event on a sync id: the event lands on its private channel,
 * nobody reads it; destroy must not wait for it. */
static void c14_write_event_sync(void)
{
	struct rdma_cm_id *id;

	if (!have14() || R("create_id (sync)", rdma_create_id(NULL, &id, &ctx_token, RDMA_PS_UDP)))
		return;
	R("write_cm_event USER", p_write_cm_event(id, EV_USER, 0, 7));
	print_id(id, &ctx_token);
	R("destroy_id", rdma_destroy_id(id));
}

/* async id, DNS path: resolve, second resolve (pending → EBUSY), the
 * event, query (the list), query again (ENOENT), resolve again. */
static void resolve_ai_async(const char *node, int flags, int early_query)
{
	struct rdma_event_channel *ch;
	struct rdma_addrinfo hints;
	struct rdma_cm_id *id;

	if (!have14() || !(ch = new_channel()))
		return;
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = flags;
	hints.ai_port_space = RDMA_PS_UDP;
	if (R("create_id", rdma_create_id(ch, &id, &ctx_token, RDMA_PS_UDP)))
		return;
	if (R("resolve_addrinfo", p_resolve_addrinfo(id, node, "7471", &hints)) == 0) {
		R("resolve_addrinfo again (pending)", p_resolve_addrinfo(id, node, "7471", &hints));
		if (early_query)
			query_print("query_addrinfo before the event", id);
		next_event("get_cm_event", ch, id);
		query_print("query_addrinfo", id);
		query_print("query_addrinfo again", id);
		if (R("resolve_addrinfo after query", p_resolve_addrinfo(id, node, "7471", NULL)) == 0) {
			next_event("get_cm_event 2", ch, id);
			/* destroy with the second result never queried: the
			 * library frees it */
		}
	}
	print_id(id, &ctx_token);
	R("destroy_id", rdma_destroy_id(id));
	rdma_destroy_event_channel(ch);
}

static void c14_resolve_active(void) { resolve_ai_async("192.0.2.1", 0, 0); }
static void c14_resolve_passive(void) { resolve_ai_async("192.0.2.1", RAI_PASSIVE, 0); }
static void c14_resolve_query_early(void) { resolve_ai_async("fd00::1", RAI_NUMERICHOST, 1); }

static void c14_resolve_sync(void)
{
	struct rdma_cm_id *id;

	if (!have14() || R("create_id (sync)", rdma_create_id(NULL, &id, &ctx_token, RDMA_PS_TCP)))
		return;
	if (R("resolve_addrinfo (no hints)", p_resolve_addrinfo(id, "fd00::1", "7471", NULL)) == 0) {
		print_sync_event(id);
		R("resolve_addrinfo again (not queried)", p_resolve_addrinfo(id, "fd00::1", "7471", NULL));
		query_print("query_addrinfo", id);
		query_print("query_addrinfo again", id);
		if (R("resolve_addrinfo after query", p_resolve_addrinfo(id, "192.0.2.1", NULL, NULL)) == 0) {
			print_sync_event(id);
			query_print("query_addrinfo 2", id);
		}
	}
	R("destroy_id", rdma_destroy_id(id));
}

static void c14_resolve_errors(void)
{
	struct rdma_event_channel *ch;
	struct rdma_addrinfo hints, *ai;
	struct rdma_cm_id *id;

	if (!have14() || !(ch = new_channel()))
		return;
	if (R("create_id", rdma_create_id(ch, &id, &ctx_token, RDMA_PS_TCP)))
		return;
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
	/* none of the failures may leave the id "resolving" */
	hints.ai_flags = RAI_NUMERICHOST;
	if (R("resolve_addrinfo after the failures", p_resolve_addrinfo(id, "192.0.2.1", "1", &hints)) == 0) {
		next_event("get_cm_event", ch, id);
		query_print("query_addrinfo", id);
	}
	R("destroy_id", rdma_destroy_id(id));
	rdma_destroy_event_channel(ch);
}

/* RAI_SA on a RoCE port (no subnet administrator): the kernel refuses
 * RESOLVE_IB_SERVICE; the probe line shows the kernel's own errno. */
static void c14_resolve_sa_rxe(void)
{
	struct rdma_event_channel *ch;
	struct rdma_addrinfo hints;
	struct sockaddr_storage a;
	struct rdma_cm_id *id;

	kernel_probe(23);
	if (!have14() || !(ch = new_channel()))
		return;
	if (R("create_id PS_IB", rdma_create_id(ch, &id, &ctx_token, RDMA_PS_IB)))
		return;
	sa_set(&a, "192.0.2.1", 0);
	R("bind_addr", rdma_bind_addr(id, (struct sockaddr *)&a));
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_SA;
	R("RAI_SA on RoCE", p_resolve_addrinfo(id, NULL, "0x10", &hints));
	R("query_addrinfo", p_query_addrinfo(id, &(struct rdma_addrinfo *){ NULL }));
	R("destroy_id", rdma_destroy_id(id));
	rdma_destroy_event_channel(ch);
}

/* rdma_getaddrinfo failing inside resolve_addrinfo (EAI_NONAME) */
static void c14_resolve_eai(void)
{
	struct rdma_event_channel *ch;
	struct rdma_addrinfo hints;
	struct rdma_cm_id *id;

	if (!have14() || !(ch = new_channel()))
		return;
	if (R("create_id", rdma_create_id(ch, &id, &ctx_token, RDMA_PS_TCP)))
		return;
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_NUMERICHOST;
	R("numeric flag with a name", p_resolve_addrinfo(id, "localhost", "1", &hints));
	R("query_addrinfo", p_query_addrinfo(id, &(struct rdma_addrinfo *){ NULL }));
	R("destroy_id", rdma_destroy_id(id));
	rdma_destroy_event_channel(ch);
}

static const struct tcase tcases[] = {
	{ "async-local", c_async_local },
	{ "async-src", c_async_src },
	{ "async-wild-src", c_async_wild_src },
	{ "async-ipv6", c_async_v6 },
	{ "async-ipv6-src", c_async_v6_src },
	{ "async-ipv6-wild-src", c_async_v6_wild_src },
	{ "async-noroute", c_async_noroute },
	{ "async-unreach", c_async_unreach },
	{ "sync-tcp", c_sync_tcp },
	{ "sync-udp", c_sync_udp },
	{ "sync-ipoib-v6", c_sync_ipoib },
	{ "sync-ib", c_sync_ib },
	{ "sync-v6", c_sync_v6 },
	{ "sync-noroute", c_sync_noroute },
	{ "sync-unreach", c_sync_unreach },
	{ "peer-async", c_peer },
	{ "peer-sync", c_peer_sync },
	{ "peer-unreach", c_peer_unreach },
	{ "peer-unreach-bound", c_peer_unreach_bound },
	{ "peer-unreach-sync", c_peer_unreach_sync },
	{ "timeout-async", c_timeout_async },
	{ "timeout-bound", c_timeout_bound },
	{ "timeout-sync", c_timeout_sync },
	{ "route-after-failed-addr", c_route_after_failed_addr },
	{ "route-after-failed-bound", c_route_after_failed_bound },
	{ "bind-v4", c_bind_v4 },
	{ "bind-v6", c_bind_v6 },
	{ "bind-any4", c_bind_any4 },
	{ "bind-any6", c_bind_any6 },
	{ "bind-any4-port-sync", c_bind_any4_port },
	{ "bind-v4-sync", c_bind_v4_sync },
	{ "bind-foreign", c_bind_foreign },
	{ "bind-port-clash", c_bind_port_clash },
	{ "bind-then-resolve", c_bind_then_resolve },
	{ "bind-any4-then-resolve", c_bind_any4_then_resolve },
	{ "bind-any6-then-resolve", c_bind_any6_then_resolve },
	{ "bind-any6-resolve-v4", c_bind_any6_resolve_v4 },
	{ "devices", c_devices },
	{ "event-str", c_event_str },
	{ "bad-input", c_bad_input },
	{ "nonblocking", c_nonblocking },
	{ "options", c_options },
	{ "migrate", c_migrate },
	{ "ack-then-destroy", c_ack_then_destroy },
	{ "destroy-unread", c_destroy_unread },
	{ "v14-event-str", c14_event_str },
	{ "v14-write-event", c14_write_event },
	{ "v14-write-event-sync", c14_write_event_sync },
	{ "v14-resolve-active", c14_resolve_active },
	{ "v14-resolve-passive", c14_resolve_passive },
	{ "v14-resolve-query-early", c14_resolve_query_early },
	{ "v14-resolve-sync", c14_resolve_sync },
	{ "v14-resolve-errors", c14_resolve_errors },
	{ "v14-resolve-sa-rxe", c14_resolve_sa_rxe },
	{ "v14-resolve-eai", c14_resolve_eai },
};

static void init(void)
{
	p_write_cm_event = dlsym(RTLD_DEFAULT, "rdma_write_cm_event");
	p_resolve_addrinfo = dlsym(RTLD_DEFAULT, "rdma_resolve_addrinfo");
	p_query_addrinfo = dlsym(RTLD_DEFAULT, "rdma_query_addrinfo");
}

int main(int argc, char **argv)
{
	static const struct harness h = {
		.prog = "cm_diff",
		.cases = tcases,
		.ncases = sizeof(tcases) / sizeof(tcases[0]),
		.timeout = CASE_TIMEOUT,
		.no_fork_option = 1,
		.init = init,
	};

	return harness_main(&h, argc, argv);
}
