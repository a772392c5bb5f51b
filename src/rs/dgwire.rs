//! The datagram rsocket wire format, as upstream's datagram rsockets speak
//! it (docs/rsockets.md, "Datagram sockets", has the byte-level
//! description):
//!
//! - [`UdpHeader`]: 16 (IPv4) or 28 (IPv6) bytes in front of what goes over
//!   the UDP socket while a peer's address handle is not known yet: a tag,
//!   the sender's IP version, an operation (DATA carries the application's
//!   payload behind the header, CTRL carries nothing: it answers a DATA
//!   with the answerer's QP number), the header length and the sender's QP
//!   number.
//! - [`DsHeader`]: 8 (IPv4) or 24 (IPv6) bytes in front of the payload of
//!   every UD message: the sender's IP version, the header length and the
//!   sender's UDP port and address (what `rrecvfrom` reports).
//! - [`SockAddr`]: the IPv4/IPv6 socket addresses both carry.
//!
//! Everything a peer sends is decoded here and checked before use: a
//! header that is short, has the wrong tag, version or length, or names an
//! impossible QP is refused (`None`), never trusted. Pure, host-tested.

/// The tag that starts a UDP header (big-endian on the wire).
pub(crate) const UDP_TAG: u32 = 0x5555_5555;
pub(crate) const UDP_HDR_V4: usize = 16;
pub(crate) const UDP_HDR_V6: usize = 28;
/// Operations of a UDP header.
pub(crate) const UDP_OP_DATA: u8 = 0;
pub(crate) const UDP_OP_CTRL: u8 = 7;
/// UD data header lengths.
pub(crate) const DS_HDR_V4: usize = 8;
pub(crate) const DS_HDR_V6: usize = 24;
/// One message slot (send and receive): header plus payload.
pub(crate) const SLOT: usize = 2048;
/// The bytes a UD receive starts with (the GRH, or the IP header on RoCE).
pub(crate) const GRH_LEN: usize = 40;
/// The Q_Key of the connection manager's UDP port space (every datagram
/// rsocket QP has it; sends name it).
pub(crate) const QKEY: u32 = 0x0123_4567;
/// The largest UDP datagram the service reads: the longest header plus a
/// full slot (anything longer is cut and dropped as too long).
pub(crate) const UDP_MAX: usize = UDP_HDR_V6 + SLOT;

/// An IPv4 or IPv6 socket address, as the bytes of a `sockaddr_in` /
/// `sockaddr_in6` hold it (port and addresses in network order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct SockAddr {
    pub v6: bool,
    pub port: [u8; 2],
    /// IPv4: the first four bytes.
    pub addr: [u8; 16],
    pub flowinfo: [u8; 4],
    pub scope: [u8; 4],
}

/// What identifies a destination: family, port, address (and the scope of
/// an IPv6 link-local address); not the flow label, not padding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AddrKey {
    v6: bool,
    port: [u8; 2],
    addr: [u8; 16],
    scope: [u8; 4],
}

impl SockAddr {
    /// Decode a `sockaddr_in` (at least 16 bytes) or `sockaddr_in6` (at
    /// least 28); None for anything else.
    pub fn from_bytes(b: &[u8]) -> Option<SockAddr> {
        let fam = u16::from_ne_bytes([*b.first()?, *b.get(1)?]) as i32;
        let mut a = SockAddr::default();
        match fam {
            libc::AF_INET if b.len() >= 16 => {
                a.port = [b[2], b[3]];
                a.addr[..4].copy_from_slice(&b[4..8]);
            }
            libc::AF_INET6 if b.len() >= 28 => {
                a.v6 = true;
                a.port = [b[2], b[3]];
                a.flowinfo.copy_from_slice(&b[4..8]);
                a.addr.copy_from_slice(&b[8..24]);
                a.scope.copy_from_slice(&b[24..28]);
            }
            _ => return None,
        }
        Some(a)
    }

