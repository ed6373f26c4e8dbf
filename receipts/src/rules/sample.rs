//! The check of the timed run's outputs (content/correctness.md, The timed run is checked
//! too): which completed requests of a run's result probe are checked, the per-request
//! gap statistic, and the verdict on an entry's [`LoadSample`] artifact.
//!
//! - **Selection** ([`select_requests`]): ChaCha20 keyed by sha256(`referee.load-sample.v1`
//!   ‖ sampleSeed ‖ entry as 4 bytes big-endian ‖ run as 4 bytes big-endian), stream 0,
//!   draws a partial Fisher–Yates shuffle of the completed request indices from the first
//!   position up: position `i` swaps with `i + uniform(len − i)`; the first `n` drawn, in
//!   the order drawn, are the sample (every completed request when there are at most `n`).
//! - **Gap** ([`request_gap_micro_nats`]): per generated position, the reference's top-1
//!   logprob minus its logprob of the entry's token (micro-nats, never negative: a
//!   negative difference, which only an inconsistent reference response gives, counts 0);
//!   per request, the mean over positions rounded half up in integers (`(Σ + n/2) / n`),
//!   as [`crate::rules::correctness::item_distance_micro_nats`] rounds.
//! - **Pool** ([`keep_pool`]): the load client keeps token ids only for the items of a
//!   pool drawn before the runs, the same way with run number [`POOL_RUN`] from every item
//!   index of a sub-stream, [`POOL_FACTOR`] × n of them, so memory stays bounded and the
//!   engine cannot tell which requests are kept; `completed` is then the pool's items that
//!   the result probe sent and that completed.
//! - **Verdict** ([`first_divergent`]): per run, in run order, the first checked request
//!   (in draw order) whose gap is above the item bound; from `…/round/v7` (an artifact
//!   carrying the three bounds below) then the run's group mean — the rounded-half-up mean
//!   of its requests' gaps — above the group bound, then the count of its requests'
//!   positions whose gap is above the position bound over the most allowed. [`recheck`]
//!   recomputes selection, gaps and verdict from an artifact, as the verifier does.

use rand_core::SeedableRng;
use sha2::{Digest, Sha256};

use crate::model::{
    DisqualificationReason, EntryPass, LoadSample, LoadSampleCheck, LoadSampleRequest, PassStatus,
    Seed32,
};
use crate::rules::correctness::item_distance_micro_nats;
use crate::rules::workload::uniform;

/// The run number the pool is drawn with (no real run has it).
pub const POOL_RUN: u32 = u32::MAX;

/// Pool items kept per sampled request.
pub const POOL_FACTOR: u32 = 16;

/// The items whose token ids the load client keeps for entry `entry`: [`POOL_FACTOR`] ×
/// `n` of the `sub_stream_len` item indices, drawn with [`select_requests`] and run
/// [`POOL_RUN`], ascending.
pub fn keep_pool(sample_seed: &Seed32, entry: u32, sub_stream_len: u32, n: u32) -> Vec<u32> {
    let all: Vec<u32> = (0..sub_stream_len).collect();
    let mut pool = select_requests(
        sample_seed,
        entry,
        POOL_RUN,
        &all,
        n.saturating_mul(POOL_FACTOR),
    );
    pool.sort_unstable();
    pool
}

/// The passes whose runs an entry's sample covers (from `…/round/v5`: every run that
/// enters a score is checked): per pass its last row of `rows` (a re-run follows the
/// attempt it replaces), when that row is `measured`, ascending. Control rows (the
/// baseline's) are left out.
pub fn sampled_passes(rows: &[EntryPass]) -> Vec<u32> {
    let mut last: std::collections::BTreeMap<u32, PassStatus> = std::collections::BTreeMap::new();
    for row in rows.iter().filter(|r| !r.control) {
        last.insert(row.pass, row.status);
    }
    last.into_iter()
        .filter(|(_, status)| *status == PassStatus::Measured)
        .map(|(pass, _)| pass)
        .collect()
}

