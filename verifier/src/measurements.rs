//! The measurements recomputed from the probe logs (content/verifying.md, Measurements):
//! every probe's histograms decode within the limits of `receipts::rules::histogram`;
//! its SLA percentile, send-lag percentiles, over-bound count, verdict and throughput
//! follow from its histograms and counts by `receipts::rules::{sla, score}`; every run's
//! result is its highest passing probe, and (with the campaign) its probes are the ones
//! the campaign's rate search asks for (`receipts::rules::search`, replayed); an
//! entry's median, min and max follow from its runs and equal the predicate's; the drift
//! check and the hardware verdict are
//! recomputed from their numbers; from v3, whether a run was invalid for CPU steal from
//! its recorded `hostLoad` (`host.steal`) and the token count every log was counted with
//! against the campaign's (`round.tokenCount`). Nothing an engine reported about itself
//! is used: only what the client and the host recorded, bound to the envelope by
//! `files.named`.

use std::collections::BTreeMap;

use crate::{CheckName, FailureReason, VerifyReport};
use receipts::model::{
    DriftCheck, Entry, EntryInfraFailure, EntryMeasurement, EntryPass, EntryStatus, FrozenCampaign,
    HostLoad, LatencyKind, MeasurementOutcome, PassStatus, Percentile, ProbeRecord, ProbeVerdict,
    RateSearchSpec, RoundRecord, RunMeasurement, RunSummary, Sla, SlaUnmetReason, TokenCount,
    TypedOrText,
};
use receipts::rules::histogram::{Recorded, decode_recorded};
use receipts::rules::host::steal_exceeds;
use receipts::rules::score::{
    drift_bp, probe_throughput_milli_rps, probe_throughput_range, run_throughputs,
};
use receipts::rules::search::{RateSearch, probe_unreachable};
use receipts::rules::sla::{max_probes_per_run, required_requests, verdict, walk_recorded};

use crate::PredicateVersion;
use crate::files::{ProbeLogs, recomputed, same, show};

/// The predicate file, as failure messages name it.
const RECEIPT: &str = "receipt.dsse.json";

/// Over-bound counts above which the runner does not compute `requiredRequests`.
const REQUIRED_REQUESTS_LIMIT: u64 = 20;

/// What the predicate claims a probe log's entry-level figures are: where (`entries[i]`,
/// `drift` or `entries[i].passes[j]`), the median and (for an entry's runs) min and max,
/// milli-requests/s, and (for a pass) its status.
struct Claim {
    at: String,
    throughput_field: String,
    throughput: Option<u64>,
    spread: Option<(Option<u64>, Option<u64>)>,
    status: Option<PassStatus>,
}

/// What every probe of a round is judged against.
struct ProbeRules<'a> {
    /// The round's SLA.
    sla: &'a Sla,
    /// The campaign's send-lag p99 bound, µs, when `inputs.campaign` passed.
    send_lag_bound: Option<u64>,
    /// The round's predicate version: which throughput rule its load generator followed.
    version: PredicateVersion,
    /// The campaign's `token_count` (absent = `ids`) every probe must record, from v3
    /// when `inputs.campaign` passed.
    token_count: Option<TokenCount>,
    /// The campaign's rate search every run's probes must follow, when `inputs.campaign`
    /// passed.
    search: Option<&'a RateSearchSpec>,
}

/// Runs `probes.log`, `probe.*`, `run.result`, `entry.measurement`, `drift.recomputed`,
/// `hardware.changed`, `host.steal` and `round.tokenCount` on `record` of the bundle
/// whose probe logs `logs` reads, a round of `version`. `campaign` (when `inputs.campaign` passed) supplies the
/// send-lag, drift and steal bounds and the token count; `host.steal` and
/// `round.tokenCount` are `not applicable` before v3.
pub(crate) fn check_measurements(
    report: &mut VerifyReport,
    logs: &mut ProbeLogs<'_>,
    record: &RoundRecord,
    campaign: Option<&FrozenCampaign>,
    version: PredicateVersion,
) {
    // From v5 every probe is judged by the campaign's SLA, whatever the receipt says
    // its own is (`round.sla` holds the two equal).
    let campaign_sla = campaign
        .filter(|_| version >= PredicateVersion::V5)
        .map(|c| &c.campaign.sla);
    check_sla(report, record, campaign, version);
    let rules = ProbeRules {
        sla: campaign_sla.unwrap_or(&record.sla),
        send_lag_bound: campaign.map(|c| {
            c.campaign
                .rate_search
                .effective_send_lag_bound_us(&c.campaign.sla)
        }),
        version,
        token_count: campaign
            .filter(|_| version >= PredicateVersion::V3)
            .map(|c| c.campaign.api_profile().token_count),
        search: campaign.map(|c| &c.campaign.rate_search),
    };
    check_token_count(report, record, campaign, version);
    let steal_bound = match (version, campaign) {
        (PredicateVersion::V1 | PredicateVersion::V2, _) => {
            report.not_applicable(CheckName::HostSteal, None, version.name());
            None
        }
        (
            PredicateVersion::V3
            | PredicateVersion::V4
            | PredicateVersion::V5
            | PredicateVersion::V6
            | PredicateVersion::V7
            | PredicateVersion::V8
            | PredicateVersion::V9,
            None,
        ) => {
            report.not_run(&[CheckName::HostSteal], CheckName::InputsCampaign);
            None
        }
        (
            PredicateVersion::V3
            | PredicateVersion::V4
            | PredicateVersion::V5
            | PredicateVersion::V6
            | PredicateVersion::V7
            | PredicateVersion::V8
            | PredicateVersion::V9,
            Some(c),
        ) => Some(c.campaign.effective_max_steal_permille()),
    };
    for entry in &record.entries {
        let at = format!("entries[{}]", entry.index);
        let claim = Claim {
            throughput_field: format!("{at}.throughputMilliRps"),
            at,
            throughput: entry.throughput_milli_rps,
            spread: Some((
                entry.throughput_min_milli_rps,
                entry.throughput_max_milli_rps,
            )),
            status: None,
        };
        check_series(report, logs, &entry.runs, &claim, &rules);
        let steal = steal_bound.map(|bound| Steal {
            cpus: run_cpus(entry),
            bound,
        });
        if let Some(steal) = &steal {
            check_entry_steal(report, entry, steal);
        }
        for (j, pass) in entry.passes.iter().enumerate() {
            let at = format!("entries[{}].passes[{j}]", entry.index);
            check_pass(report, logs, &at, pass, steal.as_ref(), &rules);
        }
    }
    if let Some(drift) = &record.drift {
        let claim = Claim {
            at: "drift".to_owned(),
            throughput_field: "drift.driftMilliRps".to_owned(),
            throughput: drift.drift_milli_rps,
            spread: None,
            status: None,
        };
        check_series(report, logs, &drift.runs, &claim, &rules);
        check_drift(report, record, drift, campaign, version);
    } else {
        check_no_drift(report, record, version);
    }
    let changed = record.hardware.at_start != record.hardware.at_end;
    report.record(
        CheckName::HardwareChanged,
        Some("hardware.changed".to_owned()),
        same(
            RECEIPT,
            "hardware.changed",
            record.hardware.changed,
            changed,
        ),
    );
}

