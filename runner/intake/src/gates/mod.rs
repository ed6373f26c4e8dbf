//! The gates a submitted diff walks before it may run (content/submitting.md;
//! content/submitting.md, Pipeline): `verified` (every `index` blob id matches the
//! pinned baseline), the surface checks, `applied` and the build.
//!
//! Everything is decided on **libgit2's own parse** of the diff ([`parse`]), the same
//! [`git2::Diff`] value that is later applied, so a checker and the applier can never
//! disagree about which file a section writes. The surface checks ([`surface`]) are pure:
//! they look only at that parse, the raw bytes and an index of the baseline tree, and
//! they run *before* anything is written. Applying ([`apply`]) happens in a repository
//! whose object database is in memory (new blobs never reach `baseline.git`), and the
//! only files written are the checkout into a caller-given, empty directory; after it,
//! the set of paths that differ from the baseline on disk must equal the set the checks
//! approved, each a regular file inside the tree.
//!
//! Every violation. A diff is not stopped at the first rule it breaks: the checks on the
//! parse collect every violation ([`Violations`]), ordered most specific first (what a
//! path may be, then what may be written there, then the baseline lookups, then the
//! text's agreement with the parse), and the reason recorded lists them all. Path policy
//! runs before the baseline lookups: a section whose path breaks a path rule is not
//! looked up, so `../x` is reported as traversal, never as "the baseline has no file
//! there". A submission is rejected at the earliest gate any of its violations belongs
//! to (a diff whose blob ids do not match is never `verified`).
//!
//! Order. The surface checks run before the apply writes a single file, and the
//! pipeline records them in that order: the transition table of
//! `receipts::model::PipelineState` (content/submitting.md, The pipeline) is `verified →
//! surface_ok → applied → building`, each event recorded when its gate ran. A surface
//! rejection is `rejected` at gate `surface_ok` from `verified`, an apply failure
//! `rejected` at gate `applied` from `surface_ok`.

pub mod apply;
pub mod baseline;
pub mod build;
pub mod parse;
pub mod path;
pub mod surface;

use receipts::fsutil::IoError;
use std::fmt;
use std::path::PathBuf;

use receipts::model::Gate;
use receipts::text::escape_untrusted;

pub use apply::{AppliedTree, PreparedTree, apply_checked, prepare_tree};
pub use baseline::{Baseline, BaselineEntry, BaselineIndex};
pub use build::{BuildFailure, BuildOutput, Builder, BuiltinBuilder};
pub use parse::{ChangeKind, FileChange, ParsedDiff};
pub use surface::{Approved, ApprovedChange, Comparison, Inspection, Refusal, inspect};

