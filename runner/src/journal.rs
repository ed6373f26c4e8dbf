//! The round journal: one JSON line per finished step, appended and fsynced before the
//! next step starts, under `data/<campaign>/.work/round-<n>/journal.jsonl` (content/data-directory.md,
//! `.work/`). Running `referee round` again after a kill reads it back and
//! resumes after the last finished step.
//!
//! Only the last line can be torn by a kill (each append is fsynced before the next
//! step, so nothing is ever written after a torn line): a last line without its newline,
//! or one that does not parse, is cut off on open and the step it belonged to simply
//! runs again. Any earlier line that does not parse is corruption, never a tear: opening
//! the journal fails naming the file and the line, rather than dropping the records after
//! it (which would make a resumed round run their steps again, with fresh seeds).

use receipts::fsutil::{IoError, sync_dir};
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
    /// A line before the last does not parse: the journal is corrupt, not torn.
    #[error(
        "journal `{path}` is corrupt at line {line} of {lines}: {message}; \
         only a torn last line is dropped, so this round cannot resume from it"
    )]
    Corrupt {
        /// The journal file.
        path: PathBuf,
        /// The 1-based number of the line that does not parse.
        line: usize,
        /// The number of lines in the file (the last one possibly unterminated).
        lines: usize,
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
    /// in it, in order. A torn last line (unterminated, or not parseable) is removed from
    /// the file; a journal created here has its directory fsynced, so its name survives a
    /// crash along with its records.
    ///
    /// Errors: [`JournalError::Corrupt`] naming the file and the line when a line before
    /// the last does not parse; [`JournalError::Io`] naming the file.
    pub fn open(path: &Path) -> Result<(Self, Vec<T>), JournalError> {
        let io = |action, path: &Path| {
            let path = path.to_path_buf();
            move |source| {
                JournalError::Io(IoError {
                    action,
                    path,
                    source,
                })
            }
        };
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        fs::create_dir_all(dir).map_err(io("creating the directory of", path))?;
        let (bytes, created) = match fs::read(path) {
            Ok(bytes) => (bytes, false),
            Err(e) if e.kind() == io::ErrorKind::NotFound => (Vec::new(), true),
            Err(e) => return Err(io("reading", path)(e)),
        };
        let (records, good_len) = parse(path, &bytes)?;
        let file = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(io("opening", path))?;
        if created {
            sync_dir(dir).map_err(io("syncing the directory of", path))?;
        }
        if good_len < bytes.len() {
            file.set_len(good_len as u64)
                .map_err(io("truncating a torn line of", path))?;
            file.sync_all().map_err(io("syncing", path))?;
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

/// The records of a journal's bytes and the length of the lines they came from: every
/// line but the last must parse; the last is dropped when it is unterminated or does not.
fn parse<T: DeserializeOwned>(path: &Path, bytes: &[u8]) -> Result<(Vec<T>, usize), JournalError> {
    let lines: Vec<&[u8]> = bytes.split_inclusive(|b| *b == b'\n').collect();
    let mut records = Vec::with_capacity(lines.len());
    let mut good_len = 0usize;
    for (i, line) in lines.iter().enumerate() {
        let last = i + 1 == lines.len();
        if last && !line.ends_with(b"\n") {
            // Torn mid-append: the newline is the last byte written.
            break;
        }
        match serde_json::from_slice::<T>(line) {
            Ok(record) => {
                records.push(record);
                good_len += line.len();
            }
            // A crash mid-append can leave the last line whole in length but not in
            // content (pages written out of order): it is torn too.
            Err(_) if last => break,
            Err(e) => {
                return Err(JournalError::Corrupt {
                    path: path.to_path_buf(),
                    line: i + 1,
                    lines: lines.len(),
                    message: e.to_string(),
                });
            }
        }
    }
    Ok((records, good_len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Rec {
        step: u32,
    }

    fn journal_of(lines: &[u8]) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("round-1/journal.jsonl");
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, lines).unwrap();
        (dir, path)
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

    /// A last line whole in length but not in content (a crash with its pages written
    /// out of order) is torn as well, and cut.
    #[test]
    fn a_garbled_last_line_is_torn_and_cut() {
        let (_dir, path) = journal_of(b"{\"step\":0}\n{\"st\0\0\0\0\n");
        let (_journal, records) = Journal::<Rec>::open(&path).unwrap();
        assert_eq!(records, vec![Rec { step: 0 }]);
        assert_eq!(fs::read_to_string(&path).unwrap(), "{\"step\":0}\n");
    }

    /// Regression: an unparseable line anywhere cut the journal there, silently dropping
    /// the records after it (a resumed round then ran those steps again).
    #[test]
    fn a_corrupt_middle_line_is_an_error_naming_the_file_and_line() {
        let original = b"{\"step\":0}\n{\"step\":1}\n{\"stXp\":2\n{\"step\":3}\n{\"step\":4}\n";
        let (_dir, path) = journal_of(original);
        let err = Journal::<Rec>::open(&path).unwrap_err();
        match &err {
            JournalError::Corrupt {
                path: named, line, ..
            } => {
                assert_eq!(named, &path);
                assert_eq!(*line, 3);
            }
            other => panic!("expected Corrupt, got {other:?}"),
        }
        let message = err.to_string();
        assert!(message.contains(&path.display().to_string()), "{message}");
        assert!(message.contains("line 3 of 5"), "{message}");
        // Nothing was cut.
        assert_eq!(fs::read(&path).unwrap(), original);
        // An empty line in the middle is corruption too.
        let (_dir, path) = journal_of(b"{\"step\":0}\n\n{\"step\":1}\n");
        assert!(matches!(
            Journal::<Rec>::open(&path),
            Err(JournalError::Corrupt { line: 2, .. })
        ));
    }
}
