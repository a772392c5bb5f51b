//! Memory the library hands to C, and the owners of its own objects.
//!
//! Every allocation a C call makes goes through this module or through a
//! `try_reserve`, so that an exhausted heap is an `ENOMEM` result and never
//! the Rust allocator's abort (docs/architecture.md, "Memory").
//!
//! - `malloc`-family helpers for blocks C frees itself (`rdma_freeaddrinfo`
//!   frees lists member by member, `rdma_free_devices` frees the array).
//! - [`try_box`]: a `Box` whose allocation failure is an error.
//! - [`Shared`]: a reference-counted owner (an `Arc` whose construction is
//!   fallible). Ids, channels, devices and memberships are `Shared`: the
//!   pointer C holds is [`Shared::as_ptr`], and every call that uses one of
//!   them holds a counted reference, so a concurrent destroy never frees
//!   memory that another call is still using.

use crate::error::{Error, Result};
use crate::slab::Slab;
use std::alloc::{alloc, dealloc, Layout};
use std::ffi::CStr;
use std::marker::PhantomData;
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicUsize, Ordering};

/// `malloc(n)` (at least one byte), ENOMEM on failure.
pub fn malloc(n: usize) -> Result<NonNull<u8>> {
    // SAFETY: plain allocation; the block is owned by the caller.
    NonNull::new(unsafe { libc::malloc(n.max(1)) } as *mut u8).ok_or(Error::NOMEM)
}

/// One zeroed `T` from `calloc` (for C structs whose all-zero pattern is
/// valid), ENOMEM on failure.
pub fn calloc1<T>() -> Result<NonNull<T>> {
    // malloc and zero rather than calloc: glibc's calloc bypasses its
    // per-thread cache, so the small blocks made and freed on every
    // rdma_getaddrinfo would take its slow path each time.
    let n = std::mem::size_of::<T>().max(1);
    // (black_box: otherwise the compiler turns malloc + zeroing back
    // into calloc.)
    let p = std::hint::black_box(malloc(n)?);
    // SAFETY: p has room for n bytes.
    unsafe { std::ptr::write_bytes(p.as_ptr(), 0, n) };
    Ok(p.cast())
}

/// A `malloc` copy of `items`.
pub fn copy_out<T: Copy>(items: &[T]) -> Result<NonNull<T>> {
    let n = std::mem::size_of_val(items);
    let p = malloc(n)?;
    // SAFETY: p has room for n bytes; items is n bytes of plain data.
    unsafe { std::ptr::copy_nonoverlapping(items.as_ptr() as *const u8, p.as_ptr(), n) };
    Ok(p.cast())
}

/// `strdup`, ENOMEM on failure.
pub fn strdup(s: &CStr) -> Result<NonNull<libc::c_char>> {
    // SAFETY: s is a valid C string.
    NonNull::new(unsafe { libc::strdup(s.as_ptr()) }).ok_or(Error::NOMEM)
}

/// An owned `malloc` copy of a C string (the fallible `CString`).
pub struct MStr(NonNull<libc::c_char>);

// SAFETY: a private heap block, never shared.
unsafe impl Send for MStr {}
// SAFETY: only read through &self.
unsafe impl Sync for MStr {}

impl MStr {
    /// A copy of `s`, or ENOMEM.
    pub fn new(s: &CStr) -> Result<MStr> {
        strdup(s).map(MStr)
    }

    pub fn as_cstr(&self) -> &CStr {
        // SAFETY: a NUL-terminated copy owned by self.
        unsafe { CStr::from_ptr(self.0.as_ptr()) }
    }

    /// A second copy, or ENOMEM.
    pub fn try_clone(&self) -> Result<MStr> {
        MStr::new(self.as_cstr())
    }
}

impl Drop for MStr {
    fn drop(&mut self) {
        // SAFETY: our strdup block, freed once.
        unsafe { free(self.0.as_ptr()) }
    }
}

impl PartialEq for MStr {
    fn eq(&self, o: &Self) -> bool {
        self.as_cstr() == o.as_cstr()
    }
}

impl std::fmt::Debug for MStr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_cstr())
    }
}

/// `v.push(x)`, growing with `try_reserve`: ENOMEM instead of an abort.
pub fn push<T>(v: &mut Vec<T>, x: T) -> Result<()> {
    v.try_reserve(1).map_err(|_| Error::NOMEM)?;
    v.push(x);
    Ok(())
}

