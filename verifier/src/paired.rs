//! The paired checks of a round run in interleaved passes (content/noise.md), v3: the
//! order of every pass redrawn from the revealed `passSeed`, which passes are void, each
//! entry's per-pass paired ratio, its paired score (median, interval, coverage), the
//! round's noise (baseline spread and A/A spread against their bounds, and the verdict
//! they give, in that order) and the seat decision, all recomputed with
//! `receipts::rules::{passes, paired}` from the throughputs the receipt records (which
//! `entry.measurement` binds to the probe logs). A v1 or v2 round ran no passes: every
//! one of these checks is `not applicable (vN)` there.
//!
//! How the receipt's passes read as the failure table's runs
//! ([`receipts::rules::paired::RunRecord`]): an entry's last row for a pass (and, for the
//! baseline, for its run or its control) is its last attempt, a re-run when an earlier
//! row of the same run precedes it; `measured` counts its throughput (none or 0 reads as
//! an unmet SLA), `sla_unmet` and `crashed` are the engine's, `invalid`, `infra_failed`
//! and `not_run` are the host's, and a run without any row is invalid after its re-run.

use std::path::Path;

use crate::{CheckName, FailureReason, VerifyReport};
use receipts::model::{
    Campaign, DisqualificationReason, Entry, EntryInfraFailure, EntryPass, EntryStatus,
    FrozenCampaign, Leader, PairedScore, PassStatus, Role, RoundFailure, RoundRecord, TokenCount,
    TypedOrText,
};
use receipts::rules::leader::incumbent_infra_failed_rounds;
use receipts::rules::outcome::{OutcomeEntry, OutcomeInput, round_outcome, without_token_ids};
use receipts::rules::paired::{
    self, Attempt, EntryFate, RoundRuns, RunFate, RunOutcome, RunRecord, SeatedRuns, SettledPasses,
};
use receipts::rules::passes::order_of_pass;
use receipts::rules::review::challenger_margin_bp;

use crate::PredicateVersion;
use crate::files::{ProbeLogs, recomputed, same};
use crate::view::{format_leader, format_pass_order};

/// The file every claim these checks compare is written in.
const RECEIPT: &str = "receipt.dsse.json";

/// Every check of this module, in the order they run.
const CHECKS: [CheckName; 7] = [
    CheckName::PassOrder,
    CheckName::PassVoid,
    CheckName::PairedRatio,
    CheckName::PairedScore,
    CheckName::NoiseSpread,
    CheckName::NoiseVerdict,
    CheckName::PairedDecision,
];

/// Runs the paired checks on `record` of the bundle whose probe logs `logs` reads (`passes.order`, `passes.void`, `paired.ratio`,
/// `paired.score`, `noise.spread`, `noise.verdict`, `paired.decision`) and, for v3, the
/// `round.scores` check of every entry (its `scorePpm` is its paired median). `campaign`
/// is the bundle's frozen campaign when `inputs.campaign` passed: the checks that need
/// its pass count, pass order or bounds are not run without it. `paired.decision` reads
/// the baseline's probe logs (whether a run of it got no token ids at all).
pub(crate) fn check_paired(
    report: &mut VerifyReport,
    logs: &mut ProbeLogs<'_>,
    record: &RoundRecord,
    campaign: Option<&FrozenCampaign>,
    version: PredicateVersion,
) {
    if version < PredicateVersion::V3 {
        for name in CHECKS {
            report.not_applicable(name, None, version.name());
        }
        return;
    }
    let runs = Runs::of(record);
    match campaign {
        Some(frozen) => check_order(report, record, frozen),
        None => report.not_run(&[CheckName::PassOrder], CheckName::InputsCampaign),
    }
    check_void(report, record, &runs);
    check_ratios(report, record);
    let settled = paired::settle_passes(&runs.rounds, invalid_twice(version));
    check_scores(report, record, &runs, settled.as_ref().ok());
    if version >= PredicateVersion::V6 {
        check_invalid_twice(report, record, &runs, settled.as_ref().ok());
    }
    check_noise(report, record, &runs, campaign);
    match campaign {
        Some(frozen) => {
            let settled = settled.as_ref().ok();
            check_decision(report, logs, record, &runs, settled, frozen, version);
        }
        None => report.not_run(&[CheckName::PairedDecision], CheckName::InputsCampaign),
    }
}

