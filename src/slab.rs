//! Type-stable memory: pools of fixed-size slots that are never given back
//! to the system (docs/architecture.md, "Pools").
//!
//! A handle C holds (an `rdma_cm_id *`, an `rdma_cm_event *`) must be
//! checked before the library trusts it. With its objects in a [`Slab`],
//! the check needs no table walk and no lock: any address can be tested for
//! being the start of one of the pool's slots ([`Slab::contains`]), and a
//! slot's memory stays readable for the life of the process, so the object's
//! own atomic state (a reference count, a "handed out" flag) says whether it
//! is alive. A slot is reused only after its owner gave it back.
//!
//! Slots are carved from chunks of [`CHUNK`] bytes aligned to their size
//! (mapped directly, so a chunk's untouched pages cost no memory), in
//! order, each prepared by the pool's `init` function the first time it is
//! handed out; only prepared slots count as the pool's. The chunk an
//! address would belong to is found by masking, and looked up in a small
//! insert-only hash set of the pool's chunks. Free slots wait on one of
//! [`HOMES`] free lists, chosen by the caller (a channel's descriptor, say)
//! so that threads working on their own objects rarely share one; each
//! list's vector is kept large enough for every slot of its home, so giving
//! a slot back never allocates and cannot fail.

use crate::error::{Error, Result};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Free lists per pool.
pub const HOMES: usize = 8;
/// Bytes per chunk (and its alignment).
pub const CHUNK: usize = 1 << 18;
/// Entries of a pool's set of chunks (a power of two); at most half are
/// used, so a pool holds at most `SET / 2` chunks (512 MiB).
const SET: usize = 4096;

/// The start of every chunk.
#[repr(C)]
struct Header {
    /// The free list the chunk's slots go back to.
    home: usize,
    /// Bytes of slots prepared (handed out at least once), from the first
    /// slot; advanced under the home's lock after the slot is prepared.
    used: AtomicUsize,
}

struct FreeList {
    free: Vec<NonNull<u8>>,
    /// Slots of this home (prepared or not).
    total: usize,
    /// The home's newest chunk, where unprepared slots are taken from.
    current: Option<NonNull<Header>>,
}

// SAFETY: the pointers are pool memory, used under the list's lock or by
// whoever took a slot.
unsafe impl Send for FreeList {}

#[repr(align(64))]
struct Home(Mutex<FreeList>);

/// A pool of slots of one size (one type per pool: a slot found by
/// [`contains`](Slab::contains) holds what the pool's owner put there).
pub struct Slab {
    /// Slot size (a multiple of the slots' alignment) and the offset of the
    /// first slot in a chunk (also a multiple: chunks are CHUNK-aligned).
    size: usize,
    first: usize,
    /// Prepares a slot the first time it is handed out (so that the
    /// owner's state in it, a count or a flag, reads as "not in use").
    init: unsafe fn(*mut u8),
    /// The pool's chunks by address (0: empty entry), insert-only.
    set: [AtomicUsize; SET],
    /// Chunks in `set`; serialises inserting.
    chunks: Mutex<usize>,
    homes: [Home; HOMES],
}

impl Slab {
    /// A pool of slots for values of `layout` (not zero-sized, at most a
    /// few KiB); `init` prepares a slot (memory of `layout`, uninitialised)
    /// the first time it is handed out.
    pub const fn new(layout: std::alloc::Layout, init: unsafe fn(*mut u8)) -> Slab {
        Slab {
            size: layout.pad_to_align().size(),
            first: std::mem::size_of::<Header>().next_multiple_of(layout.align()),
            init,
            set: [const { AtomicUsize::new(0) }; SET],
            chunks: Mutex::new(0),
            homes: [const { Home(Mutex::new(FreeList { free: Vec::new(), total: 0, current: None })) }; HOMES],
        }
    }

    fn home(&self, h: usize) -> MutexGuard<'_, FreeList> {
        self.homes[h % HOMES].0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn slot_of(chunk: usize) -> usize {
        // Chunks are CHUNK-aligned: mix the bits above.
        ((chunk >> 18) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) as usize >> (usize::BITS - SET.trailing_zeros())
    }