/// A `Vec` holding `x` alone, or ENOMEM.
pub fn vec1<T>(x: T) -> Result<Vec<T>> {
    let mut v = Vec::new();
    push(&mut v, x)?;
    Ok(v)
}

/// A `Vec` copy of `items`, or ENOMEM.
pub fn to_vec<T: Clone>(items: &[T]) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(items.len()).map_err(|_| Error::NOMEM)?;
    v.extend_from_slice(items);
    Ok(v)
}

/// `free` of a block from this module (or NULL).
///
/// # Safety
/// `p` is NULL or a block from `malloc`/`calloc`/`strdup` not freed yet.
#[inline]
pub unsafe fn free<T>(p: *mut T) {
    // (NULL tested here: lists such as rdma_getaddrinfo's have several
    // NULL members per node, and each free(NULL) is a call into libc.)
    if !p.is_null() {
        // SAFETY: as the caller promises.
        unsafe { libc::free(p as *mut libc::c_void) }
    }
}

/// `Box::new` that reports an exhausted heap as ENOMEM.
pub fn try_box<T>(value: T) -> Result<Box<T>> {
    let layout = Layout::new::<T>();
    if layout.size() == 0 {
        return Ok(Box::new(value));
    }
    // SAFETY: non-zero size.
    let p = unsafe { alloc(layout) } as *mut T;
    if p.is_null() {
        return Err(Error::NOMEM);
    }
    // SAFETY: p is a fresh allocation of T's layout from the global
    // allocator, which is what Box::from_raw requires.
    unsafe {
        p.write(value);
        Ok(Box::from_raw(p))
    }
}

/// Start a detached thread named `name` running `f`, or fail with ENOMEM.
///
/// `std::thread::Builder::spawn` reports pthread_create's failure, but
/// allocates its own bookkeeping (the thread handle, the result packet,
/// the boxed closure) infallibly: under an exhausted heap it aborts. Here
/// the closure's box is the one allocation, made with [`try_box`]; the
/// thread is a plain pthread (std's `thread::current()` still works in it).
/// A panic in `f` ends the thread, never unwinds into C.
pub fn spawn<F: FnOnce() + Send + 'static>(name: &CStr, f: F) -> Result<()> {
    extern "C" fn start<F: FnOnce()>(arg: *mut libc::c_void) -> *mut libc::c_void {
        // SAFETY: arg is the box spawn leaked for this thread alone.
        let f = unsafe { Box::from_raw(arg as *mut F) };
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        std::ptr::null_mut()
    }
    let raw = Box::into_raw(try_box(f)?);
    // SAFETY: attr is initialised before use and destroyed after; the
    // thread owns `raw` once pthread_create succeeded, else we take it back.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        let mut rc = libc::pthread_attr_init(&mut attr);
        if rc == 0 {
            rc = libc::pthread_attr_setdetachstate(&mut attr, libc::PTHREAD_CREATE_DETACHED);
            let mut t: libc::pthread_t = 0;
            if rc == 0 {
                rc = libc::pthread_create(&mut t, &attr, start::<F>, raw as *mut libc::c_void);
            }
            libc::pthread_attr_destroy(&mut attr);
            if rc == 0 {
                // (a name longer than 15 bytes is refused: the thread runs unnamed)
                libc::pthread_setname_np(t, name.as_ptr());
                return Ok(());
            }
        }
        drop(Box::from_raw(raw));
        Err(Error::Errno(if rc == libc::EAGAIN { libc::ENOMEM } else { rc }))
    }
}

/// A value set at most once and then read without a lock (std's `OnceLock`
/// runs a closure through its `Once` state machine on every set).
pub struct SetOnce<T> {
    /// EMPTY, then BUSY while the one setter writes, then SET.
    state: std::sync::atomic::AtomicU8,
    value: std::cell::UnsafeCell<std::mem::MaybeUninit<T>>,
}

const ONCE_EMPTY: u8 = 0;
const ONCE_BUSY: u8 = 1;
const ONCE_SET: u8 = 2;

// SAFETY: as OnceLock: the value is shared between threads once set, and
// may be set from any of them.
unsafe impl<T: Send + Sync> Sync for SetOnce<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for SetOnce<T> {}

impl<T> SetOnce<T> {
    pub const fn new() -> Self {
        SetOnce {
            state: std::sync::atomic::AtomicU8::new(ONCE_EMPTY),
            value: std::cell::UnsafeCell::new(std::mem::MaybeUninit::uninit()),
        }
    }

