//! A small test-only `Machine`: a mirror over every member.
//!
//! Writes go to every member at the same offset, reads are spread over the
//! members, both split into 4 KiB pieces issued all at once (so many device
//! I/Os are in flight). A flush is an fdatasync of every member, replied to
//! after all of them complete. Close waits for in-flight requests, flushes
//! every member, then emits `Closed` (unless told not to).

#![allow(dead_code)]

pub mod recording_member;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use eraid_core::io::{
    AdminCommand, ArrayEvent, DeviceIo, DeviceOp, IoCause, IoCompletion, IoId, Machine, RequestId,
    TimeNs, UserError, UserOp, UserReply, UserRequest,
};

pub const PIECE_BYTES: usize = 4096;

/// What the test can observe of the machine from outside the engine.
#[derive(Default)]
pub struct Probe {
    /// Messages of every `IoCompletion::Failed` the machine received.
    pub failures: Mutex<Vec<String>>,
    pub ticks: AtomicU64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseStyle {
    /// Flush every member, then emit `Closed`.
    EmitClosed,
    /// Flush every member and never emit `Closed`.
    Silent,
}

struct Pending {
    remaining: usize,
    data: Option<Vec<u8>>,
    error: Option<String>,
}

enum Owner {
    Request {
        id: RequestId,
        read_at: Option<usize>,
    },
    CloseFlush,
}

pub struct MirrorMachine {
    members: usize,
    next_io: u64,
    ios: VecDeque<DeviceIo>,
    replies: VecDeque<UserReply>,
    events: VecDeque<ArrayEvent>,
    requests: HashMap<RequestId, Pending>,
    owners: HashMap<IoId, (usize, Owner)>,
    closing: bool,
    close_flushes_left: Option<usize>,
    close_style: CloseStyle,
    /// Ask for a tick this often (a perpetual timer), if set.
    tick_period_ns: Option<u64>,
    next_tick: Option<TimeNs>,
    probe: Arc<Probe>,
}

impl MirrorMachine {
    pub fn new(members: usize) -> (MirrorMachine, Arc<Probe>) {
        let probe = Arc::new(Probe::default());
        let machine = MirrorMachine {
            members,
            next_io: 1,
            ios: VecDeque::new(),
            replies: VecDeque::new(),
            events: VecDeque::new(),
            requests: HashMap::new(),
            owners: HashMap::new(),
            closing: false,
            close_flushes_left: None,
            close_style: CloseStyle::EmitClosed,
            tick_period_ns: None,
            next_tick: None,
            probe: Arc::clone(&probe),
        };
        (machine, probe)
    }

    pub fn close_style(mut self, style: CloseStyle) -> Self {
        self.close_style = style;
        self
    }

    pub fn tick_every_ns(mut self, period_ns: u64) -> Self {
        self.tick_period_ns = Some(period_ns);
        self.next_tick = Some(TimeNs(period_ns));
        self
    }

    fn issue(&mut self, member: usize, op: DeviceOp, owner: Owner) {
        let id = IoId(self.next_io);
        self.next_io += 1;
        self.owners.insert(id, (member, owner));
        self.ios.push_back(DeviceIo {
            id,
            member,
            op,
            cause: IoCause::User,
            priority: Default::default(),
        });
    }

    fn start_request(&mut self, id: RequestId, op: UserOp) {
        let mut issued = 0;
        let mut data = None;
        match op {
            UserOp::Read {
                offset_bytes,
                len_bytes,
            } => {
                data = Some(vec![0u8; len_bytes]);
                for (index, start) in (0..len_bytes).step_by(PIECE_BYTES).enumerate() {
                    let len = PIECE_BYTES.min(len_bytes - start);
                    let op = DeviceOp::Read {
                        offset_bytes: offset_bytes + start as u64,
                        len_bytes: len,
                    };
                    let owner = Owner::Request {
                        id,
                        read_at: Some(start),
                    };
                    self.issue(index % self.members, op, owner);
                    issued += 1;
                }
            }
            UserOp::Write {
                offset_bytes,
                data: bytes,
                ..
            } => {
                for start in (0..bytes.len()).step_by(PIECE_BYTES) {
                    let piece = &bytes[start..(start + PIECE_BYTES).min(bytes.len())];
                    for member in 0..self.members {
                        let op = DeviceOp::Write {
                            offset_bytes: offset_bytes + start as u64,
                            data: piece.to_vec().into(),
                        };
                        self.issue(member, op, Owner::Request { id, read_at: None });
                        issued += 1;
                    }
                }
            }
            UserOp::Flush => {
                for member in 0..self.members {
                    self.issue(
                        member,
                        DeviceOp::Flush,
                        Owner::Request { id, read_at: None },
                    );
                    issued += 1;
                }
            }
            UserOp::Trim { .. } | UserOp::WriteZeroes { .. } => {}
        }
        if issued == 0 {
            self.replies.push_back(UserReply {
                id,
                result: Ok(data.map(Into::into)),
            });
            return;
        }
        self.requests.insert(
            id,
            Pending {
                remaining: issued,
                data,
                error: None,
            },
        );
    }

    fn maybe_finish_close(&mut self) {
        if !self.closing || !self.requests.is_empty() || self.close_flushes_left.is_some() {
            return;
        }
        self.close_flushes_left = Some(self.members);
        for member in 0..self.members {
            self.issue(member, DeviceOp::Flush, Owner::CloseFlush);
        }
        self.after_close_flush();
    }

