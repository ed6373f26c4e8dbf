//! The incremental build: adding one round re-renders only the pages that show it, a
//! build with nothing new writes nothing, `--clean` removes only the files a site build
//! wrote, and an output directory holding someone else's file is refused.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use testkit::copy_dir;

use receipts::model::{Sha256Hex, Timestamp};
use site::incremental::OwnChecks;
use site::verdicts::Verdicts;
use site::{BuildOptions, BuildSummary, SiteError, build_site};

/// Every file under `root`: its inode and mtime (a file `write_atomic` wrote is a new
/// inode) and its digest.
fn snapshot(root: &Path) -> BTreeMap<String, (u64, i64, i64, Sha256Hex)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                stack.push(path);
                continue;
            }
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let digest = Sha256Hex::digest(&std::fs::read(&path).unwrap());
            out.insert(rel, (meta.ino(), meta.mtime(), meta.mtime_nsec(), digest));
        }
    }
    out
}

/// The files of `after` that are new or were rewritten since `before`, and those gone.
fn touched(
    before: &BTreeMap<String, (u64, i64, i64, Sha256Hex)>,
    after: &BTreeMap<String, (u64, i64, i64, Sha256Hex)>,
) -> (BTreeSet<String>, BTreeSet<String>) {
    let changed = after
        .iter()
        .filter(|(name, now)| before.get(*name) != Some(now))
        .map(|(name, _)| name.clone())
        .collect();
    let gone = before
        .keys()
        .filter(|k| !after.contains_key(*k))
        .cloned()
        .collect();
    (changed, gone)
}

struct Fixture {
    _tmp: tempfile::TempDir,
    data: PathBuf,
    keyring: PathBuf,
    out: PathBuf,
    rounds: PathBuf,
}

/// The `two-rounds` case with only its round 1, and where its round 2 was put aside.
fn fixture() -> Fixture {
    let input = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases/two-rounds/in");
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&input, &tmp.path().join("in"));
    let data = tmp.path().join("in/data");
    let rounds = tmp.path().join("rounds");
    std::fs::create_dir_all(&rounds).unwrap();
    for n in ["2", "3"] {
        std::fs::rename(data.join("tiny/rounds").join(n), rounds.join(n)).unwrap();
    }
    Fixture {
        keyring: tmp.path().join("in/keyring.json"),
        out: tmp.path().join("site"),
        data,
        rounds,
        _tmp: tmp,
    }
}

/// [`fixture`] once its files are older than the racy window: every build then stamps its
/// bundles alike. Without the wait, a build started within `RACY_SECONDS` of the copy
/// stamps none and a later one all, so on a loaded machine the verdict cache is written
/// again between two builds of the same input.
fn settled_fixture() -> Fixture {
    let f = fixture();
    std::thread::sleep(std::time::Duration::from_secs(
        site::verdicts::RACY_SECONDS + 1,
    ));
    f
}

