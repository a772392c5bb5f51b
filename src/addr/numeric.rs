//! A fast path for the commonest `rdma_getaddrinfo` query: a numeric address
//! literal with a numeric port, answered without glibc's `getaddrinfo`.
//!
//! It only answers where glibc's answer is fully determined and known; for
//! everything else it returns `None` and the caller asks glibc. Conditions
//! (the glibc hints that `rdma_getaddrinfo` derives from the caller's hints):
//! - the caller gave hints (without hints glibc applies AI_ADDRCONFIG, whose
//!   answer depends on the host's configured addresses);
//! - the host is a strict dotted-quad IPv4 or an IPv6 literal without a scope
//!   suffix (glibc's looser forms like `127.1` or `0x7f.1` go to glibc);
//! - the family is AF_UNSPEC or the literal's own family (a mismatch is an
//!   error that glibc reports);
//! - socket type and protocol are one of the consistent pairs, so the first
//!   glibc result is STREAM/TCP or DGRAM/UDP;
//! - the service is absent or 1–5 ASCII digits with a value ≤ 65535.

use crate::nulstr::NulStr;
use libc::{sockaddr_in, sockaddr_in6, IPPROTO_TCP, IPPROTO_UDP, SOCK_DGRAM, SOCK_STREAM};
use std::net::Ipv6Addr;

/// A numeric address as glibc returns it.
#[derive(Clone, Copy)]
pub enum NumAddr {
    V4(sockaddr_in),
    V6(sockaddr_in6),
}

impl NumAddr {
    pub fn raw(&self) -> crate::sockaddr::RawAddr {
        match self {
            NumAddr::V4(s) => crate::sockaddr::RawAddr::from_in(s),
            NumAddr::V6(s) => crate::sockaddr::RawAddr::from_in6(s),
        }
    }
    pub fn family(&self) -> i32 {
        match self {
            NumAddr::V4(_) => libc::AF_INET,
            NumAddr::V6(_) => libc::AF_INET6,
        }
    }
}

/// What glibc would have returned as its first result.
#[derive(Clone, Copy)]
pub struct Answer {
    pub socktype: i32,
    pub protocol: i32,
    pub addr: NumAddr,
}

/// Strict dotted-quad IPv4 (four decimal parts 0–255, no leading zeros):
/// exactly the forms on which every parser agrees.
pub fn parse_ipv4(s: NulStr) -> Option<[u8; 4]> {
    let mut out = [0u8; 4];
    let mut part = 0usize;
    let mut val: u32 = 0;
    let mut digits = 0u32;
    let mut r = s.reader();
    loop {
        let c = r.next();
        if c == 0 {
            break;
        }
        let d = c.wrapping_sub(b'0');
        if d <= 9 {
            // A leading zero means octal to glibc; more than 255 (which also
            // catches a fourth digit) is not a dotted-quad part.
            if digits == 1 && val == 0 {
                return None;
            }
            val = val * 10 + d as u32;
            digits += 1;
            if val > 255 {
                return None;
            }
        } else if c == b'.' && digits != 0 && part < 3 {
            out[part] = val as u8;
            part += 1;
            val = 0;
            digits = 0;
        } else {
            return None;
        }
    }
    if part != 3 || digits == 0 {
        return None;
    }
    out[3] = val as u8;
    Some(out)
}

/// Hexadecimal digit values; 0xff for other bytes.
static HEX: [u8; 256] = {
    let mut t = [0xffu8; 256];
    let mut c = 0;
    while c < 256 {
        t[c] = match c as u8 {
            b'0'..=b'9' => c as u8 - b'0',
            b'a'..=b'f' => c as u8 - b'a' + 10,
            b'A'..=b'F' => c as u8 - b'A' + 10,
            _ => 0xff,
        };
        c += 1;
    }
    t
};

