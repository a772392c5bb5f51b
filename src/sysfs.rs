//! What the library reads from sysfs, rooted where libibverbs roots it
//! (`$SYSFS_PATH` without trailing slashes when not set-uid, else `/sys`).

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Where character devices live.
pub const CDEV_DIR: &str = "/dev/infiniband";

/// The sysfs root, computed once on first use.
pub fn root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        // SAFETY: getuid/geteuid cannot fail.
        let trusted = unsafe { libc::getuid() == libc::geteuid() };
        match std::env::var_os("SYSFS_PATH").filter(|_| trusted) {
            Some(v) => {
                let mut b = v.into_vec();
                while b.last() == Some(&b'/') {
                    b.pop();
                }
                PathBuf::from(OsString::from_vec(b))
            }
            None => PathBuf::from("/sys"),
        }
    })
}

/// Read a small sysfs attribute, without its trailing newline.
pub fn read_attr(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).ok()?;
    let mut buf = [0u8; 256];
    let n = f.read(&mut buf).ok()?;
    let s = std::str::from_utf8(&buf[..n]).ok()?;
    Some(s.trim_end_matches('\n').to_string())
}

/// The ucma ABI version as sysfs states it, if it does (upstream then
/// assumes the newest ABI it knows, and fails later if that is wrong).
pub fn ucma_abi_version() -> Option<i64> {
    let r = root();
    ["class/misc/rdma_cm/abi_version", "class/infiniband_ucma/abi_version"]
        .iter()
        .find_map(|rel| read_attr(&r.join(rel)))
        .map(|v| parse_long_prefix(&v))
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SysfsDevice {
    /// `uverbsN`
    pub uverbs: String,
    /// e.g. `rxe0`
    pub ibdev: String,
}

/// The uverbs devices libibverbs would consider: a `class/infiniband_verbs`
/// entry with an `ibdev` attribute naming an existing `class/infiniband`
/// device, a `dev` attribute of the form MAJ:MIN, and an existing
/// `/dev/infiniband/uverbsN` node.
pub fn verbs_devices() -> Vec<SysfsDevice> {
    verbs_devices_at(root(), Path::new(CDEV_DIR))
}

pub fn verbs_devices_at(root: &Path, cdev_dir: &Path) -> Vec<SysfsDevice> {
    let class = root.join("class/infiniband_verbs");
    let Ok(dir) = std::fs::read_dir(&class) else { return Vec::new() };
    let mut out = Vec::new();
    for ent in dir.flatten() {
        let name = ent.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let d = class.join(&name);
        let Some(ibdev) = read_attr(&d.join("ibdev")).filter(|s| !s.is_empty()) else { continue };
        if !root.join("class/infiniband").join(&ibdev).exists() {
            continue;
        }
        let Some(dev) = read_attr(&d.join("dev")) else { continue };
        let mut it = dev.splitn(2, ':');
        let ok = matches!((it.next(), it.next()), (Some(a), Some(b))
            if !a.is_empty() && a.bytes().all(|c| c.is_ascii_digit())
            && b.bytes().take_while(u8::is_ascii_digit).count() > 0);
        if !ok || std::fs::metadata(cdev_dir.join(&name)).is_err() {
            continue;
        }
        out.push(SysfsDevice { uverbs: name, ibdev });
    }
    out.sort_by(|a, b| a.uverbs.cmp(&b.uverbs));
    out
}

/// One port of an RDMA device (`class/infiniband/DEV/ports/N`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortInfo {
    pub ibdev: String,
    pub port: u32,
    /// `InfiniBand`, `Ethernet`, ...
    pub link_layer: String,
    /// The numeric part of `state` (4 = ACTIVE).
    pub state: i64,
}

/// All ports of all devices that [`verbs_devices`] finds.
pub fn ports() -> Vec<PortInfo> {
    let mut out = Vec::new();
    for d in verbs_devices() {
        let pdir = root().join("class/infiniband").join(&d.ibdev).join("ports");
        let Ok(rd) = std::fs::read_dir(&pdir) else { continue };
        let mut nums: Vec<u32> = rd.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect();
        nums.sort_unstable();
        for n in nums {
            let p = pdir.join(n.to_string());
            out.push(PortInfo {
                ibdev: d.ibdev.clone(),
                port: n,
                link_layer: read_attr(&p.join("link_layer")).unwrap_or_default(),
                state: read_attr(&p.join("state")).map_or(0, |s| parse_long_prefix(&s)),
            });
        }
    }
    out
}

/// The libibverbs provider (the NAME of `libNAME-rdmavN.so`) an RDMA
/// device most likely needs, from sysfs alone. Software devices (rxe, siw)
/// carry a `parent` attribute naming their netdev and differ in node type
/// (1: CA for rxe, 4: RNIC for siw); a hardware device is known by the
/// kernel driver bound to its parent device. None when unsure. Only a hint:
/// see `device::preload_providers`.
pub fn provider_hint_at(root: &Path, ibdev: &str) -> Option<&'static str> {
    let d = root.join("class/infiniband").join(ibdev);
    if d.join("parent").exists() {
        return match read_attr(&d.join("node_type")).map(|t| parse_long_prefix(&t)) {
            Some(1) => Some("rxe"),
            Some(4) => Some("siw"),
            _ => None,
        };
    }
    let drv = std::fs::read_link(d.join("device/driver")).ok()?;
    let drv = drv.file_name()?.to_str()?;
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
    fn strtol_prefix() {
        assert_eq!(parse_long_prefix("4\n"), 4);
        assert_eq!(parse_long_prefix(" -3x"), -3);
        assert_eq!(parse_long_prefix("x"), 0);
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
        let found = verbs_devices_at(&t, &cdev);
        assert_eq!(found, vec![SysfsDevice { uverbs: "uverbs0".into(), ibdev: "rxe0".into() }]);
        assert!(verbs_devices_at(&t.join("nothing"), &cdev).is_empty());
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
        let h = |n: &str| provider_hint_at(&t, n);
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
