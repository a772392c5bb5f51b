//! Command numbers and payload layouts of the ucma write protocol
//! (`rdma_user_cm.h`, reference §3.3–3.4). Offsets are checked in tests.

pub(crate) const CREATE_ID: u32 = 0;
pub(crate) const DESTROY_ID: u32 = 1;
pub(crate) const BIND: u32 = 20;

/// The 8-byte header before every payload.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Header {
    pub cmd: u32,
    pub inlen: u16,
    pub out: u16,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct CmdBuf<P: Copy> {
    pub hdr: Header,
    pub payload: P,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CreateId {
    pub uid: u64,
    pub response: u64,
    pub ps: u16,
    pub qp_type: u8,
    pub reserved: [u8; 5],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct CreateIdResp {
    pub id: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DestroyId {
    pub response: u64,
    pub id: u32,
    pub reserved: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DestroyIdResp {
    pub events_reported: u32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct Bind {
    pub id: u32,
    pub addr_size: u16,
    pub reserved: u16,
    pub addr: [u8; 128],
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn payload_sizes_match_the_kernel() {
        assert_eq!(size_of::<Header>(), 8);
        assert_eq!(size_of::<CreateId>(), 24);
        assert_eq!(offset_of!(CreateId, ps), 16);
        assert_eq!(offset_of!(CreateId, qp_type), 18);
        assert_eq!(size_of::<DestroyId>(), 16);
        assert_eq!(size_of::<Bind>(), 136);
        assert_eq!(offset_of!(Bind, addr), 8);
        assert_eq!(size_of::<CmdBuf<CreateId>>(), 32);
    }
}
