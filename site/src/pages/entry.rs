//! The entry page, `/c/<campaign>/r/<n>/e/<slug>/`: one entry of a round in full — its
//! provenance (the patch digest and the diff itself, highlighted by [`super::diff`]; the
//! engine's backend, config digest, command line and isolation; the hardware), its rate
//! search per run (probe rate against the SLA percentile, the bound, pass and fail) as an
//! SVG chart with its table, latency percentiles of TTFT, TPOT, ITL and e2e decoded from
//! the HdrHistogram blobs of each run's result probe with a percentile plot, the per-item
//! correctness distances with the group means and both bounds, the timed-run output
//! sample, and the tail of its engine log.
//!
//! The files are the bundle's own: each is read only if its bytes still hash to the
//! digest its signed Statement records, so they are the bytes the verifier read strictly
//! ([`VerifiedRound::read_json`]); the diff and the engine log's tail likewise
//! ([`VerifiedRound::read_bytes`], [`VerifiedRound::read_tail`]); histograms are decoded
//! into their recorded buckets through [`decode_recorded`], with its limits; a load
//! sample is read for its gaps only (`SampleShown`), a correctness file without its
//! top-k lists (`ItemsShown`). A file that cannot be read is said so on the page; it
//! never fails the build (the bundle verified, so it does not happen unless the directory
//! changed under the build). Untrusted text is escaped when the model is built, as on the
//! round page.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use receipts::layout::{commitment_input, patch_input};
use receipts::model::{
    CampaignId, CorrectnessItems, Entry, EntryMeasurement, HostLoad, LatencyKind,
    LoadSampleCheckFields, LoadSampleCheckKind, PassStatus, Percentile, ProbeRecord, ProbeVerdict,
    RoundRecord, RunMeasurement,
};
use receipts::rules::correctness::verdict_from_artifact;
use receipts::rules::histogram::{Recorded, decode_recorded};
use receipts::rules::sla::walk_recorded;
use receipts::text::log_tail_for_display;
use verifier::view::{RateUnit, entry_group, format_duration_ms, format_milli_rate};

use super::diff::{HighlightedDiff, highlight};
use super::round::{
    AttestedMarks, DisqualificationRow, Shown, StepRow, disqualification_row, entry_status,
    entry_status_class, format_micro_nats, score_cells, step_row,
};
use super::{
    ExtraFile, PageOut, TableLinks, TableRow, table_files, untrusted, untrusted_clipped, wire_name,
};
use crate::archive::VerifiedRound;
use crate::error::SiteError;
use crate::paths::{EntrySlug, SiteDir};
use crate::svg::{
    CorrectnessData, PercentilePoint, PercentileSeries, RateProbe, correctness_chart,
    percentile_plot, rate_search,
};

/// The template of the entry page.
pub const TEMPLATE: &str = "entry.html";

/// Bytes read from the end of an engine log.
pub const ENGINE_LOG_TAIL_BYTES: u64 = 64 << 10;

/// Characters of the engine log's tail shown.
pub const ENGINE_LOG_CHARS: usize = 8_000;

/// Largest diff read, bytes (intake refuses far smaller ones).
pub const MAX_DIFF_BYTES: usize = 16 << 20;

/// Characters of an engine's command line shown.
pub const COMMAND_CHARS: usize = 4_000;

/// The percentiles of the latency tables, in tenths of a percent, and their labels; the
/// table adds the maximum.
pub const TABLE_PERCENTILES: [(u32, &str); 5] = [
    (500, "p50"),
    (900, "p90"),
    (950, "p95"),
    (990, "p99"),
    (999, "p99.9"),
];

/// The percentiles the percentile plot samples, tenths of a percent (what nearest rank
/// over a [`Percentile`] can name).
pub const PLOT_PERCENTILES: [u32; 7] = [500, 750, 900, 950, 990, 995, 999];

/// Every percentile of [`TABLE_PERCENTILES`] and [`PLOT_PERCENTILES`], ascending, tenths
/// of a percent: what one walk of a histogram ([`walked_values`]) reads.
const WALKED_PERCENTILES: [u32; 7] = [500, 750, 900, 950, 990, 995, 999];

/// The nearest-rank value of each of [`WALKED_PERCENTILES`] in `h`, in their order, in one
/// walk ([`walk_recorded`]: each what `receipts::rules::sla::nearest_rank_value` gives, the
/// rank's bucket as `highest_equivalent`), or 0 for an empty histogram.
fn walked_values(h: &Recorded) -> [u64; 7] {
    // Every constant is in 1..=999, so none falls back to the default.
    let percentiles = WALKED_PERCENTILES.map(|p| Percentile::from_permille(p).unwrap_or_default());
    walk_recorded(h, percentiles, 0, None)
        .values
        .map(|v| v.unwrap_or(0))
}

/// One step of an entry, with the pass it ran in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EntryStep {
    /// The pass, from 1; `None` for a round not run in passes (before v3).
    pub pass: Option<u32>,
    /// The step.
    pub step: StepRow,
}

/// The entry page's model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EntryPage {
    /// The campaign id.
    pub campaign: String,
    /// The round number.
    pub round: u64,
    /// The entry's slug.
    pub slug: String,
    /// `Round 2 · candidate-1-fast`.
    pub title: String,
    /// The round page, relative to the site root.
    pub round_href: String,
    /// `baseline`, `incumbent`, `challenger`.
    pub role: Shown,
    /// The miner.
    pub miner: Option<Shown>,
    /// The miner's page.
    pub miner_href: Option<String>,
    /// The submission's page.
    pub patch_href: Option<String>,
    /// `scored`, `disqualified`, `infra_failed`, or `not decided` (an inconclusive
    /// round's entry).
    pub status: Shown,
    /// CSS class of the status.
    pub status_class: &'static str,
    /// Whether an inconclusive round left it not decided: the score and interval are its
    /// per-pass ratios' and decide nothing.
    pub undecided: bool,
    /// The score.
    pub score: Shown,
    /// The paired interval (v3) or the runs' range.
    pub spread: Option<Shown>,
    /// Median run throughput.
    pub throughput: Shown,
    /// How long the entry took.
    pub duration: Shown,
    /// Its own steps in the order they ran, every pass of it (the round page groups
    /// them by pass): what happened to this entry, start to end.
    pub steps: Vec<EntryStep>,
    /// Why it was disqualified.
    pub disqualification: Option<DisqualificationRow>,
    /// Why it is `infra_failed`.
    pub infra_failure: Option<Shown>,
    /// The SLA, `p95:e2e:300ms`.
    pub sla: String,
    /// Where it came from.
    pub provenance: Provenance,
    /// Every run (from v3 every run of every pass), in order.
    pub runs: Vec<RunView>,
    /// Every probe of every run as CSV and JSON.
    pub probes_table: TableLinks,
    /// The latency percentiles as CSV and JSON.
    pub latency_table: TableLinks,
    /// The SLA latency of each run's result probe by percentile, SVG (ours).
    pub percentile_chart: String,
    /// The correctness distances.
    pub correctness: Option<CorrectnessView>,
    /// The timed-run output sample (v3).
    pub load_sample: Option<LoadSampleView>,
    /// The engine log's tail.
    pub engine_log: Option<LogView>,
    /// Which values shown the verifier only attests.
    pub attested: AttestedMarks,
    /// The review that let a repository submission run (v8); none for the baseline and a
    /// diff.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review: Option<EntryReviewShown>,
}

