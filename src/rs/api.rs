//! The rsocket operations behind the exported `r*` functions (rsocket(7)):
//! socket lifecycle, connect and accept, data, shutdown and close, names,
//! options and fcntl. Blocking calls wait outside the socket's lock, on the
//! connection's completion channel and on the socket's own descriptor
//! (which the engine updates on every state change), in bounded slices.

use super::config::{self, Opts};
use super::dgram::{self, DgSocket};
use super::engine::{self, CLOSE_DRAIN_MS};
use super::socket::{self, Call, Guard, Inner, Phase, RSocket};
use super::stream::Src;
use crate::abi::{AF_IB, RDMA_PS_TCP};
use crate::cm::{conn, lifecycle};
use crate::cmem::Shared;
use crate::error::{Error, Result};
use crate::sockaddr::RawAddr;
use std::io::{IoSlice, IoSliceMut};
use std::time::{Duration, Instant};

/// Chunks of a send call: the first is this big, each next one twice as
/// big, up to `MAX_CHUNK`.
use super::flow::{FIRST_CHUNK, MAX_CHUNK};

/// The longest single sleep of a blocking call (a safety net: every state
/// change also wakes it).
const SLEEP_SLICE_MS: i32 = 1000;

fn nonblocking(g: &Inner, flags: i32) -> bool {
    g.opts.nonblocking() || flags & libc::MSG_DONTWAIT != 0
}

/// Sleep until the connection's completion channel or the socket's
/// descriptor (for `events`, and always for a hang-up) has something, or
/// `deadline`; `send`: the caller waits for send completions (room to
/// send, a control slot, sends to drain). The CQs are polled for the
/// configured polling time first, then armed; the lock is released while
/// asleep. Returns early (without sleeping) when anything completed.
fn sleep<'a>(
    s: &'a RSocket,
    mut g: Guard<'a>,
    events: i16,
    deadline: Option<Instant>,
    send: bool,
) -> Result<Guard<'a>> {
    // This thread looks after the completions from now on (the engine
    // would only wake with it).
    s.watch_off(&g);
    let spin = config::get().polling_time;
    if spin > 0 && g.phase == Phase::Connected {
        let t0 = Instant::now();
        let before = g.conn.as_ref().map(|c| c.epoch);
        loop {
            socket::progress(&mut g);
            if g.conn.as_ref().map(|c| c.epoch) != before || g.phase != Phase::Connected {
                return Ok(g);
            }
            if t0.elapsed() >= Duration::from_micros(spin as u64) {
                break;
            }
            std::hint::spin_loop();
        }
    }
    let comp = match socket::arm_for_wait(&mut g, send) {
        Some((_, true)) => {
            return Ok(g);
        }
        Some((fd, false)) => Some(fd),
        None => None,
    };
    s.show(&mut g);
    let timeout = match deadline {
        None => SLEEP_SLICE_MS,
        Some(d) => d.saturating_duration_since(Instant::now()).as_millis().min(SLEEP_SLICE_MS as u128) as i32,
    };
    drop(g);
    let mut fds = [
        libc::pollfd { fd: s.fd(), events, revents: 0 },
        libc::pollfd { fd: comp.unwrap_or(-1), events: libc::POLLIN, revents: 0 },
    ];
    let n = if comp.is_some() { 2 } else { 1 };
    // SAFETY: n valid pollfds.
    let r = unsafe { crate::sys::poll(fds.as_mut_ptr(), n, timeout) };
    let e = crate::error::errno();
    let mut g = s.lock();
    if fds[1].revents != 0 {
        if let Some(c) = g.conn.as_mut() {
            // Read when the next wait begins (`socket::arm_for_wait`), not
            // now: the caller is about to take its data and, typically,
            // answer; one system call fewer between the wake-up and the
            // answer (on the emulated bed, the difference between a peer
            // that still polls when the answer comes and one that sleeps).
            c.event_unread = true;
        }
    }
    if r < 0 && e == libc::EINTR {
        return Err(Error::Errno(libc::EINTR));
    }
    Ok(g)
}

