//! A pool of worker threads that perform device I/Os.
//!
//! Blocking `pread`/`pwrite`/`fdatasync` calls run on many threads at once so
//! the array keeps every member busy; the engine thread never blocks on a
//! device.
//!
//! Ordering: jobs run in any order, on any worker. The core's contract makes
//! that safe: it only issues `DeviceOp::Flush` for a member after the writes
//! the flush must cover have *completed* (their completions came back), so a
//! plain `fdatasync` when the flush job runs covers them. The pool adds no
//! barrier of its own; a core that issued a flush together with still
//! running writes would get no durability guarantee for those writes.
//!
//! Priority: a worker takes a `Normal` I/O whenever one is queued and a
//! `Low` one (DOR's rebuild) only when none is; a low I/O already running
//! is not interrupted.

use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};
use eraid_core::io::{DeviceIo, DeviceOp, IoCompletion, IoId, IoPriority};

use crate::member_io::MemberIo;

/// Worker threads per member when not configured.
pub const IO_THREADS_PER_MEMBER: usize = 4;
/// Upper bound of the default thread count.
pub const IO_THREADS_MAX: usize = 32;

/// The default worker count for an array of `member_count` members.
pub fn default_io_threads(member_count: usize) -> usize {
    member_count
        .saturating_mul(IO_THREADS_PER_MEMBER)
        .clamp(1, IO_THREADS_MAX)
}

/// A finished device I/O, as handed back to the engine.
pub type FinishedIo = (IoId, IoCompletion);

/// The devices the workers address, by member slot. A growth appends to it
/// while the pool runs (`IoPool::add_members`), so workers look a member up
/// per I/O instead of holding a fixed list.
type MemberTable = Arc<RwLock<Vec<Arc<dyn MemberIo>>>>;

pub struct IoPool {
    /// Unbounded on purpose: the core bounds what it has in flight, and the
    /// engine thread must never block here, or workers blocked on sending
    /// completions to the engine could deadlock with it.
    job_tx: Option<Sender<DeviceIo>>,
    /// Kept to start more workers when members are added.
    job_rx: Receiver<DeviceIo>,
    /// Low-priority jobs, taken only while `job_rx` is empty.
    low_tx: Option<Sender<DeviceIo>>,
    low_rx: Receiver<DeviceIo>,
    done_tx: Sender<FinishedIo>,
    members: MemberTable,
    workers: Vec<JoinHandle<()>>,
}

impl IoPool {
    /// Starts `threads` workers (at least one) performing I/O on `members`
    /// (indexed by `DeviceIo::member`) and sending completions to `done_tx`.
    pub fn start(
        members: Arc<[Arc<dyn MemberIo>]>,
        threads: usize,
        done_tx: Sender<FinishedIo>,
    ) -> std::io::Result<IoPool> {
        let (job_tx, job_rx) = crossbeam_channel::unbounded::<DeviceIo>();
        let (low_tx, low_rx) = crossbeam_channel::unbounded::<DeviceIo>();
        let mut pool = IoPool {
            job_tx: Some(job_tx),
            job_rx,
            low_tx: Some(low_tx),
            low_rx,
            done_tx,
            members: Arc::new(RwLock::new(members.to_vec())),
            workers: Vec::new(),
        };
        // On a spawn error `pool` is dropped, which stops the workers
        // already started.
        pool.ensure_threads(threads.max(1))?;
        Ok(pool)
    }

    pub fn threads(&self) -> usize {
        self.workers.len()
    }

    /// Starts workers until there are at least `threads`.
    pub fn ensure_threads(&mut self, threads: usize) -> std::io::Result<()> {
        while self.workers.len() < threads {
            let index = self.workers.len();
            let members = Arc::clone(&self.members);
            let job_rx = self.job_rx.clone();
            let low_rx = self.low_rx.clone();
            let done_tx = self.done_tx.clone();
            let worker = std::thread::Builder::new()
                .name(format!("eraid-io-{index}"))
                .spawn(move || worker_loop(&members, &job_rx, &low_rx, &done_tx))?;
            self.workers.push(worker);
        }
        Ok(())
    }

