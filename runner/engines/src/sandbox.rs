//! The engine's sandbox (content/threat-model.md, The engine's sandbox). An engine is a
//! miner's code; it runs in its own user, pid, IPC, UTS and network namespaces, with:
//! - no network but its own loopback: the runner reaches it through the listening socket
//!   it inherits (bound in the host's namespace, see the crate docs);
//! - the whole filesystem read-only, the patched tree included;
//! - the evaluator's key directory, the data directory and `/run` (where daemons' Unix
//!   sockets live) hidden under empty read-only mounts; the patched tree, which lives
//!   inside the data directory, is mounted back read-only at its own path;
//! - a minimal `/dev` (`null`, `zero`, `full`, `random`, `urandom`, `tty`, and any
//!   `/dev/nvidia*` for GPU engines), no capabilities, `no_new_privs`;
//! - a clean environment: `PATH`, and `HOME` and `TMPDIR` pointing to a private,
//!   writable directory that is gone when the engine is.
//!
//! [`Sandbox::detect`] picks bubblewrap (`bwrap`), else util-linux `unshare` with a
//! small `sh` script doing the same mounts and `setpriv` dropping every capability; when
//! neither can run, the engine is refused ([`SandboxError::Unavailable`]) unless the
//! campaign declares `trusted_engines = true`, and the receipt records which it was
//! ([`SandboxKind`]).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub use receipts::model::SandboxKind;

/// `PATH` inside the sandbox.
pub const SANDBOX_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Why an engine cannot be sandboxed.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// Neither `bwrap` nor `unshare` could run a sandbox on this host, and the campaign
    /// does not declare `trusted_engines = true`; the entry is `infra_failed`.
    #[error(
        "no sandbox can run on this host (bwrap: {bwrap}; unshare: {unshare}); install \
         bubblewrap, or declare `trusted_engines = true` in the campaign to run engines \
         unsandboxed"
    )]
    Unavailable {
        /// Why bubblewrap could not run.
        bwrap: String,
        /// Why the `unshare` fallback could not run.
        unshare: String,
    },
}

/// What one engine's sandbox holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SandboxSpec {
    /// The patched tree: visible, read-only, at its own path.
    pub tree: PathBuf,
    /// Directories hidden under empty mounts (the key directory, the data directory);
    /// those that do not exist are skipped.
    pub hidden: Vec<PathBuf>,
    /// A private, writable directory on the host, outside every hidden directory: the
    /// engine's `HOME` and `TMPDIR`. The caller creates it (empty) and removes it after
    /// the engine.
    pub tmp: PathBuf,
}

/// A way of sandboxing engines, found once per round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sandbox {
    kind: SandboxKind,
}

impl Sandbox {
    /// The first sandbox that runs here: bubblewrap, else `unshare`. When neither does,
    /// [`SandboxKind::Trusted`] if `trusted` (the campaign's `trusted_engines`).
    ///
    /// Errors: [`SandboxError::Unavailable`] with why each failed, when neither runs and
    /// the engines are not trusted.
    pub fn detect(trusted: bool) -> Result<Self, SandboxError> {
        let bwrap = match Self::probe(SandboxKind::Bwrap) {
            Ok(sandbox) => return Ok(sandbox),
            Err(why) => why,
        };
        let unshare = match Self::probe(SandboxKind::Unshare) {
            Ok(sandbox) => return Ok(sandbox),
            Err(why) => why,
        };
        if trusted {
            Ok(Self {
                kind: SandboxKind::Trusted,
            })
        } else {
            Err(SandboxError::Unavailable { bwrap, unshare })
        }
    }

