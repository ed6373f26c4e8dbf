//! The correctness gate, exactly as content/correctness.md §Correctness defines it: the logit
//! distance between an entry's greedy top-k logprobs and the reference runtime's
//! teacher-forced top-k logprobs on the same tokens, in integer micro-nats, judged in
//! groups of `group_size` items taken in order.
//!
//! Logprobs are quantized to integer micro-nats the moment a response is read
//! ([`quantize_logprob`], round half away from zero), and every step after that is
//! integer arithmetic on the stored values, so the verifier, working from the integers a
//! bundle stores, gets bit-identical distances and verdicts.
//!
//! Per position: over the union of both top-k token sets, the largest
//! |lp_entry(t) − lp_ref(t)|, where a token missing from one side's top-k takes that
//! side's k-th (smallest listed) logprob ([`position_distance_micro_nats`]); per item, the
//! rounded mean of its positions ([`item_distance_micro_nats`]); then the [`verdict`].

use crate::model::{CorrectnessItems, CorrectnessSpec};

/// One position's top-k: `(token id, logprob in micro-nats)` pairs as an engine returned
/// them, quantized with [`quantize_logprob`].
pub type TopK = [(u32, i64)];

/// Errors of the distance computation.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CorrectnessError {
    /// A side returned no logprobs at a position.
    #[error("item {item}, position {position}: the {side} returned an empty top-k")]
    EmptyTopK {
        /// Item index.
        item: u32,
        /// Generated position, from 0.
        position: usize,
        /// `entry` or `reference`.
        side: &'static str,
    },
    /// The two sides cover a different number of positions.
    #[error("item {item}: the entry has {entry} positions, the reference {reference}")]
    PositionCount {
        /// Item index.
        item: u32,
        /// Positions from the entry.
        entry: usize,
        /// Positions from the reference.
        reference: usize,
    },
}

/// The largest logprob magnitude accepted, in nats: a logprob below −10⁹ nats is not a
/// probability any engine computes, and keeping values far inside `i64` micro-nats means
/// no difference of two of them overflows.
const MAX_LOGPROB_NATS: f64 = 1e9;

/// A logprob in nats as integer micro-nats, rounded half away from zero (`f64::round`).
/// `None` for a value that is not finite or whose magnitude exceeds 10⁹ nats; callers
/// report that as a malformed response.
pub fn quantize_logprob(logprob_nats: f64) -> Option<i64> {
    if !logprob_nats.is_finite() || logprob_nats.abs() > MAX_LOGPROB_NATS {
        return None;
    }
    // |value| ≤ 10¹⁵ micro-nats: exact in f64 and far inside i64.
    Some((logprob_nats * 1e6).round() as i64)
}

/// One side's `k` largest logprobs, largest first (ties: lower token id first): the first
/// step of [`position_distance_micro_nats`], which vLLM-style servers need because they
/// add the chosen token to the list when it is not among the top k. What the runner
/// stores as a side's raw top-k (`entryTopK`, `referenceTopK` of the per-item file), so
/// the stored lists are exactly what the distance is computed from, and no engine can
/// grow the file by listing more than `k` tokens. `k` 0 counts as 1. Cutting twice cuts
/// nothing more.
pub fn top_k(side: &TopK, k: u32) -> Vec<(u32, i64)> {
    let k = usize::try_from(k.max(1)).unwrap_or(usize::MAX);
    let mut sorted = side.to_vec();
    sorted.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    sorted.truncate(k);
    sorted
}

/// The distance at one position, in micro-nats: the largest |lp_entry(t) − lp_ref(t)|
/// over the union of both top-k token sets, a token missing from a side taking that
/// side's k-th logprob (content/correctness.md §Correctness).
///
/// Each side is first cut to its `k` largest logprobs ([`top_k`]); the k-th logprob is
/// then the smallest one kept.
///
/// Errors: an empty side (`item`/`position` name it).
pub fn position_distance_micro_nats(
    entry: &TopK,
    reference: &TopK,
    k: u32,
    item: u32,
    position: usize,
) -> Result<u64, CorrectnessError> {
    let top = |side: &TopK, name: &'static str| -> Result<Vec<(u32, i64)>, CorrectnessError> {
        let kept = top_k(side, k);
        if kept.is_empty() {
            return Err(CorrectnessError::EmptyTopK {
                item,
                position,
                side: name,
            });
        }
        Ok(kept)
    };
    let entry = top(entry, "entry")?;
    let reference = top(reference, "reference")?;
    let kth = |side: &[(u32, i64)]| side.last().map_or(0, |(_, lp)| *lp);
    let (entry_kth, reference_kth) = (kth(&entry), kth(&reference));
    let lookup = |side: &[(u32, i64)], token: u32, fallback: i64| {
        side.iter()
            .find(|(t, _)| *t == token)
            .map_or(fallback, |(_, lp)| *lp)
    };
    Ok(entry
        .iter()
        .chain(&reference)
        .map(|&(token, _)| {
            lookup(&entry, token, entry_kth).abs_diff(lookup(&reference, token, reference_kth))
        })
        .max()
        .unwrap_or(0))
}

