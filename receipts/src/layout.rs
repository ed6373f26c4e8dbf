//! The data directory's layout and its read-only loaders (content/data-directory.md):
//! where every file the evaluator keeps lives, so the runner writes it, the verifier
//! checks it and the site renders it with no other configuration. Writers and locks live
//! in the runner (`intake::store`); nothing here writes.
//!
//! ```text
//! data/
//!   keyring.json
//!   <campaign-id>/
//!     campaign.toml  miners.json  baseline.git/
//!     submissions/<sha256>.diff  submissions/<sha256>.json
//!     rounds/<n>/receipt.dsse.json …
//!     .work/  .lock
//! ```

use crate::fsutil::IoError;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::bundle::{ENVELOPE_FILE, MAX_ENVELOPE_BYTES};
use crate::dsse::RawEnvelope;
use crate::model::{
    Campaign, CampaignId, FrozenCampaign, MinerRegistry, RoundRecord, Sha256Hex, Submission,
};
use crate::statement::{PredicateText, Statement, Subject};

/// Bundle-relative path of the frozen campaign's copy in a round bundle (schema ≥ 2):
/// its sha256 is the round's campaign digest.
pub const CAMPAIGN_INPUT: &str = "inputs/campaign.json";

/// Bundle-relative path of a schema-1 campaign's copy (a data directory frozen before
/// `campaign.json` existed; every bundle of predicate v1).
pub const CAMPAIGN_TOML_INPUT: &str = "inputs/campaign.toml";

/// Bundle-relative path of the copy of `miners.json`: its sha256 is `minersDigest`.
pub const MINERS_INPUT: &str = "inputs/miners.json";

/// Bundle-relative path of the copy of a JSONL prompt source, when the campaign has one:
/// its sha256 is the campaign's `workload.prompt_source.sha256`.
pub const PROMPTS_INPUT: &str = "inputs/prompts.jsonl";

/// Bundle-relative path of the copy of the diff with sha256 `patch`.
pub fn patch_input(patch: &Sha256Hex) -> String {
    format!("inputs/patches/{patch}.diff")
}

/// Bundle-relative path of the copy of the commitment text (`<repository>@<commit>`) of
/// the repository submission `submission`, whose sha256 it is: a repository entry's
/// input in place of a diff (content/repository-submissions.md, In a round).
pub fn commitment_input(submission: &Sha256Hex) -> String {
    format!("inputs/commitments/{submission}.txt")
}

/// Bundle-relative path of the copy of the review record of the repository submission
/// `submission` (content/review.md, In the round).
pub fn review_input(submission: &Sha256Hex) -> String {
    format!("inputs/reviews/{submission}.json")
}

/// Bundle-relative path of the copy of the `review-resolution` statement whose envelope
/// file has sha256 `envelope` (content/review.md, In the round).
pub fn resolution_input(envelope: &Sha256Hex) -> String {
    format!("inputs/review-resolutions/{envelope}.dsse.json")
}

/// The message of a [`ModelError`](crate::model::ModelError) from reading the file `source`, without the file's
/// name, for an error that names the file itself (`DataError::Parse`, `referee campaign
/// add`): the field, the value and the rule, once.
pub fn model_error_message(error: crate::model::ModelError, source: &str) -> String {
    use crate::model::ModelError;
    let prefix = format!("{source}: ");
    let strip = |text: String| match text.strip_prefix(&prefix) {
        Some(rest) => rest.to_owned(),
        None => text,
    };
    match error {
        ModelError::Toml { message, .. } => message,
        ModelError::Canonical { message } => ModelError::Canonical {
            message: strip(message),
        }
        .to_string(),
        ModelError::InvalidField { field, value, rule } => ModelError::InvalidField {
            field: strip(field),
            value,
            rule,
        }
        .to_string(),
        other => other.to_string(),
    }
}

