//! The raw files a round's predicate names (content/verifying.md, Bound to the files):
//! every path it names — probe logs, correctness files, engine and step logs, input
//! copies, the round-opened statement — must be a subject of the envelope
//! (`files.named`), so the file the verifier recomputes from is the file that was
//! signed. The raw files are read here too, strictly and within a size limit.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};

use crate::{CheckName, FailureReason, VerifyReport};
use receipts::bundle;
use receipts::canonical::from_slice_strict;
use receipts::fsutil::{open_regular, read_limited};
use receipts::model::{EntryMeasurement, RoundRecord, Sha256Hex};
use receipts::rules::redaction::{WITHHELD_PREFIX, withheld_bytes};
use receipts::statement::{PredicateText, Statement};

/// Largest raw JSON file (probe log, correctness file) read, bytes: a probe log holds a
/// few KiB of histograms per probe, far below this; a per-item correctness file with
/// both sides' top-k stays below it at any campaign's size
/// (`receipts::model::MAX_CORRECTNESS_POSITIONS`).
pub(crate) const MAX_ARTIFACT_BYTES: usize = 64 << 20;

/// Every `(predicate field, path)` the round `record` names.
fn named_paths(record: &RoundRecord) -> Vec<(String, String)> {
    let mut paths = vec![("roundOpened".to_owned(), record.round_opened.clone())];
    for (i, step) in record.steps.iter().enumerate() {
        if let Some(log) = &step.log {
            paths.push((format!("steps[{i}].log"), log.clone()));
        }
    }
    for entry in &record.entries {
        let at = format!("entries[{}]", entry.index);
        if let Some(log) = &entry.engine_log {
            paths.push((format!("{at}.engineLog"), log.clone()));
        }
        for (r, run) in entry.runs.iter().enumerate() {
            paths.push((format!("{at}.runs[{r}].probeLog"), run.probe_log.clone()));
        }
        for (j, pass) in entry.passes.iter().enumerate() {
            if let Some(log) = &pass.probe_log {
                paths.push((format!("{at}.passes[{j}].probeLog"), log.clone()));
            }
            if let Some(log) = &pass.engine_log {
                paths.push((format!("{at}.passes[{j}].engineLog"), log.clone()));
            }
            if let Some(telemetry) = &pass.telemetry {
                paths.push((
                    format!("{at}.passes[{j}].telemetry.file"),
                    telemetry.file.clone(),
                ));
            }
        }
        if let Some(correctness) = &entry.correctness {
            paths.push((
                format!("{at}.correctness.itemsFile"),
                correctness.items_file.clone(),
            ));
            if let Some(sample) = &correctness.load_sample_file {
                paths.push((format!("{at}.correctness.loadSampleFile"), sample.clone()));
            }
        }
    }
    if let Some(drift) = &record.drift {
        for (r, run) in drift.runs.iter().enumerate() {
            paths.push((format!("drift.runs[{r}].probeLog"), run.probe_log.clone()));
        }
    }
    // Inputs with a sha256 are bundle files; the baseline's git commit is not a file.
    for (i, input) in record.inputs.iter().enumerate() {
        if input.digest.contains_key("sha256") {
            paths.push((format!("inputs[{i}]"), input.name.clone()));
        }
    }
    paths
}

/// `files.named`: one check per path the predicate names, passed when a subject of
/// `statement` has that name (and, for an input, the digest the predicate records).
pub(crate) fn check_named(
    report: &mut VerifyReport,
    statement: &Statement<PredicateText>,
    record: &RoundRecord,
) {
    let mut seen = std::collections::BTreeSet::new();
    for (field, file) in named_paths(record) {
        if !seen.insert((field.clone(), file.clone())) {
            continue;
        }
        let subject = statement.subject.iter().find(|s| s.name == file);
        let input_digest = field
            .starts_with("inputs[")
            .then(|| {
                record
                    .inputs
                    .iter()
                    .find(|i| i.name == file)
                    .and_then(|i| i.digest.get("sha256"))
            })
            .flatten();
        let result = match subject {
            None => Err(FailureReason::FileNotNamed {
                field,
                file: file.clone(),
            }),
            Some(s) => match input_digest {
                Some(recorded) if *recorded != s.digest.sha256.to_string() => {
                    Err(FailureReason::Recomputed {
                        file: "receipt.dsse.json".to_owned(),
                        field: format!("{field}.digest.sha256"),
                        claimed: recorded.clone(),
                        recomputed: s.digest.sha256.to_string(),
                    })
                }
                _ => Ok(()),
            },
        };
        report.record(CheckName::FilesNamed, Some(file), result);
    }
}

