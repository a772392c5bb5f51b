/*
 * helpers.h — a table of the 19 functions of <rdma/rdma_verbs.h>.
 * helpers.c fills it twice: once compiled against our include/ (ours_table)
 * and once against the system's header, rdma-core's (upstream_table);
 * behave.c runs both through the same fake verbs objects.
 */
#ifndef RDMACM_RS_VERBS_HELPERS_H
#define RDMACM_RS_VERBS_HELPERS_H

#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

struct verbs_table {
	const char *name;
	int (*seterrno)(int);
	struct ibv_mr *(*reg_msgs)(struct rdma_cm_id *, void *, size_t);
	struct ibv_mr *(*reg_read)(struct rdma_cm_id *, void *, size_t);
	struct ibv_mr *(*reg_write)(struct rdma_cm_id *, void *, size_t);
	int (*dereg_mr)(struct ibv_mr *);
	int (*post_recvv)(struct rdma_cm_id *, void *, struct ibv_sge *, int);
	int (*post_sendv)(struct rdma_cm_id *, void *, struct ibv_sge *, int, int);
	int (*post_readv)(struct rdma_cm_id *, void *, struct ibv_sge *, int, int, uint64_t, uint32_t);
	int (*post_writev)(struct rdma_cm_id *, void *, struct ibv_sge *, int, int, uint64_t, uint32_t);
	int (*post_recv)(struct rdma_cm_id *, void *, void *, size_t, struct ibv_mr *);
	int (*post_send)(struct rdma_cm_id *, void *, void *, size_t, struct ibv_mr *, int);
	int (*post_read)(struct rdma_cm_id *, void *, void *, size_t, struct ibv_mr *, int, uint64_t, uint32_t);
	int (*post_write)(struct rdma_cm_id *, void *, void *, size_t, struct ibv_mr *, int, uint64_t, uint32_t);
	int (*post_ud_send)(struct rdma_cm_id *, void *, void *, size_t, struct ibv_mr *, int, struct ibv_ah *,
			    uint32_t);
	int (*get_send_comp)(struct rdma_cm_id *, struct ibv_wc *);
	int (*get_recv_comp)(struct rdma_cm_id *, struct ibv_wc *);
	/* Exported by the library: only linked, never called here. */
	int (*create_srq)(struct rdma_cm_id *, struct ibv_pd *, struct ibv_srq_init_attr *);
	int (*create_srq_ex)(struct rdma_cm_id *, struct ibv_srq_init_attr_ex *);
	void (*destroy_srq)(struct rdma_cm_id *);
};

#ifdef __cplusplus
extern "C" {
#endif
extern const struct verbs_table ours_table, upstream_table;
#ifdef __cplusplus
}
#endif

#endif
