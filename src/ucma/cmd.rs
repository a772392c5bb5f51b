//! Command numbers and payload layouts of the ucma write protocol
//! (`rdma_user_cm.h`, reference §3.3–3.4). Sizes are checked in tests.

use crate::error::{Error, Result};
use std::os::fd::RawFd;

pub(crate) const CREATE_ID: u32 = 0;
pub(crate) const DESTROY_ID: u32 = 1;
pub(crate) const RESOLVE_ROUTE: u32 = 4;
pub(crate) const CONNECT: u32 = 6;
pub(crate) const LISTEN: u32 = 7;
pub(crate) const ACCEPT: u32 = 8;
pub(crate) const REJECT: u32 = 9;
pub(crate) const DISCONNECT: u32 = 10;
pub(crate) const INIT_QP_ATTR: u32 = 11;
pub(crate) const GET_EVENT: u32 = 12;
pub(crate) const SET_OPTION: u32 = 14;
pub(crate) const NOTIFY: u32 = 15;
pub(crate) const LEAVE_MCAST: u32 = 17;
pub(crate) const MIGRATE_ID: u32 = 18;
pub(crate) const QUERY: u32 = 19;
pub(crate) const BIND: u32 = 20;
pub(crate) const RESOLVE_ADDR: u32 = 21;
pub(crate) const JOIN_MCAST: u32 = 22;
pub(crate) const RESOLVE_IB_SERVICE: u32 = 23;
pub(crate) const WRITE_CM_EVENT: u32 = 24;

pub(crate) const QUERY_ADDR: u32 = 0;
pub(crate) const QUERY_PATH: u32 = 1;
pub(crate) const QUERY_GID: u32 = 2;
pub(crate) const QUERY_IB_SERVICE: u32 = 3;

pub(crate) const IB_SERVICE_FLAG_ID: u32 = 1;
pub(crate) const IB_SERVICE_FLAG_NAME: u32 = 2;

/// Longest private data the kernel carries.
pub(crate) const MAX_PRIVATE_DATA: usize = 256;

/// The 8-byte header before every payload.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Header {
    pub cmd: u32,
    pub inlen: u16,
    pub out: u16,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct CmdBuf<P: Copy> {
    pub hdr: Header,
    pub payload: P,
}

/// Write one command (`cmd` number, payload) to a ucma file. A short write
/// is ENODATA, as upstream reports it; a failed one carries the kernel's
/// errno. `out` is the size of the response buffer named in the payload.
pub fn write_cmd<P: Copy>(fd: RawFd, cmd: u32, payload: &P, out: usize) -> Result<()> {
    let buf = CmdBuf::<P> { hdr: Header { cmd, inlen: std::mem::size_of::<P>() as u16, out: out as u16 }, payload: *payload };
    let len = std::mem::size_of_val(&buf);
    // SAFETY: buf is a plain C struct of len bytes; the kernel writes only
    // into response buffers that the payload names and that outlive the call.
    let n = unsafe { libc::write(fd, &buf as *const _ as *const libc::c_void, len) };
    if n < 0 {
        return Err(Error::last_os());
    }
    if n as usize != len {
        return Err(Error::Errno(libc::ENODATA));
    }
    Ok(())
}

/// The address of a response buffer, as the kernel wants it.
pub fn resp_ptr<T>(r: &mut T) -> u64 {
    r as *mut T as u64
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CreateId {
    pub uid: u64,
    pub response: u64,
    pub ps: u16,
    pub qp_type: u8,
    pub reserved: [u8; 5],
}

/// Response of CREATE_ID and of the JOIN commands.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct IdResp {
    pub id: u32,
}

/// DESTROY_ID, LEAVE_MCAST payload.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DestroyId {
    pub response: u64,
    pub id: u32,
    pub reserved: u32,
}

