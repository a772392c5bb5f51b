//! Client of ibacm, the IB address and route cache (ibacm(1)).
//!
//! `rdma_getaddrinfo` asks ibacm for a route (and source address) for every
//! active query. The service is found once per process: a TCP port in
//! `/run/ibacm.port`, else the unix socket `/run/ibacm.sock`. No ibacm means
//! nothing happens. Unlike upstream, every exchange is bounded in time.

use super::model::{set_sid, AddrInfo, Hints};
use crate::abi::*;
use crate::cmem;
use crate::error::Result;
use crate::sockaddr::RawAddr;
use crate::sysfs::{read_attr, SPath};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

pub(crate) const PORT_FILE: &str = "/run/ibacm.port";
pub(crate) const SOCK_PATH: &str = "/run/ibacm.sock";
/// Upper bound for connecting to, writing to and reading from ibacm.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(5);

pub(crate) const ACM_VERSION: u8 = 1;
pub(crate) const ACM_OP_RESOLVE: u8 = 1;
pub(crate) const HDR_LEN: usize = 16;
pub(crate) const EP_LEN: usize = 72;
pub(crate) const MAX_EPS: usize = 8;
pub(crate) const MSG_LEN: usize = HDR_LEN + EP_LEN * MAX_EPS;
pub(crate) const EP_INFO_ADDRESS_IP: u16 = 2;
pub(crate) const EP_INFO_ADDRESS_IP6: u16 = 3;
pub(crate) const EP_INFO_PATH: u16 = 0x10;
pub(crate) const EP_FLAG_SOURCE: u32 = 1;
pub(crate) const EP_FLAG_DEST: u32 = 2;
pub(crate) const FLAGS_NODELAY: u32 = 1 << 30;

trait Stream: Read + Write {}
impl<T: Read + Write> Stream for T {}

/// One ibacm message (a request or a reply): at most [`MSG_LEN`] bytes, in
/// a fixed buffer.
pub struct Msg {
    buf: [u8; MSG_LEN],
    len: usize,
}

