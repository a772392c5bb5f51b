//! `rdma_cm_id` (rdma_create_id(3)): the id object, the table of live ids,
//! its public struct, and what the kernel reports about an id (addresses,
//! device, GIDs, path records), plus the commands that act on one id and
//! need nothing above this file.
//!
//! An [`Id`] is a [`Shared`] owner whose first field is the public
//! `struct rdma_cm_id`: the pointer C holds is the object's address, and
//! the ids table maps it to the owner. Every call on an id holds a counted
//! reference from the table, so `rdma_destroy_id` in another thread can
//! never free memory the call is using. The public struct is shared with C,
//! which reads it at any time: the library writes its fields in place
//! through raw pointers (never through a Rust reference to the whole
//! struct), from the thread doing the operation, as upstream does.

use super::channel::Channel;
use super::device::{self, DevUse};
use crate::abi::*;
use crate::addr::getaddrinfo::AddrInfoList;
use crate::cmem::{SetOnce, Shared};
use crate::error::{Error, Result};
use crate::handle::Table;
use crate::lock::{Cond, Lock, LockGuard};
use crate::slab::Slab;
use crate::sockaddr::RawAddr;
use crate::ucma::cmd::Plain;
use crate::ucma::{self, cmd, KernelBuf};
use crate::verbs;
use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
use std::sync::Mutex;

/// Private data kept for the first connect (`ai_connect` of
/// `rdma_create_ep`): at most what the kernel carries.
#[derive(Clone, Copy)]
pub struct PrivateData {
    bytes: [u8; cmd::MAX_PRIVATE_DATA],
    len: usize,
}

impl PrivateData {
    pub const EMPTY: PrivateData = PrivateData { bytes: [0; cmd::MAX_PRIVATE_DATA], len: 0 };

