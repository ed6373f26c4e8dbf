//! The capability probe (content/engines.md, The capability probe) in tiny rounds of the
//! `process` backend running the built-in engine: under the default profile every
//! finding is ok (teacher forcing from text `not_needed`) and the round completes; under
//! a profile that says the server takes no token-id prompts and names no detokenizer, the
//! probe finds teacher forcing from text impossible (`textRoundTrip`; `tokenIdPrompts` is
//! then `not_needed`), the round is sealed `infra_failed` naming the feature and the
//! profile field, no entry runs and no challenger is disqualified; both receipts verify,
//! and one whose findings were edited (and re-signed by the evaluator) fails
//! `capability.probe` or `paired.decision`.

mod support;

use std::path::PathBuf;

use receipts::keys::{Keyring, PrivateKey};
use receipts::layout::read_round_record;
use receipts::model::{
    CapabilityFeature, CapabilityFinding, EntryInfraFailure, EntryStatus, FindingStatus,
    RoundFailure, RoundRecord, RoundStatus, TypedOrText,
};
use verifier::verify_bundle;
use verifier::{CheckName, VerifyOptions};

use support::{FIXED_RATE, Fixture, SERIAL, Tiny, ok};

/// The tiny campaign with the built-in engine run as a `process` command, `api` its
/// `[backend.api]` inline table (empty: none), one challenger.
fn fixture(api: &str) -> Fixture {
    let api = if api.is_empty() {
        String::new()
    } else {
        format!(", api = {api}")
    };
    let backend = format!(
        "backend = {{ kind = \"process\", command = [\"{}\", \"engine\", \"serve\", \"--config\", \"{{config}}\", \"--listen-fd\", \"{{listen_fd}}\", \"--threads\", \"1\"]{api} }}\n",
        env!("CARGO_BIN_EXE_referee")
    );
    let tiny = Tiny {
        rates: FIXED_RATE,
        backend: &backend,
        ..Tiny::default()
    };
    Fixture::new(&tiny, &[("fast", "max_num_seqs", "8")])
}

/// Round 1's bundle and record; asserts `referee verify` passes on it.
fn sealed(fixture: &Fixture) -> (PathBuf, RoundRecord) {
    ok(&fixture.round_command().output().unwrap());
    let bundle = fixture.data.join("tiny/rounds/1");
    let keyring = Keyring::load(&fixture.data.join("keyring.json")).unwrap();
    let report = verify_bundle(&bundle, &keyring, &VerifyOptions::default());
    assert!(
        report.passed(),
        "{:?}",
        report.failures().collect::<Vec<_>>()
    );
    assert!(
        report
            .checks
            .iter()
            .any(|c| c.name == CheckName::CapabilityProbe && c.passed),
        "capability.probe did not run"
    );
    let verify = support::referee(
        fixture.dir.path(),
        &[
            "verify",
            "--data",
            fixture.data.to_str().unwrap(),
            bundle.to_str().unwrap(),
        ],
    );
    assert!(verify.status.success(), "{}", support::text(&verify));
    let record = read_round_record(&bundle).unwrap().0;
    (bundle, record)
}

fn found(feature: CapabilityFeature, status: FindingStatus, detail: &str) -> CapabilityFinding {
    CapabilityFinding {
        feature,
        status,
        detail: detail.into(),
        field: None,
    }
}

/// The findings of the built-in engine under the default profile before `echoedPrompt`
/// (whose detail holds the seeded prompt's length).
fn default_findings(max_tokens: u64) -> Vec<CapabilityFinding> {
    vec![
        found(
            CapabilityFeature::Readiness,
            FindingStatus::Ok,
            "ready on one of [\"/health\", \"/v1/models\"]",
        ),
        found(
            CapabilityFeature::StreamedLength,
            FindingStatus::Ok,
            &format!("{max_tokens} tokens counted by ids, asked {max_tokens}"),
        ),
        found(
            CapabilityFeature::UsageAgreement,
            FindingStatus::Ok,
            &format!("usage.completion_tokens {max_tokens}"),
        ),
        found(
            CapabilityFeature::TopKLogprobs,
            FindingStatus::Ok,
            "4 generated tokens, each position with at least 5 distinct token ids",
        ),
    ]
}

/// The findings without their seed-dependent parts (the streamed item's length, the
/// echoed prompt's length).
fn shape(
    findings: &[CapabilityFinding],
) -> Vec<(CapabilityFeature, FindingStatus, Option<String>)> {
    findings
        .iter()
        .map(|f| (f.feature, f.status, f.field.clone()))
        .collect()
}

