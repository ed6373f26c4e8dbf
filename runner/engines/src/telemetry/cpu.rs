//! The CPU twin of a run's telemetry: each sample's busy and steal share of the run's
//! CPUs from `/proc/stat` (proc(5)), and their lowest clock from cpufreq's
//! `scaling_cur_freq`, "unavailable" where the host (a VM, often) exposes none.

use std::fs;
use std::path::Path;

use receipts::fsutil::IoError;
use receipts::model::CpuReading;

/// The name a missing CPU clock is listed under in a file's `unavailable`.
pub const FREQ_UNAVAILABLE: &str = "cpuFreqKhz";

/// Why `/proc/stat` gave no reading.
#[derive(Debug, thiserror::Error)]
pub enum CpuStatError {
    /// The file could not be read.
    #[error(transparent)]
    Io(#[from] IoError),
    /// A `cpuN` line of one of the run's CPUs is missing or not 8 numbers.
    #[error("/proc/stat has no readable line for cpu{cpu}")]
    NoLine {
        /// The CPU (kernel numbering).
        cpu: u32,
    },
}

/// The ticks of the run's CPUs together: all of them, and the busy and stolen ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ticks {
    /// Every column of the first eight (user … steal).
    pub total: u64,
    /// Everything but idle, iowait and steal.
    pub busy: u64,
    /// Steal.
    pub steal: u64,
}

/// The summed ticks of `cpus` in `/proc/stat` text.
///
/// Errors: [`CpuStatError::NoLine`] naming the first CPU whose line is missing or short.
pub fn parse_ticks(text: &str, cpus: &[u32]) -> Result<Ticks, CpuStatError> {
    let mut sum = Ticks::default();
    for &cpu in cpus {
        let name = format!("cpu{cpu}");
        let values: Option<Vec<u64>> = text
            .lines()
            .find_map(|line| {
                let mut fields = line.split_ascii_whitespace();
                (fields.next() == Some(name.as_str())).then_some(fields)
            })
            .and_then(|fields| fields.take(8).map(|f| f.parse().ok()).collect());
        let Some(v) = values.filter(|v| v.len() == 8) else {
            return Err(CpuStatError::NoLine { cpu });
        };
        let total: u64 = v.iter().sum();
        // user nice system idle iowait irq softirq steal
        sum.total += total;
        sum.busy += total - v[3] - v[4] - v[7];
        sum.steal += v[7];
    }
    Ok(sum)
}

/// `part` of `whole` in permille, 0 for no time at all.
fn permille(part: u64, whole: u64) -> u32 {
    if whole == 0 {
        return 0;
    }
    u32::try_from(u128::from(part) * 1000 / u128::from(whole)).unwrap_or(1000)
}

/// Reads the run's CPUs sample after sample, each reading over the time since the last.
pub struct CpuSampler {
    cpus: Vec<u32>,
    last: Ticks,
}

impl CpuSampler {
    /// Starts with a first read of `/proc/stat`.
    ///
    /// Errors: [`CpuStatError`] when it cannot be read or lacks one of `cpus`.
    pub fn new(cpus: &[u32]) -> Result<Self, CpuStatError> {
        Ok(Self {
            cpus: cpus.to_vec(),
            last: read_ticks(cpus)?,
        })
    }

    /// The reading since the last one, and the names of what the host could not give.
    ///
    /// Errors: as [`CpuSampler::new`].
    pub fn reading(&mut self) -> Result<(CpuReading, Vec<&'static str>), CpuStatError> {
        let now = read_ticks(&self.cpus)?;
        let total = now.total.saturating_sub(self.last.total);
        let reading = CpuReading {
            busy_permille: permille(now.busy.saturating_sub(self.last.busy), total),
            steal_permille: permille(now.steal.saturating_sub(self.last.steal), total),
            freq_khz: lowest_freq_khz(&self.cpus),
        };
        self.last = now;
        let missing = if reading.freq_khz.is_none() {
            vec![FREQ_UNAVAILABLE]
        } else {
            Vec::new()
        };
        Ok((reading, missing))
    }
}

/// `/proc/stat`'s ticks of `cpus` now.
fn read_ticks(cpus: &[u32]) -> Result<Ticks, CpuStatError> {
    let path = Path::new("/proc/stat");
    let text = fs::read_to_string(path).map_err(IoError::at("reading", path))?;
    parse_ticks(&text, cpus)
}

/// The lowest `scaling_cur_freq` of `cpus`, kHz; `None` when any of them has none (no
/// cpufreq on this host): the clock is then unavailable, never guessed.
fn lowest_freq_khz(cpus: &[u32]) -> Option<u64> {
    cpus.iter()
        .map(|cpu| {
            let path = format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq");
            fs::read_to_string(path).ok()?.trim().parse::<u64>().ok()
        })
        .try_fold(u64::MAX, |low, khz| Some(low.min(khz?)))
        .filter(|&low| low != u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  10 0 10 100 0 0 0 5 0 0\n\
                        cpu0 4 0 6 50 0 0 0 3 0 0\n\
                        cpu1 6 0 4 50 0 0 0 2 0 0\n\
                        intr 1 2 3\n";

    /// Both CPUs summed: 63 + 62 ticks, of which 20 busy and 5 stolen.
    #[test]
    fn ticks_sum_the_runs_cpus() {
        assert_eq!(
            parse_ticks(STAT, &[0, 1]).unwrap(),
            Ticks {
                total: 125,
                busy: 20,
                steal: 5
            }
        );
        assert_eq!(
            parse_ticks(STAT, &[1]).unwrap(),
            Ticks {
                total: 62,
                busy: 10,
                steal: 2
            }
        );
        assert!(matches!(
            parse_ticks(STAT, &[2]),
            Err(CpuStatError::NoLine { cpu: 2 })
        ));
        assert!(matches!(
            parse_ticks("cpu0 1 2 3\n", &[0]),
            Err(CpuStatError::NoLine { cpu: 0 })
        ));
    }

    #[test]
    fn permille_rounds_down_and_is_zero_without_time() {
        assert_eq!(permille(20, 125), 160);
        assert_eq!(permille(1, 3), 333);
        assert_eq!(permille(5, 0), 0);
    }
}