    /// EINVAL when longer than the kernel's private data.
    pub fn new(d: &[u8]) -> Result<PrivateData> {
        let mut p = Self::EMPTY;
        p.bytes.get_mut(..d.len()).ok_or(Error::INVAL)?.copy_from_slice(d);
        p.len = d.len();
        Ok(p)
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// A multicast membership of an id (joined in mcast.rs). Its address is
/// the uid the kernel echoes in the join's events.
pub struct Mc {
    pub context: *mut libc::c_void,
    /// The id's key in the ids table (no owner: the id owns the membership).
    pub id_key: usize,
    pub join_flags: u16,
    pub addr: RawAddr,
    /// The kernel's handle of the membership.
    pub handle: AtomicU32,
    /// Group GID and LID, learnt from the join event.
    pub group: Mutex<(ibv_gid, u16)>,
    /// Events of this membership the user has acked.
    pub completed: AtomicU32,
}

// SAFETY: `context` is the caller's opaque value, never dereferenced.
unsafe impl Send for Mc {}
// SAFETY: as above.
unsafe impl Sync for Mc {}

/// State shared between the threads that use an id and the ones that read
/// its events: guarded by `Id::state`, waited on with `Id::cond`.
pub struct IdState {
    /// The channel the id's events arrive on (changes with migration).
    pub channel: Shared<Channel>,
    /// What few ids use (made on first use: it keeps every id smaller).
    pub rare: Option<Box<Rare>>,
    /// RDMA read depth and resources negotiated for the connection.
    pub initiator_depth: u8,
    pub responder_resources: u8,
    /// A CONNECT_RESPONSE could not be completed: the REJECTED or
    /// DISCONNECTED that follows is swallowed.
    pub connect_error: bool,
    /// ECE (vendor id, options): ours and the peer's.
    pub local_ece: (u32, u32),
    pub remote_ece: (u32, u32),
}

/// The part of an id's state few ids use (`IdState::rare`).
#[derive(Default)]
pub struct Rare {
    /// `rdma_resolve_addrinfo` in progress.
    pub resolving_ai: bool,
    /// Its result, until `rdma_query_addrinfo` takes it.
    pub resolved_ai: Option<AddrInfoList>,
    /// `ai_connect` of `rdma_create_ep`, sent before the user's private
    /// data on the first connect.
    pub connect_data: Option<Box<PrivateData>>,
    /// Passive endpoints: the QP attributes `rdma_get_request` creates with.
    pub qp_init_attr: Option<ibv_qp_init_attr>,
    /// Multicast memberships of the id.
    pub mcs: Vec<Shared<Mc>>,
}

impl IdState {
    /// The rare part, made now if it does not exist yet (ENOMEM if it
    /// cannot be).
    pub fn rare(&mut self) -> Result<&mut Rare> {
        if self.rare.is_none() {
            self.rare = Some(crate::cmem::try_box(Rare::default())?);
        }
        self.rare.as_deref_mut().ok_or(Error::NOMEM)
    }
}

// SAFETY: the raw pointers in rare.qp_init_attr are the caller's libibverbs
// objects, passed back to libibverbs only.
unsafe impl Send for IdState {}

#[repr(C)]
pub struct Id {
    /// Must stay first: C holds its address.
    public: UnsafeCell<rdma_cm_id>,
    /// The kernel's handle (set once the kernel made the id).
    handle: AtomicU32,
    /// The fd of the id's channel (a copy of `state.channel`'s).
    fd: AtomicI32,
    /// Created with a NULL channel: owns a private channel, calls block.
    sync: AtomicBool,
    /// `rdma_destroy_id` has begun: the C API no longer finds the id.
    destroying: AtomicBool,
    /// Recorded in the children table (made for a connection request).
    child: AtomicBool,
    /// Events of this id the user has acked (or the library dropped).
    completed: AtomicU32,
    /// Threads blocked in [`Id::wait`] (acks wake only these: a
    /// condition-variable wake-up is a system call). With `completed`, a
    /// Dekker pair: both are SeqCst (see `complete_event`).
    waiters: AtomicU32,
    /// Where threads wait for acks and state changes.
    cond: Cond,
    /// Known to the library: found by [`lookup`] and [`lookup_uid`] (the
    /// registration holds a count of the id's owner).
    registered: AtomicBool,
    /// Whether that device's port speaks RoCE (set before `dev`).
    roce: AtomicBool,
    /// The device the kernel bound the id to, once it has.
    dev: SetOnce<DevUse>,
    /// Room for the route's first path record: a route of one path (the
    /// common case) needs no allocation.
    path0: UnsafeCell<MaybeUninit<ibv_sa_path_rec>>,
    state: Lock<IdState>,
}

// SAFETY: the public struct is written only through raw pointers by the
// thread doing an operation (as upstream); everything else is atomics,
// mutexes and Send owners.
unsafe impl Send for Id {}
// SAFETY: as above.
unsafe impl Sync for Id {}

/// Every id lives in a slot of this pool: the address C holds (which the
/// kernel echoes as the uid) is checked and counted with no table and no
/// lock (`Shared::upgrade`, docs/architecture.md "Pools").
static IDS: Slab = Slab::new(Shared::<Id>::LAYOUT, Shared::<Id>::init_slot);
/// Ids made for connection requests, by kernel handle: their events carry
/// no uid until they are accepted.
static CHILDREN: Table<Shared<Id>> = Table::new();

/// Getters and setters of plain public fields.
macro_rules! public_fields {
    ($($get:ident, $set:ident: $t:ty;)*) => {$(
        pub fn $get(&self) -> $t {
            // SAFETY: a field read in place (see the module comment).
            unsafe { (*self.public.get()).$get }
        }
        pub fn $set(&self, v: $t) {
            // SAFETY: a field written in place (see the module comment).
            unsafe { (*self.public.get()).$get = v }
        }
    )*};
}

impl Id {
    /// A new id on `channel`, not yet known to the kernel or the table
    /// (built in place: the public struct is large).
    pub fn new(
        channel: Shared<Channel>,
        context: *mut libc::c_void,
        ps: u32,
        qp_type: u32,
        sync: bool,
    ) -> Result<Shared<Id>> {
        let fd = channel.fd();
        let chp = Channel::c_ptr(&channel);
        let st = IdState {
            channel,
            rare: None,
            initiator_depth: 0,
            responder_resources: 0,
            connect_error: false,
            local_ece: (0, 0),
            remote_ece: (0, 0),
        };
        // SAFETY: every field is written; all-zero is a valid rdma_cm_id
        // (NULL pointers, zero fields). IDS holds only Shared<Id> blocks.
        unsafe {
            Shared::try_new_pooled(&IDS, fd as usize, |p: *mut Id| {
                let public = std::ptr::addr_of_mut!((*p).public) as *mut rdma_cm_id;
                public.write_bytes(0, 1);
                (*public).channel = chp;
                (*public).context = context;
                (*public).ps = ps;
                (*public).qp_type = qp_type;
                std::ptr::addr_of_mut!((*p).handle).write(AtomicU32::new(u32::MAX));
                std::ptr::addr_of_mut!((*p).fd).write(AtomicI32::new(fd));
                std::ptr::addr_of_mut!((*p).sync).write(AtomicBool::new(sync));
                std::ptr::addr_of_mut!((*p).destroying).write(AtomicBool::new(false));
                std::ptr::addr_of_mut!((*p).child).write(AtomicBool::new(false));
                std::ptr::addr_of_mut!((*p).completed).write(AtomicU32::new(0));
                std::ptr::addr_of_mut!((*p).waiters).write(AtomicU32::new(0));
                std::ptr::addr_of_mut!((*p).registered).write(AtomicBool::new(false));
                std::ptr::addr_of_mut!((*p).dev).write(SetOnce::new());
                std::ptr::addr_of_mut!((*p).roce).write(AtomicBool::new(false));
                std::ptr::addr_of_mut!((*p).path0).write(UnsafeCell::new(MaybeUninit::uninit()));
                std::ptr::addr_of_mut!((*p).state).write(Lock::new(st));
                std::ptr::addr_of_mut!((*p).cond).write(Cond::new());
            })
        }
    }

    /// The pointer C holds (and the kernel's uid for the id).
    pub fn c_ptr(this: &Shared<Id>) -> *mut rdma_cm_id {
        Shared::as_ptr(this) as *mut rdma_cm_id
    }

    /// The table key of an id.
    pub fn key(this: &Shared<Id>) -> usize {
        Shared::as_ptr(this) as usize
    }

    #[inline]
    pub fn lock(&self) -> LockGuard<'_, IdState> {
        self.state.lock()
    }

    pub fn handle(&self) -> u32 {
        self.handle.load(Ordering::Acquire)
    }

    pub fn set_handle(&self, h: u32) {
        self.handle.store(h, Ordering::Release)
    }

    /// The fd of the id's channel.
    pub fn fd(&self) -> i32 {
        self.fd.load(Ordering::Acquire)
    }

    pub fn is_sync(&self) -> bool {
        self.sync.load(Ordering::Acquire)
    }

    /// Move the id to `ch` (under the state lock), returning the old one.
    pub fn set_channel(&self, st: &mut IdState, ch: Shared<Channel>, sync: bool) -> Shared<Channel> {
        self.fd.store(ch.fd(), Ordering::Release);
        self.sync.store(sync, Ordering::Release);
        self.set_channel_ptr(Channel::c_ptr(&ch));
        std::mem::replace(&mut st.channel, ch)
    }

    /// Mark the id as being destroyed; false if it already was.
    pub fn begin_destroy(&self) -> bool {
        !self.destroying.swap(true, Ordering::AcqRel)
    }

    /// The destroy failed before anything was released: usable again.
    pub fn end_destroy(&self) {
        self.destroying.store(false, Ordering::Release)
    }

    /// The device the id is bound to, if any.
    pub fn device(&self) -> Option<&DevUse> {
        self.dev.get()
    }

    public_fields! {
        verbs, set_verbs: *mut ibv_context;
        context, set_context: *mut libc::c_void;
        qp, set_qp: *mut ibv_qp;
        ps, set_ps: u32;
        port_num, set_port_num: u8;
        event, set_event: *mut rdma_cm_event;
        send_cq_channel, set_send_cq_channel: *mut ibv_comp_channel;
        send_cq, set_send_cq: *mut ibv_cq;
        recv_cq_channel, set_recv_cq_channel: *mut ibv_comp_channel;
        recv_cq, set_recv_cq: *mut ibv_cq;
        srq, set_srq: *mut ibv_srq;
        pd, set_pd: *mut ibv_pd;
        qp_type, set_qp_type: u32;
    }

    fn set_channel_ptr(&self, ch: *mut rdma_event_channel) {
        // SAFETY: a field written in place.
        unsafe { (*self.public.get()).channel = ch }
    }

    /// The public `channel` pointer.
    pub fn channel_ptr(&self) -> *mut rdma_event_channel {
        // SAFETY: a field read in place.
        unsafe { (*self.public.get()).channel }
    }

    fn route(&self) -> *mut rdma_route {
        // SAFETY: a place inside the public struct; no reference made.
        unsafe { std::ptr::addr_of_mut!((*self.public.get()).route) }
    }

    /// Source (`src = true`) or destination address storage, as bytes.
    fn addr_storage(&self, src: bool) -> *mut u8 {
        let r = self.route();
        // SAFETY: places inside the public struct.
        unsafe {
            if src {
                std::ptr::addr_of_mut!((*r).addr.src) as *mut u8
            } else {
                std::ptr::addr_of_mut!((*r).addr.dst) as *mut u8
            }
        }
    }

    /// The family of the source or destination address.
    pub(crate) fn family(&self, src: bool) -> i32 {
        let mut f = [0u8; 2];
        // SAFETY: the first two bytes of the storage member.
        unsafe { std::ptr::copy_nonoverlapping(self.addr_storage(src), f.as_mut_ptr(), 2) };
        u16::from_ne_bytes(f) as i32
    }

    /// `n` bytes at offset `off` of an address storage (`off + n` <= 128).
    fn addr_bytes<const N: usize>(&self, src: bool, off: usize) -> [u8; N] {
        assert!(off + N <= 128);
        let mut b = [0u8; N];
        // SAFETY: in bounds of the 128-byte storage member.
        unsafe { std::ptr::copy_nonoverlapping(self.addr_storage(src).add(off), b.as_mut_ptr(), N) };
        b
    }

    /// [`ip2gid_bits`](Self::ip2gid_bits) as the GID's bytes (for the
    /// tests and the fuzz targets).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn ip2gid(&self, src: bool) -> Option<[u8; 16]> {
        self.ip2gid_bits(src).map(u128::to_be_bytes)
    }

