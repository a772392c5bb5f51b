//! The lock of the per-call paths (an id's state, an rsocket's state): a
//! mutex on the kernel's futex(2) without poisoning, and its condition
//! variable.
//!
//! `std::sync::Mutex` checks the thread's panic state when it is taken and
//! again when it is released (poisoning), which the library ignores anyway
//! (a panic never leaves an export, and every lock was taken as
//! `lock().unwrap_or_else(|e| e.into_inner())`): ~15 user-space
//! instructions per lock and unlock on paths whose whole budget is a few
//! hundred (callgrind; docs/architecture.md, "Locks"). parking_lot would do
//! the same, but its contended path allocates (its parking table grows with
//! the threads), and an allocation failure must not abort the host process.
//! This one never allocates: the state word is the futex.
//!
//! The algorithm is the classic three-state futex mutex (0 unlocked, 1
//! locked, 2 locked with waiters): taking it is one compare-exchange,
//! releasing it one swap; only a release that finds waiters makes a system
//! call.

use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU32, Ordering};

const UNLOCKED: u32 = 0;
const LOCKED: u32 = 1;
const CONTENDED: u32 = 2;

/// Wait while `*word == val` (or until woken or a signal).
fn futex_wait(word: &AtomicU32, val: u32) {
    // SAFETY: a valid futex word of this process; no timeout. Any result
    // (woken, EAGAIN: the value changed, EINTR) sends the caller back to
    // look at the word.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            val,
            std::ptr::null::<libc::timespec>(),
        )
    };
}

/// Wake up to `n` threads waiting on `word`.
fn futex_wake(word: &AtomicU32, n: i32) {
    // SAFETY: a valid futex word of this process.
    unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG, n) };
}

/// A mutex around a `T` (see the module documentation).
pub struct Lock<T: ?Sized> {
    state: AtomicU32,
    data: UnsafeCell<T>,
}

// SAFETY: the data is reached only through a guard, one at a time.
unsafe impl<T: ?Sized + Send> Send for Lock<T> {}
// SAFETY: as above.
unsafe impl<T: ?Sized + Send> Sync for Lock<T> {}

impl<T> Lock<T> {
    pub const fn new(v: T) -> Lock<T> {
        Lock { state: AtomicU32::new(UNLOCKED), data: UnsafeCell::new(v) }
    }
}

impl<T: ?Sized> Lock<T> {
    /// Take the lock (waiting for it).
    #[inline]
    pub fn lock(&self) -> LockGuard<'_, T> {
        if self.state.compare_exchange(UNLOCKED, LOCKED, Ordering::Acquire, Ordering::Relaxed).is_err() {
            self.lock_contended();
        }
        LockGuard { lock: self, _not_send: PhantomData }
    }

    #[cold]
    #[inline(never)]
    fn lock_contended(&self) {
        // A short spin first: most holders are about to let go.
        let mut s = self.spin();
        if s == UNLOCKED {
            match self.state.compare_exchange(UNLOCKED, LOCKED, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return,
                Err(v) => s = v,
            }
        }
        loop {
            // Mark it contended; if it was free, it is ours (marked
            // contended, which costs at most one needless wake-up).
            if s != CONTENDED && self.state.swap(CONTENDED, Ordering::Acquire) == UNLOCKED {
                return;
            }
            futex_wait(&self.state, CONTENDED);
            s = self.spin();
        }
    }

    /// The state once it is not plainly locked, or after a bounded spin.
    fn spin(&self) -> u32 {
        let mut n = 100;
        loop {
            let s = self.state.load(Ordering::Relaxed);
            if s != LOCKED || n == 0 {
                return s;
            }
            std::hint::spin_loop();
            n -= 1;
        }
    }

    #[inline]
    fn unlock(&self) {
        if self.state.swap(UNLOCKED, Ordering::Release) == CONTENDED {
            std::hint::cold_path();
            futex_wake(&self.state, 1);
        }
    }
}

/// The lock held; released on drop (also during unwinding: there is no
/// poisoning, the next holder finds the state as the panicking one left it,
/// as the library's use of std's mutex did).
pub struct LockGuard<'a, T: ?Sized> {
    lock: &'a Lock<T>,
    /// Released by the thread that took it (as std's guard).
    _not_send: PhantomData<*const ()>,
}

// SAFETY: a shared guard gives shared access to the data only.
unsafe impl<T: ?Sized + Sync> Sync for LockGuard<'_, T> {}

impl<T: ?Sized> Deref for LockGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the lock is held.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T: ?Sized> DerefMut for LockGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the lock is held, by this guard alone.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T: ?Sized> Drop for LockGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.lock.unlock();
    }
}

/// A condition variable for [`Lock`]: a sequence word that each
/// notification advances; a waiter sleeps while it has not moved since it
/// let the lock go.
#[derive(Default)]
pub struct Cond {
    seq: AtomicU32,
}

impl Cond {
    pub const fn new() -> Cond {
        Cond { seq: AtomicU32::new(0) }
    }

    /// Release the guard's lock, sleep until notified (or a spurious wake-up:
    /// callers look at their condition again), take the lock again.
    pub fn wait<'a, T: ?Sized>(&self, g: LockGuard<'a, T>) -> LockGuard<'a, T> {
        // Read before the lock goes: a notification after this moves it.
        let seq = self.seq.load(Ordering::Relaxed);
        let lock = g.lock;
        drop(g);
        futex_wait(&self.seq, seq);
        lock.lock()
    }

    pub fn notify_all(&self) {
        self.seq.fetch_add(1, Ordering::Relaxed);
        futex_wake(&self.seq, i32::MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn threads_take_turns_and_no_increment_is_lost() {
        let l = Arc::new(Lock::new(0u64));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let l = l.clone();
                std::thread::spawn(move || {
                    for _ in 0..20_000 {
                        let mut g = l.lock();
                        let v = *g;
                        // Widen the window for a lost update.
                        std::hint::spin_loop();
                        *g = v + 1;
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*l.lock(), 8 * 20_000);
        assert_eq!(l.state.load(Ordering::Relaxed), UNLOCKED);
    }

    #[test]
    fn a_waiter_wakes_on_notify_and_sees_the_change() {
        let pair = Arc::new((Lock::new(false), Cond::new()));
        let p2 = pair.clone();
        let t = std::thread::spawn(move || {
            let (l, c) = &*p2;
            let mut g = l.lock();
            while !*g {
                g = c.wait(g);
            }
            true
        });
        std::thread::sleep(std::time::Duration::from_millis(20));
        {
            let (l, c) = &*pair;
            *l.lock() = true;
            c.notify_all();
        }
        assert!(t.join().unwrap());
    }

    #[test]
    fn a_panic_while_holding_releases_the_lock() {
        let l = Arc::new(Lock::new(1));
        let l2 = l.clone();
        let r = std::thread::spawn(move || {
            let _g = l2.lock();
            panic!("while holding");
        })
        .join();
        assert!(r.is_err());
        assert_eq!(*l.lock(), 1);
    }
}
