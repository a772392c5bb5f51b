//! rdma_getaddrinfo(3): `rdma_getaddrinfo`, `rdma_freeaddrinfo`.

use super::{guard, guard_void};
use crate::abi::rdma_addrinfo;
use crate::addr::{cstr_opt, getaddrinfo};
use crate::error::Error;
use libc::{c_char, c_int};

#[no_mangle]
pub unsafe extern "C" fn rdma_getaddrinfo(
    node: *const c_char,
    service: *const c_char,
    hints: *const rdma_addrinfo,
    res: *mut *mut rdma_addrinfo,
) -> c_int {
    guard(|| {
        // SAFETY: the caller passes NUL-terminated strings or NULL, and a
        // hints struct or NULL, as the man page requires.
        let list = getaddrinfo::rdma_getaddrinfo(cstr_opt(node), cstr_opt(service), hints.as_ref())?;
        if res.is_null() {
            // Upstream writes through `res` unchecked; we refuse.
            getaddrinfo::free_list(list);
            return Err(Error::Errno(libc::EINVAL));
        }
        *res = list;
        Ok(0)
    })
}

#[no_mangle]
pub unsafe extern "C" fn rdma_freeaddrinfo(res: *mut rdma_addrinfo) {
    // SAFETY: only lists made by this library may be passed (man page).
    guard_void(|| {
        getaddrinfo::free_list(res);
        Ok(())
    })
}

/// RDMACM_1.4: resolve into the id; ADDRINFO_RESOLVED/_ERROR follows.
#[no_mangle]
pub unsafe extern "C" fn rdma_resolve_addrinfo(
    id: *mut crate::abi::rdma_cm_id,
    node: *const c_char,
    service: *const c_char,
    hints: *const rdma_addrinfo,
) -> c_int {
    guard(|| {
        let p = crate::cm::registry::id_priv(id)?;
        crate::cm::resolve_ai::resolve_addrinfo(p, cstr_opt(node), cstr_opt(service), hints.as_ref()).map(|_| 0)
    })
}

/// RDMACM_1.4: hand over the result of `rdma_resolve_addrinfo` (once).
#[no_mangle]
pub unsafe extern "C" fn rdma_query_addrinfo(id: *mut crate::abi::rdma_cm_id, info: *mut *mut rdma_addrinfo) -> c_int {
    guard(|| {
        if info.is_null() {
            return Err(Error::Errno(libc::EINVAL));
        }
        *info = crate::cm::resolve_ai::query_addrinfo(crate::cm::registry::id_priv(id)?)?;
        Ok(0)
    })
}
