//! Repository submissions end to end (content/repository-submissions.md): a campaign of
//! kind `repository`, hotkeys registered with their coldkey and role, repositories built
//! with the `git` CLI in temp directories and ingested from local paths and `file://`
//! URLs through the fetch gate, the manifest checks and the queue.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use intake::ingest::{add_campaign, add_hotkey};
use intake::repository::{
    Commitment, FetchOutcome, Fetcher, GitFetcher, HotkeyRegistration, RepositoryRequest,
    ingest_repository,
};
use receipts::layout::{CampaignDir, DataDir};
use receipts::model::{Gate, MinerId, MinerRole, PipelineState, Sha256Hex, Submission, Timestamp};

use crate::support::build_repo;

/// A campaign of kind `repository` with a small size cap and queue.
pub(crate) fn campaign(tmp: &Path, repository: &str) -> CampaignDir {
    let commit = build_repo(
        &tmp.join("src-repo"),
        &[("engine.toml".into(), 0o100644, b"threads = 1\n".to_vec())],
    );
    let toml = format!(
        "id = \"repo-test\"\nsubmission = \"repository\"\n\n[model]\nname = \"s1-pro\"\n\n[baseline]\nrepo = \"src-repo\"\ncommit = \"{commit}\"\n\n[repository]\n{repository}"
    );
    fs::write(tmp.join("campaign.toml"), toml).unwrap();
    let data = DataDir::new(tmp.join("data"));
    add_campaign(&data, &tmp.join("campaign.toml")).expect("campaign add");
    data.campaign(&"repo-test".parse().unwrap())
}

pub(crate) const LIMITS: &str =
    "max_file_bytes = 4096\nmax_pending_per_coldkey = 5\nmax_per_window = 5\nrate_window_h = 24\n";

pub(crate) fn register(dir: &CampaignDir, hotkey: &str, coldkey: &str, role: MinerRole) {
    add_hotkey(
        dir,
        &hotkey.parse().unwrap(),
        Some(&HotkeyRegistration {
            coldkey: coldkey.parse().unwrap(),
            role,
            registration: "0xfeed".into(),
        }),
    )
    .expect("register");
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t.invalid")
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// A file of a submitted repository: path and content; a content starting `->` is a
/// symlink to the rest.
pub(crate) type File = (&'static str, Vec<u8>);

/// Writes `files` into the repository at `dir` (created on first use) and commits them on
/// `main`, returning the commit.
pub(crate) fn commit(dir: &Path, files: &[File]) -> String {
    if !dir.join(".git").exists() {
        fs::create_dir_all(dir).unwrap();
        git(dir, &["init", "--quiet", "--initial-branch=main"]);
    }
    for (path, content) in files {
        let path = dir.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let _ = fs::remove_file(&path);
        match content.strip_prefix(b"->") {
            Some(target) => {
                std::os::unix::fs::symlink(std::str::from_utf8(target).unwrap(), &path).unwrap()
            }
            None => fs::write(&path, content).unwrap(),
        }
    }
    git(dir, &["add", "-A"]);
    git(
        dir,
        &["commit", "--quiet", "--allow-empty", "-m", "submission"],
    );
    git(dir, &["rev-parse", "HEAD"])
}

pub(crate) const WEIGHTS: &[u8] = b"pretend these are weights";
pub(crate) const DIGEST: &str = "4c3fa1ed4fa8bb1b24c09e25e2d1b7bd20bd68d8c0c0b1f3b9e0b2d3a4a5a6a7";

pub(crate) fn manifest(extra: &str) -> Vec<u8> {
    format!(
        r#"{{"schemaVersion": 1, "track": "s1-pro-speed",
 "baseManifest": {{"name": "s1-pro", "sha256": "{DIGEST}"}},
 "runtime": {{"dockerfile": "Dockerfile"}},
 "weights": [{{"path": "weights/model.bin", "sha256": "{}"}}]{extra}}}"#,
        Sha256Hex::digest(WEIGHTS)
    )
    .into_bytes()
}

/// A repository that passes every check.
pub(crate) fn good_files() -> Vec<File> {
    vec![
        ("reax-submission.json", manifest("")),
        (
            "Dockerfile",
            format!("FROM python:3.11-slim@sha256:{DIGEST}\nRUN apt-get install -y git=1:2.39.5-0\nCOPY . /app\n").into_bytes(),
        ),
        ("README.md", b"---\nlicense: apache-2.0\n---\n# s1-pro, faster\n".to_vec()),
        ("weights/model.bin", WEIGHTS.to_vec()),
        ("src/server.py", b"print('decide')\n".to_vec()),
    ]
}

