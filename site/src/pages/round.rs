//! The round page, `/c/<campaign>/r/<n>/`: everything a miner reads about one sealed
//! round — status, whether it was a practice round, counts, how long it took to settle,
//! the top score, whether the seat changed and to whom, the entries table with each
//! disqualification's reason and log tail, the step timeline grouped as the round ran it
//! (Setup, Baseline, … or, from v3, by pass), scores with their interval or spread, the
//! SLA, the noise floor, the client's self-test, the "To take the seat" box, the pass
//! order, seeds and their commitments and the beacon they derive from, the
//! request-sequence digest, hardware at both ends, what changed since the previous round,
//! downloads and the exact `referee verify` command that checks the bundle.
//!
//! The model ([`RoundPage`]) is built from [`VerifiedRound::view`] (the view-model
//! `referee show` prints: one model, two renderers) and the round record. Every value
//! carries whether the verifier vouched for it ([`Shown::verified`]); the template marks
//! the others, and marks "attested" what the verifier only attests ([`AttestedMarks`]). Untrusted text (miner ids, step names, details, log tails, decision
//! sentences of old receipts, hardware strings) is escaped here with
//! [`escape_untrusted`](receipts::text::escape_untrusted) and cut on a character boundary; tera escapes it for HTML.

use std::collections::BTreeMap;

use serde::Serialize;

use receipts::bundle::ENVELOPE_FILE;
use receipts::model::{
    CampaignId, EntryStatus, HardwareFingerprint, Leader, MinerId, RoundLog, RoundRecord,
    RoundStatus, RunTelemetry, Sha256Hex, StepStatus, Timestamp,
};
use receipts::text::log_tail_for_display;
use verifier::view::{
    EntryView, Field, RoundView, SELF_REPORTED, StepView, format_capability_finding,
    format_client_self_test, format_duration_ms, format_entry_throughput, format_leader,
    format_milli_rate, format_noise, format_paired_score, format_pass_order, format_pod,
    format_score_percent, format_time_of_day, short_seed,
};

use super::seat::{SeatBox, SeatedView, seat_box};
use super::{ExtraFile, PageOut, TableLinks, TableRow, keep_percent, table_files, untrusted};
use crate::archive::{RoundListing, SeatTaken, VerifiedRound};
use crate::error::SiteError;
use crate::machine::{bundle_dir_name, bundle_tar_path, keyring_path};
use crate::paths::{EntrySlug, SiteDir};

/// Characters of a log tail shown (the end is kept).
pub const LOG_TAIL_CHARS: usize = 4_000;

/// The template of the round page.
pub const TEMPLATE: &str = "round.html";

/// A value as a page shows it and whether every check that covers it passed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Shown {
    /// The text, escaped with
    /// [`escape_untrusted`](receipts::text::escape_untrusted) where it comes from a receipt.
    pub text: String,
    /// Whether the verifier vouched for it; the template marks it when not.
    pub verified: bool,
}

impl Shown {
    /// `text`, verified or not.
    pub fn new(text: impl Into<String>, verified: bool) -> Self {
        Self {
            text: text.into(),
            verified,
        }
    }

    /// `field` shown by `show`, with its verification.
    pub fn of<T>(field: &Field<T>, show: impl FnOnce(&T) -> String) -> Self {
        Self::new(show(&field.value), field.verified)
    }
}

/// The capability probe on the round page: each finding a line for people.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CapabilityShown {
    /// One line per finding ([`format_capability_finding`]), escaped.
    pub findings: Vec<String>,
    /// How long the probe took, ms.
    pub duration_ms: u64,
    /// Whether `capability.probe` passed.
    pub verified: bool,
}

/// A `decide` campaign's round on the round page (content/s1-pro-speed.md): its track
/// and workload kind, and each entry's weights identity.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DecideShown {
    /// `s1-pro-speed · decide: one decision per request, throughput in decisions per
    /// second at the SLA's percentile`.
    pub track: String,
    /// One line per entry whose engine started: its weight files with their sha256s and
    /// how they were established (file names escaped).
    pub weights: Vec<String>,
    /// Whether `decide.round` passed and no `decide.weights` failed.
    pub verified: bool,
}

/// A point in time: for people (`Dec 2, 2026, 01:22 UTC`) and for `<time datetime>`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Moment {
    /// `Dec 2, 2026, 01:22 UTC`.
    pub text: String,
    /// For `<time datetime>`: RFC 3339 UTC to the millisecond ([`html_datetime`]).
    pub iso: String,
    /// Whether it is verified.
    pub verified: bool,
}

impl Moment {
    /// `field`'s time.
    pub fn of(field: &Field<Timestamp>) -> Self {
        Self {
            text: format_utc_minute(field.value),
            iso: html_datetime(field.value),
            verified: field.verified,
        }
    }
}

/// A time for a `datetime` attribute, which allows at most three fraction digits:
/// `2026-12-02T01:22:15.689Z` (truncated to the millisecond).
pub fn html_datetime(at: Timestamp) -> String {
    let t = at.datetime();
    format!(
        "{:04}-{:02}-{:02}T{}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        format_time_of_day(at)
    )
}

/// A time to the minute, UTC: `Dec 2, 2026, 01:22 UTC`.
pub fn format_utc_minute(at: Timestamp) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let t = at.datetime();
    let month = MONTHS
        .get(usize::from(u8::from(t.month())).saturating_sub(1))
        .copied()
        .unwrap_or("?");
    format!(
        "{month} {}, {}, {:02}:{:02} UTC",
        t.day(),
        t.year(),
        t.hour(),
        t.minute()
    )
}

