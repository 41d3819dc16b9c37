//! `eraid crs study [--json] [--case K,M,T,W]...`: the EPU paper's
//! numerical study (Section IV), computed by `eraid_codes::crs_scaling`.

use anyhow::bail;
use clap::Args;
use serde_json::{json, Value};

use eraid_codes::crs_scaling::study::{SAVINGS_W_RANGE, TABLE_W_RANGE};
use eraid_codes::crs_scaling::{run_study, study_case, MatrixChoice, StudyCase, StudyReport};

use crate::output::say_out;

/// The paper's Fig. 4 case and the configurations of its Section V.
const PAPER_CASES: [(usize, usize, usize, usize); 4] =
    [(6, 3, 1, 4), (9, 3, 1, 4), (10, 3, 1, 5), (12, 3, 1, 5)];

/// Blocks read to update parity when a (k, m, w) CRS array grows by t data
/// disks: Scale-CRS (read-modify-write only) against Scale-CRS+EPU
/// (Algorithm 1), per scaling unit, for the paper's grid 2 <= k <= 17,
/// 1 <= t <= k, 2 <= m <= 5 (tables over w = 3, 4; savings over w = 3..6),
/// with Jerasure's post-scaling matrices and the optimized ones. The
/// README's "CRS scaling study" says how the unit is modelled and why
/// counts differ from the paper's.
#[derive(Debug, Args)]
pub struct StudyArgs {
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Only this case, as K,M,T,W (k data disks, m parity, t added,
    /// w packets); may be repeated. Needs k + t + m <= 2^w, 2 <= w <= 8.
    #[arg(long = "case", value_name = "K,M,T,W")]
    pub cases: Vec<String>,
}

/// Parses and checks one `--case` value.
fn parse_case(text: &str) -> anyhow::Result<(usize, usize, usize, usize)> {
    let fields: Vec<&str> = text.split(',').map(str::trim).collect();
    if fields.len() != 4 {
        bail!(
            "--case {text:?}: expected four numbers K,M,T,W, got {}",
            fields.len()
        );
    }
    let mut values = [0usize; 4];
    for (value, (field, name)) in values
        .iter_mut()
        .zip(fields.iter().zip(["K", "M", "T", "W"]))
    {
        *value = field.parse().map_err(|_| {
            anyhow::anyhow!("--case {text:?}: {name} = {field:?} is not a whole number")
        })?;
    }
    let [k, m, t, w] = values;
    if k == 0 || m == 0 || t == 0 {
        bail!("--case {text:?}: K, M and T must each be at least 1");
    }
    if !(2..=8).contains(&w) {
        bail!("--case {text:?}: W = {w} is outside 2..=8");
    }
    if k + t + m > 1 << w {
        bail!(
            "--case {text:?}: k + t + m = {} disks exceed the {} points of GF(2^{w}), so no Cauchy matrix exists",
            k + t + m,
            1 << w
        );
    }
    Ok((k, m, t, w))
}

fn case_json(case: &StudyCase) -> Value {
    json!({
        "k": case.k,
        "m": case.m,
        "t": case.t,
        "w": case.w,
        "stripes_per_unit": case.stripes_per_unit,
        "moved_blocks": case.moved_blocks,
        "parity_blocks": case.reads.parity_blocks,
        "parity_blocks_changed": case.reads.parity_blocks_changed,
        "rmw_data_reads": case.reads.rmw_data_reads,
        "rcw_data_reads": case.reads.rcw_data_reads,
        "scale_crs_reads": case.scale_crs_reads(),
        "epu_reads": case.epu_reads(),
        "epu_method": case.reads.epu_method().name(),
    })
}

fn case_line(case: &StudyCase) -> String {
    let per_stripe = |reads: usize| reads as f64 / case.stripes_per_unit as f64;
    format!(
        "{:<10} ({},{},{},{})  {:>3} stripes  {:>4} moved  Scale-CRS {:>5} ({:>6.2}/stripe)  EPU {:>5} ({:>6.2}/stripe, {})",
        case.matrix.name(),
        case.k,
        case.m,
        case.t,
        case.w,
        case.stripes_per_unit,
        case.moved_blocks,
        case.scale_crs_reads(),
        per_stripe(case.scale_crs_reads()),
        case.epu_reads(),
        per_stripe(case.epu_reads()),
        case.reads.epu_method().name(),
    )
}

fn report_json(report: &StudyReport) -> Value {
    let mut out = serde_json::Map::new();
    out.insert(
        "grid".into(),
        json!({
            "k_min": 2, "k_max": 17, "m_min": 2, "m_max": 5, "t_min": 1, "t_max": "k",
            "table_w_min": TABLE_W_RANGE.start(), "table_w_max": TABLE_W_RANGE.end(),
            "savings_w_min": SAVINGS_W_RANGE.start(), "savings_w_max": SAVINGS_W_RANGE.end(),
        }),
    );
    for matrix in MatrixChoice::ALL {
        let by_m: Vec<Value> = report
            .summaries
            .iter()
            .filter(|s| s.matrix == matrix)
            .map(|s| {
                json!({
                    "m": s.m,
                    "cases": s.cases,
                    "cases_without_matrix": s.cases_without_matrix,
                    "epu_fewer": s.epu_fewer,
                    "same": s.same,
                    "paper_total": s.paper_total,
                    "paper_epu_fewer": s.paper_epu_fewer,
                    "paper_same": s.paper_same,
                })
            })
            .collect();
        let savings = report
            .savings
            .iter()
            .find(|(m, _)| *m == matrix)
            .and_then(|(_, range)| *range)
            .map(|r| {
                json!({
                    "reads_min": r.reads_min, "reads_max": r.reads_max,
                    "parity_update_ios_min": r.parity_update_ios_min,
                    "parity_update_ios_max": r.parity_update_ios_max,
                    "scaling_ios_min": r.scaling_ios_min, "scaling_ios_max": r.scaling_ios_max,
                })
            });
        let cases: Vec<Value> = report
            .cases
            .iter()
            .filter(|c| c.matrix == matrix)
            .map(case_json)
            .collect();
        out.insert(
            matrix.name().into(),
            json!({ "by_m": by_m, "savings": savings, "cases": cases }),
        );
    }
    Value::Object(out)
}

fn print_report(report: &StudyReport) {
    say_out!("EPU numerical study: blocks read to update parity per scaling unit (Algorithm 1)");
    say_out!("grid: 2 <= k <= 17, 1 <= t <= k, 2 <= m <= 5; table over 3 <= w <= 4 (cases need k+t+m <= 2^w)");
    say_out!("");
    say_out!("matrix      m  cases  no-matrix  EPU-fewer  same  |  paper: total  EPU-fewer  same");
    for s in &report.summaries {
        say_out!(
            "{:<10} {:>2}  {:>5}  {:>9}  {:>9}  {:>4}  |  {:>12}  {:>9}  {:>4}",
            s.matrix.name(),
            s.m,
            s.cases,
            s.cases_without_matrix,
            s.epu_fewer,
            s.same,
            s.paper_total,
            s.paper_epu_fewer,
            s.paper_same
        );
    }
    say_out!("");
    say_out!("savings where EPU reads fewer, 3 <= w <= 6 (paper: jerasure 3.13%..31.15%, optimized 1.22%..16.67%):");
    for (matrix, range) in &report.savings {
        match range {
            Some(r) => say_out!(
                "{:<10} of reads {:.3}%..{:.3}%, of parity-update reads+writes {:.3}%..{:.3}%, of scaling I/Os {:.3}%..{:.3}%",
                matrix.name(),
                100.0 * r.reads_min,
                100.0 * r.reads_max,
                100.0 * r.parity_update_ios_min,
                100.0 * r.parity_update_ios_max,
                100.0 * r.scaling_ios_min,
                100.0 * r.scaling_ios_max
            ),
            None => say_out!("{:<10} EPU never reads fewer", matrix.name()),
        }
    }
    say_out!("");
    say_out!("Fig. 4 and Section V cases (paper, per stripe: (6,3,1,4) EPU 21, Scale-CRS 33):");
    for (k, m, t, w) in PAPER_CASES {
        for matrix in MatrixChoice::ALL {
            if let Some(case) = study_case(matrix, k, m, t, w) {
                say_out!("{}", case_line(&case));
            }
        }
    }
}

impl StudyArgs {
    pub fn run(self) -> anyhow::Result<i32> {
        let wanted = self
            .cases
            .iter()
            .map(|text| parse_case(text))
            .collect::<anyhow::Result<Vec<_>>>()?;
        if wanted.is_empty() {
            let report = run_study();
            if self.json {
                say_out!("{}", serde_json::to_string_pretty(&report_json(&report))?);
            } else {
                print_report(&report);
            }
            return Ok(0);
        }
        let mut cases = Vec::new();
        for (k, m, t, w) in wanted {
            for matrix in MatrixChoice::ALL {
                let case = study_case(matrix, k, m, t, w)
                    .expect("parse_case checked that the matrices exist");
                cases.push(case);
            }
        }
        if self.json {
            let list: Vec<Value> = cases
                .iter()
                .map(|c| {
                    let mut value = case_json(c);
                    value["matrix"] = json!(c.matrix.name());
                    value
                })
                .collect();
            say_out!(
                "{}",
                serde_json::to_string_pretty(&json!({ "cases": list }))?
            );
        } else {
            for case in &cases {
                say_out!("{}", case_line(case));
            }
        }
        Ok(0)
    }
}
