//! A run's telemetry sampler (content/measurement.md, Telemetry): while a run is
//! measured, a thread reads the run's CPUs (`/proc/stat`, cpufreq: [`cpu`]) and, where
//! NVML loads and finds a GPU, the run's GPUs (its lane's in a parallel round, else
//! every GPU: [`gpu`]) every [`INTERVAL_MS`], and hands back
//! the [`TelemetryFile`] the bundle keeps. Without a GPU nothing changes but the source:
//! the CPU twin alone, in the same format.

pub mod cpu;
pub mod gpu;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use receipts::model::{TELEMETRY_FORMAT, TelemetryFile, TelemetrySample, TelemetrySource};

/// The sampler's interval, ms: 12.5 Hz, above the 10 Hz the runs need with room for a
/// loaded host.
pub const INTERVAL_MS: u64 = 80;

/// Why a run could not be sampled.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// `/proc/stat` could not be read or parsed.
    #[error(transparent)]
    Cpu(#[from] cpu::CpuStatError),
}

/// Samples the run's `cpus` (and the GPUs of `gpus`, by UUID, that NVML finds; every
/// GPU when it names none: [`gpu::Gpus::only`]) every `interval` until `done` is set,
/// then once more: the file of the run, its times counted from this call.
///
/// Errors: [`TelemetryError`] when `/proc/stat` cannot be read (at the start or at any
/// sample); a GPU reading NVML cannot give is recorded as unavailable instead.
pub fn sample_until(
    done: &AtomicBool,
    cpus: &[u32],
    gpus: &[String],
    interval: Duration,
) -> Result<TelemetryFile, TelemetryError> {
    let start = Instant::now();
    let gpus = gpu::Gpus::open().map(|all| all.only(gpus));
    let events = gpus.as_ref().and_then(gpu::Gpus::xid_events);
    let mut cpu = cpu::CpuSampler::new(cpus)?;
    let mut unavailable = std::collections::BTreeSet::new();
    let mut samples = Vec::new();
    let mut next = start + interval;
    loop {
        let finished = wait_until(next, done);
        let t_ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
        let (cpu_reading, cpu_missing) = cpu.reading()?;
        unavailable.extend(cpu_missing);
        let gpu_readings = match &gpus {
            Some(gpus) => {
                let (readings, missing) = gpus.readings(events.as_ref());
                unavailable.extend(missing);
                readings
            }
            None => Vec::new(),
        };
        samples.push(TelemetrySample {
            t_ms,
            cpu: cpu_reading,
            gpus: gpu_readings,
        });
        if finished {
            break;
        }
        // A sample late past the next tick moves the ticks on rather than bunching up.
        next = (next + interval).max(Instant::now());
    }
    Ok(TelemetryFile {
        format: TELEMETRY_FORMAT,
        source: if gpus.is_some() {
            TelemetrySource::Nvml
        } else {
            TelemetrySource::Cpu
        },
        interval_ms: u64::try_from(interval.as_millis()).unwrap_or(u64::MAX),
        cpus: cpus.to_vec(),
        gpus: gpus.as_ref().map(gpu::Gpus::uuids).unwrap_or_default(),
        unavailable: unavailable.into_iter().map(str::to_owned).collect(),
        samples,
    })
}

/// Sleeps until `deadline` in steps short enough to notice `done`; returns whether
/// `done` was set.
fn wait_until(deadline: Instant, done: &AtomicBool) -> bool {
    loop {
        if done.load(Ordering::Relaxed) {
            return true;
        }
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        std::thread::sleep((deadline - now).min(Duration::from_millis(10)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of ~0.5 s on this machine's CPU 0 gives the CPU source's file: samples in
    /// time order, each CPU reading within 1000 ‰, the last one taken after `done`.
    #[test]
    fn a_run_is_sampled_until_done() {
        let done = AtomicBool::new(false);
        let file = std::thread::scope(|scope| {
            let sampler = scope.spawn(|| sample_until(&done, &[0], &[], Duration::from_millis(20)));
            std::thread::sleep(Duration::from_millis(500));
            done.store(true, Ordering::Relaxed);
            sampler.join().expect("the sampler thread")
        })
        .expect("/proc/stat is readable");
        assert_eq!(file.format, TELEMETRY_FORMAT);
        assert_eq!(file.cpus, vec![0]);
        assert_eq!(file.interval_ms, 20);
        // At least the final sample; how many more depends on the host's load.
        assert!(!file.samples.is_empty());
        assert!(file.samples.windows(2).all(|w| w[0].t_ms <= w[1].t_ms));
        assert!(
            file.samples
                .iter()
                .all(|s| s.cpu.busy_permille <= 1000 && s.cpu.steal_permille <= 1000)
        );
        if file.source == TelemetrySource::Cpu {
            assert!(file.gpus.is_empty());
            assert!(file.samples.iter().all(|s| s.gpus.is_empty()));
        }
    }

    /// Needs a GPU (`scripts/gpu-check`): a run of 1 s is sampled through NVML at
    /// 12.5 Hz, every sample reading every GPU.
    #[test]
    #[ignore = "needs an NVIDIA GPU and its driver (scripts/gpu-check)"]
    fn gpu_a_run_is_sampled_through_nvml() {
        let done = AtomicBool::new(false);
        let interval = Duration::from_millis(INTERVAL_MS);
        let file = std::thread::scope(|scope| {
            let sampler = scope.spawn(|| sample_until(&done, &[0], &[], interval));
            std::thread::sleep(Duration::from_millis(1_000));
            done.store(true, Ordering::Relaxed);
            sampler.join().expect("the sampler thread")
        })
        .expect("/proc/stat is readable");
        assert_eq!(file.source, TelemetrySource::Nvml);
        assert!(!file.gpus.is_empty());
        // 12.5 Hz over 1 s: 12 ticks and the last sample, give or take the host.
        assert!(file.samples.len() >= 10, "{} samples", file.samples.len());
        assert!(file.samples.iter().all(|s| s.gpus.len() == file.gpus.len()));
        let summary = receipts::rules::telemetry::summarize(&file, "gpu.json", None);
        eprintln!("{summary:?}\nunavailable: {:?}", file.unavailable);
    }
}
