//! A bare drive behind the same [`Machine`] interface as the array, so the
//! driver can measure a single disk (the MSC-CT stride benchmark runs on a
//! member disk, not on an array). Each user request becomes exactly one
//! device I/O at the same byte offset; there is no metadata area.

use std::collections::{HashMap, VecDeque};

use eraid_core::io::*;

pub struct Passthrough {
    capacity_bytes: u64,
    next_io_id: u64,
    owners: HashMap<IoId, RequestId>,
    outbox_io: VecDeque<DeviceIo>,
    outbox_reply: VecDeque<UserReply>,
}

impl Passthrough {
    pub fn new(capacity_bytes: u64) -> Passthrough {
        Passthrough {
            capacity_bytes,
            next_io_id: 0,
            owners: HashMap::new(),
            outbox_io: VecDeque::new(),
            outbox_reply: VecDeque::new(),
        }
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    fn issue(&mut self, request: RequestId, op: DeviceOp) {
        let id = IoId(self.next_io_id);
        self.next_io_id += 1;
        self.owners.insert(id, request);
        self.outbox_io.push_back(DeviceIo {
            id,
            member: 0,
            op,
            cause: IoCause::User,
            priority: Default::default(),
        });
    }

    fn check(&self, offset_bytes: u64, len_bytes: u64) -> Result<(), UserError> {
        if !offset_bytes.is_multiple_of(512) || !len_bytes.is_multiple_of(512) {
            return Err(UserError::Unaligned {
                offset_bytes,
                len_bytes,
            });
        }
        if offset_bytes
            .checked_add(len_bytes)
            .is_none_or(|end| end > self.capacity_bytes)
        {
            return Err(UserError::OutOfRange {
                offset_bytes,
                len_bytes,
                capacity_bytes: self.capacity_bytes,
            });
        }
        Ok(())
    }
}

impl Machine for Passthrough {
    fn handle_request(&mut self, _now: TimeNs, request: UserRequest) {
        let (offset_bytes, len_bytes) = request.op.byte_range().unwrap_or((0, 0));
        if let Err(error) = self.check(offset_bytes, len_bytes) {
            self.outbox_reply.push_back(UserReply {
                id: request.id,
                result: Err(error),
            });
            return;
        }
        let op = match request.op {
            UserOp::Read { .. } if len_bytes == 0 => None,
            UserOp::Read {
                offset_bytes,
                len_bytes,
            } => Some(DeviceOp::Read {
                offset_bytes,
                len_bytes,
            }),
            UserOp::Write { data, .. } if data.is_empty() => None,
            UserOp::Write {
                offset_bytes, data, ..
            } => Some(DeviceOp::Write {
                offset_bytes,
                data: data.into(),
            }),
            UserOp::Flush => Some(DeviceOp::Flush),
            UserOp::Trim { .. } | UserOp::WriteZeroes { .. } if len_bytes == 0 => None,
            UserOp::Trim { .. } | UserOp::WriteZeroes { .. } => Some(DeviceOp::WriteZeroes {
                offset_bytes,
                len_bytes,
            }),
        };
        match op {
            Some(op) => self.issue(request.id, op),
            None => self.outbox_reply.push_back(UserReply {
                id: request.id,
                result: Ok(None),
            }),
        }
    }

    fn handle_completion(&mut self, _now: TimeNs, io: IoId, completion: IoCompletion) {
        let Some(request) = self.owners.remove(&io) else {
            return;
        };
        let result = match completion {
            IoCompletion::Read(bytes) => Ok(Some(bytes.freeze().into())),
            IoCompletion::Done => Ok(None),
            IoCompletion::Failed(reason) | IoCompletion::ReadError(reason) => {
                Err(UserError::Unavailable(reason))
            }
        };
        self.outbox_reply.push_back(UserReply {
            id: request,
            result,
        });
    }

    fn handle_tick(&mut self, _now: TimeNs) {}

    fn handle_close(&mut self, _now: TimeNs) {}

    fn handle_admin(&mut self, _now: TimeNs, _command: AdminCommand) -> serde_json::Value {
        serde_json::json!({ "level": "disk", "capacity_bytes": self.capacity_bytes })
    }

    fn poll_io(&mut self) -> Option<DeviceIo> {
        self.outbox_io.pop_front()
    }

    fn poll_reply(&mut self) -> Option<UserReply> {
        self.outbox_reply.pop_front()
    }

    fn poll_event(&mut self) -> Option<ArrayEvent> {
        None
    }

    fn poll_timeout(&self) -> Option<TimeNs> {
        None
    }
}
