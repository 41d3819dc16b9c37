//! `eraid crs study`: the JSON names the issue asks for, Fig. 4's case and
//! the Table I/II rows, and bad `--case` values are refused by name.

mod support;

use support::*;

#[test]
fn json_has_per_matrix_per_m_counts_and_cases() {
    let s = scratch();
    let out = eraid(s.path(), &["crs", "study", "--json"]).expect_ok();
    let study = out.json();
    for matrix in ["jerasure", "optimized"] {
        let by_m = study[matrix]["by_m"].as_array().expect("by_m list");
        let ms: Vec<u64> = by_m.iter().map(|row| row["m"].as_u64().unwrap()).collect();
        assert_eq!(ms, [2, 3, 4, 5], "{matrix}");
        for row in by_m {
            let (fewer, same) = (
                row["epu_fewer"].as_u64().unwrap(),
                row["same"].as_u64().unwrap(),
            );
            assert_eq!(
                fewer + same,
                row["cases"].as_u64().unwrap(),
                "{matrix} {row}"
            );
            assert!(row["paper_epu_fewer"].is_u64() && row["paper_same"].is_u64());
        }
        let cases = study[matrix]["cases"].as_array().expect("cases list");
        assert!(!cases.is_empty());
        for case in cases {
            for field in ["k", "m", "t", "w", "scale_crs_reads", "epu_reads"] {
                assert!(case[field].is_u64(), "{matrix} case lacks {field}: {case}");
            }
            assert!(case["epu_reads"].as_u64() <= case["scale_crs_reads"].as_u64());
        }
    }
    // Table I's m = 3 row as computed (the README explains the paper's).
    let m3 = &study["jerasure"]["by_m"][1];
    assert_eq!(
        (m3["epu_fewer"].as_u64(), m3["same"].as_u64()),
        (Some(33), Some(13))
    );
    assert_eq!(
        (m3["paper_epu_fewer"].as_u64(), m3["paper_same"].as_u64()),
        (Some(285), Some(19))
    );
    let fig4 = study["jerasure"]["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["k"] == 6 && c["m"] == 3 && c["t"] == 1 && c["w"] == 4)
        .expect("Fig. 4's (6,3,1,4) is in the grid");
    assert_eq!(fig4["epu_reads"], 144);
    assert_eq!(fig4["scale_crs_reads"], 228);
    assert_eq!(fig4["stripes_per_unit"], 7);
}

#[test]
fn one_case_by_flag_as_text_and_json() {
    let s = scratch();
    let out = eraid(s.path(), &["crs", "study", "--case", "2,2,2,4", "--json"]).expect_ok();
    let cases = out.json()["cases"].as_array().unwrap().clone();
    assert_eq!(cases.len(), 2, "one line per matrix choice: {out}");
    assert_eq!(cases[0]["matrix"], "jerasure");
    assert_eq!(
        (
            cases[0]["scale_crs_reads"].as_u64(),
            cases[0]["epu_reads"].as_u64()
        ),
        (Some(8), Some(4))
    );
    assert_eq!(cases[0]["epu_method"], "rcw");
    let text = eraid(s.path(), &["crs", "study", "--case", "6,3,1,4"]).expect_ok();
    assert!(
        text.stdout.contains("Scale-CRS   228") && text.stdout.contains("EPU   144"),
        "{text}"
    );
}

#[test]
fn bad_cases_are_refused_naming_what_is_wrong() {
    let s = scratch();
    let d = s.path();
    rejected(
        d,
        &["crs", "study", "--case", "6,3,1"],
        &["6,3,1", "four numbers"],
    );
    rejected(d, &["crs", "study", "--case", "6,3,x,4"], &["T", "\"x\""]);
    rejected(d, &["crs", "study", "--case", "6,0,1,4"], &["at least 1"]);
    rejected(d, &["crs", "study", "--case", "6,3,1,9"], &["W = 9"]);
    rejected(
        d,
        &["crs", "study", "--case", "14,3,2,4"],
        &["19", "GF(2^4)"],
    );
    rejected(d, &["crs", "study", "--cases", "6,3,1,4"], &["--cases"]);
}
