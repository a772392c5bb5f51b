//! QPs and SRQs made for an id (`rdma_create_qp(_ex)`, `rdma_create_srq(_ex)`,
//! their destroy calls) and the QP state changes the CM drives through the
//! kernel's INIT_QP_ATTR (`rdma_init_qp_attr`), reference §4.11.
//!
//! CQs the library creates for an id have their own completion channels and
//! the id as CQ context: the `rdma_get_send_comp`/`rdma_get_recv_comp`
//! inlines of rdma_verbs.h rely on both.

use super::device;
use super::id::IdPriv;
use crate::abi::*;
use crate::error::{errno, Error, Result};
use crate::ucma;
use crate::verbs;
use std::sync::atomic::Ordering;

fn last_err() -> Error {
    match errno() {
        0 => Error::Errno(libc::ENOMEM),
        e => Error::Errno(e),
    }
}

/// libibverbs status (0 or errno) → Result.
fn check(rc: i32) -> Result<()> {
    match rc {
        0 => Ok(()),
        e if e < 0 => Err(last_err()),
        e => Err(Error::Errno(e)),
    }
}

/// `rdma_init_qp_attr`: the kernel's attributes for `attr.qp_state`.
pub fn init_qp_attr(idp: &IdPriv, attr: &mut ibv_qp_attr) -> Result<i32> {
    let state = attr.raw[0] as u32;
    let resp = ucma::init_qp_attr(idp.fd(), idp.handle(), state)?;
    // SAFETY: both buffers have libibverbs' sizes (checked).
    unsafe { verbs::ibv_copy_qp_attr_from_kern(attr, &resp) };
    Ok(resp.raw[0] as i32)
}

fn modify(qp: *mut ibv_qp, attr: &mut ibv_qp_attr, mask: i32) -> Result<()> {
    // SAFETY: a live QP of the id.
    check(unsafe { verbs::ibv_modify_qp(qp, attr, mask) })
}

/// INIT then RTR; `resp_res` (unless 0xFF) caps the responder resources.
pub fn to_rtr(idp: &IdPriv, resp_res: u8) -> Result<()> {
    let qp = idp.id().qp;
    if qp.is_null() {
        return Ok(());
    }
    let mut a = ibv_qp_attr::state(verbs::IBV_QPS_INIT);
    let mask = init_qp_attr(idp, &mut a)?;
    modify(qp, &mut a, mask)?;
    let mut a = ibv_qp_attr::state(verbs::IBV_QPS_RTR);
    let mut mask = init_qp_attr(idp, &mut a)?;
    // On InfiniBand ports the kernel may set RoCE-only mask bits (21–23).
    if super::id::link_layer(idp) == Some(verbs::IBV_LINK_LAYER_INFINIBAND) {
        mask &= !0xe0_0000;
    }
    if resp_res != RDMA_MAX_RESP_RES as u8 {
        a.set_u8(verbs::IBV_QP_ATTR_OFF_MAX_DEST_RD_ATOMIC, resp_res);
    }
    modify(qp, &mut a, mask)
}

/// RTS; `init_depth` (unless 0xFF) caps the initiator depth.
pub fn to_rts(idp: &IdPriv, init_depth: u8) -> Result<()> {
    let qp = idp.id().qp;
    if qp.is_null() {
        return Ok(());
    }
    let mut a = ibv_qp_attr::state(verbs::IBV_QPS_RTS);
    let mask = init_qp_attr(idp, &mut a)?;
    if init_depth != RDMA_MAX_INIT_DEPTH as u8 {
        a.set_u8(verbs::IBV_QP_ATTR_OFF_MAX_RD_ATOMIC, init_depth);
    }
    modify(qp, &mut a, mask)
}

/// Move the id's QP (if any) to a plain state (ERR, SQD).
pub fn to_state(idp: &IdPriv, state: u32) -> Result<()> {
    let qp = idp.id().qp;
    if qp.is_null() {
        return Ok(());
    }
    modify(qp, &mut ibv_qp_attr::state(state), verbs::IBV_QP_STATE)
}

fn init_conn_qp(idp: &IdPriv, qp: *mut ibv_qp) -> Result<()> {
    let mut a = ibv_qp_attr::state(verbs::IBV_QPS_INIT);
    let mask = init_qp_attr(idp, &mut a)?;
    modify(qp, &mut a, mask)
}

