//! `rsetsockopt` and `rgetsockopt` (rsocket(7)): the options upstream
//! supports, with its values and errno, except that option lengths are
//! checked (upstream reads an `int` from any buffer it is given).
//!
//! On a datagram socket every option outside SOL_RDMA is first set on its
//! UDP socket (the kernel's error, if any, is the answer), then recorded as
//! upstream records it; what the UDP socket accepts and rsockets do not
//! know is accepted. Reads are never forwarded.

use super::config::Opts;
use super::dgram::DgSocket;
use super::engine;
use super::socket::{Phase, RSocket};
use super::wire;
use crate::abi::{
    RDMA_INLINE, RDMA_IOMAPSIZE, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, RDMA_OPTION_ID_REUSEADDR, RDMA_OPTION_ID_TOS,
    RDMA_ROUTE, RDMA_RQSIZE, RDMA_SQSIZE, SOL_RDMA,
};
use crate::cmem::Shared;
use crate::error::{Error, Result};
use crate::ucma::KernelBuf;

/// `tcpi_state` values (netinet/tcp.h).
const TCP_ESTABLISHED: u8 = 1;
const TCP_CLOSE: u8 = 7;

/// Queue sizes and inline data are clamped to this.
const QP_MAX: u32 = 0xFFFE;
/// The smallest send buffer (twice the send low-water mark).
const MIN_SBUF: u32 = 2 * super::flow::SEND_LOWAT;

fn int_of(v: &[u8]) -> Result<i32> {
    Ok(i32::from_ne_bytes(v.get(..4).ok_or(Error::INVAL)?.try_into().expect("4 bytes")))
}

fn bit(opts: &mut u64, name: i32, on: bool) {
    if (0..64).contains(&name) {
        if on {
            *opts |= 1 << name;
        } else {
            *opts &= !(1 << name);
        }
    }
}

fn has(opts: u64, name: i32) -> bool {
    (0..64).contains(&name) && opts & (1 << name) != 0
}

pub fn set(s: &Shared<RSocket>, level: i32, name: i32, val: &[u8]) -> Result<()> {
    let mut g = s.lock();
    match (level, name) {
        (libc::SOL_SOCKET, libc::SO_REUSEADDR) => {
            let on = int_of(val)?;
            let r = g.id.set_option(RDMA_OPTION_ID as u32, RDMA_OPTION_ID_REUSEADDR as u32, KernelBuf::of(val));
            // As upstream: not supported by the kernel, or an IB id already
            // past its first state, is not an error.
            if let Err(Error::Errno(e)) = r {
                let ib_bound = g.phase != Phase::Init && g.id.transport() == Some(crate::verbs::IBV_TRANSPORT_IB);
                if e != libc::ENOSYS && !ib_bound {
                    return Err(Error::Errno(e));
                }
            }
            bit(&mut g.opts.so_opts, name, on != 0);
        }
        (libc::SOL_SOCKET, libc::SO_RCVBUF) => {
            let v = int_of(val)? as u32;
            if g.conn.is_none() {
                g.opts.rbuf_size = v.saturating_mul(2);
            }
        }
        (libc::SOL_SOCKET, libc::SO_SNDBUF) => {
            let v = int_of(val)? as u32;
            if g.conn.is_none() {
                g.opts.sbuf_size = v.saturating_mul(2);
            }
            if g.opts.sbuf_size < super::flow::SEND_LOWAT {
                g.opts.sbuf_size = MIN_SBUF;
            }
        }
        (libc::SOL_SOCKET, libc::SO_LINGER) => {
            // Only l_onoff, the first int, is looked at (as upstream).
            // Kept inverted, so that the default reads "on".
            let on = int_of(val)? != 0;
            bit(&mut g.opts.so_opts, name, !on);
        }
        (libc::SOL_SOCKET, libc::SO_KEEPALIVE) => {
            let on = int_of(val)? != 0;
            g.opts.keepalive = on;
            g.keepalive_due = None;
            if on && g.opts.keepalive_time == 0 {
                // The idle time TCP_KEEPIDLE reports from now on: the
                // system's TCP keepalive time (as upstream).
                g.opts.keepalive_time = system_keepalive_time();
            }
            bit(&mut g.opts.so_opts, name, on);
            drop(g);
            return engine::set_keepalive(s, on);
        }
        (libc::SOL_SOCKET, libc::SO_OOBINLINE) => {
            let on = int_of(val)? != 0;
            bit(&mut g.opts.so_opts, name, on);
        }
        (libc::IPPROTO_IP, libc::IP_TOS) => {
            g.opts.ip_tos = int_of(val)?;
            g.id.set_option(RDMA_OPTION_ID as u32, RDMA_OPTION_ID_TOS as u32, KernelBuf::of(&val[..1]))?;
        }
        (libc::IPPROTO_TCP, libc::TCP_KEEPCNT | libc::TCP_KEEPINTVL | libc::TCP_MAXSEG | libc::TCP_CONGESTION) => {}
        (libc::IPPROTO_TCP, libc::TCP_KEEPIDLE) => {
            let v = int_of(val)?;
            if v <= 0 {
                return Err(Error::INVAL);
            }
            g.opts.keepalive_time = v as u32;
            g.keepalive_due = None;
            let on = g.opts.keepalive;
            drop(g);
            if on {
                return engine::set_keepalive(s, true);
            }
            return Ok(());
        }
        (libc::IPPROTO_TCP, libc::TCP_NODELAY) => {
            let on = int_of(val)? != 0;
            bit(&mut g.opts.tcp_opts, name, on);
        }
        (libc::IPPROTO_IPV6, libc::IPV6_V6ONLY) => {
            let on = int_of(val)? != 0;
            g.id.set_option(RDMA_OPTION_ID as u32, RDMA_OPTION_ID_AFONLY as u32, KernelBuf::of(val))?;
            bit(&mut g.opts.ipv6_opts, name, on);
        }
        (SOL_RDMA, _) => {
            if g.phase.opening() || g.conn.is_some() || matches!(g.phase, Phase::Connected | Phase::ConnectError) {
                return Err(Error::INVAL);
            }
            set_rdma(&mut g.opts, name, val)?;
        }
        _ => return Err(Error::Errno(libc::ENOTSUP)),
    }
    Ok(())
}