    /// The value, once set (None while unset or being set).
    pub fn get(&self) -> Option<&T> {
        // SAFETY: SET is stored (Release) after the value was written, and
        // the value never changes afterwards.
        (self.state.load(Ordering::Acquire) == ONCE_SET).then(|| unsafe { (*self.value.get()).assume_init_ref() })
    }

    /// Set the value; hands it back if it was set (or is being set)
    /// already.
    pub fn set(&self, v: T) -> std::result::Result<(), T> {
        if self.state.compare_exchange(ONCE_EMPTY, ONCE_BUSY, Ordering::Acquire, Ordering::Relaxed).is_err() {
            return Err(v);
        }
        // SAFETY: the only setter (the exchange above); no reader looks
        // at the value before SET.
        unsafe { (*self.value.get()).write(v) };
        self.state.store(ONCE_SET, Ordering::Release);
        Ok(())
    }
}

impl<T> Default for SetOnce<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Drop for SetOnce<T> {
    fn drop(&mut self) {
        if *self.state.get_mut() == ONCE_SET {
            // SAFETY: set, and dropped once.
            unsafe { self.value.get_mut().assume_init_drop() };
        }
    }
}

/// A shared, reference-counted owner whose construction can fail (std's
/// `Arc::new` aborts the process when the heap is exhausted).
///
/// The value is the first thing in the allocation, so `as_ptr` is the
/// block's address: for the library's C-visible objects, whose public
/// struct is their first field, it is the pointer C holds.
pub struct Shared<T> {
    ptr: NonNull<Inner<T>>,
    _owns: PhantomData<Inner<T>>,
}

#[repr(C)]
struct Inner<T> {
    value: T,
    refs: AtomicUsize,
    /// The pool the block is a slot of (None: the global allocator).
    pool: Option<&'static Slab>,
}

// SAFETY: like Arc: the value is shared between threads, so it must be
// Send + Sync itself.
unsafe impl<T: Send + Sync> Send for Shared<T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync> Sync for Shared<T> {}

impl<T> Shared<T> {
    /// A new owner of `value`, or ENOMEM (then `value` is dropped).
    pub fn try_new(value: T) -> Result<Shared<T>> {
        let layout = Layout::new::<Inner<T>>();
        // SAFETY: non-zero size (the counter).
        let p = unsafe { alloc(layout) } as *mut Inner<T>;
        let Some(ptr) = NonNull::new(p) else { return Err(Error::NOMEM) };
        // SAFETY: a fresh allocation of Inner<T>'s layout.
        unsafe { p.write(Inner { value, refs: AtomicUsize::new(1), pool: None }) };
        Ok(Shared { ptr, _owns: PhantomData })
    }

    /// [`Shared::try_new`] built in place.
    ///
    /// # Safety
    /// `init` initialises the whole `T` at the pointer it is given.
    pub unsafe fn try_new_in_place(init: impl FnOnce(*mut T)) -> Result<Shared<T>> {
        let layout = Layout::new::<Inner<T>>();
        // SAFETY: non-zero size (the counter).
        let p = unsafe { alloc(layout) } as *mut Inner<T>;
        let Some(ptr) = NonNull::new(p) else { return Err(Error::NOMEM) };
        // SAFETY: places inside our fresh block; init writes the value.
        unsafe {
            init(std::ptr::addr_of_mut!((*p).value));
            std::ptr::addr_of_mut!((*p).refs).write(AtomicUsize::new(1));
            std::ptr::addr_of_mut!((*p).pool).write(None);
        }
        Ok(Shared { ptr, _owns: PhantomData })
    }

    /// The layout of an owner's block: the slot size of a pool of them.
    pub const LAYOUT: Layout = Layout::new::<Inner<T>>();

    /// Prepares a pool slot for owners' blocks: a count of 0 (no value).
    ///
    /// # Safety
    /// `p` has room for a block of [`LAYOUT`](Self::LAYOUT).
    pub unsafe fn init_slot(p: *mut u8) {
        // SAFETY: as the caller promises.
        unsafe { std::ptr::addr_of_mut!((*(p as *mut Inner<T>)).refs).write(AtomicUsize::new(0)) }
    }

