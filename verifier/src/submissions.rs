//! A campaign's submission records against the pipeline's transition table and the
//! sealed rounds (content/verifying.md, Submission records). The records
//! (`<campaign>/submissions/<sha256>.json`) are the evaluator's own, unsigned: their
//! checks go into a report of their own, for the `submissions/` directory, never into a
//! round bundle's. Per record:
//!
//! - `submissions.record`: it parses, is named for its `sha256`, names the campaign it
//!   lies in; once past `fetched`, its commitment is its sha256 and the stored diff
//!   `<sha256>.diff` hashes to it with `sizeBytes` bytes.
//! - `submissions.transitions`: the event log walks the transition table of
//!   [`PipelineState::can_move_to`] (content/submitting.md, The pipeline) from
//!   `committed`; a gate exactly on `rejected`; a round exactly on `round_assigned`,
//!   `scored`, `disqualified` and `infra_failed`, each outcome the round of the
//!   assignment before it and every assignment a later round than the one before;
//!   no event dated before the one before it (duplicates and superseded traces
//!   included); `state` the last move's and `requeues` at most 1.
//! - `submissions.rounds`: each round an event names has a receipt that seated the
//!   submission as a challenger with the record's miner (a `round_assigned` to the round
//!   in progress, `.work/round-<n>/`, aside); each outcome is the state its entry's
//!   status gives and comes after the round's `endedAt`; after `infra_failed` the requeue
//!   is the rule's (content/rounds.md, What happens to each entry: without using the
//!   one requeue when the round did not count, else once); `requeues` counts the charged
//!   ones; every round seating it as a challenger has its `round_assigned`, every round
//!   seating it as the incumbent finds it `scored` by an earlier round; and a submission
//!   `bench_queued` when a round that seats challengers started was seated in it. A
//!   challenger of a receipt without a record fails with the round's entry as target.
//! - `submissions.image` (only for a record some sealed round ran in a Docker
//!   container): every such entry, challenger or incumbent, ran the image the record
//!   holds (`engine.docker.imageId` = `image.imageId`; content/docker.md).
//! - `submissions.manifest` and `submissions.queue` (records of a repository campaign):
//!   [`crate::repository`].
//! - `submissions.review` (only for a repository record with a review): [`crate::review`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::{CheckName, FailureReason, VerifyReport};
use receipts::fsutil::read_limited;
use receipts::keys::Keyring;
use receipts::model::{
    EntryStatus, EventKind, PipelineState, Role, RoundKindRecord, RoundRecord, RoundStatus,
    Sha256Hex, Submission, SubmissionImage, Timestamp,
};

use crate::files::{MAX_ARTIFACT_BYTES, read_json, recomputed, same, show};

/// The directory of a campaign's submission records.
pub(crate) const SUBMISSIONS_DIR: &str = "submissions";

/// One sealed round of the campaign: its bundle's directory and its record.
pub(crate) struct SealedRound<'a> {
    /// The bundle directory (`<campaign>/rounds/<n>`).
    pub bundle: &'a Path,
    /// Its round record.
    pub record: &'a RoundRecord,
}

