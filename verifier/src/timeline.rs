//! The round's timeline (content/verifying.md, Decision): steps numbered in order, each
//! ending no earlier than it starts and starting no earlier than the one before ended
//! (in a parallel round, whose runs of a wave run at once, a run's step starts no
//! earlier than the step before it of its own group and every other step before it),
//! all inside `[startedAt, endedAt]`; every entry inside the round, ending no earlier than
//! it starts; and nothing measured before the round opened — every entry, and every step
//! after the setup phases (provisioning, bootstrapping), starts at or after the
//! round-opened statement's `openedAt`.

use crate::{CheckName, FailureReason, VerifyReport};
use receipts::model::{Phase, RoundOpened, RoundRecord, Timestamp};

use crate::files::same;

/// `timeline`: one check per step and per entry.
pub(crate) fn check_timeline(
    report: &mut VerifyReport,
    record: &RoundRecord,
    opened: Option<&RoundOpened>,
) {
    let round_start = ("startedAt".to_owned(), record.started_at);
    let round_end = ("endedAt".to_owned(), record.ended_at);
    let opened_at = opened.map(|o| (format!("{} openedAt", record.round_opened), o.opened_at));
    let mut previous_end: Option<(String, Timestamp)> = None;
    // A parallel round: the last end of the steps that are no run's, and of each group's.
    let parallel = record.parallel.is_some();
    let mut outside_runs: Option<(String, Timestamp)> = None;
    let mut by_group: Vec<(&str, (String, Timestamp))> = Vec::new();
    for (i, step) in record.steps.iter().enumerate() {
        let in_run = parallel
            && matches!(
                step.phase,
                Phase::StartingEngine | Phase::RunningSla | Phase::RunningCorrectness
            );
        let bound = if in_run {
            let group = (by_group.iter()).find(|(g, _)| *g == step.group.as_str());
            let group = group.map(|(_, end)| end.clone());
            match (group, outside_runs.clone()) {
                (Some(a), Some(b)) => Some(if a.1 >= b.1 { a } else { b }),
                (a, b) => a.or(b),
            }
        } else {
            previous_end.clone()
        };
        let at = format!("steps[{i}]");
        let start = (format!("{at}.startedAt"), step.started_at);
        let end = (format!("{at}.endedAt"), step.ended_at);
        let after_setup = !matches!(step.phase, Phase::Provisioning | Phase::Bootstrapping);
        let result = same(
            "receipt.dsse.json",
            &format!("{at}.index"),
            u64::from(step.index),
            i as u64,
        )
        .and_then(|()| not_before(&start, &round_start))
        .and_then(|()| not_before(&end, &start))
        .and_then(|()| not_before(&round_end, &end))
        .and_then(|()| bound.as_ref().map_or(Ok(()), |p| not_before(&start, p)))
        .and_then(|()| match &opened_at {
            Some(opened_at) if after_setup => not_before(&start, opened_at),
            _ => Ok(()),
        });
        report.record(CheckName::Timeline, Some(at), result);
        if !in_run {
            outside_runs = Some(end.clone());
        }
        by_group.retain(|(g, _)| *g != step.group.as_str());
        by_group.push((step.group.as_str(), end.clone()));
        // The step before, for a serial round; in a parallel one the latest end so far.
        previous_end = match previous_end {
            Some(p) if parallel && p.1 > end.1 => Some(p),
            _ => Some(end),
        };
    }
    for entry in &record.entries {
        let at = format!("entries[{}]", entry.index);
        let start = (format!("{at}.startedAt"), entry.started_at);
        let end = (format!("{at}.endedAt"), entry.ended_at);
        let result = not_before(&start, &round_start)
            .and_then(|()| not_before(&end, &start))
            .and_then(|()| not_before(&round_end, &end))
            .and_then(|()| opened_at.as_ref().map_or(Ok(()), |o| not_before(&start, o)));
        report.record(CheckName::Timeline, Some(at), result);
    }
}

/// `Ok` when `later` is at or after `earlier`; each is `(field, time)`.
fn not_before(
    later: &(String, Timestamp),
    earlier: &(String, Timestamp),
) -> Result<(), FailureReason> {
    if later.1 >= earlier.1 {
        Ok(())
    } else {
        Err(FailureReason::TimelineOrder {
            field: later.0.clone(),
            at: later.1,
            rule: "before".to_owned(),
            bound_field: earlier.0.clone(),
            bound: earlier.1,
        })
    }
}
