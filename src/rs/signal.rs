//! The descriptor an rsocket is known by, and how it reports readiness to
//! plain `poll`, `select` and `epoll`.
//!
//! An rsocket's fd is one end (U) of a private AF_UNIX stream socket pair;
//! the library keeps the other end (L). The library mirrors the rsocket's
//! state onto U, so any poller sees it without calling into the library:
//! - readable: one byte waits in U's receive queue (sent from L), drained
//!   when the rsocket stops being readable;
//! - writable: U's small send buffer has room; to report "not writable"
//!   the library writes a block from U that fills it (L does not read it
//!   until the rsocket becomes writable again);
//! - hung up: L is shut down both ways (U then reports POLLHUP and POLLIN).
//!
//! Every change costs one non-blocking system call; nothing here blocks.
//! The fd is a real, unique kernel descriptor, as the ABI expects.

use crate::error::{Error, Result};
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicI32, Ordering};

/// What the descriptor reports.
#[derive(Clone, Copy, Debug, Default, Eq)]
pub struct Ready {
    pub readable: bool,
    pub writable: bool,
    pub hup: bool,
}

impl PartialEq for Ready {
    /// All three compared without a branch each (every data call compares
    /// the state with what the descriptor shows).
    #[inline]
    fn eq(&self, o: &Ready) -> bool {
        (self.readable == o.readable) & (self.writable == o.writable) & (self.hup == o.hup)
    }
}

/// Bytes written from U to make it not writable (more than a quarter of
/// the smallest send buffer the kernel allows, less than half of it).
const FILL: usize = 2048;

/// The pair; both ends are closed by [`Signal::close`] (rclose: the
/// descriptor number is free again at once, whatever references to the
/// socket remain) or on drop. The caller serialises `apply` and `close`
/// (the socket's lock).
pub struct Signal {
    num: RawFd,
    u: AtomicI32,
    l: AtomicI32,
}

fn check(r: libc::ssize_t) -> Result<usize> {
    if r < 0 {
        Err(Error::last_os())
    } else {
        Ok(r as usize)
    }
}

impl Signal {
    /// A new pair; U starts neither readable nor writable, and is
    /// close-on-exec if asked (the library's end always is).
    pub fn new(cloexec: bool) -> Result<(Signal, Ready)> {
        let mut sv = [0; 2];
        // SAFETY: sv has room for two descriptors.
        let r = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                0,
                sv.as_mut_ptr(),
            )
        };
        if r != 0 {
            return Err(Error::last_os());
        }
        if !cloexec {
            // SAFETY: our fresh descriptor.
            unsafe { libc::fcntl(sv[0], libc::F_SETFD, 0) };
        }
        let (u, l) = (sv[0], sv[1]);
        let one: libc::c_int = 1;
        // SAFETY: a valid int option on our socket; the kernel raises it to
        // its minimum.
        unsafe {
            libc::setsockopt(
                u,
                libc::SOL_SOCKET,
                libc::SO_SNDBUF,
                &one as *const _ as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as u32,
            )
        };
        let s = Signal { num: u, u: AtomicI32::new(u), l: AtomicI32::new(l) };
        let mut shown = Ready { readable: false, writable: true, hup: false };
        s.apply(&mut shown, Ready::default())?;
        Ok((s, shown))
    }

    /// The rsocket's descriptor (its number, also once closed).
    pub fn fd(&self) -> RawFd {
        self.num
    }

    /// Close both ends (the descriptor number is released).
    pub fn close(&self) {
        for end in [&self.u, &self.l] {
            let fd = end.swap(-1, Ordering::AcqRel);
            if fd >= 0 {
                // SAFETY: our descriptor, closed once (swapped out).
                unsafe { libc::close(fd) };
            }
        }
    }

    fn send(fd: RawFd, b: &[u8]) -> Result<usize> {
        // SAFETY: b is readable; non-blocking, no SIGPIPE.
        check(unsafe {
            libc::send(fd, b.as_ptr() as *const libc::c_void, b.len(), libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL)
        })
    }

    fn drain(fd: RawFd) {
        let mut buf = [0u8; FILL * 2];
        // A stream socket's recv takes all that is queued, up to the
        // buffer's size: a shorter read (or none) leaves the queue empty,
        // so one call usually does (not a second one to see EAGAIN).
        // SAFETY: buf is writable; non-blocking.
        while unsafe { libc::recv(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), libc::MSG_DONTWAIT) }
            == buf.len() as isize
        {}
    }

    /// Make the descriptor report `want`, from what it reports (`shown`,
    /// updated). A hang-up is final.
    pub fn apply(&self, shown: &mut Ready, want: Ready) -> Result<()> {
        let (u, l) = (self.u.load(Ordering::Acquire), self.l.load(Ordering::Acquire));
        if shown.hup || u < 0 || l < 0 {
            return Ok(());
        }
        if want.writable != shown.writable {
            if want.writable {
                Self::drain(l);
            } else {
                Self::send(u, &[0u8; FILL])?;
            }
            shown.writable = want.writable;
        }
        if want.hup {
            // Before any "readable" byte: the shutdown makes U report
            // POLLIN and POLLHUP in one change, so a poller it wakes sees
            // both (a byte written first woke pollers that saw POLLIN
            // alone).
            // SAFETY: our socket; U then reports POLLHUP and POLLIN.
            unsafe { libc::shutdown(l, libc::SHUT_RDWR) };
            shown.hup = true;
            shown.readable = true;
            return Ok(());
        }
        if want.readable != shown.readable {
            if want.readable {
                Self::send(l, b"r")?;
            } else {
                Self::drain(u);
            }
            shown.readable = want.readable;
        }
        Ok(())
    }
}

