//! `eraid`: a userspace software RAID with online scaling, fast rebuild and
//! a stripe cache, served over NBD; and a simulator that runs the same
//! engine on modelled disks.

mod commands;
mod control;
mod export;
mod growth_flags;
mod journal;
mod level_args;
mod locks;
mod member_name;
mod members;
mod output;
mod runtime;
mod size;
mod socket_path;
mod space;
mod tune;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(name = "eraid", version, about = "Userspace software RAID (0/5/6/10) served over NBD, and a simulator running the same engine on modelled disks", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Each verb's help comes from its Args struct's doc comment (first line:
// the summary listed by `eraid --help`; the rest: the verb's explanation).
#[derive(Subcommand, Debug)]
enum Command {
    Create(commands::create::CreateArgs),
    Detail(commands::detail::DetailArgs),
    Serve(commands::serve::ServeArgs),
    Check(commands::check::CheckArgs),
    Grow(commands::grow::GrowArgs),
    Reshape(commands::reshape::ReshapeArgs),
    Add(commands::add::AddArgs),
    Fail(commands::fail::FailArgs),
    Remove(commands::fail::RemoveArgs),
    Replace(commands::replace::ReplaceArgs),
    Rebuild(commands::rebuild::RebuildArgs),
    Demo(commands::demo::DemoArgs),
    Tune(commands::tune::TuneArgs),
    /// Simulate an array of modelled drives replaying a trace or workload.
    Sim(commands::sim::SimArgs),
    /// Run a simulator experiment file (variants side by side, reports, plots).
    Experiment {
        #[command(subcommand)]
        command: commands::experiment::ExperimentCommand,
    },
    /// Cauchy Reed-Solomon tools (the EPU paper's scaling study).
    Crs {
        #[command(subcommand)]
        command: commands::crs::CrsCommand,
    },
    /// Disk-model tools (validate a model against a measured drive).
    Disk {
        #[command(subcommand)]
        command: commands::disk::DiskCommand,
    },
}

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("ERAID_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        // Its default reports a failed write with eprintln!, which panics
        // (in whichever thread runs the array) when stderr is a closed pipe: a log line
        // must never stop the array, so a line that cannot be written is
        // dropped.
        .log_internal_errors(false)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Create(args) => args.run(),
        Command::Detail(args) => args.run(),
        Command::Serve(args) => args.run(),
        Command::Check(args) => args.run(),
        Command::Tune(args) => args.run(),
        Command::Grow(args) => args.run(),
        Command::Reshape(args) => args.run(),
        Command::Add(args) => args.run(),
        Command::Fail(args) => args.run(),
        Command::Remove(args) => args.run(),
        Command::Replace(args) => args.run(),
        Command::Rebuild(args) => args.run(),
        Command::Demo(args) => args.run(),
        Command::Sim(args) => args.run(),
        Command::Experiment { command } => command.run(),
        Command::Crs { command } => command.run(),
        Command::Disk { command } => command.run(),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(error) => {
            output::say!("eraid: error: {error:#}");
            std::process::exit(2);
        }
    }
}