/// Where an artifact disagrees with its recomputation.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SampleMismatch {
    /// The checked requests are not the ones the seed draws.
    #[error("run {run}: the sample is items {found:?}, the seed draws {expected:?}")]
    Selection {
        /// The run.
        run: u32,
        /// What the seed draws.
        expected: Vec<u32>,
        /// What the artifact holds.
        found: Vec<u32>,
    },
    /// A stored gap is not the mean of its stored logprobs.
    #[error("run {run} item {item}: gap {found} µnat stored, {expected:?} recomputed")]
    Gap {
        /// The run.
        run: u32,
        /// The item.
        item: u32,
        /// The recomputed gap (`None`: the logprob lists do not fit together).
        expected: Option<u64>,
        /// The stored gap.
        found: u64,
    },
}

/// Recomputes an artifact with `sample_seed`: each checked run's selection from its
/// `completed` list, each request's gap from its stored logprobs; returns
/// [`first_divergent`] of it.
///
/// Errors: the first [`SampleMismatch`].
pub fn recheck(
    sample: &LoadSample,
    sample_seed: &Seed32,
) -> Result<Option<LoadDivergence>, SampleMismatch> {
    for run in &sample.runs {
        let LoadSampleCheck::Checked { requests } = &run.check else {
            continue;
        };
        let expected = select_requests(
            sample_seed,
            sample.entry,
            run.run,
            &run.completed,
            sample.sample_size,
        );
        let found: Vec<u32> = requests.iter().map(|r| r.item_index).collect();
        if expected != found {
            return Err(SampleMismatch::Selection {
                run: run.run,
                expected,
                found,
            });
        }
        for r in requests {
            let gap =
                request_gap_micro_nats(&r.reference_top1_micro_nats, &r.reference_token_micro_nats)
                    .ok();
            if gap != Some(r.gap_micro_nats) {
                return Err(SampleMismatch::Gap {
                    run: run.run,
                    item: r.item_index,
                    expected: gap,
                    found: r.gap_micro_nats,
                });
            }
        }
    }
    Ok(first_divergent(sample))
}

/// Errors of the gap statistic.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SampleError {
    /// The two per-position lists differ in length.
    #[error("{top1} top-1 logprobs but {token} token logprobs")]
    PositionCount {
        /// Top-1 logprobs given.
        top1: usize,
        /// Token logprobs given.
        token: usize,
    },
    /// A request without generated positions.
    #[error("no generated positions")]
    NoPositions,
}

/// The indices drawn from `completed` (a run's completed item indices, ascending) for
/// entry `entry`'s run `run` with `sample_seed`: at most `n`, in the order drawn (module
/// docs).
pub fn select_requests(
    sample_seed: &Seed32,
    entry: u32,
    run: u32,
    completed: &[u32],
    n: u32,
) -> Vec<u32> {
    let mut key = Sha256::new();
    key.update(b"referee.load-sample.v1");
    key.update(sample_seed.0);
    key.update(entry.to_be_bytes());
    key.update(run.to_be_bytes());
    let mut rng = rand_chacha::ChaCha20Rng::from_seed(key.finalize().into());
    rng.set_stream(0);
    let mut pool = completed.to_vec();
    let take = usize::try_from(n).unwrap_or(usize::MAX).min(pool.len());
    for i in 0..take {
        let left = (pool.len() - i) as u64;
        let j = i + usize::try_from(uniform(&mut rng, left)).unwrap_or(0);
        pool.swap(i, j);
    }
    pool.truncate(take);
    pool
}

/// A sampled request's gap, micro-nats: the rounded-half-up mean over its positions of
/// `top1[i] − token[i]` (each clamped at 0), from the reference's quantized logprobs.
///
/// Errors: [`SampleError::PositionCount`] when the lists differ in length,
/// [`SampleError::NoPositions`] when they are empty.
pub fn request_gap_micro_nats(top1: &[i64], token: &[i64]) -> Result<u64, SampleError> {
    if top1.len() != token.len() {
        return Err(SampleError::PositionCount {
            top1: top1.len(),
            token: token.len(),
        });
    }
    if top1.is_empty() {
        return Err(SampleError::NoPositions);
    }
    let gaps: Vec<u64> = top1
        .iter()
        .zip(token)
        .map(|(t, lp)| u64::try_from(t.saturating_sub(*lp)).unwrap_or(0))
        .collect();
    Ok(item_distance_micro_nats(&gaps))
}

