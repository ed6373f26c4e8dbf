//! How the load client's threads are scheduled: its CPUs kept awake for the length of a
//! probe, and its threads under a real-time policy where the process may.
//!
//! On a virtual machine an idle vCPU halts, and the hypervisor deschedules it; waking it
//! for the pacer's next timer then takes as long as the host needs to run it again.
//! Measured on the 2-core VM the demo is tested on (BENCHMARKS.md, "passes, noise and
//! the load client"): a thread waking every 20 ms on an idle CPU woke up to 6.7 ms late
//! (p99 2.0 ms), and every demo probe after the first pass missed the default send-lag
//! bound of 5 ms; with the same CPU kept busy by a lowest-priority spinner the same
//! thread woke at most 0.6–1.2 ms late. This module is that spinner: one thread per CPU
//! the client runs on, under `SCHED_IDLE`, so it runs only when nothing else on that CPU
//! wants to and is preempted at once when the pacer or a request task wakes. It takes no
//! time from the client and none from the engine, whose CPUs are not the client's
//! (content/measurement.md, Isolation). Elsewhere than Linux it does nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use receipts::model::ClientPolicy;
use std::thread::JoinHandle;

/// Spinner threads, one per CPU of the creating thread's affinity; stopped and joined on
/// drop.
pub(crate) struct KeepAwake {
    stop: Arc<AtomicBool>,
    /// Each returns whether it spun (false: it could not be pinned or lowered).
    threads: Vec<JoinHandle<bool>>,
}

impl KeepAwake {
    /// Starts one `SCHED_IDLE` spinner on each CPU the calling thread may run on. Best
    /// effort: a CPU whose spinner cannot be pinned or lowered to `SCHED_IDLE` gets none
    /// (a spinner at normal priority would take time from the client).
    pub(crate) fn start() -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = allowed_cpus()
            .into_iter()
            .filter_map(|cpu| {
                let stop = Arc::clone(&stop);
                std::thread::Builder::new()
                    .name("referee-awake".into())
                    .spawn(move || spin_on(cpu, &stop))
                    .ok()
            })
            .collect();
        Self { stop, threads }
    }
}

impl KeepAwake {
    /// Stops and joins the spinners; returns how many of them spun.
    pub(crate) fn stop(&mut self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        self.threads
            .drain(..)
            .map(|thread| thread.join().unwrap_or(false))
            .filter(|&spun| spun)
            .count()
    }
}

impl Drop for KeepAwake {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The CPUs in the calling thread's affinity mask.
#[cfg(target_os = "linux")]
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: an all-zero cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a cpu_set_t of the size passed; pid 0 is the calling thread.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0
    {
        return Vec::new();
    }
    // SAFETY: CPU_ISSET reads the set for an index below CPU_SETSIZE.
    (0..libc::CPU_SETSIZE as usize)
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect()
}

#[cfg(not(target_os = "linux"))]
fn allowed_cpus() -> Vec<usize> {
    Vec::new()
}

/// Pins the calling thread to `cpu`, lowers it to `SCHED_IDLE` and spins until `stop`.
#[cfg(target_os = "linux")]
fn spin_on(cpu: usize, stop: &AtomicBool) -> bool {
    // SAFETY: an all-zero cpu_set_t is a valid empty set; CPU_SET writes an index below
    // CPU_SETSIZE (`cpu` came from CPU_ISSET over that range).
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a cpu_set_t of the size passed; pid 0 is the calling thread.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) } != 0 {
        return false;
    }
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a valid sched_param for SCHED_IDLE (priority 0); pid 0 is the
    // calling thread. SCHED_IDLE needs no privilege.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) } != 0 {
        return false;
    }
    while !stop.load(Ordering::Relaxed) {
        std::hint::spin_loop();
    }
    true
}

/// Puts the calling thread under `SCHED_FIFO` at priority [`CLIENT_FIFO_PRIORITY`] with
/// `SCHED_RESET_ON_FORK` (a process it starts runs under the normal policy), where the
/// process may; otherwise it stays as it was. Measured on the 2-core demo VM with other
/// builds running (BENCHMARKS.md): under the normal policy, even at nice −20, the
/// pacer woke 4–6 ms late behind a compiler holding the CPU for its slice, and every
/// demo probe missed the 5 ms send-lag bound; under `SCHED_FIFO` nearly all held it.
pub(crate) fn raise_to_realtime() {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param {
            sched_priority: CLIENT_FIFO_PRIORITY,
        };
        // SAFETY: `param` is a valid sched_param for SCHED_FIFO; pid 0 is the calling
        // thread. Without the privilege the call fails with EPERM and changes nothing.
        let _ = unsafe {
            libc::sched_setscheduler(0, libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, &param)
        };
    }
}

