//! Events: `rdma_get_cm_event`, `rdma_ack_cm_event`, `rdma_event_str`
//! (reference §3.5, §4.10).
//!
//! No lock is held while a thread blocks in GET_EVENT: the kernel
//! serialises readers of one fd, and ids on different channels never wait
//! on one another.

use super::id::{self, IdPriv};
use super::registry;
use crate::abi::*;
use crate::error::{Error, Result};
use crate::ucma::{self, cmd};

/// What `rdma_get_cm_event` hands out: the public event first, then the
/// private-data buffer its params point into, then our back-pointers.
#[repr(C)]
pub struct EventPriv {
    pub event: rdma_cm_event,
    /// Written only up to the length the params give (never read before).
    pub private_data: std::mem::MaybeUninit<[u8; cmd::MAX_PRIVATE_DATA]>,
    pub id_priv: *mut IdPriv,
    /// The membership a multicast event belongs to (NULL otherwise).
    pub mc: *mut super::mcast::McPriv,
}

use rdma_cm_event_type as E;

fn is_ud(idp: &IdPriv) -> bool {
    idp.id().qp_type == IBV_QPT_UD as u32
}

/// Keep the event's private data in the event itself (valid until the ack);
/// NULL when there is none.
fn stash_private(ev: &mut EventPriv, data: &[u8; cmd::MAX_PRIVATE_DATA], len: u8) -> *const libc::c_void {
    let len = len as usize;
    if len == 0 {
        return std::ptr::null();
    }
    let dst = ev.private_data.as_mut_ptr() as *mut u8;
    // SAFETY: len <= MAX_PRIVATE_DATA bytes fit both buffers.
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, len) };
    dst as *const libc::c_void
}

fn copy_conn(ev: &mut EventPriv, src: &cmd::ConnParam) {
    let c = rdma_conn_param {
        private_data: stash_private(ev, &src.private_data, src.private_data_len),
        private_data_len: src.private_data_len,
        responder_resources: src.responder_resources,
        initiator_depth: src.initiator_depth,
        flow_control: src.flow_control,
        retry_count: src.retry_count,
        rnr_retry_count: src.rnr_retry_count,
        srq: src.srq,
        qp_num: src.qp_num,
    };
    ev.event.param.conn = c;
}

