/*
 * gai_diff.c — differential corpus for rdma_getaddrinfo/rdma_freeaddrinfo.
 *
 * Built once against Debian's header and linked with -lrdmacm (build.sh);
 * run-diff.sh runs it with each library under test (LD_LIBRARY_PATH /
 * LD_PRELOAD) and compares the outputs case by case (compare.awk).
 * Every case prints, deterministically (no pointers, no timings):
 *   case NAME: ret=R [(EAI_NAME)] [errno=ENAME]     errno only when R == -1
 *                                                   (or EAI_SYSTEM)
 *    result I: flags=… family=… qp_type=… port_space=… next=yes|no
 *     src_len=… src=<decoded>          by family, every byte up to the length
 *     dst_len=… dst=<decoded>
 *     src_canonname=… dst_canonname=…
 *     route_len=… route=<hex>|NULL
 *     connect_len=… connect=<hex>|NULL
 * then frees the list with rdma_freeaddrinfo.
 *
 *   gai_diff [--log FILE]     every case, then "case freeaddrinfo-null: ok"
 *   gai_diff [--log FILE] CASE...  only these cases (name or number)
 *   gai_diff --list           "NUMBER NAME REF" per case; REF is v65 for
 *                             cases whose meaning needs RDMACM 1.4's
 *                             RAI_SA/RAI_DNS (v44 ignores those bits), else v44
 *   gai_diff --leak N         N getaddrinfo/freeaddrinfo pairs over a few
 *                             representative cases (run under valgrind)
 *   gai_diff --bench N CASE   N calls of one case, nothing printed per call
 *                             (instruction counts with callgrind)
 *   gai_diff --which          the file that rdma_getaddrinfo was bound to
 *
 * --log FILE writes what is not compared between libraries: the line
 * "library PATH" (the file rdma_getaddrinfo was bound to, so the runner can
 * check it ran the intended library) and, for every successful call,
 * "errno NAME kept" or "errno NAME changed to ENAME": errno is preset to a
 * sentinel before each call, and a successful call must leave it alone
 * (upstream clobbers it).
 *
 * Cases that crash upstream (res == NULL, a hint address that is NULL but
 * has a length) run in a forked child; a crash prints "crashed (SIGNAME)".
 * A case that takes over 2 s (a name lookup waiting for DNS) is reported on
 * stderr, never on stdout.
 *
 * Errno names and hex come from the shared abi-tests/common/harness.c.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <limits.h>
#include <endian.h>
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <rdma/rdma_cma.h>
#include <infiniband/ib.h>
#include "../common/harness.h"

/* RDMACM 1.4 flags (rdma-core v60+); Debian 12's v44 header lacks them. */
#ifndef RAI_SA
#define RAI_SA 0x00000010
#endif
#ifndef RAI_DNS
#define RAI_DNS 0x00000020
#endif
/* librdmacm-internal flag (cma.h), not in any public header. */
#define RAI_ROUTEONLY 0x01000000

/* Case tags. */
enum {
	T_V65 = 1,     /* needs v65 semantics (RAI_SA / RAI_DNS) as reference */
	T_FORK = 2,    /* run in a child: upstream crashes on it */
	T_RES_NULL = 4 /* pass res == NULL */
};

/*
 * One case. Addresses for hints->ai_src_addr / ai_dst_addr are specs
 * parsed by make_addr():
 *   "192.0.2.1:99"          sockaddr_in, len 16
 *   "[fd00::1]:5"           sockaddr_in6, len 28
 *   "ib[fe80::1]0x13f1d2f"  sockaddr_ib, len 48: pkey 0xffff, GID, sid,
 *                           sid_mask all ones
 *   "raw99"                 family 99 followed by bytes 2, 3, 4, …, len 20
 *   "null"                  a NULL pointer (len 16 unless overridden)
 * each optionally followed by "/LEN" to override the length.
 */
struct gcase {
	const char *name;
	const char *node, *service;
	int hints; /* pass hints (else NULL) */
	int flags, family, qp_type, port_space;
	const char *src, *dst;
	int tags;
};

#define NOH(nm, n, s) { .name = nm, .node = n, .service = s }
#define HS(nm, n, s, f, fam, qp, ps) \
	{ .name = nm, .node = n, .service = s, .hints = 1, .flags = f, .family = fam, .qp_type = qp, .port_space = ps }
#define HA(nm, n, s, f, fam, qp, ps, sa, da)                                                                    \
	{ .name = nm, .node = n, .service = s, .hints = 1, .flags = f, .family = fam, .qp_type = qp, .port_space = ps, \
	  .src = sa, .dst = da }
#define HT(nm, n, s, f, fam, qp, ps, t)                                                                         \
	{ .name = nm, .node = n, .service = s, .hints = 1, .flags = f, .family = fam, .qp_type = qp, .port_space = ps, \
	  .tags = t }

#define RC IBV_QPT_RC
#define UC IBV_QPT_UC
#define UD IBV_QPT_UD
#define PS_TCP RDMA_PS_TCP
#define PS_UDP RDMA_PS_UDP
#define PS_IB RDMA_PS_IB
#define PS_IPOIB RDMA_PS_IPOIB
#define NUM RAI_NUMERICHOST
#define IBCONV (RAI_FAMILY | RAI_NUMERICHOST) /* with AF_IB: convert to sockaddr_ib */
#define GID "fe80::2:c903:f:1234"

