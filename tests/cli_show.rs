//! `referee show`, `referee rounds` and `referee leader` through the binary (issue 17,
//! looking at results), on the committed v1 fixture round
//! (`verifier/tests/fixtures/v1-round`): the text views of `show` and `rounds` as golden
//! outputs (insta snapshots in `tests/snapshots/`) and exit 0; `--json` as the
//! view-model; a flipped byte marks what it covers `(unverified)` and exits 1; `rounds`
//! and `leader` on a data directory holding the fixture as `tiny/rounds/1`.

mod support;

use std::path::{Path, PathBuf};

use support::{Fixture, Tiny, ok, referee, root, serial, stdout};
use testkit::copy_dir;

fn fixture_round() -> PathBuf {
    root().join("verifier/tests/fixtures/v1-round")
}

fn fixture_keyring() -> PathBuf {
    root().join("verifier/tests/fixtures/v1-keyring.json")
}

/// A data directory with the fixture as round 1 of `tiny`, its keyring and campaign.
fn data_dir() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tempdir");
    copy_dir(&fixture_round(), &tmp.path().join("tiny/rounds/1"));
    std::fs::copy(fixture_keyring(), tmp.path().join("keyring.json")).expect("keyring");
    std::fs::copy(
        root().join("receipts/tests/fixtures/v1-campaign.toml"),
        tmp.path().join("tiny/campaign.toml"),
    )
    .expect("campaign");
    tmp
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

#[test]
fn show_prints_the_round_with_its_entries_table_and_exits_0() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let bundle = fixture_round();
    let keyring = fixture_keyring();
    let out = referee(
        tmp.path(),
        &[
            "show",
            path(&bundle),
            "--keyring",
            path(&keyring),
            "--verbose",
        ],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}\n{out:?}");
    // The whole view with its details (`--verbose`): header facts, the aligned entries
    // table, timeline, seeds, hardware and the verification line (tests/snapshots/cli_show__show-v1-round.snap; after a
    // deliberate change, `INSTA_UPDATE=always cargo test -p referee --test cli_show` and
    // review the diff).
    // The bundle's path is the checkout's: shown from the repository root.
    let text = text.replace(path(root()), "<repo>");
    insta::assert_snapshot!("show-v1-round", text);
}

/// A decide round (`v9-decide-round`, the s1-pro-speed demo's) shows its throughputs in
/// decisions per second.
#[test]
fn show_counts_a_decide_rounds_throughput_in_decisions() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let fixtures = root().join("verifier/tests/fixtures");
    let bundle = fixtures.join("v9-decide-round");
    let keyring = fixtures.join("v9-decide-keyring.json");
    let out = referee(
        tmp.path(),
        &["show", path(&bundle), "--keyring", path(&keyring)],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}\n{out:?}");
    // Each entry's cell is the receipt's own throughput, in decisions per second.
    let record = receipts::layout::read_sealed_round(&bundle)
        .expect("the fixture")
        .record;
    for entry in &record.entries {
        let milli = entry
            .throughput_milli_rps
            .expect("a scored entry's throughput");
        let cell = format!("{}.{:03} decisions/s", milli / 1000, milli % 1000);
        assert!(text.contains(&cell), "{cell} in {text}");
    }
    assert!(!text.contains("req/s"), "{text}");
}

#[test]
fn show_json_is_the_view_model() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let bundle = fixture_round();
    let keyring = fixture_keyring();
    let out = referee(
        tmp.path(),
        &["show", path(&bundle), "--keyring", path(&keyring), "--json"],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json["round"]["value"], 1);
    assert_eq!(json["campaign"]["value"], "tiny");
    assert_eq!(json["status"]["value"], "complete");
    assert_eq!(json["counts"]["value"]["scored"], 2);
    assert_eq!(json["entries"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        json["entries"][1]["scorePpm"],
        serde_json::json!({"value": 0, "verified": true})
    );
    assert_eq!(json["entries"][1]["throughputMilliRps"]["value"], 5_898);
    assert_eq!(json["steps"].as_array().map(Vec::len), Some(12));
    assert_eq!(json["seeds"].as_array().map(Vec::len), Some(5));
    assert_eq!(json["verification"]["passed"], true);
    assert!(json["hardware"]["atStart"]["value"]["cpuModel"].is_string());
    assert!(json["sources"].as_array().is_some_and(|s| !s.is_empty()));
}

