//! Reads byte `i` of a 16-byte heap buffer: `i` = 16 is one past its end,
//! which AddressSanitizer must report.

/// # Safety
/// Only for the canary: `i` > 15 reads outside the buffer on purpose.
#[no_mangle]
pub unsafe extern "C" fn asan_canary_read(i: usize) -> u8 {
    let v: Vec<u8> = vec![7; 16];
    // SAFETY: not safe for i > 15; that is the point of the canary.
    unsafe { std::ptr::read_volatile(v.as_ptr().add(i)) }
}
