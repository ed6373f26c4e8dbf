//! One entry's group of steps (start the engine → healthy or disqualified with its log
//! tail → SLA runs → correctness outputs → stop), and the scorer's group (the reference
//! runtime teacher-forced on each entry's tokens). A failing step never stops the round:
//! it becomes the entry's typed status. Only a step log that cannot be written does
//! ([`Ctx::finish`]): the step would have no record of itself.
//!
//! Engines are started and stopped here, on the thread that called `run_round` (the
//! round's tokio runtime only drives the load generator and the correctness client):
//! `PR_SET_PDEATHSIG` ties each engine to that thread, which outlives it (engines are
//! not `Send`, and dropping one stops it).

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use receipts::fsutil::IoError;
use receipts::model::{
    Backend, CorrectnessItems, CorrectnessSummary, Disqualification, DisqualificationReason,
    EntryMeasurement, MeasurementOutcome, Phase, ProbeRecord, ReferenceRuntime, Role, RoundFailure,
    Sha256Hex, Step, StepStatus,
};

use super::record::{EntryRecord, EntryResult, EntryVerdict, PlannedEntry, ScorerRecord};
use super::{Ctx, RoundError, StepRun};
use crate::correctness::{
    self as gate, CompletionsClient, GateError, ItemOutput, KeptRequest, KeptRun,
};
use engines::docker::ContainerExit;
use engines::isolation::{self, CpuPlan, CpuTimes};
use engines::{Engine, EngineError, LOG_TAIL_LINES, log_tail};
use loadgen::search::ProgressSink;
use receipts::rules::correctness;

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
        )
    }

    /// The round's typed failure when the reference runtime (the scorer) ran past its
    /// deadline: the reference is no miner's engine, so its stall fails the round.
    fn scorer_deadline(&self) -> Option<RoundFailure> {
        match self {
            Self::Gate(GateError::Deadline { deadline_s, .. }) => {
                Some(RoundFailure::ScorerDeadline {
                    deadline_s: *deadline_s,
                })
            }
            _ => None,
        }
    }

    /// The entry's typed disqualification for a failed correctness step, when it has
    /// one (the deadline; other faults are `compliance_failed` with their message).
    fn disqualification(&self) -> Option<DisqualificationReason> {
        match self {
            Self::Gate(GateError::Deadline { deadline_s, .. }) => {
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

/// The engine steps already run when a group ends early: the ones after them are
/// recorded as skipped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reached {
    /// It ended while starting the engine.
    Start,
    /// It ended during the SLA runs.
    Sla,
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
/// Errors: [`RoundError`] only when a step's own log cannot be written ([`Ctx::finish`]);
/// every other failure is the entry's typed status.
pub(crate) fn run_entry(
    ctx: &mut Ctx<'_>,
    planned: &PlannedEntry,
    run: &RunSpec,
) -> Result<EntryRecord, RoundError> {
    let group = planned.group.clone();
    // Step names carry the run: `Baseline, A/A control, pass 2, running SLA`.
    let name = format!("{group}, {}", run.label());
    let slug = format!("{}-{}", planned.slug, run.slug());
    let started_at = ctx.options.clock.now();
    // The baseline answers too, its prompt echo only: the scorer checks it against the
    // reference's tokenization before any entry's (content/correctness.md).
    let baseline = planned.role == Role::Baseline;
    let wants_outputs = run.takes_outputs;
    let mut steps: Vec<Step> = Vec::new();
    let engine_log_rel = format!("logs/engines/{slug}.log");
    let engine_log = ctx.bundle.join(&engine_log_rel);
    let probe_log_rel = format!("probes/{slug}.json");
    let probe_log = ctx.bundle.join(&probe_log_rel);
    let mut record = EntryRecord::not_run(
        planned.index,
        run.pass,
        run.control,
        run.rerun,
        started_at,
        ctx.backend.kind(),
    );

    // Start → healthy.
    let mut start = ctx.begin(
        &group,
        &format!("{name}, starting the engine"),
        Phase::StartingEngine,
    );
    // A killed run of this group left its logs: the engine log would be appended to, and
    // a probe log this run does not write again would be sealed as if it were its.
    if let Err(error) = remove_stale(&[&engine_log, &probe_log]) {
        let reason = error_chain(&error);
        start.line(&reason);
        return failed_before_the_engine(
            ctx,
            start,
            record,
            steps,
            (&group, &name),
            wants_outputs,
            reason,
        );
    }
    let tree = match prepare(
        ctx,
        planned.patch.as_ref(),
        &format!("trees/{}", planned.slug),
    ) {
        Ok(tree) => tree,
        Err(error) => {
            let reason = error_chain(&error);
            start.line(&format!("preparing the tree failed: {reason}"));
            return failed_before_the_engine(
                ctx,
                start,
                record,
                steps,
                (&group, &name),
                wants_outputs,
                reason,
            );
        }
    };
    record.engine.config_sha256 = tree.config_sha256;
    start.line(&format!(
        "tree `{}`, config sha256 {}",
        tree.root.display(),
        record.engine.config_sha256
    ));
    // A Docker campaign's miner entry runs the image built for its submission, and
    // nothing else (never the baseline's image with its tree mounted).
    let docker = matches!(ctx.frozen.campaign.backend, Backend::Docker(_));
    if docker && !baseline && planned.image.is_none() {
        let reason = error_chain(&StepError::NoImage {
            patch: planned.patch,
        });
        start.line(&reason);
        return failed_before_the_engine(
            ctx,
            start,
            record,
            steps,
            (&group, &name),
            wants_outputs,
            reason,
        );
    }
    let mut engine = ctx.backend.engine(
        &tree.root,
        &tree.config,
        &engine_log,
        planned.image.as_ref(),
    );
    if let Some(image) = &planned.image {
        start.line(&format!("image `{}` ({})", image.tag, image.image_id));
    }
    ctx.engine_started();
    let started = engine.start();
    // The log is named only once it exists (a start can fail before opening it).
    record.engine_log = engine_log.is_file().then_some(engine_log_rel);
    if let Err(e) = started {
        start.line(&format!("{e}"));
        record.result = EntryResult::InfraFailed {
            reason: error_chain(&e),
        };
        stop_engine(ctx, engine.as_mut(), &mut start, &mut record.result);
        steps.push(ctx.finish(start, StepStatus::Failed)?);
        return close(
            ctx,
            record,
            steps,
            (&group, &name),
            wants_outputs,
            Reached::Start,
        );
    }
    record.engine.command = engine.command().map(<[String]>::to_vec);
    record.engine.isolation = engine.isolation();
    record.engine.docker = engine.docker();
    if let Some(docker) = &record.engine.docker {
        record.engine.memory_limit_mb = Some(ctx.frozen.campaign.hardware.memory_limit_mb);
        record.engine.image =
            docker
                .manifest_digest
                .as_ref()
                .map(|digest| receipts::model::ImageRef {
                    name: engines::docker::image::repository(&docker.image_reference).to_owned(),
                    manifest_digest: digest.clone(),
                    config_digest: Some(docker.image_id.clone()),
                });
    }
    if let receipts::model::Backend::Process { .. } = ctx.frozen.campaign.backend {
        record.engine.api = Some(ctx.frozen.campaign.api_profile().record());
        record.engine.memory_limit_mb = Some(ctx.frozen.campaign.hardware.memory_limit_mb);
    }
    let deadline = Duration::from_secs(ctx.frozen.campaign.health_deadline_s);
    match engine.wait_healthy(deadline) {
        Ok(()) => {
            start.line(&format!(
                "healthy at {}",
                engine.endpoint().unwrap_or_default()
            ));
            steps.push(ctx.finish(start, StepStatus::Ok)?);
        }
        Err(EngineError::DiedBeforeHealthy { detail, log_tail }) => {
            let detail = format!("engine died before becoming healthy ({detail})");
            start.line(&detail);
            record.result = EntryResult::Disqualified(Disqualification {
                reason: death_reason(
                    engine.container_exit(),
                    DisqualificationReason::EngineDiedBeforeHealthy,
                ),
                detail,
                log_tail,
            });
            stop_engine(ctx, engine.as_mut(), &mut start, &mut record.result);
            steps.push(ctx.finish(start, StepStatus::Failed)?);
            return close(
                ctx,
                record,
                steps,
                (&group, &name),
                wants_outputs,
                Reached::Start,
            );
        }
        Err(e) => {
            start.line(&format!("{e}"));
            record.result = EntryResult::InfraFailed {
                reason: error_chain(&e),
            };
            stop_engine(ctx, engine.as_mut(), &mut start, &mut record.result);
            steps.push(ctx.finish(start, StepStatus::Failed)?);
            return close(
                ctx,
                record,
                steps,
                (&group, &name),
                wants_outputs,
                Reached::Start,
            );
        }
    }
    let endpoint = engine.endpoint().unwrap_or_default();

    // SLA runs.
    let mut sla = ctx.begin(&group, &format!("{name}, running SLA"), Phase::RunningSla);
    // Token ids are kept for the timed-run sample only on the run whose correctness
    // outputs are taken, and never for the baseline (it is not judged).
    let keep = if wants_outputs && !baseline {
        sample_pool(ctx, planned.index)
    } else {
        std::collections::BTreeSet::new()
    };
    // The host's steal over the measured part: `/proc/stat` sampled around it.
    let before = CpuTimes::now();
    let measuring = std::time::Instant::now();
    let measured = measure(ctx, &endpoint, run.pass, keep, &mut sla);
    let wall_ms = u64::try_from(measuring.elapsed().as_millis()).unwrap_or(u64::MAX);
    match (before, CpuTimes::now()) {
        (Ok(before), Ok(after)) => {
            let bound = ctx.frozen.campaign.effective_max_steal_permille();
            let line = note_host_load(&mut record, &ctx.cpus, (&before, &after), wall_ms, bound);
            sla.line(&line);
        }
        (Err(e), _) | (_, Err(e)) => {
            sla.line(&format!("host load not measured: {}", error_chain(&e)));
        }
    }
    let (measurement, kept_runs) = match measured {
        Ok(m) => m,
        Err(error) => {
            let reason = error_chain(&error);
            sla.line(&reason);
            record.result = stop_after_failure(ctx, engine.as_mut(), &mut sla, reason);
            steps.push(ctx.finish(sla, StepStatus::Failed)?);
            return close(
                ctx,
                record,
                steps,
                (&group, &name),
                wants_outputs,
                Reached::Sla,
            );
        }
    };
    if let Err(e) = super::write_artifact(&probe_log, &measurement) {
        let reason = error_chain(&e);
        sla.line(&format!("writing the probe log failed: {reason}"));
        record.result = EntryResult::InfraFailed { reason };
        stop_engine(ctx, engine.as_mut(), &mut sla, &mut record.result);
        steps.push(ctx.finish(sla, StepStatus::Failed)?);
        return close(
            ctx,
            record,
            steps,
            (&group, &name),
            wants_outputs,
            Reached::Sla,
        );
    }
    record.probe_log = Some(probe_log_rel);
    sla.line(&format!(
        "throughput {} milli-req/s (min {}, max {}), outcome {}",
        opt(measurement.throughput_milli_rps),
        opt(measurement.throughput_min_milli_rps),
        opt(measurement.throughput_max_milli_rps),
        super::outcome_words(measurement.outcome)
    ));
    if !engine.is_running() {
        record.result = stop_after_failure(
            ctx,
            engine.as_mut(),
            &mut sla,
            "the engine exited during the SLA runs".into(),
        );
        steps.push(ctx.finish(sla, StepStatus::Failed)?);
        return close(
            ctx,
            record,
            steps,
            (&group, &name),
            wants_outputs,
            Reached::Sla,
        );
    }
    // A run the host stole from is invalid: its outputs wait for its re-run.
    let sla_ok = measurement.outcome == MeasurementOutcome::Measured && !record.steal_exceeded;

    // Correctness outputs, one request at a time, when the SLA was met; the engine's last
    // step is then this one, else the SLA runs.
    let takes_outputs = wants_outputs && sla_ok;
    let mut outputs = None;
    let mut outputs_error = None;
    let mut outputs_disqualification = None;
    let mut infra_error = None;
    let (mut last, last_ok) = if takes_outputs {
        steps.push(ctx.finish(sla, StepStatus::Ok)?);
        let mut step = ctx.begin(
            &group,
            &format!("{name}, running correctness"),
            Phase::RunningCorrectness,
        );
        let taken = match take_outputs(ctx, &endpoint, &slug, &mut step, baseline, kept_runs) {
            Ok(rel) => {
                outputs = Some(rel);
                true
            }
            Err(error) => {
                let reason = error_chain(&error);
                step.line(&reason);
                // The baseline is no miner's: its failure is the infrastructure's.
                match error.disqualification() {
                    _ if baseline || !error.is_entrys_fault() => infra_error = Some(reason),
                    Some(dq) => {
                        outputs_disqualification = Some(Disqualification {
                            reason: dq,
                            detail: reason,
                            log_tail: log_tail(engine.log_path(), LOG_TAIL_LINES),
                        });
                    }
                    None => outputs_error = Some(reason),
                }
                false
            }
        };
        (step, taken)
    } else {
        (sla, sla_ok)
    };
    let crashed = !engine.is_running();
    let mut result = match infra_error {
        Some(reason) => EntryResult::InfraFailed { reason },
        None => EntryResult::Measured {
            measurement: Box::new(measurement),
            outputs,
            outputs_error,
            outputs_disqualification,
        },
    };
    let kept = stop_engine(ctx, engine.as_mut(), &mut last, &mut result);
    if kept && crashed {
        result = EntryResult::Disqualified(Disqualification {
            reason: death_reason(
                engine.container_exit(),
                DisqualificationReason::EngineCrashed,
            ),
            detail: "the engine exited while being measured".into(),
            log_tail: log_tail(engine.log_path(), LOG_TAIL_LINES),
        });
    }
    steps.push(ctx.finish(
        last,
        if last_ok && kept {
            StepStatus::Ok
        } else {
            StepStatus::Failed
        },
    )?);
    if wants_outputs && !takes_outputs {
        steps.push(ctx.skipped(
            &group,
            &format!("{name}, running correctness"),
            Phase::RunningCorrectness,
        )?);
    }
    record.result = result;
    record.steps = steps;
    record.ended_at = ctx.options.clock.now();
    Ok(record)
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

/// Fills in the skipped steps of a group that ended early at `reached` and closes the
/// record; its correctness step is skipped too when the group has one (`wants_outputs`).
/// An entry whose start step failed before any engine was made (stale logs, the tree,
/// no image): the step failed, the entry `infra_failed` for `reason`, the rest of its
/// group closed as [`close`] does.
///
/// Errors: as [`close`].
fn failed_before_the_engine(
    ctx: &mut Ctx<'_>,
    start: StepRun,
    mut record: EntryRecord,
    mut steps: Vec<Step>,
    names: (&str, &str),
    wants_outputs: bool,
    reason: String,
) -> Result<EntryRecord, RoundError> {
    steps.push(ctx.finish(start, StepStatus::Failed)?);
    record.result = EntryResult::InfraFailed { reason };
    close(ctx, record, steps, names, wants_outputs, Reached::Start)
}

fn close(
    ctx: &mut Ctx<'_>,
    mut record: EntryRecord,
    mut steps: Vec<Step>,
    (group, name): (&str, &str),
    wants_outputs: bool,
    reached: Reached,
) -> Result<EntryRecord, RoundError> {
    ctx.engine_stopped();
    if reached == Reached::Start {
        steps.push(ctx.skipped(group, &format!("{name}, running SLA"), Phase::RunningSla)?);
    }
    if wants_outputs {
        steps.push(ctx.skipped(
            group,
            &format!("{name}, running correctness"),
            Phase::RunningCorrectness,
        )?);
    }
    record.steps = steps;
    record.ended_at = ctx.options.clock.now();
    Ok(record)
}

/// Stops the engine before `step` (the last it ran in) ends. When its log could not be
/// kept in full, the step gets a line and `result` becomes `infra_failed` (the entry's
/// evidence is incomplete); returns whether it was kept.
fn stop_engine(
    ctx: &Ctx<'_>,
    engine: &mut dyn Engine,
    step: &mut StepRun,
    result: &mut EntryResult,
) -> bool {
    let stopped = engine.stop();
    ctx.engine_stopped();
    match stopped {
        Ok(()) => true,
        Err(e) => {
            let reason = error_chain(&e);
            step.line(&format!("keeping the engine log failed: {reason}"));
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
            log_tail: log_tail(engine.log_path(), LOG_TAIL_LINES),
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

/// The scorer's group: the campaign's reference runtime (`correctness.reference`: the
/// baseline at full precision by default, or the baseline unmodified), teacher-forced on each entry's prompt and greedy tokens; writes each entry's per-item
/// artifact `correctness/<slug>.json` and returns the verdicts. An entry whose verdict
/// could not be computed (its artifact could not be written, say) fails the scoring step
/// and gets an error verdict, which names no artifact.
///
/// Errors: as [`run_entry`].
pub(crate) fn run_scorer(
    ctx: &mut Ctx<'_>,
    entries: &[(PlannedEntry, String)],
) -> Result<ScorerRecord, RoundError> {
    let group = "Scorer";
    let mut steps = Vec::new();
    let mut record = ScorerRecord {
        steps: Vec::new(),
        verdicts: Vec::new(),
        failure: None,
        round_failure: None,
    };
    let mut start = ctx.begin(group, "Scorer, starting the engine", Phase::StartingEngine);
    let engine_log = ctx.bundle.join("logs/engines/scorer.log");
    let mut engine: Option<Box<dyn Engine>> = None;
    let started = (|| -> Result<(), StepError> {
        remove_stale(&[&engine_log])?;
        let tree = prepare(ctx, None, "trees/reference")?;
        let reference = ctx.frozen.campaign.correctness.effective_reference();
        let what = match reference {
            ReferenceRuntime::BaselineFullPrecision => {
                full_precision(&tree.config)?;
                "the baseline at full precision"
            }
            ReferenceRuntime::Baseline => "the baseline, its config unmodified",
        };
        let config = fs::read(&tree.config).map_err(IoError::at("reading", &tree.config))?;
        start.line(&format!(
            "reference runtime ({}): {what}, config sha256 {}",
            reference.as_str(),
            Sha256Hex::digest(&config)
        ));
        let engine = engine.insert(
            ctx.backend
                .engine(&tree.root, &tree.config, &engine_log, None),
        );
        ctx.engine_started();
        engine.start()?;
        engine.wait_healthy(Duration::from_secs(ctx.frozen.campaign.health_deadline_s))?;
        Ok(())
    })();
    let mut engine = match (started, engine) {
        (Ok(()), Some(engine)) => {
            steps.push(ctx.finish(start, StepStatus::Ok)?);
            engine
        }
        (started, mut engine) => {
            let mut reason = started
                .err()
                .map_or_else(|| "no engine was made".to_owned(), |e| error_chain(&e));
            start.line(&reason);
            if let Some(Err(e)) = engine.as_mut().map(|e| e.stop()) {
                let log = error_chain(&e);
                start.line(&format!("keeping the engine log failed: {log}"));
                reason = format!("{reason}; keeping its log failed: {log}");
            }
            ctx.engine_stopped();
            steps.push(ctx.finish(start, StepStatus::Failed)?);
            steps.push(ctx.skipped(group, "Scorer, running the shared scorer", Phase::Scoring)?);
            record.failure = Some(format!("the reference runtime failed: {reason}"));
            record.steps = steps;
            return Ok(record);
        }
    };
    let endpoint = engine.endpoint().unwrap_or_default();
    let mut scoring = ctx.begin(group, "Scorer, running the shared scorer", Phase::Scoring);
    let all_scored = score_all(ctx, &endpoint, entries, &mut scoring, &mut record);
    let alive = engine.is_running();
    let stopped = engine.stop();
    ctx.engine_stopped();
    if !alive {
        record.failure = Some("the reference runtime exited while scoring".into());
    }
    let kept = match stopped {
        Ok(()) => true,
        Err(e) => {
            let reason = error_chain(&e);
            scoring.line(&format!("keeping the engine log failed: {reason}"));
            if record.failure.is_none() {
                record.failure = Some(format!("the reference runtime's log: {reason}"));
            }
            false
        }
    };
    steps.push(ctx.finish(
        scoring,
        if alive && kept && all_scored {
            StepStatus::Ok
        } else {
            StepStatus::Failed
        },
    )?);
    record.steps = steps;
    Ok(record)
}

/// The scorer's work once the reference runs at `endpoint`: the reference tokenizes
/// every correctness prompt; the baseline's echo is checked against it first (a
/// difference makes the round `infra_failed`: no entry's echo could be judged); then
/// each entry is judged. The reference's stall past the correctness deadline makes the
/// round `infra_failed` too. Fills `record`'s verdicts and failure; returns whether
/// every entry got a verdict.
fn score_all(
    ctx: &Ctx<'_>,
    endpoint: &str,
    entries: &[(PlannedEntry, String)],
    scoring: &mut StepRun,
    record: &mut ScorerRecord,
) -> bool {
    let client = CompletionsClient::new(
        endpoint,
        &ctx.frozen.campaign.model.name,
        request_timeout_ms(ctx),
    )
    .with_api(ctx.frozen.campaign.api_profile());
    let deadline = correctness_deadline(ctx);
    let prompts = ctx.workload().and_then(|w| {
        let items = w.correctness_items();
        Ok(ctx.runtime.block_on(gate::within(
            deadline,
            "reference tokenization",
            gate::reference_prompts(&client, &items),
        ))?)
    });
    let prompts = match prompts {
        Ok(prompts) => prompts,
        Err(error) => {
            let round = error.scorer_deadline();
            reference_failed(scoring, record, &error, round);
            return false;
        }
    };
    let baseline = entries.iter().find(|(p, _)| p.role == Role::Baseline);
    let echo = match baseline {
        Some((_, rel)) => {
            read_outputs(ctx, rel).map(|o| gate::baseline_echo_failure(&o.items, &prompts))
        }
        None => Err(StepError::NoBaselineEcho),
    };
    match echo {
        Ok(None) => scoring.line("the baseline echoes the reference's prompt tokenization"),
        Ok(Some(failure)) => {
            scoring.line(&failure.to_string());
            record.failure = Some(failure.to_string());
            record.round_failure = Some(failure);
            return false;
        }
        Err(error) => {
            reference_failed(scoring, record, &error, None);
            return false;
        }
    }
    let mut all_scored = true;
    for (planned, outputs_rel) in entries.iter().filter(|(p, _)| p.role != Role::Baseline) {
        let judged = score_entry(ctx, &client, deadline, planned, outputs_rel, &prompts);
        let verdict = EntryVerdict {
            index: planned.index,
            summary: None,
            error: None,
            disqualification: None,
        };
        record.verdicts.push(match judged {
            Ok(Judged::Summary(summary, load_dq)) => {
                scoring.line(&format!(
                    "{}: {} items, max item {} µnat, max group mean {} µnat, {}",
                    planned.group,
                    summary.items,
                    summary.max_item_micro_nats,
                    summary.max_group_mean_micro_nats,
                    if summary.passed { "passed" } else { "failed" }
                ));
                if let Some(dq) = &load_dq {
                    scoring.line(&format!("{}: {}", planned.group, dq.detail));
                }
                EntryVerdict {
                    summary: Some(summary),
                    disqualification: load_dq,
                    ..verdict
                }
            }
            Ok(Judged::Disqualified(dq)) => {
                scoring.line(&format!("{}: {}", planned.group, dq.detail));
                EntryVerdict {
                    disqualification: Some(dq),
                    ..verdict
                }
            }
            Err(error) => {
                all_scored = false;
                if let Some(round) = error.scorer_deadline() {
                    reference_failed(scoring, record, &error, Some(round));
                    return false;
                }
                scoring.line(&format!("{}: {}", planned.group, error_chain(&error)));
                EntryVerdict {
                    error: Some(error_chain(&error)),
                    ..verdict
                }
            }
        });
    }
    all_scored
}

/// Records that the reference runtime failed (the round is then `infra_failed`, typed
/// `round` when it is more than `scorer_failed`).
fn reference_failed(
    scoring: &mut StepRun,
    record: &mut ScorerRecord,
    error: &StepError,
    round: Option<RoundFailure>,
) {
    let reason = format!("the reference runtime failed: {}", error_chain(error));
    scoring.line(&reason);
    record.failure = Some(reason);
    record.round_failure = round;
}

/// An entry as the scorer judged it.
enum Judged {
    /// Its distances were computed (the gate passed or failed), with the timed-run
    /// sample's disqualification when a sampled request diverged.
    Summary(CorrectnessSummary, Option<Disqualification>),
    /// It echoed a prompt that is not the reference's.
    Disqualified(Disqualification),
}

/// What an entry's run saved in `.work/` for the scorer: its correctness outputs and
/// the kept requests of its timed runs.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct SavedOutputs {
    items: Vec<ItemOutput>,
    load: Vec<KeptRun>,
}

/// An entry's correctness outputs, as its group saved them in `.work/`.
fn read_outputs(ctx: &Ctx<'_>, outputs_rel: &str) -> Result<SavedOutputs, StepError> {
    let path = ctx.work.join(outputs_rel);
    let bytes = fs::read(&path).map_err(IoError::at("reading", &path))?;
    serde_json::from_slice(&bytes).map_err(|e| StepError::Parse {
        path: path.clone(),
        message: e.to_string(),
    })
}

/// Judges one entry against the reference (`client`), within `deadline`: its echoed
/// prompts against the reference's `prompts`, then the reference teacher-forced on its
/// own prompt ids ‖ the entry's greedy tokens; writes the per-item artifact.
fn score_entry(
    ctx: &Ctx<'_>,
    client: &CompletionsClient,
    deadline: Duration,
    planned: &PlannedEntry,
    outputs_rel: &str,
    prompts: &[Vec<u32>],
) -> Result<Judged, StepError> {
    let items_file = format!("correctness/{}.json", planned.slug);
    let items_path = ctx.bundle.join(&items_file);
    let sample_file = format!("correctness/{}-load-sample.json", planned.slug);
    let sample_path = ctx.bundle.join(&sample_file);
    // A killed run's artifacts are not this verdict's.
    remove_stale(&[&items_path, &sample_path])?;
    let saved = read_outputs(ctx, outputs_rel)?;
    if let Some(dq) = gate::echo_disqualification(&saved.items, prompts) {
        return Ok(Judged::Disqualified(dq));
    }
    let spec = &ctx.frozen.campaign.correctness;
    let items = ctx.runtime.block_on(gate::within(
        deadline,
        "reference logprobs",
        gate::reference_items(client, &saved.items, prompts, spec.top_k),
    ))?;
    let artifact = CorrectnessItems {
        top_k: spec.top_k,
        group_size: spec.group_size,
        group_mean_bound_micro_nats: spec.group_mean_bound_micro_nats,
        item_bound_micro_nats: spec.item_bound_micro_nats,
        items,
    };
    // One line: both sides' top-k at every position, pretty, would be ~4× the size.
    intake::store::write_json_compact(&items_path, &artifact)?;
    // The timed runs' sample: only where the client kept requests (a sample seed and
    // `load_sample` > 0), recorded `not applicable` run by run where it cannot judge.
    let seed = ctx.setup_seeds()?.sample_seed;
    let (load_sample_file, load_dq) = match seed {
        Some(seed) if !saved.load.is_empty() => {
            let sample_spec = gate::SampleSpec {
                seed: &seed.seed,
                entry: planned.index,
                size: spec.effective_load_sample(),
                bound_micro_nats: spec.effective_load_bound_micro_nats(),
            };
            let sample = ctx.runtime.block_on(gate::within(
                deadline,
                "reference logprobs of the timed-run sample",
                gate::check_load_sample(client, sample_spec, &saved.load),
            ))?;
            super::write_artifact(&sample_path, &sample)?;
            (Some(sample_file), gate::load_disqualification(&sample))
        }
        _ => (None, None),
    };
    let (verdict, _) = correctness::verdict_from_artifact(&artifact);
    let summary = CorrectnessSummary {
        items: u32::try_from(artifact.items.len()).unwrap_or(u32::MAX),
        passed: verdict.passed,
        max_item_micro_nats: verdict.max_item_micro_nats,
        max_group_mean_micro_nats: verdict.max_group_mean_micro_nats,
        first_failing_item: verdict.first_failing_item,
        first_failing_group: verdict.first_failing_group,
        items_file,
        load_sample_file,
    };
    Ok(Judged::Summary(summary, load_dq))
}

/// Greedy outputs of every correctness item, one request at a time (the baseline's:
/// its prompt echo alone, `echo_only`), all within the correctness deadline, saved under
/// `.work/`; returns that file's `.work`-relative path.
fn take_outputs(
    ctx: &Ctx<'_>,
    endpoint: &str,
    slug: &str,
    step: &mut StepRun,
    echo_only: bool,
    load: Vec<KeptRun>,
) -> Result<String, StepError> {
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
    if !load.is_empty() {
        let kept: usize = load.iter().map(|r| r.requests.len()).sum();
        step.line(&format!(
            "{kept} requests of the timed runs' result probes kept for the sample"
        ));
    }
    let rel = format!("outputs/{slug}.json");
    let path = ctx.work.join(&rel);
    let saved = SavedOutputs {
        items: outputs,
        load,
    };
    let bytes = serde_json::to_vec(&saved).map_err(|e| StepError::Parse {
        path: path.clone(),
        message: e.to_string(),
    })?;
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(IoError::at("creating", parent))?;
    }
    receipts::fsutil::write_atomic(&path, &bytes, 0o644).map_err(IoError::at("writing", &path))?;
    Ok(rel)
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

/// Rewrites an engine config to full precision (f32 weights and KV cache): the
/// reference runtime of content/correctness.md §Correctness.
fn full_precision(config: &Path) -> Result<(), StepError> {
    let parse = |message: String| StepError::Parse {
        path: config.to_path_buf(),
        message,
    };
    let text = fs::read_to_string(config).map_err(IoError::at("reading", config))?;
    let mut table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| parse(e.to_string()))?;
    table.insert("weight_dtype".into(), toml::Value::String("f32".into()));
    table.insert("kv_cache_dtype".into(), toml::Value::String("f32".into()));
    let text = toml::to_string(&table).map_err(|e| parse(e.to_string()))?;
    receipts::fsutil::write_atomic(config, text.as_bytes(), 0o644)
        .map_err(IoError::at("writing", config))?;
    Ok(())
}

/// The SLA run of pass `pass` (run number `pass`, on its own sub-streams) through the
/// load generator: the one seam to `ratesearch`.
fn measure(
    ctx: &Ctx<'_>,
    endpoint: &str,
    pass: u32,
    keep_token_ids: std::collections::BTreeSet<u32>,
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
    let measured = result?;
    let kept = measured
        .result_outputs
        .iter()
        .map(|probe| kept_run(&workload, probe))
        .collect();
    Ok((measured.measurement, kept))
}

/// The workload items whose token ids the load client keeps for entry `entry`
/// ([`receipts::rules::sample::keep_pool`]); none without a sample seed (a round opened
/// before v3) or with `correctness.load_sample = 0`.
fn sample_pool(ctx: &Ctx<'_>, entry: u32) -> std::collections::BTreeSet<u32> {
    let n = ctx.frozen.campaign.correctness.effective_load_sample();
    let seeds = ctx.setup_seeds().ok();
    match (seeds.and_then(|s| s.sample_seed), ctx.workload()) {
        (Some(seed), Ok(workload)) if n > 0 => {
            receipts::rules::sample::keep_pool(&seed.seed, entry, workload.sub_stream_len(), n)
                .into_iter()
                .collect()
        }
        _ => std::collections::BTreeSet::new(),
    }
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
                super::verdict_words(record.verdict),
                record.throughput_milli_rps
            ));
        }
    }
}

/// The deadline of one entry's correctness outputs, and of the reference's answers for
/// one entry (`correctness.deadline_s`, capped by the entry deadline).
fn correctness_deadline(ctx: &Ctx<'_>) -> Duration {
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
    use receipts::model::{BackendKind, CpuPinning, Timestamp};
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
