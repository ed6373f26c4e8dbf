//! The Docker backend (content/docker.md): every entry's engine is a container on the
//! engine's host, started through the daemon's API ([`bollard`]).
//!
//! # The container's sandbox
//! - **Network**: Docker cannot publish a port from `--network none`, so each engine gets
//!   its own *internal* bridge network (`Internal: true`: the daemon gives it no default
//!   route and drops forwarded traffic to and from other interfaces). The runner, on the
//!   same host, reaches the container's address on that bridge directly; nothing is
//!   published on the host, so no port can clash. The container can still reach the
//!   host's own address on that bridge (the gateway): services of the host that listen
//!   on every interface are visible to it (content/docker.md says to bind them to
//!   loopback on a pod).
//! - Root filesystem read-only, `/tmp` a small tmpfs (the campaign's `tmpfs_mb`), the
//!   patched tree at `/tree`, the weights at `/weights` and the declared `ro_paths` at
//!   their own paths bind-mounted read-only, and no other host path.
//! - User: the engine uid (`--engine-uid`, default 990000; `--user uid:gid`), never the
//!   image's (often root, the host's root unless the daemon remaps user namespaces).
//! - Environment: the campaign's list and `REFEREE_THREADS`/`REFEREE_MEMORY_MB` (plus
//!   what the image itself declares) and the run's secrets ([`Engine::set_secret_env`]:
//!   a decide run's token, in this container's environment only, never in the image or
//!   the recorded command); nothing of the runner's.
//! - Limits: memory (no swap) from `hardware.memory_limit_mb`, the engine's CPUs as the
//!   cgroup cpuset, GPUs as device requests only when the campaign names them, all
//!   capabilities dropped, `no-new-privileges`, a pids limit, `--init`.
//!
//! What the receipt records is read back from `inspect` after the start
//! ([`DockerEngine::docker`]), not what was asked for.
//!
//! # Teardown
//! Containers and networks carry the labels [`LABEL`] and [`SCOPE_LABEL`] (the round's
//! scope): [`DockerEngine::stop`] (and its drop) removes them, [`remove_live`] removes
//! every one still running when the runner is interrupted, and
//! [`crate::EngineBackend::sweep_leftovers`] removes what a killed runner left before a
//! round (re)starts.

pub mod build;
pub mod daemon;
pub mod image;

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use bollard::Docker;
use bollard::models::{
    ContainerCreateBody, ContainerInspectResponse, DeviceRequest, EndpointSettings, HostConfig,
    NetworkCreateRequest, NetworkingConfig,
};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, ListContainersOptionsBuilder, ListNetworksOptionsBuilder,
    LogsOptionsBuilder, RemoveContainerOptionsBuilder, StopContainerOptionsBuilder,
};
use futures_util::StreamExt;
use receipts::fsutil::IoError;
use receipts::model::{
    BackendKind, CpuPinning, DockerRun, DockerSpec, EngineIsolation, ImageRef, SandboxKind,
    SubmissionImage,
};
use sha2::{Digest, Sha256};

pub use daemon::Daemon;
pub use image::ResolvedImage;

use crate::api::{self, Placeholders};
use crate::log_budget::BoundedLog;
use crate::{Engine, EngineBackend, EngineError, EngineSettings, LOG_TAIL_LINES, log_tail};

/// The label every container and network referee makes carries (value `1`).
pub const LABEL: &str = "dev.referee.engine";

/// The label naming the round a container or network belongs to: a digest of the round's
/// pid-file path, so a sweep removes this round's leftovers and no other round's.
pub const SCOPE_LABEL: &str = "dev.referee.scope";

/// Where the patched tree is mounted in the container (read-only).
pub const TREE_MOUNT: &str = "/tree";

/// Where the campaign's weights directory is mounted in the container (read-only).
pub const WEIGHTS_MOUNT: &str = "/weights";

/// Processes a container may run at once.
const PIDS_LIMIT: i64 = 4096;

/// How often the health check polls, in ms.
const HEALTH_POLL_MS: u64 = 100;

/// Seconds a stopped container gets between SIGTERM and SIGKILL.
const STOP_GRACE_S: i32 = 2;

