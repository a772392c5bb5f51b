//! RDMA devices as the CM sees them: found by libibverbs only when first
//! needed, opened lazily by GUID (+ kernel index), one shared PD per device
//! while ids use it, a device that fails to open is skipped, an unknown
//! GUID re-syncs the list (hot-plug).
//!
//! A [`Device`] is a [`Shared`] owner: the list holds one reference, and so
//! does every id bound to the device ([`DevUse`]). A device that vanishes
//! from libibverbs' list leaves the list at the next sync and is closed
//! when its last user lets go.

use crate::abi::{ibv_context, ibv_device, ibv_device_attr, ibv_pd, ibv_xrcd};
use crate::cmem::Shared;
use crate::error::{errno, Error, Result};
use crate::sysfs;
use crate::verbs;

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, RwLock};

/// `ibv_get_device_index` when the kernel does not tell.
pub(crate) const INVALID_INDEX: u32 = u32::MAX;

/// What an open context tells the CM (upstream's `ucma_init_device`).
pub struct Opened {
    pub verbs: *mut ibv_context,
    pub max_qpsize: i32,
    pub max_initiator_depth: u8,
    pub max_responder_resources: u8,
    /// Link layer of each port (index port_num - 1), read when opened.
    pub link_layers: Vec<i32>,
}

pub struct Device {
    /// Node GUID in network byte order, as the kernel reports it.
    pub guid: u64,
    pub index: u32,
    dev: *mut ibv_device,
    opened: OnceLock<Opened>,
    open_lock: Mutex<()>,
    /// Ids and `rdma_get_devices` lists using the device.
    users: AtomicUsize,
    /// The shared PD, alive while there are users (allocated by the first
    /// id that needs it, freed with the last user).
    pd: AtomicPtr<ibv_pd>,
    pd_lock: Mutex<()>,
    /// XRC domain for XRC receive QPs and SRQs, opened on first use.
    xrcd: Mutex<XrcdPtr>,
}

struct XrcdPtr(*mut ibv_xrcd);
// SAFETY: a libibverbs object, only used under the device's xrcd mutex.
unsafe impl Send for XrcdPtr {}

// SAFETY: the raw pointers are libibverbs objects, which libibverbs lets
// any thread use; the library's own state is atomics and mutexes.
unsafe impl Send for Device {}
// SAFETY: as above.
unsafe impl Sync for Device {}
// SAFETY: as above.
unsafe impl Send for Opened {}
// SAFETY: as above.
unsafe impl Sync for Opened {}

impl Device {
    /// Open the device once and read its limits.
    #[inline]
    pub fn open(&self) -> Result<&Opened> {
        match self.opened.get() {
            Some(o) => Ok(o),
            None => self.open_slow(),
        }
    }

    #[cold]
    fn open_slow(&self) -> Result<&Opened> {
        let _g = self.open_lock.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(o) = self.opened.get() {
            return Ok(o);
        }
        // SAFETY: dev is a device of libibverbs' list, which stays valid
        // while contexts on it may be opened.
        let ctx = unsafe { verbs::ibv_open_device(self.dev) };
        if ctx.is_null() {
            return Err(Error::Errno(libc::ENODEV));
        }
        let close = |e| {
            // SAFETY: the context just opened.
            unsafe { verbs::ibv_close_device(ctx) };
            Err(e)
        };
        let mut attr = ibv_device_attr::default();
        // SAFETY: ctx is open; attr is a full ibv_device_attr.
        let rc = unsafe { verbs::ibv_query_device(ctx, &mut attr) };
        if rc != 0 {
            return close(Error::Errno(rc));
        }
        let mut link_layers = Vec::new();
        if link_layers.try_reserve_exact(attr.phys_port_cnt as usize).is_err() {
            return close(Error::NOMEM);
        }
        // SAFETY: ctx is open; ports are numbered from 1.
        link_layers.extend((1..=attr.phys_port_cnt).map(|p| unsafe { verbs::rdmacm_shim_link_layer(ctx, p) }));
        let o = Opened {
            verbs: ctx,
            max_qpsize: attr.max_qp_wr,
            max_initiator_depth: attr.max_qp_init_rd_atom as u8,
            max_responder_resources: attr.max_qp_rd_atom as u8,
            link_layers,
        };
        let _ = self.opened.set(o);
        Ok(self.opened.get().expect("set above"))
    }

