//! The progress engine: one thread per process, started with the first
//! rsocket, that makes rsockets progress without their application:
//! - every rsocket's CM id lives on the engine's one event channel: the
//!   engine resolves addresses and routes, connects, accepts requests
//!   (each handshake asynchronously: accepts are never serialised behind
//!   one another), and notices disconnects;
//! - it processes a connection's completions (credit updates, reposted
//!   receives, the peer's shutdown) whenever no application thread is
//!   inside a call on that socket (`RSocket::engine_may_progress`);
//! - it sends keepalives and finishes closes handed to it;
//! - for datagram sockets (`dgram.rs`) it serves the UDP resolution
//!   exchange (answers, queued payloads, route resolutions for address
//!   handles, asynchronous on its channel) and takes the UD completions.
//!
//! After each change it updates the socket's descriptor (`signal.rs`), so
//! that threads blocked in poll/epoll/select or in the library wake.
//! The engine never blocks on anything but its epoll wait, holds one
//! socket's lock at a time, and acks every CM event before acting on it
//! (so that destroying an id never waits for an event the engine holds).

use super::dgram;
use super::socket::{self, Inner, Phase, RSocket};
use super::stream::Conn;
use super::wire::{self, ConnData};
use crate::abi::{rdma_cm_event_type as E, AF_IB};
use crate::cm::channel::{self, Channel};
use crate::cm::conn::{self, ConnParams};
use crate::cm::id::{self, Id};
use crate::cm::{dispatch, events, lifecycle};
use crate::cmem::Shared;
use crate::error::{Error, Result};
use crate::handle::Table;
use crate::ucma::KernelBuf;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// Tokens of the engine's epoll set (completion channels use their fd).
const TOKEN_CM: u64 = u64::MAX;
const TOKEN_WAKE: u64 = u64::MAX - 1;

/// Address and route resolution are retried this often after a timeout,
/// the timeout doubling from one second (upstream's rule).
const CONN_RETRIES: u32 = 6;
/// How long a close waits for its sends to finish (then the connection is
/// torn down anyway).
pub(crate) const CLOSE_DRAIN_MS: u64 = 2000;
/// A deferred SHUTDOWN/DISCONNECT goes this long after the data before it
/// completed. The completion means the data is in the peer's memory, not
/// that the peer's application took it in; an upstream peer's rpoll
/// reports POLLHUP as soon as it has seen the disconnect, data unread or
/// not, and rstream `-T a` stops there. The grace lets a peer that is
/// waiting for that data take it first (without it, rstream `-T a` with an
/// upstream client lost its last transfer about once in a full test run).
pub(crate) const CTRL_GRACE_MS: u64 = 100;

pub struct Engine {
    ch: Shared<Channel>,
    ep: OwnedFd,
    wake: OwnedFd,
    start: Instant,
}

/// Sockets whose completions the engine watches, by completion-channel fd.
static BY_COMP: Table<Shared<RSocket>> = Table::new();
/// Sockets with keepalive on.
static KEEPALIVE: Mutex<Vec<Shared<RSocket>>> = Mutex::new(Vec::new());
/// Sockets whose shutdown message waits for their data to complete
/// (non-blocking shutdowns and closes).
static DEFERRED: Mutex<Vec<Shared<RSocket>>> = Mutex::new(Vec::new());
/// Closes handed over to the engine (non-blocking sockets): torn down once
/// their sends are done, or at their deadline.
static CLOSING: Mutex<Vec<(Shared<RSocket>, u64)>> = Mutex::new(Vec::new());

/// The engine of this process (null: not started, or this is a child
/// after fork(), whose engine thread did not come along).
static ENGINE: AtomicPtr<Engine> = AtomicPtr::new(std::ptr::null_mut());
/// An engine is being started (a flag, not a mutex: a child after fork()
/// resets it whatever the parent's threads were doing).
static STARTING: AtomicBool = AtomicBool::new(false);
static AT_FORK: AtomicBool = AtomicBool::new(false);

fn check(r: i32) -> Result<i32> {
    if r < 0 {
        Err(Error::last_os())
    } else {
        Ok(r)
    }
}

