//! `[pod]` of a campaign (content/pods.md): the machine each round's entries run on.
//! `local` (the default) is the evaluator's own machine, as before pods existed; `slurm`
//! rents an allocation from a Slurm cluster (`--gres=gpu:N`, a time limit, an exclusive
//! node, `--export=NONE`), ships the `referee` binary and the round's public inputs to a
//! staging directory both sides see, and runs `referee agent` there. The signing and log
//! keys never leave the evaluator.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ModelError;

/// Which backend provides the pod.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PodBackend {
    /// The evaluator's own machine (no allocation, no shipping).
    #[default]
    Local,
    /// A Slurm allocation, driven through `sbatch`, `squeue`, `srun` and `scancel`.
    Slurm,
}

/// `[pod]`: where and on what a round runs. Absent (`None` in [`super::Campaign`],
/// meaning `backend = "local"`) unless written, so campaigns frozen before it keep their
/// digest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PodSpec {
    /// `"local"` (default) or `"slurm"`.
    #[serde(default)]
    pub backend: PodBackend,
    /// GPUs the allocation asks for (`--gres=gpu:N`), 1 to [`PodSpec::MAX_GPUS`]
    /// (default 1).
    #[serde(default = "default_gpus")]
    pub gpus: u32,
    /// The allocation's time limit, minutes (`--time`), 1 to
    /// [`PodSpec::MAX_TIME_LIMIT_MIN`] (default 60): Slurm ends a pod that outlives it.
    #[serde(default = "default_time_limit_min")]
    pub time_limit_min: u32,
    /// The Slurm partition (`--partition`), `[A-Za-z0-9._-]{1,64}`; absent: the
    /// cluster's default partition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    /// An absolute directory on a filesystem both the evaluator and the pod see: the
    /// binary, the campaign and the round's public inputs are shipped into it. Required
    /// by `slurm`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub staging_dir: Option<String>,
    /// An absolute directory on the pod's node holding weights by their sha256 (a node
    /// cache kept across rounds); absent: `<staging_dir>/weights-cache`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weights_cache: Option<String>,
    /// Where the pod downloads `model.weights` from: `file:///dir` or `https://host/dir`,
    /// each file at `<source>/<name>`, verified against its sha256 before use. Absent: the
    /// model has no weight files to download (the built-in engine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weights_source: Option<String>,
    /// The registry engine images are pulled from by digest (`host[:port]`); absent: the
    /// registry in each image's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry: Option<String>,
}

fn default_gpus() -> u32 {
    1
}

fn default_time_limit_min() -> u32 {
    60
}

impl Default for PodSpec {
    fn default() -> Self {
        Self {
            backend: PodBackend::Local,
            gpus: default_gpus(),
            time_limit_min: default_time_limit_min(),
            partition: None,
            staging_dir: None,
            weights_cache: None,
            weights_source: None,
            registry: None,
        }
    }
}

impl PodSpec {
    /// Most GPUs one pod asks for.
    pub const MAX_GPUS: u32 = 64;
    /// Longest time limit, minutes: one week.
    pub const MAX_TIME_LIMIT_MIN: u32 = 7 * 24 * 60;

    /// The weights cache: `weights_cache`, else `<staging_dir>/weights-cache`; `None`
    /// when neither is set (a `local` pod with no staging directory).
    pub fn weights_cache_dir(&self) -> Option<String> {
        self.weights_cache.clone().or_else(|| {
            self.staging_dir
                .as_ref()
                .map(|dir| format!("{}/weights-cache", dir.trim_end_matches('/')))
        })
    }

    /// Checks every value's range.
    ///
    /// Errors: [`ModelError::InvalidField`] naming the field (`pod.gpus`, …), its value
    /// and the rule.
    pub fn validate(&self) -> Result<(), ModelError> {
        let invalid = |field: &str, value: String, rule: &str| ModelError::InvalidField {
            field: format!("pod.{field}"),
            value,
            rule: rule.into(),
        };
        if !(1..=Self::MAX_GPUS).contains(&self.gpus) {
            return Err(invalid("gpus", self.gpus.to_string(), "1 to 64"));
        }
        if !(1..=Self::MAX_TIME_LIMIT_MIN).contains(&self.time_limit_min) {
            return Err(invalid(
                "time_limit_min",
                self.time_limit_min.to_string(),
                "1 to 10080 minutes",
            ));
        }
        if let Some(partition) = &self.partition
            && !((1..=64).contains(&partition.len())
                && partition
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')))
        {
            return Err(invalid(
                "partition",
                partition.clone(),
                "[A-Za-z0-9._-]{1,64}",
            ));
        }
        for (field, dir) in [
            ("staging_dir", &self.staging_dir),
            ("weights_cache", &self.weights_cache),
        ] {
            if let Some(dir) = dir
                && !is_plain_absolute(dir)
            {
                return Err(invalid(
                    field,
                    dir.clone(),
                    "an absolute path without `..`, spaces or control characters",
                ));
            }
        }
        if self.backend == PodBackend::Slurm && self.staging_dir.is_none() {
            return Err(invalid(
                "staging_dir",
                String::new(),
                "required by backend = \"slurm\": a directory both sides see",
            ));
        }
        if let Some(source) = &self.weights_source
            && !(source.starts_with("file:///") || source.starts_with("https://"))
        {
            return Err(invalid(
                "weights_source",
                source.clone(),
                "a file:/// or https:// URL",
            ));
        }
        if let Some(registry) = &self.registry
            && (registry.is_empty()
                || registry.len() > 255
                || !registry
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':')))
        {
            return Err(invalid("registry", registry.clone(), "host[:port]"));
        }
        Ok(())
    }
}