/// An entry's review on its page (content/review.md, In the round), from the bundle's
/// copy of its review record; every text from the record escaped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EntryReviewShown {
    /// The copy's bundle-relative name, escaped.
    pub file: String,
    /// What let it run: `PASS`, or `PASS (resolved by the evaluator)`.
    pub decision: String,
    /// The submission it is derived from (`derivedFrom`), escaped.
    pub derived_from: Option<String>,
    /// The review read from the copy: verdict, rules, findings, LLM review, copy
    /// detection, resolution.
    pub shown: Option<super::submission::ReviewView>,
    /// Why the copy cannot be read, when it cannot.
    pub error: Option<String>,
}

/// The page's review of `entry`, read from the bundle of `round`.
fn entry_review_shown(round: &VerifiedRound, entry: &Entry) -> Option<EntryReviewShown> {
    let review = entry.review.as_ref()?;
    let read = round.read_json::<receipts::model::ReviewRecord>(&review.record);
    let decision = match &review.resolution {
        Some(_) => format!("{} (resolved by the evaluator)", review.decision.as_str()),
        None => review.decision.as_str().to_owned(),
    };
    Some(EntryReviewShown {
        file: untrusted(&review.record),
        decision,
        derived_from: review.derived_from.as_deref().map(untrusted),
        error: read.as_ref().err().map(|e| untrusted(&e.to_string())),
        shown: read.ok().as_ref().map(super::submission::review_view),
    })
}

/// Where the entry came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Provenance {
    /// sha256 of the diff; `None` for the baseline.
    pub patch: Option<Shown>,
    /// The bundle file of the diff (`inputs/patches/<sha256>.diff`).
    pub patch_file: Option<String>,
    /// The diff, highlighted (markup of ours, for `| safe`).
    pub diff: Option<HighlightedDiff>,
    /// Why the diff cannot be shown.
    pub diff_error: Option<String>,
    /// A repository submission's commitment (`<repository>@<commit>`, the miner's text)
    /// from its copy `inputs/commitments/<sha256>.txt`, in place of a diff.
    pub commitment: Option<String>,
    /// The engine's backend.
    pub backend: Shown,
    /// sha256 of the engine config of the (patched) tree.
    pub config_sha256: Shown,
    /// The image, for the docker backend.
    pub image: Option<String>,
    /// The command line the runner started (v2 on), shell-quoted.
    pub command: Option<Shown>,
    /// How the engine was confined and pinned (v3).
    pub isolation: Vec<Fact>,
    /// The round's hardware at setup, in one line.
    pub hardware: Shown,
    /// The tool that ran the round.
    pub tool: Shown,
}

/// A label and a value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Fact {
    /// The label.
    pub label: &'static str,
    /// The value.
    pub value: String,
    /// Whether the verifier only attests it ([`super::attested`]).
    pub attested: bool,
}

impl Fact {
    /// `label: value`, which a check recomputes.
    fn new(label: &'static str, value: String) -> Self {
        Self {
            label,
            value,
            attested: false,
        }
    }

    /// `label: value`, attested when the predicate field at `path` is.
    fn of_field(label: &'static str, value: String, path: &str) -> Self {
        Self {
            label,
            value,
            attested: super::attested(path),
        }
    }
}

/// One run of the entry with its rate search.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RunView {
    /// `run 1`, `pass 2`, `A/A control, pass 1`.
    pub label: String,
    /// An id for the page's fragments and the chart (`run-0`).
    pub id: String,
    /// v3: how the run ended (`measured`, `sla_unmet`, …).
    pub status: Option<&'static str>,
    /// v3: whether its pass was void (a baseline run of it failed: nothing of it counts).
    pub void: bool,
    /// Its throughput.
    pub throughput: String,
    /// v3: its paired ratio against the same pass's baseline run, `0.901775`.
    pub paired_ratio: Option<String>,
    /// CPU steal over the run, `1 450 ms of 7 766 ms`.
    pub host_load: Option<String>,
    /// The probe log, bundle-relative; verified when it matches its subject.
    pub probe_log: Option<Shown>,
    /// The engine log of the run, bundle-relative.
    pub engine_log: Option<String>,
    /// Why the probe log cannot be shown.
    pub error: Option<String>,
    /// The rate search as SVG (ours); empty when there is no probe log.
    pub chart: String,
    /// Its probes.
    pub probes: Vec<ProbeRow>,
    /// The probe the latency table is of: the result probe, else the last one.
    pub latency_probe: Option<String>,
    /// Latency percentiles of that probe.
    pub latency: Vec<LatencyRow>,
}

/// One probe of a rate search.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ProbeRow {
    /// Its position in the search, from 0.
    pub probe: u32,
    /// Target rate.
    pub rate: String,
    /// Measured requests sent.
    pub requests: u32,
    /// Completed.
    pub completed: u32,
    /// Over the bound, failed included.
    pub over_bound: u32,
    /// The SLA percentile (`—` when its rank fell on a failed request).
    pub percentile: String,
    /// `pass`, `fail`, `invalid`.
    pub verdict: &'static str,
    /// CSS class of the verdict.
    pub verdict_class: &'static str,
    /// Its throughput.
    pub throughput: String,
    /// Send-lag p99.
    pub send_lag_p99: String,
    /// Failed requests.
    pub errors: u64,
    /// Whether its throughput is the run's result.
    pub result: bool,
}

/// One latency of one probe by percentile.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LatencyRow {
    /// `TTFT`, `TPOT`, `ITL`, `e2e`.
    pub metric: &'static str,
    /// Samples recorded.
    pub samples: u64,
    /// p50, p90, p95, p99, p99.9 and the maximum, for people; or why the histogram does
    /// not decode (one cell).
    pub cells: Vec<String>,
}

/// The correctness distances of the entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CorrectnessView {
    /// The verdict in short.
    pub summary: Shown,
    /// The per-item file, bundle-relative.
    pub file: String,
    /// Why the file cannot be shown.
    pub error: Option<String>,
    /// The chart, SVG (ours).
    pub chart: String,
    /// The item bound.
    pub item_bound: String,
    /// The group-mean bound.
    pub group_bound: String,
    /// Every item.
    pub items: Vec<ItemRow>,
    /// Every group.
    pub groups: Vec<GroupRow>,
    /// The items as CSV and JSON.
    pub table: Option<TableLinks>,
    /// A `decide` campaign's gate: the declared decisions its vectors are over, in order
    /// (campaign text, escaped); absent for a completions gate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decisions: Option<String>,
}

/// One correctness item.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ItemRow {
    /// Its index.
    pub index: u32,
    /// Its group.
    pub group: u32,
    /// Prompt tokens.
    pub prompt_tokens: u32,
    /// Output tokens.
    pub output_tokens: usize,
    /// Its distance.
    pub distance: String,
    /// Whether it is over the item bound.
    pub over: bool,
    /// A `decide` campaign's item: the entry's decision (sidecar text, escaped); its
    /// prompt and output token counts are then 0 and not shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
}

/// One correctness group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GroupRow {
    /// Its index.
    pub index: u32,
    /// `0–2`.
    pub items: String,
    /// Its mean distance.
    pub mean: String,
    /// Whether it is over the group bound.
    pub over: bool,
}

/// The timed-run output sample.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LoadSampleView {
    /// The sample file, bundle-relative.
    pub file: String,
    /// Why it cannot be shown.
    pub error: Option<String>,
    /// Its bound.
    pub bound: String,
    /// One row per run.
    pub runs: Vec<LoadSampleRow>,
}

/// One run of the output sample.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LoadSampleRow {
    /// The run, from 0.
    pub run: u32,
    /// Its result probe.
    pub probe: u32,
    /// Completed requests sampled from.
    pub completed: usize,
    /// `8 checked, largest gap 0.123456 nats` or `not applicable: …`.
    pub check: String,
    /// Whether a sampled gap is over the bound.
    pub over: bool,
}

