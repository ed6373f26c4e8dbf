//! The review stage of repository ingest (content/review.md): after the manifest holds,
//! the static review, the campaign's LLM review command and copy detection decide
//! between `bench_queued`, `rejected` at gate `review`, and waiting in `surface_ok` for a
//! person's `NEEDS-HUMAN` resolution, signed and logged.

use std::fs;

use intake::ingest::{add_campaign, add_hotkey};
use intake::repository::HotkeyRegistration;
use intake::repository::review::{Resolution, resolve};
use intake::statements::StatementLog;
use intake::tlog::LogStore;
use receipts::keys::PrivateKey;
use receipts::layout::DataDir;
use receipts::model::{
    CopyOutcome, CopyReason, Gate, MinerRole, PipelineState, ReviewRecord, Sha256Hex, Submission,
    Timestamp, Verdict,
};
use receipts::tlog::entry::EntryKind;
use receipts::tlog::statements::statement_path;

use crate::repository::{Case, DIGEST, File, commit, good_files, rejected_at, with};

fn review(s: &Submission) -> &ReviewRecord {
    s.repository
        .as_ref()
        .and_then(|r| r.review.as_ref())
        .expect("a review is recorded")
}

/// Ingests `files` as repository `name`, committed `minute` minutes after the others.
fn submit_at(case: &Case, name: &str, files: &[File], minute: i64) -> Submission {
    let repo = case.repo(name);
    let head = commit(&repo, files);
    case.ingest_as(
        "hot-a",
        &format!("{}@{head}", repo.display()),
        1_800_000_000 + 60 * minute,
    )
}

/// A manifest whose one weights file is quantised (so not the base model's), with the
/// recipe the track asks for; `extra` is appended to its fields.
fn quantised_manifest(weights: &[u8], extra: &str) -> Vec<u8> {
    format!(
        r#"{{"schemaVersion": 1, "track": "s1-pro-speed",
 "baseManifest": {{"name": "s1-pro", "sha256": "{DIGEST}"}},
 "runtime": {{"dockerfile": "Dockerfile"}},
 "weights": [{{"path": "weights/model.bin", "sha256": "{}", "quantised": true}}],
 "quantisation": {{"tool": "llm-compressor", "version": "0.4.1", "command": "quantize --w8a8"}}{extra}}}"#,
        Sha256Hex::digest(weights)
    )
    .into_bytes()
}

fn quantised_files(weights: &'static [u8], server: &str) -> Vec<File> {
    let files = with(
        good_files(),
        "reax-submission.json",
        quantised_manifest(weights, ""),
    );
    let files = with(files, "weights/model.bin", weights.to_vec());
    with(files, "src/server.py", server.as_bytes().to_vec())
}

const SERVER: &str = "def decide(values, weight):\n    \"\"\"Sum.\"\"\"\n    total = 0\n    for value in values:\n        total += value * weight  # accumulate\n    return total\n\n\nprint(decide([1], 2))\n";

/// SERVER renamed, re-laid-out, re-commented, without its docstring.
const COSMETIC: &str =
    "# all mine\ndef f(xs, w):\n  t = 0\n  for x in xs: t += x*w\n  return t\nprint(f([1], 2))\n";

#[test]
fn a_clean_repository_passes_review_and_is_queued() {
    let case = Case::new();
    let s = submit_at(&case, "good", &good_files(), 0);
    assert_eq!(s.state, PipelineState::BenchQueued, "{:?}", s.last_reason());
    let r = review(&s);
    assert_eq!(r.findings, []);
    assert_eq!(
        (r.static_verdict, r.verdict),
        (Verdict::Pass, Verdict::Pass)
    );
    assert_eq!(r.copy, CopyOutcome::Original);
    assert_eq!(r.rules_digest, review::RuleSet::builtin().unwrap().digest);
    // The base model's pinned weights are not the submission's own.
    assert!(r.fingerprint.weights.is_empty());
    assert_eq!(r.fingerprint.code_files, 2);
    let reason = s.last_reason().unwrap();
    assert!(
        reason.starts_with(&format!(
            "review PASS (rules v1 sha256 {}, 0 findings); no earlier commitment copied",
            r.rules_digest
        )),
        "{reason}"
    );
}

