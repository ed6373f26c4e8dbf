//! The verdict cache: what the verifier said of each bundle that passed its own checks,
//! so a build verifies again only the bundles that changed (at 1,000 rounds verifying
//! every bundle took 52 s of a build that added one round).
//!
//! An entry's key ([`verdict_key`]) is the sha256 of the referee version (the verifier's
//! is the workspace's), the keyring's bytes, the instant the bundle is verified at and
//! the bundle's content digest ([`bundle_digest`]: every file of its directory, by
//! name, kind and bytes), so a changed file, an added or removed one, another keyring or
//! another `--at` misses and verifies again; a tampered bundle is caught whatever an
//! earlier build said. Only a bundle's own checks are cached (a report that passed them
//! all): the checks across rounds run on every build, on every bundle
//! ([`verifier::archive::check_archive_by`]). A failed verdict is not cached.
//!
//! The cache lives beside the manifest as [`VERDICTS_FILE`], one JSON object per line
//! after a header; a line that does not parse is a miss. `--clean` starts without it.

use std::collections::HashMap;
use std::io;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use receipts::fsutil::{IoError, read_limited};
use receipts::model::{Sha256Hex, Timestamp};
use receipts::verify::{Check, CheckName, VerifyReport};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::SiteError;

/// The verdict cache's file name in the output directory.
pub const VERDICTS_FILE: &str = ".referee-site-verdicts";

/// Its first line.
const HEADER: &str = "referee-site-verdicts 1";

/// Largest verdict cache read, bytes.
const MAX_VERDICTS_BYTES: usize = 1 << 30;

/// The key of a bundle's verdict: sha256 over length-prefixed parts — the referee
/// version, sha256 of the keyring's bytes, the instant it is verified at (RFC 3339) and
/// its [`bundle_digest`].
pub fn verdict_key(keyring_json: &[u8], at: Timestamp, bundle: &Sha256Hex) -> Sha256Hex {
    let mut h = Sha256::new();
    for part in [
        b"referee-site-verdict".as_slice(),
        env!("CARGO_PKG_VERSION").as_bytes(),
        Sha256Hex::digest(keyring_json).as_str().as_bytes(),
        at.to_string().as_bytes(),
        bundle.as_str().as_bytes(),
    ] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    Sha256Hex::from_bytes(h.finalize().into())
}

/// The content digest of the bundle directory `dir`: sha256 over every entry under it,
/// depth first in name order (symlinks not followed), each as its `/`-separated relative
/// name, its kind (`f` file, `d` directory, `l` symlink with its target, `o` other), and
/// for a file its length and bytes. Any change of a byte, a name or a kind changes it.
///
/// Errors: the I/O error of a directory or file that cannot be read.
pub fn bundle_digest(dir: &Path) -> io::Result<Sha256Hex> {
    fn walk(h: &mut Sha256, root: &Path, dir: &Path) -> io::Result<()> {
        let mut entries: Vec<std::fs::DirEntry> =
            std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for entry in entries {
            let path = entry.path();
            let name = path.strip_prefix(root).unwrap_or(&path);
            let name = name.to_string_lossy();
            let kind = entry.file_type()?;
            let mut part = |bytes: &[u8]| {
                h.update((bytes.len() as u64).to_le_bytes());
                h.update(bytes);
            };
            part(name.as_bytes());
            if kind.is_dir() {
                part(b"d");
                walk(h, root, &path)?;
            } else if kind.is_file() {
                part(b"f");
                part(&std::fs::read(&path)?);
            } else if kind.is_symlink() {
                part(b"l");
                part(std::fs::read_link(&path)?.to_string_lossy().as_bytes());
            } else {
                part(b"o");
            }
        }
        Ok(())
    }
    let mut h = Sha256::new();
    walk(&mut h, dir, dir)?;
    Ok(Sha256Hex::from_bytes(h.finalize().into()))
}

/// One cached verdict: a bundle's own checks, every one passed or not applicable.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Line {
    key: Sha256Hex,
    statement_digest: Option<Sha256Hex>,
    predicate_type: Option<String>,
    signed_by: Vec<String>,
    /// `(check, target, not applicable)`: passed when the third is `None`.
    checks: Vec<(CheckName, Option<String>, Option<String>)>,
}

/// The verdicts of a build: those read from the previous build's cache, and those this
/// build found, written back by [`Verdicts::to_bytes`] for the bundles it saw.
#[derive(Default)]
pub struct Verdicts {
    /// The previous build's lines, by key (parsed when looked up; a line looked up moves
    /// to `new` or is dropped, so no line is held twice).
    old: Mutex<HashMap<Sha256Hex, String>>,
    /// The lines of this build: hits and new verdicts, by key.
    new: Mutex<HashMap<Sha256Hex, String>>,
    /// Lookups answered from the cache.
    hits: AtomicUsize,
}