/// A rule a diff broke: the closed set of reasons a submission is rejected at a gate.
/// Each message names the path (where there is one) and the rule, in words a miner can
/// act on; [`Violation::gate`] says which gate it belongs to.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Violation {
    /// `fetched`: the bytes do not hash to the published commitment.
    #[error(
        "the diff bytes hash to `{actual}`, not to the commitment `{commitment}`; commit the sha256 of the exact bytes you submit"
    )]
    CommitmentMismatch {
        /// The commitment given to `ingest --commitment`.
        commitment: String,
        /// sha256 of the bytes.
        actual: String,
    },
    /// `verified`: the miner is not in `miners.json`.
    #[error("miner `{miner}` is not registered for this campaign (`referee miner add`)")]
    UnregisteredMiner {
        /// The miner id.
        miner: String,
    },
    /// `verified`: an `index` line names a preimage blob other than the baseline's.
    #[error(
        "`{path}`: the diff's `index` line says the original is blob `{diff_id}` but the pinned baseline commit has `{baseline_id}`; rebase the diff onto commit `{commit}`"
    )]
    BlobMismatch {
        /// The path.
        path: String,
        /// The (possibly abbreviated) id in the diff.
        diff_id: String,
        /// The baseline's blob id.
        baseline_id: String,
        /// The pinned commit.
        commit: String,
    },
    /// `verified`: a section changes, deletes, renames or copies a file the baseline lacks.
    #[error(
        "`{path}`: the diff changes this file but the pinned baseline commit `{commit}` has no file there"
    )]
    MissingInBaseline {
        /// The path.
        path: String,
        /// The pinned commit.
        commit: String,
    },
    /// `verified`: a section creates a file that the baseline already has.
    #[error(
        "`{path}`: the diff creates this file but the pinned baseline commit `{commit}` already has it"
    )]
    ExistsInBaseline {
        /// The path.
        path: String,
        /// The pinned commit.
        commit: String,
    },
    /// `verified`: a new file whose `index` line names a non-zero preimage.
    #[error(
        "`{path}`: a new file's `index` line must start with an all-zero blob id, found `{diff_id}`"
    )]
    NewFileWithPreimage {
        /// The path.
        path: String,
        /// The id in the diff.
        diff_id: String,
    },
    /// `surface_ok`: an empty diff.
    #[error("the diff changes no file (empty diff)")]
    Empty,
    /// `fetched`: larger than `surface.max_diff_bytes`. The ingest reads at most one byte
    /// more than the limit, so the real size (and the sha256 of the bytes) is not known.
    #[error(
        "the diff is larger than {max_bytes} bytes (reading stopped after {read_bytes} bytes); the campaign accepts at most {max_bytes} bytes (surface.max_diff_bytes)"
    )]
    TooLarge {
        /// Bytes read before the check stopped (the limit plus one, from a stream).
        read_bytes: u64,
        /// The limit, bytes.
        max_bytes: u64,
    },
    /// `surface_ok`: a line longer than `surface.max_line_bytes`.
    #[error(
        "line {line} is {length_bytes} bytes; the campaign accepts lines of at most {max_bytes} bytes (surface.max_line_bytes)"
    )]
    LineTooLong {
        /// 1-based line number.
        line: usize,
        /// Its length, bytes (without the newline).
        length_bytes: usize,
        /// The limit, bytes.
        max_bytes: u64,
    },
    /// `surface_ok`: a NUL byte anywhere in the diff.
    #[error("the diff contains a NUL byte at offset {offset}; binary content is not accepted")]
    NulByte {
        /// Byte offset.
        offset: usize,
    },
    /// `surface_ok`: libgit2 cannot parse it.
    #[error("libgit2 cannot parse the diff: {message}")]
    Unparseable {
        /// libgit2's message.
        message: String,
    },
    /// `surface_ok`: the text does not have the shape of a `git diff`.
    #[error("line {line}: {rule}; found `{found}`")]
    Malformed {
        /// 1-based line number.
        line: usize,
        /// What was expected.
        rule: String,
        /// The line as written (lossy UTF-8, truncated).
        found: String,
    },
    /// `surface_ok`: a raw header line disagrees with libgit2's parse of the section.
    #[error(
        "line {line}: the header says `{found}` but the section is parsed as `{expected}`; header paths (`diff --git`, `---`, `+++`, `rename`/`copy`) must all name the same files"
    )]
    HeaderMismatch {
        /// 1-based line number.
        line: usize,
        /// The line libgit2's parse implies.
        expected: String,
        /// The line as written.
        found: String,
    },
    /// `surface_ok`: a path that is not valid UTF-8.
    #[error("path `{path}` is not valid UTF-8")]
    InvalidUtf8Path {
        /// The path, lossily decoded.
        path: String,
    },
    /// `surface_ok`: a path that breaks a path rule.
    #[error("`{path}`: {rule}")]
    BadPath {
        /// The path.
        path: String,
        /// The rule it breaks.
        rule: PathRule,
    },
    /// `surface_ok`: a path matching a campaign's denied glob.
    #[error("`{path}`: the campaign denies paths matching `{pattern}` (surface.denied_paths)")]
    DeniedPath {
        /// The path.
        path: String,
        /// The glob it matches.
        pattern: String,
    },
    /// `surface_ok`: the section creates a symlink or a gitlink, or changes one.
    #[error(
        "`{path}`: mode {mode:06o} ({what}) is not accepted; only regular files may be written"
    )]
    SpecialMode {
        /// The path.
        path: String,
        /// The raw mode.
        mode: u32,
        /// `symlink`, `submodule (gitlink)` or `directory`.
        what: &'static str,
    },
    /// `surface_ok`: a mode libgit2 does not know.
    #[error("`{path}`: unknown file mode {mode:o}")]
    UnknownMode {
        /// The path.
        path: String,
        /// The raw mode.
        mode: u32,
    },
    /// `surface_ok`: a new mode the campaign does not allow.
    #[error("`{path}`: mode {mode:06o} is not allowed (surface.allowed_modes: {allowed})")]
    ModeNotAllowed {
        /// The path.
        path: String,
        /// The requested mode.
        mode: u32,
        /// The allowed modes, comma-separated.
        allowed: String,
    },
    /// `surface_ok`: the path is, or passes through, a symlink of the baseline tree.
    #[error(
        "`{path}`: `{symlink}` is a symlink in the baseline; no write, rename or copy may go through or replace it"
    )]
    ThroughSymlink {
        /// The path.
        path: String,
        /// The baseline symlink on its way.
        symlink: String,
    },
    /// `surface_ok`: a path under a baseline regular file (a file used as a directory).
    #[error("`{path}`: `{file}` is a file in the baseline, not a directory")]
    ThroughFile {
        /// The path.
        path: String,
        /// The baseline file on its way.
        file: String,
    },
    /// `surface_ok`: a binary patch.
    #[error("`{path}`: binary patches are not accepted")]
    Binary {
        /// The path.
        path: String,
    },
    /// `surface_ok`: two sections touch the same path.
    #[error("`{path}`: more than one section of the diff touches this path")]
    DuplicatePath {
        /// The path.
        path: String,
    },
    /// `surface_ok`: a change kind the pipeline does not take.
    #[error("`{path}`: unsupported change `{kind}`")]
    UnsupportedChange {
        /// The path.
        path: String,
        /// The change kind.
        kind: String,
    },
    /// `applied`: libgit2 could not apply the diff to the baseline.
    #[error(
        "{}the diff does not apply to the pinned baseline commit `{commit}`: {message}",
        apply_location(.path.as_deref(), *.hunk, .header.as_deref())
    )]
    DoesNotApply {
        /// The pinned commit.
        commit: String,
        /// The file libgit2 was applying when it failed (the new path; the old one of a
        /// deletion), when it had started on one.
        path: Option<String>,
        /// The 1-based number of the hunk within that file's section, when the failure
        /// is a hunk's.
        hunk: Option<usize>,
        /// That hunk's `@@` line as libgit2 parsed it (shortened).
        header: Option<String>,
        /// libgit2's message.
        message: String,
    },
    /// `applied`: the files that changed on disk are not the files the checks approved.
    #[error(
        "after applying, the changed paths differ from the approved ones: unexpected {unexpected:?}, missing {missing:?}"
    )]
    ChangedSetMismatch {
        /// Changed on disk but not approved.
        unexpected: Vec<String>,
        /// Approved but not changed on disk.
        missing: Vec<String>,
    },
    /// `applied`: a written path that is not a regular file inside the tree.
    #[error("`{path}`: after applying this is not a regular file inside the tree")]
    NotRegularFile {
        /// The path.
        path: String,
    },
    /// `build`: the patched tree has no engine config.
    #[error(
        "`{path}`: the patched tree has no engine config file here (baseline.engine_config_path)"
    )]
    NoEngineConfig {
        /// The config path.
        path: String,
    },
    /// `build`: the engine config does not parse or a value is out of range.
    #[error("{message}")]
    BadEngineConfig {
        /// The config path.
        path: String,
        /// The engine's message, naming the file, the field and the value.
        message: String,
    },
    /// `build`: the image build of the patched tree's Dockerfile failed.
    #[error("the image build failed: {message}")]
    ImageBuildFailed {
        /// The daemon's message, then the last lines of the build output.
        message: String,
    },
}

