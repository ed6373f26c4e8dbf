//! Rounds in the transparency log, end to end through the binary (content/transparency-
//! log.md): two tiny rounds log four entries whose proofs verify, one by one and as an
//! archive; a log truncated to a smaller, validly signed checkpoint is caught by
//! consistency against the checkpoint `verify` remembered (and one given with
//! `--checkpoint`); a beacon round logs its opening before its seeds exist; a round of a
//! data directory without a log fails `--require-log`, a
//! logged round whose proofs are gone fails with or without it (`--no-log` skips); a witness cosigns the opening of a round that requires it, and
//! without one the round stops before any entry ran.

mod support;

use std::fs;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use receipts::layout::read_round_record;
use receipts::model::{OpeningWitness, RoundLog};
use serde_json::Value;
use support::{Fixture, Tiny, bin, ok, serial, stdout, text};

const ORIGIN: &str = "referee.example/log";

/// `referee <args>` in the fixture's directory, with the config directory (remembered
/// checkpoints) inside it.
fn run(fixture: &Fixture, args: &[&str]) -> Output {
    command(fixture, args).output().expect("runs referee")
}

fn command(fixture: &Fixture, args: &[&str]) -> Command {
    let mut command = bin();
    command
        .args(args)
        .current_dir(fixture.dir.path())
        .env("XDG_CONFIG_HOME", fixture.dir.path().join("config"));
    command
}

/// `referee log init` into the fixture's data and key directories; the verifier key.
fn init_log(fixture: &Fixture) -> String {
    let out = run(
        fixture,
        &[
            "log",
            "init",
            "--data",
            "data",
            "--key-dir",
            "keys",
            "--origin",
            ORIGIN,
            "--json",
        ],
    );
    ok(&out);
    let json: Value = serde_json::from_str(&stdout(&out)).expect("json");
    json["vkey"].as_str().expect("vkey").to_owned()
}

/// `referee round` of the tiny campaign with the fixture's key directory, then `extra`.
fn round(fixture: &Fixture, extra: &[&str]) -> Output {
    let mut command = fixture.round_command();
    command
        .arg("--key-dir")
        .arg(fixture.key_dir())
        .args(extra)
        .env("XDG_CONFIG_HOME", fixture.dir.path().join("config"));
    command.output().expect("runs referee round")
}

/// `referee verify --json <args>`: the exit code and each report's checks as
/// `(name, target, passed, notApplicable)`.
fn verify(fixture: &Fixture, args: &[&str]) -> (Option<i32>, Vec<Value>) {
    let mut all = vec!["verify", "--data", "data", "--json"];
    all.extend_from_slice(args);
    let out = run(fixture, &all);
    let reports: Vec<Value> = serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| {
        panic!("verify output is not JSON ({e}): {}", text(&out));
    });
    (out.status.code(), reports)
}

/// The log checks of a report: `name` → (passed, reason code or n/a text).
fn log_checks(report: &Value) -> Vec<(String, bool, String)> {
    (report["checks"].as_array().expect("checks").iter())
        .filter(|c| c["name"].as_str().is_some_and(|n| n.starts_with("log.")))
        .map(|c| {
            let detail = c["reason"]["code"]
                .as_str()
                .or(c["notApplicable"].as_str())
                .unwrap_or("")
                .to_owned();
            (
                c["name"].as_str().unwrap_or("").to_owned(),
                c["passed"].as_bool().unwrap_or(false),
                detail,
            )
        })
        .collect()
}

fn passed(names: &[&str]) -> Vec<(String, bool, String)> {
    names
        .iter()
        .map(|n| ((*n).to_owned(), true, String::new()))
        .collect()
}

fn round_log(fixture: &Fixture, n: u64) -> Option<RoundLog> {
    let bundle = fixture.data.join("tiny/rounds").join(n.to_string());
    read_round_record(&bundle)
        .expect("record")
        .0
        .transparency_log
}

const BUNDLE_CHECKS: [&str; 5] = [
    "log.checkpoint",
    "log.roundOpened",
    "log.receipt",
    "log.measurements",
    "log.consistency",
];