pub(crate) fn with(mut files: Vec<File>, path: &'static str, content: Vec<u8>) -> Vec<File> {
    files.retain(|(p, _)| *p != path);
    files.push((path, content));
    files
}

pub(crate) struct Case {
    pub(crate) tmp: tempfile::TempDir,
    pub(crate) dir: CampaignDir,
}

impl Case {
    pub(crate) fn new() -> Self {
        Self::with_limits(LIMITS)
    }

    pub(crate) fn with_limits(limits: &str) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let dir = campaign(tmp.path(), limits);
        register(&dir, "hot-a", "cold-1", MinerRole::Competition);
        Self { tmp, dir }
    }

    pub(crate) fn repo(&self, name: &str) -> PathBuf {
        self.tmp.path().join("repos").join(name)
    }

    pub(crate) fn ingest_as(&self, hotkey: &str, commitment: &str, at: i64) -> Submission {
        self.ingest_with(&GitFetcher::default(), hotkey, commitment, at)
    }

    /// Ingests `commitment` as `hotkey`, committed at `at` (Unix seconds), through
    /// `fetcher`.
    pub(crate) fn ingest_with(
        &self,
        fetcher: &dyn Fetcher,
        hotkey: &str,
        commitment: &str,
        at: i64,
    ) -> Submission {
        let commitment: Commitment = commitment.parse().expect("commitment");
        let miner: MinerId = hotkey.parse().unwrap();
        ingest_repository(
            &self.dir,
            &RepositoryRequest {
                commitment: &commitment,
                miner: &miner,
                committed_at: Timestamp::from_unix_seconds(at).unwrap(),
            },
            fetcher,
        )
        .expect("ingest")
        .submission()
        .clone()
    }

    /// Commits `files` into a fresh repository `name` and ingests it as `hot-a`.
    pub(crate) fn submit(&self, name: &str, files: &[File]) -> Submission {
        let repo = self.repo(name);
        let head = commit(&repo, files);
        self.ingest_as(
            "hot-a",
            &format!("{}@{head}", repo.display()),
            1_800_000_000,
        )
    }
}

pub(crate) fn rejected_at(s: &Submission, gate: Gate) -> &str {
    assert_eq!(s.state, PipelineState::Rejected, "{:?}", s.last_reason());
    let last = s.events.last().unwrap();
    assert!(
        matches!(last.kind, receipts::model::EventKind::Transition { gate: Some(g), .. } if g == gate),
        "{last:?}"
    );
    s.last_reason().unwrap()
}

#[test]
fn a_valid_repository_is_bench_queued_with_its_digests() {
    let case = Case::new();
    let s = case.submit("good", &good_files());
    assert_eq!(s.state, PipelineState::BenchQueued, "{:?}", s.last_reason());
    let states: Vec<&str> = s
        .events
        .iter()
        .filter_map(|e| match e.kind {
            receipts::model::EventKind::Transition { to, .. } => Some(to.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        states,
        [
            "committed",
            "picked_up",
            "fetched",
            "verified",
            "surface_ok",
            "bench_queued"
        ]
    );
    let record = s.repository.as_ref().unwrap();
    assert_eq!(record.coldkey.as_deref(), Some("cold-1"));
    assert_eq!(s.sha256, Sha256Hex::digest(record.commitment.as_bytes()));
    let validation = record.validation.as_ref().unwrap();
    assert!(validation.passed && validation.errors.is_empty());
    assert_eq!(
        record.manifest_sha256,
        Some(Sha256Hex::digest(&manifest("")))
    );
    let tree =
        intake::repository::FetchedTree::load(&intake::repository::tree_dir(&case.dir, &s.sha256))
            .unwrap();
    assert_eq!(Some(tree.tree_sha256), record.tree_sha256);
    assert_eq!(
        fs::read(tree.files_root().join("weights/model.bin")).unwrap(),
        WEIGHTS
    );
    let paths: Vec<&str> = tree.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "Dockerfile",
            "README.md",
            "reax-submission.json",
            "src/server.py",
            "weights/model.bin"
        ]
    );
}

#[test]
fn a_file_url_commitment_is_fetched_too() {
    let case = Case::new();
    let repo = case.repo("url");
    let head = commit(&repo, &good_files());
    let s = case.ingest_as(
        "hot-a",
        &format!("file://{}@{head}", repo.display()),
        1_800_000_000,
    );
    assert_eq!(s.state, PipelineState::BenchQueued, "{:?}", s.last_reason());
}

