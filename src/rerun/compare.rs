//! The comparisons of a re-run with its original (content/verifying.md, Re-running a
//! round), with the rules of `receipts::rules::rerun`: per entry, where the re-run
//! broke (FAIL), the engine config the recorded diff makes, the status, the correctness
//! verdict and each item's distance, and the paired score within the speed tolerance;
//! for the round, the request-sequence digest and the status and seat recomputed from the
//! re-run's passes with the original's roles, a seat that moved only noisy when the
//! re-run's own medians contradict the original's decision by no more than the
//! tolerance.

use std::path::Path;

use receipts::model::{
    BackendKind, Comparison, CorrectnessItems, DisqualificationReason, Entry, EntryStatus, Finding,
    FindingKind, FrozenCampaign, Leader, PassStatus, RerunEntry, RerunMeasured, RerunVerdict, Role,
    RoundRecord, RoundStatus, SeatRule, Severity, SpeedTolerance, TypedOrText,
};
use receipts::rules::paired::paired_score;
use receipts::rules::rerun::{
    item_tolerance_micro_nats, item_within, seat_contradiction_ppm, seat_severity, speed_tolerance,
    speedup_within, tolerance_ppm, verdict_of,
};

use super::plan::Plan;

/// The original round and its re-run, each with its bundle directory.
pub(crate) struct Sides<'a> {
    /// The original's record.
    pub original: &'a RoundRecord,
    /// The original's bundle.
    pub original_dir: &'a Path,
    /// The re-run's round record.
    pub rerun: &'a RoundRecord,
    /// The re-run's round bundle.
    pub rerun_dir: &'a Path,
    /// The campaign both ran under.
    pub frozen: &'a FrozenCampaign,
}

impl Sides<'_> {
    /// The speed tolerance from both rounds' A/A spreads, capped at the campaign's
    /// margin ([`receipts::rules::rerun::speed_tolerance`]).
    pub(crate) fn tolerance(&self) -> SpeedTolerance {
        let aa = |record: &RoundRecord| record.noise.as_ref().and_then(|n| n.aa_spread_bp);
        speed_tolerance(
            aa(self.original),
            aa(self.rerun),
            self.frozen.campaign.drift_bound_bp,
            self.frozen.campaign.overtake_margin_bp,
        )
    }

    /// Why the re-run's own round is `infra_failed` where the original's is not (its
    /// baseline could not be measured, its machine drifted): then no measured number of
    /// it can be compared.
    fn round_failed(&self) -> Option<String> {
        let failed = |r: &RoundRecord| r.outcome.status == RoundStatus::InfraFailed;
        (failed(self.rerun) && !failed(self.original)).then(|| {
            self.rerun
                .outcome
                .reason
                .as_ref()
                .map_or_else(|| "no reason recorded".to_owned(), ToString::to_string)
        })
    }

    /// The re-run's entry of the original `entry`: the baseline by role, any other by
    /// its patch.
    fn counterpart(&self, entry: &Entry) -> Option<&Entry> {
        self.rerun.entries.iter().find(|e| match entry.role {
            Role::Baseline => e.role == Role::Baseline,
            _ => e.patch.is_some() && e.patch == entry.patch,
        })
    }
}

/// Every entry of the original round, compared with its re-run as `plans` say.
pub(crate) fn compare_entries(
    sides: &Sides<'_>,
    plans: &[Plan],
    tolerance: &SpeedTolerance,
) -> Vec<RerunEntry> {
    let round_failed = sides.round_failed();
    sides
        .original
        .entries
        .iter()
        .zip(plans)
        .map(|(entry, plan)| {
            let counterpart = sides.counterpart(entry);
            let comparison = match (plan, counterpart) {
                (Plan::Skip(why), _) => part(RerunVerdict::Unkwn, why.clone()),
                (Plan::Broke(why), _) => part(RerunVerdict::Fail, why.clone()),
                (Plan::Run, None) => part(
                    RerunVerdict::Fail,
                    "the re-run round did not seat it".to_owned(),
                ),
                (Plan::Run, Some(rerun)) => {
                    let comparison = compare_entry(sides, entry, rerun, tolerance);
                    match &round_failed {
                        Some(why) => unmeasured(comparison, why),
                        None => comparison,
                    }
                }
            };
            let rerun = match plan {
                Plan::Run => counterpart.map(measured),
                _ => None,
            };
            rerun_entry(entry, comparison, rerun)
        })
        .collect()
}

