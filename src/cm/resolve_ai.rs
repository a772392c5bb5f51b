//! `rdma_resolve_addrinfo`, `rdma_query_addrinfo`, `rdma_write_cm_event`
//! (RDMACM_1.4, reference §4.9). Both paths need Linux ≥ 6.17: the DNS path
//! delivers its result through WRITE_CM_EVENT, the SA path through
//! RESOLVE_IB_SERVICE.
//!
//! Differences from upstream v65: every failure sets a positive errno
//! (upstream can leave -1 or a negative EAI code in errno), and the id's
//! mutex is never held across a blocking wait.

use super::event::EventPriv;
use super::id::{self, IdPriv};
use crate::abi::*;
use crate::addr::getaddrinfo::{self, AddrInfo};
use crate::addr::RawAddr;
use crate::error::{Error, Result};
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
        libc::EAI_FAMILY | getaddrinfo::EAI_ADDRFAMILY => libc::EAFNOSUPPORT,
        libc::EAI_SOCKTYPE => libc::ESOCKTNOSUPPORT,
        libc::EAI_SERVICE => libc::EPROTONOSUPPORT,
        libc::EAI_SYSTEM => match crate::error::errno() {
            0 => libc::EIO,
            e => e,
        },
        _ => libc::EINVAL,
    }
}

fn positive(e: Error) -> Error {
    match e {
        Error::Eai(code) => Error::Errno(eai_to_errno(code)),
        e => e,
    }
}

pub fn clear_resolving(idp: &IdPriv) {
    idp.lock().resolving_ai = false;
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

fn resolve_sa(idp: &IdPriv, service: Option<&CStr>) -> Result<()> {
    let service = service.ok_or(Error::Errno(libc::EINVAL))?;
    let b = service.to_bytes();
    ucma::resolve_ib_service(idp.fd(), idp.handle(), parse_service_id(b), b)?;
    id::complete(idp, &[E::RDMA_CM_EVENT_ADDRINFO_RESOLVED as u32, E::RDMA_CM_EVENT_ADDRINFO_ERROR as u32])
}

fn resolve_dns(idp: &IdPriv, node: Option<&CStr>, service: Option<&CStr>, hints: Option<&rdma_addrinfo>) -> Result<()> {
    let list = getaddrinfo::rdma_getaddrinfo(node, service, hints).map_err(positive)?;
    // The result exists before the event is read, as upstream.
    idp.lock().resolved_ai = list;
    let arg = E::RDMA_CM_EVENT_ADDRINFO_RESOLVED as u64;
    if let Err(e) = ucma::write_cm_event(idp.fd(), idp.handle(), E::RDMA_CM_EVENT_INTERNAL as u32, 0, arg) {
        let ai = std::mem::replace(&mut idp.lock().resolved_ai, std::ptr::null_mut());
        getaddrinfo::free_list(ai);
        return Err(e);
    }
    id::complete(idp, &[E::RDMA_CM_EVENT_ADDRINFO_RESOLVED as u32, E::RDMA_CM_EVENT_ADDRINFO_ERROR as u32])
}

pub fn resolve_addrinfo(
    idp: &IdPriv,
    node: Option<&CStr>,
    service: Option<&CStr>,
    hints: Option<&rdma_addrinfo>,
) -> Result<()> {
    {
        let mut st = idp.lock();
        if st.resolving_ai {
            return Err(Error::Errno(libc::EBUSY));
        }
        st.resolving_ai = true;
    }
    let flags = hints.map_or(0, |h| h.ai_flags);
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

pub fn query_addrinfo(idp: &IdPriv) -> Result<*mut rdma_addrinfo> {
    let mut st = idp.lock();
    if !st.resolving_ai || st.resolved_ai.is_null() {
        return Err(Error::Errno(libc::ENOENT));
    }
    st.resolving_ai = false;
    Ok(std::mem::replace(&mut st.resolved_ai, std::ptr::null_mut()))
}

pub fn write_cm_event(idp: &IdPriv, event: u32, status: i32, arg: u64) -> Result<()> {
    if event != E::RDMA_CM_EVENT_USER as u32 {
        return Err(Error::Errno(libc::EINVAL));
    }
    ucma::write_cm_event(idp.fd(), idp.handle(), event, status, arg)
}

/// The most service records one query accepts.
const MAX_SERVICE_RECS: usize = 4096;

/// QUERY(IB_SERVICE) → one AF_IB result per service record.
fn query_ib_service(idp: &IdPriv) -> Result<Vec<AddrInfo>> {
    let mut cap = 6usize;
    loop {
        let size = 8 + cap * std::mem::size_of::<cmd::ServiceRec>();
        let mut buf = vec![0u64; size.div_ceil(8)];
        let c = cmd::Query { response: buf.as_mut_ptr() as u64, id: idp.handle(), option: cmd::QUERY_IB_SERVICE };
        cmd::write_cmd(idp.fd(), cmd::QUERY, &c, size)?;
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
        return Ok((0..n)
            .map(|i| {
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
            })
            .collect());
    }
}

/// ADDRINFO_RESOLVED: DNS results are already there; SA results are
/// fetched from the kernel now. Failure: ADDRINFO_ERROR with `-errno`.
pub fn process_resolved(ev: &mut EventPriv, idp: &IdPriv) {
    if !idp.lock().resolved_ai.is_null() {
        return;
    }
    match query_ib_service(idp).and_then(|l| getaddrinfo::to_c_list(&l)) {
        Ok(list) => idp.lock().resolved_ai = list,
        Err(e) => {
            ev.event.event = E::RDMA_CM_EVENT_ADDRINFO_ERROR as u32;
            ev.event.status = match e {
                Error::Errno(n) => -n,
                Error::Eai(_) => -libc::EIO,
            };
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