impl Drop for Signal {
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn poll(fd: RawFd) -> i16 {
        let mut p = libc::pollfd { fd, events: libc::POLLIN | libc::POLLOUT, revents: 0 };
        // SAFETY: one valid pollfd.
        assert!(unsafe { libc::poll(&mut p, 1, 0) } >= 0);
        p.revents
    }

    #[test]
    fn a_waiting_poller_sees_the_hangup_with_the_data() {
        let (s, mut shown) = Signal::new(true).unwrap();
        let fd = s.fd();
        let waiter = std::thread::spawn(move || {
            let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
            // SAFETY: one valid pollfd.
            let n = unsafe { libc::poll(&mut p, 1, 5000) };
            (n, p.revents)
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
        s.apply(&mut shown, Ready { readable: true, writable: false, hup: true }).unwrap();
        let (n, revents) = waiter.join().unwrap();
        assert_eq!(n, 1);
        assert_eq!(revents & (libc::POLLIN | libc::POLLHUP), libc::POLLIN | libc::POLLHUP);
    }

    #[test]
    fn plain_poll_sees_every_state() {
        let (s, mut shown) = Signal::new(true).unwrap();
        assert_eq!(poll(s.fd()), 0, "new: neither readable nor writable");
        s.apply(&mut shown, Ready { readable: true, writable: false, hup: false }).unwrap();
        assert_eq!(poll(s.fd()), libc::POLLIN);
        s.apply(&mut shown, Ready { readable: true, writable: true, hup: false }).unwrap();
        assert_eq!(poll(s.fd()), libc::POLLIN | libc::POLLOUT);
        s.apply(&mut shown, Ready { readable: false, writable: true, hup: false }).unwrap();
        assert_eq!(poll(s.fd()), libc::POLLOUT);
        s.apply(&mut shown, Ready { readable: false, writable: false, hup: false }).unwrap();
        assert_eq!(poll(s.fd()), 0);
        // Many toggles leave nothing behind.
        for i in 0..100 {
            let w = Ready { readable: i % 2 == 0, writable: i % 3 == 0, hup: false };
            s.apply(&mut shown, w).unwrap();
            let want = if w.readable { libc::POLLIN } else { 0 } | if w.writable { libc::POLLOUT } else { 0 };
            assert_eq!(poll(s.fd()), want, "round {i}");
        }
        s.apply(&mut shown, Ready { readable: false, writable: false, hup: true }).unwrap();
        let r = poll(s.fd());
        assert_ne!(r & libc::POLLHUP, 0);
        assert_ne!(r & libc::POLLIN, 0);
    }

    #[test]
    fn epoll_sees_it_too() {
        let (s, mut shown) = Signal::new(true).unwrap();
        // SAFETY: plain epoll calls on our descriptors.
        unsafe {
            let ep = libc::epoll_create1(libc::EPOLL_CLOEXEC);
            let mut ev = libc::epoll_event { events: (libc::EPOLLIN | libc::EPOLLOUT) as u32, u64: 7 };
            assert_eq!(libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, s.fd(), &mut ev), 0);
            let mut out = [libc::epoll_event { events: 0, u64: 0 }; 2];
            assert_eq!(libc::epoll_wait(ep, out.as_mut_ptr(), 2, 0), 0);
            s.apply(&mut shown, Ready { readable: true, writable: false, hup: false }).unwrap();
            assert_eq!(libc::epoll_wait(ep, out.as_mut_ptr(), 2, 0), 1);
            let got = out[0].events;
            assert_eq!(got, libc::EPOLLIN as u32);
            libc::close(ep);
        }
    }
}
