//! An rsocket: the object behind one rsocket descriptor, its state, and
//! the tables that find it (by descriptor, by CM id, by completion
//! channel).
//!
//! Threads that touch a socket: the application's calls, and the progress
//! engine (`engine.rs`), which handles the socket's CM events and, while no
//! application thread is inside a call on the socket, its completions.
//! Everything is under the socket's one mutex, held only for non-blocking
//! work; waits happen outside it (`wait.rs`).

use super::config::Opts;
use super::signal::{Ready, Signal};
use super::stream::{Conn, Polled};
use crate::cm::id::Id;
use crate::cmem::Shared;
use crate::error::{Error, Result};
use crate::handle::{FdMap, Table};
use crate::lock::{Lock, LockGuard};
use crate::slab::Slab;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

/// Where a stream socket is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Init,
    Bound,
    Listening,
    /// Active side: resolving the address, the route, waiting for the
    /// peer's answer.
    ResolvingAddr,
    ResolvingRoute,
    Connecting,
    /// Passive side: accepted by the library, not yet established (not
    /// visible to the application).
    Accepting,
    Connected,
    ConnectError,
    Disconnected,
    Error,
}

impl Phase {
    pub fn opening(self) -> bool {
        matches!(self, Phase::ResolvingAddr | Phase::ResolvingRoute | Phase::Connecting | Phase::Accepting)
    }
}

pub struct Inner {
    pub phase: Phase,
    /// Directions still open while connected.
    pub rd: bool,
    pub wr: bool,
    /// SO_ERROR: a connection error kept for the application.
    pub err: i32,
    pub domain: i32,
    pub id: Shared<Id>,
    pub opts: Opts,
    pub conn: Option<Box<Conn>>,
    /// Address/route resolution retries so far.
    pub retries: u32,
    /// Listener: established connections waiting for raccept, and those
    /// still being accepted.
    pub accepted: VecDeque<Shared<RSocket>>,
    pub pending: Vec<Shared<RSocket>>,
    /// Accepted socket: its listener, until it joins the accept queue.
    pub listener: Option<Shared<RSocket>>,
    /// What the descriptor reports now.
    pub shown: Ready,
    /// The descriptor may not report the state: a call left it as it was
    /// (`Call::leave_unshown`); the next `show` brings it up to date.
    pub stale: bool,
    /// Keepalive: when the next one is due (monotonic ms).
    pub keepalive_due: Option<u64>,
    /// rclose was called: the engine finishes the teardown.
    pub closing: bool,
    /// rrecv reported end of file: it stays so (data the peer sends after
    /// its shutdown is dropped, not read after the EOF).
    pub eof_seen: bool,
    /// A non-blocking shutdown's control message (SHUTDOWN or DISCONNECT),
    /// posted by the engine once the data sent before it has completed.
    pub deferred_ctrl: Option<u32>,
    /// When the engine first saw that data completed (engine ms): the
    /// message goes `CTRL_GRACE_MS` later.
    pub deferred_idle_since: Option<u64>,
}

/// A socket's state, locked.
pub type Guard<'a> = LockGuard<'a, Inner>;

pub struct RSocket {
    sig: Signal,
    inner: Lock<Inner>,
    /// Application calls on this socket and the engine's flags about
    /// them, in one word ([`Calls`]).
    calls: Calls,
    /// Whether the engine's watch on the completion channel is enabled (it
    /// is one-shot: a delivered event disables it). A thread about to
    /// sleep on the channel disables it; the engine enables it again once
    /// the application has stayed out of calls for a tick (`handoff`). So
    /// the engine never wakes together with a thread that waits for the
    /// completions itself, nor for an application that polls in a loop.
    watching: AtomicBool,
    /// The count of finished calls the engine saw at its last tick.
    exits_seen: AtomicU32,
    /// How long (ms) the engine waits before it looks at the socket again
    /// (`handoff_due`): 1, doubled each time the application turned out to
    /// be back in a call, up to `HANDOFF_MAX_MS`; 1 again after a hand-off.
    patience: AtomicU32,
    /// When (engine ms) the engine looks at the socket next; 0: not yet
    /// seen since it joined the list.
    look_at: AtomicU64,
    /// While the socket is steady (in `STEADY`): one less than the number
    /// of finished calls after which a call re-arms `timer` (a power of
    /// two); `NOT_STEADY` otherwise.
    rearm_mask: AtomicU32,
    /// The mask the first call out of a long one restores (`timer_expired`
    /// set `rearm_mask` to 0 meanwhile, so that this call pushes).
    resume_mask: AtomicU32,
    /// The steady socket's timer (created by the engine when the socket
    /// first turns steady).
    timer: Timer,
    /// The count of finished calls at the timer's last push (or when the
    /// socket turned steady): an expiry that finds it unchanged, and no
    /// call inside, hands the socket over at once.
    pushed_exits: AtomicU32,
}

/// A timerfd in the engine's epoll set, owned by one socket: while the
/// socket is steady, its application's calls push the timer's expiry
/// forward; it expires (and wakes the engine) only once they stop. Its
/// lock is a leaf (nothing is taken under it): it keeps a call's push from
/// reaching a descriptor number the socket's close has released.
struct Timer(Lock<TimerState>);

struct TimerState {
    fd: i32,
    /// How long (µs) the timer runs from a push: the time the socket has
    /// been steady (`busy_us`), at least what it was when the socket
    /// turned steady, at most `STEADY_EXPIRY_MS`. So an application that
    /// has been calling in for a few milliseconds is taken over a few
    /// milliseconds after its last call, one that has been at it for long
    /// within `STEADY_EXPIRY_MS`, as the engine's looks would have.
    expiry_us: u32,
    /// How long (µs) the socket has been steady: the look interval that
    /// made it so, and the time between pushes since.
    busy_us: u32,
}

/// `Timer`'s descriptor before the first use.
const TIMER_NONE: i32 = -1;
/// `Timer`'s descriptor after the socket was closed: none, for good.
const TIMER_RETIRED: i32 = -2;

