//! The bookkeeping of one stream connection, without any I/O: sequence
//! numbers and credits, the send ring, the receive ring and its two halves,
//! the peer's target SGEs, and the checks on everything the peer reports.
//! `stream.rs` drives it and posts the work requests it asks for; host
//! unit tests drive it alone.
//!
//! Sequence numbers are 16-bit and absolute (docs/rsockets.md): the peer
//! may send while `sseq_no != sseq_comp`; credits come as a new value of
//! `sseq_comp`. The receive ring is advertised in halves: the first in the
//! connection data, each next one when the application has consumed as much.

use super::wire::{self, Msg, Sge};
use std::collections::VecDeque;

/// Control messages that may be in flight at once (and the send work
/// requests reserved for them).
pub(crate) const CTRL_SLOTS: u32 = 4;
/// The first chunk of a send call; each next one doubles, up to
/// [`MAX_CHUNK`].
pub(crate) const FIRST_CHUNK: u32 = 2048;
pub(crate) const MAX_CHUNK: u32 = 65536;
/// Free send-ring bytes needed before sending.
pub(crate) const SEND_LOWAT: u32 = 2048;

/// `(a + b) % m`, without a division when the sum is below `2 * m` (it
/// always is for ring positions: `a < m`, `b <= m`), which keeps the data
/// path free of divisions.
#[inline]
fn ring_add(a: u32, b: u32, m: u32) -> u32 {
    let r = a + b;
    if r < m {
        r
    } else if r - m < m {
        r - m
    } else {
        r % m
    }
}

/// A read position that does not consume (MSG_PEEK).
#[derive(Clone, Copy, Debug)]
pub struct ReadPos {
    msg: usize,
    left: u32,
    off: u32,
}

/// What the peer did that version 1 does not allow: the connection is
/// reset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Violation {
    /// More data than the receive ring space it was given.
    Overrun,
    /// More messages than credits.
    TooManyMessages,
}

/// What a received message changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Data queued (the connection may have become readable).
    Data,
    /// New credits (it may have become writable).
    Credits,
    /// The peer stops sending: EOF once the queued data is read.
    Shutdown,
    /// The peer disconnected.
    Disconnect,
    /// Nothing visible (iomap entry, unknown message).
    None,
}

/// A credit update to send: the immediate's data and, when a half of the
/// receive ring is free again, the SGE advertising it and the index of the
/// peer's target SGL entry to write it to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CreditUpdate {
    pub credits: u32,
    pub sge: Option<(Sge, u32)>,
}

/// One chunk of a send, as [`Flow::next_chunk`] plans it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunk {
    pub len: u32,
    /// Where in the peer's ring it goes, and the rkey.
    pub remote_addr: u64,
    pub rkey: u32,
    /// Offset in the send ring where it is copied (unless sent inline).
    pub sbuf_offset: u32,
}

#[derive(Debug)]
pub struct Flow {
    // ---- send side ----
    pub sseq_no: u16,
    pub sseq_comp: u16,
    /// Data work requests free (the queue minus the control slots).
    pub sqe_avail: u32,
    /// The send queue's data slots (`sqe_avail` when no data send is out).
    sq_data: u32,
    /// What `sends_plenty` asks for: half the data slots (at least one)
    /// and half the send ring (at least the low-water mark), rounded up.
    plenty_sqe: u32,
    plenty_sbuf: u32,
    /// Control messages sent, and the most that may have been sent.
    pub ctrl_seqno: u32,
    pub ctrl_max_seqno: u32,
    pub sbuf_size: u32,
    sbuf_head: u32,
    pub sbuf_avail: u32,
    /// The peer's current target SGE, what is left of it.
    cur: Sge,
    /// Index of the next entry of our target SGL table to take.
    target_index: usize,
    // ---- receive side ----
    pub rq_size: u16,
    pub rseq_no: u16,
    pub rseq_comp: u16,
    pub rbuf_size: u32,
    /// Offset of the next unread byte, and of the next half to advertise.
    rbuf_read: u32,
    rbuf_free_offset: u32,
    /// Bytes consumed by the application and not yet advertised again.
    rbuf_avail: u32,
    /// Bytes advertised to the peer and not yet filled by it.
    unfilled: u64,
    /// Queued data messages: bytes left in each.
    rmsg: VecDeque<u32>,
    /// The peer's target SGL table length and our next entry in it.
    peer_sgl_count: u32,
    remote_sge_index: u32,
    /// Shutdown/disconnect received.
    pub peer_shutdown: bool,
}

