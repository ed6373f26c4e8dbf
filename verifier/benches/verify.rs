//! Verifier benchmarks: one real round bundle (`tests/fixtures/v2-round`, every check
//! including the ones recomputed from its probe logs and correctness file), and an
//! archive of 64 copies of it verified in parallel (rayon) against one at a time. Run:
//! `cargo bench -p verifier --bench verify`.

use std::path::{Path, PathBuf};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use receipts::keys::Keyring;
use receipts::verify::VerifyOptions;
use verifier::archive::verify_archive;

/// Copies of the fixture in the archive.
const COPIES: usize = 64;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

fn bench(c: &mut Criterion) {
    let keyring = Keyring::load(&fixtures().join("v2-keyring.json")).expect("keyring");
    let options = VerifyOptions::default();
    let bundle = fixtures().join("v2-round");
    c.bench_function("verify_bundle/v2-round", |b| {
        b.iter(|| verifier::verify_bundle(&bundle, &keyring, &options))
    });

    let archive = tempfile::tempdir().expect("tempdir");
    let bundles: Vec<PathBuf> = (0..COPIES)
        .map(|i| {
            let dir = archive.path().join(format!("bundle-{i:03}"));
            copy_dir(&bundle, &dir);
            dir
        })
        .collect();
    let mut group = c.benchmark_group("archive");
    group.throughput(Throughput::Elements(COPIES as u64));
    group.bench_function("parallel", |b| {
        b.iter(|| verify_archive(&bundles, &keyring, &options, &|| {}))
    });
    group.bench_function("one_at_a_time", |b| {
        b.iter(|| {
            bundles
                .iter()
                .map(|dir| verifier::verify_bundle(dir, &keyring, &options))
                .collect::<Vec<_>>()
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
