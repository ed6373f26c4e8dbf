//! The copy of what a repository submission's manifest checks read, published beside
//! its record as `<campaign>/repositories/<record sha256>.json` ([`COPY_DIR`],
//! content/repository-submissions.md, Records), so that the verifier runs the checks
//! again without the repository: the fetched tree's listing, whose digest must be the
//! record's `treeSha256`; the manifest's bytes, whose sha256 must be its
//! `manifestSha256`; and the text of every file the checks read, each bound to the
//! listing by its sha256. The miner's weights stay out: the listing has their sha256.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use super::manifest::{MANIFEST_PATH, MAX_TEXT_BYTES, RepositoryFiles, validate};
use super::tree::{SYMLINK_MODE, file_mode, tree_digest};
use crate::model::{ManifestValidation, Sha256Hex};

/// The directory of the copies in a campaign's directory.
pub const COPY_DIR: &str = "repositories";

/// Where the copy of the record `sha256` is in the campaign directory `campaign_dir`:
/// `<campaign_dir>/repositories/<sha256>.json`.
pub fn copy_path(campaign_dir: &Path, sha256: &Sha256Hex) -> PathBuf {
    campaign_dir
        .join(COPY_DIR)
        .join(format!("{}.json", sha256.as_str()))
}

/// The most bytes of a copy a reader reads (the listing of a large tree, the texts at
/// most [`MAX_TEXT_BYTES`] each).
pub const MAX_COPY_BYTES: usize = 64 << 20;

/// A file of the listing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CopiedFile {
    /// Its path in the repository.
    pub path: String,
    /// Whether git records it executable.
    pub executable: bool,
    /// sha256 of its bytes (of an LFS file, its object's).
    pub sha256: Sha256Hex,
}

/// An in-tree symlink of the listing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CopiedSymlink {
    /// Its path in the repository.
    pub path: String,
    /// Its target, as git stores it.
    pub target: String,
}

/// What the manifest checks of one submission read (the file `repositories/<sha256>.json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ManifestCopy {
    /// Every file of the fetched tree, sorted by path.
    pub files: Vec<CopiedFile>,
    /// Every in-tree symlink, sorted by path.
    pub symlinks: Vec<CopiedSymlink>,
    /// The manifest's bytes as read (standard base64); `None` when the tree has none.
    pub manifest: Option<String>,
    /// The text of each file the checks read as UTF-8, by path.
    pub texts: BTreeMap<String, String>,
}

impl ManifestCopy {
    /// The tree digest of the listing ([`tree_digest`]).
    pub fn tree_sha256(&self) -> Sha256Hex {
        tree_digest(
            self.files
                .iter()
                .map(|f| (file_mode(f.executable), f.sha256, f.path.as_str()))
                .chain(self.symlinks.iter().map(|l| {
                    (
                        SYMLINK_MODE,
                        Sha256Hex::digest(l.target.as_bytes()),
                        l.path.as_str(),
                    )
                })),
        )
    }

    /// The manifest's bytes.
    ///
    /// Errors: a manifest that is not base64, in words.
    pub fn manifest_bytes(&self) -> Result<Option<Vec<u8>>, String> {
        self.manifest
            .as_deref()
            .map(|text| {
                base64::engine::general_purpose::STANDARD
                    .decode(text)
                    .map_err(|e| format!("the manifest copy is not base64: {e}"))
            })
            .transpose()
    }

    /// The paths whose copied bytes are not the listed file's: a text (or the
    /// manifest) whose sha256 differs from its file's in the listing, or that the
    /// listing does not have.
    pub fn unbound(&self) -> Vec<String> {
        let mut unbound: Vec<String> = self
            .texts
            .iter()
            .filter(|(path, text)| self.sha256(path) != Some(Sha256Hex::digest(text.as_bytes())))
            .map(|(path, _)| path.clone())
            .collect();
        let manifest = self.manifest_bytes().ok().flatten();
        if manifest
            .is_some_and(|bytes| self.sha256(MANIFEST_PATH) != Some(Sha256Hex::digest(&bytes)))
        {
            unbound.push(MANIFEST_PATH.to_owned());
        }
        unbound
    }

    /// The manifest checks run again over the copy ([`validate`]): the manifest's
    /// sha256 and the result.
    ///
    /// Errors: as [`ManifestCopy::manifest_bytes`].
    pub fn revalidate(&self) -> Result<(Option<Sha256Hex>, ManifestValidation), String> {
        let manifest = self.manifest_bytes()?;
        Ok(validate(manifest.as_deref(), self))
    }
}

impl RepositoryFiles for ManifestCopy {
    fn sha256(&self, path: &str) -> Option<Sha256Hex> {
        self.files
            .binary_search_by(|f| f.path.as_str().cmp(path))
            .ok()
            .and_then(|i| self.files.get(i))
            .map(|f| f.sha256)
    }

    fn text(&self, path: &str) -> Option<String> {
        self.texts
            .get(path)
            .filter(|t| t.len() <= MAX_TEXT_BYTES)
            .cloned()
    }
}

/// A [`RepositoryFiles`] that keeps every text the checks read from `files`, for the
/// copy.
pub struct Recording<'a> {
    files: &'a dyn RepositoryFiles,
    texts: RefCell<BTreeMap<String, String>>,
}

impl<'a> Recording<'a> {
    /// Records what is read of `files`.
    pub fn new(files: &'a dyn RepositoryFiles) -> Self {
        Self {
            files,
            texts: RefCell::new(BTreeMap::new()),
        }
    }

    /// The copy: the listing given, `manifest`'s bytes and every text read.
    pub fn into_copy(
        self,
        files: Vec<CopiedFile>,
        symlinks: Vec<CopiedSymlink>,
        manifest: Option<&[u8]>,
    ) -> ManifestCopy {
        ManifestCopy {
            files,
            symlinks,
            manifest: manifest.map(|b| base64::engine::general_purpose::STANDARD.encode(b)),
            texts: self.texts.into_inner(),
        }
    }
}

impl RepositoryFiles for Recording<'_> {
    fn sha256(&self, path: &str) -> Option<Sha256Hex> {
        self.files.sha256(path)
    }

    fn text(&self, path: &str) -> Option<String> {
        let text = self.files.text(path)?;
        self.texts
            .borrow_mut()
            .insert(path.to_owned(), text.clone());
        Some(text)
    }
}
