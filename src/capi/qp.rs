//! rdma_create_qp(3), rdma_create_qp_ex(3), rdma_destroy_qp(3),
//! rdma_init_qp_attr(3), and (rdma/rdma_verbs.h) rdma_create_srq(3),
//! rdma_create_srq_ex, rdma_destroy_srq(3).

use super::{guard, guard_void};
use crate::abi::{ibv_pd, ibv_qp_attr, ibv_qp_init_attr, ibv_qp_init_attr_ex, ibv_srq_init_attr, ibv_srq_init_attr_ex, rdma_cm_id};
use crate::cm::{qp, registry};
use crate::error::Error;
use libc::c_int;

#[no_mangle]
pub unsafe extern "C" fn rdma_init_qp_attr(id: *mut rdma_cm_id, qp_attr: *mut ibv_qp_attr, qp_attr_mask: *mut c_int) -> c_int {
    guard(|| {
        let p = registry::id_priv(id)?;
        let (Some(a), false) = (qp_attr.as_mut(), qp_attr_mask.is_null()) else {
            return Err(Error::Errno(libc::EINVAL));
        };
        *qp_attr_mask = qp::init_qp_attr(p, a)?;
        Ok(0)
    })
}

#[no_mangle]
pub unsafe extern "C" fn rdma_create_qp(id: *mut rdma_cm_id, pd: *mut ibv_pd, qp_init_attr: *mut ibv_qp_init_attr) -> c_int {
    guard(|| {
        let p = registry::id_priv(id)?;
        let a = qp_init_attr.as_mut().ok_or(Error::Errno(libc::EINVAL))?;
        qp::create_qp(p, pd, a).map(|_| 0)
    })
}

#[no_mangle]
pub unsafe extern "C" fn rdma_create_qp_ex(id: *mut rdma_cm_id, qp_init_attr: *mut ibv_qp_init_attr_ex) -> c_int {
    guard(|| {
        let p = registry::id_priv(id)?;
        let a = qp_init_attr.as_mut().ok_or(Error::Errno(libc::EINVAL))?;
        qp::create_qp_ex(p, a).map(|_| 0)
    })
}

#[no_mangle]
pub extern "C" fn rdma_destroy_qp(id: *mut rdma_cm_id) {
    guard_void(|| registry::id_priv(id).map(qp::destroy_qp))
}

#[no_mangle]
pub unsafe extern "C" fn rdma_create_srq(id: *mut rdma_cm_id, pd: *mut ibv_pd, attr: *mut ibv_srq_init_attr) -> c_int {
    guard(|| {
        let p = registry::id_priv(id)?;
        let a = attr.as_mut().ok_or(Error::Errno(libc::EINVAL))?;
        qp::create_srq(p, pd, a).map(|_| 0)
    })
}

#[no_mangle]
pub unsafe extern "C" fn rdma_create_srq_ex(id: *mut rdma_cm_id, attr: *mut ibv_srq_init_attr_ex) -> c_int {
    guard(|| {
        let p = registry::id_priv(id)?;
        let a = attr.as_mut().ok_or(Error::Errno(libc::EINVAL))?;
        qp::create_srq_ex(p, a).map(|_| 0)
    })
}

#[no_mangle]
pub extern "C" fn rdma_destroy_srq(id: *mut rdma_cm_id) {
    guard_void(|| registry::id_priv(id).map(qp::destroy_srq))
}
