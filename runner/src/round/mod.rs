//! The round executor (content/rounds.md): takes a campaign's `bench_queued`
//! submissions, runs the steps in order — Setup (hardware fingerprint; seeds drawn from
//! the OS and their commitments signed into the "round opened" statement before any
//! entry runs), then `runs` passes in each of which every seated entry runs once on a
//! fresh engine (the baseline twice, its second run the A/A control) in an order drawn
//! from the committed `passSeed` (`passes`), each entry's correctness outputs on its
//! first run that meets the SLA, then the Scorer and Teardown — then scores the entries
//! on their paired ratios, applies the leader rule and seals the bundle through
//! `receipts`.
//!
//! Every finished run is appended to the journal (`.work/round-<n>/`, fsynced) before
//! the next starts, so [`run_round`] called again after a kill resumes by itself after
//! the last finished run. The bundle is built in `.work/round-<n>/bundle/` and
//! renamed into `rounds/<n>/` only once sealed: a half-written bundle never appears.
//! The round lock (`.round.lock`) keeps two runners apart for the whole round; the records
//! lock (`.lock`) is taken only while seating and scoring challengers, so ingest goes on
//! while a round runs (new submissions wait for the next round). Before a round opens or
//! resumes, the preflight checks refuse an untrusted key, a corrupt `miners.json`, a
//! previous round that does not verify and an edited campaign.
//!
//! The library draws nothing: progress goes through [`RoundProgress`].

pub mod beacon;
mod capability;
mod clock;
pub mod drand;
mod entry;
mod fast;
mod finish;
mod parallel;
mod passes;
mod pod;
mod preflight;
pub mod record;
mod review;
mod scorer;
mod secrets;
mod setup;
mod steps;
mod title;
mod tlog;

use receipts::fsutil::IoError;
use std::fs;
use std::path::{Path, PathBuf};

use receipts::keys::PrivateKey;
use receipts::model::{
    CampaignId, EventKind, FrozenCampaign, Phase, ProbeRecord, RateSearchSpec, RevealedSeeds,
    RoundRecord, Sha256Hex, Step, StepStatus, Timestamp,
};

use crate::journal::{Journal, JournalError};
use engines::isolation::CpuPlan;
use engines::{EngineBackend, EngineSettings};
use intake::store::CampaignStore;
use receipts::layout::{CampaignDir, DataDir, DataError};
use receipts::model::{PassOrder, PassSlot, Seed32, TokenCount};
use receipts::rules::paired::{Attempt, RunOutcome};
use receipts::rules::passes::ScheduledRun;
use receipts::rules::workload::Workload;
use record::{PlannedEntry, Record, SetupRecord};
use steps::{StepRun, Steps};

