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
    /// The GPUs as NVML reports them (v9): driver, CUDA version, each GPU's UUID, bus id,
    /// VBIOS and power limit; `unavailable` driver and CUDA and no GPU where NVML is
    /// absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvml: Option<NvmlInventory>,
}

/// What NVML says about the host's GPUs (v9; content/measurement.md, Telemetry).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NvmlInventory {
    /// The driver version, e.g. `570.124.06`; `unavailable` without NVML.
    pub driver: String,
    /// The CUDA version the driver supports, e.g. `12.8`; `unavailable` without NVML.
    pub cuda: String,
    /// Each GPU, in NVML's index order.
    pub gpus: Vec<NvmlGpu>,
}

/// One GPU, as NVML reports it; a value NVML cannot give is `unavailable`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NvmlGpu {
    /// Its UUID, `GPU-…`.
    pub uuid: String,
    /// Its PCI bus id, `00000000:18:00.0`.
    pub bus_id: String,
    /// Its VBIOS version.
    pub vbios: String,
    /// Its enforced power limit, mW; absent where NVML cannot give it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_limit_mw: Option<u32>,
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
