//! `rdma_getaddrinfo` / `rdma_freeaddrinfo` (rdma_getaddrinfo(3)).
//!
//! The query is answered in a safe model ([`AddrInfo`]) and only at the end
//! converted into the C list, every member a separate `malloc` block, so
//! that `rdma_freeaddrinfo` (and nothing else) can free it.

use super::model::{gai_request, in6_to_ib, AddrInfo, Hints, EAI_ADDRFAMILY};
use super::numeric;
use super::wildcard;
use super::{acm, sa};
use crate::abi::*;
use crate::cmem::{self, MStr};
use crate::error::{Error, Result};
use crate::nulstr::NulStr;
use crate::sockaddr::RawAddr;
use libc::{c_int, c_void, IPPROTO_TCP, IPPROTO_UDP, SOCK_DGRAM, SOCK_STREAM};
use std::ffi::CStr;

/// The first result glibc gave (or the fast path computed).
struct FirstResult {
    passive: bool,
    socktype: c_int,
    protocol: c_int,
    addr: RawAddr,
    canonname: Option<MStr>,
}

/// Ask glibc for `node`/`service` and keep its first answer.
fn glibc_lookup(node: Option<&CStr>, service: Option<&CStr>, h: &Hints) -> Result<FirstResult> {
    // SAFETY: zeroed addrinfo is a valid "no hints" value; the pointers we
    // pass are valid C strings or NULL; glibc's result is freed below.
    unsafe {
        let mut req: libc::addrinfo = std::mem::zeroed();
        let hints_ptr = if h.given() {
            let g = gai_request(h);
            let mut flags = 0;
            if h.flags() & RAI_PASSIVE != 0 {
                flags |= libc::AI_PASSIVE;
            }
            if h.flags() & RAI_NUMERICHOST != 0 {
                flags |= libc::AI_NUMERICHOST;
            }
            req.ai_flags = flags;
            req.ai_family = g.family;
            req.ai_socktype = g.socktype;
            req.ai_protocol = g.protocol;
            &req as *const libc::addrinfo
        } else {
            std::ptr::null()
        };
        let mut out: *mut libc::addrinfo = std::ptr::null_mut();
        let rc = libc::getaddrinfo(
            node.map_or(std::ptr::null(), |s| s.as_ptr()),
            service.map_or(std::ptr::null(), |s| s.as_ptr()),
            hints_ptr,
            &mut out,
        );
        if rc != 0 {
            return Err(Error::Eai(rc));
        }
        let first = &*out;
        let r = RawAddr::from_ptr(first.ai_addr, first.ai_addrlen).and_then(|addr| {
            Ok(FirstResult {
                passive: first.ai_flags & libc::AI_PASSIVE != 0,
                socktype: first.ai_socktype,
                protocol: first.ai_protocol,
                addr,
                canonname: match first.ai_canonname.is_null() {
                    true => None,
                    false => Some(MStr::new(CStr::from_ptr(first.ai_canonname))?),
                },
            })
        });
        libc::freeaddrinfo(out);
        r
    }
}

/// Convert glibc's first answer into an rdma result.
fn to_rai(h: &Hints, r: FirstResult) -> Result<AddrInfo> {
    let mut ai = AddrInfo {
        qp_type: if h.qp_type() != 0 {
            h.qp_type()
        } else {
            match r.socktype {
                SOCK_STREAM => IBV_QPT_RC,
                SOCK_DGRAM => IBV_QPT_UD,
                _ => 0,
            }
        },
        port_space: if h.port_space() != 0 {
            h.port_space()
        } else {
            match r.protocol {
                IPPROTO_TCP => RDMA_PS_TCP,
                IPPROTO_UDP => RDMA_PS_UDP,
                _ => 0,
            }
        },
        ..Default::default()
    };
    let want_ib = h.flags() & RAI_FAMILY != 0 && h.family() == AF_IB && h.flags() & RAI_NUMERICHOST != 0;
    let addr = if want_ib {
        // Upstream reads any answer as sockaddr_in6; an IPv4 literal then
        // yields a garbage GID (README, known differences). A GID is
        // written as an IPv6 literal, so anything else is not an AF_IB
        // address.
        let sin6 = r.addr.as_in6().ok_or(Error::Eai(EAI_ADDRFAMILY))?;
        ai.family = AF_IB;
        RawAddr::from_ib(&in6_to_ib(ai.port_space, &sin6))
    } else {
        ai.family = r.addr.family();
        r.addr
    };
    if r.passive {
        ai.flags = RAI_PASSIVE;
        ai.src_canonname = r.canonname;
        ai.src = Some(addr);
    } else {
        ai.dst_canonname = r.canonname;
        ai.dst = Some(addr);
    }
    Ok(ai)
}

