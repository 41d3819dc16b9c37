//! The contiguity transform's rules, from the MSC-CT paper's examples: the
//! basic rxw-matrix of Fig. 7(b) (equation (3)), the transforms of Fig. 7(d)
//! as the text describes them, the performance rule and exception ranges of
//! Fig. 10, and a planted breach of the consistency rule that the rules
//! check must catch.

use eraid_core::cache::config::StrideRule;
use eraid_core::cache::matrix::{basic_rxw, BlockState, Ops, RowMethod, RxwMatrix, StatusMatrix};
use eraid_core::cache::rules::{check_rules, Violation};
use eraid_core::cache::runs::{read_runs, write_runs};
use eraid_core::cache::transform::{
    contiguity_transform, read_contiguity_transform, write_contiguity_transform,
};

/// Fig. 7(a), equation (2): 7 blocks per strip, RAID-5 of 5 disks.
fn fig7_z() -> StatusMatrix {
    StatusMatrix::parse(&["DEEE", "ECED", "EEEE", "DDDD", "DCDD", "EDEE", "DEEE"])
}

fn wide_open(s_max: u32) -> StrideRule {
    StrideRule {
        s_max,
        except: Vec::new(),
    }
}

fn ops(text: &str) -> Ops {
    Ops::parse(text).unwrap()
}

#[test]
fn basic_rxw_matrix_is_equation_3() {
    let (m, methods) = basic_rxw(&fig7_z(), 1);
    let want = RxwMatrix::parse(
        &[
            "t,xx,w|||| r,x,_,w",
            "r,x|x|r,x|x,w|_,w",
            "||||",
            "x,w|x,w|x,w|x,w|_,w",
            "x,w|x|x,w|x,w|_,w",
            "|t,xx,w|||r,x,_,w",
            "t,xx,w||||r,x,_,w",
        ],
        1,
    );
    assert_eq!(m, want);
    use RowMethod::*;
    assert_eq!(
        methods,
        vec![
            ReadModifyWrite,
            ReconstructWrite,
            Idle,
            ReconstructWrite,
            ReconstructWrite,
            ReadModifyWrite,
            ReadModifyWrite
        ]
    );
    assert_eq!(check_rules(&fig7_z(), &m), Ok(()));
}

#[test]
fn fig7_read_transform_uses_t_on_dirty_and_r_elsewhere() {
    let z = fig7_z();
    let (mut m, _) = basic_rxw(&z, 1);
    let added = read_contiguity_transform(&mut m, &z, &wide_open(64));
    // Strip 0: between m21 (r) and m71 (t): r on rows 3 and 6 (empty), t on
    // rows 4 and 5 (dirty: "t is added to m51 ... r is used for m61").
    // (The paper numbers rows and columns from 1; these are from 0.)
    for (row, op) in [(2, Ops::R), (3, Ops::T), (4, Ops::T), (5, Ops::R)] {
        assert!(m.get(row, 0).has(op), "row {row}: {:?}", m.get(row, 0));
    }
    assert!(!m.get(3, 0).has(Ops::R) && !m.get(4, 0).has(Ops::R));
    // The parity strip: reads at rows 1, 6, 7; r fills rows 2..5 (m35 too).
    for row in 1..5 {
        assert!(m.get(row, 4).has(Ops::R), "parity row {row}");
    }
    // Strips 1, 2 and 3 read at most once: nothing to join.
    assert_eq!(added, 4 + 4);
    assert_eq!(check_rules(&z, &m), Ok(()));
}

#[test]
fn fig7_write_transform_after_the_read_transform() {
    let z = fig7_z();
    let (mut m, _) = basic_rxw(&z, 1);
    let added = contiguity_transform(&mut m, &z, &wide_open(64), &wide_open(64));
    // <m11, m41> and <m51, m71> join: strip 0 is written whole.
    assert!((0..7).all(|row| m.get(row, 0).has(Ops::W)), "{m:?}");
    // Strip 1: m52 is clean between the writes of m42 and m62: joined.
    assert!(m.get(4, 1).has(Ops::W));
    // Strip 3: m24 and m44 cannot join, m34 is empty without r (rule (7)).
    assert!(!m.get(2, 3).has(Ops::W));
    // Parity: row 3 was read (r), so the parity strip is written whole.
    assert!((0..7).all(|row| m.get(row, 4).has(Ops::W)));
    assert_eq!(added.write_blocks, 3 + 1 + 1);
    assert_eq!(check_rules(&z, &m), Ok(()));
    // The transform shows as fewer device runs: strip 0 is one read and
    // one write, the parity strip one read and one write.
    let reads: Vec<_> = read_runs(&m)
        .into_iter()
        .filter(|r| r.col == 0 || r.col == 4)
        .collect();
    let writes: Vec<_> = write_runs(&m)
        .into_iter()
        .filter(|r| r.col == 0 || r.col == 4)
        .collect();
    assert_eq!(
        reads.iter().map(|r| r.rows.clone()).collect::<Vec<_>>(),
        vec![0..7, 0..7]
    );
    assert_eq!(
        writes.iter().map(|r| r.rows.clone()).collect::<Vec<_>>(),
        vec![0..7, 0..7]
    );
}