/// The usual IPv6 literal forms (hexadecimal groups of 1–4 digits, at most
/// one `::`), read directly; `None` for anything else, including the forms
/// with a dotted IPv4 tail and scope suffixes, which the caller leaves to
/// the general parser. Where it answers it agrees with that parser and
/// with glibc (tested below against std's).
#[inline]
pub fn parse_ipv6(s: NulStr) -> Option<[u8; 16]> {
    // The groups are gathered as numbers, 16 bits each, newest lowest:
    // `tail` holds those read since the `::` (or all of them if there is
    // none), `head` those before it; the address is `head` moved up past
    // the groups the `::` stands for, then `tail`.
    let mut tail: u128 = 0;
    let mut head: u128 = 0;
    let mut count = 0usize;
    // Where the `::` stands (the number of groups before it), if any.
    let mut gap: Option<usize> = None;
    let mut r = s.reader();
    // The byte being looked at (0: the end).
    let mut c = r.next();
    if c == b':' {
        if r.next() != b':' {
            return None;
        }
        gap = Some(0);
        c = r.next();
        if c == 0 {
            return Some([0; 16]);
        }
    }
    loop {
        let mut v: u32 = 0;
        let mut digits = 0;
        loop {
            let h = HEX[c as usize];
            if h > 15 {
                break;
            }
            if digits == 4 {
                return None;
            }
            v = (v << 4) | h as u32;
            digits += 1;
            c = r.next();
        }
        if digits == 0 || count == 8 {
            return None;
        }
        tail = (tail << 16) | v as u128;
        count += 1;
        if c == 0 {
            break;
        }
        if c != b':' {
            return None;
        }
        c = r.next();
        if c == b':' {
            if gap.is_some() {
                return None;
            }
            gap = Some(count);
            head = tail;
            tail = 0;
            c = r.next();
            if c == 0 {
                break;
            }
        } else if c == 0 {
            return None;
        }
    }
    let bits = match gap {
        None if count == 8 => tail,
        // At most 7 groups: the `::` stands for at least one. Nothing
        // before it: no head to move (a 128-bit shift would overflow).
        Some(0) if count <= 7 => tail,
        Some(at) if count <= 7 => (head << (16 * (8 - at))) | tail,
        _ => return None,
    };
    Some(bits.to_be_bytes())
}

/// The glibc-level request (after the rdma → glibc hint mapping).
#[derive(Clone, Copy, Debug, Default)]
pub struct GaiRequest {
    pub family: i32,
    pub socktype: i32,
    pub protocol: i32,
}

/// Parse a service the way glibc does when it is purely numeric.
pub fn numeric_port(service: Option<NulStr>) -> Option<u16> {
    let Some(s) = service else { return Some(0) };
    let mut r = s.reader();
    let mut v: u32 = 0;
    let mut digits = 0;
    loop {
        let c = r.next();
        if c == 0 {
            break;
        }
        let d = c.wrapping_sub(b'0');
        // At most 5 digits.
        if d > 9 || digits == 5 {
            return None;
        }
        v = v * 10 + d as u32;
        digits += 1;
    }
    if digits == 0 {
        return None;
    }
    u16::try_from(v).ok()
}

pub fn first_type(req: &GaiRequest) -> Option<(i32, i32)> {
    match (req.socktype, req.protocol) {
        (0, 0) | (SOCK_STREAM, 0) | (SOCK_STREAM, IPPROTO_TCP) | (0, IPPROTO_TCP) => Some((SOCK_STREAM, IPPROTO_TCP)),
        (SOCK_DGRAM, 0) | (SOCK_DGRAM, IPPROTO_UDP) | (0, IPPROTO_UDP) => Some((SOCK_DGRAM, IPPROTO_UDP)),
        _ => None,
    }
}

