//! What the library reads from sysfs, rooted where libibverbs roots it
//! (`$SYSFS_PATH` without trailing slashes when not set-uid, else `/sys`).
//!
//! Nothing here touches the heap except the result lists, which grow with
//! `try_reserve` (docs/architecture.md, "Memory"): paths are built in
//! fixed buffers ([`SPath`]), names and attributes are fixed-size values,
//! directories are read with `opendir`/`readdir` (whose one allocation
//! reports ENOMEM). std's `fs` and `Path` allocate infallibly.

use crate::error::{Error, Result};
use std::ffi::CStr;
use std::sync::{Mutex, OnceLock};

/// Where character devices live.
pub const CDEV_DIR: &CStr = cstr!("/dev/infiniband");

/// Room for one path (the root and what is joined to it); a longer one is
/// treated as absent.
const PATH_CAP: usize = 1024;

/// A NUL-terminated path in a fixed buffer.
#[derive(Clone)]
pub struct SPath {
    buf: [u8; PATH_CAP],
    len: usize,
}

impl SPath {
    /// `bytes` as a path (None: too long, or with a NUL inside).
    pub fn new(bytes: &[u8]) -> Option<SPath> {
        if bytes.len() >= PATH_CAP || bytes.contains(&0) {
            return None;
        }
        let mut p = SPath { buf: [0; PATH_CAP], len: bytes.len() };
        p.buf[..bytes.len()].copy_from_slice(bytes);
        Some(p)
    }

    /// `self/part` (None: too long).
    pub fn join(&self, part: &[u8]) -> Option<SPath> {
        let n = self.len + 1 + part.len();
        if n >= PATH_CAP || part.contains(&0) {
            return None;
        }
        let mut p = self.clone();
        p.buf[self.len] = b'/';
        p.buf[self.len + 1..n].copy_from_slice(part);
        p.buf[n] = 0;
        p.len = n;
        Some(p)
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    pub fn as_cstr(&self) -> &CStr {
        // SAFETY: buf[len] is NUL and nothing before it is (checked when built).
        unsafe { CStr::from_bytes_with_nul_unchecked(&self.buf[..=self.len]) }
    }

    /// Whether something is there (`stat` succeeds, following links).
    pub fn exists(&self) -> bool {
        // SAFETY: zeroed stat is a valid out-buffer; the path is a C string.
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            libc::stat(self.as_cstr().as_ptr(), &mut st) == 0
        }
    }
}

impl std::fmt::Debug for SPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_cstr())
    }
}

/// A short text of at most N bytes (a device name, an attribute's value).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Text<const N: usize> {
    b: [u8; N],
    len: usize,
}

impl<const N: usize> Text<N> {
    /// None: longer than N bytes or not UTF-8.
    pub fn new(s: &[u8]) -> Option<Self> {
        if s.len() > N || std::str::from_utf8(s).is_err() {
            return None;
        }
        let mut t = Text { b: [0; N], len: s.len() };
        t.b[..s.len()].copy_from_slice(s);
        Some(t)
    }

