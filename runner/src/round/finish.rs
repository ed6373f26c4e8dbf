//! The end of a round: every entry's typed status from its journal records, the scores
//! and the leader rule ([`receipts::rules::leader`]), the `RoundRecord` predicate sealed through
//! `receipts::bundle::seal_bundle`, the rename of the bundle into `rounds/<n>/`, and the
//! submissions moved to `scored` / `disqualified` / `infra_failed` (requeued once for its
//! own failure; after a round that was `infra_failed` as a whole without using that one
//! requeue). What happens to each entry per outcome is content/rounds.md's table.

use std::fs;

use receipts::bundle::seal_bundle;
use receipts::fsutil::sync_dir;
use receipts::model::{
    BackendKind, CampaignRef, CorrectnessItems, CorrectnessSpec, CorrectnessSummary,
    Disqualification, DisqualificationReason, Entry, EntryInfraFailure, EntryStatus, HardwareCheck,
    MeasurementOutcome, Outcome, PipelineState, ROUND_PREDICATE_TYPE, Role, RoundFailure,
    RoundKindRecord, RoundRecord, RoundStatus, RunSummary, Sha256Hex, SlaUnmetReason, Step,
    Submission, Timestamp, Tool, TypedOrText,
};

use super::entry::error_chain;
use super::record::{
    EntryRecord, EntryResult, EntryVerdict, PlannedEntry, Record, RequeueCharge, ScorerRecord,
    SealedRecord, SubmissionUpdate, WithheldFile, unconfigured_engine,
};
use super::setup::ROUND_OPENED_FILE;
use super::{Ctx, RoundError, io};
use engines::log_tail;
use intake::store::CampaignStore;
use receipts::layout::read_round_record;
use receipts::rules::correctness;
use receipts::rules::paired::{DisqualifyingRun, PairedDecision, PairedFailure, Slot};
use receipts::rules::review::{challenger_margin_bp, derived_margin_bp};

use super::{passes, secrets};
use verifier::{VerifyOptions, verify_last_round};

/// A round sealed and in place.
pub(crate) struct Finished {
    /// sha256 of its Statement.
    pub(crate) statement_digest: Sha256Hex,
    /// Its record.
    pub(crate) record: RoundRecord,
    /// The bundle files withheld for holding private key material.
    pub(crate) withheld: Vec<WithheldFile>,
}

/// Seals the round (unless a previous run already did), moves the bundle into place and
/// updates the submissions.
pub(crate) fn seal_and_finish(ctx: &mut Ctx<'_>) -> Result<Finished, RoundError> {
    let sealed = ctx.journal.records.iter().find_map(|r| match r {
        Record::Sealed(s) => Some(s.clone()),
        _ => None,
    });
    let sealed = match sealed {
        Some(sealed) => sealed,
        None => {
            // A writer killed between creating its temp file and renaming it (this run's
            // or a killed one's) left the temp file in the bundle: it is no subject.
            receipts::fsutil::remove_temp_files(&ctx.bundle)?;
            secrets::withhold(ctx)?;
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
            check_sealed(ctx)?;
            let sealed = SealedRecord {
                statement_digest: bundle.statement_digest,
                updates,
            };
            ctx.journal.append(Record::Sealed(sealed.clone()))?;
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
    super::tlog::log_receipt(ctx, &dest)?;
    ctx.journal.failpoint(ctx.journal.records.len())?;
    let (record, digest) = read_round_record(&dest)?;
    apply_updates(ctx, &sealed.updates)?;
    let withheld = withheld_files(&ctx.journal.records);
    fs::remove_dir_all(&ctx.work).map_err(io("removing", &ctx.work))?;
    Ok(Finished {
        statement_digest: digest,
        record,
        withheld,
    })
}

/// A round never publishes what its own verifier refuses: the bundle just sealed in
/// `.work/` is verified as the next round's preflight will verify it (its own checks, and
/// the chain against the round before it), at the time of sealing, before the journal
/// records it sealed and it is renamed into `rounds/<n>/`.
///
/// Errors: [`RoundError::SealRefused`] naming every failed check; nothing is renamed and
/// the journal ends before `Sealed`, so the next run seals again.
fn check_sealed(ctx: &Ctx<'_>) -> Result<(), RoundError> {
    let before = ctx
        .campaign_dir
        .round_numbers()?
        .into_iter()
        .filter(|&n| n < ctx.round)
        .max()
        .map(|n| ctx.campaign_dir.round_dir(n));
    let report = verify_last_round(
        &ctx.bundle,
        before.as_deref(),
        &ctx.keyring,
        &VerifyOptions::at(Timestamp::now()),
    );
    if report.passed() {
        return Ok(());
    }
    Err(RoundError::SealRefused {
        round: ctx.round,
        bundle: ctx.bundle.clone(),
        failures: super::preflight::failed_checks(&report),
    })
}

/// Moves each challenger's submission record (idempotent: only from `round_assigned`)
/// with [`move_submission`].
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
        move_submission(&mut submission, update, ctx.round, now).map_err(model_error)?;
        ctx.campaign_dir.save_submission(&submission)?;
    }
    Ok(())
}

/// Moves a `round_assigned` submission to its round outcome; an `infra_failed` one goes
/// back to `bench_queued`: without using its one requeue when the round was
/// `infra_failed` as a whole ([`RequeueCharge::Uncharged`]), else once.
///
/// Errors: [`receipts::model::ModelError::IllegalTransition`] for a move the transition
/// table forbids.
fn move_submission(
    submission: &mut Submission,
    update: &SubmissionUpdate,
    round: u64,
    now: Timestamp,
) -> Result<(), receipts::model::ModelError> {
    submission.round_transition(update.to, round, now, update.reason.clone())?;
    if submission.state != PipelineState::InfraFailed {
        return Ok(());
    }
    match update.requeue {
        RequeueCharge::Uncharged => submission.requeue_uncharged(
            now,
            format!("round {round} was infra_failed: requeued without using its one requeue"),
        ),
        RequeueCharge::Charged if submission.can_requeue() => {
            submission.requeue(now, format!("requeued once after round {round}"))
        }
        RequeueCharge::Charged => Ok(()),
    }
}

