//! Writing the data directory: the records' writers (miners, submissions) and the two
//! campaign locks. The layout and the read-only loaders are `receipts::layout`, which the
//! verifier and the site use without linking the runner.

use receipts::fsutil::IoError;
use std::fs;
use std::path::Path;

use receipts::fsutil::write_atomic;
use receipts::layout::{CampaignDir, DataError};
use receipts::model::{MinerRegistry, Submission};

/// The writers and locks of a campaign directory.
pub trait CampaignStore {
    /// Writes `miners.json` atomically.
    ///
    /// Errors: [`DataError::Io`] naming the file.
    fn save_miners(&self, miners: &MinerRegistry) -> Result<(), DataError>;

    /// Writes one submission record atomically.
    ///
    /// Errors: [`DataError::Io`] naming the file.
    fn save_submission(&self, submission: &Submission) -> Result<(), DataError>;

    /// Takes the lock on the campaign's records (submissions, miners.json, the campaign)
    /// for a short write. It waits up to [`RECORDS_LOCK_WAIT`] for another writer (an
    /// ingest, or a round seating or scoring its entries) to finish; released when the
    /// guard drops.
    ///
    /// The campaign must exist (its `campaign.json`, or a schema-1 `campaign.toml`):
    /// nothing is created for a campaign that was never added.
    ///
    /// Errors: [`DataError::NoCampaign`] when it does not exist; [`DataError::Locked`]
    /// when it is still held after the wait.
    fn lock(&self) -> Result<CampaignLock, DataError>;

    /// [`CampaignStore::lock`] for `referee campaign add`, the one writer that creates the
    /// campaign's directory: it does not require the campaign to exist.
    ///
    /// Errors: [`DataError::Locked`] when it is still held after the wait.
    fn lock_for_add(&self) -> Result<CampaignLock, DataError>;

    /// Takes the round lock (non-blocking) for the whole of a round, so two runners never
    /// run rounds of one campaign at once. It does not hold the records lock: submissions
    /// can be ingested while a round runs (they wait for the next round).
    ///
    /// Errors: [`DataError::NoCampaign`] when the campaign does not exist (nothing is
    /// created); [`DataError::Locked`] when another runner holds it.
    fn lock_rounds(&self) -> Result<CampaignLock, DataError>;
}

impl CampaignStore for CampaignDir {
    fn save_miners(&self, miners: &MinerRegistry) -> Result<(), DataError> {
        write_json(&self.miners_json(), miners)
    }

    fn save_submission(&self, submission: &Submission) -> Result<(), DataError> {
        write_json(&self.submission_json(&submission.sha256), submission)
    }

    fn lock(&self) -> Result<CampaignLock, DataError> {
        require_campaign(self)?;
        self.lock_for_add()
    }

    fn lock_for_add(&self) -> Result<CampaignLock, DataError> {
        let deadline = std::time::Instant::now() + RECORDS_LOCK_WAIT;
        loop {
            match try_lock(self.root(), &self.lock_path())? {
                Some(lock) => return Ok(lock),
                None if std::time::Instant::now() >= deadline => {
                    return Err(DataError::Locked {
                        path: self.lock_path(),
                    });
                }
                None => std::thread::sleep(std::time::Duration::from_millis(50)),
            }
        }
    }

    fn lock_rounds(&self) -> Result<CampaignLock, DataError> {
        require_campaign(self)?;
        try_lock(self.root(), &self.round_lock_path())?.ok_or_else(|| DataError::Locked {
            path: self.round_lock_path(),
        })
    }
}

/// [`DataError::NoCampaign`] unless the campaign has been added: its `campaign.json`, or
/// the schema-1 `campaign.toml` of a campaign frozen before `campaign.json` existed.
fn require_campaign(dir: &CampaignDir) -> Result<(), DataError> {
    if dir.campaign_json().is_file() || dir.campaign_toml().is_file() {
        return Ok(());
    }
    Err(DataError::NoCampaign {
        id: dir.id().to_string(),
        data: dir
            .root()
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default(),
    })
}

