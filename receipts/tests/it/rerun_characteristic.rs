//! The operating characteristic of a re-run's seat verdict (content/verifying.md,
//! Re-running a round): how often an honest re-run of an honest round is called BAD, and
//! how often a round whose seat was flipped by one margin is, simulated on the pure rule
//! (`receipts::rules::rerun`) with constructed paired ratios. `cargo test -p receipts
//! --test it rerun_characteristic -- --nocapture` prints the table.

use rand_chacha::ChaCha20Rng;
use rand_chacha::rand_core::SeedableRng;
use receipts::model::Severity;
use receipts::rules::paired::{clears_margin, paired_ratio_ppm, paired_score, spread_bp};
use receipts::rules::rerun::{
    seat_contradiction_ppm, seat_severity, speed_tolerance, tolerance_ppm,
};

use crate::operating_characteristic::normal;

/// The demo campaign's margin and drift bound (examples/demo/campaign.toml), basis points,
/// and its passes.
const MARGIN_BP: u32 = 1_000;
const DRIFT_BOUND_BP: u32 = 5_000;
const PASSES: usize = 3;
/// Rounds simulated per row and per true speed.
const ROUNDS: u32 = 4_000;
/// True throughput of the baseline, the incumbent and a no-op, milli-requests/s.
const BASE_MILLI_RPS: f64 = 1_000_000.0;

/// One measured round: the A/A spread, whether it decided (A/A spread within the margin,
/// the baseline within the drift bound), whether the challenger cleared the margin, and
/// its median paired score against the incumbent (ppm).
struct Measured {
    aa_spread_bp: u64,
    decided: bool,
    seated: bool,
    median_ppm: i64,
}

/// A round of [`PASSES`] passes: per pass the baseline, its A/A control, the incumbent
/// (as fast as the baseline) and the challenger (`1 + excess` times as fast), each run
/// multiplied by `exp(σ · z)`.
fn measure(rng: &mut ChaCha20Rng, sigma: f64, excess: f64) -> Measured {
    let mut run =
        |truth: f64| (BASE_MILLI_RPS * truth * (sigma * normal(rng)).exp()).round() as u64;
    let (mut baseline, mut control, mut incumbent, mut challenger) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..PASSES {
        baseline.push(run(1.0));
        control.push(run(1.0));
        incumbent.push(run(1.0));
        challenger.push(run(1.0 + excess));
    }
    let aa: Vec<u64> = control
        .iter()
        .zip(&baseline)
        .map(|(c, b)| paired_ratio_ppm(*c, *b).unwrap())
        .collect();
    let aa_spread_bp = spread_bp(&aa).unwrap();
    let decided = aa_spread_bp <= u64::from(MARGIN_BP)
        && spread_bp(&baseline).unwrap() <= u64::from(DRIFT_BOUND_BP);
    Measured {
        aa_spread_bp,
        decided,
        seated: clears_margin(&challenger, &incumbent, MARGIN_BP),
        median_ppm: paired_score(&challenger, &incumbent).unwrap().median_ppm,
    }
}

/// The seat verdict of a re-run whose original claimed `original_seated` with the A/A
/// spread `original_aa_bp`: BAD, or `false` (NOISY, GOOD, or not compared because one
/// side did not decide).
fn called_bad(original_seated: bool, original_aa_bp: u64, rerun: &Measured) -> bool {
    if !rerun.decided || rerun.seated == original_seated {
        return false;
    }
    let tolerance = speed_tolerance(
        Some(original_aa_bp),
        Some(rerun.aa_spread_bp),
        DRIFT_BOUND_BP,
        MARGIN_BP,
    );
    let (x, z) = if original_seated {
        (Some(rerun.median_ppm), None)
    } else {
        (None, Some(rerun.median_ppm))
    };
    let contradiction = seat_contradiction_ppm(x, z, MARGIN_BP);
    seat_severity(contradiction, tolerance_ppm(&tolerance)) == Severity::Bad
}

/// Per mille of honest re-runs of honest rounds called BAD, at the worst true speed of
/// a grid around the margin (−5 … +25 %, by 0.5 points).
fn honest_bad_permille(rng: &mut ChaCha20Rng, sigma: f64) -> u32 {
    (-10..=50)
        .map(|step| {
            let excess = f64::from(step) * 0.005;
            (0..ROUNDS)
                .filter(|_| {
                    let original = measure(rng, sigma, excess);
                    let rerun = measure(rng, sigma, excess);
                    original.decided && called_bad(original.seated, original.aa_spread_bp, &rerun)
                })
                .count() as u32
                * 1_000
                / ROUNDS
        })
        .max()
        .unwrap()
}