/// What glibc would answer first for a numeric literal, computed without
/// glibc (see [`numeric`]); only with hints, as explained there.
fn numeric_answer(node: Option<NulStr>, service: Option<NulStr>, h: &Hints) -> Option<numeric::Answer> {
    if !h.given() {
        return None;
    }
    match node {
        Some(n) => numeric::resolve(n, service, &gai_request(h)),
        // The wildcard of a passive query (not for an AF_IB conversion,
        // whose family glibc is not asked for).
        None if h.flags() & RAI_PASSIVE != 0 && h.family() != AF_IB => wildcard::resolve(service, &gai_request(h)),
        None => None,
    }
}

/// The node/service part of the query: the numeric answer, or glibc.
fn lookup(node: Option<&CStr>, service: Option<&CStr>, h: &Hints, num: Option<numeric::Answer>) -> Result<AddrInfo> {
    let first = match num {
        Some(a) => FirstResult {
            passive: h.flags() & RAI_PASSIVE != 0,
            socktype: a.socktype,
            protocol: a.protocol,
            addr: a.addr.raw(),
            canonname: None,
        },
        None => glibc_lookup(node, service, h)?,
    };
    to_rai(h, first)
}

/// The whole query, as a list of results (first element first); `num` is
/// the numeric answer if the node is a literal glibc would answer alike.
fn resolve(
    node: Option<&CStr>,
    service: Option<&CStr>,
    h: &Hints,
    num: Option<numeric::Answer>,
) -> Result<Vec<AddrInfo>> {
    crate::ucma::init()?;
    if h.flags() & RAI_SA != 0 {
        if node.is_some() || h.flags() & RAI_DNS != 0 {
            return Err(Error::Errno(libc::EOPNOTSUPP));
        }
        return sa::getaddrinfo_sa(service);
    }

    let mut ai = if node.is_some() || service.is_some() {
        lookup(node, service, h, num)?
    } else {
        AddrInfo {
            flags: h.flags(),
            family: h.family(),
            qp_type: h.qp_type(),
            port_space: h.port_space(),
            dst: h.dst()?,
            ..Default::default()
        }
    };
    if ai.src.is_none() {
        ai.src = h.src()?;
    }
    if ai.flags & RAI_PASSIVE == 0 {
        return acm::resolve(ai, h);
    }
    cmem::vec1(ai)
}

/// `rdma_getaddrinfo`, producing the C list (hints not given: all zero).
/// The strings are measured only if the numeric fast path does not answer.
pub fn rdma_getaddrinfo(node: Option<NulStr>, service: Option<NulStr>, h: &Hints) -> Result<AddrInfoList> {
    if node.is_none() && service.is_none() && !h.given() {
        return Err(Error::INVAL);
    }
    let num = numeric_answer(node, service, h);
    if let Some(a) = &num {
        if let Some(list) = fast_path(h, a)? {
            return Ok(list);
        }
    }
    let (node, service) = (node.map(NulStr::to_cstr), service.map(NulStr::to_cstr));
    let list = resolve(node, service, h, num)?;
    to_c_list(&list)
}

