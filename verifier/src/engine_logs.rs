//! `logs.budget` and `logs.tail` (content/threat-model.md, Bounded output): from v6 a
//! round records the output budgets it ran under (`limits`, the campaign's `[limits]`),
//! every engine log it names is no longer than that budget allows
//! (`rules::engine_log::max_file_bytes`, which also bounds what this check reads), and a
//! disqualification's log tail is either empty or exactly the tail of the entry's named
//! engine log by `rules::log_tail`, the function the runner sealed it with: a receipt
//! cannot quote an engine as printing what its log does not hold.

use std::collections::BTreeSet;
use std::path::Path;

use receipts::model::{FrozenCampaign, Limits, RoundRecord};
use receipts::rules::engine_log::max_file_bytes;
use receipts::rules::log_tail::{LOG_TAIL_READ_BYTES, log_tail_of_end};

use crate::files::{artifact_len, read_tail};
use crate::{CheckName, FailureReason, PredicateVersion, VerifyReport};

/// Runs `logs.budget` (target `limits`, then each engine log named) against `campaign`
/// (when `inputs.campaign` passed; else not run) and `logs.tail` (one check per entry
/// with a non-empty log tail, `entries[i]` as target) on the bundle in `dir`. Before v6
/// neither runs: those records have no `limits`, and their tails were not always taken
/// from the sealed log.
pub(crate) fn check_engine_logs(
    report: &mut VerifyReport,
    dir: &Path,
    record: &RoundRecord,
    campaign: Option<&FrozenCampaign>,
    version: PredicateVersion,
) {
    if version < PredicateVersion::V6 {
        return;
    }
    match campaign {
        Some(frozen) => check_budget(report, dir, record, frozen),
        None => report.not_run(&[CheckName::LogsBudget], CheckName::InputsCampaign),
    }
    for entry in &record.entries {
        let Some(dq) = &entry.disqualification else {
            continue;
        };
        if dq.log_tail.is_empty() {
            continue;
        }
        let target = Some(format!("entries[{}]", entry.index));
        let result = match &entry.engine_log {
            None => Err(FailureReason::LogTail {
                entry: entry.index,
                message: "it has a log tail but names no engine log".into(),
            }),
            Some(log) => read_tail(dir, log, LOG_TAIL_READ_BYTES).and_then(|end| {
                if log_tail_of_end(&end) == dq.log_tail {
                    Ok(())
                } else {
                    Err(FailureReason::LogTail {
                        entry: entry.index,
                        message: format!("it is not the tail of `{log}`"),
                    })
                }
            }),
        };
        report.record(CheckName::LogsTail, target, result);
    }
}

/// `logs.budget`: the receipt's `limits` are the campaign's, and no engine log it names
/// is longer than they allow.
fn check_budget(
    report: &mut VerifyReport,
    dir: &Path,
    record: &RoundRecord,
    frozen: &FrozenCampaign,
) {
    let expected = frozen.campaign.effective_limits();
    let recorded = match record.limits {
        None => Err("missing (required from v6)".to_owned()),
        Some(limits) if limits != expected => Err(format!(
            "{}, but the campaign's are {}",
            as_toml(&limits),
            as_toml(&expected)
        )),
        Some(_) => Ok(()),
    };
    report.record(
        CheckName::LogsBudget,
        Some("limits".into()),
        recorded.map_err(|message| FailureReason::LimitsRecord {
            field: "limits".into(),
            message,
        }),
    );
    let most = max_file_bytes(expected.engine_log_bytes);
    let logs: BTreeSet<&str> = (record.entries.iter())
        .flat_map(|e| {
            (e.engine_log.iter())
                .chain(e.passes.iter().filter_map(|p| p.engine_log.as_ref()))
                .map(String::as_str)
        })
        .collect();
    for log in logs {
        let result = artifact_len(dir, log).and_then(|len| {
            if len <= most {
                Ok(())
            } else {
                Err(FailureReason::LimitsRecord {
                    field: log.to_owned(),
                    message: format!(
                        "{len} bytes, more than the {most} an engine log budget of {} allows",
                        expected.engine_log_bytes
                    ),
                })
            }
        });
        report.record(CheckName::LogsBudget, Some(log.to_owned()), result);
    }
}

/// `limits` as the campaign's `[limits]` table writes them, on one line.
fn as_toml(limits: &Limits) -> String {
    format!(
        "engine_log_bytes = {}, response_bytes = {}, response_events = {}",
        limits.engine_log_bytes, limits.response_bytes, limits.response_events
    )
}
