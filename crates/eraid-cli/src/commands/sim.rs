//! `eraid sim`: one simulation of an array of modelled drives replaying a
//! trace or a synthetic workload; prints the metrics summary.
//!
//! `--bench` also prints how many simulated device requests ran per second
//! of wall time (the only wall-clock figure; it never enters the report).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::anyhow;
use clap::Args;

use eraid_sim::driver::run;
use eraid_sim::sim_command::{report_json, report_text, SimOptions};

#[derive(Debug, Args)]
pub struct SimArgs {
    /// RAID level: 0, 5, 6, 10, or "disk" for one bare drive.
    #[arg(long)]
    pub level: String,
    /// Number of member drives.
    #[arg(long, default_value_t = 4)]
    pub disks: usize,
    /// Chunk size, e.g. 64K.
    #[arg(long, default_value = "64K")]
    pub chunk: String,
    /// A DiskSim .diskspecs file or folder, or a preset: cheetah-15k5,
    /// cheetah-10k7, barracuda-7200-10, barracuda-7200-8, cheetah-15k4, ssd.
    #[arg(long = "disk-model")]
    pub disk_model: String,
    /// A trace to replay at its arrival times (all devices onto the array,
    /// addresses folded into its capacity).
    #[arg(long, conflicts_with = "workload")]
    pub trace: Option<PathBuf>,
    /// spc, msr, disksim, mqsim or blkparse (default: detected).
    #[arg(long = "trace-format", requires = "trace")]
    pub trace_format: Option<String>,
    /// A workload preset (financial1, websearch, cello99) or a TOML spec file.
    #[arg(long)]
    pub workload: Option<String>,
    /// Run the workload closed loop with this many requests outstanding.
    #[arg(long, requires = "workload")]
    pub outstanding: Option<u32>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Stop after this many requests (workloads default to 10000).
    #[arg(long = "max-requests")]
    pub max_requests: Option<u64>,
    /// Multiply trace arrival times by this (0.5 replays twice as fast).
    #[arg(long = "time-scale")]
    pub time_scale: Option<f64>,
    /// Use only this much of each drive, e.g. 2G.
    #[arg(long = "member-size")]
    pub member_size: Option<String>,
    /// Keep at most this many requests in the array (open loop); later
    /// arrivals wait at the host and their response time counts the wait
    /// (1: a replay tool on glibc's POSIX AIO). Default: 512, a host block
    /// layer's bound.
    #[arg(long = "host-queue-depth")]
    pub host_queue_depth: Option<u32>,
    /// The host's I/O scheduler in front of each drive: noop (default) or
    /// cfq (time slices between user and background I/O, as Linux 2.6).
    #[arg(long = "host-scheduler")]
    pub host_scheduler: Option<String>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also print simulated device requests per second of wall time.
    #[arg(long)]
    pub bench: bool,
}

impl SimArgs {
    pub fn run(self) -> anyhow::Result<i32> {
        let options = SimOptions {
            level: self.level,
            disks: self.disks,
            chunk: self.chunk,
            disk_model: self.disk_model,
            trace: self.trace,
            trace_format: self.trace_format,
            workload: self.workload,
            outstanding: self.outstanding,
            seed: self.seed,
            max_requests: self.max_requests,
            time_scale: self.time_scale,
            member_size: self.member_size,
            host_queue_depth: self.host_queue_depth,
            host_scheduler: self.host_scheduler,
        };
        let (config, feed) = options.plan().map_err(|e| anyhow!(e))?;
        let started = Instant::now();
        let report = run(&config, &feed).map_err(|e| anyhow!(e))?;
        let wall_s = started.elapsed().as_secs_f64();
        if self.json {
            let mut value = report_json(&report);
            if self.bench {
                value["bench"] = serde_json::json!({
                    "wall_s": wall_s,
                    "device_requests": report.device_requests,
                    "device_requests_per_wall_s": report.device_requests as f64 / wall_s.max(1e-9),
                });
            }
            println!("{}", serde_json::to_string_pretty(&value)?);
        } else {
            print!("{}", report_text(&report));
            if self.bench {
                println!(
                    "bench           {} device requests in {:.3} s wall: {:.0} device requests/s",
                    report.device_requests,
                    wall_s,
                    report.device_requests as f64 / wall_s.max(1e-9)
                );
            }
        }
        Ok(0)
    }
}
