//! Type-stable memory: pools of fixed-size slots that are never given back
//! to the system (docs/architecture.md, "Pools").
//!
//! A handle C holds (an `rdma_cm_id *`, an `rdma_cm_event *`, an
//! `rdma_event_channel *`) must be checked before the library trusts it.
//! With its objects in a [`Slab`], the check needs no table walk and no
//! lock: any address can be tested for being the start of one of the
//! pool's slots ([`Slab::contains`]), and a slot's memory stays readable for
//! the life of the process, so the object's own atomic state (a reference
//! count, a "handed out" flag) says whether it is alive. A slot is reused
//! only after its owner gave it back.
//!
//! Slots are carved from chunks of [`CHUNK`] bytes aligned to their size
//! (mapped directly, so a chunk's untouched pages cost no memory), in
//! order, each prepared by the pool's `init` function the first time it is
//! handed out; only prepared slots count as the pool's. The chunk an
//! address would belong to is found by masking, and looked up in a small
//! insert-only hash set of the pool's chunks. Free slots wait on one of
//! [`HOMES`] lock-free stacks, chosen by the caller (a channel's
//! descriptor, say) so that threads working on their own objects rarely
//! share one. A stack's links live beside the slots, in the chunk's link
//! array, and its head carries a tag that changes on every push and pop
//! (so a pop that raced with a pop and a push of the same slot fails its
//! exchange and retries). Giving a slot back never allocates and cannot
//! fail.

use crate::error::{Error, Result};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Free stacks per pool.
const HOMES: usize = 8;
/// Bytes per chunk (and its alignment).
const CHUNK: usize = 1 << 18;
/// Entries of a pool's set of chunks (a power of two); at most half are
/// used, so a pool holds at most `SET / 2` chunks (512 MiB).
const SET: usize = 4096;
const MAX_CHUNKS: usize = SET / 2;
/// Slots a chunk can hold at most (a slot number fits 16 bits).
const MAX_SLOTS: usize = 1 << 16;

/// The start of every chunk, followed by its link array, then its slots.
#[repr(C)]
struct Header {
    /// The free stack the chunk's slots go back to.
    home: usize,
    /// The chunk's number in the pool (its place in `Slab::list`).
    no: usize,
    /// Bytes of slots prepared (handed out at least once), from the first
    /// slot; advanced under the home's lock after the slot is prepared.
    used: AtomicUsize,
}

/// A free stack, and (under its lock) where never-used slots come from.
#[repr(align(64))]
struct Home {
    /// Tag (high 32 bits) and slot index + 1 (low 32; 0: empty).
    head: AtomicU64,
    /// The home's newest chunk (its address; 0: none yet).
    current: Mutex<usize>,
}

/// A pool of slots of one size (one type per pool: a slot found by
/// [`contains`](Slab::contains) holds what the pool's owner put there).
pub struct Slab {
    /// Slot size (a multiple of the slots' alignment) and slots per chunk.
    size: usize,
    per_chunk: usize,
    /// The size as `odd << shift`, and the inverse of `odd` modulo 2^64:
    /// a multiple of the size divides by it exactly as `(off >> shift) *
    /// inv`, and `off` is a multiple exactly when `(off * inv)` rotated
    /// right by `shift` is at most `usize::MAX / size` (no `div`, which
    /// costs tens of cycles, on the handle checks).
    shift: u32,
    inv: usize,
    lim: usize,
    /// Offsets in a chunk of the link array (after the header) and of the
    /// first slot (a multiple of the slots' alignment: chunks are
    /// CHUNK-aligned).
    links: usize,
    first: usize,
    /// Prepares a slot the first time it is handed out (so that the
    /// owner's state in it, a count or a flag, reads as "not in use").
    init: unsafe fn(*mut u8),
    /// The pool's chunks by address (0: empty entry), insert-only.
    set: [AtomicUsize; SET],
    /// The pool's chunks by number.
    list: [AtomicUsize; MAX_CHUNKS],
    /// Chunks made; serialises making one.
    chunks: Mutex<usize>,
    homes: [Home; HOMES],
}

/// Slots of `size` bytes aligned to `align` in one chunk, with the link
/// array's and the first slot's offsets.
const fn geometry(size: usize, align: usize) -> (usize, usize, usize) {
    let links = std::mem::size_of::<Header>().next_multiple_of(4);
    let mut n = (CHUNK - links) / (size + 4);
    if n > MAX_SLOTS {
        n = MAX_SLOTS;
    }
    loop {
        let first = (links + 4 * n).next_multiple_of(align);
        if first + n * size <= CHUNK {
            return (n, links, first);
        }
        n -= 1;
    }
}

/// The inverse of odd `m` modulo 2^64 (Newton's iteration: each step
/// doubles the bits that are right, from 3 with `m` itself).
const fn inverse(m: usize) -> usize {
    let mut x = m;
    let mut i = 0;
    while i < 5 {
        x = x.wrapping_mul(2usize.wrapping_sub(m.wrapping_mul(x)));
        i += 1;
    }
    x
}

