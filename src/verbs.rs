//! The libibverbs calls the library needs, and the few libibverbs struct
//! fields it reads. libibverbs is touched only when a device context is
//! really needed (an id got bound to a device, or `rdma_get_devices`):
//! `ibv_get_device_list` loads every provider library, which costs
//! 50–140 ms in upstream's first call.

use crate::abi::{
    ib_uverbs_qp_attr, ibv_ah, ibv_ah_attr, ibv_comp_channel, ibv_context, ibv_cq, ibv_device, ibv_device_attr,
    ibv_ece, ibv_gid, ibv_mr, ibv_pd, ibv_qp, ibv_qp_attr, ibv_qp_init_attr_ex, ibv_recv_wr, ibv_send_wr, ibv_srq,
    ibv_srq_init_attr_ex, ibv_wc, ibv_xrcd,
};
use libc::c_int;

// The data path of rsockets: what `<infiniband/verbs.h>`'s inline
// dispatchers do, here (the provider's entry in the context's ops; a
// provider without one gets EOPNOTSUPP, where the inline version would
// call NULL). Called directly rather than through a C shim: one call and
// return fewer per completion poll and per post.

/// `ibv_post_send`.
///
/// # Safety
/// `qp` is a live QP; `wr` and `bad` as for `ibv_post_send`.
#[inline(always)]
pub unsafe fn post_send(qp: *mut ibv_qp, wr: *mut ibv_send_wr, bad: *mut *mut ibv_send_wr) -> c_int {
    // SAFETY: a live QP's context is its device context (as the caller
    // promises).
    match unsafe { (*(*qp).context).ops.post_send } {
        // SAFETY: the provider's entry, with the arguments it expects.
        Some(f) => unsafe { f(qp, wr, bad) },
        None => libc::EOPNOTSUPP,
    }
}

/// `ibv_post_recv`.
///
/// # Safety
/// `qp` is a live QP; `wr` and `bad` as for `ibv_post_recv`.
#[inline(always)]
pub unsafe fn post_recv(qp: *mut ibv_qp, wr: *mut ibv_recv_wr, bad: *mut *mut ibv_recv_wr) -> c_int {
    // SAFETY: as in `post_send`.
    match unsafe { (*(*qp).context).ops.post_recv } {
        // SAFETY: as in `post_send`.
        Some(f) => unsafe { f(qp, wr, bad) },
        None => libc::EOPNOTSUPP,
    }
}

/// `ibv_poll_cq`.
///
/// # Safety
/// `cq` is a live CQ; `wc` has room for `n` completions.
#[inline(always)]
pub unsafe fn poll_cq(cq: *mut ibv_cq, n: c_int, wc: *mut ibv_wc) -> c_int {
    // SAFETY: a live CQ's context is its device context.
    match unsafe { (*(*cq).context).ops.poll_cq } {
        // SAFETY: the provider's entry, with the arguments it expects.
        Some(f) => unsafe { f(cq, n, wc) },
        None => -1,
    }
}

/// `ibv_req_notify_cq`.
///
/// # Safety
/// `cq` is a live CQ.
#[inline(always)]
pub unsafe fn req_notify_cq(cq: *mut ibv_cq, solicited_only: c_int) -> c_int {
    // SAFETY: as in `poll_cq`.
    match unsafe { (*(*cq).context).ops.req_notify_cq } {
        // SAFETY: as in `poll_cq`.
        Some(f) => unsafe { f(cq, solicited_only) },
        None => libc::EOPNOTSUPP,
    }
}

/// `IBV_TRANSPORT_IB` (InfiniBand and RoCE).
pub(crate) const IBV_TRANSPORT_IB: c_int = 0;

