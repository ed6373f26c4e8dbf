//! The telemetry validity rules on hand-written sample files
//! (`tests/fixtures/telemetry/`): each hardware reason, an XID and a slow SM clock make a
//! run invalid at their exact reading; the software power cap and software thermal
//! slowdown, an idle GPU's low clock and the CPU twin are recorded only.

use receipts::canonical::from_slice_strict;
use receipts::model::{
    RunTelemetry, TelemetryFile, TelemetrySource, TelemetryViolation, ThrottleReason,
};
use receipts::rules::telemetry::{summarize, violation};

fn sample(name: &str) -> TelemetryFile {
    let path = format!(
        "{}/tests/fixtures/telemetry/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let bytes = std::fs::read(&path).expect("a sample file");
    from_slice_strict(&bytes, 1 << 20).expect("a telemetry file")
}

/// The GPU file's summary: only `violation` differs between its variants.
fn gpu_summary(violation: Option<TelemetryViolation>) -> RunTelemetry {
    RunTelemetry {
        file: "telemetry/run.json".to_owned(),
        source: TelemetrySource::Nvml,
        samples: 2,
        max_gap_ms: 80,
        max_steal_permille: 0,
        min_cpu_freq_khz: Some(1_900_000),
        // GPU 1's 345 MHz at 80 ms is idle (`gpu_idle`): not a busy clock.
        min_sm_clock_mhz: Some(1_755),
        max_temperature_c: Some(84),
        max_power_mw: Some(700_000),
        sw_power_cap_readings: 2,
        sw_thermal_readings: 1,
        violation,
    }
}

/// A VM's CPU twin: no clock, no GPU, never invalid (steal has its own rule).
#[test]
fn the_cpu_twin_is_recorded_only() {
    let file = sample("cpu-vm.json");
    assert_eq!(file.unavailable, vec!["cpuFreqKhz".to_owned()]);
    assert_eq!(
        summarize(&file, "telemetry/run.json", Some(1_500)),
        RunTelemetry {
            file: "telemetry/run.json".to_owned(),
            source: TelemetrySource::Cpu,
            samples: 3,
            max_gap_ms: 169,
            max_steal_permille: 12,
            min_cpu_freq_khz: None,
            min_sm_clock_mhz: None,
            max_temperature_c: None,
            max_power_mw: None,
            sw_power_cap_readings: 0,
            sw_thermal_readings: 0,
            violation: None,
        }
    );
}

/// Software power capping and software thermal slowdown are counted, not judged.
#[test]
fn software_throttling_is_recorded_only() {
    let file = sample("gpu-recorded-only.json");
    assert_eq!(
        summarize(&file, "telemetry/run.json", None),
        gpu_summary(None)
    );
    // 1755 MHz is the lowest busy clock: a bound at it passes, one above it does not.
    assert_eq!(violation(&file, Some(1_755)), None);
    assert_eq!(
        violation(&file, Some(1_756)),
        Some(TelemetryViolation::SmClockBelow {
            t_ms: 160,
            device: 0,
            mhz: 1_755,
            min_mhz: 1_756
        })
    );
}

/// Each hardware reason invalidates the run at its reading: GPU 1 at 160 ms.
#[test]
fn a_hardware_throttle_reason_invalidates_the_run() {
    for (name, reason) in [
        ("gpu-hw-slowdown.json", ThrottleReason::HwSlowdown),
        ("gpu-hw-thermal.json", ThrottleReason::HwThermalSlowdown),
        ("gpu-power-brake.json", ThrottleReason::HwPowerBrakeSlowdown),
    ] {
        let expected = TelemetryViolation::Throttled {
            t_ms: 160,
            device: 1,
            reason,
        };
        assert_eq!(
            summarize(&sample(name), "telemetry/run.json", None),
            gpu_summary(Some(expected)),
            "{name}"
        );
    }
}

/// An XID invalidates the run; GPU 0's XID comes before GPU 1's slowdown in the same
/// sample.
#[test]
fn an_xid_invalidates_the_run() {
    let violation = violation(&sample("gpu-xid.json"), None);
    assert_eq!(
        violation,
        Some(TelemetryViolation::Xid {
            t_ms: 160,
            device: 0,
            xid: 79
        })
    );
    assert_eq!(
        violation.map(|v| v.to_string()).as_deref(),
        Some("GPU 0 raised XID 79 at 160 ms")
    );
}

/// The file format is strict: an unknown field or reason is refused, not ignored.
#[test]
fn unknown_fields_and_reasons_are_refused() {
    let text = std::fs::read_to_string(format!(
        "{}/tests/fixtures/telemetry/gpu-recorded-only.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("a sample file");
    let renamed = text.replace("sw_thermal_slowdown", "hw_thermal_maybe");
    assert!(serde_json::from_str::<TelemetryFile>(&renamed).is_err());
    let extra = text.replacen("\"format\": 1", "\"format\": 1, \"hidden\": true", 1);
    assert!(serde_json::from_str::<TelemetryFile>(&extra).is_err());
}
