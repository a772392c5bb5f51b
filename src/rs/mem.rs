//! Registered memory of a connection: page-aligned anonymous mappings (so
//! that libibverbs' fork protection cannot touch neighbours), registered
//! with the connection's PD. The peer writes into some of them with RDMA:
//! their contents are read only through raw copies, never through Rust
//! references, and are untrusted.

use crate::abi::{ibv_mr, ibv_pd};
use crate::error::{errno, Error, Result};
use crate::verbs;
use std::ptr::NonNull;

pub struct Region {
    ptr: NonNull<u8>,
    len: usize,
    mr: NonNull<ibv_mr>,
}

// SAFETY: the mapping and the MR are owned by this value; libibverbs
// objects may be used from any thread.
unsafe impl Send for Region {}
// SAFETY: as above; access goes through raw copies.
unsafe impl Sync for Region {}

fn page_round(n: usize) -> usize {
    // SAFETY: sysconf cannot fail for _SC_PAGESIZE.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
    n.div_ceil(page) * page
}

impl Region {
    /// `len` bytes (at least one), zeroed, registered on `pd` with
    /// `access` (IBV_ACCESS_* bits).
    ///
    /// # Safety
    /// `pd` is a live protection domain.
    pub unsafe fn new(pd: *mut ibv_pd, len: usize, access: i32) -> Result<Region> {
        let map_len = page_round(len.max(1));
        // SAFETY: an anonymous private mapping; checked below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::NOMEM);
        }
        let ptr = NonNull::new(p as *mut u8).ok_or(Error::NOMEM)?;
        // SAFETY: our mapping of map_len bytes; pd is a live PD.
        let mr = unsafe { verbs::rdmacm_shim_reg_mr(pd, p, map_len, access) };
        let Some(mr) = NonNull::new(mr) else {
            let e = match errno() {
                0 => libc::ENOMEM,
                e => e,
            };
            // SAFETY: our mapping.
            unsafe { libc::munmap(p, map_len) };
            return Err(Error::Errno(e));
        };
        Ok(Region { ptr, len: map_len, mr })
    }

    pub fn addr(&self) -> u64 {
        self.ptr.as_ptr() as u64
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn lkey(&self) -> u32 {
        // SAFETY: our live MR.
        unsafe { (*self.mr.as_ptr()).lkey }
    }

    pub fn rkey(&self) -> u32 {
        // SAFETY: our live MR.
        unsafe { (*self.mr.as_ptr()).rkey }
    }

    /// Copy `dst.len()` bytes from offset `off` (bounds-checked).
    pub fn read(&self, off: usize, dst: &mut [u8]) {
        assert!(off <= self.len && dst.len() <= self.len - off, "region read out of bounds");
        // SAFETY: in bounds; the source may change under us (the NIC), which
        // a byte copy tolerates.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.as_ptr().add(off), dst.as_mut_ptr(), dst.len()) };
    }

    /// Copy `src` to offset `off` (bounds-checked).
    pub fn write(&self, off: usize, src: &[u8]) {
        assert!(off <= self.len && src.len() <= self.len - off, "region write out of bounds");
        // SAFETY: in bounds; nobody holds a Rust reference into the region.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.as_ptr().add(off), src.len()) };
    }

    /// Copy `len` bytes from the caller's memory at `src` to offset `off`.
    ///
    /// # Safety
    /// `src` is readable for `len` bytes.
    pub unsafe fn write_raw(&self, off: usize, src: *const u8, len: usize) {
        assert!(off <= self.len && len <= self.len - off, "region write out of bounds");
        // SAFETY: in bounds; src as the caller promises.
        unsafe { std::ptr::copy_nonoverlapping(src, self.ptr.as_ptr().add(off), len) };
    }

    /// Copy `len` bytes at offset `off` to the caller's memory at `dst`.
    ///
    /// # Safety
    /// `dst` is writable for `len` bytes.
    pub unsafe fn read_raw(&self, off: usize, dst: *mut u8, len: usize) {
        assert!(off <= self.len && len <= self.len - off, "region read out of bounds");
        // SAFETY: in bounds; dst as the caller promises.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.as_ptr().add(off), dst, len) };
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: our MR and mapping; the QP using them is gone or in error
        // (the owner drops regions after the QP).
        unsafe {
            verbs::ibv_dereg_mr(self.mr.as_ptr());
            libc::munmap(self.ptr.as_ptr() as *mut libc::c_void, self.len);
        }
    }
}

/// A registered application buffer.
pub struct Mapping {
    pub mr: *mut ibv_mr,
    pub offset: u64,
    /// Slot in the peer's table (None: local only, PROT_NONE).
    pub slot: Option<u32>,
    /// Still to be sent to the peer.
    pub pending: bool,
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: our MR.
        unsafe { verbs::ibv_dereg_mr(self.mr) };
    }
}

// SAFETY: a libibverbs object, used under the socket's mutex.
unsafe impl Send for Mapping {}

impl Mapping {
    pub fn addr(&self) -> u64 {
        // SAFETY: our live MR.
        unsafe { (*self.mr).addr as u64 }
    }
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        // SAFETY: as above.
        unsafe { (*self.mr).length }
    }
    pub fn rkey(&self) -> u32 {
        // SAFETY: as above.
        unsafe { (*self.mr).rkey }
    }
}
