//! The demo of `examples/demo/` (issue 6): the built-in engine's baseline files, the
//! campaign and seven submissions, embedded in the binary so `referee demo` runs from any
//! directory. The baseline git repository is built from the embedded files with git2
//! under a fixed author, committer and time, so its commit id — pinned in the demo's
//! `campaign.toml` — is the same on every machine.

use std::fs;
use std::path::{Path, PathBuf};

use git2::{Oid, Repository, Signature, Time};
use receipts::fsutil::IoError;

/// The baseline engine config (`examples/demo/baseline/engine.toml`).
pub const BASELINE_ENGINE_TOML: &str = include_str!("../examples/demo/baseline/engine.toml");

/// The demo campaign (`examples/demo/campaign.toml`); `baseline.repo` is `baseline.git`
/// next to it.
pub const CAMPAIGN_TOML: &str = include_str!("../examples/demo/campaign.toml");

/// The demo campaign's id.
pub const CAMPAIGN_ID: &str = "demo";

/// Author and committer of the baseline commit.
const AUTHOR: (&str, &str) = ("referee demo", "demo@referee.invalid");

/// Time of the baseline commit: 2026-01-01T00:00:00Z, in seconds since the epoch.
const COMMIT_TIME_S: i64 = 1_767_225_600;

/// Message of the baseline commit.
const COMMIT_MESSAGE: &str = "demo baseline: the built-in engine's config\n";

/// One demo submission: a real diff against the baseline and what it should do.
#[derive(Clone, Copy, Debug)]
pub struct DemoSubmission {
    /// File name under `examples/demo/submissions/`.
    pub file: &'static str,
    /// The miner who commits it.
    pub miner: &'static str,
    /// What it does, in words.
    pub what: &'static str,
    /// The change to `engine.toml`.
    pub edit: DemoEdit,
}

/// How a demo submission changes the baseline's `engine.toml`.
#[derive(Clone, Copy, Debug)]
pub enum DemoEdit {
    /// Set key `.0` to `.1` ([`set_key`]).
    Set(&'static str, &'static str),
    /// Replace the comment line `.0` by `.1`: a change that does nothing (an A/B test of
    /// the noise floor).
    Comment(&'static str, &'static str),
    /// A fixed diff (the hostile `.git` hook, [`GIT_HOOK_DIFF`]).
    Fixed,
}

/// The demo's submissions, in commitment order.
pub const SUBMISSIONS: [DemoSubmission; 7] = [
    DemoSubmission {
        file: "faster-batching.diff",
        miner: "miner-fast",
        what: "batches 8 sequences instead of 1: clearly faster",
        edit: DemoEdit::Set("max_num_seqs", "8"),
    },
    DemoSubmission {
        file: "slower-chunks.diff",
        miner: "miner-slow",
        what: "prefills one token per step: clearly slower",
        edit: DemoEdit::Set("max_num_batched_tokens", "1"),
    },
    DemoSubmission {
        file: "int4-weights.diff",
        miner: "miner-int4",
        what: "int4 weights: fails the correctness gate",
        edit: DemoEdit::Set("weight_dtype", "\"int4\""),
    },
    DemoSubmission {
        file: "huge-kv-cache.diff",
        miner: "miner-oom",
        what: "a KV cache larger than the memory limit: dies at start",
        edit: DemoEdit::Set("kv_cache_budget_mb", "4096"),
    },
    DemoSubmission {
        file: "git-hook.diff",
        miner: "miner-hostile",
        what: "writes a .git hook: rejected at a gate",
        edit: DemoEdit::Fixed,
    },
    DemoSubmission {
        file: "faster-batching.diff",
        miner: "miner-copycat",
        what: "the same bytes as the first: a duplicate, skipped",
        edit: DemoEdit::Set("max_num_seqs", "8"),
    },
    DemoSubmission {
        file: "no-op.diff",
        miner: "miner-noop",
        what: "rewords a comment: changes nothing, so it must not take the seat",
        edit: DemoEdit::Comment(
            "# Seed the weights are drawn from: same seed, same model.",
            "# The seed the weights are drawn from: the same seed gives the same model.",
        ),
    },
];

