//! Socket addresses as the library sees them.
//!
//! [`RawAddr`] is a bounded, owned copy of a `struct sockaddr` of any family
//! (at most `sizeof(struct sockaddr_storage)` bytes): every address that
//! enters the library from a caller, from the kernel or from glibc is copied
//! into one, so no copy is ever longer than that, whatever length a caller
//! claims.

use crate::abi::{sockaddr_ib, AF_IB};
use crate::error::{Error, Result};
use libc::{sockaddr, sockaddr_in, sockaddr_in6, socklen_t, AF_INET, AF_INET6};
use std::mem::{size_of, MaybeUninit};

/// Largest address the library accepts (`sizeof(struct sockaddr_storage)`).
pub(crate) const MAX_ADDR_LEN: usize = 128;

/// An owned socket address of `len` bytes (only those are initialised:
/// the rest of the buffer is never read, so it is not zeroed either).
#[derive(Clone, Copy)]
pub struct RawAddr {
    bytes: [MaybeUninit<u8>; MAX_ADDR_LEN],
    len: usize,
}

/// An empty buffer of `len` (at most MAX_ADDR_LEN) bytes to fill.
fn buffer(len: usize) -> RawAddr {
    debug_assert!(len <= MAX_ADDR_LEN);
    RawAddr { bytes: [MaybeUninit::uninit(); MAX_ADDR_LEN], len }
}

impl std::fmt::Debug for RawAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RawAddr(family {}, {:02x?})", self.family(), self.as_bytes())
    }
}

impl PartialEq for RawAddr {
    fn eq(&self, o: &Self) -> bool {
        self.as_bytes() == o.as_bytes()
    }
}

impl RawAddr {
    /// Copy `len` bytes from a C pointer. NULL with a non-zero length, and
    /// lengths beyond `sockaddr_storage`, are refused with EINVAL.
    ///
    /// # Safety
    /// `ptr` must be readable for `len` bytes when `len <= MAX_ADDR_LEN`.
    pub unsafe fn from_ptr(ptr: *const sockaddr, len: socklen_t) -> Result<RawAddr> {
        let len = len as usize;
        if ptr.is_null() || len > MAX_ADDR_LEN {
            return Err(Error::INVAL);
        }
        let mut a = buffer(len);
        // SAFETY: as the caller promises; len fits our buffer.
        unsafe { std::ptr::copy_nonoverlapping(ptr as *const u8, a.bytes.as_mut_ptr() as *mut u8, len) };
        Ok(a)
    }

    /// The first `len` bytes of `bytes` (a kernel-reported address of
    /// `len` bytes), bounded by both.
    pub fn from_bytes(bytes: &[u8], len: usize) -> RawAddr {
        let len = len.min(bytes.len()).min(MAX_ADDR_LEN);
        let mut a = buffer(len);
        // SAFETY: len bytes fit both.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), a.bytes.as_mut_ptr() as *mut u8, len) };
        a
    }

    fn from_pod<T: Copy>(v: &T) -> RawAddr {
        let len = size_of::<T>();
        debug_assert!(len <= MAX_ADDR_LEN);
        let mut a = buffer(len);
        // SAFETY: T is a plain C struct of `len` bytes.
        unsafe { std::ptr::copy_nonoverlapping(v as *const T as *const u8, a.bytes.as_mut_ptr() as *mut u8, len) };
        a
    }

    pub fn from_in(v: &sockaddr_in) -> RawAddr {
        Self::from_pod(v)
    }
    pub fn from_in6(v: &sockaddr_in6) -> RawAddr {
        Self::from_pod(v)
    }
    pub fn from_ib(v: &sockaddr_ib) -> RawAddr {
        Self::from_pod(v)
    }

    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: the first `len` bytes are initialised (every constructor
        // writes them) and len <= MAX_ADDR_LEN.
        unsafe { std::slice::from_raw_parts(self.bytes.as_ptr() as *const u8, self.len) }
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// `sa_family`, or -1 when the address is too short to have one.
    pub fn family(&self) -> i32 {
        if self.len < 2 {
            return -1;
        }
        let b = self.as_bytes();
        u16::from_ne_bytes([b[0], b[1]]) as i32
    }

    fn read<T: Copy>(&self) -> Option<T> {
        if self.len < size_of::<T>() {
            return None;
        }
        // SAFETY: at least size_of::<T>() initialised bytes; T is plain data.
        Some(unsafe { std::ptr::read_unaligned(self.bytes.as_ptr() as *const T) })
    }

    pub fn as_in(&self) -> Option<sockaddr_in> {
        (self.family() == AF_INET).then(|| self.read()).flatten()
    }
    pub fn as_in6(&self) -> Option<sockaddr_in6> {
        (self.family() == AF_INET6).then(|| self.read()).flatten()
    }
    pub fn as_ib(&self) -> Option<sockaddr_ib> {
        (self.family() == AF_IB).then(|| self.read()).flatten()
    }

    /// The port in network byte order, as upstream's `ucma_get_port`:
    /// sin/sin6 port, the low 16 bits of an AF_IB service id, else 0.
    pub fn port_be(&self) -> u16 {
        if let Some(s) = self.as_in() {
            s.sin_port
        } else if let Some(s) = self.as_in6() {
            s.sin6_port
        } else if let Some(s) = self.as_ib() {
            ((u64::from_be(s.sib_sid) & 0xffff) as u16).to_be()
        } else {
            0
        }
    }

    /// Copy into a fresh `malloc` block, as the C API hands addresses out.
    pub fn to_malloc(&self) -> Result<*mut sockaddr> {
        Ok(crate::cmem::copy_out(self.as_bytes())?.as_ptr() as *mut sockaddr)
    }
}