static const struct gcase cases[] = {
	/* Literals and names without hints (glibc gets NULL hints: AI_ADDRCONFIG|AI_V4MAPPED). */
	NOH("v4-literal", "192.0.2.1", "7471"),
	NOH("v4-loopback", "127.0.0.1", "7471"),
	NOH("v6-literal", "fd00::1", "7471"),
	NOH("v6-loopback", "::1", "7471"),
	NOH("v4-no-service", "192.0.2.1", NULL),
	NOH("v4-short-form", "127.1", "1"),
	NOH("v4-mapped-v6", "::ffff:192.0.2.1", "1"),
	NOH("v4-any", "0.0.0.0", "1"),
	NOH("v6-any", "::", "1"),
	NOH("v6-scope-number", "fe80::1%1", "1"),
	NOH("node-only", "127.0.0.1", NULL),
	NOH("localhost", "localhost", NULL),
	NOH("localhost-ssh", "localhost", "ssh"),
	NOH("service-name", "127.0.0.1", "ssh"),
	NOH("service-echo", "127.0.0.1", "echo"),
	NOH("service-alias", "127.0.0.1", "www"),
	NOH("bad-service", "127.0.0.1", "no-such-service-xyz"),
	NOH("service-65535", "127.0.0.1", "65535"),
	NOH("service-65536", "127.0.0.1", "65536"),
	NOH("no-such-host", "no-such-host.invalid", "1"), /* hosts file, then DNS: must fail fast */
	NOH("empty-node", "", "1"),
	NOH("node-null-service", NULL, "7471"),

	/* Numeric literals with hints: the forms glibc accepts or refuses. */
	HS("h-v4", "192.0.2.1", "7471", 0, 0, 0, 0),
	HS("h-v6", "fd00::1", "7471", 0, 0, 0, 0),
	HS("h-v4-no-service", "192.0.2.1", NULL, 0, 0, 0, 0),
	HS("h-v4-any", "0.0.0.0", "1", 0, 0, 0, 0),
	HS("h-v4-broadcast", "255.255.255.255", "1", NUM, 0, 0, 0),
	HS("h-v6-any", "::", "1", NUM, 0, 0, 0),
	HS("num-v4-leading-zero", "01.2.3.4", "1", NUM, 0, 0, 0),
	HS("num-v4-bad-octal", "08.1.1.1", "1", NUM, 0, 0, 0),
	HS("num-v4-hex", "0x7f.0.0.1", "1", NUM, 0, 0, 0),
	HS("num-v4-3-parts", "1.2.3", "1", NUM, 0, 0, 0),
	HS("num-v4-1-part", "3221225985", "1", NUM, 0, 0, 0),
	HS("num-v4-1-part-overflow", "4294967296", "1", NUM, 0, 0, 0),
	HS("num-v4-5-parts", "1.2.3.4.5", "1", NUM, 0, 0, 0),
	HS("num-v4-256", "256.1.1.1", "1", NUM, 0, 0, 0),
	HS("num-v4-trailing-dot", "1.2.3.4.", "1", NUM, 0, 0, 0),
	HS("num-v4-trailing-space", "1.2.3.4 ", "1", NUM, 0, 0, 0),
	HS("num-v4-leading-space", " 1.2.3.4", "1", NUM, 0, 0, 0),
	HS("num-v6-full", "2001:db8:0:0:0:0:0:1", "1", NUM, 0, 0, 0),
	HS("num-v6-upper", "FD00::ABCD", "1", NUM, 0, 0, 0),
	HS("num-v6-leading-zeros", "0001:0002::0003", "1", NUM, 0, 0, 0),
	HS("num-v6-5-digits", "12345::1", "1", NUM, 0, 0, 0),
	HS("num-v6-embedded-v4", "::1.2.3.4", "1", NUM, 0, 0, 0),
	HS("num-v6-mapped", "::ffff:192.0.2.1", "1", NUM, 0, 0, 0),
	HS("num-v6-mapped-octal", "::ffff:1.2.3.04", "1", NUM, 0, 0, 0),
	HS("num-v6-9-groups", "1:2:3:4:5:6:7:8:9", "1", NUM, 0, 0, 0),
	HS("num-v6-8-groups-dcolon", "1:2:3:4:5:6:7::8", "1", NUM, 0, 0, 0),
	HS("num-v6-trailing-dcolon", "1:2:3:4:5:6:7::", "1", NUM, 0, 0, 0),
	HS("num-v6-two-dcolons", "1::2::3", "1", NUM, 0, 0, 0),
	HS("num-v6-dcolon-then-7", "::1:2:3:4:5:6:7", "1", NUM, 0, 0, 0),
	HS("num-v6-v4-not-last", "::1.2.3.4:1", "1", NUM, 0, 0, 0),
	HS("num-v6-brackets", "[::1]", "1", NUM, 0, 0, 0),
	HS("num-v6-scope-number", "fe80::1%1", "1", NUM, 0, 0, 0),
	HS("num-v6-scope-name", "fe80::1%lo", "1", NUM, 0, 0, 0),
	HS("num-v6-scope-bad", "fe80::1%no-such-if", "1", NUM, 0, 0, 0),
	HS("num-empty", "", "1", NUM, 0, 0, 0),

	/* Services with hints (numeric host). */
	HS("svc-0", "192.0.2.1", "0", 0, 0, 0, 0),
	HS("svc-65535", "192.0.2.1", "65535", 0, 0, 0, 0),
	HS("svc-65536", "192.0.2.1", "65536", 0, 0, 0, 0),
	HS("svc-99999", "192.0.2.1", "99999", 0, 0, 0, 0),
	HS("svc-6-digits", "192.0.2.1", "000080", 0, 0, 0, 0),
	HS("svc-leading-zeros", "192.0.2.1", "007", 0, 0, 0, 0),
	HS("svc-5-zeros", "192.0.2.1", "00000", 0, 0, 0, 0),
	HS("svc-2pow32-plus-1", "192.0.2.1", "4294967297", 0, 0, 0, 0),
	HS("svc-plus", "192.0.2.1", "+1", 0, 0, 0, 0),
	HS("svc-minus", "192.0.2.1", "-1", 0, 0, 0, 0),
	HS("svc-space", "192.0.2.1", " 1", 0, 0, 0, 0),
	HS("svc-trailing-junk", "192.0.2.1", "1a", 0, 0, 0, 0),
	HS("svc-hex", "192.0.2.1", "0x10", 0, 0, 0, 0),
	HS("svc-empty", "192.0.2.1", "", 0, 0, 0, 0),
	HS("svc-name", "192.0.2.1", "ssh", 0, 0, 0, 0),
	HS("svc-name-ud", "192.0.2.1", "echo", 0, 0, UD, 0),
	HS("svc-tcp-only-ud", "192.0.2.1", "ssh", 0, 0, UD, 0),
	HS("svc-bad", "192.0.2.1", "no-such-service-xyz", 0, 0, 0, PS_TCP),

	/* Families. */
	HS("fam-inet", "192.0.2.1", "7471", 0, AF_INET, 0, 0),
	HS("fam-inet6-v4", "192.0.2.1", "7471", 0, AF_INET6, 0, 0),
	HS("fam-inet-v6", "fd00::1", "7471", 0, AF_INET, 0, 0),
	HS("fam-inet6", "fd00::1", "7471", 0, AF_INET6, 0, 0),
	HS("fam-inet-mapped", "::ffff:192.0.2.1", "1", 0, AF_INET, 0, 0),
	HS("fam-99", "192.0.2.1", "7471", 0, 99, 0, 0),
	HS("fam-unix", "192.0.2.1", "7471", 0, AF_UNIX, 0, 0),
	HS("fam-negative", "192.0.2.1", "7471", 0, -1, 0, 0),
	HS("fam-ib-plain", "fd00::1", "7471", 0, AF_IB, 0, 0),
	HS("fam-ib-v4", "192.0.2.1", "7471", 0, AF_IB, 0, 0),
	HS("fam-inet-localhost", "localhost", "7471", 0, AF_INET, 0, 0),

	/* Flags, alone and combined. */
	HS("f-passive", "192.0.2.1", "7471", RAI_PASSIVE, 0, 0, PS_TCP),
	HS("f-passive-nonode", NULL, "7471", RAI_PASSIVE, 0, 0, PS_TCP),
	HS("f-passive-nonode-v6", NULL, "7471", RAI_PASSIVE, AF_INET6, 0, PS_TCP),
	HS("f-passive-nonode-ud", NULL, "7471", RAI_PASSIVE, 0, UD, PS_UDP),
	HS("f-passive-localhost", "localhost", "7471", RAI_PASSIVE, 0, 0, 0),
	HS("f-passive-v6", "fd00::1", "7471", RAI_PASSIVE, 0, 0, 0),
	HS("f-passive-no-service", "192.0.2.1", NULL, RAI_PASSIVE, 0, 0, 0),
	HS("f-active-nonode", NULL, "7471", 0, AF_INET, 0, PS_TCP),
	HS("f-active-nonode-unspec", NULL, "7471", 0, 0, 0, 0),
	HS("f-numerichost", "192.0.2.1", "7471", RAI_NUMERICHOST, 0, 0, 0),
	HS("f-numerichost-name", "localhost", "7471", RAI_NUMERICHOST, 0, 0, 0),
	HS("f-numerichost-nonode", NULL, "7471", RAI_NUMERICHOST, 0, 0, 0),
	HS("f-noroute", "192.0.2.1", "7471", RAI_NOROUTE, 0, 0, 0),
	HS("f-family", "192.0.2.1", "7471", RAI_FAMILY, AF_INET, 0, 0),
	HS("f-family-inet6", "fd00::1", "7471", RAI_FAMILY, AF_INET6, 0, 0),
	HS("f-family-mismatch", "192.0.2.1", "7471", RAI_FAMILY, AF_INET6, 0, 0),
	HS("f-unknown-bit", "192.0.2.1", "7471", 0x40000000, 0, 0, 0),
	HS("f-bit31", "192.0.2.1", "7471", (int)0x80000000u, 0, 0, 0),
	HS("f-routeonly", "192.0.2.1", "7471", RAI_ROUTEONLY, 0, 0, 0),
	HS("f-all-classic", "192.0.2.1", "7471", RAI_PASSIVE | RAI_NUMERICHOST | RAI_NOROUTE | RAI_FAMILY, AF_INET, 0,
	   0),
	HS("f-passive-numeric-v6", "fd00::1", "1", RAI_PASSIVE | RAI_NUMERICHOST, 0, UD, PS_UDP),
	HS("f-active-all-classic", "fd00::1", "1", RAI_NUMERICHOST | RAI_NOROUTE | RAI_FAMILY, AF_INET6, RC, PS_TCP),

	/* qp_type / port_space outside the 35-case matrix below. */
	HS("qp-driver", "192.0.2.1", "7471", 0, 0, IBV_QPT_DRIVER, 0),
	HS("qp-negative", "192.0.2.1", "7471", 0, 0, -1, 0),
	HS("ps-unknown", "192.0.2.1", "7471", 0, 0, 0, 0x999),
	HS("ps-negative", "192.0.2.1", "7471", 0, 0, 0, -1),
	HS("passive-ud-ipoib", "192.0.2.1", "7471", RAI_PASSIVE, 0, UD, PS_IPOIB),
	HS("passive-uc-ib", "fd00::1", "7471", RAI_PASSIVE, 0, UC, PS_IB),
	HS("passive-xrc-tcp", NULL, "7471", RAI_PASSIVE, 0, IBV_QPT_XRC_RECV, PS_TCP),
	HS("passive-raw", NULL, "7471", RAI_PASSIVE, AF_INET, IBV_QPT_RAW_PACKET, 0),
	HS("passive-rc-udp", NULL, "7471", RAI_PASSIVE, 0, RC, PS_UDP),

	/* AF_IB conversion: RAI_FAMILY + RAI_NUMERICHOST + ai_family AF_IB. */
	HS("ib-active", GID, "7471", IBCONV, AF_IB, 0, PS_IB),
	HS("ib-passive", GID, "7471", RAI_PASSIVE | IBCONV, AF_IB, 0, PS_IB),
	HS("ib-gid-long-form", "fe80:0000:0000:0000:0002:c903:000f:1234", "1", IBCONV, AF_IB, 0, PS_IB),
	HS("ib-no-port", "fd00::1", NULL, IBCONV, AF_IB, 0, PS_TCP),
	HS("ib-no-ps", "fd00::1", "1", IBCONV, AF_IB, 0, 0),
	HS("ib-no-ps-no-port", "fd00::1", NULL, IBCONV, AF_IB, 0, 0),
	HS("ib-ud", "fd00::1", "7471", IBCONV, AF_IB, UD, PS_UDP),
	HS("ib-ipoib", "fd00::1", "7471", IBCONV, AF_IB, 0, PS_IPOIB),
	HS("ib-ps-unknown", "fd00::1", "7471", IBCONV, AF_IB, 0, 0x999),
	HS("ib-ps-negative", "fd00::1", "7471", IBCONV, AF_IB, 0, -1),
	HS("ib-port-65535", "fd00::1", "65535", IBCONV, AF_IB, RC, PS_TCP),
	HS("ib-service-name", "fd00::1", "ssh", IBCONV, AF_IB, 0, PS_TCP),
	HS("ib-scope", "fe80::1%1", "1", IBCONV, AF_IB, 0, PS_IB),
	HS("ib-v4-mapped", "::ffff:192.0.2.1", "1", IBCONV, AF_IB, 0, PS_IB),
	HS("ib-active-nonode", NULL, "7471", IBCONV, AF_IB, 0, PS_IB), /* glibc: ::1 first */
	HS("ib-name", "localhost", "1", IBCONV, AF_IB, 0, PS_IB),
	HS("ib-no-family-flag", "fe80::1", "1", RAI_NUMERICHOST, AF_IB, 0, 0),
	HS("ib-no-numeric-flag", "fe80::1", "1", RAI_FAMILY, AF_IB, 0, 0),
	HS("ib-no-numeric-flag-name", "localhost", "1", RAI_FAMILY, AF_IB, 0, PS_IB),
	HS("ib-family-flag-inet6", "fe80::1", "1", IBCONV, AF_INET6, 0, PS_IB),
	/* Upstream bug: a non-IPv6 answer read as sockaddr_in6. */
	HS("ib-v4-literal", "192.0.2.1", "7471", IBCONV, AF_IB, 0, PS_IB),
	HS("ib-v4-literal-passive", "192.0.2.1", "7471", RAI_PASSIVE | IBCONV, AF_IB, 0, PS_IB),
	HS("ib-passive-wildcard", NULL, "7471", RAI_PASSIVE | IBCONV, AF_IB, 0, PS_IB),

	/* Source / destination hints. */
	HA("src-hint-active", "192.0.2.2", "7471", 0, 0, 0, PS_TCP, "192.0.2.1:99", NULL),
	HA("src-hint-passive", "192.0.2.2", "7471", RAI_PASSIVE, 0, 0, PS_TCP, "192.0.2.1:99", NULL),
	HA("src-hint-v6", "fd00::2", "7471", 0, 0, 0, 0, "[fd00::1]:5", NULL),
	HA("src-hint-ib", GID, "7471", IBCONV, AF_IB, 0, PS_IB, "ib[fe80::1]0x13f0001", NULL),
	HA("src-hint-other-family", "fd00::2", "1", 0, 0, 0, 0, "192.0.2.1:99", NULL),
	HA("src-hint-short", "192.0.2.2", "1", 0, 0, 0, 0, "192.0.2.1:99/8", NULL),
	HA("src-hint-storage", "192.0.2.2", "1", 0, 0, 0, 0, "192.0.2.1:99/128", NULL),
	HA("src-hint-unknown-family", "192.0.2.2", "1", 0, 0, 0, 0, "raw99", NULL),
	HA("src-hint-len0", "192.0.2.2", "1", 0, 0, 0, 0, "192.0.2.1:99/0", NULL),
	HA("src-hint-oversize", "192.0.2.2", "1", 0, 0, 0, 0, "192.0.2.1:99/200", NULL),
	HA("src-hint-nonode", NULL, "7471", 0, AF_INET, 0, 0, "192.0.2.1:99", NULL),
	HA("src-hint-passive-nonode", NULL, "7471", RAI_PASSIVE, 0, 0, 0, "192.0.2.1:99", NULL),
	HA("src-hint-error", "192.0.2.2", "no-such-service-xyz", 0, 0, 0, 0, "192.0.2.1:99", NULL),
	HA("dst-hint-ignored", "192.0.2.2", "7471", 0, 0, 0, 0, NULL, "10.0.0.1:99"),
	HA("dst-hint-passive", NULL, "7471", RAI_PASSIVE, 0, 0, 0, "192.0.2.1:99", "10.0.0.1:99"),
	HA("src-and-dst-hints", "192.0.2.2", "7471", 0, 0, 0, 0, "192.0.2.1:98", "10.0.0.1:99"),

	/* Hints only (node and service NULL): fields copied from the hints. */
	HS("hints-only", NULL, NULL, 0, 0, 0, 0),
	HA("hints-only-dst", NULL, NULL, 0, 0, UD, 0, NULL, "10.0.0.1:99"),
	HA("hints-only-src", NULL, NULL, 0, AF_INET, 0, PS_TCP, "10.0.0.1:99", NULL),
	HA("hints-only-all", NULL, NULL, RAI_PASSIVE | RAI_NOROUTE, AF_INET6, RC, PS_IB, "[fd00::1]:1", "[fd00::2]:2"),
	HS("hints-only-flags", NULL, NULL, RAI_NOROUTE | RAI_FAMILY | 0x100, AF_INET, UC, 0x999),
	HS("hints-only-passive", NULL, NULL, RAI_PASSIVE, 0, 0, 0),
	HS("hints-only-negative", NULL, NULL, (int)0x80000000u, -1, -1, -1),
	HA("hints-only-dst-ib", NULL, NULL, RAI_FAMILY, AF_IB, RC, PS_IB, NULL, "ib[" GID "]0x13f1d2f"),
	HA("hints-only-dst-unknown", NULL, NULL, 0, 0, 0, 0, NULL, "raw99/20"),
	HA("hints-only-dst-short", NULL, NULL, 0, 0, 0, 0, NULL, "[fd00::2]:2/3"),

	/* RAI_SA / RAI_DNS: v65 semantics (v44 ignores the bits). */
	HT("sa-with-node", "192.0.2.1", "1", RAI_SA, 0, 0, 0, T_V65),
	HT("sa-with-dns", NULL, "1", RAI_SA | RAI_DNS, 0, 0, 0, T_V65),
	HT("sa-no-service", NULL, NULL, RAI_SA, 0, 0, 0, T_V65),
	HT("sa-service", NULL, "0x10", RAI_SA, 0, 0, 0, T_V65),
	HT("sa-service-numeric", NULL, "7471", RAI_SA, 0, 0, 0, T_V65),
	HT("sa-passive", NULL, "0x10", RAI_SA | RAI_PASSIVE, 0, 0, 0, T_V65),
	HT("sa-with-node-passive", "fd00::1", "1", RAI_SA | RAI_PASSIVE, 0, 0, PS_IB, T_V65),
	HT("dns-flag", "192.0.2.1", "7471", RAI_DNS, 0, 0, 0, T_V65),
	HT("dns-passive", NULL, "7471", RAI_DNS | RAI_PASSIVE, 0, 0, 0, T_V65),
	HT("dns-hints-only", NULL, NULL, RAI_DNS, 0, 0, 0, T_V65),
	HT("f-all-bits", "192.0.2.1", "7471", -1, 0, 0, 0, T_V65),

	/* NULL arguments. */
	NOH("all-null", NULL, NULL),
	HS("service-null-name", "localhost", NULL, 0, AF_INET, 0, 0),
	/* Upstream writes *res unchecked and memcpy()s a NULL hint
	 * address that has a length: both crash there. */
	{ .name = "res-null", .node = "127.0.0.1", .service = "7471", .tags = T_FORK | T_RES_NULL },
	{ .name = "res-null-hints-only", .hints = 1, .tags = T_FORK | T_RES_NULL },
	{ .name = "hints-only-dst-null", .hints = 1, .dst = "null", .tags = T_FORK },
	{ .name = "src-hint-null", .node = "192.0.2.2", .service = "1", .hints = 1, .src = "null", .tags = T_FORK },
};