impl Verdicts {
    /// The cache of the output directory `out`; empty when there is none or it does not
    /// parse.
    ///
    /// Errors: [`SiteError::Io`] when it exists but cannot be read.
    pub fn load(out: &Path) -> Result<Self, SiteError> {
        let path = out.join(VERDICTS_FILE);
        let bytes = match read_limited(&path, MAX_VERDICTS_BYTES) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(source) => return Err(IoError::at("reading", &path)(source).into()),
        };
        let text = String::from_utf8_lossy(&bytes);
        let mut lines = text.lines();
        if lines.next() != Some(HEADER) {
            return Ok(Self::default());
        }
        let old = lines
            .filter_map(|line| {
                // The key leads each line: `{"key":"<64 hex>",…`.
                let key = line.get(8..72)?.parse().ok()?;
                Some((key, line.to_owned()))
            })
            .collect();
        Ok(Self {
            old: Mutex::new(old),
            ..Self::default()
        })
    }

    /// The cached report of the bundle `dir` under `key`, with `bundle` set to `dir`;
    /// `None` on a miss (or a line that does not parse). A hit is kept for
    /// [`Verdicts::to_bytes`].
    pub fn get(&self, key: &Sha256Hex, dir: &Path) -> Option<VerifyReport> {
        let taken = self.old.lock().ok()?.remove(key);
        let text = match taken {
            Some(text) => text,
            // Looked up before (two bundles with the same content and instant).
            None => self.new.lock().ok()?.get(key)?.clone(),
        };
        let line: Line = serde_json::from_str(&text).ok()?;
        if &line.key != key {
            return None;
        }
        let checks = line
            .checks
            .into_iter()
            .map(|(name, target, not_applicable)| {
                Some(Check {
                    name,
                    target,
                    passed: not_applicable.is_none(),
                    reason: None,
                    not_applicable: match not_applicable {
                        Some(version) => Some(intern(version)?),
                        None => None,
                    },
                })
            })
            .collect::<Option<Vec<Check>>>()?;
        let report = VerifyReport {
            bundle: dir.to_owned(),
            checks,
            statement_digest: line.statement_digest,
            predicate_type: line.predicate_type,
            signed_by: line.signed_by,
        };
        if !report.passed() {
            return None;
        }
        self.keep(key.clone(), text);
        self.hits.fetch_add(1, Ordering::Relaxed);
        Some(report)
    }

    /// Records `report` (a bundle's own checks) under `key` when it passed; a failed
    /// report is not cached.
    pub fn put(&self, key: Sha256Hex, report: &VerifyReport) {
        if !report.passed() {
            return;
        }
        let line = Line {
            key: key.clone(),
            statement_digest: report.statement_digest.clone(),
            predicate_type: report.predicate_type.clone(),
            signed_by: report.signed_by.clone(),
            checks: report
                .checks
                .iter()
                .map(|c| {
                    (
                        c.name,
                        c.target.clone(),
                        c.not_applicable.map(str::to_owned),
                    )
                })
                .collect(),
        };
        if let Ok(text) = serde_json::to_string(&line) {
            self.keep(key, text);
        }
    }

    /// How many lookups the cache answered.
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::Relaxed)
    }

    fn keep(&self, key: Sha256Hex, line: String) {
        if let Ok(mut new) = self.new.lock() {
            new.insert(key, line);
        }
    }

    /// The cache's bytes: the header, then this build's verdicts by key.
    pub fn to_bytes(&self) -> Vec<u8> {
        let new = self.new.lock().unwrap_or_else(|e| e.into_inner());
        let mut lines: Vec<(&Sha256Hex, &String)> = new.iter().collect();
        lines.sort_unstable_by_key(|(key, _)| *key);
        let mut out = String::with_capacity(
            HEADER.len() + 1 + lines.iter().map(|(_, l)| l.len() + 1).sum::<usize>(),
        );
        out.push_str(HEADER);
        out.push('\n');
        for (_, line) in lines {
            out.push_str(line);
            out.push('\n');
        }
        out.into_bytes()
    }
}

/// `version` as the `&'static str` a [`Check`] holds: the same value the verifier used
/// (a predicate version name, a reason like "no raw log-probabilities"), allocated once
/// per distinct value; `None` past 64 distinct values (a cache line no verifier wrote).
fn intern(version: String) -> Option<&'static str> {
    static SEEN: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let mut seen = SEEN.lock().ok()?;
    if let Some(found) = seen.iter().find(|s| **s == version) {
        return Some(found);
    }
    if seen.len() >= 64 {
        return None;
    }
    let leaked: &'static str = Box::leak(version.into_boxed_str());
    seen.push(leaked);
    Some(leaked)
}

#[cfg(test)]
mod tests {
    use super::*;
    use receipts::verify::CheckName;

