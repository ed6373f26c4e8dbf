//! Every measurement tied to the entry it is credited to (v5; content/verifying.md,
//! Measurements bound to their entry): a pass row that measured names its probe log, and
//! the log names the run it measured — round, entry, patch, engine config, pass and
//! control flag — which must be the row's (`probes.entry`); an entry's run summaries are
//! its pass rows' (`runs.passes`). Without them one entry's genuine logs could be moved
//! onto another entry's rows, its scores and outcome recomputed, and every other check
//! would pass.

use crate::files::{ProbeLogs, recomputed, same};
use crate::{CheckName, FailureReason, PredicateVersion, VerifyReport};
use receipts::model::{Entry, EntryPass, MeasuredFor, PassStatus, RoundRecord};

/// The predicate file, as failure messages name it.
const RECEIPT: &str = "receipt.dsse.json";

/// Runs `probes.entry` on every pass row and `runs.passes` on every entry of `record`
/// whose probe logs `logs` reads; both `not applicable` before v5.
pub(crate) fn check_binding(
    report: &mut VerifyReport,
    logs: &mut ProbeLogs<'_>,
    record: &RoundRecord,
    version: PredicateVersion,
) {
    if version < PredicateVersion::V5 {
        report.not_applicable(CheckName::ProbeLogEntry, None, version.name());
        report.not_applicable(CheckName::RunsPasses, None, version.name());
        return;
    }
    for entry in &record.entries {
        for (j, row) in entry.passes.iter().enumerate() {
            let at = format!("entries[{}].passes[{j}]", entry.index);
            let result = row_bound(logs, record.round, entry, row, &at);
            report.record(CheckName::ProbeLogEntry, Some(at), result);
        }
        let at = format!("entries[{}]", entry.index);
        let result = runs_are_rows(entry, &at);
        report.record(CheckName::RunsPasses, Some(at), result);
    }
}

/// One pass row `at`: a row that measured (`measured`, `sla_unmet`, `invalid`) names a
/// probe log, and a log it names was measured for this row's run.
fn row_bound(
    logs: &mut ProbeLogs<'_>,
    round: u64,
    entry: &Entry,
    row: &EntryPass,
    at: &str,
) -> Result<(), FailureReason> {
    let measured = matches!(
        row.status,
        PassStatus::Measured | PassStatus::SlaUnmet | PassStatus::Invalid
    );
    let Some(file) = &row.probe_log else {
        return if measured {
            Err(recomputed(
                RECEIPT,
                format!("{at}.probeLog"),
                "none",
                format!("the probe log a `{:?}` run wrote", row.status),
            ))
        } else {
            Ok(())
        };
    };
    let log = logs.get(file)?;
    let expected = MeasuredFor {
        round,
        entry: entry.index,
        patch: entry.patch,
        engine_config_sha256: entry.engine.config_sha256,
        pass: row.pass,
        control: row.control,
    };
    let Some(found) = &log.measured_for else {
        return Err(recomputed(
            file,
            "measuredFor",
            "absent",
            describe(&expected),
        ));
    };
    if *found == expected {
        Ok(())
    } else {
        Err(recomputed(
            file,
            "measuredFor",
            describe(found),
            format!("{} (the row `{at}` citing it)", describe(&expected)),
        ))
    }
}

/// `correctness.entry` of a correctness or timed-run sample file `file` that `entry` of
/// round `round` cites and that records `found`: the file names that entry — its round,
/// index, patch and engine config — and the pass of one of its own runs (never a
/// control). Required from round/v6 (`version`); a file of an older round without it
/// passes.
pub(crate) fn file_bound(
    file: &str,
    found: Option<&MeasuredFor>,
    round: u64,
    entry: &Entry,
    version: PredicateVersion,
) -> Result<(), FailureReason> {
    let Some(found) = found else {
        if version >= PredicateVersion::V6 {
            return Err(recomputed(
                file,
                "measuredFor",
                "absent",
                format!(
                    "the run of `entries[{}]` it judged (required from round/v6)",
                    entry.index
                ),
            ));
        }
        return Ok(());
    };
    let own_pass = entry
        .passes
        .iter()
        .find(|p| !p.control && p.pass == found.pass);
    let expected = MeasuredFor {
        round,
        entry: entry.index,
        patch: entry.patch,
        engine_config_sha256: entry.engine.config_sha256,
        pass: own_pass.map_or(found.pass, |p| p.pass),
        control: false,
    };
    if *found == expected && own_pass.is_some() {
        Ok(())
    } else {
        Err(recomputed(
            file,
            "measuredFor",
            describe(found),
            format!(
                "{} (the entry `entries[{}]` citing it, in a pass of its own)",
                describe(&expected),
                entry.index
            ),
        ))
    }
}

/// A run's identity in words: `round 1 entry 2 patch <sha256> config <sha256> pass 0`
/// (`control` appended for the A/A control).
fn describe(m: &MeasuredFor) -> String {
    let patch = m.patch.map_or_else(|| "none".to_owned(), |p| p.to_string());
    let control = if m.control { " control" } else { "" };
    format!(
        "round {} entry {} patch {patch} config {} pass {}{control}",
        m.round, m.entry, m.engine_config_sha256, m.pass
    )
}

/// An entry's run summaries (`runs[]`, what its median throughput is read from) are one
/// of its own non-control pass rows': each names that row's probe log and carries its
/// host load; a run summary naming a log no such row names fails.
fn runs_are_rows(entry: &Entry, at: &str) -> Result<(), FailureReason> {
    for (r, run) in entry.runs.iter().enumerate() {
        let field = format!("{at}.runs[{r}]");
        let row = entry
            .passes
            .iter()
            .find(|p| !p.control && p.probe_log.as_deref() == Some(run.probe_log.as_str()));
        let Some(row) = row else {
            return Err(recomputed(
                RECEIPT,
                format!("{field}.probeLog"),
                &run.probe_log,
                format!("one of {}", row_logs(entry)),
            ));
        };
        same(
            RECEIPT,
            &format!("{field}.hostLoad"),
            run.host_load.as_ref(),
            row.host_load.as_ref(),
        )?;
    }
    Ok(())
}

/// The probe logs an entry's non-control rows name, for a failure message.
fn row_logs(entry: &Entry) -> String {
    let logs: Vec<&str> = entry
        .passes
        .iter()
        .filter(|p| !p.control)
        .filter_map(|p| p.probe_log.as_deref())
        .collect();
    if logs.is_empty() {
        "none".to_owned()
    } else {
        logs.join(", ")
    }
}
