//! One stream connection: its verbs resources (a completion channel, a
//! receive CQ and a send CQ on it, an RC QP made through the CM, the three
//! registered regions) and its
//! data path over the rsocket wire protocol (docs/rsockets.md): data as
//! RDMA WRITE WITH IMMEDIATE into the peer's ring, credit updates into the
//! peer's target SGL table, control messages, keepalives.
//!
//! Everything here runs under the socket's mutex and never blocks.
//! Whatever the peer writes into our memory (target SGL entries) or reports
//! (immediates) is checked by [`Flow`] before use; a peer that breaks the
//! protocol gets the connection reset.

use super::config::Opts;
use super::flow::{self, Flow};
use super::mem::Mapping;
use super::mem::Region;
use super::wire::{self, ConnData, Iomap, Sge};
use crate::abi::*;
use crate::cm::{id::Id, qp};
use crate::cmem::Shared;
use crate::error::{errno, Error, Result};
use crate::verbs;
use std::io::{IoSlice, IoSliceMut};
use std::sync::atomic::AtomicBool;

/// Work request ids: receives have bit 63; sends carry their message
/// (operation and length) in the low 32 bits.
const RECV: u64 = 1 << 63;
/// Queue sizes are clamped to this range (upstream's).
const QP_MIN: u32 = 16;
const QP_MAX: u32 = 0xFFFE;
/// Completions taken per poll.
const POLL_BATCH: usize = 16;

pub(crate) fn last_err(default: i32) -> Error {
    Error::Errno(match errno() {
        0 => default,
        e => e,
    })
}

/// The QP, destroyed (through the CM, which owns it) before the CQ.
pub(crate) struct QpOwner {
    pub(crate) id: Shared<Id>,
}

impl Drop for QpOwner {
    fn drop(&mut self) {
        // Destroyed as it is, not moved to the error state first: the
        // device finishes the packet it is processing (and sends its ACK)
        // before the QP goes; see `api::shutdown`.
        qp::destroy_qp(&self.id);
    }
}

/// The CQ; its events are acked before it is destroyed.
pub(crate) struct CqOwner {
    pub(crate) cq: *mut ibv_cq,
    pub(crate) unacked: u32,
}

impl Drop for CqOwner {
    fn drop(&mut self) {
        // SAFETY: our CQ; the QP using it is gone.
        unsafe {
            if self.unacked > 0 {
                verbs::ibv_ack_cq_events(self.cq, self.unacked);
            }
            verbs::ibv_destroy_cq(self.cq);
        }
    }
}

/// A completion channel, destroyed after its CQs.
pub(crate) struct CompOwner(pub(crate) *mut ibv_comp_channel);

impl Drop for CompOwner {
    fn drop(&mut self) {
        // SAFETY: our channel; its CQ is gone.
        unsafe { verbs::ibv_destroy_comp_channel(self.0) };
    }
}

/// A completion channel made non-blocking and the receive and send CQs
/// (`rq` and `sq` entries) on it, on the open context `ctx`: what a stream
/// and a datagram QP are both built on. Returned in the order they must be
/// bound (dropped in reverse: the CQs before their channel).
pub(crate) fn new_cqs(ctx: *mut ibv_context, rq: u32, sq: u32) -> Result<(CompOwner, i32, CqOwner, CqOwner)> {
    // SAFETY: an open context.
    let ch = unsafe { verbs::ibv_create_comp_channel(ctx) };
    if ch.is_null() {
        return Err(last_err(libc::ENOMEM));
    }
    let comp = CompOwner(ch);
    // SAFETY: a live channel; its fd is ours to make non-blocking.
    let comp_fd = unsafe { (*ch).fd };
    // SAFETY: plain fcntl on the channel's fd.
    unsafe {
        let fl = libc::fcntl(comp_fd, libc::F_GETFL);
        libc::fcntl(comp_fd, libc::F_SETFL, fl | libc::O_NONBLOCK);
    }
    let new_cq = |n: u32| {
        // SAFETY: open context, our channel.
        let cq = unsafe { verbs::ibv_create_cq(ctx, n as i32, std::ptr::null_mut(), ch, 0) };
        if cq.is_null() {
            Err(last_err(libc::ENOMEM))
        } else {
            Ok(CqOwner { cq, unacked: 0 })
        }
    };
    let rcq = new_cq(rq)?;
    let scq = new_cq(sq)?;
    Ok((comp, comp_fd, rcq, scq))
}

/// A receive request (no SGE: data arrives by RDMA WRITE WITH IMMEDIATE),
/// followed by `next`.
#[inline(always)]
fn recv_wr(next: *mut ibv_recv_wr) -> ibv_recv_wr {
    ibv_recv_wr { wr_id: RECV, next, sg_list: std::ptr::null_mut(), num_sge: 0 }
}

