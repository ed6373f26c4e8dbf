//! Where a round's beacon value comes from (content/measurement.md, Seeds): a source
//! names the round it will use when the round opens, then gives that round's value.
//! Two sources: a file (tests and `referee demo`), unsigned, so receipts and `show` label
//! it so; and drand quicknet over HTTP (`super::drand`), each value checked offline by
//! `verifier::beacon` before it is used.

use std::fmt;
use std::path::{Path, PathBuf};

use receipts::canonical::from_slice_strict;
use receipts::fsutil::{IoError, read_limited};
use receipts::model::{BeaconRecord, BeaconSource, Seed32};
use serde::Deserialize;

/// The largest beacon file read, bytes.
const MAX_BEACON_FILE_BYTES: usize = 4096;

/// A public beacon the seeds of a round derive from.
pub trait Beacon: fmt::Debug + Send + Sync {
    /// What kind of source this is, as the round-opened statement names it.
    fn source(&self) -> BeaconSource;

    /// The round this source will give the value of, named in the round-opened
    /// statement before the value is read.
    ///
    /// Errors: [`BeaconError`] when the source cannot say.
    fn next_round(&self) -> Result<u64, BeaconError>;

    /// The value of `round`, waiting for it where the source has not produced it yet.
    ///
    /// Errors: [`BeaconError`] when the value cannot be had.
    fn value(&self, round: u64) -> Result<BeaconRecord, BeaconError>;
}

/// Why a beacon gave no value.
#[derive(Debug, thiserror::Error)]
pub enum BeaconError {
    /// The beacon file could not be read.
    #[error(transparent)]
    Io(#[from] IoError),
    /// The beacon file is not `{"round": n, "value": "<64 hex>"}`.
    #[error("beacon file `{path}`: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The HTTP endpoint could not be reached or answered otherwise than with a value.
    #[error("beacon `{url}`: {message}")]
    Http {
        /// The URL asked.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// The round was still not published long after its time.
    #[error("beacon `{url}`: not published {waited_periods} periods after its time")]
    NotPublished {
        /// The URL asked.
        url: String,
        /// How many periods past the round's time the source kept asking.
        waited_periods: u32,
    },
    /// The value the endpoint gave does not verify offline, or is another round's.
    #[error("the beacon value of round {round} is refused: {message}")]
    Invalid {
        /// The round named at opening.
        round: u64,
        /// Why.
        message: String,
    },
    /// The source holds another round than the one named at opening.
    #[error("beacon file `{path}` holds round {held}, not the round {named} the round named")]
    OtherRound {
        /// The file.
        path: PathBuf,
        /// The round it holds.
        held: u64,
        /// The round named at opening.
        named: u64,
    },
}

/// A beacon read from a JSON file `{"round": n, "value": "<64 hex>"}`: unsigned.
#[derive(Clone, Debug)]
pub struct FileBeacon {
    path: PathBuf,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BeaconFile {
    round: u64,
    value: Seed32,
}

impl FileBeacon {
    /// The beacon in the file at `path` (read when the round opens).
    pub fn new(path: &Path) -> Self {
        Self {
            path: path.to_owned(),
        }
    }

    fn read(&self) -> Result<BeaconFile, BeaconError> {
        let bytes = read_limited(&self.path, MAX_BEACON_FILE_BYTES).map_err(|source| IoError {
            action: "reading",
            path: self.path.clone(),
            source,
        })?;
        from_slice_strict(&bytes, MAX_BEACON_FILE_BYTES).map_err(|e| BeaconError::Parse {
            path: self.path.clone(),
            message: e.to_string(),
        })
    }
}

impl Beacon for FileBeacon {
    fn source(&self) -> BeaconSource {
        BeaconSource::File
    }

    fn next_round(&self) -> Result<u64, BeaconError> {
        Ok(self.read()?.round)
    }

    fn value(&self, round: u64) -> Result<BeaconRecord, BeaconError> {
        let file = self.read()?;
        if file.round != round {
            return Err(BeaconError::OtherRound {
                path: self.path.clone(),
                held: file.round,
                named: round,
            });
        }
        Ok(BeaconRecord {
            source: BeaconSource::File,
            round,
            value: file.value,
            signature: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_beacon_gives_its_round_unsigned() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("beacon.json");
        let value = "20".repeat(32);
        std::fs::write(&path, format!(r#"{{"round":7,"value":"{value}"}}"#)).expect("write");
        let beacon = FileBeacon::new(&path);
        assert_eq!(beacon.next_round().expect("round"), 7);
        let record = beacon.value(7).expect("value");
        assert_eq!(record.source, BeaconSource::File);
        assert_eq!(record.value, Seed32([0x20; 32]));
        assert_eq!(record.signature, None);
        assert!(matches!(
            beacon.value(8),
            Err(BeaconError::OtherRound {
                held: 7,
                named: 8,
                ..
            })
        ));
        std::fs::write(&path, r#"{"round":7}"#).expect("write");
        assert!(matches!(beacon.value(7), Err(BeaconError::Parse { .. })));
    }
}
