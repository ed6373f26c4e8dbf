//! The end of a round: every entry's typed status from its journal records, the scores
//! and the leader rule ([`receipts::rules::leader`]), the `RoundRecord` predicate sealed through
//! `receipts::bundle::seal_bundle`, the rename of the bundle into `rounds/<n>/`, and the
//! submissions moved to `scored` / `disqualified` / `infra_failed` (requeued once).

use std::fs;

use receipts::bundle::seal_bundle;
use receipts::fsutil::sync_dir;
use receipts::model::{
    BackendKind, CampaignRef, CorrectnessItems, CorrectnessSpec, CorrectnessSummary,
    Disqualification, DisqualificationReason, DriftCheck, Entry, EntryInfraFailure, EntryStatus,
    HardwareCheck, Leader, MeasurementOutcome, PipelineState, ROUND_PREDICATE_TYPE, Role,
    RoundRecord, RoundStatus, RunSummary, Sha256Hex, SlaUnmetReason, Step, Timestamp, Tool,
    TypedOrText,
};

use super::record::{
    EntryRecord, EntryResult, EntryVerdict, PlannedEntry, Record, SealedRecord, SubmissionUpdate,
};
use super::setup::ROUND_OPENED_FILE;
use super::{Ctx, RoundError, io};
use engines::{LOG_TAIL_LINES, log_tail};
use intake::store::CampaignStore;
use receipts::layout::read_round_record;
use receipts::rules::correctness;
use receipts::rules::leader::{self, Contender, LeaderInput};

/// Seals the round (unless a previous run already did), moves the bundle into place and
/// updates the submissions.
pub(crate) fn seal_and_finish(ctx: &mut Ctx<'_>) -> Result<(Sha256Hex, RoundRecord), RoundError> {
    let sealed = ctx.records.iter().find_map(|r| match r {
        Record::Sealed(s) => Some(s.clone()),
        _ => None,
    });
    let sealed = match sealed {
        Some(sealed) => sealed,
        None => {
            // A writer killed between creating its temp file and renaming it (this run's
            // or a killed one's) left the temp file in the bundle: it is no subject.
            receipts::fsutil::remove_temp_files(&ctx.bundle)?;
            let (record, updates) = build(ctx)?;
            let predicate = serde_json::to_value(&record).map_err(|e| RoundError::Record {
                round: ctx.round,
                message: e.to_string(),
            })?;
            let bundle = seal_bundle(&ctx.bundle, ROUND_PREDICATE_TYPE, &predicate, &[ctx.key])
                .map_err(|source| RoundError::Seal {
                    round: ctx.round,
                    source,
                })?;
            let sealed = SealedRecord {
                statement_digest: bundle.statement_digest,
                updates,
            };
            ctx.append(Record::Sealed(sealed.clone()))?;
            sealed
        }
    };
    let dest = ctx.campaign_dir.round_dir(ctx.round);
    let rounds = ctx.campaign_dir.rounds_dir();
    if !dest.exists() {
        fs::create_dir_all(&rounds).map_err(io("creating", &rounds))?;
        fs::rename(&ctx.bundle, &dest).map_err(io("moving the sealed bundle to", &dest))?;
    }
    // The rename is on disk before the submissions move (every time: a runner killed
    // right after the rename may not have synced it). Its files were synced by sealing.
    for dir in [
        dest.as_path(),
        rounds.as_path(),
        ctx.work.as_path(),
        ctx.campaign_dir.root(),
    ] {
        sync_dir(dir).map_err(io("syncing", dir))?;
    }
    ctx.failpoint(ctx.records.len())?;
    let (record, digest) = read_round_record(&dest)?;
    apply_updates(ctx, &sealed.updates)?;
    fs::remove_dir_all(&ctx.work).map_err(io("removing", &ctx.work))?;
    Ok((digest, record))
}

