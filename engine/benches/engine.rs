//! Engine throughput on the demo baseline's model (examples/demo/baseline/engine.toml:
//! 2 layers, d_model 128, 4 heads, context 256): decode steps at batch 1 and 16 (tokens/s = rows per step ÷ step time)
//! and a 256-token prefill, for f32, bf16 and int8 weights, on one compute thread (what
//! the runner gives the engine on a 2-core machine). Figures go to BENCHMARKS.md
//! `## engine`. Run: `cargo bench -p builtin-engine --bench engine`.
#![expect(
    missing_docs,
    reason = "a bench exports nothing, but `criterion_group!` defines an undocumented `pub fn`"
)]

use builtin_engine::config::{EngineConfig, WeightDtype};
use builtin_engine::model::{KvCache, Model, Row};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

/// Decode rows sit at this position, so attention covers half the context.
const DECODE_POS: usize = 128;

/// The demo baseline's config with 16 sequences, 256-row steps and the given weights.
fn config(weight_dtype: WeightDtype) -> EngineConfig {
    let text = include_str!("../../examples/demo/baseline/engine.toml");
    let demo = EngineConfig::from_toml("engine.toml", text).expect("demo config parses");
    EngineConfig {
        max_num_seqs: 16,
        max_num_batched_tokens: 256,
        weight_dtype,
        ..demo
    }
}

fn bench(c: &mut Criterion) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("rayon pool");
    let mut group = c.benchmark_group("engine");
    group
        .sample_size(20)
        .measurement_time(std::time::Duration::from_secs(3));
    for (name, dtype) in [
        ("f32", WeightDtype::F32),
        ("bf16", WeightDtype::Bf16),
        ("int8", WeightDtype::Int8),
    ] {
        let config = config(dtype);
        let model = Model::new(&config);
        let mut cache = KvCache::new(&config, config.max_num_seqs);
        // Fill every slot's first DECODE_POS positions.
        let prefix: Vec<Row> = (0..16)
            .flat_map(|slot| {
                (0..DECODE_POS).map(move |pos| Row {
                    slot,
                    pos,
                    token: (pos % 250) as u32,
                })
            })
            .collect();
        pool.install(|| model.forward(&mut cache, &prefix, &[]));
        for batch in [1usize, 16] {
            let rows: Vec<Row> = (0..batch)
                .map(|slot| Row {
                    slot,
                    pos: DECODE_POS,
                    token: 65,
                })
                .collect();
            let logit_rows: Vec<usize> = (0..batch).collect();
            group.throughput(Throughput::Elements(batch as u64));
            group.bench_function(
                BenchmarkId::new(format!("decode_batch{batch}"), name),
                |b| b.iter(|| pool.install(|| model.forward(&mut cache, &rows, &logit_rows))),
            );
        }
        let prefill: Vec<Row> = (0..256)
            .map(|pos| Row {
                slot: 0,
                pos,
                token: (pos % 250) as u32,
            })
            .collect();
        group.throughput(Throughput::Elements(256));
        group.bench_function(BenchmarkId::new("prefill_256", name), |b| {
            b.iter(|| pool.install(|| model.forward(&mut cache, &prefill, &[255])))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
