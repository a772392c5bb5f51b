//! ibacm replies: an active query's result (addresses, port space, flags
//! from the input) resolved through a fake ibacm on a socket pair that
//! answers with the input's bytes (`acm::resolve_with`: the request, the
//! reply's length header, the reply's endpoints, the AF_IB entry), then the
//! result list made into the C list and freed.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rdmacm::abi::{sockaddr_ib, AF_IB, RAI_NUMERICHOST};
use rdmacm::addr::acm::{self, Conn};
use rdmacm::addr::getaddrinfo::to_c_list;
use rdmacm::addr::model::{AddrInfo, Hints};
use rdmacm::fuzzing::{ACM_HDR_LEN as HDR_LEN, ACM_MSG_LEN as MSG_LEN};
use rdmacm::sockaddr::RawAddr;
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::sync::Mutex;

fn addr(kind: u8, b: &[u8]) -> Option<RawAddr> {
    let mut raw = [0u8; 32];
    raw[..b.len().min(32)].copy_from_slice(&b[..b.len().min(32)]);
    match kind % 4 {
        0 => None,
        1 => {
            // SAFETY: zeroed sockaddr_in is valid.
            let mut s: libc::sockaddr_in = unsafe { std::mem::zeroed() };
            s.sin_family = libc::AF_INET as u16;
            s.sin_port = u16::from_ne_bytes([raw[0], raw[1]]);
            s.sin_addr.s_addr = u32::from_ne_bytes([raw[2], raw[3], raw[4], raw[5]]);
            Some(RawAddr::from_in(&s))
        }
        2 => {
            // SAFETY: as above.
            let mut s: libc::sockaddr_in6 = unsafe { std::mem::zeroed() };
            s.sin6_family = libc::AF_INET6 as u16;
            s.sin6_port = u16::from_ne_bytes([raw[0], raw[1]]);
            s.sin6_addr.s6_addr.copy_from_slice(&raw[2..18]);
            Some(RawAddr::from_in6(&s))
        }
        _ => {
            let mut gid = [0u8; 16];
            gid.copy_from_slice(&raw[2..18]);
            let s = sockaddr_ib {
                sib_family: AF_IB as u16,
                sib_addr: rdmacm::abi::ib_addr::from_bytes(gid),
                sib_sid: u64::from_ne_bytes(raw[18..26].try_into().unwrap()),
                ..Default::default()
            };
            Some(RawAddr::from_ib(&s))
        }
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 80 {
        return;
    }
    let (head, reply) = data.split_at(80);
    let sel = head[0];
    let ai = AddrInfo {
        flags: 0,
        family: [libc::AF_INET, libc::AF_INET6, AF_IB][head[1] as usize % 3],
        qp_type: 2,
        port_space: [0x0106, 0x0111, 0x013F, 0][head[2] as usize % 4],
        src: addr(head[3], &head[8..40]),
        dst: addr(head[4], &head[40..72]),
        ..Default::default()
    };
    let flags = if sel & 1 != 0 { RAI_NUMERICHOST } else { 0 } | if sel & 2 != 0 { 0x0100_0000 } else { 0 };
    let h = Hints { route_len: (head[5] % 2) as usize * 64, ..Hints::plain(flags, 0, 0, 0) };
    // The request the library would send.
    let req = acm::build_request(&ai, &h);
    assert!(req.len() >= HDR_LEN && req.len() <= MSG_LEN);
    assert_eq!(u16::from_ne_bytes([req[6], req[7]]) as usize, req.len());
    // The fake ibacm's answer: the input's bytes, with a correct length
    // header when the selector asks (so that the endpoints get parsed).
    let mut r = reply.to_vec();
    if sel & 4 != 0 && r.len() >= HDR_LEN {
        r.truncate(MSG_LEN);
        let n = r.len() as u16;
        r[6..8].copy_from_slice(&n.to_ne_bytes());
        r[2] = 0;
    }
    let (ours, mut theirs) = UnixStream::pair().expect("socketpair");
    theirs.write_all(&r).expect("reply fits the socket buffer");
    // EOF after the reply (the request we send still arrives).
    theirs.shutdown(std::net::Shutdown::Write).expect("shutdown");
    let conn = Mutex::new(Conn::Unix(ours));
    let Ok(list) = acm::resolve_with(Some(&conn), ai, &h, || sel & 8 != 0) else { return };
    assert!(!list.is_empty() && list.len() <= 2);
    for a in &list {
        assert!(a.route.len() <= 8, "at most one route per endpoint of a reply");
    }
    if list.len() == 2 {
        assert_eq!(list[0].family, AF_IB, "the AF_IB entry comes first");
        assert!(list[0].connect.is_some() || list[1].family == AF_IB);
    }
    if let Ok(c) = to_c_list(&list) {
        drop(c); // freed with rdma_freeaddrinfo's code
    }
    drop(theirs);
});
