//! The pass loop (content/rounds.md, Passes): runs every scheduled run of the round
//! ([`receipts::rules::passes::schedule`]) that the journal does not hold yet, re-runs an
//! invalid run once right after it, and turns the journaled runs into what the paired
//! rules read ([`receipts::rules::paired`]). The run itself is a [`RunExecutor`]: the
//! round's engines in [`super::Ctx`], a simulated machine in the tests.

use receipts::model::{
    EntryPass, Leader, MeasurementOutcome, NoiseCheck, Outcome, PairedScore, Pass, PassSlot,
    PassStatus, Role,
};
pub(crate) use receipts::rules::outcome::OutcomeInput;
use receipts::rules::outcome::{OutcomeEntry, round_outcome};
use receipts::rules::paired::{
    self, Attempt, DisqualifyingRun, EntryFate, PairedDecision, RoundRuns, RunFate, RunOutcome,
    RunRecord, SeatedRuns,
};
use receipts::rules::passes::ScheduledRun;

use super::record::{EntryRecord, EntryResult, PlannedEntry};

/// One journaled attempt of a scheduled run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RunDone {
    /// Which run.
    pub run: ScheduledRun,
    /// Which attempt.
    pub attempt: Attempt,
    /// What it gave.
    pub outcome: RunOutcome,
}

/// Runs one attempt of one scheduled run and journals it before returning.
pub(crate) trait RunExecutor {
    /// What stops the round (a step log or the journal that cannot be written).
    type Error;
    /// Runs `attempt` of `run`.
    ///
    /// Errors: whatever stops the round; a failing engine is an outcome instead.
    fn run(&mut self, run: ScheduledRun, attempt: Attempt) -> Result<RunOutcome, Self::Error>;

    /// Pass `pass` ended: every attempt of its runs is journaled (the round logs its
    /// measurement entry). Called again for a pass that ended before a resume.
    ///
    /// Errors: whatever stops the round.
    fn pass_ended(&mut self, _pass: u32) -> Result<(), Self::Error> {
        Ok(())
    }

    /// The wave of `run` in its pass when the round runs a wave's runs at once
    /// (content/noise.md, Parallel passes); `None`: every run runs alone.
    fn wave_of(&self, _run: ScheduledRun) -> Option<u32> {
        None
    }

    /// Runs the attempts of one wave (`runs`, in schedule order) and journals them in
    /// that order, whatever order they end in; returns their outcomes in that order. By
    /// default one after another.
    ///
    /// Errors: whatever stops the round.
    fn run_wave(
        &mut self,
        runs: &[(ScheduledRun, Attempt)],
    ) -> Result<Vec<RunOutcome>, Self::Error> {
        runs.iter()
            .map(|&(run, attempt)| self.run(run, attempt))
            .collect()
    }
}

/// The failure table's view of a slot: either baseline run, or an entry's.
fn role_of(slot: PassSlot) -> paired::RunOwner {
    if slot.entry == 0 {
        paired::RunOwner::Baseline
    } else {
        paired::RunOwner::Entry
    }
}

/// Whether an attempt is an invalid first one, to be run again once.
fn wants_rerun(done: &RunDone) -> bool {
    paired::run_fate(
        role_of(done.run.slot),
        RunRecord {
            outcome: done.outcome,
            attempt: done.attempt,
        },
    ) == RunFate::RerunOnce
}

/// The attempts still to run after the journaled ones (`done`, in journal order), in
/// schedule order: every scheduled run without an attempt, and the re-run of one whose
/// only attempt was an invalid first one. A journal holding the first `k` attempts of a
/// round resumes at attempt `k + 1`.
pub(crate) fn remaining(
    schedule: &[ScheduledRun],
    done: &[RunDone],
) -> Vec<(ScheduledRun, Attempt)> {
    schedule
        .iter()
        .filter_map(|run| {
            let last = done.iter().rev().find(|d| d.run == *run);
            match last {
                None => Some((*run, Attempt::First)),
                Some(last) if wants_rerun(last) => Some((*run, Attempt::Rerun)),
                Some(_) => None,
            }
        })
        .collect()
}

