//! rdmacm-rs: a drop-in `librdmacm.so.1` written in Rust.
//!
//! Layers, from the C boundary inwards:
//! - [`capi`]: the exported `extern "C"` functions, one file per man-page
//!   family; each is a few lines around a safe core call, behind one panic
//!   and errno boundary ([`capi::guard`]).
//! - [`abi`]: `#[repr(C)]` public types (source of the generated headers).
//! - [`addr`]: the address model, `rdma_getaddrinfo` translation, ibacm.
//! - [`cm`]: library state (lazy initialisation, device discovery).
//! - [`ucma`]: the kernel's `/dev/infiniband/rdma_cm` command interface.
//!
//! Nothing runs at load time: every piece of state is created on first use.
#![allow(clippy::missing_safety_doc)]

pub mod abi;
pub mod addr;
pub mod capi;
pub mod cm;
pub mod error;
pub mod ucma;
pub mod verbs;
