//! The compliance tests of record on an entry's timed runs (content/correctness.md,
//! Compliance tests), one function each, shared by the runner and the verifier:
//!
//! - **Streamed text against the ids** ([`first_text_mismatch`]): every sampled request of
//!   a [`LoadSample`] whose texts were checked (`textAgainstIds` `checked`) must have
//!   streamed exactly the reference's text of its ids; the first that did not, in run
//!   then draw order, disqualifies (`text_not_ids`).
//! - **Output length** ([`output_length_failure`], MLPerf TEST06/TEST09): every request
//!   asks for an exact output length, so a counted run whose probes hold a request that
//!   ended short or long disqualifies (`output_length`), the first such pass in order.
//! - **Caching** ([`caching_failure`], MLPerf TEST04): a counted run's caching probe
//!   ([`caching_order`], [`caching_speedup_bp`]) whose repeated prompts decoded faster than
//!   its fresh ones by more than the bound disqualifies (`caching`), the first such pass.

use crate::model::{CachingRequest, EntryMeasurement, LoadSample, LoadSampleCheck, TextAgainstIds};

/// The first checked request whose streamed text is not the reference's text of its
/// ids: `(run, item)`, in run then draw order; `None` when the texts were not checked
/// (absent, or `not_applicable`) or every pair is equal. A side missing from a checked
/// request counts as a difference.
pub fn first_text_mismatch(sample: &LoadSample) -> Option<(u32, u32)> {
    if sample.text_against_ids != Some(TextAgainstIds::Checked) {
        return None;
    }
    sample.runs.iter().find_map(|run| match &run.check {
        LoadSampleCheck::Checked { requests } => requests
            .iter()
            .find(|r| r.streamed_text.is_none() || r.streamed_text != r.reference_text)
            .map(|r| (run.run, r.item_index)),
        LoadSampleCheck::NotApplicable { .. } => None,
    })
}

/// The first counted run, of `(pass, its probe log)` in pass order, whose probes hold
/// requests that ended with another output length than asked: `(pass, short, long)`,
/// the requests of all its probes that ended short and long; `None` when none did.
pub fn output_length_failure<'a>(
    runs: impl IntoIterator<Item = (u32, &'a EntryMeasurement)>,
) -> Option<(u32, u64, u64)> {
    runs.into_iter().find_map(|(pass, measurement)| {
        let probes = measurement.runs.iter().flat_map(|run| &run.probes);
        let (short, long) = probes.fold((0u64, 0u64), |(short, long), probe| {
            (
                short.saturating_add(probe.errors.short_output),
                long.saturating_add(probe.errors.long_output),
            )
        });
        (short > 0 || long > 0).then_some((pass, short, long))
    })
}

/// The send order of a caching probe of `prompts` fresh prompts, as `(prompt, repeat)`:
/// each fresh prompt, and the repeat of the one before it after it, so every repeat is
/// sent once its first answer is complete (a cache has stored it) and fresh and repeated
/// requests alternate (a load spike falls on both alike). `[(0, false), (1, false),
/// (0, true), (2, false), (1, true), …, (n − 1, true)]`.
pub fn caching_order(prompts: usize) -> Vec<(usize, bool)> {
    let mut order = Vec::with_capacity(prompts.saturating_mul(2));
    for prompt in 0..prompts {
        order.push((prompt, false));
        if prompt > 0 {
            order.push((prompt - 1, true));
        }
    }
    if prompts > 0 {
        order.push((prompts - 1, true));
    }
    order
}

/// The repeats' speed-up of a caching probe's `requests`, basis points
/// (content/correctness.md, Caching): per prompt whose fresh request and repeat both
/// completed, `fresh × 10⁴ ÷ max(repeat, 1) − 10⁴` of their decode spans (0 when the
/// repeat was not faster); of those, in ascending order, the one at index `pairs ÷ 8` —
/// the speed-up every pair but an eighth reaches (the 2nd smallest of 8). An answer
/// cache makes every repeat fast; a machine's noise, which can shorten a span as well as
/// lengthen it (a first token read late), makes one pair look so, rarely seven. `None`
/// when no pair completed.
pub fn caching_speedup_bp(requests: &[CachingRequest]) -> Option<u64> {
    let mut pairs: Vec<u64> = (requests.iter())
        .filter(|r| r.repeat && r.completed)
        .filter_map(|repeat| {
            let fresh = (requests.iter())
                .find(|r| !r.repeat && r.item_index == repeat.item_index)
                .filter(|r| r.completed)?;
            let ratio = u128::from(fresh.decode_us) * 10_000 / u128::from(repeat.decode_us.max(1));
            Some(u64::try_from(ratio.saturating_sub(10_000)).unwrap_or(u64::MAX))
        })
        .collect();
    pairs.sort_unstable();
    pairs.get(pairs.len() / 8).copied()
}

