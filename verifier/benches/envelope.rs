//! Trust-core benchmarks (issues 2 and 13, Performance): the envelope and files stage
//! (checks 1–6, `verify_envelope_and_files`) against its floor measured in the same run.
//!
//! - `small_<size>`: an archive of 10,000 single-signature bundles (one small artifact
//!   file each; the predicate `{"i": n}` for `tiny`, a ~3.5 KiB one for `3k5`), verified
//!   one at a time (`verify`) and over all cores (`verify_rayon`), beside `floor`: a bare
//!   `ed25519_dalek::VerifyingKey::verify_strict` over each bundle's PAE plus sha256 of
//!   each bundle's file bytes, from memory. The `stage/*` benchmarks time each step of
//!   the stage alone with the crate's public functions, over the same bundles, so their
//!   sum shows where `verify` spends its time beyond the floor.
//! - `round_bundle_8_entries_1MiB_logs`: seal and verify of a bundle with 1 MiB of logs
//!   in 24 files, beside its floor (one signature plus sha256 of the same bytes); and
//!   `large_bundle_one_64MiB_file`, the same for one 64 MiB file, where the cost per file
//!   no longer counts and the stage is the file's read and hash.
//! - `primitives`: the raw Ed25519 and sha256 rates.
//!
//! Bundles are written under `/dev/shm` when it exists (the work disk creates small files
//! ~15× slower on this kind of machine). Run: `cargo bench -p verifier --bench envelope`
//! (until issue 38 moved the checks into `verifier`: `cargo bench -p receipts --bench receipts`).
#![expect(
    missing_docs,
    reason = "a bench exports nothing, but `criterion_group!` defines an undocumented `pub fn`"
)]

use std::path::{Path, PathBuf};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rayon::prelude::*;
use receipts::bundle::{self, ENVELOPE_FILE, MAX_ENVELOPE_BYTES, seal_bundle};
use receipts::canonical;
use receipts::dsse::{self, RawEnvelope};
use receipts::fsutil;
use receipts::keys::PrivateKey;
use receipts::model::{Sha256Hex, Timestamp};
use receipts::statement::{PredicateText, Statement};
use sha2::{Digest, Sha256};
use verifier::{VerifyOptions, verify_envelope_and_files};

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

fn options() -> VerifyOptions {
    VerifyOptions::at(Timestamp::from_unix_seconds(1_800_000_000).expect("time"))
}

/// The floor's Ed25519 check: the bare dalek call, no wrapper.
fn dalek_key(key: &PrivateKey) -> ed25519_dalek::VerifyingKey {
    ed25519_dalek::VerifyingKey::from_bytes(key.public().as_bytes()).expect("key")
}

/// One bundle held in memory: what the floor and the in-memory stages work on.
struct Loaded {
    dir: PathBuf,
    envelope: Vec<u8>,
    payload: Vec<u8>,
    pae: Vec<u8>,
    signatures: Vec<ed25519_dalek::Signature>,
    files: Vec<Vec<u8>>,
}

fn load(dir: &Path) -> Loaded {
    let envelope = std::fs::read(dir.join(ENVELOPE_FILE)).expect("envelope");
    let (raw, _) = RawEnvelope::parse(&envelope, MAX_ENVELOPE_BYTES).expect("parses");
    let decoded = raw.decode().expect("decodes");
    let signatures = decoded
        .signatures
        .iter()
        .map(|s| {
            ed25519_dalek::Signature::from_bytes(&<[u8; 64]>::try_from(&s.sig[..]).expect("64"))
        })
        .collect();
    let files = bundle::list_files(dir)
        .expect("list")
        .iter()
        .map(|e| std::fs::read(&e.path).expect("file"))
        .collect();
    Loaded {
        dir: dir.to_owned(),
        pae: dsse::pae(&decoded.payload_type, &decoded.payload),
        envelope,
        payload: decoded.payload,
        signatures,
        files,
    }
}

/// The floor of one bundle: every signature by a bare `verify_strict`, sha256 of every
/// file's bytes.
fn floor(key: &ed25519_dalek::VerifyingKey, bundle: &Loaded) -> bool {
    let signed = bundle
        .signatures
        .iter()
        .all(|s| key.verify_strict(&bundle.pae, s).is_ok());
    let digests = bundle
        .files
        .iter()
        .map(|f| Sha256::digest(f)[0])
        .fold(0u8, |a, b| a ^ b);
    signed && std::hint::black_box(digests) == digests
}

