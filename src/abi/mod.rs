//! Public C types of librdmacm, `#[repr(C)]`, with upstream's names.
//!
//! This module is the single source of the public layouts: cbindgen turns it
//! into `include/rdma/rdma_cma.h` and `include/infiniband/ib.h`, and the
//! layout test (`abi-tests/layout`) compares every size and offset with the
//! headers of Debian's `librdmacm-dev` at build time (see `build.rs`).
//!
//! Types that belong to libibverbs (`struct ibv_context`, `union ibv_gid`,
//! `struct ibv_ah_attr`, `struct ibv_sa_path_rec`, ...) are mirrored here only
//! as far as our layouts need them; the generated headers take them from the
//! system's `<infiniband/verbs.h>` and `<infiniband/sa.h>`.
#![allow(non_camel_case_types)]

use libc::{c_char, c_int, c_void, size_t, sockaddr, sockaddr_in, sockaddr_in6, sockaddr_storage, socklen_t};

pub mod ib;
pub mod verbs;
pub use ib::*;
pub use verbs::*;

/// `AF_IB` / `PF_IB`: glibc does not define it, `<infiniband/ib.h>` does.
pub const AF_IB: c_int = 27;

// ---------------------------------------------------------------------------
// Enumerations. C code passes these as plain integers, so the exported
// functions take `u32`/`c_int`, never a Rust enum (an out-of-range value
// would be undefined behaviour in Rust).
// ---------------------------------------------------------------------------

/// `enum rdma_cm_event_type`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum rdma_cm_event_type {
    RDMA_CM_EVENT_ADDR_RESOLVED = 0,
    RDMA_CM_EVENT_ADDR_ERROR = 1,
    RDMA_CM_EVENT_ROUTE_RESOLVED = 2,
    RDMA_CM_EVENT_ROUTE_ERROR = 3,
    RDMA_CM_EVENT_CONNECT_REQUEST = 4,
    RDMA_CM_EVENT_CONNECT_RESPONSE = 5,
    RDMA_CM_EVENT_CONNECT_ERROR = 6,
    RDMA_CM_EVENT_UNREACHABLE = 7,
    RDMA_CM_EVENT_REJECTED = 8,
    RDMA_CM_EVENT_ESTABLISHED = 9,
    RDMA_CM_EVENT_DISCONNECTED = 10,
    RDMA_CM_EVENT_DEVICE_REMOVAL = 11,
    RDMA_CM_EVENT_MULTICAST_JOIN = 12,
    RDMA_CM_EVENT_MULTICAST_ERROR = 13,
    RDMA_CM_EVENT_ADDR_CHANGE = 14,
    RDMA_CM_EVENT_TIMEWAIT_EXIT = 15,
    RDMA_CM_EVENT_ADDRINFO_RESOLVED = 16,
    RDMA_CM_EVENT_ADDRINFO_ERROR = 17,
    RDMA_CM_EVENT_USER = 18,
    RDMA_CM_EVENT_INTERNAL = 19,
}

impl rdma_cm_event_type {
    /// Every event type, in value order (the value is the index).
    pub const ALL: [rdma_cm_event_type; 20] = {
        use rdma_cm_event_type::*;
        [
            RDMA_CM_EVENT_ADDR_RESOLVED,
            RDMA_CM_EVENT_ADDR_ERROR,
            RDMA_CM_EVENT_ROUTE_RESOLVED,
            RDMA_CM_EVENT_ROUTE_ERROR,
            RDMA_CM_EVENT_CONNECT_REQUEST,
            RDMA_CM_EVENT_CONNECT_RESPONSE,
            RDMA_CM_EVENT_CONNECT_ERROR,
            RDMA_CM_EVENT_UNREACHABLE,
            RDMA_CM_EVENT_REJECTED,
            RDMA_CM_EVENT_ESTABLISHED,
            RDMA_CM_EVENT_DISCONNECTED,
            RDMA_CM_EVENT_DEVICE_REMOVAL,
            RDMA_CM_EVENT_MULTICAST_JOIN,
            RDMA_CM_EVENT_MULTICAST_ERROR,
            RDMA_CM_EVENT_ADDR_CHANGE,
            RDMA_CM_EVENT_TIMEWAIT_EXIT,
            RDMA_CM_EVENT_ADDRINFO_RESOLVED,
            RDMA_CM_EVENT_ADDRINFO_ERROR,
            RDMA_CM_EVENT_USER,
            RDMA_CM_EVENT_INTERNAL,
        ]
    };