/// What polling the CQ found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Polled {
    /// What the completions said that changes the socket's state: the
    /// `Polled::*` bits (0 for the commonest poll: data and finished sends).
    pub news: u8,
    /// The errno of a failed repost (with `REPOST_FAILED`).
    pub repost_errno: i32,
    /// A CQ had completions, or the send CQ was polled: the state may have
    /// changed (false: the call found nothing and changed nothing).
    pub polled: bool,
}

impl Polled {
    /// The peer shut down its sending side.
    pub(crate) const PEER_SHUTDOWN: u8 = 1;
    /// The peer disconnected.
    pub(crate) const PEER_DISCONNECT: u8 = 2;
    /// Our DISCONNECT went out.
    pub(crate) const DISCONNECT_SENT: u8 = 4;
    /// A send failed (the connection is broken).
    pub(crate) const SEND_FAILED: u8 = 8;
    /// The peer broke the protocol (a `flow::Violation`).
    pub(crate) const VIOLATION: u8 = 16;
    /// Receives could not be reposted (`repost_errno`).
    pub(crate) const REPOST_FAILED: u8 = 32;

    #[inline(always)]
    pub fn has(&self, bit: u8) -> bool {
        self.news & bit != 0
    }
}

pub struct Conn {
    // Declaration order is drop order: QP, CQs, channel, then memory.
    qp_owner: QpOwner,
    rcq: CqOwner,
    scq: CqOwner,
    comp: CompOwner,
    rbuf: Region,
    sbuf: Region,
    target: Region,
    qp: *mut ibv_qp,
    pub comp_fd: i32,
    /// The channel is out of the engine's epoll set (`socket::engine_watch`).
    pub watch_removed: AtomicBool,
    pub flow: Flow,
    /// The peer's target SGL table (length: its entry count) and iomap table
    /// (length: entries); whether structures written there are swapped.
    peer_sgl: Sge,
    peer_iomap: Sge,
    swap: bool,
    pub sq_size: u32,
    pub rq_size: u32,
    pub sq_inline: u32,
    sbuf_size: u32,
    pub iomap_size: u32,
    /// Whether each CQ is armed (its next completion raises an event).
    /// Receives (data, credits, the peer's control messages) and sends
    /// complete on separate CQs so that a caller can ask to hear of
    /// receives only: send completions matter only while sending waits.
    r_armed: bool,
    s_armed: bool,
    /// A completion event is waiting on the channel, unread (a sleeper
    /// woke for it; it is read when the next wait begins).
    pub event_unread: bool,
    /// Completions taken so far (a waiter sees whether anything moved).
    pub epoch: u64,
    /// Our riomap registrations.
    pub maps: Vec<Mapping>,
}

// SAFETY: libibverbs objects, used under the socket's mutex.
unsafe impl Send for Conn {}

/// An iterator over the caller's send buffers.
pub struct Src<'a, 'b> {
    bufs: &'a [IoSlice<'b>],
    i: usize,
    off: usize,
}

impl<'a, 'b> Src<'a, 'b> {
    pub fn new(bufs: &'a [IoSlice<'b>]) -> Self {
        Src { bufs, i: 0, off: 0 }
    }

    pub fn remaining(&self) -> usize {
        self.bufs[self.i.min(self.bufs.len())..].iter().map(|b| b.len()).sum::<usize>() - self.off
    }

    /// The next contiguous piece of at most `max` bytes (consumed).
    fn take(&mut self, max: usize) -> &'b [u8] {
        while self.i < self.bufs.len() && self.off == self.bufs[self.i].len() {
            self.i += 1;
            self.off = 0;
        }
        let Some(b) = self.bufs.get(self.i) else { return &[] };
        // SAFETY: IoSlice derefs to its bytes for 'b; re-borrowed at 'b.
        let s: &'b [u8] = unsafe { std::slice::from_raw_parts(b.as_ptr(), b.len()) };
        let n = (s.len() - self.off).min(max);
        let out = &s[self.off..self.off + n];
        self.off += n;
        out
    }

    /// A contiguous view of the next `n` bytes, if they lie in one buffer.
    fn peek_contiguous(&mut self, n: usize) -> Option<&'b [u8]> {
        while self.i < self.bufs.len() && self.off == self.bufs[self.i].len() {
            self.i += 1;
            self.off = 0;
        }
        let b = self.bufs.get(self.i)?;
        // SAFETY: as in take.
        let s: &'b [u8] = unsafe { std::slice::from_raw_parts(b.as_ptr(), b.len()) };
        (s.len() - self.off >= n).then(|| &s[self.off..self.off + n])
    }
}

