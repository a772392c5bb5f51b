//! rdma_listen(3), rdma_connect(3), rdma_accept(3), rdma_reject(3),
//! rdma_reject_ece(3), rdma_establish(3), rdma_disconnect(3),
//! rdma_get_request(3), rdma_create_ep(3), rdma_destroy_ep(3),
//! rdma_set_local_ece(3), rdma_get_remote_ece(3).

use super::{guard, guard_void};
use crate::abi::{ibv_ece, ibv_pd, ibv_qp_init_attr, rdma_addrinfo, rdma_cm_id, rdma_conn_param};
use crate::cm::{conn, registry};
use crate::error::Error;
use libc::{c_int, c_void};

/// IBTA reject reason "vendor option not supported" (`rdma_reject_ece`).
const REJ_VENDOR_OPTION_NOT_SUPPORTED: u8 = 35;

#[no_mangle]
pub extern "C" fn rdma_listen(id: *mut rdma_cm_id, backlog: c_int) -> c_int {
    guard(|| conn::listen(registry::id_priv(id)?, backlog).map(|_| 0))
}

#[no_mangle]
pub extern "C" fn rdma_connect(id: *mut rdma_cm_id, conn_param: *mut rdma_conn_param) -> c_int {
    guard(|| conn::connect(registry::id_priv(id)?, conn_param).map(|_| 0))
}

#[no_mangle]
pub extern "C" fn rdma_accept(id: *mut rdma_cm_id, conn_param: *mut rdma_conn_param) -> c_int {
    guard(|| conn::accept(registry::id_priv(id)?, conn_param).map(|_| 0))
}

#[no_mangle]
pub extern "C" fn rdma_reject(id: *mut rdma_cm_id, private_data: *const c_void, private_data_len: u8) -> c_int {
    guard(|| conn::reject(registry::id_priv(id)?, private_data, private_data_len, 0).map(|_| 0))
}

#[no_mangle]
pub extern "C" fn rdma_reject_ece(id: *mut rdma_cm_id, private_data: *const c_void, private_data_len: u8) -> c_int {
    guard(|| {
        conn::reject(registry::id_priv(id)?, private_data, private_data_len, REJ_VENDOR_OPTION_NOT_SUPPORTED).map(|_| 0)
    })
}

#[no_mangle]
pub extern "C" fn rdma_establish(id: *mut rdma_cm_id) -> c_int {
    guard(|| conn::establish(registry::id_priv(id)?).map(|_| 0))
}

#[no_mangle]
pub extern "C" fn rdma_disconnect(id: *mut rdma_cm_id) -> c_int {
    guard(|| conn::disconnect(registry::id_priv(id)?).map(|_| 0))
}

#[no_mangle]
pub unsafe extern "C" fn rdma_get_request(listen: *mut rdma_cm_id, id: *mut *mut rdma_cm_id) -> c_int {
    guard(|| {
        let l = registry::id_priv(listen)?;
        if id.is_null() {
            return Err(Error::Errno(libc::EINVAL));
        }
        *id = conn::get_request(l)?;
        Ok(0)
    })
}

#[no_mangle]
pub unsafe extern "C" fn rdma_create_ep(
    id: *mut *mut rdma_cm_id,
    res: *mut rdma_addrinfo,
    pd: *mut ibv_pd,
    qp_init_attr: *mut ibv_qp_init_attr,
) -> c_int {
    guard(|| {
        if id.is_null() {
            return Err(Error::Errno(libc::EINVAL));
        }
        *id = conn::create_ep(res, pd, qp_init_attr)?;
        Ok(0)
    })
}

#[no_mangle]
pub extern "C" fn rdma_destroy_ep(id: *mut rdma_cm_id) {
    guard_void(|| conn::destroy_ep(registry::id_priv(id)?))
}

#[no_mangle]
pub extern "C" fn rdma_set_local_ece(id: *mut rdma_cm_id, ece: *mut ibv_ece) -> c_int {
    guard(|| conn::set_local_ece(registry::id_priv(id)?, ece).map(|_| 0))
}

#[no_mangle]
pub extern "C" fn rdma_get_remote_ece(id: *mut rdma_cm_id, ece: *mut ibv_ece) -> c_int {
    guard(|| conn::get_remote_ece(registry::id_priv(id)?, ece).map(|_| 0))
}
