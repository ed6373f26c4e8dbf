//! Ingest as a whole (issue 5): the fetched gate's commitment check, an unregistered
//! miner, dedupe by the sha256 of the exact bytes, resuming nothing that is final, the
//! one requeue after `infra_failed`, and `campaign add` / `miner add`.

#[path = "corpus/support.rs"]
mod support;

use intake::gates::BuiltinBuilder;
use intake::ingest::{
    IngestError, IngestOutcome, IngestRequest, add_campaign, add_miner, find_submission, ingest,
    requeue,
};
use intake::store::CampaignStore;
use receipts::model::{EventKind, Gate, MinerId, PipelineState, Sha256Hex, Timestamp};
use support::{MINER, campaign_toml, corpus, corpus_baseline, fixture, ingest_bytes};

fn duplicates(outcome: &IngestOutcome) -> Vec<(String, String)> {
    outcome
        .submission()
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Duplicate { miner, commitment } => {
                Some((miner.to_string(), commitment.to_string()))
            }
            EventKind::Transition { .. } | EventKind::Superseded { .. } => None,
        })
        .collect()
}

#[test]
fn commitment_mismatch_is_rejected_at_fetched() {
    let fx = fixture(&corpus_baseline());
    let bytes = corpus("benign_config_batched_tokens");
    let miner: MinerId = MINER.parse().unwrap();
    let wrong = Sha256Hex::digest(b"some other diff");
    let outcome = ingest(
        &fx.campaign_dir,
        &IngestRequest {
            diff: &bytes,
            miner: &miner,
            commitment: &wrong,
        },
        &BuiltinBuilder,
    )
    .unwrap();
    let submission = outcome.submission();
    assert_eq!(submission.state, PipelineState::Rejected);
    assert_eq!(
        submission.last_reason(),
        Some(
            format!(
                "fetched: the diff bytes hash to `{}`, not to the commitment `{wrong}`; commit the sha256 of the exact bytes you submit",
                Sha256Hex::digest(&bytes)
            )
            .as_str()
        )
    );
    assert!(matches!(
        submission.events.last().unwrap().kind,
        EventKind::Transition {
            to: PipelineState::Rejected,
            gate: Some(Gate::Fetched),
            ..
        }
    ));
}

/// Regression: a commitment that does not match the bytes must not hold the slot, or
/// anyone could grief a miner by committing their diff first with a wrong commitment
/// (`000_1688748f3ef56e34.txt`: the first *valid* commitment wins).
#[test]
fn a_mismatched_first_commitment_does_not_hold_the_slot() {
    let fx = fixture(&corpus_baseline());
    let bytes = corpus("benign_config_batched_tokens");
    let griefer: MinerId = MINER.parse().unwrap();
    let wrong = Sha256Hex::digest(b"some other diff");
    let request = IngestRequest {
        diff: &bytes,
        miner: &griefer,
        commitment: &wrong,
    };
    ingest(&fx.campaign_dir, &request, &BuiltinBuilder).unwrap();
    let right = Sha256Hex::digest(&bytes);
    let request = IngestRequest {
        diff: &bytes,
        miner: &griefer,
        commitment: &right,
    };
    let outcome = ingest(&fx.campaign_dir, &request, &BuiltinBuilder).unwrap();
    assert!(matches!(outcome, IngestOutcome::New(_)));
    let submission = outcome.submission();
    assert_eq!(submission.state, PipelineState::BenchQueued);
    assert_eq!(submission.commitment, right);
    assert!(submission.events.iter().any(|e| matches!(
        &e.kind,
        EventKind::Superseded { commitment, .. } if *commitment == wrong
    )));
    // Once a valid commitment holds the slot, later ones are duplicates again.
    let again = ingest(&fx.campaign_dir, &request, &BuiltinBuilder).unwrap();
    assert!(matches!(again, IngestOutcome::Duplicate(_)));
}

