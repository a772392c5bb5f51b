//! `rdma_getaddrinfo` / `rdma_freeaddrinfo` (reference §4.3–4.5).
//!
//! The query is answered in a safe model ([`AddrInfo`]) and only at the end
//! converted into the C list, every member a separate `malloc` block, so
//! that `rdma_freeaddrinfo` (and nothing else) can free it.

use super::numeric::{self, GaiRequest};
use super::{acm, RawAddr};
use crate::abi::*;
use crate::error::{Error, Result};
use libc::{c_char, c_int, c_void, IPPROTO_TCP, IPPROTO_UDP, SOCK_DGRAM, SOCK_STREAM};
use std::ffi::{CStr, CString};

/// One result, before it becomes a C `struct rdma_addrinfo`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AddrInfo {
    pub flags: c_int,
    pub family: c_int,
    pub qp_type: c_int,
    pub port_space: c_int,
    pub src: Option<RawAddr>,
    pub dst: Option<RawAddr>,
    pub src_canonname: Option<CString>,
    pub dst_canonname: Option<CString>,
    /// `struct ibv_path_data` entries from ibacm.
    pub route: Vec<ibv_path_data>,
    /// The 36-byte IB connect header of an ibacm AF_IB entry.
    pub connect: Option<ib_connect_hdr>,
}

/// The caller's hints, read lazily from C memory exactly where upstream
/// reads them (so a field that upstream ignores is never dereferenced).
pub struct Hints<'a> {
    raw: Option<&'a rdma_addrinfo>,
}

