//! Client of ibacm, the IB address and route cache (ibacm(1)).
//!
//! `rdma_getaddrinfo` asks ibacm for a route (and source address) for every
//! active query. The service is found once per process: a TCP port in
//! `/run/ibacm.port`, else the unix socket `/run/ibacm.sock`. No ibacm means
//! nothing happens. Unlike upstream, every exchange is bounded in time.

use super::model::{set_sid, AddrInfo, Hints};
use crate::abi::*;
use crate::sockaddr::RawAddr;
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

/// A connected ibacm socket.
pub enum Conn {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Conn {
    fn exchange(&mut self, req: &[u8]) -> Option<Vec<u8>> {
        let s: &mut dyn Stream = match self {
            Conn::Tcp(s) => s,
            Conn::Unix(s) => s,
        };
        s.write_all(req).ok()?;
        // Read the header, then exactly the length it announces (bounded).
        let mut buf = vec![0u8; MSG_LEN];
        s.read_exact(&mut buf[..HDR_LEN]).ok()?;
        let len = u16::from_ne_bytes([buf[6], buf[7]]) as usize;
        if !(HDR_LEN..=MSG_LEN).contains(&len) {
            return None;
        }
        s.read_exact(&mut buf[HDR_LEN..len]).ok()?;
        buf.truncate(len);
        Some(buf)
    }
}

/// Connect to ibacm as upstream finds it, with timeouts.
pub fn connect(port_file: &Path, sock_path: &Path) -> Option<Conn> {
    let port = std::fs::read_to_string(port_file).ok().and_then(|s| {
        let t = s.trim_start();
        let digits: String = t.chars().take_while(char::is_ascii_digit).collect();
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
pub fn build_request(ai: &AddrInfo, h: &Hints) -> Vec<u8> {
    let mut msg = vec![0u8; MSG_LEN];
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
    msg.truncate(len);
    msg
}

/// Apply a reply to the result: the route (every PATH record, as
/// `ibv_path_data` with its type word cleared) and, if the result has no
/// source yet, the first SOURCE address. `None` if the reply is unusable.
pub fn apply_reply(ai: &mut AddrInfo, reply: &[u8]) -> Option<()> {
    if reply.len() < HDR_LEN || u16::from_ne_bytes([reply[6], reply[7]]) as usize != reply.len() || reply[2] != 0 {
        return None;
    }
    for ep in reply[HDR_LEN..].chunks_exact(EP_LEN) {
        let flags = u32::from_ne_bytes(ep[0..4].try_into().ok()?);
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
                ai.route.try_reserve(1).ok()?;
                ai.route.push(d);
            }
            EP_INFO_ADDRESS_IP if flags & EP_FLAG_SOURCE != 0 && ai.src.is_none() => {
                // SAFETY: zeroed sockaddr_in is valid.
                let mut s: libc::sockaddr_in = unsafe { std::mem::zeroed() };
                s.sin_family = libc::AF_INET as u16;
                s.sin_addr.s_addr = u32::from_ne_bytes(ep[8..12].try_into().ok()?);
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
    Some(())
}

/// The AF_IB entry upstream prepends when ibacm returned a route.
pub fn af_ib_entry(ai: &AddrInfo) -> Option<AddrInfo> {
    let path = ai.route.first()?.path;
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
    Some(AddrInfo {
        flags: ai.flags,
        family: AF_IB,
        qp_type: ai.qp_type,
        port_space: ai.port_space,
        src: Some(mk(path.sgid, &ai.src)),
        dst: Some(mk(path.dgid, &ai.dst)),
        src_canonname: ai.src_canonname.clone(),
        dst_canonname: ai.dst_canonname.clone(),
        route: ai.route.clone(),
        connect,
    })
}

/// Resolve through a given connection; returns the final list.
pub fn resolve_with(
    conn: Option<&Mutex<Conn>>,
    mut ai: AddrInfo,
    h: &Hints,
    af_ib: impl FnOnce() -> bool,
) -> Vec<AddrInfo> {
    let Some(conn) = conn else { return vec![ai] };
    let req = build_request(&ai, h);
    let reply = {
        let mut c = conn.lock().unwrap_or_else(|e| e.into_inner());
        c.exchange(&req)
    };
    let Some(reply) = reply else { return vec![ai] };
    let mut updated = ai.clone();
    if apply_reply(&mut updated, &reply).is_none() {
        return vec![ai];
    }
    ai = updated;
    if !ai.route.is_empty() && h.flags() & RAI_ROUTEONLY == 0 && af_ib() {
        if let Some(ib) = af_ib_entry(&ai) {
            return vec![ib, ai];
        }
    }
    vec![ai]
}

/// The ibacm step of `rdma_getaddrinfo` for an active result.
pub fn resolve(ai: AddrInfo, h: &Hints) -> Vec<AddrInfo> {
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
        let out = resolve_with(None, dst4(), &Hints::plain(0, 0, 0, 0), || true);
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
        let out = resolve_with(Some(&conn), dst4(), &Hints::plain(0, 0, 0, 0), || true);
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
