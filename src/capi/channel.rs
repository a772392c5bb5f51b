//! rdma_create_event_channel(3), rdma_get_cm_event(3), rdma_ack_cm_event(3),
//! rdma_event_str(3), rdma_migrate_id(3), rdma_write_cm_event(3).

use super::{guard, guard_ptr, guard_void};
use crate::abi::{rdma_cm_event, rdma_cm_id, rdma_event_channel, RawEventType};
use crate::cm::{event, id, registry, resolve_ai};
use crate::error::Error;
use libc::{c_char, c_int};

#[no_mangle]
pub extern "C" fn rdma_create_event_channel() -> *mut rdma_event_channel {
    guard_ptr(id::create_channel)
}

/// Closes and frees the channel. A channel that still has ids is left
/// alone (errno EBUSY), as is a pointer that is not a live channel (EINVAL):
/// upstream frees it anyway, leaving the ids with a dangling channel.
#[no_mangle]
pub extern "C" fn rdma_destroy_event_channel(channel: *mut rdma_event_channel) {
    guard_void(|| id::destroy_channel(channel))
}

#[no_mangle]
pub unsafe extern "C" fn rdma_get_cm_event(channel: *mut rdma_event_channel, event: *mut *mut rdma_cm_event) -> c_int {
    guard(|| {
        crate::cm::init()?;
        if event.is_null() {
            return Err(Error::Errno(libc::EINVAL));
        }
        *event = event::get_event(channel)?;
        Ok(0)
    })
}

#[no_mangle]
pub extern "C" fn rdma_ack_cm_event(event: *mut rdma_cm_event) -> c_int {
    guard(|| event::ack_event(event).map(|_| 0))
}

#[no_mangle]
pub extern "C" fn rdma_event_str(event: RawEventType) -> *const c_char {
    event::event_str(event).as_ptr()
}

#[no_mangle]
pub extern "C" fn rdma_migrate_id(id: *mut rdma_cm_id, channel: *mut rdma_event_channel) -> c_int {
    guard(|| id::migrate(registry::id_priv(id)?, channel).map(|_| 0))
}

#[no_mangle]
pub extern "C" fn rdma_write_cm_event(id: *mut rdma_cm_id, event: RawEventType, status: c_int, arg: u64) -> c_int {
    guard(|| {
        if event != crate::abi::rdma_cm_event_type::RDMA_CM_EVENT_USER as u32 {
            return Err(Error::Errno(libc::EINVAL));
        }
        resolve_ai::write_cm_event(registry::id_priv(id)?, event, status, arg).map(|_| 0)
    })
}
