//! System calls the library makes for its own descriptors, issued directly
//! rather than through libc's wrappers, so that a library interposing
//! those wrappers in the same process (a socket preload such as
//! librspreload, which turns epoll instances into repoll instances and
//! sockets into rsockets) never sees the library's own epoll sets, polls
//! and sockets. Same arguments, results and errno as the libc functions.

use libc::{c_int, c_long, epoll_event, pollfd};

fn ret(r: c_long) -> c_int {
    r as c_int
}

/// epoll_create1(2).
pub fn epoll_create1(flags: c_int) -> c_int {
    // SAFETY: a system call without pointers.
    ret(unsafe { libc::syscall(libc::SYS_epoll_create1, flags) })
}

/// epoll_ctl(2).
///
/// # Safety
/// `ev` is NULL (only for EPOLL_CTL_DEL) or a valid event.
pub unsafe fn epoll_ctl(ep: c_int, op: c_int, fd: c_int, ev: *mut epoll_event) -> c_int {
    // SAFETY: as the caller promises.
    ret(unsafe { libc::syscall(libc::SYS_epoll_ctl, ep, op, fd, ev) })
}

/// epoll_wait(2) (as epoll_pwait without a signal mask).
///
/// # Safety
/// `evs` has room for `n` events.
pub unsafe fn epoll_wait(ep: c_int, evs: *mut epoll_event, n: c_int, timeout: c_int) -> c_int {
    // SAFETY: as the caller promises; no signal mask.
    ret(unsafe { libc::syscall(libc::SYS_epoll_pwait, ep, evs, n, timeout, std::ptr::null::<u8>(), 8usize) })
}

/// poll(2) (as ppoll without a signal mask).
///
/// # Safety
/// `fds` holds `n` valid entries.
pub unsafe fn poll(fds: *mut pollfd, n: libc::nfds_t, timeout: c_int) -> c_int {
    let ts;
    let tsp = if timeout < 0 {
        std::ptr::null()
    } else {
        ts = libc::timespec {
            tv_sec: (timeout / 1000) as libc::time_t,
            tv_nsec: ((timeout % 1000) * 1_000_000) as c_long,
        };
        &ts as *const libc::timespec
    };
    // SAFETY: as the caller promises; no signal mask.
    ret(unsafe { libc::syscall(libc::SYS_ppoll, fds, n, tsp, std::ptr::null::<u8>(), 8usize) })
}

/// socket(2).
pub fn socket(domain: c_int, ty: c_int, protocol: c_int) -> c_int {
    // SAFETY: a system call without pointers.
    ret(unsafe { libc::syscall(libc::SYS_socket, domain, ty, protocol) })
}

/// connect(2).
///
/// # Safety
/// `addr` points to `len` readable bytes.
pub unsafe fn connect(fd: c_int, addr: *const libc::sockaddr, len: libc::socklen_t) -> c_int {
    // SAFETY: as the caller promises.
    ret(unsafe { libc::syscall(libc::SYS_connect, fd, addr, len) })
}

/// close(2).
pub fn close(fd: c_int) -> c_int {
    // SAFETY: a system call without pointers (closing a descriptor the
    // caller owns).
    ret(unsafe { libc::syscall(libc::SYS_close, fd) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_as_libc() {
        let ep = epoll_create1(libc::EPOLL_CLOEXEC);
        assert!(ep >= 0);
        let mut p = [0; 2];
        // SAFETY: plain calls on our descriptors.
        unsafe {
            assert_eq!(libc::pipe(p.as_mut_ptr()), 0);
            let mut ev = epoll_event { events: libc::EPOLLIN as u32, u64: 3 };
            assert_eq!(epoll_ctl(ep, libc::EPOLL_CTL_ADD, p[0], &mut ev), 0);
            assert_eq!(epoll_ctl(ep, libc::EPOLL_CTL_ADD, p[0], &mut ev), -1);
            assert_eq!(crate::error::errno(), libc::EEXIST);
            let mut out = [epoll_event { events: 0, u64: 0 }; 2];
            assert_eq!(epoll_wait(ep, out.as_mut_ptr(), 2, 0), 0);
            let mut f = [pollfd { fd: p[0], events: libc::POLLIN, revents: 0 }];
            let t0 = std::time::Instant::now();
            assert_eq!(poll(f.as_mut_ptr(), 1, 30), 0);
            assert!(t0.elapsed() >= std::time::Duration::from_millis(25));
            assert_eq!(libc::write(p[1], b"x".as_ptr() as *const _, 1), 1);
            assert_eq!(epoll_wait(ep, out.as_mut_ptr(), 2, 1000), 1);
            assert_eq!(poll(f.as_mut_ptr(), 1, -1), 1);
            let s = socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
            assert!(s >= 0);
            for fd in [ep, p[0], p[1], s] {
                libc::close(fd);
            }
        }
    }
}