/// Regression: an unregistered miner's commitment must not hold the slot either, or a
/// miner who forgot `miner add` (or a front-runner) would block the diff for good.
#[test]
fn an_unregistered_first_commitment_does_not_hold_the_slot() {
    let fx = fixture(&corpus_baseline());
    let bytes = corpus("benign_new_file");
    let first = ingest_bytes(&fx, &bytes, "stranger");
    assert_eq!(first.submission().state, PipelineState::Rejected);
    let second = ingest_bytes(&fx, &bytes, MINER);
    assert!(matches!(second, IngestOutcome::New(_)));
    assert_eq!(second.submission().state, PipelineState::BenchQueued);
    assert_eq!(second.submission().miner.as_str(), MINER);
    assert!(second.submission().events.iter().any(|e| matches!(
        &e.kind,
        EventKind::Superseded { miner, .. } if miner.as_str() == "stranger"
    )));
}

#[test]
fn unregistered_miner_is_rejected_at_verified() {
    let fx = fixture(&corpus_baseline());
    let outcome = ingest_bytes(&fx, &corpus("benign_new_file"), "stranger");
    assert_eq!(outcome.submission().state, PipelineState::Rejected);
    assert_eq!(
        outcome.submission().last_reason(),
        Some(
            "verified: miner `stranger` is not registered for this campaign (`referee miner add`)"
        )
    );
}

#[test]
fn same_bytes_twice_make_one_submission_and_one_duplicate_event() {
    let fx = fixture(&corpus_baseline());
    add_miner(&fx.campaign_dir, &"miner-b".parse().unwrap()).unwrap();
    let bytes = corpus("benign_config_batched_tokens");
    let first = ingest_bytes(&fx, &bytes, MINER);
    assert!(matches!(first, IngestOutcome::New(_)));
    assert_eq!(first.submission().state, PipelineState::BenchQueued);
    let second = ingest_bytes(&fx, &bytes, "miner-b");
    assert!(matches!(second, IngestOutcome::Duplicate(_)));
    let sha = Sha256Hex::digest(&bytes).to_string();
    assert_eq!(duplicates(&second), [("miner-b".to_owned(), sha.clone())]);
    assert_eq!(second.submission().miner.as_str(), MINER);
    assert_eq!(second.submission().state, PipelineState::BenchQueued);
    // The same miner again is a duplicate too.
    let third = ingest_bytes(&fx, &bytes, MINER);
    assert_eq!(duplicates(&third).len(), 2);
    let all = fx.campaign_dir.list_submissions().unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(
        std::fs::read(fx.campaign_dir.submission_diff(&Sha256Hex::digest(&bytes))).unwrap(),
        bytes
    );
}

#[test]
fn one_byte_different_makes_two_submissions() {
    let fx = fixture(&corpus_baseline());
    let bytes = corpus("benign_config_batched_tokens");
    let mut other = bytes.clone();
    let last = other.len() - 2;
    other[last] = b'2'; // `threads = 1` → `threads = 2`
    let a = ingest_bytes(&fx, &bytes, MINER);
    let b = ingest_bytes(&fx, &other, MINER);
    assert!(matches!(a, IngestOutcome::New(_)));
    assert!(matches!(b, IngestOutcome::New(_)));
    assert_ne!(a.submission().sha256, b.submission().sha256);
    assert_eq!(fx.campaign_dir.list_submissions().unwrap().len(), 2);
}

#[test]
fn infra_failed_requeues_once() {
    let fx = fixture(&corpus_baseline());
    let sha = ingest_bytes(&fx, &corpus("benign_new_file"), MINER)
        .submission()
        .sha256
        .clone();
    let mut submission = fx.campaign_dir.load_submission(&sha).unwrap();
    let at = Timestamp::now();
    submission
        .round_transition(PipelineState::RoundAssigned, 1, at, "seated in round 1")
        .unwrap();
    submission
        .round_transition(PipelineState::InfraFailed, 1, at, "drift bound exceeded")
        .unwrap();
    fx.campaign_dir.save_submission(&submission).unwrap();
    let requeued = requeue(&fx.campaign_dir, &sha, "round 1 was infra_failed").unwrap();
    assert_eq!(requeued.state, PipelineState::BenchQueued);
    assert_eq!(requeued.requeues, 1);
    let mut again = requeued.clone();
    again
        .round_transition(PipelineState::RoundAssigned, 2, at, "seated in round 2")
        .unwrap();
    again
        .round_transition(PipelineState::InfraFailed, 2, at, "drift bound exceeded")
        .unwrap();
    fx.campaign_dir.save_submission(&again).unwrap();
    let second = requeue(&fx.campaign_dir, &sha, "round 2 was infra_failed");
    assert!(matches!(second, Err(IngestError::Model(_))), "{second:?}");
    assert_eq!(
        fx.campaign_dir.load_submission(&sha).unwrap().state,
        PipelineState::InfraFailed
    );
}

