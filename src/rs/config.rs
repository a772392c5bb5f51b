//! rsocket defaults and the administrator's overrides in
//! `/etc/rdma/rsocket/*` (rsocket(7)): one integer per file, read once,
//! on the first `rsocket()` call; a missing or unreadable file keeps the
//! default.

use std::sync::OnceLock;

/// Where the configuration files live (`${sysconfdir}/rdma/rsocket`).
pub(crate) const CONF_DIR: &str = "/etc/rdma/rsocket";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Microseconds a blocking call polls before it sleeps.
    pub polling_time: u32,
    /// Longest single sleep of rpoll, in milliseconds.
    pub wake_up_interval: i32,
    pub inline_default: u16,
    pub sqsize_default: u16,
    pub rqsize_default: u16,
    /// Receive and send buffer bytes.
    pub mem_default: u32,
    pub wmem_default: u32,
    pub iomap_size: u16,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            polling_time: 10,
            wake_up_interval: 500,
            inline_default: 64,
            sqsize_default: 384,
            rqsize_default: 384,
            mem_default: 1 << 17,
            wmem_default: 1 << 17,
            iomap_size: 0,
        }
    }
}

/// The first decimal integer in a file (leading blanks and sign allowed).
fn read_int(name: &str) -> Option<i64> {
    // (std's read_to_string and Path::join allocate infallibly)
    let path = crate::sysfs::SPath::new(CONF_DIR.as_bytes())?.join(name.as_bytes())?;
    let s = crate::sysfs::read_attr(&path)?;
    let t = s.as_str().trim_start();
    let (neg, d) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let digits: &str = &d[..d.bytes().take_while(u8::is_ascii_digit).count()];
    let v: i64 = digits.parse().ok()?;
    Some(if neg { -v } else { v })
}

impl Config {
    /// Apply the files found through `read` to the defaults.
    pub fn with(read: impl Fn(&str) -> Option<i64>) -> Config {
        let mut c = Config::default();
        let u16v = |v: i64| (0..=u16::MAX as i64).contains(&v).then_some(v as u16);
        if let Some(v) = read("polling_time").filter(|v| (0..=u32::MAX as i64).contains(v)) {
            c.polling_time = v as u32;
        }
        if let Some(v) = read("wake_up_interval").filter(|v| (1..=i32::MAX as i64).contains(v)) {
            c.wake_up_interval = v as i32;
        }
        if let Some(v) = read("inline_default").and_then(u16v) {
            c.inline_default = v;
        }
        if let Some(v) = read("sqsize_default").and_then(u16v) {
            c.sqsize_default = v;
        }
        if let Some(v) = read("rqsize_default").and_then(u16v) {
            c.rqsize_default = v;
        }
        if let Some(v) = read("mem_default").filter(|v| (1..=u32::MAX as i64).contains(v)) {
            c.mem_default = v as u32;
        }
        if let Some(v) = read("wmem_default").filter(|v| (0..=u32::MAX as i64).contains(v)) {
            c.wmem_default = if v < 2048 { 4096 } else { v as u32 };
        }
        if let Some(v) = read("iomap_size").and_then(u16v) {
            // The value the 8-bit scale encoding can carry (upstream keeps
            // the encoded byte here by mistake).
            c.iomap_size = super::wire::scale_to_value(super::wire::value_to_scale(v as u32)) as u16;
        }
        c
    }
}

/// The process's configuration, read on first use.
pub fn get() -> &'static Config {
    static CONF: OnceLock<Config> = OnceLock::new();
    CONF.get_or_init(|| Config::with(read_int))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_override_defaults() {
        let c = Config::with(|n| match n {
            "sqsize_default" => Some(128),
            "wmem_default" => Some(100),
            "iomap_size" => Some(300),
            "inline_default" => Some(-5),
            _ => None,
        });
        assert_eq!(c.sqsize_default, 128);
        assert_eq!(c.wmem_default, 4096, "below the low-water mark");
        assert_eq!(c.iomap_size, 256, "rounded through the scale encoding");
        assert_eq!(c.inline_default, 64, "out of range: default kept");
        assert_eq!(Config::with(|_| None), Config::default());
    }
}

/// Socket options and sizes (rsetsockopt(3)).
#[derive(Clone, Debug)]
pub struct Opts {
    pub sq_size: u32,
    pub rq_size: u32,
    pub sq_inline: u32,
    pub rbuf_size: u32,
    pub sbuf_size: u32,
    /// Our iomap table length (what the peer may map into us).
    pub iomap_size: u32,
    /// O_NONBLOCK and the other status flags (F_GETFL/F_SETFL).
    pub fs_flags: i32,
    /// FD_CLOEXEC (F_GETFD/F_SETFD).
    pub fd_flags: i32,
    /// Option bits by level (1 << optname), as upstream keeps them.
    pub so_opts: u64,
    pub tcp_opts: u64,
    pub ipv6_opts: u64,
    pub ip_tos: i32,
    /// Keepalive period in seconds (0: not set, use the system's).
    pub keepalive_time: u32,
    pub keepalive: bool,
    /// RDMA_ROUTE: path records to use instead of route resolution.
    pub route: Option<Vec<u8>>,
}

impl Opts {
    pub fn defaults() -> Opts {
        let c = get();
        Opts {
            sq_size: c.sqsize_default as u32,
            rq_size: c.rqsize_default as u32,
            sq_inline: c.inline_default as u32,
            rbuf_size: c.mem_default,
            sbuf_size: c.wmem_default,
            iomap_size: c.iomap_size as u32,
            fs_flags: 0,
            fd_flags: 0,
            so_opts: 0,
            tcp_opts: 0,
            ipv6_opts: 0,
            ip_tos: 0,
            keepalive_time: 0,
            keepalive: false,
            route: None,
        }
    }

    /// What an accepted socket takes from its listener (sizes and flags).
    pub fn inherit(&self) -> Opts {
        Opts { keepalive: false, route: None, so_opts: 0, tcp_opts: 0, ipv6_opts: 0, ..self.clone() }
    }

    pub fn nonblocking(&self) -> bool {
        self.fs_flags & libc::O_NONBLOCK != 0
    }
}
