//! `referee campaign add` and `referee miner add` (content/data-directory.md): a
//! campaign is frozen into `data/<id>/` — its validated TOML with every default written
//! out, and a bare copy of exactly the pinned commit's objects in `baseline.git` — and
//! never changes after; miners are appended to `miners.json`.

use receipts::fsutil::IoError;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use git2::{ObjectType, Oid, Repository};
use receipts::fsutil::write_atomic;
use receipts::model::{
    Campaign, FrozenCampaign, MinerId, ROUND_PREDICATE_TYPE, RegisteredMiner, Sha256Hex, Timestamp,
};

use super::IngestError;
use crate::gates::surface::DeniedGlobs;
use crate::repository::queue::{
    HotkeyRegistration, MAX_REGISTRATION_CHARS, registration_reference_ok,
};
use crate::store::CampaignStore;
use receipts::layout::{CampaignDir, DataDir, DataError, model_error_message};

/// What `add_campaign` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddedCampaign {
    /// The validated campaign.
    pub campaign: Campaign,
    /// sha256 of its frozen `campaign.json` (the digest every receipt records).
    pub digest: Sha256Hex,
    /// The campaign's directory.
    pub dir: PathBuf,
    /// Whether the same campaign was already frozen (nothing was written).
    pub already_frozen: bool,
}

/// Freezes the campaign file at `campaign_toml` into `data`: validates it, checks that
/// `baseline.repo` (relative to the campaign file) is a git repository holding
/// `baseline.commit` with a file at `baseline.engine_config_path`, copies that commit's
/// objects into `data/<id>/baseline.git`, and writes the frozen `data/<id>/campaign.json`
/// (canonical JSON with its `schemaVersion`, content/data-directory.md) and a readable
/// `campaign.toml` with every default written out. Adding an identical campaign again is
/// a no-op.
///
/// Errors: [`IngestError::Campaign`] for an invalid file, repository or commit;
/// [`IngestError::CampaignConflict`] when a different campaign has the
/// id.
pub fn add_campaign(data: &DataDir, campaign_toml: &Path) -> Result<AddedCampaign, IngestError> {
    let bad = |path: &Path, message: String| IngestError::Campaign {
        path: path.to_path_buf(),
        message,
    };
    let text = fs::read_to_string(campaign_toml).map_err(|source| {
        IngestError::Io(IoError {
            action: "reading",
            path: campaign_toml.to_path_buf(),
            source,
        })
    })?;
    let source = campaign_toml.display().to_string();
    // `IngestError::Campaign` names the file: the message names it no second time.
    let mut campaign = Campaign::from_toml(&source, &text)
        .map_err(|e| bad(campaign_toml, model_error_message(e, &source)))?;
    DeniedGlobs::new(&campaign.surface.denied_paths).map_err(|(pattern, message)| {
        bad(
            campaign_toml,
            format!("surface.denied_paths: glob `{pattern}` does not compile: {message}"),
        )
    })?;
    let base = campaign_toml.parent().unwrap_or(Path::new("."));
    let repo_path = base.join(&campaign.baseline.repo);
    let source = Repository::open(&repo_path).map_err(|e| {
        bad(
            &repo_path,
            format!("baseline.repo is not a git repository: {}", e.message()),
        )
    })?;
    let commit = check_pinned_commit(&source, &repo_path, &campaign)?;

    let dir = data.campaign(&campaign.id);
    let _lock = dir.lock_for_add()?;
    match dir.load_campaign() {
        Ok(existing) => {
            // Compared as values, not digests: a campaign frozen before `campaign.json`
            // existed keeps its schema-1 digest. The floor it was frozen with (none
            // before it was recorded) is its own, not the file's.
            if campaign.min_predicate.is_none() {
                campaign.min_predicate = existing.campaign.min_predicate.clone();
            }
            if existing.campaign != campaign {
                let new = FrozenCampaign::freeze(campaign)
                    .map_err(|e| bad(campaign_toml, e.to_string()))?
                    .digest;
                return Err(IngestError::CampaignConflict {
                    id: existing.campaign.id.to_string(),
                    existing: Box::new(existing.digest),
                    new: Box::new(new),
                });
            }
            copy_commit(&source, commit, &dir)?;
            return Ok(AddedCampaign {
                campaign: existing.campaign,
                digest: existing.digest,
                dir: dir.root().to_path_buf(),
                already_frozen: true,
            });
        }
        Err(DataError::NoCampaign { .. }) => {}
        Err(other) => return Err(other.into()),
    }
    copy_commit(&source, commit, &dir)?;
    // From now on a campaign's receipts are at least of the version this build seals.
    if campaign.min_predicate.is_none() {
        campaign.min_predicate = Some(ROUND_PREDICATE_TYPE.to_owned());
    }
    let readable = campaign
        .to_toml()
        .map_err(|e| bad(campaign_toml, e.to_string()))?;
    let frozen = FrozenCampaign::freeze(campaign).map_err(|e| bad(campaign_toml, e.to_string()))?;
    // campaign.json first: it is the frozen form; campaign.toml is its readable copy.
    for (path, bytes) in [
        (dir.campaign_json(), frozen.bytes.as_slice()),
        (dir.campaign_toml(), readable.as_bytes()),
    ] {
        write_atomic(&path, bytes, 0o644).map_err(|source| {
            IngestError::Io(IoError {
                action: "writing",
                path: path.clone(),
                source,
            })
        })?;
    }
    Ok(AddedCampaign {
        digest: frozen.digest,
        campaign: frozen.campaign,
        dir: dir.root().to_path_buf(),
        already_frozen: false,
    })
}

