//! A run's telemetry (v9; content/measurement.md, Telemetry): the bundle file the
//! runner's sampler writes for every timed run (`telemetry/<run>.json`), and the summary
//! of it a pass row records. The rules that judge it are `rules::telemetry`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The format version of a [`TelemetryFile`] this build writes and reads.
pub const TELEMETRY_FORMAT: u32 = 1;

/// What sampled a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TelemetrySource {
    /// The host's CPUs only, from `/proc/stat` and cpufreq: no GPU (or no NVML) was
    /// found.
    Cpu,
    /// The GPUs through NVML, beside the CPUs.
    Nvml,
}

impl TelemetrySource {
    /// The snake_case name: `cpu`, `nvml`.
    pub fn as_str(&self) -> &'static str {
        match self {
            TelemetrySource::Cpu => "cpu",
            TelemetrySource::Nvml => "nvml",
        }
    }
}

/// A reason NVML gives for a GPU's clocks being below their maximum
/// (`nvmlClocksThrottleReasons`). The hardware ones and the power brake make a run
/// invalid; the software ones are recorded only.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ThrottleReason {
    /// Nothing runs on the GPU: its clocks are down for that.
    GpuIdle,
    /// The application clocks setting holds them.
    ApplicationsClocksSetting,
    /// The software power cap (the power limit): recorded only.
    SwPowerCap,
    /// Hardware slowdown (thermal or power, or an external signal): invalidates.
    HwSlowdown,
    /// Sync boost with other GPUs.
    SyncBoost,
    /// Software thermal slowdown: recorded only.
    SwThermalSlowdown,
    /// Hardware thermal slowdown: invalidates.
    HwThermalSlowdown,
    /// The power brake (an external power supply signal): invalidates.
    HwPowerBrakeSlowdown,
    /// The display clock setting.
    DisplayClockSetting,
}

impl ThrottleReason {
    /// The snake_case name, as the file writes it.
    pub fn as_str(&self) -> &'static str {
        match self {
            ThrottleReason::GpuIdle => "gpu_idle",
            ThrottleReason::ApplicationsClocksSetting => "applications_clocks_setting",
            ThrottleReason::SwPowerCap => "sw_power_cap",
            ThrottleReason::HwSlowdown => "hw_slowdown",
            ThrottleReason::SyncBoost => "sync_boost",
            ThrottleReason::SwThermalSlowdown => "sw_thermal_slowdown",
            ThrottleReason::HwThermalSlowdown => "hw_thermal_slowdown",
            ThrottleReason::HwPowerBrakeSlowdown => "hw_power_brake_slowdown",
            ThrottleReason::DisplayClockSetting => "display_clock_setting",
        }
    }
}

/// One run's telemetry, as the bundle keeps it: the samples taken over the run's
/// measured part, at least every [`TelemetryFile::interval_ms`] apart when the host keeps
/// up. Every number is an integer in the unit its name carries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TelemetryFile {
    /// The file's format, [`TELEMETRY_FORMAT`].
    pub format: u32,
    /// What sampled the run.
    pub source: TelemetrySource,
    /// The interval the sampler aimed at, ms (80: 12.5 Hz).
    pub interval_ms: u64,
    /// The CPUs (kernel numbering) whose `/proc/stat` and clock each sample reads.
    pub cpus: Vec<u32>,
    /// The GPUs sampled, by UUID, in the order a [`GpuReading::device`] indexes; empty for
    /// the CPU source.
    pub gpus: Vec<String>,
    /// The readings the host could not give, by their field name (`cpuFreqKhz` on a VM
    /// that exposes no cpufreq, `eccUncorrected` on a GPU without ECC): absent from every
    /// sample.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unavailable: Vec<String>,
    /// The samples, in time order.
    pub samples: Vec<TelemetrySample>,
}

/// One sample of a run's telemetry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TelemetrySample {
    /// Time since the run's measured part began, ms.
    pub t_ms: u64,
    /// The CPUs since the previous sample (the first: since the run began).
    pub cpu: CpuReading,
    /// Each sampled GPU's reading; empty for the CPU source.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<GpuReading>,
}