/// A predicate of about 3.5 KiB: 24 entries of a few integer and string fields.
fn predicate_3k5(i: usize) -> serde_json::Value {
    let entries: Vec<serde_json::Value> = (0..24)
        .map(|e| {
            serde_json::json!({
                "index": e,
                "miner": format!("miner-{e:03}"),
                "status": "scored",
                "throughputMilliRps": 12_345 + e * 7 + i,
                "scorePpm": e * 1000,
                "probeLog": format!("probes/entry-{e}.json"),
            })
        })
        .collect();
    serde_json::json!({"round": i, "entries": entries})
}

fn small_bundles(root: &Path, key: &PrivateKey, big: bool) -> Vec<PathBuf> {
    (0..SMALL_RECEIPTS)
        .map(|i| {
            let dir = root.join(i.to_string());
            std::fs::create_dir(&dir).expect("mkdir");
            std::fs::write(dir.join("result.json"), format!("{{\"i\":{i}}}")).expect("write");
            let predicate = if big {
                predicate_3k5(i)
            } else {
                serde_json::json!({"i": i})
            };
            seal_bundle(&dir, "https://example.com/bench/v1", &predicate, &[key]).expect("seal");
            dir
        })
        .collect()
}

fn bench_small(c: &mut Criterion, name: &str, big: bool) {
    let key = key();
    let ring = testkit::keyring(&[&key]);
    let dalek = dalek_key(&key);
    let root = scratch();
    let dirs = small_bundles(root.path(), &key, big);
    let loaded: Vec<Loaded> = dirs.iter().map(|d| load(d)).collect();
    let options = options();
    let parsed: Vec<serde_json::Value> = loaded
        .iter()
        .map(|b| canonical::parse_strict(&b.envelope, MAX_ENVELOPE_BYTES).expect("parses"))
        .collect();
    let statements: Vec<serde_json::Value> = loaded
        .iter()
        .map(|b| canonical::parse_strict(&b.payload, MAX_ENVELOPE_BYTES).expect("parses"))
        .collect();
    let raws: Vec<RawEnvelope> = loaded
        .iter()
        .map(|b| {
            RawEnvelope::parse(&b.envelope, MAX_ENVELOPE_BYTES)
                .expect("parses")
                .0
        })
        .collect();
    let envelope_bytes = loaded.iter().map(|b| b.envelope.len()).sum::<usize>();
    eprintln!(
        "{name}: {SMALL_RECEIPTS} bundles, envelope {} B, payload {} B each (mean)",
        envelope_bytes / SMALL_RECEIPTS,
        loaded.iter().map(|b| b.payload.len()).sum::<usize>() / SMALL_RECEIPTS
    );

    let mut group = c.benchmark_group(name);
    group.sample_size(10);
    group.throughput(Throughput::Elements(SMALL_RECEIPTS as u64));
    group.bench_function("verify", |b| {
        b.iter(|| {
            assert!(
                dirs.iter()
                    .all(|d| verify_envelope_and_files(d, &ring, &options).0.passed())
            )
        })
    });
    group.bench_function("floor", |b| {
        b.iter(|| assert!(loaded.iter().all(|l| floor(&dalek, l))))
    });
    let threads = rayon::current_num_threads();
    group.bench_function(BenchmarkId::new("verify_rayon", threads), |b| {
        b.iter(|| {
            assert!(
                dirs.par_iter()
                    .all(|d| verify_envelope_and_files(d, &ring, &options).0.passed())
            )
        })
    });
    group.bench_function(BenchmarkId::new("floor_rayon", threads), |b| {
        b.iter(|| assert!(loaded.par_iter().all(|l| floor(&dalek, l))))
    });

    // Each step alone, over the same bundles.
    group.bench_function("stage/read_envelope", |b| {
        b.iter(|| {
            for l in &loaded {
                let (file, length) =
                    fsutil::open_regular(&l.dir.join(ENVELOPE_FILE)).expect("regular");
                fsutil::read_to_limit(file, length, MAX_ENVELOPE_BYTES).expect("read");
            }
        })
    });
    // How the envelope was read before: `lstat` to refuse a symlink, then `open`, `fstat`
    // and `read` until a `read` returns 0.
    group.bench_function("stage/read_envelope_lstat_open", |b| {
        b.iter(|| {
            for l in &loaded {
                let path = l.dir.join(ENVELOPE_FILE);
                let kind = std::fs::symlink_metadata(&path).expect("meta").file_type();
                assert!(kind.is_file());
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(
                    &mut std::fs::File::open(&path).expect("open"),
                    &mut bytes,
                )
                .expect("read");
            }
        })
    });
    group.bench_function("stage/parse_envelope", |b| {
        b.iter(|| {
            for l in &loaded {
                RawEnvelope::parse(&l.envelope, MAX_ENVELOPE_BYTES).expect("parses");
            }
        })
    });
    group.bench_function("stage/canonical_envelope", |b| {
        b.iter(|| {
            for (l, value) in loaded.iter().zip(&parsed) {
                assert!(canonical::is_canonical(value, &l.envelope));
            }
        })
    });
    // What the canonical check cost before it compared in place: the value copied,
    // emitted by `serde_json_canonicalizer` into a new buffer, then compared.
    group.bench_function("stage/canonical_envelope_jcs_crate", |b| {
        b.iter(|| {
            for (l, value) in loaded.iter().zip(&parsed) {
                let copy = value.clone();
                canonical::check_integers(&copy).expect("integers");
                let bytes = serde_json_canonicalizer::to_vec(&copy).expect("jcs");
                assert!(bytes == l.envelope);
            }
        })
    });
    group.bench_function("stage/base64", |b| {
        b.iter(|| {
            for raw in &raws {
                std::hint::black_box(dsse::decode_base64(&raw.payload).expect("payload"));
                for s in &raw.signatures {
                    std::hint::black_box(dsse::decode_base64(&s.sig).expect("sig"));
                }
            }
        })
    });
    // What telling referee's base64 form cost before it was read off the text: each
    // field encoded again and compared.
    group.bench_function("stage/base64_reencode", |b| {
        b.iter(|| {
            for raw in &raws {
                let payload = dsse::decode_base64(&raw.payload).expect("payload");
                assert!(dsse::encode_base64(&payload) == raw.payload);
                for s in &raw.signatures {
                    let sig = dsse::decode_base64(&s.sig).expect("sig");
                    assert!(dsse::encode_base64(&sig) == s.sig);
                }
            }
        })
    });
    group.bench_function("stage/pae", |b| {
        b.iter(|| {
            for l in &loaded {
                std::hint::black_box(dsse::pae(dsse::IN_TOTO_PAYLOAD_TYPE, &l.payload));
            }
        })
    });
    group.bench_function("stage/signature", |b| {
        b.iter(|| {
            for l in &loaded {
                for s in &l.signatures {
                    assert!(dalek.verify_strict(&l.pae, s).is_ok());
                }
            }
        })
    });
    group.bench_function("stage/statement_digest", |b| {
        b.iter(|| {
            for l in &loaded {
                std::hint::black_box(Sha256Hex::digest(&l.payload));
            }
        })
    });
    // What verification does now: one strict scan (validation, canonical form, numbers),
    // then the Statement read with its predicate kept as text.
    group.bench_function("stage/scan_statement", |b| {
        b.iter(|| {
            for l in &loaded {
                let scan = canonical::scan_strict(&l.payload, MAX_ENVELOPE_BYTES).expect("scan");
                assert!(scan.integers);
                let statement: Statement<PredicateText> =
                    serde_json::from_slice(&l.payload).expect("statement");
                std::hint::black_box((scan, statement));
            }
        })
    });
    // What it did before: the payload parsed into a `Value`, its numbers walked, the
    // Statement taken from it (and the canonical check below compared the `Value`).
    group.bench_function("stage/parse_statement", |b| {
        b.iter(|| {
            for l in &loaded {
                let value =
                    canonical::parse_strict(&l.payload, MAX_ENVELOPE_BYTES).expect("parses");
                canonical::check_integers(&value).expect("integers");
                let statement: Statement = serde_json::from_value(value).expect("statement");
                std::hint::black_box(statement);
            }
        })
    });
    // The parse split: the strict validator (and serde skipping the value), serde
    // building the `Value` alone, and the Statement taken from the `Value`.
    group.bench_function("stage/parse_statement_validate_only", |b| {
        b.iter(|| {
            for l in &loaded {
                canonical::from_slice_strict::<serde::de::IgnoredAny>(
                    &l.payload,
                    MAX_ENVELOPE_BYTES,
                )
                .expect("parses");
            }
        })
    });
    group.bench_function("stage/parse_statement_serde_value_only", |b| {
        b.iter(|| {
            for l in &loaded {
                let value: serde_json::Value = serde_json::from_slice(&l.payload).expect("parses");
                std::hint::black_box(value);
            }
        })
    });
    group.bench_function("stage/canonical_statement", |b| {
        b.iter(|| {
            for (l, value) in loaded.iter().zip(&statements) {
                assert!(canonical::is_canonical(value, &l.payload));
            }
        })
    });
    group.bench_function("stage/canonical_statement_jcs_crate", |b| {
        b.iter(|| {
            for (l, value) in loaded.iter().zip(&statements) {
                let copy = value.clone();
                canonical::check_integers(&copy).expect("integers");
                let bytes = serde_json_canonicalizer::to_vec(&copy).expect("jcs");
                assert!(bytes == l.payload);
            }
        })
    });
    group.bench_function("stage/list_and_digest_files", |b| {
        b.iter(|| {
            for l in &loaded {
                for entry in bundle::list_files(&l.dir).expect("list") {
                    std::hint::black_box(bundle::file_sha256(&entry.path).expect("digest"));
                }
            }
        })
    });
    group.bench_function("stage/file_sha256_in_memory", |b| {
        b.iter(|| {
            for l in &loaded {
                for f in &l.files {
                    std::hint::black_box(Sha256::digest(f));
                }
            }
        })
    });
    group.finish();
}

