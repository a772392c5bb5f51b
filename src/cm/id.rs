//! `rdma_cm_id`: creation, destruction, addresses, routes, options
//! (reference §4.6–4.8, §4.11).
//!
//! The public `struct rdma_cm_id` is the first field of [`IdPriv`], so the
//! pointer C code holds is the pointer to our private state, and header
//! inlines reading `id->…` see what upstream would fill.

use super::device::{self, CmDevice};
use super::event::{self, ack_event};
use super::registry;
use crate::abi::*;
use crate::addr::RawAddr;
use crate::error::{Error, Result};
use crate::ucma::{self, cmd};
use std::os::fd::IntoRawFd;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering};
use std::cell::UnsafeCell;
use std::sync::{Condvar, Mutex, MutexGuard};

/// State shared between the threads that use an id and the ones that read
/// its events: guarded by `IdPriv::state`, waited on with `IdPriv::cond`.
pub struct IdState {
    /// Events of this id the user has acked (or the library dropped).
    pub events_completed: u32,
    /// `rdma_resolve_addrinfo` in progress.
    pub resolving_ai: bool,
    /// Its result, until `rdma_query_addrinfo` takes it.
    pub resolved_ai: *mut rdma_addrinfo,
    /// Threads blocked in [`IdPriv::wait_acked`] (acks wake only these:
    /// a condition-variable wake-up is a system call).
    pub waiters: u32,
    /// RDMA read depth and resources negotiated for the connection.
    pub initiator_depth: u8,
    pub responder_resources: u8,
    /// A CONNECT_RESPONSE could not be completed: the REJECTED or
    /// DISCONNECTED that follows is swallowed.
    pub connect_error: bool,
    /// `ai_connect` of `rdma_create_ep`, sent before the user's private data
    /// on the first connect.
    pub connect_data: Vec<u8>,
    /// ECE (vendor id, options): ours and the peer's.
    pub local_ece: (u32, u32),
    pub remote_ece: (u32, u32),
    /// Passive endpoints: the QP attributes `rdma_get_request` creates with.
    pub qp_init_attr: Option<ibv_qp_init_attr>,
    /// Multicast memberships of the id.
    pub mcs: Vec<*mut super::mcast::McPriv>,
}

#[repr(C)]
pub struct IdPriv {
    /// Must stay first: C code holds `&id`. The library writes the public
    /// fields it fills (addresses, device, event stash) through the cell.
    pub id: UnsafeCell<rdma_cm_id>,
    /// The kernel's handle (set once the kernel made the id).
    handle: AtomicU32,
    /// Created with a NULL channel: owns a private channel, calls block.
    pub sync: AtomicBool,
    pub dev: AtomicPtr<CmDevice>,
    pub state: Mutex<IdState>,
    pub cond: Condvar,
}

impl IdPriv {
    pub fn lock(&self) -> MutexGuard<'_, IdState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The public id, for writing the fields the library fills.
    #[allow(clippy::mut_from_ref)]
    pub fn id_mut(&self) -> &mut rdma_cm_id {
        // SAFETY: like upstream, fields of the public id are written by the
        // library on behalf of the (single) thread using the id.
        unsafe { &mut *self.id.get() }
    }

    /// The public id, for reading.
    pub fn id(&self) -> &rdma_cm_id {
        // SAFETY: as above.
        unsafe { &*self.id.get() }
    }

    pub fn id_ptr(&self) -> *mut rdma_cm_id {
        self as *const IdPriv as *mut rdma_cm_id
    }

    pub fn handle(&self) -> u32 {
        self.handle.load(Ordering::Relaxed)
    }

    pub fn set_handle(&self, h: u32) {
        self.handle.store(h, Ordering::Relaxed)
    }

    pub fn fd(&self) -> i32 {
        // SAFETY: an id's channel is alive as long as the id.
        unsafe { (*self.id().channel).fd }
    }

    /// One more event of this id is finished with.
    pub fn complete_event(&self) {
        let mut st = self.lock();
        st.events_completed += 1;
        if st.waiters > 0 {
            self.cond.notify_all();
        }
    }