    /// The GID the kernel's `rdma_ip2gid` derives from an IP address, as
    /// one big-endian number (kept in registers, not moved byte by byte):
    /// IPv4 v4-mapped, IPv6 as is; an unset address (family 0) gives zero.
    /// None for anything else (AF_IB carries its own GID: ask the kernel).
    #[inline]
    fn ip2gid_bits(&self, src: bool) -> Option<u128> {
        match self.family(src) {
            0 => Some(0),
            libc::AF_INET => Some(0xffff << 32 | u32::from_be_bytes(self.addr_bytes::<4>(src, 4)) as u128),
            libc::AF_INET6 => Some(u128::from_be_bytes(self.addr_bytes::<16>(src, 8))),
            _ => None,
        }
    }

    /// The source or destination address as stored in the public struct.
    pub fn addr(&self, src: bool) -> RawAddr {
        let mut b = [0u8; 128];
        // SAFETY: the storage member is 128 bytes.
        unsafe { std::ptr::copy_nonoverlapping(self.addr_storage(src), b.as_mut_ptr(), 128) };
        let len = match u16::from_ne_bytes([b[0], b[1]]) as i32 {
            libc::AF_INET => std::mem::size_of::<libc::sockaddr_in>(),
            libc::AF_INET6 => std::mem::size_of::<libc::sockaddr_in6>(),
            AF_IB => std::mem::size_of::<sockaddr_ib>(),
            _ => 128,
        };
        RawAddr::from_bytes(&b, len)
    }

