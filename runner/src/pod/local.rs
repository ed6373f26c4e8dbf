//! The `local` pod: the evaluator's own machine, nothing rented. Its commands still get
//! none of the evaluator's environment, as a Slurm pod's do (`--export=NONE`).

use std::path::Path;
use std::process::Command;

use receipts::model::PodBackend;

use super::{Allocation, Pod, PodError, Release};

/// The evaluator's own machine as a pod.
#[derive(Debug, Default)]
pub struct LocalPod {
    provisioned: bool,
}

impl LocalPod {
    /// The local pod, not yet "rented".
    pub fn new() -> Self {
        Self::default()
    }
}

impl Pod for LocalPod {
    fn backend(&self) -> PodBackend {
        PodBackend::Local
    }

    fn provision(&mut self) -> Result<Allocation, PodError> {
        self.provisioned = true;
        Ok(Allocation {
            id: None,
            nodes: "localhost".to_owned(),
        })
    }

    fn command(&self, program: &Path, args: &[String]) -> Result<Command, PodError> {
        if !self.provisioned {
            return Err(PodError::NotProvisioned);
        }
        let mut command = Command::new(program);
        command.args(args).env_clear();
        Ok(command)
    }

    fn is_alive(&self) -> Result<bool, PodError> {
        Ok(self.provisioned)
    }

    fn release(&mut self) -> Result<Release, PodError> {
        self.provisioned = false;
        Ok(Release::default())
    }
}
