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

type HashMap<K, V> = collections::HashMap<K, V, BuildHasherDefault<WordHasher>>;
type HashSet<K> = collections::HashSet<K, BuildHasherDefault<WordHasher>>;

#[derive(Default)]
pub struct Registry {
    /// channel → number of ids on it.
    channels: HashMap<usize, usize>,
    /// id → kernel handle.
    ids: HashMap<usize, u32>,
    /// kernel handle → id.
    handles: HashMap<u32, usize>,
    /// events handed to the user and not yet acked.
    events: HashSet<usize>,
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
    with(|r| r.channels.insert(ch as usize, 0));
}

/// Forget a channel; EBUSY while ids still live on it, EINVAL if unknown.
pub fn remove_channel(ch: *mut rdma_event_channel) -> Result<()> {
    with(|r| match r.channels.get(&(ch as usize)) {
        None => Err(Error::Errno(libc::EINVAL)),
        Some(&n) if n > 0 => Err(Error::Errno(libc::EBUSY)),
        Some(_) => {
            r.channels.remove(&(ch as usize));
            Ok(())
        }
    })
}

/// The fd of a live channel.
pub fn channel_fd(ch: *mut rdma_event_channel) -> Result<i32> {
    if ch.is_null() || !with(|r| r.channels.contains_key(&(ch as usize))) {
        return Err(Error::Errno(libc::EINVAL));
    }
    // SAFETY: a live channel made by this library.
    Ok(unsafe { (*ch).fd })
}

/// Record a new id with its kernel handle, on its channel.
pub fn add_id(p: *mut IdPriv, handle: u32, ch: *mut rdma_event_channel) {
    with(|r| {
        r.ids.insert(p as usize, handle);
        r.handles.insert(handle, p as usize);
        *r.channels.entry(ch as usize).or_insert(0) += 1;
    });
}

pub fn remove_id(p: *mut IdPriv, ch: *mut rdma_event_channel) {
    with(|r| {
        if let Some(h) = r.ids.remove(&(p as usize)) {
            if r.handles.get(&h) == Some(&(p as usize)) {
                r.handles.remove(&h);
            }
        }
        if let Some(n) = r.channels.get_mut(&(ch as usize)) {
            *n = n.saturating_sub(1);
        }
    });
}

/// An id moves from one channel to another (`rdma_migrate_id`).
pub fn move_id(from: *mut rdma_event_channel, to: *mut rdma_event_channel) {
    with(|r| {
        if let Some(n) = r.channels.get_mut(&(from as usize)) {
            *n = n.saturating_sub(1);
        }
        *r.channels.entry(to as usize).or_insert(0) += 1;
    });
}

/// The private part of a live id.
pub fn id_priv(id: *mut rdma_cm_id) -> Result<&'static IdPriv> {
    let p = id as *mut IdPriv;
    if id.is_null() || !with(|r| r.ids.contains_key(&(p as usize))) {
        return Err(Error::Errno(libc::EINVAL));
    }
    // SAFETY: a live id; rdma_cm_id is the first field of IdPriv.
    Ok(unsafe { &*p })
}

/// Is this uid (as the kernel echoes it) a live id?
pub fn live_id(uid: u64) -> Option<*mut IdPriv> {
    with(|r| r.ids.contains_key(&(uid as usize))).then_some(uid as *mut IdPriv)
}

/// The id owning a kernel handle.
pub fn lookup_handle(handle: u32) -> Option<*mut IdPriv> {
    with(|r| r.handles.get(&handle).map(|&p| p as *mut IdPriv))
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