/// The round page's model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RoundPage {
    /// The campaign id (a validated id).
    pub campaign: String,
    /// The round number.
    pub round: u64,
    /// `Round 2 · complete`.
    pub title: String,
    /// `complete`, `infra_failed` or `inconclusive`.
    pub status: Shown,
    /// CSS class of the status: `ok`, `bad`, `warn`.
    pub status_class: &'static str,
    /// Why the round did not count: its verdict in words
    /// ([`format_verdict`](verifier::view::format_verdict)), `inconclusive — not decided:
    /// A/A 30.78 % > margin 10 %`; `None` for a complete round.
    pub status_reason: Option<Shown>,
    /// The predicate version (`v3`).
    pub predicate_version: String,
    /// `4 scored · 3 disqualified`.
    pub counts: Shown,
    /// Whether an inconclusive round left an entry not decided (the page says what its
    /// numbers mean).
    pub undecided: bool,
    /// `2h 17m`.
    pub settled_in: Shown,
    /// When setup started.
    pub started: Moment,
    /// When teardown ended (the seal time the site verified the bundle at).
    pub ended: Moment,
    /// The top score; `None` when no entry was scored.
    pub top_score: Option<TopScoreView>,
    /// The seat.
    pub leader: LeaderView,
    /// Which rule decided, as a sentence.
    pub decision: Shown,
    /// The overtake margin, `10 %`.
    pub margin: Shown,
    /// The SLA entries were measured at, `p95:e2e:300ms`.
    pub sla: Shown,
    /// Whether throughputs are the engines' self-reported token counts.
    pub self_reported_tokens: bool,
    /// sha256 of the request sequence.
    pub request_sequence_digest: Shown,
    /// sha256 of the frozen campaign.
    pub campaign_digest: Shown,
    /// sha256 of the previous round's Statement (the chain); `None` for round 1.
    pub previous_receipt: Option<String>,
    /// sha256 of this round's Statement (the next round's `previousReceipt`).
    pub statement_digest: Option<String>,
    /// The tool that ran the round.
    pub tool: Shown,
    /// The entries, in run order.
    pub entries: Vec<EntryRow>,
    /// The entries table's CSV and JSON beside the page.
    pub entries_table: TableLinks,
    /// Whether scores are paired (v3: percent with an interval) or against the first
    /// baseline run (before: a fraction).
    pub paired: bool,
    /// The noise floor (v3).
    pub noise: Option<Shown>,
    /// The load client's self-test (v3).
    pub client_self_test: Option<Shown>,
    /// The capability probe of the baseline engine (v3, `process` backends): one line per
    /// finding, escaped, with the probe's duration.
    pub capability_probe: Option<CapabilityShown>,
    /// A `decide` campaign's track, workload kind and weights (v8).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decide: Option<DecideShown>,
    /// The pod the entries ran on, when the round rented one (`pod.agent`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod: Option<Shown>,
    /// The passes in the order they ran (v3).
    pub passes: Vec<PassRow>,
    /// Each run's telemetry (v9), entry by entry.
    pub telemetry: Vec<TelemetryRow>,
    /// The drift check (before v3).
    pub drift: Option<Shown>,
    /// The step timeline.
    pub timeline: Timeline,
    /// The seeds.
    pub seeds: Vec<SeedRow>,
    /// Hardware at both ends.
    pub hardware: HardwareTable,
    /// What changed since the previous round.
    pub changes: Changes,
    /// Links to the campaign and the neighbouring rounds.
    pub nav: RoundNav,
    /// The files to download.
    pub downloads: Downloads,
    /// How to check the bundle yourself.
    pub verify: VerifyHowTo,
    /// What verification said.
    pub verification: VerificationView,
    /// Where each number comes from.
    pub sources: Vec<SourceRow>,
    /// The round in the transparency log (v3 rounds that record it).
    pub log: Option<RoundLogView>,
    /// What it takes to take the seat after this round, in its numbers.
    pub seat: SeatBox,
    /// The beacon its seeds derive from (v5), in words: source, round, value, and
    /// whether anyone can check its signature; `None` when the evaluator drew or gave
    /// the seeds.
    pub beacon: Option<Shown>,
    /// Whether that beacon is unsigned (a file beacon): the page flags it.
    pub beacon_unsigned: bool,
    /// Set for a practice round (the evaluator gave the seeds): it moves no seat.
    pub practice: Option<Shown>,
    /// Set for a confirmation or re-measurement round, or one on a virtual clock
    /// (content/title.md), in words.
    pub title_round: Option<Shown>,
    /// Which values shown the verifier only attests.
    pub attested: AttestedMarks,
    /// A round of track s1-fast-speed: both gates and the cost ranking.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fast_track: Option<super::fast::FastTrackSection>,
}

/// Which of the values a round or entry page shows the verifier only attests
/// ([`super::attested`], `verifier::ATTESTED_FIELDS`): each is marked "attested".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct AttestedMarks {
    /// The round's start and end (`startedAt`, `endedAt`): when it ran and settled.
    pub round_times: bool,
    /// An entry's start and end: its duration.
    pub entry_times: bool,
    /// Each step's start and end: the timeline's times and durations.
    pub step_times: bool,
    /// The hardware fingerprint.
    pub hardware: bool,
    /// The build of referee that sealed the round.
    pub tool: bool,
    /// The load client's self-test figures.
    pub client_self_test: bool,
    /// How long the capability probe took.
    pub capability_probe: bool,
    /// A run's host load (steal and wall time).
    pub host_load: bool,
    /// The command line the runner started.
    pub command: bool,
}

impl AttestedMarks {
    /// The marks of the current predicate's attested fields.
    pub fn of_predicate() -> Self {
        use super::attested;
        Self {
            round_times: attested("startedAt") || attested("endedAt"),
            entry_times: attested("entries[].startedAt") || attested("entries[].endedAt"),
            step_times: attested("steps[].startedAt") || attested("steps[].endedAt"),
            hardware: attested("hardware.atStart.cpuCount"),
            tool: attested("tool.version"),
            client_self_test: attested("clientSelfTest.achievedMilliRps"),
            capability_probe: attested("capabilityProbe.durationMs"),
            host_load: attested("entries[].passes[].hostLoad.stealMs"),
            command: attested("entries[].engine.command[]"),
        }
    }
}

/// The round in the transparency log (content/transparency-log.md).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RoundLogView {
    /// Whether the round was logged at all.
    pub logged: bool,
    /// The log's origin line, escaped.
    pub origin: String,
    /// Index (0-based) of the round-opened entry.
    pub round_opened_index: u64,
    /// `witnessed by <name> (checkpoint of N entries)` or `not witnessed`.
    pub witness: String,
    /// The proofs file beside the page (`round.proof`, C2SP tlog-proof), when the data
    /// directory has `rounds/<n>.proof`.
    pub proof: Option<String>,
}

/// The top score and who holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TopScoreView {
    /// `+0.5099` or `+27.56 %`.
    pub score: Shown,
    /// `the baseline` or the miner.
    pub holder: String,
    /// The holder's entry page, relative to the site root.
    pub href: String,
}

/// The seat before and after the round.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LeaderView {
    /// Whether the seat changed.
    pub changed: bool,
    /// `Changed` or `Unchanged`.
    pub headline: String,
    /// Whether the change (and the seat after it) is verified.
    pub verified: bool,
    /// The seat before, `f98bb88…18dfc (fast)` or `the baseline`.
    pub before: String,
    /// The seat after.
    pub after: String,
    /// The seat holder's submission page (`s/<sha256>/`); `None` for the baseline.
    pub after_href: Option<String>,
    /// `won by 2411df5…ce799` (changed) or `held by …` (unchanged).
    pub summary: String,
}

/// One row of the entries table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EntryRow {
    /// Position in the round.
    pub index: u32,
    /// The entry's slug (`candidate-1-fast`).
    pub slug: String,
    /// Its entry page, relative to the site root.
    pub href: String,
    /// `baseline`, `incumbent`, `challenger`.
    pub role: Shown,
    /// The miner; `None` for the baseline.
    pub miner: Option<Shown>,
    /// The miner's page, relative to the site root.
    pub miner_href: Option<String>,
    /// `abcdef1…12345`; `None` for the baseline.
    pub patch_short: Option<Shown>,
    /// The submission's page (`s/<sha256>/`), relative to the site root.
    pub patch_href: Option<String>,
    /// `scored`, `disqualified`, `infra_failed`, or `not decided` for an entry an
    /// inconclusive round left undecided.
    pub status: Shown,
    /// CSS class of the status.
    pub status_class: &'static str,
    /// Whether an inconclusive round left it not decided: its score and interval are
    /// those of its per-pass ratios, and decide nothing.
    pub undecided: bool,
    /// The score (`—` unless scored or not decided).
    pub score: Shown,
    /// v3: the paired interval `[-9.9, +15.5] (50 % coverage, 2 passes)`; before: the
    /// runs' throughput range.
    pub spread: Option<Shown>,
    /// Median run throughput.
    pub throughput: Shown,
    /// Runs measured.
    pub runs: Shown,
    /// How long the entry took.
    pub duration: Shown,
    /// The engine's backend.
    pub backend: Shown,
    /// The correctness verdict in short.
    pub correctness: Option<Shown>,
    /// Why it was disqualified.
    pub disqualification: Option<DisqualificationRow>,
    /// Why it is `infra_failed`.
    pub infra_failure: Option<Shown>,
    /// Whether it holds the seat after the round.
    pub leads: bool,
}