/// Moves each challenger's submission record (idempotent: only from `round_assigned`);
/// an `infra_failed` one is requeued if it has not been yet.
fn apply_updates(ctx: &Ctx<'_>, updates: &[SubmissionUpdate]) -> Result<(), RoundError> {
    let model_error = |e: receipts::model::ModelError| RoundError::Record {
        round: ctx.round,
        message: e.to_string(),
    };
    let _records = ctx.campaign_dir.lock()?;
    for update in updates {
        let mut submission = ctx.campaign_dir.load_submission(&update.patch)?;
        if submission.state != PipelineState::RoundAssigned {
            continue;
        }
        let now = super::next_event_at(&submission);
        submission
            .round_transition(update.to, ctx.round, now, update.reason.clone())
            .map_err(model_error)?;
        if submission.can_requeue() {
            submission
                .requeue(now, format!("requeued once after round {}", ctx.round))
                .map_err(model_error)?;
        }
        ctx.campaign_dir.save_submission(&submission)?;
    }
    Ok(())
}

/// The round record and the submission moves, from the journal.
fn build(ctx: &Ctx<'_>) -> Result<(RoundRecord, Vec<SubmissionUpdate>), RoundError> {
    let missing = |what: &str| RoundError::Record {
        round: ctx.round,
        message: format!("the journal has no {what} record"),
    };
    let setup = ctx.setup.as_ref().ok_or_else(|| missing("setup"))?;
    let teardown = ctx
        .records
        .iter()
        .find_map(|r| match r {
            Record::Teardown(t) => Some(t),
            _ => None,
        })
        .ok_or_else(|| missing("teardown"))?;
    let scorer = ctx
        .records
        .iter()
        .find_map(|r| match r {
            Record::Scorer(s) => Some(s),
            _ => None,
        })
        .ok_or_else(|| missing("scorer"))?;

    let mut entries: Vec<Entry> = setup
        .entries
        .iter()
        .map(|planned| {
            let verdict = scorer.verdicts.iter().find(|v| v.index == planned.index);
            match ctx.entry_record(planned.index, super::entry::GroupKind::Entry) {
                Some(record) => entry_from(ctx, planned, record, verdict),
                None => not_run(planned, ctx.backend.kind(), setup.started_at),
            }
        })
        .collect();

    // Drift, hardware and the leader rule.
    let baseline_first = entries
        .first()
        .filter(|e| e.status == EntryStatus::Scored)
        .and_then(|e| e.throughput_milli_rps);
    let drift_record = ctx.entry_record(0, super::entry::GroupKind::DriftBaseline);
    let drift_milli_rps = drift_record.and_then(measured_throughput);
    let drift = baseline_first.map(|first| {
        let drift_bp = drift_milli_rps.and_then(|d| receipts::rules::score::drift_bp(first, d));
        DriftCheck {
            first_milli_rps: first,
            drift_milli_rps,
            drift_bp,
            bound_bp: ctx.frozen.campaign.drift_bound_bp,
            within_bound: drift_bp
                .is_some_and(|d| d <= u64::from(ctx.frozen.campaign.drift_bound_bp)),
            runs: drift_record.map(run_summaries).unwrap_or_default(),
        }
    });
    let hardware = HardwareCheck {
        changed: setup.hardware != teardown.hardware,
        at_start: setup.hardware.clone(),
        at_end: teardown.hardware.clone(),
    };
    let contenders: Vec<Contender> = entries
        .iter()
        .filter(|e| e.role == Role::Challenger)
        .filter_map(|e| {
            Some(Contender {
                leader: Leader {
                    patch: e.patch.clone()?,
                    miner: e.miner.clone()?,
                },
                throughput_milli_rps: (e.status == EntryStatus::Scored)
                    .then_some(e.throughput_milli_rps)
                    .flatten(),
            })
        })
        .collect();
    let incumbent_milli_rps = entries
        .iter()
        .find(|e| e.role == Role::Incumbent && e.status == EntryStatus::Scored)
        .and_then(|e| e.throughput_milli_rps);
    let input = LeaderInput {
        leader_before: setup.leader_before.clone(),
        incumbent_milli_rps,
        baseline_first_milli_rps: baseline_first,
        baseline_drift_milli_rps: drift_milli_rps,
        drift_bound_bp: ctx.frozen.campaign.drift_bound_bp,
        margin_bp: ctx.frozen.campaign.overtake_margin_bp,
        hardware_changed: hardware.changed,
        scorer_failed: scorer.failure.is_some(),
        challengers: &contenders,
    };
    let decision = leader::decide(&input);
    let outcome = decision.to_outcome(&input);

    // Scores against the first baseline run; an infra_failed round scores no one.
    for entry in &mut entries {
        if outcome.status == RoundStatus::InfraFailed && entry.role != Role::Baseline {
            entry.status = EntryStatus::InfraFailed;
            entry.score_ppm = None;
            entry.infra_failure =
                outcome
                    .reason
                    .as_ref()
                    .and_then(TypedOrText::typed)
                    .map(|failure| {
                        TypedOrText::Typed(EntryInfraFailure::RoundInfraFailed {
                            failure: failure.clone(),
                        })
                    });
            continue;
        }
        if entry.status == EntryStatus::Scored {
            entry.score_ppm = match (entry.throughput_milli_rps, baseline_first) {
                (Some(t), Some(b)) => receipts::rules::score::score_ppm(t, b),
                _ => None,
            };
        }
    }

    let updates = entries
        .iter()
        .filter(|e| e.role == Role::Challenger)
        .filter_map(|e| {
            let patch = e.patch.clone()?;
            let (to, reason) = match e.status {
                EntryStatus::Scored => (
                    PipelineState::Scored,
                    format!(
                        "round {}: scored {} ppm ({} milli-req/s)",
                        ctx.round,
                        e.score_ppm.unwrap_or(0),
                        e.throughput_milli_rps.unwrap_or(0)
                    ),
                ),
                EntryStatus::Disqualified => (
                    PipelineState::Disqualified,
                    format!(
                        "round {}: {}",
                        ctx.round,
                        e.disqualification
                            .as_ref()
                            .map_or("disqualified".to_owned(), |d| d.detail.clone())
                    ),
                ),
                EntryStatus::InfraFailed => (
                    PipelineState::InfraFailed,
                    format!(
                        "round {}: {}",
                        ctx.round,
                        e.infra_failure
                            .as_ref()
                            .map_or_else(|| "infra_failed".to_owned(), ToString::to_string)
                    ),
                ),
            };
            Some(SubmissionUpdate { patch, to, reason })
        })
        .collect();

    let mut steps: Vec<Step> = ctx
        .records
        .iter()
        .flat_map(|r| match r {
            Record::Setup(s) => s.steps.clone(),
            Record::Entry(e) => e.steps.clone(),
            Record::Scorer(s) => s.steps.clone(),
            Record::Teardown(t) => t.steps.clone(),
            Record::Sealed(_) => Vec::new(),
        })
        .collect();
    steps.sort_by_key(|s| s.index);
    let ended_at = steps.last().map_or_else(Timestamp::now, |s| s.ended_at);
    let record = RoundRecord {
        round: ctx.round,
        campaign: CampaignRef {
            id: ctx.frozen.campaign.id.clone(),
            digest: ctx.frozen.digest.clone(),
        },
        miners_digest: setup.miners_digest.clone(),
        previous_receipt: setup.previous_receipt.clone(),
        tool: Tool {
            name: "referee".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            git_commit: option_env!("REFEREE_GIT_COMMIT")
                .unwrap_or("unknown")
                .into(),
            cpu_features: engines::hardware::cpu_features(),
        },
        seeds: setup.seeds.clone(),
        request_sequence_digest: setup.request_sequence_digest.clone(),
        sla: ctx.frozen.campaign.sla.clone(),
        hardware,
        started_at: setup.started_at,
        ended_at,
        steps,
        entries,
        drift,
        outcome,
        inputs: setup.inputs.clone(),
        round_opened: ROUND_OPENED_FILE.into(),
    };
    Ok((record, updates))
}