impl Conn {
    /// The connection's resources on the id's device: sizes clamped to
    /// what the device allows, receives posted, the CQ armed.
    pub fn new(id: &Shared<Id>, o: &Opts) -> Result<Box<Conn>> {
        let dev = id.device().ok_or(Error::Errno(libc::ENODEV))?;
        let opened = dev.opened();
        if id.transport() == Some(verbs::IBV_TRANSPORT_IWARP) {
            // iWARP has no RDMA WRITE WITH IMMEDIATE; its message mode is
            // not implemented.
            return Err(Error::Errno(libc::ENOTSUP));
        }
        let max = (opened.max_qpsize.max(0) as u32).min(QP_MAX);
        let clamp = |v: u32| v.max(QP_MIN).min(max.max(QP_MIN));
        let (sq_size, rq_size) = (clamp(o.sq_size), clamp(o.rq_size));
        let ctx = opened.verbs;
        let (comp, comp_fd, rcq, scq) = new_cqs(ctx, rq_size, sq_size)?;
        let mut attr = ibv_qp_init_attr {
            qp_context: std::ptr::null_mut(),
            send_cq: scq.cq,
            recv_cq: rcq.cq,
            srq: std::ptr::null_mut(),
            cap: ibv_qp_cap {
                max_send_wr: sq_size,
                max_recv_wr: rq_size,
                max_send_sge: 2,
                max_recv_sge: 1,
                max_inline_data: o.sq_inline,
            },
            qp_type: IBV_QPT_RC as u32,
            sq_sig_all: 1,
        };
        qp::create_qp(id, std::ptr::null_mut(), &mut attr)?;
        let qp_owner = QpOwner { id: id.clone() };
        let qp = id.qp();
        let sq_inline = attr.cap.max_inline_data;
        let pd = id.pd();
        let rbuf_size = o.rbuf_size.max(2 * flow::SEND_LOWAT) & !1;
        let sbuf_size = o.sbuf_size.max(2 * flow::SEND_LOWAT);
        let local = verbs::IBV_ACCESS_LOCAL_WRITE;
        let remote = local | verbs::IBV_ACCESS_REMOTE_WRITE;
        // SAFETY: the id's PD, alive while the id uses its device.
        let (sbuf, target, rbuf) = unsafe {
            (
                Region::new(pd, sbuf_size as usize + flow::CTRL_SLOTS as usize * wire::SGE_LEN, local)?,
                Region::new(pd, wire::SGL_SIZE * wire::SGE_LEN + o.iomap_size as usize * wire::IOMAP_LEN, remote)?,
                Region::new(pd, rbuf_size as usize, remote)?,
            )
        };
        let flow =
            Flow::new(sq_size, rq_size as u16, sbuf_size, rbuf_size, 0, wire::SGL_SIZE as u32).ok_or(Error::NOMEM)?;
        let mut c = crate::cmem::try_box(Conn {
            qp_owner,
            rcq,
            scq,
            comp,
            rbuf,
            sbuf,
            target,
            qp,
            comp_fd,
            watch_removed: AtomicBool::new(false),
            flow,
            peer_sgl: Sge::default(),
            peer_iomap: Sge::default(),
            swap: false,
            sq_size,
            rq_size,
            sq_inline,
            sbuf_size,
            iomap_size: o.iomap_size,
            r_armed: false,
            s_armed: false,
            event_unread: false,
            epoch: 0,
            maps: Vec::new(),
        })?;
        c.post_recvs(rq_size)?;
        c.arm(false);
        Ok(c)
    }

    /// Our connection data.
    pub fn conn_data(&self) -> ConnData {
        ConnData {
            version: wire::VERSION,
            flags: wire::FLAG_IOMAP | if wire::host_is_net() { wire::FLAG_NET } else { 0 },
            credits: self.rq_size as u16,
            iomap_size: wire::value_to_scale(self.iomap_size),
            target_sgl: Sge { addr: self.target.addr(), key: self.target.rkey(), length: wire::SGL_SIZE as u32 },
            data_buf: Sge { addr: self.rbuf.addr(), key: self.rbuf.rkey(), length: self.flow.rbuf_size / 2 },
        }
    }