/// An SOL_RDMA option (queue sizes, inline size, iomap size, route) into
/// `opts`, for a stream or a datagram socket; its state was checked.
fn set_rdma(opts: &mut Opts, name: i32, val: &[u8]) -> Result<()> {
    match name {
        RDMA_SQSIZE => opts.sq_size = (int_of(val)? as u32).min(QP_MAX),
        RDMA_RQSIZE => opts.rq_size = (int_of(val)? as u32).min(QP_MAX),
        RDMA_INLINE => opts.sq_inline = (int_of(val)? as u32).min(QP_MAX),
        RDMA_IOMAPSIZE => {
            let v = int_of(val)?.max(0) as u32;
            opts.iomap_size = wire::scale_to_value(wire::value_to_scale(v));
        }
        RDMA_ROUTE => {
            let mut v = Vec::new();
            v.try_reserve_exact(val.len()).map_err(|_| Error::NOMEM)?;
            v.extend_from_slice(val);
            opts.route = Some(v);
        }
        _ => return Err(Error::Errno(libc::ENOTSUP)),
    }
    Ok(())
}

/// `rsetsockopt` on a datagram socket.
pub fn set_dgram(s: &Shared<DgSocket>, level: i32, name: i32, val: &[u8]) -> Result<()> {
    if level != SOL_RDMA {
        s.udp().setsockopt(level, name, val)?;
    }
    let mut g = s.lock();
    let on = || int_of(val).map(|v| v != 0);
    match (level, name) {
        (libc::SOL_SOCKET, libc::SO_REUSEADDR | libc::SO_KEEPALIVE | libc::SO_OOBINLINE) => {
            // Recorded only: a datagram socket has no keepalive.
            let v = on()?;
            bit(&mut g.opts.so_opts, name, v);
        }
        (libc::SOL_SOCKET, libc::SO_RCVBUF) => {
            let v = int_of(val)? as u32;
            if !g.has_qp() {
                g.opts.rbuf_size = v.saturating_mul(2);
            }
        }
        (libc::SOL_SOCKET, libc::SO_SNDBUF) => {
            let v = int_of(val)? as u32;
            if !g.has_qp() {
                g.opts.sbuf_size = v.saturating_mul(2);
            }
            if g.opts.sbuf_size < super::flow::SEND_LOWAT {
                g.opts.sbuf_size = MIN_SBUF;
            }
        }
        (libc::SOL_SOCKET, libc::SO_LINGER) => {
            let v = on()?;
            bit(&mut g.opts.so_opts, name, !v);
        }
        (libc::IPPROTO_IP, libc::IP_TOS) => g.opts.ip_tos = int_of(val)?,
        (libc::IPPROTO_TCP, libc::TCP_NODELAY) => {
            let v = on()?;
            bit(&mut g.opts.tcp_opts, name, v);
        }
        (libc::IPPROTO_IPV6, libc::IPV6_V6ONLY) => {
            let v = on()?;
            bit(&mut g.opts.ipv6_opts, name, v);
        }
        (SOL_RDMA, _) => {
            if g.ready {
                return Err(Error::INVAL);
            }
            set_rdma(&mut g.opts, name, val)?;
        }
        _ => {}
    }
    Ok(())
}

