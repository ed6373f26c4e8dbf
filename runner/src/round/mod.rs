//! The round executor (DESIGN.md §3–5; the finished round of `003_5c846bb873ff4c44.txt`):
//! takes a campaign's `bench_queued` submissions, runs the steps of 003 in order —
//! Setup (hardware fingerprint; seeds drawn from the OS and their commitments signed
//! into the "round opened" statement before any entry runs), Baseline, Incumbent (the
//! leader, if any), each Candidate, Scorer, Drift baseline, Teardown — then scores,
//! applies the leader rule and seals the bundle through `receipts`.
//!
//! Every finished group of steps is appended to the journal (`.work/round-<n>/`, fsynced)
//! before the next starts, so [`run_round`] called again after a kill resumes by itself
//! after the last finished group. The bundle is built in `.work/round-<n>/bundle/` and
//! renamed into `rounds/<n>/` only once sealed: a half-written bundle never appears.
//! The round lock (`.round.lock`) keeps two runners apart for the whole round; the records
//! lock (`.lock`) is taken only while seating and scoring challengers, so ingest goes on
//! while a round runs (new submissions wait for the next round). Before a round opens or
//! resumes, the
//! preflight checks refuse an untrusted key, a corrupt `miners.json`, a previous round
//! that does not verify and an edited campaign.
//!
//! The library draws nothing: progress goes through [`RoundProgress`].

mod entry;
mod finish;
mod preflight;
pub mod record;
mod setup;

use receipts::fsutil::IoError;
use std::fs;
use std::path::{Path, PathBuf};

use receipts::keys::PrivateKey;
use receipts::model::{
    CampaignId, FrozenCampaign, Phase, ProbeRecord, RevealedSeeds, RoundRecord, Sha256Hex, Step,
    StepStatus, Timestamp,
};

use crate::journal::{Journal, JournalError};
use engines::{EngineBackend, EngineSettings};
use intake::store::CampaignStore;
use receipts::layout::{CampaignDir, DataDir, DataError};
use receipts::rules::workload::Workload;
use record::{PlannedEntry, Record, SetupRecord};

/// How to run a round.
#[derive(Clone, Debug)]
pub struct RoundOptions {
    /// The data directory.
    pub data: DataDir,
    /// The campaign.
    pub campaign: CampaignId,
    /// The `referee` executable the built-in backend runs as `referee engine serve`
    /// (normally `std::env::current_exe()`).
    pub engine_program: PathBuf,
    /// Seeds to use instead of drawing fresh ones from the OS (re-runs and tests).
    pub seeds: Option<RevealedSeeds>,
    /// Failpoint for tests: return [`RoundError::Aborted`] right after journal record
    /// `k` (0 = setup) is written, as if the runner were killed there; `k` equal to the
    /// number of records aborts after the bundle is renamed into place, before the
    /// submission records are updated.
    pub abort_after_record: Option<usize>,
}

/// Reports a round's progress. Every method has an empty default.
pub trait RoundProgress: Sync {
    /// The round starts (or resumes with `resumed_groups` groups already journaled).
    fn round_started(&self, _round: u64, _resumed_groups: usize) {}
    /// A step starts.
    fn step_started(&self, _index: u32, _group: &str, _name: &str) {}
    /// A step ended.
    fn step_finished(&self, _step: &Step) {}
    /// A probe of the rate search ended.
    fn probe_finished(&self, _record: &ProbeRecord) {}
}

/// What a finished round produced.
#[derive(Clone, Debug)]
pub struct RoundSummary {
    /// The round number.
    pub round: u64,
    /// `rounds/<n>/`.
    pub bundle: PathBuf,
    /// sha256 of the Statement (the next round's `previousReceipt`).
    pub statement_digest: Sha256Hex,
    /// The sealed predicate.
    pub record: RoundRecord,
    /// Whether this call resumed a round a killed runner left.
    pub resumed: bool,
    /// Wall time of this call, ms.
    pub wall_ms: u64,
    /// Time engines ran in this call, from each `start` to its `stop`, ms: `wall_ms` minus
    /// it is the orchestration overhead (setup, trees, scoring arithmetic, sealing).
    pub engine_ms: u64,
}

