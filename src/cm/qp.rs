//! QPs and SRQs made for an id (rdma_create_qp(3), rdma_create_srq(3),
//! their `_ex` forms and destroy calls) and the QP state changes the CM
//! drives through the kernel's INIT_QP_ATTR (rdma_init_qp_attr(3)).
//!
//! CQs the library creates for an id have their own completion channels and
//! the id as CQ context: the `rdma_get_send_comp`/`rdma_get_recv_comp`
//! inlines of rdma_verbs.h rely on both.

use super::id::Id;
use crate::abi::*;
use crate::error::{errno, Error, Result};
use crate::ucma;
use crate::verbs;

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
pub fn init_qp_attr(idp: &Id, attr: &mut ibv_qp_attr) -> Result<i32> {
    let mut buf = std::mem::MaybeUninit::uninit();
    let resp = ucma::init_qp_attr(idp.fd(), idp.handle(), attr.qp_state, &mut buf)?;
    // SAFETY: both are full mirrors of libibverbs' structs (checked).
    unsafe { verbs::ibv_copy_qp_attr_from_kern(attr, resp) };
    // The kernel's attribute mask is the first word of its answer.
    Ok(resp.raw[0] as i32)
}

fn modify(qp: *mut ibv_qp, attr: &mut ibv_qp_attr, mask: i32) -> Result<()> {
    // SAFETY: a live QP of the id.
    check(unsafe { verbs::ibv_modify_qp(qp, attr, mask) })
}

/// INIT, RTR, then RTS: `resp_res` (unless 0xFF) caps the responder
/// resources, `init_depth` (unless 0xFF) the initiator depth. One
/// attribute block serves the three steps, zeroed once: each step's
/// kernel answer overwrites every field a modify reads (upstream reuses
/// one block the same way).
pub fn to_rts_from_init(idp: &Id, resp_res: u8, init_depth: u8) -> Result<()> {
    let qp = idp.qp();
    if qp.is_null() {
        return Ok(());
    }
    let mut a = ibv_qp_attr::state(verbs::IBV_QPS_INIT);
    let mask = init_qp_attr(idp, &mut a)?;
    modify(qp, &mut a, mask)?;
    a.qp_state = verbs::IBV_QPS_RTR;
    let mut mask = init_qp_attr(idp, &mut a)?;
    // On InfiniBand ports the kernel may set RoCE-only mask bits (21–23).
    if idp.link_layer() == Some(verbs::IBV_LINK_LAYER_INFINIBAND) {
        mask &= !0xe0_0000;
    }
    if resp_res != RDMA_MAX_RESP_RES as u8 {
        a.max_dest_rd_atomic = resp_res;
    }
    modify(qp, &mut a, mask)?;
    a.qp_state = verbs::IBV_QPS_RTS;
    let mask = init_qp_attr(idp, &mut a)?;
    if init_depth != RDMA_MAX_INIT_DEPTH as u8 {
        a.max_rd_atomic = init_depth;
    }
    modify(qp, &mut a, mask)
}

/// Move the id's QP (if any) to a plain state (ERR, SQD).
pub fn to_state(idp: &Id, state: u32) -> Result<()> {
    let qp = idp.qp();
    if qp.is_null() {
        return Ok(());
    }
    modify(qp, &mut ibv_qp_attr::state(state), verbs::IBV_QP_STATE)
}

fn init_conn_qp(idp: &Id, qp: *mut ibv_qp) -> Result<()> {
    let mut a = ibv_qp_attr::state(verbs::IBV_QPS_INIT);
    let mask = init_qp_attr(idp, &mut a)?;
    modify(qp, &mut a, mask)
}

/// UD QPs go all the way to RTS at creation (send queue PSN 0).
fn init_ud_qp(idp: &Id, qp: *mut ibv_qp) -> Result<()> {
    let mut a = ibv_qp_attr::state(verbs::IBV_QPS_INIT);
    let mask = init_qp_attr(idp, &mut a)?;
    modify(qp, &mut a, mask)?;
    a.qp_state = verbs::IBV_QPS_RTR;
    modify(qp, &mut a, verbs::IBV_QP_STATE)?;
    a.qp_state = verbs::IBV_QPS_RTS;
    a.sq_psn = 0;
    modify(qp, &mut a, verbs::IBV_QP_STATE | verbs::IBV_QP_SQ_PSN)
}

pub fn is_ud(qp_type: u32) -> bool {
    qp_type == IBV_QPT_UD as u32
}