/// An item's distance: the mean of its position distances in micro-nats, rounded half
/// up in integers (`(Σ + n/2) / n`); 0 for no positions.
pub fn item_distance_micro_nats(position_micro_nats: &[u64]) -> u64 {
    integer_mean(position_micro_nats)
}

/// The distances of one item's positions from both sides' top-k lists, in order, with
/// `k` the campaign's top-k.
///
/// Errors: the sides cover different numbers of positions, or a position fails
/// [`position_distance_micro_nats`].
pub fn item_positions_micro_nats(
    item: u32,
    k: u32,
    entry: &[Vec<(u32, i64)>],
    reference: &[Vec<(u32, i64)>],
) -> Result<Vec<u64>, CorrectnessError> {
    if entry.len() != reference.len() {
        return Err(CorrectnessError::PositionCount {
            item,
            entry: entry.len(),
            reference: reference.len(),
        });
    }
    entry
        .iter()
        .zip(reference)
        .enumerate()
        .map(|(position, (e, r))| position_distance_micro_nats(e, r, k, item, position))
        .collect()
}

/// The gate's verdict on a list of item distances.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Every group mean ≤ the group bound and every item ≤ the item bound.
    pub passed: bool,
    /// Largest item distance, micro-nats.
    pub max_item_micro_nats: u64,
    /// Largest group mean, micro-nats.
    pub max_group_mean_micro_nats: u64,
    /// Index of the first item over the item bound.
    pub first_failing_item: Option<u32>,
    /// Index of the first group over the group bound.
    pub first_failing_group: Option<u32>,
    /// Every group's mean, micro-nats, in order.
    pub group_means_micro_nats: Vec<u64>,
}

/// Judges item distances (micro-nats, in item order) against the campaign's gate:
/// items in groups of `group_size` in order (a short last group is judged on its own
/// mean), each group mean (integer, rounded half up) at most `group_mean_bound_micro_nats`
/// and no item above `item_bound_micro_nats` (content/correctness.md §Correctness; bounds 0.20
/// and 2.0 nats in the s1-pro-speed track of the competition's rules). No items is a
/// failed gate.
pub fn verdict(items_micro_nats: &[u64], spec: &CorrectnessSpec) -> Verdict {
    let group_size = usize::try_from(spec.group_size.max(1)).unwrap_or(usize::MAX);
    let group_means_micro_nats: Vec<u64> = items_micro_nats
        .chunks(group_size)
        .map(integer_mean)
        .collect();
    let index = |i: usize| u32::try_from(i).unwrap_or(u32::MAX);
    let first_failing_item = items_micro_nats
        .iter()
        .position(|d| *d > spec.item_bound_micro_nats)
        .map(index);
    let first_failing_group = group_means_micro_nats
        .iter()
        .position(|m| *m > spec.group_mean_bound_micro_nats)
        .map(index);
    Verdict {
        passed: !items_micro_nats.is_empty()
            && first_failing_item.is_none()
            && first_failing_group.is_none(),
        max_item_micro_nats: items_micro_nats.iter().copied().max().unwrap_or(0),
        max_group_mean_micro_nats: group_means_micro_nats.iter().copied().max().unwrap_or(0),
        first_failing_item,
        first_failing_group,
        group_means_micro_nats,
    }
}

