//! Cost scoring of the s1-fast-speed track (content/s1-fast-speed.md, The cost rule): the
//! price of an entry's declared resources, its cost per decision, the gates a challenger
//! must pass (a failure disqualifies it, with its typed reason), and the seat on cost
//! that the round's outcome acts on (`rules::outcome`, step 6) — all in integers, so the
//! runner and the verifier get the same numbers.
//!
//! Units: prices are micro-dollars (µ$) per hour, throughputs milli-decisions per second
//! (a decide round's `throughputMilliRps`), and a cost per decision is micro-dollars per
//! million decisions: `price ÷ (3,600 × decisions/s)` scaled by 10⁶, rounded up so a cost
//! is never understated. The seat compares exact rationals, not the rounded costs.

use crate::model::{
    CostSpec, DisqualificationReason, Entry, EntryStatus, FastEntry, NoiseCheck, PricePerHour,
    ResourceRequest, Role,
};
use crate::rules::agreement::agreement_passes;
use crate::rules::capability::capability_passes;
use crate::rules::score::overtakes;

/// Basis points in one (100 %).
const BP_ONE: u128 = 10_000;

/// Why a resource request has no price.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CostError {
    /// GPUs of a class the campaign does not price.
    #[error("GPU class `{class}` has no price in the campaign")]
    UnpricedClass {
        /// The class as declared (escape it before printing).
        class: String,
    },
    /// The price does not fit 64 bits of micro-dollars per hour.
    #[error("the price of the declared resources overflows")]
    Overflow,
}

/// The price of `request` for one hour, micro-dollars: `gpus × gpu[class] + cpus × cpu +
/// memory_gib × memory_gib`. A request of no GPU needs no class.
///
/// Errors: [`CostError::UnpricedClass`] for GPUs of a class not in `prices.gpu`,
/// [`CostError::Overflow`] past `u64::MAX`.
pub fn price_micro_usd_per_hour(
    request: &ResourceRequest,
    prices: &PricePerHour,
) -> Result<u64, CostError> {
    let gpu_price = if request.gpus == 0 {
        0
    } else {
        *prices
            .gpu
            .get(&request.gpu_class)
            .ok_or_else(|| CostError::UnpricedClass {
                class: request.gpu_class.clone(),
            })?
    };
    let total = u128::from(request.gpus) * u128::from(gpu_price)
        + u128::from(request.cpus) * u128::from(prices.cpu)
        + u128::from(request.memory_gib) * u128::from(prices.memory_gib);
    u64::try_from(total).map_err(|_| CostError::Overflow)
}

/// Cost per decision, micro-dollars per million decisions, rounded up:
/// `⌈price × 10⁹ ÷ (3,600 × throughput_milli_rps)⌉` (10⁶ decisions, and 10³ for
/// milli-decisions). `None` at zero throughput (no decision has a cost) or past
/// `u64::MAX`.
pub fn cost_micro_usd_per_million(
    price_micro_usd_per_hour: u64,
    throughput_milli_rps: u64,
) -> Option<u64> {
    if throughput_milli_rps == 0 {
        return None;
    }
    let numerator = u128::from(price_micro_usd_per_hour) * 1_000_000_000;
    let denominator = 3_600 * u128::from(throughput_milli_rps);
    u64::try_from(numerator.div_ceil(denominator)).ok()
}

/// An entry as the cost rule sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Priced {
    /// The price of its declared resources, micro-dollars per hour.
    pub price_micro_usd_per_hour: u64,
    /// Its throughput, milli-decisions/s.
    pub throughput_milli_rps: u64,
}

/// What the cost rule says of a challenger against the incumbent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CostVerdict {
    /// At least `margin_bp` cheaper per decision at a throughput not below the
    /// incumbent's within the noise floor: it takes the seat on cost.
    Seats,
    /// Its throughput is below the incumbent's by more than the noise floor.
    Slower,
    /// Not cheaper per decision by the margin.
    NotCheaper,
    /// It or the incumbent has no throughput, so no cost per decision to compare.
    NoThroughput,
}

