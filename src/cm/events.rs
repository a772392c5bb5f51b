//! Event records (rdma_get_cm_event(3), rdma_ack_cm_event(3),
//! rdma_event_str(3)): what `rdma_get_cm_event` hands out, the table of
//! events handed out and not yet acked, and the ack.
//!
//! An event record owns a counted reference to the id whose event count it
//! completes (for a connection request, the listener) and, for multicast
//! events, to its membership: an id cannot go away while one of its events
//! is unacked (upstream's rule, `rdma_destroy_id` waits for the acks).

use super::id::{Id, Mc};
use super::mcast;
use crate::abi::*;
use crate::cmem::Shared;
use crate::error::{Error, Result};
use crate::slab::Slab;
use crate::ucma::cmd;
use std::alloc::Layout;
use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU8, Ordering};

/// The public event first, then the private-data buffer its params point
/// into, then the owners.
#[repr(C)]
pub struct Event {
    pub public: rdma_cm_event,
    /// Written only up to the length the params give (never read before).
    private_data: MaybeUninit<[u8; cmd::MAX_PRIVATE_DATA]>,
    /// The id whose event count the ack completes.
    pub owner: Option<Shared<Id>>,
    /// The membership a multicast event belongs to.
    pub mc: Option<Shared<Mc>>,
}

impl Event {
    /// Empty the record for reuse.
    pub fn reset(&mut self) {
        // SAFETY: all-zero is a valid rdma_cm_event (NULLs, zeros).
        self.public = unsafe { std::mem::zeroed() };
        self.owner = None;
        self.mc = None;
    }

    /// Keep private data in the record (valid until the ack); NULL when
    /// there is none.
    pub fn stash_private(&mut self, data: &[u8; cmd::MAX_PRIVATE_DATA], len: u8) -> *const libc::c_void {
        if len == 0 {
            return std::ptr::null();
        }
        let dst = self.private_data.as_mut_ptr() as *mut u8;
        // SAFETY: len <= 255 bytes fit both buffers.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, len as usize) };
        dst as *const libc::c_void
    }

    /// The private data a connection event carries (empty if none).
    pub fn conn_private(&self) -> &[u8] {
        // SAFETY: conn is plain data in every member; its private_data
        // points into this record's buffer (initialised for its length) or
        // is NULL.
        let (p, n) = unsafe { (self.public.param.conn.private_data, self.public.param.conn.private_data_len) };
        if p.is_null() || p != self.private_data.as_ptr() as *const libc::c_void {
            return &[];
        }
        // SAFETY: stash_private wrote n bytes there.
        unsafe { std::slice::from_raw_parts(p as *const u8, n as usize) }
    }
}

// Event records live in a pool (crate::slab, docs/architecture.md): an
// address C gives back is checked with no table and no lock, by the pool's
// range check and the record's own state.

/// A pool record: the event (its address is the pointer C gets), then its
/// state.
#[repr(C)]
struct Slot {
    ev: UnsafeCell<Event>,
    state: AtomicU8,
}

/// Taken or free.
const HELD: u8 = 1;
/// Handed out to C, until the ack.
const LIVE: u8 = 2;

/// Prepares a slot: an empty event, not handed out.
///
/// # Safety
/// `p` has room for a `Slot`.
unsafe fn init_slot(p: *mut u8) {
    let ev = Event {
        // SAFETY: all-zero is a valid rdma_cm_event.
        public: unsafe { std::mem::zeroed() },
        private_data: MaybeUninit::uninit(),
        owner: None,
        mc: None,
    };
    // SAFETY: as the caller promises.
    unsafe { (p as *mut Slot).write(Slot { ev: UnsafeCell::new(ev), state: AtomicU8::new(HELD) }) };
}

static POOL: Slab = Slab::new(Layout::new::<Slot>(), init_slot);

/// An event record owned by the library (taken from the pool, not handed
/// out): given back to the pool when dropped, its owners let go.
pub struct Record(NonNull<Slot>);

// SAFETY: a record is owned exclusively by its holder.
unsafe impl Send for Record {}

impl Deref for Record {
    type Target = Event;
    fn deref(&self) -> &Event {
        // SAFETY: the holder owns the record; `ev` is initialised (HELD).
        unsafe { &*(*self.0.as_ptr()).ev.get() }
    }
}

impl DerefMut for Record {
    fn deref_mut(&mut self) -> &mut Event {
        // SAFETY: as above, exclusively.
        unsafe { &mut *(*self.0.as_ptr()).ev.get() }
    }
}

impl Drop for Record {
    #[inline]
    fn drop(&mut self) {
        self.owner = None;
        self.mc = None;
        // SAFETY: a slot of POOL, no longer used (its state is HELD: the
        // next taker finds a valid Event).
        unsafe { POOL.put(self.0.cast()) };
    }
}

impl Record {
    /// A record from the pool's free list `h` (a channel's descriptor
    /// number), its public part zeroed; ENOMEM if the pool cannot grow.
    pub fn take(h: usize) -> Result<Record> {
        let s = POOL.take(h)?.cast::<Slot>();
        // SAFETY: a free slot (HELD, a valid Event), now ours.
        unsafe { std::ptr::addr_of_mut!((*(*s.as_ptr()).ev.get()).public).write_bytes(0, 1) };
        Ok(Record(s))
    }

    /// The pointer C gets for this record.
    pub fn c_ptr(&self) -> *mut rdma_cm_event {
        self.0.as_ptr() as *mut rdma_cm_event
    }
}