/// The receipt's passes as the failure table's runs.
struct Runs {
    /// What [`paired::settle_passes`] and [`paired::decide_paired`] read: every seated
    /// entry that can hold the seat (a challenger with a miner and a patch), the
    /// challengers in commitment order.
    rounds: RoundRuns,
    /// The entry index of each of `rounds.challengers`.
    challenger_entries: Vec<u32>,
    /// The entry index of `rounds.incumbent`.
    incumbent_entry: Option<u32>,
}

impl Runs {
    fn of(record: &RoundRecord) -> Self {
        let passes = u32::try_from(record.passes.len()).unwrap_or(u32::MAX);
        let baseline = record.entries.first().filter(|e| e.role == Role::Baseline);
        let runs_of = |entry: Option<&Entry>, control: bool| -> Vec<RunRecord> {
            (0..passes)
                .map(|pass| last_attempt(entry.map_or(&[][..], |e| &e.passes), pass, control))
                .collect()
        };
        let seated = |entry: &Entry| -> Option<SeatedRuns> {
            Some(SeatedRuns {
                leader: leader_of(entry)?,
                runs: runs_of(Some(entry), false),
            })
        };
        let mut challengers = Vec::new();
        let mut challenger_entries = Vec::new();
        for entry in record.entries.iter().filter(|e| e.role == Role::Challenger) {
            if let Some(runs) = seated(entry) {
                challengers.push(runs);
                challenger_entries.push(entry.index);
            }
        }
        let incumbent = record
            .entries
            .iter()
            .find(|e| e.role == Role::Incumbent)
            .and_then(|e| Some((e.index, seated(e)?)));
        Runs {
            rounds: RoundRuns {
                baseline_first: runs_of(baseline, false),
                baseline_control: runs_of(baseline, true),
                incumbent: incumbent.as_ref().map(|(_, runs)| runs.clone()),
                challengers,
            },
            challenger_entries,
            incumbent_entry: incumbent.map(|(index, _)| index),
        }
    }

    /// Whether pass `pass` is void: a baseline run of it voids it in the failure table.
    fn void(&self, pass: usize) -> bool {
        [&self.rounds.baseline_first, &self.rounds.baseline_control]
            .iter()
            .any(|runs| {
                runs.get(pass)
                    .map(|r| paired::run_fate(paired::RunOwner::Baseline, *r))
                    == Some(RunFate::VoidsPass)
            })
    }
}

/// The seat an entry would hold: its patch and miner.
fn leader_of(entry: &Entry) -> Option<Leader> {
    Some(Leader {
        patch: entry.patch?,
        miner: entry.miner.clone()?,
    })
}

/// The last attempt of one run (module doc): its last row, a re-run when another row of
/// the same run precedes it; none is an invalid re-run.
fn last_attempt(rows: &[EntryPass], pass: u32, control: bool) -> RunRecord {
    let mut matching = rows
        .iter()
        .filter(|row| row.pass == pass && row.control == control);
    let attempts = matching.clone().count();
    let Some(last) = matching.next_back() else {
        return RunRecord {
            outcome: RunOutcome::Invalid,
            attempt: Attempt::Rerun,
        };
    };
    let outcome = match last.status {
        PassStatus::Measured => RunOutcome::Measured {
            milli_rps: last.throughput_milli_rps.unwrap_or(0),
        },
        PassStatus::SlaUnmet => RunOutcome::SlaUnmet,
        PassStatus::Crashed => RunOutcome::Crashed,
        PassStatus::Invalid => RunOutcome::Invalid,
        PassStatus::InfraFailed | PassStatus::NotRun => RunOutcome::RunnerFailed,
    };
    RunRecord {
        outcome,
        attempt: if attempts > 1 {
            Attempt::Rerun
        } else {
            Attempt::First
        },
    }
}

/// `passes.order`: the round ran the campaign's `runs` passes, numbered from 0, and each
/// pass's order is the one redrawn from the revealed `passSeed` under the campaign's pass
/// order ([`order_of_pass`]); `passes[i]` as target.
fn check_order(report: &mut VerifyReport, record: &RoundRecord, frozen: &FrozenCampaign) {
    let campaign = &frozen.campaign;
    let passes = record.passes.len();
    let count = same(RECEIPT, "passes.length", passes, campaign.runs as usize);
    let count_ok = report.record(CheckName::PassOrder, Some("passes".to_owned()), count);
    if !count_ok && passes == 0 {
        return;
    }
    let entries = u32::try_from(record.entries.len()).unwrap_or(u32::MAX);
    for (position, pass) in record.passes.iter().enumerate() {
        let target = format!("passes[{position}]");
        let result = match &record.seeds.pass_seed {
            None => Err(recomputed(
                RECEIPT,
                "seeds.passSeed",
                "absent",
                "the seed the pass order is drawn with",
            )),
            Some(seed) => same(
                RECEIPT,
                &format!("{target}.index"),
                pass.index as usize,
                position,
            )
            .and_then(|()| {
                let redrawn = order_of_pass(
                    campaign.effective_pass_order(),
                    &seed.seed,
                    pass.index,
                    entries,
                );
                if pass.order == redrawn {
                    Ok(())
                } else {
                    Err(recomputed(
                        RECEIPT,
                        format!("{target}.order"),
                        format_pass_order(&pass.order),
                        format_pass_order(&redrawn),
                    ))
                }
            }),
        };
        report.record(CheckName::PassOrder, Some(target), result);
    }
}

