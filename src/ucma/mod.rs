//! The kernel's RDMA CM device, `/dev/infiniband/rdma_cm`.
//!
//! Every command is one `write()` of an 8-byte header and a typed payload
//! ([`cmd::exec`]); responses are copied by the kernel into a buffer whose
//! address travels in the payload. The functions here take the raw fd of an
//! event channel: each open of the device is one kernel "file", and ids and
//! events live on it. Nothing here knows about the library's objects.

pub mod cmd;

use crate::error::{Error, Result};
use crate::sockaddr::RawAddr;
use crate::sysfs;
use cmd::*;
use std::mem::MaybeUninit;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Path of the ucma character device.
pub const DEVICE_PATH: &std::ffi::CStr = cstr!("/dev/infiniband/rdma_cm");

/// Oldest and newest ucma ABI the library speaks.
pub(crate) const MIN_ABI: i64 = 3;
pub(crate) const MAX_ABI: i64 = 4;

static READY: AtomicBool = AtomicBool::new(false);
static INIT_LOCK: Mutex<Option<i64>> = Mutex::new(None);

/// Upstream's `ucma_init`: EPERM on an unsupported ucma ABI, ENODEV when
/// the machine has no RDMA device. Success is cached; failure is retried on
/// the next call (a device may appear), the ABI version is read once. It
/// does *not* load libibverbs' providers: device presence is read from
/// sysfs, with the rules libibverbs applies.
#[inline]
pub fn init() -> Result<()> {
    if READY.load(Ordering::Acquire) {
        return Ok(());
    }
    init_slow()
}

#[cold]
fn init_slow() -> Result<()> {
    let mut abi = INIT_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    if READY.load(Ordering::Acquire) {
        return Ok(());
    }
    let v = *abi.get_or_insert_with(|| sysfs::ucma_abi_version().unwrap_or(MAX_ABI));
    if !(MIN_ABI..=MAX_ABI).contains(&v) {
        return Err(Error::Errno(libc::EPERM));
    }
    let devs = sysfs::verbs_devices()?;
    if devs.is_empty() {
        return Err(Error::Errno(libc::ENODEV));
    }
    sysfs::keep_first_scan(devs);
    READY.store(true, Ordering::Release);
    Ok(())
}

