//! One entry's group of steps (start the engine → healthy or disqualified with its log
//! tail → SLA runs → correctness outputs → stop), and the scorer's group (the reference
//! runtime teacher-forced on each entry's tokens). A failing step never stops the round:
//! it becomes the entry's typed status.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use receipts::model::{
    Backend, CorrectnessItem, CorrectnessItems, CorrectnessSummary, Disqualification,
    DisqualificationReason, EngineRef, EntryMeasurement, MeasurementOutcome, Phase, ProbeRecord,
    Role, Sha256Hex, Step, StepStatus, Timestamp,
};
use serde::{Deserialize, Serialize};

use super::record::{EntryRecord, EntryResult, EntryVerdict, PlannedEntry, ScorerRecord};
use super::{Ctx, StepRun};
use crate::correctness::{self, client::CompletionsClient};
use crate::engines::{
    BuiltinEngine, BuiltinOptions, Engine, EngineError, LOG_TAIL_LINES, ProcessEngine,
    ProcessOptions, engine_threads, log_tail,
};
use crate::ratesearch::ProgressSink;

/// One correctness item as the entry answered it (kept in `.work/`: raw float logprobs).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ItemOutput {
    index: u32,
    prompt_sha256: Sha256Hex,
    prompt_token_ids: Vec<u32>,
    token_ids: Vec<u32>,
    top_k: Vec<Vec<(u32, f64)>>,
}

/// A patched tree ready to serve.
struct Tree {
    root: PathBuf,
    config: PathBuf,
}

