//! A heap buffer whose start is aligned for O_DIRECT.
//!
//! `Vec<u8>` only guarantees byte alignment and cannot be given a stronger
//! one (freeing it with a different layout is undefined behaviour), so direct
//! I/O goes through this buffer and is copied in and out.

use std::alloc::{self, Layout};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// Alignment that satisfies O_DIRECT on every device we expect (4 KiB
/// logical sectors included) and on every page size up to 4 KiB.
pub const DIRECT_ALIGN_BYTES: usize = 4096;

/// A zero-initialised, `DIRECT_ALIGN_BYTES`-aligned byte buffer.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len_bytes: usize,
    layout: Layout,
}

// SAFETY: `AlignedBuf` uniquely owns its allocation, like `Vec<u8>`.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared access only hands out `&[u8]`.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// Allocates `len_bytes` zeroed bytes. Aborts on allocation failure, as
    /// `Vec` does.
    pub fn zeroed(len_bytes: usize) -> AlignedBuf {
        // A zero-size layout may not be passed to the allocator; allocate one
        // aligned block instead and expose an empty slice.
        let alloc_bytes = len_bytes.max(DIRECT_ALIGN_BYTES);
        let layout = Layout::from_size_align(alloc_bytes, DIRECT_ALIGN_BYTES)
            .expect("buffer size overflows isize");
        // SAFETY: `layout` has a non-zero size.
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(raw) else {
            alloc::handle_alloc_error(layout)
        };
        AlignedBuf {
            ptr,
            len_bytes,
            layout,
        }
    }

    /// Allocates a buffer holding a copy of `bytes`.
    pub fn copy_of(bytes: &[u8]) -> AlignedBuf {
        let mut buf = AlignedBuf::zeroed(bytes.len());
        buf.copy_from_slice(bytes);
        buf
    }
}

impl Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr` points to at least `len_bytes` initialised bytes that
        // this buffer owns.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len_bytes) }
    }
}

impl DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`, and `&mut self` guarantees exclusivity.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len_bytes) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `zeroed` with exactly this layout.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_is_aligned_and_contents_round_trip() {
        for len_bytes in [0, 1, 512, 4096, 12_288 + 512] {
            let data: Vec<u8> = (0..len_bytes).map(|i| (i % 251) as u8).collect();
            let buf = AlignedBuf::copy_of(&data);
            assert_eq!(buf.as_ptr() as usize % DIRECT_ALIGN_BYTES, 0);
            assert_eq!(&buf[..], &data[..]);
        }
    }

    #[test]
    fn zeroed_is_zero() {
        let buf = AlignedBuf::zeroed(8192);
        assert!(buf.iter().all(|&b| b == 0));
    }
}
