//! `eraid detail`: what the members' metadata says, without changing it, or
//! a running server's live status (--control).

use crate::control::ControlClient;
use anyhow::Result;
use clap::Args;
use eraid_core::geometry::Level;
use eraid_core::metadata::assemble::{
    survey, AssemblyError, MemberProbe, SlotState, UnusableMember,
};
use eraid_core::metadata::superblock::{ArrayState, MemberState, Superblock};
use eraid_core::rebuild::record::RebuildState;
use serde_json::{json, Value};
use std::path::PathBuf;

/// Show an array's geometry, state and members (reads metadata only)
///
/// Prints level, layout, chunk size, capacity, clean/dirty and degraded
/// state (failed: more members gone than the array survives), each
/// member's state (active; rebuilding; stale: out of date and needing a
/// rebuild; missing; unreadable; spare) with why it cannot be used and its
/// recorded failure, any pending resync, the growth in progress or last
/// finished (`reshape`) and the rebuild (`rebuild`). Reads the members'
/// metadata only, read-only; nothing is written or locked, so it is safe
/// while the array is served. With --control PATH it
/// asks a running `eraid serve --control PATH` for its live status instead
/// (growth progress, rate, check activity).
#[derive(Args, Debug)]
pub struct DetailArgs {
    /// Print JSON (fields: level, layout, chunk_bytes, capacity_bytes,
    /// member_count, state, members[{path, index, state, failure, reason}]
    /// (spares after the members), reshape {strategy, state, progress,
    /// moved_bytes, metadata_writes, redistribution_reads,
    /// redistribution_writes, ...} or null, rebuild {strategy, state,
    /// progress, rebuilt_bytes, rate_bytes_per_s, eta_s, target {slot,
    /// path}, ...} or null, ...). Live (--control), also engine_lock
    /// {acquisitions, held_s, waited_s, uptime_s, held_fraction}: how much
    /// of the time the core's lock was held.
    #[arg(long)]
    json: bool,
    /// The control socket of a running `eraid serve --control PATH`.
    #[arg(long, value_name = "PATH", conflicts_with = "members")]
    control: Option<PathBuf>,
    /// Member files, block devices or NBD exports (nbd://HOST:PORT/EXPORT,
    /// nbd+unix:///EXPORT?socket=PATH, nbds://...) of the array (any order).
    #[arg(required_unless_present = "control")]
    members: Vec<PathBuf>,
}

