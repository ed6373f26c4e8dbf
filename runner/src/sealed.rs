//! The sealed capability gate of the s1-fast-speed track (content/s1-fast-speed.md,
//! Capability on sealed items): a [`CapabilityScorer`] scores an entry's running engine on
//! the evaluator's sealed items and returns only a score. [`CommandScorer`] runs the
//! program the campaign's `[capability]` names; [`FakeSealedScorer`] answers fixed scores
//! for tests and demos. The sealed items stay outside every bundle and data directory:
//! what a round records is the scorer's sha256 and the set's commitment
//! ([`ScorerIdentity`]), never an item.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use receipts::fsutil::IoError;
use receipts::model::{CapabilitySpec, DECIDE_TOKEN_ENV, Sha256Hex};
use receipts::rules::capability::{
    MAX_SCORE_BYTES, ScoreError, parse_score, sealed_set_commitment,
};

/// The environment variable that gives the scorer the sealed items' directory.
pub const SEALED_DIR_ENV: &str = "REFEREE_SEALED_DIR";
/// The environment variable that gives the scorer the entry's base URL.
pub const ENGINE_URL_ENV: &str = "REFEREE_ENGINE_URL";
/// The most sealed items a set may hold.
pub const MAX_SEALED_ITEMS: usize = 100_000;

/// What a round records of its scorer: the program's sha256 and the commitment to the
/// sealed set it reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScorerIdentity {
    /// sha256 of the scorer's program.
    pub scorer_sha256: Sha256Hex,
    /// `receipts::rules::capability::sealed_set_commitment` of the sealed items.
    pub sealed_set_commitment: Sha256Hex,
}

/// The running entry a scorer scores.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScoredEngine {
    /// Its index in the round (0 = the baseline).
    pub entry: u32,
    /// Its base URL, e.g. `http://127.0.0.1:41234`.
    pub url: String,
    /// The run's decide token, when the campaign's API takes one.
    pub token: Option<String>,
}

