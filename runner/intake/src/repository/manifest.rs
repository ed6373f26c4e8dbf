//! `reax-submission.json` against a fetched tree: the manifest's rules live in
//! `receipts::rules::repository::manifest` (re-exported here), so the verifier runs the
//! same checks again from the published copy of what they read; this module reads them
//! from a [`FetchedTree`].

pub use receipts::rules::repository::manifest::*;

use receipts::model::{ManifestFieldError, ManifestValidation, Sha256Hex};
use receipts::rules::repository::copy::{CopiedFile, CopiedSymlink, ManifestCopy, Recording};

use super::fetch::FetchedTree;

/// The parsed manifest of a fetched tree (the review stage reads it so).
///
/// Errors: as [`parse_manifest`]; `manifest_missing` when the tree has none.
pub fn load_manifest(tree: &FetchedTree) -> Result<Manifest, ManifestFieldError> {
    let bytes = tree
        .read(MANIFEST_PATH, MAX_MANIFEST_BYTES + 1)
        .map_err(|e| ManifestFieldError {
            field: MANIFEST_PATH.to_owned(),
            reason: "manifest_missing".to_owned(),
            message: e.to_string(),
        })?;
    parse_manifest(&bytes)
}

/// Validates the manifest of `tree` ([`validate`] over its files). Returns the manifest's
/// sha256 (when it could be read) and the result.
pub fn validate_tree(tree: &FetchedTree) -> (Option<Sha256Hex>, ManifestValidation) {
    let manifest = tree.read(MANIFEST_PATH, MAX_MANIFEST_BYTES + 1).ok();
    validate(manifest.as_deref(), &TreeFiles(tree))
}

/// [`validate_tree`], with the copy of what the checks read ([`ManifestCopy`]: the
/// tree's listing, the manifest's bytes and every text read), which is published so
/// that the verifier runs them again.
pub fn validate_tree_with_copy(
    tree: &FetchedTree,
) -> (Option<Sha256Hex>, ManifestValidation, ManifestCopy) {
    let manifest = tree.read(MANIFEST_PATH, MAX_MANIFEST_BYTES + 1).ok();
    let files = TreeFiles(tree);
    let recording = Recording::new(&files);
    let (sha256, validation) = validate(manifest.as_deref(), &recording);
    let copy = recording.into_copy(
        (tree.files.iter())
            .map(|f| CopiedFile {
                path: f.path.clone(),
                executable: f.executable,
                sha256: f.sha256,
            })
            .collect(),
        (tree.symlinks.iter())
            .map(|l| CopiedSymlink {
                path: l.path.clone(),
                target: l.target.clone(),
            })
            .collect(),
        manifest.as_deref(),
    );
    (sha256, validation, copy)
}

/// The files of a fetched tree, as the manifest checks read them.
pub struct TreeFiles<'a>(pub &'a FetchedTree);

impl RepositoryFiles for TreeFiles<'_> {
    fn sha256(&self, path: &str) -> Option<Sha256Hex> {
        self.0.file(path).map(|f| f.sha256)
    }

    fn text(&self, path: &str) -> Option<String> {
        let bytes = self.0.read(path, MAX_TEXT_BYTES).ok()?;
        String::from_utf8(bytes).ok()
    }
}