impl std::ops::Deref for Msg {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// A connected ibacm socket.
pub enum Conn {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Conn {
    fn exchange(&mut self, req: &[u8]) -> Option<Msg> {
        let s: &mut dyn Stream = match self {
            Conn::Tcp(s) => s,
            Conn::Unix(s) => s,
        };
        s.write_all(req).ok()?;
        // Read the header, then exactly the length it announces (bounded).
        let mut m = Msg { buf: [0u8; MSG_LEN], len: 0 };
        s.read_exact(&mut m.buf[..HDR_LEN]).ok()?;
        let len = u16::from_ne_bytes([m.buf[6], m.buf[7]]) as usize;
        if !(HDR_LEN..=MSG_LEN).contains(&len) {
            return None;
        }
        s.read_exact(&mut m.buf[HDR_LEN..len]).ok()?;
        m.len = len;
        Some(m)
    }
}

/// Connect to ibacm as upstream finds it, with timeouts.
pub fn connect(port_file: &Path, sock_path: &Path) -> Option<Conn> {
    // (read into a fixed buffer: std's read_to_string allocates)
    let port = SPath::new(port_file.as_os_str().as_encoded_bytes()).and_then(|p| read_attr(&p)).and_then(|s| {
        let t = s.as_str().trim_start();
        let digits = &t[..t.bytes().take_while(u8::is_ascii_digit).count()];
        digits.parse::<u16>().ok()
    });
    match port {
        Some(p) if p != 0 => {
            let addr = SocketAddrV4::new(Ipv4Addr::LOCALHOST, p);
            let s = TcpStream::connect_timeout(&addr.into(), TIMEOUT).ok()?;
            s.set_read_timeout(Some(TIMEOUT)).ok()?;
            s.set_write_timeout(Some(TIMEOUT)).ok()?;
            Some(Conn::Tcp(s))
        }
        _ => {
            let s = UnixStream::connect(sock_path).ok()?;
            s.set_read_timeout(Some(TIMEOUT)).ok()?;
            s.set_write_timeout(Some(TIMEOUT)).ok()?;
            Some(Conn::Unix(s))
        }
    }
}

/// The process-wide connection: tried once, on the first active query.
fn global() -> Option<&'static Mutex<Conn>> {
    static CONN: OnceLock<Option<Mutex<Conn>>> = OnceLock::new();
    CONN.get_or_init(|| connect(Path::new(PORT_FILE), Path::new(SOCK_PATH)).map(Mutex::new)).as_ref()
}

/// Whether ibacm takes part in active queries (connecting on first use).
pub fn connected() -> bool {
    global().is_some()
}

fn is_inet(a: &Option<RawAddr>) -> bool {
    matches!(a, Some(a) if a.family() == libc::AF_INET || a.family() == libc::AF_INET6)
}

fn ib_gid(a: &Option<RawAddr>) -> Option<[u8; 16]> {
    a.as_ref()?.as_ib().map(|s| s.sib_addr.bytes())
}

fn put_ep_addr(ep: &mut [u8], flags: u32, a: &RawAddr) {
    ep[0..4].copy_from_slice(&flags.to_ne_bytes());
    if let Some(s) = a.as_in() {
        ep[4..6].copy_from_slice(&EP_INFO_ADDRESS_IP.to_ne_bytes());
        ep[8..12].copy_from_slice(&s.sin_addr.s_addr.to_ne_bytes());
    } else if let Some(s) = a.as_in6() {
        ep[4..6].copy_from_slice(&EP_INFO_ADDRESS_IP6.to_ne_bytes());
        ep[8..24].copy_from_slice(&s.sin6_addr.s6_addr);
    }
}

fn path_bytes(p: &ibv_path_record) -> [u8; 64] {
    // SAFETY: ibv_path_record is 64 bytes of plain data.
    unsafe { std::mem::transmute_copy(p) }
}

/// Build the resolve request for a result and its hints.
pub fn build_request(ai: &AddrInfo, h: &Hints) -> Msg {
    let mut msg = [0u8; MSG_LEN];
    let mut n = 0;
    {
        let mut ep = |f: &mut dyn FnMut(&mut [u8])| {
            f(&mut msg[HDR_LEN + n * EP_LEN..HDR_LEN + (n + 1) * EP_LEN]);
            n += 1;
        };
        if let (true, Some(src)) = (is_inet(&ai.src), &ai.src) {
            ep(&mut |e| put_ep_addr(e, EP_FLAG_SOURCE, src));
        }
        if let (true, Some(dst)) = (is_inet(&ai.dst), &ai.dst) {
            let mut flags = EP_FLAG_DEST;
            if h.flags() & (RAI_NUMERICHOST | RAI_NOROUTE) != 0 {
                flags |= FLAGS_NODELAY;
            }
            ep(&mut |e| put_ep_addr(e, flags, dst));
        }
        let sgid = ib_gid(&ai.src);
        let dgid = ib_gid(&ai.dst);
        if h.route_len() != 0 || sgid.is_some() || dgid.is_some() {
            let mut path = h.route_path().unwrap_or_default();
            if let Some(g) = sgid {
                path.sgid = g;
            }
            if let Some(g) = dgid {
                path.dgid = g;
            }
            ep(&mut |e| {
                e[4..6].copy_from_slice(&EP_INFO_PATH.to_ne_bytes());
                e[8..72].copy_from_slice(&path_bytes(&path));
            });
        }
    }
    let len = HDR_LEN + n * EP_LEN;
    msg[0] = ACM_VERSION;
    msg[1] = ACM_OP_RESOLVE;
    msg[6..8].copy_from_slice(&(len as u16).to_ne_bytes());
    Msg { buf: msg, len }
}

/// Apply a reply to the result: the route (every PATH record, as
/// `ibv_path_data` with its type word cleared) and, if the result has no
/// source yet, the first SOURCE address. `Ok(false)` if the reply is
/// unusable (then `ai` may hold part of it), ENOMEM if the route cannot
/// grow.
pub fn apply_reply(ai: &mut AddrInfo, reply: &[u8]) -> Result<bool> {
    if reply.len() < HDR_LEN || u16::from_ne_bytes([reply[6], reply[7]]) as usize != reply.len() || reply[2] != 0 {
        return Ok(false);
    }
    for ep in reply[HDR_LEN..].chunks_exact(EP_LEN) {
        let flags = u32::from_ne_bytes([ep[0], ep[1], ep[2], ep[3]]);
        let ty = u16::from_ne_bytes([ep[4], ep[5]]);
        match ty {
            EP_INFO_PATH => {
                // The record is reinterpreted as ibv_path_data: flags word,
                // then type/reserved (cleared), then the path.
                let d = ibv_path_data {
                    flags,
                    reserved: u32::from_ne_bytes([0, 0, ep[6], ep[7]]),
                    // SAFETY: 64 bytes into a 64-byte plain struct.
                    path: unsafe { std::ptr::read_unaligned(ep[8..72].as_ptr() as *const ibv_path_record) },
                };
                cmem::push(&mut ai.route, d)?;
            }
            EP_INFO_ADDRESS_IP if flags & EP_FLAG_SOURCE != 0 && ai.src.is_none() => {
                // SAFETY: zeroed sockaddr_in is valid.
                let mut s: libc::sockaddr_in = unsafe { std::mem::zeroed() };
                s.sin_family = libc::AF_INET as u16;
                s.sin_addr.s_addr = u32::from_ne_bytes([ep[8], ep[9], ep[10], ep[11]]);
                ai.src = Some(RawAddr::from_in(&s));
            }
            EP_INFO_ADDRESS_IP6 if flags & EP_FLAG_SOURCE != 0 && ai.src.is_none() => {
                // SAFETY: as above.
                let mut s: libc::sockaddr_in6 = unsafe { std::mem::zeroed() };
                s.sin6_family = libc::AF_INET6 as u16;
                s.sin6_addr.s6_addr.copy_from_slice(&ep[8..24]);
                ai.src = Some(RawAddr::from_in6(&s));
            }
            _ => {}
        }
    }
    Ok(true)
}

/// The AF_IB entry upstream prepends when ibacm returned a route (None
/// without a route).
pub fn af_ib_entry(ai: &AddrInfo) -> Result<Option<AddrInfo>> {
    let Some(path) = ai.route.first().map(|d| d.path) else { return Ok(None) };
    let flow = (u32::from_be(path.flowlabel_hoplimit) >> 8).to_be();
    let mk = |gid: [u8; 16], orig: &Option<RawAddr>| {
        let mut s = sockaddr_ib {
            sib_family: AF_IB as u16,
            sib_pkey: path.pkey,
            sib_flowinfo: flow,
            sib_addr: ib_addr::from_bytes(gid),
            ..Default::default()
        };
        let port = orig.as_ref().map_or(0, |a| u16::from_be(a.port_be()));
        set_sid(ai.port_space, port, &mut s);
        RawAddr::from_ib(&s)
    };
    let connect = (ai.family != AF_IB).then(|| {
        let mut hdr = ib_connect_hdr::default();
        let word = |a: &Option<RawAddr>| -> [u32; 4] {
            match a {
                Some(a) if a.family() == libc::AF_INET6 => {
                    let b = a.as_in6().map(|s| s.sin6_addr.s6_addr).unwrap_or_default();
                    std::array::from_fn(|i| u32::from_ne_bytes(b[i * 4..i * 4 + 4].try_into().unwrap()))
                }
                Some(a) => [0, 0, 0, a.as_in().map_or(0, |s| s.sin_addr.s_addr)],
                None => [0; 4],
            }
        };
        hdr.ip_version = if ai.family == libc::AF_INET { 4 << 4 } else { 6 << 4 };
        hdr.src_addr = word(&ai.src);
        hdr.dst_addr = word(&ai.dst);
        hdr
    });
    let copy = ai.try_clone()?;
    Ok(Some(AddrInfo {
        family: AF_IB,
        src: Some(mk(path.sgid, &ai.src)),
        dst: Some(mk(path.dgid, &ai.dst)),
        connect,
        ..copy
    }))
}

/// Resolve through a given connection; returns the final list.
pub fn resolve_with(
    conn: Option<&Mutex<Conn>>,
    mut ai: AddrInfo,
    h: &Hints,
    af_ib: impl FnOnce() -> bool,
) -> Result<Vec<AddrInfo>> {
    let Some(conn) = conn else { return cmem::vec1(ai) };
    let req = build_request(&ai, h);
    let reply = {
        let mut c = conn.lock().unwrap_or_else(|e| e.into_inner());
        c.exchange(&req)
    };
    let Some(reply) = reply else { return cmem::vec1(ai) };
    let mut updated = ai.try_clone()?;
    if !apply_reply(&mut updated, &reply)? {
        return cmem::vec1(ai);
    }
    ai = updated;
    if !ai.route.is_empty() && h.flags() & RAI_ROUTEONLY == 0 && af_ib() {
        if let Some(ib) = af_ib_entry(&ai)? {
            let mut v = cmem::vec1(ib)?;
            cmem::push(&mut v, ai)?;
            return Ok(v);
        }
    }
    cmem::vec1(ai)
}

/// The ibacm step of `rdma_getaddrinfo` for an active result.
pub fn resolve(ai: AddrInfo, h: &Hints) -> Result<Vec<AddrInfo>> {
    resolve_with(global(), ai, h, crate::ucma::af_ib_support)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    fn dst4() -> AddrInfo {
        // SAFETY: zeroed sockaddr_in is valid.
        let mut s: libc::sockaddr_in = unsafe { std::mem::zeroed() };
        s.sin_family = libc::AF_INET as u16;
        s.sin_port = 7471u16.to_be();
        s.sin_addr.s_addr = u32::from_ne_bytes([192, 0, 2, 2]);
        AddrInfo {
            family: libc::AF_INET,
            qp_type: 2,
            port_space: RDMA_PS_TCP,
            dst: Some(RawAddr::from_in(&s)),
            ..Default::default()
        }
    }

    #[test]
    fn request_layout() {
        let h = Hints::plain(RAI_NUMERICHOST, 0, 0, 0);
        let req = build_request(&dst4(), &h);
        assert_eq!(req.len(), HDR_LEN + EP_LEN);
        assert_eq!((req[0], req[1]), (1, 1));
        assert_eq!(u16::from_ne_bytes([req[6], req[7]]), 88);
        assert_eq!(u32::from_ne_bytes(req[16..20].try_into().unwrap()), EP_FLAG_DEST | FLAGS_NODELAY);
        assert_eq!(u16::from_ne_bytes([req[20], req[21]]), EP_INFO_ADDRESS_IP);
        assert_eq!(&req[24..28], &[192, 0, 2, 2]);
    }

    #[test]
    fn no_ibacm_is_a_no_op() {
        let d = std::env::temp_dir().join(format!("acm-none-{}", std::process::id()));
        assert!(connect(&d.join("port"), &d.join("sock")).is_none());
        let out = resolve_with(None, dst4(), &Hints::plain(0, 0, 0, 0), || true).unwrap();
        assert_eq!(out, vec![dst4()]);
    }

    /// A fake ibacm answering with a source address and one path.
    #[test]
    fn fake_ibacm_round_trip() {
        let d = std::env::temp_dir().join(format!("acm-fake-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let sock = d.join("sock");
        let _ = std::fs::remove_file(&sock);
        let l = UnixListener::bind(&sock).unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut req = vec![0u8; HDR_LEN + EP_LEN];
            s.read_exact(&mut req).unwrap();
            let mut resp = vec![0u8; HDR_LEN + 2 * EP_LEN];
            resp[..HDR_LEN].copy_from_slice(&req[..HDR_LEN]);
            resp[6..8].copy_from_slice(&((HDR_LEN + 2 * EP_LEN) as u16).to_ne_bytes());
            let ep = &mut resp[HDR_LEN..HDR_LEN + EP_LEN];
            ep[0..4].copy_from_slice(&EP_FLAG_SOURCE.to_ne_bytes());
            ep[4..6].copy_from_slice(&EP_INFO_ADDRESS_IP.to_ne_bytes());
            ep[8..12].copy_from_slice(&[192, 0, 2, 1]);
            let ep = &mut resp[HDR_LEN + EP_LEN..];
            ep[0..4].copy_from_slice(&0x2Bu32.to_ne_bytes());
            ep[4..6].copy_from_slice(&EP_INFO_PATH.to_ne_bytes());
            ep[8 + 8] = 0xfe; // dgid[0]
            ep[8 + 50..8 + 52].copy_from_slice(&0xffffu16.to_be_bytes()); // pkey
            s.write_all(&resp).unwrap();
        });
        let conn = Mutex::new(connect(&d.join("no-port-file"), &sock).expect("connects"));
        let out = resolve_with(Some(&conn), dst4(), &Hints::plain(0, 0, 0, 0), || true).unwrap();
        server.join().unwrap();
        assert_eq!(out.len(), 2, "AF_IB entry prepended");
        let (ib, ip) = (&out[0], &out[1]);
        assert_eq!(ip.src.unwrap().as_in().unwrap().sin_addr.s_addr.to_ne_bytes(), [192, 0, 2, 1]);
        assert_eq!(ip.route.len(), 1);
        assert_eq!(ip.route[0].flags, 0x2B);
        assert_eq!(ip.route[0].reserved, 0, "type word cleared");
        assert_eq!(ib.family, AF_IB);
        let dib = ib.dst.unwrap().as_ib().unwrap();
        assert_eq!(dib.sib_addr.bytes()[0], 0xfe);
        assert_eq!(u64::from_be(dib.sib_sid), ((RDMA_PS_TCP as u64) << 16) + 7471);
        let c = ib.connect.unwrap();
        assert_eq!(c.ip_version, 0x40);
        assert_eq!(c.src_addr[3].to_ne_bytes(), [192, 0, 2, 1]);
        assert_eq!(c.dst_addr[3].to_ne_bytes(), [192, 0, 2, 2]);
        // Without AF_IB support only the IP entry comes back.
        std::fs::remove_dir_all(&d).unwrap();
    }
}
