//! rpoll(3), rselect(3): rsockets and ordinary descriptors mixed.

use super::guard;
use crate::error::Error;
use crate::rs::poll;
use libc::{c_int, fd_set, nfds_t, pollfd, timeval};

/// # Safety
/// As poll(2): `fds` holds `nfds` entries.
#[no_mangle]
#[link_section = ".text.sorted.rdmacm.2"]
pub unsafe extern "C" fn rpoll(fds: *mut pollfd, nfds: nfds_t, timeout: c_int) -> c_int {
    guard(|| {
        if fds.is_null() && nfds > 0 {
            return Err(Error::Errno(libc::EFAULT));
        }
        if nfds > i32::MAX as nfds_t {
            return Err(Error::INVAL);
        }
        let set: &mut [pollfd] = if nfds == 0 {
            &mut []
        } else {
            // SAFETY: as the caller promises.
            unsafe { std::slice::from_raw_parts_mut(fds, nfds as usize) }
        };
        poll::poll(set, timeout)
    })
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
    guard(|| {
        // SAFETY: NULL or valid, as the caller promises.
        let ms = match unsafe { timeout.as_ref() } {
            None => -1,
            Some(t) => (t.tv_sec.saturating_mul(1000) + t.tv_usec / 1000).clamp(0, i32::MAX as i64) as c_int,
        };
        // SAFETY: as the caller promises.
        unsafe { poll::select(nfds, readfds, writefds, exceptfds, ms) }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_descriptors_behave_as_poll_and_select() {
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
            assert!(libc::FD_ISSET(p[0], &set));
            let mut bad = [pollfd { fd: -1, events: libc::POLLIN, revents: 0 }];
            assert_eq!(rpoll(bad.as_mut_ptr(), 1, 0), 0);
            assert_eq!(rpoll(std::ptr::null_mut(), 1, 0), -1);
            assert_eq!(crate::error::errno(), libc::EFAULT);
            // A timeout with nothing ready.
            let mut fds = [pollfd { fd: p[1], events: libc::POLLIN, revents: 0 }];
            let t0 = std::time::Instant::now();
            assert_eq!(rpoll(fds.as_mut_ptr(), 1, 50), 0);
            assert!(t0.elapsed() >= std::time::Duration::from_millis(45));
            libc::close(p[0]);
            libc::close(p[1]);
        }
    }
}
