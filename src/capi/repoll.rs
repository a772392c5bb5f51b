//! repoll(3) (RDMACM_1.5): repoll_create, repoll_ctl, repoll_wait; an
//! instance is closed with rclose. Failures are -1 with errno, as epoll's
//! (upstream v65 returns the positive errno value instead).

use super::{guard, guard0};
use crate::error::Error;
use crate::rs::repoll;
use libc::{c_int, epoll_event};

#[no_mangle]
pub extern "C" fn repoll_create(flags: c_int) -> c_int {
    guard(|| repoll::create(flags))
}

/// # Safety
/// As epoll_ctl(2): `event` is NULL or a valid `struct epoll_event`.
#[no_mangle]
pub unsafe extern "C" fn repoll_ctl(epfd: c_int, op: c_int, fd: c_int, event: *mut epoll_event) -> c_int {
    // SAFETY: NULL or valid, as the caller promises.
    guard0(|| repoll::ctl(epfd, op, fd, unsafe { event.as_ref() }.copied()))
}

/// # Safety
/// As epoll_wait(2): `events` has room for `maxevents` entries.
#[no_mangle]
pub unsafe extern "C" fn repoll_wait(epfd: c_int, events: *mut epoll_event, maxevents: c_int, timeout: c_int) -> c_int {
    guard(|| {
        if maxevents <= 0 {
            return Err(Error::INVAL);
        }
        if events.is_null() {
            return Err(Error::Errno(libc::EFAULT));
        }
        // SAFETY: room for maxevents entries, as the caller promises.
        let out = unsafe { std::slice::from_raw_parts_mut(events, maxevents as usize) };
        repoll::wait(epfd, out, timeout).map(|n| n as c_int)
    })
}
