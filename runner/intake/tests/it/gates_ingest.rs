//! Ingest as a whole (issue 5): the fetched gate's commitment check, an unregistered
//! miner, dedupe by the sha256 of the exact bytes, resuming nothing that is final, the
//! one requeue after `infra_failed`, and `campaign add` / `miner add`.

use crate::support::{MINER, campaign_toml, corpus, corpus_baseline, fixture, ingest_bytes};
use intake::gates::BuiltinBuilder;
use intake::ingest::{
    IngestError, IngestOutcome, IngestRequest, add_campaign, add_miner, build_pending,
    find_submission, ingest, ingest_reader, requeue,
};
use intake::store::CampaignStore;
use receipts::model::{EventKind, Gate, MinerId, PipelineState, Sha256Hex, Timestamp};

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
/// (content/submitting.md: the first *valid* commitment wins).
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
        .sha256;
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
    let commit = crate::support::build_repo(&tmp.path().join("src-repo"), &corpus_baseline());
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
        .sha256;
    let found = find_submission(&fx.campaign_dir, &sha.as_str()[..10]).unwrap();
    assert_eq!(found.sha256, sha);
    assert!(matches!(
        find_submission(&fx.campaign_dir, "ffffffffff"),
        Err(IngestError::NoSubmission { .. })
    ));
}

/// An endless diff-looking stream that counts the bytes taken from it.
struct Endless {
    served: u64,
}

impl std::io::Read for Endless {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        buf.fill(b'+');
        self.served += buf.len() as u64;
        Ok(buf.len())
    }
}

/// The `.diff` files under the campaign's `submissions/`.
fn stored_diffs(fx: &crate::support::Fixture) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(fx.campaign_dir.submissions_dir()) else {
        return Vec::new();
    };
    entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "diff"))
        .collect()
}

/// Regression: a diff over `surface.max_diff_bytes` was read and stored whole before the
/// size check rejected it. Now at most the limit plus one byte is read, nothing of it is
/// stored, and the record (keyed by the commitment) keeps the reason.
#[test]
fn an_oversized_diff_is_refused_unread_and_nothing_is_stored() {
    let fx = fixture(&corpus_baseline());
    let miner: MinerId = MINER.parse().unwrap();
    let commitment = Sha256Hex::digest(b"what the miner says the bytes hash to");
    let mut stream = Endless { served: 0 };
    let outcome = ingest_reader(
        &fx.campaign_dir,
        &mut stream,
        &miner,
        &commitment,
        &BuiltinBuilder,
    )
    .unwrap();
    assert_eq!(stream.served, 16_385, "read past the limit plus one byte");
    let submission = outcome.submission();
    assert_eq!(submission.state, PipelineState::Rejected);
    assert_eq!(submission.sha256, commitment);
    assert_eq!(submission.size_bytes, 16_385);
    let reason = submission.last_reason().unwrap();
    assert!(
        reason.starts_with(
            "fetched: the diff is larger than 16384 bytes (reading stopped after 16385 bytes); the campaign accepts at most 16384 bytes (surface.max_diff_bytes)"
        ),
        "{reason}"
    );
    assert!(reason.contains("nothing was stored"), "{reason}");
    assert!(matches!(
        submission.events.last().unwrap().kind,
        EventKind::Transition {
            to: PipelineState::Rejected,
            gate: Some(Gate::Fetched),
            ..
        }
    ));
    assert!(stored_diffs(&fx).is_empty(), "{:?}", stored_diffs(&fx));
    assert_eq!(
        fx.campaign_dir.load_submission(&commitment).unwrap(),
        *submission
    );

    // Bytes already in memory are taken the same way: nothing stored.
    let big = vec![b'+'; 50_000];
    let outcome = ingest_bytes(&fx, &big, MINER);
    assert_eq!(outcome.submission().state, PipelineState::Rejected);
    assert!(stored_diffs(&fx).is_empty(), "{:?}", stored_diffs(&fx));
}

