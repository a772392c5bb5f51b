//! The rsocket wire protocol, version 1, as upstream's rsockets speak it
//! (docs/rsockets.md has the byte-level description).
//!
//! - Each side puts a 40-byte [`ConnData`] in the connection's private
//!   data: protocol version, flags, initial credits, where the peer may
//!   write its SGL updates, and the first half of the receive ring.
//! - Every message is an RDMA WRITE WITH IMMEDIATE whose 32-bit immediate
//!   (big-endian on the wire) carries an operation in bits 31–29 and data
//!   in bits 28–0 ([`imm`], [`Msg`]).
//! - Updates of the peer's target SGL (16 bytes) and iomap table (24
//!   bytes) are RDMA-written in the *receiver's* byte order.
//!
//! Everything here is pure and checked by host unit tests; nothing in a
//! received block is trusted beyond what its decoder checks.

/// The only protocol version.
pub(crate) const VERSION: u8 = 1;
/// The sender's host is big-endian.
pub(crate) const FLAG_NET: u8 = 1;
/// An iomap table follows the target SGL table.
pub(crate) const FLAG_IOMAP: u8 = 2;
/// Length of the connection data block.
pub(crate) const CONN_DATA_LEN: usize = 40;
/// Entries of a target SGL table.
pub(crate) const SGL_SIZE: usize = 2;
/// Size of one target SGL entry and one iomap entry.
pub(crate) const SGE_LEN: usize = 16;
pub(crate) const IOMAP_LEN: usize = 24;
/// Length of the IB connect header that precedes the connection data in an
/// AF_IB request.
pub(crate) const IB_HDR_LEN: usize = 36;

/// Operations of the immediate data.
pub(crate) const OP_DATA: u32 = 0;
/// Local only: an riowrite's plain RDMA WRITE (never sent as immediate).
pub(crate) const OP_WRITE: u32 = 2;
pub(crate) const OP_SGL: u32 = 4;
pub(crate) const OP_IOMAP_SGL: u32 = 6;
pub(crate) const OP_CTRL: u32 = 7;
/// Data of CTRL messages.
pub(crate) const CTRL_DISCONNECT: u32 = 0;
pub(crate) const CTRL_KEEPALIVE: u32 = 1;
pub(crate) const CTRL_SHUTDOWN: u32 = 2;

const DATA_MASK: u32 = 0x1fff_ffff;

/// The host-order value of an immediate (the work request carries it
/// big-endian).
pub fn imm(op: u32, data: u32) -> u32 {
    (op << 29) | (data & DATA_MASK)
}

/// A received immediate, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Msg {
    /// `len` bytes of data were written into the receive ring.
    Data(u32),
    /// The peer's new absolute credit limit (16 bits kept).
    Credits(u16),
    /// An iomap entry was written at this index.
    Iomap(u32),
    /// Peer shut down sending (the reading side sees EOF after the data).
    Shutdown,
    /// Peer disconnected.
    Disconnect,
    /// Anything else (reserved operations, unknown control data).
    Unknown(u32),
}

impl Msg {
    /// Decode the host-order immediate of a received message. Reserved
    /// operations 1, 3 and 5 (never sent by upstream) are not taken as
    /// data: a peer that sends them is not speaking version 1.
    pub fn decode(imm: u32) -> Msg {
        let data = imm & DATA_MASK;
        match imm >> 29 {
            OP_DATA => Msg::Data(data),
            OP_SGL => Msg::Credits(data as u16),
            OP_IOMAP_SGL => Msg::Iomap(data),
            OP_CTRL if data == CTRL_DISCONNECT => Msg::Disconnect,
            OP_CTRL if data == CTRL_SHUTDOWN => Msg::Shutdown,
            _ => Msg::Unknown(imm),
        }
    }
}

/// A region the peer may write into: address, rkey, length (the wire
/// order of `struct rs_sge`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sge {
    pub addr: u64,
    pub key: u32,
    pub length: u32,
}

