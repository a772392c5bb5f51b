//! The exported C functions, one file per man-page family, each a few
//! lines: look the handles up, turn C arguments into Rust values with the
//! helpers below, call the core, write the results out. Raw C pointers
//! stop here; the core sees references, slices and owned values.
//!
//! Every export goes through [`boundary`] (via [`guard`] and its
//! shorthands): no panic crosses `extern "C"`, failures become upstream's
//! return value plus errno, and a successful call leaves errno exactly as
//! it found it (upstream clobbers it; we do not). The safety rules every
//! export relies on are stated once, in the crate documentation.

use crate::abi::{rdma_conn_param, AF_IB};
use crate::cm::conn::ConnParams;
use crate::error::{set_errno, Error, Result};
use crate::sockaddr::RawAddr;
use libc::{c_char, c_int};
use std::ffi::CStr;
use std::panic::{catch_unwind, AssertUnwindSafe};

pub mod addrinfo;
pub mod channel;
pub mod conn;
pub mod devices;
pub mod id;
pub mod mcast;
pub mod poll;
pub mod qp;
pub mod repoll;
pub mod rsocket;

// The data calls' code, in three sections the linker sorts by name (GNU
// ld's default script places `.text.sorted.*` together, in name order):
// `rrecv` and `rsend` (1), the core they and `rpoll` share (2), `rread`
// and `rwrite` (3). The first starts a 4 KiB page, so that a round trip
// of `rsend`/`rrecv`, with or without `rpoll`, runs in two code pages:
// under emulation each page reached costs about 80 instructions' time
// (docs/speed.md, "Hot code on two pages").
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
std::arch::global_asm!(".pushsection .text.sorted.rdmacm.1,\"ax\",@progbits", ".balign 4096", ".popsection");

/// The one C boundary: run `f`; on success restore errno and return its
/// value; on failure (a panic is EIO) let `on_err` decide what C sees.
fn boundary<T>(f: impl FnOnce() -> Result<T>, on_err: impl FnOnce(Error) -> T) -> T {
    // The thread's errno lives at one address for the thread's life.
    let place = errno_place();
    // SAFETY: the calling thread's errno.
    let saved = unsafe { *place };
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => {
            // SAFETY: as above.
            unsafe { *place = saved };
            v
        }
        Ok(Err(e)) => on_err(e),
        Err(_) => on_err(Error::Errno(libc::EIO)),
    }
}

/// The calling thread's errno.
///
/// On x86-64 the C library's errno is a thread-local variable of the
/// initial-exec kind (glibc) or a field of the thread's control block
/// (musl): either way it lies at one offset from the thread pointer, the
/// same in every thread (the x86-64 ELF TLS ABI; `%fs:0` holds the thread
/// pointer itself). That offset is learnt from `__errno_location` once;
/// after that the address costs two instructions and no call into the C
/// library, which the data calls make on every call (docs/speed.md, "Hot
/// code together").
#[inline(always)]
fn errno_place() -> *mut c_int {
    #[cfg(target_arch = "x86_64")]
    {
        let off = ERRNO_OFFSET.load(std::sync::atomic::Ordering::Relaxed);
        if off != UNLEARNT && off != NO_OFFSET {
            return thread_pointer().wrapping_add(off as usize) as *mut c_int;
        }
        errno_place_learn()
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: __errno_location never fails.
    unsafe {
        libc::__errno_location()
    }
}

/// The errno offset from the thread pointer, once learnt.
#[cfg(target_arch = "x86_64")]
static ERRNO_OFFSET: std::sync::atomic::AtomicIsize = std::sync::atomic::AtomicIsize::new(UNLEARNT);
/// Not learnt yet.
#[cfg(target_arch = "x86_64")]
const UNLEARNT: isize = isize::MIN;
/// Not near the thread pointer: always ask `__errno_location`.
#[cfg(target_arch = "x86_64")]
const NO_OFFSET: isize = isize::MIN + 1;

/// The thread pointer (`%fs:0`: the thread control block's pointer to
/// itself).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn thread_pointer() -> usize {
    let tp: usize;
    // SAFETY: reads one word of the calling thread's control block.
    unsafe {
        std::arch::asm!("mov {}, qword ptr fs:[0]", out(reg) tp, options(nostack, preserves_flags, readonly, pure));
    }
    tp
}

