//! Shared helpers for the `eraid` binary's integration tests: running the
//! built binary, a server guard that kills on drop, scratch directories on
//! tmpfs, deterministic random files, file hashing and tool checks.
//!
//! External tools (nbdcopy, nbdinfo, qemu-img, nbdfuse, nbdkit, losetup,
//! mkfs.ext4, ...) are required: a test that misses one fails with a message
//! naming it, unless `ERAID_SKIP_EXTERNAL=1` is set, in which case the test
//! prints why and returns early.

#![allow(dead_code)]

use rand::{RngCore, SeedableRng};
use std::collections::BTreeMap;
use std::fs::File;
use std::hash::Hasher;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub const MIB: u64 = 1 << 20;

/// The `eraid` binary Cargo built for these tests.
pub fn eraid_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_eraid"))
}

pub fn skip_external() -> bool {
    std::env::var("ERAID_SKIP_EXTERNAL").is_ok_and(|v| v == "1")
}

/// Whether `tool` is an executable on PATH (or an absolute path that exists).
pub fn have_tool(tool: &str) -> bool {
    if tool.contains('/') {
        return Path::new(tool).exists();
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    // Also look in the sbin directories: root's tools (losetup, mkfs.ext4)
    // live there and a CI user's PATH may not name them.
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/local/sbin"].map(PathBuf::from))
        .any(|dir| dir.join(tool).is_file())
}

/// Resolves a tool to something `Command` can run even when the sbin
/// directories are not on PATH.
pub fn tool(tool: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/local/sbin"].map(PathBuf::from))
    {
        let candidate = dir.join(tool);
        if candidate.is_file() {
            return candidate;
        }
    }
    PathBuf::from(tool)
}

/// Returns true when every tool is present. When one is missing: panics with
/// a message naming it, or, with ERAID_SKIP_EXTERNAL=1, prints a note and
/// returns false (the caller returns early).
pub fn require_tools(test: &str, tools: &[&str]) -> bool {
    let missing: Vec<&str> = tools.iter().copied().filter(|t| !have_tool(t)).collect();
    if missing.is_empty() {
        return true;
    }
    let message = format!(
        "{test}: required tool(s) not installed: {} (Debian packages: libnbd-bin for nbdcopy/nbdinfo/nbdfuse, \
         nbdkit, qemu-utils for qemu-img/qemu-nbd, fio, e2fsprogs, mount/util-linux, fuse3). \
         Install them (see the README's setup command) or set ERAID_SKIP_EXTERNAL=1 to skip.",
        missing.join(", ")
    );
    if skip_external() {
        eprintln!("SKIPPED (ERAID_SKIP_EXTERNAL=1): {message}");
        false
    } else {
        panic!("{message}");
    }
}

/// Like `require_tools` for a capability (root, /dev/fuse, loop devices).
pub fn require(test: &str, ok: bool, what: &str) -> bool {
    if ok {
        return true;
    }
    let message = format!("{test}: needs {what}; set ERAID_SKIP_EXTERNAL=1 to skip");
    if skip_external() {
        eprintln!("SKIPPED (ERAID_SKIP_EXTERNAL=1): {message}");
        false
    } else {
        panic!("{message}");
    }
}

pub fn is_root() -> bool {
    // /proc/self/status: "Uid:\t<real>\t<effective>..."
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

/// A scratch directory, on tmpfs (/dev/shm) when available for speed.
/// `ERAID_TEST_DIR` overrides the parent directory.
pub fn scratch() -> tempfile::TempDir {
    let parent = std::env::var_os("ERAID_TEST_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            let shm = PathBuf::from("/dev/shm");
            let probe = tempfile::Builder::new()
                .prefix("eraid-probe")
                .tempdir_in(&shm)
                .ok()?;
            drop(probe);
            Some(shm)
        })
        .unwrap_or_else(std::env::temp_dir);
    tempfile::Builder::new()
        .prefix("eraid-test-")
        .tempdir_in(parent)
        .expect("cannot create a scratch directory")
}

/// A scratch directory on the build's disk (the target directory), for
/// tests whose members must be opened with O_DIRECT: members on tmpfs are
/// served from memory, never O_DIRECT.
pub fn scratch_on_disk() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("eraid-test-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("cannot create a scratch directory")
}

/// A finished command's status and output, printable for failure messages.
pub struct Out {
    pub what: String,
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    fn from(what: String, output: Output) -> Out {
        Out {
            what,
            status: output.status,
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    pub fn ok(&self) -> bool {
        self.status.success()
    }

    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// Panics (with everything printed) unless the command succeeded.
    pub fn expect_ok(self) -> Out {
        assert!(self.ok(), "command failed: {self}");
        self
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("output is not JSON ({e}): {self}"))
    }
}

impl std::fmt::Display for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "`{}` -> {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.what, self.status, self.stdout, self.stderr
        )
    }
}

