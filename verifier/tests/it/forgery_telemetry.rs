//! The forgeries of v9's telemetry check (content/verifying.md, `host.telemetry`;
//! content/measurement.md, Telemetry): `fixtures/v9-round`, a real v9 round, changed the
//! way an evaluator holding the key could — the telemetry file or the receipt edited,
//! every subject digest updated, the Statements re-signed. A throttled sample cannot be
//! hidden: the summary is recomputed from the file.

use std::path::Path;

use crate::forge::*;
use receipts::model::{RunTelemetry, TelemetryFile};
use receipts::rules::telemetry::summarize;
use serde_json::{Value, json};
use verifier::{CheckName, VerifyReport};

/// The challenger's (entry 1's) run of pass 1: its telemetry file.
pub(crate) const CHALLENGER_TELEMETRY: &str = "telemetry/candidate-1-miner-fast-pass-1.json";

/// Forges `fixtures/v9-round` with `files` and `receipt` and verifies it.
fn forged_v9(files: impl FnOnce(&Path), receipt: impl FnOnce(&Path, &mut Value)) -> VerifyReport {
    forged_fixture("v9-round", files, receipt)
}

/// One GPU reading, as NVML's sampler writes it: a card at its software power cap, busy
/// at 1755 MHz, plus `throttle`.
fn gpu_reading(throttle: &[&str]) -> Value {
    let mut reasons = vec!["sw_power_cap"];
    reasons.extend_from_slice(throttle);
    json!({
        "device": 0, "smClockMhz": 1755, "memClockMhz": 2619, "throttle": reasons,
        "powerMw": 700000, "temperatureC": 84, "eccUncorrected": 0,
        "pcieLinkWidth": 16, "pcieLinkGen": 5
    })
}

/// Turns the challenger's telemetry file into an NVML one: one GPU, every sample with
/// [`gpu_reading`] and, at the middle sample, `throttle` as well. Returns the middle
/// sample's time.
fn add_gpu(dir: &Path, throttle: &[&str]) -> u64 {
    let mut middle_t = 0;
    edit_json(dir, CHALLENGER_TELEMETRY, |file| {
        file["source"] = json!("nvml");
        file["gpus"] = json!(["GPU-5b2a6f1e-0000-4d1c-9a7e-2f6c1d3b4a59"]);
        let samples = file["samples"].as_array_mut().expect("samples");
        let middle = samples.len() / 2;
        for (i, sample) in samples.iter_mut().enumerate() {
            let extra: &[&str] = if i == middle { throttle } else { &[] };
            sample["gpus"] = json!([gpu_reading(extra)]);
            if i == middle {
                middle_t = sample["tMs"].as_u64().expect("tMs");
            }
        }
    });
    middle_t
}

/// The summary `rules::telemetry` gives the challenger's telemetry file in `dir` as it is.
fn summary_of(dir: &Path) -> RunTelemetry {
    let bytes = std::fs::read(dir.join(CHALLENGER_TELEMETRY)).expect("telemetry file");
    let file: TelemetryFile = serde_json::from_slice(&bytes).expect("a telemetry file");
    summarize(&file, CHALLENGER_TELEMETRY, None)
}

/// A derived round that passes every check: the challenger's run sampled a GPU at its
/// software power cap and thermal slowdown (recorded only) on a host with cpufreq, the
/// summary recomputed into the receipt.
pub(crate) fn gpu_recorded_only(dir: &Path, predicate: &mut Value) {
    add_gpu(dir, &["sw_thermal_slowdown"]);
    edit_json(dir, CHALLENGER_TELEMETRY, |file| {
        file.as_object_mut().expect("file").remove("unavailable");
        for (i, sample) in (0u64..).zip(file["samples"].as_array_mut().expect("samples")) {
            sample["cpu"]["freqKhz"] = json!(2_100_000 - 1_000 * (i % 3));
        }
    });
    predicate["entries"][1]["passes"][0]["telemetry"] =
        serde_json::to_value(summary_of(dir)).expect("json");
}

#[test]
fn the_v9_round_records_telemetry_for_every_run() {
    let report = forged_v9(|_| {}, |_, _| {});
    assert!(report.passed(), "{:#?}", failed(&report));
    // Two hardware fingerprints, and the round's one pass: the baseline's run, its A/A
    // control and the challenger's run.
    assert_eq!(passed(&report, CheckName::HostTelemetry), 5);
}

/// The GPU's software power cap and software thermal slowdown are recorded, and the run
/// counts.
#[test]
fn software_throttling_is_recorded_and_the_run_counts() {
    let report = forged_v9(|_| {}, gpu_recorded_only);
    assert!(report.passed(), "{:#?}", failed(&report));
}