/// Runs every attempt [`remaining`] after `done`, appending each to `done` as it
/// finishes; the runs of one wave ([`RunExecutor::wave_of`]) run together, and an
/// invalid first attempt is run again right after its wave, with the wave's other
/// re-runs.
///
/// Errors: the executor's (the round stops; `done` holds what finished).
pub(crate) fn run_passes<E: RunExecutor>(
    schedule: &[ScheduledRun],
    done: &mut Vec<RunDone>,
    executor: &mut E,
) -> Result<(), E::Error> {
    let todo = remaining(schedule, done);
    // Passes that ended before a resume end again: what they logged is found, not appended.
    let mut ended: Vec<u32> = (schedule.iter())
        .map(|r| r.pass)
        .filter(|pass| todo.iter().all(|(run, _)| run.pass != *pass))
        .collect();
    ended.dedup();
    for pass in ended {
        executor.pass_ended(pass)?;
    }
    let mut at = 0;
    while let Some(&(run, _)) = todo.get(at) {
        let end = match executor.wave_of(run) {
            None => at + 1,
            Some(wave) => {
                let same = |(next, _): &&(ScheduledRun, Attempt)| {
                    next.pass == run.pass && executor.wave_of(*next) == Some(wave)
                };
                at + todo[at..].iter().take_while(same).count()
            }
        };
        let mut batch = todo[at..end].to_vec();
        while !batch.is_empty() {
            let outcomes = executor.run_wave(&batch)?;
            let mut reruns = Vec::new();
            for (&(run, attempt), outcome) in batch.iter().zip(outcomes) {
                let finished = RunDone {
                    run,
                    attempt,
                    outcome,
                };
                done.push(finished);
                if wants_rerun(&finished) {
                    reruns.push((run, Attempt::Rerun));
                }
            }
            batch = reruns;
        }
        if todo.get(end).is_none_or(|(next, _)| next.pass != run.pass) {
            executor.pass_ended(run.pass)?;
        }
        at = end;
    }
    Ok(())
}

/// The rules' outcome of one journaled run: a measured, valid run that met the SLA
/// counts its throughput; an unmet SLA is `SlaUnmet`; an engine that died is `Crashed`;
/// a client that lagged, CPU steal over the bound or a telemetry violation make it `Invalid`, infrastructure that
/// failed `RunnerFailed` (each re-run once).
pub(crate) fn outcome_of(record: &EntryRecord) -> RunOutcome {
    match &record.result {
        EntryResult::Measured { .. } if record.steal_exceeded => RunOutcome::Invalid,
        EntryResult::Measured { .. } if record.telemetry_violation().is_some() => {
            RunOutcome::Invalid
        }
        EntryResult::Measured { measurement, .. } if !measurement.valid => RunOutcome::Invalid,
        EntryResult::Measured { measurement, .. } => match measurement.outcome {
            MeasurementOutcome::Measured => RunOutcome::Measured {
                milli_rps: measurement.throughput_milli_rps.unwrap_or(0),
            },
            MeasurementOutcome::SlaUnmet { .. } => RunOutcome::SlaUnmet,
            MeasurementOutcome::Invalid { .. } => RunOutcome::Invalid,
        },
        EntryResult::Disqualified(_) => RunOutcome::Crashed,
        EntryResult::InfraFailed { .. } => RunOutcome::RunnerFailed,
    }
}

/// Whether a journaled run enters its entry's score: it measured a throughput at the
/// SLA (its row's status is `measured`), so its outputs are sampled.
pub(crate) fn counts_in_score(record: &EntryRecord) -> bool {
    matches!(outcome_of(record), RunOutcome::Measured { milli_rps } if milli_rps > 0)
}

/// A journaled run record as the pass loop sees it.
pub(crate) fn run_done(record: &EntryRecord) -> RunDone {
    RunDone {
        run: ScheduledRun {
            pass: record.pass,
            slot: PassSlot {
                entry: record.index,
                control: record.control,
            },
        },
        attempt: if record.rerun {
            Attempt::Rerun
        } else {
            Attempt::First
        },
        outcome: outcome_of(record),
    }
}

/// The last attempt of every slot's run in every pass, as the paired rules read them:
/// the baseline's two runs, the incumbent (seated only when `leader_before` is a
/// leader) and the challengers in commitment (index) order. A run with no attempt reads
/// as invalid after its re-run: the round cannot count it. The runs of an entry in
/// `excluded` (disqualified by its correctness outputs, or failed by the scorer) read as
/// crashed: the decision cannot seat it.
pub(crate) fn round_runs(
    entries: &[PlannedEntry],
    passes: u32,
    done: &[RunDone],
    excluded: &[u32],
) -> RoundRuns {
    let runs_of = |slot: PassSlot| -> Vec<RunRecord> {
        (0..passes)
            .map(|pass| {
                let run = ScheduledRun { pass, slot };
                let last = done.iter().rev().find(|d| d.run == run);
                match last {
                    None => RunRecord {
                        outcome: RunOutcome::RunnerFailed,
                        attempt: Attempt::Rerun,
                    },
                    Some(d) => RunRecord {
                        outcome: match d.outcome {
                            RunOutcome::Measured { .. } if excluded.contains(&slot.entry) => {
                                RunOutcome::Crashed
                            }
                            outcome => outcome,
                        },
                        attempt: d.attempt,
                    },
                }
            })
            .collect()
    };
    let seated = |planned: &PlannedEntry| -> Option<SeatedRuns> {
        Some(SeatedRuns {
            leader: Leader {
                patch: planned.patch?,
                miner: planned.miner.clone()?,
            },
            runs: runs_of(PassSlot {
                entry: planned.index,
                control: false,
            }),
        })
    };
    RoundRuns {
        baseline_first: runs_of(PassSlot {
            entry: 0,
            control: false,
        }),
        baseline_control: runs_of(PassSlot {
            entry: 0,
            control: true,
        }),
        incumbent: entries
            .iter()
            .find(|e| e.role == Role::Incumbent)
            .and_then(seated),
        challengers: entries
            .iter()
            .filter(|e| e.role == Role::Challenger)
            .filter_map(seated)
            .collect(),
    }
}

