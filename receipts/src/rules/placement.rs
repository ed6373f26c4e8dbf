//! Where each run of a parallel pass runs (content/noise.md, Parallel passes): a pass's runs are dealt
//! into waves that run one after another, the runs of a wave at the same time, each on
//! its own lane of `gpus_per_entry` GPUs. Drawn from the round's committed `passSeed`,
//! so the verifier redraws it from the revealed seed.
//!
//! The rule, for pass `p` of a round with `lanes` lanes and the pass's recorded order
//! ([`crate::rules::passes::pass_order`]) of `n` slots:
//! 1. `waves = max(2, ⌈n / lanes⌉)`; the slot at position `i` of the order goes to wave
//!    `⌊i · waves / n⌋` (consecutive, balanced chunks of at most `lanes` slots).
//! 2. The baseline's run and its A/A control never share a wave, so they never share
//!    co-runners: when they do, the control trades places with the first slot of the next
//!    wave (or, in the last wave, the last slot of the one before).
//! 3. Each wave, in wave order, draws a permutation of the lanes (Fisher–Yates on
//!    ChaCha20 keyed by `sha256("referee.placement.v1" ‖ passSeed)`, stream `p`); the
//!    `j`-th slot of the wave (in order position) takes the permutation's `j`-th lane.
//! 4. When the control's lane is the baseline run's lane `l`, the control takes lane
//!    `(l + 1) mod lanes` and the slot of its wave holding that lane, if any, takes `l`:
//!    the A/A control never runs on the baseline's GPUs, so the noise floor includes
//!    GPU-to-GPU differences.

use sha2::{Digest, Sha256};

use crate::model::{ParallelSpec, PassSlot, Seed32};
use crate::rules::workload::{chacha, shuffle};

/// Where one run of a pass runs: its wave and its lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RunPlace {
    /// The wave, from 0: every run of wave `w` starts after every run of wave `w − 1`
    /// ended.
    pub wave: u32,
    /// The lane, from 0: the run's GPUs are `lane · gpus_per_entry ..
    /// (lane + 1) · gpus_per_entry` of the round's GPUs.
    pub lane: u32,
}

/// Why a placement cannot be drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlacementError {
    /// Fewer than two lanes: the A/A control could not run on other GPUs than the
    /// baseline.
    #[error(
        "{gpus} GPUs at {gpus_per_entry} per entry give {lanes} lane(s); parallel passes \
         need at least 2"
    )]
    TooFewLanes {
        /// The round's GPUs.
        gpus: u32,
        /// GPUs per entry.
        gpus_per_entry: u32,
        /// `gpus / gpus_per_entry`.
        lanes: u32,
    },
    /// The order holds no baseline run and control (not a pass's order).
    #[error("the pass order holds no baseline run and A/A control")]
    NoBaseline,
}

/// `gpus / gpus_per_entry`, the runs a wave holds at most
/// ([`crate::model::ParallelSpec::lanes`]).
///
/// Errors: [`PlacementError::TooFewLanes`] below 2 (a `gpus_per_entry` of 0 gives 0).
pub fn lanes(gpus: u32, gpus_per_entry: u32) -> Result<u32, PlacementError> {
    let spec = ParallelSpec {
        gpus,
        gpus_per_entry,
    };
    spec.lanes().ok_or(PlacementError::TooFewLanes {
        gpus,
        gpus_per_entry,
        lanes: gpus.checked_div(gpus_per_entry).unwrap_or(0),
    })
}

/// The waves a pass of `slots` runs over `lanes` lanes takes: `max(2, ⌈slots / lanes⌉)`
/// (at least 2: the baseline and its control never run at the same time).
pub fn waves(slots: u32, lanes: u32) -> u32 {
    slots.div_ceil(lanes.max(1)).max(2)
}

/// The key the lanes are drawn with: `sha256("referee.placement.v1" ‖ passSeed)`, apart
/// from the pass order's own stream.
fn placement_key(pass_seed: &Seed32) -> [u8; 32] {
    let mut key = Sha256::new();
    key.update(b"referee.placement.v1");
    key.update(pass_seed.0);
    key.finalize().into()
}

