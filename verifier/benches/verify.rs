//! Verifier benchmarks (issue 13, Performance), each round bundle copied under `/dev/shm`
//! first:
//!
//! - `round/<name>/stage1`: the envelope and files stage of a round bundle — checks 1–6
//!   of the receipt (`verify_envelope_and_files`) plus steps 1–5 of its round-opened
//!   statement (two signatures) — beside `round/<name>/floor`: two bare
//!   `ed25519_dalek::VerifyingKey::verify_strict` calls over the same PAEs plus sha256 of
//!   every subject file's bytes, from memory.
//! - `round/<name>/verify_bundle`: every check; the recomputation stage is this minus
//!   `stage1`.
//! - `request_sequence/<name>`: the request-sequence digest regenerated from the
//!   bundle's campaign and seeds (and at the campaign defaults with the same seeds),
//!   items per second; `…/item_loop` is the same digest by the straightforward loop (every
//!   `Item` of `Workload::sub_stream` built, each element through
//!   `serde_json_canonicalizer`), kept here for the side-by-side and asserted equal.
//! - `archive`: 64 copies of the v2 fixture verified in parallel and one at a time.
//!
//! Bundles: `tests/fixtures/v2-round` always; a second round bundle from
//! `REFEREE_BENCH_ROUND` with its keyring `REFEREE_BENCH_KEYRING` (default: the demo's
//! `/tmp/demo-data/demo/rounds/1` and `/tmp/demo-data/keyring.json`, skipped when
//! absent). Run: `cargo bench -p verifier --bench verify`.
#![expect(
    missing_docs,
    reason = "a bench exports nothing, but `criterion_group!` defines an undocumented `pub fn`"
)]

use std::path::{Path, PathBuf};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use receipts::bundle::{self, ENVELOPE_FILE, MAX_ENVELOPE_BYTES};
use receipts::dsse::{self, Envelope};
use receipts::keys::Keyring;
use receipts::layout::CAMPAIGN_INPUT;
use receipts::model::{Campaign, FrozenCampaign, RevealedSeeds, RoundRecord, Sha256Hex};
use receipts::rules::workload::Workload;
use serde::Serialize;
use testkit::copy_dir;
use verifier::archive::verify_archive;
use verifier::{VerifyOptions, VerifyReport, verify_envelope, verify_envelope_and_files};

/// Copies of the fixture in the archive.
const COPIES: usize = 64;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        tempfile::tempdir_in(shm).expect("tempdir in /dev/shm")
    } else {
        tempfile::tempdir().expect("tempdir")
    }
}

/// A round bundle to measure, copied into `dir`.
struct RoundBundle {
    name: &'static str,
    dir: PathBuf,
    keyring: Keyring,
    record: RoundRecord,
    campaign: Campaign,
    /// The two PAEs (receipt, round-opened) with their signatures, for the floor.
    signed: Vec<(Vec<u8>, Vec<ed25519_dalek::Signature>)>,
    /// Every subject file's bytes.
    files: Vec<Vec<u8>>,
}

fn envelope(dir: &Path, file: &str) -> Envelope {
    let bytes = std::fs::read(dir.join(file)).expect("envelope");
    Envelope::from_json(&bytes, MAX_ENVELOPE_BYTES).expect("envelope parses")
}

fn round_bundle(name: &'static str, from: &Path, keyring: &Path, scratch: &Path) -> RoundBundle {
    let dir = scratch.join(name);
    copy_dir(from, &dir);
    let receipt = envelope(&dir, ENVELOPE_FILE);
    let statement: receipts::statement::Statement =
        serde_json::from_slice(&receipt.payload).expect("statement");
    let record: RoundRecord =
        serde_json::from_value(statement.predicate.clone()).expect("round record");
    let opened = envelope(&dir, &record.round_opened);
    let signed = [receipt, opened]
        .iter()
        .map(|e| {
            let signatures = e
                .signatures
                .iter()
                .map(|s| {
                    ed25519_dalek::Signature::from_bytes(
                        &<[u8; 64]>::try_from(&s.sig[..]).expect("64 bytes"),
                    )
                })
                .collect();
            (dsse::pae(&e.payload_type, &e.payload), signatures)
        })
        .collect();
    let files = bundle::list_files(&dir)
        .expect("list")
        .iter()
        .map(|e| std::fs::read(&e.path).expect("file"))
        .collect();
    let campaign_bytes = std::fs::read(dir.join(CAMPAIGN_INPUT)).expect("campaign copy");
    let campaign = FrozenCampaign::from_json(CAMPAIGN_INPUT, &campaign_bytes)
        .expect("campaign")
        .campaign;
    RoundBundle {
        name,
        dir,
        keyring: Keyring::load(keyring).expect("keyring"),
        record,
        campaign,
        signed,
        files,
    }
}

