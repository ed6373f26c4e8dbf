//! Fetching a committed repository at exactly its commit, behind the [`Fetcher`] trait,
//! and the fetch gate (content/repository-submissions.md, Fetch): a file over the
//! campaign's size cap (for Git LFS, from the pointer's declared size, before any
//! download), a symlink leaving the tree, an LFS pointer whose object is not in this
//! repository, a commit that does not exist or that no ref reaches — each a typed
//! [`FetchRejection`].
//!
//! [`GitFetcher`] runs the `git` CLI (no libgit2 transport, no OpenSSL of ours), for local
//! paths, `file://` URLs and `https://` URLs in the Hugging Face layout
//! (`<base>/<org>/<name>`): every ref of the repository is fetched into a scratch bare
//! repository, so only objects some ref reaches arrive, and the pinned commit is then
//! looked up there. Its tree is listed, gated, and only then written out, file by file,
//! under the destination's `tree/`; in-tree symlinks are listed
//! ([`FetchedTree::symlinks`]) but never created, so nothing that reads the tree follows
//! one. LFS objects come from the repository's own store or, over HTTPS, its LFS batch
//! API ([`super::lfs`]).

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use receipts::fsutil::{IoError, write_atomic, write_atomic_with};
use receipts::model::Sha256Hex;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::commitment::{Commitment, Location};
use super::lfs::{BatchLfs, LfsPointer, LfsStore, LocalLfs, MAX_POINTER_BYTES, parse_pointer};
pub use receipts::rules::repository::tree::tree_digest;
use receipts::rules::repository::tree::{SYMLINK_MODE, file_mode};

/// A file of a fetched tree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TreeFile {
    /// Its path in the repository, `/`-separated, checked: no `.`, `..`, `.git` or empty
    /// component.
    pub path: String,
    /// Whether git records it executable (mode 100755).
    pub executable: bool,
    /// Its size, bytes (for an LFS file, the object's).
    pub size_bytes: u64,
    /// sha256 of its bytes (for an LFS file, the object's: its LFS oid, checked).
    pub sha256: Sha256Hex,
    /// Whether it was an LFS pointer in the repository, resolved to its object.
    pub lfs: bool,
}

/// A symlink of a fetched tree whose target stays inside the tree. Listed, not created.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TreeSymlink {
    /// Its path in the repository.
    pub path: String,
    /// Its target, as git stores it.
    pub target: String,
}

/// A repository fetched at its pinned commit and past the fetch gate: the files under
/// [`FetchedTree::files_root`], and the listing `tree.json` beside them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FetchedTree {
    /// The commitment it was fetched for, as published.
    pub commitment: String,
    /// The tree's digest: sha256 over one line `<mode> <sha256> <path>\n` per file and
    /// symlink (a symlink's sha256 is its target's), sorted by path bytes
    /// ([`tree_digest`]). It covers LFS objects' bytes, not their pointers.
    pub tree_sha256: Sha256Hex,
    /// Every file, sorted by path.
    pub files: Vec<TreeFile>,
    /// Every in-tree symlink, sorted by path.
    pub symlinks: Vec<TreeSymlink>,
    /// The directory holding `tree/` and `tree.json` (not recorded: it is where it is
    /// loaded from).
    #[serde(skip)]
    pub dir: PathBuf,
}

impl FetchedTree {
    /// The directory of the tree's files: `<dir>/tree`.
    pub fn files_root(&self) -> PathBuf {
        self.dir.join("tree")
    }

    /// The digest of this listing recomputed from its files and symlinks, as
    /// [`FetchedTree::tree_sha256`] should record it.
    pub fn listed_digest(&self) -> Sha256Hex {
        listing_digest(&self.files, &self.symlinks)
    }

    /// The file at `path`, if the tree has one.
    pub fn file(&self, path: &str) -> Option<&TreeFile> {
        self.files
            .binary_search_by(|f| f.path.as_str().cmp(path))
            .ok()
            .and_then(|i| self.files.get(i))
    }

