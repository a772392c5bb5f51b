//! Entry points for the fuzz targets of `fuzz/` (cargo feature `fuzzing`;
//! never part of the built library). They reach the code that decodes what
//! the kernel writes (event records, query responses) with arbitrary bytes
//! and no kernel: the ids they use are registered like real ones but have
//! no descriptor, so every command the decoding issues fails with EBADF, as
//! a command on a dead channel would. Everything else the targets fuzz
//! (address translation, ibacm replies, the rsocket wire) is reached
//! through the library's public modules.

use crate::abi::{rdma_cm_event_type as E, IBV_QPT_RC, IBV_QPT_UD, RDMA_PS_TCP, RDMA_PS_UDP};
use crate::cm::channel::Channel;
use crate::cm::dispatch;
use crate::cm::events::{self, Event, Record};
use crate::cm::id::{self, Id};
use crate::cmem::Shared;
use crate::ucma::cmd::{self, Plain};

/// `T` from the front of `data`, zero-padded (any bytes are a valid `T`).
fn plain_from<T: Plain>(data: &[u8]) -> T {
    let mut v = T::zeroed();
    let n = data.len().min(std::mem::size_of::<T>());
    // SAFETY: T is plain data (every bit pattern valid); n bytes fit it.
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), &mut v as *mut T as *mut u8, n) };
    v
}

fn bare_id(ud: bool) -> Option<Shared<Id>> {
    let ch = Shared::try_new(Channel::for_tests()).ok()?;
    let (ps, qpt) = if ud { (RDMA_PS_UDP, IBV_QPT_UD) } else { (RDMA_PS_TCP, IBV_QPT_RC) };
    Id::new(ch, std::ptr::null_mut(), ps as u32, qpt as u32, false).ok()
}

/// One kernel event record (`struct rdma_ucm_event_resp`, the first bytes
/// of `data` after a selector byte) through the dispatcher, for an RC or a
/// UD id of ours or for a uid nobody knows. A CONNECT_REQUEST is read as
/// the event after it: its child id would need the kernel to be destroyed.
/// What the record then shows C is checked.
pub fn event_record(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else { return };
    let mut resp: cmd::EventResp = plain_from(rest);
    if resp.event == E::RDMA_CM_EVENT_CONNECT_REQUEST as u32 {
        resp.event += 1;
    }
    let Some(idp) = bare_id(sel & 1 != 0) else { return };
    if id::register(&idp).is_err() {
        return;
    }
    if sel & 2 == 0 {
        resp.uid = Id::key(&idp) as u64;
    }
    let Ok(mut ev) = Record::take(0) else {
        id::unregister(&idp);
        return;
    };
    let delivered = dispatch::dispatch(&mut ev, &resp);
    if delivered == Ok(true) {
        check_record(&ev);
        events::done(ev);
    } else if let Some(owner) = ev.owner.take() {
        owner.complete_event();
    }
    id::unregister(&idp);
}

/// What a delivered record shows C: private data inside the record, for
/// at most the 255 bytes a length byte can say.
fn check_record(ev: &Event) {
    // USER and INTERNAL events carry a number in the union, multicast
    // events the caller's context: no private data.
    if [
        E::RDMA_CM_EVENT_USER,
        E::RDMA_CM_EVENT_INTERNAL,
        E::RDMA_CM_EVENT_MULTICAST_JOIN,
        E::RDMA_CM_EVENT_MULTICAST_ERROR,
    ]
    .iter()
    .any(|&t| t as u32 == ev.public.event)
    {
        return;
    }
    // SAFETY: plain fields of the record; the union's conn and ud members
    // both start with the private-data pointer and its length.
    let (p, n) = unsafe { (ev.public.param.conn.private_data, ev.public.param.conn.private_data_len) };
    let base = ev as *const Event as usize;
    if !p.is_null() {
        let at = p as usize;
        assert!(
            at >= base && at + n as usize <= base + std::mem::size_of::<Event>(),
            "private data outside the record"
        );
    }
    let _ = ev.conn_private().iter().map(|&b| b as u32).sum::<u32>();
}

/// The three query responses (QUERY(ADDR), QUERY(GID), QUERY(PATH), each
/// taken from `data` in turn) taken into an id, then read back as C and
/// the library read them. The device part of QUERY(ADDR) (a node GUID) is
/// left out: it opens devices.
pub fn query_responses(data: &[u8]) {
    let Some(idp) = bare_id(data.first().is_some_and(|b| b & 1 != 0)) else { return };
    let a = std::mem::size_of::<cmd::QueryAddrResp>();
    let mut addr: cmd::QueryAddrResp = plain_from(data.get(1..).unwrap_or(&[]));
    addr.node_guid = 0;
    let gid: cmd::QueryAddrResp = plain_from(data.get(1 + a..).unwrap_or(&[]));
    let path: cmd::QueryPathResp = plain_from(data.get(1 + 2 * a..).unwrap_or(&[]));
    let _ = idp.take_query_addr(&addr);
    idp.take_query_gid(&gid);
    let _ = idp.take_query_path(&path.path_data[..(path.num_paths as usize).min(cmd::MAX_QUERY_PATHS)]);
    for src in [true, false] {
        let ra = idp.addr(src);
        assert!(ra.len() <= 128);
        let _ = (idp.ip2gid(src), idp.port(src), idp.family(src));
    }
    let n = (path.num_paths as usize).min(cmd::MAX_QUERY_PATHS);
    if n > 0 {
        assert!(idp.path_rec().is_some(), "the paths were taken");
    }
    let mut out = [0u8; 4 * std::mem::size_of::<crate::abi::ibv_path_data>()];
    if let Ok(len) = idp.path_data_into(&mut out) {
        assert!(len <= out.len() && len % std::mem::size_of::<crate::abi::ibv_path_data>() == 0);
    }
    let _ = idp.path_mtu();
    idp.free_paths();
}

/// ibacm's message sizes (crate-private in `addr::acm`).
pub const ACM_HDR_LEN: usize = crate::addr::acm::HDR_LEN;
pub const ACM_MSG_LEN: usize = crate::addr::acm::MSG_LEN;
/// The rsocket wire's sizes (crate-private in `rs::wire`).
pub const RS_SGL_SIZE: usize = crate::rs::wire::SGL_SIZE;
pub const RS_SGE_LEN: usize = crate::rs::wire::SGE_LEN;
pub const RS_IOMAP_LEN: usize = crate::rs::wire::IOMAP_LEN;
pub const RS_CONN_DATA_LEN: usize = crate::rs::wire::CONN_DATA_LEN;