fn build(f: &Fixture, clean: bool) -> Result<BuildSummary, SiteError> {
    build_site(&BuildOptions {
        data: f.data.clone(),
        keyring: f.keyring.clone(),
        out: f.out.clone(),
        base_url: "https://scoreboard.example/".to_owned(),
        clean,
        at: Some("2026-12-02T00:00:00Z".parse::<Timestamp>().unwrap()),
        allow_unlogged: false,
    })
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn adding_a_round_rewrites_only_the_pages_that_show_it() {
    let f = settled_fixture();
    let first = build(&f, false).unwrap();
    assert_eq!(first.removed, 0);
    let before = snapshot(&f.out);

    // Nothing new: only the files for machines are made again, and none is written.
    let again = build(&f, false).unwrap();
    assert_eq!(
        (again.html_written, again.other_written, again.removed),
        (0, 0, 0)
    );
    assert_eq!(again.jobs_run, 1, "only the files for machines are remade");
    assert_eq!(
        touched(&before, &snapshot(&f.out)),
        (BTreeSet::new(), BTreeSet::new())
    );

    std::fs::rename(f.rounds.join("2"), f.data.join("tiny/rounds/2")).unwrap();
    let added = build(&f, false).unwrap();
    let after = snapshot(&f.out);
    let (changed, gone) = touched(&before, &after);
    assert_eq!(gone, BTreeSet::new());
    // Everything of the new round is new (its pages, tables and receipts; the round page
    // builders decide how many files that is) ...
    let new_round: BTreeSet<String> = after.keys().filter(|k| of_round_2(k)).cloned().collect();
    for name in [
        "c/tiny/r/2/index.html",
        "c/tiny/r/2/bundle.tar",
        "c/tiny/r/2/e/baseline/index.html",
        "c/tiny/r/2/e/candidate-1-fast/index.html",
        "receipts/tiny/2/receipt.dsse.json",
    ] {
        assert!(new_round.contains(name), "{name}");
    }
    // ... and exactly these files of before were rewritten.
    let rewritten: BTreeSet<String> = changed.difference(&new_round).cloned().collect();
    assert_eq!(
        rewritten,
        set(&[
            // The build manifest, the segments of round 2's jobs and of its patch's page,
            // and the verdict cache: round 2's verdict added.
            ".referee-site-manifest",
            ".referee-site-manifest.d/rounds.tiny.1",
            ".referee-site-manifest.d/submissions.f9",
            ".referee-site-verdicts",
            // The feeds and indexes for machines; the sitemap of round 2's segment (the
            // index of sitemaps lists the same files as before).
            "api/index.json",
            "c/tiny/feed.xml",
            "sitemap-rounds.tiny.1.xml",
            // The front page and its table: the last round changed.
            "campaigns.csv",
            "campaigns.json",
            "index.html",
            // The campaign page and its tables.
            "c/tiny/index.html",
            "c/tiny/leader-history.csv",
            "c/tiny/leader-history.json",
            "c/tiny/rounds.csv",
            "c/tiny/rounds.json",
            // The page of rounds 1–100, which holds it, its tables and its API page.
            "c/tiny/rounds/1/index.html",
            "c/tiny/rounds/1/rounds.csv",
            "c/tiny/rounds/1/rounds.json",
            "api/c/tiny/rounds/1.json",
            // Round 1's page links to the round after it.
            "c/tiny/r/1/index.html",
            // The patch that ran in it, and its miner: one more verified round.
            "m/fast/index.html",
            "m/fast/submissions.csv",
            "m/fast/submissions.json",
            "s/f98bb8888a2454cec792fdb3057f7a3f604e2afd317a4b644b9913f86e318dfc/index.html",
        ])
    );
    let html = |names: &BTreeSet<String>| names.iter().filter(|n| n.ends_with(".html")).count();
    assert_eq!(added.html_written, html(&new_round) + 6);
    assert_eq!(
        added.other_written,
        new_round.len() - html(&new_round) + 14,
        "the manifest, its segments and the verdict cache are not counted"
    );
    assert_eq!(
        (added.verified_rounds, added.cached_verdicts),
        (2, 1),
        "round 1 is not verified again"
    );
}

#[test]
fn verdicts_are_cached_until_a_bundle_or_the_keyring_changes() {
    let f = fixture();
    std::fs::rename(f.rounds.join("2"), f.data.join("tiny/rounds/2")).unwrap();
    let first = build(&f, false).unwrap();
    assert_eq!(
        (
            first.verified_rounds,
            first.cached_verdicts,
            first.verifier_runs
        ),
        (2, 0, 2)
    );
    let again = build(&f, false).unwrap();
    assert_eq!(
        (
            again.verified_rounds,
            again.cached_verdicts,
            again.verifier_runs
        ),
        (2, 2, 0)
    );
    let clean = build(&f, true).unwrap();
    assert_eq!(
        (clean.cached_verdicts, clean.verifier_runs),
        (0, 2),
        "--clean verifies again, each bundle once"
    );

    // A tampered file of a bundle that passed before: its content digest changed, so it
    // is verified again, and fails.
    let log = f.data.join("tiny/rounds/2/logs/engines/baseline.log");
    let mut bytes = std::fs::read(&log).unwrap();
    bytes[0] ^= 1;
    std::fs::write(&log, &bytes).unwrap();
    let tampered = build(&f, false).unwrap();
    assert_eq!(
        (
            tampered.verified_rounds,
            tampered.rejected_rounds,
            tampered.cached_verdicts,
            tampered.verifier_runs
        ),
        (1, 1, 1, 1)
    );
    // So is an added file (every file of a bundle must be a subject).
    bytes[0] ^= 1;
    std::fs::write(&log, &bytes).unwrap();
    assert_eq!(build(&f, false).unwrap().verified_rounds, 2);
    std::fs::write(f.data.join("tiny/rounds/2/extra.txt"), "x").unwrap();
    let added = build(&f, false).unwrap();
    assert_eq!((added.verified_rounds, added.cached_verdicts), (1, 1));
    std::fs::remove_file(f.data.join("tiny/rounds/2/extra.txt")).unwrap();

    // Another keyring (the same keys, other bytes): every bundle is verified again.
    let mut keyring = std::fs::read(&f.keyring).unwrap();
    keyring.push(b'\n');
    std::fs::write(&f.keyring, keyring).unwrap();
    let rekeyed = build(&f, false).unwrap();
    assert_eq!(
        (
            rekeyed.verified_rounds,
            rekeyed.cached_verdicts,
            rekeyed.verifier_runs
        ),
        (2, 0, 2)
    );
}

/// The stamps the verdict cache of `out` records, one per key in key order (`null` for
/// none): the last line of each key, the one a build reads.
fn cached_stamps(out: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(out.join(site::verdicts::VERDICTS_FILE)).unwrap();
    let mut by_key = BTreeMap::new();
    for line in text.lines().skip(1) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let stamp = v["stamp"].as_str().unwrap_or("null").to_owned();
        by_key.insert(v["key"].as_str().unwrap().to_owned(), stamp);
    }
    by_key.into_values().collect()
}

