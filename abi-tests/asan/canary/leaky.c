/* leaky: asks our library for an address and never frees it
 * (rdma_getaddrinfo without rdma_freeaddrinfo): check-asan expects
 * LeakSanitizer to report a leak whose allocation passes through the
 * library, which proves leaks are caught and attributed. */
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv)
{
	struct rdma_addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_NUMERICHOST;
	hints.ai_port_space = RDMA_PS_TCP;
	if (rdma_getaddrinfo(argc > 1 ? argv[1] : "192.0.2.1", "7471", &hints, &res)) {
		perror("rdma_getaddrinfo");
		return 1;
	}
	printf("resolved, not freed: %p\n", (void *)res);
	return 0;
}
