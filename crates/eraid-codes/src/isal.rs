//! Thin FFI over ISA-L's erasure-code and RAID functions.
//!
//! Every Galois-field operation in eraid goes through here, so that the one
//! field definition (GF(2^8) with polynomial 0x11D, ISA-L's and Linux MD's)
//! and its SIMD kernels live in exactly one well-tested library. (The one
//! loop outside, RAID-6's fused read-modify-write in `pq_update`, reads its
//! products from ISA-L's tables through [`EcTables::coefficient_table`].)
//!
//! The safe wrappers check the shapes ISA-L cannot check for itself (pointer
//! counts, equal lengths, `int` range) and panic on misuse: they are the
//! crate's internal building blocks, and [`crate::MatrixCode`] validates user
//! input into `Result`s before it ever calls them.

use std::os::raw::{c_int, c_uchar, c_void};

/// Largest number of shards (sources + outputs) one call may take: GF(2^8)
/// has 256 elements, so no code here can have more distinct rows anyway, and
/// it lets pointer arrays live on the stack instead of allocating per call.
pub const MAX_VECTORS: usize = 256;

/// Alignment `xor_gen` and `pq_gen` demand of every pointer (raid.h).
pub const RAID_ALIGN_BYTES: usize = 32;

mod ffi {
    use super::{c_int, c_uchar, c_void};

    // Declared from /usr/include/isa-l/{erasure_code,raid}.h (ISA-L 2.30).
    // Source pointers are `unsigned char *` in C but are never written.
    extern "C" {
        pub fn gf_mul(a: c_uchar, b: c_uchar) -> c_uchar;
        pub fn gf_invert_matrix(input: *mut c_uchar, output: *mut c_uchar, n: c_int) -> c_int;
        pub fn gf_gen_rs_matrix(a: *mut c_uchar, m: c_int, k: c_int);
        pub fn gf_gen_cauchy1_matrix(a: *mut c_uchar, m: c_int, k: c_int);
        pub fn ec_init_tables(k: c_int, rows: c_int, a: *mut c_uchar, gftbls: *mut c_uchar);
        pub fn ec_encode_data(
            len: c_int,
            k: c_int,
            rows: c_int,
            gftbls: *mut c_uchar,
            data: *mut *mut c_uchar,
            coding: *mut *mut c_uchar,
        );
        pub fn ec_encode_data_update(
            len: c_int,
            k: c_int,
            rows: c_int,
            vec_i: c_int,
            g_tbls: *mut c_uchar,
            data: *mut c_uchar,
            coding: *mut *mut c_uchar,
        );
        pub fn xor_gen(vects: c_int, len: c_int, array: *mut *mut c_void) -> c_int;
        pub fn pq_gen(vects: c_int, len: c_int, array: *mut *mut c_void) -> c_int;
    }
}

/// A fixed-capacity array of raw buffer pointers, the `unsigned char **`
/// ISA-L takes. Kept on the stack so encode/decode never allocate.
struct PtrArray {
    ptrs: [*mut u8; MAX_VECTORS],
    len: usize,
}

impl PtrArray {
    fn new() -> Self {
        Self {
            ptrs: [std::ptr::null_mut(); MAX_VECTORS],
            len: 0,
        }
    }

    fn push(&mut self, ptr: *mut u8) {
        assert!(
            self.len < MAX_VECTORS,
            "more than {MAX_VECTORS} buffers in one ISA-L call"
        );
        self.ptrs[self.len] = ptr;
        self.len += 1;
    }

    fn as_mut_ptr(&mut self) -> *mut *mut u8 {
        self.ptrs.as_mut_ptr()
    }
}

fn to_c_int(value: usize, what: &str) -> c_int {
    c_int::try_from(value).unwrap_or_else(|_| panic!("{what} = {value} does not fit a C int"))
}

/// All buffers of one call must have the same length; returns it.
fn common_len<'a>(mut lens: impl Iterator<Item = usize> + 'a) -> usize {
    let first = lens.next().expect("at least one buffer");
    for (i, len) in lens.enumerate() {
        assert_eq!(
            len,
            first,
            "buffer {} has length {len}, buffer 0 has {first}",
            i + 1
        );
    }
    first
}

/// Product of `a` and `b` in GF(2^8).
pub fn gf_mul(a: u8, b: u8) -> u8 {
    // SAFETY: pure function on two bytes.
    unsafe { ffi::gf_mul(a, b) }
}

