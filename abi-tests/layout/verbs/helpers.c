/*
 * helpers.c — compiled twice by verbs-check.sh: with -Iinclude (our
 * rdma_verbs.h, -DTABLE=ours_table) and without (the system's, rdma-core's,
 * -DTABLE=upstream_table). The same source calls every helper through
 * the table, so both headers must accept the same code (ours also as C++).
 */
#include <rdma/rdma_verbs.h>
#include "helpers.h"

const struct verbs_table TABLE = {
	TABLE_NAME,
	rdma_seterrno,
	rdma_reg_msgs,
	rdma_reg_read,
	rdma_reg_write,
	rdma_dereg_mr,
	rdma_post_recvv,
	rdma_post_sendv,
	rdma_post_readv,
	rdma_post_writev,
	rdma_post_recv,
	rdma_post_send,
	rdma_post_read,
	rdma_post_write,
	rdma_post_ud_send,
	rdma_get_send_comp,
	rdma_get_recv_comp,
	rdma_create_srq,
	rdma_create_srq_ex,
	rdma_destroy_srq,
};