/// `rgetsockopt` on a datagram socket: the value written into `out`, and
/// its length.
pub fn get_dgram(s: &Shared<DgSocket>, level: i32, name: i32, out: &mut [u8]) -> Result<usize> {
    let mut g = s.lock();
    let sq = g.opts.sq_size;
    match (level, name) {
        (libc::SOL_SOCKET, libc::SO_ERROR) => {
            let e = std::mem::take(&mut g.err);
            put_int(out, e)
        }
        // No route: the default segment size (as upstream without an id).
        (libc::IPPROTO_TCP, libc::TCP_MAXSEG) => put_int(out, 2048),
        (libc::IPPROTO_TCP, libc::TCP_INFO) => {
            let n = std::mem::size_of::<libc::tcp_info>().min(out.len());
            out[..n].fill(0);
            if n > 0 {
                out[0] = TCP_CLOSE;
            }
            let off = std::mem::offset_of!(libc::tcp_info, tcpi_snd_cwnd);
            if n >= off + 4 {
                out[off..off + 4].copy_from_slice(&sq.to_ne_bytes());
            }
            Ok(n)
        }
        (SOL_RDMA, RDMA_ROUTE) => match g.opts.route.as_ref() {
            Some(r) => {
                let dst = out.get_mut(..r.len()).ok_or(Error::INVAL)?;
                dst.copy_from_slice(r);
                Ok(r.len())
            }
            // A datagram socket has no route of its own.
            None => Err(Error::INVAL),
        },
        _ => get_common(&g.opts, level, name, out).unwrap_or(Err(Error::Errno(libc::ENOTSUP))),
    }
}

/// The reads that depend on the recorded options only (both kinds of
/// socket); None for the others.
fn get_common(o: &super::config::Opts, level: i32, name: i32, out: &mut [u8]) -> Option<Result<usize>> {
    Some(match (level, name) {
        (libc::SOL_SOCKET, libc::SO_REUSEADDR | libc::SO_KEEPALIVE | libc::SO_OOBINLINE) => {
            put_int(out, has(o.so_opts, name) as i32)
        }
        (libc::SOL_SOCKET, libc::SO_RCVBUF) => put_int(out, o.rbuf_size as i32),
        (libc::SOL_SOCKET, libc::SO_SNDBUF) => put_int(out, o.sbuf_size as i32),
        (libc::SOL_SOCKET, libc::SO_LINGER) => {
            let n = std::mem::size_of::<libc::linger>();
            match out.get_mut(..n) {
                None => Err(Error::INVAL),
                Some(dst) => {
                    dst[..4].copy_from_slice(&(!has(o.so_opts, name) as i32).to_ne_bytes());
                    dst[4..8].copy_from_slice(&0i32.to_ne_bytes());
                    Ok(n)
                }
            }
        }
        // Accepted, nothing reported (as upstream).
        (libc::SOL_SOCKET, libc::SO_BROADCAST) => Ok(out.len()),
        (libc::IPPROTO_IP, libc::IP_TOS) => put_int(out, o.ip_tos),
        (libc::IPPROTO_TCP, libc::TCP_KEEPCNT | libc::TCP_KEEPINTVL | libc::TCP_CONGESTION) => {
            // "Not applicable": 1, the length left as given (upstream).
            put_int(out, 1).map(|_| out.len())
        }
        (libc::IPPROTO_TCP, libc::TCP_KEEPIDLE) => put_int(out, o.keepalive_time as i32),
        (libc::IPPROTO_TCP, libc::TCP_NODELAY) => put_int(out, has(o.tcp_opts, name) as i32),
        (libc::IPPROTO_IPV6, libc::IPV6_V6ONLY) => put_int(out, has(o.ipv6_opts, name) as i32),
        (SOL_RDMA, RDMA_SQSIZE) => put_int(out, o.sq_size as i32),
        (SOL_RDMA, RDMA_RQSIZE) => put_int(out, o.rq_size as i32),
        (SOL_RDMA, RDMA_INLINE) => put_int(out, o.sq_inline as i32),
        (SOL_RDMA, RDMA_IOMAPSIZE) => put_int(out, o.iomap_size as i32),
        _ => return None,
    })
}

/// Write an int option value; its length.
fn put_int(out: &mut [u8], v: i32) -> Result<usize> {
    out.get_mut(..4).ok_or(Error::INVAL)?.copy_from_slice(&v.to_ne_bytes());
    Ok(4)
}