    /// Store a kernel-reported address of `size` bytes (at most 128).
    pub fn set_addr(&self, src: bool, bytes: &[u8], size: u16) {
        let n = (size as usize).min(bytes.len()).min(128);
        // SAFETY: n bytes fit the 128-byte storage member.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.addr_storage(src), n) };
    }

    /// Set the source and destination GIDs.
    pub fn set_gids(&self, sgid: [u8; 16], dgid: [u8; 16]) {
        let r = self.route();
        // SAFETY: fields written in place.
        unsafe {
            (*r).addr.addr.ibaddr.sgid.raw = sgid;
            (*r).addr.addr.ibaddr.dgid.raw = dgid;
        }
    }

    fn set_pkey(&self, pkey: u16) {
        // SAFETY: a field written in place.
        unsafe { (*self.route()).addr.addr.ibaddr.pkey = pkey }
    }

    /// The id's own room for one path record.
    fn path0(&self) -> *mut ibv_sa_path_rec {
        self.path0.get() as *mut ibv_sa_path_rec
    }

    /// Replace the path records (the old array is freed unless it is the
    /// id's own room).
    fn set_paths(&self, arr: *mut ibv_sa_path_rec, n: i32) {
        let r = self.route();
        // SAFETY: fields in place; the old array is NULL, path0 or our
        // malloc.
        unsafe {
            let old = (*r).path_rec;
            if old != self.path0() {
                crate::cmem::free(old);
            }
            (*r).path_rec = arr;
            (*r).num_paths = n;
        }
    }

    /// A copy of the first path record, if the route has one.
    pub fn path_rec(&self) -> Option<ibv_sa_path_rec> {
        let r = self.route();
        // SAFETY: fields in place; path_rec holds num_paths records.
        unsafe { ((*r).num_paths > 0 && !(*r).path_rec.is_null()).then(|| *(*r).path_rec) }
    }

    /// The MTU (IB enum) of the first path record, if the route has one.
    pub fn path_mtu(&self) -> Option<u8> {
        let r = self.route();
        // SAFETY: fields in place; path_rec holds num_paths records.
        unsafe { ((*r).num_paths > 0 && !(*r).path_rec.is_null()).then(|| (*(*r).path_rec).mtu) }
    }

