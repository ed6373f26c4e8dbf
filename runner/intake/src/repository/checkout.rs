//! A reviewed repository submission's tree checked out for a round
//! (content/repository-submissions.md, In a round): the files fetched at ingest, copied
//! into the entry's tree and hashed again there, so what runs is byte for byte the tree
//! the fetch gate listed, the manifest checks read and the review passed.

use std::fs;
use std::path::{Path, PathBuf};

use receipts::bundle::file_sha256;
use receipts::fsutil::IoError;
use receipts::layout::{CampaignDir, DataError};
use receipts::model::Sha256Hex;

use super::fetch::{FetchError, FetchedTree, safe_path};
use super::tree_dir;

/// Why a repository submission's tree cannot be checked out for a round.
#[derive(Debug, thiserror::Error)]
pub enum CheckoutError {
    /// The record or the data directory does not read.
    #[error(transparent)]
    Data(#[from] DataError),
    /// The fetched tree's listing does not read.
    #[error(transparent)]
    Fetch(#[from] FetchError),
    /// An I/O error on a named file.
    #[error(transparent)]
    Io(#[from] IoError),
    /// The tree on disk is not the one recorded at ingest.
    #[error("repository submission {submission}: the fetched tree is not the one reviewed: {why}")]
    NotReviewed {
        /// The submission.
        submission: Sha256Hex,
        /// What differs: the record's digest, or a file's bytes.
        why: String,
    },
}

/// Copies the fetched tree of the repository submission `submission` of `campaign_dir`
/// into `dest` (created; it must not hold files of another tree) and returns `dest`: its
/// listing's digest, as `tree.json` records it and as recomputed from the files and
/// symlinks it lists, must be the record's `tree_sha256` (set when it passed the fetch
/// gate), every listed path must stay inside the tree, and every copied file must hash
/// to its listed sha256, with its listed mode. Symlinks are not created (the fetch gate
/// lists them, never makes them).
///
/// Errors: [`CheckoutError::NotReviewed`] when the record has no tree digest, names
/// another one, the listing names a path outside the tree, or a file's bytes changed
/// since; data, listing and I/O errors.
pub fn checkout_tree(
    campaign_dir: &CampaignDir,
    submission: &Sha256Hex,
    dest: &Path,
) -> Result<PathBuf, CheckoutError> {
    let not_reviewed = |why: String| CheckoutError::NotReviewed {
        submission: *submission,
        why,
    };
    let record = campaign_dir.load_submission(submission)?;
    let recorded = record
        .repository
        .as_ref()
        .and_then(|r| r.tree_sha256)
        .ok_or_else(|| not_reviewed("its record has no tree digest".to_owned()))?;
    let tree = FetchedTree::load(&tree_dir(campaign_dir, submission))?;
    // The digest the listing claims, and the one its entries give.
    for digest in [tree.tree_sha256, tree.listed_digest()] {
        if digest != recorded {
            return Err(not_reviewed(format!(
                "its listing has digest {digest}, its record {recorded}"
            )));
        }
    }
    let from = tree.files_root();
    for file in &tree.files {
        if !safe_path(&file.path) {
            return Err(not_reviewed(format!(
                "its listing names `{}`, not a path inside the tree",
                receipts::text::escape_untrusted(&file.path)
            )));
        }
        let (source, target) = (from.join(&file.path), dest.join(&file.path));
        if let Some(dir) = target.parent() {
            fs::create_dir_all(dir).map_err(IoError::at("creating", dir))?;
        }
        fs::copy(&source, &target).map_err(IoError::at("copying", &source))?;
        let sha256 = file_sha256(&target).map_err(IoError::at("hashing", &target))?;
        if sha256 != file.sha256 {
            return Err(not_reviewed(format!(
                "`{}` has sha256 {sha256}, its listing {}",
                receipts::text::escape_untrusted(&file.path),
                file.sha256
            )));
        }
        let mode = if file.executable { 0o755 } else { 0o644 };
        set_mode(&target, mode)?;
    }
    Ok(dest.to_path_buf())
}

/// Sets `path`'s permission bits to `mode`.
fn set_mode(path: &Path, mode: u32) -> Result<(), IoError> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .map_err(IoError::at("setting the mode of", path))
}