/// `rsocket`: AF_INET, AF_INET6 or AF_IB stream sockets, and datagram
/// sockets of the families the kernel has UDP for (AF_IB fails with the
/// kernel's errno, as upstream's).
pub fn socket(domain: i32, ty: i32, protocol: i32) -> Result<i32> {
    let st = ty & !(libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK);
    let ok_domain = domain == libc::AF_INET || domain == libc::AF_INET6 || domain == AF_IB;
    let ok = match st {
        libc::SOCK_STREAM => protocol == 0 || protocol == libc::IPPROTO_TCP,
        libc::SOCK_DGRAM => protocol == 0 || protocol == libc::IPPROTO_UDP,
        _ => false,
    };
    if !ok_domain || !ok {
        return Err(Error::Errno(libc::ENOTSUP));
    }
    let e = engine::get()?;
    let mut opts = Opts::defaults();
    if ty & libc::SOCK_NONBLOCK != 0 {
        opts.fs_flags |= libc::O_NONBLOCK;
    }
    let cloexec = ty & libc::SOCK_CLOEXEC != 0;
    if cloexec {
        opts.fd_flags |= libc::FD_CLOEXEC;
    }
    if st == libc::SOCK_DGRAM {
        return dgram::create(e.channel(), domain, opts, cloexec);
    }
    let id = lifecycle::create_id_on(e.channel(), std::ptr::null_mut(), RDMA_PS_TCP as u32)?;
    // The local address has the socket's family before any bind (what
    // rgetsockname reports then).
    id.set_addr(true, &(domain as u16).to_ne_bytes(), 2);
    match RSocket::create(domain, id.clone(), opts, cloexec) {
        Ok(s) => Ok(s.fd()),
        Err(err) => {
            let _ = lifecycle::destroy_id(&id);
            Err(err)
        }
    }
}

pub fn bind(s: &Shared<RSocket>, addr: &RawAddr) -> Result<()> {
    let mut g = s.lock();
    g.id.bind(addr.as_bytes())?;
    if g.phase == Phase::Init {
        g.phase = Phase::Bound;
    }
    Ok(())
}

pub fn listen(s: &Shared<RSocket>, backlog: i32) -> Result<()> {
    let mut g = s.lock();
    if g.phase == Phase::Listening {
        return Ok(());
    }
    conn::listen(&g.id, backlog)?;
    g.phase = Phase::Listening;
    Ok(())
}

/// `raccept`: the next established connection (EBADF unless listening).
pub fn accept(s: &Shared<RSocket>) -> Result<Shared<RSocket>> {
    let mut g = s.lock();
    loop {
        if g.phase != Phase::Listening {
            return Err(Error::Errno(libc::EBADF));
        }
        if let Some(c) = g.accepted.pop_front() {
            s.show(&mut g);
            return Ok(c);
        }
        if g.opts.nonblocking() {
            return Err(Error::Errno(libc::EAGAIN));
        }
        g = sleep(s, g, libc::POLLIN, None, false)?;
    }
}

/// `rconnect`: start (or, blocking, finish) the connection.
/// `addr` None: the caller gave no address (only a socket already
/// connecting or connected can go on without one).
pub fn connect(s: &Shared<RSocket>, addr: Option<&RawAddr>) -> Result<()> {
    let mut g = s.lock();
    match g.phase {
        Phase::Init | Phase::Bound => {
            let addr = addr.ok_or(Error::INVAL)?;
            g.id.set_addr(false, addr.as_bytes(), addr.len() as u16);
            g.retries = 0;
            if let Err(e) = engine::resolve_addr(&mut g) {
                g.phase = Phase::ConnectError;
                g.err = errno_of(e);
                return Err(e);
            }
        }
        Phase::ConnectError | Phase::Disconnected | Phase::Error => return Err(Error::Errno(libc::ENOTCONN)),
        Phase::Connected => return Ok(()),
        p if p.opening() => {}
        _ => return Err(Error::INVAL),
    }
    if g.opts.nonblocking() {
        return Err(Error::Errno(libc::EINPROGRESS));
    }
    while g.phase.opening() {
        g = sleep(s, g, libc::POLLIN | libc::POLLOUT, None, false)?;
    }
    match g.phase {
        Phase::Connected => Ok(()),
        _ => {
            // The error stays for SO_ERROR (as upstream).
            let e = if g.err == 0 { libc::ECONNREFUSED } else { g.err };
            Err(Error::Errno(e))
        }
    }
}

fn errno_of(e: Error) -> i32 {
    match e {
        Error::Errno(n) => n,
        Error::Eai(_) => libc::EIO,
    }
}