    pub fn as_str(&self) -> &str {
        // SAFETY: checked UTF-8 when built.
        unsafe { std::str::from_utf8_unchecked(&self.b[..self.len]) }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.b[..self.len]
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<const N: usize> std::fmt::Debug for Text<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl<const N: usize> PartialEq<&str> for Text<N> {
    fn eq(&self, o: &&str) -> bool {
        self.as_str() == *o
    }
}

/// A device name (`IB_DEVICE_NAME_MAX` is 64 with the NUL).
pub type Name = Text<64>;
/// A small attribute's value, without its trailing newline.
pub type Attr = Text<256>;

/// The sysfs root, computed once on first use (None: `$SYSFS_PATH` does
/// not fit a path buffer; then no device is found).
pub fn root() -> Option<&'static SPath> {
    static ROOT: OnceLock<Option<SPath>> = OnceLock::new();
    ROOT.get_or_init(|| {
        // SAFETY: getuid/geteuid cannot fail; getenv returns NULL or a C
        // string that stays valid while nobody changes the environment
        // (read at once, as libibverbs does). The ids are asked only when
        // the variable is set (the usual case costs no system call).
        unsafe {
            let v = libc::getenv(cstr!("SYSFS_PATH").as_ptr());
            if v.is_null() || libc::getuid() != libc::geteuid() {
                return SPath::new(b"/sys");
            }
            let mut b = CStr::from_ptr(v).to_bytes();
            while let [rest @ .., b'/'] = b {
                b = rest;
            }
            SPath::new(b)
        }
    })
    .as_ref()
}

/// Read a small sysfs attribute, without its trailing newline.
pub fn read_attr(path: &SPath) -> Option<Attr> {
    let mut buf = [0u8; 256];
    // SAFETY: a C string path; the descriptor is ours and closed below; buf
    // has room for what read is asked for.
    let n = unsafe {
        let fd = libc::open(path.as_cstr().as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return None;
        }
        let n = libc::read(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len());
        libc::close(fd);
        n
    };
    let mut v = buf.get(..usize::try_from(n).ok()?)?;
    while let [rest @ .., b'\n'] = v {
        v = rest;
    }
    Attr::new(v)
}

/// Bytes of directory entries read at a time (sysfs directories are small;
/// one entry is at most ~280 bytes).
const DIR_BUF: usize = 2048;

/// The fixed part of a `linux_dirent64` (getdents64(2)): inode, offset,
/// record length, type; the NUL-terminated name follows.
const DIRENT_NAME_AT: usize = 19;

#[repr(C, align(8))]
struct DirBuf([u8; DIR_BUF]);

/// An open directory, read with getdents64(2) into a buffer of its own,
/// closed on drop. (Not `opendir`: no 32 KiB heap buffer and no `fstat`
/// per directory; in a fresh process of the soft-RoCE guest a C program's
/// `opendir` scan of `class/infiniband_verbs` took ~1 ms more than the
/// same scan with getdents64, and our first `rdma_getaddrinfo`, which
/// scans it, ~150 µs less with this.)
pub struct Dir {
    fd: libc::c_int,
    buf: DirBuf,
    /// Bytes in `buf` from the last read, and where the next entry starts.
    len: usize,
    pos: usize,
}

impl Dir {
    /// Ok(None) when the directory cannot be opened for another reason than
    /// an exhausted heap (ENOMEM).
    pub fn open(path: &SPath) -> Result<Option<Dir>> {
        // SAFETY: a C string path.
        let fd = unsafe {
            libc::open(path.as_cstr().as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC | libc::O_NONBLOCK)
        };
        if fd >= 0 {
            Ok(Some(Dir { fd, buf: DirBuf([0; DIR_BUF]), len: 0, pos: 0 }))
        } else if crate::error::errno() == libc::ENOMEM {
            Err(Error::NOMEM)
        } else {
            Ok(None)
        }
    }