    /// How many member slots I/Os can address.
    pub fn member_count(&self) -> usize {
        read_table(&self.members).len()
    }

    /// Appends devices as new member slots (a growth); returns the first new
    /// slot. I/O to them works as soon as this returns.
    pub fn add_members(&self, devices: Vec<Arc<dyn MemberIo>>) -> usize {
        let mut table = self
            .members
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let first = table.len();
        table.extend(devices);
        first
    }

    /// Puts `device` in place of device `index` (one the array stopped
    /// using); I/O still running on the old one finishes there.
    pub fn replace_member(&self, index: usize, device: Arc<dyn MemberIo>) {
        let mut table = self
            .members
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(slot) = table.get_mut(index) {
            *slot = device;
        }
    }

    /// Drops the member slots from `len` on (a growth the array refused).
    /// The caller guarantees no I/O to them is queued or running.
    pub fn truncate_members(&self, len: usize) {
        self.members
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .truncate(len);
    }

    /// Queues one I/O; its completion arrives on the `done_tx` channel.
    pub fn submit(&self, io: DeviceIo) {
        let queue = match io.priority {
            IoPriority::Normal => &self.job_tx,
            IoPriority::Low => &self.low_tx,
        };
        let Some(job_tx) = queue else {
            unreachable!("job_tx and low_tx are only taken in drop");
        };
        if let Err(crossbeam_channel::SendError(io)) = job_tx.send(io) {
            // Cannot happen while the pool holds its receiver; answer
            // rather than hang all the same.
            let message = format!("member {}: no I/O worker is running", io.member);
            let _ = self.done_tx.send((io.id, IoCompletion::Failed(message)));
        }
    }
}

impl Drop for IoPool {
    /// Lets the workers finish the queued jobs, then joins them.
    fn drop(&mut self) {
        self.job_tx = None;
        self.low_tx = None;
        for worker in self.workers.drain(..) {
            if worker.join().is_err() {
                tracing::error!("an I/O worker panicked");
            }
        }
    }
}

fn read_table(table: &MemberTable) -> std::sync::RwLockReadGuard<'_, Vec<Arc<dyn MemberIo>>> {
    table
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The next job: a normal one if any is queued, else whichever comes
/// first; None once both queues are closed and empty.
fn next_job(job_rx: &Receiver<DeviceIo>, low_rx: &Receiver<DeviceIo>) -> Option<DeviceIo> {
    if let Ok(io) = job_rx.try_recv() {
        return Some(io);
    }
    crossbeam_channel::select! {
        recv(job_rx) -> io => io.ok().or_else(|| low_rx.recv().ok()),
        recv(low_rx) -> io => io.ok().or_else(|| job_rx.recv().ok()),
    }
}

fn worker_loop(
    members: &MemberTable,
    job_rx: &Receiver<DeviceIo>,
    low_rx: &Receiver<DeviceIo>,
    done_tx: &Sender<FinishedIo>,
) {
    while let Some(io) = next_job(job_rx, low_rx) {
        let id = io.id;
        // Look the member up and let go of the table before the I/O runs.
        let (member, member_count) = {
            let table = read_table(members);
            (table.get(io.member).cloned(), table.len())
        };
        // A panicking device must fail one I/O, not leave it unanswered
        // forever (which would hang the array).
        let completion = panic::catch_unwind(AssertUnwindSafe(|| {
            execute_on(member.as_ref(), member_count, io)
        }))
        .unwrap_or_else(|_| IoCompletion::Failed(format!("I/O {} panicked", id.0)));
        if done_tx.send((id, completion)).is_err() {
            // The engine is gone; nobody wants the rest.
            return;
        }
    }
}

/// Performs one I/O and describes any failure with the member, its label,
/// the operation, offset and OS error.
pub fn execute(members: &[Arc<dyn MemberIo>], io: DeviceIo) -> IoCompletion {
    execute_on(members.get(io.member), members.len(), io)
}