impl Flow {
    /// A connection's state once both connection data blocks are known:
    /// ours (`sq_size` send and `rq_size` receive work requests, rings of
    /// `sbuf_size` and `rbuf_size` bytes) and the peer's (`peer_credits`,
    /// `peer_data_buf`, its SGL table length). ENOMEM as None.
    pub fn new(
        sq_size: u32,
        rq_size: u16,
        sbuf_size: u32,
        rbuf_size: u32,
        peer_credits: u16,
        peer_sgl_count: u32,
    ) -> Option<Flow> {
        let sq_data = sq_size.saturating_sub(CTRL_SLOTS);
        let mut rmsg = VecDeque::new();
        rmsg.try_reserve_exact(rq_size as usize + 1).ok()?;
        Some(Flow {
            sseq_no: 0,
            sseq_comp: peer_credits,
            sqe_avail: sq_data,
            sq_data,
            plenty_sqe: sq_data.div_ceil(2).max(1),
            plenty_sbuf: sbuf_size.div_ceil(2).max(SEND_LOWAT),
            ctrl_seqno: 0,
            ctrl_max_seqno: CTRL_SLOTS,
            sbuf_size,
            sbuf_head: 0,
            sbuf_avail: sbuf_size,
            cur: Sge::default(),
            target_index: 0,
            rq_size,
            rseq_no: 0,
            rseq_comp: rq_size / 2,
            rbuf_size,
            rbuf_read: 0,
            rbuf_free_offset: rbuf_size / 2,
            rbuf_avail: rbuf_size / 2,
            unfilled: (rbuf_size / 2) as u64,
            rmsg,
            peer_sgl_count: peer_sgl_count.max(1),
            remote_sge_index: 1,
            peer_shutdown: false,
        })
    }

    // ---------------------------------------------------------------- send

    /// The peer's first data buffer (from its connection data) is the first
    /// SGE to fill. It stands for entry 0 of our target SGL table, so the
    /// peer writes its next SGE into entry 1 (and on, round the table).
    pub fn set_first_sge(&mut self, sge: Sge) {
        self.cur = sge;
        self.target_index = 1 % wire::SGL_SIZE;
    }

    /// Take the next target SGE the peer advertised, if the current one is
    /// used up: `read` reads entry `i` of our target SGL table (written by
    /// the peer) and `clear` empties it once taken.
    pub fn refill_sge(&mut self, read: impl Fn(usize) -> Sge, clear: impl Fn(usize)) {
        if self.cur.length != 0 {
            return;
        }
        std::hint::cold_path();
        let s = read(self.target_index);
        if s.length != 0 {
            clear(self.target_index);
            self.cur = s;
            self.target_index = (self.target_index + 1) % wire::SGL_SIZE;
        }
    }

    /// Whether a data message may be sent now.
    pub fn can_send(&self) -> bool {
        self.can_send_with(Sge::default())
    }

    /// Whether a data message could be sent once `next` (the entry of our
    /// target SGL table the peer may have written) is taken.
    pub fn can_send_with(&self, next: Sge) -> bool {
        self.sqe_avail >= 1
            && self.sbuf_avail >= SEND_LOWAT
            && self.sseq_no != self.sseq_comp
            && (self.cur.length != 0 || next.length != 0)
    }

    /// The entry of our target SGL table that comes next.
    pub fn target_index(&self) -> usize {
        self.target_index
    }

    /// The peer's target SGL table length (from its connection data).
    pub fn set_peer_sgl_count(&mut self, n: u32) {
        self.peer_sgl_count = n.max(1);
        // The next entry we write must be inside the peer's table (a
        // one-entry table wraps at once; found by fuzz/rs_flow).
        self.remote_sge_index %= self.peer_sgl_count;
    }

