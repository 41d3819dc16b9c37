use eraid_core::geometry::Level;
use eraid_core::ArrayOptions;
use eraid_sim::driver::*;
use std::time::Instant;

#[test]
fn quick() {
    let disk = resolve_disk_model("/work/shared/disk-models/cheetah9LP", None).unwrap();
    let mut config = SimConfig::new(
        Target::Array {
            level: Level::Raid5,
            layout: None,
            chunk_bytes: 64 << 10,
            options: ArrayOptions::default(),
        },
        4,
        disk,
    );
    config.max_requests = Some(
        std::env::var("N")
            .map(|n| n.parse().unwrap())
            .unwrap_or(2000),
    );
    let feed = FeedSpec::Trace {
        path: std::env::var("T")
            .unwrap_or("/work/shared/traces/wsrch-small.trace".into())
            .into(),
        format: None,
        options: eraid_trace::TraceOptions {
            rebase_time: true,
            ..Default::default()
        },
    };
    let t = Instant::now();
    let r = run(&config, &feed).unwrap();
    let wall = t.elapsed().as_secs_f64();
    let mut r2 = r.clone();
    r2.windows.clear();
    r2.cdf.clear();
    println!("{}", serde_json::to_string_pretty(&r2).unwrap());
    println!(
        "{}",
        serde_json::to_string_pretty(&r.flat_metrics()).unwrap()
    );
    println!(
        "wall {wall:.3}s device req/s {:.0}",
        r.device_requests as f64 / wall
    );
}