/// Recomputes the verdict from a per-item artifact, as the verifier does: each item's
/// distance from its stored position distances, then [`verdict`] with the artifact's own
/// bounds. Returns the verdict and whether every stored item distance matched.
pub fn verdict_from_artifact(items: &CorrectnessItems) -> (Verdict, bool) {
    let spec = CorrectnessSpec {
        group_size: items.group_size,
        group_mean_bound_micro_nats: items.group_mean_bound_micro_nats,
        item_bound_micro_nats: items.item_bound_micro_nats,
        ..CorrectnessSpec::default()
    };
    let recomputed: Vec<u64> = items
        .items
        .iter()
        .map(|item| item_distance_micro_nats(&item.position_micro_nats))
        .collect();
    let consistent = items
        .items
        .iter()
        .zip(&recomputed)
        .all(|(item, d)| item.distance_micro_nats == *d);
    (verdict(&recomputed, &spec), consistent)
}

/// Where two prompt tokenizations first differ: `(position, expected, got)` with `None`
/// for a side that ended before the position; `None` when they are equal. `expected` is
/// the reference runtime's own tokenization of the prompt text, `got` what an engine
/// echoed (content/correctness.md: the reference tokenizes the prompt itself).
pub fn prompt_difference(expected: &[u32], got: &[u32]) -> Option<(u32, Option<u32>, Option<u32>)> {
    let position = expected
        .iter()
        .zip(got)
        .position(|(e, g)| e != g)
        .or_else(|| (expected.len() != got.len()).then(|| expected.len().min(got.len())))?;
    Some((
        u32::try_from(position).unwrap_or(u32::MAX),
        expected.get(position).copied(),
        got.get(position).copied(),
    ))
}