pub use clock::Clock;
pub use pod::run_pod_pass;
pub use title::RoundKindRequest;

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
    /// Seeds to use instead of deriving them (re-runs and tests): the round is sealed as
    /// `practice` and moves no seat.
    pub seeds: Option<RevealedSeeds>,
    /// The public beacon the seeds derive from with a fresh secret (content/measurement.md,
    /// Seeds); `None`: the seeds are drawn from the OS alone, and the receipt shows it.
    pub beacon: Option<std::sync::Arc<dyn beacon::Beacon>>,
    /// Failpoint for tests: return [`RoundError::Aborted`] right after journal record
    /// `k` (0 = setup) is written, as if the runner were killed there; `k` equal to the
    /// number of records aborts after the bundle is renamed into place, before the
    /// submission records are updated.
    pub abort_after_record: Option<usize>,
    /// The log key (`<key-dir>/log.key`) that appends to the data directory's
    /// transparency log; read only when the data directory has one (`log/config.toml`),
    /// and then required (content/transparency-log.md).
    pub log_key: Option<PathBuf>,
    /// `--require-witness`: before the first entry runs, wait up to this long for a
    /// trusted witness's cosignature on a checkpoint holding the round-opened entry.
    pub require_witness: Option<std::time::Duration>,
    /// The clock every time the receipt records is read from ([`Clock::system`] but in
    /// tests).
    pub clock: Clock,
    /// The evaluator's key paths besides the default key directory (`--key`,
    /// `--key-dir`, the log key): no path an engine sees may hold or lie in one
    /// (content/threat-model.md, The engine's sandbox).
    pub key_paths: Vec<PathBuf>,
    /// `--engine-uid`: the host uid and gid engines run as when the runner is root
    /// (default `engines::sandbox::DEFAULT_ENGINE_UID`).
    pub engine_uid: u32,
    /// `--kind`: a regular round, a confirmation or a re-measurement (content/title.md).
    pub kind: RoundKindRequest,
    /// The sealed capability scorer of an s1-fast-speed campaign (`--sealed-dir`,
    /// content/s1-fast-speed.md); `None` on other tracks (a round of that track without
    /// one records no `fastTrack` and fails verification).
    pub capability: Option<std::sync::Arc<dyn crate::sealed::CapabilityScorer>>,
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
    /// A line about the round in the transparency log (logged, waiting for a witness,
    /// witnessed, proofs written), for people.
    fn log_note(&self, _line: &str) {}
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
    /// The campaign's rate search, as frozen for the round: a throughput at its maximum
    /// is the ceiling, not the engine's limit.
    pub rate_search: RateSearchSpec,
    /// Whether this call resumed a round a killed runner left.
    pub resumed: bool,
    /// The bundle files withheld before sealing because they held the evaluator's or the
    /// log's private key material (bundle-relative paths; content/threat-model.md): not
    /// empty means the key must be rotated, and `referee round` exits non-zero.
    pub withheld: Vec<String>,
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
    /// The beacon gave no value.
    #[error("reading the beacon")]
    Beacon(#[from] beacon::BeaconError),
    /// Signing or sealing failed.
    #[error("sealing round {round}")]
    Seal {
        /// The round.
        round: u64,
        /// The cause.
        #[source]
        source: receipts::bundle::BundleError,
    },
    /// The title does not call for the round `--kind` asked for, or the campaign's chain
    /// derives no title (content/title.md).
    #[error("the title: {message}")]
    Title {
        /// Why.
        message: String,
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
    /// The signing key is not trusted now by the keyring (content/receipts.md §Keys): `verify`
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
    /// The round's own verifier refuses the bundle it just sealed (content/rounds.md,
    /// Sealing): nothing was moved into `rounds/<n>/`, the journal still ends before
    /// `Sealed`, and the next `referee round` resumes this one.
    #[error(
        "round {round}'s sealed bundle `{bundle}` does not verify ({}); it was not published",
        failures.join("; ")
    )]
    SealRefused {
        /// The round.
        round: u64,
        /// The sealed bundle, still in `.work/`.
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
        /// Its digest now (boxed, as is `frozen`: a `Result` of a round stays small).
        digest: Box<Sha256Hex>,
        /// The digest the previous round's receipt records.
        frozen: Box<Sha256Hex>,
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
    /// The next round number is already named by a submission's record (a round outcome
    /// event): a round of that number ran, and its sealed bundle is missing from
    /// `rounds/`. Reusing the number would open a second, different round under it.
    #[error(
        "round {round} is named by submission `{submission}` (its `{state}` event), but `rounds/{round}` is not sealed in the data directory: a round number is never reused (restore the round's bundle into `rounds/{round}`)"
    )]
    RoundNumberUsed {
        /// The round number that would have been reused.
        round: u64,
        /// The submission whose record names it.
        submission: Sha256Hex,
        /// The state its event moved to.
        state: &'static str,
    },
    /// The load client could not keep its schedule against a null server at the
    /// campaign's maximum rate (content/measurement.md, Open loop): every probe near that
    /// rate would measure the client, not the engine, so the round did not open; nothing
    /// was sealed and no submission was seated.
    #[error(
        "round {round} did not open: {refusal}; run the round on a dedicated client machine \
         (more CPUs for the load client), or give the campaign a larger \
         `rate_search.send_lag_bound_us`"
    )]
    ClientTooSlow {
        /// The round.
        round: u64,
        /// What the self-test missed: the bound, by how much, the rate and the requests
        /// in flight.
        refusal: loadgen::selftest::SelfTestRefusal,
    },
    /// The load client's self-test could not run (its null server or client would not
    /// start).
    #[error("round {round}: running the load client's self-test")]
    SelfTest {
        /// The round.
        round: u64,
        /// The cause.
        #[source]
        source: loadgen::LoadError,
    },
    /// The data directory's transparency log could not be read or appended to.
    #[error(transparent)]
    Log(#[from] intake::tlog::LogError),
    /// The round cannot be logged: the log key is missing or wrong, or
    /// `--require-witness` has no log or no witness key to wait for.
    #[error("refusing to open the round: {reason}")]
    LogKey {
        /// What is missing or wrong.
        reason: String,
    },
    /// `--require-witness`: no trusted witness cosigned a checkpoint holding the
    /// round-opened entry within the bound; no entry ran.
    #[error(
        "round {round} is opened and logged at index {index}, but no trusted witness cosigned a checkpoint holding it within {waited_s} s; no entry ran: have a witness run `referee log witness`, then run the same command to resume"
    )]
    NotWitnessed {
        /// The round.
        round: u64,
        /// The round-opened entry's index.
        index: u64,
        /// How long the round waited, seconds.
        waited_s: u64,
    },
    /// The round's pod could not be rented, set up, used or released (content/pods.md).
    #[error(transparent)]
    Pod(#[from] crate::pod::PodError),
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
    let logger = tlog::open_logger(options, key, &keyring, &frozen.campaign.effective_log())?;
    let round = pick_round(&campaign_dir)?;
    let work = campaign_dir.work_dir().join(format!("round-{round}"));
    let bundle = work.join("bundle");
    fs::create_dir_all(&bundle).map_err(io("creating", &bundle))?;
    // The round's work directory survives a crash with the journal in it (the journal
    // syncs its own entry in it).
    for dir in [campaign_dir.work_dir(), campaign_dir.root().to_path_buf()] {
        receipts::fsutil::sync_dir(&dir).map_err(io("syncing", &dir))?;
    }
    let (backend, cpus) = engine_backend(options, &frozen, &work)?;
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
    // The load generator runs on the client's CPUs, beside the engine: every thread of
    // this process is pinned there now, before the round's runtime is built, since a
    // thread inherits its affinity from the thread that creates it — the runtime's
    // workers, and the load client's own runtime, which `loadgen` builds inside
    // `block_on` on this thread (where the load's top-level future runs too). Engines
    // are forked from this thread and set their own CPUs before their exec. The guard
    // gives the CPUs back when the round ends, after the runtimes (declared before them).
    let _pinned = ClientPinning::new(cpus.clone())?;
    let runtime = round_runtime(&work)?;
    let resumed = !records.is_empty();
    let next_step = records.iter().map(record_steps).sum::<usize>();
    let prompt_source = campaign_dir.load_prompt_source(&frozen.campaign)?;
    let steps = Steps::new(
        progress,
        options.clock.clone(),
        bundle.clone(),
        u32::try_from(next_step).unwrap_or(u32::MAX),
    );
    let mut ctx = Ctx {
        options,
        key,
        frozen,
        campaign_dir,
        prompt_source,
        previous,
        keyring,
        round,
        work,
        bundle,
        runtime,
        progress,
        setup: None,
        logger,
        round_log: None,
        steps,
        engines: Engines::new(backend, cpus),
        journal: Journaled {
            journal,
            records,
            abort_after: options.abort_after_record,
        },
        produced: scorer::Produced::default(),
    };
    progress.round_started(round, ctx.journal.records.len());
    let finished = ctx.run()?;
    Ok(RoundSummary {
        round,
        bundle: ctx.campaign_dir.round_dir(round),
        statement_digest: finished.statement_digest,
        record: finished.record,
        withheld: finished.withheld.into_iter().map(|f| f.path).collect(),
        rate_search: ctx.frozen.campaign.rate_search.clone(),
        resumed,
        wall_ms: u64::try_from(wall.elapsed().as_millis()).unwrap_or(u64::MAX),
        engine_ms: ctx.engines.ms(),
    })
}