/// `errno_place` the first time (and always, where errno is not near the
/// thread pointer).
#[cfg(target_arch = "x86_64")]
#[cold]
#[inline(never)]
fn errno_place_learn() -> *mut c_int {
    // SAFETY: __errno_location never fails.
    let place = unsafe { libc::__errno_location() };
    let off = (place as usize).wrapping_sub(thread_pointer()) as isize;
    // Static TLS and the control block lie within a few pages of the
    // thread pointer; anything else is not relied on.
    let learnt = if off.unsigned_abs() < 1 << 20 { off } else { NO_OFFSET };
    ERRNO_OFFSET.store(learnt, std::sync::atomic::Ordering::Relaxed);
    place
}

/// Set errno for a failure and return the function's failure value.
fn fail<T>(e: Error, value: T) -> T {
    set_errno(match e {
        Error::Errno(n) => n,
        Error::Eai(_) => libc::EIO,
    });
    value
}

/// `int` functions: -1 with errno, or a raw EAI code (rdma_getaddrinfo's
/// convention, errno untouched).
pub(crate) fn guard(f: impl FnOnce() -> Result<c_int>) -> c_int {
    boundary(f, |e| match e {
        Error::Eai(code) => code,
        e => fail(e, -1),
    })
}

/// `int` functions returning 0 on success.
pub(crate) fn guard0(f: impl FnOnce() -> Result<()>) -> c_int {
    guard(|| f().map(|()| 0))
}

/// Functions returning nothing: errno is the only report of a failure.
pub(crate) fn guard_void(f: impl FnOnce() -> Result<()>) {
    boundary(f, |e| fail(e, ()))
}

/// Pointer functions: NULL with errno.
pub(crate) fn guard_ptr<T>(f: impl FnOnce() -> Result<*mut T>) -> *mut T {
    boundary(f, |e| fail(e, std::ptr::null_mut()))
}

/// Functions returning a plain value: `fallback` with errno.
pub(crate) fn guard_val<T>(fallback: T, f: impl FnOnce() -> Result<T>) -> T {
    boundary(f, |e| fail(e, fallback))
}

/// Write a result through a caller's out-pointer; EINVAL for NULL.
///
/// # Safety
/// `p` is NULL or valid for writing a `T`.
pub(crate) unsafe fn out<T>(p: *mut T, v: T) -> Result<()> {
    if p.is_null() {
        return Err(Error::INVAL);
    }
    // SAFETY: as the caller promises.
    unsafe { p.write(v) };
    Ok(())
}

/// A caller's mutable struct argument; EINVAL for NULL.
///
/// # Safety
/// `p` is NULL or valid for reading and writing a `T` during the call.
pub(crate) unsafe fn arg_mut<'a, T>(p: *mut T) -> Result<&'a mut T> {
    // SAFETY: as the caller promises.
    unsafe { p.as_mut() }.ok_or(Error::INVAL)
}

/// A caller's socket address, copied at the length its family has (as
/// upstream's `ucma_addrlen` decides it; AF_IB only where the kernel takes
/// it): None for NULL, EINVAL for an unknown family.
///
/// # Safety
/// `p` is NULL or readable for its family's length.
pub(crate) unsafe fn addr_arg(p: *const libc::sockaddr) -> Result<Option<RawAddr>> {
    // SAFETY: as the caller promises.
    Ok(unsafe { addr_bytes(p) }?.map(|b| RawAddr::from_bytes(b, b.len())))
}

/// [`addr_arg`] read in place: the caller's bytes, for a call that only
/// passes them on (into a kernel command, into the id), with no copy of
/// its own.
///
/// # Safety
/// `p` is NULL or readable for its family's length during `'a`.
pub(crate) unsafe fn addr_bytes<'a>(p: *const libc::sockaddr) -> Result<Option<&'a [u8]>> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: a sockaddr starts with its family.
    let len = match unsafe { (*p).sa_family } as i32 {
        libc::AF_INET => std::mem::size_of::<libc::sockaddr_in>(),
        libc::AF_INET6 => std::mem::size_of::<libc::sockaddr_in6>(),
        AF_IB if crate::ucma::af_ib_support() => std::mem::size_of::<crate::abi::sockaddr_ib>(),
        _ => return Err(Error::INVAL),
    };
    // SAFETY: readable for that length, as the caller promises.
    Ok(Some(unsafe { std::slice::from_raw_parts(p as *const u8, len) }))
}

