//! The `slurm` pod: an allocation rented with `sbatch` (a batch step that only holds the
//! node), watched with `squeue`, used with `srun --jobid` and released with `scancel`.
//! The scheduler's own commands, found on `PATH` with the evaluator's `SLURM_CONF`; the
//! pod gets none of the evaluator's environment (`--export=NONE`).

use std::path::Path;
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use receipts::model::{PodBackend, PodSpec};

use super::{Allocation, Pod, PodError, Release, describe, run_to_end};

/// How often `squeue` is asked while the allocation waits.
const POLL: Duration = Duration::from_millis(250);

/// The longest wait for an allocation to run before it is cancelled (the provider
/// handing over a machine): 30 minutes.
const DEFAULT_PROVISION_DEADLINE: Duration = Duration::from_secs(30 * 60);

/// A pod rented from Slurm.
pub struct SlurmPod {
    spec: PodSpec,
    job_name: String,
    job: Option<u64>,
    /// Allocations of this pod's name found alive before renting (a killed evaluator's),
    /// cancelled then and reported at release.
    swept: Vec<u64>,
    provision_deadline: Duration,
}

impl SlurmPod {
    /// A pod of `spec` whose allocations are named `job_name` (`[A-Za-z0-9._-]`, as the
    /// round's own name is).
    pub fn new(spec: PodSpec, job_name: &str) -> Self {
        Self {
            spec,
            job_name: job_name.to_owned(),
            job: None,
            swept: Vec::new(),
            provision_deadline: DEFAULT_PROVISION_DEADLINE,
        }
    }

    /// As [`SlurmPod::new`], waiting at most `deadline` for the allocation to run.
    pub fn with_provision_deadline(mut self, deadline: Duration) -> Self {
        self.provision_deadline = deadline;
        self
    }