/// The round's engine backend, its leftovers of a killed runner swept, and the CPU plan
/// splitting this machine between the engines and the load generator. Engines are
/// sandboxed (an allow-list: no path they see holds the data directory or a key) and
/// pinned apart from the load generator (content/threat-model.md, content/measurement.md).
///
/// Errors: [`RoundError::Backend`] when the sandbox or the backend cannot be set up,
/// [`RoundError::Io`] when the CPUs cannot be read.
fn engine_backend(
    options: &RoundOptions,
    frozen: &FrozenCampaign,
    work: &Path,
) -> Result<(Box<dyn EngineBackend>, CpuPlan), RoundError> {
    let cpus = if frozen.campaign.pins_cpus() {
        engines::isolation::CpuPlan::for_this_process()?
    } else {
        engines::isolation::CpuPlan::unpinned_for_this_process()?
    };
    let confinement = engines::Confinement {
        sandbox: engines::sandbox::Sandbox::detect(
            frozen.campaign.backend.kind(),
            frozen.campaign.trusts_engines(),
            options.engine_uid,
        )
        .map_err(engines::EngineError::from)?,
        hidden: std::iter::once(options.data.root().to_path_buf())
            .chain(receipts::layout::default_key_dir())
            .chain(options.key_paths.iter().cloned())
            .collect(),
        ro_paths: (frozen.campaign.backend.ro_paths().iter())
            .map(PathBuf::from)
            .collect(),
        cpus: cpus.clone(),
        log_bytes: frozen.campaign.effective_limits().engine_log_bytes,
    };
    let backend = engines::backend_for(
        &frozen.campaign.backend,
        EngineSettings {
            program: options.engine_program.clone(),
            memory_limit_mb: frozen.campaign.hardware.memory_limit_mb,
            threads: confinement
                .cpus
                .engine_threads(frozen.campaign.hardware.engine_threads),
            served_model_name: frozen.campaign.model.name.clone(),
            pid_file: work.join("engines.pid"),
            confinement,
            // A decision sidecar is ready on its contract's health route.
            readiness: match &frozen.campaign.decide {
                Some(decide) => vec![decide.health_path.clone()],
                None => frozen.campaign.api_profile().readiness,
            },
            env: frozen.campaign.api_profile().env,
            baseline_image: frozen.campaign.baseline.image.clone(),
            decide: (frozen.campaign.decide.as_ref()).map(|decide| decide.decisions.clone()),
        },
    )?;
    // Leftover engines of a killed runner go first, then the launch directories it left.
    backend.sweep_leftovers();
    engines::sandbox::sweep_stale_host_dirs().map_err(engines::EngineError::from)?;
    Ok((backend, cpus))
}