    /// The peer's connection data arrived: sending may begin.
    pub fn set_peer(&mut self, peer: &ConnData) {
        self.peer_sgl = Sge { length: peer.target_sgl.length.clamp(1, 64), ..peer.target_sgl };
        self.swap = peer.needs_swap();
        if peer.flags & wire::FLAG_IOMAP != 0 {
            self.peer_iomap = Sge {
                addr: peer.target_sgl.addr.wrapping_add((wire::SGE_LEN as u64) * self.peer_sgl.length as u64),
                key: peer.target_sgl.key,
                length: wire::scale_to_value(peer.iomap_size),
            };
        }
        self.flow.sseq_comp = peer.credits;
        self.flow.set_peer_sgl_count(self.peer_sgl.length);
        self.flow.set_first_sge(peer.data_buf);
    }

    /// Post `n` receives (with no SGE: data arrives by RDMA WRITE WITH
    /// IMMEDIATE).
    #[inline(always)]
    fn post_recvs(&mut self, n: u32) -> Result<()> {
        if n > 1 {
            return self.post_recv_chains(n);
        }
        if n == 1 {
            let mut wr = recv_wr(std::ptr::null_mut());
            // SAFETY: one receive.
            return unsafe { self.post_recv_list(&mut wr) };
        }
        Ok(())
    }

    /// Post the receives chained from `first`.
    ///
    /// # Safety
    /// `first` and the entries it chains are valid receive requests.
    #[inline(always)]
    unsafe fn post_recv_list(&mut self, first: *mut ibv_recv_wr) -> Result<()> {
        let mut bad = std::ptr::null_mut();
        // SAFETY: our live QP; the chain as the caller promises.
        match unsafe { verbs::post_recv(self.qp, first, &mut bad) } {
            0 => Ok(()),
            e => Err(Error::Errno(e)),
        }
    }

    /// [`post_recvs`](Self::post_recvs) of several, chained, up to
    /// POLL_BATCH in one call: the receives a connection starts with in a
    /// few calls rather than one each, a poll's reposts in one.
    #[inline(never)]
    fn post_recv_chains(&mut self, mut n: u32) -> Result<()> {
        // Only the entries of each chain are written.
        let mut wrs = std::mem::MaybeUninit::<[ibv_recv_wr; POLL_BATCH]>::uninit();
        let base = wrs.as_mut_ptr() as *mut ibv_recv_wr;
        while n > 0 {
            let k = (n as usize).min(POLL_BATCH);
            for i in 0..k {
                let next = if i + 1 < k { base.wrapping_add(i + 1) } else { std::ptr::null_mut() };
                // SAFETY: i < k <= POLL_BATCH: an element of the array.
                unsafe { base.add(i).write(recv_wr(next)) };
            }
            // SAFETY: a chain of k receives written above.
            unsafe { self.post_recv_list(base) }?;
            n -= k as u32;
        }
        Ok(())
    }

    /// Post one send: an RDMA WRITE (with immediate `imm`, host order, if
    /// given) of `sges` to `remote`/`rkey`.
    #[link_section = ".text.sorted.rdmacm.2"]
    fn post(
        &mut self,
        sges: &mut [ibv_sge],
        imm: Option<u32>,
        flags: u32,
        remote: u64,
        rkey: u32,
        wr_id: u64,
    ) -> Result<()> {
        let mut wr = ibv_send_wr::zeroed();
        wr.wr_id = wr_id;
        wr.sg_list = if sges.is_empty() { std::ptr::null_mut() } else { sges.as_mut_ptr() };
        wr.num_sge = sges.len() as i32;
        wr.send_flags = flags;
        match imm {
            Some(v) => {
                wr.opcode = verbs::IBV_WR_RDMA_WRITE_WITH_IMM;
                wr.imm_data = v.to_be();
            }
            None => wr.opcode = verbs::IBV_WR_RDMA_WRITE,
        }
        wr.wr.rdma = ibv_send_wr_rdma { remote_addr: remote, rkey };
        let mut bad = std::ptr::null_mut();
        // SAFETY: our live QP; the SGEs point into registered regions or
        // (inline) into memory valid for the call.
        match unsafe { verbs::post_send(self.qp, &mut wr, &mut bad) } {
            0 => Ok(()),
            e => Err(Error::Errno(e)),
        }
    }

    /// A control message (no payload, no credit).
    pub fn post_ctrl(&mut self, data: u32) -> Result<()> {
        let m = wire::imm(wire::OP_CTRL, data);
        self.flow.ctrl_posted();
        self.post(&mut [], Some(m), 0, 0, 0, m as u64)
    }

    /// A keepalive: a zero-length RDMA WRITE without immediate (the peer
    /// sees nothing; a dead path fails the send).
    pub fn post_keepalive(&mut self) -> Result<()> {
        if !self.flow.ctrl_free() {
            return Ok(());
        }
        self.flow.ctrl_posted();
        self.post(&mut [], None, 0, 0, 0, wire::imm(wire::OP_CTRL, wire::CTRL_KEEPALIVE) as u64)
    }

