//! Connections (rdma_listen(3), rdma_connect(3), rdma_accept(3),
//! rdma_reject(3), rdma_establish(3), rdma_disconnect(3)) and ECE
//! (rdma_set_local_ece(3), rdma_get_remote_ece(3)): the commands, and the
//! handler of CONNECT_RESPONSE. Waiting for the outcome on a sync id is
//! the business of `ops`.

use super::events;
use super::id::{Id, IdState, PrivateData};
use super::qp;
use crate::abi::*;
use crate::cmem::try_box;
use crate::error::{Error, Result};
use crate::ucma::{self, cmd};
use crate::verbs;

/// A caller's `struct rdma_conn_param`, its private data copied out.
#[derive(Clone, Copy, Debug, Default)]
pub struct ConnParams<'a> {
    pub private_data: &'a [u8],
    pub responder_resources: u8,
    pub initiator_depth: u8,
    pub flow_control: u8,
    pub retry_count: u8,
    pub rnr_retry_count: u8,
    pub srq: u8,
    pub qp_num: u32,
}

/// The device limits an id's connection is checked against.
fn limits(idp: &Id) -> Result<(u8, u8)> {
    let o = idp.device().ok_or(Error::INVAL)?.opened();
    Ok((o.max_initiator_depth, o.max_responder_resources))
}

/// Upstream's parameter rules (PS_TCP only): a connection needs a QP or
/// parameters; explicit read depths must fit the device's limits `lim`.
fn valid_param(idp: &Id, param: Option<&ConnParams>, (max_init, max_resp): (u8, u8)) -> Result<()> {
    if idp.ps() != RDMA_PS_TCP as u32 {
        return Ok(());
    }
    let Some(p) = param else {
        return if idp.qp().is_null() { Err(Error::INVAL) } else { Ok(()) };
    };
    if p.responder_resources != RDMA_MAX_RESP_RES as u8 && p.responder_resources > max_resp {
        return Err(Error::INVAL);
    }
    if p.initiator_depth != RDMA_MAX_INIT_DEPTH as u8 && p.initiator_depth > max_init {
        return Err(Error::INVAL);
    }
    Ok(())
}

/// What a CONNECT or ACCEPT carries from the id's state, copied out under
/// its lock: the read depths and the `ai_connect` data (at most 255
/// bytes, copied only when there is some), so that the command is then
/// built in place, outside the lock.
struct FromState {
    responder_resources: u8,
    initiator_depth: u8,
    head: Option<Box<PrivateData>>,
}

impl FromState {
    /// EINVAL when the head and the caller's private data do not fit the
    /// kernel's 255 bytes together (upstream overflows its buffer);
    /// ENOMEM when the head cannot be copied.
    fn new(st: &IdState, src: Option<&ConnParams>) -> Result<FromState> {
        let h = st.rare.as_ref().and_then(|r| r.connect_data.as_deref());
        let data = src.map_or(0, |p| p.private_data.len());
        if h.map_or(0, |h| h.as_bytes().len()) + data > u8::MAX as usize {
            return Err(Error::INVAL);
        }
        let head = match h {
            Some(h) if !h.as_bytes().is_empty() => Some(try_box(*h)?),
            _ => None,
        };
        Ok(FromState { responder_resources: st.responder_resources, initiator_depth: st.initiator_depth, head })
    }

    /// Whether `ai_connect` data goes out with the command.
    fn has_head(&self) -> bool {
        self.head.is_some()
    }

