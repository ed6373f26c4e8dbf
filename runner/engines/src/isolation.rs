//! CPU isolation of an engine from the load generator (content/measurement.md, Isolation):
//! the host's usable CPUs are split into the engine's set and the client's set
//! ([`CpuPlan`]), the engine is pinned with `sched_setaffinity(2)` before its exec (the
//! host's cgroups are not writable by the runner, and an engine could reset its own
//! affinity — so the receipt records how it was pinned), and every run records the CPU
//! time the hypervisor stole from those CPUs (`/proc/stat`, [`CpuTimes`]) and their clock
//! (`scaling_cur_freq`, [`cpu_frequencies`]). A run whose steal passes the campaign's
//! bound is invalid ([`steal_exceeds`]).

use std::fs;
use std::path::Path;

use receipts::fsutil::IoError;
use receipts::model::{CpuFrequency, CpuPinning, HostLoad};

/// How the CPUs are split between the engine and the load generator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuPlan {
    /// The engine's CPUs (kernel numbering): every usable CPU but the first.
    pub engine: Vec<u32>,
    /// The client's CPUs: the first usable CPU.
    pub client: Vec<u32>,
    /// How the engine is pinned: [`CpuPinning::None`] with a single CPU (both sets are
    /// then that CPU).
    pub pinning: CpuPinning,
}

impl CpuPlan {
    /// The split of `usable` (sorted, deduplicated here): the client on the lowest CPU,
    /// the engine on the rest; with one CPU (or none), no pinning, both on it.
    pub fn split(usable: &[u32]) -> Self {
        let mut cpus = usable.to_vec();
        cpus.sort_unstable();
        cpus.dedup();
        match cpus.split_first() {
            Some((&first, rest)) if !rest.is_empty() => Self {
                engine: rest.to_vec(),
                client: vec![first],
                pinning: CpuPinning::SchedAffinity,
            },
            _ => Self {
                engine: cpus.clone(),
                client: cpus,
                pinning: CpuPinning::None,
            },
        }
    }

    /// The split of the CPUs this process may run on (`sched_getaffinity(2)`).
    ///
    /// Errors: [`IoError`] naming `sched_getaffinity` when the kernel refuses it.
    pub fn for_this_process() -> Result<Self, IoError> {
        Ok(Self::split(&usable_cpus()?))
    }

    /// No pinning (a campaign's `[isolation] pin = false`): the engines and the client
    /// share every CPU this process may run on, for a host with too few CPUs to give
    /// each engine of a parallel wave a set of its own (content/noise.md, Parallel passes).
    ///
    /// Errors: as [`CpuPlan::for_this_process`].
    pub fn unpinned_for_this_process() -> Result<Self, IoError> {
        let mut cpus = usable_cpus()?;
        cpus.sort_unstable();
        cpus.dedup();
        Ok(Self {
            engine: cpus.clone(),
            client: cpus,
            pinning: CpuPinning::None,
        })
    }

    /// The engine's thread count: `requested` (the campaign's `hardware.engine_threads`,
    /// 0 = as many as it has CPUs), at most its CPU count, at least 1.
    pub fn engine_threads(&self, requested: u32) -> u32 {
        // One rule with the verifier, which holds the receipt's `engineThreads` to it.
        receipts::rules::host::engine_threads(requested, self.engine.len())
    }

    /// The engine's affinity mask, `None` when it is not pinned.
    pub(crate) fn engine_mask(&self) -> Option<libc::cpu_set_t> {
        (self.pinning == CpuPinning::SchedAffinity).then(|| cpu_set(&self.engine))
    }

    /// Pins every thread of this process to the client's CPUs (threads started later
    /// inherit it from the thread that starts them), so the load generator runs beside
    /// the engine, not on it. A no-op when not pinned.
    ///
    /// Errors: [`IoError`] naming the thread whose affinity could not be set.
    pub fn pin_client(&self) -> Result<(), IoError> {
        self.pin_every_thread(&self.client)
    }

