//! The hostile diff corpus (issue 5): every file of `tests/corpus/` is ingested against
//! the corpus baseline and must end at the expected gate with a reason naming the rule;
//! the benign ones reach `bench_queued` and their patched files are checked by sha256.

use crate::support::{corpus, corpus_baseline, fixture, fixture_with, ingest_ok, sha256_hex};
use intake::gates::prepare_tree;
use receipts::model::{EventKind, Gate, PipelineState, Submission};

/// `(corpus file, gate it is rejected at, substring of the recorded reason)`.
const REJECTED: &[(&str, Gate, &str)] = &[
    // verified: the diff must be against the pinned commit.
    (
        "blob_mismatch",
        Gate::Verified,
        "verified: `README.md`: the diff's `index` line says the original is blob `1234567` but the pinned baseline commit has `119c64a2c7930ac4b36810100f205c6d95f2f996`",
    ),
    (
        "missing_in_baseline",
        Gate::Verified,
        "`docs/guide.md`: the diff changes this file but the pinned baseline commit",
    ),
    (
        "new_file_with_preimage",
        Gate::Verified,
        "`src/extra.rs`: a new file's `index` line must start with an all-zero blob id, found `119c64a`",
    ),
    (
        "new_file_exists",
        Gate::Verified,
        "`README.md`: the diff creates this file but the pinned baseline commit",
    ),
    // surface_ok: bytes and text.
    (
        "empty",
        Gate::SurfaceOk,
        "surface_ok: the diff changes no file (empty diff)",
    ),
    (
        "not_a_git_diff",
        Gate::SurfaceOk,
        "surface_ok: libgit2 cannot parse the diff: invalid hunk header outside patch at line 3",
    ),
    ("nul_byte", Gate::SurfaceOk, "NUL byte at offset"),
    (
        "line_too_long",
        Gate::SurfaceOk,
        "line 7 is 1118 bytes; the campaign accepts lines of at most 1024 bytes (surface.max_line_bytes)",
    ),
    // Refused unread: at most max_diff_bytes + 1 bytes are read, nothing is stored.
    (
        "too_large",
        Gate::Fetched,
        "fetched: the diff is larger than 16384 bytes (reading stopped after 16385 bytes); the campaign accepts at most 16384 bytes (surface.max_diff_bytes)",
    ),
    (
        "header_rename_mismatch",
        Gate::SurfaceOk,
        "line 1: the header says `diff --git a/README.md b/README.md` but the section is parsed as `diff --git a/src/util.rs b/src/other.rs`",
    ),
    // Every violation, most specific first: the `.git` path before the header.
    (
        "git_dir_and_header_mismatch",
        Gate::SurfaceOk,
        "surface_ok: 2 problems, most specific first: (1) `.git/hooks/post-checkout`: a component names or aliases `.git`",
    ),
    // ... and at the earliest gate any violation belongs to.
    (
        "blob_mismatch_and_git_dir",
        Gate::Verified,
        "verified: 2 problems, most specific first: (1) `.git/hooks/pre-commit`: a component names or aliases `.git`",
    ),
    (
        "header_plus_mismatch",
        Gate::SurfaceOk,
        "surface_ok: libgit2 cannot parse the diff",
    ),
    (
        "hunk_smuggle",
        Gate::SurfaceOk,
        "lines outside a hunk are not accepted",
    ),
    (
        "unknown_header_line",
        Gate::SurfaceOk,
        "not a line git writes in the header of a file section; found `rename old src/util.rs`",
    ),
    (
        "duplicate_path",
        Gate::SurfaceOk,
        "`README.md`: more than one section of the diff touches this path",
    ),
    (
        "binary_patch",
        Gate::SurfaceOk,
        "`logo.png`: binary patches are not accepted",
    ),
    // surface_ok: paths.
    (
        "denied_github_workflow",
        Gate::SurfaceOk,
        "`.github/workflows/ci.yml`: the campaign denies paths matching `.github/**` (surface.denied_paths)",
    ),
    // libgit2 reads `a//etc/x` as `etc/x`: the text and the parse disagree.
    (
        "absolute_path",
        Gate::SurfaceOk,
        "line 1: the header says `diff --git a//etc/cron.d/pwn b//etc/cron.d/pwn` but the section is parsed as `diff --git a/etc/cron.d/pwn b/etc/cron.d/pwn`",
    ),
    (
        "rename_absolute",
        Gate::SurfaceOk,
        "`/etc/util.rs`: absolute paths are not accepted",
    ),
    (
        "traversal_dotdot",
        Gate::SurfaceOk,
        "`../outside/pwned`: `..` components are not accepted (path traversal)",
    ),
    (
        "traversal_inner",
        Gate::SurfaceOk,
        "`src/../../outside/pwned`: `..` components are not accepted",
    ),
    (
        "backslash_path",
        Gate::SurfaceOk,
        "backslashes are not accepted in paths",
    ),
    ("invalid_utf8_path", Gate::SurfaceOk, "is not valid UTF-8"),
    (
        "git_dir_upper",
        Gate::SurfaceOk,
        "`.GIT/hooks/post-checkout`: a component names or aliases `.git`",
    ),
    (
        "git_dir_short_name",
        Gate::SurfaceOk,
        "`GIT~1/config`: a component names or aliases `.git`",
    ),
    (
        "git_dir_stream",
        Gate::SurfaceOk,
        "`.git::$INDEX_ALLOCATION/config`: a component names or aliases `.git`",
    ),
    (
        "git_dir_trailing_dots",
        Gate::SurfaceOk,
        "`.git.../config`: a component names or aliases `.git`",
    ),
    (
        "git_dir_ignorable_zwnj",
        Gate::SurfaceOk,
        "`.g\u{200c}it/config`: a component names or aliases `.git`",
    ),
    (
        "git_dir_bom",
        Gate::SurfaceOk,
        "`\u{feff}.git/hooks/pre-commit`: a component names or aliases `.git`",
    ),
    (
        "gitmodules",
        Gate::SurfaceOk,
        "`.gitmodules`: the campaign denies paths matching `.gitmodules`",
    ),
    (
        "gitmodules_short_name",
        Gate::SurfaceOk,
        "`GITMOD~1`: the campaign denies paths matching `.gitmodules`",
    ),
    (
        "gitattributes_nested",
        Gate::SurfaceOk,
        "`src/.gitattributes`: the campaign denies paths matching `**/.gitattributes`",
    ),
    (
        "gitattributes_case",
        Gate::SurfaceOk,
        "`.GitAttributes`: the campaign denies paths matching `.gitattributes`",
    ),
    // Path policy before the baseline lookups: a traversal, not "no file there".
    (
        "traversal_modify",
        Gate::SurfaceOk,
        "surface_ok: `../engine.toml`: `..` components are not accepted (path traversal)",
    ),
    (
        "rename_outside",
        Gate::SurfaceOk,
        "`../util.rs`: `..` components are not accepted",
    ),
    (
        "copy_outside",
        Gate::SurfaceOk,
        "`tmp/../../engine.toml`: `..` components are not accepted",
    ),
    // surface_ok: modes and symlinks.
    (
        "creates_symlink",
        Gate::SurfaceOk,
        "`evil-link`: mode 120000 (symlink) is not accepted; only regular files may be written",
    ),
    (
        "gitlink",
        Gate::SurfaceOk,
        "`sub`: mode 160000 (submodule (gitlink)) is not accepted",
    ),
    (
        "write_through_symlink",
        Gate::SurfaceOk,
        "`vendor/evil.txt`: `vendor` is a symlink in the baseline; no write, rename or copy may go through or replace it",
    ),
    (
        "write_through_symlink_case",
        Gate::SurfaceOk,
        "`VENDOR/evil.txt`: `vendor` is a symlink in the baseline",
    ),
    (
        "modify_symlink",
        Gate::SurfaceOk,
        "`cfg-link`: `cfg-link` is a symlink in the baseline",
    ),
    (
        "rename_into_symlink",
        Gate::SurfaceOk,
        "`vendor/util.rs`: `vendor` is a symlink in the baseline",
    ),
    (
        "mode_change_exec",
        Gate::SurfaceOk,
        "`README.md`: mode 100755 is not allowed (surface.allowed_modes: 100644)",
    ),
    (
        "weird_mode",
        Gate::SurfaceOk,
        "`README.md`: unknown file mode 100777",
    ),
    (
        "weird_mode_new_file",
        Gate::SurfaceOk,
        "`src/odd.rs`: unknown file mode 177777",
    ),
    // applied.
    (
        "does_not_apply",
        Gate::Applied,
        "applied: `README.md`, hunk 1 (`@@ -1 +1 @@`): the diff does not apply to the pinned baseline commit",
    ),
    (
        "does_not_apply_second_hunk",
        Gate::Applied,
        "applied: `engine.toml`, hunk 2 (`@@ -8 +8 @@`): the diff does not apply to the pinned baseline commit",
    ),
    // build.
    (
        "bad_engine_config",
        Gate::Build,
        "build: `engine.toml`: field `layers` = `0`",
    ),
    (
        "delete_engine_config",
        Gate::Build,
        "`engine.toml`: the patched tree has no engine config file here",
    ),
];

