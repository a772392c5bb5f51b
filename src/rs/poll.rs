//! rpoll(3) and rselect(3) for rsockets and ordinary descriptors mixed.
//!
//! An rsocket's readiness is computed from its state after making
//! progress (upstream's rules: POLLIN for data or EOF, POLLOUT when a send
//! can go, POLLHUP once disconnected and read to the end, POLLERR after an error or a failed
//! connect). A set of rsockets only (stream or datagram) is looked at
//! without a system call: an answer at once when any is ready or the
//! timeout is 0, else after spinning for `polling_time` µs, as upstream's
//! rpoll does. To sleep, one `poll()` covers the ordinary descriptors, each
//! rsocket's descriptor (which the engine updates on state changes) and
//! each connection's completion channel (so that data wakes the caller
//! directly). No fixed wake-up interval is needed.

use super::config;
use super::dgram;
use super::socket::{self, Call, Inner, Phase, RSocket};
use crate::error::{Error, Result};
use std::mem::MaybeUninit;
use std::time::{Duration, Instant};

/// The revents of one rsocket for `events` (after progress).
#[link_section = ".text.sorted.rdmacm.2"]
pub(crate) fn revents(g: &mut Inner, events: i16) -> i16 {
    revents_inline(g, events)
}

/// [`revents`] made part of its caller (`rpoll`'s look at a set of
/// stream rsockets): the connected socket's case in line, every other
/// state out of line, so that the commonest `rpoll` makes no call for it
/// (docs/speed.md, "Where a round trip's extra instructions go").
#[inline(always)]
fn revents_inline(g: &mut Inner, events: i16) -> i16 {
    socket::progress_lazy(g);
    if g.phase == Phase::Connected {
        // Before the match, which compiles to a jump table (an indirect
        // jump on every rpoll): readable with data or once shut for
        // reading, writable when a send can go.
        let mut r = 0;
        let c = g.conn.as_ref();
        if events & libc::POLLIN != 0 && (!g.rd || c.is_some_and(|c| c.has_data())) {
            r |= libc::POLLIN;
        }
        if events & libc::POLLOUT != 0 && g.wr && c.is_some_and(|c| c.can_send()) {
            r |= libc::POLLOUT;
        }
        return r;
    }
    revents_not_connected(g, events)
}

/// [`revents`] of a socket in any state but connected.
#[cold]
#[inline(never)]
fn revents_not_connected(g: &Inner, events: i16) -> i16 {
    let want_in = events & libc::POLLIN != 0;
    let want_out = events & libc::POLLOUT != 0;
    let mut r = 0;
    match g.phase {
        Phase::Listening => {
            // A listener is always writable (as upstream's rpoll reports).
            if want_in && !g.accepted.is_empty() {
                r |= libc::POLLIN;
            }
            if want_out {
                r |= libc::POLLOUT;
            }
        }
        Phase::Disconnected => {
            // Readable (the data left, then EOF), never writable; POLLHUP
            // once the data that came before the disconnect is read
            // (upstream reports it at once, and a caller that stops at
            // POLLHUP loses the end of the stream).
            if want_in {
                r |= libc::POLLIN;
            }
            if !g.conn.as_ref().is_some_and(|c| c.has_data()) {
                r |= libc::POLLHUP;
            }
        }
        Phase::Error => {
            if want_in {
                r |= libc::POLLIN;
            }
            r |= libc::POLLERR;
        }
        Phase::ConnectError => {
            r |= events & (libc::POLLIN | libc::POLLOUT);
            r |= libc::POLLERR;
        }
        _ => {}
    }
    r
}

/// An entered stream socket's revents for `events` (after progress), the
/// call ended with its descriptor left as it is (`leave_unshown`).
#[inline(always)]
fn stream_revents(s: &Call, events: i16) -> i16 {
    let mut g = s.lock();
    let r = revents_inline(&mut g, events);
    s.leave_unshown(&mut g);
    r
}

/// Sets up to this size are looked at without allocating.
const FEW: usize = 8;

/// Up to `FEW` entries on the stack, of which the first `n` are written:
/// nothing is spent on the slots a small set does not use (neither
/// writing them first nor dropping them after).
struct Few {
    n: usize,
    e: [MaybeUninit<Entry>; FEW],
}

