//! Connections: listen, connect, accept, reject, establish, disconnect,
//! sync endpoints (`rdma_create_ep`, `rdma_get_request`) and ECE
//! (reference §4.10–4.11).

use super::device::CmDevice;
use super::event::{self, ack_event};
use super::id::{self, IdPriv, IdState};
use super::qp;
use super::registry;
use crate::abi::*;
use crate::error::{Error, Result};
use crate::ucma::{self, cmd};
use crate::verbs;
use std::sync::atomic::Ordering;

use rdma_cm_event_type as E;

fn device(idp: &IdPriv) -> Result<&CmDevice> {
    let d = idp.dev.load(Ordering::Acquire);
    // SAFETY: the id holds a reference on its device.
    (!d.is_null()).then(|| unsafe { &*d }).ok_or(Error::Errno(libc::EINVAL))
}

/// Upstream's parameter rules (PS_TCP only): a connection needs a QP or
/// parameters; explicit read depths must fit the device.
fn valid_param(idp: &IdPriv, param: Option<&rdma_conn_param>) -> Result<()> {
    if idp.id().ps != RDMA_PS_TCP as u32 {
        return Ok(());
    }
    let Some(p) = param else {
        return if idp.id().qp.is_null() { Err(Error::Errno(libc::EINVAL)) } else { Ok(()) };
    };
    let dev = device(idp)?;
    if p.responder_resources != RDMA_MAX_RESP_RES as u8 && p.responder_resources > dev.max_responder_resources {
        return Err(Error::Errno(libc::EINVAL));
    }
    if p.initiator_depth != RDMA_MAX_INIT_DEPTH as u8 && p.initiator_depth > dev.max_initiator_depth {
        return Err(Error::Errno(libc::EINVAL));
    }
    Ok(())
}

/// The kernel's connection parameters: `ai_connect` data first, then the
/// caller's private data — refused (EINVAL) when both do not fit the
/// kernel's 256 bytes (upstream overflows its buffer).
fn conn_to_kern(st: &IdState, src: Option<&rdma_conn_param>, qp_num: u32, srq: u8) -> Result<cmd::ConnParam> {
    let mut k = cmd::ConnParam::zeroed();
    k.qp_num = qp_num;
    k.srq = srq;
    k.responder_resources = st.responder_resources;
    k.initiator_depth = st.initiator_depth;
    k.valid = 1;
    let mut data: Vec<u8> = st.connect_data.clone();
    match src {
        Some(p) => {
            k.flow_control = p.flow_control;
            k.retry_count = p.retry_count;
            k.rnr_retry_count = p.rnr_retry_count;
            if !p.private_data.is_null() && p.private_data_len > 0 {
                // SAFETY: the caller's buffer of private_data_len bytes.
                data.extend_from_slice(unsafe {
                    std::slice::from_raw_parts(p.private_data as *const u8, p.private_data_len as usize)
                });
            }
        }
        None => {
            k.retry_count = 7;
            k.rnr_retry_count = 7;
        }
    }
    if data.len() > u8::MAX as usize {
        return Err(Error::Errno(libc::EINVAL));
    }
    k.private_data[..data.len()].copy_from_slice(&data);
    k.private_data_len = data.len() as u8;
    Ok(k)
}

fn qp_info(idp: &IdPriv) -> Option<(u32, u8)> {
    let q = idp.id().qp;
    // SAFETY: the id's live QP.
    (!q.is_null()).then(|| unsafe {
        let srq: *mut ibv_srq = verbs::field(q, verbs::IBV_QP_OFF_SRQ);
        (verbs::qp_num(q), !srq.is_null() as u8)
    })
}

pub fn listen(idp: &IdPriv, backlog: i32) -> Result<()> {
    ucma::listen(idp.fd(), idp.handle(), backlog as u32)?;
    id::query_addr(idp)
}

