//! Whether an engine stayed on its CPUs (content/measurement.md, Isolation). The engine
//! is pinned with `sched_setaffinity(2)` before its exec, but nothing stops it from
//! widening its own mask onto the load generator's CPU and making the client lag — an
//! invalid run, and before `…/round/v6` a round any engine could veto. So the runner
//! reads every engine thread's `Cpus_allowed_list` (`/proc/<pid>/task/<tid>/status`)
//! while the run is measured and after it ([`cpu_escape`]): a thread allowed on a CPU
//! outside the engine's set makes the run the entry's own fault (`left_cpu_set`).
//!
//! The engine's processes are found on the host by the sandbox's pid namespace
//! (bubblewrap's `--info-fd`: its host pids, [`crate::sandbox::processes_in`]), else by
//! its process group.

use std::fmt;
use std::fs;

/// Where an engine's processes are on the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineProcesses {
    /// Every process in this pid namespace (the inode of `/proc/<pid>/ns/pid`).
    PidNamespace(u64),
    /// Every process of this process group (an unsandboxed engine).
    ProcessGroup(i32),
}

impl EngineProcesses {
    /// Their host pids now, ascending, as far as this process can read `/proc`.
    pub fn pids(&self) -> Vec<i32> {
        match *self {
            EngineProcesses::PidNamespace(namespace) => crate::sandbox::processes_in(namespace),
            EngineProcesses::ProcessGroup(group) => processes_of_group(group),
        }
    }
}

/// A thread of an engine allowed on CPUs outside the engine's set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuEscape {
    /// Its process's host pid.
    pub pid: i32,
    /// The thread's host id.
    pub tid: i32,
    /// The CPUs it was allowed on (`Cpus_allowed_list`), ascending.
    pub allowed: Vec<u32>,
    /// Those of them outside the engine's set, ascending (never empty).
    pub outside: Vec<u32>,
}

impl fmt::Display for CpuEscape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "thread {} of process {} was allowed on CPUs {}, {} of them outside the engine's set",
            self.tid,
            self.pid,
            cpu_list_text(&self.allowed),
            cpu_list_text(&self.outside),
        )
    }
}

/// The first thread (by pid, then thread id) of `processes` whose `Cpus_allowed_list` is
/// not inside `engine_cpus`; `None` when every thread this process can read stayed in
/// it. A process or thread that exits while it is read is skipped.
pub fn cpu_escape(processes: &EngineProcesses, engine_cpus: &[u32]) -> Option<CpuEscape> {
    processes.pids().into_iter().find_map(|pid| {
        let mut tids: Vec<i32> = fs::read_dir(format!("/proc/{pid}/task"))
            .ok()?
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .collect();
        tids.sort_unstable();
        tids.into_iter().find_map(|tid| {
            let status = fs::read_to_string(format!("/proc/{pid}/task/{tid}/status")).ok()?;
            let allowed = allowed_cpus(&status)?;
            escape_of(pid, tid, allowed, engine_cpus)
        })
    })
}

/// The escape of thread `tid` of `pid` allowed on `allowed`, when any CPU of it is not in
/// `engine_cpus`.
fn escape_of(pid: i32, tid: i32, allowed: Vec<u32>, engine_cpus: &[u32]) -> Option<CpuEscape> {
    let outside: Vec<u32> = allowed
        .iter()
        .copied()
        .filter(|cpu| !engine_cpus.contains(cpu))
        .collect();
    (!outside.is_empty()).then_some(CpuEscape {
        pid,
        tid,
        allowed,
        outside,
    })
}

/// The `Cpus_allowed_list` of a `/proc/<pid>/status` text, ascending; `None` without the
/// line or when it is not a CPU list.
pub fn allowed_cpus(status: &str) -> Option<Vec<u32>> {
    let list = status
        .lines()
        .find_map(|line| line.strip_prefix("Cpus_allowed_list:"))?;
    parse_cpu_list(list.trim())
}

