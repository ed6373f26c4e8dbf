//! The GPUs of a run's telemetry and of the hardware fingerprint, through NVML
//! (`nvml-wrapper`, which loads `libnvidia-ml` at run time: where it is absent or finds
//! no GPU, [`Gpus::open`] is `None` and the CPU twin samples alone). The one place GPU
//! code does not go through cudarc: NVML, not the CUDA driver, reports clocks, throttle
//! reasons, power, ECC and XID events.

use std::collections::BTreeSet;

use nvml_wrapper::bitmasks::device::ThrottleReasons;
use nvml_wrapper::bitmasks::event::EventTypes;
use nvml_wrapper::enum_wrappers::device::{Clock, EccCounter, MemoryError, TemperatureSensor};
use nvml_wrapper::enums::event::XidError;
use nvml_wrapper::{EventSet, Nvml};
use receipts::model::{GpuReading, NvmlGpu, NvmlInventory, ThrottleReason};

/// What the fingerprint records where NVML is absent or a value cannot be read.
pub const UNAVAILABLE: &str = "unavailable";

/// Each throttle reason NVML reports, with the name the file gives it, in file order.
const REASONS: [(ThrottleReasons, ThrottleReason); 9] = [
    (ThrottleReasons::GPU_IDLE, ThrottleReason::GpuIdle),
    (
        ThrottleReasons::APPLICATIONS_CLOCKS_SETTING,
        ThrottleReason::ApplicationsClocksSetting,
    ),
    (ThrottleReasons::SW_POWER_CAP, ThrottleReason::SwPowerCap),
    (ThrottleReasons::HW_SLOWDOWN, ThrottleReason::HwSlowdown),
    (ThrottleReasons::SYNC_BOOST, ThrottleReason::SyncBoost),
    (
        ThrottleReasons::SW_THERMAL_SLOWDOWN,
        ThrottleReason::SwThermalSlowdown,
    ),
    (
        ThrottleReasons::HW_THERMAL_SLOWDOWN,
        ThrottleReason::HwThermalSlowdown,
    ),
    (
        ThrottleReasons::HW_POWER_BRAKE_SLOWDOWN,
        ThrottleReason::HwPowerBrakeSlowdown,
    ),
    (
        ThrottleReasons::DISPLAY_CLOCK_SETTING,
        ThrottleReason::DisplayClockSetting,
    ),
];

/// The throttle reasons of NVML's bit mask `reasons`, in file order.
pub fn throttle_reasons(reasons: ThrottleReasons) -> Vec<ThrottleReason> {
    REASONS
        .iter()
        .filter(|(bit, _)| reasons.contains(*bit))
        .map(|(_, reason)| *reason)
        .collect()
}

/// NVML, loaded, with at least one GPU.
pub struct Gpus {
    nvml: Nvml,
    /// The sampled GPUs' UUIDs, in the order a reading's `device` indexes.
    uuids: Vec<String>,
    /// Their NVML indices, aligned with `uuids`.
    indices: Vec<u32>,
}

impl Gpus {
    /// Loads NVML and lists its GPUs; `None` where the library is absent, fails to
    /// initialise or finds no GPU (the CPU twin then samples alone).
    pub fn open() -> Option<Self> {
        // NVML's absence is this function's answer, not an error to report.
        let nvml = Nvml::init().ok()?;
        let count = nvml.device_count().ok().filter(|&n| n > 0)?;
        let uuids = (0..count)
            .map(|i| {
                nvml.device_by_index(i)
                    .and_then(|d| d.uuid())
                    .unwrap_or_else(|_| UNAVAILABLE.to_owned())
            })
            .collect();
        Some(Self {
            nvml,
            uuids,
            indices: (0..count).collect(),
        })
    }

    /// Only the GPUs named in `uuids` (a parallel run's lane: content/noise.md, Parallel
    /// passes), each reading's `device` then its position among them; every GPU where
    /// `uuids` names none NVML finds (placeholders, or a lane of no GPU).
    #[must_use]
    pub fn only(self, uuids: &[String]) -> Self {
        let kept: Vec<(String, u32)> = (self.uuids.iter().cloned())
            .zip(self.indices.iter().copied())
            .filter(|(uuid, _)| uuids.contains(uuid))
            .collect();
        if kept.is_empty() {
            return self;
        }
        let (uuids, indices) = kept.into_iter().unzip();
        Self {
            nvml: self.nvml,
            uuids,
            indices,
        }
    }

    /// The GPUs' UUIDs, by index (`unavailable` for one NVML could not name).
    pub fn uuids(&self) -> Vec<String> {
        self.uuids.clone()
    }

