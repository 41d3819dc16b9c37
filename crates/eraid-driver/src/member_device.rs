//! Opening a member by what it is named as: an NBD URI (`nbd://`,
//! `nbds://`, `nbd+unix://`, `nbds+unix://`) is another host's export
//! ([`NbdMember`]); anything else is a file or block device
//! ([`MemberFile`]).

use std::io;
use std::path::Path;

use crate::member::{MemberFile, MemberOptions};
use crate::member_io::MemberIo;
use crate::member_nbd::NbdMember;

/// True when `path` names an NBD export rather than a file: its scheme
/// starts with `nbd` (`nbd://...`). Such a name is never opened as a file,
/// even a malformed one, which is refused as a bad URI instead.
pub fn is_nbd_uri(path: &Path) -> bool {
    path.to_str().is_some_and(eraid_nbd::looks_like_nbd_uri)
}

/// An open member of either kind.
#[derive(Debug)]
pub enum MemberDevice {
    File(MemberFile),
    Nbd(NbdMember),
}

impl MemberDevice {
    pub fn open(path: impl AsRef<Path>) -> io::Result<MemberDevice> {
        MemberDevice::open_with(path, MemberOptions::default())
    }

    /// Opens `path` as an NBD export when it is a URI, else as a file
    /// (`options.direct` has no meaning for an export).
    pub fn open_with(path: impl AsRef<Path>, options: MemberOptions) -> io::Result<MemberDevice> {
        let path = path.as_ref();
        if is_nbd_uri(path) {
            let text = path.to_str().expect("is_nbd_uri checked it is UTF-8");
            return NbdMember::open(text, options).map(MemberDevice::Nbd);
        }
        MemberFile::open_with(path, options).map(MemberDevice::File)
    }

    /// The name it was opened by: a file's path, or the URI as given.
    pub fn path(&self) -> &Path {
        match self {
            MemberDevice::File(file) => file.path(),
            MemberDevice::Nbd(export) => Path::new(export.uri()),
        }
    }

    pub fn size_bytes(&self) -> u64 {
        match self {
            MemberDevice::File(file) => file.size_bytes(),
            MemberDevice::Nbd(export) => export.size_bytes(),
        }
    }

    /// True when I/O goes through O_DIRECT (never for an export: the
    /// server decides how it caches).
    pub fn direct(&self) -> bool {
        match self {
            MemberDevice::File(file) => file.direct(),
            MemberDevice::Nbd(_) => false,
        }
    }

    pub fn is_nbd(&self) -> bool {
        matches!(self, MemberDevice::Nbd(_))
    }

    fn io(&self) -> &dyn MemberIo {
        match self {
            MemberDevice::File(file) => file,
            MemberDevice::Nbd(export) => export,
        }
    }
}

impl MemberIo for MemberDevice {
    fn label(&self) -> &str {
        self.io().label()
    }
    fn read_at(&self, offset_bytes: u64, len_bytes: usize) -> io::Result<Vec<u8>> {
        self.io().read_at(offset_bytes, len_bytes)
    }
    fn read_into(&self, offset_bytes: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.io().read_into(offset_bytes, buf)
    }
    fn write_at(&self, offset_bytes: u64, data: &[u8]) -> io::Result<()> {
        self.io().write_at(offset_bytes, data)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.io().sync_data()
    }
    fn memory_backed(&self) -> bool {
        self.io().memory_backed()
    }
    fn write_zeroes(&self, offset_bytes: u64, len_bytes: u64) -> io::Result<()> {
        self.io().write_zeroes(offset_bytes, len_bytes)
    }
}