/// A path rule of the surface checks (content/submitting.md; the CVEs of issue 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathRule {
    /// Empty path.
    Empty,
    /// Starts with `/`.
    Absolute,
    /// A `..` component.
    ParentComponent,
    /// A `.` or empty component (`a/./b`, `a//b`, trailing `/`).
    DotOrEmptyComponent,
    /// A backslash, which Windows reads as a separator.
    Backslash,
    /// A colon: a drive letter or an NTFS stream (`file::$DATA`).
    Colon,
    /// A control character (tab, newline, DEL …).
    ControlCharacter,
    /// A component that names, or can alias on some filesystem, `.git` (CVE-2014-9390).
    GitDirAlias,
}

impl fmt::Display for PathRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PathRule::Empty => "empty path",
            PathRule::Absolute => "absolute paths are not accepted; use a path relative to the repository root",
            PathRule::ParentComponent => "`..` components are not accepted (path traversal)",
            PathRule::DotOrEmptyComponent => "`.` and empty components are not accepted",
            PathRule::Backslash => "backslashes are not accepted in paths (a separator on Windows)",
            PathRule::Colon => "colons are not accepted in paths (drive letters and NTFS streams)",
            PathRule::ControlCharacter => "control characters are not accepted in paths",
            PathRule::GitDirAlias => "a component names or aliases `.git` (any case, trailing dots or spaces, NTFS short name `git~1`, streams, ignorable Unicode code points); the repository directory cannot be written",
        })
    }
}

