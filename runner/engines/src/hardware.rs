//! The hardware fingerprint recorded at a round's setup and again at its teardown
//! (content/measurement.md, Paired comparison and drift: a round whose hardware changed is
//! invalid). CPU model and count from `/proc/cpuinfo`, the CPU features the matrix
//! kernels may use from `is_x86_feature_detected!`, memory from `/proc/meminfo`, OS and
//! kernel from `/etc/os-release` and `/proc/sys/kernel/osrelease`, and GPUs through the
//! CUDA driver API (`cudarc`, loaded dynamically, so the binary runs where no driver is
//! installed), and the driver, CUDA version, VBIOS and power limit through NVML
//! ([`crate::telemetry::gpu::inventory`], also loaded at run time).

use std::fs;

use receipts::model::{GpuInfo, HardwareFingerprint};

/// Probes the machine. Never fails: a value that cannot be read is recorded as
/// `unknown` (or 0), which still compares equal between setup and teardown on the same
/// machine.
pub fn fingerprint() -> HardwareFingerprint {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let meminfo = fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let os_release = fs::read_to_string("/etc/os-release").unwrap_or_default();
    HardwareFingerprint {
        cpu_model: cpu_model(&cpuinfo),
        cpu_count: std::thread::available_parallelism()
            .map(|n| u32::try_from(n.get()).unwrap_or(u32::MAX))
            .unwrap_or(0),
        cpu_features: cpu_features(),
        memory_bytes: memory_bytes(&meminfo),
        os: os_name(&os_release),
        kernel: fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_owned())
            .unwrap_or_else(|_| "unknown".into()),
        gpus: gpus(),
        nvml: Some(crate::telemetry::gpu::inventory()),
    }
}

/// The CPU features the engine's matrix kernels choose between at run time, as detected
/// on this CPU, in a fixed order (bit-exact logprobs are promised only on identical
/// features, content/measurement.md).
pub fn cpu_features() -> Vec<String> {
    #[cfg(target_arch = "x86_64")]
    {
        let detected = [
            ("sse2", std::arch::is_x86_feature_detected!("sse2")),
            ("sse4.1", std::arch::is_x86_feature_detected!("sse4.1")),
            ("avx", std::arch::is_x86_feature_detected!("avx")),
            ("avx2", std::arch::is_x86_feature_detected!("avx2")),
            ("fma", std::arch::is_x86_feature_detected!("fma")),
            ("f16c", std::arch::is_x86_feature_detected!("f16c")),
            ("avx512f", std::arch::is_x86_feature_detected!("avx512f")),
            ("avx512bw", std::arch::is_x86_feature_detected!("avx512bw")),
            ("avx512vl", std::arch::is_x86_feature_detected!("avx512vl")),
        ];
        detected
            .iter()
            .filter(|(_, on)| *on)
            .map(|(name, _)| (*name).to_owned())
            .collect()
    }
    #[cfg(target_arch = "aarch64")]
    {
        let detected = [
            ("neon", std::arch::is_aarch64_feature_detected!("neon")),
            ("fp16", std::arch::is_aarch64_feature_detected!("fp16")),
        ];
        detected
            .iter()
            .filter(|(_, on)| *on)
            .map(|(name, _)| (*name).to_owned())
            .collect()
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        Vec::new()
    }
}

/// The `model name` (x86) or `Model`/`CPU part` (ARM) of `/proc/cpuinfo` text.
fn cpu_model(cpuinfo: &str) -> String {
    ["model name", "Model", "CPU part"]
        .iter()
        .find_map(|key| {
            cpuinfo.lines().find_map(|line| {
                let (k, v) = line.split_once(':')?;
                (k.trim() == *key).then(|| v.trim().to_owned())
            })
        })
        .unwrap_or_else(|| "unknown".into())
}

/// `MemTotal` of `/proc/meminfo` text, in bytes.
fn memory_bytes(meminfo: &str) -> u64 {
    meminfo
        .lines()
        .find_map(|line| {
            let rest = line.strip_prefix("MemTotal:")?;
            let kib: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
            kib.checked_mul(1024)
        })
        .unwrap_or(0)
}