pub fn connect(idp: &IdPriv, param: *const rdma_conn_param) -> Result<()> {
    // SAFETY: NULL or the caller's parameters.
    let param = unsafe { param.as_ref() };
    valid_param(idp, param)?;
    let dev = device(idp)?;
    let (qp_num, srq) = qp_info(idp).unwrap_or_else(|| param.map_or((0, 0), |p| (p.qp_num, p.srq)));
    let (k, ece) = {
        let mut st = idp.lock();
        st.initiator_depth = match param {
            Some(p) if p.initiator_depth != RDMA_MAX_INIT_DEPTH as u8 => p.initiator_depth,
            _ => dev.max_initiator_depth,
        };
        st.responder_resources = match param {
            Some(p) if p.responder_resources != RDMA_MAX_RESP_RES as u8 => p.responder_resources,
            _ => dev.max_responder_resources,
        };
        (conn_to_kern(&st, param, qp_num, srq)?, cmd::Ece { vendor_id: st.local_ece.0, attr_mod: st.local_ece.1 })
    };
    ucma::connect(idp.fd(), idp.handle(), &k, ece)?;
    idp.lock().connect_data = Vec::new();
    id::complete(idp, &[E::RDMA_CM_EVENT_ESTABLISHED as u32, E::RDMA_CM_EVENT_CONNECT_RESPONSE as u32])
}

pub fn accept(idp: &IdPriv, param: *const rdma_conn_param) -> Result<()> {
    // SAFETY: NULL or the caller's parameters.
    let param = unsafe { param.as_ref() };
    let (qp_num, srq) = match (qp_info(idp), param) {
        (Some(q), _) => q,
        (None, Some(p)) => (p.qp_num, p.srq),
        // Upstream reads the NULL parameters.
        (None, None) => return Err(Error::Errno(libc::EINVAL)),
    };
    valid_param(idp, param)?;
    let dev = device(idp)?;
    let (init_depth, resp_res) = {
        let mut st = idp.lock();
        st.initiator_depth = match param {
            Some(p) if p.initiator_depth != RDMA_MAX_INIT_DEPTH as u8 => p.initiator_depth,
            _ => st.initiator_depth.min(dev.max_initiator_depth),
        };
        st.responder_resources = match param {
            Some(p) if p.responder_resources != RDMA_MAX_RESP_RES as u8 => p.responder_resources,
            _ => st.responder_resources.min(dev.max_responder_resources),
        };
        (st.initiator_depth, st.responder_resources)
    };
    let ud = qp::is_ud(idp.id().qp_type);
    if !ud {
        qp::to_rtr(idp, resp_res)?;
        qp::to_rts(idp, init_depth)?;
    }
    let (k, ece) = {
        let st = idp.lock();
        (conn_to_kern(&st, param, qp_num, srq)?, cmd::Ece { vendor_id: st.remote_ece.0, attr_mod: st.local_ece.1 })
    };
    if let Err(e) = ucma::accept(idp.fd(), idp.handle(), idp.id_ptr() as u64, &k, ece) {
        let _ = qp::to_state(idp, verbs::IBV_QPS_ERR);
        return Err(e);
    }
    if ud {
        let id = idp.id_mut();
        if idp.sync.load(Ordering::Acquire) && !id.event.is_null() {
            let ev = std::mem::replace(&mut id.event, std::ptr::null_mut());
            let _ = ack_event(ev);
        }
        return Ok(());
    }
    id::complete(idp, &[E::RDMA_CM_EVENT_ESTABLISHED as u32])
}

pub fn reject(idp: &IdPriv, data: *const libc::c_void, len: u8, reason: u8) -> Result<()> {
    let d: &[u8] = if data.is_null() || len == 0 {
        &[]
    } else {
        // SAFETY: the caller's buffer of len bytes.
        unsafe { std::slice::from_raw_parts(data as *const u8, len as usize) }
    };
    ucma::reject(idp.fd(), idp.handle(), d, reason)
}