/// Inverse of the `n` x `n` row-major `matrix`, or `None` if it is singular.
pub fn gf_invert_matrix(matrix: &[u8], n: usize) -> Option<Vec<u8>> {
    assert!(n >= 1, "cannot invert a 0x0 matrix");
    assert_eq!(matrix.len(), n * n, "matrix must be {n}x{n}");
    // ISA-L destroys its input, so it works on a copy.
    let mut input = matrix.to_vec();
    let mut output = vec![0u8; n * n];
    // SAFETY: both buffers hold exactly n*n bytes.
    let rc =
        unsafe { ffi::gf_invert_matrix(input.as_mut_ptr(), output.as_mut_ptr(), to_c_int(n, "n")) };
    (rc == 0).then_some(output)
}

/// ISA-L's Vandermonde-style generator: `total_rows` x `k`, identity on top,
/// then row `k + i` = powers of 2^i. Not MDS for every (k, m); see erasure_code.h.
pub fn gf_gen_rs_matrix(total_rows: usize, k: usize) -> Vec<u8> {
    assert!(
        k >= 1 && total_rows >= k && total_rows <= MAX_VECTORS,
        "bad RS shape {total_rows}x{k}"
    );
    let mut a = vec![0u8; total_rows * k];
    // SAFETY: `a` holds total_rows*k bytes, which is what ISA-L writes.
    unsafe { ffi::gf_gen_rs_matrix(a.as_mut_ptr(), to_c_int(total_rows, "m"), to_c_int(k, "k")) };
    a
}

/// ISA-L's Cauchy generator: `total_rows` x `k`, identity on top, then
/// 1/(i xor j). Every square submatrix is invertible (MDS) while
/// `total_rows <= 256`.
pub fn gf_gen_cauchy1_matrix(total_rows: usize, k: usize) -> Vec<u8> {
    assert!(
        k >= 1 && total_rows >= k && total_rows <= MAX_VECTORS,
        "bad Cauchy shape {total_rows}x{k}"
    );
    let mut a = vec![0u8; total_rows * k];
    // SAFETY: `a` holds total_rows*k bytes, which is what ISA-L writes.
    unsafe {
        ffi::gf_gen_cauchy1_matrix(a.as_mut_ptr(), to_c_int(total_rows, "m"), to_c_int(k, "k"))
    };
    a
}

/// The expanded per-coefficient lookup tables ISA-L's SIMD kernels use
/// (32 bytes per coefficient), built once per coefficient matrix.
#[derive(Clone)]
pub struct EcTables {
    k: usize,
    rows: usize,
    bytes: Vec<u8>,
}

impl EcTables {
    /// Tables for a `rows` x `k` row-major coefficient matrix.
    pub fn new(k: usize, rows: usize, coefficients: &[u8]) -> Self {
        assert!(
            k >= 1 && k + rows <= MAX_VECTORS,
            "bad table shape {rows}x{k}"
        );
        assert_eq!(
            coefficients.len(),
            k * rows,
            "coefficients must be {rows}x{k}"
        );
        let mut bytes = vec![0u8; 32 * k * rows];
        if rows > 0 {
            // ISA-L takes a non-const pointer but only reads the coefficients.
            let mut a = coefficients.to_vec();
            // SAFETY: `a` has k*rows bytes, `bytes` the documented 32*k*rows.
            unsafe {
                ffi::ec_init_tables(
                    to_c_int(k, "k"),
                    to_c_int(rows, "rows"),
                    a.as_mut_ptr(),
                    bytes.as_mut_ptr(),
                )
            };
        }
        Self { k, rows, bytes }
    }

    pub fn k(&self) -> usize {
        self.k
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    /// ISA-L's 32-byte table for the coefficient c at (`row`, `source`), as
    /// `gf_vect_mul_init` lays it out: bytes 0..16 hold c * i and bytes
    /// 16..32 hold c * (i << 4), i = 0..16. Multiplication is linear, so
    /// c * x = lo[x & 15] ^ hi[x >> 4]: two 16-entry byte shuffles.
    ///
    /// # Panics
    /// If `row` or `source` is out of range.
    pub fn coefficient_table(&self, row: usize, source: usize) -> &[u8; 32] {
        assert!(
            row < self.rows && source < self.k,
            "coefficient ({row}, {source}) outside a {}x{} table",
            self.rows,
            self.k
        );
        let start = 32 * (row * self.k + source);
        self.bytes[start..start + 32]
            .try_into()
            .expect("32-byte slice")
    }
}

impl std::fmt::Debug for EcTables {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The table bytes are derived data; printing them helps nobody.
        f.debug_struct("EcTables")
            .field("k", &self.k)
            .field("rows", &self.rows)
            .finish()
    }
}

