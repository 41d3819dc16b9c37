//! Small synchronous helpers for creating and assembling arrays outside the
//! engine (the CLI reads and writes superblocks with these).

use std::io;

#[cfg(test)]
use crate::member::MemberFile;
use crate::member_io::MemberIo;

/// Reads the first `len_bytes` of `member` (its metadata area) for the core
/// to decode. A member shorter than that reads as zeroes past its end, which
/// the decoder rejects as "no superblock".
pub fn read_metadata_area(member: &impl MemberIo, len_bytes: usize) -> io::Result<Vec<u8>> {
    member
        .read_at(0, len_bytes)
        .map_err(|e| context(member, "read metadata area of", e))
}

/// Writes `bytes` at `offset_bytes` and makes them durable (fdatasync)
/// before returning.
pub fn write_at_sync(member: &impl MemberIo, offset_bytes: u64, bytes: &[u8]) -> io::Result<()> {
    member
        .write_at(offset_bytes, bytes)
        .map_err(|e| context(member, "write metadata to", e))?;
    member
        .sync_data()
        .map_err(|e| context(member, "fdatasync", e))
}

fn context(member: &impl MemberIo, what: &str, err: io::Error) -> io::Error {
    io::Error::new(err.kind(), format!("{what} {}: {err}", member.label()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_round_trip_is_synced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m0");
        std::fs::File::create(&path)
            .unwrap()
            .set_len(1 << 20)
            .unwrap();
        let member = MemberFile::open(&path).unwrap();
        let superblock: Vec<u8> = (0..4096).map(|i| (i % 200) as u8).collect();
        write_at_sync(&member, 4096, &superblock).unwrap();
        assert_eq!(member.counters().syncs, 1);
        let area = read_metadata_area(&member, 1 << 20).unwrap();
        assert_eq!(area.len(), 1 << 20);
        assert_eq!(&area[4096..8192], &superblock[..]);
        assert!(area[..4096].iter().all(|&b| b == 0));
    }

    #[test]
    fn short_member_reads_zeroes_past_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m0");
        std::fs::File::create(&path).unwrap();
        let member = MemberFile::open(&path).unwrap();
        assert_eq!(read_metadata_area(&member, 8192).unwrap(), vec![0; 8192]);
    }

    #[test]
    fn errors_name_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m0");
        std::fs::File::create(&path).unwrap().set_len(8192).unwrap();
        let options = crate::MemberOptions {
            writable: false,
            ..Default::default()
        };
        let member = MemberFile::open_with(&path, options).unwrap();
        let err = write_at_sync(&member, 0, &[1; 512]).unwrap_err();
        assert!(
            err.to_string().contains(&path.display().to_string()),
            "{err}"
        );
    }
}