/// The round record and the submission moves, from the journal.
fn build(ctx: &Ctx<'_>) -> Result<(RoundRecord, Vec<SubmissionUpdate>), RoundError> {
    let missing = |what: &str| RoundError::Record {
        round: ctx.round,
        message: format!("the journal has no {what} record"),
    };
    let setup = ctx.setup.as_ref().ok_or_else(|| missing("setup"))?;
    let records = &ctx.journal.records;
    let teardown = (records.iter())
        .find_map(|r| match r {
            Record::Teardown(t) => Some(t),
            _ => None,
        })
        .ok_or_else(|| missing("teardown"))?;
    let scorer = (records.iter())
        .find_map(|r| match r {
            Record::Scorer(s) => Some(s),
            _ => None,
        })
        .ok_or_else(|| missing("scorer"))?;

    // Each entry's status from its representative run: the run that took its
    // correctness outputs (normally its first), else its first.
    let mut entries: Vec<Entry> = setup
        .entries
        .iter()
        .map(|planned| {
            let verdict = scorer.verdicts.iter().find(|v| v.index == planned.index);
            match representative(ctx, planned.index) {
                Some(record) => entry_from(ctx, planned, record, verdict),
                // Not run (the capability probe stopped the round): dated when setup
                // ended, after the round opened.
                None => Ok(not_run(
                    planned,
                    ctx.engines.backend.kind(),
                    setup.steps.last().map_or(setup.started_at, |s| s.ended_at),
                )),
            }
        })
        .collect::<Result<_, _>>()?;
    // What let each repository submission run, from the bundle's input copies, and the
    // margin each challenger must clear (a derived one's may be larger).
    let campaign = &ctx.frozen.campaign;
    let incumbent = setup.leader_before.as_ref().map(|l| l.patch);
    for entry in &mut entries {
        if let Some(patch) = &entry.patch {
            entry.review = super::review::entry_review_of(&ctx.bundle, ctx.round, patch)?;
        }
        if let Some(review) = entry.review.as_mut() {
            review.derived_margin_bp = derived_margin_bp(
                campaign,
                entry.role,
                incumbent.as_ref(),
                review.derived_from.as_deref(),
            );
        }
    }
    let challenger_margins_bp: Vec<u32> = (entries.iter())
        .filter(|e| e.role == Role::Challenger)
        .map(|e| {
            let derived_from = e.review.as_ref().and_then(|r| r.derived_from.as_deref());
            challenger_margin_bp(campaign, incumbent.as_ref(), derived_from)
        })
        .collect();

    // On track s1-fast-speed a challenger failing a gate cannot be seated
    // (content/s1-fast-speed.md, The gates).
    let failed_gates = super::fast::gate_failures(ctx, &entries);
    // An entry whose run wrote key material is disqualified, whatever it measured.
    let withheld = withheld_files(records);
    let leaked = secrets::per_entry(&withheld);
    // The passes (content/rounds.md, Passes): an entry its correctness outputs or the
    // scorer failed cannot be seated, whatever its throughput; nor one that leaked a key,
    // nor one failing a gate.
    let excluded: Vec<u32> = entries
        .iter()
        .filter(|e| {
            e.role != Role::Baseline
                && (leaked.contains_key(&e.index)
                    || failed_gates.iter().any(|(index, _)| *index == e.index)
                    || e.status != EntryStatus::Scored
                        && ctx.journal.outputs_record(e.index).is_some())
        })
        .map(|e| e.index)
        .collect();
    let records: Vec<&EntryRecord> = (records.iter())
        .filter_map(|r| match r {
            Record::Entry(e) => Some(e.as_ref()),
            _ => None,
        })
        .collect();
    let view = passes::view(
        &setup.entries,
        ctx.pass_orders(&setup.entries),
        &records,
        &excluded,
        campaign.drift_bound_bp,
        (campaign.overtake_margin_bp, &challenger_margins_bp),
    );
    for ((entry, planned), passed) in entries.iter_mut().zip(&setup.entries).zip(&view.entries) {
        with_passes(
            ctx,
            entry,
            (planned, passed),
            &view.passes,
            &records,
            scorer,
        )?;
    }
    for entry in entries.iter_mut().filter(|e| e.role != Role::Baseline) {
        if let Some(&files) = leaked.get(&entry.index) {
            disqualify_for_leak(entry, files, &withheld);
        }
    }
    super::fast::disqualify_by_gates(&mut entries, &failed_gates);
    let hardware = HardwareCheck {
        changed: setup.hardware != teardown.hardware,
        at_start: setup.hardware.clone(),
        at_end: teardown.hardware.clone(),
    };
    let incumbent_infra_failed = entries
        .iter()
        .any(|e| e.role == Role::Incumbent && e.status == EntryStatus::InfraFailed);
    let outcome = passes::outcome(
        &view,
        &setup.entries,
        &passes::OutcomeInput {
            leader_before: setup.leader_before.clone(),
            margin_bp: campaign.overtake_margin_bp,
            hardware_changed: hardware.changed,
            baseline_without_token_ids: ctx.baseline_without_token_ids(),
            capability_missing: ctx.capability_failure(),
            // The scorer's typed failure (the baseline's prompt echo, its deadline) says why.
            scorer_failure: scorer.failure.as_ref().map(|_| {
                scorer
                    .round_failure
                    .clone()
                    .unwrap_or(RoundFailure::ScorerFailed)
            }),
            incumbent_infra_failed,
            incumbent_infra_failed_rounds: setup.incumbent_infra_failed_rounds,
            practice: setup.practice,
            cost_seat: super::fast::cost_seat(ctx, &entries, Some(&view.noise)),
        },
    );
    // An incumbent re-measured alone that failed for infrastructure reasons again.
    let remeasure_failed = outcome.remeasure.is_some()
        && (incumbent_infra_failed
            || matches!(
                view.decision,
                PairedDecision::InfraFailed(
                    PairedFailure::RunInvalid {
                        slot: Slot::Incumbent,
                        ..
                    } | PairedFailure::RerunMissing {
                        slot: Slot::Incumbent,
                        ..
                    }
                )
            ));

    // The run still invalid after its re-run that made the round infra_failed: its
    // entry's own cause (CPU steal, client lag, the runner), read from that last attempt.
    let invalid_run = match outcome.reason.as_ref().and_then(TypedOrText::typed) {
        Some(RoundFailure::RunInvalid {
            entry,
            control,
            pass,
        }) => records
            .iter()
            .rev()
            .find(|r| r.index == *entry && r.control == *control && r.pass == *pass)
            .zip(setup.entries.iter().find(|p| p.index == *entry))
            .map(|(record, planned)| entry_from(ctx, planned, record, None))
            .transpose()?
            .filter(|own| own.status == EntryStatus::InfraFailed)
            .and_then(|own| Some((own.index, own.infra_failure?))),
        _ => None,
    };
    settle_entries(
        &mut entries,
        remeasure_failed,
        setup.incumbent_infra_failed_rounds,
        &outcome,
        invalid_run,
    );
    // Only a scored entry carries its paired score.
    for entry in &mut entries {
        if entry.status != EntryStatus::Scored {
            entry.paired_score = None;
        }
    }
    // A parallel round's placement of every run, and each row's GPUs.
    let mut passes = view.passes;
    let layout = ctx.layout()?;
    if let Some(layout) = &layout {
        let (_, seed) = ctx.pass_plan();
        layout
            .apply(&seed, &mut passes, &mut entries)
            .map_err(|e| ctx.record_error(&e))?;
    }
    // A confirmation's or re-measurement's challengers were not taken from the queue
    // (content/title.md): their records stay as earlier rounds left them.
    let updates = match setup.kind {
        None | Some(RoundKindRecord::Regular) => {
            submission_updates(&entries, ctx.round, outcome.status)
        }
        Some(_) => Vec::new(),
    };

    let steps = round_steps(&ctx.journal.records);
    let ended_at = steps
        .last()
        .map_or_else(|| ctx.options.clock.now(), |s| s.ended_at);
    let record = RoundRecord {
        round: ctx.round,
        campaign: CampaignRef {
            id: ctx.frozen.campaign.id.clone(),
            digest: ctx.frozen.digest,
        },
        miners_digest: setup.miners_digest,
        previous_receipt: setup.previous_receipt,
        tool: Tool {
            name: "referee".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            git_commit: option_env!("REFEREE_GIT_COMMIT")
                .unwrap_or("unknown")
                .into(),
            cpu_features: engines::hardware::cpu_features(),
        },
        seeds: setup.seeds.clone(),
        beacon: setup.beacon.clone(),
        evaluator_secret: setup.evaluator_secret,
        practice: setup.practice,
        request_sequence_digest: setup.request_sequence_digest,
        sla: ctx.frozen.campaign.sla.clone(),
        hardware,
        started_at: setup.started_at,
        ended_at,
        steps,
        entries,
        drift: None,
        passes,
        noise: Some(view.noise),
        outcome,
        token_count: ctx.self_reported_tokens(),
        client_self_test: setup.client_self_test.clone(),
        capability_probe: setup.capability_probe.clone(),
        limits: Some(ctx.frozen.campaign.effective_limits()),
        inputs: setup.inputs.clone(),
        round_opened: ROUND_OPENED_FILE.into(),
        transparency_log: ctx.round_log.clone(),
        kind: Some(setup.kind.clone().unwrap_or(RoundKindRecord::Regular)),
        clock: Some(ctx.options.clock.kind()),
        decide: decide_round(ctx),
        fast_track: None,
        pod: super::pod::pod_run(&ctx.journal.records),
        parallel: layout.map(|layout| layout.record),
    };
    let record = RoundRecord {
        fast_track: super::fast::fast_track(ctx, &record),
        ..record
    };
    Ok((record, updates))
}

