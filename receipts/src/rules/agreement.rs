//! Agreement with s1-pro, the second gate of the s1-fast-speed track
//! (content/s1-fast-speed.md, Agreement with s1-pro): on fresh items from the round's
//! seeds, the share of items whose decision matches the s1-pro reference runtime's, in
//! integer parts per million.

use crate::model::AgreementItem;
use crate::rules::decide::Answer;

/// Parts per million in one.
const PPM_ONE: u64 = 1_000_000;

/// An entry's agreement with the reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Agreement {
    /// Items whose decision matched the reference's.
    pub matched: u32,
    /// Items compared.
    pub items: u32,
    /// `⌊matched × 10⁶ / items⌋`; 0 when there are no items.
    pub ppm: u32,
}

/// Why two decision lists cannot be compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AgreementError {
    /// The entry answered another number of items than the reference.
    #[error("{entry} decisions against the reference's {reference}")]
    LengthMismatch {
        /// The entry's count.
        entry: usize,
        /// The reference's count.
        reference: usize,
    },
    /// More than `u32::MAX` items.
    #[error("too many items")]
    TooMany,
}

/// The agreement of `entry`'s decisions with `reference`'s, item by item (indices into the
/// declared decision set, in item order). An item the entry answered with no valid
/// decision (`None`: a failed request, a decision outside the set) does not match.
///
/// Errors: [`AgreementError::LengthMismatch`] when the lists differ in length,
/// [`AgreementError::TooMany`] past `u32::MAX` items.
pub fn agreement(
    entry: &[Option<usize>],
    reference: &[usize],
) -> Result<Agreement, AgreementError> {
    if entry.len() != reference.len() {
        return Err(AgreementError::LengthMismatch {
            entry: entry.len(),
            reference: reference.len(),
        });
    }
    let items = u32::try_from(reference.len()).map_err(|_| AgreementError::TooMany)?;
    let matched = entry
        .iter()
        .zip(reference)
        .filter(|(e, r)| **e == Some(**r))
        .count();
    let matched = u32::try_from(matched).map_err(|_| AgreementError::TooMany)?;
    Ok(Agreement {
        matched,
        items,
        ppm: agreement_ppm(matched, items),
    })
}

/// `⌊matched × 10⁶ / items⌋`, capped at 10⁶; 0 when `items` is 0.
pub fn agreement_ppm(matched: u32, items: u32) -> u32 {
    if items == 0 {
        return 0;
    }
    let ppm = (u64::from(matched) * PPM_ONE / u64::from(items)).min(PPM_ONE);
    u32::try_from(ppm).unwrap_or(u32::MAX)
}

/// The gate: a challenger passes when its agreement is not lower than the incumbent's on
/// the same items in the same round.
pub fn agreement_passes(challenger_ppm: u32, incumbent_ppm: u32) -> bool {
    challenger_ppm >= incumbent_ppm
}

/// An entry's agreement items: the reference's answers to the first `count` gate items,
/// in item order, each with the entry's decision on the same item (`None` where the
/// entry gave none).
pub fn agreement_items(entry: &[Answer], reference: &[Answer], count: u32) -> Vec<AgreementItem> {
    let mut reference: Vec<&Answer> = reference.iter().filter(|r| r.index < count).collect();
    reference.sort_by_key(|r| r.index);
    reference
        .into_iter()
        .map(|r| AgreementItem {
            index: r.index,
            prompt_sha256: r.prompt_sha256,
            decision: entry
                .iter()
                .find(|e| e.index == r.index)
                .map(|e| e.decision.clone()),
            reference_decision: r.decision.clone(),
        })
        .collect()
}

/// The agreement an entry's agreement file records, counted from its items: an item
/// matches when the entry's decision is the reference's. The runner and the verifier
/// both count with it.
///
/// Errors: [`AgreementError::TooMany`] past `u32::MAX` items.
pub fn recount(items: &[AgreementItem]) -> Result<Agreement, AgreementError> {
    let total = u32::try_from(items.len()).map_err(|_| AgreementError::TooMany)?;
    let matched = items
        .iter()
        .filter(|i| i.decision.as_deref() == Some(i.reference_decision.as_str()))
        .count();
    let matched = u32::try_from(matched).map_err(|_| AgreementError::TooMany)?;
    Ok(Agreement {
        matched,
        items: total,
        ppm: agreement_ppm(matched, total),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agreement_on_a_fixed_set_is_exact_ppm() {
        // Seven items over decisions {0: a, 1: b, 2: c}: the entry matches items 0, 1, 3,
        // 5 and 6; item 2 differs, item 4 had no valid decision. 5 / 7 = 714 285.7… ppm.
        let reference = [0, 1, 2, 0, 1, 2, 0];
        let entry = [Some(0), Some(1), Some(1), Some(0), None, Some(2), Some(0)];
        assert_eq!(
            agreement(&entry, &reference),
            Ok(Agreement {
                matched: 5,
                items: 7,
                ppm: 714_285,
            })
        );
        let all = reference.map(Some);
        assert_eq!(agreement(&all, &reference).map(|a| a.ppm), Ok(1_000_000));
        assert_eq!(
            agreement(&entry[..6], &reference),
            Err(AgreementError::LengthMismatch {
                entry: 6,
                reference: 7
            })
        );
        assert_eq!(agreement(&[], &[]).map(|a| a.ppm), Ok(0));
    }

    /// The same seven items as answers: the agreement file's items are the reference's
    /// first `count`, the entry's decision beside each, and the recount is 5 of 7.
    #[test]
    fn an_agreement_file_recounts_the_fixed_set_exactly() {
        use crate::model::Sha256Hex;
        let answer = |index: u32, decision: &str| Answer {
            index,
            prompt_sha256: Sha256Hex::digest(&index.to_be_bytes()),
            decision: decision.to_owned(),
            vector: Vec::new(),
        };
        let reference: Vec<Answer> = ["a", "b", "c", "a", "b", "c", "a", "b"]
            .iter()
            .zip(0..)
            .map(|(d, i)| answer(i, d))
            .collect();
        // Item 4 unanswered, item 2 answered otherwise; the order of the entry's answers
        // does not matter.
        let entry: Vec<Answer> = [(6, "a"), (0, "a"), (1, "b"), (2, "b"), (3, "a"), (5, "c")]
            .iter()
            .map(|(i, d)| answer(*i, d))
            .collect();
        let items = agreement_items(&entry, &reference, 7);
        assert_eq!(items.len(), 7);
        assert_eq!(items[4].decision, None);
        assert_eq!(items[2].decision.as_deref(), Some("b"));
        assert_eq!(items[2].reference_decision, "c");
        assert_eq!(
            recount(&items),
            Ok(Agreement {
                matched: 5,
                items: 7,
                ppm: 714_285,
            })
        );
    }

    #[test]
    fn a_challenger_below_the_incumbents_agreement_fails() {
        assert!(!agreement_passes(714_285, 714_286));
        assert!(agreement_passes(714_286, 714_286));
    }
}
