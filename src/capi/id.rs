//! rdma_create_id(3), rdma_destroy_id(3), rdma_bind_addr(3),
//! rdma_resolve_addr(3), rdma_resolve_route(3), rdma_set_option(3),
//! rdma_notify(3), rdma_get_src_port(3), rdma_get_dst_port(3).

use super::{guard, guard_val};
use crate::abi::{rdma_cm_id, rdma_event_channel, RawIbvEventType, RawPortSpace};
use crate::cm::{id, registry};
use crate::error::Error;
use libc::{c_int, c_void, size_t, sockaddr};

#[no_mangle]
pub unsafe extern "C" fn rdma_create_id(
    channel: *mut rdma_event_channel,
    id: *mut *mut rdma_cm_id,
    context: *mut c_void,
    ps: RawPortSpace,
) -> c_int {
    guard(|| {
        if id.is_null() {
            return Err(Error::Errno(libc::EINVAL));
        }
        *id = id::create_id(channel, context, ps)?;
        Ok(0)
    })
}

#[no_mangle]
pub extern "C" fn rdma_destroy_id(id: *mut rdma_cm_id) -> c_int {
    guard(|| id::destroy_id(registry::id_priv(id)?).map(|_| 0))
}

#[no_mangle]
pub extern "C" fn rdma_bind_addr(id: *mut rdma_cm_id, addr: *mut sockaddr) -> c_int {
    guard(|| id::bind_addr(registry::id_priv(id)?, addr).map(|_| 0))
}

#[no_mangle]
pub extern "C" fn rdma_resolve_addr(
    id: *mut rdma_cm_id,
    src_addr: *mut sockaddr,
    dst_addr: *mut sockaddr,
    timeout_ms: c_int,
) -> c_int {
    guard(|| id::resolve_addr(registry::id_priv(id)?, src_addr, dst_addr, timeout_ms).map(|_| 0))
}

#[no_mangle]
pub extern "C" fn rdma_resolve_route(id: *mut rdma_cm_id, timeout_ms: c_int) -> c_int {
    guard(|| id::resolve_route(registry::id_priv(id)?, timeout_ms).map(|_| 0))
}

#[no_mangle]
pub extern "C" fn rdma_set_option(
    id: *mut rdma_cm_id,
    level: c_int,
    optname: c_int,
    optval: *mut c_void,
    optlen: size_t,
) -> c_int {
    guard(|| id::set_option(registry::id_priv(id)?, level, optname, optval, optlen).map(|_| 0))
}

#[no_mangle]
pub extern "C" fn rdma_notify(id: *mut rdma_cm_id, event: RawIbvEventType) -> c_int {
    guard(|| id::notify(registry::id_priv(id)?, event).map(|_| 0))
}

/// Network-order port of the id's source address (0 and EINVAL for an
/// id that is not live).
#[no_mangle]
pub extern "C" fn rdma_get_src_port(id: *mut rdma_cm_id) -> u16 {
    guard_val(0, || {
        let p = registry::id_priv(id)?;
        // SAFETY: storage member of the address union.
        Ok(id::port_of(unsafe { &p.id().route.addr.src.src_storage }))
    })
}

#[no_mangle]
pub extern "C" fn rdma_get_dst_port(id: *mut rdma_cm_id) -> u16 {
    guard_val(0, || {
        let p = registry::id_priv(id)?;
        // SAFETY: as above.
        Ok(id::port_of(unsafe { &p.id().route.addr.dst.dst_storage }))
    })
}