/// Response of DESTROY_ID, LEAVE_MCAST and MIGRATE_ID.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct EventsReported {
    pub events_reported: u32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct Bind {
    pub id: u32,
    pub addr_size: u16,
    pub reserved: u16,
    pub addr: [u8; 128],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct ResolveAddr {
    pub id: u32,
    pub timeout_ms: u32,
    pub src_size: u16,
    pub dst_size: u16,
    pub reserved: u32,
    pub src_addr: [u8; 128],
    pub dst_addr: [u8; 128],
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ResolveRoute {
    pub id: u32,
    pub timeout_ms: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Query {
    pub response: u64,
    pub id: u32,
    pub option: u32,
}

/// Response of QUERY(ADDR) and QUERY(GID) (280 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct QueryAddrResp {
    pub node_guid: u64,
    pub port_num: u8,
    pub reserved: u8,
    pub pkey: u16,
    pub src_size: u16,
    pub dst_size: u16,
    pub src_addr: [u8; 128],
    pub dst_addr: [u8; 128],
    pub ibdev_index: u32,
    pub reserved1: u32,
}

/// `struct ib_path_rec_data` as the kernel returns it (72 bytes).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct PathRecData {
    pub flags: u32,
    pub reserved: u32,
    pub path_rec: [u32; 16],
}

/// Paths the library makes room for in QUERY(PATH), as upstream.
pub(crate) const MAX_QUERY_PATHS: usize = 6;

/// Response of QUERY(PATH): header plus room for six paths.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct QueryPathResp {
    pub num_paths: u32,
    pub reserved: u32,
    pub path_data: [PathRecData; MAX_QUERY_PATHS],
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SetOption {
    pub optval: u64,
    pub id: u32,
    pub level: u32,
    pub optname: u32,
    pub optlen: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Notify {
    pub id: u32,
    pub event: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MigrateId {
    pub response: u64,
    pub id: u32,
    pub fd: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GetEvent {
    pub response: u64,
}

/// `struct ib_uverbs_ah_attr` (32 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct UverbsAhAttr {
    pub dgid: [u8; 16],
    pub flow_label: u32,
    pub sgid_index: u8,
    pub hop_limit: u8,
    pub traffic_class: u8,
    pub reserved: u8,
    pub dlid: u16,
    pub sl: u8,
    pub src_path_bits: u8,
    pub static_rate: u8,
    pub is_global: u8,
    pub port_num: u8,
    pub reserved2: u8,
}

/// `struct rdma_ucm_conn_param` (272 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ConnParam {
    pub qp_num: u32,
    pub qkey: u32,
    pub private_data: [u8; MAX_PRIVATE_DATA],
    pub private_data_len: u8,
    pub srq: u8,
    pub responder_resources: u8,
    pub initiator_depth: u8,
    pub flow_control: u8,
    pub retry_count: u8,
    pub rnr_retry_count: u8,
    pub valid: u8,
}

/// `struct rdma_ucm_ud_param` (304 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct UdParam {
    pub qp_num: u32,
    pub qkey: u32,
    pub ah_attr: UverbsAhAttr,
    pub private_data: [u8; MAX_PRIVATE_DATA],
    pub private_data_len: u8,
    pub reserved: [u8; 7],
}

/// The param union of events (304 bytes, 4-byte aligned).
#[repr(C)]
#[derive(Clone, Copy)]
pub union EventParam {
    pub conn: ConnParam,
    pub ud: UdParam,
    pub arg32: [u32; 2],
    pub raw: [u32; 76],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Ece {
    pub vendor_id: u32,
    pub attr_mod: u32,
}

/// Response of GET_EVENT (336 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct EventResp {
    pub uid: u64,
    pub id: u32,
    pub event: u32,
    pub status: i32,
    pub param: EventParam,
    pub reserved: u32,
    pub ece: Ece,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct ResolveIbService {
    pub id: u32,
    pub reserved: u32,
    pub service_id: u64,
    pub service_name: [u8; 64],
    pub flags: u32,
    pub reserved2: u32,
}

/// `struct ib_user_service_rec` (176 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ServiceRec {
    pub id: u64,
    pub gid: [u8; 16],
    pub pkey: u16,
    pub reserved: u16,
    pub lease: u32,
    pub key: [u8; 16],
    pub name: [u8; 64],
    pub data8: [u8; 16],
    pub data16: [u16; 8],
    pub data32: [u32; 4],
    pub data64: [u64; 2],
}

/// WRITE_CM_EVENT payload, at the kernel's size (320 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct WriteCmEvent {
    pub id: u32,
    pub reserved: u32,
    pub event: u32,
    pub status: i32,
    pub param: EventParam,
}

/// CONNECT payload (288 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Connect {
    pub conn_param: ConnParam,
    pub id: u32,
    pub reserved: u32,
    pub ece: Ece,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Listen {
    pub id: u32,
    pub backlog: u32,
}

/// ACCEPT payload (296 bytes); with `conn_param.valid == 0` it only makes
/// the kernel send the RTU of an active-side connection.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Accept {
    pub uid: u64,
    pub conn_param: ConnParam,
    pub id: u32,
    pub reserved: u32,
    pub ece: Ece,
}