/// A log's tail.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LogView {
    /// The file, bundle-relative.
    pub file: String,
    /// The tail ([`log_tail_for_display`]), or why it cannot be read.
    pub tail: String,
    /// Whether the file matches its subject.
    pub verified: bool,
}

/// A row of `probes.csv` / `probes.json`: raw integers in their units.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProbeTableRow {
    /// The run's label.
    pub run_label: String,
    /// The run, from 0, as the probe log numbers it.
    pub run: u32,
    /// The probe, from 0.
    pub probe: u32,
    /// Target rate, milli-requests/s.
    pub rate_milli_rps: u64,
    /// Measured requests.
    pub requests: u32,
    /// Completed.
    pub completed: u32,
    /// Over the bound.
    pub over_bound: u32,
    /// The SLA percentile, µs.
    pub percentile_us: Option<u64>,
    /// The SLA bound, µs.
    pub bound_us: u64,
    /// `pass`, `fail`, `invalid`.
    pub verdict: &'static str,
    /// Throughput, milli-requests/s.
    pub throughput_milli_rps: u64,
    /// Measured duration, µs.
    pub duration_us: u64,
    /// Send-lag p50, µs.
    pub send_lag_p50_us: u64,
    /// Send-lag p99, µs.
    pub send_lag_p99_us: u64,
    /// Failed requests.
    pub errors: u64,
}

impl TableRow for ProbeTableRow {
    const COLUMNS: &'static [&'static str] = &[
        "runLabel",
        "run",
        "probe",
        "rateMilliRps",
        "requests",
        "completed",
        "overBound",
        "percentileUs",
        "boundUs",
        "verdict",
        "throughputMilliRps",
        "durationUs",
        "sendLagP50Us",
        "sendLagP99Us",
        "errors",
    ];

    fn cells(&self) -> Vec<String> {
        vec![
            self.run_label.clone(),
            self.run.to_string(),
            self.probe.to_string(),
            self.rate_milli_rps.to_string(),
            self.requests.to_string(),
            self.completed.to_string(),
            self.over_bound.to_string(),
            self.percentile_us
                .map(|p| p.to_string())
                .unwrap_or_default(),
            self.bound_us.to_string(),
            self.verdict.to_owned(),
            self.throughput_milli_rps.to_string(),
            self.duration_us.to_string(),
            self.send_lag_p50_us.to_string(),
            self.send_lag_p99_us.to_string(),
            self.errors.to_string(),
        ]
    }
}

/// A row of `latency.csv` / `latency.json`: one latency of one run's latency probe, µs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LatencyTableRow {
    /// The run's label.
    pub run_label: String,
    /// The probe, from 0.
    pub probe: u32,
    /// `ttft`, `tpot`, `itl`, `e2e`.
    pub metric: &'static str,
    /// Samples recorded.
    pub samples: u64,
    /// Nearest-rank p50, µs.
    pub p50_us: u64,
    /// p90, µs.
    pub p90_us: u64,
    /// p95, µs.
    pub p95_us: u64,
    /// p99, µs.
    pub p99_us: u64,
    /// p99.9, µs.
    pub p999_us: u64,
    /// The maximum, µs.
    pub max_us: u64,
}

impl TableRow for LatencyTableRow {
    const COLUMNS: &'static [&'static str] = &[
        "runLabel", "probe", "metric", "samples", "p50Us", "p90Us", "p95Us", "p99Us", "p999Us",
        "maxUs",
    ];

    fn cells(&self) -> Vec<String> {
        vec![
            self.run_label.clone(),
            self.probe.to_string(),
            self.metric.to_owned(),
            self.samples.to_string(),
            self.p50_us.to_string(),
            self.p90_us.to_string(),
            self.p95_us.to_string(),
            self.p99_us.to_string(),
            self.p999_us.to_string(),
            self.max_us.to_string(),
        ]
    }
}

/// A row of `correctness.csv` / `correctness.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CorrectnessTableRow {
    /// The item.
    pub item: u32,
    /// Its group.
    pub group: u32,
    /// Prompt tokens.
    pub prompt_tokens: u32,
    /// Output tokens.
    pub output_tokens: usize,
    /// Its distance, micro-nats.
    pub distance_micro_nats: u64,
    /// The item bound, micro-nats.
    pub item_bound_micro_nats: u64,
    /// Its group's mean, micro-nats.
    pub group_mean_micro_nats: u64,
    /// The group-mean bound, micro-nats.
    pub group_mean_bound_micro_nats: u64,
}

impl TableRow for CorrectnessTableRow {
    const COLUMNS: &'static [&'static str] = &[
        "item",
        "group",
        "promptTokens",
        "outputTokens",
        "distanceMicroNats",
        "itemBoundMicroNats",
        "groupMeanMicroNats",
        "groupMeanBoundMicroNats",
    ];

    fn cells(&self) -> Vec<String> {
        vec![
            self.item.to_string(),
            self.group.to_string(),
            self.prompt_tokens.to_string(),
            self.output_tokens.to_string(),
            self.distance_micro_nats.to_string(),
            self.item_bound_micro_nats.to_string(),
            self.group_mean_micro_nats.to_string(),
            self.group_mean_bound_micro_nats.to_string(),
        ]
    }
}

/// Every entry page of `round`, a round of `campaign`, in entry order.
///
/// Errors: as [`entry_page`].
pub fn entry_pages(
    campaign: &CampaignId,
    round: &VerifiedRound,
) -> Result<Vec<PageOut<EntryPage>>, SiteError> {
    round
        .record
        .entries
        .iter()
        .map(|e| entry_page(campaign, round, e.index))
        .collect()
}

/// A latency for people, truncated: `850 µs`, `4.25 ms`, `198.3 ms`, `12.5 s`.
pub fn format_latency_us(us: u64) -> String {
    if us < 1_000 {
        format!("{us} µs")
    } else if us < 10_000 {
        format!("{}.{:02} ms", us / 1_000, (us % 1_000) / 10)
    } else if us < 10_000_000 {
        format!("{}.{} ms", us / 1_000, (us % 1_000) / 100)
    } else {
        format!("{}.{} s", us / 1_000_000, (us % 1_000_000) / 100_000)
    }
}

