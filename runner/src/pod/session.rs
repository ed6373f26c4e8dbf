//! A pod's setup and teardown as the evaluator runs them (content/pods.md): each a step
//! of the round's timeline with its phase, in the order of content/rounds.md. Renting the
//! pod (`provisioning`) and shipping to it (`bootstrapping`) happen here; the agent then
//! verifies what was shipped, pulls the images and readies the weights on the pod, and
//! each of its frames becomes a step. What the agent reports is checked: it must run the
//! very binary shipped, and its environment must hold no private key.

use std::collections::BTreeMap;
use std::io::{BufReader, Read};
use std::path::PathBuf;
use std::process::Stdio;
use std::thread;

use receipts::model::{
    Campaign, Phase, PodSpec, SHIPPED_BINARY_LINE, Sha256Hex, StepStatus, Timestamp,
};

use super::frame::{AgentMessage, read_frame};
use super::ship::{RoundOrder, Shipment, ship};
use super::weights::WeightOrder;
use super::{Allocation, Pod, PodError, Release};

pub use receipts::model::{RENTING_STEP as RENTING, SHIPPING_STEP as SHIPPING};
/// The step releasing it.
pub const RELEASING: &str = "Releasing the pod";

/// One setup or teardown step of a pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodStep {
    /// Its phase.
    pub phase: Phase,
    /// Its name.
    pub name: String,
    /// How it ended.
    pub status: StepStatus,
    /// What it did, one line per item.
    pub detail: Vec<String>,
    /// When it started, on the evaluator's clock.
    pub started_at: Timestamp,
    /// When it ended, on the evaluator's clock (an agent's step: when its frame came).
    pub ended_at: Timestamp,
}

/// What the pod's round inputs are: shipped to `staging`, the agent asked for `images`
/// and `weights` in `weights_cache`.
#[derive(Clone, Debug)]
pub struct PodInputs {
    /// The staging directory, as both sides see it.
    pub staging: PathBuf,
    /// The `referee` binary to ship.
    pub binary: PathBuf,
    /// The files to ship: each its name in the staging directory and its source.
    pub files: Vec<(String, PathBuf)>,
    /// Engine images, `name@sha256:<digest>`.
    pub images: Vec<String>,
    /// Weight files.
    pub weights: Vec<WeightOrder>,
    /// The node's weights cache.
    pub weights_cache: PathBuf,
    /// The round whose passes the agent will run, if any.
    pub round: Option<RoundOrder>,
}

/// A pod set up: its allocation, what the agent reported and the steps so far.
#[derive(Clone, Debug)]
pub struct PodSetup {
    /// The allocation.
    pub allocation: Allocation,
    /// The binary shipped, which the agent reported running.
    pub agent_sha256: Sha256Hex,
    /// The node the agent ran on.
    pub node: String,
    /// The GPUs the scheduler gave the agent (`CUDA_VISIBLE_DEVICES`).
    pub gpus: String,
    /// The agent's environment as it reported it.
    pub environment: BTreeMap<String, String>,
    /// The setup steps, in order.
    pub steps: Vec<PodStep>,
    /// What was shipped.
    pub shipment: Shipment,
}