/// A data call on a socket still connecting: wait (blocking) or EAGAIN.
fn wait_open<'a>(s: &'a RSocket, mut g: Guard<'a>, nonblock: bool) -> Result<Guard<'a>> {
    while g.phase.opening() {
        if nonblock {
            return Err(Error::Errno(libc::EAGAIN));
        }
        g = sleep(s, g, libc::POLLIN | libc::POLLOUT, None, false)?;
    }
    Ok(g)
}

/// `rrecv` and friends: queued data (also after the peer left), then 0.
#[inline(always)]
pub fn recv(s: &Call, dst: &mut [IoSliceMut], flags: i32) -> Result<usize> {
    let mut g = s.lock();
    if let [one] = dst {
        if flags & !libc::MSG_DONTWAIT == 0 {
            let nonblock = nonblocking(&g, flags);
            match recv_fast(&mut g, one, nonblock) {
                Fast::Took(n) => {
                    s.show_at_exit(&mut g);
                    return Ok(n);
                }
                Fast::Nothing => {
                    s.show_unless_unchanged(&mut g, true);
                    return Err(Error::Errno(libc::EAGAIN));
                }
                Fast::Slow => {}
            }
        }
    }
    recv_slow(s, g, dst, flags)
}

/// Every receive but [`recv_fast`]'s, out of line: the data calls' common
/// case stays a few lines of code (docs/speed.md, "Hot code together").
#[cold]
#[inline(never)]
fn recv_slow(s: &Call, g: Guard, dst: &mut [IoSliceMut], flags: i32) -> Result<usize> {
    let ((mut g, r), unchanged) = recv_locked(s, g, dst, flags);
    s.show_unless_unchanged(&mut g, unchanged);
    r
}

/// What [`recv_fast`] did.
enum Fast {
    /// Took this many bytes (more than 0).
    Took(usize),
    /// A non-blocking call found nothing, and nothing changed.
    Nothing,
    /// The general path decides (anything else).
    Slow,
}

/// The commonest receive (one buffer, no flag but MSG_DONTWAIT) on a
/// connected socket open for reading: the data queued, or else what one
/// poll of the completions brought; exactly what [`recv_locked`] does in
/// that case, with none of its other cases looked at.
#[inline(always)]
fn recv_fast(g: &mut Inner, buf: &mut [u8], nonblock: bool) -> Fast {
    if g.phase != Phase::Connected || !g.rd || buf.is_empty() {
        std::hint::cold_path();
        return Fast::Slow;
    }
    let Some(c) = g.conn.as_mut() else { return Fast::Slow };
    if !c.has_data() {
        let p = c.poll_lazy(true);
        if !p.polled {
            return if nonblock { Fast::Nothing } else { Fast::Slow };
        }
        // The state changed, or no data came: as the general path would.
        // (When data came and nothing else, the credit look `apply_polled`
        // would make is the one after the copy below, the lock held
        // throughout.)
        if p.news != 0 || !c.has_data() {
            socket::apply_polled(g, p, true);
            let ready = g.phase == Phase::Connected && g.rd && g.conn.as_ref().is_some_and(|c| c.has_data());
            if !ready {
                // Something changed (the general path's own poll may find
                // nothing more): the way out shows the state.
                g.stale = true;
                return Fast::Slow;
            }
        }
    }
    let Some(c) = g.conn.as_mut() else { return Fast::Slow };
    let n = c.recv_one(buf);
    socket::credits(g);
    Fast::Took(n)
}

type Locked<'a, T> = (Guard<'a>, Result<T>);

