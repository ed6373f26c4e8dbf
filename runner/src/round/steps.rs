//! A round's steps as they run: each numbered in round order as it starts, its log
//! written into the bundle (`logs/steps/NN-<stem>.log`) and reported when it ends, in the
//! words of content/rounds.md.

use std::fs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use receipts::model::{
    MeasurementOutcome, Phase, ProbeVerdict, SlaUnmetReason, Step, StepStatus, Timestamp,
};

use super::record::PlannedEntry;
use super::{Clock, RoundError, RoundProgress, io};

/// The bundle directory of the step logs.
const STEP_LOGS: &str = "logs/steps";

/// The round's step numbering and step logs. Shared by the runs of a wave, which run
/// at once: each step takes the next index as it starts, and the wave's steps are put
/// back in journal order when it ends ([`Steps::renumber`]).
pub(crate) struct Steps<'a> {
    progress: &'a dyn RoundProgress,
    /// The clock the steps' times are read from.
    clock: Clock,
    /// `.work/round-<n>/bundle/`.
    bundle: PathBuf,
    /// The next step's index.
    next: AtomicU32,
    /// The seated entries (after setup): an entry's step logs are named by its slug.
    entries: Vec<PlannedEntry>,
}

impl<'a> Steps<'a> {
    /// Steps numbered from `next` (the steps a resumed round's journal holds), their
    /// logs in `bundle`.
    pub(crate) fn new(
        progress: &'a dyn RoundProgress,
        clock: Clock,
        bundle: PathBuf,
        next: u32,
    ) -> Self {
        Self {
            progress,
            clock,
            bundle,
            next: AtomicU32::new(next),
            entries: Vec::new(),
        }
    }

    /// The entries seated at setup: their steps' logs are named by their slugs from now.
    pub(crate) fn seat(&mut self, entries: &[PlannedEntry]) {
        self.entries = entries.to_vec();
    }

    /// Starts a step: its index is the next one of the round.
    pub(crate) fn begin(&self, group: &str, name: &str, phase: Phase) -> StepRun {
        let index = self.next.fetch_add(1, Ordering::SeqCst);
        self.progress.step_started(index, group, name);
        StepRun {
            index,
            group: group.to_owned(),
            name: name.to_owned(),
            phase,
            started_at: self.clock.now(),
            lines: Vec::new(),
        }
    }

    /// Ends a step: writes its log into the bundle and reports it.
    ///
    /// Errors: [`RoundError::Io`] naming the log when it cannot be written: a step whose
    /// record would name a missing log (or none) is never journaled, so the round stops
    /// and a resume runs its group again.
    pub(crate) fn finish(&self, step: StepRun, status: StepStatus) -> Result<Step, RoundError> {
        let ended_at = self.clock.now();
        self.finish_at(step, status, ended_at)
    }

