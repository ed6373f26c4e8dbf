//! Golden-directory tests: each `tests/cases/<name>/in/` (a data directory `data/` and
//! its trusted `keyring.json`) is built with `at` pinned, and the output compared with
//! `tests/cases/<name>/out/`: `out.sha256` lists every file built from the archive with
//! its sha256 (so every byte is compared), and `out/` holds each such text file of at
//! most [`MAX_STORED_BYTES`] verbatim, so a change shows as a readable diff (the bundle
//! tarballs and the receipts, copies of the input, by digest only). What does not come from the archive — the
//! docs pages of `content/`, the glossary and the predicate schemas, whose own tests
//! cover them — is left out ([`NOT_FROM_THE_ARCHIVE`]), so editing a docs page does not
//! touch these cases (the site segment's sitemap is compared without their URLs). `REFEREE_BLESS=1`
//! ([`testkit::BLESS`]) rewrites both.
//!
//! The input of `two-rounds` is made by [`make_two_rounds_input`] (run with
//! `REFEREE_BLESS=1 cargo test -p site --test it golden -- --ignored`): the verifier's
//! v2 fixture round sealed as round 1 and, with its round number and previous receipt
//! changed, as round 2 of campaign `tiny`, both re-signed with the forge's test key; a
//! round 3 whose receipt is not a DSSE envelope (rejected); and submission records of
//! the evaluator (one scored, one queued, one rejected with a hostile reason).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use receipts::bundle::ENVELOPE_FILE;
use receipts::model::{Sha256Hex, Timestamp};
use site::{BuildOptions, build_site};
use testkit::{copy_dir, forge};

/// Files larger than this are compared by digest only.
const MAX_STORED_BYTES: u64 = 64 * 1024;

/// Output directories that do not depend on the archive.
const NOT_FROM_THE_ARCHIVE: [&str; 3] = ["docs/", "glossary/", "schemas/"];

/// File name endings stored verbatim (the rest by digest only).
const TEXT: [&str; 7] = [".html", ".css", ".csv", ".json", ".xml", ".txt", ".js"];

/// The instant every bundle is verified at.
const AT: &str = "2026-12-02T00:00:00Z";

fn cases() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases")
}

/// Every file under `root` (the build manifest, its segments and the verdict cache
/// aside) by `/`-separated relative path.
fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                stack.push(path);
                continue;
            }
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            if rel != site::cache::MANIFEST_FILE
                && !rel.starts_with(site::cache::SEGMENTS_DIR)
                && rel != site::verdicts::VERDICTS_FILE
                && !NOT_FROM_THE_ARCHIVE.iter().any(|d| rel.starts_with(d))
            {
                let mut bytes = std::fs::read(&path).unwrap();
                if rel == "sitemap-site.xml" {
                    bytes = without_docs_urls(&bytes);
                }
                out.insert(rel, bytes);
            }
        }
    }
    out
}

/// The sitemap of the site segment without the lines of the pages
/// [`NOT_FROM_THE_ARCHIVE`] (one `<url>` a line).
fn without_docs_urls(sitemap: &[u8]) -> Vec<u8> {
    String::from_utf8_lossy(sitemap)
        .split_inclusive('\n')
        .filter(|line| {
            !line.starts_with("  <url>")
                || !NOT_FROM_THE_ARCHIVE
                    .iter()
                    .any(|d| line.contains(&format!("/{d}")))
        })
        .collect::<String>()
        .into_bytes()
}

/// Builds the case's input, copied to a fresh directory, into a fresh output directory.
fn build_case(input: &Path) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(input, &tmp.path().join("in"));
    let out = tmp.path().join("site");
    build_site(&BuildOptions {
        data: tmp.path().join("in/data"),
        keyring: tmp.path().join("in/keyring.json"),
        out: out.clone(),
        base_url: "https://scoreboard.example/".to_owned(),
        clean: false,
        at: Some(AT.parse::<Timestamp>().unwrap()),
        allow_unlogged: false,
    })
    .unwrap();
    (tmp, out)
}

fn kept_verbatim(name: &str, bytes: &[u8]) -> bool {
    bytes.len() as u64 <= MAX_STORED_BYTES
        && TEXT.iter().any(|t| name.ends_with(t))
        && !name.ends_with(".dsse.json")
}