/// `` `path`, hunk n (`@@ … @@`): `` for [`Violation::DoesNotApply`], or less when less is
/// known.
fn apply_location(path: Option<&str>, hunk: Option<usize>, header: Option<&str>) -> String {
    match (path, hunk, header) {
        (Some(path), Some(hunk), Some(header)) => format!("`{path}`, hunk {hunk} (`{header}`): "),
        (Some(path), Some(hunk), None) => format!("`{path}`, hunk {hunk}: "),
        (Some(path), None, _) => format!("`{path}`: "),
        (None, _, _) => String::new(),
    }
}

impl Violation {
    /// The gate this violation rejects at.
    pub fn gate(&self) -> Gate {
        use Violation::*;
        match self {
            CommitmentMismatch { .. } | TooLarge { .. } => Gate::Fetched,
            UnregisteredMiner { .. }
            | BlobMismatch { .. }
            | MissingInBaseline { .. }
            | ExistsInBaseline { .. }
            | NewFileWithPreimage { .. } => Gate::Verified,
            DoesNotApply { .. } | ChangedSetMismatch { .. } | NotRegularFile { .. } => {
                Gate::Applied
            }
            NoEngineConfig { .. } | BadEngineConfig { .. } | ImageBuildFailed { .. } => Gate::Build,
            _ => Gate::SurfaceOk,
        }
    }

    /// The reason recorded on the submission: the gate, then the rule with its path.
    pub fn reason(&self) -> String {
        format!("{}: {self}", self.gate())
    }

    /// How specific the violation is, most specific first (0): whole-diff verdicts, which
    /// come alone; what a path may be (the repository directory, traversal, denied
    /// globs); what may be written there (modes, symlinks and files on the way, binaries,
    /// duplicates); the lookups in the pinned baseline; the text's agreement with
    /// libgit2's parse, whose message says least about what to fix; the later gates.
    pub fn rank(&self) -> u8 {
        use Violation::*;
        match self {
            CommitmentMismatch { .. }
            | UnregisteredMiner { .. }
            | Empty
            | TooLarge { .. }
            | LineTooLong { .. }
            | NulByte { .. }
            | Unparseable { .. } => 0,
            BadPath { .. } | InvalidUtf8Path { .. } | DeniedPath { .. } => 1,
            SpecialMode { .. }
            | UnknownMode { .. }
            | ModeNotAllowed { .. }
            | ThroughSymlink { .. }
            | ThroughFile { .. }
            | Binary { .. }
            | DuplicatePath { .. }
            | UnsupportedChange { .. } => 2,
            BlobMismatch { .. }
            | MissingInBaseline { .. }
            | ExistsInBaseline { .. }
            | NewFileWithPreimage { .. } => 3,
            HeaderMismatch { .. } | Malformed { .. } => 4,
            DoesNotApply { .. }
            | ChangedSetMismatch { .. }
            | NotRegularFile { .. }
            | NoEngineConfig { .. }
            | BadEngineConfig { .. }
            | ImageBuildFailed { .. } => 5,
        }
    }
}