#[test]
fn a_push_after_the_commitment_changes_nothing() {
    let case = Case::new();
    let repo = case.repo("pushed");
    let head = commit(&repo, &good_files());
    let commitment = format!("{}@{head}", repo.display());
    let first = case.ingest_as("hot-a", &commitment, 1_800_000_000);
    let digest = first.repository.as_ref().unwrap().tree_sha256.unwrap();
    // A later push rewrites the weights and the manifest on `main`.
    commit(
        &repo,
        &[
            ("weights/model.bin", b"other weights".to_vec()),
            ("reax-submission.json", b"{}".to_vec()),
        ],
    );
    // Fetched again at the pinned commit: the same tree.
    let again = tempfile::tempdir().unwrap();
    let parsed: Commitment = commitment.parse().unwrap();
    let FetchOutcome::Fetched(tree) = GitFetcher::default()
        .fetch(&parsed, 4096, &again.path().join("t"))
        .unwrap()
    else {
        panic!("refetch rejected");
    };
    assert_eq!(tree.tree_sha256, digest);
    // And the record, ingested again, keeps its state and digest (a duplicate event).
    let second = case.ingest_as("hot-a", &commitment, 1_800_000_100);
    assert_eq!(second.state, PipelineState::BenchQueued);
    assert_eq!(
        second.repository.as_ref().unwrap().tree_sha256,
        Some(digest)
    );
    assert!(matches!(
        second.events.last().unwrap().kind,
        receipts::model::EventKind::Duplicate { .. }
    ));
}

#[test]
fn the_earlier_commitment_of_the_same_repository_takes_the_record() {
    let case = Case::new();
    register(&case.dir, "hot-b", "cold-2", MinerRole::Competition);
    let repo = case.repo("tie");
    let head = commit(&repo, &good_files());
    let commitment = format!("{}@{head}", repo.display());
    case.ingest_as("hot-a", &commitment, 1_800_000_100);
    let s = case.ingest_as("hot-b", &commitment, 1_800_000_000);
    assert_eq!(s.miner.as_str(), "hot-b");
    assert_eq!(
        s.repository.as_ref().unwrap().coldkey.as_deref(),
        Some("cold-2")
    );
    // A later one by anyone stays a duplicate.
    let s = case.ingest_as("hot-a", &commitment, 1_800_000_200);
    assert_eq!(s.miner.as_str(), "hot-b");
}

#[test]
fn a_commit_no_ref_reaches_is_commit_unreachable() {
    let case = Case::new();
    let repo = case.repo("orphan");
    commit(&repo, &good_files());
    git(&repo, &["checkout", "--quiet", "-b", "side"]);
    let side = commit(&repo, &[("extra.txt", b"x".to_vec())]);
    git(&repo, &["checkout", "--quiet", "main"]);
    git(&repo, &["branch", "--quiet", "-D", "side"]);
    let s = case.ingest_as(
        "hot-a",
        &format!("{}@{side}", repo.display()),
        1_800_000_000,
    );
    assert_eq!(
        rejected_at(&s, Gate::Fetched),
        format!(
            "commit_unreachable: commit `{side}` does not exist or no ref of the repository reaches it"
        )
    );
    let missing = "0".repeat(40);
    let s = case.ingest_as(
        "hot-a",
        &format!("{}@{missing}", repo.display()),
        1_800_000_000,
    );
    assert!(rejected_at(&s, Gate::Fetched).starts_with("commit_unreachable: "));
}

#[test]
fn a_file_over_the_cap_is_file_too_large() {
    let case = Case::new();
    let s = case.submit("big", &with(good_files(), "blob.bin", vec![7u8; 4097]));
    assert_eq!(
        rejected_at(&s, Gate::Fetched),
        "file_too_large: `blob.bin` is 4097 bytes, over the campaign's cap of 4096"
    );
}

pub(crate) fn pointer(oid: &str, size: u64) -> Vec<u8> {
    format!("version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize {size}\n")
        .into_bytes()
}

#[test]
fn an_lfs_pointer_over_the_cap_is_refused_from_its_pointer() {
    let case = Case::new();
    let oid = "ab".repeat(32);
    let s = case.submit(
        "lfs-big",
        &with(
            good_files(),
            "weights/huge.safetensors",
            pointer(&oid, 9_000_000_000),
        ),
    );
    assert_eq!(
        rejected_at(&s, Gate::Fetched),
        "file_too_large: `weights/huge.safetensors` is 9000000000 bytes (its LFS pointer's size), over the campaign's cap of 4096"
    );
}

