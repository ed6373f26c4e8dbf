//! The operating characteristic of the paired decision rule (content/noise.md): how often
//! a no-op challenger takes the seat and how often one truly faster by the margin + 10
//! percentage points does, simulated under a seeded noise model, for 3 and 5 passes, at
//! the default campaign's margin and drift bound and at the demo's. `cargo test -p
//! receipts --test operating_characteristic -- --nocapture` prints the table.

use std::sync::OnceLock;

use rand_chacha::ChaCha20Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use receipts::model::{Campaign, Leader, PassOrder, Seed32, Sha256Hex};
use receipts::rules::paired::{
    Attempt, PairedDecision, RoundRuns, RunOutcome, RunRecord, SeatedRuns, median_coverage_ppm,
    paired_score,
};
use receipts::rules::passes::schedule;

/// Per-run multiplicative noise: a run's throughput is multiplied by `exp(σ · z)`,
/// `z ~ N(0, 1)`. Fitted to the built-in engine on this project's 2-core shared VM: the
/// A/A control of five consecutive `referee demo` rounds (14 valid pairs, load average
/// 3.5–7.2 while measured, 2026-12-02), σ = √(mean(ln(control ÷ first))² ÷ 2) = 0.113
/// (BENCHMARKS.md, "passes, noise and the load client").
const SIGMA_PER_RUN: f64 = 0.113;
/// Linear drift over the round, in the order the runs ran: the last run is this much
/// faster than the first (the sign that favours late runs, which sequential order gives
/// the challengers). Fitted to the same five rounds: the least-squares slope of ln
/// throughput of the baseline's six runs against their position in the round, averaged
/// over the rounds: +0.161 (per-round slopes −0.29 … +0.60; with σ = 0.113 one round's
/// slope has a standard error of ≈ 0.15, so most of that spread is per-run noise).
const DRIFT_OVER_ROUND: f64 = 0.161;
/// A quiet dedicated machine, assumed (not measured): what the default margin of 1 % needs.
const QUIET_SIGMA_PER_RUN: f64 = 0.005;
/// The quiet machine's drift over the round, assumed (not measured).
const QUIET_DRIFT_OVER_ROUND: f64 = 0.01;

/// Simulated rounds per row.
const ROUNDS: u32 = 1_500;
/// Challengers per round besides the incumbent; all but the first are no-ops.
const CHALLENGERS: usize = 3;
/// True throughput of the baseline, the incumbent and a no-op, milli-requests/s.
const BASE_MILLI_RPS: f64 = 1_000_000.0;
/// How much faster than the margin the "faster" challenger truly is, basis points.
const FASTER_BY_BP: u32 = 1_000;
/// Fewest decided rounds (neither `infra_failed` nor `inconclusive`) for the noise floor
/// to "allow a decision at all" (the issue's words): a quarter of the rounds. Below it the
/// rule's protection is that it refuses — the round is `inconclusive` — and only the
/// unconditional rates are asserted; rates among the few decided rounds are printed.
const MIN_DECIDED: u32 = ROUNDS / 4;

const MINIMAL_CAMPAIGN: &str = r#"
id = "defaults"
[model]
name = "tiny"
[baseline]
repo = "baseline"
commit = "0123456789abcdef0123456789abcdef01234567"
"#;