/// `passes.void`: a pass is void exactly when a baseline run of it (its run or its
/// control) failed; `passes[i]` as target.
fn check_void(report: &mut VerifyReport, record: &RoundRecord, runs: &Runs) {
    for (position, pass) in record.passes.iter().enumerate() {
        let field = format!("passes[{position}].void");
        let result = same(RECEIPT, &field, pass.void, runs.void(position));
        report.record(
            CheckName::PassVoid,
            Some(format!("passes[{position}]")),
            result,
        );
    }
}

/// `paired.ratio`: every row's `pairedRatioPpm` is its throughput over the same pass's
/// first baseline run ([`paired::paired_ratio_ppm`]), present exactly when both were
/// measured (the baseline's own run has none; its control's is the A/A ratio);
/// `entries[i].passes[j]` as target.
fn check_ratios(report: &mut VerifyReport, record: &RoundRecord) {
    let baseline_rows = record
        .entries
        .first()
        .filter(|e| e.role == Role::Baseline)
        .map_or(&[][..], |e| &e.passes);
    for entry in &record.entries {
        for (position, row) in entry.passes.iter().enumerate() {
            let own_run = entry.role == Role::Baseline && !row.control;
            let baseline = measured(
                baseline_rows
                    .iter()
                    .rfind(|b| b.pass == row.pass && !b.control),
            );
            let expected = match (own_run, measured(Some(row)), baseline) {
                (false, Some(t), Some(b)) => paired::paired_ratio_ppm(t, b),
                _ => None,
            };
            let field = format!("entries[{}].passes[{position}].pairedRatioPpm", entry.index);
            let result = same(RECEIPT, &field, row.paired_ratio_ppm, expected);
            report.record(
                CheckName::PairedRatio,
                Some(format!("entries[{}].passes[{position}]", entry.index)),
                result,
            );
        }
    }
}

/// A row's throughput when it was measured and is above 0, milli-requests/s.
fn measured(row: Option<&EntryPass>) -> Option<u64> {
    row.filter(|r| r.status == PassStatus::Measured)
        .and_then(|r| r.throughput_milli_rps)
        .filter(|t| *t > 0)
}

/// The paired score an entry must carry: none for the baseline and for an entry that is
/// not scored; for a scored one, [`paired::paired_score`] of its runs in the counted
/// passes against the first baseline runs of the same passes (`None` when the passes do
/// not score it).
fn expected_score(
    entry: &Entry,
    runs: &Runs,
    settled: Option<&SettledPasses>,
) -> Option<PairedScore> {
    if entry.role == Role::Baseline || entry.status != EntryStatus::Scored {
        return None;
    }
    let settled = settled?;
    let fate = match entry.role {
        Role::Incumbent => settled.incumbent.as_ref()?,
        _ => {
            let position = runs
                .challenger_entries
                .iter()
                .position(|i| *i == entry.index)?;
            settled.challengers.get(position)?
        }
    };
    let EntryFate::Scored(throughputs) = fate else {
        return None;
    };
    paired::paired_score(throughputs, &settled.baseline_first)
}

