//! The hardware fingerprint recorded at the start and end of every round
//! (content/measurement.md, Paired comparison and drift: a round whose hardware changed is invalid).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a machine is, as far as a measurement depends on it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HardwareFingerprint {
    /// CPU model name (`/proc/cpuinfo` `model name`).
    pub cpu_model: String,
    /// Logical CPUs.
    pub cpu_count: u32,
    /// CPU feature flags the matrix kernels can use (e.g. `avx2`, `fma`).
    pub cpu_features: Vec<String>,
    /// Total memory, bytes.
    pub memory_bytes: u64,
    /// OS name and version.
    pub os: String,
    /// Kernel release.
    pub kernel: String,
    /// GPUs found through the CUDA driver; empty where no driver is present.
    pub gpus: Vec<GpuInfo>,
}

/// One GPU, as the CUDA driver reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GpuInfo {
    /// Device name.
    pub name: String,
    /// Device UUID.
    pub uuid: String,
    /// Total memory, bytes.
    pub memory_bytes: u64,
    /// Compute capability, e.g. `9.0`.
    pub compute_capability: String,
    /// Driver version, e.g. `12080`.
    pub driver_version: String,
}