#[test]
fn show_marks_what_a_flipped_byte_covers_and_exits_1() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let bundle = tmp.path().join("round");
    copy_dir(&fixture_round(), &bundle);
    let probe = bundle.join("probes/candidate-1.json");
    let mut bytes = std::fs::read(&probe).expect("read");
    bytes[10] ^= 1;
    std::fs::write(&probe, bytes).expect("write");
    let keyring = fixture_keyring();
    let out = referee(
        tmp.path(),
        &["show", path(&bundle), "--keyring", path(&keyring)],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let challenger = text
        .lines()
        .find(|l| l.starts_with("challenger "))
        .expect("challenger row");
    assert!(challenger.contains("0.00 % (unverified)"), "{challenger}");
    assert!(
        challenger.contains("≥ 5.898 req/s (ceiling) (unverified)"),
        "{challenger}"
    );
    let baseline = text
        .lines()
        .find(|l| l.starts_with("baseline "))
        .expect("baseline row");
    assert!(!baseline.contains("(unverified)"), "{baseline}");
    assert!(
        text.contains("FAIL subject probes/candidate-1.json"),
        "{text}"
    );
    // The flipped byte breaks the log's JSON too, so the recomputation from it fails.
    assert!(text.contains("FAIL probes.log"), "{text}");
    let last = text.lines().last().expect("a last line");
    assert!(last.starts_with("Verified: NO — 2 of "), "{last}");

    // The JSON view says the same, and the exit code too.
    let out = referee(
        tmp.path(),
        &["show", path(&bundle), "--keyring", path(&keyring), "--json"],
    );
    assert_eq!(out.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json["entries"][1]["scorePpm"]["verified"], false);
    assert_eq!(json["entries"][0]["scorePpm"]["verified"], true);
    assert_eq!(json["verification"]["failed"], 2);
}

