//! The round view-model (`verifier::view`, issue 17) on the committed v1 fixture round:
//! exact values read from it, every field verified; a temp copy with one byte of one
//! file flipped marks the fields that file covers unverified and nothing else; a key
//! outside its validity window leaves nothing verified; the formatting helpers truncate.

use std::path::{Path, PathBuf};

use receipts::keys::Keyring;
use receipts::model::{EntryStatus, Role, RoundStatus, Timestamp};
use testkit::copy_dir;
use verifier::view::{
    CampaignRounds, CurrentLeader, RateUnit, RoundRow, RoundView, format_duration_ms,
    format_entry_throughput, format_leader, format_milli_rate, format_milli_rps,
    format_score_percent, format_time_of_day,
};
use verifier::{CheckName, VerifyOptions};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn keyring() -> Keyring {
    Keyring::load(&fixture("v1-keyring.json")).expect("keyring loads")
}

fn view_of(dir: &Path) -> RoundView {
    RoundView::from_bundle(dir, &keyring(), &VerifyOptions::default()).expect("a round")
}

/// A temp copy of the fixture with one byte of `file` flipped.
fn tampered(file: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("round");
    copy_dir(&fixture("v1-round"), &dir);
    let path = dir.join(file);
    let mut bytes = std::fs::read(&path).expect("read");
    bytes[10] ^= 1;
    std::fs::write(&path, bytes).expect("write");
    (tmp, dir)
}

#[test]
fn the_v1_fixture_reads_exactly_and_every_field_is_verified() {
    let view = view_of(&fixture("v1-round"));
    let v = &view.verification;
    assert!(v.passed, "{:#?}", v.failures);
    assert_eq!(v.failed, 0);
    assert_eq!(v.predicate_version, Some("v1"));
    assert_eq!(
        v.signed_by,
        ["70f2001d54d30225c78f7677800025753c188dbf388ec73f0bebff07dc8f9bb0"]
    );

    assert_eq!(view.round.value, 1);
    assert!(view.round.verified);
    assert_eq!(view.campaign.value.as_str(), "tiny");
    assert!(view.campaign.verified && view.campaign_digest.verified);
    assert_eq!(
        view.campaign_digest.value.as_str(),
        "a21d2bb2587f2fe6b7f412b63655ef2a64750f9629d7965d556a6f5aed2df0eb"
    );
    assert_eq!(view.status.value, RoundStatus::Complete);
    assert!(view.status_reason.is_none());
    assert_eq!(view.counts.value.scored, 2);
    assert_eq!(view.counts.value.disqualified, 0);
    assert_eq!(view.counts.value.infra_failed, 0);
    assert_eq!(view.counts.value.total, 2);
    // 19:54:26.752109 → 19:54:33.395687.
    assert_eq!(view.settled_in_ms.value, 6_643);
    assert_eq!(format_duration_ms(view.settled_in_ms.value), "6.6s");
    let top = view.top_score.as_ref().expect("a top score");
    assert_eq!((top.entry, top.score_ppm.value), (0, 0));
    assert!(top.score_ppm.verified);
    assert_eq!(view.leader_before.value, None);
    assert_eq!(view.leader_after.value, None);
    assert!(!view.leader_changed.value);
    assert!(view.leader_after.verified && view.leader_changed.verified);
    assert_eq!(view.margin_bp.value, 1000);
    assert_eq!(
        view.decision.value,
        "the best challenger f98bb88…18dfc (fast) did not beat the incumbent by the margin \
         of 1000 bp; the incumbent keeps the seat"
    );
    assert!(view.decision.verified);
    assert_eq!(view.sla.value, "p50:e2e:250ms");
    assert!(view.request_sequence_digest.verified);

    assert_eq!(view.entries.len(), 2);
    let baseline = &view.entries[0];
    assert_eq!(baseline.role.value, Role::Baseline);
    assert_eq!(baseline.miner.value, None);
    assert_eq!(baseline.patch_short.value, None);
    assert_eq!(baseline.status.value, EntryStatus::Scored);
    assert_eq!(baseline.score_ppm.value, Some(0));
    assert_eq!(baseline.throughput_milli_rps.value, Some(5_898));
    assert_eq!(format_milli_rps(5_898), "5.898 req/s");
    // The summed durations of its steps (the span from its first to its last is 1 995 ms).
    assert_eq!(baseline.duration_ms.value, 1_967);
    let challenger = &view.entries[1];
    assert_eq!(challenger.role.value, Role::Challenger);
    assert_eq!(
        challenger.miner.value.as_ref().map(|m| m.as_str()),
        Some("fast")
    );
    assert_eq!(
        challenger.patch_short.value.as_deref(),
        Some("f98bb88…18dfc")
    );
    assert_eq!(challenger.status.value, EntryStatus::Scored);
    assert_eq!(
        challenger
            .score_ppm
            .value
            .map(format_score_percent)
            .as_deref(),
        Some("0.00 %")
    );
    assert_eq!(challenger.throughput_milli_rps.value, Some(5_898));
    assert_eq!(challenger.throughput_min_milli_rps.value, Some(5_898));
    assert_eq!(challenger.throughput_max_milli_rps.value, Some(5_898));
    assert_eq!(challenger.duration_ms.value, 2_000);
    assert!(
        challenger
            .correctness
            .as_ref()
            .is_some_and(|c| c.verified && c.value.passed)
    );
    assert!(challenger.disqualification.is_none() && challenger.infra_failure.is_none());
    for e in &view.entries {
        assert!(e.role.verified && e.miner.verified && e.patch.verified);
        assert!(e.score_ppm.verified && e.throughput_milli_rps.verified);
        assert!(e.engine_log.as_ref().is_some_and(|l| l.verified));
    }

    assert_eq!(view.steps.len(), 12);
    assert!(view.steps.iter().all(|s| s.verified()));
    assert_eq!(view.steps[0].since_previous_ms.value, None);
    assert_eq!(view.steps[0].group.value, "Setup");
    // 19:54:26.75403 → 19:54:26.765695.
    assert_eq!(view.steps[1].since_previous_ms.value, Some(11));
    assert_eq!(
        format_time_of_day(view.steps[1].started_at.value),
        "19:54:26.765"
    );
    assert_eq!(view.steps[11].name.value, "Releasing the machine");

    let names: Vec<&str> = view.seeds.iter().map(|s| s.name).collect();
    assert_eq!(
        names,
        [
            "itemSeed",
            "orderSeed",
            "scheduleSeed",
            "correctnessSeed",
            "promptSalt"
        ]
    );
    assert!(
        view.seeds
            .iter()
            .all(|s| s.commitment.verified && s.seed.verified)
    );
    assert_eq!(
        view.seeds[0].commitment.value.as_str(),
        "44f898d81756384dd6d1bcf68e0765fc58658a472af4425eec4c39b6d5575d08"
    );
    assert_eq!(view.hardware.at_start.value.cpu_count, 2);
    assert!(!view.hardware.changed.value);
    let drift = view.drift.as_ref().expect("a drift check");
    assert_eq!(drift.drift_bp.value, Some(112));
    assert!(drift.drift_bp.verified);
    let score = view
        .sources
        .iter()
        .find(|s| s.field == "entries[].scorePpm")
        .expect("scorePpm's source");
    assert!(
        score
            .from
            .starts_with("median run throughput against the first baseline run")
    );
    assert!(score.checks.contains(&CheckName::RoundScores.as_str()));
}

