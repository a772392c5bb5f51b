//! Error values of the core, and how they reach C callers.

use std::fmt;

/// What a failed library call reports to its C caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// `-1` with `errno` set to this (positive) value.
    Errno(i32),
    /// A raw return value, errno untouched: `rdma_getaddrinfo` passes glibc's
    /// negative `EAI_*` codes through as they are (upstream does the same).
    Eai(i32),
}

impl Error {
    pub const NOMEM: Error = Error::Errno(libc::ENOMEM);
    pub const INVAL: Error = Error::Errno(libc::EINVAL);

    /// The negative errno an event's status carries for this failure.
    pub fn neg_status(self) -> i32 {
        match self {
            Error::Errno(n) => -n,
            Error::Eai(_) => -libc::EIO,
        }
    }

    /// The errno of the calling thread right now, as an error.
    pub fn last_os() -> Error {
        Error::Errno(errno())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Errno(e) => write!(f, "errno {e}"),
            Error::Eai(e) => write!(f, "EAI code {e}"),
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Errno(e.raw_os_error().unwrap_or(libc::EIO))
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// The calling thread's errno.
pub fn errno() -> i32 {
    // SAFETY: __errno_location always returns a valid thread-local pointer.
    unsafe { *libc::__errno_location() }
}

/// Set the calling thread's errno.
pub fn set_errno(v: i32) {
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = v }
}
