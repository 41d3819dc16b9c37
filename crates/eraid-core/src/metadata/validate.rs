//! Validation of everything a superblock says, at decode time (and, for
//! copies on different members, at assembly: `disagreement`): a member's
//! metadata is outside input (a torn write has a bad checksum, but a bug, an
//! older or hostile writer can leave a well-formed record that lies). Each
//! check below guards an index, an allocation or an arithmetic step of the
//! engine, so a superblock that passes cannot make it panic. Free text is
//! not refused but cut to its bound (it is for messages only).

use super::bitmap::BITMAP_REGIONS_MAX;
use super::superblock::{is_valid_uuid, MemberState, Superblock};
use crate::geometry::{Geometry, Level};
use crate::growth::config::{ReshapeConfig, ReshapeStrategy};
use crate::growth::fastscale::GrowthStrategy;
use crate::growth::record::{BackupRecord, Placement, ReshapeRecord, ReshapeState};

/// The largest member this format describes (64 PiB): every capacity and
/// offset derived from it stays far below 2^64.
pub const MEMBER_BYTES_MAX: u64 = 1 << 56;
/// Event counters, bitmap sequences and growth counters only ever count up
/// by one; anything this large is not a count this array made.
pub const COUNTER_MAX: u64 = 1 << 62;

/// Checks `sb` and bounds its free text; says what is wrong otherwise.
pub fn superblock(sb: &mut Superblock) -> Result<(), String> {
    if !is_valid_uuid(&sb.array_uuid) {
        return Err(format!(
            "array uuid {:?} is not a valid uuid",
            sb.array_uuid
        ));
    }
    if sb.events > COUNTER_MAX {
        return Err(format!("event count {} is out of range", sb.events));
    }
    geometry(&sb.geometry).map_err(|e| format!("geometry: {e}"))?;
    let g = sb.geometry;
    // Spares' copies are numbered after the members.
    if sb.members.len() != g.member_count || sb.this_member >= g.member_count + sb.spares.len() {
        return Err(format!(
            "member table has {} entries, this member is {}, geometry says {} members",
            sb.members.len(),
            sb.this_member,
            g.member_count
        ));
    }
    for (index, member) in sb.members.iter().enumerate() {
        if !is_valid_uuid(&member.uuid) {
            return Err(format!(
                "member {index} has an invalid uuid {:?}",
                member.uuid
            ));
        }
        if let Some(other) = sb.members[..index]
            .iter()
            .position(|m| m.uuid == member.uuid)
        {
            return Err(format!(
                "members {other} and {index} have the same uuid {}",
                member.uuid
            ));
        }
        // Recorded when the member left, from the events then.
        if let Some(since) = member.re_add_from_events {
            if since > sb.events {
                return Err(format!(
                    "member {index} is recorded re-addable from events {since}, after this copy's {}",
                    sb.events
                ));
            }
            if !matches!(member.state, MemberState::Faulty | MemberState::Rebuilding) {
                return Err(format!(
                    "member {index} is recorded re-addable but is {:?}, neither failed nor rebuilding",
                    member.state
                ));
            }
        }
        // Recorded at a start from the events then: never ahead of them.
        if let Some(since) = member.absent_unwritten_since_events {
            if since > sb.events {
                return Err(format!(
                    "member {index} is recorded absent since events {since}, after this copy's {}",
                    sb.events
                ));
            }
        }
    }
    if sb.bitmap_stripes_per_region == 0 {
        return Err("bitmap region of zero stripes".into());
    }
    let regions = g.stripe_count().div_ceil(sb.bitmap_stripes_per_region);
    if regions > BITMAP_REGIONS_MAX {
        return Err(format!(
            "a bitmap region of {} stripes needs {regions} bits; a bitmap holds at most {BITMAP_REGIONS_MAX}",
            sb.bitmap_stripes_per_region
        ));
    }
    if let Some(placement) = &sb.placement {
        self::placement(placement, &g).map_err(|e| format!("placement: {e}"))?;
    }
    if sb.crs_scaled.is_some() || !sb.crs_grown_before.is_empty() {
        crs_growths(sb, &g).map_err(|e| format!("grown CRS layout: {e}"))?;
    }
    if let Some(record) = &sb.reshape {
        if record.config.strategy.grows_crs() {
            crs_reshape(record, sb).map_err(|e| format!("growth record: {e}"))?;
        } else {
            reshape(record, sb).map_err(|e| format!("growth record: {e}"))?;
        }
    }
    if let Some(stride) = sb.cache.as_mut().and_then(|c| c.stride.as_mut()) {
        stride
            .validate()
            .map_err(|e| format!("cache stride rule: {e}"))?;
    }
    sb.bound_free_text();
    Ok(())
}