/// Checks every record of `<campaign_dir>/submissions/` against the table and `rounds`
/// (the campaign's sealed rounds, any order; a round number held twice is taken from its
/// first bundle), a review's resolution against `keyring`'s evaluator keys. Returns the report of the `submissions/` directory. Never fails: an
/// unreadable directory or record is a failed `submissions.record`.
pub(crate) fn check_submissions(
    campaign_dir: &Path,
    rounds: &[SealedRound<'_>],
    keyring: &Keyring,
) -> VerifyReport {
    let dir = campaign_dir.join(SUBMISSIONS_DIR);
    let mut report = VerifyReport::new(&dir);
    let mut sealed: BTreeMap<u64, &SealedRound<'_>> = BTreeMap::new();
    for round in rounds {
        sealed.entry(round.record.round).or_insert(round);
    }
    let campaign = Campaign {
        dir: campaign_dir,
        id: campaign_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        rounds: sealed,
    };
    let names = match record_names(&dir) {
        Ok(names) => names,
        Err(message) => {
            report.fail(
                CheckName::SubmissionRecord,
                Some(SUBMISSIONS_DIR.to_owned()),
                FailureReason::ArtifactUnreadable {
                    file: SUBMISSIONS_DIR.to_owned(),
                    message,
                },
            );
            return report;
        }
    };
    let repositories = crate::repository::RepositoryCampaign::load(campaign_dir);
    let mut held = BTreeSet::new();
    let mut reviewed = Vec::new();
    for name in names {
        let file = format!("{SUBMISSIONS_DIR}/{name}");
        let target = Some(file.clone());
        let submission = match read_json::<Submission>(campaign_dir, &file) {
            Ok(submission) => submission,
            Err(reason) => {
                report.fail(CheckName::SubmissionRecord, target, reason);
                report.not_run(
                    &[
                        CheckName::SubmissionTransitions,
                        CheckName::SubmissionRounds,
                    ],
                    CheckName::SubmissionRecord,
                );
                continue;
            }
        };
        held.insert(submission.sha256);
        let result = campaign.check_record(&file, &name, &submission);
        report.record(CheckName::SubmissionRecord, target.clone(), result);
        let result = check_transitions(&file, &submission);
        report.record(CheckName::SubmissionTransitions, target.clone(), result);
        let result = campaign.check_rounds(&file, &submission);
        report.record(CheckName::SubmissionRounds, target.clone(), result);
        if let Some(result) = crate::repository::check_manifest(campaign_dir, &file, &submission) {
            report.record(CheckName::SubmissionManifest, target.clone(), result);
        }
        if let Some(result) = (repositories.as_ref())
            .and_then(|r| crate::repository::check_queue(r, &file, &submission))
        {
            report.record(CheckName::SubmissionQueue, target.clone(), result);
        }
        let runs = campaign.container_runs(&submission);
        if !runs.is_empty() {
            let result = check_image(&file, &submission, &runs);
            report.record(CheckName::SubmissionImage, target, result);
        }
        reviewed.push((file, submission));
    }
    crate::review::check_reviews(&mut report, campaign_dir, keyring, &reviewed);
    campaign.check_every_challenger_has_a_record(&mut report, &held);
    report
}

/// The `*.json` file names of `dir`, sorted.
fn record_names(dir: &Path) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| e.to_string())? {
        let name = entry.map_err(|e| e.to_string())?.file_name();
        let name = name.to_string_lossy();
        if name.ends_with(".json") {
            names.push(name.into_owned());
        }
    }
    names.sort();
    Ok(names)
}

/// The campaign the records lie in.
struct Campaign<'a> {
    /// `<campaign>/`.
    dir: &'a Path,
    /// Its id: the directory's name.
    id: String,
    /// Its sealed rounds by number.
    rounds: BTreeMap<u64, &'a SealedRound<'a>>,
}

/// A transition of a record's log: its place in `events`, where it went, and the round
/// it names.
struct Move {
    index: usize,
    at: Timestamp,
    to: PipelineState,
    round: Option<u64>,
}

/// The transitions of `submission`, in order.
fn moves(submission: &Submission) -> Vec<Move> {
    submission
        .events
        .iter()
        .enumerate()
        .filter_map(|(index, event)| match &event.kind {
            EventKind::Transition { to, round, .. } => Some(Move {
                index,
                at: event.at,
                to: *to,
                round: *round,
            }),
            EventKind::Duplicate { .. } | EventKind::Superseded { .. } => None,
        })
        .collect()
}

/// Whether a move to `state` names its round (content/submitting.md: round outcomes and
/// the seat carry the round number).
fn names_round(state: PipelineState) -> bool {
    matches!(
        state,
        PipelineState::RoundAssigned
            | PipelineState::Scored
            | PipelineState::Disqualified
            | PipelineState::InfraFailed
    )
}

/// The pipeline state an entry's status moves its challenger's submission to
/// (content/rounds.md, What happens to each entry).
fn outcome_state(status: EntryStatus) -> PipelineState {
    match status {
        EntryStatus::Scored => PipelineState::Scored,
        EntryStatus::Disqualified => PipelineState::Disqualified,
        EntryStatus::InfraFailed => PipelineState::InfraFailed,
    }
}