    /// Reads the file at `path` of the tree, at most `limit` bytes.
    ///
    /// Errors: `NotFound` when the tree has no such file (an unchecked path is never
    /// joined); the read's error; `InvalidData` past `limit`.
    pub fn read(&self, path: &str, limit: usize) -> io::Result<Vec<u8>> {
        let Some(file) = self.file(path) else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "no such file in the tree",
            ));
        };
        receipts::fsutil::read_limited(&self.files_root().join(&file.path), limit)
    }

    /// Loads the tree fetched into `dir` (its `tree.json`).
    ///
    /// Errors: reading or parsing `tree.json`.
    pub fn load(dir: &Path) -> Result<Self, FetchError> {
        let path = dir.join("tree.json");
        let bytes = fs::read(&path).map_err(|source| {
            FetchError::Io(IoError {
                action: "reading",
                path: path.clone(),
                source,
            })
        })?;
        let mut tree: FetchedTree = receipts::canonical::from_slice_strict(&bytes, 64 << 20)
            .map_err(|e| FetchError::Listing {
                path: path.clone(),
                message: e.to_string(),
            })?;
        tree.dir = dir.to_path_buf();
        Ok(tree)
    }
}

/// Why the fetch gate refuses a repository: the miner's doing, recorded as a rejection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FetchRejection {
    /// The repository does not exist at the committed location.
    RepositoryNotFound {
        /// The location.
        url: String,
    },
    /// The commit does not exist, or no ref of the repository reaches it.
    CommitUnreachable {
        /// The pinned commit.
        commit: String,
    },
    /// A file larger than the campaign's `repository.max_file_bytes`.
    FileTooLarge {
        /// The file.
        path: String,
        /// Its size, bytes (for LFS, as its pointer declares).
        size_bytes: u64,
        /// The cap.
        max_bytes: u64,
        /// Whether the size is an LFS pointer's.
        lfs: bool,
    },
    /// A symlink whose target resolves outside the tree (or loops).
    SymlinkEscapesTree {
        /// The symlink.
        path: String,
        /// Its target.
        target: String,
    },
    /// An LFS pointer whose object this repository does not hold.
    LfsObjectNotInRepository {
        /// The pointer file.
        path: String,
        /// The object's sha256.
        oid: String,
    },
    /// An LFS object whose bytes do not hash to its oid or have another size.
    LfsObjectCorrupt {
        /// The pointer file.
        path: String,
        /// The object's sha256.
        oid: String,
    },
    /// A path with a `.`, `..`, `.git` or empty component.
    UnsafePath {
        /// The path.
        path: String,
    },
    /// A submodule (gitlink): its content is not pinned by this repository.
    Submodule {
        /// The path.
        path: String,
    },
}

impl FetchRejection {
    /// The typed reason, snake_case, as recorded.
    pub fn reason(&self) -> &'static str {
        match self {
            FetchRejection::RepositoryNotFound { .. } => "repository_not_found",
            FetchRejection::CommitUnreachable { .. } => "commit_unreachable",
            FetchRejection::FileTooLarge { .. } => "file_too_large",
            FetchRejection::SymlinkEscapesTree { .. } => "symlink_escapes_tree",
            FetchRejection::LfsObjectNotInRepository { .. } => "lfs_object_not_in_repository",
            FetchRejection::LfsObjectCorrupt { .. } => "lfs_object_corrupt",
            FetchRejection::UnsafePath { .. } => "unsafe_path",
            FetchRejection::Submodule { .. } => "submodule",
        }
    }
}

impl fmt::Display for FetchRejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let reason = self.reason();
        match self {
            FetchRejection::RepositoryNotFound { url } => {
                write!(f, "{reason}: no repository at `{url}`")
            }
            FetchRejection::CommitUnreachable { commit } => write!(
                f,
                "{reason}: commit `{commit}` does not exist or no ref of the repository reaches it"
            ),
            FetchRejection::FileTooLarge {
                path,
                size_bytes,
                max_bytes,
                lfs,
            } => write!(
                f,
                "{reason}: `{path}` is {size_bytes} bytes{}, over the campaign's cap of {max_bytes}",
                if *lfs {
                    " (its LFS pointer's size)"
                } else {
                    ""
                }
            ),
            FetchRejection::SymlinkEscapesTree { path, target } => write!(
                f,
                "{reason}: symlink `{path}` → `{target}` resolves outside the repository"
            ),
            FetchRejection::LfsObjectNotInRepository { path, oid } => write!(
                f,
                "{reason}: `{path}` points to LFS object sha256:{oid}, which this repository does not hold"
            ),
            FetchRejection::LfsObjectCorrupt { path, oid } => write!(
                f,
                "{reason}: the LFS object of `{path}` does not hash to sha256:{oid} or has another size"
            ),
            FetchRejection::UnsafePath { path } => write!(
                f,
                "{reason}: `{path}` has a `.`, `..`, `.git` or empty component"
            ),
            FetchRejection::Submodule { path } => {
                write!(f, "{reason}: `{path}` is a submodule")
            }
        }
    }
}