/// A disqualification: its typed reason, the detail and the engine's log tail.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DisqualificationRow {
    /// `engine_died_before_healthy`, `sla_unmet`, …
    pub reason: Shown,
    /// The detail sentence.
    pub detail: Shown,
    /// The log tail, terminal escapes stripped, for a `<pre>` ([`log_tail_for_display`]);
    /// `None` when the receipt records none.
    pub log_tail: Option<Shown>,
}

/// One pass of a v3 round.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PassRow {
    /// The pass, from 1 for people.
    pub number: u32,
    /// Its order by entry index, `0 0c 1 4 3 2 5`.
    pub order: Shown,
    /// Whether it was void.
    pub void: Shown,
}

/// One run's telemetry (v9; content/measurement.md, Telemetry).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TelemetryRow {
    /// The entry, `1 candidate-1-miner-fast`.
    pub entry: String,
    /// The run, `A/A control, pass 2, re-run`.
    pub run: String,
    /// Its summary in words ([`format_telemetry`]), verified when its file is.
    pub summary: Shown,
    /// Whether the telemetry made the run invalid.
    pub invalid: bool,
}

/// Every run's telemetry row of `round`, in entry order, each entry's runs as they ran.
///
/// Errors: [`SiteError::InvalidId`] when an entry's slug cannot name a path.
fn telemetry_rows(round: &VerifiedRound) -> Result<Vec<TelemetryRow>, SiteError> {
    let record = &round.record;
    let mut rows = Vec::new();
    for entry in &record.entries {
        let slug = EntrySlug::of(record, entry.index)?;
        let mut attempts: BTreeMap<(u32, bool), u32> = BTreeMap::new();
        for pass in &entry.passes {
            let attempt = attempts.entry((pass.pass, pass.control)).or_insert(0);
            *attempt += 1;
            let Some(telemetry) = &pass.telemetry else {
                continue;
            };
            let control = if pass.control { "A/A control, " } else { "" };
            let rerun = if *attempt > 1 { ", re-run" } else { "" };
            rows.push(TelemetryRow {
                entry: format!("{} {}", entry.index, slug.as_str()),
                run: format!("{control}pass {}{rerun}", pass.pass + 1),
                summary: Shown::new(
                    untrusted(&format_telemetry(telemetry)),
                    round.file_verified(&telemetry.file),
                ),
                invalid: telemetry.violation.is_some(),
            });
        }
    }
    Ok(rows)
}

/// A run's telemetry summary in words: `cpu, 63 samples, longest gap 96 ms, steal at
/// most 12 ‰, CPU clock unavailable; valid`, with the GPU's extremes and software
/// throttle counts where NVML sampled, and the violation when there is one.
pub fn format_telemetry(t: &RunTelemetry) -> String {
    let mut parts = vec![
        format!("{}, {} samples", t.source.as_str(), t.samples),
        format!("longest gap {} ms", t.max_gap_ms),
        format!("steal at most {} ‰", t.max_steal_permille),
        match t.min_cpu_freq_khz {
            Some(khz) => format!("CPU clock at least {} MHz", khz / 1_000),
            None => "CPU clock unavailable".to_owned(),
        },
    ];
    if let Some(mhz) = t.min_sm_clock_mhz {
        parts.push(format!("busy SM clock at least {mhz} MHz"));
    }
    if let Some(c) = t.max_temperature_c {
        parts.push(format!("at most {c} °C"));
    }
    if let Some(mw) = t.max_power_mw {
        parts.push(format!("at most {} W", mw / 1_000));
    }
    if t.sw_power_cap_readings > 0 || t.sw_thermal_readings > 0 {
        parts.push(format!(
            "software power cap {} and thermal slowdown {} readings (recorded only)",
            t.sw_power_cap_readings, t.sw_thermal_readings
        ));
    }
    let verdict = match &t.violation {
        Some(violation) => format!("invalid: {violation}"),
        None => "valid".to_owned(),
    };
    format!("{}; {verdict}", parts.join(", "))
}

/// The step timeline: "23/23 steps", in groups.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Timeline {
    /// Steps that ran (not skipped).
    pub ran: usize,
    /// All steps.
    pub total: usize,
    /// Steps that failed.
    pub failed: usize,
    /// Consecutive steps of one group (`Setup`, `Baseline`, `Pass 2 of 3`, …).
    pub groups: Vec<StepGroup>,
}

/// One group of the timeline.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StepGroup {
    /// `Setup`, `Candidate 1 of 5 — …`, `Pass 2 of 3`.
    pub name: String,
    /// Whether the group is a pass (its steps name their entries).
    pub in_pass: bool,
    /// Whether the group is a pass that was void.
    pub void: bool,
    /// Steps of it that ran.
    pub ran: usize,
    /// Its steps.
    pub total: usize,
    /// The steps.
    pub steps: Vec<StepRow>,
}

/// One step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StepRow {
    /// Position in the round.
    pub index: u32,
    /// Within a pass: the entry it ran (`Candidate 1 of 5 — miner-fast e5595a3…88ea1`).
    pub entry: Option<String>,
    /// What it did (`starting the engine`, `Probing the machine`).
    pub name: String,
    /// Its phase (`starting_engine`).
    pub phase: &'static str,
    /// Its start, time of day UTC (`01:22:15.689`).
    pub started: String,
    /// Its start, for `<time datetime>` ([`html_datetime`]).
    pub started_iso: String,
    /// How long it took. (No "since the previous step": the runner starts each step as
    /// the one before ends, so that gap is only its own bookkeeping, a few milliseconds
    /// in every round; the view keeps it as `sincePreviousMs`.)
    pub duration: String,
    /// `ok`, `failed`, `skipped`.
    pub status: &'static str,
    /// CSS class of the status.
    pub status_class: &'static str,
    /// Whether every field of it is verified.
    pub verified: bool,
    /// Bundle-relative path of its log.
    pub log: Option<String>,
}

/// One seed with its commitment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SeedRow {
    /// `itemSeed`, …
    pub name: &'static str,
    /// sha256(seed ‖ salt), published before any entry ran.
    pub commitment: Shown,
    /// The revealed seed, hex.
    pub seed: Shown,
    /// The revealed salt, hex.
    pub salt: Shown,
}

/// Hardware at both ends of the round.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HardwareTable {
    /// One row per property.
    pub rows: Vec<HardwareRow>,
    /// Whether the fingerprints differ (`no`/`yes`).
    pub changed: Shown,
    /// Whether both fingerprints are verified.
    pub verified: bool,
}

/// One property of the hardware.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HardwareRow {
    /// `CPU`, `Memory`, …
    pub label: &'static str,
    /// At setup.
    pub at_start: String,
    /// At teardown.
    pub at_end: String,
    /// Whether they differ.
    pub differs: bool,
}

/// What changed since the previous round of the campaign.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Changes {
    /// The previous round's number; `None` for the first round (or when the previous
    /// round did not verify).
    pub previous: Option<u64>,
    /// Its page, relative to the site root.
    pub previous_href: Option<String>,
    /// `New leader: … (was …)` or `Leader unchanged: …`.
    pub leader: String,
    /// Whether the seat changed.
    pub new_leader: bool,
    /// Submissions seated now and not in the previous round.
    pub entered: Vec<SeatChange>,
    /// Submissions of the previous round not seated now.
    pub left: Vec<SeatChange>,
}

