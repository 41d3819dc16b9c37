//! Scale-CRS and EPU windows: whole scaling units (`growth::scale_crs`)
//! moved in place, parity updated by read-modify-write (Scale-CRS) or by
//! whichever method reads fewer blocks per unit (EPU, Algorithm 1).
//!
//! A window's buffer is an image of its rows on every member, member by
//! member (so one member's successive rows are successive bytes and a
//! device run is one slice of it). Crash safety uses the growth's backup
//! record: the window's moved chunks are first written to their new places
//! on the new members (nothing else lives there), flushed and recorded
//! (`BackupRecord` with their crc); only then are parity and the vacated old
//! places overwritten. After a crash the recorded window is redone from
//! the moved chunks' new copies by reconstruct-write (the parity may be
//! half updated, so read-modify-write would not be idempotent); an
//! unrecorded one is redone from its intact old places.

use super::super::Array;
use super::mover::{Buf, Piece, Run, Window, WindowStage};
use super::window::PlanOutcome;
use crate::growth::record::BackupRecord;
use crate::growth::scale_crs::{CrsScaledShape, OldPacket, UnitPlan};
use crate::stripe_code::StripeCode;
use eraid_codes::crs_scaling::UpdateMethod;

/// One unit of a window and how its parity is updated.
pub(in crate::array) struct PlannedUnit {
    plan: UnitPlan,
    method: UpdateMethod,
}

/// The CRS part of a window.
pub(in crate::array) struct CrsWindow {
    first_row: u64,
    rows: usize,
    members: usize,
    units: Vec<PlannedUnit>,
    /// crc32c of the moved chunks in move order (set once computed).
    moved_crc: u32,
}

/// Why a region of the image is read or written (Scale-CRS never merges
/// the migration's I/O with the parity update's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Purpose {
    Migration,
    ParityUpdate,
}

/// A byte range of one member's chunk in the window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Region {
    member: usize,
    row: u64,
    start: usize,
    len: usize,
    purpose: Purpose,
}

impl CrsWindow {
    pub(in crate::array) fn image_len(&self, chunk_bytes: usize) -> usize {
        self.members * self.rows * chunk_bytes
    }

    fn offset(&self, member: usize, row: u64, byte: usize, chunk: usize) -> usize {
        assert!(row >= self.first_row && row < self.first_row + self.rows as u64);
        (member * self.rows + (row - self.first_row) as usize) * chunk + byte
    }
}

impl Array {
    fn crs_shape(&self) -> CrsScaledShape {
        self.superblock
            .crs_scaled
            .expect("a Scale-CRS growth records its shape")
    }

    /// Whether this growth is Scale-CRS or EPU.
    pub(super) fn crs_growth(&self) -> bool {
        self.reshape_record()
            .is_some_and(|r| r.config.strategy.grows_crs())
    }

    /// The next window from `start`: whole units, about `aggregation_bytes`
    /// of rows, always through the moved-chunks record (`backup`), and
    /// always from the checkpoint (each window is checkpointed).
    pub(super) fn crs_plan_next_window(&self, start: u64) -> PlanOutcome {
        let reshape = self.reshape.as_ref().expect("growth");
        let record = self.reshape_record().expect("growth record");
        if start != reshape.checkpoint {
            return PlanOutcome::CheckpointFirst;
        }
        let shape = self.crs_shape();
        let k = shape.old_data_members as u64;
        let member_rows = self.geometry.member_chunks();
        let rows_wanted = (record.config.aggregation_bytes / self.geometry.chunk_bytes).max(1);
        let first_row = start / k;
        let mut end_row = first_row;
        while end_row < member_rows && (end_row == first_row || end_row - first_row < rows_wanted) {
            let unit = shape.unit_of_row(end_row, member_rows);
            end_row = unit.first_row + unit.rows as u64;
        }
        PlanOutcome::Window {
            start,
            end: (end_row * k).min(record.total_chunks),
            backup: true,
        }
    }