fn digests(files: &BTreeMap<String, Vec<u8>>) -> String {
    files
        .iter()
        .map(|(name, bytes)| format!("{}  {name}\n", Sha256Hex::digest(bytes)))
        .collect()
}

#[test]
fn golden_cases() {
    let update = testkit::blessing();
    let mut names: Vec<_> = std::fs::read_dir(cases())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("in").is_dir())
        .collect();
    names.sort();
    assert!(!names.is_empty(), "no case under {}", cases().display());
    for case in names {
        let (_tmp, out) = build_case(&case.join("in"));
        let built = tree(&out);
        let listing = digests(&built);
        let expected_dir = case.join("out");
        let sums = case.join("out.sha256");
        if update {
            let _ = std::fs::remove_dir_all(&expected_dir);
            for (name, bytes) in &built {
                if kept_verbatim(name, bytes) {
                    let path = expected_dir.join(name);
                    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                    std::fs::write(path, bytes).unwrap();
                }
            }
            std::fs::write(&sums, &listing).unwrap();
            continue;
        }
        let stored = tree(&expected_dir);
        for (name, bytes) in &built {
            if kept_verbatim(name, bytes) {
                let want = stored.get(name).unwrap_or_else(|| {
                    panic!(
                        "{}: `{name}` is new (REFEREE_BLESS=1 to accept)",
                        case.display()
                    )
                });
                assert!(
                    want == bytes,
                    "{}: `{name}` differs (REFEREE_BLESS=1 to accept):\n--- expected\n{}\n--- built\n{}",
                    case.display(),
                    String::from_utf8_lossy(want),
                    String::from_utf8_lossy(bytes)
                );
            }
        }
        let extra: Vec<&String> = stored.keys().filter(|k| !built.contains_key(*k)).collect();
        assert!(
            extra.is_empty(),
            "{}: no longer built: {extra:?}",
            case.display()
        );
        assert_eq!(
            std::fs::read_to_string(&sums).unwrap(),
            listing,
            "{}",
            case.display()
        );
    }
}

/// Two builds of the same input, copied to two different places, give the same bytes:
/// no clock, no path of the builder's machine, no unordered iteration in the output.
#[test]
fn identical_input_builds_byte_identical_sites() {
    let input = cases().join("two-rounds/in");
    let (_a, first) = build_case(&input);
    let (_b, second) = build_case(&input);
    let (first, second) = (tree(&first), tree(&second));
    assert_eq!(
        first.keys().collect::<Vec<_>>(),
        second.keys().collect::<Vec<_>>()
    );
    for (name, bytes) in &first {
        assert!(
            bytes == &second[name],
            "`{name}` differs between two builds"
        );
    }
    // The build manifests are identical too.
}