    /// A free slot from free list `h`: prepared by `init` if it was never
    /// used, otherwise as its last user gave it back. ENOMEM if the pool
    /// cannot grow.
    pub fn take(&self, h: usize) -> Result<NonNull<u8>> {
        let mut f = self.home(h);
        if let Some(p) = f.free.pop() {
            return Ok(p);
        }
        if let Some(p) = f.current.and_then(|c| self.fresh(c)) {
            return Ok(p);
        }
        let c = self.grow(&mut f, h % HOMES)?;
        self.fresh(c).ok_or(Error::NOMEM)
    }

    /// The next unprepared slot of chunk `c` (whose home's lock is held),
    /// prepared and counted as the pool's.
    fn fresh(&self, c: NonNull<Header>) -> Option<NonNull<u8>> {
        // SAFETY: a chunk of this pool (its header lives forever).
        let used = unsafe { &(*c.as_ptr()).used };
        let n = used.load(Ordering::Relaxed);
        let at = self.first + n;
        if at + self.size > CHUNK {
            return None;
        }
        // SAFETY: a slot inside the chunk, never handed out; `init`
        // prepares it before the store below makes it the pool's.
        let p = unsafe { (c.as_ptr() as *mut u8).add(at) };
        // SAFETY: memory of the pool's layout, ours.
        unsafe { (self.init)(p) };
        used.store(n + self.size, Ordering::Release);
        NonNull::new(p)
    }

    /// A new chunk for the (empty) free list `f` of home `h`, made its
    /// current chunk.
    fn grow(&self, f: &mut FreeList, h: usize) -> Result<NonNull<Header>> {
        let n = (CHUNK - self.first) / self.size;
        let total = f.total.checked_add(n).ok_or(Error::NOMEM)?;
        // Room for every slot of the home, so that giving back never grows.
        f.free.try_reserve(total).map_err(|_| Error::NOMEM)?;
        let mut k = self.chunks.lock().unwrap_or_else(|e| e.into_inner());
        if *k >= SET / 2 {
            return Err(Error::NOMEM);
        }
        let c = map_chunk()?;
        // SAFETY: a fresh mapping of CHUNK bytes, ours.
        unsafe { (c.as_ptr() as *mut Header).write(Header { home: h, used: AtomicUsize::new(0) }) };
        let mut i = Self::slot_of(c.as_ptr() as usize);
        while self.set[i].load(Ordering::Relaxed) != 0 {
            i = (i + 1) % SET;
        }
        // Release: the header is written before the chunk can be found.
        self.set[i].store(c.as_ptr() as usize, Ordering::Release);
        *k += 1;
        drop(k);
        f.total = total;
        let c = c.cast::<Header>();
        f.current = Some(c);
        Ok(c)
    }

    /// The header of the chunk of this pool that would hold address `p`.
    fn chunk_of(&self, p: usize) -> Option<&Header> {
        let base = p & !(CHUNK - 1);
        if base == 0 {
            return None;
        }
        let mut i = Self::slot_of(base);
        loop {
            match self.set[i].load(Ordering::Acquire) {
                0 => return None,
                // SAFETY: a chunk of this pool: mapped for the life of the
                // process, its header written before it was inserted.
                b if b == base => return Some(unsafe { &*(base as *const Header) }),
                _ => i = (i + 1) % SET,
            }
        }
    }

    /// Whether `p` is the start of a prepared slot of this pool (in use or
    /// not: the caller looks at the slot's own state).
    pub fn contains(&self, p: *const u8) -> bool {
        let p = p as usize;
        let Some(c) = self.chunk_of(p) else { return false };
        let off = (p & (CHUNK - 1)).wrapping_sub(self.first);
        // Acquire: the slot's preparation happens before.
        off < c.used.load(Ordering::Acquire) && off.is_multiple_of(self.size)
    }

