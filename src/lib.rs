//! rdmacm-rs: a drop-in `librdmacm.so.1` written in Rust.
//!
//! Layers, from the C boundary inwards (docs/architecture.md; each module
//! uses only the ones below it, checked by `abi-tests/layers.py`):
//! - [`capi`]: the exported `extern "C"` functions, one file per man-page
//!   family, behind one panic and errno boundary; raw C pointers stop here.
//! - [`rs`]: rsockets, built on the connection manager's safe handles.
//! - [`cm`]: the connection manager (channels, ids, events, connections).
//! - [`addr`]: `rdma_getaddrinfo` translation, ibacm, the SA.
//! - [`verbs`]: the libibverbs calls; [`ucma`]: the kernel's
//!   `/dev/infiniband/rdma_cm` commands; [`sysfs`]: what sysfs says.
//! - [`handle`] (live-handle tables), [`sockaddr`], [`cmem`] (fallible
//!   allocation, shared owners), [`error`], [`abi`] (`#[repr(C)]` public
//!   types, the source of the generated headers).
//!
//! Nothing runs at load time: every piece of state is created on first use.
//!
//! # Safety rules of the C API
//! Every exported function that takes a pointer is an `unsafe extern "C"
//! fn`. Its caller must pass what the function's man page asks for: NULL
//! where NULL is allowed, otherwise a pointer to memory of the documented
//! type and size, valid for the duration of the call, and for handles
//! (`rdma_cm_id *`, `rdma_event_channel *`, `rdma_cm_event *`) the value
//! the library returned. Handles are checked against the library's tables
//! before use, so a stale or foreign handle is answered with EINVAL instead
//! of undefined behaviour; memory the caller passes in is trusted.
#![deny(unsafe_op_in_unsafe_fn)]

/// A `&'static CStr` literal (cbindgen 0.24 cannot parse `c"..."`).
macro_rules! cstr {
    ($s:literal) => {
        match std::ffi::CStr::from_bytes_with_nul(concat!($s, "\0").as_bytes()) {
            Ok(c) => c,
            Err(_) => panic!("interior NUL"),
        }
    };
}

pub mod abi;
pub mod addr;
pub mod capi;
pub mod cm;
pub mod cmem;
pub mod error;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod handle;
pub mod lock;
pub mod nulstr;
pub mod rs;
pub mod slab;
pub mod sockaddr;
pub mod sys;
pub mod sysfs;
pub mod ucma;
pub mod verbs;
