//! Datagram rsockets (`rsocket(AF_INET|AF_INET6, SOCK_DGRAM, 0)`): the
//! socket object, its tables, its data path and the progress engine's part
//! in it (docs/rsockets.md, "Datagram sockets").
//!
//! A [`DgSocket`] has:
//! - the application's descriptor, one end of a socket pair that mirrors
//!   the socket's readiness (`signal.rs`), as for stream sockets;
//! - an internal UDP socket (`udp.rs`): the socket's port, and the channel
//!   of the resolution exchange with peers;
//! - one UD QP per local source address (`dgqp.rs`), made when the first
//!   datagram to or from a peer needs one;
//! - destinations by peer address: the QP that talks to the peer and, once
//!   known, the peer's QP number and an address handle;
//! - the queue of received datagrams (at most the receive queue size).
//!
//! Threads: the application's calls, and the progress engine, which reads
//! the UDP socket (answers DATA with our QP number, queues its payload,
//! resolves the peer's route and makes its address handle, asynchronously
//! on its event channel) and takes the UD completions (received messages,
//! freed send slots) whenever they come. Everything is under the socket's
//! one mutex, held only for non-blocking work; a blocking call sleeps on
//! the socket's own descriptor, which the engine keeps up to date.
//! Anything a peer sends is checked before use (`dgwire.rs`).

use super::config::{self, Opts};
use super::dgqp::{Ah, DgQp, QP_MAX};
use super::dgwire::{self, AddrKey, SockAddr, UdpHeader, SLOT, UDP_MAX, UDP_OP_CTRL, UDP_OP_DATA};
use super::signal::{Ready, Signal};
use super::socket;
use super::udp::{self, Udp};
use crate::abi::{rdma_cm_event_type as E, RDMA_PS_UDP};
use crate::cm::channel::Channel;
use crate::cm::{id::Id, lifecycle};
use crate::cmem::Shared;
use crate::error::{Error, Result};
use crate::handle::Table;
use crate::lock::{Lock, LockGuard};
use crate::sockaddr::RawAddr;
use std::collections::{HashMap, VecDeque};
use std::io::{IoSlice, IoSliceMut};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Engine epoll tokens of datagram descriptors: this bit plus the
/// descriptor (stream sockets' completion channels use the bare number).
pub(crate) const DG_TOKEN: u64 = 1 << 62;
/// How long a close waits for its sends to complete.
pub(crate) const CLOSE_DRAIN_MS: u64 = 2000;
/// Address and route resolution timeout, per step (upstream's).
const RESOLVE_MS: i32 = 2000;
/// At most this many peers per socket: a flood of datagrams from new
/// addresses cannot grow the table (and the resolutions) without bound.
const MAX_DESTS: usize = 16384;
/// Datagrams the engine reads from one socket's UDP socket per wake-up.
const UDP_BATCH: usize = 64;
/// The longest single sleep of a blocking call (every change wakes it too).
const SLEEP_SLICE_MS: i32 = 1000;

/// Where a received datagram's payload is.
enum Body {
    /// In receive slot `slot` of QP `qp`, `off` bytes in (after our
    /// header): reposted once read.
    Ud { qp: usize, slot: u32, off: usize },
    /// Carried over UDP before the peer knew our QP.
    Udp(Vec<u8>),
}

struct RxMsg {
    src: SockAddr,
    len: usize,
    body: Body,
}

/// A peer.
struct Dest {
    addr: SockAddr,
    /// Index of the QP that talks to it.
    qp: usize,
    ah: Option<Ah>,
    qpn: u32,
    /// The QP number the peer announced last (taken with the AH).
    want_qpn: u32,
    /// The resolution in flight (its id).
    resolver: Option<Shared<Id>>,
    resolving: bool,
    /// The path MTU in bytes, once the route is known.
    mtu: Option<usize>,
}

pub struct Inner {
    pub domain: i32,
    pub opts: Opts,
    /// The endpoint exists (rbind, rconnect or a first send made it): sizes
    /// are fixed, the socket is readable and writable in upstream's terms.
    pub ready: bool,
    qps: Vec<DgQp>,
    dests: HashMap<AddrKey, Dest>,
    /// The default destination (rconnect).
    conn: Option<AddrKey>,
    rx: VecDeque<RxMsg>,
    shown: Ready,
    pub closed: bool,
    /// SO_ERROR (nothing sets it today; read and cleared as a stream's).
    pub err: i32,
}

impl Inner {
    /// Whether a QP exists (buffer sizes are fixed from then on).
    pub fn has_qp(&self) -> bool {
        !self.qps.is_empty()
    }
}

pub struct DgSocket {
    sig: Signal,
    udp: Udp,
    /// The engine's event channel (every id of the socket lives on it).
    ch: Shared<Channel>,
    inner: Lock<Inner>,
    /// Application threads inside a call on the socket.
    active: AtomicU32,
    /// Calls finished (the engine sees whether the application came back).
    exits: AtomicU32,
    /// The count the engine saw at its last look.
    exits_seen: AtomicU32,
    /// Whether the engine watches the QPs' completion channels (one-shot:
    /// a delivered event disables the watch). A thread about to sleep on
    /// the channels itself turns it off; the engine turns it on again
    /// once the application has stayed out of calls for a while
    /// (`handoffs`), so that it neither wakes together with a waiting
    /// thread nor for every completion of an application that calls in all
    /// the time.
    watching: AtomicBool,
    /// In the hand-off list.
    listed: AtomicBool,
}

