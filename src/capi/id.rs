//! rdma_create_id(3), rdma_destroy_id(3), rdma_bind_addr(3),
//! rdma_resolve_addr(3), rdma_resolve_route(3), rdma_set_option(3),
//! rdma_notify(3), rdma_get_src_port(3), rdma_get_dst_port(3).

use super::{addr_bytes, guard0, guard_val, out};
use crate::abi::{rdma_cm_id, rdma_event_channel, RawIbvEventType, RawPortSpace};
use crate::cm::{id, lifecycle, ops};
use crate::error::Error;
use crate::ucma::KernelBuf;
use libc::{c_int, c_void, size_t, sockaddr};

/// # Safety
/// As for every export (crate documentation): `id` is writable.
#[no_mangle]
pub unsafe extern "C" fn rdma_create_id(
    channel: *mut rdma_event_channel,
    id: *mut *mut rdma_cm_id,
    context: *mut c_void,
    ps: RawPortSpace,
) -> c_int {
    guard0(|| {
        if id.is_null() {
            return Err(Error::INVAL);
        }
        let new = lifecycle::create_id(channel, context, ps)?;
        // SAFETY: checked non-NULL; writable as the caller promises.
        unsafe { out(id, id::Id::c_ptr(&new)) }
    })
}

/// # Safety
/// As for every export (crate documentation).
#[no_mangle]
pub unsafe extern "C" fn rdma_destroy_id(id: *mut rdma_cm_id) -> c_int {
    guard0(|| lifecycle::destroy_id(&id::lookup(id)?))
}

/// # Safety
/// As for every export (crate documentation): `addr` is a socket address.
#[no_mangle]
pub unsafe extern "C" fn rdma_bind_addr(id: *mut rdma_cm_id, addr: *mut sockaddr) -> c_int {
    // SAFETY: as the caller promises.
    guard0(|| id::lookup(id)?.bind(unsafe { addr_bytes(addr) }?.ok_or(Error::INVAL)?))
}

/// # Safety
/// As for every export (crate documentation): the addresses are socket
/// addresses (`src_addr` may be NULL).
#[no_mangle]
pub unsafe extern "C" fn rdma_resolve_addr(
    id: *mut rdma_cm_id,
    src_addr: *mut sockaddr,
    dst_addr: *mut sockaddr,
    timeout_ms: c_int,
) -> c_int {
    guard0(|| {
        let idp = id::lookup(id)?;
        // SAFETY: as the caller promises.
        let (dst, src) = unsafe { (addr_bytes(dst_addr)?.ok_or(Error::INVAL)?, addr_bytes(src_addr)?) };
        ops::resolve_addr(&idp, src, dst, timeout_ms)
    })
}

/// # Safety
/// As for every export (crate documentation).
#[no_mangle]
pub unsafe extern "C" fn rdma_resolve_route(id: *mut rdma_cm_id, timeout_ms: c_int) -> c_int {
    guard0(|| ops::resolve_route(&*id::lookup(id)?, timeout_ms))
}

/// # Safety
/// As for every export (crate documentation); `optval` is passed to the
/// kernel, which checks it.
#[no_mangle]
pub unsafe extern "C" fn rdma_set_option(
    id: *mut rdma_cm_id,
    level: c_int,
    optname: c_int,
    optval: *mut c_void,
    optlen: size_t,
) -> c_int {
    guard0(|| {
        let idp = id::lookup(id)?;
        let len = u32::try_from(optlen).map_err(|_| Error::INVAL)?;
        idp.set_option(level as u32, optname as u32, KernelBuf { addr: optval as u64, len })
    })
}

/// # Safety
/// As for every export (crate documentation).
#[no_mangle]
pub unsafe extern "C" fn rdma_notify(id: *mut rdma_cm_id, event: RawIbvEventType) -> c_int {
    guard0(|| id::lookup(id)?.notify(event))
}

/// Network-order port of the id's source address (0 and EINVAL for an
/// id that is not live).
///
/// # Safety
/// As for every export (crate documentation).
#[no_mangle]
pub unsafe extern "C" fn rdma_get_src_port(id: *mut rdma_cm_id) -> u16 {
    guard_val(0, || Ok(id::lookup(id)?.port(true)))
}

/// # Safety
/// As for every export (crate documentation).
#[no_mangle]
pub unsafe extern "C" fn rdma_get_dst_port(id: *mut rdma_cm_id) -> u16 {
    guard_val(0, || Ok(id::lookup(id)?.port(false)))
}