/// An oversized diff never holds its commitment's slot: the honest bytes of that hash
/// replace its record, keeping its trace.
#[test]
fn the_honest_bytes_replace_an_oversized_commitment() {
    let fx = fixture(&corpus_baseline());
    let bytes = corpus("benign_new_file");
    let commitment = Sha256Hex::digest(&bytes);
    let miner: MinerId = MINER.parse().unwrap();
    let oversized = vec![b'+'; 20_000];
    let first = ingest_reader(
        &fx.campaign_dir,
        &mut oversized.as_slice(),
        &miner,
        &commitment,
        &BuiltinBuilder,
    )
    .unwrap();
    assert_eq!(first.submission().state, PipelineState::Rejected);
    let second = ingest_bytes(&fx, &bytes, MINER);
    assert!(matches!(second, IngestOutcome::New(_)));
    assert_eq!(second.submission().state, PipelineState::BenchQueued);
    assert!(second.submission().events.iter().any(|e| matches!(
        &e.kind,
        EventKind::Superseded { commitment: c, .. } if *c == commitment
    )));
    assert_eq!(stored_diffs(&fx).len(), 1);
}

/// An oversized diff committed to the hash of a recorded submission cannot be those
/// bytes: refused, and the record is left as it is.
#[test]
fn an_oversized_diff_leaves_a_recorded_hash_alone() {
    let fx = fixture(&corpus_baseline());
    let bytes = corpus("benign_new_file");
    let recorded = ingest_bytes(&fx, &bytes, MINER).submission().clone();
    let miner: MinerId = MINER.parse().unwrap();
    let result = ingest_reader(
        &fx.campaign_dir,
        &mut Endless { served: 0 },
        &miner,
        &recorded.sha256,
        &BuiltinBuilder,
    );
    assert!(
        matches!(result, Err(IngestError::TooLargeForRecordedHash { .. })),
        "{result:?}"
    );
    assert_eq!(
        fx.campaign_dir.load_submission(&recorded.sha256).unwrap(),
        recorded
    );
}

/// The builder `referee build` injects, faked: the Docker one lives in the binary over
/// `engines::docker` (intake links no bollard).
struct FakeImageBuilder {
    fail: Option<&'static str>,
}

impl intake::gates::Builder for FakeImageBuilder {
    fn build(
        &self,
        tree: &std::path::Path,
        campaign: &receipts::model::Campaign,
        _submission: &Sha256Hex,
    ) -> Result<intake::gates::BuildOutput, intake::gates::BuildFailure> {
        if let Some(message) = self.fail {
            return Err(intake::gates::BuildFailure::Rejected(
                intake::gates::Violation::ImageBuildFailed {
                    message: message.into(),
                },
            ));
        }
        Ok(intake::gates::BuildOutput {
            engine_config: tree.join(&campaign.baseline.engine_config_path),
            summary: "image built".into(),
            image: Some(receipts::model::SubmissionImage {
                tag: "referee/gates-test:x".into(),
                image_id: format!("sha256:{}", "a".repeat(64)),
                manifest_digest: None,
                build_log_sha256: Sha256Hex::digest(b"Step 1/1 : FROM base\n"),
            }),
        })
    }
}

fn docker_fixture() -> crate::support::Fixture {
    crate::support::fixture_with(
        &corpus_baseline(),
        &format!(
            "{}\n[backend]\nkind = \"docker\"\nimage = \"engine:v1\"\n",
            crate::support::SMALL_LIMITS
        ),
    )
}

/// A Docker campaign's ingest stops in `building` (a build can take hours); `referee
/// build`'s [`build_pending`] builds it and records the image, `built → bench_queued`.
#[test]
fn a_docker_submission_waits_in_building_until_the_build_worker_records_its_image() {
    let fx = docker_fixture();
    let queued = ingest_bytes(&fx, &corpus("benign_config_batched_tokens"), MINER)
        .submission()
        .clone();
    assert_eq!(queued.state, PipelineState::Building);
    assert_eq!(
        queued.last_reason(),
        Some("queued for the image build of the `docker` backend: `referee build` builds it")
    );
    assert_eq!(queued.image, None);
    let moved = build_pending(&fx.campaign_dir, &FakeImageBuilder { fail: None }, None).unwrap();
    assert_eq!(moved.len(), 1);
    let record = fx.campaign_dir.load_submission(&queued.sha256).unwrap();
    assert_eq!(record, moved[0]);
    assert_eq!(record.state, PipelineState::BenchQueued);
    let states: Vec<PipelineState> = record.events[record.events.len() - 2..]
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::Transition { to, .. } => Some(to),
            _ => None,
        })
        .collect();
    assert_eq!(states, [PipelineState::Built, PipelineState::BenchQueued]);
    let image = record.image.unwrap();
    assert_eq!(image.image_id, format!("sha256:{}", "a".repeat(64)));
    assert_eq!(image.manifest_digest, None);
    // Nothing left to build: a second run moves nothing.
    let again = build_pending(&fx.campaign_dir, &FakeImageBuilder { fail: None }, None).unwrap();
    assert_eq!(again, []);
}