#[test]
fn a_bundle_rewritten_with_its_length_and_mtime_kept_is_verified_again() {
    let f = fixture();
    std::fs::rename(f.rounds.join("2"), f.data.join("tiny/rounds/2")).unwrap();
    // Files changed within the racy window get no stamp: checked by content.
    let fresh = build(&f, false).unwrap();
    assert_eq!((fresh.verified_rounds, fresh.cached_verdicts), (2, 0));
    assert_eq!(cached_stamps(&f.out), ["null", "null"]);
    std::thread::sleep(std::time::Duration::from_secs(
        site::verdicts::RACY_SECONDS + 1,
    ));
    let stamped = build(&f, false).unwrap();
    assert_eq!((stamped.verified_rounds, stamped.cached_verdicts), (2, 2));
    let stamps = cached_stamps(&f.out);
    assert!(stamps.iter().all(|s| s.len() == 64), "{stamps:?}");
    let again = build(&f, false).unwrap();
    assert_eq!((again.verified_rounds, again.cached_verdicts), (2, 2));
    assert_eq!(cached_stamps(&f.out), stamps, "hits by stamp keep it");

    // One byte flipped, length and mtime set back: the ctime moved, so the bundle is
    // hashed and verified again, and fails.
    let log = f.data.join("tiny/rounds/2/logs/engines/baseline.log");
    let mtime = std::fs::metadata(&log).unwrap().modified().unwrap();
    let mut bytes = std::fs::read(&log).unwrap();
    bytes[0] ^= 1;
    std::fs::write(&log, &bytes).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&log)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let tampered = build(&f, false).unwrap();
    assert_eq!(
        (
            tampered.verified_rounds,
            tampered.rejected_rounds,
            tampered.cached_verdicts
        ),
        (1, 1, 1)
    );
}

/// Whether the output file `name` belongs to round 2 of `tiny`.
fn of_round_2(name: &str) -> bool {
    name.starts_with("c/tiny/r/2/") || name.starts_with("receipts/tiny/2/")
}

