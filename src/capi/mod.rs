//! The exported C functions. Every one of them goes through [`guard_val`]
//! (or a shorthand for it): no panic crosses `extern "C"`, failures become
//! upstream's return value plus errno, and a successful call leaves errno
//! exactly as it found it (upstream clobbers it; we do not).

use crate::error::{errno, set_errno, Error};
use libc::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

pub mod addrinfo;
pub mod channel;
pub mod devices;
pub mod id;

/// The one C boundary: run `f`; on success restore errno and return its
/// value; on failure set errno and return `fallback` — except that a raw
/// `EAI_*` code is returned as it is when `pass_eai` (rdma_getaddrinfo's
/// convention). A panic is EIO.
fn boundary<T>(fallback: T, pass_eai: bool, f: impl FnOnce() -> crate::error::Result<T>) -> T
where
    T: From<i32>,
{
    let saved = errno();
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => {
            set_errno(saved);
            v
        }
        Ok(Err(Error::Eai(code))) if pass_eai => T::from(code),
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

/// `int` functions: -1 with errno, or a raw EAI code.
pub(crate) fn guard(f: impl FnOnce() -> crate::error::Result<c_int>) -> c_int {
    boundary(-1, true, f)
}

/// Functions returning nothing: errno is the only report of a failure.
pub(crate) fn guard_void(f: impl FnOnce() -> crate::error::Result<()>) {
    struct Unit;
    impl From<i32> for Unit {
        fn from(_: i32) -> Self {
            Unit
        }
    }
    boundary(Unit, false, || f().map(|_| Unit));
}

/// Pointer functions: NULL with errno.
pub(crate) fn guard_ptr<T>(f: impl FnOnce() -> crate::error::Result<*mut T>) -> *mut T {
    struct P<T>(*mut T);
    impl<T> From<i32> for P<T> {
        fn from(_: i32) -> Self {
            P(std::ptr::null_mut())
        }
    }
    boundary(P(std::ptr::null_mut()), false, || f().map(P)).0
}

/// Functions returning a plain value: `fallback` with errno.
pub(crate) fn guard_val(fallback: u16, f: impl FnOnce() -> crate::error::Result<u16>) -> u16 {
    struct V(u16);
    impl From<i32> for V {
        fn from(_: i32) -> Self {
            V(0)
        }
    }
    boundary(V(fallback), false, || f().map(V)).0
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
