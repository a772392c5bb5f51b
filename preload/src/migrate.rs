//! Fork mode (`RDMAV_FORK_SAFE`): a TCP connection becomes an rsocket.
//!
//! RDMA resources do not pass to a child process, so a program that
//! accepts and then forks cannot be handed an rsocket by `accept`. In fork
//! mode the preload gives the program real TCP sockets and makes the RDMA
//! connection only at the first data call after `connect` (the active
//! side) or `accept` (the passive side), normally in the process that
//! goes on to use it. The two sides agree over the TCP connection itself,
//! in the exchange upstream's preload uses (so either side may be
//! upstream's, see rsocket(7)):
//!
//! - passive: under the named semaphore `/rsocket_fork` (the moves of all
//!   processes on the machine take turns: a forking server's children all
//!   listen on the same port), an rsocket listens with SO_REUSEADDR and
//!   a backlog of one on the wildcard address at the TCP connection's
//!   local port; then four zero bytes, "ready", go out on TCP and the
//!   connection that comes is accepted;
//! - active: waits until four bytes can be read from TCP (looked at with
//!   MSG_PEEK, not consumed) and, if they are zero, connects an rsocket to
//!   the TCP peer's address.
//!
//! Then each side gives the rsocket the TCP socket's O_NONBLOCK,
//! SO_REUSEADDR and TCP_NODELAY, puts it in place of the application's
//! descriptor with dup3 (the number is never free), moves the descriptor's
//! epoll registrations over, and shuts down and closes TCP. Any failure
//! keeps TCP. Where we go beyond upstream's exchange (nothing on the wire
//! changes):
//! - every wait is bounded (`RSPRELOAD_FORK_TIMEOUT`, default 30 s): the
//!   wait for "ready", for the semaphore, for the connection; a timeout
//!   keeps TCP;
//! - the passive side keeps TCP without sending "ready" when the peer
//!   already sent something (or hung up): a peer in fork mode sends
//!   nothing before the move, so this one is not moving;
//! - while the passive side waits for the rsocket connection, data or a
//!   hang-up on TCP means the peer gave up (it went on over TCP): TCP is
//!   kept at once;
//! - an active side whose rsocket connect fails after it saw "ready"
//!   reads those four bytes away, so the program's stream over the kept
//!   TCP connection starts where the peer's data does.
//!
//! A descriptor being moved is `Fork::Moving`: other threads' data calls
//! on it wait for the outcome (bounded), and `close` waits before closing.

use crate::calls::{
    in_lib, lib, raccept, rbind, rclose, rconnect, repoll_ctl, rfcntl, rgetsockopt, rlisten, rpoll, rsetsockopt,
    rsocket, set_options,
};
use crate::fds::{self, Fork, ForkEvent};
use crate::regs::{record, remove_where, Table, Taken, MAX_REGS};
use crate::{config, errno, real, set_errno};
use libc::{c_int, c_void, epoll_event, pollfd, sockaddr, sockaddr_storage, socklen_t};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The semaphore upstream's preload serialises its moves with.
const SEMAPHORE: &[u8] = b"/rsocket_fork\0";
/// Created as upstream creates it: read and write for owner and group.
const SEMAPHORE_MODE: libc::c_uint = 0o770;
/// A passive side that sees the peer speak on TCP gives a connection that
/// may already be on its way this long to show.
const GRACE_MS: c_int = 200;

/// Diagnostics on stderr when `RSPRELOAD_FORK_DEBUG` is set.
fn note(d: c_int, what: &str, e: c_int) {
    use std::io::Write;
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if !*ON.get_or_init(|| std::env::var_os("RSPRELOAD_FORK_DEBUG").is_some()) {
        return;
    }
    let mut buf = [0u8; 160];
    let room = buf.len();
    let mut w = &mut buf[..];
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    let _ = write!(w, "rspreload[{pid}]: fd {d}: {what}");
    if e != 0 {
        let _ = write!(w, " (errno {e})");
    }
    let _ = writeln!(w);
    let n = room - w.len();
    // SAFETY: n bytes of buf.
    unsafe { real::write(2, buf.as_ptr() as *const c_void, n) };
}

