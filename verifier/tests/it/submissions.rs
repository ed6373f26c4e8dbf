//! A campaign's submission records against the transition table and the sealed rounds
//! (content/verifying.md, Submission records): a data directory of the fixture's round 1
//! (challenger `fast`, scored, in a complete round) with the records the runner would
//! have written, then each record edited the way an evaluator could edit its own
//! unsigned files; each edit fails the check named, recomputed against claimed.

use std::path::Path;

use crate::forge::*;
use serde_json::{Value, json};
use verifier::archive::{DataReports, find_bundles, verify_data};
use verifier::{CheckName, FailureReason, VerifyOptions, VerifyReport};

/// The fixture's challenger patch, miner and diff.
const PATCH: &str = "f98bb8888a2454cec792fdb3057f7a3f604e2afd317a4b644b9913f86e318dfc";
const MINER: &str = "fast";

/// A record file's name in a report's targets.
fn record_file(sha256: &str) -> String {
    format!("submissions/{sha256}.json")
}

/// A transition event.
fn to(at: &str, state: &str) -> Value {
    json!({"at": at, "kind": "transition", "to": state, "reason": state})
}

/// A round transition event.
fn to_round(at: &str, state: &str, round: u64) -> Value {
    json!({"at": at, "kind": "transition", "to": state, "round": round, "reason": state})
}

/// The gates' walk from `committed` to `bench_queued`, at 22:12:41.<i>Z.
fn through_the_gates() -> Vec<Value> {
    [
        "committed",
        "picked_up",
        "fetched",
        "verified",
        "surface_ok",
        "applied",
        "building",
        "built",
        "bench_queued",
    ]
    .iter()
    .enumerate()
    .map(|(i, state)| to(&format!("2026-12-01T22:12:41.{i}Z"), state))
    .collect()
}

/// The honest record of the fixture's challenger: through the gates, seated in round 1
/// (it started at 22:12:43.60236Z), scored after it ended (22:12:46.807363Z).
fn scored_record() -> Value {
    let mut events = through_the_gates();
    events.push(to_round("2026-12-01T22:12:43.7Z", "round_assigned", 1));
    events.push(to_round("2026-12-01T22:12:46.9Z", "scored", 1));
    record(PATCH, MINER, "scored", events)
}

/// A record of `sha256` by `miner` in `state` with `events`.
fn record(sha256: &str, miner: &str, state: &str, events: Vec<Value>) -> Value {
    json!({
        "sha256": sha256,
        "campaign": "tiny",
        "miner": miner,
        "commitment": sha256,
        "sizeBytes": 274,
        "state": state,
        "requeues": 0,
        "events": events,
    })
}

/// The fixture sealed as `data/tiny/rounds/1` (its receipt edited by `receipt`) with the
/// challenger's record (edited by `edit`) and diff under `data/tiny/submissions/`.
fn data_dir(data: &Path, receipt: impl FnOnce(&mut Value), edit: impl FnOnce(&mut Value)) {
    forge_into(&data.join("tiny/rounds/1"), |_| {}, |_| {}, receipt);
    let submissions = data.join("tiny/submissions");
    std::fs::create_dir_all(&submissions).expect("mkdir");
    let diff = format!("{PATCH}.diff");
    std::fs::copy(
        fixture().join("inputs/patches").join(&diff),
        submissions.join(&diff),
    )
    .expect("diff");
    let mut value = scored_record();
    edit(&mut value);
    write_record(data, &value);
}

/// Writes `value` as `data/tiny/submissions/<its sha256>.json`.
fn write_record(data: &Path, value: &Value) {
    let sha = value["sha256"].as_str().expect("sha256");
    let path = data.join("tiny/submissions").join(format!("{sha}.json"));
    std::fs::write(path, serde_json::to_vec_pretty(value).expect("json")).expect("write");
}

/// Every bundle under `data` and its campaigns' records, verified.
fn verify_all(data: &Path) -> DataReports {
    let bundles = find_bundles(data).expect("bundles");
    verify_data(&bundles, &[], &keyring(), &VerifyOptions::default(), &|| {})
}

/// The one campaign's submissions report of `data`.
fn submissions(data: &Path) -> VerifyReport {
    let mut reports = verify_all(data);
    assert_eq!(reports.submissions.len(), 1);
    reports.submissions.remove(0)
}