/// Runs one entry's group: the baseline, the incumbent, a candidate, or (with `drift`)
/// the drift baseline. Correctness outputs are taken for every entry but the baseline.
pub(crate) fn run_entry(ctx: &mut Ctx<'_>, planned: &PlannedEntry, drift: bool) -> EntryRecord {
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
    let _ = fs::remove_file(&engine_log);
    let mut record = EntryRecord {
        index: planned.index,
        drift,
        steps: Vec::new(),
        started_at,
        ended_at: started_at,
        engine: EngineRef {
            backend: backend_name(&ctx.campaign.backend).to_owned(),
            config_sha256: Sha256Hex::digest(b""),
            image: None,
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
    let tree = match prepare(ctx, planned.patch.as_ref(), &format!("trees/{slug}")) {
        Ok(tree) => tree,
        Err(reason) => {
            start.line(&format!("preparing the tree failed: {reason}"));
            steps.push(ctx.finish(start, StepStatus::Failed));
            record.result = EntryResult::InfraFailed { reason };
            return close(ctx, record, steps, &group, wants_outputs, 0);
        }
    };
    let config_bytes = fs::read(&tree.config).unwrap_or_default();
    record.engine.config_sha256 = Sha256Hex::digest(&config_bytes);
    start.line(&format!(
        "tree `{}`, config sha256 {}",
        tree.root.display(),
        record.engine.config_sha256
    ));
    let mut engine = match make_engine(ctx, &tree, &engine_log) {
        Ok(engine) => engine,
        Err(reason) => {
            start.line(&reason);
            steps.push(ctx.finish(start, StepStatus::Failed));
            record.result = EntryResult::InfraFailed { reason };
            return close(ctx, record, steps, &group, wants_outputs, 0);
        }
    };
    record.engine_log = Some(engine_log_rel);
    ctx.engine_started();
    if let Err(e) = engine.start() {
        start.line(&format!("{e}"));
        steps.push(ctx.finish(start, StepStatus::Failed));
        record.result = EntryResult::InfraFailed {
            reason: error_chain(&e),
        };
        return close(ctx, record, steps, &group, wants_outputs, 0);
    }
    let deadline = Duration::from_secs(ctx.campaign.health_deadline_s);
    match engine.wait_healthy(deadline) {
        Ok(()) => {
            start.line(&format!(
                "healthy at {}",
                engine.endpoint().unwrap_or_default()
            ));
            steps.push(ctx.finish(start, StepStatus::Ok));
        }
        Err(EngineError::DiedBeforeHealthy { detail, log_tail }) => {
            let detail = format!("engine died before becoming healthy ({detail})");
            start.line(&detail);
            steps.push(ctx.finish(start, StepStatus::Failed));
            record.result = EntryResult::Disqualified(Disqualification {
                reason: DisqualificationReason::EngineDiedBeforeHealthy,
                detail,
                log_tail,
            });
            return close(ctx, record, steps, &group, wants_outputs, 0);
        }
        Err(e) => {
            start.line(&format!("{e}"));
            steps.push(ctx.finish(start, StepStatus::Failed));
            engine.stop();
            record.result = EntryResult::InfraFailed {
                reason: error_chain(&e),
            };
            return close(ctx, record, steps, &group, wants_outputs, 0);
        }
    }
    let endpoint = engine.endpoint().unwrap_or_default();

    // SLA runs.
    let mut sla = ctx.begin(&group, &format!("{group}, running SLA"), Phase::RunningSla);
    let measured = measure(ctx, &endpoint, &mut sla);
    let measurement = match measured {
        Ok(m) => m,
        Err(reason) => {
            sla.line(&reason);
            steps.push(ctx.finish(sla, StepStatus::Failed));
            record.result = crashed_or_infra(engine.as_mut(), reason);
            engine.stop();
            return close(ctx, record, steps, &group, wants_outputs, 1);
        }
    };
    let probe_log_rel = format!("probes/{slug}.json");
    if let Err(e) = super::write_artifact(&ctx.bundle.join(&probe_log_rel), &measurement) {
        sla.line(&format!("writing the probe log failed: {e}"));
    }
    record.probe_log = Some(probe_log_rel);
    sla.line(&format!(
        "throughput {} milli-req/s (min {}, max {}), outcome {:?}",
        opt(measurement.throughput_milli_rps),
        opt(measurement.throughput_min_milli_rps),
        opt(measurement.throughput_max_milli_rps),
        measurement.outcome
    ));
    if !engine.is_running() {
        steps.push(ctx.finish(sla, StepStatus::Failed));
        record.result = crashed_or_infra(
            engine.as_mut(),
            "the engine exited during the SLA runs".into(),
        );
        return close(ctx, record, steps, &group, wants_outputs, 1);
    }
    let sla_ok = measurement.outcome == MeasurementOutcome::Measured;
    steps.push(ctx.finish(
        sla,
        if sla_ok {
            StepStatus::Ok
        } else {
            StepStatus::Failed
        },
    ));

    // Correctness outputs, one request at a time.
    let mut outputs = None;
    let mut outputs_error = None;
    if wants_outputs {
        if sla_ok {
            let mut step = ctx.begin(
                &group,
                &format!("{group}, running correctness"),
                Phase::RunningCorrectness,
            );
            match take_outputs(ctx, &endpoint, &slug, &mut step) {
                Ok(rel) => {
                    outputs = Some(rel);
                    steps.push(ctx.finish(step, StepStatus::Ok));
                }
                Err(reason) => {
                    step.line(&reason);
                    outputs_error = Some(reason);
                    steps.push(ctx.finish(step, StepStatus::Failed));
                }
            }
        } else {
            steps.push(ctx.skipped(
                &group,
                &format!("{group}, running correctness"),
                Phase::RunningCorrectness,
            ));
        }
    }
    let crashed = !engine.is_running();
    engine.stop();
    ctx.engine_stopped();
    record.result = if crashed {
        EntryResult::Disqualified(Disqualification {
            reason: DisqualificationReason::EngineCrashed,
            detail: "the engine exited while being measured".into(),
            log_tail: log_tail(engine.log_path(), LOG_TAIL_LINES),
        })
    } else {
        EntryResult::Measured {
            measurement: Box::new(measurement),
            outputs,
            outputs_error,
        }
    };
    record.steps = steps;
    record.ended_at = Timestamp::now();
    record
}

/// Fills in the skipped steps of a group that ended early and closes the record.
/// `done` is how many of the engine steps (start, SLA) already ran.
fn close(
    ctx: &mut Ctx<'_>,
    mut record: EntryRecord,
    mut steps: Vec<Step>,
    group: &str,
    wants_outputs: bool,
    done: usize,
) -> EntryRecord {
    ctx.engine_stopped();
    if done < 1 {
        steps.push(ctx.skipped(group, &format!("{group}, running SLA"), Phase::RunningSla));
    }
    if wants_outputs {
        steps.push(ctx.skipped(
            group,
            &format!("{group}, running correctness"),
            Phase::RunningCorrectness,
        ));
    }
    record.steps = steps;
    record.ended_at = Timestamp::now();
    record
}

/// The scorer's group: the baseline at full precision as the reference runtime,
/// teacher-forced on each entry's prompt and greedy tokens; writes each entry's per-item
/// artifact `correctness/<slug>.json` and returns the verdicts.
pub(crate) fn run_scorer(ctx: &mut Ctx<'_>, entries: &[(PlannedEntry, String)]) -> ScorerRecord {
    let group = "Scorer";
    let mut steps = Vec::new();
    let mut record = ScorerRecord {
        steps: Vec::new(),
        verdicts: Vec::new(),
        failure: None,
    };
    let mut start = ctx.begin(group, "Scorer, starting the engine", Phase::StartingEngine);
    let engine_log = ctx.bundle.join("logs/engines/scorer.log");
    let _ = fs::remove_file(&engine_log);
    let started = (|| -> Result<Box<dyn Engine>, String> {
        let tree = prepare(ctx, None, "trees/reference")?;
        full_precision(&tree.config)?;
        start.line(&format!(
            "reference runtime: the baseline at full precision, config sha256 {}",
            Sha256Hex::digest(&fs::read(&tree.config).unwrap_or_default())
        ));
        let mut engine = make_engine(ctx, &tree, &engine_log)?;
        ctx.engine_started();
        engine.start().map_err(|e| error_chain(&e))?;
        engine
            .wait_healthy(Duration::from_secs(ctx.campaign.health_deadline_s))
            .map_err(|e| error_chain(&e))?;
        Ok(engine)
    })();
    let mut engine = match started {
        Ok(engine) => {
            steps.push(ctx.finish(start, StepStatus::Ok));
            engine
        }
        Err(reason) => {
            start.line(&reason);
            ctx.engine_stopped();
            steps.push(ctx.finish(start, StepStatus::Failed));
            steps.push(ctx.skipped(group, "Scorer, running the shared scorer", Phase::Scoring));
            record.failure = Some(format!("the reference runtime failed: {reason}"));
            record.steps = steps;
            return record;
        }
    };
    let endpoint = engine.endpoint().unwrap_or_default();
    let mut scoring = ctx.begin(group, "Scorer, running the shared scorer", Phase::Scoring);
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
            Err(e) => scoring.line(&format!("{}: {e}", planned.group)),
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
                error: Some(error),
            },
        });
    }
    let alive = engine.is_running();
    engine.stop();
    ctx.engine_stopped();
    if !alive {
        record.failure = Some("the reference runtime exited while scoring".into());
    }
    steps.push(ctx.finish(
        scoring,
        if alive {
            StepStatus::Ok
        } else {
            StepStatus::Failed
        },
    ));
    record.steps = steps;
    record
}

