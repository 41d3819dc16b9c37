//! RAIDframe's disk-oriented reconstruction (DOR, Holland's thesis): one
//! reconstruction process per surviving disk, each reading that disk's
//! units in address order, ahead of the others by at most its buffers
//! (`dor_reads_ahead` units). Here a stripe's units are read by one stripe
//! op under the stripe lock (so a user write cannot slip between them);
//! each surviving disk's process is its count of units being read, and a
//! stripe starts only while every disk it reads has a buffer free. Its I/O
//! goes out at low priority (drivers serve users' I/O first), and no rate
//! floor or ceiling applies: the bandwidth users leave is the rebuild's.

#[derive(Debug)]
pub(in crate::array) struct DiskProcesses {
    /// Units each member slot's process is reading now.
    reading: Vec<u64>,
    reads_ahead: u64,
}

impl DiskProcesses {
    pub fn new(members: usize, reads_ahead: u64) -> DiskProcesses {
        assert!(reads_ahead > 0, "a validated read-ahead is positive");
        DiskProcesses {
            reading: vec![0; members],
            reads_ahead,
        }
    }

    /// Every disk in `sources` has a buffer free.
    pub fn has_room(&self, sources: &[usize]) -> bool {
        sources.iter().all(|&m| self.reading[m] < self.reads_ahead)
    }

    pub fn started(&mut self, sources: &[usize]) {
        for &m in sources {
            self.reading[m] += 1;
        }
    }

    pub fn finished(&mut self, sources: &[usize]) {
        for &m in sources {
            self.reading[m] = self.reading[m]
                .checked_sub(1)
                .expect("a disk process finished a unit it did not start");
        }
    }

    #[cfg(test)]
    pub fn reading(&self, member: usize) -> u64 {
        self.reading[member]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_disk_with_its_buffers_full_holds_the_stripes_that_read_it() {
        let mut disks = DiskProcesses::new(3, 2);
        disks.started(&[0, 1]);
        disks.started(&[0, 2]);
        assert!(!disks.has_room(&[0, 1]), "disk 0 reads two units ahead");
        assert!(disks.has_room(&[1, 2]));
        disks.finished(&[0, 1]);
        assert!(disks.has_room(&[0, 1]));
        assert_eq!(disks.reading(2), 1);
    }
}