#define NCASES (sizeof(cases) / sizeof(cases[0]))

/* qp_type x port_space matrix (active, numeric IPv4), generated at start. */
#define NQP 7
#define NPS 5
static const int qps[NQP] = { 0, IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD, IBV_QPT_RAW_PACKET, IBV_QPT_XRC_SEND,
			      IBV_QPT_XRC_RECV };
static const int pss[NPS] = { 0, RDMA_PS_IPOIB, RDMA_PS_TCP, RDMA_PS_UDP, RDMA_PS_IB };
#define NMATRIX (NQP * NPS)
#define NALL (NCASES + NMATRIX)
static struct gcase matrix[NMATRIX];
static char matrix_names[NMATRIX][32];

static void build_matrix(void)
{
	int i, j, k = 0;

	for (i = 0; i < NQP; i++)
		for (j = 0; j < NPS; j++, k++) {
			snprintf(matrix_names[k], sizeof(matrix_names[k]), "qp%d-ps%#x", qps[i], pss[j]);
			matrix[k] = (struct gcase)HS(matrix_names[k], "192.0.2.1", "7471", 0, 0, qps[i], pss[j]);
		}
}

/* Case by index 0..NALL-1 (the printed number is index + 1). */
static const struct gcase *case_at(size_t i)
{
	return i < NCASES ? &cases[i] : &matrix[i - NCASES];
}

