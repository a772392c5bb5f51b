/*
 * verbs_shim.c — the libibverbs entry points that exist only as static
 * inline functions in <infiniband/verbs.h> (they dispatch through the
 * provider's extended context). Calling them from C keeps rdmacm-rs on
 * libibverbs' own dispatch rules instead of re-deriving struct verbs_context
 * offsets in Rust. Nothing else lives here.
 */
#include <fcntl.h>
#include <string.h>
#include <infiniband/verbs.h>

struct ibv_qp *rdmacm_shim_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr)
{
	return ibv_create_qp_ex(ctx, attr);
}

struct ibv_srq *rdmacm_shim_create_srq_ex(struct ibv_context *ctx, struct ibv_srq_init_attr_ex *attr)
{
	return ibv_create_srq_ex(ctx, attr);
}

/* A process-private XRC domain (no backing file). */
struct ibv_xrcd *rdmacm_shim_open_xrcd(struct ibv_context *ctx)
{
	struct ibv_xrcd_init_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	attr.fd = -1;
	attr.oflags = O_CREAT;
	return ibv_open_xrcd(ctx, &attr);
}

int rdmacm_shim_close_xrcd(struct ibv_xrcd *xrcd)
{
	return ibv_close_xrcd(xrcd);
}

/* The link layer of a port, or -1 when it cannot be queried. */
int rdmacm_shim_link_layer(struct ibv_context *ctx, uint8_t port)
{
	struct ibv_port_attr attr;

	memset(&attr, 0, sizeof(attr));
	if (ibv_query_port(ctx, port, &attr))
		return -1;
	return attr.link_layer;
}

/* A port's active MTU (enum ibv_mtu), GID table length and LMC; 0 or an
 * errno. */
int rdmacm_shim_port_info(struct ibv_context *ctx, uint8_t port, uint32_t *active_mtu, int *gid_tbl_len,
			  uint8_t *lmc)
{
	struct ibv_port_attr attr;
	int ret;

	memset(&attr, 0, sizeof(attr));
	ret = ibv_query_port(ctx, port, &attr);
	if (ret)
		return ret;
	*active_mtu = attr.active_mtu;
	*gid_tbl_len = attr.gid_tbl_len;
	*lmc = attr.lmc;
	return 0;
}

struct ibv_mr *rdmacm_shim_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return ibv_reg_mr(pd, addr, length, access);
}
