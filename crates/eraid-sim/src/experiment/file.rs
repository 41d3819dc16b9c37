//! The experiment file format (TOML). Every table rejects unknown keys, so
//! a misspelt setting is an error naming the file, line and key rather than
//! a silently ignored default.
//!
//! ```toml
//! name = "raid-levels"          # required
//! description = "..."
//! seed = 7                      # default 1
//!
//! [array]                       # what is simulated
//! level = 5                     # 0, 5, 6, 10 or "disk" (one bare drive)
//! disks = 4
//! chunk = "64K"
//! layout = "left-symmetric"     # default: the level's
//! member_size = "4G"            # use only this much of each drive
//!
//! [disk]
//! model = "cheetah-15k5"        # preset, or .diskspecs file/folder (relative to this file)
//! scheduler = "sptf"            # fcfs | clook | sptf
//! queue_depth = 32
//! write_cache = "off"           # off | sequential | always
//! read_ahead = "segment"        # none | track | cylinder | segment | next-track
//! cache = true
//! merge = "512K"                # host block layer merges contiguous I/Os issued together ("off": default)
//! max_request = "512K"          # host block layer splits larger I/Os into requests of at most this (Linux's max_sectors; default: none)
//! host_scheduler = "cfq"        # host I/O scheduler: noop (default) | cfq (time slices between user and background I/O, as Linux 2.6's CFQ)
//! destage = "background"        # write-back data to the media: queued (default: with the host's commands, in the drive's order) | background (after the host's commands while the buffer has room)
//!
//! [engine]                      # eraid_core::ArrayOptions
//! bitmap_clean_delay_ms = 5000
//! scrub_window_stripes = 16
//! resync_on_open = true
//!
//! [cache]                       # the write-back stripe cache (RAID-5/6); NVRAM modelled as the MSC-CT paper's NVS
//! policy = "msc-ct"             # none (default) | pbgc | sc | msc-ct
//! size_bytes = "512M"
//! allocation = "block"          # block: only cached blocks take memory | unit: a unit takes its whole size (MD's stripe_head, the MSC driver's stripe)
//! high_mark_percent = 95        # destage from this occupancy ...
//! low_mark_percent = 85         # ... down to below this one
//! s_r_max = 8                   # contiguity transform: strides (blocks) below these are joined;
//! s_w_max = 8                   #   msc-ct without them: measured by the stride benchmark on the drive model
//! destage_window_units = 64     # destages in flight at once
//!
//! [workload]                    # exactly one of trace, preset, spec, stride
//! trace = "../data/traces/wsrch-small.trace" # relative to this file
//! format = "mqsim"              # default: detected
//! time_scale = 1.0
//! rebase_time = true            # default true
//! devices = [0, 1]              # default: every device, all on the one array
//! # preset = "financial1"       # or spec = "workload.toml"
//! # outstanding = 8             # closed loop for preset/spec
//! # host_queue_depth = 1        # open loop: the host keeps at most this many requests in the array, the rest wait in arrival order (a replay tool on glibc's POSIX AIO: 1 per file; default 512, the block layer's bound)
//! # stride = { op = "write", block = "4K", stride_blocks = 1, span_blocks = 8192, outstanding = 32 }
//! #   (mean_stride_blocks = 10: strides drawn exponentially, capped at stride_blocks)
//! # none = true                 # no user load (growth experiments)
//!
//! [run]
//! max_requests = 20000
//! window_requests = 200         # or window_ms = 1000
//! data_mode = "discard"         # or "store"
//! until = "growth-done"         # default "workload-done"; see [growth]; "rebuild-done": see [failure]
//! max_time_s = 20000            # stop at this simulated time regardless
//! final_flush = true            # then one flush, timed: flushed_throughput_mb_per_s
//!
//! [growth]                      # optional: add disks while the array runs
//! add = 1                       # disks to add; [1, 1] = two growths in a row
//! strategy = "alv"              # RAID-5: alv | md-reshape; RAID-0: fastscale | round-robin | semi-rr
//! start_s = 0.0                 # simulated time of the first growth
//! load = "during"               # or "after": replay the workload on the grown array
//! aggregation = "1M"            # largest redistribution I/O per member
//! md_page = "4K"                # md-reshape: its stripe-cache page
//! md_window = "3M"              # md-reshape: array data moved at once (its stripe cache)
//! md_checkpoint = "3000K"       # md-reshape: copied per member between position records (Linux 2.6.18)
//! md_users_wait = "window"      # md-reshape: who waits while a window moves: window (everyone, MD's default cache) | reads (everyone while it reads: a 512-page cache) | touching (only its users)
//! sliding_window_max = "256M"   # lazy strategies: most copied-not-checkpointed data
//! speed_min = "1M"              # rate floor per second (a bare number is KiB/s, as MD's sync_speed_min)
//! speed_max = "200M"            # rate ceiling per second
//! valve_period_ms = 1000        # alv: valve period
//! latency_bound_ms = 15         # alv: latency bound B
//! slack = 0.1                   # alv: slack factor theta
//! valve_latency = "response"    # alv: what the valve times: response (arrival to completion; held requests also congest) | admission (only the time the growth held the request back) | processing (arrival to completion; congested when 256 user requests are in the array)
//! idle_check_ms = 500           # md-style throttling: how long the growth yields to users
//! idle_user = "2M"              # md-style throttling: user data on one member that makes the array busy (Linux 2.6.18: 2M; 0: any user I/O within idle_check_ms)
//! idle_in_flight = false        # md-style throttling: 2.6.18's in-flight term (users counted at completion, less MD's own I/O in flight; also judged while a window's reads are out)
//! sample_ms = 1000              # period of the progress samples (growth.csv)
//! io_rate_max = 1500            # scale-crs, epu: the EPU paper's budget, blocks of 4 KiB per second (default: none)
//! crs_matrix = "jerasure"       # scale-crs, epu: the coding matrix after the growth: jerasure (default; the EPU paper's Table I) | optimized (Scale-CRS's, Table II)
//! overlap_buffer = "16M"        # epu: I/O overlap, blocks user reads brought in kept for the scaling (default 16M; 0: off)
//! enabled = true                # a variant may set false: no growth
//!
//! [failure]                   # optional: a member fails while the array runs
//! member = 1                    # the member slot that fails (0-based)
//! at_s = 10.0                   # simulated time of the failure (default 0)
//! spare = true                  # a hot spare takes its place and is rebuilt (default true)
//! strategy = "pro"              # pr | dor | pro | pro-dor (default: the engine's, pro)
//! speed_min = "10M"             # rebuild rate floor per second (a bare number is KiB/s, as MD's sync_speed_min)
//! speed_max = "30M"             # rebuild rate ceiling per second
//! idle_check_ms = 500           # MD's idle rule: above the floor, yield this long after a user request
//! window_stripes = 16           # stripes rebuilt at once
//! hot_zone = "64M"              # pro, pro-dor: bytes of each replacement in one hot zone
//! time_slice_ms = 100           # pro, pro-dor: the most popular zone's turn
//! popularity_half_life_ms = 10000 # pro, pro-dor: a zone's access count halves this often
//! dor_reads_ahead = 4           # dor, pro-dor: units each surviving disk reads ahead
//! redirect_reads = true         # users read rebuilt units from the replacement, for reads and writes' parity (false: MD 2.6.11's PR, never until done)
//! sample_ms = 1000              # period of the rebuild samples (rebuild.csv)
//! enabled = true                # a variant may set false: no failure
//!
//! [outputs]
//! plots = true
//!
//! [[variant]]                   # each may override any table above
//! name = "raid0"
//! group = "wsrch"               # optional: compared within its group (no [sweep] then)
//! array.level = 0
//!
//! [sweep]                       # optional: every variant at every value
//! field = "workload.stride.stride_blocks"
//! values = [1, 2, 4]            # or from = 1, to = 64 (integers)
//! labels = ["a", "b", "c"]      # optional names for the values
//! name = "{variant}-stride-{value}"
//! normalize = { metric = "turnaround_ms", at = 1, output = "normalized_turnaround" }
//! ```