/// Per mille of re-runs called BAD of a round whose seat was flipped by one margin, the
/// forger claiming the widest A/A spread that still decides (the margin): a no-op
/// (truly +0 %) seated as if it were one margin faster, and a challenger truly at twice
/// the margin (+20 %) denied the seat as if it were one margin slower; the lower of the
/// two.
fn flipped_bad_permille(rng: &mut ChaCha20Rng, sigma: f64) -> u32 {
    let margin = f64::from(MARGIN_BP) / 10_000.0;
    [(0.0, true), (2.0 * margin, false)]
        .into_iter()
        .map(|(excess, claimed_seated)| {
            (0..ROUNDS)
                .filter(|_| {
                    let rerun = measure(rng, sigma, excess);
                    called_bad(claimed_seated, u64::from(MARGIN_BP), &rerun)
                })
                .count() as u32
                * 1_000
                / ROUNDS
        })
        .min()
        .unwrap()
}

/// The per-run noise at which both targets hold (content/verifying.md, How often a re-run
/// says BAD), per mille.
const BOTH_HOLD_SIGMA_PERMILLE: u32 = 15;
/// The noise fitted to the demo under load (content/noise.md), per mille.
const DEMO_SIGMA_PERMILLE: u32 = 113;

#[test]
fn rerun_characteristic_table() {
    let mut rng = ChaCha20Rng::seed_from_u64(42);
    println!("| σ per run | honest re-run called BAD (worst speed) | one-margin flip called BAD |");
    println!("| --- | --- | --- |");
    let mut rows = Vec::new();
    for sigma_permille in [
        5,
        10,
        BOTH_HOLD_SIGMA_PERMILLE,
        20,
        30,
        60,
        DEMO_SIGMA_PERMILLE,
    ] {
        let sigma = f64::from(sigma_permille) / 1_000.0;
        let honest = honest_bad_permille(&mut rng, sigma);
        let flipped = flipped_bad_permille(&mut rng, sigma);
        println!(
            "| {:.1} % | {}.{} % | {}.{} % |",
            sigma * 100.0,
            honest / 10,
            honest % 10,
            flipped / 10,
            flipped % 10
        );
        rows.push((sigma_permille, honest, flipped));
    }
    for (sigma, honest, flipped) in rows {
        if sigma <= BOTH_HOLD_SIGMA_PERMILLE {
            assert!(
                honest <= 10,
                "σ {sigma} ‰: honest re-runs called BAD {honest} ‰"
            );
            assert!(
                flipped >= 900,
                "σ {sigma} ‰: flipped seats called BAD {flipped} ‰"
            );
        }
        // Whatever the noise, the cap keeps honest re-runs from being called BAD often.
        assert!(
            honest <= 30,
            "σ {sigma} ‰: honest re-runs called BAD {honest} ‰"
        );
        if sigma == DEMO_SIGMA_PERMILLE {
            // At the demo's noise under load most rounds are inconclusive: a re-run
            // cannot catch a flip it cannot measure.
            assert!(
                flipped < 900,
                "σ {sigma} ‰: flipped seats called BAD {flipped} ‰"
            );
        }
    }
}

#[test]
fn a_re_run_with_the_seat_flipped_by_one_margin_is_bad() {
    // The original seated a challenger as +10 % (the demo's margin) over the incumbent;
    // the re-run measured it as fast as the incumbent, at A/A spreads of 1 %.
    let challenger = [1_000_000, 1_010_000, 990_000];
    let incumbent = [1_000_000, 1_000_000, 1_000_000];
    assert!(!clears_margin(&challenger, &incumbent, MARGIN_BP));
    let median = paired_score(&challenger, &incumbent).unwrap().median_ppm;
    assert_eq!(median, 0);
    let tolerance = speed_tolerance(Some(100), Some(100), DRIFT_BOUND_BP, MARGIN_BP);
    assert_eq!(tolerance.tolerance_bp, 425);
    let contradiction = seat_contradiction_ppm(Some(median), None, MARGIN_BP);
    assert_eq!(contradiction, Some(100_000));
    assert_eq!(
        seat_severity(contradiction, tolerance_ppm(&tolerance)),
        Severity::Bad
    );
    // Even an original claiming an A/A spread at the margin cannot widen the tolerance
    // past two thirds of it.
    let wide = speed_tolerance(Some(1_000), Some(100), DRIFT_BOUND_BP, MARGIN_BP);
    assert_eq!(wide.tolerance_bp, 666);
    assert_eq!(
        seat_severity(contradiction, tolerance_ppm(&wide)),
        Severity::Bad
    );
}
