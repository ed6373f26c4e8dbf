//! Measurement records: what the rate search stores for every probe, run and entry
//! (content/measurement.md, Throughput at a latency SLA). The round embeds them in its probe log;
//! `referee bench serve --json` writes the same types. Every number is an integer in the
//! unit its name carries; latency samples are HdrHistogram V2+DEFLATE blobs in base64
//! (content/measurement.md, Open loop), from which a verifier recomputes every percentile.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Sha256Hex;

/// A probe's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProbeVerdict {
    /// The SLA percentile is certified within the bound at 99 % confidence (MLPerf early
    /// stopping).
    Pass,
    /// It is not: too many over-bound requests for the number sent.
    Fail,
    /// The client's send-lag p99 exceeded the bound: the client, not the engine, was
    /// measured. The search treats it as not passing and the run as invalid.
    Invalid,
}

/// Failed requests by kind (content/measurement.md: a failed, timed-out or wrong-length request
/// counts as over the bound and not as completed).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorCounts {
    /// The connection was refused or could not be opened.
    pub connect: u64,
    /// HTTP 4xx answers.
    pub http4xx: u64,
    /// HTTP 5xx answers.
    pub http5xx: u64,
    /// A body that is not the OpenAI completions stream (bad SSE or JSON).
    pub bad_body: u64,
    /// The request's deadline passed before it finished.
    pub timeout: u64,
    /// The stream ended normally with a different number of output tokens than asked.
    pub short_output: u64,
    /// The connection closed mid-response, or the stream ended without `data: [DONE]`.
    pub connection_closed: u64,
    /// The engine's `usage.completion_tokens` disagreed with the token ids the client
    /// observed (absent before round/v3: 0).
    #[serde(default)]
    pub usage_mismatch: u64,
    /// A chunk carried generated text without `token_ids`, so its tokens could not be
    /// counted (absent before round/v3: 0). Every request of an engine whose API cannot
    /// return token ids fails so.
    #[serde(default)]
    pub no_token_ids: u64,
    /// More output token ids than asked were streamed (absent before round/v3: 0).
    #[serde(default)]
    pub long_output: u64,
    /// Bytes arrived after `data: [DONE]` (absent before round/v3: 0).
    #[serde(default)]
    pub trailing_data: u64,
    /// With `token_count = "usage"`: the stream reported no `usage.completion_tokens`
    /// (absent before round/v3: 0).
    #[serde(default)]
    pub missing_usage: u64,
    /// The response passed the campaign's `limits.response_bytes` or
    /// `limits.response_events`, comments and empty events included: an engine cannot
    /// flood its own client (v6; absent before, and when 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub response_too_large: u64,
    /// `decide` campaigns: HTTP 401, the run's bearer token refused (v7; absent when 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unauthorized: u64,
    /// `decide` campaigns: no decision at the campaign's decision pointer (v7; absent
    /// when 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub no_decision: u64,
    /// `decide` campaigns: a decision outside the declared set (v7; absent when 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub decision_outside_set: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ErrorCounts {
    /// All failed requests.
    pub fn total(&self) -> u64 {
        self.connect
            + self.http4xx
            + self.http5xx
            + self.bad_body
            + self.timeout
            + self.short_output
            + self.connection_closed
            + self.usage_mismatch
            + self.no_token_ids
            + self.long_output
            + self.trailing_data
            + self.missing_usage
            + self.response_too_large
            + self.unauthorized
            + self.no_decision
            + self.decision_outside_set
    }
}

/// How output tokens are counted (content/measurement.md, What counts as a completed
/// request): the campaign's `token_count`, recorded on every probe.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TokenCount {
    /// The token ids the client observed in the stream (`return_token_ids`): each chunk's
    /// `token_ids` counted; the engine's `usage.completion_tokens`, when present, must
    /// agree.
    #[default]
    Ids,
    /// One token per entry of each chunk's `choices[0].logprobs.tokens` (an API that
    /// streams logprobs but no id arrays, e.g. llama-cpp-python): observed in the
    /// stream, never the engine's count; `usage`, when present, must agree.
    Logprobs,
    /// The engine's own `usage.completion_tokens`, required in every stream: counts the
    /// engine reports about itself, for an API that cannot return token ids. Receipts
    /// carry it as self-reported.
    Usage,
}