/// The throughput of a measured, valid run that met the SLA.
fn measured_throughput(record: &EntryRecord) -> Option<u64> {
    match &record.result {
        EntryResult::Measured { measurement, .. }
            if measurement.valid && measurement.outcome == MeasurementOutcome::Measured =>
        {
            measurement.throughput_milli_rps
        }
        _ => None,
    }
}

fn run_summaries(record: &EntryRecord) -> Vec<RunSummary> {
    match (&record.result, &record.probe_log) {
        (EntryResult::Measured { measurement, .. }, Some(probe_log)) => measurement
            .runs
            .iter()
            .map(|run| RunSummary {
                run: run.run,
                throughput_milli_rps: run.throughput_milli_rps,
                rate_milli_rps: run.rate_milli_rps,
                probes: u32::try_from(run.probes.len()).unwrap_or(u32::MAX),
                probe_log: probe_log.clone(),
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// An entry whose group never ran (cannot happen once the journal is complete; kept
/// typed rather than panicking).
fn not_run(planned: &PlannedEntry, backend: BackendKind, at: Timestamp) -> Entry {
    Entry {
        index: planned.index,
        role: planned.role,
        miner: planned.miner.clone(),
        patch: planned.patch.clone(),
        engine: receipts::model::EngineRef {
            backend,
            config_sha256: Sha256Hex::digest(b""),
            image: None,
            command: None,
        },
        status: EntryStatus::InfraFailed,
        disqualification: None,
        infra_failure: Some(TypedOrText::Typed(EntryInfraFailure::NotRun)),
        runs: Vec::new(),
        throughput_milli_rps: None,
        throughput_min_milli_rps: None,
        throughput_max_milli_rps: None,
        correctness: None,
        score_ppm: None,
        started_at: at,
        ended_at: at,
        engine_log: None,
    }
}

/// An entry's typed status from its engine run and the scorer's verdict.
fn entry_from(
    ctx: &Ctx<'_>,
    planned: &PlannedEntry,
    record: &EntryRecord,
    verdict: Option<&EntryVerdict>,
) -> Entry {
    let mut entry = not_run(planned, record.engine.backend, record.started_at);
    entry.engine = record.engine.clone();
    entry.started_at = record.started_at;
    entry.ended_at = record.ended_at;
    entry.engine_log = record.engine_log.clone();
    entry.infra_failure = None;
    entry.runs = run_summaries(record);
    let tail = || {
        record
            .engine_log
            .as_ref()
            .map(|rel| log_tail(&ctx.bundle.join(rel), LOG_TAIL_LINES))
            .unwrap_or_default()
    };
    let disqualify = |entry: &mut Entry, reason, detail: String, log_tail| {
        entry.status = EntryStatus::Disqualified;
        entry.disqualification = Some(Disqualification {
            reason,
            detail,
            log_tail,
        });
    };
    match &record.result {
        EntryResult::Disqualified(d) => {
            entry.status = if planned.role == Role::Baseline {
                entry.infra_failure = Some(TypedOrText::Typed(EntryInfraFailure::BaselineFailed {
                    detail: d.detail.clone(),
                }));
                EntryStatus::InfraFailed
            } else {
                EntryStatus::Disqualified
            };
            entry.disqualification = Some(d.clone());
        }
        EntryResult::InfraFailed { reason } => {
            entry.status = EntryStatus::InfraFailed;
            entry.infra_failure = Some(TypedOrText::Typed(EntryInfraFailure::Runner {
                detail: reason.clone(),
            }));
        }
        EntryResult::Measured {
            measurement,
            outputs_error,
            ..
        } => {
            entry.throughput_milli_rps = measurement.throughput_milli_rps;
            entry.throughput_min_milli_rps = measurement.throughput_min_milli_rps;
            entry.throughput_max_milli_rps = measurement.throughput_max_milli_rps;
            entry.correctness = verdict.and_then(|v| v.summary.clone());
            if !measurement.valid {
                entry.status = EntryStatus::InfraFailed;
                entry.infra_failure = Some(TypedOrText::Typed(EntryInfraFailure::ClientLagged));
            } else if let MeasurementOutcome::SlaUnmet { reason } = measurement.outcome {
                let sla = &ctx.frozen.campaign.sla;
                let detail = match reason {
                    SlaUnmetReason::NoPassingRate => format!(
                        "no rate from {} milli-req/s met the SLA ({} {} ≤ {} ms)",
                        ctx.frozen.campaign.rate_search.min_rate_milli_rps,
                        sla.percentile,
                        sla.latency,
                        sla.bound_ms
                    ),
                    SlaUnmetReason::DeadlineExpired => format!(
                        "the entry's deadline of {} s expired before its runs finished",
                        ctx.frozen.campaign.rate_search.entry_deadline_s
                    ),
                };
                if planned.role == Role::Baseline {
                    entry.status = EntryStatus::InfraFailed;
                    entry.infra_failure =
                        Some(TypedOrText::Typed(EntryInfraFailure::BaselineFailed {
                            detail,
                        }));
                } else {
                    disqualify(&mut entry, DisqualificationReason::SlaUnmet, detail, tail());
                }
            } else if planned.role == Role::Baseline {
                entry.status = EntryStatus::Scored;
            } else if let Some(error) = outputs_error {
                disqualify(
                    &mut entry,
                    DisqualificationReason::ComplianceFailed,
                    error.clone(),
                    tail(),
                );
            } else {
                match verdict {
                    Some(EntryVerdict {
                        summary: Some(summary),
                        ..
                    }) if summary.passed => entry.status = EntryStatus::Scored,
                    Some(EntryVerdict {
                        summary: Some(summary),
                        ..
                    }) => {
                        let artifact = fs::read(ctx.bundle.join(&summary.items_file))
                            .ok()
                            .and_then(|bytes| serde_json::from_slice(&bytes).ok());
                        let detail = correctness_detail(
                            summary,
                            &ctx.frozen.campaign.correctness,
                            artifact.as_ref(),
                        );
                        disqualify(
                            &mut entry,
                            DisqualificationReason::CorrectnessFailed,
                            detail,
                            Vec::new(),
                        );
                    }
                    Some(EntryVerdict { error, .. }) => {
                        entry.status = EntryStatus::InfraFailed;
                        entry.infra_failure =
                            Some(TypedOrText::Typed(EntryInfraFailure::ScorerFailed {
                                detail: error.clone().unwrap_or_default(),
                            }));
                    }
                    None => {
                        entry.status = EntryStatus::InfraFailed;
                        entry.infra_failure =
                            Some(TypedOrText::Typed(EntryInfraFailure::NoVerdict));
                    }
                }
            }
        }
    }
    entry
}

/// The disqualification detail of a failed correctness gate: the first failing item's
/// own index and distance, else the first failing group's own mean (µnat), read from the
/// entry's per-item artifact (content/correctness.md §Correctness). Without the artifact it says
/// which item or group failed and that its value could not be read.
fn correctness_detail(
    summary: &CorrectnessSummary,
    spec: &CorrectnessSpec,
    artifact: Option<&CorrectnessItems>,
) -> String {
    let at = |i: u32| usize::try_from(i).unwrap_or(usize::MAX);
    let unreadable = || format!("not readable from `{}`", summary.items_file);
    match (summary.first_failing_item, summary.first_failing_group) {
        (Some(position), _) => match artifact.and_then(|a| a.items.get(at(position))) {
            Some(item) => format!(
                "logit distance of item {} ({} µnat) above the item bound of {} µnat",
                item.index, item.distance_micro_nats, spec.item_bound_micro_nats
            ),
            None => format!(
                "logit distance of item {position} above the item bound of {} µnat \
                 (its distance {})",
                spec.item_bound_micro_nats,
                unreadable()
            ),
        },
        (None, Some(group)) => {
            let mean = artifact.and_then(|a| {
                correctness::verdict_from_artifact(a)
                    .0
                    .group_means_micro_nats
                    .get(at(group))
                    .copied()
            });
            match mean {
                Some(mean) => format!(
                    "mean logit distance of group {group} ({mean} µnat) above the group bound \
                     of {} µnat",
                    spec.group_mean_bound_micro_nats
                ),
                None => format!(
                    "mean logit distance of group {group} above the group bound of {} µnat \
                     (its mean {})",
                    spec.group_mean_bound_micro_nats,
                    unreadable()
                ),
            }
        }
        (None, None) => "no correctness item was scored".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use receipts::model::CorrectnessItem;

    use super::*;

    fn spec() -> CorrectnessSpec {
        CorrectnessSpec {
            items: 6,
            group_size: 3,
            group_mean_bound_micro_nats: 200_000,
            item_bound_micro_nats: 2_000_000,
            top_k: 5,
            input_len: receipts::model::LengthDist::Fixed { value: 8 },
            output_tokens: 6,
        }
    }

    /// Six items in two groups of three: group 0's mean is 300 000 µnat, group 1's
    /// 1 000 000 (the largest); `item` is replaced by `over` when given.
    fn artifact(over: Option<(usize, u64)>) -> CorrectnessItems {
        let mut distances = [100_000, 300_000, 500_000, 900_000, 1_000_000, 1_100_000];
        if let Some((i, d)) = over {
            distances[i] = d;
        }
        CorrectnessItems {
            top_k: 5,
            group_size: 3,
            group_mean_bound_micro_nats: 200_000,
            item_bound_micro_nats: 2_000_000,
            items: distances
                .iter()
                .enumerate()
                .map(|(i, &d)| CorrectnessItem {
                    index: u32::try_from(i).unwrap(),
                    prompt_sha256: Sha256Hex::digest(b""),
                    prompt_tokens: 8,
                    output_token_ids: vec![1],
                    position_micro_nats: vec![d],
                    distance_micro_nats: d,
                })
                .collect(),
        }
    }

    fn summary(items: &CorrectnessItems) -> CorrectnessSummary {
        let (v, _) = correctness::verdict_from_artifact(items);
        CorrectnessSummary {
            items: 6,
            passed: v.passed,
            max_item_micro_nats: v.max_item_micro_nats,
            max_group_mean_micro_nats: v.max_group_mean_micro_nats,
            first_failing_item: v.first_failing_item,
            first_failing_group: v.first_failing_group,
            items_file: "correctness/candidate-1-miner-a.json".into(),
        }
    }

    #[test]
    fn a_group_failure_names_that_groups_own_mean() {
        let items = artifact(None);
        let summary = summary(&items);
        assert_eq!(summary.max_group_mean_micro_nats, 1_000_000);
        assert_eq!(
            correctness_detail(&summary, &spec(), Some(&items)),
            "mean logit distance of group 0 (300000 µnat) above the group bound of 200000 µnat"
        );
        assert_eq!(
            correctness_detail(&summary, &spec(), None),
            "mean logit distance of group 0 above the group bound of 200000 µnat (its mean \
             not readable from `correctness/candidate-1-miner-a.json`)"
        );
    }

    #[test]
    fn an_item_failure_names_that_items_index_and_distance() {
        let items = artifact(Some((4, 2_500_000)));
        let summary = summary(&items);
        assert_eq!(
            correctness_detail(&summary, &spec(), Some(&items)),
            "logit distance of item 4 (2500000 µnat) above the item bound of 2000000 µnat"
        );
    }
}