/// Where a sample fails its bounds ([`first_divergent`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadDivergence {
    /// A request whose mean gap is above the item bound.
    Item {
        /// The run.
        run: u32,
        /// The request's workload item.
        item: u32,
        /// Its mean gap, micro-nats.
        gap_micro_nats: u64,
    },
    /// A run whose requests' mean gap is above the group bound (from round/v7).
    Group {
        /// The run.
        run: u32,
        /// The mean of its requests' gaps, micro-nats.
        mean_micro_nats: u64,
    },
    /// A run with more positions above the position bound than allowed (from round/v7).
    Positions {
        /// The run.
        run: u32,
        /// Positions above the position bound.
        positions: u32,
    },
}

impl LoadDivergence {
    /// The entry's typed disqualification reason for it, with `sample`'s bounds.
    pub fn reason(&self, sample: &LoadSample) -> DisqualificationReason {
        match *self {
            Self::Item {
                run,
                item,
                gap_micro_nats,
            } => DisqualificationReason::LoadOutputsDiverge {
                run,
                item,
                gap_micro_nats,
                bound_micro_nats: sample.bound_micro_nats,
            },
            Self::Group {
                run,
                mean_micro_nats,
            } => DisqualificationReason::LoadGroupDiverges {
                run,
                mean_micro_nats,
                bound_micro_nats: sample.group_bound_micro_nats.unwrap_or(u64::MAX),
            },
            Self::Positions { run, positions } => DisqualificationReason::LoadPositionsOver {
                run,
                positions,
                max_positions: sample.max_positions_over.unwrap_or(u32::MAX),
            },
        }
    }
}

/// The positions of `requests` whose gap (top-1 minus token, as in
/// [`request_gap_micro_nats`]) is above `bound` micro-nats.
pub fn positions_over(requests: &[LoadSampleRequest], bound: u64) -> u32 {
    let over = requests
        .iter()
        .flat_map(|r| {
            r.reference_top1_micro_nats
                .iter()
                .zip(&r.reference_token_micro_nats)
        })
        .filter(|(top1, token)| u64::try_from(top1.saturating_sub(**token)).unwrap_or(0) > bound)
        .count();
    u32::try_from(over).unwrap_or(u32::MAX)
}

