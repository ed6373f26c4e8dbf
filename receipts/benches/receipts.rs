//! Trust-core benchmarks (issue 2, Performance): seal and verify of a round-sized bundle
//! (8 entries, 1 MiB of logs); verify throughput over 10,000 small receipts on one core
//! and on all cores (rayon); the raw Ed25519 `verify_strict` and sha256 rates beside them.
//!
//! Bundles are written under `/dev/shm` when it exists (the work disk creates small files
//! ~15× slower on this kind of machine). Run: `cargo bench -p receipts --bench receipts`.

use std::path::{Path, PathBuf};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rayon::prelude::*;
use receipts::bundle::seal_bundle;
use receipts::keys::{Keyring, PrivateKey, TrustedKey};
use receipts::model::{Sha256Hex, Timestamp};
use receipts::verify::{VerifyOptions, verify_envelope_and_files};

const SMALL_RECEIPTS: usize = 10_000;

fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        tempfile::tempdir_in(shm).expect("tempdir in /dev/shm")
    } else {
        tempfile::tempdir().expect("tempdir")
    }
}

fn key() -> PrivateKey {
    PrivateKey::from_seed(&[7u8; 32])
}

fn keyring(key: &PrivateKey) -> Keyring {
    Keyring::new(vec![TrustedKey {
        key: key.public().clone(),
        valid_from: Timestamp::from_unix_seconds(0).expect("epoch"),
        valid_until: None,
    }])
    .expect("keyring")
}

fn options() -> VerifyOptions {
    VerifyOptions::at(Timestamp::from_unix_seconds(1_800_000_000).expect("time"))
}

/// 8 entries, each with a 128 KiB engine log, a probe log and a runs file: 1 MiB of logs.
fn round_sized_bundle(dir: &Path) {
    for entry in 0..8 {
        let entry_dir = dir.join(format!("entries/{entry}"));
        std::fs::create_dir_all(&entry_dir).expect("mkdir");
        let line = format!("entry {entry}: request done latencyUs=12345 tokens=128\n");
        let log: Vec<u8> = line.bytes().cycle().take(128 << 10).collect();
        std::fs::write(entry_dir.join("engine.log"), log).expect("write");
        std::fs::write(
            entry_dir.join("probes.jsonl"),
            b"{\"rateMilliRps\":1000,\"passed\":true}\n".repeat(64),
        )
        .expect("write");
        std::fs::write(
            entry_dir.join("runs.json"),
            format!("{{\"entry\":{entry}}}"),
        )
        .expect("write");
    }
}

fn predicate() -> serde_json::Value {
    serde_json::json!({"round": 1, "entries": (0..8).map(|i| serde_json::json!({"index": i, "scorePpm": i * 1000})).collect::<Vec<_>>()})
}

fn bench_round_bundle(c: &mut Criterion) {
    let key = key();
    let ring = keyring(&key);
    let dir = scratch();
    round_sized_bundle(dir.path());
    let mut group = c.benchmark_group("round_bundle_8_entries_1MiB_logs");
    group.sample_size(20);
    group.bench_function("seal", |b| {
        b.iter(|| {
            seal_bundle(
                dir.path(),
                "https://example.com/bench/v1",
                &predicate(),
                &[&key],
            )
            .expect("seal")
        })
    });
    group.bench_function("verify", |b| {
        b.iter(|| {
            assert!(
                verify_envelope_and_files(dir.path(), &ring, &options())
                    .0
                    .passed()
            )
        })
    });
    group.finish();
}

fn small_bundles(root: &Path, key: &PrivateKey) -> Vec<PathBuf> {
    (0..SMALL_RECEIPTS)
        .map(|i| {
            let dir = root.join(i.to_string());
            std::fs::create_dir(&dir).expect("mkdir");
            std::fs::write(dir.join("result.json"), format!("{{\"i\":{i}}}")).expect("write");
            seal_bundle(
                &dir,
                "https://example.com/bench/v1",
                &serde_json::json!({"i": i}),
                &[key],
            )
            .expect("seal");
            dir
        })
        .collect()
}

fn bench_many_receipts(c: &mut Criterion) {
    let key = key();
    let ring = keyring(&key);
    let root = scratch();
    let bundles = small_bundles(root.path(), &key);
    let options = options();
    let mut group = c.benchmark_group("verify_10000_small_receipts");
    group.sample_size(10);
    group.throughput(Throughput::Elements(SMALL_RECEIPTS as u64));
    group.bench_function(BenchmarkId::new("threads", 1), |b| {
        b.iter(|| {
            assert!(
                bundles
                    .iter()
                    .all(|d| verify_envelope_and_files(d, &ring, &options).0.passed())
            )
        })
    });
    let threads = rayon::current_num_threads();
    group.bench_function(BenchmarkId::new("threads", threads), |b| {
        b.iter(|| {
            assert!(
                bundles
                    .par_iter()
                    .all(|d| verify_envelope_and_files(d, &ring, &options).0.passed())
            )
        })
    });
    group.finish();
}

fn bench_primitives(c: &mut Criterion) {
    let key = key();
    let message = vec![0x5au8; 512];
    let signature = key.sign(&message);
    let mut group = c.benchmark_group("primitives");
    group.throughput(Throughput::Elements(1));
    group.bench_function("ed25519_verify_strict_512B", |b| {
        b.iter(|| assert!(key.public().verify_strict(&message, &signature)))
    });
    group.finish();
    let data = vec![0xa5u8; 1 << 20];
    let mut group = c.benchmark_group("primitives");
    group.throughput(Throughput::Bytes(data.len() as u64));
    group.bench_function("sha256_1MiB", |b| b.iter(|| Sha256Hex::digest(&data)));
    group.finish();
}

criterion_group!(
    benches,
    bench_primitives,
    bench_round_bundle,
    bench_many_receipts
);
criterion_main!(benches);
