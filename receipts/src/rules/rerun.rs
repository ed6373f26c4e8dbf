//! The rules of a re-run (content/verifying.md, Re-running a round), pure integer
//! arithmetic: the speed tolerance from the two rounds' measured noise floors, whether a
//! paired score or a correctness distance stayed within its rule, how far a decision's
//! margin lay from the tolerance, and how findings make a part's verdict and parts the
//! overall one. `referee verify --rerun` applies them; the verifier recomputes the
//! tolerance and the verdicts of a rerun bundle with them.

use crate::model::{Comparison, Finding, RerunVerdict, Severity, SpeedTolerance, ToleranceBasis};

/// The factor `k` of the noise tolerance `k · √(aa_original² + aa_rerun²)`.
pub const NOISE_FACTOR: u32 = 3;

/// How far a correctness item's distance may move where bit-exactness is not promised
/// (another backend, or other CPU features), micro-nats: 1e-4 nats.
pub const ITEM_TOLERANCE_MICRO_NATS: u64 = 100;

/// Parts per million in one basis point.
const PPM_PER_BP: u64 = 100;

/// The speed tolerance from the A/A spreads of the original round and of the re-run
/// (basis points, `None` where a round measured none), capped at [`margin_cap_bp`] of the
/// campaign's overtake margin `margin_bp`: `min(⌈NOISE_FACTOR · √(original² + rerun²)⌉,
/// cap)` when both measured one, else `min(drift_bound_bp, cap)` (with one run per entry
/// there is no spread). The cap is why a re-run can say BAD: a tolerance as wide as the
/// margin would forgive a seat moved by a whole margin, and the original's A/A spread,
/// which enters the tolerance, is the original signer's word.
pub fn speed_tolerance(
    original_aa_spread_bp: Option<u64>,
    rerun_aa_spread_bp: Option<u64>,
    drift_bound_bp: u32,
    margin_bp: u32,
) -> SpeedTolerance {
    let basis = match (original_aa_spread_bp, rerun_aa_spread_bp) {
        (Some(original), Some(rerun)) => ToleranceBasis::Noise {
            original_aa_spread_bp: original,
            rerun_aa_spread_bp: rerun,
            factor: NOISE_FACTOR,
        },
        _ => ToleranceBasis::DriftBound {
            bound_bp: drift_bound_bp,
        },
    };
    tolerance_of(&basis, Some(margin_cap_bp(margin_bp)))
}

/// The cap of the speed tolerance, basis points: `⌊2 · margin_bp / 3⌋`. Two thirds
/// balances the two errors a seat verdict can make (content/verifying.md, How often a
/// re-run says BAD): an honest re-run is called BAD only when the noise moves the two
/// rounds' medians more than the cap apart, and a seat flipped by one margin is called
/// BAD unless the noise brings the re-run's median within a third of a margin of the
/// claim.
pub fn margin_cap_bp(margin_bp: u32) -> u32 {
    u32::try_from(u64::from(margin_bp) * 2 / 3).unwrap_or(u32::MAX)
}

/// The tolerance `basis` gives under the cap `cap_bp` (`None`: uncapped, as re-runs
/// sealed before the cap derived it), as [`speed_tolerance`] derives it: what a verifier
/// compares a rerun bundle's `tolerance` with.
pub fn tolerance_of(basis: &ToleranceBasis, cap_bp: Option<u32>) -> SpeedTolerance {
    let uncapped = match basis {
        ToleranceBasis::Noise {
            original_aa_spread_bp,
            rerun_aa_spread_bp,
            ..
        } => {
            let (original, rerun) = (
                u128::from(*original_aa_spread_bp),
                u128::from(*rerun_aa_spread_bp),
            );
            let factor = u128::from(NOISE_FACTOR);
            let scaled = (original * original + rerun * rerun) * factor * factor;
            u64::try_from(ceil_sqrt(scaled)).unwrap_or(u64::MAX)
        }
        ToleranceBasis::DriftBound { bound_bp } => u64::from(*bound_bp),
    };
    SpeedTolerance {
        tolerance_bp: cap_bp.map_or(uncapped, |cap| uncapped.min(u64::from(cap))),
        basis: basis.clone(),
        cap_bp,
    }
}

