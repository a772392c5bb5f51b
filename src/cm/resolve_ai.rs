//! `rdma_resolve_addrinfo`, `rdma_query_addrinfo`, `rdma_write_cm_event`
//! (RDMACM_1.4). Both paths need Linux ≥ 6.17: the DNS path delivers its
//! result through WRITE_CM_EVENT, the SA path through RESOLVE_IB_SERVICE.
//! The commands and the handler of ADDRINFO_RESOLVED; waiting on a sync id
//! is the business of `ops`.
//!
//! Differences from upstream v65: every failure sets a positive errno
//! (upstream can leave -1 or a negative EAI code in errno), and the id's
//! mutex is never held across a blocking wait.

use super::events::Event;
use super::id::Id;
use crate::abi::*;
use crate::addr::getaddrinfo;
use crate::addr::model::{AddrInfo, Hints};
use crate::error::{Error, Result};
use crate::nulstr::NulStr;
use crate::sockaddr::RawAddr;
use crate::ucma::{self, cmd};
use std::ffi::CStr;

use rdma_cm_event_type as E;

/// A glibc `EAI_*` code as a positive errno (for `rdma_resolve_addrinfo`,
/// which can only report errno).
pub fn eai_to_errno(code: i32) -> i32 {
    match code {
        libc::EAI_NONAME | libc::EAI_NODATA => libc::ENOENT,
        libc::EAI_AGAIN => libc::EAGAIN,
        libc::EAI_MEMORY => libc::ENOMEM,
        libc::EAI_FAMILY | crate::addr::model::EAI_ADDRFAMILY => libc::EAFNOSUPPORT,
        libc::EAI_SOCKTYPE => libc::ESOCKTNOSUPPORT,
        libc::EAI_SERVICE => libc::EPROTONOSUPPORT,
        libc::EAI_SYSTEM => match crate::error::errno() {
            0 => libc::EIO,
            e => e,
        },
        _ => libc::EINVAL,
    }
}

pub fn positive(e: Error) -> Error {
    match e {
        Error::Eai(code) => Error::Errno(eai_to_errno(code)),
        e => e,
    }
}

pub fn clear_resolving(idp: &Id) {
    if let Some(r) = idp.lock().rare.as_mut() {
        r.resolving_ai = false;
    }
}

/// `strtoull(s, &end, 0)` consuming the whole string, as upstream decides
/// between a service id and a service name.
pub fn parse_service_id(s: &[u8]) -> Option<u64> {
    let t = std::str::from_utf8(s).ok()?;
    let t = t.trim_start();
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (radix, digits) = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        (16, h)
    } else if t.len() > 1 && t.starts_with('0') {
        (8, &t[1..])
    } else {
        (10, t)
    };
    if digits.is_empty() {
        return if radix == 8 || t == "0" { Some(0) } else { None };
    }
    let v = u64::from_str_radix(digits, radix).ok()?;
    Some(if neg { v.wrapping_neg() } else { v })
}

/// RESOLVE_IB_SERVICE by id or name.
fn resolve_sa(idp: &Id, service: Option<&CStr>) -> Result<()> {
    let service = service.ok_or(Error::INVAL)?;
    let b = service.to_bytes();
    ucma::resolve_ib_service(idp.fd(), idp.handle(), parse_service_id(b), b)
}

/// The DNS path: resolve now, keep the result, and queue the INTERNAL
/// event that reports it.
fn resolve_dns(idp: &Id, node: Option<&CStr>, service: Option<&CStr>, hints: &Hints) -> Result<()> {
    let list = getaddrinfo::rdma_getaddrinfo(node.map(NulStr::from_cstr), service.map(NulStr::from_cstr), hints)
        .map_err(positive)?;
    // The result exists before the event is read, as upstream.
    idp.lock().rare()?.resolved_ai = Some(list);
    let arg = E::RDMA_CM_EVENT_ADDRINFO_RESOLVED as u64;
    if let Err(e) = ucma::write_cm_event(idp.fd(), idp.handle(), E::RDMA_CM_EVENT_INTERNAL as u32, 0, arg) {
        if let Some(r) = idp.lock().rare.as_mut() {
            r.resolved_ai = None;
        }
        return Err(e);
    }
    Ok(())
}

/// `rdma_resolve_addrinfo`'s command part (ADDRINFO_RESOLVED or _ERROR
/// follows on the channel).
pub fn resolve_addrinfo(idp: &Id, node: Option<&CStr>, service: Option<&CStr>, hints: &Hints) -> Result<()> {
    {
        let mut st = idp.lock();
        let r = st.rare()?;
        if r.resolving_ai {
            return Err(Error::Errno(libc::EBUSY));
        }
        r.resolving_ai = true;
    }
    let flags = hints.flags();
    let r = if flags & RAI_SA != 0 && (flags & RAI_DNS != 0 || node.is_some()) {
        Err(Error::Errno(libc::ENOTSUP))
    } else if flags & RAI_SA != 0 {
        resolve_sa(idp, service)
    } else {
        resolve_dns(idp, node, service, hints)
    };
    if r.is_err() {
        clear_resolving(idp);
    }
    r.map_err(positive)
}

