//! Event channels (rdma_create_event_channel(3)): an open of the kernel's
//! CM device; ids live on one and their events are read from it.

use crate::abi::rdma_event_channel;
use crate::cmem::Shared;
use crate::error::{Error, Result};
use crate::slab::Slab;
use crate::ucma;
use std::os::fd::IntoRawFd;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A channel: the public struct first (C holds its address), then the
/// number of ids on it and whether C may still use it, in one word (so
/// that attaching an id and destroying the channel exclude each other).
/// The fd is closed when the last owner goes.
#[repr(C)]
pub struct Channel {
    public: rdma_event_channel,
    /// `LIVE` (not destroyed), plus `ID` per id on the channel.
    state: AtomicUsize,
}

const LIVE: usize = 1;
const ID: usize = 2;

impl Channel {
    pub fn fd(&self) -> i32 {
        self.public.fd
    }

    /// The pointer C holds.
    pub fn c_ptr(this: &Shared<Channel>) -> *mut rdma_event_channel {
        Shared::as_ptr(this) as *mut rdma_event_channel
    }

    /// One more id on this channel (a child made on its listener's).
    pub fn attach_id(&self) {
        self.state.fetch_add(ID, Ordering::AcqRel);
    }

    /// One id fewer on this channel.
    pub fn detach(&self) {
        self.state.fetch_sub(ID, Ordering::AcqRel);
    }
}

impl Channel {
    /// A channel value with no descriptor, for unit tests (and fuzz
    /// targets) of objects that need one.
    #[cfg(any(test, feature = "fuzzing"))]
    pub fn for_tests() -> Channel {
        Channel { public: rdma_event_channel { fd: -1 }, state: AtomicUsize::new(LIVE) }
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        if self.public.fd >= 0 {
            // SAFETY: the channel owns its fd.
            unsafe { libc::close(self.public.fd) };
        }
    }
}

/// Every channel lives in a slot of this pool: the address C holds is
/// checked and counted with no table and no lock (`Shared::upgrade`,
/// docs/architecture.md "Pools"). The pool holds a count of each live
/// channel (taken back by [`destroy`]).
static CHANNELS: Slab = Slab::new(Shared::<Channel>::LAYOUT, Shared::<Channel>::init_slot);

/// A new channel (an open of the CM device), recorded as live.
pub fn create() -> Result<Shared<Channel>> {
    new_channel(0)
}

/// A new private channel of a sync id (counted with its one id).
pub fn create_private() -> Result<Shared<Channel>> {
    new_channel(1)
}

fn new_channel(ids: usize) -> Result<Shared<Channel>> {
    ucma::init()?;
    let fd = ucma::open()?.into_raw_fd();
    let state = AtomicUsize::new(LIVE + ids * ID);
    // SAFETY: the value is written whole; CHANNELS holds only Shared<Channel>.
    let ch = unsafe {
        Shared::try_new_pooled(&CHANNELS, fd as usize, |p: *mut Channel| {
            p.write(Channel { public: rdma_event_channel { fd }, state })
        })
    };
    let ch = ch.inspect_err(|_| {
        // SAFETY: ours, not handed to a Channel.
        unsafe { libc::close(fd) };
    })?;
    // The count the live channel keeps (taken back by destroy).
    let _ = Shared::into_raw(ch.clone());
    Ok(ch)
}

/// A counted reference to the channel at `ptr`, live or not.
fn find(ptr: *const rdma_event_channel) -> Option<Shared<Channel>> {
    // SAFETY: CHANNELS holds only Shared<Channel> blocks (the public struct
    // first).
    unsafe { Shared::upgrade(&CHANNELS, ptr as *const Channel) }
}

/// A counted reference to a live channel; EINVAL for anything else.
#[inline]
pub fn lookup(ptr: *const rdma_event_channel) -> Result<Shared<Channel>> {
    find(ptr).filter(|c| c.state.load(Ordering::Acquire) & LIVE != 0).ok_or(Error::INVAL)
}

/// Like [`lookup`], and count one more id on the channel in the same step
/// (so that a concurrent [`destroy`] either sees the id or refuses it).
pub fn attach(ptr: *const rdma_event_channel) -> Result<Shared<Channel>> {
    let c = find(ptr).ok_or(Error::INVAL)?;
    let mut s = c.state.load(Ordering::Acquire);
    loop {
        if s & LIVE == 0 {
            return Err(Error::INVAL);
        }
        match c.state.compare_exchange_weak(s, s + ID, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return Ok(c),
            Err(v) => s = v,
        }
    }
}

/// Forget a channel: EBUSY while ids live on it, EINVAL if it is not a
/// live channel (upstream frees it anyway, leaving its ids dangling). The
/// fd is closed now, or when the last call still using it returns.
pub fn destroy(ptr: *const rdma_event_channel) -> Result<()> {
    let c = find(ptr).ok_or(Error::INVAL)?;
    match c.state.compare_exchange(LIVE, 0, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => {
            // SAFETY: the live channel's count (new_channel), taken back
            // once: only the exchange that cleared LIVE gets here.
            drop(unsafe { Shared::from_raw(Shared::as_ptr(&c)) });
            Ok(())
        }
        Err(s) if s & LIVE == 0 => Err(Error::INVAL),
        Err(_) => Err(Error::Errno(libc::EBUSY)),
    }
}