/// The commonest query answered straight into one C node: hints given, a
/// numeric host and port (see [`numeric`]), no AF_IB conversion, and
/// nothing for ibacm to add (passive, or no ibacm, and no source hint).
/// The result is the one the general path would build.
fn fast_path(h: &Hints, a: &numeric::Answer) -> Result<Option<AddrInfoList>> {
    let flags = h.flags();
    let passive = flags & RAI_PASSIVE != 0;
    if flags & RAI_SA != 0
        || (flags & RAI_FAMILY != 0 && h.family() == AF_IB && flags & RAI_NUMERICHOST != 0)
        || (!passive && (h.has_src() || acm::connected()))
    {
        return Ok(None);
    }
    crate::ucma::init()?;
    let list = AddrInfoList(cmem::calloc1::<rdma_addrinfo>()?.as_ptr());
    let (addr, len) = match &a.addr {
        numeric::NumAddr::V4(s) => (cmem::copy_out(std::slice::from_ref(s))?.cast(), std::mem::size_of_val(s)),
        numeric::NumAddr::V6(s) => (cmem::copy_out(std::slice::from_ref(s))?.cast(), std::mem::size_of_val(s)),
    };
    let addr: *mut libc::sockaddr = addr.as_ptr();
    // SAFETY: a fresh zeroed node owned by `list`.
    let r = unsafe { &mut *list.0 };
    r.ai_family = a.addr.family();
    r.ai_qp_type = if h.qp_type() != 0 {
        h.qp_type()
    } else if a.socktype == SOCK_STREAM {
        IBV_QPT_RC
    } else {
        IBV_QPT_UD
    };
    r.ai_port_space = if h.port_space() != 0 {
        h.port_space()
    } else if a.protocol == IPPROTO_TCP {
        RDMA_PS_TCP
    } else {
        RDMA_PS_UDP
    };
    if passive {
        r.ai_flags = RAI_PASSIVE;
        r.ai_src_addr = addr;
        r.ai_src_len = len as u32;
    } else {
        r.ai_dst_addr = addr;
        r.ai_dst_len = len as u32;
    }
    Ok(Some(list))
}

/// Fill one zeroed C node from a result. On error the node holds whatever
/// was already allocated, so the caller frees it with [`free_list`].
fn fill(n: &mut rdma_addrinfo, ai: &AddrInfo) -> Result<()> {
    n.ai_flags = ai.flags;
    n.ai_family = ai.family;
    n.ai_qp_type = ai.qp_type;
    n.ai_port_space = ai.port_space;
    if let Some(a) = &ai.src {
        n.ai_src_addr = a.to_malloc()?;
        n.ai_src_len = a.len() as u32;
    }
    if let Some(a) = &ai.dst {
        n.ai_dst_addr = a.to_malloc()?;
        n.ai_dst_len = a.len() as u32;
    }
    if let Some(s) = &ai.src_canonname {
        n.ai_src_canonname = cmem::strdup(s.as_cstr())?.as_ptr();
    }
    if let Some(s) = &ai.dst_canonname {
        n.ai_dst_canonname = cmem::strdup(s.as_cstr())?.as_ptr();
    }
    if !ai.route.is_empty() {
        n.ai_route = cmem::copy_out(&ai.route)?.as_ptr() as *mut c_void;
        n.ai_route_len = std::mem::size_of_val(&ai.route[..]);
    }
    if let Some(c) = &ai.connect {
        n.ai_connect = cmem::copy_out(std::slice::from_ref(c))?.as_ptr() as *mut c_void;
        n.ai_connect_len = std::mem::size_of::<ib_connect_hdr>();
    }
    Ok(())
}

/// Build the C list; on failure nothing is leaked.
pub fn to_c_list(list: &[AddrInfo]) -> Result<AddrInfoList> {
    let mut head = AddrInfoList(std::ptr::null_mut());
    for ai in list.iter().rev() {
        let node = cmem::calloc1::<rdma_addrinfo>()?.as_ptr();
        // SAFETY: node is a fresh zeroed allocation we own.
        let n = unsafe { &mut *node };
        n.ai_next = head.0;
        head.0 = node;
        // On failure `head`, this node included, is freed on return.
        fill(n, ai)?;
    }
    Ok(head)
}

/// A list this library made (`rdma_getaddrinfo`, `rdma_query_addrinfo`),
/// owned until it is handed to the caller or freed.
pub struct AddrInfoList(*mut rdma_addrinfo);

// SAFETY: the list is plain malloc'd memory nobody else references.
unsafe impl Send for AddrInfoList {}

impl AddrInfoList {
    /// Give the list to C (which frees it with `rdma_freeaddrinfo`).
    pub fn into_raw(self) -> *mut rdma_addrinfo {
        let p = self.0;
        std::mem::forget(self);
        p
    }
}

