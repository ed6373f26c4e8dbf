//! Engines: one trait ([`Engine`]: start → wait_healthy → endpoint → logs → stop) and
//! the backends that implement it (content/rounds.md, Engines): `builtin` runs `referee engine
//! serve` with the patched tree's config as a child process, `process` runs any command
//! line that serves the OpenAI-compatible API, `docker` runs each entry as a container
//! of its own image ([`docker`], content/docker.md).
//!
//! Every engine runs in its own process group, so stopping it kills whatever it spawned;
//! on Linux it also gets `PR_SET_PDEATHSIG`, so it dies with the runner. Its group id is
//! kept in a pid file while it runs, so a round resumed after the runner was killed
//! removes leftovers first ([`kill_leftovers`]). Its stdout and stderr go to one log file
//! on disk, which becomes an artifact of the round (written in full and fsynced by the
//! time [`Engine::stop`] returns `Ok`); the last 50 lines are the log tail of a
//! disqualification (content/rounds.md).
//!
//! # Sandbox, socket, CPUs
//! Every engine runs in a sandbox ([`sandbox`]: its own user, pid and network namespaces,
//! an allow-list of what it sees, its own unprivileged uid when the runner is root, a
//! clean environment) and pinned to CPUs disjoint from the load generator's ([`isolation`]). The runner binds
//! the engine's listening socket itself, on the host's loopback, and passes it to the
//! engine with the systemd socket-activation convention: the socket is fd 3,
//! `LISTEN_FDS=1` and `LISTEN_PID` is the engine's pid (content/rounds.md, Engines). A
//! port the runner cannot bind is the host's fault ([`EngineError::Bind`],
//! `infra_failed`); whatever the engine prints about ports is its own output and proves
//! nothing (an engine that exits is disqualified like any other).
//!
//! `PR_SET_PDEATHSIG` fires when the *thread* that spawned the engine exits, not the
//! process. Engines are therefore not [`Send`]: an engine stays on the thread that
//! started it, and dropping it stops it, so that thread outlives the engine by
//! construction. (The round executor starts and stops every engine on the thread that
//! called `run_round`; its tokio runtime only drives the load generator.)

pub mod affinity;
pub mod api;
pub mod docker;
pub mod hardware;
pub mod isolation;
pub mod log_budget;
pub mod sandbox;
pub mod telemetry;

use receipts::fsutil::IoError;
use std::fs;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use receipts::model::{Backend, BackendKind, EngineIsolation, SandboxKind, SubmissionImage};
use receipts::rules::log_tail::{LOG_TAIL_READ_BYTES, log_tail_of_end};

use crate::isolation::CpuPlan;
use crate::log_budget::BoundedLog;
use crate::sandbox::{Launch, Sandbox, SandboxError, SandboxSpec};

/// The file descriptor an engine's listening socket has (systemd's `SD_LISTEN_FDS_START`).
pub const LISTEN_FD: i32 = 3;

/// Runs the engine's argv with `LISTEN_PID` set to its own pid (`exec` keeps it), since
/// no wrapper knows that pid before it exists.
const LISTEN_PID_TRAMPOLINE: &str = r#"LISTEN_PID=$$; export LISTEN_PID; exec "$@""#;

/// Lines of an engine's log kept as a disqualification's log tail (the bounds of a
/// tail are `receipts::rules::log_tail`'s).
pub use receipts::rules::log_tail::LOG_TAIL_LINES;

/// How often the health check polls, in ms.
const HEALTH_POLL_MS: u64 = 50;

/// How long a stopped engine gets between SIGTERM and SIGKILL, in ms.
const STOP_GRACE_MS: u64 = 2_000;

/// Errors of an engine's life.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The program could not be started at all.
    #[error("starting `{program}`")]
    Spawn {
        /// The program.
        program: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The engine exited, or never answered a readiness route (`/health`, else
    /// `/v1/models`, or the profile's), before the deadline: the entry is disqualified
    /// with `engine_died_before_healthy`.
    #[error("engine died before becoming healthy ({detail})")]
    DiedBeforeHealthy {
        /// What was seen: `exit status: 1`, `no answer on /health within 30 s`.
        detail: String,
        /// The last [`LOG_TAIL_LINES`] lines of its log.
        log_tail: Vec<String>,
    },
    /// An I/O error on a file the engine needs (its log, its pid file, its private tmp).
    #[error(transparent)]
    Io(#[from] IoError),
    /// The runner could not bind the engine's listening socket: another process holds
    /// the port (or the host refuses it). The host's fault: `infra_failed`.
    #[error("binding the engine's socket `{addr}` (is another process holding it?)")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The engine could not be sandboxed as asked (no bubblewrap and the campaign does
    /// not trust engines, or a declared path that shows a key).
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// Processes of a stopped engine were still alive after it was killed: the next
    /// entry must not start beside them (the round's teardown fails loudly).
    #[error("processes {pids:?} of the stopped engine are still alive")]
    Survived {
        /// Their host pids.
        pids: Vec<i32>,
    },
    /// A method called out of order (e.g. `wait_healthy` before `start`).
    #[error("engine not started")]
    NotStarted,
    /// The backend cannot give an engine a secret of its run
    /// ([`Engine::set_secret_env`]).
    #[error("the {backend:?} backend cannot pass a run's secret to its engine")]
    NoSecrets {
        /// The backend.
        backend: BackendKind,
    },
    /// The Docker backend failed (the daemon's own message; content/docker.md).
    #[error(transparent)]
    Docker(#[from] docker::DockerError),
}

/// What every engine of a round gets from the campaign, whatever its backend.
#[derive(Clone, Debug)]
pub struct EngineSettings {
    /// The `referee` executable the built-in backend runs as `referee engine serve`
    /// (usually `std::env::current_exe()`).
    pub program: PathBuf,
    /// The campaign's `hardware.memory_limit_mb`.
    pub memory_limit_mb: u64,
    /// Threads the engine may use ([`CpuPlan::engine_threads`] of the campaign's value).
    pub threads: u32,
    /// The campaign's model name, served as such.
    pub served_model_name: String,
    /// The round's pid file: every engine's process group is recorded there while it
    /// runs, so [`EngineBackend::sweep_leftovers`] can kill what a killed runner left.
    pub pid_file: PathBuf,
    /// How every engine is sandboxed and pinned.
    pub confinement: Confinement,
    /// Readiness routes, polled until one answers 200 (the campaign's engine API
    /// profile; default `/health`, then `/v1/models`).
    pub readiness: Vec<String>,
    /// Environment variables of a process engine's command (the profile's `env`;
    /// placeholders substituted).
    pub env: std::collections::BTreeMap<String, String>,
    /// The campaign's `baseline.image`: the Docker backend refuses an image that is not
    /// this one (content/docker.md).
    pub baseline_image: Option<receipts::model::ImageRef>,
    /// A `decide` campaign's declared decisions: the built-in engine serves them as a
    /// decision sidecar (`--decide`, content/s1-pro-speed.md); `None` for completions.
    pub decide: Option<Vec<String>>,
}

/// How an engine process is confined: its sandbox, what it sees, its CPUs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Confinement {
    /// The sandbox ([`Sandbox::detect`] with the campaign's `trusted_engines`).
    pub sandbox: Sandbox,
    /// Paths no visible path may hold or lie in: the data directory, the key directory
    /// and every key file the evaluator passed (`--key`, `--key-dir`, `--log-key`).
    pub hidden: Vec<PathBuf>,
    /// The campaign's declared read-only paths (`[backend] ro_paths`), shown to the
    /// engine at their own paths.
    pub ro_paths: Vec<PathBuf>,
    /// The CPUs of the engine and of the load generator.
    pub cpus: CpuPlan,
    /// The most output its log keeps, bytes (the campaign's `limits.engine_log_bytes`;
    /// [`log_budget`]).
    pub log_bytes: u64,
}

impl Confinement {
    /// What the receipt records of an engine run with `threads` compute threads.
    pub fn record(&self, threads: u32) -> EngineIsolation {
        EngineIsolation {
            sandbox: self.sandbox.kind(),
            pinning: self.cpus.pinning,
            engine_cpus: self.cpus.engine.clone(),
            client_cpus: self.cpus.client.clone(),
            engine_threads: threads,
            uid: Some(self.sandbox.engine_uid()),
            own_uid: Some(self.sandbox.user().is_some()),
            ro_paths: (self.ro_paths.iter())
                .map(|p| p.to_string_lossy().into_owned())
                .collect(),
        }
    }
}

/// A backend: makes the engines of a round, and cleans up after a runner that was killed.
/// One per round, from the campaign ([`backend_for`]); shared by the runs of a wave,
/// which run at once on their own threads.
pub trait EngineBackend: Send + Sync {
    /// Which backend this is.
    fn kind(&self) -> BackendKind;

    /// An engine (not started) for the patched tree at `tree` whose engine config is
    /// `config`, logging to `log`. `image` is the image `referee build` recorded on the
    /// entry's submission: the Docker backend runs it by its id (`None`: the campaign's
    /// image, for the baseline and the scorer); the backends without images ignore it.
    fn engine(
        &self,
        tree: &Path,
        config: &Path,
        log: &Path,
        image: Option<&SubmissionImage>,
    ) -> Box<dyn Engine>;

    /// Stops whatever engines a killed runner of this round left running; returns how
    /// many it stopped. Runs before a round (re)starts.
    fn sweep_leftovers(&self) -> usize;
}

/// The backend the campaign names, with `settings` for every engine it makes.
///
/// Errors: for the Docker backend, [`EngineError::Docker`] when the daemon (`DOCKER_HOST`,
/// else the local socket) does not answer, is remote (a measured run is refused), or does
/// not have the campaign's image.
pub fn backend_for(
    backend: &Backend,
    settings: EngineSettings,
) -> Result<Box<dyn EngineBackend>, EngineError> {
    match backend {
        Backend::Builtin => Ok(Box::new(BuiltinBackend { settings })),
        Backend::Process { command, .. } => Ok(Box::new(ProcessBackend {
            settings,
            command: command.clone(),
        })),
        Backend::Docker(spec) => {
            let daemon = docker::Daemon::connect(None)?;
            let baseline = settings.baseline_image.clone();
            Ok(Box::new(docker::DockerBackend::new(
                daemon,
                spec,
                baseline.as_ref(),
                settings,
            )?))
        }
    }
}

/// The built-in engine's backend.
struct BuiltinBackend {
    settings: EngineSettings,
}

impl EngineBackend for BuiltinBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Builtin
    }

    fn engine(
        &self,
        tree: &Path,
        config: &Path,
        log: &Path,
        _image: Option<&SubmissionImage>,
    ) -> Box<dyn Engine> {
        let s = &self.settings;
        Box::new(BuiltinEngine::new(BuiltinOptions {
            program: s.program.clone(),
            config: config.to_path_buf(),
            memory_limit_mb: s.memory_limit_mb,
            threads: s.threads,
            served_model_name: s.served_model_name.clone(),
            tree: tree.to_path_buf(),
            log: log.to_path_buf(),
            pid_file: s.pid_file.clone(),
            confinement: s.confinement.clone(),
            readiness: s.readiness.clone(),
            decide: s.decide.clone(),
        }))
    }

    fn sweep_leftovers(&self) -> usize {
        kill_leftovers(&self.settings.pid_file)
    }
}

