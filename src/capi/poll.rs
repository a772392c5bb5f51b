//! rpoll(3), rselect(3) without rsockets.
//!
//! rdma-core's example programs (rping, ucmatose, udaddy, cmtime, mckey)
//! wait on event-channel fds with `rpoll`, so a librdmacm without it cannot
//! even be loaded by them. This library does not implement rsockets yet:
//! no file descriptor in the process can be one of *its* rsockets, and on
//! ordinary descriptors upstream's rpoll/rselect behave as poll/select.
//! Under LD_PRELOAD another librdmacm is loaded behind this one and may own
//! rsockets (the program's `rsocket` calls still reach it), so its rpoll and
//! rselect are used when present.

use libc::{c_int, fd_set, nfds_t, pollfd, timeval};
use std::sync::OnceLock;

type RpollFn = unsafe extern "C" fn(*mut pollfd, nfds_t, c_int) -> c_int;
type RselectFn = unsafe extern "C" fn(c_int, *mut fd_set, *mut fd_set, *mut fd_set, *mut timeval) -> c_int;

/// The next definition of `name@RDMACM_1.0` after this library, if any.
fn next(name: &'static std::ffi::CStr) -> usize {
    // SAFETY: NUL-terminated names; dlvsym only looks the symbol up.
    let p = unsafe { libc::dlvsym(libc::RTLD_NEXT, name.as_ptr(), cstr!("RDMACM_1.0").as_ptr()) };
    p as usize
}

fn next_rpoll() -> Option<RpollFn> {
    static NEXT: OnceLock<usize> = OnceLock::new();
    let p = *NEXT.get_or_init(|| next(cstr!("rpoll")));
    // SAFETY: a non-NULL rpoll of another librdmacm has this signature.
    (p != 0 && p != rpoll as *const () as usize).then(|| unsafe { std::mem::transmute::<usize, RpollFn>(p) })
}

fn next_rselect() -> Option<RselectFn> {
    static NEXT: OnceLock<usize> = OnceLock::new();
    let p = *NEXT.get_or_init(|| next(cstr!("rselect")));
    // SAFETY: as above.
    (p != 0 && p != rselect as *const () as usize).then(|| unsafe { std::mem::transmute::<usize, RselectFn>(p) })
}

/// Failure value and errno for a panic (none is expected here).
fn panicked() -> c_int {
    crate::error::set_errno(libc::EIO);
    -1
}

/// # Safety
/// As poll(2): `fds` holds `nfds` entries.
#[no_mangle]
pub unsafe extern "C" fn rpoll(fds: *mut pollfd, nfds: nfds_t, timeout: c_int) -> c_int {
    // SAFETY: the caller's arguments, passed on unchanged.
    std::panic::catch_unwind(|| unsafe {
        match next_rpoll() {
            Some(f) => f(fds, nfds, timeout),
            None => libc::poll(fds, nfds, timeout),
        }
    })
    .unwrap_or_else(|_| panicked())
}

/// # Safety
/// As select(2): the sets are NULL or valid, `timeout` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn rselect(
    nfds: c_int,
    readfds: *mut fd_set,
    writefds: *mut fd_set,
    exceptfds: *mut fd_set,
    timeout: *mut timeval,
) -> c_int {
    // SAFETY: the caller's arguments, passed on unchanged.
    std::panic::catch_unwind(|| unsafe {
        match next_rselect() {
            Some(f) => f(nfds, readfds, writefds, exceptfds, timeout),
            None => libc::select(nfds, readfds, writefds, exceptfds, timeout),
        }
    })
    .unwrap_or_else(|_| panicked())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rpoll_and_rselect_are_poll_and_select_without_rsockets() {
        let mut p = [0; 2];
        // SAFETY: plain pipe/poll/select calls on our own fds.
        unsafe {
            assert_eq!(libc::pipe(p.as_mut_ptr()), 0);
            let mut fds = [pollfd { fd: p[0], events: libc::POLLIN, revents: 0 }];
            assert_eq!(rpoll(fds.as_mut_ptr(), 1, 0), 0);
            assert_eq!(libc::write(p[1], b"x".as_ptr() as *const _, 1), 1);
            assert_eq!(rpoll(fds.as_mut_ptr(), 1, 100), 1);
            assert_eq!(fds[0].revents & libc::POLLIN, libc::POLLIN);
            let mut set: fd_set = std::mem::zeroed();
            libc::FD_SET(p[0], &mut set);
            let mut tv = timeval { tv_sec: 0, tv_usec: 0 };
            assert_eq!(rselect(p[0] + 1, &mut set, std::ptr::null_mut(), std::ptr::null_mut(), &mut tv), 1);
            let mut bad = [pollfd { fd: -1, events: libc::POLLIN, revents: 0 }];
            assert_eq!(rpoll(bad.as_mut_ptr(), 1, 0), 0);
            assert_eq!(rpoll(std::ptr::null_mut(), 1, 0), -1);
            assert_eq!(crate::error::errno(), libc::EFAULT);
            libc::close(p[0]);
            libc::close(p[1]);
        }
    }
}
