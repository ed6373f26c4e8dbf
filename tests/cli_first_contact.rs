//! Issue 17, "first contact": what a first user of the binary meets. Exit codes that say
//! what happened (and are documented in every `--help`), refusals that name the mistake
//! (`keygen --out <dir>`, `verify --threshold 0`, a directory or `.pub` as a private key,
//! `bench serve --rate 0`), a single `.pub` accepted as a keyring, `round --json`,
//! people's units in `status`, and an interrupted round that says how to resume.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use referee::demo::{BASELINE_ENGINE_TOML, config_diff, set_key};

use support::{
    Fixture, SERIAL, Tiny, ingest_cli, ok, referee, setup_cli_campaign as setup_campaign, stderr,
    stdout,
};

/// `referee ingest <file>` by `miner-a` of campaign `cli`.
fn ingest_file(dir: &Path, file: &str, bytes: &[u8]) -> std::process::Output {
    ingest_cli(dir, file, bytes, &[])
}

/// Regression: `ingest` exited 0 for a rejected submission, so a script could not tell.
/// Rejected is 1; queued is 0; a duplicate (recorded and skipped) is 0.
#[test]
fn ingest_exits_1_when_the_submission_is_rejected() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    setup_campaign(dir, "\n[surface]\nmax_diff_bytes = 4096\n");
    let rejected = ingest_file(dir, "big.diff", &vec![b'x'; 5000]);
    assert_eq!(rejected.status.code(), Some(1), "{rejected:?}");
    assert!(stdout(&rejected).contains("state rejected"));

    let diff = config_diff(
        BASELINE_ENGINE_TOML,
        &set_key(BASELINE_ENGINE_TOML, "max_num_seqs", "2"),
    )
    .unwrap();
    let queued = ingest_file(dir, "ok.diff", diff.as_bytes());
    assert_eq!(queued.status.code(), Some(0), "{queued:?}");
    assert!(
        stdout(&queued).contains("bench_queued"),
        "{}",
        stdout(&queued)
    );
    let duplicate = ingest_file(dir, "ok.diff", diff.as_bytes());
    assert_eq!(duplicate.status.code(), Some(0), "{duplicate:?}");
    assert!(stdout(&duplicate).contains("duplicate of"));
}

/// Regression: no `--help` said what the exit codes mean.
#[test]
fn every_command_documents_its_exit_status() {
    let tmp = tempfile::tempdir().unwrap();
    for command in [
        &[][..],
        &["keygen"],
        &["keyring", "add"],
        &["seal"],
        &["verify"],
        &["engine"],
        &["bench", "serve"],
        &["campaign"],
        &["miner"],
        &["ingest"],
        &["status"],
        &["round"],
        &["show"],
        &["rounds"],
        &["leader"],
        &["demo"],
    ] {
        let mut args = command.to_vec();
        args.push("--help");
        let help = referee(tmp.path(), &args);
        assert_eq!(help.status.code(), Some(0), "{command:?}");
        let text = stdout(&help);
        assert!(
            text.contains("Exit status: 0") && text.contains("usage or I/O error"),
            "{command:?}: {text}"
        );
    }
    let ingest = stdout(&referee(tmp.path(), &["ingest", "--help"]));
    assert!(ingest.contains("1 when the gates rejected it"), "{ingest}");
    let round = stdout(&referee(tmp.path(), &["round", "--help"]));
    assert!(round.contains("130 when interrupted"), "{round}");
}

/// Regression: `keygen --out keys` silently wrote the hidden `keys/.key` and `keys/.pub`.
#[test]
fn keygen_refuses_a_directory_as_out() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir(dir.join("keys")).unwrap();
    for out in ["keys", "keys/", "fresh/"] {
        let keygen = referee(dir, &["keygen", "--out", out]);
        assert_eq!(keygen.status.code(), Some(2), "{out}: {keygen:?}");
        let err = stderr(&keygen);
        assert!(
            err.contains(&format!("`{out}` is a directory"))
                && err.contains("file stem like `keys/op`"),
            "{out}: {err}"
        );
    }
    assert!(!dir.join("keys/.key").exists() && !dir.join("keys/.pub").exists());
    assert!(!dir.join("fresh").exists());
}

