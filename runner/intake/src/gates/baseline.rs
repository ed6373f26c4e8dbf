//! The pinned baseline: a read-only view of `baseline.git` at the campaign's commit, and
//! an index of its tree that the pure checks consult (which paths exist, with which mode
//! and blob id; which of them are symlinks).
//!
//! The repository handle is a scratch bare repository in a temporary directory (removed
//! with it) whose only writable object backend lives in memory, with
//! `baseline.git/objects` added as a read-only alternate: whatever libgit2 writes while
//! applying a diff (postimage blobs, trees) stays in memory and never reaches the data
//! directory.

use receipts::fsutil::IoError;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use git2::{Oid, Repository, Tree};

use super::GateError;
use super::path::canonical_path;

/// Raw git mode of a symlink.
pub const MODE_SYMLINK: u32 = 0o120000;
/// Raw git mode of a directory (tree).
pub const MODE_TREE: u32 = 0o040000;
/// Raw git mode of a submodule (gitlink).
pub const MODE_GITLINK: u32 = 0o160000;

/// One entry of the baseline tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BaselineEntry {
    /// Raw git mode (`0o100644`, `0o120000`, `0o040000` …).
    pub mode: u32,
    /// Blob (or tree, or commit) id.
    pub id: Oid,
}

/// Every path of the baseline tree (directories included), by exact bytes and by
/// canonical form ([`canonical_path`]).
#[derive(Clone, Debug, Default)]
pub struct BaselineIndex {
    commit: String,
    exact: BTreeMap<Vec<u8>, BaselineEntry>,
    /// canonical form → (a path with that form, its entry); a symlink wins a collision so
    /// that a case-folded spelling cannot slip past it.
    canonical: BTreeMap<String, (String, BaselineEntry)>,
}

impl BaselineIndex {
    /// An index of the tree of `commit` (40 hex characters, named in messages) from its
    /// `(path, entry)` pairs (paths relative to the root, `/` separated). Used by
    /// [`Baseline::open`], and by tests and the fuzz target.
    pub fn from_entries(
        commit: &str,
        entries: impl IntoIterator<Item = (Vec<u8>, BaselineEntry)>,
    ) -> Self {
        let mut index = Self {
            commit: commit.to_owned(),
            ..Self::default()
        };
        for (path, entry) in entries {
            let text = String::from_utf8_lossy(&path).into_owned();
            let key = canonical_path(&text);
            let replace = match index.canonical.get(&key) {
                None => true,
                Some((_, old)) => old.mode != MODE_SYMLINK && entry.mode == MODE_SYMLINK,
            };
            if replace {
                index.canonical.insert(key, (text, entry));
            }
            index.exact.insert(path, entry);
        }
        index
    }

    /// The commit the tree belongs to.
    pub fn commit(&self) -> &str {
        &self.commit
    }

    /// The entry at exactly `path`.
    pub fn get(&self, path: &[u8]) -> Option<BaselineEntry> {
        self.exact.get(path).copied()
    }

    /// An entry whose path has the same canonical form as `path`, with its real path.
    pub fn get_canonical(&self, path: &str) -> Option<(&str, BaselineEntry)> {
        self.canonical
            .get(&canonical_path(path))
            .map(|(p, e)| (p.as_str(), *e))
    }

    /// Every entry, by exact path.
    pub fn entries(&self) -> impl Iterator<Item = (&[u8], BaselineEntry)> {
        self.exact.iter().map(|(p, e)| (p.as_slice(), *e))
    }
}

/// `baseline.git` opened at the pinned commit.
pub struct Baseline {
    repo: Repository,
    _scratch: tempfile::TempDir,
    repo_path: PathBuf,
    commit: Oid,
    tree: Oid,
    index: BaselineIndex,
}

impl std::fmt::Debug for Baseline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Baseline")
            .field("repo_path", &self.repo_path)
            .field("commit", &self.commit)
            .finish_non_exhaustive()
    }
}

