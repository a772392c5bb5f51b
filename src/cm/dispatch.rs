//! The event dispatcher (rdma_get_cm_event(3)): read the kernel's next
//! event on a channel, find the id (or membership) it belongs to, let the
//! family that owns the event finish it (addresses and routes in `id`,
//! connections in `conn`, multicast in `mcast`, address info in
//! `resolve_ai`), and hand the record out.
//!
//! No lock is held while a thread blocks in GET_EVENT: the kernel
//! serialises readers of one fd, and ids on different channels never wait
//! on one another.

use super::channel::Channel;
use super::conn;
use super::events::{self, Event, Record};
use super::id::{self, Id};
use super::lifecycle;
use super::mcast;
use super::qp;
use super::resolve_ai;
use crate::abi::*;
use crate::cmem::Shared;
use crate::error::Result;
use crate::ucma::{self, cmd};
use crate::verbs;

use rdma_cm_event_type as E;

/// An event handed out, and what the library needs to know of it (read
/// before the caller can ack it).
#[derive(Clone, Copy, Debug)]
pub struct Delivered {
    pub ptr: *mut rdma_cm_event,
    pub event: u32,
    pub status: i32,
    /// The event's `id` (for a connection request: the new id).
    pub id: *mut rdma_cm_id,
}

/// `rdma_get_cm_event` on a channel: the next event, processed, handed
/// out. The record is taken from the pool before the kernel event is read,
/// so that an exhausted heap fails the call without losing an event, and
/// nothing can fail after the read.
pub fn get_event(ch: &Channel) -> Result<Delivered> {
    let ev = read_event(ch, Record::take(ch.fd() as usize)?)?;
    let (event, status, id) = (ev.public.event, ev.public.status, ev.public.id);
    Ok(Delivered { ptr: events::publish(ev), event, status, id })
}

/// The next event on a channel, processed but kept by the library (not
/// handed to C): its owner acks it with `events::done`.
pub fn get_event_owned(ch: &Channel) -> Result<Record> {
    read_event(ch, Record::take(ch.fd() as usize)?)
}

/// Read the kernel's events on a channel into `ev` until one is delivered.
fn read_event(ch: &Channel, mut ev: Record) -> Result<Record> {
    let mut buf = std::mem::MaybeUninit::<cmd::EventResp>::uninit();
    loop {
        let resp = ucma::get_event(ch.fd(), &mut buf)?;
        let r = dispatch(&mut ev, resp);
        if r == Ok(true) {
            return Ok(ev);
        }
        // Dropped: counted as done for its id where it had one.
        if let Some(owner) = ev.owner.take() {
            owner.complete_event();
        }
        // A request dropped for want of memory is reported (the peer was
        // rejected): upstream reads on, and a blocking call then waits for
        // an event that may never come.
        r?;
        ev.reset();
    }
}

