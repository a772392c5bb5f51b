//! What each of the application's descriptors is to the preload.
//!
//! An intercepted socket is an rsocket of librdmacm, whose own descriptor
//! `r` already reports the socket's readiness to any poller. The
//! application gets a duplicate `d` of it (same open file), so that
//! `poll`, `epoll` and `select` work on `d` even where the preload does not
//! interpose them, while `r` stays private to librdmacm: when a connect
//! falls back to TCP, the TCP socket replaces `d` atomically (`dup3`) and
//! the rsocket goes, without a moment where `d`'s number is free for
//! another thread to take. Several descriptors (`dup`, `dup2`) may share
//! one rsocket: it is closed when the last one is.
//!
//! Two lock-free tables of 2^20 slots (chunks of 1024 allocated on first
//! use), indexed by descriptor: `KIND` for the application's descriptors,
//! `REFS` counting the application's descriptors of each rsocket.
//!
//! In fork mode (`RDMAV_FORK_SAFE`, see `Fork`) a third table, `FORK`,
//! says where each of the application's TCP sockets stands on its way to
//! becoming an rsocket.

use std::sync::atomic::{AtomicI32, AtomicPtr, Ordering};

const CHUNK: usize = 1024;
const CHUNKS: usize = 1024;
/// Descriptors at or above this are never intercepted.
pub const LIMIT: i32 = (CHUNK * CHUNKS) as i32;

struct Chunk([AtomicI32; CHUNK]);

struct Slots([AtomicPtr<Chunk>; CHUNKS]);

impl Slots {
    const fn new() -> Slots {
        Slots([const { AtomicPtr::new(std::ptr::null_mut()) }; CHUNKS])
    }

    /// The slot of `i`, allocating its chunk if `grow` (None: out of range,
    /// not allocated, or no memory).
    fn slot(&self, i: i32, grow: bool) -> Option<&AtomicI32> {
        if !(0..LIMIT).contains(&i) {
            return None;
        }
        let (c, o) = (i as usize / CHUNK, i as usize % CHUNK);
        let mut p = self.0[c].load(Ordering::Acquire);
        if p.is_null() {
            if !grow {
                return None;
            }
            // SAFETY: calloc; zeroed AtomicI32s are valid (0: nothing).
            let n = unsafe { libc::calloc(1, std::mem::size_of::<Chunk>()) } as *mut Chunk;
            if n.is_null() {
                return None;
            }
            p = match self.0[c].compare_exchange(std::ptr::null_mut(), n, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => n,
                Err(other) => {
                    // SAFETY: ours, never published.
                    unsafe { libc::free(n as *mut libc::c_void) };
                    other
                }
            };
        }
        // SAFETY: chunks are never freed.
        Some(unsafe { &(*p).0[o] })
    }

    fn get(&self, i: i32) -> i32 {
        self.slot(i, false).map_or(0, |s| s.load(Ordering::Acquire))
    }

    /// Every index whose slot holds `v` (allocated chunks only).
    fn each_with(&self, v: i32, mut f: impl FnMut(i32)) {
        for (c, p) in self.0.iter().enumerate() {
            let p = p.load(Ordering::Acquire);
            if p.is_null() {
                continue;
            }
            // SAFETY: chunks are never freed.
            for (o, slot) in unsafe { &(*p).0 }.iter().enumerate() {
                if slot.load(Ordering::Acquire) == v {
                    f((c * CHUNK + o) as i32);
                }
            }
        }
    }
}

/// Slot values of `KIND`: 0 nothing of ours, -1 a repoll instance, r + 1
/// an rsocket whose librdmacm descriptor is r.
static KIND: Slots = Slots::new();
static REFS: Slots = Slots::new();
/// The socket type (SOCK_STREAM, SOCK_DGRAM) of each rsocket, by its
/// librdmacm descriptor.
static TYPES: Slots = Slots::new();
const REPOLL: i32 = -1;

/// What an application descriptor is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Other,
    /// An rsocket: librdmacm's descriptor for it.
    Rsocket(i32),
    Repoll,
}

pub fn kind(fd: i32) -> Kind {
    match KIND.get(fd) {
        0 => Kind::Other,
        REPOLL => Kind::Repoll,
        v => Kind::Rsocket(v - 1),
    }
}

/// The rsocket behind `fd`, if it is one.
pub fn rsocket(fd: i32) -> Option<i32> {
    match kind(fd) {
        Kind::Rsocket(r) => Some(r),
        _ => None,
    }
}

/// Record `fd` as one more descriptor of rsocket `r`; false when `fd` is
/// out of range or there is no memory (nothing recorded).
pub fn add_rsocket(fd: i32, r: i32) -> bool {
    let (Some(k), Some(n)) = (KIND.slot(fd, true), REFS.slot(r, true)) else { return false };
    n.fetch_add(1, Ordering::AcqRel);
    k.store(r + 1, Ordering::Release);
    true
}

/// Remember rsocket `r`'s type; false without memory.
pub fn set_type(r: i32, ty: i32) -> bool {
    match TYPES.slot(r, true) {
        Some(t) => {
            t.store(ty, Ordering::Release);
            true
        }
        None => false,
    }
}

