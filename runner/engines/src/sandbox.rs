//! The engine's sandbox (content/threat-model.md, The engine's sandbox). An engine is a
//! miner's code; under bubblewrap it runs in its own user, pid, IPC, UTS, cgroup and
//! network namespaces, and sees only what is listed here (an allow-list: a path not
//! named below does not exist inside):
//! - the system: `/usr`, and `/bin`, `/sbin` and `/lib*` (symlinks into `/usr` where the
//!   host has them so, read-only binds otherwise), and the few files of `/etc` listed in
//!   [`ETC_FILES`] with the reason each is needed;
//! - the engine's executable, the patched tree, and the campaign's declared read-only
//!   paths (`[backend] ro_paths`: a Python venv, a model file), each read-only at its own
//!   path; a declared path may not hold or lie in the evaluator's data or key paths
//!   ([`SandboxError::Exposes`]) nor hold a Unix socket ([`SandboxError::Socket`]);
//! - a fresh tmpfs `/tmp` (its `HOME` and `TMPDIR`) and a private `/dev/shm`, gone with
//!   the sandbox; a minimal `/dev` (`null`, `zero`, `full`, `random`, `urandom`, `tty`,
//!   and every `/dev/nvidia*` plus a read-only `/sys` for GPU engines); a new `/proc`;
//! - no network but its own loopback (up): the runner reaches it through the listening
//!   socket it inherits as fd 3 (bound in the host's namespace, see the crate docs);
//! - no capabilities, `no_new_privs`, and no user namespace of its own
//!   (`--disable-userns`): it cannot undo a mount or make a nested sandbox;
//! - when the runner is root, its own unprivileged host uid and gid ([`EngineUser`],
//!   `--engine-uid`, default [`DEFAULT_ENGINE_UID`], no passwd entry), taken before
//!   bubblewrap starts; otherwise the runner's own uid.
//!
//! When the runner is root, the engine's uid may not be able to walk the host path to its
//! tree or a declared path (`/root/.cache/...` is 0700): the launch, still root, binds
//! each of them onto an empty placeholder in a staging directory of its own, in a mount
//! namespace of its own, and bubblewrap binds them from there. The engine's uid only has
//! to read what is bound.
//!
//! [`Sandbox::detect`] picks bubblewrap. Without it, a `process` engine is refused
//! ([`SandboxError::Unavailable`], saying how to install it) unless the campaign declares
//! `trusted_engines = true`; the built-in engine, whose only miner-controlled input is its
//! config file (range-checked at the build gate), runs unsandboxed and says so. The
//! receipt records which it was ([`SandboxKind`]).

use std::ffi::{CString, OsString};
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub use receipts::model::{BackendKind, SandboxKind};

/// `PATH` inside the sandbox.
pub const SANDBOX_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The host uid (and gid) a root runner gives its engines unless `--engine-uid` names
/// another: high, so no account of a usual host has it, and without a passwd entry.
pub const DEFAULT_ENGINE_UID: u32 = 990_000;

/// The engine's `HOME` and `TMPDIR` inside bubblewrap: its fresh tmpfs.
pub const SANDBOX_TMP: &str = "/tmp";

/// The files of `/etc` an engine sees, each for a reason; nothing else of `/etc` (no
/// `passwd`, `shadow`, `ssh/`, `resolv.conf`) exists inside. Those missing on the host
/// are skipped.
pub const ETC_FILES: &[&str] = &[
    // The dynamic linker's index of library directories: libraries under
    // `/usr/lib/<triplet>` (Debian's multiarch) are found only through it.
    "/etc/ld.so.cache",
    // Debian's symlink farm for commands (`/usr/bin/awk` → `/etc/alternatives/awk`).
    "/etc/alternatives",
    // `localhost` → 127.0.0.1, for engines whose parts talk over loopback by name.
    "/etc/hosts",
    // Tells glibc to read `/etc/hosts` for those lookups.
    "/etc/nsswitch.conf",
    // The host's time zone, for the timestamps of the engine's own log.
    "/etc/localtime",
];

/// File descriptors handed to bubblewrap are moved at or above this number, clear of
/// the listening socket's fd 3 and of stdio.
const FIRST_PASSED_FD: RawFd = 10;

