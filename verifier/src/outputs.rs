//! An entry's correctness outputs against what else fixes them (v5; content/verifying.md,
//! Correctness): the per-item file's prompt hashes are the regenerated correctness items'
//! (`correctness.prompts`); its greedy ids are what its own top-k say a greedy engine
//! picked (`correctness.greedy`); and the reference, which is deterministic, gave the
//! same top-k for the same prefix in every entry's file (`correctness.reference`).
//! Without them an evaluator could swap an entry's outputs, or the reference's answers
//! to them, and recompute distances and verdicts that every other check accepts.

use crate::FailureReason;
use crate::files::recomputed;
use receipts::model::CorrectnessItems;
use receipts::rules::workload::Workload;

/// `correctness.prompts` on the per-item file `file`: item `i`'s `promptSha256` is the
/// sha256 of the prompt text of the `i`-th correctness item drawn from the revealed
/// `correctnessSeed` (`Workload::correctness_items`).
pub(crate) fn prompts_are_the_items(
    file: &str,
    items: &CorrectnessItems,
    workload: &Workload,
) -> Result<(), FailureReason> {
    let drawn = workload.correctness_items();
    items.items.iter().try_for_each(|item| {
        let field = format!("items[{}].promptSha256", item.index);
        let Some(expected) = usize::try_from(item.index).ok().and_then(|i| drawn.get(i)) else {
            return Err(recomputed(
                file,
                field,
                item.prompt_sha256,
                format!("no item: the seed draws {}", drawn.len()),
            ));
        };
        if item.prompt_sha256 == expected.prompt_sha256 {
            Ok(())
        } else {
            Err(recomputed(
                file,
                field,
                item.prompt_sha256,
                expected.prompt_sha256,
            ))
        }
    })
}

/// The token id that outranked a generated one somewhere in the round, and where: the
/// end-of-sequence token the fixed output length forbids (see [`greedy_ids`]).
#[derive(Debug, Default)]
pub(crate) struct Banned {
    seen: Option<(u32, String)>,
}