/// Why an entry has no capability score, or the scorer cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SealedError {
    /// The sealed items sit inside the data directory, where a bundle or the site could
    /// publish them.
    #[error("the sealed items at {sealed} are inside the data directory {data}")]
    InsideDataDir {
        /// The sealed directory.
        sealed: PathBuf,
        /// The data directory.
        data: PathBuf,
    },
    /// The scorer's program is not the one the campaign pins.
    #[error("the scorer {program} has sha256 {actual}; the campaign pins {pinned}")]
    ScorerMismatch {
        /// The program.
        program: PathBuf,
        /// Its sha256, hex.
        actual: String,
        /// The campaign's `capability.sha256`, hex.
        pinned: String,
    },
    /// The campaign's command names no program.
    #[error("capability.command names no program")]
    NoProgram,
    /// The sealed set is empty or holds more than [`MAX_SEALED_ITEMS`] items.
    #[error("the sealed set at {0} holds no items or more than {MAX_SEALED_ITEMS}")]
    SetSize(PathBuf),
    /// The scorer exited unsuccessfully (its stderr is not recorded: it may quote items).
    #[error("the scorer exited with {status}")]
    Failed {
        /// Its exit status.
        status: String,
    },
    /// The scorer did not finish in time and was killed.
    #[error("the scorer did not finish within {0:?}")]
    Timeout(Duration),
    /// The scorer printed something other than a score.
    #[error(transparent)]
    Score(#[from] ScoreError),
    /// Reading the program or the sealed items, or running the scorer.
    #[error(transparent)]
    Io(#[from] IoError),
}

/// A scorer of the sealed capability gate: scores every entry of a round on the same
/// sealed items, returning only a score in ppm.
pub trait CapabilityScorer: Send + Sync + std::fmt::Debug {
    /// The scorer's identity, recorded in the round.
    fn identity(&self) -> &ScorerIdentity;

    /// The entry's score on the sealed items, ppm (0 to 10⁶).
    ///
    /// Errors: [`SealedError`] when the scorer gives no score.
    fn score(&self, engine: &ScoredEngine) -> Result<u32, SealedError>;
}

/// The scorer the campaign names: its program run with its arguments, a clean
/// environment holding only [`SEALED_DIR_ENV`], [`ENGINE_URL_ENV`], the decide token and
/// `PATH`, and its standard output read as one score.
#[derive(Debug)]
pub struct CommandScorer {
    command: Vec<String>,
    sealed_dir: PathBuf,
    timeout: Duration,
    identity: ScorerIdentity,
}

impl CommandScorer {
    /// The campaign's scorer over the sealed items in `sealed_dir` (every regular file
    /// under it, by its path relative to it), which must lie outside `data_dir`; each
    /// score must come within `timeout`.
    ///
    /// Errors: [`SealedError::NoProgram`], [`SealedError::InsideDataDir`],
    /// [`SealedError::ScorerMismatch`] against a pinned sha256, [`SealedError::SetSize`],
    /// [`SealedError::Io`] reading the program or the items.
    pub fn new(
        spec: &CapabilitySpec,
        sealed_dir: &Path,
        data_dir: &Path,
        timeout: Duration,
    ) -> Result<Self, SealedError> {
        let program = PathBuf::from(spec.command.first().ok_or(SealedError::NoProgram)?);
        let sealed = sealed_dir
            .canonicalize()
            .map_err(IoError::at("resolving", sealed_dir))?;
        let data = data_dir
            .canonicalize()
            .map_err(IoError::at("resolving", data_dir))?;
        if sealed.starts_with(&data) {
            return Err(SealedError::InsideDataDir { sealed, data });
        }
        let bytes = std::fs::read(&program).map_err(IoError::at("reading", &program))?;
        let scorer_sha256 = Sha256Hex::digest(&bytes);
        if let Some(pinned) = &spec.sha256
            && *pinned != scorer_sha256
        {
            return Err(SealedError::ScorerMismatch {
                program,
                actual: scorer_sha256.to_string(),
                pinned: pinned.to_string(),
            });
        }
        let mut items = Vec::new();
        collect_items(&sealed, &sealed, &mut items)?;
        if items.is_empty() {
            return Err(SealedError::SetSize(sealed));
        }
        Ok(Self {
            command: spec.command.clone(),
            identity: ScorerIdentity {
                scorer_sha256,
                sealed_set_commitment: sealed_set_commitment(&items),
            },
            sealed_dir: sealed,
            timeout,
        })
    }
}

/// Every regular file under `dir` as (path relative to `root`, sha256), symlinks skipped.
fn collect_items(
    root: &Path,
    dir: &Path,
    items: &mut Vec<(String, Sha256Hex)>,
) -> Result<(), SealedError> {
    for entry in std::fs::read_dir(dir).map_err(IoError::at("listing", dir))? {
        let entry = entry.map_err(IoError::at("listing", dir))?;
        let path = entry.path();
        let kind = entry.file_type().map_err(IoError::at("reading", &path))?;
        if kind.is_dir() {
            collect_items(root, &path, items)?;
        } else if kind.is_file() {
            if items.len() >= MAX_SEALED_ITEMS {
                return Err(SealedError::SetSize(root.to_owned()));
            }
            let bytes = std::fs::read(&path).map_err(IoError::at("reading", &path))?;
            let name = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .to_string_lossy()
                .into_owned();
            items.push((name, Sha256Hex::digest(&bytes)));
        }
    }
    Ok(())
}

impl CapabilityScorer for CommandScorer {
    fn identity(&self) -> &ScorerIdentity {
        &self.identity
    }

    fn score(&self, engine: &ScoredEngine) -> Result<u32, SealedError> {
        let (program, args) = self.command.split_first().ok_or(SealedError::NoProgram)?;
        let program_path = Path::new(program);
        let mut command = Command::new(program_path);
        command
            .args(args)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env(SEALED_DIR_ENV, &self.sealed_dir)
            .env(ENGINE_URL_ENV, &engine.url)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if let Some(token) = &engine.token {
            command.env(DECIDE_TOKEN_ENV, token);
        }
        let mut child = command
            .spawn()
            .map_err(IoError::at("running", program_path))?;
        let mut stdout = child.stdout.take().ok_or_else(|| {
            IoError::at("reading the output of", program_path)(std::io::Error::other(
                "no stdout pipe",
            ))
        })?;
        // Read at most one byte past the limit on a thread, so a scorer that prints
        // forever cannot hold the round; the wait below bounds its run.
        let reader = std::thread::spawn(move || {
            let mut out = Vec::new();
            let limit = u64::try_from(MAX_SCORE_BYTES + 1).unwrap_or(u64::MAX);
            let read = (&mut stdout).take(limit).read_to_end(&mut out);
            // Drain the rest so the scorer never blocks on a full pipe.
            let _drained = std::io::copy(&mut stdout, &mut std::io::sink());
            read.map(|_| out)
        });
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child
                .try_wait()
                .map_err(IoError::at("waiting for", program_path))?
            {
                break status;
            }
            if started.elapsed() > self.timeout {
                // Killing may race its own exit; either way it is reaped below.
                let _killed = child.kill();
                let _reaped = child.wait();
                return Err(SealedError::Timeout(self.timeout));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let out = reader
            .join()
            .map_err(|_| {
                IoError::at("reading the output of", program_path)(std::io::Error::other(
                    "the reader panicked",
                ))
            })?
            .map_err(IoError::at("reading the output of", program_path))?;
        if !status.success() {
            return Err(SealedError::Failed {
                status: status.to_string(),
            });
        }
        Ok(parse_score(&out)?)
    }
}

/// A scorer with fixed answers, for tests and demos: each entry's score, by its index in
/// the round, and the identity it reports (of no program and no set on disk).
#[derive(Clone, Debug)]
pub struct FakeSealedScorer {
    identity: ScorerIdentity,
    scores: BTreeMap<u32, u32>,
}

impl FakeSealedScorer {
    /// A fake answering `scores` (entry index → ppm), named `name` in its identity: the
    /// sha256 of `name` as the scorer's, and the commitment of one item `name`.
    pub fn new(name: &str, scores: BTreeMap<u32, u32>) -> Self {
        let digest = Sha256Hex::digest(name.as_bytes());
        Self {
            identity: ScorerIdentity {
                scorer_sha256: digest,
                sealed_set_commitment: sealed_set_commitment(&[(name.to_owned(), digest)]),
            },
            scores,
        }
    }
}

impl CapabilityScorer for FakeSealedScorer {
    fn identity(&self) -> &ScorerIdentity {
        &self.identity
    }

    fn score(&self, engine: &ScoredEngine) -> Result<u32, SealedError> {
        self.scores
            .get(&engine.entry)
            .copied()
            .ok_or(SealedError::Failed {
                status: format!("no fake score for entry {}", engine.entry),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use receipts::rules::capability::capability_passes;
    use std::os::unix::fs::PermissionsExt;

    /// A scorer script over the sealed items: scores 10⁶ × (items the engine's URL
    /// names) / (items), where the "engine" is only the URL's last path segment, a count.
    const SCRIPT: &str = "#!/bin/sh\n\
        total=$(ls \"$REFEREE_SEALED_DIR\" | wc -l)\n\
        right=${REFEREE_ENGINE_URL##*/}\n\
        echo $((right * 1000000 / total))\n";

    struct Setup {
        _tmp: tempfile::TempDir,
        spec: CapabilitySpec,
        sealed: PathBuf,
        data: PathBuf,
    }

    fn setup(script: &str) -> Setup {
        let tmp = tempfile::tempdir().unwrap();
        let sealed = tmp.path().join("sealed");
        let data = tmp.path().join("data");
        std::fs::create_dir_all(&sealed).unwrap();
        std::fs::create_dir_all(&data).unwrap();
        for (name, text) in [
            ("1.json", "q1"),
            ("2.json", "q2"),
            ("3.json", "q3"),
            ("4.json", "q4"),
        ] {
            std::fs::write(sealed.join(name), text).unwrap();
        }
        let program = tmp.path().join("score.sh");
        std::fs::write(&program, script).unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        Setup {
            spec: CapabilitySpec {
                command: vec![program.to_string_lossy().into_owned()],
                sha256: None,
            },
            sealed,
            data,
            _tmp: tmp,
        }
    }

    fn engine(url: &str) -> ScoredEngine {
        ScoredEngine {
            entry: 1,
            url: url.to_owned(),
            token: None,
        }
    }

    const GENEROUS: Duration = Duration::from_secs(120);

    #[test]
    fn the_command_scorer_returns_only_a_score_and_the_gate_fails_a_lower_one() {
        let s = setup(SCRIPT);
        let scorer = CommandScorer::new(&s.spec, &s.sealed, &s.data, GENEROUS).unwrap();
        let incumbent = scorer.score(&engine("http://127.0.0.1:1/3")).unwrap();
        let challenger = scorer.score(&engine("http://127.0.0.1:2/2")).unwrap();
        assert_eq!((incumbent, challenger), (750_000, 500_000));
        assert!(!capability_passes(challenger, incumbent));
        let items: Vec<(String, Sha256Hex)> = [
            ("1.json", "q1"),
            ("2.json", "q2"),
            ("3.json", "q3"),
            ("4.json", "q4"),
        ]
        .iter()
        .map(|(n, t)| ((*n).to_owned(), Sha256Hex::digest(t.as_bytes())))
        .collect();
        assert_eq!(
            scorer.identity(),
            &ScorerIdentity {
                scorer_sha256: Sha256Hex::digest(SCRIPT.as_bytes()),
                sealed_set_commitment: sealed_set_commitment(&items),
            }
        );
    }

    #[test]
    fn sealed_items_inside_the_data_directory_are_refused() {
        let s = setup(SCRIPT);
        let inside = s.data.join("sealed");
        std::fs::create_dir_all(&inside).unwrap();
        std::fs::write(inside.join("1.json"), "q1").unwrap();
        assert!(matches!(
            CommandScorer::new(&s.spec, &inside, &s.data, GENEROUS),
            Err(SealedError::InsideDataDir { .. })
        ));
    }

    #[test]
    fn a_scorer_other_than_the_pinned_one_is_refused() {
        let mut s = setup(SCRIPT);
        s.spec.sha256 = Some(Sha256Hex::digest(b"another scorer"));
        assert!(matches!(
            CommandScorer::new(&s.spec, &s.sealed, &s.data, GENEROUS),
            Err(SealedError::ScorerMismatch { .. })
        ));
        s.spec.sha256 = Some(Sha256Hex::digest(SCRIPT.as_bytes()));
        assert!(CommandScorer::new(&s.spec, &s.sealed, &s.data, GENEROUS).is_ok());
    }

    #[test]
    fn a_scorer_that_prints_items_or_fails_gives_no_score() {
        let leaky = setup("#!/bin/sh\ncat \"$REFEREE_SEALED_DIR\"/1.json\necho 5\n");
        let scorer = CommandScorer::new(&leaky.spec, &leaky.sealed, &leaky.data, GENEROUS).unwrap();
        assert!(matches!(
            scorer.score(&engine("http://x/1")),
            Err(SealedError::Score(ScoreError::NotAScore))
        ));
        let failing = setup("#!/bin/sh\necho 5\nexit 3\n");
        let scorer =
            CommandScorer::new(&failing.spec, &failing.sealed, &failing.data, GENEROUS).unwrap();
        assert!(matches!(
            scorer.score(&engine("http://x/1")),
            Err(SealedError::Failed { .. })
        ));
    }

    #[test]
    fn the_fake_scorer_answers_its_fixed_scores() {
        let fake = FakeSealedScorer::new("demo-sealed", [(1, 800_000), (2, 790_000)].into());
        let of = |entry| {
            fake.score(&ScoredEngine {
                entry,
                ..engine("http://x")
            })
        };
        let (a, b) = (of(1).unwrap(), of(2).unwrap());
        assert_eq!((a, b), (800_000, 790_000));
        assert!(!capability_passes(b, a));
        assert!(of(3).is_err());
        assert_eq!(
            fake.identity().scorer_sha256,
            Sha256Hex::digest(b"demo-sealed")
        );
    }
}