#[test]
fn the_view_serializes_as_camel_case_fields_with_their_verification() {
    let view = view_of(&fixture("v1-round"));
    let json = serde_json::to_value(&view).expect("serializes");
    assert_eq!(json["round"]["value"], 1);
    assert_eq!(json["round"]["verified"], true);
    assert_eq!(json["campaign"]["value"], "tiny");
    assert_eq!(json["status"]["value"], "complete");
    assert_eq!(json["settledInMs"]["value"], 6_643);
    assert_eq!(json["leaderAfter"]["value"], serde_json::Value::Null);
    assert_eq!(json["counts"]["value"]["scored"], 2);
    assert_eq!(json["entries"][1]["scorePpm"]["value"], 0);
    assert_eq!(json["entries"][1]["throughputMilliRps"]["value"], 5_898);
    assert_eq!(json["entries"][1]["patchShort"]["value"], "f98bb88…18dfc");
    assert_eq!(json["entries"][1]["miner"]["value"], "fast");
    assert_eq!(json["steps"][1]["sincePreviousMs"]["value"], 11);
    assert_eq!(json["seeds"][0]["name"], "itemSeed");
    assert_eq!(json["verification"]["passed"], true);
    assert_eq!(json["verification"]["predicateVersion"], "v1");
    assert_eq!(json["sources"][0]["checks"][0], "round.scores");
}