/// The process backend: the campaign's command line.
struct ProcessBackend {
    settings: EngineSettings,
    command: Vec<String>,
}

impl EngineBackend for ProcessBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Process
    }

    fn engine(
        &self,
        tree: &Path,
        config: &Path,
        log: &Path,
        _image: Option<&SubmissionImage>,
    ) -> Box<dyn Engine> {
        let s = &self.settings;
        Box::new(ProcessEngine::new(ProcessOptions {
            command: self.command.clone(),
            tree: tree.to_path_buf(),
            config: config.to_path_buf(),
            log: log.to_path_buf(),
            pid_file: s.pid_file.clone(),
            confinement: s.confinement.clone(),
            threads: s.threads,
            memory_limit_mb: s.memory_limit_mb,
            readiness: s.readiness.clone(),
            env: s.env.clone(),
        }))
    }

    fn sweep_leftovers(&self) -> usize {
        kill_leftovers(&self.settings.pid_file)
    }
}

/// One engine under test: a server of the OpenAI-compatible API, started, checked,
/// measured through its endpoint, and stopped.
pub trait Engine {
    /// The backend that runs it, as the receipt records it.
    fn backend(&self) -> BackendKind;

    /// What it ran, for the receipt: the command line with every placeholder
    /// substituted; `None` before [`Engine::start`] succeeded.
    fn command(&self) -> Option<&[String]>;

    /// How it was sandboxed and pinned, for the receipt; `None` before [`Engine::start`]
    /// succeeded.
    fn isolation(&self) -> Option<EngineIsolation>;

    /// Binds its listening socket and starts the engine on it, sandboxed and pinned, in
    /// its own process group.
    ///
    /// Errors: [`EngineError::Bind`] when the runner cannot bind the socket,
    /// [`EngineError::Spawn`] when the program cannot be started, [`EngineError::Io`] for
    /// its log, pid file or private tmp.
    fn start(&mut self) -> Result<(), EngineError>;

    /// Waits until a readiness route (`/health`, else `/v1/models`, or the profile's)
    /// answers 200, at most `deadline`.
    ///
    /// Errors: [`EngineError::DiedBeforeHealthy`] when the engine exits or the deadline
    /// passes (the engine is then stopped).
    fn wait_healthy(&mut self, deadline: Duration) -> Result<(), EngineError>;

    /// The base URL, e.g. `http://127.0.0.1:41234`, once known.
    fn endpoint(&self) -> Option<String>;

    /// The log file (stdout and stderr together).
    fn log_path(&self) -> &Path;

    /// Whether the process is still running.
    fn is_running(&mut self) -> bool;

    /// The container a Docker engine runs in, as inspected after its start, for the
    /// receipt; `None` for other backends and before [`Engine::start`] succeeded.
    fn docker(&self) -> Option<receipts::model::DockerRun> {
        None
    }

    /// How a Docker engine's container ended, from its inspected state (`State.ExitCode`,
    /// `State.OOMKilled`): the round types an out-of-memory kill from it. `None` while it
    /// runs, and for the other backends.
    fn container_exit(&self) -> Option<docker::ContainerExit> {
        None
    }

    /// Where its processes are on the host, to check that they stayed on their CPUs
    /// ([`affinity::cpu_escape`]); `None` before [`Engine::start`], after
    /// [`Engine::stop`], and for the Docker backend (the container's cpuset cgroup holds
    /// it there).
    fn processes(&self) -> Option<affinity::EngineProcesses> {
        None
    }

    /// Stops the engine and its whole process group (SIGTERM, then SIGKILL after a grace
    /// period), then fsyncs its log. Idempotent: a later call stops nothing and returns
    /// `Ok`.
    ///
    /// Errors: [`EngineError::Io`] naming the log when it could not be written in full or
    /// synced (the engine is stopped all the same); reported once, by the first call
    /// after it happened.
    fn stop(&mut self) -> Result<(), EngineError>;

    /// Gives the engine a secret of this run only, as its environment variable `name`
    /// (a `decide` campaign's bearer token, content/s1-pro-speed.md): set before
    /// [`Engine::start`], never part of the command the receipt records.
    ///
    /// Errors: [`EngineError::NoSecrets`] for a backend that cannot pass one.
    fn set_secret_env(&mut self, name: &str, value: &str) -> Result<(), EngineError> {
        let _ = (name, value);
        Err(EngineError::NoSecrets {
            backend: self.backend(),
        })
    }

