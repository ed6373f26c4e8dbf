//! `referee bench serve`: measure any OpenAI-compatible server open-loop, like
//! `vllm bench serve`, with referee's rules (content/measurement.md): one probe at a fixed rate
//! (`--rate`) or the full SLA rate search (`--search`), the same search a round runs
//! (`loadgen::search`). A progress bar on stderr (a plain line per probe when stderr is
//! not a terminal), a table on stdout, and with `--json` the same record a round embeds
//! (a `ProbeRecord` for `--rate`, an `EntryMeasurement` for `--search`).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use loadgen::bench_file::BenchFile;
use loadgen::search::{ProbeExecutor, ProgressSink};
use loadgen::{ClientConfig, HttpProbeExecutor, MeasureConfig, Target, measure_workload};
use receipts::model::{
    EntryMeasurement, MeasurementOutcome, Percentile, ProbeRecord, ProbeVerdict, PromptSource,
    RateSearchSpec, Sla, SlaUnmetReason,
};
use receipts::rules::histogram::decode_histogram;
use receipts::rules::search::{at_ceiling, probe_unreachable};
use receipts::rules::sla::nearest_rank_value;
use receipts::rules::workload::Workload;

/// `referee bench …`.
#[derive(clap::Subcommand, Debug)]
pub enum BenchCommand {
    /// Measure an OpenAI-compatible server (`/v1/completions`, streamed) open-loop.
    Serve(ServeArgs),
}

/// Exit codes of `referee bench serve`, shown in its `--help`.
pub const BENCH_EXIT_CODES: &str = "Exit status: 0 when measured; 1 when the probe or `--search` met \
no SLA or was invalid (send lag over its bound); 2 on a usage or I/O error, and when the server \
is unreachable (its first requests refused or reset).";

/// Arguments of `referee bench serve`.
#[derive(clap::Args, Debug)]
#[command(after_help = BENCH_EXIT_CODES)]
#[command(group(clap::ArgGroup::new("mode").required(true).args(["rate", "search"])))]
pub struct ServeArgs {
    /// Base URL of the server (http only).
    #[arg(long, default_value = "http://127.0.0.1:8000")]
    pub url: String,
    /// The workload file: `[workload]`, optional `[rate_search]`, `runs`, `model`,
    /// `[seeds]` (see examples/bench/workload.toml).
    #[arg(long)]
    pub workload: PathBuf,
    /// The SLA: percentile:latency:bound, latency one of e2e, ttft, tpot.
    #[arg(long, default_value = "p95:e2e:1000ms")]
    pub sla: Sla,
    /// One probe at this arrival rate, requests/s: at least 0.001, up to 3 decimals.
    #[arg(long)]
    pub rate: Option<String>,
    /// The full rate search: the highest throughput meeting the SLA.
    #[arg(long)]
    pub search: bool,
    /// Also write the record as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// The `model` of every request (overrides the workload file's).
    #[arg(long)]
    pub model: Option<String>,
    /// Threads of the load client's runtime.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
}

/// Runs a `bench` subcommand. Exit 0 when measured; 1 when `--search` met no SLA or was
/// invalid (send lag over its bound).
pub fn run(cmd: BenchCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        BenchCommand::Serve(args) => serve(args),
    }
}

fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    // A bad `--rate` is a usage error: said before any file is read.
    let rate_milli_rps = args.rate.as_deref().map(parse_rate).transpose()?;
    let file = BenchFile::read(&args.workload)?;
    let model = args
        .model
        .clone()
        .or_else(|| file.model.clone())
        .context("no model name: pass --model or set `model` in the workload file")?;
    let seeds = file.revealed_seeds();
    // A JSONL prompt source is named relative to the workload file.
    let prompt_file = match &file.workload.prompt_source {
        PromptSource::Generated => None,
        PromptSource::Jsonl { path, .. } => {
            let path = args.workload.parent().unwrap_or(Path::new(".")).join(path);
            Some(
                std::fs::read(&path)
                    .with_context(|| format!("reading prompt file `{}`", path.display()))?,
            )
        }
    };
    let workload = Workload::from_parts(&file.parts(), &seeds, prompt_file.as_deref())
        .with_context(|| format!("building the workload of `{}`", args.workload.display()))?;
    let digest = workload
        .request_sequence_digest()
        .context("computing the request-sequence digest")?;
    eprintln!("request-sequence digest {digest}");
    let target = Target {
        base_url: args.url.clone(),
        model,
    };
    let api = file.api_profile();
    let config = MeasureConfig {
        sla: args.sla.clone(),
        client: ClientConfig {
            worker_threads: args.threads.max(1),
            ..ClientConfig::default()
        },
        token_count: api.token_count,
        api: std::sync::Arc::new(api),
        ..MeasureConfig::default()
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let progress = BarProgress::new();
    if let Some(rate_milli_rps) = rate_milli_rps {
        let record = runtime.block_on(async {
            let mut executor = HttpProbeExecutor::new(&target, &workload, &config, &progress)?;
            executor.probe(0, 0, rate_milli_rps).await
        });
        progress.finish();
        let record = record.with_context(|| format!("measuring `{}`", args.url))?;
        print_probe_log(std::slice::from_ref(&record), &args.sla);
        if probe_unreachable(&record) {
            write_json(args.json.as_ref(), &record)?;
            return Err(unreachable(&args.url, &record));
        }
        print_metrics(&record)?;
        write_json(args.json.as_ref(), &record)?;
        // Like `--search`: exit 1 when the probe did not meet the SLA (every request failing
        // included), so scripts cannot mistake a dead server for a pass.
        return Ok(match record.verdict {
            ProbeVerdict::Pass => ExitCode::SUCCESS,
            ProbeVerdict::Fail | ProbeVerdict::Invalid => ExitCode::from(1),
        });
    }
    let entry = runtime.block_on(measure_workload(&target, &workload, &config, &progress));
    progress.finish();
    let entry = entry.with_context(|| format!("measuring `{}`", args.url))?;
    let probes: Vec<ProbeRecord> = entry.runs.iter().flat_map(|r| r.probes.clone()).collect();
    print_probe_log(&probes, &args.sla);
    if entry.outcome
        == (MeasurementOutcome::SlaUnmet {
            reason: SlaUnmetReason::Unreachable,
        })
        && let Some(last) = probes.last()
    {
        println!();
        print_entry(&entry, workload.rate_search());
        write_json(args.json.as_ref(), &entry)?;
        return Err(unreachable(&args.url, last));
    }
    if let Some(best) = best_probe(&entry) {
        println!();
        println!(
            "highest passing probe of the median run (run {}, {} req/s):",
            best.run,
            milli(best.rate_milli_rps)
        );
        print_metrics(best)?;
    }
    println!();
    print_entry(&entry, workload.rate_search());
    write_json(args.json.as_ref(), &entry)?;
    Ok(match entry.outcome {
        MeasurementOutcome::Measured => ExitCode::SUCCESS,
        MeasurementOutcome::SlaUnmet { .. } | MeasurementOutcome::Invalid { .. } => {
            ExitCode::from(1)
        }
    })
}

/// The error of a probe whose server refused or reset its first requests
/// ([`probe_unreachable`]): `main` prints it and exits 2.
fn unreachable(url: &str, probe: &ProbeRecord) -> anyhow::Error {
    let how = if probe.errors.connect > 0 {
        "connection refused"
    } else {
        "connection reset"
    };
    anyhow::anyhow!(
        "`{url}` is unreachable: {how} (run {} probe {}: its first requests failed so before \
         any was answered, and the rest were not sent); is the server running on that address?",
        probe.run,
        probe.probe
    )
}

/// `12`, `12.5`, `0.125` requests/s → milli-requests/s, no floats.
fn parse_rate(text: &str) -> anyhow::Result<u64> {
    let bad = || anyhow::anyhow!("invalid --rate `{text}`: requests/s with at most 3 decimals");
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if fraction.len() > 3
        || !whole
            .bytes()
            .chain(fraction.bytes())
            .all(|b| b.is_ascii_digit())
        || whole.is_empty() && fraction.is_empty()
    {
        return Err(bad());
    }
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| bad())?
    };
    let fraction: u64 = format!("{fraction:0<3}").parse().map_err(|_| bad())?;
    let rate = whole
        .checked_mul(1000)
        .and_then(|w| w.checked_add(fraction))
        .ok_or_else(bad)?;
    if rate == 0 {
        anyhow::bail!("invalid --rate `{text}`: the rate must be at least 0.001 req/s");
    }
    Ok(rate)
}

/// What the search reports to: an indicatif bar when stderr is a terminal, else one
/// plain line when each probe starts and one when it ends (a hidden bar prints nothing).
struct BarProgress {
    bar: Option<ProgressBar>,
}

