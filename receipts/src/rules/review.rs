//! The review of a repository submission as a round carries it (content/review.md, In the
//! round): the rules files this build knows by version and digest, and an entry's review
//! taken from the submission's review record. The runner writes [`entry_review`] into
//! each seated repository entry; the verifier derives it again from the bundle's copy of
//! the record. A challenger derived from the incumbent is held to the campaign's
//! derived-work margin ([`derived_margin_bp`], [`challenger_margin_bp`]).

use crate::layout::{resolution_input, review_input};
use crate::model::{Campaign, EntryResolution, EntryReview, ReviewRecord, Role, Sha256Hex};

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
        derived_margin_bp: None,
    }
}

/// The derived-work margin an entry of role `role` is held to (content/review.md, The
/// derived-work margin), basis points: `campaign`'s `derived_margin_bp` for a challenger
/// whose review's `derivedFrom` (a submission id) names `incumbent`, the submission
/// holding the seat before the round, when that margin is larger than the overtake
/// margin; `None` otherwise (the baseline holds the seat, the work is derived from
/// another submission or from none, or the campaign sets no larger margin).
pub fn derived_margin_bp(
    campaign: &Campaign,
    role: Role,
    incumbent: Option<&Sha256Hex>,
    derived_from: Option<&str>,
) -> Option<u32> {
    let margin = campaign
        .derived_margin_bp
        .filter(|bp| *bp > campaign.overtake_margin_bp)?;
    let names_incumbent = incumbent.is_some_and(|i| derived_from == Some(i.as_str()));
    (role == Role::Challenger && names_incumbent).then_some(margin)
}

/// The margin, basis points, a challenger must clear against the incumbent `incumbent`
/// (content/noise.md, The decision rule) when its review says `derivedFrom`
/// `derived_from` (none for a diff): [`derived_margin_bp`], else the campaign's
/// `overtake_margin_bp`. The runner decides with it and the verifier decides again.
pub fn challenger_margin_bp(
    campaign: &Campaign,
    incumbent: Option<&Sha256Hex>,
    derived_from: Option<&str>,
) -> u32 {
    derived_margin_bp(campaign, Role::Challenger, incumbent, derived_from)
        .unwrap_or(campaign.overtake_margin_bp)
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

    fn parse(derived_margin: &str) -> Result<Campaign, crate::model::ModelError> {
        let text = format!(
            r#"id = "c"
title = "c"
overtake_margin_bp = 500
{derived_margin}
[model]
name = "m"
[baseline]
repo = "b"
commit = "0123456789abcdef0123456789abcdef01234567"
[rate_search]
min_rate_milli_rps = 1000
max_rate_milli_rps = 2000
min_probe_duration_ms = 1
min_probe_requests = 3
warmup_requests = 1
[correctness]
items = 3
"#
        );
        Campaign::from_toml("c.toml", &text)
    }

    fn campaign(derived_margin: &str) -> Campaign {
        parse(derived_margin).expect("campaign")
    }

    #[test]
    fn only_a_challenger_derived_from_the_incumbent_is_held_to_the_larger_margin() {
        let larger = campaign("derived_margin_bp = 2000");
        let incumbent = Sha256Hex::digest(b"incumbent");
        let other = Sha256Hex::digest(b"other");
        let derived = Some(incumbent.as_str());
        let margin = |c: &Campaign, role, incumbent, derived_from| {
            derived_margin_bp(c, role, incumbent, derived_from)
        };
        assert_eq!(
            margin(&larger, Role::Challenger, Some(&incumbent), derived),
            Some(2000)
        );
        assert_eq!(
            challenger_margin_bp(&larger, Some(&incumbent), derived),
            2000
        );
        // Derived from another submission, from none, or the baseline holds the seat.
        assert_eq!(
            margin(
                &larger,
                Role::Challenger,
                Some(&incumbent),
                Some(other.as_str())
            ),
            None
        );
        assert_eq!(
            margin(&larger, Role::Challenger, Some(&incumbent), None),
            None
        );
        assert_eq!(margin(&larger, Role::Challenger, None, derived), None);
        assert_eq!(challenger_margin_bp(&larger, None, derived), 500);
        // Only a challenger is tested against the margin.
        assert_eq!(
            margin(&larger, Role::Incumbent, Some(&incumbent), derived),
            None
        );
        // A derived margin no larger than the overtake margin, or none, changes nothing.
        let smaller = campaign("derived_margin_bp = 300");
        assert_eq!(
            margin(&smaller, Role::Challenger, Some(&incumbent), derived),
            None
        );
        assert_eq!(
            challenger_margin_bp(&smaller, Some(&incumbent), derived),
            500
        );
        let unset = campaign("");
        assert_eq!(challenger_margin_bp(&unset, Some(&incumbent), derived), 500);
    }

    #[test]
    fn a_derived_margin_over_1000_percent_is_refused() {
        let error = parse("derived_margin_bp = 100001").expect_err("refused");
        assert!(error.to_string().contains("derived_margin_bp"), "{error}");
        assert_eq!(
            campaign("derived_margin_bp = 100000").derived_margin_bp,
            Some(100_000)
        );
    }

    #[test]
    fn only_the_listed_digest_of_its_version_is_known() {
        let digest: Sha256Hex = KNOWN_RULES[0].1.parse().expect("hex");
        assert!(is_known_rules(1, &digest));
        assert!(!is_known_rules(2, &digest));
        assert!(!is_known_rules(1, &Sha256Hex::digest(b"other rules")));
    }
}