/// Errors of the Docker backend; every one carries the daemon's own message where the
/// daemon gave one.
#[derive(Debug, thiserror::Error)]
pub enum DockerError {
    /// `DOCKER_HOST` names a scheme the client cannot speak.
    #[error("DOCKER_HOST `{host}` cannot be used: {message}")]
    BadHost {
        /// The host.
        host: String,
        /// Why.
        message: String,
    },
    /// The daemon does not answer.
    #[error("the Docker daemon at `{host}` does not answer: {message}")]
    Unreachable {
        /// The host.
        host: String,
        /// The client's or daemon's message.
        message: String,
    },
    /// A measured run against a daemon on another host.
    #[error(
        "refusing to measure engines on the remote Docker daemon `{host}`: the load client \
         must run on the engine's host (a client across a network measures the network); \
         run referee on that host, with a local DOCKER_HOST (content/docker.md)"
    )]
    RemoteDaemon {
        /// The host.
        host: String,
    },
    /// The image is not on the daemon and could not be pulled.
    #[error("image `{reference}` is not available: {message}")]
    MissingImage {
        /// The reference.
        reference: String,
        /// The daemon's message.
        message: String,
    },
    /// The image the daemon holds is not the one the campaign or round recorded.
    #[error("image `{reference}` is `{actual}`, but `{expected}` was recorded: refusing to run it")]
    DigestMismatch {
        /// The reference.
        reference: String,
        /// The recorded digest or id.
        expected: String,
        /// What the daemon has.
        actual: String,
    },
    /// An image build failed: a Dockerfile error, a failing step, a base image the
    /// daemon does not have (builds have no network).
    #[error("building `{tag}` failed: {message}")]
    BuildFailed {
        /// The tag being built.
        tag: String,
        /// The daemon's message.
        message: String,
        /// The last lines of the build output.
        log_tail: Vec<String>,
    },
    /// The campaign names no image.
    #[error("the docker backend names no image (set `backend.image` or `baseline.image`)")]
    NoImage,
    /// Any other refusal of the daemon.
    #[error("{action}: {message}")]
    Daemon {
        /// What was being done, e.g. `creating the container`.
        action: String,
        /// The daemon's message.
        message: String,
    },
    /// The client's runtime could not start.
    #[error("starting the Docker client's runtime")]
    Runtime(#[source] std::io::Error),
    /// A file of the backend (the engine log, an image tarball).
    #[error(transparent)]
    Io(#[from] IoError),
}

impl DockerError {
    fn daemon(action: &str, error: &bollard::errors::Error) -> Self {
        Self::Daemon {
            action: action.to_owned(),
            message: daemon_message(error),
        }
    }
}

/// The daemon's own message for a server error; the client's for anything else.
fn daemon_message(error: &bollard::errors::Error) -> String {
    match error {
        bollard::errors::Error::DockerResponseServerError { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

/// Whether the daemon answered 404.
fn is_not_found(error: &bollard::errors::Error) -> bool {
    matches!(
        error,
        bollard::errors::Error::DockerResponseServerError {
            status_code: 404,
            ..
        }
    )
}

/// How a container ended, from its inspected state (typed: the round's detail and the
/// tests match on it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ContainerExit {
    /// It exited by itself with this code.
    Exited {
        /// The exit code.
        code: i64,
    },
    /// The kernel killed it for passing its memory limit (`State.OOMKilled`).
    OomKilled {
        /// The exit code (137 for SIGKILL).
        code: i64,
        /// The limit it passed, MiB.
        limit_mb: u64,
    },
}

impl std::fmt::Display for ContainerExit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ContainerExit::Exited { code } => write!(f, "container exited with code {code}"),
            ContainerExit::OomKilled { code, limit_mb } => write!(
                f,
                "container killed for running out of memory (limit {limit_mb} MiB, exit code \
                 {code})"
            ),
        }
    }
}

/// The exit of a container whose inspected state says it is no longer running; `None`
/// while it runs.
fn exit_of(inspected: &ContainerInspectResponse, limit_mb: u64) -> Option<ContainerExit> {
    let state = inspected.state.as_ref()?;
    if state.running == Some(true) {
        return None;
    }
    let code = state.exit_code.unwrap_or_default();
    Some(if state.oom_killed == Some(true) {
        ContainerExit::OomKilled { code, limit_mb }
    } else {
        ContainerExit::Exited { code }
    })
}

/// A container or network still to remove if the runner is interrupted.
struct Live {
    docker: Docker,
    container: String,
    network: String,
}

/// Every container this process started and has not removed yet.
static LIVE: Mutex<Vec<Live>> = Mutex::new(Vec::new());

fn live() -> std::sync::MutexGuard<'static, Vec<Live>> {
    LIVE.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Removes every container (and its network) this process started and has not removed