/// The round's async runtime: two workers, on the client's CPUs (made after
/// [`ClientPinning`], so its threads inherit them).
///
/// Errors: [`RoundError::Io`] when it cannot be started.
fn round_runtime(work: &Path) -> Result<tokio::runtime::Runtime, RoundError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(io("starting the async runtime for", work))
}

/// The round to run: the one a killed runner left in `.work/`, else the next number.
///
/// Errors: [`RoundError::Io`] when `.work/` exists but cannot be listed (an entry that
/// cannot be read could be the round a killed runner left: skipping it would open a new
/// round next to it).
fn pick_round(campaign_dir: &CampaignDir) -> Result<u64, RoundError> {
    let work = campaign_dir.work_dir();
    let mut pending: Vec<u64> = Vec::new();
    match fs::read_dir(&work) {
        Ok(entries) => {
            for entry in entries {
                let entry = entry.map_err(io("listing", &work))?;
                let number = entry
                    .file_name()
                    .to_str()
                    .and_then(|name| name.strip_prefix("round-"))
                    .and_then(|n| n.parse::<u64>().ok().filter(|v| v.to_string() == n));
                if let Some(n) = number {
                    pending.push(n);
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io("listing", &work)(e)),
    }
    pending.sort_unstable();
    if let Some(n) = pending.first() {
        return Ok(*n);
    }
    let next = campaign_dir.round_numbers()?.last().copied().unwrap_or(0) + 1;
    // The highest round any submission's record names: a number at or above `next`
    // belongs to a round whose bundle is gone.
    let mut named: Option<(u64, Sha256Hex, &'static str)> = None;
    for submission in campaign_dir.list_submissions()? {
        for event in &submission.events {
            if let EventKind::Transition {
                to,
                round: Some(round),
                ..
            } = event.kind
                && round >= next
                && named.as_ref().is_none_or(|(r, _, _)| round > *r)
            {
                named = Some((round, submission.sha256, to.as_str()));
            }
        }
    }
    match named {
        Some((round, submission, state)) => Err(RoundError::RoundNumberUsed {
            round,
            submission,
            state,
        }),
        None => Ok(next),
    }
}

/// The load generator's CPUs for the length of a round: [`CpuPlan::pin_client`] when
/// made, [`CpuPlan::unpin_client`] when dropped.
struct ClientPinning(CpuPlan);

impl ClientPinning {
    /// Pins every thread of this process to the plan's client CPUs.
    ///
    /// Errors: [`RoundError::Io`] naming the thread that could not be pinned.
    fn new(plan: CpuPlan) -> Result<Self, RoundError> {
        plan.pin_client()?;
        Ok(Self(plan))
    }
}

impl Drop for ClientPinning {
    fn drop(&mut self) {
        // Best effort: a thread that cannot be given its CPUs back only keeps a later
        // round of this process on fewer CPUs, which that round's plan then records.
        let _ = self.0.unpin_client();
    }
}

/// Steps a journal record holds.
fn record_steps(record: &Record) -> usize {
    match record {
        Record::Setup(r) => r.steps.len(),
        Record::Entry(r) => r.steps.len(),
        Record::Scorer(r) => r.steps.len(),
        Record::Teardown(r) => r.steps.len(),
        Record::Pod(r) => r.steps.len(),
        Record::Withheld(_) | Record::Sealed(_) => 0,
    }
}

/// Everything a round's groups share: the round's inputs and places, and its parts —
/// the steps ([`Steps`]), the engines ([`Engines`]), the journal ([`Journaled`]) and
/// what this process produced ([`scorer::Produced`]).
pub(crate) struct Ctx<'a> {
    options: &'a RoundOptions,
    key: &'a PrivateKey,
    /// The frozen campaign and its digest.
    frozen: FrozenCampaign,
    campaign_dir: CampaignDir,
    /// The bytes of the campaign's JSONL prompt source, read once; `None` for generated
    /// prompts.
    prompt_source: Option<Vec<u8>>,
    /// The verified previous round.
    previous: preflight::Previous,
    /// The data directory's keyring: what the sealed bundle is verified against.
    keyring: receipts::keys::Keyring,
    round: u64,
    /// `.work/round-<n>/`.
    work: PathBuf,
    /// `.work/round-<n>/bundle/`.
    bundle: PathBuf,
    runtime: tokio::runtime::Runtime,
    progress: &'a dyn RoundProgress,
    setup: Option<SetupRecord>,
    /// The data directory's transparency log, when it has one.
    logger: Option<tlog::RoundLogger>,
    /// The round in the log (after setup): what the receipt records.
    round_log: Option<receipts::model::RoundLog>,
    /// The round's steps.
    steps: Steps<'a>,
    /// The round's engines.
    engines: Engines,
    /// The round's journal.
    journal: Journaled,
    /// What this process produced for later groups, kept in memory.
    produced: scorer::Produced,
}

/// The round's engine backend, how the CPUs are split between the engines and the load
/// generator, and the time its engines ran.
pub(crate) struct Engines {
    backend: Box<dyn EngineBackend>,
    cpus: CpuPlan,
    /// Time engines ran in this call (start to stop), ms.
    ms: std::cell::Cell<u64>,
    /// When the running engine was started.
    since: std::cell::Cell<Option<std::time::Instant>>,
}

impl Engines {
    fn new(backend: Box<dyn EngineBackend>, cpus: CpuPlan) -> Self {
        Self {
            backend,
            cpus,
            ms: std::cell::Cell::new(0),
            since: std::cell::Cell::new(None),
        }
    }

    /// An engine is about to start: engine time counts from now.
    fn started(&self) {
        self.since.set(Some(std::time::Instant::now()));
    }

    /// The engine stopped (or never started): adds its running time.
    fn stopped(&self) {
        if let Some(since) = self.since.take() {
            let ms = u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX);
            self.ms.set(self.ms.get().saturating_add(ms));
        }
    }

    /// Time engines ran in this call, ms.
    fn ms(&self) -> u64 {
        self.ms.get()
    }

    /// Engines ran `ms` for this call on a pod (the agent's count of a run).
    fn ran_elsewhere(&self, ms: u64) {
        self.ms.set(self.ms.get().saturating_add(ms));
    }
}

/// The round's journal and the records in it: read back on resume, appended as groups
/// end.
pub(crate) struct Journaled {
    journal: Journal<Record>,
    records: Vec<Record>,
    /// [`RoundOptions::abort_after_record`].
    abort_after: Option<usize>,
}

impl Journaled {
    /// Appends a record (fsynced), then fires the failpoint if it names this record.
    fn append(&mut self, record: Record) -> Result<(), RoundError> {
        self.journal.append(&record)?;
        self.records.push(record);
        self.failpoint(self.records.len() - 1)
    }

    fn failpoint(&self, position: usize) -> Result<(), RoundError> {
        if self.abort_after == Some(position) {
            return Err(RoundError::Aborted { after: position });
        }
        Ok(())
    }

    /// The journaled runs of entry `index`, in journal order (re-runs after the runs
    /// they replace).
    fn entry_runs(&self, index: u32) -> impl Iterator<Item = &record::EntryRecord> {
        self.records.iter().filter_map(move |r| match r {
            Record::Entry(e) if e.index == index => Some(e.as_ref()),
            _ => None,
        })
    }

    /// The run of entry `index` that took its correctness outputs (or tried to), if any.
    fn outputs_record(&self, index: u32) -> Option<&record::EntryRecord> {
        self.entry_runs(index).find(|e| e.result.took_outputs())
    }
}

impl Ctx<'_> {
    /// Runs the groups not yet journaled — setup, every run of every pass, the scorer,
    /// teardown — then seals and finishes.
    fn run(&mut self) -> Result<finish::Finished, RoundError> {
        if let Some(Record::Setup(setup)) = self.journal.records.first() {
            self.setup = Some(setup.as_ref().clone());
        } else {
            let setup = setup::run_setup(self)?;
            self.setup = Some(setup.clone());
            self.journal.append(Record::Setup(Box::new(setup)))?;
        }
        let entries = self
            .setup
            .as_ref()
            .map(|s| s.entries.clone())
            .unwrap_or_default();
        // Logged (and witnessed, when required) before any entry runs; a beacon round
        // logged it before reading the beacon.
        if self.round_log.is_none() {
            self.round_log = Some(tlog::open_round(self, &entries)?);
        }
        self.steps.seat(&entries);
        // A baseline engine lacking what the round needs runs no entry: the round is
        // sealed `infra_failed` naming the feature (content/engines.md).
        let schedule = if self.capability_failure().is_some() {
            Vec::new()
        } else {
            self.schedule(&entries)?
        };
        let mut done: Vec<passes::RunDone> = (self.journal.records)
            .iter()
            .filter_map(|r| match r {
                Record::Entry(e) => Some(passes::run_done(e)),
                _ => None,
            })
            .collect();
        match pod::rented_pod(self) {
            // A rented pod runs the entries; it is released before the scorer runs here.
            Some(spec) => {
                let mut runs = pod::PodRuns::new(self, spec);
                let ran = passes::run_passes(&schedule, &mut done, &mut runs);
                let released = runs.release();
                ran.and(released)?;
            }
            None => passes::run_passes(
                &schedule,
                &mut done,
                &mut EngineRuns {
                    ctx: self,
                    entries: &entries,
                },
            )?,
        }
        if !(self.journal.records.iter()).any(|r| matches!(r, Record::Scorer(_))) {
            let scorer = scorer::score(self, &entries)?;
            self.journal.append(Record::Scorer(scorer))?;
        }
        if !(self.journal.records)
            .iter()
            .any(|r| matches!(r, Record::Teardown(_)))
        {
            let mut step = (self.steps).begin("Teardown", "Releasing the machine", Phase::Teardown);
            let hardware = engines::hardware::fingerprint();
            step.line(&format!(
                "hardware at teardown: {}",
                serde_json::to_string(&hardware)
                    .unwrap_or_else(|e| format!("(not serialisable: {e})"))
            ));
            let steps = vec![self.steps.finish(step, StepStatus::Ok)?];
            self.journal
                .append(Record::Teardown(record::TeardownRecord { steps, hardware }))?;
        }
        finish::seal_and_finish(self)
    }

    /// Every run of the round in the order they run: the campaign's `pass_order` over
    /// its `runs` passes, drawn from the round's `passSeed`; a round whose seeds carry
    /// none (seeds of a round sealed before v3, given again) runs in entry order.
    /// A parallel campaign's passes run wave after wave ([`parallel::Layout::in_waves`]).
    ///
    /// Errors: [`RoundError::Record`] when a parallel campaign's placement cannot be
    /// drawn (an edited campaign).
    fn schedule(&self, entries: &[PlannedEntry]) -> Result<Vec<ScheduledRun>, RoundError> {
        let (order, seed) = self.pass_plan();
        let count = u32::try_from(entries.len()).unwrap_or(u32::MAX);
        let runs =
            receipts::rules::passes::schedule(order, &seed, self.frozen.campaign.runs, count);
        match self.layout()? {
            None => Ok(runs),
            Some(layout) => layout
                .in_waves(&seed, runs, &self.pass_orders(entries))
                .map_err(|e| self.record_error(&e)),
        }
    }

    /// A parallel campaign's layout on the machine setup fingerprinted; `None` for a
    /// serial campaign.
    ///
    /// Errors: [`RoundError::Record`] when its lanes are fewer than 2 (an edited
    /// campaign).
    fn layout(&self) -> Result<Option<parallel::Layout>, RoundError> {
        let hardware = self.setup.as_ref().map(|s| &s.hardware);
        match hardware {
            None => Ok(None),
            Some(hardware) => parallel::Layout::of(&self.frozen.campaign, hardware)
                .map_err(|e| self.record_error(&e)),
        }
    }

    /// A round record that cannot be made, with `error` as its message.
    fn record_error(&self, error: &dyn std::error::Error) -> RoundError {
        RoundError::Record {
            round: self.round,
            message: error.to_string(),
        }
    }

    /// Each pass's recorded order ([`receipts::rules::passes::order_of_pass`]), as
    /// [`Ctx::schedule`] runs them.
    fn pass_orders(&self, entries: &[PlannedEntry]) -> Vec<Vec<PassSlot>> {
        let (order, seed) = self.pass_plan();
        let count = u32::try_from(entries.len()).unwrap_or(u32::MAX);
        (0..self.frozen.campaign.runs)
            .map(|pass| receipts::rules::passes::order_of_pass(order, &seed, pass, count))
            .collect()
    }

    /// The order of the round's passes and the seed it is drawn from.
    fn pass_plan(&self) -> (PassOrder, Seed32) {
        let pass_seed = self.setup.as_ref().and_then(|s| s.seeds.pass_seed.as_ref());
        match pass_seed {
            Some(reveal) => (self.frozen.campaign.effective_pass_order(), reveal.seed),
            None => (PassOrder::Sequential, Seed32([0; 32])),
        }
    }

    /// The round's failure when a baseline run got no token ids at all
    /// ([`receipts::rules::outcome::without_token_ids`] over its probes, first in journal
    /// order): the runner cannot count this engine's tokens. Never under
    /// `token_count = "usage"`, where ids are not asked for.
    fn baseline_without_token_ids(&self) -> Option<receipts::model::RoundFailure> {
        if self.frozen.campaign.api_profile().token_count == TokenCount::Usage {
            return None;
        }
        self.journal
            .entry_runs(0)
            .find_map(|run| match &run.result {
                record::EntryResult::Measured { measurement, .. } => {
                    measurement.runs.iter().find_map(|r| {
                        let requests = receipts::rules::outcome::without_token_ids(&r.probes)?;
                        Some(receipts::model::RoundFailure::NoTokenIds {
                            pass: run.pass,
                            control: run.control,
                            requests,
                        })
                    })
                }
                _ => None,
            })
    }

    /// The capability probe's failure (its first missing finding), when setup's probe
    /// found one.
    fn capability_failure(&self) -> Option<receipts::model::RoundFailure> {
        self.setup
            .as_ref()
            .and_then(|s| s.capability_probe.as_ref())
            .and_then(capability::failure)
    }

    /// The round record's `tokenCount`: the engine API profile's counting mode when it is
    /// not `ids` (`usage`: the engines' self-reported `usage.completion_tokens`;
    /// `logprobs`: streamed logprob entries), else absent.
    fn self_reported_tokens(&self) -> Option<TokenCount> {
        let mode = self.frozen.campaign.api_profile().token_count;
        (mode != TokenCount::Ids).then_some(mode)
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
}

/// The round's engines as the pass loop's [`passes::RunExecutor`]: each attempt runs on
/// a fresh engine and is journaled before the next starts.
struct EngineRuns<'c, 'a> {
    ctx: &'c mut Ctx<'a>,
    entries: &'c [PlannedEntry],
}

impl passes::RunExecutor for EngineRuns<'_, '_> {
    type Error = RoundError;

    fn run(&mut self, run: ScheduledRun, attempt: Attempt) -> Result<RunOutcome, RoundError> {
        let record = run_scheduled(self.ctx, self.entries, run, attempt)?;
        let outcome = passes::outcome_of(&record);
        self.ctx.journal.append(Record::Entry(Box::new(record)))?;
        Ok(outcome)
    }

    fn pass_ended(&mut self, pass: u32) -> Result<(), RoundError> {
        tlog::log_pass(self.ctx, pass)
    }
}

/// Runs `attempt` of the scheduled `run` of one of `entries` on a fresh engine of this
/// machine and returns its journal record, not yet journaled: the one seam every executor
/// of the pass loop runs a run through (the evaluator's own machine, a pod's agent).
///
/// Errors: [`RoundError::Record`] when the schedule names an entry not seated; what
/// stops [`entry::run_entry`].
fn run_scheduled(
    ctx: &mut Ctx<'_>,
    entries: &[PlannedEntry],
    run: ScheduledRun,
    attempt: Attempt,
) -> Result<record::EntryRecord, RoundError> {
    let planned = entries
        .iter()
        .find(|e| e.index == run.slot.entry)
        .ok_or_else(|| RoundError::Record {
            round: ctx.round,
            message: format!(
                "the schedule names entry {}, which is not seated",
                run.slot.entry
            ),
        })?;
    // Correctness outputs once per entry, on its first run that meets the SLA.
    let takes_outputs = !run.slot.control && ctx.journal.outputs_record(planned.index).is_none();
    let spec = entry::RunSpec {
        pass: run.pass,
        control: run.slot.control,
        rerun: attempt == Attempt::Rerun,
        takes_outputs,
    };
    entry::run_entry(ctx, planned, &spec)
}

/// The time of a submission's next event: now, or its last event's time when the clock
/// reads earlier, so a record's events never go back in time.
fn next_event_at(submission: &receipts::model::Submission) -> Timestamp {
    let now = Timestamp::now();
    submission
        .events
        .last()
        .map_or(now, |last| std::cmp::max(now, last.at))
}

/// Writes a JSON artifact into the bundle (pretty, trailing newline, atomically).
///
/// Errors: [`DataError::Io`] naming the file (or its directory) that could not be
/// written; the caller fails its step with it, and never names the file.
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

    fn campaign_dir(root: &Path) -> CampaignDir {
        DataDir::new(root).campaign(&"tiny".parse().unwrap())
    }

    /// A submission of patch `sha` to campaign `tiny` by `miner` at `at`, taken through
    /// intake to `bench_queued` and assigned to round `round`.
    pub(crate) fn assigned(
        sha: &Sha256Hex,
        miner: receipts::model::MinerId,
        round: u64,
        at: Timestamp,
    ) -> receipts::model::Submission {
        use receipts::model::{PipelineState, Submission};
        let mut submission =
            Submission::committed(*sha, "tiny".parse().unwrap(), miner, *sha, 6, at);
        for to in [
            PipelineState::PickedUp,
            PipelineState::Fetched,
            PipelineState::Verified,
            PipelineState::SurfaceOk,
            PipelineState::Applied,
            PipelineState::Building,
            PipelineState::Built,
            PipelineState::BenchQueued,
        ] {
            submission.transition(to, at, "test").unwrap();
        }
        submission
            .round_transition(PipelineState::RoundAssigned, round, at, format!("r{round}"))
            .unwrap();
        submission
    }

    /// Regression: a `.work/` that could not be listed was taken for an empty one, so the
    /// round a killed runner left there was skipped and a new one opened beside it.
    #[test]
    fn an_unlistable_work_directory_is_an_error_not_no_pending_round() {
        let dir = tempfile::tempdir().unwrap();
        let campaign = campaign_dir(dir.path());
        fs::create_dir_all(campaign.rounds_dir().join("1")).unwrap();
        // No `.work/` yet: the next number.
        assert_eq!(pick_round(&campaign).unwrap(), 2);
        // A pending round is resumed; names that only look like one are not.
        fs::create_dir_all(campaign.work_dir().join("round-2")).unwrap();
        fs::create_dir_all(campaign.work_dir().join("round-01")).unwrap();
        fs::create_dir_all(campaign.work_dir().join("round-x")).unwrap();
        assert_eq!(pick_round(&campaign).unwrap(), 2);
        // `.work` that cannot be listed (here: not a directory).
        fs::remove_dir_all(campaign.work_dir()).unwrap();
        fs::write(campaign.work_dir(), b"").unwrap();
        match pick_round(&campaign) {
            Err(RoundError::Io(e)) => {
                assert_eq!(e.action, "listing");
                assert_eq!(e.path, campaign.work_dir());
            }
            other => panic!("expected an I/O error listing .work, got {other:?}"),
        }
    }

    /// Regression: with the sealed bundle of round 2 deleted, `round` reused the number 2
    /// with new seeds although a submission's record names round 2.
    #[test]
    fn a_round_number_a_submission_names_is_never_reused() {
        use receipts::model::PipelineState;
        let dir = tempfile::tempdir().unwrap();
        let campaign = campaign_dir(dir.path());
        fs::create_dir_all(campaign.rounds_dir().join("1")).unwrap();
        let sha = Sha256Hex::digest(b"a diff");
        let mut submission = assigned(&sha, "miner-a".parse().unwrap(), 1, Timestamp::now());
        intake::store::write_json(&campaign.submission_json(&sha), &submission).unwrap();
        // Round 1 is sealed: its number is behind us.
        assert_eq!(pick_round(&campaign).unwrap(), 2);
        submission
            .round_transition(PipelineState::InfraFailed, 1, Timestamp::now(), "r1")
            .unwrap();
        submission.requeue(Timestamp::now(), "again").unwrap();
        submission
            .round_transition(PipelineState::RoundAssigned, 2, Timestamp::now(), "r2")
            .unwrap();
        intake::store::write_json(&campaign.submission_json(&sha), &submission).unwrap();
        match pick_round(&campaign) {
            Err(e @ RoundError::RoundNumberUsed { round: 2, .. }) => {
                let message = e.to_string();
                assert!(message.contains("round 2"), "{message}");
                assert!(message.contains(sha.as_str()), "{message}");
            }
            other => panic!("expected the round number to be refused, got {other:?}"),
        }
        // Once round 2 is back in place, the next one is 3.
        fs::create_dir_all(campaign.rounds_dir().join("2")).unwrap();
        assert_eq!(pick_round(&campaign).unwrap(), 3);
    }
}