fn describe(program: &Path, args: &[&str]) -> String {
    let mut s = program
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    for a in args {
        s.push(' ');
        s.push_str(a);
    }
    s
}

/// The longest any one command of a test may run: a command that should
/// have exited (a refused `serve` that serves instead) fails the test
/// rather than hanging the whole run.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(600);

/// Runs a program in `dir` and collects its output (killed, and the test
/// failed, after `COMMAND_TIMEOUT`).
pub fn run(dir: &Path, program: impl AsRef<Path>, args: &[&str]) -> Out {
    let program = program.as_ref();
    let mut child = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()));
    // Drain both pipes on threads so a chatty program cannot block on them.
    let mut stdout = child.stdout.take().expect("piped stdout");
    let mut stderr = child.stderr.take().expect("piped stderr");
    let out_thread = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stdout.read_to_end(&mut bytes);
        bytes
    });
    let err_thread = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stderr.read_to_end(&mut bytes);
        bytes
    });
    let status = match wait_timeout(&mut child, COMMAND_TIMEOUT) {
        Some(status) => status,
        None => {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "`{}` did not exit within {} s",
                describe(program, args),
                COMMAND_TIMEOUT.as_secs()
            );
        }
    };
    let output = Output {
        status,
        stdout: out_thread.join().unwrap_or_default(),
        stderr: err_thread.join().unwrap_or_default(),
    };
    Out::from(describe(program, args), output)
}

/// Runs an external tool (resolved through `tool`) in `dir`.
pub fn run_tool(dir: &Path, name: &str, args: &[&str]) -> Out {
    run(dir, tool(name), args)
}

/// Runs `eraid ARGS...` in `dir`.
pub fn eraid(dir: &Path, args: &[&str]) -> Out {
    run(dir, eraid_bin(), args)
}

pub fn nbd_uri(socket: &Path) -> String {
    format!("nbd+unix:///?socket={}", socket.display())
}

extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
}

pub const SIGHUP: i32 = 1;
pub const SIGKILL: i32 = 9;
pub const SIGTERM: i32 = 15;

pub fn signal(child: &Child, sig: i32) {
    // SAFETY: kill(2) on our own child's pid; no memory is shared.
    let rc = unsafe { kill(child.id() as i32, sig) };
    assert_eq!(rc, 0, "kill({}, {sig}) failed", child.id());
}

