//! RDMA devices as the CM sees them (reference §4.1): found by libibverbs
//! only when first needed, opened lazily by GUID (+ kernel index), one
//! shared PD per device while ids use it, a device that fails to open is
//! skipped, an unknown GUID re-syncs the list (hot-plug).

use crate::abi::{ibv_context, ibv_pd, ibv_xrcd};
use crate::error::{Error, Result};
use crate::verbs::{self, ibv_device};
use super::sysfs;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

/// `ibv_get_device_index` when the kernel does not tell.
pub(crate) const INVALID_INDEX: u32 = u32::MAX;

pub struct CmDevice {
    /// Node GUID in network byte order, as the kernel reports it.
    pub guid: u64,
    pub index: u32,
    pub dev: *mut ibv_device,
    pub verbs: *mut ibv_context,
    pub pd: *mut ibv_pd,
    /// XRC domain for XRC receive QPs and SRQs, opened on first use.
    pub xrcd: *mut ibv_xrcd,
    /// Ids (and `rdma_get_devices` lists) holding this device.
    pub refcnt: usize,
    pub dead: bool,
    pub max_qpsize: i32,
    pub max_initiator_depth: u8,
    pub max_responder_resources: u8,
    pub port_cnt: u8,
    /// Link layer of each port (index port_num - 1), read when opened.
    pub link_layers: Vec<i32>,
}

// SAFETY: the raw pointers are libibverbs objects used only under DEVICES.
unsafe impl Send for CmDevice {}

pub struct Devices {
    /// Boxed so that ids can keep stable pointers to entries.
    pub list: Vec<Box<CmDevice>>,
    /// The libibverbs list the entries come from (freed on re-sync).
    raw: *mut *mut ibv_device,
}

// SAFETY: only accessed under the mutex.
unsafe impl Send for Devices {}

static DEVICES: Mutex<Devices> = Mutex::new(Devices { list: Vec::new(), raw: std::ptr::null_mut() });

pub fn lock() -> MutexGuard<'static, Devices> {
    DEVICES.lock().unwrap_or_else(|e| e.into_inner())
}

impl Devices {
    /// Re-read libibverbs' device list: add new devices, mark vanished ones
    /// dead (freed once nobody holds them). ENODEV if there are none.
    pub fn sync(&mut self) -> Result<()> {
        preload_providers();
        let mut n = 0;
        // SAFETY: plain libibverbs call; the list is owned by us.
        let raw = unsafe { verbs::ibv_get_device_list(&mut n) };
        if raw.is_null() {
            return Err(Error::Errno(libc::ENODEV));
        }
        if n <= 0 {
            // SAFETY: list from ibv_get_device_list.
            unsafe { verbs::ibv_free_device_list(raw) };
            return Err(Error::Errno(libc::ENODEV));
        }
        // SAFETY: raw holds n valid device pointers.
        let new: Vec<*mut ibv_device> = (0..n as usize).map(|i| unsafe { *raw.add(i) }).collect();
        for d in &mut self.list {
            if !new.contains(&d.dev) {
                d.dead = true;
            }
        }
        for &dev in &new {
            if !self.list.iter().any(|d| d.dev == dev) {
                // SAFETY: dev is a valid device of the new list.
                let (guid, idx) = unsafe { (verbs::ibv_get_device_guid(dev), verbs::ibv_get_device_index(dev)) };
                self.list.push(Box::new(CmDevice {
                    guid,
                    index: if idx < 0 { INVALID_INDEX } else { idx as u32 },
                    dev,
                    verbs: std::ptr::null_mut(),
                    pd: std::ptr::null_mut(),
                    xrcd: std::ptr::null_mut(),
                    refcnt: 0,
                    dead: false,
                    max_qpsize: 0,
                    max_initiator_depth: 0,
                    max_responder_resources: 0,
                    port_cnt: 0,
                    link_layers: Vec::new(),
                }));
            }
        }
        // Kernel index order (GUID order where the index is unknown).
        self.list.sort_by_key(|d| (d.index, u64::from_be(d.guid)));
        self.reap();
        if !self.raw.is_null() {
            // SAFETY: the previous list; its devices stay referenced by
            // libibverbs while contexts on them are open.
            unsafe { verbs::ibv_free_device_list(self.raw) };
        }
        self.raw = raw;
        Ok(())
    }

