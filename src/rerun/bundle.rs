//! The signed rerun bundle: `original.statement.json` (the original round's Statement
//! bytes), the re-run's own artifacts as its round bundle named them (`logs/`, `probes/`,
//! `correctness/`) and its round record (`rerun.round.json`), sealed with the
//! [`RerunRecord`](receipts::model::RerunRecord) as predicate by the same
//! `receipts::bundle::seal_bundle` a round is sealed with. It is built in a hidden
//! `.<name>.work/` beside its directory and renamed into place once sealed, so it appears
//! whole or not at all.

use std::fs;
use std::path::{Path, PathBuf};

use receipts::bundle::{SealedBundle, seal_bundle};
use receipts::fsutil::{IoError, sync_dir, write_atomic};
use receipts::keys::PrivateKey;
use receipts::model::{ORIGINAL_STATEMENT_FILE, RERUN_PREDICATE_TYPE, RERUN_ROUND_FILE};

use super::{Rerun, RerunError};

/// The directories of a round bundle that hold the re-run's artifacts.
const ARTIFACT_DIRS: [&str; 3] = ["logs", "probes", "correctness"];

/// Where a rerun bundle of `bundle` goes by default: for a round of a data directory
/// (`<data>/<campaign>/rounds/<n>`), `<data>/<campaign>/reruns/<n>` — never inside
/// `rounds/`, whose bundles form the campaign's chain; otherwise `<bundle>.rerun` beside
/// it.
pub fn default_out(bundle: &Path) -> PathBuf {
    let name = bundle
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "round".to_owned());
    match bundle.parent() {
        Some(rounds) if rounds.file_name().is_some_and(|n| n == "rounds") => rounds
            .parent()
            .unwrap_or(Path::new("."))
            .join("reruns")
            .join(name),
        Some(parent) => parent.join(format!("{name}.rerun")),
        None => PathBuf::from(format!("{name}.rerun")),
    }
}

/// Seals `rerun` into a rerun bundle at `out`, signed by `key`.
///
/// Errors: [`RerunError::OutExists`] when `out` exists; [`RerunError::Io`] for a file
/// that cannot be copied or written; [`RerunError::Seal`] when sealing fails.
pub fn write_bundle(
    rerun: &Rerun,
    out: &Path,
    key: &PrivateKey,
) -> Result<SealedBundle, RerunError> {
    if fs::symlink_metadata(out).is_ok() {
        return Err(RerunError::OutExists {
            path: out.to_path_buf(),
        });
    }
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(parent).map_err(IoError::at("creating", parent))?;
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "rerun".to_owned());
    let work = parent.join(format!(".{name}.work"));
    match fs::remove_dir_all(&work) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(IoError::at("removing", &work)(e).into()),
    }
    fs::create_dir_all(&work).map_err(IoError::at("creating", &work))?;
    let original = work.join(ORIGINAL_STATEMENT_FILE);
    write_atomic(&original, &rerun.original_statement, 0o644)
        .map_err(IoError::at("writing", &original))?;
    if let Some((bundle, record)) = &rerun.rerun_bundle {
        for dir in ARTIFACT_DIRS {
            copy_tree(&bundle.join(dir), &work.join(dir))?;
        }
        let path = work.join(RERUN_ROUND_FILE);
        let mut text = serde_json::to_vec_pretty(record).map_err(|e| {
            IoError::at("encoding", &path)(std::io::Error::new(std::io::ErrorKind::InvalidData, e))
        })?;
        text.push(b'\n');
        write_atomic(&path, &text, 0o644).map_err(IoError::at("writing", &path))?;
    }
    let predicate = serde_json::to_value(&rerun.record).map_err(|e| {
        IoError::at("encoding the predicate of", &work)(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            e,
        ))
    })?;
    let sealed =
        seal_bundle(&work, RERUN_PREDICATE_TYPE, &predicate, &[key]).map_err(|source| {
            RerunError::Seal {
                dir: out.to_path_buf(),
                source,
            }
        })?;
    fs::rename(&work, out).map_err(IoError::at("moving the sealed bundle to", out))?;
    sync_dir(parent).map_err(IoError::at("syncing", parent))?;
    Ok(SealedBundle {
        envelope_path: out.join(receipts::bundle::ENVELOPE_FILE),
        ..sealed
    })
}

/// Copies the directory `from` (when it exists) to `to`, regular files only.
///
/// Errors: [`RerunError::Io`] naming what failed.
fn copy_tree(from: &Path, to: &Path) -> Result<(), RerunError> {
    let entries = match fs::read_dir(from) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(IoError::at("listing", from)(e).into()),
    };
    fs::create_dir_all(to).map_err(IoError::at("creating", to))?;
    for entry in entries {
        let entry = entry.map_err(IoError::at("listing", from))?;
        let kind = entry
            .file_type()
            .map_err(IoError::at("reading", &entry.path()))?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            fs::copy(entry.path(), &target).map_err(IoError::at("copying", &target))?;
        }
    }
    Ok(())
}
