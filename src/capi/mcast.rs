//! rdma_join_multicast(3), rdma_join_multicast_ex(3), rdma_leave_multicast(3).

use super::guard;
use crate::abi::{rdma_cm_id, rdma_cm_join_mc_attr_ex};
use crate::cm::{mcast, registry};
use libc::{c_int, c_void, sockaddr};

#[no_mangle]
pub extern "C" fn rdma_join_multicast(id: *mut rdma_cm_id, addr: *mut sockaddr, context: *mut c_void) -> c_int {
    guard(|| mcast::join_multicast(registry::id_priv(id)?, addr, context).map(|_| 0))
}

#[no_mangle]
pub extern "C" fn rdma_join_multicast_ex(
    id: *mut rdma_cm_id,
    mc_join_attr: *mut rdma_cm_join_mc_attr_ex,
    context: *mut c_void,
) -> c_int {
    guard(|| mcast::join_multicast_ex(registry::id_priv(id)?, mc_join_attr, context).map(|_| 0))
}

#[no_mangle]
pub extern "C" fn rdma_leave_multicast(id: *mut rdma_cm_id, addr: *mut sockaddr) -> c_int {
    guard(|| mcast::leave_multicast(registry::id_priv(id)?, addr).map(|_| 0))
}