/// yet: what the runner's SIGINT/SIGTERM handler calls before it exits. Returns how many
/// containers it removed. Safe to call from any thread outside a tokio runtime.
pub fn remove_live() -> usize {
    let taken: Vec<Live> = std::mem::take(&mut *live());
    if taken.is_empty() {
        return 0;
    }
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return 0;
    };
    runtime.block_on(async {
        let mut removed = 0;
        for l in taken {
            if remove_container(&l.docker, &l.container).await {
                removed += 1;
            }
            let _ = l.docker.remove_network(&l.network).await;
        }
        removed
    })
}

/// Force-removes a container and its anonymous volumes; true when it was removed.
async fn remove_container(docker: &Docker, id: &str) -> bool {
    let options = RemoveContainerOptionsBuilder::new()
        .force(true)
        .v(true)
        .build();
    docker.remove_container(id, Some(options)).await.is_ok()
}

/// The Docker backend of a round: the daemon, the image resolved at setup, and what every
/// container gets.
pub struct DockerBackend {
    daemon: Arc<Daemon>,
    spec: DockerSpec,
    image: ResolvedImage,
    settings: EngineSettings,
    scope: String,
}

impl std::fmt::Debug for DockerBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DockerBackend")
            .field("host", &self.daemon.host())
            .field("image", &self.image)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

impl DockerBackend {
    /// The backend of a measured round: refuses a remote daemon, then resolves the
    /// campaign's image once (pulling it when missing; progress lines to stderr) and
    /// checks it against `baseline_image` when the campaign pins one.
    ///
    /// Errors: [`DockerError::RemoteDaemon`], [`DockerError::NoImage`], and those of
    /// [`Daemon::resolve_image`]; [`DockerError::DigestMismatch`] when the image is not
    /// the pinned one.
    pub fn new(
        daemon: Daemon,
        spec: &DockerSpec,
        baseline_image: Option<&ImageRef>,
        settings: EngineSettings,
    ) -> Result<Self, DockerError> {
        daemon.require_local()?;
        let reference = match (&spec.image, baseline_image) {
            (Some(reference), _) => reference.clone(),
            (None, Some(pinned)) => format!("{}@{}", pinned.name, pinned.manifest_digest),
            (None, None) => return Err(DockerError::NoImage),
        };
        let image = daemon.resolve_image(&reference, true, &mut |line| {
            eprintln!("pulling {reference}: {line}");
        })?;
        if let Some(pinned) = baseline_image {
            check_pinned(&image, pinned)?;
        }
        let scope = scope_of(&settings.pid_file);
        Ok(Self {
            daemon: Arc::new(daemon),
            spec: spec.clone(),
            image,
            settings,
            scope,
        })
    }

    /// The image every engine of this backend runs.
    pub fn image(&self) -> &ResolvedImage {
        &self.image
    }

    /// The label value of this round's containers and networks.
    pub fn scope(&self) -> &str {
        &self.scope
    }
}

/// The campaign's pinned image against the resolved one: the manifest digest when the
/// daemon knows one, the config id when the campaign records it.
fn check_pinned(image: &ResolvedImage, pinned: &ImageRef) -> Result<(), DockerError> {
    let mismatch = |expected: &str, actual: &str| DockerError::DigestMismatch {
        reference: image.reference.clone(),
        expected: expected.to_owned(),
        actual: actual.to_owned(),
    };
    if let Some(digest) = &image.manifest_digest
        && image::repository(&image.reference) == pinned.name
        && *digest != pinned.manifest_digest
    {
        return Err(mismatch(&pinned.manifest_digest, digest));
    }
    if let Some(config) = &pinned.config_digest
        && *config != image.image_id
    {
        return Err(mismatch(config, &image.image_id));
    }
    Ok(())
}

/// The scope label of a round: the first 16 hex digits of sha256 of its pid-file path.
fn scope_of(pid_file: &Path) -> String {
    let digest = Sha256::digest(pid_file.as_os_str().as_encoded_bytes());
    hex::encode(&digest[..8])
}

impl EngineBackend for DockerBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Docker
    }

    fn engine(
        &self,
        tree: &Path,
        config: &Path,
        log: &Path,
        image: Option<&SubmissionImage>,
    ) -> Box<dyn Engine> {
        Box::new(self.container(tree, config, log, image))
    }

    fn sweep_leftovers(&self) -> usize {
        sweep(&self.daemon, &self.scope)
    }
}