/// Every entry of the original round when the re-run ran no round: not tried (UNKWN),
/// broken before it ran, or — when the round `stopped` — FAIL (the round part says why).
pub(crate) fn not_compared(
    original: &RoundRecord,
    plans: &[Plan],
    stopped: bool,
) -> Vec<RerunEntry> {
    original
        .entries
        .iter()
        .zip(plans)
        .map(|(entry, plan)| {
            let comparison = match (plan, stopped) {
                (Plan::Skip(why), _) => part(RerunVerdict::Unkwn, why.clone()),
                (Plan::Broke(why), _) => part(RerunVerdict::Fail, why.clone()),
                (Plan::Run, true) => part(
                    RerunVerdict::Fail,
                    "not measured: the re-run round stopped (the round says why)".to_owned(),
                ),
                (Plan::Run, false) => part(RerunVerdict::Unkwn, "not run".to_owned()),
            };
            rerun_entry(entry, comparison, None)
        })
        .collect()
}

/// A part that failed or was not tried, with why.
fn part(verdict: RerunVerdict, reason: String) -> Comparison {
    Comparison {
        verdict,
        reason: Some(reason),
        findings: Vec::new(),
    }
}

fn rerun_entry(entry: &Entry, comparison: Comparison, rerun: Option<RerunMeasured>) -> RerunEntry {
    RerunEntry {
        index: entry.index,
        role: entry.role,
        miner: entry.miner.clone(),
        patch: entry.patch,
        original_status: entry.status,
        original_score_ppm: entry.score_ppm,
        comparison,
        rerun,
    }
}

/// What the re-run measured of `entry`, with every file of it (its paths in the re-run's
/// bundle, which the rerun bundle keeps).
fn measured(entry: &Entry) -> RerunMeasured {
    let mut files: Vec<String> = entry.engine_log.iter().cloned().collect();
    files.extend(entry.runs.iter().map(|r| r.probe_log.clone()));
    for pass in &entry.passes {
        files.extend(pass.probe_log.iter().cloned());
        files.extend(pass.engine_log.iter().cloned());
    }
    if let Some(correctness) = &entry.correctness {
        files.push(correctness.items_file.clone());
        files.extend(correctness.load_sample_file.iter().cloned());
    }
    files.sort();
    files.dedup();
    RerunMeasured {
        status: entry.status,
        score_ppm: entry.score_ppm,
        paired_score: entry.paired_score,
        correctness_passed: entry.correctness.as_ref().map(|c| c.passed),
        files,
    }
}

