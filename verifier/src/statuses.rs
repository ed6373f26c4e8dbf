//! Statuses against what they stand on (content/verifying.md, Decision): a scored entry
//! has a throughput and, unless it is the baseline (the reference), a passed correctness
//! verdict; a disqualified entry has its typed reason (a `correctness_failed` one a
//! failed verdict, an `engine_oom_killed` one a Docker engine at that memory limit, a
//! `correctness_deadline` one the campaign's correctness deadline, a
//! `remeasure_infra_failed` one the outcome's re-measure count); an `infra_failed`
//! entry has its reason (a `round_infra_failed` one the outcome's own failure, `not_run`
//! one that never ran, a run's cause one that ran), and so has an `infra_failed` round.
//! v1 wrote no entry infrastructure reason: that part is not applicable there.

use crate::{CheckName, FailureReason, VerifyReport};
use receipts::model::{
    BackendKind, Campaign, CpuPinning, Disqualification, DisqualificationReason, Entry,
    EntryInfraFailure, EntryPass, EntryStatus, Outcome, PassStatus, Role, RoundRecord, RoundStatus,
    TypedOrText,
};

use crate::PredicateVersion;

/// `status.consistent`: once per entry, then once for the round; with `campaign` (when
/// `inputs.campaign` passed) a `correctness_deadline` is held to the campaign's deadline.
pub(crate) fn check_statuses(
    report: &mut VerifyReport,
    record: &RoundRecord,
    campaign: Option<&Campaign>,
    version: PredicateVersion,
) {
    // The deadline the runner cut an entry's correctness outputs off at.
    let correctness_deadline_s =
        campaign.map(|c| c.correctness.effective_deadline_s(&c.rate_search));
    for entry in &record.entries {
        let field = format!("entries[{}].status", entry.index);
        let problem = match entry.status {
            EntryStatus::Scored => {
                let correctness = entry.correctness.as_ref();
                if entry.throughput_milli_rps.is_none() {
                    Some("it has no throughput".to_owned())
                } else if entry.role != Role::Baseline && !correctness.is_some_and(|c| c.passed) {
                    Some(match correctness {
                        None => "it has no correctness verdict".to_owned(),
                        Some(_) => "its correctness verdict failed".to_owned(),
                    })
                } else if entry.disqualification.is_some() {
                    Some("it carries a disqualification".to_owned())
                } else {
                    None
                }
            }
            EntryStatus::Disqualified => match &entry.disqualification {
                None => Some("it has no disqualification reason".to_owned()),
                Some(d)
                    if d.reason == DisqualificationReason::CorrectnessFailed
                        && entry.correctness.as_ref().is_none_or(|c| c.passed) =>
                {
                    Some(
                        "its reason is correctness_failed and its correctness verdict is not a \
                         failed one"
                            .to_owned(),
                    )
                }
                Some(Disqualification {
                    reason: DisqualificationReason::EngineOomKilled { limit_mb, .. },
                    ..
                }) if entry.engine.backend != BackendKind::Docker
                    || entry.engine.memory_limit_mb != Some(*limit_mb) =>
                {
                    Some(format!(
                        "its reason is engine_oom_killed at a limit of {limit_mb} MiB, but its \
                         engine is a {} one with a memory limit of {} (a kill is read from a \
                         Docker container's state, at the container's limit)",
                        entry.engine.backend.as_str(),
                        entry
                            .engine
                            .memory_limit_mb
                            .map_or_else(|| "none".to_owned(), |mb| format!("{mb} MiB"))
                    ))
                }
                Some(Disqualification {
                    reason:
                        DisqualificationReason::RemeasureInfraFailed {
                            infra_failed_rounds,
                        },
                    ..
                }) if record.outcome.remeasure.map(|r| r.infra_failed_rounds)
                    != Some(*infra_failed_rounds) =>
                {
                    Some(format!(
                        "its reason is remeasure_infra_failed after {infra_failed_rounds} rounds, \
                         but the outcome's re-measure counts {}",
                        record.outcome.remeasure.map_or_else(
                            || "none".to_owned(),
                            |r| r.infra_failed_rounds.to_string()
                        )
                    ))
                }
                Some(Disqualification {
                    reason: DisqualificationReason::CorrectnessDeadline { deadline_s },
                    ..
                }) if correctness_deadline_s.is_some_and(|campaign| campaign != *deadline_s) => {
                    Some(format!(
                        "its reason is correctness_deadline after {deadline_s} s, but the \
                         campaign's correctness deadline is {} s",
                        correctness_deadline_s.unwrap_or_default()
                    ))
                }
                Some(_) => None,
            },
            EntryStatus::InfraFailed if version == PredicateVersion::V1 => {
                report.not_applicable(CheckName::StatusConsistent, Some(field), version.name());
                continue;
            }
            EntryStatus::InfraFailed => match entry.infra_failure.as_ref() {
                None => Some("it has no infrastructure failure reason".to_owned()),
                Some(reason) => round_failure_problem(reason.typed(), &record.outcome)
                    .or_else(|| runs_problem(entry, reason.typed())),
            },
        };
        let status = entry.status.as_str();
        let result = match problem {
            None => Ok(()),
            Some(problem) => Err(FailureReason::StatusInconsistent {
                field: field.clone(),
                status: status.to_owned(),
                problem,
            }),
        };
        report.record(CheckName::StatusConsistent, Some(field), result);
    }
    let field = "outcome.status".to_owned();
    let result = match (record.outcome.status, &record.outcome.reason) {
        (RoundStatus::InfraFailed, None) => Err(FailureReason::StatusInconsistent {
            field: field.clone(),
            status: RoundStatus::InfraFailed.as_str().to_owned(),
            problem: "it has no reason".to_owned(),
        }),
        _ => Ok(()),
    };
    report.record(CheckName::StatusConsistent, Some(field), result);
    check_pass_statuses(report, record, version);
}