#[test]
fn an_lfs_pointer_to_an_object_not_in_the_repository_is_refused() {
    let case = Case::new();
    let oid = "cd".repeat(32);
    let s = case.submit(
        "lfs-foreign",
        &with(good_files(), "weights/model.bin", pointer(&oid, 10)),
    );
    assert_eq!(
        rejected_at(&s, Gate::Fetched),
        format!(
            "lfs_object_not_in_repository: `weights/model.bin` points to LFS object sha256:{oid}, which this repository does not hold"
        )
    );
}

#[test]
fn an_lfs_object_in_the_repository_is_resolved() {
    let case = Case::new();
    let repo = case.repo("lfs-ok");
    let oid = Sha256Hex::digest(WEIGHTS).to_string();
    let files = with(
        good_files(),
        "weights/model.bin",
        pointer(&oid, WEIGHTS.len() as u64),
    );
    let head = commit(&repo, &files);
    let store = repo
        .join(".git/lfs/objects")
        .join(&oid[..2])
        .join(&oid[2..4]);
    fs::create_dir_all(&store).unwrap();
    fs::write(store.join(&oid), WEIGHTS).unwrap();
    let s = case.ingest_as(
        "hot-a",
        &format!("{}@{head}", repo.display()),
        1_800_000_000,
    );
    assert_eq!(s.state, PipelineState::BenchQueued, "{:?}", s.last_reason());
    let tree =
        intake::repository::FetchedTree::load(&intake::repository::tree_dir(&case.dir, &s.sha256))
            .unwrap();
    let file = tree.file("weights/model.bin").unwrap();
    assert!(file.lfs);
    assert_eq!(file.sha256.as_str(), oid);
}

#[test]
fn a_symlink_leaving_the_tree_is_refused_and_one_inside_listed() {
    let case = Case::new();
    let files = with(
        with(good_files(), "escape", b"->../../etc/passwd".to_vec()),
        "docs/card",
        b"->../README.md".to_vec(),
    );
    let s = case.submit("links", &files);
    assert_eq!(
        rejected_at(&s, Gate::Fetched),
        "symlink_escapes_tree: symlink `escape` → `../../etc/passwd` resolves outside the repository"
    );
    let s = case.submit(
        "inner-link",
        &with(good_files(), "docs/card", b"->../README.md".to_vec()),
    );
    assert_eq!(s.state, PipelineState::BenchQueued, "{:?}", s.last_reason());
}

#[test]
fn an_unpinned_base_image_is_rejected_at_surface_ok_naming_it() {
    let case = Case::new();
    let s = case.submit(
        "unpinned",
        &with(
            good_files(),
            "Dockerfile",
            b"FROM vllm/vllm-openai:latest\n".to_vec(),
        ),
    );
    assert_eq!(
        rejected_at(&s, Gate::SurfaceOk),
        "`runtime.dockerfile`: unpinned_base_image: line 1: base image `vllm/vllm-openai:latest` is not pinned by digest (`@sha256:<64 hex>`)"
    );
    let validation = s.repository.as_ref().unwrap().validation.as_ref().unwrap();
    assert!(!validation.passed);
    assert_eq!(validation.errors[0].field, "runtime.dockerfile");
}

#[test]
fn a_manifest_field_of_the_wrong_shape_is_named() {
    let case = Case::new();
    let bad = String::from_utf8(manifest(""))
        .unwrap()
        .replace("\"s1-pro-speed\"", "\"s2-speed\"");
    let s = case.submit(
        "schema",
        &with(good_files(), "reax-submission.json", bad.into_bytes()),
    );
    let reason = rejected_at(&s, Gate::SurfaceOk);
    assert!(
        reason.starts_with("`track`: schema_violation: unknown variant `s2-speed`"),
        "{reason}"
    );
}

#[test]
fn a_missing_manifest_is_refused() {
    let case = Case::new();
    let mut files = good_files();
    files.retain(|(p, _)| *p != "reax-submission.json");
    let s = case.submit("nomanifest", &files);
    assert_eq!(
        rejected_at(&s, Gate::SurfaceOk),
        "`reax-submission.json`: manifest_missing: the repository has no `reax-submission.json` at its root"
    );
}