/// An absolute path with no `..` component and no whitespace or control character (it
/// reaches `sbatch`'s and `srun`'s command lines).
fn is_plain_absolute(path: &str) -> bool {
    path.starts_with('/')
        && !path.split('/').any(|part| part == "..")
        && !path.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// A round's pod as the receipt records it (`pod`; content/receipts.md, v9): the
/// backend and every allocation the round rented, in order. Absent for a round on the
/// evaluator's own machine (`backend = "local"`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodRun {
    /// The backend that rented the allocations.
    pub backend: PodBackend,
    /// Each allocation the round ran on, in the order they were rented: more than one
    /// when an allocation died mid-round and the round went on on a new one.
    pub allocations: Vec<PodAllocation>,
}

/// One allocation of a round's pod: what ran there and the timeline steps of its setup
/// and release.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodAllocation {
    /// The scheduler's id of the allocation (a Slurm job id).
    pub id: u64,
    /// The node(s) it ran on, as the scheduler named them.
    pub nodes: String,
    /// sha256 of the `referee` binary shipped as the agent, which the agent reported
    /// running (`verifier::pod`: equal to the digest the shipping step's log names).
    pub agent_sha256: super::Sha256Hex,
    /// The GPUs the scheduler gave the agent (`CUDA_VISIBLE_DEVICES`; empty: none).
    pub gpus: String,
    /// Indices into the round's `steps` of this allocation's setup and release steps,
    /// in order: renting it, shipping the harness, the agent's steps, releasing it.
    pub steps: Vec<u32>,
}

/// The step group of a pod's setup and release steps on a round's timeline.
pub const POD_STEP_GROUP: &str = "Pod";
/// The step renting a pod; its log names `allocation <id> on <nodes>`.
pub const RENTING_STEP: &str = "Renting the pod";
/// The step shipping the harness; its log names the shipped binary's digest after
/// [`SHIPPED_BINARY_LINE`].
pub const SHIPPING_STEP: &str = "Shipping the harness";
/// How the shipping step's log begins the line naming the shipped binary's sha256.
pub const SHIPPED_BINARY_LINE: &str = "bin/referee sha256:";

#[cfg(test)]
mod tests {
    use super::*;

    fn slurm() -> PodSpec {
        PodSpec {
            backend: PodBackend::Slurm,
            staging_dir: Some("/shared/referee".into()),
            ..PodSpec::default()
        }
    }

    #[test]
    fn a_written_pod_parses_with_its_defaults() {
        let spec: PodSpec = toml::from_str(
            "backend = \"slurm\"\nstaging_dir = \"/shared/referee\"\nweights_source = \"file:///w\"",
        )
        .unwrap();
        assert_eq!(spec.gpus, 1);
        assert_eq!(spec.time_limit_min, 60);
        assert_eq!(
            spec.weights_cache_dir().as_deref(),
            Some("/shared/referee/weights-cache")
        );
        spec.validate().unwrap();
        assert_eq!(PodSpec::default().weights_cache_dir(), None);
    }

    #[test]
    fn each_rule_names_its_field() {
        let field_of = |spec: PodSpec| match spec.validate() {
            Err(ModelError::InvalidField { field, .. }) => field,
            other => panic!("expected an invalid field, got {other:?}"),
        };
        assert_eq!(field_of(PodSpec { gpus: 0, ..slurm() }), "pod.gpus");
        assert_eq!(
            field_of(PodSpec {
                time_limit_min: 10_081,
                ..slurm()
            }),
            "pod.time_limit_min"
        );
        assert_eq!(
            field_of(PodSpec {
                partition: Some("gpu nodes".into()),
                ..slurm()
            }),
            "pod.partition"
        );
        assert_eq!(
            field_of(PodSpec {
                staging_dir: None,
                ..slurm()
            }),
            "pod.staging_dir"
        );
        assert_eq!(
            field_of(PodSpec {
                staging_dir: Some("/shared/../etc".into()),
                ..slurm()
            }),
            "pod.staging_dir"
        );
        assert_eq!(
            field_of(PodSpec {
                weights_cache: Some("cache".into()),
                ..slurm()
            }),
            "pod.weights_cache"
        );
        assert_eq!(
            field_of(PodSpec {
                weights_source: Some("http://plain".into()),
                ..slurm()
            }),
            "pod.weights_source"
        );
        assert_eq!(
            field_of(PodSpec {
                registry: Some("reg istry".into()),
                ..slurm()
            }),
            "pod.registry"
        );
        PodSpec::default().validate().unwrap();
    }
}