/// Errors that stop a round (a failing entry never does: it gets a typed status).
#[derive(Debug, thiserror::Error)]
pub enum RoundError {
    /// The data directory: missing campaign, lock held, unreadable record.
    #[error(transparent)]
    Data(#[from] DataError),
    /// The campaign's engine backend cannot run here.
    #[error(transparent)]
    Backend(#[from] engines::EngineError),
    /// The journal.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// A file of the round.
    /// An I/O error on a named file.
    #[error(transparent)]
    Io(#[from] IoError),
    /// The workload could not be built from the seeds.
    #[error("building the round's workload")]
    Workload(#[from] receipts::rules::workload::WorkloadError),
    /// The operating system could not supply random seeds.
    #[error("drawing seeds from the operating system")]
    Seeds(#[source] rand_core::Error),
    /// Signing or sealing failed.
    #[error("sealing round {round}")]
    Seal {
        /// The round.
        round: u64,
        /// The cause.
        #[source]
        source: receipts::bundle::BundleError,
    },
    /// A record could not be produced (e.g. canonical JSON).
    #[error("round {round}: {message}")]
    Record {
        /// The round.
        round: u64,
        /// What failed.
        message: String,
    },
    /// The signing key is not one of the campaign's `evaluator_keyids`.
    #[error("key `{keyid}` is not among the campaign's evaluator_keyids")]
    KeyNotAllowed {
        /// The key's keyid.
        keyid: String,
    },
    /// The data directory's keyring could not be read.
    #[error("reading the keyring `{path}`")]
    Keyring {
        /// `data/keyring.json`.
        path: PathBuf,
        /// The cause.
        #[source]
        source: receipts::keys::KeyError,
    },
    /// The signing key is not trusted now by the keyring (RECEIPTS.md §Keys): `verify`
    /// would reject the round it signs.
    #[error("key `{keyid}` is not trusted by the keyring `{keyring}`: {why}")]
    KeyNotTrusted {
        /// The key's keyid.
        keyid: String,
        /// `data/keyring.json`.
        keyring: PathBuf,
        /// Why: not in it, or outside its validity window.
        why: String,
    },
    /// The previous round's bundle does not verify against the keyring: its seat and
    /// Statement digest cannot be taken.
    #[error(
        "the previous round `{bundle}` does not verify against the data directory's keyring \
         ({}); refusing to open a round on it",
        failures.join("; ")
    )]
    PreviousUnverified {
        /// Its bundle.
        bundle: PathBuf,
        /// Every failed check: `name[ `target`]: reason`.
        failures: Vec<String>,
    },
    /// `campaign.toml` changed since the previous round ran.
    #[error(
        "`{path}` has campaign digest {digest}, but round {round} ran under {frozen}: \
         campaigns are frozen once a round has run"
    )]
    CampaignChanged {
        /// `campaign.toml`.
        path: PathBuf,
        /// Its digest now.
        digest: Sha256Hex,
        /// The digest the previous round's receipt records.
        frozen: Sha256Hex,
        /// The previous round.
        round: u64,
    },
    /// A resumed round was opened by a different key.
    #[error(
        "round {round} was opened (round-opened statement signed) by key `{opened_by}`; \
         resume it with that key, not `{given}`"
    )]
    KeyChanged {
        /// The round.
        round: u64,
        /// The keyid that signed the round-opened statement.
        opened_by: String,
        /// The keyid given now.
        given: String,
    },
    /// The failpoint of [`RoundOptions::abort_after_record`] fired.
    #[error("aborted by the failpoint after journal record {after}")]
    Aborted {
        /// The record after which it fired.
        after: usize,
    },
}

