//! `eraid detail`: what the members' metadata says, without changing it.

use anyhow::Result;
use clap::Args;
use eraid_core::metadata::assemble::{assemble, SlotState};
use eraid_core::metadata::superblock::ArrayState;
use serde_json::json;
use std::path::PathBuf;

/// Show an array's geometry, state and members (reads metadata only)
///
/// Prints level, layout, chunk size, capacity, clean/dirty and degraded
/// state, each member's state (active, stale: out of date and needing a
/// rebuild, or missing) and any pending resync. Reads the members' metadata
/// only; nothing is written, so it is safe while the array is served.
#[derive(Args, Debug)]
pub struct DetailArgs {
    /// Print JSON (fields: level, layout, chunk_bytes, capacity_bytes, state,
    /// members[{path, index, state}], ...).
    #[arg(long)]
    json: bool,
    /// Member files or block devices of the array (any order).
    #[arg(required = true)]
    members: Vec<PathBuf>,
}

impl DetailArgs {
    pub fn run(self) -> Result<i32> {
        let (probes, _files) = crate::members::probe(&self.members)?;
        let assembly = assemble(&probes)?;
        let sb = &assembly.superblock;
        let g = &sb.geometry;
        let members: Vec<_> = assembly
            .slots
            .iter()
            .enumerate()
            .map(|(index, slot)| {
                let (path, state) = match slot {
                    SlotState::Present { probe } => (probes[*probe].path.clone(), "active"),
                    SlotState::Stale { probe, .. } => (probes[*probe].path.clone(), "stale"),
                    SlotState::Missing => (sb.members[index].path_hint.clone(), "missing"),
                };
                json!({ "index": index, "path": path, "state": state, "uuid": sb.members[index].uuid })
            })
            .collect();
        let degraded = assembly.missing_or_stale() > 0;
        let state = match (sb.state, degraded) {
            (ArrayState::Clean, false) => "clean",
            (ArrayState::Clean, true) => "clean, degraded",
            (ArrayState::Dirty, false) => "dirty",
            (ArrayState::Dirty, true) => "dirty, degraded",
        };
        let dirty_regions = assembly.bitmap.dirty_regions().count();
        let detail = json!({
            "array_uuid": sb.array_uuid,
            "level": g.level.number(),
            "layout": g.layout.name(),
            "chunk_bytes": g.chunk_bytes,
            "member_count": g.member_count,
            "member_data_bytes": g.member_data_bytes,
            "data_offset_bytes": g.data_offset_bytes,
            "capacity_bytes": g.capacity_bytes(),
            "state": state,
            "clean": sb.state == ArrayState::Clean,
            "degraded": degraded,
            "events": sb.events,
            "dirty_regions": dirty_regions,
            "bitmap_regions": assembly.bitmap.region_count(),
            "members": members,
            // No long activity is recorded on disk yet (reshape and rebuild
            // checkpoints arrive with those features); a resync of the
            // dirty regions runs on the next start.
            "activity": if dirty_regions > 0 { json!({"kind": "resync", "state": "pending", "regions": dirty_regions}) } else { serde_json::Value::Null },
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
            g.capacity_bytes(),
            g.capacity_bytes() as f64 / 1048576.0
        );
        println!("  state       {state}");
        println!("  events      {}", sb.events);
        if dirty_regions > 0 {
            println!(
                "  activity    resync pending for {dirty_regions} of {} regions",
                assembly.bitmap.region_count()
            );
        }
        println!("  members");
        for m in &members {
            println!(
                "    {:>2}  {:<8} {}",
                m["index"],
                m["state"].as_str().unwrap_or(""),
                m["path"].as_str().unwrap_or("")
            );
        }
        Ok(0)
    }
}
