//! The s1-fast-speed demo (`examples/s1-fast-speed/`, content/s1-fast-speed.md) end to
//! end: the campaign added, the submission that declares cheaper resources ingested, a
//! decide round of the built-in engine with the demo's fake sealed scorer given as
//! `--sealed-dir` — each entry scored on the sealed items while it runs, its decisions
//! compared with the reference's in its agreement file, priced from its tree's
//! `resources.json` — then `referee verify` passing with the `fastTrack.*` checks, the
//! outcome seating the cheaper challenger on cost (`cost_margin_met`), `referee leader`
//! naming it, the site's round page showing both gates and the cost ranking, and two
//! forgeries re-signed with the evaluator's own key failing the checks.

mod support;

use std::path::Path;

use receipts::bundle::ENVELOPE_FILE;
use receipts::layout::{DataDir, read_round_record};
use receipts::model::{
    DisqualificationReason, EntryStatus, Leader, ResourceRequest, Role, RoundStatus, SeatRule,
    Sha256Hex, TypedOrText,
};
use referee::demo::s1_fast_speed::{CAMPAIGN_ID, SCORER, SEALED, SUBMISSION_DIFF, stage};
use support::{bin, stdout, text};

/// `--campaign s1-fast-speed-demo --data data`.
const C: [&str; 4] = ["--campaign", CAMPAIGN_ID, "--data", "data"];

/// `referee <args>` in `dir`; its exit code and standard output.
fn run(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = bin().args(args).current_dir(dir).output().expect("referee");
    (
        out.status.code(),
        format!("{}\n{}", stdout(&out), text(&out)),
    )
}

/// `referee <args>` in `dir`, which must exit 0.
fn run_ok(dir: &Path, args: &[&str]) {
    let (code, out) = run(dir, args);
    assert_eq!(code, Some(0), "referee {args:?}:\n{out}");
}

/// `referee verify <bundle> --json` with the data directory's keyring: the exit code and
/// every `fastTrack.*` check as (name, target, passed), not-applicable ones left out.
fn fast_checks(dir: &Path, bundle: &Path) -> (Option<i32>, Vec<(String, String, bool)>) {
    let out = bin()
        .args(["verify", bundle.to_str().expect("utf-8")])
        .args(["--keyring", "data/keyring.json", "--json"])
        .current_dir(dir)
        .output()
        .expect("referee");
    let reports: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
    let checks = (reports[0]["checks"].as_array().into_iter().flatten())
        .filter(|c| c["notApplicable"].is_null())
        .filter_map(|c| {
            let name = c["name"].as_str()?;
            name.starts_with("fastTrack.").then(|| {
                (
                    name.to_owned(),
                    c["target"].as_str().unwrap_or_default().to_owned(),
                    c["passed"] == true,
                )
            })
        })
        .collect();
    (out.status.code(), checks)
}

/// A `fastTrack` row as compared: index, resources, price, capability, matched, ppm and
/// agreement file.
type Row<'a> = (u32, ResourceRequest, u64, u32, u32, u32, Option<&'a str>);

/// Every regular file under `dir`, recursively.
fn collect_files(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read_dir").flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(kind) if kind.is_dir() => collect_files(&path, files),
            Ok(kind) if kind.is_file() => files.push(path),
            _ => {}
        }
    }
}

fn check(name: &str, target: &str, passed: bool) -> (String, String, bool) {
    (name.to_owned(), target.to_owned(), passed)
}

/// The demo staged under `<dir>/src` and made ready for its round
/// ([`support::setup_demo_submission`]: the cheaper submission ingested): the
/// evaluator's key, its key file and the data directory.
fn staged(dir: &Path) -> (receipts::keys::PrivateKey, std::path::PathBuf, DataDir) {
    stage(&dir.join("src")).expect("stage");
    let (key, key_path) = support::setup_demo_submission(
        dir,
        CAMPAIGN_ID,
        "miner-cheap",
        "cheaper.diff",
        SUBMISSION_DIFF,
    );
    (key, key_path, DataDir::new(dir.join("data")))
}