/// Checks 1–6 of the receipt and 1–5 of its round-opened statement.
fn stage1(bundle: &RoundBundle, options: &VerifyOptions) -> bool {
    let (mut report, statement) = verify_envelope_and_files(&bundle.dir, &bundle.keyring, options);
    let mut opened = VerifyReport::new(&bundle.dir);
    let opened_statement = verify_envelope(
        &bundle.dir,
        &bundle.record.round_opened,
        &bundle.keyring,
        options,
        &mut opened,
    );
    report.checks.extend(opened.checks);
    statement.is_some() && opened_statement.is_some() && report.passed()
}

/// The floor of [`stage1`]: the bare signature checks and sha256 of the same bytes.
fn floor(bundle: &RoundBundle, keys: &[ed25519_dalek::VerifyingKey]) -> bool {
    let signed = bundle.signed.iter().all(|(pae, signatures)| {
        signatures
            .iter()
            .all(|s| keys.iter().any(|k| k.verify_strict(pae, s).is_ok()))
    });
    let digests = bundle
        .files
        .iter()
        .map(|f| <sha2::Sha256 as sha2::Digest>::digest(f)[0])
        .fold(0u8, |a, b| a ^ b);
    signed && std::hint::black_box(digests) == digests
}

/// One element of the request-sequence list, as the spec names its fields.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DigestEntry<'a> {
    item_index: u32,
    prompt_sha256: &'a str,
    max_tokens: u32,
    arrival_unit_ns: u64,
}

/// The request-sequence digest by the straightforward loop: every item built, each
/// element canonicalised by `serde_json_canonicalizer`, the list hashed.
fn item_loop_digest(workload: &Workload) -> Sha256Hex {
    use sha2::Digest;
    let mut hasher = sha2::Sha256::new();
    hasher.update(b"[");
    let mut first = true;
    let mut add = |item: &receipts::rules::workload::Item| {
        let entry = DigestEntry {
            item_index: item.item_index,
            prompt_sha256: item.prompt_sha256.as_str(),
            max_tokens: item.max_tokens,
            arrival_unit_ns: item.arrival_unit_ns,
        };
        if !first {
            hasher.update(b",");
        }
        first = false;
        hasher.update(serde_json_canonicalizer::to_vec(&entry).expect("jcs"));
    };
    for sub_stream in 0..workload.runs() * workload.max_probes() {
        for item in workload.sub_stream(sub_stream) {
            add(&item);
        }
    }
    for item in workload.correctness_items() {
        add(&item);
    }
    hasher.update(b"]");
    Sha256Hex::from_bytes(hasher.finalize().into())
}

/// A campaign of default sizes (workload, rate search, runs, correctness).
fn default_campaign() -> Campaign {
    let text = r#"
id = "defaults"
[model]
name = "m"
[baseline]
repo = "b"
commit = "0123456789abcdef0123456789abcdef01234567"
"#;
    Campaign::from_toml("defaults.toml", text).expect("campaign")
}

fn items(workload: &Workload, campaign: &Campaign) -> u64 {
    u64::from(workload.runs() * workload.max_probes()) * u64::from(workload.sub_stream_len())
        + u64::from(campaign.correctness.items)
}