#[test]
fn two_logged_rounds_verify_and_a_truncated_log_is_caught() {
    let _serial = serial();
    let fixture = Fixture::new(&Tiny::default(), &[]);
    init_log(&fixture);
    ok(&round(&fixture, &[]));
    ok(&round(&fixture, &[]));
    // Each round logs its opening, its one pass's measurement and its receipt.
    for (n, index) in [(1, 0), (2, 3)] {
        assert_eq!(
            round_log(&fixture, n),
            Some(RoundLog::Logged {
                origin: ORIGIN.to_owned(),
                round_opened_index: index,
                opening_witness: None,
            })
        );
    }
    // Round 2 chains onto round 1: its `previousReceipt` is round 1's Statement digest.
    let bundle = |n: u64| fixture.data.join("tiny/rounds").join(n.to_string());
    let first =
        receipts::bundle::read_statement_digest(&bundle(1).join(receipts::bundle::ENVELOPE_FILE))
            .expect("digest");
    let previous = |n: u64| {
        read_round_record(&bundle(n))
            .expect("record")
            .0
            .previous_receipt
    };
    assert_eq!((previous(1), previous(2)), (None, Some(first)));
    let checkpoint: Value = serde_json::from_str(&stdout(&run(
        &fixture,
        &["log", "checkpoint", "--data", "data", "--json"],
    )))
    .expect("json");
    assert_eq!(checkpoint["size"], 6);
    ok(&run(&fixture, &["log", "verify", "--data", "data"]));

    // Each round on its own: every proof verifies; the opening is not witnessed.
    for n in ["1", "2"] {
        let (code, reports) = verify(&fixture, &[&format!("data/tiny/rounds/{n}")]);
        assert_eq!(code, Some(0), "{reports:?}");
        let mut expected = passed(&BUNDLE_CHECKS);
        expected.insert(
            4,
            (
                "log.witness".to_owned(),
                false,
                "round opening not witnessed".to_owned(),
            ),
        );
        let mut got = log_checks(&reports[0]);
        got.sort();
        expected.sort();
        assert_eq!(got, expected);
    }
    // The archive: both rounds once each, in chain order.
    let (code, reports) = verify(&fixture, &["data"]);
    assert_eq!(code, Some(0), "{reports:?}");
    let log_report = (reports.iter())
        .find(|r| r["bundle"].as_str().is_some_and(|b| b.ends_with("log")))
        .expect("a report for the log");
    assert_eq!(
        log_checks(log_report),
        passed(&[
            "log.checkpoint",
            "log.archive",
            "log.abandoned",
            "log.submissions"
        ])
    );
    // Remembered under the log's name and its key's id: one file.
    let memory = fixture.dir.path().join("config/referee/checkpoints");
    let remembered: Vec<_> = fs::read_dir(&memory)
        .expect("the checkpoint memory")
        .map(|e| e.expect("an entry").path())
        .collect();
    assert_eq!(remembered.len(), 1, "{remembered:?}");
    let remembered = remembered[0].clone();
    let name = remembered
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    assert!(
        name.starts_with("referee.example_log.")
            && name.ends_with(".checkpoint")
            && name.len() == 47,
        "{name}"
    );
    let remembered_text = fs::read_to_string(&remembered).expect("remembered checkpoint");
    assert!(
        remembered_text.starts_with("referee.example/log\n6\n"),
        "{remembered_text}"
    );
    fs::copy(&remembered, fixture.dir.path().join("seen.checkpoint")).expect("copy");

    // The site serves the log byte for byte under /log/ and each round's proofs beside
    // its page.
    let site = fixture.dir.path().join("site");
    let build = run(
        &fixture,
        &["site", "build", "--data", "data", "--out", "site"],
    );
    ok(&build);
    assert!(
        stdout(&build)
            .contains("\ntransparency log served under log/: 6 entries of referee.example/log\n"),
        "{}",
        text(&build)
    );
    let read = |path: &Path| fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(
        read(&site.join("log/checkpoint")),
        read(&fixture.data.join("log/checkpoint"))
    );
    assert_eq!(
        read(&site.join("log/tile/0/000.p/6")),
        read(&fixture.data.join("log/tile/0/000.p/6"))
    );
    assert_eq!(
        read(&site.join("c/tiny/r/2/round.proof")),
        read(&fixture.data.join("tiny/rounds/2.proof"))
    );
    let index = String::from_utf8(read(&site.join("index.html"))).expect("UTF-8");
    assert!(
        index.contains(
            "<span class=\"mono\">referee.example/log</span>, <strong>6</strong> entries"
        ),
        "{index}"
    );
    let page = String::from_utf8(read(&site.join("c/tiny/r/2/index.html"))).expect("UTF-8");
    assert!(
        page.contains("entry <strong>3</strong> of the log"),
        "{page}"
    );
    ok(&run(&fixture, &["site", "check", "site"]));

    // Truncated: the log's checkpoint is now round 1's sealing checkpoint (size 3),
    // validly signed by the log key; its tiles of size 3 are still there.
    let proofs = fs::read_to_string(fixture.data.join("tiny/rounds/1.proof")).expect("proof");
    let receipt_proof = proofs
        .split("c2sp.org/tlog-proof@v1")
        .nth(2)
        .expect("a second proof");
    let checkpoint = &receipt_proof[receipt_proof.find("\n\n").expect("blank") + 2..];
    assert!(
        checkpoint.starts_with("referee.example/log\n3\n"),
        "{checkpoint}"
    );
    fs::write(fixture.data.join("log/checkpoint"), checkpoint).expect("truncate");
    // A log that no longer holds round 2 fails the site build, which writes nothing…
    let before = fs::read(site.join("index.html")).expect("index");
    let refused = run(
        &fixture,
        &["site", "build", "--data", "data", "--out", "site"],
    );
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(
        text(&refused).contains("transparency log fails its checks (log.archive: ")
            && text(&refused).contains("`--allow-unlogged`"),
        "{}",
        text(&refused)
    );
    assert_eq!(fs::read(site.join("index.html")).expect("index"), before);
    // …unless `--allow-unlogged` is given: then it is not served, and the front page
    // says why.
    let build = run(
        &fixture,
        &[
            "site",
            "build",
            "--data",
            "data",
            "--out",
            "site",
            "--allow-unlogged",
        ],
    );
    ok(&build);
    assert!(
        text(&build).contains("--allow-unlogged: a transparency log that fails its checks"),
        "{}",
        text(&build)
    );
    assert!(
        stdout(&build).contains("\ntransparency log not served: log.archive: "),
        "{}",
        text(&build)
    );
    assert!(!site.join("log/checkpoint").exists());
    let index = fs::read_to_string(site.join("index.html")).expect("index");
    assert!(
        index.contains(
            "The data directory holds a log that did not verify, so it is not served: log.archive"
        ),
        "{index}"
    );
    // Round 1's own proofs still verify; the remembered checkpoint says the log shrank.
    let (code, reports) = verify(&fixture, &["data/tiny/rounds/1"]);
    assert_eq!(code, Some(1));
    let shrank = (log_checks(&reports[0]).into_iter())
        .find(|(name, _, _)| name == "log.consistency")
        .expect("consistency");
    assert_eq!(
        shrank,
        ("log.consistency".to_owned(), false, "logShrank".to_owned())
    );
    // The same from a checkpoint given explicitly, and the memory is not rewound.
    fs::remove_file(&remembered).expect("forget");
    let (code, reports) = verify(
        &fixture,
        &["--checkpoint", "seen.checkpoint", "data/tiny/rounds/1"],
    );
    assert_eq!(code, Some(1));
    let failures: Vec<&Value> = (reports[0]["checks"].as_array().expect("checks").iter())
        .filter(|c| c["passed"] == false && c["notApplicable"].is_null())
        .map(|c| &c["reason"])
        .collect();
    assert_eq!(
        failures,
        [&serde_json::json!({
            "code": "logShrank",
            "known": 6,
            "sourceName": "--checkpoint `seen.checkpoint`",
            "size": 3
        })]
    );
    assert!(!remembered.exists());
    // The archive against the truncated log: round 2's entries are gone.
    let (code, reports) = verify(&fixture, &["--checkpoint", "seen.checkpoint", "data"]);
    assert_eq!(code, Some(1));
    let log_report = (reports.iter())
        .find(|r| r["bundle"].as_str().is_some_and(|b| b.ends_with("log")))
        .expect("a report for the log");
    let reasons: Vec<String> = (log_report["checks"].as_array().expect("checks").iter())
        .filter(|c| c["name"] == "log.archive")
        .map(|c| c["reason"]["message"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(
        reasons,
        [
            "`tiny` round 2: no round-opened entry in the log",
            "`tiny` round 2: no receipt entry in the log"
        ]
    );

    // Its proofs gone, round 2 fails, the log required or not: its receipt says it was
    // logged, and dropping the proofs must not drop the log checks. `--no-log` skips
    // them, and says so.
    fs::remove_file(fixture.data.join("tiny/rounds/2.proof")).expect("rm proof");
    for args in [
        &["data/tiny/rounds/2"][..],
        &["--require-log", "data/tiny/rounds/2"],
    ] {
        let (code, reports) = verify(&fixture, args);
        assert_eq!(code, Some(1));
        assert_eq!(
            log_checks(&reports[0]),
            [("log.roundOpened".to_owned(), false, "log".to_owned())]
        );
    }
    let (code, reports) = verify(&fixture, &["--no-log", "data/tiny/rounds/2"]);
    assert_eq!(code, Some(0), "{reports:?}");
    assert_eq!(
        log_checks(&reports[0]),
        [("log.roundOpened".to_owned(), false, "--no-log".to_owned())]
    );
}

/// A round whose seeds derive from a beacon (a file beacon) opens in round-opened v4: the
/// opening it logged, before reading the beacon, commits to the secret and names the
/// beacon round, with no seed commitments (the seeds do not exist yet); the round
/// verifies with every seed re-derived, and `seeds.beaconOrder` finds no round time to
/// check against in a file beacon.
#[test]
fn a_beacon_round_logs_its_opening_before_its_seeds_exist() {
    let _serial = serial();
    let fixture = Fixture::new(&Tiny::default(), &[]);
    init_log(&fixture);
    let beacon = fixture.dir.path().join("beacon.json");
    let value = "22".repeat(32);
    fs::write(&beacon, format!(r#"{{"round":7,"value":"{value}"}}"#)).expect("beacon file");
    let beacon_arg = beacon.to_str().expect("utf-8 path");
    ok(&round(&fixture, &["--beacon-file", beacon_arg]));
    let bundle = fixture.data.join("tiny/rounds/1");
    let bytes = fs::read(bundle.join("round-opened.dsse.json")).expect("round-opened");
    let envelope = receipts::dsse::Envelope::from_json(&bytes, bytes.len()).expect("envelope");
    let statement: Value = serde_json::from_slice(&envelope.payload).expect("statement");
    assert_eq!(
        statement["predicateType"],
        receipts::model::ROUND_OPENED_PREDICATE_TYPE
    );
    let opened = &statement["predicate"];
    assert_eq!(opened["seedCommitments"], Value::Null);
    assert_eq!(
        opened["beacon"],
        serde_json::json!({"source": "file", "round": 7})
    );
    let record = read_round_record(&bundle).expect("record").0;
    let secret = record.evaluator_secret.expect("secret revealed");
    assert_eq!(
        opened["evaluatorSecretSha256"],
        receipts::rules::seeds::secret_commitment(&secret).to_string()
    );
    assert_eq!(record.beacon.map(|b| b.value.to_hex()), Some(value));
    let (code, reports) = verify(&fixture, &["data/tiny/rounds/1"]);
    assert_eq!(code, Some(0), "{reports:?}");
    let mut seeds: Vec<(String, bool, String)> = (reports[0]["checks"].as_array())
        .expect("checks")
        .iter()
        .filter(|c| c["name"] == "seeds.beaconOrder" || c["name"] == "log.roundOpened")
        .map(|c| {
            (
                c["name"].as_str().unwrap_or("").to_owned(),
                c["passed"].as_bool().unwrap_or(false),
                c["notApplicable"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    seeds.sort();
    assert_eq!(
        seeds,
        [
            ("log.roundOpened".to_owned(), true, String::new()),
            (
                "seeds.beaconOrder".to_owned(),
                false,
                "a file beacon has no round time".to_owned()
            ),
        ]
    );
}

#[test]
fn a_round_without_a_log_fails_require_log() {
    let _serial = serial();
    let fixture = Fixture::new(&Tiny::default(), &[]);
    let out = round(&fixture, &[]);
    ok(&out);
    assert!(
        stdout(&out).contains("Log: round not logged (the data directory has no transparency log)"),
        "{}",
        text(&out)
    );
    assert_eq!(round_log(&fixture, 1), Some(RoundLog::NotLogged));
    assert!(!fixture.data.join("tiny/rounds/1.proof").exists());
    let (code, reports) = verify(&fixture, &["data/tiny/rounds/1"]);
    assert_eq!(code, Some(0), "{reports:?}");
    assert_eq!(
        log_checks(&reports[0]),
        [("log.roundOpened".to_owned(), false, "not logged".to_owned())]
    );
    let (code, reports) = verify(&fixture, &["--require-log", "data/tiny/rounds/1"]);
    assert_eq!(code, Some(1));
    let check = &reports[0]["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["name"] == "log.roundOpened")
        .expect("log.roundOpened")["reason"];
    assert_eq!(check["code"], "notLogged");
    assert_eq!(check["why"], "its receipt records no transparency log");
}

/// Waits until the log's checkpoint has at least `size` entries.
fn wait_for_size(path: &Path, size: u64) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let current = fs::read_to_string(path)
            .ok()
            .and_then(|t| t.lines().nth(1).and_then(|l| l.parse::<u64>().ok()));
        if current.is_some_and(|s| s >= size) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the round never logged its opening"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_witness_cosigns_the_opening_of_a_round_that_requires_it() {
    let _serial = serial();
    let fixture = Fixture::new(&Tiny::default(), &[]);
    let vkey = init_log(&fixture);
    ok(&run(&fixture, &["keygen", "--out", "witness/w"]));
    ok(&run(
        &fixture,
        &[
            "keyring",
            "add",
            "witness/w.pub",
            "--data",
            "data",
            "--role",
            "witness",
            "--origin",
            "witness.example",
        ],
    ));
    // No witness within a second: the round stops before any entry ran.
    let out = round(&fixture, &["--require-witness", "--witness-timeout", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("round 1 is opened and logged at index 0, but no trusted witness cosigned a checkpoint holding it within 1 s; no entry ran"),
        "{}",
        text(&out)
    );
    assert!(!fixture.data.join("tiny/rounds/1").exists());

    // Resumed, it waits again; a witness cosigns meanwhile.
    let mut child = fixture.round_command();
    child
        .arg("--key-dir")
        .arg(fixture.key_dir())
        .args(["--require-witness", "--witness-timeout", "120"])
        .env("XDG_CONFIG_HOME", fixture.dir.path().join("config"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = child.spawn().expect("spawn round");
    wait_for_size(&fixture.data.join("log/checkpoint"), 1);
    ok(&run(
        &fixture,
        &[
            "log",
            "witness",
            "--log",
            "data/log",
            "--key",
            "witness/w.key",
            "--name",
            "witness.example",
            "--log-key",
            &vkey,
        ],
    ));
    let out = child.wait_with_output().expect("round ends");
    ok(&out);
    // The resumed round logged nothing twice: its opening once, its one pass's
    // measurement once, its receipt once.
    let checkpoint = fs::read_to_string(fixture.data.join("log/checkpoint")).expect("cp");
    assert!(
        checkpoint.starts_with("referee.example/log\n3\n"),
        "{checkpoint}"
    );
    match round_log(&fixture, 1) {
        Some(RoundLog::Logged {
            round_opened_index: 0,
            opening_witness:
                Some(OpeningWitness {
                    name,
                    checkpoint_size: 1,
                    ..
                }),
            ..
        }) => assert_eq!(name, "witness.example"),
        other => panic!("not a witnessed opening: {other:?}"),
    }
    assert!(
        stdout(&out).contains("opening witnessed by witness.example at "),
        "{}",
        text(&out)
    );
    let (code, reports) = verify(&fixture, &["data/tiny/rounds/1"]);
    assert_eq!(code, Some(0), "{reports:?}");
    let mut got = log_checks(&reports[0]);
    got.sort();
    let mut expected = passed(&[
        "log.checkpoint",
        "log.roundOpened",
        "log.receipt",
        "log.measurements",
        "log.consistency",
        "log.witness",
    ]);
    expected.sort();
    assert_eq!(got, expected);
}

/// A campaign whose `[log]` requires its named witness and a cosignature on each pass:
/// with a witness cosigning as the log grows, the round's opening, its pass and its
/// receipt are each against a cosigned checkpoint; `verify` checks the pass's
/// cosignature, and the site publishes the round as of its receipt's.
#[test]
fn a_campaign_that_requires_witnesses_has_its_pass_and_receipt_cosigned() {
    let _serial = serial();
    let tiny = Tiny {
        backend: "[log]\nrequired = true\nwitnesses = [\"witness.example\"]\nwitness_each_pass = true\n",
        ..Tiny::default()
    };
    let fixture = Fixture::new(&tiny, &[]);
    let vkey = init_log(&fixture);
    ok(&run(&fixture, &["keygen", "--out", "witness/w"]));
    ok(&run(
        &fixture,
        &[
            "keyring",
            "add",
            "witness/w.pub",
            "--data",
            "data",
            "--role",
            "witness",
            "--origin",
            "witness.example",
        ],
    ));
    let mut child = fixture.round_command();
    child
        .arg("--key-dir")
        .arg(fixture.key_dir())
        .env("XDG_CONFIG_HOME", fixture.dir.path().join("config"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = child.spawn().expect("spawn round");
    // The witness cosigns whatever checkpoint the log has, until the round ends.
    let deadline = Instant::now() + Duration::from_secs(300);
    while child.try_wait().expect("round").is_none() {
        assert!(Instant::now() < deadline, "the round never ended");
        if fixture.data.join("log/checkpoint").is_file() {
            run(
                &fixture,
                &[
                    "log",
                    "witness",
                    "--log",
                    "data/log",
                    "--key",
                    "witness/w.key",
                    "--name",
                    "witness.example",
                    "--log-key",
                    &vkey,
                ],
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = child.wait_with_output().expect("round ends");
    ok(&out);
    let text_out = text(&out);
    for said in [
        "opening witnessed by witness.example",
        "pass 0 witnessed by witness.example",
        "receipt witnessed by witness.example",
    ] {
        assert!(text_out.contains(said), "{said}: {text_out}");
    }
    let (code, reports) = verify(&fixture, &["data/tiny/rounds/1"]);
    assert_eq!(code, Some(0), "{reports:?}");
    let witness_targets: Vec<(String, bool)> = (reports[0]["checks"].as_array().expect("checks"))
        .iter()
        .filter(|c| c["name"] == "log.witness")
        .map(|c| {
            (
                c["target"].as_str().unwrap_or("").to_owned(),
                c["passed"].as_bool().unwrap_or(false),
            )
        })
        .collect();
    assert_eq!(
        witness_targets,
        vec![
            ("witness.example".to_owned(), true),
            ("pass 0".to_owned(), true)
        ]
    );
    ok(&run(
        &fixture,
        &["site", "build", "--data", "data", "--out", "site"],
    ));
    let page = fs::read_to_string(fixture.dir.path().join("site/c/tiny/r/1/index.html"))
        .expect("round page");
    assert!(
        page.contains("the earliest witness cosignature on its receipt&#39;s log checkpoint (witness.example, checkpoint of "),
        "{page}"
    );
}

/// Issue 43: "Verify it yourself" works as written. A logged round's page shows the
/// exact commands; run verbatim in a directory holding only the two downloads
/// (`bundle.tar`, which carries the round's proofs, and the keyring), they pass with the
/// log required.
#[test]
fn the_round_page_verify_commands_pass_verbatim_on_the_downloads() {
    let _serial = serial();
    let fixture = Fixture::new(&Tiny::default(), &[]);
    init_log(&fixture);
    ok(&round(&fixture, &[]));
    ok(&run(
        &fixture,
        &["site", "build", "--data", "data", "--out", "site"],
    ));
    let site = fixture.dir.path().join("site");
    let page = fs::read_to_string(site.join("c/tiny/r/1/index.html")).expect("round page");
    let block = page
        .split("<h2 id=\"verify\">")
        .nth(1)
        .and_then(|rest| rest.split("<pre><code>").nth(1))
        .and_then(|rest| rest.split("</code></pre>").next())
        .expect("the verify commands");
    let commands: Vec<&str> = block.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(commands.len(), 2, "{block}");
    assert_eq!(commands[0], "tar -xf bundle.tar");
    assert!(
        commands[1].starts_with("referee verify --keyring keyring.json --at ")
            && commands[1].ends_with(" --require-log tiny-round-1"),
        "{}",
        commands[1]
    );
    assert!(page.contains("cargo install --locked --git "), "{page}");

    let downloads = fixture.dir.path().join("downloads");
    fs::create_dir_all(&downloads).expect("downloads");
    fs::copy(
        site.join("c/tiny/r/1/bundle.tar"),
        downloads.join("bundle.tar"),
    )
    .expect("tar");
    fs::copy(
        site.join("keys/keyring.json"),
        downloads.join("keyring.json"),
    )
    .expect("keys");
    for line in commands {
        let words: Vec<&str> = line.split(' ').collect();
        let mut command = match words[0] {
            "referee" => bin(),
            "tar" => Command::new("tar"),
            other => panic!("a command the page may not show: {other}"),
        };
        let out = command
            .args(&words[1..])
            .current_dir(&downloads)
            .env("XDG_CONFIG_HOME", downloads.join("config"))
            .output()
            .expect("runs");
        ok(&out);
        if words[0] == "referee" {
            let shown = stdout(&out);
            assert!(shown.trim_end().ends_with("result: PASS"), "{shown}");
            assert!(!shown.contains("not logged"), "{shown}");
        }
    }
}

/// The `log.*` check of `name` in `report`: its failure messages (empty when it passed).
fn messages(report: &Value, name: &str) -> Vec<String> {
    (report["checks"].as_array().expect("checks").iter())
        .filter(|c| c["name"] == name && c["passed"] == false)
        .map(|c| c["reason"]["message"].as_str().unwrap_or("").to_owned())
        .collect()
}

/// Issue 42's log entries end to end: `referee ingest` logs each commitment, a round its
/// passes' measurements; a submission dropped from the records without a logged
/// rejection fails `log.submissions` in archive mode; a measurement entry missing from the
/// round's proofs, or logged again after the later pass, fails `log.measurements`.
#[test]
fn a_dropped_submission_and_a_missing_or_late_measurement_are_caught() {
    use intake::tlog::LogStore;
    use receipts::bundle::sign_statement;
    use receipts::keys::PrivateKey;
    use receipts::model::Sha256Hex;
    use receipts::statement::Statement;
    use receipts::tlog::entry::{EntryKind, LogEntry};
    use receipts::tlog::statements::{
        MEASUREMENT_PREDICATE_TYPE, measurement_proof_extra, statement_path,
    };

    let _serial = serial();
    let fixture = Fixture::new(
        &Tiny {
            runs: 2,
            ..Tiny::default()
        },
        &[],
    );
    init_log(&fixture);
    ok(&run(
        &fixture,
        &[
            "miner",
            "add",
            "miner-a",
            "--campaign",
            "tiny",
            "--data",
            "data",
        ],
    ));
    let mut records = Vec::new();
    for (file, value) in [("kept.diff", "4"), ("dropped.diff", "8")] {
        let diff = support::tiny_diff("max_num_seqs", value);
        fs::write(fixture.dir.path().join(file), &diff).expect("diff");
        let commitment = Sha256Hex::digest(diff.as_bytes()).to_string();
        ok(&run(
            &fixture,
            &[
                "ingest",
                file,
                "--miner",
                "miner-a",
                "--commitment",
                &commitment,
                "--campaign",
                "tiny",
                "--data",
                "data",
                "--key-dir",
                "keys",
            ],
        ));
        records.push(commitment);
    }
    // Two submission entries, each with its signed statement.
    let statements = fixture.data.join("tiny/statements/submission");
    assert_eq!(fs::read_dir(&statements).expect("statements").count(), 2);
    // The evaluator drops the second from its records before the round: no rejection
    // is logged, the round does not see it.
    let dropped = &records[1];
    for ext in ["json", "diff"] {
        fs::remove_file(
            fixture
                .data
                .join(format!("tiny/submissions/{dropped}.{ext}")),
        )
        .expect("drop");
    }
    ok(&round(&fixture, &[]));
    // Two submissions, the round's opening, two passes' measurements, its receipt.
    let checkpoint: Value = serde_json::from_str(&stdout(&run(
        &fixture,
        &["log", "checkpoint", "--data", "data", "--json"],
    )))
    .expect("json");
    assert_eq!(checkpoint["size"], 6);
    let (code, reports) = verify(&fixture, &["data/tiny/rounds/1"]);
    assert_eq!(code, Some(0), "{reports:?}");
    assert!(messages(&reports[0], "log.measurements").is_empty());
    assert!(
        (log_checks(&reports[0]).iter())
            .any(|c| *c == ("log.measurements".to_owned(), true, String::new())),
        "{reports:?}"
    );
    let (code, reports) = verify(&fixture, &["data"]);
    assert_eq!(code, Some(1));
    let log_report = (reports.iter())
        .find(|r| r["bundle"].as_str().is_some_and(|b| b.ends_with("log")))
        .expect("a report for the log");
    assert_eq!(
        messages(log_report, "log.submissions"),
        [format!(
            "submission {dropped} (logged at index 1, miner `miner-a`) is in no round, has no logged gate rejection and is not waiting for a round"
        )]
    );
    assert!(messages(log_report, "log.archive").is_empty());
    assert!(messages(log_report, "log.abandoned").is_empty());

    // Pass 1's measurement proof removed from the round's proofs.
    let proof_path = fixture.data.join("tiny/rounds/1.proof");
    let proofs = fs::read_to_string(&proof_path).expect("proofs");
    let header = "c2sp.org/tlog-proof@v1\n";
    let all: Vec<String> = proofs
        .split(header)
        .filter(|p| !p.is_empty())
        .map(|p| format!("{header}{p}"))
        .collect();
    assert_eq!(all.len(), 4, "{proofs}");
    let pass_proof = |pass: u32| {
        (all.iter())
            .position(|p| decoded_extra(p).starts_with(&format!("measurement {pass} ")))
            .expect("a measurement proof")
    };
    let without: String = (all.iter().enumerate())
        .filter(|(i, _)| *i != pass_proof(1))
        .map(|(_, p)| p.as_str())
        .collect();
    fs::write(&proof_path, &without).expect("drop a proof");
    let (code, reports) = verify(&fixture, &["data/tiny/rounds/1"]);
    assert_eq!(code, Some(1));
    assert_eq!(
        messages(&reports[0], "log.measurements"),
        ["pass 1 has no measurement entry in the log"]
    );

    // Pass 0's files logged again after pass 1 (and after the receipt): a new statement
    // of the same files, its subjects in another order, appended to the log, its proof in
    // place of pass 0's.
    let pass0 = decoded_extra(&all[pass_proof(0)]);
    let sha0: Sha256Hex = pass0.rsplit(' ').next().expect("sha").parse().expect("sha");
    let campaign_dir = fixture.data.join("tiny");
    let original = fs::read(statement_path(&campaign_dir, EntryKind::Measurement, &sha0))
        .expect("pass 0's statement");
    let envelope = receipts::dsse::Envelope::from_json(&original, 1 << 20).expect("envelope");
    let mut statement: Statement = serde_json::from_slice(&envelope.payload).expect("statement");
    assert_eq!(statement.predicate_type, MEASUREMENT_PREDICATE_TYPE);
    assert!(statement.subject.len() >= 2, "{:?}", statement.subject);
    statement.subject.reverse();
    let key = PrivateKey::load(&fixture.key).expect("key");
    let late = sign_statement(&statement, &[&key])
        .expect("sign")
        .to_file_bytes()
        .expect("bytes");
    let late_sha = Sha256Hex::digest(&late);
    let late_path = statement_path(&campaign_dir, EntryKind::Measurement, &late_sha);
    fs::write(&late_path, &late).expect("store");
    let store = LogStore::open(&fixture.data).expect("log");
    let log_key = PrivateKey::load(&fixture.key_dir().join("log.key")).expect("log key");
    let entry = LogEntry::for_envelope(
        "tiny".parse().expect("id"),
        Some(1),
        EntryKind::Measurement,
        &late,
    )
    .to_bytes()
    .expect("entry");
    let index = store
        .append(&log_key, &[entry])
        .expect("append")
        .first_index;
    assert_eq!(index, 6);
    let verifier = store.verifier(log_key.public()).expect("verifier");
    let (_, current) = store.checkpoint(&verifier).expect("checkpoint");
    let late_proof = store
        .tlog_proof(
            &verifier,
            index,
            &current,
            Some(measurement_proof_extra(0, &late_sha).into_bytes()),
        )
        .expect("proof");
    let replaced: String = (all.iter().enumerate())
        .map(|(i, p)| {
            if i == pass_proof(0) {
                String::from_utf8(late_proof.to_bytes()).expect("UTF-8")
            } else {
                p.clone()
            }
        })
        .collect();
    fs::write(&proof_path, &replaced).expect("late proof");
    let (code, reports) = verify(&fixture, &["data/tiny/rounds/1"]);
    assert_eq!(code, Some(1));
    assert_eq!(
        messages(&reports[0], "log.measurements"),
        [
            "pass 0's measurement entry is at index 6, outside the round's entries (round-opened at 2, receipt at 5)".to_owned(),
            "pass 0's measurement entry (index 6) comes after pass 1's (index 4): not in pass order".to_owned(),
        ]
    );
}

/// The `extra` of a tlog-proof's text, decoded.
fn decoded_extra(proof: &str) -> String {
    use base64::Engine as _;
    let line = (proof.lines())
        .find_map(|l| l.strip_prefix("extra "))
        .unwrap_or_default();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(line)
        .unwrap_or_default();
    String::from_utf8(bytes).unwrap_or_default()
}
