//! The interposed libc calls. Each looks its descriptor up (`fds.rs`): an
//! rsocket's call goes to librdmacm with the rsocket's own descriptor, a
//! repoll instance's to repoll, anything else to libc as it is.
//!
//! While this thread is inside librdmacm (`lib`), every call passes
//! straight to libc: librdmacm's own sockets and descriptors are never
//! intercepted (it also issues its epoll, poll and socket calls to the
//! kernel directly).
//!
//! In fork mode (`migrate.rs`) a stream socket is a real TCP socket until
//! its first data call after connect or accept: the data calls (read,
//! write, recv*, send*, their vector and fortified forms, sendfile,
//! shutdown) and dup/dup2/dup3/F_DUPFD call `settle` first, which moves
//! it to an rsocket then. A wait for the readiness of an accepted socket
//! (poll, ppoll, select, pselect, epoll_ctl ADD/MOD) moves it too: its
//! peer waits for our "ready" before it sends anything, so a server that
//! waits for the client's data before reading would otherwise wait in
//! vain. Other waits see the TCP socket (an epoll registration of one
//! moves with it).

#![allow(clippy::missing_safety_doc)]

use crate::fds::{self, Fork, ForkEvent, Kind};
use crate::migrate::{self, settle};
use crate::{boundary, config, errno, real, set_errno};
use libc::{
    c_int, c_long, c_void, epoll_event, fd_set, iovec, msghdr, nfds_t, off64_t, off_t, pollfd, sigset_t, size_t,
    sockaddr, socklen_t, ssize_t, timespec, timeval,
};
use std::cell::Cell;

