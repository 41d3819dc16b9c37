//! A member in a `Vec` that says whether it is memory-backed and records
//! the name of every thread that reads or writes it.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::sync::{Arc, Mutex};

use eraid_driver::MemberIo;

pub struct RecordingMember {
    label: String,
    memory_backed: bool,
    pub bytes: Mutex<Vec<u8>>,
    /// I/Os performed, by the name of the thread that performed them.
    threads: Mutex<BTreeMap<String, u64>>,
}

impl RecordingMember {
    pub fn new(index: usize, memory_backed: bool, len_bytes: usize) -> Arc<RecordingMember> {
        Arc::new(RecordingMember {
            label: format!("m{index}"),
            memory_backed,
            bytes: Mutex::new(vec![0; len_bytes]),
            threads: Mutex::default(),
        })
    }

    pub fn label(&self) -> &str {
        &self.label
    }

    fn note_thread(&self) {
        let name = std::thread::current()
            .name()
            .unwrap_or("unnamed")
            .to_string();
        *self.threads.lock().unwrap().entry(name).or_default() += 1;
    }

    /// The threads that read or wrote so far.
    pub fn threads(&self) -> BTreeSet<String> {
        self.threads.lock().unwrap().keys().cloned().collect()
    }

    /// How many reads and writes each thread performed.
    pub fn ios_by_thread(&self) -> BTreeMap<String, u64> {
        self.threads.lock().unwrap().clone()
    }
}

impl MemberIo for RecordingMember {
    fn label(&self) -> &str {
        &self.label
    }
    fn memory_backed(&self) -> bool {
        self.memory_backed
    }
    fn read_at(&self, offset_bytes: u64, len_bytes: usize) -> io::Result<Vec<u8>> {
        self.note_thread();
        let bytes = self.bytes.lock().unwrap();
        Ok(bytes[offset_bytes as usize..][..len_bytes].to_vec())
    }
    fn write_at(&self, offset_bytes: u64, data: &[u8]) -> io::Result<()> {
        self.note_thread();
        self.bytes.lock().unwrap()[offset_bytes as usize..][..data.len()].copy_from_slice(data);
        Ok(())
    }
    fn sync_data(&self) -> io::Result<()> {
        Ok(())
    }
}