    /// `kind` if it runs here: a sandboxed `true` on scratch directories must exit 0.
    /// [`SandboxKind::Trusted`] always "runs".
    ///
    /// Errors: what went wrong, as a sentence (the tool is missing, or it exited with
    /// this status and this stderr).
    pub fn probe(kind: SandboxKind) -> Result<Self, String> {
        let sandbox = Self { kind };
        if kind == SandboxKind::Trusted {
            return Ok(sandbox);
        }
        if kind == SandboxKind::Docker {
            return Err(
                "a Docker engine is confined by its container (the docker backend), not by a \
                 process sandbox"
                    .to_owned(),
            );
        }
        let scratch = || tempfile::tempdir().map_err(|e| format!("creating a scratch dir: {e}"));
        let (hidden, tmp) = (scratch()?, scratch()?);
        let tree = hidden.path().join("tree");
        std::fs::create_dir(&tree).map_err(|e| format!("creating a scratch dir: {e}"))?;
        let spec = SandboxSpec {
            tree,
            hidden: vec![hidden.path().to_path_buf()],
            tmp: tmp.path().to_path_buf(),
        };
        let output = sandbox
            .command(&spec, &["true".to_owned()])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("`{}` could not be started: {e}", kind_program(kind)))?;
        if output.status.success() {
            Ok(sandbox)
        } else {
            let stderr = String::from_utf8_lossy(&output.stderr);
            Err(format!(
                "`{}` exited with {}: {}",
                kind_program(kind),
                output.status,
                receipts::text::escape_untrusted(stderr.trim())
            ))
        }
    }

    /// The sandbox this is.
    pub fn kind(&self) -> SandboxKind {
        self.kind
    }

    /// The command running `argv` (program first, found on [`SANDBOX_PATH`]) in this
    /// sandbox, in `spec.tree`, with a clean environment (`PATH`, `HOME` = `TMPDIR` =
    /// `spec.tmp`); the caller adds its own variables, stdio and pre-exec steps.
    /// Inherited file descriptors (the listening socket) pass through.
    pub fn command(&self, spec: &SandboxSpec, argv: &[String]) -> Command {
        let hidden = hidden_dirs(spec);
        let mut command = match self.kind {
            SandboxKind::Bwrap => bwrap(spec, &hidden, argv),
            SandboxKind::Unshare => unshare(spec, &hidden, argv),
            // `probe` never makes a Docker sandbox: its engines are containers.
            SandboxKind::Trusted | SandboxKind::Docker => {
                let mut command = Command::new(argv.first().map_or("", String::as_str));
                command.args(argv.iter().skip(1));
                command
            }
        };
        command
            .env_clear()
            .env("PATH", SANDBOX_PATH)
            .env("HOME", &spec.tmp)
            .env("TMPDIR", &spec.tmp)
            .current_dir(&spec.tree);
        command
    }
}

fn kind_program(kind: SandboxKind) -> &'static str {
    match kind {
        SandboxKind::Bwrap => "bwrap",
        SandboxKind::Unshare => "unshare",
        SandboxKind::Trusted => "(none)",
        SandboxKind::Docker => "docker",
    }
}

/// The directories to hide: the spec's and `/run`, resolved, existing ones only.
fn hidden_dirs(spec: &SandboxSpec) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = spec
        .hidden
        .iter()
        .map(PathBuf::as_path)
        .chain([Path::new("/run")])
        .filter_map(|d| d.canonicalize().ok())
        .filter(|d| d.is_dir() && d != Path::new("/"))
        .collect();
    dirs.sort();
    dirs.dedup();
    dirs
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