/// `correctness.greedy` on the per-item file `file`: every generated id is the one a
/// greedy engine picked from the top-k it reported at that position. Its quantized
/// logprob is at least every other listed id's — quantizing to micro-nats keeps order
/// (it rounds every value the same way), so the argmax stays on top, and a tie (two
/// logits closer than a micro-nat, or equal ones the engine broke its own way) passes
/// whichever of them was generated. One exception: correctness requests fix their output
/// length (`min_tokens` = `max_tokens`, `ignore_eos`), so the engine never emits its
/// end-of-sequence token however likely, while its logprobs are of the raw distribution.
/// The verifier cannot name that id without the model's vocabulary, so one id per round,
/// the same everywhere (`banned` carries it across the round's files), may outrank the
/// generated one, and it must appear in no generated output of the round
/// (`generated`: every id any entry generated). Items without raw top-k are left to
/// `correctness.distances`.
pub(crate) fn greedy_ids(
    file: &str,
    items: &CorrectnessItems,
    banned: &mut Banned,
    generated: &std::collections::BTreeSet<u32>,
) -> Result<(), FailureReason> {
    for item in &items.items {
        let Some(top_k) = &item.entry_top_k else {
            continue;
        };
        for (p, (&id, position)) in item.output_token_ids.iter().zip(top_k).enumerate() {
            let at = format!("items[{}].outputTokenIds[{p}]", item.index);
            let own = position.iter().find(|(t, _)| *t == id).map(|(_, lp)| *lp);
            let outranking = position
                .iter()
                .filter(|(t, lp)| *t != id && own.is_none_or(|own| *lp > own));
            for &(other, logprob) in outranking {
                let claim = || {
                    let own = own.map_or_else(
                        || "not in its top-k".to_owned(),
                        |lp| format!("logprob {lp} µnat"),
                    );
                    format!("{id} ({own})")
                };
                match &banned.seen {
                    None if generated.contains(&other) => {
                        return Err(recomputed(
                            file,
                            at,
                            claim(),
                            format!("{other} (logprob {logprob} µnat, the argmax of its top-k)"),
                        ));
                    }
                    None => banned.seen = Some((other, format!("{file} {at}"))),
                    Some((end, _)) if *end == other => {}
                    Some((end, first)) => {
                        return Err(recomputed(
                            file,
                            at,
                            claim(),
                            format!(
                                "{other} (logprob {logprob} µnat, the argmax of its top-k; only \
                                 {end}, never generated, outranks a generated id, first at {first})"
                            ),
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

/// `correctness.reference` on the per-item file `file` against an earlier entry's
/// `earlier_file`: for each item both hold, the reference tokenized the same prompt to
/// as many tokens, and at every position whose prefix (prompt and generated ids before
/// it) both entries share it answered the same top-k ([`same_top_k`] within
/// `tolerance_micro_nats`, the campaign's `reference_tolerance_micro_nats`; 0: exactly).
/// The reference runs one request at a time and a causal model's answer at a position
/// depends only on the prefix, so a difference is an answer that was changed.
pub(crate) fn same_reference(
    file: &str,
    items: &CorrectnessItems,
    earlier_file: &str,
    earlier: &CorrectnessItems,
    tolerance_micro_nats: u64,
) -> Result<(), FailureReason> {
    for item in &items.items {
        let Some(other) = earlier.items.iter().find(|o| o.index == item.index) else {
            continue;
        };
        let at = format!("items[{}]", item.index);
        let as_in = |value: String| format!("{value} (as in {earlier_file})");
        if item.prompt_tokens != other.prompt_tokens {
            return Err(recomputed(
                file,
                format!("{at}.promptTokens"),
                item.prompt_tokens,
                as_in(other.prompt_tokens.to_string()),
            ));
        }
        let (Some(mine), Some(theirs)) = (&item.reference_top_k, &other.reference_top_k) else {
            continue;
        };
        let shared = item
            .output_token_ids
            .iter()
            .zip(&other.output_token_ids)
            .take_while(|(a, b)| a == b)
            .count();
        // Position p's prefix is the prompt and ids[..p]: shared for p ≤ `shared`.
        for (p, (a, b)) in mine.iter().zip(theirs).enumerate().take(shared + 1) {
            if !same_top_k(a, b, tolerance_micro_nats) {
                return Err(recomputed(
                    file,
                    format!("{at}.referenceTopK[{p}]"),
                    format!("{a:?}"),
                    as_in(format!("{b:?}")),
                ));
            }
        }
    }
    Ok(())
}

/// Whether two answers of the reference at one prefix, top-k lists of (token id,
/// logprob in micro-nats), are the same within `tolerance` micro-nats: identical at 0;
/// otherwise as long, every token both list within `tolerance` of each other, and a
/// token only one lists within `tolerance` of the other's last (lowest) logprob — a
/// near-tie at the edge of the top-k that a runtime's rounding can swap.
fn same_top_k(a: &[(u32, i64)], b: &[(u32, i64)], tolerance: u64) -> bool {
    if tolerance == 0 || a.len() != b.len() {
        return a == b;
    }
    let lowest = |list: &[(u32, i64)]| list.iter().map(|(_, lp)| *lp).min();
    let near = |x: i64, y: i64| x.abs_diff(y) <= tolerance;
    let within = |one: &[(u32, i64)], other: &[(u32, i64)]| {
        one.iter()
            .all(|(id, lp)| match other.iter().find(|(o, _)| o == id) {
                Some((_, olp)) => near(*lp, *olp),
                None => lowest(other).is_some_and(|edge| near(*lp, edge)),
            })
    };
    within(a, b) && within(b, a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use receipts::model::{CorrectnessItem, Sha256Hex};

    fn file(outputs: &[&[u32]], top_k: Vec<Vec<Vec<(u32, i64)>>>) -> CorrectnessItems {
        CorrectnessItems {
            top_k: 3,
            group_size: 1,
            group_mean_bound_micro_nats: 0,
            item_bound_micro_nats: 0,
            items: outputs
                .iter()
                .zip(top_k)
                .enumerate()
                .map(|(i, (ids, top))| CorrectnessItem {
                    index: u32::try_from(i).unwrap(),
                    prompt_sha256: Sha256Hex::digest(b"p"),
                    prompt_tokens: 4,
                    output_token_ids: ids.to_vec(),
                    position_micro_nats: vec![0; ids.len()],
                    distance_micro_nats: 0,
                    entry_top_k: Some(top.clone()),
                    reference_top_k: Some(top),
                })
                .collect(),
            measured_for: None,
        }
    }

    fn generated(files: &[&CorrectnessItems]) -> std::collections::BTreeSet<u32> {
        files
            .iter()
            .flat_map(|f| f.items.iter().flat_map(|i| i.output_token_ids.clone()))
            .collect()
    }

    /// A tie passes either id; the one never-generated id (the end of sequence the
    /// fixed length bans) may outrank; a second outranking id, or a generated one, fails.
    #[test]
    fn greedy_ids_are_the_argmax_but_for_ties_and_one_banned_end_of_sequence() {
        let f = "correctness/e.json";
        let tie = file(&[&[7]], vec![vec![vec![(5, -10), (7, -10), (9, -30)]]]);
        let eos = file(
            &[&[7, 8]],
            vec![vec![
                vec![(99, -1), (7, -10)],
                vec![(99, -2), (8, -5), (7, -9)],
            ]],
        );
        let all = generated(&[&tie, &eos]);
        assert_eq!(greedy_ids(f, &tie, &mut Banned::default(), &all), Ok(()));
        let mut banned = Banned::default();
        assert_eq!(greedy_ids(f, &eos, &mut banned, &all), Ok(()));
        // Another id outranking later in the round, never generated either.
        let other = file(&[&[8]], vec![vec![vec![(98, -1), (8, -10)]]]);
        assert_eq!(
            greedy_ids(f, &other, &mut banned, &all),
            Err(recomputed(
                f,
                "items[0].outputTokenIds[0]",
                "8 (logprob -10 µnat)",
                "98 (logprob -1 µnat, the argmax of its top-k; only 99, never generated, \
                 outranks a generated id, first at correctness/e.json items[0].outputTokenIds[0])"
            ))
        );
        // An outranking id that is itself generated somewhere: not an end of sequence.
        let swapped = file(
            &[&[8, 7]],
            vec![vec![vec![(7, -1), (8, -10)], vec![(7, -1)]]],
        );
        assert_eq!(
            greedy_ids(f, &swapped, &mut Banned::default(), &generated(&[&swapped])),
            Err(recomputed(
                f,
                "items[0].outputTokenIds[0]",
                "8 (logprob -10 µnat)",
                "7 (logprob -1 µnat, the argmax of its top-k)"
            ))
        );
        // A generated id missing from its own top-k is outranked by all of it.
        let missing = file(&[&[3]], vec![vec![vec![(4, -1), (5, -2)]]]);
        assert!(
            greedy_ids(
                f,
                &missing,
                &mut Banned::default(),
                &generated(&[&missing, &file(&[&[4, 5]], vec![vec![]])])
            )
            .is_err()
        );
    }

    /// The reference's answers agree up to the first position where the outputs part,
    /// that position included; after it they may differ.
    #[test]
    fn the_reference_answers_a_shared_prefix_alike() {
        let a = file(
            &[&[1, 2, 3]],
            vec![vec![vec![(1, -1)], vec![(2, -2)], vec![(3, -3)]]],
        );
        let parted = file(
            &[&[1, 5, 6]],
            vec![vec![vec![(1, -1)], vec![(2, -2)], vec![(9, -9)]]],
        );
        assert_eq!(same_reference("b", &parted, "a", &a, 0), Ok(()));
        let changed = file(
            &[&[1, 5, 6]],
            vec![vec![vec![(1, -1)], vec![(2, -3)], vec![(9, -9)]]],
        );
        assert_eq!(
            same_reference("b", &changed, "a", &a, 0),
            Err(recomputed(
                "b",
                "items[0].referenceTopK[1]",
                "[(2, -3)]",
                "[(2, -2)] (as in a)"
            ))
        );
        // Within the campaign's tolerance the same change passes.
        assert_eq!(same_reference("b", &changed, "a", &a, 1), Ok(()));
    }

    /// Within a tolerance, logprobs of one token may differ by it and a near-tie at the
    /// edge of the top-k may swap; nothing else.
    #[test]
    fn a_reference_tolerance_allows_rounding_and_edge_swaps_only() {
        let base = [(1, -100), (2, -500), (3, -900)];
        assert!(same_top_k(&base, &base, 0));
        assert!(!same_top_k(&base, &[(1, -101), (2, -500), (3, -900)], 0));
        assert!(same_top_k(&base, &[(1, -110), (2, -495), (3, -900)], 10));
        assert!(!same_top_k(&base, &[(1, -111), (2, -500), (3, -900)], 10));
        // Token 3 at the edge swapped for token 4 within the tolerance of the edge.
        assert!(same_top_k(&base, &[(1, -100), (2, -500), (4, -905)], 10));
        // A new token far above the edge is another answer.
        assert!(!same_top_k(&base, &[(1, -100), (4, -300), (3, -900)], 10));
        assert!(!same_top_k(&base, &base[..2], 10));
    }
}