    /// The next entry's name (never `.` or `..`), None at the end (or on a
    /// read error, as readdir(3)).
    pub fn next_name(&mut self) -> Option<&CStr> {
        loop {
            if self.pos >= self.len {
                // SAFETY: our open descriptor; the buffer has room for DIR_BUF bytes.
                let n = unsafe { libc::syscall(libc::SYS_getdents64, self.fd, self.buf.0.as_mut_ptr(), DIR_BUF) };
                let n = usize::try_from(n).ok().filter(|&n| n > 0 && n <= DIR_BUF)?;
                self.len = n;
                self.pos = 0;
            }
            let rec = &self.buf.0[self.pos..self.len];
            let reclen = u16::from_ne_bytes([*rec.get(16)?, *rec.get(17)?]) as usize;
            if reclen <= DIRENT_NAME_AT || reclen > rec.len() {
                // Not what the kernel writes: stop here.
                self.len = 0;
                return None;
            }
            let start = self.pos + DIRENT_NAME_AT;
            self.pos += reclen;
            let nlen = self.buf.0[start..self.pos].iter().position(|&b| b == 0)?;
            let name = &self.buf.0[start..start + nlen];
            if name != b"." && name != b".." {
                return CStr::from_bytes_with_nul(&self.buf.0[start..=start + nlen]).ok();
            }
        }
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        // SAFETY: our open descriptor, closed once.
        unsafe { libc::close(self.fd) };
    }
}

/// Where to look, as [`SPath`]s: the sysfs root and the device directory.
fn roots() -> Option<(&'static SPath, SPath)> {
    Some((root()?, SPath::new(CDEV_DIR.to_bytes())?))
}

/// The ucma ABI version as sysfs states it, if it does (upstream then
/// assumes the newest ABI it knows, and fails later if that is wrong).
pub fn ucma_abi_version() -> Option<i64> {
    let r = root()?;
    [&b"class/misc/rdma_cm/abi_version"[..], b"class/infiniband_ucma/abi_version"]
        .iter()
        .find_map(|rel| read_attr(&r.join(rel)?))
        .map(|v| parse_long_prefix(v.as_str()))
}

/// `strtol(s, NULL, 10)`: optional blanks and sign, then digits; 0 if none.
pub fn parse_long_prefix(s: &str) -> i64 {
    let t = s.trim_start();
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let mut v: i64 = 0;
    for d in digits.bytes().take_while(u8::is_ascii_digit) {
        v = v.saturating_mul(10).saturating_add((d - b'0') as i64);
    }
    if neg {
        -v
    } else {
        v
    }
}

/// A verbs device as sysfs describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SysfsDevice {
    /// `uverbsN`
    pub uverbs: Name,
    /// e.g. `rxe0`
    pub ibdev: Name,
}

/// The uverbs devices libibverbs would consider: a `class/infiniband_verbs`
/// entry with an `ibdev` attribute naming an existing `class/infiniband`
/// device, a `dev` attribute of the form MAJ:MIN, and an existing
/// `/dev/infiniband/uverbsN` node. ENOMEM only when the heap is exhausted.
pub fn verbs_devices() -> Result<Vec<SysfsDevice>> {
    match roots() {
        Some((r, cdev)) => verbs_devices_at(r, &cdev),
        None => Ok(Vec::new()),
    }
}

/// The scan `ucma::init` made when it first succeeded, kept for the one
/// reader that comes right after it: the provider preload at the first
/// device open (`cm::device`), which would otherwise read the same
/// directories again (about a dozen system calls at a process's first
/// bind). That reader takes it only as a hint, so a device that came or
/// went in between costs nothing but the hint's benefit.
static FIRST_SCAN: Mutex<Option<Vec<SysfsDevice>>> = Mutex::new(None);

/// Keep `devs` for [`take_first_scan`] (a kept scan not yet taken is not
/// replaced: `ucma::init` succeeds once per process).
pub fn keep_first_scan(devs: Vec<SysfsDevice>) {
    let mut k = FIRST_SCAN.lock().unwrap_or_else(|e| e.into_inner());
    if k.is_none() {
        *k = Some(devs);
    }
}

/// The scan [`keep_first_scan`] kept, if not taken yet.
pub fn take_first_scan() -> Option<Vec<SysfsDevice>> {
    FIRST_SCAN.lock().unwrap_or_else(|e| e.into_inner()).take()
}

pub fn verbs_devices_at(root: &SPath, cdev_dir: &SPath) -> Result<Vec<SysfsDevice>> {
    let mut out = Vec::new();
    let Some(class) = root.join(b"class/infiniband_verbs") else { return Ok(out) };
    let Some(ibclass) = root.join(b"class/infiniband") else { return Ok(out) };
    let Some(mut dir) = Dir::open(&class)? else { return Ok(out) };
    while let Some(n) = dir.next_name() {
        let n = n.to_bytes();
        let Some(name) = Name::new(n).filter(|_| !n.starts_with(b".")) else { continue };
        let Some(d) = class.join(n) else { continue };
        let Some(ibdev) = d.join(b"ibdev").and_then(|p| read_attr(&p)).filter(|s| !s.is_empty()) else {
            continue;
        };
        let Some(ibdev) = Name::new(ibdev.as_bytes()) else { continue };
        if !ibclass.join(ibdev.as_bytes()).is_some_and(|p| p.exists()) {
            continue;
        }
        let Some(dev) = d.join(b"dev").and_then(|p| read_attr(&p)) else { continue };
        let mut it = dev.as_str().splitn(2, ':');
        let ok = matches!((it.next(), it.next()), (Some(a), Some(b))
            if !a.is_empty() && a.bytes().all(|c| c.is_ascii_digit())
            && b.bytes().take_while(u8::is_ascii_digit).count() > 0);
        if !ok || !cdev_dir.join(n).is_some_and(|p| p.exists()) {
            continue;
        }
        out.try_reserve(1).map_err(|_| Error::NOMEM)?;
        out.push(SysfsDevice { uverbs: name, ibdev });
    }
    // (sort_unstable: the stable sort allocates a buffer)
    out.sort_unstable_by(|a, b| a.uverbs.as_bytes().cmp(b.uverbs.as_bytes()));
    Ok(out)
}