/// `⌈√n⌉`.
fn ceil_sqrt(n: u128) -> u128 {
    let root = n.isqrt();
    if root * root < n { root + 1 } else { root }
}

/// The tolerance in ppm of a paired score: `100 × tolerance_bp`.
pub fn tolerance_ppm(tolerance: &SpeedTolerance) -> u64 {
    tolerance.tolerance_bp.saturating_mul(PPM_PER_BP)
}

/// Whether a paired score moved by at most `tolerance_ppm` (both ppm). Equality holds.
pub fn speedup_within(original_ppm: i64, rerun_ppm: i64, tolerance_ppm: u64) -> bool {
    (i128::from(rerun_ppm) - i128::from(original_ppm)).unsigned_abs() <= u128::from(tolerance_ppm)
}

/// How far a correctness item's distance may move, micro-nats: 0 (bit-exact) when
/// `exact` (the built-in engine on identical CPU features), else
/// [`ITEM_TOLERANCE_MICRO_NATS`].
pub fn item_tolerance_micro_nats(exact: bool) -> u64 {
    if exact { 0 } else { ITEM_TOLERANCE_MICRO_NATS }
}

/// Whether a correctness item's distance moved by at most `tolerance_micro_nats`.
pub fn item_within(original_micro_nats: u64, rerun_micro_nats: u64, tolerance: u64) -> bool {
    original_micro_nats.abs_diff(rerun_micro_nats) <= tolerance
}

/// How far a challenger's median paired ratio against the incumbent lay from the overtake
/// margin, ppm: `median_ratio_ppm − (10⁶ + 100 · margin_bp)` (negative: short of it), from
/// the ratio's median as `paired_score` gives it (ratio − 10⁶).
pub fn margin_distance_ppm(median_vs_incumbent_ppm: i64, margin_bp: u32) -> i64 {
    let margin = i64::from(margin_bp).saturating_mul(PPM_PER_BP as i64);
    median_vs_incumbent_ppm.saturating_sub(margin)
}

/// How far a re-run's own medians contradict the original's seat decision when the two
/// seat differently, ppm, never negative (0: the medians do not contradict it, only the
/// rule's per-pass floor or a tie moved the seat). Both medians are the re-run's, against
/// the original's incumbent, as `paired_score` gives them (ratio − 10⁶):
/// `original_winner_ppm` of the challenger the original seated (`None`: it seated none),
/// `rerun_winner_ppm` of another challenger the re-run seated (`None`: none, or the same).
/// - the original seated X: how far the re-run put X short of the margin, or behind the
///   challenger the re-run seated, whichever is more;
/// - the original seated none: how far the re-run put its winner beyond the margin.
///
/// `None` when neither seated a challenger by its margin (the seat moved for another
/// rule, which no tolerance excuses). The original's own numbers do not enter: they are
/// what a re-run checks, so an original that claims a median just past the margin cannot
/// shelter inside the tolerance.
pub fn seat_contradiction_ppm(
    original_winner_ppm: Option<i64>,
    rerun_winner_ppm: Option<i64>,
    margin_bp: u32,
) -> Option<i64> {
    let contradiction = match (original_winner_ppm, rerun_winner_ppm) {
        (Some(x), Some(z)) => (-margin_distance_ppm(x, margin_bp)).max(z.saturating_sub(x)),
        (Some(x), None) => -margin_distance_ppm(x, margin_bp),
        (None, Some(z)) => margin_distance_ppm(z, margin_bp),
        (None, None) => return None,
    };
    Some(contradiction.max(0))
}

/// Whether a decision whose margin lay `distance_ppm` from the margin is only noise
/// under `tolerance_ppm`: `|distance| ≤ tolerance`.
pub fn inside_tolerance(distance_ppm: i64, tolerance_ppm: u64) -> bool {
    u128::from(distance_ppm.unsigned_abs()) <= u128::from(tolerance_ppm)
}

