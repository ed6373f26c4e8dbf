//! Whether a run's telemetry makes it invalid, and the summary its pass row records
//! (content/measurement.md, Telemetry). The runner's sampler writes the file; the runner
//! and the verifier both read it through [`summarize`], so a throttled sample hidden by
//! an edited receipt is found again from the file.
//!
//! A run is invalid (and re-run once, like a run the hypervisor stole from) on the first
//! GPU reading with a hardware throttle reason (`hw_slowdown`, `hw_thermal_slowdown`,
//! `hw_power_brake_slowdown`), a critical XID, or — on a busy GPU, one without the
//! `gpu_idle` reason — an SM clock below the campaign's `min_sm_clock_mhz`. The software
//! power cap and software thermal slowdown are counted only. The CPU twin's readings
//! invalidate nothing here: steal has its own rule over the whole run (`host`).

use crate::model::{RunTelemetry, TelemetryFile, TelemetryViolation, ThrottleReason};

/// The throttle reasons that make a run invalid.
pub const INVALIDATING: [ThrottleReason; 3] = [
    ThrottleReason::HwSlowdown,
    ThrottleReason::HwThermalSlowdown,
    ThrottleReason::HwPowerBrakeSlowdown,
];

/// The first reading of `file` that makes its run invalid under a campaign's
/// `min_sm_clock_mhz` (`None`: no clock bound), in sample order and, within a sample, GPU
/// index order; within a reading an XID, then a hardware throttle reason, then the
/// clock. `None` when the run stays valid.
pub fn violation(
    file: &TelemetryFile,
    min_sm_clock_mhz: Option<u32>,
) -> Option<TelemetryViolation> {
    file.samples.iter().find_map(|sample| {
        sample.gpus.iter().find_map(|gpu| {
            let (t_ms, device) = (sample.t_ms, gpu.device);
            if let Some(&xid) = gpu.xid.first() {
                return Some(TelemetryViolation::Xid { t_ms, device, xid });
            }
            if let Some(&reason) = gpu.throttle.iter().find(|r| INVALIDATING.contains(r)) {
                return Some(TelemetryViolation::Throttled {
                    t_ms,
                    device,
                    reason,
                });
            }
            let busy = !gpu.throttle.contains(&ThrottleReason::GpuIdle);
            match (min_sm_clock_mhz, gpu.sm_clock_mhz) {
                (Some(min_mhz), Some(mhz)) if busy && mhz < min_mhz => {
                    Some(TelemetryViolation::SmClockBelow {
                        t_ms,
                        device,
                        mhz,
                        min_mhz,
                    })
                }
                _ => None,
            }
        })
    })
}

/// The summary a run's pass row records of `file`, stored at bundle-relative `rel`,
/// under the campaign's `min_sm_clock_mhz`: sample count, the longest gap between
/// samples (the first counted from the run's start at 0 ms), the extremes of its
/// readings, the software throttle readings counted, and the [`violation`].
pub fn summarize(file: &TelemetryFile, rel: &str, min_sm_clock_mhz: Option<u32>) -> RunTelemetry {
    let gpus = || file.samples.iter().flat_map(|s| &s.gpus);
    let busy_clocks = gpus()
        .filter(|g| !g.throttle.contains(&ThrottleReason::GpuIdle))
        .filter_map(|g| g.sm_clock_mhz);
    let counting = |reason: ThrottleReason| {
        let n = gpus().filter(|g| g.throttle.contains(&reason)).count();
        u32::try_from(n).unwrap_or(u32::MAX)
    };
    let mut previous = 0;
    let mut max_gap_ms = 0;
    for sample in &file.samples {
        max_gap_ms = max_gap_ms.max(sample.t_ms.saturating_sub(previous));
        previous = sample.t_ms;
    }
    RunTelemetry {
        file: rel.to_owned(),
        source: file.source,
        samples: u32::try_from(file.samples.len()).unwrap_or(u32::MAX),
        max_gap_ms,
        max_steal_permille: file
            .samples
            .iter()
            .map(|s| s.cpu.steal_permille)
            .max()
            .unwrap_or(0),
        min_cpu_freq_khz: file.samples.iter().filter_map(|s| s.cpu.freq_khz).min(),
        min_sm_clock_mhz: busy_clocks.min(),
        max_temperature_c: gpus().filter_map(|g| g.temperature_c).max(),
        max_power_mw: gpus().filter_map(|g| g.power_mw).max(),
        sw_power_cap_readings: counting(ThrottleReason::SwPowerCap),
        sw_thermal_readings: counting(ThrottleReason::SwThermalSlowdown),
        violation: violation(file, min_sm_clock_mhz),
    }
}
