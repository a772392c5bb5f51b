/*
 * rdma_verbs.h — data-path helpers of rdmacm-rs, a drop-in librdmacm.so.1.
 *
 * Written for rdmacm-rs (not generated: cbindgen cannot express inline
 * functions). The names, signatures and behaviour are those of rdma-core's
 * <rdma/rdma_verbs.h>, so programs written against it build unchanged. The
 * helpers are thin wrappers around libibverbs that use the verbs objects the
 * library stores in struct rdma_cm_id (pd, qp, srq, send_cq/recv_cq and
 * their completion channels); they are compiled into the caller.
 *
 * Deliberate differences from rdma-core's copy: where it asserts (and so
 * aborts the program in non-NDEBUG builds) — rdma_post_recv with a buffer
 * outside the memory region, rdma_get_send_comp/rdma_get_recv_comp woken by
 * a completion queue that is not the id's — these fail with -1 and errno
 * EINVAL instead; when ibv_poll_cq itself fails (returns -n), the two
 * rdma_get_*_comp helpers return -1 with errno n, where rdma-core's leave
 * the negative number in errno; rdma_post_read accepts a NULL mr (lkey 0)
 * like the other single-buffer helpers.
 */
#ifndef RDMA_VERBS_H
#define RDMA_VERBS_H

#include <assert.h> /* rdma-core's copy brings it in; programs may rely on that */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 0 stays 0; an error number becomes -1 with errno set to it. */
static inline int rdma_seterrno(int ret)
{
	if (ret == 0)
		return 0;
	errno = ret;
	return -1;
}

/* Shared receive queues on the id's device (exported by the library). */
int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_srq_init_attr *attr);
int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr);
void rdma_destroy_srq(struct rdma_cm_id *id);

/* Memory registration on the id's protection domain. */
static inline struct ibv_mr *rdma_reg_msgs(struct rdma_cm_id *id, void *addr, size_t length)
{
	return ibv_reg_mr(id->pd, addr, length, IBV_ACCESS_LOCAL_WRITE);
}

/*
 * The access flags stay constant expressions in the ibv_reg_mr() call: its
 * macro then picks the plain ibv_reg_mr function even without optimisation
 * (through a variable it calls ibv_reg_mr_iova2, a newer libibverbs symbol).
 */