#[test]
fn a_round_that_stops_verifying_is_removed_and_listed_as_rejected() {
    let f = fixture();
    std::fs::rename(f.rounds.join("2"), f.data.join("tiny/rounds/2")).unwrap();
    build(&f, false).unwrap();
    let of_round: usize = snapshot(&f.out).keys().filter(|k| of_round_2(k)).count();
    assert!(f.out.join("c/tiny/r/2/index.html").is_file());
    // One byte of a signed log changes: round 2 no longer verifies.
    let log = f.data.join("tiny/rounds/2/logs/engines/baseline.log");
    let mut bytes = std::fs::read(&log).unwrap();
    bytes.push(b'\n');
    std::fs::write(&log, bytes).unwrap();
    let summary = build(&f, false).unwrap();
    assert_eq!(summary.rejected_rounds, 1);
    assert!(
        !f.out.join("c/tiny/r/2").exists(),
        "its pages and files are removed"
    );
    assert!(!f.out.join("receipts/tiny/2").exists());
    let rejected = std::fs::read_to_string(f.out.join("rejected/index.html")).unwrap();
    assert!(rejected.contains(r#"<h2 id="tiny-2">"#), "{rejected}");
    assert_eq!(summary.removed, of_round);
}

#[test]
fn a_round_failing_only_across_rounds_is_rejected_with_every_check() {
    let f = fixture();
    // Round 2 without round 1: its own checks pass, `chain.previousReceipt` fails.
    std::fs::remove_dir_all(f.data.join("tiny/rounds/1")).unwrap();
    let round_2 = f.data.join("tiny/rounds/2");
    std::fs::rename(f.rounds.join("2"), &round_2).unwrap();
    let (keyring, keyring_json) = site::load::load_keyring(&f.keyring).unwrap();
    let at: Timestamp = "2026-12-02T00:00:00Z".parse().unwrap();
    let data = receipts::layout::DataDir::new(&f.data);
    let archive = site::load_archive(&data, &keyring, keyring_json, Some(at)).unwrap();
    assert!(archive.campaigns[0].rounds.is_empty());
    let [rejected] = &archive.rejected[..] else {
        panic!("{:?}", archive.rejected.len());
    };
    // The report the verifier gives the same rounds directory, own checks first.
    let options = verifier::VerifyOptions::at(at);
    let expected = verifier::archive::verify_archive(&[round_2], &keyring, &options, &|| {});
    assert_eq!(rejected.report, expected[0]);
    let failed: Vec<_> = rejected.report.failures().map(|c| c.name).collect();
    assert_eq!(failed, [verifier::CheckName::ChainPrevious]);
    assert!(rejected.report.checks.len() > 100, "own checks kept");

    // A build verifies it once: its own checks passed, so the rejected page's list of
    // them is read back, not verified again; the next build finds them in the cache.
    let counts = |s: BuildSummary| {
        (
            s.verified_rounds,
            s.rejected_rounds,
            s.cached_verdicts,
            s.verifier_runs,
        )
    };
    assert_eq!(counts(build(&f, false).unwrap()), (0, 1, 0, 1));
    let page = std::fs::read_to_string(f.out.join("rejected/index.html")).unwrap();
    assert_eq!(counts(build(&f, false).unwrap()), (0, 1, 1, 0));
    assert_eq!(
        std::fs::read_to_string(f.out.join("rejected/index.html")).unwrap(),
        page
    );
}

#[test]
fn a_round_is_loaded_again_for_its_pages_as_verified_and_a_changed_bundle_fails() {
    let f = fixture();
    let round_2 = f.data.join("tiny/rounds/2");
    std::fs::rename(f.rounds.join("2"), &round_2).unwrap();
    let (keyring, keyring_json) = site::load::load_keyring(&f.keyring).unwrap();
    let at: Timestamp = "2026-12-02T00:00:00Z".parse().unwrap();
    let data = receipts::layout::DataDir::new(&f.data);
    let verdicts = Verdicts::default();
    let own = OwnChecks::new(&keyring, &keyring_json, &verdicts);
    let archive = site::load::load_archive_cached(&data, &own, Some(at)).unwrap();
    assert_eq!(own.verifier_runs(), 2);
    let summary = &archive.campaigns[0].rounds[1];
    assert_eq!(summary.number, 2);
    // What the verifier says of both rounds, chain checks included.
    let options = verifier::VerifyOptions::at(at);
    let bundles = [f.data.join("tiny/rounds/1"), round_2.clone()];
    let expected = verifier::archive::verify_archive(&bundles, &keyring, &options, &|| {});
    let expected = verifier::view::Verification::of(&expected[1]);

    // Its own checks read back from this build's verdicts (no lookup: no hit), not
    // verified again.
    let kept = site::load::load_round(summary, &own).unwrap();
    assert_eq!((verdicts.hits(), own.verifier_runs()), (0, 2));
    assert_eq!(kept.view.verification, expected);
    assert_eq!(kept.statement_digest, summary.statement_digest);
    // Another build, which verifies both bundles again: the same round.
    let fresh = Verdicts::default();
    let other = OwnChecks::new(&keyring, &keyring_json, &fresh);
    let rounds = site::load::load_archive_cached(&data, &other, Some(at))
        .unwrap()
        .campaigns;
    let again = site::load::load_round(&rounds[0].rounds[1], &other).unwrap();
    assert_eq!(other.verifier_runs(), 2);
    assert_eq!(again.view, kept.view);
    assert_eq!(again.verified_files, kept.verified_files);
    // A build that did not check it holds no report of it: refused, not verified.
    let none = Verdicts::default();
    let unchecked = OwnChecks::new(&keyring, &keyring_json, &none);
    let err = site::load::load_round(summary, &unchecked).unwrap_err();
    assert!(
        matches!(&err, SiteError::VerdictLost { dir, .. } if *dir == round_2),
        "{err}"
    );
    assert_eq!(unchecked.verifier_runs(), 0);

    // Round 1's receipt put in round 2's place after it was verified: refused.
    std::fs::copy(
        f.data.join("tiny/rounds/1/receipt.dsse.json"),
        round_2.join("receipt.dsse.json"),
    )
    .unwrap();
    let one = &archive.campaigns[0].rounds[0].statement_digest;
    let err = site::load::load_round(summary, &own).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "the bundle `{}` changed while the site was built: its Statement's sha256 is \
             {one}, {} when it was verified; build again",
            round_2.display(),
            summary.statement_digest
        )
    );
}