/// `ibv_copy_ah_attr_from_kern`.
pub fn ah_attr_from_kern(k: &cmd::UverbsAhAttr) -> ibv_ah_attr {
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

fn copy_ud(ev: &mut EventPriv, src: &cmd::UdParam) {
    let u = rdma_ud_param {
        private_data: stash_private(ev, &src.private_data, src.private_data_len),
        private_data_len: src.private_data_len,
        ah_attr: ah_attr_from_kern(&src.ah_attr),
        qp_num: src.qp_num,
        qkey: src.qkey,
    };
    ev.event.param.ud = u;
}

fn copy_params(ev: &mut EventPriv, idp: &IdPriv, resp: &cmd::EventResp) {
    // SAFETY: the kernel filled the union member matching the id's type.
    unsafe {
        if is_ud(idp) {
            copy_ud(ev, &resp.param.ud);
        } else {
            copy_conn(ev, &resp.param.conn);
        }
    }
}

fn fail_status(e: Error) -> i32 {
    match e {
        Error::Errno(n) => -n,
        Error::Eai(_) => -libc::EIO,
    }
}

/// ADDR_RESOLVED: learn addresses, device and GIDs; any failure turns the
/// event into ADDR_ERROR with `-errno` (upstream: status -1).
fn process_addr_resolved(ev: &mut EventPriv, idp: &IdPriv) {
    let r = id::query_addr(idp).and_then(|_| {
        if idp.id().verbs.is_null() {
            return Err(Error::Errno(libc::ENODEV));
        }
        if id::transport(idp) == Some(crate::verbs::IBV_TRANSPORT_IB) {
            id::fill_gids(idp)?;
        }
        Ok(())
    });
    if let Err(e) = r {
        ev.event.event = E::RDMA_CM_EVENT_ADDR_ERROR as u32;
        ev.event.status = fail_status(e);
    }
}

/// ROUTE_RESOLVED: the path records (IB transport only).
fn process_route_resolved(ev: &mut EventPriv, idp: &IdPriv) {
    if id::transport(idp) != Some(crate::verbs::IBV_TRANSPORT_IB) {
        return;
    }
    if let Err(e) = id::query_path(idp) {
        ev.event.event = E::RDMA_CM_EVENT_ROUTE_ERROR as u32;
        ev.event.status = fail_status(e);
    }
}

/// CONNECT_REQUEST: a new id for the request (the listener's channel,
/// context, port space and QP type; a sync listener's child gets its own
/// private channel), with its addresses, GIDs and paths. On failure the
/// child is destroyed and the listener's event counted as done.
fn process_conn_req(ev: &mut EventPriv, listener: &IdPriv, resp: &cmd::EventResp) -> Result<()> {
    let lid = listener.id();
    let child = id::new_id(lid.channel, lid.context, lid.ps, lid.qp_type, false);
    // SAFETY: not shared yet.
    unsafe { (*child).set_handle(resp.id) };
    if let Err(e) = registry::add_id(child, lid.channel) {
        // SAFETY: never registered.
        drop(unsafe { Box::from_raw(child) });
        return Err(e);
    }
    // SAFETY: registered, owned by this event until delivered.
    let c = unsafe { &*child };
    ev.event.listen_id = listener.id_ptr();
    ev.event.id = c.id_ptr();
    {
        let mut st = c.lock();
        // SAFETY: the conn member is what copy_params filled for RC ids;
        // for UD ids these bytes are unused by the kernel.
        unsafe {
            st.initiator_depth = ev.event.param.conn.initiator_depth;
            st.responder_resources = ev.event.param.conn.responder_resources;
        }
        st.remote_ece = (resp.ece.vendor_id, resp.ece.attr_mod);
    }
    let r = (if listener.sync.load(std::sync::atomic::Ordering::Acquire) {
        id::migrate(c, std::ptr::null_mut())
    } else {
        Ok(())
    })
    .and_then(|_| id::query_addr(c))
    .and_then(|_| id::fill_gids(c))
    .and_then(|_| id::query_path(c));
    if let Err(e) = r {
        let _ = id::destroy_id(c);
        listener.complete_event();
        return Err(e);
    }
    Ok(())
}

/// CONNECT_RESPONSE: without a QP the application finishes the connection
/// (`rdma_establish`); with one the library does and reports ESTABLISHED,
/// or CONNECT_ERROR (then the REJECTED/DISCONNECTED that follow are
/// swallowed).
fn process_conn_resp(ev: &mut EventPriv, idp: &IdPriv, resp: &cmd::EventResp) {
    // SAFETY: conn is the member the kernel fills for this event.
    copy_conn(ev, unsafe { &resp.param.conn });
    if idp.id().qp.is_null() {
        idp.lock().remote_ece = (resp.ece.vendor_id, resp.ece.attr_mod);
        return;
    }
    match super::conn::process_conn_resp_ece(idp, resp.ece) {
        Ok(()) => ev.event.event = E::RDMA_CM_EVENT_ESTABLISHED as u32,
        Err(e) => {
            ev.event.event = E::RDMA_CM_EVENT_CONNECT_ERROR as u32;
            ev.event.status = fail_status(e);
            idp.lock().connect_error = true;
        }
    }
}

/// `rdma_get_cm_event` on a channel: the next event, processed.
pub fn get_event(ch: *mut rdma_event_channel) -> Result<*mut rdma_cm_event> {
    let fd = registry::channel_fd(ch)?;
    loop {
        let resp = ucma::get_event(fd)?;
        let mut ev = new_event();
        let p = &mut *ev as *mut EventPriv as *mut rdma_cm_event;
        let is_mc = resp.event == E::RDMA_CM_EVENT_MULTICAST_JOIN as u32 || resp.event == E::RDMA_CM_EVENT_MULTICAST_ERROR as u32;
        let mut mc = std::ptr::null_mut();
        // Find the event's id and record the event as live (one registry
        // step on the common path).
        let idp_ptr = if is_mc {
            match registry::live_mc(resp.uid) {
                Some(m) => {
                    mc = m;
                    registry::add_event(p);
                    // SAFETY: a live record; its id outlives it.
                    unsafe { (*m).id as *mut IdPriv }
                }
                None => continue,
            }
        } else if resp.uid != 0 {
            if !registry::live_id_add_event(resp.uid, p) {
                continue; // not an id of ours: nothing can ack it
            }
            resp.uid as *mut IdPriv
        } else {
            // Events without a uid (an un-accepted child): only ESTABLISHED
            // is delivered, the rest is counted as acked and dropped.
            let Some(q) = registry::lookup_handle(resp.id) else { continue };
            if resp.event != E::RDMA_CM_EVENT_ESTABLISHED as u32 {
                // SAFETY: a live id.
                unsafe { (*q).complete_event() };
                continue;
            }
            registry::add_event(p);
            q
        };
        // SAFETY: a live id; it cannot be freed before this event is acked.
        let idp = unsafe { &*idp_ptr };
        ev.id_priv = idp_ptr;
        ev.mc = mc;
        ev.event.id = idp.id_ptr();
        ev.event.event = resp.event;
        ev.event.status = resp.status;
        let arg = {
            // SAFETY: arg32 is plain data in every variant.
            let a = unsafe { resp.param.arg32 };
            a[0] as u64 | (a[1] as u64) << 32
        };
        match resp.event {
            x if x == E::RDMA_CM_EVENT_ADDR_RESOLVED as u32 => process_addr_resolved(&mut ev, idp),
            x if x == E::RDMA_CM_EVENT_ROUTE_RESOLVED as u32 => process_route_resolved(&mut ev, idp),
            x if x == E::RDMA_CM_EVENT_ADDRINFO_RESOLVED as u32 => super::resolve_ai::process_resolved(&mut ev, idp),
            x if x == E::RDMA_CM_EVENT_ADDRINFO_ERROR as u32 => super::resolve_ai::clear_resolving(idp),
            x if x == E::RDMA_CM_EVENT_USER as u32 => ev.event.param.arg = arg,
            x if x == E::RDMA_CM_EVENT_CONNECT_REQUEST as u32 => {
                copy_params(&mut ev, idp, &resp);
                if process_conn_req(&mut ev, idp, &resp).is_err() {
                    registry::take_event(p); // recorded as live above
                    continue;
                }
            }
            x if x == E::RDMA_CM_EVENT_CONNECT_RESPONSE as u32 => process_conn_resp(&mut ev, idp, &resp),
            x if x == E::RDMA_CM_EVENT_REJECTED as u32 || x == E::RDMA_CM_EVENT_DISCONNECTED as u32 => {
                if idp.lock().connect_error {
                    registry::take_event(p); // recorded as live above
                    idp.complete_event();
                    continue;
                }
                // SAFETY: conn member (upstream reads it for UD ids too).
                copy_conn(&mut ev, unsafe { &resp.param.conn });
                if x == E::RDMA_CM_EVENT_REJECTED as u32 {
                    let _ = super::qp::to_state(idp, crate::verbs::IBV_QPS_ERR);
                }
            }
            x if x == E::RDMA_CM_EVENT_MULTICAST_JOIN as u32 => {
                // SAFETY: the ud member is what the kernel fills for joins.
                copy_ud(&mut ev, unsafe { &resp.param.ud });
                // SAFETY: live record (see above).
                ev.event.param.ud.private_data = unsafe { (*mc).context };
                // SAFETY: ud member just written.
                let ud = unsafe { ev.event.param.ud };
                if let Err(e) = super::mcast::process_join(mc, &ud) {
                    ev.event.event = E::RDMA_CM_EVENT_MULTICAST_ERROR as u32;
                    ev.event.status = fail_status(e);
                }
            }
            x if x == E::RDMA_CM_EVENT_MULTICAST_ERROR as u32 => {
                // SAFETY: live record.
                ev.event.param.ud.private_data = unsafe { (*mc).context };
            }
            x if x == E::RDMA_CM_EVENT_INTERNAL as u32 => {
                if arg != E::RDMA_CM_EVENT_ADDRINFO_RESOLVED as u64 {
                    // Upstream returns EBADE and leaks the event, so
                    // rdma_destroy_id hangs; an internal event that is not
                    // ours is dropped and counted as acked.
                    registry::take_event(p); // recorded as live above
                    idp.complete_event();
                    continue;
                }
                ev.event.event = E::RDMA_CM_EVENT_ADDRINFO_RESOLVED as u32;
                super::resolve_ai::process_resolved(&mut ev, idp);
            }
            _ => copy_params(&mut ev, idp, &resp),
        }
        return Ok(Box::into_raw(ev) as *mut rdma_cm_event);
    }
}

/// A new event: the public part zeroed, the private-data buffer left
/// uninitialised (it is written before any pointer to it is handed out).
fn new_event() -> Box<EventPriv> {
    let mut b = Box::<EventPriv>::new_uninit();
    let p = b.as_mut_ptr();
    // SAFETY: every field but the MaybeUninit buffer is written; all-zero
    // is a valid rdma_cm_event (NULL pointers, zero fields).
    unsafe {
        std::ptr::addr_of_mut!((*p).event).write(std::mem::zeroed());
        std::ptr::addr_of_mut!((*p).id_priv).write(std::ptr::null_mut());
        std::ptr::addr_of_mut!((*p).mc).write(std::ptr::null_mut());
        b.assume_init()
    }
}

/// `rdma_ack_cm_event`: count the event as done for its id and free it.
pub fn ack_event(e: *mut rdma_cm_event) -> Result<()> {
    if e.is_null() || !registry::take_event(e) {
        return Err(Error::Errno(libc::EINVAL));
    }
    // SAFETY: a live event made by get_event with Box, now unregistered.
    let ev = unsafe { Box::from_raw(e as *mut EventPriv) };
    if !ev.mc.is_null() {
        super::mcast::complete_event(ev.mc);
    } else {
        // SAFETY: its id lives until this ack is counted.
        unsafe { (*ev.id_priv).complete_event() };
    }
    Ok(())
}

/// `rdma_event_str`: the enumerator's name; USER and INTERNAL have none in
/// upstream either ("UNKNOWN EVENT").
pub fn event_str(ev: u32) -> &'static std::ffi::CStr {
    const NAMES: [&[u8]; 18] = [
        b"RDMA_CM_EVENT_ADDR_RESOLVED\0",
        b"RDMA_CM_EVENT_ADDR_ERROR\0",
        b"RDMA_CM_EVENT_ROUTE_RESOLVED\0",
        b"RDMA_CM_EVENT_ROUTE_ERROR\0",
        b"RDMA_CM_EVENT_CONNECT_REQUEST\0",
        b"RDMA_CM_EVENT_CONNECT_RESPONSE\0",
        b"RDMA_CM_EVENT_CONNECT_ERROR\0",
        b"RDMA_CM_EVENT_UNREACHABLE\0",
        b"RDMA_CM_EVENT_REJECTED\0",
        b"RDMA_CM_EVENT_ESTABLISHED\0",
        b"RDMA_CM_EVENT_DISCONNECTED\0",
        b"RDMA_CM_EVENT_DEVICE_REMOVAL\0",
        b"RDMA_CM_EVENT_MULTICAST_JOIN\0",
        b"RDMA_CM_EVENT_MULTICAST_ERROR\0",
        b"RDMA_CM_EVENT_ADDR_CHANGE\0",
        b"RDMA_CM_EVENT_TIMEWAIT_EXIT\0",
        b"RDMA_CM_EVENT_ADDRINFO_RESOLVED\0",
        b"RDMA_CM_EVENT_ADDRINFO_ERROR\0",
    ];
    let name: &'static [u8] = NAMES.get(ev as usize).copied().unwrap_or(b"UNKNOWN EVENT\0");
    std::ffi::CStr::from_bytes_with_nul(name).expect("NUL-terminated")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_strings() {
        assert_eq!(event_str(0).to_str().unwrap(), "RDMA_CM_EVENT_ADDR_RESOLVED");
        assert_eq!(event_str(15).to_str().unwrap(), "RDMA_CM_EVENT_TIMEWAIT_EXIT");
        assert_eq!(event_str(17).to_str().unwrap(), "RDMA_CM_EVENT_ADDRINFO_ERROR");
        assert_eq!(event_str(18).to_str().unwrap(), "UNKNOWN EVENT");
        assert_eq!(event_str(u32::MAX).to_str().unwrap(), "UNKNOWN EVENT");
    }

    #[test]
    fn private_data_follows_the_event() {
        assert_eq!(std::mem::offset_of!(EventPriv, private_data), std::mem::size_of::<rdma_cm_event>());
    }
}
