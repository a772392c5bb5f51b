/*
 * earlylisten.so — LD_PRELOAD shim for qperf's server (abi-tests/vm/clients.sh).
 * qperf 0.4.11 (Debian 12's package) binds a new connection-manager id,
 * sends the client its port over TCP, and only then calls rdma_listen(3).
 * A client that is quick enough sends its connection request before the
 * listener exists and is rejected with reason 8 (invalid service id); qperf's
 * own repository later moved the listen before the message. This shim makes
 * that order from outside, the same for every library: a successful
 * rdma_bind_addr(3) of an IPv4 or IPv6 address is followed at once by
 * rdma_listen(id, 0) (other families are left alone: Debian's library binds
 * a short-lived AF_IB id of its own when it starts), and the
 * program's own rdma_listen on that id with backlog 0 (qperf's) then
 * returns 0 without listening twice. Every call reaches the library under
 * test, the next one in the lookup order.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <sys/socket.h>

struct rdma_cm_id;

static struct rdma_cm_id *early; /* the id listened on at its bind */

int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	int (*bind)(struct rdma_cm_id *, struct sockaddr *);
	int (*listen)(struct rdma_cm_id *, int);
	int ret;

	*(void **)&bind = dlsym(RTLD_NEXT, "rdma_bind_addr");
	*(void **)&listen = dlsym(RTLD_NEXT, "rdma_listen");
	if (!bind || !listen)
		return -1;
	ret = bind(id, addr);
	if (ret == 0 && addr && (addr->sa_family == AF_INET || addr->sa_family == AF_INET6) &&
	    listen(id, 0) == 0) {
		early = id;
		fprintf(stderr, "earlylisten: listening since the bind\n");
	}
	return ret;
}

int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	int (*listen)(struct rdma_cm_id *, int);

	if (id && id == early) {
		early = NULL;
		if (backlog == 0)
			return 0;
	}
	*(void **)&listen = dlsym(RTLD_NEXT, "rdma_listen");
	return listen ? listen(id, backlog) : -1;
}