/// Make timerfd `fd` expire `us` from now (replacing any earlier expiry):
/// how long (ns) the earlier expiry was still away (0 if none was set, or
/// it had passed); None if the call failed.
fn settime(fd: i32, us: u32) -> Option<u64> {
    let t = libc::itimerspec {
        it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
        it_value: libc::timespec {
            tv_sec: (us / 1_000_000) as libc::time_t,
            tv_nsec: (us % 1_000_000) as libc::c_long * 1000,
        },
    };
    let mut old = libc::itimerspec {
        it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
        it_value: libc::timespec { tv_sec: 0, tv_nsec: 0 },
    };
    // SAFETY: our timerfd (open while its lock is held), valid itimerspecs.
    if unsafe { libc::timerfd_settime(fd, 0, &t, &mut old) } != 0 {
        return None;
    }
    Some(old.it_value.tv_sec as u64 * 1_000_000_000 + old.it_value.tv_nsec as u64)
}

impl Timer {
    /// The socket turns steady, its application busy for `busy_us`: arm
    /// the timer to expire `expiry_us` from now, first creating it and
    /// adding it to the engine's epoll set (edge-triggered: each expiry
    /// wakes the engine once, read or not). False if there is no timer.
    fn start(&self, expiry_us: u32, busy_us: u32) -> bool {
        let mut t = self.0.lock();
        if t.fd == TIMER_NONE {
            t.fd = Self::create();
        }
        if t.fd < 0 {
            return false;
        }
        t.expiry_us = expiry_us;
        t.busy_us = busy_us;
        settime(t.fd, expiry_us).is_some()
    }

    /// Make the timer expire `us` from now, once (its state unchanged).
    fn arm_once(&self, us: u32) {
        let t = self.0.lock();
        if t.fd >= 0 {
            let _ = settime(t.fd, us);
        }
    }

    /// A call's push: the timer expires a (possibly longer) expiry from
    /// now. The time since the push before (or the start), None if the
    /// timer had expired or was unarmed meanwhile; and the new expiry
    /// (µs). None if there is no timer.
    fn push(&self) -> Option<(Option<u32>, u32)> {
        let mut t = self.0.lock();
        if t.fd < 0 {
            return None;
        }
        let expiry = t.busy_us.max(t.expiry_us).min(STEADY_EXPIRY_MS * 1000);
        let left = settime(t.fd, expiry)?;
        let since = (left > 0).then(|| t.expiry_us.saturating_sub((left / 1000) as u32));
        t.busy_us = t.busy_us.saturating_add(since.unwrap_or(t.expiry_us));
        t.expiry_us = expiry;
        Some((since, expiry))
    }

    fn create() -> i32 {
        let ep = ENGINE_EPOLL.load(Ordering::Acquire);
        if ep < 0 {
            return TIMER_NONE;
        }
        // SAFETY: plain system call.
        let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) };
        if fd < 0 {
            return TIMER_NONE;
        }
        let mut ev = libc::epoll_event { events: (libc::EPOLLIN | libc::EPOLLET) as u32, u64: TIMER_TOKEN | fd as u64 };
        // SAFETY: the engine's epoll set, our new descriptor.
        if unsafe { crate::sys::epoll_ctl(ep, libc::EPOLL_CTL_ADD, fd, &mut ev) } != 0 {
            crate::sys::close(fd);
            return TIMER_NONE;
        }
        fd
    }

    /// Whether this is the timer with descriptor `fd`.
    fn is(&self, fd: i32) -> bool {
        self.0.lock().fd == fd
    }

    /// Close the timer for good (the socket is closed).
    fn retire(&self) {
        let mut t = self.0.lock();
        if t.fd >= 0 {
            let ep = ENGINE_EPOLL.load(Ordering::Acquire);
            if ep >= 0 {
                // SAFETY: the engine's epoll set; our descriptor, still open.
                unsafe { crate::sys::epoll_ctl(ep, libc::EPOLL_CTL_DEL, t.fd, std::ptr::null_mut()) };
            }
            crate::sys::close(t.fd);
        }
        t.fd = TIMER_RETIRED;
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        self.retire();
    }
}

/// `RSocket::rearm_mask` of a socket that is not steady: a call re-arms
/// nothing (the test `exits & mask == 0` holds only when the count wraps,
/// and the re-arm then finds the socket not steady).
const NOT_STEADY: u32 = u32::MAX;
/// The largest `RSocket::rearm_mask` of a steady socket (a push every
/// 2^30 calls at the least).
const MAX_REARM_MASK: u32 = (1 << 30) - 1;
/// The engine's epoll token of a socket's timer: this bit and the timer's
/// descriptor (`dgram::DG_TOKEN` is another bit).
pub(crate) const TIMER_TOKEN: u64 = 1 << 61;

/// Application calls on a socket, and the engine's flags about them, in one
/// atomic word, so that a call costs one atomic operation on the way in
/// and, usually, one on the way out:
/// - bits 0-19: application threads inside a call (while there are any,
///   they process the completions themselves);
/// - `MISSED`: the engine saw a completion event while threads were
///   inside: the last one out processes it;
/// - `PENDING`: the socket is in the engine's hand-off list, or steady
///   (`STEADY`);
/// - bits 32-63: calls finished (the engine sees whether the application
///   came back), wrapping.
///
/// All updates are read-modify-writes of the one word, so the engine's
/// "is anyone inside?" and a thread's "did the engine leave me an event?"
/// are decided in one total order.
struct Calls(AtomicU64);

const ACTIVE_MASK: u64 = (1 << 20) - 1;
const MISSED: u64 = 1 << 20;
const PENDING: u64 = 1 << 21;
const EXIT_ONE: u64 = 1 << 32;

