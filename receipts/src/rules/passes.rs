//! The order of a round's runs (content/rounds.md, Passes). A round runs `runs` passes;
//! each pass runs every seated entry once and the baseline twice — its second run is
//! the A/A control. Under `interleaved` passes the order within a pass is a
//! Fisher–Yates shuffle on ChaCha20 keyed by the round's committed `passSeed`, on stream
//! number `pass`, so the verifier redraws it from the revealed seed; under `sequential`
//! passes each entry's runs go back to back.
//!
//! Entry 0 is the baseline. Of the baseline's two slots in a pass, the earlier is its
//! run and the later its control, whichever of the two shuffled items landed there.

use crate::model::{PassOrder, PassSlot, Seed32};
use crate::rules::workload::{chacha, shuffle};

/// One run of a round's schedule: `slot`'s run in pass `pass`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ScheduledRun {
    /// The pass, from 0.
    pub pass: u32,
    /// Whose run it is.
    pub slot: PassSlot,
}

/// The slots of a pass in entry order: the baseline, every other entry by index, then
/// the baseline's control. Empty for no entries.
pub fn entry_order(entries: u32) -> Vec<PassSlot> {
    if entries == 0 {
        return Vec::new();
    }
    let mut slots: Vec<PassSlot> = (0..entries)
        .map(|entry| PassSlot {
            entry,
            control: false,
        })
        .collect();
    slots.push(PassSlot {
        entry: 0,
        control: true,
    });
    slots
}

/// The order of pass `pass` of an interleaved round with `entries` seated entries
/// (`entries + 1` slots): [`entry_order`] shuffled by Fisher–Yates from the last
/// position down (position `i` swaps with a uniform `j ≤ i`,
/// [`crate::rules::workload::uniform`]) on ChaCha20 keyed by `pass_seed` on stream
/// `pass`; then the earlier baseline slot is the run and the later the control.
pub fn pass_order(pass_seed: &Seed32, pass: u32, entries: u32) -> Vec<PassSlot> {
    let mut slots = entry_order(entries);
    let mut rng = chacha(&pass_seed.0, u64::from(pass));
    shuffle(&mut slots, &mut rng);
    let mut seen_baseline = false;
    for slot in &mut slots {
        if slot.entry == 0 {
            slot.control = seen_baseline;
            seen_baseline = true;
        }
    }
    slots
}

/// The order recorded for pass `pass`: [`pass_order`] when interleaved, [`entry_order`]
/// when sequential.
pub fn order_of_pass(
    order: PassOrder,
    pass_seed: &Seed32,
    pass: u32,
    entries: u32,
) -> Vec<PassSlot> {
    match order {
        PassOrder::Interleaved => pass_order(pass_seed, pass, entries),
        PassOrder::Sequential => entry_order(entries),
    }
}

/// Every run of a round of `passes` passes over `entries` entries, in the order they
/// run: interleaved, pass after pass in each pass's [`pass_order`]; sequential, for each
/// slot of [`entry_order`] its runs of every pass back to back (the baseline's runs
/// first, its controls last).
pub fn schedule(
    order: PassOrder,
    pass_seed: &Seed32,
    passes: u32,
    entries: u32,
) -> Vec<ScheduledRun> {
    match order {
        PassOrder::Interleaved => (0..passes)
            .flat_map(|pass| {
                pass_order(pass_seed, pass, entries)
                    .into_iter()
                    .map(move |slot| ScheduledRun { pass, slot })
            })
            .collect(),
        PassOrder::Sequential => entry_order(entries)
            .into_iter()
            .flat_map(|slot| (0..passes).map(move |pass| ScheduledRun { pass, slot }))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(entry: u32, control: bool) -> PassSlot {
        PassSlot { entry, control }
    }

    /// `b` = the baseline's run, `c` = its control, digits = entries.
    fn letters(slots: &[PassSlot]) -> String {
        slots
            .iter()
            .map(|s| match (s.entry, s.control) {
                (0, false) => 'b',
                (0, true) => 'c',
                (n, _) => char::from_digit(n, 10).unwrap_or('?'),
            })
            .collect()
    }

    #[test]
    fn exact_orders_for_a_fixed_seed() {
        let seed = Seed32([7; 32]);
        let orders: Vec<String> = (0..4).map(|p| letters(&pass_order(&seed, p, 4))).collect();
        assert_eq!(orders, ["12bc3", "2bc31", "2b3c1", "2b31c"]);
    }

    #[test]
    fn every_entry_once_and_the_baseline_twice_per_pass() {
        for seed in [Seed32([0; 32]), Seed32([1; 32]), Seed32([0xa5; 32])] {
            for entries in 1..8 {
                for pass in 0..5 {
                    let order = pass_order(&seed, pass, entries);
                    assert_eq!(order.len() as u32, entries + 1);
                    let mut sorted = order.clone();
                    sorted.sort_by_key(|s| (s.entry, s.control));
                    assert_eq!(sorted, {
                        let mut want = entry_order(entries);
                        want.sort_by_key(|s| (s.entry, s.control));
                        want
                    });
                    let baseline: Vec<bool> = order
                        .iter()
                        .filter(|s| s.entry == 0)
                        .map(|s| s.control)
                        .collect();
                    assert_eq!(baseline, [false, true], "run first, control second");
                }
            }
        }
    }

    #[test]
    fn passes_differ_and_seeds_differ() {
        let a = Seed32([1; 32]);
        let b = Seed32([2; 32]);
        let pass0 = pass_order(&a, 0, 6);
        assert!((1..6).any(|p| pass_order(&a, p, 6) != pass0));
        assert_ne!(pass_order(&b, 0, 6), pass0);
        assert_eq!(pass_order(&a, 0, 6), pass0, "a pure function");
    }

    #[test]
    fn sequential_runs_each_entry_back_to_back() {
        let seed = Seed32([7; 32]);
        let runs = schedule(PassOrder::Sequential, &seed, 2, 3);
        let got: Vec<(u32, PassSlot)> = runs.iter().map(|r| (r.pass, r.slot)).collect();
        assert_eq!(
            got,
            [
                (0, slot(0, false)),
                (1, slot(0, false)),
                (0, slot(1, false)),
                (1, slot(1, false)),
                (0, slot(2, false)),
                (1, slot(2, false)),
                (0, slot(0, true)),
                (1, slot(0, true)),
            ]
        );
        assert_eq!(
            letters(&order_of_pass(PassOrder::Sequential, &seed, 1, 3)),
            "b12c"
        );
    }

    #[test]
    fn interleaved_runs_pass_after_pass() {
        let seed = Seed32([7; 32]);
        let runs = schedule(PassOrder::Interleaved, &seed, 3, 4);
        assert_eq!(runs.len(), 15);
        for pass in 0..3 {
            let slots: Vec<PassSlot> = runs[pass as usize * 5..(pass as usize + 1) * 5]
                .iter()
                .inspect(|r| assert_eq!(r.pass, pass))
                .map(|r| r.slot)
                .collect();
            assert_eq!(slots, pass_order(&seed, pass, 4));
        }
        assert!(schedule(PassOrder::Interleaved, &seed, 0, 4).is_empty());
        assert!(pass_order(&seed, 0, 0).is_empty());
    }
}