/// Regression: `--threshold 0` was taken (passing a bundle nobody trusted signed); a
/// `.pub` file as `--keyring` failed to parse as a keyring.
#[test]
fn verify_refuses_threshold_0_and_accepts_a_single_public_key() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let zero = referee(dir, &["verify", "bundle", "--threshold", "0"]);
    assert_eq!(zero.status.code(), Some(2), "{zero:?}");
    assert!(
        stderr(&zero).contains("must be at least 1"),
        "{}",
        stderr(&zero)
    );

    let keygen = referee(dir, &["keygen", "--out", "keys/op"]);
    assert_eq!(keygen.status.code(), Some(0), "{keygen:?}");
    let keyid = stdout(&keygen)
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("keyid "))
        .unwrap()
        .to_owned();
    std::fs::create_dir_all(dir.join("bundle")).unwrap();
    std::fs::write(dir.join("bundle/result.json"), b"{}").unwrap();
    std::fs::write(dir.join("predicate.json"), b"{\"note\":\"x\"}").unwrap();
    let seal = referee(
        dir,
        &[
            "seal",
            "bundle",
            "--key",
            "keys/op.key",
            "--predicate",
            "predicate.json",
            "--predicate-type",
            "https://example.com/predicates/demo/v1",
        ],
    );
    assert_eq!(seal.status.code(), Some(0), "{seal:?}");
    let verify = referee(dir, &["verify", "bundle", "--keyring", "keys/op.pub"]);
    assert_eq!(verify.status.code(), Some(0), "{verify:?}");
    assert!(stderr(&verify).contains(&keyid), "{}", stderr(&verify));
    assert!(stdout(&verify).contains("result: PASS"));
}

/// Regression: a directory or a `.pub` given as the private key got "chmod 600" advice.
#[test]
fn a_directory_or_public_key_as_private_key_is_named_as_such() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let keygen = referee(dir, &["keygen", "--out", "keys/op"]);
    assert_eq!(keygen.status.code(), Some(0), "{keygen:?}");
    for (key, needle) in [
        ("keys", "`keys` is a directory, not a key file"),
        (
            "keys/op.pub",
            "`keys/op.pub` is a public key; pass the `.key` file",
        ),
    ] {
        let round = referee(
            dir,
            &["round", "--campaign", "cli", "--data", "data", "--key", key],
        );
        assert_eq!(round.status.code(), Some(2), "{round:?}");
        let err = stderr(&round);
        assert!(err.contains(needle), "{key}: {err}");
        assert!(!err.contains("chmod"), "{key}: {err}");
    }
}

/// Regression: `bench serve --rate 0` said "at most 3 decimals".
#[test]
fn bench_rate_0_says_the_minimum() {
    let tmp = tempfile::tempdir().unwrap();
    let bench = referee(
        tmp.path(),
        &[
            "bench",
            "serve",
            "--workload",
            "missing.toml",
            "--rate",
            "0",
        ],
    );
    assert_eq!(bench.status.code(), Some(2), "{bench:?}");
    let err = stderr(&bench);
    assert!(err.contains("at least 0.001 req/s"), "{err}");
    assert!(!err.contains("decimals"), "{err}");
}

// --- rounds -----------------------------------------------------------------------

/// The tiny campaign (tests/support) with one challenger, `miner-a`, queued.
fn fixture() -> Fixture {
    Fixture::new(&Tiny::default(), &[("miner-a", "max_num_seqs", "4")])
}

/// The fixture's `referee round` with `extra` arguments.
fn round_command(fixture: &Fixture, extra: &[&str]) -> Command {
    let mut command = fixture.round_command();
    command.args(extra);
    command
}

/// Regression: `round` had no `--json`, and `status` showed no round facts: now the
/// summary is JSON in integers, and `status` says each submission's latest round, its
/// score and throughput in people's units, and who leads.
#[test]
fn round_json_and_status_in_peoples_units() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let fixture = fixture();
    let round = round_command(&fixture, &["--json"]).output().unwrap();
    ok(&round);
    let json: serde_json::Value =
        serde_json::from_slice(&round.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(&round)));
    assert_eq!(json["round"], 1);
    assert_eq!(json["status"], "complete");
    assert!(json["leaderChanged"].is_boolean());
    assert!(json["decision"].is_string());
    assert_eq!(json["resumed"], false);
    let entries = json["entries"].as_array().unwrap();
    let challenger = entries
        .iter()
        .find(|e| e["role"] == "challenger")
        .expect("a challenger entry");
    assert_eq!(challenger["miner"], "miner-a");
    assert!(challenger["scorePpm"].is_i64(), "{challenger}");
    assert!(challenger["throughputMilliRps"].is_u64(), "{challenger}");
    assert!(challenger["durationMs"].is_i64(), "{challenger}");
    assert!(challenger["patch"].as_str().unwrap().len() == 64);
    let leader = json["leaderChanged"] == true;

    let status = Command::new(env!("CARGO_BIN_EXE_referee"))
        .args(["status", "--campaign", "tiny", "--data"])
        .arg(&fixture.data)
        .output()
        .unwrap();
    ok(&status);
    let text = stdout(&status);
    let header = text.lines().next().unwrap();
    for column in ["leader", "round", "score", "throughput"] {
        assert!(header.contains(column), "{header}");
    }
    let row = text.lines().nth(1).unwrap();
    assert!(row.contains(" req/s"), "{row}");
    assert!(
        !row.contains("ppm") && !row.contains("milli-req/s"),
        "{row}"
    );
    // The score in %, as everywhere (issue 43): `+1.15 %` for 11 500 ppm.
    let score = challenger["scorePpm"].as_i64().unwrap();
    let expected = verifier::view::format_score_percent(score);
    assert!(expected.ends_with(" %"), "{expected}");
    assert!(row.contains(&expected), "{expected} in {row}");
    assert_eq!(row.contains(" yes "), leader, "{row}");
    let hash = challenger["patch"].as_str().unwrap();
    let log = Command::new(env!("CARGO_BIN_EXE_referee"))
        .args(["status", &hash[..12], "--campaign", "tiny", "--data"])
        .arg(&fixture.data)
        .output()
        .unwrap();
    ok(&log);
    assert!(
        stdout(&log).contains("latest round 1: score "),
        "{}",
        stdout(&log)
    );
    drop(fixture.dir);
}

