//! Files: atomic writes (every file referee writes appears whole or not at all), bounded
//! reads, and [`IoError`], the one shape of an I/O error on a named file that every
//! crate's error enum wraps.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// An I/O error on a named file: what was being done, the file, the cause. Every error
/// enum of the workspace wraps it as `Io(#[from] IoError)` rather than repeating the
/// three fields.
#[derive(Debug, thiserror::Error)]
#[error("{action} `{path}`")]
pub struct IoError {
    /// What was being done (`reading`, `writing`, `creating`, …).
    pub action: &'static str,
    /// The file or directory.
    pub path: PathBuf,
    /// The cause.
    #[source]
    pub source: io::Error,
}

impl IoError {
    /// A `map_err` adapter: `fs::read(&path).map_err(IoError::at("reading", &path))?`.
    pub fn at(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> IoError {
        let path = path.to_path_buf();
        move |source| IoError {
            action,
            path,
            source,
        }
    }
}

/// Writes `bytes` to `path` through a temp file in the same directory, fsynced, then
/// renamed over `path`. On Unix the file gets `mode` (e.g. `0o600` for private keys)
/// before any byte is written.
///
/// Errors: the underlying I/O error; `path` is untouched when it fails.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other("path has no file name"))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".tmp{}", std::process::id()));
    let tmp = dir.join(tmp_name);
    let result = (|| {
        let mut options = fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(mode);
        }
        let mut file = options.open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&tmp, path)?;
        if let Ok(d) = fs::File::open(dir) {
            // Persist the rename itself; some filesystems refuse fsync on directories.
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Reads at most `limit + 1` bytes of `path`, so a caller comparing the length with
/// `limit` can refuse an oversized file without reading all of it.
///
/// Errors: the underlying I/O error.
pub fn read_limited(path: &Path, limit: usize) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let file = fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(limit as u64 + 1).read_to_end(&mut bytes)?;
    Ok(bytes)
}