    /// The `sockaddr_in` (16 bytes) or `sockaddr_in6` (28 bytes).
    pub fn to_bytes(&self) -> ([u8; 28], usize) {
        let mut b = [0u8; 28];
        if self.v6 {
            b[0..2].copy_from_slice(&(libc::AF_INET6 as u16).to_ne_bytes());
            b[2..4].copy_from_slice(&self.port);
            b[4..8].copy_from_slice(&self.flowinfo);
            b[8..24].copy_from_slice(&self.addr);
            b[24..28].copy_from_slice(&self.scope);
            (b, 28)
        } else {
            b[0..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
            b[2..4].copy_from_slice(&self.port);
            b[4..8].copy_from_slice(&self.addr[..4]);
            (b, 16)
        }
    }

    pub fn key(&self) -> AddrKey {
        AddrKey { v6: self.v6, port: self.port, addr: self.addr, scope: if self.v6 { self.scope } else { [0; 4] } }
    }

    /// The host-order port.
    pub fn port(&self) -> u16 {
        u16::from_be_bytes(self.port)
    }

    /// The wildcard or loopback address (upstream's test for "ask the
    /// routing table which local address reaches the destination").
    pub fn is_any_or_loopback(&self) -> bool {
        if self.v6 {
            let mut lo = [0u8; 16];
            lo[15] = 1;
            self.addr == [0; 16] || self.addr == lo
        } else {
            self.addr[..4] == [0; 4] || self.addr[..4] == [127, 0, 0, 1]
        }
    }

    /// The length of the UD data header a QP with this local address puts
    /// in front of its payloads.
    pub fn ds_hdr_len(&self) -> usize {
        if self.v6 {
            DS_HDR_V6
        } else {
            DS_HDR_V4
        }
    }
}

/// A UDP resolution header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdpHeader {
    pub v6: bool,
    pub op: u8,
    /// The sender's QP number (24 bits).
    pub qpn: u32,
    /// The sender QP's address (IPv4: first four bytes). Receivers do not
    /// use it.
    pub addr: [u8; 16],
}

impl UdpHeader {
    pub fn len(&self) -> usize {
        if self.v6 {
            UDP_HDR_V6
        } else {
            UDP_HDR_V4
        }
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    /// The header's bytes (the first `len()` of them).
    pub fn encode(&self) -> [u8; UDP_HDR_V6] {
        let mut b = [0u8; UDP_HDR_V6];
        b[0..4].copy_from_slice(&UDP_TAG.to_be_bytes());
        b[4] = if self.v6 { 6 } else { 4 };
        b[5] = self.op;
        b[6] = self.len() as u8;
        b[7] = 0;
        b[8..12].copy_from_slice(&(self.qpn & 0x00ff_ffff).to_be_bytes());
        if self.v6 {
            b[12..28].copy_from_slice(&self.addr);
        } else {
            b[12..16].copy_from_slice(&self.addr[..4]);
        }
        b
    }

    /// Decode the start of a UDP datagram that came from an address of the
    /// family `from_v6`: the header and where the payload starts. Refused:
    /// shorter than its header, wrong tag, a version that is not the
    /// family's or a length that is not the version's, an operation other
    /// than DATA and CTRL, QP numbers 0 and 1 (special QPs).
    pub fn decode(b: &[u8], from_v6: bool) -> Option<(UdpHeader, usize)> {
        if b.len() < UDP_HDR_V4 || u32::from_be_bytes(b[0..4].try_into().ok()?) != UDP_TAG {
            return None;
        }
        let (v6, len) = match (b[4], b[6] as usize) {
            (4, UDP_HDR_V4) if !from_v6 => (false, UDP_HDR_V4),
            (6, UDP_HDR_V6) if from_v6 => (true, UDP_HDR_V6),
            _ => return None,
        };
        if b.len() < len || !matches!(b[5], UDP_OP_DATA | UDP_OP_CTRL) {
            return None;
        }
        let qpn = u32::from_be_bytes(b[8..12].try_into().ok()?) & 0x00ff_ffff;
        if qpn < 2 {
            return None;
        }
        let mut addr = [0u8; 16];
        addr[..len - 12].copy_from_slice(&b[12..len]);
        Some((UdpHeader { v6, op: b[5], qpn, addr }, len))
    }
}

/// A UD data header: who sent the message (its UDP address).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DsHeader {
    pub src: SockAddr,
}