    /// The enumerator's name as `rdma_event_str` prints it; USER and
    /// INTERNAL have none there (upstream prints "UNKNOWN EVENT" for them).
    pub fn name(self) -> Option<&'static std::ffi::CStr> {
        use rdma_cm_event_type::*;
        Some(match self {
            RDMA_CM_EVENT_ADDR_RESOLVED => cstr!("RDMA_CM_EVENT_ADDR_RESOLVED"),
            RDMA_CM_EVENT_ADDR_ERROR => cstr!("RDMA_CM_EVENT_ADDR_ERROR"),
            RDMA_CM_EVENT_ROUTE_RESOLVED => cstr!("RDMA_CM_EVENT_ROUTE_RESOLVED"),
            RDMA_CM_EVENT_ROUTE_ERROR => cstr!("RDMA_CM_EVENT_ROUTE_ERROR"),
            RDMA_CM_EVENT_CONNECT_REQUEST => cstr!("RDMA_CM_EVENT_CONNECT_REQUEST"),
            RDMA_CM_EVENT_CONNECT_RESPONSE => cstr!("RDMA_CM_EVENT_CONNECT_RESPONSE"),
            RDMA_CM_EVENT_CONNECT_ERROR => cstr!("RDMA_CM_EVENT_CONNECT_ERROR"),
            RDMA_CM_EVENT_UNREACHABLE => cstr!("RDMA_CM_EVENT_UNREACHABLE"),
            RDMA_CM_EVENT_REJECTED => cstr!("RDMA_CM_EVENT_REJECTED"),
            RDMA_CM_EVENT_ESTABLISHED => cstr!("RDMA_CM_EVENT_ESTABLISHED"),
            RDMA_CM_EVENT_DISCONNECTED => cstr!("RDMA_CM_EVENT_DISCONNECTED"),
            RDMA_CM_EVENT_DEVICE_REMOVAL => cstr!("RDMA_CM_EVENT_DEVICE_REMOVAL"),
            RDMA_CM_EVENT_MULTICAST_JOIN => cstr!("RDMA_CM_EVENT_MULTICAST_JOIN"),
            RDMA_CM_EVENT_MULTICAST_ERROR => cstr!("RDMA_CM_EVENT_MULTICAST_ERROR"),
            RDMA_CM_EVENT_ADDR_CHANGE => cstr!("RDMA_CM_EVENT_ADDR_CHANGE"),
            RDMA_CM_EVENT_TIMEWAIT_EXIT => cstr!("RDMA_CM_EVENT_TIMEWAIT_EXIT"),
            RDMA_CM_EVENT_ADDRINFO_RESOLVED => cstr!("RDMA_CM_EVENT_ADDRINFO_RESOLVED"),
            RDMA_CM_EVENT_ADDRINFO_ERROR => cstr!("RDMA_CM_EVENT_ADDRINFO_ERROR"),
            RDMA_CM_EVENT_USER | RDMA_CM_EVENT_INTERNAL => return None,
        })
    }
}

impl TryFrom<u32> for rdma_cm_event_type {
    type Error = u32;
    fn try_from(v: u32) -> std::result::Result<Self, u32> {
        Self::ALL.get(v as usize).copied().ok_or(v)
    }
}

/// `enum rdma_port_space`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum rdma_port_space {
    RDMA_PS_IPOIB = 0x0002,
    RDMA_PS_TCP = 0x0106,
    RDMA_PS_UDP = 0x0111,
    RDMA_PS_IB = 0x013F,
}

/// Raw `enum rdma_cm_event_type` as stored in structs (rendered by cbindgen
/// as `enum rdma_cm_event_type`, see cbindgen.toml).
pub type RawEventType = u32;
/// Raw `enum rdma_port_space` as stored in structs.
pub type RawPortSpace = u32;
/// Raw `enum ibv_qp_type` as stored in structs.
pub type RawQpType = u32;
/// Raw `enum ibv_event_type` (argument of `rdma_notify`).
pub type RawIbvEventType = u32;

pub const RDMA_PS_IPOIB: c_int = 0x0002;
pub const RDMA_PS_TCP: c_int = 0x0106;
pub const RDMA_PS_UDP: c_int = 0x0111;
pub const RDMA_PS_IB: c_int = 0x013F;

