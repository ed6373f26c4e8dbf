//! The review of a repository submission as a round carries it (content/review.md, In the
//! round): the rules files this build knows by version and digest, and an entry's review
//! taken from the submission's review record. The runner writes [`entry_review`] into
//! each seated repository entry; the verifier derives it again from the bundle's copy of
//! the record.

use crate::layout::{resolution_input, review_input};
use crate::model::{EntryResolution, EntryReview, ReviewRecord, Sha256Hex};

/// The static rules files a review can be made under: (`version`, SHA-256 of the file's
/// bytes). The `review` crate embeds each one and tests that its digest is listed here,
/// so a record naming any other digest was not made by a known rules file.
pub const KNOWN_RULES: &[(u32, &str)] = &[(
    1,
    "bbf0b3acdd0a56222a88a4c87195a63b9d2a8dfdb4e84e8ff9266f6ac6f0ad6d",
)];

/// Whether `digest` is the digest of the known rules file of `version`.
pub fn is_known_rules(version: u32, digest: &Sha256Hex) -> bool {
    let digest = digest.to_string();
    KNOWN_RULES
        .iter()
        .any(|(v, known)| *v == version && *known == digest)
}

/// The review of the entry of repository submission `submission` whose review record is
/// `review`: the record's copy path, its rules, verdicts and `derivedFrom`, and its
/// resolution, if any, with the keyid `resolution_keyid` of the key that signed the
/// resolution's statement (empty when unknown: a resolution always has a signer).
pub fn entry_review(
    submission: &Sha256Hex,
    review: &ReviewRecord,
    resolution_keyid: &str,
) -> EntryReview {
    EntryReview {
        record: review_input(submission),
        rules_version: review.rules_version,
        rules_digest: review.rules_digest,
        verdict: review.verdict,
        decision: review.decision(),
        derived_from: review.derived_from.clone(),
        resolution: review.resolution.as_ref().map(|r| EntryResolution {
            verdict: r.verdict,
            statement: resolution_input(&r.envelope_sha256),
            keyid: resolution_keyid.to_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::model::{CopyOutcome, Fingerprint, ReviewResolution, Timestamp, Verdict};

    fn review(verdict: Verdict, resolution: Option<Verdict>) -> ReviewRecord {
        let at = Timestamp::from_unix_seconds(1_800_000_000).expect("time");
        ReviewRecord {
            rules_version: 1,
            rules_digest: KNOWN_RULES[0].1.parse().expect("hex"),
            findings: Vec::new(),
            static_verdict: verdict,
            llm: None,
            verdict,
            reviewed_at: at,
            derived_from: Some("ab".repeat(32)),
            fingerprint: Fingerprint {
                weights: BTreeSet::new(),
                code: Sha256Hex::digest(b"code"),
                code_files: 1,
            },
            copy: CopyOutcome::Original,
            resolution: resolution.map(|verdict| ReviewResolution {
                verdict,
                reason: "read it".into(),
                resolved_at: at,
                envelope_sha256: Sha256Hex::digest(b"envelope"),
                log_index: 3,
            }),
        }
    }

    #[test]
    fn an_entry_review_carries_the_records_facts_and_its_decision() {
        let submission = Sha256Hex::digest(b"commitment");
        let entry = entry_review(
            &submission,
            &review(Verdict::NeedsHuman, Some(Verdict::Pass)),
            "k1",
        );
        assert_eq!(entry.record, format!("inputs/reviews/{submission}.json"));
        assert_eq!(entry.rules_version, 1);
        assert_eq!(entry.verdict, Verdict::NeedsHuman);
        assert_eq!(entry.decision, Verdict::Pass);
        assert_eq!(entry.derived_from, Some("ab".repeat(32)));
        let resolution = entry.resolution.expect("resolution");
        assert_eq!(
            resolution.statement,
            format!(
                "inputs/review-resolutions/{}.dsse.json",
                Sha256Hex::digest(b"envelope")
            )
        );
        assert_eq!(resolution.keyid, "k1");
        let plain = entry_review(&submission, &review(Verdict::Pass, None), "");
        assert_eq!((plain.decision, plain.resolution), (Verdict::Pass, None));
    }

    #[test]
    fn only_the_listed_digest_of_its_version_is_known() {
        let digest: Sha256Hex = KNOWN_RULES[0].1.parse().expect("hex");
        assert!(is_known_rules(1, &digest));
        assert!(!is_known_rules(2, &digest));
        assert!(!is_known_rules(1, &Sha256Hex::digest(b"other rules")));
    }
}
