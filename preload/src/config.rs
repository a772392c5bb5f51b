//! Which sockets become rsockets, and the options given to them.
//!
//! `/etc/rdma/rsocket/preload_config` (read once) holds lines
//! `program domain type protocol`: `#` starts a comment line, `*` matches
//! anything; the program is a case-insensitive prefix of the process's
//! short name; domain INET, INET6 or IB (optionally AF_/PF_), type STREAM
//! or DGRAM (optionally SOCK_), protocol TCP or UDP (optionally IPPROTO_),
//! all case-insensitive. A line with an unknown word is ignored. Without
//! the file, or without a valid line, every socket is intercepted. The
//! environment gives queue sizes and inline size for new rsockets
//! (`RS_SQ_SIZE`, `RS_RQ_SIZE`, `RS_INLINE`), and turns the fork mode on
//! (`RDMAV_FORK_SAFE`, a non-zero number as atoi(3) reads it: stream
//! sockets start as TCP and become rsockets at their first data call,
//! see `migrate.rs`); `RSPRELOAD_FORK_TIMEOUT` bounds, in seconds, each
//! wait of that move (default 30).

use std::sync::OnceLock;

pub const FILE: &str = "/etc/rdma/rsocket/preload_config";
const AF_IB: i32 = 27;

/// A program name of a rule (at most 63 bytes), kept without allocating.
#[derive(Debug, PartialEq, Eq)]
struct Prog {
    name: [u8; 63],
    len: u8,
}

impl Prog {
    fn new(w: &[u8]) -> Option<Prog> {
        let mut name = [0; 63];
        name.get_mut(..w.len())?.copy_from_slice(w);
        Some(Prog { name, len: w.len() as u8 })
    }
    fn bytes(&self) -> &[u8] {
        &self.name[..usize::from(self.len)]
    }
}

#[derive(Debug, PartialEq, Eq)]
pub struct Rule {
    /// None: any program.
    prog: Option<Prog>,
    /// 0: any.
    domain: i32,
    ty: i32,
    protocol: i32,
}

#[derive(Debug, Default)]
pub struct Config {
    rules: Vec<Rule>,
    pub sq_size: i32,
    pub rq_size: i32,
    pub inline: i32,
    /// Fork mode (`RDMAV_FORK_SAFE`).
    pub fork: bool,
    /// The bound of each wait of a fork-mode move, in milliseconds.
    pub fork_timeout_ms: u64,
}

/// The default bound of a fork-mode wait.
pub const FORK_TIMEOUT_S: u64 = 30;

/// The most of the configuration file that is read (a larger file is read
/// up to there).
const MAX_FILE: usize = 256 * 1024;

fn word(w: &[u8], choices: &[(&[&str], i32)]) -> Option<i32> {
    if w == b"*" {
        return Some(0);
    }
    choices.iter().find(|(names, _)| names.iter().any(|n| n.as_bytes().eq_ignore_ascii_case(w))).map(|&(_, v)| v)
}

/// The rules of a configuration file's text (bounded: at most 1024 rules,
/// names of at most 63 bytes). Allocation failure ends the list where it
/// is (as upstream's reader stops at a failed allocation), never aborts.
pub fn parse(text: &[u8]) -> Vec<Rule> {
    let mut rules = Vec::new();
    for line in text.split(|&b| b == b'\n') {
        if line.starts_with(b"#") || rules.len() >= 1024 {
            continue;
        }
        let mut w: [&[u8]; 4] = [&[]; 4];
        let mut n = 0;
        for (slot, x) in w.iter_mut().zip(line.split(u8::is_ascii_whitespace).filter(|x| !x.is_empty())) {
            *slot = x;
            n += 1;
        }
        if n != 4 || w[0].len() > 63 {
            continue;
        }
        let domain = word(
            w[1],
            &[
                (&["INET", "AF_INET", "PF_INET"], libc::AF_INET),
                (&["INET6", "AF_INET6", "PF_INET6"], libc::AF_INET6),
                (&["IB", "AF_IB", "PF_IB"], AF_IB),
            ],
        );
        let ty = word(
            w[2],
            &[(&["STREAM", "SOCK_STREAM"], libc::SOCK_STREAM), (&["DGRAM", "SOCK_DGRAM"], libc::SOCK_DGRAM)],
        );
        let protocol =
            word(w[3], &[(&["TCP", "IPPROTO_TCP"], libc::IPPROTO_TCP), (&["UDP", "IPPROTO_UDP"], libc::IPPROTO_UDP)]);
        let (Some(domain), Some(ty), Some(protocol)) = (domain, ty, protocol) else { continue };
        if rules.try_reserve(1).is_err() {
            break;
        }
        let prog = if w[0] == b"*" { None } else { Prog::new(w[0]) };
        rules.push(Rule { prog, domain, ty, protocol });
    }
    rules
}

