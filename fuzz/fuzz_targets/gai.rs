//! `rdma_getaddrinfo` through its C entry point: node, service and every
//! hints field (flags, family, QP type, port space, source and destination
//! addresses with any claimed length, route with any claimed length) from
//! the input; the result list is checked and freed with
//! `rdma_freeaddrinfo`.
//!
//! Hermetic: a node is always looked up with RAI_NUMERICHOST (a name would
//! go to DNS); services are numeric or looked up in /etc/services. Run it
//! in the fake sysfs of abi-tests/gai/fakesysfs.sh (one rxe device), as
//! `fuzz/run.sh` does, so that the calls get past the device check.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rdmacm::abi::{rdma_addrinfo, RAI_NUMERICHOST};
use rdmacm::capi::addrinfo::{rdma_freeaddrinfo, rdma_getaddrinfo};
use std::ffi::CString;

struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> u8 {
        let (b, rest) = self.0.split_first().map_or((0, &[][..]), |(b, r)| (*b, r));
        self.0 = rest;
        b
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.byte(), self.byte(), self.byte(), self.byte()])
    }
    /// A value that is mostly one of the interesting ones.
    fn pick(&mut self, common: &[i32]) -> i32 {
        let b = self.byte();
        match common.get(b as usize) {
            Some(&v) => v,
            None if b == 0xff => self.u32() as i32,
            None => common[b as usize % common.len()],
        }
    }
    fn bytes(&mut self, n: usize) -> &[u8] {
        let n = n.min(self.0.len());
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        a
    }
    /// A C string (up to the next NUL or the end).
    fn string(&mut self) -> CString {
        let n = self.0.iter().position(|&b| b == 0).unwrap_or(self.0.len()).min(64);
        let s = CString::new(self.bytes(n)).expect("no NUL");
        self.byte();
        s
    }
}

const FAMILIES: [i32; 5] = [0, libc::AF_INET, libc::AF_INET6, 27 /* AF_IB */, libc::AF_UNIX];
const QP_TYPES: [i32; 6] = [0, 2, 3, 4, 9, 10];
const PORT_SPACES: [i32; 5] = [0, 0x0002, 0x0106, 0x0111, 0x013F];

/// A sockaddr of the family the input picks, filled from it.
fn sockaddr(inp: &mut Input) -> [u8; 128] {
    let mut a = [0u8; 128];
    let fam = inp.pick(&FAMILIES) as u16;
    a[..2].copy_from_slice(&fam.to_ne_bytes());
    let n = inp.byte() as usize % 127;
    let b = inp.bytes(n);
    a[2..2 + b.len()].copy_from_slice(b);
    a
}

fuzz_target!(|data: &[u8]| {
    let mut inp = Input(data);
    let sel = inp.byte();
    let mut h: rdma_addrinfo = unsafe { std::mem::zeroed() };
    h.ai_flags = inp.u32() as i32 & 0x0100_003f;
    h.ai_family = inp.pick(&FAMILIES);
    h.ai_qp_type = inp.pick(&QP_TYPES);
    h.ai_port_space = inp.pick(&PORT_SPACES);
    let mut src = sockaddr(&mut inp);
    let mut dst = sockaddr(&mut inp);
    let mut route = [0u8; 72];
    let rb = inp.bytes(72);
    route[..rb.len()].copy_from_slice(rb);
    // Lengths: the address's own size, zero, or anything (beyond 128 the
    // library must refuse before reading).
    let len_of = |inp: &mut Input, a: &[u8; 128]| match inp.byte() % 4 {
        0 => 0,
        1 => match u16::from_ne_bytes([a[0], a[1]]) as i32 {
            libc::AF_INET => 16,
            libc::AF_INET6 => 28,
            27 => 48,
            _ => 16,
        },
        2 => inp.byte() as u32 % 129,
        _ => inp.u32(),
    };
    h.ai_src_len = len_of(&mut inp, &src);
    h.ai_dst_len = len_of(&mut inp, &dst);
    if h.ai_src_len as usize <= 128 {
        h.ai_src_addr = src.as_mut_ptr() as *mut libc::sockaddr;
    }
    if h.ai_dst_len as usize <= 128 {
        h.ai_dst_addr = dst.as_mut_ptr() as *mut libc::sockaddr;
    }
    h.ai_route_len = match inp.byte() % 4 {
        0 => 0,
        1 => 64,
        2 => 72,
        _ => inp.u32() as usize,
    };
    if h.ai_route_len <= 72 {
        h.ai_route = route.as_mut_ptr() as *mut libc::c_void;
    }
    let node = (sel & 1 != 0).then(|| inp.string());
    let service = (sel & 2 != 0).then(|| inp.string());
    let hints = sel & 4 != 0 || node.is_some();
    if node.is_some() {
        h.ai_flags |= RAI_NUMERICHOST;
    }
    let mut res: *mut rdma_addrinfo = std::ptr::null_mut();
    // SAFETY: C strings or NULL; the hints' buffers are as long as the
    // lengths say wherever a pointer is given; res is writable.
    let r = unsafe {
        rdma_getaddrinfo(
            node.as_ref().map_or(std::ptr::null(), |s| s.as_ptr()),
            service.as_ref().map_or(std::ptr::null(), |s| s.as_ptr()),
            if hints { &h } else { std::ptr::null() },
            &mut res,
        )
    };
    if r != 0 {
        assert!(res.is_null(), "a failed call left a result");
        return;
    }
    assert!(!res.is_null(), "success without a result");
    let mut p = res;
    let mut n = 0;
    while !p.is_null() {
        n += 1;
        assert!(n <= 16, "result list too long");
        // SAFETY: a node of the list the library returned.
        let a = unsafe { &*p };
        for (addr, len) in [(a.ai_src_addr, a.ai_src_len), (a.ai_dst_addr, a.ai_dst_len)] {
            assert_eq!(addr.is_null(), len == 0, "address and length disagree");
            if !addr.is_null() {
                assert!(len as usize <= 128);
                // SAFETY: len bytes of the library's block.
                let b = unsafe { std::slice::from_raw_parts(addr as *const u8, len as usize) };
                std::hint::black_box(b.iter().map(|&x| x as u32).sum::<u32>());
            }
        }
        assert_eq!(a.ai_route.is_null(), a.ai_route_len == 0);
        assert_eq!(a.ai_route_len % 72, 0, "route is whole ibv_path_data records");
        assert_eq!(a.ai_connect.is_null(), a.ai_connect_len == 0);
        for s in [a.ai_src_canonname, a.ai_dst_canonname] {
            if !s.is_null() {
                // SAFETY: a C string of the library.
                std::hint::black_box(unsafe { std::ffi::CStr::from_ptr(s) }.to_bytes().len());
            }
        }
        p = a.ai_next;
    }
    // SAFETY: the list the library returned, freed once.
    unsafe { rdma_freeaddrinfo(res) };
});
