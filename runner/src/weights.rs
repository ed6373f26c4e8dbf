//! The weights identity of the s1-pro-speed track (content/s1-pro-speed.md): an entry's
//! weight files are byte-identical to the campaign's pinned files, or the quantisation
//! recipe its manifest declares, re-run here by the evaluator in the engines' sandbox (no
//! network, the pinned files read-only, one writable output directory), gives files
//! byte-identical to the ones it declares. Either way a mismatch names the file and both
//! digests ([`receipts::rules::weights::compare`], the one comparison the verifier uses
//! too).

use std::path::{Path, PathBuf};

use engines::sandbox::{Sandbox, SandboxError, SandboxSpec};
use receipts::bundle::file_sha256;
use receipts::fsutil::IoError;
use receipts::model::WeightFile;
use receipts::rules::weights::{WeightsMismatch, compare};

/// The environment variable naming the recipe's input directory (the pinned files,
/// read-only).
pub const RECIPE_IN_ENV: &str = "REFEREE_RECIPE_IN";
/// The environment variable naming the directory the recipe writes its files to.
pub const RECIPE_OUT_ENV: &str = "REFEREE_RECIPE_OUT";

/// Why the weights are not the pinned or reproduced ones, or could not be checked.
#[derive(Debug, thiserror::Error)]
pub enum WeightsError {
    /// The files differ from the expected ones: the message names the file and both
    /// digests.
    #[error("weights: {0}")]
    Mismatch(#[from] Box<WeightsMismatch>),
    /// A weights directory holds something that is not a plain file or directory.
    #[error("`{path}` is not a plain file (weights are plain files, no links)")]
    NotAFile {
        /// The path.
        path: PathBuf,
    },
    /// The recipe exited unsuccessfully.
    #[error("the quantisation recipe exited with {status}: {stderr}")]
    RecipeFailed {
        /// Its exit status, in words.
        status: String,
        /// The end of its stderr, escaped.
        stderr: String,
    },
    /// The sandbox refused the launch.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// A file could not be read or the scratch directory made.
    #[error(transparent)]
    Io(#[from] IoError),
}

/// Every plain file under `dir` with its sha256, named relative to `dir` with `/`,
/// sorted by name.
///
/// Errors: [`WeightsError::NotAFile`] for a symlink or special file,
/// [`WeightsError::Io`] for what cannot be read.
pub fn hash_dir(dir: &Path) -> Result<Vec<WeightFile>, WeightsError> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        let entries = std::fs::read_dir(&current).map_err(IoError::at("listing", &current))?;
        for entry in entries {
            let entry = entry.map_err(IoError::at("listing", &current))?;
            let path = entry.path();
            let kind = entry
                .file_type()
                .map_err(IoError::at("reading the type of", &path))?;
            if kind.is_dir() {
                pending.push(path);
            } else if kind.is_file() {
                let sha256 = file_sha256(&path).map_err(IoError::at("hashing", &path))?;
                let name = path
                    .strip_prefix(dir)
                    .unwrap_or(&path)
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/");
                files.push(WeightFile { name, sha256 });
            } else {
                return Err(WeightsError::NotAFile { path });
            }
        }
    }
    files.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(files)
}

/// The files of `pinned`, by name, as found under `dir` (an entry's tree, whose other
/// files are not weights), each with the sha256 of its bytes; a name `dir` lacks is left
/// out, so [`compare`] names it missing.
///
/// Errors: [`WeightsError::NotAFile`] for a link or special file at a pinned name,
/// [`WeightsError::Io`] for one that cannot be read.
pub fn hash_named(dir: &Path, pinned: &[WeightFile]) -> Result<Vec<WeightFile>, WeightsError> {
    let mut files = Vec::new();
    for want in pinned {
        let path = dir.join(&want.name);
        match std::fs::symlink_metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(IoError::at("reading", &path)(e).into()),
            Ok(meta) if !meta.is_file() => return Err(WeightsError::NotAFile { path }),
            Ok(_) => {}
        }
        let sha256 = file_sha256(&path).map_err(IoError::at("hashing", &path))?;
        files.push(WeightFile {
            name: want.name.clone(),
            sha256,
        });
    }
    Ok(files)
}

/// The files of `dir` when they are exactly the `pinned` ones (same names, same bytes).
///
/// Errors: [`WeightsError::Mismatch`] naming the first file that differs and both
/// digests; as [`hash_dir`].
pub fn check_pinned(dir: &Path, pinned: &[WeightFile]) -> Result<Vec<WeightFile>, WeightsError> {
    let found = hash_dir(dir)?;
    compare(pinned, &found)?;
    Ok(found)
}

