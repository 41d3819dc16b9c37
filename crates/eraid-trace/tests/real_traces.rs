//! Parses the real traces: the 200-line copies in `tests/data` and the full
//! files in the repository's `data/traces`.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use eraid_trace::{TraceFormat, TraceReader, TraceRequest};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// `<repo root>/data/traces`.
fn full_traces_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/traces")
}

fn read(path: &Path, format: Option<TraceFormat>) -> (TraceFormat, Vec<TraceRequest>) {
    let file = File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let reader = BufReader::new(file);
    let name = path.display().to_string();
    let reader = match format {
        Some(format) => TraceReader::new(reader, name, format),
        None => TraceReader::autodetect(reader, name).unwrap(),
    };
    let format = reader.format();
    let requests = reader.collect::<Result<Vec<_>, _>>().unwrap();
    (format, requests)
}

struct Stats {
    requests: usize,
    read_fraction: f64,
    devices: BTreeSet<u32>,
    span_ns: u64,
}

fn stats(requests: &[TraceRequest]) -> Stats {
    let reads = requests.iter().filter(|r| r.is_read).count();
    let first = requests.first().map_or(0, |r| r.arrival_ns);
    let last = requests.last().map_or(0, |r| r.arrival_ns);
    Stats {
        requests: requests.len(),
        read_fraction: reads as f64 / requests.len().max(1) as f64,
        devices: requests.iter().map(|r| r.device).collect(),
        span_ns: last - first,
    }
}

#[test]
fn copies_of_the_first_200_lines_parse_and_autodetect() {
    let cases = [
        ("wsrch-small-200.trace", TraceFormat::MqSim, 200, 200),
        ("tpcc-small-200.trace", TraceFormat::MqSim, 200, 76),
        ("disksim-ascii-200.trace", TraceFormat::DiskSim, 200, 168),
    ];
    for (file, format, requests, reads) in cases {
        let (detected, parsed) = read(&data_dir().join(file), None);
        assert_eq!(detected, format, "{file}");
        assert_eq!(parsed.len(), requests, "{file}");
        assert_eq!(parsed.iter().filter(|r| r.is_read).count(), reads, "{file}");
    }
    let (_, wsrch) = read(&data_dir().join("wsrch-small-200.trace"), None);
    assert_eq!(
        wsrch[0],
        TraceRequest {
            arrival_ns: 11_413_000,
            device: 0,
            offset_bytes: 657_728 * 512,
            len_bytes: 16 * 512,
            is_read: true,
        }
    );
    let (_, disksim) = read(&data_dir().join("disksim-ascii-200.trace"), None);
    assert_eq!(disksim[0].arrival_ns, 13_191_135);
    assert_eq!((disksim[0].device, disksim[0].len_bytes), (30, 5 * 512));
}

#[test]
fn hand_written_samples_of_the_other_formats() {
    let (format, spc) = read(&data_dir().join("sample-spc.csv"), None);
    assert_eq!((format, spc.len()), (TraceFormat::Spc, 5));
    assert_eq!(spc[3].arrival_ns, 26_214_000);
    assert_eq!(spc.iter().filter(|r| r.is_read).count(), 2);

    let (format, msr) = read(&data_dir().join("sample-msr.csv"), None);
    assert_eq!((format, msr.len()), (TraceFormat::Msr, 3));
    assert_eq!(msr[0].arrival_ns, 0);
    assert_eq!(msr[1].arrival_ns, 1_100);
    assert_eq!(msr[2].arrival_ns, 1_332_052_600);

    let (format, blk) = read(&data_dir().join("sample-blkparse.txt"), None);
    assert_eq!((format, blk.len()), (TraceFormat::Blkparse, 3));
    assert_eq!(blk[1].offset_bytes, 223_498 * 512);
    assert!(blk[2].is_read && blk[2].len_bytes == 128 * 1024);
}

/// `data/traces/README.md`'s statistics for the full files.
#[test]
fn full_traces_match_their_readme() {
    let dir = full_traces_dir();

    // README: 24,782 requests over 60 s on devices 0-5, 99.98% reads. The
    // file has 24,783 requests: its last line lacks a newline, so `wc -l`
    // (where the README's figure comes from) counts one fewer.
    let (format, wsrch) = read(&dir.join("wsrch-small.trace"), None);
    let s = stats(&wsrch);
    assert_eq!(format, TraceFormat::MqSim);
    assert_eq!(s.requests, 24_783);
    assert_eq!(s.devices, (0..=5).collect());
    assert!(
        (s.read_fraction - 0.9998).abs() < 0.00005,
        "{}",
        s.read_fraction
    );
    assert!(
        (59_000_000_000..61_000_000_000).contains(&s.span_ns),
        "{}",
        s.span_ns
    );
    let mostly_8k = wsrch.iter().filter(|r| r.len_bytes == 8192).count();
    assert!(mostly_8k * 2 > wsrch.len());

    // README: 6,999 requests on 16 devices, 62.6% reads, about 0.1 s.
    let (format, tpcc) = read(&dir.join("tpcc-small.trace"), None);
    let s = stats(&tpcc);
    assert_eq!(format, TraceFormat::MqSim);
    assert_eq!(s.requests, 6_999);
    assert_eq!(s.devices.len(), 16);
    assert!(
        (s.read_fraction - 0.626).abs() < 0.0005,
        "{}",
        s.read_fraction
    );
    assert!(
        (100_000_000..200_000_000).contains(&s.span_ns),
        "{}",
        s.span_ns
    );

    // README: 100,000 requests, 79.6% reads, many devices.
    let (format, disksim) = read(&dir.join("disksim-ascii.trace"), None);
    let s = stats(&disksim);
    assert_eq!(format, TraceFormat::DiskSim);
    assert_eq!(s.requests, 100_000);
    assert!(
        (s.read_fraction - 0.796).abs() < 0.0005,
        "{}",
        s.read_fraction
    );
    assert!(s.devices.len() > 10);
}

/// "tpcc-small looped": three passes of the 200-line copy, rebased, folded
/// into 1 GiB, keep order and intensity.
#[test]
fn tpcc_copy_looped_three_times() {
    use eraid_trace::TraceOptions;
    let (_, once) = read(&data_dir().join("tpcc-small-200.trace"), None);
    let file = File::open(data_dir().join("tpcc-small-200.trace")).unwrap();
    let reader = TraceReader::new(BufReader::new(file), "tpcc", TraceFormat::MqSim);
    let options = TraceOptions {
        rebase_time: true,
        loop_count: 3,
        fold_capacity_bytes: Some(1 << 30),
        ..TraceOptions::default()
    };
    let looped: Vec<TraceRequest> = options
        .apply(reader)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(looped.len(), 600);
    assert_eq!(looped[0].arrival_ns, 0);
    assert!(looped
        .windows(2)
        .all(|w| w[0].arrival_ns <= w[1].arrival_ns));
    assert!(looped.iter().all(|r| r.end_bytes() <= 1 << 30));
    // Mean gap is preserved across the seams.
    let span = |r: &[TraceRequest]| r.last().unwrap().arrival_ns - r[0].arrival_ns;
    let gap_once = span(&once) as f64 / 199.0;
    let gap_looped = span(&looped) as f64 / 599.0;
    assert!((gap_looped / gap_once - 1.0).abs() < 0.01);
}
