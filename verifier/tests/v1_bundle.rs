//! A round sealed by referee before predicate v2 (`fixtures/v1-round/`, made with the
//! commit before the layout change, `ec7952f`: a tiny campaign of the end-to-end tests at
//! a fixed rate of 10 req/s, one challenger raising `max_num_seqs` 1 → 8, sealed by
//! `referee round`) still verifies: every check it can support passes, including the
//! checks v2 added (its `inputs/campaign.toml` has the schema-1 digest it recorded, the
//! request sequence regenerates from its seeds).
//!
//! The fixture was made with: `referee keygen`, `keyring add --valid-from
//! 2026-01-01T00:00:00Z`, `campaign add`, `miner add fast`, `ingest` (commitment
//! `f98bb888…18dfc`), `round`, then `cp -a data/tiny/rounds/1 fixtures/v1-round`.

use std::path::Path;

use receipts::keys::Keyring;
use receipts::model::ROUND_PREDICATE_TYPE_V1;
use receipts::verify::{CheckName, VerifyOptions};

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

#[test]
fn a_v1_round_still_verifies() {
    let keyring = Keyring::load(&fixture("v1-keyring.json")).expect("keyring loads");
    let report = verifier::verify_bundle(&fixture("v1-round"), &keyring, &VerifyOptions::default());
    assert!(
        report.passed(),
        "{:#?}",
        report.failures().collect::<Vec<_>>()
    );
    assert_eq!(
        report.predicate_type.as_deref(),
        Some(ROUND_PREDICATE_TYPE_V1)
    );
    let passed = |name| report.checks.iter().any(|c| c.name == name && c.passed);
    for name in [
        CheckName::RoundOpenedSignature,
        CheckName::SeedCommitments,
        CheckName::InputsCampaign,
        CheckName::InputsMiners,
        CheckName::InputsPatches,
        CheckName::RequestSequence,
        CheckName::RoundThroughput,
        CheckName::RoundScores,
    ] {
        assert!(passed(name), "{} did not pass", name.as_str());
    }
    // Nothing of this bundle was beyond v1: no check is marked not applicable.
    assert!(report.checks.iter().all(|c| c.not_applicable.is_none()));
}
