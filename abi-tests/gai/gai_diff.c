/*
 * gai_diff.c — differential corpus for rdma_getaddrinfo/rdma_freeaddrinfo.
 *
 * Built once against Debian's header and run with each library under test
 * (abi-tests/gai/run-diff.sh); every case prints its return value, errno
 * when the return is -1, and every field of every result, deterministically.
 * Two outputs are compared case by case.
 *
 *   gai_diff                 all cases
 *   gai_diff NAME...         only these cases
 *   gai_diff --list          case names
 *   gai_diff --leak N        N getaddrinfo/freeaddrinfo pairs over a few
 *                            representative cases (for valgrind)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/rdma_cma.h>
#include <infiniband/ib.h>

#ifndef RAI_SA
#define RAI_SA 0x10
#endif
#ifndef RAI_DNS
#define RAI_DNS 0x20
#endif

enum { PS_NONE = 0, QP_NONE = 0 };

struct gcase {
	const char *name;
	const char *node;
	const char *service;
	int use_hints;
	int flags, family, qp_type, port_space;
	const char *src; /* "ip:port" literal for hints->ai_src_addr, or NULL */
	const char *dst; /* same for hints->ai_dst_addr */
};

#define H(f, fam, qp, ps) 1, f, fam, qp, ps
#define NOH 0, 0, 0, 0, 0