/// A route resolution in flight for a peer's address handle.
struct Resolver {
    sock: Shared<DgSocket>,
    id: Shared<Id>,
    key: AddrKey,
}

/// Live datagram sockets by the application's descriptor.
static DGRAMS: Table<Shared<DgSocket>> = Table::new();
/// How many entries `DGRAMS` may hold (counted up before an insert, down
/// after a removal): while zero, a descriptor is known not to be a
/// datagram socket without a look at the table (every stream call asks).
static DGRAM_COUNT: AtomicUsize = AtomicUsize::new(0);
/// Descriptors the engine watches, by number: the socket, and whether it
/// is the UDP socket (else a QP's completion channel).
static TOKENS: Table<(Shared<DgSocket>, bool)> = Table::new();
/// Resolutions in flight, by their id's key.
static RESOLVERS: Table<Resolver> = Table::new();

/// Register a descriptor in the engine's epoll set: the UDP socket
/// (level-triggered, always) or a completion channel (one-shot, see
/// `DgSocket::watching`).
fn watch(s: &Shared<DgSocket>, fd: i32, udp: bool) -> Result<()> {
    let ep = socket::engine_epoll();
    if ep < 0 {
        return Err(Error::Errno(libc::EIO));
    }
    TOKENS.insert(fd as usize, (s.clone(), udp))?;
    let events = if udp { libc::EPOLLIN as u32 } else { socket::WATCH_EVENTS };
    let mut ev = libc::epoll_event { events, u64: DG_TOKEN | fd as u64 };
    // SAFETY: the engine's epoll set; our descriptor.
    if unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, fd, &mut ev) } != 0 {
        let e = Error::last_os();
        TOKENS.remove(fd as usize);
        return Err(e);
    }
    Ok(())
}

fn unwatch(fd: i32) {
    let ep = socket::engine_epoll();
    if ep >= 0 && fd >= 0 {
        // SAFETY: the engine's epoll set.
        unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_DEL, fd, std::ptr::null_mut()) };
    }
    TOKENS.remove(fd as usize);
}

/// A new datagram socket on the engine's channel `ch`; its descriptor.
pub fn create(ch: &Shared<Channel>, domain: i32, opts: Opts, cloexec: bool) -> Result<i32> {
    let udp = Udp::new(domain)?;
    let (sig, shown) = Signal::new(cloexec)?;
    let s = Shared::try_new(DgSocket {
        sig,
        udp,
        ch: ch.clone(),
        inner: Lock::new(Inner {
            domain,
            opts,
            ready: false,
            qps: Vec::new(),
            dests: HashMap::new(),
            conn: None,
            rx: VecDeque::new(),
            shown,
            closed: false,
            err: 0,
        }),
        active: AtomicU32::new(0),
        exits: AtomicU32::new(0),
        exits_seen: AtomicU32::new(0),
        watching: AtomicBool::new(true),
        listed: AtomicBool::new(false),
    })?;
    watch(&s, s.udp.fd(), true)?;
    let fd = s.sig.fd();
    DGRAM_COUNT.fetch_add(1, Ordering::SeqCst);
    if let Err(e) = DGRAMS.insert(fd as usize, s.clone()) {
        DGRAM_COUNT.fetch_sub(1, Ordering::SeqCst);
        unwatch(s.udp.fd());
        return Err(e);
    }
    Ok(fd)
}

/// The datagram socket behind a descriptor, if it is one (inlined into
/// every data call: with no datagram socket, one load).
#[inline]
pub fn lookup(fd: i32) -> Option<Shared<DgSocket>> {
    if fd < 0 || DGRAM_COUNT.load(Ordering::SeqCst) == 0 {
        return None;
    }
    lookup_table(fd)
}

#[inline(never)]
fn lookup_table(fd: i32) -> Option<Shared<DgSocket>> {
    DGRAMS.get(fd as usize)
}

/// Whether a descriptor is a datagram rsocket.
pub fn is_dgram(fd: i32) -> bool {
    fd >= 0 && DGRAM_COUNT.load(Ordering::SeqCst) != 0 && DGRAMS.with(fd as usize, |s| s.is_some())
}

impl DgSocket {
    pub fn fd(&self) -> i32 {
        self.sig.fd()
    }

    #[inline]
    pub fn lock(&self) -> LockGuard<'_, Inner> {
        self.inner.lock()
    }

    /// The internal UDP socket (options are applied to it first).
    pub fn udp(&self) -> &Udp {
        &self.udp
    }

    /// Mirror the socket's state onto its descriptor.
    pub fn show(&self, g: &mut Inner) {
        let want = readiness(g);
        if want != g.shown {
            let mut shown = g.shown;
            let _ = self.sig.apply(&mut shown, want);
            g.shown = shown;
        }
    }
}

/// An application call in progress on a socket (`enter`): the last one
/// out lets the engine take over the completions if the application stays
/// away (`handoffs`).
pub struct Call {
    s: Shared<DgSocket>,
}

impl std::ops::Deref for Call {
    type Target = Shared<DgSocket>;
    fn deref(&self) -> &Shared<DgSocket> {
        &self.s
    }
}

