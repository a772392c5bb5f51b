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
//!
//! Rsocket descriptors, looked up by every data call, use an [`FdMap`]
//! instead: pages of atomic entries indexed by descriptor, read with no
//! lock, for values that live in a pool (`slab.rs`).

use crate::cmem::Shared;
use crate::error::{Error, Result};
use crate::slab::Slab;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicPtr, Ordering};
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

/// Descriptors below this are found in [`FdMap`]'s pages, with no lock;
/// larger ones (possible with a raised RLIMIT_NOFILE) in a [`Table`].
const FD_DIRECT: usize = FD_PAGE * FD_PAGES;
const FD_PAGE: usize = 1024;
const FD_PAGES: usize = 1024;

/// One page of [`FdMap`] entries: the value's address (a pool slot, owning
/// one count) or null.
struct FdPage<T>([AtomicPtr<T>; FD_PAGE]);

/// Owners of pooled values by descriptor number. A lookup (every rsocket
/// call makes one) takes no lock: it reads the entry's address, counts a
/// reference with [`Shared::upgrade_slot`] (which refuses a value whose
/// count reached 0), and checks that the entry still names that address
/// (then it is the same value: a slot is reused only after its count
/// reached 0, and ours is not). Pages are made on first use and never
/// freed (at most 8 MiB, for descriptors up to a million).
pub struct FdMap<T: 'static> {
    pool: &'static Slab,
    pages: [AtomicPtr<FdPage<T>>; FD_PAGES],
    big: Table<Shared<T>>,
}