/// Why an engine cannot be sandboxed as asked.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// bubblewrap cannot run on this host, the engines are not the built-in one, and the
    /// campaign does not declare `trusted_engines = true`; the round is refused.
    #[error(
        "bubblewrap cannot run a sandbox on this host ({why}); a `process` engine runs only \
         inside it: install it (`apt-get install bubblewrap`, `dnf install bubblewrap`; \
         unprivileged user namespaces must be enabled), or declare `trusted_engines = true` \
         in the campaign to run engines unsandboxed"
    )]
    Unavailable {
        /// Why bubblewrap could not run.
        why: String,
    },
    /// A path the engine would see (a declared read-only path, its executable) holds or
    /// lies in a path the evaluator keeps from engines (the data directory, a key).
    #[error(
        "`{path}` would show the engine `{secret}` (the data directory or a key): declare a \
         narrower path"
    )]
    Exposes {
        /// The visible path.
        path: PathBuf,
        /// The hidden path it holds or lies in.
        secret: PathBuf,
    },
    /// A declared read-only directory holds a Unix socket, which a read-only bind does not
    /// stop the engine from connecting to.
    #[error("`{socket}` is a Unix socket inside the declared read-only path `{path}`")]
    Socket {
        /// The declared path.
        path: PathBuf,
        /// The socket.
        socket: PathBuf,
    },
    /// A path the engine must see could not be opened or read.
    #[error("{action} `{path}` for the engine's sandbox")]
    Io {
        /// What was done: `opening`, `reading`.
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// The host identity an engine runs as when the runner is root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineUser {
    /// Host uid.
    pub uid: u32,
    /// Host gid.
    pub gid: u32,
}

/// What one engine's sandbox shows it besides the system.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct SandboxSpec {
    /// The patched tree: visible, read-only, at its own path; its working directory.
    pub tree: PathBuf,
    /// The engine's executable when named by a path: visible read-only at that path.
    pub program: Option<PathBuf>,
    /// The campaign's declared read-only paths (`[backend] ro_paths`), each visible
    /// read-only at its own path.
    pub ro_paths: Vec<PathBuf>,
    /// Paths the evaluator keeps from engines (the data directory, the key directory,
    /// the key files): no visible path but the tree may hold or lie in one.
    pub hidden: Vec<PathBuf>,
    /// A directory visible read-write at its own path (a quantisation recipe's output,
    /// content/s1-pro-speed.md); `None` for engines, which write nothing outside their
    /// private tmp.
    pub rw_dir: Option<PathBuf>,
}

/// A way of sandboxing engines, found once per round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sandbox {
    kind: SandboxKind,
    /// The identity the engine takes instead of the runner's: under bubblewrap when the
    /// runner is root (taken before bubblewrap starts), and always for Docker (`--user`).
    user: Option<EngineUser>,
}

/// A sandboxed command ready to spawn, with what must live until it has been spawned.
#[derive(Debug)]
pub struct Launch {
    /// The command; the caller adds its variables, stdio and later pre-exec steps.
    pub command: Command,
    /// A host directory the engine needs until it stops: its private `HOME`/`TMPDIR`
    /// when unsandboxed, the staging directory of its binds when the runner is root;
    /// the caller removes it after the engine and reports a failure to.
    pub host_dir: Option<tempfile::TempDir>,
    /// The read end of bubblewrap's `--info-fd` (its JSON names the sandbox's pid
    /// namespace); read it after the spawn, once [`Launch::passed`] is dropped.
    pub info: Option<File>,
    /// The descriptors bubblewrap inherits (the info pipe's write end): drop them right
    /// after the spawn.
    pub passed: Vec<OwnedFd>,
    /// Binds from a host path to its placeholder in `host_dir`, made by the launch
    /// before it drops to the engine's uid.
    staged: Vec<(CString, CString)>,
}

impl Launch {
    /// Runs the command to its end with stdin from `/dev/null`, and returns its output
    /// (for short sandboxed commands: the probe, tests).
    ///
    /// Errors: the command could not be spawned or waited for.
    pub fn output(mut self) -> std::io::Result<std::process::Output> {
        let child = self
            .command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        drop(self.passed);
        // The info pipe stays open until bubblewrap is done: a write to a closed pipe
        // would kill it (its few hundred bytes fit in the pipe's buffer).
        let output = child?.wait_with_output();
        drop(self.info);
        if let Some(dir) = self.host_dir {
            dir.close()?;
        }
        output
    }
}