/// An application call begins on `s`.
pub fn enter(s: &Shared<DgSocket>) -> Call {
    s.active.fetch_add(1, Ordering::SeqCst);
    Call { s: s.clone() }
}

impl Drop for Call {
    fn drop(&mut self) {
        let s = &self.s;
        s.exits.fetch_add(1, Ordering::SeqCst);
        if s.active.fetch_sub(1, Ordering::SeqCst) == 1 && !s.watching.load(Ordering::SeqCst) {
            list_for_handoff(s);
        }
    }
}

/// Sockets whose application left a call while the engine's watch was
/// off: (socket, when to look next in engine ms (0: not looked at yet),
/// patience in ms).
static HANDOFF: Mutex<Vec<(Shared<DgSocket>, u64, u32)>> = Mutex::new(Vec::new());

fn list_for_handoff(s: &Shared<DgSocket>) {
    if s.listed.swap(true, Ordering::SeqCst) {
        return;
    }
    let mut h = HANDOFF.lock().unwrap_or_else(|e| e.into_inner());
    if h.try_reserve(1).is_err() {
        // No memory for the list: hand over at once.
        drop(h);
        s.listed.store(false, Ordering::SeqCst);
        hand_over(s);
        return;
    }
    let first = h.is_empty();
    h.push((s.clone(), 0, 1));
    drop(h);
    if first {
        socket::kick_engine();
    }
}

/// In a child after fork(): the sockets waiting for the parent's engine
/// are not this process's to hand over (their references are leaked, not
/// dropped: dropping would destroy the parent's resources).
pub fn forget_after_fork() {
    if let Ok(mut h) = HANDOFF.try_lock() {
        std::mem::forget(std::mem::take(&mut *h));
    }
}

/// The engine takes over: completions taken, CQs armed, its watch on.
fn hand_over(s: &DgSocket) {
    let mut g = s.lock();
    if g.closed {
        return;
    }
    for q in g.qps.iter_mut() {
        q.take_events();
    }
    settle(&mut g);
    watch_on(s, &g);
    s.show(&mut g);
}

/// The engine's look at the hand-off list at `now` (engine ms): sockets
/// whose application stayed out of calls since the last look are handed
/// over; each of the others is looked at again later, twice as late each
/// time it turned out to be back (1 ms up to `socket::HANDOFF_MAX_MS`).
/// When to look next, if any socket is left.
pub fn handoffs(now: u64) -> Option<u64> {
    let mut list = std::mem::take(&mut *HANDOFF.lock().unwrap_or_else(|e| e.into_inner()));
    if list.is_empty() {
        return None;
    }
    let mut next = u64::MAX;
    list.retain_mut(|(s, due, patience)| {
        if *due == 0 {
            s.exits_seen.store(s.exits.load(Ordering::SeqCst), Ordering::SeqCst);
            *due = now + *patience as u64;
        } else if now >= *due {
            let exits = s.exits.load(Ordering::SeqCst);
            if s.active.load(Ordering::SeqCst) == 0 && s.exits_seen.load(Ordering::SeqCst) == exits {
                s.listed.store(false, Ordering::SeqCst);
                hand_over(s);
                return false;
            }
            s.exits_seen.store(exits, Ordering::SeqCst);
            *patience = (*patience * 2).min(socket::HANDOFF_MAX_MS);
            *due = now + *patience as u64;
        }
        next = next.min(*due);
        true
    });
    let mut h = HANDOFF.lock().unwrap_or_else(|e| e.into_inner());
    if !h.is_empty() {
        // Joined meanwhile: looked at within a tick.
        next = next.min(now + 1);
        if h.try_reserve(list.len()).is_ok() {
            h.append(&mut list);
        } else {
            drop(h);
            for (s, _, _) in list {
                s.listed.store(false, Ordering::SeqCst);
                hand_over(&s);
            }
            h = HANDOFF.lock().unwrap_or_else(|e| e.into_inner());
        }
    } else {
        *h = list;
    }
    (!h.is_empty()).then_some(next)
}

/// The calling thread is about to sleep in a poller (`repoll_wait`): every
/// listed socket whose application is out of calls is handed over now.
pub fn hand_over_now() {
    let list = std::mem::take(&mut *HANDOFF.lock().unwrap_or_else(|e| e.into_inner()));
    let mut keep = Vec::new();
    let _ = keep.try_reserve(list.len());
    for (s, due, patience) in list {
        if s.active.load(Ordering::SeqCst) == 0 {
            s.listed.store(false, Ordering::SeqCst);
            hand_over(&s);
        } else if keep.len() < keep.capacity() {
            keep.push((s, due, patience));
        } else {
            s.listed.store(false, Ordering::SeqCst);
        }
    }
    if !keep.is_empty() {
        let mut h = HANDOFF.lock().unwrap_or_else(|e| e.into_inner());
        if h.try_reserve(keep.len()).is_ok() {
            h.append(&mut keep);
        } else {
            for (s, _, _) in keep {
                s.listed.store(false, Ordering::SeqCst);
            }
        }
    }
}

/// The engine watches the completion channels again.
fn watch_on(s: &DgSocket, g: &Inner) {
    s.watching.store(true, Ordering::SeqCst);
    for q in &g.qps {
        socket::engine_watch(q.comp_fd, DG_TOKEN | q.comp_fd as u64, true, &q.watch_removed);
    }
}