    /// The CRS plan of window `[start, end)` (chunks of the old layout).
    pub(super) fn crs_window(&self, start: u64, end: u64, restore: bool) -> CrsWindow {
        let shape = self.crs_shape();
        let k = shape.old_data_members as u64;
        let member_rows = self.geometry.member_chunks();
        let (first_row, end_row) = (start / k, end.div_ceil(k));
        let old_code = self
            .reshape
            .as_ref()
            .and_then(|r| r.old_code.clone())
            .expect("the old CRS code");
        let new_code = self.code.clone().expect("the new CRS code");
        let (StripeCode::Crs(old_code), StripeCode::Crs(new_code)) = (&*old_code, &*new_code)
        else {
            unreachable!("a CRS growth has CRS codes");
        };
        let w = old_code.w();
        let epu = self.reshape_config().strategy == crate::growth::config::ReshapeStrategy::Epu;
        let mut units = Vec::new();
        let mut row = first_row;
        while row < end_row {
            let span = shape.unit_of_row(row, member_rows);
            let plan = UnitPlan::new(&shape, span, w, old_code.bitmatrix(), new_code.bitmatrix());
            // A redone window's parity may be half updated: only
            // reconstruct-write is right whatever it holds.
            let method = if restore {
                UpdateMethod::ReconstructWrite
            } else if epu {
                plan.counts.epu_method()
            } else {
                UpdateMethod::ReadModifyWrite
            };
            row = span.first_row + span.rows as u64;
            units.push(PlannedUnit { plan, method });
        }
        CrsWindow {
            first_row,
            rows: (end_row - first_row) as usize,
            members: self.geometry.member_count,
            units,
            moved_crc: 0,
        }
    }

    fn crs_member(&self, row: u64, column: usize) -> usize {
        self.layout.stripe_map(row).data[column].member
    }

    fn crs_parity_member(&self, row: u64, parity: usize) -> usize {
        self.layout.stripe_map(row).parity[parity].member
    }

    /// Device runs for `regions`: successive bytes of one member merge up
    /// to `aggregation_bytes`; EPU merges the migration's and the parity
    /// update's I/O (access aggregation), Scale-CRS keeps them apart.
    fn crs_runs(&self, crs: &CrsWindow, mut regions: Vec<Region>) -> Vec<Run> {
        let chunk = self.geometry.chunk_bytes as usize;
        let aggregate =
            self.reshape_config().strategy == crate::growth::config::ReshapeStrategy::Epu;
        let max_run = self.reshape_config().aggregation_bytes.max(chunk as u64) as usize;
        regions.sort_by_key(|r| {
            let purpose = if aggregate { None } else { Some(r.purpose) };
            (r.member, purpose, r.row, r.start)
        });
        let disk = |r: &Region| r.row as usize * chunk + r.start;
        let mut runs: Vec<Run> = Vec::new();
        let mut last: Option<Region> = None;
        for region in regions {
            let merge = last.is_some_and(|l| {
                l.member == region.member
                    && (aggregate || l.purpose == region.purpose)
                    && disk(&l) + l.len == disk(&region)
                    && runs
                        .last()
                        .is_some_and(|run| run.len_bytes() + region.len <= max_run)
            });
            if merge {
                runs.last_mut().expect("run").pieces[0].len += region.len;
            } else {
                runs.push(Run {
                    member: region.member,
                    offset_bytes: self.geometry.data_offset_bytes + disk(&region) as u64,
                    pieces: vec![Piece {
                        buf: Buf::Data,
                        offset: crs.offset(region.member, region.row, region.start, chunk),
                        len: region.len,
                    }],
                });
            }
            last = Some(region);
        }
        runs
    }