/// The bundle file `name` parsed strictly as `T`: a name that is not a safe bundle path,
/// a missing or oversized file, or JSON that does not fit is
/// [`FailureReason::ArtifactUnreadable`] naming the file. Public (as
/// [`crate::read_bundle_json`]) so a renderer of a verified bundle reads its probe logs
/// and correctness files exactly as the checks did.
pub fn read_json<T: DeserializeOwned>(dir: &Path, name: &str) -> Result<T, FailureReason> {
    let bytes = read_bytes(dir, name, MAX_ARTIFACT_BYTES)?;
    from_slice_strict(&bytes, MAX_ARTIFACT_BYTES).map_err(|e| unreadable(name, e.to_string()))
}

/// The bundle file `name` parsed as `T`, provided its bytes hash to `sha256`, the digest
/// the bundle's signed Statement records for it: they are then the very bytes the checks
/// read with [`read_json`] (strictly, within its size limit), so the strict pass is not
/// run again. Public (as [`crate::read_signed_bundle_json`]) for a renderer of a
/// verified bundle: it shows the signed bytes or an error, never a file changed since.
///
/// Errors: [`FailureReason::ArtifactUnreadable`] naming the file when its name is not a
/// safe bundle path, it is missing or over [`read_json`]'s limit, its sha256 is not
/// `sha256`, or its JSON does not fit `T`.
pub fn read_signed_json<T: DeserializeOwned>(
    dir: &Path,
    name: &str,
    sha256: &Sha256Hex,
) -> Result<T, FailureReason> {
    let bytes = read_signed_bytes(dir, name, sha256, MAX_ARTIFACT_BYTES)?;
    serde_json::from_slice(&bytes).map_err(|e| unreadable(name, e.to_string()))
}

/// The bytes of the bundle file `name`, at most `limit` of them, provided they hash to
/// `sha256`, the digest the bundle's signed Statement records for it. Public (as
/// [`crate::read_signed_bundle_bytes`]) for a renderer of a verified bundle (a patch it
/// shows): the signed bytes or an error, never a file changed since.
///
/// Errors: [`FailureReason::ArtifactUnreadable`] naming the file when its name is not a
/// safe bundle path, it is missing or over `limit` bytes, or its sha256 is not `sha256`.
pub fn read_signed_bytes(
    dir: &Path,
    name: &str,
    sha256: &Sha256Hex,
    limit: usize,
) -> Result<Vec<u8>, FailureReason> {
    let bytes = read_bytes(dir, name, limit)?;
    check_signed(name, &Sha256Hex::digest(&bytes), sha256)?;
    Ok(bytes)
}

/// The last `keep` bytes (all of them when fewer) of the bundle file `name`, however
/// large: a log's tail. Public (as [`crate::read_bundle_tail`]) for a renderer.
///
/// Errors: [`FailureReason::ArtifactUnreadable`] naming the file when its name is not a
/// safe bundle path or it is missing or not a regular file.
pub fn read_tail(dir: &Path, name: &str, keep: u64) -> Result<Vec<u8>, FailureReason> {
    let fail = |e: std::io::Error| unreadable(name, e.to_string());
    let (mut file, length) = open_artifact(dir, name)?;
    file.seek(SeekFrom::Start(length.saturating_sub(keep)))
        .map_err(fail)?;
    let mut bytes = Vec::new();
    file.take(keep).read_to_end(&mut bytes).map_err(fail)?;
    if length == bytes.len() as u64 {
        not_withheld(name, &bytes)?;
    }
    Ok(bytes)
}