impl BarProgress {
    fn new() -> Self {
        if !std::io::stderr().is_terminal() {
            return Self { bar: None };
        }
        let bar = ProgressBar::new(0);
        if let Ok(style) = ProgressStyle::with_template(
            "{spinner} {msg} [{bar:30}] {pos}/{len} requests {elapsed_precise}",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        Self { bar: Some(bar) }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl ProgressSink for BarProgress {
    fn probe_started(&self, run: u32, probe: u32, rate_milli_rps: u64, requests: u32) {
        let message = format!("run {run} probe {probe} at {} req/s", milli(rate_milli_rps));
        match &self.bar {
            Some(bar) => {
                bar.set_length(u64::from(requests));
                bar.set_position(0);
                bar.set_message(message);
            }
            None => eprintln!("{message}: {requests} requests…"),
        }
    }

    fn requests_done(&self, done: u32) {
        if let Some(bar) = &self.bar {
            bar.set_position(u64::from(done));
        }
    }

    fn probe_finished(&self, record: &ProbeRecord) {
        let line = probe_line(record);
        match &self.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
    }
}

/// `run 0 probe 2: 16.000 req/s → 15.874 req/s, 0 over bound of 130, pass`.
fn probe_line(record: &ProbeRecord) -> String {
    format!(
        "run {} probe {}: {} req/s → {} req/s, {} over bound of {}, {}",
        record.run,
        record.probe,
        milli(record.rate_milli_rps),
        milli(record.throughput_milli_rps),
        record.over_bound,
        record.requests,
        verdict_name(record)
    )
}

/// `1234` milli → `1.234`.
fn milli(value: u64) -> String {
    format!("{}.{:03}", value / 1000, value % 1000)
}

fn verdict_name(record: &ProbeRecord) -> &'static str {
    match record.verdict {
        ProbeVerdict::Pass => "pass",
        ProbeVerdict::Fail if probe_unreachable(record) => "fail (unreachable)",
        ProbeVerdict::Fail => "fail",
        ProbeVerdict::Invalid => "invalid (send lag)",
    }
}

fn print_probe_log(probes: &[ProbeRecord], sla: &Sla) {
    println!(
        "{:>3} {:>5} {:>10} {:>10} {:>6} {:>6} {:>5} {:>12} {:>16}  verdict",
        "run",
        "probe",
        "rate/s",
        "thrpt/s",
        "reqs",
        "done",
        "over",
        format!("{} ms", sla.percentile),
        "lag p50/p99 µs"
    );
    for p in probes {
        let percentile = p.percentile_us.map_or_else(|| "failed".to_owned(), milli);
        println!(
            "{:>3} {:>5} {:>10} {:>10} {:>6} {:>6} {:>5} {:>12} {:>16}  {}",
            p.run,
            p.probe,
            milli(p.rate_milli_rps),
            milli(p.throughput_milli_rps),
            p.requests,
            p.completed,
            p.over_bound,
            percentile,
            format!("{}/{}", p.send_lag_p50_us, p.send_lag_p99_us),
            verdict_name(p)
        );
    }
}

/// p50/p95/p99/max of every metric of `record` (completed requests), errors by kind.
fn print_metrics(record: &ProbeRecord) -> anyhow::Result<()> {
    let h = &record.histograms;
    println!(
        "{:<12} {:>12} {:>12} {:>12} {:>12} {:>8}",
        "metric (ms)", "p50", "p95", "p99", "max", "count"
    );
    for (name, blob) in [
        ("e2e", &h.e2e),
        ("ttft", &h.ttft),
        ("tpot", &h.tpot),
        ("itl", &h.itl),
        ("send lag", &h.send_lag),
    ] {
        let histogram =
            decode_histogram(blob).with_context(|| format!("decoding the {name} histogram"))?;
        let at = |permille: u32| {
            Percentile::from_permille(permille)
                .ok()
                .and_then(|p| nearest_rank_value(&histogram, p, 0))
                .map_or_else(|| "-".to_owned(), milli)
        };
        println!(
            "{:<12} {:>12} {:>12} {:>12} {:>12} {:>8}",
            name,
            at(500),
            at(950),
            at(990),
            milli(histogram.max()),
            histogram.len()
        );
    }
    let e = &record.errors;
    println!(
        "errors: {} (connect {}, http 4xx {}, http 5xx {}, bad body {}, timeout {}, wrong length {} (fewer {}, more {}), no tokens {}, usage mismatch {}, connection closed {}, too large {})",
        e.total(),
        e.connect,
        e.http4xx,
        e.http5xx,
        e.bad_body,
        e.timeout,
        e.short_output + e.long_output,
        e.short_output,
        e.long_output,
        e.no_token_ids,
        e.usage_mismatch,
        e.connection_closed,
        e.response_too_large
    );
    println!(
        "requests {} measured + {} warm-up, {} completed; {} prompt bytes, {} output tokens; {} s",
        record.requests,
        record.warmup_requests,
        record.completed,
        record.input_bytes,
        record.output_tokens,
        milli(record.duration_us / 1000)
    );
    Ok(())
}

/// The highest passing probe of the median run.
fn best_probe(entry: &EntryMeasurement) -> Option<&ProbeRecord> {
    let median = entry.throughput_milli_rps?;
    let run = entry
        .runs
        .iter()
        .find(|r| r.throughput_milli_rps == Some(median))?;
    run.probes
        .iter()
        .filter(|p| p.verdict == ProbeVerdict::Pass)
        .max_by_key(|p| p.rate_milli_rps)
}

fn print_entry(entry: &EntryMeasurement, spec: &RateSearchSpec) {
    for run in &entry.runs {
        println!(
            "run {}: {} req/s at a rate of {} req/s{}, {} probes{}",
            run.run,
            run.throughput_milli_rps.map_or_else(|| "-".into(), milli),
            run.rate_milli_rps.map_or_else(|| "-".into(), milli),
            if at_ceiling(run.rate_milli_rps, spec) {
                " (the maximum)"
            } else {
                ""
            },
            run.probes.len(),
            if run.valid {
                ""
            } else {
                " (INVALID: send lag over bound)"
            }
        );
    }
    let ceiling = entry
        .runs
        .iter()
        .any(|run| at_ceiling(run.rate_milli_rps, spec));
    match entry.outcome {
        MeasurementOutcome::Measured if ceiling => println!(
            "throughput at the SLA: ≥ max rate (ceiling): every probe passed up to \
             max_rate_milli_rps = {} req/s ({} req/s measured, median; min {}, max {}); raise \
             rate_search.max_rate_milli_rps to find the limit",
            milli(spec.max_rate_milli_rps),
            entry.throughput_milli_rps.map_or_else(|| "-".into(), milli),
            entry
                .throughput_min_milli_rps
                .map_or_else(|| "-".into(), milli),
            entry
                .throughput_max_milli_rps
                .map_or_else(|| "-".into(), milli),
        ),
        MeasurementOutcome::Measured => println!(
            "throughput at the SLA: {} req/s (median; min {}, max {})",
            entry.throughput_milli_rps.map_or_else(|| "-".into(), milli),
            entry
                .throughput_min_milli_rps
                .map_or_else(|| "-".into(), milli),
            entry
                .throughput_max_milli_rps
                .map_or_else(|| "-".into(), milli),
        ),
        MeasurementOutcome::SlaUnmet { reason } => {
            let (name, why) = match reason {
                SlaUnmetReason::NoPassingRate => (
                    "no_passing_rate",
                    format!(
                        "no probe passed, down to min_rate_milli_rps = {} req/s",
                        milli(spec.min_rate_milli_rps)
                    ),
                ),
                SlaUnmetReason::DeadlineExpired => (
                    "deadline_expired",
                    format!(
                        "entry_deadline_s = {} s expired before the runs finished",
                        spec.entry_deadline_s
                    ),
                ),
                SlaUnmetReason::Unreachable => (
                    "unreachable",
                    "the server refused or reset every request of the last probe".to_owned(),
                ),
            };
            println!("sla_unmet: {name}: {why}");
        }
        MeasurementOutcome::Invalid { run, probe } => println!(
            "invalid: send-lag p99 over its bound in run {run} probe {probe} (the client was \
             measured, not the server; raise rate_search.send_lag_bound_us on a busy machine)"
        ),
    }
}

fn write_json<T: serde::Serialize>(path: Option<&PathBuf>, value: &T) -> anyhow::Result<()> {
    let Some(path) = path else {
        return Ok(());
    };
    let mut text = serde_json::to_string_pretty(value).context("serializing the record")?;
    text.push('\n');
    // Whole or not at all, like every file referee writes.
    receipts::fsutil::write_atomic(path, text.as_bytes(), 0o644)
        .with_context(|| format!("writing `{}`", path.display()))?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{parse_rate, write_json};
    use std::path::PathBuf;

    /// Regression: `--json` was a plain `fs::write`, rewriting the file in place (a kill
    /// left half a record); now a whole new file replaces it, or the old one stays.
    #[test]
    fn the_json_record_replaces_the_file_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("record.json");
        std::fs::write(&path, "previous\n").unwrap();
        // Another name of the old file: an in-place write would change it too.
        let old_name = dir.path().join("previous.json");
        std::fs::hard_link(&path, &old_name).unwrap();
        write_json(Some(&PathBuf::from(&path)), &serde_json::json!({"a": 1})).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\n  \"a\": 1\n}\n"
        );
        assert_eq!(std::fs::read_to_string(&old_name).unwrap(), "previous\n");
        let mut names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["previous.json", "record.json"],
            "a temp file was left"
        );
    }

    #[test]
    fn rates_parse_without_floats() {
        for (text, expected) in [
            ("12", 12_000),
            ("12.5", 12_500),
            ("0.125", 125),
            (".5", 500),
        ] {
            assert_eq!(parse_rate(text).unwrap(), expected, "{text}");
        }
        for text in ["", ".", "0", "1.2345", "-1", "1e3", "x"] {
            assert!(parse_rate(text).is_err(), "{text}");
        }
        for text in ["0", "0.000", ".0"] {
            let message = parse_rate(text).unwrap_err().to_string();
            assert!(
                message.contains("at least 0.001 req/s"),
                "{text}: {message}"
            );
        }
    }
}