/// Open the device `O_RDWR | O_CLOEXEC`; the open's errno on failure.
pub fn open() -> Result<OwnedFd> {
    // SAFETY: valid C string; the fd is owned by OwnedFd from here on.
    let fd = unsafe { libc::open(DEVICE_PATH.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(Error::last_os());
    }
    // SAFETY: fd is a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The address bytes `b` (a socket address at its family's length) into a
/// command's address field; its length.
fn put_addr(field: &mut [u8; 128], b: &[u8]) -> u16 {
    let n = b.len().min(field.len());
    field[..n].copy_from_slice(&b[..n]);
    n as u16
}

/// CREATE_ID: returns the kernel handle of a new id.
pub fn create_id(fd: RawFd, uid: u64, ps: u16, qp_type: u8) -> Result<u32> {
    Ok(exec(fd, CreateId { uid, response: 0, ps, qp_type, reserved: [0; 5] })?.id)
}

/// DESTROY_ID: returns how many events the kernel reported for the id.
pub fn destroy_id(fd: RawFd, id: u32) -> Result<u32> {
    Ok(exec(fd, DestroyId { response: 0, id, reserved: 0 })?.events_reported)
}

/// BIND an id to an address.
pub fn bind(fd: RawFd, id: u32, addr: &[u8]) -> Result<()> {
    exec_with(fd, |c: &mut Bind| {
        c.id = id;
        c.addr_size = put_addr(&mut c.addr, addr);
    })
    .map(drop)
}

/// RESOLVE_ADDR (AF_IB-capable form).
pub fn resolve_addr(fd: RawFd, id: u32, src: Option<&[u8]>, dst: &[u8], timeout_ms: u32) -> Result<()> {
    exec_with(fd, |c: &mut ResolveAddr| {
        c.id = id;
        c.timeout_ms = timeout_ms;
        if let Some(s) = src {
            c.src_size = put_addr(&mut c.src_addr, s);
        }
        c.dst_size = put_addr(&mut c.dst_addr, dst);
    })
    .map(drop)
}

pub fn resolve_route(fd: RawFd, id: u32, timeout_ms: u32) -> Result<()> {
    exec(fd, ResolveRoute { id, timeout_ms }).map(drop)
}

/// QUERY(ADDR): addresses, device GUID and index (`u32::MAX` from kernels
/// that do not report it), port, pkey; into `resp`.
pub fn query_addr(fd: RawFd, id: u32, resp: &mut MaybeUninit<QueryAddrResp>) -> Result<&QueryAddrResp> {
    let p = unzeroed(resp);
    // SAFETY: fields of our buffer, written in place. Kernels before 5.5
    // do not write these two; every kernel writes all bytes before them.
    unsafe {
        std::ptr::addr_of_mut!((*p).ibdev_index).write(u32::MAX);
        std::ptr::addr_of_mut!((*p).reserved1).write(0);
    }
    exec_uninit(fd, QueryAddr::new(id), resp)?;
    kernel_wrote(p as *const u8, std::mem::offset_of!(QueryAddrResp, ibdev_index));
    // SAFETY: the kernel's ucma_query_addr copies its whole response
    // (zeroed, then filled) up to the length asked or its own size, which
    // has every field up to `dst_addr` since AF_IB support (the ABI this
    // library requires); the rest was written above.
    Ok(unsafe { resp.assume_init_ref() })
}

/// QUERY(GID): the source and destination GIDs (as `sockaddr_ib`s).
pub fn query_gid(fd: RawFd, id: u32, resp: &mut QueryAddrResp) -> Result<()> {
    exec_into(fd, QueryGid::new(id), resp)
}

/// QUERY(PATH): up to six path records.
pub fn query_path(fd: RawFd, id: u32, resp: &mut MaybeUninit<QueryPathResp>) -> Result<&[PathRecData]> {
    let p = unzeroed(resp);
    // The kernel writes the header and one record per path while more than
    // a record's room is left, so never the last record of our buffer:
    // that one is zeroed here (a route of more paths shows it zero, as
    // before this buffer was left unzeroed).
    const WRITTEN: usize = (std::mem::size_of::<QueryPathResp>() - 8 - 1) / std::mem::size_of::<PathRecData>();
    const _: () = assert!(WRITTEN == MAX_QUERY_PATHS - 1);
    // SAFETY: a field of our buffer, written in place.
    unsafe { std::ptr::addr_of_mut!((*p).path_data[WRITTEN]).write(PathRecData::default()) };
    exec_uninit(fd, QueryPath::new(id), resp)?;
    kernel_wrote(p as *const u8, std::mem::offset_of!(QueryPathResp, path_data));
    // SAFETY: the kernel's ucma_query_path wrote the header (num_paths)
    // and the first min(num_paths, WRITTEN) records; the last was zeroed
    // above. Only those records are read.
    unsafe {
        let n = (std::ptr::addr_of!((*p).num_paths).read() as usize).min(MAX_QUERY_PATHS);
        let recs = std::ptr::addr_of!((*p).path_data) as *const PathRecData;
        kernel_wrote(recs as *const u8, n.min(WRITTEN) * std::mem::size_of::<PathRecData>());
        Ok(std::slice::from_raw_parts(recs, n))
    }
}

/// QUERY(IB_SERVICE) into `buf` (an 8-byte header, then records).
pub fn query_ib_service(fd: RawFd, id: u32, buf: &mut [u64]) -> Result<()> {
    let mut c = QueryIbService::new(id);
    c.response = buf.as_mut_ptr() as u64;
    write_cmd(fd, QUERY, &c, std::mem::size_of_val(buf))
}

/// Memory the kernel reads itself by address (option values): it checks
/// access and answers EFAULT for a bad one, so the library passes a
/// caller's address through without reading it.
#[derive(Clone, Copy, Debug)]
pub struct KernelBuf {
    pub addr: u64,
    pub len: u32,
}

impl KernelBuf {
    /// A buffer of the library's own.
    pub fn of<T: Copy>(v: &[T]) -> KernelBuf {
        KernelBuf { addr: v.as_ptr() as u64, len: std::mem::size_of_val(v) as u32 }
    }
}

/// SET_OPTION; `val` must stay readable for the call.
pub fn set_option(fd: RawFd, id: u32, level: u32, optname: u32, val: KernelBuf) -> Result<()> {
    exec(fd, SetOption { optval: val.addr, id, level, optname, optlen: val.len }).map(drop)
}

pub fn notify(fd: RawFd, id: u32, event: u32) -> Result<()> {
    exec(fd, Notify { id, event }).map(drop)
}

/// MIGRATE_ID, written to the new file; returns events reported on the old.
pub fn migrate_id(new_fd: RawFd, id: u32, old_fd: RawFd) -> Result<u32> {
    Ok(exec(new_fd, MigrateId { response: 0, id, fd: old_fd as u32 })?.events_reported)
}

/// GET_EVENT into `resp`: blocks (unless the fd is non-blocking) until an
/// event is queued.
pub fn get_event(fd: RawFd, resp: &mut MaybeUninit<EventResp>) -> Result<&EventResp> {
    let p = unzeroed(resp);
    // SAFETY: fields of our buffer, written in place. Kernels before 5.8
    // do not write these two; every kernel writes all bytes before them.
    unsafe {
        std::ptr::addr_of_mut!((*p).reserved).write(0);
        std::ptr::addr_of_mut!((*p).ece).write(Ece { vendor_id: 0, attr_mod: 0 });
    }
    exec_uninit(fd, GetEvent { response: 0 }, resp)?;
    kernel_wrote(p as *const u8, std::mem::offset_of!(EventResp, reserved));
    // SAFETY: the kernel's ucma_get_event copies the event's whole record
    // (from a zeroed allocation) up to the length asked or its own size,
    // which has every field up to `param` on every kernel; the rest was
    // written above.
    Ok(unsafe { resp.assume_init_ref() })
}

/// WRITE_CM_EVENT (Linux ≥ 6.17): queue a USER or INTERNAL event on the id.
pub fn write_cm_event(fd: RawFd, id: u32, event: u32, status: i32, arg: u64) -> Result<()> {
    let mut c = WriteCmEvent::zeroed();
    c.id = id;
    c.event = event;
    c.status = status;
    c.param.arg32 = [arg as u32, (arg >> 32) as u32];
    exec(fd, c).map(drop)
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
    exec(fd, c).map(drop)
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
        let ok = bind(fd, id, RawAddr::from_ib(&sib).as_bytes()).is_ok();
        let _ = destroy_id(fd, id);
        ok
    })
}