    /// [`Steps::finish`] at `ended_at`.
    fn finish_at(
        &self,
        step: StepRun,
        status: StepStatus,
        ended_at: Timestamp,
    ) -> Result<Step, RoundError> {
        let log = format!("{STEP_LOGS}/{:02}-{}.log", step.index, self.stem(&step));
        let mut text = format!(
            "{} — {}\nphase: {}\nstarted: {}\nended: {}\nstatus: {}\n",
            step.group,
            step.name,
            phase_words(step.phase),
            step.started_at,
            ended_at,
            status.as_str()
        );
        for line in &step.lines {
            text.push_str(line);
            text.push('\n');
        }
        let path = self.bundle.join(&log);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(io("creating", parent))?;
        }
        receipts::fsutil::write_atomic(&path, text.as_bytes(), 0o644)
            .map_err(io("writing the step log", &path))?;
        let done = Step {
            index: step.index,
            group: step.group,
            name: step.name,
            phase: step.phase,
            started_at: step.started_at,
            ended_at,
            status,
            log: Some(log),
        };
        self.progress.step_finished(&done);
        Ok(done)
    }

    /// A step that ran outside the round's own code between `started_at` and `ended_at`
    /// (a pod's setup on the evaluator's clock): numbered next, its `lines` logged.
    ///
    /// Errors: as [`Steps::finish`].
    pub(crate) fn ran_between(
        &self,
        (group, name, phase): (&str, &str, Phase),
        (started_at, ended_at): (Timestamp, Timestamp),
        lines: &[String],
        status: StepStatus,
    ) -> Result<Step, RoundError> {
        let mut step = self.begin(group, name, phase);
        step.started_at = started_at;
        step.lines = lines.to_vec();
        self.finish_at(step, status, ended_at)
    }

    /// Steps run elsewhere (a pod's agent), their logs already in the bundle: the next
    /// step is numbered after them, and each is reported.
    pub(crate) fn ran_elsewhere(&self, steps: &[Step]) {
        for step in steps {
            (self.next).fetch_max(step.index.saturating_add(1), Ordering::SeqCst);
            self.progress.step_finished(step);
        }
    }

    /// The index the next step will take.
    pub(crate) fn next_index(&self) -> u32 {
        self.next.load(Ordering::SeqCst)
    }

    /// Before a wave whose steps are numbered from `first`: removes the step logs
    /// numbered from `first` on, which a wave cut short (a killed runner) left in the
    /// bundle under numbers its runs will not take again.
    ///
    /// Errors: [`RoundError::Io`] naming the directory or the log that cannot be
    /// listed or removed.
    pub(crate) fn forget_from(&self, first: u32) -> Result<(), RoundError> {
        let dir = self.bundle.join(STEP_LOGS);
        let listing = match fs::read_dir(&dir) {
            Ok(listing) => listing,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io("listing", &dir)(e)),
        };
        for entry in listing {
            let entry = entry.map_err(io("listing", &dir))?;
            let name = entry.file_name();
            let index = (name.to_str())
                .and_then(|n| n.split_once('-'))
                .and_then(|(n, _)| n.parse::<u32>().ok());
            if index.is_some_and(|i| i >= first) {
                let path = entry.path();
                fs::remove_file(&path).map_err(io("removing", &path))?;
            }
        }
        Ok(())
    }

    /// After a wave whose runs ran at once and took the indices from `first` on in the
    /// order their steps started: numbers `steps` (the wave's, in journal order) from
    /// `first` in that order, each log renamed to its new number, so the receipt's steps
    /// stay numbered in order. The logs move through `staging` (in `.work`): no log of
    /// the wave overwrites another, and a kill half-way leaves nothing in the bundle
    /// that [`Steps::forget_from`] does not remove.
    ///
    /// Errors: [`RoundError::Io`] naming the log that cannot be moved.
    pub(crate) fn renumber<'s>(
        &self,
        first: u32,
        steps: impl IntoIterator<Item = &'s mut Step>,
        staging: &std::path::Path,
    ) -> Result<(), RoundError> {
        fs::create_dir_all(staging).map_err(io("creating", staging))?;
        let mut moves = Vec::new();
        for (step, index) in steps.into_iter().zip(first..) {
            let Some(log) = step.log.take() else {
                step.index = index;
                continue;
            };
            let name = log
                .strip_prefix(STEP_LOGS)
                .unwrap_or(&log)
                .trim_start_matches('/');
            let stem = name.split_once('-').map_or(name, |(_, stem)| stem);
            let staged = staging.join(name);
            let from = self.bundle.join(&log);
            fs::rename(&from, &staged).map_err(io("moving the step log", &from))?;
            let renamed = format!("{STEP_LOGS}/{index:02}-{stem}");
            step.index = index;
            step.log = Some(renamed.clone());
            moves.push((staged, self.bundle.join(renamed)));
        }
        for (staged, to) in moves {
            fs::rename(&staged, &to).map_err(io("moving the step log", &staged))?;
        }
        Ok(())
    }

    /// A step that did not run.
    ///
    /// Errors: as [`Steps::finish`].
    pub(crate) fn skipped(
        &self,
        group: &str,
        name: &str,
        phase: Phase,
    ) -> Result<Step, RoundError> {
        let step = self.begin(group, name, phase);
        self.finish(step, StepStatus::Skipped)
    }

    /// The file-name form of a step's name: an entry's step is named by the entry's slug
    /// (`candidate-2-miner-b-running-sla`), any other by its name
    /// (`drawing-seeds-and-opening-the-round`).
    fn stem(&self, step: &StepRun) -> String {
        let planned = self.entries.iter().find(|e| e.group == step.group);
        match (planned, step.name.strip_prefix(step.group.as_str())) {
            (Some(planned), Some(rest)) => format!("{}-{}", planned.slug, slugify(rest)),
            _ => slugify(&step.name),
        }
    }
}