/// `paired.score` (median, min, max, coverage) and `round.scores` (`scorePpm`: the
/// paired median; 0 for a scored baseline, none for an entry that is not scored) per
/// entry; `entries[i]` as target.
fn check_scores(
    report: &mut VerifyReport,
    record: &RoundRecord,
    runs: &Runs,
    settled: Option<&SettledPasses>,
) {
    for entry in &record.entries {
        let target = format!("entries[{}]", entry.index);
        let expected = expected_score(entry, runs, settled);
        let at = |field: &str| format!("{target}.pairedScore.{field}");
        let result = match (&entry.paired_score, &expected) {
            (Some(claimed), Some(expected)) => same(
                RECEIPT,
                &at("medianPpm"),
                claimed.median_ppm,
                expected.median_ppm,
            )
            .and_then(|()| same(RECEIPT, &at("minPpm"), claimed.min_ppm, expected.min_ppm))
            .and_then(|()| same(RECEIPT, &at("maxPpm"), claimed.max_ppm, expected.max_ppm))
            .and_then(|()| same(RECEIPT, &at("passes"), claimed.passes, expected.passes))
            .and_then(|()| {
                same(
                    RECEIPT,
                    &at("coveragePpm"),
                    claimed.coverage_ppm,
                    expected.coverage_ppm,
                )
            }),
            (claimed, expected) => {
                same(RECEIPT, &format!("{target}.pairedScore"), claimed, expected)
            }
        };
        report.record(CheckName::PairedScore, Some(target.clone()), result);

        let score = match (entry.role, entry.status) {
            (Role::Baseline, EntryStatus::Scored) => Some(0),
            _ => expected.map(|s| s.median_ppm),
        };
        let result = if entry.score_ppm == score {
            Ok(())
        } else {
            Err(recomputed(
                RECEIPT,
                format!("{target}.scorePpm"),
                crate::files::show(entry.score_ppm),
                crate::files::show(score),
            ))
        };
        report.record(CheckName::RoundScores, Some(target), result);
    }
}

/// `noise.spread` (the baseline spread and the A/A spread, basis points, and the bounds
/// they are held to: the campaign's) and `noise.verdict` (the verdict they give, the
/// baseline's first); `noise` as target.
fn check_noise(
    report: &mut VerifyReport,
    record: &RoundRecord,
    runs: &Runs,
    campaign: Option<&FrozenCampaign>,
) {
    let target = Some("noise".to_owned());
    let Some(claimed) = &record.noise else {
        let absent = recomputed(RECEIPT, "noise", "absent", "the round's measured noise");
        report.fail(CheckName::NoiseSpread, target.clone(), absent.clone());
        report.fail(CheckName::NoiseVerdict, target, absent);
        return;
    };
    // Without the campaign, the bounds are the receipt's own (the verdict still follows
    // from them; `inputs.campaign` failing already fails the bundle).
    let (drift_bound_bp, margin_bp) =
        campaign.map_or((claimed.drift_bound_bp, claimed.margin_bp), |frozen| {
            (
                frozen.campaign.drift_bound_bp,
                frozen.campaign.overtake_margin_bp,
            )
        });
    let expected = paired::noise_check(&runs.rounds, drift_bound_bp, margin_bp);
    let spread = same(
        RECEIPT,
        "noise.baselineSpreadBp",
        claimed.baseline_spread_bp,
        expected.baseline_spread_bp,
    )
    .and_then(|()| {
        same(
            RECEIPT,
            "noise.aaSpreadBp",
            claimed.aa_spread_bp,
            expected.aa_spread_bp,
        )
    })
    .and_then(|()| {
        same(
            RECEIPT,
            "noise.driftBoundBp",
            claimed.drift_bound_bp,
            expected.drift_bound_bp,
        )
    })
    .and_then(|()| {
        same(
            RECEIPT,
            "noise.marginBp",
            claimed.margin_bp,
            expected.margin_bp,
        )
    });
    report.record(CheckName::NoiseSpread, target.clone(), spread);
    let verdict = same(RECEIPT, "noise.verdict", claimed.verdict, expected.verdict);
    report.record(CheckName::NoiseVerdict, target, verdict);
}

/// The margin each of `runs`' challengers must clear against the incumbent, recomputed
/// from `campaign` and the challenger's `derivedFrom` (which `entries.review` checks
/// against the bundle's copy of its review record), never from the receipt's claimed
/// `derivedMarginBp` ([`challenger_margin_bp`]).
fn challenger_margins_bp(record: &RoundRecord, runs: &Runs, campaign: &Campaign) -> Vec<u32> {
    let incumbent = crate::review::incumbent_patch(record);
    runs.challenger_entries
        .iter()
        .map(|index| {
            let derived_from = (record.entries.iter())
                .find(|e| e.index == *index)
                .and_then(|e| e.review.as_ref())
                .and_then(|r| r.derived_from.as_deref());
            challenger_margin_bp(campaign, incumbent, derived_from)
        })
        .collect()
}