/// A submission that entered or left.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SeatChange {
    /// The miner.
    pub miner: String,
    /// `abcdef1…12345`.
    pub patch_short: String,
    /// Its submission page, relative to the site root.
    pub href: String,
}

/// Links around the round.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RoundNav {
    /// The campaign page, relative to the site root.
    pub campaign: String,
    /// The previous verified round's page.
    pub previous: Option<String>,
    /// The next verified round's page.
    pub next: Option<String>,
}

/// The files to download, relative to the site root (written by [`crate::machine`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Downloads {
    /// The bundle as a tar.
    pub bundle: String,
    /// The receipt (DSSE envelope).
    pub receipt: String,
    /// The trusted keyring.
    pub keyring: String,
}

/// The commands that check the bundle offline.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct VerifyHowTo {
    /// The directory the tar unpacks to.
    pub bundle_dir: String,
    /// The commands, one per line, to run in the directory holding both downloads.
    pub commands: Vec<String>,
    /// Whether the bundle's tlog-proofs are in `bundle.tar` (`<bundle_dir>.proof`), so
    /// that the command requires the round to be in the log (`--require-log`).
    pub require_log: bool,
    /// How to install `referee` ([`INSTALL_COMMAND`]).
    pub install: &'static str,
}

/// The command that installs `referee` from its repository (the workspace's
/// `repository`; README.md, Install).
pub const INSTALL_COMMAND: &str = concat!(
    "cargo install --locked --git ",
    env!("CARGO_PKG_REPOSITORY"),
    " referee"
);

/// What verification said.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct VerificationView {
    /// Whether the bundle verifies.
    pub passed: bool,
    /// Checks recorded.
    pub checks: usize,
    /// Checks that failed.
    pub failed: usize,
    /// Checks not applicable to the predicate version.
    pub not_applicable: usize,
    /// The predicate type.
    pub predicate_type: Option<String>,
    /// keyids that signed.
    pub signed_by: Vec<String>,
    /// Failed checks, `check target: message` (escaped).
    pub failures: Vec<String>,
    /// The instant its keys were checked at (RFC 3339).
    pub verified_at: String,
    /// Why that instant, in words, escaped ([`crate::archive::AsOf::describe`]).
    pub as_of: String,
}

/// Where a number comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SourceRow {
    /// The view's field.
    pub field: &'static str,
    /// Its unit.
    pub unit: &'static str,
    /// How it is obtained.
    pub from: &'static str,
    /// The checks that vouch for it.
    pub checks: String,
}

/// A row of `entries.csv` / `entries.json`: raw integers in the units their names carry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EntryTableRow {
    /// Position in the round.
    pub index: u32,
    /// The entry's slug.
    pub slug: String,
    /// `baseline`, `incumbent`, `challenger`.
    pub role: &'static str,
    /// The miner.
    pub miner: Option<String>,
    /// sha256 of the diff.
    pub patch: Option<String>,
    /// `scored`, `disqualified`, `infra_failed`.
    pub status: &'static str,
    /// The score, ppm (0 = baseline speed).
    pub score_ppm: Option<i64>,
    /// v3: the lowest paired score, ppm.
    pub score_min_ppm: Option<i64>,
    /// v3: the highest paired score, ppm.
    pub score_max_ppm: Option<i64>,
    /// v3: passes paired.
    pub passes: Option<u32>,
    /// Median run throughput, milli-requests/s.
    pub throughput_milli_rps: Option<u64>,
    /// Lowest run throughput, milli-requests/s.
    pub throughput_min_milli_rps: Option<u64>,
    /// Highest run throughput, milli-requests/s.
    pub throughput_max_milli_rps: Option<u64>,
    /// Runs measured.
    pub runs: usize,
    /// How long the entry took, ms.
    pub duration_ms: i64,
    /// The disqualification reason.
    pub reason: Option<&'static str>,
    /// Whether the score and throughput are verified.
    pub verified: bool,
}

impl TableRow for EntryTableRow {
    const COLUMNS: &'static [&'static str] = &[
        "index",
        "slug",
        "role",
        "miner",
        "patch",
        "status",
        "scorePpm",
        "scoreMinPpm",
        "scoreMaxPpm",
        "passes",
        "throughputMilliRps",
        "throughputMinMilliRps",
        "throughputMaxMilliRps",
        "runs",
        "durationMs",
        "reason",
        "verified",
    ];

    fn cells(&self) -> Vec<String> {
        fn opt<T: ToString>(v: Option<T>) -> String {
            v.map(|v| v.to_string()).unwrap_or_default()
        }
        vec![
            self.index.to_string(),
            self.slug.clone(),
            self.role.to_owned(),
            opt(self.miner.as_ref()),
            opt(self.patch.as_ref()),
            self.status.to_owned(),
            opt(self.score_ppm),
            opt(self.score_min_ppm),
            opt(self.score_max_ppm),
            opt(self.passes),
            opt(self.throughput_milli_rps),
            opt(self.throughput_min_milli_rps),
            opt(self.throughput_max_milli_rps),
            self.runs.to_string(),
            self.duration_ms.to_string(),
            opt(self.reason),
            self.verified.to_string(),
        ]
    }
}

/// An entry's status for people: its wire status, or `not decided` for an entry an
/// inconclusive round left undecided (`infra_failed` on the wire).
pub fn entry_status(e: &EntryView) -> Shown {
    if e.undecided {
        Shown::new("not decided", e.status.verified)
    } else {
        Shown::of(&e.status, |s| s.as_str().to_owned())
    }
}

/// The CSS class of an entry status.
pub fn entry_status_class(status: EntryStatus) -> &'static str {
    match status {
        EntryStatus::Scored => "ok",
        EntryStatus::Disqualified => "bad",
        EntryStatus::InfraFailed => "warn",
    }
}

fn step_status(status: StepStatus) -> (&'static str, &'static str) {
    match status {
        StepStatus::Ok => ("ok", "ok"),
        StepStatus::Failed => ("failed", "bad"),
        StepStatus::Skipped => ("skipped", "muted"),
    }
}

/// An entry's score, its spread (v3: the paired interval; before: the runs' throughput
/// range) and its throughput, as the round and entry pages show them.
///
/// An entry an inconclusive round left not decided shows the median and interval of its
/// per-pass ratios ([`EntryView::undecided_score`]) in their place; the page says they
/// decide nothing.
pub fn score_cells(view: &RoundView, e: &EntryView) -> (Shown, Option<Shown>, Shown) {
    let paired = !view.passes.is_empty();
    let score = match &e.undecided_score {
        Some(undecided) => Shown::of(undecided, |p| format_score_percent(p.median_ppm)),
        None => Shown::of(&e.score_ppm, |s| {
            s.map_or_else(|| "—".to_owned(), format_score_percent)
        }),
    };
    let spread = match e.paired_score.as_ref().or(e.undecided_score.as_ref()) {
        Some(p) => {
            let full = format_paired_score(&p.value);
            // The median is the score column; the rest (from `[`) is the interval.
            let interval = full
                .find('[')
                .map_or(full.as_str(), |i| &full[i..])
                .to_owned();
            Some(Shown::new(keep_percent(interval), p.verified))
        }
        None => match (
            e.throughput_min_milli_rps.value,
            e.throughput_max_milli_rps.value,
        ) {
            (Some(min), Some(max)) if !paired => Some(Shown::new(
                format!(
                    "runs {} – {}",
                    format_milli_rate(min, view.rate_unit()),
                    format_milli_rate(max, view.rate_unit())
                ),
                e.throughput_min_milli_rps.verified,
            )),
            _ => None,
        },
    };
    let ceiling = e.at_ceiling.value;
    let throughput = Shown::new(
        match e.throughput_milli_rps.value {
            Some(t) if view.self_reported_tokens.value => {
                format!(
                    "{} {SELF_REPORTED}",
                    format_entry_throughput(t, ceiling, view.rate_unit())
                )
            }
            Some(t) => format_entry_throughput(t, ceiling, view.rate_unit()),
            None => "—".to_owned(),
        },
        e.throughput_milli_rps.verified && (!ceiling || e.at_ceiling.verified),
    );
    (score, spread, throughput)
}

