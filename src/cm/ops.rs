//! Operations that wait for their outcome on a sync id (one made with a
//! NULL channel): the command of the family that owns it, then the event
//! it produces, read through the dispatcher from the id's private channel
//! and kept in `id->event` (upstream's `ucma_complete`). On an async id
//! they return once the command is written. Also the sync endpoints
//! (rdma_create_ep(3), rdma_get_request(3)).

use super::conn::{self, ConnParams};
use super::dispatch;
use super::events;
use super::id::{self, Id, PrivateData};
use super::lifecycle;
use super::mcast;
use super::qp;
use super::resolve_ai;
use crate::abi::*;
use crate::addr::model::Hints;
use crate::cmem::Shared;
use crate::error::{Error, Result};
use crate::sockaddr::RawAddr;
use crate::ucma::KernelBuf;
use std::ffi::CStr;

use rdma_cm_event_type as E;

/// Sync ids: wait for this operation's event and turn its status into
/// errno. Unlike upstream the event type is checked: an unexpected event
/// is an error (EPROTO, or its status), left in `id->event` for the caller
/// to inspect.
#[inline]
pub fn complete(idp: &Id, expected: &[E]) -> Result<()> {
    // An async id (the usual case) returns here, with no call.
    if !idp.is_sync() {
        return Ok(());
    }
    wait_event(idp, expected)
}

#[inline(never)]
fn wait_event(idp: &Id, expected: &[E]) -> Result<()> {
    events::ack_stashed(idp);
    let ch = idp.lock().channel.clone();
    let d = dispatch::get_event(&ch)?;
    idp.set_event(d.ptr);
    if d.status != 0 {
        return Err(Error::Errno(if d.event == E::RDMA_CM_EVENT_REJECTED as u32 {
            libc::ECONNREFUSED
        } else {
            d.status.abs()
        }));
    }
    if !expected.iter().any(|&e| e as u32 == d.event) {
        return Err(Error::Errno(libc::EPROTO));
    }
    Ok(())
}

pub fn resolve_addr(idp: &Id, src: Option<&[u8]>, dst: &[u8], timeout_ms: i32) -> Result<()> {
    idp.resolve_addr(src, dst, timeout_ms)?;
    complete(idp, &[E::RDMA_CM_EVENT_ADDR_RESOLVED, E::RDMA_CM_EVENT_ADDR_ERROR])
}

pub fn resolve_route(idp: &Id, timeout_ms: i32) -> Result<()> {
    idp.resolve_route(timeout_ms)?;
    complete(idp, &[E::RDMA_CM_EVENT_ROUTE_RESOLVED, E::RDMA_CM_EVENT_ROUTE_ERROR])
}

pub fn connect(idp: &Id, param: Option<&ConnParams>) -> Result<()> {
    conn::connect(idp, param)?;
    complete(idp, &[E::RDMA_CM_EVENT_ESTABLISHED, E::RDMA_CM_EVENT_CONNECT_RESPONSE])
}

pub fn accept(idp: &Id, param: Option<&ConnParams>) -> Result<()> {
    if conn::accept(idp, param)? {
        complete(idp, &[E::RDMA_CM_EVENT_ESTABLISHED])?;
    }
    Ok(())
}

pub fn disconnect(idp: &Id) -> Result<()> {
    conn::disconnect(idp)?;
    complete(idp, &[E::RDMA_CM_EVENT_DISCONNECTED])
}

pub fn join(idp: &Shared<Id>, addr: RawAddr, flags: u16, context: *mut libc::c_void) -> Result<()> {
    mcast::join(idp, addr, flags, context)?;
    complete(idp, &[E::RDMA_CM_EVENT_MULTICAST_JOIN])
}

pub fn resolve_addrinfo(idp: &Id, node: Option<&CStr>, service: Option<&CStr>, hints: &Hints) -> Result<()> {
    resolve_ai::resolve_addrinfo(idp, node, service, hints)?;
    complete(idp, &[E::RDMA_CM_EVENT_ADDRINFO_RESOLVED, E::RDMA_CM_EVENT_ADDRINFO_ERROR]).map_err(|e| {
        resolve_ai::clear_resolving(idp);
        resolve_ai::positive(e)
    })
}

