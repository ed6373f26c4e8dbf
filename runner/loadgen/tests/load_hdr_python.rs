//! Interop: the histogram blobs referee stores decode with Python's `hdrhistogram`
//! package (0.10.8) to the same total count, min, max and per-bucket counts
//! (content/measurement.md: compare decoded counts, not percentiles, which Python ranks
//! differently), through `tests/python/hdr_decode.py`.
//!
//! It needs an interpreter outside cargo, so it is `#[ignore]`d: `scripts/test` provisions
//! a venv and runs it with `--ignored` and `REFEREE_PYTHON` set. Run that way, it fails
//! when `REFEREE_PYTHON` is unset or lacks the module — it never skips.

use std::io::Write;
use std::process::{Command, Stdio};

use receipts::rules::histogram::{decode_histogram, encode_histogram, new_latency_histogram};

/// The interpreter named by `REFEREE_PYTHON`; panics when it is unset or cannot import
/// `hdrh`.
fn python() -> String {
    let python = match std::env::var("REFEREE_PYTHON") {
        Ok(python) if !python.is_empty() => python,
        _ => panic!(
            "REFEREE_PYTHON is not set: point it at a Python with hdrhistogram==0.10.8, or run scripts/test"
        ),
    };
    let check = Command::new(&python)
        .args(["-c", "import hdrh.histogram"])
        .output()
        .unwrap_or_else(|e| panic!("REFEREE_PYTHON=`{python}` does not run: {e}"));
    assert!(
        check.status.success(),
        "REFEREE_PYTHON=`{python}` lacks hdrhistogram==0.10.8 (run scripts/test): {}",
        String::from_utf8_lossy(&check.stderr).trim()
    );
    python
}

#[test]
#[ignore = "needs python with securesystemslib and hdrhistogram: run scripts/test"]
fn interop_hdrhistogram_blobs_decode_to_the_same_counts() {
    let python = python();
    // Exact small values, a spread over many buckets, clamped huge values, and empty.
    let mut histograms = Vec::new();
    let mut h = new_latency_histogram();
    for v in 1..=100 {
        h.record(v).unwrap();
    }
    histograms.push(h);
    let mut h = new_latency_histogram();
    let mut x: u64 = 12345;
    for _ in 0..5000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        h.record((x >> 40) % 20_000_000 + 1).unwrap();
    }
    h.record_n(250_000, 17).unwrap();
    h.saturating_record(u64::MAX);
    histograms.push(h);
    histograms.push(new_latency_histogram());
    let blobs: Vec<String> = histograms
        .iter()
        .map(|h| encode_histogram(h).unwrap())
        .collect();

    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/python/hdr_decode.py"
    );
    let mut child = Command::new(&python)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("starting `{python}`: {e}"));
    {
        let mut stdin = child.stdin.take().unwrap();
        for blob in &blobs {
            writeln!(stdin, "{blob}").unwrap();
        }
    }
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{python} {script} failed");
    let lines: Vec<serde_json::Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), blobs.len());
    for (blob, decoded) in blobs.iter().zip(&lines) {
        assert!(blob.starts_with("HISTF"));
        let h = decode_histogram(blob).unwrap();
        let counts: Vec<serde_json::Value> = h
            .iter_recorded()
            .map(|b| {
                serde_json::json!([
                    h.highest_equivalent(b.value_iterated_to()),
                    b.count_at_value()
                ])
            })
            .collect();
        let expected = serde_json::json!({
            "total": h.len(),
            "min": h.min(),
            "max": h.max(),
            "counts": counts,
        });
        assert_eq!(decoded, &expected);
    }
}