/// How long [`CampaignStore::lock`] waits for another writer of the records.
pub const RECORDS_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Takes the exclusive lock on `path` (created in `root` if missing) without waiting;
/// `None` when another process holds it.
pub(crate) fn try_lock(root: &Path, path: &Path) -> Result<Option<CampaignLock>, DataError> {
    fs::create_dir_all(root).map_err(|source| {
        DataError::Io(IoError {
            action: "creating",
            path: root.to_path_buf(),
            source,
        })
    })?;
    let file = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|source| {
            DataError::Io(IoError {
                action: "opening",
                path: path.to_path_buf(),
                source,
            })
        })?;
    match file.try_lock() {
        Ok(()) => Ok(Some(CampaignLock { _file: file })),
        Err(fs::TryLockError::WouldBlock) => Ok(None),
        Err(fs::TryLockError::Error(source)) => Err(DataError::Io(IoError {
            action: "locking",
            path: path.to_path_buf(),
            source,
        })),
    }
}

/// Holds a campaign's lock until dropped.
#[derive(Debug)]
pub struct CampaignLock {
    _file: fs::File,
}

/// Writes a record as pretty JSON (with a trailing newline), atomically, creating parent
/// directories.
///
/// Errors: [`DataError::Parse`] when it does not serialize, [`DataError::Io`] naming the
/// directory or file that cannot be written.
pub fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<(), DataError> {
    write_serialized(path, serde_json::to_vec_pretty(value))
}

/// [`write_json`] without indentation, one line: for an artifact of many small numbers
/// (the per-item correctness file and its top-k lists), which pretty JSON would make
/// about four times larger.
///
/// Errors: as [`write_json`].
pub fn write_json_compact<T: serde::Serialize>(path: &Path, value: &T) -> Result<(), DataError> {
    write_serialized(path, serde_json::to_vec(value))
}

fn write_serialized(path: &Path, bytes: serde_json::Result<Vec<u8>>) -> Result<(), DataError> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(|source| {
            DataError::Io(IoError {
                action: "creating",
                path: parent.to_path_buf(),
                source,
            })
        })?;
    }
    let mut bytes = bytes.map_err(|e| DataError::Parse {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    bytes.push(b'\n');
    write_atomic(path, &bytes, 0o644).map_err(|source| {
        DataError::Io(IoError {
            action: "writing",
            path: path.to_path_buf(),
            source,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use receipts::layout::DataDir;

    /// Regression: a round used to hold the one campaign lock for its whole run, so every
    /// `ingest` and `miner add` failed with "locked" for hours.
    #[test]
    fn a_running_round_blocks_other_rounds_but_not_record_writes() {
        let dir = tempfile::tempdir().unwrap();
        let campaign = DataDir::new(dir.path()).campaign(&"c".parse().unwrap());
        fs::create_dir_all(campaign.root()).unwrap();
        fs::write(campaign.campaign_json(), b"{}").unwrap();
        let round = campaign.lock_rounds().unwrap();
        assert!(matches!(
            campaign.lock_rounds(),
            Err(DataError::Locked { .. })
        ));
        let records = campaign.lock().unwrap();
        drop(records);
        drop(round);
        campaign.lock_rounds().unwrap();
    }

    /// Regression: `miner add`, `ingest` and `round` with an unknown campaign created
    /// `<data>/<id>/.lock` (and the directory) before finding out it did not exist.
    #[test]
    fn locks_of_an_unknown_campaign_create_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let campaign = DataDir::new(dir.path()).campaign(&"nope".parse().unwrap());
        assert!(matches!(campaign.lock(), Err(DataError::NoCampaign { .. })));
        assert!(matches!(
            campaign.lock_rounds(),
            Err(DataError::NoCampaign { .. })
        ));
        assert!(!campaign.root().exists());
        let message = campaign.lock().unwrap_err().to_string();
        assert!(
            message.contains("run `referee campaign add` first"),
            "{message}"
        );
        // A schema-1 campaign (campaign.toml only) exists.
        fs::create_dir_all(campaign.root()).unwrap();
        fs::write(campaign.campaign_toml(), b"").unwrap();
        campaign.lock().unwrap();
        campaign.lock_rounds().unwrap();
    }
}