    /// [`Shared::try_new_in_place`] in a slot of `pool` (taken from its free
    /// list `home`), for values that C names by address and the library
    /// finds again with [`Shared::upgrade`].
    ///
    /// # Safety
    /// `init` initialises the whole `T` at the pointer it is given; `pool`
    /// was made with [`LAYOUT`](Self::LAYOUT) and
    /// [`init_slot`](Self::init_slot) and holds only blocks of `Shared<T>`.
    pub unsafe fn try_new_pooled(pool: &'static Slab, home: usize, init: impl FnOnce(*mut T)) -> Result<Shared<T>> {
        let p = pool.take(home)?.cast::<Inner<T>>();
        let ptr = p.as_ptr();
        // SAFETY: a free slot of Inner<T>'s layout, ours now. Its counter
        // is 0 (set by init_slot, or left so by the last owner) and stays 0,
        // so no `upgrade` takes it, until the store below publishes the
        // initialised value.
        unsafe {
            init(std::ptr::addr_of_mut!((*ptr).value));
            std::ptr::addr_of_mut!((*ptr).pool).write(Some(pool));
            (*std::ptr::addr_of!((*ptr).refs)).store(1, Ordering::Release);
        }
        Ok(Shared { ptr: p, _owns: PhantomData })
    }

    /// A new owner of the value at `p`, if `p` is a block of `pool` whose
    /// value is alive (held by some owner); None otherwise. The check
    /// needs no lock: a pool's memory is never freed, and a value whose
    /// count reached 0 is never counted again (its slot gets a new value
    /// first, published by [`Shared::try_new_pooled`]).
    ///
    /// # Safety
    /// `pool` holds only blocks of `Shared<T>` (as for `try_new_pooled`).
    pub unsafe fn upgrade(pool: &'static Slab, p: *const T) -> Option<Shared<T>> {
        if !pool.contains(p as *const u8) {
            return None;
        }
        // SAFETY: a slot of `pool`, which holds only our blocks.
        unsafe { Self::upgrade_slot(p) }
    }

    /// [`Shared::upgrade`] of an address known to be a slot of a pool of
    /// `Shared<T>` blocks (one a live owner was taken from: see
    /// `handle::FdMap`).
    ///
    /// # Safety
    /// `p` is the value's address in a slot of such a pool.
    pub unsafe fn upgrade_slot(p: *const T) -> Option<Shared<T>> {
        let ptr = p as *mut Inner<T>;
        // SAFETY: a slot of the pool: readable for the life of the
        // process; the counter is an atomic in every state of the slot.
        let refs = unsafe { &*std::ptr::addr_of!((*ptr).refs) };
        let mut n = refs.load(Ordering::Relaxed);
        loop {
            if n == 0 {
                return None;
            }
            if n > isize::MAX as usize {
                std::process::abort();
            }
            // Acquire: the value's initialisation happens before.
            match refs.compare_exchange_weak(n, n + 1, Ordering::Acquire, Ordering::Relaxed) {
                // SAFETY: non-null (a pool slot).
                Ok(_) => return Some(Shared { ptr: unsafe { NonNull::new_unchecked(ptr) }, _owns: PhantomData }),
                Err(m) => n = m,
            }
        }
    }

    /// Give up ownership without dropping the count: the value stays alive
    /// until [`Shared::from_raw`] takes the count back.
    pub fn into_raw(this: Self) -> *const T {
        let p = Shared::as_ptr(&this);
        std::mem::forget(this);
        p
    }

    /// Take back the count [`Shared::into_raw`] left.
    ///
    /// # Safety
    /// `p` came from `into_raw` and its count is taken back once.
    pub unsafe fn from_raw(p: *const T) -> Self {
        // SAFETY: as the caller promises (non-null).
        Shared { ptr: unsafe { NonNull::new_unchecked(p as *mut Inner<T>) }, _owns: PhantomData }
    }

    /// The address of the value (stable for the owner's whole life).
    pub fn as_ptr(this: &Self) -> *const T {
        this.ptr.as_ptr() as *const T
    }

    /// Whether two owners share one value.
    pub fn ptr_eq(a: &Self, b: &Self) -> bool {
        a.ptr == b.ptr
    }

    fn inner(&self) -> &Inner<T> {
        // SAFETY: alive while this owner exists (it holds a count).
        unsafe { self.ptr.as_ref() }
    }
}

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        // As Arc: a new reference can only come from an existing one, so
        // Relaxed suffices; an overflow (impossible in practice) aborts
        // rather than risk a use after free.
        if self.inner().refs.fetch_add(1, Ordering::Relaxed) > isize::MAX as usize {
            std::process::abort();
        }
        Shared { ptr: self.ptr, _owns: PhantomData }
    }
}

impl<T> Drop for Shared<T> {
    #[inline]
    fn drop(&mut self) {
        if self.inner().refs.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        self.free();
    }
}