/// Waits for a child with a deadline; None on timeout.
pub fn wait_timeout(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return Some(status);
        }
        if started.elapsed() > timeout {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

static SERVER_COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A running `eraid serve` on a Unix socket. Killed (SIGKILL) on drop if
/// still running, so a failing test never leaves a server behind.
pub struct Server {
    child: Option<Child>,
    pub socket: PathBuf,
    pub uri: String,
    /// What the server printed on stdout (its URI line).
    pub printed_uri: String,
    pub log: PathBuf,
}

impl Server {
    /// Starts `eraid serve --socket DIR/NAME MEMBERS...` in `dir` and waits
    /// until it listens; panics with the server's log if it does not.
    pub fn start(dir: &Path, members: &[&str]) -> Server {
        Server::try_start(dir, members).unwrap_or_else(|e| panic!("{e}"))
    }

    pub fn try_start(dir: &Path, members: &[&str]) -> Result<Server, String> {
        Server::try_start_with(dir, &[], members)
    }

    /// Like `start`, with more options before the members (e.g. `--control PATH`).
    pub fn start_with(dir: &Path, options: &[&str], members: &[&str]) -> Server {
        Server::try_start_with(dir, options, members).unwrap_or_else(|e| panic!("{e}"))
    }

    pub fn try_start_with(
        dir: &Path,
        options: &[&str],
        members: &[&str],
    ) -> Result<Server, String> {
        Server::spawn(dir, false, options, members)
    }

    /// Like `start_with`, listening on TCP (127.0.0.1, a free port); `uri`
    /// is then the one the server printed.
    pub fn start_tcp(dir: &Path, options: &[&str], members: &[&str]) -> Server {
        Server::spawn(dir, true, options, members).unwrap_or_else(|e| panic!("{e}"))
    }

    fn spawn(dir: &Path, tcp: bool, options: &[&str], members: &[&str]) -> Result<Server, String> {
        let n = SERVER_COUNTER.fetch_add(1, Ordering::SeqCst);
        let socket = dir.join(format!("s{n}.sock"));
        let log = dir.join(format!("serve{n}.log"));
        let _ = std::fs::remove_file(&socket);
        let socket_arg = socket.display().to_string();
        let mut args = if tcp {
            vec!["serve", "--listen", "127.0.0.1:0"]
        } else {
            vec!["serve", "--socket", socket_arg.as_str()]
        };
        args.extend_from_slice(options);
        args.extend_from_slice(members);
        let mut child = Command::new(eraid_bin())
            .args(&args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(File::create(&log).expect("create server log"))
            .spawn()
            .map_err(|e| format!("cannot spawn eraid serve: {e}"))?;
        // The server prints the URI once it listens; read it on a thread so a
        // silent server cannot hang us.
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            if let Some(Ok(line)) = lines.next() {
                let _ = tx.send(line);
            }
            // Keep draining so the server never blocks on a full pipe.
            for _ in lines {}
        });
        let started = Instant::now();
        let mut server = Server {
            child: Some(child),
            socket: socket.clone(),
            uri: nbd_uri(&socket),
            printed_uri: String::new(),
            log,
        };
        loop {
            if let Ok(line) = rx.try_recv() {
                server.printed_uri = line.trim().to_string();
                break;
            }
            if let Some(status) = server.child.as_mut().unwrap().try_wait().unwrap() {
                return Err(format!(
                    "eraid {} exited before listening: {status}\n--- server log ---\n{}",
                    args.join(" "),
                    server.log_text()
                ));
            }
            if started.elapsed() > Duration::from_secs(30) {
                return Err(format!(
                    "eraid {} did not print its URI within 30 s\n--- server log ---\n{}",
                    args.join(" "),
                    server.log_text()
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        if tcp {
            server.uri = server.printed_uri.clone();
            return Ok(server);
        }
        while !socket.exists() {
            if started.elapsed() > Duration::from_secs(30) {
                return Err(format!("socket {} never appeared", socket.display()));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(server)
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("server running").id()
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Whether the server process is still running.
    pub fn running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => c.try_wait().unwrap().is_none(),
            None => false,
        }
    }

    /// SIGTERM, then waits (up to 60 s) and returns the exit status.
    pub fn terminate(&mut self) -> ExitStatus {
        self.terminate_with(SIGTERM)
    }

    /// Sends `sig`, then waits (up to 60 s) and returns the exit status.
    pub fn terminate_with(&mut self, sig: i32) -> ExitStatus {
        let mut child = self.child.take().expect("server running");
        signal(&child, sig);
        match wait_timeout(&mut child, Duration::from_secs(60)) {
            Some(status) => status,
            None => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "the server did not exit within 60 s of signal {sig}\n--- server log ---\n{}",
                    self.log_text()
                );
            }
        }
    }

    /// SIGTERM and assert it exits 0 (finishes, flushes, marks clean).
    pub fn stop(mut self) {
        let status = self.terminate();
        assert!(
            status.success(),
            "eraid serve exited with {status} after SIGTERM (expected 0)\n--- server log ---\n{}",
            self.log_text()
        );
    }

    /// SIGKILL: a crash; nothing is flushed or marked clean.
    pub fn kill9(&mut self) {
        let mut child = self.child.take().expect("server running");
        signal(&child, SIGKILL);
        let _ = child.wait();
    }

    /// Waits until the server log contains `needle` (or panics after `timeout`).
    pub fn wait_for_log(&mut self, needle: &str, timeout: Duration) {
        let started = Instant::now();
        loop {
            if self.log_text().contains(needle) {
                return;
            }
            assert!(
                self.running(),
                "server exited while waiting for '{needle}' in its log\n{}",
                self.log_text()
            );
            assert!(
                started.elapsed() < timeout,
                "'{needle}' did not appear in the server log within {timeout:?}\n--- server log ---\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A deterministic random byte stream (for data files and trees).
pub fn rng(seed: u64) -> rand::rngs::StdRng {
    rand::rngs::StdRng::seed_from_u64(seed)
}

/// Writes `len` deterministic random bytes to `path`.
pub fn write_random(path: &Path, len: u64, seed: u64) {
    let mut rng = rng(seed);
    let mut file = File::create(path).expect("create random file");
    let mut buf = vec![0u8; MIB as usize];
    let mut left = len;
    while left > 0 {
        let n = left.min(buf.len() as u64) as usize;
        rng.fill_bytes(&mut buf[..n]);
        file.write_all(&buf[..n]).expect("write random file");
        left -= n as u64;
    }
}

/// (length, 64-bit hash of the content). Any change of a byte changes it
/// (with overwhelming probability).
pub fn file_hash(path: &Path) -> (u64, u64) {
    let mut file = File::open(path).unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let mut buf = vec![0u8; MIB as usize];
    let mut len = 0u64;
    loop {
        let n = file.read(&mut buf).expect("read for hashing");
        if n == 0 {
            break;
        }
        hasher.write(&buf[..n]);
        len += n as u64;
    }
    (len, hasher.finish())
}

/// Every entry of `dir` (not recursive): name -> (kind/len, content hash).
/// Sockets and other special files are listed by name only, so a stray
/// socket left behind shows up as a difference too.
pub fn snapshot(dir: &Path) -> BTreeMap<String, (u64, u64)> {
    let mut map = BTreeMap::new();
    for entry in std::fs::read_dir(dir).expect("read_dir") {
        let entry = entry.expect("dir entry");
        let name = entry.file_name().to_string_lossy().into_owned();
        let kind = entry.file_type().expect("file type");
        let value = if kind.is_file() {
            file_hash(&entry.path())
        } else {
            (u64::MAX, 0)
        };
        map.insert(name, value);
    }
    map
}

/// Compares `len` bytes of `a` from `a_offset` with `b` from `b_offset`;
/// panics naming the first differing byte.
pub fn assert_same_range(a: &Path, a_offset: u64, b: &Path, b_offset: u64, len: u64, what: &str) {
    use std::io::{Seek, SeekFrom};
    let mut fa = File::open(a).unwrap_or_else(|e| panic!("open {}: {e}", a.display()));
    let mut fb = File::open(b).unwrap_or_else(|e| panic!("open {}: {e}", b.display()));
    let la = fa.metadata().unwrap().len();
    let lb = fb.metadata().unwrap().len();
    assert!(
        la >= a_offset + len && lb >= b_offset + len,
        "{what}: files too short ({} has {la} bytes, {} has {lb}, need {len} from offsets {a_offset}/{b_offset})",
        a.display(),
        b.display()
    );
    fa.seek(SeekFrom::Start(a_offset)).unwrap();
    fb.seek(SeekFrom::Start(b_offset)).unwrap();
    let mut ba = vec![0u8; MIB as usize];
    let mut bb = vec![0u8; MIB as usize];
    let mut done = 0u64;
    while done < len {
        let n = (len - done).min(MIB) as usize;
        fa.read_exact(&mut ba[..n]).unwrap();
        fb.read_exact(&mut bb[..n]).unwrap();
        if ba[..n] != bb[..n] {
            let i = (0..n).find(|&i| ba[i] != bb[i]).unwrap();
            panic!(
                "{what}: {} and {} differ at byte {} of the compared range \
                 ({:#04x} vs {:#04x}; offset {} in the first, {} in the second)",
                a.display(),
                b.display(),
                done + i as u64,
                ba[i],
                bb[i],
                a_offset + done + i as u64,
                b_offset + done + i as u64
            );
        }
        done += n as u64;
    }
}

pub fn assert_same_prefix(a: &Path, b: &Path, len: u64, what: &str) {
    assert_same_range(a, 0, b, 0, len, what);
}

/// Flips (XOR 0xff) `len` bytes of `path` at `offset`.
pub fn flip_bytes(path: &Path, offset: u64, len: usize) {
    use std::os::unix::fs::FileExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    let mut buf = vec![0u8; len];
    file.read_exact_at(&mut buf, offset).unwrap();
    for b in &mut buf {
        *b ^= 0xff;
    }
    file.write_all_at(&buf, offset).unwrap();
}

/// Sum of allocated bytes of the given files (st_blocks * 512): grows as
/// writes land on sparse members.
pub fn allocated_bytes(paths: &[PathBuf]) -> u64 {
    use std::os::unix::fs::MetadataExt;
    paths
        .iter()
        .map(|p| std::fs::metadata(p).map(|m| m.blocks() * 512).unwrap_or(0))
        .sum()
}

/// `eraid detail --json MEMBERS...` parsed; panics on failure.
pub fn detail_json(dir: &Path, members: &[&str]) -> serde_json::Value {
    let mut args = vec!["detail", "--json"];
    args.extend_from_slice(members);
    eraid(dir, &args).expect_ok().json()
}

/// Names d0..d{n-1}.
pub fn member_names(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("d{i}")).collect()
}

pub fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(|s| s.as_str()).collect()
}

/// Runs `eraid ARGS` in `dir`, expects a failure whose stderr contains each
/// of `names` (case-insensitive), and that nothing in `dir` changed.
#[track_caller]
pub fn rejected(dir: &Path, args: &[&str], names: &[&str]) -> Out {
    let before = snapshot(dir);
    let out = eraid(dir, args);
    let after = snapshot(dir);
    assert!(!out.ok(), "expected a failure: {out}");
    assert!(
        out.code().is_some(),
        "eraid must exit with an error code, not die from a signal: {out}"
    );
    let stderr = out.stderr.to_lowercase();
    for name in names {
        assert!(
            stderr.contains(&name.to_lowercase()),
            "the error should name {name:?}: {out}"
        );
    }
    assert!(
        !stderr.contains("panicked"),
        "eraid panicked instead of reporting an error: {out}"
    );
    assert_eq!(
        before,
        after,
        "`eraid {}` failed but changed the directory (files: name -> (len, hash)): {out}",
        args.join(" ")
    );
    out
}

pub fn create(dir: &Path, args: &[&str]) {
    let mut a = vec!["create"];
    a.extend_from_slice(args);
    eraid(dir, &a).expect_ok();
}

pub fn blank(dir: &Path, name: &str, len: u64) {
    std::fs::File::create(dir.join(name))
        .unwrap()
        .set_len(len)
        .unwrap();
}

/// The running server's status through its control socket.
pub fn live(dir: &Path, control: &str) -> serde_json::Value {
    eraid(dir, &["detail", "--json", "--control", control])
        .expect_ok()
        .json()
}

/// `eraid check` through the control socket `ctl.sock` exits 0 and finds
/// 0 mismatches.
pub fn assert_check_clean(test: &str, dir: &Path) {
    let check = eraid(dir, &["check", "--control", "ctl.sock"]);
    assert_eq!(check.code(), Some(0), "{test}: {check}");
    assert!(check.stdout.contains("0 mismatches"), "{test}: {check}");
}

/// `eraid rebuild wait` through `ctl.sock` exits 0 (else the assertion
/// shows the server's log); returns its output.
pub fn rebuild_wait_ok(test: &str, dir: &Path, server: &Server) -> Out {
    let wait = eraid(dir, &["rebuild", "wait", "--control", "ctl.sock"]);
    assert_eq!(
        wait.code(),
        Some(0),
        "{test}: {wait}\n{}",
        server.log_text()
    );
    wait
}

/// Polls the live status until the growth is done.
pub fn wait_done(test: &str, dir: &Path, control: &str, server: &mut Server) -> serde_json::Value {
    let started = Instant::now();
    loop {
        let status = live(dir, control);
        match status["reshape"]["state"].as_str() {
            Some("done") => return status,
            Some("running") => {}
            other => panic!(
                "{test}: growth state {other:?}: {status:#}\n{}",
                server.log_text()
            ),
        }
        assert!(
            server.running(),
            "{test}: the server exited during the growth\n{}",
            server.log_text()
        );
        assert!(
            started.elapsed() < Duration::from_secs(150),
            "{test}: the growth did not finish within 150 s: {status:#}\n{}",
            server.log_text()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The metadata area (superblocks and bitmaps) of each member.
pub fn metadata_areas(dir: &Path, members: &[&str]) -> Vec<Vec<u8>> {
    use std::io::Read;
    members
        .iter()
        .map(|m| {
            let mut area = vec![0u8; MIB as usize];
            std::fs::File::open(dir.join(m))
                .unwrap()
                .read_exact(&mut area)
                .unwrap();
            area
        })
        .collect()
}

/// fio's randwrite job `name` over `uri` (4 KiB blocks with crc32c verify
/// headers, 30 s at most over 32 MiB); `verify_only` reads back and checks
/// what the saved state (`local-NAME-0-verify.state` in the working
/// directory) says the first run wrote.
pub fn fio_verify_job(name: &str, uri: &str, iodepth: u32, verify_only: bool) -> Vec<String> {
    let mut args: Vec<String> = vec![
        format!("--name={name}"),
        "--ioengine=nbd".into(),
        "--rw=randwrite".into(),
        "--bs=4k".into(),
        format!("--iodepth={iodepth}"),
        "--size=32M".into(),
        "--verify=crc32c".into(),
        "--randrepeat=1".into(),
        "--time_based=1".into(),
        "--runtime=30".into(),
        format!("--uri={uri}"),
    ];
    if verify_only {
        args.extend(["--verify_only".into(), "--verify_state_load=1".into()]);
    } else {
        args.extend(["--do_verify=0".into(), "--verify_state_save=1".into()]);
    }
    args
}

/// Writes `data.bin` (in `dir`) to the array at `uri` `passes` times over
/// (the same bytes each time, flushed), so a writer is surely still
/// running while a failure, copy or growth happens.
pub fn spawn_repeated_writer(dir: &Path, uri: &str, passes: u32) -> Child {
    let nbdcopy = tool("nbdcopy");
    Command::new("sh")
        .arg("-c")
        .arg(format!(
            "for pass in $(seq {passes}); do '{}' --flush data.bin '{uri}' || exit 1; done",
            nbdcopy.display()
        ))
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn nbdcopy")
}

/// Each member's file name and state from a `detail --json` status.
pub fn member_names_and_states(status: &serde_json::Value) -> Vec<(String, String)> {
    status["members"]
        .as_array()
        .expect("members")
        .iter()
        .map(|m| {
            let path = m["path"].as_str().unwrap_or("");
            let name = Path::new(path)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            (name, m["state"].as_str().unwrap_or("").to_string())
        })
        .collect()
}