#[link(name = "rdmacm")]
extern "C" {
    pub(crate) fn rsocket(domain: c_int, ty: c_int, protocol: c_int) -> c_int;
    pub(crate) fn rbind(fd: c_int, addr: *const sockaddr, len: socklen_t) -> c_int;
    pub(crate) fn rlisten(fd: c_int, backlog: c_int) -> c_int;
    pub(crate) fn raccept(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int;
    pub(crate) fn rconnect(fd: c_int, addr: *const sockaddr, len: socklen_t) -> c_int;
    fn rshutdown(fd: c_int, how: c_int) -> c_int;
    pub(crate) fn rclose(fd: c_int) -> c_int;
    fn rrecv(fd: c_int, buf: *mut c_void, n: size_t, flags: c_int) -> ssize_t;
    fn rrecvfrom(fd: c_int, buf: *mut c_void, n: size_t, flags: c_int, a: *mut sockaddr, l: *mut socklen_t) -> ssize_t;
    fn rrecvmsg(fd: c_int, msg: *mut msghdr, flags: c_int) -> ssize_t;
    fn rsend(fd: c_int, buf: *const c_void, n: size_t, flags: c_int) -> ssize_t;
    fn rsendto(fd: c_int, buf: *const c_void, n: size_t, flags: c_int, a: *const sockaddr, l: socklen_t) -> ssize_t;
    fn rsendmsg(fd: c_int, msg: *const msghdr, flags: c_int) -> ssize_t;
    fn rread(fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t;
    fn rreadv(fd: c_int, iov: *const iovec, n: c_int) -> ssize_t;
    fn rwrite(fd: c_int, buf: *const c_void, n: size_t) -> ssize_t;
    fn rwritev(fd: c_int, iov: *const iovec, n: c_int) -> ssize_t;
    pub(crate) fn rpoll(fds: *mut pollfd, n: nfds_t, timeout: c_int) -> c_int;
    fn rgetpeername(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int;
    fn rgetsockname(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int;
    pub(crate) fn rsetsockopt(fd: c_int, level: c_int, name: c_int, val: *const c_void, len: socklen_t) -> c_int;
    pub(crate) fn rgetsockopt(fd: c_int, level: c_int, name: c_int, val: *mut c_void, len: *mut socklen_t) -> c_int;
    pub(crate) fn rfcntl(fd: c_int, cmd: c_int, ...) -> c_int;
    fn repoll_create(flags: c_int) -> c_int;
    pub(crate) fn repoll_ctl(ep: c_int, op: c_int, fd: c_int, ev: *mut epoll_event) -> c_int;
    fn repoll_wait(ep: c_int, ev: *mut epoll_event, n: c_int, timeout: c_int) -> c_int;
}

extern "C" {
    static program_invocation_short_name: *const libc::c_char;
}

thread_local! {
    static IN_LIB: Cell<bool> = const { Cell::new(false) };
}

pub(crate) fn in_lib() -> bool {
    IN_LIB.with(|c| c.get())
}

/// Call into librdmacm: calls it makes on this thread pass straight to libc.
pub(crate) fn lib<T>(f: impl FnOnce() -> T) -> T {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            IN_LIB.with(|c| c.set(self.0));
        }
    }
    let _reset = Reset(IN_LIB.with(|c| c.replace(true)));
    f()
}

/// The rsocket behind an application descriptor (None inside librdmacm).
fn rs(fd: c_int) -> Option<c_int> {
    if in_lib() {
        None
    } else {
        fds::rsocket(fd)
    }
}

fn kind(fd: c_int) -> Kind {
    if in_lib() {
        Kind::Other
    } else {
        fds::kind(fd)
    }
}

/// -1 with errno `e`.
fn err(e: c_int) -> c_int {
    set_errno(e);
    -1
}

fn program() -> &'static str {
    // SAFETY: glibc's NUL-terminated short name of the program, set before
    // main and never freed.
    unsafe { program_invocation_short_name.as_ref() }
        .and_then(|p| unsafe { std::ffi::CStr::from_ptr(p) }.to_str().ok())
        .unwrap_or("")
}

/// Give a new rsocket `r` its application descriptor: a duplicate of
/// `r` (close-on-exec if `cloexec`), while `r` itself is close-on-exec and
/// private. On failure the rsocket is closed, errno is set and -1 returned.
unsafe fn publish(r: c_int, ty: c_int, cloexec: bool) -> c_int {
    // SAFETY: r is a descriptor of ours.
    unsafe {
        lib(|| rfcntl(r, libc::F_SETFD, libc::FD_CLOEXEC));
        let d = real::fcntl(r, if cloexec { libc::F_DUPFD_CLOEXEC } else { libc::F_DUPFD }, 0);
        if d >= 0 && fds::set_type(r, ty) && fds::add_rsocket(d, r) {
            return d;
        }
        let e = if d < 0 { errno() } else { libc::EMFILE };
        if d >= 0 {
            real::close(d);
        }
        lib(|| rclose(r));
        err(e)
    }
}

/// The options the environment asks for (RS_SQ_SIZE, RS_RQ_SIZE,
/// RS_INLINE), set on each socket the preload creates.
pub(crate) unsafe fn set_options(r: c_int) {
    let c = config::get();
    for (opt, v) in [(0, c.sq_size), (1, c.rq_size), (2, c.inline)] {
        if v > 0 {
            // SAFETY: an int option of rsocket(7) (SOL_RDMA: RDMA_SQSIZE,
            // RDMA_RQSIZE, RDMA_INLINE).
            lib(|| unsafe {
                rsetsockopt(r, 0x10000, opt, &v as *const c_int as *const c_void, std::mem::size_of::<c_int>() as u32)
            });
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn socket(domain: c_int, ty: c_int, protocol: c_int) -> c_int {
    boundary(-1, || unsafe {
        let base = ty & !(libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC);
        let candidate = !in_lib()
            && (domain == libc::AF_INET || domain == libc::AF_INET6)
            && (base == libc::SOCK_STREAM || base == libc::SOCK_DGRAM);
        let conf = config::get();
        if !candidate || !conf.intercepts(program(), domain, base, protocol) {
            return real::socket(domain, ty, protocol);
        }
        if conf.fork && base == libc::SOCK_STREAM && (protocol == 0 || protocol == libc::IPPROTO_TCP) {
            // Fork mode: TCP until the first data call after connect or
            // accept (a descriptor beyond the tables stays TCP).
            let t = real::socket(domain, ty, protocol);
            if t >= 0 {
                fds::fork_set(t, Fork::Fresh);
            }
            return t;
        }
        let r = lib(|| rsocket(domain, ty, protocol));
        if r < 0 {
            // No RDMA (or not this kind of socket): an ordinary socket.
            return real::socket(domain, ty, protocol);
        }
        if r >= fds::LIMIT {
            lib(|| rclose(r));
            return real::socket(domain, ty, protocol);
        }
        set_options(r);
        publish(r, base, ty & libc::SOCK_CLOEXEC != 0)
    })
}

macro_rules! route {
    ($fd:expr, |$r:ident| $rcall:expr, $real:expr) => {
        boundary(-1, || match rs($fd) {
            // SAFETY: the caller's arguments, as for the libc call.
            Some($r) => lib(|| unsafe { $rcall }),
            // SAFETY: as above.
            None => unsafe { $real },
        })
    };
}

/// `route!` for a data call: a fork-mode connection moves first.
macro_rules! route_data {
    ($fd:expr, |$r:ident| $rcall:expr, $real:expr) => {
        boundary(-1, || {
            settle($fd);
            match rs($fd) {
                // SAFETY: the caller's arguments, as for the libc call.
                Some($r) => lib(|| unsafe { $rcall }),
                // SAFETY: as above.
                None => unsafe { $real },
            }
        })
    };
}

#[no_mangle]
pub unsafe extern "C" fn bind(fd: c_int, addr: *const sockaddr, len: socklen_t) -> c_int {
    route!(fd, |r| rbind(r, addr, len), real::bind(fd, addr, len))
}

#[no_mangle]
pub unsafe extern "C" fn listen(fd: c_int, backlog: c_int) -> c_int {
    let rc = route!(fd, |r| rlisten(r, backlog), real::listen(fd, backlog));
    if rc == 0 && !in_lib() {
        fds::fork_advance(fd, ForkEvent::Listened);
    }
    rc
}

/// A connection `n` accepted (by libc) on listener `fd`: in fork mode,
/// what a fork-mode listener accepts moves at its first data call.
fn accepted(fd: c_int, n: c_int) -> c_int {
    if n >= 0 && !in_lib() && fds::fork_state(fd) == Fork::Listen {
        fds::fork_set(n, Fork::Passive);
    }
    n
}

/// accept/accept4 on an rsocket: as accept(2), the new socket does not
/// inherit the listener's O_NONBLOCK; accept4's flags apply.
unsafe fn accept_rs(r: c_int, addr: *mut sockaddr, len: *mut socklen_t, flags: c_int) -> c_int {
    // SAFETY: the caller's arguments.
    let n = lib(|| unsafe { raccept(r, addr, len) });
    if n < 0 {
        return -1;
    }
    if n >= fds::LIMIT {
        lib(|| unsafe { rclose(n) });
        return err(libc::EMFILE);
    }
    let fl = if flags & libc::SOCK_NONBLOCK != 0 { libc::O_NONBLOCK } else { 0 };
    // SAFETY: our new rsocket.
    unsafe {
        lib(|| rfcntl(n, libc::F_SETFL, fl));
        publish(n, libc::SOCK_STREAM, flags & libc::SOCK_CLOEXEC != 0)
    }
}

#[no_mangle]
pub unsafe extern "C" fn accept(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int {
    route!(fd, |r| accept_rs(r, addr, len, 0), accepted(fd, real::accept(fd, addr, len)))
}

#[no_mangle]
pub unsafe extern "C" fn accept4(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t, flags: c_int) -> c_int {
    boundary(-1, || match rs(fd) {
        Some(r) => {
            if flags & !(libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC) != 0 {
                return err(libc::EINVAL);
            }
            // SAFETY: the caller's arguments.
            unsafe { accept_rs(r, addr, len, flags) }
        }
        // SAFETY: as above.
        None => accepted(fd, unsafe { real::accept4(fd, addr, len, flags) }),
    })
}

/// Replace the application's descriptor `d` of rsocket `r` by a TCP
/// socket connected (or connecting) to `addr`: the connect that rsockets
/// could not make (`rs_err`) goes over TCP instead.
unsafe fn fall_back_to_tcp(d: c_int, r: c_int, addr: *const sockaddr, len: socklen_t, rs_err: c_int) -> c_int {
    // SAFETY: the caller's address (rconnect read it already); our
    // descriptors.
    unsafe {
        let family = if addr.is_null() || (len as usize) < 2 { libc::AF_INET } else { c_int::from((*addr).sa_family) };
        let fl = lib(|| rfcntl(r, libc::F_GETFL));
        let nb = if fl >= 0 && fl & libc::O_NONBLOCK != 0 { libc::SOCK_NONBLOCK } else { 0 };
        let t = real::socket(family, libc::SOCK_STREAM | nb | libc::SOCK_CLOEXEC, 0);
        if t < 0 {
            return err(rs_err);
        }
        for (level, name) in [(libc::SOL_SOCKET, libc::SO_REUSEADDR), (libc::IPPROTO_TCP, libc::TCP_NODELAY)] {
            let mut v: c_int = 0;
            let mut l = std::mem::size_of::<c_int>() as socklen_t;
            if lib(|| rgetsockopt(r, level, name, &mut v as *mut c_int as *mut c_void, &mut l)) == 0 && v != 0 {
                real::setsockopt(t, level, name, &v as *const c_int as *const c_void, l);
            }
        }
        let rc = real::connect(t, addr, len);
        let ce = errno();
        let cloexec = real::fcntl(d, libc::F_GETFD, 0);
        let flags = if cloexec >= 0 && cloexec & libc::FD_CLOEXEC != 0 { libc::O_CLOEXEC } else { 0 };
        // d is an rsocket's until the switch, then the TCP socket's.
        let (_, last) = fds::forget(d);
        if real::dup3(t, d, flags) < 0 {
            fds::add_rsocket(d, r);
            real::close(t);
            return err(rs_err);
        }
        real::close(t);
        if last {
            lib(|| rclose(r));
        }
        set_errno(ce);
        rc
    }
}

#[no_mangle]
pub unsafe extern "C" fn connect(fd: c_int, addr: *const sockaddr, len: socklen_t) -> c_int {
    boundary(-1, || match rs(fd) {
        // SAFETY: the caller's arguments.
        None => unsafe {
            let rc = real::connect(fd, addr, len);
            if !in_lib()
                && (rc == 0 || matches!(errno(), libc::EINPROGRESS | libc::EALREADY | libc::EINTR | libc::EISCONN))
            {
                // In fork mode, connected (or on its way): an active side.
                let e = errno();
                fds::fork_advance(fd, ForkEvent::Connected);
                set_errno(e);
            }
            rc
        },
        Some(r) => unsafe {
            if lib(|| rconnect(r, addr, len)) == 0 {
                return 0;
            }
            let e = errno();
            if matches!(e, libc::EINPROGRESS | libc::EALREADY | libc::EISCONN | libc::EINTR)
                || fds::type_of(r) != libc::SOCK_STREAM
            {
                return err(e);
            }
            fall_back_to_tcp(fd, r, addr, len, e)
        },
    })
}

#[no_mangle]
pub unsafe extern "C" fn read(fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t {
    route_data!(fd, |r| rread(r, buf, n), real::read(fd, buf, n))
}

#[no_mangle]
pub unsafe extern "C" fn readv(fd: c_int, iov: *const iovec, n: c_int) -> ssize_t {
    route_data!(fd, |r| rreadv(r, iov, n), real::readv(fd, iov, n))
}

#[no_mangle]
pub unsafe extern "C" fn write(fd: c_int, buf: *const c_void, n: size_t) -> ssize_t {
    route_data!(fd, |r| rwrite(r, buf, n), real::write(fd, buf, n))
}

#[no_mangle]
pub unsafe extern "C" fn writev(fd: c_int, iov: *const iovec, n: c_int) -> ssize_t {
    route_data!(fd, |r| rwritev(r, iov, n), real::writev(fd, iov, n))
}

#[no_mangle]
pub unsafe extern "C" fn recv(fd: c_int, buf: *mut c_void, n: size_t, flags: c_int) -> ssize_t {
    route_data!(fd, |r| rrecv(r, buf, n, flags), real::recv(fd, buf, n, flags))
}

#[no_mangle]
pub unsafe extern "C" fn recvfrom(
    fd: c_int,
    buf: *mut c_void,
    n: size_t,
    flags: c_int,
    addr: *mut sockaddr,
    len: *mut socklen_t,
) -> ssize_t {
    route_data!(fd, |r| rrecvfrom(r, buf, n, flags, addr, len), real::recvfrom(fd, buf, n, flags, addr, len))
}

#[no_mangle]
pub unsafe extern "C" fn recvmsg(fd: c_int, msg: *mut msghdr, flags: c_int) -> ssize_t {
    route_data!(fd, |r| rrecvmsg(r, msg, flags), real::recvmsg(fd, msg, flags))
}

#[no_mangle]
pub unsafe extern "C" fn send(fd: c_int, buf: *const c_void, n: size_t, flags: c_int) -> ssize_t {
    route_data!(fd, |r| rsend(r, buf, n, flags), real::send(fd, buf, n, flags))
}

#[no_mangle]
pub unsafe extern "C" fn sendto(
    fd: c_int,
    buf: *const c_void,
    n: size_t,
    flags: c_int,
    addr: *const sockaddr,
    len: socklen_t,
) -> ssize_t {
    route_data!(fd, |r| rsendto(r, buf, n, flags, addr, len), real::sendto(fd, buf, n, flags, addr, len))
}

#[no_mangle]
pub unsafe extern "C" fn sendmsg(fd: c_int, msg: *const msghdr, flags: c_int) -> ssize_t {
    route_data!(fd, |r| rsendmsg(r, msg, flags), real::sendmsg(fd, msg, flags))
}

#[no_mangle]
pub unsafe extern "C" fn __read_chk(fd: c_int, buf: *mut c_void, n: size_t, room: size_t) -> ssize_t {
    // An overflow goes to libc's check, which aborts as it should.
    route_data!(
        fd,
        |r| if n > room { real::__read_chk(fd, buf, n, room) } else { rread(r, buf, n) },
        real::__read_chk(fd, buf, n, room)
    )
}

#[no_mangle]
pub unsafe extern "C" fn __recv_chk(fd: c_int, buf: *mut c_void, n: size_t, room: size_t, flags: c_int) -> ssize_t {
    route_data!(
        fd,
        |r| if n > room { real::__recv_chk(fd, buf, n, room, flags) } else { rrecv(r, buf, n, flags) },
        real::__recv_chk(fd, buf, n, room, flags)
    )
}

#[no_mangle]
pub unsafe extern "C" fn __recvfrom_chk(
    fd: c_int,
    buf: *mut c_void,
    n: size_t,
    room: size_t,
    flags: c_int,
    addr: *mut sockaddr,
    len: *mut socklen_t,
) -> ssize_t {
    route_data!(
        fd,
        |r| if n > room {
            real::__recvfrom_chk(fd, buf, n, room, flags, addr, len)
        } else {
            rrecvfrom(r, buf, n, flags, addr, len)
        },
        real::__recvfrom_chk(fd, buf, n, room, flags, addr, len)
    )
}

/// Milliseconds of a timespec (rounded up; NULL: -1).
unsafe fn ts_ms(t: *const timespec) -> c_int {
    // SAFETY: NULL or valid, as the caller promises.
    match unsafe { t.as_ref() } {
        None => -1,
        Some(t) => {
            let ms = (t.tv_sec as i128) * 1000 + (t.tv_nsec as i128 + 999_999) / 1_000_000;
            ms.clamp(0, c_int::MAX as i128) as c_int
        }
    }
}

/// Run `f` with the signal mask `mask` (NULL: unchanged), restoring it
/// after (not atomic with the wait inside, unlike ppoll/pselect).
unsafe fn with_mask<T>(mask: *const sigset_t, f: impl FnOnce() -> T) -> T {
    if mask.is_null() {
        return f();
    }
    // SAFETY: a valid mask, as the caller promises; old has room.
    unsafe {
        let mut old: sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_SETMASK, mask, &mut old);
        let r = f();
        let e = errno();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        set_errno(e);
        r
    }
}

/// rpoll over the caller's set with each rsocket replaced by librdmacm's
/// descriptor; the caller's revents filled in.
unsafe fn rpoll_translated(fds: &mut [pollfd], timeout: c_int) -> c_int {
    let mut set: Vec<pollfd> = Vec::new();
    if set.try_reserve_exact(fds.len()).is_err() {
        return err(libc::ENOMEM);
    }
    set.extend(fds.iter().map(|p| pollfd { fd: rs(p.fd).unwrap_or(p.fd), events: p.events, revents: 0 }));
    // SAFETY: set holds fds.len() entries.
    let n = lib(|| unsafe { rpoll(set.as_mut_ptr(), set.len() as nfds_t, timeout) });
    if n >= 0 {
        for (p, q) in fds.iter_mut().zip(&set) {
            p.revents = q.revents;
        }
    }
    n
}

/// The caller's pollfd array, if it holds an rsocket.
unsafe fn rsocket_set<'a>(fds: *mut pollfd, n: nfds_t) -> Option<&'a mut [pollfd]> {
    if fds.is_null() || n == 0 || n > (1 << 20) {
        return None;
    }
    // SAFETY: n entries, as the caller promises.
    let s = unsafe { std::slice::from_raw_parts_mut(fds, n as usize) };
    // Fork mode: accepted connections move before the wait.
    for p in s.iter() {
        if migrate::passive_pending(p.fd) {
            settle(p.fd);
        }
    }
    fds::any_rsocket(s.iter().map(|p| p.fd)).then_some(s)
}

#[no_mangle]
pub unsafe extern "C" fn poll(fds: *mut pollfd, n: nfds_t, timeout: c_int) -> c_int {
    boundary(-1, || unsafe {
        match (in_lib(), rsocket_set(fds, n)) {
            (false, Some(s)) => rpoll_translated(s, timeout),
            _ => real::poll(fds, n, timeout),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn ppoll(fds: *mut pollfd, n: nfds_t, t: *const timespec, mask: *const sigset_t) -> c_int {
    boundary(-1, || unsafe {
        match (in_lib(), rsocket_set(fds, n)) {
            (false, Some(s)) => {
                let ms = ts_ms(t);
                with_mask(mask, || rpoll_translated(s, ms))
            }
            _ => real::ppoll(fds, n, t, mask),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn __poll_chk(fds: *mut pollfd, n: nfds_t, timeout: c_int, room: size_t) -> c_int {
    if (room / std::mem::size_of::<pollfd>()) < n as usize {
        // SAFETY: libc's check aborts as it should.
        return unsafe { real::__poll_chk(fds, n, timeout, room) };
    }
    // SAFETY: as poll.
    unsafe { poll(fds, n, timeout) }
}

#[no_mangle]
pub unsafe extern "C" fn __ppoll_chk(
    fds: *mut pollfd,
    n: nfds_t,
    t: *const timespec,
    mask: *const sigset_t,
    room: size_t,
) -> c_int {
    if (room / std::mem::size_of::<pollfd>()) < n as usize {
        // SAFETY: libc's check aborts as it should.
        return unsafe { real::__ppoll_chk(fds, n, t, mask, room) };
    }
    // SAFETY: as ppoll.
    unsafe { ppoll(fds, n, t, mask) }
}

/// select over rpoll when a set holds an rsocket (None: it holds none).
unsafe fn select_rs(nfds: c_int, rd: *mut fd_set, wr: *mut fd_set, ex: *mut fd_set, ms: c_int) -> Option<c_int> {
    if in_lib() || nfds <= 0 {
        return None;
    }
    let nfds = nfds.min(libc::FD_SETSIZE as c_int);
    // SAFETY: NULL or valid sets, as the caller promises.
    let isset = |s: *mut fd_set, fd: c_int| !s.is_null() && unsafe { libc::FD_ISSET(fd, s) };
    let any = |fd: c_int| isset(rd, fd) || isset(wr, fd) || isset(ex, fd);
    // Fork mode: accepted connections move before the wait.
    for fd in (0..nfds).filter(|&fd| migrate::passive_pending(fd) && any(fd)) {
        settle(fd);
    }
    if !(0..nfds).any(|fd| any(fd) && fds::rsocket(fd).is_some()) {
        return None;
    }
    let mut set: Vec<pollfd> = Vec::new();
    if set.try_reserve_exact(nfds as usize).is_err() {
        return Some(err(libc::ENOMEM));
    }
    for fd in (0..nfds).filter(|&fd| any(fd)) {
        let mut events = 0;
        if isset(rd, fd) {
            events |= libc::POLLIN;
        }
        if isset(wr, fd) {
            events |= libc::POLLOUT;
        }
        if isset(ex, fd) {
            events |= libc::POLLPRI;
        }
        set.push(pollfd { fd, events, revents: 0 });
    }
    // SAFETY: a valid set.
    let n = unsafe { rpoll_translated(&mut set, ms) };
    if n < 0 {
        return Some(n);
    }
    for s in [rd, wr, ex] {
        if !s.is_null() {
            // SAFETY: a valid set.
            unsafe { libc::FD_ZERO(s) };
        }
    }
    let mut count = 0;
    for p in &set {
        let bits = [
            (rd, libc::POLLIN, libc::POLLIN | libc::POLLHUP | libc::POLLERR),
            (wr, libc::POLLOUT, libc::POLLOUT | libc::POLLERR),
            (ex, libc::POLLPRI, libc::POLLPRI),
        ];
        for (s, asked, shows) in bits {
            if !s.is_null() && p.events & asked != 0 && p.revents & shows != 0 {
                // SAFETY: a valid set; fd < FD_SETSIZE.
                unsafe { libc::FD_SET(p.fd, s) };
                count += 1;
            }
        }
        if p.revents & libc::POLLNVAL != 0 {
            return Some(err(libc::EBADF));
        }
    }
    Some(count)
}

#[no_mangle]
pub unsafe extern "C" fn select(
    nfds: c_int,
    rd: *mut fd_set,
    wr: *mut fd_set,
    ex: *mut fd_set,
    t: *mut timeval,
) -> c_int {
    boundary(-1, || unsafe {
        let ms = match t.as_ref() {
            None => -1,
            Some(t) => {
                ((t.tv_sec as i128) * 1000 + (t.tv_usec as i128 + 999) / 1000).clamp(0, c_int::MAX as i128) as c_int
            }
        };
        select_rs(nfds, rd, wr, ex, ms).unwrap_or_else(|| real::select(nfds, rd, wr, ex, t))
    })
}

#[no_mangle]
pub unsafe extern "C" fn pselect(
    nfds: c_int,
    rd: *mut fd_set,
    wr: *mut fd_set,
    ex: *mut fd_set,
    t: *const timespec,
    mask: *const sigset_t,
) -> c_int {
    boundary(-1, || unsafe {
        let ms = ts_ms(t);
        with_mask(mask, || select_rs(nfds, rd, wr, ex, ms)).unwrap_or_else(|| real::pselect(nfds, rd, wr, ex, t, mask))
    })
}

#[no_mangle]
pub unsafe extern "C" fn shutdown(fd: c_int, how: c_int) -> c_int {
    route_data!(fd, |r| rshutdown(r, how), real::shutdown(fd, how))
}

#[no_mangle]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    boundary(-1, || unsafe {
        if in_lib() {
            return real::close(fd);
        }
        fork_release(fd);
        match fds::forget(fd) {
            (Kind::Rsocket(r), last) => {
                let rc = real::close(fd);
                if last {
                    lib(|| rclose(r));
                }
                rc
            }
            (Kind::Repoll, _) => match close_repoll(fd) {
                0 => 0,
                -1 => -1,
                e => err(e),
            },
            (Kind::Other, _) => real::close(fd),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn getpeername(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int {
    route!(fd, |r| rgetpeername(r, addr, len), real::getpeername(fd, addr, len))
}

#[no_mangle]
pub unsafe extern "C" fn getsockname(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int {
    route!(fd, |r| rgetsockname(r, addr, len), real::getsockname(fd, addr, len))
}

#[no_mangle]
pub unsafe extern "C" fn setsockopt(fd: c_int, level: c_int, name: c_int, val: *const c_void, len: socklen_t) -> c_int {
    route!(fd, |r| rsetsockopt(r, level, name, val, len), real::setsockopt(fd, level, name, val, len))
}

#[no_mangle]
pub unsafe extern "C" fn getsockopt(
    fd: c_int,
    level: c_int,
    name: c_int,
    val: *mut c_void,
    len: *mut socklen_t,
) -> c_int {
    route!(fd, |r| getsockopt_rs(r, level, name, val, len), real::getsockopt(fd, level, name, val, len))
}

/// getsockopt on an rsocket; SO_TYPE, which rsockets do not answer, is
/// answered here (programs ask it of any socket they are given).
unsafe fn getsockopt_rs(r: c_int, level: c_int, name: c_int, val: *mut c_void, len: *mut socklen_t) -> c_int {
    let ty = fds::type_of(r);
    if level == libc::SOL_SOCKET && name == libc::SO_TYPE && ty != 0 {
        // SAFETY: the caller's buffer and length, as getsockopt(2).
        unsafe {
            if val.is_null() || len.is_null() {
                return err(libc::EFAULT);
            }
            let n = (*len as usize).min(std::mem::size_of::<c_int>());
            std::ptr::copy_nonoverlapping(&ty as *const c_int as *const u8, val as *mut u8, n);
            *len = n as socklen_t;
        }
        return 0;
    }
    // SAFETY: as above.
    lib(|| unsafe { rgetsockopt(r, level, name, val, len) })
}

/// A new application descriptor `n` (from dup, dup2, dup3, F_DUPFD) now
/// refers to what `old` is.
unsafe fn adopt(old: Kind, n: c_int) -> c_int {
    if n < 0 {
        return n;
    }
    if let Kind::Rsocket(r) = old {
        if !fds::add_rsocket(n, r) {
            // SAFETY: the duplicate just made.
            unsafe { real::close(n) };
            return err(libc::EMFILE);
        }
    }
    n
}

/// The application closes repoll instance `ep`.
fn close_repoll(ep: c_int) -> c_int {
    migrate::forget_instance(ep);
    // SAFETY: our instance.
    lib(|| unsafe { rclose(ep) })
}

/// Fork mode: `fd` is closed or replaced: a move of it in another thread
/// ends first (it would put the rsocket in place of whatever `fd` is
/// next), then its fork state and epoll registrations go.
fn fork_release(fd: c_int) {
    match fds::fork_state(fd) {
        Fork::None => {}
        s => {
            if s == Fork::Moving {
                migrate::wait_settled(fd);
            }
            migrate::forget_registrations(fd);
            fds::fork_set(fd, Fork::None);
        }
    }
}

/// Fork mode: a new descriptor `n` (dup, dup2, dup3, F_DUPFD) of `old`,
/// which `settle` already moved if it was due: a socket not yet connected
/// or a listener stays so through either descriptor.
fn fork_inherit(old: c_int, n: c_int) -> c_int {
    if n >= 0 {
        match fds::fork_state(old) {
            s @ (Fork::Fresh | Fork::Listen) => {
                fds::fork_set(n, s);
            }
            _ => {
                fds::fork_set(n, Fork::None);
            }
        }
    }
    n
}

/// `new` is about to be replaced by dup2/dup3: let go of what it was.
unsafe fn release(new: c_int) {
    fork_release(new);
    match fds::forget(new) {
        (Kind::Rsocket(r), true) => {
            lib(|| unsafe { rclose(r) });
        }
        (Kind::Repoll, _) => {
            migrate::forget_instance(new);
            // The instance goes (its descriptor number is reused at once).
            lib(|| unsafe { rclose(new) });
        }
        _ => {}
    }
}

/// The work of the exported variadic `fcntl` and `fcntl64` (shim.c).
#[no_mangle]
pub unsafe extern "C" fn rspreload_fcntl(fd: c_int, cmd: c_int, arg: c_long, wide: c_int) -> c_int {
    boundary(-1, || unsafe {
        let plain = || if wide != 0 { real::fcntl64(fd, cmd, arg) } else { real::fcntl(fd, cmd, arg) };
        let dup = matches!(cmd, libc::F_DUPFD | libc::F_DUPFD_CLOEXEC);
        if dup {
            settle(fd);
        }
        match kind(fd) {
            Kind::Rsocket(r) => match cmd {
                libc::F_GETFL | libc::F_SETFL => lib(|| rfcntl(r, cmd, arg as c_int)),
                libc::F_DUPFD | libc::F_DUPFD_CLOEXEC => adopt(Kind::Rsocket(r), plain()),
                _ => plain(),
            },
            _ if dup && !in_lib() => fork_inherit(fd, plain()),
            _ => plain(),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn dup(fd: c_int) -> c_int {
    boundary(-1, || unsafe {
        if in_lib() {
            return real::dup(fd);
        }
        settle(fd);
        fork_inherit(fd, adopt(fds::kind(fd), real::dup(fd)))
    })
}

/// dup2 and dup3 (`flags` None: dup2).
unsafe fn dup_onto(fd: c_int, new: c_int, flags: Option<c_int>) -> c_int {
    // SAFETY: plain descriptor calls.
    let call = || unsafe {
        match flags {
            None => real::dup2(fd, new),
            Some(f) => real::dup3(fd, new, f),
        }
    };
    if fd == new || in_lib() {
        return call();
    }
    settle(fd);
    if fds::fork_state(new) == Fork::Moving {
        migrate::wait_settled(new);
    }
    let k = fds::kind(fd);
    if fds::kind(new) == Kind::Repoll {
        // SAFETY: the instance goes before its number is reused.
        unsafe { release(new) };
    }
    let n = call();
    if n >= 0 {
        // SAFETY: what new was is gone.
        unsafe { release(new) };
    }
    // SAFETY: n is the new duplicate.
    fork_inherit(fd, unsafe { adopt(k, n) })
}

#[no_mangle]
pub unsafe extern "C" fn dup2(fd: c_int, new: c_int) -> c_int {
    boundary(-1, || unsafe { dup_onto(fd, new, None) })
}

#[no_mangle]
pub unsafe extern "C" fn dup3(fd: c_int, new: c_int, flags: c_int) -> c_int {
    boundary(-1, || unsafe { dup_onto(fd, new, Some(flags)) })
}

/// sendfile to an rsocket: read from `input` (at `*offset` if given, else
/// at its file position) and rwrite; what could not be sent is not
/// consumed (the position goes back, `*offset` counts what was sent).
unsafe fn sendfile_rs(r: c_int, input: c_int, offset: Option<&mut i64>, count: size_t) -> ssize_t {
    const BUF: usize = 64 * 1024;
    let mut buf: Vec<u8> = Vec::new();
    if buf.try_reserve_exact(BUF).is_err() {
        return err(libc::ENOMEM) as ssize_t;
    }
    buf.resize(BUF, 0);
    let mut pos = offset.as_ref().map(|o| **o);
    let mut sent: usize = 0;
    let mut fail = 0;
    while sent < count {
        let want = (count - sent).min(BUF);
        // SAFETY: buf has room for want bytes.
        let got = unsafe {
            match pos {
                Some(p) => real::pread(input, buf.as_mut_ptr() as *mut c_void, want, p as off_t),
                None => read(input, buf.as_mut_ptr() as *mut c_void, want),
            }
        };
        if got <= 0 {
            if got < 0 {
                fail = errno();
            }
            break;
        }
        let got = got as usize;
        let mut done = 0;
        while done < got {
            // SAFETY: done < got bytes of buf.
            let w = lib(|| unsafe { rwrite(r, buf.as_ptr().add(done) as *const c_void, got - done) });
            if w <= 0 {
                fail = if w < 0 { errno() } else { libc::EIO };
                break;
            }
            done += w as usize;
        }
        sent += done;
        if let Some(p) = pos.as_mut() {
            *p += done as i64;
        } else if done < got {
            // SAFETY: put back what was read and not sent.
            unsafe { libc::lseek(input, -((got - done) as off_t), libc::SEEK_CUR) };
        }
        if done < got {
            break;
        }
    }
    if let (Some(o), Some(p)) = (offset, pos) {
        *o = p;
    }
    if sent == 0 && fail != 0 {
        return err(fail) as ssize_t;
    }
    sent as ssize_t
}

#[no_mangle]
pub unsafe extern "C" fn sendfile(out: c_int, input: c_int, offset: *mut off_t, count: size_t) -> ssize_t {
    boundary(-1, || unsafe {
        settle(out);
        match rs(out) {
            Some(r) => sendfile_rs(r, input, offset.as_mut(), count),
            None => real::sendfile(out, input, offset, count),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn sendfile64(out: c_int, input: c_int, offset: *mut off64_t, count: size_t) -> ssize_t {
    boundary(-1, || unsafe {
        settle(out);
        match rs(out) {
            Some(r) => sendfile_rs(r, input, offset.as_mut(), count),
            None => real::sendfile64(out, input, offset, count),
        }
    })
}

/// A new epoll instance is a repoll instance (rsockets and ordinary
/// descriptors mixed).
unsafe fn new_repoll(flags: c_int) -> c_int {
    // SAFETY: plain calls.
    unsafe {
        let ep = lib(|| repoll_create(flags));
        if ep < 0 {
            return -1;
        }
        if !fds::add_repoll(ep) {
            lib(|| rclose(ep));
            return err(libc::EMFILE);
        }
        ep
    }
}

#[no_mangle]
pub unsafe extern "C" fn epoll_create(size: c_int) -> c_int {
    boundary(-1, || unsafe {
        if in_lib() {
            real::epoll_create(size)
        } else if size <= 0 {
            err(libc::EINVAL)
        } else {
            new_repoll(0)
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn epoll_create1(flags: c_int) -> c_int {
    boundary(-1, || unsafe {
        if in_lib() {
            real::epoll_create1(flags)
        } else if flags & !libc::EPOLL_CLOEXEC != 0 {
            err(libc::EINVAL)
        } else {
            new_repoll(flags & libc::O_CLOEXEC)
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn epoll_ctl(ep: c_int, op: c_int, fd: c_int, ev: *mut epoll_event) -> c_int {
    boundary(-1, || unsafe {
        match kind(ep) {
            Kind::Repoll => {
                if matches!(op, libc::EPOLL_CTL_ADD | libc::EPOLL_CTL_MOD) && migrate::passive_pending(fd) {
                    // Fork mode: an accepted connection moves before the wait.
                    settle(fd);
                }
                let rc = lib(|| repoll_ctl(ep, op, fds::rsocket(fd).unwrap_or(fd), ev));
                if rc == 0 {
                    migrate::note_epoll_ctl(ep, op, fd, ev);
                }
                rc
            }
            _ => real::epoll_ctl(ep, op, fd, ev),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn epoll_wait(ep: c_int, ev: *mut epoll_event, n: c_int, timeout: c_int) -> c_int {
    boundary(-1, || unsafe {
        match kind(ep) {
            Kind::Repoll => lib(|| repoll_wait(ep, ev, n, timeout)),
            _ => real::epoll_wait(ep, ev, n, timeout),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn epoll_pwait(
    ep: c_int,
    ev: *mut epoll_event,
    n: c_int,
    timeout: c_int,
    mask: *const sigset_t,
) -> c_int {
    boundary(-1, || unsafe {
        match kind(ep) {
            Kind::Repoll => with_mask(mask, || lib(|| repoll_wait(ep, ev, n, timeout))),
            _ => real::epoll_pwait(ep, ev, n, timeout, mask),
        }
    })
}