/// Runs (or resumes) the next round of `options.campaign`, signed with `key`.
///
/// Before the round opens (or resumes) it refuses, writing nothing: a key the keyring
/// does not trust now or outside the campaign's `evaluator_keyids`, a `miners.json` that
/// does not parse, a previous round whose bundle does not verify against the keyring, a
/// `campaign.toml` whose digest differs from the previous round's, and on resume a key
/// other than the one that signed the round-opened statement.
///
/// Errors: [`RoundError`] for anything that stops the round itself (the refusals above,
/// no campaign, lock held, journal or bundle I/O, signing); a failing entry is a typed
/// status instead.
pub fn run_round(
    options: &RoundOptions,
    key: &PrivateKey,
    progress: &dyn RoundProgress,
) -> Result<RoundSummary, RoundError> {
    let wall = std::time::Instant::now();
    let campaign_dir = options.data.campaign(&options.campaign);
    // The round lock keeps two runners apart for the whole round; the records lock is
    // taken only while seating and scoring, so ingest goes on during a round.
    let _round_lock = campaign_dir.lock_rounds()?;
    let frozen = campaign_dir.load_campaign()?;
    // Refusals come before anything of the round is written.
    let now = Timestamp::now();
    let keyring = preflight::check_key(&options.data, &frozen.campaign, key, now)?;
    campaign_dir.load_miners()?;
    let previous = preflight::check_previous(&campaign_dir, &frozen, &keyring, now)?;
    let round = pick_round(&campaign_dir)?;
    let work = campaign_dir.work_dir().join(format!("round-{round}"));
    let bundle = work.join("bundle");
    fs::create_dir_all(&bundle).map_err(io("creating", &bundle))?;
    let backend = engines::backend_for(
        &frozen.campaign.backend,
        EngineSettings {
            program: options.engine_program.clone(),
            memory_limit_mb: frozen.campaign.hardware.memory_limit_mb,
            threads: engines::engine_threads(frozen.campaign.hardware.engine_threads),
            served_model_name: frozen.campaign.model.name.clone(),
            pid_file: work.join("engines.pid"),
        },
    )?;
    // Leftover engines of a killed runner go first.
    backend.sweep_leftovers();
    let (journal, records) = Journal::<Record>::open(&work.join("journal.jsonl"))?;
    if let Some(Record::Setup(setup)) = records.first()
        && setup.signer_keyid != key.keyid()
    {
        return Err(RoundError::KeyChanged {
            round,
            opened_by: setup.signer_keyid.clone(),
            given: key.keyid().to_owned(),
        });
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(io("starting the async runtime for", &work))?;
    let resumed = !records.is_empty();
    let next_step = records.iter().map(record_steps).sum::<usize>();
    let prompt_source = campaign_dir.load_prompt_source(&frozen.campaign)?;
    let mut ctx = Ctx {
        options,
        key,
        frozen,
        campaign_dir,
        prompt_source,
        backend,
        previous,
        round,
        work,
        bundle,
        runtime,
        progress,
        next_step: u32::try_from(next_step).unwrap_or(u32::MAX),
        setup: None,
        journal,
        records,
        engine_ms: std::cell::Cell::new(0),
        engine_since: std::cell::Cell::new(None),
    };
    progress.round_started(round, ctx.records.len());
    let sealed = ctx.run()?;
    let (statement_digest, record) = sealed;
    Ok(RoundSummary {
        round,
        bundle: ctx.campaign_dir.round_dir(round),
        statement_digest,
        record,
        resumed,
        wall_ms: u64::try_from(wall.elapsed().as_millis()).unwrap_or(u64::MAX),
        engine_ms: ctx.engine_ms.get(),
    })
}

/// The round to run: the one a killed runner left in `.work/`, else the next number.
fn pick_round(campaign_dir: &CampaignDir) -> Result<u64, RoundError> {
    let work = campaign_dir.work_dir();
    let mut pending: Vec<u64> = match fs::read_dir(&work) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                e.file_name()
                    .to_str()
                    .and_then(|name| name.strip_prefix("round-"))
                    .and_then(|n| n.parse().ok())
            })
            .collect(),
        Err(_) => Vec::new(),
    };
    pending.sort_unstable();
    if let Some(n) = pending.first() {
        return Ok(*n);
    }
    Ok(campaign_dir.round_numbers()?.last().copied().unwrap_or(0) + 1)
}

/// Steps a journal record holds.
fn record_steps(record: &Record) -> usize {
    match record {
        Record::Setup(r) => r.steps.len(),
        Record::Entry(r) => r.steps.len(),
        Record::Scorer(r) => r.steps.len(),
        Record::Teardown(r) => r.steps.len(),
        Record::Sealed(_) => 0,
    }
}