/// Milliseconds left until `deadline` (at least 1), None once it passed.
fn left_ms(deadline: Instant) -> Option<c_int> {
    let left = deadline.checked_duration_since(Instant::now())?;
    if left.is_zero() {
        return None;
    }
    Some(left.as_millis().clamp(1, c_int::MAX as u128) as c_int)
}

fn timeout() -> Duration {
    Duration::from_millis(config::get().fork_timeout_ms)
}

/// Before a data call on `fd` (or a wait for its readiness, see the
/// callers): a fork-mode connection that is due to move moves now; one
/// another thread is moving is waited for. errno is kept. (Only the
/// table is looked at first: a descriptor has a fork state only in fork
/// mode, and reading the configuration would read files through `read`.)
pub(crate) fn settle(fd: c_int) {
    match fds::fork_state(fd) {
        Fork::Active | Fork::Passive if !in_lib() => {
            let e = errno();
            match fds::fork_advance(fd, ForkEvent::Claim) {
                // SAFETY: fd is the application's TCP socket, ours to move now.
                Some(role) => unsafe { migrate(fd, role) },
                None => wait_settled(fd),
            }
            set_errno(e);
        }
        Fork::Moving if !in_lib() => wait_settled(fd),
        _ => {}
    }
}

/// Whether `fd` is a passive fork-mode connection not yet moved (a wait
/// for its readiness moves it first: its peer waits for our "ready").
pub(crate) fn passive_pending(fd: c_int) -> bool {
    matches!(fds::fork_state(fd), Fork::Passive | Fork::Moving) && !in_lib()
}

