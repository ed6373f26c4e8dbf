//! The submission's tree as the rules read it: its regular files in path order (symlinks,
//! special files and the top-level `.git` skipped), each read up to the scan bound.

use std::fs;
use std::path::{Path, PathBuf};

use receipts::fsutil::{IoError, open_regular, read_to_limit};

/// How many leading bytes of a file too large to read are kept for `file_magic`.
const HEAD_BYTES: usize = 4096;

/// A regular file of the tree: its `/`-separated path below the root, and where it is.
#[derive(Debug)]
pub(crate) struct TreeFile {
    pub(crate) rel: String,
    pub(crate) path: PathBuf,
}

impl TreeFile {
    /// The last component of the path.
    pub(crate) fn name(&self) -> &str {
        self.rel.rsplit('/').next().unwrap_or(&self.rel)
    }
}

/// A file's bytes as the rules see them.
pub(crate) enum Content {
    /// UTF-8 without NUL bytes.
    Text(String),
    /// Anything else, whole.
    Binary(Vec<u8>),
    /// Over the scan bound: its first [`HEAD_BYTES`] bytes.
    TooLarge(Vec<u8>),
}

impl Content {
    /// The leading bytes, for `file_magic`.
    pub(crate) fn head(&self) -> &[u8] {
        match self {
            Content::Text(text) => text.as_bytes(),
            Content::Binary(bytes) | Content::TooLarge(bytes) => bytes,
        }
    }
}

/// Every regular file below `root`, sorted by path; symlinks are never followed.
///
/// Errors: [`IoError`] on a directory that cannot be read.
pub(crate) fn list_files(root: &Path) -> Result<Vec<TreeFile>, IoError> {
    let mut files = Vec::new();
    let mut dirs = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, prefix)) = dirs.pop() {
        for entry in fs::read_dir(&dir).map_err(IoError::at("reading", &dir))? {
            let entry = entry.map_err(IoError::at("reading", &dir))?;
            let path = entry.path();
            let kind = entry.file_type().map_err(IoError::at("reading", &path))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = format!("{prefix}{name}");
            if kind.is_dir() {
                if !(prefix.is_empty() && name == ".git") {
                    dirs.push((path, format!("{rel}/")));
                }
            } else if kind.is_file() {
                files.push(TreeFile { rel, path });
            }
        }
    }
    files.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(files)
}

/// Reads `file` up to `max_bytes`.
///
/// Errors: [`IoError`] when it cannot be opened or read (a file replaced by a symlink
/// since it was listed included).
pub(crate) fn read(file: &TreeFile, max_bytes: u64) -> Result<Content, IoError> {
    let (handle, length) =
        open_regular(&file.path).map_err(|e| IoError::at("reading", &file.path)(e.into()))?;
    let limit = usize::try_from(max_bytes).unwrap_or(usize::MAX);
    let mut bytes =
        read_to_limit(handle, length, limit).map_err(IoError::at("reading", &file.path))?;
    if bytes.len() > limit {
        bytes.truncate(HEAD_BYTES);
        return Ok(Content::TooLarge(bytes));
    }
    if bytes.contains(&0) {
        return Ok(Content::Binary(bytes));
    }
    Ok(match String::from_utf8(bytes) {
        Ok(text) => Content::Text(text),
        Err(e) => Content::Binary(e.into_bytes()),
    })
}