/// A fetch that failed for a reason that is not the miner's (git missing, disk full).
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// An I/O error on a named file.
    #[error(transparent)]
    Io(#[from] IoError),
    /// `git` could not be run or failed unexpectedly.
    #[error("git {args}: {message}")]
    Git {
        /// The arguments.
        args: String,
        /// Its stderr, or why it could not run.
        message: String,
    },
    /// The CA file does not read or parse, or the HTTPS client cannot be built.
    #[error("the HTTPS client: {message}")]
    Tls {
        /// Why.
        message: String,
    },
    /// The LFS batch API could not be asked or answered out of its protocol.
    #[error("the LFS batch API at `{url}`: {message}")]
    Lfs {
        /// The batch endpoint.
        url: String,
        /// Why.
        message: String,
    },
    /// A `tree.json` that does not parse.
    #[error("{}: {message}", path.display())]
    Listing {
        /// The file.
        path: PathBuf,
        /// The parser's message.
        message: String,
    },
}

/// What a fetch ended with.
#[derive(Debug)]
pub enum FetchOutcome {
    /// Past the gate: the tree, written out.
    Fetched(FetchedTree),
    /// Refused by the gate, with every rejection found (nothing written).
    Rejected(Vec<FetchRejection>),
}

/// Fetches a committed repository at exactly its commit.
pub trait Fetcher {
    /// Fetches `commitment` and runs the fetch gate with the size cap `max_file_bytes`;
    /// when it passes, writes the tree into `dest` (which must not exist): the files
    /// under `dest/tree/`, the listing at `dest/tree.json`.
    ///
    /// Errors: [`FetchError`] when the fetch failed for a reason that is not the
    /// miner's; a refused repository is `Ok(FetchOutcome::Rejected)`.
    fn fetch(
        &self,
        commitment: &Commitment,
        max_file_bytes: u64,
        dest: &Path,
    ) -> Result<FetchOutcome, FetchError>;
}

/// The [`Fetcher`] of every commitment location, through the `git` CLI: local paths and
/// `file://` URLs, whose Git LFS objects are read from the repository's own store
/// (`.git/lfs/objects/` or, bare, `lfs/objects/`), and `https://` URLs in the Hugging Face
/// layout, whose LFS objects come through the batch API.
#[derive(Clone, Debug, Default)]
pub struct GitFetcher {
    /// A PEM file of the CA certificates HTTPS servers are checked against, for git
    /// (`http.sslCAInfo`) and the LFS client alike, instead of the system's roots; `None`:
    /// the system's.
    pub ca_file: Option<PathBuf>,
}

/// What git's stderr says when the repository is not there (or not readable without
/// credentials, which the fetch never has): `LC_ALL=C` keeps these words.
const REPOSITORY_MISSING: [&str; 4] = [
    "not found",
    "does not appear to be a git repository",
    "could not read Username",
    "Authentication failed",
];