/// The configuration file's bytes (at most MAX_FILE), read with fallible
/// growth; None when it cannot be opened or read, or memory runs out.
fn read_file(path: &str) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).ok()?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while buf.len() < MAX_FILE {
        let n = match f.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n.min(MAX_FILE - buf.len()),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return None,
        };
        buf.try_reserve(n).ok()?;
        buf.extend_from_slice(&chunk[..n]);
    }
    Some(buf)
}

impl Config {
    /// Whether a socket of this kind, created by program `prog`, becomes an
    /// rsocket (`ty` without SOCK_NONBLOCK/SOCK_CLOEXEC).
    pub fn intercepts(&self, prog: &str, domain: i32, ty: i32, protocol: i32) -> bool {
        if self.rules.is_empty() {
            return true;
        }
        let protocol = match (protocol, ty) {
            (0, libc::SOCK_STREAM) => libc::IPPROTO_TCP,
            (0, libc::SOCK_DGRAM) => libc::IPPROTO_UDP,
            (p, _) => p,
        };
        self.rules.iter().any(|r| {
            r.prog.as_ref().is_none_or(|p| {
                prog.len() >= p.bytes().len() && prog.as_bytes()[..p.bytes().len()].eq_ignore_ascii_case(p.bytes())
            }) && (r.domain == 0 || r.domain == domain)
                && (r.ty == 0 || r.ty == ty)
                && (r.protocol == 0 || r.protocol == protocol)
        })
    }
}

/// An environment variable's value, read in place (no copy: getenv(3),
/// as upstream reads them).
fn env(name: &std::ffi::CStr) -> Option<&'static str> {
    // SAFETY: getenv returns NULL or a NUL-terminated string of the
    // environment, which the program does not free while it runs (the
    // same assumption upstream's getenv calls make).
    let p = unsafe { libc::getenv(name.as_ptr()) };
    if p.is_null() {
        return None;
    }
    unsafe { std::ffi::CStr::from_ptr(p) }.to_str().ok()
}