/// Rents `pod`, ships `inputs` and runs the agent's setup there.
///
/// On an error the steps so far are returned beside it (the failed one last), and the
/// pod stays rented: call [`tear_down`] either way.
///
/// Errors: [`PodError`] from the scheduler, the shipment, the agent's frames or its
/// checks; [`PodError::AllocationEnded`] when the allocation died under the agent.
pub fn set_up(pod: &mut dyn Pod, inputs: &PodInputs) -> Result<PodSetup, (Vec<PodStep>, PodError)> {
    let mut steps = Vec::new();
    let started_at = Timestamp::now();
    let allocation = match pod.provision() {
        Ok(allocation) => {
            steps.push(PodStep {
                started_at,
                ended_at: Timestamp::now(),
                phase: Phase::Provisioning,
                name: RENTING.into(),
                status: StepStatus::Ok,
                detail: vec![match allocation.id {
                    Some(id) => format!("allocation {id} on {}", allocation.nodes),
                    None => format!("the evaluator's own machine ({})", allocation.nodes),
                }],
            });
            allocation
        }
        Err(e) => {
            let steps = failed(steps, (Phase::Provisioning, RENTING), started_at, &e);
            return Err((steps, e));
        }
    };
    let started_at = Timestamp::now();
    let shipment = match ship(
        &inputs.staging,
        &inputs.binary,
        &inputs.files,
        inputs.images.clone(),
        inputs.weights.clone(),
        inputs.weights_cache.clone(),
        inputs.round.clone(),
    ) {
        Ok(shipment) => {
            steps.push(PodStep {
                started_at,
                ended_at: Timestamp::now(),
                phase: Phase::Bootstrapping,
                name: SHIPPING.into(),
                status: StepStatus::Ok,
                detail: std::iter::once(format!(
                    "{SHIPPED_BINARY_LINE}{}",
                    shipment.order.agent_sha256
                ))
                .chain(
                    shipment
                        .order
                        .files
                        .iter()
                        .map(|f| format!("{} sha256:{}", f.path, f.sha256)),
                )
                .collect(),
            });
            shipment
        }
        Err(e) => {
            let steps = failed(steps, (Phase::Bootstrapping, SHIPPING), started_at, &e);
            return Err((steps, e));
        }
    };
    match run_agent(pod, allocation.id, &shipment, &mut steps) {
        Ok(hello) => Ok(PodSetup {
            allocation,
            agent_sha256: shipment.order.agent_sha256,
            node: hello.node,
            gpus: hello.gpus,
            environment: hello.environment,
            steps,
            shipment,
        }),
        Err(e) => Err((steps, e)),
    }
}

/// Releases `pod`: the teardown step, with any leftover allocation it cancelled named.
pub fn tear_down(pod: &mut dyn Pod) -> (PodStep, Result<Release, PodError>) {
    let started_at = Timestamp::now();
    let released = pod.release();
    let ended_at = Timestamp::now();
    let step = match &released {
        Ok(release) => PodStep {
            started_at,
            ended_at,
            phase: Phase::Teardown,
            name: RELEASING.into(),
            status: StepStatus::Ok,
            detail: if release.leftovers_cancelled.is_empty() {
                vec!["released; no leftover allocation".into()]
            } else {
                release
                    .leftovers_cancelled
                    .iter()
                    .map(|id| format!("leftover allocation {id} cancelled"))
                    .collect()
            },
        },
        Err(e) => PodStep {
            started_at,
            ended_at,
            phase: Phase::Teardown,
            name: RELEASING.into(),
            status: StepStatus::Failed,
            detail: vec![e.to_string()],
        },
    };
    (step, released)
}

/// The steps so far with a failed step `name` of `phase`, started at `started_at`,
/// appended.
fn failed(
    mut steps: Vec<PodStep>,
    (phase, name): (Phase, &str),
    started_at: Timestamp,
    error: &PodError,
) -> Vec<PodStep> {
    steps.push(PodStep {
        started_at,
        ended_at: Timestamp::now(),
        phase,
        name: name.into(),
        status: StepStatus::Failed,
        detail: vec![error.to_string()],
    });
    steps
}

/// What the agent's hello said, checked ([`check_hello`]).
#[derive(Clone, Debug)]
pub struct Hello {
    /// The pod's host name.
    pub node: String,
    /// The GPUs the scheduler gave the agent (`CUDA_VISIBLE_DEVICES`).
    pub gpus: String,
    /// The agent's environment.
    pub environment: BTreeMap<String, String>,
}

