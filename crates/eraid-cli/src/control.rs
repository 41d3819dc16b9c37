//! The control socket of `eraid serve --control PATH`, and its client (used
//! by `eraid grow|detail|check --control PATH`).
//!
//! # Protocol
//!
//! A Unix stream socket. The client writes one JSON object per line; the
//! server answers each with one JSON object on one line, in order, and the
//! connection stays open for more requests.
//!
//! Requests:
//!
//! - `{"command": "status"}`: the running array's status.
//! - `{"command": "grow", "add": ["/abs/path", ...], "config": {...}}`:
//!   adds the files (absolute paths: the server resolves relative ones
//!   against its own working directory) and starts a growth. `config` is a
//!   `ReshapeConfig` (`strategy`, `aggregation_bytes`, `speed_min_kib_s`,
//!   `speed_max_kib_s`, `latency_bound_ms`, `slack`, ...; missing fields
//!   take their defaults). Each file is checked first: it exists, is large
//!   enough, carries no eraid superblock, is not already a member and no
//!   other process holds it; any failure changes nothing. The answer's
//!   status carries `warnings` (texts), e.g. sparse members that could
//!   outgrow the free space of their filesystem.
//! - `{"command": "check", "repair": false}`: starts a parity / mirror check
//!   (progress and result in the status's `activity`).
//! - `{"command": "pause-grow"}`, `{"command": "resume-grow"}`: pause the
//!   growth (it stays paused across restarts) or let it go on.
//! - `{"command": "tune-grow", "settings": {"speed_max_kib_s": 20000}}`:
//!   change the growth's `speed_min_kib_s`, `speed_max_kib_s`,
//!   `latency_bound_ms`, `slack` or `valve_latency` (`"response"`,
//!   `"processing"`, `"admission"`).
//! - `{"command": "add", "path": "/abs/path", "spare": false, "strategy": "pro"}`
//!   (strategy optional: pr, dor, pro or pro-dor, for the rebuild): adds the
//!   file (checked as for grow) as a replacement of a failed member, which
//!   is rebuilt at once, or with `"spare": true` as a hot spare. A failed
//!   member the server still holds goes back into its slot (re-added from
//!   the bitmap, or rebuilt in full); the answer then has `added_back`
//!   (`slot`, `kind`).
//! - `{"command": "fail", "member": "/abs/path"}`: fails a member (a spare
//!   takes over if there is one); refused if the array would lose data.
//! - `{"command": "remove", "member": "/abs/path"}`: forgets a failed
//!   member or drops a spare (a replace's new member: the replace stops);
//!   the server lets go of its file.
//! - `{"command": "replace", "member": "/abs/path", "with": "/abs/new"}`:
//!   copies the member onto the new file (checked as for add) while it
//!   keeps serving (MD's `--replace`); when done the new file takes its
//!   slot and the old member is retired (`rebuild.kind` is `replace`).
//! - `{"command": "pause-rebuild"}`, `{"command": "resume-rebuild"}`,
//!   `{"command": "tune-rebuild", "settings": {"strategy": "pro-dor",
//!   "speed_min_kib_s": 1000, "speed_max_kib_s": 20000, "hot_zone_bytes": ...,
//!   "time_slice_ms": ..., "popularity_half_life_ms": ...}}` (any of them):
//!   act on the rebuild (a strategy changed mid-rebuild keeps what is rebuilt).
//!
//! A member is named by the path it is served from, or, for one not given
//! at the start, by the path its superblock remembers (`path` in the
//! status).
//!
//! Answers: `{"ok": true, "status": {...}}` with the status after the
//! command, or `{"ok": false, "error": "what was wrong"}`.
//!
//! The status object is the engine's: `phase`, `level`, `layout`,
//! `chunk_bytes`, `member_count`, `capacity_bytes` (what users can address:
//! the old capacity until a growth is done), `members[{index, uuid, path,
//! state}]`, `activity` (check or resync), and `reshape`: null or
//! `{strategy, state: running|paused|done, pause_reason, held (paused by
//! the operator), progress (0..1),
//! old_member_count, new_member_count, processed_bytes, total_bytes,
//! checkpoint_bytes, moved_bytes, metadata_writes, redistribution_reads,
//! redistribution_writes, backup_windows, pending_backup (a window a crash
//! interrupted, rewritten from its backup first), rate_bytes_s, elapsed_s,
//! blocked_requests, config}`, and `rebuild`: null or `{strategy (pr, dor,
//! pro, pro-dor),
//! state: running|paused|done|stopped, reason, progress, rebuilt_bytes,
//! checkpoint_bytes (recorded, survives a crash), total_bytes,
//! rate_bytes_per_s, eta_s, target {slot, path}, targets, config}`. The
//! members list has the spares after the member slots (`state` active,
//! rebuilding, faulty, missing, spare or missing-spare; `device`). The
//! server adds `engine_lock`: `{acquisitions, sampled_acquisitions, held_s,
//! waited_s, uptime_s, held_fraction}`, how much of the time since it
//! started the core's lock was held and waited for (estimated from a
//! random eighth of the acquisitions; the difference of two answers'
//! `held_s` over that of their `uptime_s` is the share over a window).
//!
//! Try it by hand: `echo '{"command":"status"}' | socat - UNIX-CONNECT:ctl.sock`.

