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
    CorrectnessItem, CorrectnessItems, CorrectnessSummary, Disqualification,
    DisqualificationReason, EngineRef, EntryMeasurement, MeasurementOutcome, Phase, ProbeRecord,
    Role, Sha256Hex, Step, StepStatus, Timestamp,
};
use serde::{Deserialize, Serialize};

use super::record::{EntryRecord, EntryResult, EntryVerdict, PlannedEntry, ScorerRecord};
use super::{Ctx, RoundError, StepRun};
use crate::correctness::CompletionsClient;
use engines::{Engine, EngineError, LOG_TAIL_LINES, log_tail};
use loadgen::search::ProgressSink;
use receipts::rules::correctness;

/// One correctness item as the entry answered it (kept in `.work/`: raw float logprobs).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ItemOutput {
    index: u32,
    prompt_sha256: Sha256Hex,
    prompt_token_ids: Vec<u32>,
    token_ids: Vec<u32>,
    top_k: Vec<Vec<(u32, i64)>>,
}

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
    /// An engine's completions API failed for one correctness item.
    #[error("{what} of item {item}")]
    Client {
        /// `correctness outputs` or `reference logprobs`.
        what: &'static str,
        /// The correctness item.
        item: u32,
        /// The cause.
        #[source]
        source: crate::correctness::ClientError,
    },
    /// The two sides of a distance do not fit together.
    #[error(transparent)]
    Correctness(#[from] receipts::rules::correctness::CorrectnessError),
    /// The round's workload could not be built.
    #[error(transparent)]
    Workload(#[from] receipts::rules::workload::WorkloadError),
    /// A step that needs the round's seeds ran before setup (a corrupt journal).
    #[error("the round has no seeds before setup")]
    NoSeeds,
    /// A correctness output of the wrong length.
    #[error("correctness item {item}: {got} output tokens, asked for {asked}")]
    OutputLength {
        /// The correctness item.
        item: u32,
        /// Token ids observed.
        got: usize,
        /// `max_tokens` asked.
        asked: u32,
    },
}

impl StepError {
    /// Whether the entry's engine caused it (its answers to the correctness requests),
    /// rather than the runner: only then is a failed correctness step the entry's
    /// compliance failure; otherwise the entry is `infra_failed`.
    fn is_entrys_fault(&self) -> bool {
        matches!(
            self,
            Self::Client { .. } | Self::OutputLength { .. } | Self::Correctness(_)
        )
    }
}

/// A patched tree ready to serve.
struct Tree {
    root: PathBuf,
    config: PathBuf,
    /// sha256 of its engine config, read once.
    config_sha256: Sha256Hex,
}

/// Which run of an entry a group is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GroupKind {
    /// The entry's own group: the baseline, the incumbent or a candidate.
    Entry,
    /// The baseline again at the end of the round (the drift check).
    DriftBaseline,
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

/// Runs one entry's group: the baseline, the incumbent, a candidate, or the drift
/// baseline. Correctness outputs are taken for every entry but the baseline.
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
    kind: GroupKind,
) -> Result<EntryRecord, RoundError> {
    let drift = kind == GroupKind::DriftBaseline;
    let group = if drift {
        "Drift baseline".to_owned()
    } else {
        planned.group.clone()
    };
    let slug = if drift {
        "drift-baseline".to_owned()
    } else {
        planned.slug.clone()
    };
    let started_at = Timestamp::now();
    let wants_outputs = planned.role != Role::Baseline && !drift;
    let mut steps: Vec<Step> = Vec::new();
    let engine_log_rel = format!("logs/engines/{slug}.log");
    let engine_log = ctx.bundle.join(&engine_log_rel);
    let probe_log_rel = format!("probes/{slug}.json");
    let probe_log = ctx.bundle.join(&probe_log_rel);
    let mut record = EntryRecord {
        index: planned.index,
        drift,
        steps: Vec::new(),
        started_at,
        ended_at: started_at,
        engine: EngineRef {
            backend: ctx.backend.kind(),
            config_sha256: Sha256Hex::digest(b""),
            image: None,
            command: None,
        },
        engine_log: None,
        probe_log: None,
        result: EntryResult::InfraFailed {
            reason: "not run".into(),
        },
    };

    // Start → healthy.
    let mut start = ctx.begin(
        &group,
        &format!("{group}, starting the engine"),
        Phase::StartingEngine,
    );
    // A killed run of this group left its logs: the engine log would be appended to, and
    // a probe log this run does not write again would be sealed as if it were its.
    if let Err(error) = remove_stale(&[&engine_log, &probe_log]) {
        let reason = error_chain(&error);
        start.line(&reason);
        steps.push(ctx.finish(start, StepStatus::Failed)?);
        record.result = EntryResult::InfraFailed { reason };
        return close(ctx, record, steps, &group, wants_outputs, Reached::Start);
    }
    let tree = match prepare(ctx, planned.patch.as_ref(), &format!("trees/{slug}")) {
        Ok(tree) => tree,
        Err(error) => {
            let reason = error_chain(&error);
            start.line(&format!("preparing the tree failed: {reason}"));
            steps.push(ctx.finish(start, StepStatus::Failed)?);
            record.result = EntryResult::InfraFailed { reason };
            return close(ctx, record, steps, &group, wants_outputs, Reached::Start);
        }
    };
    record.engine.config_sha256 = tree.config_sha256.clone();
    start.line(&format!(
        "tree `{}`, config sha256 {}",
        tree.root.display(),
        record.engine.config_sha256
    ));
    let mut engine = ctx.backend.engine(&tree.root, &tree.config, &engine_log);
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
        return close(ctx, record, steps, &group, wants_outputs, Reached::Start);
    }
    record.engine.command = engine.command().map(<[String]>::to_vec);
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
                reason: DisqualificationReason::EngineDiedBeforeHealthy,
                detail,
                log_tail,
            });
            stop_engine(ctx, engine.as_mut(), &mut start, &mut record.result);
            steps.push(ctx.finish(start, StepStatus::Failed)?);
            return close(ctx, record, steps, &group, wants_outputs, Reached::Start);
        }
        Err(e) => {
            start.line(&format!("{e}"));
            record.result = EntryResult::InfraFailed {
                reason: error_chain(&e),
            };
            stop_engine(ctx, engine.as_mut(), &mut start, &mut record.result);
            steps.push(ctx.finish(start, StepStatus::Failed)?);
            return close(ctx, record, steps, &group, wants_outputs, Reached::Start);
        }
    }
    let endpoint = engine.endpoint().unwrap_or_default();

    // SLA runs.
    let mut sla = ctx.begin(&group, &format!("{group}, running SLA"), Phase::RunningSla);
    let measurement = match measure(ctx, &endpoint, &mut sla) {
        Ok(m) => m,
        Err(error) => {
            let reason = error_chain(&error);
            sla.line(&reason);
            record.result = stop_after_failure(ctx, engine.as_mut(), &mut sla, reason);
            steps.push(ctx.finish(sla, StepStatus::Failed)?);
            return close(ctx, record, steps, &group, wants_outputs, Reached::Sla);
        }
    };
    if let Err(e) = super::write_artifact(&probe_log, &measurement) {
        let reason = error_chain(&e);
        sla.line(&format!("writing the probe log failed: {reason}"));
        record.result = EntryResult::InfraFailed { reason };
        stop_engine(ctx, engine.as_mut(), &mut sla, &mut record.result);
        steps.push(ctx.finish(sla, StepStatus::Failed)?);
        return close(ctx, record, steps, &group, wants_outputs, Reached::Sla);
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
        return close(ctx, record, steps, &group, wants_outputs, Reached::Sla);
    }
    let sla_ok = measurement.outcome == MeasurementOutcome::Measured;

    // Correctness outputs, one request at a time, when the SLA was met; the engine's last
    // step is then this one, else the SLA runs.
    let takes_outputs = wants_outputs && sla_ok;
    let mut outputs = None;
    let mut outputs_error = None;
    let mut infra_error = None;
    let (mut last, last_ok) = if takes_outputs {
        steps.push(ctx.finish(sla, StepStatus::Ok)?);
        let mut step = ctx.begin(
            &group,
            &format!("{group}, running correctness"),
            Phase::RunningCorrectness,
        );
        let taken = match take_outputs(ctx, &endpoint, &slug, &mut step) {
            Ok(rel) => {
                outputs = Some(rel);
                true
            }
            Err(error) => {
                let reason = error_chain(&error);
                step.line(&reason);
                if error.is_entrys_fault() {
                    outputs_error = Some(reason);
                } else {
                    infra_error = Some(reason);
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
        },
    };
    let kept = stop_engine(ctx, engine.as_mut(), &mut last, &mut result);
    if kept && crashed {
        result = EntryResult::Disqualified(Disqualification {
            reason: DisqualificationReason::EngineCrashed,
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
            &format!("{group}, running correctness"),
            Phase::RunningCorrectness,
        )?);
    }
    record.result = result;
    record.steps = steps;
    record.ended_at = Timestamp::now();
    Ok(record)
}

/// Fills in the skipped steps of a group that ended early at `reached` and closes the
/// record; its correctness step is skipped too when the group has one (`wants_outputs`).
fn close(
    ctx: &mut Ctx<'_>,
    mut record: EntryRecord,
    mut steps: Vec<Step>,
    group: &str,
    wants_outputs: bool,
    reached: Reached,
) -> Result<EntryRecord, RoundError> {
    ctx.engine_stopped();
    if reached == Reached::Start {
        steps.push(ctx.skipped(group, &format!("{group}, running SLA"), Phase::RunningSla)?);
    }
    if wants_outputs {
        steps.push(ctx.skipped(
            group,
            &format!("{group}, running correctness"),
            Phase::RunningCorrectness,
        )?);
    }
    record.steps = steps;
    record.ended_at = Timestamp::now();
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
            reason: DisqualificationReason::EngineCrashed,
            detail: format!("the engine exited while being measured ({reason})"),
            log_tail: log_tail(engine.log_path(), LOG_TAIL_LINES),
        });
    }
    result
}

