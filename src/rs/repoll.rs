//! repoll (RDMACM_1.5): epoll for rsockets and ordinary descriptors mixed.
//!
//! An rsocket's descriptor reports the socket's readiness to any poller
//! (`signal.rs`), so a repoll instance is a kernel epoll instance: its
//! descriptor is the epoll descriptor and `repoll_ctl` registers the
//! descriptors themselves, with the kernel's semantics for both kinds
//! (level- or edge-triggered, EPOLLONESHOT; a closed descriptor leaves the
//! set by itself). The library adds three things:
//! - progress: before a wait, every rsocket whose application has just
//!   left a call is handed to the progress engine at once
//!   (`socket::hand_over_now`) instead of a tick later, so what arrives
//!   while the caller sleeps shows on the descriptors straight away;
//! - the events reported for an rsocket are rpoll's (`poll::revents`,
//!   `dgram::revents` for a datagram socket:
//!   EPOLLERR after an error or a failed connect, EPOLLHUP once a
//!   disconnected socket's data is read), computed when the wait returns;
//!   an rsocket that turns out not to be ready is left out;
//! - the caller's data: the kernel holds the descriptor number, the
//!   instance's table maps it to the caller's `epoll_data` and events.
//!
//! Failures are -1 with errno, as epoll's (upstream v65 returns the
//! positive errno value instead; see the README's known differences).

use super::dgram;
use super::poll;
use super::socket;
use crate::cmem::Shared;
use crate::error::{Error, Result};
use crate::handle::Table;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What the caller registered for one descriptor.
#[derive(Clone, Copy)]
struct Reg {
    events: u32,
    data: u64,
}

pub struct Repoll {
    ep: i32,
    /// rclose was called: the descriptor is closed (or about to be).
    closed: AtomicBool,
    /// Registrations by descriptor. The kernel's set is the authority on
    /// what is registered (a closed descriptor leaves it by itself): an
    /// entry here whose descriptor the kernel no longer holds is never
    /// reported, and is replaced when the number is registered again.
    regs: Mutex<HashMap<i32, Reg>>,
}

/// Live repoll instances, by descriptor.
static REPOLLS: Table<Shared<Repoll>> = Table::new();

fn check(r: i32) -> Result<i32> {
    if r < 0 {
        Err(Error::last_os())
    } else {
        Ok(r)
    }
}

/// `repoll_create`: O_CLOEXEC and O_NONBLOCK of `flags` apply to the
/// descriptor; other bits are ignored (as upstream).
pub fn create(flags: i32) -> Result<i32> {
    let cloexec = if flags & libc::O_CLOEXEC != 0 { libc::EPOLL_CLOEXEC } else { 0 };
    let ep = check(crate::sys::epoll_create1(cloexec))?;
    let close = |e| {
        // SAFETY: our descriptor, not handed out.
        unsafe { libc::close(ep) };
        Err(e)
    };
    if flags & libc::O_NONBLOCK != 0 {
        // SAFETY: our new descriptor.
        unsafe { libc::fcntl(ep, libc::F_SETFL, libc::O_NONBLOCK) };
    }
    let r = match Shared::try_new(Repoll { ep, closed: AtomicBool::new(false), regs: Mutex::new(HashMap::new()) }) {
        Ok(r) => r,
        Err(e) => return close(e),
    };
    if let Err(e) = REPOLLS.insert(ep as usize, r) {
        return close(e);
    }
    Ok(ep)
}

/// Whether `fd` is a repoll instance of ours.
pub fn is_repoll(fd: i32) -> bool {
    fd >= 0 && REPOLLS.with(fd as usize, |v| v.is_some())
}

/// The instance behind `epfd`; EINVAL for anything else (as upstream).
fn lookup(epfd: i32) -> Result<Shared<Repoll>> {
    if epfd < 0 {
        return Err(Error::INVAL);
    }
    REPOLLS.get(epfd as usize).ok_or(Error::INVAL)
}