impl DockerBackend {
    /// [`EngineBackend::engine`] as its concrete type (its container's id).
    /// With `image` (a submission's build) the container runs that image by its id,
    /// never by its tag: the start inspects the id on the daemon and refuses a missing
    /// image ([`DockerError::MissingImage`]) or one the daemon holds under another id
    /// ([`DockerError::DigestMismatch`]); without, the image resolved at setup.
    pub fn container(
        &self,
        tree: &Path,
        config: &Path,
        log: &Path,
        image: Option<&SubmissionImage>,
    ) -> DockerEngine {
        let image = image.map_or_else(
            || self.image.clone(),
            |built| ResolvedImage {
                reference: built.tag.clone(),
                image_id: built.image_id.clone(),
                manifest_digest: built.manifest_digest.clone(),
            },
        );
        DockerEngine {
            daemon: Arc::clone(&self.daemon),
            spec: self.spec.clone(),
            image,
            settings: self.settings.clone(),
            scope: self.scope.clone(),
            tree: tree.to_path_buf(),
            config: config.to_path_buf(),
            log: log.to_path_buf(),
            secrets: Vec::new(),
            running: None,
            exit: None,
            _not_send: std::marker::PhantomData,
        }
    }
}

/// Removes every container and network labelled with `scope` on the daemon; returns how
/// many containers it removed.
pub fn sweep(daemon: &Daemon, scope: &str) -> usize {
    let docker = daemon.docker().clone();
    let filters: HashMap<&str, Vec<String>> =
        HashMap::from([("label", vec![format!("{SCOPE_LABEL}={scope}")])]);
    daemon.block_on(async {
        let mut removed = 0;
        let containers = docker
            .list_containers(Some(
                ListContainersOptionsBuilder::new()
                    .all(true)
                    .filters(&filters)
                    .build(),
            ))
            .await
            .unwrap_or_default();
        for c in containers {
            if let Some(id) = c.id
                && remove_container(&docker, &id).await
            {
                removed += 1;
            }
        }
        let networks = docker
            .list_networks(Some(
                ListNetworksOptionsBuilder::new().filters(&filters).build(),
            ))
            .await
            .unwrap_or_default();
        for n in networks {
            if let Some(id) = n.id {
                let _ = docker.remove_network(&id).await;
            }
        }
        removed
    })
}

/// One engine in a container.
///
/// Not [`Send`], like every engine (the crate docs).
pub struct DockerEngine {
    daemon: Arc<Daemon>,
    spec: DockerSpec,
    image: ResolvedImage,
    settings: EngineSettings,
    scope: String,
    tree: PathBuf,
    config: PathBuf,
    log: PathBuf,
    /// This run's secrets ([`Engine::set_secret_env`]), in its container's environment
    /// only: the receipt records their names (`envNames`), never their values.
    secrets: Vec<(String, String)>,
    running: Option<Running>,
    exit: Option<ContainerExit>,
    _not_send: std::marker::PhantomData<*const ()>,
}

/// A started container.
struct Running {
    container: String,
    network: String,
    /// Its address on its network; `None` when it exited before the daemon gave it one.
    addr: Option<SocketAddr>,
    argv: Vec<String>,
    record: DockerRun,
    /// Copies the container's output into the log; returns the first error writing it.
    logs: Option<tokio::task::JoinHandle<Option<std::io::Error>>>,
    log_file: fs::File,
    stopped: bool,
    log_error: Option<IoError>,
}

impl DockerEngine {
    fn placeholders(&self) -> Placeholders {
        let relative = self
            .config
            .strip_prefix(&self.tree)
            .unwrap_or(Path::new("engine.toml"));
        Placeholders::new(
            Path::new(TREE_MOUNT),
            &Path::new(TREE_MOUNT).join(relative),
            self.spec.port(),
            self.settings.threads,
            self.settings.memory_limit_mb,
        )
    }

