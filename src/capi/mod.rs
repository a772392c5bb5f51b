//! The exported C functions. Every one of them goes through [`guard`]:
//! no panic crosses `extern "C"`, failures become upstream's return value
//! plus errno, and a successful call leaves errno exactly as it found it
//! (upstream clobbers it; we do not).

use crate::error::{errno, set_errno, Error};
use libc::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

pub mod addrinfo;
pub mod channel;
pub mod devices;
pub mod id;

/// Run `f` behind the C boundary for functions returning `int`
/// (0 or a value on success, -1/errno or a raw EAI code on failure).
pub(crate) fn guard(f: impl FnOnce() -> crate::error::Result<c_int>) -> c_int {
    let saved = errno();
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => {
            set_errno(saved);
            v
        }
        Ok(Err(Error::Errno(e))) => {
            set_errno(e);
            -1
        }
        Ok(Err(Error::Eai(code))) => code,
        Err(_) => {
            set_errno(libc::EIO);
            -1
        }
    }
}

/// Run `f` behind the C boundary for functions returning nothing: errno
/// is restored on success and set on failure (the only way such a function
/// can report one).
pub(crate) fn guard_void(f: impl FnOnce() -> crate::error::Result<()>) {
    let saved = errno();
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => set_errno(saved),
        Ok(Err(Error::Errno(e))) => set_errno(e),
        Ok(Err(Error::Eai(_))) | Err(_) => set_errno(libc::EIO),
    }
}

/// Run `f` behind the C boundary for functions returning a pointer
/// (NULL with errno on failure).
pub(crate) fn guard_ptr<T>(f: impl FnOnce() -> crate::error::Result<*mut T>) -> *mut T {
    let saved = errno();
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(p)) => {
            set_errno(saved);
            p
        }
        Ok(Err(Error::Errno(e))) => {
            set_errno(e);
            std::ptr::null_mut()
        }
        Ok(Err(Error::Eai(_))) | Err(_) => {
            set_errno(libc::EIO);
            std::ptr::null_mut()
        }
    }
}

/// Run `f` for functions returning a plain value, `fallback` on failure
/// (errno set).
pub(crate) fn guard_val<T: Copy>(fallback: T, f: impl FnOnce() -> crate::error::Result<T>) -> T {
    let saved = errno();
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => {
            set_errno(saved);
            v
        }
        Ok(Err(Error::Errno(e))) => {
            set_errno(e);
            fallback
        }
        Ok(Err(Error::Eai(_))) | Err(_) => {
            set_errno(libc::EIO);
            fallback
        }
    }
}
