//! The UDP socket inside a datagram rsocket (docs/rsockets.md, "Datagram
//! sockets"): it holds the socket's UDP port and address, carries the
//! resolution exchange with peers and the first datagrams to a peer whose
//! address handle is not known yet.
//!
//! It is the library's own descriptor, never the application's, always
//! non-blocking and close-on-exec. Every call on it is a raw system call:
//! a preload library that wraps `socket()`, `sendmsg()` and friends (to
//! turn sockets into rsockets) must not see it, or a datagram rsocket would
//! create another rsocket inside itself.

use super::dgwire::SockAddr;
use crate::error::{Error, Result};
use crate::sockaddr::RawAddr;
use std::sync::atomic::{AtomicI32, Ordering};

pub struct Udp {
    fd: AtomicI32,
}

fn check(r: libc::c_long) -> Result<usize> {
    if r < 0 {
        Err(Error::last_os())
    } else {
        Ok(r as usize)
    }
}

impl Udp {
    /// A new UDP socket of `domain` (the kernel's errno for a domain it has
    /// no UDP for, e.g. EAFNOSUPPORT for AF_IB).
    pub fn new(domain: i32) -> Result<Udp> {
        // SAFETY: a plain system call.
        let fd = check(unsafe {
            libc::syscall(libc::SYS_socket, domain, libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0)
        })?;
        Ok(Udp { fd: AtomicI32::new(fd as i32) })
    }

    /// The descriptor (-1 once closed).
    pub fn fd(&self) -> i32 {
        self.fd.load(Ordering::Acquire)
    }

    /// Close the socket (its number may be reused at once).
    pub fn close(&self) {
        let fd = self.fd.swap(-1, Ordering::AcqRel);
        if fd >= 0 {
            // SAFETY: our descriptor, closed once (swapped out).
            unsafe { libc::syscall(libc::SYS_close, fd) };
        }
    }

    fn live(&self) -> Result<i32> {
        match self.fd() {
            fd if fd >= 0 => Ok(fd),
            _ => Err(Error::Errno(libc::EBADF)),
        }
    }

    pub fn bind(&self, a: &RawAddr) -> Result<()> {
        let fd = self.live()?;
        // SAFETY: a.len() readable bytes.
        check(unsafe { libc::syscall(libc::SYS_bind, fd, a.as_bytes().as_ptr(), a.len() as libc::socklen_t) }).map(drop)
    }

    pub fn connect(&self, a: &RawAddr) -> Result<()> {
        let fd = self.live()?;
        // SAFETY: a.len() readable bytes.
        check(unsafe { libc::syscall(libc::SYS_connect, fd, a.as_bytes().as_ptr(), a.len() as libc::socklen_t) })
            .map(drop)
    }

    /// getsockname (`local`) or getpeername.
    pub fn name(&self, local: bool) -> Result<RawAddr> {
        let fd = self.live()?;
        let mut b = [0u8; 128];
        let mut len = b.len() as libc::socklen_t;
        let nr = if local { libc::SYS_getsockname } else { libc::SYS_getpeername };
        // SAFETY: room for len bytes; len is in/out.
        check(unsafe { libc::syscall(nr, fd, b.as_mut_ptr(), &mut len as *mut libc::socklen_t) })?;
        Ok(RawAddr::from_bytes(&b, len as usize))
    }

    /// The local address, decoded.
    pub fn local(&self) -> Result<SockAddr> {
        SockAddr::from_bytes(self.name(true)?.as_bytes()).ok_or(Error::INVAL)
    }

    pub fn setsockopt(&self, level: i32, name: i32, val: &[u8]) -> Result<()> {
        let fd = self.live()?;
        let p = if val.is_empty() { std::ptr::null() } else { val.as_ptr() };
        // SAFETY: val.len() readable bytes (the kernel checks the length).
        check(unsafe { libc::syscall(libc::SYS_setsockopt, fd, level, name, p, val.len() as libc::socklen_t) })
            .map(drop)
    }

    /// Send one datagram (`buf`) to `to`, never blocking: EAGAIN when the
    /// socket's buffer is full.
    pub fn send_to(&self, buf: &[u8], to: &SockAddr) -> Result<usize> {
        let fd = self.live()?;
        let (a, alen) = to.to_bytes();
        // SAFETY: readable buffer and address.
        check(unsafe {
            libc::syscall(
                libc::SYS_sendto,
                fd,
                buf.as_ptr(),
                buf.len(),
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
                a.as_ptr(),
                alen as libc::socklen_t,
            )
        })
    }