/// The round as [`paired::decide_paired`] reads it: the passes' runs, a measured run of
/// an entry the round did not score (its correctness outputs or the scorer failed it)
/// read as crashed, so the decision cannot seat it.
fn decision_runs(record: &RoundRecord, runs: &Runs) -> RoundRuns {
    let unscored = |index: u32| {
        record.entries.iter().any(|e| {
            e.index == index && e.role != Role::Baseline && e.status != EntryStatus::Scored
        })
    };
    let crash = |seated: &mut SeatedRuns| {
        for run in &mut seated.runs {
            if matches!(run.outcome, RunOutcome::Measured { .. }) {
                run.outcome = RunOutcome::Crashed;
            }
        }
    };
    let mut rounds = runs.rounds.clone();
    if let (Some(incumbent), Some(index)) = (&mut rounds.incumbent, runs.incumbent_entry)
        && unscored(index)
    {
        crash(incumbent);
    }
    for (challenger, index) in rounds.challengers.iter_mut().zip(&runs.challenger_entries) {
        if unscored(*index) {
            crash(challenger);
        }
    }
    rounds
}

/// What the outcome reads besides the passes, from the receipt: the hardware from its two
/// fingerprints (as `hardware.changed` recomputes it), the scorer's failure as the receipt
/// claims it (the correctness checks judge it; a deadline it ran past is the campaign's
/// correctness deadline), the margin of `campaign`, the incumbent's own infrastructure
/// failure from its entry (an `infraFailure` of its own cause, or the disqualification of
/// a re-measured incumbent), and the rounds in a row its runs failed before this one from
/// `remeasure`, else from a claimed `incumbent_infra_failed` (the chain checks the count),
/// the baseline run without token ids as [`baseline_without_token_ids`] recomputed it,
/// and from v9 the challenger a campaign scoring cost seats on cost, recomputed from the
/// record (`crate::fast_track::recomputed_cost_seat`), never `fastTrack.costSeat`'s claim.
fn outcome_input(
    record: &RoundRecord,
    leader_before: Option<Leader>,
    campaign: &Campaign,
    baseline_without_token_ids: Option<RoundFailure>,
    version: PredicateVersion,
) -> OutcomeInput {
    let outcome = &record.outcome;
    // The scorer's own failure is its word, but the deadline it ran past is the
    // campaign's.
    let scorer_failure = outcome
        .reason
        .as_ref()
        .and_then(TypedOrText::typed)
        .and_then(|reason| match reason {
            RoundFailure::ScorerDeadline { .. } => Some(RoundFailure::ScorerDeadline {
                deadline_s: campaign
                    .correctness
                    .effective_deadline_s(&campaign.rate_search),
            }),
            RoundFailure::ScorerFailed | RoundFailure::ReferencePromptMismatch { .. } => {
                Some(reason.clone())
            }
            _ => None,
        });
    let margin_bp = campaign.overtake_margin_bp;
    let incumbent_infra_failed = record
        .entries
        .iter()
        .find(|e| e.role == Role::Incumbent)
        .is_some_and(|e| match e.status {
            EntryStatus::InfraFailed => !matches!(
                e.infra_failure.as_ref().and_then(TypedOrText::typed),
                Some(EntryInfraFailure::RoundInfraFailed { .. })
            ),
            EntryStatus::Disqualified => matches!(
                e.disqualification.as_ref().map(|d| &d.reason),
                Some(DisqualificationReason::RemeasureInfraFailed { .. })
            ),
            EntryStatus::Scored => false,
        });
    let incumbent_infra_failed_rounds = outcome.remeasure.map_or_else(
        || incumbent_infra_failed_rounds(outcome).saturating_sub(1),
        |remeasure| remeasure.infra_failed_rounds,
    );
    OutcomeInput {
        leader_before,
        margin_bp,
        hardware_changed: record.hardware.at_start != record.hardware.at_end,
        baseline_without_token_ids,
        capability_missing: crate::capability::failure(record),
        scorer_failure,
        incumbent_infra_failed,
        incumbent_infra_failed_rounds,
        practice: record.practice,
        cost_seat: (version >= PredicateVersion::V9)
            .then(|| crate::fast_track::recomputed_cost_seat(record, campaign))
            .flatten(),
    }
}

/// A baseline run without token ids, recomputed from the bundle's files: the first of the
/// baseline's runs, in the order they ran (pass by pass, its run before its control, a
/// re-run after the attempt it replaces), whose probe log holds a run that
/// [`without_token_ids`] finds (every measured request of every probe failed
/// `noTokenIds`), with the log it was read from; never under the campaign's
/// `token_count = "usage"`. A probe log that cannot be read is the error.
fn baseline_without_token_ids(
    logs: &mut ProbeLogs<'_>,
    record: &RoundRecord,
    frozen: &FrozenCampaign,
) -> Result<Option<(RoundFailure, String)>, FailureReason> {
    if frozen.campaign.api_profile().token_count == TokenCount::Usage {
        return Ok(None);
    }
    let Some(baseline) = record.entries.first().filter(|e| e.role == Role::Baseline) else {
        return Ok(None);
    };
    let mut rows: Vec<&EntryPass> = baseline.passes.iter().collect();
    rows.sort_by_key(|row| (row.pass, row.control));
    for row in rows {
        let Some(file) = &row.probe_log else {
            continue;
        };
        let log = logs.get(file)?;
        if let Some(requests) = log
            .runs
            .iter()
            .find_map(|run| without_token_ids(&run.probes))
        {
            let failure = RoundFailure::NoTokenIds {
                pass: row.pass,
                control: row.control,
                requests,
            };
            return Ok(Some((failure, file.clone())));
        }
    }
    Ok(None)
}