impl Slab {
    /// A pool of slots for values of `layout` (not zero-sized, at most a
    /// few KiB); `init` prepares a slot (memory of `layout`, uninitialised)
    /// the first time it is handed out.
    pub const fn new(layout: std::alloc::Layout, init: unsafe fn(*mut u8)) -> Slab {
        let size = layout.pad_to_align().size();
        let (per_chunk, links, first) = geometry(size, layout.align());
        let shift = size.trailing_zeros();
        Slab {
            size,
            per_chunk,
            shift,
            inv: inverse(size >> shift),
            lim: usize::MAX / size,
            links,
            first,
            init,
            set: [const { AtomicUsize::new(0) }; SET],
            list: [const { AtomicUsize::new(0) }; MAX_CHUNKS],
            chunks: Mutex::new(0),
            homes: [const { Home { head: AtomicU64::new(0), current: Mutex::new(0) } }; HOMES],
        }
    }

    fn hash(chunk: usize) -> usize {
        // Chunks are CHUNK-aligned: mix the bits above.
        ((chunk >> 18) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) as usize >> (usize::BITS - SET.trailing_zeros())
    }

    /// The link of slot `k` of the chunk at `base`.
    fn link(&self, base: usize, k: usize) -> &AtomicU32 {
        // SAFETY: a chunk of this pool (mapped for the life of the process);
        // k < per_chunk, so the link lies in its link array.
        unsafe { &*((base + self.links + 4 * k) as *const AtomicU32) }
    }

    /// The slot of stack index `i` (chunk number << 16 | slot number):
    /// its chunk's address and slot number.
    fn locate(&self, i: u32) -> (usize, usize) {
        (self.list[(i >> 16) as usize].load(Ordering::Acquire), (i & 0xffff) as usize)
    }

    /// A free slot from stack `h`: prepared by `init` if it was never used,
    /// otherwise as its last user gave it back. ENOMEM if the pool cannot
    /// grow.
    pub fn take(&self, h: usize) -> Result<NonNull<u8>> {
        let home = &self.homes[h % HOMES];
        let mut head = home.head.load(Ordering::Acquire);
        while head as u32 != 0 {
            let (base, k) = self.locate(head as u32 - 1);
            // The link may be stale if another thread popped this slot
            // meanwhile: then the tag has moved and the exchange fails.
            let next = self.link(base, k).load(Ordering::Relaxed);
            let new = ((head >> 32).wrapping_add(1) << 32) | next as u64;
            match home.head.compare_exchange_weak(head, new, Ordering::Acquire, Ordering::Acquire) {
                // SAFETY: within the chunk; non-null.
                Ok(_) => return Ok(unsafe { NonNull::new_unchecked((base + self.first + k * self.size) as *mut u8) }),
                Err(v) => head = v,
            }
        }
        let mut cur = home.current.lock().unwrap_or_else(|e| e.into_inner());
        if *cur != 0 {
            if let Some(p) = self.fresh(*cur) {
                return Ok(p);
            }
        }
        *cur = self.grow(h % HOMES)?;
        self.fresh(*cur).ok_or(Error::NOMEM)
    }

    /// The next unprepared slot of the chunk at `base` (whose home's lock
    /// is held), prepared and counted as the pool's.
    fn fresh(&self, base: usize) -> Option<NonNull<u8>> {
        // SAFETY: a chunk of this pool (its header lives forever).
        let used = unsafe { &(*(base as *const Header)).used };
        let n = used.load(Ordering::Relaxed);
        if n / self.size >= self.per_chunk {
            return None;
        }
        let p = (base + self.first + n) as *mut u8;
        // SAFETY: a slot inside the chunk, never handed out, ours; `init`
        // prepares it before the store below makes it the pool's.
        unsafe { (self.init)(p) };
        used.store(n + self.size, Ordering::Release);
        NonNull::new(p)
    }

    /// A new chunk for home `h`; returns its address.
    fn grow(&self, h: usize) -> Result<usize> {
        let mut k = self.chunks.lock().unwrap_or_else(|e| e.into_inner());
        if *k >= MAX_CHUNKS {
            return Err(Error::NOMEM);
        }
        let base = map_chunk()?.as_ptr() as usize;
        // SAFETY: a fresh mapping of CHUNK bytes, ours.
        unsafe { (base as *mut Header).write(Header { home: h, no: *k, used: AtomicUsize::new(0) }) };
        self.list[*k].store(base, Ordering::Release);
        let mut i = Self::hash(base);
        while self.set[i].load(Ordering::Relaxed) != 0 {
            i = (i + 1) % SET;
        }
        // Release: the header is written before the chunk can be found.
        self.set[i].store(base, Ordering::Release);
        *k += 1;
        Ok(base)
    }

