//! `referee agent`, the side of a pod that runs there (content/pods.md, The agent): it
//! reads its order from the staging directory, reports what it is (its own sha256, the
//! node, the GPUs the scheduler gave it, its environment), verifies every shipped file,
//! pulls the engine images by digest and makes the weights ready in the node's cache,
//! each a step reported as a frame on its standard output. It holds no key and signs
//! nothing: the evaluator checks what comes back.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::Command;

use receipts::fsutil::IoError;
use receipts::model::{Phase, StepStatus};

use super::frame::{AgentMessage, write_frame};
use super::ship::AgentOrder;
use super::weights::{Fetched, fetch_into_cache};
use super::{PodError, run_to_end};

/// The setup steps' names, as content/rounds.md words them.
pub const PREPARING: &str = "Preparing the pod";
/// See [`PREPARING`].
pub const PULLING: &str = "Pulling engine images";
/// See [`PREPARING`].
pub const DOWNLOADING: &str = "Downloading model weights";

/// Runs the order at `order_path` (in the staging directory, next to every file it
/// names), writing frames to `out`.
///
/// Errors: [`PodError`] for an order that cannot be read, a shipped file whose digest
/// changed, an image that cannot be pulled or a weight that cannot be made ready; the
/// failed step's frame is written first.
pub fn run_agent(order_path: &Path, out: &mut dyn Write) -> Result<(), PodError> {
    let bytes = std::fs::read(order_path).map_err(IoError::at("reading", order_path))?;
    let order: AgentOrder =
        serde_json::from_slice(&bytes).map_err(|e| PodError::Agent(format!("order: {e}")))?;
    let staging = order_path.parent().unwrap_or(Path::new("."));
    let frame = |out: &mut dyn Write, message: &AgentMessage| {
        write_frame(out, message).map_err(IoError::at("writing", Path::new("<stdout>")))
    };

    say_hello(out)?;

    let step = |out: &mut dyn Write,
                phase: Phase,
                name: &str,
                result: Result<(StepStatus, Vec<String>), PodError>| {
        let (status, detail, error) = match result {
            Ok((status, detail)) => (status, detail, None),
            Err(e) => (StepStatus::Failed, vec![e.to_string()], Some(e)),
        };
        frame(
            out,
            &AgentMessage::Step {
                phase,
                name: name.to_owned(),
                status,
                detail,
            },
        )?;
        error.map_or(Ok(()), Err)
    };

    step(
        out,
        Phase::Bootstrapping,
        PREPARING,
        verify_shipped(staging, &order),
    )?;
    step(
        out,
        Phase::PullingImage,
        PULLING,
        pull_images(&order.images),
    )?;
    step(
        out,
        Phase::DownloadingModel,
        DOWNLOADING,
        ready_weights(&order),
    )?;
    frame(out, &AgentMessage::Done)?;
    Ok(())
}

/// Every shipped file hashed again against the order.
fn verify_shipped(
    staging: &Path,
    order: &AgentOrder,
) -> Result<(StepStatus, Vec<String>), PodError> {
    let mut detail = Vec::with_capacity(order.files.len());
    for file in &order.files {
        let path = staging.join(&file.path);
        let actual = receipts::bundle::file_sha256(&path).map_err(IoError::at("reading", &path))?;
        if actual != file.sha256 {
            return Err(PodError::Agent(format!(
                "found `{}` with sha256 {actual}, shipped as {}",
                file.path, file.sha256
            )));
        }
        detail.push(format!("{} sha256:{}", file.path, file.sha256));
    }
    Ok((StepStatus::Ok, detail))
}

/// Each image pulled by digest with the node's `docker`; none: skipped.
fn pull_images(images: &[String]) -> Result<(StepStatus, Vec<String>), PodError> {
    if images.is_empty() {
        return Ok((
            StepStatus::Skipped,
            vec!["no engine image: the entries run from the shipped binary".into()],
        ));
    }
    let mut detail = Vec::with_capacity(images.len());
    for image in images {
        if !image.contains("@sha256:") {
            return Err(PodError::Agent(format!(
                "was asked to pull `{}`, which names no digest",
                receipts::text::escape_untrusted(image)
            )));
        }
        run_to_end(Command::new("docker").args(["pull", "--quiet", image]))?;
        detail.push(format!("{image} pulled"));
    }
    Ok((StepStatus::Ok, detail))
}

/// Each weight file ready in the cache, verified; none: skipped.
fn ready_weights(order: &AgentOrder) -> Result<(StepStatus, Vec<String>), PodError> {
    if order.weights.is_empty() {
        return Ok((
            StepStatus::Skipped,
            vec!["no weight file: the model's weights are drawn from its config".into()],
        ));
    }
    let mut detail = Vec::with_capacity(order.weights.len());
    for weight in &order.weights {
        let (_, fetched) = fetch_into_cache(&order.weights_cache, weight)?;
        detail.push(match fetched {
            Fetched::Cached => format!("{} sha256:{} cached, verified", weight.name, weight.sha256),
            Fetched::Downloaded(bytes) => format!(
                "{} sha256:{} downloaded ({bytes} bytes), verified",
                weight.name, weight.sha256
            ),
        });
    }
    Ok((StepStatus::Ok, detail))
}

/// Writes the agent's hello: its own sha256 as the pod reads its executable, the node,
/// the GPUs the scheduler gave it and its whole environment (for the evaluator to check
/// that nothing of its own reached the pod).
///
/// Errors: [`PodError::Io`] when the executable cannot be read or `out` written.
pub fn say_hello(out: &mut dyn Write) -> Result<(), PodError> {
    let exe = std::env::current_exe().map_err(IoError::at("locating", Path::new("<self>")))?;
    let agent_sha256 = receipts::bundle::file_sha256(&exe).map_err(IoError::at("reading", &exe))?;
    let environment: BTreeMap<String, String> = std::env::vars_os()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect();
    write_frame(
        out,
        &AgentMessage::Hello {
            agent_sha256: agent_sha256.as_str().to_owned(),
            node: std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|h| h.trim().to_owned())
                .unwrap_or_default(),
            gpus: environment
                .get("CUDA_VISIBLE_DEVICES")
                .cloned()
                .unwrap_or_default(),
            environment,
        },
    )
    .map_err(IoError::at("writing", Path::new("<stdout>")))?;
    Ok(())
}