/// [`read_tail`] of a file whose whole bytes must hash to `sha256`, the digest the
/// bundle's signed Statement records for it: the file is streamed through sha256 (an
/// engine log has no size limit a renderer could rely on) and its tail kept. Public (as
/// [`crate::read_signed_bundle_tail`]) for a renderer of a verified bundle.
///
/// Errors: those of [`read_tail`], and [`FailureReason::ArtifactUnreadable`] when the
/// sha256 is not `sha256`.
pub fn read_signed_tail(
    dir: &Path,
    name: &str,
    sha256: &Sha256Hex,
    keep: u64,
) -> Result<Vec<u8>, FailureReason> {
    let (mut file, _) = open_artifact(dir, name)?;
    let keep = usize::try_from(keep).unwrap_or(usize::MAX);
    let mut hasher = Sha256::new();
    let mut tail: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        let n = match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(unreadable(name, e.to_string())),
        };
        hasher.update(&chunk[..n]);
        tail.extend_from_slice(&chunk[..n]);
        // Trimmed only once twice `keep` is held, so the bytes moved stay linear.
        if tail.len() > keep.saturating_mul(2) {
            tail.drain(..tail.len() - keep);
        }
    }
    check_signed(
        name,
        &Sha256Hex::from_bytes(hasher.finalize().into()),
        sha256,
    )?;
    if tail.len() > keep {
        tail.drain(..tail.len() - keep);
    }
    Ok(tail)
}

/// `Ok` when the bundle file `name` hashed to `digest` is the signed `sha256`.
fn check_signed(name: &str, digest: &Sha256Hex, sha256: &Sha256Hex) -> Result<(), FailureReason> {
    if digest == sha256 {
        return Ok(());
    }
    Err(unreadable(
        name,
        format!(
            "its sha256 is {digest}, the signed Statement records {sha256}: it changed since \
             it was verified"
        ),
    ))
}

/// The bytes of the bundle file `name`, at most `limit` of them. Public (as
/// [`crate::read_bundle_bytes`]) for a renderer.
///
/// Errors: [`FailureReason::ArtifactUnreadable`] when `name` is not a safe bundle path or
/// the file is missing or over `limit`.
pub fn read_bytes(dir: &Path, name: &str, limit: usize) -> Result<Vec<u8>, FailureReason> {
    bundle::check_subject_name(name).map_err(|rule| unreadable(name, rule.to_owned()))?;
    let bytes =
        read_limited(&dir.join(name), limit).map_err(|e| unreadable(name, e.to_string()))?;
    not_withheld(name, &bytes)?;
    Ok(bytes)
}

/// [`FailureReason::Withheld`] when `bytes`, the whole of the bundle file `name`, are the
/// withheld line of [`receipts::rules::redaction`].
fn not_withheld(name: &str, bytes: &[u8]) -> Result<(), FailureReason> {
    match withheld_bytes(bytes) {
        Some(original) => Err(FailureReason::Withheld {
            file: name.to_owned(),
            bytes: original,
        }),
        None => Ok(()),
    }
}

/// Whether the bundle file `name` is withheld (its whole content the withheld line):
/// read only when it is no longer than that line can be.
pub(crate) fn is_withheld(dir: &Path, name: &str) -> bool {
    const LONGEST: usize = WITHHELD_PREFIX.len() + 20 + " bytes)\n".len();
    bundle::check_subject_name(name).is_ok()
        && read_limited(&dir.join(name), LONGEST).is_ok_and(|b| withheld_bytes(&b).is_some())
}

/// The length in bytes of the bundle file `name` (a regular file, never a symlink).
///
/// Errors: [`FailureReason::ArtifactUnreadable`] naming the file when its name is not a
/// safe bundle path or it is missing or not a regular file.
pub(crate) fn artifact_len(dir: &Path, name: &str) -> Result<u64, FailureReason> {
    open_artifact(dir, name).map(|(_, length)| length)
}

/// The bundle file `name` opened as a regular file (never through a symlink), with its
/// length in bytes.
fn open_artifact(dir: &Path, name: &str) -> Result<(std::fs::File, u64), FailureReason> {
    bundle::check_subject_name(name).map_err(|rule| unreadable(name, rule.to_owned()))?;
    open_regular(&dir.join(name)).map_err(|e| unreadable(name, e.to_string()))
}

/// [`FailureReason::ArtifactUnreadable`] of the bundle file `name`.
pub(crate) fn unreadable(name: &str, message: String) -> FailureReason {
    FailureReason::ArtifactUnreadable {
        file: name.to_owned(),
        message,
    }
}

