//! riomap(3), riounmap(3), riowrite(3): zero-copy writes into buffers the
//! peer mapped.
//!
//! - `riomap(PROT_WRITE)` registers a local buffer for remote writes and
//!   takes a slot of the *peer's* iomap table (as many as the peer
//!   advertised); the entry (offset, address, rkey, length) goes to the peer
//!   on the next send, as an IOMAP_SGL message. PROT_NONE registers locally
//!   only.
//! - `riowrite` finds, in *our* iomap table (written by the peer), the
//!   entry containing the offset, and writes there with a plain RDMA WRITE:
//!   the peer is not notified. Entries are the peer's input: they only
//!   choose where on the peer the data goes.

use super::mem::Mapping;
use super::socket::{self, Inner, Phase, RSocket};
use super::stream::Src;
use super::wire::{self, Iomap, Sge};
use crate::cmem::Shared;
use crate::error::{errno, Error, Result};
use crate::verbs;
use std::io::IoSlice;

/// `riomap`: the offset the peer writes at.
pub fn map(s: &Shared<RSocket>, buf: *mut u8, len: usize, prot: i32, offset: i64) -> Result<i64> {
    if prot & !(libc::PROT_WRITE | libc::PROT_NONE) != 0 {
        return Err(Error::INVAL);
    }
    let mut g = s.lock();
    let pd = g.id.pd();
    let Some(c) = g.conn.as_mut() else { return Err(Error::INVAL) };
    if pd.is_null() {
        return Err(Error::INVAL);
    }
    let write = prot & libc::PROT_WRITE != 0;
    let slot = if write {
        let used = |i: u32| c.maps.iter().any(|m| m.slot == Some(i));
        Some((0..c.peer_iomap_len()).find(|&i| !used(i)).ok_or(Error::NOMEM)?)
    } else {
        None
    };
    let access = verbs::IBV_ACCESS_LOCAL_WRITE | if write { verbs::IBV_ACCESS_REMOTE_WRITE } else { 0 };
    c.maps.try_reserve(1).map_err(|_| Error::NOMEM)?;
    // SAFETY: the caller's buffer of len bytes; registration pins it.
    let mr = unsafe { verbs::rdmacm_shim_reg_mr(pd, buf as *mut libc::c_void, len, access) };
    if mr.is_null() {
        return Err(Error::Errno(match errno() {
            0 => libc::ENOMEM,
            e => e,
        }));
    }
    let off = if offset == -1 { buf as u64 } else { offset as u64 };
    c.maps.push(Mapping { mr, offset: off, slot, pending: write });
    Ok(off as i64)
}

/// `riounmap`: the mapping of exactly (`buf`, `len`); EINVAL for none. The
/// peer is not told (nor does upstream tell it).
pub fn unmap(s: &Shared<RSocket>, buf: *mut u8, len: usize) -> Result<()> {
    let mut g = s.lock();
    let c = g.conn.as_mut().ok_or(Error::INVAL)?;
    let i = c.maps.iter().position(|m| m.addr() == buf as u64 && m.len() == len).ok_or(Error::INVAL)?;
    c.maps.remove(i);
    Ok(())
}

/// Send the mappings the peer does not know yet (before any data).
#[inline]
pub fn flush(g: &mut Inner, nonblock: bool) -> Result<()> {
    let _ = nonblock;
    match g.conn.as_mut() {
        Some(c) if !c.maps.is_empty() => flush_maps(c),
        _ => Ok(()),
    }
}

#[inline(never)]
fn flush_maps(c: &mut super::stream::Conn) -> Result<()> {
    while let Some(i) = c.maps.iter().position(|m| m.pending) {
        let m = &c.maps[i];
        let Some(slot) = m.slot else { break };
        let e = Iomap { offset: m.offset, sge: Sge { addr: m.addr(), key: m.rkey(), length: m.len() as u32 } };
        if !c.post_iomap(slot, &e)? {
            // No room now: sent with a later call.
            return Ok(());
        }
        c.maps[i].pending = false;
    }
    Ok(())
}

/// `riowrite`: write into the peer's mapping at `offset`; the bytes
/// written (a partial count at an unmapped offset).
pub fn write(s: &Shared<RSocket>, src: &[IoSlice], mut offset: u64, flags: i32) -> Result<usize> {
    let mut g = s.lock();
    let nonblock = g.opts.nonblocking() || flags & libc::MSG_DONTWAIT != 0;
    if g.phase != Phase::Connected {
        return Err(Error::Errno(if g.phase.opening() { libc::EAGAIN } else { libc::ENOTCONN }));
    }
    flush(&mut g, nonblock)?;
    let mut src = Src::new(src);
    let total = src.remaining();
    let mut done = 0;
    let mut limit = super::flow::FIRST_CHUNK;
    while done < total {
        let Some(c) = g.conn.as_mut() else { break };
        let Some(entry) = c.find_iomap(offset) else { break };
        // Offsets are the peer's: arithmetic that wraps, not panics.
        let room = entry.offset.wrapping_add(entry.sge.length as u64).wrapping_sub(offset).min(u32::MAX as u64) as u32;
        let n = c.write_direct(&mut src, &entry, offset, limit.min(room))?;
        if n > 0 {
            done += n as usize;
            offset += n as u64;
            limit = (limit * 2).min(super::flow::MAX_CHUNK);
            continue;
        }
        socket::progress(&mut g);
        if g.phase != Phase::Connected || !g.wr {
            return if done > 0 { Ok(done) } else { Err(Error::Errno(libc::ECONNRESET)) };
        }
        if g.conn.as_ref().is_some_and(|c| c.can_send()) {
            continue;
        }
        if nonblock {
            return if done > 0 { Ok(done) } else { Err(Error::Errno(libc::EAGAIN)) };
        }
        drop(g);
        wait_cq(s);
        g = s.lock();
    }
    let _ = wire::IOMAP_LEN;
    Ok(done)
}

/// One bounded sleep on the connection's completions.
fn wait_cq(s: &RSocket) {
    let comp = {
        let mut g = s.lock();
        match socket::arm_for_wait(&mut g, true) {
            Some((fd, false)) => {
                s.watch_off(&g);
                fd
            }
            _ => return,
        }
    };
    let mut p = [
        libc::pollfd { fd: comp, events: libc::POLLIN, revents: 0 },
        libc::pollfd { fd: s.fd(), events: 0, revents: 0 },
    ];
    // SAFETY: two valid pollfds.
    unsafe { crate::sys::poll(p.as_mut_ptr(), 2, 1000) };
    let mut g = s.lock();
    if let Some(c) = g.conn.as_mut() {
        c.drain_events();
    }
}