    /// The kernel's connection parameters, written into the zeroed `k` of
    /// the command being built: the `ai_connect` data first, then the
    /// caller's private data (their sum was checked by `new`).
    fn fill(&self, k: &mut cmd::ConnParam, src: Option<&ConnParams>, qp_num: u32, srq: u8) {
        k.qp_num = qp_num;
        k.srq = srq;
        k.responder_resources = self.responder_resources;
        k.initiator_depth = self.initiator_depth;
        k.valid = 1;
        let data = src.map_or(&[][..], |p| p.private_data);
        match src {
            Some(p) => {
                k.flow_control = p.flow_control;
                k.retry_count = p.retry_count;
                k.rnr_retry_count = p.rnr_retry_count;
            }
            None => {
                k.retry_count = 7;
                k.rnr_retry_count = 7;
            }
        }
        let head = self.head.as_deref().map_or(&[][..], |h| h.as_bytes());
        let (hl, len) = (head.len(), head.len() + data.len());
        // (Each copy only when there is something: most connections carry
        // no private data, and an empty copy is still a call.)
        if hl > 0 {
            k.private_data[..hl].copy_from_slice(head);
        }
        if len > hl {
            k.private_data[hl..len].copy_from_slice(data);
        }
        k.private_data_len = len as u8;
    }
}

/// The QP number and SRQ flag of the id's own QP.
fn qp_info(idp: &Id) -> Option<(u32, u8)> {
    let q = idp.qp();
    // SAFETY: the id's live QP.
    (!q.is_null()).then(|| unsafe { ((*q).qp_num, !(*q).srq.is_null() as u8) })
}

pub fn listen(idp: &Id, backlog: i32) -> Result<()> {
    ucma::listen(idp.fd(), idp.handle(), backlog as u32)?;
    idp.query_addr()
}

/// CONNECT (the outcome arrives as an event).
pub fn connect(idp: &Id, param: Option<&ConnParams>) -> Result<()> {
    let lim @ (max_init, max_resp) = limits(idp)?;
    valid_param(idp, param, lim)?;
    let (qp_num, srq) = qp_info(idp).unwrap_or_else(|| param.map_or((0, 0), |p| (p.qp_num, p.srq)));
    let (from, ece) = {
        let mut st = idp.lock();
        st.initiator_depth = match param {
            Some(p) if p.initiator_depth != RDMA_MAX_INIT_DEPTH as u8 => p.initiator_depth,
            _ => max_init,
        };
        st.responder_resources = match param {
            Some(p) if p.responder_resources != RDMA_MAX_RESP_RES as u8 => p.responder_resources,
            _ => max_resp,
        };
        (FromState::new(&st, param)?, cmd::Ece { vendor_id: st.local_ece.0, attr_mod: st.local_ece.1 })
    };
    ucma::connect(idp.fd(), idp.handle(), ece, |k| from.fill(k, param, qp_num, srq))?;
    if from.has_head() {
        // The ai_connect data went out once.
        if let Some(r) = idp.lock().rare.as_mut() {
            r.connect_data = None;
        }
    }
    Ok(())
}

/// ACCEPT (with the QP moved to RTS first); true when the caller must wait
/// for ESTABLISHED (connected QPs, not UD).
pub fn accept(idp: &Id, param: Option<&ConnParams>) -> Result<bool> {
    let (qp_num, srq) = match (qp_info(idp), param) {
        (Some(q), _) => q,
        (None, Some(p)) => (p.qp_num, p.srq),
        // Upstream reads the NULL parameters.
        (None, None) => return Err(Error::INVAL),
    };
    let lim @ (max_init, max_resp) = limits(idp)?;
    valid_param(idp, param, lim)?;
    let (init_depth, resp_res) = {
        let mut st = idp.lock();
        st.initiator_depth = match param {
            Some(p) if p.initiator_depth != RDMA_MAX_INIT_DEPTH as u8 => p.initiator_depth,
            _ => st.initiator_depth.min(max_init),
        };
        st.responder_resources = match param {
            Some(p) if p.responder_resources != RDMA_MAX_RESP_RES as u8 => p.responder_resources,
            _ => st.responder_resources.min(max_resp),
        };
        (st.initiator_depth, st.responder_resources)
    };
    let ud = qp::is_ud(idp.qp_type());
    if !ud {
        qp::to_rts_from_init(idp, resp_res, init_depth)?;
    }
    let (from, ece) = {
        let st = idp.lock();
        (FromState::new(&st, param)?, cmd::Ece { vendor_id: st.remote_ece.0, attr_mod: st.local_ece.1 })
    };
    if let Err(e) =
        ucma::accept(idp.fd(), idp.handle(), idp as *const Id as u64, ece, |k| from.fill(k, param, qp_num, srq))
    {
        let _ = qp::to_state(idp, verbs::IBV_QPS_ERR);
        return Err(e);
    }
    if ud && idp.is_sync() {
        events::ack_stashed(idp);
    }
    Ok(!ud)
}