impl Repoll {
    fn regs(&self) -> std::sync::MutexGuard<'_, HashMap<i32, Reg>> {
        self.regs.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// `repoll_ctl`: ADD, MOD or DEL `fd` (an rsocket or any pollable
/// descriptor). `event` may be None only for DEL.
pub fn ctl(epfd: i32, op: i32, fd: i32, event: Option<libc::epoll_event>) -> Result<()> {
    if fd < 0 {
        return Err(Error::Errno(libc::EBADF));
    }
    if fd == epfd {
        return Err(Error::INVAL);
    }
    let r = lookup(epfd)?;
    let reg = match (op, event) {
        (libc::EPOLL_CTL_DEL, _) => None,
        (libc::EPOLL_CTL_ADD | libc::EPOLL_CTL_MOD, Some(e)) => Some(Reg { events: e.events, data: e.u64 }),
        (libc::EPOLL_CTL_ADD | libc::EPOLL_CTL_MOD, None) => return Err(Error::Errno(libc::EFAULT)),
        _ => return Err(Error::INVAL),
    };
    let mut regs = r.regs();
    if reg.is_some() {
        regs.try_reserve(1).map_err(|_| Error::NOMEM)?;
    }
    // The kernel holds the descriptor number as the event's data.
    let mut ev = libc::epoll_event { events: reg.map_or(0, |g| g.events), u64: fd as u64 };
    // SAFETY: a valid event; the kernel checks the descriptors.
    check(unsafe { crate::sys::epoll_ctl(r.ep, op, fd, &mut ev) })?;
    match reg {
        Some(g) => {
            regs.insert(fd, g);
        }
        None => {
            regs.remove(&fd);
        }
    }
    Ok(())
}

/// The events to report for a descriptor the kernel found ready
/// (`kernel`): an rsocket's by rpoll's rules, 0 if it is not ready after
/// all; an ordinary descriptor's as they are.
fn report(fd: i32, reg: &Reg, kernel: u32) -> u32 {
    let want = reg.events;
    let mut asked: i16 = 0;
    if want & libc::EPOLLIN as u32 != 0 {
        asked |= libc::POLLIN;
    }
    if want & libc::EPOLLOUT as u32 != 0 {
        asked |= libc::POLLOUT;
    }
    let got = match socket::lookup(fd) {
        Ok(s) => {
            let mut g = s.lock();
            let got = poll::revents(&mut g, asked);
            s.show(&mut g);
            got
        }
        Err(_) => match dgram::lookup(fd) {
            Some(d) => dgram::revents(&d, asked),
            None => return kernel,
        },
    };
    let mut out = 0u32;
    for (p, e) in [
        (libc::POLLIN, libc::EPOLLIN),
        (libc::POLLOUT, libc::EPOLLOUT),
        (libc::POLLERR, libc::EPOLLERR),
        (libc::POLLHUP, libc::EPOLLHUP),
    ] {
        if got & p != 0 {
            out |= e as u32;
        }
    }
    if out != 0 {
        out |= kernel & want & libc::EPOLLRDHUP as u32;
    }
    out
}

/// `repoll_wait`: up to `out.len()` ready descriptors, 0 at the timeout
/// (-1: none).
pub fn wait(epfd: i32, out: &mut [libc::epoll_event], timeout: i32) -> Result<usize> {
    let r = lookup(epfd)?;
    if out.is_empty() || out.len() > (i32::MAX as usize) / std::mem::size_of::<libc::epoll_event>() {
        return Err(Error::INVAL);
    }
    let deadline = (timeout > 0).then(|| Instant::now() + Duration::from_millis(timeout as u64));
    let mut wait_ms = timeout;
    socket::repoll_waiting();
    loop {
        socket::hand_over_now();
        dgram::hand_over_now();
        if r.closed.load(Ordering::Acquire) {
            return Err(Error::Errno(libc::EBADF));
        }
        // SAFETY: room for out.len() events.
        let n = check(unsafe { crate::sys::epoll_wait(r.ep, out.as_mut_ptr(), out.len() as i32, wait_ms) })? as usize;
        let mut kept = 0;
        {
            let regs = r.regs();
            for i in 0..n {
                let (fd, kernel) = (out[i].u64 as i32, out[i].events);
                let Some(reg) = regs.get(&fd) else { continue };
                let events = report(fd, reg, kernel);
                if events != 0 {
                    out[kept] = libc::epoll_event { events, u64: reg.data };
                    kept += 1;
                } else if reg.events & libc::EPOLLONESHOT as u32 != 0 {
                    // Not reported after all: armed again.
                    let mut ev = libc::epoll_event { events: reg.events, u64: fd as u64 };
                    // SAFETY: a valid event for a registered descriptor.
                    unsafe { crate::sys::epoll_ctl(r.ep, libc::EPOLL_CTL_MOD, fd, &mut ev) };
                }
            }
        }
        if kept > 0 || n == 0 {
            return Ok(kept);
        }
        // Only rsockets that were not ready after all: wait on.
        wait_ms = match deadline {
            // A poll (timeout 0) is one pass, whatever it found.
            None if timeout == 0 => return Ok(0),
            None => timeout,
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Ok(0);
                }
                left.as_millis().clamp(1, i32::MAX as u128) as i32
            }
        };
    }
}