static struct gcase cases[] = {
	/* literals, no hints */
	{ "v4-literal", "192.0.2.1", "7471", NOH },
	{ "v4-loopback", "127.0.0.1", "7471", NOH },
	{ "v6-literal", "fd00::1", "7471", NOH },
	{ "v6-loopback", "::1", "7471", NOH },
	{ "v4-no-service", "192.0.2.1", NULL, NOH },
	{ "v4-short-form", "127.1", "1", NOH },
	{ "v4-mapped-v6", "::ffff:192.0.2.1", "1", NOH },
	/* names from /etc/hosts and services */
	{ "localhost", "localhost", NULL, NOH },
	{ "localhost-ssh", "localhost", "ssh", NOH },
	{ "service-name", "127.0.0.1", "ssh", NOH },
	{ "service-echo", "127.0.0.1", "echo", NOH },
	{ "bad-service", "127.0.0.1", "no-such-service-xyz", NOH },
	{ "service-65535", "127.0.0.1", "65535", NOH },
	{ "service-65536", "127.0.0.1", "65536", NOH },
	{ "no-such-host", "no-such-host.invalid", "1", NOH },
	/* with hints */
	{ "h-v4", "192.0.2.1", "7471", H(0, 0, 0, 0) },
	{ "h-v6", "fd00::1", "7471", H(0, 0, 0, 0) },
	{ "h-v4-tcp", "192.0.2.1", "7471", H(0, 0, 0, RDMA_PS_TCP) },
	{ "h-v4-udp", "192.0.2.1", "7471", H(0, 0, 0, RDMA_PS_UDP) },
	{ "h-v4-ipoib", "192.0.2.1", "7471", H(0, 0, 0, RDMA_PS_IPOIB) },
	{ "h-v4-ib", "192.0.2.1", "7471", H(0, 0, 0, RDMA_PS_IB) },
	{ "h-v4-rc", "192.0.2.1", "7471", H(0, 0, IBV_QPT_RC, 0) },
	{ "h-v4-ud", "192.0.2.1", "7471", H(0, 0, IBV_QPT_UD, 0) },
	{ "h-v4-raw", "192.0.2.1", "7471", H(0, 0, 8, 0) },
	{ "h-fam-inet", "192.0.2.1", "7471", H(0, AF_INET, 0, 0) },
	{ "h-fam-inet6-v4", "192.0.2.1", "7471", H(0, AF_INET6, 0, 0) },
	{ "h-fam-inet-v6", "fd00::1", "7471", H(0, AF_INET, 0, 0) },
	{ "h-fam-inet6", "fd00::1", "7471", H(0, AF_INET6, 0, 0) },
	{ "h-fam-99", "192.0.2.1", "7471", H(0, 99, 0, 0) },
	{ "h-fam-ib-plain", "fd00::1", "7471", H(0, AF_IB, 0, 0) },
	/* flags alone */
	{ "f-passive", "192.0.2.1", "7471", H(RAI_PASSIVE, 0, 0, RDMA_PS_TCP) },
	{ "f-passive-nonode", NULL, "7471", H(RAI_PASSIVE, 0, 0, RDMA_PS_TCP) },
	{ "f-passive-nonode-v6", NULL, "7471", H(RAI_PASSIVE, AF_INET6, 0, RDMA_PS_TCP) },
	{ "f-active-nonode", NULL, "7471", H(0, AF_INET, 0, RDMA_PS_TCP) },
	{ "f-numerichost", "192.0.2.1", "7471", H(RAI_NUMERICHOST, 0, 0, 0) },
	{ "f-numerichost-name", "localhost", "7471", H(RAI_NUMERICHOST, 0, 0, 0) },
	{ "f-noroute", "192.0.2.1", "7471", H(RAI_NOROUTE, 0, 0, 0) },
	{ "f-family", "192.0.2.1", "7471", H(RAI_FAMILY, AF_INET, 0, 0) },
	{ "f-unknown-bit", "192.0.2.1", "7471", H(0x40000000, 0, 0, 0) },
	{ "f-all-classic", "192.0.2.1", "7471", H(RAI_PASSIVE | RAI_NUMERICHOST | RAI_NOROUTE | RAI_FAMILY, AF_INET, 0, 0) },
	{ "f-passive-numeric-v6", "fd00::1", "1", H(RAI_PASSIVE | RAI_NUMERICHOST, 0, IBV_QPT_UD, RDMA_PS_UDP) },
	/* AF_IB conversion */
	{ "ib-active", "fe80::2:c903:f:1234", "7471", H(RAI_FAMILY | RAI_NUMERICHOST, AF_IB, 0, RDMA_PS_IB) },
	{ "ib-passive", "fe80::2:c903:f:1234", "7471", H(RAI_PASSIVE | RAI_FAMILY | RAI_NUMERICHOST, AF_IB, 0, RDMA_PS_IB) },
	{ "ib-no-port", "fd00::1", NULL, H(RAI_FAMILY | RAI_NUMERICHOST, AF_IB, 0, RDMA_PS_TCP) },
	{ "ib-no-ps", "fd00::1", "1", H(RAI_FAMILY | RAI_NUMERICHOST, AF_IB, 0, 0) },
	{ "ib-ud", "fd00::1", "7471", H(RAI_FAMILY | RAI_NUMERICHOST, AF_IB, IBV_QPT_UD, RDMA_PS_UDP) },
	{ "ib-no-family-flag", "fe80::1", "1", H(RAI_NUMERICHOST, AF_IB, 0, 0) },
	{ "ib-no-numeric-flag", "fe80::1", "1", H(RAI_FAMILY, AF_IB, 0, 0) },
	{ "ib-v4-literal", "192.0.2.1", "7471", H(RAI_FAMILY | RAI_NUMERICHOST, AF_IB, 0, RDMA_PS_IB) },
	/* address hints */
	{ "src-hint-active", "192.0.2.2", "7471", H(0, 0, 0, RDMA_PS_TCP), "192.0.2.1:99", NULL },
	{ "src-hint-passive", "192.0.2.2", "7471", H(RAI_PASSIVE, 0, 0, RDMA_PS_TCP), "192.0.2.1:99", NULL },
	{ "src-hint-v6", "fd00::2", "7471", H(0, 0, 0, 0), "[fd00::1]:5", NULL },
	{ "dst-hint-ignored", "192.0.2.2", "7471", H(0, 0, 0, 0), NULL, "10.0.0.1:99" },
	{ "hints-only", NULL, NULL, H(0, 0, 0, 0) },
	{ "hints-only-dst", NULL, NULL, H(0, 0, IBV_QPT_UD, 0), NULL, "10.0.0.1:99" },
	{ "hints-only-all", NULL, NULL, H(RAI_PASSIVE | RAI_NOROUTE, AF_INET6, IBV_QPT_RC, RDMA_PS_IB), "[fd00::1]:1", "[fd00::2]:2" },
	{ "hints-only-flags", NULL, NULL, H(RAI_NOROUTE | RAI_FAMILY | 0x100, AF_INET, 3, 0x999), NULL, NULL },
	/* RAI_SA / RAI_DNS (v65 semantics; v44 ignores the bits) */
	{ "sa-with-node", "192.0.2.1", "1", H(RAI_SA, 0, 0, 0) },
	{ "sa-with-dns", NULL, "1", H(RAI_SA | RAI_DNS, 0, 0, 0) },
	{ "sa-no-service", NULL, NULL, H(RAI_SA, 0, 0, 0) },
	{ "sa-service", NULL, "0x10", H(RAI_SA, 0, 0, 0) },
	{ "dns-flag", "192.0.2.1", "7471", H(RAI_DNS, 0, 0, 0) },
	/* NULL arguments */
	{ "all-null", NULL, NULL, NOH },
	{ "node-null-service", NULL, "7471", NOH },
	{ "service-null-name", "localhost", NULL, H(0, AF_INET, 0, 0) },
	{ "empty-node", "", "1", NOH },
};