    /// What the container is created with.
    fn body(&self, network: &str) -> ContainerCreateBody {
        let p = self.placeholders();
        // A secret replaces a campaign variable of its name (one value per name).
        let env: Vec<String> = (p.environment(&self.spec.env).into_iter())
            .filter(|(k, _)| !self.secrets.iter().any(|(name, _)| name == k))
            .chain(self.secrets.iter().cloned())
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let cmd: Vec<String> = self.spec.command.iter().map(|a| p.substitute(a)).collect();
        let mut binds = vec![format!(
            "{}:{TREE_MOUNT}:ro",
            absolute(&self.tree).display()
        )];
        if let Some(weights) = &self.spec.weights {
            binds.push(format!(
                "{}:{WEIGHTS_MOUNT}:ro",
                absolute(Path::new(weights)).display()
            ));
        }
        // The declared paths, at their own paths (checked at the start).
        for path in &self.spec.ro_paths {
            binds.push(format!("{path}:{path}:ro"));
        }
        let memory = i64::try_from(self.settings.memory_limit_mb.saturating_mul(1 << 20))
            .unwrap_or(i64::MAX);
        let cpus = &self.settings.confinement.cpus;
        let cpuset = (cpus.pinning != CpuPinning::None).then(|| {
            cpus.engine
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(",")
        });
        let device_requests = (!self.spec.gpus.is_empty()).then(|| {
            vec![DeviceRequest {
                driver: Some("nvidia".into()),
                device_ids: Some(self.spec.gpus.clone()),
                capabilities: Some(vec![vec!["gpu".into()]]),
                ..Default::default()
            }]
        });
        let labels = HashMap::from([
            (LABEL.to_owned(), "1".to_owned()),
            (SCOPE_LABEL.to_owned(), self.scope.clone()),
        ]);
        ContainerCreateBody {
            image: Some(self.image.image_id.clone()),
            cmd: (!cmd.is_empty()).then_some(cmd),
            env: Some(env),
            labels: Some(labels),
            working_dir: Some(TREE_MOUNT.into()),
            // Not the image's user (often root, the host's root without user-namespace
            // remapping): the engine uid, which needs no entry in the image.
            user: (self.settings.confinement.sandbox.user())
                .map(|u| format!("{}:{}", u.uid, u.gid)),
            host_config: Some(HostConfig {
                memory: Some(memory),
                memory_swap: Some(memory),
                cpuset_cpus: cpuset,
                pids_limit: Some(PIDS_LIMIT),
                readonly_rootfs: Some(true),
                tmpfs: Some(HashMap::from([(
                    "/tmp".to_owned(),
                    format!("rw,nosuid,nodev,size={}m", self.spec.tmpfs_mb()),
                )])),
                binds: Some(binds),
                init: Some(true),
                network_mode: Some(network.to_owned()),
                device_requests,
                cap_drop: Some(vec!["ALL".into()]),
                security_opt: Some(vec!["no-new-privileges".into()]),
                privileged: Some(false),
                ..Default::default()
            }),
            networking_config: Some(NetworkingConfig {
                endpoints_config: Some(HashMap::from([(
                    network.to_owned(),
                    EndpointSettings::default(),
                )])),
            }),
            ..Default::default()
        }
    }

    /// Creates the network and the container, starts it, and reads back what it got.
    async fn launch(
        docker: &Docker,
        name: &str,
        labels: HashMap<String, String>,
        body: impl FnOnce(&str) -> ContainerCreateBody,
    ) -> Result<(String, String), DockerError> {
        let network = docker
            .create_network(NetworkCreateRequest {
                name: name.to_owned(),
                driver: Some("bridge".into()),
                internal: Some(true),
                labels: Some(labels),
                ..Default::default()
            })
            .await
            .map_err(|e| DockerError::daemon("creating the engine's internal network", &e))?
            .id;
        let created = docker
            .create_container(
                Some(CreateContainerOptionsBuilder::new().name(name).build()),
                body(name),
            )
            .await;
        let container = match created {
            Ok(c) => c.id,
            Err(e) => {
                let _ = docker.remove_network(&network).await;
                return Err(DockerError::daemon("creating the container", &e));
            }
        };
        live().push(Live {
            docker: docker.clone(),
            container: container.clone(),
            network: network.clone(),
        });
        Ok((container, network))
    }

    /// The container's inspected state.
    fn inspect(&self, id: &str) -> Result<ContainerInspectResponse, DockerError> {
        let docker = self.daemon.docker().clone();
        self.daemon
            .block_on(docker.inspect_container(id, None))
            .map_err(|e| DockerError::daemon("inspecting the container", &e))
    }