#[test]
fn performance_rule_limits_the_stride() {
    let z = fig7_z();
    let (mut m, _) = basic_rxw(&z, 1);
    // S = 5 between m21 and m71 is not below S_r^max = 5: no read transform
    // there, so neither write transform in strip 0 has its r's.
    contiguity_transform(&mut m, &z, &wide_open(5), &wide_open(64));
    assert!(!m.get(2, 0).reads() && !m.get(5, 0).reads());
    assert!(!m.get(1, 0).has(Ops::W) && !m.get(5, 0).has(Ops::W));
    // The parity strip's read gap (rows 1 to 6, S = 5) is refused too; rows
    // 6 and 7 are adjacent (S = 1).
    assert!(!m.get(2, 4).reads());
    assert_eq!(check_rules(&z, &m), Ok(()));
}

#[test]
fn fig10_exception_ranges_skip_strides() {
    let z = fig7_z();
    // S = 5 permitted by S_max but inside the exception range [4, 6].
    let except = StrideRule {
        s_max: 64,
        except: vec![(4, 6)],
    };
    let (mut m, _) = basic_rxw(&z, 1);
    read_contiguity_transform(&mut m, &z, &except);
    assert!(!m.get(2, 0).reads(), "S = 5 lies in the exception range");
    // Strip 0's writes: rows 1..4 is S = 3, allowed; but m31 has no r now.
    write_contiguity_transform(&mut m, &z, &except);
    assert!(!m.get(1, 0).has(Ops::W));
    // Below the range the transform runs: the write gap of strip 1 (m42 to
    // m62, S = 2) joins through the clean m52.
    assert!(m.get(4, 1).has(Ops::W));
    assert_eq!(check_rules(&z, &m), Ok(()));
}

/// A read transform that ignores rule (6): r everywhere, dirty or not.
fn careless_read_transform(m: &mut RxwMatrix, rule: &StrideRule) {
    for j in 0..m.cols() {
        let mut previous: Option<usize> = None;
        for i in 0..m.rows {
            if m.get(i, j).reads() {
                if let Some(p) = previous {
                    if rule.permits((i - p) as u32) {
                        for h in p + 1..i {
                            m.add(h, j, Ops::R);
                        }
                    }
                }
                previous = Some(i);
            }
        }
    }
}

#[test]
fn planted_read_over_dirty_is_caught() {
    let z = fig7_z();
    let (mut m, _) = basic_rxw(&z, 1);
    careless_read_transform(&mut m, &wide_open(64));
    // Rows 4 and 5 of strip 0 are dirty: r there would overwrite new data.
    assert_eq!(
        check_rules(&z, &m),
        Err(Violation::ReadOverDirty { row: 3, col: 0 })
    );
}

#[test]
fn planted_write_of_temporary_data_is_caught() {
    // A transform that wrote a block read only into temporary memory (t on
    // an empty block) would put data on the disk the cache never held.
    let z = StatusMatrix::parse(&["DEEE", "EEEE", "DEEE"]);
    let (mut m, _) = basic_rxw(&z, 1);
    m.add(1, 0, ops("t"));
    m.add(1, 0, ops("w"));
    assert_eq!(
        check_rules(&z, &m),
        Err(Violation::WriteWithoutCachedData { row: 1, col: 0 })
    );
    // The real transform reads it with r first, and the rules hold.
    let (mut m, _) = basic_rxw(&z, 1);
    contiguity_transform(&mut m, &z, &wide_open(64), &wide_open(64));
    assert_eq!(m.get(1, 0), ops("r,w"));
    assert_eq!(check_rules(&z, &m), Ok(()));
}

#[test]
fn raid6_rows_read_and_write_both_parities() {
    let z = StatusMatrix::parse(&["DEEEE", "EEEEE", "DEEEE"]);
    let (mut m, _) = basic_rxw(&z, 2);
    // One dirty of 5 with P and Q: RMW 2(1+2) = 6 vs RCW 5 + 2 = 7.
    assert_eq!(m.get(0, 5), ops("r,x,_,w"));
    assert_eq!(m.get(0, 6), ops("r,x,_,w"));
    contiguity_transform(&mut m, &z, &wide_open(64), &wide_open(64));
    assert_eq!(m.get(1, 6), ops("r,w"), "Q is read and written back");
    assert_eq!(m.get(1, 0), ops("r,w"));
    assert_eq!(check_rules(&z, &m), Ok(()));
    let _ = BlockState::Dirty;
}
