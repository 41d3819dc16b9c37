//! Thin FFI over Jerasure 2 (Debian `libjerasure-dev`): the Cauchy
//! coding-matrix generators whose exact output the EPU paper's Table I
//! depends on, and Jerasure's own bit-matrix encoder as a reference for
//! tests. Encoding and decoding in eraid run in Rust ([`crate::crs`]).
//!
//! Jerasure (through gf-complete) builds its field tables lazily in global
//! state without locking, so every call holds [`JERASURE_LOCK`].

use std::os::raw::{c_char, c_int, c_void};
use std::sync::Mutex;

mod ffi {
    use super::{c_char, c_int, c_void};

    // Declared from /usr/include/jerasure.h and /usr/include/jerasure/
    // {cauchy,galois}.h (Jerasure 2.0). Matrices are malloc'ed `int *`.
    extern "C" {
        pub fn cauchy_original_coding_matrix(k: c_int, m: c_int, w: c_int) -> *mut c_int;
        pub fn cauchy_good_general_coding_matrix(k: c_int, m: c_int, w: c_int) -> *mut c_int;
        pub fn jerasure_matrix_to_bitmatrix(
            k: c_int,
            m: c_int,
            w: c_int,
            matrix: *mut c_int,
        ) -> *mut c_int;
        pub fn jerasure_bitmatrix_encode(
            k: c_int,
            m: c_int,
            w: c_int,
            bitmatrix: *mut c_int,
            data_ptrs: *mut *mut c_char,
            coding_ptrs: *mut *mut c_char,
            size: c_int,
            packetsize: c_int,
        );
        pub fn galois_single_multiply(a: c_int, b: c_int, w: c_int) -> c_int;
        pub fn free(ptr: *mut c_void);
    }
}

static JERASURE_LOCK: Mutex<()> = Mutex::new(());

/// Largest w the wrappers accept: eraid's CRS codes use w <= 8, and every
/// value below fits Jerasure's `int` arithmetic.
pub const MAX_W: usize = 8;

fn check_shape(k: usize, m: usize, w: usize) -> Option<()> {
    let fits = (2..=MAX_W).contains(&w) && k >= 1 && m >= 1 && k + m <= (1 << w);
    fits.then_some(())
}

/// Copies a malloc'ed Jerasure array of `len` ints into a Vec and frees it.
/// Null (Jerasure's "impossible shape") gives None.
fn take_ints(ptr: *mut c_int, len: usize) -> Option<Vec<u32>> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: Jerasure returned a live malloc'ed array of `len` ints, which
    // we read once and free once.
    let values = unsafe { std::slice::from_raw_parts(ptr, len) }
        .iter()
        .map(|&value| u32::try_from(value).expect("Jerasure matrix entries are field elements"))
        .collect();
    // SAFETY: see above; the pointer is not used after this.
    unsafe { ffi::free(ptr.cast()) };
    Some(values)
}

/// Jerasure's `cauchy_original_coding_matrix(k, m, w)`: m x k row-major,
/// element (i, j) = 1 / (i xor (m + j)) in GF(2^w). None when the shape is
/// impossible (k + m > 2^w) or outside 2 <= w <= 8.
pub fn cauchy_original_coding_matrix(k: usize, m: usize, w: usize) -> Option<Vec<u32>> {
    check_shape(k, m, w)?;
    let _guard = JERASURE_LOCK
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    // SAFETY: the shape was checked; Jerasure allocates the result.
    let ptr = unsafe { ffi::cauchy_original_coding_matrix(k as c_int, m as c_int, w as c_int) };
    take_ints(ptr, k * m)
}

