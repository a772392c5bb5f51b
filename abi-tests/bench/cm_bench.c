/*
 * cm_bench.c — per-operation cost of the CM core (make bench, in the VM).
 *
 *   cm_bench ops N     N ids on one channel: create_id, bind_addr,
 *                      resolve_addr (+ its event), resolve_route (+ event),
 *                      destroy_id; prints the median microseconds of each
 *   cm_bench first     microseconds of the first rdma_create_id of a process
 *                      (library initialisation included)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <rdma/rdma_cma.h>

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp);
	return v[n / 2];
}

static int wait_event(struct rdma_event_channel *ch, int type)
{
	struct rdma_cm_event *ev;
	int t;

	if (rdma_get_cm_event(ch, &ev))
		return -1;
	t = ev->event;
	rdma_ack_cm_event(ev);
	return t == type ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct sockaddr_in src = { .sin_family = AF_INET }, dst = { .sin_family = AF_INET, .sin_port = htons(7471) };
	struct rdma_event_channel *ch;
	struct rdma_cm_id **ids;
	double *t[5], s;
	int n, i;

	inet_pton(AF_INET, "192.0.2.1", &src.sin_addr);
	inet_pton(AF_INET, "192.0.2.1", &dst.sin_addr);
	if (argc == 2 && !strcmp(argv[1], "first")) {
		struct rdma_cm_id *id;
		s = now_us();
		if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP))
			return 1;
		printf("first_create_id %.1f\n", now_us() - s);
		rdma_destroy_id(id);
		return 0;
	}
	if (argc != 3 || strcmp(argv[1], "ops"))
		return 2;
	n = atoi(argv[2]);
	ch = rdma_create_event_channel();
	ids = calloc(n, sizeof(*ids));
	for (i = 0; i < 5; i++)
		t[i] = calloc(n, sizeof(double));
	if (!ch || !ids)
		return 1;
	for (i = 0; i < n; i++) {
		s = now_us();
		if (rdma_create_id(ch, &ids[i], NULL, RDMA_PS_TCP))
			return 1;
		t[0][i] = now_us() - s;
	}
	for (i = 0; i < n; i++) {
		s = now_us();
		if (rdma_bind_addr(ids[i], (struct sockaddr *)&src))
			return 1;
		t[1][i] = now_us() - s;
	}
	for (i = 0; i < n; i++) {
		s = now_us();
		if (rdma_resolve_addr(ids[i], NULL, (struct sockaddr *)&dst, 2000) ||
		    wait_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED))
			return 1;
		t[2][i] = now_us() - s;
	}
	for (i = 0; i < n; i++) {
		s = now_us();
		if (rdma_resolve_route(ids[i], 2000) || wait_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED))
			return 1;
		t[3][i] = now_us() - s;
	}
	for (i = 0; i < n; i++) {
		s = now_us();
		if (rdma_destroy_id(ids[i]))
			return 1;
		t[4][i] = now_us() - s;
	}
	printf("create_id %.1f bind %.1f resolve_addr %.1f resolve_route %.1f destroy %.1f\n", median(t[0], n),
	       median(t[1], n), median(t[2], n), median(t[3], n), median(t[4], n));
	rdma_destroy_event_channel(ch);
	return 0;
}