    /// Reads what the window's units need: moved chunks (from their old
    /// places, or from their new ones when redoing a recorded window) and
    /// what each unit's method reads. EPU takes the blocks a user read
    /// has just brought in from memory instead (I/O overlap; never when
    /// redoing a window: then the old places may be overwritten).
    pub(super) fn crs_issue_reads(&mut self) {
        let window = self.take_crs();
        let chunk = self.geometry.chunk_bytes as usize;
        let w = self.crs_w();
        let packet = chunk / w;
        let restore = self.window_ref().restore;
        let overlap = match &self.reshape {
            Some(r) if !restore => r.overlap.as_ref(),
            _ => None,
        };
        // Every block to read, with its bytes if a user read left them.
        let mut wanted: Vec<(Region, Option<Vec<u8>>)> = Vec::new();
        let in_memory = |row: u64, column: usize, p: usize| {
            overlap
                .and_then(|b| b.get((row, column, p)))
                .map(<[u8]>::to_vec)
        };
        for unit in &window.units {
            let base = unit.plan.span.first_row;
            for mv in &unit.plan.moves {
                let (row, column) = if restore {
                    (base + mv.to_row as u64, mv.to_column)
                } else {
                    (base + mv.from_row as u64, mv.column)
                };
                let member = self.crs_member(row, column);
                let region = |start: usize, len: usize| Region {
                    member,
                    row,
                    start,
                    len,
                    purpose: Purpose::Migration,
                };
                if (0..w).any(|p| in_memory(row, column, p).is_some()) {
                    for p in 0..w {
                        wanted.push((region(p * packet, packet), in_memory(row, column, p)));
                    }
                } else {
                    // One region, as without the overlap buffer.
                    wanted.push((region(0, chunk), None));
                }
            }
            let data = match unit.method {
                UpdateMethod::ReadModifyWrite => {
                    for p in &unit.plan.changed {
                        let row = base + p.row as u64;
                        let parity = Region {
                            member: self.crs_parity_member(row, p.parity),
                            row,
                            start: p.packet * packet,
                            len: packet,
                            purpose: Purpose::ParityUpdate,
                        };
                        wanted.push((parity, None));
                    }
                    &unit.plan.rmw_reads
                }
                UpdateMethod::ReconstructWrite => &unit.plan.rcw_reads,
            };
            for p in data {
                let row = base + p.row as u64;
                let region = Region {
                    member: self.crs_member(row, p.column),
                    row,
                    start: p.packet * packet,
                    len: packet,
                    purpose: Purpose::ParityUpdate,
                };
                wanted.push((region, in_memory(row, p.column, p.packet)));
            }
        }
        let (regions, taken) = self.crs_trim_reused(wanted);
        let blocks: usize = regions.iter().map(|r| r.len / packet).sum();
        let counters = &mut self.reshape_record_mut().counters;
        counters.scaling_read_blocks += blocks as u64;
        counters.overlap_blocks += taken.len() as u64;
        let end_row = window.first_row + window.rows as u64;
        if let Some(buffer) = self.reshape.as_mut().and_then(|r| r.overlap.as_mut()) {
            // These rows' old places are being rewritten: none is needed again.
            buffer.drop_rows_below(end_row);
        }
        let image = &mut self.window_mut_pub().data;
        for (region, bytes) in taken {
            let at = window.offset(region.member, region.row, region.start, chunk);
            image[at..at + bytes.len()].copy_from_slice(&bytes);
        }
        let runs = self.crs_runs(&window, regions);
        self.put_crs(window);
        self.issue_runs(runs, false);
    }

    /// Splits the blocks a window wants into those to read and those taken
    /// from memory. A block in memory is taken only at either end of a
    /// stretch of blocks one device I/O would read (same member, contiguous
    /// on disk, merged as `crs_runs` merges); between blocks read anyway it
    /// is read with them, since leaving it out would split that I/O in
    /// two. So the overlap never adds a device I/O.
    fn crs_trim_reused(
        &self,
        mut wanted: Vec<(Region, Option<Vec<u8>>)>,
    ) -> (Vec<Region>, Vec<(Region, Vec<u8>)>) {
        let chunk = self.geometry.chunk_bytes as usize;
        let aggregate =
            self.reshape_config().strategy == crate::growth::config::ReshapeStrategy::Epu;
        let purpose = |r: &Region| if aggregate { None } else { Some(r.purpose) };
        wanted.sort_by_key(|(r, _)| (r.member, purpose(r), r.row, r.start));
        let disk = |r: &Region| r.row as usize * chunk + r.start;
        let follows = |a: &Region, b: &Region| {
            a.member == b.member && purpose(a) == purpose(b) && disk(a) + a.len == disk(b)
        };
        let mut read = Vec::new();
        let mut taken = Vec::new();
        let mut stretch: Vec<(Region, Option<Vec<u8>>)> = Vec::new();
        let mut flush = |stretch: &mut Vec<(Region, Option<Vec<u8>>)>| {
            let first = stretch.iter().position(|(_, b)| b.is_none());
            let last = stretch.iter().rposition(|(_, b)| b.is_none());
            for (i, (region, bytes)) in stretch.drain(..).enumerate() {
                let inside = first.is_some_and(|f| i >= f) && last.is_some_and(|l| i <= l);
                match bytes {
                    Some(bytes) if !inside => taken.push((region, bytes)),
                    _ => read.push(region),
                }
            }
        };
        for item in wanted {
            if stretch
                .last()
                .is_some_and(|(last, _)| !follows(last, &item.0))
            {
                flush(&mut stretch);
            }
            stretch.push(item);
        }
        flush(&mut stretch);
        (read, taken)
    }

