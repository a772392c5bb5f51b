//! The exported C functions. Every one of them goes through [`guard_val`]
//! (or a shorthand for it): no panic crosses `extern "C"`, failures become
//! upstream's return value plus errno, and a successful call leaves errno
//! exactly as it found it (upstream clobbers it; we do not).

use crate::error::{errno, set_errno, Error};
use libc::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

pub mod addrinfo;
pub mod channel;
pub mod conn;
pub mod mcast;
pub mod poll;
pub mod qp;
pub mod devices;
pub mod id;

/// The one C boundary: run `f`; on success restore errno and return its
/// value; on failure (a panic is EIO) let `on_err` decide what C sees.
fn boundary<T>(f: impl FnOnce() -> crate::error::Result<T>, on_err: impl FnOnce(Error) -> T) -> T {
    let saved = errno();
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => {
            set_errno(saved);
            v
        }
        Ok(Err(e)) => on_err(e),
        Err(_) => on_err(Error::Errno(libc::EIO)),
    }
}

/// Set errno for a failure and return the function's failure value.
fn fail<T>(e: Error, value: T) -> T {
    set_errno(match e {
        Error::Errno(n) => n,
        Error::Eai(_) => libc::EIO,
    });
    value
}

/// `int` functions: -1 with errno, or a raw EAI code (rdma_getaddrinfo's
/// convention, errno untouched).
pub(crate) fn guard(f: impl FnOnce() -> crate::error::Result<c_int>) -> c_int {
    boundary(f, |e| match e {
        Error::Eai(code) => code,
        e => fail(e, -1),
    })
}

/// Functions returning nothing: errno is the only report of a failure.
pub(crate) fn guard_void(f: impl FnOnce() -> crate::error::Result<()>) {
    boundary(f, |e| fail(e, ()))
}

/// Pointer functions: NULL with errno.
pub(crate) fn guard_ptr<T>(f: impl FnOnce() -> crate::error::Result<*mut T>) -> *mut T {
    boundary(f, |e| fail(e, std::ptr::null_mut()))
}

/// Functions returning a plain value: `fallback` with errno.
pub(crate) fn guard_val<T>(fallback: T, f: impl FnOnce() -> crate::error::Result<T>) -> T {
    boundary(f, |e| fail(e, fallback))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_is_kept_on_success_and_set_on_failure() {
        set_errno(1234);
        assert_eq!(guard(|| Ok(0)), 0);
        assert_eq!(errno(), 1234);
        assert_eq!(guard(|| Err(Error::Errno(libc::EINVAL))), -1);
        assert_eq!(errno(), libc::EINVAL);
        set_errno(77);
        assert_eq!(guard(|| Err(Error::Eai(-2))), -2);
        assert_eq!(errno(), 77, "EAI codes leave errno alone");
        assert!(guard_ptr::<u8>(|| Err(Error::Eai(-2))).is_null());
        assert_eq!(errno(), libc::EIO);
    }

    #[test]
    fn panics_stop_at_the_boundary() {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        assert_eq!(guard(|| panic!("boom")), -1);
        assert_eq!(errno(), libc::EIO);
        assert!(guard_ptr::<u8>(|| panic!("boom")).is_null());
        assert_eq!(guard_val(7, || panic!("boom")), 7);
        guard_void(|| panic!("boom"));
        std::panic::set_hook(prev);
    }
}