    /// Block until `reported` events of this id have been acked (the
    /// kernel's count from DESTROY_ID / MIGRATE_ID), holding only this id's
    /// mutex, released while waiting.
    pub fn wait_acked<'a>(&'a self, mut st: MutexGuard<'a, IdState>, reported: u32) -> MutexGuard<'a, IdState> {
        st.waiters += 1;
        while st.events_completed < reported {
            st = self.cond.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        st.waiters -= 1;
        st
    }
}

/// Copy a caller's socket address at the length its family has, as
/// upstream's `ucma_addrlen` decides it (AF_IB only where the kernel takes
/// it); None for NULL and unknown families.
///
/// # Safety
/// `addr` is NULL or readable for its family's length.
pub unsafe fn addr_from_c(addr: *const libc::sockaddr) -> Option<RawAddr> {
    if addr.is_null() {
        return None;
    }
    let len = match (*addr).sa_family as i32 {
        libc::AF_INET => std::mem::size_of::<libc::sockaddr_in>(),
        libc::AF_INET6 => std::mem::size_of::<libc::sockaddr_in6>(),
        AF_IB if ucma::af_ib_support() => std::mem::size_of::<sockaddr_ib>(),
        _ => return None,
    };
    RawAddr::from_ptr(addr, len as u32).ok()
}

/// Make a new event channel (an open of the ucma device).
pub fn create_channel() -> Result<*mut rdma_event_channel> {
    super::init()?;
    let fd = ucma::open()?.into_raw_fd();
    let ch = Box::into_raw(Box::new(registry::ChannelPriv::new(fd))) as *mut rdma_event_channel;
    registry::add_channel(ch);
    Ok(ch)
}

/// Close and free a channel. Refused (EBUSY) while ids live on it, and
/// (EINVAL) for a pointer that is not a live channel.
pub fn destroy_channel(ch: *mut rdma_event_channel) -> Result<()> {
    registry::remove_channel(ch)?;
    // SAFETY: a live channel we made with Box, now unregistered.
    let b = unsafe { Box::from_raw(ch as *mut registry::ChannelPriv) };
    // SAFETY: the channel owned this fd.
    unsafe { libc::close(b.ch.fd) };
    Ok(())
}

/// The QP type upstream gives a port space.
pub fn qp_type_of(ps: u32) -> u32 {
    if ps == RDMA_PS_IPOIB as u32 || ps == RDMA_PS_UDP as u32 {
        IBV_QPT_UD as u32
    } else {
        IBV_QPT_RC as u32
    }
}

/// A new private id (not yet known to the kernel or the registry), built
/// in its heap slot (no copy of the large public struct).
pub fn new_id(ch: *mut rdma_event_channel, context: *mut libc::c_void, ps: u32, qp_type: u32, sync: bool) -> *mut IdPriv {
    let mut b = Box::<IdPriv>::new_uninit();
    let p = b.as_mut_ptr();
    // SAFETY: every field is written before assume_init; all-zero is a
    // valid rdma_cm_id (NULL pointers, zero fields).
    unsafe {
        let id = std::ptr::addr_of_mut!((*p).id) as *mut rdma_cm_id;
        id.write_bytes(0, 1);
        (*id).channel = ch;
        (*id).context = context;
        (*id).ps = ps;
        (*id).qp_type = qp_type;
        std::ptr::addr_of_mut!((*p).handle).write(AtomicU32::new(u32::MAX));
        std::ptr::addr_of_mut!((*p).sync).write(AtomicBool::new(sync));
        std::ptr::addr_of_mut!((*p).dev).write(AtomicPtr::new(std::ptr::null_mut()));
        std::ptr::addr_of_mut!((*p).state).write(Mutex::new(IdState {
            events_completed: 0,
            resolving_ai: false,
            resolved_ai: std::ptr::null_mut(),
            waiters: 0,
            initiator_depth: 0,
            responder_resources: 0,
            connect_error: false,
            connect_data: Vec::new(),
            local_ece: (0, 0),
            remote_ece: (0, 0),
            qp_init_attr: None,
            mcs: Vec::new(),
        }));
        std::ptr::addr_of_mut!((*p).cond).write(Condvar::new());
        Box::into_raw(b.assume_init())
    }
}

/// `rdma_create_id`; `qp_type` follows the port space as upstream.
pub fn create_id(ch: *mut rdma_event_channel, context: *mut libc::c_void, ps: u32) -> Result<*mut rdma_cm_id> {
    create_id_typed(ch, context, ps, qp_type_of(ps))
}

/// `rdma_create_id` with an explicit QP type (`rdma_create_ep`).
pub fn create_id_typed(ch: *mut rdma_event_channel, context: *mut libc::c_void, ps: u32, qp_type: u32) -> Result<*mut rdma_cm_id> {
    super::init()?;
    let (ch, sync) = if ch.is_null() {
        (create_channel()?, true)
    } else {
        (ch, false)
    };
    let p = new_id(ch, context, ps, qp_type, sync);
    // One registry step checks the channel and records the id (which the
    // kernel does not know yet: no event can name it before the write).
    let r = registry::add_id(p, ch).and_then(|()| {
        // SAFETY: ch is live (checked under the registry lock, and pinned
        // by the id now counted on it).
        let fd = unsafe { (*ch).fd };
        ucma::create_id(fd, p as u64, ps as u16, qp_type as u8).inspect_err(|_| registry::remove_id(p, ch))
    });
    match r {
        Ok(handle) => {
            // SAFETY: p is ours; nobody but the registry knows it yet.
            unsafe { (*p).set_handle(handle) };
            Ok(p as *mut rdma_cm_id)
        }
        Err(e) => {
            // SAFETY: unregistered, never seen by the kernel.
            drop(unsafe { Box::from_raw(p) });
            if sync {
                let _ = destroy_channel(ch);
            }
            Err(e)
        }
    }
}

/// `rdma_destroy_id`: waits until every event the kernel reported for the
/// id has been acked, holding no lock but the id's own condition wait.
pub fn destroy_id(idp: &IdPriv) -> Result<()> {
    let reported = ucma::destroy_id(idp.fd(), idp.handle())?;
    let id = idp.id_mut();
    if !id.event.is_null() {
        let ev = std::mem::replace(&mut id.event, std::ptr::null_mut());
        let _ = ack_event(ev);
    }
    let (ai, mcs) = {
        let mut st = idp.wait_acked(idp.lock(), reported);
        (std::mem::replace(&mut st.resolved_ai, std::ptr::null_mut()), std::mem::take(&mut st.mcs))
    };
    let p = idp as *const IdPriv as *mut IdPriv;
    let ch = id.channel;
    registry::remove_id(p, ch);
    let dev = idp.dev.swap(std::ptr::null_mut(), Ordering::AcqRel);
    if !dev.is_null() {
        device::lock().put(dev);
    }
    // SAFETY: path_rec is NULL or our malloc'd array.
    unsafe { libc::free(id.route.path_rec as *mut libc::c_void) };
    id.route.path_rec = std::ptr::null_mut();
    crate::addr::getaddrinfo::free_list(ai);
    // Memberships die with the kernel id; upstream leaks their records.
    super::mcast::free_records(&mcs);
    if idp.sync.load(Ordering::Acquire) {
        let _ = destroy_channel(ch);
    }
    // SAFETY: unregistered; the kernel id is gone and every event acked.
    drop(unsafe { Box::from_raw(p) });
    Ok(())
}

/// Copy a kernel-provided address into an id's storage (at most 128 bytes).
fn copy_addr(dst: &mut libc::sockaddr_storage, src: &[u8], size: u16) {
    let n = (size as usize).min(src.len()).min(std::mem::size_of::<libc::sockaddr_storage>());
    // SAFETY: n bytes fit both buffers.
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst as *mut _ as *mut u8, n) };
}