/// The seat on cost (content/s1-fast-speed.md): a challenger takes it when its throughput
/// is not below the incumbent's within the round's noise floor,
/// `T_c × 10⁴ ≥ T_i × (10⁴ − noise_floor_bp)`, and its cost per decision is at least
/// `margin_bp` lower, `P_c / T_c ≤ (P_i / T_i) × (10⁴ − margin_bp) / 10⁴`, compared
/// exactly as `P_c × T_i × 10⁴ ≤ P_i × T_c × (10⁴ − margin_bp)`. The noise floor is the
/// round's A/A spread (`noise.aaSpreadBp`); a floor or margin of 100 % or more counts as
/// 100 %.
pub fn cost_verdict(
    challenger: Priced,
    incumbent: Priced,
    margin_bp: u32,
    noise_floor_bp: u64,
) -> CostVerdict {
    if challenger.throughput_milli_rps == 0 || incumbent.throughput_milli_rps == 0 {
        return CostVerdict::NoThroughput;
    }
    let floor = BP_ONE - u128::from(noise_floor_bp).min(BP_ONE);
    if u128::from(challenger.throughput_milli_rps) * BP_ONE
        < u128::from(incumbent.throughput_milli_rps) * floor
    {
        return CostVerdict::Slower;
    }
    let keep = BP_ONE - u128::from(margin_bp).min(BP_ONE);
    let challenger_side = u128::from(challenger.price_micro_usd_per_hour)
        * u128::from(incumbent.throughput_milli_rps)
        * BP_ONE;
    let incumbent_side = u128::from(incumbent.price_micro_usd_per_hour)
        * u128::from(challenger.throughput_milli_rps)
        * keep;
    if challenger_side <= incumbent_side {
        CostVerdict::Seats
    } else {
        CostVerdict::NotCheaper
    }
}

/// The challenger a cost campaign seats on cost among `challengers` (entry index and
/// priced figures, each already through both gates): of those [`cost_verdict`] seats,
/// the lowest cost per decision (`P / T`, compared exactly), the lowest index on a tie.
/// `None` when none is seated.
pub fn cost_seat(
    challengers: &[(u32, Priced)],
    incumbent: Priced,
    margin_bp: u32,
    noise_floor_bp: u64,
) -> Option<u32> {
    challengers
        .iter()
        .filter(|(_, c)| {
            cost_verdict(*c, incumbent, margin_bp, noise_floor_bp) == CostVerdict::Seats
        })
        .min_by(|(ia, a), (ib, b)| {
            // a cheaper than b per decision: P_a × T_b < P_b × T_a.
            let lhs = u128::from(a.price_micro_usd_per_hour) * u128::from(b.throughput_milli_rps);
            let rhs = u128::from(b.price_micro_usd_per_hour) * u128::from(a.throughput_milli_rps);
            lhs.cmp(&rhs).then(ia.cmp(ib))
        })
        .map(|(index, _)| *index)
}

/// The noise floor of a round's seat on cost, basis points: its A/A spread
/// (`noise.aaSpreadBp`, 0 when unmeasured) or the campaign's `cost.min_noise_floor_bp`,
/// whichever is larger.
pub fn noise_floor_bp(noise: Option<&NoiseCheck>, spec: &CostSpec) -> u64 {
    let measured = noise.and_then(|n| n.aa_spread_bp).unwrap_or(0);
    measured.max(u64::from(spec.min_noise_floor_bp))
}

/// The row of the entry the gates and the cost rule compare against, from a round's
/// `entries` and their `fastTrack` `rows` (matched by index): the entry of role
/// incumbent, else the baseline (no leader yet: the baseline holds the seat). `None` when
/// that entry has no row.
pub fn incumbent_of<'a>(
    entries: &'a [Entry],
    rows: &'a [FastEntry],
) -> Option<(&'a Entry, &'a FastEntry)> {
    let entry = entries
        .iter()
        .find(|e| e.role == Role::Incumbent)
        .or_else(|| entries.iter().find(|e| e.role == Role::Baseline))?;
    Some((entry, rows.iter().find(|r| r.index == entry.index)?))
}

/// The gate a challenger's `row` fails against the `incumbent`'s row
/// (content/s1-fast-speed.md, The gates), capability first: the typed reason that
/// disqualifies it, with both scores; `None` when it passes both.
pub fn gate_failure(row: &FastEntry, incumbent: &FastEntry) -> Option<DisqualificationReason> {
    if !capability_passes(row.capability_ppm, incumbent.capability_ppm) {
        return Some(DisqualificationReason::CapabilityBelowIncumbent {
            capability_ppm: row.capability_ppm,
            incumbent_ppm: incumbent.capability_ppm,
        });
    }
    (!agreement_passes(row.agreement_ppm, incumbent.agreement_ppm)).then_some(
        DisqualificationReason::AgreementBelowIncumbent {
            agreement_ppm: row.agreement_ppm,
            incumbent_ppm: incumbent.agreement_ppm,
        },
    )
}

/// The challengers of a round of an s1-fast-speed campaign that a gate disqualifies:
/// each scored challenger of `entries` whose row in `rows` fails [`gate_failure`]
/// against the incumbent's (the entry of role incumbent, else the baseline), with the
/// reason, in entry order. The runner disqualifies them before the passes decide, so no
/// rule seats them; the verifier checks each against its entry.
pub fn round_gate_failures(
    entries: &[Entry],
    rows: &[FastEntry],
) -> Vec<(u32, DisqualificationReason)> {
    let Some((_, incumbent)) = incumbent_of(entries, rows) else {
        return Vec::new();
    };
    entries
        .iter()
        .filter(|e| e.role == Role::Challenger && e.status == EntryStatus::Scored)
        .filter_map(|e| {
            let row = rows.iter().find(|r| r.index == e.index)?;
            Some((e.index, gate_failure(row, incumbent)?))
        })
        .collect()
}