/// `rdma_get_request` on a sync listener: the next connection request's
/// new id, with a QP when the endpoint was made with QP attributes.
pub fn get_request(listen: &Id) -> Result<Shared<Id>> {
    if !listen.is_sync() {
        return Err(Error::INVAL);
    }
    events::ack_stashed(listen);
    let ch = listen.lock().channel.clone();
    let d = dispatch::get_event(&ch)?;
    let r = if d.event == E::RDMA_CM_EVENT_REJECTED as u32 {
        Err(Error::Errno(libc::ECONNREFUSED))
    } else if d.status != 0 {
        Err(Error::Errno(d.status.abs()))
    } else if d.event != E::RDMA_CM_EVENT_CONNECT_REQUEST as u32 {
        Err(Error::INVAL)
    } else {
        id::lookup(d.id)
    };
    let child = match r {
        Ok(c) => c,
        Err(e) => {
            listen.set_event(d.ptr);
            return Err(e);
        }
    };
    let attr = listen.lock().rare.as_ref().and_then(|r| r.qp_init_attr);
    if let Some(mut a) = attr {
        if let Err(e) = qp::create_qp(&child, listen.pd(), &mut a) {
            listen.set_event(d.ptr);
            return Err(e);
        }
    }
    child.set_event(d.ptr);
    Ok(child)
}

/// What `rdma_create_ep` reads of the caller's `rdma_addrinfo`; each
/// address or buffer as the C boundary found it, its error reported where
/// upstream would meet it.
pub struct EpInfo<'a> {
    pub flags: i32,
    pub qp_type: i32,
    pub port_space: i32,
    pub src: Result<Option<RawAddr>>,
    pub dst: Result<Option<RawAddr>>,
    /// `ai_route` (when `ai_route_len` is not 0), read by the kernel.
    pub route: Option<Result<KernelBuf>>,
    /// `ai_connect` (empty when NULL or of length 0).
    pub connect: Result<&'a [u8]>,
}

/// `rdma_create_ep`: a sync id, bound (passive) or resolved with a route
/// and optionally a QP (active).
pub fn create_ep(info: &EpInfo, pd: *mut ibv_pd, attr: Option<&mut ibv_qp_init_attr>) -> Result<Shared<Id>> {
    let idp = lifecycle::create_id_typed(
        std::ptr::null(),
        std::ptr::null_mut(),
        info.port_space as u32,
        info.qp_type as u32,
    )?;
    match setup_ep(&idp, info, pd, attr) {
        Ok(()) => Ok(idp),
        Err(e) => {
            let _ = destroy_ep(&idp);
            Err(e)
        }
    }
}

fn setup_ep(idp: &Shared<Id>, info: &EpInfo, pd: *mut ibv_pd, attr: Option<&mut ibv_qp_init_attr>) -> Result<()> {
    if info.flags & RAI_PASSIVE != 0 {
        idp.bind(info.src?.ok_or(Error::INVAL)?.as_bytes())?;
        if !pd.is_null() {
            idp.set_pd(pd);
        }
        if let Some(a) = attr {
            let mut copy = *a;
            copy.qp_type = info.qp_type as u32;
            idp.lock().rare()?.qp_init_attr = Some(copy);
        }
        return Ok(());
    }
    let dst = info.dst?.ok_or(Error::INVAL)?;
    resolve_addr(idp, info.src?.as_ref().map(|a| a.as_bytes()), dst.as_bytes(), 2000)?;
    match info.route {
        Some(route) => {
            idp.set_option(RDMA_OPTION_IB as u32, RDMA_OPTION_IB_PATH as u32, route?)?;
            complete(idp, &[E::RDMA_CM_EVENT_ROUTE_RESOLVED])?;
        }
        None => resolve_route(idp, 2000)?,
    }
    if let Some(a) = attr {
        a.qp_type = info.qp_type as u32;
        qp::create_qp(idp, pd, a)?;
    }
    let connect = info.connect?;
    if !connect.is_empty() {
        idp.lock().rare()?.connect_data = Some(crate::cmem::try_box(PrivateData::new(connect)?)?);
    }
    Ok(())
}

/// `rdma_destroy_ep`: QP, SRQ, stored attributes, id.
pub fn destroy_ep(idp: &Shared<Id>) -> Result<()> {
    if !idp.qp().is_null() {
        qp::destroy_qp(idp);
    }
    if !idp.srq().is_null() {
        qp::destroy_srq(idp);
    }
    if let Some(r) = idp.lock().rare.as_mut() {
        r.qp_init_attr = None;
    }
    lifecycle::destroy_id(idp)
}
