//! librspreload.so: runs unmodified socket programs over rsockets.
//!
//! Loaded with `LD_PRELOAD` in front of libc, it interposes the socket
//! calls (socket, bind, listen, accept/accept4, connect, read/write and
//! their vector forms, recv*/send*, poll/ppoll, select/pselect, epoll_*,
//! shutdown, close, dup/dup2/dup3, fcntl/fcntl64, get/setsockopt,
//! getpeername/getsockname, sendfile/sendfile64, and glibc's fortified
//! `__read_chk`, `__recv_chk`, `__recvfrom_chk`, `__poll_chk`,
//! `__ppoll_chk`). Every AF_INET/AF_INET6 stream or datagram socket the
//! configuration allows (`config.rs`) becomes an rsocket of librdmacm; a
//! connect that rsockets cannot make falls back to TCP. In fork mode
//! (`RDMAV_FORK_SAFE`) a stream socket is TCP until its first data call
//! after connect or accept, and moves to an rsocket then (`migrate.rs`).
//! Everything else passes through to libc untouched. See docs/rsockets.md ("The preload
//! library") for the design and rsocket(7) for the behaviour.
//!
//! Files: `real` (libc's functions), `fds` (what each descriptor is),
//! `config` (which sockets, which options), `calls` (the exports),
//! `migrate` and `regs` (the fork mode: TCP sockets that become rsockets
//! after the program had its chance to fork).
//! No panic crosses the C boundary (`boundary`).

use std::panic::{catch_unwind, AssertUnwindSafe};

pub mod config;
pub mod fds;
pub mod real;
pub mod regs;

#[cfg(not(test))]
mod calls;
#[cfg(not(test))]
mod migrate;

#[cfg_attr(test, allow(dead_code))]
pub(crate) fn errno() -> i32 {
    // SAFETY: __errno_location always returns the thread's errno.
    unsafe { *libc::__errno_location() }
}

pub(crate) fn set_errno(v: i32) {
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = v }
}

/// Run an export's body; a panic becomes `fail` with errno EIO.
#[cfg_attr(test, allow(dead_code))]
pub(crate) fn boundary<T: Copy>(fail: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        set_errno(libc::EIO);
        fail
    })
}