    /// Undoes [`CpuPlan::pin_client`]: every thread of this process may run on all the
    /// plan's CPUs again, so a later round in the same process (`referee demo`) splits the
    /// same CPUs. A no-op when not pinned.
    ///
    /// Errors: as [`CpuPlan::pin_client`].
    pub fn unpin_client(&self) -> Result<(), IoError> {
        self.pin_every_thread(&self.all())
    }

    /// Sets the affinity of every thread of this process to `cpus`, unless not pinned.
    fn pin_every_thread(&self, cpus: &[u32]) -> Result<(), IoError> {
        if self.pinning == CpuPinning::None {
            return Ok(());
        }
        let set = cpu_set(cpus);
        let tasks = Path::new("/proc/self/task");
        let entries = fs::read_dir(tasks).map_err(IoError::at("listing", tasks))?;
        for entry in entries {
            let entry = entry.map_err(IoError::at("listing", tasks))?;
            let Some(tid) = entry
                .file_name()
                .to_str()
                .and_then(|t| t.parse::<i32>().ok())
            else {
                continue;
            };
            // SAFETY: `set` is a valid cpu_set_t of the size passed.
            let rc = unsafe {
                libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set)
            };
            if rc != 0 {
                let error = std::io::Error::last_os_error();
                // A thread that exited since the listing has nothing to pin.
                if error.raw_os_error() != Some(libc::ESRCH) {
                    return Err(IoError::at(
                        "pinning the load generator thread",
                        &entry.path(),
                    )(error));
                }
            }
        }
        Ok(())
    }

    /// Every CPU of the plan, engine's and client's, sorted.
    pub fn all(&self) -> Vec<u32> {
        let mut all: Vec<u32> = self.engine.iter().chain(&self.client).copied().collect();
        all.sort_unstable();
        all.dedup();
        all
    }
}

/// The CPUs this process may run on, sorted.
fn usable_cpus() -> Result<Vec<u32>, IoError> {
    // SAFETY: an all-zero cpu_set_t is a valid (empty) set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, writable cpu_set_t of the size passed.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(IoError::at(
            "reading the CPU affinity of",
            Path::new("/proc/self"),
        )(std::io::Error::last_os_error()));
    }
    let max = u32::try_from(libc::CPU_SETSIZE).unwrap_or(1024);
    // SAFETY: CPU_ISSET reads `set` at an index below CPU_SETSIZE.
    Ok((0..max)
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu as usize, &set) })
        .collect())
}

fn cpu_set(cpus: &[u32]) -> libc::cpu_set_t {
    // SAFETY: an all-zero cpu_set_t is a valid (empty) set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        if (cpu as usize) < libc::CPU_SETSIZE as usize {
            // SAFETY: the index is below CPU_SETSIZE.
            unsafe { libc::CPU_SET(cpu as usize, &mut set) };
        }
    }
    set
}

/// A `/proc/stat` line that could not be read.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProcStatError {
    /// A `cpu…` line with a field that is not a count of ticks.
    #[error("/proc/stat line {line}: `{field}` is not a count of ticks")]
    Field {
        /// Line number, from 1.
        line: usize,
        /// The field as read.
        field: String,
    },
    /// A `cpu…` line with fewer than the 8 fields up to `steal` (kernels before 2.6.11).
    #[error("/proc/stat line {line}: {fields} fields, the steal column needs 8")]
    NoSteal {
        /// Line number, from 1.
        line: usize,
        /// Fields found.
        fields: usize,
    },
    /// No `cpu` summary line.
    #[error("/proc/stat has no `cpu` line")]
    NoTotal,
}

/// The steal column of `/proc/stat`, in ticks of USER_HZ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuTimes {
    /// The `cpu` line's steal: all CPUs together.
    pub total_steal: u64,
    /// Each `cpuN` line's steal, as `(N, ticks)`, in file order.
    pub per_cpu_steal: Vec<(u32, u64)>,
}