/// Until no thread moves `fd` (bounded: a move is, and a child forked in
/// the middle of one in another thread would wait for nothing).
pub(crate) fn wait_settled(fd: c_int) {
    let until = Instant::now() + timeout() * 3 + Duration::from_secs(5);
    while fds::fork_state(fd) == Fork::Moving && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Move `d` (claimed by this thread, `role` the state it had).
unsafe fn migrate(d: c_int, role: Fork) {
    let deadline = Instant::now() + timeout();
    // SAFETY: d is ours to move.
    let got = unsafe {
        match role {
            Fork::Active => active(d, deadline),
            _ => passive(d, deadline),
        }
    };
    match got {
        // SAFETY: as above; r is our new rsocket.
        Some(r) => unsafe {
            if install(d, r) {
                note(d, "moved to an rsocket", 0);
            } else {
                note(d, "could not put the rsocket in place: TCP kept", errno());
                lib(|| rclose(r));
            }
        },
        None => note(d, "TCP kept", 0),
    }
    fds::fork_advance(d, ForkEvent::Settled);
}

/// The active side: "ready" from the peer, then an rsocket connected to
/// the peer's address.
unsafe fn active(d: c_int, deadline: Instant) -> Option<c_int> {
    let mut msg = [0xffu8; 4];
    loop {
        // SAFETY: 4 bytes of msg.
        let n = unsafe { real::recv(d, msg.as_mut_ptr() as *mut c_void, 4, libc::MSG_PEEK | libc::MSG_DONTWAIT) };
        if n == 4 {
            break;
        }
        let e = errno();
        if n == 0 || (n < 0 && !matches!(e, libc::EAGAIN | libc::EINTR)) {
            note(d, "no \"ready\": the connection ended", if n < 0 { e } else { 0 });
            return None;
        }
        let Some(ms) = left_ms(deadline) else {
            note(d, "no \"ready\" from the peer in time", 0);
            return None;
        };
        if n > 0 {
            // Part of it: the rest is on its way.
            std::thread::sleep(Duration::from_millis(1));
        } else {
            let mut p = pollfd { fd: d, events: libc::POLLIN, revents: 0 };
            // SAFETY: one pollfd.
            unsafe { real::poll(&mut p, 1, ms) };
        }
    }
    if msg != [0; 4] {
        note(d, "the peer's first bytes are not \"ready\"", 0);
        return None;
    }
    // SAFETY: zeroed storage is a valid sockaddr_storage.
    let mut peer: sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<sockaddr_storage>() as socklen_t;
    // SAFETY: room for any address.
    let r = if unsafe { real::getpeername(d, &mut peer as *mut _ as *mut sockaddr, &mut len) } == 0 {
        // SAFETY: the peer's address, len bytes.
        unsafe { connect_rsocket(d, &peer, len, deadline) }
    } else {
        None
    };
    if r.is_none() {
        // The peer keeps TCP too (its wait ends): "ready" is not the
        // program's data.
        // SAFETY: 4 bytes of msg.
        unsafe { real::recv(d, msg.as_mut_ptr() as *mut c_void, 4, libc::MSG_DONTWAIT) };
    }
    r
}

/// A new rsocket connected to `addr` within the deadline.
unsafe fn connect_rsocket(d: c_int, addr: &sockaddr_storage, len: socklen_t, deadline: Instant) -> Option<c_int> {
    let family = c_int::from(addr.ss_family);
    let r = lib(|| unsafe { rsocket(family, libc::SOCK_STREAM, 0) });
    if r < 0 {
        note(d, "rsocket failed", errno());
        return None;
    }
    let fail = |what: &str| {
        note(d, what, errno());
        lib(|| unsafe { rclose(r) });
        None
    };
    if r >= fds::LIMIT {
        return fail("rsocket's descriptor out of range");
    }
    // SAFETY: our new rsocket.
    unsafe { set_options(r) };
    lib(|| unsafe { rfcntl(r, libc::F_SETFL, libc::O_NONBLOCK) });
    // SAFETY: the caller's address.
    if lib(|| unsafe { rconnect(r, addr as *const _ as *const sockaddr, len) }) != 0 {
        if errno() != libc::EINPROGRESS {
            return fail("rconnect failed");
        }
        loop {
            let Some(ms) = left_ms(deadline) else { return fail("rconnect did not complete in time") };
            let mut p = pollfd { fd: r, events: libc::POLLOUT, revents: 0 };
            // SAFETY: one pollfd.
            let n = lib(|| unsafe { rpoll(&mut p, 1, ms) });
            if n > 0 {
                break;
            }
            if n < 0 && errno() != libc::EINTR {
                return fail("rpoll failed");
            }
        }
        let mut err: c_int = 0;
        let mut l = std::mem::size_of::<c_int>() as socklen_t;
        // SAFETY: an int option.
        let rc = lib(|| unsafe {
            rgetsockopt(r, libc::SOL_SOCKET, libc::SO_ERROR, &mut err as *mut c_int as *mut c_void, &mut l)
        });
        if rc != 0 || err != 0 {
            set_errno(err);
            return fail("rconnect failed");
        }
    }
    Some(r)
}

/// A semaphore opened with sem_open, closed when dropped.
struct Sem(*mut libc::sem_t);

impl Sem {
    fn open() -> Option<Sem> {
        // SAFETY: a NUL-terminated name; sem_open's mode and value.
        let s =
            unsafe { libc::sem_open(SEMAPHORE.as_ptr() as *const libc::c_char, libc::O_CREAT, SEMAPHORE_MODE, 1u32) };
        (s != libc::SEM_FAILED).then_some(Sem(s))
    }

    /// Take it before `deadline`.
    fn wait(&self, deadline: Instant) -> bool {
        loop {
            let Some(ms) = left_ms(deadline) else { return false };
            // SAFETY: a valid timespec.
            let mut now: libc::timespec = unsafe { std::mem::zeroed() };
            // SAFETY: as above.
            unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut now) };
            let ns = now.tv_nsec as i64 + (ms as i64 % 1000) * 1_000_000;
            let at = libc::timespec {
                tv_sec: now.tv_sec + (ms as i64 / 1000) as libc::time_t + (ns / 1_000_000_000) as libc::time_t,
                tv_nsec: (ns % 1_000_000_000) as _,
            };
            // SAFETY: an open semaphore, a valid time.
            if unsafe { libc::sem_timedwait(self.0, &at) } == 0 {
                return true;
            }
            if errno() != libc::EINTR {
                return false;
            }
        }
    }

    fn post(&self) {
        // SAFETY: an open semaphore this process took.
        unsafe { libc::sem_post(self.0) };
    }
}