    /// An event set that receives every GPU's critical XID errors; `None` where NVML
    /// cannot register them (XIDs are then listed as unavailable).
    pub fn xid_events(&self) -> Option<EventSet<'_>> {
        let mut set = self.nvml.create_event_set().ok()?;
        for &i in &self.indices {
            let device = self.nvml.device_by_index(i).ok()?;
            set = device
                .register_events(EventTypes::CRITICAL_XID_ERROR, set)
                .ok()?;
        }
        Some(set)
    }

    /// Every GPU's reading now, with the XIDs `events` received since the last call,
    /// and the names of the readings NVML could not give (each missing value is absent
    /// from its reading and named once).
    pub fn readings(&self, events: Option<&EventSet<'_>>) -> (Vec<GpuReading>, Vec<&'static str>) {
        let mut missing = BTreeSet::new();
        let xids = match events {
            Some(set) => self.drain_xids(set),
            None => {
                missing.insert("xid");
                Vec::new()
            }
        };
        let mut readings = Vec::new();
        for (index, &nvml_index) in (0u32..).zip(&self.indices) {
            let Ok(device) = self.nvml.device_by_index(nvml_index) else {
                missing.insert("device");
                continue;
            };
            let throttle = match device.current_throttle_reasons() {
                Ok(bits) => throttle_reasons(bits),
                Err(_) => {
                    missing.insert("throttle");
                    Vec::new()
                }
            };
            let mut read = |name: &'static str, value: Option<u64>| {
                if value.is_none() {
                    missing.insert(name);
                }
                value
            };
            let to32 = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
            // Each `.ok()` below is a reading NVML cannot give on this GPU: recorded as
            // unavailable by `read`, never dropped silently.
            let reading = GpuReading {
                device: index,
                sm_clock_mhz: read(
                    "smClockMhz",
                    device.clock_info(Clock::SM).ok().map(u64::from),
                )
                .map(to32),
                mem_clock_mhz: read(
                    "memClockMhz",
                    device.clock_info(Clock::Memory).ok().map(u64::from),
                )
                .map(to32),
                throttle,
                power_mw: read("powerMw", device.power_usage().ok().map(u64::from)).map(to32),
                temperature_c: read(
                    "temperatureC",
                    device
                        .temperature(TemperatureSensor::Gpu)
                        .ok()
                        .map(u64::from),
                )
                .map(to32),
                ecc_uncorrected: read(
                    "eccUncorrected",
                    device
                        .total_ecc_errors(MemoryError::Uncorrected, EccCounter::Volatile)
                        .ok(),
                ),
                xid: xids
                    .iter()
                    .filter(|(d, _)| *d == index)
                    .map(|(_, xid)| *xid)
                    .collect(),
                pcie_link_width: read(
                    "pcieLinkWidth",
                    device.current_pcie_link_width().ok().map(u64::from),
                )
                .map(to32),
                pcie_link_gen: read(
                    "pcieLinkGen",
                    device.current_pcie_link_gen().ok().map(u64::from),
                )
                .map(to32),
            };
            readings.push(reading);
        }
        (readings, missing.into_iter().collect())
    }

    /// The XIDs waiting in `set`, as `(GPU index, XID)`; an XID NVML could not name is
    /// recorded as 0 (it still invalidates the run).
    fn drain_xids(&self, set: &EventSet<'_>) -> Vec<(u32, u64)> {
        let mut xids = Vec::new();
        // `wait(0)` returns at once: a timeout means no event is waiting.
        while let Ok(event) = set.wait(0) {
            let uuid = event.device.uuid().unwrap_or_default();
            let index = self
                .uuids
                .iter()
                .position(|u| *u == uuid)
                .and_then(|i| u32::try_from(i).ok())
                .unwrap_or(0);
            let xid = match event.event_data {
                Some(XidError::Value(xid)) => xid,
                Some(XidError::Unknown) | None => 0,
            };
            xids.push((index, xid));
        }
        xids
    }

    /// The hardware fingerprint's NVML part: driver, CUDA version, and per GPU its UUID,
    /// PCI bus id, VBIOS and enforced power limit.
    pub fn inventory(&self) -> NvmlInventory {
        let text = |r: Result<String, _>| {
            r.unwrap_or_else(|_: nvml_wrapper::error::NvmlError| UNAVAILABLE.to_owned())
        };
        NvmlInventory {
            driver: text(self.nvml.sys_driver_version()),
            cuda: self
                .nvml
                .sys_cuda_driver_version()
                .map(|v| format!("{}.{}", v / 1000, (v % 1000) / 10))
                .unwrap_or_else(|_| UNAVAILABLE.to_owned()),
            gpus: (self.indices.iter())
                .map(|&i| match self.nvml.device_by_index(i) {
                    Ok(device) => NvmlGpu {
                        uuid: text(device.uuid()),
                        bus_id: text(device.pci_info().map(|p| p.bus_id)),
                        vbios: text(device.vbios_version()),
                        power_limit_mw: device.enforced_power_limit().ok(),
                    },
                    Err(_) => NvmlGpu {
                        uuid: UNAVAILABLE.to_owned(),
                        bus_id: UNAVAILABLE.to_owned(),
                        vbios: UNAVAILABLE.to_owned(),
                        power_limit_mw: None,
                    },
                })
                .collect(),
        }
    }
}