/// One series of runs: each probe log its runs name, read once; the entry-level figures
/// are compared when one file holds every run.
fn check_series(
    report: &mut VerifyReport,
    logs: &mut ProbeLogs<'_>,
    runs: &[RunSummary],
    claim: &Claim,
    rules: &ProbeRules<'_>,
) {
    let mut by_file: BTreeMap<&str, Vec<&RunSummary>> = BTreeMap::new();
    for run in runs {
        by_file.entry(run.probe_log.as_str()).or_default().push(run);
    }
    let single_file = by_file.len() == 1;
    for (file, summaries) in by_file {
        let log = check_log(report, logs, file, Some(&summaries), rules);
        if let (Some(log), true) = (log, single_file) {
            check_claim(report, file, log, claim);
        }
    }
}

/// The CPUs an entry's runs were given: the engine's and the client's (1 without an
/// isolation record).
fn run_cpus(entry: &Entry) -> u32 {
    entry.engine.isolation.as_ref().map_or(1, |i| {
        let mut all: Vec<u32> = i
            .engine_cpus
            .iter()
            .chain(&i.client_cpus)
            .copied()
            .collect();
        all.sort_unstable();
        all.dedup();
        u32::try_from(all.len()).unwrap_or(u32::MAX)
    })
}

/// What a run's recorded `hostLoad` is judged against: the CPUs it was given and the
/// campaign's `max_steal_permille`.
struct Steal {
    /// The CPUs of the entry's runs.
    cpus: u32,
    /// The campaign's effective steal bound, permille.
    bound: u32,
}

impl Steal {
    /// Whether `load` is over the bound ([`steal_exceeds`]).
    fn exceeds(&self, load: &HostLoad) -> bool {
        steal_exceeds(load, self.cpus, self.bound)
    }

    /// `load` as a failure message writes it, with the verdict it gives.
    fn describe(&self, load: &HostLoad) -> String {
        format!(
            "{} ({} ms stolen from {} CPUs over {} ms, bound {} ‰)",
            if self.exceeds(load) {
                "over the steal bound"
            } else {
                "within the steal bound"
            },
            load.steal_ms,
            self.cpus,
            load.wall_ms,
            self.bound
        )
    }
}

/// One pass row `at`: its probe log (when written) checked, and the figures the row
/// claims from it (`entry.measurement`). A row with a `hostLoad` is held to it
/// (`host.steal`, with `steal` from v3 when `inputs.campaign` passed): a measured or
/// SLA-unmet row must be within the steal bound; a row `invalid` while its log measured
/// (not `invalid` itself) is invalid for steal, so its `hostLoad` must be over the bound,
/// and it claims none of the log's figures.
fn check_pass(
    report: &mut VerifyReport,
    logs: &mut ProbeLogs<'_>,
    at: &str,
    pass: &EntryPass,
    steal: Option<&Steal>,
    rules: &ProbeRules<'_>,
) {
    let held = steal.zip(pass.host_load.as_ref());
    let status_field = format!("{at}.status");
    if let Some((steal, load)) = held
        && matches!(pass.status, PassStatus::Measured | PassStatus::SlaUnmet)
    {
        let result = if steal.exceeds(load) {
            Err(recomputed(
                RECEIPT,
                &status_field,
                format!("{:?}", pass.status),
                format!("Invalid (hostLoad {})", steal.describe(load)),
            ))
        } else {
            Ok(())
        };
        report.record(CheckName::HostSteal, Some(at.to_owned()), result);
    }
    let Some(file) = &pass.probe_log else {
        return;
    };
    let Some(log) = check_log(report, logs, file, None, rules) else {
        return;
    };
    let log_invalid = matches!(log.outcome, MeasurementOutcome::Invalid { .. });
    if let Some((steal, load)) = held
        && pass.status == PassStatus::Invalid
        && !log_invalid
    {
        // A telemetry violation (v9) invalidates the run too; `host.telemetry` holds the
        // violation to the run's telemetry file.
        let throttled = pass
            .telemetry
            .as_ref()
            .is_some_and(|t| t.violation.is_some());
        let result = if steal.exceeds(load) || throttled {
            Ok(())
        } else {
            Err(recomputed(
                RECEIPT,
                &status_field,
                "Invalid",
                format!(
                    "{:?} (from `{file}`; hostLoad {}; no telemetry violation)",
                    log.outcome,
                    steal.describe(load)
                ),
            ))
        };
        report.record(CheckName::HostSteal, Some(at.to_owned()), result);
        return;
    }
    let claim = Claim {
        throughput_field: format!("{at}.throughputMilliRps"),
        at: at.to_owned(),
        throughput: pass.throughput_milli_rps,
        spread: None,
        status: Some(pass.status),
    };
    check_claim(report, file, log, &claim);
}