/// QUERY(ADDR): source/destination, and the device once the kernel knows it.
pub fn query_addr(idp: &IdPriv) -> Result<()> {
    let mut resp = cmd::QueryAddrResp::zeroed();
    resp.ibdev_index = device::INVALID_INDEX;
    ucma::query(idp.fd(), idp.handle(), cmd::QUERY_ADDR, &mut resp)?;
    let id = idp.id_mut();
    // SAFETY: the storage members of the address unions are plain bytes.
    unsafe {
        copy_addr(&mut id.route.addr.src.src_storage, &resp.src_addr, resp.src_size);
        copy_addr(&mut id.route.addr.dst.dst_storage, &resp.dst_addr, resp.dst_size);
    }
    if idp.dev.load(Ordering::Acquire).is_null() && resp.node_guid != 0 {
        let mut devs = device::lock();
        let d = devs.get(resp.node_guid, resp.ibdev_index)?;
        idp.dev.store(d, Ordering::Release);
        // SAFETY: d is a live entry we hold a reference on.
        unsafe {
            id.verbs = (*d).verbs;
            id.pd = (*d).pd;
        }
        id.port_num = resp.port_num;
        id.route.addr.addr.ibaddr.pkey = resp.pkey;
    }
    Ok(())
}

/// QUERY(GID): the source and destination GIDs.
pub fn query_gid(idp: &IdPriv) -> Result<()> {
    let mut resp = cmd::QueryAddrResp::zeroed();
    ucma::query(idp.fd(), idp.handle(), cmd::QUERY_GID, &mut resp)?;
    let id = idp.id_mut();
    // Each address is a sockaddr_ib whose GID sits at offset 8.
    // SAFETY: plain union fields.
    unsafe {
        id.route.addr.addr.ibaddr.sgid.raw.copy_from_slice(&resp.src_addr[8..24]);
        id.route.addr.addr.ibaddr.dgid.raw.copy_from_slice(&resp.dst_addr[8..24]);
    }
    Ok(())
}