impl Few {
    fn new() -> Few {
        Few { n: 0, e: [const { MaybeUninit::uninit() }; FEW] }
    }

    /// Add an entry (at most `FEW`).
    fn push(&mut self, v: Entry) {
        self.e[self.n].write(v);
        self.n += 1;
    }

    fn as_slice(&self) -> &[Entry] {
        // SAFETY: the first n slots are written (push).
        unsafe { std::slice::from_raw_parts(self.e.as_ptr().cast::<Entry>(), self.n) }
    }
}

impl Drop for Few {
    fn drop(&mut self) {
        // SAFETY: the first n slots are written and dropped only here.
        unsafe {
            std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(self.e.as_mut_ptr().cast::<Entry>(), self.n))
        }
    }
}

/// What an entry of the caller's set is.
enum Entry {
    Stream(Call),
    Dgram(dgram::Call),
    Plain,
}

/// Only rsockets (stream or datagram) in the set: their revents after
/// progress (a datagram socket's include what the engine took from its UDP
/// socket), looked at for the configured polling time unless `timeout` is
/// 0 (upstream's rpoll spins as long before it sleeps), with no system
/// call. Some(count) when any is ready or the timeout is 0; None: sleep.
fn look(fds: &mut [libc::pollfd], socks: &[Entry], timeout: i32) -> Option<i32> {
    let spin = if timeout == 0 { 0 } else { config::get().polling_time };
    let t0 = (spin > 0).then(Instant::now);
    loop {
        let mut ready = 0;
        for (p, s) in fds.iter_mut().zip(socks) {
            match s {
                Entry::Stream(s) => p.revents = stream_revents(s, p.events),
                Entry::Dgram(d) => p.revents = dgram::revents_locked(d, &mut d.lock(), p.events),
                // Not in a set `poll` looks at this way.
                Entry::Plain => p.revents = 0,
            }
            if p.revents != 0 {
                ready += 1;
            }
        }
        if ready > 0 || timeout == 0 {
            return Some(ready);
        }
        if t0.is_none_or(|t| t.elapsed() >= Duration::from_micros(spin as u64)) {
            // Going to sleep: the descriptors are shown as usual.
            for s in socks {
                if let Entry::Stream(s) = s {
                    s.forget_shown();
                }
            }
            return None;
        }
        std::hint::spin_loop();
    }
}

/// A set of stream rsockets only, looked at once, each socket entered and
/// left in turn (as upstream looks at each in turn): the count of ready
/// entries; None when the set holds anything else. The usual `rpoll` (a
/// socket ready at once, or a poll with timeout 0) ends here, without the
/// general path's entry table.
fn first_look(fds: &mut [libc::pollfd]) -> Option<i32> {
    let mut ready = 0;
    for p in fds.iter_mut() {
        let call = RSocket::enter_owned(socket::lookup(p.fd).ok()?);
        p.revents = stream_revents(&call, p.events);
        call.finish();
        ready += (p.revents != 0) as i32;
    }
    Some(ready)
}

/// `rpoll`: the number of entries with events, 0 at the timeout.
#[link_section = ".text.sorted.rdmacm.2"]
pub fn poll(fds: &mut [libc::pollfd], timeout: i32) -> Result<i32> {
    if fds.len() <= FEW {
        match first_look(fds) {
            Some(n) if n > 0 || timeout == 0 => return Ok(n),
            _ => {}
        }
    }
    poll_rest(fds, timeout)
}

