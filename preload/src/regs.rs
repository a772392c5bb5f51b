//! Fork mode: the epoll registrations of TCP sockets that are to become
//! rsockets. Every epoll instance under the preload is a repoll instance,
//! which keeps the caller's event data itself (the kernel holds the
//! descriptor number), so the preload notes what the application
//! registered for such a socket and registers the rsocket the same way
//! once it replaced TCP (`migrate.rs`).

use libc::c_int;

/// At most this many registrations are followed (more do not survive a
/// move); at most `TAKEN` for one descriptor.
pub const MAX_REGS: usize = 64;
pub const TAKEN: usize = 8;

/// An epoll registration of a fork-mode TCP socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Registration {
    pub fd: c_int,
    pub ep: c_int,
    pub events: u32,
    pub data: u64,
}

pub type Table = [Option<Registration>; MAX_REGS];

/// Registrations taken out of the table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Taken([Option<Registration>; TAKEN]);

impl Taken {
    pub fn iter(&self) -> impl Iterator<Item = &Registration> {
        self.0.iter().flatten()
    }
}

/// Apply an epoll_ctl that succeeded (`ev`: the events and data of ADD or
/// MOD) to the table; false when ADD/MOD found no room.
pub fn record(table: &mut [Option<Registration>], ep: c_int, op: c_int, fd: c_int, ev: Option<(u32, u64)>) -> bool {
    let at = table.iter().position(|g| g.is_some_and(|g| g.ep == ep && g.fd == fd));
    match (op, ev) {
        (libc::EPOLL_CTL_DEL, _) => {
            if let Some(i) = at {
                table[i] = None;
            }
            true
        }
        (libc::EPOLL_CTL_ADD | libc::EPOLL_CTL_MOD, Some((events, data))) => {
            let Some(i) = at.or_else(|| table.iter().position(Option::is_none)) else { return false };
            table[i] = Some(Registration { fd, ep, events, data });
            true
        }
        _ => true,
    }
}

/// Remove every registration `f` selects; the first `TAKEN` of them.
pub fn remove_where(table: &mut [Option<Registration>], f: impl Fn(&Registration) -> bool) -> Taken {
    let mut out = Taken::default();
    let mut n = 0;
    for g in table.iter_mut() {
        if g.is_some_and(|x| f(&x)) {
            if n < TAKEN {
                out.0[n] = *g;
                n += 1;
            }
            *g = None;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use libc::{EPOLL_CTL_ADD as ADD, EPOLL_CTL_DEL as DEL, EPOLL_CTL_MOD as MOD};

    #[test]
    fn registrations_follow_epoll_ctl() {
        let mut t: Table = [None; MAX_REGS];
        assert!(record(&mut t, 10, ADD, 5, Some((1, 0xaa))));
        assert!(record(&mut t, 11, ADD, 5, Some((4, 0xbb))));
        assert!(record(&mut t, 10, ADD, 6, Some((1, 0xcc))));
        // MOD replaces the instance's entry for the descriptor.
        assert!(record(&mut t, 10, MOD, 5, Some((5, 0xdd))));
        assert_eq!(t.iter().flatten().count(), 3);
        // DEL of something never recorded changes nothing.
        assert!(record(&mut t, 12, DEL, 5, None));
        assert_eq!(t.iter().flatten().count(), 3);
        let mut got: Vec<Registration> = remove_where(&mut t, |g| g.fd == 5).iter().copied().collect();
        got.sort_by_key(|g| g.ep);
        assert_eq!(
            got,
            [
                Registration { fd: 5, ep: 10, events: 5, data: 0xdd },
                Registration { fd: 5, ep: 11, events: 4, data: 0xbb }
            ]
        );
        assert_eq!(t.iter().flatten().count(), 1);
        // An instance closed: its registrations go.
        assert_eq!(remove_where(&mut t, |g| g.ep == 10).iter().count(), 1);
        assert!(t.iter().all(Option::is_none));
        // DEL removes.
        assert!(record(&mut t, 3, ADD, 4, Some((1, 1))));
        assert!(record(&mut t, 3, DEL, 4, None));
        assert!(t.iter().all(Option::is_none));
    }

    #[test]
    fn a_full_table_refuses_and_taking_is_bounded() {
        let mut t: Table = [None; MAX_REGS];
        for i in 0..MAX_REGS as c_int {
            assert!(record(&mut t, 100 + i, ADD, 7, Some((1, i as u64))));
        }
        assert!(!record(&mut t, 999, ADD, 8, Some((1, 0))), "no room");
        assert!(record(&mut t, 100, MOD, 7, Some((4, 0))), "an existing entry still changes");
        assert_eq!(remove_where(&mut t, |g| g.fd == 7).iter().count(), TAKEN);
        assert!(t.iter().all(Option::is_none), "all removed, the first TAKEN returned");
        // ADD or MOD without an event records nothing.
        assert!(record(&mut t, 1, ADD, 2, None));
        assert!(t.iter().all(Option::is_none));
    }
}