/// The GID the kernel's `rdma_ip2gid` derives from an IP address: IPv4
/// v4-mapped, IPv6 as is; an unset address (family 0) leaves zeros. None
/// for anything else (AF_IB carries its own GID: ask the kernel).
fn ip2gid(a: &libc::sockaddr_storage) -> Option<[u8; 16]> {
    let mut g = [0u8; 16];
    match a.ss_family as i32 {
        0 => {}
        libc::AF_INET => {
            // SAFETY: an AF_INET storage holds a sockaddr_in.
            let sin = unsafe { &*(a as *const _ as *const libc::sockaddr_in) };
            g[10] = 0xff;
            g[11] = 0xff;
            g[12..].copy_from_slice(&sin.sin_addr.s_addr.to_ne_bytes());
        }
        libc::AF_INET6 => {
            // SAFETY: an AF_INET6 storage holds a sockaddr_in6.
            let sin6 = unsafe { &*(a as *const _ as *const libc::sockaddr_in6) };
            g = sin6.sin6_addr.s6_addr;
        }
        _ => return None,
    }
    Some(g)
}

/// The link layer of the id's port, as read when its device was opened.
pub fn link_layer(idp: &IdPriv) -> Option<i32> {
    let d = idp.dev.load(Ordering::Acquire);
    let port = idp.id().port_num as usize;
    if d.is_null() || port == 0 {
        return None;
    }
    // SAFETY: the id holds a reference on its device; link_layers is fixed
    // once the device is open.
    unsafe { (&(*d).link_layers).get(port - 1).copied() }
}

/// Whether the id's port speaks RoCE (InfiniBand transport over an
/// Ethernet link layer).
fn on_roce_port(idp: &IdPriv) -> bool {
    transport(idp) == Some(crate::verbs::IBV_TRANSPORT_IB) && link_layer(idp) == Some(crate::verbs::IBV_LINK_LAYER_ETHERNET)
}

/// Source and destination GIDs after `query_addr`. Where the kernel's
/// QUERY(GID) answer is a function of what the id already knows it is
/// computed here, saving a round trip (kernel `rdma_read_gids`): no device
/// gives zero GIDs, a RoCE port the GIDs of the IP addresses. InfiniBand,
/// iWARP and AF_IB addresses still ask the kernel.
pub fn fill_gids(idp: &IdPriv) -> Result<()> {
    let id = idp.id_mut();
    // SAFETY: the storage members of the address unions are plain bytes.
    let (src, dst) = unsafe { (&id.route.addr.src.src_storage, &id.route.addr.dst.dst_storage) };
    let gids = if idp.dev.load(Ordering::Acquire).is_null() {
        let not_ib = |a: &libc::sockaddr_storage| a.ss_family as i32 != libc::AF_IB;
        (not_ib(src) && not_ib(dst)).then_some(([0u8; 16], [0u8; 16]))
    } else if on_roce_port(idp) {
        ip2gid(src).zip(ip2gid(dst))
    } else {
        None
    };
    let Some((s, d)) = gids else { return query_gid(idp) };
    id.route.addr.addr.ibaddr.sgid.raw = s;
    id.route.addr.addr.ibaddr.dgid.raw = d;
    Ok(())
}