/// A socket address that must be there: EINVAL for NULL too.
///
/// # Safety
/// As for [`addr_arg`].
pub(crate) unsafe fn addr_req(p: *const libc::sockaddr) -> Result<RawAddr> {
    // SAFETY: as the caller promises.
    unsafe { addr_arg(p) }?.ok_or(Error::INVAL)
}

/// `len` bytes at `p` (empty for NULL or 0).
///
/// # Safety
/// `p` is NULL or readable for `len` bytes during `'a`.
pub(crate) unsafe fn bytes<'a>(p: *const libc::c_void, len: usize) -> &'a [u8] {
    if p.is_null() || len == 0 {
        return &[];
    }
    // SAFETY: as the caller promises.
    unsafe { std::slice::from_raw_parts(p as *const u8, len) }
}

/// A caller's connection parameters, private data included.
///
/// # Safety
/// `p` is NULL or a valid `rdma_conn_param` whose private data is readable
/// for its length.
pub(crate) unsafe fn conn_params<'a>(p: *const rdma_conn_param) -> Option<ConnParams<'a>> {
    // SAFETY: as the caller promises.
    let p = unsafe { p.as_ref() }?;
    Some(ConnParams {
        // SAFETY: as the caller promises.
        private_data: unsafe { bytes(p.private_data, p.private_data_len as usize) },
        responder_resources: p.responder_resources,
        initiator_depth: p.initiator_depth,
        flow_control: p.flow_control,
        retry_count: p.retry_count,
        rnr_retry_count: p.rnr_retry_count,
        srq: p.srq,
        qp_num: p.qp_num,
    })
}

/// Borrow a C string argument (NULL stays None).
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string alive for `'a`.
pub(crate) unsafe fn cstr_opt<'a>(p: *const c_char) -> Option<&'a CStr> {
    // SAFETY: as the caller promises.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::errno;

    #[test]
    fn errno_is_kept_on_success_and_set_on_failure() {
        set_errno(1234);
        assert_eq!(guard(|| Ok(0)), 0);
        assert_eq!(errno(), 1234);
        assert_eq!(guard(|| Err(Error::INVAL)), -1);
        assert_eq!(errno(), libc::EINVAL);
        set_errno(77);
        assert_eq!(guard(|| Err(Error::Eai(-2))), -2);
        assert_eq!(errno(), 77, "EAI codes leave errno alone");
        assert!(guard_ptr::<u8>(|| Err(Error::Eai(-2))).is_null());
        assert_eq!(errno(), libc::EIO);
    }

    #[test]
    fn errno_is_found_in_every_thread() {
        // SAFETY: __errno_location never fails.
        let own = || unsafe { libc::__errno_location() };
        assert_eq!(errno_place(), own());
        let threads: Vec<_> = (0..4)
            .map(|i| {
                std::thread::spawn(move || {
                    // Learnt in one thread or another; right in each.
                    assert_eq!(errno_place() as usize, own() as usize);
                    set_errno(100 + i);
                    assert_eq!(guard(|| Ok(0)), 0);
                    // A call that clobbers errno and succeeds leaves it.
                    assert_eq!(
                        guard(|| {
                            set_errno(5);
                            Ok(0)
                        }),
                        0
                    );
                    assert_eq!(errno(), 100 + i);
                    errno_place() as usize
                })
            })
            .collect();
        let places: Vec<usize> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert!(places.iter().all(|&p| p != own() as usize), "each thread has its own errno");
        assert_eq!(errno_place(), own());
    }

    #[test]
    fn panics_stop_at_the_boundary() {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        assert_eq!(guard(|| panic!("boom")), -1);
        assert_eq!(errno(), libc::EIO);
        assert!(guard_ptr::<u8>(|| panic!("boom")).is_null());
        assert_eq!(guard_val(7, || panic!("boom")), 7);
        guard_void(|| panic!("boom"));
        std::panic::set_hook(prev);
    }

    #[test]
    fn address_arguments() {
        // SAFETY: NULL and a valid sockaddr_in.
        unsafe {
            assert_eq!(addr_arg(std::ptr::null()), Ok(None));
            assert_eq!(addr_req(std::ptr::null()), Err(Error::INVAL));
            let mut sin: libc::sockaddr_in = std::mem::zeroed();
            sin.sin_family = libc::AF_INET as u16;
            assert_eq!(addr_req(&sin as *const _ as *const libc::sockaddr).map(|a| a.len()), Ok(16));
            sin.sin_family = 99;
            assert_eq!(addr_arg(&sin as *const _ as *const libc::sockaddr), Err(Error::INVAL));
        }
    }
}