fn bwrap(spec: &SandboxSpec, hidden: &[PathBuf], argv: &[String]) -> Command {
    // bwrap resolves a relative mount target against its own new root, not the caller's
    // directory: `--data data` would fail with "Can't mkdir parents … Read-only file
    // system". A path that cannot be made absolute is passed as given (bwrap names it).
    let tree = std::path::absolute(&spec.tree).unwrap_or_else(|_| spec.tree.clone());
    let tmp = std::path::absolute(&spec.tmp).unwrap_or_else(|_| spec.tmp.clone());
    let mut command = Command::new("bwrap");
    let mut args: Vec<OsString> = Vec::new();
    let mut push = |items: &[&std::ffi::OsStr]| args.extend(items.iter().map(OsString::from));
    push(&[
        "--unshare-all".as_ref(),
        "--die-with-parent".as_ref(),
        "--new-session".as_ref(),
        "--cap-drop".as_ref(),
        "ALL".as_ref(),
        "--ro-bind".as_ref(),
        "/".as_ref(),
        "/".as_ref(),
        "--dev".as_ref(),
        "/dev".as_ref(),
        "--proc".as_ref(),
        "/proc".as_ref(),
    ]);
    // `/tmp` stays visible read-only like the rest of the filesystem (the engine's own
    // program may live there, e.g. a checkout under /tmp); the data and key directories
    // are hidden explicitly wherever they are.
    for device in gpu_devices() {
        push(&[
            "--dev-bind".as_ref(),
            device.as_os_str(),
            device.as_os_str(),
        ]);
    }
    for dir in hidden {
        push(&["--tmpfs".as_ref(), dir.as_os_str()]);
    }
    push(&[
        "--ro-bind".as_ref(),
        tree.as_os_str(),
        tree.as_os_str(),
        "--bind".as_ref(),
        tmp.as_os_str(),
        tmp.as_os_str(),
    ]);
    for dir in hidden {
        push(&["--remount-ro".as_ref(), dir.as_os_str()]);
    }
    push(&["--chdir".as_ref(), tree.as_os_str(), "--".as_ref()]);
    command.args(args).args(argv);
    command
}

/// The mounts of the `unshare` fallback, run as root of the new user namespace before
/// the engine: `$1` the tree, `$2` the private tmp, `$3` the number of hidden dirs, then
/// the hidden dirs, then the engine's argv. Every mount is made read-only, the tmp gets
/// its own tmpfs, `/dev` and the hidden dirs are covered by empty read-only mounts (the
/// tree and the kept devices are bound back from a copy kept in the tmp), and the engine
/// runs with no capabilities (so it cannot undo a mount).
const UNSHARE_SCRIPT: &str = r#"set -eu
tree=$1; tmp=$2; n=$3; shift 3
awk '{print $5}' /proc/self/mountinfo | while IFS= read -r m; do
  case "$m" in *\\*) continue;; esac
  mount -o remount,bind,ro "$m" 2>/dev/null || :
done
mount -t tmpfs -o mode=700 referee-tmp "$tmp"
mkdir "$tmp/.tree" "$tmp/.dev"
mount --bind "$tree" "$tmp/.tree"
mount --rbind /dev "$tmp/.dev"
mount -t tmpfs -o mode=755 referee-dev /dev
for d in null zero full random urandom tty $(cd "$tmp/.dev" && ls -d nvidia* 2>/dev/null || :); do
  if [ -e "$tmp/.dev/$d" ]; then
    if [ -d "$tmp/.dev/$d" ]; then mkdir "/dev/$d"; else touch "/dev/$d"; fi
    mount --rbind "$tmp/.dev/$d" "/dev/$d"
  fi
done
mkdir /dev/shm && mount -t tmpfs -o mode=1777 referee-shm /dev/shm
i=0; while [ "$i" -lt "$n" ]; do
  mount -t tmpfs -o mode=755 referee-hidden "$1"
  case "$tree" in "$1"/*) mkdir -p "$tree";; esac
  mount -o remount,ro referee-hidden "$1"
  shift; i=$((i+1))
done
mount --bind "$tmp/.tree" "$tree"
mount -o remount,bind,ro "$tree"
umount "$tmp/.tree"
umount -l "$tmp/.dev"
rmdir "$tmp/.tree" "$tmp/.dev"
mount -o remount,ro referee-dev /dev
cd "$tree"
exec setpriv --no-new-privs --bounding-set -all --inh-caps -all -- "$@"
"#;

fn unshare(spec: &SandboxSpec, hidden: &[PathBuf], argv: &[String]) -> Command {
    let mut command = Command::new("unshare");
    command
        .args([
            "--user",
            "--map-root-user",
            "--net",
            "--mount",
            "--pid",
            "--ipc",
            "--uts",
            "--fork",
            "--kill-child",
            "--mount-proc",
            "--propagation",
            "private",
            "--",
            "/bin/sh",
            "-c",
            UNSHARE_SCRIPT,
            "referee-sandbox",
        ])
        .arg(&spec.tree)
        .arg(&spec.tmp)
        .arg(hidden.len().to_string())
        .args(hidden)
        .args(argv);
    command
}