/// The first counted run, of `(pass, its probe log)` in pass order, whose caching probe's
/// repeats decoded faster than its fresh prompts by more than `bound_bp`, the speed-up
/// recomputed from its requests: `(pass, speedup_bp)`; `None` when none did (a run
/// without a probe, or without a completed request on a side, is not judged).
pub fn caching_failure<'a>(
    runs: impl IntoIterator<Item = (u32, &'a EntryMeasurement)>,
    bound_bp: u32,
) -> Option<(u32, u64)> {
    runs.into_iter().find_map(|(pass, measurement)| {
        let probe = measurement.caching.as_ref()?;
        let speedup = caching_speedup_bp(&probe.requests)?;
        (speedup > u64::from(bound_bp)).then_some((pass, speedup))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{LoadSampleRequest, LoadSampleRun, Sha256Hex};

    fn request(item: u32, streamed: Option<&str>, reference: Option<&str>) -> LoadSampleRequest {
        LoadSampleRequest {
            item_index: item,
            prompt_sha256: Sha256Hex::digest(b"p"),
            output_token_ids: vec![97],
            reference_top1_micro_nats: vec![-1],
            reference_token_micro_nats: vec![-1],
            gap_micro_nats: 0,
            streamed_text: streamed.map(str::to_owned),
            reference_text: reference.map(str::to_owned),
        }
    }

    fn sample(text: Option<TextAgainstIds>, runs: Vec<Vec<LoadSampleRequest>>) -> LoadSample {
        LoadSample {
            entry: 1,
            sample_size: 2,
            bound_micro_nats: 1,
            runs: runs
                .into_iter()
                .enumerate()
                .map(|(run, requests)| LoadSampleRun {
                    run: run as u32,
                    probe: 0,
                    completed: vec![],
                    check: LoadSampleCheck::Checked { requests },
                })
                .collect(),
            text_against_ids: text,
            measured_for: None,
            group_bound_micro_nats: None,
            position_bound_micro_nats: None,
            max_positions_over: None,
        }
    }

    #[test]
    fn the_first_streamed_text_unlike_its_ids_is_named_by_run_and_item() {
        let runs = || {
            vec![
                vec![
                    request(4, Some("a"), Some("a")),
                    request(9, Some("b"), Some("b")),
                ],
                vec![
                    request(2, Some("a"), Some("a")),
                    request(7, Some("z"), Some("b")),
                ],
                vec![request(1, Some("z"), Some("b"))],
            ]
        };
        let checked = Some(TextAgainstIds::Checked);
        assert_eq!(
            first_text_mismatch(&sample(checked.clone(), runs())),
            Some((1, 7))
        );
        // Not checked: no verdict, whatever the texts.
        let not_applicable = TextAgainstIds::NotApplicable {
            reason: "no detokenizer".into(),
        };
        assert_eq!(
            first_text_mismatch(&sample(Some(not_applicable), runs())),
            None
        );
        assert_eq!(first_text_mismatch(&sample(None, runs())), None);
        // A checked request missing its streamed text differs.
        let missing = vec![vec![request(3, None, Some("a"))]];
        assert_eq!(
            first_text_mismatch(&sample(checked.clone(), missing)),
            Some((0, 3))
        );
        let equal = vec![vec![request(3, Some("é"), Some("é"))]];
        assert_eq!(first_text_mismatch(&sample(checked, equal)), None);
    }

    #[test]
    fn the_first_run_with_a_wrong_length_is_named_with_its_counts() {
        let measurement = |short: &[u64], long: &[u64]| -> EntryMeasurement {
            let histogram = String::new();
            let mut probe = crate::model::ProbeRecord {
                run: 0,
                probe: 0,
                sub_stream: 0,
                rate_milli_rps: 1000,
                warmup_requests: 0,
                requests: 8,
                completed: 8,
                over_bound: 0,
                percentile_us: None,
                required_requests: None,
                send_lag_p50_us: 0,
                send_lag_p99_us: 0,
                send_lag_bound_us: 0,
                verdict: crate::model::ProbeVerdict::Pass,
                throughput_milli_rps: 0,
                duration_us: 0,
                input_bytes: 0,
                output_tokens: 0,
                token_count: None,
                errors: crate::model::ErrorCounts::default(),
                histograms: crate::model::ProbeHistograms {
                    e2e: histogram.clone(),
                    ttft: histogram.clone(),
                    tpot: histogram.clone(),
                    itl: histogram.clone(),
                    send_lag: histogram,
                },
            };
            let probes = short
                .iter()
                .zip(long)
                .map(|(&s, &l)| {
                    probe.errors.short_output = s;
                    probe.errors.long_output = l;
                    probe.clone()
                })
                .collect();
            EntryMeasurement {
                runs: vec![crate::model::RunMeasurement {
                    run: 0,
                    throughput_milli_rps: None,
                    rate_milli_rps: None,
                    probes,
                    valid: true,
                }],
                throughput_milli_rps: None,
                throughput_min_milli_rps: None,
                throughput_max_milli_rps: None,
                valid: true,
                outcome: crate::model::MeasurementOutcome::Measured,
                measured_for: None,
                caching: None,
            }
        };
        let clean = measurement(&[0, 0], &[0, 0]);
        let short = measurement(&[2, 1], &[0, 0]);
        let long = measurement(&[0, 0], &[0, 4]);
        assert_eq!(output_length_failure([(0, &clean), (1, &clean)]), None);
        assert_eq!(
            output_length_failure([(0, &clean), (1, &short), (2, &long)]),
            Some((1, 3, 0))
        );
        assert_eq!(output_length_failure([(2, &long)]), Some((2, 0, 4)));
    }

    #[test]
    fn a_caching_probe_sends_each_repeat_after_the_next_fresh_prompt() {
        assert_eq!(caching_order(0), vec![]);
        assert_eq!(caching_order(1), vec![(0, false), (0, true)]);
        assert_eq!(
            caching_order(3),
            vec![
                (0, false),
                (1, false),
                (0, true),
                (2, false),
                (1, true),
                (2, true)
            ]
        );
    }

    /// Requests of `(item, repeat, completed, decode µs)`.
    fn caching(spans: &[(u32, bool, bool, u64)]) -> Vec<CachingRequest> {
        (spans.iter())
            .map(
                |&(item_index, repeat, completed, decode_us)| CachingRequest {
                    item_index,
                    prompt_sha256: crate::model::Sha256Hex::digest(b"p"),
                    repeat,
                    completed,
                    decode_us,
                },
            )
            .collect()
    }

    #[test]
    fn the_speedup_is_the_pairs_at_an_eighth_from_the_smallest() {
        // Pairs: item 1 400 → 100 (30,000 bp), item 2 300 → 300 (0), item 3 failed
        // fresh (no pair). Two pairs: index 2 ÷ 8 = 0, the smallest.
        let requests = caching(&[
            (1, false, true, 400),
            (2, false, true, 300),
            (1, true, true, 100),
            (3, false, false, 1),
            (2, true, true, 300),
            (3, true, true, 5),
        ]);
        assert_eq!(caching_speedup_bp(&requests), Some(0));
        // Eight pairs, all a cache's but item 5 (2,500 bp): the 2nd smallest, item 0's
        // 2,000 ÷ 100 → 190,000 bp.
        let mut cache = Vec::new();
        for item in 0..8 {
            let repeat = if item == 5 { 2_000 } else { 100 };
            cache.push((item, false, true, 2_000 + u64::from(item) * 100));
            cache.push((item, true, true, repeat));
        }
        assert_eq!(caching_speedup_bp(&caching(&cache)), Some(190_000));
        // One honest pair's outlier (a repeat 3 × faster) does not move it.
        let mut honest = Vec::new();
        for item in 0..8 {
            let repeat = if item == 2 { 100 } else { 310 };
            honest.push((item, false, true, 300));
            honest.push((item, true, true, repeat));
        }
        assert_eq!(caching_speedup_bp(&caching(&honest)), Some(0));
        // A repeat decoded in no time counts as 1 µs; no completed repeat: not judged.
        let instant = caching(&[(0, false, true, 2_000), (0, true, true, 0)]);
        assert_eq!(caching_speedup_bp(&instant), Some(19_990_000));
        let none = caching(&[(0, false, true, 100), (0, true, false, 1)]);
        assert_eq!(caching_speedup_bp(&none), None);
    }

    #[test]
    fn the_first_counted_run_faster_on_repeats_than_the_bound_is_named() {
        let measurement = |spans: Option<&[(u32, bool, bool, u64)]>| EntryMeasurement {
            runs: vec![],
            throughput_milli_rps: None,
            throughput_min_milli_rps: None,
            throughput_max_milli_rps: None,
            valid: true,
            outcome: crate::model::MeasurementOutcome::Measured,
            measured_for: None,
            caching: spans.map(|spans| crate::model::CachingProbe {
                sub_stream: 3,
                requests: caching(spans),
                speedup_bp: None,
                bound_bp: 0,
            }),
        };
        let honest = measurement(Some(&[(0, false, true, 100), (0, true, true, 90)]));
        let twice = measurement(Some(&[(0, false, true, 200), (0, true, true, 100)]));
        let cache = measurement(Some(&[(0, false, true, 300), (0, true, true, 2)]));
        let absent = measurement(None);
        // The figures stored in the file are not read: the requests are.
        assert_eq!(
            caching_failure([(0, &honest), (1, &cache)], 10_000),
            Some((1, 1_490_000))
        );
        // Exactly at the bound passes.
        assert_eq!(caching_failure([(0, &twice)], 10_000), None);
        assert_eq!(caching_failure([(0, &twice)], 9_999), Some((0, 10_000)));
        assert_eq!(
            caching_failure([(0, &absent), (2, &honest)], 0),
            Some((2, 1_111))
        );
    }
}