/// Removes files a killed run of a group left; one that is not there (or whose directory
/// is not) is fine.
fn remove_stale(paths: &[&Path]) -> Result<(), StepError> {
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

/// The scorer's group: the baseline at full precision as the reference runtime,
/// teacher-forced on each entry's prompt and greedy tokens; writes each entry's per-item
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
    };
    let mut start = ctx.begin(group, "Scorer, starting the engine", Phase::StartingEngine);
    let engine_log = ctx.bundle.join("logs/engines/scorer.log");
    let mut engine: Option<Box<dyn Engine>> = None;
    let started = (|| -> Result<(), StepError> {
        remove_stale(&[&engine_log])?;
        let tree = prepare(ctx, None, "trees/reference")?;
        full_precision(&tree.config)?;
        let config = fs::read(&tree.config).map_err(IoError::at("reading", &tree.config))?;
        start.line(&format!(
            "reference runtime: the baseline at full precision, config sha256 {}",
            Sha256Hex::digest(&config)
        ));
        let engine = engine.insert(ctx.backend.engine(&tree.root, &tree.config, &engine_log));
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
    let mut all_scored = true;
    for (planned, outputs_rel) in entries {
        let verdict = score_entry(ctx, &endpoint, planned, outputs_rel);
        match &verdict {
            Ok(summary) => scoring.line(&format!(
                "{}: {} items, max item {} µnat, max group mean {} µnat, {}",
                planned.group,
                summary.items,
                summary.max_item_micro_nats,
                summary.max_group_mean_micro_nats,
                if summary.passed { "passed" } else { "failed" }
            )),
            Err(e) => {
                all_scored = false;
                scoring.line(&format!("{}: {}", planned.group, error_chain(e)));
            }
        }
        record.verdicts.push(match verdict {
            Ok(summary) => EntryVerdict {
                index: planned.index,
                summary: Some(summary),
                error: None,
            },
            Err(error) => EntryVerdict {
                index: planned.index,
                summary: None,
                error: Some(error_chain(&error)),
            },
        });
    }
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

/// Computes one entry's distances against the reference at `endpoint` and writes its
/// per-item artifact.
fn score_entry(
    ctx: &Ctx<'_>,
    endpoint: &str,
    planned: &PlannedEntry,
    outputs_rel: &str,
) -> Result<CorrectnessSummary, StepError> {
    let items_file = format!("correctness/{}.json", planned.slug);
    let items_path = ctx.bundle.join(&items_file);
    // A killed run's artifact is not this verdict's.
    remove_stale(&[&items_path])?;
    let path = ctx.work.join(outputs_rel);
    let bytes = fs::read(&path).map_err(IoError::at("reading", &path))?;
    let outputs: Vec<ItemOutput> =
        serde_json::from_slice(&bytes).map_err(|e| StepError::Parse {
            path: path.clone(),
            message: e.to_string(),
        })?;
    let spec = &ctx.frozen.campaign.correctness;
    let client = CompletionsClient::new(
        endpoint,
        &ctx.frozen.campaign.model.name,
        request_timeout_ms(ctx),
    );
    let mut items = Vec::with_capacity(outputs.len());
    for output in &outputs {
        let reference = ctx
            .runtime
            .block_on(client.teacher_forced(
                &output.prompt_token_ids,
                &output.token_ids,
                spec.top_k,
            ))
            .map_err(|source| StepError::Client {
                what: "reference logprobs",
                item: output.index,
                source,
            })?;
        let positions = correctness::item_positions_micro_nats(
            output.index,
            spec.top_k,
            &output.top_k,
            &reference,
        )?;
        items.push(CorrectnessItem {
            index: output.index,
            prompt_sha256: output.prompt_sha256.clone(),
            prompt_tokens: u32::try_from(output.prompt_token_ids.len()).unwrap_or(u32::MAX),
            output_token_ids: output.token_ids.clone(),
            distance_micro_nats: correctness::item_distance_micro_nats(&positions),
            position_micro_nats: positions,
        });
    }
    let artifact = CorrectnessItems {
        top_k: spec.top_k,
        group_size: spec.group_size,
        group_mean_bound_micro_nats: spec.group_mean_bound_micro_nats,
        item_bound_micro_nats: spec.item_bound_micro_nats,
        items,
    };
    super::write_artifact(&items_path, &artifact)?;
    let (verdict, _) = correctness::verdict_from_artifact(&artifact);
    Ok(CorrectnessSummary {
        items: u32::try_from(artifact.items.len()).unwrap_or(u32::MAX),
        passed: verdict.passed,
        max_item_micro_nats: verdict.max_item_micro_nats,
        max_group_mean_micro_nats: verdict.max_group_mean_micro_nats,
        first_failing_item: verdict.first_failing_item,
        first_failing_group: verdict.first_failing_group,
        items_file,
    })
}

/// Greedy outputs of every correctness item, one request at a time, saved under
/// `.work/`; returns that file's `.work`-relative path.
fn take_outputs(
    ctx: &Ctx<'_>,
    endpoint: &str,
    slug: &str,
    step: &mut StepRun,
) -> Result<String, StepError> {
    let items = ctx.workload()?.correctness_items();
    let spec = &ctx.frozen.campaign.correctness;
    let client = CompletionsClient::new(
        endpoint,
        &ctx.frozen.campaign.model.name,
        request_timeout_ms(ctx),
    );
    let mut outputs = Vec::with_capacity(items.len());
    for item in &items {
        let greedy = ctx
            .runtime
            .block_on(client.greedy(&item.prompt, item.max_tokens, spec.top_k))
            .map_err(|source| StepError::Client {
                what: "correctness outputs",
                item: item.item_index,
                source,
            })?;
        if greedy.token_ids.len() != usize::try_from(item.max_tokens).unwrap_or(usize::MAX) {
            return Err(StepError::OutputLength {
                item: item.item_index,
                got: greedy.token_ids.len(),
                asked: item.max_tokens,
            });
        }
        outputs.push(ItemOutput {
            index: item.item_index,
            prompt_sha256: item.prompt_sha256.clone(),
            prompt_token_ids: greedy.prompt_token_ids,
            token_ids: greedy.token_ids,
            top_k: greedy.top_k,
        });
    }
    step.line(&format!("{} correctness items answered", outputs.len()));
    let rel = format!("outputs/{slug}.json");
    let path = ctx.work.join(&rel);
    let bytes = serde_json::to_vec(&outputs).map_err(|e| StepError::Parse {
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
fn prepare(ctx: &Ctx<'_>, patch: Option<&Sha256Hex>, rel: &str) -> Result<Tree, StepError> {
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

/// The SLA runs through the load generator: the one seam to `ratesearch`.
fn measure(
    ctx: &Ctx<'_>,
    endpoint: &str,
    step: &mut StepRun,
) -> Result<EntryMeasurement, StepError> {
    let sink = ProbeLines {
        progress: ctx.progress,
        lines: std::sync::Mutex::new(Vec::new()),
    };
    let target = loadgen::Target {
        base_url: endpoint.to_owned(),
        model: ctx.frozen.campaign.model.name.clone(),
    };
    let workload = ctx.workload()?;
    let result = ctx.runtime.block_on(loadgen::measure_workload(
        &target,
        &workload,
        &loadgen::MeasureConfig::from_campaign(&ctx.frozen.campaign),
        &sink,
    ));
    for line in sink.lines.into_inner().unwrap_or_default() {
        step.line(&line);
    }
    Ok(result?)
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

fn request_timeout_ms(ctx: &Ctx<'_>) -> u64 {
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