/// The test through a real round: the capability scorer scores the cheaper
/// challenger below the baseline (a fake sealed scorer: 700,000 against 750,000 ppm), so
/// it is disqualified on the gate and seated neither on throughput nor on cost, and the
/// receipt verifies with `fastTrack.gates` holding it.
#[test]
fn a_challenger_scored_below_the_incumbent_is_disqualified_and_not_seated_on_cost() {
    let _serial = support::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path();
    let (key, _, data) = staged(dir);
    let scorer = runner::sealed::FakeSealedScorer::new(
        "below-the-incumbent",
        [(0, 750_000), (1, 700_000)].into(),
    );
    let options = runner::round::RoundOptions {
        data: DataDir::new(std::path::absolute(dir.join("data")).expect("absolute")),
        campaign: CAMPAIGN_ID.parse().expect("id"),
        engine_program: env!("CARGO_BIN_EXE_referee").into(),
        seeds: None,
        beacon: None,
        abort_after_record: None,
        log_key: None,
        require_witness: None,
        clock: runner::round::Clock::system(),
        key_paths: vec![dir.join("keys")],
        engine_uid: engines::sandbox::DEFAULT_ENGINE_UID,
        kind: runner::round::RoundKindRequest::Regular,
        capability: Some(std::sync::Arc::new(scorer)),
    };
    struct Quiet;
    impl runner::round::RoundProgress for Quiet {}
    runner::round::run_round(&options, &key, &Quiet).expect("round");

    let bundle = data
        .campaign(&CAMPAIGN_ID.parse().expect("id"))
        .round_dir(1);
    let (record, _) = read_round_record(&bundle).expect("receipt");
    assert_eq!(record.outcome.status, RoundStatus::Complete, "{record:#?}");
    let challenger = &record.entries[1];
    assert_eq!(challenger.status, EntryStatus::Disqualified);
    assert_eq!(
        challenger.disqualification.as_ref().map(|d| d.reason),
        Some(DisqualificationReason::CapabilityBelowIncumbent {
            capability_ppm: 700_000,
            incumbent_ppm: 750_000
        })
    );
    // Though it is the cheaper per decision, the cost rule does not seat it.
    let fast = record.fast_track.as_ref().expect("fastTrack");
    assert_eq!(fast.cost_seat, None);
    assert_eq!(record.outcome.leader_after, None);
    assert!(!record.outcome.changed);
    let (code, checks) = fast_checks(dir, &bundle);
    assert_eq!(code, Some(0), "{checks:?}");
    assert!(
        checks.contains(&check("fastTrack.gates", "entries[1].status", true)),
        "{checks:?}"
    );
}

