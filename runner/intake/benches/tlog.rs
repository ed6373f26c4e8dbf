//! Transparency-log benchmarks (issue 19, Performance): the store's appends, inclusion
//! proofs generated from the tiles and verified, consistency proofs across 10⁶ entries,
//! and one Ed25519 verification in the same run for comparison.
//!
//! - `append_100k`: a log of 100,000 entries (referee entries of 130–140 bytes) is built in
//!   appends of 1,000 and timed once (printed); `append/one_entry` is one more append of
//!   one entry to it (lock, checkpoint opened and checked against the tiles, right-edge
//!   tiles and bundle written, checkpoint signed and written) — what a round does twice.
//! - `inclusion/prove_100k`, `inclusion/verify_100k`: an inclusion proof of a leaf of the
//!   100,000-entry log from its tiles on disk, and its verification (`log₂ n` hashes).
//! - `consistency/prove_1M`, `consistency/verify_1M`: a consistency proof between a
//!   random older size and 10⁶ entries, from the tiles, and its verification.
//! - `ed25519/verify_strict`: one signature verification, the yardstick.
//!
//! Tile storage per entry is printed after the 10⁶ log is built (hash tiles and entry
//! bundles apart). Files go under `/dev/shm` when it exists. Run: `cargo bench -p intake
//! --bench tlog`.
#![expect(
    missing_docs,
    reason = "a bench exports nothing, but `criterion_group!` defines an undocumented `pub fn`"
)]

use std::path::Path;
use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};
use intake::tlog::LogStore;
use receipts::keys::PrivateKey;
use receipts::tlog::entry::{EntryKind, LogEntry};
use receipts::tlog::merkle::{leaf_hash, verify_consistency, verify_inclusion};

fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        tempfile::tempdir_in(shm).expect("tempdir in /dev/shm")
    } else {
        tempfile::tempdir().expect("tempdir")
    }
}

/// Entry `i`: a round-opened or receipt entry of round `i / 2` of campaign `demo`.
fn entry(i: u64) -> Vec<u8> {
    let kind = if i.is_multiple_of(2) {
        EntryKind::RoundOpened
    } else {
        EntryKind::Receipt
    };
    LogEntry::for_envelope(
        "demo".parse().expect("id"),
        Some(i / 2),
        kind,
        &i.to_be_bytes(),
    )
    .to_bytes()
    .expect("entry")
}

/// A log of `size` entries in `dir`, appended `batch` at a time; the seconds it took.
fn build(dir: &Path, key: &PrivateKey, size: u64, batch: u64) -> (LogStore, f64) {
    let store = LogStore::init(dir, "bench.example/log", key).expect("init");
    let started = Instant::now();
    let mut next = 0;
    while next < size {
        let end = (next + batch).min(size);
        let entries: Vec<Vec<u8>> = (next..end).map(entry).collect();
        store.append(key, &entries).expect("append");
        next = end;
    }
    (store, started.elapsed().as_secs_f64())
}

/// Bytes of the files under `dir` whose path contains `part`.
fn bytes_under(dir: &Path, part: &str) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let path = e.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.to_string_lossy().contains(part) {
                total += e.metadata().map_or(0, |m| m.len());
            }
        }
    }
    total
}

/// A deterministic stream of indices below `n`.
struct Picks(u64);

impl Picks {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 11) % n
    }
}

fn benches(c: &mut Criterion) {
    let key = PrivateKey::from_seed(&[9; 32]);
    let dir = scratch();
    let (store, seconds) = build(dir.path(), &key, 100_000, 1_000);
    eprintln!(
        "append_100k: 100,000 entries in appends of 1,000: {seconds:.2} s ({:.0} entries/s)",
        100_000.0 / seconds
    );
    let log = store.verifier(key.public()).expect("verifier");
    let mut next = 100_000;
    c.bench_function("append/one_entry", |b| {
        b.iter(|| {
            store.append(&key, &[entry(next)]).expect("append");
            next += 1;
        })
    });
    let size = 100_000;
    let mut picks = Picks(1);
    c.bench_function("inclusion/prove_100k", |b| {
        b.iter(|| store.prove(&log, picks.next(size), size).expect("prove"))
    });
    let root = receipts::tlog::merkle::tree_root(
        &receipts::tlog::tiles::TiledTree {
            source: &store,
            size,
        },
        size,
    )
    .expect("root");
    let proofs: Vec<(u64, [u8; 32], Vec<[u8; 32]>)> = (0..256)
        .map(|_| {
            let i = picks.next(size);
            (
                i,
                leaf_hash(&entry(i)),
                store.prove(&log, i, size).expect("prove"),
            )
        })
        .collect();
    let mut k = 0;
    c.bench_function("inclusion/verify_100k", |b| {
        b.iter(|| {
            let (i, leaf, proof) = &proofs[k % proofs.len()];
            k += 1;
            verify_inclusion(leaf, *i, size, proof, &root).expect("verifies")
        })
    });
    let message = [7u8; 200];
    let signature = key.sign(&message);
    c.bench_function("ed25519/verify_strict", |b| {
        b.iter(|| assert!(key.public().verify_strict(&message, &signature)))
    });
    drop(store);
    drop(dir);

    let dir = scratch();
    let million = 1_000_000;
    let (store, seconds) = build(dir.path(), &key, million, 10_000);
    let log = store.verifier(key.public()).expect("verifier");
    let hashes = bytes_under(&dir.path().join("log/tile"), "tile/")
        - bytes_under(&dir.path().join("log/tile"), "entries");
    let bundles = bytes_under(&dir.path().join("log/tile"), "entries");
    eprintln!(
        "log of 10^6 entries built in appends of 10,000 in {seconds:.1} s; tile storage per entry: {:.1} bytes of hash tiles, {:.1} bytes of entry bundles (all right-edge partial tiles kept)",
        hashes as f64 / million as f64,
        bundles as f64 / million as f64
    );
    let tree = receipts::tlog::tiles::TiledTree {
        source: &store,
        size: million,
    };
    let mut roots = std::collections::HashMap::new();
    let mut olds: Vec<u64> = (0..64).map(|_| 1 + picks.next(million - 1)).collect();
    olds.sort_unstable();
    for &old in &olds {
        let r = receipts::tlog::merkle::tree_root(&tree, old).expect("root");
        roots.insert(old, r);
    }
    let new_root = receipts::tlog::merkle::tree_root(&tree, million).expect("root");
    let mut k = 0;
    c.bench_function("consistency/prove_1M", |b| {
        b.iter(|| {
            let old = olds[k % olds.len()];
            k += 1;
            store.consistency(&log, old, million).expect("prove")
        })
    });
    let consistency: Vec<(u64, Vec<[u8; 32]>)> = (olds.iter())
        .map(|&old| (old, store.consistency(&log, old, million).expect("prove")))
        .collect();
    c.bench_function("consistency/verify_1M", |b| {
        b.iter(|| {
            let (old, proof) = &consistency[k % consistency.len()];
            k += 1;
            verify_consistency(*old, million, proof, &roots[old], &new_root).expect("consistent")
        })
    });
}

criterion_group!(tlog, benches);
criterion_main!(tlog);
