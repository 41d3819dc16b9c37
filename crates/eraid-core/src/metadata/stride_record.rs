//! The contiguity transform's performance rule as the superblock records
//! it (inside the cache record): S_r_max and S_w_max with their exception
//! ranges, and how they were set (the stride benchmark on a member at
//! `create` or `eraid tune`, by hand, or the stated default). Superblocks
//! written before this field existed have none: the default applies.

use crate::cache::config::{CacheConfig, StrideRule};
use serde::{Deserialize, Serialize};

/// The largest stride recorded: a transform never spans more than a strip,
/// and the largest chunk (4 MiB) holds 1024 blocks of 4 KiB.
pub const STRIDE_BLOCKS_MAX: u32 = 1024;
/// The most exception ranges per direction (a benchmark over 64 strides
/// has at most 32).
pub const STRIDE_EXCEPTIONS_MAX: usize = 64;
/// The longest note kept (JSON bytes).
pub const STRIDE_NOTE_BYTES_MAX: usize = 256;

/// How the recorded rule was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StrideSource {
    /// The stride benchmark on a member (`create`, `eraid tune`).
    Measured,
    /// Given on the command line (`--stride-max-read/--stride-max-write`).
    Manual,
    /// Not measured (`--no-tune`, or the member gave no usable timings):
    /// the cache's stated default.
    Default,
}

impl StrideSource {
    pub fn name(self) -> &'static str {
        match self {
            StrideSource::Measured => "measured",
            StrideSource::Manual => "manual",
            StrideSource::Default => "default",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StrideRecord {
    /// Read transforms join strides below this (blocks of 4 KiB).
    pub s_r_max: u32,
    /// Inclusive stride ranges below `s_r_max` that are not joined.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub s_r_except: Vec<(u32, u32)>,
    pub s_w_max: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub s_w_except: Vec<(u32, u32)>,
    pub source: StrideSource,
    /// Where and when it was measured, or why the default was taken
    /// (for messages only; bounded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl StrideRecord {
    /// The record of two rules.
    pub fn new(
        read: &StrideRule,
        write: &StrideRule,
        source: StrideSource,
        note: Option<String>,
    ) -> StrideRecord {
        StrideRecord {
            s_r_max: read.s_max,
            s_r_except: read.except.clone(),
            s_w_max: write.s_max,
            s_w_except: write.except.clone(),
            source,
            note,
        }
    }

    /// The cache's stated default rule, recorded as such.
    pub fn default_rule(note: Option<String>) -> StrideRecord {
        let config = CacheConfig::default();
        StrideRecord::new(
            &config.read_rule,
            &config.write_rule,
            StrideSource::Default,
            note,
        )
    }

    pub fn read_rule(&self) -> StrideRule {
        StrideRule {
            s_max: self.s_r_max,
            except: self.s_r_except.clone(),
        }
    }

    pub fn write_rule(&self) -> StrideRule {
        StrideRule {
            s_max: self.s_w_max,
            except: self.s_w_except.clone(),
        }
    }

    /// Checks the numbers (the note is cut to its bound instead).
    pub fn validate(&mut self) -> Result<(), String> {
        for (name, s_max, except) in [
            ("s_r", self.s_r_max, &self.s_r_except),
            ("s_w", self.s_w_max, &self.s_w_except),
        ] {
            if !(1..=STRIDE_BLOCKS_MAX).contains(&s_max) {
                return Err(format!(
                    "{name}_max {s_max} is outside 1..={STRIDE_BLOCKS_MAX} blocks"
                ));
            }
            if except.len() > STRIDE_EXCEPTIONS_MAX {
                return Err(format!(
                    "{} {name} exception ranges; at most {STRIDE_EXCEPTIONS_MAX}",
                    except.len()
                ));
            }
            if let Some((s, e)) = except.iter().find(|&&(s, e)| s < 2 || s > e || e >= s_max) {
                return Err(format!(
                    "{name} exception range {s}..={e} is not within 2..{name}_max ({s_max})"
                ));
            }
        }
        if let Some(note) = &mut self.note {
            *note = super::text::bounded_text_head(note, STRIDE_NOTE_BYTES_MAX);
        }
        Ok(())
    }

    /// One line for messages: `S_r_max 13 (except 7-11), S_w_max 7, measured`.
    pub fn summary(&self) -> String {
        let direction = |name: &str, s_max: u32, except: &[(u32, u32)]| {
            let mut text = format!("{name} {s_max}");
            if !except.is_empty() {
                let ranges: Vec<String> = except.iter().map(|(s, e)| format!("{s}-{e}")).collect();
                text.push_str(&format!(" (except {})", ranges.join(", ")));
            }
            text
        };
        format!(
            "{}, {}, {}",
            direction("S_r_max", self.s_r_max, &self.s_r_except),
            direction("S_w_max", self.s_w_max, &self.s_w_except),
            self.source.name()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> StrideRecord {
        StrideRecord {
            s_r_max: 13,
            s_r_except: vec![(7, 11)],
            s_w_max: 7,
            s_w_except: Vec::new(),
            source: StrideSource::Measured,
            note: Some("d0".into()),
        }
    }

    #[test]
    fn rules_round_trip_through_the_record() {
        let r = record();
        let again = StrideRecord::new(&r.read_rule(), &r.write_rule(), r.source, r.note.clone());
        assert_eq!(again, r);
        assert_eq!(r.summary(), "S_r_max 13 (except 7-11), S_w_max 7, measured");
    }

    #[test]
    fn bad_numbers_are_named() {
        type Edit = Box<dyn Fn(&mut StrideRecord)>;
        let cases: Vec<(Edit, &str)> = vec![
            (Box::new(|r| r.s_r_max = 0), "s_r_max 0 is outside"),
            (Box::new(|r| r.s_w_max = 5000), "s_w_max 5000 is outside"),
            (
                Box::new(|r| r.s_r_except = vec![(9, 8)]),
                "s_r exception range 9..=8",
            ),
            (
                Box::new(|r| r.s_r_except = vec![(1, 3)]),
                "s_r exception range 1..=3",
            ),
            (
                Box::new(|r| r.s_w_except = vec![(3, 7)]),
                "s_w exception range 3..=7",
            ),
            (
                Box::new(|r| r.s_r_except = vec![(2, 2); 65]),
                "65 s_r exception ranges",
            ),
        ];
        for (edit, expected) in cases {
            let mut r = record();
            edit(&mut r);
            let error = r.validate().unwrap_err();
            assert!(error.contains(expected), "{expected:?} in {error:?}");
        }
        let mut r = record();
        r.note = Some("x".repeat(10_000));
        r.validate().unwrap();
        assert_eq!(r.note.unwrap().len(), STRIDE_NOTE_BYTES_MAX);
    }
}