    /// Room for a message that is not data into the peer's ring (an iomap
    /// entry, `credit`: it uses a credit; an riowrite chunk: it does not):
    /// the send ring offset of its `len` bytes. None if nothing may be
    /// sent now.
    pub fn take_ring(&mut self, len: u32, credit: bool) -> Option<u32> {
        if !self.can_send() || self.sbuf_avail < len {
            return None;
        }
        if credit {
            self.sseq_no = self.sseq_no.wrapping_add(1);
        }
        self.sqe_avail -= 1;
        self.sbuf_avail -= len;
        let off = self.sbuf_head;
        self.sbuf_head = ring_add(self.sbuf_head, len, self.sbuf_size);
        Some(off)
    }

    /// Whether `len` bytes (at most `FIRST_CHUNK`) go as one whole chunk now
    /// (what `next_chunk(len, FIRST_CHUNK)` would then take).
    #[inline]
    pub fn fits_whole(&self, len: u32) -> bool {
        self.can_send() && len <= FIRST_CHUNK && len <= self.sbuf_avail && len <= self.cur.length
    }

    /// Plan the next chunk of at most `want` bytes (`limit`: the chunk-size
    /// ceiling of this send call) and account it as sent. None if nothing
    /// may be sent now.
    #[inline(always)]
    pub fn next_chunk(&mut self, want: u32, limit: u32) -> Option<Chunk> {
        if !self.can_send() || want == 0 {
            return None;
        }
        let len = want.min(limit).min(self.sbuf_avail).min(self.cur.length);
        let c = Chunk { len, remote_addr: self.cur.addr, rkey: self.cur.key, sbuf_offset: self.sbuf_head };
        self.cur.addr = self.cur.addr.wrapping_add(len as u64);
        self.cur.length -= len;
        self.sseq_no = self.sseq_no.wrapping_add(1);
        self.sqe_avail -= 1;
        self.sbuf_avail -= len;
        self.sbuf_head = ring_add(self.sbuf_head, len, self.sbuf_size);
        Some(c)
    }

    /// A data send completed.
    pub fn data_sent(&mut self, len: u32) {
        self.sqe_avail += 1;
        self.sbuf_avail = (self.sbuf_avail + len).min(self.sbuf_size);
    }

    /// Whether a control message may be posted.
    pub fn ctrl_free(&self) -> bool {
        self.ctrl_seqno != self.ctrl_max_seqno
    }

    /// A control message (credit update, shutdown, keepalive) has not
    /// completed yet.
    pub fn ctrl_outstanding(&self) -> bool {
        self.ctrl_seqno + CTRL_SLOTS != self.ctrl_max_seqno
    }

    pub fn ctrl_posted(&mut self) {
        self.ctrl_seqno += 1;
    }

    pub fn ctrl_done(&mut self) {
        self.ctrl_max_seqno += 1;
    }

    /// At least half the send queue's data slots and half the send ring
    /// (and enough for a message) are free, and no control message is in
    /// flight: what the send completions would give back is not short, so
    /// polling for them can wait (see `Conn::poll_lazy`).
    /// (The thresholds are worked out once, in `new`: this is asked on
    /// every receive that finds nothing while sends are out.)
    #[inline]
    pub fn sends_plenty(&self) -> bool {
        self.sqe_avail >= self.plenty_sqe
            && self.sbuf_avail >= self.plenty_sbuf
            && self.ctrl_seqno == self.ctrl_max_seqno - CTRL_SLOTS
    }

    /// Every data and control send has completed.
    #[inline]
    pub fn sends_idle(&self) -> bool {
        self.sqe_avail == self.sq_data && self.ctrl_seqno == self.ctrl_max_seqno - CTRL_SLOTS
    }

    // ------------------------------------------------------------- receive