/// The challenger a round of an s1-fast-speed campaign seats on cost, from its entries
/// and their `fastTrack` rows (matched by index): the incumbent is the entry of role
/// incumbent, else the baseline; a challenger counts when it is scored, has a row and a
/// throughput, and passes both gates against the incumbent's row (capability and
/// agreement). When one of those overtakes the incumbent on throughput at
/// `overtake_margin_bp`, the seat is taken that way and none is seated on cost; else
/// [`cost_seat`] at the cost `margin_bp` and the round's `noise_floor_bp`. The runner
/// records it and the verifier recomputes it with this one function.
pub fn round_cost_seat(
    entries: &[Entry],
    rows: &[FastEntry],
    (overtake_margin_bp, margin_bp): (u32, u32),
    noise_floor_bp: u64,
) -> Option<u32> {
    let (incumbent_entry, incumbent_row) = incumbent_of(entries, rows)?;
    let row_of = |index: u32| rows.iter().find(|r| r.index == index);
    let incumbent = Priced {
        price_micro_usd_per_hour: incumbent_row.price_micro_usd_per_hour,
        throughput_milli_rps: incumbent_entry.throughput_milli_rps?,
    };
    let through_gates: Vec<(u32, Priced)> = entries
        .iter()
        .filter(|e| e.role == Role::Challenger && e.status == EntryStatus::Scored)
        .filter_map(|e| {
            let row = row_of(e.index)?;
            gate_failure(row, incumbent_row).is_none().then_some((
                e.index,
                Priced {
                    price_micro_usd_per_hour: row.price_micro_usd_per_hour,
                    throughput_milli_rps: e.throughput_milli_rps?,
                },
            ))
        })
        .collect();
    let on_throughput = through_gates.iter().any(|(_, c)| {
        overtakes(
            c.throughput_milli_rps,
            incumbent.throughput_milli_rps,
            overtake_margin_bp,
        )
    });
    if on_throughput {
        return None;
    }
    cost_seat(&through_gates, incumbent, margin_bp, noise_floor_bp)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prices() -> PricePerHour {
        PricePerHour {
            // $2.00 per H100-hour, $0.70 per L4-hour, $0.04 per core-hour, $0.005 per
            // GiB-hour.
            gpu: [("h100".to_owned(), 2_000_000), ("l4".to_owned(), 700_000)].into(),
            cpu: 40_000,
            memory_gib: 5_000,
        }
    }

    fn request(gpus: u32, class: &str, cpus: u32, memory_gib: u32) -> ResourceRequest {
        ResourceRequest {
            gpus,
            gpu_class: class.to_owned(),
            cpus,
            memory_gib,
        }
    }

    #[test]
    fn the_price_adds_every_declared_resource() {
        // 1 × 2 000 000 + 8 × 40 000 + 64 × 5 000 = 2 640 000 µ$/h.
        assert_eq!(
            price_micro_usd_per_hour(&request(1, "h100", 8, 64), &prices()),
            Ok(2_640_000)
        );
        // 2 × 700 000 + 4 × 40 000 + 32 × 5 000 = 1 720 000 µ$/h.
        assert_eq!(
            price_micro_usd_per_hour(&request(2, "l4", 4, 32), &prices()),
            Ok(1_720_000)
        );
        // No GPU needs no class.
        assert_eq!(
            price_micro_usd_per_hour(&request(0, "", 2, 1), &prices()),
            Ok(85_000)
        );
        assert_eq!(
            price_micro_usd_per_hour(&request(1, "a100", 8, 64), &prices()),
            Err(CostError::UnpricedClass {
                class: "a100".into()
            })
        );
        let dear = PricePerHour {
            gpu: [("x".to_owned(), u64::MAX)].into(),
            cpu: 0,
            memory_gib: 0,
        };
        assert_eq!(
            price_micro_usd_per_hour(&request(2, "x", 0, 0), &dear),
            Err(CostError::Overflow)
        );
    }

    #[test]
    fn cost_per_decision_is_price_over_decisions_per_hour_rounded_up() {
        // 2 640 000 µ$/h at 100 decisions/s (360 000 an hour): 7.333… µ$ a decision,
        // 7 333 333.3… µ$ per million, rounded up.
        assert_eq!(
            cost_micro_usd_per_million(2_640_000, 100_000),
            Some(7_333_334)
        );
        // 3 600 µ$/h at 1 decision/s: exactly 1 µ$ a decision.
        assert_eq!(cost_micro_usd_per_million(3_600, 1_000), Some(1_000_000));
        assert_eq!(cost_micro_usd_per_million(2_640_000, 0), None);
        assert_eq!(cost_micro_usd_per_million(0, 5), Some(0));
    }

    /// The test: a cheaper entry that is slower per GPU (two L4s giving about
    /// what one H100 gives) wins on cost, while a throughput campaign, wanting 5 % more
    /// decisions/s, would not seat it.
    #[test]
    fn a_cheaper_slower_per_gpu_entry_wins_on_cost_but_not_on_throughput() {
        let incumbent = Priced {
            price_micro_usd_per_hour: price_micro_usd_per_hour(
                &request(1, "h100", 8, 64),
                &prices(),
            )
            .expect("priced"),
            throughput_milli_rps: 100_000,
        };
        // 49 decisions/s per GPU against the incumbent's 100: 98 % of its throughput,
        // within a noise floor of 300 bp.
        let challenger = Priced {
            price_micro_usd_per_hour: price_micro_usd_per_hour(&request(2, "l4", 4, 32), &prices())
                .expect("priced"),
            throughput_milli_rps: 98_000,
        };
        assert!(!overtakes(98_000, 100_000, 500));
        assert_eq!(
            cost_micro_usd_per_million(challenger.price_micro_usd_per_hour, 98_000),
            Some(4_875_284)
        );
        assert_eq!(
            cost_micro_usd_per_million(incumbent.price_micro_usd_per_hour, 100_000),
            Some(7_333_334)
        );
        assert_eq!(
            cost_verdict(challenger, incumbent, 500, 300),
            CostVerdict::Seats
        );
        assert_eq!(cost_seat(&[(2, challenger)], incumbent, 500, 300), Some(2));
        // With a noise floor of 100 bp, 98 % is below the incumbent's throughput.
        assert_eq!(
            cost_verdict(challenger, incumbent, 500, 100),
            CostVerdict::Slower
        );
        assert_eq!(cost_seat(&[(2, challenger)], incumbent, 500, 100), None);
    }

    #[test]
    fn the_margin_is_exact_at_its_edge() {
        let incumbent = Priced {
            price_micro_usd_per_hour: 1_000_000,
            throughput_milli_rps: 10_000,
        };
        // Same throughput, exactly 5 % cheaper: seats; one µ$/h dearer: does not.
        let at_edge = Priced {
            price_micro_usd_per_hour: 950_000,
            throughput_milli_rps: 10_000,
        };
        let over = Priced {
            price_micro_usd_per_hour: 950_001,
            ..at_edge
        };
        assert_eq!(cost_verdict(at_edge, incumbent, 500, 0), CostVerdict::Seats);
        assert_eq!(
            cost_verdict(over, incumbent, 500, 0),
            CostVerdict::NotCheaper
        );
        // A faster entry at the same price is cheaper per decision: 10 526 ≥ 10 000 /
        // 0.95 = 10 526.3…, so 10 527 decisions/s seats and 10 526 does not.
        let faster = |t| Priced {
            price_micro_usd_per_hour: 1_000_000,
            throughput_milli_rps: t,
        };
        assert_eq!(
            cost_verdict(faster(10_527), incumbent, 500, 0),
            CostVerdict::Seats
        );
        assert_eq!(
            cost_verdict(faster(10_526), incumbent, 500, 0),
            CostVerdict::NotCheaper
        );
        // Zero noise floor: one milli-decision/s slower is slower.
        let slower = Priced {
            price_micro_usd_per_hour: 1,
            throughput_milli_rps: 9_999,
        };
        assert_eq!(cost_verdict(slower, incumbent, 500, 0), CostVerdict::Slower);
        assert_eq!(
            cost_verdict(faster(0), incumbent, 500, 0),
            CostVerdict::NoThroughput
        );
    }

    #[test]
    fn the_cheapest_seated_challenger_takes_the_seat() {
        let incumbent = Priced {
            price_micro_usd_per_hour: 1_000_000,
            throughput_milli_rps: 10_000,
        };
        let cheap = Priced {
            price_micro_usd_per_hour: 800_000,
            throughput_milli_rps: 10_000,
        };
        let cheaper = Priced {
            price_micro_usd_per_hour: 700_000,
            throughput_milli_rps: 10_000,
        };
        let not_cheap = Priced {
            price_micro_usd_per_hour: 990_000,
            throughput_milli_rps: 10_000,
        };
        assert_eq!(
            cost_seat(
                &[(1, cheap), (2, cheaper), (3, not_cheap)],
                incumbent,
                500,
                0
            ),
            Some(2)
        );
        // A tie goes to the lower index.
        assert_eq!(
            cost_seat(&[(4, cheap), (3, cheap)], incumbent, 500, 0),
            Some(3)
        );
        assert_eq!(cost_seat(&[(3, not_cheap)], incumbent, 500, 0), None);
    }
}