/// `coding[r] = sum_j C[r][j] * data[j]` for the matrix `tables` was built from.
/// Any length; no alignment needed.
pub fn ec_encode_data(tables: &EcTables, data: &[&[u8]], coding: &mut [&mut [u8]]) {
    assert_eq!(
        data.len(),
        tables.k,
        "ec_encode_data: wrong number of sources"
    );
    assert_eq!(
        coding.len(),
        tables.rows,
        "ec_encode_data: wrong number of outputs"
    );
    if tables.rows == 0 {
        return;
    }
    let len = common_len(
        data.iter()
            .map(|d| d.len())
            .chain(coding.iter().map(|c| c.len())),
    );
    if len == 0 {
        return;
    }
    let mut srcs = PtrArray::new();
    data.iter().for_each(|d| srcs.push(d.as_ptr().cast_mut()));
    let mut dsts = PtrArray::new();
    coding.iter_mut().for_each(|c| dsts.push(c.as_mut_ptr()));
    // SAFETY: k sources and `rows` outputs, all `len` bytes; the outputs are
    // distinct `&mut` slices, so they overlap neither each other nor a source;
    // the tables are 32*k*rows bytes and ISA-L only reads them.
    unsafe {
        ffi::ec_encode_data(
            to_c_int(len, "len"),
            to_c_int(tables.k, "k"),
            to_c_int(tables.rows, "rows"),
            tables.bytes.as_ptr().cast_mut(),
            srcs.as_mut_ptr(),
            dsts.as_mut_ptr(),
        )
    };
}

/// `coding[r] ^= C[r][source_index] * source`: the contribution of one source
/// added into existing outputs. Any length; no alignment needed.
pub fn ec_encode_data_update(
    tables: &EcTables,
    source_index: usize,
    source: &[u8],
    coding: &mut [&mut [u8]],
) {
    // Every output exactly as long as the source, not merely long enough.
    common_len(std::iter::once(source.len()).chain(coding.iter().map(|c| c.len())));
    ec_encode_data_update_at(tables, source_index, source, coding, 0);
}

/// `coding[r][offset_bytes..][..source.len()] ^= C[r][source_index] * source`:
/// [`ec_encode_data_update`] on one window of the outputs, so a caller can
/// walk long outputs in cache-sized pieces without re-slicing each of them.
///
/// # Panics
/// If the window runs past the end of an output.
pub fn ec_encode_data_update_at(
    tables: &EcTables,
    source_index: usize,
    source: &[u8],
    coding: &mut [&mut [u8]],
    offset_bytes: usize,
) {
    assert!(
        source_index < tables.k,
        "source index {source_index} >= k = {}",
        tables.k
    );
    assert_eq!(
        coding.len(),
        tables.rows,
        "ec_encode_data_update: wrong number of outputs"
    );
    let len = source.len();
    for (i, c) in coding.iter().enumerate() {
        assert!(
            offset_bytes.checked_add(len).is_some_and(|end| end <= c.len()),
            "ec_encode_data_update: output {i} has {} bytes, the window is {len} bytes at {offset_bytes}",
            c.len()
        );
    }
    if tables.rows == 0 || len == 0 {
        return;
    }
    let mut dsts = PtrArray::new();
    coding
        .iter_mut()
        .for_each(|c| dsts.push(c[offset_bytes..].as_mut_ptr()));
    // SAFETY: `rows` outputs, each with at least `len` bytes from its pointer
    // (checked above); the outputs are distinct `&mut` slices, so they overlap
    // neither each other nor the source, which is read only; the tables are
    // 32*k*rows bytes and ISA-L only reads them.
    unsafe {
        ffi::ec_encode_data_update(
            to_c_int(len, "len"),
            to_c_int(tables.k, "k"),
            to_c_int(tables.rows, "rows"),
            to_c_int(source_index, "vec_i"),
            tables.bytes.as_ptr().cast_mut(),
            source.as_ptr().cast_mut(),
            dsts.as_mut_ptr(),
        )
    };
}

fn is_aligned(ptr: *const u8) -> bool {
    (ptr as usize).is_multiple_of(RAID_ALIGN_BYTES)
}