impl<'a> Hints<'a> {
    pub fn new(raw: Option<&'a rdma_addrinfo>) -> Self {
        Hints { raw }
    }
    pub fn given(&self) -> bool {
        self.raw.is_some()
    }
    pub fn flags(&self) -> c_int {
        self.raw.map_or(0, |h| h.ai_flags)
    }
    pub fn family(&self) -> c_int {
        self.raw.map_or(0, |h| h.ai_family)
    }
    pub fn qp_type(&self) -> c_int {
        self.raw.map_or(0, |h| h.ai_qp_type)
    }
    pub fn port_space(&self) -> c_int {
        self.raw.map_or(0, |h| h.ai_port_space)
    }
    /// Whether a source address hint is given.
    pub fn has_src(&self) -> bool {
        self.raw.is_some_and(|h| h.ai_src_len != 0)
    }
    /// The hint source address, if one is given (`ai_src_len != 0`).
    pub fn src(&self) -> Result<Option<RawAddr>> {
        match self.raw {
            // SAFETY: the caller vouches for ai_src_addr/ai_src_len; lengths
            // beyond sockaddr_storage are refused before any read.
            Some(h) if h.ai_src_len != 0 => unsafe { RawAddr::from_ptr(h.ai_src_addr, h.ai_src_len).map(Some) },
            _ => Ok(None),
        }
    }
    /// The hint destination address, if one is given (`ai_dst_len != 0`).
    pub fn dst(&self) -> Result<Option<RawAddr>> {
        match self.raw {
            // SAFETY: as for src().
            Some(h) if h.ai_dst_len != 0 => unsafe { RawAddr::from_ptr(h.ai_dst_addr, h.ai_dst_len).map(Some) },
            _ => Ok(None),
        }
    }
    pub fn route_len(&self) -> usize {
        self.raw.map_or(0, |h| h.ai_route_len)
    }
    /// The path record given as a route hint (one `ibv_path_record` or one
    /// `ibv_path_data`), as ibacm's query uses it.
    pub fn route_path(&self) -> Option<ibv_path_record> {
        let h = self.raw?;
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

/// The glibc request upstream derives from rdma hints (reference §4.3.2).
pub fn gai_request(h: &Hints) -> GaiRequest {
    let family = if h.family() == AF_IB { 0 } else { h.family() };
    let socktype = match h.qp_type() {
        IBV_QPT_RC | IBV_QPT_UC | IBV_QPT_XRC_SEND | IBV_QPT_XRC_RECV => SOCK_STREAM,
        IBV_QPT_UD => SOCK_DGRAM,
        _ => 0,
    };
    let protocol = match h.port_space() {
        RDMA_PS_TCP => IPPROTO_TCP,
        RDMA_PS_IPOIB | RDMA_PS_UDP => IPPROTO_UDP,
        RDMA_PS_IB if socktype == SOCK_STREAM => IPPROTO_TCP,
        RDMA_PS_IB if socktype == SOCK_DGRAM => IPPROTO_UDP,
        _ => 0,
    };
    GaiRequest { family, socktype, protocol }
}

/// glibc's `EAI_ADDRFAMILY` (a GNU extension the libc crate lacks).
pub(crate) const EAI_ADDRFAMILY: c_int = -9;

/// The first result glibc gave (or the fast path computed).
struct FirstResult {
    passive: bool,
    socktype: c_int,
    protocol: c_int,
    addr: RawAddr,
    canonname: Option<CString>,
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
        let r = RawAddr::from_ptr(first.ai_addr, first.ai_addrlen).map(|addr| FirstResult {
            passive: first.ai_flags & libc::AI_PASSIVE != 0,
            socktype: first.ai_socktype,
            protocol: first.ai_protocol,
            addr,
            canonname: (!first.ai_canonname.is_null()).then(|| CStr::from_ptr(first.ai_canonname).to_owned()),
        });
        libc::freeaddrinfo(out);
        r
    }
}

/// An IPv6 address re-expressed as AF_IB (reference §4.3.3): the GID is the
/// 16 address bytes, the service id comes from port space and port.
pub fn in6_to_ib(ps: c_int, sin6: &libc::sockaddr_in6) -> sockaddr_ib {
    let port = u16::from_be(sin6.sin6_port);
    let mut sib = sockaddr_ib {
        sib_family: AF_IB as u16,
        sib_pkey: 0xFFFFu16.to_be(),
        sib_flowinfo: sin6.sin6_flowinfo,
        sib_addr: ib_addr::from_bytes(sin6.sin6_addr.s6_addr),
        sib_scope_id: sin6.sin6_scope_id as u64,
        ..Default::default()
    };
    set_sid(ps, port, &mut sib);
    sib
}

/// Upstream's `ucma_set_sid`: sid = (ps << 16) + port, the port space taken
/// as the unsigned 32-bit enum it is in C; mask covers the port
/// space when there is one and the port when it is non-zero.
pub fn set_sid(ps: c_int, port: u16, sib: &mut sockaddr_ib) {
    sib.sib_sid = ((ps as u32 as u64) << 16).wrapping_add(port as u64).to_be();
    let mut mask = 0u64;
    if ps != 0 {
        mask = RDMA_IB_IP_PS_MASK;
    }
    if port != 0 {
        mask |= RDMA_IB_IP_PORT_MASK;
    }
    sib.sib_sid_mask = mask.to_be();
}

/// Convert glibc's first answer into an rdma result (reference §4.3.3).
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
        // yields a garbage GID (reference §6 #3). A GID is written as an
        // IPv6 literal, so anything else is not an AF_IB address.
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
fn numeric_answer(node: Option<&CStr>, service: Option<&CStr>, h: &Hints) -> Option<numeric::Answer> {
    let n = node.filter(|_| h.given())?;
    numeric::resolve(n.to_bytes(), service.map(CStr::to_bytes), &gai_request(h))
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
fn resolve(node: Option<&CStr>, service: Option<&CStr>, h: &Hints, num: Option<numeric::Answer>) -> Result<Vec<AddrInfo>> {
    crate::cm::init()?;
    if h.flags() & RAI_SA != 0 {
        if node.is_some() || h.flags() & RAI_DNS != 0 {
            return Err(Error::Errno(libc::EOPNOTSUPP));
        }
        return crate::cm::sa::getaddrinfo_sa(service);
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
        return Ok(acm::resolve(ai, h));
    }
    Ok(vec![ai])
}

/// `rdma_getaddrinfo`, producing the C list.
pub fn rdma_getaddrinfo(
    node: Option<&CStr>,
    service: Option<&CStr>,
    hints: Option<&rdma_addrinfo>,
) -> Result<*mut rdma_addrinfo> {
    if node.is_none() && service.is_none() && hints.is_none() {
        return Err(Error::Errno(libc::EINVAL));
    }
    let h = Hints::new(hints);
    let num = numeric_answer(node, service, &h);
    if let Some(a) = &num {
        if let Some(list) = fast_path(&h, a)? {
            return Ok(list);
        }
    }
    let list = resolve(node, service, &h, num)?;
    to_c_list(&list)
}

/// The commonest query answered straight into one C node: hints given, a
/// numeric host and port (see [`numeric`]), no AF_IB conversion, and
/// nothing for ibacm to add (passive, or no ibacm, and no source hint).
/// The result is the one the general path would build.
fn fast_path(h: &Hints, a: &numeric::Answer) -> Result<Option<*mut rdma_addrinfo>> {
    let flags = h.flags();
    let passive = flags & RAI_PASSIVE != 0;
    if flags & RAI_SA != 0
        || (flags & RAI_FAMILY != 0 && h.family() == AF_IB && flags & RAI_NUMERICHOST != 0)
        || (!passive && (h.has_src() || acm::connected()))
    {
        return Ok(None);
    }
    crate::cm::init()?;
    let node = calloc1::<rdma_addrinfo>()?;
    let (addr, len) = match &a.addr {
        numeric::NumAddr::V4(s) => (copy_out(std::slice::from_ref(s)), std::mem::size_of_val(s)),
        numeric::NumAddr::V6(s) => (copy_out(std::slice::from_ref(s)), std::mem::size_of_val(s)),
    };
    let addr = match addr {
        Ok(p) => p as *mut libc::sockaddr,
        Err(e) => {
            // SAFETY: our fresh node.
            unsafe { libc::free(node as *mut c_void) };
            return Err(e);
        }
    };
    // SAFETY: node is a fresh zeroed allocation.
    let r = unsafe { &mut *node };
    r.ai_family = a.addr.family();
    r.ai_qp_type = if h.qp_type() != 0 { h.qp_type() } else if a.socktype == SOCK_STREAM { IBV_QPT_RC } else { IBV_QPT_UD };
    r.ai_port_space =
        if h.port_space() != 0 { h.port_space() } else if a.protocol == IPPROTO_TCP { RDMA_PS_TCP } else { RDMA_PS_UDP };
    if passive {
        r.ai_flags = RAI_PASSIVE;
        r.ai_src_addr = addr;
        r.ai_src_len = len as u32;
    } else {
        r.ai_dst_addr = addr;
        r.ai_dst_len = len as u32;
    }
    Ok(Some(node))
}

/// `malloc` that reports ENOMEM.
pub fn cmalloc(n: usize) -> Result<*mut c_void> {
    // SAFETY: plain allocation.
    let p = unsafe { libc::malloc(n) };
    if p.is_null() {
        Err(Error::Errno(libc::ENOMEM))
    } else {
        Ok(p)
    }
}

fn calloc1<T>() -> Result<*mut T> {
    // SAFETY: plain zeroed allocation.
    let p = unsafe { libc::calloc(1, std::mem::size_of::<T>()) };
    if p.is_null() {
        Err(Error::Errno(libc::ENOMEM))
    } else {
        Ok(p as *mut T)
    }
}

fn cstrdup(s: &CStr) -> Result<*mut c_char> {
    // SAFETY: s is a valid C string.
    let p = unsafe { libc::strdup(s.as_ptr()) };
    if p.is_null() {
        Err(Error::Errno(libc::ENOMEM))
    } else {
        Ok(p)
    }
}

fn copy_out<T: Copy>(items: &[T]) -> Result<*mut c_void> {
    let n = std::mem::size_of_val(items);
    let p = cmalloc(n.max(1))?;
    // SAFETY: p has room for n bytes.
    unsafe { std::ptr::copy_nonoverlapping(items.as_ptr() as *const u8, p as *mut u8, n) };
    Ok(p)
}

/// Fill one zeroed C node from a result. On error the node holds whatever
/// was already allocated, so the caller frees it with [`free_list`].
unsafe fn fill(n: &mut rdma_addrinfo, ai: &AddrInfo) -> Result<()> {
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
        n.ai_src_canonname = cstrdup(s)?;
    }
    if let Some(s) = &ai.dst_canonname {
        n.ai_dst_canonname = cstrdup(s)?;
    }
    if !ai.route.is_empty() {
        n.ai_route = copy_out(&ai.route)?;
        n.ai_route_len = std::mem::size_of_val(&ai.route[..]);
    }
    if let Some(c) = &ai.connect {
        n.ai_connect = copy_out(std::slice::from_ref(c))?;
        n.ai_connect_len = std::mem::size_of::<ib_connect_hdr>();
    }
    Ok(())
}

/// Build the C list; on failure nothing is leaked.
pub fn to_c_list(list: &[AddrInfo]) -> Result<*mut rdma_addrinfo> {
    let mut head: *mut rdma_addrinfo = std::ptr::null_mut();
    for ai in list.iter().rev() {
        let node = match calloc1::<rdma_addrinfo>() {
            Ok(p) => p,
            Err(e) => {
                free_list(head);
                return Err(e);
            }
        };
        // SAFETY: node is a fresh zeroed allocation we own.
        unsafe {
            (*node).ai_next = head;
            head = node;
            if let Err(e) = fill(&mut *node, ai) {
                free_list(head);
                return Err(e);
            }
        }
    }
    Ok(head)
}

/// `rdma_freeaddrinfo`: free every node and every member; NULL is a no-op.
pub fn free_list(mut p: *mut rdma_addrinfo) {
    while !p.is_null() {
        // SAFETY: p is a node built by to_c_list (or by a caller following
        // the man page); each member is NULL or its own malloc block.
        unsafe {
            let n = &*p;
            let next = n.ai_next;
            libc::free(n.ai_connect);
            libc::free(n.ai_route);
            libc::free(n.ai_src_canonname as *mut c_void);
            libc::free(n.ai_dst_canonname as *mut c_void);
            libc::free(n.ai_src_addr as *mut c_void);
            libc::free(n.ai_dst_addr as *mut c_void);
            libc::free(p as *mut c_void);
            p = next;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hints(flags: c_int, family: c_int, qp: c_int, ps: c_int) -> rdma_addrinfo {
        // SAFETY: all-zero is a valid rdma_addrinfo.
        let mut h: rdma_addrinfo = unsafe { std::mem::zeroed() };
        h.ai_flags = flags;
        h.ai_family = family;
        h.ai_qp_type = qp;
        h.ai_port_space = ps;
        h
    }

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
            let h = hints(0, AF_IB, qp, ps);
            let r = gai_request(&Hints::new(Some(&h)));
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
        let a = RawAddr::from_in(&unsafe { std::mem::zeroed() });
        let ai = AddrInfo {
            flags: 1,
            family: 2,
            src: Some(a),
            dst: Some(a),
            src_canonname: Some(CString::new("x").unwrap()),
            route: vec![ibv_path_data::default(); 2],
            connect: Some(ib_connect_hdr::default()),
            ..Default::default()
        };
        let p = to_c_list(&[ai.clone(), AddrInfo::default()]).unwrap();
        unsafe {
            assert_eq!((*p).ai_flags, 1);
            assert_eq!((*p).ai_src_len, 16);
            assert_eq!((*p).ai_route_len, 144);
            assert_eq!((*p).ai_connect_len, 36);
            assert!(!(*p).ai_next.is_null());
            assert!((*(*p).ai_next).ai_next.is_null());
            assert!((*(*p).ai_next).ai_src_addr.is_null());
        }
        free_list(p);
        free_list(std::ptr::null_mut());
    }
}