/// `Ok` when the receipt's reason `claimed` names the baseline run without token ids that
/// [`baseline_without_token_ids`] recomputed (`found`, with its probe log), or neither
/// does; else a failure naming the log the recomputed run was read from.
fn same_no_token_ids(
    claimed: Option<&RoundFailure>,
    found: Option<&(RoundFailure, String)>,
) -> Result<(), FailureReason> {
    let claims = claimed.filter(|reason| matches!(reason, RoundFailure::NoTokenIds { .. }));
    let show =
        |reason: Option<&RoundFailure>| reason.map_or("none".to_owned(), |r| format!("{r:?}"));
    match found {
        Some((failure, _)) if claimed == Some(failure) => Ok(()),
        None if claims.is_none() => Ok(()),
        Some((failure, file)) => Err(recomputed(
            RECEIPT,
            "outcome.reason",
            show(claimed),
            format!("{failure:?} (from `{file}`)"),
        )),
        None => Err(recomputed(
            RECEIPT,
            "outcome.reason",
            show(claimed),
            "no baseline run without token ids (from the baseline's probe logs)",
        )),
    }
}

/// Every entry as the outcome reads it: its seat and its recomputed paired median.
fn outcome_entries(
    record: &RoundRecord,
    runs: &Runs,
    settled: Option<&SettledPasses>,
) -> Vec<OutcomeEntry> {
    record
        .entries
        .iter()
        .map(|entry| OutcomeEntry {
            index: entry.index,
            role: entry.role,
            leader: leader_of(entry),
            paired_median_ppm: expected_score(entry, runs, settled).map(|s| s.median_ppm),
        })
        .collect()
}

/// `Ok` when the seat `claimed` is `expected`, else a failure naming both as
/// [`format_leader`] writes them.
fn same_seat(
    field: &str,
    claimed: Option<&Leader>,
    expected: Option<&Leader>,
) -> Result<(), crate::FailureReason> {
    if claimed == expected {
        Ok(())
    } else {
        Err(recomputed(
            RECEIPT,
            field,
            format_leader(claimed),
            format_leader(expected),
        ))
    }
}

/// The challengers a round of `version` tested against the margin: from v5 every one
/// (the best that clears it is seated), before only the best by median.
fn seat_choice(version: PredicateVersion) -> paired::SeatChoice {
    if version >= PredicateVersion::V5 {
        paired::SeatChoice::BestQualifying
    } else {
        paired::SeatChoice::BestMedian
    }
}

/// What an entry's run invalid after its re-run does in a round of `version` when both
/// baseline runs of its pass were valid: from v6 it disqualifies the entry (no veto),
/// before it failed the round.
fn invalid_twice(version: PredicateVersion) -> paired::InvalidTwice {
    if version >= PredicateVersion::V6 {
        paired::InvalidTwice::Disqualifies
    } else {
        paired::InvalidTwice::FailsRound
    }
}