/// Asserts that exactly one check of `report` failed, `name` for `target`, and returns
/// its reason.
fn only_failure(report: &VerifyReport, name: CheckName, target: &str) -> FailureReason {
    let failures = failures(report);
    assert_eq!(failures.len(), 1, "{failures:#?}");
    let (check, at, reason) = failures.into_iter().next().expect("one");
    assert_eq!((check, at.as_deref()), (name, Some(target)));
    reason
}

#[test]
fn the_records_of_a_sealed_round_pass() {
    let data = tempfile::tempdir().expect("tempdir");
    data_dir(data.path(), |_| {}, |_| {});
    // A diff rejected at a gate, and one queued after round 1 started: neither seated.
    let (rejected, mut rejected_record) = queued(data.path(), b'r', 41);
    let events = rejected_record["events"].as_array_mut().expect("events");
    events.truncate(4);
    events.push(
        json!({"at": "2026-12-01T22:12:42Z", "kind": "transition", "to": "rejected",
        "gate": "surface_ok", "reason": "surface_ok: `.git/x`"}),
    );
    rejected_record["state"] = json!("rejected");
    write_record(data.path(), &rejected_record);
    let queued = "2".repeat(64);
    let late: Vec<Value> = ["committed", "picked_up"]
        .iter()
        .map(|s| to("2026-12-01T22:12:50Z", s))
        .collect();
    write_record(data.path(), &record(&queued, "later", "picked_up", late));

    let reports = verify_all(data.path());
    assert!(reports.bundles.iter().all(VerifyReport::passed));
    let report = &reports.submissions[0];
    assert_eq!(report.bundle, data.path().join("tiny/submissions"));
    assert_eq!(failures(report), vec![]);
    let checks: Vec<(&str, String)> = report
        .checks
        .iter()
        .map(|c| (c.name.as_str(), c.target.clone().expect("target")))
        .collect();
    let mut expected = Vec::new();
    let mut shas = [rejected.as_str(), queued.as_str(), PATCH];
    shas.sort_unstable();
    for sha in shas {
        for name in [
            "submissions.record",
            "submissions.transitions",
            "submissions.rounds",
        ] {
            expected.push((name, record_file(sha)));
        }
    }
    expected.push(("title.chain", "rounds".to_owned()));
    assert_eq!(checks, expected);
}

#[test]
fn a_stored_diff_that_is_not_the_sha256_fails_submissions_record() {
    // The record went past `fetched`: its stored diff must hash to its sha256.
    let data = tempfile::tempdir().expect("tempdir");
    data_dir(data.path(), |_| {}, |_| {});
    std::fs::write(
        data.path().join(format!("tiny/submissions/{PATCH}.diff")),
        b"another diff",
    )
    .expect("diff");
    let reason = only_failure(
        &submissions(data.path()),
        CheckName::SubmissionRecord,
        &record_file(PATCH),
    );
    assert_eq!(
        reason,
        recomputed(
            &record_file(PATCH),
            "sha256",
            PATCH,
            &format!(
                "{} (the sha256 of `submissions/{PATCH}.diff`)",
                receipts::model::Sha256Hex::digest(b"another diff")
            ),
        )
    );
}

#[test]
fn an_image_id_that_is_not_a_config_id_fails_submissions_record() {
    let data = tempfile::tempdir().expect("tempdir");
    data_dir(data.path(), |_| {}, |record| built(record, "sha256:ABC"));
    let reason = only_failure(
        &submissions(data.path()),
        CheckName::SubmissionRecord,
        &record_file(PATCH),
    );
    assert_eq!(
        reason,
        recomputed(
            &record_file(PATCH),
            "image.imageId",
            "sha256:ABC",
            "sha256:<64 lowercase hex> (an image config id)",
        )
    );
}

/// The image `sha256:<c × 64>`.
fn image_id(c: char) -> String {
    format!("sha256:{}", c.to_string().repeat(64))
}

/// The challenger's receipt entry as a Docker container run of image `id`.
fn ran_in_container(receipt: &mut Value, id: &str) {
    let run = receipts::model::DockerRun {
        image_reference: format!("referee/tiny:{PATCH}"),
        manifest_digest: None,
        image_id: id.to_owned(),
        daemon_version: "20.10.24+dfsg1".into(),
        api_version: "1.41".into(),
        memory_bytes: 256 << 20,
        cpuset_cpus: String::new(),
        gpus: Vec::new(),
        read_only_root: true,
        init: true,
        unprivileged: true,
        network: "referee-net".into(),
        network_internal: true,
        tmpfs: std::collections::BTreeMap::new(),
        binds: Vec::new(),
        env_names: Vec::new(),
    };
    receipt["entries"][1]["engine"]["docker"] = serde_json::to_value(run).expect("json");
}