/// One entry against its re-run (module doc).
fn compare_entry(
    sides: &Sides<'_>,
    original: &Entry,
    rerun: &Entry,
    tolerance: &SpeedTolerance,
) -> Comparison {
    if let Some(why) = broke(original, rerun) {
        return part(RerunVerdict::Fail, why);
    }
    if original.status == EntryStatus::InfraFailed {
        return part(
            RerunVerdict::Unkwn,
            format!(
                "nothing to compare: the original entry is infra_failed ({})",
                original
                    .infra_failure
                    .as_ref()
                    .map_or_else(|| "no reason recorded".to_owned(), ToString::to_string)
            ),
        );
    }
    let mut findings = Vec::new();
    let bad = |check| Finding {
        severity: Severity::Bad,
        check,
    };
    if original.engine.config_sha256 != rerun.engine.config_sha256 {
        findings.push(bad(FindingKind::EngineConfig {
            original: original.engine.config_sha256,
            rerun: rerun.engine.config_sha256,
        }));
    }
    let reason = |e: &Entry| {
        e.disqualification
            .as_ref()
            .map(|d| d.reason.as_str().to_owned())
    };
    if original.status != rerun.status || reason(original) != reason(rerun) {
        findings.push(bad(FindingKind::Status {
            original: original.status,
            rerun: rerun.status,
            original_reason: reason(original),
            rerun_reason: reason(rerun),
        }));
    }
    if let (Some(a), Some(b)) = (&original.correctness, &rerun.correctness) {
        if a.passed != b.passed {
            findings.push(bad(FindingKind::Correctness {
                original_passed: a.passed,
                rerun_passed: b.passed,
            }));
        }
        let read =
            |dir: &Path, file: &str| verifier::read_bundle_json::<CorrectnessItems>(dir, file);
        match (
            read(sides.original_dir, &a.items_file),
            read(sides.rerun_dir, &b.items_file),
        ) {
            (Ok(a), Ok(b)) => {
                let exact = original.engine.backend == BackendKind::Builtin
                    && sides.original.tool.cpu_features == sides.rerun.tool.cpu_features;
                let allowed = item_tolerance_micro_nats(exact);
                for item in &a.items {
                    let Some(other) = b.items.iter().find(|i| i.index == item.index) else {
                        continue;
                    };
                    if !item_within(item.distance_micro_nats, other.distance_micro_nats, allowed) {
                        findings.push(bad(FindingKind::ItemDistance {
                            item: item.index,
                            original_micro_nats: item.distance_micro_nats,
                            rerun_micro_nats: other.distance_micro_nats,
                            tolerance_micro_nats: allowed,
                        }));
                    }
                }
            }
            (Err(e), _) | (_, Err(e)) => {
                return part(
                    RerunVerdict::Fail,
                    format!("reading a correctness file: {e}"),
                );
            }
        }
    }
    if original.role != Role::Baseline
        && let (Some(a), Some(b)) = (original.score_ppm, rerun.score_ppm)
        && original.status == EntryStatus::Scored
        && rerun.status == EntryStatus::Scored
    {
        let allowed = tolerance_ppm(tolerance);
        if !speedup_within(a, b, allowed) {
            findings.push(bad(FindingKind::Speedup {
                original_ppm: a,
                rerun_ppm: b,
                tolerance_ppm: allowed,
            }));
        }
    }
    Comparison {
        verdict: verdict_of(&findings),
        reason: None,
        findings,
    }
}

/// An entry's comparison when the re-run's round was `infra_failed` (`why`) and the
/// original's was not: an entry where nothing moved (one that died at start both times)
/// stays as it is; otherwise what does not depend on the re-run's measurements (the
/// engine config, the correctness items) still counts, so a moved one is still BAD, and
/// else the entry is FAIL, its statuses and scores not comparable.
fn unmeasured(comparison: Comparison, why: &str) -> Comparison {
    if matches!(comparison.verdict, RerunVerdict::Fail | RerunVerdict::Unkwn)
        || comparison.findings.is_empty()
    {
        return comparison;
    }
    let exact: Vec<Finding> = comparison
        .findings
        .into_iter()
        .filter(|f| {
            matches!(
                f.check,
                FindingKind::EngineConfig { .. }
                    | FindingKind::Correctness { .. }
                    | FindingKind::ItemDistance { .. }
            )
        })
        .collect();
    if exact.is_empty() {
        return part(
            RerunVerdict::Fail,
            format!("not comparable: the re-run round was infra_failed ({why})"),
        );
    }
    Comparison {
        verdict: verdict_of(&exact),
        reason: None,
        findings: exact,
    }
}