    /// The opened context's facts (None before [`Device::open`]).
    pub fn opened(&self) -> Option<&Opened> {
        self.opened.get()
    }

    /// The device's XRC domain (opened once, kept until the device goes).
    pub fn xrcd(&self) -> Result<*mut ibv_xrcd> {
        let o = self.open()?;
        let mut x = self.xrcd.lock().unwrap_or_else(|e| e.into_inner());
        if x.0.is_null() {
            // SAFETY: an open context.
            x.0 = unsafe { verbs::rdmacm_shim_open_xrcd(o.verbs) };
            if x.0.is_null() {
                return Err(Error::Errno(match errno() {
                    0 => libc::EOPNOTSUPP,
                    e => e,
                }));
            }
        }
        Ok(x.0)
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        // SAFETY: objects this device created; nobody holds it any more.
        unsafe {
            let x = self.xrcd.get_mut().unwrap_or_else(|e| e.into_inner()).0;
            if !x.is_null() {
                verbs::rdmacm_shim_close_xrcd(x);
            }
            let pd = *self.pd.get_mut();
            if !pd.is_null() {
                verbs::ibv_dealloc_pd(pd);
            }
            if let Some(o) = self.opened.get() {
                verbs::ibv_close_device(o.verbs);
            }
        }
    }
}

/// One user of a device: an id bound to it (with the shared PD) or an
/// entry of an `rdma_get_devices` list. The last user frees the PD.
pub struct DevUse {
    dev: Shared<Device>,
}

impl DevUse {
    /// Open the device and count a user; `with_pd` makes sure the shared
    /// PD exists (ids need it, device lists do not).
    #[inline]
    pub fn acquire(dev: Shared<Device>, with_pd: bool) -> Result<DevUse> {
        let o = dev.open()?;
        // Common case: already used, PD there. No lock.
        let mut n = dev.users.load(Ordering::Acquire);
        while n > 0 && (!with_pd || !dev.pd.load(Ordering::Acquire).is_null()) {
            match dev.users.compare_exchange_weak(n, n + 1, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Ok(DevUse { dev }),
                Err(m) => n = m,
            }
        }
        {
            let _g = dev.pd_lock.lock().unwrap_or_else(|e| e.into_inner());
            if with_pd && dev.pd.load(Ordering::Acquire).is_null() {
                // SAFETY: an open context.
                let pd = unsafe { verbs::ibv_alloc_pd(o.verbs) };
                if pd.is_null() {
                    return Err(Error::Errno(match errno() {
                        0 => libc::ENOMEM,
                        e => e,
                    }));
                }
                dev.pd.store(pd, Ordering::Release);
            }
            dev.users.fetch_add(1, Ordering::AcqRel);
        }
        Ok(DevUse { dev })
    }

    pub fn device(&self) -> &Device {
        &self.dev
    }

    /// The device's open context and limits.
    pub fn opened(&self) -> &Opened {
        self.dev.opened().expect("a used device is open")
    }

    /// The shared PD (non-NULL for users acquired with it).
    pub fn pd(&self) -> *mut ibv_pd {
        self.dev.pd.load(Ordering::Acquire)
    }
}

impl Drop for DevUse {
    fn drop(&mut self) {
        let d = &self.dev;
        let mut n = d.users.load(Ordering::Acquire);
        while n > 1 {
            match d.users.compare_exchange_weak(n, n - 1, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return,
                Err(m) => n = m,
            }
        }
        let _g = d.pd_lock.lock().unwrap_or_else(|e| e.into_inner());
        if d.users.fetch_sub(1, Ordering::AcqRel) == 1 {
            let pd = d.pd.swap(std::ptr::null_mut(), Ordering::AcqRel);
            if !pd.is_null() {
                // SAFETY: our PD; no user is left to use it.
                unsafe { verbs::ibv_dealloc_pd(pd) };
            }
        }
    }
}

struct List {
    /// Live devices, in kernel index order.
    devs: Vec<Shared<Device>>,
    /// libibverbs' list the entries come from (replaced on re-sync).
    raw: *mut *mut ibv_device,
}

// SAFETY: only used under DEVICES' lock.
unsafe impl Send for List {}
// SAFETY: as above.
unsafe impl Sync for List {}

/// Read-mostly: a writer only at the first use and on hot-plug.
static DEVICES: RwLock<List> = RwLock::new(List { devs: Vec::new(), raw: std::ptr::null_mut() });