    /// Free dead devices nobody holds.
    fn reap(&mut self) {
        self.list.retain_mut(|d| {
            if d.dead && d.refcnt == 0 {
                release(d);
                false
            } else {
                true
            }
        });
    }

    fn find(&mut self, guid: u64, index: u32) -> Option<usize> {
        self.list.iter().position(|d| {
            !d.dead
                && d.guid == guid
                && (index == INVALID_INDEX || d.index == INVALID_INDEX || d.index == index)
        })
    }

    /// The device with this GUID (and index), opened, with a PD, and one
    /// more reference. Re-syncs once if it is unknown.
    pub fn get(&mut self, guid: u64, index: u32) -> Result<*mut CmDevice> {
        if self.raw.is_null() || self.find(guid, index).is_none() {
            self.sync()?;
        }
        let i = self.find(guid, index).ok_or(Error::Errno(libc::ENODEV))?;
        let d = &mut self.list[i];
        open(d)?;
        if d.pd.is_null() {
            // SAFETY: verbs is an open context.
            d.pd = unsafe { verbs::ibv_alloc_pd(d.verbs) };
            if d.pd.is_null() {
                return Err(Error::Errno(if crate::error::errno() != 0 { crate::error::errno() } else { libc::ENOMEM }));
            }
        }
        d.refcnt += 1;
        Ok(&mut **d as *mut CmDevice)
    }

    /// The device's XRC domain (opened once, kept until the device goes).
    pub fn xrcd(&mut self, dev: *mut CmDevice) -> Result<*mut ibv_xrcd> {
        let d = self.list.iter_mut().find(|d| std::ptr::eq(&***d, dev)).ok_or(Error::Errno(libc::ENODEV))?;
        if d.xrcd.is_null() {
            // SAFETY: an open context held by the calling id.
            d.xrcd = unsafe { verbs::rdmacm_shim_open_xrcd(d.verbs) };
            if d.xrcd.is_null() {
                return Err(Error::Errno(match crate::error::errno() {
                    0 => libc::EOPNOTSUPP,
                    e => e,
                }));
            }
        }
        Ok(d.xrcd)
    }

    /// Drop one reference; the PD goes with the last one.
    pub fn put(&mut self, dev: *mut CmDevice) {
        let Some(d) = self.list.iter_mut().find(|d| std::ptr::eq(&***d, dev)) else { return };
        d.refcnt = d.refcnt.saturating_sub(1);
        if d.refcnt == 0 {
            if !d.pd.is_null() {
                // SAFETY: our PD, no id uses it any more.
                unsafe { verbs::ibv_dealloc_pd(d.pd) };
                d.pd = std::ptr::null_mut();
            }
            if d.dead {
                self.reap();
            }
        }
    }

    /// Open every live device (`rdma_get_devices`), marking failures dead.
    pub fn open_all(&mut self) -> Result<Vec<*mut ibv_context>> {
        self.sync()?;
        let mut out = Vec::new();
        for d in self.list.iter_mut().filter(|d| !d.dead) {
            if open(d).is_err() {
                d.dead = true;
                continue;
            }
            d.refcnt += 1;
            out.push(d.verbs);
        }
        Ok(out)
    }

