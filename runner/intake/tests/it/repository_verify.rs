//! The verifier's recomputation of a repository campaign's records
//! (`submissions.manifest`, `submissions.queue`; content/verifying.md), over records
//! this crate's ingest wrote: they pass as written, and each forgery — of a record's
//! validation, of the copy of what the checks read, of its listing, of a commitment
//! time the queue counted — fails naming its field.

use std::fs;

use intake::store::CampaignStore;
use receipts::model::{PipelineState, Sha256Hex, Submission};
use receipts::rules::repository::copy::{ManifestCopy, copy_path};
use verifier::archive::verify_data;
use verifier::{FailureReason, VerifyOptions};

use crate::repository::{Case, commit, good_files, with};

const T0: i64 = 1_800_000_000;

/// A campaign with one slot per 24 h: `good` queued at T0, `unpinned` admitted 48 h
/// later and rejected at `surface_ok`, `late` refused by the window an hour after that.
fn three_records() -> (Case, [Submission; 3]) {
    let case =
        Case::with_limits("max_pending_per_coldkey = 10\nmax_per_window = 1\nrate_window_h = 24\n");
    let good = case.submit("good", &good_files());
    let repo = case.repo("unpinned");
    let head = commit(
        &repo,
        &with(
            good_files(),
            "Dockerfile",
            b"FROM vllm/vllm-openai:latest\n".to_vec(),
        ),
    );
    let unpinned = case.ingest_as(
        "hot-a",
        &format!("{}@{head}", repo.display()),
        T0 + 48 * 3600,
    );
    let repo = case.repo("late");
    let head = commit(&repo, &good_files());
    let late = case.ingest_as(
        "hot-a",
        &format!("{}@{head}", repo.display()),
        T0 + 49 * 3600,
    );
    assert_eq!(
        [good.state, unpinned.state, late.state],
        [
            PipelineState::BenchQueued,
            PipelineState::Rejected,
            PipelineState::Rejected
        ]
    );
    assert!(late.last_reason().unwrap().starts_with("rate_limited"));
    (case, [good, unpinned, late])
}

/// `(check, record file, field)` of every failed check of the campaign's records, and
/// how many `submissions.manifest` and `submissions.queue` checks passed.
fn verify(case: &Case) -> (Vec<(&'static str, String, String)>, [usize; 2]) {
    let reports = verify_data(
        &[],
        &[case.dir.root().to_path_buf()],
        &testkit::forge::keyring(),
        &VerifyOptions::default(),
        &|| {},
    );
    assert_eq!(reports.submissions.len(), 1);
    let report = &reports.submissions[0];
    let mut failures: Vec<(&'static str, String, String)> = report
        .failures()
        .map(|c| {
            let field = match &c.reason {
                Some(FailureReason::Recomputed { field, .. }) => field.clone(),
                other => format!("{other:?}"),
            };
            (c.name.as_str(), c.target.clone().unwrap_or_default(), field)
        })
        .collect();
    failures.sort();
    let passed = |name: &str| {
        report
            .checks
            .iter()
            .filter(|c| c.passed && c.name.as_str() == name)
            .count()
    };
    (
        failures,
        [passed("submissions.manifest"), passed("submissions.queue")],
    )
}

fn file(s: &Submission) -> String {
    format!("submissions/{}.json", s.sha256)
}

fn edit_record(case: &Case, s: &Submission, edit: impl FnOnce(&mut Submission)) {
    let mut record = case.dir.load_submission(&s.sha256).unwrap();
    edit(&mut record);
    case.dir.save_submission(&record).unwrap();
}

fn edit_copy(case: &Case, s: &Submission, edit: impl FnOnce(&mut ManifestCopy)) {
    let path = copy_path(case.dir.root(), &s.sha256);
    let mut copy: ManifestCopy = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    edit(&mut copy);
    fs::write(&path, serde_json::to_vec_pretty(&copy).unwrap()).unwrap();
}

#[test]
fn every_record_is_recomputed_from_its_copy_and_the_records() {
    let (case, [good, unpinned, _]) = three_records();
    // The two validated records have copies: the listing, the manifest and the texts
    // the checks read — never the weights.
    for s in [&good, &unpinned] {
        let copy: ManifestCopy =
            serde_json::from_slice(&fs::read(copy_path(case.dir.root(), &s.sha256)).unwrap())
                .unwrap();
        assert_eq!(
            copy.texts.keys().collect::<Vec<_>>(),
            ["Dockerfile", "README.md"]
        );
        assert_eq!(
            Some(copy.tree_sha256()),
            s.repository.as_ref().unwrap().tree_sha256
        );
    }
    assert_eq!(verify(&case), (vec![], [2, 3]));
}

#[test]
fn a_forged_validation_fails_submissions_manifest() {
    let (case, [_, unpinned, _]) = three_records();
    edit_record(&case, &unpinned, |r| {
        let validation = r.repository.as_mut().unwrap().validation.as_mut().unwrap();
        validation.errors.clear();
    });
    assert_eq!(
        verify(&case).0,
        [(
            "submissions.manifest",
            file(&unpinned),
            "repository.validation".to_owned()
        )]
    );
}

#[test]
fn a_copied_text_that_is_not_the_listed_file_fails_submissions_manifest() {
    let (case, [_, unpinned, _]) = three_records();
    // The evaluator "shows" a pinned Dockerfile for the rejected record.
    let pinned = good_files()
        .into_iter()
        .find(|(p, _)| *p == "Dockerfile")
        .map(|(_, text)| String::from_utf8(text).unwrap())
        .unwrap();
    edit_copy(&case, &unpinned, |c| {
        c.texts.insert("Dockerfile".to_owned(), pinned);
    });
    assert_eq!(
        verify(&case).0,
        [(
            "submissions.manifest",
            file(&unpinned),
            "texts.Dockerfile".to_owned()
        )]
    );
}

#[test]
fn a_forged_listing_fails_submissions_manifest_on_the_tree_digest() {
    let (case, [good, _, _]) = three_records();
    edit_copy(&case, &good, |c| {
        let weights = c
            .files
            .iter_mut()
            .find(|f| f.path == "weights/model.bin")
            .unwrap();
        weights.sha256 = Sha256Hex::digest(b"other weights");
    });
    assert_eq!(
        verify(&case).0,
        [(
            "submissions.manifest",
            file(&good),
            "repository.treeSha256".to_owned()
        )]
    );
}

#[test]
fn a_commitment_time_moved_into_the_window_fails_submissions_queue() {
    let (case, [_, unpinned, late]) = three_records();
    // Admitted 1 h after `good` with one slot per 24 h: over the window. And `late`,
    // refused for the window, would then have found it free.
    edit_record(&case, &unpinned, |r| {
        r.repository.as_mut().unwrap().committed_at =
            receipts::model::Timestamp::from_unix_seconds(T0 + 3600).unwrap();
    });
    let mut expected = vec![
        (
            "submissions.queue",
            file(&unpinned),
            "repository.committedAt".to_owned(),
        ),
        ("submissions.queue", file(&late), "events".to_owned()),
    ];
    expected.sort();
    assert_eq!(verify(&case).0, expected);
}