#[test]
fn a_licence_outside_the_list_is_rejected_naming_it() {
    let case = Case::new();
    let s = case.submit(
        "gpl",
        &with(
            good_files(),
            "README.md",
            b"---\nlicense: gpl-3.0\n---\n".to_vec(),
        ),
    );
    assert!(
        rejected_at(&s, Gate::SurfaceOk).starts_with(
            "`modelCard.license`: licence_not_allowed: licence `gpl-3.0` in `README.md`"
        )
    );
}

#[test]
fn a_weight_whose_sha256_differs_is_refused() {
    let case = Case::new();
    let s = case.submit(
        "weights",
        &with(good_files(), "weights/model.bin", b"swapped".to_vec()),
    );
    assert_eq!(
        rejected_at(&s, Gate::SurfaceOk),
        format!(
            "`weights[0].sha256`: weight_sha256_mismatch: `weights/model.bin` has sha256 {}; the manifest says {}",
            Sha256Hex::digest(b"swapped"),
            Sha256Hex::digest(WEIGHTS)
        )
    );
}

#[test]
fn an_unregistered_hotkey_is_refused() {
    let case = Case::new();
    let repo = case.repo("unreg");
    let head = commit(&repo, &good_files());
    let s = case.ingest_as(
        "hot-z",
        &format!("{}@{head}", repo.display()),
        1_800_000_000,
    );
    assert_eq!(
        rejected_at(&s, Gate::Verified),
        "unregistered_hotkey: hotkey `hot-z` is not registered for this campaign"
    );
}

#[test]
fn an_inference_hotkey_is_refused() {
    let case = Case::new();
    register(&case.dir, "hot-inf", "cold-1", MinerRole::Inference);
    let repo = case.repo("inf");
    let head = commit(&repo, &good_files());
    let s = case.ingest_as(
        "hot-inf",
        &format!("{}@{head}", repo.display()),
        1_800_000_000,
    );
    assert!(
        rejected_at(&s, Gate::Verified)
            .starts_with("inference_hotkey: hotkey `hot-inf` is registered as an inference miner")
    );
    // Nothing was fetched for it.
    assert!(!intake::repository::tree_dir(&case.dir, &s.sha256).exists());
}

#[test]
fn the_window_refuses_one_over_the_limit_and_slides() {
    let case =
        Case::with_limits("max_pending_per_coldkey = 10\nmax_per_window = 2\nrate_window_h = 24\n");
    // A second hotkey of the same coldkey shares its queue.
    register(&case.dir, "hot-a2", "cold-1", MinerRole::Competition);
    let t0 = 1_800_000_000;
    let repo = case.repo("rate");
    let mut commitments = Vec::new();
    for i in 0..4 {
        let head = commit(&repo, &with(good_files(), "src/n.txt", vec![b'0' + i]));
        commitments.push(format!("{}@{head}", repo.display()));
    }
    assert_eq!(
        case.ingest_as("hot-a", &commitments[0], t0).state,
        PipelineState::BenchQueued
    );
    assert_eq!(
        case.ingest_as("hot-a2", &commitments[1], t0 + 3600).state,
        PipelineState::BenchQueued
    );
    // Exactly at the limit: the third within 24 h is refused, and says when.
    let s = case.ingest_as("hot-a", &commitments[2], t0 + 86_399);
    let next = Timestamp::from_unix_seconds(t0 + 86_400).unwrap();
    assert_eq!(
        rejected_at(&s, Gate::Verified),
        format!(
            "rate_limited: coldkey `cold-1` had 2 submissions admitted within 24 h, at most 2 (max_per_window); the next slot opens at {next}"
        )
    );
    // 24 h after the first, its slot is free again.
    assert_eq!(
        case.ingest_as("hot-a", &commitments[3], t0 + 86_400).state,
        PipelineState::BenchQueued
    );
}

#[test]
fn pending_submissions_are_limited_per_coldkey() {
    let case = Case::with_limits("max_pending_per_coldkey = 1\nmax_per_window = 10\n");
    let repo = case.repo("pending");
    let first = commit(&repo, &good_files());
    let second = commit(&repo, &with(good_files(), "src/n.txt", b"2".to_vec()));
    let t0 = 1_800_000_000;
    case.ingest_as("hot-a", &format!("{}@{first}", repo.display()), t0);
    let s = case.ingest_as("hot-a", &format!("{}@{second}", repo.display()), t0 + 1);
    assert_eq!(
        rejected_at(&s, Gate::Verified),
        "rate_limited: coldkey `cold-1` has 1 submissions waiting, at most 1 (max_pending_per_coldkey); the next slot opens when one of them is rejected, scored or disqualified"
    );
}