impl Calls {
    fn active(w: u64) -> u64 {
        w & ACTIVE_MASK
    }
    fn exits(w: u64) -> u32 {
        (w >> 32) as u32
    }
    fn load(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
    fn set(&self, bits: u64) -> u64 {
        self.0.fetch_or(bits, Ordering::SeqCst)
    }
    fn clear(&self, bits: u64) -> u64 {
        self.0.fetch_and(!bits, Ordering::SeqCst)
    }
}

/// Sockets whose application left a call: the engine takes over their
/// completions once the application stays away for a tick.
static HANDOFF: Mutex<Vec<Shared<RSocket>>> = Mutex::new(Vec::new());

/// How often the engine looks at the hand-off list while it is not empty.
pub(crate) const HANDOFF_TICK_MS: i32 = 1;
/// The longest the engine waits between two looks at one socket. An
/// application found back in a call at a look usually turns steady there
/// (`STEADY`: the engine stops looking at it); one that is not (it came
/// back for one call only, or no timer could be had, or a `repoll_wait`
/// loop is active) is looked at less and less often, up to this interval:
/// under emulation a wake-up of the engine each millisecond doubled
/// rstream's ping-pong latency. One still busy at a look this long after
/// the last turns steady in any case.
pub(crate) const HANDOFF_MAX_MS: u32 = 16;

/// Sockets whose application was back in a call at a look (after one
/// with at least two calls, or inside one): the engine no longer wakes to
/// look at them. Each one's calls push its timer forward (every so many
/// calls: `push_timer` keeps them an eighth to a half of the timer's
/// expiry apart), so the timer expires only once they stop (or slow
/// down), its expiry after the last push; the socket is then handed over
/// at once if no call came since that push, else it goes back to the
/// hand-off list. The expiry is the look interval that made the socket
/// steady, growing with the time it stays so up to `STEADY_EXPIRY_MS`:
/// the engine takes over such a socket's completions (a peer's credits,
/// the descriptor's readiness) about as long after its application's last
/// call as its looks would have, and while the application is busy it is
/// not woken at all (on the emulated bed each look took a vCPU from a
/// spinning process).
static STEADY: Mutex<Vec<Shared<RSocket>>> = Mutex::new(Vec::new());
/// The longest a steady socket's timer runs from a push.
const STEADY_EXPIRY_MS: u32 = 2 * HANDOFF_MAX_MS;

/// The engine runs its timers (and so looks at the hand-off list) within
/// `HANDOFF_MAX_MS`: it does while a `repoll_wait` loop is active
/// (`engine::run`). Then a thread of that loop leaving a call does not wake
/// the engine: its next `repoll_wait` hands the socket over at once
/// (`hand_over_now`), and should it not come back, the engine's next tick
/// finds the socket in the list. (A wake-up per call cost the redis server
/// behind the preload two engine wake-ups and a lock handover per request.)
pub(crate) static ENGINE_TICKING: AtomicBool = AtomicBool::new(false);
/// `repoll_wait` was called since the engine last looked.
pub(crate) static REPOLL_CALLED: AtomicBool = AtomicBool::new(false);
/// A socket joined the hand-off list without waking the engine since it
/// last looked (it keeps ticking while this happens).
pub(crate) static KICK_SKIPPED: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// This thread has called `repoll_wait` (an event loop).
    static REPOLL_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The calling thread is about to wait in `repoll_wait`.
pub fn repoll_waiting() {
    REPOLL_THREAD.with(|t| t.set(true));
    REPOLL_CALLED.store(true, Ordering::Relaxed);
}

/// The engine's epoll set (completion channels are registered one-shot,
/// keyed by their descriptor) and its wake-up eventfd; -1 before.
static ENGINE_EPOLL: AtomicI32 = AtomicI32::new(-1);
static ENGINE_WAKE: AtomicI32 = AtomicI32::new(-1);

/// The engine's epoll set and eventfd, recorded by the engine as it starts.
pub fn set_engine_fds(epoll: i32, wake: i32) {
    ENGINE_EPOLL.store(epoll, Ordering::Release);
    ENGINE_WAKE.store(wake, Ordering::Release);
}

/// The engine's epoll set (-1 before the engine started): datagram
/// sockets register their descriptors in it (`dgram.rs`).
pub(crate) fn engine_epoll() -> i32 {
    ENGINE_EPOLL.load(Ordering::Acquire)
}

/// In a child after fork(): the sockets waiting for the parent's engine
/// are not this process's to hand over (their references are leaked, not
/// dropped: dropping would destroy the parent's resources).
pub fn forget_after_fork() {
    if let Ok(mut h) = HANDOFF.try_lock() {
        std::mem::forget(std::mem::take(&mut *h));
    }
    if let Ok(mut st) = STEADY.try_lock() {
        // (Their timers are the parent's: calls in the child push nothing.)
        for s in st.iter() {
            s.rearm_mask.store(NOT_STEADY, Ordering::SeqCst);
        }
        std::mem::forget(std::mem::take(&mut *st));
    }
}

/// Make the engine look at its timers and lists again.
pub fn kick_engine() {
    let wake = ENGINE_WAKE.load(Ordering::Acquire);
    if wake >= 0 {
        let one: u64 = 1;
        // SAFETY: an 8-byte write to the engine's eventfd.
        unsafe { libc::write(wake, &one as *const u64 as *const libc::c_void, 8) };
    }
}

/// Enable (`on`) the engine's one-shot watch of a completion channel
/// again, or disable it. Disabling takes the channel out of the engine's
/// epoll set (`removed` records that; enabling adds it back): the kernel
/// gives a registration modified to no events EPOLLERR|EPOLLHUP, which the
/// completion channel's wake-ups match, so every completion event would wake
/// the engine's `epoll_wait` for nothing (it finds nothing to report and
/// sleeps again inside the call) — two context switches per event while an
/// application thread sleeps on the channel itself. A registration whose
/// one-shot event fired is truly disabled, and is modified as before.
pub(crate) fn engine_watch(fd: i32, token: u64, on: bool, removed: &AtomicBool) {
    let ep = ENGINE_EPOLL.load(Ordering::Acquire);
    if ep < 0 || fd < 0 {
        return;
    }
    if on {
        let op = if removed.swap(false, Ordering::SeqCst) { libc::EPOLL_CTL_ADD } else { libc::EPOLL_CTL_MOD };
        let mut ev = libc::epoll_event { events: WATCH_EVENTS, u64: token };
        // SAFETY: the engine's epoll set; the channel's descriptor, open
        // while its connection is (a MOD after the channel left the set at
        // teardown fails with ENOENT, harmless).
        unsafe { crate::sys::epoll_ctl(ep, op, fd, &mut ev) };
    } else if !removed.swap(true, Ordering::SeqCst) {
        // SAFETY: as above.
        unsafe { crate::sys::epoll_ctl(ep, libc::EPOLL_CTL_DEL, fd, std::ptr::null_mut()) };
    }
}

/// The events a completion channel is watched with.
pub(crate) const WATCH_EVENTS: u32 = (libc::EPOLLIN | libc::EPOLLONESHOT) as u32;

// SAFETY: the raw libibverbs pointers inside are used under the mutex.
unsafe impl Send for Inner {}

/// Every socket lives in a slot of this pool, so that the descriptor map
/// finds it with no lock (`handle::FdMap`).
static POOL: Slab = Slab::new(Shared::<RSocket>::LAYOUT, Shared::<RSocket>::init_slot);
/// Live sockets by descriptor.
static SOCKETS: FdMap<RSocket> = FdMap::new(&POOL);
/// Sockets by the address of their CM id (for CM events).
static BY_ID: Table<Shared<RSocket>> = Table::new();

impl RSocket {
    /// A new socket object with its descriptor pair, recorded by
    /// descriptor and by id.
    pub fn create(domain: i32, id: Shared<Id>, opts: Opts, cloexec: bool) -> Result<Shared<RSocket>> {
        let (sig, shown) = Signal::new(cloexec)?;
        let idkey = Id::key(&id);
        let fd = sig.fd();
        let value = RSocket {
            sig,
            inner: Lock::new(Inner {
                phase: Phase::Init,
                rd: false,
                wr: false,
                err: 0,
                domain,
                id,
                opts,
                conn: None,
                retries: 0,
                accepted: VecDeque::new(),
                pending: Vec::new(),
                listener: None,
                shown,
                stale: false,
                keepalive_due: None,
                closing: false,
                eof_seen: false,
                deferred_ctrl: None,
                deferred_idle_since: None,
            }),
            calls: Calls(AtomicU64::new(0)),
            watching: AtomicBool::new(false),
            exits_seen: AtomicU32::new(0),
            patience: AtomicU32::new(1),
            look_at: AtomicU64::new(0),
            rearm_mask: AtomicU32::new(NOT_STEADY),
            resume_mask: AtomicU32::new(0),
            timer: Timer(Lock::new(TimerState { fd: TIMER_NONE, expiry_us: 0, busy_us: 0 })),
            pushed_exits: AtomicU32::new(0),
        };
        // SAFETY: the value is written whole; POOL holds only sockets.
        let s = unsafe { Shared::try_new_pooled(&POOL, fd as usize, |p: *mut RSocket| p.write(value)) }?;
        BY_ID.insert(idkey, s.clone())?;
        if let Err(e) = SOCKETS.insert(fd as usize, s.clone()) {
            BY_ID.remove(idkey);
            return Err(e);
        }
        Ok(s)
    }