static inline struct ibv_mr *rdma_reg_read(struct rdma_cm_id *id, void *addr, size_t length)
{
	return ibv_reg_mr(id->pd, addr, length, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
}

static inline struct ibv_mr *rdma_reg_write(struct rdma_cm_id *id, void *addr, size_t length)
{
	return ibv_reg_mr(id->pd, addr, length, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
}

static inline int rdma_dereg_mr(struct ibv_mr *mr)
{
	return rdma_seterrno(ibv_dereg_mr(mr));
}

/* Work requests with a scatter/gather list. */
static inline int rdma_post_recvv(struct rdma_cm_id *id, void *context, struct ibv_sge *sgl, int nsge)
{
	struct ibv_recv_wr req, *failed;

	req.wr_id = (uint64_t)(uintptr_t)context;
	req.next = NULL;
	req.sg_list = sgl;
	req.num_sge = nsge;
	if (id->srq != NULL)
		return rdma_seterrno(ibv_post_srq_recv(id->srq, &req, &failed));
	return rdma_seterrno(ibv_post_recv(id->qp, &req, &failed));
}

/* A send-queue request of the given opcode (remote address for RDMA ops). */
static inline int rdmacm_rs_post_sq(struct rdma_cm_id *id, void *context, struct ibv_sge *sgl, int nsge,
				    int flags, enum ibv_wr_opcode opcode, uint64_t remote_addr, uint32_t rkey)
{
	struct ibv_send_wr req, *failed;

	req.wr_id = (uint64_t)(uintptr_t)context;
	req.next = NULL;
	req.sg_list = sgl;
	req.num_sge = nsge;
	req.opcode = opcode;
	req.send_flags = (unsigned int)flags;
	if (opcode != IBV_WR_SEND) {
		req.wr.rdma.remote_addr = remote_addr;
		req.wr.rdma.rkey = rkey;
	}
	return rdma_seterrno(ibv_post_send(id->qp, &req, &failed));
}

static inline int rdma_post_sendv(struct rdma_cm_id *id, void *context, struct ibv_sge *sgl, int nsge, int flags)
{
	return rdmacm_rs_post_sq(id, context, sgl, nsge, flags, IBV_WR_SEND, 0, 0);
}

static inline int rdma_post_readv(struct rdma_cm_id *id, void *context, struct ibv_sge *sgl, int nsge, int flags,
				  uint64_t remote_addr, uint32_t rkey)
{
	return rdmacm_rs_post_sq(id, context, sgl, nsge, flags, IBV_WR_RDMA_READ, remote_addr, rkey);
}

static inline int rdma_post_writev(struct rdma_cm_id *id, void *context, struct ibv_sge *sgl, int nsge, int flags,
				   uint64_t remote_addr, uint32_t rkey)
{
	return rdmacm_rs_post_sq(id, context, sgl, nsge, flags, IBV_WR_RDMA_WRITE, remote_addr, rkey);
}

/* One buffer: a single scatter/gather entry (lkey 0 without a region). */
static inline struct ibv_sge rdmacm_rs_sge(void *addr, size_t length, struct ibv_mr *mr)
{
	struct ibv_sge one;

	one.addr = (uint64_t)(uintptr_t)addr;
	one.length = (uint32_t)length;
	one.lkey = mr != NULL ? mr->lkey : 0;
	return one;
}

static inline int rdma_post_recv(struct rdma_cm_id *id, void *context, void *addr, size_t length, struct ibv_mr *mr)
{
	struct ibv_sge one;
	uintptr_t lo = (uintptr_t)mr->addr, at = (uintptr_t)addr;

	if (at < lo || length > mr->length || at - lo > mr->length - length)
		return rdma_seterrno(EINVAL);
	one = rdmacm_rs_sge(addr, length, mr);
	return rdma_post_recvv(id, context, &one, 1);
}

static inline int rdma_post_send(struct rdma_cm_id *id, void *context, void *addr, size_t length,
				 struct ibv_mr *mr, int flags)
{
	struct ibv_sge one = rdmacm_rs_sge(addr, length, mr);

	return rdma_post_sendv(id, context, &one, 1, flags);
}

static inline int rdma_post_read(struct rdma_cm_id *id, void *context, void *addr, size_t length,
				 struct ibv_mr *mr, int flags, uint64_t remote_addr, uint32_t rkey)
{
	struct ibv_sge one = rdmacm_rs_sge(addr, length, mr);

	return rdma_post_readv(id, context, &one, 1, flags, remote_addr, rkey);
}

static inline int rdma_post_write(struct rdma_cm_id *id, void *context, void *addr, size_t length,
				  struct ibv_mr *mr, int flags, uint64_t remote_addr, uint32_t rkey)
{
	struct ibv_sge one = rdmacm_rs_sge(addr, length, mr);

	return rdma_post_writev(id, context, &one, 1, flags, remote_addr, rkey);
}

/* A datagram to (ah, remote_qpn) with the RDMA CM's well-known UD qkey. */
static inline int rdma_post_ud_send(struct rdma_cm_id *id, void *context, void *addr, size_t length,
				    struct ibv_mr *mr, int flags, struct ibv_ah *ah, uint32_t remote_qpn)
{
	struct ibv_sge one = rdmacm_rs_sge(addr, length, mr);
	struct ibv_send_wr req, *failed;

	req.wr_id = (uint64_t)(uintptr_t)context;
	req.next = NULL;
	req.sg_list = &one;
	req.num_sge = 1;
	req.opcode = IBV_WR_SEND;
	req.send_flags = (unsigned int)flags;
	req.wr.ud.ah = ah;
	req.wr.ud.remote_qpn = remote_qpn;
	req.wr.ud.remote_qkey = RDMA_UDP_QKEY;
	return rdma_seterrno(ibv_post_send(id->qp, &req, &failed));
}

/*
 * Wait for one completion on a CQ the library made for the id: poll; if
 * empty, arm the CQ, poll again (a completion may have slipped in), then
 * block on its completion channel. Returns the number of completions
 * polled (1), or -1 with errno.
 */
static inline int rdmacm_rs_get_comp(struct rdma_cm_id *id, struct ibv_cq *cq, struct ibv_comp_channel *ch,
				     struct ibv_wc *wc)
{
	struct ibv_cq *woke;
	void *ctx;
	int n;

	for (;;) {
		n = ibv_poll_cq(cq, 1, wc);
		if (n != 0)
			break;
		n = ibv_req_notify_cq(cq, 0);
		if (n != 0)
			return rdma_seterrno(n);
		n = ibv_poll_cq(cq, 1, wc);
		if (n != 0)
			break;
		if (ibv_get_cq_event(ch, &woke, &ctx) != 0)
			return -1;
		ibv_ack_cq_events(woke, 1);
		if (woke != cq || ctx != (void *)id)
			return rdma_seterrno(EINVAL);
	}
	return n < 0 ? rdma_seterrno(-n) : n;
}

static inline int rdma_get_send_comp(struct rdma_cm_id *id, struct ibv_wc *wc)
{
	return rdmacm_rs_get_comp(id, id->send_cq, id->send_cq_channel, wc);
}

static inline int rdma_get_recv_comp(struct rdma_cm_id *id, struct ibv_wc *wc)
{
	return rdmacm_rs_get_comp(id, id->recv_cq, id->recv_cq_channel, wc);
}

#ifdef __cplusplus
}
#endif

#endif /* RDMA_VERBS_H */