    /// Stops and removes the container and its network, waits for the whole log and
    /// fsyncs it; keeps the first error keeping the log. Idempotent.
    fn halt(&mut self) {
        let Some(running) = self.running.as_mut() else {
            return;
        };
        if running.stopped {
            return;
        }
        running.stopped = true;
        let docker = self.daemon.docker().clone();
        let (container, network) = (running.container.clone(), running.network.clone());
        let logs = running.logs.take();
        let limit_mb = self.settings.memory_limit_mb;
        let (inspected, written) = self.daemon.block_on(async {
            let _ = docker
                .stop_container(
                    &container,
                    Some(StopContainerOptionsBuilder::new().t(STOP_GRACE_S).build()),
                )
                .await;
            let inspected = docker.inspect_container(&container, None).await.ok();
            // The log stream ends once the container has stopped.
            let written = match logs {
                Some(task) => task.await.unwrap_or_else(|_| {
                    Some(std::io::Error::other("the task copying the log failed"))
                }),
                None => None,
            };
            remove_container(&docker, &container).await;
            let _ = docker.remove_network(&network).await;
            (inspected, written)
        });
        live().retain(|l| l.container != container);
        if self.exit.is_none() {
            self.exit = inspected.as_ref().and_then(|i| exit_of(i, limit_mb));
        }
        let mut error = written.map(IoError::at("writing the engine log", &self.log));
        if let Err(e) = running.log_file.sync_all()
            && error.is_none()
        {
            error = Some(IoError::at("syncing the engine log", &self.log)(e));
        }
        if running.log_error.is_none() {
            running.log_error = error;
        }
    }

    /// Stops the engine and returns the disqualification error with its log tail.
    fn died(&mut self, detail: String) -> EngineError {
        self.halt();
        EngineError::DiedBeforeHealthy {
            detail,
            log_tail: log_tail(&self.log),
        }
    }

    /// Refuses declared paths that would show the data directory, a key or a Unix
    /// socket, as the process sandbox does ([`crate::sandbox::check_declared`]).
    fn check_declared(&self) -> Result<(), EngineError> {
        let declared: Vec<PathBuf> = self.spec.ro_paths.iter().map(PathBuf::from).collect();
        crate::sandbox::check_declared(&declared, &self.settings.confinement.hidden)?;
        Ok(())
    }

    fn start_container(&mut self) -> Result<(), DockerError> {
        self.daemon.check_image(&self.image)?;
        if let Some(parent) = self.log.parent() {
            fs::create_dir_all(parent).map_err(IoError::at("creating", parent))?;
        }
        let log_file = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(IoError::at("opening", &self.log))?;
        // The log under its byte budget, as a process engine's ([`crate::log_budget`]).
        let mut writer = BoundedLog::new(
            log_file
                .try_clone()
                .map_err(IoError::at("opening", &self.log))?,
            self.settings.confinement.log_bytes,
        );
        let name = format!("referee-{}-{}", self.scope, unique());
        let labels = HashMap::from([
            (LABEL.to_owned(), "1".to_owned()),
            (SCOPE_LABEL.to_owned(), self.scope.clone()),
        ]);
        let docker = self.daemon.docker().clone();
        let (container, network) =
            self.daemon
                .block_on(Self::launch(&docker, &name, labels, |n| self.body(n)))?;
        // From here a failure removes what was made.
        let started = self
            .daemon
            .block_on(docker.start_container(&container, None));
        let cleanup = |daemon: &Daemon| {
            daemon.block_on(async {
                remove_container(&docker, &container).await;
                let _ = docker.remove_network(&network).await;
            });
            live().retain(|l| l.container != container);
        };
        if let Err(e) = started {
            cleanup(&self.daemon);
            return Err(DockerError::daemon("starting the container", &e));
        }
        let follow = LogsOptionsBuilder::new()
            .follow(true)
            .stdout(true)
            .stderr(true)
            .build();
        let mut stream = docker.logs(&container, Some(follow));
        let logs = self.daemon.spawn(async move {
            let mut error = None;
            while let Some(Ok(chunk)) = stream.next().await {
                if error.is_none()
                    && let Err(e) = writer.write(&chunk.into_bytes())
                {
                    error = Some(e);
                }
            }
            error.or(writer.finish().err())
        });
        let read_back = self
            .inspect(&container)
            .and_then(|inspected| self.read_back(&inspected, &name));
        let (addr, argv, record) = match read_back {
            Ok(v) => v,
            Err(e) => {
                cleanup(&self.daemon);
                return Err(e);
            }
        };
        self.running = Some(Running {
            container,
            network,
            addr,
            argv,
            record,
            logs: Some(logs),
            log_file,
            stopped: false,
            log_error: None,
        });
        Ok(())
    }