/// A transition rendered: `scored (round 1)`.
fn show_move(to: PipelineState, round: Option<u64>) -> String {
    match round {
        Some(n) => format!("{to} (round {n})"),
        None => to.to_string(),
    }
}

/// `submissions.transitions` of `submission`, the record in `file`.
fn check_transitions(file: &str, submission: &Submission) -> Result<(), FailureReason> {
    let moves = moves(submission);
    let Some(first) = moves.first() else {
        return Err(recomputed(
            file,
            "events",
            "no transition",
            "committed first",
        ));
    };
    if first.to != PipelineState::Committed {
        return Err(recomputed(
            file,
            format!("events[{}].to", first.index),
            first.to,
            "committed (a record starts committed)",
        ));
    }
    // Every event (duplicates and superseded traces included) at or after the one
    // before it: the log is in the order things happened.
    for (index, pair) in submission.events.windows(2).enumerate() {
        if let [before, event] = pair
            && event.at < before.at
        {
            return Err(recomputed(
                file,
                format!("events[{}].at", index + 1),
                event.at,
                format!("at or after {} (events[{index}])", before.at),
            ));
        }
    }
    let mut assigned: Option<u64> = None;
    let mut requeue_moves = 0u32;
    for (i, m) in moves.iter().enumerate() {
        let field = |name: &str| format!("events[{}].{name}", m.index);
        if let Some(before) = i.checked_sub(1).and_then(|b| moves.get(b)) {
            let from = before.to;
            if !submission.allows(from, m.to) {
                let allowed: Vec<&str> = PipelineState::ALL
                    .iter()
                    .filter(|s| submission.allows(from, **s))
                    .map(PipelineState::as_str)
                    .collect();
                let allowed = if allowed.is_empty() {
                    format!("no move: `{from}` is final")
                } else {
                    format!("one of {} (the moves from `{from}`)", allowed.join(", "))
                };
                return Err(recomputed(
                    file,
                    field("to"),
                    format!("{from} → {}", m.to),
                    allowed,
                ));
            }
            if from == PipelineState::InfraFailed && m.to == PipelineState::BenchQueued {
                requeue_moves += 1;
            }
        }
        let gate = match &submission.events[m.index].kind {
            EventKind::Transition { gate, .. } => gate.map(|g| g.to_string()),
            EventKind::Duplicate { .. } | EventKind::Superseded { .. } => None,
        };
        if (m.to == PipelineState::Rejected) != gate.is_some() {
            let expected = if m.to == PipelineState::Rejected {
                "the gate that failed"
            } else {
                "none (only a rejection names a gate)"
            };
            return Err(recomputed(file, field("gate"), show(gate), expected));
        }
        match (names_round(m.to), m.round) {
            (true, None) => {
                return Err(recomputed(
                    file,
                    field("round"),
                    "none",
                    "the round's number",
                ));
            }
            (false, Some(n)) => {
                return Err(recomputed(
                    file,
                    field("round"),
                    n,
                    format!("none (a move to `{}` names no round)", m.to),
                ));
            }
            (true, Some(n)) if m.to == PipelineState::RoundAssigned => {
                if let Some(before) = assigned.filter(|b| n <= *b) {
                    return Err(recomputed(
                        file,
                        field("round"),
                        n,
                        format!("a round after round {before}, the one assigned before"),
                    ));
                }
                assigned = Some(n);
            }
            (true, Some(n)) => {
                if assigned != Some(n) {
                    return Err(recomputed(
                        file,
                        field("round"),
                        n,
                        format!("{} (the round it was assigned)", show(assigned)),
                    ));
                }
            }
            (false, None) => {}
        }
    }
    let last = moves.last().map_or(PipelineState::Committed, |m| m.to);
    if submission.state != last {
        return Err(recomputed(file, "state", submission.state, last));
    }
    if submission.requeues > requeue_moves.min(1) {
        return Err(recomputed(
            file,
            "requeues",
            submission.requeues,
            format!(
                "at most {} ({requeue_moves} moves infra_failed → bench_queued, one requeue)",
                requeue_moves.min(1)
            ),
        ));
    }
    Ok(())
}