    /// The header of the chunk of this pool that would hold address `p`.
    fn chunk_of(&self, p: usize) -> Option<&Header> {
        let base = p & !(CHUNK - 1);
        if base == 0 {
            return None;
        }
        // The first two chunks (most pools have one or two: one per home
        // in use) without the hash.
        if base == self.list[0].load(Ordering::Acquire) || base == self.list[1].load(Ordering::Acquire) {
            // SAFETY: as below (list entries are stored after the header).
            return Some(unsafe { &*(base as *const Header) });
        }
        let mut i = Self::hash(base);
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
        off < c.used.load(Ordering::Acquire) && self.is_slot_offset(off)
    }

    /// Whether `off` is a multiple of the slot size.
    #[inline]
    fn is_slot_offset(&self, off: usize) -> bool {
        off.wrapping_mul(self.inv).rotate_right(self.shift) <= self.lim
    }

    /// The slot number of `off`, a multiple of the slot size.
    #[inline]
    fn slot_of(&self, off: usize) -> usize {
        (off >> self.shift).wrapping_mul(self.inv)
    }

    /// Give a slot back.
    ///
    /// # Safety
    /// `p` came from [`take`](Self::take) of this pool, is not free, and
    /// nothing uses it any more (what it holds was dropped, or is meant to
    /// be found by the next taker).
    pub unsafe fn put(&self, p: NonNull<u8>) {
        let base = p.as_ptr() as usize & !(CHUNK - 1);
        // SAFETY: a slot of this pool lies in one of its chunks, whose
        // header starts the CHUNK-aligned block.
        let hdr = unsafe { &*(base as *const Header) };
        let k = self.slot_of(p.as_ptr() as usize - base - self.first);
        let i = ((hdr.no << 16) | k) as u32 + 1;
        let home = &self.homes[hdr.home];
        let link = self.link(base, k);
        let mut head = home.head.load(Ordering::Relaxed);
        loop {
            link.store(head as u32, Ordering::Relaxed);
            let new = ((head >> 32).wrapping_add(1) << 32) | i as u64;
            // Release: the slot's last use and its link happen before a
            // pop that takes it.
            match home.head.compare_exchange_weak(head, new, Ordering::Release, Ordering::Relaxed) {
                Ok(_) => return,
                Err(v) => head = v,
            }
        }
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
    static SHARED: Slab = Slab::new(Layout::new::<[u64; 5]>(), zero);

    #[test]
    fn slot_offsets_and_numbers_without_division() {
        for (size, align) in [(40, 8), (8, 8), (24, 8), (1000, 8), (448, 64), (4096, 16), (616, 8), (3, 1)] {
            let s = Slab::new(Layout::from_size_align(size, align).unwrap(), zero);
            let mut x = 0x2545_f491_4f6c_dd1du64;
            for off in (0..CHUNK + 3 * size).chain((0..20_000).map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as usize
            })) {
                assert_eq!(s.is_slot_offset(off), off % s.size == 0, "size {size} off {off}");
                if off % s.size == 0 {
                    assert_eq!(s.slot_of(off), off / s.size, "size {size} off {off}");
                }
            }
        }
    }

    #[test]
    fn geometry_fits() {
        for (size, align) in [(40, 8), (8, 8), (1000, 8), (64, 64), (4096, 16)] {
            let (n, links, first) = geometry(size, align);
            assert!(n > 0 && links >= std::mem::size_of::<Header>());
            assert!(first >= links + 4 * n && first % align == 0 && first + n * size <= CHUNK);
        }
    }

    #[test]
    fn slots_are_found_taken_and_reused() {
        // More than one chunk's worth.
        let want = 2 * POOL.per_chunk + 100;
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
        // every slot once, the old contents still there.
        let halves: Vec<Vec<usize>> =
            out.chunks(want / 2 + 1).map(|c| c.iter().map(|p| p.as_ptr() as usize).collect()).collect();
        std::thread::scope(|sc| {
            for h in &halves {
                // SAFETY: each slot given back once.
                sc.spawn(move || h.iter().for_each(|&p| unsafe { POOL.put(NonNull::new(p as *mut u8).unwrap()) }));
            }
        });
        let mut again: Vec<usize> = (0..want)
            .map(|_| {
                let p = POOL.take(3).unwrap();
                // SAFETY: a slot written above.
                assert_eq!(unsafe { *(p.as_ptr() as *const u64) }, 7);
                p.as_ptr() as usize
            })
            .collect();
        again.sort_unstable();
        assert_eq!(again, s);
        assert_eq!(*POOL.chunks.lock().unwrap(), chunks);
    }

    #[test]
    fn threads_share_a_stack() {
        // Four threads take and give back on one stack at once; every slot
        // is held by one thread at a time (its mark says whose).
        std::thread::scope(|sc| {
            for t in 1..=4u64 {
                sc.spawn(move || {
                    for _ in 0..20_000 {
                        let p = SHARED.take(6).unwrap();
                        let m = p.as_ptr() as *mut u64;
                        // SAFETY: ours until put back.
                        unsafe {
                            m.add(1).write(t);
                            std::hint::spin_loop();
                            assert_eq!(m.add(1).read(), t, "a slot held by two threads");
                            SHARED.put(p);
                        }
                    }
                });
            }
        });
    }
}
