//! rsocket(7): rsocket, rbind, rlisten, raccept, rconnect, rshutdown,
//! rclose, rrecv, rrecvfrom, rrecvmsg, rread, rreadv, rsend, rsendto,
//! rsendmsg, rwrite, rwritev, rgetpeername, rgetsockname, rsetsockopt,
//! rgetsockopt, rfcntl (its variadic entry is in `src/variadic_shim.c`),
//! riomap, riounmap, riowrite (rclose also closes a repoll instance).

use super::{addr_arg, addr_req, guard, guard0, guard_val};
use crate::error::{Error, Result};
use crate::rs::{api, dgram, iomap, opts, repoll, socket};
use crate::sockaddr::RawAddr;
use libc::{c_int, c_void, iovec, msghdr, off_t, size_t, sockaddr, socklen_t, ssize_t};
use std::io::{IoSlice, IoSliceMut};

/// `ssize_t` functions: -1 with errno.
fn guard_ssize(f: impl FnOnce() -> Result<usize>) -> ssize_t {
    guard_val(-1, || f().map(|n| n as ssize_t))
}

/// Copy an address out as getpeername(2) does: truncated to `*len`, the
/// full size written back (16 for IPv4, 28 otherwise, as upstream).
///
/// # Safety
/// `addr` is writable for `*len` bytes, `len` valid (both non-NULL).
unsafe fn addr_out(a: &RawAddr, addr: *mut sockaddr, len: *mut socklen_t) -> Result<()> {
    if addr.is_null() || len.is_null() {
        return Err(Error::Errno(libc::EFAULT));
    }
    let full = if a.family() == libc::AF_INET { 16 } else { 28 };
    // SAFETY: as the caller promises.
    let room = unsafe { *len } as usize;
    let b = a.as_bytes();
    let mut src = [0u8; 28];
    let m = b.len().min(28);
    src[..m].copy_from_slice(&b[..m]);
    // SAFETY: at most *len bytes into the caller's buffer.
    unsafe {
        std::ptr::copy_nonoverlapping(src.as_ptr(), addr as *mut u8, room.min(full));
        *len = full as socklen_t;
    }
    Ok(())
}

/// The caller's buffer as one receive slice.
///
/// # Safety
/// `buf` is writable for `len` bytes (or `len` is 0).
unsafe fn one_mut<'a>(buf: *mut c_void, len: size_t) -> [IoSliceMut<'a>; 1] {
    let s: &mut [u8] = if buf.is_null() || len == 0 {
        &mut []
    } else {
        // SAFETY: as the caller promises.
        unsafe { std::slice::from_raw_parts_mut(buf as *mut u8, len) }
    };
    [IoSliceMut::new(s)]
}

/// The caller's buffer as one send slice.
///
/// # Safety
/// `buf` is readable for `len` bytes (or `len` is 0).
unsafe fn one<'a>(buf: *const c_void, len: size_t) -> [IoSlice<'a>; 1] {
    let s: &[u8] = if buf.is_null() || len == 0 {
        &[]
    } else {
        // SAFETY: as the caller promises.
        unsafe { std::slice::from_raw_parts(buf as *const u8, len) }
    };
    [IoSlice::new(s)]
}

/// An iovec array as send slices (`IoSlice` is ABI-compatible with
/// `struct iovec` on Unix).
///
/// # Safety
/// `iov` holds `n` valid iovecs of readable memory.
unsafe fn iovs<'a>(iov: *const iovec, n: c_int) -> Result<&'a [IoSlice<'a>]> {
    if !(0..=libc::UIO_MAXIOV).contains(&n) || (iov.is_null() && n > 0) {
        return Err(Error::INVAL);
    }
    if n == 0 {
        return Ok(&[]);
    }
    // SAFETY: as the caller promises; the layouts are the same.
    Ok(unsafe { std::slice::from_raw_parts(iov as *const IoSlice, n as usize) })
}

/// An iovec array as receive slices.
///
/// # Safety
/// `iov` holds `n` valid iovecs of writable memory.
unsafe fn iovs_mut<'a>(iov: *mut iovec, n: c_int) -> Result<&'a mut [IoSliceMut<'a>]> {
    if !(0..=libc::UIO_MAXIOV).contains(&n) || (iov.is_null() && n > 0) {
        return Err(Error::INVAL);
    }
    if n == 0 {
        return Ok(&mut []);
    }
    // SAFETY: as the caller promises; the layouts are the same.
    Ok(unsafe { std::slice::from_raw_parts_mut(iov as *mut IoSliceMut, n as usize) })
}