    /// The descriptor the application knows the socket by.
    pub fn fd(&self) -> i32 {
        self.sig.fd()
    }

    /// Release the descriptor (rclose, teardown): its number may be reused
    /// at once, whatever references to the socket remain. Called with the
    /// lock held (`_g`), which serialises it with `show`.
    pub fn close_descriptor(&self, _g: &mut Inner) {
        self.sig.close();
    }

    #[inline]
    pub fn lock(&self) -> Guard<'_> {
        self.inner.lock()
    }

    /// Mirror the socket's state onto its descriptor.
    #[inline]
    pub fn show(&self, g: &mut Inner) {
        g.stale = false;
        let want = readiness(g);
        if want != g.shown {
            self.apply(g, want);
        }
    }

    #[inline(never)]
    fn apply(&self, g: &mut Inner, want: Ready) {
        let mut shown = g.shown;
        let _ = self.sig.apply(&mut shown, want);
        g.shown = shown;
    }

    /// An application call begins on this socket.
    pub fn enter(this: &Shared<RSocket>) -> Call {
        Self::enter_owned(this.clone())
    }

    /// [`RSocket::enter`] with a reference the call keeps (the one a lookup
    /// just counted).
    pub fn enter_owned(this: Shared<RSocket>) -> Call {
        this.calls.0.fetch_add(1, Ordering::SeqCst);
        Call { s: this, shown: std::cell::Cell::new(false) }
    }

    /// The engine got a completion event (its watch is now disabled):
    /// whether it may process it (no application thread inside); otherwise
    /// the last one out will.
    pub fn engine_may_progress(&self) -> bool {
        self.watching.store(false, Ordering::SeqCst);
        if Calls::active(self.calls.set(MISSED)) == 0 {
            self.calls.clear(MISSED);
            true
        } else {
            false
        }
    }
}

/// What the engine's look at a socket in the hand-off list found.
#[derive(PartialEq, Eq)]
enum Handoff {
    Done,
    Back,
    BackListed,
}

/// An application call in progress on a socket: on the way out, leftover
/// progress is made and the descriptor updated.
pub struct Call {
    s: Shared<RSocket>,
    /// The call showed the state at its end, with the lock held
    /// (`show_at_exit`): the way out need not take the lock again.
    shown: std::cell::Cell<bool>,
}

impl Call {
    /// The end of the call, with the lock still held: the descriptor shows
    /// the state now.
    #[inline]
    pub fn show_at_exit(&self, g: &mut Inner) {
        self.s.show(g);
        self.shown.set(true);
    }

    /// The end of a call that told the caller the state of a connected
    /// socket (`rpoll` returning it ready, at once or after sleeping): the descriptor is left
    /// as it is, as for data a call took in and consumed. The caller acts
    /// next (typically a receive that leaves the socket as shown); if it
    /// stays away instead, the engine's hand-off shows the state a look
    /// later. Not updating it saves two system calls per message for a
    /// caller that polls before each receive.
    pub fn leave_unshown(&self, g: &mut Inner) {
        let live = g.phase == Phase::Connected && g.conn.is_some();
        self.shown.set(live);
        g.stale |= live;
    }

    /// The end of a call that changed nothing (a receive that found
    /// nothing: no completion, no data): the descriptor already shows the
    /// state unless an earlier call left it stale, and the way out need not
    /// look again. Otherwise as [`Call::show_at_exit`].
    #[inline]
    pub fn show_unless_unchanged(&self, g: &mut Inner, unchanged: bool) {
        if unchanged && !g.stale {
            self.shown.set(true);
        } else {
            self.show_at_exit(g);
        }
    }

    /// Undo [`Call::leave_unshown`]: the way out shows the state.
    pub fn forget_shown(&self) {
        self.shown.set(false);
    }
}

impl std::ops::Deref for Call {
    type Target = Shared<RSocket>;
    fn deref(&self) -> &Shared<RSocket> {
        &self.s
    }
}

