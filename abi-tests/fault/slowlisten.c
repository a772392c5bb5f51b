/*
 * slowlisten.so — LD_PRELOAD shim for tests.d/73-perftest-race.sh: the
 * process's second rdma_listen(3) starts 3 s late (the first goes through
 * at once). perftest with -R listens twice, the second time right after a
 * handshake with its client; delaying it makes the client's second
 * connection come first every time, the race the bed otherwise meets now
 * and then. Preloaded in front of the library under test; the real call
 * is the next one in the lookup order. SLOWLISTEN_NTH picks another call
 * (tests.d/81-clients.sh delays the first listen of qperf's server).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct rdma_cm_id;

int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	static int calls;
	const char *nth = getenv("SLOWLISTEN_NTH");
	int (*real)(struct rdma_cm_id *, int);

	*(void **)&real = dlsym(RTLD_NEXT, "rdma_listen");
	if (!real)
		return -1;
	if (++calls == (nth ? atoi(nth) : 2)) {
		fprintf(stderr, "slowlisten: the %s rdma_listen starts 3 s late\n", calls == 2 ? "second" : "chosen");
		sleep(3);
	}
	return real(id, backlog);
}