/// The engine, started on first use (and again in a child after fork()).
pub fn get() -> Result<&'static Engine> {
    let p = ENGINE.load(Ordering::Acquire);
    if !p.is_null() {
        // SAFETY: engines are leaked, never freed.
        return Ok(unsafe { &*p });
    }
    while STARTING.swap(true, Ordering::Acquire) {
        std::thread::yield_now();
    }
    let p = ENGINE.load(Ordering::Acquire);
    let r = if p.is_null() {
        start()
    } else {
        // SAFETY: as above.
        Ok(unsafe { &*p })
    };
    STARTING.store(false, Ordering::Release);
    r
}

/// In the child of fork(): the parent's engine thread is not there. The
/// next rsocket starts a new engine; the parent's sockets, copied into the
/// child, are left alone (their resources are the parent's).
extern "C" fn after_fork_in_child() {
    ENGINE.store(std::ptr::null_mut(), Ordering::Release);
    STARTING.store(false, Ordering::Release);
    socket::forget_after_fork();
    dgram::forget_after_fork();
    for list in [&KEEPALIVE] {
        if let Ok(mut k) = list.try_lock() {
            std::mem::forget(std::mem::take(&mut *k));
        }
    }
    if let Ok(mut c) = CLOSING.try_lock() {
        std::mem::forget(std::mem::take(&mut *c));
    }
    if let Ok(mut d) = DEFERRED.try_lock() {
        std::mem::forget(std::mem::take(&mut *d));
    }
}

fn start() -> Result<&'static Engine> {
    // (start() runs alone: callers hold STARTING)
    if !AT_FORK.load(Ordering::Acquire) {
        // SAFETY: registers a handler that only touches atomics and
        // try-locks. glibc allocates the registration: it can fail.
        if unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) } != 0 {
            return Err(Error::NOMEM);
        }
        AT_FORK.store(true, Ordering::Release);
    }
    let ch = channel::create()?;
    // SAFETY: plain fcntl on the channel's fd: the engine reads it until
    // EAGAIN.
    unsafe {
        let fl = libc::fcntl(ch.fd(), libc::F_GETFL);
        check(libc::fcntl(ch.fd(), libc::F_SETFL, fl | libc::O_NONBLOCK))?;
    }
    // SAFETY: new descriptors, owned at once.
    let ep = unsafe { OwnedFd::from_raw_fd(check(crate::sys::epoll_create1(libc::EPOLL_CLOEXEC))?) };
    // SAFETY: as above.
    let wake = unsafe { OwnedFd::from_raw_fd(check(libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK))?) };
    for (fd, tok) in [(ch.fd(), TOKEN_CM), (wake.as_raw_fd(), TOKEN_WAKE)] {
        let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: tok };
        // SAFETY: our epoll set and descriptors.
        check(unsafe { crate::sys::epoll_ctl(ep.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) })?;
    }
    socket::set_engine_fds(ep.as_raw_fd(), wake.as_raw_fd());
    let e = match crate::cmem::try_box(Engine { ch, ep, wake, start: Instant::now() }) {
        Ok(e) => Box::into_raw(e),
        Err(err) => {
            socket::set_engine_fds(-1, -1);
            return Err(err);
        }
    };
    // SAFETY: the engine is leaked from here on (never freed) once its
    // thread started; the address is what crosses to the thread.
    let eaddr = e as usize;
    if let Err(err) = crate::cmem::spawn(cstr!("rsocket-engine"), move || run(unsafe { &*(eaddr as *const Engine) })) {
        socket::set_engine_fds(-1, -1);
        // SAFETY: no thread got the engine: ours to free again.
        drop(unsafe { Box::from_raw(e) });
        return Err(err);
    }
    ENGINE.store(e, Ordering::Release);
    // SAFETY: leaked above.
    Ok(unsafe { &*e })
}

impl Engine {
    /// The event channel every rsocket id lives on.
    pub fn channel(&self) -> &Shared<Channel> {
        &self.ch
    }

    /// Milliseconds since the engine started (keepalive and close clocks).
    pub fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    /// Watch a connection's completion channel (one-shot: see
    /// `RSocket::watch_off` for who enables it again).
    pub fn watch(&self, s: &Shared<RSocket>, comp_fd: i32) -> Result<()> {
        BY_COMP.insert(comp_fd as usize, s.clone())?;
        s.mark_watched();
        let mut ev = libc::epoll_event { events: socket::WATCH_EVENTS, u64: comp_fd as u64 };
        // SAFETY: our epoll set; comp_fd is the connection's channel.
        let r = unsafe { crate::sys::epoll_ctl(self.ep.as_raw_fd(), libc::EPOLL_CTL_ADD, comp_fd, &mut ev) };
        if r != 0 {
            BY_COMP.remove(comp_fd as usize);
            return Err(Error::last_os());
        }
        Ok(())
    }