/// Fill `ev` from the kernel's event: Ok(true) to deliver it, Ok(false)
/// when it is not delivered, ENOMEM when a connection request had to be
/// dropped for want of memory.
pub(crate) fn dispatch(ev: &mut Event, resp: &cmd::EventResp) -> Result<bool> {
    let ty = E::try_from(resp.event);
    let (owner, mc) = match ty {
        Ok(E::RDMA_CM_EVENT_MULTICAST_JOIN | E::RDMA_CM_EVENT_MULTICAST_ERROR) => {
            let Some(mc) = mcast::lookup(resp.uid) else { return Ok(false) };
            let Some(owner) = id::lookup_uid(mc.id_key as u64) else { return Ok(false) };
            (owner, Some(mc))
        }
        // Not an id of ours: nothing can ack it.
        _ if resp.uid != 0 => match id::lookup_uid(resp.uid) {
            Some(owner) => (owner, None),
            None => return Ok(false),
        },
        // No uid: a child not accepted yet. Only ESTABLISHED is delivered,
        // the rest is counted as acked and dropped.
        _ => match id::lookup_child(resp.id) {
            Some(q) if ty == Ok(E::RDMA_CM_EVENT_ESTABLISHED) => (q, None),
            Some(q) => {
                q.complete_event();
                return Ok(false);
            }
            None => return Ok(false),
        },
    };
    ev.public.id = Id::c_ptr(&owner);
    ev.public.event = resp.event;
    ev.public.status = resp.status;
    ev.mc = mc;
    let idp: &Id = &owner;
    let deliver = match ty {
        Ok(E::RDMA_CM_EVENT_ADDR_RESOLVED) => {
            addr_resolved(ev, idp);
            true
        }
        Ok(E::RDMA_CM_EVENT_ROUTE_RESOLVED) => {
            route_resolved(ev, idp);
            true
        }
        Ok(E::RDMA_CM_EVENT_ADDRINFO_RESOLVED) => {
            resolve_ai::process_resolved(ev, idp);
            true
        }
        Ok(E::RDMA_CM_EVENT_ADDRINFO_ERROR) => {
            resolve_ai::clear_resolving(idp);
            true
        }
        Ok(E::RDMA_CM_EVENT_USER) => {
            ev.public.param.arg = arg(resp);
            true
        }
        Ok(E::RDMA_CM_EVENT_CONNECT_REQUEST) => {
            copy_params(ev, idp, resp);
            match conn_request(ev, &owner, resp) {
                Ok(()) => true,
                Err(e) if e == crate::error::Error::NOMEM => {
                    ev.owner = Some(owner);
                    return Err(e);
                }
                Err(_) => false,
            }
        }
        Ok(E::RDMA_CM_EVENT_CONNECT_RESPONSE) => {
            conn_response(ev, idp, resp);
            true
        }
        Ok(x @ (E::RDMA_CM_EVENT_REJECTED | E::RDMA_CM_EVENT_DISCONNECTED)) => {
            if idp.lock().connect_error {
                false
            } else {
                // SAFETY: conn member (upstream reads it for UD ids too).
                copy_conn(ev, unsafe { &resp.param.conn });
                if x == E::RDMA_CM_EVENT_REJECTED {
                    let _ = qp::to_state(idp, verbs::IBV_QPS_ERR);
                }
                true
            }
        }
        Ok(E::RDMA_CM_EVENT_MULTICAST_JOIN) => {
            // SAFETY: the ud member is what the kernel fills for joins.
            copy_ud(ev, unsafe { &resp.param.ud });
            let mc = ev.mc.clone().expect("multicast event");
            ev.public.param.ud.private_data = mc.context;
            // SAFETY: the ud member was just written.
            let ud = unsafe { ev.public.param.ud };
            if let Err(e) = mcast::process_join(idp, &mc, &ud) {
                ev.public.event = E::RDMA_CM_EVENT_MULTICAST_ERROR as u32;
                ev.public.status = e.neg_status();
            }
            true
        }
        Ok(E::RDMA_CM_EVENT_MULTICAST_ERROR) => {
            ev.public.param.ud.private_data = ev.mc.as_ref().expect("multicast event").context;
            true
        }
        Ok(E::RDMA_CM_EVENT_INTERNAL) => {
            // Upstream returns EBADE and leaks an internal event that is not
            // its own, so rdma_destroy_id hangs; here it is dropped.
            if arg(resp) == E::RDMA_CM_EVENT_ADDRINFO_RESOLVED as u64 {
                ev.public.event = E::RDMA_CM_EVENT_ADDRINFO_RESOLVED as u32;
                resolve_ai::process_resolved(ev, idp);
                true
            } else {
                false
            }
        }
        _ => {
            copy_params(ev, idp, resp);
            true
        }
    };
    ev.owner = Some(owner);
    Ok(deliver)
}

/// The 64-bit argument of USER and INTERNAL events.
fn arg(resp: &cmd::EventResp) -> u64 {
    // SAFETY: arg32 is plain data in every variant.
    let a = unsafe { resp.param.arg32 };
    a[0] as u64 | (a[1] as u64) << 32
}

fn copy_conn(ev: &mut Event, src: &cmd::ConnParam) {
    let c = rdma_conn_param {
        private_data: ev.stash_private(&src.private_data, src.private_data_len),
        private_data_len: src.private_data_len,
        responder_resources: src.responder_resources,
        initiator_depth: src.initiator_depth,
        flow_control: src.flow_control,
        retry_count: src.retry_count,
        rnr_retry_count: src.rnr_retry_count,
        srq: src.srq,
        qp_num: src.qp_num,
    };
    ev.public.param.conn = c;
}

/// `ibv_copy_ah_attr_from_kern`.
fn ah_attr_from_kern(k: &cmd::UverbsAhAttr) -> ibv_ah_attr {
    ibv_ah_attr {
        grh: ibv_global_route {
            dgid: ibv_gid { raw: k.dgid },
            flow_label: k.flow_label,
            sgid_index: k.sgid_index,
            hop_limit: k.hop_limit,
            traffic_class: k.traffic_class,
        },
        dlid: k.dlid,
        sl: k.sl,
        src_path_bits: k.src_path_bits,
        static_rate: k.static_rate,
        is_global: k.is_global,
        port_num: k.port_num,
    }
}