/// The record's built image, with image id `id`.
fn built(record: &mut Value, id: &str) {
    record["image"] = json!({
        "tag": format!("referee/tiny:{PATCH}"),
        "imageId": id,
        "buildLogSha256": "0".repeat(64),
    });
}

#[test]
fn a_container_that_ran_the_records_image_passes_submissions_image() {
    let data = tempfile::tempdir().expect("tempdir");
    data_dir(
        data.path(),
        |p| ran_in_container(p, &image_id('a')),
        |r| built(r, &image_id('a')),
    );
    let report = submissions(data.path());
    assert_eq!(failures(&report), vec![]);
    let image: Vec<Option<String>> = report
        .checks
        .iter()
        .filter(|c| c.name == CheckName::SubmissionImage)
        .map(|c| c.target.clone())
        .collect();
    assert_eq!(image, [Some(record_file(PATCH))]);
}

#[test]
fn a_container_that_ran_another_image_fails_submissions_image() {
    let data = tempfile::tempdir().expect("tempdir");
    data_dir(
        data.path(),
        |p| ran_in_container(p, &image_id('b')),
        |r| built(r, &image_id('a')),
    );
    let reason = only_failure(
        &submissions(data.path()),
        CheckName::SubmissionImage,
        &record_file(PATCH),
    );
    assert_eq!(
        reason,
        recomputed(
            &record_file(PATCH),
            "image.imageId",
            &image_id('a'),
            &format!(
                "{} (`rounds/1` entries[1].engine.docker.imageId)",
                image_id('b')
            ),
        )
    );
    // A record with no image at all, for an entry that ran a container.
    let data = tempfile::tempdir().expect("tempdir");
    data_dir(data.path(), |p| ran_in_container(p, &image_id('b')), |_| {});
    let reason = only_failure(
        &submissions(data.path()),
        CheckName::SubmissionImage,
        &record_file(PATCH),
    );
    assert_eq!(
        reason,
        recomputed(
            &record_file(PATCH),
            "image",
            "none",
            &format!(
                "the image `rounds/1` entries[1] ran ({}): a Docker entry runs the image \
                 `referee build` recorded",
                image_id('b')
            ),
        )
    );
}

/// The `submissions.transitions` failure of the patch's record with events `i` and `i + 1`
/// swapped (and re-dated in their new order, so only the order of states is wrong).
fn transitions_failure_with_events_swapped(i: usize) -> FailureReason {
    let data = tempfile::tempdir().expect("tempdir");
    data_dir(
        data.path(),
        |_| {},
        |r| {
            let events = r["events"].as_array_mut().expect("events");
            events.swap(i, i + 1);
            events[i]["at"] = json!(format!("2026-12-01T22:12:41.{i}Z"));
            events[i + 1]["at"] = json!(format!("2026-12-01T22:12:41.{}Z", i + 1));
        },
    );
    only_failure(
        &submissions(data.path()),
        CheckName::SubmissionTransitions,
        &record_file(PATCH),
    )
}

#[test]
fn an_out_of_order_transition_fails_submissions_transitions() {
    // `fetched` moved before `picked_up`: the table has no `committed → fetched`.
    let reason = transitions_failure_with_events_swapped(1);
    assert_eq!(
        reason,
        recomputed(
            &record_file(PATCH),
            "events[1].to",
            "committed → fetched",
            "one of picked_up (the moves from `committed`)",
        )
    );
}

#[test]
fn applied_before_surface_ok_fails_submissions_transitions() {
    // The surface checks run before the apply: `verified → applied` is not a move.
    let reason = transitions_failure_with_events_swapped(4);
    assert_eq!(
        reason,
        recomputed(
            &record_file(PATCH),
            "events[4].to",
            "verified → applied",
            "one of surface_ok, rejected (the moves from `verified`)",
        )
    );
}