/// Rsocket `r`'s type (0: unknown).
pub fn type_of(r: i32) -> i32 {
    TYPES.get(r)
}

/// Record `fd` as a repoll instance.
pub fn add_repoll(fd: i32) -> bool {
    match KIND.slot(fd, true) {
        Some(k) => {
            k.store(REPOLL, Ordering::Release);
            true
        }
        None => false,
    }
}

/// What `fd` was, now forgotten. For an rsocket also whether `fd` was its
/// last descriptor (then the caller closes the rsocket).
pub fn forget(fd: i32) -> (Kind, bool) {
    let Some(k) = KIND.slot(fd, false) else { return (Kind::Other, false) };
    let v = k.swap(0, Ordering::AcqRel);
    match v {
        0 => (Kind::Other, false),
        REPOLL => (Kind::Repoll, false),
        v => {
            let r = v - 1;
            let last = REFS.slot(r, false).is_none_or(|n| n.fetch_sub(1, Ordering::AcqRel) <= 1);
            (Kind::Rsocket(r), last)
        }
    }
}

/// Every descriptor recorded as a repoll instance.
pub fn each_repoll(f: impl FnMut(i32)) {
    KIND.each_with(REPOLL, f)
}

/// Whether any of `fds` is an rsocket.
pub fn any_rsocket(fds: impl IntoIterator<Item = i32>) -> bool {
    fds.into_iter().any(|fd| rsocket(fd).is_some())
}

/// Fork mode: where one of the application's TCP sockets stands. Such a
/// socket starts as real TCP and becomes an rsocket only after the
/// program had its chance to fork: at the first data call after
/// `connect` (active side) or `accept` (passive side). The transitions
/// are `next`'s; a slot changes only by compare-and-swap, so exactly one
/// thread moves a socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fork {
    /// Not a fork-mode socket (or no longer: moved, or kept as TCP).
    None,
    /// Created, neither connected nor listening yet.
    Fresh,
    /// A TCP listener: what it accepts is `Passive`.
    Listen,
    /// Connected (or connecting): moves at its first data call.
    Active,
    /// Accepted: moves at its first data call.
    Passive,
    /// A thread is moving it now; others wait for the outcome.
    Moving,
}

/// What happens to a fork-mode socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForkEvent {
    /// `listen` succeeded.
    Listened,
    /// `connect` succeeded or is in progress.
    Connected,
    /// A thread takes the socket to move it.
    Claim,
    /// The move ended (an rsocket now, or TCP kept for good).
    Settled,
}

/// The state after `ev`, None when `ev` does not apply to `s` (nothing
/// changes then).
pub const fn next(s: Fork, ev: ForkEvent) -> Option<Fork> {
    match (s, ev) {
        (Fork::Fresh, ForkEvent::Listened) => Some(Fork::Listen),
        (Fork::Fresh, ForkEvent::Connected) => Some(Fork::Active),
        (Fork::Active | Fork::Passive, ForkEvent::Claim) => Some(Fork::Moving),
        (Fork::Moving, ForkEvent::Settled) => Some(Fork::None),
        _ => None,
    }
}

/// Fork states by application descriptor: the state in the low byte,
/// `EPOLLED` above it.
static FORK: Slots = Slots::new();
/// The socket was registered in an epoll instance while it was TCP (its
/// registrations move with it).
const EPOLLED: i32 = 0x100;

const fn encode(s: Fork) -> i32 {
    match s {
        Fork::None => 0,
        Fork::Fresh => 1,
        Fork::Listen => 2,
        Fork::Active => 3,
        Fork::Passive => 4,
        Fork::Moving => 5,
    }
}

const fn decode(v: i32) -> Fork {
    match v & 0xff {
        1 => Fork::Fresh,
        2 => Fork::Listen,
        3 => Fork::Active,
        4 => Fork::Passive,
        5 => Fork::Moving,
        _ => Fork::None,
    }
}

/// `fd`'s fork state.
pub fn fork_state(fd: i32) -> Fork {
    decode(FORK.get(fd))
}

/// Whether `fd` was registered in an epoll instance while it was TCP.
pub fn fork_epolled(fd: i32) -> bool {
    FORK.get(fd) & EPOLLED != 0
}

/// Give a new descriptor its fork state (`Fork::None` clears it); false
/// when `fd` is out of range or there is no memory (nothing recorded).
pub fn fork_set(fd: i32, s: Fork) -> bool {
    if s == Fork::None {
        if let Some(k) = FORK.slot(fd, false) {
            k.store(0, Ordering::Release);
        }
        return true;
    }
    match FORK.slot(fd, true) {
        Some(k) => {
            k.store(encode(s), Ordering::Release);
            true
        }
        None => false,
    }
}

/// Apply `ev` to `fd`'s state; the state before it when it applied.
pub fn fork_advance(fd: i32, ev: ForkEvent) -> Option<Fork> {
    let k = FORK.slot(fd, false)?;
    let mut cur = k.load(Ordering::Acquire);
    loop {
        let s = decode(cur);
        let n = next(s, ev)?;
        // The EPOLLED mark stays until the socket settles.
        let v = if n == Fork::None { 0 } else { encode(n) | (cur & EPOLLED) };
        match k.compare_exchange(cur, v, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return Some(s),
            Err(now) => cur = now,
        }
    }
}