/// The page of entry `index` of `round`, with `probes`, `latency` and (when the entry
/// has a correctness file) `correctness` as CSV and JSON beside it.
///
/// Errors: [`SiteError::InvalidId`] when there is no such entry or its slug cannot name a
/// path, [`SiteError::Serialize`] when a table does not serialise.
pub fn entry_page(
    campaign: &CampaignId,
    round: &VerifiedRound,
    index: u32,
) -> Result<PageOut<EntryPage>, SiteError> {
    let record = &round.record;
    let view = &round.view;
    let slug = EntrySlug::of(record, index)?;
    let (Some(entry), Some(ev)) = (
        record.entries.iter().find(|e| e.index == index),
        view.entry(index),
    ) else {
        return Err(SiteError::InvalidId {
            field: "entry index",
            value: index.to_string(),
            rule: "an entry of the round",
        });
    };
    let dir = SiteDir::entry(campaign, round.number, &slug);
    let (score, spread, throughput) = score_cells(view, ev);
    let group = entry_group(entry, &record.steps);
    let steps = view
        .steps
        .iter()
        .filter(|s| Some(s.group.value.as_str()) == group)
        .map(|s| {
            let (pass, step) = step_row(s, record);
            EntryStep { pass, step }
        })
        .collect();

    let mut runs = Vec::new();
    let mut probe_rows = Vec::new();
    let mut latency_rows = Vec::new();
    let mut series = Vec::new();
    let mut logs: BTreeMap<String, Result<EntryMeasurement, String>> = BTreeMap::new();
    for (i, source) in run_sources(record, entry).into_iter().enumerate() {
        let run = run_view(
            round,
            &source,
            i,
            &mut logs,
            &mut probe_rows,
            &mut latency_rows,
            &mut series,
        );
        runs.push(run);
    }
    let percentile_chart = percentile_plot(
        "percentiles",
        &format!(
            "{} latency of each run's result probe by percentile",
            record.sla.latency
        ),
        &series,
    );

    let mut files: Vec<ExtraFile> = Vec::new();
    let (probes_table, probe_files) = table_files(&dir, "probes", &probe_rows)?;
    files.extend(probe_files);
    let (latency_table, latency_files) = table_files(&dir, "latency", &latency_rows)?;
    files.extend(latency_files);
    let correctness = match &ev.correctness {
        Some(summary) => {
            let (view, table) = correctness_view(round, &dir, summary)?;
            files.extend(table);
            Some(view)
        }
        None => None,
    };
    let load_sample = entry
        .correctness
        .as_ref()
        .and_then(|c| c.load_sample_file.as_deref())
        .map(|file| load_sample_view(round, file));

    let engine_log = ev.engine_log.as_ref().map(|log| LogView {
        file: untrusted(&log.value),
        tail: match round.read_tail(&log.value, ENGINE_LOG_TAIL_BYTES) {
            Ok(bytes) => log_tail_for_display(&bytes, ENGINE_LOG_CHARS),
            Err(e) => untrusted(&e.to_string()),
        },
        verified: log.verified,
    });

    let model = EntryPage {
        campaign: campaign.to_string(),
        round: round.number,
        slug: slug.as_str().to_owned(),
        title: format!("Round {} · {}", round.number, slug.as_str()),
        round_href: SiteDir::round(campaign, round.number).as_str().to_owned(),
        role: Shown::of(&ev.role, |r| r.as_str().to_owned()),
        miner: ev
            .miner
            .value
            .as_ref()
            .map(|m| Shown::new(untrusted(m.as_str()), ev.miner.verified)),
        miner_href: ev
            .miner
            .value
            .as_ref()
            .map(|m| SiteDir::miner(m).as_str().to_owned()),
        patch_href: ev
            .patch
            .value
            .as_ref()
            .map(|p| SiteDir::submission(p).as_str().to_owned()),
        status: entry_status(ev),
        status_class: entry_status_class(ev.status.value),
        undecided: ev.undecided,
        score,
        spread,
        throughput,
        duration: Shown::of(&ev.duration_ms, |d| format_duration_ms(*d)),
        steps,
        disqualification: disqualification_row(ev),
        infra_failure: ev
            .infra_failure
            .as_ref()
            .filter(|_| !ev.undecided)
            .map(|i| Shown::of(i, |t| untrusted(t))),
        sla: untrusted(&record.sla.to_string()),
        provenance: provenance(round, entry, ev),
        runs,
        probes_table,
        latency_table,
        percentile_chart,
        correctness,
        load_sample,
        engine_log,
        attested: AttestedMarks::of_predicate(),
        review: entry_review_shown(round, entry),
    };
    Ok(PageOut {
        dir,
        template: TEMPLATE,
        model,
        files,
    })
}

/// One run of an entry as the round record names it.
struct RunSource<'a> {
    label: String,
    status: Option<PassStatus>,
    void: bool,
    throughput_milli_rps: Option<u64>,
    paired_ratio_ppm: Option<u64>,
    host_load: Option<&'a HostLoad>,
    probe_log: Option<&'a str>,
    engine_log: Option<&'a str>,
    /// The run number in the probe log (a v1/v2 log holds every run of the entry);
    /// `None`: every run of the log (a v3 pass log holds one).
    run: Option<u32>,
}

/// The entry's runs: from v3 every attempt of every pass of `record`, before every run.
fn run_sources<'a>(record: &RoundRecord, entry: &'a Entry) -> Vec<RunSource<'a>> {
    if entry.passes.is_empty() {
        return entry
            .runs
            .iter()
            .map(|r| RunSource {
                label: format!("run {}", r.run + 1),
                status: None,
                void: false,
                throughput_milli_rps: r.throughput_milli_rps,
                paired_ratio_ppm: None,
                host_load: r.host_load.as_ref(),
                probe_log: Some(r.probe_log.as_str()),
                engine_log: None,
                run: Some(r.run),
            })
            .collect();
    }
    let mut seen: BTreeMap<(u32, bool), u32> = BTreeMap::new();
    entry
        .passes
        .iter()
        .map(|p| {
            let attempt = seen.entry((p.pass, p.control)).or_insert(0);
            *attempt += 1;
            let control = if p.control { "A/A control, " } else { "" };
            let rerun = if *attempt > 1 { ", re-run" } else { "" };
            RunSource {
                label: format!("{control}pass {}{rerun}", p.pass + 1),
                status: Some(p.status),
                void: record.passes.iter().any(|q| q.index == p.pass && q.void),
                throughput_milli_rps: p.throughput_milli_rps,
                paired_ratio_ppm: p.paired_ratio_ppm,
                host_load: p.host_load.as_ref(),
                probe_log: p.probe_log.as_deref(),
                engine_log: p.engine_log.as_deref(),
                run: None,
            }
        })
        .collect()
}

fn verdict_name(verdict: ProbeVerdict) -> (&'static str, &'static str) {
    match verdict {
        ProbeVerdict::Pass => ("pass", "ok"),
        ProbeVerdict::Fail => ("fail", "bad"),
        ProbeVerdict::Invalid => ("invalid", "warn"),
    }
}

/// The probe whose throughput is the run's result: the last passing probe at the run's
/// rate.
fn result_probe(run: &RunMeasurement) -> Option<&ProbeRecord> {
    let rate = run.rate_milli_rps?;
    run.probes
        .iter()
        .rev()
        .find(|p| p.verdict == ProbeVerdict::Pass && p.rate_milli_rps == rate)
}

