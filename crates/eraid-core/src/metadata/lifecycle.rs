//! Checks of the member-lifecycle fields of a decoded superblock (spares,
//! rebuilding members, the rebuild record): a damaged or inconsistent copy
//! is refused with what was wrong, never trusted.

use super::superblock::{MemberState, Superblock};
use std::collections::HashSet;

pub fn check_lifecycle_fields(sb: &Superblock) -> Result<(), String> {
    let member_count = sb.geometry.member_count;
    let mut uuids = HashSet::new();
    for (slot, record) in sb.members.iter().enumerate() {
        if matches!(record.state, MemberState::Spare) {
            return Err(format!("member slot {slot} is recorded as a spare"));
        }
        if !uuids.insert(record.uuid.as_str()) {
            return Err(format!("member uuid {} appears twice", record.uuid));
        }
    }
    for (index, spare) in sb.spares.iter().enumerate() {
        if spare.state != MemberState::Spare {
            return Err(format!(
                "spare {index} is recorded in state {:?}, not spare",
                spare.state
            ));
        }
        if !uuids.insert(spare.uuid.as_str()) {
            return Err(format!("member uuid {} appears twice", spare.uuid));
        }
    }
    if sb.this_member >= member_count + sb.spares.len() {
        return Err(format!(
            "this member is {}, but the array has {member_count} members and {} spares",
            sb.this_member,
            sb.spares.len()
        ));
    }
    let rebuilding: Vec<usize> = (0..member_count)
        .filter(|&s| sb.members[s].state == MemberState::Rebuilding)
        .collect();
    let Some(rebuild) = &sb.rebuild else {
        if let Some(slot) = rebuilding.first() {
            return Err(format!(
                "member {slot} is recorded as rebuilding but there is no rebuild record"
            ));
        }
        return Ok(());
    };
    rebuild
        .config
        .validate()
        .map_err(|e| format!("rebuild settings: {e}"))?;
    let stripes = sb.geometry.stripe_count();
    if rebuild.checkpoint_stripe > rebuild.total_stripes {
        return Err(format!(
            "rebuild checkpoint at stripe {} is past its end, stripe {}",
            rebuild.checkpoint_stripe, rebuild.total_stripes
        ));
    }
    if !rebuild.state.unfinished() {
        if let Some(slot) = rebuilding.first() {
            return Err(format!(
                "member {slot} is recorded as rebuilding but the rebuild is {}",
                rebuild.state.name()
            ));
        }
        return Ok(());
    }
    // The engine starts a rebuild beside a growth only once no window
    // awaits its backup (rewriting it would move the rows' cut).
    if sb.reshape.as_ref().is_some_and(|r| r.backup.is_some()) {
        return Err(
            "an unfinished rebuild is recorded beside a growth window awaiting its backup".into(),
        );
    }
    if rebuild.total_stripes != stripes {
        return Err(format!(
            "the rebuild covers {} stripes, the geometry has {stripes}",
            rebuild.total_stripes
        ));
    }
    if let Some(map) = &rebuild.rebuilt_units {
        map.decode(stripes)?;
    }
    if let Some(replace) = &rebuild.replace {
        return check_replace(sb, replace, &rebuild.targets, &rebuilding);
    }
    if rebuild.targets.is_empty() {
        return Err("an unfinished rebuild has no target member".into());
    }
    if rebuild.targets.len() > sb.geometry.level.redundancy() {
        return Err(format!(
            "the rebuild has {} targets; {} can rebuild at most {}",
            rebuild.targets.len(),
            sb.geometry.level.name(),
            sb.geometry.level.redundancy()
        ));
    }
    let mut seen = HashSet::new();
    for &target in &rebuild.targets {
        if target >= member_count {
            return Err(format!(
                "rebuild target slot {target} is not below the member count {member_count}"
            ));
        }
        if !seen.insert(target) {
            return Err(format!("rebuild target slot {target} is named twice"));
        }
        if sb.members[target].state != MemberState::Rebuilding {
            return Err(format!(
                "rebuild target slot {target} is recorded {:?}, not rebuilding",
                sb.members[target].state
            ));
        }
    }
    if let Some(slot) = rebuilding.iter().find(|s| !seen.contains(s)) {
        return Err(format!(
            "member {slot} is recorded as rebuilding but is not a target of the rebuild"
        ));
    }
    Ok(())
}