/// The probe logs of one bundle, each read and parsed ([`read_json`]) once however many
/// checks read it: `paired` reads the baseline's (its runs without token ids), then
/// `measurements` every one. Held for the round checks of one bundle.
pub(crate) struct ProbeLogs<'d> {
    /// The bundle's directory.
    dir: &'d Path,
    /// Each log read so far, by bundle-relative name, or why it could not be read.
    parsed: BTreeMap<String, Result<EntryMeasurement, FailureReason>>,
}

impl<'d> ProbeLogs<'d> {
    /// No log read yet, of the bundle in `dir`.
    pub(crate) fn new(dir: &'d Path) -> Self {
        Self {
            dir,
            parsed: BTreeMap::new(),
        }
    }

    /// The probe log `file`, read on its first call: the same value or failure as
    /// [`read_json`] gives for it.
    pub(crate) fn get(&mut self, file: &str) -> Result<&EntryMeasurement, FailureReason> {
        let dir = self.dir;
        self.parsed
            .entry(file.to_owned())
            .or_insert_with(|| read_json(dir, file))
            .as_ref()
            .map_err(FailureReason::clone)
    }
}

/// A recomputed value differing from the claimed one in `file`'s `field`, both rendered.
pub(crate) fn recomputed(
    file: &str,
    field: impl Into<String>,
    claimed: impl std::fmt::Display,
    recomputed: impl std::fmt::Display,
) -> FailureReason {
    FailureReason::Recomputed {
        file: file.to_owned(),
        field: field.into(),
        claimed: claimed.to_string(),
        recomputed: recomputed.to_string(),
    }
}

/// An optional value rendered for a failure message: the value, or `none`.
pub(crate) fn show<T: std::fmt::Display>(value: Option<T>) -> String {
    value.map_or_else(|| "none".to_owned(), |v| v.to_string())
}

/// `Ok` when `claimed == recomputed`, else [`recomputed`] with both rendered by `show`.
pub(crate) fn same<T: PartialEq + std::fmt::Debug>(
    file: &str,
    field: &str,
    claimed: T,
    recomputed_value: T,
) -> Result<(), FailureReason> {
    if claimed == recomputed_value {
        Ok(())
    } else {
        Err(recomputed(
            file,
            field,
            Rendered(&claimed),
            Rendered(&recomputed_value),
        ))
    }
}

/// Renders a value for a message: `Some(5)` as `5`, `None` as `none`, enums in their
/// Debug form otherwise.
struct Rendered<'a, T>(&'a T);

impl<T: std::fmt::Debug> std::fmt::Display for Rendered<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = format!("{:?}", self.0);
        let text = match text.strip_prefix("Some(") {
            Some(inner) => inner.strip_suffix(')').unwrap_or(inner).to_owned(),
            None if text == "None" => "none".to_owned(),
            None => text,
        };
        f.write_str(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log longer than the read chunk and than twice the tail: the tail kept is exactly
    /// its last bytes, the whole file when shorter, and a changed byte anywhere (here the
    /// first, outside the tail) refuses it.
    #[test]
    fn the_signed_tail_is_the_files_last_bytes_and_covers_all_of_it() {
        let dir = tempfile::tempdir().unwrap();
        let bytes: Vec<u8> = (0..200_003u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(dir.path().join("engine.log"), &bytes).unwrap();
        let sha256 = Sha256Hex::digest(&bytes);
        for keep in [0, 1, 70_000, 131_072, 200_003, 1 << 20] {
            let tail = read_signed_tail(dir.path(), "engine.log", &sha256, keep).unwrap();
            let from = bytes.len().saturating_sub(keep as usize);
            assert_eq!(tail, bytes[from..], "keep {keep}");
            assert_eq!(
                read_tail(dir.path(), "engine.log", keep).unwrap(),
                bytes[from..]
            );
        }
        let mut changed = bytes.clone();
        changed[0] ^= 1;
        std::fs::write(dir.path().join("engine.log"), &changed).unwrap();
        let error = read_signed_tail(dir.path(), "engine.log", &sha256, 10).unwrap_err();
        assert_eq!(
            error.to_string(),
            unreadable(
                "engine.log",
                format!(
                    "its sha256 is {}, the signed Statement records {sha256}: it changed \
                     since it was verified",
                    Sha256Hex::digest(&changed)
                )
            )
            .to_string()
        );
        assert!(read_signed_tail(dir.path(), "../engine.log", &sha256, 10).is_err());
    }
}