    /// Shows the engine only its lane's GPUs in a parallel round (content/noise.md,
    /// Parallel passes): its environment variables `CUDA_VISIBLE_DEVICES` (`indices`,
    /// `2,3`) and `REFEREE_GPU_BUS_IDS` (their PCI bus ids, or `placeholder`), set
    /// before [`Engine::start`] through this run's environment
    /// ([`Engine::set_secret_env`]).
    ///
    /// Errors: [`EngineError::NoSecrets`] for a backend that cannot pass one.
    fn set_visible_gpus(&mut self, indices: &str, bus_ids: &str) -> Result<(), EngineError> {
        self.set_secret_env("CUDA_VISIBLE_DEVICES", indices)?;
        self.set_secret_env("REFEREE_GPU_BUS_IDS", bus_ids)
    }
}

/// The log tail of the log file at `path` by `receipts::rules::log_tail`'s rule (at most
/// 50 lines, 1 KiB a line, 8 KiB in all), reading only the file's last
/// [`LOG_TAIL_READ_BYTES`]: an engine's log can be hundreds of MiB, and one line of it
/// 16 MiB. Empty when the file cannot be read (a log that was never created): a tail is
/// evidence shown beside a typed reason, never the reason itself.
pub fn log_tail(path: &Path) -> Vec<String> {
    read_log_end(path).map_or_else(|_| Vec::new(), |end| log_tail_of_end(&end))
}

/// The last [`LOG_TAIL_READ_BYTES`] of the file at `path` (all of a shorter one).
fn read_log_end(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::{Seek, SeekFrom};
    let mut file = fs::File::open(path)?;
    let len = file.metadata()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(LOG_TAIL_READ_BYTES)))?;
    let mut end = Vec::new();
    file.take(LOG_TAIL_READ_BYTES).read_to_end(&mut end)?;
    Ok(end)
}

/// Options of the built-in backend.
#[derive(Clone, Debug)]
pub struct BuiltinOptions {
    /// The `referee` executable (usually `std::env::current_exe()`).
    pub program: PathBuf,
    /// The patched tree's engine config.
    pub config: PathBuf,
    /// `--memory-limit-mb`: the campaign's `hardware.memory_limit_mb`.
    pub memory_limit_mb: u64,
    /// `--threads`: [`CpuPlan::engine_threads`] of the campaign's
    /// `hardware.engine_threads` (at most the engine's CPUs).
    pub threads: u32,
    /// `--served-model-name`: the campaign's model name.
    pub served_model_name: String,
    /// The patched tree (read-only in the sandbox).
    pub tree: PathBuf,
    /// Where its log goes.
    pub log: PathBuf,
    /// Its pid file while it runs.
    pub pid_file: PathBuf,
    /// Its sandbox and CPUs.
    pub confinement: Confinement,
    /// Readiness routes ([`EngineSettings::readiness`]).
    pub readiness: Vec<String>,
    /// `--decide`: the declared decisions it serves ([`EngineSettings::decide`]).
    pub decide: Option<Vec<String>>,
}

/// `referee engine serve --config <tree>/engine.toml --listen-fd 3 …` as a child process,
/// on the socket the runner bound.
///
/// Not [`Send`] (see the crate docs: the thread that starts an engine must outlive it):
///
/// ```compile_fail
/// fn send<T: Send>() {}
/// send::<engines::BuiltinEngine>();
/// ```
#[derive(Debug)]
pub struct BuiltinEngine {
    options: BuiltinOptions,
    child: Option<ChildEngine>,
    /// This run's secrets ([`Engine::set_secret_env`]), in its environment only.
    secrets: Vec<(String, String)>,
}

impl BuiltinEngine {
    /// An engine not started yet.
    pub fn new(options: BuiltinOptions) -> Self {
        Self {
            options,
            child: None,
            secrets: Vec::new(),
        }
    }
}

impl Engine for BuiltinEngine {
    fn backend(&self) -> BackendKind {
        BackendKind::Builtin
    }

    fn set_secret_env(&mut self, name: &str, value: &str) -> Result<(), EngineError> {
        self.secrets.push((name.to_owned(), value.to_owned()));
        Ok(())
    }

    fn command(&self) -> Option<&[String]> {
        self.child.as_ref().map(|c| c.argv.as_slice())
    }

    fn isolation(&self) -> Option<EngineIsolation> {
        self.child
            .as_ref()
            .map(|_| self.options.confinement.record(self.options.threads))
    }

    fn start(&mut self) -> Result<(), EngineError> {
        let o = &self.options;
        let mut argv: Vec<String> = [
            o.program.to_string_lossy().into_owned(),
            "engine".into(),
            "serve".into(),
            "--config".into(),
            o.config.to_string_lossy().into_owned(),
            "--listen-fd".into(),
            LISTEN_FD.to_string(),
            "--memory-limit-mb".into(),
            o.memory_limit_mb.to_string(),
            "--threads".into(),
            o.threads.to_string(),
            "--served-model-name".into(),
            o.served_model_name.clone(),
        ]
        .into();
        if let Some(decisions) = &o.decide {
            argv.extend(["--decide".to_owned(), decisions.join(",")]);
        }
        let listener = bind_listener(loopback(0))?;
        self.child = Some(ChildEngine::spawn(
            &argv,
            &self.secrets,
            &o.readiness,
            &o.tree,
            &o.confinement,
            &listener,
            &o.log,
            &o.pid_file,
        )?);
        Ok(())
    }

    fn wait_healthy(&mut self, deadline: Duration) -> Result<(), EngineError> {
        let child = self.child.as_mut().ok_or(EngineError::NotStarted)?;
        child.wait_health(deadline)
    }

    fn endpoint(&self) -> Option<String> {
        self.child.as_ref().map(ChildEngine::endpoint)
    }

    fn log_path(&self) -> &Path {
        &self.options.log
    }

    fn is_running(&mut self) -> bool {
        self.child.as_mut().is_some_and(|c| c.exited().is_none())
    }

    fn processes(&self) -> Option<affinity::EngineProcesses> {
        self.child.as_ref().and_then(ChildEngine::processes)
    }

    fn stop(&mut self) -> Result<(), EngineError> {
        self.child.as_mut().map_or(Ok(()), ChildEngine::stop)
    }
}

/// Options of the process backend.
#[derive(Clone, Debug)]
pub struct ProcessOptions {
    /// Program and arguments; every [`api::Placeholders`] one is substituted: `{config}`
    /// and `{tree}` (absolute), `{listen_fd}` (3), `{port}` (the port of the socket it
    /// inherits, for its messages: the engine cannot bind it), `{threads}`,
    /// `{memory_mb}`.
    pub command: Vec<String>,
    /// The patched tree.
    pub tree: PathBuf,
    /// The patched tree's engine config.
    pub config: PathBuf,
    /// Where its log goes.
    pub log: PathBuf,
    /// Its pid file while it runs.
    pub pid_file: PathBuf,
    /// Its sandbox and CPUs.
    pub confinement: Confinement,
    /// `{threads}` and `REFEREE_THREADS`: compute threads it may use.
    pub threads: u32,
    /// `{memory_mb}` and `REFEREE_MEMORY_MB`: `hardware.memory_limit_mb`.
    pub memory_limit_mb: u64,
    /// Readiness routes ([`EngineSettings::readiness`]).
    pub readiness: Vec<String>,
    /// Environment variables of its command, placeholders substituted in values.
    pub env: std::collections::BTreeMap<String, String>,
}

/// Any command serving the OpenAI-compatible API on the listening socket it inherits as
/// fd 3 (`LISTEN_FDS=1`, `LISTEN_PID`: systemd's socket activation).
///
/// Not [`Send`] (see the crate docs: the thread that starts an engine must outlive it):
///
/// ```compile_fail
/// fn send<T: Send>() {}
/// send::<engines::ProcessEngine>();
/// ```
#[derive(Debug)]
pub struct ProcessEngine {
    options: ProcessOptions,
    child: Option<ChildEngine>,
    /// This run's secrets ([`Engine::set_secret_env`]), in its environment only.
    secrets: Vec<(String, String)>,
}