/// The fingerprint's NVML part on this host: [`Gpus::inventory`], or `unavailable`
/// driver and CUDA and no GPU where NVML is absent.
pub fn inventory() -> NvmlInventory {
    match Gpus::open() {
        Some(gpus) => gpus.inventory(),
        None => NvmlInventory {
            driver: UNAVAILABLE.to_owned(),
            cuda: UNAVAILABLE.to_owned(),
            gpus: Vec::new(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttle_bits_map_to_reasons_in_file_order() {
        let bits = ThrottleReasons::HW_POWER_BRAKE_SLOWDOWN
            | ThrottleReasons::GPU_IDLE
            | ThrottleReasons::SW_POWER_CAP;
        assert_eq!(
            throttle_reasons(bits),
            vec![
                ThrottleReason::GpuIdle,
                ThrottleReason::SwPowerCap,
                ThrottleReason::HwPowerBrakeSlowdown
            ]
        );
        assert_eq!(throttle_reasons(ThrottleReasons::empty()), vec![]);
    }

    /// Needs a GPU (`scripts/gpu-check`): a lane of the last GPU samples that GPU only,
    /// as device 0; a lane NVML knows none of (placeholders) samples every GPU.
    #[test]
    #[ignore = "needs an NVIDIA GPU and its driver (scripts/gpu-check)"]
    fn gpu_a_lane_samples_only_its_own_gpus() {
        let all = Gpus::open().expect("NVML loads and finds a GPU").uuids();
        let last = all.last().expect("a GPU").clone();
        let lane = Gpus::open()
            .expect("NVML")
            .only(std::slice::from_ref(&last));
        assert_eq!(lane.uuids(), [last]);
        let (readings, _) = lane.readings(None);
        assert_eq!(readings.iter().map(|r| r.device).collect::<Vec<_>>(), [0]);
        let placeholder = Gpus::open()
            .expect("NVML")
            .only(&["placeholder".to_owned()]);
        assert_eq!(placeholder.uuids(), all);
    }

    /// Needs a GPU (`scripts/gpu-check`): NVML loads, finds the GPUs, and a reading of
    /// each gives its SM clock and its throttle reasons (a real read of NVML's mask), and
    /// the fingerprint's driver, VBIOS and UUIDs.
    #[test]
    #[ignore = "needs an NVIDIA GPU and its driver (scripts/gpu-check)"]
    fn gpu_nvml_reads_every_gpu() {
        let gpus = Gpus::open().expect("NVML loads and finds a GPU");
        let events = gpus.xid_events();
        let (readings, missing) = gpus.readings(events.as_ref());
        assert_eq!(readings.len(), gpus.uuids().len());
        assert!(
            readings
                .iter()
                .all(|r| r.sm_clock_mhz.is_some_and(|c| c > 0))
        );
        assert!(!missing.contains(&"throttle"), "missing: {missing:?}");
        let inventory = gpus.inventory();
        assert_ne!(inventory.driver, UNAVAILABLE);
        assert_ne!(inventory.cuda, UNAVAILABLE);
        assert!(inventory.gpus.iter().all(|g| g.uuid.starts_with("GPU-")));
        assert!(inventory.gpus.iter().all(|g| g.vbios != UNAVAILABLE));
        eprintln!("{inventory:?}\n{readings:?}\nunavailable: {missing:?}");
    }

    /// Without NVML (every CI machine), the fingerprint says so rather than guessing;
    /// with it, it names the driver.
    #[test]
    fn the_inventory_says_unavailable_exactly_without_nvml() {
        let inventory = inventory();
        if Gpus::open().is_some() {
            assert_ne!(inventory.driver, UNAVAILABLE);
        } else {
            assert_eq!(
                (inventory.driver.as_str(), inventory.cuda.as_str()),
                (UNAVAILABLE, UNAVAILABLE)
            );
            assert!(inventory.gpus.is_empty());
        }
    }
}
