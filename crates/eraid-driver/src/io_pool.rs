//! A pool of worker threads that perform device I/Os.
//!
//! Blocking `pread`/`pwrite`/`fdatasync` calls run on many threads at once so
//! the array keeps every member busy; no thread running the array's state
//! machine blocks on a device.
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
//!
//! Hung devices: a `pwrite` on a hung member can block its thread for
//! ever. `replace_stuck_workers` starts a new worker for every one busy
//! too long (the stuck one exits when its call returns, if ever), and
//! marks a device busy past the member timeout as hung: I/Os queued for
//! it then fail at once instead of taking more threads. The core decides
//! what a timeout means (it fails the member); the pool only keeps the
//! other members served.

use std::collections::HashSet;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use eraid_buffers::BufferPool;
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

/// What one worker is doing.
#[derive(Default)]
struct WorkerState {
    /// The device and since when, while an I/O runs.
    busy: Option<(usize, Instant)>,
    /// Another worker was started in its place: it exits after this I/O.
    replaced: bool,
}

/// Worker states and hung devices, shared by the pool and its workers.
#[derive(Default)]
struct Watch {
    workers: Vec<WorkerState>,
    /// Devices with an I/O stuck past the member timeout: since when.
    hung: HashSet<usize>,
}

type SharedWatch = Arc<Mutex<Watch>>;

fn lock_watch(watch: &SharedWatch) -> std::sync::MutexGuard<'_, Watch> {
    watch
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

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
    /// Every worker started, by index (as in `watch.workers`).
    workers: Vec<Option<JoinHandle<()>>>,
    watch: SharedWatch,
    /// Where member reads land: aligned for O_DIRECT, reused rather than
    /// allocated and zeroed per read, and passed on to the user's reply
    /// without a copy.
    read_buffers: BufferPool,
}