impl ProcessEngine {
    /// An engine not started yet.
    pub fn new(options: ProcessOptions) -> Self {
        Self {
            options,
            child: None,
            secrets: Vec::new(),
        }
    }
}

impl Engine for ProcessEngine {
    fn backend(&self) -> BackendKind {
        BackendKind::Process
    }

    fn set_secret_env(&mut self, name: &str, value: &str) -> Result<(), EngineError> {
        self.secrets.push((name.to_owned(), value.to_owned()));
        Ok(())
    }

    fn command(&self) -> Option<&[String]> {
        self.child.as_ref().map(|c| c.argv.as_slice())
    }

    fn isolation(&self) -> Option<EngineIsolation> {
        // Told as `{threads}` and `REFEREE_THREADS`.
        self.child
            .as_ref()
            .map(|_| self.options.confinement.record(self.options.threads))
    }

    fn start(&mut self) -> Result<(), EngineError> {
        let o = &self.options;
        if o.command.is_empty() {
            return Err(EngineError::Spawn {
                program: String::new(),
                source: std::io::Error::other("empty command"),
            });
        }
        let listener = bind_listener(loopback(0))?;
        let port = listener
            .local_addr()
            .map_err(|source| EngineError::Bind {
                addr: loopback(0),
                source,
            })?
            .port();
        let placeholders =
            api::Placeholders::new(&o.tree, &o.config, port, o.threads, o.memory_limit_mb);
        let argv: Vec<String> = o
            .command
            .iter()
            .map(|arg| placeholders.substitute(arg))
            .collect();
        let mut env = placeholders.environment(&o.env);
        env.extend(self.secrets.iter().cloned());
        self.child = Some(ChildEngine::spawn(
            &argv,
            &env,
            &o.readiness,
            &o.tree,
            &o.confinement,
            &listener,
            &o.log,
            &o.pid_file,
        )?);
        Ok(())
    }

    fn wait_healthy(&mut self, deadline: Duration) -> Result<(), EngineError> {
        let child = self.child.as_mut().ok_or(EngineError::NotStarted)?;
        child.wait_health(deadline)
    }

    fn endpoint(&self) -> Option<String> {
        self.child.as_ref().map(ChildEngine::endpoint)
    }

    fn log_path(&self) -> &Path {
        &self.options.log
    }

    fn is_running(&mut self) -> bool {
        self.child.as_mut().is_some_and(|c| c.exited().is_none())
    }

    fn processes(&self) -> Option<affinity::EngineProcesses> {
        self.child.as_ref().and_then(ChildEngine::processes)
    }

    fn stop(&mut self) -> Result<(), EngineError> {
        self.child.as_mut().map_or(Ok(()), ChildEngine::stop)
    }
}

/// Serialises this process's edits of a round's pid file: the engines of a wave start
/// and stop at once, each adding or removing its own line.
static PID_FILE: Mutex<()> = Mutex::new(());

/// Removes the line of the group led by `pid` from `pid_file` (the engine stopped), and
/// the file once no engine is left in it. Best effort: a line left behind names a group
/// that [`kill_leftovers`] finds gone, or running another program, and leaves alone.
fn forget_pid(pid_file: &Path, pid: u32) {
    let _pid_file = PID_FILE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let Ok(text) = fs::read_to_string(pid_file) else {
        return;
    };
    let prefix = format!("{pid} ");
    let kept: String = (text.lines())
        .filter(|line| !line.starts_with(&prefix))
        .map(|line| format!("{line}\n"))
        .collect();
    // Best effort, as the doc says: a failed removal or rewrite leaves a stale line.
    if kept.is_empty() {
        let _ = fs::remove_file(pid_file);
    } else {
        let _ = receipts::fsutil::write_atomic(pid_file, kept.as_bytes(), 0o644);
    }
}

/// Kills the process groups named in `pid_file` (left by a runner that was killed) and
/// removes the file. A group is killed only if its leader still runs `program`, so a
/// recycled pid is left alone. Returns how many groups were killed.
pub fn kill_leftovers(pid_file: &Path) -> usize {
    let Ok(text) = fs::read_to_string(pid_file) else {
        return 0;
    };
    let mut killed = 0;
    for line in text.lines() {
        let Some((pid, program)) = line.split_once(' ') else {
            continue;
        };
        let Ok(pid) = pid.parse::<i32>() else {
            continue;
        };
        let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let first = cmdline.split(|b| *b == 0).next().unwrap_or_default();
        if pid > 1 && first == program.as_bytes() {
            // SAFETY: kill(2) with a negative pid signals that process group; no memory
            // is involved.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            killed += 1;
        }
    }
    let _ = fs::remove_file(pid_file);
    killed
}

/// A spawned engine process: its own process group, output to a log file.
///
/// Not `Send`: `PR_SET_PDEATHSIG` ties the child to the thread that spawned it, which
/// must outlive it; keeping the engine on that thread (and stopping it on drop) makes
/// sure of that.
#[derive(Debug)]
struct ChildEngine {
    child: Child,
    /// The command line as spawned.
    argv: Vec<String>,
    /// The address of the socket it inherited.
    addr: SocketAddr,
    /// Its readiness routes.
    readiness: Vec<String>,
    /// Its private `HOME`/`TMPDIR` on the host when unsandboxed (bubblewrap's is a
    /// tmpfs that goes with the sandbox), or its binds' staging directory when the
    /// runner is root: removed when it stops ([`Launch::host_dir`]).
    host_dir: Option<tempfile::TempDir>,
    /// The sandbox's pid namespace (bubblewrap's `--info-fd`): empty once it stops.
    pid_namespace: Option<u64>,
    log: PathBuf,
    /// The log, kept open to fsync it when the engine stops.
    log_file: fs::File,
    pid_file: PathBuf,
    /// The log under its byte budget, fed by both pumps.
    output: Arc<Mutex<BoundedLog>>,
    /// Copy stdout and stderr into `output`; each returns the first error writing it.
    pumps: Vec<thread::JoinHandle<Option<std::io::Error>>>,
    stopped: bool,
    /// The first error of its teardown (writing or syncing the log, a survivor, a
    /// leftover), until [`ChildEngine::stop`] reports it.
    teardown_error: Option<EngineError>,
    _not_send: std::marker::PhantomData<*const ()>,
}