impl DsHeader {
    /// The header's bytes and length.
    pub fn encode(&self) -> ([u8; DS_HDR_V6], usize) {
        let mut b = [0u8; DS_HDR_V6];
        let s = &self.src;
        b[2..4].copy_from_slice(&s.port);
        if s.v6 {
            b[0] = 6;
            b[1] = DS_HDR_V6 as u8;
            b[4..8].copy_from_slice(&s.flowinfo);
            b[8..24].copy_from_slice(&s.addr);
            (b, DS_HDR_V6)
        } else {
            b[0] = 4;
            b[1] = DS_HDR_V4 as u8;
            b[4..8].copy_from_slice(&s.addr[..4]);
            (b, DS_HDR_V4)
        }
    }

    /// Decode the start of a received message (the bytes after the GRH):
    /// the header and where the payload starts. Refused: shorter than the
    /// header it announces, or a (version, length) pair other than (4, 8)
    /// and (6, 24).
    pub fn decode(b: &[u8]) -> Option<(DsHeader, usize)> {
        if b.len() < DS_HDR_V4 {
            return None;
        }
        let mut src = SockAddr { port: [b[2], b[3]], ..Default::default() };
        match (b[0], b[1] as usize) {
            (4, DS_HDR_V4) => {
                src.addr[..4].copy_from_slice(&b[4..8]);
                Some((DsHeader { src }, DS_HDR_V4))
            }
            (6, DS_HDR_V6) if b.len() >= DS_HDR_V6 => {
                src.v6 = true;
                src.flowinfo.copy_from_slice(&b[4..8]);
                src.addr.copy_from_slice(&b[8..24]);
                Some((DsHeader { src }, DS_HDR_V6))
            }
            _ => None,
        }
    }
}

/// An IB MTU code (`enum ibv_mtu`, 1–5) in bytes; None for other codes.
pub fn mtu_bytes(code: u32) -> Option<usize> {
    (1..=5).contains(&code).then(|| 128usize << code)
}