/* Case by name or by number. */
static const struct gcase *find(const char *arg)
{
	char *end;
	unsigned long n = strtoul(arg, &end, 10);
	size_t i;

	if (*arg && !*end)
		return n >= 1 && n <= NALL ? case_at(n - 1) : NULL;
	for (i = 0; i < NALL; i++)
		if (!strcmp(case_at(i)->name, arg))
			return case_at(i);
	return NULL;
}

/* Room for one hint address (up to 256 bytes, aligned for any sockaddr). */
union addrbuf {
	struct sockaddr_storage ss;
	unsigned char b[256];
};

/* Build a hint address from a spec (see struct gcase); NULL for "null". */
static struct sockaddr *make_addr(const char *spec, union addrbuf *buf, socklen_t *len)
{
	char host[INET6_ADDRSTRLEN + 8];
	const char *p, *slash = strchr(spec, '/');
	size_t speclen = slash ? (size_t)(slash - spec) : strlen(spec);
	struct sockaddr *sa = (struct sockaddr *)buf;

	memset(buf, 0, sizeof(*buf));
	if (!strncmp(spec, "null", 4)) {
		sa = NULL;
		*len = 16;
	} else if (!strncmp(spec, "ib[", 3)) {
		struct sockaddr_ib *sib = (struct sockaddr_ib *)buf;
		p = strchr(spec, ']');
		snprintf(host, sizeof(host), "%.*s", (int)(p - spec - 3), spec + 3);
		sib->sib_family = AF_IB;
		sib->sib_pkey = htons(0xffff);
		inet_pton(AF_INET6, host, &sib->sib_addr);
		sib->sib_sid = htobe64(strtoull(p + 1, NULL, 0));
		sib->sib_sid_mask = htobe64(~0ULL);
		*len = sizeof(*sib);
	} else if (!strncmp(spec, "raw", 3)) {
		unsigned i;
		sa->sa_family = (sa_family_t)atoi(spec + 3);
		for (i = 2; i < sizeof(buf->b); i++)
			buf->b[i] = (unsigned char)i;
		*len = 20;
	} else if (spec[0] == '[') {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)buf;
		p = strstr(spec, "]:");
		snprintf(host, sizeof(host), "%.*s", (int)(p - spec - 1), spec + 1);
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(atoi(p + 2));
		inet_pton(AF_INET6, host, &s6->sin6_addr);
		*len = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)buf;
		p = memchr(spec, ':', speclen);
		snprintf(host, sizeof(host), "%.*s", (int)(p - spec), spec);
		s4->sin_family = AF_INET;
		s4->sin_port = htons(atoi(p + 1));
		inet_pton(AF_INET, host, &s4->sin_addr);
		*len = sizeof(*s4);
	}
	if (slash)
		*len = (socklen_t)atoi(slash + 1);
	return sa;
}