/// Runs the agent on `pod` (its allocation `allocation`) and turns its frames into `steps`.
fn run_agent(
    pod: &mut dyn Pod,
    allocation: Option<u64>,
    shipment: &Shipment,
    steps: &mut Vec<PodStep>,
) -> Result<Hello, PodError> {
    let order = shipment.order_path.to_string_lossy().into_owned();
    let mut command = pod.command(&shipment.agent, &["agent".into(), "--order".into(), order])?;
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().map_err(|source| PodError::Spawn {
        program: command.get_program().to_string_lossy().into_owned(),
        source,
    })?;
    let (Some(stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(PodError::Agent("started without its output pipes".into()));
    };
    // Standard error is drained beside the frames, so a chatty agent never blocks; its
    // last 4 KiB explain a failure.
    let errors = thread::spawn(move || {
        let mut text = Vec::new();
        let _ = stderr.read_to_end(&mut text);
        let tail = &text[text.len().saturating_sub(4096)..];
        receipts::text::escape_untrusted(String::from_utf8_lossy(tail).trim_end()).into_owned()
    });
    let read = read_frames(&mut BufReader::new(stdout), shipment, steps);
    let status = child.wait().map_err(|source| PodError::Spawn {
        program: "agent".into(),
        source,
    })?;
    let stderr = errors.join().unwrap_or_default();
    match read {
        Ok(hello) if status.success() => Ok(hello),
        Ok(_) => Err(PodError::Agent(format!(
            "exited {status} after `done`: {stderr}"
        ))),
        Err(e) => {
            // A dead allocation explains a cut stream better than the stream does.
            if !pod.is_alive().unwrap_or(true) {
                return Err(match allocation {
                    Some(id) => PodError::AllocationEnded {
                        id,
                        state: "gone".into(),
                    },
                    None => e,
                });
            }
            match e {
                PodError::Frame(_) | PodError::Agent(_) if !status.success() => {
                    Err(PodError::Agent(format!(
                        "exited {status}: {e}; its standard error: {stderr}"
                    )))
                }
                e => Err(e),
            }
        }
    }
}

/// Reads the agent's frames to `done`, checking its hello.
fn read_frames(
    input: &mut dyn std::io::BufRead,
    shipment: &Shipment,
    steps: &mut Vec<PodStep>,
) -> Result<Hello, PodError> {
    let hello = check_hello(read_frame(input)?, shipment)?;
    let mut since = Timestamp::now();
    loop {
        match read_frame(input)? {
            Some(AgentMessage::Step {
                phase,
                name,
                status,
                detail,
            }) => {
                let failed = status == StepStatus::Failed;
                let ended_at = Timestamp::now();
                steps.push(PodStep {
                    started_at: std::mem::replace(&mut since, ended_at),
                    ended_at,
                    phase,
                    name,
                    status,
                    detail: detail.clone(),
                });
                if failed {
                    return Err(PodError::Agent(format!("failed: {}", detail.join("; "))));
                }
            }
            Some(AgentMessage::Done) => return Ok(hello),
            Some(AgentMessage::Hello { .. }) => {
                return Err(PodError::Agent("said hello twice".into()));
            }
            Some(AgentMessage::Run { .. }) => {
                return Err(PodError::Agent(
                    "sent a run while setting the pod up".into(),
                ));
            }
            None => return Err(PodError::Agent("stopped before `done`".into())),
        }
    }
}

/// The agent's first frame, checked: its hello, from the very binary shipped
/// (`shipment`), with no private key in its environment.
///
/// Errors: [`PodError::Agent`] for anything else.
pub fn check_hello(first: Option<AgentMessage>, shipment: &Shipment) -> Result<Hello, PodError> {
    match first {
        Some(AgentMessage::Hello {
            agent_sha256,
            node,
            gpus,
            environment,
        }) => {
            if agent_sha256 != shipment.order.agent_sha256.as_str() {
                return Err(PodError::Agent(format!(
                    "runs a binary with sha256 {}, not the one shipped ({})",
                    receipts::text::escape_untrusted(&agent_sha256),
                    shipment.order.agent_sha256
                )));
            }
            if let Some(name) = environment
                .iter()
                .find(|(_, value)| receipts::keys::is_private_key_seed(value.as_bytes()))
                .map(|(name, _)| name)
            {
                return Err(PodError::Agent(format!(
                    "has a private key in its environment (`{}`)",
                    receipts::text::escape_untrusted(name)
                )));
            }
            Ok(Hello {
                node,
                gpus,
                environment,
            })
        }
        Some(other) => Err(PodError::Agent(format!(
            "began with {other:?}, not its hello"
        ))),
        None => Err(PodError::Agent("wrote nothing".into())),
    }
}

/// What the agent pulls and downloads for `campaign` on the pod `spec`: the baseline's
/// image by digest (from `spec.registry` when named), and each of the model's weight
/// files from `spec.weights_source` (none without a source).
pub fn campaign_pulls(campaign: &Campaign, spec: &PodSpec) -> (Vec<String>, Vec<WeightOrder>) {
    let images = campaign
        .baseline
        .image
        .iter()
        .map(|image| match &spec.registry {
            Some(registry) => format!("{registry}/{}@{}", image.name, image.manifest_digest),
            None => format!("{}@{}", image.name, image.manifest_digest),
        })
        .collect();
    let weights = match &spec.weights_source {
        Some(source) => campaign
            .model
            .weights
            .iter()
            .map(|w| WeightOrder {
                name: w.name.clone(),
                sha256: w.sha256,
                url: format!("{}/{}", source.trim_end_matches('/'), w.name),
            })
            .collect(),
        None => Vec::new(),
    };
    (images, weights)
}
