//! The re-run's scratch data directory, built from the original bundle's own inputs:
//! the frozen campaign copy (`inputs/campaign.json`, its bytes kept), the pinned baseline
//! commit copied out of the baseline repository by intake's `campaign add` (which checks
//! the commit and its engine config), `inputs/miners.json`, a JSONL prompt source from
//! `inputs/prompts.jsonl`, a keyring trusting only the scratch key, and each recorded
//! diff ingested through intake's gates (on Docker, "built" as the image id the original
//! entry ran). It lives in the system's temporary directory
//! and is removed when the re-run is dropped.

use std::fs;
use std::path::{Path, PathBuf};

use intake::gates::{BuildFailure, BuildOutput, Builder, BuiltinBuilder};
use intake::ingest::{IngestRequest, add_campaign, build_pending, ingest};
use receipts::fsutil::{IoError, write_atomic};
use receipts::keys::{Keyring, PrivateKey, TrustedKey};
use receipts::layout::{CampaignDir, DataDir, DataError, MINERS_INPUT, PROMPTS_INPUT, patch_input};
use receipts::model::{
    Campaign, DockerRun, Entry, FrozenCampaign, PipelineState, PromptSource, RoundRecord,
    Sha256Hex, SubmissionImage, Timestamp,
};

use super::RerunError;

/// A scratch directory, removed (best effort) when dropped.
#[derive(Debug)]
pub(crate) struct Scratch {
    root: PathBuf,
}

impl Scratch {
    /// A fresh directory `referee-rerun-<pid>-<µs>` in the system's temporary directory.
    ///
    /// Errors: [`RerunError::Io`] naming it.
    pub(crate) fn create() -> Result<Self, RerunError> {
        let micros = Timestamp::now().datetime().unix_timestamp_nanos() / 1_000;
        let root =
            std::env::temp_dir().join(format!("referee-rerun-{}-{micros}", std::process::id()));
        fs::create_dir_all(&root).map_err(IoError::at("creating", &root))?;
        Ok(Self { root })
    }

    /// The scratch data directory.
    pub(crate) fn data(&self) -> DataDir {
        DataDir::new(self.root.join("data"))
    }