/// `rdma_query_addrinfo`: the result, once.
pub fn query_addrinfo(idp: &Id) -> Result<getaddrinfo::AddrInfoList> {
    let mut st = idp.lock();
    let r = st.rare.as_mut().ok_or(Error::Errno(libc::ENOENT))?;
    if !r.resolving_ai || r.resolved_ai.is_none() {
        return Err(Error::Errno(libc::ENOENT));
    }
    r.resolving_ai = false;
    r.resolved_ai.take().ok_or(Error::Errno(libc::ENOENT))
}

pub fn write_cm_event(idp: &Id, event: u32, status: i32, arg: u64) -> Result<()> {
    if event != E::RDMA_CM_EVENT_USER as u32 {
        return Err(Error::INVAL);
    }
    ucma::write_cm_event(idp.fd(), idp.handle(), event, status, arg)
}

/// The most service records one query accepts.
const MAX_SERVICE_RECS: usize = 4096;

/// QUERY(IB_SERVICE) → one AF_IB result per service record.
fn query_ib_service(idp: &Id) -> Result<Vec<AddrInfo>> {
    let mut cap = 6usize;
    loop {
        let size = 8 + cap * std::mem::size_of::<cmd::ServiceRec>();
        let mut buf = Vec::new();
        buf.try_reserve_exact(size.div_ceil(8)).map_err(|_| Error::NOMEM)?;
        buf.resize(size.div_ceil(8), 0u64);
        ucma::query_ib_service(idp.fd(), idp.handle(), &mut buf)?;
        let n = buf[0] as u32 as usize;
        // More records than room: ask again with enough (bounded) room.
        if n > cap && cap < MAX_SERVICE_RECS {
            cap = n.min(MAX_SERVICE_RECS);
            continue;
        }
        let n = n.min(cap);
        if n == 0 {
            return Err(Error::Errno(libc::ENOENT));
        }
        let base = buf.as_ptr() as *const u8;
        let mut out = Vec::new();
        out.try_reserve_exact(n).map_err(|_| Error::NOMEM)?;
        out.extend((0..n).map(|i| {
            // SAFETY: n records of 176 bytes follow the 8-byte header.
            let rec: cmd::ServiceRec =
                unsafe { std::ptr::read_unaligned(base.add(8 + i * 176) as *const cmd::ServiceRec) };
            let sib = sockaddr_ib {
                sib_family: AF_IB as u16,
                sib_pkey: rec.pkey,
                sib_addr: ib_addr::from_bytes(rec.gid),
                sib_sid: rec.id,
                sib_sid_mask: u64::MAX,
                ..Default::default()
            };
            AddrInfo {
                flags: RAI_SA,
                family: AF_IB,
                port_space: RDMA_PS_IB,
                dst: Some(RawAddr::from_ib(&sib)),
                ..Default::default()
            }
        }));
        return Ok(out);
    }
}

/// ADDRINFO_RESOLVED: DNS results are already there; SA results are
/// fetched from the kernel now. Failure: ADDRINFO_ERROR with `-errno`.
pub fn process_resolved(ev: &mut Event, idp: &Id) {
    if idp.lock().rare.as_ref().is_some_and(|r| r.resolved_ai.is_some()) {
        return;
    }
    match query_ib_service(idp).and_then(|l| getaddrinfo::to_c_list(&l)).and_then(|list| {
        idp.lock().rare()?.resolved_ai = Some(list);
        Ok(())
    }) {
        Ok(()) => {}
        Err(e) => {
            ev.public.event = E::RDMA_CM_EVENT_ADDRINFO_ERROR as u32;
            ev.public.status = e.neg_status();
            clear_resolving(idp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_ids_parse_like_strtoull_base_0() {
        assert_eq!(parse_service_id(b"7471"), Some(7471));
        assert_eq!(parse_service_id(b"0x13f1d2f"), Some(0x13f1d2f));
        assert_eq!(parse_service_id(b"010"), Some(8));
        assert_eq!(parse_service_id(b"0"), Some(0));
        assert_eq!(parse_service_id(b"name"), None);
        assert_eq!(parse_service_id(b"12ab"), None);
        assert_eq!(parse_service_id(b""), None);
    }

    #[test]
    fn eai_codes_become_positive_errnos() {
        for code in [-1, -2, -3, -4, -5, -6, -7, -8, -9, -10] {
            assert!(eai_to_errno(code) > 0, "{code}");
        }
    }
}