/// The place of each slot of pass `pass`, aligned with `order` (the pass's recorded
/// order), by the module's rule.
///
/// Errors: [`PlacementError::NoBaseline`] when `order` has no baseline run and control.
pub fn place_pass(
    pass_seed: &Seed32,
    pass: u32,
    order: &[PassSlot],
    lanes: u32,
) -> Result<Vec<RunPlace>, PlacementError> {
    let position = |control: bool| {
        order
            .iter()
            .position(|s| s.entry == 0 && s.control == control)
            .ok_or(PlacementError::NoBaseline)
    };
    let (run, control) = (position(false)?, position(true)?);
    let n = u32::try_from(order.len()).unwrap_or(u32::MAX);
    let waves = waves(n, lanes);
    // 1. Consecutive balanced chunks, `dealt[w]` the positions of wave `w`.
    let mut dealt: Vec<Vec<usize>> = vec![Vec::new(); waves as usize];
    for (i, _) in order.iter().enumerate() {
        let wave = (i as u64 * u64::from(waves) / u64::from(n.max(1))) as usize;
        dealt[wave].push(i);
    }
    // 2. The control leaves the baseline run's wave.
    let wave_of = |dealt: &[Vec<usize>], i: usize| dealt.iter().position(|w| w.contains(&i));
    if let (Some(w), Some(wc)) = (wave_of(&dealt, run), wave_of(&dealt, control))
        && w == wc
    {
        let (other, at) = if w + 1 < dealt.len() && !dealt[w + 1].is_empty() {
            (w + 1, 0)
        } else {
            (w - 1, dealt[w - 1].len() - 1)
        };
        let traded = dealt[other][at];
        let own = dealt[w].iter().position(|&i| i == control).unwrap_or(0);
        dealt[other][at] = control;
        dealt[w][own] = traded;
        dealt[other].sort_unstable();
        dealt[w].sort_unstable();
    }
    // 3. Lanes, one permutation per wave.
    let mut rng = chacha(&placement_key(pass_seed), u64::from(pass));
    let mut places = vec![RunPlace { wave: 0, lane: 0 }; order.len()];
    let mut run_lane = None;
    for (wave, positions) in dealt.iter().enumerate() {
        let mut perm: Vec<u32> = (0..lanes).collect();
        shuffle(&mut perm, &mut rng);
        for (j, &i) in positions.iter().enumerate() {
            places[i] = RunPlace {
                wave: wave as u32,
                lane: perm[j],
            };
        }
        if positions.contains(&run) {
            run_lane = Some(places[run].lane);
        }
    }
    // 4. The control off the baseline's lane (they sit in different waves, so the run's
    // lane is known whichever wave comes first).
    if run_lane == Some(places[control].lane) {
        let wave = places[control].wave;
        let lane = places[control].lane;
        let next = (lane + 1) % lanes;
        if let Some(holder) =
            (0..order.len()).find(|&i| places[i].wave == wave && places[i].lane == next)
        {
            places[holder].lane = lane;
        }
        places[control].lane = next;
    }
    Ok(places)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::passes::pass_order;

    /// `(wave, lane)` of each slot, in order.
    fn places(seed: &Seed32, pass: u32, entries: u32, lanes: u32) -> Vec<(u32, u32)> {
        let order = pass_order(seed, pass, entries);
        place_pass(seed, pass, &order, lanes)
            .unwrap()
            .into_iter()
            .map(|p| (p.wave, p.lane))
            .collect()
    }

    #[test]
    fn exact_places_for_a_fixed_seed() {
        // Pass 0's order is `12bc3` (rules::passes); 5 slots over 2 lanes are 3 waves of
        // positions {0, 1}, {2, 3}, {4}: the control (position 3) shares the baseline's
        // wave and trades places with entry 3, the first of the next wave.
        let seed = Seed32([7; 32]);
        assert_eq!(
            places(&seed, 0, 4, 2),
            [(0, 0), (0, 1), (1, 0), (2, 1), (1, 1)]
        );
        // Pass 1's order is `2bc31`; over 4 lanes, two waves of positions {0, 1, 2} and
        // {3, 4}: the control (position 2) trades places with entry 3 (position 3).
        assert_eq!(
            places(&seed, 1, 4, 4),
            [(0, 2), (0, 1), (1, 2), (0, 3), (1, 0)]
        );
    }

    #[test]
    fn lanes_need_two() {
        assert_eq!(lanes(2, 1), Ok(2));
        assert_eq!(lanes(8, 2), Ok(4));
        assert_eq!(lanes(9, 2), Ok(4));
        assert_eq!(
            lanes(2, 2),
            Err(PlacementError::TooFewLanes {
                gpus: 2,
                gpus_per_entry: 2,
                lanes: 1
            })
        );
        assert!(lanes(4, 0).is_err());
        assert_eq!(waves(6, 2), 3);
        assert_eq!(waves(6, 4), 2);
        assert_eq!(waves(6, 8), 2);
        assert_eq!(waves(11, 8), 2);
        assert_eq!(waves(11, 2), 6);
    }

    /// For many seeds, pass counts, entries and lanes: every wave holds at most `lanes`
    /// runs on distinct lanes, waves are numbered without gaps, the baseline and its
    /// control sit in different waves on different lanes, and over six passes an entry
    /// stays on one lane about as rarely as uniform lanes would (`lanes⁻⁵`: 3 % at 2
    /// lanes, 0.4 % at 3).
    #[test]
    fn the_rules_invariants_hold() {
        let (mut stuck, mut entries_seen) = (0u32, 0u32);
        for byte in 0..40u8 {
            let seed = Seed32([byte; 32]);
            for entries in 1..9u32 {
                for lanes in 2..9u32 {
                    let mut lanes_of_entry =
                        vec![std::collections::BTreeSet::new(); entries as usize];
                    for pass in 0..6 {
                        let order = pass_order(&seed, pass, entries);
                        let placed = place_pass(&seed, pass, &order, lanes).unwrap();
                        let n = order.len() as u32;
                        let wave_count = waves(n, lanes);
                        for wave in 0..wave_count {
                            let mut used: Vec<u32> = placed
                                .iter()
                                .filter(|p| p.wave == wave)
                                .map(|p| p.lane)
                                .collect();
                            assert!(!used.is_empty() && used.len() as u32 <= lanes);
                            used.sort_unstable();
                            used.dedup();
                            assert_eq!(
                                used.len(),
                                placed.iter().filter(|p| p.wave == wave).count()
                            );
                            assert!(used.iter().all(|&l| l < lanes));
                        }
                        assert!(placed.iter().all(|p| p.wave < wave_count));
                        let at = |control: bool| {
                            let i = order
                                .iter()
                                .position(|s| s.entry == 0 && s.control == control)
                                .unwrap();
                            placed[i]
                        };
                        let (run, control) = (at(false), at(true));
                        assert_ne!(run.wave, control.wave, "{byte} {entries} {lanes} {pass}");
                        assert_ne!(run.lane, control.lane, "{byte} {entries} {lanes} {pass}");
                        for (slot, place) in order.iter().zip(&placed) {
                            if !slot.control {
                                lanes_of_entry[slot.entry as usize].insert(place.lane);
                            }
                        }
                    }
                    entries_seen += entries;
                    stuck += lanes_of_entry.iter().filter(|met| met.len() < 2).count() as u32;
                }
            }
        }
        assert_eq!(entries_seen, 10_080);
        assert!(stuck * 100 <= entries_seen, "{stuck} of {entries_seen}");
    }

    #[test]
    fn another_seed_places_differently_and_an_order_without_a_baseline_is_refused() {
        let a = places(&Seed32([7; 32]), 0, 5, 2);
        let b = places(&Seed32([8; 32]), 0, 5, 2);
        assert_ne!(a, b);
        let order = [PassSlot {
            entry: 1,
            control: false,
        }];
        assert_eq!(
            place_pass(&Seed32([7; 32]), 0, &order, 2),
            Err(PlacementError::NoBaseline)
        );
    }
}