/// A probe's latency histograms: HdrHistogram V2+DEFLATE, base64 (the text starts with
/// `HISTF`), values in µs at 3 significant digits. Latencies are measured from each
/// request's *scheduled* send time; only completed requests are recorded, except
/// `send_lag`, which holds every measured request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProbeHistograms {
    /// End-to-end: scheduled send to last byte, µs.
    pub e2e: String,
    /// Time to first token from the scheduled send, µs.
    pub ttft: String,
    /// Time per output token after the first: (e2e − ttft) ÷ (tokens − 1), µs.
    pub tpot: String,
    /// Every gap between consecutive streamed tokens, µs.
    pub itl: String,
    /// Actual − scheduled send time, µs.
    pub send_lag: String,
}

/// One probe of the rate search: one open-loop run at a fixed rate (content/measurement.md, Probe).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProbeRecord {
    /// The run it belongs to, from 0.
    pub run: u32,
    /// Its position in the run's search, from 0.
    pub probe: u32,
    /// The workload sub-stream its items came from.
    pub sub_stream: u32,
    /// Target arrival rate, milli-requests/s.
    pub rate_milli_rps: u64,
    /// Warm-up requests sent before the measured ones, excluded from every figure.
    pub warmup_requests: u32,
    /// Measured requests sent.
    pub requests: u32,
    /// Measured requests completed (no error, within the deadline, exact output length).
    pub completed: u32,
    /// Measured requests over the latency bound, failed ones included.
    pub over_bound: u32,
    /// The SLA percentile of the SLA latency by nearest rank, µs, failed requests ranked
    /// last; `None` when that rank falls on a failed request.
    pub percentile_us: Option<u64>,
    /// Fewest requests that certify the percentile with `over_bound` over-bound ones
    /// (MLPerf early stopping, 99 % confidence); `None` when more than 20 are over the
    /// bound (not computed).
    pub required_requests: Option<u64>,
    /// Send lag p50, µs.
    pub send_lag_p50_us: u64,
    /// Send lag p99, µs.
    pub send_lag_p99_us: u64,
    /// The campaign's send-lag p99 bound applied, µs.
    pub send_lag_bound_us: u64,
    /// The verdict.
    pub verdict: ProbeVerdict,
    /// Completed ÷ `duration_us`, milli-requests/s, floor-rounded
    /// ([`crate::rules::score::probe_throughput_milli_rps`]); before round/v3 the client
    /// divided by the nanoseconds it measured instead.
    pub throughput_milli_rps: u64,
    /// Last completion − first scheduled send of the measured requests, µs.
    pub duration_us: u64,
    /// Prompt bytes of the measured requests.
    pub input_bytes: u64,
    /// Output tokens of the measured requests, counted as `token_count` says.
    pub output_tokens: u64,
    /// How `output_tokens` (and every request's length check) was counted; absent in
    /// probe logs before round/v3, which counted `usage` when reported, else chunks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_count: Option<TokenCount>,
    /// Failures by kind.
    pub errors: ErrorCounts,
    /// The latency histograms.
    pub histograms: ProbeHistograms,
}

/// One full rate search (content/measurement.md, Run).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunMeasurement {
    /// Run number, from 0.
    pub run: u32,
    /// Throughput of the highest passing probe, milli-requests/s; `None` when none passed.
    pub throughput_milli_rps: Option<u64>,
    /// Target rate of that probe, milli-requests/s.
    pub rate_milli_rps: Option<u64>,
    /// Every probe, in the order sent.
    pub probes: Vec<ProbeRecord>,
    /// False when a probe's send-lag p99 exceeded the bound (the run stopped there).
    pub valid: bool,
}

/// Why an entry met no SLA.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SlaUnmetReason {
    /// A run found no rate whose probe passed, the campaign's minimum included.
    NoPassingRate,
    /// The entry's deadline (`rate_search.entry_deadline_s`) expired first.
    DeadlineExpired,
    /// The server was unreachable: a run found no passing rate and its last probe was
    /// refused or reset on every measured request
    /// (`receipts::rules::search::probe_unreachable`). Absent before this variant:
    /// such runs read `no_passing_rate`.
    Unreachable,
}