/// Errors reading or writing the data directory; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// An I/O error on a named file.
    #[error(transparent)]
    Io(#[from] IoError),
    /// A record that does not parse.
    #[error("parsing `{path}`: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message.
        message: String,
    },
    /// The campaign has not been added.
    #[error("campaign `{id}` not found in `{data}` (run `referee campaign add` first)")]
    NoCampaign {
        /// The campaign id.
        id: String,
        /// The data directory.
        data: PathBuf,
    },
    /// Another process holds the campaign's lock (returned by the runner's writers).
    #[error("`{path}` is locked by another referee process")]
    Locked {
        /// The lock file.
        path: PathBuf,
    },
    /// Private key files inside a directory that is published (the data directory, a
    /// directory to seal), found by [`find_private_keys`]: nothing goes on until they are
    /// moved out. The message names every file and the shell commands that move them
    /// into the key directory.
    #[error("{}", private_keys_message(.moves, .dir, .what, .key_dir, .command))]
    PrivateKeyInside {
        /// Each key file found and where the hint moves it (inside `key_dir`, under a
        /// name not taken there).
        moves: Vec<(PathBuf, PathBuf)>,
        /// The published directory.
        dir: PathBuf,
        /// What it is: `the data directory`, `the directory to seal`.
        what: &'static str,
        /// The key directory the hint moves them to.
        key_dir: PathBuf,
        /// The command to run again with `--key`: `referee round`, `referee seal`.
        command: &'static str,
    },
}

impl DataError {
    /// [`DataError::PrivateKeyInside`] for the key files `found` (at least one) inside
    /// `dir`, with a hint that moves each into `key_dir`: a name already taken there gets
    /// a `-2`, `-3`, … suffix, so following the hint never overwrites a key.
    pub fn private_keys_inside(
        dir: &Path,
        what: &'static str,
        found: Vec<PathBuf>,
        key_dir: &Path,
        command: &'static str,
    ) -> Self {
        let mut taken: Vec<PathBuf> = Vec::new();
        let moves = found
            .into_iter()
            .map(|from| {
                let name = from.file_name().map_or_else(
                    || "evaluator.key".to_owned(),
                    |n| n.to_string_lossy().into_owned(),
                );
                let (stem, ext) = match name.rsplit_once('.') {
                    Some((stem, ext)) if !stem.is_empty() => (stem.to_owned(), format!(".{ext}")),
                    _ => (name.clone(), String::new()),
                };
                let mut to = key_dir.join(&name);
                let mut n = 2;
                while taken.contains(&to) || to.symlink_metadata().is_ok() {
                    to = key_dir.join(format!("{stem}-{n}{ext}"));
                    n += 1;
                }
                taken.push(to.clone());
                (from, to)
            })
            .collect();
        DataError::PrivateKeyInside {
            moves,
            dir: dir.to_path_buf(),
            what,
            key_dir: key_dir.to_path_buf(),
            command,
        }
    }
}

/// The root of a data directory.
#[derive(Clone, Debug)]
pub struct DataDir {
    root: PathBuf,
}

impl DataDir {
    /// A data directory at `root` (it need not exist yet).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The root path.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `data/keyring.json`: trusted public keys with validity windows.
    pub fn keyring_path(&self) -> PathBuf {
        self.root.join("keyring.json")
    }

    /// Every private key file under the data directory ([`find_private_keys`]). The data
    /// directory is published, so keys live in a key directory outside it
    /// ([`default_key_dir`]) and `referee round` refuses to run while one is found here.
    ///
    /// Errors: [`DataError::Io`] naming a directory that cannot be listed or a file that
    /// cannot be read.
    pub fn private_keys(&self) -> Result<Vec<PathBuf>, DataError> {
        find_private_keys(&self.root)
    }

    /// The campaigns of the data directory, sorted: every subdirectory whose name is a
    /// campaign id and which holds a frozen campaign (`campaign.json` or
    /// `campaign.toml`). Hidden entries and other names are not campaigns; a data
    /// directory that does not exist has none.
    ///
    /// Errors: [`DataError::Io`] when the directory cannot be listed.
    pub fn campaign_ids(&self) -> Result<Vec<CampaignId>, DataError> {
        let mut ids = Vec::new();
        for entry in list_dir(&self.root)? {
            let Some(id) = entry
                .file_name()
                .to_str()
                .and_then(|name| name.parse::<CampaignId>().ok())
            else {
                continue;
            };
            let dir = self.campaign(&id);
            if dir.campaign_json().is_file() || dir.campaign_toml().is_file() {
                ids.push(id);
            }
        }
        ids.sort();
        Ok(ids)
    }

    /// The directory of campaign `id`.
    pub fn campaign(&self, id: &CampaignId) -> CampaignDir {
        CampaignDir {
            root: self.root.join(id.as_str()),
            id: id.clone(),
        }
    }
}