/// One run's view, its probes and latency rows appended to the tables and its SLA
/// latency to the percentile plot's series.
fn run_view(
    round: &VerifiedRound,
    source: &RunSource<'_>,
    i: usize,
    logs: &mut BTreeMap<String, Result<EntryMeasurement, String>>,
    probe_rows: &mut Vec<ProbeTableRow>,
    latency_rows: &mut Vec<LatencyTableRow>,
    series: &mut Vec<PercentileSeries>,
) -> RunView {
    let sla = &round.record.sla;
    let bound_us = sla.bound_ms.saturating_mul(1_000);
    let unit = RateUnit::of(round.record.decide.as_ref());
    let mut out = RunView {
        label: source.label.clone(),
        id: format!("run-{i}"),
        status: source.status.map(PassStatus::as_str),
        void: source.void,
        throughput: source
            .throughput_milli_rps
            .map_or_else(|| "—".to_owned(), |t| format_milli_rate(t, unit)),
        paired_ratio: source
            .paired_ratio_ppm
            .map(|r| format!("{}.{:06}", r / 1_000_000, r % 1_000_000)),
        host_load: source.host_load.map(|h| {
            format!(
                "CPU steal {} ms of {} ms",
                receipts::text::format_grouped(h.steal_ms),
                receipts::text::format_grouped(h.wall_ms)
            )
        }),
        probe_log: source
            .probe_log
            .map(|p| Shown::new(untrusted(p), round.file_verified(p))),
        engine_log: source.engine_log.map(untrusted),
        error: None,
        chart: String::new(),
        probes: Vec::new(),
        latency_probe: None,
        latency: Vec::new(),
    };
    let Some(file) = source.probe_log else {
        return out;
    };
    let log = logs.entry(file.to_owned()).or_insert_with(|| {
        round
            .read_json::<EntryMeasurement>(file)
            .map_err(|e| untrusted(&e.to_string()))
    });
    let log = match log {
        Ok(log) => log,
        Err(message) => {
            out.error = Some(message.clone());
            return out;
        }
    };
    let measured: Vec<&RunMeasurement> = log
        .runs
        .iter()
        .filter(|r| source.run.is_none_or(|n| r.run == n))
        .collect();
    let mut chart_probes = Vec::new();
    let mut chosen = None;
    for run in &measured {
        chosen = chosen.or(run.rate_milli_rps);
        let result = result_probe(run);
        for probe in &run.probes {
            let (verdict, verdict_class) = verdict_name(probe.verdict);
            chart_probes.push(RateProbe::from(probe));
            out.probes.push(ProbeRow {
                probe: probe.probe,
                rate: format_milli_rate(probe.rate_milli_rps, unit),
                requests: probe.requests,
                completed: probe.completed,
                over_bound: probe.over_bound,
                percentile: probe
                    .percentile_us
                    .map_or_else(|| "—".to_owned(), format_latency_us),
                verdict,
                verdict_class,
                throughput: format_milli_rate(probe.throughput_milli_rps, unit),
                send_lag_p99: format_latency_us(probe.send_lag_p99_us),
                errors: probe.errors.total(),
                result: result.is_some_and(|r| std::ptr::eq(r, probe)),
            });
            probe_rows.push(ProbeTableRow {
                run_label: source.label.clone(),
                run: probe.run,
                probe: probe.probe,
                rate_milli_rps: probe.rate_milli_rps,
                requests: probe.requests,
                completed: probe.completed,
                over_bound: probe.over_bound,
                percentile_us: probe.percentile_us,
                bound_us,
                verdict,
                throughput_milli_rps: probe.throughput_milli_rps,
                duration_us: probe.duration_us,
                send_lag_p50_us: probe.send_lag_p50_us,
                send_lag_p99_us: probe.send_lag_p99_us,
                errors: probe.errors.total(),
            });
        }
        let Some(probe) = result.or(run.probes.last()) else {
            continue;
        };
        out.latency_probe = Some(if result.is_some() {
            format!("probe {} (the run's result)", probe.probe)
        } else {
            format!("probe {} (the last; no rate passed)", probe.probe)
        });
        let h = &probe.histograms;
        for (metric, key, text) in [
            ("TTFT", "ttft", h.ttft.as_str()),
            ("TPOT", "tpot", h.tpot.as_str()),
            ("ITL", "itl", h.itl.as_str()),
            ("e2e", "e2e", h.e2e.as_str()),
        ] {
            let histogram = match decode_recorded(text) {
                Ok(histogram) => histogram,
                Err(e) => {
                    out.latency.push(LatencyRow {
                        metric,
                        samples: 0,
                        cells: vec![untrusted(&e.to_string())],
                    });
                    continue;
                }
            };
            let ranked = walked_values(&histogram);
            let at = |permille: u32| {
                WALKED_PERCENTILES
                    .iter()
                    .position(|p| *p == permille)
                    .map_or(0, |i| ranked[i])
            };
            let values: Vec<u64> = TABLE_PERCENTILES
                .iter()
                .map(|(p, _)| at(*p))
                .chain(std::iter::once(histogram.max()))
                .collect();
            out.latency.push(LatencyRow {
                metric,
                samples: histogram.len(),
                cells: values.iter().map(|v| format_latency_us(*v)).collect(),
            });
            latency_rows.push(LatencyTableRow {
                run_label: source.label.clone(),
                probe: probe.probe,
                metric: key,
                samples: histogram.len(),
                p50_us: values[0],
                p90_us: values[1],
                p95_us: values[2],
                p99_us: values[3],
                p999_us: values[4],
                max_us: values[5],
            });
            let sla_metric = match sla.latency {
                LatencyKind::E2e => "e2e",
                LatencyKind::Ttft => "ttft",
                LatencyKind::Tpot => "tpot",
            };
            if key == sla_metric && !histogram.is_empty() {
                series.push(PercentileSeries {
                    name: format!("{} {metric}", source.label),
                    points: PLOT_PERCENTILES
                        .iter()
                        .map(|p| PercentilePoint {
                            quantile_ppm: p * 1_000,
                            latency_us: at(*p),
                        })
                        .collect(),
                });
            }
        }
    }
    out.chart = rate_search(
        &out.id,
        &format!("Rate search, {}", source.label),
        sla,
        &chart_probes,
        chosen,
        unit,
    );
    out
}

