//! The reference model: for every sector, which values a read may return
//! now and which a crash may leave, given what was submitted and
//! acknowledged when. Events are numbered by one counter (`Seq`) in the
//! order the harness saw them.
//!
//! A write lands at some instant between its submission and its reply, so
//! a sector's value is the write that landed last. Write `w` is entirely
//! before `u` if `w` was acknowledged before `u` was submitted; then `u`
//! landed after `w`. Concurrent writes may land in either order.
//!
//! Candidate sets are collapsed whenever no user request is in flight, so
//! each sector's history stays short.

use crate::pattern::Tag;

pub type Seq = u64;

/// Stands for "any content" (a degraded array's write hole after a crash).
pub const ANY: Tag = u64::MAX;

#[derive(Clone, Debug)]
struct WriteRecord {
    /// The request (unique); `tag` is the value it writes (zeroes share one).
    id: u64,
    tag: Tag,
    submitted: Seq,
    acked: Option<Seq>,
    durable: bool,
}

impl WriteRecord {
    fn entirely_before(&self, later: &WriteRecord) -> bool {
        self.acked.is_some_and(|a| a < later.submitted)
    }
}

#[derive(Clone, Debug)]
struct Sector {
    /// Values the sector may hold at the last collapse.
    current: Vec<Tag>,
    /// Values a crash may leave, counting only writes before the collapse.
    after_crash: Vec<Tag>,
    /// Writes since the last collapse.
    history: Vec<WriteRecord>,
}

impl Sector {
    fn new() -> Sector {
        Sector {
            current: vec![crate::pattern::ZERO_TAG],
            after_crash: vec![crate::pattern::ZERO_TAG],
            history: Vec::new(),
        }
    }

    /// Writes of the history that nothing landed after for sure.
    fn latest(&self) -> Vec<Tag> {
        let h = &self.history;
        h.iter()
            .filter(|w| !h.iter().any(|u| w.entirely_before(u)))
            .map(|w| w.tag)
            .collect()
    }

    fn crash_candidates(&self) -> Vec<Tag> {
        let durable: Vec<&WriteRecord> = self.history.iter().filter(|w| w.durable).collect();
        if durable.is_empty() {
            let mut all = self.after_crash.clone();
            all.extend(self.history.iter().map(|w| w.tag));
            return all;
        }
        self.history
            .iter()
            .filter(|w| !durable.iter().any(|d| w.entirely_before(d)))
            .map(|w| w.tag)
            .collect()
    }
}

fn dedup(mut tags: Vec<Tag>) -> Vec<Tag> {
    tags.sort_unstable();
    tags.dedup();
    tags
}

pub struct Model {
    sectors: Vec<Sector>,
    seq: Seq,
}

impl Model {
    pub fn new(sector_count: u64) -> Model {
        Model {
            sectors: vec![Sector::new(); sector_count as usize],
            seq: 0,
        }
    }

    pub fn sector_count(&self) -> u64 {
        self.sectors.len() as u64
    }

    /// The next event number.
    pub fn tick(&mut self) -> Seq {
        self.seq += 1;
        self.seq
    }

    pub fn write_submitted(&mut self, first: u64, count: u64, id: u64, tag: Tag, at: Seq) {
        for s in &mut self.sectors[first as usize..(first + count) as usize] {
            s.history.push(WriteRecord {
                id,
                tag,
                submitted: at,
                acked: None,
                durable: false,
            });
        }
    }

    pub fn write_acked(&mut self, first: u64, count: u64, id: u64, at: Seq, fua: bool) {
        for s in &mut self.sectors[first as usize..(first + count) as usize] {
            let w = s
                .history
                .iter_mut()
                .find(|w| w.id == id)
                .expect("acknowledged write was submitted");
            w.acked = Some(at);
            w.durable = fua;
        }
    }

    /// A flush submitted at `submitted` completed: everything acknowledged
    /// before it is durable.
    pub fn flush_acked(&mut self, submitted: Seq) {
        for s in &mut self.sectors {
            // Everything before the last collapse was acknowledged before
            // this flush was submitted (collapses happen with nothing in flight).
            s.after_crash = s.current.clone();
            for w in &mut s.history {
                if w.acked.is_some_and(|a| a < submitted) {
                    w.durable = true;
                }
            }
        }
    }

    /// Values a read of `sector` submitted at `from` and answered at `to`
    /// may return: any value the sector held at some instant in between.
    pub fn read_candidates(&self, sector: u64, from: Seq, to: Seq) -> Vec<Tag> {
        let s = &self.sectors[sector as usize];
        let h = &s.history;
        // An older value is overwritten for sure once a write is acked
        // before the read began.
        let overwritten = |w: Option<&WriteRecord>| {
            h.iter().any(|u| {
                u.acked.is_some_and(|a| a < from) && w.is_none_or(|w| w.entirely_before(u))
            })
        };
        let mut tags = Vec::new();
        if !overwritten(None) {
            tags.extend(&s.current);
        }
        for w in h {
            if w.submitted < to && !overwritten(Some(w)) {
                tags.push(w.tag);
            }
        }
        dedup(tags)
    }

