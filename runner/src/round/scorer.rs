//! The scorer's group (content/correctness.md): the campaign's reference runtime
//! teacher-forced on each entry's prompt and greedy tokens, after the baseline's prompt
//! echo is checked against the reference's tokenization. It reads each entry's outputs
//! from what this process kept in memory ([`Produced`]), or from `.work/` when an earlier
//! process of a resumed round took them, and keeps each per-item artifact it writes for
//! the seal in the same way.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::time::Duration;

use receipts::fsutil::IoError;
use receipts::model::{
    CorrectnessItems, CorrectnessSummary, Disqualification, DisqualificationReason, MeasuredFor,
    Phase, ReferenceRuntime, Role, RoundFailure, Sha256Hex, StepStatus,
};

use super::entry::{
    StepError, correctness_deadline, decide_client, error_chain, give_token, prepare, remove_stale,
    request_timeout_ms,
};
use super::record::{EntryRecord, EntryResult, EntryVerdict, PlannedEntry, ScorerRecord};
use super::{Ctx, RoundError, StepRun};
use crate::correctness::{self as gate, CompletionsClient, GateError, ItemOutput, KeptRun};
use crate::decide::DecideClientError;
use engines::Engine;
use receipts::rules::{compliance, correctness, decide};

/// What this process produced that a later group reads, kept in memory; a resumed round
/// reads what an earlier process produced from its files instead.
#[derive(Debug, Default)]
pub(crate) struct Produced {
    /// Each entry's correctness outputs, by their `.work`-relative file.
    pub(crate) outputs: BTreeMap<String, SavedOutputs>,
    /// Each run's kept requests of its result probe, by their `.work`-relative file.
    pub(crate) kept: BTreeMap<String, Vec<KeptRun>>,
    /// Each judged entry's per-item artifact, by its bundle-relative file.
    pub(crate) correctness: BTreeMap<String, CorrectnessItems>,
}

impl Produced {
    /// The outputs saved in `.work/<rel>`: the ones this process took, else the file.
    ///
    /// Errors: [`StepError::Io`] or [`StepError::Parse`] naming the file.
    pub(crate) fn outputs(
        &self,
        work: &Path,
        rel: &str,
    ) -> Result<Cow<'_, SavedOutputs>, StepError> {
        match self.outputs.get(rel) {
            Some(saved) => Ok(Cow::Borrowed(saved)),
            None => read_json(&work.join(rel)).map(Cow::Owned),
        }
    }

    /// The kept requests saved in `.work/<rel>`: the ones this process kept, else the
    /// file.
    ///
    /// Errors: [`StepError::Io`] or [`StepError::Parse`] naming the file.
    fn kept(&self, work: &Path, rel: &str) -> Result<Cow<'_, [KeptRun]>, StepError> {
        match self.kept.get(rel) {
            Some(kept) => Ok(Cow::Borrowed(kept.as_slice())),
            None => read_json::<Vec<KeptRun>>(&work.join(rel)).map(Cow::Owned),
        }
    }

    /// The per-item artifact at bundle-relative `rel`: the one this process wrote, else
    /// the file (a round resumed after its scorer ran).
    ///
    /// Errors: [`StepError::Io`] or [`StepError::Parse`] naming the file.
    pub(crate) fn correctness_items(
        &self,
        bundle: &Path,
        rel: &str,
    ) -> Result<Cow<'_, CorrectnessItems>, StepError> {
        match self.correctness.get(rel) {
            Some(items) => Ok(Cow::Borrowed(items)),
            None => read_json(&bundle.join(rel)).map(Cow::Owned),
        }
    }
}

/// What an entry's run saved for the scorer: its correctness outputs.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct SavedOutputs {
    pub(crate) items: Vec<ItemOutput>,
    /// A `decide` campaign's gate answers (its `items` are then empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) decide: Vec<receipts::rules::decide::Answer>,
    /// On track s1-fast-speed, the entry's declared resources and capability score.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) fast: Option<super::fast::FastSaved>,
}

