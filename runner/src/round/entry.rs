//! One run of an entry ([`EntryRun`]): start the engine → healthy or disqualified with
//! its log tail → SLA runs → correctness outputs → stop. A failing step never stops the
//! round: it ends the run through [`EntryRun::fail`] and becomes the entry's typed
//! status. Only a step log that cannot be written does
//! ([`Steps::finish`](super::steps::Steps::finish)): the step would have no record of
//! itself. The step errors shared with the scorer ([`StepError`]) and
//! the tree every engine runs from ([`prepare`]) live here too.
//!
//! Engines are started and stopped here, on the thread that called `run_round` (the
//! round's tokio runtime only drives the load generator and the correctness client):
//! `PR_SET_PDEATHSIG` ties each engine to that thread, which outlives it (engines are
//! not `Send`, and dropping one stops it).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use receipts::fsutil::IoError;
use receipts::model::{
    Backend, CachingProbe, CpuPinning, Disqualification, DisqualificationReason, EntryMeasurement,
    MeasuredFor, MeasurementOutcome, Phase, ProbeRecord, Role, RunTelemetry, Sha256Hex, Step,
    StepStatus, TelemetryFile,
};

use super::record::{EntryRecord, EntryResult, PlannedEntry};
use super::scorer::SavedOutputs;
use super::{Ctx, RoundError, StepRun};
use crate::correctness::{self as gate, CompletionsClient, GateError, KeptRequest, KeptRun};
use crate::decide::{DecideClient, DecideClientError};
use engines::affinity::{self, CpuEscape, EngineProcesses};
use engines::docker::ContainerExit;
use engines::isolation::{self, CpuPlan, CpuTimes};
use engines::telemetry;
use engines::{Engine, EngineError, log_tail};
use loadgen::search::ProgressSink;

