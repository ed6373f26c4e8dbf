//! `referee log` end to end: a log of two rounds' four entries whose proofs verify, a
//! witness that cosigns and then refuses a truncated or rewritten log, and a log key that
//! counts only in its role.

mod support;

use std::fs;
use std::path::Path;

use support::referee;

/// `referee <args>` in `dir`, asserted to succeed; its stdout.
fn ok(dir: &Path, args: &[&str]) -> String {
    let out = referee(dir, args);
    assert!(out.status.success(), "{args:?}: {}", support::text(&out));
    String::from_utf8(out.stdout).expect("utf-8")
}

/// Builds `data` with a log of `rounds` × (round-opened, receipt) entries whose envelope
/// stand-ins hold `tag`; returns the log's verifier key string.
fn build_log(dir: &Path, data: &str, tag: &str, rounds: u64) -> String {
    let init = ok(
        dir,
        &[
            "log",
            "init",
            "--data",
            data,
            "--key-dir",
            "keys",
            "--origin",
            "referee.example/log",
            "--json",
        ],
    );
    let init: serde_json::Value = serde_json::from_str(&init).expect("json");
    for round in 1..=rounds {
        for kind in ["round-opened", "receipt"] {
            let bundle = dir.join(format!("{data}-{round}"));
            fs::create_dir_all(&bundle).expect("mkdir");
            let name = if kind == "receipt" {
                "receipt.dsse.json"
            } else {
                "opened.dsse.json"
            };
            let envelope = bundle.join(name);
            fs::write(&envelope, format!("{{\"{tag}\":\"{round} {kind}\"}}")).expect("write");
            let envelope = envelope.to_str().expect("utf-8").to_owned();
            ok(
                dir,
                &[
                    "log",
                    "append",
                    "--data",
                    data,
                    "--key-dir",
                    "keys",
                    "--campaign",
                    "demo",
                    "--round",
                    &round.to_string(),
                    "--kind",
                    kind,
                    "--envelope",
                    &envelope,
                ],
            );
        }
    }
    init["vkey"].as_str().expect("vkey").to_owned()
}

#[test]
fn two_rounds_make_four_entries_whose_proofs_verify() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    build_log(dir, "data", "a", 2);
    let verify: serde_json::Value =
        serde_json::from_str(&ok(dir, &["log", "verify", "--data", "data", "--json"]))
            .expect("json");
    assert_eq!(verify["ok"], true);
    let prove: serde_json::Value = serde_json::from_str(&ok(
        dir,
        &["log", "prove", "--data", "data", "data-2", "--json"],
    ))
    .expect("json");
    assert_eq!(prove["size"], 4);
    let entries = prove["entries"].as_array().expect("entries");
    assert_eq!(entries.len(), 2);
    assert_eq!(
        (entries[0]["index"].clone(), entries[0]["kind"].clone()),
        (2.into(), "round-opened".into())
    );
    assert_eq!(
        (entries[1]["index"].clone(), entries[1]["kind"].clone()),
        (3.into(), "receipt".into())
    );
    // In a tree of 4 every inclusion proof has two hashes.
    assert_eq!(entries[1]["proof"].as_array().expect("proof").len(), 2);
    // The log key is trusted with role `log` and its origin, not as an evaluator key.
    let keyring: serde_json::Value =
        serde_json::from_slice(&fs::read(dir.join("data/keyring.json")).expect("keyring"))
            .expect("json");
    assert_eq!(keyring[0]["role"], "log");
    assert_eq!(keyring[0]["origin"], "referee.example/log");
    let ring = receipts::keys::Keyring::load(&dir.join("data/keyring.json")).expect("loads");
    assert!(ring.keys().is_empty());
    assert_eq!(ring.role_keys().len(), 1);
}

#[test]
fn a_witness_refuses_a_truncated_or_rewritten_log() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let vkey = build_log(dir, "data", "a", 2);
    ok(dir, &["keygen", "--out", "witness/w"]);
    let witness = [
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
        "--json",
    ];
    let first: serde_json::Value = serde_json::from_str(&ok(dir, &witness)).expect("json");
    assert_eq!(
        (first["ok"].clone(), first["size"].clone()),
        (true.into(), 4.into())
    );
    let checkpoint = fs::read_to_string(dir.join("data/log/checkpoint")).expect("checkpoint");
    assert_eq!(checkpoint.matches("\u{2014} ").count(), 2, "{checkpoint}");
    fs::copy(dir.join("data/log/checkpoint"), dir.join("seen.checkpoint")).expect("copy");

    // The same key re-signs a log of one round: smaller than what the witness saw.
    build_log(dir, "short", "a", 1);
    fs::remove_dir_all(dir.join("data/log")).expect("rm");
    fs::rename(dir.join("short/log"), dir.join("data/log")).expect("mv");
    let out = referee(dir, &witness);
    assert_eq!(out.status.code(), Some(1));
    let refused: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        refused["detail"],
        "refused: the log shrank from 4 to 2 entries"
    );

    // A rewritten log of the same length: other entries, consistent with nothing seen.
    build_log(dir, "other", "b", 2);
    fs::remove_dir_all(dir.join("data/log")).expect("rm");
    fs::rename(dir.join("other/log"), dir.join("data/log")).expect("mv");
    let out = referee(dir, &witness);
    assert_eq!(out.status.code(), Some(1));
    let refused: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        refused["detail"],
        "refused: checkpoint of size 4 is not consistent with the one seen at size 4: proof does not lead to the expected root"
    );
    // `log consistency` between the seen checkpoint and the rewritten log's says so too.
    let out = referee(
        dir,
        &[
            "log",
            "consistency",
            "--data",
            "data",
            "seen.checkpoint",
            "data/log/checkpoint",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "inconsistent: proof does not lead to the expected root\n"
    );
}