impl Sge {
    /// The 16 bytes of a target SGL entry, in the byte order of the
    /// receiver (`swap`: the receiver's order is not ours).
    pub fn to_peer(&self, swap: bool) -> [u8; SGE_LEN] {
        let mut b = [0u8; SGE_LEN];
        if swap {
            b[0..8].copy_from_slice(&self.addr.swap_bytes().to_ne_bytes());
            b[8..12].copy_from_slice(&self.key.swap_bytes().to_ne_bytes());
            b[12..16].copy_from_slice(&self.length.swap_bytes().to_ne_bytes());
        } else {
            b[0..8].copy_from_slice(&self.addr.to_ne_bytes());
            b[8..12].copy_from_slice(&self.key.to_ne_bytes());
            b[12..16].copy_from_slice(&self.length.to_ne_bytes());
        }
        b
    }

    /// A target SGL entry as the peer wrote it into our memory (our order).
    pub fn from_local(b: &[u8; SGE_LEN]) -> Sge {
        Sge {
            addr: u64::from_ne_bytes(b[0..8].try_into().expect("8 bytes")),
            key: u32::from_ne_bytes(b[8..12].try_into().expect("4 bytes")),
            length: u32::from_ne_bytes(b[12..16].try_into().expect("4 bytes")),
        }
    }
}

/// An iomap entry: remote writes at `offset` go to `sge`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Iomap {
    pub offset: u64,
    pub sge: Sge,
}

impl Iomap {
    /// The 24 bytes of an iomap entry, in the receiver's byte order.
    pub fn to_peer(&self, swap: bool) -> [u8; IOMAP_LEN] {
        let mut b = [0u8; IOMAP_LEN];
        let off = if swap { self.offset.swap_bytes() } else { self.offset };
        b[0..8].copy_from_slice(&off.to_ne_bytes());
        b[8..24].copy_from_slice(&self.sge.to_peer(swap));
        b
    }

    /// An entry as the peer wrote it into our table (our order).
    pub fn from_local(b: &[u8; IOMAP_LEN]) -> Iomap {
        Iomap {
            offset: u64::from_ne_bytes(b[0..8].try_into().expect("8 bytes")),
            sge: Sge::from_local(b[8..24].try_into().expect("16 bytes")),
        }
    }
}

/// Whether this host is big-endian (the NET flag we send).
pub(crate) const fn host_is_net() -> bool {
    cfg!(target_endian = "big")
}

/// The connection data each side sends (`struct rs_conn_data`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnData {
    pub version: u8,
    pub flags: u8,
    /// Initial credits: the sender's receive queue size.
    pub credits: u16,
    /// The sender's iomap table length, scale-encoded.
    pub iomap_size: u8,
    /// The sender's target SGL table: address, rkey, entry count.
    pub target_sgl: Sge,
    /// The first half of the sender's receive ring.
    pub data_buf: Sge,
}

impl ConnData {
    pub fn encode(&self) -> [u8; CONN_DATA_LEN] {
        let mut b = [0u8; CONN_DATA_LEN];
        b[0] = self.version;
        b[1] = self.flags;
        b[2..4].copy_from_slice(&self.credits.to_be_bytes());
        b[7] = self.iomap_size;
        put_sge_be(&mut b[8..24], &self.target_sgl);
        put_sge_be(&mut b[24..40], &self.data_buf);
        b
    }

    /// Decode a received block; None if it is too short. Reserved bytes
    /// and unknown flags are ignored (as upstream).
    pub fn decode(b: &[u8]) -> Option<ConnData> {
        let b: &[u8; CONN_DATA_LEN] = b.get(..CONN_DATA_LEN)?.try_into().ok()?;
        Some(ConnData {
            version: b[0],
            flags: b[1],
            credits: u16::from_be_bytes([b[2], b[3]]),
            iomap_size: b[7],
            target_sgl: get_sge_be(&b[8..24]),
            data_buf: get_sge_be(&b[24..40]),
        })
    }

    /// Whether structures written into this sender's memory must be
    /// byte-swapped from our order.
    pub fn needs_swap(&self) -> bool {
        (self.flags & FLAG_NET != 0) != host_is_net()
    }
}

fn put_sge_be(b: &mut [u8], s: &Sge) {
    b[0..8].copy_from_slice(&s.addr.to_be_bytes());
    b[8..12].copy_from_slice(&s.key.to_be_bytes());
    b[12..16].copy_from_slice(&s.length.to_be_bytes());
}

fn get_sge_be(b: &[u8]) -> Sge {
    Sge {
        addr: u64::from_be_bytes(b[0..8].try_into().expect("8 bytes")),
        key: u32::from_be_bytes(b[8..12].try_into().expect("4 bytes")),
        length: u32::from_be_bytes(b[12..16].try_into().expect("4 bytes")),
    }
}

