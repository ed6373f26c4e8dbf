//! The pod's weights cache (content/pods.md): weight files by their sha256 under one
//! directory of the node, kept across rounds. A file is downloaded from the campaign's
//! `weights_source` into the cache only if its bytes hash to the digest the campaign
//! pins (a mismatch leaves nothing behind), and an entry already cached is hashed again
//! before every use: a corrupted one is removed and downloaded anew.

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use receipts::fsutil::{IoError, write_atomic_with};
use receipts::model::Sha256Hex;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// One weight file the pod needs, as the agent's order lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WeightOrder {
    /// Its name in the model's weights directory.
    pub name: String,
    /// The sha256 the campaign pins.
    pub sha256: Sha256Hex,
    /// Where to download it: `file:///…` (`https://` is refused by this build).
    pub url: String,
}

/// How a weight file became ready.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fetched {
    /// Already in the cache, its digest checked again.
    Cached,
    /// Downloaded now: this many bytes.
    Downloaded(u64),
}

/// Why a weight file could not be made ready.
#[derive(Debug, thiserror::Error)]
pub enum WeightsError {
    /// A source this build cannot download from.
    #[error("weight `{name}`: cannot download `{url}`: only file:/// sources are supported yet")]
    Scheme {
        /// The weight's name.
        name: String,
        /// Its URL.
        url: String,
    },
    /// The downloaded bytes are not the pinned ones; nothing was cached.
    #[error("weight `{name}` from `{url}` has sha256 {actual}, the campaign pins {expected}")]
    Mismatch {
        /// The weight's name.
        name: String,
        /// Its URL.
        url: String,
        /// The pinned digest, hex.
        expected: String,
        /// The digest of what was downloaded, hex.
        actual: String,
    },
    /// Reading the source or writing the cache failed.
    #[error(transparent)]
    Io(#[from] IoError),
}

/// Makes `weight` ready in `cache` (created if missing) and returns its path there,
/// `<cache>/<sha256>`.
///
/// Errors: [`WeightsError`]; a mismatching download leaves the cache as it was.
pub fn fetch_into_cache(
    cache: &Path,
    weight: &WeightOrder,
) -> Result<(PathBuf, Fetched), WeightsError> {
    fs::create_dir_all(cache).map_err(IoError::at("creating", cache))?;
    let entry = cache.join(weight.sha256.as_str());
    if entry.exists() {
        let actual =
            receipts::bundle::file_sha256(&entry).map_err(IoError::at("reading", &entry))?;
        if actual == weight.sha256 {
            return Ok((entry, Fetched::Cached));
        }
        // A corrupted entry: never used, downloaded again below.
        fs::remove_file(&entry).map_err(IoError::at("removing", &entry))?;
    }
    let Some(source) = weight.url.strip_prefix("file://").map(PathBuf::from) else {
        return Err(WeightsError::Scheme {
            name: weight.name.clone(),
            url: weight.url.clone(),
        });
    };
    let mut input = fs::File::open(&source).map_err(IoError::at("opening", &source))?;
    let mut copied = 0u64;
    let mut actual = None;
    let written = write_atomic_with(&entry, 0o644, &mut |file| {
        let mut hasher = Sha256::new();
        let mut buffer = vec![0u8; 1 << 20];
        loop {
            let n = match input.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            hasher.update(&buffer[..n]);
            file.write_all(&buffer[..n])?;
            copied += n as u64;
        }
        let digest = Sha256Hex::from_bytes(hasher.finalize().into());
        let matches = digest == weight.sha256;
        actual = Some(digest);
        if matches {
            Ok(())
        } else {
            // Refusing here drops the temp file: the cache never holds it.
            Err(io::Error::other("digest mismatch"))
        }
    });
    match (written, actual) {
        (Ok(()), _) => Ok((entry, Fetched::Downloaded(copied))),
        (Err(_), Some(actual)) if actual != weight.sha256 => Err(WeightsError::Mismatch {
            name: weight.name.clone(),
            url: weight.url.clone(),
            expected: weight.sha256.as_str().to_owned(),
            actual: actual.as_str().to_owned(),
        }),
        (Err(e), _) => Err(IoError::at("writing", &entry)(e).into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(source: &Path, bytes: &[u8]) -> WeightOrder {
        WeightOrder {
            name: "w.bin".into(),
            sha256: Sha256Hex::digest(bytes),
            url: format!("file://{}", source.display()),
        }
    }

    #[test]
    fn a_weight_is_downloaded_once_then_verified_from_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("w.bin");
        fs::write(&source, b"weights").unwrap();
        let cache = dir.path().join("cache");
        let weight = order(&source, b"weights");
        let (path, fetched) = fetch_into_cache(&cache, &weight).unwrap();
        assert_eq!(path, cache.join(weight.sha256.as_str()));
        assert_eq!(fetched, Fetched::Downloaded(7));
        assert_eq!(fs::read(&path).unwrap(), b"weights");
        assert_eq!(
            fetch_into_cache(&cache, &weight).unwrap().1,
            Fetched::Cached
        );
        // A corrupted entry is downloaded again, never used.
        fs::write(&path, b"rotten").unwrap();
        assert_eq!(
            fetch_into_cache(&cache, &weight).unwrap().1,
            Fetched::Downloaded(7)
        );
        assert_eq!(fs::read(&path).unwrap(), b"weights");
    }

    #[test]
    fn a_mismatching_download_leaves_the_cache_empty() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("w.bin");
        fs::write(&source, b"tampered").unwrap();
        let cache = dir.path().join("cache");
        let weight = order(&source, b"weights");
        match fetch_into_cache(&cache, &weight) {
            Err(WeightsError::Mismatch {
                expected, actual, ..
            }) => {
                assert_eq!(expected, Sha256Hex::digest(b"weights").as_str());
                assert_eq!(actual, Sha256Hex::digest(b"tampered").as_str());
            }
            other => panic!("expected a mismatch, got {other:?}"),
        }
        assert_eq!(fs::read_dir(&cache).unwrap().count(), 0);
        let https = WeightOrder {
            url: "https://example.org/w.bin".into(),
            ..weight
        };
        assert!(matches!(
            fetch_into_cache(&cache, &https),
            Err(WeightsError::Scheme { .. })
        ));
    }
}