/// Kernel path record → `ibv_sa_path_rec` (reference §4.7). The 6-bit
/// MTU/rate/lifetime values keep all six bits (upstream masks with 0x1F).
fn convert_path(p: &cmd::PathRecData) -> ibv_sa_path_rec {
    // SAFETY: PathRecData.path_rec is the 64-byte ibv_path_record.
    let rec: ibv_path_record = unsafe { std::mem::transmute(p.path_rec) };
    let fl_hop = u32::from_be(rec.flowlabel_hoplimit);
    ibv_sa_path_rec {
        dgid: ibv_gid { raw: rec.dgid },
        sgid: ibv_gid { raw: rec.sgid },
        dlid: rec.dlid,
        slid: rec.slid,
        raw_traffic: 0,
        flow_label: (fl_hop >> 8).to_be(),
        hop_limit: fl_hop as u8,
        traffic_class: rec.tclass,
        reversible: (rec.reversible_numpath >> 7) as i32,
        numb_path: 1,
        pkey: rec.pkey,
        sl: (u16::from_be(rec.qosclass_sl) & 0xF) as u8,
        mtu_selector: 2,
        mtu: rec.mtu & 0x3F,
        rate_selector: 2,
        rate: rec.rate & 0x3F,
        packet_life_time_selector: 2,
        packet_life_time: rec.packetlifetime & 0x3F,
        preference: p.flags as u8,
    }
}

/// QUERY(PATH): replace `route.path_rec` (upstream leaks the old array).
pub fn query_path(idp: &IdPriv) -> Result<()> {
    // SAFETY: plain data.
    let mut resp: cmd::QueryPathResp = unsafe { std::mem::zeroed() };
    ucma::query(idp.fd(), idp.handle(), cmd::QUERY_PATH, &mut resp)?;
    let n = (resp.num_paths as usize).min(cmd::MAX_QUERY_PATHS);
    let id = idp.id_mut();
    if n == 0 {
        return Ok(());
    }
    let size = n * std::mem::size_of::<ibv_sa_path_rec>();
    let arr = crate::addr::getaddrinfo::cmalloc(size)? as *mut ibv_sa_path_rec;
    for (i, pd) in resp.path_data[..n].iter().enumerate() {
        // SAFETY: arr has room for n records.
        unsafe { arr.add(i).write(convert_path(pd)) };
    }
    // SAFETY: the previous array was ours (or NULL).
    unsafe { libc::free(id.route.path_rec as *mut libc::c_void) };
    id.route.path_rec = arr;
    id.route.num_paths = n as i32;
    Ok(())
}

/// The transport of the id's device, if it has one.
pub fn transport(idp: &IdPriv) -> Option<i32> {
    let v = idp.id().verbs;
    // SAFETY: verbs is an open context while the id holds its device.
    (!v.is_null()).then(|| unsafe { crate::verbs::transport_type(v) })
}

/// Sync ids: wait for this operation's event on the private channel and
/// turn its status into errno (upstream's `ucma_complete`). Unlike upstream
/// the event type is checked: an unexpected event is an error (EPROTO, or
/// its status), left in `id->event` for the caller to inspect.
pub fn complete(idp: &IdPriv, expected: &[u32]) -> Result<()> {
    if !idp.sync.load(Ordering::Acquire) {
        return Ok(());
    }
    let id = idp.id_mut();
    if !id.event.is_null() {
        let ev = std::mem::replace(&mut id.event, std::ptr::null_mut());
        let _ = ack_event(ev);
    }
    let ev = event::get_event(id.channel)?;
    id.event = ev;
    // SAFETY: ev is a live event just returned.
    let (ty, status) = unsafe { ((*ev).event, (*ev).status) };
    if status != 0 {
        return Err(Error::Errno(if ty == rdma_cm_event_type::RDMA_CM_EVENT_REJECTED as u32 {
            libc::ECONNREFUSED
        } else {
            status.abs()
        }));
    }
    if !expected.contains(&ty) {
        return Err(Error::Errno(libc::EPROTO));
    }
    Ok(())
}

