//! The round journal: one JSON line per finished step, appended and fsynced before the
//! next step starts, under `data/<campaign>/.work/round-<n>/journal.jsonl` (DESIGN.md,
//! One data directory). Running `referee round` again after a kill reads it back and
//! resumes after the last finished step. A line torn by the kill (no newline, or not
//! parseable) is cut off on open: the step it belonged to simply runs again.

use receipts::fsutil::IoError;
use std::fs;
use std::io::{self, Write};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

/// Errors of the journal; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// Reading, writing or syncing the journal failed.
    /// An I/O error on a named file.
    #[error(transparent)]
    Io(#[from] IoError),
    /// A record could not be serialized.
    #[error("serializing a record for journal `{path}`: {message}")]
    Serialize {
        /// The journal file.
        path: PathBuf,
        /// serde's message.
        message: String,
    },
}

/// An append-only journal of records of type `T`, one JSON object a line.
#[derive(Debug)]
pub struct Journal<T> {
    path: PathBuf,
    file: fs::File,
    _records: PhantomData<T>,
}

impl<T: Serialize + DeserializeOwned> Journal<T> {
    /// Opens (creating) the journal at `path` and returns it with the records already
    /// in it, in order. A torn last line is removed from the file.
    ///
    /// Errors: [`JournalError::Io`] naming the file.
    pub fn open(path: &Path) -> Result<(Self, Vec<T>), JournalError> {
        let io = |action| {
            let path = path.to_path_buf();
            move |source| {
                JournalError::Io(IoError {
                    action,
                    path,
                    source,
                })
            }
        };
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(io("creating the directory of"))?;
        }
        let bytes = match fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io("reading")(e)),
        };
        let mut records = Vec::new();
        let mut good_len = 0usize;
        for line in bytes.split_inclusive(|b| *b == b'\n') {
            if !line.ends_with(b"\n") {
                break;
            }
            match serde_json::from_slice::<T>(line) {
                Ok(record) => {
                    records.push(record);
                    good_len += line.len();
                }
                Err(_) => break,
            }
        }
        let file = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(io("opening"))?;
        if good_len < bytes.len() {
            file.set_len(good_len as u64)
                .map_err(io("truncating a torn line of"))?;
            file.sync_all().map_err(io("syncing"))?;
        }
        Ok((
            Self {
                path: path.to_path_buf(),
                file,
                _records: PhantomData,
            },
            records,
        ))
    }

    /// Appends one record as a JSON line and fsyncs it before returning.
    ///
    /// Errors: [`JournalError::Serialize`], [`JournalError::Io`].
    pub fn append(&mut self, record: &T) -> Result<(), JournalError> {
        let mut line = serde_json::to_vec(record).map_err(|e| JournalError::Serialize {
            path: self.path.clone(),
            message: e.to_string(),
        })?;
        line.push(b'\n');
        let io = |action| {
            let path = self.path.clone();
            move |source| {
                JournalError::Io(IoError {
                    action,
                    path,
                    source,
                })
            }
        };
        self.file.write_all(&line).map_err(io("appending to"))?;
        self.file.sync_all().map_err(io("syncing"))
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Rec {
        step: u32,
    }

    #[test]
    fn records_survive_reopening_and_a_torn_line_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("round-1/journal.jsonl");
        {
            let (mut journal, records) = Journal::<Rec>::open(&path).unwrap();
            assert!(records.is_empty());
            journal.append(&Rec { step: 0 }).unwrap();
            journal.append(&Rec { step: 1 }).unwrap();
        }
        // A kill in the middle of a write leaves half a line.
        let mut file = fs::OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(b"{\"step\":").unwrap();
        drop(file);
        let (mut journal, records) = Journal::<Rec>::open(&path).unwrap();
        assert_eq!(records, vec![Rec { step: 0 }, Rec { step: 1 }]);
        journal.append(&Rec { step: 2 }).unwrap();
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            "{\"step\":0}\n{\"step\":1}\n{\"step\":2}\n"
        );
    }
}