/// An unfinished replace: the source is an active member slot, the new
/// member is among the spares, and nothing is being rebuilt beside it.
fn check_replace(
    sb: &Superblock,
    replace: &crate::rebuild::record::ReplaceRecord,
    targets: &[usize],
    rebuilding: &[usize],
) -> Result<(), String> {
    let member_count = sb.geometry.member_count;
    if !targets.is_empty() || !rebuilding.is_empty() {
        return Err("a replace is recorded beside members being rebuilt".into());
    }
    let Some(source) = sb.members.get(replace.source) else {
        return Err(format!(
            "the replace's source slot {} is not below the member count {member_count}",
            replace.source
        ));
    };
    if source.uuid != replace.source_uuid || source.state != MemberState::Active {
        return Err(format!(
            "the replace's source slot {} holds uuid {} ({:?}), not the active member {}",
            replace.source, source.uuid, source.state, replace.source_uuid
        ));
    }
    if !sb.spares.iter().any(|s| s.uuid == replace.replacement) {
        return Err(format!(
            "the replace's new member {} is not among the spares",
            replace.replacement
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::create::{new_superblock, NewMember};
    use super::super::record::RecordError;
    use super::super::superblock::{MemberRecord, MemberState, Superblock};
    use crate::geometry::{Geometry, Level, ParityLayout, METADATA_BYTES};
    use crate::rebuild::config::RebuildConfig;
    use crate::rebuild::record::{RebuildCounters, RebuildRecord, RebuildState};

    fn raid5() -> Superblock {
        let geometry = Geometry::new(
            Level::Raid5,
            ParityLayout::LeftSymmetric,
            4,
            64 << 10,
            METADATA_BYTES + (64 << 20),
        )
        .unwrap();
        let members = (0..4)
            .map(|i| NewMember {
                uuid: format!("m{i}"),
                path_hint: format!("d{i}"),
            })
            .collect();
        new_superblock(geometry, "a".into(), members, 0)
    }

    fn rebuilding(target: usize, checkpoint_stripe: u64) -> Superblock {
        let mut sb = raid5();
        sb.members[target].state = MemberState::Rebuilding;
        sb.rebuild = Some(RebuildRecord {
            growth_checkpoint_chunk: None,
            config: RebuildConfig::default(),
            kind: Default::default(),
            targets: vec![target],
            checkpoint_stripe,
            total_stripes: sb.geometry.stripe_count(),
            state: RebuildState::Running,
            held: false,
            reason: None,
            counters: RebuildCounters::default(),
            replace: None,
            rebuilt_units: None,
        });
        sb
    }

    /// Encodes `sb` and decodes it again, as assembly does.
    fn round_trip(sb: &Superblock, this_member: usize) -> Result<Superblock, RecordError> {
        let mut area = vec![0u8; METADATA_BYTES as usize];
        let bytes = sb.encode_for(this_member);
        let at = Superblock::slot_offset_bytes(sb.events) as usize;
        area[at..at + bytes.len()].copy_from_slice(&bytes);
        Superblock::decode_newest(&area)
    }

    fn refused(sb: &Superblock, this_member: usize, words: &str) {
        match round_trip(sb, this_member) {
            Err(RecordError::Body { reason, .. }) => {
                assert!(reason.contains(words), "{reason:?} should say {words:?}")
            }
            other => panic!("expected a refusal saying {words:?}, got {other:?}"),
        }
    }

    #[test]
    fn lifecycle_fields_round_trip() {
        let mut sb = rebuilding(2, 7);
        sb.spares.push(MemberRecord {
            uuid: "s0".into(),
            state: MemberState::Spare,
            path_hint: "d4".into(),
            failure: None,
            absent_unwritten_since_events: None,
            re_add_from_events: None,
        });
        let back = round_trip(&sb, 4).expect("decodes");
        assert_eq!(back.this_member_uuid(), "s0");
        assert_eq!(back.rebuild, sb.rebuild);
        assert_eq!(back.members[2].state, MemberState::Rebuilding);
        // A superblock without the new fields (an older version) decodes.
        let plain = raid5();
        let json = serde_json::to_string(&plain).unwrap();
        assert!(!json.contains("spares") && !json.contains("rebuild"));
        assert!(round_trip(&plain, 0).is_ok());
    }

    /// Member 1 being replaced by spare "s0".
    fn replacing() -> Superblock {
        let mut sb = raid5();
        sb.spares.push(MemberRecord {
            uuid: "s0".into(),
            state: MemberState::Spare,
            path_hint: "d4".into(),
            failure: None,
            absent_unwritten_since_events: None,
            re_add_from_events: None,
        });
        sb.rebuild = Some(RebuildRecord {
            growth_checkpoint_chunk: None,
            config: RebuildConfig::default(),
            kind: crate::rebuild::record::RebuildKind::Full,
            targets: Vec::new(),
            checkpoint_stripe: 3,
            total_stripes: sb.geometry.stripe_count(),
            state: RebuildState::Running,
            held: false,
            reason: None,
            counters: RebuildCounters::default(),
            rebuilt_units: None,
            replace: Some(crate::rebuild::record::ReplaceRecord {
                source: 1,
                source_uuid: "m1".into(),
                replacement: "s0".into(),
            }),
        });
        sb
    }

    #[test]
    fn replace_records_round_trip_and_inconsistent_ones_are_refused() {
        let sb = replacing();
        let back = round_trip(&sb, 4).expect("decodes");
        assert_eq!(back.rebuild, sb.rebuild);
        assert_eq!(back.this_member_uuid(), "s0");
        let mut sb = replacing();
        sb.rebuild
            .as_mut()
            .unwrap()
            .replace
            .as_mut()
            .unwrap()
            .source = 9;
        refused(&sb, 0, "not below the member count");
        let mut sb = replacing();
        sb.rebuild
            .as_mut()
            .unwrap()
            .replace
            .as_mut()
            .unwrap()
            .source_uuid = "m2".into();
        refused(&sb, 0, "not the active member m2");
        let mut sb = replacing();
        sb.members[1].state = MemberState::Faulty;
        refused(&sb, 0, "not the active member");
        let mut sb = replacing();
        sb.rebuild
            .as_mut()
            .unwrap()
            .replace
            .as_mut()
            .unwrap()
            .replacement = "zz".into();
        refused(&sb, 0, "not among the spares");
        let mut sb = replacing();
        sb.members[2].state = MemberState::Rebuilding;
        sb.rebuild.as_mut().unwrap().targets = vec![2];
        refused(&sb, 0, "beside members being rebuilt");
        // Finished, the record is history: nothing to check against.
        let mut sb = replacing();
        sb.rebuild.as_mut().unwrap().state = RebuildState::Done;
        sb.spares.clear();
        assert!(round_trip(&sb, 0).is_ok());
    }

    /// A rebuild beside a growth of member 3 onto this 4-member RAID-5,
    /// paused at its start; with `backup`, its first window awaits its
    /// backup (as after a crash in it).
    fn rebuilding_beside_growth(backup: bool) -> Superblock {
        use crate::growth::config::{ReshapeConfig, ReshapeStrategy};
        use crate::growth::record::{BackupRecord, ReshapeRecord, ReshapeState};
        let mut sb = rebuilding(1, 0);
        let new = sb.geometry;
        let old = Geometry {
            member_count: 3,
            ..new
        };
        let row = new.data_per_stripe() as u64;
        sb.reshape = Some(ReshapeRecord {
            config: ReshapeConfig::with_strategy(ReshapeStrategy::Alv),
            old_geometry: old,
            old_placement: None,
            checkpoint_chunk: 0,
            total_chunks: new.capacity_bytes() / new.chunk_bytes,
            old_capacity_chunks: old.capacity_bytes() / old.chunk_bytes,
            backup: backup.then(|| BackupRecord {
                start_chunk: 0,
                end_chunk: row,
                member: 3,
                offset_bytes: new.data_offset_bytes + (new.member_chunks() - row) * new.chunk_bytes,
                len_bytes: row * new.chunk_bytes,
                crc32c: 0,
            }),
            state: ReshapeState::Paused,
            pause_reason: None,
            held: false,
            counters: Default::default(),
        });
        sb.rebuild.as_mut().unwrap().growth_checkpoint_chunk = Some(0);
        sb
    }

    #[test]
    fn a_rebuild_beside_a_growth_window_awaiting_its_backup_is_refused() {
        let back = round_trip(&rebuilding_beside_growth(false), 0).expect("decodes");
        assert_eq!(back.rebuild.unwrap().growth_checkpoint_chunk, Some(0));
        refused(&rebuilding_beside_growth(true), 0, "awaiting its backup");
    }

    #[test]
    fn inconsistent_lifecycle_fields_are_refused_with_the_reason() {
        let total = raid5().geometry.stripe_count();
        refused(&rebuilding(1, total + 1), 0, "past its end");
        let mut sb = rebuilding(1, 0);
        sb.rebuild.as_mut().unwrap().targets = vec![4];
        refused(&sb, 0, "not below the member count");
        let mut sb = rebuilding(1, 0);
        sb.rebuild.as_mut().unwrap().targets = vec![1, 1];
        refused(&sb, 0, "RAID-5 can rebuild at most 1");
        let mut sb = rebuilding(1, 0);
        sb.rebuild.as_mut().unwrap().total_stripes = total / 2;
        refused(&sb, 0, "the geometry has");
        let mut sb = rebuilding(1, 0);
        sb.members[1].state = MemberState::Active;
        refused(&sb, 0, "not rebuilding");
        let mut sb = rebuilding(1, 0);
        sb.rebuild = None;
        refused(&sb, 0, "no rebuild record");
        let mut sb = rebuilding(1, 0);
        sb.rebuild.as_mut().unwrap().config.window_stripes = 0;
        refused(&sb, 0, "window_stripes");
        let mut sb = rebuilding(1, 0);
        sb.rebuild.as_mut().unwrap().config.hot_zone_bytes = 0;
        refused(&sb, 0, "hot_zone_bytes");
        // The rebuilt-units map: the right size decodes, a damaged one not.
        let units = total.div_ceil(crate::rebuild::record::recorded_unit_stripes(total));
        let mut sb = rebuilding(1, 0);
        let good = crate::rebuild::record::RebuiltUnits::encode(
            total,
            &vec![0x0f; units.div_ceil(8) as usize],
        );
        sb.rebuild.as_mut().unwrap().rebuilt_units = Some(good.clone());
        assert!(round_trip(&sb, 0).is_ok());
        let mut short = good.clone();
        short.bits_hex.truncate(2);
        sb.rebuild.as_mut().unwrap().rebuilt_units = Some(short);
        refused(&sb, 0, "hex digits");
        let mut coarse = good;
        coarse.unit_stripes += 1;
        sb.rebuild.as_mut().unwrap().rebuilt_units = Some(coarse);
        refused(&sb, 0, "units of");
        // A copy claiming to be a spare that is not recorded.
        refused(&raid5(), 5, "this member is 5");
        let mut sb = raid5();
        sb.spares.push(MemberRecord {
            uuid: "m1".into(),
            state: MemberState::Spare,
            path_hint: "d1".into(),
            failure: None,
            absent_unwritten_since_events: None,
            re_add_from_events: None,
        });
        refused(&sb, 0, "appears twice");
        sb.spares[0].uuid = "s".into();
        sb.spares[0].state = MemberState::Active;
        refused(&sb, 0, "not spare");
    }
}