#[test]
fn a_flipped_step_log_marks_that_step_unverified_and_nothing_else() {
    let log = "logs/steps/05-candidate-1-of-1-running-sla.log";
    let (_tmp, dir) = tampered(log);
    let view = view_of(&dir);
    assert!(!view.verification.passed);
    assert_eq!(
        view.verification.failed, 1,
        "{:#?}",
        view.verification.failures
    );
    let failure = &view.verification.failures[0];
    assert_eq!(failure.check, CheckName::Subject);
    assert_eq!(failure.target.as_deref(), Some(log));
    for step in &view.steps {
        let broken = step.index == 5;
        assert_eq!(step.verified(), !broken, "step {}", step.index);
        assert_eq!(
            step.log.as_ref().map(|l| l.verified),
            Some(!broken),
            "step {}",
            step.index
        );
        // The step's times are signed in the receipt; only its log is in doubt.
        assert!(step.started_at.verified && step.duration_ms.verified);
    }
    assert!(view.round.verified && view.decision.verified);
    assert!(view.entries.iter().all(|e| e.score_ppm.verified));
}

#[test]
fn a_flipped_engine_log_marks_that_entrys_log_unverified() {
    let (_tmp, dir) = tampered("logs/engines/candidate-1.log");
    let view = view_of(&dir);
    assert_eq!(view.verification.failed, 1);
    let log = |i: usize| view.entries[i].engine_log.as_ref().map(|l| l.verified);
    assert_eq!(log(0), Some(true));
    assert_eq!(log(1), Some(false));
    assert!(view.entries[1].score_ppm.verified);
}

#[test]
fn a_flipped_probe_log_marks_the_throughput_and_what_rests_on_it_unverified() {
    let (_tmp, dir) = tampered("probes/candidate-1.json");
    let view = view_of(&dir);
    assert!(!view.verification.passed);
    let (baseline, challenger) = (&view.entries[0], &view.entries[1]);
    assert!(baseline.throughput_milli_rps.verified && baseline.score_ppm.verified);
    assert!(!challenger.throughput_milli_rps.verified);
    assert!(!challenger.throughput_min_milli_rps.verified);
    assert!(!challenger.score_ppm.verified);
    // The seat and the top score were decided on every score.
    assert!(!view.leader_after.verified && !view.decision.verified);
    assert!(!view.top_score.as_ref().expect("top").score_ppm.verified);
    // The rest of the round is untouched.
    assert!(view.round.verified && view.campaign.verified && challenger.patch.verified);
    assert!(view.steps.iter().all(|s| s.verified()));
    // The value itself is still shown, as the receipt records it.
    assert_eq!(challenger.throughput_milli_rps.value, Some(5_898));
}

#[test]
fn a_bundle_whose_key_is_not_valid_leaves_nothing_verified() {
    let before_the_key: Timestamp = "2025-06-01T00:00:00Z".parse().expect("time");
    let view = RoundView::from_bundle(
        &fixture("v1-round"),
        &keyring(),
        &VerifyOptions::at(before_the_key),
    )
    .expect("still a round");
    assert!(!view.verification.passed);
    assert_eq!(view.round.value, 1);
    assert!(!view.round.verified && !view.status.verified && !view.counts.verified);
    assert!(!view.started_at.verified && !view.hardware.at_start.verified);
    for e in &view.entries {
        assert!(!e.status.verified && !e.score_ppm.verified && !e.duration_ms.verified);
    }
    assert!(view.steps.iter().all(|s| !s.verified() && !s.name.verified));
    assert!(view.seeds.iter().all(|s| !s.commitment.verified));
}

#[test]
fn a_directory_without_a_receipt_is_unreadable_with_its_failed_checks() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let error = RoundView::from_bundle(tmp.path(), &keyring(), &VerifyOptions::default())
        .expect_err("no round");
    assert!(!error.verification.passed);
    assert!(error.verification.failed > 0);
    assert!(error.error.contains("receipt.dsse.json"), "{}", error.error);
}