/// `rpoll` past the first look: spinning for the polling time, then
/// sleeping in `poll()`.
#[inline(never)]
fn poll_rest(fds: &mut [libc::pollfd], timeout: i32) -> Result<i32> {
    let entry = |fd: i32| match socket::lookup(fd) {
        Ok(s) => Entry::Stream(RSocket::enter_owned(s)),
        Err(_) => dgram::lookup(fd).map_or(Entry::Plain, |d| Entry::Dgram(dgram::enter(&d))),
    };
    // The entries: on the stack for a small set (no allocation per call).
    let mut few = Few::new();
    let mut many: Vec<Entry> = Vec::new();
    let socks: &[Entry] = if fds.len() <= FEW {
        for p in fds.iter() {
            few.push(entry(p.fd));
        }
        few.as_slice()
    } else {
        many.try_reserve_exact(fds.len()).map_err(|_| Error::NOMEM)?;
        many.extend(fds.iter().map(|p| entry(p.fd)));
        &many
    };
    if socks.iter().all(|e| !matches!(e, Entry::Plain)) {
        if let Some(n) = look(fds, socks, timeout) {
            return Ok(n);
        }
    }
    let deadline = (timeout >= 0).then(|| Instant::now() + Duration::from_millis(timeout as u64));
    // Room for every descriptor the set may hold: each entry's own, a
    // stream's completion channel, a datagram socket's QP channels.
    let room: usize = socks
        .iter()
        .map(|e| match e {
            Entry::Stream(_) => 2,
            Entry::Dgram(d) => dgram::wait_fds(d),
            Entry::Plain => 1,
        })
        .sum();
    // Where each entry's descriptors sit in the set: (self, completion).
    let mut set: Vec<libc::pollfd> = Vec::new();
    set.try_reserve_exact(room).map_err(|_| Error::NOMEM)?;
    let mut slots: Vec<(usize, Option<usize>)> = Vec::new();
    slots.try_reserve_exact(fds.len()).map_err(|_| Error::NOMEM)?;
    loop {
        let mut ready = 0;
        let mut again = false;
        set.clear();
        slots.clear();
        for (p, s) in fds.iter_mut().zip(socks) {
            p.revents = 0;
            match s {
                Entry::Dgram(d) => {
                    // Sleep on the socket's descriptor (datagrams that came
                    // over UDP show there) and its QPs' channels.
                    let mut g = d.lock();
                    p.revents = dgram::revents_locked(d, &mut g, p.events);
                    let at = set.len();
                    set.push(libc::pollfd {
                        fd: d.fd(),
                        events: p.events & (libc::POLLIN | libc::POLLOUT),
                        revents: 0,
                    });
                    if p.revents == 0 && ready == 0 && dgram::prepare_wait(d, &mut g, &mut set) {
                        p.revents = dgram::revents_locked(d, &mut g, p.events);
                        again = true;
                    }
                    if p.revents != 0 {
                        ready += 1;
                    }
                    slots.push((at, (set.len() > at + 1).then_some(at + 1)));
                }
                Entry::Stream(s) => {
                    let mut g = s.lock();
                    p.revents = revents(&mut g, p.events);
                    let mut comp = None;
                    if p.revents == 0 && ready == 0 {
                        // About to sleep: arm, and look again if anything
                        // completed before the arming.
                        match socket::arm_for_wait(&mut g, p.events & libc::POLLOUT != 0) {
                            Some((_, true)) => {
                                // Something completed: look again without
                                // sleeping (the next pass arms and sleeps).
                                p.revents = revents(&mut g, p.events);
                                again = true;
                            }
                            Some((fd, false)) => {
                                s.watch_off(&g);
                                comp = Some(fd);
                            }
                            None => {}
                        }
                    }
                    if p.revents != 0 {
                        // This pass does not sleep; the look after `poll()`
                        // below decides what the descriptor shows.
                        ready += 1;
                    } else {
                        // Slept on: the descriptor shows the state now.
                        s.show(&mut g);
                    }
                    slots.push((set.len(), comp.map(|_| set.len() + 1)));
                    set.push(libc::pollfd {
                        fd: s.fd(),
                        events: p.events & (libc::POLLIN | libc::POLLOUT),
                        revents: 0,
                    });
                    if let Some(c) = comp {
                        set.push(libc::pollfd { fd: c, events: libc::POLLIN, revents: 0 });
                    }
                }
                Entry::Plain => {
                    slots.push((set.len(), None));
                    set.push(libc::pollfd { fd: p.fd, events: p.events, revents: 0 });
                }
            }
        }
        let wait = if ready > 0 || again {
            0
        } else {
            match deadline {
                None => -1,
                Some(d) => d.saturating_duration_since(Instant::now()).as_millis().min(i32::MAX as u128) as i32,
            }
        };
        // SAFETY: set holds valid pollfds.
        let n = unsafe { crate::sys::poll(set.as_mut_ptr(), set.len() as libc::nfds_t, wait) };
        if n < 0 {
            return Err(Error::last_os());
        }
        for ((p, s), &(i, comp)) in fds.iter_mut().zip(socks).zip(&slots) {
            match s {
                Entry::Dgram(d) => {
                    let mut g = d.lock();
                    if let Some(c) = comp {
                        let end = slots.iter().map(|s| s.0).find(|&j| j > i).unwrap_or(set.len());
                        dgram::after_wait(&mut g, &set[c..end]);
                    }
                    let was = p.revents;
                    p.revents = dgram::revents_locked(d, &mut g, p.events);
                    if was == 0 && p.revents != 0 {
                        ready += 1;
                    }
                }
                Entry::Stream(s) => {
                    let mut g = s.lock();
                    if comp.is_some_and(|c| set[c].revents != 0) {
                        if let Some(c) = g.conn.as_mut() {
                            c.drain_events();
                        }
                    }
                    let was = p.revents;
                    p.revents = revents(&mut g, p.events);
                    if was == 0 && p.revents != 0 {
                        ready += 1;
                    }
                    // A ready socket is left unshown, as by the first look:
                    // a caller that polls before each receive would
                    // otherwise pay two system calls a message (shown
                    // readable on the way out of rpoll, unreadable again by
                    // the receive that follows). One that is not ready is
                    // shown on the way out (the call's flag is still unset:
                    // every pass that finds a socket ready returns).
                    if p.revents != 0 {
                        s.leave_unshown(&mut g);
                    }
                }
                Entry::Plain => {
                    p.revents = set[i].revents;
                    if p.revents != 0 {
                        ready += 1;
                    }
                }
            }
        }
        if ready > 0 || deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(ready);
        }
    }
}