#[no_mangle]
pub extern "C" fn rsocket(domain: c_int, r#type: c_int, protocol: c_int) -> c_int {
    guard(|| api::socket(domain, r#type, protocol))
}

/// # Safety
/// As for every export (crate documentation): `addr` is a socket address.
#[no_mangle]
pub unsafe extern "C" fn rbind(socket: c_int, addr: *const sockaddr, addrlen: socklen_t) -> c_int {
    // The address's family decides its length (upstream ignores addrlen).
    let _ = addrlen;
    guard0(|| {
        // SAFETY: as the caller promises.
        let a = unsafe { addr_req(addr) }?;
        if let Some(d) = dgram::lookup(socket) {
            return dgram::bind(&d, &a);
        }
        api::bind(&socket::lookup(socket)?, &a)
    })
}

#[no_mangle]
pub extern "C" fn rlisten(socket: c_int, backlog: c_int) -> c_int {
    guard0(|| {
        if dgram::is_dgram(socket) {
            // listen(2) on a UDP socket (upstream listens with an id a
            // datagram socket does not have).
            return Err(Error::Errno(libc::EOPNOTSUPP));
        }
        api::listen(&socket::lookup(socket)?, backlog)
    })
}

/// # Safety
/// As for every export (crate documentation): `addr` and `addrlen` are
/// NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn raccept(socket: c_int, addr: *mut sockaddr, addrlen: *mut socklen_t) -> c_int {
    guard(|| {
        let s = socket::lookup(socket)?;
        let c = {
            let _call = socket::RSocket::enter(&s);
            api::accept(&s)?
        };
        if !addr.is_null() && !addrlen.is_null() {
            // SAFETY: as the caller promises.
            let _ = unsafe { addr_out(&api::name(&c, false), addr, addrlen) };
        }
        Ok(c.fd())
    })
}

/// # Safety
/// As for every export (crate documentation): `addr` is a socket address.
#[no_mangle]
pub unsafe extern "C" fn rconnect(socket: c_int, addr: *const sockaddr, addrlen: socklen_t) -> c_int {
    // As for rbind.
    let _ = addrlen;
    guard0(|| {
        // SAFETY: as the caller promises.
        let a = if addr.is_null() { None } else { Some(unsafe { addr_req(addr) }?) };
        if let Some(d) = dgram::lookup(socket) {
            return dgram::connect(&d, &a.ok_or(Error::INVAL)?);
        }
        let s = socket::lookup(socket)?;
        let _call = socket::RSocket::enter(&s);
        api::connect(&s, a.as_ref())
    })
}

#[no_mangle]
pub extern "C" fn rshutdown(socket: c_int, how: c_int) -> c_int {
    guard0(|| {
        if dgram::is_dgram(socket) {
            // Nothing to shut down (upstream returns 0 whatever `how`).
            return Ok(());
        }
        let s = socket::lookup(socket)?;
        let _call = socket::RSocket::enter(&s);
        api::shutdown(&s, how)
    })
}

/// Closes an rsocket or a repoll instance. An unknown descriptor: EBADF
/// returned as the value, errno untouched (as upstream).
#[no_mangle]
pub extern "C" fn rclose(socket: c_int) -> c_int {
    if socket::is_rsocket(socket) {
        guard0(|| api::close(socket))
    } else if dgram::is_dgram(socket) {
        guard0(|| dgram::close(socket))
    } else if repoll::is_repoll(socket) {
        guard0(|| repoll::close(socket))
    } else {
        libc::EBADF
    }
}

/// A datagram's length as recv(2) reports it: what was copied, or its
/// full length with MSG_TRUNC.
fn dg_len(r: &dgram::Received, flags: c_int) -> usize {
    if flags & libc::MSG_TRUNC != 0 {
        r.len
    } else {
        r.copied
    }
}

/// A receive: a stream socket's looked up first (the common case), a
/// datagram socket's after.
#[inline(always)]
fn recv(socket: c_int, dst: &mut [IoSliceMut], flags: c_int) -> Result<usize> {
    let Ok(s) = socket::lookup(socket) else { return recv_dgram(socket, dst, flags) };
    let call = socket::RSocket::enter_owned(s);
    let r = api::recv(&call, dst, flags);
    call.finish();
    r
}

#[inline(never)]
fn recv_dgram(socket: c_int, dst: &mut [IoSliceMut], flags: c_int) -> Result<usize> {
    let d = dgram::lookup(socket).ok_or(Error::Errno(libc::EBADF))?;
    dgram::recv(&d, dst, flags).map(|r| dg_len(&r, flags))
}

/// A send, looked up as [`recv`] does.
#[inline(always)]
fn send(socket: c_int, src: &[IoSlice], flags: c_int) -> Result<usize> {
    let Ok(s) = socket::lookup(socket) else { return send_dgram(socket, src, flags) };
    let call = socket::RSocket::enter_owned(s);
    let r = api::send(&call, src, flags);
    call.finish();
    r
}

#[inline(never)]
fn send_dgram(socket: c_int, src: &[IoSlice], flags: c_int) -> Result<usize> {
    let d = dgram::lookup(socket).ok_or(Error::Errno(libc::EBADF))?;
    dgram::send(&d, src, flags, None)
}

/// A datagram's source as a socket address.
fn dg_src(r: &dgram::Received) -> RawAddr {
    let (b, n) = r.src.to_bytes();
    RawAddr::from_bytes(&b, n)
}

/// # Safety
/// As for every export (crate documentation): `buf` is writable for `len`.
#[no_mangle]
#[link_section = ".text.sorted.rdmacm.1"]
pub unsafe extern "C" fn rrecv(socket: c_int, buf: *mut c_void, len: size_t, flags: c_int) -> ssize_t {
    // SAFETY: as the caller promises.
    guard_ssize(|| recv(socket, &mut unsafe { one_mut(buf, len) }, flags))
}

/// # Safety
/// As for [`rrecv`]; `src_addr` and `addrlen` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn rrecvfrom(
    socket: c_int,
    buf: *mut c_void,
    len: size_t,
    flags: c_int,
    src_addr: *mut sockaddr,
    addrlen: *mut socklen_t,
) -> ssize_t {
    guard_ssize(|| {
        if let Some(d) = dgram::lookup(socket) {
            // SAFETY: as the caller promises.
            let r = dgram::recv(&d, &mut unsafe { one_mut(buf, len) }, flags)?;
            if !src_addr.is_null() && !addrlen.is_null() {
                // SAFETY: as the caller promises.
                unsafe { addr_out(&dg_src(&r), src_addr, addrlen) }?;
            }
            return Ok(dg_len(&r, flags));
        }
        // SAFETY: as the caller promises.
        let n = recv(socket, &mut unsafe { one_mut(buf, len) }, flags)?;
        if n > 0 && !src_addr.is_null() && !addrlen.is_null() {
            let a = api::name(&socket::lookup(socket)?, false);
            // SAFETY: as the caller promises.
            unsafe { addr_out(&a, src_addr, addrlen) }?;
        }
        Ok(n)
    })
}