#[test]
fn a_campaign_lists_its_rounds_and_its_leader() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = receipts::layout::DataDir::new(tmp.path());
    copy_dir(&fixture("v1-round"), &tmp.path().join("tiny/rounds/1"));
    let campaign = "tiny".parse().expect("id");
    let rounds = CampaignRounds::load(&data, &campaign, &keyring(), &VerifyOptions::default())
        .expect("loads");
    assert_eq!(rounds.rounds.len(), 1);
    let row = &rounds.rounds[0];
    assert_eq!(row.round, 1);
    assert!(row.verified);
    let headline = row.headline.as_ref().expect("headline");
    assert_eq!(headline.top_score_ppm, Some(0));
    assert_eq!(headline.counts.scored, 2);
    assert_eq!(rounds.leader.leader, None);
    assert_eq!(rounds.leader.as_of_round, Some(1));
    assert_eq!(rounds.leader.decided_in_round, None);
    assert!(rounds.leader.skipped_rounds.is_empty());

    // A round 2 that does not verify (a flipped log) is skipped: round 1 still decides.
    let two = tmp.path().join("tiny/rounds/2");
    copy_dir(&fixture("v1-round"), &two);
    let log = two.join("logs/steps/00-probing-the-machine.log");
    let mut bytes = std::fs::read(&log).expect("read");
    bytes[0] ^= 1;
    std::fs::write(&log, bytes).expect("write");
    let rounds = CampaignRounds::load(&data, &campaign, &keyring(), &VerifyOptions::default())
        .expect("loads");
    assert_eq!(rounds.rounds.len(), 2);
    // Its receipt records round 1, and its log was flipped: not verified either way.
    assert!(!rounds.rounds[1].verified);
    assert!(
        rounds.rounds[1]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("round 1"))
    );
    assert_eq!(rounds.leader.as_of_round, Some(1));
    assert_eq!(rounds.leader.skipped_rounds, [2]);

    let missing = "nope".parse().expect("id");
    assert!(CampaignRounds::load(&data, &missing, &keyring(), &VerifyOptions::default()).is_err());
}

#[test]
fn the_leader_is_seated_in_the_last_round_that_changed_the_seat() {
    let view = view_of(&fixture("v1-round"));
    let leader = receipts::model::Leader {
        patch: "f98bb8888a2454cec792fdb3057f7a3f604e2afd317a4b644b9913f86e318dfc"
            .parse()
            .expect("digest"),
        miner: "fast".parse().expect("miner"),
    };
    let row = |round: u64, changed: bool, verified: bool| {
        let mut row = RoundRow::of(round, PathBuf::from(round.to_string()), &Ok(view.clone()));
        row.verified = verified;
        row.error = None;
        let h = row.headline.as_mut().expect("headline");
        h.leader_after = Some(leader.clone());
        h.leader_changed = changed;
        row
    };
    let rows = [
        row(1, false, true),
        row(2, true, true),
        row(3, false, true),
        row(4, true, false),
    ];
    let current = CurrentLeader::of(&rows);
    assert_eq!(current.leader.as_ref(), Some(&leader));
    assert_eq!(current.as_of_round, Some(3));
    assert_eq!(current.decided_in_round, Some(2));
    assert_eq!(current.skipped_rounds, [4]);
    assert_eq!(
        format_leader(current.leader.as_ref()),
        "f98bb88…18dfc (fast)"
    );
    assert_eq!(format_leader(None), "the baseline");

    let none = CurrentLeader::of(&[]);
    assert_eq!((none.leader, none.as_of_round), (None, None));
}

#[test]
fn scores_read_in_percent_truncated_toward_zero_with_a_sign() {
    assert_eq!(format_score_percent(948_899), "+94.88 %");
    assert_eq!(format_score_percent(-454_999), "-45.49 %");
    assert_eq!(format_score_percent(0), "0.00 %");
    assert_eq!(format_score_percent(1_100), "+0.11 %");
    assert_eq!(format_score_percent(-1_000_000), "-100.00 %");
    // Under a hundredth of a percent, the sign still says which side of the baseline.
    assert_eq!(format_score_percent(99), "+0.00 %");
    assert_eq!(format_score_percent(-99), "-0.00 %");
    assert_eq!(format_score_percent(i64::MIN), "-922337203685477.58 %");
}

#[test]
fn throughputs_and_durations_read_for_people() {
    assert_eq!(format_milli_rps(31_035), "31.035 req/s");
    assert_eq!(format_milli_rps(5_898), "5.898 req/s");
    assert_eq!(format_milli_rps(7), "0.007 req/s");
    assert_eq!(
        format_milli_rate(15_230, RateUnit::Decisions),
        "15.230 decisions/s"
    );
    assert_eq!(
        format_entry_throughput(16_000, true, RateUnit::Decisions),
        "≥ 16.000 decisions/s (ceiling)"
    );
    assert_eq!(
        format_entry_throughput(31_035, false, RateUnit::Requests),
        "31.035 req/s"
    );
    assert_eq!(format_duration_ms(340), "340ms");
    assert_eq!(format_duration_ms(1_299), "1.2s");
    assert_eq!(format_duration_ms(125_000), "2m05s");
    assert_eq!(format_duration_ms(8_220_000), "2h 17m");
    assert_eq!(format_duration_ms(-5), "-5ms");
}