/// The state a rejection at `gate` comes from.
fn state_before(gate: Gate) -> PipelineState {
    match gate {
        Gate::Fetched => PipelineState::PickedUp,
        Gate::Verified => PipelineState::Fetched,
        Gate::SurfaceOk => PipelineState::Verified,
        Gate::Applied => PipelineState::SurfaceOk,
        Gate::Build => PipelineState::Building,
        Gate::Review => PipelineState::SurfaceOk,
    }
}

fn transitions(submission: &Submission) -> Vec<(PipelineState, Option<Gate>)> {
    submission
        .events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::Transition { to, gate, .. } => Some((to, gate)),
            EventKind::Duplicate { .. } | EventKind::Superseded { .. } => None,
        })
        .collect()
}

/// Ingests corpus file `name` and checks that it is rejected at `gate` from the state
/// before it, with a reason containing `reason`; returns a description of what differed.
fn check(fx: &crate::support::Fixture, name: &str, gate: Gate, reason: &str) -> Result<(), String> {
    let submission = ingest_ok(fx, &corpus(name));
    let steps = transitions(&submission);
    let last = steps.last().copied();
    let before = steps.len().checked_sub(2).map(|i| steps[i].0);
    let got_reason = submission.last_reason().unwrap_or_default();
    if submission.state != PipelineState::Rejected
        || last != Some((PipelineState::Rejected, Some(gate)))
        || before != Some(state_before(gate))
        || !got_reason.contains(reason)
    {
        return Err(format!(
            "{name}: expected rejected at {gate} from {} with a reason containing {reason:?}\n    got {steps:?}\n    reason {got_reason:?}",
            state_before(gate)
        ));
    }
    Ok(())
}