/// `data/<campaign-id>/`.
#[derive(Clone, Debug)]
pub struct CampaignDir {
    root: PathBuf,
    id: CampaignId,
}

impl CampaignDir {
    /// The directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The campaign id.
    pub fn id(&self) -> &CampaignId {
        &self.id
    }

    /// `campaign.json`, the frozen campaign (canonical JSON with its `schemaVersion`);
    /// its sha256 is the campaign digest every receipt records.
    pub fn campaign_json(&self) -> PathBuf {
        self.root.join("campaign.json")
    }

    /// `campaign.toml`, the campaign with every default written out, for people to read;
    /// the frozen form itself in a data directory of schema 1 (no `campaign.json`).
    pub fn campaign_toml(&self) -> PathBuf {
        self.root.join("campaign.toml")
    }

    /// `miners.json`, registered miners (append-only).
    pub fn miners_json(&self) -> PathBuf {
        self.root.join("miners.json")
    }

    /// `baseline.git`, the bare copy of the pinned baseline repository.
    pub fn baseline_repo(&self) -> PathBuf {
        self.root.join("baseline.git")
    }

    /// `submissions/`.
    pub fn submissions_dir(&self) -> PathBuf {
        self.root.join("submissions")
    }

    /// `submissions/<sha256>.diff`: the exact bytes a miner committed.
    pub fn submission_diff(&self, sha256: &Sha256Hex) -> PathBuf {
        self.submissions_dir().join(format!("{sha256}.diff"))
    }

    /// `submissions/<sha256>.json`: its record.
    pub fn submission_json(&self, sha256: &Sha256Hex) -> PathBuf {
        self.submissions_dir().join(format!("{sha256}.json"))
    }

    /// `rounds/`.
    pub fn rounds_dir(&self) -> PathBuf {
        self.root.join("rounds")
    }

    /// `rounds/<n>/`, which appears only complete.
    pub fn round_dir(&self, n: u64) -> PathBuf {
        self.rounds_dir().join(n.to_string())
    }

    /// `.work/`: journals and temp files of rounds in progress.
    pub fn work_dir(&self) -> PathBuf {
        self.root.join(".work")
    }

    /// `.lock`: keeps two writers of the records apart (held for short writes).
    pub fn lock_path(&self) -> PathBuf {
        self.root.join(".lock")
    }

    /// Reads the frozen campaign: `campaign.json` (its stored bytes are what the digest
    /// covers), or, in a data directory frozen before `campaign.json` existed, the
    /// schema-1 `campaign.toml` ([`FrozenCampaign::from_legacy_toml`]).
    ///
    /// Errors: [`DataError::NoCampaign`] when neither exists, [`DataError::Parse`] when
    /// the file does not parse, is not canonical or does not validate.
    pub fn load_campaign(&self) -> Result<FrozenCampaign, DataError> {
        let json = self.campaign_json();
        let toml = self.campaign_toml();
        if let Some(bytes) = self.read_if_exists(&json)? {
            let source = json.display().to_string();
            let frozen = FrozenCampaign::from_json(&source, &bytes).map_err(|e| {
                // The error names the file; so does `DataError::Parse`: name it once.
                DataError::Parse {
                    path: json.clone(),
                    message: model_error_message(e, &source),
                }
            })?;
            // The readable copy must say what the frozen form says, so an edit to it is
            // refused rather than silently ignored.
            if let Some(text) = self.read_if_exists(&toml)? {
                let readable = Campaign::from_toml(
                    &toml.display().to_string(),
                    &String::from_utf8_lossy(&text),
                );
                if !matches!(&readable, Ok(c) if *c == frozen.campaign) {
                    return Err(DataError::Parse {
                        path: toml,
                        message: format!(
                            "differs from the frozen `{}`: campaigns are frozen (add a campaign with a new id instead)",
                            json.display()
                        ),
                    });
                }
            }
            return Ok(frozen);
        }
        let Some(bytes) = self.read_if_exists(&toml)? else {
            return Err(DataError::NoCampaign {
                id: self.id.to_string(),
                data: self
                    .root
                    .parent()
                    .map(Path::to_path_buf)
                    .unwrap_or_default(),
            });
        };
        let text = String::from_utf8_lossy(&bytes);
        let source = toml.display().to_string();
        FrozenCampaign::from_legacy_toml(&source, &text).map_err(|e| {
            // The parse error already names the file; do not name it twice.
            DataError::Parse {
                path: toml,
                message: model_error_message(e, &source),
            }
        })
    }

