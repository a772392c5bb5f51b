//! The libibverbs calls the library needs, and the few libibverbs struct
//! fields it reads. libibverbs is touched only when a device context is
//! really needed (an id got bound to a device, or `rdma_get_devices`):
//! `ibv_get_device_list` loads every provider library, which costs
//! 50–140 ms in upstream's first call.

use crate::abi::{ibv_context, ibv_pd};
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
