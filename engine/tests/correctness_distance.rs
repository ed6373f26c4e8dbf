//! How far each low-precision knob moves logprobs from the f32 model, measured the way the
//! correctness gate measures it (MEASUREMENT.md §Correctness): greedy outputs with top-20
//! logprobs from the entry's config, teacher-forced through the f32 reference; per
//! position the largest |Δ logprob| over the union of both top-20 sets (a token missing
//! from one side takes that side's 20th logprob); per item the mean over generated
//! positions; items in groups of 3. The demo relies on `int4` failing the gate (group mean
//! > 0.20 nats) while `int8`, `bf16` and a bf16 KV cache pass.

use engine::config::{EngineConfig, KvCacheDtype, WeightDtype};
use engine::model::{KvCache, Model, Row};
use engine::sampling::{greedy, log_softmax, top_k};
use engine::tokenizer::{VOCAB_SIZE, encode_prompt};

const K: usize = 20;
const OUTPUT_TOKENS: usize = 32;

/// The demo baseline's model (examples/demo/baseline/engine.toml).
fn demo() -> EngineConfig {
    let text = include_str!("../../examples/demo/baseline/engine.toml");
    EngineConfig::from_toml("engine.toml", text).expect("demo config parses")
}

fn prompts() -> Vec<Vec<u32>> {
    [
        "Explain the rules of chess in one paragraph.",
        "def fibonacci(n):",
        "The capital of France is",
        "Once upon a time, in a land far away,",
        "SELECT name FROM users WHERE",
        "1, 2, 3, 5, 8, 13,",
    ]
    .iter()
    .map(|p| encode_prompt(p))
    .collect()
}

/// Greedy output tokens and their top-K logprobs under `model`.
fn generate(
    config: &EngineConfig,
    model: &Model,
    prompt: &[u32],
) -> (Vec<u32>, Vec<Vec<(u32, f32)>>) {
    let mut cache = KvCache::new(config, 1);
    let rows: Vec<Row> = prompt
        .iter()
        .enumerate()
        .map(|(pos, &token)| Row {
            slot: 0,
            pos,
            token,
        })
        .collect();
    let mut logits = model.forward(&mut cache, &rows, &[rows.len() - 1]);
    let mut tokens = Vec::new();
    let mut tops = Vec::new();
    for i in 0..OUTPUT_TOKENS {
        tops.push(top_k(&log_softmax(&logits), K));
        let token = greedy(&logits, None);
        tokens.push(token);
        let row = Row {
            slot: 0,
            pos: prompt.len() + i,
            token,
        };
        logits = model.forward(&mut cache, &[row], &[0]);
    }
    (tokens, tops)
}

/// Top-K logprobs at every output position of prompt + output, teacher-forced.
fn teacher_forced(
    config: &EngineConfig,
    model: &Model,
    prompt: &[u32],
    output: &[u32],
) -> Vec<Vec<(u32, f32)>> {
    let mut cache = KvCache::new(config, 1);
    let tokens: Vec<u32> = prompt.iter().chain(output).copied().collect();
    let rows: Vec<Row> = tokens
        .iter()
        .enumerate()
        .map(|(pos, &token)| Row {
            slot: 0,
            pos,
            token,
        })
        .collect();
    let logit_rows: Vec<usize> = (prompt.len() - 1..tokens.len() - 1).collect();
    let logits = model.forward(&mut cache, &rows, &logit_rows);
    logits
        .chunks_exact(VOCAB_SIZE)
        .map(|l| top_k(&log_softmax(l), K))
        .collect()
}

fn position_distance(entry: &[(u32, f32)], reference: &[(u32, f32)]) -> f64 {
    let lookup = |side: &[(u32, f32)], t: u32| {
        side.iter()
            .find(|(id, _)| *id == t)
            .map_or(side[side.len() - 1].1, |(_, lp)| *lp)
    };
    entry
        .iter()
        .chain(reference)
        .map(|&(t, _)| f64::from((lookup(entry, t) - lookup(reference, t)).abs()))
        .fold(0.0, f64::max)
}

/// Per-item mean distances of `entry` against the f32 demo model.
fn item_distances(entry: &EngineConfig) -> Vec<f64> {
    let reference_config = demo();
    let reference = Model::new(&reference_config);
    let model = Model::new(entry);
    prompts()
        .iter()
        .map(|prompt| {
            let (output, entry_tops) = generate(entry, &model, prompt);
            let reference_tops = teacher_forced(&reference_config, &reference, prompt, &output);
            let total: f64 = entry_tops
                .iter()
                .zip(&reference_tops)
                .map(|(e, r)| position_distance(e, r))
                .sum();
            total / OUTPUT_TOKENS as f64
        })
        .collect()
}

fn group_means(items: &[f64]) -> Vec<f64> {
    items
        .chunks(3)
        .map(|g| g.iter().sum::<f64>() / g.len() as f64)
        .collect()
}

fn check(name: &str, entry: EngineConfig, passes: bool) {
    let items = item_distances(&entry);
    let groups = group_means(&items);
    eprintln!("{name}: item distances {items:.4?}, group means {groups:.4?} (nats)");
    let gate_passes = groups.iter().all(|&g| g <= 0.20) && items.iter().all(|&i| i <= 2.0);
    assert_eq!(
        gate_passes, passes,
        "{name}: groups {groups:?}, items {items:?}"
    );
}

#[test]
fn f32_against_itself_is_zero() {
    let items = item_distances(&demo());
    assert!(items.iter().all(|&d| d == 0.0), "{items:?}");
}

#[test]
fn int4_weights_fail_the_gate() {
    let entry = EngineConfig {
        weight_dtype: WeightDtype::Int4,
        ..demo()
    };
    check("int4", entry.clone(), false);
    // Not marginally: every group is well above the 0.20 bound.
    assert!(
        group_means(&item_distances(&entry))
            .iter()
            .all(|&g| g > 0.3)
    );
}

#[test]
fn int8_weights_pass_the_gate() {
    check(
        "int8",
        EngineConfig {
            weight_dtype: WeightDtype::Int8,
            ..demo()
        },
        true,
    );
}

#[test]
fn bf16_weights_and_cache_pass_the_gate() {
    check(
        "bf16",
        EngineConfig {
            weight_dtype: WeightDtype::Bf16,
            ..demo()
        },
        true,
    );
    check(
        "kv bf16",
        EngineConfig {
            kv_cache_dtype: KvCacheDtype::Bf16,
            ..demo()
        },
        true,
    );
}
