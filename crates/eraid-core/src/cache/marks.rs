//! When to destage: high/low mark scheduling (the paper's Section III-G):
//! destaging starts when the occupancy reaches the high mark and goes on
//! until it falls below the low mark.

#[derive(Clone, Debug)]
pub struct HighLowMarks {
    pub high_percent: u32,
    pub low_percent: u32,
    destaging: bool,
}

impl HighLowMarks {
    pub fn new(high_percent: u32, low_percent: u32) -> HighLowMarks {
        assert!(low_percent < high_percent && high_percent <= 100);
        HighLowMarks {
            high_percent,
            low_percent,
            destaging: false,
        }
    }

    /// Whether to destage at `occupied_blocks` of `capacity_blocks`.
    pub fn update(&mut self, occupied_blocks: u64, capacity_blocks: u64) -> bool {
        let percent_x_capacity = occupied_blocks * 100;
        if percent_x_capacity >= capacity_blocks * self.high_percent as u64 {
            self.destaging = true;
        } else if percent_x_capacity < capacity_blocks * self.low_percent as u64 {
            self.destaging = false;
        }
        self.destaging
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hysteresis_between_the_marks() {
        let mut marks = HighLowMarks::new(95, 85);
        assert!(!marks.update(90, 100));
        assert!(marks.update(95, 100));
        assert!(marks.update(86, 100), "keeps destaging above the low mark");
        assert!(!marks.update(84, 100));
        assert!(
            !marks.update(90, 100),
            "does not restart below the high mark"
        );
    }
}
