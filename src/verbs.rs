//! The libibverbs calls the library needs, and the few libibverbs struct
//! fields it reads. libibverbs is touched only when a device context is
//! really needed (an id got bound to a device, or `rdma_get_devices`):
//! `ibv_get_device_list` loads every provider library, which costs
//! 50–140 ms in upstream's first call.

use crate::abi::{
    ibv_ah_attr, ibv_comp_channel, ibv_context, ibv_cq, ibv_ece, ibv_gid, ibv_pd, ibv_qp, ibv_qp_attr,
    ibv_qp_init_attr_ex, ibv_srq, ibv_srq_init_attr_ex, ibv_xrcd,
};
use libc::{c_char, c_int};

/// cbindgen:ignore
/// `struct ibv_device` (libibverbs ABI, 664 bytes; checked by the layout test).
#[repr(C)]
pub struct ibv_device {
    _ops: [*mut libc::c_void; 2],
    pub node_type: c_int,
    pub transport_type: c_int,
    pub name: [c_char; 64],
    pub dev_name: [c_char; 64],
    pub dev_path: [c_char; 256],
    pub ibdev_path: [c_char; 256],
}

/// `IBV_TRANSPORT_IB` (InfiniBand and RoCE).
pub(crate) const IBV_TRANSPORT_IB: c_int = 0;

/// cbindgen:ignore
/// The fields of `struct ibv_device_attr` (232 bytes) the library uses.
#[repr(C)]
pub struct DeviceAttr {
    pub raw: [u8; 232],
}

impl DeviceAttr {
    pub(crate) const OFF_MAX_QP_WR: usize = 112;
    pub(crate) const OFF_MAX_QP_RD_ATOM: usize = 144;
    pub(crate) const OFF_MAX_QP_INIT_RD_ATOM: usize = 156;
    pub(crate) const OFF_PHYS_PORT_CNT: usize = 227;

    fn i32_at(&self, off: usize) -> i32 {
        i32::from_ne_bytes(self.raw[off..off + 4].try_into().unwrap())
    }
    pub fn max_qp_wr(&self) -> i32 {
        self.i32_at(Self::OFF_MAX_QP_WR)
    }
    pub fn max_qp_rd_atom(&self) -> i32 {
        self.i32_at(Self::OFF_MAX_QP_RD_ATOM)
    }
    pub fn max_qp_init_rd_atom(&self) -> i32 {
        self.i32_at(Self::OFF_MAX_QP_INIT_RD_ATOM)
    }
    pub fn phys_port_cnt(&self) -> u8 {
        self.raw[Self::OFF_PHYS_PORT_CNT]
    }
}

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
    pub fn ibv_query_device(ctx: *mut ibv_context, attr: *mut DeviceAttr) -> c_int;
    pub fn ibv_alloc_pd(ctx: *mut ibv_context) -> *mut ibv_pd;
    pub fn ibv_dealloc_pd(pd: *mut ibv_pd) -> c_int;
}

/// Offsets of the libibverbs fields read or written here (checked against
/// Debian's verbs.h at compile time, see build.rs).
pub(crate) const IBV_QP_OFF_CONTEXT: usize = 0;
pub(crate) const IBV_QP_OFF_PD: usize = 16;
pub(crate) const IBV_QP_OFF_SEND_CQ: usize = 24;
pub(crate) const IBV_QP_OFF_RECV_CQ: usize = 32;
pub(crate) const IBV_QP_OFF_SRQ: usize = 40;
pub(crate) const IBV_QP_OFF_QP_NUM: usize = 52;
pub(crate) const IBV_PD_OFF_CONTEXT: usize = 0;
pub(crate) const IBV_CQ_OFF_CQ_CONTEXT: usize = 16;
pub(crate) const IBV_QP_ATTR_OFF_QP_STATE: usize = 0;
pub(crate) const IBV_QP_ATTR_OFF_QKEY: usize = 16;
pub(crate) const IBV_QP_ATTR_OFF_SQ_PSN: usize = 24;
pub(crate) const IBV_QP_ATTR_OFF_MAX_RD_ATOMIC: usize = 126;
pub(crate) const IBV_QP_ATTR_OFF_MAX_DEST_RD_ATOMIC: usize = 127;

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

/// A field of a libibverbs object at a checked offset.
///
/// # Safety
/// `obj` points to a live object of the type the offset belongs to.
pub unsafe fn field<T: Copy, O>(obj: *const O, off: usize) -> T {
    std::ptr::read_unaligned((obj as *const u8).add(off) as *const T)
}

/// `qp->qp_num`.
///
/// # Safety
/// `qp` is a live QP.
pub unsafe fn qp_num(qp: *mut ibv_qp) -> u32 {
    field(qp, IBV_QP_OFF_QP_NUM)
}

impl ibv_qp_attr {
    pub fn zeroed() -> Self {
        ibv_qp_attr { raw: [0; 18] }
    }
    fn bytes(&mut self) -> &mut [u8; 144] {
        // SAFETY: [u64; 18] and [u8; 144] have the same size; u8 has no alignment.
        unsafe { &mut *(self.raw.as_mut_ptr() as *mut [u8; 144]) }
    }
    pub fn set_u32(&mut self, off: usize, v: u32) {
        self.bytes()[off..off + 4].copy_from_slice(&v.to_ne_bytes());
    }
    pub fn set_u8(&mut self, off: usize, v: u8) {
        self.bytes()[off] = v;
    }
    pub fn state(attr: u32) -> Self {
        let mut a = Self::zeroed();
        a.set_u32(IBV_QP_ATTR_OFF_QP_STATE, attr);
        a
    }
}

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
    pub fn ibv_copy_qp_attr_from_kern(dst: *mut ibv_qp_attr, src: *const crate::ucma::cmd::UverbsQpAttr);
    pub fn ibv_attach_mcast(qp: *mut ibv_qp, gid: *const ibv_gid, lid: u16) -> c_int;
    pub fn ibv_detach_mcast(qp: *mut ibv_qp, gid: *const ibv_gid, lid: u16) -> c_int;
    pub fn ibv_query_ece(qp: *mut ibv_qp, ece: *mut ibv_ece) -> c_int;
    pub fn ibv_set_ece(qp: *mut ibv_qp, ece: *mut ibv_ece) -> c_int;
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
}

#[allow(dead_code)]
fn _types_used(_: ibv_ah_attr) {}

/// `ctx->device` (the first field of `struct ibv_context`).
///
/// # Safety
/// `ctx` is a context returned by `ibv_open_device`.
pub unsafe fn context_device(ctx: *mut ibv_context) -> *mut ibv_device {
    *(ctx as *const *mut ibv_device)
}

/// The transport type of an open context.
///
/// # Safety
/// As for [`context_device`].
pub unsafe fn transport_type(ctx: *mut ibv_context) -> c_int {
    (*context_device(ctx)).transport_type
}

#[cfg(test)]
mod tests {
    #[test]
    fn device_layout() {
        assert_eq!(std::mem::size_of::<super::ibv_device>(), 664);
        assert_eq!(std::mem::offset_of!(super::ibv_device, transport_type), 20);
        assert_eq!(std::mem::offset_of!(super::ibv_device, name), 24);
    }
}