impl Sandbox {
    /// The sandbox of a round's engines on `backend`: a Docker engine is confined by its
    /// container; otherwise bubblewrap, run as `engine_uid` (uid and gid) when this
    /// process is root. Without bubblewrap: [`SandboxKind::Trusted`] when `trusted` (the
    /// campaign's `trusted_engines`), [`SandboxKind::Unsandboxed`] for the built-in
    /// engine.
    ///
    /// Errors: [`SandboxError::Unavailable`] with why bubblewrap did not run, for a
    /// `process` engine the campaign does not trust.
    pub fn detect(
        backend: BackendKind,
        trusted: bool,
        engine_uid: u32,
    ) -> Result<Self, SandboxError> {
        if backend == BackendKind::Docker {
            // A container's root is the host's root (without user-namespace remapping):
            // its engine always runs as the engine uid.
            return Ok(Self {
                kind: SandboxKind::Docker,
                user: Some(EngineUser {
                    uid: engine_uid,
                    gid: engine_uid,
                }),
            });
        }
        Self::choose(
            backend,
            trusted,
            Self::probe(SandboxKind::Bwrap, engine_uid),
        )
    }

    /// What [`Sandbox::detect`] picks for a non-Docker `backend` given what probing
    /// bubblewrap gave: it when it runs, else a campaign's trust, else the built-in
    /// engine unsandboxed, else the refusal.
    fn choose(
        backend: BackendKind,
        trusted: bool,
        bwrap: Result<Self, String>,
    ) -> Result<Self, SandboxError> {
        match (bwrap, trusted, backend) {
            (Ok(sandbox), _, _) => Ok(sandbox),
            (Err(_), true, _) => Ok(Self::unsandboxed(SandboxKind::Trusted)),
            (Err(_), false, BackendKind::Builtin) => {
                Ok(Self::unsandboxed(SandboxKind::Unsandboxed))
            }
            (Err(why), false, _) => Err(SandboxError::Unavailable { why }),
        }
    }

    /// No sandbox at all, of `kind` ([`SandboxKind::Trusted`] or
    /// [`SandboxKind::Unsandboxed`]): the engine runs as the runner's own uid.
    pub fn unsandboxed(kind: SandboxKind) -> Self {
        Self { kind, user: None }
    }

    /// bubblewrap (`kind` [`SandboxKind::Bwrap`]), run as `engine_uid` when this process
    /// is root, if it runs here: a sandboxed `true` must exit 0. Any other `kind` is
    /// [`Sandbox::unsandboxed`].
    ///
    /// Errors: what went wrong, as a sentence (the tool is missing, or it exited with
    /// this status and this stderr).
    pub fn probe(kind: SandboxKind, engine_uid: u32) -> Result<Self, String> {
        if kind != SandboxKind::Bwrap {
            return Ok(Self::unsandboxed(kind));
        }
        // SAFETY: geteuid(2) reads this process's credentials; no memory is involved.
        let root = unsafe { libc::geteuid() } == 0;
        let sandbox = Self {
            kind,
            user: root.then_some(EngineUser {
                uid: engine_uid,
                gid: engine_uid,
            }),
        };
        let tree = tempfile::tempdir().map_err(|e| format!("creating a scratch dir: {e}"))?;
        let spec = SandboxSpec {
            tree: tree.path().to_path_buf(),
            ..SandboxSpec::default()
        };
        let output = sandbox
            .command(&spec, &["true".to_owned()])
            .map_err(|e| e.to_string())?
            .output()
            .map_err(|e| format!("`bwrap` could not be started: {e}"))?;
        if output.status.success() {
            Ok(sandbox)
        } else {
            let stderr = String::from_utf8_lossy(&output.stderr);
            Err(format!(
                "`bwrap` exited with {}: {}",
                output.status,
                receipts::text::escape_untrusted(stderr.trim())
            ))
        }
    }

    /// The sandbox this is.
    pub fn kind(&self) -> SandboxKind {
        self.kind
    }

