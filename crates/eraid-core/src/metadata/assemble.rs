//! Assembly: decide, from what each member's metadata area holds, which
//! array this is, which members are in sync, stale or missing, and which
//! bitmap regions need a resync. Pure: the driver reads the bytes.

use super::bitmap::IntentBitmap;
use super::force::take_back_failed;
pub use super::force::{AssembleOptions, ForcedMember};
use super::joining::is_unconfirmed_partial_join;
use super::superblock::{MemberState, Superblock};
use super::validate::disagreement;
use crate::geometry::Level;
use thiserror::Error;

/// What a driver found at one path.
pub struct MemberProbe {
    pub path: String,
    /// The first `METADATA_BYTES` of the member, or why it could not be read.
    pub metadata: Result<Vec<u8>, String>,
    pub size_bytes: u64,
}

/// The state of one member slot after assembly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SlotState {
    /// In sync: `probe` indexes the probes given to `assemble`.
    Present { probe: usize },
    /// Known member with out-of-date data: not used, needs a rebuild.
    Stale { probe: usize, events: u64 },
    /// No member for this slot was given, or it was marked faulty.
    Missing,
}

#[derive(Debug)]
pub struct Assembly {
    /// The newest superblock: authoritative for geometry and membership.
    pub superblock: Superblock,
    pub slots: Vec<SlotState>,
    /// Per spare the superblock records, the probe holding it (None: not
    /// given). A driver serves spare `j` as device `member_count + j`.
    pub spares: Vec<Option<usize>>,
    /// Union of the in-sync members' bitmaps.
    pub bitmap: IntentBitmap,
    pub bitmap_sequence: u64,
    /// Every in-sync member's bitmap could be read (a re-add may trust
    /// the union).
    pub bitmap_whole: bool,
    /// Stale slots whose member may be re-added from the bitmap
    /// (`readd::re_add_refusal`): the array brings them up to date by
    /// copying only the marked regions. A driver serves their probes.
    pub re_add: Vec<usize>,
    /// Human-readable lines: what was found and decided.
    pub report: Vec<String>,
    /// Failed members a forced assembly took back (`AssembleOptions::force`).
    pub forced: Vec<ForcedMember>,
    /// Members given but left out (`AssembleOptions::leave_out_unusable`):
    /// (path, why).
    pub left_out: Vec<(String, String)>,
}

impl Assembly {
    pub fn missing_or_stale(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| !matches!(s, SlotState::Present { .. }))
            .count()
    }
}

#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum AssemblyError {
    #[error("no members given")]
    NoMembers,
    #[error("{path}: cannot read metadata: {reason}")]
    Unreadable { path: String, reason: String },
    #[error("{path}: not an eraid member: {reason}")]
    NotAMember { path: String, reason: String },
    #[error("{path} belongs to another array (uuid {found}, expected {expected})")]
    ForeignMember {
        path: String,
        found: String,
        expected: String,
    },
    #[error("{path} and {other} both claim member slot {slot}")]
    DuplicateSlot {
        path: String,
        other: String,
        slot: usize,
    },
    #[error(
        "{path} was member {slot}, but it has been replaced there by another member (uuid {expected}, last seen at {now_at}); leave {path} out"
    )]
    ReplacedMember {
        path: String,
        slot: usize,
        expected: String,
        now_at: String,
    },
    #[error(
        "{path} was retired by a replace: {replaced_by} took its place (uuid {replaced_by_uuid}); \
         it is no longer a member of this array; leave it out"
    )]
    Retired {
        path: String,
        replaced_by: String,
        replaced_by_uuid: String,
    },
    #[error(
        "{path} says it is member {slot}, but the newest metadata of the array (events {events}, \
         on {newest_path}) has only {member_count} members: it may have joined a growth that was \
         never recorded on the others; leave it out"
    )]
    SlotBeyondArray {
        path: String,
        slot: usize,
        member_count: usize,
        events: u64,
        newest_path: String,
    },
    #[error(
        "{path} (events {events}) and {newest_path} (events {newest_events}) are both current \
         but disagree about the array: {detail}"
    )]
    Disagreement {
        path: String,
        events: u64,
        newest_path: String,
        newest_events: u64,
        detail: String,
    },
    #[error("{path} is smaller ({size_bytes} bytes) than the array needs ({needed_bytes} bytes)")]
    TooSmall {
        path: String,
        size_bytes: u64,
        needed_bytes: u64,
    },
    #[error("{level} cannot run without member {slot} (last seen at {path_hint}); {detail}")]
    MissingMember {
        level: String,
        slot: usize,
        path_hint: String,
        detail: String,
    },
    #[error(
        "{level} has {missing} members missing or stale; it survives at most {tolerated}: {names}"
    )]
    TooManyMissing {
        level: String,
        missing: usize,
        tolerated: usize,
        names: String,
    },
    #[error("RAID-10 has lost both copies of some data: members {a} and {b} are both missing")]
    MirrorLost { a: usize, b: usize },
    /// The array cannot run, and members given were left out (named).
    #[error("{failed}; left out: {left_out}")]
    FailedWithLeftOut {
        failed: Box<AssemblyError>,
        left_out: String,
    },
}