#[test]
fn a_baseline_with_everything_the_round_needs_is_probed_ok_and_the_round_completes() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let fixture = fixture("");
    let (_, record) = sealed(&fixture);
    assert_eq!(
        record.outcome.status,
        RoundStatus::Complete,
        "{:?}",
        record.outcome
    );
    let probe = record
        .capability_probe
        .expect("the process backend is probed");
    let streamed = &probe.findings[1].detail;
    let asked: u64 = streamed.split(' ').next().unwrap().parse().unwrap();
    assert!((24..=32).contains(&asked), "{streamed}");
    let expected = default_findings(asked);
    assert_eq!(probe.findings[..4], expected[..]);
    let echo = &probe.findings[4];
    assert_eq!(echo.status, FindingStatus::Ok);
    assert!(
        echo.detail
            .ends_with("prompt tokens echoed (the profile names no bos_token_id: BOS not checked)"),
        "{}",
        echo.detail
    );
    let forced = &probe.findings[5];
    assert_eq!(forced.feature, CapabilityFeature::TokenIdPrompts);
    assert_eq!(forced.status, FindingStatus::Ok);
    assert!(
        forced.detail.starts_with("a token-id prompt of ")
            && forced.detail.ends_with(" ids echoed back unchanged"),
        "{}",
        forced.detail
    );
    assert_eq!(
        probe.findings[6],
        found(
            CapabilityFeature::TextRoundTrip,
            FindingStatus::NotNeeded,
            "prompts may be token ids (token_id_prompts = true): teacher forcing sends ids",
        )
    );
    assert!(probe.duration_ms > 0);
    // Both entries ran and were judged.
    assert_eq!(record.entries[0].status, EntryStatus::Scored);
    assert_ne!(record.entries[1].status, EntryStatus::InfraFailed);
    // The probe is a setup step of its own, before every entry's.
    let step = record
        .steps
        .iter()
        .find(|s| s.name == "Probing the baseline engine's API")
        .expect("the probe's step");
    assert!(
        record
            .steps
            .iter()
            .all(|s| s.group == "Setup" || s.index > step.index)
    );
}