/// `dst = XOR of data` with ISA-L's `xor_gen`, if its rules are met: at
/// least two sources, every pointer 32-byte aligned, length fits an int.
/// Returns `false` without touching `dst` when they are not, and `false`
/// (with `dst` unspecified) if ISA-L itself reports failure, so the caller
/// falls back to the general path.
pub fn xor_gen(data: &[&[u8]], dst: &mut [u8]) -> bool {
    let len = dst.len();
    if data.len() < 2
        || data.len() + 1 > MAX_VECTORS
        || len > c_int::MAX as usize
        || data
            .iter()
            .any(|d| d.len() != len || !is_aligned(d.as_ptr()))
        || !is_aligned(dst.as_ptr())
    {
        return false;
    }
    let mut ptrs = PtrArray::new();
    data.iter().for_each(|d| ptrs.push(d.as_ptr().cast_mut()));
    ptrs.push(dst.as_mut_ptr());
    // SAFETY: vects = sources + 1 pointers, each to `len` bytes, aligned as
    // raid.h requires; only the last one (dst, a distinct &mut) is written.
    let rc = unsafe { ffi::xor_gen(ptrs.len as c_int, len as c_int, ptrs.as_mut_ptr().cast()) };
    rc == 0
}

/// `p = XOR of data`, `q = sum_j 2^j * data[j]` with ISA-L's `pq_gen`, if its
/// rules are met: at least two sources, every pointer 32-byte aligned,
/// length a multiple of 32. Returns `false` otherwise (outputs untouched) or
/// if ISA-L reports failure (outputs unspecified).
pub fn pq_gen(data: &[&[u8]], p: &mut [u8], q: &mut [u8]) -> bool {
    let len = p.len();
    if data.len() < 2
        || data.len() + 2 > MAX_VECTORS
        || !len.is_multiple_of(RAID_ALIGN_BYTES)
        || len > c_int::MAX as usize
        || q.len() != len
        || data
            .iter()
            .any(|d| d.len() != len || !is_aligned(d.as_ptr()))
        || !is_aligned(p.as_ptr())
        || !is_aligned(q.as_ptr())
    {
        return false;
    }
    let mut ptrs = PtrArray::new();
    data.iter().for_each(|d| ptrs.push(d.as_ptr().cast_mut()));
    ptrs.push(p.as_mut_ptr());
    ptrs.push(q.as_mut_ptr());
    // SAFETY: sources + P + Q pointers, each to `len` bytes, aligned and
    // sized as raid.h requires; only P and Q (distinct &mut) are written.
    let rc = unsafe { ffi::pq_gen(ptrs.len as c_int, len as c_int, ptrs.as_mut_ptr().cast()) };
    rc == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coefficient_table_is_the_nibble_split_product() {
        let coefficients = [1, 2, 0x1d, 0x8e, 0, 0xff];
        let tables = EcTables::new(3, 2, &coefficients);
        for (at, &c) in coefficients.iter().enumerate() {
            let table = tables.coefficient_table(at / 3, at % 3);
            for x in 0..=255u8 {
                let looked_up = table[usize::from(x & 15)] ^ table[16 + usize::from(x >> 4)];
                assert_eq!(looked_up, gf_mul(c, x), "c {c:#x} x {x:#x}");
            }
        }
    }

    #[test]
    fn gf_mul_basics() {
        assert_eq!(gf_mul(0, 77), 0);
        assert_eq!(gf_mul(1, 77), 77);
        // 0x80 * 2 overflows and reduces by the low byte of 0x11D.
        assert_eq!(gf_mul(0x80, 2), 0x1D);
    }

    #[test]
    fn invert_detects_singular() {
        assert_eq!(gf_invert_matrix(&[1, 1, 1, 1], 2), None);
        let m = [1, 1, 1, 2];
        let inv = gf_invert_matrix(&m, 2).expect("invertible");
        // m * inv = I
        for r in 0..2 {
            for c in 0..2 {
                let v = gf_mul(m[r * 2], inv[c]) ^ gf_mul(m[r * 2 + 1], inv[2 + c]);
                assert_eq!(v, u8::from(r == c));
            }
        }
    }

    #[test]
    fn xor_gen_refuses_misaligned() {
        let buf = vec![0u8; 256];
        let mut dst = vec![0u8; 64];
        let base = buf.as_ptr().align_offset(RAID_ALIGN_BYTES);
        let a = &buf[base + 1..base + 65];
        let b = &buf[base + 64..base + 128];
        assert!(!xor_gen(&[a, b], &mut dst));
    }
}