/// A kernel CPU list (`0-3,5,7-8`, cpuset(7)'s list format), ascending and deduplicated;
/// `None` for anything else (an empty list included, or a range of more than 65 536
/// CPUs).
pub fn parse_cpu_list(text: &str) -> Option<Vec<u32>> {
    let mut cpus = Vec::new();
    for part in text.split(',') {
        let (low, high) = match part.split_once('-') {
            Some((low, high)) => (low.parse::<u32>().ok()?, high.parse::<u32>().ok()?),
            None => {
                let cpu = part.parse::<u32>().ok()?;
                (cpu, cpu)
            }
        };
        if high < low || high - low > 65_535 {
            return None;
        }
        cpus.extend(low..=high);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Some(cpus)
}

/// `cpus` in the kernel's list format, ranges folded (`[0, 1, 2, 5]` → `0-2,5`).
pub fn cpu_list_text(cpus: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut iter = cpus.iter().copied().peekable();
    while let Some(low) = iter.next() {
        let mut high = low;
        while iter.peek() == Some(&(high + 1)) {
            high += 1;
            iter.next();
        }
        parts.push(if low == high {
            low.to_string()
        } else {
            format!("{low}-{high}")
        });
    }
    parts.join(",")
}

/// The pids of the processes in process group `group`, ascending (`/proc/<pid>/stat`'s
/// fifth field, after the command in parentheses).
fn processes_of_group(group: i32) -> Vec<i32> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut pids: Vec<i32> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| group_of(&stat))
                == Some(group)
        })
        .collect();
    pids.sort_unstable();
    pids
}

/// The process group of a `/proc/<pid>/stat` line: `pid (comm) state ppid pgrp …`, the
/// command possibly holding spaces and parentheses (so read after the last `)`).
fn group_of(stat: &str) -> Option<i32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_ascii_whitespace().nth(2)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse_as_the_kernel_writes_them() {
        assert_eq!(parse_cpu_list("0-3,5,7-8"), Some(vec![0, 1, 2, 3, 5, 7, 8]));
        assert_eq!(parse_cpu_list("1"), Some(vec![1]));
        assert_eq!(parse_cpu_list("3,1-2,2"), Some(vec![1, 2, 3]));
        assert_eq!(parse_cpu_list(""), None);
        assert_eq!(parse_cpu_list("2-1"), None);
        assert_eq!(parse_cpu_list("0-4294967295"), None);
        assert_eq!(parse_cpu_list("a"), None);
        assert_eq!(cpu_list_text(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
        assert_eq!(cpu_list_text(&[]), "");
        let status = "Name:\tengine\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\nMems_allowed:\t1\n";
        assert_eq!(allowed_cpus(status), Some(vec![0, 1]));
        assert_eq!(allowed_cpus("Name:\tengine\n"), None);
    }

    #[test]
    fn a_thread_allowed_outside_the_engines_set_escaped_it() {
        assert_eq!(escape_of(10, 11, vec![1, 2], &[1, 2, 3]), None);
        let escape = escape_of(10, 12, vec![0, 1], &[1]).unwrap();
        assert_eq!(escape.outside, vec![0]);
        assert_eq!(
            escape.to_string(),
            "thread 12 of process 10 was allowed on CPUs 0-1, 0 of them outside the engine's set"
        );
    }

    #[test]
    fn the_process_group_is_read_after_the_command() {
        assert_eq!(group_of("42 (a) b) S 1 77 77 0"), Some(77));
        assert_eq!(group_of("42 (engine) S 1 99 99 0"), Some(99));
        assert_eq!(group_of("garbage"), None);
    }

    /// This test's own process is found by its group; every CPU is a set its threads
    /// cannot leave, no CPU one they all left.
    #[test]
    fn this_process_is_found_by_its_group_and_checked_against_a_set() {
        // SAFETY: getpgrp(2) reads this process's group; no memory is involved.
        let group = unsafe { libc::getpgrp() };
        let processes = EngineProcesses::ProcessGroup(group);
        let me = i32::try_from(std::process::id()).unwrap();
        assert!(processes.pids().contains(&me));
        let every_cpu: Vec<u32> = (0..u32::try_from(libc::CPU_SETSIZE).unwrap()).collect();
        assert_eq!(cpu_escape(&processes, &every_cpu), None);
        let escape = cpu_escape(&processes, &[]).unwrap();
        assert_eq!(escape.outside, escape.allowed);
    }
}
