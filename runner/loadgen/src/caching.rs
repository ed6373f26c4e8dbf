//! The caching probe of a timed run (MLPerf TEST04; content/correctness.md, Caching):
//! fresh workload prompts, each sent again once its first answer is complete, one request
//! at a time in [`compliance::caching_order`], each timed by its decode span (first token
//! to end). An answer cache replays a repeat in no time; prefix caching, which an engine
//! may do, saves only the time to the first token.

use std::sync::Arc;

use receipts::model::CachingRequest;
use receipts::rules::compliance;
use receipts::rules::workload::Item;

use crate::search::NoProgress;
use crate::{LoadClient, LoadError, MeasureConfig, PlannedRequest, ProbePlan, Target};

/// Sends `items` (the probe's fresh prompts) and their repeats to `target`, one request
/// at a time in [`compliance::caching_order`], each with `deadline_ms`, its body and
/// token count as `config` says; returns the requests in send order. A failed request is
/// recorded, not an error (`completed` false).
///
/// Errors: [`LoadError`] when the client itself cannot run (as [`LoadClient::run`]).
pub async fn caching_probe(
    target: &Target,
    config: &MeasureConfig,
    items: &[Item],
    deadline_ms: u64,
) -> Result<Vec<CachingRequest>, LoadError> {
    let client = LoadClient::new(config.client)?;
    let mut requests = Vec::with_capacity(items.len().saturating_mul(2));
    for (index, repeat) in compliance::caching_order(items.len()) {
        let Some(item) = items.get(index) else {
            continue;
        };
        let plan = ProbePlan {
            requests: vec![PlannedRequest {
                item: item.clone(),
                scheduled_ns: 0,
                warmup: false,
                keep_token_ids: false,
            }],
            deadline_ms,
            token_count: config.token_count,
            api: Arc::clone(&config.api),
            decide: None,
        };
        let samples = client.run(target, &plan, &NoProgress).await?;
        let sample = samples.first();
        requests.push(CachingRequest {
            item_index: item.item_index,
            prompt_sha256: item.prompt_sha256,
            repeat,
            completed: sample.is_some_and(|s| s.completed()),
            decode_us: sample
                .and_then(|s| Some(s.e2e_ns.saturating_sub(s.ttft_ns?) / 1_000))
                .unwrap_or(0),
        });
    }
    Ok(requests)
}