impl Drop for Sem {
    fn drop(&mut self) {
        // SAFETY: opened by sem_open.
        unsafe { libc::sem_close(self.0) };
    }
}

/// The passive side: a listening rsocket at the connection's local port,
/// "ready" on TCP, then the peer's rsocket connection.
unsafe fn passive(d: c_int, deadline: Instant) -> Option<c_int> {
    let mut p = pollfd { fd: d, events: libc::POLLIN, revents: 0 };
    // SAFETY: one pollfd.
    if unsafe { real::poll(&mut p, 1, 0) } != 0 {
        note(d, "the peer spoke (or hung up) before any \"ready\": it is not moving", 0);
        return None;
    }
    // SAFETY: zeroed storage is a valid sockaddr_storage.
    let mut local: sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<sockaddr_storage>() as socklen_t;
    // SAFETY: room for any address.
    if unsafe { real::getsockname(d, &mut local as *mut _ as *mut sockaddr, &mut len) } != 0 {
        note(d, "getsockname failed", errno());
        return None;
    }
    let family = c_int::from(local.ss_family);
    let wild_len = match family {
        libc::AF_INET => {
            // SAFETY: an AF_INET address: sockaddr_in fits in the storage.
            let sin = unsafe { &mut *(&mut local as *mut _ as *mut libc::sockaddr_in) };
            sin.sin_addr.s_addr = libc::INADDR_ANY;
            sin.sin_zero = [0; 8];
            std::mem::size_of::<libc::sockaddr_in>()
        }
        libc::AF_INET6 => {
            // SAFETY: as above for sockaddr_in6.
            let sin6 = unsafe { &mut *(&mut local as *mut _ as *mut libc::sockaddr_in6) };
            sin6.sin6_addr = libc::in6_addr { s6_addr: [0; 16] };
            sin6.sin6_flowinfo = 0;
            sin6.sin6_scope_id = 0;
            std::mem::size_of::<libc::sockaddr_in6>()
        }
        _ => return None,
    } as socklen_t;
    let Some(sem) = Sem::open() else {
        note(d, "sem_open(/rsocket_fork) failed", errno());
        return None;
    };
    let l = lib(|| unsafe { rsocket(family, libc::SOCK_STREAM, 0) });
    if l < 0 {
        note(d, "rsocket failed", errno());
        return None;
    }
    let one: c_int = 1;
    // SAFETY: an int option; our new rsocket.
    unsafe {
        lib(|| {
            rsetsockopt(
                l,
                libc::SOL_SOCKET,
                libc::SO_REUSEADDR,
                &one as *const c_int as *const c_void,
                std::mem::size_of::<c_int>() as socklen_t,
            )
        });
        // The accepted socket inherits these (queue and inline sizes).
        set_options(l);
        lib(|| rfcntl(l, libc::F_SETFL, libc::O_NONBLOCK));
    }
    let got = if sem.wait(deadline) {
        // SAFETY: our listener; the wildcard address.
        let got = unsafe { listen_and_accept(d, l, &local, wild_len, deadline) };
        lib(|| unsafe { rclose(l) });
        sem.post();
        got
    } else {
        note(d, "the semaphore /rsocket_fork stayed taken", errno());
        lib(|| unsafe { rclose(l) });
        None
    };
    drop(sem);
    got
}

