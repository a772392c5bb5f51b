/*
 * providers.c — which libibverbs provider libraries a process has mapped
 * after its first rdma_bind_addr to an address of an RDMA device, and what
 * the application's own ibv_get_device_list finds afterwards.
 * (abi-tests/vm/tests.d/25-providers.sh runs it with each library.)
 *
 *   providers ADDR    prints "bind rc=R verbs=DEV", then "provider NAME" for
 *                     each mapped libibverbs/lib*.so, then "app_devices N"
 *                     and one "app_device NAME" per device.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <rdma/rdma_cma.h>

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct rdma_event_channel *ch;
	struct ibv_device **list;
	struct rdma_cm_id *id;
	char line[1024], seen[64][128];
	int n, i, nseen = 0, rc;
	FILE *f;

	if (argc != 2 || inet_pton(AF_INET, argv[1], &a.sin_addr) != 1)
		return 2;
	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		return 1;
	rc = rdma_bind_addr(id, (struct sockaddr *)&a);
	printf("bind rc=%d verbs=%s\n", rc, id->verbs ? ibv_get_device_name(id->verbs->device) : "NULL");
	f = fopen("/proc/self/maps", "r");
	if (!f)
		return 1;
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "/libibverbs/lib"), *e;

		if (!p || nseen == 64)
			continue;
		p += strlen("/libibverbs/lib");
		e = strstr(p, "-rdmav");
		if (!e || e - p >= 127)
			continue;
		*e = 0;
		for (i = 0; i < nseen && strcmp(seen[i], p); i++)
			;
		if (i == nseen)
			strcpy(seen[nseen++], p);
	}
	fclose(f);
	for (i = 0; i < nseen; i++)
		printf("provider %s\n", seen[i]);
	list = ibv_get_device_list(&n);
	printf("app_devices %d\n", list ? n : -1);
	for (i = 0; list && i < n; i++)
		printf("app_device %s\n", ibv_get_device_name(list[i]));
	if (list)
		ibv_free_device_list(list);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	return 0;
}
