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
use crate::sockaddr::RawAddr;
use std::collections::{HashMap, VecDeque};
use std::io::{IoSlice, IoSliceMut};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Engine epoll tokens of datagram descriptors: this bit plus the
/// descriptor (stream sockets' completion channels use the bare number).
pub const DG_TOKEN: u64 = 1 << 62;
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
    inner: Mutex<Inner>,
}

/// A route resolution in flight for a peer's address handle.
struct Resolver {
    sock: Shared<DgSocket>,
    id: Shared<Id>,
    key: AddrKey,
}

/// Live datagram sockets by the application's descriptor.
static DGRAMS: Table<Shared<DgSocket>> = Table::new();
/// Descriptors the engine watches, by number: the socket, and whether it
/// is the UDP socket (else a QP's completion channel).
static TOKENS: Table<(Shared<DgSocket>, bool)> = Table::new();
/// Resolutions in flight, by their id's key.
static RESOLVERS: Table<Resolver> = Table::new();

fn watch(s: &Shared<DgSocket>, fd: i32, udp: bool) -> Result<()> {
    let ep = socket::engine_epoll();
    if ep < 0 {
        return Err(Error::Errno(libc::EIO));
    }
    TOKENS.insert(fd as usize, (s.clone(), udp))?;
    let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: DG_TOKEN | fd as u64 };
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
        inner: Mutex::new(Inner {
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
    })?;
    watch(&s, s.udp.fd(), true)?;
    let fd = s.sig.fd();
    if let Err(e) = DGRAMS.insert(fd as usize, s.clone()) {
        unwatch(s.udp.fd());
        return Err(e);
    }
    Ok(fd)
}

/// The datagram socket behind a descriptor, if it is one.
pub fn lookup(fd: i32) -> Option<Shared<DgSocket>> {
    (fd >= 0).then(|| DGRAMS.get(fd as usize)).flatten()
}

/// Whether a descriptor is a datagram rsocket.
pub fn is_dgram(fd: i32) -> bool {
    fd >= 0 && DGRAMS.with(fd as usize, |s| s.is_some())
}

impl DgSocket {
    pub fn fd(&self) -> i32 {
        self.sig.fd()
    }

    pub fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
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
    mut g: MutexGuard<'a, Inner>,
    events: i16,
    also: Option<(i32, i16)>,
) -> Result<MutexGuard<'a, Inner>> {
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
    s.show(&mut g);
    drop(g);
    let mut fds = [
        libc::pollfd { fd: s.sig.fd(), events, revents: 0 },
        libc::pollfd { fd: also.map_or(-1, |a| a.0), events: also.map_or(0, |a| a.1), revents: 0 },
    ];
    let n = if also.is_some() { 2 } else { 1 };
    // SAFETY: n valid pollfds.
    let r = unsafe { libc::poll(fds.as_mut_ptr(), n, SLEEP_SLICE_MS) };
    let e = crate::error::errno();
    let g = s.lock();
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
    let (mut g, r) = send_locked(s, s.lock(), src, flags, to);
    s.show(&mut g);
    r
}

type Locked<'a, T> = (MutexGuard<'a, Inner>, Result<T>);

/// What one look at the destination decided.
enum Step {
    Done(Result<usize>),
    /// Over UDP: the datagram's length (in the caller's buffer), its
    /// header's length, the peer.
    Udp(usize, usize, SockAddr),
    /// No send slot: progress, then wait for one.
    Full,
}

fn send_locked<'a>(
    s: &'a Shared<DgSocket>,
    mut g: MutexGuard<'a, Inner>,
    src: &[IoSlice],
    flags: i32,
    to: Option<&RawAddr>,
) -> Locked<'a, usize> {
    if g.closed {
        return (g, Err(Error::Errno(libc::EBADF)));
    }
    let total: usize = src.iter().map(|b| b.len()).sum();
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
    let mut buf = [0u8; UDP_MAX];
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
                        let h = UdpHeader { v6: q.local.v6, op: UDP_OP_DATA, qpn: q.qpn, addr: q.local.addr };
                        let hl = h.len();
                        buf[..hl].copy_from_slice(&h.encode()[..hl]);
                        let mut at = hl;
                        for b in src {
                            buf[at..at + b.len()].copy_from_slice(b);
                            at += b.len();
                        }
                        Step::Udp(at, hl, d.addr)
                    }
                }
            }
        };
        match step {
            Step::Done(r) => return (g, r),
            Step::Udp(len, hl, peer) => match s.udp.send_to(&buf[..len], &peer) {
                Ok(n) => return (g, Ok(n.saturating_sub(hl))),
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
    let (mut g, r) = recv_locked(s, s.lock(), dst, flags);
    s.show(&mut g);
    r
}

fn recv_locked<'a>(
    s: &'a DgSocket,
    mut g: MutexGuard<'a, Inner>,
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
/// datagram queued, POLLOUT when a send can go.
pub fn revents(s: &Shared<DgSocket>, events: i16) -> i16 {
    let mut g = s.lock();
    progress(&mut g);
    let r = readiness(&g);
    s.show(&mut g);
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

/// A QP's completion channel has events: take them, the completions, and
/// arm the CQs again (polling once more after the arming, so that nothing
/// that completed in between goes unheard).
fn completions(s: &Shared<DgSocket>) {
    let mut g = s.lock();
    if g.closed {
        return;
    }
    for q in g.qps.iter_mut() {
        q.take_events();
    }
    progress(&mut g);
    for q in g.qps.iter_mut() {
        q.arm();
    }
    progress(&mut g);
    s.show(&mut g);
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
        if let Err(e) = id.resolve_addr(Some(&raw(&src)), &raw(peer), RESOLVE_MS) {
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