#[test]
fn a_hosted_llm_endpoint_fails_review_naming_file_line_and_rule() {
    let case = Case::new();
    let files = with(
        good_files(),
        "src/server.py",
        b"import json\n\nURL = \"https://api.openai.com/v1/chat/completions\"\n".to_vec(),
    );
    let s = submit_at(&case, "caller", &files, 0);
    let reason = rejected_at(&s, Gate::Review);
    let r = review(&s);
    assert_eq!(r.verdict, Verdict::Fail);
    let hit: Vec<(&str, Option<usize>, &str)> = r
        .findings
        .iter()
        .map(|f| (f.file.as_str(), f.line, f.rule.as_str()))
        .collect();
    assert_eq!(hit, [("src/server.py", Some(3), "llm.endpoint")]);
    assert!(
        reason.contains("fail llm.endpoint at src/server.py:3: api.openai.com"),
        "{reason}"
    );
}

#[test]
fn a_cosmetic_copy_is_rejected_crediting_the_earlier_commitment() {
    let case = Case::new();
    let original = submit_at(
        &case,
        "original",
        &quantised_files(b"weights one", SERVER),
        0,
    );
    assert_eq!(original.state, PipelineState::BenchQueued);
    let copy = submit_at(&case, "copy", &quantised_files(b"weights two", COSMETIC), 5);
    let reason = rejected_at(&copy, Gate::Review).to_owned();
    let code = review(&original).fingerprint.code;
    assert_eq!(review(&copy).fingerprint.code, code);
    assert_eq!(
        review(&copy).copy,
        CopyOutcome::Copy {
            original: original.sha256.to_string(),
            reason: CopyReason::SameRuntimeCode { code },
        }
    );
    assert_eq!(
        reason,
        format!(
            "disqualified as a copy of submission {}, committed earlier and credited: the same runtime code once cosmetics are taken out (sha256 {code})",
            original.sha256
        )
    );
    // The review itself passed: only the copy stops it.
    assert_eq!(review(&copy).verdict, Verdict::Pass);
}

#[test]
fn an_identical_weights_copy_is_rejected_crediting_the_earlier_commitment() {
    let case = Case::new();
    let original = submit_at(&case, "original", &quantised_files(b"tuned", SERVER), 0);
    let other = "import json\nprint(json.dumps({'a': 1}))\n";
    let copy = submit_at(&case, "copy", &quantised_files(b"tuned", other), 5);
    rejected_at(&copy, Gate::Review);
    assert_eq!(
        review(&copy).copy,
        CopyOutcome::Copy {
            original: original.sha256.to_string(),
            reason: CopyReason::IdenticalWeights {
                sha256: Sha256Hex::digest(b"tuned")
            },
        }
    );
    // Committed earlier but ingested later: the earlier commitment is never a copy of a
    // later one.
    let earlier = submit_at(
        &case,
        "earlier",
        &quantised_files(b"tuned", "print(3)\n"),
        -5,
    );
    assert_eq!(earlier.state, PipelineState::BenchQueued);
    assert_eq!(review(&earlier).copy, CopyOutcome::Original);
}

