//! The exported C functions. Every one of them goes through [`guard`]:
//! no panic crosses `extern "C"`, failures become upstream's return value
//! plus errno, and a successful call leaves errno exactly as it found it
//! (upstream clobbers it; we do not).

use crate::error::{errno, set_errno, Error};
use libc::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

pub mod addrinfo;

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

/// Run `f` behind the C boundary for functions returning nothing.
pub(crate) fn guard_void(f: impl FnOnce()) {
    let saved = errno();
    if catch_unwind(AssertUnwindSafe(f)).is_ok() {
        set_errno(saved);
    }
}