#[derive(Clone, Copy, Debug, PartialEq)]
struct Noise {
    name: &'static str,
    sigma: f64,
    drift: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Settings {
    name: &'static str,
    margin_bp: u32,
    drift_bound_bp: u32,
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Row {
    noise: Noise,
    settings: Settings,
    passes: usize,
    order: PassOrder,
    faster: bool,
    infra_failed: u32,
    inconclusive: u32,
    seated: u32,
    /// Rounds in which the first challenger's interval contains 0 (no-op rows only).
    covered: u32,
}

impl Row {
    fn decided(&self) -> u32 {
        ROUNDS - self.infra_failed - self.inconclusive
    }
    /// Seat changes among all rounds, permille.
    fn seated_permille(&self) -> u32 {
        self.seated * 1_000 / ROUNDS
    }
    /// Seat changes among decided rounds, permille; `None` below [`MIN_DECIDED`].
    fn seated_decided_permille(&self) -> Option<u32> {
        (self.decided() >= MIN_DECIDED).then(|| self.seated * 1_000 / self.decided())
    }
}

fn campaign_settings(name: &'static str, text: &str) -> Settings {
    let campaign = Campaign::from_toml("campaign.toml", text).unwrap();
    Settings {
        name,
        margin_bp: campaign.overtake_margin_bp,
        drift_bound_bp: campaign.drift_bound_bp,
    }
}

/// A standard normal draw (Box–Muller) from two 53-bit uniforms in (0, 1].
pub(crate) fn normal(rng: &mut ChaCha20Rng) -> f64 {
    let unit = |rng: &mut ChaCha20Rng| ((rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64;
    let (u, v) = (unit(rng), unit(rng));
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// The `n`th seated leader of a simulated round: a patch and miner of its own.
pub(crate) fn leader(n: usize) -> Leader {
    Leader {
        patch: Sha256Hex::digest(&n.to_le_bytes()),
        miner: format!("miner-{n}").parse().unwrap(),
    }
}

/// Seated entries: the baseline (entry 0), the incumbent (entry 1), the challengers.
const ENTRIES: usize = 2 + CHALLENGERS;
/// Slot indices within a pass: 0 the baseline's run, 1 its A/A control, 2 the incumbent,
/// then the challengers (entry `e ≥ 1` at slot `e + 1`).
const SLOTS: usize = ENTRIES + 1;

/// One simulated round's throughputs, `[pass][slot]`, milli-requests/s, run in the
/// round's own schedule ([`schedule`], from a fresh `passSeed`) with the drift growing
/// along it. `truth` is each entry's true speed relative to the baseline.
fn simulate_round(
    rng: &mut ChaCha20Rng,
    noise: Noise,
    passes: usize,
    order: PassOrder,
    truth: &[f64; ENTRIES],
) -> Vec<[u64; SLOTS]> {
    let mut pass_seed = [0u8; 32];
    rng.fill_bytes(&mut pass_seed);
    let runs = schedule(order, &Seed32(pass_seed), passes as u32, ENTRIES as u32);
    let last = (runs.len() - 1) as f64;
    let mut round = vec![[0u64; SLOTS]; passes];
    for (time, run) in runs.iter().enumerate() {
        let entry = run.slot.entry as usize;
        let drift = 1.0 + noise.drift * time as f64 / last;
        let value = BASE_MILLI_RPS * truth[entry] * drift * (noise.sigma * normal(rng)).exp();
        let slot = match (entry, run.slot.control) {
            (0, false) => 0,
            (0, true) => 1,
            (entry, _) => entry + 1,
        };
        round[run.pass as usize][slot] = value.round() as u64;
    }
    round
}

/// One slot's runs, measured at their first attempt, from `round[pass][slot]`.
fn records<P: AsRef<[u64]>>(round: &[P], slot: usize) -> Vec<RunRecord> {
    round
        .iter()
        .map(|pass| RunRecord {
            outcome: RunOutcome::Measured {
                milli_rps: pass.as_ref()[slot],
            },
            attempt: Attempt::First,
        })
        .collect()
}

/// The paired rule's input for one simulated round, `round[pass][slot]` in milli-requests/s
/// with the slots in [`SLOTS`]' order (0 the baseline's run, 1 its A/A control, 2 the
/// incumbent, then the challengers): the incumbent seated as `leaders[0]`, challenger `i`
/// as `leaders[i + 1]`, one challenger per leader after the first.
pub(crate) fn round_runs<P: AsRef<[u64]>>(round: &[P], leaders: &[Leader]) -> RoundRuns {
    RoundRuns {
        baseline_first: records(round, 0),
        baseline_control: records(round, 1),
        incumbent: Some(SeatedRuns {
            leader: leaders[0].clone(),
            runs: records(round, 2),
        }),
        challengers: (leaders[1..].iter().enumerate())
            .map(|(index, leader)| SeatedRuns {
                leader: leader.clone(),
                runs: records(round, 3 + index),
            })
            .collect(),
    }
}

fn simulate(
    noise: Noise,
    settings: Settings,
    passes: usize,
    order: PassOrder,
    faster: bool,
    seed: u64,
) -> Row {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut truth = [1.0; ENTRIES];
    if faster {
        truth[2] = 1.0 + f64::from(settings.margin_bp + FASTER_BY_BP) / 10_000.0;
    }
    let leaders: Vec<Leader> = (0..=CHALLENGERS).map(leader).collect();
    let mut row = Row {
        noise,
        settings,
        passes,
        order,
        faster,
        infra_failed: 0,
        inconclusive: 0,
        seated: 0,
        covered: 0,
    };
    for _ in 0..ROUNDS {
        let round = simulate_round(&mut rng, noise, passes, order, &truth);
        let runs = round_runs(&round, &leaders);
        match receipts::rules::paired::decide_paired(
            &runs,
            settings.drift_bound_bp,
            settings.margin_bp,
            receipts::rules::paired::SeatChoice::BestQualifying,
            receipts::rules::paired::InvalidTwice::Disqualifies,
        ) {
            PairedDecision::InfraFailed(_) => row.infra_failed += 1,
            PairedDecision::Inconclusive { .. } => row.inconclusive += 1,
            PairedDecision::Seat { leader_after, .. } => {
                if leader_after.as_ref() != Some(&leaders[0]) {
                    row.seated += 1;
                }
            }
        }
        let first: Vec<u64> = round.iter().map(|pass| pass[0]).collect();
        let challenger: Vec<u64> = round.iter().map(|pass| pass[3]).collect();
        if let Some(score) = paired_score(&challenger, &first)
            && score.min_ppm <= 0
            && score.max_ppm >= 0
        {
            row.covered += 1;
        }
    }
    row
}

fn noises() -> [Noise; 2] {
    [
        Noise {
            name: "measured",
            sigma: SIGMA_PER_RUN,
            drift: DRIFT_OVER_ROUND,
        },
        Noise {
            name: "quiet",
            sigma: QUIET_SIGMA_PER_RUN,
            drift: QUIET_DRIFT_OVER_ROUND,
        },
    ]
}

/// Every row, computed once for all tests of this file and printed.
fn table() -> &'static [Row] {
    static TABLE: OnceLock<Vec<Row>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let settings = [
            campaign_settings("default", MINIMAL_CAMPAIGN),
            campaign_settings("demo", include_str!("../../../examples/demo/campaign.toml")),
        ];
        let mut rows = Vec::new();
        let mut seed = 0;
        for noise in noises() {
            for settings in settings {
                for passes in [3, 5] {
                    for order in [PassOrder::Interleaved, PassOrder::Sequential] {
                        for faster in [false, true] {
                            seed += 1;
                            rows.push(simulate(noise, settings, passes, order, faster, seed));
                        }
                    }
                }
            }
        }
        print_table(&rows);
        rows
    })
}

fn percent(permille: Option<u32>) -> String {
    permille.map_or_else(|| "n/a".to_owned(), |p| format!("{}.{} %", p / 10, p % 10))
}

fn print_table(rows: &[Row]) {
    println!(
        "{ROUNDS} rounds per row, {CHALLENGERS} challengers + incumbent; noise measured: \
         σ {SIGMA_PER_RUN}, drift {DRIFT_OVER_ROUND}; quiet: σ {QUIET_SIGMA_PER_RUN}, drift \
         {QUIET_DRIFT_OVER_ROUND}"
    );
    println!(
        "| noise | campaign (margin / drift bound, bp) | R | order | challenger | infra_failed | \
         inconclusive | seat taken | seat taken, decided rounds | no-op interval ∋ 0 (coverage) |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for row in rows {
        let cover = if row.faster {
            "".to_owned()
        } else {
            format!(
                "{} ({})",
                percent(Some(row.covered * 1_000 / ROUNDS)),
                percent(Some(
                    u32::try_from(median_coverage_ppm(row.passes as u32) / 1_000).unwrap()
                ))
            )
        };
        println!(
            "| {} | {} ({} / {}) | {} | {:?} | {} | {} | {} | {} | {} | {} |",
            row.noise.name,
            row.settings.name,
            row.settings.margin_bp,
            row.settings.drift_bound_bp,
            row.passes,
            row.order,
            if row.faster {
                format!("+{} bp", row.settings.margin_bp + FASTER_BY_BP)
            } else {
                "no-op".to_owned()
            },
            percent(Some(row.infra_failed * 1_000 / ROUNDS)),
            percent(Some(row.inconclusive * 1_000 / ROUNDS)),
            percent(Some(row.seated_permille())),
            percent(row.seated_decided_permille()),
            cover,
        );
    }
}

fn interleaved() -> impl Iterator<Item = &'static Row> {
    table()
        .iter()
        .filter(|row| row.order == PassOrder::Interleaved)
}

#[test]
fn a_no_op_rarely_takes_the_seat() {
    for row in interleaved().filter(|row| !row.faster) {
        assert!(row.seated_permille() <= 50, "{row:?}");
        if let Some(permille) = row.seated_decided_permille() {
            assert!(permille <= 50, "{row:?}");
        }
    }
}

#[test]
fn a_truly_faster_challenger_takes_the_seat_where_the_noise_floor_allows_a_decision() {
    for row in interleaved().filter(|row| row.faster) {
        match row.seated_decided_permille() {
            Some(permille) => assert!(permille >= 900, "{row:?}"),
            // Too few decided rounds: the round refuses instead of guessing.
            None => assert!(row.decided() < MIN_DECIDED, "{row:?}"),
        }
    }
    // The quiet machine decides at both margins with 3 passes (with 5, the A/A spread of
    // the default 1 % margin is exceeded more often: 5 pairs have a wider range than 3).
    let decides = |noise: &str, settings: &str, passes: usize| {
        interleaved().any(|row| {
            row.faster
                && row.noise.name == noise
                && row.settings.name == settings
                && row.passes == passes
                && row.seated_decided_permille().is_some()
        })
    };
    assert!(decides("quiet", "default", 3));
    assert!(decides("quiet", "demo", 3));
    assert!(decides("quiet", "demo", 5));
}

/// The noise measured on this VM is far above the demo's margin: the simulation says most
/// such rounds are `inconclusive`, as all five measured demo rounds were (content/noise.md).
#[test]
fn at_the_measured_noise_the_demo_round_is_mostly_inconclusive() {
    for row in
        interleaved().filter(|row| row.noise.name == "measured" && row.settings.name == "demo")
    {
        assert!(row.inconclusive * 2 > ROUNDS, "{row:?}");
        assert!(row.seated_decided_permille().is_none(), "{row:?}");
    }
}

#[test]
fn a_no_op_interval_contains_zero_about_as_often_as_its_coverage() {
    for row in table()
        .iter()
        .filter(|row| !row.faster && row.order == PassOrder::Interleaved)
    {
        let covered_ppm = u64::from(row.covered) * 1_000_000 / u64::from(ROUNDS);
        let coverage_ppm = median_coverage_ppm(row.passes as u32);
        assert!(covered_ppm.abs_diff(coverage_ppm) <= 60_000, "{row:?}");
    }
}

#[test]
fn sequential_order_seats_no_ops_under_drift_far_more_often() {
    // Where the noise floor allows a decision; at the measured noise nearly every round is
    // inconclusive in either order, which hides the difference (both rows are printed).
    for noise in noises().into_iter().filter(|noise| noise.name == "quiet") {
        let find = |order, settings: &str| {
            table()
                .iter()
                .find(|row| {
                    row.noise == noise
                        && row.settings.name == settings
                        && row.passes == 3
                        && row.order == order
                        && !row.faster
                })
                .unwrap()
        };
        let settings = "default";
        let interleaved = find(PassOrder::Interleaved, settings);
        let sequential = find(PassOrder::Sequential, settings);
        assert!(
            sequential.seated_permille() >= interleaved.seated_permille() * 3 + 10,
            "{interleaved:?} {sequential:?}"
        );
    }
}

/// The no-decoy study (issue 40; content/leader-rule.md, No decoy): `k` challengers, 3
/// interleaved passes, [`ROUNDS`] rounds per row.
mod challengers {
    use super::*;
    use receipts::rules::paired::SeatChoice;

