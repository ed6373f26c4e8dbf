//! The data directory's transparency log on the site (content/transparency-log.md):
//! `data/log/` as C2SP tlog-tiles static files, served verbatim under `/log/` —
//! the signed `checkpoint` and every tile and entry bundle its tree size needs — once
//! it verifies against the keyring's `log` key and holds every logged round of the
//! archive exactly once, in chain order (`verifier::tlog::check_archive_log`). A log
//! that does not verify is not served; the build says why.

use std::path::Path;

use receipts::fsutil::IoError;
use receipts::keys::Keyring;
use receipts::tlog::tiles::tiles_for_size;
use verifier::tlog::{ArchiveRound, check_archive_log};

/// The log directory under the data directory.
const LOG_DIR: &str = "log";

/// What the site does with the data directory's log.
#[derive(Clone, Debug, Default)]
pub enum LogState {
    /// The data directory has no log (`log/checkpoint` absent).
    #[default]
    Absent,
    /// The log verified: served under `/log/`.
    Served(PublicLog),
    /// The log did not verify, or could not be read: not served, for this reason.
    Refused(String),
}

/// A log that verified, as the site serves it.
#[derive(Clone, Debug)]
pub struct PublicLog {
    /// The checkpoint's origin line, e.g. `referee.example/log`.
    pub origin: String,
    /// Its tree size, entries.
    pub size: u64,
    /// Its root hash as the checkpoint writes it (base64).
    pub root: String,
    /// The files, relative to `log/` (`checkpoint`, `tile/0/000`, `tile/entries/000.p/2`,
    /// …), with their bytes as read.
    pub files: Vec<(String, Vec<u8>)>,
}

/// Reads and checks the log of the data directory at `data_root` against the archive's
/// verified `rounds`.
pub fn load_log(data_root: &Path, rounds: &[ArchiveRound<'_>], keyring: &Keyring) -> LogState {
    let dir = data_root.join(LOG_DIR);
    if !dir.join("checkpoint").is_file() {
        return LogState::Absent;
    }
    let report = check_archive_log(&dir, rounds, keyring, false);
    if let Some(failure) = report.failures().next() {
        let name = failure.name.as_str();
        return LogState::Refused(match &failure.reason {
            Some(reason) => format!("{name}: {reason}"),
            None => name.to_owned(),
        });
    }
    match read_public(&dir) {
        Ok(log) => LogState::Served(log),
        Err(e) => LogState::Refused(e.to_string()),
    }
}

/// The checkpoint and the tiles and entry bundles of its size.
fn read_public(dir: &Path) -> Result<PublicLog, IoError> {
    let read = |name: &str| {
        let path = dir.join(name);
        std::fs::read(&path).map_err(IoError::at("reading", &path))
    };
    let checkpoint = read("checkpoint")?;
    // Verified above; its first three lines are origin, size and root.
    let (origin, size, root) = {
        let text = String::from_utf8_lossy(&checkpoint);
        let mut lines = text.lines().map(str::to_owned);
        let origin = lines.next().unwrap_or_default();
        let size = lines.next().and_then(|s| s.parse().ok()).unwrap_or(0);
        (origin, size, lines.next().unwrap_or_default())
    };
    let mut files = vec![("checkpoint".to_owned(), checkpoint)];
    for tile in tiles_for_size(size) {
        let path = tile.path();
        files.push((path.clone(), read(&path)?));
        if tile.level == 0 {
            let entries = tile.entries_path();
            files.push((entries.clone(), read(&entries)?));
        }
    }
    Ok(PublicLog {
        origin,
        size,
        root,
        files,
    })
}