#[test]
fn a_segment_whose_key_did_not_change_is_not_read() {
    let f = fixture();
    build(&f, false).unwrap();
    let block = site::segment::Segment::of_round(&"tiny".parse().unwrap(), 1);
    let file = site::cache::segment_path(&f.out, &block);
    std::fs::write(&file, "not a segment\n").unwrap();
    // Nothing new: round 1's segment is kept whole, its file never read.
    let again = build(&f, false).unwrap();
    assert_eq!((again.jobs_run, again.html_written), (1, 0));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "not a segment\n");
    // Round 2 changes it: its file is read, and refused, naming it.
    std::fs::rename(f.rounds.join("2"), f.data.join("tiny/rounds/2")).unwrap();
    let err = build(&f, false).unwrap_err();
    assert!(
        matches!(&err, SiteError::Manifest { path, .. } if *path == file),
        "{err}"
    );
    assert!(
        err.to_string().contains("remove the output directory"),
        "{err}"
    );
}

#[test]
fn a_manifest_written_before_segments_is_read_and_written_again_in_segments() {
    let f = settled_fixture();
    build(&f, false).unwrap();
    let before = snapshot(&f.out);
    // The same jobs, as a build before segments wrote them: one file.
    let main = std::fs::read_to_string(f.out.join(site::cache::MANIFEST_FILE)).unwrap();
    let mut v1 = String::from("referee-site-manifest 1\n");
    v1.extend(
        (main.lines().skip(1))
            .filter(|l| !l.contains(" @"))
            .map(|l| format!("{l}\n")),
    );
    let dir = f.out.join(site::cache::SEGMENTS_DIR);
    for entry in std::fs::read_dir(&dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        v1.extend(text.lines().skip(1).map(|l| format!("{l}\n")));
    }
    let mut lines: Vec<&str> = v1.lines().skip(1).collect();
    lines.sort_by_key(|l| l.split(' ').nth(1).map(str::to_owned));
    let v1 = format!("referee-site-manifest 1\n{}\n", lines.join("\n"));
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::write(f.out.join(site::cache::MANIFEST_FILE), v1).unwrap();

    let again = build(&f, false).unwrap();
    assert_eq!(
        (again.html_written, again.other_written, again.removed),
        (0, 0, 0)
    );
    assert_eq!(
        touched(&before, &snapshot(&f.out)),
        (
            set(&[".referee-site-manifest"])
                .into_iter()
                .chain(
                    before
                        .keys()
                        .filter(|k| k.starts_with(".referee-site-manifest.d"))
                        .cloned()
                )
                .collect(),
            BTreeSet::new()
        ),
        "the manifest and its segments written again, as they were"
    );
    for (name, (_, _, _, digest)) in snapshot(&f.out) {
        assert_eq!(Some(&digest), before.get(&name).map(|b| &b.3), "{name}");
    }
}