use crate::members::{check_added_members, MemberLocks};
use crate::output::say;
use anyhow::{bail, Context, Result};
use eraid_core::growth::config::ReshapeConfig;
use eraid_core::io::AdminCommand;
use eraid_driver::{EngineHandle, GrowError, MemberChangeError};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Longest request line the server reads (a grow naming many paths fits).
const REQUEST_BYTES_MAX: u64 = 1 << 20;

/// A bound control socket, not yet answering (binding comes before the
/// array starts, so a bad path changes nothing on disk).
pub struct ControlListener {
    listener: UnixListener,
    path: PathBuf,
}

/// What the control server needs of the running array.
pub struct ControlContext {
    pub handle: EngineHandle,
    /// Paths of the devices being served, by device index: the member
    /// slots, the spares, then members added since (growth, replacements,
    /// spares).
    pub members: Mutex<Vec<PathBuf>>,
    /// Bytes each member needs (metadata plus data area).
    pub member_bytes_needed: u64,
    /// Locks held on the served members, added members included.
    pub locks: Mutex<MemberLocks>,
    /// One growth request at a time (the array would refuse the second,
    /// but its files would be opened and locked meanwhile).
    pub grow_lock: Mutex<()>,
    /// Devices served by a stand-in that fails every I/O (slots missing
    /// or stale at the start, spares not given): nothing can be added back
    /// through them.
    pub detached_devices: Vec<usize>,
}