/// The CRS growths (earlier ones and the last) chain from a created array
/// to `g`: each starts where the one before ended, the last ends at `g`'s
/// k + t data members, m stays, and the coding matrix they make exists.
fn crs_growths(sb: &Superblock, g: &Geometry) -> Result<(), String> {
    if !matches!(g.level, Level::Crs { .. }) {
        return Err(format!("the array is {}, not CRS", g.level.name()));
    }
    if sb.crs_scaled.is_none() {
        return Err("earlier growths are recorded without the last one".into());
    }
    let growths = sb.crs_growths();
    let mut data_members = growths[0].old_data_members;
    for shape in &growths {
        let (k, m, t) = (
            shape.old_data_members,
            shape.parity_members,
            shape.added_members,
        );
        if k == 0 || t == 0 || k != data_members || m != g.parity_per_stripe() {
            return Err(format!(
                "a growth of k = {k}, m = {m}, t = {t} does not follow {data_members} data and {} parity members",
                g.parity_per_stripe()
            ));
        }
        data_members = k
            .checked_add(t)
            .filter(|&n| n <= g.data_per_stripe())
            .ok_or_else(|| {
                format!(
                    "growths add more than the {} data members there are",
                    g.data_per_stripe()
                )
            })?;
    }
    if data_members != g.data_per_stripe() {
        return Err(format!(
            "the growths end at {data_members} data members, the geometry has {}",
            g.data_per_stripe()
        ));
    }
    crate::stripe_code::StripeCode::for_array(g, &growths).map_err(|e| format!("no code: {e}"))?;
    Ok(())
}

/// A Scale-CRS or EPU growth record as `start_grow` writes it: the grown
/// layout recorded, windows of whole scaling units from the checkpoint,
/// each window's moved chunks (its "backup") on the new members.
fn crs_reshape(record: &ReshapeRecord, sb: &Superblock) -> Result<(), String> {
    let new = sb.geometry;
    let old = record.old_geometry;
    record.config.validate()?;
    geometry(&old).map_err(|e| format!("old geometry: {e}"))?;
    let Some(shape) = sb.crs_scaled else {
        return Err(format!(
            "a {} growth without its grown CRS layout",
            record.config.strategy.name()
        ));
    };
    let same_shape = old.level == new.level
        && old.chunk_bytes == new.chunk_bytes
        && old.data_offset_bytes == new.data_offset_bytes
        && old.member_data_bytes == new.member_data_bytes
        && old.data_per_stripe() == shape.old_data_members
        && old.member_count + shape.added_members == new.member_count;
    if !same_shape || record.old_placement.is_some() || sb.placement.is_some() {
        return Err(format!(
            "old geometry ({} members) is not the CRS array the grown layout started from",
            old.member_count
        ));
    }
    let chunk = new.chunk_bytes;
    let old_capacity_chunks = old.capacity_bytes() / chunk;
    if record.old_capacity_chunks != old_capacity_chunks
        || record.total_chunks != old_capacity_chunks
    {
        return Err(format!(
            "it records {} old and {} total chunks, the geometry gives {old_capacity_chunks}",
            record.old_capacity_chunks, record.total_chunks
        ));
    }
    let unit = shape.unit_rows() as u64 * shape.old_data_members as u64;
    let boundary =
        |c: u64| c == record.total_chunks || (c < record.total_chunks && c.is_multiple_of(unit));
    if !boundary(record.checkpoint_chunk) {
        return Err(format!(
            "checkpoint at chunk {} is not a scaling unit boundary within the {} chunks",
            record.checkpoint_chunk, record.total_chunks
        ));
    }
    let c = record.counters;
    if c.as_array().iter().any(|&v| v > COUNTER_MAX) {
        return Err("a counter is out of range".into());
    }
    if let Some(b) = &record.backup {
        let rows = |chunk: u64| chunk / shape.old_data_members as u64;
        let moved: u64 = shape
            .units(new.member_chunks())
            .filter(|u| u.first_row >= rows(b.start_chunk) && u.first_row < rows(b.end_chunk))
            .map(|u| (u.moved_per_column * shape.old_data_members) as u64)
            .sum();
        let ok = record.state != ReshapeState::Done
            && b.start_chunk == record.checkpoint_chunk
            && b.start_chunk < b.end_chunk
            && boundary(b.end_chunk)
            && b.member == old.member_count
            && b.offset_bytes == 0
            && b.len_bytes == moved * chunk;
        if !ok {
            return Err(format!(
                "backup: chunks {}..{} ({} bytes on member {}) are not a window's moved chunks at the checkpoint",
                b.start_chunk, b.end_chunk, b.len_bytes, b.member
            ));
        }
    }
    Ok(())
}