    /// The container's address on its network, its command line and the receipt's
    /// record, from what the daemon reports.
    fn read_back(
        &self,
        inspected: &ContainerInspectResponse,
        network: &str,
    ) -> Result<(Option<SocketAddr>, Vec<String>, DockerRun), DockerError> {
        let docker = self.daemon.docker().clone();
        let net = self
            .daemon
            .block_on(docker.inspect_network(network, None))
            .map_err(|e| DockerError::daemon("inspecting the engine's network", &e))?;
        let ip = inspected
            .network_settings
            .as_ref()
            .and_then(|n| n.networks.as_ref())
            .and_then(|n| n.get(network))
            .and_then(|e| e.ip_address.as_deref())
            .and_then(|ip| ip.parse::<IpAddr>().ok());
        let config = inspected.config.clone().unwrap_or_default();
        let argv: Vec<String> = config
            .entrypoint
            .unwrap_or_default()
            .into_iter()
            .chain(config.cmd.unwrap_or_default())
            .collect();
        let host = inspected.host_config.clone().unwrap_or_default();
        let record = DockerRun {
            image_reference: self.image.reference.clone(),
            manifest_digest: self.image.manifest_digest.clone(),
            image_id: inspected.image.clone().unwrap_or_default(),
            daemon_version: self.daemon.version().to_owned(),
            api_version: self.daemon.api_version().to_owned(),
            memory_bytes: host.memory.and_then(|m| u64::try_from(m).ok()).unwrap_or(0),
            cpuset_cpus: host.cpuset_cpus.unwrap_or_default(),
            gpus: host
                .device_requests
                .unwrap_or_default()
                .into_iter()
                .flat_map(|d| d.device_ids.unwrap_or_default())
                .collect(),
            read_only_root: host.readonly_rootfs == Some(true),
            init: host.init == Some(true),
            unprivileged: host.privileged != Some(true),
            network: network.to_owned(),
            network_internal: net.internal == Some(true),
            tmpfs: host
                .tmpfs
                .unwrap_or_default()
                .into_iter()
                .collect::<BTreeMap<_, _>>(),
            binds: host.binds.unwrap_or_default(),
            env_names: config
                .env
                .unwrap_or_default()
                .iter()
                .map(|kv| kv.split('=').next().unwrap_or_default().to_owned())
                .collect(),
        };
        if record.image_id != self.image.image_id {
            return Err(DockerError::DigestMismatch {
                reference: self.image.reference.clone(),
                expected: self.image.image_id.clone(),
                actual: record.image_id,
            });
        }
        // A container that already exited has no address: the health check reports its
        // exit.
        let exited = exit_of(inspected, self.settings.memory_limit_mb).is_some();
        if ip.is_none() && !exited {
            return Err(DockerError::Daemon {
                action: "reading the container's address".into(),
                message: format!("no address on network `{network}`"),
            });
        }
        Ok((
            ip.map(|ip| SocketAddr::new(ip, self.spec.port())),
            argv,
            record,
        ))
    }
}

/// A name part no other engine of this process has: pid, a counter and the clock.
fn unique() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{}-{n}-{nanos:08x}", std::process::id())
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

impl Engine for DockerEngine {
    fn backend(&self) -> BackendKind {
        BackendKind::Docker
    }

    fn set_secret_env(&mut self, name: &str, value: &str) -> Result<(), EngineError> {
        self.secrets.push((name.to_owned(), value.to_owned()));
        Ok(())
    }

    fn command(&self) -> Option<&[String]> {
        self.running.as_ref().map(|r| r.argv.as_slice())
    }

    fn isolation(&self) -> Option<EngineIsolation> {
        let r = self.running.as_ref()?;
        let cpus = &self.settings.confinement.cpus;
        let engine_cpus = if r.record.cpuset_cpus.is_empty() {
            Vec::new()
        } else {
            cpus.engine.clone()
        };
        Some(EngineIsolation {
            sandbox: SandboxKind::Docker,
            pinning: if engine_cpus.is_empty() {
                CpuPinning::None
            } else {
                CpuPinning::Cpuset
            },
            engine_cpus: if engine_cpus.is_empty() {
                cpus.engine.clone()
            } else {
                engine_cpus
            },
            client_cpus: cpus.client.clone(),
            engine_threads: self.settings.threads,
            uid: self.settings.confinement.sandbox.user().map(|u| u.uid),
            own_uid: Some(self.settings.confinement.sandbox.user().is_some()),
            ro_paths: self.spec.ro_paths.clone(),
        })
    }

    fn docker(&self) -> Option<DockerRun> {
        self.running.as_ref().map(|r| r.record.clone())
    }

    fn container_exit(&self) -> Option<ContainerExit> {
        self.exit.clone()
    }

    fn start(&mut self) -> Result<(), EngineError> {
        self.check_declared()?;
        self.start_container().map_err(EngineError::from)
    }