    /// Send a credit update when one is due.
    #[inline]
    pub fn send_credits(&mut self) -> Result<()> {
        if !self.flow.credit_due() {
            return Ok(());
        }
        std::hint::cold_path();
        self.post_credit_update()
    }

    /// The credit update [`send_credits`](Self::send_credits) found due.
    #[inline(never)]
    fn post_credit_update(&mut self) -> Result<()> {
        let u = self.flow.take_credit_update(self.rbuf.addr(), self.rbuf.rkey());
        self.flow.ctrl_posted();
        let m = wire::imm(wire::OP_SGL, u.credits);
        match u.sge {
            None => self.post(&mut [], Some(m), 0, 0, 0, m as u64),
            Some((sge, idx)) => {
                let bytes = sge.to_peer(self.swap);
                let remote = self.peer_sgl.addr.wrapping_add(idx as u64 * wire::SGE_LEN as u64);
                if self.sq_inline as usize >= wire::SGE_LEN {
                    let mut s = [ibv_sge { addr: bytes.as_ptr() as u64, length: wire::SGE_LEN as u32, lkey: 0 }];
                    self.post(&mut s, Some(m), verbs::IBV_SEND_INLINE, remote, self.peer_sgl.key, m as u64)
                } else {
                    let slot = (self.flow.ctrl_seqno % flow::CTRL_SLOTS) as usize;
                    let off = self.sbuf_size as usize + slot * wire::SGE_LEN;
                    self.sbuf.write(off, &bytes);
                    let mut s = [ibv_sge {
                        addr: self.sbuf.addr() + off as u64,
                        length: wire::SGE_LEN as u32,
                        lkey: self.sbuf.lkey(),
                    }];
                    self.post(&mut s, Some(m), 0, remote, self.peer_sgl.key, m as u64)
                }
            }
        }
    }

    /// Take a new target SGE the peer wrote into our table, if needed.
    fn refill(&mut self) {
        let t = &self.target;
        self.flow.refill_sge(
            |i| {
                let mut b = [0u8; wire::SGE_LEN];
                t.read(i * wire::SGE_LEN, &mut b);
                Sge::from_local(&b)
            },
            |i| t.write(i * wire::SGE_LEN + 12, &[0; 4]),
        );
    }

    pub fn has_data(&self) -> bool {
        self.flow.has_data()
    }

    /// Whether a data message may be sent (taking a new target SGE if the
    /// peer wrote one).
    #[inline]
    pub fn can_send(&self) -> bool {
        self.flow.can_send() || self.can_send_next()
    }

    /// [`can_send`](Self::can_send) once the current target SGE is used up.
    #[inline(never)]
    fn can_send_next(&self) -> bool {
        // The table may hold a new entry: look without taking it.
        let mut b = [0u8; wire::SGE_LEN];
        let i = self.flow.target_index();
        self.target.read(i * wire::SGE_LEN, &mut b);
        self.flow.can_send_with(Sge::from_local(&b))
    }

    /// Post `len` bytes from `src` written to `remote`/`rkey` (with
    /// immediate `imm`, if given): inline from the caller's memory when
    /// they fit and are contiguous, else copied into the send ring at `off`
    /// (two SGEs when the copy wraps).
    #[allow(clippy::too_many_arguments)]
    fn post_ring(
        &mut self,
        src: &mut Src,
        off: u32,
        len: u32,
        imm: Option<u32>,
        remote: u64,
        rkey: u32,
        wr_id: u64,
    ) -> Result<()> {
        if len <= self.sq_inline {
            if let Some(b) = src.peek_contiguous(len as usize) {
                let mut s = [ibv_sge { addr: b.as_ptr() as u64, length: len, lkey: 0 }];
                self.post(&mut s, imm, verbs::IBV_SEND_INLINE, remote, rkey, wr_id)?;
                src.take(len as usize);
                return Ok(());
            }
        }
        let off = off as usize;
        let size = self.sbuf_size as usize;
        let first = (len as usize).min(size - off);
        let mut copied = 0;
        while copied < len as usize {
            // (off + copied) % size: off < size, copied < len <= size.
            let at = if off + copied < size { off + copied } else { (off + copied - size) % size };
            let room = if copied < first { first - copied } else { len as usize - copied };
            let piece = src.take(room);
            if piece.is_empty() {
                return Err(Error::INVAL);
            }
            self.sbuf.write(at, piece);
            copied += piece.len();
        }
        let (lkey, base) = (self.sbuf.lkey(), self.sbuf.addr());
        let flags = if len <= self.sq_inline { verbs::IBV_SEND_INLINE } else { 0 };
        if first == len as usize {
            let mut s = [ibv_sge { addr: base + off as u64, length: len, lkey }];
            self.post(&mut s, imm, flags, remote, rkey, wr_id)
        } else {
            let mut s = [
                ibv_sge { addr: base + off as u64, length: first as u32, lkey },
                ibv_sge { addr: base, length: len - first as u32, lkey },
            ];
            self.post(&mut s, imm, flags, remote, rkey, wr_id)
        }
    }