/// A geometry `Geometry::new` would build, within `MEMBER_BYTES_MAX`.
pub fn geometry(g: &Geometry) -> Result<(), String> {
    let member_bytes = g
        .data_offset_bytes
        .checked_add(g.member_data_bytes)
        .filter(|&b| b <= MEMBER_BYTES_MAX)
        .ok_or_else(|| {
            format!(
                "member size {} + {} bytes is out of range (at most {MEMBER_BYTES_MAX})",
                g.data_offset_bytes, g.member_data_bytes
            )
        })?;
    let rebuilt = Geometry::new(
        g.level,
        g.layout,
        g.member_count,
        g.chunk_bytes,
        member_bytes,
    )
    .map_err(|e| format!("impossible geometry: {e}"))?;
    if rebuilt != *g {
        return Err("geometry fields are inconsistent".into());
    }
    // The engine builds this code at open: it must not fail there.
    crate::stripe_code::StripeCode::for_geometry(g).map_err(|e| format!("no code: {e}"))?;
    Ok(())
}

/// A RAID-0 placement addressing exactly `g`'s members and chunks.
fn placement(p: &Placement, g: &Geometry) -> Result<(), String> {
    if g.level != Level::Raid0 {
        return Err(format!(
            "only RAID-0 has a placement, this is {}",
            g.level.name()
        ));
    }
    if p.strategy == GrowthStrategy::RoundRobin {
        return Err("a round-robin array records no placement".into());
    }
    let history = &p.history;
    if history.disks() as usize != g.member_count || history.chunks_per_disk() != g.member_chunks()
    {
        return Err(format!(
            "its history addresses {} members of {} chunks, the geometry has {} of {}",
            history.disks(),
            history.chunks_per_disk(),
            g.member_count,
            g.member_chunks()
        ));
    }
    Ok(())
}

/// Data chunks per row of the new layout: windows and checkpoints are
/// multiples of it (or the end of the growth).
fn row_chunks(g: &Geometry) -> u64 {
    match g.level {
        Level::Raid0 => g.member_count as u64,
        _ => g.data_per_stripe() as u64,
    }
}

/// The most chunks one window of this growth holds (as planned by the
/// engine's `plan_next_window`): a backup is never larger.
fn window_chunks_max(config: &ReshapeConfig, g: &Geometry) -> u64 {
    let row = row_chunks(g);
    match config.strategy {
        ReshapeStrategy::MdReshape => (config.md_window_bytes / g.chunk_bytes / row).max(1) * row,
        _ => (config.aggregation_bytes / g.chunk_bytes).max(1) * row,
    }
}

fn reshape(record: &ReshapeRecord, sb: &Superblock) -> Result<(), String> {
    let new = sb.geometry;
    let old = record.old_geometry;
    record.config.validate()?;
    let strategy = record.config.strategy;
    let fits = match new.level {
        Level::Raid0 => strategy.raid0_placement().is_some(),
        Level::Raid5 => strategy.raid0_placement().is_none(),
        Level::Raid6 | Level::Raid10 | Level::Crs { .. } => false,
    };
    if !fits {
        return Err(format!(
            "strategy {} does not grow {}",
            strategy.name(),
            new.level.name()
        ));
    }
    geometry(&old).map_err(|e| format!("old geometry: {e}"))?;
    let same_shape = old.level == new.level
        && old.layout == new.layout
        && old.chunk_bytes == new.chunk_bytes
        && old.data_offset_bytes == new.data_offset_bytes
        && old.member_data_bytes == new.member_data_bytes;
    if !same_shape || old.member_count >= new.member_count {
        return Err(format!(
            "old geometry ({} members) is not a smaller array of the same shape as the new one ({} members)",
            old.member_count, new.member_count
        ));
    }
    if let Some(p) = &record.old_placement {
        placement(p, &old).map_err(|e| format!("old placement: {e}"))?;
    }
    // The placement the growth produces, as `start_grow` records it.
    let expected = strategy
        .raid0_placement()
        .filter(|&s| s != GrowthStrategy::RoundRobin);
    let recorded = sb.placement.as_ref().map(|p| p.strategy);
    let before = record.old_placement.as_ref().map(|p| p.strategy);
    if recorded != expected || before.is_some_and(|b| Some(b) != expected) {
        return Err(format!(
            "a {} growth cannot leave placement {:?} (before it: {:?})",
            strategy.name(),
            recorded.map(|s| s.name()),
            before.map(|s| s.name())
        ));
    }
    let chunk = new.chunk_bytes;
    let old_capacity_chunks = old.capacity_bytes() / chunk;
    let total_chunks = match new.level {
        Level::Raid0 => old_capacity_chunks,
        _ => new.capacity_bytes() / chunk,
    };
    if record.old_capacity_chunks != old_capacity_chunks || record.total_chunks != total_chunks {
        return Err(format!(
            "it records {} old and {} total chunks, the geometries give {old_capacity_chunks} and {total_chunks}",
            record.old_capacity_chunks, record.total_chunks
        ));
    }
    let row = row_chunks(&new);
    let checkpoint = record.checkpoint_chunk;
    if checkpoint > total_chunks || (checkpoint != total_chunks && !checkpoint.is_multiple_of(row))
    {
        return Err(format!(
            "checkpoint at chunk {checkpoint} is not a row boundary within the {total_chunks} chunks"
        ));
    }
    if record.counters.as_array().iter().any(|&v| v > COUNTER_MAX) {
        return Err("a counter is out of range".into());
    }
    if let Some(b) = &record.backup {
        if record.state == ReshapeState::Done {
            return Err("a finished growth has a pending backup".into());
        }
        backup(b, record, &new).map_err(|e| format!("backup: {e}"))?;
    }
    Ok(())
}

