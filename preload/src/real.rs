//! libc's own versions of the calls this library interposes, found with
//! `dlsym(RTLD_NEXT, name)` on first use (the next definition after this
//! library in the process's lookup order: libc's). A function libc lacks
//! fails with ENOSYS.

#![allow(clippy::missing_safety_doc)]

use libc::{
    c_int, c_long, c_void, epoll_event, fd_set, iovec, msghdr, nfds_t, off64_t, off_t, pollfd, sigset_t, size_t,
    sockaddr, socklen_t, ssize_t, timespec, timeval,
};
use std::sync::atomic::{AtomicPtr, Ordering};

/// The address of libc's `name` (NUL-terminated), cached in `slot`.
fn find(slot: &AtomicPtr<c_void>, name: &'static [u8]) -> *mut c_void {
    let p = slot.load(Ordering::Acquire);
    if !p.is_null() {
        return p;
    }
    // SAFETY: a NUL-terminated name; dlsym is thread-safe.
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr() as *const libc::c_char) };
    slot.store(p, Ordering::Release);
    p
}

macro_rules! libc_fns {
    ($( $name:ident ( $($arg:ident : $t:ty),* ) -> $ret:ty ; )*) => {
        $(
            /// libc's function of this name.
            ///
            /// # Safety
            /// As the libc function.
            pub unsafe fn $name($($arg: $t),*) -> $ret {
                static SLOT: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
                let p = find(&SLOT, concat!(stringify!($name), "\0").as_bytes());
                if p.is_null() {
                    crate::set_errno(libc::ENOSYS);
                    return -1 as $ret;
                }
                // SAFETY: libc's function of this name has this type.
                let f: unsafe extern "C" fn($($t),*) -> $ret = unsafe { std::mem::transmute(p) };
                // SAFETY: as the caller promises.
                unsafe { f($($arg),*) }
            }
        )*
    };
}

libc_fns! {
    socket(domain: c_int, ty: c_int, protocol: c_int) -> c_int;
    bind(fd: c_int, addr: *const sockaddr, len: socklen_t) -> c_int;
    listen(fd: c_int, backlog: c_int) -> c_int;
    accept(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int;
    accept4(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t, flags: c_int) -> c_int;
    connect(fd: c_int, addr: *const sockaddr, len: socklen_t) -> c_int;
    read(fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t;
    readv(fd: c_int, iov: *const iovec, n: c_int) -> ssize_t;
    write(fd: c_int, buf: *const c_void, n: size_t) -> ssize_t;
    writev(fd: c_int, iov: *const iovec, n: c_int) -> ssize_t;
    recv(fd: c_int, buf: *mut c_void, n: size_t, flags: c_int) -> ssize_t;
    recvfrom(fd: c_int, buf: *mut c_void, n: size_t, flags: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> ssize_t;
    recvmsg(fd: c_int, msg: *mut msghdr, flags: c_int) -> ssize_t;
    send(fd: c_int, buf: *const c_void, n: size_t, flags: c_int) -> ssize_t;
    sendto(fd: c_int, buf: *const c_void, n: size_t, flags: c_int, addr: *const sockaddr, len: socklen_t) -> ssize_t;
    sendmsg(fd: c_int, msg: *const msghdr, flags: c_int) -> ssize_t;
    poll(fds: *mut pollfd, n: nfds_t, timeout: c_int) -> c_int;
    ppoll(fds: *mut pollfd, n: nfds_t, timeout: *const timespec, mask: *const sigset_t) -> c_int;
    select(n: c_int, r: *mut fd_set, w: *mut fd_set, e: *mut fd_set, timeout: *mut timeval) -> c_int;
    pselect(n: c_int, r: *mut fd_set, w: *mut fd_set, e: *mut fd_set, timeout: *const timespec, mask: *const sigset_t) -> c_int;
    shutdown(fd: c_int, how: c_int) -> c_int;
    close(fd: c_int) -> c_int;
    getpeername(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int;
    getsockname(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int;
    setsockopt(fd: c_int, level: c_int, name: c_int, val: *const c_void, len: socklen_t) -> c_int;
    getsockopt(fd: c_int, level: c_int, name: c_int, val: *mut c_void, len: *mut socklen_t) -> c_int;
    fcntl(fd: c_int, cmd: c_int, arg: c_long) -> c_int;
    fcntl64(fd: c_int, cmd: c_int, arg: c_long) -> c_int;
    dup(fd: c_int) -> c_int;
    dup2(fd: c_int, to: c_int) -> c_int;
    dup3(fd: c_int, to: c_int, flags: c_int) -> c_int;
    sendfile(out: c_int, input: c_int, offset: *mut off_t, n: size_t) -> ssize_t;
    sendfile64(out: c_int, input: c_int, offset: *mut off64_t, n: size_t) -> ssize_t;
    epoll_create(size: c_int) -> c_int;
    epoll_create1(flags: c_int) -> c_int;
    epoll_ctl(ep: c_int, op: c_int, fd: c_int, ev: *mut epoll_event) -> c_int;
    epoll_wait(ep: c_int, ev: *mut epoll_event, n: c_int, timeout: c_int) -> c_int;
    epoll_pwait(ep: c_int, ev: *mut epoll_event, n: c_int, timeout: c_int, mask: *const sigset_t) -> c_int;
    __read_chk(fd: c_int, buf: *mut c_void, n: size_t, room: size_t) -> ssize_t;
    __recv_chk(fd: c_int, buf: *mut c_void, n: size_t, room: size_t, flags: c_int) -> ssize_t;
    __recvfrom_chk(fd: c_int, buf: *mut c_void, n: size_t, room: size_t, flags: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> ssize_t;
    __poll_chk(fds: *mut pollfd, n: nfds_t, timeout: c_int, room: size_t) -> c_int;
    __ppoll_chk(fds: *mut pollfd, n: nfds_t, timeout: *const timespec, mask: *const sigset_t, room: size_t) -> c_int;
    pread(fd: c_int, buf: *mut c_void, n: size_t, offset: off_t) -> ssize_t;
}
