//! `eraid demo`: the main job on an embedded default. Creates a RAID-5 on
//! sparse files, serves it, writes and verifies data through a real NBD
//! client (nbdcopy), removes a member and shows degraded reads still return
//! the data. Runs the real `eraid` commands as child processes, so what it
//! shows is exactly what an administrator would type.

use anyhow::{bail, Context, Result};
use clap::Args;
use rand::{RngCore, SeedableRng};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Run the demo: RAID-5 on sparse files, NBD, nbdcopy, online growth, a lost member
///
/// Creates a RAID-5 on four sparse files in a temporary directory, serves
/// it over NBD, writes random data with nbdcopy (a real NBD client) and
/// reads it back, stops the server, checks parity, grows the served array
/// to five members online (ALV), reads back and checks again, removes one
/// member and shows that degraded reads still return every byte. Needs nbdcopy
/// (Debian package libnbd-bin; scripts/demo.sh installs it).
#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Keep the demo's files in this directory instead of a temporary one.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Bytes of random data to write and verify.
    #[arg(long, default_value = "48M")]
    data: String,
}

fn eraid() -> Result<PathBuf> {
    std::env::current_exe().context("cannot find the eraid executable")
}

fn step(text: &str) {
    println!("\n==> {text}");
}

fn run(dir: &Path, program: &Path, args: &[&str]) -> Result<String> {
    println!(
        "$ {} {}",
        program.file_name().unwrap_or_default().to_string_lossy(),
        args.join(" ")
    );
    let output = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .with_context(|| format!("cannot run {}", program.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    print!("{stdout}");
    if !output.status.success() {
        bail!(
            "{} {} failed: {}",
            program.display(),
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(stdout)
}

fn nbdcopy(dir: &Path, from: &str, to: &str) -> Result<()> {
    run(dir, Path::new("nbdcopy"), &[from, to]).map(|_| ()).map_err(|e| {
        // The install hint only when nbdcopy is missing, not when it ran
        // and failed (a full disk under the members, say).
        let missing = e
            .chain()
            .filter_map(|cause| cause.downcast_ref::<std::io::Error>())
            .any(|io| io.kind() == std::io::ErrorKind::NotFound);
        if missing {
            e.context(
                "nbdcopy is not installed (install it with the README's demo command, Debian package libnbd-bin)",
            )
        } else {
            e
        }
    })
}

struct Server {
    child: Child,
}

impl Server {
    fn start(dir: &Path, members: &[&str]) -> Result<(Server, String)> {
        Server::start_with(dir, &[], members)
    }

    fn start_with(dir: &Path, options: &[&str], members: &[&str]) -> Result<(Server, String)> {
        let socket = dir.join("eraid.sock");
        let _ = std::fs::remove_file(&socket);
        let mut args = vec!["serve", "--socket", "eraid.sock"];
        args.extend_from_slice(options);
        args.extend_from_slice(members);
        println!("$ eraid {} &", args.join(" "));
        let child = Command::new(eraid()?)
            .args(&args)
            .current_dir(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let mut server = Server { child };
        let started = Instant::now();
        while !socket.exists() {
            if started.elapsed() > Duration::from_secs(20) {
                bail!("the server did not start listening within 20 s");
            }
            if let Some(status) = server.child.try_wait()? {
                bail!("the server exited early: {status}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok((server, format!("nbd+unix:///?socket={}", socket.display())))
    }

    fn stop(mut self) -> Result<()> {
        println!("$ kill -TERM <server>");
        // SAFETY: sending a signal to our own child process.
        unsafe { libc_kill(self.child.id() as i32, 15) };
        let status = self.child.wait()?;
        if !status.success() {
            bail!("the server exited with {status}");
        }
        Ok(())
    }
}

/// A demo that fails half-way must not leave its server running (holding
/// the deleted member files): stop it, by SIGKILL after 10 s.
impl Drop for Server {
    fn drop(&mut self) {
        if !matches!(self.child.try_wait(), Ok(None)) {
            return;
        }
        // SAFETY: sending a signal to our own child process.
        unsafe { libc_kill(self.child.id() as i32, 15) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while matches!(self.child.try_wait(), Ok(None)) {
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, signal: i32) -> i32;
}

fn same_prefix(a: &Path, b: &Path, len: usize) -> Result<bool> {
    let x = std::fs::read(a)?;
    let y = std::fs::read(b)?;
    Ok(x.len() >= len && y.len() >= len && x[..len] == y[..len])
}

impl DemoArgs {
    pub fn run(self) -> Result<i32> {
        let data_bytes =
            crate::size::parse_size_bytes(&self.data).map_err(anyhow::Error::msg)? as usize;
        let temp;
        let dir = match &self.dir {
            Some(d) => {
                std::fs::create_dir_all(d)?;
                d.clone()
            }
            None => {
                temp = tempfile::tempdir()?;
                temp.path().to_path_buf()
            }
        };
        let e = eraid()?;
        println!("eraid demo in {}", dir.display());
        step("Create a RAID-5 (left-symmetric, 64 KiB chunks) on four sparse 128 MiB files");
        run(
            &dir,
            &e,
            &[
                "create", "--level", "5", "--chunk", "64K", "--size", "128M", "d0", "d1", "d2",
                "d3",
            ],
        )?;
        run(&dir, &e, &["detail", "d0", "d1", "d2", "d3"])?;

        step("Serve it over NBD and write random data with nbdcopy (a real NBD client)");
        let mut data = vec![0u8; data_bytes];
        rand::rngs::StdRng::seed_from_u64(2026).fill_bytes(&mut data);
        std::fs::write(dir.join("data.bin"), &data)?;
        let (server, uri) = Server::start(&dir, &["d0", "d1", "d2", "d3"])?;
        nbdcopy(&dir, "data.bin", &uri)?;
        nbdcopy(&dir, &uri, "readback.bin")?;
        let ok = same_prefix(&dir.join("data.bin"), &dir.join("readback.bin"), data_bytes)?;
        println!(
            "read back {} MiB through NBD: {}",
            data_bytes >> 20,
            if ok { "identical" } else { "DIFFERENT" }
        );
        if !ok {
            bail!("data read back differs from what was written");
        }
        server.stop()?;

        step("Stopped with SIGTERM: members are marked clean; parity verifies");
        run(&dir, &e, &["detail", "d0", "d1", "d2", "d3"])?;
        run(&dir, &e, &["check", "d0", "d1", "d2", "d3"])?;

        step(
            "Grow it online to five members (ALV) while served; the data stays in place for users",
        );
        std::fs::File::create(dir.join("d4"))?.set_len(128 << 20)?;
        let (server, uri) =
            Server::start_with(&dir, &["--control", "ctl.sock"], &["d0", "d1", "d2", "d3"])?;
        run(
            &dir,
            &e,
            &[
                "grow",
                "--add",
                "d4",
                "--strategy",
                "alv",
                "--control",
                "ctl.sock",
            ],
        )?;
        nbdcopy(&dir, &uri, "grown.bin")?;
        let ok = same_prefix(&dir.join("data.bin"), &dir.join("grown.bin"), data_bytes)?;
        println!(
            "read back {} MiB after the growth: {}",
            data_bytes >> 20,
            if ok { "identical" } else { "DIFFERENT" }
        );
        server.stop()?;
        if !ok {
            bail!("data read back after the growth differs from what was written");
        }
        run(&dir, &e, &["detail", "d0", "d1", "d2", "d3", "d4"])?;
        run(&dir, &e, &["check", "d0", "d1", "d2", "d3", "d4"])?;

        step("Member d2 is lost: serve the four survivors and read everything back");
        std::fs::rename(dir.join("d2"), dir.join("d2.removed"))?;
        let (server, uri) = Server::start(&dir, &["d0", "d1", "d3", "d4"])?;
        nbdcopy(&dir, &uri, "degraded.bin")?;
        let ok = same_prefix(&dir.join("data.bin"), &dir.join("degraded.bin"), data_bytes)?;
        println!(
            "degraded read of {} MiB (d2's chunks rebuilt from parity on the fly): {}",
            data_bytes >> 20,
            if ok { "identical" } else { "DIFFERENT" }
        );
        server.stop()?;
        run(&dir, &e, &["detail", "d0", "d1", "d3", "d4"])?;
        if !ok {
            bail!("degraded read differs from what was written");
        }
        step("Done");
        println!(
            "eraid created a RAID-5, served it over NBD, stored and verified {} MiB with nbdcopy, \
             checked parity (0 mismatches), grew it online from four members to five, lost a \
             member and still returned every byte.",
            data_bytes >> 20
        );
        Ok(0)
    }
}
