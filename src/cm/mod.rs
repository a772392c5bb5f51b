//! Library-wide state of the connection manager.
//!
//! Nothing is done at load time. [`init`] runs on the first call that needs
//! the kernel's CM (upstream's `ucma_init`): it checks the ucma ABI version
//! and that at least one RDMA device exists, and remembers success. It does
//! *not* load libibverbs' providers (`ibv_get_device_list`, 50–140 ms in
//! upstream): device presence is read from sysfs, with the same rules
//! libibverbs applies, and libibverbs is touched only when a device context
//! is really needed.

pub mod conn;
pub mod device;
pub mod event;
pub mod id;
pub mod mcast;
pub mod qp;
pub mod registry;
pub mod resolve_ai;
pub mod sa;
pub mod sysfs;

use crate::error::{Error, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Oldest and newest ucma ABI the library speaks.
pub(crate) const UCMA_MIN_ABI: i64 = 3;
pub(crate) const UCMA_MAX_ABI: i64 = 4;

static READY: AtomicBool = AtomicBool::new(false);
static INIT_LOCK: Mutex<Option<i64>> = Mutex::new(None);

/// Upstream's `ucma_init`: EPERM on an unsupported ucma ABI, ENODEV when the
/// machine has no RDMA device. Success is cached; failure is retried on the
/// next call (a device may appear), the ABI version is read once.
pub fn init() -> Result<()> {
    if READY.load(Ordering::Acquire) {
        return Ok(());
    }
    let mut abi = INIT_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    if READY.load(Ordering::Acquire) {
        return Ok(());
    }
    let v = *abi.get_or_insert_with(sysfs::ucma_abi_version);
    if !(UCMA_MIN_ABI..=UCMA_MAX_ABI).contains(&v) {
        return Err(Error::Errno(libc::EPERM));
    }
    if sysfs::verbs_devices().is_empty() {
        return Err(Error::Errno(libc::ENODEV));
    }
    READY.store(true, Ordering::Release);
    Ok(())
}