/// Re-runs a declared quantisation recipe: `sh -c command` in `sandbox` (bubblewrap: no
/// network, the system read-only), in the pinned directory `pinned_dir` (read-only, also
/// named by [`RECIPE_IN_ENV`]), writing into a fresh directory named by
/// [`RECIPE_OUT_ENV`]; then the files it wrote against the `declared` ones. Returns what
/// it wrote when byte-identical.
///
/// Errors: [`WeightsError::RecipeFailed`] when it exits unsuccessfully,
/// [`WeightsError::Mismatch`] naming the first file that differs and both digests,
/// [`WeightsError::Sandbox`] or [`WeightsError::Io`] when it cannot run.
pub fn rerun_recipe(
    sandbox: &Sandbox,
    pinned_dir: &Path,
    command: &str,
    declared: &[WeightFile],
) -> Result<Vec<WeightFile>, WeightsError> {
    let scratch = std::env::temp_dir();
    let out = tempfile::Builder::new()
        .prefix("referee-recipe-")
        .tempdir_in(&scratch)
        .map_err(IoError::at(
            "creating the recipe's output directory in",
            &scratch,
        ))?;
    if let Some(user) = sandbox.user() {
        // The recipe runs as the engine uid: its output directory is its own.
        std::os::unix::fs::chown(out.path(), Some(user.uid), Some(user.gid)).map_err(
            IoError::at("handing the recipe its output directory", out.path()),
        )?;
    }
    let spec = SandboxSpec {
        tree: pinned_dir.to_path_buf(),
        rw_dir: Some(out.path().to_path_buf()),
        ..SandboxSpec::default()
    };
    let argv = ["sh", "-c", command].map(str::to_owned);
    let mut launch = sandbox.command(&spec, &argv)?;
    launch
        .command
        .env(RECIPE_IN_ENV, pinned_dir)
        .env(RECIPE_OUT_ENV, out.path());
    let output = launch.output().map_err(IoError::at(
        "running the quantisation recipe in",
        pinned_dir,
    ))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        // Its last 1,024 characters.
        let start = stderr.char_indices().rev().nth(1023).map_or(0, |(i, _)| i);
        let tail = &stderr[start..];
        return Err(WeightsError::RecipeFailed {
            status: output.status.to_string(),
            stderr: receipts::text::escape_untrusted(tail.trim()).into_owned(),
        });
    }
    let written = hash_dir(out.path())?;
    compare(declared, &written)?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use receipts::model::Sha256Hex;

    fn pinned() -> (tempfile::TempDir, Vec<WeightFile>) {
        let dir = tempfile::tempdir().unwrap();
        // Readable by the engine uid the recipe runs as.
        std::fs::set_permissions(
            dir.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        std::fs::write(dir.path().join("model.bin"), b"pinned weights").unwrap();
        let files = vec![WeightFile {
            name: "model.bin".into(),
            sha256: Sha256Hex::digest(b"pinned weights"),
        }];
        (dir, files)
    }

    fn sandbox() -> Sandbox {
        // bubblewrap where it runs (as CI does); else the recipe runs unsandboxed, which
        // tests the same comparison.
        Sandbox::probe(engines::sandbox::SandboxKind::Bwrap, 990_001)
            .unwrap_or_else(|_| Sandbox::unsandboxed(engines::sandbox::SandboxKind::Trusted))
    }

    /// What `cut -c1-6 | tr a-z A-Z` makes of the pinned file: `PINNED`.
    fn quantised() -> Vec<WeightFile> {
        vec![WeightFile {
            name: "q/model.q8".into(),
            sha256: Sha256Hex::digest(b"PINNED\n"),
        }]
    }

    const REPRODUCIBLE: &str = "mkdir \"$REFEREE_RECIPE_OUT/q\" && \
         head -c 6 \"$REFEREE_RECIPE_IN/model.bin\" | tr a-z A-Z > \"$REFEREE_RECIPE_OUT/q/model.q8\" && \
         echo >> \"$REFEREE_RECIPE_OUT/q/model.q8\"";

    #[test]
    fn pinned_files_pass_and_one_changed_byte_names_the_file_and_both_digests() {
        let (dir, files) = pinned();
        assert_eq!(check_pinned(dir.path(), &files).unwrap(), files);
        std::fs::write(dir.path().join("model.bin"), b"pinned weightz").unwrap();
        let error = check_pinned(dir.path(), &files).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "weights: `model.bin` has sha256 {}, expected {}",
                Sha256Hex::digest(b"pinned weightz"),
                Sha256Hex::digest(b"pinned weights")
            )
        );
    }

    #[test]
    fn a_recipe_that_reproduces_its_files_byte_for_byte_passes() {
        let (dir, _) = pinned();
        let written = rerun_recipe(&sandbox(), dir.path(), REPRODUCIBLE, &quantised()).unwrap();
        assert_eq!(written, quantised());
    }

    #[test]
    fn a_recipe_that_does_not_reproduce_its_files_names_the_file_and_both_digests() {
        let (dir, _) = pinned();
        // Writes the process id into the file: different bytes on every run.
        let unstable =
            "mkdir \"$REFEREE_RECIPE_OUT/q\" && echo $$ > \"$REFEREE_RECIPE_OUT/q/model.q8\"";
        match rerun_recipe(&sandbox(), dir.path(), unstable, &quantised()) {
            Err(WeightsError::Mismatch(mismatch)) => match *mismatch {
                WeightsMismatch::Digest {
                    name,
                    expected,
                    got,
                } => {
                    assert_eq!(name, "q/model.q8");
                    assert_eq!(expected, quantised()[0].sha256);
                    assert_ne!(got, expected);
                }
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
        // A recipe that fails says so, with its stderr.
        let failing = "echo no tool here >&2; exit 3";
        match rerun_recipe(&sandbox(), dir.path(), failing, &quantised()) {
            Err(WeightsError::RecipeFailed { stderr, .. }) => assert_eq!(stderr, "no tool here"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_recipe_has_no_network() {
        let (dir, _) = pinned();
        if sandbox().kind() != engines::sandbox::SandboxKind::Bwrap {
            return; // nothing to check without bubblewrap
        }
        // The network namespace's interfaces but loopback: none inside (the host has some).
        let probe = "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | grep -v '^lo$' > \"$REFEREE_RECIPE_OUT/ifaces\"; true";
        let written = rerun_recipe(&sandbox(), dir.path(), probe, &[]);
        match written {
            Err(WeightsError::Mismatch(mismatch)) => match *mismatch {
                WeightsMismatch::Unexpected { name, got } => {
                    assert_eq!((name.as_str(), got), ("ifaces", Sha256Hex::digest(b"")));
                }
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
    }
}
