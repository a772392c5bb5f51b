//! One UD queue pair of a datagram rsocket (there is one per local source
//! address): its CM id (port space UDP, bound to the address and the
//! socket's UDP port), a completion channel with a receive CQ and a send
//! CQ on it (a thread waiting for a datagram is not woken by its own send
//! completions; the send CQ is armed only while a send slot is awaited),
//! the QP, and two registered regions of 2048-byte slots (sends; receives,
//! plus the 40-byte area every receive's GRH lands in), and address handles
//! for the peers it sends to.
//!
//! Everything here runs under the owning socket's mutex and never blocks.
//! A received message is checked (`DsHeader::decode`, lengths against the
//! completion) before anything in it is used.

use super::dgwire::{self, DsHeader, SockAddr, GRH_LEN, SLOT};
use super::mem::Region;
use super::stream::{last_err, new_cqs, CompOwner, CqOwner, QpOwner};
use crate::abi::*;
use crate::cm::channel::Channel;
use crate::cm::{id::Id, lifecycle, qp};
use crate::cmem::Shared;
use crate::error::{Error, Result};
use crate::verbs;
use std::io::IoSlice;
use std::sync::atomic::AtomicBool;

/// Receive work requests have bit 63; both carry their slot index.
const RECV: u64 = 1 << 63;
/// Completions taken per poll.
const POLL_BATCH: usize = 16;
/// Largest queue size (upstream's).
pub(crate) const QP_MAX: u32 = 0xFFFE;

/// An address handle; destroyed with its owner (before the QP and PD).
pub struct Ah(*mut ibv_ah);

// SAFETY: a libibverbs object, used under the socket's mutex.
unsafe impl Send for Ah {}

impl Drop for Ah {
    fn drop(&mut self) {
        // SAFETY: our AH, destroyed once.
        unsafe { verbs::ibv_destroy_ah(self.0) };
    }
}

/// The verbs resources, in drop order: QP, CQs, channel, memory.
struct Res {
    _qp_owner: QpOwner,
    rcq: CqOwner,
    scq: CqOwner,
    comp: CompOwner,
    rbuf: Region,
    sbuf: Region,
}

/// What one completion was.
pub enum Done {
    /// A receive in `slot`: the message (header and payload) is `len` bytes
    /// at the slot's start, or it failed (`ok` false).
    Recv { slot: u32, len: usize, ok: bool },
    /// A send finished (its slot is free again).
    Sent,
}

pub struct DgQp {
    res: Option<Res>,
    /// Last: destroyed after the QP it carries.
    id: Shared<Id>,
    qp: *mut ibv_qp,
    pub comp_fd: i32,
    /// The channel is out of the engine's epoll set (`socket::engine_watch`).
    pub watch_removed: AtomicBool,
    /// The local address and UDP port the QP stands for.
    pub local: SockAddr,
    /// Our UD data header (what every message we send starts with).
    hdr: [u8; dgwire::DS_HDR_V6],
    hdr_len: usize,
    pub qpn: u32,
    /// The port's active MTU in bytes.
    pub mtu: usize,
    /// Free send slots.
    free: Vec<u32>,
    sq_size: u32,
    rq_size: u32,
    sq_inline: u32,
    /// Whether each CQ is armed (its next completion raises an event).
    r_armed: bool,
    s_armed: bool,
}

// SAFETY: libibverbs objects, used under the socket's mutex.
unsafe impl Send for DgQp {}

impl Drop for DgQp {
    fn drop(&mut self) {
        // The QP, CQ, channel and memory first, then the id. A datagram QP
        // is dropped without the socket's lock held (its id's destruction
        // may wait for the acks of events the engine holds), or, when its
        // creation failed, before its id could have any event.
        self.res.take();
        let _ = lifecycle::destroy_id(&self.id);
    }
}

/// The port attributes the QP needs: active MTU (bytes), GID table length,
/// LMC.
fn port_info(ctx: *mut ibv_context, port: u8) -> Result<(usize, i32, u8)> {
    let (mut mtu, mut gids, mut lmc) = (0u32, 0i32, 0u8);
    // SAFETY: an open context; out-pointers to our locals.
    let rc = unsafe { verbs::rdmacm_shim_port_info(ctx, port, &mut mtu, &mut gids, &mut lmc) };
    if rc != 0 {
        return Err(Error::Errno(if rc > 0 { rc } else { libc::EIO }));
    }
    Ok((dgwire::mtu_bytes(mtu).unwrap_or(256), gids, lmc))
}

