//! Format autodetection from a file's first lines.

use super::lines::is_blank_or_comment;
use super::{LineParser, TraceFormat};

/// Picks the first format, in [`TraceFormat::ALL`] order, under which every
/// non-blank, non-comment sample line parses and at least one line yields a
/// request.
///
/// The order settles the two real ambiguities: MSR before SPC (an MSR line
/// never has a one-letter opcode, so this only matters for robustness), and
/// MQSim before DiskSim, because an MQSim line is also a valid DiskSim line
/// (integers are valid millisecond times) but not the other way round when
/// DiskSim times have a fractional part, as DiskSim writes them. A DiskSim
/// file with only integral times is therefore detected as MQSim; select the
/// format explicitly for such files.
pub(crate) fn detect<S: AsRef<str>>(first_lines: &[S]) -> Option<TraceFormat> {
    let sample: Vec<&str> = first_lines
        .iter()
        .map(AsRef::as_ref)
        .filter(|line| !is_blank_or_comment(line))
        .collect();
    if sample.is_empty() {
        return None;
    }
    TraceFormat::ALL.into_iter().find(|format| {
        let mut parser = format.parser();
        let mut requests = 0usize;
        for line in &sample {
            match parser.parse_line(line) {
                Ok(Some(_)) => requests += 1,
                Ok(None) => {}
                Err(_) => return false,
            }
        }
        requests > 0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_each_format() {
        let cases: [(&[&str], TraceFormat); 5] = [
            (
                &["0,303567,3584,w,0.000000", "1,1,512,R,0.01"],
                TraceFormat::Spc,
            ),
            (
                &["128166372003061629,wdev,0,Write,4267819008,4096,1185"],
                TraceFormat::Msr,
            ),
            (
                &["13.191135\t30\t0\t5\t1", "17.829285 20 576560 6 1"],
                TraceFormat::DiskSim,
            ),
            (
                &["11413000 0 657728 16 1", "11565000 1 31244784 64 1"],
                TraceFormat::MqSim,
            ),
            (
                &[
                    "8,0  3  1  0.000000000  697  Q  W 223490 + 8 [kjournald]",
                    "8,0  3  2  0.000001000  697  G  W 223490 + 8 [kjournald]",
                ],
                TraceFormat::Blkparse,
            ),
        ];
        for (lines, format) in cases {
            assert_eq!(TraceFormat::detect(lines), Some(format), "{lines:?}");
        }
    }

    #[test]
    fn mixed_precision_disksim_is_not_mqsim() {
        let lines = ["10 1 2 3 1", "10.5 1 2 3 0"];
        assert_eq!(TraceFormat::detect(&lines), Some(TraceFormat::DiskSim));
    }

    #[test]
    fn nothing_is_detected_from_garbage_or_silence() {
        assert_eq!(TraceFormat::detect(&["hello world"]), None);
        assert_eq!(TraceFormat::detect(&["", "# comment"]), None);
        let no_requests = ["8,0 3 2 0.000001000 697 G W 223490 + 8 [kjournald]"];
        assert_eq!(TraceFormat::detect(&no_requests), None);
    }
}