    /// Stop watching a completion channel (before it is destroyed).
    pub fn unwatch(&self, comp_fd: i32) {
        // SAFETY: our epoll set.
        unsafe { crate::sys::epoll_ctl(self.ep.as_raw_fd(), libc::EPOLL_CTL_DEL, comp_fd, std::ptr::null_mut()) };
        BY_COMP.remove(comp_fd as usize);
    }

    /// Make the engine look at its timers again.
    pub fn kick(&self) {
        socket::kick_engine();
    }
}

/// Start or stop keepalives of a socket.
pub fn set_keepalive(s: &Shared<RSocket>, on: bool) -> Result<()> {
    let mut k = KEEPALIVE.lock().unwrap_or_else(|e| e.into_inner());
    k.retain(|x| !Shared::ptr_eq(x, s));
    if on {
        k.try_reserve(1).map_err(|_| Error::NOMEM)?;
        k.push(s.clone());
    }
    drop(k);
    if let Ok(e) = get() {
        e.kick();
    }
    Ok(())
}

/// Post a socket's deferred control message once its sends are done.
pub fn defer_ctrl(s: Shared<RSocket>) -> Result<()> {
    let e = get()?;
    let mut d = DEFERRED.lock().unwrap_or_else(|e| e.into_inner());
    if !d.iter().any(|x| Shared::ptr_eq(x, &s)) {
        d.try_reserve(1).map_err(|_| Error::NOMEM)?;
        d.push(s);
    }
    drop(d);
    e.kick();
    Ok(())
}

/// The deferred control messages whose data completed at least
/// `CTRL_GRACE_MS` ago are posted (the others are looked at again next
/// tick); whether any still wait.
fn post_deferred(now: u64) -> bool {
    // Taken out of the list first: a socket's lock is never taken under the
    // list's (defer_ctrl takes the list's under the socket's).
    let mut d = std::mem::take(&mut *DEFERRED.lock().unwrap_or_else(|e| e.into_inner()));
    if d.is_empty() {
        return false;
    }
    d.retain(|s| {
        let mut g = s.lock();
        let Some(ctrl) = g.deferred_ctrl else { return false };
        socket::settle(&mut g, true);
        if g.phase != Phase::Connected {
            g.deferred_ctrl = None;
            return false;
        }
        let Some(idle) = g.conn.as_ref().map(|c| c.sends_idle() && c.flow.ctrl_free()) else {
            g.deferred_ctrl = None;
            return false;
        };
        if !idle {
            g.deferred_idle_since = None;
            return true;
        }
        let since = *g.deferred_idle_since.get_or_insert(now);
        if now < since + CTRL_GRACE_MS {
            return true;
        }
        if let Some(c) = g.conn.as_mut() {
            let _ = c.post_ctrl(ctrl);
        }
        g.deferred_ctrl = None;
        g.deferred_idle_since = None;
        s.show(&mut g);
        false
    });
    let mut list = DEFERRED.lock().unwrap_or_else(|e| e.into_inner());
    if list.is_empty() {
        *list = d;
    } else if list.try_reserve(d.len()).is_ok() {
        list.append(&mut d);
    } else {
        // No memory to keep them: post what waits now.
        drop(list);
        for s in d {
            let mut g = s.lock();
            let connected = g.phase == Phase::Connected;
            if let (Some(ctrl), Some(c)) = (g.deferred_ctrl.take(), g.conn.as_mut()) {
                if connected && c.flow.ctrl_free() {
                    let _ = c.post_ctrl(ctrl);
                }
            }
        }
        list = DEFERRED.lock().unwrap_or_else(|e| e.into_inner());
    }
    !list.is_empty()
}

/// Finish a close later (the socket's sends may still be in flight).
pub fn close_later(s: Shared<RSocket>) -> Result<()> {
    let e = get()?;
    let due = e.now_ms() + CLOSE_DRAIN_MS;
    let mut c = CLOSING.lock().unwrap_or_else(|e| e.into_inner());
    if c.try_reserve(1).is_err() {
        drop(c);
        teardown(&s);
        return Ok(());
    }
    c.push((s, due));
    drop(c);
    e.kick();
    Ok(())
}