    /// What one row counts.
    #[derive(Clone, Copy, Debug)]
    pub(super) struct KRow {
        pub noise: &'static str,
        pub settings: &'static str,
        pub k: usize,
        pub choice: SeatChoice,
        /// Whether challenger 0 is a decoy (10 points faster than challenger 1 but at 0.9
        /// in one pass) and challenger 1 truly faster by the margin + [`FASTER_BY_BP`];
        /// otherwise every one is a no-op.
        pub decoy: bool,
        pub decided: u32,
        /// Rounds in which any challenger took the seat.
        pub seated: u32,
        /// Rounds in which the truly faster challenger took it (decoy rows).
        pub honest_seated: u32,
    }

    fn simulate_k(
        noise: Noise,
        settings: Settings,
        k: usize,
        choice: SeatChoice,
        decoy: bool,
        seed: u64,
    ) -> KRow {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let entries = 2 + k;
        let leaders: Vec<Leader> = (0..=k).map(leader).collect();
        let mut row = KRow {
            noise: noise.name,
            settings: settings.name,
            k,
            choice,
            decoy,
            decided: 0,
            seated: 0,
            honest_seated: 0,
        };
        let passes = 3;
        for _ in 0..ROUNDS {
            let mut truth = vec![1.0; entries];
            let slow_pass = (rng.next_u64() % passes as u64) as usize;
            if decoy {
                let faster = 1.0 + f64::from(settings.margin_bp + FASTER_BY_BP) / 10_000.0;
                // The decoy: 10 points faster still, but at 0.9 in one pass.
                truth[2] = faster + 0.1;
                truth[3] = faster;
            }
            let mut pass_seed = [0u8; 32];
            rng.fill_bytes(&mut pass_seed);
            let runs = schedule(
                PassOrder::Interleaved,
                &Seed32(pass_seed),
                passes as u32,
                entries as u32,
            );
            let last = (runs.len() - 1) as f64;
            let mut round = vec![vec![0u64; entries + 1]; passes];
            for (time, run) in runs.iter().enumerate() {
                let entry = run.slot.entry as usize;
                let pass = run.pass as usize;
                let drift = 1.0 + noise.drift * time as f64 / last;
                let mut speed = truth[entry];
                if decoy && entry == 2 && pass == slow_pass {
                    speed = 0.9;
                }
                let value = BASE_MILLI_RPS * speed * drift * (noise.sigma * normal(&mut rng)).exp();
                let slot = match (entry, run.slot.control) {
                    (0, false) => 0,
                    (0, true) => 1,
                    (entry, _) => entry + 1,
                };
                round[pass][slot] = value.round() as u64;
            }
            let runs = round_runs(&round, &leaders);
            let decision = receipts::rules::paired::decide_paired(
                &runs,
                settings.drift_bound_bp,
                settings.margin_bp,
                choice,
                receipts::rules::paired::InvalidTwice::Disqualifies,
            );
            if let PairedDecision::Seat { leader_after, .. } = decision {
                row.decided += 1;
                if leader_after.as_ref() != Some(&leaders[0]) {
                    row.seated += 1;
                }
                if decoy && leader_after.as_ref() == Some(&leaders[2]) {
                    row.honest_seated += 1;
                }
            }
        }
        row
    }

