//! Zeroing a member's range without a buffer of its size: the file system
//! or device does it (a hole punched in a file, or fallocate ZERO_RANGE;
//! BLKZEROOUT on a block device) where it can; otherwise zeroes are written from one shared,
//! bounded buffer, piece by piece.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// The largest piece written at once when zeroes must be written.
pub const ZERO_PIECE_BYTES: usize = 1 << 20;

static ZEROES: [u8; ZERO_PIECE_BYTES] = [0; ZERO_PIECE_BYTES];

/// Asks the kernel to zero `[offset_bytes, offset_bytes + len_bytes)` of
/// `file`. Ok(true): done (and, like a write, durable at the next fdatasync);
/// Ok(false): not supported here, write zeroes instead; Err: a real error.
pub fn zero_natively(
    file: &File,
    is_block_device: bool,
    offset_bytes: u64,
    len_bytes: u64,
) -> io::Result<bool> {
    let fd = file.as_raw_fd();
    let rc = if is_block_device {
        // BLKZEROOUT = _IO(0x12, 127); takes [start, length] in bytes.
        const BLKZEROOUT: libc::c_ulong = 0x127f;
        let range: [u64; 2] = [offset_bytes, len_bytes];
        // SAFETY: the ioctl reads two u64 from a pointer to our local array.
        unsafe { libc::ioctl(fd, BLKZEROOUT, range.as_ptr()) }
    } else {
        let (Ok(offset), Ok(len)) = (
            libc::off_t::try_from(offset_bytes),
            libc::off_t::try_from(len_bytes),
        ) else {
            return Ok(false);
        };
        // A hole first: it needs no space (a sparse member on a full file
        // system must not fail for zeroes) and returns what the range held,
        // as a discard would. KEEP_SIZE: the member never changes size.
        let mut rc = -1;
        for mode in [libc::FALLOC_FL_PUNCH_HOLE, libc::FALLOC_FL_ZERO_RANGE] {
            // SAFETY: fallocate on a descriptor we own; no memory is passed.
            rc = unsafe { libc::fallocate(fd, mode | libc::FALLOC_FL_KEEP_SIZE, offset, len) };
            let unsupported = rc != 0
                && matches!(
                    io::Error::last_os_error().raw_os_error(),
                    Some(libc::EOPNOTSUPP) | Some(libc::EINVAL) | Some(libc::ENOSYS)
                );
            if !unsupported {
                break;
            }
        }
        rc
    };
    if rc == 0 {
        return Ok(true);
    }
    let error = io::Error::last_os_error();
    match error.raw_os_error() {
        // Not supported by this file system or device, or not for this
        // alignment: the caller writes zeroes.
        Some(libc::EOPNOTSUPP) | Some(libc::ENOTTY) | Some(libc::EINVAL) | Some(libc::ENOSYS) => {
            Ok(false)
        }
        _ => Err(error),
    }
}

/// Alignment of the middle piece of a range cut by [`aligned_pieces`].
const ZERO_ALIGN_BYTES: u64 = 4096;

/// A range cut so its middle is aligned: a block device zeroes natively
/// (BLKZEROOUT) only whole sectors, and a range that starts or ends
/// mid-sector (the journal's free space starts where a record ends) would
/// otherwise be written as zeroes whole; its unaligned ends, under 4 KiB
/// each, are written as zeroes.
pub fn aligned_pieces(range: std::ops::Range<u64>) -> Vec<std::ops::Range<u64>> {
    let middle_start = range.start.next_multiple_of(ZERO_ALIGN_BYTES);
    let middle_end = range.end - range.end % ZERO_ALIGN_BYTES;
    if middle_start >= middle_end {
        return vec![range];
    }
    [
        range.start..middle_start,
        middle_start..middle_end,
        middle_end..range.end,
    ]
    .into_iter()
    .filter(|p| p.start < p.end)
    .collect()
}

/// Writes zeroes over the range with `write`, at most `ZERO_PIECE_BYTES`
/// at a time, so no buffer grows with the range.
pub fn write_zeroes_in_pieces(
    offset_bytes: u64,
    len_bytes: u64,
    mut write: impl FnMut(u64, &[u8]) -> io::Result<()>,
) -> io::Result<()> {
    let mut done_bytes = 0u64;
    while done_bytes < len_bytes {
        let piece = (len_bytes - done_bytes).min(ZERO_PIECE_BYTES as u64) as usize;
        write(offset_bytes + done_bytes, &ZEROES[..piece])?;
        done_bytes += piece as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_is_cut_into_aligned_middle_and_short_ends_covering_it_exactly() {
        assert_eq!(
            aligned_pieces(100..10_000),
            vec![100..4096, 4096..8192, 8192..10_000]
        );
        assert_eq!(aligned_pieces(4096..8192), vec![4096..8192]);
        assert_eq!(
            aligned_pieces(100..4000),
            vec![100..4000],
            "no aligned middle"
        );
        assert_eq!(
            aligned_pieces(4096..5000),
            vec![4096..5000],
            "no whole block"
        );
        for (start, end) in [(1u64, 9000u64), (4095, 4097), (8192, 12_289)] {
            let pieces = aligned_pieces(start..end);
            assert_eq!(pieces.first().unwrap().start, start);
            assert_eq!(pieces.last().unwrap().end, end);
            assert!(pieces.windows(2).all(|w| w[0].end == w[1].start));
        }
    }

    #[test]
    fn pieces_cover_the_range_and_stay_bounded() {
        let mut seen = Vec::new();
        write_zeroes_in_pieces(4096, 3 * ZERO_PIECE_BYTES as u64 + 512, |at, bytes| {
            assert!(bytes.len() <= ZERO_PIECE_BYTES && bytes.iter().all(|&b| b == 0));
            seen.push((at, bytes.len()));
            Ok(())
        })
        .unwrap();
        assert_eq!(seen.len(), 4);
        assert_eq!(seen[0], (4096, ZERO_PIECE_BYTES));
        assert_eq!(seen[3], (4096 + 3 * ZERO_PIECE_BYTES as u64, 512));
    }

    #[test]
    fn a_file_range_reads_back_as_zeroes() {
        use std::os::unix::fs::FileExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("member");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        file.write_all_at(&vec![0xa5; 1 << 20], 0).unwrap();
        let native = zero_natively(&file, false, 4096, 65536).unwrap();
        if !native {
            write_zeroes_in_pieces(4096, 65536, |at, b| file.write_all_at(b, at)).unwrap();
        }
        let mut back = vec![0u8; 1 << 20];
        file.read_exact_at(&mut back, 0).unwrap();
        assert!(back[..4096].iter().all(|&b| b == 0xa5));
        assert!(back[4096..4096 + 65536].iter().all(|&b| b == 0));
        assert!(back[4096 + 65536..].iter().all(|&b| b == 0xa5));
        assert_eq!(
            file.metadata().unwrap().len(),
            1 << 20,
            "the size never changes"
        );
    }
}
