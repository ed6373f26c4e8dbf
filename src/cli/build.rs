//! `referee build`: the build worker of a Docker campaign (content/docker.md, Building).
//! `referee ingest` stops a Docker campaign's submissions in `building`; this command
//! builds each one's patched tree from its own Dockerfile through the daemon (the build
//! context is the tree as a tar stream, no network during the build), tags the image with
//! the submission hash and records the image on the submission record, outside the
//! campaign's records lock while it builds (`intake::ingest::build_pending`). One run
//! builds what waits and exits, so cron can loop it.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use engines::docker::{Daemon, DockerError, build::context_tar};
use intake::gates::{BuildFailure, BuildOutput, Builder, Violation};
use intake::ingest::build_pending;
use receipts::layout::DataDir;
use receipts::model::{Backend, Campaign, CampaignId, PipelineState, Sha256Hex, SubmissionImage};
use receipts::text::escape_untrusted;

use super::DataArgs;

/// Exit codes of `referee build`, shown in its `--help`.
pub const BUILD_EXIT_CODES: &str = "Exit status: 0 when every submission waiting in \
`building` was built (or none waits); 1 when a build failed (the submission is rejected at \
gate `build`, the daemon's message printed); 2 on a usage or I/O error, or a daemon that \
does not answer (the submission stays in `building` for the next run).";

/// The Dockerfile of a patched tree: at its root.
const DOCKERFILE: &str = "Dockerfile";

/// Lines of the build output a failed build's reason quotes.
const REASON_TAIL_LINES: usize = 5;

/// Arguments of `referee build`.
#[derive(clap::Args, Debug)]
#[command(after_help = BUILD_EXIT_CODES)]
pub struct BuildArgs {
    /// The campaign id (its backend must be `docker`).
    #[arg(long)]
    pub campaign: CampaignId,
    /// Build at most one submission (the oldest waiting), then exit.
    #[arg(long)]
    pub once: bool,
    /// The daemon to build on; default `DOCKER_HOST`, else the local socket. A remote
    /// daemon may build (only measured runs must be local).
    #[arg(long, value_name = "URL")]
    pub docker_host: Option<String>,
    #[command(flatten)]
    pub data: DataArgs,
    #[command(flatten)]
    pub keys: super::ingest::StatementKeyArgs,
}

/// The image builder `referee build` injects into intake's build gate: a hermetic build
/// of the tree's Dockerfile on the daemon, tagged `referee/<campaign>:<submission hash>`.
struct DockerImageBuilder {
    daemon: Daemon,
}

impl Builder for DockerImageBuilder {
    fn build(
        &self,
        tree: &Path,
        campaign: &Campaign,
        submission: &Sha256Hex,
    ) -> Result<BuildOutput, BuildFailure> {
        let infra = |message: String| BuildFailure::Infra { message };
        if let Backend::Docker(spec) = &campaign.backend
            && let Some(registry) = &spec.registry
        {
            return Err(infra(format!(
                "backend.registry `{registry}`: pushing built images is not in this build; \
                 remove `registry` to keep images on the building host"
            )));
        }
        let context = context_tar(tree).map_err(|e| infra(e.to_string()))?;
        let tag = image_tag(&campaign.id, submission);
        let built = match self.daemon.build_image(context, DOCKERFILE, &tag) {
            Ok(built) => built,
            Err(DockerError::BuildFailed {
                message, log_tail, ..
            }) => {
                let tail = &log_tail[log_tail.len().saturating_sub(REASON_TAIL_LINES)..];
                let message = if tail.is_empty() {
                    message
                } else {
                    format!("{message}; the build output ends: {}", tail.join(" | "))
                };
                return Err(BuildFailure::Rejected(Violation::ImageBuildFailed {
                    message,
                }));
            }
            Err(other) => return Err(infra(other.to_string())),
        };
        if !SubmissionImage::is_image_id(&built.image_id) {
            return Err(infra(format!(
                "the daemon reports the image id `{}` for `{tag}`, not `sha256:<64 hex>`",
                built.image_id
            )));
        }
        Ok(BuildOutput {
            engine_config: tree.join(&campaign.baseline.engine_config_path),
            summary: format!(
                "image `{tag}` built from `{DOCKERFILE}` with no network: id {}; build log \
                 sha256 {}; not pushed (no backend.registry)",
                built.image_id, built.log_sha256
            ),
            image: Some(SubmissionImage {
                tag,
                image_id: built.image_id,
                manifest_digest: None,
                build_log_sha256: built.log_sha256,
            }),
        })
    }
}

/// The tag of a submission's image: `referee/<campaign>:<submission sha256>`.
pub fn image_tag(campaign: &CampaignId, submission: &Sha256Hex) -> String {
    format!("referee/{campaign}:{submission}")
}

pub fn run(args: BuildArgs) -> anyhow::Result<ExitCode> {
    let campaign_dir = DataDir::new(&args.data.data).campaign(&args.campaign);
    let campaign = campaign_dir.load_campaign()?.campaign;
    if !matches!(campaign.backend, Backend::Docker(_)) {
        anyhow::bail!(
            "campaign `{}` does not use the `docker` backend: its builds run in `referee \
             ingest`",
            args.campaign
        );
    }
    let mut out = std::io::stdout().lock();
    let waiting = campaign_dir
        .list_submissions()?
        .iter()
        .filter(|s| s.state == PipelineState::Building)
        .count();
    if waiting == 0 {
        writeln!(out, "nothing waits in `building`")?;
        return Ok(ExitCode::SUCCESS);
    }
    let daemon = Daemon::connect(args.docker_host.as_deref())?;
    let builder = DockerImageBuilder { daemon };
    let limit = args.once.then_some(1);
    let statements = super::ingest::StatementKeys::open(&args.data.data, &args.keys)?;
    let moved = build_pending(&campaign_dir, &builder, limit)
        .with_context(|| format!("building the submissions of `{}`", args.campaign))?;
    // A build's rejection is logged as a gate's (the commitment was logged at ingest).
    if let Some(statements) = &statements {
        for s in &moved {
            statements.log_submission(&campaign_dir, s)?;
        }
    }
    let mut failed = false;
    for s in &moved {
        match &s.image {
            Some(image) if s.state == PipelineState::BenchQueued => writeln!(
                out,
                "{}  built  {}  {}",
                s.sha256.short(),
                image.image_id,
                image.tag
            )?,
            _ => {
                failed = true;
                writeln!(
                    out,
                    "{}  {}  {}",
                    s.sha256.short(),
                    s.state,
                    escape_untrusted(s.last_reason().unwrap_or_default())
                )?;
            }
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
