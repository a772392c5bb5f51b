//! The passive lookup with no node (`rdma_getaddrinfo(NULL, "7471",
//! {RAI_PASSIVE})`, the first call of nearly every server), answered
//! without glibc's `getaddrinfo` where its answer is certain.
//!
//! glibc answers a wildcard query with the unspecified address of each
//! family asked for: `0.0.0.0` for AF_INET, `::` for AF_INET6, and both for
//! AF_UNSPEC, which it then orders by the destination-address selection
//! rules of RFC 3484 (getaddrinfo(3), gai.conf(5)); `rdma_getaddrinfo`
//! keeps the first. With glibc's built-in tables (no directive in
//! `/etc/gai.conf`) `0.0.0.0` comes first whenever IPv4 is usable: both
//! destinations are global while their sources are loopback addresses
//! (rule 2 ties), and `0.0.0.0` shares its label with its source
//! `127.0.0.1` while `::` (label 3) does not share `::1`'s (label 0), so
//! rule 5 decides; and when IPv6 is not usable rule 1 decides the same.
//! (Rules 3 and 4 read address flags of the source `::1`; a deprecated
//! `::1` changes nothing, and a home-address flag on it, which would, is
//! not looked at: no host sets one.) So
//! this answers:
//! - AF_INET and AF_INET6 hints: that family's unspecified address;
//! - AF_UNSPEC: `0.0.0.0` when `/etc/gai.conf` holds no directive and a UDP
//!   socket of ours connects to `0.0.0.0` (as glibc's own probe does).
//!
//! Everything else (a service name, an unusual socket type, a configured
//! gai.conf, a host where IPv4 is not usable) is left to glibc.

use super::numeric::{self, Answer, GaiRequest, NumAddr};
use crate::nulstr::NulStr;
use std::sync::Mutex;

const GAI_CONF: &[u8] = b"/etc/gai.conf\0";

/// What was last read of gai.conf: the file's identity and whether it
/// holds any directive.
#[derive(Clone, Copy, PartialEq)]
struct ConfId {
    dev: u64,
    ino: u64,
    size: i64,
    mtime: (i64, i64),
    /// A regular file (whose size says where its end is).
    regular: bool,
}

static CONF: Mutex<Option<(Option<ConfId>, bool)>> = Mutex::new(None);

/// Whether glibc orders addresses by its built-in tables: gai.conf is
/// absent, or holds only comments and blank lines. Read again whenever the
/// file changes (as glibc does).
fn default_tables() -> bool {
    // SAFETY: a valid path and a stat buffer of ours.
    let id = unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::stat(GAI_CONF.as_ptr().cast(), &mut st) == 0 {
            Some(ConfId {
                dev: st.st_dev,
                ino: st.st_ino,
                size: st.st_size,
                mtime: (st.st_mtime, st.st_mtime_nsec),
                regular: st.st_mode & libc::S_IFMT == libc::S_IFREG,
            })
        } else if crate::error::errno() == libc::ENOENT {
            None
        } else {
            return false;
        }
    };
    let conf = || CONF.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((seen, plain)) = *conf() {
        if seen == id {
            return plain;
        }
    }
    // Read with the lock released (a file read is a system call that may
    // wait); a concurrent reader stores the same answer.
    let plain = match id {
        None => true,
        Some(c) => read_plain(if c.regular { c.size } else { i64::MAX }).unwrap_or(false),
    };
    *conf() = Some((id, plain));
    plain
}

/// Read gai.conf through a fixed buffer (no allocation on this path):
/// whether it holds no directive; `None` if it cannot be read. `size` is
/// the size its stat reported for a regular file (`i64::MAX` otherwise):
/// once that much is read (usually in one call) no further read is made
/// to see the end.
fn read_plain(size: i64) -> Option<bool> {
    // SAFETY: a valid path; the descriptor is ours and closed below.
    let fd = unsafe { libc::open(GAI_CONF.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    let mut scan = Scan::Start;
    let mut buf = [0u8; 4096];
    let mut left = size;
    let r = loop {
        if left <= 0 {
            break Some(true);
        }
        // SAFETY: buf has room for buf.len() bytes.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            if crate::error::errno() == libc::EINTR {
                continue;
            }
            break None;
        }
        if n == 0 {
            break Some(true);
        }
        if scan.feed(&buf[..n as usize]) {
            break Some(false);
        }
        left -= n as i64;
    };
    // SAFETY: our descriptor.
    unsafe { libc::close(fd) };
    r
}

/// Where a reading of gai.conf stands: looking for a line's first
/// non-blank byte, or inside a `#` comment.
#[derive(Clone, Copy, PartialEq)]
enum Scan {
    Start,
    Comment,
}

impl Scan {
    /// Feed the next bytes; true once a directive shows (any line that is
    /// not blank or a `#` comment: `label`, `precedence`, `scopev4`,
    /// `reload`, or something glibc would reject, which is left to glibc
    /// too).
    fn feed(&mut self, bytes: &[u8]) -> bool {
        for &c in bytes {
            match (*self, c) {
                (_, b'\n') => *self = Scan::Start,
                (Scan::Comment, _) => {}
                (Scan::Start, b'#') => *self = Scan::Comment,
                (Scan::Start, c) if c.is_ascii_whitespace() => {}
                (Scan::Start, _) => return true,
            }
        }
        false
    }
}