/* qp_type x port_space matrix, generated at start-up. */
#define NQP 7
#define NPS 5
static const int qps[NQP] = { 0, IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD, 8, 9, 10 };
static const int pss[NPS] = { 0, RDMA_PS_IPOIB, RDMA_PS_TCP, RDMA_PS_UDP, RDMA_PS_IB };
static struct gcase matrix[NQP * NPS];
static char matrix_names[NQP * NPS][32];

static int fill_addr(const char *spec, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[64];
	const char *colon;
	int port;

	memset(ss, 0, sizeof(*ss));
	if (spec[0] == '[') {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
		colon = strstr(spec, "]:");
		snprintf(host, sizeof(host), "%.*s", (int)(colon - spec - 1), spec + 1);
		port = atoi(colon + 2);
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		inet_pton(AF_INET6, host, &s6->sin6_addr);
		*len = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
		colon = strchr(spec, ':');
		snprintf(host, sizeof(host), "%.*s", (int)(colon - spec), spec);
		port = atoi(colon + 1);
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		inet_pton(AF_INET, host, &s4->sin_addr);
		*len = sizeof(*s4);
	}
	return 0;
}

static void hexdump(const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		printf("%02x", b[i]);
}

static void print_addr(const char *what, const struct sockaddr *sa, socklen_t len)
{
	char buf[INET6_ADDRSTRLEN];

	printf("  %s_len=%u", what, len);
	if (!sa) {
		printf(" %s=NULL\n", what);
		return;
	}
	switch (sa->sa_family) {
	case AF_INET: {
		const struct sockaddr_in *s = (const void *)sa;
		inet_ntop(AF_INET, &s->sin_addr, buf, sizeof(buf));
		printf(" %s=inet %s port %u zero ", what, buf, ntohs(s->sin_port));
		hexdump(s->sin_zero, sizeof(s->sin_zero));
		break;
	}
	case AF_INET6: {
		const struct sockaddr_in6 *s = (const void *)sa;
		inet_ntop(AF_INET6, &s->sin6_addr, buf, sizeof(buf));
		printf(" %s=inet6 %s port %u flow %u scope %u", what, buf, ntohs(s->sin6_port),
		       ntohl(s->sin6_flowinfo), s->sin6_scope_id);
		break;
	}
	case AF_IB: {
		const struct sockaddr_ib *s = (const void *)sa;
		printf(" %s=ib pkey %#x flow %#x gid ", what, ntohs(s->sib_pkey), ntohl(s->sib_flowinfo));
		hexdump(&s->sib_addr, 16);
		printf(" sid %#llx mask %#llx scope %llu", (unsigned long long)be64toh(s->sib_sid),
		       (unsigned long long)be64toh(s->sib_sid_mask), (unsigned long long)s->sib_scope_id);
		break;
	}
	default:
		printf(" %s=family %d ", what, sa->sa_family);
		hexdump(sa, len < 128 ? len : 128);
	}
	printf("\n");
}

/* The hints of a case (addresses stored in src/dst). */
static void make_hints(const struct gcase *c, struct rdma_addrinfo *hints, struct sockaddr_storage *src,
		       struct sockaddr_storage *dst)
{
	memset(hints, 0, sizeof(*hints));
	hints->ai_flags = c->flags;
	hints->ai_family = c->family;
	hints->ai_qp_type = c->qp_type;
	hints->ai_port_space = c->port_space;
	if (c->src) {
		fill_addr(c->src, src, &hints->ai_src_len);
		hints->ai_src_addr = (struct sockaddr *)src;
	}
	if (c->dst) {
		fill_addr(c->dst, dst, &hints->ai_dst_len);
		hints->ai_dst_addr = (struct sockaddr *)dst;
	}
}