    fn crs_w(&self) -> usize {
        match self.geometry.level {
            crate::geometry::Level::Crs { w, .. } => w,
            _ => unreachable!("a CRS growth"),
        }
    }

    /// The reads are in: compute the new parity and the moved image, then
    /// write the moved chunks (or, redoing a recorded window, go straight
    /// to the parity).
    pub(super) fn crs_reads_done(&mut self) {
        let mut crs = self.take_crs();
        let chunk = self.geometry.chunk_bytes as usize;
        let packet = chunk / self.crs_w();
        let restore = self.window_ref().restore;
        let mut image = std::mem::take(&mut self.window_mut_pub().data);
        // Where each moved chunk was and goes, as image offsets.
        let mut moves = Vec::new();
        for unit in &crs.units {
            let base = unit.plan.span.first_row;
            for mv in &unit.plan.moves {
                let (from_row, to_row) = (base + mv.from_row as u64, base + mv.to_row as u64);
                let from = crs.offset(self.crs_member(from_row, mv.column), from_row, 0, chunk);
                let to = crs.offset(self.crs_member(to_row, mv.to_column), to_row, 0, chunk);
                moves.push((from, to));
            }
        }
        if restore {
            let mut crc = 0;
            for &(from, to) in &moves {
                crc = crc32c::crc32c_append(crc, &image[to..to + chunk]);
                image.copy_within(to..to + chunk, from);
            }
            let backup = self
                .reshape_record()
                .and_then(|r| r.backup.clone())
                .expect("the record of the window being redone");
            if crc != backup.crc32c {
                let reshape = self.reshape.as_mut().expect("growth");
                reshape.window = None;
                reshape.backup_damaged = true;
                self.release_blocked();
                self.pause_reshape(format!(
                    "the moved chunks of {}..{} on the new members are damaged (crc mismatch); \
                     the growth cannot resume safely",
                    backup.start_chunk, backup.end_chunk
                ));
                return;
            }
        }
        // Parity first, from the old places.
        let value = |base: u64, p: &OldPacket| {
            let row = base + p.row as u64;
            let at = crs.offset(
                self.crs_member(row, p.column),
                row,
                p.packet * packet,
                chunk,
            );
            at..at + packet
        };
        let mut changed_packets = 0u64;
        let mut acc = vec![0u8; packet];
        for unit in &crs.units {
            let base = unit.plan.span.first_row;
            for p in &unit.plan.changed {
                let row = base + p.row as u64;
                let at = crs.offset(
                    self.crs_parity_member(row, p.parity),
                    row,
                    p.packet * packet,
                    chunk,
                );
                let sources = match unit.method {
                    UpdateMethod::ReadModifyWrite => {
                        acc.copy_from_slice(&image[at..at + packet]);
                        &p.changes
                    }
                    UpdateMethod::ReconstructWrite => {
                        acc.fill(0);
                        &p.encoded_by
                    }
                };
                for source in sources {
                    eraid_codes::xor_into(&mut acc, &image[value(base, source)]);
                }
                image[at..at + packet].copy_from_slice(&acc);
                changed_packets += 1;
            }
        }
        let mut crc = 0;
        for &(from, to) in &moves {
            image.copy_within(from..from + chunk, to);
            image[from..from + chunk].fill(0);
            crc = crc32c::crc32c_append(crc, &image[to..to + chunk]);
        }
        crs.moved_crc = crc;
        let moved_bytes = (moves.len() * chunk) as u64;
        let new_member_bytes =
            (crs.rows * (crs.members - self.crs_shape().old_member_count()) * chunk) as u64;
        let w = self.crs_w() as u64;
        let (rmw, rcw) = crs.units.iter().fold((0, 0), |(a, b), u| match u.method {
            UpdateMethod::ReadModifyWrite => (a + 1, b),
            UpdateMethod::ReconstructWrite => (a, b + 1),
        });
        self.window_mut_pub().data = image;
        let counters = &mut self.reshape_record_mut().counters;
        counters.scaling_write_blocks += moves.len() as u64 * w + changed_packets;
        counters.rmw_units += rmw;
        counters.rcw_units += rcw;
        if !restore {
            counters.moved_bytes += moved_bytes;
            // The new members' free rows, and the vacated old places.
            counters.zeroed_bytes += (new_member_bytes - moved_bytes) + moved_bytes;
            self.reshape.as_mut().expect("growth").paced_bytes += moved_bytes;
        }
        self.put_crs(crs);
        if restore {
            // The moved chunks' new copies are on disk and recorded.
            self.crs_issue_parity_writes();
            return;
        }
        // Phase one: every row of the window on each new member (moved
        // chunks and zeroed free space), where nothing else lives.
        let crs = self.take_crs();
        let old_members = self.crs_shape().old_member_count();
        let regions: Vec<Region> = (old_members..crs.members)
            .flat_map(|member| {
                (crs.first_row..crs.first_row + crs.rows as u64).map(move |row| Region {
                    member,
                    row,
                    start: 0,
                    len: chunk,
                    purpose: Purpose::Migration,
                })
            })
            .collect();
        let runs = self.crs_runs(&crs, regions);
        self.put_crs(crs);
        self.window_mut_pub().stage = WindowStage::WritingBackup;
        self.issue_runs(runs, true);
    }

