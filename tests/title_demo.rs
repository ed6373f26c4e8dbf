//! The title end to end (content/title.md, The demo): `referee demo --days 3` runs a
//! regular round, a confirmation round and a re-measurement round for real on a virtual
//! clock and logs a revocation; each round's kind, clock and entry statuses are asserted,
//! the title the chain derives, `referee status`, the campaign page, and `referee verify`
//! over the data directory. Then a revocation logged with a lying `afterRound` is caught:
//! by its place in the log (`log.archive`) and by the title it would move without cause
//! (`title.chain`). Statuses and verification only, never timings.

mod support;

use std::path::Path;

use intake::statements::StatementLog;
use intake::tlog::LogStore;
use receipts::keys::{Keyring, PrivateKey};
use receipts::layout::{DataDir, read_round_record};
use receipts::model::{
    ClockKind, EntryStatus, Leader, Role, RoundKindRecord, RoundRecord, RoundStatus, Timestamp,
};
use receipts::rules::title::{MoveReason, TitleEvent};
use receipts::tlog::entry::EntryKind;
use receipts::tlog::statements::{
    REVOCATION_PREDICATE_TYPE, RevocationPredicate, submission_subject,
};

use support::{bin, referee, stdout, text};

/// The entry of `record` for `miner`.
fn entry<'r>(record: &'r RoundRecord, miner: &str) -> &'r receipts::model::Entry {
    record
        .entries
        .iter()
        .find(|e| e.miner.as_ref().is_some_and(|m| m.as_str() == miner))
        .unwrap_or_else(|| {
            panic!(
                "round {} seats no {miner}: {:#?}",
                record.round, record.entries
            )
        })
}

fn leader(record: &RoundRecord, miner: &str) -> Leader {
    let e = entry(record, miner);
    Leader {
        patch: e.patch.expect("patch"),
        miner: e.miner.clone().expect("miner"),
    }
}