    /// Every row, computed once and printed.
    pub(super) fn table() -> &'static [KRow] {
        static TABLE: OnceLock<Vec<KRow>> = OnceLock::new();
        TABLE.get_or_init(|| {
            let settings = [
                campaign_settings("default", MINIMAL_CAMPAIGN),
                campaign_settings("demo", include_str!("../../../examples/demo/campaign.toml")),
            ];
            let mut rows = Vec::new();
            let mut seed = 1_000;
            for noise in noises() {
                for settings in settings {
                    for k in [1, 3, 8] {
                        for choice in [SeatChoice::BestMedian, SeatChoice::BestQualifying] {
                            for decoy in [false, true] {
                                if decoy && k < 2 {
                                    continue;
                                }
                                seed += 1;
                                rows.push(simulate_k(noise, settings, k, choice, decoy, seed));
                            }
                        }
                    }
                }
            }
            println!(
                "| noise | campaign | k | rule | challengers | decided | seat taken | \
                 faster one seated |"
            );
            println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
            for row in &rows {
                println!(
                    "| {} | {} | {} | {:?} | {} | {} | {} | {} |",
                    row.noise,
                    row.settings,
                    row.k,
                    row.choice,
                    if row.decoy {
                        "decoy + faster + no-ops"
                    } else {
                        "no-ops"
                    },
                    percent(Some(row.decided * 1_000 / ROUNDS)),
                    percent(Some(row.seated * 1_000 / ROUNDS)),
                    if row.decoy {
                        percent(Some(row.honest_seated * 1_000 / ROUNDS))
                    } else {
                        String::new()
                    },
                );
            }
            rows
        })
    }
}

