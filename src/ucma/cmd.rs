//! Payload layouts of the ucma write protocol (the kernel's
//! `include/uapi/rdma/rdma_user_cm.h`), one type per command. Each command
//! type carries its command number and the type of its response
//! ([`Command`]), so that a command cannot be written with the wrong number
//! or a response buffer of the wrong size. Sizes are checked in the tests.

use crate::error::{Error, Result};
use std::os::fd::RawFd;

/// Plain C data: every bit pattern, all-zero included, is a valid value.
///
/// # Safety
/// Implement only for `#[repr(C)]` structs of integers and arrays of them.
pub unsafe trait Plain: Copy {
    fn zeroed() -> Self {
        // SAFETY: the trait's contract.
        unsafe { std::mem::zeroed() }
    }
}

/// One ucma command: its number, and what the kernel writes back.
pub trait Command: Plain {
    const OP: u32;
    /// The response (`NoResp` for commands without one).
    type Resp: Plain;
    /// Store the response buffer's address in the payload (commands with
    /// a response have a `response` field).
    fn set_response(&mut self, _addr: u64) {}
}

/// The response of commands that have none.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct NoResp;

/// Write one command and return its response (zeroed where the kernel
/// writes less). A short write is ENODATA, as upstream reports it; a
/// failed one carries the kernel's errno.
pub fn exec<C: Command>(fd: RawFd, cmd: C) -> Result<C::Resp> {
    exec_init(fd, cmd, C::Resp::zeroed())
}

/// [`exec`] of a payload filled in place by `fill` (from all zeroes): a
/// large payload (addresses) is built where it is written from, not
/// copied into the command buffer.
pub fn exec_with<C: Command>(fd: RawFd, fill: impl FnOnce(&mut C)) -> Result<C::Resp> {
    let mut resp = C::Resp::zeroed();
    let mut buf = CmdBuf::<C> {
        hdr: Header { cmd: C::OP, inlen: std::mem::size_of::<C>() as u16, out: std::mem::size_of::<C::Resp>() as u16 },
        payload: C::zeroed(),
    };
    fill(&mut buf.payload);
    buf.payload.set_response(&mut resp as *mut C::Resp as u64);
    write_buf(fd, &buf)?;
    Ok(resp)
}

/// [`exec`] with a response buffer filled with `resp` first (fields an
/// older kernel does not write keep that value).
pub fn exec_init<C: Command>(fd: RawFd, cmd: C, mut resp: C::Resp) -> Result<C::Resp> {
    exec_into(fd, cmd, &mut resp)?;
    Ok(resp)
}

/// [`exec`] into the caller's response buffer (large responses are not
/// copied back through the stack).
pub fn exec_into<C: Command>(fd: RawFd, mut cmd: C, resp: &mut C::Resp) -> Result<()> {
    cmd.set_response(resp as *mut C::Resp as u64);
    send(fd, C::OP, cmd, std::mem::size_of::<C::Resp>())
}

/// Tell valgrind's memcheck (when the process runs under it) that the
/// kernel wrote `len` bytes at `p`: a response written through the address
/// in a command's payload is invisible to valgrind, which would otherwise
/// see it as uninitialised (upstream marks its responses the same way).
/// Outside valgrind a client request is a no-op sequence of rotations that
/// answers 0; memcheck answers -1. The first answer decides whether later
/// calls ask at all (other tools, and plain runs, stop asking).
#[inline(always)]
pub fn kernel_wrote(p: *const u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::sync::atomic::{AtomicU8, Ordering};
        /// 0: not asked yet, 1: memcheck, 2: not memcheck.
        static MEMCHECK: AtomicU8 = AtomicU8::new(0);
        let state = MEMCHECK.load(Ordering::Relaxed);
        if state == 2 {
            return;
        }
        // VG_USERREQ__MAKE_MEM_DEFINED ('M','C' << 16 | 2), address, length.
        let args: [u64; 6] = [0x4d43_0002, p as u64, len as u64, 0, 0, 0];
        let answer: u64;
        // SAFETY: valgrind's client-request sequence: four rotations of rdi
        // by 128 bits in all (rdi is unchanged) and an exchange of rbx with
        // itself; valgrind reads the arguments at rax and answers in rdx.
        unsafe {
            std::arch::asm!(
                "rol rdi, 3", "rol rdi, 13", "rol rdi, 61", "rol rdi, 51", "xchg rbx, rbx",
                in("rax") args.as_ptr(),
                inout("rdx") 0u64 => answer,
                options(nostack),
            )
        };
        if state == 0 {
            MEMCHECK.store(if answer != 0 { 1 } else { 2 }, Ordering::Relaxed);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, len);
}

/// A response buffer the library does not zero, as its pointer: on
/// architectures without a valgrind client request here
/// ([`kernel_wrote`]) it is zeroed after all, so that valgrind has nothing
/// to report there either. Called before the caller sets the fields the
/// kernel might not write.
pub fn unzeroed<T: Plain>(resp: &mut std::mem::MaybeUninit<T>) -> *mut T {
    if cfg!(not(target_arch = "x86_64")) {
        // SAFETY: our buffer; all-zero is a valid response (Plain).
        unsafe { resp.as_mut_ptr().write_bytes(0, 1) };
    }
    resp.as_mut_ptr()
}

/// [`exec_into`] for a response buffer the library does not zero first
/// ([`unzeroed`]): the caller sets beforehand whatever part the kernel
/// might not write, and may treat the buffer as initialised only after
/// success (see `ucma::get_event` and `ucma::query_addr`).
pub fn exec_uninit<C: Command>(fd: RawFd, mut cmd: C, resp: &mut std::mem::MaybeUninit<C::Resp>) -> Result<()> {
    cmd.set_response(resp.as_mut_ptr() as u64);
    send(fd, C::OP, cmd, std::mem::size_of::<C::Resp>())
}