/// `host.steal` of an entry: an entry `infra_failed` for CPU steal (`cpu_steal`) has a
/// run (a run summary or a pass row) whose `hostLoad` is the one it names and is over
/// the bound; a scored entry's counted runs are within it: no run summary over it, and no
/// pass whose last attempt (after its one re-run) is an `invalid` row over it (invalid
/// twice, which makes the round infra_failed and the entry `cpu_steal`). A first attempt
/// re-run after it may be over: it is not counted.
fn check_entry_steal(report: &mut VerifyReport, entry: &Entry, steal: &Steal) {
    let at = format!("entries[{}]", entry.index);
    let loads = || {
        entry
            .runs
            .iter()
            .filter_map(|r| r.host_load.as_ref())
            .chain(entry.passes.iter().filter_map(|p| p.host_load.as_ref()))
    };
    let claimed = entry.infra_failure.as_ref().and_then(TypedOrText::typed);
    let result = if let Some(EntryInfraFailure::CpuSteal { steal_ms, wall_ms }) = claimed {
        let named = |load: &&HostLoad| load.steal_ms == *steal_ms && load.wall_ms == *wall_ms;
        match loads().find(named) {
            Some(load) if steal.exceeds(load) => Ok(()),
            Some(load) => Err(recomputed(
                RECEIPT,
                format!("{at}.infraFailure"),
                format!("{claimed:?}"),
                format!("hostLoad {}", steal.describe(load)),
            )),
            None => Err(recomputed(
                RECEIPT,
                format!("{at}.infraFailure"),
                format!("{claimed:?}"),
                format!(
                    "no run of the entry with that hostLoad (bound {} ‰)",
                    steal.bound
                ),
            )),
        }
    } else if entry.status == EntryStatus::Scored {
        let over_run = entry.runs.iter().find_map(|r| {
            let load = r.host_load.as_ref().filter(|l| steal.exceeds(l))?;
            Some(format!("run {}: hostLoad {}", r.run, steal.describe(load)))
        });
        let last_attempt = |(i, row): &(usize, &EntryPass)| {
            !entry.passes[i + 1..]
                .iter()
                .any(|later| later.pass == row.pass && later.control == row.control)
        };
        let over_pass = || {
            entry
                .passes
                .iter()
                .enumerate()
                .filter(last_attempt)
                .find_map(|(i, row)| {
                    let load = row.host_load.as_ref().filter(|l| steal.exceeds(l))?;
                    (row.status == PassStatus::Invalid).then(|| {
                        format!(
                            "passes[{i}]: invalid on its last attempt, hostLoad {}",
                            steal.describe(load)
                        )
                    })
                })
        };
        match over_run.or_else(over_pass) {
            Some(why) => Err(recomputed(
                RECEIPT,
                format!("{at}.status"),
                "Scored",
                format!("InfraFailed ({why})"),
            )),
            None => Ok(()),
        }
    } else {
        return;
    };
    report.record(CheckName::HostSteal, Some(at), result);
}

/// `round.sla` (v5): the receipt's `sla` is the campaign's; `sla` as target.
fn check_sla(
    report: &mut VerifyReport,
    record: &RoundRecord,
    campaign: Option<&FrozenCampaign>,
    version: PredicateVersion,
) {
    let target = Some("sla".to_owned());
    if version < PredicateVersion::V5 {
        report.not_applicable(CheckName::RoundSla, target, version.name());
        return;
    }
    let Some(frozen) = campaign else {
        report.not_run(&[CheckName::RoundSla], CheckName::InputsCampaign);
        return;
    };
    let result = same(RECEIPT, "sla", &record.sla, &frozen.campaign.sla);
    report.record(CheckName::RoundSla, target, result);
}

/// `round.tokenCount`: the round's `tokenCount` is the campaign's `token_count` (absent =
/// `ids` on both); `tokenCount` as target. Each probe log's own is checked as it is read
/// ([`check_log`]).
fn check_token_count(
    report: &mut VerifyReport,
    record: &RoundRecord,
    campaign: Option<&FrozenCampaign>,
    version: PredicateVersion,
) {
    let target = Some("tokenCount".to_owned());
    if version < PredicateVersion::V3 {
        report.not_applicable(CheckName::TokenCount, target, version.name());
        return;
    }
    let Some(frozen) = campaign else {
        report.not_run(&[CheckName::TokenCount], CheckName::InputsCampaign);
        return;
    };
    let result = same(
        RECEIPT,
        "tokenCount",
        record.token_count.unwrap_or_default(),
        frozen.campaign.api_profile().token_count,
    );
    report.record(CheckName::TokenCount, target, result);
}