#[test]
fn the_s1_fast_speed_demo_seats_the_cheaper_sidecar_on_cost_and_its_receipt_verifies() {
    let _serial = support::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path();
    let (key, key_path, data) = staged(dir);
    let round = [
        &["round"][..],
        &C,
        &["--key", key_path.to_str().expect("utf-8")],
    ]
    .concat();
    // The track needs the sealed items, and never inside the data directory.
    let (code, out) = run(dir, &round);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("--sealed-dir"), "{out}");
    let (code, out) = run(dir, &[&round[..], &["--sealed-dir", "data"]].concat());
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("inside the data directory"), "{out}");
    run_ok(dir, &[&round[..], &["--sealed-dir", "src/sealed"]].concat());

    let campaign = data.campaign(&CAMPAIGN_ID.parse().expect("id"));
    let bundle = campaign.round_dir(1);
    let (record, _) = read_round_record(&bundle).expect("receipt");
    assert_eq!(record.outcome.status, RoundStatus::Complete, "{record:#?}");
    let statuses: Vec<(Role, EntryStatus)> =
        record.entries.iter().map(|e| (e.role, e.status)).collect();
    assert_eq!(
        statuses,
        [
            (Role::Baseline, EntryStatus::Scored),
            (Role::Challenger, EntryStatus::Scored)
        ]
    );
    let fast = record.fast_track.as_ref().expect("fastTrack");
    assert_eq!(fast.scorer_sha256, Sha256Hex::digest(SCORER.as_bytes()));
    assert_eq!(fast.agreement_items, 30);
    // The fake scorer scores 3 of the 4 sealed items right for every entry; the built-in
    // engine's decisions are the reference's on all 30 items.
    let rows: Vec<Row<'_>> = fast
        .entries
        .iter()
        .map(|r| {
            (
                r.index,
                r.resources.clone(),
                r.price_micro_usd_per_hour,
                r.capability_ppm,
                r.agreement_matched,
                r.agreement_ppm,
                r.agreement_file.as_deref(),
            )
        })
        .collect();
    let resources = |gpus, class: &str, cpus, memory_gib| ResourceRequest {
        gpus,
        gpu_class: class.to_owned(),
        cpus,
        memory_gib,
    };
    assert_eq!(
        rows,
        [
            (
                0,
                resources(1, "h100", 8, 64),
                2_640_000,
                750_000,
                30,
                1_000_000,
                Some("agreement/baseline.json")
            ),
            (
                1,
                resources(2, "l4", 4, 32),
                1_720_000,
                750_000,
                30,
                1_000_000,
                Some("agreement/candidate-1-miner-cheap.json")
            ),
        ]
    );
    // Both run at the one fixed rate: the challenger, on two GPUs where the baseline has
    // one, is no faster — a throughput campaign would keep the baseline — but 35 %
    // cheaper per decision, so the round's outcome seats it on cost.
    assert_eq!(fast.cost_seat, Some(1), "{fast:#?}");
    let challenger = &record.entries[1];
    let throughput = |e: &receipts::model::Entry| e.throughput_milli_rps.expect("throughput");
    assert!(!receipts::rules::score::overtakes(
        throughput(challenger),
        throughput(&record.entries[0]),
        500
    ));
    let winner = Leader {
        patch: challenger.patch.expect("patch"),
        miner: challenger.miner.clone().expect("miner"),
    };
    assert_eq!(
        record.outcome.decision,
        TypedOrText::Typed(SeatRule::CostMarginMet {
            winner: winner.clone()
        })
    );
    assert_eq!(record.outcome.leader_after, Some(winner));
    assert!(record.outcome.changed);
    let (code, out) = run(dir, &[&["leader"][..], &C].concat());
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("miner-cheap"), "{out}");

    let (code, checks) = fast_checks(dir, &bundle);
    assert_eq!(code, Some(0), "{checks:?}");
    assert_eq!(
        checks,
        [
            check("fastTrack.costs", "fastTrack", true),
            check("fastTrack.costs", "fastTrack.entries[0]", true),
            check("fastTrack.costs", "fastTrack.entries[1]", true),
            check("fastTrack.decision", "fastTrack.costSeat", true),
            check("fastTrack.agreement", "fastTrack.entries[0]", true),
            check("fastTrack.agreement", "fastTrack.entries[1]", true),
            check("fastTrack.gates", "entries[1].status", true),
        ]
    );

    // The site's round page shows both gates and the cost ranking, cheapest first.
    run_ok(dir, &["site", "build", "--data", "data", "--out", "site"]);
    let page = std::fs::read_to_string(dir.join(format!("site/c/{CAMPAIGN_ID}/r/1/index.html")))
        .expect("round page");
    let ranking = [
        "<h2 id=\"fast-track\">Gates and cost</h2>",
        "<td>#1 challenger miner-cheap</td><td>2 × l4, 4 cores, 32 GiB</td><td>$1.720000 per hour</td>",
        "<td>750,000 ppm · passes</td><td>30 of 30 items (1,000,000 ppm) · passes</td>",
        "<td>#0 baseline</td><td>1 × h100, 8 cores, 64 GiB</td><td>$2.640000 per hour</td>",
        "#1 challenger miner-cheap is seated on cost",
    ];
    let mut at = 0;
    for text in ranking {
        let found = page[at..].find(text).map(|i| at + i);
        assert!(found.is_some(), "{text} after byte {at} of the round page");
        at = found.unwrap_or(at);
    }

    // The campaign page states both gates and the cost rule.
    let page = std::fs::read_to_string(dir.join(format!("site/c/{CAMPAIGN_ID}/index.html")))
        .expect("campaign page");
    for text in [
        "A challenger is disqualified when its capability score on the sealed items is below the incumbent",
        "at least 5 % lower than the incumbent",
        "$0.700000 per l4 GPU-hour",
    ] {
        assert!(page.contains(text), "{text} on the campaign page");
    }

    // No sealed item reaches the data directory (its bundles included) or the site: only
    // the score and the set's commitment do.
    let mut files = Vec::new();
    for root in [dir.join("data"), dir.join("site")] {
        collect_files(&root, &mut files);
    }
    assert!(files.len() > 50, "{}", files.len());
    for (name, item) in SEALED {
        let leaked: Vec<_> = (files.iter())
            .filter(|f| {
                let bytes = std::fs::read(f).unwrap_or_default();
                bytes
                    .windows(item.trim_end().len())
                    .any(|w| w == item.trim_end().as_bytes())
            })
            .collect();
        assert!(leaked.is_empty(), "{name} in {leaked:?}");
    }

    // Forgeries by the evaluator itself, re-signed with its own key, so that only the
    // recomputations can catch them. First: the challenger's decision on item 0 changed
    // in its agreement file, its count left at 30.
    let forged = dir.join("forged");
    testkit::copy_dir(&bundle, &forged);
    let file = "agreement/candidate-1-miner-cheap.json";
    testkit::forge::edit_json(&forged, file, |items| {
        let first = &mut items["items"][0];
        let other = if first["decision"] == "a" { "e" } else { "a" };
        first["decision"] = other.into();
    });
    let statement = testkit::forge::statement(&forged, ENVELOPE_FILE);
    testkit::forge::sign_with(&forged, ENVELOPE_FILE, statement, &key);
    let (code, checks) = fast_checks(dir, &forged);
    assert_eq!(code, Some(1));
    let failed: Vec<_> = checks.iter().filter(|c| !c.2).collect();
    assert_eq!(
        failed,
        [&check("fastTrack.agreement", "fastTrack.entries[1]", false)]
    );

    // Second: the seat on cost dropped from the receipt.
    let forged = dir.join("forged-seat");
    testkit::copy_dir(&bundle, &forged);
    let mut statement = testkit::forge::statement(&forged, ENVELOPE_FILE);
    statement["predicate"]["fastTrack"]["costSeat"] = serde_json::Value::Null;
    testkit::forge::sign_with(&forged, ENVELOPE_FILE, statement, &key);
    let (code, checks) = fast_checks(dir, &forged);
    assert_eq!(code, Some(1));
    let failed: Vec<_> = checks.iter().filter(|c| !c.2).collect();
    assert_eq!(
        failed,
        [&check("fastTrack.decision", "fastTrack.costSeat", false)]
    );
}
