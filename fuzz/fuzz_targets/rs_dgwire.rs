//! Datagram rsocket headers: the UDP resolution header (from an IPv4 or an
//! IPv6 sender), the UD data header of every message, socket addresses.
//! A decoded header re-encodes to the bytes it was read from (over its
//! length, reserved bytes aside), and never claims more than it got.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rdmacm::rs::dgwire::{DsHeader, SockAddr, UdpHeader};

fuzz_target!(|data: &[u8]| {
    for v6 in [false, true] {
        if let Some((h, len)) = UdpHeader::decode(data, v6) {
            assert!(len <= data.len() && len == h.len() && h.v6 == v6);
            assert!(h.qpn >= 2 && h.qpn <= 0x00ff_ffff);
            let e = h.encode();
            assert_eq!(&e[..4], &data[..4]);
            assert_eq!(&e[4..7], &data[4..7]);
            assert_eq!(&e[9..len], &data[9..len]);
            assert_eq!(UdpHeader::decode(&e[..len], v6), Some((h, len)));
        }
    }
    if let Some((h, len)) = DsHeader::decode(data) {
        assert!(len <= data.len());
        let (e, elen) = h.encode();
        assert_eq!(elen, len);
        assert_eq!(&e[..len], &data[..len], "every byte of the header is read");
        assert_eq!(DsHeader::decode(&e[..elen]), Some((h, len)));
        let _ = (h.src.port(), h.src.is_any_or_loopback(), h.src.ds_hdr_len(), h.src.key());
    }
    if let Some(a) = SockAddr::from_bytes(data) {
        let (b, n) = a.to_bytes();
        assert_eq!(SockAddr::from_bytes(&b[..n]), Some(a));
        assert!(n <= data.len());
    }
});