/// How an entry's measurement ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum MeasurementOutcome {
    /// Every run found a passing rate, every probe valid.
    Measured,
    /// Disqualified with `sla_unmet` (content/measurement.md, Run).
    SlaUnmet {
        /// Why.
        reason: SlaUnmetReason,
    },
    /// A probe's send-lag p99 exceeded the bound: the client, not the engine, was
    /// measured (content/measurement.md, Open loop), so the measurement says nothing about the
    /// engine — an infrastructure failure, not a disqualification. The search stopped at
    /// that probe.
    Invalid {
        /// The run of the invalid probe.
        run: u32,
        /// The probe.
        probe: u32,
    },
}

/// All runs of one entry (content/measurement.md, Entry).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EntryMeasurement {
    /// The runs, in order (fewer than `runs` when one met no SLA: later ones are skipped).
    pub runs: Vec<RunMeasurement>,
    /// Median run throughput (the lower middle for an even count), milli-requests/s;
    /// `None` unless `outcome` is `Measured`.
    pub throughput_milli_rps: Option<u64>,
    /// Lowest run throughput, milli-requests/s.
    pub throughput_min_milli_rps: Option<u64>,
    /// Highest run throughput, milli-requests/s.
    pub throughput_max_milli_rps: Option<u64>,
    /// Whether every run is valid (send lag within bound in every probe); false exactly
    /// when `outcome` is `Invalid`.
    pub valid: bool,
    /// How it ended.
    pub outcome: MeasurementOutcome,
    /// The run these measurements belong to (v5; absent in older probe logs and in
    /// `referee bench serve --json`): what the verifier holds against the pass row that
    /// names the file, so one entry's logs cannot be credited to another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_for: Option<MeasuredFor>,
    /// The run's caching probe (v9; MLPerf TEST04, content/correctness.md, Caching): a
    /// challenger's repeated prompts timed against fresh ones after its runs, on the same
    /// engine; absent for the baseline, a `decide` run, `correctness.caching_prompts` = 0
    /// and logs written before v9.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caching: Option<CachingProbe>,
}

/// A caching probe (v9; content/correctness.md, Caching): `caching_prompts` fresh
/// workload prompts, each sent again after the next fresh one completed, one request at a
/// time, and how much faster the repeats decoded. An engine that answers a repeated prompt
/// from a cache of answers decodes it in no time; prefix caching, which is legitimate,
/// saves only the time to the first token, which the decode span leaves out.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CachingProbe {
    /// The workload sub-stream whose first items are its prompts
    /// (`Workload::caching_sub_stream` of the run: no timed probe sends them).
    pub sub_stream: u32,
    /// Its requests in send order ([`crate::rules::compliance::caching_order`]).
    pub requests: Vec<CachingRequest>,
    /// How much faster the repeats decoded, basis points
    /// ([`crate::rules::compliance::caching_speedup_bp`]); `None` when no prompt's two
    /// requests completed.
    pub speedup_bp: Option<u64>,
    /// The campaign's bound on `speedupBp` (`correctness.caching_bound_bp`).
    pub bound_bp: u32,
}

/// One request of a [`CachingProbe`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CachingRequest {
    /// The workload item (`itemIndex` in the probe's sub-stream).
    pub item_index: u32,
    /// sha256 of its prompt text, as in the workload.
    pub prompt_sha256: Sha256Hex,
    /// Whether it repeats a prompt the probe sent before.
    pub repeat: bool,
    /// Whether it completed (no error, exactly the asked output length).
    pub completed: bool,
    /// From its first token to its end, µs (0 when it carried no token).
    pub decode_us: u64,
}

/// Whose run a probe log measured (v5): the round, the entry and what it ran, and which
/// of its runs (content/verifying.md, Measurements bound to their entry).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MeasuredFor {
    /// The round number.
    pub round: u64,
    /// The entry's index in the round (0 = the baseline).
    pub entry: u32,
    /// sha256 of the entry's diff; `None` for the baseline.
    pub patch: Option<Sha256Hex>,
    /// sha256 of the engine config file of the tree the engine ran from.
    pub engine_config_sha256: Sha256Hex,
    /// The pass, from 0.
    pub pass: u32,
    /// Whether this is the baseline's A/A control run of the pass.
    pub control: bool,
}