/// The hostile submission's diff: a `.git` hook (`examples/demo/submissions/git-hook.diff`).
pub const GIT_HOOK_DIFF: &str = include_str!("../examples/demo/submissions/git-hook.diff");

impl DemoSubmission {
    /// The diff bytes: the config edit against [`BASELINE_ENGINE_TOML`] as `git diff`
    /// writes it (so the committed files under `examples/demo/submissions/` stay what
    /// the demo sends, see the test `demo_files_are_current`), or the fixed diff.
    ///
    /// Errors: [`DemoError::Git`].
    pub fn diff(&self) -> Result<String, DemoError> {
        match self.edit {
            DemoEdit::Set(key, value) => config_diff(
                BASELINE_ENGINE_TOML,
                &set_key(BASELINE_ENGINE_TOML, key, value),
            ),
            DemoEdit::Comment(old, new) => config_diff(
                BASELINE_ENGINE_TOML,
                &BASELINE_ENGINE_TOML.replacen(old, new, 1),
            ),
            DemoEdit::Fixed => Ok(GIT_HOOK_DIFF.to_owned()),
        }
    }
}

/// `text` with the line `key = …` replaced by `key = value`.
pub fn set_key(text: &str, key: &str, value: &str) -> String {
    let prefix = format!("{key} =");
    text.lines()
        .map(|line| {
            if line.starts_with(&prefix) {
                format!("{key} = {value}\n")
            } else {
                format!("{line}\n")
            }
        })
        .collect()
}

/// Errors building the demo's files.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// An I/O error on a named file.
    #[error(transparent)]
    Io(#[from] IoError),
    /// libgit2 failed building the baseline repository.
    #[error("building the demo baseline repository `{path}`: {message}")]
    Git {
        /// The repository.
        path: PathBuf,
        /// libgit2's message.
        message: String,
    },
}

/// Creates (or reuses) the bare baseline repository at `dest` and returns its commit:
/// one commit holding the demo's `engine.toml`, by a fixed author and committer at a
/// fixed time, so the id is the same on every machine.
///
/// Errors: [`DemoError::Git`].
pub fn write_baseline_repo(dest: &Path) -> Result<Oid, DemoError> {
    write_config_repo(dest, BASELINE_ENGINE_TOML)
}

/// [`write_baseline_repo`] with another `engine.toml` (tests build tiny campaigns this
/// way).
///
/// Errors: [`DemoError::Git`].
pub fn write_config_repo(dest: &Path, engine_toml: &str) -> Result<Oid, DemoError> {
    write_files_repo(dest, &[("engine.toml", engine_toml)])
}

/// [`write_baseline_repo`] with the top-level `files` (`(name, text)`, mode 0644).
///
/// Errors: [`DemoError::Git`].
fn write_files_repo(dest: &Path, files: &[(&str, &str)]) -> Result<Oid, DemoError> {
    let git = |e: git2::Error| DemoError::Git {
        path: dest.to_path_buf(),
        message: e.message().to_owned(),
    };
    let repo = match Repository::open_bare(dest) {
        Ok(repo) => repo,
        Err(_) => Repository::init_bare(dest).map_err(git)?,
    };
    let mut tree = repo.treebuilder(None).map_err(git)?;
    for (name, text) in files {
        let blob = repo.blob(text.as_bytes()).map_err(git)?;
        tree.insert(name, blob, 0o100_644).map_err(git)?;
    }
    let tree = repo.find_tree(tree.write().map_err(git)?).map_err(git)?;
    let signature =
        Signature::new(AUTHOR.0, AUTHOR.1, &Time::new(COMMIT_TIME_S, 0)).map_err(git)?;
    let commit = repo
        .commit(None, &signature, &signature, COMMIT_MESSAGE, &tree, &[])
        .map_err(git)?;
    repo.reference("refs/heads/main", commit, true, "demo baseline")
        .map_err(git)?;
    repo.set_head("refs/heads/main").map_err(git)?;
    Ok(commit)
}

