//! Gate `applied`: libgit2 applies the parsed diff to the pinned tree (in memory), checks
//! the result out into an empty directory, and the directory is compared, file by file,
//! with the baseline: the paths that differ must be exactly the ones the surface checks
//! approved, each a regular file inside the directory. A conflict names the file and the
//! hunk libgit2 was applying (its delta and hunk callbacks say where it is).
//!
//! Nothing is written outside `dest`: the postimage objects live in the in-memory object
//! database of [`Baseline`], and the checkout's only target is `dest`. On a failed apply
//! or check, `apply_checked` leaves `dest` for its caller to remove (the ingest's
//! temporary directory; [`prepare_tree`] removes what it created).

use receipts::fsutil::IoError;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use git2::build::CheckoutBuilder;
use git2::{ApplyOptions, ObjectType, Oid};
use receipts::model::{Campaign, Sha256Hex, SubmissionKind};

use super::baseline::{Baseline, MODE_SYMLINK, MODE_TREE};
use super::surface::{Approved, DeniedGlobs, inspect};
use super::{GateError, GateOutcomeError, Violation, Violations};
use receipts::layout::CampaignDir;

/// A tree written by [`apply_checked`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppliedTree {
    /// The directory it was written to.
    pub root: PathBuf,
    /// Paths that differ from the baseline (equal to the approved set).
    pub changed_paths: BTreeSet<String>,
}

/// A checked-out tree for a round entry ([`prepare_tree`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreparedTree {
    /// The tree's root (the `dest` given).
    pub root: PathBuf,
    /// `root` joined with `baseline.engine_config_path`.
    pub engine_config: PathBuf,
    /// Paths the diff changed (empty for the baseline).
    pub changed_paths: BTreeSet<String>,
}

/// Applies `parsed` (whose checks gave `approved`) onto the pinned tree and checks it out
/// into `dest`, which must be missing or an empty directory; then compares `dest` with
/// the baseline.
///
/// Errors: [`Violation::DoesNotApply`], [`Violation::ChangedSetMismatch`] and
/// [`Violation::NotRegularFile`] (gate `applied`); [`GateError`] when `dest` is not empty
/// or cannot be read.
pub fn apply_checked(
    baseline: &Baseline,
    diff: &git2::Diff<'_>,
    approved: &Approved,
    dest: &Path,
) -> Result<AppliedTree, GateOutcomeError> {
    ensure_empty_dir(dest)?;
    let commit = baseline.commit_id().to_string();
    let does_not_apply = |e: git2::Error| Violation::DoesNotApply {
        commit: commit.clone(),
        path: None,
        hunk: None,
        header: None,
        message: e.message().to_owned(),
    };
    let repo = baseline.repo();
    let tree = baseline.tree()?;
    let mut index = apply_located(repo, &tree, diff).map_err(|(e, at)| {
        // A hunk is named only when libgit2's failure is a hunk's.
        let hunk_failed = e.message().starts_with("hunk ")
            || e.message().starts_with("preimage does not contain line");
        let (hunk, header) = match at.hunk {
            Some((number, header)) if hunk_failed => (Some(number), Some(header)),
            _ => (None, None),
        };
        Violation::DoesNotApply {
            commit: commit.clone(),
            path: at.path,
            hunk,
            header,
            message: e.message().to_owned(),
        }
    })?;
    let new_tree_id = index.write_tree_to(repo).map_err(does_not_apply)?;
    let new_tree = repo.find_tree(new_tree_id).map_err(does_not_apply)?;
    checkout(repo, new_tree.as_object(), dest).map_err(does_not_apply)?;
    let on_disk = snapshot(dest)?;
    let changed_paths = changed_paths(baseline, &on_disk);
    if changed_paths != approved.changed_paths {
        return Err(Violation::ChangedSetMismatch {
            unexpected: changed_paths
                .difference(&approved.changed_paths)
                .cloned()
                .collect(),
            missing: approved
                .changed_paths
                .difference(&changed_paths)
                .cloned()
                .collect(),
        }
        .into());
    }
    let root = fs::canonicalize(dest).map_err(|source| {
        GateError::Io(IoError {
            action: "resolving",
            path: dest.to_path_buf(),
            source,
        })
    })?;
    for path in &changed_paths {
        let full = dest.join(path);
        match fs::symlink_metadata(&full) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Ok(meta) if meta.file_type().is_file() => {}
            _ => return Err(Violation::NotRegularFile { path: path.clone() }.into()),
        }
        let inside = fs::canonicalize(&full).is_ok_and(|p| p.starts_with(&root));
        if !inside {
            return Err(Violation::NotRegularFile { path: path.clone() }.into());
        }
    }
    Ok(AppliedTree {
        root: dest.to_path_buf(),
        changed_paths,
    })
}

/// Where libgit2 was when an apply failed: the file (its new path; the old one of a
/// deletion) and the hunk within it (1-based number and `@@` line), as its callbacks last
/// announced them.
#[derive(Debug, Default)]
struct ApplyLocation {
    path: Option<String>,
    hunk: Option<(usize, String)>,
    hunks_seen: usize,
}