/// Idle read buffers the pool keeps for reuse, at most.
const READ_BUFFERS_CACHED_BYTES_MAX: u64 = 32 << 20;

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
            watch: SharedWatch::default(),
            read_buffers: BufferPool::new(READ_BUFFERS_CACHED_BYTES_MAX),
        };
        // On a spawn error `pool` is dropped, which stops the workers
        // already started.
        pool.ensure_threads(threads.max(1))?;
        Ok(pool)
    }

    /// Workers serving the queues (not counting stuck ones replaced).
    pub fn threads(&self) -> usize {
        lock_watch(&self.watch)
            .workers
            .iter()
            .filter(|w| !w.replaced)
            .count()
    }

    /// Starts workers until at least `threads` are not replaced.
    pub fn ensure_threads(&mut self, threads: usize) -> std::io::Result<()> {
        while self.threads() < threads {
            self.start_worker()?;
        }
        Ok(())
    }

    fn start_worker(&mut self) -> std::io::Result<()> {
        let index = self.workers.len();
        let members = Arc::clone(&self.members);
        let job_rx = self.job_rx.clone();
        let low_rx = self.low_rx.clone();
        let done_tx = self.done_tx.clone();
        let watch = Arc::clone(&self.watch);
        let read_buffers = self.read_buffers.clone();
        lock_watch(&self.watch).workers.push(WorkerState::default());
        let spawned = std::thread::Builder::new()
            .name(format!("eraid-io-{index}"))
            .spawn(move || {
                let queues = WorkerQueues {
                    members: &members,
                    job_rx: &job_rx,
                    low_rx: &low_rx,
                    done_tx: &done_tx,
                    watch: &watch,
                    read_buffers: &read_buffers,
                };
                worker_loop(index, &queues)
            });
        match spawned {
            Ok(worker) => {
                self.workers.push(Some(worker));
                Ok(())
            }
            Err(error) => {
                lock_watch(&self.watch).workers.pop();
                Err(error)
            }
        }
    }

    /// Starts a new worker in place of each one whose I/O has run longer
    /// than `stuck_after`, and marks a device whose I/O has run longer
    /// than `hung_after` as hung (its queued I/Os fail at once until the
    /// stuck one returns). Returns how many workers were replaced.
    pub fn replace_stuck_workers(&mut self, stuck_after: Duration, hung_after: Duration) -> usize {
        let now = Instant::now();
        let mut replaced = 0;
        {
            let mut watch = lock_watch(&self.watch);
            let mut hung = Vec::new();
            for worker in &mut watch.workers {
                let Some((device, since)) = worker.busy else {
                    continue;
                };
                let busy_for = now.saturating_duration_since(since);
                if busy_for >= stuck_after && !worker.replaced {
                    worker.replaced = true;
                    replaced += 1;
                }
                if busy_for >= hung_after {
                    hung.push(device);
                }
            }
            for device in hung {
                if watch.hung.insert(device) {
                    tracing::error!(
                        device,
                        "an I/O has not returned within the member timeout: device treated as hung"
                    );
                }
            }
        }
        for _ in 0..replaced {
            if let Err(error) = self.start_worker() {
                tracing::error!("cannot start a worker in place of a stuck one: {error}");
            }
        }
        replaced
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

    /// Hands `io` back, ready to perform on the caller's thread, when its
    /// member is memory-backed ([`MemberIo::memory_backed`]); otherwise
    /// queues it for a worker (its completion arrives on `done_tx`) and
    /// returns None.
    pub fn submit_or_hand_back(&self, io: DeviceIo) -> Option<MemoryIo> {
        // One look at the table, let go of before the I/O runs.
        let (member, member_count) = {
            let table = read_table(&self.members);
            let member = table.get(io.member).filter(|m| m.memory_backed()).cloned();
            (member, table.len())
        };
        match member {
            Some(member) => Some(MemoryIo {
                io,
                member,
                member_count,
                read_buffers: self.read_buffers.clone(),
            }),
            None => {
                self.submit(io);
                None
            }
        }
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
    /// Lets the workers finish the queued jobs, then joins them; a worker
    /// replaced because it is stuck, or in a call on a device found hung
    /// (it may have entered it just before the device was marked), is left
    /// to exit on its own.
    fn drop(&mut self) {
        self.job_tx = None;
        self.low_tx = None;
        let stuck: Vec<bool> = {
            let watch = lock_watch(&self.watch);
            watch
                .workers
                .iter()
                .map(|w| {
                    w.replaced
                        || w.busy
                            .is_some_and(|(device, _)| watch.hung.contains(&device))
                })
                .collect()
        };
        for (index, worker) in self.workers.iter_mut().enumerate() {
            let Some(worker) = worker.take() else {
                continue;
            };
            if stuck.get(index).copied().unwrap_or(false) {
                tracing::warn!("I/O worker {index} is stuck in a device call; not waiting for it");
                continue;
            }
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

/// What a worker shares with the pool.
struct WorkerQueues<'a> {
    members: &'a MemberTable,
    job_rx: &'a Receiver<DeviceIo>,
    low_rx: &'a Receiver<DeviceIo>,
    done_tx: &'a Sender<FinishedIo>,
    watch: &'a SharedWatch,
    read_buffers: &'a BufferPool,
}

fn worker_loop(index: usize, queues: &WorkerQueues<'_>) {
    let WorkerQueues {
        members,
        job_rx,
        low_rx,
        done_tx,
        watch,
        read_buffers,
    } = *queues;
    while let Some(io) = next_job(job_rx, low_rx) {
        let id = io.id;
        let device = io.member;
        // Look the member up and let go of the table before the I/O runs.
        let (member, member_count) = {
            let table = read_table(members);
            (table.get(device).cloned(), table.len())
        };
        let hung = {
            let mut watch = lock_watch(watch);
            let hung = watch.hung.contains(&device);
            if !hung {
                watch.workers[index].busy = Some((device, Instant::now()));
            }
            hung
        };
        let completion = if hung {
            IoCompletion::Failed(format!(
                "member {device} ({}): not tried: an earlier I/O on it has not returned within the member timeout",
                member.as_ref().map_or("?", |m| m.label())
            ))
        } else {
            execute_caught(member.as_ref(), member_count, io, read_buffers)
        };
        let replaced = {
            let mut watch = lock_watch(watch);
            watch.workers[index].busy = None;
            // The device answered: it is no longer hung, unless another
            // I/O on it is still stuck.
            if !hung
                && !watch
                    .workers
                    .iter()
                    .any(|w| w.busy.is_some_and(|(d, _)| d == device))
            {
                watch.hung.remove(&device);
            }
            watch.workers[index].replaced
        };
        if done_tx.send((id, completion)).is_err() || replaced {
            // The engine is gone, or another worker took this one's place.
            return;
        }
    }
}

/// An I/O on a memory-backed member, to be performed by whichever thread
/// holds it (a copy in memory costs less than a hand-off to a worker).
pub struct MemoryIo {
    io: DeviceIo,
    member: Arc<dyn MemberIo>,
    member_count: usize,
    read_buffers: BufferPool,
}

impl MemoryIo {
    pub fn id(&self) -> IoId {
        self.io.id
    }

    /// Runs the I/O here; a panicking device fails only this I/O.
    pub fn perform(self) -> IoCompletion {
        execute_caught(
            Some(&self.member),
            self.member_count,
            self.io,
            &self.read_buffers,
        )
    }
}

/// [`execute_on`], with a panicking device failing this one I/O instead of
/// leaving it unanswered forever (which would hang the array).
pub(crate) fn execute_caught(
    member: Option<&Arc<dyn MemberIo>>,
    member_count: usize,
    io: DeviceIo,
    read_buffers: &BufferPool,
) -> IoCompletion {
    let id = io.id;
    panic::catch_unwind(AssertUnwindSafe(|| {
        execute_on(member, member_count, io, read_buffers)
    }))
    .unwrap_or_else(|_| IoCompletion::Failed(format!("I/O {} panicked", id.0)))
}

/// Performs one I/O and describes any failure with the member, its label,
/// the operation, offset and OS error.
/// Reads land in buffers of a pool of their own.
pub fn execute(members: &[Arc<dyn MemberIo>], io: DeviceIo) -> IoCompletion {
    let read_buffers = BufferPool::new(0);
    execute_on(members.get(io.member), members.len(), io, &read_buffers)
}

/// [`execute`] on a member already looked up (`None`: no such slot among
/// `member_count`).
fn execute_on(
    member: Option<&Arc<dyn MemberIo>>,
    member_count: usize,
    io: DeviceIo,
    read_buffers: &BufferPool,
) -> IoCompletion {
    let Some(member) = member else {
        return IoCompletion::Failed(format!(
            "member {} does not exist: the array has {member_count} members",
            io.member,
        ));
    };
    let describe = |what: String, err: &std::io::Error| {
        format!(
            "member {} ({}): {what} failed: {err}{}",
            io.member,
            member.label(),
            crate::device_errors::no_space_note(err, member.label())
        )
    };
    let fail = |what: String, err: std::io::Error| IoCompletion::Failed(describe(what, &err));
    match io.op {
        DeviceOp::Read {
            offset_bytes,
            len_bytes,
        } => {
            let mut buf = read_buffers.take(len_bytes);
            match member.read_into(offset_bytes, &mut buf) {
                Ok(got_bytes) if got_bytes == len_bytes => IoCompletion::Read(buf.into()),
                // A short read or a media error: the core may repair the range.
                Ok(got_bytes) => IoCompletion::ReadError(format!(
                    "member {} ({}): read of {len_bytes} bytes at offset {offset_bytes} returned {got_bytes} bytes",
                    io.member,
                    member.label(),
                )),
            Err(err) if crate::device_errors::is_media_error(&err) => IoCompletion::ReadError(
                describe(format!("read of {len_bytes} bytes at offset {offset_bytes}"), &err),
            ),
                Err(err) => fail(format!("read of {len_bytes} bytes at offset {offset_bytes}"), err),
            }
        }
        DeviceOp::Write { offset_bytes, data } => match member.write_at(offset_bytes, &data) {
            Ok(()) => IoCompletion::Done,
            Err(err) => fail(
                format!("write of {} bytes at offset {offset_bytes}", data.len()),
                err,
            ),
        },
        DeviceOp::WriteZeroes {
            offset_bytes,
            len_bytes,
        } => match member.write_zeroes(offset_bytes, len_bytes) {
            Ok(()) => IoCompletion::Done,
            Err(err) => fail(
                format!("zeroing of {len_bytes} bytes at offset {offset_bytes}"),
                err,
            ),
        },
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
                IoCompletion::Read(vec![0; 512].into()),
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

    /// Writes block until `release` is sent (a hung member); reads work.
    struct HangingWrites {
        release: Mutex<crossbeam_channel::Receiver<()>>,
    }

    impl MemberIo for HangingWrites {
        fn label(&self) -> &str {
            "hanging"
        }
        fn read_at(&self, _offset_bytes: u64, len_bytes: usize) -> io::Result<Vec<u8>> {
            Ok(vec![0; len_bytes])
        }
        fn write_at(&self, _offset_bytes: u64, _data: &[u8]) -> io::Result<()> {
            let _ = self
                .release
                .lock()
                .unwrap()
                .recv_timeout(Duration::from_secs(60));
            Ok(())
        }
        fn sync_data(&self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_worker_stuck_on_a_hung_device_is_replaced_and_the_device_fails_fast() {
        let (release_tx, release_rx) = crossbeam_channel::unbounded();
        let hanging: Arc<dyn MemberIo> = Arc::new(HangingWrites {
            release: Mutex::new(release_rx),
        });
        let (_, never) = crossbeam_channel::unbounded();
        let healthy: Arc<dyn MemberIo> = Arc::new(HangingWrites {
            release: Mutex::new(never),
        });
        let (done_tx, done_rx) = crossbeam_channel::unbounded();
        let mut pool = IoPool::start(Arc::from(vec![hanging, healthy]), 1, done_tx).unwrap();
        let write = |id: u64, member: usize| DeviceIo {
            id: IoId(id),
            member,
            op: DeviceOp::Write {
                offset_bytes: 0,
                data: vec![1; 512].into(),
            },
            cause: IoCause::User,
            priority: Default::default(),
        };
        // The only worker hangs in device 0's write; device 1's read waits.
        pool.submit(write(1, 0));
        std::thread::sleep(Duration::from_millis(50));
        pool.submit(read_io(2, 1));
        assert!(done_rx.recv_timeout(Duration::from_millis(200)).is_err());
        // Stuck for longer than 20 ms: a new worker serves device 1.
        assert_eq!(
            pool.replace_stuck_workers(Duration::from_millis(20), Duration::from_secs(3600)),
            1
        );
        let (id, completion) = done_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("read served");
        assert_eq!(
            (id, completion),
            (IoId(2), IoCompletion::Read(vec![0; 512].into()))
        );
        assert_eq!(pool.threads(), 1);
        // Past the hung bound, device 0's next I/O fails at once.
        pool.replace_stuck_workers(Duration::from_millis(20), Duration::from_millis(20));
        pool.submit(write(3, 0));
        let (id, completion) = done_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("failed fast");
        assert_eq!(id, IoId(3));
        let IoCompletion::Failed(message) = completion else {
            panic!("a hung device's queued I/O must fail: {completion:?}");
        };
        assert!(
            message.contains("member 0 (hanging)") && message.contains("not tried"),
            "{message}"
        );
        // Dropping the pool does not wait for the stuck worker.
        let started = std::time::Instant::now();
        drop(pool);
        assert!(started.elapsed() < Duration::from_secs(5));
        release_tx.send(()).unwrap();
    }

    #[test]
    fn dropping_the_pool_leaves_workers_in_calls_on_a_hung_device_not_yet_replaced() {
        let (release_tx, release_rx) = crossbeam_channel::unbounded();
        let hanging: Arc<dyn MemberIo> = Arc::new(HangingWrites {
            release: Mutex::new(release_rx),
        });
        let (done_tx, _done_rx) = crossbeam_channel::unbounded();
        let mut pool = IoPool::start(Arc::from(vec![hanging]), 2, done_tx).unwrap();
        let write = |id: u64| DeviceIo {
            id: IoId(id),
            member: 0,
            op: DeviceOp::Write {
                offset_bytes: 0,
                data: vec![1; 512].into(),
            },
            cause: IoCause::User,
            priority: Default::default(),
        };
        // Both workers enter the device before it is found hung.
        pool.submit(write(1));
        pool.submit(write(2));
        std::thread::sleep(Duration::from_millis(100));
        // Past the hung bound but not the stuck one: the device is marked
        // hung, and neither worker is replaced.
        assert_eq!(
            pool.replace_stuck_workers(Duration::from_secs(3600), Duration::from_millis(50)),
            0
        );
        {
            let watch = lock_watch(&pool.watch);
            assert!(watch.hung.contains(&0));
            assert_eq!(watch.workers.iter().filter(|w| w.busy.is_some()).count(), 2);
        }
        let started = std::time::Instant::now();
        drop(pool);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "drop waited {:?} for workers hung in the device",
            started.elapsed()
        );
        release_tx.send(()).unwrap();
        release_tx.send(()).unwrap();
    }

    /// Reads fail with the OS error `errno`.
    struct FailingReads {
        errno: i32,
    }

    impl MemberIo for FailingReads {
        fn label(&self) -> &str {
            "failing"
        }
        fn read_at(&self, _offset_bytes: u64, _len_bytes: usize) -> io::Result<Vec<u8>> {
            Err(io::Error::from_raw_os_error(self.errno))
        }
        fn write_at(&self, _offset_bytes: u64, _data: &[u8]) -> io::Result<()> {
            Err(io::Error::from_raw_os_error(libc::ENOSPC))
        }
        fn sync_data(&self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn media_read_errors_are_reported_for_repair_other_errors_fail_the_member() {
        let eio: Vec<Arc<dyn MemberIo>> = vec![Arc::new(FailingReads { errno: libc::EIO })];
        let IoCompletion::ReadError(message) = execute(&eio, read_io(1, 0)) else {
            panic!("EIO on a read is a read error the core repairs");
        };
        assert!(
            message.contains("member 0 (failing)") && message.contains("os error 5"),
            "{message}"
        );
        let gone: Vec<Arc<dyn MemberIo>> = vec![Arc::new(FailingReads {
            errno: libc::ENODEV,
        })];
        assert!(matches!(
            execute(&gone, read_io(1, 0)),
            IoCompletion::Failed(_)
        ));
        let write = DeviceIo {
            id: IoId(2),
            member: 0,
            op: DeviceOp::Write {
                offset_bytes: 0,
                data: vec![0; 512].into(),
            },
            cause: IoCause::User,
            priority: Default::default(),
        };
        let IoCompletion::Failed(message) = execute(&eio, write) else {
            panic!("a failed write fails the member");
        };
        assert!(
            message.contains("No space left") && message.contains("is full"),
            "{message}"
        );
    }

    /// Reads return `len_bytes` of `fill`, or fewer when `short`.
    struct FilledReads {
        fill: u8,
        short: bool,
    }

    impl MemberIo for FilledReads {
        fn label(&self) -> &str {
            "filled"
        }
        fn read_at(&self, _offset_bytes: u64, len_bytes: usize) -> io::Result<Vec<u8>> {
            Ok(vec![self.fill; len_bytes - usize::from(self.short)])
        }
        fn write_at(&self, _offset_bytes: u64, _data: &[u8]) -> io::Result<()> {
            Ok(())
        }
        fn sync_data(&self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_read_lands_in_a_pooled_aligned_buffer_and_a_short_one_is_a_read_error() {
        let members: Vec<Arc<dyn MemberIo>> = vec![Arc::new(FilledReads {
            fill: 0xA5,
            short: false,
        })];
        let IoCompletion::Read(buf) = execute(&members, read_io(1, 0)) else {
            panic!("the read succeeds");
        };
        assert!(buf.is_pooled(), "read into the pool's buffer, not a vector");
        assert_eq!(buf.as_ptr() as usize % eraid_buffers::DIRECT_ALIGN_BYTES, 0);
        assert_eq!(buf, vec![0xA5; 512]);
        let short: Vec<Arc<dyn MemberIo>> = vec![Arc::new(FilledReads {
            fill: 0,
            short: true,
        })];
        let IoCompletion::ReadError(message) = execute(&short, read_io(2, 0)) else {
            panic!("a short read is a read error");
        };
        assert!(message.contains("returned 511 bytes"), "{message}");
    }

    #[test]
    fn default_thread_count_is_bounded() {
        assert_eq!(default_io_threads(0), 1);
        assert_eq!(default_io_threads(3), 12);
        assert_eq!(default_io_threads(100), IO_THREADS_MAX);
    }
}