/// The entry's provenance.
fn provenance(round: &VerifiedRound, entry: &Entry, ev: &verifier::view::EntryView) -> Provenance {
    let view = &round.view;
    // A repository entry ran its own tree: its commitment's copy, an input of the round,
    // stands where a diff's would.
    let repository = entry.patch.as_ref().is_some_and(|p| {
        let name = commitment_input(p);
        round.record.inputs.iter().any(|i| i.name == name)
    });
    let patch_file = entry.patch.as_ref().map(|p| {
        if repository {
            commitment_input(p)
        } else {
            patch_input(p)
        }
    });
    let mut commitment = None;
    let (diff, diff_error) = match &patch_file {
        Some(file) if repository => match round.read_bytes(file, MAX_DIFF_BYTES) {
            Ok(bytes) => {
                commitment = Some(String::from_utf8_lossy(&bytes).into_owned());
                (None, None)
            }
            Err(e) => (None, Some(untrusted(&e.to_string()))),
        },
        Some(file) => match round.read_bytes(file, MAX_DIFF_BYTES) {
            Ok(bytes) => (Some(highlight(&bytes)), None),
            Err(e) => (None, Some(untrusted(&e.to_string()))),
        },
        None => (None, None),
    };
    let engine = &entry.engine;
    let signed = ev.backend.verified;
    let mut isolation = engine
        .isolation
        .as_ref()
        .map(|i| {
            let cpus = |c: &[u32]| c.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
            let mut facts = vec![
                Fact::new(
                    "Sandbox",
                    match i.sandbox {
                        receipts::model::SandboxKind::Bwrap => "bubblewrap",
                        receipts::model::SandboxKind::Unshare => "unshare",
                        receipts::model::SandboxKind::Trusted => "none (trusted engines)",
                        receipts::model::SandboxKind::Docker => "docker container",
                        receipts::model::SandboxKind::Unsandboxed => "none (built-in engine)",
                    }
                    .to_owned(),
                ),
                Fact::new(
                    "CPU pinning",
                    match i.pinning {
                        receipts::model::CpuPinning::SchedAffinity => "sched_setaffinity",
                        receipts::model::CpuPinning::None => "none (one usable core)",
                        receipts::model::CpuPinning::Cpuset => "cgroup cpuset",
                    }
                    .to_owned(),
                ),
                Fact::of_field(
                    "Engine CPUs",
                    cpus(&i.engine_cpus),
                    "entries[].engine.isolation.engineCpus[]",
                ),
                Fact::of_field(
                    "Client CPUs",
                    cpus(&i.client_cpus),
                    "entries[].engine.isolation.clientCpus[]",
                ),
                Fact::new("Engine threads", i.engine_threads.to_string()),
            ];
            // v5: who the engine ran as and what it was shown beyond its own tree.
            if let Some(uid) = i.uid {
                let whose = match i.own_uid {
                    Some(true) => "its own unprivileged uid",
                    Some(false) => "the runner's uid",
                    None => "not recorded whose",
                };
                facts.push(Fact::new("Engine uid", format!("{uid} ({whose})")));
            }
            if !i.ro_paths.is_empty() {
                facts.push(Fact::new(
                    "Declared read-only paths",
                    untrusted(&i.ro_paths.join(", ")),
                ));
            }
            facts
        })
        .unwrap_or_default();
    isolation.extend(engine_facts(engine));
    let hw = &view.hardware.at_start;
    let tenths_gib = u128::from(hw.value.memory_bytes) * 10 / (1 << 30);
    Provenance {
        patch: ev
            .patch
            .value
            .as_ref()
            .map(|p| Shown::new(p.to_string(), ev.patch.verified)),
        patch_file,
        diff,
        diff_error,
        commitment,
        backend: Shown::of(&ev.backend, |b| b.as_str().to_owned()),
        config_sha256: Shown::new(engine.config_sha256.to_string(), signed),
        image: engine
            .image
            .as_ref()
            .map(|i| untrusted(&format!("{}@{}", i.name, i.manifest_digest))),
        command: engine.command.as_ref().map(|words| {
            let line: Vec<String> = words.iter().map(|w| shell_word(w)).collect();
            Shown::new(untrusted_clipped(&line.join(" "), COMMAND_CHARS), signed)
        }),
        isolation,
        hardware: Shown::new(
            untrusted(&format!(
                "{} · {} CPU{} · {}.{} GiB · {} · kernel {} · {}",
                hw.value.cpu_model,
                hw.value.cpu_count,
                if hw.value.cpu_count == 1 { "" } else { "s" },
                tenths_gib / 10,
                tenths_gib % 10,
                hw.value.os,
                hw.value.kernel,
                if hw.value.gpus.is_empty() {
                    "no GPU".to_owned()
                } else {
                    hw.value
                        .gpus
                        .iter()
                        .map(|g| g.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            )),
            hw.verified,
        ),
        tool: Shown::of(&view.tool, |t| {
            untrusted(&format!(
                "{} {} (commit {})",
                t.name, t.version, t.git_commit
            ))
        }),
    }
}

/// A command-line word as a POSIX shell reads it back: as is when it holds only safe
/// characters, else in single quotes.
fn shell_word(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-./:=,@%+".contains(&b));
    if safe {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The correctness section and its table files.
fn correctness_view(
    round: &VerifiedRound,
    dir: &SiteDir,
    summary: &verifier::view::Field<receipts::model::CorrectnessSummary>,
) -> Result<(CorrectnessView, Vec<ExtraFile>), SiteError> {
    let c = &summary.value;
    let short = Shown::new(
        format!(
            "{} · {} items · max item {} · max group mean {}",
            if c.passed { "passed" } else { "failed" },
            c.items,
            format_micro_nats(c.max_item_micro_nats),
            format_micro_nats(c.max_group_mean_micro_nats)
        ),
        summary.verified,
    );
    let mut out = CorrectnessView {
        summary: short,
        file: untrusted(&c.items_file),
        error: None,
        chart: String::new(),
        item_bound: String::new(),
        group_bound: String::new(),
        items: Vec::new(),
        groups: Vec::new(),
        table: None,
        decisions: None,
    };
    if round.record.decide.is_some() {
        return Ok((decide_gate_view(round, out), Vec::new()));
    }
    let items = match round.read_json::<ItemsShown>(&c.items_file) {
        Ok(items) => CorrectnessItems::from(items),
        Err(e) => {
            out.error = Some(untrusted(&e.to_string()));
            return Ok((out, Vec::new()));
        }
    };
    let (verdict, _) = verdict_from_artifact(&items);
    let group_size = items.group_size.max(1);
    out.item_bound = format_micro_nats(items.item_bound_micro_nats);
    out.group_bound = format_micro_nats(items.group_mean_bound_micro_nats);
    out.chart = correctness_chart(
        "correctness",
        "Logit distance per correctness item, group means and both bounds",
        &CorrectnessData::from(&items),
    );
    let mean_of = |group: u32| {
        verdict
            .group_means_micro_nats
            .get(usize::try_from(group).unwrap_or(usize::MAX))
            .copied()
            .unwrap_or(0)
    };
    let mut rows = Vec::new();
    for (position, item) in items.items.iter().enumerate() {
        let group = u32::try_from(position).unwrap_or(u32::MAX) / group_size;
        out.items.push(ItemRow {
            index: item.index,
            group,
            prompt_tokens: item.prompt_tokens,
            output_tokens: item.output_token_ids.len(),
            distance: format_micro_nats(item.distance_micro_nats),
            over: item.distance_micro_nats > items.item_bound_micro_nats,
            decision: None,
        });
        rows.push(CorrectnessTableRow {
            item: item.index,
            group,
            prompt_tokens: item.prompt_tokens,
            output_tokens: item.output_token_ids.len(),
            distance_micro_nats: item.distance_micro_nats,
            item_bound_micro_nats: items.item_bound_micro_nats,
            group_mean_micro_nats: mean_of(group),
            group_mean_bound_micro_nats: items.group_mean_bound_micro_nats,
        });
    }
    let count = u32::try_from(items.items.len()).unwrap_or(u32::MAX);
    out.groups = verdict
        .group_means_micro_nats
        .iter()
        .enumerate()
        .map(|(g, mean)| {
            let g = u32::try_from(g).unwrap_or(u32::MAX);
            let first = g.saturating_mul(group_size);
            let last = first
                .saturating_add(group_size - 1)
                .min(count.saturating_sub(1));
            GroupRow {
                index: g,
                items: format!("{first}–{last}"),
                mean: format_micro_nats(*mean),
                over: *mean > items.group_mean_bound_micro_nats,
            }
        })
        .collect();
    let (links, files) = table_files(dir, "correctness", &rows)?;
    out.table = Some(links);
    Ok((out, files.into()))
}

/// A `decide` campaign's gate (content/s1-pro-speed.md) into `out`, from its per-item
/// file ([`receipts::model::DecideItems`], whose distances and group means
/// `decide.gate` recomputed from the two stored vectors): the declared decisions, every
/// item with the entry's decision and its distance, every group mean and the chart.
fn decide_gate_view(round: &VerifiedRound, mut out: CorrectnessView) -> CorrectnessView {
    let gate = match round.read_json::<receipts::model::DecideItems>(&out.file) {
        Ok(gate) => gate,
        Err(e) => {
            out.error = Some(untrusted(&e.to_string()));
            return out;
        }
    };
    let group_size = gate.group_size.max(1);
    out.decisions = Some(untrusted(&gate.decisions.join(", ")));
    out.item_bound = format_micro_nats(gate.item_bound_micro_nats);
    out.group_bound = format_micro_nats(gate.group_mean_bound_micro_nats);
    out.chart = correctness_chart(
        "correctness",
        "Logit distance per gate item over the declared vector, group means and both bounds",
        &CorrectnessData {
            distances_micro_nats: gate.items.iter().map(|i| i.distance_micro_nats).collect(),
            group_size,
            group_mean_bound_micro_nats: gate.group_mean_bound_micro_nats,
            item_bound_micro_nats: gate.item_bound_micro_nats,
        },
    );
    out.items = (gate.items.iter().enumerate())
        .map(|(position, item)| ItemRow {
            index: item.index,
            group: u32::try_from(position).unwrap_or(u32::MAX) / group_size,
            prompt_tokens: 0,
            output_tokens: 0,
            distance: format_micro_nats(item.distance_micro_nats),
            over: item.distance_micro_nats > gate.item_bound_micro_nats,
            decision: Some(untrusted(&item.decision)),
        })
        .collect();
    let count = u32::try_from(gate.items.len()).unwrap_or(u32::MAX);
    out.groups = (gate.group_means_micro_nats.iter().enumerate())
        .map(|(g, mean)| {
            let g = u32::try_from(g).unwrap_or(u32::MAX);
            let first = g.saturating_mul(group_size);
            let last = (first.saturating_add(group_size - 1)).min(count.saturating_sub(1));
            GroupRow {
                index: g,
                items: format!("{first}–{last}"),
                mean: format_micro_nats(*mean),
                over: *mean > gate.group_mean_bound_micro_nats,
            }
        })
        .collect();
    out
}

/// What the entry page shows of a correctness file: [`CorrectnessItems`] read without
/// the items' top-k lists (`entryTopK`, `referenceTopK`: most of the file, which the
/// verifier recomputed the distances from). The distances, the group means and the chart
/// come from the rest.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ItemsShown {
    top_k: u32,
    group_size: u32,
    group_mean_bound_micro_nats: u64,
    item_bound_micro_nats: u64,
    items: Vec<ItemShown>,
}

/// An item of [`ItemsShown`] ([`receipts::model::CorrectnessItem`] but its top-k lists).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ItemShown {
    index: u32,
    prompt_sha256: receipts::model::Sha256Hex,
    prompt_tokens: u32,
    output_token_ids: Vec<u32>,
    position_micro_nats: Vec<u64>,
    distance_micro_nats: u64,
}

impl From<ItemsShown> for CorrectnessItems {
    fn from(shown: ItemsShown) -> Self {
        Self {
            top_k: shown.top_k,
            group_size: shown.group_size,
            group_mean_bound_micro_nats: shown.group_mean_bound_micro_nats,
            item_bound_micro_nats: shown.item_bound_micro_nats,
            items: (shown.items.into_iter())
                .map(|item| receipts::model::CorrectnessItem {
                    index: item.index,
                    prompt_sha256: item.prompt_sha256,
                    prompt_tokens: item.prompt_tokens,
                    output_token_ids: item.output_token_ids,
                    position_micro_nats: item.position_micro_nats,
                    distance_micro_nats: item.distance_micro_nats,
                    entry_top_k: None,
                    reference_top_k: None,
                })
                .collect(),
            measured_for: None,
        }
    }
}

/// What the entry page shows of a timed-run output sample: a
/// [`receipts::model::LoadSample`] file read for its bound, and per run its completed
/// requests and each drawn request's gap. The token ids and logprobs the verifier
/// recomputed those gaps from (most of the file) are skipped unread.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SampleShown {
    bound_micro_nats: u64,
    runs: Vec<SampleRunShown>,
}

/// A run of [`SampleShown`] ([`receipts::model::LoadSampleRun`]).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SampleRunShown {
    run: u32,
    probe: u32,
    completed: Vec<u32>,
    check: LoadSampleCheckFields<SampleGapShown>,
}

