//! rdma_join_multicast(3), rdma_join_multicast_ex(3), rdma_leave_multicast(3).

use super::{addr_req, guard0};
use crate::abi::{rdma_cm_id, rdma_cm_join_mc_attr_ex, RDMA_MC_JOIN_FLAG_FULLMEMBER};
use crate::cm::{id, mcast, ops};
use crate::error::Error;
use libc::{c_int, c_void, sockaddr};

/// # Safety
/// As for every export (crate documentation): `addr` is a socket address.
#[no_mangle]
pub unsafe extern "C" fn rdma_join_multicast(id: *mut rdma_cm_id, addr: *mut sockaddr, context: *mut c_void) -> c_int {
    guard0(|| {
        let idp = id::lookup(id)?;
        // SAFETY: as the caller promises.
        let a = unsafe { addr_req(addr) }?;
        ops::join(&idp, a, RDMA_MC_JOIN_FLAG_FULLMEMBER as u16, context)
    })
}

/// # Safety
/// As for every export (crate documentation): `mc_join_attr` is NULL or
/// valid, its address a socket address.
#[no_mangle]
pub unsafe extern "C" fn rdma_join_multicast_ex(
    id: *mut rdma_cm_id,
    mc_join_attr: *mut rdma_cm_join_mc_attr_ex,
    context: *mut c_void,
) -> c_int {
    guard0(|| {
        let idp = id::lookup(id)?;
        // SAFETY: as the caller promises.
        let attr = unsafe { mc_join_attr.as_ref() }.ok_or(Error::INVAL)?;
        mcast::check_join_attr(attr.comp_mask, attr.join_flags)?;
        // SAFETY: as the caller promises.
        let a = unsafe { addr_req(attr.addr) }?;
        ops::join(&idp, a, attr.join_flags as u16, context)
    })
}

/// # Safety
/// As for every export (crate documentation): `addr` is a socket address.
#[no_mangle]
pub unsafe extern "C" fn rdma_leave_multicast(id: *mut rdma_cm_id, addr: *mut sockaddr) -> c_int {
    // SAFETY: as the caller promises.
    guard0(|| mcast::leave(&*id::lookup(id)?, &unsafe { addr_req(addr) }?))
}