    /// Phase one is durable: record the window's moved chunks (the backup
    /// a crash would redo the window from).
    pub(super) fn crs_record_moved(&mut self) {
        let (start, end) = {
            let w = self.window_ref();
            (w.start, w.end)
        };
        let crs = self.take_crs();
        let moved: usize = crs.units.iter().map(|u| u.plan.moves.len()).sum();
        let record = BackupRecord {
            start_chunk: start,
            end_chunk: end,
            member: self.crs_shape().old_member_count(),
            offset_bytes: 0,
            len_bytes: moved as u64 * self.geometry.chunk_bytes,
            crc32c: crs.moved_crc,
        };
        self.put_crs(crs);
        self.reshape_record_mut().backup = Some(record);
        self.reshape_record_mut().counters.metadata_writes += 1;
        self.request_superblock_write();
        let generation = self.metadata.superblock_requested;
        self.window_mut_pub().stage = WindowStage::RecordingBackup { generation };
    }

    /// Phase two: the changed parity packets and the vacated old places
    /// (zeroes).
    pub(super) fn crs_issue_parity_writes(&mut self) {
        let crs = self.take_crs();
        let chunk = self.geometry.chunk_bytes as usize;
        let packet = chunk / self.crs_w();
        let mut regions = Vec::new();
        for unit in &crs.units {
            let base = unit.plan.span.first_row;
            for p in &unit.plan.changed {
                let row = base + p.row as u64;
                regions.push(Region {
                    member: self.crs_parity_member(row, p.parity),
                    row,
                    start: p.packet * packet,
                    len: packet,
                    purpose: Purpose::ParityUpdate,
                });
            }
            for mv in &unit.plan.moves {
                let row = base + mv.from_row as u64;
                regions.push(Region {
                    member: self.crs_member(row, mv.column),
                    row,
                    start: 0,
                    len: chunk,
                    purpose: Purpose::Migration,
                });
            }
        }
        let runs = self.crs_runs(&crs, regions);
        self.put_crs(crs);
        self.window_mut_pub().stage = WindowStage::Writing;
        self.issue_runs(runs, true);
    }

    fn take_crs(&mut self) -> Box<CrsWindow> {
        self.window_mut_pub()
            .crs
            .take()
            .expect("a Scale-CRS window")
    }

    fn put_crs(&mut self, crs: Box<CrsWindow>) {
        self.window_mut_pub().crs = Some(crs);
    }

    fn window_ref(&self) -> &Window {
        self.reshape
            .as_ref()
            .and_then(|r| r.window.as_ref())
            .expect("window")
    }
}