impl RSocket {
    /// The engine now watches the connection's completion channel (it was
    /// just added, or it delivered an event and the engine re-enables it).
    pub fn watch_enabled(&self, g: &Inner) {
        if let Some(c) = g.conn.as_ref() {
            // Recorded before the call: an event the watch delivers at once
            // then disables it after this store.
            self.watching.store(true, Ordering::SeqCst);
            engine_watch(c.comp_fd, c.comp_fd as u64, true, &c.watch_removed);
        }
    }

    /// The engine's watch is being added.
    pub fn mark_watched(&self) {
        self.watching.store(true, Ordering::SeqCst);
    }

    /// The last thread out of a call on a connected socket: the engine
    /// will take over its completions if the application stays away.
    fn left(this: &Shared<RSocket>) {
        if this.calls.set(PENDING) & PENDING != 0 {
            return;
        }
        let mut h = HANDOFF.lock().unwrap_or_else(|e| e.into_inner());
        if h.try_reserve(1).is_err() {
            // No memory for the list: hand over at once.
            drop(h);
            this.calls.clear(PENDING);
            let mut g = this.lock();
            settle(&mut g, true);
            this.watch_enabled(&g);
            this.show(&mut g);
            return;
        }
        let first = h.is_empty();
        h.push(this.clone());
        drop(h);
        // (SeqCst, against the engine's store of ENGINE_TICKING before it
        // looks at the list a last time: either it sees this socket, or
        // this thread sees it is not ticking and wakes it.)
        if first {
            if REPOLL_THREAD.with(|t| t.get()) && ENGINE_TICKING.load(Ordering::SeqCst) {
                KICK_SKIPPED.store(true, Ordering::Relaxed);
            } else {
                kick_engine();
            }
        }
    }

    /// The engine's look at a socket in the hand-off list at `now` (engine
    /// ms): None when it is done with it (handed over, or nothing to hand
    /// over); else when to look again. The application must have stayed
    /// out of calls from one look to the next.
    pub fn handoff_due(this: &Shared<RSocket>, now: u64) -> Option<u64> {
        let due = this.look_at.load(Ordering::SeqCst);
        if due == 0 {
            // First look: count the application's calls from here.
            this.exits_seen.store(Calls::exits(this.calls.load()), Ordering::SeqCst);
            let d = now + this.patience.load(Ordering::SeqCst) as u64;
            this.look_at.store(d, Ordering::SeqCst);
            return Some(d);
        }
        if now < due {
            return Some(due);
        }
        let before = this.exits_seen.load(Ordering::SeqCst);
        let h = Self::handoff(this);
        if h == Handoff::Done {
            this.look_at.store(0, Ordering::SeqCst);
            this.patience.store(1, Ordering::SeqCst);
            return None;
        }
        let p0 = this.patience.load(Ordering::SeqCst);
        // (While a repoll_wait loop is active its threads hand their
        // sockets over themselves, `hand_over_now`, steady ones included:
        // a timer would then mostly expire for nothing: there a socket
        // turns steady only at a look at the longest interval.)
        if h == Handoff::Back && (p0 == HANDOFF_MAX_MS || !ENGINE_TICKING.load(Ordering::SeqCst)) {
            // Still calling in, or inside a call right now (a long one: a
            // blocking wait, a large transfer; looking again every
            // interval while it lasts would wake the engine for nothing).
            let calls = this.exits_seen.load(Ordering::SeqCst).wrapping_sub(before);
            let inside = Calls::active(this.calls.load()) > 0;
            if (calls >= 2 || inside) && Self::make_steady(this, calls.max(1), p0) {
                return None;
            }
        }
        let p = (p0 * 2).min(HANDOFF_MAX_MS);
        this.patience.store(p, Ordering::SeqCst);
        this.look_at.store(now + p as u64, Ordering::SeqCst);
        // Listed again meanwhile: that entry stays, this one goes.
        (h == Handoff::Back).then_some(now + p as u64)
    }

    /// The application was back at a look `interval` ms after the one
    /// before (`calls` calls finished in it), or is inside a call at its
    /// end (`calls` is then at least 1): move the socket from the hand-off
    /// list to `STEADY` (it stays `PENDING`), its timer expiring
    /// `interval` after the last push. Calls push it every n-th call, n a
    /// power of two no larger than half of `calls` (at the rate seen, about
    /// two pushes an interval; `push_timer` adjusts it). False (the engine
    /// keeps looking) if the timer or memory cannot be had.
    fn make_steady(this: &Shared<RSocket>, calls: u32, interval: u32) -> bool {
        let mut st = STEADY.lock().unwrap_or_else(|e| e.into_inner());
        let us = interval.min(STEADY_EXPIRY_MS) * 1000;
        if st.try_reserve(1).is_err() || !this.timer.start(us, us) {
            return false;
        }
        st.push(this.clone());
        this.pushed_exits.store(this.exits_seen.load(Ordering::SeqCst), Ordering::SeqCst);
        let half = (calls / 2).max(1);
        let n = 1u32 << (31 - half.leading_zeros());
        // (Under the list's lock: whoever takes the socket out again stores
        // NOT_STEADY after this.)
        this.rearm_mask.store(n - 1, Ordering::SeqCst);
        true
    }

    /// Out of `STEADY`: calls push nothing; the engine's looks start again
    /// from the first.
    fn unsteady(&self) {
        self.rearm_mask.store(NOT_STEADY, Ordering::SeqCst);
        self.look_at.store(0, Ordering::SeqCst);
        self.patience.store(1, Ordering::SeqCst);
    }

    /// A call that finished on a steady socket (the `exits`-th) pushes its
    /// timer forward. The first call out of a long one (the timer expired
    /// inside it: `timer_expired`) restores the mask from before, halved
    /// (twice the pushes).
    /// When the push before came less than an eighth of the timer's
    /// expiry ago, calls push half as often from now on; more than half of
    /// it ago (or the timer expired meanwhile), twice as often. The mask
    /// changes only if the engine changed nothing meanwhile. (A stale push,
    /// racing with the socket's leaving `STEADY`, only makes the timer
    /// expire once more for nothing.)
    #[cold]
    #[inline(never)]
    fn push_timer(&self, exits: u32) {
        let mask = self.rearm_mask.load(Ordering::SeqCst);
        if mask == NOT_STEADY {
            return;
        }
        let Some((since, expiry)) = self.timer.push() else { return };
        self.pushed_exits.store(exits, Ordering::SeqCst);
        let next = match since {
            None if mask == 0 => self.resume_mask.swap(0, Ordering::SeqCst),
            None => mask >> 1,
            Some(t) if t < expiry / 8 && mask < MAX_REARM_MASK => mask * 2 + 1,
            Some(t) if t > expiry / 2 && mask > 0 => mask >> 1,
            Some(_) => return,
        };
        let _ = self.rearm_mask.compare_exchange(mask, next, Ordering::SeqCst, Ordering::SeqCst);
    }

