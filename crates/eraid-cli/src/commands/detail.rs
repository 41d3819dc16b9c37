//! `eraid detail`: what the members' metadata says, without changing it, or
//! a running server's live status (--control).

use crate::control::ControlClient;
use anyhow::Result;
use clap::Args;
use eraid_core::metadata::assemble::{assemble, SlotState};
use eraid_core::metadata::superblock::{ArrayState, MemberState, Superblock};
use eraid_core::rebuild::record::RebuildState;
use serde_json::{json, Value};
use std::path::PathBuf;

/// Show an array's geometry, state and members (reads metadata only)
///
/// Prints level, layout, chunk size, capacity, clean/dirty and degraded
/// state, each member's state (active, rebuilding, stale: out of date and
/// needing a rebuild, missing, or spare), any pending resync, the growth
/// in progress or last finished (`reshape`) and the rebuild (`rebuild`). Reads the members' metadata only; nothing is
/// written, so it is safe while the array is served. With --control PATH it
/// asks a running `eraid serve --control PATH` for its live status instead
/// (growth progress, rate, check activity).
#[derive(Args, Debug)]
pub struct DetailArgs {
    /// Print JSON (fields: level, layout, chunk_bytes, capacity_bytes,
    /// member_count, state, members[{path, index, state}] (spares after
    /// the members), reshape {strategy, state, progress, moved_bytes,
    /// metadata_writes, redistribution_reads, redistribution_writes, ...}
    /// or null, rebuild {strategy, state, progress, rebuilt_bytes,
    /// rate_bytes_per_s, eta_s, target {slot, path}, ...} or null, ...).
    #[arg(long)]
    json: bool,
    /// The control socket of a running `eraid serve --control PATH`.
    #[arg(long, value_name = "PATH", conflicts_with = "members")]
    control: Option<PathBuf>,
    /// Member files or block devices of the array (any order).
    #[arg(required_unless_present = "control")]
    members: Vec<PathBuf>,
}

/// The `reshape` object of a superblock's growth record, named as in the
/// live status.
pub fn reshape_json(sb: &Superblock) -> Value {
    let Some(record) = &sb.reshape else {
        return Value::Null;
    };
    let chunk = sb.geometry.chunk_bytes;
    let progress = if record.total_chunks == 0 {
        1.0
    } else {
        record.checkpoint_chunk as f64 / record.total_chunks as f64
    };
    let mut fields = record.recorded_json(sb.geometry.member_count, chunk);
    fields.insert("progress".into(), json!(progress));
    Value::Object(fields)
}

/// The members table of the human-readable detail.
fn print_members<'a>(members: impl IntoIterator<Item = &'a Value>) {
    println!("  members");
    for m in members {
        println!(
            "    {:>2}  {:<8} {}",
            m["index"],
            m["state"].as_str().unwrap_or(""),
            m["path"].as_str().unwrap_or("")
        );
    }
}

/// One line describing a `reshape` object (live or recorded).
pub fn reshape_line(r: &Value) -> String {
    let mib = |v: &Value| v.as_f64().unwrap_or(0.0) / 1048576.0;
    let mut line = format!(
        "{} {} -> {} members: {}, {:.1}%, moved {:.1} MiB, {} metadata writes, {} redistribution reads, {} writes",
        r["strategy"].as_str().unwrap_or("?"),
        r["old_member_count"],
        r["new_member_count"],
        r["state"].as_str().unwrap_or("?"),
        100.0 * r["progress"].as_f64().unwrap_or(0.0),
        mib(&r["moved_bytes"]),
        r["metadata_writes"],
        r["redistribution_reads"],
        r["redistribution_writes"],
    );
    if let Some(rate) = r["rate_bytes_s"].as_f64() {
        if r["state"] == "running" {
            line.push_str(&format!(", {:.1} MiB/s", rate / 1048576.0));
        }
    }
    if let Some(reason) = r["pause_reason"].as_str() {
        line.push_str(&format!(" (paused: {reason})"));
    }
    if let Some(member) = r["pending_backup"]["member"].as_u64() {
        line.push_str(&format!(
            "; a window interrupted by a crash is rewritten from its backup on member {member} first"
        ));
    }
    line
}