/// One probe log: `probes.log` (against the run `summaries` the predicate names, when
/// it names runs), every probe, every run's result and (with `rules.token_count`) the
/// token count every probe recorded (`round.tokenCount`, the log as target). Returns the
/// log when `probes.log` passed, for the figures a claim reads from it ([`check_claim`]).
fn check_log<'l>(
    report: &mut VerifyReport,
    logs: &'l mut ProbeLogs<'_>,
    file: &str,
    summaries: Option<&[&RunSummary]>,
    rules: &ProbeRules<'_>,
) -> Option<&'l EntryMeasurement> {
    let log = match logs.get(file) {
        Ok(log) => log,
        Err(reason) => {
            report.fail(CheckName::ProbeLog, Some(file.to_owned()), reason);
            return None;
        }
    };
    if !report.record(
        CheckName::ProbeLog,
        Some(file.to_owned()),
        runs_named(file, log, summaries),
    ) {
        return None;
    }
    if let Some(expected) = rules.token_count {
        report.record(
            CheckName::TokenCount,
            Some(file.to_owned()),
            probe_token_counts(file, log, expected),
        );
    }
    for (r, run) in log.runs.iter().enumerate() {
        for (p, probe) in run.probes.iter().enumerate() {
            let at = format!("runs[{r}].probes[{p}]");
            check_probe(report, file, &at, probe, rules);
        }
        let summary = summaries.and_then(|s| s.iter().find(|s| s.run == run.run).copied());
        // The deadline (a clock the files do not hold) may cut the last run short.
        let cut_short = r + 1 == log.runs.len()
            && log.outcome
                == (MeasurementOutcome::SlaUnmet {
                    reason: SlaUnmetReason::DeadlineExpired,
                });
        report.record(
            CheckName::RunResult,
            Some(format!("{file} runs[{r}]")),
            run_result(file, r, run, summary).and_then(|()| match rules.search {
                Some(spec) => search_followed(file, r, run, spec, cut_short),
                None => Ok(()),
            }),
        );
    }
    Some(log)
}

/// `entry.measurement` of the figures `claim` reads from the probe log `file`.
fn check_claim(report: &mut VerifyReport, file: &str, log: &EntryMeasurement, claim: &Claim) {
    report.record(
        CheckName::EntryMeasurement,
        Some(claim.at.clone()),
        entry_measurement(file, log, claim),
    );
}

/// Every probe of `log` recorded `expected` as its token count (absent = `ids`); the
/// first that did not is the failure, naming its field.
fn probe_token_counts(
    file: &str,
    log: &EntryMeasurement,
    expected: TokenCount,
) -> Result<(), FailureReason> {
    for (r, run) in log.runs.iter().enumerate() {
        for (p, probe) in run.probes.iter().enumerate() {
            same(
                file,
                &format!("runs[{r}].probes[{p}].tokenCount"),
                probe.token_count.unwrap_or_default(),
                expected,
            )?;
        }
    }
    Ok(())
}

/// Every run of `log` is one of `summaries` (same run number; any run when the predicate
/// names no runs, as for a pass), every probe sits in its own run, and every summary's
/// run is logged.
fn runs_named(
    file: &str,
    log: &EntryMeasurement,
    summaries: Option<&[&RunSummary]>,
) -> Result<(), FailureReason> {
    for run in &log.runs {
        if summaries.is_some_and(|s| !s.iter().any(|s| s.run == run.run)) {
            return Err(FailureReason::UnknownRun {
                file: file.to_owned(),
                run: run.run,
            });
        }
        if let Some(probe) = run.probes.iter().find(|p| p.run != run.run) {
            return Err(FailureReason::UnknownRun {
                file: file.to_owned(),
                run: probe.run,
            });
        }
    }
    match summaries
        .unwrap_or_default()
        .iter()
        .find(|s| !log.runs.iter().any(|r| r.run == s.run))
    {
        Some(missing) => Err(FailureReason::RunNotLogged {
            file: file.to_owned(),
            run: missing.run,
        }),
        None => Ok(()),
    }
}

/// The two histograms of a probe the checks read, decoded (the other three only need to
/// decode).
struct Decoded {
    /// The SLA's latency histogram (e2e, TTFT or TPOT).
    sla: Recorded,
    send_lag: Recorded,
}

/// `probe.histograms`, then `probe.percentile`, `probe.overBound`, `probe.verdict` on
/// the decoded histograms (not run when one does not decode) and `probe.throughput`.
fn check_probe(
    report: &mut VerifyReport,
    file: &str,
    at: &str,
    probe: &ProbeRecord,
    rules: &ProbeRules<'_>,
) {
    let (sla, send_lag_bound) = (rules.sla, rules.send_lag_bound);
    let target = Some(format!("{file} {at}"));
    report.record(
        CheckName::ProbeThroughput,
        target.clone(),
        probe_throughput(file, at, probe, rules.version),
    );
    let decoded = match decode_all(file, at, probe, sla.latency) {
        Ok(decoded) => decoded,
        Err(reason) => {
            report.fail(CheckName::ProbeHistograms, target.clone(), reason);
            for name in [
                CheckName::ProbePercentile,
                CheckName::ProbeOverBound,
                CheckName::ProbeVerdict,
            ] {
                report.fail(
                    name,
                    target.clone(),
                    FailureReason::NotRun {
                        blocked_by: CheckName::ProbeHistograms,
                    },
                );
            }
            return;
        }
    };
    let sla_histogram = &decoded.sla;
    let counts = same(
        file,
        &format!("{at}.completed"),
        u64::from(probe.completed),
        sla_histogram.len(),
    )
    .and_then(|()| {
        same(
            file,
            &format!("{at}.requests"),
            u64::from(probe.requests),
            decoded.send_lag.len(),
        )
    });
    report.record(CheckName::ProbeHistograms, target.clone(), counts);

    let failed = u64::from(probe.requests).saturating_sub(u64::from(probe.completed));
    // One walk per histogram for every figure read from it.
    let lag = walk_recorded(
        &decoded.send_lag,
        [Percentile::P50, Percentile::P99],
        0,
        None,
    );
    let [lag_p50, lag_p99] = lag.values.map(|value| value.unwrap_or(0));
    let sla_walk = walk_recorded(
        sla_histogram,
        [sla.percentile],
        failed,
        Some(sla.bound_us()),
    );
    let [sla_percentile] = sla_walk.values;
    let percentile = same(
        file,
        &format!("{at}.percentileUs"),
        probe.percentile_us,
        sla_percentile,
    )
    .and_then(|()| {
        same(
            file,
            &format!("{at}.sendLagP50Us"),
            probe.send_lag_p50_us,
            lag_p50,
        )
    })
    .and_then(|()| {
        same(
            file,
            &format!("{at}.sendLagP99Us"),
            probe.send_lag_p99_us,
            lag_p99,
        )
    });
    report.record(CheckName::ProbePercentile, target.clone(), percentile);

    let over_bound = failed.saturating_add(sla_walk.over_bound);
    let required = (over_bound <= REQUIRED_REQUESTS_LIMIT)
        .then(|| required_requests(over_bound, sla.percentile))
        .flatten();
    let over = if probe.completed > probe.requests {
        Err(recomputed(
            file,
            format!("{at}.completed"),
            probe.completed,
            format!("at most requests ({})", probe.requests),
        ))
    } else {
        same(
            file,
            &format!("{at}.overBound"),
            u64::from(probe.over_bound),
            over_bound,
        )
    }
    .and_then(|()| same(file, &format!("{at}.errors"), probe.errors.total(), failed))
    .and_then(|()| {
        same(
            file,
            &format!("{at}.requiredRequests"),
            probe.required_requests,
            required,
        )
    });
    report.record(CheckName::ProbeOverBound, target.clone(), over);

    let bound = send_lag_bound.unwrap_or(probe.send_lag_bound_us);
    let verdict_result = same(
        file,
        &format!("{at}.sendLagBoundUs"),
        probe.send_lag_bound_us,
        bound,
    )
    .and_then(|()| {
        same(
            file,
            &format!("{at}.verdict"),
            probe.verdict,
            verdict(
                u64::from(probe.requests),
                over_bound,
                sla.percentile,
                lag_p99,
                bound,
            ),
        )
    });
    report.record(CheckName::ProbeVerdict, target, verdict_result);
}