    fn passed_report(dir: &Path) -> VerifyReport {
        let mut report = VerifyReport {
            bundle: dir.to_owned(),
            checks: Vec::new(),
            statement_digest: Some(Sha256Hex::digest(b"statement")),
            predicate_type: Some("https://referee.dev/predicates/round/v3".to_owned()),
            signed_by: vec!["k1".to_owned()],
        };
        report.pass(CheckName::EnvelopeParse, None);
        report.pass(CheckName::Subject, Some("probes/a.json".to_owned()));
        report.not_applicable(CheckName::HostSteal, None, "v1");
        report
    }

    #[test]
    fn a_passed_verdict_reads_back_and_a_failed_one_is_not_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("b");
        let report = passed_report(&dir);
        let key = Sha256Hex::digest(b"k");
        let cache = Verdicts::default();
        cache.put(key.clone(), &report);
        let mut failed = passed_report(&dir);
        failed.fail(
            CheckName::File,
            Some("x".to_owned()),
            receipts::verify::FailureReason::NotRun {
                blocked_by: CheckName::Subject,
            },
        );
        cache.put(Sha256Hex::digest(b"f"), &failed);
        std::fs::write(tmp.path().join(VERDICTS_FILE), cache.to_bytes()).unwrap();

        let read = Verdicts::load(tmp.path()).unwrap();
        assert_eq!(read.old.lock().unwrap().len(), 1);
        assert_eq!(read.get(&key, &dir), Some(report));
        assert_eq!(read.get(&Sha256Hex::digest(b"f"), &dir), None);
        assert_eq!(read.get(&Sha256Hex::digest(b"other"), &dir), None);
        // Only what this build looked up (or found) is written back.
        assert_eq!(read.to_bytes(), cache.to_bytes());
        assert_eq!(
            Verdicts::default().to_bytes(),
            format!("{HEADER}\n").into_bytes()
        );

        std::fs::write(tmp.path().join(VERDICTS_FILE), "referee-site-verdicts 0\n").unwrap();
        assert!(
            Verdicts::load(tmp.path())
                .unwrap()
                .old
                .lock()
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_hit_moves_its_line_and_a_second_lookup_still_hits() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("b");
        let report = passed_report(&dir);
        let (key, other) = (Sha256Hex::digest(b"k"), Sha256Hex::digest(b"o"));
        let cache = Verdicts::default();
        cache.put(key.clone(), &report);
        cache.put(other.clone(), &report);
        std::fs::write(tmp.path().join(VERDICTS_FILE), cache.to_bytes()).unwrap();

        let read = Verdicts::load(tmp.path()).unwrap();
        assert_eq!(read.get(&key, &dir), Some(report.clone()));
        // The line moved from the previous build's lines to this build's.
        assert_eq!(read.old.lock().unwrap().len(), 1);
        assert_eq!(read.new.lock().unwrap().len(), 1);
        assert_eq!(read.get(&key, &dir), Some(report));
        assert_eq!(read.hits(), 2);
        // Only the line looked up is written back, after the header.
        let bytes = String::from_utf8(read.to_bytes()).unwrap();
        assert_eq!(bytes.lines().count(), 2);
        assert!(bytes.lines().nth(1).unwrap().contains(key.as_str()));
    }

    #[test]
    fn the_key_changes_with_every_part() {
        let t: Timestamp = "2026-12-02T00:00:00Z".parse().unwrap();
        let u: Timestamp = "2026-12-02T00:00:01Z".parse().unwrap();
        let b = Sha256Hex::digest(b"bundle");
        let base = verdict_key(b"[]", t, &b);
        assert_ne!(base, verdict_key(b"[1]", t, &b));
        assert_ne!(base, verdict_key(b"[]", u, &b));
        assert_ne!(base, verdict_key(b"[]", t, &Sha256Hex::digest(b"other")));
        assert_eq!(base, verdict_key(b"[]", t, &b));
    }

    #[test]
    fn the_bundle_digest_sees_every_byte_name_and_kind() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::create_dir_all(dir.join("probes")).unwrap();
        std::fs::write(dir.join("receipt.dsse.json"), "{}").unwrap();
        std::fs::write(dir.join("probes/a.json"), "[1]").unwrap();
        let first = bundle_digest(dir).unwrap();
        assert_eq!(bundle_digest(dir).unwrap(), first);
        std::fs::write(dir.join("probes/a.json"), "[2]").unwrap();
        let second = bundle_digest(dir).unwrap();
        assert_ne!(second, first);
        std::fs::rename(dir.join("probes/a.json"), dir.join("probes/b.json")).unwrap();
        let third = bundle_digest(dir).unwrap();
        assert_ne!(third, second);
        std::fs::create_dir(dir.join("empty")).unwrap();
        assert_ne!(bundle_digest(dir).unwrap(), third);
        assert!(bundle_digest(&dir.join("missing")).is_err());
    }
}