/// At most this many violations are spelled out in a recorded reason; the rest are
/// counted.
pub const MAX_LISTED_VIOLATIONS: usize = 20;

/// Every violation found in a diff, most specific first ([`Violation::rank`]; equal ranks
/// in the order of the diff). Never empty.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violations(Vec<Violation>);

impl Violations {
    /// The violations of `found`, ordered most specific first; `None` when it is empty.
    pub fn new(mut found: Vec<Violation>) -> Option<Self> {
        if found.is_empty() {
            return None;
        }
        found.sort_by_key(Violation::rank);
        Some(Self(found))
    }

    /// One violation.
    pub fn one(violation: Violation) -> Self {
        Self(vec![violation])
    }

    /// The most specific violation.
    pub fn first(&self) -> &Violation {
        &self.0[0]
    }

    /// Every violation, most specific first.
    pub fn all(&self) -> &[Violation] {
        &self.0
    }

    /// The gate the submission is rejected at: the earliest, in pipeline order, that any
    /// of the violations belongs to (a diff whose blob ids do not match is never
    /// `verified`, whatever else it breaks).
    pub fn gate(&self) -> Gate {
        self.0
            .iter()
            .map(Violation::gate)
            .min_by_key(|gate| gate_order(*gate))
            .unwrap_or(Gate::SurfaceOk)
    }

    /// The reason recorded on the submission: the gate, then the one violation, or the
    /// count and every violation (at most [`MAX_LISTED_VIOLATIONS`] spelled out), most
    /// specific first. Raw text: a diff path in it is data; human output escapes it
    /// (`receipts::text::escape_untrusted`).
    pub fn reason(&self) -> String {
        let gate = self.gate();
        if let [only] = self.0.as_slice() {
            return format!("{gate}: {only}");
        }
        let listed: Vec<String> = self
            .0
            .iter()
            .take(MAX_LISTED_VIOLATIONS)
            .enumerate()
            .map(|(i, v)| format!("({}) {v}", i + 1))
            .collect();
        let more = self.0.len().saturating_sub(MAX_LISTED_VIOLATIONS);
        let more = if more > 0 {
            format!("; and {more} more")
        } else {
            String::new()
        };
        format!(
            "{gate}: {} problems, most specific first: {}{more}",
            self.0.len(),
            listed.join("; ")
        )
    }
}

impl From<Violation> for Violations {
    fn from(violation: Violation) -> Self {
        Self::one(violation)
    }
}

impl fmt::Display for Violations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason())
    }
}

impl std::error::Error for Violations {}

/// The pipeline order of the gates.
fn gate_order(gate: Gate) -> u8 {
    match gate {
        Gate::Fetched => 0,
        Gate::Verified => 1,
        Gate::SurfaceOk => 2,
        Gate::Applied => 3,
        Gate::Build => 4,
        Gate::Review => 5,
    }
}