/// Decodes every histogram of `probe`, keeping the SLA's (`latency`) and send lag's,
/// which are decoded last; the first that does not decode (bad base64, over a size
/// limit, truncated) is the failure, naming the field.
fn decode_all(
    file: &str,
    at: &str,
    probe: &ProbeRecord,
    latency: LatencyKind,
) -> Result<Decoded, FailureReason> {
    let h = &probe.histograms;
    let decode = |name: &str, text: &str| {
        decode_recorded(text).map_err(|e| FailureReason::ArtifactUnreadable {
            file: format!("{file} {at}.histograms.{name}"),
            message: e.to_string(),
        })
    };
    let (sla_name, sla_text) = match latency {
        LatencyKind::E2e => ("e2e", &h.e2e),
        LatencyKind::Ttft => ("ttft", &h.ttft),
        LatencyKind::Tpot => ("tpot", &h.tpot),
    };
    for (name, text) in [
        ("itl", &h.itl),
        ("e2e", &h.e2e),
        ("ttft", &h.ttft),
        ("tpot", &h.tpot),
    ] {
        if name != sla_name {
            decode(name, text)?;
        }
    }
    Ok(Decoded {
        sla: decode(sla_name, sla_text)?,
        send_lag: decode("sendLag", &h.send_lag)?,
    })
}

/// `probe.throughput`: from v3 the throughput is exactly [`probe_throughput_milli_rps`]
/// of its completed count and its duration (µs); a v1 or v2 load generator divided by
/// the nanoseconds it measured, so there it lies in what the µs allow
/// ([`probe_throughput_range`]).
fn probe_throughput(
    file: &str,
    at: &str,
    probe: &ProbeRecord,
    version: PredicateVersion,
) -> Result<(), FailureReason> {
    let (low, high) = match version {
        PredicateVersion::V1 | PredicateVersion::V2 => {
            probe_throughput_range(probe.completed, probe.duration_us)
        }
        PredicateVersion::V3
        | PredicateVersion::V4
        | PredicateVersion::V5
        | PredicateVersion::V6
        | PredicateVersion::V7
        | PredicateVersion::V8
        | PredicateVersion::V9 => {
            let exact = probe_throughput_milli_rps(probe.completed, probe.duration_us);
            (exact, exact)
        }
    };
    if (low..=high).contains(&probe.throughput_milli_rps) {
        Ok(())
    } else {
        let range = if low == high {
            low.to_string()
        } else {
            format!("{low}..={high}")
        };
        Err(recomputed(
            file,
            format!("{at}.throughputMilliRps"),
            probe.throughput_milli_rps,
            format!(
                "{range} ({} completed in {} µs)",
                probe.completed, probe.duration_us
            ),
        ))
    }
}

/// `run.result`: the run's throughput and rate are its highest passing probe's (none
/// when none passed), it is valid when no probe is invalid, and the predicate's run
/// summary says the same (throughput, rate, probe count).
fn run_result(
    file: &str,
    r: usize,
    run: &RunMeasurement,
    summary: Option<&RunSummary>,
) -> Result<(), FailureReason> {
    let at = format!("runs[{r}]");
    let best = run
        .probes
        .iter()
        .filter(|p| p.verdict == ProbeVerdict::Pass)
        .max_by_key(|p| p.rate_milli_rps);
    let throughput = best.map(|p| p.throughput_milli_rps);
    let rate = best.map(|p| p.rate_milli_rps);
    let valid = run
        .probes
        .iter()
        .all(|p| p.verdict != ProbeVerdict::Invalid);
    same(
        file,
        &format!("{at}.throughputMilliRps"),
        run.throughput_milli_rps,
        throughput,
    )
    .and_then(|()| {
        same(
            file,
            &format!("{at}.rateMilliRps"),
            run.rate_milli_rps,
            rate,
        )
    })
    .and_then(|()| same(file, &format!("{at}.valid"), run.valid, valid))?;
    let Some(summary) = summary else {
        return Ok(());
    };
    let field = |name: &str| format!("run {} {name} (from `{file}`)", summary.run);
    same(
        RECEIPT,
        &field("throughputMilliRps"),
        summary.throughput_milli_rps,
        throughput,
    )
    .and_then(|()| {
        same(
            RECEIPT,
            &field("rateMilliRps"),
            summary.rate_milli_rps,
            rate,
        )
    })
    .and_then(|()| {
        same(
            RECEIPT,
            &field("probes"),
            u64::from(summary.probes),
            run.probes.len() as u64,
        )
    })
}