/// UD QPs go all the way to RTS at creation (send queue PSN 0).
fn init_ud_qp(idp: &IdPriv, qp: *mut ibv_qp) -> Result<()> {
    let mut a = ibv_qp_attr::state(verbs::IBV_QPS_INIT);
    let mask = init_qp_attr(idp, &mut a)?;
    modify(qp, &mut a, mask)?;
    a.set_u32(verbs::IBV_QP_ATTR_OFF_QP_STATE, verbs::IBV_QPS_RTR);
    modify(qp, &mut a, verbs::IBV_QP_STATE)?;
    a.set_u32(verbs::IBV_QP_ATTR_OFF_QP_STATE, verbs::IBV_QPS_RTS);
    a.set_u32(verbs::IBV_QP_ATTR_OFF_SQ_PSN, 0);
    modify(qp, &mut a, verbs::IBV_QP_STATE | verbs::IBV_QP_SQ_PSN)
}

pub fn is_ud(qp_type: u32) -> bool {
    qp_type == IBV_QPT_UD as u32
}

/// Destroy the CQs and completion channels the library made for the id
/// (an XRC receive id with an SRQ keeps them: the SRQ uses them).
pub fn destroy_cqs(idp: &IdPriv) {
    let id = idp.id_mut();
    if id.qp_type == IBV_QPT_XRC_RECV as u32 && !id.srq.is_null() {
        return;
    }
    // SAFETY: objects the library created for this id (or NULL).
    unsafe {
        if !id.recv_cq.is_null() {
            verbs::ibv_destroy_cq(id.recv_cq);
            if !id.send_cq.is_null() && id.send_cq != id.recv_cq {
                verbs::ibv_destroy_cq(id.send_cq);
            }
            id.send_cq = std::ptr::null_mut();
            id.recv_cq = std::ptr::null_mut();
        }
        if !id.recv_cq_channel.is_null() {
            verbs::ibv_destroy_comp_channel(id.recv_cq_channel);
            if !id.send_cq_channel.is_null() && id.send_cq_channel != id.recv_cq_channel {
                verbs::ibv_destroy_comp_channel(id.send_cq_channel);
            }
            id.send_cq_channel = std::ptr::null_mut();
            id.recv_cq_channel = std::ptr::null_mut();
        }
    }
}

/// A completion channel and a CQ per direction that needs one (size 0:
/// none), with the id as CQ context.
fn create_cqs(idp: &IdPriv, send: u32, recv: u32) -> Result<()> {
    let id = idp.id_mut();
    let ctx = id.verbs;
    let me = idp.id_ptr() as *mut libc::c_void;
    let one = |size: u32, ch: &mut *mut ibv_comp_channel, cq: &mut *mut ibv_cq| -> Result<()> {
        if size == 0 {
            return Ok(());
        }
        let cqe = i32::try_from(size).map_err(|_| Error::Errno(libc::EINVAL))?;
        // SAFETY: an open device context.
        *ch = unsafe { verbs::ibv_create_comp_channel(ctx) };
        if ch.is_null() {
            return Err(last_err());
        }
        // SAFETY: as above; the channel was just made.
        *cq = unsafe { verbs::ibv_create_cq(ctx, cqe, me, *ch, 0) };
        if cq.is_null() {
            return Err(last_err());
        }
        Ok(())
    };
    let r = one(recv, &mut id.recv_cq_channel, &mut id.recv_cq).and_then(|_| one(send, &mut id.send_cq_channel, &mut id.send_cq));
    if r.is_err() {
        let e = r.unwrap_err();
        destroy_cqs(idp);
        return Err(e);
    }
    Ok(())
}

fn xrcd(idp: &IdPriv) -> Result<*mut ibv_xrcd> {
    let d = idp.dev.load(Ordering::Acquire);
    if d.is_null() {
        return Err(Error::Errno(libc::EINVAL));
    }
    device::lock().xrcd(d)
}

/// ECE at QP creation: learn the QP's own ECE; for a QP made for a
/// connection request, tell the provider what the peer offered.
fn init_ece(idp: &IdPriv, qp: *mut ibv_qp) -> Result<()> {
    let mut ece = ibv_ece::default();
    // SAFETY: live QP.
    let rc = unsafe { verbs::ibv_query_ece(qp, &mut ece) };
    if rc != 0 && rc != libc::EOPNOTSUPP {
        return Err(Error::Errno(rc));
    }
    let remote = {
        let mut st = idp.lock();
        st.local_ece = (ece.vendor_id, ece.options);
        st.remote_ece
    };
    if remote.0 == 0 {
        return Ok(());
    }
    let mut set = if remote.0 != ece.vendor_id {
        ibv_ece { vendor_id: ece.vendor_id, options: 0, comp_mask: 0 }
    } else {
        ibv_ece { vendor_id: remote.0, options: remote.1, comp_mask: 0 }
    };
    // SAFETY: live QP.
    let rc = unsafe { verbs::ibv_set_ece(qp, &mut set) };
    if rc != 0 && rc != libc::EOPNOTSUPP {
        return Err(Error::Errno(rc));
    }
    Ok(())
}