#[test]
fn a_derived_submission_is_queued_held_to_the_margin() {
    let case = Case::new();
    let original = submit_at(&case, "original", &quantised_files(b"base", SERVER), 0);
    let repository = original.repository.as_ref().unwrap();
    let extra = format!(r#", "derivedFrom": "{}""#, repository.commitment);
    let files = with(
        quantised_files(b"better", "import json\nprint(json.dumps([2]))\n"),
        "reax-submission.json",
        quantised_manifest(b"better", &extra),
    );
    let derived = submit_at(&case, "derived", &files, 5);
    assert_eq!(derived.state, PipelineState::BenchQueued);
    assert_eq!(
        review(&derived).derived_from.as_deref(),
        Some(original.sha256.as_str())
    );
    assert_eq!(
        review(&derived).copy,
        CopyOutcome::Derived {
            original: original.sha256.to_string()
        }
    );
    assert!(
        derived.last_reason().unwrap().ends_with(&format!(
            "derived from {}: it must beat that submission by the campaign's margin (100 bp)",
            original.sha256
        )),
        "{:?}",
        derived.last_reason()
    );
}

/// A second campaign in the same data directory whose LLM review command is `command`.
fn reviewed_by(command: &str) -> Case {
    let case = Case::new();
    let toml = fs::read_to_string(case.tmp.path().join("campaign.toml")).unwrap();
    let toml = toml.replacen(
        "id = \"repo-test\"",
        &format!("id = \"repo-llm\"\nreview_command = {command:?}"),
        1,
    );
    let path = case.tmp.path().join("campaign-llm.toml");
    fs::write(&path, toml).unwrap();
    let data = DataDir::new(case.tmp.path().join("data"));
    add_campaign(&data, &path).expect("campaign add");
    let dir = data.campaign(&"repo-llm".parse().unwrap());
    add_hotkey(
        &dir,
        &"hot-a".parse().unwrap(),
        Some(&HotkeyRegistration {
            coldkey: "cold-1".parse().unwrap(),
            role: MinerRole::Competition,
            registration: "0xfeed".into(),
        }),
    )
    .expect("register");
    Case { dir, ..case }
}

#[test]
fn the_llm_review_command_gives_each_verdict_with_its_transcript() {
    for (answer, state) in [
        ("PASS", PipelineState::BenchQueued),
        ("FAIL", PipelineState::Rejected),
        ("NEEDS-HUMAN", PipelineState::SurfaceOk),
    ] {
        let command = format!("echo {answer}; echo looked at it; true");
        let case = reviewed_by(&command);
        let s = submit_at(&case, "good", &good_files(), 0);
        assert_eq!(s.state, state, "{answer}: {:?}", s.last_reason());
        let r = review(&s);
        let llm = r.llm.as_ref().expect("the LLM review is recorded");
        assert_eq!(llm.command, command);
        assert_eq!(llm.verdict.as_str(), answer);
        let transcript = format!("{answer}\nlooked at it\n");
        assert_eq!(llm.transcript, transcript);
        assert_eq!(
            llm.transcript_sha256,
            Sha256Hex::digest(transcript.as_bytes())
        );
        assert_eq!(r.static_verdict, Verdict::Pass);
        assert_eq!(r.verdict.as_str(), answer);
    }
}

#[test]
fn an_llm_review_without_a_verdict_stops_the_ingest_unreviewed() {
    let case = reviewed_by("echo maybe; true");
    let repo = case.repo("good");
    let head = commit(&repo, &good_files());
    let commitment: intake::repository::Commitment =
        format!("{}@{head}", repo.display()).parse().unwrap();
    let err = intake::repository::ingest_repository(
        &case.dir,
        &intake::repository::RepositoryRequest {
            commitment: &commitment,
            miner: &"hot-a".parse().unwrap(),
            committed_at: Timestamp::from_unix_seconds(1_800_000_000).unwrap(),
        },
        &intake::repository::GitFetcher::default(),
    )
    .expect_err("no verdict is not a PASS");
    assert!(err.to_string().contains("printed no verdict"), "{err}");
    let s = case.dir.load_submission(&commitment.digest()).unwrap();
    assert_eq!(s.state, PipelineState::SurfaceOk);
    assert!(s.repository.unwrap().review.is_none());
}

/// A repository whose review is NEEDS-HUMAN, in a data directory with a log.
fn needs_human() -> (Case, Submission, LogStore) {
    let case = Case::new();
    let log_key = PrivateKey::from_seed(&[3; 32]);
    let store = LogStore::init(
        &case.tmp.path().join("data"),
        "referee.example/log",
        &log_key,
    )
    .expect("log");
    let files = with(
        good_files(),
        "src/server.py",
        b"import subprocess\nsubprocess.run(['nvidia-smi'])\n".to_vec(),
    );
    let s = submit_at(&case, "asks", &files, 0);
    assert_eq!(s.state, PipelineState::SurfaceOk, "{:?}", s.last_reason());
    assert_eq!(review(&s).verdict, Verdict::NeedsHuman);
    assert_eq!(review(&s).findings[0].rule, "exec.subprocess");
    // Ingesting the same commitment again waits still: no second review, no move.
    let commitment = s.repository.as_ref().unwrap().commitment.clone();
    let again = case.ingest_as("hot-a", &commitment, 1_800_000_000);
    assert_eq!(again.state, PipelineState::SurfaceOk);
    assert_eq!(review(&again), review(&s));
    (case, s, store)
}

#[test]
fn needs_human_is_resolved_pass_signed_and_logged() {
    let (case, s, store) = needs_human();
    let log_key = PrivateKey::from_seed(&[3; 32]);
    let evaluator = PrivateKey::from_seed(&[4; 32]);
    let log = StatementLog::new(&store, &evaluator, &log_key).unwrap();
    let at = Timestamp::from_unix_seconds(1_800_000_600).unwrap();
    let resolved = resolve(
        &case.dir,
        &Resolution {
            submission: &s.sha256,
            verdict: Verdict::Pass,
            reason: "nvidia-smi only reads the GPU's state",
            at,
        },
        &log,
    )
    .expect("resolved");
    assert_eq!(resolved.state, PipelineState::BenchQueued);
    let resolution = review(&resolved).resolution.clone().expect("recorded");
    assert_eq!(resolution.verdict, Verdict::Pass);
    assert_eq!(resolution.resolved_at, at);
    assert_eq!(resolution.log_index, 0);
    let path = statement_path(
        case.dir.root(),
        EntryKind::ReviewResolution,
        &resolution.envelope_sha256,
    );
    let bytes = fs::read(&path).expect("the statement is stored");
    assert_eq!(Sha256Hex::digest(&bytes), resolution.envelope_sha256);
    assert!(resolved.last_reason().unwrap().starts_with(
        "review NEEDS-HUMAN resolved PASS by the evaluator: nvidia-smi only reads the GPU's state"
    ));
    assert_eq!(
        case.dir.load_submission(&s.sha256).unwrap(),
        resolved,
        "saved"
    );
    // Decided once: a second resolution is refused.
    let again = resolve(
        &case.dir,
        &Resolution {
            submission: &s.sha256,
            verdict: Verdict::Fail,
            reason: "changed my mind",
            at,
        },
        &log,
    )
    .expect_err("already decided");
    assert!(
        again
            .to_string()
            .contains("does not wait for a person's review"),
        "{again}"
    );
}

#[test]
fn needs_human_is_resolved_fail_and_rejected_at_review() {
    let (case, s, store) = needs_human();
    let log_key = PrivateKey::from_seed(&[3; 32]);
    let evaluator = PrivateKey::from_seed(&[4; 32]);
    let log = StatementLog::new(&store, &evaluator, &log_key).unwrap();
    let resolution = |verdict| Resolution {
        submission: &s.sha256,
        verdict,
        reason: "it shells out to whatever PATH holds",
        at: Timestamp::from_unix_seconds(1_800_000_600).unwrap(),
    };
    let refused =
        resolve(&case.dir, &resolution(Verdict::NeedsHuman), &log).expect_err("a person decides");
    assert_eq!(
        refused.to_string(),
        "a resolution's verdict is PASS or FAIL, not NEEDS-HUMAN"
    );
    let resolved = resolve(&case.dir, &resolution(Verdict::Fail), &log).expect("resolved");
    let reason = rejected_at(&resolved, Gate::Review);
    assert!(
        reason.ends_with(
            "NEEDS-HUMAN resolved FAIL by the evaluator: it shells out to whatever PATH holds"
        ),
        "{reason}"
    );
    assert!(
        reason.contains("needs-human exec.subprocess at src/server.py:1"),
        "{reason}"
    );
}

/// A round runs a queued repository from its own tree (content/repository-submissions.md,
/// In a round): every fetched file copied and hashed again; a file changed since the
/// review stops it, naming the file, and so does a listing that is not the record's.
#[test]
fn a_queued_repository_is_checked_out_as_reviewed_and_a_changed_file_stops_it() {
    use intake::repository::checkout::{CheckoutError, checkout_tree};
    use intake::repository::tree_dir;
    use intake::store::CampaignStore;

    let case = Case::new();
    let files = good_files();
    let s = submit_at(&case, "good", &files, 0);
    assert_eq!(s.state, PipelineState::BenchQueued, "{:?}", s.last_reason());
    let out = case.tmp.path().join("round-tree");
    let root = checkout_tree(&case.dir, &s.sha256, &out).expect("checked out");
    assert_eq!(root, out);
    for (path, bytes) in &files {
        assert_eq!(&fs::read(out.join(path)).expect("copied"), bytes, "{path}");
    }

    // A file of the kept tree changed after the review.
    let fetched = tree_dir(&case.dir, &s.sha256).join("tree");
    let server = "src/server.py";
    fs::write(fetched.join(server), b"import os\nos.system('curl evil')\n").expect("tamper");
    let again = case.tmp.path().join("round-tree-2");
    match checkout_tree(&case.dir, &s.sha256, &again) {
        Err(CheckoutError::NotReviewed { submission, why }) => {
            assert_eq!(submission, s.sha256);
            assert!(why.starts_with(&format!("`{server}` has sha256")), "{why}");
        }
        other => panic!("expected NotReviewed, got {other:?}"),
    }

    // The record's tree digest changed: the listing is not the one reviewed.
    let mut record = case.dir.load_submission(&s.sha256).expect("record");
    if let Some(r) = record.repository.as_mut() {
        r.tree_sha256 = Some(Sha256Hex::digest(b"another tree"));
    }
    case.dir.save_submission(&record).expect("save");
    match checkout_tree(&case.dir, &s.sha256, &case.tmp.path().join("round-tree-3")) {
        Err(CheckoutError::NotReviewed { why, .. }) => {
            assert!(why.starts_with("its listing has digest"), "{why}");
        }
        other => panic!("expected NotReviewed, got {other:?}"),
    }
}

/// The listing `tree.json` edited after the review — a file's bytes swapped and its
/// listed sha256 with them, the recorded digest left as it was — does not check out:
/// the digest is recomputed from the listing. And a listing whose path leaves the tree
/// is refused before anything is copied, even with the record's digest forged to match.
#[test]
fn an_edited_listing_is_not_checked_out_and_a_path_leaving_the_tree_is_refused() {
    use intake::repository::checkout::{CheckoutError, checkout_tree};
    use intake::repository::fetch::FetchedTree;
    use intake::repository::tree_dir;
    use intake::store::CampaignStore;

    let case = Case::new();
    let s = submit_at(&case, "good", &good_files(), 0);
    assert_eq!(s.state, PipelineState::BenchQueued, "{:?}", s.last_reason());
    let kept = tree_dir(&case.dir, &s.sha256);
    let listing = kept.join("tree.json");
    let original = fs::read(&listing).expect("tree.json");
    let edit = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut tree: serde_json::Value = serde_json::from_slice(&original).expect("json");
        edit(&mut tree);
        fs::write(&listing, serde_json::to_vec(&tree).expect("json")).expect("write");
    };
    let not_reviewed =
        |out: &str| match checkout_tree(&case.dir, &s.sha256, &case.tmp.path().join(out)) {
            Err(CheckoutError::NotReviewed { why, .. }) => why,
            other => panic!("expected NotReviewed, got {other:?}"),
        };

    // Another server, listed with its own sha256.
    let server = "src/server.py";
    let evil = b"import os\nos.system('curl evil')\n";
    fs::write(kept.join("tree").join(server), evil).expect("tamper");
    edit(&|tree| {
        let files = tree["files"].as_array_mut().expect("files");
        let file = (files.iter_mut())
            .find(|f| f["path"] == server)
            .expect("the server");
        file["sha256"] = Sha256Hex::digest(evil).to_string().into();
    });
    let why = not_reviewed("edited");
    assert!(why.starts_with("its listing has digest"), "{why}");
    assert!(!case.tmp.path().join("edited").join(server).exists());

    // A path out of the tree, and the record's digest forged to the edited listing's.
    edit(&|tree| tree["files"][0]["path"] = "../outside".into());
    let forged = FetchedTree::load(&kept).expect("listing").listed_digest();
    let mut record = case.dir.load_submission(&s.sha256).expect("record");
    if let Some(r) = record.repository.as_mut() {
        r.tree_sha256 = Some(forged);
    }
    case.dir.save_submission(&record).expect("save");
    // The listing's own field must match too.
    edit(&|tree| {
        tree["files"][0]["path"] = "../outside".into();
        tree["treeSha256"] = forged.to_string().into();
    });
    let why = not_reviewed("escaped/tree");
    assert_eq!(
        why,
        "its listing names `../outside`, not a path inside the tree"
    );
    assert!(!case.tmp.path().join("escaped/outside").exists());
}
