//! The raw files a round's predicate names (content/verifying.md, Bound to the files):
//! every path it names — probe logs, correctness files, engine and step logs, input
//! copies, the round-opened statement — must be a subject of the envelope
//! (`files.named`), so the file the verifier recomputes from is the file that was
//! signed. The raw files are read here too, strictly and within a size limit.

use std::collections::BTreeMap;
use std::path::Path;

use serde::de::DeserializeOwned;

use receipts::bundle;
use receipts::canonical::from_slice_strict;
use receipts::fsutil::read_limited;
use receipts::model::{EntryMeasurement, RoundRecord, Sha256Hex};
use receipts::statement::{PredicateText, Statement};
use receipts::verify::{CheckName, FailureReason, VerifyReport};

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
    let bytes = read_artifact(dir, name)?;
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
    let bytes = read_artifact(dir, name)?;
    let digest = Sha256Hex::digest(&bytes);
    if digest != *sha256 {
        return Err(unreadable(
            name,
            format!(
                "its sha256 is {digest}, the signed Statement records {sha256}: it changed \
                 since it was verified"
            ),
        ));
    }
    serde_json::from_slice(&bytes).map_err(|e| unreadable(name, e.to_string()))
}

/// The bytes of the bundle file `name`, at most [`MAX_ARTIFACT_BYTES`].
///
/// Errors: [`FailureReason::ArtifactUnreadable`] when `name` is not a safe bundle path or
/// the file is missing or over the limit.
fn read_artifact(dir: &Path, name: &str) -> Result<Vec<u8>, FailureReason> {
    bundle::check_subject_name(name).map_err(|rule| unreadable(name, rule.to_owned()))?;
    read_limited(&dir.join(name), MAX_ARTIFACT_BYTES).map_err(|e| unreadable(name, e.to_string()))
}

/// [`FailureReason::ArtifactUnreadable`] of the bundle file `name`.
fn unreadable(name: &str, message: String) -> FailureReason {
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