/// What is wrong with an entry's `round_infra_failed` reason: the round it names failed
/// otherwise than the receipt's outcome says (the runner copies the outcome's typed
/// reason onto every entry it leaves `infra_failed` for the round), or the round did not
/// fail; `None` for any other reason.
fn round_failure_problem(reason: Option<&EntryInfraFailure>, outcome: &Outcome) -> Option<String> {
    let Some(EntryInfraFailure::RoundInfraFailed { failure }) = reason else {
        return None;
    };
    let round = outcome.reason.as_ref().and_then(TypedOrText::typed);
    if outcome.status == RoundStatus::Complete {
        Some(format!(
            "its reason is the round's failure ({failure}), but the round is complete"
        ))
    } else if round != Some(failure) {
        Some(format!(
            "its reason is the round's failure ({failure}), but the outcome's reason is {}",
            round.map_or_else(|| "none".to_owned(), ToString::to_string)
        ))
    } else {
        None
    }
}

/// What is wrong with an `infra_failed` reason against the entry's runs: `not_run` for
/// an entry that ran, or a cause only a run has — the client lagging, CPU steal, the
/// scorer failing or giving no verdict on its outputs — for an entry that never ran;
/// `None` otherwise (the runner's own failures and the round's need no run). An entry
/// ran when it has a run summary or a pass row other than `not_run` (a run the runner
/// or the client failed leaves a row but no summary).
fn runs_problem(entry: &Entry, reason: Option<&EntryInfraFailure>) -> Option<String> {
    let rows = (entry.passes.iter())
        .filter(|p| p.status != PassStatus::NotRun)
        .count();
    let ran = rows > 0 || !entry.runs.is_empty();
    match reason? {
        EntryInfraFailure::NotRun if ran => Some(format!(
            "its reason is not_run, but it has {} run summaries and {rows} pass rows that ran",
            entry.runs.len()
        )),
        reason @ (EntryInfraFailure::ClientLagged
        | EntryInfraFailure::CpuSteal { .. }
        | EntryInfraFailure::Telemetry { .. }
        | EntryInfraFailure::ScorerFailed { .. }
        | EntryInfraFailure::NoVerdict)
            if !ran =>
        {
            Some(format!(
                "its reason is a run's ({reason}), but it never ran"
            ))
        }
        _ => None,
    }
}

