//! The rsocket wire's codecs: a peer's connection data (the private data
//! of a request or a reply), every immediate, target SGL and iomap entries
//! as a peer writes them into our memory (either byte order), and the
//! iomap size encoding. Decoding never fails on bytes that are long
//! enough, and what we encode decodes back to itself.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rdmacm::fuzzing::{RS_CONN_DATA_LEN, RS_IOMAP_LEN, RS_SGE_LEN};
use rdmacm::rs::wire::{self, ConnData, Iomap, Msg, Sge};

fuzz_target!(|data: &[u8]| {
    // Connection data, maybe behind the 36-byte IB connect header of an
    // AF_IB request (the engine skips it first).
    for off in [0, 36] {
        let d = ConnData::decode(data.get(off..).unwrap_or(&[]));
        assert_eq!(d.is_some(), data.len() >= off + RS_CONN_DATA_LEN);
        if let Some(c) = d {
            assert_eq!(ConnData::decode(&c.encode()), Some(c), "encode/decode round trip");
            let _ = c.needs_swap();
            let v = wire::scale_to_value(c.iomap_size);
            assert_eq!(wire::value_to_scale(v), c.iomap_size, "every size byte names one size");
        }
    }
    // Immediates: what decodes as an operation re-encodes to the same word.
    for w in data.chunks_exact(4) {
        let imm = u32::from_be_bytes(w.try_into().unwrap());
        match Msg::decode(imm) {
            Msg::Data(n) => assert_eq!(wire::imm(0, n), imm),
            Msg::Credits(c) => assert_eq!(wire::imm(4, c as u32) & 0xe000_ffff, imm & 0xe000_ffff),
            Msg::Iomap(i) => assert_eq!(wire::imm(6, i), imm),
            Msg::Shutdown => assert_eq!(imm, wire::imm(7, 2)),
            Msg::Disconnect => assert_eq!(imm, wire::imm(7, 0)),
            Msg::Unknown(u) => assert_eq!(u, imm),
        }
    }
    // Target SGL and iomap entries as the peer wrote them.
    for e in data.chunks_exact(RS_IOMAP_LEN) {
        let sge = Sge::from_local(e[..RS_SGE_LEN].try_into().unwrap());
        assert_eq!(Sge::from_local(&sge.to_peer(false)), sge);
        let sw = Sge::from_local(&sge.to_peer(true));
        assert_eq!(
            (sw.addr, sw.key, sw.length),
            (sge.addr.swap_bytes(), sge.key.swap_bytes(), sge.length.swap_bytes())
        );
        let m = Iomap::from_local(e.try_into().unwrap());
        assert_eq!(Iomap::from_local(&m.to_peer(false)), m);
    }
});