impl DgQp {
    /// A UD QP bound to `local`, on the engine's channel `ch`, with
    /// `sq_size` send and `rq_size` receive slots (clamped to what the
    /// device allows), every receive posted and the CQ armed.
    pub fn new(ch: &Shared<Channel>, local: &SockAddr, sq_size: u32, rq_size: u32, sq_inline: u32) -> Result<DgQp> {
        let id = lifecycle::create_id_on(ch, std::ptr::null_mut(), RDMA_PS_UDP as u32)?;
        let mut q = DgQp {
            res: None,
            id: id.clone(),
            qp: std::ptr::null_mut(),
            comp_fd: -1,
            watch_removed: AtomicBool::new(false),
            local: *local,
            hdr: [0; dgwire::DS_HDR_V6],
            hdr_len: 0,
            qpn: 0,
            mtu: 256,
            free: Vec::new(),
            sq_size: 0,
            rq_size: 0,
            sq_inline: 0,
            r_armed: false,
            s_armed: false,
        };
        let (b, n) = local.to_bytes();
        id.bind(&b[..n])?;
        let dev = id.device().ok_or(Error::Errno(libc::ENODEV))?;
        let opened = dev.opened();
        let max = (opened.max_qpsize.max(1) as u32).min(QP_MAX);
        let (sq, rq) = (sq_size.clamp(1, max), rq_size.clamp(1, max));
        let ctx = opened.verbs;
        let (comp, comp_fd, rcq, scq) = new_cqs(ctx, rq, sq)?;
        let mut attr = ibv_qp_init_attr {
            qp_context: std::ptr::null_mut(),
            send_cq: scq.cq,
            recv_cq: rcq.cq,
            srq: std::ptr::null_mut(),
            cap: ibv_qp_cap {
                max_send_wr: sq,
                max_recv_wr: rq,
                max_send_sge: 1,
                max_recv_sge: 2,
                max_inline_data: sq_inline,
            },
            qp_type: IBV_QPT_UD as u32,
            sq_sig_all: 1,
        };
        qp::create_qp(&id, std::ptr::null_mut(), &mut attr)?;
        let qp_owner = QpOwner { id: id.clone() };
        let pd = id.pd();
        let local_write = verbs::IBV_ACCESS_LOCAL_WRITE;
        // SAFETY: the id's PD, alive while the id uses its device.
        let (rbuf, sbuf) = unsafe {
            (
                Region::new(pd, rq as usize * SLOT + GRH_LEN, local_write)?,
                Region::new(pd, sq as usize * SLOT, local_write)?,
            )
        };
        q.free.try_reserve_exact(sq as usize).map_err(|_| Error::NOMEM)?;
        q.free.extend((0..sq).rev());
        q.qp = id.qp();
        // SAFETY: the live QP.
        q.qpn = unsafe { verbs::qp_num(q.qp) } & 0x00ff_ffff;
        q.comp_fd = comp_fd;
        q.sq_size = sq;
        q.rq_size = rq;
        q.sq_inline = attr.cap.max_inline_data;
        q.mtu = port_info(ctx, id.port_num())?.0;
        let (h, hl) = DsHeader { src: *local }.encode();
        q.hdr = h;
        q.hdr_len = hl;
        q.res = Some(Res { _qp_owner: qp_owner, rcq, scq, comp, rbuf, sbuf });
        for slot in 0..rq {
            q.post_recv(slot)?;
        }
        q.arm(false);
        Ok(q)
    }

    fn res(&self) -> &Res {
        self.res.as_ref().expect("resources live while the QP is")
    }

    pub fn id(&self) -> &Shared<Id> {
        &self.id
    }

    pub fn sq_size(&self) -> u32 {
        self.sq_size
    }

    pub fn rq_size(&self) -> u32 {
        self.rq_size
    }

    /// The length of our UD data header.
    pub fn hdr_len(&self) -> usize {
        self.hdr_len
    }

    /// (Re)post the receive of `slot`.
    pub fn post_recv(&mut self, slot: u32) -> Result<()> {
        if slot >= self.rq_size {
            return Err(Error::INVAL);
        }
        let r = self.res();
        let (base, lkey) = (r.rbuf.addr(), r.rbuf.lkey());
        let mut sge = [
            ibv_sge { addr: base + self.rq_size as u64 * SLOT as u64, length: GRH_LEN as u32, lkey },
            ibv_sge { addr: base + slot as u64 * SLOT as u64, length: SLOT as u32, lkey },
        ];
        let mut wr = ibv_recv_wr {
            wr_id: RECV | slot as u64,
            next: std::ptr::null_mut(),
            sg_list: sge.as_mut_ptr(),
            num_sge: 2,
        };
        let mut bad = std::ptr::null_mut();
        // SAFETY: our live QP; the SGEs lie in our registered region.
        match unsafe { verbs::post_recv(self.qp, &mut wr, &mut bad) } {
            0 => Ok(()),
            e => Err(Error::Errno(e)),
        }
    }

    pub fn has_free_slot(&self) -> bool {
        !self.free.is_empty()
    }