    /// With no user request in flight: fold each sector's history.
    pub fn collapse(&mut self) {
        for s in &mut self.sectors {
            if s.history.is_empty() {
                continue;
            }
            assert!(
                s.history.iter().all(|w| w.acked.is_some()),
                "collapse with writes in flight"
            );
            let current = dedup(s.latest());
            let after_crash = dedup(s.crash_candidates());
            s.current = current;
            s.after_crash = after_crash;
            s.history.clear();
        }
    }

    /// Sectors whose content after a crash now is not certain (written
    /// since the last flush that covered them).
    pub fn uncertain_after_crash(&self, sector: u64) -> bool {
        let c = self.sectors[sector as usize].crash_candidates();
        dedup(c).len() > 1
    }

    /// Power loss: each sector now holds one of its crash candidates.
    /// `write_hole` lists sectors whose content is lost (a degraded array's
    /// parity stripes written since the last flush).
    pub fn crash(&mut self, write_hole: &[bool]) {
        for (i, s) in self.sectors.iter_mut().enumerate() {
            let tags = if write_hole[i] {
                vec![ANY]
            } else {
                dedup(s.crash_candidates())
            };
            s.current = tags.clone();
            s.after_crash = tags;
            s.history.clear();
        }
    }

    /// The array grew to `sector_count` sectors. What the new ones hold
    /// before they are written is unspecified (as for Linux MD): a growth
    /// may leave old copies of moved chunks there.
    pub fn grow(&mut self, sector_count: u64) {
        let unwritten = Sector {
            current: vec![ANY],
            after_crash: vec![ANY],
            history: Vec::new(),
        };
        if sector_count > self.sector_count() {
            self.sectors.resize(sector_count as usize, unwritten);
        }
    }

    /// These sectors' content is lost (a member failed while their stripe's
    /// parity was still inconsistent from a crash): any value is admissible
    /// until a write lands.
    /// Writes already acknowledged are lost too (a read-modify-write kept
    /// the stripe's parity wrong), and so may be those in flight.
    pub fn forget(&mut self, lost: &[bool]) {
        for (s, _) in self.sectors.iter_mut().zip(lost).filter(|(_, l)| **l) {
            s.current = vec![ANY];
            s.after_crash = vec![ANY];
            s.history.retain(|w| w.acked.is_none());
            for w in &mut s.history {
                w.tag = ANY;
            }
        }
    }

    /// The recovery read back `tag` at `sector` and it was admissible:
    /// narrow a wildcard to what is really there now.
    pub fn settle(&mut self, sector: u64, tag: Tag) {
        let s = &mut self.sectors[sector as usize];
        if !s.history.is_empty() {
            return;
        }
        let was = std::mem::replace(&mut s.current, vec![tag]);
        // Flushed (or just recovered): what is there now is what survives.
        if s.after_crash == was {
            s.after_crash = vec![tag];
        }
    }
}

/// Whether `tag` is among `candidates` (ANY admits everything).
pub fn admits(candidates: &[Tag], tag: Option<Tag>) -> bool {
    candidates.contains(&ANY) || tag.is_some_and(|t| candidates.contains(&t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_writes_admit_either_order_until_one_is_entirely_later() {
        let mut m = Model::new(1);
        let a = m.tick();
        m.write_submitted(0, 1, 10, 10, a);
        let b = m.tick();
        m.write_submitted(0, 1, 20, 20, b);
        let ack_a = m.tick();
        m.write_acked(0, 1, 10, ack_a, false);
        let ack_b = m.tick();
        m.write_acked(0, 1, 20, ack_b, false);
        let r = m.tick();
        assert_eq!(m.read_candidates(0, r, r + 1), vec![10, 20]);
        m.collapse();
        assert_eq!(m.read_candidates(0, r, r + 1), vec![10, 20]);
        let c = m.tick();
        m.write_submitted(0, 1, 30, 30, c);
        let ack_c = m.tick();
        m.write_acked(0, 1, 30, ack_c, false);
        let r = m.tick();
        assert_eq!(m.read_candidates(0, r, r + 1), vec![30]);
        // Never flushed: a crash may leave any of them, or the zeroes.
        assert_eq!(dedup(m.sectors[0].crash_candidates()), vec![0, 10, 20, 30]);
    }

    #[test]
    fn a_completed_flush_makes_earlier_acknowledged_writes_the_floor() {
        let mut m = Model::new(1);
        let a = m.tick();
        m.write_submitted(0, 1, 10, 10, a);
        let ack = m.tick();
        m.write_acked(0, 1, 10, ack, false);
        let flush = m.tick();
        let late = m.tick();
        m.write_submitted(0, 1, 20, 20, late);
        m.flush_acked(flush);
        m.crash(&[false]);
        // 20 was in flight: it may or may not have landed; 0 may not.
        assert_eq!(m.read_candidates(0, late + 1, late + 2), vec![10, 20]);
    }

    #[test]
    fn a_read_concurrent_with_a_write_may_see_old_or_new() {
        let mut m = Model::new(1);
        let w = m.tick();
        m.write_submitted(0, 1, 10, 10, w);
        let read_from = m.tick();
        let ack = m.tick();
        m.write_acked(0, 1, 10, ack, false);
        let read_to = m.tick();
        assert_eq!(m.read_candidates(0, read_from, read_to), vec![0, 10]);
        // A read starting after the ack sees only the new value.
        assert_eq!(m.read_candidates(0, read_to, read_to + 1), vec![10]);
    }
}