/// Where the re-run broke for `rerun` when the original did not: the runner could not
/// run it (`infra_failed`), or its engine would not start or crashed — the pass and the
/// engine's own words.
fn broke(original: &Entry, rerun: &Entry) -> Option<String> {
    if rerun.status == EntryStatus::InfraFailed {
        let same = original.status == EntryStatus::InfraFailed
            && original.infra_failure.as_ref().and_then(TypedOrText::typed)
                == rerun.infra_failure.as_ref().and_then(TypedOrText::typed);
        return (!same).then(|| {
            format!(
                "the re-run could not measure it: {}",
                rerun
                    .infra_failure
                    .as_ref()
                    .map_or_else(|| "no reason recorded".to_owned(), ToString::to_string)
            )
        });
    }
    let dq = rerun.disqualification.as_ref()?;
    let phase = match dq.reason {
        DisqualificationReason::EngineDiedBeforeHealthy => "starting the engine",
        DisqualificationReason::EngineCrashed => "running SLA",
        _ => return None,
    };
    let same = original
        .disqualification
        .as_ref()
        .is_some_and(|o| o.reason.as_str() == dq.reason.as_str());
    if same {
        return None;
    }
    let pass = rerun
        .passes
        .iter()
        .find(|p| p.status == PassStatus::Crashed)
        .map_or_else(String::new, |p| {
            format!(
                "pass {}{}, ",
                p.pass + 1,
                if p.control { " (A/A control)" } else { "" }
            )
        });
    Some(format!("{pass}{phase}: {}", dq.detail))
}

/// The round against its re-run: the request-sequence digest exactly; then, when every
/// entry of the original was re-run, the status and the seat recomputed from the
/// re-run's passes with the original's roles.
pub(crate) fn compare_round(
    sides: &Sides<'_>,
    entries: &[RerunEntry],
    tolerance: &SpeedTolerance,
) -> Comparison {
    let mut findings = Vec::new();
    if sides.original.request_sequence_digest != sides.rerun.request_sequence_digest {
        findings.push(Finding {
            severity: Severity::Bad,
            check: FindingKind::RequestSequence {
                original: sides.original.request_sequence_digest,
                rerun: sides.rerun.request_sequence_digest,
            },
        });
    }
    let missing: Vec<String> = entries
        .iter()
        .filter(|e| e.rerun.is_none())
        .map(|e| format!("entry {}", e.index))
        .collect();
    if !missing.is_empty() {
        return Comparison {
            verdict: if findings.is_empty() {
                RerunVerdict::Unkwn
            } else {
                RerunVerdict::Bad
            },
            reason: Some(format!(
                "the status and the seat are not compared: {} not re-run",
                missing.join(", ")
            )),
            findings,
        };
    }
    let relabeled = relabel(sides);
    let outcome = match verifier::recomputed_outcome(sides.rerun_dir, &relabeled, sides.frozen) {
        Ok(outcome) => outcome,
        Err(e) => {
            return part(
                RerunVerdict::Fail,
                format!("deciding the re-run's round: {e}"),
            );
        }
    };
    let original = &sides.original.outcome;
    match (original.status, outcome.status) {
        (RoundStatus::Complete, RoundStatus::InfraFailed) => {
            return part(
                RerunVerdict::Fail,
                format!(
                    "the re-run round was infra_failed: {}",
                    outcome
                        .reason
                        .as_ref()
                        .map_or_else(|| "no reason recorded".to_owned(), ToString::to_string)
                ),
            );
        }
        (a, b) if a != b => findings.push(Finding {
            // One side could not decide (its noise, or its machine): not reproducing that
            // is noise, not a moved number.
            severity: Severity::Noisy,
            check: FindingKind::RoundStatus {
                original: a,
                rerun: b,
            },
        }),
        (RoundStatus::Complete, _) if original.leader_after != outcome.leader_after => {
            let allowed = tolerance_ppm(tolerance);
            let winner = |rule: Option<&SeatRule>| match rule {
                Some(SeatRule::MarginMet { winner }) => Some(winner.clone()),
                _ => None,
            };
            let original_winner = winner(original.decision.typed());
            let rerun_winner =
                winner(outcome.decision.typed()).filter(|z| Some(z) != original_winner.as_ref());
            let median = |leader: &Option<Leader>| {
                leader
                    .as_ref()
                    .and_then(|l| median_vs_incumbent(&relabeled, l))
            };
            let contradiction = seat_contradiction_ppm(
                median(&original_winner),
                median(&rerun_winner),
                sides.original.outcome.margin_bp,
            );
            findings.push(Finding {
                severity: seat_severity(contradiction, allowed),
                check: FindingKind::Seat {
                    original: original.leader_after.clone(),
                    rerun: outcome.leader_after.clone(),
                    margin_distance_ppm: contradiction,
                    tolerance_ppm: allowed,
                },
            });
        }
        _ => {}
    }
    Comparison {
        verdict: verdict_of(&findings),
        reason: None,
        findings,
    }
}