/// Answer a request for a numeric node, or `None` if glibc must decide.
pub fn resolve(node: NulStr, service: Option<NulStr>, req: &GaiRequest) -> Option<Answer> {
    let (socktype, protocol) = first_type(req)?;
    let port = numeric_port(service)?.to_be();
    if let Some(v4) = parse_ipv4(node) {
        if req.family != 0 && req.family != libc::AF_INET {
            return None;
        }
        // SAFETY: sockaddr_in is plain data; all-zero is valid.
        let mut sin: sockaddr_in = unsafe { std::mem::zeroed() };
        sin.sin_family = libc::AF_INET as u16;
        sin.sin_port = port;
        sin.sin_addr.s_addr = u32::from_ne_bytes(v4);
        return Some(Answer { socktype, protocol, addr: NumAddr::V4(sin) });
    }
    let v6 = match parse_ipv6(node) {
        Some(octets) => octets,
        // The other IPv6 forms (dotted tail): measured once, std's parser.
        None => {
            let text = node.to_cstr().to_bytes();
            if !text.contains(&b':') {
                return None;
            }
            std::str::from_utf8(text).ok().and_then(|t| t.parse::<Ipv6Addr>().ok()).map(|a| a.octets())?
        }
    };
    if req.family != 0 && req.family != libc::AF_INET6 {
        return None;
    }
    // SAFETY: as above.
    let mut sin6: sockaddr_in6 = unsafe { std::mem::zeroed() };
    sin6.sin6_family = libc::AF_INET6 as u16;
    sin6.sin6_port = port;
    sin6.sin6_addr.s6_addr = v6;
    Some(Answer { socktype, protocol, addr: NumAddr::V6(sin6) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;

    // The parsers read NUL-terminated strings; the tests write bytes.
    fn z(b: &[u8]) -> CString {
        CString::new(b).unwrap()
    }
    fn v4(b: &[u8]) -> Option<[u8; 4]> {
        parse_ipv4(NulStr::from_cstr(&z(b)))
    }
    fn v6(b: &[u8]) -> Option<[u8; 16]> {
        parse_ipv6(NulStr::from_cstr(&z(b)))
    }
    fn port(b: Option<&[u8]>) -> Option<u16> {
        let s = b.map(z);
        numeric_port(s.as_deref().map(NulStr::from_cstr))
    }
    fn res(node: &[u8], service: Option<&[u8]>, req: &GaiRequest) -> Option<Answer> {
        let s = service.map(z);
        resolve(NulStr::from_cstr(&z(node)), s.as_deref().map(NulStr::from_cstr), req)
    }

    #[test]
    fn ports() {
        assert_eq!(port(None), Some(0));
        assert_eq!(port(Some(b"7471")), Some(7471));
        assert_eq!(port(Some(b"65535")), Some(65535));
        assert_eq!(port(Some(b"65536")), None);
        assert_eq!(port(Some(b"")), None);
        assert_eq!(port(Some(b"+1")), None);
        assert_eq!(port(Some(b" 1")), None);
        assert_eq!(port(Some(b"ssh")), None);
        assert_eq!(port(Some(b"000001")), None);
    }

    #[test]
    fn strict_ipv4_agrees_with_std() {
        for s in [
            "0.0.0.0",
            "255.255.255.255",
            "192.0.2.1",
            "1.2.3",
            "1.2.3.4.5",
            "256.1.1.1",
            "01.1.1.1",
            "1..1.1",
            "1.1.1.",
            ".1.1.1",
            "1.1.1.1a",
            "",
            "1234.1.1.1",
            "0.00.1.1",
            "1.2.3.0255",
            "10.0.0.10",
            "9.99.199.249",
            "1.2.3.-4",
            "1.2.3.4 ",
            " 1.2.3.4",
            "1.2.3.4/8",
        ] {
            let std = s.parse::<std::net::Ipv4Addr>().ok().map(|a| a.octets());
            assert_eq!(v4(s.as_bytes()), std, "{s}");
        }
    }

    #[test]
    fn ipv6_agrees_with_std() {
        let std6 = |s: &str| s.parse::<Ipv6Addr>().ok().map(|a| a.octets());
        for s in [
            "::",
            "::1",
            "1::",
            "fd00::1",
            "fd00::2",
            "FE80::1",
            "1:2:3:4:5:6:7:8",
            "1:2:3:4:5:6:7::",
            "::2:3:4:5:6:7:8",
            "1::8",
            "1:2::7:8",
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            "0:0:0:0:0:0:0:0",
            "2001:db8::ff00:42:8329",
        ] {
            assert_eq!(v6(s.as_bytes()), std6(s), "{s}");
            assert!(v6(s.as_bytes()).is_some(), "{s}");
        }
        for s in [
            "",
            ":",
            ":::",
            "1:::2",
            "1::2::3",
            ":1::",
            "1::2:",
            ":1:2:3:4:5:6:7",
            "1:2:3:4:5:6:7:8:9",
            "1:2:3:4:5:6:7",
            "1:2:3:4::5:6:7:8",
            "12345::",
            "g::",
            "1:2:3:4:5:6:7:8:",
            "::ffff:1.2.3.4",
            "fe80::1%lo",
            " ::1",
            "::1 ",
        ] {
            assert_eq!(v6(s.as_bytes()).filter(|_| !s.contains('.')), std6(s).filter(|_| !s.contains('.')), "{s}");
        }
        // Every short string over the literal alphabet: where the direct
        // parser answers, std agrees; where std accepts a form without a
        // dotted tail, the direct parser answers too.
        let alphabet = b"0f:F.";
        let mut buf = Vec::new();
        for len in 0..=7u32 {
            for mut k in 0..alphabet.len().pow(len) {
                buf.clear();
                for _ in 0..len {
                    buf.push(alphabet[k % alphabet.len()]);
                    k /= alphabet.len();
                }
                let text = std::str::from_utf8(&buf).unwrap();
                let ours = v6(&buf);
                let theirs = std6(text);
                if ours.is_some() || !text.contains('.') {
                    assert_eq!(ours, theirs, "{text}");
                }
            }
        }
        // Longer strings (up to 8 groups and beyond), pseudo-random.
        let alphabet = b"0aF9:::";
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..200_000 {
            buf.clear();
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 28) as usize;
            let mut y = x;
            for _ in 0..len {
                y = y.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                buf.push(alphabet[(y >> 33) as usize % alphabet.len()]);
            }
            let text = std::str::from_utf8(&buf).unwrap();
            assert_eq!(v6(&buf), std6(text), "{text}");
        }
    }

    #[test]
    fn literals() {
        let req = GaiRequest::default();
        let a = res(b"192.0.2.1", Some(b"7471"), &req).unwrap();
        let sin = a.addr.raw().as_in().unwrap();
        assert_eq!(sin.sin_port, 7471u16.to_be());
        assert_eq!(sin.sin_addr.s_addr.to_ne_bytes(), [192, 0, 2, 1]);
        assert_eq!((a.socktype, a.protocol), (SOCK_STREAM, IPPROTO_TCP));
        let a = res(b"fd00::1", None, &GaiRequest { protocol: IPPROTO_UDP, ..req }).unwrap();
        assert_eq!(a.addr.raw().len(), 28);
        assert_eq!((a.socktype, a.protocol), (SOCK_DGRAM, IPPROTO_UDP));
        // Forms glibc accepts but that must go to glibc.
        for s in [&b"127.1"[..], b"0x7f.0.0.1", b"010.0.0.1", b"fe80::1%lo", b"host", b""] {
            assert!(res(s, None, &req).is_none(), "{:?}", s);
        }
        // Family mismatches and inconsistent socket types go to glibc.
        assert!(res(b"1.2.3.4", None, &GaiRequest { family: libc::AF_INET6, ..req }).is_none());
        assert!(res(b"::1", None, &GaiRequest { family: libc::AF_INET, ..req }).is_none());
        let bad = GaiRequest { socktype: SOCK_STREAM, protocol: IPPROTO_UDP, ..req };
        assert!(res(b"1.2.3.4", None, &bad).is_none());
    }
}