/// `status.passes` (v6, no veto): an entry the failure table, read from its pass rows,
/// disqualifies for a run invalid after its re-run in pass `p` with both baseline runs of
/// that pass valid ([`paired::DisqualifyingRun::InvalidTwice`]) is `disqualified` — for
/// `run_invalid_twice` in `p`, or for a reason of its own that outranks it (its outputs,
/// the scorer, a leaked key) — never `infra_failed` and requeued for free; and an entry
/// disqualified `run_invalid_twice` in `p` is one the rows disqualify so;
/// `entries[i].status` as target. Not run when the rows fail the round
/// (`paired.decision` judges that).
fn check_invalid_twice(
    report: &mut VerifyReport,
    record: &RoundRecord,
    runs: &Runs,
    settled: Option<&SettledPasses>,
) {
    let Some(settled) = settled else {
        return;
    };
    let fate_of = |index: u32| -> Option<&EntryFate> {
        if runs.incumbent_entry == Some(index) {
            return settled.incumbent.as_ref();
        }
        let position = runs.challenger_entries.iter().position(|i| *i == index)?;
        settled.challengers.get(position)
    };
    for entry in record.entries.iter().filter(|e| e.role != Role::Baseline) {
        let expected = match fate_of(entry.index) {
            Some(EntryFate::Disqualified {
                pass,
                cause: paired::DisqualifyingRun::InvalidTwice,
            }) => u32::try_from(*pass).ok(),
            _ => None,
        };
        let claimed = match entry.disqualification.as_ref().map(|d| d.reason) {
            Some(DisqualificationReason::RunInvalidTwice { pass }) => Some(pass),
            _ => None,
        };
        if expected.is_none() && claimed.is_none() {
            continue;
        }
        let disqualified = entry.status == EntryStatus::Disqualified;
        let holds = match (expected, claimed) {
            (Some(_), None) => disqualified,
            (expected, claimed) => disqualified && expected == claimed,
        };
        let show = |pass: Option<u32>| {
            pass.map_or("no run_invalid_twice".to_owned(), |p| {
                format!("run_invalid_twice in pass {p}")
            })
        };
        let result = if holds {
            Ok(())
        } else {
            Err(recomputed(
                RECEIPT,
                format!("entries[{}].status", entry.index),
                format!("{} ({})", entry.status.as_str(), show(claimed)),
                format!("disqualified ({}, from its pass rows)", show(expected)),
            ))
        };
        let field = format!("entries[{}].status", entry.index);
        report.record(CheckName::StatusPasses, Some(field), result);
    }
}

/// `paired.decision`: the outcome recomputed by [`round_outcome`] from
/// [`paired::decide_paired`] under the campaign's drift bound and margin and what the
/// receipt holds besides its passes ([`outcome_input`]) — a baseline run without token
/// ids recomputed from its probe logs (`no_token_ids`, compared first, naming the log),
/// the passes' failures (`too_few_passes`, `run_invalid`, `drift`), then the hardware, the scorer and an
/// infra-failed incumbent make it `infra_failed`, an A/A spread beyond the margin
/// `inconclusive` (`noise_above_margin`), all without a seat change; otherwise the seat
/// and the rule that gave it — against `outcome.marginBp`, `status`, `reason`,
/// `leaderBefore`, `leaderAfter`, `changed`, `decision` and `remeasure` (every field of
/// the outcome), and a re-measuring round seats no challenger ([`remeasured_alone`]);
/// `outcome` as target.
fn check_decision(
    report: &mut VerifyReport,
    logs: &mut ProbeLogs<'_>,
    record: &RoundRecord,
    runs: &Runs,
    settled: Option<&SettledPasses>,
    frozen: &FrozenCampaign,
    version: PredicateVersion,
) {
    let campaign = &frozen.campaign;
    let outcome = &record.outcome;
    let decision = paired::decide_paired_with_margins(
        &decision_runs(record, runs),
        campaign.drift_bound_bp,
        campaign.overtake_margin_bp,
        &challenger_margins_bp(record, runs, campaign),
        seat_choice(version),
        invalid_twice(version),
    );
    let target = Some("outcome".to_owned());
    let without_ids = match baseline_without_token_ids(logs, record, frozen) {
        Ok(found) => found,
        Err(reason) => {
            report.fail(CheckName::PairedDecision, target, reason);
            return;
        }
    };
    let leader_before = runs.rounds.incumbent.as_ref().map(|s| s.leader.clone());
    let input = outcome_input(
        record,
        leader_before,
        campaign,
        without_ids.as_ref().map(|(failure, _)| failure.clone()),
        version,
    );
    let expected = round_outcome(&decision, &outcome_entries(record, runs, settled), &input);
    let claimed_reason = outcome.reason.as_ref().and_then(TypedOrText::typed);
    let result = same(
        RECEIPT,
        "outcome.marginBp",
        outcome.margin_bp,
        campaign.overtake_margin_bp,
    )
    .and_then(|()| same_no_token_ids(claimed_reason, without_ids.as_ref()))
    .and_then(|()| same(RECEIPT, "outcome.status", outcome.status, expected.status))
    .and_then(|()| {
        same(
            RECEIPT,
            "outcome.reason",
            claimed_reason,
            expected.reason.as_ref().and_then(TypedOrText::typed),
        )
    })
    .and_then(|()| {
        same_seat(
            "outcome.leaderBefore",
            outcome.leader_before.as_ref(),
            expected.leader_before.as_ref(),
        )
    })
    .and_then(|()| {
        same_seat(
            "outcome.leaderAfter",
            outcome.leader_after.as_ref(),
            expected.leader_after.as_ref(),
        )
    })
    .and_then(|()| {
        same(
            RECEIPT,
            "outcome.changed",
            outcome.changed,
            expected.changed,
        )
    })
    .and_then(|()| {
        same(
            RECEIPT,
            "outcome.decision",
            outcome.decision.typed(),
            expected.decision.typed(),
        )
    })
    .and_then(|()| {
        same(
            RECEIPT,
            "outcome.remeasure",
            outcome.remeasure.map(|r| r.infra_failed_rounds),
            expected.remeasure.map(|r| r.infra_failed_rounds),
        )
    })
    .and_then(|()| remeasured_alone(record));
    report.record(CheckName::PairedDecision, target, result);
}