    /// Give a slot back.
    ///
    /// # Safety
    /// `p` came from [`take`](Self::take) of this pool, is not on a free
    /// list, and nothing uses it any more (what it holds was dropped, or is
    /// meant to be found by the next taker).
    pub unsafe fn put(&self, p: NonNull<u8>) {
        // SAFETY: a slot of this pool lies in one of its chunks, whose
        // header starts the CHUNK-aligned block.
        let home = unsafe { (*((p.as_ptr() as usize & !(CHUNK - 1)) as *const Header)).home };
        let mut f = self.home(home);
        debug_assert!(f.free.len() < f.free.capacity());
        // Never grows: the vector has room for every slot of its home.
        f.free.push(p);
    }
}

/// CHUNK bytes aligned to CHUNK, mapped directly (never unmapped).
fn map_chunk() -> Result<NonNull<u8>> {
    // SAFETY: an anonymous private mapping; the parts outside the aligned
    // CHUNK are unmapped at once.
    unsafe {
        let len = 2 * CHUNK;
        let m = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if m == libc::MAP_FAILED {
            return Err(Error::NOMEM);
        }
        let start = m as usize;
        let base = start.next_multiple_of(CHUNK);
        if base > start {
            libc::munmap(m, base - start);
        }
        let end = start + len;
        if end > base + CHUNK {
            libc::munmap((base + CHUNK) as *mut libc::c_void, end - base - CHUNK);
        }
        NonNull::new(base as *mut u8).ok_or(Error::NOMEM)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::alloc::Layout;

    /// # Safety
    /// `p` has room for a `[u64; 5]`.
    unsafe fn zero(p: *mut u8) {
        // SAFETY: as the caller promises.
        unsafe { (p as *mut [u64; 5]).write([0; 5]) }
    }

    static POOL: Slab = Slab::new(Layout::new::<[u64; 5]>(), zero);

    #[test]
    fn slots_are_found_taken_and_reused() {
        // More than one chunk's worth.
        let want = 2 * CHUNK / 40 + 100;
        let mut out = Vec::new();
        for _ in 0..want {
            let p = POOL.take(3).unwrap();
            assert_eq!(p.as_ptr() as usize % 8, 0);
            // SAFETY: a fresh slot of 40 bytes, zeroed by `zero`.
            assert_eq!(unsafe { *(p.as_ptr() as *const [u64; 5]) }, [0; 5]);
            // SAFETY: ours.
            unsafe { *(p.as_ptr() as *mut u64) = 7 };
            assert!(POOL.contains(p.as_ptr()));
            assert!(!POOL.contains(p.as_ptr().wrapping_add(8)));
            out.push(p);
        }
        let mut s: Vec<usize> = out.iter().map(|p| p.as_ptr() as usize).collect();
        s.sort_unstable();
        s.dedup();
        assert_eq!(s.len(), want, "a slot handed out twice");
        let x = 0u64;
        assert!(!POOL.contains(&x as *const u64 as *const u8));
        assert!(!POOL.contains(std::ptr::null()));
        // A chunk's header, and the slot after the last one handed out,
        // are not slots.
        let last = *out.last().unwrap();
        assert!(!POOL.contains((last.as_ptr() as usize & !(CHUNK - 1)) as *const u8));
        assert!(!POOL.contains(last.as_ptr().wrapping_add(40)));
        let chunks = *POOL.chunks.lock().unwrap();
        assert!(chunks >= 3);
        // Given back from other threads, then taken again: no new chunk,
        // and the old contents are still there.
        let halves: Vec<Vec<usize>> =
            out.chunks(want / 2 + 1).map(|c| c.iter().map(|p| p.as_ptr() as usize).collect()).collect();
        std::thread::scope(|sc| {
            for h in &halves {
                // SAFETY: each slot given back once.
                sc.spawn(move || h.iter().for_each(|&p| unsafe { POOL.put(NonNull::new(p as *mut u8).unwrap()) }));
            }
        });
        for _ in 0..want {
            let p = POOL.take(3).unwrap();
            // SAFETY: a slot written above.
            assert_eq!(unsafe { *(p.as_ptr() as *const u64) }, 7);
        }
        assert_eq!(*POOL.chunks.lock().unwrap(), chunks);
    }
}