/// A drawn request of a [`SampleRunShown`]'s check: its gap only
/// ([`receipts::model::LoadSampleRequest`]).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SampleGapShown {
    gap_micro_nats: u64,
}

/// The timed-run output sample section.
fn load_sample_view(round: &VerifiedRound, file: &str) -> LoadSampleView {
    let mut out = LoadSampleView {
        file: untrusted(file),
        error: None,
        bound: String::new(),
        runs: Vec::new(),
    };
    let sample: SampleShown = match round.read_json(file) {
        Ok(sample) => sample,
        Err(e) => {
            out.error = Some(untrusted(&e.to_string()));
            return out;
        }
    };
    out.bound = format_micro_nats(sample.bound_micro_nats);
    out.runs = sample_rows(&sample);
    out
}

/// The rows of a timed-run output sample, one per run: the completed requests it was
/// drawn from, how many were checked and the largest gap (over the bound or not), or why
/// the check did not run.
fn sample_rows(sample: &SampleShown) -> Vec<LoadSampleRow> {
    sample
        .runs
        .iter()
        .map(|run| {
            let check = &run.check;
            let (check, over) = match (check.kind, &check.requests, &check.reason) {
                (LoadSampleCheckKind::Checked, Some(requests), _) => {
                    let largest = requests.iter().map(|r| r.gap_micro_nats).max();
                    (
                        format!(
                            "{} checked, largest gap {}",
                            requests.len(),
                            largest.map_or_else(|| "—".to_owned(), format_micro_nats)
                        ),
                        largest.is_some_and(|g| g > sample.bound_micro_nats),
                    )
                }
                (LoadSampleCheckKind::NotApplicable, _, Some(reason)) => {
                    (format!("not applicable: {}", untrusted(reason)), false)
                }
                (LoadSampleCheckKind::Checked, None, _) => {
                    ("unreadable: missing field `requests`".to_owned(), false)
                }
                (LoadSampleCheckKind::NotApplicable, _, None) => {
                    ("unreadable: missing field `reason`".to_owned(), false)
                }
            };
            LoadSampleRow {
                run: run.run,
                probe: run.probe,
                completed: run.completed.len(),
                check,
                over,
            }
        })
        .collect()
}