/// A backup exactly where and as large as the engine writes one: the window
/// at the checkpoint, copied to the tail of the first new member.
fn backup(b: &BackupRecord, record: &ReshapeRecord, g: &Geometry) -> Result<(), String> {
    let row = row_chunks(g);
    let (start, end) = (b.start_chunk, b.end_chunk);
    let window_ok = start == record.checkpoint_chunk
        && start < end
        && end <= record.total_chunks
        && (end.is_multiple_of(row) || end == record.total_chunks)
        && end - start <= window_chunks_max(&record.config, g)
        && end - start <= g.member_chunks();
    if !window_ok {
        return Err(format!(
            "chunks {start}..{end} are not a window at the checkpoint ({})",
            record.checkpoint_chunk
        ));
    }
    let rows = end - start;
    let offset_bytes = g.data_offset_bytes + (g.member_chunks() - rows) * g.chunk_bytes;
    if b.member != record.old_geometry.member_count
        || b.offset_bytes != offset_bytes
        || b.len_bytes != rows * g.chunk_bytes
    {
        return Err(format!(
            "{} bytes at {} on member {} is not where the window's backup goes \
             ({} bytes at {offset_bytes} on member {})",
            b.len_bytes,
            b.offset_bytes,
            b.member,
            rows * g.chunk_bytes,
            record.old_geometry.member_count
        ));
    }
    Ok(())
}

/// What a current member's copy says that the newest cannot also be true
/// with. One event behind, a member may miss the growth that added members
/// (the joining members' write comes first) or the replacement of a member
/// by a spare; nothing else may differ.
pub(super) fn disagreement(copy: &Superblock, newest: &Superblock) -> Option<String> {
    let (a, b) = (&copy.geometry, &newest.geometry);
    let shape = |g: &crate::geometry::Geometry| {
        (
            g.level,
            g.layout,
            g.chunk_bytes,
            g.data_offset_bytes,
            g.member_data_bytes,
        )
    };
    if shape(a) != shape(b) {
        return Some(format!(
            "{} {} chunk {} of {} bytes per member against {} {} chunk {} of {}",
            a.level.name(),
            a.layout.name(),
            a.chunk_bytes,
            a.member_data_bytes,
            b.level.name(),
            b.layout.name(),
            b.chunk_bytes,
            b.member_data_bytes
        ));
    }
    let grown_since = copy.events < newest.events && a.member_count < b.member_count;
    if a.member_count != b.member_count && !grown_since {
        return Some(format!(
            "{} members against {}",
            a.member_count, b.member_count
        ));
    }
    // Members both copies know must be the same members, unless the newer
    // record is the one that put a replacement or spare into a slot (a
    // crash between the members' writes leaves copies one event apart).
    let common = a.member_count.min(b.member_count);
    let same_record = copy.events == newest.events;
    if let Some(slot) = (0..common)
        .find(|&slot| same_record && copy.members[slot].uuid != newest.members[slot].uuid)
    {
        return Some(format!("they record different members in slot {slot}"));
    }
    None
}
