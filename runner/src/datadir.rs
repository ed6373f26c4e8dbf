//! The data directory (DESIGN.md, One data directory): where every file the evaluator
//! keeps lives, so the runner writes it, the verifier checks it and the site renders it
//! with no other configuration.
//!
//! ```text
//! data/
//!   keyring.json
//!   <campaign-id>/
//!     campaign.toml  miners.json  baseline.git/
//!     submissions/<sha256>.diff  submissions/<sha256>.json
//!     rounds/<n>/receipt.dsse.json …
//!     .work/  .lock
//! ```

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use receipts::fsutil::write_atomic;
use receipts::model::{Campaign, CampaignId, MinerRegistry, Sha256Hex, Submission};

/// Errors reading or writing the data directory; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// An I/O error on `path`.
    #[error("{action} `{path}`")]
    Io {
        /// What was being done (`reading`, `writing`, …).
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// A record that does not parse.
    #[error("parsing `{path}`: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message.
        message: String,
    },
    /// The campaign has not been added.
    #[error("campaign `{id}` not found in `{data}` (run `referee campaign add` first)")]
    NoCampaign {
        /// The campaign id.
        id: String,
        /// The data directory.
        data: PathBuf,
    },
    /// Another process holds the campaign's lock.
    #[error("`{path}` is locked by another referee process")]
    Locked {
        /// The lock file.
        path: PathBuf,
    },
}

/// The root of a data directory.
#[derive(Clone, Debug)]
pub struct DataDir {
    root: PathBuf,
}

impl DataDir {
    /// A data directory at `root` (it need not exist yet).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The root path.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `data/keyring.json`: trusted public keys with validity windows.
    pub fn keyring_path(&self) -> PathBuf {
        self.root.join("keyring.json")
    }

    /// `data/evaluator.key`: the evaluator's private key, generated on first demo run.
    pub fn evaluator_key_path(&self) -> PathBuf {
        self.root.join("evaluator.key")
    }

    /// The directory of campaign `id`.
    pub fn campaign(&self, id: &CampaignId) -> CampaignDir {
        CampaignDir {
            root: self.root.join(id.as_str()),
            id: id.clone(),
        }
    }
}

/// `data/<campaign-id>/`.
#[derive(Clone, Debug)]
pub struct CampaignDir {
    root: PathBuf,
    id: CampaignId,
}

impl CampaignDir {
    /// The directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The campaign id.
    pub fn id(&self) -> &CampaignId {
        &self.id
    }

    /// `campaign.toml`, the frozen campaign.
    pub fn campaign_toml(&self) -> PathBuf {
        self.root.join("campaign.toml")
    }

    /// `miners.json`, registered miners (append-only).
    pub fn miners_json(&self) -> PathBuf {
        self.root.join("miners.json")
    }

    /// `baseline.git`, the bare copy of the pinned baseline repository.
    pub fn baseline_repo(&self) -> PathBuf {
        self.root.join("baseline.git")
    }

    /// `submissions/`.
    pub fn submissions_dir(&self) -> PathBuf {
        self.root.join("submissions")
    }

    /// `submissions/<sha256>.diff`: the exact bytes a miner committed.
    pub fn submission_diff(&self, sha256: &Sha256Hex) -> PathBuf {
        self.submissions_dir().join(format!("{sha256}.diff"))
    }

    /// `submissions/<sha256>.json`: its record.
    pub fn submission_json(&self, sha256: &Sha256Hex) -> PathBuf {
        self.submissions_dir().join(format!("{sha256}.json"))
    }

    /// `rounds/`.
    pub fn rounds_dir(&self) -> PathBuf {
        self.root.join("rounds")
    }

    /// `rounds/<n>/`, which appears only complete.
    pub fn round_dir(&self, n: u64) -> PathBuf {
        self.rounds_dir().join(n.to_string())
    }

    /// `.work/`: journals and temp files of rounds in progress.
    pub fn work_dir(&self) -> PathBuf {
        self.root.join(".work")
    }

    /// `.lock`: keeps two writers of the records apart (held for short writes).
    pub fn lock_path(&self) -> PathBuf {
        self.root.join(".lock")
    }

