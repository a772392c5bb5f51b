//! rdma_get_devices(3), rdma_free_devices(3).

use super::{guard_ptr, guard_void};
use crate::abi::ibv_context;
use crate::cm::device;
use libc::c_int;

/// A NULL-terminated array of open device contexts; `*num_devices` gets
/// the count (0 on failure, when NULL is returned).
#[no_mangle]
pub unsafe extern "C" fn rdma_get_devices(num_devices: *mut c_int) -> *mut *mut ibv_context {
    let mut n = 0;
    let list = guard_ptr(|| {
        crate::cm::init()?;
        let ctxs = device::lock().open_all()?;
        let arr = crate::addr::getaddrinfo::cmalloc((ctxs.len() + 1) * std::mem::size_of::<*mut ibv_context>())?
            as *mut *mut ibv_context;
        for (i, c) in ctxs.iter().enumerate() {
            arr.add(i).write(*c);
        }
        arr.add(ctxs.len()).write(std::ptr::null_mut());
        n = ctxs.len() as c_int;
        Ok(arr)
    });
    if !num_devices.is_null() {
        *num_devices = if list.is_null() { 0 } else { n };
    }
    list
}

#[no_mangle]
pub unsafe extern "C" fn rdma_free_devices(list: *mut *mut ibv_context) {
    guard_void(|| {
        if list.is_null() {
            return Ok(());
        }
        let mut ctxs = Vec::new();
        let mut i = 0;
        while !(*list.add(i)).is_null() {
            ctxs.push(*list.add(i));
            i += 1;
        }
        device::lock().put_contexts(&ctxs);
        libc::free(list as *mut libc::c_void);
        Ok(())
    })
}
