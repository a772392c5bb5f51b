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
use crate::cmem::{self, Shared};
use crate::error::{Error, Result};
use crate::handle::{Reservation, Table};
use crate::ucma::cmd;
use std::mem::MaybeUninit;

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

// SAFETY: the raw pointers of the public event point into this record or
// at live ids; the record is immutable once handed out.
unsafe impl Send for Event {}

/// Events handed to the caller and not yet acked, by address.
static EVENTS: Table<Box<Event>> = Table::new();

impl Event {
    /// A new, empty record (the public part zeroed, the private-data buffer
    /// left uninitialised: it is written before any pointer to it is made).
    pub fn new() -> Result<Box<Event>> {
        // SAFETY: every field but the uninitialised buffer is written;
        // all-zero is a valid rdma_cm_event (NULLs, zeros).
        unsafe {
            cmem::try_box_in_place(|p: *mut Event| {
                std::ptr::addr_of_mut!((*p).public).write_bytes(0, 1);
                std::ptr::addr_of_mut!((*p).owner).write(None);
                std::ptr::addr_of_mut!((*p).mc).write(None);
            })
        }
    }

    /// Empty the record for reuse.
    pub fn reset(&mut self) {
        // SAFETY: as in new().
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

    /// The table key of a record (its address, the pointer C gets).
    pub fn key(ev: &Event) -> usize {
        ev as *const Event as usize
    }
}

/// Room in the table of live events for `ev`, kept before its kernel
/// event is read (ENOMEM if the table cannot grow now): recording it
/// afterwards cannot fail.
pub fn reserve(ev: &Event) -> Result<Reservation<'static, Box<Event>>> {
    EVENTS.reserve(Event::key(ev))
}

/// Hand a record out in the room reserved for it: record it as live and
/// return the pointer C gets.
pub fn publish(ev: Box<Event>, room: Reservation<'static, Box<Event>>) -> *mut rdma_cm_event {
    let key = Event::key(&ev);
    debug_assert_eq!(key, room.key());
    room.insert(ev);
    key as *mut rdma_cm_event
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
    let ev = EVENTS.remove(e as usize).ok_or(Error::INVAL)?;
    complete(ev.owner.as_deref(), ev.mc.as_deref());
    Ok(())
}

/// An event the library kept (never handed to C) is done with: counted as
/// acked for its owner, and freed.
pub fn done(ev: Box<Event>) {
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
}