/// The receive, and whether it changed nothing (a non-blocking call that
/// found no completion and no data).
#[inline(always)]
fn recv_locked<'a>(s: &'a RSocket, g: Guard<'a>, dst: &mut [IoSliceMut], flags: i32) -> (Locked<'a, usize>, bool) {
    let waitall = flags & libc::MSG_WAITALL != 0;
    // The total asked for matters only to MSG_WAITALL (and whether it is 0).
    let want: usize =
        if waitall { dst.iter().map(|b| b.len()).sum() } else { dst.iter().any(|b| !b.is_empty()) as usize };
    let nonblock = nonblocking(&g, flags);
    let mut g = match wait_open(s, g, nonblock) {
        Ok(g) => g,
        Err(e) => return ((s.lock(), Err(e)), false),
    };
    if matches!(g.phase, Phase::Init | Phase::Bound | Phase::Listening) {
        return ((g, Err(Error::Errno(libc::ENOTCONN))), false);
    }
    let peek = flags & libc::MSG_PEEK != 0;
    let mut got = 0;
    // What is still to fill (advanced past each piece received).
    let mut rest = dst;
    // Nothing completed and nothing was taken. Read only by a non-blocking
    // call that returns with nothing taken: it never sleeps, and a second
    // pass of the loop has taken data.
    let mut quiet = true;
    loop {
        // Completions are taken only when nothing is buffered (as upstream's
        // rrecv): what is here is returned without looking for more.
        if !g.conn.as_ref().is_some_and(|c| c.has_data()) {
            quiet &= !socket::progress_inline(&mut g);
        }
        if g.eof_seen && !g.rd {
            // End of file was reported: it stays so.
            if let Some(c) = g.conn.as_mut() {
                c.discard_all();
            }
            socket::credits(&mut g);
            return ((g, Ok(0)), false);
        }
        if let Some(c) = g.conn.as_mut() {
            if c.has_data() {
                let n = c.recv_into(rest, peek);
                got += n;
                rest = skip(rest, n);
                socket::credits(&mut g);
                if !waitall || got == want || peek || !g.rd {
                    return ((g, Ok(got)), false);
                }
                continue;
            }
        }
        if !g.rd || g.phase != Phase::Connected {
            // EOF (the peer shut down or left, or an error: upstream
            // reports those as EOF too).
            if got == 0 && !peek && want > 0 {
                g.eof_seen = true;
            }
            return ((g, Ok(got)), false);
        }
        if nonblock {
            return if got > 0 { ((g, Ok(got)), false) } else { ((g, Err(Error::Errno(libc::EAGAIN))), quiet) };
        }
        g = match sleep(s, g, 0, None, false) {
            Ok(g) => g,
            Err(e) => return ((s.lock(), if got > 0 { Ok(got) } else { Err(e) }), false),
        };
    }
}

/// The part of `dst` after its first `n` bytes (for MSG_WAITALL loops);
/// the first slice left is advanced in place.
fn skip<'a, 'b>(dst: &'a mut [IoSliceMut<'b>], mut n: usize) -> &'a mut [IoSliceMut<'b>] {
    let mut i = 0;
    while i < dst.len() && n >= dst[i].len() {
        n -= dst[i].len();
        i += 1;
    }
    let rest = &mut dst[i..];
    if n > 0 {
        if let Some(first) = rest.first_mut() {
            IoSliceMut::advance(first, n);
        }
    }
    rest
}

/// `rsend` and friends: chunks of growing size into the peer's ring; a
/// partial count when a later chunk cannot go.
#[inline(always)]
pub fn send(s: &Call, src: &[IoSlice], flags: i32) -> Result<usize> {
    let mut g = s.lock();
    if let ([one], Phase::Connected, true) = (src, g.phase, g.wr) {
        // The commonest send (one small buffer, room for it), before
        // anything else is looked at: one message, after the iomap entries
        // waiting to go first. Otherwise the chunks below send it.
        let nonblock = nonblocking(&g, flags);
        if let Err(e) = super::iomap::flush(&mut g, nonblock) {
            s.show_at_exit(&mut g);
            return Err(e);
        }
        if let Some(r) = g.conn.as_mut().and_then(|c| c.send_whole_inline(one)) {
            s.show_at_exit(&mut g);
            return r.map(|()| one.len());
        }
    }
    send_slow(s, g, src, flags)
}

/// Every send but the one-message case, out of line (as [`recv_slow`]).
#[cold]
#[inline(never)]
fn send_slow(s: &Call, g: Guard, src: &[IoSlice], flags: i32) -> Result<usize> {
    let (mut g, r) = send_locked(s, g, src, flags);
    s.show_at_exit(&mut g);
    r
}