/// Micro-nats for people, in nats with 6 decimals: `1186369` → `1.186369 nats`.
pub fn format_micro_nats(micro_nats: u64) -> String {
    format!(
        "{}.{:06} nats",
        micro_nats / 1_000_000,
        micro_nats % 1_000_000
    )
}

/// A disqualification's reason, detail and log tail.
pub fn disqualification_row(e: &EntryView) -> Option<DisqualificationRow> {
    e.disqualification.as_ref().map(|d| DisqualificationRow {
        reason: Shown::of(&d.reason, |r| r.as_str().to_owned()),
        detail: Shown::of(&d.detail, |t| untrusted(t)),
        log_tail: (!d.log_tail.value.is_empty()).then(|| {
            Shown::new(
                log_tail_for_display(d.log_tail.value.join("\n").as_bytes(), LOG_TAIL_CHARS),
                d.log_tail.verified,
            )
        }),
    })
}

/// The round page of `round`, a round of `campaign`, with `previous` (the verified round
/// before it, for what changed), `next` (the number of the verified round after it) and
/// `seated` (when the holder of the seat after it took the seat, as its listing says:
/// [`RoundListing::seated`]). Returns the page and the entries table as `entries.csv`
/// and `entries.json` beside it.
///
/// Errors: [`SiteError::InvalidId`] when an entry's slug cannot name a path,
/// [`SiteError::Serialize`] when the table does not serialise.
pub fn round_page(
    campaign: &CampaignId,
    round: &VerifiedRound,
    previous: Option<&RoundListing>,
    next: Option<u64>,
    seated: Option<SeatTaken>,
) -> Result<PageOut<RoundPage>, SiteError> {
    let view = &round.view;
    let record = &round.record;
    let dir = SiteDir::round(campaign, round.number);
    let paired = !view.passes.is_empty();

    let mut entries = Vec::new();
    let mut table = Vec::new();
    for e in &view.entries {
        let slug = EntrySlug::of(record, e.index)?;
        let (score, spread, throughput) = score_cells(view, e);
        let leads = e.patch.value.is_some()
            && view.leader_after.value.as_ref().map(|l| &l.patch) == e.patch.value.as_ref();
        table.push(EntryTableRow {
            index: e.index,
            slug: slug.as_str().to_owned(),
            role: e.role.value.as_str(),
            miner: e.miner.value.as_ref().map(ToString::to_string),
            patch: e.patch.value.as_ref().map(ToString::to_string),
            status: e.status.value.as_str(),
            score_ppm: e.score_ppm.value,
            score_min_ppm: e.paired_score.as_ref().map(|p| p.value.min_ppm),
            score_max_ppm: e.paired_score.as_ref().map(|p| p.value.max_ppm),
            passes: e.paired_score.as_ref().map(|p| p.value.passes),
            throughput_milli_rps: e.throughput_milli_rps.value,
            throughput_min_milli_rps: e.throughput_min_milli_rps.value,
            throughput_max_milli_rps: e.throughput_max_milli_rps.value,
            runs: e.runs.value,
            duration_ms: e.duration_ms.value,
            reason: e.disqualification.as_ref().map(|d| d.reason.value.as_str()),
            verified: e.score_ppm.verified && e.throughput_milli_rps.verified,
        });
        entries.push(EntryRow {
            index: e.index,
            href: SiteDir::entry(campaign, round.number, &slug)
                .as_str()
                .to_owned(),
            slug: slug.as_str().to_owned(),
            role: Shown::of(&e.role, |r| r.as_str().to_owned()),
            miner: e
                .miner
                .value
                .as_ref()
                .map(|m| Shown::new(untrusted(m.as_str()), e.miner.verified)),
            miner_href: e
                .miner
                .value
                .as_ref()
                .map(|m| SiteDir::miner(m).as_str().to_owned()),
            patch_short: e
                .patch_short
                .value
                .as_ref()
                .map(|p| Shown::new(p.clone(), e.patch_short.verified)),
            patch_href: e
                .patch
                .value
                .as_ref()
                .map(|p| SiteDir::submission(p).as_str().to_owned()),
            status: entry_status(e),
            status_class: entry_status_class(e.status.value),
            undecided: e.undecided,
            score,
            spread,
            throughput,
            runs: Shown::of(&e.runs, ToString::to_string),
            duration: Shown::of(&e.duration_ms, |d| format_duration_ms(*d)),
            backend: Shown::of(&e.backend, |b| b.as_str().to_owned()),
            correctness: e.correctness.as_ref().map(|c| {
                Shown::of(c, |c| {
                    format!(
                        "{} · max item {} · max group mean {}",
                        if c.passed { "passed" } else { "failed" },
                        format_micro_nats(c.max_item_micro_nats),
                        format_micro_nats(c.max_group_mean_micro_nats)
                    )
                })
            }),
            disqualification: disqualification_row(e),
            infra_failure: e
                .infra_failure
                .as_ref()
                .filter(|_| !e.undecided)
                .map(|i| Shown::of(i, |t| untrusted(t))),
            leads,
        });
    }
    let (entries_table, files) = table_files(&dir, "entries", &table)?;

    let top_score = match &view.top_score {
        Some(top) => {
            let holder = view.entry(top.entry);
            let href = entries
                .iter()
                .find(|e| e.index == top.entry)
                .map(|e| e.href.clone())
                .unwrap_or_default();
            Some(TopScoreView {
                score: Shown::of(&top.score_ppm, |s| format_score_percent(*s)),
                holder: holder
                    .and_then(|e| e.miner.value.as_ref())
                    .map_or_else(|| "the baseline".to_owned(), |m| untrusted(m.as_str())),
                href,
            })
        }
        None => None,
    };

    let leader_verified = view.leader_changed.verified && view.leader_after.verified;
    let after = view.leader_after.value.as_ref();
    let leader = LeaderView {
        changed: view.leader_changed.value,
        headline: if view.leader_changed.value {
            "Changed"
        } else {
            "Unchanged"
        }
        .to_owned(),
        verified: leader_verified,
        before: untrusted(&format_leader(view.leader_before.value.as_ref())),
        after: untrusted(&format_leader(after)),
        after_href: after.map(|l| SiteDir::submission(&l.patch).as_str().to_owned()),
        summary: match (view.leader_changed.value, after) {
            (true, Some(l)) => format!("won by {}", seat(l)),
            (true, None) => "back to the baseline".to_owned(),
            (false, Some(l)) => format!("held by {}", seat(l)),
            (false, None) => "held by the baseline".to_owned(),
        },
    };

    let changes = changes(campaign, view, previous);
    let mut files: Vec<ExtraFile> = files.into();
    let log = round_log(&dir, round, &mut files)?;
    let bundle_dir = bundle_dir_name(campaign, round.number);
    // The tarball holds the proofs when the page serves them (machine::round_files).
    let require_log = log.as_ref().is_some_and(|l| l.proof.is_some());
    let verify = VerifyHowTo {
        commands: vec![
            "tar -xf bundle.tar".to_owned(),
            format!(
                "referee verify --keyring keyring.json --at {}{} {bundle_dir}",
                round.verified_at.to_rfc3339(),
                if require_log { " --require-log" } else { "" }
            ),
        ],
        bundle_dir,
        require_log,
        install: INSTALL_COMMAND,
    };
    let seat_after = view.leader_after.value.as_ref();
    let seat = SeatBox {
        seated: seated.map(|taken| SeatedView::of(campaign, taken)),
        ..seat_box(
            seat_after,
            view.margin_bp.value,
            view.entries
                .iter()
                .find(|e| e.patch.value.as_ref() == seat_after.map(|l| &l.patch))
                .and_then(|e| e.throughput_milli_rps.value)
                .map(|t| (t, round.number)),
            None,
        )
    };
    let model = RoundPage {
        seat,
        campaign: campaign.to_string(),
        round: round.number,
        title: format!("Round {} · {}", round.number, view.status.value.as_str()),
        status: Shown::of(&view.status, |s| s.as_str().to_owned()),
        status_class: match view.status.value {
            RoundStatus::Complete => "ok",
            RoundStatus::InfraFailed => "bad",
            RoundStatus::Inconclusive => "warn",
        },
        status_reason: (view.status.value != RoundStatus::Complete)
            .then(|| Shown::of(&view.verdict, |t| untrusted(t))),
        predicate_version: view
            .verification
            .predicate_version
            .unwrap_or("unknown")
            .to_owned(),
        counts: Shown::of(&view.counts, |c| {
            let mut text = format!("{} scored · {} disqualified", c.scored, c.disqualified);
            if c.infra_failed > 0 {
                text.push_str(&format!(" · {} infra_failed", c.infra_failed));
            }
            if c.undecided > 0 {
                text.push_str(&format!(" · {} not decided", c.undecided));
            }
            text
        }),
        undecided: view.entries.iter().any(|e| e.undecided),
        settled_in: Shown::of(&view.settled_in_ms, |ms| format_duration_ms(*ms)),
        started: Moment::of(&view.started_at),
        ended: Moment::of(&view.ended_at),
        top_score,
        leader,
        decision: Shown::of(&view.decision, |d| untrusted(d)),
        margin: Shown::of(&view.margin_bp, |m| {
            verifier::view::format_bp_percent(u64::from(*m))
        }),
        sla: Shown::of(&view.sla, |s| untrusted(s)),
        self_reported_tokens: view.self_reported_tokens.value,
        request_sequence_digest: Shown::of(&view.request_sequence_digest, ToString::to_string),
        campaign_digest: Shown::of(&view.campaign_digest, ToString::to_string),
        previous_receipt: record.previous_receipt.as_ref().map(ToString::to_string),
        statement_digest: view
            .verification
            .statement_digest
            .as_ref()
            .map(ToString::to_string),
        tool: Shown::of(&view.tool, |t| {
            untrusted(&format!(
                "{} {} (commit {})",
                t.name, t.version, t.git_commit
            ))
        }),
        entries,
        entries_table,
        paired,
        noise: view.noise.as_ref().map(|n| Shown::of(n, format_noise)),
        client_self_test: view
            .client_self_test
            .as_ref()
            .map(|t| Shown::of(t, format_client_self_test)),
        pod: view.pod.as_ref().map(|p| Shown::of(p, format_pod)),
        capability_probe: view.capability_probe.as_ref().map(|p| CapabilityShown {
            findings: p
                .value
                .findings
                .iter()
                .map(|f| untrusted(&format_capability_finding(f)))
                .collect(),
            duration_ms: p.value.duration_ms,
            verified: p.verified,
        }),
        decide: view.decide.as_ref().map(|d| decide_shown(view, d)),
        telemetry: telemetry_rows(round)?,
        passes: view
            .passes
            .iter()
            .map(|p| PassRow {
                number: p.index + 1,
                order: Shown::of(&p.order, |o| format_pass_order(o)),
                void: Shown::of(&p.void, |v| if *v { "void" } else { "counted" }.to_owned()),
            })
            .collect(),
        drift: view.drift.as_ref().map(|d| {
            let text = format!(
                "first baseline {} → drift baseline {}: {} (bound {} bp), {}",
                format_milli_rate(d.first_milli_rps.value, view.rate_unit()),
                d.drift_milli_rps.value.map_or_else(
                    || "none".to_owned(),
                    |t| format_milli_rate(t, view.rate_unit())
                ),
                d.drift_bp
                    .value
                    .map_or_else(|| "—".to_owned(), |b| format!("{b} bp")),
                d.bound_bp.value,
                if d.within_bound.value {
                    "within the bound"
                } else {
                    "over the bound"
                }
            );
            Shown::new(
                text,
                d.first_milli_rps.verified && d.drift_milli_rps.verified && d.within_bound.verified,
            )
        }),
        timeline: timeline(view, record),
        seeds: view
            .seeds
            .iter()
            .map(|s| SeedRow {
                name: s.name,
                commitment: Shown::of(&s.commitment, ToString::to_string),
                seed: Shown::of(&s.seed, |v| v.to_hex()),
                salt: Shown::of(&s.salt, |v| v.to_hex()),
            })
            .collect(),
        hardware: hardware_table(view),
        changes,
        nav: RoundNav {
            campaign: SiteDir::campaign(campaign).as_str().to_owned(),
            previous: previous.map(|p| SiteDir::round(campaign, p.number).as_str().to_owned()),
            next: next.map(|n| SiteDir::round(campaign, n).as_str().to_owned()),
        },
        downloads: Downloads {
            bundle: bundle_tar_path(campaign, round.number)?.to_string(),
            receipt: dir.file(ENVELOPE_FILE)?.to_string(),
            keyring: keyring_path()?.to_string(),
        },
        verify,
        verification: VerificationView {
            passed: view.verification.passed,
            checks: view.verification.checks,
            failed: view.verification.failed,
            not_applicable: view.verification.not_applicable,
            predicate_type: view.verification.predicate_type.clone(),
            signed_by: view.verification.signed_by.clone(),
            failures: view
                .verification
                .failures
                .iter()
                .map(|f| {
                    let target = f
                        .target
                        .as_deref()
                        .map(|t| format!(" {}", untrusted(t)))
                        .unwrap_or_default();
                    format!("{}{target}: {}", f.check.as_str(), untrusted(&f.message))
                })
                .collect(),
            verified_at: round.verified_at.to_string(),
            as_of: untrusted(&round.as_of.describe()),
        },
        sources: view
            .sources
            .iter()
            .map(|s| SourceRow {
                field: s.field,
                unit: s.unit,
                from: s.from,
                checks: std::iter::once("signature.trusted")
                    .chain(s.checks.iter().copied())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
            .collect(),
        log,
        beacon: view.beacon.as_ref().map(|b| {
            Shown::of(b, |b| {
                format!(
                    "The seeds derive from the evaluator's committed secret and a beacon: \
                     source {}, round {}, value {}{}",
                    b.source.as_str(),
                    b.round,
                    short_seed(&b.value),
                    if b.source.is_signed() {
                        ": its signature on the round is checked offline against the chain's key"
                    } else {
                        ": unsigned, a file the evaluator wrote, whose value the evaluator could \
                         have chosen"
                    }
                )
            })
        }),
        beacon_unsigned: view
            .beacon
            .as_ref()
            .is_some_and(|b| !b.value.source.is_signed()),
        practice: view.practice.value.then(|| {
            Shown::new(
                "Practice round: the evaluator gave its seeds (--seeds), so it moves no seat",
                view.practice.verified,
            )
        }),
        title_round: (view.title_round.as_ref())
            .map(|t| Shown::new(format!("Title: {}", t.value), t.verified)),
        attested: AttestedMarks::of_predicate(),
        fast_track: super::fast::fast_track_section(record),
    };
    Ok(PageOut {
        dir,
        template: TEMPLATE,
        model,
        files,
    })
}

/// The round page's words for a `decide` campaign's round record `d`.
fn decide_shown(
    view: &verifier::view::RoundView,
    d: &Field<receipts::model::DecideRound>,
) -> DecideShown {
    let track = d.value.track.map_or("no track", |t| t.as_str());
    let weights = (d.value.weights.iter())
        .map(|w| {
            let who = match view.entry(w.entry) {
                Some(e) => format!("entry {} ({})", w.entry, e.role.value.as_str()),
                None => format!("entry {}", w.entry),
            };
            let files: Vec<String> = (w.files.iter())
                .map(|f| format!("{} sha256 {}", f.name, f.sha256))
                .collect();
            let source = match w.source {
                receipts::model::WeightsSource::Pinned => "byte-identical to the pins",
            };
            untrusted(&format!("{who}: {} ({source})", files.join(", ")))
        })
        .collect();
    DecideShown {
        track: format!(
            "{track} · workload decide: one decision per request, throughput in decisions per \
             second"
        ),
        weights,
        verified: d.verified,
    }
}

/// What the round page shows of the round's log entries, with its proofs file
/// (`<data>/<campaign>/rounds/<n>.proof`, written at seal beside the bundle) copied
/// beside the page as `round.proof`.
///
/// Errors: [`SiteError::Io`] when the proofs file exists but cannot be read.
fn round_log(
    dir: &SiteDir,
    round: &VerifiedRound,
    files: &mut Vec<ExtraFile>,
) -> Result<Option<RoundLogView>, SiteError> {
    let Some(log) = &round.record.transparency_log else {
        return Ok(None);
    };
    let RoundLog::Logged {
        origin,
        round_opened_index,
        opening_witness,
    } = log
    else {
        return Ok(Some(RoundLogView {
            logged: false,
            origin: String::new(),
            round_opened_index: 0,
            witness: String::new(),
            proof: None,
        }));
    };
    let proof_file = round.dir.with_extension("proof");
    let proof = if proof_file.is_file() {
        let bytes = std::fs::read(&proof_file)
            .map_err(receipts::fsutil::IoError::at("reading", &proof_file))?;
        let path = dir.file("round.proof")?;
        let href = path.as_str().to_owned();
        files.push(ExtraFile { path, bytes });
        Some(href)
    } else {
        None
    };
    Ok(Some(RoundLogView {
        logged: true,
        origin: untrusted(origin),
        round_opened_index: *round_opened_index,
        witness: opening_witness.as_ref().map_or_else(
            || "not witnessed".to_owned(),
            |w| {
                format!(
                    "witnessed by {} (checkpoint of {} entries)",
                    untrusted(&w.name),
                    w.checkpoint_size
                )
            },
        ),
        proof,
    }))
}

/// `f98bb88…18dfc (fast)`, escaped.
fn seat(leader: &Leader) -> String {
    untrusted(&format_leader(Some(leader)))
}

/// What changed since `previous`: the seat, and the submissions seated in one round and
/// not the other (by patch).
fn changes(campaign: &CampaignId, view: &RoundView, previous: Option<&RoundListing>) -> Changes {
    // Each entry's `(miner, patch)`, escaped, for those with a patch.
    fn seated<'a>(
        entries: impl Iterator<Item = (Option<&'a MinerId>, Option<&'a Sha256Hex>)>,
    ) -> Vec<(String, Sha256Hex)> {
        entries
            .filter_map(|(miner, patch)| {
                let miner = miner.map_or_else(String::new, |m| untrusted(m.as_str()));
                Some((miner, *patch?))
            })
            .collect()
    }
    let now =
        seated((view.entries.iter()).map(|e| (e.miner.value.as_ref(), e.patch.value.as_ref())));
    let before = previous
        .map(|p| {
            seated(
                p.entries
                    .iter()
                    .map(|e| (e.miner.as_ref(), e.patch.as_ref())),
            )
        })
        .unwrap_or_default();
    let change = |(miner, patch): &(String, Sha256Hex)| SeatChange {
        miner: miner.clone(),
        patch_short: patch.short(),
        href: SiteDir::submission(patch).as_str().to_owned(),
    };
    let after = view.leader_after.value.as_ref();
    let leader = if view.leader_changed.value {
        format!(
            "New leader: {} (was {})",
            untrusted(&format_leader(after)),
            untrusted(&format_leader(view.leader_before.value.as_ref()))
        )
    } else {
        format!("Leader unchanged: {}", untrusted(&format_leader(after)))
    };
    Changes {
        previous: previous.map(|p| p.number),
        previous_href: previous.map(|p| SiteDir::round(campaign, p.number).as_str().to_owned()),
        leader,
        new_leader: view.leader_changed.value,
        entered: now
            .iter()
            .filter(|(_, p)| previous.is_some() && !before.iter().any(|(_, b)| b == p))
            .map(change)
            .collect(),
        left: before
            .iter()
            .filter(|(_, p)| !now.iter().any(|(_, n)| n == p))
            .map(change)
            .collect(),
    }
}

/// The pass a step belongs to, from the `pass k` part of its name after its group
/// (`Baseline, A/A control, pass 2, running SLA` → 2), and the name without its group and
/// that part (`A/A control, running SLA`); `None` and the name without its group when it
/// names no pass.
fn step_pass(group: &str, name: &str) -> (Option<u32>, String) {
    let rest = name
        .strip_prefix(group)
        .and_then(|r| r.strip_prefix(", "))
        .unwrap_or(name);
    let parts: Vec<&str> = rest.split(", ").collect();
    let pass_of = |part: &str| -> Option<u32> {
        let digits = part.strip_prefix("pass ")?;
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse().ok()
    };
    match parts.iter().position(|p| pass_of(p).is_some()) {
        Some(at) => {
            let pass = pass_of(parts[at]);
            let others: Vec<&str> = parts
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != at)
                .map(|(_, p)| *p)
                .collect();
            (pass, others.join(", "))
        }
        None => (None, rest.to_owned()),
    }
}