    /// The route as `struct ibv_path_data` records (rsockets' RDMA_ROUTE
    /// option), as many as fit `out`: the bytes written; EINVAL if not even
    /// one fits.
    pub fn path_data_into(&self, out: &mut [u8]) -> Result<usize> {
        let sz = std::mem::size_of::<ibv_path_data>();
        if out.len() < sz {
            return Err(Error::INVAL);
        }
        let r = self.route();
        // SAFETY: fields in place.
        let (n, recs) = unsafe { ((*r).num_paths.max(0) as usize, (*r).path_rec) };
        let mut len = 0;
        for i in 0..n.min(out.len() / sz) {
            // SAFETY: path_rec holds num_paths records.
            let p = unsafe { *recs.add(i) };
            // SAFETY: gids are plain bytes.
            let (dgid, sgid) = unsafe { (p.dgid.raw, p.sgid.raw) };
            let fl = u32::from_be(p.flow_label) << 8;
            let d = ibv_path_data {
                flags: p.preference as u32,
                reserved: 0,
                path: ibv_path_record {
                    service_id: 0,
                    dgid,
                    sgid,
                    dlid: p.dlid,
                    slid: p.slid,
                    flowlabel_hoplimit: (fl | p.hop_limit as u32).to_be(),
                    tclass: p.traffic_class,
                    reversible_numpath: ((p.reversible as u8) << 7) | 1,
                    pkey: p.pkey,
                    qosclass_sl: (p.sl as u16).to_be(),
                    mtu: p.mtu | 2 << 6,
                    rate: p.rate | 2 << 6,
                    packetlifetime: p.packet_life_time | 2 << 6,
                    preference: 0,
                    reserved: [0; 6],
                },
            };
            // SAFETY: a plain struct of sz bytes.
            let b = unsafe { std::slice::from_raw_parts(&d as *const ibv_path_data as *const u8, sz) };
            out[len..len + sz].copy_from_slice(b);
            len += sz;
        }
        Ok(len)
    }

    /// Free the path records (the id is being destroyed).
    pub fn free_paths(&self) {
        self.set_paths(std::ptr::null_mut(), 0);
    }

    /// Network-order port of the source or destination address (the low
    /// 16 bits of an AF_IB service id), as `rdma_get_src_port`.
    pub fn port(&self, src: bool) -> u16 {
        match self.family(src) {
            libc::AF_INET | libc::AF_INET6 => u16::from_ne_bytes(self.addr_bytes::<2>(src, 2)),
            AF_IB => ((u64::from_be_bytes(self.addr_bytes::<8>(src, 24)) & 0xffff) as u16).to_be(),
            _ => 0,
        }
    }

    /// One more event of this id is finished with.
    #[inline]
    pub fn complete_event(&self) {
        self.completed.fetch_add(1, Ordering::SeqCst);
        self.notify_waiters();
    }

    /// Wake the threads waiting on this id, if any, after a change their
    /// condition reads (made SeqCst before this call). A waiter counts
    /// itself (SeqCst) before it tests its condition under the id's lock:
    /// either it sees the change, or this sees the waiter and wakes it
    /// under the same lock, once it sleeps.
    #[inline]
    pub fn notify_waiters(&self) {
        if self.waiters.load(Ordering::SeqCst) > 0 {
            self.wake_waiters();
        }
    }

    /// [`notify_waiters`](Self::notify_waiters) once there are some.
    #[inline(never)]
    fn wake_waiters(&self) {
        let _g = self.lock();
        self.cond.notify_all();
    }

