//! Files: atomic writes (every file referee writes appears whole or not at all), bounded
//! reads, directory syncs, the sweep of temp files a killed writer left, and [`IoError`],
//! the one shape of an I/O error on a named file that every crate's error enum wraps.

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

/// The prefix of the temp files [`write_atomic`] creates next to their target
/// (`.tmp` and six random characters); [`is_temp_file_name`] recognises them.
pub const TEMP_PREFIX: &str = ".tmp";

/// Writes `bytes` to `path` through a uniquely named temp file in the same directory
/// (`.tmpXXXXXX`, created with `mode`, e.g. `0o600` for private keys, before any byte is
/// written; the umask applies), fsynced, then renamed over `path`, and the directory
/// fsynced so the rename itself survives a crash. Two writers of one path (threads of one
/// process included) never share a temp file: the last rename wins, each whole.
///
/// Errors: the underlying I/O error; `path` is untouched when it fails, and the temp file
/// is removed.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    write_atomic_with(path, mode, &mut |file| file.write_all(bytes))
}

/// [`write_atomic`] of the bytes `write` writes to the temp file (buffer them, it is
/// handed the file itself): for a file too large to be built in memory first.
///
/// Errors: as [`write_atomic`], and whatever `write` returns.
pub fn write_atomic_with(
    path: &Path,
    mode: u32,
    write: &mut dyn FnMut(&mut fs::File) -> io::Result<()>,
) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if path.file_name().is_none() {
        return Err(io::Error::other("path has no file name"));
    }
    let mut builder = tempfile::Builder::new();
    builder.prefix(TEMP_PREFIX);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(fs::Permissions::from_mode(mode));
    }
    #[cfg(not(unix))]
    let _ = mode;
    // Dropping the temp file on any error below removes it.
    let mut tmp = builder.tempfile_in(dir)?;
    write(tmp.as_file_mut())?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    sync_dir(dir)
}

/// fsyncs the directory `dir`, so the entries created, renamed or removed in it survive a
/// crash. A filesystem that cannot sync directories (`EINVAL`, unsupported) is not an
/// error: there is nothing more to be done on it.
///
/// Errors: opening the directory, or the sync itself failing.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    let d = fs::File::open(dir)?;
    match d.sync_all() {
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::InvalidInput | io::ErrorKind::Unsupported
            ) =>
        {
            Ok(())
        }
        other => other,
    }
}

/// Whether `name` is a temp file of [`write_atomic`]: tempfile's `.tmpXXXXXX`, or the
/// `.<name>.tmp<pid>` of earlier versions. Nothing referee writes into a bundle
/// otherwise starts with a dot.
pub fn is_temp_file_name(name: &str) -> bool {
    if name.starts_with(TEMP_PREFIX) {
        return true;
    }
    name.strip_prefix('.')
        .and_then(|rest| rest.rsplit_once(".tmp"))
        .is_some_and(|(target, pid)| {
            !target.is_empty() && !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit())
        })
}

/// Removes every temp file of [`write_atomic`] ([`is_temp_file_name`]) under `dir`,
/// recursively (symlinks are not followed): what a writer killed between creating its
/// temp file and renaming it left. Returns the files removed. A missing `dir` has none.
///
/// Errors: listing a directory or removing a file failed, naming it.
pub fn remove_temp_files(dir: &Path) -> Result<Vec<PathBuf>, IoError> {
    let mut removed = Vec::new();
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(removed),
        Err(e) => return Err(IoError::at("listing", dir)(e)),
    };
    for entry in entries {
        let entry = entry.map_err(IoError::at("listing", dir))?;
        let path = entry.path();
        let file_type = entry
            .file_type()
            .map_err(IoError::at("inspecting", &path))?;
        if file_type.is_dir() {
            removed.extend(remove_temp_files(&path)?);
        } else if entry.file_name().to_str().is_some_and(is_temp_file_name) {
            fs::remove_file(&path).map_err(IoError::at("removing the temp file", &path))?;
            removed.push(path);
        }
    }
    if !removed.is_empty() {
        sync_dir(dir).map_err(IoError::at("syncing", dir))?;
    }
    Ok(removed)
}

/// Reads at most `limit + 1` bytes of `path`, so a caller comparing the length with
/// `limit` can refuse an oversized file without reading all of it. The buffer is sized
/// from the file's length first, so a whole file takes one `read` plus the one that sees
/// its end (an unsized buffer grows from 32 bytes: 14 reads for 77 KiB).
///
/// Errors: the underlying I/O error.
pub fn read_limited(path: &Path, limit: usize) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let file = fs::File::open(path)?;
    let length = file.metadata().map_or(0, |m| m.len());
    let capacity = usize::try_from(length).unwrap_or(usize::MAX).min(limit);
    let mut bytes = Vec::with_capacity(capacity.saturating_add(1));
    file.take(limit as u64 + 1).read_to_end(&mut bytes)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: the temp file was `.<name>.tmp<pid>`, so two threads of one process
    /// writing one path collided on it (`create_new` failed for one of them).
    #[test]
    fn concurrent_writers_of_one_path_each_write_it_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("record.json");
        let writers: Vec<_> = (0..8u8)
            .map(|i| {
                let path = path.clone();
                std::thread::spawn(move || {
                    for _ in 0..20 {
                        write_atomic(&path, &[b'a' + i; 4096], 0o644)?;
                    }
                    io::Result::Ok(())
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap().unwrap();
        }
        let bytes = fs::read(&path).unwrap();
        assert_eq!(bytes.len(), 4096);
        assert!(bytes.iter().all(|b| *b == bytes[0]));
        // No temp file is left behind.
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("record.json")]);
    }

    #[cfg(unix)]
    #[test]
    fn the_mode_is_the_files_and_a_failed_write_leaves_the_target_alone() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("evaluator.key");
        write_atomic(&key, b"secret", 0o600).unwrap();
        let mode = fs::metadata(&key).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "{mode:o}");
        // A directory where the file should go: the rename fails, nothing is left.
        let blocked = dir.path().join("blocked");
        fs::create_dir(&blocked).unwrap();
        fs::write(blocked.join("inside"), b"kept").unwrap();
        assert!(write_atomic(&blocked, b"x", 0o644).is_err());
        assert!(blocked.is_dir());
        assert_eq!(fs::read(blocked.join("inside")).unwrap(), b"kept");
        assert_eq!(
            remove_temp_files(dir.path()).unwrap(),
            Vec::<PathBuf>::new()
        );
    }

    #[test]
    fn temp_files_of_both_forms_are_swept_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let logs = dir.path().join("logs/steps");
        fs::create_dir_all(&logs).unwrap();
        let planted = [
            dir.path().join(".tmpAb3xYz"),
            dir.path().join(".receipt.dsse.json.tmp4242"),
            logs.join(".00-probing.log.tmp17"),
            logs.join(".tmp000000"),
        ];
        let kept = [
            dir.path().join("receipt.dsse.json"),
            logs.join("00-probing.log"),
            logs.join(".hidden.tmpx"),
            logs.join("a.tmp12"),
        ];
        for path in planted.iter().chain(&kept) {
            fs::write(path, b"x").unwrap();
        }
        let mut removed = remove_temp_files(dir.path()).unwrap();
        removed.sort();
        let mut expected = planted.to_vec();
        expected.sort();
        assert_eq!(removed, expected);
        for path in &kept {
            assert!(path.exists(), "{}", path.display());
        }
        assert!(
            remove_temp_files(&dir.path().join("missing"))
                .unwrap()
                .is_empty()
        );
    }
}