/// One port of an RDMA device (`class/infiniband/DEV/ports/N`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortInfo {
    pub ibdev: Name,
    pub port: u32,
    /// `InfiniBand`, `Ethernet`, ...
    pub link_layer: Name,
    /// The numeric part of `state` (4 = ACTIVE).
    pub state: i64,
}

/// All ports of all devices that [`verbs_devices`] finds.
pub fn ports() -> Result<Vec<PortInfo>> {
    let mut out = Vec::new();
    let Some(r) = root() else { return Ok(out) };
    for d in verbs_devices()? {
        let Some(pdir) = r.join(b"class/infiniband").and_then(|p| p.join(d.ibdev.as_bytes())?.join(b"ports")) else {
            continue;
        };
        let Some(mut rd) = Dir::open(&pdir)? else { continue };
        let mut nums: Vec<u32> = Vec::new();
        while let Some(n) = rd.next_name() {
            if let Some(v) = n.to_str().ok().and_then(|s| s.parse().ok()) {
                nums.try_reserve(1).map_err(|_| Error::NOMEM)?;
                nums.push(v);
            }
        }
        nums.sort_unstable();
        for n in nums {
            let mut digits = [0u8; 10];
            let Some(p) = pdir.join(fmt_u32(n, &mut digits)) else { continue };
            let attr = |a: &[u8]| p.join(a).and_then(|f| read_attr(&f));
            out.try_reserve(1).map_err(|_| Error::NOMEM)?;
            out.push(PortInfo {
                ibdev: d.ibdev,
                port: n,
                link_layer: attr(b"link_layer")
                    .and_then(|v| Name::new(v.as_bytes()))
                    .unwrap_or(Name::new(b"").unwrap()),
                state: attr(b"state").map_or(0, |s| parse_long_prefix(s.as_str())),
            });
        }
    }
    Ok(out)
}

/// `n` in decimal, in `buf`.
pub fn fmt_u32(mut n: u32, buf: &mut [u8; 10]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[i..];
        }
    }
}

