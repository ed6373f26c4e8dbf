//! End to end through the binary: `referee keygen` → `keyring add` → `seal` → `verify`,
//! then a one-byte change to an artifact and to the envelope each make `verify` exit 1
//! naming the file; a missing bundle exits 2 (issue 2, Done when).

use std::path::Path;
use std::process::{Command, Output};

fn referee(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_referee"))
        .args(args)
        .current_dir(dir)
        .env_remove("REFEREE_DATA")
        .output()
        .expect("run referee")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn flip_byte(path: &Path, at: usize) {
    let mut bytes = std::fs::read(path).expect("read");
    bytes[at] ^= 1;
    std::fs::write(path, bytes).expect("write");
}

#[test]
fn keygen_seal_verify_and_tamper() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let keygen = referee(dir, &["keygen", "--out", "keys/operator"]);
    assert_eq!(keygen.status.code(), Some(0), "{keygen:?}");
    let printed = stdout(&keygen);
    assert!(printed.starts_with("keyid "), "{printed}");
    let seed = std::fs::read_to_string(dir.join("keys/operator.key")).expect("key");
    assert!(
        !printed.contains(seed.trim()),
        "the private key is never printed"
    );
    let again = referee(dir, &["keygen", "--out", "keys/operator"]);
    assert_eq!(again.status.code(), Some(2), "keygen refuses to overwrite");

    let add = referee(
        dir,
        &["keyring", "add", "keys/operator.pub", "--data", "data"],
    );
    assert_eq!(add.status.code(), Some(0), "{add:?}");

    std::fs::create_dir_all(dir.join("bundle/logs")).expect("mkdir");
    std::fs::write(dir.join("bundle/logs/engine.log"), b"started\nhealthy\n").expect("write");
    std::fs::write(dir.join("bundle/result.json"), b"{\"scorePpm\":1200}").expect("write");
    std::fs::write(dir.join("predicate.json"), b"{\"note\":\"by hand\"}").expect("write");
    let seal = referee(
        dir,
        &[
            "seal",
            "bundle",
            "--key",
            "keys/operator.key",
            "--predicate",
            "predicate.json",
            "--predicate-type",
            "https://example.com/predicates/demo/v1",
        ],
    );
    assert_eq!(seal.status.code(), Some(0), "{seal:?}");
    assert!(stdout(&seal).contains("subjects 2"));

    let verify = referee(dir, &["verify", "bundle", "--data", "data"]);
    assert_eq!(verify.status.code(), Some(0), "{}", stdout(&verify));
    assert!(stdout(&verify).ends_with("result: PASS\n"));

    let json = referee(dir, &["verify", "bundle", "--data", "data", "--json"]);
    let reports: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(reports[0]["checks"][0]["name"], "envelope.parse");

    for (file, at) in [
        ("bundle/logs/engine.log", 3),
        ("bundle/receipt.dsse.json", 40),
    ] {
        let path = dir.join(file);
        flip_byte(&path, at);
        let verify = referee(dir, &["verify", "bundle", "--data", "data"]);
        assert_eq!(verify.status.code(), Some(1), "{file}");
        let name = Path::new(file)
            .strip_prefix("bundle")
            .expect("prefix")
            .to_string_lossy()
            .into_owned();
        let first_failure = stdout(&verify)
            .lines()
            .find(|l| l.trim_start().starts_with("FAIL"))
            .expect("a failed check")
            .to_owned();
        assert!(
            first_failure.contains(&format!("`{name}`")),
            "{file}: {first_failure}"
        );
        flip_byte(&path, at);
    }

    let missing = referee(dir, &["verify", "no-such-bundle", "--data", "data"]);
    assert_eq!(missing.status.code(), Some(2));

    // With --json a missing bundle is an object with an error; the others are verified.
    let args = [
        "verify",
        "bundle",
        "no-such-bundle",
        "--data",
        "data",
        "--json",
    ];
    let json = referee(dir, &args);
    assert_eq!(json.status.code(), Some(2));
    let reports: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(reports[0]["passed"], true);
    assert_eq!(reports[0]["checks"][0]["name"], "envelope.parse");
    assert_eq!(reports[1]["passed"], false);
    assert_eq!(reports[1]["bundle"], "no-such-bundle");
    assert_eq!(
        reports[1]["error"],
        "bundle `no-such-bundle` is not a directory"
    );
}