/// Every iovec is filled in order (upstream fills only the first) and the
/// `flags` argument is used (upstream uses `msg->msg_flags`). On a
/// datagram socket `msg_name` gets the source (as recvmsg(2)) and
/// `msg_flags` MSG_TRUNC when the datagram was longer than the buffers.
///
/// # Safety
/// As for every export (crate documentation): `msg` is a valid msghdr.
#[no_mangle]
pub unsafe extern "C" fn rrecvmsg(socket: c_int, msg: *mut msghdr, flags: c_int) -> ssize_t {
    guard_ssize(|| {
        // SAFETY: as the caller promises.
        let m = unsafe { msg.as_mut() }.ok_or(Error::Errno(libc::EFAULT))?;
        if !m.msg_control.is_null() && m.msg_controllen != 0 {
            return Err(Error::Errno(libc::ENOTSUP));
        }
        // SAFETY: as the caller promises.
        let dst = unsafe { iovs_mut(m.msg_iov, m.msg_iovlen as c_int) }?;
        if let Some(d) = dgram::lookup(socket) {
            let r = dgram::recv(&d, dst, flags)?;
            if !m.msg_name.is_null() {
                // SAFETY: msg_name is writable for msg_namelen bytes.
                unsafe { addr_out(&dg_src(&r), m.msg_name as *mut sockaddr, &mut m.msg_namelen) }?;
            }
            m.msg_flags = if r.len > r.copied { libc::MSG_TRUNC } else { 0 };
            return Ok(dg_len(&r, flags));
        }
        recv(socket, dst, flags)
    })
}

/// # Safety
/// As for [`rrecv`].
#[no_mangle]
#[link_section = ".text.sorted.rdmacm.3"]
pub unsafe extern "C" fn rread(socket: c_int, buf: *mut c_void, count: size_t) -> ssize_t {
    // SAFETY: as the caller promises.
    guard_ssize(|| recv(socket, &mut unsafe { one_mut(buf, count) }, 0))
}