/// The re-run's record with the original's entries' indices and roles, in the original's
/// order, not practice (the original's incumbent was a challenger of the scratch round, which has no
/// previous round to seat it).
fn relabel(sides: &Sides<'_>) -> RoundRecord {
    let mut record = sides.rerun.clone();
    // The re-run's round is practice (it ran on the revealed seeds); its seat is
    // recomputed as the original's rule would have moved it.
    record.practice = false;
    record.entries = sides
        .original
        .entries
        .iter()
        .filter_map(|entry| {
            let mut rerun = sides.counterpart(entry)?.clone();
            rerun.index = entry.index;
            rerun.role = entry.role;
            Some(rerun)
        })
        .collect();
    record
}

/// `leader`'s median paired ratio against the incumbent (the baseline's first runs when
/// the baseline holds the seat) in `record`, over the passes where both measured, as
/// `paired_score` gives it (ratio − 10⁶, ppm).
fn median_vs_incumbent(record: &RoundRecord, leader: &Leader) -> Option<i64> {
    let challenger = record
        .entries
        .iter()
        .find(|e| e.patch.as_ref() == Some(&leader.patch))?;
    let incumbent = record
        .entries
        .iter()
        .find(|e| e.role == Role::Incumbent)
        .or_else(|| record.entries.iter().find(|e| e.role == Role::Baseline))?;
    let measured = |entry: &Entry, pass: u32| {
        entry
            .passes
            .iter()
            .rev()
            .find(|row| row.pass == pass && !row.control)
            .filter(|row| row.status == PassStatus::Measured)
            .and_then(|row| row.throughput_milli_rps)
    };
    let (ours, theirs): (Vec<u64>, Vec<u64>) = record
        .passes
        .iter()
        .filter(|pass| !pass.void)
        .filter_map(|pass| {
            Some((
                measured(challenger, pass.index)?,
                measured(incumbent, pass.index)?,
            ))
        })
        .unzip();
    Some(paired_score(&ours, &theirs)?.median_ppm)
}

#[cfg(test)]
mod tests {
    use super::*;
    use receipts::model::Sha256Hex;

    fn finding(check: FindingKind) -> Finding {
        Finding {
            severity: Severity::Bad,
            check,
        }
    }

    fn compared(findings: Vec<Finding>) -> Comparison {
        Comparison {
            verdict: verdict_of(&findings),
            reason: None,
            findings,
        }
    }

    #[test]
    fn in_a_failed_re_run_round_only_exact_findings_count() {
        let status = finding(FindingKind::Status {
            original: EntryStatus::Scored,
            rerun: EntryStatus::Disqualified,
            original_reason: None,
            rerun_reason: Some("sla_unmet".to_owned()),
        });
        let config = finding(FindingKind::EngineConfig {
            original: Sha256Hex::digest(b"a"),
            rerun: Sha256Hex::digest(b"b"),
        });
        // A status the failed round moved: not comparable.
        assert_eq!(
            unmeasured(compared(vec![status.clone()]), "why"),
            part(
                RerunVerdict::Fail,
                "not comparable: the re-run round was infra_failed (why)".to_owned()
            )
        );
        // The config the diff makes does not depend on the round: still BAD.
        assert_eq!(
            unmeasured(compared(vec![status, config.clone()]), "why"),
            compared(vec![config])
        );
        // Nothing moved (an engine that died at start both times): as it was.
        assert_eq!(
            unmeasured(compared(Vec::new()), "why"),
            compared(Vec::new())
        );
    }
}