/// A thread sleeps on the completion channels itself: the engine need not
/// wake too.
fn watch_off(s: &DgSocket, g: &Inner) {
    if s.watching.swap(false, Ordering::SeqCst) {
        for q in &g.qps {
            socket::engine_watch(q.comp_fd, DG_TOKEN | q.comp_fd as u64, false, &q.watch_removed);
        }
    }
}

/// Progress with the CQs left armed: completions taken, the CQs armed,
/// and, if one was armed now, polled once more (what completed before the
/// arming raised no event). Whether anything completed.
fn settle(g: &mut Inner) -> bool {
    let mut moved = progress(g);
    let mut armed = false;
    for q in g.qps.iter_mut() {
        // The send CQ only while no send slot is free (a sender waits, or
        // the descriptor must turn writable).
        let send = !q.has_free_slot();
        armed |= q.arm(send);
    }
    if armed {
        moved |= progress(g);
    }
    moved
}

/// Before a thread sleeps on the socket: the engine's watch off, the CQs
/// armed; whether something completed meanwhile (then look again before
/// sleeping). The completion channels to sleep on are added to `fds`
/// (as many as fit its capacity).
pub fn prepare_wait(s: &DgSocket, g: &mut Inner, fds: &mut Vec<libc::pollfd>) -> bool {
    watch_off(s, g);
    if settle(g) {
        return true;
    }
    for q in &g.qps {
        if fds.len() < fds.capacity() {
            fds.push(libc::pollfd { fd: q.comp_fd, events: libc::POLLIN, revents: 0 });
        }
    }
    false
}

/// After a sleep: take the events of the channels that fired.
pub fn after_wait(g: &mut Inner, fired: &[libc::pollfd]) {
    for p in fired.iter().filter(|p| p.revents != 0) {
        if let Some(q) = g.qps.iter_mut().find(|q| q.comp_fd == p.fd) {
            q.take_events();
        }
    }
}

/// How many descriptors a wait on the socket may need (its own, each QP's
/// channel).
pub fn wait_fds(s: &DgSocket) -> usize {
    1 + s.lock().qps.len()
}

/// What the descriptor reports: readable with a datagram queued, writable
/// once the endpoint exists while a send slot is free (upstream's rpoll
/// rules).
fn readiness(g: &Inner) -> Ready {
    Ready {
        readable: !g.rx.is_empty(),
        writable: g.ready && (g.qps.is_empty() || g.qps.iter().any(|q| q.has_free_slot())),
        hup: false,
    }
}

/// The endpoint (upstream's first rbind/rconnect/rsendto): queue sizes
/// from the options, bounded by the buffer sizes (one 2048-byte slot per
/// queue entry; a buffer smaller than its queue shrinks the queue, a
/// larger one is cut to it), and room for the received-datagram queue.
fn init(g: &mut Inner) -> Result<()> {
    if g.ready {
        return Ok(());
    }
    let slot = SLOT as u32;
    let fit = |q: u32, buf: &mut u32| -> u32 {
        let q = q.min(QP_MAX);
        let q = if q > *buf / slot {
            *buf / slot
        } else {
            *buf = q * slot;
            q
        };
        q.max(1)
    };
    let o = &mut g.opts;
    o.rq_size = fit(o.rq_size, &mut o.rbuf_size);
    o.sq_size = fit(o.sq_size, &mut o.sbuf_size);
    g.rx.try_reserve_exact(o.rq_size as usize).map_err(|_| Error::NOMEM)?;
    g.ready = true;
    Ok(())
}

/// The QP for local address `src` (made if there is none yet).
fn qp_for(s: &Shared<DgSocket>, g: &mut Inner, src: &SockAddr) -> Result<usize> {
    if let Some(i) = g.qps.iter().position(|q| q.local.key() == src.key()) {
        return Ok(i);
    }
    g.qps.try_reserve(1).map_err(|_| Error::NOMEM)?;
    // A failure drops the new QP here, under the lock: its id is new and has
    // had no event a destroy would wait for.
    let q = DgQp::new(&s.ch, src, g.opts.sq_size, g.opts.rq_size, g.opts.sq_inline)?;
    watch(s, q.comp_fd, false)?;
    if g.qps.is_empty() {
        // What the device allowed (rgetsockopt reports it).
        g.opts.sq_size = q.sq_size();
        g.opts.rq_size = q.rq_size();
    }
    g.qps.push(q);
    Ok(g.qps.len() - 1)
}

/// The destination for `to` (made, with its QP, if it is new).
fn dest_for(s: &Shared<DgSocket>, g: &mut Inner, to: &SockAddr) -> Result<AddrKey> {
    let key = to.key();
    if g.dests.contains_key(&key) {
        return Ok(key);
    }
    if g.dests.len() >= MAX_DESTS {
        return Err(Error::Errno(libc::ENOBUFS));
    }
    let src = udp::source_for(&s.udp, g.domain, to)?;
    let qp = qp_for(s, g, &src)?;
    g.dests.try_reserve(1).map_err(|_| Error::NOMEM)?;
    g.dests.insert(
        key,
        Dest { addr: *to, qp, ah: None, qpn: 0, want_qpn: 0, resolver: None, resolving: false, mtu: None },
    );
    Ok(key)
}