    /// The identity engines take before the sandbox starts: `Some` when the runner is
    /// root (and the sandbox is bubblewrap) and for Docker containers (`--user`), `None`
    /// when they keep the runner's.
    pub fn user(&self) -> Option<EngineUser> {
        self.user
    }

    /// The host uid the engine runs as: [`Sandbox::user`]'s, else this process's.
    pub fn engine_uid(&self) -> u32 {
        // SAFETY: geteuid(2) reads this process's credentials; no memory is involved.
        self.user
            .map_or_else(|| unsafe { libc::geteuid() }, |u| u.uid)
    }

    /// The command running `argv` (program first, found on [`SANDBOX_PATH`]) in this
    /// sandbox, in `spec.tree`, with a clean environment (`PATH`, `HOME` = `TMPDIR` =
    /// the private tmp); the caller adds its own variables, stdio and pre-exec steps,
    /// which run after this one's (the uid is dropped first). Inherited file
    /// descriptors the caller sets up (the listening socket) pass through.
    ///
    /// Errors: [`SandboxError::Exposes`] or [`SandboxError::Socket`] for a visible path
    /// that shows what it must not, [`SandboxError::Io`] for one that cannot be opened.
    pub fn command(&self, spec: &SandboxSpec, argv: &[String]) -> Result<Launch, SandboxError> {
        check_hidden(spec.program.as_slice(), &spec.hidden)?;
        check_hidden(spec.rw_dir.as_slice(), &spec.hidden)?;
        check_declared(&spec.ro_paths, &spec.hidden)?;
        let mut launch = match self.kind {
            SandboxKind::Bwrap => bwrap(spec, argv, self.user.is_some())?,
            // `detect` never makes these for a process: Docker engines are containers,
            // and `Unshare` is only read from older receipts.
            SandboxKind::Trusted
            | SandboxKind::Unsandboxed
            | SandboxKind::Docker
            | SandboxKind::Unshare => {
                let tmp =
                    host_dir(PRIVATE_TMP_PREFIX, 0o700).map_err(|source| SandboxError::Io {
                        action: "creating the engine's private tmp in",
                        path: std::env::temp_dir(),
                        source,
                    })?;
                let mut command = Command::new(argv.first().map_or("", String::as_str));
                command
                    .args(argv.iter().skip(1))
                    .env_clear()
                    .env("HOME", tmp.path())
                    .env("TMPDIR", tmp.path());
                Launch {
                    command,
                    host_dir: Some(tmp),
                    info: None,
                    passed: Vec::new(),
                    staged: Vec::new(),
                }
            }
        };
        launch
            .command
            .env("PATH", SANDBOX_PATH)
            .current_dir(&spec.tree);
        let passed: Vec<RawFd> = launch.passed.iter().map(AsRawFd::as_raw_fd).collect();
        let staged = std::mem::take(&mut launch.staged);
        let user = self.user;
        // SAFETY: the closure runs between fork and exec and only calls fcntl(2),
        // unshare(2), mount(2), setgroups(2), setgid(2) and setuid(2), which are
        // async-signal-safe, on values prepared before the fork.
        unsafe {
            launch.command.pre_exec(move || {
                for &fd in &passed {
                    if libc::fcntl(fd, libc::F_SETFD, 0) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                // Still root: the staged binds, in a mount namespace of this launch's own
                // (nothing of them shows on the host).
                if !staged.is_empty()
                    && (libc::unshare(libc::CLONE_NEWNS) != 0
                        || libc::mount(
                            c"none".as_ptr(),
                            c"/".as_ptr(),
                            std::ptr::null(),
                            libc::MS_REC | libc::MS_PRIVATE,
                            std::ptr::null(),
                        ) != 0)
                {
                    return Err(std::io::Error::last_os_error());
                }
                for (source, placeholder) in &staged {
                    if libc::mount(
                        source.as_ptr(),
                        placeholder.as_ptr(),
                        std::ptr::null(),
                        libc::MS_BIND | libc::MS_REC,
                        std::ptr::null(),
                    ) != 0
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                if let Some(user) = user
                    && (libc::setgroups(0, std::ptr::null()) != 0
                        || libc::setgid(user.gid) != 0
                        || libc::setuid(user.uid) != 0)
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        Ok(launch)
    }
}

/// Refuses declared read-only paths that hold or lie in a `hidden` path, or hold a Unix
/// socket (the Docker backend binds them too).
///
/// Errors: [`SandboxError::Exposes`], [`SandboxError::Socket`], or [`SandboxError::Io`]
/// for a path that cannot be read.
pub fn check_declared(ro_paths: &[PathBuf], hidden: &[PathBuf]) -> Result<(), SandboxError> {
    check_hidden(ro_paths, hidden)?;
    for path in ro_paths {
        check_no_socket(path, path)?;
    }
    Ok(())
}

/// Refuses a visible path that holds or lies in a hidden one (both resolved; a hidden
/// path that does not exist hides nothing).
fn check_hidden(visible: &[PathBuf], hidden: &[PathBuf]) -> Result<(), SandboxError> {
    let hidden: Vec<PathBuf> = hidden
        .iter()
        .filter_map(|h| h.canonicalize().ok())
        .collect();
    for path in visible {
        let resolved = path.canonicalize().map_err(|source| SandboxError::Io {
            action: "opening",
            path: path.clone(),
            source,
        })?;
        if let Some(secret) = hidden
            .iter()
            .find(|h| resolved.starts_with(h) || h.starts_with(&resolved))
        {
            return Err(SandboxError::Exposes {
                path: path.clone(),
                secret: secret.clone(),
            });
        }
    }
    Ok(())
}

/// Refuses a Unix socket anywhere under `path` (not following symlinks; a symlink's
/// target is outside the sandbox unless declared itself).
fn check_no_socket(declared: &Path, path: &Path) -> Result<(), SandboxError> {
    let io = |action, source| SandboxError::Io {
        action,
        path: path.to_path_buf(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(|e| io("opening", e))?;
    if meta.file_type().is_socket() {
        return Err(SandboxError::Socket {
            path: declared.to_path_buf(),
            socket: path.to_path_buf(),
        });
    }
    if !meta.is_dir() {
        return Ok(());
    }
    for entry in std::fs::read_dir(path).map_err(|e| io("reading", e))? {
        let entry = entry.map_err(|e| io("reading", e))?;
        let kind = entry.file_type().map_err(|e| io("reading", e))?;
        if kind.is_socket() {
            return Err(SandboxError::Socket {
                path: declared.to_path_buf(),
                socket: entry.path(),
            });
        }
        if kind.is_dir() {
            check_no_socket(declared, &entry.path())?;
        }
    }
    Ok(())
}

/// Every `/dev/nvidia*` node.
fn gpu_devices() -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir("/dev") else {
        return Vec::new();
    };
    let mut devices: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("nvidia"))
        .map(|e| e.path())
        .collect();
    devices.sort();
    devices
}

/// `fd` moved to a number at or above [`FIRST_PASSED_FD`], close-on-exec until the
/// pre-exec step clears it for bubblewrap.
fn passed_fd(fd: OwnedFd) -> std::io::Result<OwnedFd> {
    // SAFETY: F_DUPFD_CLOEXEC duplicates a descriptor we own; the new one is owned by the
    // returned OwnedFd, the old one closed when `fd` drops.
    let new = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, FIRST_PASSED_FD) };
    if new < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `new` is a fresh descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

/// The bubblewrap arguments being assembled.
struct BwrapArgs {
    args: Vec<OsString>,
    /// The staging directory when the runner is root ([`Launch::host_dir`]).
    stage: Option<tempfile::TempDir>,
    staged: Vec<(CString, CString)>,
}

impl BwrapArgs {
    fn push(&mut self, items: &[&std::ffi::OsStr]) {
        self.args.extend(items.iter().map(OsString::from));
    }

    /// `--ro-bind` of the system's `source` at `dest`: every uid can walk to it.
    fn ro_bind(&mut self, source: &Path, dest: &Path) {
        self.push(&["--ro-bind".as_ref(), source.as_os_str(), dest.as_os_str()]);
    }

    /// `--ro-bind` of a host path the engine's uid may not be able to walk to: through
    /// a placeholder in the staging directory when there is one.
    ///
    /// Errors: [`SandboxError::Io`] when `source` cannot be read or its placeholder made.
    fn ro_bind_staged(&mut self, source: &Path, dest: &Path) -> Result<(), SandboxError> {
        self.bind_staged(source, dest, "--ro-bind")
    }

    /// As [`BwrapArgs::ro_bind_staged`] with bwrap's `bind` option (`--ro-bind` or
    /// `--bind`).
    fn bind_staged(
        &mut self,
        source: &Path,
        dest: &Path,
        bind: &'static str,
    ) -> Result<(), SandboxError> {
        let Some(stage) = &self.stage else {
            self.push(&[bind.as_ref(), source.as_os_str(), dest.as_os_str()]);
            return Ok(());
        };
        let io = |action, path: &Path| {
            let path = path.to_path_buf();
            move |source| SandboxError::Io {
                action,
                path,
                source,
            }
        };
        let placeholder = stage.path().join(self.staged.len().to_string());
        if std::fs::metadata(source)
            .map_err(io("opening", source))?
            .is_dir()
        {
            std::fs::create_dir(&placeholder)
        } else {
            std::fs::write(&placeholder, b"")
        }
        .map_err(io("creating", &placeholder))?;
        let c = |p: &Path| {
            CString::new(p.as_os_str().as_bytes()).map_err(|e| SandboxError::Io {
                action: "naming",
                path: p.to_path_buf(),
                source: std::io::Error::other(e),
            })
        };
        self.staged.push((c(source)?, c(&placeholder)?));
        self.push(&[bind.as_ref(), placeholder.as_os_str(), dest.as_os_str()]);
        Ok(())
    }

    /// A top-level system path as the host has it: a symlink (`/lib` → `usr/lib`) made
    /// again, a directory bound read-only; absent, nothing.
    fn system(&mut self, path: &str) -> Result<(), SandboxError> {
        let path = Path::new(path);
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = std::fs::read_link(path).map_err(|source| SandboxError::Io {
                    action: "reading",
                    path: path.to_path_buf(),
                    source,
                })?;
                self.push(&["--symlink".as_ref(), target.as_os_str(), path.as_os_str()]);
                Ok(())
            }
            Ok(_) => {
                self.ro_bind(path, path);
                Ok(())
            }
            Err(_) => Ok(()),
        }
    }
}

/// The name prefix of an unsandboxed engine's private tmp in the host's temp directory.
const PRIVATE_TMP_PREFIX: &str = "referee-engine-";
/// The name prefix of a launch's staging directory in the host's temp directory.
const STAGE_PREFIX: &str = "referee-stage-";

/// A launch's host directory in the temp directory, mode `mode`, named
/// `<prefix><runner pid>-<random>`: the pid tells [`sweep_stale_host_dirs`] whether the
/// runner that made it still runs.
fn host_dir(prefix: &str, mode: u32) -> std::io::Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(&format!("{prefix}{}-", std::process::id()))
        .permissions(std::fs::Permissions::from_mode(mode))
        .tempdir()
}

/// Removes the host directories of launches ([`Launch::host_dir`]) that a runner no
/// longer running left in the temp directory: a runner killed by SIGKILL cannot remove
/// its own, and an empty staging directory a run left must not pile up (nor tell the
/// next run anything). A directory whose runner's pid is alive (another round, or this
/// one) is left alone. Returns how many it removed.
///
/// Errors: [`SandboxError::Io`] naming the directory that could not be read or removed.
pub fn sweep_stale_host_dirs() -> Result<usize, SandboxError> {
    sweep_stale_host_dirs_in(&std::env::temp_dir())
}

fn sweep_stale_host_dirs_in(temp: &Path) -> Result<usize, SandboxError> {
    let io = |action, path: &Path| {
        let path = path.to_path_buf();
        move |source| SandboxError::Io {
            action,
            path,
            source,
        }
    };
    let mut removed = 0;
    for entry in std::fs::read_dir(temp).map_err(io("reading", temp))? {
        let entry = entry.map_err(io("reading", temp))?;
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| {
            let rest = n
                .strip_prefix(STAGE_PREFIX)
                .or_else(|| n.strip_prefix(PRIVATE_TMP_PREFIX))?;
            rest.split_once('-')?.0.parse::<u32>().ok()
        }) else {
            continue;
        };
        let path = entry.path();
        let is_dir = entry.file_type().map_err(io("reading", &path))?.is_dir();
        if !is_dir || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        std::fs::remove_dir_all(&path).map_err(io("removing a stale launch directory", &path))?;
        removed += 1;
    }
    Ok(removed)
}