    /// The socket is being closed: out of `STEADY` (else it would stay
    /// there until its timer expired), and its timer closed with it.
    pub fn retire_timer(this: &Shared<RSocket>) {
        // The timer first: from then on the engine cannot make the socket
        // steady (`make_steady` arms the timer under the list's lock), so
        // the list, looked at next, holds it now or never will.
        this.timer.retire();
        let mut st = STEADY.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = st.iter().position(|s| Shared::ptr_eq(s, this)) {
            st.swap_remove(i).unsteady();
        }
    }

    /// Hand the socket's completions over to the engine if the application
    /// stayed out of calls since the last look (`Handoff::Done`, also when
    /// there is nothing to hand over); else the application came back, and
    /// whether its exit put the socket in the list again meanwhile.
    fn handoff(this: &Shared<RSocket>) -> Handoff {
        let w = this.calls.clear(PENDING);
        let exits = Calls::exits(w);
        if Calls::active(w) == 0 && this.exits_seen.load(Ordering::SeqCst) == exits {
            let mut g = this.lock();
            if g.phase == Phase::Connected && g.conn.is_some() {
                if this.watching.load(Ordering::SeqCst) {
                    // The engine's watch is still on and no event was taken
                    // from the channel since (whoever takes one clears the
                    // flag first: the engine, a sleeper, a missed event):
                    // nothing to read, nothing to enable; the send CQ is
                    // armed if sends now wait for completions.
                    settle(&mut g, false);
                } else {
                    settle(&mut g, true);
                    this.watch_enabled(&g);
                }
                this.show(&mut g);
            }
            return Handoff::Done;
        }
        this.exits_seen.store(exits, Ordering::SeqCst);
        // Still in the list unless an exit meanwhile put it there again.
        if this.calls.set(PENDING) & PENDING != 0 {
            Handoff::BackListed
        } else {
            Handoff::Back
        }
    }

    /// A thread is about to sleep on the completion channel itself: the
    /// engine need not wake too.
    pub fn watch_off(&self, g: &Inner) {
        if let Some(c) = g.conn.as_ref() {
            if self.watching.swap(false, Ordering::SeqCst) {
                engine_watch(c.comp_fd, c.comp_fd as u64, false, &c.watch_removed);
            }
        }
    }
}

impl Call {
    /// The end of a call that returns normally: what dropping it does,
    /// inline in the caller (the hottest calls end here; an unwinding
    /// call still ends in `drop`).
    #[inline(always)]
    pub fn finish(self) {
        let me = std::mem::ManuallyDrop::new(self);
        me.leave();
        // SAFETY: the reference is read out once; `me` is never dropped.
        drop(unsafe { std::ptr::read(&me.s) });
    }

    /// The way out: the call's count, the timer's push, the descriptor.
    #[inline(always)]
    fn leave(&self) {
        // One step: this thread is out, one more call finished.
        let w = self.s.calls.0.fetch_add(EXIT_ONE.wrapping_sub(1), Ordering::SeqCst);
        // Every n-th call on a steady socket pushes its timer forward.
        // (SeqCst: against `timer_expired`'s store of 0 before it sees
        // this thread inside; a plain load on x86.)
        let exits = Calls::exits(w).wrapping_add(1);
        if exits & self.s.rearm_mask.load(Ordering::SeqCst) == 0 {
            std::hint::cold_path();
            self.s.push_timer(exits);
        }
        // The usual way out: the last thread out of a call that showed the
        // state at its end, no event left to it, the socket already in the
        // hand-off list (the engine clears the flag before it looks, so a
        // return now is seen).
        if Calls::active(w) == 1 && self.shown.get() && w & (MISSED | PENDING) == PENDING {
            return;
        }
        self.exit(w);
    }
}

impl Drop for Call {
    #[inline]
    fn drop(&mut self) {
        self.leave();
    }
}

impl Call {
    /// The way out of a call other than the usual one (`w`: the call word
    /// before this exit was counted).
    #[inline(never)]
    fn exit(&self, w: u64) {
        let s = &self.s;
        let shown = self.shown.get();
        if Calls::active(w) == 1 {
            let missed = w & MISSED != 0 && s.calls.clear(MISSED) & MISSED != 0;
            if shown && !missed && w & PENDING != 0 {
                // Already in the hand-off list (as in `drop`; here the
                // flag of a missed event was found already taken).
                return;
            }
            if shown && !missed {
                // The call showed the state at its end; whatever another
                // thread changed since, that thread shows on its way out
                // (and the engine changes nothing while we were inside).
                RSocket::left(s);
                return;
            }
            let mut g = s.lock();
            if missed {
                // An event the engine left to us.
                if let Some(c) = g.conn.as_mut() {
                    c.drain_events();
                }
                progress(&mut g);
            }
            s.show(&mut g);
            let live = g.phase == Phase::Connected && g.conn.is_some();
            drop(g);
            if live {
                RSocket::left(s);
            }
        } else {
            let mut g = s.lock();
            s.show(&mut g);
        }
    }
}

/// The sockets waiting for a hand-off (the list is emptied).
pub fn take_handoffs() -> Vec<Shared<RSocket>> {
    std::mem::take(&mut *HANDOFF.lock().unwrap_or_else(|e| e.into_inner()))
}