/// A caller's destination address, of the socket's family.
fn peer_addr(g: &Inner, a: &RawAddr) -> Result<SockAddr> {
    let sa = SockAddr::from_bytes(a.as_bytes()).ok_or(Error::Errno(libc::EAFNOSUPPORT))?;
    if sa.v6 != (g.domain == libc::AF_INET6) {
        return Err(Error::Errno(libc::EAFNOSUPPORT));
    }
    Ok(sa)
}

/// Take every completion of every QP: received datagrams are queued (at
/// most the receive queue size; a datagram that is not valid, or that
/// finds the queue full, is dropped and its receive posted again), send
/// slots are freed. Whether anything completed. Nothing blocks.
fn progress(g: &mut Inner) -> bool {
    let Inner { qps, rx, opts, .. } = g;
    let cap = opts.rq_size as usize;
    let mut any = false;
    for (i, q) in qps.iter_mut().enumerate() {
        any |= q.poll(|q, slot, len, status| {
            if status == crate::verbs::IBV_WC_SUCCESS && rx.len() < cap {
                if let Some((src, hl)) = q.recv_header(slot, len) {
                    if hl <= len {
                        rx.push_back(RxMsg { src, len: len - hl, body: Body::Ud { qp: i, slot, off: hl } });
                        return;
                    }
                }
            }
            // A flushed receive (the QP is in error) is not posted again.
            if status != IBV_WC_WR_FLUSH_ERR {
                let _ = q.post_recv(slot);
            }
        });
    }
    any
}

/// `enum ibv_wc_status`: a work request flushed by a QP in error.
const IBV_WC_WR_FLUSH_ERR: u32 = 5;

/// Sleep until the descriptor shows `events` (the engine makes progress
/// meanwhile) or a slice passes; `also` is one more descriptor to wake for
/// (the UDP socket turning writable). The socket's completions are polled
/// for the configured polling time first; the lock is released while
/// asleep.
fn sleep<'a>(
    s: &'a DgSocket,
    mut g: LockGuard<'a, Inner>,
    events: i16,
    also: Option<(i32, i16)>,
) -> Result<LockGuard<'a, Inner>> {
    let spin = config::get().polling_time;
    if spin > 0 && also.is_none() {
        let t0 = Instant::now();
        loop {
            if progress(&mut g) {
                return Ok(g);
            }
            if t0.elapsed() >= Duration::from_micros(spin as u64) {
                break;
            }
            std::hint::spin_loop();
        }
    }
    // The socket's descriptor (what the engine changes: datagrams that came
    // over UDP), one more descriptor if asked, and the QPs' channels.
    let mut fds: Vec<libc::pollfd> = Vec::new();
    fds.try_reserve_exact(2 + g.qps.len()).map_err(|_| Error::NOMEM)?;
    fds.push(libc::pollfd { fd: s.sig.fd(), events, revents: 0 });
    if let Some((fd, ev)) = also {
        fds.push(libc::pollfd { fd, events: ev, revents: 0 });
    }
    let own = fds.len();
    if prepare_wait(s, &mut g, &mut fds) {
        return Ok(g);
    }
    s.show(&mut g);
    drop(g);
    // SAFETY: valid pollfds.
    let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, SLEEP_SLICE_MS) };
    let e = crate::error::errno();
    let mut g = s.lock();
    after_wait(&mut g, &fds[own..]);
    if r < 0 && e == libc::EINTR {
        return Err(Error::Errno(libc::EINTR));
    }
    if g.closed {
        return Err(Error::Errno(libc::EBADF));
    }
    Ok(g)
}

fn nonblocking(g: &Inner, flags: i32) -> bool {
    g.opts.nonblocking() || flags & libc::MSG_DONTWAIT != 0
}

/// `rbind`: the endpoint, then the UDP socket's bind.
pub fn bind(s: &Shared<DgSocket>, addr: &RawAddr) -> Result<()> {
    let _call = enter(s);
    let mut g = s.lock();
    init(&mut g)?;
    let r = s.udp.bind(addr);
    s.show(&mut g);
    r
}

/// `rconnect`: the UDP socket's connect, and `addr` as the default
/// destination (its QP made now; its address handle comes with the
/// peer's first answer).
pub fn connect(s: &Shared<DgSocket>, addr: &RawAddr) -> Result<()> {
    let _call = enter(s);
    let mut g = s.lock();
    init(&mut g)?;
    s.show(&mut g);
    s.udp.connect(addr)?;
    let to = peer_addr(&g, addr)?;
    let key = dest_for(s, &mut g, &to)?;
    g.conn = Some(key);
    s.show(&mut g);
    Ok(())
}

/// `rsendto` and friends: one datagram of the slices' bytes to `to` (None:
/// the default destination). Over UD once the peer's address handle is
/// known, else over UDP (the peer's answer brings it). EMSGSIZE when the
/// datagram does not fit one message (a 2048-byte slot with our header, and
/// the path's MTU).
pub fn send(s: &Shared<DgSocket>, src: &[IoSlice], flags: i32, to: Option<&RawAddr>) -> Result<usize> {
    let _call = enter(s);
    let (mut g, r) = send_locked(s, s.lock(), src, flags, to);
    s.show(&mut g);
    r
}

type Locked<'a, T> = (LockGuard<'a, Inner>, Result<T>);

/// What one look at the destination decided.
enum Step {
    Done(Result<usize>),
    /// Over UDP, behind this header, to this peer.
    Udp(UdpHeader, SockAddr),
    /// No send slot: progress, then wait for one.
    Full,
}