fn bwrap(spec: &SandboxSpec, argv: &[String], stage: bool) -> Result<Launch, SandboxError> {
    // bwrap resolves a relative mount target against its own new root, not the caller's
    // directory: every target is made absolute. A path that cannot be is passed as given
    // (bwrap names it).
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let stage = if stage {
        // World-walkable (0755), so the engine's uid reaches the placeholders.
        let dir = host_dir(STAGE_PREFIX, 0o755).map_err(|source| SandboxError::Io {
            action: "creating the staging directory in",
            path: std::env::temp_dir(),
            source,
        })?;
        Some(dir)
    } else {
        None
    };
    let mut b = BwrapArgs {
        args: Vec::new(),
        stage,
        staged: Vec::new(),
    };
    b.push(&[
        "--unshare-all".as_ref(),
        "--unshare-user".as_ref(),
        "--disable-userns".as_ref(),
        "--die-with-parent".as_ref(),
        "--new-session".as_ref(),
        "--cap-drop".as_ref(),
        "ALL".as_ref(),
    ]);
    b.system("/usr")?;
    for top in ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"] {
        b.system(top)?;
    }
    for etc in ETC_FILES {
        if Path::new(etc).exists() {
            b.ro_bind(Path::new(etc), Path::new(etc));
        }
    }
    b.push(&[
        "--dev".as_ref(),
        "/dev".as_ref(),
        "--tmpfs".as_ref(),
        "/dev/shm".as_ref(),
        "--proc".as_ref(),
        "/proc".as_ref(),
        "--tmpfs".as_ref(),
        SANDBOX_TMP.as_ref(),
    ]);
    let gpus = gpu_devices();
    for device in &gpus {
        b.push(&[
            "--dev-bind".as_ref(),
            device.as_os_str(),
            device.as_os_str(),
        ]);
    }
    // The CUDA runtime and NCCL read the GPUs' PCI topology from /sys.
    if !gpus.is_empty() {
        b.ro_bind(Path::new("/sys"), Path::new("/sys"));
    }
    for path in spec.program.iter().chain(&spec.ro_paths) {
        let path = absolute(path);
        b.ro_bind_staged(&path, &path)?;
    }
    let tree = absolute(&spec.tree);
    b.ro_bind_staged(&tree, &tree)?;
    if let Some(dir) = &spec.rw_dir {
        let dir = absolute(dir);
        b.bind_staged(&dir, &dir, "--bind")?;
    }
    let (info_read, info_write) = std::io::pipe().map_err(|source| SandboxError::Io {
        action: "opening a pipe for",
        path: PathBuf::from("bwrap --info-fd"),
        source,
    })?;
    let info_write = passed_fd(OwnedFd::from(info_write)).map_err(|source| SandboxError::Io {
        action: "opening a pipe for",
        path: PathBuf::from("bwrap --info-fd"),
        source,
    })?;
    let info_fd = info_write.as_raw_fd().to_string();
    b.push(&["--info-fd".as_ref(), info_fd.as_ref()]);
    b.push(&["--chdir".as_ref(), tree.as_os_str(), "--".as_ref()]);
    let mut command = Command::new("bwrap");
    command
        .args(b.args)
        .args(argv)
        .env_clear()
        .env("HOME", SANDBOX_TMP)
        .env("TMPDIR", SANDBOX_TMP);
    Ok(Launch {
        command,
        host_dir: b.stage,
        info: Some(File::from(OwnedFd::from(info_read))),
        passed: vec![info_write],
        staged: b.staged,
    })
}

