//! rdma_listen(3), rdma_connect(3), rdma_accept(3), rdma_reject(3),
//! rdma_reject_ece(3), rdma_establish(3), rdma_disconnect(3),
//! rdma_get_request(3), rdma_create_ep(3), rdma_destroy_ep(3),
//! rdma_set_local_ece(3), rdma_get_remote_ece(3).

use super::{addr_arg, bytes, conn_params, guard0, guard_void, out};
use crate::abi::{ibv_ece, ibv_pd, ibv_qp_init_attr, rdma_addrinfo, rdma_cm_id, rdma_conn_param, RAI_PASSIVE};
use crate::cm::ops::EpInfo;
use crate::cm::{conn, id, ops};
use crate::error::Error;
use crate::ucma::{cmd::MAX_PRIVATE_DATA, KernelBuf};
use libc::{c_int, c_void};

/// IBTA reject reason "vendor option not supported" (`rdma_reject_ece`).
const REJ_VENDOR_OPTION_NOT_SUPPORTED: u8 = 35;

/// # Safety
/// As for every export (crate documentation).
#[no_mangle]
pub unsafe extern "C" fn rdma_listen(id: *mut rdma_cm_id, backlog: c_int) -> c_int {
    guard0(|| conn::listen(&*id::lookup(id)?, backlog))
}

/// # Safety
/// As for every export (crate documentation): `conn_param` is NULL or a
/// valid parameter block.
#[no_mangle]
pub unsafe extern "C" fn rdma_connect(id: *mut rdma_cm_id, conn_param: *mut rdma_conn_param) -> c_int {
    // SAFETY: as the caller promises.
    guard0(|| ops::connect(&*id::lookup(id)?, unsafe { conn_params(conn_param) }.as_ref()))
}

/// # Safety
/// As for [`rdma_connect`].
#[no_mangle]
pub unsafe extern "C" fn rdma_accept(id: *mut rdma_cm_id, conn_param: *mut rdma_conn_param) -> c_int {
    // SAFETY: as the caller promises.
    guard0(|| ops::accept(&*id::lookup(id)?, unsafe { conn_params(conn_param) }.as_ref()))
}

/// # Safety
/// As for every export (crate documentation): `private_data` is NULL or
/// readable for `private_data_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn rdma_reject(id: *mut rdma_cm_id, private_data: *const c_void, private_data_len: u8) -> c_int {
    // SAFETY: as the caller promises.
    guard0(|| conn::reject(&*id::lookup(id)?, unsafe { bytes(private_data, private_data_len as usize) }, 0))
}

/// # Safety
/// As for [`rdma_reject`].
#[no_mangle]
pub unsafe extern "C" fn rdma_reject_ece(
    id: *mut rdma_cm_id,
    private_data: *const c_void,
    private_data_len: u8,
) -> c_int {
    guard0(|| {
        // SAFETY: as the caller promises.
        let d = unsafe { bytes(private_data, private_data_len as usize) };
        conn::reject(&*id::lookup(id)?, d, REJ_VENDOR_OPTION_NOT_SUPPORTED)
    })
}

/// # Safety
/// As for every export (crate documentation).
#[no_mangle]
pub unsafe extern "C" fn rdma_establish(id: *mut rdma_cm_id) -> c_int {
    guard0(|| conn::establish(&*id::lookup(id)?))
}

/// # Safety
/// As for every export (crate documentation).
#[no_mangle]
pub unsafe extern "C" fn rdma_disconnect(id: *mut rdma_cm_id) -> c_int {
    guard0(|| ops::disconnect(&*id::lookup(id)?))
}

/// # Safety
/// As for every export (crate documentation): `id` is writable.
#[no_mangle]
pub unsafe extern "C" fn rdma_get_request(listen: *mut rdma_cm_id, id: *mut *mut rdma_cm_id) -> c_int {
    guard0(|| {
        let l = id::lookup(listen)?;
        if id.is_null() {
            return Err(Error::INVAL);
        }
        let child = ops::get_request(&l)?;
        // SAFETY: checked non-NULL; writable as the caller promises.
        unsafe { out(id, id::Id::c_ptr(&child)) }
    })
}

/// What `rdma_create_ep` reads of `res`, as upstream reads it (addresses
/// only on the side they are used for).
///
/// # Safety
/// `res`'s pointers are valid for their lengths (the man page's rule).
unsafe fn ep_info(res: &rdma_addrinfo) -> EpInfo<'_> {
    let passive = res.ai_flags & RAI_PASSIVE != 0;
    EpInfo {
        flags: res.ai_flags,
        qp_type: res.ai_qp_type,
        port_space: res.ai_port_space,
        // SAFETY: as the caller promises.
        src: unsafe { addr_arg(res.ai_src_addr) },
        // SAFETY: as above.
        dst: if passive { Ok(None) } else { unsafe { addr_arg(res.ai_dst_addr) } },
        route: (!passive && res.ai_route_len > 0).then(|| {
            let len = u32::try_from(res.ai_route_len).map_err(|_| Error::INVAL)?;
            Ok(KernelBuf { addr: res.ai_route as u64, len })
        }),
        connect: if passive || res.ai_connect.is_null() || res.ai_connect_len == 0 {
            Ok(&[])
        } else if res.ai_connect_len > MAX_PRIVATE_DATA {
            Err(Error::INVAL)
        } else {
            // SAFETY: as the caller promises.
            Ok(unsafe { bytes(res.ai_connect, res.ai_connect_len) })
        },
    }
}

/// # Safety
/// As for every export (crate documentation): `id` is writable, `res` a
/// valid address-info node, `qp_init_attr` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn rdma_create_ep(
    id: *mut *mut rdma_cm_id,
    res: *mut rdma_addrinfo,
    pd: *mut ibv_pd,
    qp_init_attr: *mut ibv_qp_init_attr,
) -> c_int {
    guard0(|| {
        if id.is_null() {
            return Err(Error::INVAL);
        }
        // SAFETY: as the caller promises.
        let res = unsafe { res.as_ref() }.ok_or(Error::INVAL)?;
        // SAFETY: as the caller promises.
        let ep = ops::create_ep(&unsafe { ep_info(res) }, pd, unsafe { qp_init_attr.as_mut() })?;
        // SAFETY: checked non-NULL; writable as the caller promises.
        unsafe { out(id, id::Id::c_ptr(&ep)) }
    })
}

/// # Safety
/// As for every export (crate documentation).
#[no_mangle]
pub unsafe extern "C" fn rdma_destroy_ep(id: *mut rdma_cm_id) {
    guard_void(|| ops::destroy_ep(&id::lookup(id)?))
}

/// # Safety
/// As for every export (crate documentation): `ece` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn rdma_set_local_ece(id: *mut rdma_cm_id, ece: *mut ibv_ece) -> c_int {
    guard0(|| {
        let idp = id::lookup(id)?;
        // SAFETY: as the caller promises.
        conn::set_local_ece(&idp, unsafe { ece.as_ref() }.ok_or(Error::INVAL)?)
    })
}

/// # Safety
/// As for every export (crate documentation): `ece` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rdma_get_remote_ece(id: *mut rdma_cm_id, ece: *mut ibv_ece) -> c_int {
    guard0(|| {
        let idp = id::lookup(id)?;
        if ece.is_null() {
            return Err(Error::INVAL);
        }
        let e = conn::get_remote_ece(&idp)?;
        // SAFETY: checked non-NULL; writable as the caller promises.
        unsafe { out(ece, e) }
    })
}