/// A unified git diff of `engine.toml` from `old` to `new`, with the `index` line of
/// real blob ids (what a miner's `git diff` produces).
///
/// Errors: [`DemoError::Git`] (`path` is `engine.toml`).
pub fn config_diff(old: &str, new: &str) -> Result<String, DemoError> {
    let git = |e: git2::Error| DemoError::Git {
        path: PathBuf::from("engine.toml"),
        message: e.message().to_owned(),
    };
    let mut patch = git2::Patch::from_buffers(
        old.as_bytes(),
        Some(Path::new("engine.toml")),
        new.as_bytes(),
        Some(Path::new("engine.toml")),
        None,
    )
    .map_err(git)?;
    let buf = patch.to_buf().map_err(git)?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// `text` with `key = value` in its `[table]`: the table's `key = …` line replaced, or
/// the line added right under the table's header (the header appended when missing).
pub fn set_table_key(text: &str, table: &str, key: &str, value: &str) -> String {
    let header = format!("[{table}]");
    let prefix = format!("{key} =");
    let setting = format!("{key} = {value}");
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    match lines.iter().position(|line| line.trim() == header) {
        None => lines.extend([header, setting]),
        Some(start) => {
            let body = start + 1;
            let end = lines[body..]
                .iter()
                .position(|line| line.starts_with('['))
                .map_or(lines.len(), |i| body + i);
            match lines[body..end].iter().position(|l| l.starts_with(&prefix)) {
                Some(i) => lines[body + i] = setting,
                None => lines.insert(body, setting),
            }
        }
    }
    lines.join("\n") + "\n"
}

/// Writes the demo's source files into `dir` — `baseline.git` and `campaign.toml` (its
/// `baseline.commit` set to the commit just built, which equals the pinned one while
/// `demo_files_are_current` passes; with `send_lag_bound_us`, µs, its
/// `rate_search.send_lag_bound_us` set for a busy machine) — and returns the campaign
/// file's path, ready for `referee campaign add`.
///
/// Errors: [`DemoError`].
pub fn stage(dir: &Path, send_lag_bound_us: Option<u64>) -> Result<PathBuf, DemoError> {
    fs::create_dir_all(dir).map_err(IoError::at("creating", dir))?;
    let commit = write_baseline_repo(&dir.join("baseline.git"))?;
    let campaign = dir.join("campaign.toml");
    let mut text = set_key(CAMPAIGN_TOML, "commit", &format!("\"{commit}\""));
    if let Some(bound) = send_lag_bound_us {
        text = set_table_key(
            &text,
            "rate_search",
            "send_lag_bound_us",
            &bound.to_string(),
        );
    }
    receipts::fsutil::write_atomic(&campaign, text.as_bytes(), 0o644)
        .map_err(IoError::at("writing", &campaign))?;
    Ok(campaign)
}

/// Makes the staged demo campaign at `campaign_toml` a parallel one (`referee demo
/// --parallel`, content/noise.md, Parallel passes): `[parallel] gpus = 2` (placeholder GPUs on a host
/// without them) and `[isolation] pin = false`, so two engines and their clients share a
/// 2-core machine. Applied after [`stage`], so other layouts of the demo's machine compose
/// with it.
///
/// Errors: [`DemoError::Io`] reading or writing the file.
pub fn make_parallel(campaign_toml: &Path) -> Result<(), DemoError> {
    let text = fs::read_to_string(campaign_toml).map_err(IoError::at("reading", campaign_toml))?;
    let text = set_table_key(&text, "parallel", "gpus", "2");
    let text = set_table_key(&text, "isolation", "pin", "false");
    receipts::fsutil::write_atomic(campaign_toml, text.as_bytes(), 0o644)
        .map_err(IoError::at("writing", campaign_toml))?;
    Ok(())
}

/// The Docker demo (`examples/docker-demo/`, content/docker.md): a campaign with
/// `backend = "docker"` whose baseline tree has a `Dockerfile` `FROM` the base image
/// [`DOCKER_BASE_IMAGE`](docker::DOCKER_BASE_IMAGE) (the `referee` binary and its libraries, imported locally:
/// `engines::docker::build::rootfs_context`), and one submission that changes an engine
/// setting. Its whole round runs in `tests/docker_demo.rs`.
pub mod docker {
    use std::path::{Path, PathBuf};

    use super::{DemoError, IoError, config_diff, set_key, write_files_repo};

    /// The base image the baseline's `Dockerfile` is `FROM`.
    pub const DOCKER_BASE_IMAGE: &str = "referee-demo/base:1";

    /// The baseline's engine config (`examples/docker-demo/baseline/engine.toml`).
    pub const ENGINE_TOML: &str = include_str!("../examples/docker-demo/baseline/engine.toml");

    /// The baseline's `Dockerfile` (`examples/docker-demo/baseline/Dockerfile`).
    pub const DOCKERFILE: &str = include_str!("../examples/docker-demo/baseline/Dockerfile");

    /// The campaign (`examples/docker-demo/campaign.toml`); `baseline.repo` is
    /// `baseline.git` next to it.
    pub const CAMPAIGN_TOML: &str = include_str!("../examples/docker-demo/campaign.toml");

    /// The campaign's id.
    pub const CAMPAIGN_ID: &str = "demo-docker";

    /// The submission (`examples/docker-demo/submissions/faster-batching.diff`): batches
    /// 4 sequences instead of 1.
    pub const SUBMISSION_DIFF: &str =
        include_str!("../examples/docker-demo/submissions/faster-batching.diff");

    /// The setting the submission changes, and to what.
    pub const SUBMISSION_EDIT: (&str, &str) = ("max_num_seqs", "4");

    /// The submission's diff as `git diff` writes it from the baseline's config.
    ///
    /// Errors: [`DemoError::Git`].
    pub fn submission_diff() -> Result<String, DemoError> {
        let (key, value) = SUBMISSION_EDIT;
        config_diff(ENGINE_TOML, &set_key(ENGINE_TOML, key, value))
    }

    /// The baseline's files: `engine.toml` and `Dockerfile`.
    pub fn baseline_files() -> [(&'static str, &'static str); 2] {
        [("engine.toml", ENGINE_TOML), ("Dockerfile", DOCKERFILE)]
    }

    /// Writes `baseline.git` (one commit of [`baseline_files`], by the demo's fixed
    /// author at its fixed time) and `campaign.toml` (pinning that commit) into `dir`;
    /// returns the campaign file's path.
    ///
    /// Errors: [`DemoError`].
    pub fn stage(dir: &Path) -> Result<PathBuf, DemoError> {
        std::fs::create_dir_all(dir).map_err(IoError::at("creating", dir))?;
        let commit = write_files_repo(&dir.join("baseline.git"), &baseline_files())?;
        let campaign = dir.join("campaign.toml");
        let text = set_key(CAMPAIGN_TOML, "commit", &format!("\"{commit}\""));
        receipts::fsutil::write_atomic(&campaign, text.as_bytes(), 0o644)
            .map_err(IoError::at("writing", &campaign))?;
        Ok(campaign)
    }
}

/// The s1-pro-speed demo (`examples/s1-pro-speed/`, content/s1-pro-speed.md): a
/// `decide` campaign of track `s1-pro-speed` whose entries are the built-in engine served
/// as a decision sidecar, with a stand-in weight file pinned in the baseline tree, and
/// one submission that batches more sequences. Its round runs in `tests/s1_pro_speed.rs`.
pub mod s1_pro_speed {
    use std::path::{Path, PathBuf};

    use super::{BASELINE_ENGINE_TOML, DemoError, IoError, set_key, write_files_repo};

    /// The pinned stand-in weight file (`examples/s1-pro-speed/baseline/model.weights`).
    pub const WEIGHTS: &str = include_str!("../examples/s1-pro-speed/baseline/model.weights");

    /// The campaign (`examples/s1-pro-speed/campaign.toml`); `baseline.repo` is
    /// `baseline.git` next to it.
    pub const CAMPAIGN_TOML: &str = include_str!("../examples/s1-pro-speed/campaign.toml");

    /// The campaign's id.
    pub const CAMPAIGN_ID: &str = "s1-pro-speed-demo";

    /// The submission (`examples/s1-pro-speed/submissions/faster-batching.diff`): batches
    /// 8 sequences instead of 1, its weights untouched.
    pub const SUBMISSION_DIFF: &str =
        include_str!("../examples/s1-pro-speed/submissions/faster-batching.diff");

    /// The baseline's files: the demo's `engine.toml` and the pinned `model.weights`.
    pub fn baseline_files() -> [(&'static str, &'static str); 2] {
        [
            ("engine.toml", BASELINE_ENGINE_TOML),
            ("model.weights", WEIGHTS),
        ]
    }

    /// Writes `baseline.git` (one commit of [`baseline_files`], by the demo's fixed
    /// author at its fixed time) and `campaign.toml` (pinning that commit) into `dir`;
    /// returns the campaign file's path.
    ///
    /// Errors: [`DemoError`].
    pub fn stage(dir: &Path) -> Result<PathBuf, DemoError> {
        std::fs::create_dir_all(dir).map_err(IoError::at("creating", dir))?;
        let commit = write_files_repo(&dir.join("baseline.git"), &baseline_files())?;
        let campaign = dir.join("campaign.toml");
        let text = set_key(CAMPAIGN_TOML, "commit", &format!("\"{commit}\""));
        receipts::fsutil::write_atomic(&campaign, text.as_bytes(), 0o644)
            .map_err(IoError::at("writing", &campaign))?;
        Ok(campaign)
    }

    /// The s1-pro-speed demo on the Docker backend (`examples/s1-pro-speed/docker/`,
    /// content/s1-pro-speed.md, Docker): the same campaign with the `[backend]` of
    /// `backend.toml`, and a baseline tree that holds a `Dockerfile` built `FROM` a base
    /// pinned by digest on the evaluator's registry. `tests/docker_s1_pro_speed.rs` runs
    /// a round of it against a private dockerd and a registry on 127.0.0.1.
    pub mod docker {
        use std::path::{Path, PathBuf};

        use super::super::{DemoError, IoError, set_key, write_files_repo};
        use super::{BASELINE_ENGINE_TOML, CAMPAIGN_TOML, WEIGHTS};

        /// The baseline's `Dockerfile` (`examples/s1-pro-speed/docker/Dockerfile`), with
        /// `{base}` for the pinned base image.
        pub const DOCKERFILE: &str = include_str!("../examples/s1-pro-speed/docker/Dockerfile");

        /// The campaign's `[backend]` (`examples/s1-pro-speed/docker/backend.toml`).
        pub const BACKEND_TOML: &str = include_str!("../examples/s1-pro-speed/docker/backend.toml");

        /// The campaign's id.
        pub const CAMPAIGN_ID: &str = "s1-pro-speed-docker";

        /// The campaign's `backend.image`: the baseline tree's image.
        pub const BASELINE_IMAGE: &str = "referee-demo/s1-pro-speed:baseline";

        /// The baseline's files: the demo's `engine.toml`, the pinned `model.weights`
        /// and the `Dockerfile` built `FROM base` (a reference pinned by digest).
        pub fn baseline_files(base: &str) -> [(&'static str, String); 3] {
            [
                ("engine.toml", BASELINE_ENGINE_TOML.to_owned()),
                ("model.weights", WEIGHTS.to_owned()),
                ("Dockerfile", DOCKERFILE.replace("{base}", base)),
            ]
        }

        /// The campaign: the s1-pro-speed demo's, with [`CAMPAIGN_ID`], the Docker
        /// `[backend]` and `baseline.commit` = `commit`.
        pub fn campaign_toml(commit: &str) -> String {
            let builtin = "[backend]\nkind = \"builtin\"\n";
            let backend = BACKEND_TOML
                .lines()
                .skip_while(|line| line.starts_with('#'))
                .map(|line| format!("{line}\n"))
                .collect::<String>();
            let text = CAMPAIGN_TOML.replace(builtin, &backend);
            let text = set_key(&text, "id", &format!("\"{CAMPAIGN_ID}\""));
            set_key(&text, "commit", &format!("\"{commit}\""))
        }

        /// Writes `baseline.git` (one commit of [`baseline_files`] of `base`, by the
        /// demo's fixed author and time) and `campaign.toml` ([`campaign_toml`]) into
        /// `dir`; returns the campaign file's path.
        ///
        /// Errors: [`DemoError`].
        pub fn stage(dir: &Path, base: &str) -> Result<PathBuf, DemoError> {
            std::fs::create_dir_all(dir).map_err(IoError::at("creating", dir))?;
            let files = baseline_files(base);
            let files: Vec<(&str, &str)> = files.iter().map(|(n, t)| (*n, t.as_str())).collect();
            let commit = write_files_repo(&dir.join("baseline.git"), &files)?;
            let campaign = dir.join("campaign.toml");
            let text = campaign_toml(&commit.to_string());
            receipts::fsutil::write_atomic(&campaign, text.as_bytes(), 0o644)
                .map_err(IoError::at("writing", &campaign))?;
            Ok(campaign)
        }
    }
}

/// The s1-fast-speed demo (`examples/s1-fast-speed/`, content/s1-fast-speed.md): the
/// built-in engine as a decision sidecar, a fake sealed scorer, and one submission that
/// declares cheaper resources. Its round runs in `tests/s1_fast_speed.rs`.
pub mod s1_fast_speed {
    use std::path::{Path, PathBuf};

    use super::{BASELINE_ENGINE_TOML, DemoError, IoError, set_key, write_files_repo};

    /// The campaign (`examples/s1-fast-speed/campaign.toml`); `baseline.repo` is
    /// `baseline.git` next to it.
    pub const CAMPAIGN_TOML: &str = include_str!("../examples/s1-fast-speed/campaign.toml");

    /// The campaign's id.
    pub const CAMPAIGN_ID: &str = "s1-fast-speed-demo";

    /// The baseline's declared resources (`examples/s1-fast-speed/baseline/resources.json`).
    pub const BASELINE_RESOURCES: &str =
        include_str!("../examples/s1-fast-speed/baseline/resources.json");

    /// The submission (`examples/s1-fast-speed/submissions/cheaper-resources.diff`): the
    /// same engine, declared on two L4s, 4 cores and 32 GiB instead of one H100, 8 cores
    /// and 64 GiB.
    pub const SUBMISSION_DIFF: &str =
        include_str!("../examples/s1-fast-speed/submissions/cheaper-resources.diff");

    /// The fake sealed scorer (`examples/s1-fast-speed/scorer/score.sh`).
    pub const SCORER: &str = include_str!("../examples/s1-fast-speed/scorer/score.sh");

    /// The sealed items (`examples/s1-fast-speed/sealed/`), by file name.
    pub const SEALED: [(&str, &str); 4] = [
        (
            "item-1.json",
            include_str!("../examples/s1-fast-speed/sealed/item-1.json"),
        ),
        (
            "item-2.json",
            include_str!("../examples/s1-fast-speed/sealed/item-2.json"),
        ),
        (
            "item-3.json",
            include_str!("../examples/s1-fast-speed/sealed/item-3.json"),
        ),
        (
            "item-4.json",
            include_str!("../examples/s1-fast-speed/sealed/item-4.json"),
        ),
    ];

    /// Writes `baseline.git` (one commit of the demo's `engine.toml` and
    /// [`BASELINE_RESOURCES`], by the demo's fixed author at its fixed time), the scorer
    /// (`scorer/score.sh`, executable), the sealed items (`sealed/`) and `campaign.toml`
    /// (pinning that commit and naming the scorer by its absolute path) into `dir`;
    /// returns the campaign file's path. Pass `dir/sealed` as `--sealed-dir`.
    ///
    /// Errors: [`DemoError`].
    pub fn stage(dir: &Path) -> Result<PathBuf, DemoError> {
        std::fs::create_dir_all(dir.join("scorer")).map_err(IoError::at("creating", dir))?;
        std::fs::create_dir_all(dir.join("sealed")).map_err(IoError::at("creating", dir))?;
        let dir = std::path::absolute(dir).map_err(IoError::at("resolving", dir))?;
        let commit = write_files_repo(
            &dir.join("baseline.git"),
            &[
                ("engine.toml", BASELINE_ENGINE_TOML),
                ("resources.json", BASELINE_RESOURCES),
            ],
        )?;
        let scorer = dir.join("scorer/score.sh");
        receipts::fsutil::write_atomic(&scorer, SCORER.as_bytes(), 0o755)
            .map_err(IoError::at("writing", &scorer))?;
        for (name, text) in SEALED {
            let path = dir.join("sealed").join(name);
            receipts::fsutil::write_atomic(&path, text.as_bytes(), 0o644)
                .map_err(IoError::at("writing", &path))?;
        }
        let campaign = dir.join("campaign.toml");
        let text = set_key(CAMPAIGN_TOML, "commit", &format!("\"{commit}\""));
        // A JSON string is a TOML basic string: the path quoted and escaped.
        let command = serde_json::to_string(&[scorer.to_string_lossy()])
            .map_err(|e| IoError::at("quoting", &scorer)(std::io::Error::other(e)))?;
        let text = set_key(&text, "command", &command);
        receipts::fsutil::write_atomic(&campaign, text.as_bytes(), 0o644)
            .map_err(IoError::at("writing", &campaign))?;
        Ok(campaign)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use receipts::model::Campaign;

    /// The committed demo files — the pinned commit in `campaign.toml` and every diff
    /// under `submissions/` — are what the demo builds from the current baseline
    /// `engine.toml`. With `REFEREE_REFRESH_DEMO=1` they are rewritten instead (after the
    /// baseline config changed).
    #[test]
    fn demo_files_are_current() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo");
        let refresh = std::env::var_os("REFEREE_REFRESH_DEMO").is_some();
        let dir = tempfile::tempdir().unwrap();
        let commit = write_baseline_repo(&dir.path().join("baseline.git")).unwrap();
        let again = write_baseline_repo(&dir.path().join("again.git")).unwrap();
        assert_eq!(
            commit, again,
            "the baseline commit depends on nothing but the files"
        );
        let mut expected = vec![(
            "campaign.toml".to_owned(),
            set_key(CAMPAIGN_TOML, "commit", &format!("\"{commit}\"")),
        )];
        for submission in SUBMISSIONS {
            if let DemoEdit::Comment(old, _) = submission.edit {
                assert!(
                    BASELINE_ENGINE_TOML.contains(old),
                    "{}: the baseline has no line `{old}`",
                    submission.file
                );
            }
            expected.push((
                format!("submissions/{}", submission.file),
                submission.diff().unwrap(),
            ));
        }
        for (name, text) in expected {
            let path = root.join(&name);
            if refresh {
                fs::write(&path, &text).unwrap();
            } else {
                let found = fs::read_to_string(&path).unwrap_or_default();
                assert_eq!(
                    found, text,
                    "`examples/demo/{name}` is stale: rerun with REFEREE_REFRESH_DEMO=1"
                );
            }
        }
        let campaign = Campaign::from_toml("campaign.toml", CAMPAIGN_TOML).unwrap();
        if !refresh {
            assert_eq!(campaign.baseline.commit, commit.to_string());
        }
    }

    /// The Docker demo's committed diff and pinned commit are what its baseline files
    /// give (`REFEREE_REFRESH_DEMO=1` rewrites them).
    #[test]
    fn docker_demo_files_are_current() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/docker-demo");
        let dir = tempfile::tempdir().unwrap();
        let staged = fs::read_to_string(docker::stage(dir.path()).unwrap()).unwrap();
        let expected = [
            ("campaign.toml", staged),
            (
                "submissions/faster-batching.diff",
                docker::submission_diff().unwrap(),
            ),
        ];
        for (name, text) in expected {
            let path = root.join(name);
            if std::env::var_os("REFEREE_REFRESH_DEMO").is_some() {
                fs::write(&path, &text).unwrap();
            } else {
                assert_eq!(
                    fs::read_to_string(&path).unwrap_or_default(),
                    text,
                    "`examples/docker-demo/{name}` is stale: rerun with REFEREE_REFRESH_DEMO=1"
                );
            }
        }
        let campaign = Campaign::from_toml("campaign.toml", docker::CAMPAIGN_TOML).unwrap();
        assert!(
            matches!(campaign.backend, receipts::model::Backend::Docker(_)),
            "{:?}",
            campaign.backend
        );
        assert!(docker::DOCKERFILE.contains(&format!("FROM {}", docker::DOCKER_BASE_IMAGE)));
    }

    /// The s1-pro-speed demo on Docker is the demo's campaign with the Docker
    /// `[backend]` (the sidecar served with `--decide`), its own id and the pinned
    /// commit; its baseline's `Dockerfile` is built from the base it is given.
    #[test]
    fn the_s1_pro_speed_docker_campaign_is_the_demo_on_docker() {
        use s1_pro_speed::docker;
        let commit = "1".repeat(40);
        let text = docker::campaign_toml(&commit);
        let campaign = Campaign::from_toml("campaign.toml", &text).unwrap();
        let builtin = Campaign::from_toml("campaign.toml", s1_pro_speed::CAMPAIGN_TOML).unwrap();
        assert_eq!(campaign.id.to_string(), docker::CAMPAIGN_ID);
        assert_eq!(campaign.baseline.commit, commit);
        assert_eq!(campaign.decide, builtin.decide);
        assert_eq!(campaign.track, builtin.track);
        let receipts::model::Backend::Docker(spec) = &campaign.backend else {
            panic!("{:?}", campaign.backend);
        };
        assert_eq!(spec.image.as_deref(), Some(docker::BASELINE_IMAGE));
        assert_eq!(
            spec.command[spec.command.len() - 2..],
            ["--decide".to_owned(), "a,e,i,o".to_owned()]
        );
        let base = format!("127.0.0.1:5000/referee-demo/base@sha256:{}", "a".repeat(64));
        let files = docker::baseline_files(&base);
        assert_eq!(
            files.map(|(name, _)| name),
            ["engine.toml", "model.weights", "Dockerfile"]
        );
        let dockerfile = &docker::baseline_files(&base)[2].1;
        assert!(
            dockerfile.contains(&format!("\nFROM {base}\n")),
            "{dockerfile}"
        );
        assert!(!dockerfile.contains("{base}"), "{dockerfile}");
    }

    #[test]
    fn set_key_replaces_one_line() {
        assert_eq!(set_key("a = 1\nb = 2\n", "b", "3"), "a = 1\nb = 3\n");
        assert_eq!(set_key("ab = 1\n", "a", "3"), "ab = 1\n");
    }

    /// The key is replaced inside its table only, added under the header when the table
    /// lacks it, and the table appended when the text lacks it.
    #[test]
    fn set_table_key_touches_one_table() {
        let text = "a = 1\n[t]\nb = 2\n[u]\na = 3\n";
        assert_eq!(
            set_table_key(text, "t", "a", "9"),
            "a = 1\n[t]\na = 9\nb = 2\n[u]\na = 3\n"
        );
        assert_eq!(
            set_table_key(text, "u", "a", "9"),
            "a = 1\n[t]\nb = 2\n[u]\na = 9\n"
        );
        assert_eq!(
            set_table_key("a = 1\n", "v", "a", "9"),
            "a = 1\n[v]\na = 9\n"
        );
    }

    /// `stage` with a bound writes it into the campaign's `[rate_search]`, and the file
    /// still parses as a campaign with that bound.
    #[test]
    fn stage_sets_the_send_lag_bound() {
        let dir = tempfile::tempdir().unwrap();
        let path = stage(dir.path(), Some(250_000)).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        let campaign = Campaign::from_toml("campaign.toml", &text).unwrap();
        assert_eq!(campaign.rate_search.send_lag_bound_us, 250_000);
        let path = stage(&dir.path().join("plain"), None).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        let campaign = Campaign::from_toml("campaign.toml", &text).unwrap();
        assert_eq!(campaign.rate_search.send_lag_bound_us, 0);
    }
}
