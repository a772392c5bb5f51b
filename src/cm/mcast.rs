//! Multicast (rdma_join_multicast(3), rdma_join_multicast_ex(3),
//! rdma_leave_multicast(3)). A membership record ([`Mc`]) is the kernel's
//! uid for the join's events; it lives until the leave (or the id's
//! destruction) and counts its events so that the leave can wait for their
//! acks.

use super::id::{Id, Mc};
use crate::abi::*;
use crate::cmem::Shared;
use crate::error::{Error, Result};
use crate::handle::Table;
use crate::sockaddr::RawAddr;
use crate::ucma;
use crate::verbs;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

/// Live memberships by their address (the uid of their events).
static MCS: Table<Shared<Mc>> = Table::new();

/// `rdma_join_multicast_ex`'s attribute checks, as upstream's (before the
/// address is looked at).
pub fn check_join_attr(comp_mask: u32, join_flags: u32) -> Result<()> {
    if comp_mask >= RDMA_CM_JOIN_MC_ATTR_RESERVED {
        return Err(Error::Errno(libc::ENOTSUP));
    }
    if comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS == 0
        || comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS == 0
        || join_flags >= RDMA_MC_JOIN_FLAG_RESERVED
    {
        return Err(Error::INVAL);
    }
    Ok(())
}

/// JOIN_MCAST: a new membership of `id` (its MULTICAST_JOIN or _ERROR
/// event follows on the id's channel).
pub fn join(id: &Shared<Id>, addr: RawAddr, flags: u16, context: *mut libc::c_void) -> Result<()> {
    let mc = Shared::try_new(Mc {
        context,
        id_key: Id::key(id),
        join_flags: flags,
        addr,
        handle: AtomicU32::new(0),
        group: Mutex::new((ibv_gid { raw: [0; 16] }, 0)),
        completed: AtomicU32::new(0),
    })?;
    let key = Shared::as_ptr(&mc) as usize;
    {
        let mut st = id.lock();
        let mcs = &mut st.rare()?.mcs;
        mcs.try_reserve(1).map_err(|_| Error::NOMEM)?;
        mcs.push(mc.clone());
    }
    let r =
        MCS.insert(key, mc.clone()).and_then(|()| ucma::join_mcast(id.fd(), id.handle(), key as u64, &mc.addr, flags));
    match r {
        // No event can name the membership before the write returned.
        Ok(h) => {
            mc.handle.store(h, Ordering::Release);
            Ok(())
        }
        Err(e) => {
            if let Some(r) = id.lock().rare.as_mut() {
                r.mcs.retain(|m| !Shared::ptr_eq(m, &mc));
            }
            MCS.remove(key);
            Err(e)
        }
    }
}

/// The membership an event's uid names.
pub fn lookup(uid: u64) -> Option<Shared<Mc>> {
    MCS.get(uid as usize)
}

/// `rdma_leave_multicast`: EADDRNOTAVAIL for an address the id did not
/// join. Waits until the membership's reported events are acked.
pub fn leave(id: &Id, addr: &RawAddr) -> Result<()> {
    let mc = {
        let mut st = id.lock();
        let mcs = st.rare.as_mut().map(|r| &mut r.mcs).ok_or(Error::Errno(libc::EADDRNOTAVAIL))?;
        let i = mcs.iter().position(|m| m.addr == *addr).ok_or(Error::Errno(libc::EADDRNOTAVAIL))?;
        mcs.remove(i)
    };
    let qp = id.qp();
    if !qp.is_null() && mc.join_flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER as u16 {
        let (gid, lid) = *mc.group.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: the id's live QP; gid/lid learnt from the join event.
        unsafe { verbs::ibv_detach_mcast(qp, &gid, lid) };
    }
    let r = ucma::leave_mcast(id.fd(), mc.handle.load(Ordering::Acquire));
    if let Ok(reported) = r {
        drop(id.wait(id.lock(), |_| mc.completed.load(Ordering::SeqCst) >= reported));
    }
    forget(&[mc]);
    r.map(drop)
}

/// An event of this membership was acked.
pub fn complete_event(id: &Id, mc: &Mc) {
    // SeqCst: read by waiters without the lock (Id::notify_waiters).
    mc.completed.fetch_add(1, Ordering::SeqCst);
    id.complete_event();
}

/// MULTICAST_JOIN: remember the group and attach the id's QP (not for
/// send-only joins).
pub fn process_join(id: &Id, mc: &Mc, ud: &rdma_ud_param) -> Result<()> {
    let (gid, lid) = (ud.ah_attr.grh.dgid, ud.ah_attr.dlid);
    *mc.group.lock().unwrap_or_else(|e| e.into_inner()) = (gid, lid);
    let qp = id.qp();
    if qp.is_null() || mc.join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER as u16 {
        return Ok(());
    }
    // SAFETY: the id's live QP.
    match unsafe { verbs::ibv_attach_mcast(qp, &gid, lid) } {
        0 => Ok(()),
        rc => Err(Error::Errno(rc)),
    }
}

/// Take memberships out of the table (the id left them or is gone).
pub fn forget(mcs: &[Shared<Mc>]) {
    for m in mcs {
        MCS.remove(Shared::as_ptr(m) as usize);
    }
}