    fn wait_healthy(&mut self, deadline: Duration) -> Result<(), EngineError> {
        let (container, addr) = match &self.running {
            Some(r) if !r.stopped => (r.container.clone(), r.addr),
            _ => return Err(EngineError::NotStarted),
        };
        let until = Instant::now() + deadline;
        let limit_mb = self.settings.memory_limit_mb;
        loop {
            let inspected = self.inspect(&container);
            match inspected.as_ref().map(|i| exit_of(i, limit_mb)) {
                Ok(Some(exit)) => {
                    let detail = exit.to_string();
                    self.exit = Some(exit);
                    return Err(self.died(detail));
                }
                Ok(None) => {}
                Err(e) => {
                    let detail = e.to_string();
                    return Err(self.died(detail));
                }
            }
            if addr.is_some_and(|addr| api::ready(addr, &self.settings.readiness)) {
                return Ok(());
            }
            if Instant::now() >= until {
                let detail = format!(
                    "no answer on {} within {} s",
                    api::routes_text(&self.settings.readiness),
                    deadline.as_secs()
                );
                return Err(self.died(detail));
            }
            thread::sleep(Duration::from_millis(HEALTH_POLL_MS));
        }
    }

    fn endpoint(&self) -> Option<String> {
        self.running
            .as_ref()
            .and_then(|r| r.addr)
            .map(|addr| format!("http://{addr}"))
    }

    fn log_path(&self) -> &Path {
        &self.log
    }

    fn is_running(&mut self) -> bool {
        let Some(container) = self
            .running
            .as_ref()
            .filter(|r| !r.stopped)
            .map(|r| r.container.clone())
        else {
            return false;
        };
        self.inspect(&container)
            .is_ok_and(|i| exit_of(&i, self.settings.memory_limit_mb).is_none())
    }

    fn stop(&mut self) -> Result<(), EngineError> {
        self.halt();
        match self.running.as_mut().and_then(|r| r.log_error.take()) {
            Some(e) => Err(EngineError::Io(e)),
            None => Ok(()),
        }
    }
}

impl Drop for DockerEngine {
    fn drop(&mut self) {
        self.halt();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bollard::models::ContainerState;

    fn state(running: bool, code: i64, oom: bool) -> ContainerInspectResponse {
        ContainerInspectResponse {
            state: Some(ContainerState {
                running: Some(running),
                exit_code: Some(code),
                oom_killed: Some(oom),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn exits_are_typed_from_the_inspected_state() {
        assert_eq!(exit_of(&state(true, 0, false), 512), None);
        assert_eq!(
            exit_of(&state(false, 3, false), 512),
            Some(ContainerExit::Exited { code: 3 })
        );
        let oom = exit_of(&state(false, 137, true), 512).unwrap();
        assert_eq!(
            oom,
            ContainerExit::OomKilled {
                code: 137,
                limit_mb: 512
            }
        );
        assert_eq!(
            oom.to_string(),
            "container killed for running out of memory (limit 512 MiB, exit code 137)"
        );
        assert_eq!(exit_of(&ContainerInspectResponse::default(), 512), None);
    }

    #[test]
    fn a_pinned_image_must_match_what_the_daemon_holds() {
        let d = |c: char| format!("sha256:{}", c.to_string().repeat(64));
        let image = ResolvedImage {
            reference: "ghcr.io/org/engine:v1".into(),
            image_id: d('a'),
            manifest_digest: Some(d('b')),
        };
        let pinned = |manifest: String, config: Option<String>| ImageRef {
            name: "ghcr.io/org/engine".into(),
            manifest_digest: manifest,
            config_digest: config,
        };
        check_pinned(&image, &pinned(d('b'), Some(d('a')))).unwrap();
        check_pinned(&image, &pinned(d('b'), None)).unwrap();
        match check_pinned(&image, &pinned(d('c'), None)) {
            Err(DockerError::DigestMismatch {
                expected, actual, ..
            }) => {
                assert_eq!((expected, actual), (d('c'), d('b')));
            }
            other => panic!("expected a mismatch, got {other:?}"),
        }
        assert!(matches!(
            check_pinned(&image, &pinned(d('b'), Some(d('e')))),
            Err(DockerError::DigestMismatch { .. })
        ));
    }

    #[test]
    fn the_scope_is_16_hex_digits_of_the_pid_file_path() {
        let a = scope_of(Path::new("/data/c/.work/round-1/engines.pid"));
        assert_eq!(a.len(), 16);
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(a, scope_of(Path::new("/data/c/.work/round-2/engines.pid")));
    }
}