/// The attack: a hardware slowdown in the run's file, the receipt re-signed with the
/// summary of the file without it (and the run still `measured`). The summary recomputed
/// from the file names the violation.
#[test]
fn a_throttled_sample_hidden_by_a_resigned_receipt_is_caught() {
    let mut t = 0;
    let report = forged_v9(
        |_| {},
        |dir, p| {
            add_gpu(dir, &[]);
            p["entries"][1]["passes"][0]["telemetry"] =
                serde_json::to_value(summary_of(dir)).expect("json");
            t = add_gpu(dir, &["hw_slowdown"]);
        },
    );
    assert_eq!(
        only(&report, CheckName::HostTelemetry),
        recomputed(
            "receipt.dsse.json",
            "entries[1].passes[0].telemetry.violation",
            "none",
            &format!(r#"{{"device":0,"kind":"throttled","reason":"hw_slowdown","tMs":{t}}}"#)
        )
    );
}

/// An XID hidden the same way is caught the same way.
#[test]
fn an_xid_hidden_by_a_resigned_receipt_is_caught() {
    let report = forged_v9(
        |_| {},
        |dir, p| {
            add_gpu(dir, &[]);
            p["entries"][1]["passes"][0]["telemetry"] =
                serde_json::to_value(summary_of(dir)).expect("json");
            edit_json(dir, CHALLENGER_TELEMETRY, |file| {
                file["samples"][0]["gpus"][0]["xid"] = json!([79]);
            });
        },
    );
    let t = summary_of_fixture_first_sample();
    assert_eq!(
        only(&report, CheckName::HostTelemetry),
        recomputed(
            "receipt.dsse.json",
            "entries[1].passes[0].telemetry.violation",
            "none",
            &format!(r#"{{"device":0,"kind":"xid","tMs":{t},"xid":79}}"#)
        )
    );
}

/// The time of the first sample of the challenger's telemetry file in the fixture.
fn summary_of_fixture_first_sample() -> u64 {
    let bytes = std::fs::read(fixture_named("v9-round").join(CHALLENGER_TELEMETRY))
        .expect("telemetry file");
    let file: TelemetryFile = serde_json::from_slice(&bytes).expect("a telemetry file");
    file.samples[0].t_ms
}

/// The violation written into the receipt, the run still counted: its status must be
/// `invalid`.
#[test]
fn a_violation_recorded_on_a_counted_run_fails() {
    let mut t = 0;
    let report = forged_v9(
        |_| {},
        |dir, p| {
            t = add_gpu(dir, &["hw_power_brake_slowdown"]);
            p["entries"][1]["passes"][0]["telemetry"] =
                serde_json::to_value(summary_of(dir)).expect("json");
        },
    );
    assert_eq!(
        only(&report, CheckName::HostTelemetry),
        recomputed(
            "receipt.dsse.json",
            "entries[1].passes[0].status",
            "Measured",
            &format!("Invalid (telemetry: GPU 0 throttled (hw_power_brake_slowdown) at {t} ms)")
        )
    );
}

/// A run's telemetry dropped from the receipt (its file left unnamed): v9 requires it.
#[test]
fn a_run_without_telemetry_fails() {
    let report = forged_v9(
        |_| {},
        |_, p| {
            let row = p["entries"][1]["passes"][0].as_object_mut().expect("row");
            row.remove("telemetry");
        },
    );
    assert_eq!(
        only(&report, CheckName::HostTelemetry),
        recomputed(
            "receipt.dsse.json",
            "entries[1].passes[0].telemetry",
            "none",
            "a telemetry file and its summary (every run that reached its SLA run has one)"
        )
    );
}

/// The fingerprint's NVML record dropped at both ends (at one, the fingerprints differ
/// too): v9 requires it, `unavailable` without NVML.
#[test]
fn a_fingerprint_without_nvml_fails() {
    let report = forged_v9(
        |_| {},
        |_, p| {
            for end in ["atStart", "atEnd"] {
                let fingerprint = p["hardware"][end].as_object_mut().expect("fingerprint");
                fingerprint.remove("nvml");
            }
        },
    );
    only(&report, CheckName::HostTelemetry);
    let reason = |end: &str| {
        recomputed(
            "receipt.dsse.json",
            &format!("hardware.{end}.nvml"),
            "none",
            "NVML's driver, CUDA version and GPUs (`unavailable` without NVML)",
        )
    };
    assert_eq!(
        failures(&report),
        vec![
            (
                CheckName::HostTelemetry,
                Some("hardware.atStart.nvml".to_owned()),
                reason("atStart")
            ),
            (
                CheckName::HostTelemetry,
                Some("hardware.atEnd.nvml".to_owned()),
                reason("atEnd")
            ),
        ]
    );
}

/// The attack (issue 50): a parallel run claims its lane's GPU while its telemetry file
/// samples another (a healthy one standing for a throttled one). The file's GPUs are held
/// to the run's lane.
#[test]
fn a_parallel_runs_telemetry_of_another_gpu_is_caught() {
    let report = forged_v9(
        |_| {},
        |dir, p| {
            add_gpu(dir, &[]);
            p["entries"][1]["passes"][0]["telemetry"] =
                serde_json::to_value(summary_of(dir)).expect("json");
            p["entries"][1]["passes"][0]["gpus"] = json!([{
                "index": 1,
                "uuid": "GPU-0c4d1f2a-1111-4e2b-8c3d-5a6b7c8d9e0f",
                "busId": "00000000:19:00.0"
            }]);
        },
    );
    let reason = report
        .failures()
        .find(|c| c.name == CheckName::HostTelemetry)
        .and_then(|c| c.reason.clone())
        .expect("host.telemetry fails");
    assert_eq!(
        reason,
        recomputed(
            CHALLENGER_TELEMETRY,
            "gpus",
            r#"["GPU-5b2a6f1e-0000-4d1c-9a7e-2f6c1d3b4a59"]"#,
            r#"["GPU-0c4d1f2a-1111-4e2b-8c3d-5a6b7c8d9e0f"] (the GPUs of the run's lane)"#
        )
    );
}