/// The libibverbs provider (the NAME of `libNAME-rdmavN.so`) an RDMA
/// device most likely needs, from sysfs alone. Software devices (rxe, siw)
/// carry a `parent` attribute naming their netdev and differ in node type
/// (1: CA for rxe, 4: RNIC for siw); a hardware device is known by the
/// kernel driver bound to its parent device. None when unsure. Only a hint:
/// see `device::preload_providers`.
pub fn provider_hint_at(root: &SPath, ibdev: &str) -> Option<&'static str> {
    let d = root.join(b"class/infiniband")?.join(ibdev.as_bytes())?;
    if d.join(b"parent")?.exists() {
        return match read_attr(&d.join(b"node_type")?).map(|t| parse_long_prefix(t.as_str())) {
            Some(1) => Some("rxe"),
            Some(4) => Some("siw"),
            _ => None,
        };
    }
    let link = d.join(b"device/driver")?;
    let mut buf = [0u8; PATH_CAP];
    // SAFETY: a C string path; buf has room for what readlink is asked for.
    let n = unsafe { libc::readlink(link.as_cstr().as_ptr(), buf.as_mut_ptr() as *mut libc::c_char, buf.len()) };
    let target = buf.get(..usize::try_from(n).ok()?)?;
    let drv = target.rsplit(|&c| c == b'/').next()?;
    let drv = std::str::from_utf8(drv).ok()?;
    // "mlx5_ib.rdma" (an auxiliary driver), "ib_qib", "iw_cxgb4", "qede"...
    let m = drv.split('.').next()?;
    let m = m.strip_prefix("ib_").or_else(|| m.strip_prefix("iw_")).unwrap_or(m);
    const TABLE: [(&str, &str); 16] = [
        ("mlx5", "mlx5"),
        ("mlx4", "mlx4"),
        ("hfi1", "hfi1verbs"),
        ("qib", "ipathverbs"),
        ("efa", "efa"),
        ("irdma", "irdma"),
        ("bnxt", "bnxt_re"),
        ("qed", "qedr"),
        ("hns", "hns"),
        ("erdma", "erdma"),
        ("mana", "mana"),
        ("cxgb4", "cxgb4"),
        ("mthca", "mthca"),
        ("ocrdma", "ocrdma"),
        ("be2net", "ocrdma"),
        ("vmw_pvrdma", "vmw_pvrdma"),
    ];
    TABLE.iter().find(|(k, _)| m.starts_with(k)).map(|&(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn first_scan_is_kept_once_and_taken_once() {
        let dev = |u: &[u8], i: &[u8]| SysfsDevice { uverbs: Name::new(u).unwrap(), ibdev: Name::new(i).unwrap() };
        assert_eq!(take_first_scan(), None);
        keep_first_scan(vec![dev(b"uverbs0", b"rxe0")]);
        // A later scan does not replace the first.
        keep_first_scan(vec![dev(b"uverbs1", b"rxe1")]);
        assert_eq!(take_first_scan(), Some(vec![dev(b"uverbs0", b"rxe0")]));
        assert_eq!(take_first_scan(), None);
    }

    #[test]
    fn strtol_prefix() {
        assert_eq!(parse_long_prefix("4\n"), 4);
        assert_eq!(parse_long_prefix(" -3x"), -3);
        assert_eq!(parse_long_prefix("x"), 0);
    }

    #[test]
    fn paths_and_texts() {
        let p = SPath::new(b"/sys").unwrap().join(b"class").unwrap();
        assert_eq!(p.as_cstr(), cstr!("/sys/class"));
        assert!(SPath::new(&[b'a'; PATH_CAP]).is_none());
        assert!(SPath::new(b"a\0b").is_none());
        assert!(p.join(&[b'x'; PATH_CAP - 11]).is_none());
        assert!(p.join(&[b'x'; PATH_CAP - 12]).is_some());
        assert_eq!(Name::new(b"rxe0").unwrap(), "rxe0");
        assert!(Name::new(&[b'x'; 65]).is_none());
        let mut b = [0; 10];
        assert_eq!(fmt_u32(0, &mut b), b"0");
        assert_eq!(fmt_u32(4294967295, &mut b), b"4294967295");
    }

    #[test]
    fn a_directory_lists_every_entry_once_across_reads() {
        let t = std::env::temp_dir().join(format!("rdmacm-dir-{}", std::process::id()));
        let _ = fs::remove_dir_all(&t);
        fs::create_dir_all(&t).unwrap();
        // Long names: many getdents64 reads of DIR_BUF bytes.
        let mut want: Vec<String> = (0..300).map(|i| format!("{i:03}-{}", "n".repeat(i % 200))).collect();
        for w in &want {
            fs::write(t.join(w), b"").unwrap();
        }
        fs::create_dir(t.join(".hidden")).unwrap();
        want.push(".hidden".into());
        let sp = SPath::new(t.as_os_str().as_encoded_bytes()).unwrap();
        let mut d = Dir::open(&sp).unwrap().unwrap();
        let mut got = Vec::new();
        while let Some(n) = d.next_name() {
            got.push(n.to_str().unwrap().to_string());
        }
        assert!(d.next_name().is_none(), "stays at its end");
        got.sort();
        want.sort();
        assert_eq!(got, want, "every entry once, never . or ..");
        drop(d);
        assert!(Dir::open(&SPath::new(t.join("000-").as_os_str().as_encoded_bytes()).unwrap()).unwrap().is_none());
        assert!(Dir::open(&SPath::new(t.join("absent").as_os_str().as_encoded_bytes()).unwrap()).unwrap().is_none());
        fs::remove_dir_all(&t).unwrap();
    }

    #[test]
    fn device_scan_applies_libibverbs_rules() {
        let t = std::env::temp_dir().join(format!("rdmacm-sysfs-{}", std::process::id()));
        let _ = fs::remove_dir_all(&t);
        let cdev = t.join("dev");
        fs::create_dir_all(&cdev).unwrap();
        let mk = |uv: &str, ibdev: &str, dev: &str, node: bool| {
            let d = t.join("class/infiniband_verbs").join(uv);
            fs::create_dir_all(&d).unwrap();
            fs::write(d.join("ibdev"), format!("{ibdev}\n")).unwrap();
            fs::write(d.join("dev"), format!("{dev}\n")).unwrap();
            fs::create_dir_all(t.join("class/infiniband").join(ibdev)).unwrap();
            if node {
                fs::write(cdev.join(uv), b"").unwrap();
            }
        };
        mk("uverbs0", "rxe0", "231:192", true);
        mk("uverbs1", "rxe1", "231:193", false); // no /dev node
        mk("uverbs2", "rxe2", "bogus", true); // bad dev attribute
        let sp = |p: &std::path::Path| SPath::new(p.as_os_str().as_encoded_bytes()).unwrap();
        let found = verbs_devices_at(&sp(&t), &sp(&cdev)).unwrap();
        let n = |s: &str| Name::new(s.as_bytes()).unwrap();
        assert_eq!(found, vec![SysfsDevice { uverbs: n("uverbs0"), ibdev: n("rxe0") }]);
        assert!(verbs_devices_at(&sp(&t.join("nothing")), &sp(&cdev)).unwrap().is_empty());
        fs::remove_dir_all(&t).unwrap();
    }

    #[test]
    fn provider_hints() {
        let t = std::env::temp_dir().join(format!("rdmacm-hint-{}", std::process::id()));
        let _ = fs::remove_dir_all(&t);
        let ib = t.join("class/infiniband");
        let soft = |name: &str, node: &str| {
            fs::create_dir_all(ib.join(name)).unwrap();
            fs::write(ib.join(name).join("parent"), b"d0\n").unwrap();
            fs::write(ib.join(name).join("node_type"), node).unwrap();
        };
        soft("rxe0", "1: CA\n");
        soft("siw0", "4: RNIC\n");
        soft("odd0", "2: switch\n");
        let hw = |name: &str, driver: &str| {
            fs::create_dir_all(ib.join(name).join("device")).unwrap();
            let target = t.join("bus/drivers").join(driver);
            fs::create_dir_all(&target).unwrap();
            std::os::unix::fs::symlink(&target, ib.join(name).join("device/driver")).unwrap();
        };
        hw("mlx5_0", "mlx5_core");
        hw("mlx5_1", "mlx5_ib.rdma");
        hw("qib0", "ib_qib");
        hw("cxgb4_0", "iw_cxgb4");
        hw("nic0", "e1000e");
        fs::create_dir_all(ib.join("bare0")).unwrap();
        let root = SPath::new(t.as_os_str().as_encoded_bytes()).unwrap();
        let h = |n: &str| provider_hint_at(&root, n);
        assert_eq!(h("rxe0"), Some("rxe"));
        assert_eq!(h("siw0"), Some("siw"));
        assert_eq!(h("odd0"), None);
        assert_eq!(h("mlx5_0"), Some("mlx5"));
        assert_eq!(h("mlx5_1"), Some("mlx5"));
        assert_eq!(h("qib0"), Some("ipathverbs"));
        assert_eq!(h("cxgb4_0"), Some("cxgb4"));
        assert_eq!(h("nic0"), None);
        assert_eq!(h("bare0"), None);
        assert_eq!(h("missing"), None);
        fs::remove_dir_all(&t).unwrap();
    }
}