impl Fetcher for GitFetcher {
    fn fetch(
        &self,
        commitment: &Commitment,
        max_file_bytes: u64,
        dest: &Path,
    ) -> Result<FetchOutcome, FetchError> {
        let not_found = || {
            Ok(FetchOutcome::Rejected(vec![
                FetchRejection::RepositoryNotFound {
                    url: commitment.url().to_owned(),
                },
            ]))
        };
        let (url, mut lfs): (String, Box<dyn LfsStore>) = match commitment.location() {
            Location::Local(path) if !Path::new(path).is_dir() => return not_found(),
            Location::Local(path) => (
                format!("file://{path}"),
                Box::new(LocalLfs::of(Path::new(path))),
            ),
            Location::Https(url) => (
                url.to_owned(),
                Box::new(BatchLfs::new(url, self.ca_file.as_deref())?),
            ),
        };
        let scratch = Scratch::new(self.ca_file.clone())?;
        if !scratch.fetch_refs(&url)? {
            return not_found();
        }
        if !scratch.has_commit(commitment.commit())? {
            return Ok(FetchOutcome::Rejected(vec![
                FetchRejection::CommitUnreachable {
                    commit: commitment.commit().to_owned(),
                },
            ]));
        }
        let entries = scratch.list_tree(commitment.commit())?;
        let gated = gate(&scratch, &entries, lfs.as_mut(), max_file_bytes)?;
        if !gated.rejections.is_empty() {
            return Ok(FetchOutcome::Rejected(gated.rejections));
        }
        write_tree(&scratch, lfs.as_ref(), commitment, gated, dest)
    }
}

/// One entry of `git ls-tree -r -l`.
#[derive(Debug)]
struct TreeEntry {
    mode: String,
    oid: String,
    size: Option<u64>,
    path: String,
}

/// A scratch bare repository the refs are fetched into, removed on drop.
struct Scratch {
    dir: tempfile::TempDir,
    ca_file: Option<PathBuf>,
}

impl Scratch {
    fn new(ca_file: Option<PathBuf>) -> Result<Self, FetchError> {
        let dir = tempfile::Builder::new()
            .prefix("referee-fetch-")
            .tempdir()
            .map_err(|source| {
                FetchError::Io(IoError {
                    action: "creating a temporary directory in",
                    path: std::env::temp_dir(),
                    source,
                })
            })?;
        let scratch = Self { dir, ca_file };
        scratch.git(&["init", "--bare", "--quiet", "."])?;
        Ok(scratch)
    }

    /// `git` in the scratch repository with no user or system configuration, no
    /// prompt or credential helper, no transport but `file` and `https` (checked against
    /// the CA file when one is given), and no LFS smudging.
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new("git");
        command
            .current_dir(self.dir.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_LFS_SKIP_SMUDGE", "1")
            .env("LC_ALL", "C")
            .env_remove("GIT_SSL_NO_VERIFY")
            .env_remove("GIT_SSL_CAINFO")
            .args([
                "-c",
                "protocol.allow=never",
                "-c",
                "protocol.file.allow=always",
                "-c",
                "protocol.https.allow=always",
                "-c",
                "http.sslVerify=true",
                "-c",
                "credential.helper=",
            ]);
        if let Some(ca_file) = &self.ca_file {
            command
                .arg("-c")
                .arg(format!("http.sslCAInfo={}", ca_file.display()));
        }
        command
            .args(["--git-dir", "."])
            .args(args)
            .stdin(Stdio::null());
        command
    }

    fn git(&self, args: &[&str]) -> Result<Vec<u8>, FetchError> {
        let failed = |message: String| FetchError::Git {
            args: args.join(" "),
            message,
        };
        let output = self
            .command(args)
            .output()
            .map_err(|e| failed(e.to_string()))?;
        if !output.status.success() {
            return Err(failed(
                String::from_utf8_lossy(&output.stderr).trim().to_owned(),
            ));
        }
        Ok(output.stdout)
    }

