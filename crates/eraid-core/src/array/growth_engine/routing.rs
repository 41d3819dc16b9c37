//! Serving users mid-growth: which layout each chunk is in, and which
//! requests must wait (for the window being moved, or for a checkpoint).

use super::super::op::{Epoch, OpTarget};
use super::super::Array;
use super::mover::WindowStage;
use crate::growth::config::{MdUsersWait, ValveLatency};
use crate::growth::record::ReshapeState;
use crate::io::{UserOp, UserRequest};
use crate::layout::StripeMap;

impl Array {
    /// Lets a request through, or holds it (returning None) until the
    /// growth can serve it.
    pub(in crate::array) fn reshape_admit(&mut self, request: UserRequest) -> Option<UserRequest> {
        let chunk_bytes = self.geometry.chunk_bytes;
        let md_wait = self.reshape_record().and_then(|r| {
            (r.config.strategy == crate::growth::config::ReshapeStrategy::MdReshape)
                .then_some(r.config.md_users_wait)
        });
        let valve_latency = self
            .reshape_record()
            .map(|r| r.config.valve_latency)
            .unwrap_or_default();
        // A backed-up window a crash interrupted and nothing has rewritten
        // yet (in this run no window has copied past it, none is moving it).
        let pending_backup = self
            .reshape_record()
            .and_then(|r| r.backup.clone())
            .filter(|b| {
                self.reshape.as_ref().is_some_and(|r| {
                    r.copied_end < b.end_chunk
                        && r.window.as_ref().is_none_or(|w| w.start != b.start_chunk)
                })
            });
        let backup_usable = pending_backup.as_ref().is_some_and(|b| {
            self.present.get(b.member) == Some(&true)
                && !self.reshape.as_ref().is_some_and(|r| r.backup_damaged)
        });
        let Some(reshape) = &mut self.reshape else {
            return Some(request);
        };
        let (offset_bytes, len_bytes) = request.op.byte_range().expect("data request");
        let first = offset_bytes / chunk_bytes;
        let end = (offset_bytes + len_bytes).div_ceil(chunk_bytes);
        // Chunks of a backed-up window a crash interrupted are right only in
        // the backup until it is rewritten: wait for that, or fail if the
        // backup's member is missing (never serve the half-overwritten
        // old places).
        if let Some(b) =
            pending_backup.filter(|b| reshape.touches(first, end, b.start_chunk, b.end_chunk))
        {
            if !backup_usable {
                self.outbox_reply.push_back(crate::io::UserReply {
                    id: request.id,
                    result: Err(crate::io::UserError::Unavailable(format!(
                        "chunks {}..{} were being moved when the array stopped and their only \
                         intact copy, the backup on member {}, is missing or damaged",
                        b.start_chunk, b.end_chunk, b.member
                    ))),
                });
                return None;
            }
            reshape.blocked.push_back(request);
            return None;
        }
        let in_window = reshape
            .window
            .as_ref()
            .is_some_and(|w| reshape.touches(first, end, w.start, w.end))
            || reshape
                .ahead
                .as_ref()
                .is_some_and(|w| reshape.touches(first, end, w.start, w.end));
        // md-reshape's 3 MiB window is MD's whole stripe cache (256 stripes
        // of 4 KiB pages over the new data disks): while one is moved, no
        // stripe head is free and every user request waits.
        let cache_full = match (md_wait, reshape.window.as_ref()) {
            (Some(MdUsersWait::Window), Some(_)) => true,
            (Some(MdUsersWait::Reads), Some(w)) => {
                matches!(w.stage, WindowStage::Planned | WindowStage::Reading)
            }
            _ => false,
        };
        let in_window = in_window || cache_full;
        let writes = !matches!(request.op, UserOp::Read { .. });
        // A write into copied-but-not-checkpointed chunks: the copy it
        // would update is not yet the one a crash would come back to.
        let needs_checkpoint =
            writes && reshape.touches(first, end, reshape.checkpoint, reshape.copied_end);
        if in_window || needs_checkpoint {
            if valve_latency == ValveLatency::Response {
                reshape.pacing.user_congested();
            }
            if needs_checkpoint {
                reshape.checkpoint_wanted = true;
            }
            reshape.blocked.push_back(request);
            return None;
        }
        Some(request)
    }

    /// The stripe and data index holding `logical_chunk` now. Copied chunks
    /// are read from their new places: a backed-up window may already have
    /// overwritten their old ones (and writes to them wait for a checkpoint,
    /// so the new copy is current).
    pub(in crate::array) fn route_chunk(&self, logical_chunk: u64) -> (OpTarget, usize) {
        match &self.reshape {
            Some(reshape) if reshape.position(logical_chunk) >= reshape.copied_end => {
                let (stripe, index) = reshape.old_layout.locate(logical_chunk);
                (
                    OpTarget {
                        epoch: Epoch::Old,
                        stripe,
                    },
                    index,
                )
            }
            _ => {
                let (stripe, index) = self.layout.locate(logical_chunk);
                (OpTarget::current(stripe), index)
            }
        }
    }

    pub(in crate::array) fn stripe_map_of(&self, target: OpTarget) -> StripeMap {
        match target.epoch {
            Epoch::Current => self.layout.stripe_map(target.stripe),
            Epoch::Old => self
                .reshape
                .as_ref()
                .expect("old-layout op without a growth")
                .old_layout
                .stripe_map(target.stripe),
        }
    }

    /// What a check or resync visits at row `stripe`: the new stripe if the
    /// row is wholly moved, the old one if it still holds unmoved data,
    /// nothing for rows in between (vacated, rewritten by a later window).
    pub(in crate::array) fn scrub_target(&self, stripe: u64) -> Option<OpTarget> {
        let Some(reshape) = &self.reshape else {
            return Some(OpTarget::current(stripe));
        };
        let old_k = self
            .reshape_record()
            .expect("record")
            .old_geometry
            .data_per_stripe() as u64;
        let new_k = reshape.new_row_chunks;
        if (stripe + 1) * new_k <= reshape.checkpoint {
            Some(OpTarget::current(stripe))
        } else if stripe >= reshape.checkpoint / old_k {
            Some(OpTarget {
                epoch: Epoch::Old,
                stripe,
            })
        } else {
            None
        }
    }

    /// Requests held by the growth try again (after a window or checkpoint).
    pub(in crate::array) fn release_blocked(&mut self) {
        let Some(reshape) = &mut self.reshape else {
            return;
        };
        let blocked = std::mem::take(&mut reshape.blocked);
        for request in blocked {
            self.submit(request);
        }
    }

    /// Whether the growth may move data now (not paused, nothing else in
    /// the way).
    pub(in crate::array) fn reshape_runnable(&self) -> bool {
        self.reshape_record()
            .is_some_and(|r| r.state == ReshapeState::Running)
    }
}