/// `run.result`, with the campaign: the run's probes are the ones its rate search asks for
/// ([`RateSearch`] replayed over the logged records): each probe's number, sub-stream
/// (`run × max_probes + probe`) and rate, no probe after the search stopped, and no stop
/// before it did unless `cut_short` (the entry's deadline expired in this run).
fn search_followed(
    file: &str,
    r: usize,
    run: &RunMeasurement,
    spec: &RateSearchSpec,
    cut_short: bool,
) -> Result<(), FailureReason> {
    let max_probes = max_probes_per_run(spec);
    let mut search = RateSearch::new(spec);
    for (p, probe) in run.probes.iter().enumerate() {
        let at = format!("runs[{r}].probes[{p}]");
        let Some(rate) = search.next_rate() else {
            return Err(recomputed(
                file,
                format!("{at}.rateMilliRps"),
                probe.rate_milli_rps,
                "no probe: the rate search had stopped",
            ));
        };
        let number = u32::try_from(p).unwrap_or(u32::MAX);
        same(file, &format!("{at}.probe"), probe.probe, number)?;
        same(
            file,
            &format!("{at}.subStream"),
            u64::from(probe.sub_stream),
            u64::from(run.run) * u64::from(max_probes) + u64::from(number),
        )?;
        same(
            file,
            &format!("{at}.rateMilliRps"),
            probe.rate_milli_rps,
            rate,
        )?;
        search.observe(probe);
    }
    match search.next_rate() {
        Some(rate) if !cut_short => Err(recomputed(
            file,
            format!("runs[{r}].probes"),
            format!("{} probes", run.probes.len()),
            format!(
                "a probe at {rate} milli-req/s next (`rate_search.start` = {:?})",
                spec.effective_start()
            ),
        )),
        _ => Ok(()),
    }
}

/// `entry.measurement`: the log's validity and outcome follow from its runs, its median,
/// min and max are [`run_throughputs`] of them when measured (none otherwise), and the
/// predicate's entry (or drift baseline) has the same figures.
fn entry_measurement(
    file: &str,
    log: &EntryMeasurement,
    claim: &Claim,
) -> Result<(), FailureReason> {
    let valid = log.runs.iter().all(|r| r.valid);
    let invalid_probe = log.runs.iter().find(|r| !r.valid).map(|r| {
        let probe = r
            .probes
            .iter()
            .position(|p| p.verdict == ProbeVerdict::Invalid)
            .unwrap_or(r.probes.len().saturating_sub(1));
        (r.run, u32::try_from(probe).unwrap_or(u32::MAX))
    });
    let unmet = log.runs.iter().any(|r| r.throughput_milli_rps.is_none());
    let outcome_fits = match log.outcome {
        MeasurementOutcome::Measured => valid && !unmet && !log.runs.is_empty(),
        MeasurementOutcome::Invalid { run, probe } => invalid_probe == Some((run, probe)),
        MeasurementOutcome::SlaUnmet {
            reason: SlaUnmetReason::NoPassingRate,
        } => valid && unmet,
        // The deadline is a clock the files do not hold: only validity is checked.
        MeasurementOutcome::SlaUnmet {
            reason: SlaUnmetReason::DeadlineExpired,
        } => valid,
        // A run with no passing rate stopped at a probe the server never answered.
        MeasurementOutcome::SlaUnmet {
            reason: SlaUnmetReason::Unreachable,
        } => {
            valid
                && log.runs.iter().any(|r| {
                    r.throughput_milli_rps.is_none()
                        && r.probes.last().is_some_and(probe_unreachable)
                })
        }
    };
    same(file, "valid", log.valid, valid)?;
    if !outcome_fits {
        return Err(recomputed(
            file,
            "outcome",
            format!("{:?}", log.outcome),
            format!(
                "runs valid: {valid}, every run with a passing probe: {}, first invalid probe: {}",
                !unmet,
                show(invalid_probe.map(|(run, probe)| format!("run {run} probe {probe}")))
            ),
        ));
    }
    let spread = if log.outcome == MeasurementOutcome::Measured {
        let values: Option<Vec<u64>> = log.runs.iter().map(|r| r.throughput_milli_rps).collect();
        values.as_deref().and_then(run_throughputs)
    } else {
        None
    };
    let (median, min, max) = (
        spread.map(|s| s.0),
        spread.map(|s| s.1),
        spread.map(|s| s.2),
    );
    same(file, "throughputMilliRps", log.throughput_milli_rps, median)?;
    same(
        file,
        "throughputMinMilliRps",
        log.throughput_min_milli_rps,
        min,
    )?;
    same(
        file,
        "throughputMaxMilliRps",
        log.throughput_max_milli_rps,
        max,
    )?;
    if let Some(status) = claim.status {
        let fits = match status {
            PassStatus::Measured => log.outcome == MeasurementOutcome::Measured,
            PassStatus::SlaUnmet => matches!(log.outcome, MeasurementOutcome::SlaUnmet { .. }),
            PassStatus::Invalid => matches!(log.outcome, MeasurementOutcome::Invalid { .. }),
            // Those end before or beside a measurement: the log says nothing about them.
            PassStatus::Crashed | PassStatus::InfraFailed | PassStatus::NotRun => true,
        };
        if !fits {
            return Err(recomputed(
                RECEIPT,
                format!("{}.status", claim.at),
                format!("{status:?}"),
                format!("{:?} (from `{file}`)", log.outcome),
            ));
        }
    }
    // A run that ended after its log was written, as the engine's fault (it crashed, or
    // from v6 left its CPU set) or the runner's (its engine would not stop, its kept
    // requests were not saved: `infra_failed`, re-run once), counts no throughput: its
    // row claims none of the log's.
    let median = match claim.status {
        Some(PassStatus::Crashed | PassStatus::InfraFailed) => None,
        _ => median,
    };
    same(RECEIPT, &claim.throughput_field, claim.throughput, median)?;
    let Some((claimed_min, claimed_max)) = claim.spread else {
        return Ok(());
    };
    same(
        RECEIPT,
        &format!("{}.throughputMinMilliRps", claim.at),
        claimed_min,
        min,
    )?;
    same(
        RECEIPT,
        &format!("{}.throughputMaxMilliRps", claim.at),
        claimed_max,
        max,
    )
}