impl CpuTimes {
    /// Parses `/proc/stat` text (proc(5): `cpu user nice system idle iowait irq softirq
    /// steal …` in ticks). Lines that are not `cpu…` are ignored.
    ///
    /// Errors: [`ProcStatError`] for a `cpu…` line that is short or not numeric, or no
    /// `cpu` line.
    pub fn parse(text: &str) -> Result<Self, ProcStatError> {
        let mut total = None;
        let mut per_cpu = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let mut fields = line.split_ascii_whitespace();
            let Some(name) = fields.next() else { continue };
            let Some(suffix) = name.strip_prefix("cpu") else {
                continue;
            };
            let cpu = if suffix.is_empty() {
                None
            } else {
                match suffix.parse::<u32>() {
                    Ok(n) => Some(n),
                    Err(_) => continue,
                }
            };
            let values: Vec<&str> = fields.collect();
            let Some(steal) = values.get(7) else {
                return Err(ProcStatError::NoSteal {
                    line: i + 1,
                    fields: values.len(),
                });
            };
            let steal = steal.parse::<u64>().map_err(|_| ProcStatError::Field {
                line: i + 1,
                field: (*steal).to_owned(),
            })?;
            match cpu {
                None => total = Some(steal),
                Some(n) => per_cpu.push((n, steal)),
            }
        }
        Ok(Self {
            total_steal: total.ok_or(ProcStatError::NoTotal)?,
            per_cpu_steal: per_cpu,
        })
    }

    /// Reads `/proc/stat` now.
    ///
    /// Errors: [`StealError`] when it cannot be read or parsed.
    pub fn now() -> Result<Self, StealError> {
        let path = Path::new("/proc/stat");
        let text = fs::read_to_string(path).map_err(IoError::at("reading", path))?;
        Ok(Self::parse(&text)?)
    }

    /// Steal ticks of `cpus` from `self` (before) to `after`; a counter that went
    /// backwards (a CPU taken offline and back) counts 0. CPUs missing from either side
    /// count 0.
    pub fn steal_ticks_until(&self, after: &Self, cpus: &[u32]) -> u64 {
        cpus.iter()
            .map(|cpu| {
                let find = |t: &Self| {
                    t.per_cpu_steal
                        .iter()
                        .find(|(n, _)| n == cpu)
                        .map_or(0, |(_, s)| *s)
                };
                find(after).saturating_sub(find(self))
            })
            .sum()
    }
}