fn bench_request_sequence(
    c: &mut Criterion,
    name: &str,
    campaign: &Campaign,
    seeds: &RevealedSeeds,
    recorded: Option<&Sha256Hex>,
) {
    let workload = Workload::new(campaign, seeds, None).expect("workload");
    let digest = workload.request_sequence_digest().expect("digest");
    assert_eq!(item_loop_digest(&workload), digest, "{name}: same digest");
    if let Some(recorded) = recorded {
        assert_eq!(&digest, recorded, "{name}: the bundle's digest");
    }
    let count = items(&workload, campaign);
    eprintln!(
        "request_sequence/{name}: {count} items ({} sub-streams × {} + {} correctness)",
        workload.runs() * workload.max_probes(),
        workload.sub_stream_len(),
        campaign.correctness.items
    );
    let mut group = c.benchmark_group(format!("request_sequence/{name}"));
    group.sample_size(10);
    group.throughput(Throughput::Elements(count));
    group.bench_function("digest", |b| {
        b.iter(|| workload.request_sequence_digest().expect("digest"))
    });
    group.bench_function("item_loop", |b| b.iter(|| item_loop_digest(&workload)));
    group.finish();
}

fn bench_round(c: &mut Criterion, bundle: &RoundBundle) {
    let options = VerifyOptions::default();
    let report = verifier::verify_bundle(&bundle.dir, &bundle.keyring, &options);
    let failed: Vec<_> = report.failures().map(|c| c.name.as_str()).collect();
    assert!(report.passed(), "{}: failed {failed:?}", bundle.name);
    assert!(stage1(bundle, &options));
    let keys: Vec<_> = bundle
        .keyring
        .keys()
        .iter()
        .map(|k| ed25519_dalek::VerifyingKey::from_bytes(k.key.as_bytes()).expect("key"))
        .collect();
    assert!(floor(bundle, &keys));
    eprintln!(
        "round/{}: {} files, {} bytes, {} checks",
        bundle.name,
        bundle.files.len(),
        bundle.files.iter().map(Vec::len).sum::<usize>(),
        report.checks.len()
    );
    let mut group = c.benchmark_group(format!("round/{}", bundle.name));
    group.throughput(Throughput::Elements(1));
    group.bench_function("stage1", |b| b.iter(|| assert!(stage1(bundle, &options))));
    group.bench_function("floor", |b| b.iter(|| assert!(floor(bundle, &keys))));
    group.bench_function("verify_bundle", |b| {
        b.iter(|| verifier::verify_bundle(&bundle.dir, &bundle.keyring, &options))
    });
    group.finish();
}

fn bench(c: &mut Criterion) {
    let scratch = scratch();
    let mut bundles = vec![round_bundle(
        "v2-round",
        &fixtures().join("v2-round"),
        &fixtures().join("v2-keyring.json"),
        scratch.path(),
    )];
    let demo = std::env::var_os("REFEREE_BENCH_ROUND").map_or_else(
        || PathBuf::from("/tmp/demo-data/demo/rounds/1"),
        PathBuf::from,
    );
    let demo_keyring = std::env::var_os("REFEREE_BENCH_KEYRING").map_or_else(
        || PathBuf::from("/tmp/demo-data/keyring.json"),
        PathBuf::from,
    );
    if demo.join(ENVELOPE_FILE).is_file() {
        bundles.push(round_bundle("demo", &demo, &demo_keyring, scratch.path()));
    } else {
        eprintln!("no demo round at {}: skipped", demo.display());
    }
    for bundle in &bundles {
        bench_round(c, bundle);
    }
    for bundle in &bundles {
        bench_request_sequence(
            c,
            bundle.name,
            &bundle.campaign,
            &bundle.record.seeds,
            Some(&bundle.record.request_sequence_digest),
        );
    }
    let last = bundles.last().expect("a bundle");
    bench_request_sequence(c, "defaults", &default_campaign(), &last.record.seeds, None);

    let v2 = &bundles[0];
    let archive: Vec<PathBuf> = (0..COPIES)
        .map(|i| {
            let dir = scratch.path().join(format!("archive/bundle-{i:03}"));
            copy_dir(&v2.dir, &dir);
            dir
        })
        .collect();
    let options = VerifyOptions::default();
    let mut group = c.benchmark_group("archive");
    group.throughput(Throughput::Elements(COPIES as u64));
    group.bench_function("parallel", |b| {
        b.iter(|| verify_archive(&archive, &v2.keyring, &options, &|| {}))
    });
    group.bench_function("one_at_a_time", |b| {
        b.iter(|| {
            archive
                .iter()
                .map(|dir| verifier::verify_bundle(dir, &v2.keyring, &options))
                .collect::<Vec<_>>()
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
