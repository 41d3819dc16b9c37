//! Replays a DiskSim validation trace on a DiskSim drive model and prints the
//! demerit figure and mean service times.
//!
//! Usage: eraid-disk-validate --model PATH --trace PATH [--json]
//! PATH for the model is a `.diskspecs` file or a folder holding one.

use std::path::PathBuf;
use std::process::ExitCode;

use eraid_sim::disk::validate::{parse_validate_trace, replay};
use eraid_sim::disk::DiskModel;
use eraid_sim::diskspec::load_diskspecs_path;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("eraid-disk-validate: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let mut model = None;
    let mut trace = None;
    let mut json = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--model" => model = args.next().map(PathBuf::from),
            "--trace" => trace = args.next().map(PathBuf::from),
            "--json" => json = true,
            "-h" | "--help" => {
                println!("usage: eraid-disk-validate --model PATH --trace PATH [--json]");
                return Ok(());
            }
            other => return Err(format!("unknown argument '{other}'")),
        }
    }
    let model_path = model.ok_or("--model PATH is required")?;
    let trace_path = trace.ok_or("--trace PATH is required")?;
    let spec = load_diskspecs_path(&model_path).map_err(|e| e.to_string())?;
    let text = std::fs::read_to_string(&trace_path)
        .map_err(|e| format!("{}: {e}", trace_path.display()))?;
    let records = parse_validate_trace(&trace_path.display().to_string(), &text)
        .map_err(|e| e.to_string())?;
    let mut disk = DiskModel::new(spec).map_err(|e| e.to_string())?;
    let r = replay(&mut disk, &records).map_err(|e| e.to_string())?;
    if json {
        println!(
            "{{\"demerit_ms\": {:.6}, \"mean_service_ms_measured\": {:.6}, \"mean_service_ms_simulated\": {:.6}, \"requests\": {}}}",
            r.demerit_ms, r.mean_service_ms_measured, r.mean_service_ms_simulated, r.requests
        );
    } else {
        println!("requests                  {}", r.requests);
        println!(
            "demerit                   {:.3} ms (DiskSim 4.0: 0.107 ms)",
            r.demerit_ms
        );
        println!(
            "mean service, measured    {:.3} ms",
            r.mean_service_ms_measured
        );
        println!(
            "mean service, simulated   {:.3} ms",
            r.mean_service_ms_simulated
        );
    }
    Ok(())
}