/// The largest payload a QP whose header is `hdr_len` bytes can carry over
/// a path of `mtu` bytes: one message must fit a slot and one packet.
pub fn max_payload(hdr_len: usize, mtu: usize) -> usize {
    SLOT.min(mtu).saturating_sub(hdr_len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(ip: [u8; 4], port: u16) -> SockAddr {
        let mut a = SockAddr { port: port.to_be_bytes(), ..Default::default() };
        a.addr[..4].copy_from_slice(&ip);
        a
    }

    fn v6(ip: [u8; 16], port: u16) -> SockAddr {
        SockAddr { v6: true, port: port.to_be_bytes(), addr: ip, flowinfo: [0, 0, 0x12, 0x34], scope: [0; 4] }
    }

    #[test]
    fn udp_header_layout() {
        // The bytes an IPv4 sender puts in front of its first datagram:
        // tag, version 4, DATA, length 16, reserved, QPN 0x000123 (24
        // bits, big-endian), its address 192.0.2.1.
        let h = UdpHeader { v6: false, op: UDP_OP_DATA, qpn: 0x123, addr: v4([192, 0, 2, 1], 0).addr };
        let b = h.encode();
        assert_eq!(&b[..16], &[0x55, 0x55, 0x55, 0x55, 4, 0, 16, 0, 0, 0, 0x01, 0x23, 192, 0, 2, 1]);
        assert_eq!(UdpHeader::decode(&b[..16], false), Some((h, 16)));
        // The reply: CTRL, no payload.
        let c = UdpHeader { op: UDP_OP_CTRL, ..h };
        assert_eq!(c.encode()[5], 7);
        assert_eq!(UdpHeader::decode(&c.encode()[..16], false), Some((c, 16)));
        // IPv6: 28 bytes, the whole address.
        let a6 = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        let h6 = UdpHeader { v6: true, op: UDP_OP_DATA, qpn: 0xab_cdef, addr: a6 };
        let b6 = h6.encode();
        assert_eq!(&b6[4..12], &[6, 0, 28, 0, 0, 0xab, 0xcd, 0xef]);
        assert_eq!(&b6[12..28], &a6);
        // A payload behind the header starts at its length.
        let mut d = b6.to_vec();
        d.extend_from_slice(b"hello");
        assert_eq!(UdpHeader::decode(&d, true), Some((h6, 28)));
        // The top byte of the QPN word is reserved: masked on both sides.
        let big = UdpHeader { qpn: 0xff00_0456, ..h };
        assert_eq!(&big.encode()[8..12], &[0, 0, 0x04, 0x56]);
        let mut r = h.encode();
        r[8] = 0xee;
        assert_eq!(UdpHeader::decode(&r[..16], false).map(|(h, _)| h.qpn), Some(0x123));
    }

    #[test]
    fn udp_header_refuses_garbage() {
        let good = UdpHeader { v6: false, op: UDP_OP_DATA, qpn: 77, addr: [0; 16] }.encode();
        assert!(UdpHeader::decode(&good[..16], false).is_some());
        // Every prefix shorter than the header.
        for n in 0..16 {
            assert_eq!(UdpHeader::decode(&good[..n], false), None, "{n} bytes");
        }
        // Tag, version, length, family mismatch, unknown op, special QPs.
        let bad = |i: usize, v: u8| {
            let mut b = good;
            b[i] = v;
            UdpHeader::decode(&b[..16], false)
        };
        assert_eq!(bad(0, 0x54), None);
        assert_eq!(bad(4, 6), None);
        assert_eq!(bad(4, 5), None);
        assert_eq!(bad(6, 28), None);
        assert_eq!(bad(6, 15), None);
        assert_eq!(bad(5, 1), None);
        assert_eq!(bad(5, 0xff), None);
        assert_eq!(bad(11, 0), None, "QPN 0");
        assert_eq!(bad(11, 1), None, "QPN 1");
        assert_eq!(UdpHeader::decode(&good[..16], true), None, "IPv4 header from an IPv6 address");
        // An IPv6 header that claims 28 bytes but the datagram is shorter.
        let g6 = UdpHeader { v6: true, op: UDP_OP_CTRL, qpn: 77, addr: [1; 16] }.encode();
        for n in 0..28 {
            assert_eq!(UdpHeader::decode(&g6[..n], true), None, "{n} bytes of an IPv6 header");
        }
        assert_eq!(UdpHeader::decode(&g6, false), None);
        // Random bytes never decode to something inconsistent.
        let mut x: u32 = 0x1234_5678;
        for _ in 0..20000 {
            let mut b = [0u8; 40];
            for v in b.iter_mut() {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                *v = x as u8;
            }
            if x & 1 == 0 {
                b[..4].copy_from_slice(&UDP_TAG.to_be_bytes());
            }
            let n = (x >> 8) as usize % 41;
            for fam6 in [false, true] {
                if let Some((h, len)) = UdpHeader::decode(&b[..n], fam6) {
                    assert!(len <= n && len == h.len() && h.v6 == fam6 && h.qpn >= 2 && h.qpn < 1 << 24);
                }
            }
        }
    }

    #[test]
    fn ds_header_layout() {
        // IPv4: version 4, length 8, port 7174 big-endian, 192.0.2.1.
        let h = DsHeader { src: v4([192, 0, 2, 1], 7174) };
        let (b, n) = h.encode();
        assert_eq!(&b[..n], &[4, 8, 0x1c, 0x06, 192, 0, 2, 1]);
        assert_eq!(DsHeader::decode(&b[..n]), Some((h, 8)));
        // IPv6: version 6, length 24, port, flow info, address.
        let a6 = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        let h6 = DsHeader { src: v6(a6, 7174) };
        let (b6, n6) = h6.encode();
        assert_eq!(n6, 24);
        assert_eq!(&b6[..8], &[6, 24, 0x1c, 0x06, 0, 0, 0x12, 0x34]);
        assert_eq!(&b6[8..24], &a6);
        assert_eq!(DsHeader::decode(&b6), Some((h6, 24)));
    }

    #[test]
    fn ds_header_refuses_garbage() {
        let (b, _) = DsHeader { src: v4([10, 0, 0, 1], 1) }.encode();
        for n in 0..8 {
            assert_eq!(DsHeader::decode(&b[..n]), None);
        }
        let mut x = b;
        x[1] = 24;
        assert_eq!(DsHeader::decode(&x[..24]), None, "version 4 with the IPv6 length");
        x = b;
        x[0] = 6;
        assert_eq!(DsHeader::decode(&x[..24]), None, "version 6 with the IPv4 length");
        // An IPv6 header in a message too short to hold it: upstream takes
        // the message length minus 24 (negative); refused here.
        let (b6, _) = DsHeader { src: v6([1; 16], 9) }.encode();
        for n in 8..24 {
            assert_eq!(DsHeader::decode(&b6[..n]), None, "{n} bytes");
        }
        x = b;
        x[0] = 5;
        assert_eq!(DsHeader::decode(&x), None);
    }

    #[test]
    fn socket_addresses() {
        let a = v4([192, 0, 2, 1], 7174);
        let (b, n) = a.to_bytes();
        assert_eq!(n, 16);
        assert_eq!(&b[2..8], &[0x1c, 0x06, 192, 0, 2, 1]);
        assert_eq!(SockAddr::from_bytes(&b[..n]), Some(a));
        assert_eq!(SockAddr::from_bytes(&b[..15]), None);
        let s6 = v6([2; 16], 80);
        let (b6, n6) = s6.to_bytes();
        assert_eq!(n6, 28);
        assert_eq!(SockAddr::from_bytes(&b6[..n6]), Some(s6));
        assert_eq!(SockAddr::from_bytes(&b6[..27]), None);
        assert_eq!(SockAddr::from_bytes(&[]), None);
        // The flow label does not make another destination.
        assert_eq!(SockAddr { flowinfo: [9; 4], ..s6 }.key(), s6.key());
        assert_ne!(v4([192, 0, 2, 1], 1).key(), a.key());
        assert!(v4([0; 4], 5).is_any_or_loopback() && v4([127, 0, 0, 1], 5).is_any_or_loopback());
        assert!(!a.is_any_or_loopback());
        assert_eq!(a.ds_hdr_len(), 8);
        assert_eq!(s6.ds_hdr_len(), 24);
    }

    #[test]
    fn sizes() {
        assert_eq!(mtu_bytes(3), Some(1024));
        assert_eq!(mtu_bytes(5), Some(4096));
        assert_eq!(mtu_bytes(0), None);
        assert_eq!(mtu_bytes(6), None);
        // A 1024-byte path (soft-RoCE on a 1500-byte netdev) carries 1016
        // bytes behind an IPv4 header; a 4096-byte one is bound by the slot.
        assert_eq!(max_payload(DS_HDR_V4, 1024), 1016);
        assert_eq!(max_payload(DS_HDR_V4, 4096), 2040);
        assert_eq!(max_payload(DS_HDR_V6, 4096), 2024);
    }
}
