//! The kernel's RDMA CM device, `/dev/infiniband/rdma_cm` (reference §3).
//!
//! Every command is one `write()` of an 8-byte header and a typed payload;
//! responses are copied by the kernel into a buffer whose address travels
//! in the payload.

pub mod cmd;

use crate::error::{Error, Result};
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Path of the ucma character device.
pub const DEVICE_PATH: &str = "/dev/infiniband/rdma_cm";

/// One open of the ucma device (one kernel "file": ids and events live on it).
#[derive(Debug)]
pub struct Device {
    fd: OwnedFd,
}

impl Device {
    /// Open the device `O_RDWR | O_CLOEXEC`; the open's errno on failure.
    pub fn open() -> Result<Device> {
        let path = CString::new(DEVICE_PATH).expect("no NUL in path");
        // SAFETY: valid C string; the fd is owned by OwnedFd from here on.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(Error::last_os());
        }
        // SAFETY: fd is a fresh descriptor we own.
        Ok(Device { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Write one command (`cmd` number, payload). A short write is ENODATA,
    /// as upstream reports it; a failed one carries the kernel's errno.
    pub fn write_cmd<P: Copy>(&self, cmd: u32, payload: &P, out: u16) -> Result<()> {
        let mut buf = cmd::CmdBuf::<P> { hdr: cmd::Header { cmd, inlen: std::mem::size_of::<P>() as u16, out }, payload: *payload };
        let len = std::mem::size_of_val(&buf);
        // SAFETY: buf is a plain C struct of len bytes.
        let n = unsafe { libc::write(self.fd(), &mut buf as *mut _ as *const libc::c_void, len) };
        if n < 0 {
            return Err(Error::last_os());
        }
        if n as usize != len {
            return Err(Error::Errno(libc::ENODATA));
        }
        Ok(())
    }

    /// CREATE_ID: returns the kernel handle of a new id.
    pub fn create_id(&self, uid: u64, ps: u16, qp_type: u8) -> Result<u32> {
        let mut resp = cmd::CreateIdResp::default();
        let c = cmd::CreateId { uid, response: &mut resp as *mut _ as u64, ps, qp_type, reserved: [0; 5] };
        self.write_cmd(cmd::CREATE_ID, &c, std::mem::size_of::<cmd::CreateIdResp>() as u16)?;
        Ok(resp.id)
    }

    /// DESTROY_ID: returns how many events the kernel reported for the id.
    pub fn destroy_id(&self, id: u32) -> Result<u32> {
        let mut resp = cmd::DestroyIdResp::default();
        let c = cmd::DestroyId { response: &mut resp as *mut _ as u64, id, reserved: 0 };
        self.write_cmd(cmd::DESTROY_ID, &c, std::mem::size_of::<cmd::DestroyIdResp>() as u16)?;
        Ok(resp.events_reported)
    }

    /// BIND an id to an address of `addr.len()` bytes.
    pub fn bind(&self, id: u32, addr: &crate::addr::RawAddr) -> Result<()> {
        let mut c = cmd::Bind { id, addr_size: addr.len() as u16, reserved: 0, addr: [0; 128] };
        c.addr[..addr.len()].copy_from_slice(addr.as_bytes());
        self.write_cmd(cmd::BIND, &c, 0)
    }
}

/// Whether the kernel accepts AF_IB addresses (upstream's `af_ib_support`),
/// probed once, lazily: bind a throw-away PS_IB id to the AF_IB wildcard.
pub fn af_ib_support() -> bool {
    static SUPPORT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SUPPORT.get_or_init(|| {
        let Ok(dev) = Device::open() else { return false };
        let Ok(id) = dev.create_id(0, crate::abi::RDMA_PS_IB as u16, crate::abi::IBV_QPT_RC as u8) else {
            return false;
        };
        let mut sib = crate::abi::sockaddr_ib { sib_family: crate::abi::AF_IB as u16, ..Default::default() };
        sib.sib_sid = crate::abi::RDMA_IB_IP_PS_TCP.to_be();
        sib.sib_sid_mask = crate::abi::RDMA_IB_IP_PS_MASK.to_be();
        let ok = dev.bind(id, &crate::addr::RawAddr::from_ib(&sib)).is_ok();
        let _ = dev.destroy_id(id);
        ok
    })
}
