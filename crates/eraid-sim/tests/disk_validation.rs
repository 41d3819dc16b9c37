//! The model against the measured Seagate Cheetah 9LP trace (DiskSim's
//! validation set, in the repository's data/disk-models/cheetah9LP).

use std::path::PathBuf;

use eraid_sim::disk::validate::{parse_validate_trace, replay};
use eraid_sim::disk::DiskModel;
use eraid_sim::diskspec::load_diskspecs_path;

fn data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/disk-models/cheetah9LP")
}

#[test]
fn cheetah9lp_loads_with_the_declared_block_count() {
    let spec = load_diskspecs_path(&data()).unwrap();
    let disk = DiskModel::new(spec).unwrap();
    // The model file declares "Block count = 17783240", but DiskSim (like
    // this model) uses the count its zone table implies: sum over zones of
    // cylinders * 12 surfaces * blocks per track - spares.
    assert_eq!(disk.capacity_sectors(), 17_918_387);
    assert_eq!(disk.geometry().cylinders(), 6962);
}

#[test]
fn cheetah9lp_trace_demerit_and_mean() {
    let spec = load_diskspecs_path(&data()).unwrap();
    let text = std::fs::read_to_string(data().join("cheetah9LP.trace")).unwrap();
    let trace = parse_validate_trace("cheetah9LP.trace", &text).unwrap();
    let mut disk = DiskModel::new(spec).unwrap();
    let r = replay(&mut disk, &trace).unwrap();
    let split = |read: bool| {
        let (mut m, mut s, mut n) = (0.0, 0.0, 0.0);
        for (t, sim) in trace.iter().zip(&r.simulated_service_ms) {
            if t.is_read == read {
                m += t.service_us / 1e3;
                s += sim;
                n += 1.0;
            }
        }
        (m / n, s / n)
    };
    println!(
        "demerit {:.4} ms, mean measured {:.4} ms, simulated {:.4} ms",
        r.demerit_ms, r.mean_service_ms_measured, r.mean_service_ms_simulated
    );
    println!(
        "reads (measured, simulated) {:?}, writes {:?}",
        split(true),
        split(false)
    );
    assert_eq!(r.requests, 10_000);
    // Achieved 0.095 ms (DiskSim 4.0 itself: 0.107 ms); the bound leaves margin
    // for harmless changes but fails on a real regression.
    assert!(r.demerit_ms < 0.15, "demerit {} ms", r.demerit_ms);
    let rel = (r.mean_service_ms_simulated - r.mean_service_ms_measured).abs()
        / r.mean_service_ms_measured;
    assert!(rel < 0.03, "mean service off by {:.1}%", rel * 100.0);
}
