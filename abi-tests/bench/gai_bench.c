/*
 * gai_bench.c — loop rdma_getaddrinfo/rdma_freeaddrinfo N times for one
 * query, for instruction counting under callgrind (abi-tests/bench.sh).
 * usage: gai_bench active|passive|passive-any|active6|passive6 N
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/rdma_cma.h>

int main(int argc, char **argv)
{
	struct rdma_addrinfo hints, *res;
	const char *node;
	long i, n;

	if (argc != 3)
		return 2;
	n = atol(argv[2]);
	memset(&hints, 0, sizeof hints);
	hints.ai_port_space = RDMA_PS_TCP;
	if (!strcmp(argv[1], "passive")) {
		hints.ai_flags = RAI_PASSIVE | RAI_NUMERICHOST;
		node = "192.0.2.1";
	} else if (!strcmp(argv[1], "passive-any")) {
		/* what every server asks first: no node, the wildcard address */
		hints.ai_flags = RAI_PASSIVE;
		node = NULL;
	} else if (!strcmp(argv[1], "active6")) {
		hints.ai_flags = RAI_NUMERICHOST;
		node = "fd00::2";
	} else if (!strcmp(argv[1], "passive6")) {
		hints.ai_flags = RAI_PASSIVE | RAI_NUMERICHOST;
		node = "fd00::1";
	} else if (!strcmp(argv[1], "active")) {
		hints.ai_flags = RAI_NUMERICHOST;
		node = "192.0.2.2";
	} else {
		return 2;
	}
	for (i = 0; i < n; i++) {
		if (rdma_getaddrinfo(node, "7471", &hints, &res)) {
			perror("rdma_getaddrinfo");
			return 1;
		}
		rdma_freeaddrinfo(res);
	}
	return 0;
}
