//! Validation against a measured drive trace (DiskSim "validate" format).
//!
//! Each line: `R|W Hit|Miss block_number block_count service_time_us
//! think_time_us`. The trace was taken with one request outstanding: request
//! i+1 is issued `think_time_us` of request i after request i completes. We
//! replay it exactly so, compare the simulated and measured service times,
//! and compute Ruemmler and Wilkes' demerit figure: the root-mean-square
//! horizontal distance between the two service-time CDFs.

use super::model::{DiskModel, DiskRequest};

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraceRecord {
    pub is_read: bool,
    pub lbn: u64,
    pub sectors: u32,
    pub service_us: f64,
    pub think_us: f64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct TraceError {
    pub file: String,
    pub line: usize,
    pub message: String,
}

/// Parses a validation trace; `file` names it in errors. Blank lines and
/// lines starting with `#` are skipped.
pub fn parse_validate_trace(file: &str, text: &str) -> Result<Vec<TraceRecord>, TraceError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let err = |m: &str| TraceError {
            file: file.to_string(),
            line: i + 1,
            message: m.to_string(),
        };
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() != 6 {
            return Err(err(
                "expected 6 fields: R|W Hit|Miss block count service_us think_us",
            ));
        }
        let is_read = match f[0] {
            "R" | "r" => true,
            "W" | "w" => false,
            _ => return Err(err("first field must be R or W")),
        };
        let lbn = f[2].parse::<u64>().map_err(|_| err("bad block number"))?;
        let sectors = f[3].parse::<u32>().map_err(|_| err("bad block count"))?;
        let service_us = f[4].parse::<f64>().map_err(|_| err("bad service time"))?;
        let think_us = f[5].parse::<f64>().map_err(|_| err("bad think time"))?;
        if sectors == 0 || !service_us.is_finite() || !think_us.is_finite() || think_us < 0.0 {
            return Err(err(
                "block count must be positive and times non-negative numbers",
            ));
        }
        out.push(TraceRecord {
            is_read,
            lbn,
            sectors,
            service_us,
            think_us,
        });
    }
    Ok(out)
}

#[derive(Debug, Clone, PartialEq)]
pub struct ValidationReport {
    pub requests: usize,
    pub demerit_ms: f64,
    pub mean_service_ms_measured: f64,
    pub mean_service_ms_simulated: f64,
    /// Simulated service time of each request, in trace order.
    pub simulated_service_ms: Vec<f64>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    #[error("trace line {index}: {message}")]
    Request { index: usize, message: String },
    #[error("the trace is empty")]
    Empty,
}

/// Replays `trace` closed-loop on `model` and compares with the measurements.
pub fn replay(
    model: &mut DiskModel,
    trace: &[TraceRecord],
) -> Result<ValidationReport, ReplayError> {
    if trace.is_empty() {
        return Err(ReplayError::Empty);
    }
    let mut now_ns = 0u64;
    let mut simulated = Vec::with_capacity(trace.len());
    for (i, r) in trace.iter().enumerate() {
        let req = DiskRequest {
            id: i as u64,
            lbn: r.lbn,
            sectors: r.sectors,
            is_read: r.is_read,
        };
        model
            .submit(now_ns, req)
            .map_err(|e| ReplayError::Request {
                index: i,
                message: e.to_string(),
            })?;
        let done = loop {
            let Some(t) = model.next_event_ns() else {
                return Err(ReplayError::Request {
                    index: i,
                    message: "the model never completed it".into(),
                });
            };
            if let Some(c) = model.advance(t).into_iter().find(|c| c.id == i as u64) {
                break c;
            }
        };
        simulated.push((done.finish_ns - now_ns) as f64 / 1e6);
        now_ns = done.finish_ns + (r.think_us * 1e3).round() as u64;
    }
    let measured: Vec<f64> = trace.iter().map(|r| r.service_us / 1e3).collect();
    Ok(ValidationReport {
        requests: trace.len(),
        demerit_ms: demerit(&measured, &simulated),
        mean_service_ms_measured: mean(&measured),
        mean_service_ms_simulated: mean(&simulated),
        simulated_service_ms: simulated,
    })
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// RMS horizontal distance between the empirical CDFs of `a` and `b`,
/// sampled at every 0.0001 of cumulative fraction (10,000 points).
pub fn demerit(a: &[f64], b: &[f64]) -> f64 {
    if a.is_empty() || b.is_empty() {
        return f64::NAN;
    }
    let sorted = |v: &[f64]| {
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        s
    };
    let (sa, sb) = (sorted(a), sorted(b));
    // The value at cumulative fraction q: the smallest x with F(x) >= q.
    let quantile =
        |s: &[f64], q: f64| s[((q * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1];
    const STEPS: usize = 10_000;
    let sum: f64 = (1..=STEPS)
        .map(|k| {
            let q = k as f64 / STEPS as f64;
            let d = quantile(&sa, q) - quantile(&sb, q);
            d * d
        })
        .sum();
    (sum / STEPS as f64).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demerit_of_shifted_cdf_is_the_shift() {
        let a: Vec<f64> = (0..100).map(f64::from).collect();
        let b: Vec<f64> = a.iter().map(|x| x + 0.5).collect();
        assert!((demerit(&a, &b) - 0.5).abs() < 1e-12);
        assert_eq!(demerit(&a, &a), 0.0);
    }

    #[test]
    fn malformed_trace_line_is_located() {
        let e = parse_validate_trace("t.trace", "R Hit 1 4 100 10\nR Hit x 4 1 1\n").unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("t.trace", 2));
    }
}