#[test]
fn campaign_add_is_idempotent_and_frozen() {
    let fx = fixture(&corpus_baseline());
    let toml_path = fx.tmp.path().join("campaign.toml");
    let again = add_campaign(&fx.data, &toml_path).unwrap();
    assert!(again.already_frozen);
    assert_eq!(
        again.digest,
        receipts::model::FrozenCampaign::freeze(fx.campaign.clone())
            .unwrap()
            .digest
    );
    // Every default is written out in the frozen file.
    let frozen = std::fs::read_to_string(fx.campaign_dir.campaign_toml()).unwrap();
    assert!(frozen.contains("max_line_bytes = 1024"), "{frozen}");
    assert!(frozen.contains("denied_paths"), "{frozen}");
    // A different campaign under the same id is refused.
    let text = std::fs::read_to_string(&toml_path).unwrap();
    std::fs::write(&toml_path, text.replace("ref-tiny", "ref-other")).unwrap();
    let conflict = add_campaign(&fx.data, &toml_path);
    assert!(
        matches!(conflict, Err(IngestError::CampaignConflict { .. })),
        "{conflict:?}"
    );
}

#[test]
fn campaign_add_refuses_a_missing_commit_or_config() {
    let tmp = tempfile::tempdir().unwrap();
    let commit = support::build_repo(&tmp.path().join("src-repo"), &corpus_baseline());
    let data = receipts::layout::DataDir::new(tmp.path().join("data"));
    let path = tmp.path().join("campaign.toml");
    let missing = "0123456789abcdef0123456789abcdef01234567";
    std::fs::write(
        &path,
        campaign_toml(commit).replace(&commit.to_string(), missing),
    )
    .unwrap();
    let err = add_campaign(&data, &path).unwrap_err().to_string();
    assert!(err.contains("is not a commit of this repository"), "{err}");
    let no_config = campaign_toml(commit).replace(
        "[baseline]\n",
        "[baseline]\nengine_config_path = \"config/engine.toml\"\n",
    );
    std::fs::write(&path, no_config).unwrap();
    let err = add_campaign(&data, &path).unwrap_err().to_string();
    assert!(
        err.contains("baseline.engine_config_path `config/engine.toml` does not exist"),
        "{err}"
    );
    assert!(
        !data
            .root()
            .join("gates-test")
            .join("campaign.toml")
            .exists()
    );
}

#[test]
fn miner_add_refuses_duplicates() {
    let fx = fixture(&corpus_baseline());
    let again = add_miner(&fx.campaign_dir, &MINER.parse().unwrap());
    assert!(matches!(again, Err(IngestError::MinerExists { .. })));
    assert_eq!(fx.campaign_dir.load_miners().unwrap().miners.len(), 1);
}

#[test]
fn status_finds_submissions_by_prefix() {
    let fx = fixture(&corpus_baseline());
    let sha = ingest_bytes(&fx, &corpus("benign_new_file"), MINER)
        .submission()
        .sha256
        .clone();
    let found = find_submission(&fx.campaign_dir, &sha.as_str()[..10]).unwrap();
    assert_eq!(found.sha256, sha);
    assert!(matches!(
        find_submission(&fx.campaign_dir, "ffffffffff"),
        Err(IngestError::NoSubmission { .. })
    ));
}
