//! `referee site build|check` end to end on the site crate's `two-rounds` case: the
//! build prints its counts and where to open the site, the check passes on it and fails
//! (exit 1) once a linked page is gone, and a data directory holding a private key is
//! refused (exit 2) before anything is written.

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;

use testkit::copy_dir;

/// `referee <args>` in the test's working directory.
fn referee(args: &[&str]) -> Output {
    support::bin().args(args).output().expect("runs referee")
}

/// The case's input copied into a temp dir: `(tmp, data, keyring)`.
fn input() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("site/tests/cases/two-rounds/in");
    copy_dir(&case, tmp.path());
    let data = tmp.path().join("data");
    let keyring = tmp.path().join("keyring.json");
    (tmp, data, keyring)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn site_build_then_check() {
    let (tmp, data, keyring) = input();
    let out = tmp.path().join("site");
    let (data, keyring, out_s) = (
        data.to_str().unwrap(),
        keyring.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    let build_site = || {
        referee(&[
            "site",
            "build",
            "--data",
            data,
            "--keyring",
            keyring,
            "--out",
            out_s,
            "--at",
            "2026-12-02T00:00:00Z",
        ])
    };
    let build = build_site();
    assert!(build.status.success(), "{}", text(&build.stderr));
    let stdout = text(&build.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[0],
        "2 rounds verified (0 verdicts from the cache), 1 rejected"
    );
    assert!(lines[1].contains(" HTML pages ("), "{stdout}");
    assert!(lines[2].starts_with("verify "), "{stdout}");
    assert_eq!(
        lines[3],
        format!("open {}", out.join("index.html").display())
    );

    // Built again: the two passing bundles' verdicts come from the cache, the rejected
    // one is verified (and rejected) again.
    let again = build_site();
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert_eq!(
        text(&again.stdout).lines().next(),
        Some("2 rounds verified (2 verdicts from the cache), 1 rejected")
    );

    let check = referee(&["site", "check", out_s]);
    assert_eq!(check.status.code(), Some(0), "{}", text(&check.stdout));
    assert!(text(&check.stdout).ends_with(": no problems\n"));

    // A page the campaign page links is gone: the check fails with exit 1.
    std::fs::remove_file(out.join("c/tiny/r/2/index.html")).unwrap();
    let check = referee(&["site", "check", out_s]);
    assert_eq!(check.status.code(), Some(1), "{}", text(&check.stdout));
}

#[test]
fn site_build_refuses_a_data_directory_holding_a_private_key() {
    let (tmp, data, keyring) = input();
    std::fs::write(data.join("tiny/evaluator.key"), [7u8; 64]).unwrap();
    let out = tmp.path().join("site");
    let build = referee(&[
        "site",
        "build",
        "--data",
        data.to_str().unwrap(),
        "--keyring",
        keyring.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(build.status.code(), Some(2));
    assert!(
        text(&build.stderr).contains("refusing to publish"),
        "{}",
        text(&build.stderr)
    );
    assert!(!out.exists(), "nothing was written");
}
