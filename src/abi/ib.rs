//! `<infiniband/ib.h>`: the AF_IB socket address.

/// Kernel-style integer names, so the header says which fields are
/// big-endian (they come from `<linux/types.h>` in C).
#[allow(non_camel_case_types)]
pub type __be16 = u16;
#[allow(non_camel_case_types)]
pub type __be32 = u32;
#[allow(non_camel_case_types)]
pub type __be64 = u64;
#[allow(non_camel_case_types)]
pub type __u64 = u64;

/// `struct ib_addr`: a 16-byte GID seen as bytes, be16, be32 or be64 words.
/// (In C the union is the named member `ib_u`; the header text is written in
/// cbindgen-ib.toml because of the `sib_addr*` accessor macros.)
#[repr(C)]
#[derive(Clone, Copy)]
pub union ib_addr {
    pub uib_addr8: [u8; 16],
    pub uib_addr16: [u16; 8],
    pub uib_addr32: [u32; 4],
    pub uib_addr64: [u64; 2],
}

impl ib_addr {
    pub fn from_bytes(b: [u8; 16]) -> Self {
        ib_addr { uib_addr8: b }
    }
    pub fn bytes(&self) -> [u8; 16] {
        // SAFETY: every bit pattern is a valid [u8; 16].
        unsafe { self.uib_addr8 }
    }
}

/// `struct sockaddr_ib` (48 bytes). Multi-byte fields are big-endian except
/// `sib_scope_id`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct sockaddr_ib {
    pub sib_family: libc::c_ushort,
    pub sib_pkey: __be16,
    pub sib_flowinfo: __be32,
    pub sib_addr: ib_addr,
    pub sib_sid: __be64,
    pub sib_sid_mask: __be64,
    pub sib_scope_id: __u64,
}

impl Default for sockaddr_ib {
    fn default() -> Self {
        sockaddr_ib {
            sib_family: 0,
            sib_pkey: 0,
            sib_flowinfo: 0,
            sib_addr: ib_addr::from_bytes([0; 16]),
            sib_sid: 0,
            sib_sid_mask: 0,
            sib_scope_id: 0,
        }
    }
}