use rdma_cm_event_type as E;

pub fn bind_addr(idp: &IdPriv, addr: *const libc::sockaddr) -> Result<()> {
    // SAFETY: the caller passes a socket address of its family's length.
    let a = unsafe { addr_from_c(addr) }.ok_or(Error::Errno(libc::EINVAL))?;
    ucma::bind(idp.fd(), idp.handle(), &a)?;
    query_addr(idp)?;
    fill_gids(idp)
}

pub fn resolve_addr(idp: &IdPriv, src: *const libc::sockaddr, dst: *const libc::sockaddr, timeout_ms: i32) -> Result<()> {
    // SAFETY: as in bind_addr.
    let d = unsafe { addr_from_c(dst) }.ok_or(Error::Errno(libc::EINVAL))?;
    // SAFETY: as above.
    let s = unsafe { addr_from_c(src) };
    if !src.is_null() && s.is_none() {
        return Err(Error::Errno(libc::EINVAL));
    }
    ucma::resolve_addr(idp.fd(), idp.handle(), s.as_ref(), &d, timeout_ms as u32)?;
    let id = idp.id_mut();
    // SAFETY: storage member of a plain union.
    unsafe { copy_addr(&mut id.route.addr.dst.dst_storage, d.as_bytes(), d.len() as u16) };
    complete(idp, &[E::RDMA_CM_EVENT_ADDR_RESOLVED as u32, E::RDMA_CM_EVENT_ADDR_ERROR as u32])
}

/// Ask ibacm for a route and install it with RDMA_OPTION_IB_PATH; the
/// kernel then reports ROUTE_RESOLVED itself.
fn set_ib_route(idp: &IdPriv) -> Result<()> {
    let id = idp.id();
    // SAFETY: the address unions hold whatever the kernel reported.
    let (src, dst) = unsafe {
        (addr_from_c(&id.route.addr.src.src_addr), addr_from_c(&id.route.addr.dst.dst_addr))
    };
    // SAFETY: all-zero hints; only flags matter to the ibacm request.
    let mut hints: rdma_addrinfo = unsafe { std::mem::zeroed() };
    hints.ai_flags = RAI_ROUTEONLY;
    let h = crate::addr::getaddrinfo::Hints::new(Some(&hints));
    let ai = crate::addr::getaddrinfo::AddrInfo { src, dst, ..Default::default() };
    let out = crate::addr::acm::resolve(ai, &h);
    let route = &out.last().ok_or(Error::Errno(libc::ENOENT))?.route;
    if route.is_empty() {
        return Err(Error::Errno(libc::ENOENT));
    }
    let len = std::mem::size_of_val(&route[..]);
    ucma::set_option(idp.fd(), idp.handle(), RDMA_OPTION_IB as u32, RDMA_OPTION_IB_PATH as u32, route.as_ptr() as u64, len as u32)
}

pub fn resolve_route(idp: &IdPriv, timeout_ms: i32) -> Result<()> {
    // Upstream dereferences id->verbs unchecked: no device, no route.
    let t = transport(idp).ok_or(Error::Errno(libc::EINVAL))?;
    if t != crate::verbs::IBV_TRANSPORT_IB || set_ib_route(idp).is_err() {
        ucma::resolve_route(idp.fd(), idp.handle(), timeout_ms as u32)?;
    }
    complete(idp, &[E::RDMA_CM_EVENT_ROUTE_RESOLVED as u32, E::RDMA_CM_EVENT_ROUTE_ERROR as u32])
}

pub fn set_option(idp: &IdPriv, level: i32, optname: i32, optval: *mut libc::c_void, optlen: usize) -> Result<()> {
    // The kernel reads optval itself and checks optlen per option.
    let optlen = u32::try_from(optlen).map_err(|_| Error::Errno(libc::EINVAL))?;
    ucma::set_option(idp.fd(), idp.handle(), level as u32, optname as u32, optval as u64, optlen)
}

