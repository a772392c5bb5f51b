//! SA mode of `rdma_getaddrinfo` (`RAI_SA`, RDMACM 1.4 semantics,
//! rdma_getaddrinfo(3)): look up an IB service through the subnet
//! administrator on each active InfiniBand port.

use super::model::AddrInfo;
use crate::error::{Error, Result};
use std::ffi::CStr;

/// `IB_PORT_ACTIVE` as sysfs prints it (`4: ACTIVE`).
const PORT_ACTIVE: i64 = 4;

pub fn getaddrinfo_sa(service: Option<&CStr>) -> Result<Vec<AddrInfo>> {
    if service.is_none() {
        return Err(Error::Errno(libc::EINVAL));
    }
    // Upstream opens an event channel first: without the kernel's CM device
    // the call fails with that open's errno.
    drop(crate::ucma::open()?);
    let ib_ports =
        crate::sysfs::ports()?.iter().filter(|p| p.link_layer == "InfiniBand" && p.state >= PORT_ACTIVE).count();
    if ib_ports == 0 {
        // No active InfiniBand port: no subnet administrator to ask.
        return Err(Error::Errno(libc::ENOENT));
    }
    // Service resolution on a real IB fabric needs the CM core's
    // RESOLVE_IB_SERVICE path, which this version does not have yet.
    Err(Error::Errno(libc::EOPNOTSUPP))
}