/// The status of a run in the round record.
fn pass_status(outcome: RunOutcome, record: Option<&EntryRecord>) -> PassStatus {
    match (outcome, record.map(|r| &r.result)) {
        (_, None) => PassStatus::NotRun,
        (_, Some(EntryResult::InfraFailed { .. })) => PassStatus::InfraFailed,
        (RunOutcome::Measured { milli_rps }, _) if milli_rps > 0 => PassStatus::Measured,
        (RunOutcome::Measured { .. } | RunOutcome::SlaUnmet, _) => PassStatus::SlaUnmet,
        (RunOutcome::Crashed, _) => PassStatus::Crashed,
        (RunOutcome::Invalid, _) => PassStatus::Invalid,
        (RunOutcome::RunnerFailed, _) => PassStatus::InfraFailed,
    }
}

/// What the passes put into the round record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PassesView {
    /// The round's passes, with their order and whether each is void.
    pub passes: Vec<Pass>,
    /// Each seated entry's runs and paired score, in `entries` order.
    pub entries: Vec<EntryPasses>,
    /// The round's noise.
    pub noise: NoiseCheck,
    /// What the paired rules decided.
    pub decision: PairedDecision,
}

/// One entry's passes in the round record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct EntryPasses {
    /// One row per attempt of its runs, pass by pass (the baseline's A/A control rows
    /// after its own).
    pub passes: Vec<EntryPass>,
    /// Its paired score over the counted passes, when the passes score it (never for
    /// the baseline).
    pub paired_score: Option<PairedScore>,
    /// The pass whose run disqualified it (the failure table) and why, when one did.
    pub disqualified_in: Option<(u32, DisqualifyingRun)>,
}

/// Reads the journaled runs for the round record: one row per attempt with its status
/// and paired ratio, which passes are void (a baseline run of it voids it in the failure
/// table), each entry's paired score, the noise check (both spreads over the passes in
/// which both baseline runs count; unmeasured below [`paired::MIN_PASSES`] of them) and
/// the paired rules' decision with `drift_bound_bp` and `margin_bp`, each challenger
/// held to its margin in `challenger_margins_bp` (in `entries`' challenger order; a
/// derived challenger's may be larger). `orders[p]` is pass `p`'s recorded order;
/// `records` the journaled runs in journal order.
pub(crate) fn view(
    entries: &[PlannedEntry],
    orders: Vec<Vec<PassSlot>>,
    records: &[&EntryRecord],
    excluded: &[u32],
    drift_bound_bp: u32,
    (margin_bp, challenger_margins_bp): (u32, &[u32]),
) -> PassesView {
    let count = u32::try_from(orders.len()).unwrap_or(u32::MAX);
    let done: Vec<RunDone> = records.iter().map(|r| run_done(r)).collect();
    let runs = round_runs(entries, count, &done, excluded);
    let decision = paired::decide_paired_with_margins(
        &runs,
        drift_bound_bp,
        margin_bp,
        challenger_margins_bp,
        paired::SeatChoice::BestQualifying,
        paired::InvalidTwice::Disqualifies,
    );
    let settled = paired::settle_passes(&runs, paired::InvalidTwice::Disqualifies).ok();
    let fate = |records: &[RunRecord], pass: u32| {
        records
            .get(usize::try_from(pass).unwrap_or(usize::MAX))
            .map(|r| paired::run_fate(paired::RunOwner::Baseline, *r))
    };
    let passes = orders
        .into_iter()
        .zip(0..)
        .map(|(order, index)| Pass {
            index,
            order,
            void: [&runs.baseline_first, &runs.baseline_control]
                .iter()
                .any(|slot| fate(slot, index) == Some(RunFate::VoidsPass)),
            placement: Vec::new(),
        })
        .collect();
    // The baseline's run of each pass, when measured: what every row's ratio divides by.
    let baseline_of = |pass: u32| -> Option<u64> {
        match runs
            .baseline_first
            .get(usize::try_from(pass).ok()?)?
            .outcome
        {
            RunOutcome::Measured { milli_rps } if milli_rps > 0 => Some(milli_rps),
            _ => None,
        }
    };
    let rows = |entry: u32, control: bool| -> Vec<EntryPass> {
        let mut rows: Vec<(u32, EntryPass)> = records
            .iter()
            .filter(|r| r.index == entry && r.control == control)
            .map(|r| {
                let outcome = outcome_of(r);
                let throughput = match outcome {
                    RunOutcome::Measured { milli_rps } if milli_rps > 0 => Some(milli_rps),
                    _ => None,
                };
                let own_baseline_run = entry == 0 && !control;
                let ratio = match (own_baseline_run, throughput, baseline_of(r.pass)) {
                    (false, Some(t), Some(b)) => paired::paired_ratio_ppm(t, b),
                    _ => None,
                };
                let row = EntryPass {
                    pass: r.pass,
                    control,
                    status: pass_status(outcome, Some(r)),
                    throughput_milli_rps: throughput,
                    paired_ratio_ppm: ratio,
                    probe_log: r.probe_log.clone(),
                    engine_log: r.engine_log.clone(),
                    host_load: r.host_load.clone(),
                    gpus: Vec::new(),
                    telemetry: r.telemetry.clone(),
                };
                (r.pass, row)
            })
            .collect();
        // Pass by pass; a re-run stays after the attempt it replaces.
        rows.sort_by_key(|(pass, _)| *pass);
        rows.into_iter().map(|(_, row)| row).collect()
    };
    let mut challengers = settled.as_ref().map(|s| s.challengers.iter());
    let views = entries
        .iter()
        .map(|planned| {
            let mut passes = rows(planned.index, false);
            let fate: Option<&EntryFate> = match planned.role {
                Role::Baseline => {
                    passes.extend(rows(planned.index, true));
                    None
                }
                Role::Incumbent => settled.as_ref().and_then(|s| s.incumbent.as_ref()),
                Role::Challenger => challengers.as_mut().and_then(Iterator::next),
            };
            let baseline_first = settled.as_ref().map_or(&[][..], |s| &s.baseline_first);
            EntryPasses {
                passes,
                paired_score: match fate {
                    Some(EntryFate::Scored(t)) => paired::paired_score(t, baseline_first),
                    _ => None,
                },
                disqualified_in: match fate {
                    Some(EntryFate::Disqualified { pass, cause }) => {
                        u32::try_from(*pass).ok().map(|pass| (pass, *cause))
                    }
                    _ => None,
                },
            }
        })
        .collect();
    PassesView {
        passes,
        entries: views,
        noise: paired::noise_check(&runs, drift_bound_bp, margin_bp),
        decision,
    }
}