/// The outcome the paired decision rule of the current version
/// ([`paired::SeatChoice::BestQualifying`], [`paired::InvalidTwice::Disqualifies`]) gives `record`'s passes under `frozen`'s
/// drift bound and margin: what `paired.decision` compares a receipt's outcome with
/// ([`round_outcome`] over [`paired::decide_paired`] and the rest of the record, the
/// baseline's probe logs in `dir` read for a run without token ids). `referee verify
/// --rerun` decides a re-run's passes with the original round's roles so.
///
/// Errors: the reason a baseline probe log of `dir` cannot be read.
pub fn recomputed_outcome(
    dir: &Path,
    record: &RoundRecord,
    frozen: &FrozenCampaign,
) -> Result<receipts::model::Outcome, FailureReason> {
    let campaign = &frozen.campaign;
    let runs = Runs::of(record);
    let current = PredicateVersion::V9;
    let settled = paired::settle_passes(&runs.rounds, invalid_twice(current));
    let decision = paired::decide_paired_with_margins(
        &decision_runs(record, &runs),
        campaign.drift_bound_bp,
        campaign.overtake_margin_bp,
        &challenger_margins_bp(record, &runs, campaign),
        seat_choice(current),
        invalid_twice(current),
    );
    let without_ids = baseline_without_token_ids(&mut ProbeLogs::new(dir), record, frozen)?;
    let leader_before = runs.rounds.incumbent.as_ref().map(|s| s.leader.clone());
    let input = outcome_input(
        record,
        leader_before,
        campaign,
        without_ids.map(|(failure, _)| failure),
        current,
    );
    let entries = outcome_entries(record, &runs, settled.as_ref().ok());
    Ok(round_outcome(&decision, &entries, &input))
}

/// A round that re-measures its incumbent alone (`outcome.remeasure`) seats only the
/// baseline and the incumbent (content/leader-rule.md): a challenger among its entries is
/// a failure naming it.
fn remeasured_alone(record: &RoundRecord) -> Result<(), FailureReason> {
    match record.entries.iter().find(|e| e.role == Role::Challenger) {
        Some(challenger) if record.outcome.remeasure.is_some() => Err(recomputed(
            RECEIPT,
            format!("entries[{}].role", challenger.index),
            "challenger",
            "no challenger: outcome.remeasure seats only the baseline and the incumbent",
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(pass: u32, control: bool, status: PassStatus, t: Option<u64>) -> EntryPass {
        EntryPass {
            pass,
            control,
            status,
            throughput_milli_rps: t,
            paired_ratio_ppm: None,
            probe_log: None,
            engine_log: None,
            host_load: None,
            gpus: Vec::new(),
            telemetry: None,
        }
    }

    #[test]
    fn a_run_with_an_earlier_row_is_its_re_run() {
        let rows = [
            row(0, false, PassStatus::Invalid, None),
            row(0, false, PassStatus::Measured, Some(9_000)),
            row(1, false, PassStatus::Invalid, None),
            row(0, true, PassStatus::Crashed, None),
        ];
        assert_eq!(
            last_attempt(&rows, 0, false),
            RunRecord {
                outcome: RunOutcome::Measured { milli_rps: 9_000 },
                attempt: Attempt::Rerun
            }
        );
        assert_eq!(
            last_attempt(&rows, 1, false),
            RunRecord {
                outcome: RunOutcome::Invalid,
                attempt: Attempt::First
            }
        );
        assert_eq!(
            last_attempt(&rows, 0, true),
            RunRecord {
                outcome: RunOutcome::Crashed,
                attempt: Attempt::First
            }
        );
        assert_eq!(
            last_attempt(&rows, 2, false),
            RunRecord {
                outcome: RunOutcome::Invalid,
                attempt: Attempt::Rerun
            }
        );
    }
}