/// Destroy the CQs and completion channels the library made for the id
/// (an XRC receive id with an SRQ keeps them: the SRQ uses them).
pub fn destroy_cqs(idp: &Id) {
    if idp.qp_type() == IBV_QPT_XRC_RECV as u32 && !idp.srq().is_null() {
        return;
    }
    let (scq, rcq) = (idp.send_cq(), idp.recv_cq());
    // SAFETY: CQs the library created for this id (or NULL).
    unsafe {
        if !rcq.is_null() {
            verbs::ibv_destroy_cq(rcq);
            if !scq.is_null() && scq != rcq {
                verbs::ibv_destroy_cq(scq);
            }
            idp.set_send_cq(std::ptr::null_mut());
            idp.set_recv_cq(std::ptr::null_mut());
        }
    }
    let (sch, rch) = (idp.send_cq_channel(), idp.recv_cq_channel());
    // SAFETY: completion channels the library created for this id (or NULL).
    unsafe {
        if !rch.is_null() {
            verbs::ibv_destroy_comp_channel(rch);
            if !sch.is_null() && sch != rch {
                verbs::ibv_destroy_comp_channel(sch);
            }
            idp.set_send_cq_channel(std::ptr::null_mut());
            idp.set_recv_cq_channel(std::ptr::null_mut());
        }
    }
}

/// A completion channel and a CQ per direction that needs one (size 0:
/// none), with the id as CQ context.
fn create_cqs(idp: &Id, send: u32, recv: u32) -> Result<()> {
    let ctx = idp.verbs();
    let me = idp as *const Id as *mut libc::c_void;
    // A channel and a CQ, each stored as soon as it exists (so that
    // destroy_cqs finds whatever a failure leaves).
    let one = |size: u32, set_ch: &dyn Fn(*mut ibv_comp_channel), set_cq: &dyn Fn(*mut ibv_cq)| -> Result<()> {
        if size == 0 {
            return Ok(());
        }
        let cqe = i32::try_from(size).map_err(|_| Error::INVAL)?;
        // SAFETY: an open device context.
        let ch = unsafe { verbs::ibv_create_comp_channel(ctx) };
        if ch.is_null() {
            return Err(last_err());
        }
        set_ch(ch);
        // SAFETY: as above; the channel was just made.
        let cq = unsafe { verbs::ibv_create_cq(ctx, cqe, me, ch, 0) };
        if cq.is_null() {
            return Err(last_err());
        }
        set_cq(cq);
        Ok(())
    };
    one(recv, &|c| idp.set_recv_cq_channel(c), &|c| idp.set_recv_cq(c))
        .and_then(|_| one(send, &|c| idp.set_send_cq_channel(c), &|c| idp.set_send_cq(c)))
        .inspect_err(|_| destroy_cqs(idp))
}

fn xrcd(idp: &Id) -> Result<*mut ibv_xrcd> {
    idp.device().ok_or(Error::INVAL)?.device().xrcd()
}