    /// Fetches every branch and tag of the repository at `url` (objects no ref reaches
    /// never arrive). Returns `false` when there is no repository there.
    fn fetch_refs(&self, url: &str) -> Result<bool, FetchError> {
        let args = [
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-recurse-submodules",
            url,
            "+refs/heads/*:refs/fetched/heads/*",
            "+refs/tags/*:refs/fetched/tags/*",
        ];
        let failed = |message: String| FetchError::Git {
            args: args.join(" "),
            message,
        };
        let output = self
            .command(&args)
            .output()
            .map_err(|e| failed(e.to_string()))?;
        if output.status.success() {
            return Ok(true);
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        if REPOSITORY_MISSING.iter().any(|m| stderr.contains(m)) {
            return Ok(false);
        }
        Err(failed(stderr.trim().to_owned()))
    }

    fn has_commit(&self, commit: &str) -> Result<bool, FetchError> {
        let status = self
            .command(&["cat-file", "-e", &format!("{commit}^{{commit}}")])
            .stderr(Stdio::null())
            .status()
            .map_err(|e| FetchError::Git {
                args: "cat-file -e".into(),
                message: e.to_string(),
            })?;
        Ok(status.success())
    }

    fn list_tree(&self, commit: &str) -> Result<Vec<TreeEntry>, FetchError> {
        let out = self.git(&["ls-tree", "-r", "-z", "-l", "--full-tree", commit])?;
        let bad = |message: &str| FetchError::Git {
            args: "ls-tree".into(),
            message: message.into(),
        };
        let mut entries = Vec::new();
        for record in out.split(|b| *b == 0).filter(|r| !r.is_empty()) {
            let text = std::str::from_utf8(record).map_err(|_| bad("a path that is not UTF-8"))?;
            let (meta, path) = text.split_once('\t').ok_or_else(|| bad("no tab"))?;
            let mut fields = meta.split_whitespace();
            let (Some(mode), Some(_kind), Some(oid), Some(size)) =
                (fields.next(), fields.next(), fields.next(), fields.next())
            else {
                return Err(bad("a short line"));
            };
            entries.push(TreeEntry {
                mode: mode.to_owned(),
                oid: oid.to_owned(),
                size: size.parse().ok(),
                path: path.to_owned(),
            });
        }
        Ok(entries)
    }

    fn blob(&self, oid: &str, limit: u64) -> Result<Vec<u8>, FetchError> {
        let mut bytes = self.git(&["cat-file", "blob", oid])?;
        bytes.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
        Ok(bytes)
    }

    /// Streams blob `oid` into `out`, returning the sha256 of what was written.
    fn blob_into(&self, oid: &str, out: &mut fs::File) -> io::Result<Sha256Hex> {
        let mut child = self
            .command(&["cat-file", "blob", oid])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let mut stdout = child
            .stdout
            .take()
            .ok_or_else(|| io::Error::other("no stdout"))?;
        let sha = copy_hashing(&mut stdout, out)?;
        if !child.wait()?.success() {
            return Err(io::Error::other(format!("git cat-file blob {oid} failed")));
        }
        Ok(sha)
    }
}

/// Copies `from` into `to`, returning the sha256 of the bytes.
pub(super) fn copy_hashing(from: &mut dyn Read, to: &mut dyn Write) -> io::Result<Sha256Hex> {
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let n = from.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        let chunk = buffer.get(..n).unwrap_or_default();
        hasher.update(chunk);
        to.write_all(chunk)?;
    }
    Ok(Sha256Hex::from_bytes(hasher.finalize().into()))
}

/// The tree digest ([`tree_digest`]) of a listing's `files` and `symlinks`.
fn listing_digest(files: &[TreeFile], symlinks: &[TreeSymlink]) -> Sha256Hex {
    tree_digest(
        files
            .iter()
            .map(|f| (file_mode(f.executable), f.sha256, f.path.as_str()))
            .chain(symlinks.iter().map(|l| {
                (
                    SYMLINK_MODE,
                    Sha256Hex::digest(l.target.as_bytes()),
                    l.path.as_str(),
                )
            })),
    )
}

/// What the gate sorted the tree into.
struct Gated {
    blobs: Vec<(String, bool, String)>,
    pointers: Vec<(String, bool, LfsPointer)>,
    symlinks: Vec<TreeSymlink>,
    rejections: Vec<FetchRejection>,
}

/// Whether `path` is a relative path of the tree: no empty, `.`, `..` or `.git`
/// component.
pub(super) fn safe_path(path: &str) -> bool {
    path.split('/')
        .all(|c| !c.is_empty() && c != "." && c != ".." && !c.eq_ignore_ascii_case(".git"))
}

