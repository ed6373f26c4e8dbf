//! Pods (content/pods.md): the machine a round's entries run on, behind one trait.
//! [`LocalPod`] is the evaluator's own machine; [`SlurmPod`] rents an allocation from a
//! Slurm cluster through its own commands (`sbatch`, `squeue`, `srun`, `scancel`). A
//! Kubernetes Job backend would implement the same trait.
//!
//! The setup of a pod is the steps of a round's timeline before the entries (`session`):
//! renting the pod (`provisioning`), preparing it (`bootstrapping`: the `referee` binary,
//! its sha256 recorded, and the round's public inputs shipped to the staging directory),
//! pulling engine images by digest and downloading weights by sha256 into the node's
//! cache (both done on the pod by `referee agent`, which reports each step back as framed
//! messages, `frame`), and releasing the pod (`teardown`: a leftover allocation is
//! cancelled and reported). The signing and log keys stay with the evaluator: nothing
//! holding one is ever shipped (`ship`).

pub mod agent;
pub mod frame;
mod local;
pub mod session;
pub mod ship;
mod slurm;
pub mod weights;

use std::path::{Path, PathBuf};
use std::process::Command;

use receipts::fsutil::IoError;
use receipts::model::{PodBackend, PodSpec};

pub use local::LocalPod;
pub use slurm::{SlurmPod, sbatch_args};

/// A rented pod, as [`Pod::provision`] got it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Allocation {
    /// The scheduler's id of the allocation (a Slurm job id); `None` for the local pod.
    pub id: Option<u64>,
    /// The node(s) it runs on, as the scheduler names them.
    pub nodes: String,
}

/// What releasing a pod did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Release {
    /// Allocations of this pod's name found alive (a killed evaluator's), before renting
    /// or after its own was released, each cancelled.
    pub leftovers_cancelled: Vec<u64>,
}

/// A machine that runs a round's entries.
pub trait Pod: Send {
    /// Which backend this is.
    fn backend(&self) -> PodBackend;

    /// Rents the pod, blocking until it runs (the `provisioning` phase).
    ///
    /// Errors: [`PodError`] when the scheduler refuses it, ends it before it runs, or
    /// keeps it waiting past the deadline (then it is cancelled).
    fn provision(&mut self) -> Result<Allocation, PodError>;

    /// A command that runs `program` with `args` on the rented pod, with none of the
    /// evaluator's environment; its standard output is the program's. `program` is an
    /// absolute path the pod sees.
    ///
    /// Errors: [`PodError::NotProvisioned`] before [`Pod::provision`].
    fn command(&self, program: &Path, args: &[String]) -> Result<Command, PodError>;

    /// Whether the allocation still runs: `false` once the scheduler ended it.
    ///
    /// Errors: [`PodError`] when the scheduler cannot be asked.
    fn is_alive(&self) -> Result<bool, PodError>;

    /// Releases the pod, and cancels any other allocation of its name still alive; reports
    /// those, and those cancelled before renting.
    ///
    /// Errors: [`PodError`] when the scheduler cannot be asked or refuses the release.
    fn release(&mut self) -> Result<Release, PodError>;
}

/// The pod `spec` asks for; `job_name` names its allocations (a leftover is found by it).
pub fn pod_for(spec: &PodSpec, job_name: &str) -> Box<dyn Pod> {
    match spec.backend {
        PodBackend::Local => Box::new(LocalPod::new()),
        PodBackend::Slurm => Box::new(SlurmPod::new(spec.clone(), job_name)),
    }
}

/// Why a pod could not be set up, used or released.
#[derive(Debug, thiserror::Error)]
pub enum PodError {
    /// A scheduler command could not be started (not installed, not on `PATH`).
    #[error("cannot run `{program}`: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A scheduler command failed.
    #[error("`{command}` failed ({status}): {stderr}")]
    Command {
        /// The command line.
        command: String,
        /// Its exit status.
        status: String,
        /// The end of its standard error, escaped.
        stderr: String,
    },
    /// A scheduler answer that is not what its format promises.
    #[error("`{command}` answered `{answer}`, not {expected}")]
    Answer {
        /// The command line.
        command: String,
        /// What it printed, escaped.
        answer: String,
        /// What was expected.
        expected: &'static str,
    },
    /// The allocation ended before it ran, or while it was used.
    #[error("allocation {id} ended ({state})")]
    AllocationEnded {
        /// The job id.
        id: u64,
        /// Its last state, or `gone` when the scheduler no longer lists it.
        state: String,
    },
    /// The allocation was still waiting at the deadline; it was cancelled.
    #[error("allocation {id} was still {state} after {waited_s} s; cancelled")]
    ProvisioningTimedOut {
        /// The job id.
        id: u64,
        /// Its state at the deadline.
        state: String,
        /// Seconds waited.
        waited_s: u64,
    },
    /// A command on the pod before it was rented.
    #[error("the pod is not provisioned")]
    NotProvisioned,
    /// A file meant for the pod holds a private key; nothing was shipped.
    #[error("refusing to ship `{}` to the pod: it holds a private key", path.display())]
    PrivateKey {
        /// The file.
        path: PathBuf,
    },
    /// A file meant for the pod holds the round's evaluator secret or sample seed (in
    /// any of the forms of [`receipts::keys::SeedForms`]); the agent was not started.
    #[error(
        "refusing to ship `{}` to the pod: it holds the round's evaluator secret or sample seed",
        path.display()
    )]
    RoundSecret {
        /// The file.
        path: PathBuf,
    },
    /// A file or directory could not be read or written.
    #[error(transparent)]
    Io(#[from] IoError),
    /// The agent's output was not whole frames.
    #[error(transparent)]
    Frame(#[from] frame::FrameError),
    /// The agent reported what the evaluator did not ship or ask for.
    #[error("the agent {0}")]
    Agent(String),
    /// A weight file could not be fetched into the cache or did not match its digest.
    #[error(transparent)]
    Weights(#[from] weights::WeightsError),
}

/// Runs `command` to its end and returns its standard output.
///
/// Errors: [`PodError::Spawn`] when it cannot start, [`PodError::Command`] when it exits
/// unsuccessfully (the last 512 bytes of its standard error, escaped).
fn run_to_end(command: &mut Command) -> Result<String, PodError> {
    let line = describe(command);
    let output = command.output().map_err(|source| PodError::Spawn {
        program: command.get_program().to_string_lossy().into_owned(),
        source,
    })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: String = {
            let chars: Vec<char> = stderr.trim_end().chars().collect();
            chars[chars.len().saturating_sub(512)..].iter().collect()
        };
        return Err(PodError::Command {
            command: line,
            status: output.status.to_string(),
            stderr: receipts::text::escape_untrusted(&tail).into_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// A command line as words, for errors.
fn describe(command: &Command) -> String {
    std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|word| word.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}