/// A `decide` campaign's track record: its track, the workload kind, and each entry's
/// weights as its first run that hashed them found them (every run of an entry serves
/// the same tree); `None` for a completions campaign.
fn decide_round(ctx: &Ctx<'_>) -> Option<receipts::model::DecideRound> {
    use receipts::model::{DecideRound, EntryWeights, WeightsSource, WorkloadKind};
    let campaign = &ctx.frozen.campaign;
    if campaign.effective_workload_kind() != WorkloadKind::Decide {
        return None;
    }
    let mut weights: Vec<EntryWeights> = Vec::new();
    for record in ctx.journal.records.iter().filter_map(|r| match r {
        Record::Entry(record) => Some(record),
        _ => None,
    }) {
        if let Some(files) = &record.weights
            && !weights.iter().any(|w| w.entry == record.index)
        {
            weights.push(EntryWeights {
                entry: record.index,
                source: WeightsSource::Pinned,
                files: files.clone(),
            });
        }
    }
    weights.sort_by_key(|w| w.entry);
    Some(DecideRound {
        track: campaign.track,
        workload_kind: WorkloadKind::Decide,
        weights,
    })
}

/// Reads `entry`'s passes into it ([`passes::view`]'s `passed` for it): its status from
/// the run that disqualified it when its first one did not, its own runs in the passes
/// that are not void with their median throughput, its paired score and its score.
///
/// Errors: as [`entry_from`].
fn with_passes(
    ctx: &Ctx<'_>,
    entry: &mut Entry,
    (planned, passed): (&PlannedEntry, &passes::EntryPasses),
    view_passes: &[receipts::model::Pass],
    records: &[&EntryRecord],
    scorer: &ScorerRecord,
) -> Result<(), RoundError> {
    // The run that disqualified it, when its first one did not.
    if let Some((pass, cause)) = passed.disqualified_in
        && let Some(record) = records
            .iter()
            .rev()
            .find(|r| r.index == entry.index && !r.control && r.pass == pass)
    {
        let verdict = scorer.verdicts.iter().find(|v| v.index == entry.index);
        *entry = entry_from(ctx, planned, record, verdict)?;
        if cause == DisqualifyingRun::InvalidTwice {
            disqualify_invalid_twice(entry, pass);
        }
    }
    // Its own runs (last attempts) in the passes that are not void, and its
    // throughput their median when every one of them has one.
    entry.runs = view_passes
        .iter()
        .filter(|pass| !pass.void)
        .filter_map(|pass| {
            records
                .iter()
                .rev()
                .find(|r| r.index == entry.index && !r.control && r.pass == pass.index)
        })
        .flat_map(|r| run_summaries(r))
        .collect();
    entry.passes = passed.passes.clone();
    entry.paired_score = passed.paired_score;
    let throughputs: Option<Vec<u64>> = entry.runs.iter().map(|r| r.throughput_milli_rps).collect();
    let spread = throughputs
        .as_deref()
        .and_then(receipts::rules::score::run_throughputs);
    entry.throughput_milli_rps = spread.map(|(median, _, _)| median);
    entry.throughput_min_milli_rps = spread.map(|(_, min, _)| min);
    entry.throughput_max_milli_rps = spread.map(|(_, _, max)| max);
    // A baseline whose runs counted in no pass (each void: it or its A/A control
    // failed there) measured nothing the round can use.
    if entry.role == Role::Baseline
        && entry.status == EntryStatus::Scored
        && entry.throughput_milli_rps.is_none()
    {
        entry.status = EntryStatus::InfraFailed;
        entry.infra_failure = Some(TypedOrText::Typed(EntryInfraFailure::BaselineFailed {
            detail: "its run or its A/A control failed in every pass".into(),
        }));
    }
    entry.score_ppm = match (entry.role, entry.status, passed.paired_score) {
        (Role::Baseline, EntryStatus::Scored, _) => Some(0),
        (_, EntryStatus::Scored, Some(score)) => Some(score.median_ppm),
        _ => None,
    };
    Ok(())
}

