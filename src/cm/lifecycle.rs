//! An id's life: creation (rdma_create_id(3)), migration between channels
//! (rdma_migrate_id(3)) and destruction (rdma_destroy_id(3)), which waits
//! until every event the kernel reported for the id has been acked.

use super::channel::{self, Channel};
use super::events;
use super::id::{self, qp_type_of, Id};
use super::mcast;
use crate::abi::rdma_event_channel;
use crate::cmem::Shared;
use crate::error::{Error, Result};
use crate::ucma;

/// `rdma_create_id`; `qp_type` follows the port space as upstream.
pub fn create_id(ch: *const rdma_event_channel, context: *mut libc::c_void, ps: u32) -> Result<Shared<Id>> {
    create_id_typed(ch, context, ps, qp_type_of(ps))
}

/// `rdma_create_id` with an explicit QP type (`rdma_create_ep`); a NULL
/// channel makes a sync id with a private channel.
pub fn create_id_typed(
    ch: *const rdma_event_channel,
    context: *mut libc::c_void,
    ps: u32,
    qp_type: u32,
) -> Result<Shared<Id>> {
    ucma::init()?;
    let sync = ch.is_null();
    let ch = if sync { channel::create_private()? } else { channel::attach(ch)? };
    let detach = |ch: &Shared<Channel>| {
        ch.detach();
        if sync {
            let _ = channel::destroy(Channel::c_ptr(ch));
        }
    };
    let idp = match Id::new(ch.clone(), context, ps, qp_type, sync) {
        Ok(i) => i,
        Err(e) => {
            detach(&ch);
            return Err(e);
        }
    };
    // Recorded before the kernel knows it: no event can name it before
    // CREATE_ID returns.
    let r = id::register(&idp).and_then(|()| {
        ucma::create_id(ch.fd(), Id::key(&idp) as u64, ps as u16, qp_type as u8).inspect_err(|_| id::unregister(&idp))
    });
    match r {
        Ok(handle) => {
            idp.set_handle(handle);
            Ok(idp)
        }
        Err(e) => {
            detach(&ch);
            Err(e)
        }
    }
}

/// An async id on a channel the library owns (rsockets: every rsocket id
/// lives on the progress engine's channel).
pub fn create_id_on(ch: &Shared<Channel>, context: *mut libc::c_void, ps: u32) -> Result<Shared<Id>> {
    create_id_typed(Channel::c_ptr(ch), context, ps, qp_type_of(ps))
}

/// `rdma_destroy_id`: the kernel id goes first; then the call waits until
/// every event the kernel reported for the id has been acked, holding no
/// lock but the id's own condition wait. EINVAL if another destroy of the
/// id already began.
pub fn destroy_id(idp: &Shared<Id>) -> Result<()> {
    if !idp.begin_destroy() {
        return Err(Error::INVAL);
    }
    let reported = match ucma::destroy_id(idp.fd(), idp.handle()) {
        Ok(n) => n,
        Err(e) => {
            // Still alive: undo, as upstream leaves the id usable.
            idp.end_destroy();
            return Err(e);
        }
    };
    release(idp, reported);
    Ok(())
}

/// After the kernel id is gone: wait for the acks, then forget the id and
/// let go of what it owns (its last owner frees it).
pub fn release(idp: &Shared<Id>, reported: u32) {
    events::ack_stashed(idp);
    let (rare, ch) = {
        let mut st = idp.wait_acked(idp.lock(), reported);
        (st.rare.take(), st.channel.clone())
    };
    id::unregister(idp);
    idp.free_paths();
    if let Some(r) = rare {
        // Memberships die with the kernel id; upstream leaks their records.
        // (The rest of the part, an unread addrinfo result included, goes
        // with it.)
        mcast::forget(&r.mcs);
    }
    ch.detach();
    if idp.is_sync() {
        let _ = channel::destroy(Channel::c_ptr(&ch));
    }
}

/// `rdma_migrate_id`: move the id to `ch` (NULL: a new private channel).
pub fn migrate(idp: &Id, ch: *const rdma_event_channel) -> Result<()> {
    let was_sync = idp.is_sync();
    let new_sync = ch.is_null();
    if was_sync && new_sync {
        return Err(Error::INVAL);
    }
    let new = if new_sync { channel::create_private()? } else { channel::attach(ch)? };
    let reported = match ucma::migrate_id(new.fd(), idp.handle(), idp.fd()) {
        Ok(n) => n,
        Err(e) => {
            new.detach();
            if new_sync {
                let _ = channel::destroy(Channel::c_ptr(&new));
            }
            return Err(e);
        }
    };
    if was_sync {
        events::ack_stashed(idp);
    }
    let old = {
        let mut st = idp.lock();
        let old = idp.set_channel(&mut st, new, new_sync);
        drop(idp.wait_acked(st, reported));
        old
    };
    old.detach();
    if was_sync {
        let _ = channel::destroy(Channel::c_ptr(&old));
    }
    Ok(())
}