#[test]
fn a_baseline_lacking_a_feature_fails_the_round_naming_it_and_disqualifies_no_one() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let fixture = fixture("{ token_id_prompts = false }");
    let (bundle, record) = sealed(&fixture);
    let probe = record.capability_probe.clone().expect("probed");
    assert_eq!(
        shape(&probe.findings),
        vec![
            (CapabilityFeature::Readiness, FindingStatus::Ok, None),
            (CapabilityFeature::StreamedLength, FindingStatus::Ok, None),
            (CapabilityFeature::UsageAgreement, FindingStatus::Ok, None),
            (CapabilityFeature::TopKLogprobs, FindingStatus::Ok, None),
            (CapabilityFeature::EchoedPrompt, FindingStatus::Ok, None),
            (
                CapabilityFeature::TokenIdPrompts,
                FindingStatus::NotNeeded,
                None
            ),
            (
                CapabilityFeature::TextRoundTrip,
                FindingStatus::Missing,
                Some("backend.api.tokenizer".to_owned())
            ),
        ]
    );
    assert_eq!(
        probe.findings[5].detail,
        "the profile sends no token-id prompts (token_id_prompts = false): teacher forcing \
         goes through text (textRoundTrip)"
    );
    assert_eq!(
        probe.findings[6].detail,
        "the engine's API profile lacks a tokenizer endpoint (without token-id prompts, the \
         text teacher forcing sends is checked to tokenize back to the ids): set \
         `backend.api.tokenizer` in `[backend.api]`"
    );
    let failure = RoundFailure::CapabilityMissing {
        feature: CapabilityFeature::TextRoundTrip,
        field: "backend.api.tokenizer".into(),
    };
    assert_eq!(record.outcome.status, RoundStatus::InfraFailed);
    assert_eq!(
        record.outcome.reason,
        Some(TypedOrText::Typed(failure.clone()))
    );
    assert_eq!(
        failure.to_string(),
        "the baseline engine lacks what the round needs under the campaign's API profile \
         (feature `textRoundTrip`, capability probe): set `backend.api.tokenizer` to what \
         its server supports"
    );
    // No entry ran; the challenger is infra_failed by the round, never disqualified.
    assert!(record.entries.iter().all(|e| e.runs.is_empty()));
    let challenger = &record.entries[1];
    assert_eq!(challenger.status, EntryStatus::InfraFailed);
    assert_eq!(challenger.disqualification, None);
    assert_eq!(
        challenger.infra_failure,
        Some(TypedOrText::Typed(EntryInfraFailure::RoundInfraFailed {
            failure: failure.clone()
        }))
    );
    let submission = std::fs::read_dir(fixture.data.join("tiny/submissions"))
        .unwrap()
        .filter_map(Result::ok)
        .find(|e| e.path().extension().is_some_and(|x| x == "json"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .unwrap();
    assert!(!submission.contains("disqualified"), "{submission}");

    // The round page lists the findings, verified.
    let out = fixture.dir.path().join("site");
    let build = support::referee(
        fixture.dir.path(),
        &[
            "site",
            "build",
            "--data",
            fixture.data.to_str().unwrap(),
            "--keyring",
            fixture.data.join("keyring.json").to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(build.status.success(), "{}", support::text(&build));
    let page = std::fs::read_to_string(out.join("c/tiny/r/1/index.html")).unwrap();
    // The probe's duration is the runner's word: marked attested (issue 41).
    let listed = format!(
        "<p>Capability probe of the baseline engine ({} ms{}):</p>\n<ul><li>readiness: ok — \
         ready on one of [&quot;/health&quot;, &quot;/v1/models&quot;]</li>",
        probe.duration_ms,
        include_str!("../templates/_attested.html").trim_end()
    );
    assert!(page.contains(&listed), "{page}");
    assert!(
        page.contains(
            "<li>textRoundTrip: missing — the engine&#39;s API profile lacks a tokenizer \
             endpoint (without token-id prompts, the text teacher forcing sends is checked to \
             tokenize back to the ids): set `backend.api.tokenizer` in `[backend.api]` (set \
             `backend.api.tokenizer`)</li></ul>"
        ),
        "{page}"
    );

    // Findings edited and re-signed by the evaluator's own key fail by name.
    let evaluator = PrivateKey::load(&fixture.key).unwrap();
    let keyring = Keyring::load(&fixture.data.join("keyring.json")).unwrap();
    let reseal_and_fail = |forged: &RoundRecord, check: CheckName, needle: &str| {
        receipts::bundle::seal_bundle(
            &bundle,
            receipts::model::ROUND_PREDICATE_TYPE,
            &serde_json::to_value(forged).unwrap(),
            &[&evaluator],
        )
        .unwrap();
        let report = verify_bundle(&bundle, &keyring, &VerifyOptions::default());
        let failures: Vec<String> = report
            .failures()
            .filter(|c| c.name == check)
            .map(|c| format!("{c:?}"))
            .collect();
        assert!(
            failures.iter().any(|f| f.contains(needle)),
            "expected {check:?} to fail naming {needle}: {:?}",
            report.failures().collect::<Vec<_>>()
        );
    };
    // The missing finding turned ok: the outcome no longer follows from the findings.
    let mut forged = record.clone();
    let findings = &mut forged.capability_probe.as_mut().unwrap().findings;
    findings[6].status = FindingStatus::Ok;
    findings[6].field = None;
    reseal_and_fail(&forged, CheckName::PairedDecision, "outcome.reason");
    // A field that does not fix the feature.
    let mut forged = record.clone();
    forged.capability_probe.as_mut().unwrap().findings[6].field = Some("backend.api.bos".into());
    reseal_and_fail(
        &forged,
        CheckName::CapabilityProbe,
        "capabilityProbe.findings[6].field",
    );
    // Token-id prompts claimed asked although the profile sends none.
    let mut forged = record.clone();
    forged.capability_probe.as_mut().unwrap().findings[5].status = FindingStatus::Ok;
    reseal_and_fail(
        &forged,
        CheckName::CapabilityProbe,
        "capabilityProbe.findings[5].status",
    );
    // A probe longer than the timeline step it ran in.
    let mut forged = record.clone();
    forged.capability_probe.as_mut().unwrap().duration_ms = 3_600_000;
    reseal_and_fail(
        &forged,
        CheckName::CapabilityProbe,
        "capabilityProbe.durationMs",
    );
    // The probe dropped from a v4 receipt (a v3 one says `not applicable (v3)`).
    let mut forged = record.clone();
    forged.capability_probe = None;
    reseal_and_fail(&forged, CheckName::CapabilityProbe, "absent");
}