#[test]
fn an_event_earlier_than_its_predecessor_fails_submissions_transitions() {
    // A superseded trace dated before the commitment recorded ahead of it: no transition
    // goes back, but the log does.
    let data = tempfile::tempdir().expect("tempdir");
    data_dir(
        data.path(),
        |_| {},
        |r| {
            let events = r["events"].as_array_mut().expect("events");
            events.insert(
                1,
                json!({"at": "2026-12-01T22:00:00Z", "kind": "superseded", "miner": "someone",
                "commitment": "3".repeat(64), "committedAt": "2026-12-01T22:00:00Z",
                "reason": "an earlier commitment was not valid"}),
            );
        },
    );
    let reason = only_failure(
        &submissions(data.path()),
        CheckName::SubmissionTransitions,
        &record_file(PATCH),
    );
    assert_eq!(
        reason,
        recomputed(
            &record_file(PATCH),
            "events[1].at",
            "2026-12-01T22:00:00Z",
            "at or after 2026-12-01T22:12:41Z (events[0])",
        )
    );
}

#[test]
fn a_state_that_is_not_the_last_move_fails_submissions_transitions() {
    let data = tempfile::tempdir().expect("tempdir");
    data_dir(data.path(), |_| {}, |r| r["state"] = json!("bench_queued"));
    let reason = only_failure(
        &submissions(data.path()),
        CheckName::SubmissionTransitions,
        &record_file(PATCH),
    );
    assert_eq!(
        reason,
        recomputed(&record_file(PATCH), "state", "bench_queued", "scored")
    );
}

#[test]
fn a_round_no_receipt_has_fails_submissions_rounds() {
    // The record says round 2 scored it; the data directory holds round 1 only, and
    // round 1, which seated it, now lacks its round_assigned.
    let data = tempfile::tempdir().expect("tempdir");
    data_dir(
        data.path(),
        |_| {},
        |r| {
            r["events"][9]["round"] = json!(2);
            r["events"][10]["round"] = json!(2);
        },
    );
    let reason = only_failure(
        &submissions(data.path()),
        CheckName::SubmissionRounds,
        &record_file(PATCH),
    );
    assert_eq!(
        reason,
        recomputed(
            &record_file(PATCH),
            "events[9].round",
            "2",
            "a sealed round (receipts: 1), or the round in progress",
        )
    );
}

/// A second diff of 274 bytes of `byte`, stored in `data`, whose record walks the gates
/// at 22:12:`second`.<i>Z to `bench_queued`: its sha256 and its record.
fn queued(data: &Path, byte: u8, second: u32) -> (String, Value) {
    let diff = vec![byte; 274];
    let sha = receipts::model::Sha256Hex::digest(&diff).to_string();
    std::fs::write(data.join(format!("tiny/submissions/{sha}.diff")), &diff).expect("diff");
    let events = through_the_gates()
        .into_iter()
        .enumerate()
        .map(|(i, mut e)| {
            e["at"] = json!(format!("2026-12-01T22:12:{second}.{i}Z"));
            e
        })
        .collect();
    let value = record(&sha, "later", "bench_queued", events);
    (sha, value)
}

#[test]
fn the_round_in_progress_may_hold_an_assignment() {
    // Round 2 is being run (`.work/round-2/`): a record still `round_assigned` to it
    // passes; without the work directory it names a round that does not exist.
    let data = tempfile::tempdir().expect("tempdir");
    data_dir(data.path(), |_| {}, |_| {});
    let (sha, mut value) = queued(data.path(), b'x', 50);
    value["events"]
        .as_array_mut()
        .expect("events")
        .push(to_round("2026-12-01T22:13:00Z", "round_assigned", 2));
    value["state"] = json!("round_assigned");
    write_record(data.path(), &value);
    let reason = only_failure(
        &submissions(data.path()),
        CheckName::SubmissionRounds,
        &record_file(&sha),
    );
    assert_eq!(
        reason,
        recomputed(
            &record_file(&sha),
            "events[9].round",
            "2",
            "a sealed round (receipts: 1), or the round in progress",
        )
    );
    std::fs::create_dir_all(data.path().join("tiny/.work/round-2")).expect("mkdir");
    assert_eq!(failures(&submissions(data.path())), vec![]);
}

#[test]
fn a_scored_event_for_an_entry_the_receipt_disqualified_fails_submissions_rounds() {
    let data = tempfile::tempdir().expect("tempdir");
    data_dir(
        data.path(),
        |p| p["entries"][1]["status"] = json!("disqualified"),
        |_| {},
    );
    let reason = only_failure(
        &submissions(data.path()),
        CheckName::SubmissionRounds,
        &record_file(PATCH),
    );
    assert_eq!(
        reason,
        recomputed(
            &record_file(PATCH),
            "events[10].to",
            "scored",
            "disqualified (`rounds/1` entries[1] is disqualified)",
        )
    );
}