/// Seating the best of those that clear the margin (v5, with its every-pass condition
/// at three quarters of the margin) keeps a no-op's seat rate at most 1 % with 1, 3 and 8
/// no-op challengers on the quiet machine; at the noise measured on this VM (far above
/// the demo's margin, most rounds undecided) it stays under 5 % and no higher than v4's
/// rule gave; and a decoy no longer keeps a truly faster challenger out where the noise
/// floor allows a decision.
#[test]
fn no_decoy_with_1_3_and_8_challengers() {
    use receipts::rules::paired::SeatChoice;
    let table = challengers::table();
    for row in table.iter().filter(|r| !r.decoy) {
        let bound = if row.noise == "quiet" { 10 } else { 50 };
        assert!(row.seated * 1_000 <= ROUNDS * bound, "{row:?}");
        let v4 = table
            .iter()
            .find(|r| {
                !r.decoy
                    && r.noise == row.noise
                    && r.settings == row.settings
                    && r.k == row.k
                    && r.choice == SeatChoice::BestMedian
            })
            .unwrap();
        assert!(row.seated <= v4.seated + ROUNDS / 200, "{row:?} {v4:?}");
    }
    for row in challengers::table()
        .iter()
        .filter(|r| r.decoy && r.noise == "quiet")
    {
        match row.choice {
            // Behind the decoy, the faster challenger is seated almost always now…
            SeatChoice::BestQualifying => {
                assert!(row.honest_seated * 1_000 >= row.decided * 900, "{row:?}")
            }
            // …and almost never under v4's rule.
            SeatChoice::BestMedian => {
                assert!(row.honest_seated * 1_000 <= row.decided * 100, "{row:?}")
            }
        }
    }
}