/// `rclose` of a repoll instance: the descriptor is closed (registered
/// descriptors simply leave the set; upstream refuses with EBUSY while
/// any are registered).
pub fn close(epfd: i32) -> Result<()> {
    let r = REPOLLS.remove(epfd as usize).ok_or(Error::Errno(libc::EBADF))?;
    r.closed.store(true, Ordering::Release);
    // SAFETY: the instance's descriptor, taken out of the table once.
    check(unsafe { libc::close(r.ep) }).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_descriptors_and_errors() {
        let ep = create(libc::O_CLOEXEC).unwrap();
        // SAFETY: plain calls on our own descriptors.
        unsafe {
            assert_eq!(libc::fcntl(ep, libc::F_GETFD) & libc::FD_CLOEXEC, libc::FD_CLOEXEC);
            let mut p = [0; 2];
            assert_eq!(libc::pipe(p.as_mut_ptr()), 0);
            let ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: 42 };
            ctl(ep, libc::EPOLL_CTL_ADD, p[0], Some(ev)).unwrap();
            assert_eq!(ctl(ep, libc::EPOLL_CTL_ADD, p[0], Some(ev)), Err(Error::Errno(libc::EEXIST)));
            assert_eq!(ctl(ep, libc::EPOLL_CTL_MOD, p[1], Some(ev)), Err(Error::Errno(libc::ENOENT)));
            assert_eq!(ctl(ep, libc::EPOLL_CTL_ADD, -1, Some(ev)), Err(Error::Errno(libc::EBADF)));
            assert_eq!(ctl(ep, libc::EPOLL_CTL_ADD, ep, Some(ev)), Err(Error::INVAL));
            assert_eq!(ctl(p[1], libc::EPOLL_CTL_ADD, p[0], Some(ev)), Err(Error::INVAL));
            assert_eq!(ctl(ep, 99, p[0], Some(ev)), Err(Error::INVAL));
            assert_eq!(ctl(ep, libc::EPOLL_CTL_ADD, p[1], None), Err(Error::Errno(libc::EFAULT)));
            let mut out = [libc::epoll_event { events: 0, u64: 0 }; 4];
            assert_eq!(wait(ep, &mut out, 0), Ok(0));
            assert_eq!(wait(ep, &mut out[..0], 0), Err(Error::INVAL));
            assert_eq!(libc::write(p[1], b"x".as_ptr() as *const _, 1), 1);
            assert_eq!(wait(ep, &mut out, 100), Ok(1));
            let (events, data) = (out[0].events, out[0].u64);
            assert_eq!((events, data), (libc::EPOLLIN as u32, 42));
            // MOD changes the caller's data.
            let ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: 77 };
            ctl(ep, libc::EPOLL_CTL_MOD, p[0], Some(ev)).unwrap();
            assert_eq!(wait(ep, &mut out, 100), Ok(1));
            let data = out[0].u64;
            assert_eq!(data, 77);
            ctl(ep, libc::EPOLL_CTL_DEL, p[0], None).unwrap();
            assert_eq!(ctl(ep, libc::EPOLL_CTL_DEL, p[0], None), Err(Error::Errno(libc::ENOENT)));
            assert_eq!(wait(ep, &mut out, 0), Ok(0));
            // A closed descriptor leaves the set; its number can come back.
            let ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: 5 };
            ctl(ep, libc::EPOLL_CTL_ADD, p[0], Some(ev)).unwrap();
            libc::close(p[0]);
            assert_eq!(wait(ep, &mut out, 0), Ok(0));
            let mut q = [0; 2];
            assert_eq!(libc::pipe(q.as_mut_ptr()), 0);
            assert_eq!(q[0], p[0]);
            let ev = libc::epoll_event { events: libc::EPOLLOUT as u32, u64: 6 };
            ctl(ep, libc::EPOLL_CTL_ADD, q[1], Some(ev)).unwrap();
            ctl(ep, libc::EPOLL_CTL_ADD, q[0], Some(ev)).unwrap();
            close(ep).unwrap();
            assert!(!is_repoll(ep));
            assert_eq!(wait(ep, &mut out, 0), Err(Error::INVAL));
            for fd in [p[1], q[0], q[1]] {
                libc::close(fd);
            }
        }
    }
}