    /// Send one chunk of at most `limit` bytes from `src`, which holds
    /// `left` bytes; the bytes sent (0 when nothing may be sent now).
    #[inline(always)]
    pub fn send_chunk(&mut self, src: &mut Src, left: usize, limit: u32) -> Result<u32> {
        self.refill();
        let want = left.min(u32::MAX as usize) as u32;
        let Some(c) = self.flow.next_chunk(want, limit) else { return Ok(0) };
        let m = wire::imm(wire::OP_DATA, c.len);
        self.post_ring(src, c.sbuf_offset, c.len, Some(m), c.remote_addr, c.rkey, m as u64)?;
        Ok(c.len)
    }

    /// A small send taken whole: `b` (1 to `sq_inline` bytes, at most the
    /// first chunk) posted inline straight from the caller's memory as one
    /// data message, when the peer's ring and our budgets have room for all
    /// of it now; None leaves it to [`send_chunk`](Self::send_chunk) (same
    /// message, same accounting, when it fits).
    #[inline(always)]
    pub fn send_whole_inline(&mut self, b: &[u8]) -> Option<Result<()>> {
        let len = b.len() as u32;
        if b.is_empty() || b.len() > self.sq_inline as usize {
            return None;
        }
        self.refill();
        if !self.flow.fits_whole(len) {
            return None;
        }
        let c = self.flow.next_chunk(len, flow::FIRST_CHUNK)?;
        let m = wire::imm(wire::OP_DATA, c.len);
        let mut s = [ibv_sge { addr: b.as_ptr() as u64, length: c.len, lkey: 0 }];
        Some(self.post(&mut s, Some(m), verbs::IBV_SEND_INLINE, c.remote_addr, c.rkey, m as u64))
    }

    /// The peer's iomap table length (how many buffers we may map).
    pub fn peer_iomap_len(&self) -> u32 {
        self.peer_iomap.length
    }

    /// Write an iomap entry into slot `slot` of the peer's table (an
    /// IOMAP_SGL message); false when it cannot go now.
    pub fn post_iomap(&mut self, slot: u32, e: &Iomap) -> Result<bool> {
        self.refill();
        if slot >= self.peer_iomap.length {
            return Err(Error::INVAL);
        }
        let bytes = e.to_peer(self.swap);
        let Some(off) = self.flow.take_ring(wire::IOMAP_LEN as u32, true) else { return Ok(false) };
        let m = wire::imm(wire::OP_IOMAP_SGL, slot);
        let remote = self.peer_iomap.addr.wrapping_add(slot as u64 * wire::IOMAP_LEN as u64);
        let bufs = [IoSlice::new(&bytes)];
        let mut src = Src::new(&bufs);
        self.post_ring(&mut src, off, wire::IOMAP_LEN as u32, Some(m), remote, self.peer_iomap.key, m as u64)?;
        Ok(true)
    }

    /// The entry of our iomap table (written by the peer) that contains
    /// `offset`.
    pub fn find_iomap(&self, offset: u64) -> Option<Iomap> {
        (0..self.iomap_size as usize).find_map(|i| {
            let mut b = [0u8; wire::IOMAP_LEN];
            self.target.read(wire::SGL_SIZE * wire::SGE_LEN + i * wire::IOMAP_LEN, &mut b);
            let e = Iomap::from_local(&b);
            (offset >= e.offset && offset - e.offset < e.sge.length as u64).then_some(e)
        })
    }

    /// An riowrite chunk of at most `limit` bytes: a plain RDMA WRITE into
    /// the peer's mapping `e` at `offset` (no credit, no notification).
    pub fn write_direct(&mut self, src: &mut Src, e: &Iomap, offset: u64, limit: u32) -> Result<u32> {
        self.refill();
        let want = (src.remaining().min(u32::MAX as usize) as u32).min(limit).min(self.flow.sbuf_avail);
        if want == 0 {
            return Ok(0);
        }
        let Some(off) = self.flow.take_ring(want, false) else { return Ok(0) };
        let remote = e.sge.addr.wrapping_add(offset - e.offset);
        self.post_ring(src, off, want, None, remote, e.sge.key, wire::imm(wire::OP_WRITE, want) as u64)?;
        Ok(want)
    }