#[test]
fn show_by_campaign_and_round_uses_the_data_directory_keyring() {
    let data = data_dir();
    let out = referee(
        data.path(),
        &[
            "show",
            "--campaign",
            "tiny",
            "--round",
            "1",
            "--data",
            path(data.path()),
        ],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}\n{out:?}");
    assert!(text.starts_with("Round 1 of `tiny` — complete\n"), "{text}");

    // A round that is not there, a bundle path that is not a directory, and a missing
    // keyring are usage or I/O errors.
    let out = referee(
        data.path(),
        &[
            "show",
            "--campaign",
            "tiny",
            "--round",
            "9",
            "--data",
            path(data.path()),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let out = referee(
        data.path(),
        &["show", "nowhere", "--data", path(data.path())],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let out = referee(
        data.path(),
        &["show", path(&fixture_round()), "--keyring", "missing.json"],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    // A bundle and --campaign together, or --campaign without --round, are refused.
    let out = referee(
        data.path(),
        &[
            "show",
            path(&fixture_round()),
            "--campaign",
            "tiny",
            "--round",
            "1",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let out = referee(data.path(), &["show", "--campaign", "tiny"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

#[test]
fn rounds_lists_each_sealed_round() {
    let data = data_dir();
    let out = referee(
        data.path(),
        &["rounds", "--campaign", "tiny", "--data", path(data.path())],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}\n{out:?}");
    // One line per round (tests/snapshots/cli_show__rounds-v1-round.snap).
    insta::assert_snapshot!("rounds-v1-round", text);

    let out = referee(
        data.path(),
        &[
            "rounds",
            "--campaign",
            "tiny",
            "--data",
            path(data.path()),
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let rounds = json.as_array().expect("an array");
    assert_eq!(rounds.len(), 1);
    assert_eq!(rounds[0]["round"], 1);
    assert_eq!(rounds[0]["verified"], true);
    assert_eq!(rounds[0]["status"], "complete");
    assert_eq!(rounds[0]["leaderAfter"], serde_json::Value::Null);
    assert_eq!(rounds[0]["topScorePpm"], 0);
    assert_eq!(rounds[0]["counts"]["scored"], 2);

    // A campaign that is not there is an error (exit 2).
    let out = referee(
        data.path(),
        &["rounds", "--campaign", "nope", "--data", path(data.path())],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

#[test]
fn leader_names_the_seat_and_the_round_it_comes_from() {
    let data = data_dir();
    let out = referee(
        data.path(),
        &["leader", "--campaign", "tiny", "--data", path(data.path())],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}\n{out:?}");
    assert!(
        text.contains("Leader: the baseline (as of round 1, the last round that verifies)"),
        "{text}"
    );

    let out = referee(
        data.path(),
        &[
            "leader",
            "--campaign",
            "tiny",
            "--data",
            path(data.path()),
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json["leader"], serde_json::Value::Null);
    assert_eq!(json["asOfRound"], 1);
    assert_eq!(json["decidedInRound"], serde_json::Value::Null);
    assert_eq!(json["skippedRounds"], serde_json::json!([]));

    // A later round that does not verify is skipped, said so, and exits 1.
    let two = data.path().join("tiny/rounds/2");
    copy_dir(&fixture_round(), &two);
    let log = two.join("logs/steps/00-probing-the-machine.log");
    let mut bytes = std::fs::read(&log).expect("read");
    bytes[0] ^= 1;
    std::fs::write(&log, bytes).expect("write");
    let out = referee(
        data.path(),
        &["leader", "--campaign", "tiny", "--data", path(data.path())],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("(as of round 1, the last round that verifies)"),
        "{text}"
    );
    assert!(
        text.contains("Warning: round 2 does not verify and was skipped"),
        "{text}"
    );
    let out = referee(
        data.path(),
        &["rounds", "--campaign", "tiny", "--data", path(data.path())],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(stdout(&out).contains("NO ("), "{}", stdout(&out));
}

/// Issue 17: an entry whose search passed at the campaign's `max_rate` (the tiny
/// campaign probes one rate, its minimum and maximum) has a throughput that is only a
/// lower bound. The round's summary table and `referee show` say `≥ … req/s (ceiling)`,
/// and `show --json` carries `atCeiling`, verified.
#[test]
fn an_entry_at_the_max_rate_is_shown_as_a_ceiling() {
    let _serial = serial();
    let fixture = Fixture::new(&Tiny::default(), &[]);
    let round = fixture.round_command().output().expect("round");
    ok(&round);
    let data = path(&fixture.data).to_owned();
    let show = |json: bool| {
        let mut args = vec![
            "show",
            "--campaign",
            "tiny",
            "--round",
            "1",
            "--data",
            &data,
        ];
        if json {
            args.push("--json");
        }
        referee(fixture.dir.path(), &args)
    };
    let out = show(true);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let baseline = &json["entries"][0];
    // Verified as far as the throughput is (a loaded machine can fail its checks).
    assert_eq!(
        baseline["atCeiling"],
        serde_json::json!({"value": true, "verified": baseline["throughputMilliRps"]["verified"]})
    );
    let milli = baseline["throughputMilliRps"]["value"]
        .as_u64()
        .expect("a throughput");
    let cell = format!("≥ {}.{:03} req/s (ceiling)", milli / 1000, milli % 1000);
    let row = |text: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with("baseline "))
            .map(str::to_owned)
            .unwrap_or_else(|| panic!("no baseline row in {text}"))
    };
    let summary = row(&stdout(&round));
    assert!(summary.contains(&format!("  {cell}  ")), "{summary}");
    let out = show(false);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let shown = row(&stdout(&out));
    assert!(shown.contains(&format!("  {cell}")), "{shown}");
}

/// `referee due` (content/title.md): a campaign whose rounds seated nobody is vacant with
/// nothing due, exit 0; a round that does not verify leaves the title underived, exit 1.
#[test]
fn due_derives_the_title_from_verified_rounds_and_exits_by_what_is_due() {
    let data = data_dir();
    let due = |extra: &[&str]| {
        let mut args = vec!["due", "--data", path(data.path())];
        args.extend_from_slice(extra);
        referee(data.path(), &args)
    };
    let out = due(&[]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(stdout(&out), "tiny: vacant\n  nothing due\n");
    let out = due(&["--campaign", "tiny", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(
        json,
        serde_json::json!([{
            "campaign": "tiny",
            "holder": null,
            "heldSince": null,
            "pending": [],
            "due": [],
            "error": null,
        }])
    );

    let two = data.path().join("tiny/rounds/2");
    copy_dir(&fixture_round(), &two);
    let log = two.join("logs/steps/00-probing-the-machine.log");
    let mut bytes = std::fs::read(&log).expect("read");
    bytes[0] ^= 1;
    std::fs::write(&log, bytes).expect("write");
    let out = due(&[]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        stdout(&out),
        format!(
            "tiny: vacant\n  error: round 2 does not verify (`referee verify {}`)\n",
            two.display()
        )
    );
}

/// `referee revoke` (content/title.md, Revocation) refuses the baseline's entry, a round
/// that was not sealed and a data directory without a transparency log, writing nothing;
/// `referee status` ends with the title its rounds derive.
#[test]
fn revoke_refuses_what_it_cannot_log_and_status_shows_the_title() {
    let data = data_dir();
    let revoke = |round: &str, entry: &str| {
        let args = [
            "revoke",
            "--data",
            path(data.path()),
            "--campaign",
            "tiny",
            "--round",
            round,
            "--entry",
            entry,
            "--reason",
            "replayed cached outputs",
        ];
        referee(data.path(), &args)
    };
    for (round, entry, expected) in [
        (
            "1",
            "0",
            "round 1 entry 0 is the baseline: only a submission can be revoked",
        ),
        ("2", "1", "campaign `tiny` has no sealed round 2"),
        (
            "1",
            "1",
            "the data directory has no transparency log: a revocation is a logged statement",
        ),
    ] {
        let out = revoke(round, entry);
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        let err = support::stderr(&out);
        assert!(err.contains(expected), "{expected} in {err}");
    }
    assert!(!data.path().join("tiny/statements").exists());

    let out = referee(
        data.path(),
        &["status", "--campaign", "tiny", "--data", path(data.path())],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        stdout(&out).ends_with("\ntitle: vacant\n"),
        "{}",
        stdout(&out)
    );
}