/// [`execute`] on a member already looked up (`None`: no such slot among
/// `member_count`).
fn execute_on(
    member: Option<&Arc<dyn MemberIo>>,
    member_count: usize,
    io: DeviceIo,
) -> IoCompletion {
    let Some(member) = member else {
        return IoCompletion::Failed(format!(
            "member {} does not exist: the array has {member_count} members",
            io.member,
        ));
    };
    let fail = |what: String, err: std::io::Error| {
        IoCompletion::Failed(format!(
            "member {} ({}): {what} failed: {err}",
            io.member,
            member.label()
        ))
    };
    match io.op {
        DeviceOp::Read { offset_bytes, len_bytes } => match member.read_at(offset_bytes, len_bytes) {
            Ok(data) if data.len() == len_bytes => IoCompletion::Read(data),
            Ok(data) => IoCompletion::Failed(format!(
                "member {} ({}): read of {len_bytes} bytes at offset {offset_bytes} returned {} bytes",
                io.member,
                member.label(),
                data.len()
            )),
            Err(err) => fail(format!("read of {len_bytes} bytes at offset {offset_bytes}"), err),
        },
        DeviceOp::Write { offset_bytes, data } => match member.write_at(offset_bytes, &data) {
            Ok(()) => IoCompletion::Done,
            Err(err) => fail(format!("write of {} bytes at offset {offset_bytes}", data.len()), err),
        },
        DeviceOp::WriteZeroes { offset_bytes, len_bytes } => {
            match member.write_zeroes(offset_bytes, len_bytes) {
                Ok(()) => IoCompletion::Done,
                Err(err) => fail(format!("zeroing of {len_bytes} bytes at offset {offset_bytes}"), err),
            }
        }
        DeviceOp::Flush => match member.sync_data() {
            Ok(()) => IoCompletion::Done,
            Err(err) => fail("flush (fdatasync)".to_string(), err),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use eraid_core::io::IoCause;
    use std::io;
    use std::sync::{Condvar, Mutex};
    use std::time::Duration;

    /// A device whose reads wait until `parties` reads are running at once:
    /// in a pool that serialised I/O the first read times out and fails.
    struct RendezvousDevice {
        parties: usize,
        arrived: Mutex<usize>,
        all_arrived: Condvar,
    }

    impl RendezvousDevice {
        fn new(parties: usize) -> RendezvousDevice {
            RendezvousDevice {
                parties,
                arrived: Mutex::new(0),
                all_arrived: Condvar::new(),
            }
        }
    }

    impl MemberIo for RendezvousDevice {
        fn label(&self) -> &str {
            "rendezvous"
        }
        fn read_at(&self, _offset_bytes: u64, len_bytes: usize) -> io::Result<Vec<u8>> {
            let mut arrived = self.arrived.lock().unwrap();
            *arrived += 1;
            self.all_arrived.notify_all();
            let (arrived, timeout) = self
                .all_arrived
                .wait_timeout_while(arrived, Duration::from_secs(10), |arrived| {
                    *arrived < self.parties
                })
                .unwrap();
            if timeout.timed_out() {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("only {} reads ran at once", *arrived),
                ));
            }
            Ok(vec![0; len_bytes])
        }
        fn write_at(&self, _offset_bytes: u64, _data: &[u8]) -> io::Result<()> {
            Ok(())
        }
        fn sync_data(&self) -> io::Result<()> {
            Err(io::Error::from_raw_os_error(libc::EIO))
        }
    }

    fn read_io(id: u64, member: usize) -> DeviceIo {
        DeviceIo {
            id: IoId(id),
            member,
            op: DeviceOp::Read {
                offset_bytes: id * 512,
                len_bytes: 512,
            },
            cause: IoCause::User,
            priority: Default::default(),
        }
    }

    /// Logs the offsets it reads; the read at offset 0 waits for `open`.
    struct GateDevice {
        open: Mutex<crossbeam_channel::Receiver<()>>,
        log: Mutex<Vec<u64>>,
    }

    impl MemberIo for GateDevice {
        fn label(&self) -> &str {
            "gate"
        }
        fn read_at(&self, offset_bytes: u64, len_bytes: usize) -> io::Result<Vec<u8>> {
            if offset_bytes == 0 {
                let _ = self
                    .open
                    .lock()
                    .unwrap()
                    .recv_timeout(Duration::from_secs(30));
            }
            self.log.lock().unwrap().push(offset_bytes);
            Ok(vec![0; len_bytes])
        }
        fn write_at(&self, _offset_bytes: u64, _data: &[u8]) -> io::Result<()> {
            Ok(())
        }
        fn sync_data(&self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn queued_normal_ios_run_before_queued_low_priority_ones() {
        let (open_tx, open_rx) = crossbeam_channel::unbounded();
        let gate = Arc::new(GateDevice {
            open: Mutex::new(open_rx),
            log: Mutex::new(Vec::new()),
        });
        let device: Arc<dyn MemberIo> = gate.clone();
        let (done_tx, done_rx) = crossbeam_channel::unbounded();
        let pool = IoPool::start(Arc::from(vec![device]), 1, done_tx).unwrap();
        // The one worker is held by the read at offset 0 ...
        pool.submit(read_io(0, 0));
        std::thread::sleep(Duration::from_millis(100));
        // ... while low-priority reads queue, then normal ones.
        for id in [1, 2, 3] {
            pool.submit(DeviceIo {
                priority: IoPriority::Low,
                ..read_io(id, 0)
            });
        }
        for id in [4, 5] {
            pool.submit(read_io(id, 0));
        }
        open_tx.send(()).unwrap();
        for _ in 0..6 {
            done_rx
                .recv_timeout(Duration::from_secs(30))
                .expect("an I/O never completed");
        }
        assert_eq!(
            *gate.log.lock().unwrap(),
            vec![0, 4 * 512, 5 * 512, 512, 2 * 512, 3 * 512]
        );
    }

    #[test]
    fn ios_run_concurrently() {
        let parties = 4;
        let device: Arc<dyn MemberIo> = Arc::new(RendezvousDevice::new(parties));
        let (done_tx, done_rx) = crossbeam_channel::unbounded();
        let pool = IoPool::start(Arc::from(vec![device]), parties, done_tx).unwrap();
        for id in 0..parties as u64 {
            pool.submit(read_io(id, 0));
        }
        let mut ids = Vec::new();
        for _ in 0..parties {
            let (id, completion) = done_rx
                .recv_timeout(Duration::from_secs(30))
                .expect("an I/O never completed");
            assert_eq!(
                completion,
                IoCompletion::Read(vec![0; 512]),
                "I/Os did not run concurrently"
            );
            ids.push(id.0);
        }
        ids.sort_unstable();
        assert_eq!(ids, vec![0, 1, 2, 3]);
    }

    #[test]
    fn failures_name_member_operation_and_os_error() {
        let device: Arc<dyn MemberIo> = Arc::new(RendezvousDevice::new(1));
        let members: Vec<Arc<dyn MemberIo>> = vec![device];
        let flush = DeviceIo {
            id: IoId(9),
            member: 0,
            op: DeviceOp::Flush,
            cause: IoCause::Metadata,
            priority: Default::default(),
        };
        let IoCompletion::Failed(message) = execute(&members, flush) else {
            panic!("a failing fdatasync must fail the I/O");
        };
        assert!(message.contains("member 0 (rendezvous)"), "{message}");
        assert!(message.contains("fdatasync"), "{message}");
        assert!(message.contains("os error 5"), "{message}");

        let IoCompletion::Failed(message) = execute(&members, read_io(1, 3)) else {
            panic!("an I/O to a missing member must fail");
        };
        assert!(message.contains("member 3 does not exist"), "{message}");
    }

    #[test]
    fn default_thread_count_is_bounded() {
        assert_eq!(default_io_threads(0), 1);
        assert_eq!(default_io_threads(3), 12);
        assert_eq!(default_io_threads(100), IO_THREADS_MAX);
    }
}