    /// Block until `done(state)` holds, holding only this id's mutex,
    /// released while waiting (acks wake the waiter).
    pub fn wait<'a>(
        &'a self,
        mut st: LockGuard<'a, IdState>,
        done: impl Fn(&IdState) -> bool,
    ) -> LockGuard<'a, IdState> {
        self.waiters.fetch_add(1, Ordering::SeqCst);
        while !done(&st) {
            st = self.cond.wait(st);
        }
        self.waiters.fetch_sub(1, Ordering::SeqCst);
        st
    }

    /// Block until `reported` events of this id have been acked (the
    /// kernel's count from DESTROY_ID / MIGRATE_ID).
    pub fn wait_acked<'a>(&'a self, st: LockGuard<'a, IdState>, reported: u32) -> LockGuard<'a, IdState> {
        self.wait(st, |_| self.completed.load(Ordering::SeqCst) >= reported)
    }

    /// The transport of the id's device, if it has one.
    pub fn transport(&self) -> Option<i32> {
        // SAFETY: the context stays open while the id uses the device.
        self.device().map(|u| unsafe { verbs::transport_type(u.opened().verbs) })
    }

    /// The link layer of the id's port, as read when its device was opened.
    pub fn link_layer(&self) -> Option<i32> {
        let port = self.port_num() as usize;
        self.device()?.opened().link_layers.get(port.checked_sub(1)?).copied()
    }

    /// Whether the id's port speaks RoCE (InfiniBand transport over an
    /// Ethernet link layer), as found when its device was set.
    fn on_roce_port(&self) -> bool {
        self.dev.get().is_some() && self.roce.load(Ordering::Relaxed)
    }

    /// QUERY(ADDR): source/destination, and the device once the kernel
    /// knows it (an id keeps the first device it is bound to).
    pub fn query_addr(&self) -> Result<()> {
        let mut buf = MaybeUninit::uninit();
        let resp = ucma::query_addr(self.fd(), self.handle(), &mut buf)?;
        self.take_query_addr(resp)
    }

    /// What QUERY(ADDR) answered, taken into the id.
    pub(crate) fn take_query_addr(&self, resp: &cmd::QueryAddrResp) -> Result<()> {
        self.set_addr(true, &resp.src_addr, resp.src_size);
        self.set_addr(false, &resp.dst_addr, resp.dst_size);
        if self.dev.get().is_none() && resp.node_guid != 0 {
            let u = DevUse::acquire(device::get(resp.node_guid, resp.ibdev_index)?, true)?;
            self.set_verbs(u.opened().verbs);
            self.set_pd(u.pd());
            self.set_port_num(resp.port_num);
            self.set_pkey(resp.pkey);
            // SAFETY: the context stays open while the id uses the device.
            let ib = unsafe { verbs::transport_type(u.opened().verbs) } == crate::verbs::IBV_TRANSPORT_IB;
            let link = u.opened().link_layers.get((resp.port_num as usize).wrapping_sub(1)).copied();
            self.roce.store(ib && link == Some(crate::verbs::IBV_LINK_LAYER_ETHERNET), Ordering::Relaxed);
            // (dev.set publishes `roce` and the public fields: Release.)
            let _ = self.dev.set(u);
        }
        Ok(())
    }

    /// QUERY(GID): the source and destination GIDs.
    pub fn query_gid(&self) -> Result<()> {
        let mut resp = cmd::QueryAddrResp::zeroed();
        ucma::query_gid(self.fd(), self.handle(), &mut resp)?;
        self.take_query_gid(&resp);
        Ok(())
    }

    /// What QUERY(GID) answered, taken into the id.
    pub(crate) fn take_query_gid(&self, resp: &cmd::QueryAddrResp) {
        // Each address is a sockaddr_ib whose GID sits at offset 8.
        let gid = |a: &[u8; 128]| -> [u8; 16] { std::array::from_fn(|i| a[8 + i]) };
        self.set_gids(gid(&resp.src_addr), gid(&resp.dst_addr));
    }

    /// Source and destination GIDs after [`query_addr`](Self::query_addr).
    /// Where the kernel's QUERY(GID) answer is a function of what the id
    /// already knows, it is computed here, saving a round trip (the
    /// kernel's `rdma_read_gids`): no device gives zero GIDs, a RoCE port
    /// the GIDs of the IP addresses. InfiniBand, iWARP and AF_IB addresses
    /// still ask the kernel.
    pub fn fill_gids(&self) -> Result<()> {
        let gids = if self.dev.get().is_none() {
            (self.family(true) != AF_IB && self.family(false) != AF_IB).then_some(([0u8; 16], [0u8; 16]))
        } else if self.on_roce_port() {
            match (self.ip2gid_bits(true), self.ip2gid_bits(false)) {
                (Some(s), Some(d)) => Some((s.to_be_bytes(), d.to_be_bytes())),
                _ => None,
            }
        } else {
            None
        };
        match gids {
            Some((s, d)) => {
                self.set_gids(s, d);
                Ok(())
            }
            None => self.query_gid(),
        }
    }

    /// QUERY(PATH): replace `route.path_rec` (upstream leaks the old array).
    pub fn query_path(&self) -> Result<()> {
        let mut buf = MaybeUninit::uninit();
        let recs = ucma::query_path(self.fd(), self.handle(), &mut buf)?;
        self.take_query_path(recs)
    }

    /// The path records QUERY(PATH) answered (at most MAX_QUERY_PATHS),
    /// taken into the id.
    pub(crate) fn take_query_path(&self, recs: &[cmd::PathRecData]) -> Result<()> {
        let n = recs.len().min(cmd::MAX_QUERY_PATHS);
        if n == 0 {
            return Ok(());
        }
        let arr = if n == 1 {
            self.path0()
        } else {
            crate::cmem::malloc(n * std::mem::size_of::<ibv_sa_path_rec>())?.as_ptr() as *mut ibv_sa_path_rec
        };
        for (i, pd) in recs[..n].iter().enumerate() {
            // SAFETY: arr has room for n records.
            unsafe { arr.add(i).write(convert_path(pd)) };
        }
        self.set_paths(arr, n as i32);
        Ok(())
    }

    /// BIND, then the address, device and GIDs the kernel settled on.
    pub fn bind(&self, addr: &[u8]) -> Result<()> {
        ucma::bind(self.fd(), self.handle(), addr)?;
        self.query_addr()?;
        self.fill_gids()
    }

    /// RESOLVE_ADDR; the destination is recorded at once (ADDR_RESOLVED
    /// follows on the channel).
    pub fn resolve_addr(&self, src: Option<&[u8]>, dst: &[u8], timeout_ms: i32) -> Result<()> {
        ucma::resolve_addr(self.fd(), self.handle(), src, dst, timeout_ms as u32)?;
        self.set_addr(false, dst, dst.len() as u16);
        Ok(())
    }

    /// RESOLVE_ROUTE (or, on InfiniBand with ibacm, the route ibacm gives);
    /// ROUTE_RESOLVED follows on the channel.
    pub fn resolve_route(&self, timeout_ms: i32) -> Result<()> {
        // Upstream dereferences id->verbs unchecked: no device, no route.
        let t = self.transport().ok_or(Error::INVAL)?;
        if t != crate::verbs::IBV_TRANSPORT_IB || self.set_ib_route().is_err() {
            ucma::resolve_route(self.fd(), self.handle(), timeout_ms as u32)?;
        }
        Ok(())
    }

    /// Ask ibacm for a route and install it with RDMA_OPTION_IB_PATH; the
    /// kernel then reports ROUTE_RESOLVED itself.
    fn set_ib_route(&self) -> Result<()> {
        if !crate::addr::acm::connected() {
            return Err(Error::Errno(libc::ENOENT));
        }
        let known = |a: RawAddr| matches!(a.family(), libc::AF_INET | libc::AF_INET6 | AF_IB).then_some(a);
        let h = crate::addr::model::Hints::plain(RAI_ROUTEONLY, 0, 0, 0);
        let ai = crate::addr::model::AddrInfo {
            src: known(self.addr(true)),
            dst: known(self.addr(false)),
            ..Default::default()
        };
        let out = crate::addr::acm::resolve(ai, &h)?;
        let route = &out.last().ok_or(Error::Errno(libc::ENOENT))?.route;
        if route.is_empty() {
            return Err(Error::Errno(libc::ENOENT));
        }
        self.set_option(RDMA_OPTION_IB as u32, RDMA_OPTION_IB_PATH as u32, KernelBuf::of(route))
    }

    /// SET_OPTION (the kernel reads the value and checks its length).
    pub fn set_option(&self, level: u32, optname: u32, val: KernelBuf) -> Result<()> {
        ucma::set_option(self.fd(), self.handle(), level, optname, val)
    }

    pub fn notify(&self, event: u32) -> Result<()> {
        ucma::notify(self.fd(), self.handle(), event)
    }
}