/// The 8-bit scale encoding of iomap table sizes: values up to 128 as they
/// are, larger ones as `0x80 | (value >> 8)`.
pub fn value_to_scale(v: u32) -> u8 {
    if v <= 128 {
        v as u8
    } else {
        0x80 | ((v >> 8).min(0x7f) as u8)
    }
}

pub fn scale_to_value(b: u8) -> u32 {
    if b <= 128 {
        b as u32
    } else {
        ((b & 0x7f) as u32) << 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn immediates_match_upstream_examples() {
        // Values from the protocol description: 2048 data bytes, the first
        // credit update of a 384-entry queue, DISCONNECT, SHUTDOWN, iomap 0.
        assert_eq!(imm(OP_DATA, 2048), 0x0000_0800);
        assert_eq!(imm(OP_SGL, 384), 0x8000_0180);
        assert_eq!(imm(OP_CTRL, CTRL_DISCONNECT), 0xE000_0000);
        assert_eq!(imm(OP_CTRL, CTRL_SHUTDOWN), 0xE000_0002);
        assert_eq!(imm(OP_IOMAP_SGL, 0), 0xC000_0000);
        assert_eq!(Msg::decode(0x0000_0800), Msg::Data(2048));
        assert_eq!(Msg::decode(0x8001_0180), Msg::Credits(0x0180), "credits keep 16 bits");
        assert_eq!(Msg::decode(0xE000_0000), Msg::Disconnect);
        assert_eq!(Msg::decode(0xE000_0002), Msg::Shutdown);
        assert_eq!(Msg::decode(0xC000_0003), Msg::Iomap(3));
        assert_eq!(Msg::decode(0x2000_0005), Msg::Unknown(0x2000_0005), "reserved op 1");
        assert_eq!(Msg::decode(0xE000_0001), Msg::Unknown(0xE000_0001), "keepalive is never an immediate");
    }

    #[test]
    fn conn_data_layout() {
        // The walk-through's first bytes: version 1, flags 0x02 (iomap, LE
        // sender), credits 384 big-endian; SGL count 2; half ring 64 KiB.
        let c = ConnData {
            version: VERSION,
            flags: FLAG_IOMAP,
            credits: 384,
            iomap_size: 0,
            target_sgl: Sge { addr: 0x1122_3344_5566_7788, key: 0xaabb_ccdd, length: 2 },
            data_buf: Sge { addr: 0x7f00_0000_1000, key: 0x1234, length: 65536 },
        };
        let b = c.encode();
        assert_eq!(&b[0..8], &[1, 2, 1, 0x80, 0, 0, 0, 0]);
        assert_eq!(&b[8..16], &[0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]);
        assert_eq!(&b[16..24], &[0xaa, 0xbb, 0xcc, 0xdd, 0, 0, 0, 2]);
        assert_eq!(&b[36..40], &[0, 1, 0, 0]);
        assert_eq!(ConnData::decode(&b), Some(c));
        assert_eq!(ConnData::decode(&b[..39]), None);
        assert!(!c.needs_swap());
        assert!(ConnData { flags: FLAG_NET, ..c }.needs_swap());
    }

    #[test]
    fn remote_structures_in_receiver_order() {
        let s = Sge { addr: 0x0102_0304_0506_0708, key: 0x0a0b_0c0d, length: 0x10000 };
        let b = s.to_peer(false);
        assert_eq!(Sge::from_local(&b), s);
        let sw = s.to_peer(true);
        assert_eq!(&sw[0..8], &0x0102_0304_0506_0708u64.to_be_bytes());
        let m = Iomap { offset: 4096, sge: s };
        assert_eq!(Iomap::from_local(&m.to_peer(false)), m);
        assert_eq!(&m.to_peer(true)[0..8], &4096u64.to_be_bytes());
    }

    #[test]
    fn scale_encoding() {
        for v in [0, 1, 64, 128] {
            assert_eq!(scale_to_value(value_to_scale(v)), v);
        }
        // 129..=255 round down to 128 through the byte (upstream's rule).
        assert_eq!(scale_to_value(value_to_scale(200)), 128);
        assert_eq!(value_to_scale(4096), 0x90);
        assert_eq!(scale_to_value(0x90), 4096);
    }
}