/// `repo.apply_to_tree`, remembering which file and hunk libgit2 was applying (its delta
/// and hunk callbacks run before each), so a failure can name them.
fn apply_located(
    repo: &git2::Repository,
    tree: &git2::Tree<'_>,
    diff: &git2::Diff<'_>,
) -> Result<git2::Index, (git2::Error, ApplyLocation)> {
    let location = RefCell::new(ApplyLocation::default());
    let result = {
        let mut options = ApplyOptions::new();
        options.delta_callback(|delta| {
            if let Some(delta) = delta {
                let file = if delta.status() == git2::Delta::Deleted {
                    delta.old_file()
                } else {
                    delta.new_file()
                };
                let mut at = location.borrow_mut();
                at.path = file
                    .path_bytes()
                    .map(|p| String::from_utf8_lossy(p).into_owned());
                at.hunk = None;
                at.hunks_seen = 0;
            }
            true
        });
        options.hunk_callback(|hunk| {
            if let Some(hunk) = hunk {
                let mut at = location.borrow_mut();
                at.hunks_seen += 1;
                let header = String::from_utf8_lossy(hunk.header());
                let header: String = header.trim_end().chars().take(120).collect();
                at.hunk = Some((at.hunks_seen, header));
            }
            true
        });
        repo.apply_to_tree(tree, diff, Some(&mut options))
    };
    result.map_err(|e| (e, location.into_inner()))
}

/// Checks the pinned tree out into `dest` (missing or empty).
///
/// Errors: [`GateError`] when `dest` is not empty or libgit2 fails.
pub fn checkout_baseline(baseline: &Baseline, dest: &Path) -> Result<(), GateError> {
    ensure_empty_dir(dest)?;
    let tree = baseline.tree()?;
    checkout(baseline.repo(), tree.as_object(), dest).map_err(|source| GateError::Git {
        action: format!("checking the baseline out into `{}`", dest.display()),
        repo: baseline.repo_path().to_path_buf(),
        source,
    })
}

/// Checks out the tree of a round entry into `dest` (missing or empty): the pinned
/// baseline (`patch = None`), the baseline with the stored diff
/// `submissions/<patch>.diff` applied by the same checks and apply as the ingest, or in
/// a repository campaign the submission's own fetched tree as reviewed
/// ([`crate::repository::checkout::checkout_tree`]). On failure, `dest` is removed.
///
/// Errors: [`GateError::Rejected`] when the stored diff no longer passes its gates;
/// [`GateError::Checkout`] when a repository's tree is not the one reviewed;
/// [`GateError`] for a missing baseline, an unreadable diff or a non-empty `dest`.
pub fn prepare_tree(
    campaign_dir: &CampaignDir,
    campaign: &Campaign,
    patch: Option<&Sha256Hex>,
    dest: &Path,
) -> Result<PreparedTree, GateError> {
    let existed = dest.exists();
    let result = prepare_tree_inner(campaign_dir, campaign, patch, dest);
    if result.is_err() && !existed {
        let _ = fs::remove_dir_all(dest);
    } else if result.is_err() {
        let _ = empty_dir(dest);
    }
    result
}

fn prepare_tree_inner(
    campaign_dir: &CampaignDir,
    campaign: &Campaign,
    patch: Option<&Sha256Hex>,
    dest: &Path,
) -> Result<PreparedTree, GateError> {
    if let (Some(sha), SubmissionKind::Repository) = (patch, campaign.submission_kind()) {
        // A repository submission runs its own tree, as fetched and reviewed.
        let root = crate::repository::checkout::checkout_tree(campaign_dir, sha, dest)?;
        return Ok(PreparedTree {
            engine_config: root.join(&campaign.baseline.engine_config_path),
            root,
            changed_paths: BTreeSet::new(),
        });
    }
    let baseline = Baseline::open(&campaign_dir.baseline_repo(), &campaign.baseline.commit)?;
    let changed_paths = match patch {
        None => {
            checkout_baseline(&baseline, dest)?;
            BTreeSet::new()
        }
        Some(sha) => {
            let path = campaign_dir.submission_diff(sha);
            let bytes = fs::read(&path).map_err(|source| {
                GateError::Io(IoError {
                    action: "reading",
                    path: path.clone(),
                    source,
                })
            })?;
            let rejected = |violations| GateError::Rejected {
                path: path.clone(),
                violations,
            };
            let denied = DeniedGlobs::new(&campaign.surface.denied_paths)
                .map_err(|(pattern, message)| GateError::DeniedGlob { pattern, message })?;
            let inspection = inspect(&bytes, &campaign.surface, &denied, baseline.index())
                .map_err(|refusal| rejected(refusal.violations))?;
            match apply_checked(
                &baseline,
                &inspection.parsed.diff,
                &inspection.approved,
                dest,
            ) {
                Ok(applied) => applied.changed_paths,
                Err(GateOutcomeError::Violation(v)) => return Err(rejected(Violations::one(v))),
                Err(GateOutcomeError::Gate(e)) => return Err(e),
            }
        }
    };
    Ok(PreparedTree {
        root: dest.to_path_buf(),
        engine_config: dest.join(&campaign.baseline.engine_config_path),
        changed_paths,
    })
}