/// `PRETTY_NAME` of `/etc/os-release` text.
fn os_name(os_release: &str) -> String {
    os_release
        .lines()
        .find_map(|line| line.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim().trim_matches('"').to_owned())
        .unwrap_or_else(|| std::env::consts::OS.to_owned())
}

/// GPUs through the CUDA driver; empty when no driver library is present.
fn gpus() -> Vec<GpuInfo> {
    use cudarc::driver::{result, sys};
    // Without a driver library, cudarc 0.19's entry points panic: ask first.
    // SAFETY: `is_culib_present` only tries to load the library; it has no preconditions.
    if !unsafe { sys::is_culib_present() } {
        return Vec::new();
    }
    if result::init().is_err() {
        return Vec::new();
    }
    let mut driver_version: std::ffi::c_int = 0;
    // SAFETY: the library is loaded and initialised; the pointer is a valid local.
    let driver_version = match unsafe { sys::cuDriverGetVersion(&mut driver_version) } {
        sys::CUresult::CUDA_SUCCESS => driver_version.to_string(),
        _ => "unknown".to_owned(),
    };
    let count = result::device::get_count().unwrap_or(0);
    (0..count)
        .filter_map(|ordinal| {
            let device = result::device::get(ordinal).ok()?;
            let attribute = |a| {
                // SAFETY: `device` came from `cuDeviceGet` of an initialised driver.
                unsafe { result::device::get_attribute(device, a) }.unwrap_or(-1)
            };
            let major =
                attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
            let minor =
                attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
            Some(GpuInfo {
                name: result::device::get_name(device).unwrap_or_else(|_| "unknown".into()),
                uuid: result::device::get_uuid(device)
                    .map(|u| format_uuid(&u.bytes))
                    .unwrap_or_else(|_| "unknown".into()),
                // SAFETY: as above.
                memory_bytes: unsafe { result::device::total_mem(device) }
                    .map(|m| m as u64)
                    .unwrap_or(0),
                compute_capability: format!("{major}.{minor}"),
                driver_version: driver_version.clone(),
            })
        })
        .collect()
}

/// A CUDA UUID as nvidia-smi writes it: `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
fn format_uuid(bytes: &[std::ffi::c_char; 16]) -> String {
    let hex: String = bytes.iter().map(|b| format!("{:02x}", *b as u8)).collect();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_files() {
        let cpuinfo = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\nflags\t\t: fpu\n";
        assert_eq!(cpu_model(cpuinfo), "Intel(R) Xeon(R) CPU @ 2.20GHz");
        assert_eq!(cpu_model(""), "unknown");
        assert_eq!(
            memory_bytes("MemTotal:       24576000 kB\nMemFree: 1 kB\n"),
            24_576_000 * 1024
        );
        assert_eq!(
            os_name("NAME=\"Debian\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n"),
            "Debian GNU/Linux 12 (bookworm)"
        );
    }

    #[test]
    fn uuid_is_formatted_like_nvidia_smi() {
        let bytes: [std::ffi::c_char; 16] =
            core::array::from_fn(|i| (i as u8 * 17) as std::ffi::c_char);
        assert_eq!(
            format_uuid(&bytes),
            "GPU-00112233-4455-6677-8899-aabbccddeeff"
        );
    }

    #[test]
    fn fingerprint_is_stable_on_one_machine() {
        // Two probes a moment apart on the same machine compare equal: what the round's
        // teardown check relies on.
        assert_eq!(fingerprint(), fingerprint());
    }

    #[test]
    #[ignore = "needs a CUDA driver"]
    fn gpus_are_found_with_a_driver() {
        let gpus = gpus();
        assert!(!gpus.is_empty());
        for gpu in gpus {
            assert!(gpu.uuid.starts_with("GPU-"), "{gpu:?}");
            assert!(gpu.memory_bytes > 0, "{gpu:?}");
            assert_ne!(gpu.compute_capability, "-1.-1", "{gpu:?}");
        }
    }
}