/// Disqualifies `entry`, read from its run invalid again after its re-run in `pass`
/// while both baseline runs of that pass were valid: the entry's fault, not the host's
/// that the run's own cause (its `infraFailure`, kept in the detail) would name — no
/// veto (content/noise.md, Failures in a pass).
fn disqualify_invalid_twice(entry: &mut Entry, pass: u32) {
    let why = entry.infra_failure.take().map_or_else(
        || "its run was invalid".to_owned(),
        |failure| format!("its run was invalid ({failure})"),
    );
    entry.status = EntryStatus::Disqualified;
    entry.disqualification = Some(Disqualification {
        reason: DisqualificationReason::RunInvalidTwice { pass },
        detail: format!(
            "{why} again after its re-run in pass {pass}, while both baseline runs of that \
             pass were valid"
        ),
        log_tail: Vec::new(),
    });
}

/// Every step of the journaled groups, in step order.
fn round_steps(records: &[Record]) -> Vec<Step> {
    let mut steps: Vec<Step> = records
        .iter()
        .flat_map(|r| match r {
            Record::Setup(s) => s.steps.clone(),
            Record::Entry(e) => e.steps.clone(),
            Record::Scorer(s) => s.steps.clone(),
            Record::Teardown(t) => t.steps.clone(),
            Record::Pod(p) => p.steps.clone(),
            Record::Withheld(_) | Record::Sealed(_) => Vec::new(),
        })
        .collect();
    steps.sort_by_key(|s| s.index);
    steps
}

/// Each entry's status once the round is decided (content/rounds.md, What happens to
/// each entry). In an `infra_failed` round no one is scored: an entry its own runs
/// disqualified stays disqualified; an incumbent that caused the failure keeps its own
/// `infraFailure`; every other entry but the baseline becomes `infra_failed` with
/// `round_infra_failed` and no disqualification. `invalid_run` is the entry (index) whose
/// run was invalid twice and made the round infra_failed, with its own cause
/// (`cpu_steal`, `client_lagged`, `runner`): it is `infra_failed` with that cause, the
/// baseline included, unless its own runs disqualified it. In a round that counts, an
/// incumbent that failed its re-measure is disqualified; scores are taken against the
/// first baseline run (`baseline_first`, milli-requests/s).
fn settle_entries(
    entries: &mut [Entry],
    remeasure_failed: bool,
    infra_failed_rounds: u32,
    outcome: &Outcome,
    invalid_run: Option<(u32, TypedOrText<EntryInfraFailure>)>,
) {
    let round_failed = outcome.status != RoundStatus::Complete;
    let failure = outcome.reason.as_ref().and_then(TypedOrText::typed);
    for entry in entries.iter_mut() {
        if let Some((_, cause)) = invalid_run.as_ref().filter(|(index, _)| {
            round_failed && *index == entry.index && entry.status != EntryStatus::Disqualified
        }) {
            entry.status = EntryStatus::InfraFailed;
            entry.score_ppm = None;
            entry.disqualification = None;
            entry.infra_failure = Some(cause.clone());
            continue;
        }
        if round_failed && entry.role != Role::Baseline {
            entry.score_ppm = None;
            let caused_it = entry.role == Role::Incumbent
                && matches!(failure, Some(RoundFailure::IncumbentInfraFailed { .. }));
            if entry.status == EntryStatus::Disqualified || caused_it {
                continue;
            }
            entry.status = EntryStatus::InfraFailed;
            entry.disqualification = None;
            entry.infra_failure = failure.map(|failure| {
                TypedOrText::Typed(EntryInfraFailure::RoundInfraFailed {
                    failure: failure.clone(),
                })
            });
            continue;
        }
        if entry.role == Role::Incumbent && remeasure_failed {
            let cause = entry
                .infra_failure
                .take()
                .map_or_else(|| "infra_failed".to_owned(), |f| f.to_string());
            entry.status = EntryStatus::Disqualified;
            entry.disqualification = Some(Disqualification {
                reason: DisqualificationReason::RemeasureInfraFailed {
                    infra_failed_rounds,
                },
                detail: format!(
                    "re-measured alone after its runs made the last {infra_failed_rounds} \
                     rounds infra_failed, it failed for infrastructure reasons again: {cause}"
                ),
                log_tail: Vec::new(),
            });
        }
    }
}