/// libgit2's checkout of `tree` into `dest` only: forced (every file written), no index,
/// no HEAD. libgit2 validates every path it writes (it refuses `.git` and its aliases).
fn checkout(
    repo: &git2::Repository,
    tree: &git2::Object<'_>,
    dest: &Path,
) -> Result<(), git2::Error> {
    let mut builder = CheckoutBuilder::new();
    builder
        .force()
        .recreate_missing(true)
        .update_index(false)
        .target_dir(dest);
    repo.checkout_tree(tree, Some(&mut builder))
}

/// Creates `dest` if missing; refuses anything but an empty real directory.
fn ensure_empty_dir(dest: &Path) -> Result<(), GateError> {
    match fs::symlink_metadata(dest) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs::create_dir_all(dest).map_err(|source| {
                GateError::Io(IoError {
                    action: "creating",
                    path: dest.to_path_buf(),
                    source,
                })
            })
        }
        Ok(meta) if meta.is_dir() => {
            let mut entries = fs::read_dir(dest).map_err(|source| {
                GateError::Io(IoError {
                    action: "listing",
                    path: dest.to_path_buf(),
                    source,
                })
            })?;
            if entries.next().is_none() {
                Ok(())
            } else {
                Err(GateError::DestinationNotEmpty {
                    path: dest.to_path_buf(),
                })
            }
        }
        Ok(_) => Err(GateError::DestinationNotEmpty {
            path: dest.to_path_buf(),
        }),
        Err(source) => Err(GateError::Io(IoError {
            action: "inspecting",
            path: dest.to_path_buf(),
            source,
        })),
    }
}

/// Removes everything inside `dir` (not following symlinks), keeping `dir`.
fn empty_dir(dir: &Path) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            fs::remove_dir_all(entry.path())?;
        } else {
            fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}

/// `(raw git mode, blob id)` of every file and symlink under `root`, by path relative to
/// it; symlinks are not followed (their id is the hash of their target, as git stores
/// them).
fn snapshot(root: &Path) -> Result<BTreeMap<Vec<u8>, (u32, Oid)>, GateError> {
    let mut out = BTreeMap::new();
    let mut stack = vec![(root.to_path_buf(), Vec::new())];
    let io_error = |action, path: &Path| {
        let path = path.to_path_buf();
        move |source| {
            GateError::Io(IoError {
                action,
                path,
                source,
            })
        }
    };
    while let Some((dir, prefix)) = stack.pop() {
        for entry in fs::read_dir(&dir).map_err(io_error("listing", &dir))? {
            let entry = entry.map_err(io_error("listing", &dir))?;
            let path = entry.path();
            let mut rel = prefix.clone();
            if !rel.is_empty() {
                rel.push(b'/');
            }
            rel.extend_from_slice(entry.file_name().as_bytes());
            let meta = fs::symlink_metadata(&path).map_err(io_error("inspecting", &path))?;
            let kind = meta.file_type();
            if kind.is_dir() {
                stack.push((path, rel));
            } else if kind.is_symlink() {
                let target = fs::read_link(&path).map_err(io_error("reading", &path))?;
                let id = hash_blob(target.as_os_str().as_bytes(), &path)?;
                out.insert(rel, (MODE_SYMLINK, id));
            } else {
                let bytes = fs::read(&path).map_err(io_error("reading", &path))?;
                let mode = if meta.permissions().mode() & 0o111 != 0 {
                    0o100755
                } else {
                    0o100644
                };
                out.insert(rel, (mode, hash_blob(&bytes, &path)?));
            }
        }
    }
    Ok(out)
}

fn hash_blob(bytes: &[u8], path: &Path) -> Result<Oid, GateError> {
    Oid::hash_object(ObjectType::Blob, bytes).map_err(|source| GateError::Git {
        action: format!("hashing `{}`", path.display()),
        repo: path.to_path_buf(),
        source,
    })
}

/// Paths whose mode or content on disk differs from the baseline's, or that exist on only
/// one side (directories and submodules, which a checkout leaves empty, are skipped).
fn changed_paths(baseline: &Baseline, on_disk: &BTreeMap<Vec<u8>, (u32, Oid)>) -> BTreeSet<String> {
    let mut before = BTreeMap::new();
    for (path, entry) in baseline.index().entries() {
        let mode = match entry.mode {
            MODE_TREE | super::baseline::MODE_GITLINK => continue,
            0o100664 => 0o100644,
            mode => mode,
        };
        before.insert(path.to_vec(), (mode, entry.id));
    }
    let mut changed = BTreeSet::new();
    for (path, value) in on_disk {
        if before.get(path) != Some(value) {
            changed.insert(String::from_utf8_lossy(path).into_owned());
        }
    }
    for path in before.keys() {
        if !on_disk.contains_key(path) {
            changed.insert(String::from_utf8_lossy(path).into_owned());
        }
    }
    changed
}
