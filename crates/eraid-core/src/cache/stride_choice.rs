//! The paper's selection of S_max from a stride benchmark (Section III-D,
//! Fig. 9): pure, shared by the simulator's benchmark on the drive model
//! and the driver's on real members (`eraid create`, `eraid tune`).

use super::config::StrideRule;

/// The paper's threshold: a stride whose normalised turnaround is below
/// this is not worth a transform.
pub const NORMALISED_TURNAROUND_LIMIT: f64 = 1.2;

/// The paper's selection from turnarounds by stride (1, 2, ... with no
/// gap): S_max is the smallest S such that every measured stride from S
/// up has a normalised turnaround below 1.2 (1 when no stride is
/// penalised: no transform at all). Strides in 2..S_max that are below
/// 1.2 anyway form the exception ranges (the paper's Fig. 9(d)).
pub fn choose_rule(turnaround_ms: &[(u32, f64)]) -> Result<(u32, Vec<(u32, u32)>), String> {
    let Some(&(1, contiguous_ms)) = turnaround_ms.first() else {
        return Err("the stride benchmark must start at stride 1 (contiguous)".into());
    };
    // NaN too: it would make every ratio false.
    if contiguous_ms.is_nan() || contiguous_ms <= 0.0 {
        return Err(format!(
            "the contiguous run's turnaround is {contiguous_ms} ms; cannot normalise"
        ));
    }
    for (index, &(stride, ms)) in turnaround_ms.iter().enumerate() {
        if stride as usize != index + 1 {
            return Err(format!(
                "stride benchmark strides must be 1, 2, 3, ... without gaps; found {stride} at position {}",
                index + 1
            ));
        }
        if !ms.is_finite() || ms < 0.0 {
            return Err(format!("stride {stride}'s turnaround is {ms} ms"));
        }
    }
    let penalised = |ms: f64| ms / contiguous_ms >= NORMALISED_TURNAROUND_LIMIT;
    let s_max = turnaround_ms
        .iter()
        .rev()
        .find(|&&(_, ms)| penalised(ms))
        .map_or(1, |&(stride, _)| stride + 1);
    let mut except: Vec<(u32, u32)> = Vec::new();
    for &(stride, ms) in turnaround_ms.iter().skip(1) {
        if stride >= s_max || penalised(ms) {
            continue;
        }
        match except.last_mut() {
            Some((_, end)) if *end + 1 == stride => *end = stride,
            _ => except.push((stride, stride)),
        }
    }
    Ok((s_max, except))
}

/// [`choose_rule`] as the cache's rule.
pub fn choose_stride_rule(turnaround_ms: &[(u32, f64)]) -> Result<StrideRule, String> {
    let (s_max, except) = choose_rule(turnaround_ms)?;
    Ok(StrideRule { s_max, except })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(normalised: &[f64]) -> Vec<(u32, f64)> {
        normalised
            .iter()
            .enumerate()
            .map(|(i, &n)| (i as u32 + 1, 10.0 * n))
            .collect()
    }

    #[test]
    fn s_max_is_one_past_the_last_penalised_stride() {
        let (s_max, except) = choose_rule(&curve(&[1.0, 3.0, 2.5, 1.3, 0.9, 0.5])).unwrap();
        assert_eq!(s_max, 5);
        assert!(except.is_empty());
    }

    #[test]
    fn dips_below_s_max_become_exceptions() {
        let (s_max, except) =
            choose_rule(&curve(&[1.0, 2.0, 1.1, 1.0, 2.0, 1.19, 1.5, 0.4])).unwrap();
        assert_eq!(s_max, 8);
        assert_eq!(except, vec![(3, 4), (6, 6)]);
    }

    #[test]
    fn the_threshold_itself_is_penalised() {
        // 1.2 is not "below 1.2": stride 3 at exactly 1.2 sets S_max 4.
        let rule = choose_stride_rule(&curve(&[1.0, 1.0, 1.2, 1.0])).unwrap();
        assert_eq!(
            rule,
            StrideRule {
                s_max: 4,
                except: vec![(2, 2)]
            }
        );
    }

    #[test]
    fn nothing_penalised_means_no_transform() {
        let (s_max, except) = choose_rule(&curve(&[1.0, 0.6, 0.4])).unwrap();
        assert_eq!(s_max, 1);
        assert!(except.is_empty());
        let rule = choose_stride_rule(&curve(&[1.0])).unwrap();
        assert!(!rule.permits(1) && !rule.permits(2));
    }

    #[test]
    fn bad_inputs_are_refused() {
        assert!(choose_rule(&[]).is_err());
        assert!(choose_rule(&[(2, 1.0)]).is_err());
        assert!(choose_rule(&[(1, 0.0), (2, 1.0)]).is_err());
        assert!(choose_rule(&[(1, f64::NAN), (2, 1.0)]).is_err());
        assert!(choose_rule(&[(1, 1.0), (3, 1.0)]).is_err());
        assert!(choose_rule(&[(1, 1.0), (2, f64::INFINITY)]).is_err());
        assert!(choose_rule(&[(1, 1.0), (2, -1.0)]).is_err());
    }
}