impl List {
    fn find(&self, guid: u64, index: u32) -> Option<&Shared<Device>> {
        self.devs
            .iter()
            .find(|d| d.guid == guid && (index == INVALID_INDEX || d.index == INVALID_INDEX || d.index == index))
    }

    /// Re-read libibverbs' device list: add new devices, drop vanished
    /// ones (closed once nobody uses them). ENODEV if there are none.
    fn sync(&mut self) -> Result<()> {
        preload_providers();
        let mut n = 0;
        // SAFETY: plain libibverbs call; the list is owned by us.
        let raw = unsafe { verbs::ibv_get_device_list(&mut n) };
        if raw.is_null() {
            return Err(Error::Errno(libc::ENODEV));
        }
        // SAFETY: raw holds n valid device pointers.
        let new = unsafe { std::slice::from_raw_parts(raw, n.max(0) as usize) };
        let mut devs = Vec::new();
        if n <= 0 || devs.try_reserve_exact(new.len()).is_err() {
            // SAFETY: list from ibv_get_device_list.
            unsafe { verbs::ibv_free_device_list(raw) };
            return Err(if n <= 0 { Error::Errno(libc::ENODEV) } else { Error::NOMEM });
        }
        for &dev in new {
            if let Some(d) = self.devs.iter().find(|d| d.dev == dev) {
                devs.push(d.clone());
                continue;
            }
            // SAFETY: dev is a valid device of the new list.
            let (guid, idx) = unsafe { (verbs::ibv_get_device_guid(dev), verbs::ibv_get_device_index(dev)) };
            let d = Shared::try_new(Device {
                guid,
                index: if idx < 0 { INVALID_INDEX } else { idx as u32 },
                dev,
                opened: OnceLock::new(),
                open_lock: Mutex::new(()),
                users: AtomicUsize::new(0),
                pd: AtomicPtr::new(std::ptr::null_mut()),
                pd_lock: Mutex::new(()),
                xrcd: Mutex::new(XrcdPtr(std::ptr::null_mut())),
            });
            match d {
                Ok(d) => devs.push(d),
                Err(e) => {
                    // SAFETY: as above.
                    unsafe { verbs::ibv_free_device_list(raw) };
                    return Err(e);
                }
            }
        }
        // (sort_unstable: the stable sort may allocate a buffer)
        devs.sort_unstable_by_key(|d| (d.index, u64::from_be(d.guid)));
        self.devs = devs;
        if !self.raw.is_null() {
            // SAFETY: the previous list; its devices stay referenced by
            // libibverbs while contexts on them are open.
            unsafe { verbs::ibv_free_device_list(self.raw) };
        }
        self.raw = raw;
        Ok(())
    }
}

fn read() -> std::sync::RwLockReadGuard<'static, List> {
    DEVICES.read().unwrap_or_else(|e| e.into_inner())
}

fn write() -> std::sync::RwLockWriteGuard<'static, List> {
    DEVICES.write().unwrap_or_else(|e| e.into_inner())
}

/// The device with this GUID (and kernel index), re-syncing the list once
/// if it is unknown; ENODEV if it does not exist.
#[inline]
pub fn get(guid: u64, index: u32) -> Result<Shared<Device>> {
    {
        let l = read();
        if !l.raw.is_null() {
            if let Some(d) = l.find(guid, index) {
                return Ok(d.clone());
            }
        }
    }
    let mut l = write();
    l.sync()?;
    l.find(guid, index).cloned().ok_or(Error::Errno(libc::ENODEV))
}

/// Every device that opens (`rdma_get_devices`), each with one user; a
/// device that fails to open is left out.
pub fn open_all() -> Result<Vec<DevUse>> {
    let devs = {
        let mut l = write();
        l.sync()?;
        let mut v = Vec::new();
        v.try_reserve_exact(l.devs.len()).map_err(|_| Error::NOMEM)?;
        v.extend(l.devs.iter().cloned());
        v
    };
    let mut out = Vec::new();
    out.try_reserve_exact(devs.len()).map_err(|_| Error::NOMEM)?;
    for d in devs {
        match DevUse::acquire(d, false) {
            Ok(u) => out.push(u),
            Err(e) if e == Error::NOMEM => return Err(e),
            Err(_) => {}
        }
    }
    Ok(out)
}

