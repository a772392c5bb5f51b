//! The kernel's RDMA CM device, `/dev/infiniband/rdma_cm` (reference §3).
//!
//! Every command is one `write()` of an 8-byte header and a typed payload
//! ([`cmd::write_cmd`]); responses are copied by the kernel into a buffer
//! whose address travels in the payload. The functions here take the raw fd
//! of an event channel: each open of the device is one kernel "file", and
//! ids and events live on it.

pub mod cmd;

use crate::addr::RawAddr;
use crate::error::{Error, Result};
use cmd::*;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

/// Path of the ucma character device.
pub const DEVICE_PATH: &[u8] = b"/dev/infiniband/rdma_cm\0";

/// Open the device `O_RDWR | O_CLOEXEC`; the open's errno on failure.
pub fn open() -> Result<OwnedFd> {
    // SAFETY: valid C string; the fd is owned by OwnedFd from here on.
    let fd = unsafe { libc::open(DEVICE_PATH.as_ptr() as *const libc::c_char, libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(Error::last_os());
    }
    // SAFETY: fd is a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// CREATE_ID: returns the kernel handle of a new id.
pub fn create_id(fd: RawFd, uid: u64, ps: u16, qp_type: u8) -> Result<u32> {
    let mut resp = IdResp::default();
    let c = CreateId { uid, response: resp_ptr(&mut resp), ps, qp_type, reserved: [0; 5] };
    write_cmd(fd, CREATE_ID, &c, std::mem::size_of::<IdResp>())?;
    Ok(resp.id)
}

/// DESTROY_ID: returns how many events the kernel reported for the id.
pub fn destroy_id(fd: RawFd, id: u32) -> Result<u32> {
    let mut resp = EventsReported::default();
    let c = DestroyId { response: resp_ptr(&mut resp), id, reserved: 0 };
    write_cmd(fd, DESTROY_ID, &c, std::mem::size_of::<EventsReported>())?;
    Ok(resp.events_reported)
}

/// BIND an id to an address.
pub fn bind(fd: RawFd, id: u32, addr: &RawAddr) -> Result<()> {
    let mut c = Bind::zeroed();
    c.id = id;
    c.addr_size = addr.len() as u16;
    c.addr[..addr.len()].copy_from_slice(addr.as_bytes());
    write_cmd(fd, BIND, &c, 0)
}

/// RESOLVE_ADDR (AF_IB-capable form).
pub fn resolve_addr(fd: RawFd, id: u32, src: Option<&RawAddr>, dst: &RawAddr, timeout_ms: u32) -> Result<()> {
    let mut c = ResolveAddr::zeroed();
    c.id = id;
    c.timeout_ms = timeout_ms;
    if let Some(s) = src {
        c.src_size = s.len() as u16;
        c.src_addr[..s.len()].copy_from_slice(s.as_bytes());
    }
    c.dst_size = dst.len() as u16;
    c.dst_addr[..dst.len()].copy_from_slice(dst.as_bytes());
    write_cmd(fd, RESOLVE_ADDR, &c, 0)
}

pub fn resolve_route(fd: RawFd, id: u32, timeout_ms: u32) -> Result<()> {
    write_cmd(fd, RESOLVE_ROUTE, &ResolveRoute { id, timeout_ms }, 0)
}

/// QUERY with a response of type `R`.
pub fn query<R: Copy>(fd: RawFd, id: u32, option: u32, resp: &mut R) -> Result<()> {
    let c = Query { response: resp_ptr(resp), id, option };
    write_cmd(fd, QUERY, &c, std::mem::size_of::<R>())
}

pub fn set_option(fd: RawFd, id: u32, level: u32, optname: u32, optval: u64, optlen: u32) -> Result<()> {
    write_cmd(fd, SET_OPTION, &SetOption { optval, id, level, optname, optlen }, 0)
}

pub fn notify(fd: RawFd, id: u32, event: u32) -> Result<()> {
    write_cmd(fd, NOTIFY, &Notify { id, event }, 0)
}

/// MIGRATE_ID, written to the new file; returns events reported on the old.
pub fn migrate_id(new_fd: RawFd, id: u32, old_fd: RawFd) -> Result<u32> {
    let mut resp = EventsReported::default();
    let c = MigrateId { response: resp_ptr(&mut resp), id, fd: old_fd as u32 };
    write_cmd(new_fd, MIGRATE_ID, &c, std::mem::size_of::<EventsReported>())?;
    Ok(resp.events_reported)
}

/// GET_EVENT: blocks (unless the fd is non-blocking) until an event is queued.
pub fn get_event(fd: RawFd) -> Result<EventResp> {
    let mut resp = EventResp::zeroed();
    let c = GetEvent { response: resp_ptr(&mut resp) };
    write_cmd(fd, GET_EVENT, &c, std::mem::size_of::<EventResp>())?;
    Ok(resp)
}

/// WRITE_CM_EVENT (Linux ≥ 6.17): queue a USER or INTERNAL event on the id.
pub fn write_cm_event(fd: RawFd, id: u32, event: u32, status: i32, arg: u64) -> Result<()> {
    let mut c = WriteCmEvent::zeroed();
    c.id = id;
    c.event = event;
    c.status = status;
    c.param.arg32 = [arg as u32, (arg >> 32) as u32];
    write_cmd(fd, WRITE_CM_EVENT, &c, 0)
}

/// RESOLVE_IB_SERVICE (Linux ≥ 6.17) by service id or by name.
pub fn resolve_ib_service(fd: RawFd, id: u32, service_id: Option<u64>, name: &[u8]) -> Result<()> {
    let mut c = ResolveIbService::zeroed();
    c.id = id;
    match service_id {
        Some(sid) => {
            c.service_id = sid;
            c.flags = IB_SERVICE_FLAG_ID;
        }
        None => {
            let n = name.len().min(c.service_name.len() - 1);
            c.service_name[..n].copy_from_slice(&name[..n]);
            c.flags = IB_SERVICE_FLAG_NAME;
        }
    }
    write_cmd(fd, RESOLVE_IB_SERVICE, &c, 0)
}

/// Whether the kernel accepts AF_IB addresses (upstream's `af_ib_support`),
/// probed once, lazily: bind a throw-away PS_IB id to the AF_IB wildcard.
pub fn af_ib_support() -> bool {
    use std::os::fd::AsRawFd;
    static SUPPORT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SUPPORT.get_or_init(|| {
        let Ok(dev) = open() else { return false };
        let fd = dev.as_raw_fd();
        let Ok(id) = create_id(fd, 0, crate::abi::RDMA_PS_IB as u16, crate::abi::IBV_QPT_RC as u8) else {
            return false;
        };
        let mut sib = crate::abi::sockaddr_ib { sib_family: crate::abi::AF_IB as u16, ..Default::default() };
        sib.sib_sid = crate::abi::RDMA_IB_IP_PS_TCP.to_be();
        sib.sib_sid_mask = crate::abi::RDMA_IB_IP_PS_MASK.to_be();
        let ok = bind(fd, id, &RawAddr::from_ib(&sib)).is_ok();
        let _ = destroy_id(fd, id);
        ok
    })
}

/// CONNECT with connection parameters and the local ECE.
pub fn connect(fd: RawFd, id: u32, conn: &ConnParam, ece: Ece) -> Result<()> {
    let mut c = Connect::zeroed();
    c.id = id;
    c.conn_param = *conn;
    c.ece = ece;
    write_cmd(fd, CONNECT, &c, 0)
}

pub fn listen(fd: RawFd, id: u32, backlog: u32) -> Result<()> {
    write_cmd(fd, LISTEN, &Listen { id, backlog }, 0)
}

/// ACCEPT: `uid` becomes the id's uid in the kernel (a child gets one only
/// here). `conn.valid == 0` asks only for the RTU of an active side.
pub fn accept(fd: RawFd, id: u32, uid: u64, conn: &ConnParam, ece: Ece) -> Result<()> {
    let mut c = Accept::zeroed();
    c.uid = uid;
    c.id = id;
    c.conn_param = *conn;
    c.ece = ece;
    write_cmd(fd, ACCEPT, &c, 0)
}

/// REJECT with private data (at most 255 bytes, the u8 length) and a reason.
pub fn reject(fd: RawFd, id: u32, data: &[u8], reason: u8) -> Result<()> {
    let mut c = Reject::zeroed();
    c.id = id;
    let n = data.len().min(u8::MAX as usize);
    c.private_data[..n].copy_from_slice(&data[..n]);
    c.private_data_len = n as u8;
    c.reason = reason;
    write_cmd(fd, REJECT, &c, 0)
}

pub fn disconnect(fd: RawFd, id: u32) -> Result<()> {
    write_cmd(fd, DISCONNECT, &Disconnect { id }, 0)
}

/// INIT_QP_ATTR: the kernel's attributes for moving a QP to `state`.
pub fn init_qp_attr(fd: RawFd, id: u32, state: u32) -> Result<UverbsQpAttr> {
    let mut resp = UverbsQpAttr::zeroed();
    let c = InitQpAttr { response: resp_ptr(&mut resp), id, qp_state: state };
    write_cmd(fd, INIT_QP_ATTR, &c, std::mem::size_of::<UverbsQpAttr>())?;
    Ok(resp)
}

/// JOIN_MCAST: returns the kernel handle of the membership.
pub fn join_mcast(fd: RawFd, id: u32, uid: u64, addr: &RawAddr, flags: u16) -> Result<u32> {
    let mut resp = IdResp::default();
    let mut c = JoinMcast::zeroed();
    c.response = resp_ptr(&mut resp);
    c.uid = uid;
    c.id = id;
    c.addr_size = addr.len() as u16;
    c.join_flags = flags;
    c.addr[..addr.len()].copy_from_slice(addr.as_bytes());
    write_cmd(fd, JOIN_MCAST, &c, std::mem::size_of::<IdResp>())?;
    Ok(resp.id)
}

/// LEAVE_MCAST: returns the events reported for the membership.
pub fn leave_mcast(fd: RawFd, mc: u32) -> Result<u32> {
    let mut resp = EventsReported::default();
    let c = DestroyId { response: resp_ptr(&mut resp), id: mc, reserved: 0 };
    write_cmd(fd, LEAVE_MCAST, &c, std::mem::size_of::<EventsReported>())?;
    Ok(resp.events_reported)
}