/// The server's `engine_lock` object as one line: how much of the time
/// the core's lock was held (near 100% under load: the core's bookkeeping
/// is what limits the array).
fn engine_lock_line(lock: &Value) -> String {
    format!(
        "held {:.1}% of the {:.0} s since start ({} acquisitions; threads waited {:.2} s for it in all)",
        100.0 * lock["held_fraction"].as_f64().unwrap_or(0.0),
        lock["uptime_s"].as_f64().unwrap_or(0.0),
        lock["acquisitions"],
        lock["waited_s"].as_f64().unwrap_or(0.0)
    )
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
        let index = match m["index"].as_u64() {
            Some(index) => index.to_string(),
            None => "-".to_string(),
        };
        let mut line = format!(
            "    {index:>2}  {:<8} {}",
            m["state"].as_str().unwrap_or(""),
            m["path"].as_str().unwrap_or("")
        );
        if let Some(reason) = m["reason"].as_str() {
            line.push_str(&format!(" ({reason})"));
        }
        if let Some(failure) = m["failure"].as_str() {
            line.push_str(&format!(" [failed: {failure}]"));
        }
        println!("{line}");
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
        match status["level"].as_u64() {
            Some(number) => println!("  level       RAID-{number}"),
            None => println!(
                "  level       CRS (k = {}, m = {}, w = {})",
                status["data_members"], status["parity_members"], status["w"]
            ),
        }
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
        if !status["cache"].is_null() {
            println!("  cache       {}", cache_line(&status["cache"]));
        }
        if status["engine_lock"].is_object() {
            println!("  engine lock {}", engine_lock_line(&status["engine_lock"]));
        }
        print_members(status["members"].as_array().into_iter().flatten());
        Ok(0)
    }

    fn offline(&self) -> Result<i32> {
        crate::members::check_distinct(&self.members)?;
        let read = crate::members::probe_read_only(&self.members);
        let opened: Vec<bool> = read.iter().map(|r| r.opened).collect();
        let probes: Vec<MemberProbe> = read.into_iter().map(|r| r.probe).collect();
        let describe = |unusable: &UnusableMember| member_problem(unusable, &opened);
        let survey = match survey(&probes) {
            Ok(survey) => survey,
            Err(error) => {
                // No member has a usable superblock: say what each one is.
                let all_unusable: Vec<String> = probes
                    .iter()
                    .enumerate()
                    .filter_map(|(index, probe)| {
                        let error = match &probe.metadata {
                            Err(reason) => AssemblyError::Unreadable {
                                path: probe.path.clone(),
                                reason: reason.clone(),
                            },
                            Ok(area) => AssemblyError::NotAMember {
                                path: probe.path.clone(),
                                reason: Superblock::decode_newest(area).err()?.to_string(),
                            },
                        };
                        let (state, reason) = describe(&UnusableMember {
                            probe: index,
                            error,
                        });
                        let verdict = if reason.starts_with("unreadable superblock") {
                            "not an eraid member"
                        } else {
                            state
                        };
                        Some(format!("{}: {verdict} ({reason})", probe.path))
                    })
                    .collect();
                if all_unusable.len() == probes.len() {
                    anyhow::bail!(
                        "no member has a usable eraid superblock: {}",
                        all_unusable.join("; ")
                    );
                }
                return Err(error.into());
            }
        };
        // A member retired by a replace is named by mistake: refused (as a
        // replaced one is), saying what took its place.
        if let Some(retired) = survey
            .unusable
            .iter()
            .find(|u| matches!(u.error, AssemblyError::Retired { .. }))
        {
            return Err(retired.error.clone().into());
        }
        let assembly = &survey.assembly;
        let sb = &assembly.superblock;
        let g = &sb.geometry;
        // A member that could not be used shows in the slot it was last
        // seen in (by its path), or on its own line.
        let mut unmatched: Vec<&UnusableMember> = survey.unusable.iter().collect();
        let mut members: Vec<Value> = Vec::new();
        for (index, slot) in assembly.slots.iter().enumerate() {
            let record = &sb.members[index];
            let (path, state, reason) = match slot {
                SlotState::Present { probe } if record.state == MemberState::Rebuilding => {
                    (probes[*probe].path.clone(), "rebuilding", None)
                }
                SlotState::Present { probe } => (probes[*probe].path.clone(), "active", None),
                SlotState::Stale { probe, .. } if assembly.re_add.contains(&index) => (
                    probes[*probe].path.clone(),
                    "re-addable",
                    Some(
                        "left without losing a write: `serve` re-adds it from the bitmap"
                            .to_string(),
                    ),
                ),
                SlotState::Stale { probe, .. } => (probes[*probe].path.clone(), "stale", None),
                SlotState::Missing => {
                    let found = unmatched
                        .iter()
                        .position(|u| same_member_path(&record.path_hint, &self.members[u.probe]));
                    match found.map(|at| unmatched.remove(at)) {
                        Some(unusable) => {
                            let (state, reason) = describe(unusable);
                            (probes[unusable.probe].path.clone(), state, Some(reason))
                        }
                        None => (record.path_hint.clone(), "missing", None),
                    }
                }
            };
            members.push(json!({
                "index": index,
                "path": path,
                "state": state,
                "uuid": record.uuid,
                "failure": record.failure,
                "reason": reason,
            }));
        }
        let replacing = sb
            .rebuild
            .as_ref()
            .filter(|r| r.state.unfinished())
            .and_then(|r| r.replace.as_ref())
            .map(|r| r.replacement.clone());
        for (j, probe) in assembly.spares.iter().enumerate() {
            let (path, state) = match probe {
                Some(probe) if replacing.as_deref() == Some(sb.spares[j].uuid.as_str()) => {
                    (probes[*probe].path.clone(), "replacement")
                }
                Some(probe) => (probes[*probe].path.clone(), "spare"),
                None => (sb.spares[j].path_hint.clone(), "missing-spare"),
            };
            members.push(json!({
                "index": g.member_count + j,
                "path": path,
                "state": state,
                "uuid": sb.spares[j].uuid,
                "failure": sb.spares[j].failure,
                "reason": Value::Null,
            }));
        }
        for unusable in unmatched {
            let (state, reason) = describe(unusable);
            members.push(json!({
                "index": Value::Null,
                "path": probes[unusable.probe].path,
                "state": state,
                "uuid": Value::Null,
                "failure": Value::Null,
                "reason": reason,
            }));
        }
        let degraded = assembly.missing_or_stale() > 0
            || sb
                .members
                .iter()
                .any(|m| m.state == MemberState::Rebuilding);
        let state = match (sb.state, degraded) {
            // More members failed than it survives (MD: FAILED).
            _ if survey.failed.is_some() => "failed",
            (ArrayState::Clean, false) => "clean",
            (ArrayState::Clean, true) => "clean, degraded",
            (ArrayState::Dirty, false) => "dirty",
            (ArrayState::Dirty, true) => "dirty, degraded",
        };
        let dirty_regions = assembly.bitmap.dirty_regions().count();
        let capacity = crate::members::visible_capacity_bytes(sb);
        let reshape = reshape_json(sb);
        let rebuild = rebuild_json(sb);
        let mut detail = json!({
            "array_uuid": sb.array_uuid,
            "level": g.level.json_value(),
            "layout": g.layout.name(),
            "chunk_bytes": g.chunk_bytes,
            "member_count": g.member_count,
            "member_data_bytes": g.member_data_bytes,
            "data_offset_bytes": g.data_offset_bytes,
            // What users can address: the old capacity until a growth is done.
            "capacity_bytes": capacity,
            "state": state,
            "failed_reason": survey.failed.as_ref().map(|e| e.to_string()),
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
            "cache": recorded_cache_json(sb),
        });
        if let Level::Crs { parity_members, w } = g.level {
            detail["data_members"] = g.data_per_stripe().into();
            detail["parity_members"] = parity_members.into();
            detail["w"] = w.into();
            for (field, value) in sb.crs_growths_json() {
                detail[field] = value;
            }
        }
        if self.json {
            println!("{}", serde_json::to_string_pretty(&detail)?);
            return Ok(0);
        }
        println!("array {}", sb.array_uuid);
        println!("  level       {}", g.level.name());
        println!("  layout      {}", g.layout.name());
        println!("  chunk       {} KiB", g.chunk_bytes >> 10);
        println!(
            "  capacity    {} bytes ({:.1} MiB)",
            capacity,
            capacity as f64 / 1048576.0
        );
        match &survey.failed {
            Some(error) => println!("  state       failed: {error}"),
            None => println!("  state       {state}"),
        }
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
        if !detail["cache"].is_null() {
            println!("  cache       {}", cache_line(&detail["cache"]));
        }
        print_members(&members);
        Ok(0)
    }
}

