//! rdma_create_qp(3), rdma_create_qp_ex(3), rdma_destroy_qp(3),
//! rdma_init_qp_attr(3), and (rdma/rdma_verbs.h) rdma_create_srq(3),
//! rdma_create_srq_ex, rdma_destroy_srq(3).

use super::{arg_mut, guard0, guard_void, out};
use crate::abi::{
    ibv_pd, ibv_qp_attr, ibv_qp_init_attr, ibv_qp_init_attr_ex, ibv_srq_init_attr, ibv_srq_init_attr_ex, rdma_cm_id,
};
use crate::cm::{id, qp};
use crate::error::Error;
use libc::c_int;

/// # Safety
/// As for every export (crate documentation): `qp_attr` and `qp_attr_mask`
/// are writable.
#[no_mangle]
pub unsafe extern "C" fn rdma_init_qp_attr(
    id: *mut rdma_cm_id,
    qp_attr: *mut ibv_qp_attr,
    qp_attr_mask: *mut c_int,
) -> c_int {
    guard0(|| {
        let idp = id::lookup(id)?;
        if qp_attr_mask.is_null() {
            return Err(Error::INVAL);
        }
        // SAFETY: as the caller promises.
        let mask = qp::init_qp_attr(&idp, unsafe { arg_mut(qp_attr) }?)?;
        // SAFETY: checked non-NULL; writable as the caller promises.
        unsafe { out(qp_attr_mask, mask) }
    })
}

/// # Safety
/// As for every export (crate documentation): `qp_init_attr` is valid.
#[no_mangle]
pub unsafe extern "C" fn rdma_create_qp(
    id: *mut rdma_cm_id,
    pd: *mut ibv_pd,
    qp_init_attr: *mut ibv_qp_init_attr,
) -> c_int {
    // SAFETY: as the caller promises.
    guard0(|| qp::create_qp(&*id::lookup(id)?, pd, unsafe { arg_mut(qp_init_attr) }?))
}

/// # Safety
/// As for every export (crate documentation): `qp_init_attr` is valid.
#[no_mangle]
pub unsafe extern "C" fn rdma_create_qp_ex(id: *mut rdma_cm_id, qp_init_attr: *mut ibv_qp_init_attr_ex) -> c_int {
    // SAFETY: as the caller promises.
    guard0(|| qp::create_qp_ex(&*id::lookup(id)?, unsafe { arg_mut(qp_init_attr) }?))
}

/// # Safety
/// As for every export (crate documentation).
#[no_mangle]
pub unsafe extern "C" fn rdma_destroy_qp(id: *mut rdma_cm_id) {
    guard_void(|| id::lookup(id).map(|i| qp::destroy_qp(&i)))
}

/// # Safety
/// As for every export (crate documentation): `attr` is valid.
#[no_mangle]
pub unsafe extern "C" fn rdma_create_srq(id: *mut rdma_cm_id, pd: *mut ibv_pd, attr: *mut ibv_srq_init_attr) -> c_int {
    // SAFETY: as the caller promises.
    guard0(|| qp::create_srq(&*id::lookup(id)?, pd, unsafe { arg_mut(attr) }?))
}

/// # Safety
/// As for every export (crate documentation): `attr` is valid.
#[no_mangle]
pub unsafe extern "C" fn rdma_create_srq_ex(id: *mut rdma_cm_id, attr: *mut ibv_srq_init_attr_ex) -> c_int {
    // SAFETY: as the caller promises.
    guard0(|| qp::create_srq_ex(&*id::lookup(id)?, unsafe { arg_mut(attr) }?))
}

/// # Safety
/// As for every export (crate documentation).
#[no_mangle]
pub unsafe extern "C" fn rdma_destroy_srq(id: *mut rdma_cm_id) {
    guard_void(|| id::lookup(id).map(|i| qp::destroy_srq(&i)))
}
