//! Multicast: `rdma_join_multicast(_ex)`, `rdma_leave_multicast`
//! (reference §4.10–4.11). A membership record is the kernel's uid for the
//! join's events; it lives until the leave (or the id's destruction) and
//! counts its events so that the leave can wait for their acks.

use super::id::{self, IdPriv};
use super::registry;
use crate::abi::*;
use crate::addr::RawAddr;
use crate::error::{Error, Result};
use crate::ucma;
use crate::verbs;
use std::sync::atomic::{AtomicU32, Ordering};

pub struct McPriv {
    pub context: *mut libc::c_void,
    pub id: *const IdPriv,
    pub join_flags: u16,
    pub addr: RawAddr,
    pub handle: u32,
    pub mgid: ibv_gid,
    pub mlid: u16,
    /// Events of this membership the user has acked.
    pub completed: AtomicU32,
}

use rdma_cm_event_type as E;

fn join(idp: &IdPriv, addr: RawAddr, flags: u16, context: *mut libc::c_void) -> Result<()> {
    let mc = Box::into_raw(Box::new(McPriv {
        context,
        id: idp,
        join_flags: flags,
        addr,
        handle: 0,
        mgid: ibv_gid { raw: [0; 16] },
        mlid: 0,
        completed: AtomicU32::new(0),
    }));
    idp.lock().mcs.push(mc);
    registry::add_mc(mc);
    // SAFETY: mc is ours until the leave.
    let a = unsafe { &(*mc).addr };
    match ucma::join_mcast(idp.fd(), idp.handle(), mc as u64, a, flags) {
        Ok(h) => {
            // SAFETY: as above; no event can name it before the write returned.
            unsafe { (*mc).handle = h };
            id::complete(idp, &[E::RDMA_CM_EVENT_MULTICAST_JOIN as u32])
        }
        Err(e) => {
            idp.lock().mcs.retain(|&m| m != mc);
            free_records(&[mc]);
            Err(e)
        }
    }
}

/// `rdma_join_multicast`: a full-member join.
pub fn join_multicast(idp: &IdPriv, addr: *const libc::sockaddr, context: *mut libc::c_void) -> Result<()> {
    // SAFETY: the caller passes an address of its family's length.
    let a = unsafe { id::addr_from_c(addr) }.ok_or(Error::Errno(libc::EINVAL))?;
    join(idp, a, RDMA_MC_JOIN_FLAG_FULLMEMBER as u16, context)
}

/// `rdma_join_multicast_ex`: attribute checks as upstream's.
pub fn join_multicast_ex(idp: &IdPriv, attr: *const rdma_cm_join_mc_attr_ex, context: *mut libc::c_void) -> Result<()> {
    if attr.is_null() {
        return Err(Error::Errno(libc::EINVAL));
    }
    // SAFETY: non-NULL attributes from the caller.
    let attr = unsafe { &*attr };
    if attr.comp_mask >= RDMA_CM_JOIN_MC_ATTR_RESERVED {
        return Err(Error::Errno(libc::ENOTSUP));
    }
    if attr.comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS == 0 {
        return Err(Error::Errno(libc::EINVAL));
    }
    if attr.comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS == 0 || attr.join_flags >= RDMA_MC_JOIN_FLAG_RESERVED {
        return Err(Error::Errno(libc::EINVAL));
    }
    // SAFETY: as in join_multicast.
    let a = unsafe { id::addr_from_c(attr.addr) }.ok_or(Error::Errno(libc::EINVAL))?;
    join(idp, a, attr.join_flags as u16, context)
}

/// `rdma_leave_multicast`: EADDRNOTAVAIL for an address the id did not join.
pub fn leave_multicast(idp: &IdPriv, addr: *const libc::sockaddr) -> Result<()> {
    // SAFETY: as in join_multicast.
    let a = unsafe { id::addr_from_c(addr) }.ok_or(Error::Errno(libc::EINVAL))?;
    let mc = {
        let mut st = idp.lock();
        // SAFETY: records in the list are live.
        let pos = st.mcs.iter().position(|&m| unsafe { (*m).addr.as_bytes() == a.as_bytes() });
        match pos {
            Some(i) => st.mcs.remove(i),
            None => return Err(Error::Errno(libc::EADDRNOTAVAIL)),
        }
    };
    // SAFETY: removed from the id's list, still registered for its events.
    let m = unsafe { &*mc };
    let qp = idp.id().qp;
    if !qp.is_null() && m.join_flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER as u16 {
        // SAFETY: the id's live QP; gid/lid learnt from the join event.
        unsafe { verbs::ibv_detach_mcast(qp, &m.mgid, m.mlid) };
    }
    let r = ucma::leave_mcast(idp.fd(), m.handle);
    if let Ok(reported) = r {
        let mut st = idp.lock();
        st.waiters += 1;
        while m.completed.load(Ordering::Acquire) < reported {
            st = idp.cond.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        st.waiters -= 1;
    }
    free_records(&[mc]);
    r.map(|_| ())
}

/// An event of this membership was acked.
pub fn complete_event(mc: *mut McPriv) {
    // SAFETY: a registered record outlives its unacked events.
    let m = unsafe { &*mc };
    // SAFETY: the record's id outlives it.
    let idp = unsafe { &*m.id };
    let mut st = idp.lock();
    m.completed.fetch_add(1, Ordering::AcqRel);
    st.events_completed += 1;
    if st.waiters > 0 {
        idp.cond.notify_all();
    }
}

/// MULTICAST_JOIN: remember the group and attach the id's QP (not for
/// send-only joins).
pub fn process_join(mc: *mut McPriv, ud: &rdma_ud_param) -> Result<()> {
    // SAFETY: a registered record; only the event reader writes these fields.
    let m = unsafe { &mut *mc };
    m.mgid = ud.ah_attr.grh.dgid;
    m.mlid = ud.ah_attr.dlid;
    // SAFETY: the record's id is live.
    let qp = unsafe { (*m.id).id().qp };
    if qp.is_null() || m.join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER as u16 {
        return Ok(());
    }
    // SAFETY: live QP.
    let rc = unsafe { verbs::ibv_attach_mcast(qp, &m.mgid, m.mlid) };
    if rc != 0 {
        return Err(Error::Errno(rc));
    }
    Ok(())
}

/// Unregister and free records.
pub fn free_records(mcs: &[*mut McPriv]) {
    for &mc in mcs {
        registry::remove_mc(mc);
        // SAFETY: made by join with Box; unregistered now.
        drop(unsafe { Box::from_raw(mc) });
    }
}