/// `status.passes` (v5): a disqualification that a run's end gives — the engine died
/// (`engine_died_before_healthy`, `engine_crashed`, `engine_oom_killed`) or met no SLA
/// (`sla_unmet`) — stands on a pass row of the entry that ended so (`crashed`,
/// `sla_unmet`); from v6 a `left_cpu_set` one on a `crashed` row of the pass it names,
/// with a CPU outside the engine's recorded set (`isolation.engineCpus`, pinned); once
/// per entry disqualified for one of them, `entries[i].status` as target. A fastest entry
/// cannot be marked crashed while its rows say it measured.
fn check_pass_statuses(report: &mut VerifyReport, record: &RoundRecord, version: PredicateVersion) {
    if version < PredicateVersion::V5 {
        report.not_applicable(CheckName::StatusPasses, None, version.name());
        return;
    }
    for entry in &record.entries {
        let Some((reason, row, pass)) = run_ending(entry) else {
            continue;
        };
        let field = format!("entries[{}].status", entry.index);
        let on_row = |p: &&EntryPass| p.status == row && pass.is_none_or(|pass| p.pass == pass);
        let result = if let Some(problem) = left_cpu_problem(entry) {
            Err(FailureReason::StatusInconsistent {
                field: field.clone(),
                status: format!("{} ({reason})", entry.status.as_str()),
                problem,
            })
        } else if entry.passes.iter().any(|p| on_row(&p)) {
            Ok(())
        } else {
            let rows: Vec<&str> = entry.passes.iter().map(|p| pass_word(p.status)).collect();
            let in_pass = pass.map_or_else(String::new, |p| format!(" in pass {p}"));
            Err(FailureReason::StatusInconsistent {
                field: field.clone(),
                status: format!("{} ({reason})", entry.status.as_str()),
                problem: format!(
                    "no pass row of the entry{in_pass} is `{}` (its rows: {})",
                    pass_word(row),
                    if rows.is_empty() {
                        "none".to_owned()
                    } else {
                        rows.join(", ")
                    }
                ),
            })
        };
        report.record(CheckName::StatusPasses, Some(field), result);
    }
}

/// The disqualification of `entry` that one of its runs' ends gives, with the pass status
/// that run must have and, when the reason names it, its pass; `None` for any other
/// status or reason.
fn run_ending(entry: &Entry) -> Option<(&'static str, PassStatus, Option<u32>)> {
    let reason = entry.disqualification.as_ref()?.reason;
    let (row, pass) = match reason {
        DisqualificationReason::EngineDiedBeforeHealthy
        | DisqualificationReason::EngineCrashed
        | DisqualificationReason::EngineOomKilled { .. } => (PassStatus::Crashed, None),
        DisqualificationReason::SlaUnmet => (PassStatus::SlaUnmet, None),
        DisqualificationReason::LeftCpuSet { pass, .. } => (PassStatus::Crashed, Some(pass)),
        _ => return None,
    };
    (entry.status == EntryStatus::Disqualified).then_some((reason.as_str(), row, pass))
}

/// What is wrong with a `left_cpu_set` disqualification's CPU: the engine was not pinned
/// (it had no set to leave), or the CPU it names is in its own set; `None` for any other
/// reason, and for a CPU outside the set.
fn left_cpu_problem(entry: &Entry) -> Option<String> {
    let Some(DisqualificationReason::LeftCpuSet { cpu, .. }) =
        entry.disqualification.as_ref().map(|d| d.reason)
    else {
        return None;
    };
    match &entry.engine.isolation {
        Some(isolation) if isolation.pinning == CpuPinning::SchedAffinity => isolation
            .engine_cpus
            .contains(&cpu)
            .then(|| format!("CPU {cpu} is in the engine's own set (isolation.engineCpus)")),
        _ => Some("its engine records no pinned CPU set to leave (isolation)".to_owned()),
    }
}

/// A pass status as the receipt writes it.
fn pass_word(status: PassStatus) -> &'static str {
    match status {
        PassStatus::Measured => "measured",
        PassStatus::SlaUnmet => "sla_unmet",
        PassStatus::Crashed => "crashed",
        PassStatus::Invalid => "invalid",
        PassStatus::InfraFailed => "infra_failed",
        PassStatus::NotRun => "not_run",
    }
}