/// A step in progress: its log lines are written when it ends.
pub(crate) struct StepRun {
    index: u32,
    group: String,
    name: String,
    pub(crate) phase: Phase,
    started_at: Timestamp,
    lines: Vec<String>,
}

impl StepRun {
    /// Adds a line to the step's log.
    pub(crate) fn line(&mut self, text: &str) {
        self.lines.push(text.to_owned());
    }
}

/// A phase in the words of content/rounds.md: `running SLA`, `starting the engine`.
fn phase_words(phase: Phase) -> &'static str {
    match phase {
        Phase::Provisioning => "provisioning",
        Phase::Bootstrapping => "bootstrapping",
        Phase::PullingImage => "pulling the image",
        Phase::DownloadingModel => "downloading the model",
        Phase::StartingEngine => "starting the engine",
        Phase::RunningSla => "running SLA",
        Phase::RunningCorrectness => "running correctness",
        Phase::Scoring => "scoring",
        Phase::Teardown => "teardown",
    }
}

/// A probe's verdict in words: `pass`, `fail`, `invalid`.
pub(crate) fn verdict_words(verdict: ProbeVerdict) -> &'static str {
    match verdict {
        ProbeVerdict::Pass => "pass",
        ProbeVerdict::Fail => "fail",
        ProbeVerdict::Invalid => "invalid",
    }
}

/// How a measurement ended, in words: `measured`, `SLA unmet (no passing rate)`,
/// `invalid (run 1 probe 3: the client's send lag exceeded the bound)`.
pub(crate) fn outcome_words(outcome: MeasurementOutcome) -> String {
    match outcome {
        MeasurementOutcome::Measured => "measured".to_owned(),
        MeasurementOutcome::SlaUnmet {
            reason: SlaUnmetReason::NoPassingRate,
        } => "SLA unmet (no passing rate)".to_owned(),
        MeasurementOutcome::SlaUnmet {
            reason: SlaUnmetReason::DeadlineExpired,
        } => "SLA unmet (the entry's deadline expired)".to_owned(),
        MeasurementOutcome::SlaUnmet {
            reason: SlaUnmetReason::Unreachable,
        } => "SLA unmet (unreachable: connections refused or reset)".to_owned(),
        MeasurementOutcome::Invalid { run, probe } => {
            format!("invalid (run {run} probe {probe}: the client's send lag exceeded the bound)")
        }
    }
}

/// `Candidate 2 of 5, running SLA` → `candidate-2-of-5-running-sla`.
fn slugify(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: step logs printed Rust debug names (`RunningSla`, `Ok`, `Measured`,
    /// `SlaUnmet { reason: NoPassingRate }`).
    #[test]
    fn step_logs_speak_plain_words() {
        assert_eq!(phase_words(Phase::RunningSla), "running SLA");
        assert_eq!(phase_words(Phase::StartingEngine), "starting the engine");
        assert_eq!(StepStatus::Failed.as_str(), "failed");
        assert_eq!(verdict_words(ProbeVerdict::Pass), "pass");
        assert_eq!(verdict_words(ProbeVerdict::Fail), "fail");
        assert_eq!(verdict_words(ProbeVerdict::Invalid), "invalid");
        assert_eq!(outcome_words(MeasurementOutcome::Measured), "measured");
        assert_eq!(
            outcome_words(MeasurementOutcome::SlaUnmet {
                reason: SlaUnmetReason::NoPassingRate
            }),
            "SLA unmet (no passing rate)"
        );
        let invalid = outcome_words(MeasurementOutcome::Invalid { run: 1, probe: 3 });
        assert!(invalid.starts_with("invalid (run 1 probe 3"), "{invalid}");
    }

    #[test]
    fn step_names_become_file_names() {
        assert_eq!(
            slugify("Candidate 2 of 5, running SLA"),
            "candidate-2-of-5-running-sla"
        );
        assert_eq!(
            slugify("Scorer, running the shared scorer"),
            "scorer-running-the-shared-scorer"
        );
    }
}