/// `rgetsockopt`: the value written into `out`, and its length.
pub fn get(s: &Shared<RSocket>, level: i32, name: i32, out: &mut [u8]) -> Result<usize> {
    let mut g = s.lock();
    match (level, name) {
        (libc::SOL_SOCKET, libc::SO_REUSEADDR | libc::SO_KEEPALIVE | libc::SO_OOBINLINE) => {
            put_int(out, has(g.opts.so_opts, name) as i32)
        }
        (libc::SOL_SOCKET, libc::SO_RCVBUF) => put_int(out, g.opts.rbuf_size as i32),
        (libc::SOL_SOCKET, libc::SO_SNDBUF) => put_int(out, g.opts.sbuf_size as i32),
        (libc::SOL_SOCKET, libc::SO_LINGER) => {
            let l = libc::linger { l_onoff: !has(g.opts.so_opts, name) as i32, l_linger: 0 };
            let n = std::mem::size_of::<libc::linger>();
            let dst = out.get_mut(..n).ok_or(Error::INVAL)?;
            dst[..4].copy_from_slice(&l.l_onoff.to_ne_bytes());
            dst[4..8].copy_from_slice(&l.l_linger.to_ne_bytes());
            Ok(n)
        }
        (libc::SOL_SOCKET, libc::SO_ERROR) => {
            let e = std::mem::take(&mut g.err);
            put_int(out, e)
        }
        // Accepted, nothing reported (as upstream).
        (libc::SOL_SOCKET, libc::SO_BROADCAST) => Ok(out.len()),
        (libc::IPPROTO_IP, libc::IP_TOS) => put_int(out, g.opts.ip_tos),
        (libc::IPPROTO_TCP, libc::TCP_KEEPCNT | libc::TCP_KEEPINTVL | libc::TCP_CONGESTION) => {
            // "Not applicable": 1, the length left as given (upstream).
            put_int(out, 1)?;
            Ok(out.len())
        }
        (libc::IPPROTO_TCP, libc::TCP_KEEPIDLE) => put_int(out, g.opts.keepalive_time as i32),
        (libc::IPPROTO_TCP, libc::TCP_NODELAY) => put_int(out, has(g.opts.tcp_opts, name) as i32),
        (libc::IPPROTO_TCP, libc::TCP_MAXSEG) => {
            let mss = g.id.path_mtu().map_or(2048, |mtu| 1 << (7 + mtu as i32));
            put_int(out, mss)
        }
        (libc::IPPROTO_TCP, libc::TCP_INFO) => {
            let n = std::mem::size_of::<libc::tcp_info>().min(out.len());
            out[..n].fill(0);
            // tcpi_state (offset 0): ESTABLISHED while connected (upstream
            // compares its state word with one bit and reports CLOSE).
            if n > 0 {
                out[0] = if g.phase == Phase::Connected { TCP_ESTABLISHED } else { TCP_CLOSE };
            }
            // tcpi_snd_cwnd: the send queue size.
            let off = std::mem::offset_of!(libc::tcp_info, tcpi_snd_cwnd);
            if n >= off + 4 {
                let sq = g.conn.as_ref().map_or(g.opts.sq_size, |c| c.sq_size);
                out[off..off + 4].copy_from_slice(&sq.to_ne_bytes());
            }
            Ok(n)
        }
        (libc::IPPROTO_IPV6, libc::IPV6_V6ONLY) => put_int(out, has(g.opts.ipv6_opts, name) as i32),
        (SOL_RDMA, RDMA_SQSIZE) => put_int(out, g.conn.as_ref().map_or(g.opts.sq_size, |c| c.sq_size) as i32),
        (SOL_RDMA, RDMA_RQSIZE) => put_int(out, g.conn.as_ref().map_or(g.opts.rq_size, |c| c.rq_size) as i32),
        (SOL_RDMA, RDMA_INLINE) => put_int(out, g.conn.as_ref().map_or(g.opts.sq_inline, |c| c.sq_inline) as i32),
        (SOL_RDMA, RDMA_IOMAPSIZE) => put_int(out, g.opts.iomap_size as i32),
        (SOL_RDMA, RDMA_ROUTE) => {
            if let Some(r) = g.opts.route.as_ref() {
                let dst = out.get_mut(..r.len()).ok_or(Error::INVAL)?;
                dst.copy_from_slice(r);
                Ok(r.len())
            } else {
                g.id.path_data_into(out)
            }
        }
        _ => Err(Error::Errno(libc::ENOTSUP)),
    }
}

/// The system's TCP keepalive time in seconds (7200 if unreadable).
fn system_keepalive_time() -> u32 {
    crate::sysfs::SPath::new(b"/proc/sys/net/ipv4/tcp_keepalive_time")
        .and_then(|p| crate::sysfs::read_attr(&p))
        .and_then(|s| s.as_str().trim().parse::<u32>().ok())
        .filter(|&v| v > 0)
        .unwrap_or(7200)
}