#[cfg(test)]
fn has_directive(text: &[u8]) -> bool {
    // Whole, and a byte at a time (lines split across reads).
    let mut w = Scan::Start;
    let whole = w.feed(text);
    let mut s = Scan::Start;
    let bytewise = text.chunks(1).any(|b| s.feed(b));
    assert_eq!(whole, bytewise);
    whole
}

/// Whether IPv4 is usable as glibc's ordering probes it: a UDP socket
/// connects to `0.0.0.0` (the kernel routes it to the loopback address).
/// Our own descriptor, through the raw system calls (`crate::sys`), so
/// that no socket preload sees it.
fn ipv4_usable(port: u16) -> bool {
    let fd = crate::sys::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
    if fd < 0 {
        return false;
    }
    // SAFETY: sockaddr_in is plain data; all-zero is valid.
    let mut sin: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    sin.sin_family = libc::AF_INET as u16;
    sin.sin_port = port;
    // SAFETY: a valid address of its own length; our descriptor.
    let ok = unsafe {
        crate::sys::connect(fd, (&sin as *const libc::sockaddr_in).cast(), std::mem::size_of_val(&sin) as u32)
    } == 0;
    crate::sys::close(fd);
    ok
}

/// glibc's first answer to a passive query with no node, or `None` where
/// glibc must be asked. `service` must be numeric.
pub fn resolve(service: Option<NulStr>, req: &GaiRequest) -> Option<Answer> {
    let (socktype, protocol) = numeric::first_type(req)?;
    let port = numeric::numeric_port(Some(service?))?.to_be();
    let v4 = |port| {
        // SAFETY: as above.
        let mut sin: libc::sockaddr_in = unsafe { std::mem::zeroed() };
        sin.sin_family = libc::AF_INET as u16;
        sin.sin_port = port;
        NumAddr::V4(sin)
    };
    let addr = match req.family {
        libc::AF_INET => v4(port),
        libc::AF_INET6 => {
            // SAFETY: as above.
            let mut sin6: libc::sockaddr_in6 = unsafe { std::mem::zeroed() };
            sin6.sin6_family = libc::AF_INET6 as u16;
            sin6.sin6_port = port;
            NumAddr::V6(sin6)
        }
        0 if default_tables() && ipv4_usable(port) => v4(port),
        _ => return None,
    };
    Some(Answer { socktype, protocol, addr })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;

    #[test]
    fn directives() {
        assert!(!has_directive(b""));
        assert!(!has_directive(b"# label ::1/128 0\n\n   \t\n#precedence ::ffff:0:0/96 100\n"));
        assert!(has_directive(b"#x\nprecedence ::ffff:0:0/96 100\n"));
        assert!(has_directive(b"  label ::1/128 0"));
        assert!(has_directive(b"reload yes\n"));
        assert!(has_directive(b"# a comment\n   # another\n\n\tscopev4 ::ffff:169.254.0.0/112  2\n"));
        assert!(!has_directive(b"#no newline at the end"));
    }

    /// glibc's own first answer, for comparison.
    fn glibc_first(family: i32, socktype: i32, protocol: i32, service: &str) -> Option<(i32, Vec<u8>)> {
        let svc = CString::new(service).unwrap();
        // SAFETY: a plain getaddrinfo call; the result is freed below.
        unsafe {
            let mut h: libc::addrinfo = std::mem::zeroed();
            h.ai_flags = libc::AI_PASSIVE;
            h.ai_family = family;
            h.ai_socktype = socktype;
            h.ai_protocol = protocol;
            let mut out = std::ptr::null_mut();
            if libc::getaddrinfo(std::ptr::null(), svc.as_ptr(), &h, &mut out) != 0 {
                return None;
            }
            let a = &*out;
            let r = (a.ai_socktype, std::slice::from_raw_parts(a.ai_addr as *const u8, a.ai_addrlen as usize).to_vec());
            libc::freeaddrinfo(out);
            Some(r)
        }
    }

    #[test]
    fn agrees_with_glibc_here() {
        for family in [0, libc::AF_INET, libc::AF_INET6] {
            for (st, pr) in [(libc::SOCK_STREAM, libc::IPPROTO_TCP), (libc::SOCK_DGRAM, libc::IPPROTO_UDP), (0, 0)] {
                for svc in ["7471", "0", "65535"] {
                    let req = GaiRequest { family, socktype: st, protocol: pr };
                    let Some(ours) =
                        resolve(Some(NulStr::from_cstr(&std::ffi::CString::new(svc.as_bytes()).unwrap())), &req)
                    else {
                        // Only AF_UNSPEC may be left to glibc, and only on a
                        // host with a gai.conf or without IPv4.
                        assert_eq!(family, 0);
                        continue;
                    };
                    let raw = ours.addr.raw();
                    let theirs = glibc_first(family, st, pr, svc).expect("glibc answers");
                    assert_eq!((ours.socktype, raw.as_bytes().to_vec()), theirs, "family {family} type {st} {svc}");
                }
            }
        }
        // Service names and inconsistent types are glibc's.
        let req = GaiRequest { family: 0, socktype: libc::SOCK_STREAM, protocol: libc::IPPROTO_TCP };
        assert!(resolve(Some(NulStr::from_cstr(cstr!("ssh"))), &req).is_none());
        assert!(resolve(None, &req).is_none());
        assert!(resolve(Some(NulStr::from_cstr(cstr!("7471"))), &GaiRequest { protocol: libc::IPPROTO_UDP, ..req })
            .is_none());
    }
}