    fn after_close_flush(&mut self) {
        if self.close_flushes_left == Some(0) && self.close_style == CloseStyle::EmitClosed {
            self.events.push_back(ArrayEvent::Closed);
        }
    }
}

impl Machine for MirrorMachine {
    fn handle_request(&mut self, _now: TimeNs, request: UserRequest) {
        self.start_request(request.id, request.op);
    }

    fn handle_completion(&mut self, _now: TimeNs, io: IoId, completion: IoCompletion) {
        let (member, owner) = self
            .owners
            .remove(&io)
            .expect("completion of an unknown I/O");
        if let IoCompletion::Failed(message) = &completion {
            self.probe.failures.lock().unwrap().push(message.clone());
            self.events.push_back(ArrayEvent::MemberFailed {
                member,
                reason: message.clone(),
            });
        }
        let (id, read_at) = match owner {
            Owner::CloseFlush => {
                let left = self
                    .close_flushes_left
                    .as_mut()
                    .expect("close flush without close");
                *left -= 1;
                self.after_close_flush();
                return;
            }
            Owner::Request { id, read_at } => (id, read_at),
        };
        let pending = self
            .requests
            .get_mut(&id)
            .expect("I/O of an unknown request");
        match completion {
            IoCompletion::Read(bytes) => {
                let start = read_at.expect("read data for a non-read");
                let data = pending.data.as_mut().expect("read buffer");
                data[start..start + bytes.len()].copy_from_slice(&bytes);
            }
            IoCompletion::Done => {}
            IoCompletion::Failed(message) | IoCompletion::ReadError(message) => {
                pending.error = Some(message)
            }
        }
        pending.remaining -= 1;
        if pending.remaining == 0 {
            let pending = self.requests.remove(&id).expect("just seen");
            let result = match pending.error {
                Some(message) => Err(UserError::Unavailable(message)),
                None => Ok(pending.data.map(Into::into)),
            };
            self.replies.push_back(UserReply { id, result });
            self.maybe_finish_close();
        }
    }

    fn handle_tick(&mut self, now: TimeNs) {
        self.probe.ticks.fetch_add(1, Ordering::Relaxed);
        if let Some(period_ns) = self.tick_period_ns {
            self.next_tick = Some(TimeNs(now.0 + period_ns));
        }
    }

    fn handle_close(&mut self, _now: TimeNs) {
        self.closing = true;
        self.maybe_finish_close();
    }

    fn handle_admin(&mut self, _now: TimeNs, command: AdminCommand) -> serde_json::Value {
        match command {
            AdminCommand::Status => serde_json::json!({
                "members": self.members,
                "requests_in_flight": self.requests.len(),
                "closing": self.closing,
            }),
            _ => serde_json::json!({ "error": "no check or growth in a mirror test machine" }),
        }
    }

    fn poll_io(&mut self) -> Option<DeviceIo> {
        self.ios.pop_front()
    }

    fn poll_reply(&mut self) -> Option<UserReply> {
        self.replies.pop_front()
    }

    fn poll_event(&mut self) -> Option<ArrayEvent> {
        self.events.pop_front()
    }

    fn poll_timeout(&self) -> Option<TimeNs> {
        self.next_tick
    }
}

/// Deterministic test data.
pub fn pattern(len_bytes: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len_bytes)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// Submits asynchronously; the result arrives on the returned channel.
pub fn submit(
    handle: &eraid_driver::EngineHandle,
    op: UserOp,
) -> crossbeam_channel::Receiver<eraid_driver::UserResult> {
    let (tx, rx) = crossbeam_channel::bounded(1);
    handle.submit(
        op,
        Box::new(move |result| {
            tx.send(result).unwrap();
        }),
    );
    rx
}

/// Writes `requests` requests of `request_bytes` (request i at
/// i * request_bytes, `pattern(request_bytes, i)`) all at once, waits for
/// them, optionally flushes, then reads them all back at once and checks
/// every byte.
pub fn write_then_read_back(
    handle: &eraid_driver::EngineHandle,
    requests: usize,
    request_bytes: usize,
    flush_between: bool,
) {
    let wait = std::time::Duration::from_secs(30);
    let writes: Vec<_> = (0..requests)
        .map(|i| {
            let op = UserOp::Write {
                offset_bytes: (i * request_bytes) as u64,
                data: pattern(request_bytes, i as u64).into(),
                fua: false,
            };
            submit(handle, op)
        })
        .collect();
    for reply in writes {
        assert_eq!(reply.recv_timeout(wait).unwrap(), Ok(None));
    }
    if flush_between {
        handle.flush().unwrap();
    }
    let reads: Vec<_> = (0..requests)
        .map(|i| {
            let op = UserOp::Read {
                offset_bytes: (i * request_bytes) as u64,
                len_bytes: request_bytes,
            };
            submit(handle, op)
        })
        .collect();
    for (i, reply) in reads.into_iter().enumerate() {
        let got = reply.recv_timeout(wait).unwrap();
        assert!(
            got == Ok(Some(pattern(request_bytes, i as u64).into())),
            "request {i}: read back differs"
        );
    }
}