/// After the QP's first transition: the options the provider kept.
fn set_local_ece(idp: &IdPriv, qp: *mut ibv_qp) -> Result<()> {
    if idp.lock().remote_ece.0 == 0 {
        return Ok(());
    }
    let mut ece = ibv_ece::default();
    // SAFETY: live QP.
    let rc = unsafe { verbs::ibv_query_ece(qp, &mut ece) };
    if rc != 0 && rc != libc::EOPNOTSUPP {
        return Err(Error::Errno(rc));
    }
    idp.lock().local_ece.1 = ece.options;
    Ok(())
}

/// `rdma_create_qp_ex`.
pub fn create_qp_ex(idp: &IdPriv, attr: &mut ibv_qp_init_attr_ex) -> Result<()> {
    let id = idp.id_mut();
    if !id.qp.is_null() {
        return Err(Error::Errno(libc::EINVAL));
    }
    if id.verbs.is_null() {
        // Upstream dereferences the missing device; there is nothing to
        // create a QP on.
        return Err(Error::Errno(libc::EINVAL));
    }
    if attr.comp_mask & verbs::IBV_QP_INIT_ATTR_PD == 0 || attr.pd.is_null() {
        attr.comp_mask |= verbs::IBV_QP_INIT_ATTR_PD;
        attr.pd = id.pd;
    } else {
        // SAFETY: the caller's live PD.
        let pd_ctx: *mut ibv_context = unsafe { verbs::field(attr.pd, verbs::IBV_PD_OFF_CONTEXT) };
        if pd_ctx != id.verbs {
            return Err(Error::Errno(libc::EINVAL));
        }
    }
    if (!id.recv_cq.is_null() && !attr.recv_cq.is_null() && id.recv_cq != attr.recv_cq)
        || (!id.send_cq.is_null() && !attr.send_cq.is_null() && id.send_cq != attr.send_cq)
    {
        return Err(Error::Errno(libc::EINVAL));
    }
    if id.qp_type == IBV_QPT_XRC_RECV as u32 && (attr.comp_mask & verbs::IBV_QP_INIT_ATTR_XRCD == 0 || attr.xrcd.is_null()) {
        attr.xrcd = xrcd(idp)?;
        attr.comp_mask |= verbs::IBV_QP_INIT_ATTR_XRCD;
    }
    let send = if !attr.send_cq.is_null() || !id.send_cq.is_null() { 0 } else { attr.cap.max_send_wr };
    let recv = if !attr.recv_cq.is_null() || !id.recv_cq.is_null() { 0 } else { attr.cap.max_recv_wr };
    create_cqs(idp, send, recv)?;
    if attr.send_cq.is_null() {
        attr.send_cq = id.send_cq;
    }
    if attr.recv_cq.is_null() {
        attr.recv_cq = id.recv_cq;
    }
    if !id.srq.is_null() && attr.srq.is_null() {
        attr.srq = id.srq;
    }
    // SAFETY: open context, caller's attributes (completed above).
    let qp = unsafe { verbs::rdmacm_shim_create_qp_ex(id.verbs, attr) };
    if qp.is_null() {
        let e = last_err();
        destroy_cqs(idp);
        return Err(e);
    }
    let r = init_ece(idp, qp)
        .and_then(|_| if is_ud(id.qp_type) { init_ud_qp(idp, qp) } else { init_conn_qp(idp, qp) })
        .and_then(|_| set_local_ece(idp, qp));
    if let Err(e) = r {
        // SAFETY: the QP we just made.
        unsafe { verbs::ibv_destroy_qp(qp) };
        destroy_cqs(idp);
        return Err(e);
    }
    // SAFETY: live QP.
    id.pd = unsafe { verbs::field(qp, verbs::IBV_QP_OFF_PD) };
    id.qp = qp;
    Ok(())
}

