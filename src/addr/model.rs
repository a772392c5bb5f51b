//! The safe model of an address query: the caller's hints and the
//! results, before the results become a C `struct rdma_addrinfo` list
//! (rdma_getaddrinfo(3)).

use super::numeric::GaiRequest;
use crate::abi::*;
use crate::cmem::{self, MStr};
use crate::error::Result;
use crate::sockaddr::RawAddr;
use libc::{c_int, IPPROTO_TCP, IPPROTO_UDP, SOCK_DGRAM, SOCK_STREAM};

/// One result, before it becomes a C `struct rdma_addrinfo`.
#[derive(Debug, Default, PartialEq)]
pub struct AddrInfo {
    pub flags: c_int,
    pub family: c_int,
    pub qp_type: c_int,
    pub port_space: c_int,
    pub src: Option<RawAddr>,
    pub dst: Option<RawAddr>,
    pub src_canonname: Option<MStr>,
    pub dst_canonname: Option<MStr>,
    /// `struct ibv_path_data` entries from ibacm.
    pub route: Vec<ibv_path_data>,
    /// The 36-byte IB connect header of an ibacm AF_IB entry.
    pub connect: Option<ib_connect_hdr>,
}

impl AddrInfo {
    /// A copy, or ENOMEM.
    pub fn try_clone(&self) -> Result<AddrInfo> {
        let name = |n: &Option<MStr>| n.as_ref().map(MStr::try_clone).transpose();
        Ok(AddrInfo {
            src_canonname: name(&self.src_canonname)?,
            dst_canonname: name(&self.dst_canonname)?,
            route: cmem::to_vec(&self.route)?,
            flags: self.flags,
            family: self.family,
            qp_type: self.qp_type,
            port_space: self.port_space,
            src: self.src,
            dst: self.dst,
            connect: self.connect,
        })
    }
}

/// The parts of a caller's hints that live in the caller's memory: read
/// only when a query needs them, exactly where upstream reads them (so a
/// field upstream ignores is never dereferenced). The C boundary implements
/// it over the caller's `struct rdma_addrinfo`.
pub trait HintMemory {
    /// The source address (asked only when its length is non-zero).
    fn src(&self) -> Result<Option<RawAddr>>;
    /// The destination address (asked only when its length is non-zero).
    fn dst(&self) -> Result<Option<RawAddr>>;
    /// The route hint as one path record (one `ibv_path_record` or one
    /// `ibv_path_data`), None for other sizes.
    fn route_path(&self) -> Option<ibv_path_record>;
}

/// The caller's hints: the integer fields, and the memory behind the rest.
#[derive(Clone, Copy, Default)]
pub struct Hints<'a> {
    pub given: bool,
    pub flags: c_int,
    pub family: c_int,
    pub qp_type: c_int,
    pub port_space: c_int,
    pub src_len: u32,
    pub dst_len: u32,
    pub route_len: usize,
    pub mem: Option<&'a dyn HintMemory>,
}

impl<'a> Hints<'a> {
    /// Hints with these integer fields and no addresses or route.
    pub fn plain(flags: c_int, family: c_int, qp_type: c_int, port_space: c_int) -> Self {
        Hints { given: true, flags, family, qp_type, port_space, ..Default::default() }
    }
    pub fn given(&self) -> bool {
        self.given
    }
    pub fn flags(&self) -> c_int {
        self.flags
    }
    pub fn family(&self) -> c_int {
        self.family
    }
    pub fn qp_type(&self) -> c_int {
        self.qp_type
    }
    pub fn port_space(&self) -> c_int {
        self.port_space
    }
    /// Whether a source address hint is given.
    pub fn has_src(&self) -> bool {
        self.src_len != 0
    }
    /// The hint source address, if one is given (`ai_src_len != 0`).
    pub fn src(&self) -> Result<Option<RawAddr>> {
        match self.mem {
            Some(m) if self.src_len != 0 => m.src(),
            _ => Ok(None),
        }
    }
    /// The hint destination address, if one is given (`ai_dst_len != 0`).
    pub fn dst(&self) -> Result<Option<RawAddr>> {
        match self.mem {
            Some(m) if self.dst_len != 0 => m.dst(),
            _ => Ok(None),
        }
    }
    pub fn route_len(&self) -> usize {
        self.route_len
    }
    /// The path record given as a route hint, as ibacm's query uses it.
    pub fn route_path(&self) -> Option<ibv_path_record> {
        self.mem?.route_path()
    }
}

/// The glibc request upstream derives from rdma hints.
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

/// An IPv6 address re-expressed as AF_IB: the GID is the
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