    /// The job's state as `squeue` lists it, `None` when it is no longer listed.
    fn state(&self, id: u64) -> Result<Option<String>, PodError> {
        let out = run_to_end(Command::new("squeue").args([
            "--noheader",
            "--jobs",
            &id.to_string(),
            "--format=%T",
        ]));
        match out {
            Ok(out) => Ok(out.lines().next().map(|s| s.trim().to_owned())),
            // squeue refuses a job id it has already forgotten.
            Err(PodError::Command { stderr, .. }) if stderr.contains("Invalid job id") => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The ids of every job of this pod's name still pending or running.
    fn jobs_of_name(&self) -> Result<Vec<u64>, PodError> {
        let mut command = Command::new("squeue");
        command.args([
            "--noheader",
            "--name",
            &self.job_name,
            "--states=PENDING,CONFIGURING,RUNNING,SUSPENDED",
            "--format=%i",
        ]);
        let line = describe(&command);
        let out = run_to_end(&mut command)?;
        out.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(|l| {
                l.parse::<u64>().map_err(|_| PodError::Answer {
                    command: line.clone(),
                    answer: receipts::text::escape_untrusted(l).into_owned(),
                    expected: "a job id",
                })
            })
            .collect()
    }

    /// Cancels job `id`; one that already ended is not an error.
    fn cancel(id: u64) -> Result<(), PodError> {
        match run_to_end(Command::new("scancel").arg(id.to_string())) {
            Ok(_) => Ok(()),
            Err(PodError::Command { stderr, .. })
                if stderr.contains("already completing or completed")
                    || stderr.contains("Invalid job id") =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }
}

/// `sbatch`'s arguments renting the pod `spec` describes under `job_name`: an exclusive
/// node with `spec.gpus` GPUs for `spec.time_limit_min` minutes, none of the evaluator's
/// environment, a batch step that only holds the allocation (every command runs through
/// `srun --jobid`), its job id printed alone (`--parsable`).
pub fn sbatch_args(spec: &PodSpec, job_name: &str) -> Vec<String> {
    let mut args = vec![
        "--parsable".to_owned(),
        format!("--job-name={job_name}"),
        "--nodes=1".to_owned(),
        format!("--gres=gpu:{}", spec.gpus),
        format!("--time={}", spec.time_limit_min),
        "--exclusive".to_owned(),
        "--export=NONE".to_owned(),
        "--output=/dev/null".to_owned(),
    ];
    if let Some(partition) = &spec.partition {
        args.push(format!("--partition={partition}"));
    }
    args.push("--wrap=exec /bin/sleep infinity".to_owned());
    args
}

impl Pod for SlurmPod {
    fn backend(&self) -> PodBackend {
        PodBackend::Slurm
    }

    fn provision(&mut self) -> Result<Allocation, PodError> {
        // A killed evaluator's allocation would hold the node this one waits for.
        for id in self.jobs_of_name()? {
            Self::cancel(id)?;
            self.swept.push(id);
        }
        let mut command = Command::new("sbatch");
        command.args(sbatch_args(&self.spec, &self.job_name));
        let line = describe(&command);
        let out = run_to_end(&mut command)?;
        // `--parsable` prints `id` or `id;cluster`.
        let id = out
            .trim()
            .split(';')
            .next()
            .and_then(|id| id.parse::<u64>().ok())
            .ok_or_else(|| PodError::Answer {
                command: line,
                answer: receipts::text::escape_untrusted(out.trim()).into_owned(),
                expected: "a job id",
            })?;
        self.job = Some(id);
        let started = Instant::now();
        loop {
            let state = self.state(id)?;
            match state.as_deref() {
                Some("RUNNING") => break,
                Some("PENDING" | "CONFIGURING") => {}
                other => {
                    self.job = None;
                    return Err(PodError::AllocationEnded {
                        id,
                        state: other.unwrap_or("gone").to_owned(),
                    });
                }
            }
            if started.elapsed() >= self.provision_deadline {
                Self::cancel(id)?;
                self.job = None;
                return Err(PodError::ProvisioningTimedOut {
                    id,
                    state: state.unwrap_or_default(),
                    waited_s: started.elapsed().as_secs(),
                });
            }
            thread::sleep(POLL);
        }
        let nodes = run_to_end(Command::new("squeue").args([
            "--noheader",
            "--jobs",
            &id.to_string(),
            "--format=%N",
        ]))?;
        Ok(Allocation {
            id: Some(id),
            nodes: nodes.trim().to_owned(),
        })
    }

    fn command(&self, program: &Path, args: &[String]) -> Result<Command, PodError> {
        let id = self.job.ok_or(PodError::NotProvisioned)?;
        let mut command = Command::new("srun");
        command
            .arg(format!("--jobid={id}"))
            .args([
                "--overlap",
                "--ntasks=1",
                "--export=NONE",
                "--quiet",
                "--kill-on-bad-exit=1",
            ])
            .arg(program)
            .args(args);
        Ok(command)
    }

    fn is_alive(&self) -> Result<bool, PodError> {
        let id = self.job.ok_or(PodError::NotProvisioned)?;
        Ok(self.state(id)?.as_deref() == Some("RUNNING"))
    }

    fn release(&mut self) -> Result<Release, PodError> {
        let own = self.job.take();
        if let Some(id) = own {
            Self::cancel(id)?;
        }
        // Its own allocation may still be listed while Slurm ends it: not a leftover.
        let alive: Vec<u64> = self
            .jobs_of_name()?
            .into_iter()
            .filter(|id| Some(*id) != own)
            .collect();
        for id in &alive {
            Self::cancel(*id)?;
        }
        let mut leftovers = std::mem::take(&mut self.swept);
        leftovers.extend(alive);
        Ok(Release {
            leftovers_cancelled: leftovers,
        })
    }
}

impl Drop for SlurmPod {
    /// An allocation still held when the pod is dropped (an error path that skipped
    /// teardown) is cancelled: a rented node is never left to its time limit.
    fn drop(&mut self) {
        if let Some(id) = self.job.take()
            && let Err(e) = Self::cancel(id)
        {
            tracing::warn!("cancelling allocation {id}: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use receipts::model::PodBackend;

    #[test]
    fn the_allocation_is_an_exclusive_gpu_node_with_nothing_of_the_evaluator() {
        let spec = PodSpec {
            backend: PodBackend::Slurm,
            gpus: 2,
            time_limit_min: 90,
            partition: Some("h100".into()),
            staging_dir: Some("/shared/referee".into()),
            ..PodSpec::default()
        };
        assert_eq!(
            sbatch_args(&spec, "referee-demo-r3"),
            [
                "--parsable",
                "--job-name=referee-demo-r3",
                "--nodes=1",
                "--gres=gpu:2",
                "--time=90",
                "--exclusive",
                "--export=NONE",
                "--output=/dev/null",
                "--partition=h100",
                "--wrap=exec /bin/sleep infinity",
            ]
        );
    }

    #[test]
    fn commands_need_a_rented_pod() {
        let pod = SlurmPod::new(PodSpec::default(), "referee-x");
        assert!(matches!(
            pod.command(Path::new("/bin/true"), &[]),
            Err(PodError::NotProvisioned)
        ));
        assert!(matches!(pod.is_alive(), Err(PodError::NotProvisioned)));
    }
}