/// The QP type upstream gives a port space.
pub fn qp_type_of(ps: u32) -> u32 {
    if ps == RDMA_PS_IPOIB as u32 || ps == RDMA_PS_UDP as u32 {
        IBV_QPT_UD as u32
    } else {
        IBV_QPT_RC as u32
    }
}

/// Record a new id as live (before the kernel knows it: no event can name
/// it before CREATE_ID returns).
pub fn register(id: &Shared<Id>) -> Result<()> {
    if !id.registered.swap(true, Ordering::AcqRel) {
        // The registration's count, taken back by unregister.
        let _ = Shared::into_raw(id.clone());
    }
    Ok(())
}

/// A child id (made for a connection request) whose events come without a
/// uid until it is accepted.
pub fn register_child(id: &Shared<Id>) -> Result<()> {
    CHILDREN.insert(id.handle() as usize, id.clone())?;
    id.child.store(true, Ordering::Release);
    Ok(())
}

/// Forget an id (and its child entry).
pub fn unregister(id: &Shared<Id>) {
    if id.registered.swap(false, Ordering::AcqRel) {
        // SAFETY: the count register() left, taken back once (the swap).
        drop(unsafe { Shared::from_raw(Shared::as_ptr(id)) });
    }
    if id.child.swap(false, Ordering::AcqRel) {
        CHILDREN.remove(id.handle() as usize);
    }
}