impl DetailArgs {
    pub fn run(self) -> Result<i32> {
        match &self.control {
            Some(path) => self.live(&ControlClient::connect(path)?.status()?),
            None => self.offline(),
        }
    }

    fn live(&self, status: &Value) -> Result<i32> {
        if self.json {
            println!("{}", serde_json::to_string_pretty(status)?);
            return Ok(0);
        }
        let capacity = status["capacity_bytes"].as_f64().unwrap_or(0.0);
        println!(
            "array {} (live)",
            status["array_uuid"].as_str().unwrap_or("?")
        );
        println!("  level       RAID-{}", status["level"]);
        println!("  layout      {}", status["layout"].as_str().unwrap_or("?"));
        println!(
            "  chunk       {} KiB",
            status["chunk_bytes"].as_u64().unwrap_or(0) >> 10
        );
        println!(
            "  capacity    {} bytes ({:.1} MiB)",
            status["capacity_bytes"],
            capacity / 1048576.0
        );
        let degraded = if status["degraded"] == true {
            ", degraded"
        } else {
            ""
        };
        println!(
            "  state       {} ({}){degraded}",
            status["state"].as_str().unwrap_or("?"),
            status["phase"].as_str().unwrap_or("?")
        );
        println!("  events      {}", status["events"]);
        let activity = &status["activity"];
        if !activity.is_null() {
            println!(
                "  activity    {} {}, {:.1}%, {} mismatches",
                activity["kind"].as_str().unwrap_or("?"),
                activity["state"].as_str().unwrap_or("?"),
                100.0 * activity["progress"].as_f64().unwrap_or(0.0),
                activity["mismatches"]
            );
        }
        if !status["reshape"].is_null() {
            println!("  reshape     {}", reshape_line(&status["reshape"]));
        }
        if !status["rebuild"].is_null() {
            println!(
                "  rebuild     {}",
                super::rebuild::rebuild_line(&status["rebuild"])
            );
        }
        print_members(status["members"].as_array().into_iter().flatten());
        Ok(0)
    }