/// Larger responses than a payload names (QUERY of IB service records):
/// write `cmd` with `out` bytes of response room at the address it holds.
pub fn write_cmd<P: Plain>(fd: RawFd, op: u32, payload: &P, out: usize) -> Result<()> {
    send(fd, op, *payload, out)
}

/// Write the header and `payload` (moved into the buffer, not copied
/// again).
#[inline(always)]
fn send<P: Plain>(fd: RawFd, op: u32, payload: P, out: usize) -> Result<()> {
    let buf = CmdBuf::<P> { hdr: Header { cmd: op, inlen: std::mem::size_of::<P>() as u16, out: out as u16 }, payload };
    write_buf(fd, &buf)
}

/// Write a whole command buffer.
#[inline(always)]
fn write_buf<P: Plain>(fd: RawFd, buf: &CmdBuf<P>) -> Result<()> {
    let len = std::mem::size_of_val(buf);
    // SAFETY: buf is a plain C struct of len bytes; the kernel writes only
    // into response buffers that the payload names and that outlive the call.
    let n = unsafe { libc::write(fd, buf as *const _ as *const libc::c_void, len) };
    if n < 0 {
        return Err(Error::last_os());
    }
    if n as usize != len {
        return Err(Error::Errno(libc::ENODATA));
    }
    Ok(())
}

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

/// Declare command payloads: `Type = NUMBER => Response` (with a
/// `response` field) or `Type = NUMBER` (none).
macro_rules! commands {
    ($($t:ident = $op:expr $(=> $resp:ty)?;)*) => {$(
        // SAFETY: every payload is a repr(C) struct of integers and arrays.
        unsafe impl Plain for $t {}
        impl Command for $t {
            const OP: u32 = $op;
            commands!(@resp $($resp)?);
        }
    )*};
    (@resp) => { type Resp = NoResp; };
    (@resp $resp:ty) => {
        type Resp = $resp;
        fn set_response(&mut self, addr: u64) { self.response = addr; }
    };
}

commands! {
    CreateId = 0 => IdResp;
    DestroyId = 1 => EventsReported;
    ResolveRoute = 4;
    Connect = 6;
    Listen = 7;
    Accept = 8;
    Reject = 9;
    Disconnect = 10;
    InitQpAttr = 11 => crate::abi::ib_uverbs_qp_attr;
    GetEvent = 12 => EventResp;
    SetOption = 14;
    Notify = 15;
    LeaveMcast = 17 => EventsReported;
    MigrateId = 18 => EventsReported;
    QueryAddr = 19 => QueryAddrResp;
    QueryPath = 19 => QueryPathResp;
    QueryGid = 19 => QueryAddrResp;
    Bind = 20;
    ResolveAddr = 21;
    JoinMcast = 22 => IdResp;
    ResolveIbService = 23;
    WriteCmEvent = 24;
}

// SAFETY: repr(C) structs of integers and arrays.
unsafe impl Plain for NoResp {}
// SAFETY: as above.
unsafe impl Plain for IdResp {}
// SAFETY: as above.
unsafe impl Plain for EventsReported {}
// SAFETY: as above.
unsafe impl Plain for QueryAddrResp {}
// SAFETY: as above.
unsafe impl Plain for QueryPathResp {}
// SAFETY: as above.
unsafe impl Plain for EventResp {}
// SAFETY: as above.
unsafe impl Plain for ConnParam {}
// SAFETY: as above.
unsafe impl Plain for QueryIbService {}
// SAFETY: a repr(C) struct of integers and arrays (the kernel's QP attributes).
unsafe impl Plain for crate::abi::ib_uverbs_qp_attr {}

/// QUERY options.
pub(crate) const QUERY: u32 = 19;
pub(crate) const QUERY_ADDR: u32 = 0;
pub(crate) const QUERY_PATH: u32 = 1;
pub(crate) const QUERY_GID: u32 = 2;
pub(crate) const QUERY_IB_SERVICE: u32 = 3;

pub(crate) const IB_SERVICE_FLAG_ID: u32 = 1;
pub(crate) const IB_SERVICE_FLAG_NAME: u32 = 2;

/// Longest private data the kernel carries.
pub(crate) const MAX_PRIVATE_DATA: usize = 256;

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

/// DESTROY_ID payload.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DestroyId {
    pub response: u64,
    pub id: u32,
    pub reserved: u32,
}

/// LEAVE_MCAST payload (the membership's handle in `id`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct LeaveMcast {
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

/// QUERY payloads: one type per option (they differ in the response).
macro_rules! query {
    ($($t:ident = $opt:ident;)*) => {$(
        #[repr(C)]
        #[derive(Clone, Copy, Debug)]
        pub struct $t {
            pub response: u64,
            pub id: u32,
            pub option: u32,
        }
        impl $t {
            pub fn new(id: u32) -> Self {
                $t { response: 0, id, option: $opt }
            }
        }
    )*};
}
query! {
    QueryAddr = QUERY_ADDR;
    QueryPath = QUERY_PATH;
    QueryGid = QUERY_GID;
    QueryIbService = QUERY_IB_SERVICE;
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
        assert_eq!(size_of::<QueryAddr>(), 16);
        assert_eq!(size_of::<LeaveMcast>(), 16);
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
        assert_eq!(size_of::<crate::abi::ib_uverbs_qp_attr>(), 144);
        assert_eq!(size_of::<JoinMcast>(), 152);
        assert_eq!(offset_of!(JoinMcast, addr), 24);
    }
}