/// The calling thread is about to sleep in a poller (`repoll_wait`): hand
/// every socket whose application has left its calls to the engine now,
/// rather than a tick later, so that what arrives meanwhile shows on the
/// descriptors at once. Sockets another thread is inside a call on stay in
/// the list (that thread shows their state on its way out).
pub fn hand_over_now() {
    let mut list = take_handoffs();
    {
        // Steady sockets too (if memory allows; else their timers still
        // bring them back).
        let mut st = STEADY.lock().unwrap_or_else(|e| e.into_inner());
        if !st.is_empty() && list.try_reserve(st.len()).is_ok() {
            for s in st.drain(..) {
                s.unsteady();
                list.push(s);
            }
        }
    }
    if list.is_empty() {
        return;
    }
    list.retain(|s| {
        s.exits_seen.store(Calls::exits(s.calls.load()), Ordering::SeqCst);
        match RSocket::handoff(s) {
            Handoff::Done => {
                s.look_at.store(0, Ordering::SeqCst);
                s.patience.store(1, Ordering::SeqCst);
                false
            }
            Handoff::Back => true,
            Handoff::BackListed => false,
        }
    });
    return_handoffs(list);
}

/// A steady socket's timer expired (the engine's token `TIMER_TOKEN | fd`):
/// its application stopped calling in, or slowed down, or is inside a long
/// call. In the last case the socket stays steady, its timer unarmed: the
/// way out of that call pushes it (every call's does, until they come
/// often enough again: `push_timer`), and there is nothing to hand over
/// before. If no call finished since the last push, the application has
/// stayed away for the timer's whole expiry: the socket is handed over now.
/// Otherwise it goes back to the hand-off list; true if one did (look at
/// the list now). An expiry of a timer whose socket already left `STEADY`
/// is ignored.
pub fn timer_expired(fd: i32) -> bool {
    let mut st = STEADY.lock().unwrap_or_else(|e| e.into_inner());
    let Some(i) = st.iter().position(|s| s.timer.is(fd)) else {
        return false;
    };
    // Once out of the call, calls push twice as often as before (this
    // expiry says they came too rarely, unless the call was just long).
    // Then the mask, then the look (both SeqCst, as the way out's count and
    // its load of the mask): either this sees the last thread's exit, or
    // that exit sees the mask and pushes.
    let mask = st[i].rearm_mask.load(Ordering::SeqCst);
    if mask != NOT_STEADY {
        st[i].resume_mask.store(mask >> 1, Ordering::SeqCst);
    }
    st[i].rearm_mask.store(0, Ordering::SeqCst);
    let w = st[i].calls.load();
    if Calls::active(w) > 0 {
        return false;
    }
    if Calls::exits(w) == st[i].pushed_exits.load(Ordering::SeqCst) {
        // Away since the last push: hand over (`handoff` decides again,
        // in one step with the call word, whether the application is
        // still away).
        let s = st.swap_remove(i);
        drop(st);
        s.unsteady();
        s.exits_seen.store(Calls::exits(w), Ordering::SeqCst);
        return match RSocket::handoff(&s) {
            Handoff::Done => false,
            Handoff::BackListed => true,
            Handoff::Back => {
                relist(s);
                true
            }
        };
    }
    let mut h = HANDOFF.lock().unwrap_or_else(|e| e.into_inner());
    if h.try_reserve(1).is_err() {
        // No memory for the list: steady a while longer, the calls pushing
        // at their earlier rate (unless an exit already set one).
        if mask != NOT_STEADY {
            let _ = st[i].rearm_mask.compare_exchange(0, mask, Ordering::SeqCst, Ordering::SeqCst);
        }
        st[i].timer.arm_once(HANDOFF_TICK_MS as u32 * 1000);
        return false;
    }
    let s = st.swap_remove(i);
    drop(st);
    s.unsteady();
    h.push(s);
    true
}

/// Put a socket whose application came back (it is `PENDING`, in no list)
/// in the hand-off list; if there is no memory for that, hand it over now
/// as `return_handoffs` does.
fn relist(s: Shared<RSocket>) {
    let mut h = HANDOFF.lock().unwrap_or_else(|e| e.into_inner());
    if h.try_reserve(1).is_ok() {
        h.push(s);
        return;
    }
    drop(h);
    s.exits_seen.store(Calls::exits(s.calls.load()), Ordering::SeqCst);
    RSocket::handoff(&s);
    s.look_at.store(0, Ordering::SeqCst);
}

/// Whether sockets wait for a hand-off.
pub fn handoffs_waiting() -> bool {
    !HANDOFF.lock().unwrap_or_else(|e| e.into_inner()).is_empty()
}

/// Put back the sockets to look at later (`keep`) and give the list's
/// memory back: whether the list is not empty, and whether sockets joined
/// it meanwhile.
pub fn return_handoffs(mut keep: Vec<Shared<RSocket>>) -> (bool, bool) {
    let mut h = HANDOFF.lock().unwrap_or_else(|e| e.into_inner());
    let arrived = !h.is_empty();
    if h.is_empty() {
        std::mem::swap(&mut *h, &mut keep);
    } else if h.try_reserve(keep.len()).is_ok() {
        h.append(&mut keep);
    } else {
        // No memory: those sockets are handed over now instead.
        drop(h);
        for s in keep {
            s.exits_seen.store(Calls::exits(s.calls.load()), Ordering::SeqCst);
            RSocket::handoff(&s);
            s.look_at.store(0, Ordering::SeqCst);
        }
        h = HANDOFF.lock().unwrap_or_else(|e| e.into_inner());
    }
    (!h.is_empty(), arrived)
}

/// What the descriptor should report for this state (upstream's rpoll
/// rules: a connection error and an error are readable and writable; a
/// disconnected socket is readable, and hung up once its data is read).
#[inline]
pub fn readiness(g: &Inner) -> Ready {
    if g.phase == Phase::Connected {
        if let Some(c) = g.conn.as_ref() {
            return Ready { readable: !g.rd || c.has_data(), writable: g.wr && c.can_send(), hup: false };
        }
    }
    readiness_other(g)
}

#[inline(never)]
fn readiness_other(g: &Inner) -> Ready {
    match g.phase {
        Phase::Listening => Ready { readable: !g.accepted.is_empty(), writable: true, hup: false },
        Phase::Connected => {
            let (data, send) = g.conn.as_ref().map_or((false, false), |c| (c.has_data(), c.can_send()));
            Ready { readable: data || !g.rd, writable: g.wr && send, hup: false }
        }
        Phase::Disconnected => {
            // Hung up once nothing is left to read (data that came before
            // the peer's disconnect is read first, as with TCP).
            let data = g.conn.as_ref().is_some_and(|c| c.has_data());
            Ready { readable: true, writable: false, hup: !data }
        }
        Phase::ConnectError | Phase::Error => Ready { readable: true, writable: true, hup: true },
        _ => Ready::default(),
    }
}