static void run_case(const struct gcase *c)
{
	struct rdma_addrinfo hints, *res = NULL, *r;
	struct sockaddr_storage src, dst;
	int ret, n = 0;

	make_hints(c, &hints, &src, &dst);
	errno = 0;
	ret = rdma_getaddrinfo(c->node, c->service, c->use_hints ? &hints : NULL, &res);
	printf("case %s: ret=%d", c->name, ret);
	if (ret == -1)
		printf(" errno=%s", strerrorname_np(errno) ? strerrorname_np(errno) : "?");
	printf("\n");
	if (ret)
		return;
	for (r = res; r; r = r->ai_next, n++) {
		printf(" result %d: flags=%#x family=%d qp_type=%d port_space=%#x\n", n, r->ai_flags, r->ai_family,
		       r->ai_qp_type, r->ai_port_space);
		print_addr("src", r->ai_src_addr, r->ai_src_len);
		print_addr("dst", r->ai_dst_addr, r->ai_dst_len);
		printf("  src_canonname=%s dst_canonname=%s\n", r->ai_src_canonname ? r->ai_src_canonname : "NULL",
		       r->ai_dst_canonname ? r->ai_dst_canonname : "NULL");
		printf("  route_len=%zu route=", r->ai_route_len);
		if (r->ai_route)
			hexdump(r->ai_route, r->ai_route_len);
		printf("\n  connect_len=%zu connect=", r->ai_connect_len);
		if (r->ai_connect)
			hexdump(r->ai_connect, r->ai_connect_len);
		printf("\n");
	}
	rdma_freeaddrinfo(res);
}

static size_t ncases(void)
{
	return sizeof(cases) / sizeof(cases[0]);
}

static void build_matrix(void)
{
	int i, j, k = 0;

	for (i = 0; i < NQP; i++)
		for (j = 0; j < NPS; j++, k++) {
			snprintf(matrix_names[k], sizeof(matrix_names[k]), "qp%d-ps%#x", qps[i], pss[j]);
			matrix[k] = (struct gcase){ matrix_names[k], "192.0.2.1", "7471", H(0, 0, qps[i], pss[j]) };
		}
}

static const struct gcase *find(const char *name)
{
	size_t i;

	for (i = 0; i < ncases(); i++)
		if (!strcmp(cases[i].name, name))
			return &cases[i];
	for (i = 0; i < NQP * NPS; i++)
		if (!strcmp(matrix[i].name, name))
			return &matrix[i];
	return NULL;
}

int main(int argc, char **argv)
{
	size_t i;
	int a;

	setvbuf(stdout, NULL, _IOLBF, 0);
	build_matrix();
	if (argc == 3 && !strcmp(argv[1], "--leak")) {
		static const char *leak_cases[] = { "h-v4", "f-passive", "ib-active", "localhost-ssh",
						    "hints-only-all", "src-hint-active", "v6-literal" };
		long n = atol(argv[2]), l;
		struct rdma_addrinfo *res;

		for (l = 0; l < n; l++) {
			const struct gcase *c = find(leak_cases[l % 7]);
			struct rdma_addrinfo hints;
			struct sockaddr_storage src, dst;

			make_hints(c, &hints, &src, &dst);
			if (rdma_getaddrinfo(c->node, c->service, c->use_hints ? &hints : NULL, &res)) {
				printf("leak run: %s failed\n", c->name);
				return 1;
			}
			rdma_freeaddrinfo(res);
		}
		rdma_freeaddrinfo(NULL);
		printf("leak run: %ld pairs\n", n);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "--list")) {
		for (i = 0; i < ncases(); i++)
			printf("%s\n", cases[i].name);
		for (i = 0; i < NQP * NPS; i++)
			printf("%s\n", matrix[i].name);
		return 0;
	}
	if (argc > 1) {
		for (a = 1; a < argc; a++) {
			const struct gcase *c = find(argv[a]);
			if (!c) {
				fprintf(stderr, "no case %s\n", argv[a]);
				return 2;
			}
			run_case(c);
		}
		return 0;
	}
	for (i = 0; i < ncases(); i++)
		run_case(&cases[i]);
	for (i = 0; i < NQP * NPS; i++)
		run_case(&matrix[i]);
	rdma_freeaddrinfo(NULL);
	printf("case freeaddrinfo-null: ok\n");
	return 0;
}