#[test]
fn another_miner_than_the_seat_fails_submissions_rounds() {
    let data = tempfile::tempdir().expect("tempdir");
    data_dir(data.path(), |_| {}, |r| r["miner"] = json!("slow"));
    let reason = only_failure(
        &submissions(data.path()),
        CheckName::SubmissionRounds,
        &record_file(PATCH),
    );
    assert_eq!(
        reason,
        recomputed(
            &record_file(PATCH),
            "miner",
            "slow",
            "fast (`rounds/1` entries[1])"
        )
    );
}

#[test]
fn a_requeue_the_rule_does_not_give_fails_submissions_rounds() {
    // Round 1 counted and scored the entry: a record moving it `infra_failed` and back
    // to `bench_queued` contradicts the receipt at the outcome already.
    let data = tempfile::tempdir().expect("tempdir");
    data_dir(
        data.path(),
        |p| p["entries"][1]["status"] = json!("infra_failed"),
        |r| {
            r["events"][10]["to"] = json!("infra_failed");
            r["state"] = json!("infra_failed");
        },
    );
    // Round 1 was complete and the requeue unused: the rule requeues it once.
    let reason = only_failure(
        &submissions(data.path()),
        CheckName::SubmissionRounds,
        &record_file(PATCH),
    );
    assert_eq!(
        reason,
        recomputed(
            &record_file(PATCH),
            "events[11].to",
            "none",
            "bench_queued (requeued once after round 1)",
        )
    );
}

#[test]
fn a_queued_submission_a_round_left_out_fails_submissions_rounds() {
    // Queued before round 1 started (22:12:43.60236Z), never seated: round 1 seats every
    // queued submission, so the record (or the round) hides something.
    let data = tempfile::tempdir().expect("tempdir");
    data_dir(data.path(), |_| {}, |_| {});
    let (sha, value) = queued(data.path(), b'y', 42);
    write_record(data.path(), &value);
    let reason = only_failure(
        &submissions(data.path()),
        CheckName::SubmissionRounds,
        &record_file(&sha),
    );
    assert_eq!(
        reason,
        recomputed(
            &record_file(&sha),
            "events",
            "bench_queued at 2026-12-01T22:12:43.60236Z and not seated",
            "round_assigned (round 1): `rounds/1` started then and seats every queued submission",
        )
    );
}

#[test]
fn a_challenger_without_a_record_fails_submissions_rounds() {
    let data = tempfile::tempdir().expect("tempdir");
    data_dir(data.path(), |_| {}, |_| {});
    std::fs::remove_file(data.path().join(format!("tiny/submissions/{PATCH}.json"))).expect("rm");
    let reason = only_failure(
        &submissions(data.path()),
        CheckName::SubmissionRounds,
        "rounds/1 entries[1]",
    );
    assert_eq!(
        reason,
        recomputed(
            &record_file(PATCH),
            "file",
            "absent",
            "the record of `rounds/1` entries[1] (challenger fast)",
        )
    );
}

#[test]
fn a_record_that_does_not_parse_fails_submissions_record_alone() {
    let data = tempfile::tempdir().expect("tempdir");
    data_dir(data.path(), |_| {}, |r| r["state"] = json!("launched"));
    let report = submissions(data.path());
    let failed: Vec<(CheckName, Option<String>)> = failures(&report)
        .into_iter()
        .map(|(name, target, _)| (name, target))
        .collect();
    assert_eq!(
        failed,
        vec![
            (CheckName::SubmissionRecord, Some(record_file(PATCH))),
            (CheckName::SubmissionTransitions, None),
            (CheckName::SubmissionRounds, None),
            // Its round's challenger then has no readable record.
            (
                CheckName::SubmissionRounds,
                Some("rounds/1 entries[1]".to_owned())
            ),
        ]
    );
}

#[test]
fn an_archive_without_submissions_has_no_records_report() {
    let data = tempfile::tempdir().expect("tempdir");
    forge_into(&data.path().join("tiny/rounds/1"), |_| {}, |_| {}, |_| {});
    assert_eq!(verify_all(data.path()).submissions, vec![]);
}
