//! `referee campaign add`, `referee ingest` and `referee status` through the binary
//! (issue 11): untrusted text escaped in text output and raw in JSON, an oversized diff
//! refused unread with nothing stored, a backend that cannot build refused at
//! `campaign add`.

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;

use receipts::model::Sha256Hex;

use support::{
    ingest_cli, referee, setup_cli_campaign as setup, stderr, stdout,
    write_cli_campaign as write_campaign,
};

/// `referee ingest <file>` by `miner-a` with the honest commitment, `--json` if `json`.
fn ingest(dir: &Path, file: &str, bytes: &[u8], json: bool) -> Output {
    ingest_cli(dir, file, bytes, if json { &["--json"] } else { &[] })
}

/// `prefix` + `path` C-quoted as git writes a path with bytes outside printable ASCII.
fn c_quoted(prefix: &str, path: &str) -> String {
    let mut out = String::from("\"");
    for b in format!("{prefix}{path}").bytes() {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(char::from(b)),
            _ => out.push_str(&format!("\\{b:03o}")),
        }
    }
    out.push('"');
    out
}

/// Regression: a diff path with ESC, CR or an invisible code point reached the terminal
/// raw through `ingest` and `status`, where it could recolour, rewrite or disguise the
/// line. Text output escapes it; JSON carries it raw.
#[test]
fn untrusted_paths_are_escaped_in_text_and_raw_in_json() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    setup(dir, "");
    let path = "docs/x\u{1b}[31m\ry\u{200c}z.md";
    let (a, b) = (c_quoted("a/", path), c_quoted("b/", path));
    let diff = format!(
        "diff --git {a} {b}\nnew file mode 100644\nindex 0000000..587be6b\n--- /dev/null\n+++ {b}\n@@ -0,0 +1 @@\n+x\n"
    );
    let sha = Sha256Hex::digest(diff.as_bytes()).to_string();
    let escaped = "docs/x\\u{1b}[31m\\ry\\u{200c}z.md";
    let raw_chars = ['\u{1b}', '\r', '\u{200c}'];

    let text = ingest(dir, "hostile.diff", diff.as_bytes(), false);
    // Rejected at the surface gate: `ingest` exits 1 (issue 17).
    assert_eq!(text.status.code(), Some(1), "{text:?}");
    let printed = stdout(&text);
    assert!(printed.contains("state rejected"), "{printed}");
    assert!(printed.contains(escaped), "{printed:?}");
    assert!(
        !printed.contains(raw_chars),
        "raw control or invisible characters in {printed:?}"
    );

    let table = referee(dir, &["status", "--campaign", "cli", "--data", "data"]);
    assert_eq!(table.status.code(), Some(0), "{table:?}");
    let printed = stdout(&table);
    assert!(printed.contains(escaped), "{printed:?}");
    assert!(!printed.contains(raw_chars), "{printed:?}");

    let log = referee(
        dir,
        &["status", &sha, "--campaign", "cli", "--data", "data"],
    );
    assert_eq!(log.status.code(), Some(0), "{log:?}");
    assert!(stdout(&log).contains(escaped), "{log:?}");
    assert!(!stdout(&log).contains(raw_chars), "{log:?}");

    let json = referee(
        dir,
        &[
            "status",
            &sha,
            "--campaign",
            "cli",
            "--json",
            "--data",
            "data",
        ],
    );
    assert_eq!(json.status.code(), Some(0), "{json:?}");
    let record: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    let reason = record["events"]
        .as_array()
        .and_then(|events| events.last())
        .and_then(|event| event["reason"].as_str())
        .expect("a last reason")
        .to_owned();
    assert!(
        reason.contains(&format!("`{path}`: control characters are not accepted")),
        "{reason:?}"
    );
    assert!(!reason.contains(escaped), "{reason:?}");
}

/// Regression: `ingest` read a diff whole, and stored it whole, before the size check
/// rejected it. It reads at most the limit plus one byte and stores nothing of it.
#[test]
fn an_oversized_diff_is_rejected_and_not_stored() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    setup(dir, "\n[surface]\nmax_diff_bytes = 4096\n");
    let big = vec![b'+'; 1 << 20];
    let output = ingest(dir, "big.diff", &big, false);
    assert_eq!(output.status.code(), Some(1), "{output:?}"); // rejected (issue 17)
    let printed = stdout(&output);
    assert!(printed.contains("state rejected"), "{printed}");
    assert!(
        printed.contains(
            "fetched: the diff is larger than 4096 bytes (reading stopped after 4097 bytes)"
        ),
        "{printed}"
    );
    let submissions = dir.join("data/cli/submissions");
    let stored: Vec<PathBuf> = std::fs::read_dir(&submissions)
        .expect("submissions/")
        .map(|e| e.expect("entry").path())
        .collect();
    assert!(
        stored
            .iter()
            .all(|p| p.extension().is_some_and(|e| e == "json")),
        "{stored:?}"
    );
    assert_eq!(stored.len(), 1, "{stored:?}");
}

/// Regression: a campaign with the `docker` backend was frozen, and every submission then
/// stopped in `building`. `campaign add` refuses it with the reason, writing nothing.
#[test]
fn campaign_add_refuses_the_docker_backend() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    write_campaign(
        dir,
        "\n[backend]\nkind = \"docker\"\nimage = \"engine:v1\"\n",
    );
    let add = referee(
        dir,
        &["campaign", "add", "src/campaign.toml", "--data", "data"],
    );
    assert_eq!(add.status.code(), Some(2), "{add:?}");
    let message = stderr(&add);
    assert!(
        message.contains("backend `docker` cannot build submissions yet"),
        "{message}"
    );
    assert!(message.contains("use `builtin` or `process`"), "{message}");
    assert!(!dir.join("data/cli/campaign.json").exists());
}
