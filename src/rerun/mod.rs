//! `referee verify --rerun` (content/verifying.md, Re-running a round): reproduce a
//! sealed round/v3 to v9 receipt and say what held. The original bundle is verified
//! first; then a scratch data directory is built from the bundle's own inputs — its frozen
//! campaign copy, `miners.json`, the pinned baseline commit out of `--baseline` and each
//! recorded diff (`inputs/patches/`) ingested through intake's gates — and the runner
//! runs a round there on the revealed seeds, so the request sequence, the pass order and
//! the correctness items are the original's. Each entry is compared with its original
//! (`compare`): the request-sequence digest exactly, the engine config the diff makes,
//! the status, the correctness verdict and per-item distances, the paired score within a
//! tolerance derived from both rounds' noise floors, and the seat recomputed from the
//! re-run's passes with the original's roles. With a key the result is sealed into a
//! rerun bundle (`bundle`).
//!
//! This lives in the binary's package because it needs both the runner and the verifier
//! (ARCHITECTURE.md, Invariants); the library draws nothing: progress goes through
//! [`RoundProgress`].

mod bundle;
mod compare;
mod plan;
mod scratch;

use std::path::{Path, PathBuf};

use receipts::bundle::{ENVELOPE_FILE, MAX_ENVELOPE_BYTES};
use receipts::dsse::Envelope;
use receipts::fsutil::{IoError, read_limited};
use receipts::keys::{Keyring, PrivateKey};
use receipts::layout::{CAMPAIGN_INPUT, DataError};
use receipts::model::{
    Comparison, FrozenCampaign, ORIGINAL_STATEMENT_FILE, OriginalReceipt, ROUND_PREDICATE_TYPE,
    ROUND_PREDICATE_TYPE_V3, ROUND_PREDICATE_TYPE_V4, ROUND_PREDICATE_TYPE_V5,
    ROUND_PREDICATE_TYPE_V6, ROUND_PREDICATE_TYPE_V7, ROUND_PREDICATE_TYPE_V8, RerunRecord,
    RerunVerdict, RoundRecord, SpeedTolerance, Timestamp, Tool,
};
use receipts::rules::rerun::{overall_verdict, speed_tolerance};
use receipts::statement::{PredicateText, Statement};
use runner::round::{RoundOptions, RoundProgress, run_round};
use verifier::{VerifyOptions, VerifyReport};

pub use bundle::{default_out, write_bundle};
use plan::Plan;

/// How to re-run a bundle.
#[derive(Clone, Debug)]
pub struct RerunOptions<'a> {
    /// The sealed round bundle.
    pub bundle: PathBuf,
    /// The keys the original must verify against.
    pub keyring: &'a Keyring,
    /// How to verify it.
    pub verify: VerifyOptions,
    /// The baseline git repository holding the pinned commit; `None`: the campaign's
    /// `baseline.git` of the data directory the bundle lies in, when that campaign has
    /// the receipt's digest.
    pub baseline: Option<PathBuf>,
    /// Which entries to re-run (`baseline`, a slug such as `candidate-1-miner-a`, a miner
    /// id, or at least 4 hex characters of a patch's sha256); empty: all. The baseline
    /// always runs: every paired score is against it.
    pub entries: Vec<String>,
    /// The `referee` executable the built-in backend runs as `referee engine serve`.
    pub engine_program: PathBuf,
}

/// A finished re-run: its record, and what a rerun bundle is made of.
#[derive(Debug)]
pub struct Rerun {
    /// What it found.
    pub record: RerunRecord,
    /// The original Statement's bytes.
    original_statement: Vec<u8>,
    /// The re-run's own round bundle in the scratch directory, when it ran one.
    rerun_bundle: Option<(PathBuf, Box<RoundRecord>)>,
    /// The scratch data directory (removed when this is dropped).
    _scratch: scratch::Scratch,
}