#[test]
fn a_diff_campaign_refuses_a_repository() {
    let tmp = tempfile::tempdir().unwrap();
    let fixture = crate::support::fixture(&crate::support::corpus_baseline());
    let commitment: Commitment = format!("/x@{}", "a".repeat(40)).parse().unwrap();
    let miner: MinerId = "miner-a".parse().unwrap();
    let err = ingest_repository(
        &fixture.campaign_dir,
        &RepositoryRequest {
            commitment: &commitment,
            miner: &miner,
            committed_at: Timestamp::from_unix_seconds(0).unwrap(),
        },
        &GitFetcher::default(),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("campaign `gates-test` takes submissions of kind `diff`")
    );
    drop(tmp);
}

/// The committed schema of `reax-submission.json` is the one the types generate;
/// `REFEREE_BLESS=1` rewrites it.
#[test]
fn manifest_schema_is_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(intake::repository::manifest::MANIFEST_SCHEMA_PATH);
    let current = intake::repository::manifest::manifest_schema_json();
    if testkit::blessing() {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, &current).unwrap();
    }
    let committed = fs::read_to_string(&path).expect("the committed schema");
    assert_eq!(
        committed, current,
        "stale: REFEREE_BLESS=1 cargo test -p intake --test it repository"
    );
}

#[test]
fn a_missing_repository_is_repository_not_found() {
    let case = Case::new();
    let missing = case.repo("never-made");
    let s = case.ingest_as(
        "hot-a",
        &format!("{}@{}", missing.display(), "a".repeat(40)),
        1_800_000_000,
    );
    assert_eq!(
        rejected_at(&s, Gate::Fetched),
        format!(
            "repository_not_found: no repository at `{}`",
            missing.display()
        )
    );
}

#[test]
fn a_submodule_is_refused() {
    let case = Case::new();
    let repo = case.repo("submodule");
    commit(&repo, &good_files());
    git(
        &repo,
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{},vendor/sub", "b".repeat(40)),
        ],
    );
    git(&repo, &["commit", "--quiet", "-m", "a submodule"]);
    let head = git(&repo, &["rev-parse", "HEAD"]);
    let s = case.ingest_as(
        "hot-a",
        &format!("{}@{head}", repo.display()),
        1_800_000_000,
    );
    assert_eq!(
        rejected_at(&s, Gate::Fetched),
        "submodule: `vendor/sub` is a submodule"
    );
}

#[test]
fn an_lfs_object_that_does_not_hash_to_its_oid_is_corrupt() {
    let case = Case::new();
    let repo = case.repo("lfs-corrupt");
    let oid = Sha256Hex::digest(WEIGHTS).to_string();
    let head = commit(
        &repo,
        &with(
            good_files(),
            "weights/model.bin",
            pointer(&oid, WEIGHTS.len() as u64),
        ),
    );
    let store = repo
        .join(".git/lfs/objects")
        .join(&oid[..2])
        .join(&oid[2..4]);
    fs::create_dir_all(&store).unwrap();
    fs::write(store.join(&oid), b"not the weights at all!!!").unwrap();
    let s = case.ingest_as(
        "hot-a",
        &format!("{}@{head}", repo.display()),
        1_800_000_000,
    );
    assert_eq!(
        rejected_at(&s, Gate::Fetched),
        format!(
            "lfs_object_corrupt: the LFS object of `weights/model.bin` does not hash to sha256:{oid} or has another size"
        )
    );
    // Nothing of it was kept.
    assert!(!intake::repository::tree_dir(&case.dir, &s.sha256).exists());
}

#[test]
fn a_fetched_tree_is_kept_out_of_the_published_data_directory() {
    let case = Case::new();
    // A file named like a private key, as a miner may commit.
    let s = case.submit(
        "keyish",
        &with(good_files(), "deploy.key", b"not a key".to_vec()),
    );
    assert_eq!(s.state, PipelineState::BenchQueued, "{:?}", s.last_reason());
    let tree = intake::repository::tree_dir(&case.dir, &s.sha256);
    assert!(tree.join("tree/deploy.key").is_file());
    assert!(tree.starts_with(case.dir.work_dir()));
    assert_eq!(
        receipts::layout::find_private_keys(case.dir.root()).unwrap(),
        Vec::<PathBuf>::new()
    );
}
