//! Statuses against what they stand on (content/verifying.md, Decision): a scored entry
//! has a throughput and, unless it is the baseline (the reference), a passed correctness
//! verdict; a disqualified entry has its typed reason (a `correctness_failed` one a
//! failed verdict, an `engine_oom_killed` one a Docker engine at that memory limit); an `infra_failed` entry has its reason, and so has an `infra_failed`
//! round. v1 wrote no entry infrastructure reason: that part is not applicable there.

use crate::{CheckName, FailureReason, VerifyReport};
use receipts::model::{
    BackendKind, Disqualification, DisqualificationReason, EntryStatus, Role, RoundRecord,
    RoundStatus,
};

use crate::PredicateVersion;

/// `status.consistent`: once per entry, then once for the round.
pub(crate) fn check_statuses(
    report: &mut VerifyReport,
    record: &RoundRecord,
    version: PredicateVersion,
) {
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
                Some(_) => None,
            },
            EntryStatus::InfraFailed if version == PredicateVersion::V1 => {
                report.not_applicable(CheckName::StatusConsistent, Some(field), version.name());
                continue;
            }
            EntryStatus::InfraFailed => entry
                .infra_failure
                .is_none()
                .then(|| "it has no infrastructure failure reason".to_owned()),
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
}