/// The pid namespace bubblewrap's `--info-fd` JSON names (`"pid-namespace"`), read to its
/// end; `None` when it names none (bubblewrap failed before writing it).
pub fn info_pid_namespace(info: &mut File) -> Option<u64> {
    use std::io::Read;
    let mut text = String::new();
    info.take(64 * 1024).read_to_string(&mut text).ok()?;
    let json: serde_json::Value = serde_json::from_str(&text).ok()?;
    json.get("pid-namespace")?.as_u64()
}

/// The pids of the processes whose pid namespace is `namespace` (the inode of
/// `/proc/<pid>/ns/pid`), as far as this process can read them.
pub fn processes_in(namespace: u64) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let wanted = format!("pid:[{namespace}]");
    let mut pids: Vec<i32> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_link(format!("/proc/{pid}/ns/pid"))
                .is_ok_and(|link| link.as_os_str() == wanted.as_str())
        })
        .collect();
    pids.sort_unstable();
    pids
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 39: a runner killed by SIGKILL leaves its launch directories behind; the
    /// next round's sweep removes those whose runner is gone (a pid past the kernel's
    /// largest), and leaves a live runner's and every other name alone.
    #[test]
    fn stale_launch_directories_are_swept_and_live_ones_kept() {
        let temp = tempfile::tempdir().unwrap();
        let gone = 4_194_305; // above PID_MAX_LIMIT (2^22): no process has it
        let own = std::process::id();
        let names = [
            format!("{STAGE_PREFIX}{gone}-a1"),
            format!("{PRIVATE_TMP_PREFIX}{gone}-b2"),
            format!("{STAGE_PREFIX}{own}-c3"),
            "referee-stage-x".to_owned(),
            "other".to_owned(),
        ];
        for name in &names {
            std::fs::create_dir(temp.path().join(name)).unwrap();
        }
        std::fs::write(temp.path().join(&names[0]).join("0"), b"").unwrap();
        std::fs::write(temp.path().join(format!("{STAGE_PREFIX}{gone}-file")), b"").unwrap();
        assert_eq!(sweep_stale_host_dirs_in(temp.path()).unwrap(), 2);
        let mut left: Vec<String> = std::fs::read_dir(temp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        let mut expected = vec![
            names[2].clone(),
            names[3].clone(),
            names[4].clone(),
            format!("{STAGE_PREFIX}{gone}-file"),
        ];
        expected.sort();
        assert_eq!(left, expected);
    }

    /// Without bubblewrap a `process` engine is refused, saying how to install it, unless
    /// the campaign trusts engines; the built-in engine runs unsandboxed, recorded.
    #[test]
    fn without_bubblewrap_only_the_builtin_engine_or_a_trusting_campaign_runs() {
        let missing = || Err("`bwrap` could not be started: No such file".to_owned());
        let kind = |backend, trusted| {
            Sandbox::choose(backend, trusted, missing()).map(|s| (s.kind(), s.user()))
        };
        match kind(BackendKind::Process, false) {
            Err(e @ SandboxError::Unavailable { .. }) => assert_eq!(
                e.to_string(),
                "bubblewrap cannot run a sandbox on this host (`bwrap` could not be started: \
                 No such file); a `process` engine runs only inside it: install it (`apt-get \
                 install bubblewrap`, `dnf install bubblewrap`; unprivileged user namespaces \
                 must be enabled), or declare `trusted_engines = true` in the campaign to run \
                 engines unsandboxed"
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            kind(BackendKind::Process, true).unwrap(),
            (SandboxKind::Trusted, None)
        );
        assert_eq!(
            kind(BackendKind::Builtin, false).unwrap(),
            (SandboxKind::Unsandboxed, None)
        );
        assert_eq!(
            kind(BackendKind::Builtin, true).unwrap(),
            (SandboxKind::Trusted, None)
        );
        // With bubblewrap, it whatever the campaign says.
        let bwrap = Sandbox {
            kind: SandboxKind::Bwrap,
            user: None,
        };
        for trusted in [false, true] {
            assert_eq!(
                Sandbox::choose(BackendKind::Process, trusted, Ok(bwrap.clone())).unwrap(),
                bwrap
            );
        }
    }

    /// A Docker engine needs no bubblewrap, and always runs as the engine uid.
    #[test]
    fn a_docker_engine_runs_as_the_engine_uid() {
        let sandbox = Sandbox::detect(BackendKind::Docker, false, 4242).unwrap();
        assert_eq!(
            (sandbox.kind(), sandbox.user()),
            (
                SandboxKind::Docker,
                Some(EngineUser {
                    uid: 4242,
                    gid: 4242
                })
            )
        );
    }
}