    /// The bytes of `path`, `None` when it does not exist.
    fn read_if_exists(&self, path: &Path) -> Result<Option<Vec<u8>>, DataError> {
        match fs::read(path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(DataError::Io(IoError {
                action: "reading",
                path: path.to_path_buf(),
                source,
            })),
        }
    }

    /// The bytes of the campaign's JSONL prompt source (its path is relative to this
    /// directory), for [`crate::rules::workload::Workload::new`], which checks them
    /// against the campaign's digest; `None` for generated prompts.
    ///
    /// Errors: [`DataError::Io`] naming the file.
    pub fn load_prompt_source(&self, campaign: &Campaign) -> Result<Option<Vec<u8>>, DataError> {
        let crate::model::PromptSource::Jsonl { path, .. } = &campaign.workload.prompt_source
        else {
            return Ok(None);
        };
        let path = self.root.join(path);
        fs::read(&path).map(Some).map_err(|source| {
            DataError::Io(IoError {
                action: "reading",
                path,
                source,
            })
        })
    }

    /// Reads `miners.json` (empty when it does not exist yet).
    pub fn load_miners(&self) -> Result<MinerRegistry, DataError> {
        let path = self.miners_json();
        match fs::read(&path) {
            Ok(bytes) => parse_json(&path, &bytes),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(MinerRegistry::default()),
            Err(source) => Err(DataError::Io(IoError {
                action: "reading",
                path,
                source,
            })),
        }
    }

    /// Reads one submission record.
    pub fn load_submission(&self, sha256: &Sha256Hex) -> Result<Submission, DataError> {
        let path = self.submission_json(sha256);
        let bytes = fs::read(&path).map_err(|source| {
            DataError::Io(IoError {
                action: "reading",
                path: path.clone(),
                source,
            })
        })?;
        parse_json(&path, &bytes)
    }

    /// Every submission record, oldest commitment first (ties by sha256).
    ///
    /// Errors: as [`CampaignDir::list_submissions_by`].
    pub fn list_submissions(&self) -> Result<Vec<Submission>, DataError> {
        let mut out = self.list_submissions_by(|_, _, record| record)?;
        out.sort_by(|a, b| {
            let first = |s: &Submission| s.events.first().map(|e| e.at);
            first(a)
                .cmp(&first(b))
                .then_with(|| a.sha256.cmp(&b.sha256))
        });
        Ok(out)
    }

    /// What `keep` makes of each submission record (`submissions/*.json`), given the
    /// file's path, its bytes as read and the parsed record, in directory order: one
    /// record is held at a time, so a reader that keeps a summary of each never holds
    /// every record's events at once.
    ///
    /// Errors: [`DataError::Io`] when the directory cannot be listed or a record read,
    /// [`DataError::Parse`] (naming the file) when a record does not parse.
    pub fn list_submissions_by<T>(
        &self,
        mut keep: impl FnMut(&Path, &[u8], Submission) -> T,
    ) -> Result<Vec<T>, DataError> {
        let dir = self.submissions_dir();
        let mut out = Vec::new();
        for entry in list_dir(&dir)? {
            let path = entry.path();
            if path.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            let bytes = fs::read(&path).map_err(|source| {
                DataError::Io(IoError {
                    action: "reading",
                    path: path.clone(),
                    source,
                })
            })?;
            let record = parse_json::<Submission>(&path, &bytes)?;
            out.push(keep(&path, &bytes, record));
        }
        Ok(out)
    }

    /// Numbers of the sealed rounds, ascending.
    pub fn round_numbers(&self) -> Result<Vec<u64>, DataError> {
        let mut out = Vec::new();
        for entry in list_dir(&self.rounds_dir())? {
            if let Some(n) = entry.file_name().to_str().and_then(|s| s.parse().ok()) {
                out.push(n);
            }
        }
        out.sort_unstable();
        Ok(out)
    }

    /// `.round.lock`: keeps two round runners apart for a whole round.
    pub fn round_lock_path(&self) -> PathBuf {
        self.root.join(".round.lock")
    }
}