/// The fetch gate over the listed tree: every rejection found, in path order, then the
/// LFS objects this repository does not hold (asked of `lfs` only for pointers within
/// the size cap, before any download).
fn gate(
    scratch: &Scratch,
    entries: &[TreeEntry],
    lfs: &mut dyn LfsStore,
    max_file_bytes: u64,
) -> Result<Gated, FetchError> {
    let mut gated = Gated {
        blobs: Vec::new(),
        pointers: Vec::new(),
        symlinks: Vec::new(),
        rejections: Vec::new(),
    };
    for entry in entries {
        let path = entry.path.clone();
        if !safe_path(&path) {
            gated.rejections.push(FetchRejection::UnsafePath { path });
            continue;
        }
        match entry.mode.as_str() {
            "160000" => gated.rejections.push(FetchRejection::Submodule { path }),
            "120000" => {
                let target = String::from_utf8_lossy(&scratch.blob(&entry.oid, 4096)?).into_owned();
                gated.symlinks.push(TreeSymlink { path, target });
            }
            mode => {
                let executable = mode == "100755";
                let size = entry.size.unwrap_or(u64::MAX);
                let pointer = if size <= MAX_POINTER_BYTES {
                    parse_pointer(&scratch.blob(&entry.oid, MAX_POINTER_BYTES)?)
                } else {
                    None
                };
                match pointer {
                    Some(pointer) => {
                        if pointer.size > max_file_bytes {
                            gated.rejections.push(FetchRejection::FileTooLarge {
                                path,
                                size_bytes: pointer.size,
                                max_bytes: max_file_bytes,
                                lfs: true,
                            });
                        } else {
                            gated.pointers.push((path, executable, pointer));
                        }
                    }
                    None if size > max_file_bytes => {
                        gated.rejections.push(FetchRejection::FileTooLarge {
                            path,
                            size_bytes: size,
                            max_bytes: max_file_bytes,
                            lfs: false,
                        })
                    }
                    None => gated.blobs.push((path, executable, entry.oid.clone())),
                }
            }
        }
    }
    let asked: Vec<&LfsPointer> = gated.pointers.iter().map(|(_, _, p)| p).collect();
    let held = lfs.held(&asked)?;
    let (pointers, foreign) = std::mem::take(&mut gated.pointers)
        .into_iter()
        .partition(|(_, _, p)| held.contains(&p.oid));
    gated.pointers = pointers;
    let foreign: Vec<(String, bool, LfsPointer)> = foreign;
    for (path, _, pointer) in foreign {
        gated
            .rejections
            .push(FetchRejection::LfsObjectNotInRepository {
                path,
                oid: pointer.oid,
            });
    }
    let links: BTreeMap<&str, &str> = gated
        .symlinks
        .iter()
        .map(|l| (l.path.as_str(), l.target.as_str()))
        .collect();
    for link in &gated.symlinks {
        if resolve_link(&links, &link.path).is_none() {
            gated.rejections.push(FetchRejection::SymlinkEscapesTree {
                path: link.path.clone(),
                target: link.target.clone(),
            });
        }
    }
    Ok(gated)
}

/// The in-tree path the symlink at `path` resolves to, following the tree's other
/// symlinks as the kernel would; `None` when it leaves the tree, is absolute or loops.
fn resolve_link(links: &BTreeMap<&str, &str>, path: &str) -> Option<Vec<String>> {
    let mut parent: Vec<String> = path.split('/').map(str::to_owned).collect();
    parent.pop();
    let target = links.get(path)?;
    let mut hops = 0;
    resolve(links, parent, target, &mut hops)
}

/// The most symlinks one resolution follows (the kernel's `MAXSYMLINKS`).
const MAX_HOPS: u32 = 40;

fn resolve(
    links: &BTreeMap<&str, &str>,
    mut at: Vec<String>,
    target: &str,
    hops: &mut u32,
) -> Option<Vec<String>> {
    if target.starts_with('/') {
        return None;
    }
    for component in target.split('/') {
        match component {
            "" | "." => {}
            ".." => {
                at.pop()?;
            }
            name => {
                at.push(name.to_owned());
                if let Some(next) = links.get(at.join("/").as_str()) {
                    *hops += 1;
                    if *hops > MAX_HOPS {
                        return None;
                    }
                    at.pop();
                    at = resolve(links, at, next, hops)?;
                }
            }
        }
    }
    Some(at)
}