/* The hints of a case; addresses live in src/dst. */
static void make_hints(const struct gcase *c, struct rdma_addrinfo *hints, union addrbuf *src, union addrbuf *dst)
{
	memset(hints, 0, sizeof(*hints));
	hints->ai_flags = c->flags;
	hints->ai_family = c->family;
	hints->ai_qp_type = c->qp_type;
	hints->ai_port_space = c->port_space;
	if (c->src)
		hints->ai_src_addr = make_addr(c->src, src, &hints->ai_src_len);
	if (c->dst)
		hints->ai_dst_addr = make_addr(c->dst, dst, &hints->ai_dst_len);
}

/* One call of a case. */
static int call(const struct gcase *c, struct rdma_addrinfo **res)
{
	struct rdma_addrinfo hints;
	union addrbuf src, dst;

	make_hints(c, &hints, &src, &dst);
	*res = NULL;
	return rdma_getaddrinfo(c->node, c->service, c->hints ? &hints : NULL, c->tags & T_RES_NULL ? NULL : res);
}

/* hex (harness.h) of at most 4096 bytes, "..." for the rest */
static void hexdump(const void *p, size_t n)
{
	hex(p, n < 4096 ? n : 4096);
	if (n > 4096)
		printf("...");
}

/* Bytes of an address beyond the decoded struct (only when len says so). */
static void tail(const struct sockaddr *sa, socklen_t len, size_t decoded)
{
	if (len > decoded) {
		printf(" tail ");
		hexdump((const unsigned char *)sa + decoded, len - decoded);
	}
}