/// The entries of `dir`; none when it does not exist. Listing errors are errors, never
/// skipped entries.
fn list_dir(dir: &Path) -> Result<Vec<fs::DirEntry>, DataError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(IoError::at("listing", dir)(source).into()),
    };
    entries
        .map(|entry| entry.map_err(|source| IoError::at("listing", dir)(source).into()))
        .collect()
}

/// Parses a JSON record with serde, naming the file on error.
pub fn parse_json<T: serde::de::DeserializeOwned>(
    path: &Path,
    bytes: &[u8],
) -> Result<T, DataError> {
    serde_json::from_slice(bytes).map_err(|e| DataError::Parse {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// Reads the round record of the sealed bundle in `dir` and the sha256 of its Statement
/// bytes (the next round's `previousReceipt`): [`read_sealed_round`] without the subjects.
///
/// Errors: as [`read_sealed_round`].
pub fn read_round_record(dir: &Path) -> Result<(RoundRecord, Sha256Hex), DataError> {
    read_sealed_round(dir).map(|sealed| (sealed.record, sealed.statement_digest))
}

/// What [`read_sealed_round`] reads of a sealed round bundle.
#[derive(Clone, Debug)]
pub struct SealedRound {
    /// The round predicate.
    pub record: RoundRecord,
    /// sha256 of the Statement bytes (the next round's `previousReceipt`).
    pub statement_digest: Sha256Hex,
    /// The Statement's subjects: each bundle-relative file name and the sha256 it
    /// records, as the envelope lists them (sorted by name when the bundle is sound).
    pub subjects: Vec<Subject>,
}

/// Reads the sealed bundle in `dir`: its round record, the sha256 of its Statement bytes
/// and the Statement's subjects. It parses the envelope strictly but checks no
/// signature: callers that act on the record verify the bundle first.
///
/// Errors: [`DataError::Io`] when the envelope cannot be read, [`DataError::Parse`] when
/// the envelope, its Statement or its round predicate does not parse (the message says
/// which layer).
pub fn read_sealed_round(dir: &Path) -> Result<SealedRound, DataError> {
    let path = dir.join(ENVELOPE_FILE);
    let bytes = crate::fsutil::read_limited(&path, MAX_ENVELOPE_BYTES).map_err(|source| {
        DataError::Io(IoError {
            action: "reading",
            path: path.clone(),
            source,
        })
    })?;
    let parse = |message: String| DataError::Parse {
        path: path.clone(),
        message,
    };
    let envelope = RawEnvelope::parse(&bytes, MAX_ENVELOPE_BYTES)
        .and_then(|(raw, _)| raw.decode())
        .map_err(|e| parse(e.to_string()))?;
    // The predicate kept as text and read straight into the record, not through a
    // `Value` tree of the whole record (6 % of a site build's verification at 1,000
    // rounds when every verdict came from its cache).
    let statement: Statement<PredicateText> = serde_json::from_slice(&envelope.payload)
        .map_err(|e| parse(format!("its statement: {e}")))?;
    let record: RoundRecord = statement
        .predicate_as()
        .map_err(|e| parse(format!("its round predicate: {e}")))?;
    Ok(SealedRound {
        record,
        statement_digest: Sha256Hex::digest(&envelope.payload),
        subjects: statement.subject,
    })
}

/// The default key directory, where private keys live, outside every data directory
/// (which is published): `$XDG_CONFIG_HOME/referee/keys` when `XDG_CONFIG_HOME` is an
/// absolute path, else `$HOME/.config/referee/keys`; `None` when neither is set.
pub fn default_key_dir() -> Option<PathBuf> {
    Some(default_config_dir()?.join("keys"))
}

/// referee's configuration directory: `$XDG_CONFIG_HOME/referee` when `XDG_CONFIG_HOME`
/// is an absolute path, else `$HOME/.config/referee`; `None` when neither is set. It
/// holds the key directory and the log checkpoints `referee verify` remembers.
pub fn default_config_dir() -> Option<PathBuf> {
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".config"))
        })?;
    Some(config.join("referee"))
}

/// Largest file [`find_private_keys`] reads to see whether it holds a key seed (a seed
/// file is 64 or 65 bytes, so only files of that size are read at all).
pub const MAX_SNIFFED_KEY_FILE_BYTES: u64 = 1024;