/// A JSON file the round wrote.
///
/// Errors: [`StepError::Io`] when it cannot be read, [`StepError::Parse`] when it does
/// not parse.
fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, StepError> {
    let bytes = fs::read(path).map_err(IoError::at("reading", path))?;
    serde_json::from_slice(&bytes).map_err(|e| StepError::Parse {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// The scorer's group over `entries` (the round's, in run order): each entry whose
/// outputs were taken is judged ([`run_scorer`]); with none, both steps are skipped.
///
/// Errors: as [`run_scorer`].
pub(crate) fn score(
    ctx: &mut Ctx<'_>,
    entries: &[PlannedEntry],
) -> Result<ScorerRecord, RoundError> {
    let with_outputs: Vec<(PlannedEntry, String)> = entries
        .iter()
        .filter_map(|planned| {
            ctx.journal
                .outputs_record(planned.index)
                .and_then(|r| match &r.result {
                    EntryResult::Measured {
                        outputs: Some(outputs),
                        ..
                    } => Some((planned.clone(), outputs.clone())),
                    _ => None,
                })
        })
        .collect();
    if with_outputs.is_empty() {
        skipped(ctx)
    } else {
        run_scorer(ctx, &with_outputs)
    }
}

/// A scorer group with nothing to score: both steps skipped.
fn skipped(ctx: &mut Ctx<'_>) -> Result<ScorerRecord, RoundError> {
    let steps = vec![
        ctx.steps.skipped(
            "Scorer",
            "Scorer, starting the engine",
            Phase::StartingEngine,
        )?,
        ctx.steps.skipped(
            "Scorer",
            "Scorer, running the shared scorer",
            Phase::Scoring,
        )?,
    ];
    Ok(ScorerRecord {
        steps,
        verdicts: Vec::new(),
        failure: None,
        round_failure: None,
    })
}

impl StepError {
    /// The round's typed failure when the reference runtime (the scorer) ran past its
    /// deadline: the reference is no miner's engine, so its stall fails the round.
    pub(crate) fn scorer_deadline(&self) -> Option<RoundFailure> {
        match self {
            Self::Gate(GateError::Deadline { deadline_s, .. }) => {
                Some(RoundFailure::ScorerDeadline {
                    deadline_s: *deadline_s,
                })
            }
            _ => None,
        }
    }
}

/// The scorer's group: the campaign's reference runtime (`correctness.reference`: the
/// baseline at full precision by default, or the baseline unmodified), teacher-forced on
/// each entry's prompt and greedy tokens; writes each entry's per-item artifact
/// `correctness/<slug>.json` and returns the verdicts. An entry whose verdict
/// could not be computed (its artifact could not be written, say) fails the scoring step
/// and gets an error verdict, which names no artifact.
///
/// Errors: [`RoundError`] only when a step's own log cannot be written
/// ([`Steps::finish`](super::steps::Steps::finish)); every other failure is the
/// scorer's record.
fn run_scorer(
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
    let mut start = ctx
        .steps
        .begin(group, "Scorer, starting the engine", Phase::StartingEngine);
    let engine_log = ctx.bundle.join("logs/engines/scorer.log");
    let mut engine: Option<Box<dyn Engine>> = None;
    // A decision sidecar's token for the reference's run.
    let mut token = None;
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
        let engine = engine.insert(ctx.engines.backend.engine(
            &tree.root,
            &tree.config,
            &engine_log,
            None,
        ));
        if ctx.frozen.campaign.decide.is_some() {
            token = Some(give_token(engine.as_mut())?);
        }
        ctx.engines.started();
        engine.start()?;
        engine.wait_healthy(Duration::from_secs(ctx.frozen.campaign.health_deadline_s))?;
        Ok(())
    })();
    let mut engine = match (started, engine) {
        (Ok(()), Some(engine)) => {
            steps.push(ctx.steps.finish(start, StepStatus::Ok)?);
            engine
        }
        (started, mut engine) => {
            let mut reason = started
                .err()
                .map_or_else(|| "no engine was made".to_owned(), |e| error_chain(&e));
            start.line(&reason);
            if let Some(Err(e)) = engine.as_mut().map(|e| e.stop()) {
                let log = error_chain(&e);
                start.line(&format!("stopping the engine failed: {log}"));
                reason = format!("{reason}; keeping its log failed: {log}");
            }
            ctx.engines.stopped();
            steps.push(ctx.steps.finish(start, StepStatus::Failed)?);
            steps.push(ctx.steps.skipped(
                group,
                "Scorer, running the shared scorer",
                Phase::Scoring,
            )?);
            record.failure = Some(format!("the reference runtime failed: {reason}"));
            record.steps = steps;
            return Ok(record);
        }
    };
    let endpoint = engine.endpoint().unwrap_or_default();
    let mut scoring = ctx
        .steps
        .begin(group, "Scorer, running the shared scorer", Phase::Scoring);
    let mut artifacts = BTreeMap::new();
    let all_scored = match &token {
        Some(token) => {
            score_all_decide(ctx, (&endpoint, token, entries), &mut scoring, &mut record)
        }
        None => score_all(
            ctx,
            (&endpoint, entries),
            &mut scoring,
            &mut record,
            &mut artifacts,
        ),
    };
    ctx.produced.correctness.extend(artifacts);
    let alive = engine.is_running();
    let stopped = engine.stop();
    ctx.engines.stopped();
    if !alive {
        record.failure = Some("the reference runtime exited while scoring".into());
    }
    let kept = match stopped {
        Ok(()) => true,
        Err(e) => {
            let reason = error_chain(&e);
            scoring.line(&format!("stopping the engine failed: {reason}"));
            if record.failure.is_none() {
                record.failure = Some(format!("the reference runtime's log: {reason}"));
            }
            false
        }
    };
    steps.push(ctx.steps.finish(
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
/// round `infra_failed` too. Fills `record`'s verdicts and failure, and `artifacts` with
/// each per-item artifact written (by its bundle-relative file); returns whether every
/// entry got a verdict.
fn score_all(
    ctx: &Ctx<'_>,
    (endpoint, entries): (&str, &[(PlannedEntry, String)]),
    scoring: &mut StepRun,
    record: &mut ScorerRecord,
    artifacts: &mut BTreeMap<String, CorrectnessItems>,
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
        Some((_, rel)) => (ctx.produced.outputs(&ctx.work, rel))
            .map(|o| gate::baseline_echo_failure(&o.items, &prompts)),
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
            Ok(Judged::Summary(summary, load_dq, artifact)) => {
                artifacts.insert(summary.items_file.clone(), *artifact);
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

/// The scorer's work for a `decide` campaign once the reference sidecar runs at
/// `endpoint` with `token`: the reference answers every gate item, then each entry's
/// answers are judged against them ([`score_decide_entry`]). The reference's stall past
/// the correctness deadline makes the round `infra_failed`. Fills `record`'s verdicts
/// and failure; returns whether every entry got a verdict.
fn score_all_decide(
    ctx: &Ctx<'_>,
    (endpoint, token, entries): (&str, &str, &[(PlannedEntry, String)]),
    scoring: &mut StepRun,
    record: &mut ScorerRecord,
) -> bool {
    let reference = decide_client(ctx, endpoint, token).and_then(|client| {
        let items = ctx.workload()?.correctness_items();
        Ok(ctx
            .runtime
            .block_on(client.answers(&items, correctness_deadline(ctx)))?)
    });
    let reference = match reference {
        Ok(reference) => reference,
        Err(error) => {
            let round = match &error {
                StepError::Decide(DecideClientError::Deadline { deadline_s }) => {
                    Some(RoundFailure::ScorerDeadline {
                        deadline_s: *deadline_s,
                    })
                }
                _ => None,
            };
            reference_failed(scoring, record, &error, round);
            return false;
        }
    };
    scoring.line(&format!(
        "the reference runtime answered {} gate items",
        reference.len()
    ));
    let mut all_scored = super::fast::write_agreement_files(ctx, entries, &reference, scoring);
    for (planned, outputs_rel) in entries.iter().filter(|(p, _)| p.role != Role::Baseline) {
        let verdict = EntryVerdict {
            index: planned.index,
            summary: None,
            error: None,
            disqualification: None,
        };
        record.verdicts.push(
            match score_decide_entry(ctx, planned, outputs_rel, &reference) {
                Ok(summary) => {
                    scoring.line(&format!(
                        "{}: {} items, max item {} µnat, max group mean {} µnat, {}",
                        planned.group,
                        summary.items,
                        summary.max_item_micro_nats,
                        summary.max_group_mean_micro_nats,
                        if summary.passed { "passed" } else { "failed" }
                    ));
                    EntryVerdict {
                        summary: Some(summary),
                        ..verdict
                    }
                }
                Err(error) => {
                    all_scored = false;
                    scoring.line(&format!("{}: {}", planned.group, error_chain(&error)));
                    EntryVerdict {
                        error: Some(error_chain(&error)),
                        ..verdict
                    }
                }
            },
        );
    }
    all_scored
}

/// Judges one entry of a `decide` campaign: its saved answers against the reference's,
/// item by item, into its per-item file `correctness/<slug>.json` (a
/// [`receipts::model::DecideItems`]) and the summary of the gate's verdict.
///
/// Errors: its answers cannot be read, or the file written.
fn score_decide_entry(
    ctx: &Ctx<'_>,
    planned: &PlannedEntry,
    outputs_rel: &str,
    reference: &[decide::Answer],
) -> Result<CorrectnessSummary, StepError> {
    let items_file = format!("correctness/{}.json", planned.slug);
    let items_path = ctx.bundle.join(&items_file);
    remove_stale(&[&items_path])?;
    let saved = ctx.produced.outputs(&ctx.work, outputs_rel)?;
    let Some(contract) = ctx.frozen.campaign.decide.as_ref() else {
        return Err(StepError::Contract(
            receipts::model::ModelError::InvalidField {
                field: "decide".into(),
                value: String::new(),
                rule: "workload_kind = \"decide\" needs [decide]".into(),
            },
        ));
    };
    let measured_for = ctx
        .journal
        .outputs_record(planned.index)
        .map(|run| MeasuredFor {
            round: ctx.round,
            entry: planned.index,
            patch: planned.patch,
            engine_config_sha256: run.engine.config_sha256,
            pass: run.pass,
            control: run.control,
        });
    let file = decide::gate_file(contract, &saved.decide, reference, measured_for);
    intake::store::write_json_compact(&items_path, &file)?;
    let (_, verdict) = decide::recompute_gate(&file, contract);
    Ok(CorrectnessSummary {
        items: u32::try_from(file.items.len()).unwrap_or(u32::MAX),
        passed: verdict.passed,
        max_item_micro_nats: verdict.max_item_micro_nats,
        max_group_mean_micro_nats: verdict.max_group_mean_micro_nats,
        first_failing_item: verdict.first_failing_item,
        first_failing_group: verdict.first_failing_group,
        items_file,
        load_sample_file: None,
    })
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
    /// sample's disqualification when a sampled request diverged, and its per-item
    /// artifact as written (boxed: it dwarfs the other variant).
    Summary(
        CorrectnessSummary,
        Option<Disqualification>,
        Box<CorrectnessItems>,
    ),
    /// It echoed a prompt that is not the reference's.
    Disqualified(Disqualification),
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
    let saved = ctx.produced.outputs(&ctx.work, outputs_rel)?;
    if let Some(dq) = gate::echo_disqualification(&saved.items, prompts) {
        return Ok(Judged::Disqualified(dq));
    }
    let spec = &ctx.frozen.campaign.correctness;
    let items = ctx.runtime.block_on(gate::within(
        deadline,
        "reference logprobs",
        gate::reference_items(client, &saved.items, prompts, spec.top_k),
    ));
    let items = match items {
        Err(error) => return refused_ids(error),
        Ok(items) => items,
    };
    // Both files name the entry's run that took its greedy outputs, which the verifier
    // holds against the entry citing them (`correctness.entry`).
    let measured_for = ctx
        .journal
        .outputs_record(planned.index)
        .map(|run| MeasuredFor {
            round: ctx.round,
            entry: planned.index,
            patch: planned.patch,
            engine_config_sha256: run.engine.config_sha256,
            pass: run.pass,
            control: run.control,
        });
    let artifact = CorrectnessItems {
        top_k: spec.top_k,
        group_size: spec.group_size,
        group_mean_bound_micro_nats: spec.group_mean_bound_micro_nats,
        item_bound_micro_nats: spec.item_bound_micro_nats,
        items,
        measured_for: measured_for.clone(),
    };
    // One line: both sides' top-k at every position, pretty, would be ~4× the size.
    intake::store::write_json_compact(&items_path, &artifact)?;
    // The timed runs' sample: every run that enters the score, where the client kept
    // requests (a sample seed and `load_sample` > 0), recorded `not applicable` run by
    // run where it cannot judge.
    let seed = ctx.setup_seeds()?.sample_seed;
    let kept = counted_kept(ctx, planned.index)?;
    let (load_sample_file, load_dq) = match seed {
        Some(seed) if !kept.is_empty() => {
            let sample_spec = gate::SampleSpec {
                seed: &seed.seed,
                entry: planned.index,
                size: spec.effective_load_sample(),
                bounds: spec.effective_load_bounds(),
            };
            let sample = ctx.runtime.block_on(gate::within(
                deadline,
                "reference logprobs of the timed-run sample",
                gate::check_load_sample(client, sample_spec, &kept),
            ));
            // Ids the reference refuses disqualify the entry; its gate verdict stands.
            match sample {
                Ok(mut sample) => {
                    sample.measured_for = measured_for;
                    super::write_artifact(&sample_path, &sample)?;
                    let dq = gate::load_disqualification(&sample)
                        .or_else(|| gate::text_disqualification(&sample));
                    (Some(sample_file), dq)
                }
                Err(error) => match error.invalid_token_id() {
                    Some(dq) => (None, Some(dq)),
                    None => return Err(error.into()),
                },
            }
        }
        _ => (None, None),
    };
    let load_dq = load_dq
        .or_else(|| output_length(ctx, planned.index))
        .or_else(|| caching(ctx, planned.index));
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
    Ok(Judged::Summary(summary, load_dq, Box::new(artifact)))
}

/// An entry whose correctness outputs hold ids the reference refused is disqualified
/// (`invalid_token_id`); any other failure of the reference is the scorer's error.
fn refused_ids(error: GateError) -> Result<Judged, StepError> {
    match error.invalid_token_id() {
        Some(dq) => Ok(Judged::Disqualified(dq)),
        None => Err(error.into()),
    }
}

/// The kept requests of every run of entry `index` that enters its score, in pass
/// order: per pass its last attempt (a re-run replaces an invalid first one), when it
/// measured a throughput ([`super::passes::counts_in_score`]).
///
/// Errors: a kept file of a resumed round that cannot be read.
fn counted_kept(ctx: &Ctx<'_>, index: u32) -> Result<Vec<KeptRun>, StepError> {
    let mut kept = Vec::new();
    for record in counted_runs(ctx, index) {
        if let Some(rel) = &record.kept {
            kept.extend(ctx.produced.kept(&ctx.work, rel)?.iter().cloned());
        }
    }
    Ok(kept)
}

/// The runs of entry `index` that enter its score, in pass order: per pass its last
/// attempt, when it measured a throughput ([`super::passes::counts_in_score`]).
fn counted_runs<'c>(ctx: &'c Ctx<'_>, index: u32) -> impl Iterator<Item = &'c EntryRecord> {
    (0..ctx.frozen.campaign.runs).filter_map(move |pass| {
        (ctx.journal.entry_runs(index))
            .filter(|r| !r.control && r.pass == pass)
            .last()
            .filter(|r| super::passes::counts_in_score(r))
    })
}

/// `output_length` (content/correctness.md, Compliance tests): the first run of entry
/// `index` that enters its score and whose probes hold a request that ended with another
/// output length than asked ([`compliance::output_length_failure`]).
fn output_length(ctx: &Ctx<'_>, index: u32) -> Option<Disqualification> {
    let measured = counted_runs(ctx, index).filter_map(|record| match &record.result {
        EntryResult::Measured { measurement, .. } => Some((record.pass, measurement.as_ref())),
        _ => None,
    });
    let (pass, short, long) = compliance::output_length_failure(measured)?;
    Some(Disqualification {
        reason: DisqualificationReason::OutputLength { pass, short, long },
        detail: format!(
            "pass {pass}: {short} requests ended short and {long} long of the exact output \
             length asked"
        ),
        log_tail: Vec::new(),
    })
}

/// `caching` (content/correctness.md, Caching; MLPerf TEST04): the first run of entry
/// `index` that enters its score and whose caching probe's repeats decoded faster than
/// its fresh prompts by more than the campaign's bound ([`compliance::caching_failure`]).
fn caching(ctx: &Ctx<'_>, index: u32) -> Option<Disqualification> {
    let measured = counted_runs(ctx, index).filter_map(|record| match &record.result {
        EntryResult::Measured { measurement, .. } => Some((record.pass, measurement.as_ref())),
        _ => None,
    });
    let bound_bp = ctx.frozen.campaign.correctness.effective_caching_bound_bp();
    let (pass, speedup_bp) = compliance::caching_failure(measured, bound_bp)?;
    Some(Disqualification {
        reason: DisqualificationReason::Caching {
            pass,
            speedup_bp,
            bound_bp,
        },
        detail: format!(
            "pass {pass}: repeated prompts decoded {speedup_bp} bp faster than fresh ones, \
             above the bound of {bound_bp} bp (an answer cache)"
        ),
        log_tail: Vec::new(),
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