/// `rselect` on top of `rpoll` (every descriptor from 0 to `nfds` - 1 is
/// looked at; upstream skips descriptor 0).
///
/// # Safety
/// The sets are NULL or valid `fd_set`s.
pub unsafe fn select(
    nfds: i32,
    rd: *mut libc::fd_set,
    wr: *mut libc::fd_set,
    ex: *mut libc::fd_set,
    timeout_ms: i32,
) -> Result<i32> {
    if !(0..=libc::FD_SETSIZE as i32).contains(&nfds) {
        return Err(Error::INVAL);
    }
    // SAFETY: NULL or valid sets, as the caller promises.
    let isset = |s: *mut libc::fd_set, fd: i32| !s.is_null() && unsafe { libc::FD_ISSET(fd, s) };
    let mut fds: Vec<libc::pollfd> = Vec::new();
    fds.try_reserve_exact(nfds as usize).map_err(|_| Error::NOMEM)?;
    for fd in 0..nfds {
        let mut events = 0;
        if isset(rd, fd) {
            events |= libc::POLLIN;
        }
        if isset(wr, fd) {
            events |= libc::POLLOUT;
        }
        if events != 0 || isset(ex, fd) {
            fds.push(libc::pollfd { fd, events, revents: 0 });
        }
    }
    let r = poll(&mut fds, timeout_ms)?;
    for s in [rd, wr, ex] {
        if !s.is_null() {
            // SAFETY: a valid set.
            unsafe { libc::FD_ZERO(s) };
        }
    }
    let mut count = 0;
    if r > 0 {
        for p in &fds {
            // SAFETY: valid sets (checked non-NULL).
            unsafe {
                if !rd.is_null() && p.revents & (libc::POLLIN | libc::POLLHUP) != 0 && p.events & libc::POLLIN != 0 {
                    libc::FD_SET(p.fd, rd);
                    count += 1;
                }
                if !wr.is_null() && p.revents & libc::POLLOUT != 0 {
                    libc::FD_SET(p.fd, wr);
                    count += 1;
                }
                if !ex.is_null() && p.revents & !(libc::POLLIN | libc::POLLOUT | libc::POLLHUP) != 0 {
                    libc::FD_SET(p.fd, ex);
                    count += 1;
                }
            }
        }
    }
    Ok(count)
}
