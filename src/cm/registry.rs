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
use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};

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
    f(g.get_or_insert_with(HashSet::new))
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