fn send_locked<'a>(
    s: &'a Shared<DgSocket>,
    mut g: LockGuard<'a, Inner>,
    src: &[IoSlice],
    flags: i32,
    to: Option<&RawAddr>,
) -> Locked<'a, usize> {
    if g.closed {
        return (g, Err(Error::Errno(libc::EBADF)));
    }
    // (Saturating: any total beyond a slot is EMSGSIZE below.)
    let total = src.iter().fold(0usize, |t, b| t.saturating_add(b.len()));
    if let Err(e) = init(&mut g) {
        return (g, Err(e));
    }
    let key = match to {
        Some(a) => peer_addr(&g, a).and_then(|sa| dest_for(s, &mut g, &sa)),
        None => g.conn.ok_or(Error::Errno(libc::EDESTADDRREQ)),
    };
    let key = match key {
        Ok(k) => k,
        Err(e) => return (g, Err(e)),
    };
    loop {
        let nonblock = nonblocking(&g, flags);
        let step = {
            let Inner { dests, qps, .. } = &mut *g;
            match dests.get(&key).and_then(|d| Some((d, qps.get_mut(d.qp)?))) {
                None => Step::Done(Err(Error::Errno(libc::EDESTADDRREQ))),
                Some((d, q)) => {
                    let mtu = d.mtu.map_or(q.mtu, |m| m.min(q.mtu));
                    if total > dgwire::max_payload(q.hdr_len(), mtu) {
                        Step::Done(Err(Error::Errno(libc::EMSGSIZE)))
                    } else if let Some(ah) = d.ah.as_ref() {
                        match q.send(ah, d.qpn, src, total) {
                            Ok(true) => Step::Done(Ok(total)),
                            Ok(false) => Step::Full,
                            Err(e) => Step::Done(Err(e)),
                        }
                    } else {
                        // No address handle yet: over UDP, our QP number in
                        // front.
                        Step::Udp(UdpHeader { v6: q.local.v6, op: UDP_OP_DATA, qpn: q.qpn, addr: q.local.addr }, d.addr)
                    }
                }
            }
        };
        match step {
            Step::Done(r) => return (g, r),
            Step::Udp(h, peer) => match udp_send(&s.udp, &h, src, &peer) {
                Ok(n) => return (g, Ok(n)),
                Err(Error::Errno(libc::EAGAIN)) if !nonblock => {
                    g = match sleep(s, g, 0, Some((s.udp.fd(), libc::POLLOUT))) {
                        Ok(g) => g,
                        Err(e) => return (s.lock(), Err(e)),
                    };
                }
                Err(e) => return (g, Err(e)),
            },
            Step::Full => {
                if progress(&mut g) {
                    continue;
                }
                if nonblock {
                    return (g, Err(Error::Errno(libc::EAGAIN)));
                }
                g = match sleep(s, g, libc::POLLOUT, None) {
                    Ok(g) => g,
                    Err(e) => return (s.lock(), Err(e)),
                };
            }
        }
    }
}

/// Send header `h` and the slices' bytes as one UDP datagram to `peer`:
/// the payload bytes sent.
fn udp_send(udp: &Udp, h: &UdpHeader, src: &[IoSlice], peer: &SockAddr) -> Result<usize> {
    let hl = h.len();
    let mut buf = [0u8; UDP_MAX];
    buf[..hl].copy_from_slice(&h.encode()[..hl]);
    let mut at = hl;
    for b in src {
        // (The caller checked that the payload fits a slot.)
        let n = b.len().min(UDP_MAX - at);
        buf[at..at + n].copy_from_slice(&b[..n]);
        at += n;
    }
    udp.send_to(&buf[..at], peer).map(|n| n.saturating_sub(hl))
}

/// A datagram received: bytes copied, its full length, its source.
pub struct Received {
    pub copied: usize,
    pub len: usize,
    pub src: SockAddr,
}

/// `rrecvfrom` and friends: the next datagram (its first bytes if the
/// buffers are shorter; the rest is dropped unless `MSG_PEEK`). EINVAL
/// before the endpoint exists (upstream's rule).
pub fn recv(s: &Shared<DgSocket>, dst: &mut [IoSliceMut], flags: i32) -> Result<Received> {
    let _call = enter(s);
    let (mut g, r) = recv_locked(s, s.lock(), dst, flags);
    s.show(&mut g);
    r
}

fn recv_locked<'a>(
    s: &'a DgSocket,
    mut g: LockGuard<'a, Inner>,
    dst: &mut [IoSliceMut],
    flags: i32,
) -> Locked<'a, Received> {
    if g.closed {
        return (g, Err(Error::Errno(libc::EBADF)));
    }
    if !g.ready {
        return (g, Err(Error::INVAL));
    }
    let peek = flags & libc::MSG_PEEK != 0;
    loop {
        progress(&mut g);
        if let Some(r) = take(&mut g, dst, peek) {
            return (g, Ok(r));
        }
        if nonblocking(&g, flags) {
            return (g, Err(Error::Errno(libc::EAGAIN)));
        }
        g = match sleep(s, g, libc::POLLIN, None) {
            Ok(g) => g,
            Err(e) => return (s.lock(), Err(e)),
        };
    }
}