/* Decode an address by family, reading no byte beyond len. */
static void print_addr(const char *what, const struct sockaddr *sa, socklen_t len)
{
	char buf[INET6_ADDRSTRLEN];
	int family = sa && len >= sizeof(sa_family_t) ? sa->sa_family : -1;

	printf("  %s_len=%u %s=", what, len, what);
	if (!sa) {
		printf("NULL\n");
		return;
	}
	if (family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *s = (const void *)sa;
		inet_ntop(AF_INET, &s->sin_addr, buf, sizeof(buf));
		printf("inet %s port %u zero ", buf, ntohs(s->sin_port));
		hexdump(s->sin_zero, sizeof(s->sin_zero));
		tail(sa, len, sizeof(*s));
	} else if (family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *s = (const void *)sa;
		inet_ntop(AF_INET6, &s->sin6_addr, buf, sizeof(buf));
		printf("inet6 %s port %u flowinfo %#x scope %u", buf, ntohs(s->sin6_port), ntohl(s->sin6_flowinfo),
		       s->sin6_scope_id);
		tail(sa, len, sizeof(*s));
	} else if (family == AF_IB && len >= sizeof(struct sockaddr_ib)) {
		const struct sockaddr_ib *s = (const void *)sa;
		printf("ib sib_family %u pkey %#x flowinfo %#x gid ", s->sib_family, ntohs(s->sib_pkey),
		       ntohl(s->sib_flowinfo));
		hexdump(&s->sib_addr, sizeof(s->sib_addr));
		printf(" sid %#llx sid_mask %#llx scope_id %llu", (unsigned long long)be64toh(s->sib_sid),
		       (unsigned long long)be64toh(s->sib_sid_mask), (unsigned long long)s->sib_scope_id);
		tail(sa, len, sizeof(*s));
	} else {
		printf("family %d bytes ", family);
		hexdump(sa, len);
	}
	printf("\n");
}