use serde::{Deserialize, Serialize};

/// A whole number or a text (levels, sizes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum IntOrText {
    Int(u64),
    Text(String),
}

impl std::fmt::Display for IntOrText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IntOrText::Int(n) => write!(f, "{n}"),
            IntOrText::Text(t) => f.write_str(t),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArrayTable {
    pub level: Option<IntOrText>,
    pub disks: Option<usize>,
    pub chunk: Option<IntOrText>,
    pub layout: Option<String>,
    pub member_size: Option<IntOrText>,
    /// CRS (`level = "crs"`): parity members (m) and packets per chunk (w;
    /// default the smallest with k + m <= 2^w, as Jerasure).
    pub parity: Option<usize>,
    pub w: Option<usize>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiskTable {
    pub model: Option<String>,
    pub scheduler: Option<String>,
    pub queue_depth: Option<usize>,
    pub write_cache: Option<String>,
    pub read_ahead: Option<String>,
    pub cache: Option<bool>,
    /// Host block layer merging: the largest merged command ("512K").
    pub merge: Option<IntOrText>,
    /// Host block layer: the largest request; larger I/Os are split.
    pub max_request: Option<IntOrText>,
    /// The host's I/O scheduler: "noop" (default) or "cfq".
    pub host_scheduler: Option<String>,
    /// When write-back data goes to the media: "queued" (default) or
    /// "background" (after the host's commands while the buffer has room).
    pub destage: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheTable {
    pub policy: Option<String>,
    pub size_bytes: Option<IntOrText>,
    pub allocation: Option<String>,
    pub high_mark_percent: Option<u32>,
    pub low_mark_percent: Option<u32>,
    pub s_r_max: Option<u32>,
    pub s_w_max: Option<u32>,
    pub destage_window_units: Option<usize>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineTable {
    pub bitmap_clean_delay_ms: Option<u64>,
    pub scrub_window_stripes: Option<usize>,
    pub resync_on_open: Option<bool>,
    /// Keep a write-intent bitmap (default true; MD 2.6.18 ran without).
    pub write_intent_bitmap: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StrideTable {
    /// "read" or "write".
    pub op: Option<String>,
    pub block: Option<IntOrText>,
    pub stride_blocks: Option<u64>,
    pub span_blocks: Option<u64>,
    pub start: Option<IntOrText>,
    pub outstanding: Option<u32>,
    /// Exponentially distributed strides of this mean; `stride_blocks`
    /// then caps them.
    pub mean_stride_blocks: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadTable {
    pub trace: Option<String>,
    pub format: Option<String>,
    pub time_scale: Option<f64>,
    pub rebase_time: Option<bool>,
    pub devices: Option<Vec<u32>>,
    pub preset: Option<String>,
    pub spec: Option<String>,
    pub outstanding: Option<u32>,
    /// Open loop: most requests the host keeps in the array at once.
    pub host_queue_depth: Option<u32>,
    pub stride: Option<StrideTable>,
    /// No user requests at all (an unloaded growth).
    pub none: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunTable {
    pub max_requests: Option<u64>,
    pub window_requests: Option<u64>,
    pub window_ms: Option<u64>,
    pub data_mode: Option<String>,
    /// "workload-done" (default) or "growth-done".
    pub until: Option<String>,
    /// Stop at this simulated time even with work left.
    pub max_time_s: Option<f64>,
    /// After the workload, one flush; `flushed_throughput_mb_per_s` counts
    /// up to its answer.
    pub final_flush: Option<bool>,
}

/// One number of disks, or a list of successive additions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AddTable {
    One(i64),
    Many(Vec<i64>),
}

/// `[growth]`: disks added online (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrowthTable {
    pub enabled: Option<bool>,
    pub add: Option<AddTable>,
    pub strategy: Option<String>,
    pub start_s: Option<f64>,
    pub load: Option<String>,
    pub aggregation: Option<IntOrText>,
    pub md_page: Option<IntOrText>,
    pub md_window: Option<IntOrText>,
    pub md_checkpoint: Option<IntOrText>,
    pub md_users_wait: Option<String>,
    pub sliding_window_max: Option<IntOrText>,
    pub speed_min: Option<IntOrText>,
    pub speed_max: Option<IntOrText>,
    pub valve_period_ms: Option<u64>,
    pub latency_bound_ms: Option<f64>,
    pub slack: Option<f64>,
    pub valve_latency: Option<String>,
    pub idle_check_ms: Option<u64>,
    pub idle_user: Option<IntOrText>,
    pub idle_in_flight: Option<bool>,
    pub sample_ms: Option<u64>,
    /// The EPU paper's rate control: device I/O blocks (4 KiB) per second.
    pub io_rate_max: Option<u64>,
    /// scale-crs, epu: the post-scaling coding matrix (jerasure | optimized).
    pub crs_matrix: Option<String>,
    /// epu: the I/O overlap buffer (a size; 0: off).
    pub overlap_buffer: Option<IntOrText>,
}

/// `[failure]`: a member fails while the array runs (see the module docs).
/// `member` is signed so a negative index is reported as such, not as a
/// TOML type error.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailureTable {
    pub enabled: Option<bool>,
    pub member: Option<i64>,
    pub at_s: Option<f64>,
    pub spare: Option<bool>,
    pub strategy: Option<String>,
    pub speed_min: Option<IntOrText>,
    pub speed_max: Option<IntOrText>,
    pub idle_check_ms: Option<u64>,
    pub window_stripes: Option<u64>,
    pub hot_zone: Option<IntOrText>,
    pub time_slice_ms: Option<u64>,
    pub popularity_half_life_ms: Option<u64>,
    pub dor_reads_ahead: Option<u64>,
    pub redirect_reads: Option<bool>,
    pub sample_ms: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputsTable {
    /// Write SVG plots (default true).
    pub plots: Option<bool>,
    /// Points of each response-time CDF kept (default 200).
    pub cdf_points: Option<usize>,
}

/// The settings a variant may override: all of them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub array: Option<ArrayTable>,
    pub disk: Option<DiskTable>,
    pub engine: Option<EngineTable>,
    pub cache: Option<CacheTable>,
    pub workload: Option<WorkloadTable>,
    pub run: Option<RunTable>,
    pub growth: Option<GrowthTable>,
    pub failure: Option<FailureTable>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariantTable {
    pub name: String,
    /// Compare this variant with the others of the same group only (ratios,
    /// plots), like a sweep point; not with a `[sweep]`.
    pub group: Option<String>,
    pub array: Option<ArrayTable>,
    pub disk: Option<DiskTable>,
    pub engine: Option<EngineTable>,
    pub cache: Option<CacheTable>,
    pub workload: Option<WorkloadTable>,
    pub run: Option<RunTable>,
    pub growth: Option<GrowthTable>,
    pub failure: Option<FailureTable>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NormalizeTable {
    /// The metric divided, e.g. "turnaround_ms".
    pub metric: String,
    /// The sweep value whose run is the denominator (of the same variant).
    pub at: toml::Value,
    /// The name of the new metric, e.g. "normalized_turnaround".
    pub output: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepTable {
    /// Dotted path of the setting swept, e.g. "workload.stride.stride_blocks".
    pub field: String,
    pub values: Option<Vec<toml::Value>>,
    pub from: Option<i64>,
    pub to: Option<i64>,
    pub labels: Option<Vec<String>>,
    /// Run names; `{variant}` and `{value}` are replaced.
    pub name: Option<String>,
    pub normalize: Option<NormalizeTable>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentFile {
    pub name: String,
    pub description: Option<String>,
    pub seed: Option<u64>,
    pub array: Option<ArrayTable>,
    pub disk: Option<DiskTable>,
    pub engine: Option<EngineTable>,
    pub cache: Option<CacheTable>,
    pub workload: Option<WorkloadTable>,
    pub run: Option<RunTable>,
    pub growth: Option<GrowthTable>,
    pub failure: Option<FailureTable>,
    pub outputs: Option<OutputsTable>,
    pub variant: Option<Vec<VariantTable>>,
    pub sweep: Option<SweepTable>,
}

/// `over`'s fields where set, else `base`'s.
pub trait Overlay: Sized {
    fn overlay(base: Option<Self>, over: Option<Self>) -> Option<Self>;
}

macro_rules! overlay_fields {
    ($t:ty { $($f:ident),* } nested { $($n:ident),* }) => {
        impl Overlay for $t {
            fn overlay(base: Option<Self>, over: Option<Self>) -> Option<Self> {
                match (base, over) {
                    (None, x) | (x, None) => x,
                    (Some(b), Some(o)) => Some(Self {
                        $($f: o.$f.or(b.$f),)*
                        $($n: Overlay::overlay(b.$n, o.$n),)*
                    }),
                }
            }
        }
    };
}

overlay_fields!(ArrayTable { level, disks, chunk, layout, member_size, parity, w } nested {});
overlay_fields!(DiskTable {
    model, scheduler, queue_depth, write_cache, read_ahead, cache, merge, max_request, host_scheduler,
    destage
} nested {});
overlay_fields!(EngineTable { bitmap_clean_delay_ms, scrub_window_stripes, resync_on_open, write_intent_bitmap } nested {});
overlay_fields!(CacheTable {
    policy, size_bytes, allocation, high_mark_percent, low_mark_percent, s_r_max, s_w_max, destage_window_units
} nested {});
overlay_fields!(StrideTable { op, block, stride_blocks, span_blocks, start, outstanding, mean_stride_blocks } nested {});
overlay_fields!(RunTable { max_requests, window_requests, window_ms, data_mode, until, max_time_s, final_flush } nested {});
overlay_fields!(GrowthTable {
    enabled, add, strategy, start_s, load, aggregation, md_page, md_window, md_checkpoint,
    md_users_wait,
    sliding_window_max,
    speed_min, speed_max, valve_period_ms, latency_bound_ms, slack, valve_latency, idle_check_ms,
    idle_user, idle_in_flight,
    sample_ms, io_rate_max, crs_matrix, overlap_buffer
} nested {});
overlay_fields!(FailureTable {
    enabled, member, at_s, spare, strategy, speed_min, speed_max, idle_check_ms, window_stripes,
    hot_zone, time_slice_ms, popularity_half_life_ms, dor_reads_ahead, redirect_reads, sample_ms
} nested {});

/// As the macro, except that a variant naming a workload source (trace,
/// preset, spec or stride) replaces the base's source instead of adding a
/// second one.
impl Overlay for WorkloadTable {
    fn overlay(base: Option<Self>, over: Option<Self>) -> Option<Self> {
        let (mut b, o) = match (base, over) {
            (None, x) | (x, None) => return x,
            (Some(b), Some(o)) => (b, o),
        };
        let names_source = o.trace.is_some()
            || o.preset.is_some()
            || o.spec.is_some()
            || o.stride.is_some()
            || o.none.is_some();
        if names_source && !(o.stride.is_some() && b.stride.is_some()) {
            b.trace = None;
            b.format = None;
            b.preset = None;
            b.spec = None;
            b.stride = None;
            b.none = None;
        }
        Some(WorkloadTable {
            trace: o.trace.or(b.trace),
            format: o.format.or(b.format),
            time_scale: o.time_scale.or(b.time_scale),
            rebase_time: o.rebase_time.or(b.rebase_time),
            devices: o.devices.or(b.devices),
            preset: o.preset.or(b.preset),
            spec: o.spec.or(b.spec),
            outstanding: o.outstanding.or(b.outstanding),
            host_queue_depth: o.host_queue_depth.or(b.host_queue_depth),
            stride: Overlay::overlay(b.stride, o.stride),
            none: o.none.or(b.none),
        })
    }
}
impl Settings {
    /// The file-level settings with `variant`'s on top.
    pub fn of_variant(file: &ExperimentFile, variant: &VariantTable) -> Settings {
        Settings {
            array: Overlay::overlay(file.array.clone(), variant.array.clone()),
            disk: Overlay::overlay(file.disk.clone(), variant.disk.clone()),
            engine: Overlay::overlay(file.engine.clone(), variant.engine.clone()),
            cache: Overlay::overlay(file.cache.clone(), variant.cache.clone()),
            workload: Overlay::overlay(file.workload.clone(), variant.workload.clone()),
            run: Overlay::overlay(file.run.clone(), variant.run.clone()),
            growth: Overlay::overlay(file.growth.clone(), variant.growth.clone()),
            failure: Overlay::overlay(file.failure.clone(), variant.failure.clone()),
        }
    }
}
