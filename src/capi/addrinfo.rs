//! rdma_getaddrinfo(3): `rdma_getaddrinfo`, `rdma_freeaddrinfo`, and the
//! RDMACM_1.4 `rdma_resolve_addrinfo`, `rdma_query_addrinfo`.

use super::{cstr_opt, guard0};
use crate::abi::{ibv_path_data, ibv_path_record, rdma_addrinfo, rdma_cm_id};
use crate::addr::getaddrinfo;
use crate::addr::model::{HintMemory, Hints};
use crate::cm::{id, ops, resolve_ai};
use crate::error::{Error, Result};
use crate::nulstr::NulStr;
use crate::sockaddr::RawAddr;
use libc::{c_char, c_int};

/// The caller's hints struct, read where a query needs it.
struct CHints<'a>(&'a rdma_addrinfo);

impl HintMemory for CHints<'_> {
    fn src(&self) -> Result<Option<RawAddr>> {
        // SAFETY: the caller vouches for ai_src_addr/ai_src_len; lengths
        // beyond sockaddr_storage are refused before any read.
        unsafe { RawAddr::from_ptr(self.0.ai_src_addr, self.0.ai_src_len) }.map(Some)
    }
    fn dst(&self) -> Result<Option<RawAddr>> {
        // SAFETY: as for src().
        unsafe { RawAddr::from_ptr(self.0.ai_dst_addr, self.0.ai_dst_len) }.map(Some)
    }
    fn route_path(&self) -> Option<ibv_path_record> {
        let h = self.0;
        if h.ai_route.is_null() {
            return None;
        }
        // SAFETY: the caller vouches for ai_route being ai_route_len bytes;
        // only the two exact sizes are read.
        unsafe {
            if h.ai_route_len == std::mem::size_of::<ibv_path_record>() {
                Some(std::ptr::read_unaligned(h.ai_route as *const ibv_path_record))
            } else if h.ai_route_len == std::mem::size_of::<ibv_path_data>() {
                Some(std::ptr::read_unaligned(h.ai_route as *const ibv_path_data).path)
            } else {
                None
            }
        }
    }
}

fn c_hints<'a>(h: Option<&'a rdma_addrinfo>, mem: Option<&'a CHints<'a>>) -> Hints<'a> {
    match (h, mem) {
        (Some(h), Some(mem)) => Hints {
            given: true,
            flags: h.ai_flags,
            family: h.ai_family,
            qp_type: h.ai_qp_type,
            port_space: h.ai_port_space,
            src_len: h.ai_src_len,
            dst_len: h.ai_dst_len,
            route_len: h.ai_route_len,
            mem: Some(mem),
        },
        _ => Hints::default(),
    }
}

/// # Safety
/// As for every export (crate documentation): `node` and `service` are
/// NULL or C strings, `hints` NULL or valid, `res` writable.
#[no_mangle]
pub unsafe extern "C" fn rdma_getaddrinfo(
    node: *const c_char,
    service: *const c_char,
    hints: *const rdma_addrinfo,
    res: *mut *mut rdma_addrinfo,
) -> c_int {
    crate::capi::guard(|| {
        // SAFETY: as the caller promises.
        let h = unsafe { hints.as_ref() };
        let mem = h.map(CHints);
        // SAFETY: as the caller promises.
        let list = getaddrinfo::rdma_getaddrinfo(
            unsafe { NulStr::from_ptr(node) },
            unsafe { NulStr::from_ptr(service) },
            &c_hints(h, mem.as_ref()),
        )?;
        if res.is_null() {
            // Upstream writes through `res` unchecked; we refuse.
            return Err(Error::INVAL);
        }
        // SAFETY: checked non-NULL; writable as the caller promises.
        unsafe { *res = list.into_raw() };
        Ok(0)
    })
}

/// # Safety
/// As for every export (crate documentation): `res` is NULL or a list from
/// this library not freed yet.
#[no_mangle]
pub unsafe extern "C" fn rdma_freeaddrinfo(res: *mut rdma_addrinfo) {
    crate::capi::guard_void(|| {
        // SAFETY: as the caller promises (the man page's rule).
        unsafe { getaddrinfo::free_list(res) };
        Ok(())
    })
}

/// RDMACM_1.4: resolve into the id; ADDRINFO_RESOLVED/_ERROR follows.
///
/// # Safety
/// As for [`rdma_getaddrinfo`].
#[no_mangle]
pub unsafe extern "C" fn rdma_resolve_addrinfo(
    id: *mut rdma_cm_id,
    node: *const c_char,
    service: *const c_char,
    hints: *const rdma_addrinfo,
) -> c_int {
    guard0(|| {
        let idp = id::lookup(id)?;
        // SAFETY: as the caller promises.
        let h = unsafe { hints.as_ref() };
        let mem = h.map(CHints);
        // SAFETY: as the caller promises.
        ops::resolve_addrinfo(&idp, unsafe { cstr_opt(node) }, unsafe { cstr_opt(service) }, &c_hints(h, mem.as_ref()))
    })
}

/// RDMACM_1.4: hand over the result of `rdma_resolve_addrinfo` (once).
///
/// # Safety
/// As for every export (crate documentation): `info` is writable.
#[no_mangle]
pub unsafe extern "C" fn rdma_query_addrinfo(id: *mut rdma_cm_id, info: *mut *mut rdma_addrinfo) -> c_int {
    guard0(|| {
        if info.is_null() {
            return Err(Error::INVAL);
        }
        let list = resolve_ai::query_addrinfo(&*id::lookup(id)?)?;
        // SAFETY: checked non-NULL; writable as the caller promises.
        unsafe { *info = list.into_raw() };
        Ok(())
    })
}