/// Before libibverbs' first device scan, load only the provider libraries
/// the present devices need. libibverbs matches the devices it finds
/// against the providers already registered, and loads every provider it
/// is configured with (17 libraries in Debian 12: most of the 50–140 ms of
/// a first `ibv_get_device_list`) only when a device is left unmatched. A
/// right hint therefore saves that; a wrong or missing one changes nothing
/// (libibverbs still loads them all) — the same as preloading them with its
/// RDMAV_DRIVERS variable. Runs once, at the first need of a device.
fn preload_providers() {
    static DONE: AtomicBool = AtomicBool::new(false);
    if DONE.swap(true, Ordering::AcqRel) {
        return;
    }
    // Only a hint: anything unexpected (an exhausted heap included) just
    // leaves libibverbs to load every provider. What allocates here
    // (opendir, the scan's list) reports ENOMEM rather than aborting.
    let Some(root) = sysfs::root() else { return };
    // The scan ucma's init made just before, when it is there.
    let Ok(devs) = sysfs::take_first_scan().map_or_else(sysfs::verbs_devices, Ok) else { return };
    let mut names: [&str; 8] = [""; 8];
    let mut n = 0;
    for d in &devs {
        match sysfs::provider_hint_at(root, d.ibdev.as_str()) {
            Some(h) if names[..n].contains(&h) => {}
            Some(h) if n < names.len() => {
                names[n] = h;
                n += 1;
            }
            _ => return, // libibverbs will load every provider anyway
        }
    }
    let Some(dir) = provider_dir() else { return };
    for name in &names[..n] {
        // "lib{name}-rdmav*.so"; the suffix is libibverbs' private ABI: a
        // provider built for another one fails to load (unresolved symbol)
        // and is skipped.
        let Ok(Some(mut entries)) = sysfs::Dir::open(&dir) else { return };
        while let Some(f) = entries.next_name() {
            let f = f.to_bytes();
            let Some(rest) = f.strip_prefix(b"lib").and_then(|r| r.strip_prefix(name.as_bytes())) else { continue };
            if !rest.starts_with(b"-rdmav") || !rest.ends_with(b".so") {
                continue;
            }
            let Some(path) = dir.join(f) else { continue };
            // SAFETY: loading a provider runs its constructor, which only
            // registers the driver with libibverbs; the handle is kept.
            if !unsafe { libc::dlopen(path.as_cstr().as_ptr(), libc::RTLD_NOW) }.is_null() {
                break;
            }
            // SAFETY: clears the failure so the application's next
            // dlerror() does not report ours.
            unsafe { libc::dlerror() };
        }
    }
}

/// libibverbs' provider directory: `libibverbs/` beside libibverbs itself.
fn provider_dir() -> Option<sysfs::SPath> {
    // SAFETY: all-zero Dl_info is valid; dladdr fills it for an address
    // inside a loaded object.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    let f = verbs::ibv_get_device_list as *const libc::c_void;
    // SAFETY: f is a function of the loaded libibverbs.
    if unsafe { libc::dladdr(f, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dladdr returned a NUL-terminated path owned by the loader.
    let lib = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_bytes();
    let slash = lib.iter().rposition(|&c| c == b'/')?;
    sysfs::SPath::new(&lib[..slash])?.join(b"libibverbs")
}

/// Users held for the lists `rdma_get_devices` handed out.
static LISTED: Mutex<Vec<DevUse>> = Mutex::new(Vec::new());

/// `rdma_get_devices`: the open contexts of every device, each counted as
/// a user until [`put_contexts`].
pub fn get_devices() -> Result<Vec<*mut ibv_context>> {
    let uses = open_all()?;
    let mut ctxs = Vec::new();
    ctxs.try_reserve_exact(uses.len() + 1).map_err(|_| Error::NOMEM)?;
    ctxs.extend(uses.iter().map(|u| u.opened().verbs));
    let mut l = LISTED.lock().unwrap_or_else(|e| e.into_inner());
    l.try_reserve(uses.len()).map_err(|_| Error::NOMEM)?;
    l.extend(uses);
    Ok(ctxs)
}

/// `rdma_free_devices`: one user less for each listed context.
pub fn put_contexts(ctxs: &[*mut ibv_context]) {
    let mut l = LISTED.lock().unwrap_or_else(|e| e.into_inner());
    for &c in ctxs {
        if let Some(i) = l.iter().position(|u| u.opened().verbs == c) {
            drop(l.swap_remove(i));
        }
    }
}