/// The timeline: consecutive steps of one group together; from v3, steps of one pass
/// together under `Pass k of n`, each naming its entry.
/// One step as the timelines show it, with the pass (from 1) it ran in when the round
/// ran in passes: within a pass its entry in `entry` and its name without the entry and
/// the pass; else its name without its group.
pub fn step_row(step: &StepView, record: &RoundRecord) -> (Option<u32>, StepRow) {
    let (pass, rest) = step_pass(&step.group.value, &step.name.value);
    let pass = pass.filter(|_| !record.passes.is_empty());
    let entry = pass.map(|_| untrusted(&step.group.value));
    let name = if entry.is_some() {
        untrusted(&rest)
    } else {
        // Before v3 no step names a pass: only the group is dropped.
        let full = step.name.value.as_str();
        untrusted(
            full.strip_prefix(step.group.value.as_str())
                .and_then(|r| r.strip_prefix(", "))
                .unwrap_or(full),
        )
    };
    let (status, status_class) = step_status(step.status.value);
    let row = StepRow {
        index: step.index,
        entry,
        name,
        phase: step.phase.value.as_str(),
        started: format_time_of_day(step.started_at.value),
        started_iso: html_datetime(step.started_at.value),
        duration: format_duration_ms(step.duration_ms.value),
        status,
        status_class,
        verified: step.verified(),
        log: step.log.as_ref().map(|l| untrusted(&l.value)),
    };
    (pass, row)
}

