//! Files: atomic writes (every file referee writes appears whole or not at all), bounded
//! reads, regular files opened without following a symlink, directory syncs, the sweep of
//! temp files a killed writer left, and [`IoError`], the one shape of an I/O error on a
//! named file that every crate's error enum wraps.

use std::fs;
use std::io::{self, Read, Write};
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

/// Reads at most `limit + 1` bytes of `path` (a symlink is followed), so a caller
/// comparing the length with `limit` can refuse an oversized file without reading all of
/// it: [`read_to_limit`] of the file and the length `fstat` gives it.
///
/// Errors: the underlying I/O error.
pub fn read_limited(path: &Path, limit: usize) -> io::Result<Vec<u8>> {
    let file = fs::File::open(path)?;
    let length = file.metadata().map_or(0, |m| m.len());
    read_to_limit(file, length, limit)
}

/// Reads `reader`, a file of `length` bytes (as `fstat` gave it; 0 when unknown), up to
/// `limit + 1` bytes: to its `length` when that is at most `limit`, into a buffer of that
/// size, so that one `read` ends a whole file (no second `read` to see its end; a file
/// that grew since is read as it was then), else `limit + 1` bytes, one more than a
/// caller accepts. A length of 0 is read to the end (a file in `/proc` says 0 and is not
/// empty).
///
/// Errors: the underlying I/O error.
pub fn read_to_limit(mut reader: impl io::Read, length: u64, limit: usize) -> io::Result<Vec<u8>> {
    let most = limit.saturating_add(1);
    let want = match usize::try_from(length) {
        Ok(0) => {
            let mut bytes = Vec::new();
            reader.take(most as u64).read_to_end(&mut bytes)?;
            return Ok(bytes);
        }
        Ok(length) => length.min(most),
        Err(_) => most,
    };
    let mut bytes = vec![0; want];
    let mut filled = 0;
    while filled < want {
        match reader.read(&mut bytes[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    bytes.truncate(filled);
    Ok(bytes)
}

/// What a path names when it is not a regular file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotRegular {
    /// A symbolic link (never followed).
    Symlink,
    /// A directory.
    Directory,
    /// A FIFO, socket or device.
    Special,
}

impl NotRegular {
    /// How a failure message names it: `symlink`, `directory`, `special file`.
    pub fn as_str(self) -> &'static str {
        match self {
            NotRegular::Symlink => "symlink",
            NotRegular::Directory => "directory",
            NotRegular::Special => "special file",
        }
    }
}

/// Why [`open_regular`] gave no file.
#[derive(Debug, thiserror::Error)]
pub enum OpenRegularError {
    /// The path names something other than a regular file.
    #[error("not a regular file but a {}", .0.as_str())]
    NotRegular(NotRegular),
    /// Opening or `fstat` failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl From<OpenRegularError> for io::Error {
    fn from(error: OpenRegularError) -> Self {
        match error {
            OpenRegularError::Io(e) => e,
            not_regular @ OpenRegularError::NotRegular(_) => {
                io::Error::new(io::ErrorKind::InvalidInput, not_regular)
            }
        }
    }
}

/// Opens `path` for reading only if it is a regular file, never through a symlink, in two
/// system calls: `open` with `O_NOFOLLOW` (a symlink as the last component is refused),
/// `O_NONBLOCK` (a FIFO does not block the open) and `O_NOCTTY` (a terminal does not
/// become the controlling one), then `fstat` of the handle, which tells the kind of what
/// was opened, so no `lstat` beforehand can be raced. Returns the file and its length in
/// bytes (for [`read_to_limit`]).
///
/// Errors: [`OpenRegularError::NotRegular`] for a symlink, directory or special file (an
/// `open` refused for one, e.g. `ELOOP` for a symlink, is told apart by an `lstat`);
/// [`OpenRegularError::Io`] otherwise, with `open`'s error.
pub fn open_regular(path: &Path) -> Result<(fs::File, u64), OpenRegularError> {
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let file = match options.open(path) {
        Ok(file) => file,
        Err(e) => {
            return Err(
                match fs::symlink_metadata(path).map(|m| kind_of(m.file_type())) {
                    Ok(Some(kind)) => OpenRegularError::NotRegular(kind),
                    Ok(None) | Err(_) => OpenRegularError::Io(e),
                },
            );
        }
    };
    let metadata = file.metadata()?;
    match kind_of(metadata.file_type()) {
        Some(kind) => Err(OpenRegularError::NotRegular(kind)),
        None => Ok((file, metadata.len())),
    }
}

/// `None` for a regular file, else what it is.
fn kind_of(kind: fs::FileType) -> Option<NotRegular> {
    if kind.is_file() {
        None
    } else if kind.is_symlink() {
        Some(NotRegular::Symlink)
    } else if kind.is_dir() {
        Some(NotRegular::Directory)
    } else {
        Some(NotRegular::Special)
    }
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

    #[cfg(unix)]
    #[test]
    fn only_regular_files_open_and_reads_stop_at_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        fs::write(&file, b"0123456789").unwrap();
        std::os::unix::fs::symlink(&file, dir.path().join("link")).unwrap();
        // A socket cannot be opened at all: the `lstat` after the failed `open` names it.
        let _socket = std::os::unix::net::UnixListener::bind(dir.path().join("socket")).unwrap();
        for (name, kind) in [
            ("link", NotRegular::Symlink),
            (".", NotRegular::Directory),
            ("socket", NotRegular::Special),
        ] {
            match open_regular(&dir.path().join(name)) {
                Err(OpenRegularError::NotRegular(found)) => assert_eq!(found, kind, "{name}"),
                other => panic!("{name}: {other:?}"),
            }
        }
        match open_regular(&dir.path().join("missing")) {
            Err(OpenRegularError::Io(e)) => assert_eq!(e.kind(), io::ErrorKind::NotFound),
            other => panic!("{other:?}"),
        }
        let (handle, length) = open_regular(&file).unwrap();
        assert_eq!(length, 10);
        assert_eq!(read_to_limit(handle, length, 10).unwrap(), b"0123456789");
        let (handle, length) = open_regular(&file).unwrap();
        assert_eq!(read_to_limit(handle, length, 4).unwrap(), b"01234");
        // A length of 0 (unknown) reads to the end, still within the limit.
        assert_eq!(read_to_limit(&b"abcdef"[..], 0, 4).unwrap(), b"abcde");
        assert_eq!(read_to_limit(&b"abc"[..], 0, 4).unwrap(), b"abc");
        assert_eq!(
            read_limited(&dir.path().join("link"), 100).unwrap(),
            b"0123456789"
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