#[test]
fn hostile_corpus_is_rejected_at_the_right_gate() {
    let fx = fixture(&corpus_baseline());
    let failures: Vec<String> = REJECTED
        .iter()
        .filter_map(|(name, gate, reason)| check(&fx, name, *gate, reason).err())
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} corpus cases failed:\n{}",
        failures.len(),
        REJECTED.len(),
        failures.join("\n")
    );
}

/// Ingests a benign corpus file: it reaches `bench_queued` through every gate, and the
/// tree `prepare_tree` rebuilds from the stored diff has `files` (path, sha256 of the
/// content or `None` for absent) and changes exactly `changed`.
fn check_benign(name: &str, files: &[(&str, Option<&str>)], changed: &[&str]) {
    let fx = fixture(&corpus_baseline());
    let submission = ingest_ok(&fx, &corpus(name));
    let states: Vec<PipelineState> = transitions(&submission).iter().map(|s| s.0).collect();
    use PipelineState::*;
    assert_eq!(
        states,
        [
            Committed,
            PickedUp,
            Fetched,
            Verified,
            SurfaceOk,
            Applied,
            Building,
            Built,
            BenchQueued
        ],
        "{name}: {:?}",
        submission.events
    );
    let dest = fx.tmp.path().join("tree");
    let tree = prepare_tree(
        &fx.campaign_dir,
        &fx.campaign,
        Some(&submission.sha256),
        &dest,
    )
    .expect("prepare_tree");
    assert_eq!(tree.engine_config, dest.join("engine.toml"));
    let changed_paths: Vec<&str> = tree.changed_paths.iter().map(String::as_str).collect();
    assert_eq!(changed_paths, changed, "{name}");
    for (path, sha256) in files {
        let content = std::fs::read(dest.join(path)).ok();
        assert_eq!(
            content.as_deref().map(sha256_hex).as_deref(),
            *sha256,
            "{name}: {path}"
        );
    }
}