pub fn reject(idp: &Id, data: &[u8], reason: u8) -> Result<()> {
    ucma::reject(idp.fd(), idp.handle(), data, reason)
}

/// The active side's answer to CONNECT_RESPONSE: QP to RTR and RTS, then
/// ACCEPT without parameters (the kernel sends the RTU).
fn finish_connect(idp: &Id) -> Result<()> {
    let r = qp::to_rts_from_init(idp, RDMA_MAX_RESP_RES as u8, RDMA_MAX_INIT_DEPTH as u8)
        .and_then(|_| ucma::accept(idp.fd(), idp.handle(), 0, cmd::Ece::default(), |_| {}));
    if r.is_err() {
        let _ = qp::to_state(idp, verbs::IBV_QPS_ERR);
    }
    r
}

/// CONNECT_RESPONSE on an id with a QP: apply the peer's ECE answer, finish
/// the connection, keep the options the provider settled on.
pub fn process_conn_resp(idp: &Id, ece: cmd::Ece) -> Result<()> {
    let local = idp.lock().local_ece;
    let mut set = ibv_ece { vendor_id: ece.vendor_id, options: ece.attr_mod, comp_mask: 0 };
    if ece.vendor_id == 0 {
        set = ibv_ece { vendor_id: local.0, options: 0, comp_mask: 0 };
    } else if ece.vendor_id != local.0 {
        let _ = qp::to_state(idp, verbs::IBV_QPS_ERR);
        return Err(Error::INVAL);
    }
    idp.lock().remote_ece.0 = ece.vendor_id;
    let q = idp.qp();
    // SAFETY: the id's live QP.
    let rc = unsafe { verbs::ibv_set_ece(q, &mut set) };
    if rc != 0 && rc != libc::EOPNOTSUPP {
        return Err(Error::Errno(rc));
    }
    finish_connect(idp)?;
    let mut got = ibv_ece::default();
    // SAFETY: as above.
    let rc = unsafe { verbs::ibv_query_ece(q, &mut got) };
    if rc != 0 && rc != libc::EOPNOTSUPP {
        let _ = qp::to_state(idp, verbs::IBV_QPS_ERR);
        return Err(Error::Errno(rc));
    }
    idp.lock().local_ece.1 = if rc == libc::EOPNOTSUPP { 0 } else { got.options };
    Ok(())
}

/// `rdma_establish`: for ids whose QP the application drives itself.
pub fn establish(idp: &Id) -> Result<()> {
    if !idp.qp().is_null() {
        return Err(Error::INVAL);
    }
    finish_connect(idp)
}

/// QP to ERR (IB) or SQD (iWARP), then DISCONNECT.
pub fn disconnect(idp: &Id) -> Result<()> {
    match idp.transport() {
        Some(verbs::IBV_TRANSPORT_IB) => qp::to_state(idp, verbs::IBV_QPS_ERR)?,
        Some(verbs::IBV_TRANSPORT_IWARP) => qp::to_state(idp, verbs::IBV_QPS_SQD)?,
        _ => return Err(Error::INVAL),
    }
    ucma::disconnect(idp.fd(), idp.handle())
}

pub fn set_local_ece(idp: &Id, e: &ibv_ece) -> Result<()> {
    if !idp.qp().is_null() || e.vendor_id == 0 || e.comp_mask != 0 {
        return Err(Error::INVAL);
    }
    idp.lock().local_ece = (e.vendor_id, e.options);
    Ok(())
}

pub fn get_remote_ece(idp: &Id) -> Result<ibv_ece> {
    if !idp.qp().is_null() {
        return Err(Error::INVAL);
    }
    let r = idp.lock().remote_ece;
    Ok(ibv_ece { vendor_id: r.0, options: r.1, comp_mask: 0 })
}