    /// Drop the references `rdma_get_devices` took for these contexts.
    pub fn put_contexts(&mut self, ctxs: &[*mut ibv_context]) {
        for d in self.list.iter_mut() {
            let n = ctxs.iter().filter(|&&c| c == d.verbs && !c.is_null()).count();
            d.refcnt = d.refcnt.saturating_sub(n);
        }
        self.reap();
    }
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
    let mut names: Vec<&str> = Vec::new();
    for d in sysfs::verbs_devices() {
        match sysfs::provider_hint_at(sysfs::root(), &d.ibdev) {
            Some(n) if !names.contains(&n) => names.push(n),
            Some(_) => {}
            None => return, // libibverbs will load every provider anyway
        }
    }
    let Some(dir) = provider_dir() else { return };
    let Ok(entries) = std::fs::read_dir(&dir) else { return };
    let files: Vec<String> = entries.flatten().filter_map(|e| e.file_name().into_string().ok()).collect();
    for n in names {
        let prefix = format!("lib{n}-rdmav");
        // The suffix is libibverbs' private ABI: a provider built for
        // another one fails to load (unresolved symbol) and is skipped.
        for f in files.iter().filter(|f| f.starts_with(&prefix) && f.ends_with(".so")) {
            let Ok(path) = std::ffi::CString::new(dir.join(f).into_os_string().into_vec()) else { continue };
            // SAFETY: loading a provider runs its constructor, which only
            // registers the driver with libibverbs; the handle is kept.
            if !unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW) }.is_null() {
                break;
            }
            // SAFETY: clears the failure so the application's next
            // dlerror() does not report ours.
            unsafe { libc::dlerror() };
        }
    }
}

/// libibverbs' provider directory: `libibverbs/` beside libibverbs itself.
fn provider_dir() -> Option<std::path::PathBuf> {
    // SAFETY: all-zero Dl_info is valid; dladdr fills it for an address
    // inside a loaded object.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    let f = verbs::ibv_get_device_list as *const libc::c_void;
    // SAFETY: f is a function of the loaded libibverbs.
    if unsafe { libc::dladdr(f, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dladdr returned a NUL-terminated path owned by the loader.
    let lib = std::path::PathBuf::from(std::ffi::OsStr::from_bytes(unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_bytes()));
    Some(lib.parent()?.join("libibverbs"))
}

/// Open a device and read its limits (upstream's `ucma_init_device`).
fn open(d: &mut CmDevice) -> Result<()> {
    if !d.verbs.is_null() {
        return Ok(());
    }
    // SAFETY: d.dev is a device from the current libibverbs list.
    let ctx = unsafe { verbs::ibv_open_device(d.dev) };
    if ctx.is_null() {
        return Err(Error::Errno(libc::ENODEV));
    }
    let mut attr = verbs::DeviceAttr { raw: [0; 232] };
    // SAFETY: ctx is open; attr has the size libibverbs expects.
    let rc = unsafe { verbs::ibv_query_device(ctx, &mut attr) };
    if rc != 0 {
        // SAFETY: close what we opened.
        unsafe { verbs::ibv_close_device(ctx) };
        return Err(Error::Errno(rc));
    }
    d.verbs = ctx;
    d.port_cnt = attr.phys_port_cnt();
    d.max_qpsize = attr.max_qp_wr();
    d.max_initiator_depth = attr.max_qp_init_rd_atom() as u8;
    d.max_responder_resources = attr.max_qp_rd_atom() as u8;
    // SAFETY: ctx is open; ports are numbered from 1.
    d.link_layers = (1..=d.port_cnt).map(|p| unsafe { verbs::rdmacm_shim_link_layer(ctx, p) }).collect();
    Ok(())
}

fn release(d: &mut CmDevice) {
    // SAFETY: objects we created; nobody holds the device any more.
    unsafe {
        if !d.xrcd.is_null() {
            verbs::rdmacm_shim_close_xrcd(d.xrcd);
        }
        if !d.pd.is_null() {
            verbs::ibv_dealloc_pd(d.pd);
        }
        if !d.verbs.is_null() {
            verbs::ibv_close_device(d.verbs);
        }
    }
    d.pd = std::ptr::null_mut();
    d.xrcd = std::ptr::null_mut();
    d.verbs = std::ptr::null_mut();
}