/// Why steal time could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum StealError {
    /// `/proc/stat` could not be read.
    #[error(transparent)]
    Io(#[from] IoError),
    /// `/proc/stat` could not be parsed.
    #[error(transparent)]
    Parse(#[from] ProcStatError),
}

/// Ticks of USER_HZ to ms: `ticks × 1000 / hz`, rounded down; `hz` 0 counts as 100.
pub fn ticks_to_ms(ticks: u64, hz: u64) -> u64 {
    let hz = if hz == 0 { 100 } else { hz };
    u64::try_from(u128::from(ticks) * 1000 / u128::from(hz)).unwrap_or(u64::MAX)
}

/// The kernel's USER_HZ (`sysconf(_SC_CLK_TCK)`), 100 when it cannot say.
pub fn user_hz() -> u64 {
    // SAFETY: sysconf reads a constant; no memory is involved.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(hz).ok().filter(|&h| h > 0).unwrap_or(100)
}

/// `scaling_cur_freq` of each of `cpus` (kHz), skipping those that do not expose it.
pub fn cpu_frequencies(cpus: &[u32]) -> Vec<CpuFrequency> {
    cpus.iter()
        .filter_map(|&cpu| {
            let path = format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq");
            let khz = fs::read_to_string(path).ok()?.trim().parse::<u64>().ok()?;
            Some(CpuFrequency { cpu, khz })
        })
        .collect()
}

/// One run's host load from the `/proc/stat` samples taken before and after it, over the
/// plan's CPUs: steal in ms, the wall time `wall_ms`, and the CPUs' clocks now.
pub fn host_load(plan: &CpuPlan, before: &CpuTimes, after: &CpuTimes, wall_ms: u64) -> HostLoad {
    let cpus = plan.all();
    HostLoad {
        steal_ms: ticks_to_ms(before.steal_ticks_until(after, &cpus), user_hz()),
        wall_ms,
        cpu_freq_khz: cpu_frequencies(&cpus),
    }
}

/// Whether a run is invalid for steal: the rule the verifier recomputes, in `receipts`.
pub use receipts::rules::host::steal_exceeds;

#[cfg(test)]
mod tests {
    use super::*;

    /// Recorded on the 2-core development host (kernel 6.18, under a hypervisor), the
    /// `cpu` lines of `/proc/stat`, with other lines as the kernel writes them.
    const SAMPLE_BEFORE: &str = "cpu  1154496 0 201216 736880 19043 0 10104 18872 0 0
cpu0 565666 0 94445 389520 7112 0 4395 9018 0 0
cpu1 588829 0 106771 347359 11931 0 5709 9854 0 0
intr 167802614 0 9 0 0 0
ctxt 318101917
btime 1764616560
processes 1470062
";
    /// Five seconds later, the same host.
    const SAMPLE_AFTER: &str = "cpu  1154993 0 201312 737246 19073 0 10105 18883 0 0
cpu0 565755 0 94475 389876 7131 0 4395 9025 0 0
cpu1 589238 0 106836 347370 11942 0 5710 9858 0 0
";

    #[test]
    fn proc_stat_steal_is_read_per_cpu() {
        let before = CpuTimes::parse(SAMPLE_BEFORE).unwrap();
        assert_eq!(before.total_steal, 18872);
        assert_eq!(before.per_cpu_steal, vec![(0, 9018), (1, 9854)]);
        let after = CpuTimes::parse(SAMPLE_AFTER).unwrap();
        assert_eq!(after.total_steal, 18883);
        assert_eq!(before.steal_ticks_until(&after, &[0, 1]), 11);
        assert_eq!(before.steal_ticks_until(&after, &[1]), 4);
        assert_eq!(before.steal_ticks_until(&after, &[7]), 0);
        // Backwards counts nothing.
        assert_eq!(after.steal_ticks_until(&before, &[0, 1]), 0);
        assert_eq!(ticks_to_ms(11, 100), 110);
        assert_eq!(ticks_to_ms(11, 0), 110);
        assert_eq!(ticks_to_ms(7, 250), 28);
    }

    #[test]
    fn bad_proc_stat_lines_are_named() {
        assert_eq!(
            CpuTimes::parse("cpu  1 2 3 4 5 6 7\n"),
            Err(ProcStatError::NoSteal { line: 1, fields: 7 })
        );
        assert_eq!(
            CpuTimes::parse("cpu  1 2 3 4 5 6 7 8\ncpu0 1 2 3 4 5 6 7 x\n"),
            Err(ProcStatError::Field {
                line: 2,
                field: "x".into()
            })
        );
        assert_eq!(CpuTimes::parse("intr 1 2\n"), Err(ProcStatError::NoTotal));
    }

    #[test]
    fn cpus_split_client_first_engine_rest() {
        let two = CpuPlan::split(&[1, 0]);
        assert_eq!(two.client, vec![0]);
        assert_eq!(two.engine, vec![1]);
        assert_eq!(two.pinning, CpuPinning::SchedAffinity);
        assert_eq!(two.engine_threads(0), 1);
        assert_eq!(two.engine_threads(3), 1);
        let one = CpuPlan::split(&[3]);
        assert_eq!(one.client, vec![3]);
        assert_eq!(one.engine, vec![3]);
        assert_eq!(one.pinning, CpuPinning::None);
        assert_eq!(one.engine_threads(0), 1);
        let eight = CpuPlan::split(&[0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(eight.engine, vec![1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(eight.engine_threads(0), 7);
        assert_eq!(eight.engine_threads(4), 4);
        assert_eq!(eight.all(), vec![0, 1, 2, 3, 4, 5, 6, 7]);
    }

    #[test]
    fn steal_over_the_bound_invalidates_a_run() {
        let load = |steal_ms| HostLoad {
            steal_ms,
            wall_ms: 10_000,
            cpu_freq_khz: Vec::new(),
        };
        // 2 CPUs × 10 s = 20 000 ms of CPU; 5 % of it is 1 000 ms.
        assert!(!steal_exceeds(&load(1_000), 2, 50));
        assert!(steal_exceeds(&load(1_001), 2, 50));
        assert!(!steal_exceeds(&load(20_000), 2, 1000));
        assert!(steal_exceeds(&load(1), 2, 0));
    }
}