/// `rdma_create_qp`: the plain attributes, PD `pd` or the id's; the
/// completed attributes (CQs) are written back.
pub fn create_qp(idp: &IdPriv, pd: *mut ibv_pd, attr: &mut ibv_qp_init_attr) -> Result<()> {
    // SAFETY: all-zero is valid for the extended attributes.
    let mut ex: ibv_qp_init_attr_ex = unsafe { std::mem::zeroed() };
    ex.qp_context = attr.qp_context;
    ex.send_cq = attr.send_cq;
    ex.recv_cq = attr.recv_cq;
    ex.srq = attr.srq;
    ex.cap = attr.cap;
    ex.qp_type = attr.qp_type;
    ex.sq_sig_all = attr.sq_sig_all;
    ex.comp_mask = verbs::IBV_QP_INIT_ATTR_PD;
    ex.pd = if pd.is_null() { idp.id().pd } else { pd };
    let r = create_qp_ex(idp, &mut ex);
    attr.qp_context = ex.qp_context;
    attr.send_cq = ex.send_cq;
    attr.recv_cq = ex.recv_cq;
    attr.srq = ex.srq;
    attr.cap = ex.cap;
    attr.qp_type = ex.qp_type;
    attr.sq_sig_all = ex.sq_sig_all;
    r
}

/// `rdma_destroy_qp`.
pub fn destroy_qp(idp: &IdPriv) {
    let id = idp.id_mut();
    if !id.qp.is_null() {
        // SAFETY: the id's QP.
        unsafe { verbs::ibv_destroy_qp(id.qp) };
    }
    id.qp = std::ptr::null_mut();
    destroy_cqs(idp);
}

/// `rdma_create_srq_ex`.
pub fn create_srq_ex(idp: &IdPriv, attr: &mut ibv_srq_init_attr_ex) -> Result<()> {
    let id = idp.id_mut();
    if attr.comp_mask & verbs::IBV_SRQ_INIT_ATTR_TYPE == 0 {
        return Err(Error::Errno(libc::EINVAL));
    }
    if id.verbs.is_null() {
        return Err(Error::Errno(libc::EINVAL));
    }
    if attr.comp_mask & verbs::IBV_SRQ_INIT_ATTR_PD == 0 || attr.pd.is_null() {
        attr.pd = id.pd;
        attr.comp_mask |= verbs::IBV_SRQ_INIT_ATTR_PD;
    }
    if attr.srq_type == verbs::IBV_SRQT_XRC {
        if attr.comp_mask & verbs::IBV_SRQ_INIT_ATTR_XRCD == 0 || attr.xrcd.is_null() {
            attr.xrcd = xrcd(idp)?;
        }
        if attr.comp_mask & verbs::IBV_SRQ_INIT_ATTR_CQ == 0 || attr.cq.is_null() {
            create_cqs(idp, 0, attr.attr.max_wr)?;
            attr.cq = id.recv_cq;
        }
        attr.comp_mask |= verbs::IBV_SRQ_INIT_ATTR_XRCD | verbs::IBV_SRQ_INIT_ATTR_CQ;
    }
    // SAFETY: open context, completed attributes.
    let srq = unsafe { verbs::rdmacm_shim_create_srq_ex(id.verbs, attr) };
    if srq.is_null() {
        let e = last_err();
        destroy_cqs(idp);
        return Err(e);
    }
    if id.pd.is_null() {
        id.pd = attr.pd;
    }
    id.srq = srq;
    Ok(())
}

/// `rdma_create_srq`: basic SRQ (XRC for XRC receive ids) on `pd`.
pub fn create_srq(idp: &IdPriv, pd: *mut ibv_pd, attr: &mut ibv_srq_init_attr) -> Result<()> {
    // SAFETY: all-zero is valid for the extended attributes.
    let mut ex: ibv_srq_init_attr_ex = unsafe { std::mem::zeroed() };
    ex.srq_context = attr.srq_context;
    ex.attr = attr.attr;
    ex.comp_mask = verbs::IBV_SRQ_INIT_ATTR_TYPE | verbs::IBV_SRQ_INIT_ATTR_PD;
    ex.srq_type = if idp.id().qp_type == IBV_QPT_XRC_RECV as u32 { verbs::IBV_SRQT_XRC } else { verbs::IBV_SRQT_BASIC };
    ex.pd = pd;
    let r = create_srq_ex(idp, &mut ex);
    attr.srq_context = ex.srq_context;
    attr.attr = ex.attr;
    r
}

/// `rdma_destroy_srq`.
pub fn destroy_srq(idp: &IdPriv) {
    let id = idp.id_mut();
    if !id.srq.is_null() {
        // SAFETY: the id's SRQ.
        unsafe { verbs::ibv_destroy_srq(id.srq) };
    }
    id.srq = std::ptr::null_mut();
    destroy_cqs(idp);
}