unsafe fn listen_and_accept(
    d: c_int,
    l: c_int,
    wild: &sockaddr_storage,
    len: socklen_t,
    deadline: Instant,
) -> Option<c_int> {
    // SAFETY: the wildcard address, len bytes.
    if lib(|| unsafe { rbind(l, wild as *const _ as *const sockaddr, len) }) != 0 {
        note(d, "rbind at the connection's port failed", errno());
        return None;
    }
    if lib(|| unsafe { rlisten(l, 1) }) != 0 {
        note(d, "rlisten failed", errno());
        return None;
    }
    let ready = [0u8; 4];
    // SAFETY: 4 bytes.
    if unsafe { real::send(d, ready.as_ptr() as *const c_void, 4, libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT) } != 4 {
        note(d, "could not send \"ready\"", errno());
        return None;
    }
    let accept = || {
        let a = lib(|| unsafe { raccept(l, std::ptr::null_mut(), std::ptr::null_mut()) });
        if a >= fds::LIMIT {
            lib(|| unsafe { rclose(a) });
            return None;
        }
        (a >= 0).then_some(a)
    };
    loop {
        let Some(ms) = left_ms(deadline) else {
            note(d, "no rsocket connection from the peer in time", 0);
            return None;
        };
        let mut set =
            [pollfd { fd: l, events: libc::POLLIN, revents: 0 }, pollfd { fd: d, events: libc::POLLIN, revents: 0 }];
        // SAFETY: two pollfds.
        let n = lib(|| unsafe { rpoll(set.as_mut_ptr(), 2, ms) });
        if n < 0 {
            if errno() == libc::EINTR {
                continue;
            }
            note(d, "rpoll failed", errno());
            return None;
        }
        if n == 0 {
            continue;
        }
        if let Some(a) = accept() {
            return Some(a);
        }
        if errno() != libc::EAGAIN {
            note(d, "raccept failed", errno());
            return None;
        }
        if set[1].revents != 0 {
            // The peer went on over TCP (or hung up), unless its
            // connection is just arriving.
            let mut p = pollfd { fd: l, events: libc::POLLIN, revents: 0 };
            // SAFETY: one pollfd.
            if lib(|| unsafe { rpoll(&mut p, 1, GRACE_MS) }) > 0 {
                if let Some(a) = accept() {
                    return Some(a);
                }
            }
            note(d, "the peer went on over TCP", 0);
            return None;
        }
    }
}

/// Put rsocket `r` in place of the application's TCP socket `d`.
unsafe fn install(d: c_int, r: c_int) -> bool {
    // SAFETY: our descriptors; int options.
    unsafe {
        let fl = real::fcntl(d, libc::F_GETFL, 0);
        lib(|| rfcntl(r, libc::F_SETFL, if fl >= 0 { fl & libc::O_NONBLOCK } else { 0 }));
        for (level, name) in [(libc::SOL_SOCKET, libc::SO_REUSEADDR), (libc::IPPROTO_TCP, libc::TCP_NODELAY)] {
            let mut v: c_int = 0;
            let mut l = std::mem::size_of::<c_int>() as socklen_t;
            if real::getsockopt(d, level, name, &mut v as *mut c_int as *mut c_void, &mut l) == 0 && v != 0 {
                lib(|| rsetsockopt(r, level, name, &v as *const c_int as *const c_void, l));
            }
        }
        let fd_flags = real::fcntl(d, libc::F_GETFD, 0);
        let cloexec = if fd_flags >= 0 && fd_flags & libc::FD_CLOEXEC != 0 { libc::O_CLOEXEC } else { 0 };
        // r stays private; the application gets a duplicate in d's place.
        lib(|| rfcntl(r, libc::F_SETFD, libc::FD_CLOEXEC));
        let nd = real::fcntl(r, libc::F_DUPFD_CLOEXEC, 0);
        if nd < 0 {
            return false;
        }
        // TCP, held for its shutdown after the switch.
        let t = real::fcntl(d, libc::F_DUPFD_CLOEXEC, 0);
        // Recorded first: a thread that looks at d from here on finds the
        // rsocket (data calls wait for the move to settle anyway).
        if !fds::set_type(r, libc::SOCK_STREAM) || !fds::add_rsocket(d, r) {
            real::close(nd);
            if t >= 0 {
                real::close(t);
            }
            return false;
        }
        // The epoll registrations of TCP leave before the switch (the
        // kernel keys them by file and number) and come back for r.
        let regs = take_registrations(d);
        for g in regs.iter() {
            lib(|| repoll_ctl(g.ep, libc::EPOLL_CTL_DEL, d, std::ptr::null_mut()));
        }
        if real::dup3(nd, d, cloexec) < 0 {
            fds::forget(d);
            for g in regs.iter() {
                let mut ev = epoll_event { events: g.events, u64: g.data };
                lib(|| repoll_ctl(g.ep, libc::EPOLL_CTL_ADD, d, &mut ev));
            }
            real::close(nd);
            if t >= 0 {
                real::close(t);
            }
            return false;
        }
        real::close(nd);
        for g in regs.iter() {
            let mut ev = epoll_event { events: g.events, u64: g.data };
            if lib(|| repoll_ctl(g.ep, libc::EPOLL_CTL_ADD, r, &mut ev)) != 0 {
                note(d, "its epoll registration could not move", errno());
            }
        }
        if t >= 0 {
            real::shutdown(t, libc::SHUT_RDWR);
            real::close(t);
        }
        true
    }
}