fn env_int(name: &std::ffi::CStr) -> i32 {
    env(name).and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

/// A number as atoi(3) reads it: leading blanks, a sign, the digits up to
/// the first other character; 0 when there are none (saturating instead
/// of atoi's undefined overflow).
pub fn atoi(s: &str) -> i64 {
    let s = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let mut n: i64 = 0;
    for b in digits.bytes().take_while(u8::is_ascii_digit) {
        n = n.saturating_mul(10).saturating_add(i64::from(b - b'0'));
    }
    if neg {
        -n
    } else {
        n
    }
}

/// The fork-mode wait bound from `RSPRELOAD_FORK_TIMEOUT` (seconds, 1 to
/// 3600; anything else: the default), in milliseconds.
pub fn fork_timeout_ms(v: Option<&str>) -> u64 {
    let s = v.map(atoi).filter(|s| (1..=3600).contains(s)).map_or(FORK_TIMEOUT_S, |s| s as u64);
    s * 1000
}

/// Whether this machine has an RDMA device at all (without one, the fork
/// mode stays off: no move could succeed, and a peer waiting for our
/// "ready" would wait in vain).
fn rdma_present() -> bool {
    // opendir(3) rather than std's ReadDir: its allocation can fail
    // without aborting the process (then: no fork mode).
    // SAFETY: a NUL-terminated path; the stream is closed before return.
    unsafe {
        let d = libc::opendir(c"/sys/class/infiniband".as_ptr());
        if d.is_null() {
            return false;
        }
        let mut found = false;
        loop {
            let e = libc::readdir(d);
            if e.is_null() {
                break;
            }
            let name = std::ffi::CStr::from_ptr((*e).d_name.as_ptr()).to_bytes();
            if name != b"." && name != b".." {
                found = true;
                break;
            }
        }
        libc::closedir(d);
        found
    }
}

/// The configuration, read on first use.
pub fn get() -> &'static Config {
    static C: OnceLock<Config> = OnceLock::new();
    C.get_or_init(|| Config {
        rules: read_file(FILE).map(|t| parse(&t)).unwrap_or_default(),
        sq_size: env_int(c"RS_SQ_SIZE"),
        rq_size: env_int(c"RS_RQ_SIZE"),
        inline: env_int(c"RS_INLINE"),
        fork: env(c"RDMAV_FORK_SAFE").is_some_and(|v| atoi(v) != 0) && rdma_present(),
        fork_timeout_ms: fork_timeout_ms(env(c"RSPRELOAD_FORK_TIMEOUT")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_as_upstream_reads_them() {
        let rules = parse(
            b"# comment\n\
             iperf3 INET STREAM TCP\n\
             redis af_inet6 sock_stream *\n\
             * * DGRAM udp\n\
             bad PLANET STREAM TCP\n\
             short INET\n",
        );
        assert_eq!(rules.len(), 3);
        let c = Config { rules, ..Default::default() };
        assert!(c.intercepts("iperf3", libc::AF_INET, libc::SOCK_STREAM, 0));
        assert!(c.intercepts("IPERF3-extra", libc::AF_INET, libc::SOCK_STREAM, libc::IPPROTO_TCP));
        assert!(!c.intercepts("iperf3", libc::AF_INET6, libc::SOCK_STREAM, 0));
        assert!(c.intercepts("redis-server", libc::AF_INET6, libc::SOCK_STREAM, 0));
        assert!(c.intercepts("anything", libc::AF_INET, libc::SOCK_DGRAM, 0));
        assert!(!c.intercepts("anything", libc::AF_INET, libc::SOCK_STREAM, 0));
        assert!(!c.intercepts("bad", libc::AF_INET, libc::SOCK_STREAM, 0));
        // No rules: everything.
        let all = Config::default();
        assert!(all.intercepts("x", libc::AF_INET, libc::SOCK_STREAM, 0));
    }

    #[test]
    fn names_are_bounded_and_the_file_is_read_in_bounds() {
        let long = [b'a'; 64];
        let mut text = Vec::new();
        text.extend_from_slice(&long[..63]);
        text.extend_from_slice(b" INET STREAM TCP extra words\n");
        text.extend_from_slice(&long);
        text.extend_from_slice(b" INET STREAM TCP\n");
        let rules = parse(&text);
        assert_eq!(rules.len(), 1);
        assert_eq!(rules[0].prog.as_ref().map(|p| p.bytes().len()), Some(63));
        assert_eq!(read_file("/nonexistent/preload_config"), None);
        let path = std::env::temp_dir().join(format!("rspreload-config-{}", std::process::id()));
        std::fs::write(&path, vec![b'#'; MAX_FILE + 10]).unwrap();
        assert_eq!(read_file(path.to_str().unwrap()).map(|b| b.len()), Some(MAX_FILE));
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn fork_mode_numbers_as_atoi_reads_them() {
        assert_eq!(atoi("1"), 1);
        assert_eq!(atoi("  12abc"), 12);
        assert_eq!(atoi("-1"), -1);
        assert_eq!(atoi("+7"), 7);
        assert_eq!(atoi("0"), 0);
        assert_eq!(atoi("yes"), 0);
        assert_eq!(atoi(""), 0);
        assert_eq!(atoi("- 1"), 0);
        assert_eq!(atoi("99999999999999999999999"), i64::MAX);
        assert_eq!(fork_timeout_ms(None), FORK_TIMEOUT_S * 1000);
        assert_eq!(fork_timeout_ms(Some("2")), 2000);
        assert_eq!(fork_timeout_ms(Some("0")), FORK_TIMEOUT_S * 1000);
        assert_eq!(fork_timeout_ms(Some("4000")), FORK_TIMEOUT_S * 1000);
        assert_eq!(fork_timeout_ms(Some("x")), FORK_TIMEOUT_S * 1000);
    }
}
