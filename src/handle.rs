//! Which C handles are alive: one sharded table per kind of handle.
//!
//! Upstream trusts every pointer it is given, and a stale or foreign one
//! crashes the process. Here each handle the library gives out (an
//! `rdma_event_channel *`, `rdma_cm_id *`, `rdma_cm_event *`, a multicast
//! membership, later an rsocket descriptor) is a key in a [`Table`] whose
//! value owns the object. A call looks its handle up and gets a counted
//! reference (or EINVAL), so it never touches memory the library did not
//! give out or has already freed.
//!
//! A table is split into shards, each behind its own mutex held only for a
//! hash-map operation: calls on different handles almost never meet, and
//! no call holds a shard across anything that can block.

use crate::error::{Error, Result};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Mutex, MutexGuard};

const SHARDS: usize = 16;

/// Keys are addresses and numbers the library or the kernel chose, not
/// attacker-chosen data: a multiplicative hash is enough (SipHash, std's
/// default, cost more than the rest of `rdma_create_id`).
#[derive(Default)]
pub struct WordHasher(u64);

impl Hasher for WordHasher {
    fn finish(&self) -> u64 {
        // Fold the well-mixed high half into the low bits (bucket index);
        // keep the high bits too (the map's control bytes).
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

type Map<V> = HashMap<usize, V, BuildHasherDefault<WordHasher>>;

/// A shard's entries.
struct Slots<V> {
    map: Map<V>,
}

/// One shard on its own cache line.
#[repr(align(64))]
struct Shard<V>(Mutex<Slots<V>>);

/// Live handles of one kind: key (the handle's address or number) → owner.
pub struct Table<V> {
    shards: [Shard<V>; SHARDS],
}

impl<V> Table<V> {
    pub const fn new() -> Self {
        Table {
            shards: [const { Shard(Mutex::new(Slots { map: HashMap::with_hasher(BuildHasherDefault::new()) })) };
                SHARDS],
        }
    }

    fn shard(&self, key: usize) -> MutexGuard<'_, Slots<V>> {
        // Handles are mostly 16-byte aligned heap addresses: mix before
        // taking the top bits.
        let i = (key as u64 ^ (key as u64 >> 17)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 60;
        self.shards[i as usize % SHARDS].0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Record `value` under `key` (replacing nothing: keys are unique
    /// while alive). ENOMEM if the shard cannot grow.
    pub fn insert(&self, key: usize, value: V) -> Result<()> {
        self.try_insert(key, value).map_err(|_| Error::NOMEM)
    }

    /// [`insert`](Self::insert) that hands the value back when the shard
    /// cannot grow.
    pub fn try_insert(&self, key: usize, value: V) -> std::result::Result<(), V> {
        let mut s = self.shard(key);
        if s.map.try_reserve(1).is_err() {
            return Err(value);
        }
        s.map.insert(key, value);
        Ok(())
    }

    /// Run `f` on the entry of `key` (or None) under its shard's lock.
    pub fn with<R>(&self, key: usize, f: impl FnOnce(Option<&V>) -> R) -> R {
        f(self.shard(key).map.get(&key))
    }

    /// Take the entry of `key` out, if `keep` does not veto it (then the
    /// veto's error is returned); EINVAL when there is no such entry.
    pub fn remove_if(&self, key: usize, veto: impl FnOnce(&V) -> Result<()>) -> Result<V> {
        let mut s = self.shard(key);
        let v = s.map.get(&key).ok_or(Error::Errno(libc::EINVAL))?;
        veto(v)?;
        s.map.remove(&key).ok_or(Error::Errno(libc::EINVAL))
    }

    /// Take the entry of `key` out.
    pub fn remove(&self, key: usize) -> Option<V> {
        self.shard(key).map.remove(&key)
    }
}

impl<V: Clone> Table<V> {
    /// A counted reference to the entry of `key`.
    pub fn get(&self, key: usize) -> Option<V> {
        self.shard(key).map.get(&key).cloned()
    }
}

impl<V> Default for Table<V> {
    fn default() -> Self {
        Self::new()
    }
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

    #[test]
    fn table_insert_get_remove() {
        let t: Table<u32> = Table::new();
        for k in (0..1000usize).map(|i| 0x7f00_0000_0000 + i * 16) {
            t.insert(k, k as u32).unwrap();
        }
        assert_eq!(t.get(0x7f00_0000_0000 + 16 * 5), Some((0x7f00_0000_0000usize + 80) as u32));
        assert_eq!(t.get(1), None);
        assert_eq!(t.remove_if(0x7f00_0000_0000, |_| Err(Error::Errno(libc::EBUSY))), Err(Error::Errno(libc::EBUSY)));
        assert!(t.remove_if(0x7f00_0000_0000, |_| Ok(())).is_ok());
        assert_eq!(t.remove_if(0x7f00_0000_0000, |_| Ok(())), Err(Error::Errno(libc::EINVAL)));
        assert!(t.with(0x7f00_0000_0010, |v| v.is_some()));
        assert_eq!(t.remove(0x7f00_0000_0010), Some(0x7f00_0000_0010usize as u32));
        assert_eq!(t.remove(0x7f00_0000_0010), None);
    }

    #[test]
    fn shards_are_used() {
        let t: Table<()> = Table::new();
        let mut used = std::collections::HashSet::new();
        for i in 0..256usize {
            let key = 0x5600_0000_0000 + i * 0x1d0;
            let g = t.shard(key);
            used.insert(&*g as *const _ as usize);
        }
        assert!(used.len() >= SHARDS / 2, "{} shards used", used.len());
    }
}