/// The severity of a seat the re-run moved, from [`seat_contradiction_ppm`]'s
/// `contradiction_ppm`: NOISY when it lies inside the tolerance, BAD when beyond it or
/// when no challenger's margin decided.
pub fn seat_severity(contradiction_ppm: Option<i64>, tolerance_ppm: u64) -> Severity {
    match contradiction_ppm {
        Some(c) if inside_tolerance(c, tolerance_ppm) => Severity::Noisy,
        _ => Severity::Bad,
    }
}

/// The verdict of a part that was tried, from its findings: BAD with a bad finding, else
/// NOISY with a noisy one, else GOOD.
pub fn verdict_of(findings: &[Finding]) -> RerunVerdict {
    if findings.iter().any(|f| f.severity == Severity::Bad) {
        RerunVerdict::Bad
    } else if findings.iter().any(|f| f.severity == Severity::Noisy) {
        RerunVerdict::Noisy
    } else {
        RerunVerdict::Good
    }
}

/// The overall verdict of a re-run from its round part and its entries: BAD when any
/// part is BAD, else FAIL when any is, else UNKWN when no entry was tried, else NOISY when
/// any part is, else GOOD. UNKWN entries beside tried ones do not change it (they are
/// listed).
pub fn overall_verdict<'a>(
    round: &Comparison,
    entries: impl IntoIterator<Item = &'a Comparison>,
) -> RerunVerdict {
    let entries: Vec<RerunVerdict> = entries.into_iter().map(|c| c.verdict).collect();
    let parts = || std::iter::once(round.verdict).chain(entries.iter().copied());
    if parts().any(|v| v == RerunVerdict::Bad) {
        RerunVerdict::Bad
    } else if parts().any(|v| v == RerunVerdict::Fail) {
        RerunVerdict::Fail
    } else if entries.iter().all(|v| *v == RerunVerdict::Unkwn) {
        RerunVerdict::Unkwn
    } else if parts().any(|v| v == RerunVerdict::Noisy) {
        RerunVerdict::Noisy
    } else {
        RerunVerdict::Good
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FindingKind;

    #[test]
    fn the_tolerance_is_k_times_the_root_sum_of_squares_rounded_up() {
        // 3 · √(300² + 400²) = 3 · 500, under a margin of 3 000 bp (capped at 2 000).
        let t = speed_tolerance(Some(300), Some(400), 5_000, 3_000);
        assert_eq!(t.tolerance_bp, 1_500);
        assert_eq!(
            t.basis,
            ToleranceBasis::Noise {
                original_aa_spread_bp: 300,
                rerun_aa_spread_bp: 400,
                factor: 3
            }
        );
        assert_eq!(t.cap_bp, Some(2_000));
        assert_eq!(margin_cap_bp(1_000), 666);
        assert_eq!(margin_cap_bp(u32::MAX), 2_863_311_530);
        // 3 · √(1 + 1) = 4.24…, rounded up.
        assert_eq!(speed_tolerance(Some(1), Some(1), 0, 100).tolerance_bp, 5);
        assert_eq!(speed_tolerance(Some(0), Some(0), 9, 100).tolerance_bp, 0);
        assert_eq!(tolerance_of(&t.basis, t.cap_bp), t);
    }

    #[test]
    fn the_tolerance_never_exceeds_the_margin() {
        // The demo's re-run under load: A/A spreads near 47 % gave "±202 %"; two thirds
        // of the demo's margin of 10 % cap it.
        let t = speed_tolerance(Some(4_700), Some(4_830), 5_000, 1_000);
        assert_eq!(t.tolerance_bp, 666);
        assert_eq!(tolerance_of(&t.basis, None).tolerance_bp, 20_219);
        assert_eq!(
            speed_tolerance(None, Some(10), 5_000, 1_000).tolerance_bp,
            666
        );
        // A bundle sealed before the cap keeps its uncapped tolerance.
        assert_eq!(tolerance_of(&t.basis, None).cap_bp, None);
    }

    #[test]
    fn without_a_spread_the_tolerance_is_the_drift_bound() {
        for (a, b) in [(None, Some(10)), (Some(10), None), (None, None)] {
            let t = speed_tolerance(a, b, 5_000, 9_000);
            assert_eq!(t.tolerance_bp, 5_000);
            assert_eq!(t.basis, ToleranceBasis::DriftBound { bound_bp: 5_000 });
            assert_eq!(tolerance_of(&t.basis, t.cap_bp), t);
        }
        assert_eq!(
            tolerance_ppm(&speed_tolerance(None, None, 5_000, 9_000)),
            500_000
        );
    }

    #[test]
    fn a_seat_is_contradicted_by_the_re_runs_own_medians_only() {
        // Margin 10 % (100 000 ppm). The original seated X; the re-run put X at +2 %:
        // 8 points short of the margin.
        assert_eq!(
            seat_contradiction_ppm(Some(20_000), None, 1_000),
            Some(80_000)
        );
        // X cleared the margin in the re-run too (its per-pass floor moved the seat): 0.
        assert_eq!(seat_contradiction_ppm(Some(130_000), None, 1_000), Some(0));
        // The re-run seated Z 5 points ahead of X, both past the margin.
        assert_eq!(
            seat_contradiction_ppm(Some(120_000), Some(170_000), 1_000),
            Some(50_000)
        );
        // The original seated none; the re-run's winner cleared it by 3 points.
        assert_eq!(
            seat_contradiction_ppm(None, Some(130_000), 1_000),
            Some(30_000)
        );
        assert_eq!(seat_contradiction_ppm(None, None, 1_000), None);
        assert_eq!(seat_severity(Some(30_000), 30_000), Severity::Noisy);
        assert_eq!(seat_severity(Some(30_001), 30_000), Severity::Bad);
        assert_eq!(seat_severity(None, u64::MAX), Severity::Bad);
    }

    #[test]
    fn bounds_are_inclusive() {
        assert!(speedup_within(-100_000, 400_000, 500_000));
        assert!(!speedup_within(-100_000, 400_001, 500_000));
        assert!(speedup_within(i64::MIN, i64::MAX, u64::MAX));
        assert!(item_within(1_000, 1_100, item_tolerance_micro_nats(false)));
        assert!(!item_within(1_000, 1_101, item_tolerance_micro_nats(false)));
        assert!(!item_within(1_000, 1_001, item_tolerance_micro_nats(true)));
        assert_eq!(margin_distance_ppm(95_000, 1_000), -5_000);
        assert!(inside_tolerance(-5_000, 5_000));
        assert!(!inside_tolerance(5_001, 5_000));
    }

    fn part(verdict: RerunVerdict) -> Comparison {
        Comparison {
            verdict,
            reason: None,
            findings: Vec::new(),
        }
    }

    #[test]
    fn verdicts_combine_worst_first_and_unknown_entries_are_only_listed() {
        use RerunVerdict::*;
        let overall = |round, entries: &[RerunVerdict]| {
            let entries: Vec<Comparison> = entries.iter().map(|v| part(*v)).collect();
            overall_verdict(&part(round), &entries)
        };
        assert_eq!(overall(Good, &[Good, Good]), Good);
        assert_eq!(overall(Good, &[Good, Unkwn]), Good);
        assert_eq!(overall(Good, &[Noisy, Unkwn]), Noisy);
        assert_eq!(overall(Noisy, &[Good]), Noisy);
        assert_eq!(overall(Good, &[Fail, Noisy]), Fail);
        assert_eq!(overall(Fail, &[Bad, Good]), Bad);
        assert_eq!(overall(Good, &[Unkwn, Unkwn]), Unkwn);
        assert_eq!(overall(Fail, &[Unkwn]), Fail);

        let finding = |severity| Finding {
            severity,
            check: FindingKind::Correctness {
                original_passed: true,
                rerun_passed: false,
            },
        };
        assert_eq!(verdict_of(&[]), Good);
        assert_eq!(verdict_of(&[finding(Severity::Noisy)]), Noisy);
        assert_eq!(
            verdict_of(&[finding(Severity::Noisy), finding(Severity::Bad)]),
            Bad
        );
    }
}