/// cbindgen:ignore
#[allow(unused_doc_comments)]
#[link(name = "ibverbs")]
extern "C" {
    pub fn ibv_get_device_list(num: *mut c_int) -> *mut *mut ibv_device;
    pub fn ibv_free_device_list(list: *mut *mut ibv_device);
    pub fn ibv_get_device_guid(dev: *mut ibv_device) -> u64;
    pub fn ibv_get_device_index(dev: *mut ibv_device) -> c_int;
    pub fn ibv_open_device(dev: *mut ibv_device) -> *mut ibv_context;
    pub fn ibv_close_device(ctx: *mut ibv_context) -> c_int;
    pub fn ibv_query_device(ctx: *mut ibv_context, attr: *mut ibv_device_attr) -> c_int;
    pub fn ibv_alloc_pd(ctx: *mut ibv_context) -> *mut ibv_pd;
    pub fn ibv_dealloc_pd(pd: *mut ibv_pd) -> c_int;
}

/// `enum ibv_qp_state` values used here.
pub(crate) const IBV_QPS_INIT: u32 = 1;
pub(crate) const IBV_QPS_RTR: u32 = 2;
pub(crate) const IBV_QPS_RTS: u32 = 3;
pub(crate) const IBV_QPS_SQD: u32 = 4;
pub(crate) const IBV_QPS_ERR: u32 = 6;
/// `enum ibv_qp_attr_mask` bits used here.
pub(crate) const IBV_QP_STATE: i32 = 1;
pub(crate) const IBV_QP_SQ_PSN: i32 = 1 << 16;
/// `IBV_TRANSPORT_IWARP`.
pub(crate) const IBV_TRANSPORT_IWARP: c_int = 1;
/// `IBV_LINK_LAYER_INFINIBAND`.
pub(crate) const IBV_LINK_LAYER_INFINIBAND: c_int = 1;
/// `IBV_LINK_LAYER_ETHERNET`.
pub(crate) const IBV_LINK_LAYER_ETHERNET: c_int = 2;
/// comp_mask bits of the extended init attributes.
pub(crate) const IBV_QP_INIT_ATTR_PD: u32 = 1;
pub(crate) const IBV_QP_INIT_ATTR_XRCD: u32 = 2;
pub(crate) const IBV_SRQ_INIT_ATTR_TYPE: u32 = 1;
pub(crate) const IBV_SRQ_INIT_ATTR_PD: u32 = 2;
pub(crate) const IBV_SRQ_INIT_ATTR_XRCD: u32 = 4;
pub(crate) const IBV_SRQ_INIT_ATTR_CQ: u32 = 8;
pub(crate) const IBV_SRQT_BASIC: u32 = 0;
pub(crate) const IBV_SRQT_XRC: u32 = 1;

/// cbindgen:ignore
#[allow(unused_doc_comments)]
#[link(name = "ibverbs")]
extern "C" {
    pub fn ibv_create_comp_channel(ctx: *mut ibv_context) -> *mut ibv_comp_channel;
    pub fn ibv_destroy_comp_channel(ch: *mut ibv_comp_channel) -> c_int;
    pub fn ibv_create_cq(
        ctx: *mut ibv_context,
        cqe: c_int,
        cq_context: *mut libc::c_void,
        ch: *mut ibv_comp_channel,
        comp_vector: c_int,
    ) -> *mut ibv_cq;
    pub fn ibv_destroy_cq(cq: *mut ibv_cq) -> c_int;
    pub fn ibv_destroy_qp(qp: *mut ibv_qp) -> c_int;
    pub fn ibv_modify_qp(qp: *mut ibv_qp, attr: *mut ibv_qp_attr, mask: c_int) -> c_int;
    pub fn ibv_destroy_srq(srq: *mut ibv_srq) -> c_int;
    pub fn ibv_copy_qp_attr_from_kern(dst: *mut ibv_qp_attr, src: *const ib_uverbs_qp_attr);
    pub fn ibv_attach_mcast(qp: *mut ibv_qp, gid: *const ibv_gid, lid: u16) -> c_int;
    pub fn ibv_detach_mcast(qp: *mut ibv_qp, gid: *const ibv_gid, lid: u16) -> c_int;
    pub fn ibv_query_ece(qp: *mut ibv_qp, ece: *mut ibv_ece) -> c_int;
    pub fn ibv_set_ece(qp: *mut ibv_qp, ece: *mut ibv_ece) -> c_int;
    pub fn ibv_create_ah(pd: *mut ibv_pd, attr: *mut ibv_ah_attr) -> *mut ibv_ah;
    pub fn ibv_destroy_ah(ah: *mut ibv_ah) -> c_int;
    pub fn ibv_query_gid(ctx: *mut ibv_context, port: u8, index: c_int, gid: *mut ibv_gid) -> c_int;
}