/// Registers `miner` in the campaign's `miners.json` (append-only).
///
/// Errors: [`IngestError::MinerExists`] for a second registration; the campaign must
/// exist ([`receipts::layout::DataError::NoCampaign`]).
pub fn add_miner(
    campaign_dir: &CampaignDir,
    miner: &MinerId,
) -> Result<RegisteredMiner, IngestError> {
    add_hotkey(campaign_dir, miner, None)
}

/// [`add_miner`] with a hotkey's registration (its coldkey, role and registration
/// reference; content/repository-submissions.md, Queue), which a repository campaign's
/// ingest requires.
///
/// Errors: as [`add_miner`]; [`IngestError::Campaign`] for a registration reference
/// that is empty, too long or has whitespace or control characters.
pub fn add_hotkey(
    campaign_dir: &CampaignDir,
    miner: &MinerId,
    registration: Option<&HotkeyRegistration>,
) -> Result<RegisteredMiner, IngestError> {
    if let Some(r) = registration
        && !registration_reference_ok(&r.registration)
    {
        return Err(IngestError::Campaign {
            path: campaign_dir.miners_json(),
            message: format!(
                "--registration must be 1 to {MAX_REGISTRATION_CHARS} characters without whitespace or control characters"
            ),
        });
    }
    let _lock = campaign_dir.lock()?;
    campaign_dir.load_campaign()?;
    let mut registry = campaign_dir.load_miners()?;
    if registry.contains(miner) {
        return Err(IngestError::MinerExists {
            miner: miner.clone(),
            campaign: campaign_dir.id().to_string(),
        });
    }
    let registered = RegisteredMiner {
        id: miner.clone(),
        registered_at: Timestamp::now(),
        coldkey: registration.map(|r| r.coldkey.to_string()),
        role: registration.map(|r| r.role),
        registration: registration.map(|r| r.registration.clone()),
    };
    registry.miners.push(registered.clone());
    campaign_dir.save_miners(&registry)?;
    Ok(registered)
}

/// The pinned commit exists and has a regular file at `baseline.engine_config_path`.
fn check_pinned_commit(
    repo: &Repository,
    repo_path: &Path,
    campaign: &Campaign,
) -> Result<Oid, IngestError> {
    let bad = |message: String| IngestError::Campaign {
        path: repo_path.to_path_buf(),
        message,
    };
    let pinned = &campaign.baseline.commit;
    let id = Oid::from_str(pinned)
        .map_err(|e| bad(format!("baseline.commit `{pinned}`: {}", e.message())))?;
    let commit = repo.find_commit(id).map_err(|_| {
        bad(format!(
            "baseline.commit `{pinned}` is not a commit of this repository"
        ))
    })?;
    let tree = commit
        .tree()
        .map_err(|e| bad(format!("reading the tree of `{pinned}`: {}", e.message())))?;
    let config = &campaign.baseline.engine_config_path;
    let entry = tree.get_path(Path::new(config)).map_err(|_| {
        bad(format!(
            "baseline.engine_config_path `{config}` does not exist in commit `{pinned}`"
        ))
    })?;
    let regular = matches!(entry.filemode_raw(), 0o100644 | 0o100755);
    if entry.kind() != Some(ObjectType::Blob) || !regular {
        return Err(bad(format!(
            "baseline.engine_config_path `{config}` is not a regular file in commit `{pinned}`"
        )));
    }
    Ok(id)
}

/// Copies the objects of `commit` (the commit and its whole tree, not its history) from
/// `source` into the bare repository `baseline.git`, created if missing, and points
/// `refs/referee/baseline` at it. Local only: a pack built in memory and indexed into the
/// destination.
fn copy_commit(source: &Repository, commit: Oid, dir: &CampaignDir) -> Result<(), IngestError> {
    let dest_path = dir.baseline_repo();
    let git = |action: &str| {
        let action = action.to_owned();
        let path = dest_path.clone();
        move |e: git2::Error| IngestError::Campaign {
            path,
            message: format!("{action}: {}", e.message()),
        }
    };
    let dest = if dest_path.join("objects").is_dir() {
        Repository::open_bare(&dest_path).map_err(git("opening baseline.git"))?
    } else {
        Repository::init_bare(&dest_path).map_err(git("creating baseline.git"))?
    };
    if dest.find_commit(commit).and_then(|c| c.tree()).is_ok() {
        return Ok(());
    }
    let mut builder = source
        .packbuilder()
        .map_err(git("packing the pinned commit"))?;
    builder
        .insert_commit(commit)
        .map_err(git("packing the pinned commit"))?;
    let odb = dest.odb().map_err(git("opening baseline.git objects"))?;
    let mut writer = odb.packwriter().map_err(git("writing the pack"))?;
    let mut write_error = None;
    builder
        .foreach(|chunk| match writer.write_all(chunk) {
            Ok(()) => true,
            Err(e) => {
                write_error = Some(e);
                false
            }
        })
        .map_err(git("writing the pack"))?;
    if let Some(source) = write_error {
        return Err(IngestError::Io(IoError {
            action: "writing a pack into",
            path: dest_path.clone(),
            source,
        }));
    }
    writer.commit().map_err(git("indexing the pack"))?;
    dest.reference(
        "refs/referee/baseline",
        commit,
        true,
        "referee campaign add",
    )
    .map_err(git("pointing refs/referee/baseline at the pinned commit"))?;
    Ok(())
}