#[test]
fn benign_config_change_reaches_bench_queued() {
    check_benign(
        "benign_config_batched_tokens",
        &[(
            "engine.toml",
            Some("43a1336f904a5bb9393954d0114145e9a3ba05a893f28dc277cc9997df4b5fde"),
        )],
        &["engine.toml"],
    );
}

#[test]
fn benign_new_file_reaches_bench_queued() {
    check_benign(
        "benign_new_file",
        &[
            (
                "src/fast_path.rs",
                Some("566b20d623572ac0c4d8ebdac867bfa7feec877d3c52fdd43e330de444e3df96"),
            ),
            (
                "engine.toml",
                Some("49d9f10ce0c26dbc6fa5bafb7ff40f3bca94c34b4e51b12493d0c1252d9fadb2"),
            ),
        ],
        &["src/fast_path.rs"],
    );
}

#[test]
fn benign_rename_reaches_bench_queued() {
    check_benign(
        "benign_rename",
        &[
            (
                "src/helpers.rs",
                Some("267e4498a78497d318e40c06db78e982aeeda3d5600ebf0c2a78f7c5a7e2c2de"),
            ),
            ("src/util.rs", None),
        ],
        &["src/helpers.rs", "src/util.rs"],
    );
}

#[test]
fn benign_delete_reaches_bench_queued() {
    check_benign("benign_delete", &[("README.md", None)], &["README.md"]);
}

#[test]
fn baseline_tree_has_the_baseline_files() {
    let fx = fixture(&corpus_baseline());
    let dest = fx.tmp.path().join("baseline");
    let tree = prepare_tree(&fx.campaign_dir, &fx.campaign, None, &dest).expect("prepare_tree");
    assert!(tree.changed_paths.is_empty());
    let engine = std::fs::read(&tree.engine_config).expect("engine.toml");
    assert_eq!(
        sha256_hex(&engine),
        "49d9f10ce0c26dbc6fa5bafb7ff40f3bca94c34b4e51b12493d0c1252d9fadb2"
    );
    let link = std::fs::read_link(dest.join("vendor")).expect("vendor symlink");
    assert_eq!(link, std::path::Path::new("../outside"));
}

/// The reason of the event that moved `submission` to `state`.
fn reason_at(submission: &Submission, state: PipelineState) -> &str {
    submission
        .events
        .iter()
        .find(|e| matches!(e.kind, EventKind::Transition { to, .. } if to == state))
        .map(|e| e.reason.as_str())
        .unwrap_or_else(|| panic!("no `{state}` event: {:?}", submission.events))
}