#[test]
fn the_title_demo_confirms_a_win_moves_the_title_off_a_failed_holder_and_revokes() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let site = dir.path().join("site");
    let demo = bin()
        .current_dir(dir.path())
        .args(["demo", "--days", "3", "--data"])
        .arg(&data)
        .arg("--key-dir")
        .arg(dir.path().join("keys"))
        .arg("--site")
        .arg(&site)
        .output()
        .unwrap();
    assert_eq!(demo.status.code(), Some(0), "{}", text(&demo));

    let campaign = DataDir::new(&data).campaign(&"demo-title".parse().unwrap());
    assert_eq!(campaign.round_numbers().unwrap(), vec![1, 2, 3]);
    let records: Vec<RoundRecord> = (1..=3)
        .map(|n| read_round_record(&campaign.round_dir(n)).unwrap().0)
        .collect();
    for record in &records {
        assert_eq!(
            record.clock,
            Some(ClockKind::Virtual),
            "round {}",
            record.round
        );
        assert_eq!(
            record.outcome.status,
            RoundStatus::Complete,
            "round {}: {:?}",
            record.round,
            record.outcome
        );
    }
    let fast = leader(&records[0], "miner-fast");
    let noop = leader(&records[0], "miner-noop");

    // Day 0: a regular round, both challengers scored.
    let day0 = &records[0];
    assert_eq!(day0.kind, Some(RoundKindRecord::Regular));
    for miner in ["miner-fast", "miner-noop"] {
        assert_eq!(entry(day0, miner).status, EntryStatus::Scored, "{miner}");
    }
    // Day 1: the confirmation of miner-fast on a vacant title, beside the baseline.
    let day1 = &records[1];
    assert_eq!(
        day1.kind,
        Some(RoundKindRecord::Confirmation {
            challenger: fast.clone(),
            holder: None
        })
    );
    assert_eq!(
        (day1.entries.iter())
            .map(|e| (e.role, e.status))
            .collect::<Vec<_>>(),
        vec![
            (Role::Baseline, EntryStatus::Scored),
            (Role::Incumbent, EntryStatus::Scored)
        ]
    );
    // Day 2: the holder re-measured fails (its engine crashed), miner-noop re-checked.
    let day2 = &records[2];
    assert_eq!(
        day2.kind,
        Some(RoundKindRecord::Remeasure {
            holder: fast.clone()
        })
    );
    assert_eq!(entry(day2, "miner-fast").status, EntryStatus::Disqualified);
    assert_eq!(entry(day2, "miner-noop").status, EntryStatus::Scored);
    // Each day's round ran a day after the one before, on the virtual clock: whole days
    // since day 0's start, not calendar days (day 2 starts 2 h into its day, which is the
    // next calendar day when day 0 starts after 22:00 UTC).
    let unix = |r: &RoundRecord| r.started_at.datetime().unix_timestamp();
    assert_eq!((unix(day1) - unix(day0)) / 86_400, 1);
    assert_eq!((unix(day2) - unix(day0)) / 86_400, 2);

    // The title the chain derives, step by step.
    let keyring = Keyring::load(&data.join("keyring.json")).unwrap();
    let refs: Vec<&RoundRecord> = records.iter().collect();
    let derived = verifier::title::derive_campaign_title(
        campaign.root(),
        &campaign.round_dir(1),
        &refs,
        &keyring,
    )
    .unwrap()
    .unwrap();
    assert_eq!(derived.clock, ClockKind::Virtual);
    assert_eq!(derived.title.holder, None);
    let steps: Vec<(u64, Option<Leader>, Option<Leader>, &str)> = (derived.events.iter())
        .filter_map(|e| match e {
            TitleEvent::Moved {
                round,
                from,
                to,
                reason,
                ..
            } => Some((
                *round,
                from.clone(),
                to.clone(),
                match reason {
                    MoveReason::Won => "won",
                    MoveReason::Confirmed { .. } => "confirmed",
                    MoveReason::HolderFailed { .. } => "holder failed",
                    MoveReason::Revoked { .. } => "revoked",
                },
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        steps,
        vec![
            (2, None, Some(fast.clone()), "confirmed"),
            (3, Some(fast.clone()), Some(noop.clone()), "holder failed"),
            (3, Some(noop.clone()), None, "revoked"),
        ]
    );
    assert!(
        matches!(&derived.events[0], TitleEvent::Pending { round: 1, challenger, .. } if *challenger == fast),
        "{:?}",
        derived.events
    );

    // `referee status` and the campaign page show it.
    let status = referee(
        dir.path(),
        &["status", "--campaign", "demo-title", "--data", "data"],
    );
    assert_eq!(status.status.code(), Some(0), "{}", text(&status));
    let status = stdout(&status);
    for needle in [
        "title: vacant",
        "(virtual clock: these rounds count for no real title)",
        "round 1: miner-fast",
        "won: pending",
        "its win of round 1 confirmed",
        "the holder failed: ",
        "the holder's entry revoked: its diff rewords a comment",
    ] {
        assert!(status.contains(needle), "{needle} not in:\n{status}");
    }
    let page = std::fs::read_to_string(site.join("c/demo-title/index.html")).unwrap();
    for needle in [
        "<h2 id=\"title\">Title</h2>",
        "Virtual clock",
        "vacant: the share goes back to the inference pools",
        "its win of round 1 confirmed",
        "the holder failed: ",
        "the holder&#39;s entry revoked: its diff rewords a comment",
        "miner-fast (e5595a3…88ea1) won: pending",
    ] {
        assert!(page.contains(needle), "{needle} not on the campaign page");
    }

    // `referee verify` over the data directory recomputes it.
    let verify = referee(dir.path(), &["verify", "--data", "data", "data"]);
    assert_eq!(verify.status.code(), Some(0), "{}", text(&verify));

    // A revocation of miner-fast's round-1 entry that says it was logged after round 1,
    // logged now (after round 3): its place in the log gives it away, and read where it
    // claims to be it drops the pending challenger that round 2 then confirms.
    log_revocation(&data, &dir.path().join("keys"), &fast, 1);
    let verify = referee(dir.path(), &["verify", "--data", "data", "data"]);
    assert_eq!(verify.status.code(), Some(1), "{}", text(&verify));
    let report = text(&verify);
    for needle in [
        "its afterRound is 1, but round 2 opened before it",
        "round 2 confirms miner-fast",
    ] {
        assert!(report.contains(needle), "{needle} not in:\n{report}");
    }
}

/// Logs a revocation of `entry` in round 1 of `demo-title` claiming `afterRound`
/// `after_round`, signed with the demo's keys in `keys`.
fn log_revocation(data: &Path, keys: &Path, entry: &Leader, after_round: u64) {
    let store = LogStore::open(data).unwrap();
    let evaluator = PrivateKey::load(&keys.join("evaluator.key")).unwrap();
    let log_key = PrivateKey::load(&keys.join("log.key")).unwrap();
    let campaign = DataDir::new(data).campaign(&"demo-title".parse().unwrap());
    let predicate = RevocationPredicate {
        campaign: "demo-title".parse().unwrap(),
        round: 1,
        entry: entry.clone(),
        reason: "a lying afterRound".to_owned(),
        after_round,
        revoked_at: Timestamp::now(),
    };
    StatementLog::new(&store, &evaluator, &log_key)
        .unwrap()
        .log(
            &campaign,
            EntryKind::Revocation,
            Some(1),
            vec![submission_subject(&entry.patch, &entry.patch)],
            REVOCATION_PREDICATE_TYPE,
            &predicate,
        )
        .unwrap();
}