#[inline(always)]
fn send_locked<'a>(s: &'a RSocket, g: Guard<'a>, src: &[IoSlice], flags: i32) -> Locked<'a, usize> {
    let nonblock = nonblocking(&g, flags);
    let mut g = match wait_open(s, g, nonblock) {
        Ok(g) => g,
        Err(e) => return (s.lock(), Err(e)),
    };
    if matches!(g.phase, Phase::Init | Phase::Bound | Phase::Listening) {
        return (g, Err(Error::Errno(libc::ENOTCONN)));
    }
    if let Err(e) = super::iomap::flush(&mut g, nonblock) {
        return (g, Err(e));
    }
    let mut src = Src::new(src);
    let total = src.remaining();
    let mut sent = 0;
    let mut limit = FIRST_CHUNK;
    let partial = |sent: usize, e: Error| if sent > 0 { Ok(sent) } else { Err(e) };
    while sent < total {
        if g.phase != Phase::Connected || !g.wr {
            return (g, partial(sent, Error::Errno(libc::ECONNRESET)));
        }
        let n = match g.conn.as_mut().map(|c| c.send_chunk(&mut src, total - sent, limit)) {
            Some(Ok(n)) => n,
            Some(Err(e)) => return (g, partial(sent, e)),
            None => 0,
        };
        if n > 0 {
            sent += n as usize;
            limit = (limit * 2).min(MAX_CHUNK);
            continue;
        }
        socket::progress(&mut g);
        if g.conn.as_ref().is_some_and(|c| c.can_send()) {
            continue;
        }
        if nonblock {
            return (g, partial(sent, Error::Errno(libc::EAGAIN)));
        }
        g = match sleep(s, g, 0, None, true) {
            Ok(g) => g,
            Err(e) => return (s.lock(), partial(sent, e)),
        };
    }
    (g, Ok(sent))
}

/// Wait (blocking sockets only) until every send has completed, the
/// connection is gone, or `deadline`.
fn drain<'a>(s: &'a RSocket, mut g: Guard<'a>, deadline: Instant) -> Guard<'a> {
    loop {
        socket::progress(&mut g);
        let idle = g.conn.as_ref().is_none_or(|c| c.sends_idle());
        if idle || g.phase != Phase::Connected || Instant::now() >= deadline {
            return g;
        }
        g = match sleep(s, g, 0, Some(deadline), true) {
            Ok(g) => g,
            Err(_) => return s.lock(),
        };
    }
}

/// Post the control message a shutdown needs (waiting, bounded, for a free
/// control slot on a blocking socket).
fn post_ctrl<'a>(s: &'a RSocket, mut g: Guard<'a>, ctrl: u32, deadline: Instant) -> Guard<'a> {
    loop {
        socket::progress(&mut g);
        if g.phase != Phase::Connected {
            return g;
        }
        if let Some(c) = g.conn.as_mut() {
            if c.flow.ctrl_free() {
                let _ = c.post_ctrl(ctrl);
                return g;
            }
        }
        if g.opts.nonblocking() || Instant::now() >= deadline {
            return g;
        }
        g = match sleep(s, g, 0, Some(deadline), true) {
            Ok(g) => g,
            Err(_) => return s.lock(),
        };
    }
}

/// Send the control message of a shutdown or close: a blocking socket
/// posts it now (waiting, bounded, for a slot); a non-blocking one whose
/// data is still in flight leaves it to the engine, which posts it once
/// that data has completed, so that the peer has taken the data in before
/// it hears of the disconnect (upstream's rpoll reports POLLHUP as soon as
/// it sees the disconnect, and a program that stops there would lose the
/// end of the stream).
fn send_ctrl<'a>(s: &'a Shared<RSocket>, mut g: Guard<'a>, ctrl: u32, deadline: Instant) -> Guard<'a> {
    if g.opts.nonblocking() {
        socket::progress(&mut g);
        let busy = g.conn.as_ref().is_some_and(|c| !c.sends_idle() || !c.flow.ctrl_free());
        if busy && g.phase == Phase::Connected {
            g.deferred_ctrl = Some(ctrl);
            g.deferred_idle_since = None;
            if engine::defer_ctrl(s.clone()).is_ok() {
                return g;
            }
            g.deferred_ctrl = None;
        }
    }
    post_ctrl(s, g, ctrl, deadline)
}