/// # Safety
/// As for every export (crate documentation): `iov` holds `iovcnt` iovecs.
#[no_mangle]
pub unsafe extern "C" fn rreadv(socket: c_int, iov: *const iovec, iovcnt: c_int) -> ssize_t {
    // SAFETY: as the caller promises.
    guard_ssize(|| recv(socket, unsafe { iovs_mut(iov as *mut iovec, iovcnt) }?, 0))
}

/// # Safety
/// As for every export (crate documentation): `buf` is readable for `len`.
#[no_mangle]
#[link_section = ".text.sorted.rdmacm.1"]
pub unsafe extern "C" fn rsend(socket: c_int, buf: *const c_void, len: size_t, flags: c_int) -> ssize_t {
    // SAFETY: as the caller promises.
    guard_ssize(|| send(socket, &unsafe { one(buf, len) }, flags))
}

/// On a stream socket a destination is EISCONN (upstream's rule); on a
/// datagram socket no destination means the connected one.
///
/// # Safety
/// As for [`rsend`].
#[no_mangle]
pub unsafe extern "C" fn rsendto(
    socket: c_int,
    buf: *const c_void,
    len: size_t,
    flags: c_int,
    dest_addr: *const sockaddr,
    addrlen: socklen_t,
) -> ssize_t {
    guard_ssize(|| {
        if let Some(d) = dgram::lookup(socket) {
            // SAFETY: as the caller promises.
            let to = unsafe { addr_arg(dest_addr) }?;
            // SAFETY: as the caller promises.
            return dgram::send(&d, &unsafe { one(buf, len) }, flags, to.as_ref());
        }
        socket::lookup(socket)?;
        if !dest_addr.is_null() || addrlen != 0 {
            return Err(Error::Errno(libc::EISCONN));
        }
        // SAFETY: as the caller promises.
        send(socket, &unsafe { one(buf, len) }, flags)
    })
}

/// # Safety
/// As for every export (crate documentation): `msg` is a valid msghdr.
#[no_mangle]
pub unsafe extern "C" fn rsendmsg(socket: c_int, msg: *const msghdr, flags: c_int) -> ssize_t {
    guard_ssize(|| {
        // SAFETY: as the caller promises.
        let m = unsafe { msg.as_ref() }.ok_or(Error::Errno(libc::EFAULT))?;
        if !m.msg_control.is_null() && m.msg_controllen != 0 {
            return Err(Error::Errno(libc::ENOTSUP));
        }
        // SAFETY: as the caller promises.
        let src = unsafe { iovs(m.msg_iov, m.msg_iovlen as c_int) }?;
        if let Some(d) = dgram::lookup(socket) {
            // msg_name, if given, is the destination (as sendmsg(2); upstream
            // sends a datagram socket's message down its stream path).
            let to = if m.msg_namelen == 0 {
                None
            } else {
                // SAFETY: msg_name is NULL or a socket address.
                unsafe { addr_arg(m.msg_name as *const sockaddr) }?
            };
            return dgram::send(&d, src, flags, to.as_ref());
        }
        send(socket, src, flags)
    })
}

/// # Safety
/// As for [`rsend`].
#[no_mangle]
#[link_section = ".text.sorted.rdmacm.3"]
pub unsafe extern "C" fn rwrite(socket: c_int, buf: *const c_void, count: size_t) -> ssize_t {
    // SAFETY: as the caller promises.
    guard_ssize(|| send(socket, &unsafe { one(buf, count) }, 0))
}

/// # Safety
/// As for every export (crate documentation): `iov` holds `iovcnt` iovecs.
#[no_mangle]
pub unsafe extern "C" fn rwritev(socket: c_int, iov: *const iovec, iovcnt: c_int) -> ssize_t {
    // SAFETY: as the caller promises.
    guard_ssize(|| send(socket, unsafe { iovs(iov, iovcnt) }?, 0))
}

/// # Safety
/// As for every export (crate documentation): `addr` writable for
/// `*addrlen` bytes.
#[no_mangle]
pub unsafe extern "C" fn rgetpeername(socket: c_int, addr: *mut sockaddr, addrlen: *mut socklen_t) -> c_int {
    guard0(|| {
        let a = match dgram::lookup(socket) {
            Some(d) => dgram::name(&d, false)?,
            None => api::name(&socket::lookup(socket)?, false),
        };
        // SAFETY: as the caller promises.
        unsafe { addr_out(&a, addr, addrlen) }
    })
}