    /// Every send has completed.
    pub fn sends_idle(&self) -> bool {
        self.free.len() == self.sq_size as usize
    }

    /// Send our header and `payload` (gathered from the slices, `len`
    /// bytes in all, at most a slot minus the header) to `qpn` through
    /// `ah`. Needs a free slot (false when there is none).
    pub fn send(&mut self, ah: &Ah, qpn: u32, payload: &[IoSlice], len: usize) -> Result<bool> {
        if len > SLOT - self.hdr_len {
            return Err(Error::Errno(libc::EMSGSIZE));
        }
        let Some(slot) = self.free.pop() else { return Ok(false) };
        let off = slot as usize * SLOT;
        let r = self.res();
        r.sbuf.write(off, &self.hdr[..self.hdr_len]);
        let mut at = off + self.hdr_len;
        for p in payload {
            r.sbuf.write(at, &p[..]);
            at += p.len();
        }
        let total = (at - off) as u32;
        let mut sge = ibv_sge { addr: r.sbuf.addr() + off as u64, length: total, lkey: r.sbuf.lkey() };
        let mut wr = ibv_send_wr::zeroed();
        wr.wr_id = slot as u64;
        wr.sg_list = &mut sge;
        wr.num_sge = 1;
        wr.opcode = verbs::IBV_WR_SEND;
        wr.send_flags = if total <= self.sq_inline { verbs::IBV_SEND_INLINE } else { 0 };
        wr.wr.ud = ibv_send_wr_ud { ah: ah.0, remote_qpn: qpn, remote_qkey: dgwire::QKEY };
        let mut bad = std::ptr::null_mut();
        // SAFETY: our live QP; the SGE lies in our registered region; the AH
        // is live (the caller owns it).
        match unsafe { verbs::post_send(self.qp, &mut wr, &mut bad) } {
            0 => Ok(true),
            e => {
                self.free.push(slot);
                Err(Error::Errno(e))
            }
        }
    }

    /// Take the completions: sends free their slot here; receives are
    /// handed to `recv` (slot, length after the GRH, status). Whether
    /// anything completed.
    pub fn poll(&mut self, mut recv: impl FnMut(&mut DgQp, u32, usize, u32)) -> bool {
        let mut any = false;
        let mut wcs = std::mem::MaybeUninit::<[ibv_wc; POLL_BATCH]>::uninit();
        // The send CQ only while sends are outstanding.
        let cqs = [self.res().rcq.cq, if self.sends_idle() { std::ptr::null_mut() } else { self.res().scq.cq }];
        for cq in cqs.into_iter().filter(|c| !c.is_null()) {
            loop {
                let base = wcs.as_mut_ptr() as *mut ibv_wc;
                // SAFETY: our live CQ; room for POLL_BATCH completions.
                let n = unsafe { verbs::poll_cq(cq, POLL_BATCH as i32, base) };
                if n <= 0 {
                    break;
                }
                any = true;
                // SAFETY: the provider filled the first n entries.
                let done = unsafe { std::slice::from_raw_parts(base, n as usize) };
                self.completed(done, &mut recv);
                if (n as usize) < POLL_BATCH {
                    break;
                }
            }
        }
        any
    }

    fn completed(&mut self, wcs: &[ibv_wc], recv: &mut impl FnMut(&mut DgQp, u32, usize, u32)) {
        {
            for wc in wcs {
                let slot = (wc.wr_id & 0xffff_ffff) as u32;
                if wc.wr_id & RECV != 0 {
                    if slot < self.rq_size {
                        // byte_len counts the GRH area first.
                        let len = (wc.byte_len as usize).saturating_sub(GRH_LEN).min(SLOT);
                        recv(self, slot, len, wc.status);
                    }
                } else if slot < self.sq_size && self.free.len() < self.sq_size as usize {
                    // (The free list has room reserved for every slot.)
                    self.free.push(slot);
                }
            }
        }
    }

    /// The header of the message in receive `slot` (`len` bytes): the
    /// sender's address and where the payload starts; None for a message
    /// that is not a valid datagram.
    pub fn recv_header(&self, slot: u32, len: usize) -> Option<(SockAddr, usize)> {
        if slot >= self.rq_size || len > SLOT {
            return None;
        }
        let mut b = [0u8; dgwire::DS_HDR_V6];
        let n = len.min(b.len());
        self.res().rbuf.read(slot as usize * SLOT, &mut b[..n]);
        DsHeader::decode(&b[..n]).map(|(h, hl)| (h.src, hl))
    }

    /// Copy `dst.len()` bytes from receive `slot` at offset `off` (checked
    /// by the caller against the message).
    pub fn read(&self, slot: u32, off: usize, dst: &mut [u8]) {
        self.res().rbuf.read(slot as usize * SLOT + off, dst);
    }