/// `rshutdown`: tell the peer, then (blocking sockets) wait, bounded, for
/// the sends in flight. A non-blocking socket stays non-blocking.
pub fn shutdown(s: &Shared<RSocket>, how: i32) -> Result<()> {
    if !(libc::SHUT_RD..=libc::SHUT_RDWR).contains(&how) {
        return Err(Error::INVAL);
    }
    let _ = engine::set_keepalive(s, false);
    let mut g = s.lock();
    g.opts.keepalive = false;
    let deadline = Instant::now() + Duration::from_millis(CLOSE_DRAIN_MS);
    if g.phase == Phase::Connected {
        let ctrl = match how {
            libc::SHUT_RDWR => {
                g.rd = false;
                g.wr = false;
                Some(super::wire::CTRL_DISCONNECT)
            }
            libc::SHUT_WR => {
                g.wr = false;
                Some(if g.rd { super::wire::CTRL_SHUTDOWN } else { super::wire::CTRL_DISCONNECT })
            }
            _ => {
                g.rd = false;
                (!g.wr).then_some(super::wire::CTRL_DISCONNECT)
            }
        };
        if let Some(ctrl) = ctrl {
            g = send_ctrl(s, g, ctrl, deadline);
        }
        if !g.opts.nonblocking() {
            g = drain(s, g, deadline);
        }
    }
    // Unlike upstream, the QP is not moved to the error state here (nor
    // before rclose destroys it): a peer's last message (typically its
    // DISCONNECT, whose acknowledgement an upstream peer waits for in its
    // own rshutdown) may have completed here a moment before the device
    // sent the ACK, and soft-RoCE sends no ACK from a QP in error; the
    // peer then retransmits to a QP that is gone, and with the retry count
    // rsockets asks for (7, "infinite" to soft-RoCE) it waits forever. Our
    // own side needs no flush: pollers see the hang-up on the descriptor
    // (`show`), and a thread asleep in a call wakes on the completion that
    // brought the disconnect, or at the end of its sleep slice.
    s.show(&mut g);
    Ok(())
}

/// `rclose`: the descriptor goes at once; a connected blocking socket
/// first sends its DISCONNECT and waits, bounded, for its sends; a
/// non-blocking one leaves that to the engine (and the library's exit
/// hook gives such closes their time before the process ends).
pub fn close(fd: i32) -> Result<()> {
    let s = socket::forget_fd(fd).ok_or(Error::Errno(libc::EBADF))?;
    RSocket::retire_timer(&s);
    let _ = engine::set_keepalive(&s, false);
    let (connected, nonblock) = {
        let g = s.lock();
        (g.phase == Phase::Connected, g.opts.nonblocking())
    };
    if connected {
        let deadline = Instant::now() + Duration::from_millis(CLOSE_DRAIN_MS);
        let mut g = s.lock();
        // Both directions already shut: the DISCONNECT went then.
        let sent = !g.rd && !g.wr;
        g.rd = false;
        g.wr = false;
        if !sent {
            g = send_ctrl(&s, g, super::wire::CTRL_DISCONNECT, deadline);
        } else if g.deferred_ctrl.is_some() {
            // The shutdown's message still waits: the close's replaces it.
            g.deferred_ctrl = Some(super::wire::CTRL_DISCONNECT);
        }
        if nonblock {
            g.closing = true;
            s.close_descriptor(&mut g);
            drop(g);
            return engine::close_later(s);
        }
        drop(drain(&s, g, deadline));
    }
    engine::teardown(&s);
    Ok(())
}

/// The local (`local`) or peer address.
pub fn name(s: &Shared<RSocket>, local: bool) -> RawAddr {
    s.lock().id.addr(local)
}

/// `rfcntl`: F_GETFL/F_SETFL (O_NONBLOCK and the other status flags) and
/// F_GETFD/F_SETFD (FD_CLOEXEC, applied to the descriptor); ENOTSUP else.
pub fn fcntl(s: &Shared<RSocket>, cmd: i32, arg: i64) -> Result<i32> {
    let mut g = s.lock();
    fcntl_opts(&mut g.opts, s.fd(), cmd, arg)
}

/// `rfcntl` on a datagram socket (the same commands).
pub fn fcntl_dgram(s: &Shared<DgSocket>, cmd: i32, arg: i64) -> Result<i32> {
    let mut g = s.lock();
    fcntl_opts(&mut g.opts, s.fd(), cmd, arg)
}

fn fcntl_opts(opts: &mut Opts, fd: i32, cmd: i32, arg: i64) -> Result<i32> {
    match cmd {
        libc::F_GETFL => Ok(opts.fs_flags),
        libc::F_SETFL => {
            opts.fs_flags = arg as i32;
            Ok(0)
        }
        libc::F_GETFD => Ok(opts.fd_flags),
        libc::F_SETFD => {
            opts.fd_flags = arg as i32;
            // SAFETY: our own descriptor.
            unsafe { libc::fcntl(fd, libc::F_SETFD, arg as i32 & libc::FD_CLOEXEC) };
            Ok(0)
        }
        _ => Err(Error::Errno(libc::ENOTSUP)),
    }
}