/// # Safety
/// As for [`rgetpeername`].
#[no_mangle]
pub unsafe extern "C" fn rgetsockname(socket: c_int, addr: *mut sockaddr, addrlen: *mut socklen_t) -> c_int {
    guard0(|| {
        let a = match dgram::lookup(socket) {
            Some(d) => dgram::name(&d, true)?,
            None => api::name(&socket::lookup(socket)?, true),
        };
        // SAFETY: as the caller promises.
        unsafe { addr_out(&a, addr, addrlen) }
    })
}

/// # Safety
/// As for every export (crate documentation): `optval` readable for
/// `optlen` bytes.
#[no_mangle]
pub unsafe extern "C" fn rsetsockopt(
    socket: c_int,
    level: c_int,
    optname: c_int,
    optval: *const c_void,
    optlen: socklen_t,
) -> c_int {
    guard0(|| {
        // SAFETY: as the caller promises.
        let v = unsafe { one(optval, optlen as size_t) };
        if let Some(d) = dgram::lookup(socket) {
            return opts::set_dgram(&d, level, optname, &v[0]);
        }
        let s = socket::lookup(socket)?;
        opts::set(&s, level, optname, &v[0])
    })
}

/// # Safety
/// As for every export (crate documentation): `optval` writable for
/// `*optlen` bytes.
#[no_mangle]
pub unsafe extern "C" fn rgetsockopt(
    socket: c_int,
    level: c_int,
    optname: c_int,
    optval: *mut c_void,
    optlen: *mut socklen_t,
) -> c_int {
    guard0(|| {
        let d = dgram::lookup(socket);
        let s = if d.is_some() { None } else { Some(socket::lookup(socket)?) };
        if optlen.is_null() {
            return Err(Error::Errno(libc::EFAULT));
        }
        // SAFETY: as the caller promises.
        let mut v = unsafe { one_mut(optval, *optlen as size_t) };
        let n = match (&d, &s) {
            (Some(d), _) => opts::get_dgram(d, level, optname, &mut v[0])?,
            (None, Some(s)) => opts::get(s, level, optname, &mut v[0])?,
            (None, None) => return Err(Error::Errno(libc::EBADF)),
        };
        // SAFETY: checked non-NULL.
        unsafe { *optlen = n as socklen_t };
        Ok(())
    })
}

/// `rfcntl`'s work; the exported variadic `rfcntl` (C) passes its one
/// integer argument here.
#[no_mangle]
pub extern "C" fn rdmacm_rs_fcntl(socket: c_int, cmd: c_int, arg: libc::c_long) -> c_int {
    guard(|| match dgram::lookup(socket) {
        Some(d) => api::fcntl_dgram(&d, cmd, arg),
        None => api::fcntl(&socket::lookup(socket)?, cmd, arg),
    })
}

/// # Safety
/// As for every export (crate documentation): `buf` is `len` bytes the
/// caller keeps alive while mapped.
#[no_mangle]
pub unsafe extern "C" fn riomap(
    socket: c_int,
    buf: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    offset: off_t,
) -> off_t {
    // Mapping flags are ignored (as upstream).
    let _ = flags;
    guard_val(-1, || {
        if dgram::is_dgram(socket) {
            // No connection, no protection domain to register with.
            return Err(Error::INVAL);
        }
        iomap::map(&socket::lookup(socket)?, buf as *mut u8, len, prot, offset)
    })
}

/// # Safety
/// As for every export (crate documentation).
#[no_mangle]
pub unsafe extern "C" fn riounmap(socket: c_int, buf: *mut c_void, len: size_t) -> c_int {
    guard0(|| {
        if dgram::is_dgram(socket) {
            // Nothing is ever mapped on a datagram socket.
            return Err(Error::INVAL);
        }
        iomap::unmap(&socket::lookup(socket)?, buf as *mut u8, len)
    })
}

/// `(size_t)-1` on failure, as upstream's prototype has it.
///
/// # Safety
/// As for every export (crate documentation): `buf` is readable for
/// `count` bytes.
#[no_mangle]
pub unsafe extern "C" fn riowrite(
    socket: c_int,
    buf: *const c_void,
    count: size_t,
    offset: off_t,
    flags: c_int,
) -> size_t {
    guard_val(usize::MAX, || {
        if dgram::is_dgram(socket) {
            // No peer mapping to write into.
            return Err(Error::INVAL);
        }
        let s = socket::lookup(socket)?;
        let _call = socket::RSocket::enter(&s);
        // SAFETY: as the caller promises.
        iomap::write(&s, &unsafe { one(buf, count) }, offset as u64, flags)
    })
}