/// Copy the queued datagram at the front into `dst`; unless `peek`, it
/// leaves the queue (its receive slot is posted again).
fn take(g: &mut Inner, dst: &mut [IoSliceMut], peek: bool) -> Option<Received> {
    let Inner { rx, qps, .. } = g;
    let m = rx.front()?;
    let mut done = 0;
    for b in dst.iter_mut() {
        if done == m.len {
            break;
        }
        let n = b.len().min(m.len - done);
        match &m.body {
            Body::Ud { qp, slot, off } => {
                if let Some(q) = qps.get(*qp) {
                    q.read(*slot, off + done, &mut b[..n]);
                }
            }
            Body::Udp(data) => b[..n].copy_from_slice(&data[done..done + n]),
        }
        done += n;
    }
    let r = Received { copied: done, len: m.len, src: m.src };
    if !peek {
        if let Some(RxMsg { body: Body::Ud { qp, slot, .. }, .. }) = rx.pop_front() {
            if let Some(q) = qps.get_mut(qp) {
                let _ = q.post_recv(slot);
            }
        }
    }
    Some(r)
}

/// rpoll's events for a datagram socket (after progress): POLLIN with a
/// datagram queued, POLLOUT when a send can go. The caller is inside a
/// call (`enter`).
pub fn revents(s: &DgSocket, events: i16) -> i16 {
    let mut g = s.lock();
    revents_locked(s, &mut g, events)
}

/// [`revents`] with the lock held.
pub fn revents_locked(s: &DgSocket, g: &mut Inner, events: i16) -> i16 {
    progress(g);
    let r = readiness(g);
    s.show(g);
    let mut out = 0;
    if events & libc::POLLIN != 0 && r.readable {
        out |= libc::POLLIN;
    }
    if events & libc::POLLOUT != 0 && r.writable {
        out |= libc::POLLOUT;
    }
    out
}

/// The UDP socket's own address (`local`) or its peer's.
pub fn name(s: &Shared<DgSocket>, local: bool) -> Result<RawAddr> {
    s.udp.name(local)
}

/// `rclose`: the descriptor goes at once; the sends in flight get at most
/// `CLOSE_DRAIN_MS` to complete (UD sends complete locally, without the
/// peer); then everything is freed.
pub fn close(fd: i32) -> Result<()> {
    let s = DGRAMS.remove(fd as usize).ok_or(Error::Errno(libc::EBADF))?;
    DGRAM_COUNT.fetch_sub(1, Ordering::SeqCst);
    let deadline = Instant::now() + Duration::from_millis(CLOSE_DRAIN_MS);
    loop {
        let mut g = s.lock();
        progress(&mut g);
        if g.qps.iter().all(|q| q.sends_idle()) || Instant::now() >= deadline {
            break;
        }
        drop(g);
        std::thread::sleep(Duration::from_millis(1));
    }
    teardown(&s);
    Ok(())
}

/// Free everything of a closed socket. The QPs go to the error state
/// first, then the address handles and resolutions, then the QPs and their
/// ids, without the socket's lock held.
fn teardown(s: &Shared<DgSocket>) {
    let (qps, dests, rx) = {
        let mut g = s.lock();
        g.closed = true;
        unwatch(s.udp.fd());
        for q in &g.qps {
            unwatch(q.comp_fd);
            q.to_error();
        }
        s.sig.close();
        s.udp.close();
        g.conn = None;
        (std::mem::take(&mut g.qps), std::mem::take(&mut g.dests), std::mem::take(&mut g.rx))
    };
    drop(rx);
    for (_, d) in dests {
        if let Some(id) = d.resolver {
            RESOLVERS.remove(Id::key(&id));
            let _ = lifecycle::destroy_id(&id);
        }
        drop(d.ah);
    }
    drop(qps);
}

// ---- The progress engine's part (called from engine.rs) ----

/// The engine's epoll reported datagram token `fd` readable.
pub fn on_ready(fd: i32) {
    let Some((s, is_udp)) = TOKENS.get(fd as usize) else { return };
    if is_udp {
        udp_service(&s);
    } else {
        completions(&s);
    }
}

/// A QP's completion channel fired (the engine's one-shot watch of it is
/// now off): the engine's watch goes off for every channel; the events,
/// the completions are taken and the CQs armed again; the watch comes back
/// on at once unless the application is inside a call (whose end lists
/// the socket for a hand-off).
fn completions(s: &Shared<DgSocket>) {
    let mut g = s.lock();
    if g.closed {
        return;
    }
    s.watching.store(true, Ordering::SeqCst);
    watch_off(s, &g);
    for q in g.qps.iter_mut() {
        q.take_events();
    }
    settle(&mut g);
    s.show(&mut g);
    if s.active.load(Ordering::SeqCst) == 0 {
        watch_on(s, &g);
    } else {
        drop(g);
        // The call may have ended meanwhile, seeing the watch on.
        if s.active.load(Ordering::SeqCst) == 0 {
            list_for_handoff(s);
        }
    }
}