/// The calling thread's policy and real-time priority as the kernel reports them
/// (`sched_getscheduler`, `sched_getparam`): `(Fifo, 1–99)`, else `(Normal, 0)` — any
/// policy but `SCHED_FIFO` reads as normal, since the client asks for nothing else.
pub(crate) fn current_policy() -> (ClientPolicy, u8) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: pid 0 is the calling thread; the call reads its policy only. The result
        // carries SCHED_RESET_ON_FORK as a flag when it is set.
        let policy = unsafe { libc::sched_getscheduler(0) } & !libc::SCHED_RESET_ON_FORK;
        if policy == libc::SCHED_FIFO {
            let mut param = libc::sched_param { sched_priority: 0 };
            // SAFETY: `param` is a valid sched_param to write into; pid 0 is the calling
            // thread.
            if unsafe { libc::sched_getparam(0, &mut param) } == 0 {
                return (
                    ClientPolicy::Fifo,
                    u8::try_from(param.sched_priority).unwrap_or(0),
                );
            }
        }
    }
    (ClientPolicy::Normal, 0)
}

/// The load client's real-time priority: low among real-time threads (1–99), so kernel
/// threads that run real-time keep precedence; above every normal thread.
#[cfg(target_os = "linux")]
const CLIENT_FIFO_PRIORITY: i32 = 10;

#[cfg(not(target_os = "linux"))]
fn spin_on(_cpu: usize, _stop: &AtomicBool) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `policy` line of a `/proc/.../sched` file: 0 normal, 1 FIFO, 5 idle.
    #[cfg(target_os = "linux")]
    fn policy(sched: &str) -> String {
        sched
            .lines()
            .find(|l| l.starts_with("policy"))
            .and_then(|l| l.split(':').nth(1))
            .map(|p| p.trim().to_owned())
            .unwrap_or_default()
    }

    /// The scheduling policy of every thread of this process named `referee-awake`, as
    /// `/proc/self/task/*/sched` shows it (other tests' spinners included).
    #[cfg(target_os = "linux")]
    fn spinner_policies() -> Vec<String> {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|task| {
                let dir = task.ok()?.path();
                let comm = std::fs::read_to_string(dir.join("comm")).ok()?;
                let sched = std::fs::read_to_string(dir.join("sched")).ok()?;
                (comm.trim() == "referee-awake").then(|| policy(&sched))
            })
            .collect()
    }

    /// As root (CI, the demo machine) the thread runs FIFO and a process it starts runs
    /// under the normal policy; without the privilege nothing changes.
    #[cfg(target_os = "linux")]
    #[test]
    fn realtime_where_permitted_and_never_inherited_by_a_process() {
        let (before, own, read_back, child) = std::thread::spawn(|| {
            let before = current_policy();
            raise_to_realtime();
            let own = policy(&std::fs::read_to_string("/proc/thread-self/sched").unwrap());
            let out = std::process::Command::new("cat")
                .arg("/proc/self/sched")
                .output()
                .unwrap();
            (
                before,
                own,
                current_policy(),
                policy(&String::from_utf8_lossy(&out.stdout)),
            )
        })
        .join()
        .unwrap();
        // SAFETY: geteuid has no arguments and cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        assert_eq!(own, if root { "1" } else { "0" });
        assert_eq!(before, (ClientPolicy::Normal, 0));
        assert_eq!(
            read_back,
            if root {
                (ClientPolicy::Fifo, 10)
            } else {
                (ClientPolicy::Normal, 0)
            }
        );
        assert_eq!(child, "0");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn one_idle_spinner_per_allowed_cpu_that_spins_until_stopped() {
        let cpus = allowed_cpus();
        assert!(!cpus.is_empty());
        let mut awake = KeepAwake::start();
        assert_eq!(awake.threads.len(), cpus.len());
        // Each lowers itself first thing; give them a moment, then none runs above
        // SCHED_IDLE (5).
        std::thread::sleep(std::time::Duration::from_millis(50));
        let policies = spinner_policies();
        assert!(policies.len() >= cpus.len(), "{policies:?}");
        assert!(policies.iter().all(|p| p == "5"), "{policies:?}");
        assert_eq!(awake.stop(), cpus.len());
        assert!(awake.threads.is_empty());
    }
}