/// A failed image build is `rejected` at gate `build` with the daemon's message.
#[test]
fn a_failed_image_build_is_rejected_at_build_with_the_daemons_message() {
    let fx = docker_fixture();
    let sha = ingest_bytes(&fx, &corpus("benign_config_batched_tokens"), MINER)
        .submission()
        .sha256;
    let builder = FakeImageBuilder {
        fail: Some("dockerfile parse error line 1: unknown instruction: FORM"),
    };
    let moved = build_pending(&fx.campaign_dir, &builder, Some(1)).unwrap();
    assert_eq!(moved.len(), 1);
    let record = fx.campaign_dir.load_submission(&sha).unwrap();
    assert_eq!(record.state, PipelineState::Rejected);
    assert_eq!(record.image, None);
    assert_eq!(
        record.last_reason(),
        Some(
            "build: the image build failed: dockerfile parse error line 1: unknown instruction: FORM"
        )
    );
    assert!(matches!(
        record.events.last().unwrap().kind,
        EventKind::Transition {
            to: PipelineState::Rejected,
            gate: Some(Gate::Build),
            ..
        }
    ));
}

/// Regression: a prefix under 4 characters answered "no submission", as if it had been
/// looked up.
#[test]
fn status_says_a_short_prefix_is_too_short() {
    let fx = fixture(&corpus_baseline());
    let sha = ingest_bytes(&fx, &corpus("benign_new_file"), MINER)
        .submission()
        .sha256;
    let err = find_submission(&fx.campaign_dir, &sha.as_str()[..3]).unwrap_err();
    assert!(matches!(err, IngestError::PrefixTooShort { .. }), "{err:?}");
    assert!(
        err.to_string().contains("at least 4 hex characters"),
        "{err}"
    );
    find_submission(&fx.campaign_dir, &sha.as_str()[..4]).unwrap();
}

/// Regression: a record that superseded a chain of invalid commitments copied their
/// traces with their old times after its own `committed` event, so its timestamps went
/// back in time.
#[test]
fn a_superseding_record_keeps_its_events_in_time_order_and_table_order() {
    let fx = fixture(&corpus_baseline());
    let bytes = corpus("benign_config_batched_tokens");
    let miner: MinerId = MINER.parse().unwrap();
    let wrong = Sha256Hex::digest(b"some other diff");
    let right = Sha256Hex::digest(&bytes);
    for commitment in [&wrong, &wrong, &right] {
        let request = IngestRequest {
            diff: &bytes,
            miner: &miner,
            commitment,
        };
        ingest(&fx.campaign_dir, &request, &BuiltinBuilder).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let submission = fx.campaign_dir.load_submission(&right).unwrap();
    assert_eq!(submission.state, PipelineState::BenchQueued);
    let superseded = submission
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Superseded { .. }))
        .count();
    assert_eq!(superseded, 2, "{:#?}", submission.events);
    for pair in submission.events.windows(2) {
        assert!(
            pair[0].at <= pair[1].at,
            "events go back in time: {:#?}",
            submission.events
        );
    }
    let transitions: Vec<PipelineState> = submission
        .events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::Transition { to, .. } => Some(to),
            _ => None,
        })
        .collect();
    let table: Vec<PipelineState> = PipelineState::ALL
        .into_iter()
        .filter(|s| transitions.contains(s))
        .collect();
    assert_eq!(transitions, table);
    assert_eq!(transitions.last(), Some(&PipelineState::BenchQueued));
}