    /// Move the QP to the error state (what is posted is flushed).
    pub fn to_error(&self) {
        let _ = qp::to_state(&self.id, verbs::IBV_QPS_ERR);
    }

    /// Arm the receive CQ and, if `send`, the send CQ (each once until its
    /// next event): the next completion raises an event. True if one was
    /// armed now (what completed before raised none: poll again).
    pub fn arm(&mut self, send: bool) -> bool {
        let mut newly = false;
        if !self.r_armed {
            // SAFETY: our live CQ.
            unsafe { verbs::req_notify_cq(self.res().rcq.cq, 0) };
            self.r_armed = true;
            newly = true;
        }
        if send && !self.s_armed {
            // SAFETY: our live CQ.
            unsafe { verbs::req_notify_cq(self.res().scq.cq, 0) };
            self.s_armed = true;
            newly = true;
        }
        newly
    }

    /// Read the completion events waiting on the channel (non-blocking);
    /// true if there were any (their CQs are then no longer armed).
    pub fn take_events(&mut self) -> bool {
        let mut got = false;
        let res = self.res.as_mut().expect("resources live while the QP is");
        while self.r_armed || self.s_armed {
            let mut cq = std::ptr::null_mut();
            let mut ctx = std::ptr::null_mut();
            // SAFETY: our channel, non-blocking.
            if unsafe { verbs::ibv_get_cq_event(res.comp.0, &mut cq, &mut ctx) } != 0 {
                break;
            }
            got = true;
            let owner = if cq == res.rcq.cq {
                self.r_armed = false;
                &mut res.rcq
            } else {
                self.s_armed = false;
                &mut res.scq
            };
            owner.unacked += 1;
            if owner.unacked >= 64 {
                // SAFETY: our CQ; unacked events of it.
                unsafe { verbs::ibv_ack_cq_events(owner.cq, owner.unacked) };
                owner.unacked = 0;
            }
        }
        got
    }

    /// Make an address handle for a peer reached through `resolved` (an id
    /// whose route was resolved from our address to the peer's): on the
    /// QP's PD, with a GRH on RoCE (the kernel refuses an AH without one
    /// there) and wherever the path crosses a router. The path's MTU in
    /// bytes comes with it.
    pub fn make_ah(&self, resolved: &Id) -> Result<(Ah, Option<usize>)> {
        let p = resolved.path_rec().ok_or(Error::INVAL)?;
        let ctx = self.id.verbs();
        if ctx.is_null() || resolved.verbs() != ctx {
            // The route leaves from another device than the QP's.
            return Err(Error::Errno(libc::ENODEV));
        }
        let port = resolved.port_num();
        let (_, gids, lmc) = port_info(ctx, port)?;
        // SAFETY: plain data: all-zero is valid.
        let mut attr: ibv_ah_attr = unsafe { std::mem::zeroed() };
        attr.dlid = u16::from_be(p.dlid);
        attr.sl = p.sl;
        attr.src_path_bits = (u16::from_be(p.slid) & ((1u16 << lmc.min(7)) - 1)) as u8;
        attr.static_rate = p.rate;
        attr.port_num = port;
        let roce = resolved.link_layer() == Some(verbs::IBV_LINK_LAYER_ETHERNET);
        if roce || p.hop_limit > 1 {
            // SAFETY: GIDs are plain bytes.
            let sgid = unsafe { p.sgid.raw };
            attr.is_global = 1;
            attr.grh.dgid = p.dgid;
            attr.grh.flow_label = u32::from_be(p.flow_label);
            attr.grh.sgid_index = gid_index(ctx, port, gids, &sgid)?;
            attr.grh.hop_limit = if p.hop_limit > 0 { p.hop_limit } else { 64 };
            attr.grh.traffic_class = p.traffic_class;
        }
        // SAFETY: the QP's PD (alive with the id); valid attributes.
        let ah = unsafe { verbs::ibv_create_ah(self.id.pd(), &mut attr) };
        if ah.is_null() {
            return Err(last_err(libc::EINVAL));
        }
        Ok((Ah(ah), dgwire::mtu_bytes(p.mtu as u32)))
    }
}

/// The index of `gid` in the port's GID table (the first entry that holds
/// it; ENOENT when none does).
fn gid_index(ctx: *mut ibv_context, port: u8, len: i32, gid: &[u8; 16]) -> Result<u8> {
    for i in 0..len.clamp(0, 256) {
        let mut g = ibv_gid { raw: [0; 16] };
        // SAFETY: an open context; out-pointer to our local.
        if unsafe { verbs::ibv_query_gid(ctx, port, i, &mut g) } != 0 {
            continue;
        }
        // SAFETY: GIDs are plain bytes.
        if unsafe { g.raw } == *gid {
            return Ok(i as u8);
        }
    }
    Err(Error::Errno(libc::ENOENT))
}