    /// Freezes the bundle `bundle`'s campaign into the scratch data directory (module
    /// doc) with the commit out of `baseline`, registers its miners and trusts `key`;
    /// returns the campaign's directory.
    ///
    /// Errors: [`RerunError::Setup`] when the repository lacks the pinned commit or its
    /// engine config; [`RerunError::Io`] / [`RerunError::Data`] for the files.
    pub(crate) fn prepare(
        &self,
        bundle: &Path,
        frozen: &FrozenCampaign,
        baseline: &Path,
        key: &PrivateKey,
    ) -> Result<CampaignDir, RerunError> {
        let data = self.data();
        fs::create_dir_all(data.root()).map_err(IoError::at("creating", data.root()))?;
        // `campaign add` copies the pinned commit's objects out of the repository (and
        // checks it holds the engine config); the campaign it freezes names the
        // repository by its path here, so its frozen bytes are replaced by the original's
        // below.
        let baseline = std::path::absolute(baseline).map_err(IoError::at("resolving", baseline))?;
        let mut campaign = frozen.campaign.clone();
        campaign.baseline.repo = baseline.display().to_string();
        // The re-run signs its scratch round with its own key, never an evaluator's.
        let keyids_listed = !campaign.evaluator_keyids.is_empty();
        campaign.evaluator_keyids.clear();
        let toml = self.root.join("campaign.toml");
        let text = campaign.to_toml().map_err(|e| DataError::Parse {
            path: toml.clone(),
            message: e.to_string(),
        })?;
        write_atomic(&toml, text.as_bytes(), 0o644).map_err(IoError::at("writing", &toml))?;
        add_campaign(&data, &toml).map_err(RerunError::Setup)?;
        let campaign_dir = data.campaign(&frozen.campaign.id);
        // The original's frozen bytes, so the scratch round records the original's campaign
        // digest; a campaign listing `evaluator_keyids` is frozen without them instead.
        let bytes = if keyids_listed {
            let mut unlisted = frozen.campaign.clone();
            unlisted.evaluator_keyids.clear();
            FrozenCampaign::freeze(unlisted)
                .map_err(|e| DataError::Parse {
                    path: campaign_dir.campaign_json(),
                    message: e.to_string(),
                })?
                .bytes
        } else {
            frozen.bytes.clone()
        };
        let json = campaign_dir.campaign_json();
        write_atomic(&json, &bytes, 0o644).map_err(IoError::at("writing", &json))?;
        // Its readable copy names the scratch repository: it goes, the frozen bytes stay.
        let readable = campaign_dir.campaign_toml();
        fs::remove_file(&readable).map_err(IoError::at("removing", &readable))?;
        if let PromptSource::Jsonl { path, .. } = &frozen.campaign.workload.prompt_source {
            let dest = relative_inside(campaign_dir.root(), path)?;
            copy(&bundle.join(PROMPTS_INPUT), &dest)?;
        }
        copy(&bundle.join(MINERS_INPUT), &campaign_dir.miners_json())?;
        let epoch = Timestamp::from_unix_seconds(0).map_err(|e| DataError::Parse {
            path: data.keyring_path(),
            message: e.to_string(),
        })?;
        Keyring::new(vec![TrustedKey {
            key: key.public().clone(),
            valid_from: epoch,
            valid_until: None,
        }])
        .and_then(|keyring| keyring.save(&data.keyring_path()))
        .map_err(RerunError::Key)?;
        Ok(campaign_dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // Best effort: a scratch directory left behind holds nothing secret (the scratch
        // key was never written) and lives in the temporary directory.
        let _ = fs::remove_dir_all(&self.root);
    }
}

/// The baseline repository of the data directory the bundle `dir` lies in
/// (`<data>/<campaign>/rounds/<n>`): `<data>/<campaign>/baseline.git`, when that
/// campaign's `campaign.json` has the receipt's campaign digest.
pub(crate) fn baseline_next_to(dir: &Path, record: &RoundRecord) -> Option<PathBuf> {
    let rounds = dir
        .parent()
        .filter(|p| p.file_name().is_some_and(|n| n == "rounds"))?;
    let campaign = rounds.parent()?;
    let bytes = fs::read(campaign.join("campaign.json")).ok()?;
    (Sha256Hex::digest(&bytes) == record.campaign.digest)
        .then(|| campaign.join("baseline.git"))
        .filter(|repo| repo.is_dir())
}

/// Ingests the recorded diff of `entry` (`inputs/patches/<sha256>.diff` of `bundle`),
/// committed by its miner, through intake's gates. Returns `None` when it reached
/// `bench_queued`, else where it stopped and why (the re-run broke there).
///
/// Errors: [`RerunError::Setup`] when the gate machinery itself fails.
pub(crate) fn ingest_entry(
    campaign_dir: &CampaignDir,
    bundle: &Path,
    entry: &Entry,
) -> Result<Option<String>, RerunError> {
    let (Some(patch), Some(miner)) = (&entry.patch, &entry.miner) else {
        return Ok(None);
    };
    let path = bundle.join(patch_input(patch));
    let diff = fs::read(&path).map_err(IoError::at("reading", &path))?;
    let request = IngestRequest {
        diff: &diff,
        miner,
        commitment: patch,
    };
    let outcome = ingest(campaign_dir, &request, &BuiltinBuilder).map_err(RerunError::Setup)?;
    let mut submission = outcome.submission().clone();
    // A Docker campaign's ingest stops in `building`: the image is the one the original
    // entry ran, by its recorded id, never one rebuilt here.
    if submission.state == PipelineState::Building
        && let Some(run) = &entry.engine.docker
    {
        let builder = RecordedImage { patch, run };
        let moved = build_pending(campaign_dir, &builder, None).map_err(RerunError::Setup)?;
        if let Some(built) = moved.into_iter().find(|s| &s.sha256 == patch) {
            submission = built;
        }
    }
    if submission.state == PipelineState::BenchQueued {
        return Ok(None);
    }
    Ok(Some(format!(
        "the recorded diff stopped at `{}` in intake's gates: {}",
        submission.state.as_str(),
        submission.last_reason().unwrap_or("no reason recorded")
    )))
}

/// The "build" of a re-run's Docker entry: the image the original entry ran, by the id
/// its receipt recorded (`engine.docker.imageId`), for the one submission it belongs to.
/// Nothing is built; the round finds the image on the daemon by that id or fails the
/// entry (content/verifying.md, Re-running a round).
struct RecordedImage<'a> {
    patch: &'a Sha256Hex,
    run: &'a DockerRun,
}

impl Builder for RecordedImage<'_> {
    fn build(
        &self,
        tree: &Path,
        campaign: &Campaign,
        submission: &Sha256Hex,
    ) -> Result<BuildOutput, BuildFailure> {
        if submission != self.patch {
            return Err(BuildFailure::Infra {
                message: format!(
                    "the re-run holds the recorded image of {}, not of {submission}",
                    self.patch
                ),
            });
        }
        let summary = format!(
            "not rebuilt: the image the original round ran, `{}` (`{}`), by its recorded id",
            self.run.image_id, self.run.image_reference
        );
        Ok(BuildOutput {
            engine_config: tree.join(&campaign.baseline.engine_config_path),
            image: Some(SubmissionImage {
                tag: self.run.image_reference.clone(),
                image_id: self.run.image_id.clone(),
                manifest_digest: self.run.manifest_digest.clone(),
                // The re-run's build output is this one line.
                build_log_sha256: Sha256Hex::digest(summary.as_bytes()),
            }),
            summary,
        })
    }
}

/// `relative` (a campaign's path, relative to its directory) inside `root`.
///
/// Errors: [`RerunError::Io`] for a path that is absolute or leaves `root`.
fn relative_inside(root: &Path, relative: &str) -> Result<PathBuf, RerunError> {
    let normal = !relative.is_empty()
        && Path::new(relative)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
    if !normal {
        return Err(RerunError::Io(IoError {
            action: "placing the prompt source",
            path: root.join(relative),
            source: std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "the campaign's prompt path is not relative to its directory",
            ),
        }));
    }
    Ok(root.join(relative))
}

/// Copies the file `from` to `to` (its directory created).
///
/// Errors: [`RerunError::Io`] naming the file that failed.
fn copy(from: &Path, to: &Path) -> Result<(), RerunError> {
    let bytes = fs::read(from).map_err(IoError::at("reading", from))?;
    if let Some(parent) = to.parent() {
        fs::create_dir_all(parent).map_err(IoError::at("creating", parent))?;
    }
    write_atomic(to, &bytes, 0o644).map_err(IoError::at("writing", to))?;
    Ok(())
}