/// Computes one entry's distances against the reference at `endpoint` and writes its
/// per-item artifact.
fn score_entry(
    ctx: &Ctx<'_>,
    endpoint: &str,
    planned: &PlannedEntry,
    outputs_rel: &str,
) -> Result<CorrectnessSummary, String> {
    let path = ctx.work.join(outputs_rel);
    let bytes = fs::read(&path).map_err(|e| format!("reading `{}`: {e}", path.display()))?;
    let outputs: Vec<ItemOutput> =
        serde_json::from_slice(&bytes).map_err(|e| format!("parsing `{}`: {e}", path.display()))?;
    let spec = &ctx.campaign.correctness;
    let client =
        CompletionsClient::new(endpoint, &ctx.campaign.model.name, request_timeout_ms(ctx));
    let mut items = Vec::with_capacity(outputs.len());
    for output in &outputs {
        let reference = ctx
            .runtime
            .block_on(client.teacher_forced(
                &output.prompt_token_ids,
                &output.token_ids,
                spec.top_k,
            ))
            .map_err(|e| {
                format!(
                    "reference logprobs of item {}: {}",
                    output.index,
                    error_chain(&e)
                )
            })?;
        let positions = correctness::item_positions_micro_nats(
            output.index,
            spec.top_k,
            &output.top_k,
            &reference,
        )
        .map_err(|e| e.to_string())?;
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
    let items_file = format!("correctness/{}.json", planned.slug);
    super::write_artifact(&ctx.bundle.join(&items_file), &artifact)
        .map_err(|e| format!("writing `{items_file}`: {e}"))?;
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
) -> Result<String, String> {
    let items = ctx.correctness_items()?;
    let spec = &ctx.campaign.correctness;
    let client =
        CompletionsClient::new(endpoint, &ctx.campaign.model.name, request_timeout_ms(ctx));
    let mut outputs = Vec::with_capacity(items.len());
    for item in &items {
        let greedy = ctx
            .runtime
            .block_on(client.greedy(&item.prompt, item.max_tokens, spec.top_k))
            .map_err(|e| format!("correctness item {}: {}", item.item_index, error_chain(&e)))?;
        if greedy.token_ids.len() != usize::try_from(item.max_tokens).unwrap_or(usize::MAX) {
            return Err(format!(
                "correctness item {}: {} output tokens, asked for {}",
                item.item_index,
                greedy.token_ids.len(),
                item.max_tokens
            ));
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
    let bytes = serde_json::to_vec(&outputs).map_err(|e| e.to_string())?;
    let path = ctx.work.join(&rel);
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(|e| format!("creating `{}`: {e}", parent.display()))?;
    }
    receipts::fsutil::write_atomic(&path, &bytes, 0o644)
        .map_err(|e| format!("writing `{}`: {e}", path.display()))?;
    Ok(rel)
}

/// Checks out the pinned baseline (with `patch` applied) into `.work/<rel>` and returns
/// its root and engine config. The one seam to the gates' `prepare_tree`.
fn prepare(ctx: &Ctx<'_>, patch: Option<&Sha256Hex>, rel: &str) -> Result<Tree, String> {
    let dest = ctx.work.join(rel);
    if dest.exists() {
        fs::remove_dir_all(&dest).map_err(|e| format!("removing `{}`: {e}", dest.display()))?;
    }
    let prepared = crate::gates::prepare_tree(&ctx.campaign_dir, &ctx.campaign, patch, &dest)
        .map_err(|e| error_chain(&e))?;
    Ok(Tree {
        root: prepared.root,
        config: prepared.engine_config,
    })
}

/// Rewrites an engine config to full precision (f32 weights and KV cache): the
/// reference runtime of MEASUREMENT.md §Correctness.
fn full_precision(config: &Path) -> Result<(), String> {
    let text =
        fs::read_to_string(config).map_err(|e| format!("reading `{}`: {e}", config.display()))?;
    let mut table: toml::Table = text
        .parse()
        .map_err(|e| format!("parsing `{}`: {e}", config.display()))?;
    table.insert("weight_dtype".into(), toml::Value::String("f32".into()));
    table.insert("kv_cache_dtype".into(), toml::Value::String("f32".into()));
    let text = toml::to_string(&table).map_err(|e| e.to_string())?;
    fs::write(config, text).map_err(|e| format!("writing `{}`: {e}", config.display()))
}

/// The engine for `tree`, by the campaign's backend.
fn make_engine(ctx: &Ctx<'_>, tree: &Tree, log: &Path) -> Result<Box<dyn Engine>, String> {
    let pid_file = ctx.work.join("engines.pid");
    match &ctx.campaign.backend {
        Backend::Builtin => Ok(Box::new(BuiltinEngine::new(BuiltinOptions {
            program: ctx.options.engine_program.clone(),
            config: tree.config.clone(),
            memory_limit_mb: ctx.campaign.hardware.memory_limit_mb,
            threads: engine_threads(ctx.campaign.hardware.engine_threads),
            served_model_name: ctx.campaign.model.name.clone(),
            log: log.to_path_buf(),
            pid_file,
        }))),
        Backend::Process { command } => Ok(Box::new(ProcessEngine::new(ProcessOptions {
            command: command.clone(),
            tree: tree.root.clone(),
            config: tree.config.clone(),
            log: log.to_path_buf(),
            pid_file,
        }))),
        Backend::Docker => Err("the docker backend is not available in this build".into()),
    }
}

fn backend_name(backend: &Backend) -> &'static str {
    match backend {
        Backend::Builtin => "builtin",
        Backend::Process { .. } => "process",
        Backend::Docker => "docker",
    }
}

/// The SLA runs through the load generator: the one seam to `ratesearch`.
fn measure(ctx: &Ctx<'_>, endpoint: &str, step: &mut StepRun) -> Result<EntryMeasurement, String> {
    let sink = ProbeLines {
        progress: ctx.progress,
        lines: std::sync::Mutex::new(Vec::new()),
    };
    let target = crate::load::Target {
        base_url: endpoint.to_owned(),
        model: ctx.campaign.model.name.clone(),
    };
    let result = ctx.runtime.block_on(crate::load::measure_entry(
        &target,
        &ctx.campaign,
        &ctx.setup_seeds()?,
        &sink,
    ));
    for line in sink.lines.into_inner().unwrap_or_default() {
        step.line(&line);
    }
    result.map_err(|e| error_chain(&e))
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
                "run {} probe {}: rate {} milli-req/s, {}/{} completed, {} over bound, p {} µs, send lag p99 {} µs, {:?}, throughput {} milli-req/s",
                record.run,
                record.probe,
                record.rate_milli_rps,
                record.completed,
                record.requests,
                record.over_bound,
                opt(record.percentile_us),
                record.send_lag_p99_us,
                record.verdict,
                record.throughput_milli_rps
            ));
        }
    }
}

/// A measurement failure: the engine crashed when it is no longer running, otherwise
/// the infrastructure (the client) failed.
fn crashed_or_infra(engine: &mut dyn Engine, reason: String) -> EntryResult {
    if engine.is_running() {
        EntryResult::InfraFailed { reason }
    } else {
        engine.stop();
        EntryResult::Disqualified(Disqualification {
            reason: DisqualificationReason::EngineCrashed,
            detail: format!("the engine exited while being measured ({reason})"),
            log_tail: log_tail(engine.log_path(), LOG_TAIL_LINES),
        })
    }
}

fn request_timeout_ms(ctx: &Ctx<'_>) -> u64 {
    ctx.campaign
        .rate_search
        .effective_request_deadline_ms(&ctx.campaign.sla)
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