static const char *eainame(int ret)
{
	static const struct {
		int code;
		const char *name;
	} eai[] = {
		{ EAI_BADFLAGS, "EAI_BADFLAGS" }, { EAI_NONAME, "EAI_NONAME" },
		{ EAI_AGAIN, "EAI_AGAIN" },       { EAI_FAIL, "EAI_FAIL" },
		{ EAI_NODATA, "EAI_NODATA" },     { EAI_FAMILY, "EAI_FAMILY" },
		{ EAI_SOCKTYPE, "EAI_SOCKTYPE" }, { EAI_SERVICE, "EAI_SERVICE" },
		{ EAI_ADDRFAMILY, "EAI_ADDRFAMILY" }, { EAI_MEMORY, "EAI_MEMORY" },
		{ EAI_SYSTEM, "EAI_SYSTEM" },     { EAI_OVERFLOW, "EAI_OVERFLOW" },
	};
	size_t i;

	for (i = 0; i < sizeof(eai) / sizeof(eai[0]); i++)
		if (eai[i].code == ret)
			return eai[i].name;
	return "?";
}

static void print_result(const struct rdma_addrinfo *res)
{
	const struct rdma_addrinfo *r;
	int n = 0;

	for (r = res; r; r = r->ai_next, n++) {
		printf(" result %d: flags=%#x family=%d qp_type=%d port_space=%#x next=%s\n", n, (unsigned)r->ai_flags,
		       r->ai_family, r->ai_qp_type, (unsigned)r->ai_port_space, r->ai_next ? "yes" : "no");
		print_addr("src", r->ai_src_addr, r->ai_src_len);
		print_addr("dst", r->ai_dst_addr, r->ai_dst_len);
		printf("  src_canonname=%s%s%s dst_canonname=%s%s%s\n", r->ai_src_canonname ? "\"" : "",
		       r->ai_src_canonname ? r->ai_src_canonname : "NULL", r->ai_src_canonname ? "\"" : "",
		       r->ai_dst_canonname ? "\"" : "", r->ai_dst_canonname ? r->ai_dst_canonname : "NULL",
		       r->ai_dst_canonname ? "\"" : "");
		printf("  route_len=%zu route=", r->ai_route_len);
		if (r->ai_route)
			hexdump(r->ai_route, r->ai_route_len);
		else
			printf("NULL");
		printf("\n  connect_len=%zu connect=", r->ai_connect_len);
		if (r->ai_connect)
			hexdump(r->ai_connect, r->ai_connect_len);
		else
			printf("NULL");
		printf("\n");
	}
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static FILE *logfp; /* --log FILE */
enum { SENTINEL = 4242 }; /* errno before each call: no real errno has this value */

/* Run one case and print everything about it. */
static void run_case_here(const struct gcase *c)
{
	struct rdma_addrinfo *res;
	double t = now();
	int ret, err;

	errno = SENTINEL;
	ret = call(c, &res);
	err = errno;
	if (ret == 0 && logfp) {
		if (err == SENTINEL)
			fprintf(logfp, "errno %s kept\n", c->name);
		else
			fprintf(logfp, "errno %s changed to %s\n", c->name, en(err));
		fflush(logfp);
	}
	t = now() - t;
	if (t > 2)
		fprintf(stderr, "gai_diff: slow case %s: %.1f s\n", c->name, t);
	printf("case %s: ret=%d", c->name, ret);
	if (ret < -1)
		printf(" (%s)", eainame(ret));
	if (ret == -1 || ret == EAI_SYSTEM)
		printf(" errno=%s", en(err));
	printf("\n");
	if (ret == 0 && !(c->tags & T_RES_NULL)) {
		print_result(res);
		rdma_freeaddrinfo(res);
	}
}

/* Run a case in a child when it may crash the library under test. */
static void run_case(const struct gcase *c)
{
	pid_t pid;
	int st;

	if (!(c->tags & T_FORK)) {
		run_case_here(c);
		return;
	}
	fflush(stdout);
	if (logfp)
		fflush(logfp);
	pid = fork();
	if (pid == 0) {
		run_case_here(c);
		fflush(stdout);
		if (logfp)
			fflush(logfp);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0) {
		printf("case %s: fork/wait failed\n", c->name);
		return;
	}
	if (WIFSIGNALED(st))
		printf("case %s: crashed (SIG%s)\n", c->name, sigabbrev_np(WTERMSIG(st)) ? sigabbrev_np(WTERMSIG(st)) : "?");
	else if (WEXITSTATUS(st))
		printf("case %s: child exit %d\n", c->name, WEXITSTATUS(st));
}

/*
 * --leak N: pairs over representative cases, active and passive. The cases
 * that make glibc read /etc/hosts and /etc/services (0.5 ms each, far more
 * under valgrind) take every 64th pair only.
 */
static int leak(long n)
{
	static const char *names[] = {
		"h-v4",		   "v4-literal",	  "f-passive",	 "ib-active",	"ib-passive",
		"hints-only-all",  "src-hint-active",	  "v6-literal",	 "src-hint-ib", "hints-only-dst-ib",
		"f-passive-nonode-v6", "src-hint-storage",
		/* slow ones last */
		"localhost-ssh",   "bad-service",
	};
	enum { N = sizeof(names) / sizeof(names[0]), NSLOW = 2, NFAST = N - NSLOW };
	const struct gcase *cs[N];
	int want[N];
	struct rdma_addrinfo *res;
	long l;
	int i, ret;

	for (i = 0; i < N; i++) {
		cs[i] = find(names[i]);
		want[i] = call(cs[i], &res);
		if (!want[i])
			rdma_freeaddrinfo(res);
	}
	for (l = 0; l < n; l++) {
		i = l % 64 == 63 ? NFAST + (int)(l / 64 % NSLOW) : (int)(l % NFAST);
		ret = call(cs[i], &res);
		if (ret != want[i]) {
			printf("leak run: %s returned %d, first %d\n", cs[i]->name, ret, want[i]);
			return 1;
		}
		if (!ret)
			rdma_freeaddrinfo(res);
	}
	rdma_freeaddrinfo(NULL);
	printf("leak run: %ld pairs\n", n);
	return 0;
}

/* --bench N CASE: N calls of one case. */
static int bench(long n, const struct gcase *c)
{
	struct rdma_addrinfo *res;
	int ret = 0, first = 0;
	long l;

	for (l = 0; l < n; l++) {
		ret = call(c, &res);
		if (l == 0)
			first = ret;
		else if (ret != first) {
			printf("bench %s: call %ld returned %d, first %d\n", c->name, l, ret, first);
			return 1;
		}
		if (!ret)
			rdma_freeaddrinfo(res);
	}
	printf("bench %s: %ld calls, ret=%d\n", c->name, n, first);
	return 0;
}

/* The real path of the library providing rdma_getaddrinfo. */
static const char *which(void)
{
	static char path[PATH_MAX];
	Dl_info info;

	if (!dladdr((void *)rdma_getaddrinfo, &info) || !info.dli_fname)
		return "?";
	return realpath(info.dli_fname, path) ? path : info.dli_fname;
}

static int usage(void)
{
	fprintf(stderr, "usage: gai_diff [--log FILE] [CASE...] | --list | --which | --leak N | --bench N CASE\n");
	return 2;
}

int main(int argc, char **argv)
{
	const struct gcase *c;
	size_t i;
	int a;

	setvbuf(stdout, NULL, _IOLBF, 0);
	build_matrix();
	if (argc == 2 && !strcmp(argv[1], "--list")) {
		for (i = 0; i < NALL; i++)
			printf("%zu %s %s\n", i + 1, case_at(i)->name, case_at(i)->tags & T_V65 ? "v65" : "v44");
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "--which")) {
		printf("%s\n", which());
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "--leak"))
		return leak(atol(argv[2]));
	if (argc == 4 && !strcmp(argv[1], "--bench")) {
		if (!(c = find(argv[3])) || c->tags & T_FORK)
			return usage();
		return bench(atol(argv[2]), c);
	}
	if (argc > 2 && !strcmp(argv[1], "--log")) {
		if (!(logfp = fopen(argv[2], "w"))) {
			perror(argv[2]);
			return 2;
		}
		fprintf(logfp, "library %s\n", which());
		argv += 2;
		argc -= 2;
	}
	if (argc > 1 && argv[1][0] == '-')
		return usage();
	for (a = 1; a < argc; a++)
		if (!find(argv[a])) {
			fprintf(stderr, "gai_diff: no case %s\n", argv[a]);
			return 2;
		}
	for (i = 0; i < (argc > 1 ? (size_t)argc - 1 : NALL); i++)
		run_case(argc > 1 ? find(argv[i + 1]) : case_at(i));
	if (argc == 1) {
		rdma_freeaddrinfo(NULL);
		printf("case freeaddrinfo-null: ok\n");
	}
	if (logfp)
		fclose(logfp);
	return 0;
}