/// REJECT payload (264 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Reject {
    pub id: u32,
    pub private_data_len: u8,
    pub reason: u8,
    pub reserved: [u8; 2],
    pub private_data: [u8; MAX_PRIVATE_DATA],
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Disconnect {
    pub id: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct InitQpAttr {
    pub response: u64,
    pub id: u32,
    pub qp_state: u32,
}

/// `struct ib_uverbs_qp_attr` (144 bytes), the INIT_QP_ATTR response; only
/// libibverbs' `ibv_copy_qp_attr_from_kern` reads it.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct UverbsQpAttr {
    pub raw: [u32; 36],
}

/// JOIN_MCAST payload (152 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct JoinMcast {
    pub response: u64,
    pub uid: u64,
    pub id: u32,
    pub addr_size: u16,
    pub join_flags: u16,
    pub addr: [u8; 128],
}

// SAFETY helpers: every payload is plain data, all-zero is valid.
macro_rules! zeroed {
    ($($t:ty),*) => {$(
        impl $t {
            pub fn zeroed() -> Self {
                // SAFETY: plain C data; zero is a valid bit pattern.
                unsafe { std::mem::zeroed() }
            }
        }
    )*};
}
zeroed!(Connect, Accept, Reject, JoinMcast, UverbsQpAttr, ConnParam, ResolveAddr, QueryAddrResp, QueryPathResp, EventResp, ResolveIbService, WriteCmEvent, Bind);

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn payload_sizes_match_the_kernel() {
        assert_eq!(size_of::<Header>(), 8);
        assert_eq!(size_of::<CreateId>(), 24);
        assert_eq!(offset_of!(CreateId, ps), 16);
        assert_eq!(offset_of!(CreateId, qp_type), 18);
        assert_eq!(size_of::<DestroyId>(), 16);
        assert_eq!(size_of::<Bind>(), 136);
        assert_eq!(offset_of!(Bind, addr), 8);
        assert_eq!(size_of::<ResolveAddr>(), 272);
        assert_eq!(offset_of!(ResolveAddr, dst_addr), 144);
        assert_eq!(size_of::<ResolveRoute>(), 8);
        assert_eq!(size_of::<Query>(), 16);
        assert_eq!(size_of::<QueryAddrResp>(), 280);
        assert_eq!(offset_of!(QueryAddrResp, ibdev_index), 272);
        assert_eq!(size_of::<PathRecData>(), 72);
        assert_eq!(size_of::<QueryPathResp>(), 8 + 72 * 6);
        assert_eq!(size_of::<SetOption>(), 24);
        assert_eq!(size_of::<Notify>(), 8);
        assert_eq!(size_of::<MigrateId>(), 16);
        assert_eq!(size_of::<UverbsAhAttr>(), 32);
        assert_eq!(offset_of!(UverbsAhAttr, dlid), 24);
        assert_eq!(size_of::<ConnParam>(), 272);
        assert_eq!(offset_of!(ConnParam, private_data_len), 264);
        assert_eq!(size_of::<UdParam>(), 304);
        assert_eq!(offset_of!(UdParam, private_data_len), 296);
        assert_eq!(size_of::<EventParam>(), 304);
        assert_eq!(size_of::<EventResp>(), 336);
        assert_eq!(offset_of!(EventResp, param), 20);
        assert_eq!(offset_of!(EventResp, ece), 328);
        assert_eq!(size_of::<ResolveIbService>(), 88);
        assert_eq!(size_of::<ServiceRec>(), 176);
        assert_eq!(offset_of!(ServiceRec, name), 48);
        assert_eq!(size_of::<WriteCmEvent>(), 320);
        assert_eq!(offset_of!(WriteCmEvent, param), 16);
        assert_eq!(size_of::<CmdBuf<CreateId>>(), 32);
        assert_eq!(size_of::<Connect>(), 288);
        assert_eq!(offset_of!(Connect, id), 272);
        assert_eq!(offset_of!(Connect, ece), 280);
        assert_eq!(size_of::<Listen>(), 8);
        assert_eq!(size_of::<Accept>(), 296);
        assert_eq!(offset_of!(Accept, conn_param), 8);
        assert_eq!(offset_of!(Accept, id), 280);
        assert_eq!(offset_of!(Accept, ece), 288);
        assert_eq!(size_of::<Reject>(), 264);
        assert_eq!(offset_of!(Reject, private_data), 8);
        assert_eq!(size_of::<InitQpAttr>(), 16);
        assert_eq!(size_of::<UverbsQpAttr>(), 144);
        assert_eq!(size_of::<JoinMcast>(), 152);
        assert_eq!(offset_of!(JoinMcast, addr), 24);
    }
}
