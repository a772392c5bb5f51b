//! Which C handles are alive: event channels, ids and events.
//!
//! Upstream trusts every pointer it is given; a stale or foreign one crashes
//! the process. Here every `rdma_event_channel *`, `rdma_cm_id *` and
//! `rdma_cm_event *` the library hands out is recorded, and a pointer that
//! is not (NULL, already destroyed, never ours) is answered with EINVAL.
//! The kernel handle → id map serves events that arrive without a uid.

use super::id::IdPriv;
use crate::abi::{rdma_cm_event, rdma_cm_id, rdma_event_channel};
use crate::error::{Error, Result};
use std::collections;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Mutex, MutexGuard};

/// Keys here are addresses and kernel handles the library made itself, not
/// attacker-chosen data: a multiplicative hash is enough, and SipHash (the
/// std default) cost more than the rest of `rdma_create_id`.
#[derive(Default)]
pub struct WordHasher(u64);

impl Hasher for WordHasher {
    fn finish(&self) -> u64 {
        // Fold the well-mixed high half into the low bits (bucket index);
        // keep the high bits too (hashbrown's control bytes).
        self.0 ^ (self.0 >> 29)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(self.0.rotate_left(8) ^ b as u64);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(n as u64);
    }
}

type HashSet<K> = collections::HashSet<K, BuildHasherDefault<WordHasher>>;

#[derive(Default)]
pub struct Registry {
    /// live channels (each counts its ids itself, under this lock).
    channels: HashSet<usize>,
    /// live ids.
    ids: HashSet<usize>,
    /// events handed to the user and not yet acked.
    events: HashSet<usize>,
}

/// An event channel as the library allocates it: the public struct first,
/// then the number of ids on it (read and written under the registry lock).
#[repr(C)]
pub struct ChannelPriv {
    pub ch: rdma_event_channel,
    ids: std::cell::Cell<usize>,
}

impl ChannelPriv {
    pub fn new(fd: i32) -> Self {
        ChannelPriv { ch: rdma_event_channel { fd }, ids: std::cell::Cell::new(0) }
    }
}

impl Registry {
    /// The id count of `ch` if it is a live channel (under the lock).
    fn ids_on(&self, ch: *mut rdma_event_channel) -> Option<&std::cell::Cell<usize>> {
        // SAFETY: live channels are ChannelPriv allocations (see id.rs),
        // freed only after remove_channel took them out of the set.
        self.channels.contains(&(ch as usize)).then(|| unsafe { &(*(ch as *const ChannelPriv)).ids })
    }

    /// One id more (+1) or less (-1) on `ch`, if it is live.
    fn count(&self, ch: *mut rdma_event_channel, delta: isize) {
        if let Some(n) = self.ids_on(ch) {
            n.set(n.get().saturating_add_signed(delta));
        }
    }
}

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

fn reg() -> MutexGuard<'static, Option<Registry>> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

fn with<R>(f: impl FnOnce(&mut Registry) -> R) -> R {
    let mut g = reg();
    f(g.get_or_insert_with(Registry::default))
}

pub fn add_channel(ch: *mut rdma_event_channel) {
    with(|r| r.channels.insert(ch as usize));
}

/// Forget a channel; EBUSY while ids still live on it, EINVAL if unknown.
pub fn remove_channel(ch: *mut rdma_event_channel) -> Result<()> {
    with(|r| match r.ids_on(ch).map(|n| n.get()) {
        None => Err(Error::Errno(libc::EINVAL)),
        Some(n) if n > 0 => Err(Error::Errno(libc::EBUSY)),
        Some(_) => {
            r.channels.remove(&(ch as usize));
            Ok(())
        }
    })
}

/// The fd of a live channel.
pub fn channel_fd(ch: *mut rdma_event_channel) -> Result<i32> {
    if ch.is_null() || !with(|r| r.channels.contains(&(ch as usize))) {
        return Err(Error::Errno(libc::EINVAL));
    }
    // SAFETY: a live channel made by this library.
    Ok(unsafe { (*ch).fd })
}

/// Record a new id on its channel; EINVAL (nothing recorded) if the
/// channel is not live.
pub fn add_id(p: *mut IdPriv, ch: *mut rdma_event_channel) -> Result<()> {
    with(|r| {
        if ch.is_null() || r.ids_on(ch).is_none() {
            return Err(Error::Errno(libc::EINVAL));
        }
        r.ids.insert(p as usize);
        r.count(ch, 1);
        Ok(())
    })
}

pub fn remove_id(p: *mut IdPriv, ch: *mut rdma_event_channel) {
    with(|r| {
        r.ids.remove(&(p as usize));
        r.count(ch, -1);
    });
}

/// An id moves from one channel to another (`rdma_migrate_id`).
pub fn move_id(from: *mut rdma_event_channel, to: *mut rdma_event_channel) {
    with(|r| {
        r.count(from, -1);
        r.count(to, 1);
    });
}

/// The private part of a live id.
pub fn id_priv(id: *mut rdma_cm_id) -> Result<&'static IdPriv> {
    let p = id as *mut IdPriv;
    if id.is_null() || !with(|r| r.ids.contains(&(p as usize))) {
        return Err(Error::Errno(libc::EINVAL));
    }
    // SAFETY: a live id; rdma_cm_id is the first field of IdPriv.
    Ok(unsafe { &*p })
}

/// The id owning a kernel handle (events without a uid only: a scan).
pub fn lookup_handle(handle: u32) -> Option<*mut IdPriv> {
    // SAFETY: every recorded id is live while the lock is held.
    with(|r| r.ids.iter().map(|&p| p as *mut IdPriv).find(|&p| unsafe { (*p).handle() } == handle))
}

/// If `uid` (as the kernel echoes it) is a live id, record `e` as a live
/// event of it in the same step; false (nothing recorded) otherwise.
pub fn live_id_add_event(uid: u64, e: *mut rdma_cm_event) -> bool {
    with(|r| r.ids.contains(&(uid as usize)) && r.events.insert(e as usize))
}

pub fn add_event(e: *mut rdma_cm_event) {
    with(|r| r.events.insert(e as usize));
}

/// Take an event out of the live set; false if it was not live.
pub fn take_event(e: *mut rdma_cm_event) -> bool {
    with(|r| r.events.remove(&(e as usize)))
}

static MCS: Mutex<Option<HashSet<usize>>> = Mutex::new(None);

fn mcs<R>(f: impl FnOnce(&mut HashSet<usize>) -> R) -> R {
    let mut g = MCS.lock().unwrap_or_else(|e| e.into_inner());
    f(g.get_or_insert_with(HashSet::default))
}

pub fn add_mc(mc: *mut super::mcast::McPriv) {
    mcs(|s| s.insert(mc as usize));
}

pub fn remove_mc(mc: *mut super::mcast::McPriv) {
    mcs(|s| s.remove(&(mc as usize)));
}

/// Is this uid (as the kernel echoes it for multicast events) a live
/// membership record?
pub fn live_mc(uid: u64) -> Option<*mut super::mcast::McPriv> {
    mcs(|s| s.contains(&(uid as usize))).then_some(uid as *mut super::mcast::McPriv)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_hasher_spreads_aligned_addresses() {
        // 16-byte aligned pointers must not share their low bits' buckets.
        let mut lows = std::collections::HashSet::new();
        for i in 0..64u64 {
            let mut h = WordHasher::default();
            h.write_usize((0x5555_0000_0000 + i * 16) as usize);
            lows.insert(h.finish() & 63);
        }
        assert!(lows.len() > 32, "only {} distinct low-bit buckets", lows.len());
    }
}