/// Jerasure's `cauchy_good_general_coding_matrix(k, m, w)`: for m = 2 and
/// small k its table of best second rows, otherwise the original matrix
/// with columns scaled so row 0 is all ones and each later row divided by
/// the element that leaves the fewest ones in its bit-matrix. This is the
/// matrix "Jerasure generates" for CRS (its `cauchy_good` technique).
pub fn cauchy_good_general_coding_matrix(k: usize, m: usize, w: usize) -> Option<Vec<u32>> {
    check_shape(k, m, w)?;
    let _guard = JERASURE_LOCK
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    // SAFETY: the shape was checked; Jerasure allocates the result.
    let ptr = unsafe { ffi::cauchy_good_general_coding_matrix(k as c_int, m as c_int, w as c_int) };
    take_ints(ptr, k * m)
}

/// Jerasure's `jerasure_matrix_to_bitmatrix`: (m*w) x (k*w) bits as 0/1,
/// row-major. Panics on a matrix of the wrong size (a caller bug).
pub fn matrix_to_bitmatrix(k: usize, m: usize, w: usize, matrix: &[u32]) -> Vec<u8> {
    assert_eq!(matrix.len(), k * m, "matrix must be m x k");
    check_shape(k, m, w).expect("shape within Jerasure's limits");
    let mut ints: Vec<c_int> = matrix.iter().map(|&value| value as c_int).collect();
    let _guard = JERASURE_LOCK
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    // SAFETY: `ints` holds m*k ints and outlives the call; the result is
    // malloc'ed by Jerasure.
    let ptr = unsafe {
        ffi::jerasure_matrix_to_bitmatrix(k as c_int, m as c_int, w as c_int, ints.as_mut_ptr())
    };
    take_ints(ptr, k * m * w * w)
        .expect("Jerasure allocates a bit-matrix")
        .into_iter()
        .map(|bit| bit as u8)
        .collect()
}

/// `a * b` in Jerasure's GF(2^w) (its default polynomial for w).
pub fn galois_single_multiply(a: u32, b: u32, w: usize) -> u32 {
    assert!((2..=MAX_W).contains(&w) && a < (1 << w) && b < (1 << w));
    let _guard = JERASURE_LOCK
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    // SAFETY: plain arithmetic on in-range values.
    let product = unsafe { ffi::galois_single_multiply(a as c_int, b as c_int, w as c_int) };
    product as u32
}

/// Jerasure's `jerasure_bitmatrix_encode` on shards of one packet group
/// (shard length = w * packet length): the reference eraid's own encoder is
/// tested against. Panics on bad shapes (a caller bug): the packet length
/// must be a multiple of 8 bytes, as Jerasure requires.
pub fn bitmatrix_encode(
    k: usize,
    m: usize,
    w: usize,
    bitmatrix: &[u8],
    data: &[&[u8]],
    parity: &mut [&mut [u8]],
) {
    assert_eq!(bitmatrix.len(), k * m * w * w);
    assert!(data.len() == k && parity.len() == m);
    let size = data[0].len();
    assert!(
        size.is_multiple_of(w * 8),
        "packets must be multiples of 8 bytes"
    );
    assert!(data.iter().all(|shard| shard.len() == size));
    assert!(parity.iter().all(|shard| shard.len() == size));
    let mut bits: Vec<c_int> = bitmatrix.iter().map(|&bit| c_int::from(bit)).collect();
    // Jerasure only reads the data; its signature is not const.
    let mut data_ptrs: Vec<*mut c_char> = data.iter().map(|s| s.as_ptr() as *mut c_char).collect();
    let mut parity_ptrs: Vec<*mut c_char> =
        parity.iter_mut().map(|s| s.as_mut_ptr().cast()).collect();
    let _guard = JERASURE_LOCK
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    // SAFETY: k data and m parity buffers of `size` bytes each, the
    // bit-matrix of m*w*k*w ints; all outlive the call.
    unsafe {
        ffi::jerasure_bitmatrix_encode(
            k as c_int,
            m as c_int,
            w as c_int,
            bits.as_mut_ptr(),
            data_ptrs.as_mut_ptr(),
            parity_ptrs.as_mut_ptr(),
            size as c_int,
            (size / w) as c_int,
        );
    }
}