fn integer_mean(values: &[u64]) -> u64 {
    if values.is_empty() {
        return 0;
    }
    let n = values.len() as u128;
    let sum: u128 = values.iter().map(|v| u128::from(*v)).sum();
    u64::try_from((sum + n / 2) / n).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> CorrectnessSpec {
        CorrectnessSpec {
            group_size: 3,
            group_mean_bound_micro_nats: 200_000,
            item_bound_micro_nats: 2_000_000,
            ..CorrectnessSpec::default()
        }
    }

    /// A top-k written in nats, quantized as a response is.
    fn q(side: &[(u32, f64)]) -> Vec<(u32, i64)> {
        side.iter()
            .map(|&(t, lp)| (t, quantize_logprob(lp).unwrap()))
            .collect()
    }

    #[test]
    fn identical_top_k_is_distance_zero() {
        let side = [(5, -0.1), (7, -2.5), (9, -3.0)];
        assert_eq!(position_distance_missing(&side, &side), 0);
    }

    fn position_distance_missing(entry: &[(u32, f64)], reference: &[(u32, f64)]) -> u64 {
        position_distance_micro_nats(&q(entry), &q(reference), 3, 0, 0).unwrap()
    }

    #[test]
    fn a_missing_token_takes_that_sides_kth_logprob() {
        // Token 9 is only in the entry's top-2; the reference's k-th logprob is −4.0, so
        // |−1.0 − (−4.0)| = 3.0. Token 8 only in the reference: |−1.0 − (−2.0)| = 1.0
        // on the entry's side (its k-th is −1.0). Token 5: |−0.5 − (−0.25)| = 0.25.
        let entry = [(5, -0.5), (9, -1.0)];
        let reference = [(5, -0.25), (8, -2.0), (3, -4.0)];
        assert_eq!(position_distance_missing(&entry, &reference), 3_000_000);
    }

    #[test]
    fn the_chosen_token_beyond_the_top_k_is_cut() {
        // k = 2: the entry lists its chosen token 4 at −9.0 beyond its top 2, as vLLM
        // does. Cut away, the entry's k-th is −1.0, so token 4 on the reference side
        // (−1.5) compares with −1.0 from the entry: 0.5.
        let entry = [(1, -0.5), (2, -1.0), (4, -9.0)];
        let reference = [(1, -0.5), (4, -1.5)];
        assert_eq!(
            position_distance_micro_nats(&q(&entry), &q(&reference), 2, 0, 0),
            Ok(500_000)
        );
    }

    #[test]
    fn the_cut_keeps_the_k_largest_lower_ids_first_and_cuts_nothing_twice() {
        let side = [
            (9, -2_000_000),
            (4, -1_000_000),
            (7, -2_000_000),
            (1, -3_000_000),
        ];
        let cut = top_k(&side, 2);
        assert_eq!(cut, vec![(4, -1_000_000), (7, -2_000_000)]);
        assert_eq!(top_k(&cut, 2), cut);
        assert_eq!(top_k(&side, 0), vec![(4, -1_000_000)]);
        // The distance on the cut sides is the distance on the raw ones.
        let reference = [(4, -1_500_000), (5, -2_500_000)];
        assert_eq!(
            position_distance_micro_nats(&cut, &reference, 2, 0, 0),
            position_distance_micro_nats(&side, &reference, 2, 0, 0)
        );
    }

    #[test]
    fn rounds_to_the_nearest_micro_nat() {
        let entry = [(1, -0.100_000_4)];
        let reference = [(1, -0.100_001_0)];
        assert_eq!(position_distance_missing(&entry, &reference), 1);
    }

    #[test]
    fn quantization_rounds_half_away_from_zero_and_refuses_non_finite() {
        assert_eq!(quantize_logprob(-0.000_000_5), Some(-1));
        assert_eq!(quantize_logprob(-0.000_000_4), Some(0));
        assert_eq!(quantize_logprob(-2.5), Some(-2_500_000));
        assert_eq!(quantize_logprob(f64::NAN), None);
        assert_eq!(quantize_logprob(f64::NEG_INFINITY), None);
        assert_eq!(quantize_logprob(-1e10), None);
    }

    #[test]
    fn empty_sides_are_errors() {
        assert_eq!(
            position_distance_micro_nats(&[], &[(1, -1_000_000)], 20, 4, 2),
            Err(CorrectnessError::EmptyTopK {
                item: 4,
                position: 2,
                side: "entry"
            })
        );
    }

    #[test]
    fn item_distance_is_the_rounded_mean_of_positions() {
        assert_eq!(item_distance_micro_nats(&[1, 2]), 2);
        assert_eq!(item_distance_micro_nats(&[1, 1, 2]), 1);
        assert_eq!(item_distance_micro_nats(&[]), 0);
        assert_eq!(
            item_positions_micro_nats(0, 20, &[vec![(1, -1_000_000)]], &[]),
            Err(CorrectnessError::PositionCount {
                item: 0,
                entry: 1,
                reference: 0
            })
        );
    }

    #[test]
    fn groups_of_three_in_order() {
        // Group 0 mean 100 000, group 1 mean (300 000 + 300 000 + 0)/3 = 200 000 (at the
        // bound: passes), no item above 2.0.
        let passing = verdict(&[100_000, 100_000, 100_000, 300_000, 300_000, 0], &spec());
        assert!(passing.passed);
        assert_eq!(passing.group_means_micro_nats, vec![100_000, 200_000]);
        assert_eq!(passing.max_item_micro_nats, 300_000);

        // One micro-nat more in group 1 fails it.
        let failing = verdict(&[100_000, 100_000, 100_000, 300_000, 300_002, 0], &spec());
        assert!(!failing.passed);
        assert_eq!(failing.first_failing_group, Some(1));
        assert_eq!(failing.first_failing_item, None);
    }

    #[test]
    fn one_item_over_the_item_bound_fails_even_with_a_low_mean() {
        let items = [0, 0, 2_000_001, 0, 0, 0, 0, 0, 0];
        let v = verdict(&items, &spec());
        assert!(!v.passed);
        assert_eq!(v.first_failing_item, Some(2));
        // Its group mean is 666 667: the group fails too.
        assert_eq!(v.first_failing_group, Some(0));
        assert_eq!(v.max_group_mean_micro_nats, 666_667);
        // At the item bound exactly, with small neighbours... the group still fails.
        let at_bound = verdict(&[2_000_000, 0, 0, 0, 0, 0], &spec());
        assert_eq!(at_bound.first_failing_item, None);
        assert_eq!(at_bound.first_failing_group, Some(0));
    }

    #[test]
    fn a_prompt_difference_names_the_first_differing_position() {
        assert_eq!(prompt_difference(&[1, 5, 6], &[1, 5, 6]), None);
        assert_eq!(
            prompt_difference(&[1, 5, 6], &[1, 7, 6]),
            Some((1, Some(5), Some(7)))
        );
        // A stripped BOS shifts everything: position 0.
        assert_eq!(
            prompt_difference(&[1, 5, 6], &[5, 6]),
            Some((0, Some(1), Some(5)))
        );
        // One side ends first.
        assert_eq!(
            prompt_difference(&[1, 5], &[1, 5, 6]),
            Some((2, None, Some(6)))
        );
        assert_eq!(
            prompt_difference(&[1, 5, 6], &[1, 5]),
            Some((2, Some(6), None))
        );
    }

    #[test]
    fn no_items_fail_the_gate() {
        assert!(!verdict(&[], &spec()).passed);
    }
}
