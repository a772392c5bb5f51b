//! rdma_get_devices(3), rdma_free_devices(3).

use super::{guard_ptr, guard_void};
use crate::abi::ibv_context;
use crate::cm::device;
use crate::cmem;
use libc::c_int;

/// A NULL-terminated array of open device contexts; `*num_devices` gets
/// the count (0 on failure, when NULL is returned).
///
/// # Safety
/// As for every export (crate documentation): `num_devices` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn rdma_get_devices(num_devices: *mut c_int) -> *mut *mut ibv_context {
    let mut n = 0;
    let list = guard_ptr(|| {
        crate::ucma::init()?;
        let mut ctxs = device::get_devices()?;
        n = ctxs.len() as c_int;
        ctxs.push(std::ptr::null_mut()); // room reserved by get_devices
        cmem::copy_out(&ctxs).map(|p| p.as_ptr()).inspect_err(|_| device::put_contexts(&ctxs))
    });
    if !num_devices.is_null() {
        // SAFETY: non-NULL and writable, as the caller promises.
        unsafe { *num_devices = if list.is_null() { 0 } else { n } };
    }
    list
}

/// # Safety
/// As for every export (crate documentation): `list` is NULL or an array
/// from `rdma_get_devices` not freed yet.
#[no_mangle]
pub unsafe extern "C" fn rdma_free_devices(list: *mut *mut ibv_context) {
    guard_void(|| {
        if list.is_null() {
            return Ok(());
        }
        // SAFETY: a NULL-terminated array from rdma_get_devices.
        let n = (0..).take_while(|&i| !unsafe { *list.add(i) }.is_null()).count();
        // SAFETY: as above: n readable entries.
        device::put_contexts(unsafe { std::slice::from_raw_parts(list, n) });
        // SAFETY: our malloc'd array.
        unsafe { cmem::free(list) };
        Ok(())
    })
}