/// Everything a round's steps share.
pub(crate) struct Ctx<'a> {
    options: &'a RoundOptions,
    key: &'a PrivateKey,
    /// The frozen campaign and its digest.
    frozen: FrozenCampaign,
    campaign_dir: CampaignDir,
    /// The bytes of the campaign's JSONL prompt source, read once; `None` for generated
    /// prompts.
    prompt_source: Option<Vec<u8>>,
    /// The campaign's engine backend.
    backend: Box<dyn EngineBackend>,
    /// The verified previous round.
    previous: preflight::Previous,
    round: u64,
    /// `.work/round-<n>/`.
    work: PathBuf,
    /// `.work/round-<n>/bundle/`.
    bundle: PathBuf,
    runtime: tokio::runtime::Runtime,
    progress: &'a dyn RoundProgress,
    next_step: u32,
    setup: Option<SetupRecord>,
    journal: Journal<Record>,
    records: Vec<Record>,
    /// Time engines ran in this call (start to stop), ms.
    engine_ms: std::cell::Cell<u64>,
    /// When the running engine was started.
    engine_since: std::cell::Cell<Option<std::time::Instant>>,
}

impl Ctx<'_> {
    /// Runs the groups not yet journaled, then seals and finishes.
    fn run(&mut self) -> Result<(Sha256Hex, RoundRecord), RoundError> {
        if let Some(Record::Setup(setup)) = self.records.first() {
            self.setup = Some(setup.as_ref().clone());
        } else {
            let setup = setup::run_setup(self)?;
            self.setup = Some(setup.clone());
            self.append(Record::Setup(Box::new(setup)))?;
        }
        let entries = self
            .setup
            .as_ref()
            .map(|s| s.entries.clone())
            .unwrap_or_default();
        for planned in &entries {
            if self
                .entry_record(planned.index, entry::GroupKind::Entry)
                .is_none()
            {
                let record = entry::run_entry(self, planned, entry::GroupKind::Entry);
                self.append(Record::Entry(Box::new(record)))?;
            }
        }
        if !self.records.iter().any(|r| matches!(r, Record::Scorer(_))) {
            let with_outputs: Vec<(PlannedEntry, String)> = entries
                .iter()
                .filter_map(|planned| {
                    self.entry_record(planned.index, entry::GroupKind::Entry)
                        .and_then(|r| match &r.result {
                            record::EntryResult::Measured {
                                outputs: Some(outputs),
                                ..
                            } => Some((planned.clone(), outputs.clone())),
                            _ => None,
                        })
                })
                .collect();
            let scorer = if with_outputs.is_empty() {
                self.skipped_scorer()
            } else {
                entry::run_scorer(self, &with_outputs)
            };
            self.append(Record::Scorer(scorer))?;
        }
        if self
            .entry_record(0, entry::GroupKind::DriftBaseline)
            .is_none()
            && let Some(baseline) = entries.first()
        {
            let record = entry::run_entry(self, baseline, entry::GroupKind::DriftBaseline);
            self.append(Record::Entry(Box::new(record)))?;
        }
        if !self
            .records
            .iter()
            .any(|r| matches!(r, Record::Teardown(_)))
        {
            let mut step = self.begin("Teardown", "Releasing the machine", Phase::Teardown);
            let hardware = engines::hardware::fingerprint();
            step.line(&format!("hardware at teardown: {hardware:?}"));
            let steps = vec![self.finish(step, StepStatus::Ok)];
            self.append(Record::Teardown(record::TeardownRecord { steps, hardware }))?;
        }
        finish::seal_and_finish(self)
    }

    /// Appends a record (fsynced), then fires the failpoint if it names this record.
    fn append(&mut self, record: Record) -> Result<(), RoundError> {
        self.journal.append(&record)?;
        self.records.push(record);
        self.failpoint(self.records.len() - 1)
    }

    fn failpoint(&self, position: usize) -> Result<(), RoundError> {
        if self.options.abort_after_record == Some(position) {
            return Err(RoundError::Aborted { after: position });
        }
        Ok(())
    }

    /// The journaled record of entry `index`'s group of `kind`, when it ran.
    fn entry_record(&self, index: u32, kind: entry::GroupKind) -> Option<&record::EntryRecord> {
        let drift = kind == entry::GroupKind::DriftBaseline;
        self.records.iter().find_map(|r| match r {
            Record::Entry(e) if e.index == index && e.drift == drift => Some(e.as_ref()),
            _ => None,
        })
    }

    /// A scorer group with nothing to score: both steps skipped.
    fn skipped_scorer(&mut self) -> record::ScorerRecord {
        let steps = vec![
            self.skipped(
                "Scorer",
                "Scorer, starting the engine",
                Phase::StartingEngine,
            ),
            self.skipped(
                "Scorer",
                "Scorer, running the shared scorer",
                Phase::Scoring,
            ),
        ];
        record::ScorerRecord {
            steps,
            verdicts: Vec::new(),
            failure: None,
        }
    }

    /// The round's seeds (after setup).
    fn setup_seeds(&self) -> Result<RevealedSeeds, entry::StepError> {
        self.setup
            .as_ref()
            .map(|s| s.seeds.clone())
            .ok_or(entry::StepError::NoSeeds)
    }

    /// This round's workload: the campaign bound to the round's seeds.
    fn workload(&self) -> Result<Workload, entry::StepError> {
        let seeds = self.setup_seeds()?;
        Ok(Workload::new(
            &self.frozen.campaign,
            &seeds,
            self.prompt_source.as_deref(),
        )?)
    }

    /// Starts a step: its index is the next one of the round.
    fn begin(&mut self, group: &str, name: &str, phase: Phase) -> StepRun {
        let index = self.next_step;
        self.next_step += 1;
        self.progress.step_started(index, group, name);
        StepRun {
            index,
            group: group.to_owned(),
            name: name.to_owned(),
            phase,
            started_at: Timestamp::now(),
            lines: Vec::new(),
        }
    }

    /// Ends a step: writes its log into the bundle and reports it.
    fn finish(&mut self, step: StepRun, status: StepStatus) -> Step {
        let ended_at = Timestamp::now();
        let log = format!("logs/steps/{:02}-{}.log", step.index, slugify(&step.name));
        let mut text = format!(
            "{} — {}\nphase: {:?}\nstarted: {}\nended: {}\nstatus: {:?}\n",
            step.group, step.name, step.phase, step.started_at, ended_at, status
        );
        for line in &step.lines {
            text.push_str(line);
            text.push('\n');
        }
        let path = self.bundle.join(&log);
        let written = path
            .parent()
            .map_or(Ok(()), fs::create_dir_all)
            .and_then(|()| receipts::fsutil::write_atomic(&path, text.as_bytes(), 0o644));
        let done = Step {
            index: step.index,
            group: step.group,
            name: step.name,
            phase: step.phase,
            started_at: step.started_at,
            ended_at,
            status,
            log: written.is_ok().then_some(log),
        };
        self.progress.step_finished(&done);
        done
    }

    /// An engine is about to start: engine time counts from now.
    fn engine_started(&self) {
        self.engine_since.set(Some(std::time::Instant::now()));
    }

    /// The engine stopped (or never started): adds its running time.
    fn engine_stopped(&self) {
        if let Some(since) = self.engine_since.take() {
            let ms = u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX);
            self.engine_ms.set(self.engine_ms.get().saturating_add(ms));
        }
    }

    /// A step that did not run.
    fn skipped(&mut self, group: &str, name: &str, phase: Phase) -> Step {
        let step = self.begin(group, name, phase);
        self.finish(step, StepStatus::Skipped)
    }
}

/// A step in progress: its log lines are written when it ends.
pub(crate) struct StepRun {
    index: u32,
    group: String,
    name: String,
    phase: Phase,
    started_at: Timestamp,
    lines: Vec<String>,
}

impl StepRun {
    /// Adds a line to the step's log.
    fn line(&mut self, text: &str) {
        self.lines.push(text.to_owned());
    }
}

/// `Candidate 2 of 5, running SLA` → `candidate-2-of-5-running-sla`.
fn slugify(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_owned()
}

/// Writes a JSON artifact into the bundle (pretty, trailing newline, atomically).
fn write_artifact<T: serde::Serialize>(path: &Path, value: &T) -> Result<(), DataError> {
    intake::store::write_json(path, value)
}

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> RoundError {
    let path = path.to_path_buf();
    move |source| {
        RoundError::Io(IoError {
            action,
            path,
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_names_become_file_names() {
        assert_eq!(
            slugify("Candidate 2 of 5, running SLA"),
            "candidate-2-of-5-running-sla"
        );
        assert_eq!(
            slugify("Scorer, running the shared scorer"),
            "scorer-running-the-shared-scorer"
        );
    }
}