pub const RDMA_IB_IP_PS_MASK: u64 = 0xFFFF_FFFF_FFFF_0000;
pub const RDMA_IB_IP_PORT_MASK: u64 = 0x0000_0000_0000_FFFF;
pub const RDMA_IB_IP_PS_TCP: u64 = 0x0000_0000_0106_0000;
pub const RDMA_IB_IP_PS_UDP: u64 = 0x0000_0000_0111_0000;
pub const RDMA_IB_PS_IB: u64 = 0x0000_0000_013F_0000;

pub const RDMA_UDP_QKEY: u32 = 0x0123_4567;
pub const RDMA_MAX_RESP_RES: u32 = 0xFF;
pub const RDMA_MAX_INIT_DEPTH: u32 = 0xFF;

pub const RAI_PASSIVE: c_int = 0x0000_0001;
pub const RAI_NUMERICHOST: c_int = 0x0000_0002;
pub const RAI_NOROUTE: c_int = 0x0000_0004;
pub const RAI_FAMILY: c_int = 0x0000_0008;
pub const RAI_SA: c_int = 0x0000_0010;
pub const RAI_DNS: c_int = 0x0000_0020;

pub const RDMA_CM_JOIN_MC_ATTR_ADDRESS: u32 = 1 << 0;
pub const RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS: u32 = 1 << 1;
pub const RDMA_CM_JOIN_MC_ATTR_RESERVED: u32 = 1 << 2;
pub const RDMA_MC_JOIN_FLAG_FULLMEMBER: u32 = 0;
pub const RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER: u32 = 1;
pub const RDMA_MC_JOIN_FLAG_RESERVED: u32 = 2;

pub const RDMA_OPTION_ID: c_int = 0;
pub const RDMA_OPTION_ID_TOS: c_int = 0;
pub const RDMA_OPTION_ID_REUSEADDR: c_int = 1;
pub const RDMA_OPTION_ID_AFONLY: c_int = 2;
pub const RDMA_OPTION_ID_ACK_TIMEOUT: c_int = 3;
pub const RDMA_OPTION_IB: c_int = 1;
pub const RDMA_OPTION_IB_PATH: c_int = 1;

/// `SOL_RDMA` and the rsocket option names (`<rdma/rsocket.h>`, whose
/// text is written in cbindgen-rsocket.toml; checked by the layout test).
pub(crate) const SOL_RDMA: c_int = 0x10000;
pub(crate) const RDMA_SQSIZE: c_int = 0;
pub(crate) const RDMA_RQSIZE: c_int = 1;
pub(crate) const RDMA_INLINE: c_int = 2;
pub(crate) const RDMA_IOMAPSIZE: c_int = 3;
pub(crate) const RDMA_ROUTE: c_int = 4;

/// Private flag (upstream's cma.h): route-only ibacm query made by
/// `rdma_resolve_route`; suppresses the AF_IB entry.
pub const RAI_ROUTEONLY: c_int = 0x0100_0000;

// Verbs values the library needs.
pub const IBV_QPT_RC: c_int = 2;
pub const IBV_QPT_UC: c_int = 3;
pub const IBV_QPT_UD: c_int = 4;
pub const IBV_QPT_XRC_SEND: c_int = 9;
pub const IBV_QPT_XRC_RECV: c_int = 10;

// ---------------------------------------------------------------------------
// librdmacm's own public structs.
// ---------------------------------------------------------------------------

/// `struct rdma_event_channel`.
#[repr(C)]
pub struct rdma_event_channel {
    pub fd: c_int,
}

/// `struct rdma_ib_addr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct rdma_ib_addr {
    pub sgid: ibv_gid,
    pub dgid: ibv_gid,
    pub pkey: u16,
}

/// First anonymous union of `struct rdma_addr` (source address).
#[repr(C)]
#[derive(Clone, Copy)]
pub union rdma_addr_src {
    pub src_addr: sockaddr,
    pub src_sin: sockaddr_in,
    pub src_sin6: sockaddr_in6,
    pub src_storage: sockaddr_storage,
}

/// Second anonymous union of `struct rdma_addr` (destination address).
#[repr(C)]
#[derive(Clone, Copy)]
pub union rdma_addr_dst {
    pub dst_addr: sockaddr,
    pub dst_sin: sockaddr_in,
    pub dst_sin6: sockaddr_in6,
    pub dst_storage: sockaddr_storage,
}

