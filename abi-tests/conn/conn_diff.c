/*
 * conn_diff.c — differential test of CONNECTION management on a real
 * kernel (the soft-RoCE guest): listen/connect/accept/reject/disconnect
 * with private data, QPs made by rdma_create_qp, a message over them,
 * UD (SIDR) connections, sync endpoints (rdma_create_ep, rdma_get_request),
 * rdma_init_qp_attr, rdma_establish with an application-owned QP, ECE,
 * multicast, and faults (a peer SIGKILLed, a listener destroyed under a
 * pending request, device removal, calls in the wrong state, bad input).
 *
 * Server and client run in one process over rxe0 (192.0.2.1, fd00::1), each
 * on its own event channel, and the case reads the channels in a fixed
 * order, so the output does not depend on timing. Where a side must block
 * (sync endpoints) it runs in a thread that prints into its own buffer,
 * printed after the thread ends; a peer that is to be SIGKILLed is a forked
 * process whose output comes back through a pipe.
 *
 * Built against Debian's v44 header (abi-tests/conn/build.sh). Every
 * connection function is looked up with dlsym(RTLD_DEFAULT), so the binary
 * loads on a librdmacm that lacks some of them; a case then prints one line
 * "  SKIP: library lacks NAME..." (the runner reports it as skipped, never
 * as passed).
 *
 * This file holds the case table; the cases are in conn_*.c by family
 * (conn.h lists the files), and the case runner is the shared one of
 * abi-tests/common/harness.c, linked into the one binary (build.sh).
 *
 * Every case runs in its own child process (forked before the library is
 * touched) with a hard timeout; a crash or hang is a line of that case.
 * Printed: return values and errno, events (type, status, which id), the
 * conn/ud parameters of events including the private data bytes and
 * length, initiator depth and responder resources, whether a QP number is
 * there (never the number), the deterministic parts of address handles,
 * QP attributes and the ids' fields. Never printed: pointers, QP numbers,
 * PSNs, kernel-chosen ports, flow labels (hashed from the ports).
 * Lines: "  LABEL: RESULT" (LABEL unique within a case) followed by detail
 * lines indented by 4, as cm_diff, so abi-tests/cm/compare.py can excuse
 * exactly the lines documented in abi-tests/conn/expected-diffs.txt.
 *
 *   conn_diff [CASE...]   every case, or the named ones, in table order
 *   conn_diff --list      the case names
 *
 * Environment (set by abi-tests/vm/tests.d/30-conn-diff.sh):
 *   CONN_DEVREM_IP, CONN_DEVREM_DEV — an address on a dedicated rxe device
 *   that the device-removal case may delete (`rdma link delete DEV`).
 */
#define _GNU_SOURCE
#include "conn.h"

/* seconds a case may run before it is killed and reported as hung */
#define CASE_TIMEOUT 40

static const struct tcase tcases[] = {
	{ "rc-v4-pd0", c_rc_v4_pd0 },
	{ "rc-v4-pd1-server-disc", c_rc_v4_pd1 },
	{ "rc-v4-pd56-timewait", c_rc_v4_pd56 },
	{ "rc-v6-server-disc", c_rc_v6 },
	{ "rc-defaults", c_rc_defaults },
	{ "listen-wildcard", c_listen_wildcard },
	{ "srq", c_srq },
	{ "migrate-connected", c_migrate_connected },
	{ "connect-error", c_connect_error },
	{ "client-gone-before-accept", c_client_gone_before_accept },
	{ "create-qp", c_create_qp },
	{ "pd-limits", c_pd_limits },
	{ "reject", c_reject },
	{ "reject-ece", c_reject_ece },
	{ "no-listener", c_no_listener },
	{ "ud", c_ud },
	{ "ud-limits", c_ud_limits },
	{ "ud-reject", c_ud_reject },
	{ "ep-sync", c_ep_sync },
	{ "ep-errors", c_ep_errors },
	{ "ep-ai-connect", c_ep_ai_connect },
	{ "ep-ai-connect-wrap", c_ep_ai_connect_wrap },
	{ "ep-ud-sync", c_ep_ud },
	{ "init-qp-attr", c_init_qp_attr },
	{ "establish-ece", c_establish },
	{ "mcast-v4", c_mcast_v4 },
	{ "mcast-v6", c_mcast_v6 },
	{ "mcast-bound", c_mcast_bound },
	{ "kill-client", c_kill_client },
	{ "kill-server", c_kill_server },
	{ "listener-destroy-pending", c_listener_destroy_pending },
	{ "listener-destroy-child", c_listener_destroy_child },
	{ "backlog", c_backlog },
	{ "device-removal", c_device_removal },
	{ "wrong-state", c_wrong_state },
	{ "bad-args", c_bad_args },
};

/* the connection functions this library lacks, as one line; NULL: none */
static const char *missing(void)
{
	static char buf[1024];

	buf[0] = 0;
#define X_CHECK(n)                                                   \
	if (!p_##n)                                                  \
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s", buf[0] ? " " : "", #n);
	CONN_FNS(X_CHECK)
	return buf[0] ? buf : NULL;
}

static void init(void)
{
#define X_RESOLVE(n) p_##n = (__typeof__(p_##n))dlsym(RTLD_DEFAULT, #n);
	CONN_FNS(X_RESOLVE)
}

int main(int argc, char **argv)
{
	static const struct harness h = {
		.prog = "conn_diff",
		.cases = tcases,
		.ncases = sizeof(tcases) / sizeof(tcases[0]),
		.timeout = CASE_TIMEOUT,
		.in_child_timeout = 10,
		.timing = 1,
		.init = init,
		.missing = missing,
	};

	return harness_main(&h, argc, argv);
}