fn bench_small_tiny(c: &mut Criterion) {
    bench_small(c, "small_tiny", false);
}

fn bench_small_3k5(c: &mut Criterion) {
    bench_small(c, "small_3k5", true);
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
    let ring = testkit::keyring(&[&key]);
    let dalek = dalek_key(&key);
    let dir = scratch();
    round_sized_bundle(dir.path());
    seal_bundle(
        dir.path(),
        "https://example.com/bench/v1",
        &predicate(),
        &[&key],
    )
    .expect("seal");
    let loaded = load(dir.path());
    let bytes: usize = loaded.files.iter().map(Vec::len).sum();
    let mut group = c.benchmark_group("round_bundle_8_entries_1MiB_logs");
    group.sample_size(20);
    group.throughput(Throughput::Bytes(bytes as u64));
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
    group.bench_function("floor", |b| b.iter(|| assert!(floor(&dalek, &loaded))));
    group.bench_function("stage/list_and_digest_files", |b| {
        b.iter(|| {
            for entry in bundle::list_files(dir.path()).expect("list") {
                std::hint::black_box(bundle::file_sha256(&entry.path).expect("digest"));
            }
        })
    });
    group.finish();
}

/// One 64 MiB file: the files stage against sha256 speed, per-file costs amortised.
fn bench_large_file(c: &mut Criterion) {
    let key = key();
    let ring = testkit::keyring(&[&key]);
    let dalek = dalek_key(&key);
    let dir = scratch();
    let data: Vec<u8> = (0..64u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    std::fs::write(dir.path().join("weights.bin"), &data).expect("write");
    seal_bundle(
        dir.path(),
        "https://example.com/bench/v1",
        &predicate(),
        &[&key],
    )
    .expect("seal");
    let loaded = load(dir.path());
    let mut group = c.benchmark_group("large_bundle_one_64MiB_file");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(data.len() as u64));
    group.bench_function("verify", |b| {
        b.iter(|| {
            assert!(
                verify_envelope_and_files(dir.path(), &ring, &options())
                    .0
                    .passed()
            )
        })
    });
    group.bench_function("floor", |b| b.iter(|| assert!(floor(&dalek, &loaded))));
    let file = dir.path().join("weights.bin");
    group.bench_function("stage/file_sha256", |b| {
        b.iter(|| bundle::file_sha256(&file).expect("digest"))
    });
    // How `file_sha256` hashed before: `io::copy` through its own 8 KiB buffer.
    group.bench_function("stage/file_sha256_io_copy_8KiB", |b| {
        b.iter(|| {
            let mut hasher = Sha256::new();
            std::io::copy(&mut std::fs::File::open(&file).expect("open"), &mut hasher)
                .expect("read");
            Sha256Hex::from_bytes(hasher.finalize().into())
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
    bench_large_file,
    bench_small_tiny,
    bench_small_3k5
);
criterion_main!(benches);
