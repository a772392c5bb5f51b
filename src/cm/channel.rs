//! Event channels (rdma_create_event_channel(3)): an open of the kernel's
//! CM device; ids live on one and their events are read from it.

use crate::abi::rdma_event_channel;
use crate::cmem::Shared;
use crate::error::{Error, Result};
use crate::handle::Table;
use crate::ucma;
use std::os::fd::IntoRawFd;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A channel: the public struct first (C holds its address), then the
/// number of ids on it. The fd is closed when the last owner goes.
#[repr(C)]
pub struct Channel {
    public: rdma_event_channel,
    ids: AtomicUsize,
}

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
        self.ids.fetch_add(1, Ordering::AcqRel);
    }

    /// One id fewer on this channel.
    pub fn detach(&self) {
        self.ids.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Channel {
    /// A channel value with no descriptor, for unit tests (and fuzz
    /// targets) of objects that need one.
    #[cfg(any(test, feature = "fuzzing"))]
    pub fn for_tests() -> Channel {
        Channel { public: rdma_event_channel { fd: -1 }, ids: AtomicUsize::new(0) }
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

/// Live channels by the address C holds.
static CHANNELS: Table<Shared<Channel>> = Table::new();

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
    // From here the Channel owns fd: dropped on any failure, it closes it.
    let ch = Shared::try_new(Channel { public: rdma_event_channel { fd }, ids: AtomicUsize::new(ids) })?;
    CHANNELS.insert(Shared::as_ptr(&ch) as usize, ch.clone())?;
    Ok(ch)
}

/// A counted reference to a live channel; EINVAL for anything else.
pub fn lookup(ptr: *const rdma_event_channel) -> Result<Shared<Channel>> {
    CHANNELS.get(ptr as usize).ok_or(Error::INVAL)
}

/// Like [`lookup`], and count one more id on the channel in the same step
/// (so that a concurrent [`destroy`] either sees the id or refuses it).
pub fn attach(ptr: *const rdma_event_channel) -> Result<Shared<Channel>> {
    CHANNELS.with(ptr as usize, |c| {
        let c = c.ok_or(Error::INVAL)?;
        c.ids.fetch_add(1, Ordering::AcqRel);
        Ok(c.clone())
    })
}

/// Forget a channel: EBUSY while ids live on it, EINVAL if it is not a
/// live channel (upstream frees it anyway, leaving its ids dangling). The
/// fd is closed now, or when the last call still using it returns.
pub fn destroy(ptr: *const rdma_event_channel) -> Result<()> {
    let ch = CHANNELS.remove_if(ptr as usize, |c| match c.ids.load(Ordering::Acquire) {
        0 => Ok(()),
        _ => Err(Error::Errno(libc::EBUSY)),
    })?;
    drop(ch);
    Ok(())
}