/// A round whose campaign counts the engines' own `usage` marks its throughputs
/// self-reported; one that counted token ids (every round before v3) does not.
#[test]
fn self_reported_token_counts_are_marked() {
    use receipts::model::TokenCount;
    let dir = fixture("v1-round");
    let report = verifier::verify_bundle(&dir, &keyring(), &VerifyOptions::default());
    let (mut record, _) = receipts::layout::read_round_record(&dir).expect("a round record");
    let ids = RoundView::from_record(&dir, &record, &report);
    assert!(!ids.self_reported_tokens.value);
    assert!(ids.self_reported_tokens.verified);
    record.token_count = Some(TokenCount::Usage);
    let usage = RoundView::from_record(&dir, &record, &report);
    assert!(usage.self_reported_tokens.value);
    assert_eq!(verifier::view::SELF_REPORTED, "(self-reported)");
}

/// The v3 fixture as an `inconclusive` round ([`testkit::forge::make_inconclusive`])
/// with its own verification report: the verdict says what the status says, the
/// challenger is not decided (not `infra_failed`) and keeps its per-pass ratio as an
/// undecided score, verified like the rows it rests on.
#[test]
fn an_inconclusive_round_is_not_decided_in_words_and_keeps_its_numbers() {
    let dir = fixture("v3-round");
    let keyring = Keyring::load(&fixture("v3-keyring.json")).expect("keyring");
    let (mut record, _) = receipts::layout::read_round_record(&dir).expect("record");
    let report = verifier::verify_bundle(&dir, &keyring, &VerifyOptions::at(record.ended_at));
    assert!(report.passed());
    testkit::forge::make_inconclusive(&mut record);
    let view = RoundView::from_record(&dir, &record, &report);

    assert_eq!(
        view.verdict.value,
        "inconclusive — not decided: A/A 30.78 % > margin 10 %"
    );
    let counts = view.counts.value;
    assert_eq!(
        (counts.scored, counts.infra_failed, counts.undecided),
        (1, 0, 1)
    );
    let baseline = &view.entries[0];
    assert!(!baseline.undecided);
    assert_eq!(baseline.undecided_score, None);
    let challenger = &view.entries[1];
    assert!(challenger.undecided);
    assert_eq!(challenger.status.value, EntryStatus::InfraFailed);
    let score = challenger
        .undecided_score
        .as_ref()
        .expect("the ratios stay");
    assert!(score.verified);
    assert_eq!(
        (
            score.value.median_ppm,
            score.value.min_ppm,
            score.value.max_ppm
        ),
        (4_770, 4_770, 4_770)
    );
    assert_eq!((score.value.passes, score.value.coverage_ppm), (1, 0));
}

#[test]
fn verdicts_say_what_the_status_says() {
    use receipts::model::{RoundFailure, TypedOrText};
    use verifier::view::format_verdict;
    let noise = TypedOrText::Typed(RoundFailure::NoiseAboveMargin {
        aa_spread_bp: 3_078,
        margin_bp: 1_000,
    });
    assert_eq!(format_verdict(RoundStatus::Complete, None), "complete");
    assert_eq!(
        format_verdict(RoundStatus::Inconclusive, Some(&noise)),
        "inconclusive — not decided: A/A 30.78 % > margin 10 %"
    );
    assert_eq!(
        format_verdict(
            RoundStatus::InfraFailed,
            Some(&TypedOrText::Typed(RoundFailure::BaselineFailed))
        ),
        "infra_failed — the baseline failed"
    );
    assert_eq!(
        format_verdict(RoundStatus::InfraFailed, None),
        "infra_failed"
    );
}

/// A decide round's rates count decisions; a completions round's, requests.
#[test]
fn a_decide_rounds_rates_are_decisions_per_second() {
    let keyring = Keyring::load(&fixture("v9-decide-keyring.json")).expect("keyring loads");
    let decide = RoundView::from_bundle(
        &fixture("v9-decide-round"),
        &keyring,
        &VerifyOptions::default(),
    )
    .expect("a round");
    assert_eq!(decide.rate_unit(), RateUnit::Decisions);
    assert_eq!(
        view_of(&fixture("v1-round")).rate_unit(),
        RateUnit::Requests
    );
}