/// Regression: SIGTERM during a round exited without a word; now it says how to go on
/// and exits 130, and the resumed round reports the whole round's wall time and the
/// resumed part.
#[test]
fn an_interrupted_round_says_how_to_resume_and_reports_both_times() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let fixture = fixture();
    let child = round_command(&fixture, &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Well into the round: the round has opened (its work directory exists).
    let journal = fixture.data.join("tiny/.work");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        std::thread::sleep(std::time::Duration::from_millis(200));
        let opened = !walk(&journal).is_empty();
        if opened || std::time::Instant::now() > deadline {
            break;
        }
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    if out.status.success() {
        // The round finished before the signal: nothing to resume here.
        panic!("the round ended before SIGTERM: {}", stderr(&out));
    }
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("interrupted — run the same command to resume"),
        "{}",
        stderr(&out)
    );
    let resumed = round_command(&fixture, &[]).output().unwrap();
    ok(&resumed);

    // A round killed after its baseline (journal record 1) and resumed: both times.
    let fixture = self::fixture();
    let killed = round_command(&fixture, &[])
        .env("REFEREE_ROUND_ABORT_AFTER", "2")
        .output()
        .unwrap();
    assert!(!killed.status.success(), "{}", stderr(&killed));
    let resumed = round_command(&fixture, &[]).output().unwrap();
    ok(&resumed);
    let text = stdout(&resumed);
    assert!(
        text.contains("wall for the whole round (from its start at "),
        "{text}"
    );
    assert!(text.contains("of it in this resumed run"), "{text}");
    assert!(text.contains("Resumed run: "), "{text}");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                out.extend(walk(&path));
            }
            out.push(path);
        }
    }
    out
}

/// A demo whose client self-test misses its bound (1 µs: no machine holds it) does not
/// open its round, exits 2, and says how to run the demo on a busy machine; the round's
/// own refusal (figures, bound) follows as the cause.
#[test]
fn a_demo_on_a_busy_machine_says_how_to_run_it() {
    let tmp = tempfile::tempdir().unwrap();
    let output = referee(
        tmp.path(),
        &[
            "demo",
            "--data",
            "data",
            "--key-dir",
            "keys",
            "--send-lag-bound-us",
            "1",
        ],
    );
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let message = stderr(&output);
    assert!(
        message.contains(
            "error: the demo's round did not open on this busy machine: run it when the \
             machine is quieter, or with a looser bound in a new data directory, e.g. \
             `referee demo --data demo-busy --send-lag-bound-us 100000`"
        ),
        "{message}"
    );
    assert!(
        message.contains("the load client cannot keep its schedule")
            && message.contains("> bound 1 µs"),
        "{message}"
    );
}

/// Issue 43: an argument error quotes what was typed, and a terminal must not act on what
/// it quotes: bidi controls come back escaped, terminal sequences not at all, and the
/// exit status is still 2.
#[test]
fn an_argument_error_quotes_hostile_text_escaped() {
    let out = Command::new(env!("CARGO_BIN_EXE_referee"))
        .arg("--bogus\u{1b}]0;pwned\u{7}\u{202e}txt")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).expect("utf-8");
    assert!(
        stderr.starts_with("error: unexpected argument '--bogus"),
        "{stderr}"
    );
    assert!(stderr.contains("\\u{202e}txt'"), "{stderr}");
    assert!(
        !stderr.contains('\u{202e}') && !stderr.contains('\u{1b}') && !stderr.contains('\u{7}'),
        "{stderr:?}"
    );
    // Help is referee's own text, printed whole, with status 0.
    let help = Command::new(env!("CARGO_BIN_EXE_referee"))
        .arg("--help")
        .output()
        .expect("runs");
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&help.stdout).contains("Usage: referee"));
}
