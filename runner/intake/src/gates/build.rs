//! Gate `build`: turning a patched tree into something a round can start, behind one
//! trait. For the built-in engine that is parsing and range-checking the patched
//! engine config with the engine's own parser (`builtin_engine::config::EngineConfig::from_toml`;
//! content/submitting.md: whether it fits in memory is the engine's business at start). Docker
//! builds run in `referee build` (content/docker.md, Building), whose builder (in the
//! binary, over `engines::docker`) implements the same trait.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use receipts::model::{Backend, Campaign, Sha256Hex, SubmissionImage};

use super::Violation;

/// What a build produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildOutput {
    /// The patched tree's engine config (`baseline.engine_config_path` inside the tree).
    pub engine_config: PathBuf,
    /// One line for the `built` event, e.g. which config was checked.
    pub summary: String,
    /// The image built (Docker campaigns), recorded on the submission.
    pub image: Option<SubmissionImage>,
}

/// Why a build failed.
#[derive(Debug, thiserror::Error)]
pub enum BuildFailure {
    /// The submission's fault: rejected at gate `build` (the violation names the field).
    #[error(transparent)]
    Rejected(Violation),
    /// Not the submission's fault (I/O, a missing toolchain): the ingest reports an
    /// error and the submission stays in `building`, to be resumed.
    #[error("{message}")]
    Infra {
        /// What went wrong.
        message: String,
    },
}

/// Builds a patched tree for a campaign.
pub trait Builder {
    /// Builds `tree` (a checked-out, patched tree) of the submission whose diff hashes to
    /// `submission` for `campaign` (an image is tagged with that hash).
    ///
    /// Errors: [`BuildFailure::Rejected`] when the tree is at fault,
    /// [`BuildFailure::Infra`] otherwise.
    fn build(
        &self,
        tree: &Path,
        campaign: &Campaign,
        submission: &Sha256Hex,
    ) -> Result<BuildOutput, BuildFailure>;
}

/// The builder of every backend without images: the built-in engine (its config parsed
/// and range-checked) and the `process` backend (its config present as a regular file).
#[derive(Clone, Copy, Debug, Default)]
pub struct BuiltinBuilder;

impl Builder for BuiltinBuilder {
    fn build(
        &self,
        tree: &Path,
        campaign: &Campaign,
        _submission: &Sha256Hex,
    ) -> Result<BuildOutput, BuildFailure> {
        let relative = &campaign.baseline.engine_config_path;
        let engine_config = tree.join(relative);
        let missing = || {
            BuildFailure::Rejected(Violation::NoEngineConfig {
                path: relative.clone(),
            })
        };
        match fs::symlink_metadata(&engine_config) {
            Ok(meta) if meta.file_type().is_file() => {}
            Ok(_) => return Err(missing()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(missing()),
            Err(e) => {
                return Err(BuildFailure::Infra {
                    message: format!("reading `{}`: {e}", engine_config.display()),
                });
            }
        }
        match &campaign.backend {
            Backend::Builtin => {}
            Backend::Process { .. } => {
                return Ok(BuildOutput {
                    summary: format!("engine config `{relative}` present (process backend)"),
                    engine_config,
                    image: None,
                });
            }
            Backend::Docker(_) => {
                return Err(BuildFailure::Infra {
                    message: "a docker campaign's images are built by `referee build`, not by \
                              this builder"
                        .into(),
                });
            }
        }
        let bytes = fs::read(&engine_config).map_err(|e| BuildFailure::Infra {
            message: format!("reading `{}`: {e}", engine_config.display()),
        })?;
        let text = String::from_utf8(bytes).map_err(|_| {
            BuildFailure::Rejected(Violation::BadEngineConfig {
                path: relative.clone(),
                message: format!("`{relative}`: not valid UTF-8"),
            })
        })?;
        builtin_engine::config::EngineConfig::from_toml(relative, &text).map_err(|e| {
            BuildFailure::Rejected(Violation::BadEngineConfig {
                path: relative.clone(),
                message: e.to_string(),
            })
        })?;
        Ok(BuildOutput {
            summary: format!(
                "engine config `{relative}` parses and every value is in range (built-in engine)"
            ),
            engine_config,
            image: None,
        })
    }
}