    /// Drop whatever data is queued (consumed, so credits go back).
    pub fn discard_all(&mut self) {
        while let Some((_, n)) = self.flow.next_read(usize::MAX) {
            if n == 0 {
                break;
            }
            self.flow.consumed(n);
        }
    }

    /// Take queued data into `buf` (consumed): the bytes copied, fewer
    /// than `buf.len()` only when nothing more is queued.
    #[inline(always)]
    pub fn recv_one(&mut self, buf: &mut [u8]) -> usize {
        let mut off = 0;
        while off < buf.len() {
            let Some((at, n)) = self.flow.take_run(buf.len() - off) else { break };
            self.rbuf.read(at as usize, &mut buf[off..off + n as usize]);
            off += n as usize;
        }
        off
    }

    /// Copy queued data into `dst` (consuming it unless `peek`); the bytes
    /// copied.
    #[inline(always)]
    pub fn recv_into(&mut self, dst: &mut [IoSliceMut], peek: bool) -> usize {
        let mut total = 0;
        if !peek {
            // A receive consumes each run as it takes it.
            for b in dst.iter_mut() {
                let n = self.recv_one(b);
                total += n;
                if n < b.len() {
                    break;
                }
            }
            return total;
        }
        // A peek reads from a position of its own.
        let mut state = self.flow.read_state();
        for b in dst.iter_mut() {
            let mut off = 0;
            while off < b.len() {
                let run = self.flow.next_read_from(&state, b.len() - off);
                let Some((at, n)) = run.inspect(|&(_, n)| self.flow.advance(&mut state, n)) else { return total };
                self.rbuf.read(at as usize, &mut b[off..off + n as usize]);
                off += n as usize;
                total += n as usize;
            }
        }
        total
    }

    /// Arm the receive CQ and, if `send`, the send CQ (each once until
    /// its next event); true if one was armed now (completions that came
    /// before raised no event: poll again).
    pub fn arm(&mut self, send: bool) -> bool {
        let mut newly = false;
        if !self.r_armed {
            // SAFETY: our live CQ.
            unsafe { verbs::req_notify_cq(self.rcq.cq, 0) };
            self.r_armed = true;
            newly = true;
        }
        if send && !self.s_armed {
            // SAFETY: our live CQ.
            unsafe { verbs::req_notify_cq(self.scq.cq, 0) };
            self.s_armed = true;
            newly = true;
        }
        newly
    }

    /// Whether a waiter (or the engine, for a descriptor that must turn
    /// writable) needs to hear of send completions: sending or a control
    /// message (a credit update) waits for them.
    pub fn needs_send_events(&self) -> bool {
        !self.can_send() || self.flow.ctrl_outstanding()
    }

    /// Read the completion events waiting on the channel (non-blocking);
    /// true if there were any. Each armed CQ raises at most one event, so
    /// nothing is read once neither is armed.
    pub fn drain_events(&mut self) -> bool {
        self.event_unread = false;
        let mut got = false;
        while self.r_armed || self.s_armed {
            let mut cq = std::ptr::null_mut();
            let mut ctx = std::ptr::null_mut();
            // SAFETY: our channel, non-blocking.
            if unsafe { verbs::ibv_get_cq_event(self.comp.0, &mut cq, &mut ctx) } != 0 {
                break;
            }
            got = true;
            let limit = self.sq_size + self.rq_size;
            let owner = if cq == self.rcq.cq {
                self.r_armed = false;
                &mut self.rcq
            } else {
                self.s_armed = false;
                &mut self.scq
            };
            owner.unacked += 1;
            if owner.unacked >= limit {
                // SAFETY: our CQ; unacked events of it.
                unsafe { verbs::ibv_ack_cq_events(owner.cq, owner.unacked) };
                owner.unacked = 0;
            }
        }
        got
    }

    /// Take every completion: received messages into the flow state,
    /// finished sends back to the budgets; receives reposted while
    /// `connected`. After it, `sends_idle` is exact.
    #[inline]
    pub fn poll(&mut self, connected: bool) -> Polled {
        self.poll_with(connected, !self.sends_idle())
    }

    /// [`poll`](Self::poll) for the data calls: the send CQ is polled only
    /// when send resources run short or a control message is in flight
    /// ([`Flow::sends_plenty`](flow::Flow::sends_plenty)), or a receive
    /// failed (the QP broke: a send's failure says how); otherwise its
    /// completions wait for a later poll and are taken in a batch. Whatever
    /// decides on `sends_idle` polls with [`poll`](Self::poll) first.
    #[inline(always)]
    pub fn poll_lazy(&mut self, connected: bool) -> Polled {
        // (Idle first: the commonest case, and the cheaper test.)
        self.poll_with(connected, !self.flow.sends_idle() && !self.flow.sends_plenty())
    }