/// The round's outcome ([`round_outcome`], content/leader-rule.md with the passes of
/// content/noise.md) from the paired rules' decision in `view`, the round's seated
/// `entries` with their paired scores in `view` (in the same order), and `input`.
pub(crate) fn outcome(
    view: &PassesView,
    entries: &[PlannedEntry],
    input: &OutcomeInput,
) -> Outcome {
    let seated: Vec<OutcomeEntry> = entries
        .iter()
        .zip(&view.entries)
        .map(|(planned, passes)| OutcomeEntry {
            index: planned.index,
            role: planned.role,
            leader: planned
                .patch
                .zip(planned.miner.clone())
                .map(|(patch, miner)| Leader { patch, miner }),
            paired_median_ppm: passes.paired_score.map(|s| s.median_ppm),
        })
        .collect();
    round_outcome(&view.decision, &seated, input)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use receipts::model::{
        MinerId, NoiseVerdict, PassOrder, RoundFailure, RoundStatus, SeatRule, Seed32, Sha256Hex,
        TypedOrText,
    };
    use receipts::rules::paired::{PairedFailure, decide_paired};
    use receipts::rules::passes::schedule;

    use super::*;

    fn planned(index: u32, role: Role) -> PlannedEntry {
        let miner: Option<MinerId> = (index > 0).then(|| format!("miner-{index}").parse().unwrap());
        PlannedEntry {
            index,
            role,
            patch: (index > 0).then(|| Sha256Hex::digest(&[index as u8])),
            group: format!("entry {index}"),
            slug: format!("entry-{index}"),
            miner,
            image: None,
        }
    }

    /// Baseline, the leader as incumbent, one challenger.
    fn seated() -> Vec<PlannedEntry> {
        vec![
            planned(0, Role::Baseline),
            planned(1, Role::Incumbent),
            planned(2, Role::Challenger),
        ]
    }

    /// A machine on tokio's paused clock: every run takes `RUN` of virtual time and
    /// measures `speed[entry]` milli-req/s, times 0.7 while the machine is slowed
    /// (virtual time in `slow`).
    struct SlowingMachine {
        runtime: tokio::runtime::Runtime,
        opened: tokio::time::Instant,
        speed: Vec<u64>,
        slow: std::ops::Range<Duration>,
        ran: Vec<ScheduledRun>,
        invalid_first: Option<ScheduledRun>,
        /// The passes it was told ended, in order.
        ended: Vec<u32>,
        /// Each run's wave, when its waves run together (else every run alone).
        waves: Vec<(ScheduledRun, u32)>,
        /// The attempts it was given together, in order.
        batches: Vec<Vec<(ScheduledRun, Attempt)>>,
    }

    const RUN: Duration = Duration::from_secs(100);

    impl SlowingMachine {
        fn new(speed: Vec<u64>, slow: std::ops::Range<Duration>) -> Self {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .start_paused(true)
                .build()
                .unwrap();
            let opened = runtime.block_on(async { tokio::time::Instant::now() });
            Self {
                runtime,
                opened,
                speed,
                slow,
                ran: Vec::new(),
                invalid_first: None,
                ended: Vec::new(),
                waves: Vec::new(),
                batches: Vec::new(),
            }
        }
    }

    impl RunExecutor for SlowingMachine {
        type Error = std::convert::Infallible;

        fn run(&mut self, run: ScheduledRun, attempt: Attempt) -> Result<RunOutcome, Self::Error> {
            self.ran.push(run);
            let opened = self.opened;
            let started = self.runtime.block_on(async move {
                let started = opened.elapsed();
                tokio::time::sleep(RUN).await;
                started
            });
            if self.invalid_first == Some(run) && attempt == Attempt::First {
                return Ok(RunOutcome::Invalid);
            }
            let speed = self.speed[run.slot.entry as usize];
            let milli_rps = if self.slow.contains(&started) {
                speed * 7 / 10
            } else {
                speed
            };
            Ok(RunOutcome::Measured { milli_rps })
        }

        fn pass_ended(&mut self, pass: u32) -> Result<(), Self::Error> {
            self.ended.push(pass);
            Ok(())
        }

        fn wave_of(&self, run: ScheduledRun) -> Option<u32> {
            self.waves.iter().find(|(r, _)| *r == run).map(|(_, w)| *w)
        }

        fn run_wave(
            &mut self,
            runs: &[(ScheduledRun, Attempt)],
        ) -> Result<Vec<RunOutcome>, Self::Error> {
            self.batches.push(runs.to_vec());
            runs.iter().map(|&(run, a)| self.run(run, a)).collect()
        }
    }

    /// A no-op challenger (as fast as the incumbent), three passes, and the machine
    /// slowed to 0.7× from 300 s to 600 s of the round (the sequential incumbent's runs).
    fn slowed_round(order: PassOrder) -> (PairedDecision, Vec<RunDone>) {
        let entries = seated();
        let runs = schedule(order, &Seed32([7; 32]), 3, 3);
        let mut machine = SlowingMachine::new(
            vec![10_000, 10_000, 10_000],
            Duration::from_secs(300)..Duration::from_secs(600),
        );
        let mut done = Vec::new();
        run_passes(&runs, &mut done, &mut machine).unwrap();
        assert_eq!(machine.ran, runs);
        let decision = decide_paired(
            &round_runs(&entries, 3, &done, &[]),
            500,
            100,
            paired::SeatChoice::BestQualifying,
            paired::InvalidTwice::Disqualifies,
        );
        (decision, done)
    }

    #[test]
    fn a_machine_slowing_mid_round_seats_a_no_op_challenger_only_under_sequential_passes() {
        let leader_after = |d: &PairedDecision| match d {
            PairedDecision::Seat { leader_after, .. } => leader_after.clone(),
            _ => None,
        };
        let (sequential, _) = slowed_round(PassOrder::Sequential);
        let challenger = Leader {
            patch: Sha256Hex::digest(&[2]),
            miner: "miner-2".parse().unwrap(),
        };
        // Sequential: the incumbent ran slowed, the challenger did not, the baseline's
        // runs all fell outside the slow spell: a false seat change nothing detects.
        assert_eq!(
            sequential,
            PairedDecision::Seat {
                leader_after: Some(challenger.clone()),
                rule: SeatRule::MarginMet { winner: challenger },
            }
        );
        // Interleaved: the slow spell hits the baseline too; its spread across passes
        // (3000 bp) exceeds the drift bound and the round is infra_failed.
        let (interleaved, done) = slowed_round(PassOrder::Interleaved);
        assert_eq!(
            interleaved,
            PairedDecision::InfraFailed(PairedFailure::MachineChanged {
                spread_bp: 3000,
                bound_bp: 500,
            })
        );
        assert_eq!(leader_after(&interleaved), None);
        assert_eq!(done.len(), 12);
    }

    #[test]
    fn an_invalid_run_is_run_again_once_right_after_it() {
        let runs = schedule(PassOrder::Interleaved, &Seed32([7; 32]), 2, 3);
        let mut machine =
            SlowingMachine::new(vec![10_000, 10_000, 11_000], Duration::ZERO..Duration::ZERO);
        machine.invalid_first = Some(runs[2]);
        let mut done = Vec::new();
        run_passes(&runs, &mut done, &mut machine).unwrap();
        assert_eq!(done.len(), 9);
        assert_eq!(
            (done[2].run, done[2].attempt, done[2].outcome),
            (runs[2], Attempt::First, RunOutcome::Invalid)
        );
        assert_eq!((done[3].run, done[3].attempt), (runs[2], Attempt::Rerun));
        assert_eq!(done[4].run, runs[3]);
    }

    /// A parallel round (issue 50): each wave's attempts go to the executor together and
    /// are journaled in the schedule's order; an invalid first attempt is run again right
    /// after its wave, and a round resumed after it runs that re-run alone first.
    #[test]
    fn a_waves_runs_run_together_and_its_re_runs_right_after_it() {
        let runs = schedule(PassOrder::Interleaved, &Seed32([7; 32]), 2, 3);
        assert_eq!(runs.len(), 8);
        let machine = || {
            let mut machine =
                SlowingMachine::new(vec![10_000, 10_000, 11_000], Duration::ZERO..Duration::ZERO);
            machine.waves = (runs.iter().enumerate())
                .map(|(i, run)| (*run, u32::try_from(i % 4 / 2).unwrap()))
                .collect();
            machine.invalid_first = Some(runs[0]);
            machine
        };
        let mut first = machine();
        let mut all = Vec::new();
        run_passes(&runs, &mut all, &mut first).unwrap();
        let (f, r) = (Attempt::First, Attempt::Rerun);
        assert_eq!(
            first.batches,
            [
                vec![(runs[0], f), (runs[1], f)],
                vec![(runs[0], r)],
                vec![(runs[2], f), (runs[3], f)],
                vec![(runs[4], f), (runs[5], f)],
                vec![(runs[6], f), (runs[7], f)],
            ]
        );
        let journaled: Vec<(ScheduledRun, Attempt)> =
            all.iter().map(|d| (d.run, d.attempt)).collect();
        assert_eq!(journaled, first.batches.concat());
        assert_eq!(all[0].outcome, RunOutcome::Invalid);
        assert_eq!(first.ended, [0, 1]);
        // Resumed after the wave's two first attempts: the re-run alone, then the rest.
        let mut again = machine();
        let mut resumed = all[..2].to_vec();
        run_passes(&runs, &mut resumed, &mut again).unwrap();
        assert_eq!(again.batches[0], [(runs[0], r)]);
        assert_eq!(resumed, all);
    }

    #[test]
    fn a_journal_with_k_finished_runs_resumes_at_run_k_plus_1() {
        let runs = schedule(PassOrder::Interleaved, &Seed32([7; 32]), 3, 3);
        let mut machine =
            SlowingMachine::new(vec![10_000, 10_000, 11_000], Duration::ZERO..Duration::ZERO);
        machine.invalid_first = Some(runs[4]);
        let mut all = Vec::new();
        run_passes(&runs, &mut all, &mut machine).unwrap();
        assert_eq!(all.len(), 13);
        // After any k journaled attempts, the next to run is attempt k + 1 of an
        // unbroken round (an invalid first attempt's re-run included).
        for k in 0..=all.len() {
            let next = remaining(&runs, &all[..k]).first().copied();
            assert_eq!(
                next,
                all.get(k).map(|d| (d.run, d.attempt)),
                "after {k} attempts"
            );
        }
        // Resuming after 5 attempts (the invalid first attempt of run 4 among them) runs
        // its re-run first, then the rest, and ends where an unbroken round ends.
        let mut resumed = all[..5].to_vec();
        let mut again =
            SlowingMachine::new(vec![10_000, 10_000, 11_000], Duration::ZERO..Duration::ZERO);
        run_passes(&runs, &mut resumed, &mut again).unwrap();
        assert_eq!(again.ran[0], runs[4]);
        assert_eq!(resumed, all);
        // Each pass ends once, after its last attempt (the re-run included); a pass that
        // ended before the resume ends again first, so its measurement entry is found.
        assert_eq!(machine.ended, [0, 1, 2]);
        assert_eq!(again.ended, [0, 1, 2]);
        let mut finished = all.clone();
        let mut idle =
            SlowingMachine::new(vec![10_000, 10_000, 11_000], Duration::ZERO..Duration::ZERO);
        run_passes(&runs, &mut finished, &mut idle).unwrap();
        assert!(idle.ran.is_empty());
        assert_eq!(idle.ended, [0, 1, 2]);
    }

    /// A journaled run of `entry` in `pass` that measured `milli_rps` (0: SLA unmet).
    fn record(entry: u32, control: bool, pass: u32, milli_rps: u64) -> EntryRecord {
        use receipts::model::{BackendKind, EntryMeasurement, SlaUnmetReason, Timestamp};
        EntryRecord {
            probe_log: Some(format!("probes/{entry}-{pass}.json")),
            result: EntryResult::Measured {
                measurement: Box::new(EntryMeasurement {
                    runs: Vec::new(),
                    throughput_milli_rps: (milli_rps > 0).then_some(milli_rps),
                    throughput_min_milli_rps: None,
                    throughput_max_milli_rps: None,
                    valid: true,
                    outcome: if milli_rps > 0 {
                        MeasurementOutcome::Measured
                    } else {
                        MeasurementOutcome::SlaUnmet {
                            reason: SlaUnmetReason::NoPassingRate,
                        }
                    },
                    measured_for: None,
                    caching: None,
                }),
                outputs: None,
                outputs_error: None,
                outputs_disqualification: None,
            },
            ..EntryRecord::not_run(
                entry,
                pass,
                control,
                false,
                Timestamp::now(),
                BackendKind::Builtin,
            )
        }
    }

    fn infra(mut record: EntryRecord) -> EntryRecord {
        record.result = EntryResult::InfraFailed {
            reason: "the tree".into(),
        };
        record
    }

    /// `record`, measured while CPU steal passed its bound: `Invalid`, the host's (and
    /// from v6, twice beside a valid baseline, the entry's).
    fn stolen(mut record: EntryRecord) -> EntryRecord {
        record.steal_exceeded = true;
        record
    }

    /// Three passes of the baseline (its control 1 % off), the incumbent and one
    /// challenger at the given throughputs.
    fn three_passes(incumbent: [u64; 3], challenger: [u64; 3]) -> Vec<EntryRecord> {
        (0..3u32)
            .flat_map(|p| {
                [
                    record(0, false, p, 10_000),
                    record(0, true, p, 10_100),
                    record(1, false, p, incumbent[p as usize]),
                    record(2, false, p, challenger[p as usize]),
                ]
            })
            .collect()
    }

    fn decided(records: &[EntryRecord], input: &OutcomeInput) -> (PassesView, Outcome) {
        let entries = seated();
        let refs: Vec<&EntryRecord> = records.iter().collect();
        let orders = (0..3)
            .map(|p| receipts::rules::passes::pass_order(&Seed32([7; 32]), p, 3))
            .collect();
        let view = view(&entries, orders, &refs, &[], 500, (100, &[]));
        let outcome = outcome(&view, &entries, input);
        (view, outcome)
    }

    fn input() -> OutcomeInput {
        OutcomeInput {
            leader_before: Some(Leader {
                patch: Sha256Hex::digest(&[1]),
                miner: "miner-1".parse().unwrap(),
            }),
            margin_bp: 100,
            hardware_changed: false,
            baseline_without_token_ids: None,
            capability_missing: None,
            scorer_failure: None,
            incumbent_infra_failed: false,
            incumbent_infra_failed_rounds: 0,
            practice: false,
            cost_seat: None,
        }
    }

    #[test]
    fn the_view_scores_pairs_and_measures_the_noise() {
        let records = three_passes([10_000, 10_000, 10_000], [11_000, 12_000, 10_500]);
        let (view, outcome) = decided(&records, &input());
        assert_eq!(
            view.passes.iter().map(|p| p.void).collect::<Vec<_>>(),
            [false; 3]
        );
        assert_eq!(
            view.entries[2].paired_score,
            Some(PairedScore {
                median_ppm: 100_000,
                min_ppm: 50_000,
                max_ppm: 200_000,
                passes: 3,
                coverage_ppm: 750_000,
            })
        );
        assert_eq!(view.entries[0].paired_score, None);
        assert_eq!(view.entries[0].passes.len(), 6);
        // The A/A control's row carries its ratio, the baseline's own run none.
        assert_eq!(view.entries[0].passes[0].paired_ratio_ppm, None);
        assert_eq!(view.entries[0].passes[3].paired_ratio_ppm, Some(1_010_000));
        assert_eq!(view.entries[2].passes[1].paired_ratio_ppm, Some(1_200_000));
        assert_eq!(
            view.noise,
            NoiseCheck {
                baseline_spread_bp: Some(0),
                aa_spread_bp: Some(0),
                drift_bound_bp: 500,
                margin_bp: 100,
                verdict: NoiseVerdict::Quiet,
            }
        );
        let winner = Leader {
            patch: Sha256Hex::digest(&[2]),
            miner: "miner-2".parse().unwrap(),
        };
        assert_eq!(outcome.status, RoundStatus::Complete);
        assert_eq!(outcome.leader_after, Some(winner.clone()));
        assert_eq!(
            outcome.decision,
            TypedOrText::Typed(SeatRule::MarginMet { winner })
        );
    }

    #[test]
    fn a_baseline_failing_in_a_pass_voids_it_and_an_entry_failing_in_one_is_disqualified() {
        let mut records = three_passes([10_000, 10_000, 10_000], [11_000, 0, 11_000]);
        records[4] = record(0, false, 1, 0);
        let (view, _) = decided(&records, &input());
        assert_eq!(
            view.passes.iter().map(|p| p.void).collect::<Vec<_>>(),
            [false, true, false]
        );
        // The challenger's unmet SLA fell in the void pass: it counts neither way.
        assert_eq!(view.entries[2].disqualified_in, None);
        assert_eq!(view.entries[2].paired_score.map(|s| s.passes), Some(2));
        assert_eq!(view.entries[2].passes[1].status, PassStatus::SlaUnmet);
        let records = three_passes([10_000, 10_000, 10_000], [11_000, 0, 11_000]);
        let (view, _) = decided(&records, &input());
        assert_eq!(
            view.entries[2].disqualified_in,
            Some((1, DisqualifyingRun::SlaUnmet))
        );
        assert_eq!(view.entries[2].paired_score, None);
    }

    /// The leader rule's failure cases hold on passes: an incumbent invalid twice beside a
    /// valid baseline is a disqualified incumbent (v6, no veto), and so is a challenger;
    /// an incumbent failed by a cause of its own outside its runs fails the round
    /// (counting the rounds in a row), and when re-measured alone it is disqualified; a
    /// disqualified incumbent's seat goes only to a challenger at least as fast as the
    /// baseline; the A/A noise above the margin is inconclusive.
    #[test]
    fn the_leader_rules_failure_cases_hold_on_passes() {
        let challenger = Leader {
            patch: Sha256Hex::digest(&[2]),
            miner: "miner-2".parse().unwrap(),
        };
        let invalid_twice = |entry: u32, records: &mut Vec<EntryRecord>, at: usize| {
            records[at] = stolen(record(entry, false, 1, 10_000));
            let mut rerun = stolen(record(entry, false, 1, 10_000));
            rerun.rerun = true;
            records.push(rerun);
        };
        let mut records = three_passes([10_000, 10_000, 10_000], [12_000, 12_000, 12_000]);
        invalid_twice(1, &mut records, 6);
        let (view, dropped) = decided(&records, &input());
        assert_eq!(
            view.entries[1].disqualified_in,
            Some((1, DisqualifyingRun::InvalidTwice))
        );
        assert_eq!(dropped.status, RoundStatus::Complete);
        assert_eq!(dropped.leader_after, Some(challenger.clone()));
        assert_eq!(
            dropped.decision,
            TypedOrText::Typed(SeatRule::IncumbentDisqualified {
                winner: challenger.clone()
            })
        );
        // A challenger invalid twice: disqualified, the incumbent keeps its seat.
        let mut records = three_passes([10_000, 10_000, 10_000], [12_000, 12_000, 12_000]);
        invalid_twice(2, &mut records, 7);
        let (view, kept) = decided(&records, &input());
        assert_eq!(
            view.entries[2].disqualified_in,
            Some((1, DisqualifyingRun::InvalidTwice))
        );
        assert_eq!(view.entries[2].paired_score, None);
        assert_eq!(kept.status, RoundStatus::Complete);
        assert_eq!(kept.leader_after, input().leader_before);
        assert_eq!(
            kept.decision,
            TypedOrText::Typed(SeatRule::NoScoredChallenger)
        );
        // The baseline's control invalid twice in the same pass: the host's, the round's.
        records[5] = infra(record(0, true, 1, 0));
        let mut rerun = infra(record(0, true, 1, 0));
        rerun.rerun = true;
        records.push(rerun);
        let (_, failed) = decided(&records, &input());
        assert_eq!(failed.status, RoundStatus::InfraFailed);
        assert_eq!(
            failed.reason,
            Some(TypedOrText::Typed(RoundFailure::RunInvalid {
                entry: 0,
                control: true,
                pass: 1,
            }))
        );

        // A cause of the incumbent's own outside its runs.
        let records = three_passes([10_000, 10_000, 10_000], [12_000, 12_000, 12_000]);
        let own = OutcomeInput {
            incumbent_infra_failed: true,
            ..input()
        };
        let (_, failed) = decided(&records, &own);
        assert_eq!(failed.status, RoundStatus::InfraFailed);
        assert_eq!(
            failed.reason,
            Some(TypedOrText::Typed(RoundFailure::IncumbentInfraFailed {
                consecutive: 1
            }))
        );
        assert_eq!(failed.leader_after, input().leader_before);
        let remeasured = OutcomeInput {
            incumbent_infra_failed_rounds: 2,
            ..own
        };
        let (_, dropped) = decided(&records, &remeasured);
        assert_eq!(dropped.status, RoundStatus::Complete);
        assert_eq!(dropped.leader_after, None);
        assert_eq!(
            dropped.decision,
            TypedOrText::Typed(SeatRule::IncumbentDisqualifiedFallback)
        );

        // A crashed incumbent, a challenger slower than the baseline.
        let mut records = three_passes([10_000, 10_000, 10_000], [9_000, 9_000, 9_000]);
        records[2].result = EntryResult::Disqualified(receipts::model::Disqualification {
            reason: receipts::model::DisqualificationReason::EngineCrashed,
            detail: "gone".into(),
            log_tail: Vec::new(),
        });
        let (_, slower) = decided(&records, &input());
        assert_eq!(slower.leader_after, None);
        assert!(matches!(
            slower.decision,
            TypedOrText::Typed(SeatRule::IncumbentDisqualifiedSlowerThanBaseline { .. })
        ));

        // The A/A control 3 % apart across passes, the margin 1 %.
        let mut records = three_passes([10_000, 10_000, 10_000], [12_000, 12_000, 12_000]);
        records[5] = record(0, true, 1, 10_400);
        let (view, noisy) = decided(&records, &input());
        assert_eq!(noisy.status, RoundStatus::Inconclusive);
        assert_eq!(noisy.leader_after, input().leader_before);
        assert_eq!(
            noisy.reason,
            Some(TypedOrText::Typed(RoundFailure::NoiseAboveMargin {
                aa_spread_bp: 298,
                margin_bp: 100,
            }))
        );
        assert_eq!(view.noise.verdict, NoiseVerdict::Inconclusive);
    }
}
