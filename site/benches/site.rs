//! Site build benchmarks (issue 18, Performance) on a small synthetic archive
//! ([`synthetic`]): a cold build of every page, and the build after one round is added
//! to an archive already built. The archive and the output live under `/dev/shm` when it
//! exists. The full-size side-by-side run (10,000 rounds × 8 entries against Hugo) is
//! `scripts/bench-site`; this bench keeps the archive small enough for criterion.
//!
//! It needs a real v3 round as its template: `SITE_BENCH_TEMPLATE=<data>/<campaign>/rounds/<n>`
//! (default `/tmp/demo-data/demo/rounds/1`, the round `referee demo` seals); without one
//! it says so and measures nothing. `SITE_BENCH_ROUNDS` sets the archive's size (default
//! 200). Run: `cargo bench -p site --bench site`.
#![expect(
    missing_docs,
    reason = "a bench exports nothing, but `criterion_group!` defines an undocumented `pub fn`"
)]

mod synthetic;

use std::path::{Path, PathBuf};

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use site::{BuildOptions, build_site};
use synthetic::{Config, Generator, Template};

fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        tempfile::tempdir_in(shm).expect("tempdir in /dev/shm")
    } else {
        tempfile::tempdir().expect("tempdir")
    }
}

fn options(data: &Path, out: &Path, clean: bool) -> BuildOptions {
    BuildOptions {
        data: data.to_owned(),
        keyring: data.join("keyring.json"),
        out: out.to_owned(),
        base_url: String::new(),
        clean,
        at: None,
        allow_unlogged: false,
    }
}

fn bench(c: &mut Criterion) {
    let template_dir = std::env::var_os("SITE_BENCH_TEMPLATE").map_or_else(
        || PathBuf::from("/tmp/demo-data/demo/rounds/1"),
        PathBuf::from,
    );
    if !template_dir.join("receipt.dsse.json").is_file() {
        eprintln!(
            "site bench: no template round at {} (set SITE_BENCH_TEMPLATE to a v3 round \
             directory, e.g. the one `referee demo` seals): nothing measured",
            template_dir.display()
        );
        return;
    }
    let rounds: u64 = std::env::var("SITE_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let template = Template::load(&template_dir).expect("template round");
    let tmp = scratch();
    let data = tmp.path().join("data");
    let mut generator = Generator::new(&template, &data, Config::default()).expect("generator");
    generator
        .rounds_from_scratch(rounds, |_| {})
        .expect("archive");

    let out = tmp.path().join("site");
    let first = build_site(&options(&data, &out, false)).expect("first build");
    assert_eq!(
        (first.verified_rounds, first.rejected_rounds),
        (rounds as usize, 0),
        "every synthetic bundle verifies"
    );
    let mut group = c.benchmark_group(format!("site_{rounds}_rounds"));
    group.sample_size(10);
    group.throughput(Throughput::Elements(first.html_pages as u64));
    group.bench_function("cold_build", |b| {
        b.iter(|| build_site(&options(&data, &out, true)).expect("build"))
    });
    group.finish();

    let mut group = c.benchmark_group(format!("site_{rounds}_rounds"));
    group.sample_size(10);
    group.bench_function("add_one_round", |b| {
        b.iter_batched(
            || {
                generator.append().expect("append");
            },
            |()| build_site(&options(&data, &out, false)).expect("build"),
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