impl<T> Shared<T> {
    /// The last owner's drop: the value is dropped and its memory freed.
    #[inline(never)]
    fn free(&mut self) {
        // Every other owner's last use happens before the free.
        fence(Ordering::Acquire);
        // SAFETY: the last owner: nobody else can reach the value (a
        // pool's `upgrade` never counts a 0 again).
        unsafe {
            let p = self.ptr.as_ptr();
            let pool = (*p).pool;
            std::ptr::drop_in_place(std::ptr::addr_of_mut!((*p).value));
            match pool {
                Some(pool) => pool.put(self.ptr.cast()),
                None => dealloc(p as *mut u8, Layout::new::<Inner<T>>()),
            }
        }
    }
}

impl<T> Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner().value
    }
}

impl<T> std::fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Shared({:p})", Shared::as_ptr(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    struct Flag<'a>(&'a AtomicBool);
    impl Drop for Flag<'_> {
        fn drop(&mut self) {
            assert!(!self.0.swap(true, Ordering::SeqCst), "dropped twice");
        }
    }

    #[test]
    fn set_once_keeps_the_first_value() {
        let hits = AtomicBool::new(false);
        let o: SetOnce<Flag> = SetOnce::new();
        assert!(o.get().is_none());
        assert!(o.set(Flag(&hits)).is_ok());
        let other = AtomicBool::new(false);
        let back = o.set(Flag(&other)).expect_err("second set refused");
        drop(back);
        assert!(other.load(Ordering::SeqCst));
        assert!(std::ptr::eq(o.get().unwrap().0, &hits));
        drop(o);
        assert!(hits.load(Ordering::SeqCst), "the value is dropped with the cell");
    }

    #[test]
    fn shared_drops_once_with_the_last_owner() {
        let dropped = AtomicBool::new(false);
        let a = Shared::try_new(Flag(&dropped)).unwrap();
        let b = a.clone();
        assert!(Shared::ptr_eq(&a, &b));
        assert_eq!(Shared::as_ptr(&a) as usize, Shared::as_ptr(&b) as usize);
        drop(a);
        assert!(!dropped.load(Ordering::SeqCst));
        drop(b);
        assert!(dropped.load(Ordering::SeqCst));
    }

    #[test]
    fn shared_across_threads() {
        let s = Shared::try_new(AtomicUsize::new(0)).unwrap();
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let s = s.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        let c = s.clone();
                        c.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(s.load(Ordering::Relaxed), 4000);
    }

    #[test]
    fn value_is_at_the_start_of_the_block() {
        #[repr(C)]
        struct Pub {
            first: u64,
        }
        let s = Shared::try_new(Pub { first: 7 }).unwrap();
        // SAFETY: the pointer is the value's address.
        assert_eq!(unsafe { (*Shared::as_ptr(&s)).first }, 7);
        assert_eq!(Shared::as_ptr(&s) as usize, s.ptr.as_ptr() as usize);
    }

    #[test]
    fn c_blocks() {
        let p = copy_out(&[1u32, 2, 3]).unwrap();
        // SAFETY: three u32 were copied.
        assert_eq!(unsafe { *p.as_ptr().add(2) }, 3);
        // SAFETY: our block.
        unsafe { free(p.as_ptr()) };
        let s = strdup(cstr!("abc")).unwrap();
        // SAFETY: a C string from strdup.
        assert_eq!(unsafe { CStr::from_ptr(s.as_ptr()) }, cstr!("abc"));
        // SAFETY: our block.
        unsafe { free(s.as_ptr()) };
        let z = calloc1::<[u64; 4]>().unwrap();
        // SAFETY: zeroed block of that type.
        assert_eq!(unsafe { *z.as_ptr() }, [0; 4]);
        // SAFETY: our block.
        unsafe { free(z.as_ptr()) };
        assert_eq!(*try_box(5u8).unwrap(), 5);
    }

    #[test]
    fn spawned_threads_run() {
        let (tx, rx) = std::sync::mpsc::channel();
        spawn(cstr!("cmem-test"), move || tx.send(7).unwrap()).unwrap();
        assert_eq!(rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap(), 7);
    }

    #[test]
    fn fallible_collections() {
        let m = MStr::new(cstr!("name")).unwrap();
        assert_eq!(m.try_clone().unwrap(), m);
        assert_eq!(m.as_cstr(), cstr!("name"));
        let mut v = vec1(1u8).unwrap();
        push(&mut v, 2).unwrap();
        assert_eq!(to_vec(&v).unwrap(), [1, 2]);
        assert_eq!(to_vec::<u8>(&[]).unwrap(), []);
    }
}
