//! The array's state as JSON, for `eraid detail` and the control socket.

use super::scrub::ScrubMode;
use super::{Array, Phase};
use crate::metadata::superblock::ArrayState;
use serde_json::json;

impl Array {
    pub fn status_json(&self) -> serde_json::Value {
        let count = self.geometry.member_count;
        let mut members: Vec<_> = (0..count)
            .map(|m| {
                let record = &self.superblock.members[m];
                json!({
                    "index": m,
                    "uuid": record.uuid,
                    "path": record.path_hint,
                    "state": if self.is_rebuild_target(m) {
                        "rebuilding"
                    } else if self.present[m] {
                        "active"
                    } else if self.absent_unrecorded.contains(&m) {
                        "missing"
                    } else {
                        "faulty"
                    },
                    "failure": record.failure,
                    "device": self.slot_device[m],
                })
                .as_object()
                .cloned()
                .map(|mut member| {
                    member.extend(self.health_json(Some(self.slot_device[m])));
                    serde_json::Value::Object(member)
                })
                .expect("an object")
            })
            .collect();
        // More members failed than the array survives: every I/O fails (MD: FAILED).
        // Spares follow, numbered after the members (as their superblock
        // copies and `RemoveMember` number them).
        members.extend(
            self.superblock
                .spares
                .iter()
                .enumerate()
                .map(|(j, record)| {
                    let replacing = self.spare_devices[j]
                        .is_some_and(|d| self.replace_device().is_some_and(|(r, _)| r == d));
                    json!({
                        "index": count + j,
                        "uuid": record.uuid,
                        "path": record.path_hint,
                        "state": if replacing {
                            "replacement"
                        } else if self.spare_devices[j].is_some() {
                            "spare"
                        } else {
                            "missing-spare"
                        },
                        "failure": record.failure,
                        "device": self.spare_devices[j],
                    })
                    .as_object()
                    .cloned()
                    .map(|mut spare| {
                        spare.extend(self.health_json(self.spare_devices[j]));
                        serde_json::Value::Object(spare)
                    })
                    .expect("an object")
                }),
        );
        let state = match (self.phase, self.superblock.state) {
            _ if !self.survivable() => "failed",
            (Phase::Closed, ArrayState::Clean) => "clean",
            _ => "active",
        };
        let activity = self.scrub.as_ref().map(|s| {
            let (kind, repair) = match s.mode {
                ScrubMode::Resync => ("resync", true),
                ScrubMode::Check { repair } => ("check", repair),
            };
            json!({
                "kind": kind,
                "repair": repair,
                "state": if s.finished() { "done" } else { "running" },
                "progress": s.progress(),
                "stripes_done": s.stripes_done,
                "stripes_total": s.stripes_total,
                "mismatches": s.mismatches,
                "skipped_degraded_stripes": s.skipped_degraded,
                "on_member_failure": s.on_member_failure,
            })
        });
        let phase = match self.phase {
            Phase::Opening => "opening",
            Phase::Running => "running",
            Phase::Closing(_) => "closing",
            Phase::Closed => "closed",
        };
        let mut status = json!({
            "phase": phase,
            "array_uuid": self.superblock.array_uuid,
            "level": self.geometry.level.json_value(),
            "layout": self.geometry.layout.name(),
            "chunk_bytes": self.geometry.chunk_bytes,
            "member_count": self.geometry.member_count,
            "spare_count": self.superblock.spares.len(),
            "device_count": self.device_count,
            "capacity_bytes": self.capacity_bytes(),
            "state": state,
            "degraded": self.is_degraded() || self.rebuild_restoring(),
            "events": self.superblock.events,
            "dirty_regions": self.intent.desired.dirty_regions().count(),
            "unresynced_regions": self.unresynced_regions.len(),
            "metadata_writes": self.metadata.writes_total,
            "members": members,
            "activity": activity,
            "reshape": self.reshape_status_json(),
            "rebuild": self.rebuild_status_json(),
            "cache": self.cache_status_json(),
            "write_gather": self.write_gather_json(),
        });
        if let crate::geometry::Level::Crs { parity_members, w } = self.geometry.level {
            status["data_members"] = self.geometry.data_per_stripe().into();
            status["parity_members"] = parity_members.into();
            status["w"] = w.into();
            for (field, value) in self.superblock.crs_growths_json() {
                status[field] = value;
            }
        }
        status
    }

    /// A device's read-error counters and I/O latency, as member fields.
    fn health_json(&self, device: Option<usize>) -> serde_json::Map<String, serde_json::Value> {
        let health = device.map(|d| self.health.device(d)).unwrap_or_default();
        let fields = json!({
            "read_errors_corrected": health.read_errors_corrected,
            "read_errors_failed": health.read_errors_failed,
            "read_errors_recent": health.read_errors_recent,
            "completed_ios": health.completed_ios,
            "latency_ms_mean": health.latency_ms_mean(),
            "latency_ms_max": health.latency_ms_max(),
        });
        fields.as_object().cloned().expect("an object")
    }
}

impl Array {
    /// The cache's status with the journal's state in it (`journal`:
    /// `{"state": "none"}` without one); None without a cache and journal.
    fn cache_status_json(&self) -> Option<serde_json::Value> {
        let journal = match &self.journal {
            Some(journal) => journal.status_json(),
            None => serde_json::json!({ "state": "none" }),
        };
        let mut cache = match &self.cache {
            Some(cache) => cache.status_json(),
            None if self.journal.is_some() => serde_json::json!({
                "policy": "none",
                "size_bytes": 0,
                "dirty_bytes": 0,
                "destages": 0,
                "transform_reads": 0,
                "transform_writes": 0,
            }),
            None => return None,
        };
        cache["journal"] = journal;
        Some(cache)
    }
}
