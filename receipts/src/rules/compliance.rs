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

use crate::model::{EntryMeasurement, LoadSample, LoadSampleCheck, TextAgainstIds};

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
}