impl AssemblyError {
    /// The error itself, without the members left out.
    pub fn cause(&self) -> &AssemblyError {
        match self {
            AssemblyError::FailedWithLeftOut { failed, .. } => failed,
            other => other,
        }
    }
}

/// A member given to `survey` whose metadata could not be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnusableMember {
    pub probe: usize,
    pub error: AssemblyError,
}

/// What the usable members say about the array, whether or not it can run
/// (for `detail`): the assembly as it would be, and why it cannot run.
#[derive(Debug)]
pub struct Survey {
    pub assembly: Assembly,
    /// Members without a usable superblock (not in `assembly.slots`).
    pub unusable: Vec<UnusableMember>,
    /// Why the array cannot run with these members, if it cannot.
    pub failed: Option<AssemblyError>,
}

/// Decides the array from the probes, or says precisely why it cannot run.
pub fn assemble(probes: &[MemberProbe]) -> Result<Assembly, AssemblyError> {
    assemble_with(probes, AssembleOptions::default())
}

/// `assemble`, with options (forced assembly).
pub fn assemble_with(
    probes: &[MemberProbe],
    options: AssembleOptions,
) -> Result<Assembly, AssemblyError> {
    let survey = examine(
        probes,
        options.leave_out_unusable,
        options.force,
        options.leave_out_unusable,
    )?;
    if let Some(error) = survey.failed {
        if survey.unusable.is_empty() {
            return Err(error);
        }
        // Say why the members given are not counted.
        let left_out: Vec<String> = survey
            .unusable
            .iter()
            .map(|u| u.error.to_string())
            .collect();
        return Err(AssemblyError::FailedWithLeftOut {
            failed: Box::new(error),
            left_out: left_out.join("; "),
        });
    }
    // A retired member is named by mistake, not damaged: refused, as a
    // replaced one is.
    if let Some(retired) = survey
        .unusable
        .iter()
        .find(|u| matches!(u.error, AssemblyError::Retired { .. }))
    {
        return Err(retired.error.clone());
    }
    let mut assembly = survey.assembly;
    for unusable in survey.unusable {
        let path = probes[unusable.probe].path.clone();
        assembly
            .report
            .push(format!("left out {path}: {}", unusable.error));
        assembly.left_out.push((path, unusable.error.to_string()));
    }
    Ok(assembly)
}

/// The array as the usable members describe it, even if it cannot run:
/// members whose metadata cannot be read or decoded are set aside (with
/// why) instead of failing the whole. Fails only when no member is usable
/// or the usable ones contradict each other.
pub fn survey(probes: &[MemberProbe]) -> Result<Survey, AssemblyError> {
    examine(probes, true, false, false)
}

/// One probe's superblock, or why it has none.
fn decode_probe(probe: &MemberProbe) -> Result<Superblock, AssemblyError> {
    let area = probe
        .metadata
        .as_ref()
        .map_err(|reason| AssemblyError::Unreadable {
            path: probe.path.clone(),
            reason: reason.clone(),
        })?;
    let superblock = Superblock::decode_newest(area).map_err(|e| AssemblyError::NotAMember {
        path: probe.path.clone(),
        reason: e.to_string(),
    })?;
    if let Some(retired) = &superblock.retired {
        return Err(AssemblyError::Retired {
            path: probe.path.clone(),
            replaced_by: retired.replaced_by_path.clone(),
            replaced_by_uuid: retired.replaced_by_uuid.clone(),
        });
    }
    Ok(superblock)
}