/// The run's CPUs over one sample's interval, from `/proc/stat`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CpuReading {
    /// Busy time (everything but idle, iowait and steal) over the CPUs' time, permille.
    pub busy_permille: u32,
    /// Steal time over the CPUs' time, permille.
    pub steal_permille: u32,
    /// The lowest `scaling_cur_freq` of the CPUs, kHz; absent (and `cpuFreqKhz` listed as
    /// unavailable) where the host exposes no cpufreq.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub freq_khz: Option<u64>,
}

/// One GPU at one sample, through NVML. A reading NVML could not give is absent (and
/// listed in [`TelemetryFile::unavailable`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GpuReading {
    /// The GPU: its index in [`TelemetryFile::gpus`].
    pub device: u32,
    /// SM clock, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_clock_mhz: Option<u32>,
    /// Memory clock, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_clock_mhz: Option<u32>,
    /// The clocks' throttle reasons at the sample, in their order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub throttle: Vec<ThrottleReason>,
    /// Power draw, mW.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_mw: Option<u32>,
    /// GPU die temperature, °C.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature_c: Option<u32>,
    /// Volatile uncorrected ECC errors since the driver loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecc_uncorrected: Option<u64>,
    /// Critical XID errors NVML reported since the previous sample.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub xid: Vec<u64>,
    /// PCIe link width, lanes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcie_link_width: Option<u32>,
    /// PCIe link generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcie_link_gen: Option<u32>,
}

/// Why a run's telemetry makes it invalid (content/measurement.md, Telemetry): the first
/// offending reading, in sample order (GPUs in index order within a sample).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum TelemetryViolation {
    /// A hardware throttle reason: `hw_slowdown`, `hw_thermal_slowdown` or
    /// `hw_power_brake_slowdown`.
    Throttled {
        /// The sample's time, ms.
        t_ms: u64,
        /// The GPU's index.
        device: u32,
        /// The reason.
        reason: ThrottleReason,
    },
    /// A critical XID error.
    Xid {
        /// The sample's time, ms.
        t_ms: u64,
        /// The GPU's index.
        device: u32,
        /// The XID.
        xid: u64,
    },
    /// A busy GPU's SM clock below the campaign's `min_sm_clock_mhz`.
    SmClockBelow {
        /// The sample's time, ms.
        t_ms: u64,
        /// The GPU's index.
        device: u32,
        /// The clock read, MHz.
        mhz: u32,
        /// The campaign's bound, MHz.
        min_mhz: u32,
    },
}

impl std::fmt::Display for TelemetryViolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TelemetryViolation::Throttled {
                t_ms,
                device,
                reason,
            } => write!(
                f,
                "GPU {device} throttled ({}) at {t_ms} ms",
                reason.as_str()
            ),
            TelemetryViolation::Xid { t_ms, device, xid } => {
                write!(f, "GPU {device} raised XID {xid} at {t_ms} ms")
            }
            TelemetryViolation::SmClockBelow {
                t_ms,
                device,
                mhz,
                min_mhz,
            } => write!(
                f,
                "GPU {device}'s SM clock was {mhz} MHz at {t_ms} ms, below the campaign's \
                 min_sm_clock_mhz of {min_mhz}"
            ),
        }
    }
}

/// A run's telemetry as its pass row records it (v9): the file and what
/// `rules::telemetry::summarize` reads from it, which the verifier recomputes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunTelemetry {
    /// Bundle-relative path of the [`TelemetryFile`].
    pub file: String,
    /// What sampled the run.
    pub source: TelemetrySource,
    /// Samples taken.
    pub samples: u32,
    /// The longest time between two samples (the first from the run's start), ms.
    pub max_gap_ms: u64,
    /// The highest steal of any sample, permille.
    pub max_steal_permille: u32,
    /// The lowest CPU clock of any sample, kHz; absent where unavailable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_cpu_freq_khz: Option<u64>,
    /// The lowest SM clock of a busy GPU (no `gpu_idle` reason), MHz; absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_sm_clock_mhz: Option<u32>,
    /// The highest GPU temperature, °C; absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_temperature_c: Option<u32>,
    /// The highest power draw of a GPU, mW; absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_power_mw: Option<u32>,
    /// GPU readings under the software power cap (recorded only).
    pub sw_power_cap_readings: u32,
    /// GPU readings under software thermal slowdown (recorded only).
    pub sw_thermal_readings: u32,
    /// What makes the run invalid, when anything does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub violation: Option<TelemetryViolation>,
}