    /// Reads and validates `campaign.toml`.
    ///
    /// Errors: [`DataError::NoCampaign`] when it is missing, [`DataError::Parse`] when it
    /// does not validate.
    pub fn load_campaign(&self) -> Result<Campaign, DataError> {
        let path = self.campaign_toml();
        let text = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(DataError::NoCampaign {
                    id: self.id.to_string(),
                    data: self
                        .root
                        .parent()
                        .map(Path::to_path_buf)
                        .unwrap_or_default(),
                });
            }
            Err(source) => {
                return Err(DataError::Io {
                    action: "reading",
                    path,
                    source,
                });
            }
        };
        Campaign::from_toml(&path.display().to_string(), &text).map_err(|e| {
            // The parse error already names the file; do not name it twice.
            let message = match e {
                receipts::model::ModelError::Toml { message, .. } => message,
                other => other.to_string(),
            };
            DataError::Parse { path, message }
        })
    }

    /// Reads `miners.json` (empty when it does not exist yet).
    pub fn load_miners(&self) -> Result<MinerRegistry, DataError> {
        let path = self.miners_json();
        match fs::read(&path) {
            Ok(bytes) => parse_json(&path, &bytes),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(MinerRegistry::default()),
            Err(source) => Err(DataError::Io {
                action: "reading",
                path,
                source,
            }),
        }
    }

    /// Writes `miners.json` atomically.
    pub fn save_miners(&self, miners: &MinerRegistry) -> Result<(), DataError> {
        write_json(&self.miners_json(), miners)
    }

    /// Reads one submission record.
    pub fn load_submission(&self, sha256: &Sha256Hex) -> Result<Submission, DataError> {
        let path = self.submission_json(sha256);
        let bytes = fs::read(&path).map_err(|source| DataError::Io {
            action: "reading",
            path: path.clone(),
            source,
        })?;
        parse_json(&path, &bytes)
    }

    /// Writes one submission record atomically.
    pub fn save_submission(&self, submission: &Submission) -> Result<(), DataError> {
        write_json(&self.submission_json(&submission.sha256), submission)
    }

    /// Every submission record, oldest commitment first (ties by sha256).
    pub fn list_submissions(&self) -> Result<Vec<Submission>, DataError> {
        let dir = self.submissions_dir();
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(DataError::Io {
                    action: "listing",
                    path: dir,
                    source,
                });
            }
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|source| DataError::Io {
                action: "listing",
                path: dir.clone(),
                source,
            })?;
            let path = entry.path();
            if path.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            let bytes = fs::read(&path).map_err(|source| DataError::Io {
                action: "reading",
                path: path.clone(),
                source,
            })?;
            out.push(parse_json::<Submission>(&path, &bytes)?);
        }
        out.sort_by(|a, b| {
            let first = |s: &Submission| s.events.first().map(|e| e.at);
            first(a)
                .cmp(&first(b))
                .then_with(|| a.sha256.cmp(&b.sha256))
        });
        Ok(out)
    }

    /// Numbers of the sealed rounds, ascending.
    pub fn round_numbers(&self) -> Result<Vec<u64>, DataError> {
        let dir = self.rounds_dir();
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(DataError::Io {
                    action: "listing",
                    path: dir,
                    source,
                });
            }
        };
        let mut out: Vec<u64> = entries
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
            .collect();
        out.sort_unstable();
        Ok(out)
    }

    /// `.round.lock`: keeps two round runners apart for a whole round.
    pub fn round_lock_path(&self) -> PathBuf {
        self.root.join(".round.lock")
    }

    /// Takes the lock on the campaign's records (submissions, miners.json, campaign.toml)
    /// for a short write. It waits up to [`RECORDS_LOCK_WAIT`] for another writer (an
    /// ingest, or a round seating or scoring its entries) to finish; released when the
    /// guard drops.
    ///
    /// Errors: [`DataError::Locked`] when it is still held after the wait.
    pub fn lock(&self) -> Result<CampaignLock, DataError> {
        let deadline = std::time::Instant::now() + RECORDS_LOCK_WAIT;
        loop {
            match try_lock(&self.root, &self.lock_path())? {
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

    /// Takes the round lock (non-blocking) for the whole of a round, so two runners never
    /// run rounds of one campaign at once. It does not hold the records lock: submissions
    /// can be ingested while a round runs (they wait for the next round).
    ///
    /// Errors: [`DataError::Locked`] when another runner holds it.
    pub fn lock_rounds(&self) -> Result<CampaignLock, DataError> {
        try_lock(&self.root, &self.round_lock_path())?.ok_or_else(|| DataError::Locked {
            path: self.round_lock_path(),
        })
    }
}

/// How long [`CampaignDir::lock`] waits for another writer of the records.
pub const RECORDS_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Takes the exclusive lock on `path` (created in `root` if missing) without waiting;
/// `None` when another process holds it.
fn try_lock(root: &Path, path: &Path) -> Result<Option<CampaignLock>, DataError> {
    fs::create_dir_all(root).map_err(|source| DataError::Io {
        action: "creating",
        path: root.to_path_buf(),
        source,
    })?;
    let file = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|source| DataError::Io {
            action: "opening",
            path: path.to_path_buf(),
            source,
        })?;
    match file.try_lock() {
        Ok(()) => Ok(Some(CampaignLock { _file: file })),
        Err(fs::TryLockError::WouldBlock) => Ok(None),
        Err(fs::TryLockError::Error(source)) => Err(DataError::Io {
            action: "locking",
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Holds a campaign's lock until dropped.
#[derive(Debug)]
pub struct CampaignLock {
    _file: fs::File,
}

/// Parses a JSON record with serde, naming the file on error.
pub fn parse_json<T: serde::de::DeserializeOwned>(
    path: &Path,
    bytes: &[u8],
) -> Result<T, DataError> {
    serde_json::from_slice(bytes).map_err(|e| DataError::Parse {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// Writes a record as pretty JSON (with a trailing newline), atomically, creating parent
/// directories.
pub fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<(), DataError> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(|source| DataError::Io {
            action: "creating",
            path: parent.to_path_buf(),
            source,
        })?;
    }
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|e| DataError::Parse {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    bytes.push(b'\n');
    write_atomic(path, &bytes, 0o644).map_err(|source| DataError::Io {
        action: "writing",
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: a round used to hold the one campaign lock for its whole run, so every
    /// `ingest` and `miner add` failed with "locked" for hours.
    #[test]
    fn a_running_round_blocks_other_rounds_but_not_record_writes() {
        let dir = tempfile::tempdir().unwrap();
        let campaign = DataDir::new(dir.path()).campaign(&"c".parse().unwrap());
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
}