/// The cache and journal create recorded (offline: no counters; a served
/// array's status has them).
fn recorded_cache_json(sb: &Superblock) -> Value {
    if sb.cache.is_none() && sb.journal.is_none() {
        return Value::Null;
    }
    let journal = match &sb.journal {
        None => json!({ "state": "none" }),
        Some(record) => json!({
            "state": if record.failed.is_some() { "failed" } else { "recorded" },
            "failure": record.failed,
            "path": record.path_hint,
            "size_bytes": record.size_bytes,
        }),
    };
    json!({
        "policy": sb.cache.as_ref().map_or("none", |c| c.policy.as_str()),
        "size_bytes": sb.cache.as_ref().map_or(0, |c| c.size_bytes),
        "stride": sb.cache.as_ref().map(|c| crate::tune::stride_json(c.stride.as_ref())),
        "journal": journal,
    })
}

/// One line for a `cache` object (live or recorded).
fn cache_line(cache: &Value) -> String {
    let mut line = format!(
        "{}, {} MiB",
        cache["policy"].as_str().unwrap_or("?"),
        cache["size_bytes"].as_u64().unwrap_or(0) >> 20
    );
    if let Some(dirty) = cache["dirty_bytes"].as_u64() {
        line.push_str(&format!(
            ", {} KiB dirty, {} destages",
            dirty >> 10,
            cache["destages"]
        ));
    }
    let stride = &cache["stride"];
    if let (Some(read), Some(write)) = (stride["s_r_max"].as_u64(), stride["s_w_max"].as_u64()) {
        line.push_str(&format!(", S_r_max {read}, S_w_max {write}"));
        if let Some(source) = stride["source"].as_str() {
            line.push_str(&format!(" ({source})"));
        }
    }
    let journal = &cache["journal"];
    line.push_str(&format!(
        "; journal {}",
        journal["state"].as_str().unwrap_or("?")
    ));
    if let Some(path) = journal["path"].as_str() {
        line.push_str(&format!(" ({path})"));
    }
    if let Some(failure) = journal["failure"].as_str() {
        line.push_str(&format!(": {failure}"));
    }
    line
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
    // Stripes past the checkpoint stripe that the map records count too.
    let recorded = record.recorded_stripes();
    let bytes = |stripes: u64| {
        (stripes as u128 * sb.geometry.member_data_bytes as u128 / total as u128) as u64
    };
    let mut targets: Vec<Value> = record
        .targets
        .iter()
        .map(|&slot| json!({"slot": slot, "path": sb.members.get(slot).map(|m| m.path_hint.clone())}))
        .collect();
    // A replace: the source slot, and the new member (a spare until done).
    let (kind, source) = match &record.replace {
        Some(replace) => {
            let in_slot = sb.members.get(replace.source);
            let path_of = |uuid: &str| {
                sb.spares
                    .iter()
                    .chain(in_slot)
                    .find(|m| m.uuid == uuid)
                    .map(|m| m.path_hint.clone())
            };
            targets = vec![json!({
                "slot": replace.source,
                "path": path_of(&replace.replacement),
                "uuid": replace.replacement,
            })];
            let source = json!({
                "slot": replace.source,
                "path": path_of(&replace.source_uuid),
                "uuid": replace.source_uuid,
            });
            ("replace", source)
        }
        None => ("rebuild", Value::Null),
    };
    json!({
        "kind": kind,
        "source": source,
        "strategy": record.config.strategy.name(),
        "state": record.state.name(),
        "held": record.held,
        "reason": record.reason,
        "progress": recorded as f64 / total as f64,
        "position_stripes": position,
        "rebuilt_stripes": recorded,
        "total_stripes": record.total_stripes,
        "rebuilt_bytes": bytes(recorded),
        "checkpoint_bytes": bytes(recorded),
        "total_bytes": sb.geometry.member_data_bytes,
        "target": targets.first(),
        "targets": targets,
        "checkpoints": record.counters.checkpoints,
        "config": record.config,
    })
}

/// A member `detail` could not use: its state and why, in words.
fn member_problem(unusable: &UnusableMember, opened: &[bool]) -> (&'static str, String) {
    match &unusable.error {
        // The probe's reason says "cannot open: ..." or "cannot read: ...".
        AssemblyError::Unreadable { reason, .. } if !opened[unusable.probe] => {
            ("missing", reason.clone())
        }
        AssemblyError::Unreadable { reason, .. } => ("unreadable", reason.clone()),
        AssemblyError::NotAMember { reason, .. } => {
            ("unreadable", format!("unreadable superblock: {reason}"))
        }
        other => ("unreadable", other.to_string()),
    }
}

/// Whether `path` is the member a superblock last saw at `hint` (hints are
/// canonical paths, long ones shortened to "…" and their end).
fn same_member_path(hint: &str, path: &std::path::Path) -> bool {
    let full = crate::member_name::canonical_or_absolute(path)
        .display()
        .to_string();
    match hint.strip_prefix('\u{2026}') {
        Some(tail) => full.ends_with(tail),
        None => full == hint,
    }
}