impl Baseline {
    /// Opens the bare repository at `repo_path` (its objects read-only, writes kept in
    /// memory) and indexes the tree of `commit` (40 hex characters).
    ///
    /// Errors: [`GateError::Git`] when the repository, the commit or a tree object is
    /// missing.
    pub fn open(repo_path: &Path, commit: &str) -> Result<Self, GateError> {
        let git = |action: String| {
            let repo = repo_path.to_path_buf();
            move |source| GateError::Git {
                action,
                repo,
                source,
            }
        };
        let objects = repo_path.join("objects");
        if !objects.is_dir() {
            return Err(GateError::Io(IoError {
                action: "opening baseline objects",
                path: objects,
                source: std::io::Error::from(std::io::ErrorKind::NotFound),
            }));
        }
        let objects_str = objects.to_str().ok_or_else(|| {
            GateError::Io(IoError {
                action: "opening baseline objects (the path must be UTF-8)",
                path: objects.clone(),
                source: std::io::Error::from(std::io::ErrorKind::InvalidInput),
            })
        })?;
        // libgit2's apply needs a repository with a git directory: a scratch bare one in a
        // temporary directory, whose object database gets an in-memory backend (highest
        // priority, the only writable one: libgit2 never writes to alternates) and the
        // baseline objects as a read-only alternate.
        let scratch = tempfile::Builder::new()
            .prefix("referee-baseline-")
            .tempdir()
            .map_err(|source| {
                GateError::Io(IoError {
                    action: "creating a temporary directory in",
                    path: std::env::temp_dir(),
                    source,
                })
            })?;
        let repo = Repository::init_bare(scratch.path())
            .map_err(git("creating a scratch repository".into()))?;
        {
            let odb = repo
                .odb()
                .map_err(git("opening the object database".into()))?;
            odb.add_new_mempack_backend(1000)
                .map_err(git("adding the in-memory object backend".into()))?;
            odb.add_disk_alternate(objects_str)
                .map_err(git("adding the baseline objects".into()))?;
        }
        let commit_id =
            Oid::from_str(commit).map_err(git(format!("reading commit id `{commit}`")))?;
        let tree_id = repo
            .find_commit(commit_id)
            .map_err(git(format!("finding pinned commit `{commit}`")))?
            .tree_id();
        let tree = repo
            .find_tree(tree_id)
            .map_err(git(format!("reading the tree of `{commit}`")))?;
        let mut entries = Vec::new();
        collect_entries(&repo, &tree, &mut Vec::new(), &mut entries)
            .map_err(git(format!("walking the tree of `{commit}`")))?;
        drop(tree);
        Ok(Self {
            repo,
            _scratch: scratch,
            repo_path: repo_path.to_path_buf(),
            commit: commit_id,
            tree: tree_id,
            index: BaselineIndex::from_entries(commit, entries),
        })
    }

    /// The index of the pinned tree.
    pub fn index(&self) -> &BaselineIndex {
        &self.index
    }

    /// The pinned commit.
    pub fn commit_id(&self) -> Oid {
        self.commit
    }

    /// The repository handle (objects of `baseline.git`, writes in memory).
    pub fn repo(&self) -> &Repository {
        &self.repo
    }

    /// The pinned commit's tree.
    ///
    /// Errors: [`GateError::Git`] when the tree object cannot be read.
    pub fn tree(&self) -> Result<Tree<'_>, GateError> {
        self.repo
            .find_tree(self.tree)
            .map_err(|source| GateError::Git {
                action: "reading the pinned tree".into(),
                repo: self.repo_path.clone(),
                source,
            })
    }

    /// The path of `baseline.git`.
    pub fn repo_path(&self) -> &Path {
        &self.repo_path
    }
}

/// Walks `tree` depth-first, by raw name bytes (git2's `Tree::walk` hands roots over as
/// `&str`, which a non-UTF-8 name breaks).
fn collect_entries(
    repo: &Repository,
    tree: &Tree<'_>,
    prefix: &mut Vec<u8>,
    out: &mut Vec<(Vec<u8>, BaselineEntry)>,
) -> Result<(), git2::Error> {
    for entry in tree.iter() {
        let start = prefix.len();
        if start > 0 {
            prefix.push(b'/');
        }
        prefix.extend_from_slice(entry.name_bytes());
        let mode = u32::try_from(entry.filemode_raw()).unwrap_or(0);
        out.push((
            prefix.clone(),
            BaselineEntry {
                mode,
                id: entry.id(),
            },
        ));
        if mode == MODE_TREE {
            let subtree = repo.find_tree(entry.id())?;
            collect_entries(repo, &subtree, prefix, out)?;
        }
        prefix.truncate(start);
    }
    Ok(())
}
