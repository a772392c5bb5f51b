//! One rsocket stream connection's bookkeeping (`rs::flow::Flow`) driven
//! by a hostile peer and a well-behaved local side: the peer's connection
//! data (credits, first target SGE, SGL table length, as `Conn::set_peer`
//! takes them), then a sequence of events from the input: immediates the
//! peer sends (data lengths, credits, iomap, shutdown, anything), target
//! SGL entries it writes into our table, our application reading and
//! peeking, our credit updates, our sends and their completions.
//! Whatever the peer does, our receive ring is never overrun, reads stay
//! inside it, sends stay inside our send ring and the SGE the peer gave,
//! and advertised ring halves stay inside the ring.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rdmacm::fuzzing::{RS_CONN_DATA_LEN, RS_SGE_LEN, RS_SGL_SIZE};
use rdmacm::rs::flow::Flow;
use rdmacm::rs::wire::{ConnData, Sge};
use std::cell::RefCell;
use std::collections::VecDeque;

struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(*b)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes([self.byte()?, self.byte()?, self.byte()?, self.byte()?]))
    }
    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (a, rest) = self.0.split_at_checked(N)?;
        self.0 = rest;
        a.try_into().ok()
    }
}

const RBUF_ADDR: u64 = 0x7000_0000;

fuzz_target!(|data: &[u8]| {
    let mut inp = Input(data);
    // Our side, as the options allow it (stream.rs: rings at least 4 KiB,
    // the receive ring even; queues of 1..=64 Ki entries).
    let (Some(a), Some(b), Some(c), Some(d)) = (inp.byte(), inp.byte(), inp.byte(), inp.byte()) else { return };
    let sq = 4 + (a as u32) * 3;
    let rq = 1 + (b as u16) * 2;
    let sbuf = 4096 + (c as u32) * 1024;
    let rbuf = (4096 + (d as u32) * 1024) & !1;
    let Some(peer) = inp.array::<RS_CONN_DATA_LEN>().and_then(|b| ConnData::decode(&b)) else { return };
    let Some(mut f) = Flow::new(sq, rq, sbuf, rbuf, 0, RS_SGL_SIZE as u32) else { return };
    // Conn::set_peer
    let peer_sgl = peer.target_sgl.length.clamp(1, 64);
    f.sseq_comp = peer.credits;
    f.set_peer_sgl_count(peer_sgl);
    f.set_first_sge(peer.data_buf);
    let table = RefCell::new([Sge::default(); RS_SGL_SIZE]);
    let mut inflight: VecDeque<u32> = VecDeque::new();
    let sq_data = sq - 4;
    while let Some(op) = inp.byte() {
        match op % 10 {
            // The peer's immediate.
            0 | 1 => {
                let Some(imm) = inp.u32() else { break };
                if f.received(imm).is_err() {
                    return; // the connection is reset
                }
            }
            // The peer writes a target SGL entry into our table.
            2 => {
                let Some(i) = inp.byte() else { break };
                let Some(e) = inp.array::<RS_SGE_LEN>() else { break };
                table.borrow_mut()[i as usize % RS_SGL_SIZE] = Sge::from_local(&e);
            }
            // Our application reads (consuming) up to n bytes.
            3 => {
                let Some(n) = inp.u32() else { break };
                if let Some((off, len)) = f.next_read(n as usize) {
                    assert!(off < rbuf && off + len <= rbuf, "a read leaves the ring");
                    assert!(len as usize <= n as usize);
                    f.consumed(len);
                }
            }
            // ... or peeks at everything queued.
            4 => {
                let mut pos = f.read_state();
                let mut total = 0usize;
                while let Some((off, len)) = f.next_read_from(&pos, usize::MAX) {
                    assert!(off < rbuf && off + len <= rbuf, "a peek leaves the ring");
                    assert!(len > 0);
                    total += len as usize;
                    f.advance(&mut pos, len);
                }
                assert_eq!(total, f.readable_bytes());
            }
            // Our credit update.
            5 => {
                if f.credit_due() {
                    let u = f.take_credit_update(RBUF_ADDR, 7);
                    if let Some((s, idx)) = u.sge {
                        assert!(s.addr >= RBUF_ADDR && s.addr + s.length as u64 <= RBUF_ADDR + rbuf as u64);
                        assert!(idx < peer_sgl);
                    }
                    f.ctrl_posted();
                }
            }
            6 => {
                if f.ctrl_outstanding() {
                    f.ctrl_done();
                }
            }
            // We send up to n bytes (taking the next SGE first, as
            // stream.rs does), and the send completes later.
            7 => {
                let Some(n) = inp.u32() else { break };
                f.refill_sge(|i| table.borrow()[i], |i| table.borrow_mut()[i].length = 0);
                if let Some(ch) = f.next_chunk(n, 65536) {
                    assert!(ch.len <= n && ch.len <= 65536 && ch.len <= sbuf);
                    assert!(ch.sbuf_offset < sbuf);
                    inflight.push_back(ch.len);
                }
            }
            8 => {
                if let Some(len) = inflight.pop_front() {
                    f.data_sent(len);
                }
            }
            // An iomap entry or an riowrite chunk into the send ring.
            _ => {
                let Some(n) = inp.byte() else { break };
                if let Some(off) = f.take_ring(n as u32, n & 1 == 0) {
                    assert!(off < sbuf);
                    inflight.push_back(n as u32);
                }
            }
        }
        assert!(f.readable_bytes() <= rbuf as usize, "more queued than the ring holds");
        assert!(f.sbuf_avail <= sbuf);
        assert!(f.sqe_avail <= sq_data);
        assert!(inflight.len() as u32 + f.sqe_avail <= sq_data, "more sends than work requests");
    }
});