    #[inline(always)]
    fn poll_with(&mut self, connected: bool, sends: bool) -> Polled {
        let mut wcs = std::mem::MaybeUninit::<[ibv_wc; POLL_BATCH]>::uninit();
        let base = wcs.as_mut_ptr() as *mut ibv_wc;
        // SAFETY: our live CQ; room for POLL_BATCH completions.
        let n = unsafe { verbs::poll_cq(self.rcq.cq, POLL_BATCH as i32, base) };
        if n <= 0 && !sends {
            // Nothing (the call that finds nothing: kept short).
            return Polled::default();
        }
        self.poll_rest(connected, sends, n, base)
    }

    /// [`poll`](Self::poll) once something may have completed: the first
    /// batch of the receive CQ (`n` completions at `wcs`, room for
    /// POLL_BATCH), the rest of it, the send CQ if `sends` (or a receive
    /// failed and sends are outstanding), the reposts.
    #[inline(never)]
    #[link_section = ".text.sorted.rdmacm.2"]
    fn poll_rest(&mut self, connected: bool, mut sends: bool, mut n: i32, wcs: *mut ibv_wc) -> Polled {
        let mut p = Polled { polled: true, ..Polled::default() };
        let mut reposts = 0u32;
        for cq in [self.rcq.cq, self.scq.cq] {
            if cq == self.scq.cq {
                if !sends {
                    break;
                }
                // SAFETY: our live CQ; room for POLL_BATCH completions.
                n = unsafe { verbs::poll_cq(cq, POLL_BATCH as i32, wcs) };
            }
            while n > 0 {
                self.epoch += n as u64;
                for i in 0..n as usize {
                    // SAFETY: the provider filled the first n entries.
                    let wc = unsafe { &*wcs.add(i) };
                    if wc.status != verbs::IBV_WC_SUCCESS && !sends && !self.sends_idle() {
                        sends = true;
                    }
                    self.completed(wc, &mut p, &mut reposts);
                }
                if (n as usize) < POLL_BATCH {
                    break;
                }
                // SAFETY: as above.
                n = unsafe { verbs::poll_cq(cq, POLL_BATCH as i32, wcs) };
            }
        }
        if connected && !p.has(Polled::VIOLATION) {
            if let Err(Error::Errno(e)) = self.post_recvs(reposts) {
                p.news |= Polled::REPOST_FAILED;
                p.repost_errno = e;
            }
        }
        p
    }

    fn completed(&mut self, wc: &ibv_wc, p: &mut Polled, reposts: &mut u32) {
        if wc.wr_id & RECV != 0 {
            if wc.status != verbs::IBV_WC_SUCCESS {
                return;
            }
            *reposts += 1;
            if p.has(Polled::VIOLATION) {
                return;
            }
            match self.flow.received(u32::from_be(wc.imm_data)) {
                Ok(flow::Event::Disconnect) => p.news |= Polled::PEER_DISCONNECT,
                Ok(flow::Event::Shutdown) => p.news |= Polled::PEER_SHUTDOWN,
                Ok(_) => {}
                Err(_) => p.news |= Polled::VIOLATION,
            }
            return;
        }
        let msg = wc.wr_id as u32;
        let len = msg & 0x1fff_ffff;
        match msg >> 29 {
            wire::OP_SGL => self.flow.ctrl_done(),
            wire::OP_CTRL => {
                self.flow.ctrl_done();
                if len == wire::CTRL_DISCONNECT && wc.status == verbs::IBV_WC_SUCCESS {
                    p.news |= Polled::DISCONNECT_SENT;
                }
            }
            wire::OP_IOMAP_SGL => self.flow.data_sent(wire::IOMAP_LEN as u32),
            _ => self.flow.data_sent(len),
        }
        if wc.status != verbs::IBV_WC_SUCCESS {
            p.news |= Polled::SEND_FAILED;
        }
    }

    /// Every send (data and control) has completed.
    pub fn sends_idle(&self) -> bool {
        self.flow.sends_idle()
    }

    /// Move the QP to the error state (flushing what is posted).
    pub fn to_error(&self) {
        let _ = qp::to_state(&self.qp_owner.id, verbs::IBV_QPS_ERR);
    }

    /// Free bytes of the receive ring (rgetsockopt reports sizes).
    pub fn rbuf_size(&self) -> u32 {
        self.flow.rbuf_size
    }
}