fn timeline(view: &RoundView, record: &RoundRecord) -> Timeline {
    let passes = record.passes.len();
    let mut groups: Vec<StepGroup> = Vec::new();
    for step in &view.steps {
        let (pass, row) = step_row(step, record);
        let (group, void) = match pass {
            Some(k) => (
                format!("Pass {k} of {passes}"),
                record.passes.iter().any(|p| p.index + 1 == k && p.void),
            ),
            None => (untrusted(&step.group.value), false),
        };
        let ran = usize::from(step.status.value != StepStatus::Skipped);
        match groups.last_mut() {
            Some(last) if last.name == group => {
                last.ran += ran;
                last.total += 1;
                last.steps.push(row);
            }
            _ => groups.push(StepGroup {
                in_pass: pass.is_some(),
                name: group,
                void,
                ran,
                total: 1,
                steps: vec![row],
            }),
        }
    }
    Timeline {
        ran: groups.iter().map(|g| g.ran).sum(),
        total: view.steps.len(),
        failed: view
            .steps
            .iter()
            .filter(|s| s.status.value == StepStatus::Failed)
            .count(),
        groups,
    }
}

/// The hardware rows, start against end.
fn hardware_table(view: &RoundView) -> HardwareTable {
    let hw = &view.hardware;
    let rows = [
        ("CPU", hw_cpu as fn(&HardwareFingerprint) -> String),
        ("Logical CPUs", |h| h.cpu_count.to_string()),
        ("Memory", |h| {
            let tenths = u128::from(h.memory_bytes) * 10 / (1 << 30);
            format!("{}.{} GiB", tenths / 10, tenths % 10)
        }),
        ("OS", |h| untrusted(&h.os)),
        ("Kernel", |h| untrusted(&h.kernel)),
        ("GPUs", hw_gpus),
        ("CPU features", |h| untrusted(&h.cpu_features.join(" "))),
    ]
    .into_iter()
    .map(|(label, show)| {
        let at_start = show(&hw.at_start.value);
        let at_end = show(&hw.at_end.value);
        HardwareRow {
            label,
            differs: at_start != at_end,
            at_start,
            at_end,
        }
    })
    .collect();
    HardwareTable {
        rows,
        changed: Shown::of(&hw.changed, |c| if *c { "yes" } else { "no" }.to_owned()),
        verified: hw.at_start.verified && hw.at_end.verified,
    }
}