/// CONNECT with the local ECE: `conn` fills the connection parameters in
/// place (from zeroes).
pub fn connect(fd: RawFd, id: u32, ece: Ece, conn: impl FnOnce(&mut ConnParam)) -> Result<()> {
    exec_with(fd, |c: &mut Connect| {
        c.id = id;
        conn(&mut c.conn_param);
        c.ece = ece;
    })
    .map(drop)
}

pub fn listen(fd: RawFd, id: u32, backlog: u32) -> Result<()> {
    exec(fd, Listen { id, backlog }).map(drop)
}

/// ACCEPT: `uid` becomes the id's uid in the kernel (a child gets one only
/// here). `conn` fills the connection parameters in place (from zeroes);
/// left zero (`valid == 0`) it asks only for the RTU of an active side.
pub fn accept(fd: RawFd, id: u32, uid: u64, ece: Ece, conn: impl FnOnce(&mut ConnParam)) -> Result<()> {
    exec_with(fd, |c: &mut Accept| {
        c.uid = uid;
        c.id = id;
        conn(&mut c.conn_param);
        c.ece = ece;
    })
    .map(drop)
}

/// REJECT with private data (at most 255 bytes, the u8 length) and a reason.
pub fn reject(fd: RawFd, id: u32, data: &[u8], reason: u8) -> Result<()> {
    let mut c = Reject::zeroed();
    c.id = id;
    let n = data.len().min(u8::MAX as usize);
    c.private_data[..n].copy_from_slice(&data[..n]);
    c.private_data_len = n as u8;
    c.reason = reason;
    exec(fd, c).map(drop)
}

pub fn disconnect(fd: RawFd, id: u32) -> Result<()> {
    exec(fd, Disconnect { id }).map(drop)
}

/// INIT_QP_ATTR: the kernel's attributes and mask for moving a QP to
/// `state`, into `resp` (not zeroed first: the kernel writes all of it).
pub fn init_qp_attr(
    fd: RawFd,
    id: u32,
    state: u32,
    resp: &mut MaybeUninit<crate::abi::ib_uverbs_qp_attr>,
) -> Result<&crate::abi::ib_uverbs_qp_attr> {
    let p = unzeroed(resp);
    exec_uninit(fd, InitQpAttr { response: 0, id, qp_state: state }, resp)?;
    kernel_wrote(p as *const u8, std::mem::size_of::<crate::abi::ib_uverbs_qp_attr>());
    // SAFETY: the kernel's ucma_init_qp_attr copies its whole response
    // (every kernel: the struct's size has not changed since it was made);
    // any bytes are a valid value of this plain struct.
    Ok(unsafe { resp.assume_init_ref() })
}

/// JOIN_MCAST: returns the kernel handle of the membership.
pub fn join_mcast(fd: RawFd, id: u32, uid: u64, addr: &RawAddr, flags: u16) -> Result<u32> {
    let mut c = JoinMcast::zeroed();
    c.uid = uid;
    c.id = id;
    c.join_flags = flags;
    c.addr_size = put_addr(&mut c.addr, addr.as_bytes());
    Ok(exec(fd, c)?.id)
}

/// LEAVE_MCAST: returns the events reported for the membership.
pub fn leave_mcast(fd: RawFd, mc: u32) -> Result<u32> {
    Ok(exec(fd, LeaveMcast { response: 0, id: mc, reserved: 0 })?.events_reported)
}