/// The files withheld before sealing, from the journal (none when nothing leaked).
fn withheld_files(records: &[Record]) -> Vec<WithheldFile> {
    records
        .iter()
        .find_map(|r| match r {
            Record::Withheld(w) => Some(w.files.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// Disqualifies `entry` `secret_in_output`: `files` of the files its run wrote held
/// private key material and were withheld (`secrets.rs`); its detail names them.
fn disqualify_for_leak(entry: &mut Entry, files: u32, withheld: &[WithheldFile]) {
    let paths: Vec<&str> = withheld
        .iter()
        .filter(|f| f.entry == Some(entry.index))
        .map(|f| f.path.as_str())
        .collect();
    entry.status = EntryStatus::Disqualified;
    entry.infra_failure = None;
    entry.score_ppm = None;
    entry.disqualification = Some(Disqualification {
        reason: DisqualificationReason::SecretInOutput { files },
        detail: format!(
            "its run wrote private key material, withheld before sealing: {}",
            paths.join(", ")
        ),
        log_tail: Vec::new(),
    });
}

/// Each challenger's submission move after round `round` (whose status is `status`),
/// with the reason its event records.
fn submission_updates(entries: &[Entry], round: u64, status: RoundStatus) -> Vec<SubmissionUpdate> {
    entries
        .iter()
        .filter(|e| e.role == Role::Challenger)
        .filter_map(|e| {
            let patch = e.patch?;
            let (to, reason) = match e.status {
                EntryStatus::Scored => (
                    PipelineState::Scored,
                    format!(
                        "round {round}: scored {} ppm ({} milli-req/s)",
                        e.score_ppm.unwrap_or(0),
                        e.throughput_milli_rps.unwrap_or(0)
                    ),
                ),
                EntryStatus::Disqualified => (
                    PipelineState::Disqualified,
                    format!(
                        "round {round}: {}",
                        e.disqualification
                            .as_ref()
                            .map_or("disqualified".to_owned(), |d| d.detail.clone())
                    ),
                ),
                EntryStatus::InfraFailed => (
                    PipelineState::InfraFailed,
                    format!(
                        "round {round}: {}",
                        e.infra_failure
                            .as_ref()
                            .map_or_else(|| "infra_failed".to_owned(), ToString::to_string)
                    ),
                ),
            };
            let requeue = if status != RoundStatus::Complete {
                RequeueCharge::Uncharged
            } else {
                RequeueCharge::Charged
            };
            Some(SubmissionUpdate {
                patch,
                to,
                reason,
                requeue,
            })
        })
        .collect()
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
                host_load: record.host_load.clone(),
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The run an entry's status is read from: the one that took its correctness outputs
/// (normally its first), else its first run.
fn representative<'c>(ctx: &'c Ctx<'_>, index: u32) -> Option<&'c EntryRecord> {
    ctx.journal
        .outputs_record(index)
        .or_else(|| ctx.journal.entry_runs(index).find(|r| !r.control))
}

/// An entry whose group never ran (cannot happen once the journal is complete; kept
/// typed rather than panicking).
fn not_run(planned: &PlannedEntry, backend: BackendKind, at: Timestamp) -> Entry {
    Entry {
        index: planned.index,
        role: planned.role,
        miner: planned.miner.clone(),
        patch: planned.patch,
        engine: unconfigured_engine(backend),
        status: EntryStatus::InfraFailed,
        disqualification: None,
        infra_failure: Some(TypedOrText::Typed(EntryInfraFailure::NotRun)),
        runs: Vec::new(),
        throughput_milli_rps: None,
        throughput_min_milli_rps: None,
        throughput_max_milli_rps: None,
        correctness: None,
        score_ppm: None,
        passes: Vec::new(),
        paired_score: None,
        started_at: at,
        ended_at: at,
        engine_log: None,
        review: None,
    }
}

/// An entry's typed status from its engine run and the scorer's verdict.
///
/// Errors: [`RoundError::Record`] when the per-item artifact of a failed correctness
/// gate, whose values its detail quotes, cannot be read back (a resumed round).
fn entry_from(
    ctx: &Ctx<'_>,
    planned: &PlannedEntry,
    record: &EntryRecord,
    verdict: Option<&EntryVerdict>,
) -> Result<Entry, RoundError> {
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
            .map(|rel| log_tail(&ctx.bundle.join(rel)))
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
            // The baseline is never disqualified: its failure is the round's.
            if planned.role == Role::Baseline {
                entry.status = EntryStatus::InfraFailed;
                entry.infra_failure = Some(TypedOrText::Typed(EntryInfraFailure::BaselineFailed {
                    detail: d.detail.clone(),
                }));
            } else {
                entry.status = EntryStatus::Disqualified;
                entry.disqualification = Some(d.clone());
            }
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
            outputs_disqualification,
            ..
        } => {
            entry.throughput_milli_rps = measurement.throughput_milli_rps;
            entry.throughput_min_milli_rps = measurement.throughput_min_milli_rps;
            entry.throughput_max_milli_rps = measurement.throughput_max_milli_rps;
            entry.correctness = verdict.and_then(|v| v.summary.clone());
            if !measurement.valid {
                entry.status = EntryStatus::InfraFailed;
                entry.infra_failure = Some(TypedOrText::Typed(EntryInfraFailure::ClientLagged));
            } else if let (true, Some(load)) = (record.steal_exceeded, &record.host_load) {
                entry.status = EntryStatus::InfraFailed;
                entry.infra_failure = Some(TypedOrText::Typed(EntryInfraFailure::CpuSteal {
                    steal_ms: load.steal_ms,
                    wall_ms: load.wall_ms,
                }));
            } else if let Some(violation) = record.telemetry_violation() {
                entry.status = EntryStatus::InfraFailed;
                entry.infra_failure = Some(TypedOrText::Typed(EntryInfraFailure::Telemetry {
                    violation: violation.clone(),
                }));
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
                    SlaUnmetReason::Unreachable => "the engine was unreachable: its server \
                        refused or reset every request of a probe before answering any"
                        .to_owned(),
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
            } else if let Some(dq) = outputs_disqualification {
                entry.status = EntryStatus::Disqualified;
                entry.disqualification = Some(dq.clone());
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
                        disqualification: Some(dq),
                        ..
                    }) => {
                        entry.status = EntryStatus::Disqualified;
                        entry.disqualification = Some(dq.clone());
                    }
                    Some(EntryVerdict {
                        summary: Some(summary),
                        ..
                    }) if summary.passed => entry.status = EntryStatus::Scored,
                    Some(EntryVerdict {
                        summary: Some(summary),
                        ..
                    }) => {
                        let detail = match &ctx.frozen.campaign.decide {
                            Some(contract) => decide_gate_detail(summary, contract),
                            None => {
                                let artifact = (ctx.produced)
                                    .correctness_items(&ctx.bundle, &summary.items_file)
                                    .map_err(|e| RoundError::Record {
                                        round: ctx.round,
                                        message: error_chain(&e),
                                    })?;
                                correctness_detail(
                                    summary,
                                    &ctx.frozen.campaign.correctness,
                                    Some(&artifact),
                                )
                            }
                        };
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
    // A tail taken while the engine still ran (its correctness outputs failed) is older
    // than the log that is sealed: the receipt carries the sealed log's, by the rule the
    // verifier recomputes from it (`logs.tail`).
    if let Some(dq) = &mut entry.disqualification
        && !dq.log_tail.is_empty()
    {
        dq.log_tail = tail();
    }
    Ok(entry)
}

/// The detail of a `decide` campaign's failed logit-distance gate, from its summary and
/// the contract's bounds: the first item over the item bound, else the first group over
/// the group bound.
fn decide_gate_detail(
    summary: &CorrectnessSummary,
    contract: &receipts::model::DecideContract,
) -> String {
    match (summary.first_failing_item, summary.first_failing_group) {
        (Some(item), _) => format!(
            "logit distance of gate item {item} above the item bound of {} µnat (largest \
             item {} µnat)",
            contract.item_bound_micro_nats, summary.max_item_micro_nats
        ),
        (None, Some(group)) => format!(
            "mean logit distance of gate group {group} above the group bound of {} µnat \
             (largest group mean {} µnat)",
            contract.group_mean_bound_micro_nats, summary.max_group_mean_micro_nats
        ),
        (None, None) => "the logit-distance gate had no items".to_owned(),
    }
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
            ..CorrectnessSpec::default()
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
                    entry_top_k: None,
                    reference_top_k: None,
                })
                .collect(),
            measured_for: None,
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
            load_sample_file: None,
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

    /// No veto: the entry read from its run invalid twice beside valid baseline runs is
    /// disqualified `run_invalid_twice` in that pass, its run's own cause kept in the
    /// detail, no longer `infra_failed`.
    #[test]
    fn an_entry_invalid_twice_is_disqualified_with_its_runs_cause_in_the_detail() {
        let planned = PlannedEntry {
            index: 2,
            role: Role::Challenger,
            miner: Some("miner-2".parse().unwrap()),
            patch: Some(Sha256Hex::digest(&[2])),
            group: "entry 2".into(),
            slug: "entry-2".into(),
            image: None,
        };
        let mut entry = not_run(&planned, BackendKind::Builtin, Timestamp::now());
        entry.status = EntryStatus::InfraFailed;
        entry.infra_failure = Some(TypedOrText::Typed(EntryInfraFailure::ClientLagged));
        disqualify_invalid_twice(&mut entry, 1);
        assert_eq!(entry.status, EntryStatus::Disqualified);
        assert_eq!(entry.infra_failure, None);
        let disqualification = entry.disqualification.unwrap();
        assert_eq!(
            disqualification.reason,
            DisqualificationReason::RunInvalidTwice { pass: 1 }
        );
        assert_eq!(
            disqualification.detail,
            format!(
                "its run was invalid ({}) again after its re-run in pass 1, while both \
                 baseline runs of that pass were valid",
                EntryInfraFailure::ClientLagged
            )
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

/// The leader rule's failure cases as the runner applies them: entry statuses, submission
/// moves and the requeue budget (content/rounds.md, What happens to each entry).
#[cfg(test)]
mod outcome_tests {
    use receipts::model::{Leader, MinerId, Submission};
    use receipts::rules::leader::{self, Contender, IncumbentRun, LeaderInput};

    use super::super::preflight::Previous;
    use super::*;

    const BASELINE: u64 = 10_000;

    fn leader(n: u8) -> Leader {
        Leader {
            patch: Sha256Hex::digest(&[n]),
            miner: format!("miner-{n}").parse::<MinerId>().unwrap(),
        }
    }

    /// An entry of `role` (challengers and the incumbent are `leader(n)`), `scored` at the
    /// throughput, else as `not_run` left it (`infra_failed`, `not_run`).
    fn entry(index: u32, role: Role, n: u8, scored: Option<u64>) -> Entry {
        let who = (role != Role::Baseline).then(|| leader(n));
        let planned = PlannedEntry {
            index,
            role,
            miner: who.as_ref().map(|l| l.miner.clone()),
            patch: who.as_ref().map(|l| l.patch),
            group: format!("entry {index}"),
            slug: format!("entry-{index}"),
            image: None,
        };
        let mut entry = not_run(&planned, BackendKind::Process, Timestamp::now());
        if let Some(t) = scored {
            entry.status = EntryStatus::Scored;
            entry.infra_failure = None;
            entry.throughput_milli_rps = Some(t);
        }
        entry
    }

    fn disqualified(mut entry: Entry) -> Entry {
        entry.status = EntryStatus::Disqualified;
        entry.infra_failure = None;
        entry.disqualification = Some(Disqualification {
            reason: DisqualificationReason::CorrectnessFailed,
            detail: "logit distance of item 3 above the item bound".into(),
            log_tail: Vec::new(),
        });
        entry
    }

    /// The challengers as the leader rule sees them, in seating (commitment) order.
    fn contenders(entries: &[Entry]) -> Vec<Contender> {
        entries
            .iter()
            .filter(|e| e.role == Role::Challenger)
            .filter_map(|e| {
                Some(Contender {
                    leader: Leader {
                        patch: e.patch?,
                        miner: e.miner.clone()?,
                    },
                    throughput_milli_rps: (e.status == EntryStatus::Scored)
                        .then_some(e.throughput_milli_rps)
                        .flatten(),
                })
            })
            .collect()
    }

    /// How the incumbent's own runs ended: its entry's status (a scored entry without a
    /// throughput, or no incumbent entry at all, cannot happen and counts as infrastructure).
    fn incumbent_run(entries: &[Entry]) -> IncumbentRun {
        match entries
            .iter()
            .find(|e| e.role == Role::Incumbent)
            .map(|e| (e.status, e.throughput_milli_rps))
        {
            Some((EntryStatus::Scored, Some(throughput_milli_rps))) => IncumbentRun::Scored {
                throughput_milli_rps,
            },
            Some((EntryStatus::Disqualified, _)) => IncumbentRun::Disqualified,
            _ => IncumbentRun::InfraFailed,
        }
    }

    /// What `build` does after the entries' own statuses: the leader rule, the settled
    /// entries and the submission moves.
    fn decide(
        entries: &mut [Entry],
        leader_before: Option<Leader>,
        infra_failed_rounds: u32,
        drift_milli_rps: u64,
    ) -> (Outcome, Vec<SubmissionUpdate>) {
        let contenders = contenders(entries);
        let input = LeaderInput {
            leader_before,
            incumbent: incumbent_run(entries),
            incumbent_infra_failed_rounds: infra_failed_rounds,
            baseline_first_milli_rps: Some(BASELINE),
            baseline_drift_milli_rps: Some(drift_milli_rps),
            drift_bound_bp: 500,
            margin_bp: 100,
            hardware_changed: false,
            scorer_failed: false,
            challengers: &contenders,
        };
        let outcome = leader::decide(&input).to_outcome(&input);
        settle_entries(
            entries,
            input.incumbent_failed_remeasure(),
            infra_failed_rounds,
            &outcome,
            None,
        );
        let updates = submission_updates(entries, 7, outcome.status);
        (outcome, updates)
    }

    /// `leader(n)`'s submission, seated in round 7; `requeues` already spent.
    fn seated(n: u8, requeues: u32) -> Submission {
        let seat = leader(n);
        let mut submission =
            super::super::tests::assigned(&seat.patch, seat.miner, 7, Timestamp::now());
        submission.requeues = requeues;
        submission
    }

    fn moved(n: u8, requeues: u32, update: &SubmissionUpdate) -> (PipelineState, u32) {
        let mut submission = seated(n, requeues);
        move_submission(&mut submission, update, 7, Timestamp::now()).unwrap();
        (submission.state, submission.requeues)
    }

    /// Regression: a round that was infra_failed as a whole (here: drift) used up each
    /// challenger's one requeue, so a second such round left it `infra_failed` for good.
    #[test]
    fn a_round_level_infra_failure_leaves_the_challengers_requeue_untouched() {
        let mut entries = [
            entry(0, Role::Baseline, 0, Some(BASELINE)),
            entry(1, Role::Challenger, 1, Some(50_000)),
            entry(2, Role::Challenger, 2, None),
        ];
        let (outcome, updates) = decide(&mut entries, None, 0, 10_600);
        assert_eq!(outcome.status, RoundStatus::InfraFailed);
        for entry in &entries[1..] {
            assert_eq!(entry.status, EntryStatus::InfraFailed);
            assert_eq!(entry.score_ppm, None);
            assert_eq!(entry.disqualification, None);
            assert_eq!(
                entry.infra_failure,
                Some(TypedOrText::Typed(EntryInfraFailure::RoundInfraFailed {
                    failure: RoundFailure::Drift {
                        drift_bp: 600,
                        bound_bp: 500
                    }
                }))
            );
        }
        assert_eq!(
            updates.iter().map(|u| u.requeue).collect::<Vec<_>>(),
            [RequeueCharge::Uncharged, RequeueCharge::Uncharged]
        );
        // Back in the queue with the budget as it was, even a spent one.
        assert_eq!(moved(1, 0, &updates[0]), (PipelineState::BenchQueued, 0));
        assert_eq!(moved(2, 1, &updates[1]), (PipelineState::BenchQueued, 1));

        // The challenger's own infrastructure failure in a round that counts uses it.
        let mut own = [
            entry(0, Role::Baseline, 0, Some(BASELINE)),
            entry(1, Role::Challenger, 1, None),
        ];
        let (outcome, updates) = decide(&mut own, None, 0, BASELINE);
        assert_eq!(outcome.status, RoundStatus::Complete);
        assert_eq!(updates[0].requeue, RequeueCharge::Charged);
        assert_eq!(moved(1, 0, &updates[0]), (PipelineState::BenchQueued, 1));
        assert_eq!(moved(1, 1, &updates[0]), (PipelineState::InfraFailed, 1));
    }

    /// Regression: in an infra_failed round a challenger its own runs disqualified was
    /// turned `infra_failed` with its disqualification left on it, and requeued.
    #[test]
    fn a_disqualified_challenger_is_not_requeued_and_no_entry_keeps_a_stale_disqualification() {
        let mut entries = [
            entry(0, Role::Baseline, 0, Some(BASELINE)),
            disqualified(entry(1, Role::Challenger, 1, Some(50_000))),
            entry(2, Role::Challenger, 2, Some(20_000)),
        ];
        let (outcome, updates) = decide(&mut entries, None, 0, 10_600);
        assert_eq!(outcome.status, RoundStatus::InfraFailed);
        assert_eq!(entries[1].status, EntryStatus::Disqualified);
        assert_eq!(
            entries[1].disqualification.as_ref().map(|d| d.reason),
            Some(DisqualificationReason::CorrectnessFailed)
        );
        assert_eq!(entries[1].infra_failure, None);
        assert_eq!(entries[2].status, EntryStatus::InfraFailed);
        assert_eq!(entries[2].disqualification, None);
        assert_eq!(updates[0].to, PipelineState::Disqualified);
        assert_eq!(moved(1, 0, &updates[0]), (PipelineState::Disqualified, 0));
        assert_eq!(moved(2, 0, &updates[1]), (PipelineState::BenchQueued, 0));
    }

    /// Regression (demo round 1): the baseline's run of pass 1 was over the steal bound on
    /// both attempts, which made the round infra_failed, yet the baseline stayed `scored`
    /// (score 0) with that run among its runs. Now it is `infra_failed` with `cpu_steal`
    /// (its own cause), the others as any infra_failed round leaves them.
    #[test]
    fn the_run_invalid_twice_for_steal_makes_its_entry_infra_failed_baseline_included() {
        let mut entries = [
            entry(0, Role::Baseline, 0, Some(BASELINE)),
            entry(1, Role::Challenger, 1, Some(19_000)),
            disqualified(entry(2, Role::Challenger, 2, Some(15_000))),
        ];
        entries[0].score_ppm = Some(0);
        let failure = RoundFailure::RunInvalid {
            entry: 0,
            control: false,
            pass: 0,
        };
        let outcome = Outcome {
            status: RoundStatus::InfraFailed,
            reason: Some(TypedOrText::Typed(failure.clone())),
            leader_before: None,
            leader_after: None,
            changed: false,
            margin_bp: 1_000,
            decision: TypedOrText::Typed(receipts::model::SeatRule::RoundInfraFailed),
            remeasure: None,
        };
        let steal = TypedOrText::Typed(EntryInfraFailure::CpuSteal {
            steal_ms: 1_510,
            wall_ms: 14_388,
        });
        settle_entries(&mut entries, false, 0, &outcome, Some((0, steal.clone())));
        assert_eq!(entries[0].status, EntryStatus::InfraFailed);
        assert_eq!(entries[0].infra_failure, Some(steal));
        assert_eq!(entries[0].score_ppm, None);
        assert_eq!(entries[1].status, EntryStatus::InfraFailed);
        assert_eq!(
            entries[1].infra_failure,
            Some(TypedOrText::Typed(EntryInfraFailure::RoundInfraFailed {
                failure
            }))
        );
        assert_eq!(entries[2].status, EntryStatus::Disqualified);
        assert_eq!(entries[2].infra_failure, None);
    }

    /// Regression: an infra-failed incumbent counted as disqualified and a challenger
    /// slower than the baseline took its seat. Now the round is infra_failed; after two
    /// such rounds in a row the next seats no challenger, and an incumbent failing there
    /// again is disqualified.
    #[test]
    fn an_incumbent_infra_failed_twice_is_remeasured_alone_then_disqualified() {
        let incumbent = leader(9);
        let mut previous = Previous {
            receipt: None,
            leader: Some(incumbent.clone()),
            incumbent_infra_failed_rounds: 0,
        };
        for round in 1..=2u32 {
            assert!(previous.seats_challengers(), "round {round}");
            let mut entries = [
                entry(0, Role::Baseline, 0, Some(BASELINE)),
                entry(1, Role::Incumbent, 9, None),
                entry(2, Role::Challenger, 2, Some(5_000)),
            ];
            let (outcome, updates) = decide(
                &mut entries,
                previous.leader.clone(),
                previous.incumbent_infra_failed_rounds,
                BASELINE,
            );
            assert_eq!(outcome.status, RoundStatus::InfraFailed, "round {round}");
            assert_eq!(
                outcome.reason,
                Some(TypedOrText::Typed(RoundFailure::IncumbentInfraFailed {
                    consecutive: round
                }))
            );
            assert_eq!(outcome.leader_after, Some(incumbent.clone()));
            // The incumbent keeps its own cause; the challenger's round did not count.
            assert_eq!(
                entries[1].infra_failure,
                Some(TypedOrText::Typed(EntryInfraFailure::NotRun))
            );
            assert_eq!(entries[2].status, EntryStatus::InfraFailed);
            assert_eq!(updates[0].requeue, RequeueCharge::Uncharged);
            previous = Previous {
                receipt: None,
                leader: outcome.leader_after.clone(),
                incumbent_infra_failed_rounds: leader::incumbent_infra_failed_rounds(&outcome),
            };
        }
        // Round 3 seats the baseline and the incumbent only.
        assert!(!previous.seats_challengers());
        let mut alone = [
            entry(0, Role::Baseline, 0, Some(BASELINE)),
            entry(1, Role::Incumbent, 9, None),
        ];
        let (outcome, updates) = decide(
            &mut alone,
            previous.leader.clone(),
            previous.incumbent_infra_failed_rounds,
            BASELINE,
        );
        assert!(updates.is_empty());
        assert_eq!(outcome.status, RoundStatus::Complete);
        assert_eq!(outcome.leader_after, None);
        assert!(outcome.changed);
        assert_eq!(
            outcome.remeasure,
            Some(receipts::model::IncumbentRemeasure {
                infra_failed_rounds: 2
            })
        );
        assert_eq!(alone[1].status, EntryStatus::Disqualified);
        assert_eq!(alone[1].infra_failure, None);
        let disqualification = alone[1].disqualification.as_ref().unwrap();
        assert_eq!(
            disqualification.reason,
            DisqualificationReason::RemeasureInfraFailed {
                infra_failed_rounds: 2
            }
        );
        assert_eq!(
            disqualification.detail,
            "re-measured alone after its runs made the last 2 rounds infra_failed, it failed \
             for infrastructure reasons again: the entry did not run"
        );
        // The round after seats challengers again.
        let after = Previous {
            receipt: None,
            leader: outcome.leader_after.clone(),
            incumbent_infra_failed_rounds: leader::incumbent_infra_failed_rounds(&outcome),
        };
        assert!(after.seats_challengers());
    }
}