/// Every private key file under `root`, sorted: any file (or symlink) whose name ends in
/// `.key`, and any regular file that holds a key seed as `PrivateKey::load` reads it
/// ([`crate::keys::is_private_key_seed`]; only files of at most
/// [`MAX_SNIFFED_KEY_FILE_BYTES`] are read). Symlinks are never followed; `.git`
/// directories are skipped, and so is `.work/` (rounds in progress: miners' patched trees,
/// never published). Inside a bare repository (`*.git/`), and in miners' diffs (`*.diff`)
/// and engine or step logs (`*.log`), whose bytes a miner controls, only the name counts.
/// A `root` that does not exist holds none.
///
/// Errors: [`DataError::Io`] naming a directory that cannot be listed or a file that
/// cannot be read.
pub fn find_private_keys(root: &Path) -> Result<Vec<PathBuf>, DataError> {
    let listing = |path: &Path| {
        let path = path.to_path_buf();
        move |source| {
            DataError::Io(IoError {
                action: "listing",
                path,
                source,
            })
        }
    };
    let mut found = Vec::new();
    let mut stack = vec![(root.to_path_buf(), false)];
    while let Some((dir, in_repo)) = stack.pop() {
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(source) => return Err(listing(&dir)(source)),
        };
        for entry in entries {
            let entry = entry.map_err(listing(&dir))?;
            let file_type = entry.file_type().map_err(listing(&dir))?;
            let name = entry.file_name().to_string_lossy().to_ascii_lowercase();
            let path = entry.path();
            if file_type.is_dir() {
                if name != ".git" && name != ".work" {
                    stack.push((path, in_repo || name.ends_with(".git")));
                }
            } else if name.ends_with(".key")
                || (file_type.is_file()
                    && !in_repo
                    && !name.ends_with(".diff")
                    && !name.ends_with(".log")
                    && holds_seed(&entry)?)
            {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

/// Whether the regular file of `entry` holds a key seed; a file gone meanwhile does not.
fn holds_seed(entry: &fs::DirEntry) -> Result<bool, DataError> {
    let path = entry.path();
    let len = match entry.metadata() {
        Ok(meta) => meta.len(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(source) => {
            return Err(DataError::Io(IoError {
                action: "reading",
                path,
                source,
            }));
        }
    };
    if !(64..=65).contains(&len) {
        return Ok(false);
    }
    let limit = usize::try_from(MAX_SNIFFED_KEY_FILE_BYTES).unwrap_or(usize::MAX);
    match crate::fsutil::read_limited(&path, limit) {
        Ok(mut bytes) => {
            let seed = crate::keys::is_private_key_seed(&bytes);
            bytes.fill(0);
            Ok(seed)
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(DataError::Io(IoError {
            action: "reading",
            path,
            source,
        })),
    }
}

/// The message of [`DataError::PrivateKeyInside`].
fn private_keys_message(
    moves: &[(PathBuf, PathBuf)],
    dir: &Path,
    what: &str,
    key_dir: &Path,
    command: &str,
) -> String {
    let names = moves
        .iter()
        .map(|(from, _)| format!("`{}`", from.display()))
        .collect::<Vec<_>>()
        .join(", ");
    let (noun, verb, pronoun) = if moves.len() == 1 {
        ("private key", "is", "it")
    } else {
        ("private keys", "are", "them")
    };
    let mut hint = format!("mkdir -p -m 700 {}", shell_word(key_dir));
    for (from, to) in moves {
        hint.push_str(&format!(
            " && mv -n {} {}",
            shell_word(from),
            shell_word(to)
        ));
    }
    if let Some((_, first)) = moves.first() {
        hint.push_str(&format!(" && {command} --key {} …", shell_word(first)));
    }
    format!(
        "{noun} {names} {verb} inside {what} `{}`, which is published; move {pronoun} out: `{hint}`",
        dir.display()
    )
}

/// `path` as one shell word: as is when it holds only safe characters, else single-quoted.
fn shell_word(path: &Path) -> String {
    let text = path.to_string_lossy();
    let safe = |c: char| c.is_ascii_alphanumeric() || "/._-+=:,@%~".contains(c);
    if !text.is_empty() && text.chars().all(safe) {
        text.into_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}