/// The sample's first failure of its bounds, run by run (module docs): `None` when every
/// checked run is within them (runs recorded `not applicable` are skipped). The group and
/// position tests apply to an artifact that carries their bounds (round/v7 on).
pub fn first_divergent(sample: &LoadSample) -> Option<LoadDivergence> {
    sample.runs.iter().find_map(|run| {
        let LoadSampleCheck::Checked { requests } = &run.check else {
            return None;
        };
        if let Some(r) = requests
            .iter()
            .find(|r| r.gap_micro_nats > sample.bound_micro_nats)
        {
            return Some(LoadDivergence::Item {
                run: run.run,
                item: r.item_index,
                gap_micro_nats: r.gap_micro_nats,
            });
        }
        if let Some(bound) = sample.group_bound_micro_nats {
            let gaps: Vec<u64> = requests.iter().map(|r| r.gap_micro_nats).collect();
            let mean = if gaps.is_empty() {
                0
            } else {
                item_distance_micro_nats(&gaps)
            };
            if mean > bound {
                return Some(LoadDivergence::Group {
                    run: run.run,
                    mean_micro_nats: mean,
                });
            }
        }
        if let (Some(bound), Some(max)) =
            (sample.position_bound_micro_nats, sample.max_positions_over)
        {
            let positions = positions_over(requests, bound);
            if positions > max {
                return Some(LoadDivergence::Positions {
                    run: run.run,
                    positions,
                });
            }
        }
        None
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_selection_is_a_pure_function_of_seed_entry_run_and_completed() {
        let seed = Seed32([7; 32]);
        let completed: Vec<u32> = (10..30).collect();
        let picked = select_requests(&seed, 1, 0, &completed, 4);
        assert_eq!(picked, vec![21, 18, 15, 17]);
        assert_eq!(select_requests(&seed, 1, 0, &completed, 4), picked);
        // Another run, another entry, another seed: another draw.
        assert_eq!(
            select_requests(&seed, 1, 1, &completed, 4),
            vec![26, 11, 29, 12]
        );
        assert_eq!(
            select_requests(&seed, 2, 0, &completed, 4),
            vec![13, 10, 25, 12]
        );
        assert_eq!(
            select_requests(&Seed32([8; 32]), 1, 0, &completed, 4),
            vec![13, 14, 29, 24]
        );
        // At most what completed, each once.
        let mut all = select_requests(&seed, 1, 0, &[3, 5], 8);
        all.sort_unstable();
        assert_eq!(all, vec![3, 5]);
        assert_eq!(select_requests(&seed, 1, 0, &[], 8), Vec::<u32>::new());
        assert_eq!(
            select_requests(&seed, 1, 0, &completed, 0),
            Vec::<u32>::new()
        );
    }

    fn artifact(gap_top1: i64) -> LoadSample {
        use crate::model::{LoadSampleRequest, LoadSampleRun, Sha256Hex};
        let seed = Seed32([7; 32]);
        let completed: Vec<u32> = (10..30).collect();
        let requests = select_requests(&seed, 1, 0, &completed, 2)
            .into_iter()
            .map(|item| LoadSampleRequest {
                item_index: item,
                prompt_sha256: Sha256Hex::digest(b"p"),
                output_token_ids: vec![4, 5],
                reference_top1_micro_nats: vec![-100, gap_top1],
                reference_token_micro_nats: vec![-100, -3_000_000],
                gap_micro_nats: request_gap_micro_nats(&[-100, gap_top1], &[-100, -3_000_000])
                    .unwrap(),
                streamed_text: None,
                reference_text: None,
            })
            .collect();
        LoadSample {
            entry: 1,
            sample_size: 2,
            bound_micro_nats: 1_000_000,
            runs: vec![LoadSampleRun {
                run: 0,
                probe: 3,
                completed,
                check: LoadSampleCheck::Checked { requests },
            }],
            text_against_ids: None,
            measured_for: None,
            group_bound_micro_nats: None,
            position_bound_micro_nats: None,
            max_positions_over: None,
        }
    }

    #[test]
    fn from_v7_a_run_fails_on_its_group_mean_then_on_its_positions_over() {
        let seed = Seed32([7; 32]);
        // Each request: gaps 0 and 2 900 000 at its two positions, mean 1 450 000.
        let mut sample = artifact(-100_000);
        sample.bound_micro_nats = 2_000_000;
        assert_eq!(
            first_divergent(&sample),
            None,
            "no v7 bounds: item bound only"
        );
        sample.group_bound_micro_nats = Some(1_449_999);
        sample.position_bound_micro_nats = Some(2_900_000);
        sample.max_positions_over = Some(0);
        let group = LoadDivergence::Group {
            run: 0,
            mean_micro_nats: 1_450_000,
        };
        assert_eq!(recheck(&sample, &seed), Ok(Some(group)));
        assert_eq!(
            group.reason(&sample),
            DisqualificationReason::LoadGroupDiverges {
                run: 0,
                mean_micro_nats: 1_450_000,
                bound_micro_nats: 1_449_999
            }
        );
        sample.group_bound_micro_nats = Some(1_450_000);
        // 2 900 000 is not above the position bound: within.
        assert_eq!(first_divergent(&sample), None);
        sample.position_bound_micro_nats = Some(2_899_999);
        let positions = LoadDivergence::Positions {
            run: 0,
            positions: 2,
        };
        assert_eq!(first_divergent(&sample), Some(positions));
        sample.max_positions_over = Some(2);
        assert_eq!(first_divergent(&sample), None);
        sample.max_positions_over = Some(1);
        assert_eq!(
            positions.reason(&sample),
            DisqualificationReason::LoadPositionsOver {
                run: 0,
                positions: 2,
                max_positions: 1
            }
        );
    }

    #[test]
    fn an_artifact_is_rechecked_from_the_seed_and_its_logprobs() {
        let seed = Seed32([7; 32]);
        // Gaps (0 + 2 900 000) / 2 = 1 450 000 > 1 000 000: the first drawn item diverges.
        let diverging = artifact(-100_000);
        assert_eq!(
            recheck(&diverging, &seed),
            Ok(Some(LoadDivergence::Item {
                run: 0,
                item: 21,
                gap_micro_nats: 1_450_000
            }))
        );
        // Gaps (0 + 1 000 000) / 2 = 500 000: within.
        assert_eq!(recheck(&artifact(-2_000_000), &seed), Ok(None));
        // Another seed draws other items.
        assert!(matches!(
            recheck(&diverging, &Seed32([8; 32])),
            Err(SampleMismatch::Selection { run: 0, .. })
        ));
        // A lowered stored gap is caught.
        let mut lowered = diverging.clone();
        if let LoadSampleCheck::Checked { requests } = &mut lowered.runs[0].check {
            requests[0].gap_micro_nats = 0;
        }
        assert_eq!(
            recheck(&lowered, &seed),
            Err(SampleMismatch::Gap {
                run: 0,
                item: 21,
                expected: Some(1_450_000),
                found: 0
            })
        );
        assert_eq!(keep_pool(&seed, 1, 5, 8), vec![0, 1, 2, 3, 4]);
        assert_eq!(keep_pool(&seed, 1, 1000, 1).len(), 16);
    }

    #[test]
    fn every_pass_whose_last_row_is_measured_is_sampled() {
        let row = |pass, control, status| EntryPass {
            pass,
            control,
            status,
            throughput_milli_rps: None,
            paired_ratio_ppm: None,
            probe_log: None,
            engine_log: None,
            host_load: None,
            gpus: Vec::new(),
            telemetry: None,
        };
        let rows = [
            row(0, false, PassStatus::Measured),
            // Pass 1: invalid, then its re-run measured.
            row(1, false, PassStatus::Invalid),
            row(1, false, PassStatus::Measured),
            // Pass 2: measured, but its control row is no entry's run.
            row(2, false, PassStatus::SlaUnmet),
            row(2, true, PassStatus::Measured),
            row(3, false, PassStatus::Measured),
            row(4, false, PassStatus::Crashed),
        ];
        assert_eq!(sampled_passes(&rows), vec![0, 1, 3]);
        assert_eq!(sampled_passes(&[]), Vec::<u32>::new());
    }

    #[test]
    fn the_gap_is_the_rounded_mean_of_top1_minus_token() {
        // Gaps 0, 1 500 000 and 3: Σ = 1 500 003, mean 500 001 (500 001.0 exactly).
        assert_eq!(
            request_gap_micro_nats(&[-100_000, -200_000, -7], &[-100_000, -1_700_000, -10]),
            Ok(500_001)
        );
        // Half rounds up: gaps 0 and 1 → 1.
        assert_eq!(request_gap_micro_nats(&[0, -1], &[0, -2]), Ok(1));
        // A token above the top-1 (inconsistent) counts 0, not negative.
        assert_eq!(request_gap_micro_nats(&[-5, -5], &[-1, -9]), Ok(2));
        assert_eq!(
            request_gap_micro_nats(&[0], &[]),
            Err(SampleError::PositionCount { top1: 1, token: 0 })
        );
        assert_eq!(
            request_gap_micro_nats(&[], &[]),
            Err(SampleError::NoPositions)
        );
    }
}