/// The rejected bundle shows only on the rejected page; the verified rounds everywhere.
#[test]
fn a_bundle_that_fails_appears_only_on_the_rejected_page() {
    let (_tmp, out) = build_case(&cases().join("two-rounds/in"));
    let files = tree(&out);
    assert!(files.contains_key("c/tiny/r/1/index.html"));
    assert!(files.contains_key("c/tiny/r/2/index.html"));
    assert!(
        !files
            .keys()
            .any(|k| k.starts_with("c/tiny/r/3/") || k.starts_with("receipts/tiny/3/"))
    );
    let rejected = String::from_utf8(files["rejected/index.html"].clone()).unwrap();
    assert!(rejected.contains(r#"<h2 id="tiny-3">"#), "{rejected}");
    let campaign = String::from_utf8(files["c/tiny/index.html"].clone()).unwrap();
    assert!(campaign.contains("Rounds whose receipt did not verify are not shown here: 3."));
    assert!(!campaign.contains(r#"href="../../c/tiny/r/3/""#));
}

/// Makes `tests/cases/two-rounds/in/` (see the module's documentation).
#[test]
#[ignore = "regenerates the committed input; run with REFEREE_BLESS=1"]
fn make_two_rounds_input() {
    if !testkit::blessing() {
        return;
    }
    let input = cases().join("two-rounds/in");
    let _ = std::fs::remove_dir_all(&input);
    let campaign = input.join("data/tiny");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../verifier/tests/fixtures/v2-round");
    let one = campaign.join("rounds/1");
    copy_dir(&fixture, &one);
    forge::resign(&one, forge::OPENED, |_| {});
    forge::resign(&one, ENVELOPE_FILE, |_| {});
    let first_digest = {
        let bytes = std::fs::read(one.join(ENVELOPE_FILE)).unwrap();
        let envelope =
            receipts::dsse::Envelope::from_json(&bytes, receipts::bundle::MAX_ENVELOPE_BYTES)
                .unwrap();
        Sha256Hex::digest(&envelope.payload).to_string()
    };
    let two = campaign.join("rounds/2");
    copy_dir(&one, &two);
    forge::resign(&two, forge::OPENED, |s| {
        s["predicate"]["round"] = 2.into();
        s["predicate"]["previousReceipt"] = first_digest.clone().into();
    });
    forge::resign(&two, ENVELOPE_FILE, |s| {
        s["predicate"]["round"] = 2.into();
        s["predicate"]["previousReceipt"] = first_digest.clone().into();
    });
    let three = campaign.join("rounds/3");
    std::fs::create_dir_all(&three).unwrap();
    std::fs::write(
        three.join(ENVELOPE_FILE),
        b"{\"payload\": \"not an envelope\"}\n",
    )
    .unwrap();

    std::fs::copy(
        fixture.join("inputs/campaign.json"),
        campaign.join("campaign.json"),
    )
    .unwrap();
    let fast = "f98bb8888a2454cec792fdb3057f7a3f604e2afd317a4b644b9913f86e318dfc";
    let queued = Sha256Hex::digest(b"queued diff").to_string();
    let rejected = Sha256Hex::digest(b"rejected diff").to_string();
    std::fs::write(
        campaign.join("miners.json"),
        serde_json::to_vec_pretty(&serde_json::json!({ "miners": [
            { "id": "fast", "registeredAt": "2026-12-01T22:12:41.12681Z" },
            { "id": "later", "registeredAt": "2026-12-01T23:00:00Z" },
        ]}))
        .unwrap(),
    )
    .unwrap();
    let submissions = campaign.join("submissions");
    std::fs::create_dir_all(&submissions).unwrap();
    std::fs::copy(
        fixture.join(format!("inputs/patches/{fast}.diff")),
        submissions.join(format!("{fast}.diff")),
    )
    .unwrap();
    let event = |at: &str, to: &str, reason: &str| serde_json::json!({ "at": at, "kind": "transition", "to": to, "reason": reason });
    let record = |sha: &str, miner: &str, state: &str, events: Vec<serde_json::Value>| {
        serde_json::json!({
            "sha256": sha, "campaign": "tiny", "miner": miner, "commitment": sha,
            "sizeBytes": 300, "state": state, "requeues": 0, "events": events,
        })
    };
    let mut scored_events = vec![
        event("2026-12-01T22:12:41.2Z", "committed", "commitment recorded"),
        event(
            "2026-12-01T22:12:41.3Z",
            "bench_queued",
            "waiting for a round",
        ),
        event(
            "2026-12-01T22:12:41.4Z",
            "round_assigned",
            "seated in round 1",
        ),
    ];
    let mut scored = serde_json::json!({
        "at": "2026-12-01T22:12:46.9Z", "kind": "transition", "to": "scored", "round": 1,
        "reason": "scored in round 1",
    });
    scored_events.push(scored.take());
    let records = [
        (
            fast.to_owned(),
            record(fast, "fast", "scored", scored_events),
        ),
        (
            queued.clone(),
            record(
                &queued,
                "later",
                "bench_queued",
                vec![
                    event("2026-12-01T23:01:00Z", "committed", "commitment recorded"),
                    event(
                        "2026-12-01T23:01:01Z",
                        "bench_queued",
                        "waiting for a round",
                    ),
                ],
            ),
        ),
        (
            rejected.clone(),
            record(
                &rejected,
                "later",
                "rejected",
                vec![
                    event("2026-12-01T23:02:00Z", "committed", "commitment recorded"),
                    serde_json::json!({
                        "at": "2026-12-01T23:02:01Z", "kind": "transition", "to": "rejected",
                        "gate": "surface_ok",
                        "reason": "path `<script>alert(1)</script>` is outside the allowed surface \u{202e}txt.exe",
                    }),
                ],
            ),
        ),
    ];
    for (sha, record) in records {
        std::fs::write(
            submissions.join(format!("{sha}.json")),
            serde_json::to_vec_pretty(&record).unwrap(),
        )
        .unwrap();
    }
    forge::keyring().save(&input.join("keyring.json")).unwrap();
}