/// Why a step of an entry's group, or of the scorer's, could not do its work. The
/// journal and the receipt record it as its message chain ([`error_chain`]) inside a
/// typed entry status.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StepError {
    /// A file of the round.
    #[error(transparent)]
    Io(#[from] IoError),
    /// An artifact of the round could not be written.
    #[error(transparent)]
    Data(#[from] receipts::layout::DataError),
    /// A file of the round that does not parse.
    #[error("parsing `{path}`: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message.
        message: String,
    },
    /// The patched tree could not be prepared.
    #[error("preparing the tree")]
    Tree(#[source] intake::gates::GateError),
    /// The engine could not start or answer.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The load generator could not run.
    #[error(transparent)]
    Load(#[from] loadgen::LoadError),
    /// The correctness outputs or the reference's answers.
    #[error(transparent)]
    Gate(#[from] GateError),
    /// The round's workload could not be built.
    #[error(transparent)]
    Workload(#[from] receipts::rules::workload::WorkloadError),
    /// A step that needs the round's seeds ran before setup (a corrupt journal).
    #[error("the round has no seeds before setup")]
    NoSeeds,
    /// A miner's entry of a Docker campaign whose submission record holds no built
    /// image (`referee build` records one on its way to `bench_queued`).
    #[error(
        "submission {} has no built image on its record: a Docker campaign runs each \
         entry from the image `referee build` recorded for it (content/docker.md)",
        patch.as_ref().map_or_else(|| "(none)".to_owned(), ToString::to_string)
    )]
    NoImage {
        /// The entry's diff.
        patch: Option<Sha256Hex>,
    },
    /// The scorer found no prompt echo of the baseline to check the reference against.
    #[error("the baseline's prompt echo is missing: no entry's echo can be judged")]
    NoBaselineEcho,
    /// A `decide` campaign's sidecar answers, or the run's token.
    #[error(transparent)]
    Decide(#[from] DecideClientError),
    /// A `decide` campaign's contract that does not hold (its template is not JSON).
    #[error(transparent)]
    Contract(#[from] receipts::model::ModelError),
    /// An s1-fast-speed entry's declared resources or sealed capability score.
    #[error(transparent)]
    Fast(#[from] super::fast::FastError),
}

impl StepError {
    /// Whether the entry's engine caused it (its answers to the correctness requests),
    /// rather than the runner: only then is a failed correctness step the entry's
    /// compliance failure; otherwise the entry is `infra_failed`.
    fn is_entrys_fault(&self) -> bool {
        matches!(
            self,
            Self::Gate(
                GateError::Client { .. }
                    | GateError::OutputLength { .. }
                    | GateError::Correctness(_)
                    | GateError::Deadline { .. }
            )
        ) || matches!(self, Self::Decide(e) if e.is_sidecars_fault())
    }

    /// The entry's typed disqualification for a failed correctness step, when it has
    /// one (the deadline; other faults are `compliance_failed` with their message).
    fn disqualification(&self) -> Option<DisqualificationReason> {
        match self {
            Self::Gate(GateError::Deadline { deadline_s, .. })
            | Self::Decide(DecideClientError::Deadline { deadline_s }) => {
                Some(DisqualificationReason::CorrectnessDeadline {
                    deadline_s: *deadline_s,
                })
            }
            _ => None,
        }
    }
}

/// A patched tree ready to serve.
pub(crate) struct Tree {
    pub(crate) root: PathBuf,
    pub(crate) config: PathBuf,
    /// sha256 of its engine config, read once.
    pub(crate) config_sha256: Sha256Hex,
}

/// Which run of an entry a group is: its run in pass `pass` (content/rounds.md, Passes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RunSpec {
    /// The pass, from 0.
    pub pass: u32,
    /// Whether this is the baseline's A/A control run of the pass.
    pub control: bool,
    /// Whether this re-runs an invalid first attempt.
    pub rerun: bool,
    /// Whether the entry's correctness outputs are taken on this run's engine, right
    /// after its SLA run (once per entry: its first run that meets the SLA).
    pub takes_outputs: bool,
}

impl RunSpec {
    /// The run in words, for step names: `pass 2`, `A/A control, pass 1`,
    /// `pass 3, re-run`.
    fn label(&self) -> String {
        let control = if self.control { "A/A control, " } else { "" };
        let rerun = if self.rerun { ", re-run" } else { "" };
        format!("{control}pass {}{rerun}", self.pass + 1)
    }

    /// The run's file-name suffix: `pass-2`, `control-pass-1`, `pass-3-rerun`.
    fn slug(&self) -> String {
        let control = if self.control { "control-" } else { "" };
        let rerun = if self.rerun { "-rerun" } else { "" };
        format!("{control}pass-{}{rerun}", self.pass + 1)
    }
}

/// Runs one entry's run of one pass on a fresh engine: the baseline's (or its A/A
/// control), the incumbent's or a candidate's. Correctness outputs are taken on it when
/// `run.takes_outputs` and its SLA was met. The CPU time the hypervisor stole over its
/// SLA run is recorded (`/proc/stat` before and after); over the campaign's
/// `max_steal_permille` the run is invalid, and its outputs wait for its re-run.
///
/// The engine is stopped before the last step it ran ends, so a log that could not be
/// kept in full fails that step and makes the entry `infra_failed`. A bundle file that
/// cannot be written (the probe log) fails its step the same way and is not named.
///
/// Errors: [`RoundError`] only when a step's own log cannot be written
/// ([`Steps::finish`](super::steps::Steps::finish)); every other failure is the entry's
/// typed status.
pub(crate) fn run_entry(
    ctx: &mut Ctx<'_>,
    planned: &PlannedEntry,
    run: &RunSpec,
) -> Result<EntryRecord, RoundError> {
    EntryRun::new(ctx, planned, *run).run()
}

/// One entry's run in progress: its steps so far and the record they fill in. Every
/// early end goes through [`EntryRun::fail`].
struct EntryRun<'c, 'a> {
    ctx: &'c mut Ctx<'a>,
    planned: &'c PlannedEntry,
    run: RunSpec,
    /// Step names carry the run: `Baseline, A/A control, pass 2`.
    name: String,
    /// The run's file-name stem: `baseline-control-pass-2`.
    slug: String,
    /// The baseline answers too, its prompt echo only: the scorer checks it against the
    /// reference's tokenization before any entry's (content/correctness.md).
    baseline: bool,
    record: EntryRecord,
    steps: Vec<Step>,
    /// The first thread of its engine found allowed outside the engine's CPUs, while it
    /// was measured or after ([`watch_cpus`]): the run is the entry's fault.
    escape: Option<CpuEscape>,
    /// A `decide` campaign's bearer token of this run, given to its engine only.
    token: Option<String>,
}

/// Why an entry's run ended early, as [`EntryRun::fail`] records it.
enum Failure {
    /// The runner (or the load client) failed: `infra_failed` for this reason.
    Infra(String),
    /// The engine died before it was healthy: disqualified.
    DiedBeforeHealthy(Disqualification),
    /// Its weight files are not the campaign's pinned ones: disqualified before its
    /// engine started.
    Weights(Disqualification),
    /// Its decision sidecar answered without the run's token: disqualified before it was
    /// timed.
    Token(Disqualification),
    /// Its measurement was cut short for this reason: the engine crashed when it is no
    /// longer running (disqualified, with its log tail), otherwise the runner failed.
    CutShort(String),
    /// Its engine left its CPU set while it was measured: disqualified (`left_cpu_set`).
    LeftCpuSet(Disqualification),
}

impl<'c, 'a> EntryRun<'c, 'a> {
    fn new(ctx: &'c mut Ctx<'a>, planned: &'c PlannedEntry, run: RunSpec) -> Self {
        let started_at = ctx.options.clock.now();
        let record = EntryRecord::not_run(
            planned.index,
            run.pass,
            run.control,
            run.rerun,
            started_at,
            ctx.engines.backend.kind(),
        );
        Self {
            name: format!("{}, {}", planned.group, run.label()),
            slug: format!("{}-{}", planned.slug, run.slug()),
            baseline: planned.role == Role::Baseline,
            ctx,
            planned,
            run,
            record,
            steps: Vec::new(),
            escape: None,
            token: None,
        }
    }

    /// Starts the engine, measures it and takes its outputs when asked.
    fn run(mut self) -> Result<EntryRecord, RoundError> {
        let Some(mut engine) = self.start()? else {
            return Ok(self.record);
        };
        let Some((sla, measurement)) = self.measure_sla(engine.as_mut())? else {
            return Ok(self.record);
        };
        self.take_outputs_and_stop(engine.as_mut(), sla, measurement)?;
        self.record.steps = self.steps;
        self.record.ended_at = self.ctx.options.clock.now();
        Ok(self.record)
    }

    /// Ends the run at `step` (the engine, if any, stopped first): the step fails, the
    /// entry gets its status for `why`, and the steps it did not reach are skipped.
    ///
    /// Errors: as [`Steps::finish`](super::steps::Steps::finish).
    fn fail(
        &mut self,
        mut step: StepRun,
        engine: Option<&mut dyn Engine>,
        why: Failure,
    ) -> Result<(), RoundError> {
        let result = match (why, engine) {
            (Failure::CutShort(reason), Some(engine)) => {
                stop_after_failure(self.ctx, engine, &mut step, reason)
            }
            (Failure::CutShort(reason) | Failure::Infra(reason), engine) => {
                let mut result = EntryResult::InfraFailed { reason };
                if let Some(engine) = engine {
                    stop_engine(self.ctx, engine, &mut step, &mut result);
                }
                result
            }
            (
                Failure::DiedBeforeHealthy(dq)
                | Failure::LeftCpuSet(dq)
                | Failure::Weights(dq)
                | Failure::Token(dq),
                engine,
            ) => {
                let mut result = EntryResult::Disqualified(dq);
                if let Some(engine) = engine {
                    stop_engine(self.ctx, engine, &mut step, &mut result);
                }
                result
            }
        };
        self.record.result = result;
        let failed_at_start = step.phase == Phase::StartingEngine;
        self.steps
            .push(self.ctx.steps.finish(step, StepStatus::Failed)?);
        self.ctx.engines.stopped();
        if failed_at_start {
            self.skip("running SLA", Phase::RunningSla)?;
        }
        if self.run.takes_outputs {
            self.skip("running correctness", Phase::RunningCorrectness)?;
        }
        self.record.steps = std::mem::take(&mut self.steps);
        self.record.ended_at = self.ctx.options.clock.now();
        Ok(())
    }

    /// What [`watch_cpus`] and [`affinity::cpu_escape`] read for `engine`: its processes
    /// and its CPUs, when it is pinned (unpinned, it shares every CPU with the client and
    /// has nothing to leave) and the backend can say where its processes are.
    fn watched(&self, engine: &dyn Engine) -> Option<(EngineProcesses, Vec<u32>)> {
        let cpus = &self.ctx.engines.cpus;
        (cpus.pinning == CpuPinning::SchedAffinity)
            .then(|| engine.processes())
            .flatten()
            .map(|processes| (processes, cpus.engine.clone()))
    }

    /// The disqualification of a run whose engine left its CPU set (`escape`): its own
    /// client's lag, or its invalid run, is the entry's doing, never the round's
    /// (content/measurement.md, The engine stays on its CPUs).
    fn left_cpu_set(&self, escape: &CpuEscape, engine: &dyn Engine) -> Disqualification {
        Disqualification {
            reason: DisqualificationReason::LeftCpuSet {
                pass: self.run.pass,
                cpu: escape.outside.first().copied().unwrap_or_default(),
            },
            detail: format!("the engine left its CPU set: {escape}"),
            log_tail: log_tail(engine.log_path()),
        }
    }

    /// Starts step `what` of this run.
    fn begin(&mut self, what: &str, phase: Phase) -> StepRun {
        let name = format!("{}, {what}", self.name);
        self.ctx.steps.begin(&self.planned.group, &name, phase)
    }

    /// Records step `what` of this run as skipped.
    fn skip(&mut self, what: &str, phase: Phase) -> Result<(), RoundError> {
        let name = format!("{}, {what}", self.name);
        let step = self.ctx.steps.skipped(&self.planned.group, &name, phase)?;
        self.steps.push(step);
        Ok(())
    }

    /// The start step: the tree, the engine, healthy. Returns the healthy engine, or
    /// `None` when the run ended here.
    fn start(&mut self) -> Result<Option<Box<dyn Engine>>, RoundError> {
        let mut start = self.begin("starting the engine", Phase::StartingEngine);
        let engine_log_rel = format!("logs/engines/{}.log", self.slug);
        let engine_log = self.ctx.bundle.join(&engine_log_rel);
        let probe_log = self.ctx.bundle.join(self.probe_log_rel());
        // A killed run of this group left its logs: the engine log would be appended to,
        // and a probe log this run does not write again would be sealed as if it were its.
        if let Err(error) = remove_stale(&[&engine_log, &probe_log]) {
            let reason = error_chain(&error);
            start.line(&reason);
            self.fail(start, None, Failure::Infra(reason))?;
            return Ok(None);
        }
        let tree = match prepare(
            self.ctx,
            self.planned.patch.as_ref(),
            &format!("trees/{}", self.planned.slug),
        ) {
            Ok(tree) => tree,
            Err(error) => {
                let reason = error_chain(&error);
                start.line(&format!("preparing the tree failed: {reason}"));
                self.fail(start, None, Failure::Infra(reason))?;
                return Ok(None);
            }
        };
        self.record.engine.config_sha256 = tree.config_sha256;
        start.line(&format!(
            "tree `{}`, config sha256 {}",
            tree.root.display(),
            self.record.engine.config_sha256
        ));
        if let Some(failure) = self.check_weights(&tree, &mut start) {
            self.fail(start, None, failure)?;
            return Ok(None);
        }
        // A Docker campaign's miner entry runs the image built for its submission, and
        // nothing else (never the baseline's image with its tree mounted).
        let docker = matches!(self.ctx.frozen.campaign.backend, Backend::Docker(_));
        if docker && !self.baseline && self.planned.image.is_none() {
            let reason = error_chain(&StepError::NoImage {
                patch: self.planned.patch,
            });
            start.line(&reason);
            self.fail(start, None, Failure::Infra(reason))?;
            return Ok(None);
        }
        let mut engine = self.ctx.engines.backend.engine(
            &tree.root,
            &tree.config,
            &engine_log,
            self.planned.image.as_ref(),
        );
        if let Some(image) = &self.planned.image {
            start.line(&format!("image `{}` ({})", image.tag, image.image_id));
        }
        // A decision sidecar gets a fresh token for this run, in its environment only.
        if self.ctx.frozen.campaign.decide.is_some() {
            match give_token(engine.as_mut()) {
                Ok(token) => self.token = Some(token),
                Err(error) => {
                    let reason = error_chain(&error);
                    start.line(&reason);
                    self.fail(start, None, Failure::Infra(reason))?;
                    return Ok(None);
                }
            }
        }
        self.ctx.engines.started();
        let started = engine.start();
        // The log is named only once it exists (a start can fail before opening it).
        self.record.engine_log = engine_log.is_file().then_some(engine_log_rel);
        if let Err(e) = started {
            start.line(&format!("{e}"));
            self.fail(
                start,
                Some(engine.as_mut()),
                Failure::Infra(error_chain(&e)),
            )?;
            return Ok(None);
        }
        self.record_engine(engine.as_ref());
        let deadline = Duration::from_secs(self.ctx.frozen.campaign.health_deadline_s);
        match engine.wait_healthy(deadline) {
            Ok(()) => {
                start.line(&format!(
                    "healthy at {}",
                    engine.endpoint().unwrap_or_default()
                ));
                if let Some(failure) = self.check_token(engine.as_ref(), &mut start) {
                    self.fail(start, Some(engine.as_mut()), failure)?;
                    return Ok(None);
                }
                self.steps
                    .push(self.ctx.steps.finish(start, StepStatus::Ok)?);
                Ok(Some(engine))
            }
            Err(EngineError::DiedBeforeHealthy { detail, log_tail }) => {
                let detail = format!("engine died before becoming healthy ({detail})");
                start.line(&detail);
                let dq = Disqualification {
                    reason: death_reason(
                        engine.container_exit(),
                        DisqualificationReason::EngineDiedBeforeHealthy,
                    ),
                    detail,
                    log_tail,
                };
                let why = Failure::DiedBeforeHealthy(dq);
                self.fail(start, Some(engine.as_mut()), why)?;
                Ok(None)
            }
            Err(e) => {
                start.line(&format!("{e}"));
                self.fail(
                    start,
                    Some(engine.as_mut()),
                    Failure::Infra(error_chain(&e)),
                )?;
                Ok(None)
            }
        }
    }

    /// An s1-pro-speed campaign's weights gate (content/s1-pro-speed.md): the pinned
    /// files, by name, in the entry's tree, hashed and recorded, byte-identical to the
    /// pins. Returns how the run ends when they are not (or cannot be read).
    fn check_weights(&mut self, tree: &Tree, start: &mut StepRun) -> Option<Failure> {
        let campaign = &self.ctx.frozen.campaign;
        if campaign.track != Some(receipts::model::Track::S1ProSpeed) {
            return None;
        }
        let pinned = &campaign.model.weights;
        let found = match crate::weights::hash_named(&tree.root, pinned) {
            Ok(found) => found,
            Err(error) => {
                let reason = error_chain(&error);
                start.line(&format!("hashing the weights failed: {reason}"));
                return Some(Failure::Infra(reason));
            }
        };
        self.record.weights = Some(found.clone());
        match receipts::rules::weights::compare(pinned, &found) {
            Ok(()) => {
                start.line(&format!(
                    "weights: the {} pinned files, byte-identical",
                    found.len()
                ));
                None
            }
            Err(mismatch) => {
                let detail = format!("weights: {mismatch}");
                start.line(&detail);
                Some(Failure::Weights(Disqualification {
                    reason: DisqualificationReason::ComplianceFailed,
                    detail,
                    log_tail: Vec::new(),
                }))
            }
        }
    }

    /// A decision sidecar's token, before it is timed (content/s1-pro-speed.md): the
    /// gate's first item sent without the run's token must be refused with 401, as the
    /// capability probe asks of the baseline ([`super::capability::token_refused`]).
    /// Returns how the run ends when it is not: disqualified `compliance_failed` with what
    /// the sidecar answered; `infra_failed` when the runner cannot ask.
    fn check_token(&mut self, engine: &dyn Engine, start: &mut StepRun) -> Option<Failure> {
        let token = self.token.as_deref()?;
        let endpoint = engine.endpoint().unwrap_or_default();
        let asked = decide_client(self.ctx, &endpoint, token).and_then(|client| {
            let item = self.ctx.workload()?.correctness_items().into_iter().next();
            Ok(item.map(|item| {
                (self.ctx.runtime).block_on(super::capability::token_refused(&client, &item))
            }))
        });
        let finding = match asked {
            Ok(Some(finding)) => finding,
            Ok(None) => return None,
            Err(error) => {
                let reason = error_chain(&error);
                start.line(&format!(
                    "asking the sidecar without its token failed: {reason}"
                ));
                return Some(Failure::Infra(reason));
            }
        };
        let detail = format!("token: {}", finding.detail);
        start.line(&detail);
        (finding.status != receipts::model::FindingStatus::Ok).then(|| {
            Failure::Token(Disqualification {
                reason: DisqualificationReason::ComplianceFailed,
                detail,
                log_tail: Vec::new(),
            })
        })
    }

    /// What the started engine reports about itself, and what the campaign gave it.
    fn record_engine(&mut self, engine: &dyn Engine) {
        let campaign = &self.ctx.frozen.campaign;
        let recorded = &mut self.record.engine;
        recorded.command = engine.command().map(<[String]>::to_vec);
        recorded.isolation = engine.isolation();
        recorded.docker = engine.docker();
        if let Some(docker) = &recorded.docker {
            recorded.memory_limit_mb = Some(campaign.hardware.memory_limit_mb);
            recorded.image =
                docker
                    .manifest_digest
                    .as_ref()
                    .map(|digest| receipts::model::ImageRef {
                        name: engines::docker::image::repository(&docker.image_reference)
                            .to_owned(),
                        manifest_digest: digest.clone(),
                        config_digest: Some(docker.image_id.clone()),
                    });
        }
        if let Backend::Process { .. } = campaign.backend {
            recorded.api = Some(campaign.api_profile().record());
            recorded.memory_limit_mb = Some(campaign.hardware.memory_limit_mb);
        }
    }

    /// The probe log's bundle-relative name.
    fn probe_log_rel(&self) -> String {
        format!("probes/{}.json", self.slug)
    }

    /// Writes the run's telemetry `file` into the bundle (`telemetry/<slug>.json`) and
    /// records its summary under the campaign's `min_sm_clock_mhz`: a violation makes the
    /// run invalid ([`super::passes::outcome_of`]). Returns the step log's line.
    ///
    /// Errors: the file could not be written, as its message chain.
    fn keep_telemetry(&mut self, file: &TelemetryFile) -> Result<String, String> {
        let rel = format!("telemetry/{}.json", self.slug);
        super::write_artifact(&self.ctx.bundle.join(&rel), file).map_err(|e| error_chain(&e))?;
        let min_sm_clock_mhz = self.ctx.frozen.campaign.min_sm_clock_mhz;
        let summary = receipts::rules::telemetry::summarize(file, &rel, min_sm_clock_mhz);
        let line = telemetry_line(&summary);
        self.record.telemetry = Some(summary);
        Ok(line)
    }

    /// The SLA step: the measured runs, the host's steal over them, the probe log, the
    /// kept requests of its result probe (saved for the scorer: every run that enters a
    /// score is sampled). Returns the step (still open: the engine is stopped before it
    /// ends when it is the engine's last) and the measurement, or `None` when the run
    /// ended here.
    fn measure_sla(
        &mut self,
        engine: &mut dyn Engine,
    ) -> Result<Option<(StepRun, EntryMeasurement)>, RoundError> {
        let endpoint = engine.endpoint().unwrap_or_default();
        let mut sla = self.begin("running SLA", Phase::RunningSla);
        // Token ids are kept for the timed-run sample on every run, never for the
        // baseline (it is not judged) nor for a decision (it has none).
        let judged = !self.baseline && self.token.is_none();
        let keep = if judged {
            sample_pool(self.ctx, self.planned.index)
        } else {
            Ok(BTreeSet::new())
        };
        // The host's steal over the measured part: `/proc/stat` sampled around it.
        let before = CpuTimes::now();
        let measuring = std::time::Instant::now();
        let watched = self.watched(engine);
        let ctx = &*self.ctx;
        let token = self.token.as_deref();
        let done = AtomicBool::new(false);
        let run_cpus = ctx.engines.cpus.all();
        let (measured, escape, sampled) = std::thread::scope(|scope| {
            let watcher = watched
                .as_ref()
                .map(|(processes, cpus)| scope.spawn(|| watch_cpus(processes, cpus, &done)));
            // The run's telemetry, sampled beside it until it ends (content/measurement.md,
            // Telemetry).
            let sampler = scope.spawn(|| {
                let interval = Duration::from_millis(telemetry::INTERVAL_MS);
                telemetry::sample_until(&done, &run_cpus, interval)
            });
            let measured = keep.and_then(|keep| {
                let run = (self.run.pass, judged);
                measure(ctx, (&endpoint, token), run, keep, &mut sla)
            });
            done.store(true, Ordering::Relaxed);
            let sampled = sampler.join();
            (
                measured,
                watcher.and_then(|w| w.join().ok().flatten()),
                sampled,
            )
        });
        if let Some(escape) = &escape {
            sla.line(&format!("the engine left its CPU set: {escape}"));
        }
        self.escape = self.escape.take().or(escape);
        let wall_ms = u64::try_from(measuring.elapsed().as_millis()).unwrap_or(u64::MAX);
        match (before, CpuTimes::now()) {
            (Ok(before), Ok(after)) => {
                let bound = self.ctx.frozen.campaign.effective_max_steal_permille();
                let samples = (&before, &after);
                let line = note_host_load(
                    &mut self.record,
                    &self.ctx.engines.cpus,
                    samples,
                    wall_ms,
                    bound,
                );
                sla.line(&line);
            }
            (Err(e), _) | (_, Err(e)) => {
                sla.line(&format!("host load not measured: {}", error_chain(&e)));
            }
        }
        let sampled = match sampled {
            Ok(sampled) => sampled.map_err(|e| error_chain(&e)),
            Err(_) => Err("the telemetry sampler panicked".to_owned()),
        };
        match sampled.and_then(|file| self.keep_telemetry(&file)) {
            Ok(line) => sla.line(&line),
            Err(reason) => {
                sla.line(&format!("telemetry not recorded: {reason}"));
                self.fail(sla, Some(engine), Failure::Infra(reason))?;
                return Ok(None);
            }
        }
        let (mut measurement, kept_runs) = match measured {
            Ok(m) => m,
            Err(error) => {
                let reason = error_chain(&error);
                sla.line(&reason);
                // An engine that left its CPUs cut its own measurement short.
                let why = match &self.escape {
                    Some(escape) => Failure::LeftCpuSet(self.left_cpu_set(escape, engine)),
                    None => Failure::CutShort(reason),
                };
                self.fail(sla, Some(engine), why)?;
                return Ok(None);
            }
        };
        // The log names its run, which the verifier holds against the pass row citing it.
        measurement.measured_for = Some(MeasuredFor {
            round: self.ctx.round,
            entry: self.planned.index,
            patch: self.planned.patch,
            engine_config_sha256: self.record.engine.config_sha256,
            pass: self.run.pass,
            control: self.run.control,
        });
        let probe_log_rel = self.probe_log_rel();
        let probe_log = self.ctx.bundle.join(&probe_log_rel);
        if let Err(e) = super::write_artifact(&probe_log, &measurement) {
            let reason = error_chain(&e);
            sla.line(&format!("writing the probe log failed: {reason}"));
            self.fail(sla, Some(engine), Failure::Infra(reason))?;
            return Ok(None);
        }
        self.record.probe_log = Some(probe_log_rel);
        if !kept_runs.is_empty() {
            match save_kept(self.ctx, &self.slug, kept_runs) {
                Ok((rel, count)) => {
                    sla.line(&format!(
                        "{count} requests of the result probe kept for the timed-run sample"
                    ));
                    self.record.kept = Some(rel);
                }
                Err(error) => {
                    let reason = error_chain(&error);
                    sla.line(&format!("saving the kept requests failed: {reason}"));
                    self.fail(sla, Some(engine), Failure::Infra(reason))?;
                    return Ok(None);
                }
            }
        }
        sla.line(&format!(
            "throughput {} milli-req/s (min {}, max {}), outcome {}",
            opt(measurement.throughput_milli_rps),
            opt(measurement.throughput_min_milli_rps),
            opt(measurement.throughput_max_milli_rps),
            super::steps::outcome_words(measurement.outcome)
        ));
        if !engine.is_running() {
            let reason = "the engine exited during the SLA runs".to_owned();
            self.fail(sla, Some(engine), Failure::CutShort(reason))?;
            return Ok(None);
        }
        Ok(Some((sla, measurement)))
    }

    /// The correctness step when the SLA was met and outputs are wanted (one request at
    /// a time), then the engine stopped before its last step ends: this one, else the
    /// SLA step. Sets the run's result.
    fn take_outputs_and_stop(
        &mut self,
        engine: &mut dyn Engine,
        sla: StepRun,
        measurement: EntryMeasurement,
    ) -> Result<(), RoundError> {
        // A run the host stole from, or whose GPU throttled, is invalid: its outputs wait
        // for its re-run.
        let sla_ok = measurement.outcome == MeasurementOutcome::Measured
            && !self.record.steal_exceeded
            && self.record.telemetry_violation().is_none();
        let takes_outputs = self.run.takes_outputs && sla_ok && self.escape.is_none();
        let mut taken = TakenOutputs::default();
        let (mut last, last_ok) = if takes_outputs {
            self.steps.push(self.ctx.steps.finish(sla, StepStatus::Ok)?);
            let mut step = self.begin("running correctness", Phase::RunningCorrectness);
            taken = self.correctness_outputs(engine, &mut step);
            let ok = taken.outputs.is_some();
            (step, ok)
        } else {
            (sla, sla_ok)
        };
        // Once more after the run: a thread that left the engine's CPUs and stayed out.
        if self.escape.is_none() {
            self.escape = self
                .watched(engine)
                .and_then(|(processes, cpus)| affinity::cpu_escape(&processes, &cpus));
            if let Some(escape) = &self.escape {
                last.line(&format!("the engine left its CPU set: {escape}"));
            }
        }
        let crashed = !engine.is_running();
        let mut result = match taken.infra_error {
            Some(reason) => EntryResult::InfraFailed { reason },
            None => EntryResult::Measured {
                measurement: Box::new(measurement),
                outputs: taken.outputs,
                outputs_error: taken.error,
                outputs_disqualification: taken.disqualification,
            },
        };
        let kept = stop_engine(self.ctx, engine, &mut last, &mut result);
        if let (true, Some(escape)) = (kept, &self.escape) {
            result = EntryResult::Disqualified(self.left_cpu_set(escape, engine));
        } else if kept && crashed {
            result = EntryResult::Disqualified(Disqualification {
                reason: death_reason(
                    engine.container_exit(),
                    DisqualificationReason::EngineCrashed,
                ),
                detail: "the engine exited while being measured".into(),
                log_tail: log_tail(engine.log_path()),
            });
        }
        let status = if last_ok && kept {
            StepStatus::Ok
        } else {
            StepStatus::Failed
        };
        self.steps.push(self.ctx.steps.finish(last, status)?);
        if self.run.takes_outputs && !takes_outputs {
            self.skip("running correctness", Phase::RunningCorrectness)?;
        }
        self.record.result = result;
        Ok(())
    }

    /// The entry's greedy outputs on `engine`, kept in memory for the scorer (and saved
    /// under `.work/` for a resumed round); a failure is the entry's (its answers) or the
    /// runner's, told apart.
    fn correctness_outputs(&mut self, engine: &dyn Engine, step: &mut StepRun) -> TakenOutputs {
        let endpoint = engine.endpoint().unwrap_or_default();
        let baseline = self.baseline;
        let taken = match &self.token {
            Some(token) => take_answers(self.ctx, &endpoint, token, &self.slug, step)
                .and_then(|taken| self.with_fast(taken, (&endpoint, token))),
            None => take_outputs(self.ctx, &endpoint, &self.slug, step, baseline),
        };
        match taken {
            Ok((rel, saved)) => {
                self.ctx.produced.outputs.insert(rel.clone(), saved);
                TakenOutputs {
                    outputs: Some(rel),
                    ..TakenOutputs::default()
                }
            }
            Err(error) => {
                let reason = error_chain(&error);
                step.line(&reason);
                // The baseline is no miner's: its failure is the infrastructure's.
                match error.disqualification() {
                    _ if baseline || !error.is_entrys_fault() => TakenOutputs {
                        infra_error: Some(reason),
                        ..TakenOutputs::default()
                    },
                    Some(dq) => TakenOutputs {
                        disqualification: Some(Disqualification {
                            reason: dq,
                            detail: reason,
                            log_tail: log_tail(engine.log_path()),
                        }),
                        ..TakenOutputs::default()
                    },
                    None => TakenOutputs {
                        error: Some(reason),
                        ..TakenOutputs::default()
                    },
                }
            }
        }
    }

    /// On track s1-fast-speed, the entry's declared resources and sealed capability score
    /// added to its `taken` answers ([`super::fast::score_sealed`], its engine still
    /// answering at `endpoint`), saved again for a resumed round.
    fn with_fast(
        &self,
        (rel, mut saved): (String, SavedOutputs),
        (endpoint, token): (&str, &str),
    ) -> Result<(String, SavedOutputs), StepError> {
        let tree = self.ctx.work.join(format!("trees/{}", self.planned.slug));
        saved.fast =
            super::fast::score_sealed(self.ctx, self.planned.index, &tree, (endpoint, token))?;
        if saved.fast.is_some() {
            save_work(self.ctx, &rel, &saved)?;
        }
        Ok((rel, saved))
    }
}

/// How an entry's correctness step ended: its outputs' `.work`-relative file, or the
/// entry's failure (a message, or a typed disqualification), or the runner's.
#[derive(Default)]
struct TakenOutputs {
    outputs: Option<String>,
    error: Option<String>,
    disqualification: Option<Disqualification>,
    infra_error: Option<String>,
}

/// Records the host's load over a run on `record` from the `/proc/stat` samples
/// `(before, after)` it over the plan's CPUs and its wall time (ms): a steal over
/// `max_steal_permille` of their time ([`isolation::steal_exceeds`]) makes the run invalid
/// ([`super::passes::outcome_of`] reads it so, and the pass loop runs it again once).
/// Returns the step log's line.
fn note_host_load(
    record: &mut EntryRecord,
    cpus: &CpuPlan,
    (before, after): (&CpuTimes, &CpuTimes),
    wall_ms: u64,
    max_steal_permille: u32,
) -> String {
    let load = isolation::host_load(cpus, before, after, wall_ms);
    let count = u32::try_from(cpus.all().len()).unwrap_or(u32::MAX);
    record.steal_exceeded = isolation::steal_exceeds(&load, count, max_steal_permille);
    let line = format!(
        "host: {} ms stolen from {count} CPUs over {} ms (bound {max_steal_permille} ‰){}",
        load.steal_ms,
        load.wall_ms,
        if record.steal_exceeded {
            ": the run is invalid"
        } else {
            ""
        }
    );
    record.host_load = Some(load);
    line
}

/// The step log's line of a run's telemetry `summary`: its source, samples and longest
/// gap, and its verdict.
fn telemetry_line(summary: &RunTelemetry) -> String {
    let verdict = match &summary.violation {
        Some(violation) => format!("{violation}: the run is invalid"),
        None => "no throttle, XID or slow clock".to_owned(),
    };
    format!(
        "telemetry ({}): {} samples, longest gap {} ms, {verdict}",
        summary.source.as_str(),
        summary.samples,
        summary.max_gap_ms
    )
}

/// Stops the engine before `step` (the last it ran in) ends. When its teardown failed
/// (its log could not be kept in full, a process of it survived, a leftover could not be
/// removed), the step gets a line and `result` becomes `infra_failed`; returns whether
/// the teardown was clean.
fn stop_engine(
    ctx: &Ctx<'_>,
    engine: &mut dyn Engine,
    step: &mut StepRun,
    result: &mut EntryResult,
) -> bool {
    let stopped = engine.stop();
    ctx.engines.stopped();
    match stopped {
        Ok(()) => true,
        Err(e) => {
            let reason = error_chain(&e);
            step.line(&format!("stopping the engine failed: {reason}"));
            *result = EntryResult::InfraFailed { reason };
            false
        }
    }
}

/// Stops the engine after a failed or cut-short measurement: the engine crashed when it
/// is no longer running (disqualified, with its log tail), otherwise the infrastructure
/// (the client) failed; a log that could not be kept makes it `infra_failed`.
fn stop_after_failure(
    ctx: &Ctx<'_>,
    engine: &mut dyn Engine,
    step: &mut StepRun,
    reason: String,
) -> EntryResult {
    let crashed = !engine.is_running();
    let mut result = EntryResult::InfraFailed {
        reason: reason.clone(),
    };
    if stop_engine(ctx, engine, step, &mut result) && crashed {
        result = EntryResult::Disqualified(Disqualification {
            reason: death_reason(
                engine.container_exit(),
                DisqualificationReason::EngineCrashed,
            ),
            detail: format!("the engine exited while being measured ({reason})"),
            log_tail: log_tail(engine.log_path()),
        });
    }
    result
}

/// The typed reason of an engine that died, from how its container ended
/// ([`Engine::container_exit`]): `engine_oom_killed` when the kernel killed it for passing
/// its memory limit (the inspected `State.OOMKilled`; content/docker.md), else
/// `otherwise`.
fn death_reason(
    exit: Option<ContainerExit>,
    otherwise: DisqualificationReason,
) -> DisqualificationReason {
    match exit {
        Some(ContainerExit::OomKilled { code, limit_mb }) => {
            DisqualificationReason::EngineOomKilled {
                limit_mb,
                exit_code: code,
            }
        }
        Some(ContainerExit::Exited { .. }) | None => otherwise,
    }
}

/// Removes files a killed run of a group left; one that is not there (or whose directory
/// is not) is fine.
pub(crate) fn remove_stale(paths: &[&Path]) -> Result<(), StepError> {
    for path in paths {
        match fs::remove_file(path) {
            Ok(()) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) => {}
            Err(e) => return Err(IoError::at("removing the stale", path)(e).into()),
        }
    }
    Ok(())
}

/// Greedy outputs of every correctness item, one request at a time (the baseline's:
/// its prompt echo alone, `echo_only`), all within the correctness deadline, saved under
/// `.work/` for a resumed round; returns that file's `.work`-relative path and the
/// outputs.
fn take_outputs(
    ctx: &Ctx<'_>,
    endpoint: &str,
    slug: &str,
    step: &mut StepRun,
    echo_only: bool,
) -> Result<(String, SavedOutputs), StepError> {
    let items = ctx.workload()?.correctness_items();
    let spec = &ctx.frozen.campaign.correctness;
    let client = CompletionsClient::new(
        endpoint,
        &ctx.frozen.campaign.model.name,
        request_timeout_ms(ctx),
    )
    .with_api(ctx.frozen.campaign.api_profile());
    let outputs = ctx.runtime.block_on(gate::within(
        correctness_deadline(ctx),
        "correctness outputs",
        gate::take_outputs(&client, &items, spec.top_k, echo_only),
    ))?;
    step.line(&format!("{} correctness items answered", outputs.len()));
    let rel = format!("outputs/{slug}.json");
    let saved = SavedOutputs {
        items: outputs,
        decide: Vec::new(),
        fast: None,
    };
    save_work(ctx, &rel, &saved)?;
    Ok((rel, saved))
}

/// A `decide` campaign's gate answers of every fresh item, one request at a time with the
/// run's `token`, within the correctness deadline, saved under `.work/` as
/// [`take_outputs`] saves greedy outputs.
fn take_answers(
    ctx: &Ctx<'_>,
    endpoint: &str,
    token: &str,
    slug: &str,
    step: &mut StepRun,
) -> Result<(String, SavedOutputs), StepError> {
    let client = decide_client(ctx, endpoint, token)?;
    let items = ctx.workload()?.correctness_items();
    let answers = ctx
        .runtime
        .block_on(client.answers(&items, correctness_deadline(ctx)))?;
    step.line(&format!("{} gate items answered", answers.len()));
    let rel = format!("outputs/{slug}.json");
    let saved = SavedOutputs {
        items: Vec::new(),
        decide: answers,
        fast: None,
    };
    save_work(ctx, &rel, &saved)?;
    Ok((rel, saved))
}

/// A client of the decision sidecar at `endpoint` under the campaign's contract with the
/// run's `token`.
///
/// Errors: [`StepError::Contract`] when the campaign has no `[decide]` or its template is
/// not JSON.
pub(crate) fn decide_client(
    ctx: &Ctx<'_>,
    endpoint: &str,
    token: &str,
) -> Result<DecideClient, StepError> {
    let campaign = &ctx.frozen.campaign;
    let contract =
        campaign
            .decide
            .as_ref()
            .ok_or_else(|| receipts::model::ModelError::InvalidField {
                field: "decide".into(),
                value: String::new(),
                rule: "workload_kind = \"decide\" needs [decide]".into(),
            })?;
    let budget = usize::try_from(campaign.effective_limits().response_bytes).unwrap_or(usize::MAX);
    Ok(DecideClient::new(
        endpoint,
        contract,
        token,
        request_timeout_ms(ctx),
        budget,
    )?)
}

/// Draws a run's token and gives it to `engine` as `REFEREE_DECIDE_TOKEN`.
///
/// Errors: no random bytes, or a backend that cannot pass it.
pub(crate) fn give_token(engine: &mut dyn Engine) -> Result<String, StepError> {
    let token = crate::decide::run_token()?;
    engine.set_secret_env(receipts::model::DECIDE_TOKEN_ENV, &token)?;
    Ok(token)
}

/// Saves a run's kept requests under `.work/kept/<slug>.json` (for a resumed round) and
/// keeps them in memory for the scorer; returns that file's `.work`-relative path and
/// how many requests were kept.
fn save_kept(
    ctx: &mut Ctx<'_>,
    slug: &str,
    kept: Vec<KeptRun>,
) -> Result<(String, usize), StepError> {
    let rel = format!("kept/{slug}.json");
    save_work(ctx, &rel, &kept)?;
    let count = kept.iter().map(|r| r.requests.len()).sum();
    ctx.produced.kept.insert(rel.clone(), kept);
    Ok((rel, count))
}

/// Writes `value` as JSON to `.work/<rel>`, its directory made first.
fn save_work<T: serde::Serialize>(ctx: &Ctx<'_>, rel: &str, value: &T) -> Result<(), StepError> {
    let path = ctx.work.join(rel);
    let bytes = serde_json::to_vec(value).map_err(|e| StepError::Parse {
        path: path.clone(),
        message: e.to_string(),
    })?;
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(IoError::at("creating", parent))?;
    }
    receipts::fsutil::write_atomic(&path, &bytes, 0o644).map_err(IoError::at("writing", &path))?;
    Ok(())
}

/// Checks out the pinned baseline (with `patch` applied) into `.work/<rel>` and returns
/// its root and engine config. The one seam to the gates' `prepare_tree`.
pub(crate) fn prepare(
    ctx: &Ctx<'_>,
    patch: Option<&Sha256Hex>,
    rel: &str,
) -> Result<Tree, StepError> {
    let dest = ctx.work.join(rel);
    if dest.exists() {
        fs::remove_dir_all(&dest).map_err(IoError::at("removing", &dest))?;
    }
    let prepared =
        intake::gates::prepare_tree(&ctx.campaign_dir, &ctx.frozen.campaign, patch, &dest)
            .map_err(StepError::Tree)?;
    // The receipt records the config's digest: an unreadable config is an error, never
    // the digest of nothing.
    let config = fs::read(&prepared.engine_config)
        .map_err(IoError::at("reading", &prepared.engine_config))?;
    Ok(Tree {
        root: prepared.root,
        config: prepared.engine_config,
        config_sha256: Sha256Hex::digest(&config),
    })
}

/// The SLA run of pass `pass` (run number `pass`, on its own sub-streams) through the
/// load generator: the one seam to `ratesearch`; then, for a `judged` run (a challenger's
/// that met the SLA), its caching probe ([`caching_probe`]). A `decide` campaign's run
/// carries its token.
fn measure(
    ctx: &Ctx<'_>,
    (endpoint, token): (&str, Option<&str>),
    (pass, judged): (u32, bool),
    keep_token_ids: BTreeSet<u32>,
    step: &mut StepRun,
) -> Result<(EntryMeasurement, Vec<KeptRun>), StepError> {
    let sink = ProbeLines {
        progress: ctx.progress,
        lines: std::sync::Mutex::new(Vec::new()),
    };
    let target = loadgen::Target {
        base_url: endpoint.to_owned(),
        model: ctx.frozen.campaign.model.name.clone(),
    };
    let workload = ctx.workload()?;
    let mut config = loadgen::MeasureConfig::from_campaign(&ctx.frozen.campaign);
    config.keep_token_ids = keep_token_ids;
    // A decide campaign's requests go to its sidecar's route with the run's token.
    if let (Some(contract), Some(token)) = (&ctx.frozen.campaign.decide, token) {
        let plan = loadgen::DecidePlan::new(contract.clone(), token.to_owned())?;
        config.decide = Some(std::sync::Arc::new(plan));
    }
    let result = ctx.runtime.block_on(loadgen::measure_runs_with_outputs(
        &target,
        &workload,
        &config,
        pass..pass.saturating_add(1),
        &sink,
    ));
    for line in sink.lines.into_inner().unwrap_or_default() {
        step.line(&line);
    }
    let mut measured = result?;
    let prompts = ctx.frozen.campaign.correctness.effective_caching_prompts();
    if judged && prompts > 0 && measured.measurement.outcome == MeasurementOutcome::Measured {
        let probe = caching_probe(ctx, (&target, &config), &workload, pass, prompts)?;
        step.line(&format!(
            "caching probe: {} requests, repeats decoded faster by {} bp (bound {} bp)",
            probe.requests.len(),
            opt(probe.speedup_bp),
            probe.bound_bp
        ));
        measured.measurement.caching = Some(probe);
    }
    let kept = measured
        .result_outputs
        .iter()
        .map(|probe| kept_run(&workload, probe))
        .collect();
    Ok((measured.measurement, kept))
}

/// Run `pass`'s caching probe on the engine at `target` (content/correctness.md,
/// Caching): the first `prompts` items of the run's caching sub-stream, which no timed
/// probe sends, each sent twice one request at a time; with its figures and the
/// campaign's bound.
///
/// Errors: [`StepError`] from the load client (the runner's failure, not the entry's).
fn caching_probe(
    ctx: &Ctx<'_>,
    (target, config): (&loadgen::Target, &loadgen::MeasureConfig),
    workload: &receipts::rules::workload::Workload,
    pass: u32,
    prompts: u32,
) -> Result<CachingProbe, StepError> {
    let sub_stream = workload.caching_sub_stream(pass);
    let mut items = workload.sub_stream(sub_stream);
    items.truncate(prompts as usize);
    let campaign = &ctx.frozen.campaign;
    let deadline_ms = (workload.rate_search()).effective_request_deadline_ms(&campaign.sla);
    let requests =
        ctx.runtime
            .block_on(loadgen::caching_probe(target, config, &items, deadline_ms))?;
    Ok(CachingProbe {
        sub_stream,
        speedup_bp: receipts::rules::compliance::caching_speedup_bp(&requests),
        requests,
        bound_bp: campaign.correctness.effective_caching_bound_bp(),
    })
}

/// How often [`watch_cpus`] reads the engine's threads' affinity.
const CPU_WATCH_INTERVAL: Duration = Duration::from_millis(250);

/// Reads the affinity of every thread of `processes` ([`affinity::cpu_escape`]) every
/// [`CPU_WATCH_INTERVAL`] until `done`, returning the first thread found allowed outside
/// `engine_cpus`. An engine can widen its mask onto the client's CPU and restore it before
/// the run ends: read during the run, not only after.
fn watch_cpus(
    processes: &EngineProcesses,
    engine_cpus: &[u32],
    done: &AtomicBool,
) -> Option<CpuEscape> {
    const SLICE: Duration = Duration::from_millis(25);
    loop {
        if let Some(escape) = affinity::cpu_escape(processes, engine_cpus) {
            return Some(escape);
        }
        let mut waited = Duration::ZERO;
        while waited < CPU_WATCH_INTERVAL {
            if done.load(Ordering::Relaxed) {
                return None;
            }
            std::thread::sleep(SLICE);
            waited += SLICE;
        }
    }
}

/// The workload items whose token ids the load client keeps for entry `entry`
/// ([`receipts::rules::sample::keep_pool`]); none without a sample seed (a round opened
/// before v3) or with `correctness.load_sample = 0`. On a pod, which is never shipped
/// the sample seed, the pool drawn at home ([`super::record::SetupRecord::sample_pools`]).
///
/// Errors: [`StepError::NoSeeds`] before setup, [`StepError::Workload`] when the
/// workload cannot be built (the SLA runs, which need both, would fail the same way).
pub(crate) fn sample_pool(ctx: &Ctx<'_>, entry: u32) -> Result<BTreeSet<u32>, StepError> {
    let n = ctx.frozen.campaign.correctness.effective_load_sample();
    if n == 0 {
        return Ok(BTreeSet::new());
    }
    if let Some(pools) = ctx.setup.as_ref().and_then(|s| s.sample_pools.as_ref()) {
        let pool = pools.iter().find(|p| p.entry == entry);
        return Ok(pool.into_iter().flat_map(|p| &p.items).copied().collect());
    }
    let Some(seed) = ctx.setup_seeds()?.sample_seed else {
        return Ok(BTreeSet::new());
    };
    let workload = ctx.workload()?;
    let pool = receipts::rules::sample::keep_pool(&seed.seed, entry, workload.sub_stream_len(), n);
    Ok(pool.into_iter().collect())
}

/// A run's result probe as the load client kept it, with each request's prompt from the
/// workload.
fn kept_run(
    workload: &receipts::rules::workload::Workload,
    probe: &loadgen::ProbeOutputs,
) -> KeptRun {
    let items = workload.sub_stream(probe.sub_stream);
    KeptRun {
        run: probe.run,
        probe: probe.probe,
        requests: probe
            .samples
            .iter()
            .filter_map(|sample| {
                let item = items.iter().find(|i| i.item_index == sample.item_index)?;
                Some(KeptRequest {
                    item_index: sample.item_index,
                    prompt: item.prompt.clone(),
                    completed: sample.completed(),
                    token_ids: (!sample.token_ids.is_empty()).then(|| sample.token_ids.clone()),
                    text: sample.text.clone(),
                })
            })
            .collect(),
    }
}

/// Forwards probe progress to the round's progress and keeps a line per probe for the
/// step log.
struct ProbeLines<'a> {
    progress: &'a dyn super::RoundProgress,
    lines: std::sync::Mutex<Vec<String>>,
}

impl ProgressSink for ProbeLines<'_> {
    fn probe_finished(&self, record: &ProbeRecord) {
        self.progress.probe_finished(record);
        if let Ok(mut lines) = self.lines.lock() {
            lines.push(format!(
                "run {} probe {}: rate {} milli-req/s, {}/{} completed, {} over bound, p {} µs, send lag p99 {} µs, {}, throughput {} milli-req/s",
                record.run,
                record.probe,
                record.rate_milli_rps,
                record.completed,
                record.requests,
                record.over_bound,
                opt(record.percentile_us),
                record.send_lag_p99_us,
                super::steps::verdict_words(record.verdict),
                record.throughput_milli_rps
            ));
        }
    }
}