/// The first baseline's throughput when the round ran its drift baseline: rounds before
/// v3 run the baseline again at the end exactly when its first run scored (from v3 the
/// A/A control and the per-pass baselines measure the noise, and there is no drift).
fn drift_baseline_of(record: &RoundRecord, version: PredicateVersion) -> Option<u64> {
    (version < PredicateVersion::V3)
        .then(|| record.entries.first())
        .flatten()
        .filter(|e| e.status == EntryStatus::Scored)
        .and_then(|e| e.throughput_milli_rps)
}

/// `drift.recomputed` of a round without a drift record: fails when its version and its
/// baseline's score say the round ran one ([`drift_baseline_of`]).
fn check_no_drift(report: &mut VerifyReport, record: &RoundRecord, version: PredicateVersion) {
    if let Some(first) = drift_baseline_of(record, version) {
        report.fail(
            CheckName::DriftRecomputed,
            Some("drift".to_owned()),
            recomputed(
                RECEIPT,
                "drift",
                "absent",
                format!(
                    "the drift check against the baseline's first {first} milli-rps \
                     (a round/{} round runs the baseline again at the end when it scored)",
                    version.name()
                ),
            ),
        );
    }
}

/// `drift.recomputed`: the round is one that ran a drift baseline ([`drift_baseline_of`]);
/// `firstMilliRps` is the first baseline's throughput, `driftBp` is [`drift_bp`] of the
/// two, `boundBp` the campaign's bound and `withinBound` whether the drift is at most the
/// bound; no drift run records a host load (drift ended with v2, host loads began with
/// v5).
fn check_drift(
    report: &mut VerifyReport,
    record: &RoundRecord,
    drift: &DriftCheck,
    campaign: Option<&FrozenCampaign>,
    version: PredicateVersion,
) {
    if drift_baseline_of(record, version).is_none() {
        report.fail(
            CheckName::DriftRecomputed,
            Some("drift".to_owned()),
            recomputed(
                RECEIPT,
                "drift",
                "a drift record",
                if version >= PredicateVersion::V3 {
                    "none (from v3 the A/A control and the per-pass baselines measure the noise)"
                } else {
                    "none: the baseline's first run did not score, so no drift baseline ran"
                },
            ),
        );
        return;
    }
    if let Some(r) = drift.runs.iter().position(|run| run.host_load.is_some()) {
        report.fail(
            CheckName::DriftRecomputed,
            Some("drift".to_owned()),
            recomputed(
                RECEIPT,
                format!("drift.runs[{r}].hostLoad"),
                "a host load",
                "none: no runner recorded one in a drift run (drift ended with v2, host loads began with v5)",
            ),
        );
        return;
    }
    let first = record.entries.first().and_then(|e| e.throughput_milli_rps);
    let recomputed_bp = drift
        .drift_milli_rps
        .and_then(|d| drift_bp(drift.first_milli_rps, d));
    let bound = campaign.map_or(drift.bound_bp, |c| c.campaign.drift_bound_bp);
    let within = recomputed_bp.is_some_and(|bp| bp <= u64::from(bound));
    let result = same(
        RECEIPT,
        "drift.firstMilliRps",
        Some(drift.first_milli_rps),
        first,
    )
    .and_then(|()| same(RECEIPT, "drift.driftBp", drift.drift_bp, recomputed_bp))
    .and_then(|()| same(RECEIPT, "drift.boundBp", drift.bound_bp, bound))
    .and_then(|()| same(RECEIPT, "drift.withinBound", drift.within_bound, within));
    report.record(CheckName::DriftRecomputed, Some("drift".to_owned()), result);
}

#[cfg(test)]
mod tests {
    use super::*;
    use receipts::model::{ErrorCounts, ProbeHistograms};

    /// A probe of 3 completed requests over 1 000 000 µs claiming `throughput_milli_rps`.
    fn probe(throughput_milli_rps: u64) -> ProbeRecord {
        ProbeRecord {
            run: 0,
            probe: 0,
            sub_stream: 0,
            rate_milli_rps: 3_000,
            warmup_requests: 0,
            requests: 3,
            completed: 3,
            over_bound: 0,
            percentile_us: Some(1_000),
            required_requests: None,
            send_lag_p50_us: 0,
            send_lag_p99_us: 0,
            send_lag_bound_us: 2_000,
            verdict: ProbeVerdict::Fail,
            throughput_milli_rps,
            duration_us: 1_000_000,
            input_bytes: 3,
            output_tokens: 3,
            token_count: None,
            errors: ErrorCounts::default(),
            histograms: ProbeHistograms {
                e2e: String::new(),
                ttft: String::new(),
                tpot: String::new(),
                itl: String::new(),
                send_lag: String::new(),
            },
        }
    }

