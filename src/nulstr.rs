//! A borrowed C string read byte by byte, without measuring it first.
//!
//! `CStr::from_ptr` runs `strlen` before anything can look at the bytes.
//! Parsers that look at every byte anyway and stop at the end (the numeric
//! host and port of `rdma_getaddrinfo`, the commonest query) read the
//! string once with a [`Reader`] instead; a caller that needs the length
//! after all converts with [`NulStr::to_cstr`].

use std::ffi::CStr;
use std::marker::PhantomData;
use std::ptr::NonNull;

/// A NUL-terminated string alive for `'a`, not yet measured.
#[derive(Clone, Copy)]
pub struct NulStr<'a> {
    p: NonNull<u8>,
    _s: PhantomData<&'a CStr>,
}

impl<'a> NulStr<'a> {
    /// `None` for NULL.
    ///
    /// # Safety
    /// `p` is NULL or points to a NUL-terminated string alive for `'a`.
    #[inline]
    pub unsafe fn from_ptr(p: *const libc::c_char) -> Option<NulStr<'a>> {
        NonNull::new(p as *mut u8).map(|p| NulStr { p, _s: PhantomData })
    }

    #[inline]
    pub fn from_cstr(s: &'a CStr) -> NulStr<'a> {
        // A CStr is a NUL-terminated string alive for 'a.
        NulStr { p: NonNull::from(s).cast(), _s: PhantomData }
    }

    /// The string measured (`strlen`).
    #[inline]
    pub fn to_cstr(self) -> &'a CStr {
        // SAFETY: NUL-terminated and alive for 'a (from_ptr's contract).
        unsafe { CStr::from_ptr(self.p.as_ptr().cast()) }
    }

    /// A reader at the first byte.
    #[inline]
    pub fn reader(self) -> Reader<'a> {
        Reader { p: self.p, _s: PhantomData }
    }
}

/// Reads a [`NulStr`] front to back; it never moves past the terminating
/// NUL, so every read stays inside the string.
pub struct Reader<'a> {
    p: NonNull<u8>,
    _s: PhantomData<&'a CStr>,
}

impl Reader<'_> {
    /// The next byte, or 0 at the end (for ever after).
    #[inline(always)]
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u8 {
        // SAFETY: `p` points into the string, at most at its NUL: it
        // starts at the first byte and moves only past a byte that is not
        // the NUL.
        let c = unsafe { *self.p.as_ptr() };
        // SAFETY: as above; the next byte is still in the string.
        self.p = unsafe { self.p.add((c != 0) as usize) };
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_to_the_end_and_stays() {
        let s = cstr!("ab");
        let n = NulStr::from_cstr(s);
        let mut r = n.reader();
        assert_eq!([r.next(), r.next(), r.next(), r.next()], [b'a', b'b', 0, 0]);
        assert_eq!(n.to_cstr(), s);
        assert_eq!(NulStr::from_cstr(cstr!("")).reader().next(), 0);
        // SAFETY: NULL is allowed.
        assert!(unsafe { NulStr::from_ptr(std::ptr::null()) }.is_none());
    }
}