impl Drop for AddrInfoList {
    fn drop(&mut self) {
        // SAFETY: a list built by to_c_list, owned by this value.
        unsafe { free_list(self.0) }
    }
}

/// `rdma_freeaddrinfo`: free every node and every member; NULL is a no-op.
///
/// # Safety
/// `p` is NULL or a list made by this library and not freed yet (the man
/// page's rule for `rdma_freeaddrinfo`).
pub unsafe fn free_list(mut p: *mut rdma_addrinfo) {
    while !p.is_null() {
        // SAFETY: p is a node built by to_c_list; each member is NULL or
        // its own malloc block.
        unsafe {
            let n = &*p;
            let next = n.ai_next;
            cmem::free(n.ai_connect);
            cmem::free(n.ai_route);
            cmem::free(n.ai_src_canonname);
            cmem::free(n.ai_dst_canonname);
            cmem::free(n.ai_src_addr);
            cmem::free(n.ai_dst_addr);
            cmem::free(p);
            p = next;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::model::set_sid;
    use super::*;

    #[test]
    fn hint_mapping() {
        let cases = [
            (0, 0, 0, 0),
            (IBV_QPT_RC, RDMA_PS_TCP, SOCK_STREAM, IPPROTO_TCP),
            (IBV_QPT_UD, RDMA_PS_UDP, SOCK_DGRAM, IPPROTO_UDP),
            (IBV_QPT_XRC_RECV, 0, SOCK_STREAM, 0),
            (0, RDMA_PS_IPOIB, 0, IPPROTO_UDP),
            (0, RDMA_PS_IB, 0, 0),
            (IBV_QPT_UD, RDMA_PS_IB, SOCK_DGRAM, IPPROTO_UDP),
            (IBV_QPT_UC, RDMA_PS_IB, SOCK_STREAM, IPPROTO_TCP),
            (8, 0x999, 0, 0),
        ];
        for (qp, ps, st, pr) in cases {
            let r = gai_request(&Hints::plain(0, AF_IB, qp, ps));
            assert_eq!((r.family, r.socktype, r.protocol), (0, st, pr), "qp {qp} ps {ps:#x}");
        }
    }

    #[test]
    fn sid() {
        let mut sib = sockaddr_ib::default();
        set_sid(RDMA_PS_IB, 7471, &mut sib);
        assert_eq!(u64::from_be(sib.sib_sid), 0x13F1D2F);
        assert_eq!(sib.sib_sid_mask, u64::MAX);
        set_sid(0, 0, &mut sib);
        assert_eq!((sib.sib_sid, sib.sib_sid_mask), (0, 0));
        set_sid(RDMA_PS_TCP, 0, &mut sib);
        assert_eq!(u64::from_be(sib.sib_sid_mask), RDMA_IB_IP_PS_MASK);
        // A negative port space is the unsigned enum value in C.
        set_sid(-1, 7471, &mut sib);
        assert_eq!(u64::from_be(sib.sib_sid), 0xffff_ffff_1d2f);
    }

    #[test]
    fn c_list_roundtrip() {
        // SAFETY: all-zero is a valid sockaddr_in.
        let a = RawAddr::from_in(&unsafe { std::mem::zeroed() });
        let ai = AddrInfo {
            flags: 1,
            family: 2,
            src: Some(a),
            dst: Some(a),
            src_canonname: Some(MStr::new(cstr!("x")).unwrap()),
            route: vec![ibv_path_data::default(); 2],
            connect: Some(ib_connect_hdr::default()),
            ..Default::default()
        };
        let list = to_c_list(&[ai.try_clone().unwrap(), AddrInfo::default()]).unwrap();
        let p = list.into_raw();
        // SAFETY: a two-node list just built.
        unsafe {
            assert_eq!((*p).ai_flags, 1);
            assert_eq!((*p).ai_src_len, 16);
            assert_eq!((*p).ai_route_len, 144);
            assert_eq!((*p).ai_connect_len, 36);
            assert!(!(*p).ai_next.is_null());
            assert!((*(*p).ai_next).ai_next.is_null());
            assert!((*(*p).ai_next).ai_src_addr.is_null());
            free_list(p);
            free_list(std::ptr::null_mut());
        }
    }
}