/// The work of `assemble_with` and `survey`: `tolerant` sets members
/// whose metadata cannot be read aside; `mismatched_too` also members of
/// another array and members too small (truncated); `force` takes failed
/// ones back (see `AssembleOptions`).
fn examine(
    probes: &[MemberProbe],
    tolerant: bool,
    force: bool,
    mismatched_too: bool,
) -> Result<Survey, AssemblyError> {
    if probes.is_empty() {
        return Err(AssemblyError::NoMembers);
    }
    let mut decoded: Vec<Option<Superblock>> = Vec::with_capacity(probes.len());
    let mut unusable = Vec::new();
    for (index, probe) in probes.iter().enumerate() {
        match decode_probe(probe) {
            Ok(superblock) => decoded.push(Some(superblock)),
            Err(error) if tolerant => {
                unusable.push(UnusableMember {
                    probe: index,
                    error,
                });
                decoded.push(None);
            }
            Err(error) => return Err(error),
        }
    }
    let usable = || {
        decoded
            .iter()
            .enumerate()
            .filter_map(|(i, d)| Some((i, d.as_ref()?)))
    };
    // The array is the one most members belong to (a stray member of another
    // array is the odd one out); within it, the newest copy is authoritative.
    let count = |uuid: &str| usable().filter(|(_, d)| d.array_uuid == uuid).count();
    // A copy only some of a growth's joining members got, before any old
    // member recorded the growth, does not decide: the growth never started.
    let copies: Vec<&Superblock> = usable().map(|(_, d)| d).collect();
    let deciding = |d: &Superblock| !is_unconfirmed_partial_join(d, &copies);
    let candidates = || {
        let any_deciding = usable().any(|(_, d)| deciding(d));
        usable().filter(move |(_, d)| !any_deciding || deciding(d))
    };
    let Some(newest_index) = candidates()
        .max_by_key(|&(i, d)| (count(&d.array_uuid), d.events, std::cmp::Reverse(i)))
        .map(|(i, _)| i)
    else {
        return Err(unusable.swap_remove(0).error);
    };
    let mut newest = decoded[newest_index].clone().expect("usable");
    let mut report = vec![format!(
        "array {}: {} {} chunk {} KiB, {} members, events {} (newest copy on {})",
        newest.array_uuid,
        newest.geometry.level.name(),
        newest.geometry.layout.name(),
        newest.geometry.chunk_bytes >> 10,
        newest.geometry.member_count,
        newest.events,
        probes[newest_index].path
    )];
    let mut slots = vec![SlotState::Missing; newest.geometry.member_count];
    let mut spares: Vec<Option<usize>> = vec![None; newest.spares.len()];
    let needed_bytes = newest.geometry.data_offset_bytes + newest.geometry.member_data_bytes;
    for (probe_index, superblock) in usable() {
        let probe = &probes[probe_index];
        // Set aside, or refuse the assembly (`mismatched_too`).
        let mut set_aside = |error: AssemblyError| {
            if mismatched_too {
                unusable.push(UnusableMember {
                    probe: probe_index,
                    error,
                });
                Ok(())
            } else {
                Err(error)
            }
        };
        if superblock.array_uuid != newest.array_uuid {
            set_aside(AssemblyError::ForeignMember {
                path: probe.path.clone(),
                found: superblock.array_uuid.clone(),
                expected: newest.array_uuid.clone(),
            })?;
            continue;
        }
        let uuid = superblock.this_member_uuid();
        let slot = match newest.members.iter().position(|m| m.uuid == uuid) {
            Some(slot) => slot,
            None => {
                if probe.size_bytes < needed_bytes {
                    set_aside(AssemblyError::TooSmall {
                        path: probe.path.clone(),
                        size_bytes: probe.size_bytes,
                        needed_bytes,
                    })?;
                    continue;
                }
                let Some(spare) = newest.spares.iter().position(|m| m.uuid == uuid) else {
                    return Err(match newest.members.get(superblock.this_member) {
                        Some(record) => AssemblyError::ReplacedMember {
                            path: probe.path.clone(),
                            slot: superblock.this_member,
                            expected: record.uuid.clone(),
                            now_at: record.path_hint.clone(),
                        },
                        None => AssemblyError::SlotBeyondArray {
                            path: probe.path.clone(),
                            slot: superblock.this_member,
                            member_count: newest.geometry.member_count,
                            events: newest.events,
                            newest_path: probes[newest_index].path.clone(),
                        },
                    });
                };
                if let Some(other) = spares[spare] {
                    return Err(AssemblyError::DuplicateSlot {
                        path: probe.path.clone(),
                        other: probes[other].path.clone(),
                        slot: newest.geometry.member_count + spare,
                    });
                }
                report.push(format!("spare {spare}: {}", probe.path));
                spares[spare] = Some(probe_index);
                continue;
            }
        };
        let record = &newest.members[slot];
        if probe.size_bytes < needed_bytes {
            set_aside(AssemblyError::TooSmall {
                path: probe.path.clone(),
                size_bytes: probe.size_bytes,
                needed_bytes,
            })?;
            continue;
        }
        if let SlotState::Present { probe: other } | SlotState::Stale { probe: other, .. } =
            slots[slot]
        {
            return Err(AssemblyError::DuplicateSlot {
                path: probe.path.clone(),
                other: probes[other].path.clone(),
                slot,
            });
        }
        // One behind is a superblock update a crash interrupted; a member the
        // newest copy marks faulty, or further behind, missed data writes.
        // A member left out of a start before any data was written without
        // it is as current as when it left.
        let events_current = superblock.events + 1 >= newest.events
            || record
                .absent_unwritten_since_events
                .is_some_and(|since| superblock.events + 1 >= since);
        let in_sync =
            matches!(record.state, MemberState::Active | MemberState::Rebuilding) && events_current;
        if in_sync {
            if let Some(detail) = disagreement(superblock, &newest) {
                return Err(AssemblyError::Disagreement {
                    path: probe.path.clone(),
                    events: superblock.events,
                    newest_path: probes[newest_index].path.clone(),
                    newest_events: newest.events,
                    detail,
                });
            }
        }
        slots[slot] = if in_sync {
            let rebuilding = match (&newest.rebuild, record.state) {
                (Some(r), MemberState::Rebuilding) => format!(
                    ", rebuilding: stripes below {} of {} rebuilt",
                    r.checkpoint_stripe, r.total_stripes
                ),
                _ => String::new(),
            };
            report.push(format!(
                "member {slot}: {} in sync (events {}){rebuilding}",
                probe.path, superblock.events
            ));
            SlotState::Present { probe: probe_index }
        } else {
            report.push(format!(
                "member {slot}: {} is stale (events {} < {}, recorded {:?}): out of date, brought up to date before use (a re-add where the bitmap allows, else a full rebuild)",
                probe.path, superblock.events, newest.events, record.state
            ));
            SlotState::Stale {
                probe: probe_index,
                events: superblock.events,
            }
        };
    }
    for (slot, state) in slots.iter().enumerate() {
        if *state == SlotState::Missing {
            report.push(format!(
                "member {slot}: missing (last seen at {})",
                newest.members[slot].path_hint
            ));
        }
    }
    let mut forced = Vec::new();
    if force && check_survivable(&newest, &slots).is_err() {
        forced = take_back_failed(&mut newest, &mut slots, &decoded, probes, &mut report);
    }
    let failed = check_survivable(&newest, &slots).err();
    let region_count = newest
        .geometry
        .stripe_count()
        .div_ceil(newest.bitmap_stripes_per_region);
    let mut bitmap = IntentBitmap::new(region_count);
    let mut bitmap_sequence = 0;
    let mut bitmap_whole = true;
    for (slot, state) in slots.iter().enumerate() {
        let SlotState::Present { probe } = state else {
            continue;
        };
        let area = probes[*probe].metadata.as_ref().expect("decoded above");
        match IntentBitmap::decode_newest(area, region_count) {
            Ok((sequence, member_bitmap)) => {
                bitmap.union_with(&member_bitmap);
                bitmap_sequence = bitmap_sequence.max(sequence);
            }
            // Without a bitmap copy we cannot tell where writes were in flight:
            // treat every region as dirty if the array was not shut down cleanly.
            Err(e) => {
                bitmap_whole = false;
                report.push(format!("member {slot}: write-intent bitmap unreadable ({e}); assuming all regions dirty"));
                if newest.state != super::superblock::ArrayState::Clean {
                    for region in 0..region_count {
                        bitmap.set(region, true);
                    }
                }
            }
        }
    }
    if !forced.is_empty() {
        // Stripes written while a member taken back failed may not match
        // their parity: resync everything that can be.
        newest.state = super::superblock::ArrayState::Dirty;
        for region in 0..region_count {
            bitmap.set(region, true);
        }
    }
    let mut re_add = Vec::new();
    if failed.is_none() {
        for (slot, state) in slots.iter().enumerate() {
            let SlotState::Stale { probe, .. } = *state else {
                continue;
            };
            let copy = decoded[probe].as_ref().expect("a stale member decoded");
            let refusal = super::readd::re_add_refusal(copy, &newest, slot).or_else(|| {
                (!bitmap_whole).then(|| "a write-intent bitmap is unreadable".to_string())
            });
            match refusal {
                None => {
                    report.push(format!(
                        "member {slot}: {} left without losing a write: re-added from the \
                         write-intent bitmap (only the regions written since are copied)",
                        probes[probe].path
                    ));
                    re_add.push(slot);
                }
                Some(why) => report.push(format!(
                    "member {slot}: {} cannot be re-added from the bitmap: {why}",
                    probes[probe].path
                )),
            }
        }
        if !forced.is_empty() {
            re_add.clear();
        }
    }
    let dirty = bitmap.dirty_regions().count();
    report.push(format!(
        "state {:?}; {dirty} of {region_count} bitmap regions marked for resync",
        newest.state
    ));
    for (index, spare) in spares.iter().enumerate() {
        if spare.is_none() {
            report.push(format!(
                "spare {index}: missing (last seen at {})",
                newest.spares[index].path_hint
            ));
        }
    }
    Ok(Survey {
        assembly: Assembly {
            superblock: newest,
            slots,
            spares,
            bitmap,
            bitmap_sequence,
            bitmap_whole,
            re_add,
            report,
            forced,
            left_out: Vec::new(),
        },
        unusable,
        failed,
    })
}