impl ControlListener {
    /// Binds `path`. A stale socket file (nobody answering) is replaced; a
    /// live one, or a path that is not a socket, is refused.
    pub fn bind(path: &Path) -> Result<ControlListener> {
        let path = crate::socket_path::socket_path(path, "--control")?;
        if let Ok(metadata) = std::fs::symlink_metadata(&path) {
            if !metadata.file_type().is_socket() {
                bail!(
                    "control socket {}: the path exists and is not a socket; choose another path",
                    path.display()
                );
            }
            if UnixStream::connect(&path).is_ok() {
                bail!(
                    "control socket {}: another server is listening on it; stop it or choose another path",
                    path.display()
                );
            }
            std::fs::remove_file(&path).with_context(|| {
                format!("cannot remove the stale control socket {}", path.display())
            })?;
        }
        let listener = UnixListener::bind(&path)
            .with_context(|| format!("cannot listen on the control socket {}", path.display()))?;
        listener
            .set_nonblocking(true)
            .context("control socket: cannot make it non-blocking")?;
        Ok(ControlListener { listener, path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Answers clients on a thread until `stop` is set; the socket file is
    /// removed when the thread ends.
    pub fn spawn(
        self,
        context: Arc<ControlContext>,
        stop: Arc<AtomicBool>,
    ) -> Result<JoinHandle<()>> {
        std::thread::Builder::new()
            .name("eraid-control".into())
            .spawn(move || self.accept_loop(&context, &stop))
            .context("cannot start the control thread")
    }

    fn accept_loop(self, context: &Arc<ControlContext>, stop: &AtomicBool) {
        while !stop.load(Ordering::Relaxed) {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    let context = Arc::clone(context);
                    let spawned = std::thread::Builder::new()
                        .name("eraid-control-conn".into())
                        .spawn(move || serve_connection(stream, &context));
                    if let Err(error) = spawned {
                        tracing::warn!("control: cannot start a connection thread: {error}");
                    }
                }
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(error) => {
                    tracing::warn!("control: accept: {error}");
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
    }
}

impl Drop for ControlListener {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn serve_connection(stream: UnixStream, context: &ControlContext) {
    if stream.set_nonblocking(false).is_err() {
        return;
    }
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        match (&mut reader).take(REQUEST_BYTES_MAX).read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if line.trim().is_empty() {
            continue;
        }
        let answer = match serde_json::from_str::<Value>(&line) {
            Ok(request) => answer(&request, context),
            Err(error) => {
                json!({"ok": false, "error": format!("the request is not JSON: {error}")})
            }
        };
        let mut text = answer.to_string();
        text.push('\n');
        if writer.write_all(text.as_bytes()).is_err() {
            return;
        }
    }
}

fn failure(error: impl std::fmt::Display) -> Value {
    json!({"ok": false, "error": error.to_string()})
}

/// Runs an engine command: the status it answers, or its refusal (after
/// `refused`, when given) or why the array could not take it.
fn run_admin(context: &ControlContext, command: AdminCommand, refused: &str) -> Value {
    match context.handle.admin(command) {
        Ok(answer) => match answer.get("error") {
            Some(error) => failure(format!(
                "{refused}{}",
                error.as_str().unwrap_or("unknown reason")
            )),
            None => json!({"ok": true, "status": answer}),
        },
        Err(error) => failure(format!("the array is not running: {error}")),
    }
}

fn answer(request: &Value, context: &ControlContext) -> Value {
    match request.get("command").and_then(Value::as_str) {
        Some("status") => run_admin(context, AdminCommand::Status, ""),
        Some("check") => match request.get("repair") {
            None => run_admin(context, AdminCommand::StartCheck { repair: false }, "cannot check: "),
            Some(Value::Bool(repair)) => run_admin(
                context,
                AdminCommand::StartCheck { repair: *repair },
                "cannot check: ",
            ),
            Some(other) => failure(format!(
                "\"repair\" must be true or false, found {other}; nothing was started"
            )),
        },
        Some("grow") => match grow(request, context) {
            Ok(status) => json!({"ok": true, "status": status}),
            Err(error) => failure(format!("{error:#}")),
        },
        Some("pause-grow") => run_admin(context, AdminCommand::PauseGrow, ""),
        Some("resume-grow") => run_admin(context, AdminCommand::ResumeGrow, ""),
        Some("tune-grow") => match request.get("settings").map(|s| settings_from("settings", s)) {
            Some(Ok(tuning)) => run_admin(context, AdminCommand::TuneGrow(tuning), ""),
            Some(Err(e)) => failure(format!("bad growth settings: {e}")),
            None => failure(
                "tune-grow needs \"settings\" (speed_min_kib_s, speed_max_kib_s, latency_bound_ms, slack, valve_latency)",
            ),
        },
        Some("add") => match add_member(request, context) {
            Ok(status) => json!({"ok": true, "status": status}),
            Err(error) => failure(format!("{error:#}")),
        },
        Some("fail") => match named_member(request, context) {
            Ok(slot) => run_admin(context, AdminCommand::FailMember { slot }, "cannot fail it: "),
            Err(error) => failure(format!("{error:#}")),
        },
        Some("replace") => match replace_member(request, context) {
            Ok(status) => json!({"ok": true, "status": status}),
            Err(error) => failure(format!("{error:#}")),
        },
        Some("remove") => match remove_member(request, context) {
            Ok(status) => json!({"ok": true, "status": status}),
            Err(error) => failure(format!("{error:#}")),
        },
        Some("pause-rebuild") => run_admin(context, AdminCommand::PauseRebuild, ""),
        Some("resume-rebuild") => run_admin(context, AdminCommand::ResumeRebuild, ""),
        Some("tune-rebuild") => match request.get("settings").map(|s| serde_json::from_value(s.clone())) {
            Some(Ok(tuning)) => run_admin(context, AdminCommand::TuneRebuild(tuning), ""),
            Some(Err(e)) => failure(format!("bad rebuild settings: {e}")),
            None => failure(
                "tune-rebuild needs \"settings\" (strategy, speed_min_kib_s, speed_max_kib_s, \
                 hot_zone_bytes, time_slice_ms, popularity_half_life_ms)",
            ),
        },
        Some(other) => failure(format!("unknown command {other:?}: expected {COMMANDS}")),
        None => failure(format!("the request has no \"command\" ({COMMANDS})")),
    }
}

/// Every command the server answers, for messages.
const COMMANDS: &str = "status, grow, check, pause-grow, resume-grow, tune-grow, add, fail, \
                        remove, replace, pause-rebuild, resume-rebuild or tune-rebuild";

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `add`: checks the file, serves it as the next device and adds it.
fn add_member(request: &Value, context: &ControlContext) -> Result<Value> {
    let Some(path) = request.get("path").and_then(Value::as_str) else {
        bail!("add needs \"path\": the file or block device to add");
    };
    let spare = match request.get("spare") {
        None => false,
        Some(Value::Bool(spare)) => *spare,
        Some(other) => bail!("\"spare\" must be true or false, found {other}"),
    };
    // Checked before anything changes; applied once the member is in.
    let strategy = match request.get("strategy") {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) => Some(
            eraid_core::rebuild::config::RebuildStrategy::parse(name)
                .map_err(|e| anyhow::anyhow!("{e}; nothing was added"))?,
        ),
        Some(other) => bail!("\"strategy\" must be a strategy name, found {other}"),
    };
    // One change of the device list at a time (grow uses it too).
    let _one_at_a_time = lock(&context.grow_lock);
    let current = lock(&context.members).clone();
    if let Some(status) = add_back_former_member(path, spare, &current, context)? {
        return Ok(status);
    }
    let added = check_added_members(
        &[PathBuf::from(path)],
        &current,
        context.member_bytes_needed,
    )?;
    let paths = added.paths.clone();
    let (mut members, locks) = added.into_grow_members();
    let member = members.pop().expect("one member checked");
    let mut every_member = current.clone();
    every_member.extend(paths.iter().cloned());
    let warnings = crate::space::shortfall_warnings(&every_member, context.member_bytes_needed);
    let mut status = context
        .handle
        .add_member(member, spare)
        .map_err(|e| match e {
            MemberChangeError::Refused(reason) => {
                anyhow::anyhow!("the array refused {path}: {reason}")
            }
            MemberChangeError::ShuttingDown => anyhow::anyhow!("the array is shutting down"),
        })?;
    lock(&context.locks).extend(locks);
    lock(&context.members).extend(paths);
    if let Some(strategy) = strategy {
        // The rebuild NEW started (or the next one, for a spare) switches
        // to it; what is rebuilt already stays rebuilt.
        let tuning = eraid_core::rebuild::config::RebuildTuning {
            strategy: Some(strategy),
            ..Default::default()
        };
        let answer = context
            .handle
            .admin(AdminCommand::TuneRebuild(tuning))
            .map_err(|e| anyhow::anyhow!("the array is not running: {e}"))?;
        if let Some(error) = answer.get("error") {
            bail!("added {path}, but the strategy was refused: {error}");
        }
        status = answer;
    }
    say!(
        "{} {path}",
        if spare {
            "added the hot spare"
        } else {
            "added the replacement"
        }
    );
    status["warnings"] = json!(warnings);
    Ok(status)
}

/// `replace`: checks the new file, serves it as the next device, and the
/// array copies the member onto it while the member keeps serving.
fn replace_member(request: &Value, context: &ControlContext) -> Result<Value> {
    let Some(with) = request.get("with").and_then(Value::as_str) else {
        bail!("replace needs \"with\": the file or block device to copy the member onto");
    };
    let _one_at_a_time = lock(&context.grow_lock);
    let slot = named_member(request, context)?;
    let current = lock(&context.members).clone();
    let added = check_added_members(
        &[PathBuf::from(with)],
        &current,
        context.member_bytes_needed,
    )?;
    let paths = added.paths.clone();
    let (mut members, locks) = added.into_grow_members();
    let member = members.pop().expect("one member checked");
    let status = context
        .handle
        .replace_member(slot, member)
        .map_err(|e| match e {
            MemberChangeError::Refused(reason) => anyhow::anyhow!("cannot replace it: {reason}"),
            MemberChangeError::ShuttingDown => anyhow::anyhow!("the array is shutting down"),
        })?;
    lock(&context.locks).extend(locks);
    lock(&context.members).extend(paths);
    say!("replacing member {slot} by {with}");
    Ok(status)
}

/// `add` of a failed member the server still holds (failed by the
/// operator, or stale at the start): it goes back into its slot, re-added
/// from the write-intent bitmap when it left without losing a write (MD's
/// `--re-add`), else rebuilt in full. None: `path` is no such member.
fn add_back_former_member(
    path: &str,
    spare: bool,
    devices: &[PathBuf],
    context: &ControlContext,
) -> Result<Option<Value>> {
    use eraid_core::metadata::superblock::Superblock;
    let Some(device) = devices
        .iter()
        .position(|p| crate::members::same_file(p, Path::new(path)))
    else {
        return Ok(None);
    };
    let status = context
        .handle
        .admin(AdminCommand::Status)
        .map_err(|e| anyhow::anyhow!("the array is not running: {e}"))?;
    let members = status["members"].as_array().cloned().unwrap_or_default();
    let Some(slot) = members
        .iter()
        .find(|m| m["device"].as_u64() == Some(device as u64))
        .and_then(|m| m["index"].as_u64())
    else {
        // A file the array no longer uses (a member a spare replaced).
        return Ok(None);
    };
    if context.detached_devices.contains(&device) {
        bail!(
            "{path} is member {slot}, but this server does not serve its file (it was missing \
             or stale when the server started); stop the server and serve again naming every \
             member: a member that left without losing a write is re-added from the bitmap \
             then, a stale one is replaced by a new member (eraid add NEW); nothing changed"
        );
    }
    if spare {
        bail!(
            "{path} is member {slot} of this array; it goes back into its slot, not as a spare \
             (eraid add {path} without --spare)"
        );
    }
    let mut area = vec![0u8; eraid_core::geometry::METADATA_BYTES as usize];
    std::fs::File::open(&devices[device])
        .and_then(|mut file| file.read_exact(&mut area))
        .with_context(|| format!("cannot read the metadata of {path}"))?;
    let copy = Superblock::decode_newest(&area).map_err(|e| {
        anyhow::anyhow!("{path} is member {slot} but its superblock is unusable: {e}")
    })?;
    let answer = context
        .handle
        .admin(AdminCommand::ReAddMember {
            slot: slot as usize,
            copy: Box::new(copy),
        })
        .map_err(|e| anyhow::anyhow!("the array is not running: {e}"))?;
    if let Some(error) = answer.get("error") {
        bail!(
            "the array refused {path}: {}",
            error.as_str().unwrap_or("unknown reason")
        );
    }
    say!(
        "added back {path} as member {slot} ({})",
        answer["rebuild"]["kind"].as_str().unwrap_or("rebuild")
    );
    let mut answer = answer;
    answer["warnings"] = json!([]);
    answer["added_back"] = json!({"slot": slot, "kind": answer["rebuild"]["kind"].clone()});
    Ok(Some(answer))
}

/// The member slot (or `member_count + j` for spare j) a request's
/// `"member"` names: the path it is served from, or the path its
/// superblock remembers.
fn named_member(request: &Value, context: &ControlContext) -> Result<usize> {
    let Some(name) = request.get("member").and_then(Value::as_str) else {
        bail!("the request needs \"member\": the path of the member");
    };
    let status = context
        .handle
        .admin(AdminCommand::Status)
        .map_err(|e| anyhow::anyhow!("the array is not running: {e}"))?;
    let devices = lock(&context.members).clone();
    find_member(&status, &devices, name)
}

/// The member slot (or `member_count + j` for spare j) that `name` is in
/// `status`: the path a member is served from (`devices`, by device
/// index), or the path its superblock remembers.
pub fn find_member(status: &Value, devices: &[PathBuf], name: &str) -> Result<usize> {
    let members = status["members"].as_array().cloned().unwrap_or_default();
    let name_path = Path::new(name);
    let served_from = |m: &Value| {
        m["device"]
            .as_u64()
            .and_then(|d| devices.get(d as usize))
            .is_some_and(|p| crate::members::same_file(p, name_path))
    };
    let remembered = |m: &Value| {
        m["path"]
            .as_str()
            .is_some_and(|p| p == name || crate::members::same_file(Path::new(p), name_path))
    };
    let found = members
        .iter()
        .find(|m| served_from(m))
        .or_else(|| members.iter().find(|m| remembered(m)));
    match found.and_then(|m| m["index"].as_u64()) {
        Some(index) => Ok(index as usize),
        None => {
            let known: Vec<String> = members
                .iter()
                .map(|m| {
                    format!(
                        "{} {} ({})",
                        m["index"],
                        m["path"].as_str().unwrap_or("?"),
                        m["state"].as_str().unwrap_or("?")
                    )
                })
                .collect();
            bail!(
                "{name} is not a member or spare of the array; it has: {}",
                known.join(", ")
            )
        }
    }
}

/// `remove`: the array forgets the member; the server lets go of its file.
fn remove_member(request: &Value, context: &ControlContext) -> Result<Value> {
    let _one_at_a_time = lock(&context.grow_lock);
    let slot = match named_member(request, context) {
        Ok(slot) => slot,
        Err(error) => return release_replaced(request, context).ok_or(error)?,
    };
    let removed = context.handle.remove_member(slot).map_err(|e| match e {
        MemberChangeError::Refused(reason) => anyhow::anyhow!("cannot remove it: {reason}"),
        MemberChangeError::ShuttingDown => anyhow::anyhow!("the array is shutting down"),
    })?;
    if let Some(device) = removed.released_device {
        if let Some(path) = lock(&context.members).get(device).cloned() {
            lock(&context.locks).release(&path);
            say!("removed {}", path.display());
        }
    }
    Ok(removed.status)
}

/// `remove` of a file the server still holds but the array no longer
/// uses (a member a spare or replacement took the place of): its lock is
/// released (the server keeps the file open, unused, until it stops).
fn release_replaced(request: &Value, context: &ControlContext) -> Option<Result<Value>> {
    let name = Path::new(request.get("member")?.as_str()?);
    let status = context.handle.admin(AdminCommand::Status).ok()?;
    let devices = lock(&context.members).clone();
    let device = devices
        .iter()
        .position(|p| crate::members::same_file(p, name))?;
    let used = status["members"]
        .as_array()?
        .iter()
        .any(|m| m["device"].as_u64() == Some(device as u64));
    if used {
        return None;
    }
    lock(&context.locks).release(&devices[device]);
    say!("released {} (replaced, no longer used)", name.display());
    Some(Ok(status))
}

/// Decodes a settings object whose fields all have defaults, naming the
/// field at fault (serde's own message names only the type it expected).
fn settings_from<T: serde::de::DeserializeOwned>(what: &str, value: &Value) -> Result<T, String> {
    let whole_error = match serde_json::from_value::<T>(value.clone()) {
        Ok(settings) => return Ok(settings),
        Err(error) => error,
    };
    let Value::Object(fields) = value else {
        return Err(format!("\"{what}\" must be an object, found {value}"));
    };
    for (name, field) in fields {
        let alone = Value::Object([(name.clone(), field.clone())].into_iter().collect());
        if let Err(error) = serde_json::from_value::<T>(alone) {
            return Err(format!("\"{what}\".\"{name}\": {error}"));
        }
    }
    Err(format!("\"{what}\": {whole_error}"))
}

fn grow(request: &Value, context: &ControlContext) -> Result<Value> {
    let add: Vec<PathBuf> = match request.get("add") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item.as_str() {
                Some(path) => Ok(PathBuf::from(path)),
                None => bail!("\"add\" must list paths (strings), found {item}"),
            })
            .collect::<Result<_>>()?,
        _ => bail!("grow needs \"add\": [paths of the members to add]"),
    };
    let config: ReshapeConfig = match request.get("config") {
        Some(config) => settings_from("config", config)
            .map_err(|e| anyhow::anyhow!("bad growth settings: {e}"))?,
        None => bail!("grow needs \"config\" (at least {{\"strategy\": ...}})"),
    };
    config
        .validate()
        .map_err(|e| anyhow::anyhow!("bad growth settings: {e}"))?;
    let _one_at_a_time = context
        .grow_lock
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let current = context
        .members
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clone();
    let added = check_added_members(&add, &current, context.member_bytes_needed)?;
    let paths = added.paths.clone();
    let every_member: Vec<PathBuf> = current.iter().chain(&paths).cloned().collect();
    let warnings = crate::space::shortfall_warnings(&every_member, context.member_bytes_needed);
    let (members, locks) = added.into_grow_members();
    let strategy = config.strategy.name();
    let mut status = context.handle.grow(members, config).map_err(|e| match e {
        GrowError::Refused(reason) => anyhow::anyhow!("the array refused to grow: {reason}"),
        GrowError::ShuttingDown => anyhow::anyhow!("the array is shutting down"),
    })?;
    context
        .locks
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .extend(locks);
    context
        .members
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .extend(paths.iter().cloned());
    say!(
        "growth started ({strategy}): adding {}",
        paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    status["warnings"] = json!(warnings);
    Ok(status)
}

/// A connection to a server's control socket.
pub struct ControlClient {
    path: PathBuf,
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl ControlClient {
    pub fn connect(path: &Path) -> Result<ControlClient> {
        let stream = UnixStream::connect(path).with_context(|| {
            format!(
                "cannot reach the control socket {} (is `eraid serve --control {}` running?)",
                path.display(),
                path.display()
            )
        })?;
        let writer = stream.try_clone().context("control socket")?;
        Ok(ControlClient {
            path: path.to_path_buf(),
            reader: BufReader::new(stream),
            writer,
        })
    }

    /// Sends one request; returns the status of a successful answer, or
    /// the server's error.
    pub fn call(&mut self, request: &Value) -> Result<Value> {
        let lost = || {
            format!(
                "lost the connection to the server at {}",
                self.path.display()
            )
        };
        let mut text = request.to_string();
        text.push('\n');
        self.writer.write_all(text.as_bytes()).with_context(lost)?;
        let mut line = String::new();
        let read = self.reader.read_line(&mut line).with_context(lost)?;
        if read == 0 {
            bail!("{} (it stopped or was killed)", lost());
        }
        let answer: Value = serde_json::from_str(&line)
            .with_context(|| format!("the server answered something that is not JSON: {line}"))?;
        if answer["ok"] == true {
            Ok(answer["status"].clone())
        } else {
            bail!(
                "{}",
                answer["error"].as_str().unwrap_or("the server refused")
            )
        }
    }

    pub fn status(&mut self) -> Result<Value> {
        self.call(&json!({"command": "status"}))
    }
}