    /// Take a received message (its host-order immediate). Data is checked
    /// against the ring space advertised and the credits given.
    pub fn received(&mut self, imm: u32) -> Result<Event, Violation> {
        match Msg::decode(imm) {
            Msg::Data(len) => {
                if len as u64 > self.unfilled {
                    return Err(Violation::Overrun);
                }
                if self.rmsg.len() >= self.rq_size as usize {
                    return Err(Violation::TooManyMessages);
                }
                self.unfilled -= len as u64;
                if len == 0 {
                    // Nothing to read: consumed at once.
                    self.rseq_no = self.rseq_no.wrapping_add(1);
                    return Ok(Event::None);
                }
                self.rmsg.push_back(len);
                Ok(Event::Data)
            }
            Msg::Credits(c) => {
                self.sseq_comp = c;
                Ok(Event::Credits)
            }
            Msg::Shutdown => {
                self.peer_shutdown = true;
                Ok(Event::Shutdown)
            }
            Msg::Disconnect => {
                self.peer_shutdown = true;
                Ok(Event::Disconnect)
            }
            Msg::Iomap(_) | Msg::Unknown(_) => Ok(Event::None),
        }
    }

    /// Bytes queued for the application.
    pub fn readable_bytes(&self) -> usize {
        self.rmsg.iter().map(|&n| n as usize).sum()
    }

    pub fn has_data(&self) -> bool {
        !self.rmsg.is_empty()
    }

    /// The next run of queued bytes to copy: (ring offset, length), at most
    /// `max`, never across the end of the ring. None when nothing is queued.
    pub fn next_read(&self, max: usize) -> Option<(u32, u32)> {
        self.next_read_from(&self.read_state(), max)
    }

    /// Where reading stands (to peek without consuming).
    pub fn read_state(&self) -> ReadPos {
        ReadPos { msg: 0, left: self.rmsg.front().copied().unwrap_or(0), off: self.rbuf_read }
    }

    /// [`next_read`](Self::next_read) from a position of a peek.
    pub fn next_read_from(&self, pos: &ReadPos, max: usize) -> Option<(u32, u32)> {
        if pos.msg >= self.rmsg.len() || pos.left == 0 {
            return None;
        }
        let to_end = self.rbuf_size - pos.off;
        Some((pos.off, pos.left.min(to_end).min(max.min(u32::MAX as usize) as u32)))
    }

    /// Move a peek position past `n` bytes.
    pub fn advance(&self, pos: &mut ReadPos, n: u32) {
        let n = n.min(pos.left);
        pos.left -= n;
        pos.off = ring_add(pos.off, n, self.rbuf_size);
        if pos.left == 0 {
            pos.msg += 1;
            pos.left = self.rmsg.get(pos.msg).copied().unwrap_or(0);
        }
    }

    /// Consume the next run of queued bytes, at most `max` (never across
    /// the end of the ring): its ring offset and length, None when nothing
    /// is queued. The same as [`next_read`](Self::next_read) followed by
    /// [`consumed`](Self::consumed), with one look at the queue instead of
    /// four (the copy out of the ring comes after, under the same lock: the
    /// space goes back to the peer only with the next credit update).
    pub fn take_run(&mut self, max: usize) -> Option<(u32, u32)> {
        let front = self.rmsg.front_mut()?;
        let off = self.rbuf_read;
        let n = (*front).min(self.rbuf_size - off).min(max.min(u32::MAX as usize) as u32);
        if n == 0 {
            return None;
        }
        *front -= n;
        if *front == 0 {
            self.rmsg.pop_front();
            self.rseq_no = self.rseq_no.wrapping_add(1);
        }
        self.rbuf_read = ring_add(off, n, self.rbuf_size);
        self.rbuf_avail += n;
        Some((off, n))
    }

    /// `n` bytes of the front message were consumed.
    pub fn consumed(&mut self, n: u32) {
        let Some(front) = self.rmsg.front_mut() else { return };
        let n = n.min(*front);
        *front -= n;
        self.rbuf_read = ring_add(self.rbuf_read, n, self.rbuf_size);
        self.rbuf_avail += n;
        if *front == 0 {
            self.rmsg.pop_front();
            self.rseq_no = self.rseq_no.wrapping_add(1);
        }
    }

    /// A credit update is due: half the ring is free again, or half the
    /// credits were used (and a control slot is free).
    pub fn credit_due(&self) -> bool {
        self.ctrl_free()
            && (self.rbuf_avail >= self.rbuf_size / 2 || self.rseq_no.wrapping_sub(self.rseq_comp) as i16 >= 0)
    }