/// cbindgen:ignore
#[allow(unused_doc_comments)]
extern "C" {
    /// src/verbs_shim.c: libibverbs' static-inline entry points.
    pub fn rdmacm_shim_create_qp_ex(ctx: *mut ibv_context, attr: *mut ibv_qp_init_attr_ex) -> *mut ibv_qp;
    pub fn rdmacm_shim_create_srq_ex(ctx: *mut ibv_context, attr: *mut ibv_srq_init_attr_ex) -> *mut ibv_srq;
    pub fn rdmacm_shim_open_xrcd(ctx: *mut ibv_context) -> *mut ibv_xrcd;
    pub fn rdmacm_shim_close_xrcd(xrcd: *mut ibv_xrcd) -> c_int;
    pub fn rdmacm_shim_link_layer(ctx: *mut ibv_context, port: u8) -> c_int;
    pub fn rdmacm_shim_reg_mr(pd: *mut ibv_pd, addr: *mut libc::c_void, length: usize, access: c_int) -> *mut ibv_mr;
    pub fn rdmacm_shim_port_info(
        ctx: *mut ibv_context,
        port: u8,
        active_mtu: *mut u32,
        gid_tbl_len: *mut c_int,
        lmc: *mut u8,
    ) -> c_int;
}

/// cbindgen:ignore
#[allow(unused_doc_comments)]
#[link(name = "ibverbs")]
extern "C" {
    pub fn ibv_dereg_mr(mr: *mut ibv_mr) -> c_int;
    pub fn ibv_get_cq_event(ch: *mut ibv_comp_channel, cq: *mut *mut ibv_cq, ctx: *mut *mut libc::c_void) -> c_int;
    pub fn ibv_ack_cq_events(cq: *mut ibv_cq, n: u32);
}

/// `enum ibv_wr_opcode` values used here.
pub(crate) const IBV_WR_RDMA_WRITE: u32 = 0;
pub(crate) const IBV_WR_RDMA_WRITE_WITH_IMM: u32 = 1;
pub(crate) const IBV_WR_SEND: u32 = 2;
/// `enum ibv_send_flags` bits used here.
pub(crate) const IBV_SEND_INLINE: u32 = 1 << 3;
/// `enum ibv_wc_status`: success, flushed.
pub(crate) const IBV_WC_SUCCESS: u32 = 0;
/// `enum ibv_access_flags` bits used here.
pub(crate) const IBV_ACCESS_LOCAL_WRITE: c_int = 1;
pub(crate) const IBV_ACCESS_REMOTE_WRITE: c_int = 1 << 1;

/// The transport type of an open context.
///
/// # Safety
/// `ctx` is a context returned by `ibv_open_device` and not closed.
pub unsafe fn transport_type(ctx: *mut ibv_context) -> c_int {
    // SAFETY: an open context points to its device.
    unsafe { (*(*ctx).device).transport_type }
}

/// `qp->qp_num`.
///
/// # Safety
/// `qp` is a live QP.
pub unsafe fn qp_num(qp: *mut ibv_qp) -> u32 {
    // SAFETY: as the caller promises.
    unsafe { (*qp).qp_num }
}