#[test]
fn clean_removes_only_our_files_and_foreign_files_are_never_overwritten() {
    let f = fixture();
    build(&f, false).unwrap();
    let ours = snapshot(&f.out);
    let segments = (ours.keys())
        .filter(|k| k.starts_with(site::cache::SEGMENTS_DIR))
        .count();
    assert_eq!(segments, 4, "round 1's segment and its three patches'");
    let summary = build(&f, true).unwrap();
    assert_eq!(
        summary.removed,
        ours.len() - 2 - segments,
        "every file but the manifest, its segments and the verdict cache, which are rewritten"
    );
    assert_eq!(summary.jobs_run, summary.jobs);

    // A file of someone else's beside ours is left alone, by a build and by --clean.
    std::fs::write(f.out.join("c/notes.txt"), "mine").unwrap();
    for clean in [false, true] {
        build(&f, clean).unwrap();
    }
    assert_eq!(
        std::fs::read_to_string(f.out.join("c/notes.txt")).unwrap(),
        "mine"
    );

    // One where the build would write a page it never wrote there is refused, not
    // overwritten.
    let theirs = f.out.join("c/tiny/r/2/index.html");
    std::fs::create_dir_all(theirs.parent().unwrap()).unwrap();
    std::fs::write(&theirs, "mine").unwrap();
    std::fs::rename(f.rounds.join("2"), f.data.join("tiny/rounds/2")).unwrap();
    let err = build(&f, false).unwrap_err();
    assert!(
        matches!(&err, SiteError::NotOurOutput { file, .. } if *file == theirs),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&theirs).unwrap(), "mine");
    assert!(f.out.join("index.html").is_file(), "nothing was removed");

    // A directory without a manifest holding any file is not a site's: refused at once.
    std::fs::remove_file(f.out.join(site::cache::MANIFEST_FILE)).unwrap();
    let err = build(&f, false).unwrap_err();
    assert!(matches!(&err, SiteError::NotOurOutput { .. }), "{err}");
}