/// The live id C names; EINVAL for anything else (NULL, destroyed or being
/// destroyed, never ours).
/// (`lookup_uid`'s check written out here, with the destroying flag in the
/// same test: every export starts here, and calling `lookup_uid` or
/// filtering its result costs 2-10 more instructions per call, measured
/// with callgrind.)
#[inline]
pub fn lookup(ptr: *const rdma_cm_id) -> Result<Shared<Id>> {
    // SAFETY: as in `lookup_uid`.
    let id = unsafe { Shared::upgrade(&IDS, ptr as *const Id) }.ok_or(Error::INVAL)?;
    if id.registered.load(Ordering::Acquire) && !id.destroying.load(Ordering::Acquire) {
        Ok(id)
    } else {
        Err(Error::INVAL)
    }
}

/// The id the kernel names by uid, also while it is being destroyed (its
/// events must still be counted).
pub fn lookup_uid(uid: u64) -> Option<Shared<Id>> {
    // SAFETY: IDS holds only Shared<Id> blocks (the public struct first, so
    // the address C holds is the block's).
    let id = unsafe { Shared::upgrade(&IDS, uid as usize as *const Id) }?;
    // A slot reused since C was given the address names the new id, as a
    // reused heap address would.
    id.registered.load(Ordering::Acquire).then_some(id)
}

/// A not yet accepted child id by its kernel handle.
pub fn lookup_child(handle: u32) -> Option<Shared<Id>> {
    CHILDREN.get(handle as usize)
}

/// Kernel path record → `ibv_sa_path_rec`. The 6-bit MTU/rate/lifetime
/// values keep all six bits (upstream masks with 0x1F).
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

#[cfg(test)]
mod tests {
    use super::*;

    /// An id object alone (no kernel), for the address helpers.
    fn bare() -> Shared<Id> {
        // A channel value is needed; its fd (-1) is never used.
        let ch = Shared::try_new(crate::cm::channel::Channel::for_tests()).unwrap();
        Id::new(ch, std::ptr::null_mut(), RDMA_PS_TCP as u32, IBV_QPT_RC as u32, false).unwrap()
    }

    #[test]
    fn ip2gid_follows_the_kernel() {
        let id = bare();
        // IPv4: the v4-mapped IPv6 address (::ffff:192.0.2.1).
        // SAFETY: zeroed sockaddrs are valid.
        let mut sin: libc::sockaddr_in = unsafe { std::mem::zeroed() };
        sin.sin_family = libc::AF_INET as u16;
        sin.sin_port = 7471u16.to_be();
        sin.sin_addr.s_addr = u32::from_ne_bytes([192, 0, 2, 1]);
        let a = RawAddr::from_in(&sin);
        id.set_addr(true, a.as_bytes(), a.len() as u16);
        let mut want = [0u8; 16];
        want[10..].copy_from_slice(&[0xff, 0xff, 192, 0, 2, 1]);
        assert_eq!(id.ip2gid(true), Some(want));
        assert_eq!(id.port(true), 7471u16.to_be());
        // Unset: zeros.
        assert_eq!(id.ip2gid(false), Some([0; 16]));
        assert_eq!(id.port(false), 0);
        // IPv6: the address itself.
        // SAFETY: as above.
        let mut sin6: libc::sockaddr_in6 = unsafe { std::mem::zeroed() };
        sin6.sin6_family = libc::AF_INET6 as u16;
        sin6.sin6_port = 9u16.to_be();
        sin6.sin6_addr.s6_addr = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        let a = RawAddr::from_in6(&sin6);
        id.set_addr(false, a.as_bytes(), a.len() as u16);
        assert_eq!(id.ip2gid(false), Some(sin6.sin6_addr.s6_addr));
        assert_eq!(id.port(false), 9u16.to_be());
        // AF_IB carries its own GID: ask the kernel; its port is the
        // service id's low 16 bits.
        let sib = sockaddr_ib {
            sib_family: AF_IB as u16,
            sib_sid: (((RDMA_PS_TCP as u64) << 16) + 7471).to_be(),
            ..Default::default()
        };
        let a = RawAddr::from_ib(&sib);
        id.set_addr(true, a.as_bytes(), a.len() as u16);
        assert_eq!(id.ip2gid(true), None);
        assert_eq!(id.port(true), 7471u16.to_be());
    }
}
#[cfg(test)]
mod size_tests {
    use super::*;

    #[test]
    fn an_id_stays_small() {
        // Memory per id is one of make bench's targets (at most upstream's
        // resident bytes per id, 632 at 10 000 ids): the pool slot (the id
        // and its owner's count) must not grow unnoticed.
        assert!(Shared::<Id>::LAYOUT.size() <= 592, "slot {} bytes", Shared::<Id>::LAYOUT.size());
        assert!(std::mem::size_of::<IdState>() <= 40);
    }
}