fn hw_cpu(h: &HardwareFingerprint) -> String {
    untrusted(&h.cpu_model)
}

fn hw_gpus(h: &HardwareFingerprint) -> String {
    if h.gpus.is_empty() {
        return "none".to_owned();
    }
    let gpus: Vec<String> = h
        .gpus
        .iter()
        .map(|g| {
            let tenths = u128::from(g.memory_bytes) * 10 / (1 << 30);
            format!(
                "{} ({}.{} GiB, compute {}, driver {})",
                g.name,
                tenths / 10,
                tenths % 10,
                g.compute_capability,
                g.driver_version
            )
        })
        .collect();
    untrusted(&gpus.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A VM's CPU twin, and a GPU run invalid for a hardware slowdown, in words.
    #[test]
    fn telemetry_reads_as_its_summary_and_verdict() {
        let cpu = RunTelemetry {
            file: "telemetry/baseline-pass-1.json".to_owned(),
            source: receipts::model::TelemetrySource::Cpu,
            samples: 48,
            max_gap_ms: 92,
            max_steal_permille: 12,
            min_cpu_freq_khz: None,
            min_sm_clock_mhz: None,
            max_temperature_c: None,
            max_power_mw: None,
            sw_power_cap_readings: 0,
            sw_thermal_readings: 0,
            violation: None,
        };
        assert_eq!(
            format_telemetry(&cpu),
            "cpu, 48 samples, longest gap 92 ms, steal at most 12 ‰, CPU clock unavailable; valid"
        );
        let gpu = RunTelemetry {
            source: receipts::model::TelemetrySource::Nvml,
            min_cpu_freq_khz: Some(1_900_000),
            min_sm_clock_mhz: Some(1_755),
            max_temperature_c: Some(84),
            max_power_mw: Some(700_000),
            sw_power_cap_readings: 2,
            sw_thermal_readings: 1,
            violation: Some(receipts::model::TelemetryViolation::Throttled {
                t_ms: 160,
                device: 1,
                reason: receipts::model::ThrottleReason::HwSlowdown,
            }),
            ..cpu
        };
        assert_eq!(
            format_telemetry(&gpu),
            "nvml, 48 samples, longest gap 92 ms, steal at most 12 ‰, CPU clock at least 1900 \
             MHz, busy SM clock at least 1755 MHz, at most 84 °C, at most 700 W, software power \
             cap 2 and thermal slowdown 1 readings (recorded only); invalid: GPU 1 throttled \
             (hw_slowdown) at 160 ms"
        );
    }
    use crate::pages::untrusted_clipped;

    #[test]
    fn steps_name_their_pass() {
        let group = "Candidate 1 of 5 — miner-fast e5595a3…88ea1";
        let cases = [
            (
                "Baseline",
                "Baseline, pass 1, starting the engine",
                Some(1),
                "starting the engine",
            ),
            (
                "Baseline",
                "Baseline, A/A control, pass 12, running SLA",
                Some(12),
                "A/A control, running SLA",
            ),
            (
                group,
                &format!("{group}, pass 3, re-run, running SLA"),
                Some(3),
                "re-run, running SLA",
            ),
            (
                "Baseline",
                "Baseline, starting the engine",
                None,
                "starting the engine",
            ),
            ("Setup", "Probing the machine", None, "Probing the machine"),
            (
                "Baseline",
                "Baseline, pass 2x, running SLA",
                None,
                "pass 2x, running SLA",
            ),
            (
                "Baseline",
                "Baseline, pass , running SLA",
                None,
                "pass , running SLA",
            ),
        ];
        for (group, name, pass, rest) in cases {
            assert_eq!(step_pass(group, name), (pass, rest.to_owned()), "{name}");
        }
    }

    #[test]
    fn times_and_text_for_people() {
        let at: Timestamp = "2026-09-17T12:46:59.999Z".parse().unwrap();
        assert_eq!(format_utc_minute(at), "Sep 17, 2026, 12:46 UTC");
        let at: Timestamp = "2026-12-02T01:22:15.689518Z".parse().unwrap();
        assert_eq!(html_datetime(at), "2026-12-02T01:22:15.689Z");
        assert_eq!(format_micro_nats(1_186_369), "1.186369 nats");
        assert_eq!(format_micro_nats(7), "0.000007 nats");
        assert_eq!(untrusted_clipped("ab\u{202e}", 10), "ab\\u{202e}");
        assert_eq!(untrusted_clipped("éé\u{202e}é", 3), "éé\\u{202e}…");
        assert_eq!(untrusted_clipped("ééé", 3), "ééé");
    }
}
