//! `referee campaign add`, `referee ingest` and `referee status` through the binary
//! (issue 11): untrusted text escaped in text output and raw in JSON, an oversized diff
//! refused unread with nothing stored, a Docker campaign's ingest stopping in `building`
//! for `referee build`.

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;

use receipts::model::Sha256Hex;

use support::{ingest_cli, referee, setup_cli_campaign as setup, stderr, stdout};

/// `referee ingest <file>` by `miner-a` with the honest commitment, `--json` if `json`.
fn ingest(dir: &Path, file: &str, bytes: &[u8], json: bool) -> Output {
    ingest_cli(dir, file, bytes, if json { &["--json"] } else { &[] })
}

/// `referee status <sha> --json` of campaign `cli`, which must exit 0: the record.
fn status_json(dir: &Path, sha: &str) -> serde_json::Value {
    let json = referee(
        dir,
        &[
            "status",
            sha,
            "--campaign",
            "cli",
            "--json",
            "--data",
            "data",
        ],
    );
    assert_eq!(json.status.code(), Some(0), "{json:?}");
    serde_json::from_slice(&json.stdout).expect("JSON")
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

    let record = status_json(dir, &sha);
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

/// A Docker campaign's `ingest` stops in `building` (exit 0, pointing at `referee build`);
/// `referee build` against a daemon that does not answer exits 2 and leaves the
/// submission in `building` for the next run.
#[test]
fn a_docker_ingest_stops_in_building_until_referee_build() {
    use referee::demo::{BASELINE_ENGINE_TOML, config_diff, set_key};
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    setup(
        dir,
        "\n[backend]\nkind = \"docker\"\nimage = \"engine:v1\"\n",
    );
    let diff = config_diff(
        BASELINE_ENGINE_TOML,
        &set_key(BASELINE_ENGINE_TOML, "max_num_seqs", "2"),
    )
    .expect("diff");
    let ingested = ingest(dir, "a.diff", diff.as_bytes(), false);
    assert_eq!(ingested.status.code(), Some(0), "{ingested:?}");
    let printed = stdout(&ingested);
    assert!(printed.contains("state building"), "{printed}");
    assert!(
        printed
            .contains("its image is built by the build worker: run `referee build --campaign cli`"),
        "{printed}"
    );
    let socket = dir.join("no-daemon.sock");
    let build = support::bin()
        .args(["build", "--campaign", "cli", "--data", "data", "--once"])
        .env("DOCKER_HOST", format!("unix://{}", socket.display()))
        .current_dir(dir)
        .output()
        .expect("run referee build");
    assert_eq!(build.status.code(), Some(2), "{build:?}");
    let message = stderr(&build);
    assert!(message.contains("does not answer"), "{message}");
    let status = referee(
        dir,
        &["status", "--campaign", "cli", "--data", "data", "--json"],
    );
    let records: serde_json::Value = serde_json::from_slice(&status.stdout).expect("json");
    assert_eq!(records[0]["state"], "building");
    assert_eq!(records[0].get("image"), None);
}

/// Regression: `applied` was logged before `surface_ok` although the surface checks run
/// first, and a record that superseded a wrong commitment logged the trace with a time
/// earlier than its own `committed`. `status --json` shows the events in the order they
/// happened, each dated no earlier than the one before it.
#[test]
fn status_lists_the_events_in_causal_order_with_monotonic_times() {
    use referee::demo::{BASELINE_ENGINE_TOML, config_diff, set_key};
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    setup(dir, "");
    let diff = config_diff(
        BASELINE_ENGINE_TOML,
        &set_key(BASELINE_ENGINE_TOML, "max_num_seqs", "2"),
    )
    .expect("diff");
    std::fs::write(dir.join("ok.diff"), diff.as_bytes()).expect("write diff");
    let wrong = Sha256Hex::digest(b"another diff").to_string();
    let first = referee(
        dir,
        &[
            "ingest",
            "ok.diff",
            "--miner",
            "miner-a",
            "--commitment",
            &wrong,
            "--campaign",
            "cli",
            "--data",
            "data",
        ],
    );
    assert_eq!(first.status.code(), Some(1), "{first:?}");
    let queued = ingest(dir, "ok.diff", diff.as_bytes(), false);
    assert_eq!(queued.status.code(), Some(0), "{queued:?}");
    let sha = Sha256Hex::digest(diff.as_bytes()).to_string();
    let record = status_json(dir, &sha);
    let events = record["events"].as_array().expect("events");
    let log: Vec<&str> = events
        .iter()
        .map(|e| match e["kind"].as_str() {
            Some("transition") => e["to"].as_str().expect("to"),
            other => other.expect("kind"),
        })
        .collect();
    assert_eq!(
        log,
        [
            "committed",
            "superseded",
            "picked_up",
            "fetched",
            "verified",
            "surface_ok",
            "applied",
            "building",
            "built",
            "bench_queued"
        ]
    );
    let times: Vec<receipts::model::Timestamp> = events
        .iter()
        .map(|e| e["at"].as_str().expect("at").parse().expect("timestamp"))
        .collect();
    assert!(times.windows(2).all(|p| p[0] <= p[1]), "{times:?}");
}