fn copy_ud(ev: &mut Event, src: &cmd::UdParam) {
    let u = rdma_ud_param {
        private_data: ev.stash_private(&src.private_data, src.private_data_len),
        private_data_len: src.private_data_len,
        ah_attr: ah_attr_from_kern(&src.ah_attr),
        qp_num: src.qp_num,
        qkey: src.qkey,
    };
    ev.public.param.ud = u;
}

fn copy_params(ev: &mut Event, idp: &Id, resp: &cmd::EventResp) {
    // SAFETY: the kernel filled the union member matching the id's type.
    unsafe {
        if qp::is_ud(idp.qp_type()) {
            copy_ud(ev, &resp.param.ud);
        } else {
            copy_conn(ev, &resp.param.conn);
        }
    }
}

/// ADDR_RESOLVED: learn addresses, device and GIDs; any failure turns the
/// event into ADDR_ERROR with `-errno` (upstream: status -1).
fn addr_resolved(ev: &mut Event, idp: &Id) {
    let r = idp.query_addr().and_then(|_| {
        if idp.verbs().is_null() {
            return Err(crate::error::Error::Errno(libc::ENODEV));
        }
        if idp.transport() == Some(verbs::IBV_TRANSPORT_IB) {
            idp.fill_gids()?;
        }
        Ok(())
    });
    if let Err(e) = r {
        ev.public.event = E::RDMA_CM_EVENT_ADDR_ERROR as u32;
        ev.public.status = e.neg_status();
    }
}

/// ROUTE_RESOLVED: the path records (IB transport only).
fn route_resolved(ev: &mut Event, idp: &Id) {
    if idp.transport() != Some(verbs::IBV_TRANSPORT_IB) {
        return;
    }
    if let Err(e) = idp.query_path() {
        ev.public.event = E::RDMA_CM_EVENT_ROUTE_ERROR as u32;
        ev.public.status = e.neg_status();
    }
}

/// CONNECT_REQUEST: a new id for the request (the listener's channel,
/// context, port space and QP type; a sync listener's child gets its own
/// private channel), with its addresses, GIDs and paths. On failure the
/// child is destroyed (and the event dropped).
fn conn_request(ev: &mut Event, listener: &Shared<Id>, resp: &cmd::EventResp) -> Result<()> {
    let ch = listener.lock().channel.clone();
    let child = match Id::new(ch.clone(), listener.context(), listener.ps(), listener.qp_type(), false) {
        Ok(c) => c,
        Err(e) => {
            // Nothing of ours knows the kernel's new id: destroy it there.
            let _ = ucma::destroy_id(ch.fd(), resp.id);
            return Err(e);
        }
    };
    ch.attach_id();
    child.set_handle(resp.id);
    ev.public.listen_id = Id::c_ptr(listener);
    ev.public.id = Id::c_ptr(&child);
    {
        let mut st = child.lock();
        // SAFETY: the conn member is what copy_params filled for connected
        // ids; for UD ids these bytes are unused by the kernel.
        unsafe {
            st.initiator_depth = ev.public.param.conn.initiator_depth;
            st.responder_resources = ev.public.param.conn.responder_resources;
        }
        st.remote_ece = (resp.ece.vendor_id, resp.ece.attr_mod);
    }
    let r = id::register(&child)
        .and_then(|()| id::register_child(&child))
        .and_then(|()| if listener.is_sync() { lifecycle::migrate(&child, std::ptr::null()) } else { Ok(()) })
        .and_then(|()| child.query_addr())
        .and_then(|()| child.fill_gids())
        .and_then(|()| child.query_path());
    if let Err(e) = r {
        let _ = lifecycle::destroy_id(&child);
        return Err(e);
    }
    Ok(())
}

/// CONNECT_RESPONSE: without a QP the application finishes the connection
/// (`rdma_establish`); with one the library does and reports ESTABLISHED,
/// or CONNECT_ERROR (then the REJECTED/DISCONNECTED that follow are
/// swallowed).
fn conn_response(ev: &mut Event, idp: &Id, resp: &cmd::EventResp) {
    // SAFETY: conn is the member the kernel fills for this event.
    copy_conn(ev, unsafe { &resp.param.conn });
    if idp.qp().is_null() {
        idp.lock().remote_ece = (resp.ece.vendor_id, resp.ece.attr_mod);
        return;
    }
    match conn::process_conn_resp(idp, resp.ece) {
        Ok(()) => ev.public.event = E::RDMA_CM_EVENT_ESTABLISHED as u32,
        Err(e) => {
            ev.public.event = E::RDMA_CM_EVENT_CONNECT_ERROR as u32;
            ev.public.status = e.neg_status();
            idp.lock().connect_error = true;
        }
    }
}