/// Errors of the gate machinery itself (not of the diff): the baseline repository is
/// missing or broken, a directory cannot be written. A diff is never the cause.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    /// A git operation on the baseline repository failed.
    #[error("{action} in `{repo}`")]
    Git {
        /// What was being done.
        action: String,
        /// The repository.
        repo: PathBuf,
        /// libgit2's error.
        #[source]
        source: git2::Error,
    },
    /// An I/O error on `path`.
    /// An I/O error on a named file.
    #[error(transparent)]
    Io(#[from] IoError),
    /// A stored submission no longer passes its gates (`prepare_tree`). The message shows
    /// the violations' diff paths escaped (`receipts::text::escape_untrusted`).
    #[error(
        "stored diff `{}` fails its gates now: {}",
        .path.display(),
        escape_untrusted(&.violations.to_string())
    )]
    Rejected {
        /// The stored diff.
        path: PathBuf,
        /// Every violation, most specific first.
        violations: Violations,
    },
    /// The destination of a checkout is not an empty directory.
    #[error("`{path}` must be an empty or missing directory")]
    DestinationNotEmpty {
        /// The destination.
        path: PathBuf,
    },
    /// A `surface.denied_paths` glob that does not compile.
    #[error("surface.denied_paths: glob `{pattern}` does not compile: {message}")]
    DeniedGlob {
        /// The pattern.
        pattern: String,
        /// globset's message.
        message: String,
    },
    /// The data directory could not be read.
    #[error(transparent)]
    Data(#[from] receipts::layout::DataError),
    /// A repository submission's fetched tree could not be checked out as reviewed
    /// (`prepare_tree` of a repository campaign).
    #[error(transparent)]
    Checkout(#[from] crate::repository::checkout::CheckoutError),
}

/// Either the diff broke a rule (a [`Violation`], recorded on the submission) or the
/// machinery failed (a [`GateError`], reported to the evaluator).
#[derive(Debug, thiserror::Error)]
pub enum GateOutcomeError {
    /// The diff broke a rule.
    #[error(transparent)]
    Violation(#[from] Violation),
    /// The machinery failed.
    #[error(transparent)]
    Gate(#[from] GateError),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Violation {
        Violation::HeaderMismatch {
            line: 1,
            expected: "diff --git a/x b/x".into(),
            found: "diff --git a/y b/y".into(),
        }
    }

    fn git_dir() -> Violation {
        Violation::BadPath {
            path: ".git/hooks/x".into(),
            rule: PathRule::GitDirAlias,
        }
    }

    #[test]
    fn most_specific_first_at_the_earliest_gate() {
        let blob = Violation::MissingInBaseline {
            path: "docs/x".into(),
            commit: "c".into(),
        };
        let all = Violations::new(vec![header(), blob.clone(), git_dir()]).unwrap();
        assert_eq!(all.all(), [git_dir(), blob, header()]);
        assert_eq!(all.gate(), Gate::Verified);
        let reason = all.reason();
        assert!(
            reason.starts_with("verified: 3 problems, most specific first: (1) `.git/hooks/x`: "),
            "{reason}"
        );
        assert!(reason.contains("; (3) line 1: the header says"), "{reason}");
        assert_eq!(Violations::new(Vec::new()), None);
    }

    #[test]
    fn one_violation_reads_as_before_and_long_lists_are_counted() {
        assert_eq!(
            Violations::one(Violation::Empty).reason(),
            "surface_ok: the diff changes no file (empty diff)"
        );
        let many = Violations::new(vec![header(); MAX_LISTED_VIOLATIONS + 3]).unwrap();
        let reason = many.reason();
        assert!(reason.ends_with("; and 3 more"), "{reason}");
        assert!(reason.contains(&format!("({MAX_LISTED_VIOLATIONS}) ")));
        assert!(!reason.contains(&format!("({}) ", MAX_LISTED_VIOLATIONS + 1)));
    }

    #[test]
    fn an_apply_conflict_names_what_it_knows() {
        let conflict = |path: Option<&str>, hunk: Option<usize>, header: Option<&str>| {
            Violation::DoesNotApply {
                commit: "c".into(),
                path: path.map(str::to_owned),
                hunk,
                header: header.map(str::to_owned),
                message: "hunk at line 8 did not apply".into(),
            }
            .to_string()
        };
        assert_eq!(
            conflict(Some("engine.toml"), Some(2), Some("@@ -8 +8 @@")),
            "`engine.toml`, hunk 2 (`@@ -8 +8 @@`): the diff does not apply to the pinned baseline commit `c`: hunk at line 8 did not apply"
        );
        assert_eq!(
            conflict(Some("engine.toml"), None, None),
            "`engine.toml`: the diff does not apply to the pinned baseline commit `c`: hunk at line 8 did not apply"
        );
        assert!(conflict(None, None, None).starts_with("the diff does not apply"));
    }

    #[test]
    fn a_stored_diff_error_escapes_its_paths() {
        let error = GateError::Rejected {
            path: PathBuf::from("submissions/x.diff"),
            violations: Violations::one(Violation::BadPath {
                path: "a\u{1b}[2Jb".into(),
                rule: PathRule::ControlCharacter,
            }),
        };
        let message = error.to_string();
        assert!(message.contains("`a\\u{1b}[2Jb`"), "{message}");
        assert!(!message.contains('\u{1b}'), "{message}");
    }
}