/// Read what came over the UDP socket: each datagram with a valid header
/// makes (or finds) the sender's destination; a DATA is answered with a
/// CTRL carrying our QP number and its payload is queued for the
/// application; the sender's QP number is kept, and its route resolved
/// for an address handle when there is none yet. Anything else is
/// dropped.
fn udp_service(s: &Shared<DgSocket>) {
    let mut buf = [0u8; UDP_MAX];
    for _ in 0..UDP_BATCH {
        let mut g = s.lock();
        if g.closed {
            return;
        }
        let (n, from) = match s.udp.recv_from(&mut buf) {
            Ok(r) => r,
            Err(_) => return,
        };
        let start = (|| {
            let from = SockAddr::from_bytes(from.as_bytes())?;
            if n > buf.len() || !g.ready {
                // Cut (longer than a slot and our longest header), or an
                // endpoint that does not exist yet.
                return None;
            }
            let (h, hl) = UdpHeader::decode(&buf[..n], from.v6)?;
            let key = dest_for(s, &mut g, &from).ok()?;
            let cap = g.opts.rq_size as usize;
            let Inner { dests, qps, rx, .. } = &mut *g;
            let d = dests.get_mut(&key)?;
            let q = qps.get(d.qp)?;
            if h.op == UDP_OP_DATA {
                let r = UdpHeader { v6: q.local.v6, op: UDP_OP_CTRL, qpn: q.qpn, addr: q.local.addr };
                let _ = s.udp.send_to(&r.encode()[..r.len()], &from);
                let payload = &buf[hl..n];
                if payload.len() <= SLOT - q.hdr_len() && rx.len() < cap {
                    let mut v = Vec::new();
                    if v.try_reserve_exact(payload.len()).is_ok() {
                        v.extend_from_slice(payload);
                        rx.push_back(RxMsg { src: from, len: v.len(), body: Body::Udp(v) });
                    }
                }
            }
            if d.ah.is_some() {
                d.qpn = h.qpn;
                return None;
            }
            d.want_qpn = h.qpn;
            if d.resolving {
                return None;
            }
            d.resolving = true;
            Some((key, q.local, d.addr))
        })();
        s.show(&mut g);
        drop(g);
        if let Some((key, local, peer)) = start {
            start_resolve(s, key, &local, &peer);
        }
    }
}

fn raw(a: &SockAddr) -> RawAddr {
    let (b, n) = a.to_bytes();
    RawAddr::from_bytes(&b, n)
}

/// Resolve the route from `local` (any port) to `peer`, asynchronously on
/// the engine's channel; `resolver_event` finishes it.
fn start_resolve(s: &Shared<DgSocket>, key: AddrKey, local: &SockAddr, peer: &SockAddr) {
    let r = (|| -> Result<()> {
        let id = lifecycle::create_id_on(&s.ch, std::ptr::null_mut(), RDMA_PS_UDP as u32)?;
        let k = Id::key(&id);
        if let Err(e) = RESOLVERS.insert(k, Resolver { sock: s.clone(), id: id.clone(), key }) {
            let _ = lifecycle::destroy_id(&id);
            return Err(e);
        }
        let stored = {
            let mut g = s.lock();
            let closed = g.closed;
            match g.dests.get_mut(&key) {
                Some(d) if !closed => {
                    d.resolver = Some(id.clone());
                    true
                }
                _ => false,
            }
        };
        if !stored {
            RESOLVERS.remove(k);
            let _ = lifecycle::destroy_id(&id);
            return Ok(());
        }
        let src = SockAddr { port: [0, 0], ..*local };
        if let Err(e) = id.resolve_addr(Some(raw(&src).as_bytes()), raw(peer).as_bytes(), RESOLVE_MS) {
            finish(k, false);
            return Err(e);
        }
        Ok(())
    })();
    if r.is_err() {
        let mut g = s.lock();
        if let Some(d) = g.dests.get_mut(&key) {
            d.resolving = false;
        }
    }
}

/// Whether a CM id is one of our resolutions.
pub fn is_resolver(idkey: usize) -> bool {
    RESOLVERS.with(idkey, |r| r.is_some())
}

/// A CM event of a resolution (already acked): on to the route, or done
/// (the address handle made from the route), or failed (the next datagram
/// from the peer tries again).
pub fn resolver_event(idkey: usize, ty: u32, status: i32) {
    let _ = status;
    let Some(id) = RESOLVERS.with(idkey, |r| r.map(|r| r.id.clone())) else { return };
    if ty == E::RDMA_CM_EVENT_ADDR_RESOLVED as u32 {
        if id.resolve_route(RESOLVE_MS).is_err() {
            finish(idkey, false);
        }
    } else {
        finish(idkey, ty == E::RDMA_CM_EVENT_ROUTE_RESOLVED as u32);
    }
}

/// End a resolution: with `ok`, the destination gets its address handle
/// and the QP number its peer announced; the resolution's id goes.
fn finish(idkey: usize, ok: bool) {
    let Some(r) = RESOLVERS.remove(idkey) else { return };
    {
        let mut g = r.sock.lock();
        let Inner { dests, qps, closed, .. } = &mut *g;
        if let Some(d) = dests.get_mut(&r.key) {
            if !*closed && d.resolver.as_ref().is_some_and(|i| Shared::ptr_eq(i, &r.id)) {
                d.resolver = None;
                d.resolving = false;
                if ok {
                    if let Some(Ok((ah, mtu))) = qps.get(d.qp).map(|q| q.make_ah(&r.id)) {
                        d.ah = Some(ah);
                        d.qpn = d.want_qpn;
                        d.mtu = mtu;
                    }
                }
            }
        }
    }
    let _ = lifecycle::destroy_id(&r.id);
}