    /// Receive one datagram into `buf`, never blocking: its full length
    /// (longer than `buf` when it was cut) and its source address.
    pub fn recv_from(&self, buf: &mut [u8]) -> Result<(usize, RawAddr)> {
        let fd = self.live()?;
        let mut a = [0u8; 128];
        let mut alen = a.len() as libc::socklen_t;
        // SAFETY: writable buffer and address storage; alen in/out.
        let n = check(unsafe {
            libc::syscall(
                libc::SYS_recvfrom,
                fd,
                buf.as_mut_ptr(),
                buf.len(),
                libc::MSG_DONTWAIT | libc::MSG_TRUNC,
                a.as_mut_ptr(),
                &mut alen as *mut libc::socklen_t,
            )
        })?;
        Ok((n, RawAddr::from_bytes(&a, alen as usize)))
    }
}

impl Drop for Udp {
    fn drop(&mut self) {
        self.close();
    }
}

/// The local address a datagram to `dest` leaves from when sent from `udp`:
/// the socket's own address when it is bound to a specific one, else the
/// one the routing table picks for `dest` (asked through a scratch UDP
/// socket connected to it), with the socket's port. A socket without a
/// port is bound to an ephemeral one first, so that the address our
/// headers name is one the peer can answer.
pub fn source_for(udp: &Udp, domain: i32, dest: &SockAddr) -> Result<SockAddr> {
    let mut local = udp.local()?;
    if local.port() == 0 {
        let any = SockAddr { v6: local.v6, ..Default::default() };
        let (b, n) = any.to_bytes();
        match udp.bind(&RawAddr::from_bytes(&b, n)) {
            // Bound meanwhile (a concurrent bind or send): take its port.
            Ok(()) | Err(Error::Errno(libc::EINVAL)) => {}
            Err(e) => return Err(e),
        }
        local = udp.local()?;
    }
    if local.is_any_or_loopback() {
        let scratch = Udp::new(domain)?;
        let (b, n) = dest.to_bytes();
        scratch.connect(&RawAddr::from_bytes(&b, n))?;
        let routed = scratch.local()?;
        local = SockAddr { port: local.port, ..routed };
    }
    Ok(local)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(ip: [u8; 4], port: u16) -> SockAddr {
        let mut a = SockAddr { port: port.to_be_bytes(), ..Default::default() };
        a.addr[..4].copy_from_slice(&ip);
        a
    }

    #[test]
    fn datagrams_over_loopback() {
        let a = Udp::new(libc::AF_INET).unwrap();
        let b = Udp::new(libc::AF_INET).unwrap();
        let (lb, n) = v4([127, 0, 0, 1], 0).to_bytes();
        b.bind(&RawAddr::from_bytes(&lb, n)).unwrap();
        let bl = b.local().unwrap();
        assert_ne!(bl.port(), 0);
        // Unbound: the source gets a port and the routed address.
        let src = source_for(&a, libc::AF_INET, &bl).unwrap();
        assert_ne!(src.port(), 0);
        assert_eq!(&src.addr[..4], &[127, 0, 0, 1]);
        assert_eq!(a.send_to(b"ping", &bl).unwrap(), 4);
        let mut buf = [0u8; 2];
        let mut got = None;
        for _ in 0..100 {
            match b.recv_from(&mut buf) {
                Ok(r) => {
                    got = Some(r);
                    break;
                }
                Err(Error::Errno(libc::EAGAIN)) => std::thread::sleep(std::time::Duration::from_millis(5)),
                Err(e) => panic!("{e:?}"),
            }
        }
        let (len, from) = got.expect("datagram");
        assert_eq!(len, 4, "the full length of a cut datagram");
        assert_eq!(&buf, b"pi");
        assert_eq!(SockAddr::from_bytes(from.as_bytes()), Some(src));
        assert_eq!(b.recv_from(&mut buf).err(), Some(Error::Errno(libc::EAGAIN)));
        a.close();
        assert_eq!(a.fd(), -1);
        assert_eq!(a.send_to(b"x", &bl).err(), Some(Error::Errno(libc::EBADF)));
    }
}