    fn offline(&self) -> Result<i32> {
        let (probes, _files) = crate::members::probe(&self.members)?;
        let assembly = assemble(&probes)?;
        let sb = &assembly.superblock;
        let g = &sb.geometry;
        let members: Vec<_> = assembly
            .slots
            .iter()
            .enumerate()
            .map(|(index, slot)| {
                let rebuilding = sb.members[index].state == MemberState::Rebuilding;
                let (path, state) = match slot {
                    SlotState::Present { probe } if rebuilding => {
                        (probes[*probe].path.clone(), "rebuilding")
                    }
                    SlotState::Present { probe } => (probes[*probe].path.clone(), "active"),
                    SlotState::Stale { probe, .. } => (probes[*probe].path.clone(), "stale"),
                    SlotState::Missing => (sb.members[index].path_hint.clone(), "missing"),
                };
                json!({ "index": index, "path": path, "state": state, "uuid": sb.members[index].uuid })
            })
            .chain(assembly.spares.iter().enumerate().map(|(j, probe)| {
                let (path, state) = match probe {
                    Some(probe) => (probes[*probe].path.clone(), "spare"),
                    None => (sb.spares[j].path_hint.clone(), "missing-spare"),
                };
                json!({ "index": g.member_count + j, "path": path, "state": state, "uuid": sb.spares[j].uuid })
            }))
            .collect();
        let degraded = assembly.missing_or_stale() > 0
            || sb
                .members
                .iter()
                .any(|m| m.state == MemberState::Rebuilding);
        let state = match (sb.state, degraded) {
            (ArrayState::Clean, false) => "clean",
            (ArrayState::Clean, true) => "clean, degraded",
            (ArrayState::Dirty, false) => "dirty",
            (ArrayState::Dirty, true) => "dirty, degraded",
        };
        let dirty_regions = assembly.bitmap.dirty_regions().count();
        let capacity = crate::members::visible_capacity_bytes(sb);
        let reshape = reshape_json(sb);
        let rebuild = rebuild_json(sb);
        let detail = json!({
            "array_uuid": sb.array_uuid,
            "level": g.level.number(),
            "layout": g.layout.name(),
            "chunk_bytes": g.chunk_bytes,
            "member_count": g.member_count,
            "member_data_bytes": g.member_data_bytes,
            "data_offset_bytes": g.data_offset_bytes,
            // What users can address: the old capacity until a growth is done.
            "capacity_bytes": capacity,
            "state": state,
            "clean": sb.state == ArrayState::Clean,
            "degraded": degraded,
            "events": sb.events,
            "dirty_regions": dirty_regions,
            "bitmap_regions": assembly.bitmap.region_count(),
            "members": members,
            // A resync of the dirty regions runs on the next start; an
            // unfinished growth resumes then too (see `reshape`).
            "activity": if dirty_regions > 0 { json!({"kind": "resync", "state": "pending", "regions": dirty_regions}) } else { serde_json::Value::Null },
            "reshape": reshape,
            "rebuild": rebuild,
        });
        if self.json {
            println!("{}", serde_json::to_string_pretty(&detail)?);
            return Ok(0);
        }
        println!("array {}", sb.array_uuid);
        println!("  level       RAID-{}", g.level.number());
        println!("  layout      {}", g.layout.name());
        println!("  chunk       {} KiB", g.chunk_bytes >> 10);
        println!(
            "  capacity    {} bytes ({:.1} MiB)",
            capacity,
            capacity as f64 / 1048576.0
        );
        println!("  state       {state}");
        println!("  events      {}", sb.events);
        if dirty_regions > 0 {
            println!(
                "  activity    resync pending for {dirty_regions} of {} regions",
                assembly.bitmap.region_count()
            );
        }
        if !reshape.is_null() {
            let mut line = reshape_line(&reshape);
            if reshape["state"] == "running" {
                line.push_str("; resumes when served with every member");
            }
            println!("  reshape     {line}");
        }
        if !rebuild.is_null() {
            let mut line = super::rebuild::rebuild_line(&rebuild);
            if rebuild["state"] == "running" {
                line.push_str("; resumes from there when served");
            }
            println!("  rebuild     {line}");
        }
        print_members(&members);
        Ok(0)
    }
}

/// The `rebuild` object of a superblock's rebuild record, named as in the
/// live status (its position is the recorded checkpoint).
pub fn rebuild_json(sb: &Superblock) -> Value {
    let Some(record) = &sb.rebuild else {
        return Value::Null;
    };
    let total = record.total_stripes.max(1);
    let position = if record.state == RebuildState::Done {
        record.total_stripes
    } else {
        record.checkpoint_stripe
    };
    let bytes = |stripes: u64| {
        (stripes as u128 * sb.geometry.member_data_bytes as u128 / total as u128) as u64
    };
    let targets: Vec<Value> = record
        .targets
        .iter()
        .map(|&slot| json!({"slot": slot, "path": sb.members.get(slot).map(|m| m.path_hint.clone())}))
        .collect();
    json!({
        "strategy": record.config.strategy.name(),
        "state": record.state.name(),
        "held": record.held,
        "reason": record.reason,
        "progress": position as f64 / total as f64,
        "position_stripes": position,
        "total_stripes": record.total_stripes,
        "rebuilt_bytes": bytes(position),
        "checkpoint_bytes": bytes(record.checkpoint_stripe.min(record.total_stripes)),
        "total_bytes": sb.geometry.member_data_bytes,
        "target": targets.first(),
        "targets": targets,
        "checkpoints": record.counters.checkpoints,
        "config": record.config,
    })
}