/// The named union `addr` of `struct rdma_addr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union rdma_addr_ib {
    pub ibaddr: rdma_ib_addr,
}

/// `struct rdma_addr`. In C the first two unions are anonymous; the header
/// text for this struct is written by hand in cbindgen.toml and checked by
/// the layout test like every generated one.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct rdma_addr {
    pub src: rdma_addr_src,
    pub dst: rdma_addr_dst,
    pub addr: rdma_addr_ib,
}

/// `struct rdma_route`.
#[repr(C)]
pub struct rdma_route {
    pub addr: rdma_addr,
    pub path_rec: *mut ibv_sa_path_rec,
    pub num_paths: c_int,
}

/// `struct rdma_cm_id`: the public part of every id; the library's private
/// state lives after it in the same allocation.
#[repr(C)]
pub struct rdma_cm_id {
    pub verbs: *mut ibv_context,
    pub channel: *mut rdma_event_channel,
    pub context: *mut c_void,
    pub qp: *mut ibv_qp,
    pub route: rdma_route,
    pub ps: RawPortSpace,
    pub port_num: u8,
    pub event: *mut rdma_cm_event,
    pub send_cq_channel: *mut ibv_comp_channel,
    pub send_cq: *mut ibv_cq,
    pub recv_cq_channel: *mut ibv_comp_channel,
    pub recv_cq: *mut ibv_cq,
    pub srq: *mut ibv_srq,
    pub pd: *mut ibv_pd,
    pub qp_type: RawQpType,
}

/// `struct rdma_conn_param`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct rdma_conn_param {
    pub private_data: *const c_void,
    pub private_data_len: u8,
    pub responder_resources: u8,
    pub initiator_depth: u8,
    pub flow_control: u8,
    pub retry_count: u8,
    pub rnr_retry_count: u8,
    pub srq: u8,
    pub qp_num: u32,
}

/// `struct rdma_ud_param`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct rdma_ud_param {
    pub private_data: *const c_void,
    pub private_data_len: u8,
    pub ah_attr: ibv_ah_attr,
    pub qp_num: u32,
    pub qkey: u32,
}

/// The `param` union of `struct rdma_cm_event`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union rdma_cm_event_param {
    pub conn: rdma_conn_param,
    pub ud: rdma_ud_param,
    pub arg: u64,
}

/// `struct rdma_cm_event`.
#[repr(C)]
pub struct rdma_cm_event {
    pub id: *mut rdma_cm_id,
    pub listen_id: *mut rdma_cm_id,
    pub event: RawEventType,
    pub status: c_int,
    pub param: rdma_cm_event_param,
}

/// `struct rdma_addrinfo`.
#[repr(C)]
pub struct rdma_addrinfo {
    pub ai_flags: c_int,
    pub ai_family: c_int,
    pub ai_qp_type: c_int,
    pub ai_port_space: c_int,
    pub ai_src_len: socklen_t,
    pub ai_dst_len: socklen_t,
    pub ai_src_addr: *mut sockaddr,
    pub ai_dst_addr: *mut sockaddr,
    pub ai_src_canonname: *mut c_char,
    pub ai_dst_canonname: *mut c_char,
    pub ai_route_len: size_t,
    pub ai_route: *mut c_void,
    pub ai_connect_len: size_t,
    pub ai_connect: *mut c_void,
    pub ai_next: *mut rdma_addrinfo,
}

/// `struct rdma_cm_join_mc_attr_ex`.
#[repr(C)]
pub struct rdma_cm_join_mc_attr_ex {
    pub comp_mask: u32,
    pub join_flags: u32,
    pub addr: *mut sockaddr,
}

/// `struct ib_connect_hdr` (private in upstream's cma.h, but it is the wire
/// content of `ai_connect`, 36 bytes).
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct ib_connect_hdr {
    pub cma_version: u8,
    pub ip_version: u8,
    pub port: u16,
    pub src_addr: [u32; 4],
    pub dst_addr: [u32; 4],
}

// Compile-time layout check against upstream's headers (see build.rs).
#[allow(unused_unsafe, clippy::unnecessary_cast)]
mod layout_check {
    include!(concat!(env!("OUT_DIR"), "/layout_check.rs"));
}