impl<T: 'static> FdMap<T> {
    /// A map of values that live in `pool` (made with `Shared::<T>::LAYOUT`
    /// and `Shared::<T>::init_slot`, holding nothing else).
    pub const fn new(pool: &'static Slab) -> Self {
        FdMap { pool, pages: [const { AtomicPtr::new(std::ptr::null_mut()) }; FD_PAGES], big: Table::new() }
    }

    /// The entry of `fd` (which is below FD_DIRECT), if its page exists.
    fn slot(&self, fd: usize) -> Option<&AtomicPtr<T>> {
        let page = self.pages[fd / FD_PAGE].load(Ordering::Acquire);
        // SAFETY: pages are never freed once published.
        (!page.is_null()).then(|| unsafe { &(*page).0[fd % FD_PAGE] })
    }

    /// Record `v` under `fd`; a value already there is dropped. EINVAL for
    /// a value outside the pool, ENOMEM if a page cannot be made.
    pub fn insert(&self, fd: usize, v: Shared<T>) -> Result<()> {
        if !self.pool.contains(Shared::as_ptr(&v) as *const u8) {
            return Err(Error::INVAL);
        }
        if fd >= FD_DIRECT {
            return self.big.insert(fd, v);
        }
        let slot = match self.slot(fd) {
            Some(s) => s,
            None => {
                let layout = std::alloc::Layout::new::<FdPage<T>>();
                // SAFETY: non-zero size; all-zero is a page of null entries.
                let fresh = unsafe { std::alloc::alloc_zeroed(layout) } as *mut FdPage<T>;
                if fresh.is_null() {
                    return Err(Error::NOMEM);
                }
                let top = &self.pages[fd / FD_PAGE];
                if top.compare_exchange(std::ptr::null_mut(), fresh, Ordering::AcqRel, Ordering::Acquire).is_err() {
                    // Another thread made it first.
                    // SAFETY: ours, never published.
                    unsafe { std::alloc::dealloc(fresh as *mut u8, layout) };
                }
                self.slot(fd).ok_or(Error::NOMEM)?
            }
        };
        let old = slot.swap(Shared::into_raw(v) as *mut T, Ordering::AcqRel);
        if !old.is_null() {
            // SAFETY: the entry owned that count.
            drop(unsafe { Shared::from_raw(old) });
        }
        Ok(())
    }

    /// A counted reference to the value of `fd`.
    pub fn get(&self, fd: usize) -> Option<Shared<T>> {
        if fd >= FD_DIRECT {
            std::hint::cold_path();
            return self.big.get(fd);
        }
        let slot = self.slot(fd)?;
        loop {
            let p = slot.load(Ordering::Acquire);
            if p.is_null() {
                return None;
            }
            // SAFETY: every address an entry holds is a slot of our pool
            // (checked by insert), which holds only Shared<T> blocks.
            let v = unsafe { Shared::upgrade_slot(p) };
            if v.is_some() && slot.load(Ordering::Acquire) == p {
                return v;
            }
            // The entry changed meanwhile: look again.
            drop(v);
        }
    }

    /// Whether `fd` has a value.
    pub fn contains(&self, fd: usize) -> bool {
        if fd >= FD_DIRECT {
            return self.big.with(fd, |v| v.is_some());
        }
        self.slot(fd).is_some_and(|s| !s.load(Ordering::Acquire).is_null())
    }

    /// Take the value of `fd` out.
    pub fn remove(&self, fd: usize) -> Option<Shared<T>> {
        if fd >= FD_DIRECT {
            return self.big.remove(fd);
        }
        let p = self.slot(fd)?.swap(std::ptr::null_mut(), Ordering::AcqRel);
        // SAFETY: the entry owned that count.
        (!p.is_null()).then(|| unsafe { Shared::from_raw(p) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicU64};

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

    static VALS: Slab = Slab::new(Shared::<(u64, u64)>::LAYOUT, Shared::<(u64, u64)>::init_slot);

    fn pooled(v: u64) -> Shared<(u64, u64)> {
        // SAFETY: the value is written whole; VALS holds only these.
        unsafe { Shared::try_new_pooled(&VALS, v as usize, |p: *mut (u64, u64)| p.write((v, !v))) }.unwrap()
    }

    #[test]
    fn fd_map_insert_get_remove() {
        static M: FdMap<(u64, u64)> = FdMap::new(&VALS);
        for fd in [0usize, 1, 1023, 1024, 70_000, FD_DIRECT - 1, FD_DIRECT, FD_DIRECT + 5] {
            assert!(M.get(fd).is_none() && !M.contains(fd));
            M.insert(fd, pooled(fd as u64)).unwrap();
            assert!(M.contains(fd));
            assert_eq!(*M.get(fd).unwrap(), (fd as u64, !(fd as u64)));
        }
        // Replacing drops the old value's count.
        let a = pooled(5);
        M.insert(3, a.clone()).unwrap();
        M.insert(3, pooled(6)).unwrap();
        assert_eq!(M.get(3).unwrap().0, 6);
        assert_eq!(M.remove(3).unwrap().0, 6);
        assert!(M.remove(3).is_none() && M.get(3).is_none());
        // A value outside the pool is refused.
        static N: FdMap<(u64, u64)> = FdMap::new(&VALS);
        assert_eq!(N.insert(9, Shared::try_new((1, 2)).unwrap()), Err(Error::INVAL));
        assert!(N.get(9).is_none());
        drop(a);
    }

    #[test]
    fn fd_map_lookups_race_with_replacement() {
        // Readers never see a value that is not the entry's (each value's
        // halves stay complementary), while a writer replaces and removes
        // entries, so that slots are freed and reused under them.
        static M: FdMap<(u64, u64)> = FdMap::new(&VALS);
        // The writer goes on until every reader has made passes while it
        // wrote (a reader scheduled late would otherwise see nothing).
        static STOP: AtomicBool = AtomicBool::new(false);
        static SEEN: AtomicU64 = AtomicU64::new(0);
        static BUSY: AtomicU64 = AtomicU64::new(0);
        const READERS: u64 = 3;
        let readers: Vec<_> = (0..READERS)
            .map(|_| {
                std::thread::spawn(move || {
                    let mut passes = 0u64;
                    while !STOP.load(Ordering::Relaxed) {
                        for fd in 0..8 {
                            if let Some(v) = M.get(fd) {
                                assert_eq!(v.1, !v.0);
                                assert_eq!(v.0 % 8, fd as u64);
                                SEEN.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        passes += 1;
                        if passes == 1000 {
                            BUSY.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        let mut i = 0u64;
        let start = std::time::Instant::now();
        while i < 20_000
            || (BUSY.load(Ordering::Relaxed) < READERS || SEEN.load(Ordering::Relaxed) < 1000)
                && start.elapsed() < std::time::Duration::from_secs(60)
        {
            let fd = (i % 8) as usize;
            if i.is_multiple_of(3) {
                drop(M.remove(fd));
            } else {
                M.insert(fd, pooled(i - i % 8 + fd as u64 + 8)).unwrap();
            }
            i += 1;
        }
        STOP.store(true, Ordering::Relaxed);
        readers.into_iter().for_each(|r| r.join().unwrap());
        assert_eq!(BUSY.load(Ordering::Relaxed), READERS);
        assert!(SEEN.load(Ordering::Relaxed) >= 1000);
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