/// The registrations of fork-mode TCP sockets in epoll (repoll)
/// instances (few sockets are ever in this state). The lock is taken
/// with a bounded wait: a child forked while another thread held it must
/// not wait forever.
static REGS: Mutex<Table> = Mutex::new([None; MAX_REGS]);
/// Whether anything was ever recorded in `REGS`.
static ANY_REGS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn with_regs<T>(f: impl FnOnce(&mut Table) -> T) -> Option<T> {
    let until = Instant::now() + Duration::from_secs(1);
    loop {
        match REGS.try_lock() {
            Ok(mut g) => return Some(f(&mut g)),
            Err(std::sync::TryLockError::Poisoned(p)) => return Some(f(&mut p.into_inner())),
            Err(std::sync::TryLockError::WouldBlock) if Instant::now() < until => std::thread::yield_now(),
            Err(_) => return None,
        }
    }
}

/// After a successful epoll_ctl on repoll instance `ep` for the
/// application's descriptor `fd`: follow a fork-mode TCP socket's
/// registrations.
pub(crate) fn note_epoll_ctl(ep: c_int, op: c_int, fd: c_int, ev: *const epoll_event) {
    if !matches!(fds::fork_state(fd), Fork::Fresh | Fork::Active) || in_lib() {
        return;
    }
    // SAFETY: the caller's event (epoll_ctl read it already).
    let ev = unsafe { ev.as_ref() }.map(|e| (e.events, e.u64));
    ANY_REGS.store(true, std::sync::atomic::Ordering::Release);
    if with_regs(|t| record(t, ep, op, fd, ev)) == Some(true) && op != libc::EPOLL_CTL_DEL {
        fds::fork_mark_epolled(fd);
    } else if op != libc::EPOLL_CTL_DEL {
        note(fd, "too many epoll registrations of fork-mode sockets: this one will not move with it", 0);
    }
}

/// `fd` closed (or replaced): its registrations go.
pub(crate) fn forget_registrations(fd: c_int) {
    if fds::fork_epolled(fd) {
        with_regs(|t| remove_where(t, |g| g.fd == fd));
    }
}

/// Repoll instance `ep` closed: the registrations in it go.
pub(crate) fn forget_instance(ep: c_int) {
    if ANY_REGS.load(std::sync::atomic::Ordering::Acquire) {
        with_regs(|t| remove_where(t, |g| g.ep == ep));
    }
}

/// `d`'s registrations, taken from the table.
fn take_registrations(d: c_int) -> Taken {
    if !fds::fork_epolled(d) {
        return Taken::default();
    }
    with_regs(|t| remove_where(t, |g| g.fd == d)).unwrap_or_default()
}