/// What the receipt records of the engine beyond its isolation: its memory limit, its API
/// profile (content/engines.md) and, on the Docker backend, the container as inspected
/// (content/docker.md). Each is checked by the verifier (`engine.api`, `engine.docker`).
fn engine_facts(engine: &receipts::model::EngineRef) -> Vec<Fact> {
    let mut facts = Vec::new();
    let mut fact = |label: &'static str, value: String| facts.push(Fact::new(label, value));
    if let Some(mb) = engine.memory_limit_mb {
        fact("Memory limit", format!("{mb} MiB"));
    }
    if let Some(api) = &engine.api {
        let profile = api
            .profile
            .as_ref()
            .map_or("written field by field", |p| p.as_str());
        let tested = if api.tested_against_real_server {
            "tested against its real server"
        } else {
            "untested against a real server"
        };
        fact("API profile", format!("{profile} ({tested})"));
        fact("Tokens counted from", wire_name(&api.token_count));
        fact("Token ids from", wire_name(&api.token_ids));
    }
    if let Some(d) = &engine.docker {
        fact("Image", untrusted(&d.image_reference));
        fact("Image id", untrusted(&d.image_id));
        if let Some(digest) = &d.manifest_digest {
            fact("Manifest digest", untrusted(digest));
        }
        facts.push(Fact::of_field(
            "Docker daemon",
            format!(
                "{} (API {})",
                untrusted(&d.daemon_version),
                untrusted(&d.api_version)
            ),
            "entries[].engine.docker.daemonVersion",
        ));
        let mut fact = |label: &'static str, value: String| facts.push(Fact::new(label, value));
        fact(
            "Container memory",
            format!("{} MiB", d.memory_bytes / (1 << 20)),
        );
        fact(
            "Container CPUs",
            if d.cpuset_cpus.is_empty() {
                "unpinned".to_owned()
            } else {
                untrusted(&d.cpuset_cpus)
            },
        );
        if !d.gpus.is_empty() {
            fact("GPUs", untrusted(&d.gpus.join(", ")));
        }
        let yes = |b: bool| if b { "yes" } else { "no" };
        fact(
            "Container sandbox",
            format!(
                "read-only root {}, init {}, unprivileged {}, network {} (internal {})",
                yes(d.read_only_root),
                yes(d.init),
                yes(d.unprivileged),
                untrusted(&d.network),
                yes(d.network_internal)
            ),
        );
        if !d.binds.is_empty() {
            fact("Read-only binds", untrusted(&d.binds.join(", ")));
        }
    }
    facts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_correctness_file_is_read_whole_but_its_top_k_lists() {
        use receipts::model::{CorrectnessItem, Sha256Hex};
        let item = |index, d| CorrectnessItem {
            index,
            prompt_sha256: Sha256Hex::digest(b"p"),
            prompt_tokens: 7,
            output_token_ids: vec![1, 2],
            position_micro_nats: vec![d, d + 2],
            distance_micro_nats: d + 1,
            entry_top_k: Some(vec![vec![(1, -5), (9, -7)]]),
            reference_top_k: Some(vec![vec![(1, -4)]]),
        };
        let items = CorrectnessItems {
            top_k: 2,
            group_size: 3,
            group_mean_bound_micro_nats: 200_000,
            item_bound_micro_nats: 2_000_000,
            items: vec![item(0, 10), item(1, 3_000_000)],
            measured_for: None,
        };
        let shown: ItemsShown =
            serde_json::from_slice(&serde_json::to_vec(&items).unwrap()).unwrap();
        let mut expected = items.clone();
        for item in &mut expected.items {
            item.entry_top_k = None;
            item.reference_top_k = None;
        }
        assert_eq!(CorrectnessItems::from(shown), expected);
    }

    #[test]
    fn the_sample_rows_read_what_the_model_writes_and_name_a_missing_field() {
        use receipts::model::{LoadSample, LoadSampleCheck, LoadSampleRequest, LoadSampleRun};
        let request = |gap| LoadSampleRequest {
            item_index: 3,
            prompt_sha256: receipts::model::Sha256Hex::digest(b"p"),
            output_token_ids: vec![5, 6],
            reference_top1_micro_nats: vec![-1, -1],
            reference_token_micro_nats: vec![-2, -3],
            gap_micro_nats: gap,
            streamed_text: None,
            reference_text: None,
        };
        let sample = LoadSample {
            entry: 1,
            sample_size: 2,
            bound_micro_nats: 2_000_000,
            runs: vec![
                LoadSampleRun {
                    run: 0,
                    probe: 4,
                    completed: vec![1, 2, 3],
                    check: LoadSampleCheck::Checked {
                        requests: vec![request(1_500_000), request(2_500_000)],
                    },
                },
                LoadSampleRun {
                    run: 1,
                    probe: 2,
                    completed: vec![],
                    check: LoadSampleCheck::NotApplicable {
                        reason: "no <ids>".to_owned(),
                    },
                },
            ],
            text_against_ids: None,
            measured_for: None,
            group_bound_micro_nats: None,
            position_bound_micro_nats: None,
            max_positions_over: None,
        };
        let shown: SampleShown =
            serde_json::from_str(&serde_json::to_string(&sample).unwrap()).unwrap();
        let rows: Vec<(u32, u32, usize, String, bool)> = sample_rows(&shown)
            .into_iter()
            .map(|r| (r.run, r.probe, r.completed, r.check, r.over))
            .collect();
        assert_eq!(
            rows,
            [
                (
                    0,
                    4,
                    3,
                    "2 checked, largest gap 2.500000 nats".to_owned(),
                    true
                ),
                (1, 2, 0, "not applicable: no <ids>".to_owned(), false),
            ]
        );
        let cut = r#"{"boundMicroNats":1,"runs":[
            {"run":0,"probe":0,"completed":[],"check":{"kind":"checked"}},
            {"run":1,"probe":0,"completed":[],"check":{"kind":"not_applicable"}}]}"#;
        let checks: Vec<String> = sample_rows(&serde_json::from_str(cut).unwrap())
            .into_iter()
            .map(|r| r.check)
            .collect();
        assert_eq!(
            checks,
            [
                "unreadable: missing field `requests`",
                "unreadable: missing field `reason`"
            ]
        );
    }

    #[test]
    fn the_engine_facts_show_the_api_profile_and_the_inspected_container() {
        use receipts::model::{
            ApiProfileName, BackendKind, DockerRun, EngineApi, EngineRef, Sha256Hex, TokenCount,
            TokenIds,
        };
        let engine = EngineRef {
            backend: BackendKind::Docker,
            config_sha256: Sha256Hex::digest(b""),
            image: None,
            command: None,
            isolation: None,
            api: Some(EngineApi {
                profile: Some(ApiProfileName::LlamaCppPython),
                tested_against_real_server: false,
                token_count: TokenCount::Logprobs,
                token_ids: TokenIds::Tokenizer,
            }),
            memory_limit_mb: Some(512),
            docker: Some(DockerRun {
                image_reference: "engine:v1\u{202e}".into(),
                manifest_digest: None,
                image_id: format!("sha256:{}", "a".repeat(64)),
                daemon_version: "20.10.24+dfsg1".into(),
                api_version: "1.41".into(),
                memory_bytes: 512 << 20,
                cpuset_cpus: "1".into(),
                gpus: Vec::new(),
                read_only_root: true,
                init: true,
                unprivileged: true,
                network: "referee-x".into(),
                network_internal: true,
                tmpfs: BTreeMap::new(),
                binds: vec!["/data/trees/a:/tree:ro".into()],
                env_names: vec!["PATH".into()],
            }),
        };
        let facts: Vec<(&str, String)> = engine_facts(&engine)
            .into_iter()
            .map(|f| (f.label, f.value))
            .collect();
        let image_id = format!("sha256:{}", "a".repeat(64));
        assert_eq!(
            facts,
            [
                ("Memory limit", "512 MiB".to_owned()),
                (
                    "API profile",
                    "llama-cpp-python (untested against a real server)".to_owned()
                ),
                ("Tokens counted from", "logprobs".to_owned()),
                ("Token ids from", "tokenizer".to_owned()),
                ("Image", untrusted("engine:v1\u{202e}")),
                ("Image id", image_id),
                ("Docker daemon", "20.10.24+dfsg1 (API 1.41)".to_owned()),
                ("Container memory", "512 MiB".to_owned()),
                ("Container CPUs", "1".to_owned()),
                (
                    "Container sandbox",
                    "read-only root yes, init yes, unprivileged yes, network referee-x \
                     (internal yes)"
                        .to_owned()
                ),
                ("Read-only binds", "/data/trees/a:/tree:ro".to_owned()),
            ]
        );
        assert_ne!(untrusted("engine:v1\u{202e}"), "engine:v1\u{202e}");
    }

    #[test]
    fn latencies_for_people() {
        assert_eq!(format_latency_us(850), "850 µs");
        assert_eq!(format_latency_us(4_259), "4.25 ms");
        assert_eq!(format_latency_us(198_399), "198.3 ms");
        assert_eq!(format_latency_us(12_599_999), "12.5 s");
    }

    #[test]
    fn one_walk_gives_every_nearest_rank_value() {
        use receipts::rules::histogram::{encode_histogram, new_latency_histogram};
        use receipts::rules::sla::nearest_rank_value;
        let mut h = new_latency_histogram();
        fn decoded(h: &hdrhistogram::Histogram<u64>) -> Recorded {
            decode_recorded(&encode_histogram(h).unwrap()).unwrap()
        }
        assert_eq!(walked_values(&decoded(&h)), [0; 7]);
        // Values spread over many buckets, some repeated, one outlier.
        for v in (1..=997u64).map(|i| i * i * 37 % 250_000 + 1) {
            h.record(v).unwrap();
        }
        h.record_n(4_259, 40).unwrap();
        h.record(3_000_000_000).unwrap();
        let got = walked_values(&decoded(&h));
        let expected = WALKED_PERCENTILES.map(|p| {
            let p = Percentile::from_permille(p).expect("a percentile");
            nearest_rank_value(&h, p, 0).expect("a value")
        });
        assert_eq!(got, expected);
        assert_eq!(
            got,
            [
                112_639, 180_863, 222_847, 237_055, 246_143, 248_831, 249_471
            ]
        );
    }

    #[test]
    fn command_words_read_back_by_a_shell() {
        assert_eq!(shell_word("--threads"), "--threads");
        assert_eq!(shell_word("/a/b.toml"), "/a/b.toml");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("exec \"$@\""), "'exec \"$@\"'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
    }
}
