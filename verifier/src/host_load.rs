//! `host.load` (v5; content/verifying.md, Measurements): a run's recorded host load
//! against what it contains. The runner times a run's measured part (`wallMs`, floored
//! to the millisecond) around every probe of it, which run one after another, so the
//! probes' durations in its probe log add up to no more than it; and a hypervisor cannot
//! steal more than the whole time of every CPU of the host (`stealMs` is summed over the
//! run's CPUs, read from `/proc/stat` ticks). `host.steal` judges the steal against the
//! campaign's bound; this check holds both numbers to what they can be at all.

use crate::files::{ProbeLogs, recomputed};
use crate::{CheckName, FailureReason, PredicateVersion, VerifyReport};
use receipts::model::{HostLoad, RoundRecord};

/// The predicate file, as failure messages name it.
const RECEIPT: &str = "receipt.dsse.json";

/// Steal a CPU may show beyond the wall time, ms: `/proc/stat` is read in ticks of
/// 10 ms (USER_HZ 100), and each of the two readings around the run may fall up to a
/// tick off its edge.
const TICK_SLACK_MS: u64 = 20;

/// Runs `host.load` on every pass row and drift run of `record` that records a host load
/// and names a probe log (read through `logs`); `not applicable` before v5.
pub(crate) fn check_host_load(
    report: &mut VerifyReport,
    logs: &mut ProbeLogs<'_>,
    record: &RoundRecord,
    version: PredicateVersion,
) {
    if version < PredicateVersion::V5 {
        report.not_applicable(CheckName::HostLoad, None, version.name());
        return;
    }
    let cpus = record.hardware.at_start.cpu_count;
    let rows = record.entries.iter().flat_map(|e| {
        e.passes.iter().enumerate().map(move |(j, p)| {
            (
                format!("entries[{}].passes[{j}]", e.index),
                p.host_load.as_ref(),
                p.probe_log.as_deref(),
            )
        })
    });
    let drift = record.drift.iter().flat_map(|d| {
        d.runs.iter().enumerate().map(|(r, run)| {
            (
                format!("drift.runs[{r}]"),
                run.host_load.as_ref(),
                Some(run.probe_log.as_str()),
            )
        })
    });
    for (at, load, log) in rows.chain(drift) {
        let (Some(load), Some(log)) = (load, log) else {
            continue;
        };
        let result = within_the_run(&at, load, log, logs, cpus);
        report.record(CheckName::HostLoad, Some(at), result);
    }
}

/// One run `at`'s `load` against its probe log `file` and the host's `cpus`.
fn within_the_run(
    at: &str,
    load: &HostLoad,
    file: &str,
    logs: &mut ProbeLogs<'_>,
    cpus: u32,
) -> Result<(), FailureReason> {
    let log = logs.get(file)?;
    let probes_us: u64 = log
        .runs
        .iter()
        .flat_map(|r| &r.probes)
        .map(|p| p.duration_us)
        .fold(0, u64::saturating_add);
    // The wall time is floored to the millisecond: up to 999 µs more ran.
    let wall_us = load.wall_ms.saturating_mul(1000).saturating_add(999);
    if probes_us > wall_us {
        return Err(recomputed(
            RECEIPT,
            format!("{at}.hostLoad.wallMs"),
            load.wall_ms,
            format!(
                "at least {} (the probes of `{file}` ran {probes_us} µs)",
                probes_us / 1000
            ),
        ));
    }
    steal_within_the_host(at, load, cpus)
}

/// `load`'s steal is at most the whole wall time of the host's `cpus` CPUs, a tick's
/// slack each ([`TICK_SLACK_MS`]).
fn steal_within_the_host(at: &str, load: &HostLoad, cpus: u32) -> Result<(), FailureReason> {
    let most = load
        .wall_ms
        .saturating_add(TICK_SLACK_MS)
        .saturating_mul(u64::from(cpus.max(1)));
    if load.steal_ms > most {
        return Err(recomputed(
            RECEIPT,
            format!("{at}.hostLoad.stealMs"),
            load.steal_ms,
            format!(
                "at most {most} (the whole {} ms of the host's {cpus} CPUs, a tick's slack each)",
                load.wall_ms
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two CPUs over 1 s may lose 2.04 s at most; a tick's slack each, not more.
    #[test]
    fn steal_is_at_most_every_cpus_whole_wall_time() {
        let load = |steal_ms| HostLoad {
            steal_ms,
            wall_ms: 1_000,
            cpu_freq_khz: Vec::new(),
        };
        assert_eq!(steal_within_the_host("r", &load(2_040), 2), Ok(()));
        assert_eq!(
            steal_within_the_host("r", &load(2_041), 2),
            Err(recomputed(
                RECEIPT,
                "r.hostLoad.stealMs",
                2_041,
                "at most 2040 (the whole 1000 ms of the host's 2 CPUs, a tick's slack each)"
            ))
        );
    }
}