/// Note that `fd` (a fork-mode TCP socket) joined an epoll instance.
pub fn fork_mark_epolled(fd: i32) {
    if let Some(k) = FORK.slot(fd, false) {
        let _ =
            k.fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| (decode(v) != Fork::None).then_some(v | EPOLLED));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_share_an_rsocket_until_the_last_goes() {
        assert_eq!(kind(5000), Kind::Other);
        assert!(add_rsocket(5000, 7000));
        assert!(add_rsocket(5001, 7000));
        assert_eq!(kind(5000), Kind::Rsocket(7000));
        assert_eq!(rsocket(5001), Some(7000));
        assert_eq!(forget(5000), (Kind::Rsocket(7000), false));
        assert_eq!(kind(5000), Kind::Other);
        assert_eq!(forget(5001), (Kind::Rsocket(7000), true));
        assert_eq!(forget(5001), (Kind::Other, false));
        assert!(add_repoll(900_000));
        assert_eq!(kind(900_000), Kind::Repoll);
        assert_eq!(forget(900_000), (Kind::Repoll, false));
        assert!(!add_rsocket(LIMIT, 1));
        assert!(!add_rsocket(-1, 1));
        assert_eq!(kind(-5), Kind::Other);
        assert_eq!(kind(LIMIT + 10), Kind::Other);
        assert!(any_rsocket([1, 2]).eq(&false));
        assert!(set_type(7000, libc::SOCK_STREAM));
        assert_eq!(type_of(7000), libc::SOCK_STREAM);
        assert_eq!(type_of(7001), 0);
    }

    #[test]
    fn fork_states_follow_the_socket() {
        use Fork::*;
        use ForkEvent::*;
        // The table of transitions.
        assert_eq!(next(Fresh, Listened), Some(Listen));
        assert_eq!(next(Fresh, Connected), Some(Active));
        assert_eq!(next(Active, Claim), Some(Moving));
        assert_eq!(next(Passive, Claim), Some(Moving));
        assert_eq!(next(Moving, Settled), Some(None));
        for s in [None, Fresh, Listen, Active, Passive, Moving] {
            for ev in [Listened, Connected, Claim, Settled] {
                let allowed = matches!(
                    (s, ev),
                    (Fresh, Listened) | (Fresh, Connected) | (Active, Claim) | (Passive, Claim) | (Moving, Settled)
                );
                assert_eq!(next(s, ev).is_some(), allowed, "{s:?} {ev:?}");
            }
            assert_eq!(decode(encode(s)), s);
        }
        // A client: created, connected, claimed once, settled.
        let fd = 6000;
        assert_eq!(fork_state(fd), None);
        assert_eq!(fork_advance(fd, Connected), Option::None, "no state: nothing applies");
        assert!(fork_set(fd, Fresh));
        assert_eq!(fork_advance(fd, Claim), Option::None, "not connected yet");
        assert_eq!(fork_advance(fd, Connected), Some(Fresh));
        assert_eq!(fork_state(fd), Active);
        fork_mark_epolled(fd);
        assert!(fork_epolled(fd));
        assert_eq!(fork_advance(fd, Claim), Some(Active));
        assert_eq!(fork_state(fd), Moving);
        assert!(fork_epolled(fd), "the mark stays while moving");
        assert_eq!(fork_advance(fd, Claim), Option::None, "a second thread cannot claim it");
        assert_eq!(fork_advance(fd, Settled), Some(Moving));
        assert_eq!(fork_state(fd), None);
        assert!(!fork_epolled(fd));
        // A listener and what it accepts.
        assert!(fork_set(fd, Fresh));
        assert_eq!(fork_advance(fd, Listened), Some(Fresh));
        assert_eq!(fork_state(fd), Listen);
        assert_eq!(fork_advance(fd, Claim), Option::None, "a listener never moves");
        assert!(fork_set(fd + 1, Passive));
        assert_eq!(fork_advance(fd + 1, Claim), Some(Passive));
        assert_eq!(fork_advance(fd + 1, Settled), Some(Moving));
        // Closing forgets; a mark on a plain descriptor is not kept.
        assert!(fork_set(fd, None));
        assert_eq!(fork_state(fd), None);
        fork_mark_epolled(fd);
        assert!(!fork_epolled(fd));
        assert!(!fork_set(LIMIT, Fresh));
        assert_eq!(fork_state(-3), None);
    }

    #[test]
    fn repoll_instances_are_found() {
        assert!(add_repoll(700_001));
        assert!(add_repoll(3));
        let mut seen = Vec::new();
        each_repoll(|fd| seen.push(fd));
        assert!(seen.contains(&700_001) && seen.contains(&3));
        forget(700_001);
        forget(3);
        let mut seen = Vec::new();
        each_repoll(|fd| seen.push(fd));
        assert!(!seen.contains(&700_001) && !seen.contains(&3));
    }
}