/// `submissions.image` of `submission`, the record in `file`, against `runs` (its
/// entries that ran in a Docker container, [`Campaign::container_runs`]): every one ran
/// the image its record holds (content/docker.md, Images by digest).
fn check_image(
    file: &str,
    submission: &Submission,
    runs: &[(String, u32, &str)],
) -> Result<(), FailureReason> {
    for (round, index, ran) in runs {
        let Some(image) = &submission.image else {
            return Err(recomputed(
                file,
                "image",
                "none",
                format!(
                    "the image `{round}` entries[{index}] ran ({ran}): a Docker entry runs the \
                     image `referee build` recorded"
                ),
            ));
        };
        if image.image_id != *ran {
            return Err(recomputed(
                file,
                "image.imageId",
                &image.image_id,
                format!("{ran} (`{round}` entries[{index}].engine.docker.imageId)"),
            ));
        }
    }
    Ok(())
}

impl Campaign<'_> {
    /// `submissions.record` of `submission`, read from the file `file` named `name`.
    fn check_record(
        &self,
        file: &str,
        name: &str,
        submission: &Submission,
    ) -> Result<(), FailureReason> {
        let expected_name = format!("{}.json", submission.sha256);
        if name != expected_name {
            return Err(recomputed(file, "sha256", submission.sha256, name));
        }
        if submission.campaign.as_str() != self.id {
            return Err(recomputed(file, "campaign", &submission.campaign, &self.id));
        }
        if let Some(image) = &submission.image
            && !SubmissionImage::is_image_id(&image.image_id)
        {
            return Err(recomputed(
                file,
                "image.imageId",
                &image.image_id,
                "sha256:<64 lowercase hex> (an image config id)",
            ));
        }
        let fetched = submission.events.iter().any(|e| {
            matches!(
                e.kind,
                EventKind::Transition {
                    to: PipelineState::Fetched,
                    ..
                }
            )
        });
        if !fetched {
            return Ok(());
        }
        if let Some(repository) = &submission.repository {
            // A repository's record is keyed by its commitment's bytes; what was fetched
            // is `submissions.manifest`'s.
            let key = Sha256Hex::digest(repository.commitment.as_bytes());
            return same(file, "sha256", &submission.sha256, &key);
        }
        if submission.commitment != submission.sha256 {
            return Err(recomputed(
                file,
                "commitment",
                submission.commitment,
                format!("{} (it passed `fetched`)", submission.sha256),
            ));
        }
        let diff = format!("{SUBMISSIONS_DIR}/{}.diff", submission.sha256);
        let bytes = read_limited(&self.dir.join(&diff), MAX_ARTIFACT_BYTES).map_err(|e| {
            FailureReason::ArtifactUnreadable {
                file: diff.clone(),
                message: e.to_string(),
            }
        })?;
        let actual = Sha256Hex::digest(&bytes);
        if actual != submission.sha256 {
            return Err(recomputed(
                file,
                "sha256",
                submission.sha256,
                format!("{actual} (the sha256 of `{diff}`)"),
            ));
        }
        if submission.size_bytes != bytes.len() as u64 {
            return Err(recomputed(
                file,
                "sizeBytes",
                submission.size_bytes,
                format!("{} (the size of `{diff}`)", bytes.len()),
            ));
        }
        Ok(())
    }

    /// The bundle directory of round `n`, relative to the campaign (`rounds/<n>`).
    fn round_name(&self, round: &SealedRound<'_>) -> String {
        round
            .bundle
            .strip_prefix(self.dir)
            .unwrap_or(round.bundle)
            .display()
            .to_string()
    }

    /// Whether round `n` is the one in progress: the round after the last sealed one,
    /// with its work directory `.work/round-<n>/` present.
    fn in_progress(&self, n: u64) -> bool {
        let next = self.rounds.keys().next_back().map_or(1, |last| last + 1);
        n == next && self.dir.join(format!(".work/round-{n}")).is_dir()
    }

    /// The entries of the sealed rounds that ran `submission` in a Docker container, as
    /// the challenger or the incumbent: `(round bundle, entry index, image id)`.
    fn container_runs(&self, submission: &Submission) -> Vec<(String, u32, &str)> {
        self.rounds
            .values()
            .flat_map(|round| {
                round.record.entries.iter().filter_map(move |e| {
                    let docker = e.engine.docker.as_ref()?;
                    (e.role != Role::Baseline && e.patch.as_ref() == Some(&submission.sha256))
                        .then(|| (self.round_name(round), e.index, docker.image_id.as_str()))
                })
            })
            .collect()
    }

    /// `submissions.rounds` of `submission`, the record in `file`.
    fn check_rounds(&self, file: &str, submission: &Submission) -> Result<(), FailureReason> {
        let moves = moves(submission);
        let mut charged = 0u32;
        for (i, m) in moves.iter().enumerate() {
            let Some(n) = m.round else {
                continue;
            };
            let field = |name: &str| format!("events[{}].{name}", m.index);
            let Some(round) = self.rounds.get(&n) else {
                let last = i + 1 == moves.len();
                if m.to == PipelineState::RoundAssigned && last && self.in_progress(n) {
                    continue;
                }
                let sealed: Vec<String> = self.rounds.keys().map(u64::to_string).collect();
                return Err(recomputed(
                    file,
                    field("round"),
                    n,
                    format!(
                        "a sealed round (receipts: {}), or the round in progress",
                        if sealed.is_empty() {
                            "none".to_owned()
                        } else {
                            sealed.join(", ")
                        }
                    ),
                ));
            };
            let name = self.round_name(round);
            let seat = round.record.entries.iter().find(|e| {
                e.role == Role::Challenger && e.patch.as_ref() == Some(&submission.sha256)
            });
            let Some(entry) = seat else {
                return Err(recomputed(
                    file,
                    format!("events[{}]", m.index),
                    show_move(m.to, m.round),
                    format!(
                        "no seat: `{name}` seats no challenger with patch {}",
                        submission.sha256.short()
                    ),
                ));
            };
            if entry.miner.as_ref() != Some(&submission.miner) {
                return Err(recomputed(
                    file,
                    "miner",
                    &submission.miner,
                    format!(
                        "{} (`{name}` entries[{}])",
                        show(entry.miner.as_ref()),
                        entry.index
                    ),
                ));
            }
            if m.to == PipelineState::RoundAssigned {
                continue;
            }
            let expected = outcome_state(entry.status);
            if m.to != expected {
                return Err(recomputed(
                    file,
                    field("to"),
                    m.to,
                    format!(
                        "{expected} (`{name}` entries[{}] is {expected})",
                        entry.index
                    ),
                ));
            }
            if m.at < round.record.ended_at {
                return Err(recomputed(
                    file,
                    field("at"),
                    m.at,
                    format!("at or after {} (`{name}` endedAt)", round.record.ended_at),
                ));
            }
            if m.to == PipelineState::InfraFailed {
                let next = moves.get(i + 1);
                let counted = round.record.outcome.status == RoundStatus::Complete;
                let requeued = !counted || charged == 0;
                let expected = if !counted {
                    format!(
                        "bench_queued (round {n} did not count: requeued without using the one requeue)"
                    )
                } else if requeued {
                    format!("bench_queued (requeued once after round {n})")
                } else {
                    "none (its one requeue is spent: infra_failed is final)".to_owned()
                };
                let found = next.map(|next| (next.index, next.to));
                let ok = match found {
                    Some((_, PipelineState::BenchQueued)) => requeued,
                    None => !requeued,
                    Some(_) => false,
                };
                if !ok {
                    let at = found.map_or(m.index + 1, |(index, _)| index);
                    let claimed = found.map_or_else(|| "none".to_owned(), |(_, to)| to.to_string());
                    return Err(recomputed(
                        file,
                        format!("events[{at}].to"),
                        claimed,
                        expected,
                    ));
                }
                if counted && requeued {
                    charged += 1;
                }
            }
        }
        // Every round named is sealed here (or the round in progress, which moved
        // nothing yet): the charged requeues are all counted.
        if submission.requeues != charged {
            return Err(recomputed(
                file,
                "requeues",
                submission.requeues,
                format!("{charged} (requeues after rounds that counted)"),
            ));
        }
        self.check_seats(file, submission, &moves)
    }

    /// The rounds' side of `submissions.rounds` for `submission`: each round seating it
    /// as a challenger has its `round_assigned`; each seating it as the incumbent finds it
    /// `scored` by an earlier round; each round that seats challengers and started while
    /// it was `bench_queued` seated it.
    fn check_seats(
        &self,
        file: &str,
        submission: &Submission,
        moves: &[Move],
    ) -> Result<(), FailureReason> {
        let assigned = |n: u64| {
            moves
                .iter()
                .any(|m| m.to == PipelineState::RoundAssigned && m.round == Some(n))
        };
        for (&n, round) in &self.rounds {
            let name = self.round_name(round);
            // A confirmation or re-measurement round seats no one from the queue
            // (content/title.md): its challengers keep their records as they were.
            let from_queue = takes_from_queue(round.record);
            let seat = round
                .record
                .entries
                .iter()
                .find(|e| e.patch.as_ref() == Some(&submission.sha256));
            match seat.map(|e| (e.role, e.index)) {
                Some((Role::Challenger, index)) if from_queue && !assigned(n) => {
                    return Err(recomputed(
                        file,
                        "events",
                        format!("no round_assigned (round {n})"),
                        format!("round_assigned (round {n}): `{name}` entries[{index}] seats it"),
                    ));
                }
                Some((Role::Incumbent, index)) => {
                    let won = moves
                        .iter()
                        .any(|m| m.to == PipelineState::Scored && m.round.is_some_and(|k| k < n));
                    if !won || submission.state != PipelineState::Scored {
                        return Err(recomputed(
                            file,
                            "state",
                            submission.state,
                            format!(
                                "scored by a round before {n} (`{name}` entries[{index}] seats it as the incumbent)"
                            ),
                        ));
                    }
                }
                _ => {}
            }
            let seats_challengers = round.record.outcome.remeasure.is_none() && from_queue;
            let state_at_start = moves
                .iter()
                .take_while(|m| m.at <= round.record.started_at)
                .last()
                .map(|m| m.to);
            if seats_challengers
                && state_at_start == Some(PipelineState::BenchQueued)
                && seat.is_none()
            {
                return Err(recomputed(
                    file,
                    "events",
                    format!("bench_queued at {} and not seated", round.record.started_at),
                    format!(
                        "round_assigned (round {n}): `{name}` started then and seats every queued submission"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `submissions.rounds` for the receipts' side: every challenger a sealed round seats
    /// has a record among `held` (the sha256 of every record read).
    fn check_every_challenger_has_a_record(
        &self,
        report: &mut VerifyReport,
        held: &BTreeSet<Sha256Hex>,
    ) {
        for round in self.rounds.values() {
            let name = self.round_name(round);
            for entry in &round.record.entries {
                let Some(patch) = entry
                    .patch
                    .as_ref()
                    .filter(|_| entry.role == Role::Challenger)
                else {
                    continue;
                };
                if held.contains(patch) {
                    continue;
                }
                let file = format!("{SUBMISSIONS_DIR}/{patch}.json");
                report.fail(
                    CheckName::SubmissionRounds,
                    Some(format!("{name} entries[{}]", entry.index)),
                    recomputed(
                        &file,
                        "file",
                        "absent",
                        format!(
                            "the record of `{name}` entries[{}] (challenger {})",
                            entry.index,
                            show(entry.miner.as_ref())
                        ),
                    ),
                );
            }
        }
    }
}

/// Whether `record`'s challengers came from the queue: a regular round's do; a
/// confirmation's or re-measurement's (content/title.md) are earlier rounds' entries.
pub(crate) fn takes_from_queue(record: &RoundRecord) -> bool {
    matches!(record.kind, None | Some(RoundKindRecord::Regular))
}