/// Writes the gated tree into `dest` through a temporary sibling renamed into place.
fn write_tree(
    scratch: &Scratch,
    lfs: &dyn LfsStore,
    commitment: &Commitment,
    gated: Gated,
    dest: &Path,
) -> Result<FetchOutcome, FetchError> {
    let io = |action: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| {
            FetchError::Io(IoError {
                action,
                path,
                source,
            })
        }
    };
    let parent = dest.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(parent).map_err(io("creating", parent))?;
    let staging = tempfile::Builder::new()
        .prefix(".fetch-")
        .tempdir_in(parent)
        .map_err(io("creating a temporary directory in", parent))?;
    let root = staging.path().join("tree");
    let mut files = Vec::new();
    for (path, executable, oid) in &gated.blobs {
        let out = root.join(path);
        let (sha256, size_bytes) =
            write_file(&out, *executable, &mut |file| scratch.blob_into(oid, file))
                .map_err(io("writing", &out))?;
        files.push(TreeFile {
            path: path.clone(),
            executable: *executable,
            size_bytes,
            sha256,
            lfs: false,
        });
    }
    let mut corrupt = Vec::new();
    for (path, executable, pointer) in &gated.pointers {
        let out = root.join(path);
        let (sha256, size_bytes) =
            write_file(&out, *executable, &mut |file| lfs.copy(pointer, file))
                .map_err(io("writing", &out))?;
        if sha256.as_str() != pointer.oid || size_bytes != pointer.size {
            corrupt.push(FetchRejection::LfsObjectCorrupt {
                path: path.clone(),
                oid: pointer.oid.clone(),
            });
        }
        files.push(TreeFile {
            path: path.clone(),
            executable: *executable,
            size_bytes,
            sha256,
            lfs: true,
        });
    }
    if !corrupt.is_empty() {
        // The staging directory is removed on drop.
        return Ok(FetchOutcome::Rejected(corrupt));
    }
    files.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    let mut symlinks = gated.symlinks;
    symlinks.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    let tree_sha256 = listing_digest(&files, &symlinks);
    let mut tree = FetchedTree {
        commitment: commitment.as_str().to_owned(),
        tree_sha256,
        files,
        symlinks,
        dir: PathBuf::new(),
    };
    let listing = serde_json::to_vec_pretty(&tree).map_err(|e| FetchError::Listing {
        path: dest.to_path_buf(),
        message: e.to_string(),
    })?;
    let listing_path = staging.path().join("tree.json");
    write_atomic(&listing_path, &listing, 0o644).map_err(io("writing", &listing_path))?;
    let staged = staging.keep();
    fs::rename(&staged, dest).map_err(io("renaming into place", dest))?;
    tree.dir = dest.to_path_buf();
    Ok(FetchOutcome::Fetched(tree))
}

/// Writes one file of the tree (its directories created), returning its sha256 and size.
fn write_file(
    out: &Path,
    executable: bool,
    fill: &mut dyn FnMut(&mut fs::File) -> io::Result<Sha256Hex>,
) -> io::Result<(Sha256Hex, u64)> {
    if let Some(dir) = out.parent() {
        fs::create_dir_all(dir)?;
    }
    let mut sha = None;
    write_atomic_with(out, if executable { 0o755 } else { 0o644 }, &mut |file| {
        sha = Some(fill(file)?);
        Ok(())
    })?;
    let size = fs::metadata(out)?.len();
    Ok((sha.unwrap_or_else(|| Sha256Hex::digest(b"")), size))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlinks_resolve_through_the_tree() {
        let links: BTreeMap<&str, &str> = [
            ("dot", "."),
            ("up", "dot/.."),
            ("inner", "a/b/../c"),
            ("abs", "/etc/passwd"),
            ("deep/out", "../../x"),
            ("loop1", "loop2"),
            ("loop2", "loop1"),
        ]
        .into_iter()
        .collect();
        assert_eq!(resolve_link(&links, "dot"), Some(vec![]));
        // Lexically `dot/..` is the root; physically it is the root's parent.
        assert_eq!(resolve_link(&links, "up"), None);
        assert_eq!(
            resolve_link(&links, "inner"),
            Some(vec!["a".to_owned(), "c".to_owned()])
        );
        assert_eq!(resolve_link(&links, "abs"), None);
        assert_eq!(resolve_link(&links, "deep/out"), None);
        assert_eq!(resolve_link(&links, "loop1"), None);
    }
}