/// Hand a record out: mark it live and return the pointer C gets.
pub fn publish(rec: Record) -> *mut rdma_cm_event {
    let s = rec.0.as_ptr();
    std::mem::forget(rec);
    // SAFETY: a pool record; the store publishes what was written to it.
    unsafe { (*s).state.store(LIVE, Ordering::Release) };
    s as *mut rdma_cm_event
}

/// Count one event as done for its owner (and membership).
fn complete(owner: Option<&Id>, mc: Option<&Mc>) {
    match (owner, mc) {
        (Some(id), Some(mc)) => mcast::complete_event(id, mc),
        (Some(id), None) => id.complete_event(),
        _ => {}
    }
}

/// `rdma_ack_cm_event`: count the event as done and free it; EINVAL for a
/// pointer that is not a live event.
pub fn ack(e: *const rdma_cm_event) -> Result<()> {
    if !POOL.contains(e as *const u8) {
        return Err(Error::INVAL);
    }
    let s = e as *mut Slot;
    // SAFETY: a slot of the pool (its memory lives as long as the
    // process); `state` is only touched atomically. Whoever turns LIVE off
    // owns the record.
    unsafe { &(*s).state }
        .compare_exchange(LIVE, HELD, Ordering::Acquire, Ordering::Relaxed)
        .map_err(|_| Error::INVAL)?;
    // SAFETY: a pool record, now ours.
    let ev = Record(unsafe { NonNull::new_unchecked(s) });
    complete(ev.owner.as_deref(), ev.mc.as_deref());
    Ok(())
}

/// An event the library kept (never handed to C) is done with: counted as
/// acked for its owner, and freed.
pub fn done(ev: Record) {
    complete(ev.owner.as_deref(), ev.mc.as_deref());
}

/// Ack the event a sync id keeps in `id->event`, if any.
pub fn ack_stashed(id: &Id) {
    let ev = id.event();
    if !ev.is_null() {
        id.set_event(std::ptr::null_mut());
        let _ = ack(ev);
    }
}

/// `rdma_event_str`: the enumerator's name; USER and INTERNAL have none in
/// upstream either ("UNKNOWN EVENT").
pub fn event_str(ev: u32) -> &'static std::ffi::CStr {
    rdma_cm_event_type::try_from(ev).ok().and_then(rdma_cm_event_type::name).unwrap_or(cstr!("UNKNOWN EVENT"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_strings() {
        assert_eq!(event_str(0).to_str().unwrap(), "RDMA_CM_EVENT_ADDR_RESOLVED");
        assert_eq!(event_str(15).to_str().unwrap(), "RDMA_CM_EVENT_TIMEWAIT_EXIT");
        assert_eq!(event_str(17).to_str().unwrap(), "RDMA_CM_EVENT_ADDRINFO_ERROR");
        assert_eq!(event_str(18).to_str().unwrap(), "UNKNOWN EVENT");
        assert_eq!(event_str(19).to_str().unwrap(), "UNKNOWN EVENT");
        assert_eq!(event_str(u32::MAX).to_str().unwrap(), "UNKNOWN EVENT");
    }

    #[test]
    fn event_types_convert_by_value() {
        for (i, t) in rdma_cm_event_type::ALL.iter().enumerate() {
            assert_eq!(*t as u32, i as u32);
            assert_eq!(rdma_cm_event_type::try_from(i as u32), Ok(*t));
        }
        assert_eq!(rdma_cm_event_type::try_from(20), Err(20));
    }

    #[test]
    fn private_data_follows_the_event() {
        assert_eq!(std::mem::offset_of!(Event, private_data), std::mem::size_of::<rdma_cm_event>());
    }

    #[test]
    fn foreign_events_are_refused() {
        let x = 0u64;
        assert_eq!(ack(&x as *const u64 as *const rdma_cm_event), Err(Error::INVAL));
        assert_eq!(ack(std::ptr::null()), Err(Error::INVAL));
    }

    #[test]
    fn records_are_acked_once() {
        let p = publish(Record::take(3).unwrap());
        // Inside the record but not its start: refused.
        assert_eq!(ack((p as usize + 8) as *const rdma_cm_event), Err(Error::INVAL));
        assert_eq!(ack(p), Ok(()));
        // Acked already (the record is free): refused.
        assert_eq!(ack(p), Err(Error::INVAL));
        // A record taken but not handed out is not live either.
        let r = Record::take(3).unwrap();
        assert_eq!(ack(r.c_ptr()), Err(Error::INVAL));
        drop(r);
    }

    #[test]
    fn pool_grows_and_takes_records_back() {
        // Many records out at once on one home (several chunks), each
        // zeroed when taken, all acked by other threads.
        let mut out = Vec::new();
        for i in 0..2000usize {
            let mut r = Record::take(5).unwrap();
            assert_eq!(r.public.event, 0);
            assert!(r.public.id.is_null());
            r.public.event = 7;
            r.public.status = i as i32;
            out.push(publish(r) as usize);
        }
        let mut sorted = out.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), out.len(), "a record handed out twice");
        let halves: Vec<Vec<usize>> = out.chunks(1000).map(|c| c.to_vec()).collect();
        std::thread::scope(|sc| {
            for h in &halves {
                sc.spawn(move || {
                    for &p in h {
                        assert_eq!(ack(p as *const rdma_cm_event), Ok(()));
                    }
                });
            }
        });
        for &p in &out {
            assert_eq!(ack(p as *const rdma_cm_event), Err(Error::INVAL));
        }
        // Reused, zeroed again.
        let again: Vec<Record> = (0..2000).map(|_| Record::take(5).unwrap()).collect();
        assert!(again.iter().all(|r| r.public.event == 0 && r.owner.is_none()));
    }
}