impl Rerun {
    /// The exit code of `referee verify --rerun` for this verdict: 0 GOOD or NOISY, 1
    /// BAD, 3 FAIL, and 3 when nothing could be re-run (UNKWN).
    pub fn exit_code(&self) -> u8 {
        match self.record.verdict {
            RerunVerdict::Good | RerunVerdict::Noisy => 0,
            RerunVerdict::Bad => 1,
            RerunVerdict::Fail | RerunVerdict::Unkwn => 3,
        }
    }
}

/// Why a re-run could not be made (a re-run that breaks is a FAIL verdict instead).
#[derive(Debug, thiserror::Error)]
pub enum RerunError {
    /// The original bundle does not verify: nothing it claims is worth reproducing.
    #[error("`{bundle}` does not verify ({} checks failed): run `referee verify` on it", report.failures().count())]
    Unverified {
        /// The bundle.
        bundle: PathBuf,
        /// Its verification report.
        report: Box<VerifyReport>,
    },
    /// The bundle is not a round/v3 to v9 receipt.
    #[error(
        "`{bundle}` holds a `{found}` statement: --rerun re-runs rounds sealed as {ROUND_PREDICATE_TYPE_V3}, {ROUND_PREDICATE_TYPE_V4}, {ROUND_PREDICATE_TYPE_V5}, {ROUND_PREDICATE_TYPE_V6}, {ROUND_PREDICATE_TYPE_V7}, {ROUND_PREDICATE_TYPE_V8} or {ROUND_PREDICATE_TYPE}"
    )]
    NotRerunnable {
        /// The bundle.
        bundle: PathBuf,
        /// Its predicate type.
        found: String,
    },
    /// No baseline repository was given and none was found next to the bundle.
    #[error(
        "no baseline repository: pass --baseline <repo> (the bundle does not lie in a data directory whose campaign `{campaign}` has the receipt's digest)"
    )]
    NoBaseline {
        /// The receipt's campaign id.
        campaign: String,
    },
    /// An `--entries` selector that names no entry, or several.
    #[error("--entries `{selector}`: {why}")]
    Selector {
        /// The selector.
        selector: String,
        /// What is wrong.
        why: String,
    },
    /// The scratch data directory could not be set up (the baseline repository lacks
    /// the pinned commit, a registry does not parse, …).
    #[error("setting up the re-run's data directory")]
    Setup(#[source] intake::ingest::IngestError),
    /// A file of the original bundle or of the re-run.
    #[error(transparent)]
    Data(#[from] DataError),
    /// An I/O error on a named file.
    #[error(transparent)]
    Io(#[from] IoError),
    /// The rerun bundle's directory exists already.
    #[error("`{path}` exists: a rerun bundle is never overwritten (pass --out <dir>)")]
    OutExists {
        /// The directory.
        path: PathBuf,
    },
    /// Sealing the rerun bundle failed.
    #[error("sealing the rerun bundle `{dir}`")]
    Seal {
        /// Its directory.
        dir: PathBuf,
        /// The cause.
        #[source]
        source: receipts::bundle::BundleError,
    },
    /// The scratch key could not be drawn, or the scratch keyring trusting it written.
    #[error("the re-run's scratch key")]
    Key(#[source] receipts::keys::KeyError),
}

/// Re-runs the round sealed in `options.bundle` (module doc) and compares.
///
/// Errors: [`RerunError`] when the re-run cannot be made: the original does not verify
/// or is not a round/v3 to v9 receipt, no baseline repository, a bad `--entries`
/// selector, the scratch directory cannot be set up. A re-run that breaks (an engine that will not
/// start, a round that stops) is a FAIL verdict, not an error.
pub fn rerun(
    options: &RerunOptions<'_>,
    progress: &dyn RoundProgress,
) -> Result<Rerun, RerunError> {
    let started_at = Timestamp::now();
    let dir = &options.bundle;
    let report = verifier::verify_bundle(dir, options.keyring, &options.verify);
    if !report.passed() {
        return Err(RerunError::Unverified {
            bundle: dir.clone(),
            report: Box::new(report),
        });
    }
    let (statement_bytes, original) = read_original(dir)?;
    let found = report.predicate_type.clone().unwrap_or_default();
    // v4 only requires what late v3 builds recorded, v5, v6 and v7 only add records: all re-run
    // alike.
    let rerunnable = [
        ROUND_PREDICATE_TYPE_V3,
        ROUND_PREDICATE_TYPE_V4,
        ROUND_PREDICATE_TYPE_V5,
        ROUND_PREDICATE_TYPE_V6,
        ROUND_PREDICATE_TYPE_V7,
        ROUND_PREDICATE_TYPE_V8,
        ROUND_PREDICATE_TYPE,
    ];
    if !rerunnable.contains(&found.as_str()) {
        return Err(RerunError::NotRerunnable {
            bundle: dir.clone(),
            found,
        });
    }
    let campaign_path = dir.join(CAMPAIGN_INPUT);
    let campaign_bytes =
        std::fs::read(&campaign_path).map_err(IoError::at("reading", &campaign_path))?;
    let frozen = FrozenCampaign::from_json(CAMPAIGN_INPUT, &campaign_bytes).map_err(|e| {
        DataError::Parse {
            path: campaign_path.clone(),
            message: e.to_string(),
        }
    })?;
    let plans = plan::plan_entries(&original, &frozen.campaign, &options.entries)?;
    let baseline = match &options.baseline {
        Some(repo) => repo.clone(),
        None => {
            scratch::baseline_next_to(dir, &original).ok_or_else(|| RerunError::NoBaseline {
                campaign: original.campaign.id.to_string(),
            })?
        }
    };

    let scratch = scratch::Scratch::create()?;
    let key = PrivateKey::generate().map_err(RerunError::Key)?;
    let mut plans = plans;
    let inner = if plans.iter().all(|p| matches!(p, Plan::Skip(_))) {
        Inner::NotRun
    } else {
        let campaign_dir = scratch.prepare(dir, &frozen, &baseline, &key)?;
        for (entry, plan) in original.entries.iter().zip(plans.iter_mut()) {
            if matches!(plan, Plan::Run)
                && entry.patch.is_some()
                && let Some(rejection) = scratch::ingest_entry(&campaign_dir, dir, entry)?
            {
                *plan = Plan::Broke(rejection);
            }
        }
        let round_options = RoundOptions {
            data: scratch.data(),
            campaign: original.campaign.id.clone(),
            engine_program: options.engine_program.clone(),
            seeds: Some(original.seeds.clone()),
            beacon: None,
            abort_after_record: None,
            // The scratch data directory has no log: a re-run publishes nothing.
            log_key: None,
            require_witness: None,
            clock: runner::round::Clock::system(),
            // The re-run's key is generated in memory: no key file to keep from engines.
            key_paths: Vec::new(),
            engine_uid: engines::sandbox::DEFAULT_ENGINE_UID,
            kind: runner::round::RoundKindRequest::Regular,
            // A re-run compares what the bundle's own files determine; the sealed items
            // are the evaluator's alone.
            capability: None,
        };
        match run_round(&round_options, &key, progress) {
            Ok(summary) => Inner::Ran(summary.bundle, Box::new(summary.record)),
            Err(error) => Inner::Stopped(error_chain(&error)),
        }
    };

    let (rerun_bundle, round, entries, tolerance) = match inner {
        Inner::Ran(bundle, record) => {
            let sides = compare::Sides {
                original: &original,
                original_dir: dir,
                rerun: &record,
                rerun_dir: &bundle,
                frozen: &frozen,
            };
            let tolerance = sides.tolerance();
            let entries = compare::compare_entries(&sides, &plans, &tolerance);
            let round = compare::compare_round(&sides, &entries, &tolerance);
            (Some((bundle, record)), round, entries, tolerance)
        }
        Inner::Stopped(why) => {
            let round = Comparison {
                verdict: RerunVerdict::Fail,
                reason: Some(format!("the re-run round stopped: {why}")),
                findings: Vec::new(),
            };
            let entries = compare::not_compared(&original, &plans, true);
            (None, round, entries, original_tolerance(&original, &frozen))
        }
        Inner::NotRun => {
            let round = Comparison {
                verdict: RerunVerdict::Unkwn,
                reason: Some("no entry could be re-run".to_owned()),
                findings: Vec::new(),
            };
            let entries = compare::not_compared(&original, &plans, false);
            (None, round, entries, original_tolerance(&original, &frozen))
        }
    };
    let verdict = overall_verdict(&round, entries.iter().map(|e| &e.comparison));
    let inner_record = rerun_bundle.as_ref().map(|(_, r)| r);
    let record = RerunRecord {
        original: OriginalReceipt {
            statement: ORIGINAL_STATEMENT_FILE.to_owned(),
            statement_digest: receipts::model::Sha256Hex::digest(&statement_bytes),
            predicate_type: found,
            campaign: original.campaign.clone(),
            round: original.round,
            signed_by: report.signed_by.clone(),
        },
        tool: tool(),
        hardware: inner_record.map(|r| r.hardware.at_start.clone()),
        started_at,
        ended_at: Timestamp::now(),
        request_sequence_digest: inner_record.map(|r| r.request_sequence_digest),
        tolerance,
        noise: inner_record.and_then(|r| r.noise),
        round,
        entries,
        verdict,
    };
    Ok(Rerun {
        record,
        original_statement: statement_bytes,
        rerun_bundle,
        _scratch: scratch,
    })
}

/// The tolerance of a re-run that measured nothing: the original's spread alone gives
/// none, so the campaign's drift bound, capped at its margin.
fn original_tolerance(original: &RoundRecord, frozen: &FrozenCampaign) -> SpeedTolerance {
    speed_tolerance(
        original.noise.as_ref().and_then(|n| n.aa_spread_bp),
        None,
        frozen.campaign.drift_bound_bp,
        frozen.campaign.overtake_margin_bp,
    )
}

/// What became of the re-run's own round.
enum Inner {
    /// It ran and was sealed: its bundle and record.
    Ran(PathBuf, Box<RoundRecord>),
    /// It stopped before it was sealed: why.
    Stopped(String),
    /// Nothing could run (every entry skipped).
    NotRun,
}

/// The original's Statement bytes and round record (the bundle verified already).
///
/// Errors: [`DataError`] naming the envelope.
fn read_original(dir: &Path) -> Result<(Vec<u8>, RoundRecord), RerunError> {
    let path = dir.join(ENVELOPE_FILE);
    let bytes = read_limited(&path, MAX_ENVELOPE_BYTES).map_err(IoError::at("reading", &path))?;
    let parse = |message: String| DataError::Parse {
        path: path.clone(),
        message,
    };
    let envelope =
        Envelope::from_json(&bytes, MAX_ENVELOPE_BYTES).map_err(|e| parse(e.to_string()))?;
    let statement: Statement<PredicateText> = serde_json::from_slice(&envelope.payload)
        .map_err(|e| parse(format!("its statement: {e}")))?;
    let record: RoundRecord = statement
        .predicate_as()
        .map_err(|e| parse(format!("its round predicate: {e}")))?;
    Ok((envelope.payload, record))
}

/// This build, as a rerun record names it.
fn tool() -> Tool {
    Tool {
        name: "referee".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        git_commit: option_env!("REFEREE_GIT_COMMIT")
            .unwrap_or("unknown")
            .into(),
        cpu_features: engines::hardware::cpu_features(),
    }
}

/// An error and its causes in one line: `a: b: c`.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