/// Regression: `applied` was recorded before `surface_ok` although the surface checks
/// run first; the log now says what happened in the order it happened, the superseded
/// trace right after the commitment.
#[test]
fn the_events_of_a_superseding_record_are_in_causal_order() {
    let fx = fixture(&corpus_baseline());
    let bytes = corpus("benign_config_batched_tokens");
    let miner: MinerId = MINER.parse().unwrap();
    let wrong = Sha256Hex::digest(b"some other diff");
    let right = Sha256Hex::digest(&bytes);
    for commitment in [&wrong, &right] {
        let request = IngestRequest {
            diff: &bytes,
            miner: &miner,
            commitment,
        };
        ingest(&fx.campaign_dir, &request, &BuiltinBuilder).unwrap();
    }
    let submission = fx.campaign_dir.load_submission(&right).unwrap();
    let log: Vec<String> = submission
        .events
        .iter()
        .map(|e| match &e.kind {
            EventKind::Transition { to, .. } => to.to_string(),
            EventKind::Superseded { .. } => "(superseded)".to_owned(),
            EventKind::Duplicate { .. } => "(duplicate)".to_owned(),
        })
        .collect();
    assert_eq!(
        log,
        [
            "committed",
            "(superseded)",
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
    assert!(
        submission.events.windows(2).all(|p| p[0].at <= p[1].at),
        "{:#?}",
        submission.events
    );
}

/// Regression: `miner add` and `ingest` with a campaign never added created
/// `<data>/<id>/.lock` (and the directory) before saying it does not exist.
#[test]
fn miner_add_and_ingest_create_nothing_for_an_unknown_campaign() {
    let fx = fixture(&corpus_baseline());
    let unknown = fx.data.campaign(&"no-such-campaign".parse().unwrap());
    let err = add_miner(&unknown, &MINER.parse().unwrap()).unwrap_err();
    assert!(
        err.to_string().contains("run `referee campaign add` first"),
        "{err}"
    );
    assert!(
        !unknown.root().exists(),
        "miner add created {:?}",
        unknown.root()
    );
    let bytes = corpus("benign_new_file");
    let miner: MinerId = MINER.parse().unwrap();
    let request = IngestRequest {
        diff: &bytes,
        miner: &miner,
        commitment: &Sha256Hex::digest(&bytes),
    };
    let err = ingest(&unknown, &request, &BuiltinBuilder).unwrap_err();
    assert!(
        err.to_string().contains("run `referee campaign add` first"),
        "{err}"
    );
    assert!(
        !unknown.root().exists(),
        "ingest created {:?}",
        unknown.root()
    );
}

/// How often `needle` occurs in `haystack`.
fn occurrences(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

/// Regression: a broken campaign TOML printed its path twice (`c.toml: c.toml: TOML parse
/// error …`); the error names it once, with the field and the value.
#[test]
fn campaign_add_names_a_broken_toml_once_with_field_and_value() {
    let dir = tempfile::tempdir().unwrap();
    let data = receipts::layout::DataDir::new(dir.path().join("data"));
    let path = dir.path().join("campaign.toml");
    let shown = path.display().to_string();
    for (text, field, value) in [
        (
            "id = \"x\"\nruns = \"three\"\n[model]\nname = \"m\"\n",
            "runs",
            "\"three\"",
        ),
        (
            "id = \"x\"\nruns = 0\n[model]\nname = \"m\"\n[baseline]\nrepo = \"r\"\ncommit = \"0000000000000000000000000000000000000000\"\n",
            "runs",
            "0",
        ),
    ] {
        std::fs::write(&path, text).unwrap();
        let message = add_campaign(&data, &path).unwrap_err().to_string();
        assert_eq!(occurrences(&message, &shown), 1, "{message}");
        assert!(
            message.contains(field) && message.contains(value),
            "{message}"
        );
    }
    assert!(!data.root().exists());
}

/// Regression: a `campaign.json` that does not parse was reported as
/// "parsing `…/campaign.json`: canonical JSON: …/campaign.json: …".
#[test]
fn a_broken_frozen_campaign_names_its_file_once() {
    let fx = fixture(&corpus_baseline());
    let json = fx.campaign_dir.campaign_json();
    std::fs::write(&json, b"{\"schemaVersion\": 2, \"id\": ").unwrap();
    let message = fx.campaign_dir.load_campaign().unwrap_err().to_string();
    assert_eq!(
        occurrences(&message, &json.display().to_string()),
        1,
        "{message}"
    );
    std::fs::write(&json, b"{\"schemaVersion\": 99}").unwrap();
    let message = fx.campaign_dir.load_campaign().unwrap_err().to_string();
    assert_eq!(
        occurrences(&message, &json.display().to_string()),
        1,
        "{message}"
    );
}
