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

/// Whether any of `fds` is an rsocket.
pub fn any_rsocket(fds: impl IntoIterator<Item = i32>) -> bool {
    fds.into_iter().any(|fd| rsocket(fd).is_some())
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
}
