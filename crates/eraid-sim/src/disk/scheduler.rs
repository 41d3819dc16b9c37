//! Which queued command the drive serves next.

use super::config::SchedulerKind;

/// What the scheduler knows about one ready command.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    /// Arrival order; the tie-breaker everywhere, so choices are deterministic.
    pub seq: u64,
    pub cyl: u32,
    /// Seek plus rotation from the current head position (SPTF only).
    pub positioning_ns: f64,
}

/// Index in `cands` of the command to serve. `cands` must not be empty.
pub fn choose(kind: SchedulerKind, cands: &[Candidate], head_cyl: u32) -> usize {
    let best = |key: &dyn Fn(&Candidate) -> (u64, u64)| {
        cands
            .iter()
            .enumerate()
            .min_by_key(|(_, c)| key(c))
            .map_or(0, |(i, _)| i)
    };
    match kind {
        SchedulerKind::Fcfs => best(&|c| (c.seq, 0)),
        // Ascending cylinders from the head; past the last one, wrap to the lowest.
        SchedulerKind::CLook => best(&|c| {
            let lap = u64::from(c.cyl < head_cyl);
            ((lap << 32) | u64::from(c.cyl), c.seq)
        }),
        // Positioning times are non-negative, so their bit patterns order like the values.
        SchedulerKind::Sptf => best(&|c| (c.positioning_ns.max(0.0).to_bits(), c.seq)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(seq: u64, cyl: u32, p: f64) -> Candidate {
        Candidate {
            seq,
            cyl,
            positioning_ns: p,
        }
    }

    #[test]
    fn policies() {
        let q = [c(0, 50, 9.0), c(1, 10, 1.0), c(2, 70, 5.0)];
        assert_eq!(choose(SchedulerKind::Fcfs, &q, 60), 0);
        assert_eq!(choose(SchedulerKind::CLook, &q, 60), 2);
        assert_eq!(choose(SchedulerKind::CLook, &q, 80), 1);
        assert_eq!(choose(SchedulerKind::Sptf, &q, 60), 1);
    }
}