    /// A run of probes at `rates` with `verdicts`, numbered and on their sub-streams as
    /// the runner numbers them (`max_probes` per run).
    fn run_of(probes: &[(u64, ProbeVerdict, u64)], max_probes: u32) -> RunMeasurement {
        let probes = probes
            .iter()
            .enumerate()
            .map(|(i, &(rate, verdict, throughput))| ProbeRecord {
                probe: i as u32,
                sub_stream: max_probes + i as u32,
                rate_milli_rps: rate,
                verdict,
                ..probe(throughput)
            })
            .collect();
        RunMeasurement {
            run: 1,
            throughput_milli_rps: None,
            rate_milli_rps: None,
            probes,
            valid: true,
        }
    }

    #[test]
    fn a_run_follows_its_campaigns_search() {
        use ProbeVerdict::{Fail, Pass};
        let legacy = RateSearchSpec {
            min_rate_milli_rps: 1_000,
            max_rate_milli_rps: 8_000,
            rate_tolerance_bp: 3_500,
            ..RateSearchSpec::default()
        };
        let estimate = RateSearchSpec {
            start: Some(receipts::model::SearchStart::Estimate),
            ..legacy.clone()
        };
        let budget = max_probes_per_run(&legacy);
        // Capacity 3 req/s from the minimum: 1, 2, 4 (fail), then 3.
        let from_min = [
            (1_000, Pass, 1_000),
            (2_000, Pass, 2_000),
            (4_000, Fail, 3_000),
            (3_000, Pass, 3_000),
        ];
        let check = |probes: &[(u64, ProbeVerdict, u64)], spec: &RateSearchSpec, cut: bool| {
            search_followed("p.json", 0, &run_of(probes, budget), spec, cut)
        };
        assert_eq!(check(&from_min, &legacy, false), Ok(()));
        // The same server from the estimate: 8 fails at 3.1 achieved, start at 2.
        let from_estimate = [
            (8_000, Fail, 3_100),
            (2_000, Pass, 2_000),
            (4_000, Fail, 3_000),
            (3_000, Pass, 3_000),
        ];
        assert_eq!(check(&from_estimate, &estimate, false), Ok(()));
        // A log of one search checked against the other's campaign fails at probe 0.
        assert_eq!(
            check(&from_estimate, &legacy, false),
            Err(recomputed(
                "p.json",
                "runs[0].probes[0].rateMilliRps",
                8_000,
                1_000
            ))
        );
        // A forged rate, a probe after the stop, a stop before the end.
        let mut forged = from_min;
        forged[3].0 = 3_500;
        assert_eq!(
            check(&forged, &legacy, false),
            Err(recomputed(
                "p.json",
                "runs[0].probes[3].rateMilliRps",
                3_500,
                3_000
            ))
        );
        let mut extra = from_min.to_vec();
        extra.push((3_500, Pass, 3_500));
        assert_eq!(
            check(&extra, &legacy, false),
            Err(recomputed(
                "p.json",
                "runs[0].probes[4].rateMilliRps",
                3_500,
                "no probe: the rate search had stopped"
            ))
        );
        assert_eq!(
            check(&from_min[..3], &legacy, false),
            Err(recomputed(
                "p.json",
                "runs[0].probes",
                "3 probes",
                "a probe at 3000 milli-req/s next (`rate_search.start` = MinRate)"
            ))
        );
        // …unless the entry's deadline cut the run short.
        assert_eq!(check(&from_min[..3], &legacy, true), Ok(()));
        // A probe on another run's sub-stream.
        let mut run = run_of(&from_min, budget);
        run.probes[1].sub_stream = 1;
        assert_eq!(
            search_followed("p.json", 0, &run, &legacy, false),
            Err(recomputed(
                "p.json",
                "runs[0].probes[1].subStream",
                1,
                u64::from(budget) + 1
            ))
        );
    }

    /// A pass row `infra_failed` after its measured log was written (the engine would not
    /// stop; the round re-ran it) claims no throughput, as the runner writes it; one that
    /// claims the log's median is refused.
    #[test]
    fn an_infra_failed_row_claims_no_throughput_from_a_measured_log() {
        let mut run = run_of(&[(3_000, ProbeVerdict::Pass, 2_900)], 8);
        run.throughput_milli_rps = Some(2_900);
        let log = EntryMeasurement {
            runs: vec![run],
            throughput_milli_rps: Some(2_900),
            throughput_min_milli_rps: Some(2_900),
            throughput_max_milli_rps: Some(2_900),
            valid: true,
            outcome: MeasurementOutcome::Measured,
            measured_for: None,
            caching: None,
        };
        let claim = |status, throughput| Claim {
            throughput_field: "entries[1].passes[1].throughputMilliRps".into(),
            at: "entries[1].passes[1]".into(),
            throughput,
            spread: None,
            status: Some(status),
        };
        let file = "logs/probe.json";
        for status in [PassStatus::InfraFailed, PassStatus::Crashed] {
            assert_eq!(entry_measurement(file, &log, &claim(status, None)), Ok(()));
            assert!(entry_measurement(file, &log, &claim(status, Some(2_900))).is_err());
        }
        assert_eq!(
            entry_measurement(file, &log, &claim(PassStatus::Measured, Some(2_900))),
            Ok(())
        );
        assert!(entry_measurement(file, &log, &claim(PassStatus::Measured, None)).is_err());
    }

    #[test]
    fn v3_probe_throughput_is_exact() {
        let check = |claimed, version| probe_throughput("p.json", "at", &probe(claimed), version);
        assert_eq!(check(3_000, PredicateVersion::V3), Ok(()));
        // 2 999 is what 1 000 000 999 ns would give: a v2 log may say it, a v3 one not.
        assert_eq!(check(2_999, PredicateVersion::V2), Ok(()));
        for forged in [2_999, 3_001] {
            assert_eq!(
                check(forged, PredicateVersion::V3),
                Err(recomputed(
                    "p.json",
                    "at.throughputMilliRps",
                    forged,
                    "3000 (3 completed in 1000000 µs)"
                ))
            );
        }
    }
}