/// The active side's answer to CONNECT_RESPONSE: QP to RTR and RTS, then
/// ACCEPT without parameters (the kernel sends the RTU).
pub fn process_conn_resp(idp: &IdPriv) -> Result<()> {
    let r = qp::to_rtr(idp, RDMA_MAX_RESP_RES as u8)
        .and_then(|_| qp::to_rts(idp, RDMA_MAX_INIT_DEPTH as u8))
        .and_then(|_| ucma::accept(idp.fd(), idp.handle(), 0, &cmd::ConnParam::zeroed(), cmd::Ece::default()));
    if r.is_err() {
        let _ = qp::to_state(idp, verbs::IBV_QPS_ERR);
    }
    r
}

/// CONNECT_RESPONSE on an id with a QP: apply the peer's ECE answer, finish
/// the connection, keep the options the provider settled on.
pub fn process_conn_resp_ece(idp: &IdPriv, ece: cmd::Ece) -> Result<()> {
    let local = idp.lock().local_ece;
    let mut set = ibv_ece { vendor_id: ece.vendor_id, options: ece.attr_mod, comp_mask: 0 };
    if ece.vendor_id == 0 {
        set = ibv_ece { vendor_id: local.0, options: 0, comp_mask: 0 };
    } else if ece.vendor_id != local.0 {
        let _ = qp::to_state(idp, verbs::IBV_QPS_ERR);
        return Err(Error::Errno(libc::EINVAL));
    }
    idp.lock().remote_ece.0 = ece.vendor_id;
    let q = idp.id().qp;
    // SAFETY: the id's live QP.
    let rc = unsafe { verbs::ibv_set_ece(q, &mut set) };
    if rc != 0 && rc != libc::EOPNOTSUPP {
        return Err(Error::Errno(rc));
    }
    process_conn_resp(idp)?;
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
pub fn establish(idp: &IdPriv) -> Result<()> {
    if !idp.id().qp.is_null() {
        return Err(Error::Errno(libc::EINVAL));
    }
    process_conn_resp(idp)
}

pub fn disconnect(idp: &IdPriv) -> Result<()> {
    match id::transport(idp) {
        Some(verbs::IBV_TRANSPORT_IB) => qp::to_state(idp, verbs::IBV_QPS_ERR)?,
        Some(verbs::IBV_TRANSPORT_IWARP) => qp::to_state(idp, verbs::IBV_QPS_SQD)?,
        _ => return Err(Error::Errno(libc::EINVAL)),
    }
    ucma::disconnect(idp.fd(), idp.handle())?;
    id::complete(idp, &[E::RDMA_CM_EVENT_DISCONNECTED as u32])
}

/// `rdma_get_request` on a sync listener: the next connection request's
/// new id, with a QP when the endpoint was made with QP attributes.
pub fn get_request(listen: &IdPriv) -> Result<*mut rdma_cm_id> {
    if !listen.sync.load(Ordering::Acquire) {
        return Err(Error::Errno(libc::EINVAL));
    }
    let lid = listen.id_mut();
    if !lid.event.is_null() {
        let ev = std::mem::replace(&mut lid.event, std::ptr::null_mut());
        let _ = ack_event(ev);
    }
    let ev = event::get_event(lid.channel)?;
    // SAFETY: a live event just returned.
    let e = unsafe { &*ev };
    let r = if e.event == E::RDMA_CM_EVENT_REJECTED as u32 {
        Err(Error::Errno(libc::ECONNREFUSED))
    } else if e.status != 0 {
        Err(Error::Errno(e.status.abs()))
    } else if e.event != E::RDMA_CM_EVENT_CONNECT_REQUEST as u32 {
        Err(Error::Errno(libc::EINVAL))
    } else {
        Ok(())
    };
    if let Err(err) = r {
        lid.event = ev;
        return Err(err);
    }
    let child = registry::id_priv(e.id)?;
    let attr = listen.lock().qp_init_attr;
    if let Some(mut a) = attr {
        if let Err(err) = qp::create_qp(child, lid.pd, &mut a) {
            lid.event = ev;
            return Err(err);
        }
    }
    child.id_mut().event = ev;
    Ok(e.id)
}

/// `rdma_create_ep`: a sync id, bound (passive) or resolved with a route
/// and optionally a QP (active).
pub fn create_ep(res: *const rdma_addrinfo, pd: *mut ibv_pd, attr: *mut ibv_qp_init_attr) -> Result<*mut rdma_cm_id> {
    // SAFETY: NULL or the caller's addrinfo.
    let res = unsafe { res.as_ref() }.ok_or(Error::Errno(libc::EINVAL))?;
    let idptr = id::create_id_typed(std::ptr::null_mut(), std::ptr::null_mut(), res.ai_port_space as u32, res.ai_qp_type as u32)?;
    let idp = registry::id_priv(idptr)?;
    match setup_ep(idp, res, pd, attr) {
        Ok(()) => Ok(idptr),
        Err(e) => {
            let _ = destroy_ep(idp);
            Err(e)
        }
    }
}

fn setup_ep(idp: &IdPriv, res: &rdma_addrinfo, pd: *mut ibv_pd, attr: *mut ibv_qp_init_attr) -> Result<()> {
    if res.ai_flags & RAI_PASSIVE != 0 {
        id::bind_addr(idp, res.ai_src_addr)?;
        if !pd.is_null() {
            idp.id_mut().pd = pd;
        }
        // SAFETY: NULL or the caller's attributes.
        if let Some(a) = unsafe { attr.as_ref() } {
            let mut copy = *a;
            copy.qp_type = res.ai_qp_type as u32;
            idp.lock().qp_init_attr = Some(copy);
        }
        return Ok(());
    }
    id::resolve_addr(idp, res.ai_src_addr, res.ai_dst_addr, 2000)?;
    if res.ai_route_len > 0 {
        id::set_option(idp, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, res.ai_route, res.ai_route_len)?;
        id::complete(idp, &[E::RDMA_CM_EVENT_ROUTE_RESOLVED as u32])?;
    } else {
        id::resolve_route(idp, 2000)?;
    }
    // SAFETY: NULL or the caller's attributes.
    if let Some(a) = unsafe { attr.as_mut() } {
        a.qp_type = res.ai_qp_type as u32;
        qp::create_qp(idp, pd, a)?;
    }
    if res.ai_connect_len > 0 && !res.ai_connect.is_null() {
        if res.ai_connect_len > cmd::MAX_PRIVATE_DATA {
            return Err(Error::Errno(libc::EINVAL));
        }
        // SAFETY: the addrinfo's connect data of ai_connect_len bytes.
        let d = unsafe { std::slice::from_raw_parts(res.ai_connect as *const u8, res.ai_connect_len) };
        idp.lock().connect_data = d.to_vec();
    }
    Ok(())
}

/// `rdma_destroy_ep`: QP, SRQ, stored attributes, id.
pub fn destroy_ep(idp: &IdPriv) -> Result<()> {
    if !idp.id().qp.is_null() {
        qp::destroy_qp(idp);
    }
    if !idp.id().srq.is_null() {
        qp::destroy_srq(idp);
    }
    idp.lock().qp_init_attr = None;
    id::destroy_id(idp)
}

pub fn set_local_ece(idp: &IdPriv, ece: *const ibv_ece) -> Result<()> {
    // SAFETY: NULL or the caller's ECE.
    let e = unsafe { ece.as_ref() }.ok_or(Error::Errno(libc::EINVAL))?;
    if !idp.id().qp.is_null() || e.vendor_id == 0 || e.comp_mask != 0 {
        return Err(Error::Errno(libc::EINVAL));
    }
    idp.lock().local_ece = (e.vendor_id, e.options);
    Ok(())
}

pub fn get_remote_ece(idp: &IdPriv, ece: *mut ibv_ece) -> Result<()> {
    // SAFETY: NULL or the caller's ECE.
    let e = unsafe { ece.as_mut() }.ok_or(Error::Errno(libc::EINVAL))?;
    if !idp.id().qp.is_null() {
        return Err(Error::Errno(libc::EINVAL));
    }
    let r = idp.lock().remote_ece;
    *e = ibv_ece { vendor_id: r.0, options: r.1, comp_mask: 0 };
    Ok(())
}