/// The live socket behind a descriptor; EBADF for anything else.
pub fn lookup(fd: i32) -> Result<Shared<RSocket>> {
    if fd < 0 {
        return Err(Error::Errno(libc::EBADF));
    }
    SOCKETS.get(fd as usize).ok_or(Error::Errno(libc::EBADF))
}

/// Whether a descriptor is an rsocket.
pub fn is_rsocket(fd: i32) -> bool {
    fd >= 0 && SOCKETS.contains(fd as usize)
}

/// The socket a CM id belongs to.
pub fn by_id(idkey: usize) -> Option<Shared<RSocket>> {
    BY_ID.get(idkey)
}

/// Record a socket under a new id (an accepted connection's).
pub fn register_id(idkey: usize, s: &Shared<RSocket>) -> Result<()> {
    BY_ID.insert(idkey, s.clone())
}

/// Forget a socket's descriptor (rclose): later calls get EBADF.
pub fn forget_fd(fd: i32) -> Option<Shared<RSocket>> {
    SOCKETS.remove(fd as usize)
}

/// Forget a socket's id entry (its id is being destroyed).
pub fn forget_id(idkey: usize) {
    BY_ID.remove(idkey);
}

/// Process the connection's completions and apply what they say to the
/// socket's state; send credits when due. Nothing blocks. Afterwards the
/// send side's state is exact (`sends_idle`).
pub fn progress(g: &mut Inner) {
    progress_with(g, true);
}

/// [`progress`] for the data calls (`rrecv`, `rpoll`): send completions
/// are taken only when they matter (`Conn::poll_lazy`).
pub fn progress_lazy(g: &mut Inner) {
    progress_inline(g);
}

/// [`progress_lazy`] made part of its caller (the receive path).
/// False when nothing completed (nothing changed).
#[inline(always)]
pub fn progress_inline(g: &mut Inner) -> bool {
    progress_with(g, false)
}

/// Whether anything may have changed (false only for the data calls' lazy
/// poll that found nothing).
#[inline(always)]
fn progress_with(g: &mut Inner, exact: bool) -> bool {
    let connected = g.phase == Phase::Connected;
    let Some(c) = g.conn.as_mut() else { return false };
    let p = if exact { c.poll(connected) } else { c.poll_lazy(connected) };
    if !p.polled && !exact {
        // A data call found nothing: nothing changed, and no credit update
        // became due since the last look (every call that consumes data, and
        // every poll that finds completions, looks for one before it lets
        // the lock go; the first one, for the ring's second half, went out
        // when the connection was established: `engine::established`).
        return false;
    }
    apply_polled(g, p, connected);
    true
}

/// Apply what a poll of the connection's CQs found to the socket's state
/// (`connected`: the phase before the poll), then send credits when due.
#[inline(always)]
pub fn apply_polled(g: &mut Inner, p: Polled, connected: bool) {
    if p.news != 0 {
        apply_news(g, p, connected);
    }
    credits(g);
}

/// [`apply_polled`]'s state changes (rare: kept out of the data calls).
#[inline(never)]
fn apply_news(g: &mut Inner, p: Polled, connected: bool) {
    if p.has(Polled::VIOLATION) {
        // A peer that breaks the protocol: reset the connection.
        g.phase = Phase::Error;
        g.err = libc::ECONNRESET;
        g.rd = false;
        g.wr = false;
        if let Some(c) = g.conn.as_mut() {
            c.to_error();
        }
        return;
    }
    if connected {
        if p.has(Polled::SEND_FAILED) {
            g.phase = Phase::Error;
            g.err = libc::EIO;
            g.rd = false;
            g.wr = false;
        } else if p.has(Polled::REPOST_FAILED) {
            g.phase = Phase::Error;
            g.err = p.repost_errno;
            g.rd = false;
            g.wr = false;
        } else if p.has(Polled::PEER_DISCONNECT | Polled::DISCONNECT_SENT) {
            g.phase = Phase::Disconnected;
            g.rd = false;
            g.wr = false;
        } else if p.has(Polled::PEER_SHUTDOWN) {
            if g.wr {
                g.rd = false;
            } else {
                g.phase = Phase::Disconnected;
                g.rd = false;
            }
        }
    }
}

/// Send a credit update if one is due (data was consumed).
#[inline(always)]
pub fn credits(g: &mut Inner) {
    if g.phase == Phase::Connected {
        if let Some(c) = g.conn.as_mut() {
            if let Err(Error::Errno(e)) = c.send_credits() {
                g.phase = Phase::Error;
                g.err = e;
            }
        }
    }
}

/// For the engine (taking over a socket's completions, or woken by one):
/// take what the completion channel holds (`events`), and leave the
/// receive CQ armed
/// (the send CQ too while sending waits for it, or a control message is
/// in flight) so that the engine hears of the next completion; poll
/// whenever something may have completed unheard.
pub fn settle(g: &mut Inner, events: bool) {
    let Some(c) = g.conn.as_mut() else { return };
    // Sends not idle: their completions may wait in the CQ unpolled (the
    // data calls poll it lazily), and the engine decides on them.
    let mut poll = (events && c.drain_events()) || !c.sends_idle();
    for _ in 0..3 {
        if poll {
            progress(g);
        }
        let closing = g.closing;
        let Some(c) = g.conn.as_mut() else { return };
        poll = c.arm(closing || c.needs_send_events());
        if !poll {
            break;
        }
    }
}

/// Before a thread sleeps on the connection's completion channel: the
/// channel's descriptor, with the CQs armed (the send CQ too if `send`)
/// and what completed before the arming taken (`moved`: something did,
/// look again before sleeping). None when there is no live connection.
pub fn arm_for_wait(g: &mut Inner, send: bool) -> Option<(i32, bool)> {
    if g.phase != Phase::Connected && !g.closing {
        return None;
    }
    let c = g.conn.as_mut()?;
    if c.event_unread {
        // The event a sleeper woke for (see `api::sleep`).
        c.drain_events();
    }
    let before = c.epoch;
    let fd = c.comp_fd;
    let send = send || c.needs_send_events();
    if c.arm(send) {
        progress(g);
    }
    let moved = g.conn.as_ref().is_none_or(|c| c.epoch != before);
    Some((fd, moved))
}
