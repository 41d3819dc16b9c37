//! Arithmetic in GF(2^w), 2 <= w <= 8, with Jerasure's default primitive
//! polynomials (so bit-matrices built here equal Jerasure's). Pure Rust: the
//! fields are tiny and the study needs millions of products without locks.

/// Primitive polynomial for each w (index = w), as gf-complete's defaults.
const POLYNOMIALS: [u32; 9] = [0, 0, 0x7, 0xb, 0x13, 0x25, 0x43, 0x89, 0x11d];

/// Smallest and largest w supported.
pub const W_MIN: usize = 2;
pub const W_MAX: usize = 8;

/// `a * b` in GF(2^w). Panics if w or an operand is out of range.
pub fn multiply(a: u32, b: u32, w: usize) -> u32 {
    assert!(
        (W_MIN..=W_MAX).contains(&w),
        "w = {w} outside {W_MIN}..={W_MAX}"
    );
    let size = 1u32 << w;
    assert!(a < size && b < size, "operands {a}, {b} outside GF(2^{w})");
    let (mut a, mut b, mut product) = (a, b, 0u32);
    while b != 0 {
        if b & 1 == 1 {
            product ^= a;
        }
        b >>= 1;
        a <<= 1;
        if a & size != 0 {
            a ^= POLYNOMIALS[w];
        }
    }
    product
}

/// The inverse of a nonzero `a` in GF(2^w).
pub fn inverse(a: u32, w: usize) -> u32 {
    assert!(a != 0, "0 has no inverse");
    (1..1u32 << w)
        .find(|&candidate| multiply(a, candidate, w) == 1)
        .expect("every nonzero element of a field has an inverse")
}

/// `a / b` in GF(2^w), b nonzero.
pub fn divide(a: u32, b: u32, w: usize) -> u32 {
    multiply(a, inverse(b, w), w)
}