/// The deadline of one entry's correctness outputs, and of the reference's answers for
/// one entry (`correctness.deadline_s`, capped by the entry deadline).
pub(crate) fn correctness_deadline(ctx: &Ctx<'_>) -> Duration {
    let campaign = &ctx.frozen.campaign;
    Duration::from_secs(
        campaign
            .correctness
            .effective_deadline_s(&campaign.rate_search),
    )
}

pub(crate) fn request_timeout_ms(ctx: &Ctx<'_>) -> u64 {
    ctx.frozen
        .campaign
        .rate_search
        .effective_request_deadline_ms(&ctx.frozen.campaign.sla)
        .max(60_000)
}

fn opt(value: Option<u64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

/// An error with its sources, `: `-joined.
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use receipts::model::{BackendKind, CpuPinning, RoundFailure, Timestamp};
    use receipts::rules::paired::RunOutcome;
    use receipts::rules::workload::Item;

    /// `/proc/stat` as recorded on the 2-core development host (under a hypervisor),
    /// and five seconds later: 11 ticks of steal over both CPUs.
    const STAT_BEFORE: &str = "cpu  1154496 0 201216 736880 19043 0 10104 18872 0 0
cpu0 565666 0 94445 389520 7112 0 4395 9018 0 0
cpu1 588829 0 106771 347359 11931 0 5709 9854 0 0
intr 167802614 0 9 0 0 0
";
    const STAT_AFTER: &str = "cpu  1154993 0 201312 737246 19073 0 10105 18883 0 0
cpu0 565755 0 94475 389876 7131 0 4395 9025 0 0
cpu1 589238 0 106836 347370 11942 0 5710 9858 0 0
";

    /// A run that measured 10 000 milli-req/s at the SLA.
    fn measured_run() -> EntryRecord {
        let at = Timestamp::now();
        EntryRecord {
            result: EntryResult::Measured {
                measurement: Box::new(EntryMeasurement {
                    runs: Vec::new(),
                    throughput_milli_rps: Some(10_000),
                    throughput_min_milli_rps: Some(10_000),
                    throughput_max_milli_rps: Some(10_000),
                    valid: true,
                    outcome: MeasurementOutcome::Measured,
                    measured_for: None,
                    caching: None,
                }),
                outputs: None,
                outputs_error: None,
                outputs_disqualification: None,
            },
            ..EntryRecord::not_run(1, 0, false, false, at, BackendKind::Builtin)
        }
    }

    /// The recorded steal (110 ms of the 2 CPUs' 2 × 5 000 ms, 11 ‰) is within a bound of
    /// 50 ‰ and over one of 10 ‰: there the run reads as invalid to the pass loop, which
    /// runs it again once, and the receipt's run carries the load.
    #[test]
    fn a_recorded_steal_over_the_bound_makes_the_run_invalid() {
        let before = CpuTimes::parse(STAT_BEFORE).unwrap();
        let after = CpuTimes::parse(STAT_AFTER).unwrap();
        let plan = CpuPlan::split(&[0, 1]);
        assert_eq!(plan.pinning, CpuPinning::SchedAffinity);

        let mut within = measured_run();
        let line = note_host_load(&mut within, &plan, (&before, &after), 5_000, 50);
        assert_eq!(
            line,
            "host: 110 ms stolen from 2 CPUs over 5000 ms (bound 50 ‰)"
        );
        assert!(!within.steal_exceeded);
        assert_eq!(
            super::super::passes::outcome_of(&within),
            RunOutcome::Measured { milli_rps: 10_000 }
        );

        let mut stolen = measured_run();
        let line = note_host_load(&mut stolen, &plan, (&before, &after), 5_000, 10);
        assert_eq!(
            line,
            "host: 110 ms stolen from 2 CPUs over 5000 ms (bound 10 ‰): the run is invalid"
        );
        assert!(stolen.steal_exceeded);
        let load = stolen.host_load.as_ref().unwrap();
        assert_eq!((load.steal_ms, load.wall_ms), (110, 5_000));
        assert_eq!(
            super::super::passes::outcome_of(&stolen),
            RunOutcome::Invalid
        );
        // The journal keeps it across a resume.
        let json = serde_json::to_string(&stolen).unwrap();
        let back: EntryRecord = serde_json::from_str(&json).unwrap();
        assert_eq!(super::super::passes::outcome_of(&back), RunOutcome::Invalid);
    }

    /// A run whose telemetry shows a GPU power brake reads as invalid to the pass loop
    /// (which runs it again once), whatever it measured, across a resume too; software
    /// power capping alone leaves it measured.
    #[test]
    fn a_telemetry_violation_makes_the_run_invalid() {
        let text = |throttle: &str| {
            format!(
                r#"{{"format": 1, "source": "nvml", "intervalMs": 80, "cpus": [0, 1],
                "gpus": ["GPU-0"], "samples": [{{"tMs": 80,
                "cpu": {{"busyPermille": 900, "stealPermille": 0}},
                "gpus": [{{"device": 0, "smClockMhz": 1980, "throttle": {throttle}}}]}}]}}"#
            )
        };
        let summary = |throttle: &str| {
            let file: TelemetryFile = serde_json::from_str(&text(throttle)).unwrap();
            receipts::rules::telemetry::summarize(&file, "telemetry/run.json", None)
        };
        let mut capped = measured_run();
        capped.telemetry = Some(summary(r#"["sw_power_cap"]"#));
        assert_eq!(
            telemetry_line(capped.telemetry.as_ref().unwrap()),
            "telemetry (nvml): 1 samples, longest gap 80 ms, no throttle, XID or slow clock"
        );
        assert_eq!(
            super::super::passes::outcome_of(&capped),
            RunOutcome::Measured { milli_rps: 10_000 }
        );
        let mut braked = measured_run();
        braked.telemetry = Some(summary(r#"["sw_power_cap", "hw_power_brake_slowdown"]"#));
        assert_eq!(
            telemetry_line(braked.telemetry.as_ref().unwrap()),
            "telemetry (nvml): 1 samples, longest gap 80 ms, GPU 0 throttled \
             (hw_power_brake_slowdown) at 80 ms: the run is invalid"
        );
        assert_eq!(
            super::super::passes::outcome_of(&braked),
            RunOutcome::Invalid
        );
        let json = serde_json::to_string(&braked).unwrap();
        let back: EntryRecord = serde_json::from_str(&json).unwrap();
        assert_eq!(super::super::passes::outcome_of(&back), RunOutcome::Invalid);
    }

    /// Regression (issue 10): an entry that stalled its correctness outputs hung the round,
    /// and a stalling reference was no different from a stalling entry. The entry's stall
    /// disqualifies it (`correctness_deadline`); the reference's fails the round.
    #[tokio::test]
    async fn a_stall_past_the_deadline_is_the_entrys_disqualification_or_the_rounds_failure() {
        let url = gate::fake::serve(gate::fake::stalling()).await;
        let client = CompletionsClient::new(&url, "m", 60_000);
        let items = vec![Item {
            item_index: 0,
            prompt_sha256: Sha256Hex::digest(b"ab"),
            prompt: "ab".into(),
            max_tokens: 2,
            arrival_unit_ns: 0,
        }];
        let deadline = Duration::from_millis(150);
        let stalled: StepError = gate::within(
            deadline,
            "correctness outputs",
            gate::take_outputs(&client, &items, 2, false),
        )
        .await
        .unwrap_err()
        .into();
        assert!(stalled.is_entrys_fault());
        assert_eq!(
            stalled.disqualification(),
            Some(DisqualificationReason::CorrectnessDeadline { deadline_s: 1 })
        );
        assert_eq!(
            error_chain(&stalled),
            "correctness outputs: no complete answer within the deadline of 1 s"
        );
        let scorer: StepError = gate::within(
            deadline,
            "reference tokenization",
            gate::reference_prompts(&client, &items),
        )
        .await
        .unwrap_err()
        .into();
        assert_eq!(
            scorer.scorer_deadline(),
            Some(RoundFailure::ScorerDeadline { deadline_s: 1 })
        );
        // Any other failure of the reference is no deadline.
        assert_eq!(StepError::NoBaselineEcho.scorer_deadline(), None);
    }

    #[test]
    fn an_oom_killed_container_is_typed_and_other_exits_keep_their_reason() {
        assert_eq!(
            death_reason(
                Some(ContainerExit::OomKilled {
                    code: 137,
                    limit_mb: 64
                }),
                DisqualificationReason::EngineCrashed
            ),
            DisqualificationReason::EngineOomKilled {
                limit_mb: 64,
                exit_code: 137
            }
        );
        assert_eq!(
            death_reason(
                Some(ContainerExit::Exited { code: 1 }),
                DisqualificationReason::EngineDiedBeforeHealthy
            ),
            DisqualificationReason::EngineDiedBeforeHealthy
        );
        assert_eq!(
            death_reason(None, DisqualificationReason::EngineCrashed),
            DisqualificationReason::EngineCrashed
        );
    }
}
