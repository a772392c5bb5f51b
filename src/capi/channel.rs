//! rdma_create_event_channel(3), rdma_get_cm_event(3), rdma_ack_cm_event(3),
//! rdma_event_str(3), rdma_migrate_id(3), rdma_write_cm_event(3).

use super::{guard0, guard_ptr, guard_void, out};
use crate::abi::{rdma_cm_event, rdma_cm_id, rdma_event_channel, RawEventType};
use crate::cm::channel::{self, Channel};
use crate::cm::{dispatch, events, id, lifecycle, resolve_ai};
use crate::error::Error;
use libc::{c_char, c_int};

#[no_mangle]
pub extern "C" fn rdma_create_event_channel() -> *mut rdma_event_channel {
    guard_ptr(|| Ok(Channel::c_ptr(&channel::create()?)))
}

/// Closes and frees the channel. A channel that still has ids is left
/// alone (errno EBUSY), as is a pointer that is not a live channel (EINVAL):
/// upstream frees it anyway, leaving the ids with a dangling channel.
///
/// # Safety
/// As for every export (crate documentation).
#[no_mangle]
pub unsafe extern "C" fn rdma_destroy_event_channel(channel: *mut rdma_event_channel) {
    guard_void(|| channel::destroy(channel))
}

/// # Safety
/// As for every export (crate documentation): `event` is writable.
#[no_mangle]
pub unsafe extern "C" fn rdma_get_cm_event(channel: *mut rdma_event_channel, event: *mut *mut rdma_cm_event) -> c_int {
    guard0(|| {
        crate::ucma::init()?;
        if event.is_null() {
            return Err(Error::INVAL);
        }
        let d = dispatch::get_event(&*channel::lookup(channel)?)?;
        // SAFETY: checked non-NULL; writable as the caller promises.
        unsafe { out(event, d.ptr) }
    })
}

/// # Safety
/// As for every export (crate documentation).
#[no_mangle]
pub unsafe extern "C" fn rdma_ack_cm_event(event: *mut rdma_cm_event) -> c_int {
    guard0(|| events::ack(event))
}

#[no_mangle]
pub extern "C" fn rdma_event_str(event: RawEventType) -> *const c_char {
    events::event_str(event).as_ptr()
}

/// # Safety
/// As for every export (crate documentation).
#[no_mangle]
pub unsafe extern "C" fn rdma_migrate_id(id: *mut rdma_cm_id, channel: *mut rdma_event_channel) -> c_int {
    guard0(|| lifecycle::migrate(&*id::lookup(id)?, channel))
}

/// # Safety
/// As for every export (crate documentation).
#[no_mangle]
pub unsafe extern "C" fn rdma_write_cm_event(
    id: *mut rdma_cm_id,
    event: RawEventType,
    status: c_int,
    arg: u64,
) -> c_int {
    guard0(|| {
        if event != crate::abi::rdma_cm_event_type::RDMA_CM_EVENT_USER as u32 {
            return Err(Error::INVAL);
        }
        resolve_ai::write_cm_event(&*id::lookup(id)?, event, status, arg)
    })
}