#[test]
fn a_foreign_symlink_or_fifo_where_a_page_goes_is_refused_not_followed_or_waited_on() {
    let f = fixture();
    build(&f, false).unwrap();
    std::fs::rename(f.rounds.join("2"), f.data.join("tiny/rounds/2")).unwrap();
    let page = f.out.join("c/tiny/r/2/index.html");
    std::fs::create_dir_all(page.parent().unwrap()).unwrap();

    // A symlink to a file of someone else's: refused, and its target untouched.
    let target = f.out.join("c/notes.txt");
    std::fs::write(&target, "mine").unwrap();
    std::os::unix::fs::symlink(&target, &page).unwrap();
    let err = build(&f, false).unwrap_err();
    assert!(
        matches!(&err, SiteError::NotOurOutput { file, .. } if *file == page),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "mine");
    assert!(std::fs::symlink_metadata(&page).unwrap().is_symlink());

    // A FIFO: refused at once (opening it for reading would wait for a writer).
    std::fs::remove_file(&page).unwrap();
    let fifo = std::ffi::CString::new(page.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: `fifo` is a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    let err = build(&f, false).unwrap_err();
    assert!(
        matches!(&err, SiteError::NotOurOutput { file, .. } if *file == page),
        "{err}"
    );

    // Gone, the page is written.
    std::fs::remove_file(&page).unwrap();
    build(&f, false).unwrap();
    assert!(std::fs::read_to_string(&page).unwrap().contains("<html"));
}

#[test]
fn a_build_that_fails_midway_leaves_a_directory_the_next_build_accepts() {
    let f = fixture();
    // A directory where the campaign's rounds table goes: writing it fails.
    let blocker = f.out.join("c/tiny/rounds.csv");
    std::fs::create_dir_all(&blocker).unwrap();
    let err = build(&f, false).unwrap_err();
    assert!(
        matches!(&err, SiteError::Io(e) if e.path == blocker),
        "{err}"
    );
    assert!(
        f.out.join("index.html").is_file(),
        "other jobs wrote their files"
    );
    std::fs::remove_dir(&blocker).unwrap();
    let summary = build(&f, false).unwrap();
    assert!(f.out.join("c/tiny/rounds.csv").is_file());
    assert!(
        summary.jobs_run < summary.jobs,
        "the jobs that succeeded are not run again"
    );
}

#[test]
fn a_file_of_a_job_gone_is_removed_unless_a_kept_job_lists_it_too() {
    let f = fixture();
    build(&f, false).unwrap();
    let manifest = f.out.join(site::cache::MANIFEST_FILE);
    let text = std::fs::read_to_string(&manifest).unwrap();
    // Two jobs no build makes any more (a manifest a failed build wrote can list a file
    // under two jobs): one lists a file of its own, one a file the kept campaign job
    // lists too.
    let gone_only = "c/tiny/old.csv";
    let shared = "c/tiny/rounds.csv";
    std::fs::write(f.out.join(gone_only), "old").unwrap();
    let key = "0".repeat(63) + "1";
    let edited = format!("{text}{key} zz:gone:a {gone_only}\n{key} zz:gone:b {shared}\n");
    std::fs::write(&manifest, edited).unwrap();

    let summary = build(&f, false).unwrap();
    assert_eq!(
        summary.jobs_run, 1,
        "only the files for machines are remade"
    );
    assert_eq!(summary.removed, 1);
    assert!(!f.out.join(gone_only).exists(), "its only job is gone");
    assert!(
        f.out.join(shared).is_file(),
        "the kept campaign job still makes it"
    );
    let written = std::fs::read_to_string(&manifest).unwrap();
    assert_eq!(
        written, text,
        "the kept lines are written again as they were"
    );
}

/// Writes the record of a submission of miner `later` to campaign `tiny`, committed
/// `second` seconds after 2026-12-01T23:10:00Z (before the builds' instant), its patch
/// named by `seed`.
fn add_record(data: &Path, seed: &str, second: u32) -> Sha256Hex {
    let sha = Sha256Hex::digest(seed.as_bytes());
    let at = format!("2026-12-01T23:{}:{:02}Z", 10 + second / 60, second % 60);
    let record = serde_json::json!({
        "campaign": "tiny",
        "commitment": sha.as_str(),
        "events": [{"at": at, "kind": "transition", "reason": "commitment recorded", "to": "committed"}],
        "miner": "later",
        "requeues": 0,
        "sha256": sha.as_str(),
        "sizeBytes": 300,
        "state": "committed",
    });
    let path = data.join(format!("tiny/submissions/{sha}.json"));
    std::fs::write(path, serde_json::to_vec_pretty(&record).unwrap()).unwrap();
    sha
}

#[test]
fn a_new_submission_rewrites_its_miner_and_campaign_pages_of_submissions_only() {
    let f = fixture();
    // Miner `later` has 2 submissions in the case; 148 more make a page and a half.
    for i in 0..148 {
        add_record(&f.data, &format!("patch {i}"), i);
    }
    build(&f, false).unwrap();
    let before = snapshot(&f.out);
    for page in [
        "m/later/submissions/1/index.html",
        "m/later/submissions/2/index.html",
    ] {
        assert!(before.contains_key(page), "{page}");
    }
    assert!(!before.contains_key("m/later/submissions/3/index.html"));

    let patch = add_record(&f.data, "one more", 148);
    build(&f, false).unwrap();
    let (changed, gone) = touched(&before, &snapshot(&f.out));
    assert_eq!(gone, BTreeSet::new());
    let page = format!("s/{patch}/index.html");
    assert_eq!(
        changed
            .iter()
            .filter(|n| !n.starts_with('.') && !n.starts_with("sitemap"))
            .map(String::as_str)
            .collect::<Vec<_>>(),
        // Not the front page: its queue length counts queued submissions, and this one
        // is only committed. The campaign's submissions page lists every submission.
        [
            "c/tiny/submissions/index.html",
            "c/tiny/submissions/submissions.csv",
            "c/tiny/submissions/submissions.json",
            "m/later/index.html",
            "m/later/submissions.csv",
            "m/later/submissions.json",
            "m/later/submissions/2/index.html",
            "m/later/submissions/2/submissions.csv",
            "m/later/submissions/2/submissions.json",
            &format!("s/{patch}/events.csv"),
            &format!("s/{patch}/events.json"),
            page.as_str(),
        ]
    );
}