/// ECE at QP creation: learn the QP's own ECE; for a QP made for a
/// connection request, tell the provider what the peer offered.
fn init_ece(idp: &Id, qp: *mut ibv_qp) -> Result<()> {
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
fn set_local_ece(idp: &Id, qp: *mut ibv_qp) -> Result<()> {
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
pub fn create_qp_ex(idp: &Id, attr: &mut ibv_qp_init_attr_ex) -> Result<()> {
    let ctx = idp.verbs();
    // Upstream dereferences a missing device; there is nothing to create a
    // QP on.
    if !idp.qp().is_null() || ctx.is_null() {
        return Err(Error::INVAL);
    }
    if attr.comp_mask & verbs::IBV_QP_INIT_ATTR_PD == 0 || attr.pd.is_null() {
        attr.comp_mask |= verbs::IBV_QP_INIT_ATTR_PD;
        attr.pd = idp.pd();
    } else {
        // SAFETY: the caller's live PD.
        if unsafe { (*attr.pd).context } != ctx {
            return Err(Error::INVAL);
        }
    }
    let (id_scq, id_rcq) = (idp.send_cq(), idp.recv_cq());
    if (!id_rcq.is_null() && !attr.recv_cq.is_null() && id_rcq != attr.recv_cq)
        || (!id_scq.is_null() && !attr.send_cq.is_null() && id_scq != attr.send_cq)
    {
        return Err(Error::INVAL);
    }
    if idp.qp_type() == IBV_QPT_XRC_RECV as u32
        && (attr.comp_mask & verbs::IBV_QP_INIT_ATTR_XRCD == 0 || attr.xrcd.is_null())
    {
        attr.xrcd = xrcd(idp)?;
        attr.comp_mask |= verbs::IBV_QP_INIT_ATTR_XRCD;
    }
    let send = if !attr.send_cq.is_null() || !id_scq.is_null() { 0 } else { attr.cap.max_send_wr };
    let recv = if !attr.recv_cq.is_null() || !id_rcq.is_null() { 0 } else { attr.cap.max_recv_wr };
    create_cqs(idp, send, recv)?;
    if attr.send_cq.is_null() {
        attr.send_cq = idp.send_cq();
    }
    if attr.recv_cq.is_null() {
        attr.recv_cq = idp.recv_cq();
    }
    if !idp.srq().is_null() && attr.srq.is_null() {
        attr.srq = idp.srq();
    }
    // SAFETY: open context, caller's attributes (completed above).
    let qp = unsafe { verbs::rdmacm_shim_create_qp_ex(ctx, attr) };
    if qp.is_null() {
        let e = last_err();
        destroy_cqs(idp);
        return Err(e);
    }
    let r = init_ece(idp, qp)
        .and_then(|_| if is_ud(idp.qp_type()) { init_ud_qp(idp, qp) } else { init_conn_qp(idp, qp) })
        .and_then(|_| set_local_ece(idp, qp));
    if let Err(e) = r {
        // SAFETY: the QP we just made.
        unsafe { verbs::ibv_destroy_qp(qp) };
        destroy_cqs(idp);
        return Err(e);
    }
    // SAFETY: live QP.
    idp.set_pd(unsafe { (*qp).pd });
    idp.set_qp(qp);
    Ok(())
}

/// `rdma_create_qp`: the plain attributes, PD `pd` or the id's; the
/// completed attributes (CQs) are written back.
pub fn create_qp(idp: &Id, pd: *mut ibv_pd, attr: &mut ibv_qp_init_attr) -> Result<()> {
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
    ex.pd = if pd.is_null() { idp.pd() } else { pd };
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
#[inline(always)]
pub fn destroy_qp(idp: &Id) {
    let qp = idp.qp();
    if !qp.is_null() {
        // SAFETY: the id's QP.
        unsafe { verbs::ibv_destroy_qp(qp) };
    }
    idp.set_qp(std::ptr::null_mut());
    destroy_cqs(idp);
}

/// `rdma_create_srq_ex`.
pub fn create_srq_ex(idp: &Id, attr: &mut ibv_srq_init_attr_ex) -> Result<()> {
    let ctx = idp.verbs();
    if attr.comp_mask & verbs::IBV_SRQ_INIT_ATTR_TYPE == 0 || ctx.is_null() {
        return Err(Error::INVAL);
    }
    if attr.comp_mask & verbs::IBV_SRQ_INIT_ATTR_PD == 0 || attr.pd.is_null() {
        attr.pd = idp.pd();
        attr.comp_mask |= verbs::IBV_SRQ_INIT_ATTR_PD;
    }
    if attr.srq_type == verbs::IBV_SRQT_XRC {
        if attr.comp_mask & verbs::IBV_SRQ_INIT_ATTR_XRCD == 0 || attr.xrcd.is_null() {
            attr.xrcd = xrcd(idp)?;
        }
        if attr.comp_mask & verbs::IBV_SRQ_INIT_ATTR_CQ == 0 || attr.cq.is_null() {
            create_cqs(idp, 0, attr.attr.max_wr)?;
            attr.cq = idp.recv_cq();
        }
        attr.comp_mask |= verbs::IBV_SRQ_INIT_ATTR_XRCD | verbs::IBV_SRQ_INIT_ATTR_CQ;
    }
    // SAFETY: open context, completed attributes.
    let srq = unsafe { verbs::rdmacm_shim_create_srq_ex(ctx, attr) };
    if srq.is_null() {
        let e = last_err();
        destroy_cqs(idp);
        return Err(e);
    }
    if idp.pd().is_null() {
        idp.set_pd(attr.pd);
    }
    idp.set_srq(srq);
    Ok(())
}

/// `rdma_create_srq`: basic SRQ (XRC for XRC receive ids) on `pd`.
pub fn create_srq(idp: &Id, pd: *mut ibv_pd, attr: &mut ibv_srq_init_attr) -> Result<()> {
    // SAFETY: all-zero is valid for the extended attributes.
    let mut ex: ibv_srq_init_attr_ex = unsafe { std::mem::zeroed() };
    ex.srq_context = attr.srq_context;
    ex.attr = attr.attr;
    ex.comp_mask = verbs::IBV_SRQ_INIT_ATTR_TYPE | verbs::IBV_SRQ_INIT_ATTR_PD;
    ex.srq_type = if idp.qp_type() == IBV_QPT_XRC_RECV as u32 { verbs::IBV_SRQT_XRC } else { verbs::IBV_SRQT_BASIC };
    ex.pd = pd;
    let r = create_srq_ex(idp, &mut ex);
    attr.srq_context = ex.srq_context;
    attr.attr = ex.attr;
    r
}

/// `rdma_destroy_srq`.
pub fn destroy_srq(idp: &Id) {
    let srq = idp.srq();
    if !srq.is_null() {
        // SAFETY: the id's SRQ.
        unsafe { verbs::ibv_destroy_srq(srq) };
    }
    idp.set_srq(std::ptr::null_mut());
    destroy_cqs(idp);
}