impl ChildEngine {
    /// Spawns `argv` (program first) in `confinement`'s sandbox, pinned to its engine
    /// CPUs, in a new process group, with `listener` as fd [`LISTEN_FD`] and stdout and
    /// stderr into `log`.
    ///
    /// Call it on a thread that outlives the engine (`PR_SET_PDEATHSIG` is per thread);
    /// `ChildEngine` not being `Send` keeps it there.
    ///
    /// Errors: when anything fails after the spawn (recording its pid, starting the thread
    /// that copies its stdout), the child's group is killed and the child reaped before
    /// the error is returned: nothing is left running that no pid file names.
    #[allow(clippy::too_many_arguments)]
    fn spawn(
        argv: &[String],
        env: &[(String, String)],
        readiness: &[String],
        tree: &Path,
        confinement: &Confinement,
        listener: &TcpListener,
        log: &Path,
        pid_file: &Path,
    ) -> Result<Self, EngineError> {
        let io = |action, path: &Path| {
            let path = path.to_path_buf();
            move |source| {
                EngineError::Io(IoError {
                    action,
                    path,
                    source,
                })
            }
        };
        let addr = listener.local_addr().map_err(|source| EngineError::Bind {
            addr: loopback(0),
            source,
        })?;
        if let Some(parent) = log.parent() {
            fs::create_dir_all(parent).map_err(io("creating", parent))?;
        }
        let log_file = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(io("opening", log))?;
        let sync_handle = log_file.try_clone().map_err(io("opening", log))?;
        // The engine's program, when named by an absolute path, is shown at that path
        // (a relative one is inside the tree, a bare name on the system's `PATH`).
        let spec = SandboxSpec {
            tree: tree.to_path_buf(),
            program: argv.first().map(PathBuf::from).filter(|p| p.is_absolute()),
            ro_paths: confinement.ro_paths.clone(),
            hidden: confinement.hidden.clone(),
            rw_dir: None,
        };
        let activated: Vec<String> = ["/bin/sh", "-c", LISTEN_PID_TRAMPOLINE, "referee-engine"]
            .into_iter()
            .map(str::to_owned)
            .chain(argv.iter().cloned())
            .collect();
        let Launch {
            mut command,
            host_dir,
            info,
            passed,
            ..
        } = confinement.sandbox.command(&spec, &activated)?;
        command
            .envs(env.iter().map(|(k, v)| (k, v)))
            .env("LISTEN_FDS", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let listen_fd = listener.as_raw_fd();
        let mask = confinement.cpus.engine_mask();
        // SAFETY: the closure runs between fork and exec and only calls prctl(2),
        // sched_setaffinity(2), dup2(2) and fcntl(2), which are async-signal-safe, on
        // values prepared before the fork.
        unsafe {
            command.pre_exec(move || {
                #[cfg(target_os = "linux")]
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                if let Some(mask) = mask.as_ref()
                    && libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), mask) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                // dup2 clears close-on-exec on the copy; a socket already at fd 3 keeps
                // its flag, so clear it there.
                let rc = if listen_fd == LISTEN_FD {
                    libc::fcntl(LISTEN_FD, libc::F_SETFD, 0)
                } else {
                    libc::dup2(listen_fd, LISTEN_FD)
                };
                if rc < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let program = command.get_program().to_string_lossy().into_owned();
        // The group leader's argv[0] once it runs: the sandbox tool, which forks the
        // engine; unsandboxed, the trampoline execs into the engine's own program.
        let leader = match confinement.sandbox.kind() {
            SandboxKind::Trusted | SandboxKind::Unsandboxed => {
                argv.first().cloned().unwrap_or_default()
            }
            SandboxKind::Bwrap | SandboxKind::Unshare | SandboxKind::Docker => program.clone(),
        };
        let argv: Vec<String> = std::iter::once(command.get_program())
            .chain(command.get_args())
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect();
        let spawned = command.spawn();
        // bubblewrap holds its own copies now; the info pipe reaches its end only once
        // ours of the write end is closed.
        drop(passed);
        let mut child = spawned.map_err(|source| EngineError::Spawn {
            program: program.clone(),
            source,
        })?;
        // The sandbox's pid namespace: once the engine is stopped, no process may be
        // left in it. bubblewrap writes it once the sandbox is set up, and closes it.
        let pid_namespace = info.and_then(|mut info| sandbox::info_pid_namespace(&mut info));
        // The pid file lets a resumed round kill this group if the runner dies, naming
        // the leader's argv[0] so a recycled pid is left alone.
        let recorded = (|| {
            let _pid_file = PID_FILE
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(parent) = pid_file.parent() {
                fs::create_dir_all(parent).map_err(io("creating", parent))?;
            }
            let mut pids = fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(pid_file)
                .map_err(io("opening", pid_file))?;
            writeln!(pids, "{} {leader}", child.id()).map_err(io("writing", pid_file))
        })();
        if let Err(e) = recorded {
            kill_and_reap(&mut child);
            return Err(e);
        }
        // Both streams through one budget ([`log_budget`]): the engine's output is a
        // miner's, and its size must not become the bundle's.
        let output = Arc::new(Mutex::new(BoundedLog::new(log_file, confinement.log_bytes)));
        let streams: [(&str, Option<Box<dyn Read + Send>>); 2] = [
            (
                "engine-stdout",
                child
                    .stdout
                    .take()
                    .map(|s| Box::new(s) as Box<dyn Read + Send>),
            ),
            (
                "engine-stderr",
                child
                    .stderr
                    .take()
                    .map(|s| Box::new(s) as Box<dyn Read + Send>),
            ),
        ];
        let mut pumps = Vec::new();
        for (name, stream) in streams {
            let Some(stream) = stream else { continue };
            let output = Arc::clone(&output);
            let spawned = thread::Builder::new()
                .name(name.into())
                .spawn(move || copy_output(stream, &output));
            match spawned {
                Ok(handle) => pumps.push(handle),
                Err(source) => {
                    kill_and_reap(&mut child);
                    let _ = fs::remove_file(pid_file);
                    return Err(EngineError::Spawn { program, source });
                }
            }
        }
        Ok(Self {
            child,
            argv,
            addr,
            readiness: readiness.to_vec(),
            host_dir,
            pid_namespace,
            log: log.to_path_buf(),
            log_file: sync_handle,
            pid_file: pid_file.to_path_buf(),
            output,
            pumps,
            stopped: false,
            teardown_error: None,
            _not_send: std::marker::PhantomData,
        })
    }

    /// Where its processes are: the sandbox's pid namespace, else its process group;
    /// `None` once it stopped.
    fn processes(&self) -> Option<affinity::EngineProcesses> {
        if self.stopped {
            return None;
        }
        match self.pid_namespace {
            Some(namespace) => Some(affinity::EngineProcesses::PidNamespace(namespace)),
            None => i32::try_from(self.child.id())
                .ok()
                .map(affinity::EngineProcesses::ProcessGroup),
        }
    }

    /// The base URL of its socket, `http://127.0.0.1:<port>`.
    fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    fn wait_exit(&mut self, within: Duration) -> Option<ExitStatus> {
        let until = Instant::now() + within;
        while Instant::now() < until {
            if let Some(status) = self.exited() {
                return Some(status);
            }
            thread::sleep(Duration::from_millis(10));
        }
        None
    }

    /// Polls `GET /health` on its socket until 200, the process exits, or `deadline`
    /// passes.
    fn wait_health(&mut self, deadline: Duration) -> Result<(), EngineError> {
        let until = Instant::now() + deadline;
        loop {
            if let Some(status) = self.exited() {
                return Err(self.died(status.to_string()));
            }
            if api::ready(self.addr, &self.readiness) {
                return Ok(());
            }
            if Instant::now() >= until {
                let detail = format!(
                    "no answer on {} within {} s",
                    api::routes_text(&self.readiness),
                    deadline.as_secs()
                );
                return Err(self.died(detail));
            }
            thread::sleep(Duration::from_millis(HEALTH_POLL_MS));
        }
    }

    /// Stops the engine and returns the disqualification error with its log tail. An
    /// error keeping the log waits for [`ChildEngine::stop`].
    fn died(&mut self, detail: String) -> EngineError {
        self.halt();
        EngineError::DiedBeforeHealthy {
            detail,
            log_tail: log_tail(&self.log),
        }
    }

    /// Stops the engine ([`ChildEngine::halt`]) and reports, once, the first error of
    /// its teardown.
    fn stop(&mut self) -> Result<(), EngineError> {
        self.halt();
        self.teardown_error.take().map_or(Ok(()), Err)
    }

    /// Kills the group, reaps the child, waits for the whole log and fsyncs it; keeps the
    /// first error writing or syncing the log for [`ChildEngine::stop`]. Idempotent.
    fn halt(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        if let Ok(pid) = i32::try_from(self.child.id()) {
            // SAFETY: signalling our child's process group; no memory is involved.
            unsafe { libc::kill(-pid, libc::SIGTERM) };
            if self
                .wait_exit(Duration::from_millis(STOP_GRACE_MS))
                .is_none()
            {
                // SAFETY: as above.
                unsafe { libc::kill(-pid, libc::SIGKILL) };
            }
            // The group leader may be gone while children linger: kill the group anyway.
            // SAFETY: as above.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
        let _ = self.child.wait();
        let mut error = None;
        for pump in self.pumps.drain(..) {
            let result = match pump.join() {
                Ok(written) => written.map(IoError::at("writing the engine log", &self.log)),
                Err(_) => Some(IoError {
                    action: "writing the engine log",
                    path: self.log.clone(),
                    source: std::io::Error::other("the thread copying its output panicked"),
                }),
            };
            error = error.or(result);
        }
        let finished = match self.output.lock() {
            Ok(mut output) => output.finish().err(),
            Err(_) => Some(std::io::Error::other("the engine log's lock was poisoned")),
        };
        if let Some(e) = finished
            && error.is_none()
        {
            error = Some(IoError::at("writing the engine log", &self.log)(e));
        }
        if let Err(e) = self.log_file.sync_all()
            && error.is_none()
        {
            error = Some(IoError::at("syncing the engine log", &self.log)(e));
        }
        let mut error = error.map(EngineError::Io);
        if let Err(e) = self.check_gone() {
            error = error.or(Some(e));
        }
        if let Some(dir) = self.host_dir.take() {
            let path = dir.path().to_path_buf();
            if let Err(e) = dir.close() {
                error = error.or(Some(EngineError::Io(IoError::at(
                    "removing the engine's host directory",
                    &path,
                )(e))));
            }
        }
        if self.teardown_error.is_none() {
            self.teardown_error = error;
        }
        forget_pid(&self.pid_file, self.child.id());
    }

    /// Checks that no process of the engine is left: none in the sandbox's pid namespace,
    /// else (unsandboxed) none in its process group, waiting at most the stop grace for
    /// the kernel to finish killing them.
    ///
    /// Errors: [`EngineError::Survived`] naming the pids still alive.
    fn check_gone(&self) -> Result<(), EngineError> {
        let group = i32::try_from(self.child.id()).unwrap_or(0);
        let alive = || match self.pid_namespace {
            Some(namespace) => sandbox::processes_in(namespace),
            // SAFETY: kill(2) with signal 0 only checks that the group exists.
            None if group > 0 && unsafe { libc::kill(-group, 0) } == 0 => vec![-group],
            None => Vec::new(),
        };
        let until = Instant::now() + Duration::from_millis(STOP_GRACE_MS);
        loop {
            let pids = alive();
            if pids.is_empty() {
                return Ok(());
            }
            if Instant::now() >= until {
                return Err(EngineError::Survived { pids });
            }
            thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for ChildEngine {
    fn drop(&mut self) {
        self.halt();
    }
}

/// Kills a just-spawned child's process group and reaps it.
fn kill_and_reap(child: &mut Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: signalling our child's process group; no memory is involved.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Copies one of the engine's output streams into its log. Returns the first error
/// writing the log (it goes on reading after one, so the engine never blocks on a full
/// pipe).
fn copy_output(mut stream: impl Read, output: &Mutex<BoundedLog>) -> Option<std::io::Error> {
    let mut buffer = [0u8; 8192];
    let mut error = None;
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => {
                let written = match output.lock() {
                    Ok(mut log) => log.write(&buffer[..n]),
                    Err(_) => Err(std::io::Error::other("the engine log's lock was poisoned")),
                };
                if let Err(e) = written
                    && error.is_none()
                {
                    error = Some(e);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    error
}

/// `127.0.0.1:<port>`.
fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, port))
}

/// Binds an engine's listening socket at `addr` in the runner (port 0: any free one).
/// It is held from here on, so no other process can take it before the engine serves.
///
/// Errors: [`EngineError::Bind`] — the host's fault (another process holds the port),
/// never the engine's.
pub fn bind_listener(addr: SocketAddr) -> Result<TcpListener, EngineError> {
    TcpListener::bind(addr).map_err(|source| EngineError::Bind { addr, source })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// Unsandboxed and unpinned: these tests are about the process's life; the sandbox
    /// has its own (`tests/sandbox.rs`).
    fn trusted() -> Confinement {
        Confinement {
            sandbox: Sandbox::unsandboxed(SandboxKind::Trusted),
            hidden: Vec::new(),
            ro_paths: Vec::new(),
            cpus: CpuPlan::split(&[0]),
            log_bytes: receipts::model::Limits::ENGINE_LOG_BYTES,
        }
    }

    fn options(dir: &Path, command: Vec<String>) -> ProcessOptions {
        ProcessOptions {
            command,
            tree: dir.to_path_buf(),
            config: dir.join("engine.toml"),
            log: dir.join("engine.log"),
            pid_file: dir.join("engines.pid"),
            confinement: trusted(),
            threads: 1,
            memory_limit_mb: 512,
            readiness: vec!["/health".into(), "/v1/models".into()],
            env: std::collections::BTreeMap::new(),
        }
    }

    fn process(dir: &Path, script: &str) -> ProcessEngine {
        ProcessEngine::new(options(dir, vec!["sh".into(), "-c".into(), script.into()]))
    }

    /// Issue 39: a run's leftover that cannot be removed fails the engine's stop, naming
    /// it, never ignored. Unsandboxed (bubblewrap's tmp is a tmpfs that goes with it),
    /// the engine makes its private tmp unremovable: as root a mount inside it, as
    /// another user a directory it may not write.
    #[test]
    fn a_leftover_that_cannot_be_removed_fails_the_stop() {
        // SAFETY: geteuid(2) reads this process's credentials.
        let root = unsafe { libc::geteuid() } == 0;
        let dir = tempfile::tempdir().unwrap();
        let script = if root {
            "mkdir \"$TMPDIR/m\" && mount -t tmpfs leftover \"$TMPDIR/m\" && echo ok >&2; sleep 1000"
        } else {
            "mkdir \"$TMPDIR/d\" && touch \"$TMPDIR/d/f\" && chmod 500 \"$TMPDIR/d\" && echo ok >&2; \
             sleep 1000"
        };
        let mut engine = process(dir.path(), script);
        engine.start().unwrap();
        let log = dir.path().join("engine.log");
        let until = Instant::now() + Duration::from_secs(30);
        while std::fs::read_to_string(&log).unwrap_or_default() != "ok\n" {
            assert!(
                Instant::now() < until,
                "{:?}",
                std::fs::read_to_string(&log)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let error = engine.stop().unwrap_err();
        let EngineError::Io(IoError { action, path, .. }) = &error else {
            panic!("{error:?}");
        };
        assert_eq!(*action, "removing the engine's host directory");
        assert!(
            path.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("referee-engine-")),
            "{path:?}"
        );
        // Reported once: a second stop is clean.
        assert!(engine.stop().is_ok());
        // Clean up what the test made.
        let undone = if root {
            Command::new("umount").arg(path.join("m")).status()
        } else {
            Command::new("chmod")
                .arg("700")
                .arg(path.join("d"))
                .status()
        };
        assert!(undone.unwrap().success());
        std::fs::remove_dir_all(path).unwrap();
    }

    /// Issue 39's attack: 80 MiB on stderr. The log keeps its first and last 32 MiB
    /// around one marker line naming what went and the whole stream's sha256.
    #[test]
    fn an_engine_flooding_stderr_keeps_a_bounded_log() {
        use receipts::model::Limits;
        use receipts::rules::engine_log::marker_line;
        const ENGINE_LOG_BYTES: u64 = Limits::ENGINE_LOG_BYTES;
        use sha2::{Digest, Sha256};
        let dir = tempfile::tempdir().unwrap();
        let script = "head -c 83886080 /dev/zero >&2; exit 4";
        let mut engine = process(dir.path(), script);
        engine.start().unwrap();
        match engine.wait_healthy(Duration::from_secs(120)) {
            Err(EngineError::DiedBeforeHealthy { detail, log_tail }) => {
                assert_eq!(detail, "exit status: 4");
                assert_eq!(log_tail.len(), 1);
            }
            other => panic!("expected DiedBeforeHealthy, got {other:?}"),
        }
        let digest = hex::encode(Sha256::digest(vec![0u8; 80 << 20]));
        let marker = marker_line(16 << 20, 80 << 20, &digest);
        let log = std::fs::read(dir.path().join("engine.log")).unwrap();
        assert_eq!(log.len() as u64, ENGINE_LOG_BYTES + marker.len() as u64);
        let half = usize::try_from(ENGINE_LOG_BYTES / 2).unwrap();
        assert!(log[..half].iter().all(|&b| b == 0));
        assert_eq!(&log[half..half + marker.len()], marker.as_bytes());
        assert!(log[half + marker.len()..].iter().all(|&b| b == 0));
    }

    /// Issue 39's attack: one 16 MiB line, then death. The tail is one bounded line, read
    /// from the log's last 64 KiB; the log itself keeps every byte.
    #[test]
    fn a_sixteen_mebibyte_line_gives_a_bounded_tail() {
        use receipts::rules::log_tail::{CUT_BEFORE, LOG_TAIL_BYTES};
        let dir = tempfile::tempdir().unwrap();
        let script = "head -c 16777216 /dev/zero | tr '\\0' A >&2; exit 3";
        let mut engine = process(dir.path(), script);
        engine.start().unwrap();
        match engine.wait_healthy(Duration::from_secs(60)) {
            Err(EngineError::DiedBeforeHealthy { detail, log_tail }) => {
                assert_eq!(detail, "exit status: 3");
                assert_eq!(log_tail.len(), 1);
                let line = &log_tail[0];
                assert!(line.starts_with(CUT_BEFORE), "{}", &line[..40]);
                assert!(
                    line.ends_with("… [64512 bytes cut]"),
                    "{}",
                    &line[line.len() - 40..]
                );
                assert!(line.len() <= LOG_TAIL_BYTES);
            }
            other => panic!("expected DiedBeforeHealthy, got {other:?}"),
        }
        assert_eq!(
            std::fs::metadata(dir.path().join("engine.log"))
                .unwrap()
                .len(),
            16 << 20
        );
    }

    #[test]
    fn an_engine_that_exits_is_died_before_healthy_with_its_log_tail() {
        let dir = tempfile::tempdir().unwrap();
        // Everything on stderr: stdout and stderr reach the log through different paths,
        // so their relative order is not fixed.
        let script = "for i in $(seq 1 60); do echo line $i >&2; done; echo 'CUDA out of memory' >&2; exit 1";
        let mut engine = process(dir.path(), script);
        engine.start().unwrap();
        match engine.wait_healthy(Duration::from_secs(20)) {
            Err(EngineError::DiedBeforeHealthy { detail, log_tail }) => {
                assert_eq!(detail, "exit status: 1");
                assert_eq!(log_tail.len(), LOG_TAIL_LINES);
                assert_eq!(
                    log_tail.last().map(String::as_str),
                    Some("CUDA out of memory")
                );
                assert_eq!(log_tail[0], "line 12");
            }
            other => panic!("expected DiedBeforeHealthy, got {other:?}"),
        }
        // The pid file is gone once the engine is stopped.
        assert!(!dir.path().join("engines.pid").exists());
    }

    #[test]
    fn an_engine_that_never_answers_is_stopped_at_the_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let mut engine = process(dir.path(), "echo port {port}; exec sleep 30");
        engine.start().unwrap();
        let err = engine.wait_healthy(Duration::from_millis(300)).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("engine died before becoming healthy (no answer on /health"),
            "{err}"
        );
        assert!(!engine.is_running());
        let log = fs::read_to_string(dir.path().join("engine.log")).unwrap();
        let port = engine
            .endpoint()
            .unwrap()
            .rsplit(':')
            .next()
            .unwrap()
            .to_owned();
        assert_eq!(log, format!("port {port}\n"));
    }

    #[test]
    fn a_healthy_server_is_found_and_its_group_killed_on_stop() {
        let dir = tempfile::tempdir().unwrap();
        // A one-shot HTTP server answering 200 forever, with a grandchild in the group.
        // It serves on the socket it inherits (fd 3), as socket activation says.
        let python = "import http.server,os,socket,sys\nclass H(http.server.BaseHTTPRequestHandler):\n  def do_GET(s):\n    s.send_response(200); s.end_headers()\n  def log_message(s,*a): pass\nassert os.environ['LISTEN_FDS'] == '1' and os.environ['LISTEN_PID'] == str(os.getpid())\nsrv = http.server.HTTPServer(('127.0.0.1', 0), H, bind_and_activate=False)\nsrv.socket = socket.socket(fileno=3)\nsrv.serve_forever()\n";
        fs::write(dir.path().join("server.py"), python).unwrap();
        // python3 serves /health here: without it this test fails (`.ci/run` has it).
        Command::new("python3")
            .arg("-c")
            .arg("pass")
            .status()
            .expect("python3, which serves /health in this test");
        let mut engine = process(dir.path(), "sleep 30 & exec python3 server.py");
        engine.start().unwrap();
        engine.wait_healthy(Duration::from_secs(20)).unwrap();
        assert!(dir.path().join("engines.pid").exists());
        engine.stop().unwrap();
        assert!(!engine.is_running());
        assert!(!dir.path().join("engines.pid").exists());
    }

    #[test]
    fn leftovers_are_killed_only_when_the_program_matches() {
        let dir = tempfile::tempdir().unwrap();
        let mut sleeper = Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        // Until exec, /proc shows the forked test binary: wait for `sleep`.
        let cmdline = format!("/proc/{}/cmdline", sleeper.id());
        let started = Instant::now();
        while !fs::read(&cmdline).unwrap().starts_with(b"sleep\0") {
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "sleep never started"
            );
            thread::sleep(Duration::from_millis(5));
        }
        let program = "sleep";
        let pid_file = dir.path().join("engines.pid");
        fs::write(&pid_file, format!("{} /not/this/program\n", sleeper.id())).unwrap();
        assert_eq!(kill_leftovers(&pid_file), 0);
        assert!(sleeper.try_wait().unwrap().is_none());
        fs::write(&pid_file, format!("{} {program}\n", sleeper.id())).unwrap();
        assert_eq!(kill_leftovers(&pid_file), 1);
        assert!(sleeper.wait().unwrap().code().is_none());
        assert!(!pid_file.exists());
    }

    /// The processes whose command line holds `marker`.
    fn processes_with(marker: &str) -> Vec<i32> {
        let mut found = Vec::new();
        for entry in fs::read_dir("/proc").unwrap().flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|p| p.parse::<i32>().ok())
            else {
                continue;
            };
            let cmdline = fs::read(entry.path().join("cmdline")).unwrap_or_default();
            let stat = fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            let zombie = stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z');
            if !zombie
                && cmdline
                    .split(|b| *b == 0)
                    .any(|arg| arg == marker.as_bytes())
            {
                found.push(pid);
            }
        }
        found
    }

    /// Regression: when the pid file could not be written after the spawn, the error was
    /// returned and the child left running, named by no pid file.
    #[test]
    fn an_engine_whose_pid_file_cannot_be_written_is_killed_and_reaped() {
        let dir = tempfile::tempdir().unwrap();
        // A sleep long and odd enough to be this test's own.
        let marker = format!("{}.{}", 3000 + std::process::id() % 1000, 271_828);
        let not_a_dir = dir.path().join("not-a-dir");
        fs::write(&not_a_dir, b"").unwrap();
        let mut engine = ProcessEngine::new(ProcessOptions {
            pid_file: not_a_dir.join("engines.pid"),
            ..options(dir.path(), vec!["sleep".into(), marker.clone()])
        });
        let err = engine.start().unwrap_err();
        assert!(
            matches!(&err, EngineError::Io(e) if e.path == not_a_dir),
            "{err:?}"
        );
        // Give a leaked child time to exec, then look for it.
        thread::sleep(Duration::from_millis(300));
        let leaked = processes_with(&marker);
        for pid in &leaked {
            // SAFETY: killing the leaked child this test spawned; no memory is involved.
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
        assert!(leaked.is_empty(), "leaked engine processes {leaked:?}");
        assert!(!engine.is_running());
        engine.stop().unwrap();
    }

    /// An engine log that cannot be written in full fails the stop, naming the log, once.
    #[test]
    fn a_log_that_cannot_be_written_fails_the_stop() {
        let dir = tempfile::tempdir().unwrap();
        let mut engine = ProcessEngine::new(ProcessOptions {
            // Every write fails with ENOSPC.
            log: PathBuf::from("/dev/full"),
            ..options(
                dir.path(),
                vec!["sh".into(), "-c".into(), "echo hello; exec sleep 30".into()],
            )
        });
        engine.start().unwrap();
        thread::sleep(Duration::from_millis(300));
        let err = engine.stop().unwrap_err();
        match &err {
            EngineError::Io(e) => {
                assert_eq!(e.path, Path::new("/dev/full"));
                assert_eq!(e.action, "writing the engine log");
            }
            other => panic!("expected an I/O error on the log, got {other:?}"),
        }
        assert!(!engine.is_running());
        // Reported once; a second stop has nothing left to do.
        engine.stop().unwrap();
    }

    /// Unsandboxed, the trampoline execs into the engine: the pid file names the engine's
    /// program, so a resumed round still finds and kills it.
    #[test]
    fn an_unsandboxed_engine_is_named_by_its_own_program() {
        let dir = tempfile::tempdir().unwrap();
        let mut engine = ProcessEngine::new(options(dir.path(), vec!["sleep".into(), "30".into()]));
        engine.start().unwrap();
        let pid_file = dir.path().join("engines.pid");
        let line = fs::read_to_string(&pid_file).unwrap();
        let (pid, program) = line.trim().split_once(' ').unwrap();
        assert_eq!(program, "sleep");
        let cmdline = format!("/proc/{pid}/cmdline");
        let started = Instant::now();
        while !fs::read(&cmdline)
            .unwrap_or_default()
            .starts_with(b"sleep\0")
        {
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "sleep never started"
            );
            thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(kill_leftovers(&pid_file), 1);
        let started = Instant::now();
        while engine.is_running() {
            assert!(started.elapsed() < Duration::from_secs(5), "not killed");
            thread::sleep(Duration::from_millis(5));
        }
        engine.stop().unwrap();
    }

    /// Regression (issue 50): the first engine of a wave to stop removed the whole pid
    /// file, so a killed runner's sweep missed the engines still running beside it.
    #[test]
    fn a_stopped_engine_forgets_only_its_own_pid() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("engines.pids");
        fs::write(&pid_file, "41 /bin/a\n4100 /bin/b\n").unwrap();
        forget_pid(&pid_file, 41);
        assert_eq!(fs::read_to_string(&pid_file).unwrap(), "4100 /bin/b\n");
        forget_pid(&pid_file, 4100);
        assert!(!pid_file.exists());
    }

    /// The port is the runner's: held by another process, it is the host's fault
    /// (`infra_failed`), found by the runner's own bind.
    #[test]
    fn a_port_held_by_another_process_is_a_bind_error() {
        let held = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = held.local_addr().unwrap();
        match bind_listener(addr) {
            Err(EngineError::Bind { addr: a, source }) => {
                assert_eq!(a, addr);
                assert_eq!(source.kind(), std::io::ErrorKind::AddrInUse);
            }
            other => panic!("expected a bind error, got {other:?}"),
        }
    }

    /// An engine saying the address is in use proves nothing: the runner holds a free
    /// socket for it, so its exit is its own fault (disqualified, never `infra_failed`).
    #[test]
    fn an_engine_claiming_address_in_use_died_before_healthy() {
        let dir = tempfile::tempdir().unwrap();
        let script = "echo \"OSError: [Errno 98] Address already in use: port {port}\" >&2; exit 1";
        let mut engine = process(dir.path(), script);
        engine.start().unwrap();
        let port = engine
            .endpoint()
            .unwrap()
            .rsplit(':')
            .next()
            .unwrap()
            .to_owned();
        match engine.wait_healthy(Duration::from_secs(20)) {
            Err(EngineError::DiedBeforeHealthy { detail, log_tail }) => {
                assert_eq!(detail, "exit status: 1");
                assert_eq!(
                    log_tail,
                    vec![format!(
                        "OSError: [Errno 98] Address already in use: port {port}"
                    )]
                );
            }
            other => panic!("expected DiedBeforeHealthy, got {other:?}"),
        }
    }

    /// Waits until the engine wrote something to `log` (at most 10 s).
    fn wait_for_output(log: &Path) {
        let started = Instant::now();
        while fs::read_to_string(log).unwrap_or_default().is_empty() {
            assert!(started.elapsed() < Duration::from_secs(10), "no output");
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// `{threads}`, `{memory_mb}` and absolute `{tree}`/`{config}` reach the command line,
    /// `REFEREE_THREADS`, `REFEREE_MEMORY_MB` and the profile's `env` its environment.
    #[test]
    fn threads_memory_and_the_profiles_env_reach_the_engine() {
        let dir = tempfile::tempdir().unwrap();
        let mut engine = ProcessEngine::new(ProcessOptions {
            threads: 3,
            memory_limit_mb: 2048,
            env: [("OMP_NUM_THREADS".to_owned(), "{threads}".to_owned())].into(),
            ..options(
                dir.path(),
                vec![
                    "sh".into(),
                    "-c".into(),
                    "echo t={threads} m={memory_mb} c={config} $REFEREE_THREADS $REFEREE_MEMORY_MB \
                     $OMP_NUM_THREADS; exec sleep 30"
                        .into(),
                ],
            )
        });
        engine.start().unwrap();
        let log = dir.path().join("engine.log");
        wait_for_output(&log);
        assert_eq!(engine.isolation().unwrap().engine_threads, 3);
        engine.stop().unwrap();
        assert_eq!(
            fs::read_to_string(&log).unwrap(),
            format!(
                "t=3 m=2048 c={}/engine.toml 3 2048 3\n",
                dir.path().display()
            )
        );
    }

    /// A parallel run's engine (issue 50) sees its lane's GPUs in its environment, and
    /// nothing of them is in the command the receipt records.
    #[test]
    fn a_lanes_gpus_reach_the_engine() {
        let dir = tempfile::tempdir().unwrap();
        let script = "echo cuda=$CUDA_VISIBLE_DEVICES bus=$REFEREE_GPU_BUS_IDS; exec sleep 30";
        let mut engine = process(dir.path(), script);
        engine
            .set_visible_gpus("2,3", "placeholder,placeholder")
            .unwrap();
        engine.start().unwrap();
        let log = dir.path().join("engine.log");
        wait_for_output(&log);
        engine.stop().unwrap();
        assert_eq!(
            fs::read_to_string(&log).unwrap(),
            "cuda=2,3 bus=placeholder,placeholder\n"
        );
        let command = engine.command().unwrap_or_default().join(" ");
        assert!(!command.contains("CUDA_VISIBLE_DEVICES=2,3"), "{command}");
    }

    /// The engine inherits the runner's socket as fd 3, with `LISTEN_FDS=1` and its own
    /// pid as `LISTEN_PID`, and a clean environment.
    #[test]
    fn the_engine_inherits_its_socket_as_fd_3() {
        let dir = tempfile::tempdir().unwrap();
        let script = "echo fds=$LISTEN_FDS pid_ok=$([ \"$LISTEN_PID\" = $$ ] && echo y) \
                      home_is_tmp=$([ \"$HOME\" = \"$TMPDIR\" ] && echo y) \
                      fd3=$(readlink /proc/self/fd/3 | cut -c1-8) {listen_fd}; exec sleep 30";
        let mut engine = process(dir.path(), script);
        engine.start().unwrap();
        let log = dir.path().join("engine.log");
        wait_for_output(&log);
        engine.stop().unwrap();
        assert_eq!(
            fs::read_to_string(&log).unwrap(),
            "fds=1 pid_ok=y home_is_tmp=y fd3=socket:[ 3\n"
        );
    }
}