    /// Build the credit update to send now (and account it).
    pub fn take_credit_update(&mut self, rbuf_addr: u64, rbuf_rkey: u32) -> CreditUpdate {
        let half = self.rbuf_size / 2;
        self.rseq_comp = self.rseq_no.wrapping_add(self.rq_size / 2);
        let credits = self.rseq_no.wrapping_add(self.rq_size) as u32;
        let sge = (self.rbuf_avail >= half).then(|| {
            let s = Sge { addr: rbuf_addr + self.rbuf_free_offset as u64, key: rbuf_rkey, length: half };
            let idx = self.remote_sge_index;
            self.rbuf_avail -= half;
            self.rbuf_free_offset = ring_add(self.rbuf_free_offset, half, self.rbuf_size);
            self.remote_sge_index = ring_add(self.remote_sge_index, 1, self.peer_sgl_count);
            self.unfilled += half as u64;
            (s, idx)
        });
        CreditUpdate { credits, sge }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RB: u32 = 1 << 17;

    #[test]
    fn ring_add_is_the_remainder() {
        for m in [1u32, 2, 3, 7, 1024, RB] {
            for a in [0, 1, m / 2, m - 1, m, 2 * m + 5, 3 * m] {
                for b in [0, 1, m - 1, m, m + 1, 4 * m] {
                    assert_eq!(ring_add(a, b, m), (a + b) % m, "a {a} b {b} m {m}");
                }
            }
        }
    }

    fn pair() -> (Flow, Flow) {
        let mut a = Flow::new(384, 384, RB, RB, 384, 2).unwrap();
        let mut b = Flow::new(384, 384, RB, RB, 384, 2).unwrap();
        a.set_first_sge(Sge { addr: 0x1000_0000, key: 7, length: RB / 2 });
        b.set_first_sge(Sge { addr: 0x2000_0000, key: 9, length: RB / 2 });
        (a, b)
    }

    #[test]
    fn sends_plenty_only_when_completions_would_not_help() {
        let mut a = Flow::new(384, 384, RB, RB, 384, 2).unwrap();
        a.set_first_sge(Sge { addr: 0x1000_0000, key: 7, length: RB });
        assert!(a.sends_plenty() && a.sends_idle());
        // A control message in flight: its completion is awaited.
        a.ctrl_posted();
        assert!(!a.sends_plenty());
        a.ctrl_done();
        assert!(a.sends_plenty());
        // Data in flight, less than half the ring: plenty, not idle.
        let c = a.next_chunk(RB / 4, RB).unwrap();
        assert!(a.sends_plenty() && !a.sends_idle());
        // More than half of the ring in flight: no longer plenty.
        let d = a.next_chunk(RB / 4 + 1, RB).unwrap();
        assert!(!a.sends_plenty());
        a.data_sent(c.len);
        a.data_sent(d.len);
        assert!(a.sends_plenty() && a.sends_idle());
        // Whenever plenty, the send resources a message needs are there
        // (so a lazy poll never hides room to send), small rings included.
        for (sq, ring) in [(384, RB), (6, 4096), (5, 2048), (8, 1 << 20)] {
            let mut f = Flow::new(sq, 16, ring, ring, 16, 2).unwrap();
            f.set_first_sge(Sge { addr: 0x1000, key: 1, length: ring });
            let sq_data = sq.saturating_sub(CTRL_SLOTS);
            while f.next_chunk(1000, 1000).is_some() {
                // The thresholds are the rule's: half (rounded up) of each.
                let rule = f.sqe_avail != 0
                    && f.sqe_avail as u64 * 2 >= sq_data as u64
                    && f.sbuf_avail >= SEND_LOWAT
                    && f.sbuf_avail as u64 * 2 >= ring as u64
                    && !f.ctrl_outstanding();
                assert_eq!(f.sends_plenty(), rule, "sq {sq} ring {ring}");
                if f.sends_plenty() {
                    assert!(f.sqe_avail >= 1 && f.sbuf_avail >= SEND_LOWAT, "sq {sq} ring {ring}");
                }
            }
        }
    }

    #[test]
    fn a_one_entry_peer_table_is_written_at_entry_zero() {
        let (mut a, _) = pair();
        a.set_peer_sgl_count(1);
        let u = a.take_credit_update(0x1000_0000, 7);
        assert_eq!(u.sge.map(|(_, i)| i), Some(0));
    }

    #[test]
    fn first_credit_update_advertises_the_second_half() {
        let (mut a, _) = pair();
        assert!(a.credit_due());
        let u = a.take_credit_update(0x1000_0000, 7);
        assert_eq!(u.credits, 384);
        assert_eq!(wire::imm(wire::OP_SGL, u.credits), 0x8000_0180);
        assert_eq!(u.sge, Some((Sge { addr: 0x1000_0000 + (RB / 2) as u64, key: 7, length: RB / 2 }, 1)));
        assert!(!a.credit_due());
    }

    #[test]
    fn chunks_fill_the_peer_sge_in_order() {
        let (mut a, _) = pair();
        let c1 = a.next_chunk(5000, FIRST_CHUNK).unwrap();
        assert_eq!((c1.len, c1.remote_addr, c1.sbuf_offset), (2048, 0x1000_0000, 0));
        let c2 = a.next_chunk(5000 - 2048, 4096).unwrap();
        assert_eq!((c2.len, c2.remote_addr, c2.sbuf_offset), (2952, 0x1000_0000 + 2048, 2048));
        assert_eq!(a.sseq_no, 2);
        assert_eq!(a.sbuf_avail, RB - 5000);
        a.data_sent(2048);
        a.data_sent(2952);
        assert_eq!(a.sbuf_avail, RB);
    }

    #[test]
    fn a_half_is_never_crossed_and_the_next_sge_comes_from_the_table() {
        let (mut a, _) = pair();
        let mut sent = 0;
        while let Some(c) = a.next_chunk(u32::MAX, MAX_CHUNK) {
            sent += c.len;
            a.data_sent(c.len);
        }
        assert_eq!(sent, RB / 2, "exactly the advertised half");
        assert!(!a.can_send());
        // The first SGE stands for entry 0: the peer writes its next SGE
        // into entry 1 of our table, and an SGE in entry 0 is not looked at.
        let table = std::cell::RefCell::new([
            Sge { addr: 0x1000_0000, key: 7, length: RB / 2 },
            Sge { addr: 0x1000_0000 + (RB / 2) as u64, key: 7, length: RB / 2 },
        ]);
        a.refill_sge(|i| table.borrow()[i], |i| table.borrow_mut()[i] = Sge::default());
        assert!(a.can_send());
        assert_eq!(table.borrow()[1].length, 0, "taken");
        assert_eq!(table.borrow()[0].length, RB / 2, "not taken");
        let c = a.next_chunk(10, MAX_CHUNK).unwrap();
        assert_eq!(c.remote_addr, 0x1000_0000 + (RB / 2) as u64);
    }

    #[test]
    fn credits_bound_messages() {
        let mut a = Flow::new(384, 16, RB, RB, 2, 2).unwrap();
        a.set_first_sge(Sge { addr: 1, key: 1, length: RB / 2 });
        assert!(a.next_chunk(1, MAX_CHUNK).is_some());
        assert!(a.next_chunk(1, MAX_CHUNK).is_some());
        assert!(a.next_chunk(1, MAX_CHUNK).is_none(), "no credit left");
        assert_eq!(a.received(wire::imm(wire::OP_SGL, 10)), Ok(Event::Credits));
        assert!(a.next_chunk(1, MAX_CHUNK).is_some());
        // Sequence numbers wrap at 16 bits.
        a.sseq_no = 0xffff;
        a.sseq_comp = 3;
        assert!(a.can_send());
    }

    #[test]
    fn fits_whole_is_next_chunk_taking_it_all() {
        // Near the end of the peer's SGE, of the send ring, of the credits,
        // and past the first chunk's size: where the answer is yes, the
        // chunk is the whole length, and where it is no, it is not.
        for (sge_len, sbuf_used, credits) in
            [(RB / 2, 0, 100), (70, 0, 100), (64, 0, 100), (RB / 2, RB - 2100, 100), (RB / 2, 0, 0)]
        {
            for len in [1, 63, 64, 65, 2047, 2048, 2049] {
                let mut a = Flow::new(384, 384, RB, RB, credits, 2).unwrap();
                a.set_first_sge(Sge { addr: 0x1000, key: 7, length: sge_len });
                a.sbuf_avail -= sbuf_used;
                let fits = a.fits_whole(len);
                let c = a.next_chunk(len, FIRST_CHUNK);
                assert_eq!(
                    fits,
                    c.is_some_and(|c| c.len == len),
                    "sge {sge_len} used {sbuf_used} credits {credits} len {len}"
                );
            }
        }
    }

    #[test]
    fn received_data_is_read_in_ring_order() {
        let (_, mut b) = pair();
        assert_eq!(b.received(wire::imm(wire::OP_DATA, 100)), Ok(Event::Data));
        assert_eq!(b.received(wire::imm(wire::OP_DATA, 50)), Ok(Event::Data));
        assert_eq!(b.readable_bytes(), 150);
        assert_eq!(b.next_read(30), Some((0, 30)));
        b.consumed(30);
        assert_eq!(b.next_read(1000), Some((30, 70)));
        b.consumed(70);
        assert_eq!(b.rseq_no, 1);
        assert_eq!(b.next_read(1000), Some((100, 50)));
        b.consumed(50);
        assert_eq!(b.next_read(1000), None);
        assert_eq!(b.rseq_no, 2);
    }

    #[test]
    fn a_hostile_peer_is_caught() {
        let (_, mut b) = pair();
        // More than the advertised half.
        assert_eq!(b.received(wire::imm(wire::OP_DATA, RB / 2 + 1)), Err(Violation::Overrun));
        // Exactly the half is fine, one byte more is not.
        assert_eq!(b.received(wire::imm(wire::OP_DATA, RB / 2)), Ok(Event::Data));
        assert_eq!(b.received(wire::imm(wire::OP_DATA, 1)), Err(Violation::Overrun));
        // More messages than credits.
        let mut c = Flow::new(384, 16, RB, RB, 16, 2).unwrap();
        for _ in 0..16 {
            assert_eq!(c.received(wire::imm(wire::OP_DATA, 1)), Ok(Event::Data));
        }
        assert_eq!(c.received(wire::imm(wire::OP_DATA, 1)), Err(Violation::TooManyMessages));
        // Reserved operations and unknown control data change nothing.
        assert_eq!(c.received(0x2000_0001), Ok(Event::None));
        assert_eq!(c.received(wire::imm(wire::OP_CTRL, 77)), Ok(Event::None));
    }

    #[test]
    fn take_run_is_next_read_then_consumed() {
        const SMALL: u32 = 4096;
        // Two flows fed the same messages; one read with take_run, the other
        // with next_read + consumed, in the same random-ish steps.
        let mut a = Flow::new(64, 16, SMALL, SMALL, 16, 2).unwrap();
        let mut b = Flow::new(64, 16, SMALL, SMALL, 16, 2).unwrap();
        let mut seed = 7u32;
        let mut rnd = |m: u32| {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            (seed >> 8) % m
        };
        for round in 0..2000 {
            if a.rmsg.len() < 8 && a.unfilled > 0 {
                let len = (1 + rnd(700)).min(a.unfilled as u32);
                let imm = wire::imm(wire::OP_DATA, len);
                assert_eq!(a.received(imm), b.received(imm));
            }
            let max = [1usize, 7, 64, 1000, usize::MAX][rnd(5) as usize];
            let want = b.next_read(max);
            if let Some((_, n)) = want {
                b.consumed(n);
            }
            assert_eq!(a.take_run(max), want, "round {round}");
            assert_eq!(
                (a.rbuf_read, a.rbuf_avail, a.rseq_no, a.rmsg.len()),
                (b.rbuf_read, b.rbuf_avail, b.rseq_no, b.rmsg.len())
            );
            // Hand space back as the stream does (a credit update).
            if a.credit_due() {
                let ua = a.take_credit_update(0, 0);
                let ub = b.take_credit_update(0, 0);
                assert_eq!(ua, ub);
            }
        }
        assert_eq!(a.take_run(0), None);
    }

    #[test]
    fn peeking_does_not_consume() {
        let (_, mut b) = pair();
        assert_eq!(b.received(wire::imm(wire::OP_DATA, 10)), Ok(Event::Data));
        assert_eq!(b.received(wire::imm(wire::OP_DATA, 5)), Ok(Event::Data));
        let mut p = b.read_state();
        assert_eq!(b.next_read_from(&p, 100), Some((0, 10)));
        b.advance(&mut p, 10);
        assert_eq!(b.next_read_from(&p, 100), Some((10, 5)));
        b.advance(&mut p, 5);
        assert_eq!(b.next_read_from(&p, 100), None);
        assert_eq!(b.readable_bytes(), 15, "nothing consumed");
    }

    #[test]
    fn ring_slots_for_iomap_and_direct_writes() {
        let (mut a, _) = pair();
        assert_eq!(a.take_ring(24, true), Some(0));
        assert_eq!(a.sseq_no, 1, "an iomap entry uses a credit");
        assert_eq!(a.take_ring(100, false), Some(24));
        assert_eq!(a.sseq_no, 1, "a direct write does not");
        assert_eq!(a.sbuf_avail, RB - 124);
    }

    #[test]
    fn reading_a_half_re_advertises_it() {
        let (_, mut b) = pair();
        let _ = b.take_credit_update(0x2000_0000, 9); // the initial update (second half)
        assert!(!b.credit_due());
        assert_eq!(b.received(wire::imm(wire::OP_DATA, RB / 2)), Ok(Event::Data));
        while let Some((_, n)) = b.next_read(usize::MAX) {
            b.consumed(n);
        }
        assert!(b.credit_due());
        let u = b.take_credit_update(0x2000_0000, 9);
        assert_eq!(u.sge.map(|(s, i)| (s.addr, i)), Some((0x2000_0000, 0)), "first half again, entry 0");
    }

    /// A sender and a receiver driven against each other through simulated
    /// memory: every byte the sender writes lands where the receiver will
    /// read it, in order, past many laps of a small ring and past the 16-bit
    /// sequence wrap, with credits and SGEs going back as the receiver reads.
    #[test]
    fn a_stream_survives_ring_laps_and_sequence_wrap() {
        const SMALL: u32 = 4096;
        const BASE: u64 = 0x2000_0000;
        let mut a = Flow::new(64, 16, SMALL, SMALL, 16, 2).unwrap();
        let mut b = Flow::new(64, 16, SMALL, SMALL, 16, 2).unwrap();
        a.set_first_sge(Sge { addr: BASE, key: 9, length: SMALL / 2 });
        let table = std::cell::RefCell::new([Sge::default(); wire::SGL_SIZE]);
        let mut rbuf = vec![0u8; SMALL as usize];
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: u32| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng % n as u64) as u32 + 1
        };
        let (mut sent, mut read, mut messages) = (0u64, 0u64, 0u32);
        let byte = |i: u64| (i.wrapping_mul(31) >> 3) as u8;
        while messages < 70_000 {
            a.refill_sge(|i| table.borrow()[i], |i| table.borrow_mut()[i] = Sge::default());
            if let Some(c) = a.next_chunk(next(300), FIRST_CHUNK) {
                let at = c.remote_addr.checked_sub(BASE).expect("below the ring") as usize;
                assert!(at + c.len as usize <= rbuf.len(), "past the ring");
                for k in 0..c.len as usize {
                    rbuf[at + k] = byte(sent + k as u64);
                }
                sent += c.len as u64;
                messages += 1;
                assert_eq!(b.received(wire::imm(wire::OP_DATA, c.len)), Ok(Event::Data));
                a.data_sent(c.len);
            }
            let mut want = next(400) as usize;
            while want > 0 {
                let Some((off, n)) = b.next_read(want) else { break };
                for k in 0..n as usize {
                    assert_eq!(rbuf[off as usize + k], byte(read + k as u64), "byte {}", read + k as u64);
                }
                read += n as u64;
                want -= n as usize;
                b.consumed(n);
            }
            if b.credit_due() {
                let u = b.take_credit_update(BASE, 9);
                b.ctrl_posted();
                b.ctrl_done();
                assert_eq!(a.received(wire::imm(wire::OP_SGL, u.credits)), Ok(Event::Credits));
                if let Some((sge, idx)) = u.sge {
                    table.borrow_mut()[idx as usize] = sge;
                }
            }
        }
        assert!(sent > 4 * SMALL as u64 && read + SMALL as u64 >= sent);
    }
}
