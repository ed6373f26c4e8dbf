//! Decoding a probe's latency histogram and reading its percentiles (issue 18: the
//! verifier decodes five blobs per probe of every round, the site's entry pages four per
//! run): `recorded` is what referee does (`decode_recorded` + `walk_recorded` over seven
//! percentiles), `dense` HdrHistogram's own V2 deserializer into a dense `Histogram` +
//! `walk` over the same seven (what referee did before), on one blob of 2,000 requests
//! between 5 ms and 2 s (µs, 3 significant digits, V2+DEFLATE, ≈ 1.5 KiB of base64).
//! Run: `cargo bench -p receipts --bench histogram`.
#![expect(
    missing_docs,
    reason = "a bench exports nothing, but `criterion_group!` defines an undocumented `pub fn`"
)]

use base64::Engine as _;
use criterion::{Criterion, criterion_group, criterion_main};
use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;
use receipts::model::Percentile;
use receipts::rules::histogram::{decode_recorded, encode_histogram, new_latency_histogram};
use receipts::rules::sla::{walk, walk_recorded};

/// The blob: 2,000 latencies spread log-uniformly over 5 ms–2 s by a fixed LCG.
fn blob() -> String {
    let mut h = new_latency_histogram();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for _ in 0..2_000 {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        let unit = (x >> 11) as f64 / (1u64 << 53) as f64;
        h.saturating_record((5_000.0 * 400f64.powf(unit)) as u64);
    }
    encode_histogram(&h).expect("encodes")
}

fn percentiles() -> [Percentile; 7] {
    [500, 750, 900, 950, 990, 995, 999].map(|p| Percentile::from_permille(p).expect("valid"))
}

fn bench(c: &mut Criterion) {
    let text = blob();
    let mut group = c.benchmark_group("histogram");
    group.bench_function("recorded", |b| {
        b.iter(|| {
            let h = decode_recorded(std::hint::black_box(&text)).expect("decodes");
            walk_recorded(&h, percentiles(), 0, None).values
        })
    });
    group.bench_function("dense", |b| {
        b.iter(|| {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(std::hint::black_box(&text))
                .expect("base64");
            let h: Histogram<u64> = Deserializer::new()
                .deserialize(&mut bytes.as_slice())
                .expect("decodes");
            walk(&h, percentiles(), 0, None).values
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