/// At process exit (the library's destructor): closes the engine is still
/// finishing get the rest of their time (at most `CLOSE_DRAIN_MS`), so that
/// what a non-blocking socket sent just before rclose is not lost with the
/// process. (Upstream's rclose blocks until its sends are done instead.)
extern "C" fn finish_closes_at_exit() {
    if ENGINE.load(Ordering::Acquire).is_null() {
        return;
    }
    let end = Instant::now() + std::time::Duration::from_millis(CLOSE_DRAIN_MS);
    let mut kicked = false;
    while Instant::now() < end {
        if surely_empty(&CLOSING) && surely_empty(&DEFERRED) {
            return;
        }
        if !kicked {
            socket::kick_engine();
            kicked = true;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Whether a list is empty (false while another thread holds it).
fn surely_empty<T>(list: &Mutex<Vec<T>>) -> bool {
    match list.try_lock() {
        Ok(l) => l.is_empty(),
        Err(std::sync::TryLockError::Poisoned(p)) => p.get_ref().is_empty(),
        Err(std::sync::TryLockError::WouldBlock) => false,
    }
}

#[used]
#[link_section = ".fini_array"]
static AT_EXIT: extern "C" fn() = finish_closes_at_exit;

/// How long the engine keeps ticking after a socket last joined the
/// hand-off list from a `repoll_wait` loop without waking it.
const REPOLL_LINGER_MS: u64 = 1000;

fn run(e: &'static Engine) {
    let mut evs = [libc::epoll_event { events: 0, u64: 0 }; 32];
    let mut next_look = 0;
    // Until when the engine keeps ticking for a repoll_wait loop (engine
    // ms; see socket::ENGINE_TICKING).
    let mut linger_until = 0;
    // The last wake-up was a kick (a socket joined the hand-off list, or
    // another list changed).
    let mut kicked = false;
    loop {
        let mut timeout = timers(e, &mut next_look);
        let now = e.now_ms();
        // Tick while a repoll_wait loop hands sockets over itself: from the
        // first kick after a repoll_wait call for as long as sockets keep
        // joining the list without a kick (an idle loop, or one whose
        // sockets are quiet, stops it after REPOLL_LINGER_MS).
        let repoll = socket::REPOLL_CALLED.swap(false, Ordering::Relaxed);
        if socket::KICK_SKIPPED.swap(false, Ordering::Relaxed) || (repoll && kicked) {
            linger_until = now + REPOLL_LINGER_MS;
        }
        kicked = false;
        let tick = socket::HANDOFF_MAX_MS as i32;
        if now < linger_until {
            socket::ENGINE_TICKING.store(true, Ordering::SeqCst);
            if timeout < 0 || timeout > tick {
                timeout = tick;
            }
        } else {
            socket::ENGINE_TICKING.store(false, Ordering::SeqCst);
            // A socket listed without a wake-up while the engine was
            // still ticking: look at it in a tick.
            if next_look == 0 && socket::handoffs_waiting() && !(0..=socket::HANDOFF_TICK_MS).contains(&timeout) {
                timeout = socket::HANDOFF_TICK_MS;
            }
        }
        // SAFETY: our epoll set; room for evs.len() events.
        let n = unsafe { crate::sys::epoll_wait(e.ep.as_raw_fd(), evs.as_mut_ptr(), evs.len() as i32, timeout) };
        for ev in &evs[..n.max(0) as usize] {
            let token = ev.u64;
            match token {
                TOKEN_CM => cm_events(e),
                TOKEN_WAKE => {
                    kicked = true;
                    let mut v = 0u64;
                    // SAFETY: an 8-byte read from our eventfd.
                    unsafe { libc::read(e.wake.as_raw_fd(), &mut v as *mut u64 as *mut libc::c_void, 8) };
                }
                t if t & dgram::DG_TOKEN != 0 => dgram::on_ready((t & !dgram::DG_TOKEN) as i32),
                t if t & socket::TIMER_TOKEN != 0 => {
                    if socket::timer_expired((t & !socket::TIMER_TOKEN) as i32) {
                        // Look at the hand-off list now.
                        next_look = 0;
                    }
                }
                fd => {
                    if let Some(s) = BY_COMP.get(fd as usize) {
                        if s.engine_may_progress() {
                            let mut g = s.lock();
                            socket::settle(&mut g, true);
                            s.watch_enabled(&g);
                            s.show(&mut g);
                        }
                    }
                }
            }
        }
    }
}

/// Keepalives that are due, closes that are done, completions to take
/// over; the milliseconds until the next deadline (-1: none).
fn timers(e: &Engine, next_look: &mut u64) -> i32 {
    let now = e.now_ms();
    let mut next: Option<u64> = None;
    // Hand-offs: each socket is looked at when its time comes
    // (`RSocket::handoff_due`), however often the engine wakes; sockets
    // that joined the list meanwhile within a tick.
    if now >= *next_look {
        let tick = socket::HANDOFF_TICK_MS as u64;
        let mut keep = socket::take_handoffs();
        let mut soonest = u64::MAX;
        keep.retain(|s| match RSocket::handoff_due(s, now) {
            Some(d) => {
                soonest = soonest.min(d);
                true
            }
            None => false,
        });
        let (waiting, arrived) = socket::return_handoffs(keep);
        if arrived {
            soonest = soonest.min(now + tick);
        }
        *next_look = if waiting { soonest.max(now + 1) } else { 0 };
        if waiting {
            next = Some(*next_look);
        }
    } else if socket::handoffs_waiting() {
        next = Some(*next_look);
    }
    // Datagram sockets' hand-offs (they keep their own times).
    if let Some(d) = dgram::handoffs(now) {
        next = Some(next.map_or(d, |n| n.min(d)));
    }
    let sockets: Vec<Shared<RSocket>> = {
        let k = KEEPALIVE.lock().unwrap_or_else(|e| e.into_inner());
        let mut v = Vec::new();
        if v.try_reserve(k.len()).is_ok() {
            v.extend(k.iter().cloned());
        }
        v
    };
    for s in sockets {
        let mut g = s.lock();
        let period = keepalive_period(&g);
        let due = *g.keepalive_due.get_or_insert(now + period);
        if due <= now {
            if g.phase == Phase::Connected {
                if let Some(c) = g.conn.as_mut() {
                    let _ = c.post_keepalive();
                }
            }
            g.keepalive_due = Some(now + period);
        }
        let d = g.keepalive_due.unwrap_or(now + period);
        next = Some(next.map_or(d, |n| n.min(d)));
    }
    if post_deferred(now) {
        let soon = now + 1;
        next = Some(next.map_or(soon, |n| n.min(soon)));
    }
    let done: Vec<Shared<RSocket>> = {
        let mut c = CLOSING.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::new();
        let mut i = 0;
        while i < c.len() {
            let (s, due) = &c[i];
            let idle = {
                let mut g = s.lock();
                socket::settle(&mut g, true);
                g.phase != Phase::Connected
                    || (g.deferred_ctrl.is_none() && g.conn.as_ref().is_none_or(|c| c.sends_idle()))
            };
            if idle || *due <= now {
                if out.try_reserve(1).is_ok() {
                    out.push(c.swap_remove(i).0);
                    continue;
                }
            } else {
                next = Some(next.map_or(*due, |n| n.min(*due)));
            }
            i += 1;
        }
        if !c.is_empty() {
            // Poll closing sockets again soon (their completions are
            // watched, but a quiet one must still reach its deadline).
            let soon = now + 10;
            next = Some(next.map_or(soon, |n| n.min(soon)));
        }
        out
    };
    for s in done {
        teardown(&s);
    }
    match next {
        None => -1,
        Some(d) => d.saturating_sub(now).min(i32::MAX as u64) as i32,
    }
}

/// The keepalive period of a socket, in milliseconds (TCP_KEEPIDLE, else
/// the system's TCP keepalive time, else two hours).
fn keepalive_period(g: &Inner) -> u64 {
    let secs = if g.opts.keepalive_time > 0 {
        g.opts.keepalive_time as u64
    } else {
        crate::sysfs::SPath::new(b"/proc/sys/net/ipv4/tcp_keepalive_time")
            .and_then(|p| crate::sysfs::read_attr(&p))
            .and_then(|s| s.as_str().trim().parse::<u64>().ok())
            .unwrap_or(7200)
    };
    secs.max(1) * 1000
}

/// What the engine needs of a CM event, copied out so that the event can
/// be acked before the engine acts on it.
struct Note {
    ty: u32,
    status: i32,
    id: usize,
    listen_id: usize,
    /// Private data (the peer's connection data), at most 256 bytes.
    data: [u8; 256],
    data_len: usize,
    /// The request's connection parameters (CONNECT_REQUEST).
    param: crate::abi::rdma_conn_param,
}

fn cm_events(e: &Engine) {
    loop {
        let ev = match dispatch::get_event_owned(&e.ch) {
            Ok(ev) => ev,
            Err(_) => return,
        };
        // SAFETY: conn is the param member the kernel fills for the
        // connection events handled here (and plain data otherwise).
        let param = unsafe { ev.public.param.conn };
        let pd = ev.conn_private();
        let mut note = Note {
            ty: ev.public.event,
            status: ev.public.status,
            id: ev.public.id as usize,
            listen_id: ev.public.listen_id as usize,
            data: [0; 256],
            data_len: pd.len().min(256),
            param,
        };
        note.data[..note.data_len].copy_from_slice(&pd[..note.data_len]);
        note.param.private_data = std::ptr::null();
        events::done(ev);
        handle(e, &note);
    }
}

fn handle(e: &Engine, n: &Note) {
    if dgram::is_resolver(n.id) {
        return dgram::resolver_event(n.id, n.ty, n.status);
    }
    if n.ty == E::RDMA_CM_EVENT_CONNECT_REQUEST as u32 {
        return accept_request(e, n);
    }
    let Some(s) = socket::by_id(n.id) else { return };
    let mut g = s.lock();
    let ty = E::try_from(n.ty);
    match (g.phase, ty) {
        (Phase::ResolvingAddr, Ok(E::RDMA_CM_EVENT_ADDR_RESOLVED)) => {
            g.retries = 0;
            if let Err(err) = start_route(&mut g) {
                connect_error(&mut g, err);
            }
        }
        (Phase::ResolvingAddr, Ok(E::RDMA_CM_EVENT_ADDR_ERROR)) => {
            if n.status == -libc::ETIMEDOUT && g.retries <= CONN_RETRIES {
                if let Err(err) = resolve_addr(&mut g) {
                    connect_error(&mut g, err);
                }
            } else {
                connect_error(&mut g, status_err(n.status));
            }
        }
        (Phase::ResolvingRoute, Ok(E::RDMA_CM_EVENT_ROUTE_RESOLVED)) => {
            if let Err(err) = start_connect(&mut g) {
                connect_error(&mut g, err);
            }
        }
        (Phase::ResolvingRoute, Ok(E::RDMA_CM_EVENT_ROUTE_ERROR)) => {
            if n.status == -libc::ETIMEDOUT && g.retries <= CONN_RETRIES {
                if let Err(err) = start_route(&mut g) {
                    connect_error(&mut g, err);
                }
            } else {
                connect_error(&mut g, status_err(n.status));
            }
        }
        (Phase::Connecting, Ok(E::RDMA_CM_EVENT_ESTABLISHED)) => {
            let peer = ConnData::decode(&n.data[..n.data_len]);
            match peer {
                Some(p) if p.version == wire::VERSION => {
                    if let Some(c) = g.conn.as_mut() {
                        c.set_peer(&p);
                    }
                    established(e, &s, &mut g);
                }
                _ => connect_error(&mut g, Error::Errno(libc::ENOTSUP)),
            }
        }
        (Phase::Accepting, Ok(E::RDMA_CM_EVENT_ESTABLISHED)) => {
            established(e, &s, &mut g);
            let l = g.listener.take();
            s.show(&mut g);
            drop(g);
            if let Some(l) = l {
                let mut lg = l.lock();
                lg.pending.retain(|c| !Shared::ptr_eq(c, &s));
                if lg.phase == Phase::Listening && !lg.closing && lg.accepted.try_reserve(1).is_ok() {
                    lg.accepted.push_back(s.clone());
                    l.show(&mut lg);
                    return;
                }
                drop(lg);
                // The listener is gone (or out of memory): nobody will
                // accept this connection.
                socket::forget_fd(s.fd());
                teardown(&s);
            }
            return;
        }
        (Phase::Accepting, Ok(_)) => {
            // The handshake failed before the connection was established.
            let l = g.listener.take();
            drop(g);
            if let Some(l) = l {
                l.lock().pending.retain(|c| !Shared::ptr_eq(c, &s));
            }
            socket::forget_fd(s.fd());
            teardown(&s);
            return;
        }
        (p, Ok(E::RDMA_CM_EVENT_REJECTED | E::RDMA_CM_EVENT_UNREACHABLE | E::RDMA_CM_EVENT_CONNECT_ERROR))
            if p.opening() =>
        {
            let err = if n.ty == E::RDMA_CM_EVENT_REJECTED as u32 {
                Error::Errno(libc::ECONNREFUSED)
            } else {
                status_err(n.status)
            };
            connect_error(&mut g, err);
        }
        (Phase::Connected, Ok(E::RDMA_CM_EVENT_DISCONNECTED)) => {
            // Take the data already delivered first.
            socket::progress(&mut g);
            if g.phase == Phase::Connected {
                g.phase = Phase::Disconnected;
                g.rd = false;
                g.wr = false;
            }
            if let Some(c) = g.conn.as_ref() {
                c.to_error();
            }
        }
        (_, Ok(E::RDMA_CM_EVENT_DEVICE_REMOVAL)) => {
            g.phase = Phase::Error;
            g.err = libc::ENODEV;
            g.rd = false;
            g.wr = false;
        }
        _ => {}
    }
    s.show(&mut g);
}

/// The errno of a failed CM event's status (negative errno from the
/// kernel; EIO when it gives none).
fn status_err(status: i32) -> Error {
    Error::Errno(if status < 0 { -status } else { libc::EIO })
}

fn connect_error(g: &mut Inner, e: Error) {
    g.phase = Phase::ConnectError;
    g.err = match e {
        Error::Errno(n) => n,
        Error::Eai(_) => libc::EIO,
    };
    g.rd = false;
    g.wr = false;
}

/// Address resolution (again): the timeout doubles with each retry.
pub fn resolve_addr(g: &mut Inner) -> Result<()> {
    let to = 1000i32 << g.retries.min(10);
    g.retries += 1;
    let dst = g.id.addr(false);
    g.phase = Phase::ResolvingAddr;
    g.id.resolve_addr(None, dst.as_bytes(), to)
}

fn start_route(g: &mut Inner) -> Result<()> {
    g.phase = Phase::ResolvingRoute;
    match g.opts.route.take() {
        Some(route) => {
            let len = u32::try_from(route.len()).map_err(|_| Error::INVAL)?;
            let buf = KernelBuf { addr: route.as_ptr() as u64, len };
            g.id.set_option(crate::abi::RDMA_OPTION_IB as u32, crate::abi::RDMA_OPTION_IB_PATH as u32, buf)
        }
        None => {
            let to = 1000i32 << g.retries.min(10);
            g.retries += 1;
            g.id.resolve_route(to)
        }
    }
}

/// The connection data block as sent: for AF_IB a zeroed IB connect header
/// first (the kernel adds its own for IP addresses).
fn private_data(domain: i32, c: &Conn) -> ([u8; wire::IB_HDR_LEN + wire::CONN_DATA_LEN], usize) {
    let mut b = [0u8; wire::IB_HDR_LEN + wire::CONN_DATA_LEN];
    let off = if domain == AF_IB { wire::IB_HDR_LEN } else { 0 };
    b[off..off + wire::CONN_DATA_LEN].copy_from_slice(&c.conn_data().encode());
    (b, off + wire::CONN_DATA_LEN)
}

fn start_connect(g: &mut Inner) -> Result<()> {
    g.retries = 0;
    let c = Conn::new(&g.id, &g.opts)?;
    let (pd, len) = private_data(g.domain, &c);
    g.conn = Some(c);
    let p = ConnParams {
        private_data: &pd[..len],
        flow_control: 1,
        retry_count: 7,
        rnr_retry_count: 7,
        ..Default::default()
    };
    g.phase = Phase::Connecting;
    conn::connect(&g.id, Some(&p))
}

/// The connection is up: both directions open, completions watched, the
/// first credit update (the second half of our ring) sent.
fn established(e: &Engine, s: &Shared<RSocket>, g: &mut Inner) {
    g.phase = Phase::Connected;
    g.rd = true;
    g.wr = true;
    if let Some(fd) = g.conn.as_ref().map(|c| c.comp_fd) {
        if let Err(err) = e.watch(s, fd) {
            g.phase = Phase::Error;
            g.err = match err {
                Error::Errno(n) => n,
                Error::Eai(_) => libc::EIO,
            };
            return;
        }
    }
    // The first credit update now (settle polls only if something may have
    // completed: the receive CQ may already be armed); a peer may wait for
    // it before it sends more than the first half.
    socket::credits(g);
    socket::settle(g, false);
}

/// A connection request on a listener: a new socket for it, its resources,
/// and the accept (completed by the ESTABLISHED event). On any failure the
/// request is rejected.
fn accept_request(e: &Engine, n: &Note) {
    let Ok(child_id) = id::lookup(n.id as *const crate::abi::rdma_cm_id) else { return };
    let reject = |cid: &Shared<Id>| {
        let _ = conn::reject(cid, &[], 0);
        let _ = lifecycle::destroy_id(cid);
    };
    let Some(l) = socket::by_id(n.listen_id) else { return reject(&child_id) };
    let (domain, opts) = {
        let mut g = l.lock();
        if g.phase != Phase::Listening || g.closing {
            drop(g);
            return reject(&child_id);
        }
        // Room, before the request is accepted, in the listener's lists
        // for this connection: pending now, accepted once established
        // (`accepted` keeps room for every pending connection). Without
        // it the request is rejected; a connection accepted and then
        // dropped for want of memory left the peer's connect hanging.
        let waiting = g.pending.len() + 1;
        if g.pending.try_reserve(1).is_err() || g.accepted.try_reserve(waiting).is_err() {
            drop(g);
            return reject(&child_id);
        }
        (g.domain, g.opts.inherit())
    };
    let off = if domain == AF_IB { wire::IB_HDR_LEN } else { 0 };
    let req = n.data.get(off..n.data_len).and_then(ConnData::decode);
    let Some(req) = req.filter(|r| r.version == wire::VERSION) else { return reject(&child_id) };
    let cloexec = opts.fd_flags & libc::FD_CLOEXEC != 0;
    let s = match RSocket::create(domain, child_id.clone(), opts, cloexec) {
        Ok(s) => s,
        Err(_) => return reject(&child_id),
    };
    let r = (|| -> Result<()> {
        let mut g = s.lock();
        let mut c = Conn::new(&child_id, &g.opts)?;
        c.set_peer(&req);
        let (pd, len) = private_data(libc::AF_INET, &c);
        g.conn = Some(c);
        g.phase = Phase::Accepting;
        g.listener = Some(l.clone());
        let p = ConnParams {
            private_data: &pd[..len],
            responder_resources: n.param.responder_resources,
            initiator_depth: n.param.initiator_depth,
            flow_control: n.param.flow_control,
            retry_count: n.param.retry_count,
            rnr_retry_count: n.param.rnr_retry_count,
            srq: 0,
            qp_num: 0,
        };
        conn::accept(&child_id, Some(&p)).map(drop)
    })();
    match r {
        Ok(()) => {
            let mut lg = l.lock();
            if lg.pending.try_reserve(1).is_ok() {
                lg.pending.push(s);
                return;
            }
            drop(lg);
            let _ = conn::reject(&child_id, &[], 0);
            socket::forget_fd(s.fd());
            teardown(&s);
        }
        Err(_) => {
            let _ = conn::reject(&child_id, &[], 0);
            socket::forget_fd(s.fd());
            teardown(&s);
        }
    }
    let _ = e;
}

/// Free a socket's connection and id (and, for a listener, every
/// connection nobody accepted). Never called with the socket's lock held.
pub fn teardown(s: &Shared<RSocket>) {
    RSocket::retire_timer(s);
    let (conn, id, children) = {
        let mut g = s.lock();
        g.closing = true;
        s.close_descriptor(&mut g);
        // (taken whole: collecting them into one list could not fail
        // gracefully on a close path)
        let children = (std::mem::take(&mut g.accepted), std::mem::take(&mut g.pending));
        g.listener = None;
        (g.conn.take(), g.id.clone(), children)
    };
    let _ = set_keepalive(s, false);
    if let Some(c) = conn {
        let e = ENGINE.load(Ordering::Acquire);
        if !e.is_null() {
            // SAFETY: engines are never freed.
            unsafe { &*e }.unwatch(c.comp_fd);
        }
        drop(c);
    }
    socket::forget_id(Id::key(&id));
    let _ = lifecycle::destroy_id(&id);
    for c in children.0.into_iter().chain(children.1) {
        socket::forget_fd(c.fd());
        teardown(&c);
    }
}