pub(super) fn check_survivable(
    superblock: &Superblock,
    slots: &[SlotState],
) -> Result<(), AssemblyError> {
    let level = superblock.geometry.level;
    // A member still being rebuilt holds only part of its data.
    let absent: Vec<usize> = (0..slots.len())
        .filter(|&s| {
            !matches!(slots[s], SlotState::Present { .. })
                || superblock.members[s].state == MemberState::Rebuilding
        })
        .collect();
    let name = |slot: usize| {
        let rebuilding = if superblock.members[slot].state == MemberState::Rebuilding {
            ", still rebuilding"
        } else {
            ""
        };
        format!(
            "{} ({}{rebuilding})",
            slot, superblock.members[slot].path_hint
        )
    };
    match level {
        Level::Raid0 => {
            if let Some(&slot) = absent.first() {
                let detail = match slots[slot] {
                    SlotState::Stale { .. } => "it is stale".to_string(),
                    _ => "it is missing".to_string(),
                };
                return Err(AssemblyError::MissingMember {
                    level: Level::Raid0.name(),
                    slot,
                    path_hint: superblock.members[slot].path_hint.clone(),
                    detail: format!("{detail}; RAID-0 has no redundancy"),
                });
            }
        }
        Level::Raid10 => {
            let layout = crate::layout::layout_for(&superblock.geometry);
            for stripe in 0..superblock.geometry.member_count as u64 {
                let map = layout.stripe_map(stripe);
                let (a, b) = (map.data[0].member, map.parity[0].member);
                if absent.contains(&a) && absent.contains(&b) {
                    return Err(AssemblyError::MirrorLost { a, b });
                }
            }
        }
        Level::Raid5 | Level::Raid6 | Level::Crs { .. } => {
            if absent.len() > level.redundancy() {
                return Err(AssemblyError::TooManyMissing {
                    level: level.name(),
                    missing: absent.len(),
                    tolerated: level.redundancy(),
                    names: absent
                        .iter()
                        .map(|&s| name(s))
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
        }
    }
    Ok(())
}
