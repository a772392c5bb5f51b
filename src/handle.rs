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

/// A shard's entries, and how many inserts it keeps room for
/// ([`Table::reserve`]): the map can always take `reserved` more entries
/// without growing, because every other insert first makes room for one
/// more than that.
struct Slots<V> {
    map: Map<V>,
    reserved: usize,
}

/// One shard on its own cache line.
#[repr(align(64))]
struct Shard<V>(Mutex<Slots<V>>);

/// Live handles of one kind: key (the handle's address or number) → owner.
pub struct Table<V> {
    shards: [Shard<V>; SHARDS],
}

/// Room kept in a table for one entry of a key known in advance, taken
/// before work whose result must then be recorded without failing (an event
/// read from the kernel cannot be put back). Used by [`insert`](Self::insert);
/// dropped unused, it gives the room back.
pub struct Reservation<'a, V> {
    table: &'a Table<V>,
    key: usize,
    used: bool,
}

impl<V> Reservation<'_, V> {
    /// The reserved key.
    pub fn key(&self) -> usize {
        self.key
    }

    /// Record `value` under the reserved key; cannot fail (the shard has
    /// the room).
    pub fn insert(mut self, value: V) {
        let mut s = self.table.shard(self.key);
        s.reserved -= 1;
        self.used = true;
        // Never grows: growth room for `reserved + 1` entries was kept.
        s.map.insert(self.key, value);
    }
}

impl<V> Drop for Reservation<'_, V> {
    fn drop(&mut self) {
        if !self.used {
            self.table.shard(self.key).reserved -= 1;
        }
    }
}

impl<V> Table<V> {
    pub const fn new() -> Self {
        Table {
            shards: [const { Shard(Mutex::new(Slots { map: HashMap::with_hasher(BuildHasherDefault::new()), reserved: 0 })) };
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
        let room = s.reserved + 1;
        if s.map.try_reserve(room).is_err() {
            return Err(value);
        }
        s.map.insert(key, value);
        Ok(())
    }

    /// Keep room for one entry of `key` (ENOMEM if the shard cannot grow
    /// now); the entry is recorded later with [`Reservation::insert`],
    /// which cannot fail.
    pub fn reserve(&self, key: usize) -> Result<Reservation<'_, V>> {
        let mut s = self.shard(key);
        let room = s.reserved + 1;
        s.map.try_reserve(room).map_err(|_| Error::NOMEM)?;
        s.reserved = room;
        Ok(Reservation { table: self, key, used: false })
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
    fn reserved_room_is_kept_from_other_inserts() {
        let t: Table<u32> = Table::new();
        let key = 0x7e00_0000_0000usize;
        let r = t.reserve(key).unwrap();
        // Fill the same shard well past its capacity at reservation time.
        let shard_of = |k: usize| &*t.shard(k) as *const Slots<u32> as usize;
        let home = shard_of(key);
        let same: Vec<usize> = (1..20_000usize).map(|i| key + i * 16).filter(|&k| shard_of(k) == home).collect();
        assert!(same.len() > 100);
        for &k in &same {
            t.insert(k, 1).unwrap();
            let s = t.shard(key);
            assert!(s.map.capacity() - s.map.len() >= s.reserved, "reserved room eaten");
        }
        r.insert(7);
        assert_eq!(t.get(key), Some(7));
        assert_eq!(t.shard(key).reserved, 0);
        // Dropped unused: the room is given back.
        drop(t.reserve(key + 8).unwrap());
        assert_eq!(t.shard(key + 8).reserved, 0);
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