/// Regression: a header check ran before the path rules, so a diff that writes into
/// `.git/hooks` was reported only as a header mismatch. Every violation is reported, the
/// path rule first.
#[test]
fn a_git_path_and_a_header_mismatch_are_both_reported_git_first() {
    let fx = fixture(&corpus_baseline());
    let submission = ingest_ok(&fx, &corpus("git_dir_and_header_mismatch"));
    assert_eq!(submission.state, PipelineState::Rejected);
    let reason = submission.last_reason().unwrap();
    let git = reason
        .find("`.git/hooks/post-checkout`: a component names or aliases `.git`")
        .unwrap_or_else(|| panic!("no `.git` violation in {reason:?}"));
    let header = reason
        .find("line 1: the header says `diff --git a/README.md b/README.md`")
        .unwrap_or_else(|| panic!("no header violation in {reason:?}"));
    assert!(git < header, "{reason}");
}

/// Regression: a `..` path was looked up in the baseline first and reported by
/// `verified` as "no file there", which reads like "rebase your patch".
#[test]
fn a_traversal_is_not_looked_up_in_the_baseline() {
    let fx = fixture(&corpus_baseline());
    let submission = ingest_ok(&fx, &corpus("traversal_modify"));
    let reason = submission.last_reason().unwrap();
    assert!(reason.contains("path traversal"), "{reason}");
    assert!(!reason.contains("no file there"), "{reason}");
    let verified = reason_at(&submission, PipelineState::Verified);
    assert!(
        verified.contains("1 section not looked up because a path breaks a path rule"),
        "{verified}"
    );
}

/// Regression: `verified` claimed "the `index` blob ids match" for a diff that has no
/// `index` line at all; it says what it compared.
#[test]
fn verified_says_what_it_compared() {
    let fx = fixture(&corpus_baseline());
    let rename = ingest_ok(&fx, &corpus("benign_rename"));
    let said = reason_at(&rename, PipelineState::Verified);
    assert!(said.contains("no preimage blob id was compared"), "{said}");
    assert!(
        said.contains("1 section without an `index` line: the file exists"),
        "{said}"
    );
    // A diff rejected later at surface_ok does not claim matching blob ids either.
    let mismatch = ingest_ok(&fx, &corpus("header_rename_mismatch"));
    let said = reason_at(&mismatch, PipelineState::Verified);
    assert!(said.contains("no preimage blob id was compared"), "{said}");
    assert!(
        said.contains("the violations are reported at surface_ok"),
        "{said}"
    );
    let config = ingest_ok(&fx, &corpus("benign_config_batched_tokens"));
    let said = reason_at(&config, PipelineState::Verified);
    assert!(
        said.contains("the 1 preimage blob id named by an `index` line matches"),
        "{said}"
    );
    let new_file = ingest_ok(&fx, &corpus("benign_new_file"));
    let said = reason_at(&new_file, PipelineState::Verified);
    assert!(
        said.contains("1 new file checked absent from the baseline"),
        "{said}"
    );
}

/// Regression: the default `surface.max_line_bytes` was 4,096 bytes, which real patches
/// (generated code, lock files) exceed; under the default campaign a 32 KiB line passes.
#[test]
fn a_32_kib_line_passes_the_default_campaign() {
    let fx = fixture_with(&corpus_baseline(), "");
    assert_eq!(fx.campaign.surface.max_line_bytes, 65_536);
    let line = "a".repeat(32 * 1024);
    let content = format!("{line}\n");
    let id = git2::Oid::hash_object(git2::ObjectType::Blob, content.as_bytes()).unwrap();
    let short = &id.to_string()[..7];
    let diff = format!(
        "diff --git a/docs/generated.txt b/docs/generated.txt\nnew file mode 100644\nindex 0000000..{short}\n--- /dev/null\n+++ b/docs/generated.txt\n@@ -0,0 +1 @@\n+{line}\n"
    );
    let submission = ingest_ok(&fx, diff.as_bytes());
    assert_eq!(
        submission.state,
        PipelineState::BenchQueued,
        "{:?}",
        submission.last_reason()
    );
}
