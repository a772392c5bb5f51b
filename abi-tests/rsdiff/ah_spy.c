/*
 * ah_spy.c — an LD_PRELOAD interposer for tests: reports every
 * ibv_create_ah a process makes (whether the attributes carry a GRH, and
 * the result) on stderr, one line each:
 *   ah_spy: ibv_create_ah is_global=0 port=1 sgid_index=0 -> NULL errno=EINVAL
 * abi-tests/vm/tests.d/64-rsockets-dgram.sh uses it to show why a
 * library's datagram rsockets fail on soft-RoCE.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <infiniband/verbs.h>

struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	static struct ibv_ah *(*real)(struct ibv_pd *, struct ibv_ah_attr *);
	struct ibv_ah *ah;
	int e;

	if (!real)
		real = (struct ibv_ah * (*)(struct ibv_pd *, struct ibv_ah_attr *)) dlsym(RTLD_NEXT, "ibv_create_ah");
	errno = 0;
	ah = real(pd, attr);
	e = errno;
	fprintf(stderr, "ah_spy: ibv_create_ah is_global=%d port=%u sgid_index=%u -> %s errno=%s\n", attr->is_global,
		attr->port_num, attr->grh.sgid_index, ah ? "ah" : "NULL", ah ? "0" : strerrorname_np(e));
	errno = e;
	return ah;
}