pub fn notify(idp: &IdPriv, event: u32) -> Result<()> {
    ucma::notify(idp.fd(), idp.handle(), event)
}

/// `rdma_migrate_id`: move the id to `ch` (NULL: a new private channel).
pub fn migrate(idp: &IdPriv, ch: *mut rdma_event_channel) -> Result<()> {
    let was_sync = idp.sync.load(Ordering::Acquire);
    if was_sync && ch.is_null() {
        return Err(Error::Errno(libc::EINVAL));
    }
    let new_sync = ch.is_null();
    let ch = if new_sync {
        create_channel()?
    } else {
        registry::channel_fd(ch)?;
        ch
    };
    let id = idp.id_mut();
    let old = id.channel;
    // SAFETY: ch is live.
    let new_fd = unsafe { (*ch).fd };
    let reported = match ucma::migrate_id(new_fd, idp.handle(), idp.fd()) {
        Ok(n) => n,
        Err(e) => {
            if new_sync {
                let _ = destroy_channel(ch);
            }
            return Err(e);
        }
    };
    registry::move_id(old, ch);
    if was_sync {
        if !id.event.is_null() {
            let ev = std::mem::replace(&mut id.event, std::ptr::null_mut());
            let _ = ack_event(ev);
        }
        let _ = destroy_channel(old);
    }
    let st = idp.lock();
    idp.sync.store(new_sync, Ordering::Release);
    id.channel = ch;
    drop(idp.wait_acked(st, reported));
    Ok(())
}

/// The port of an address in network byte order (sin/sin6 port, low 16
/// bits of an AF_IB service id), as `rdma_get_src_port`.
pub fn port_of(a: &libc::sockaddr_storage) -> u16 {
    // SAFETY: reading a sockaddr_storage as the family it says it is.
    unsafe {
        let p = a as *const _ as *const libc::sockaddr;
        match (*p).sa_family as i32 {
            libc::AF_INET => (*(p as *const libc::sockaddr_in)).sin_port,
            libc::AF_INET6 => (*(p as *const libc::sockaddr_in6)).sin6_port,
            AF_IB => ((u64::from_be((*(p as *const sockaddr_ib)).sib_sid) & 0xffff) as u16).to_be(),
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ip2gid;

    fn storage<T>(a: &T) -> libc::sockaddr_storage {
        // SAFETY: T is a sockaddr no larger than the storage.
        unsafe {
            let mut s: libc::sockaddr_storage = std::mem::zeroed();
            std::ptr::copy_nonoverlapping(a as *const T as *const u8, &mut s as *mut _ as *mut u8, std::mem::size_of::<T>());
            s
        }
    }

    #[test]
    fn ip2gid_follows_the_kernel() {
        // IPv4: the v4-mapped IPv6 address (::ffff:192.0.2.1).
        // SAFETY: zeroed sockaddrs are valid.
        let mut sin: libc::sockaddr_in = unsafe { std::mem::zeroed() };
        sin.sin_family = libc::AF_INET as u16;
        sin.sin_port = 7471u16.to_be();
        sin.sin_addr.s_addr = u32::from_ne_bytes([192, 0, 2, 1]);
        let mut want = [0u8; 16];
        want[10..].copy_from_slice(&[0xff, 0xff, 192, 0, 2, 1]);
        assert_eq!(ip2gid(&storage(&sin)), Some(want));
        // IPv6: the address itself.
        let mut sin6: libc::sockaddr_in6 = unsafe { std::mem::zeroed() };
        sin6.sin6_family = libc::AF_INET6 as u16;
        sin6.sin6_addr.s6_addr = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        assert_eq!(ip2gid(&storage(&sin6)), Some(sin6.sin6_addr.s6_addr));
        // Unset: zeros; AF_IB (own GID) and others: ask the kernel.
        let unset: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        assert_eq!(ip2gid(&unset), Some([0; 16]));
        let mut ib = unset;
        ib.ss_family = super::AF_IB as u16;
        assert_eq!(ip2gid(&ib), None);
    }
}
