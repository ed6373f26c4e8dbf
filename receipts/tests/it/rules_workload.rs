//! The seeded workload: fixed seeds give a fixed request-sequence digest (asserted as a
//! literal, so any change to the mapping from ChaCha20 to items shows), each seed changes
//! only its own dimension, and sub-streams never repeat a prompt.

use std::collections::HashSet;

use receipts::model::{Campaign, RevealedSeeds, Seed32, SeedReveal, Sha256Hex};
use receipts::rules::workload::{UNIT_GAP_NS, Workload, scheduled_offset_ns};
use testkit::campaign::CampaignToml;

/// Fixed seeds: one byte value per dimension, one salt, so each test's items, order and
/// schedule are the same on every machine (the digest literal below depends on them; the
/// load-generator tests use the same ones).
fn seeds() -> RevealedSeeds {
    let reveal = |b: u8| SeedReveal::commit(Seed32([b; 32]), Seed32([0xaa; 32]));
    RevealedSeeds {
        item_seed: reveal(1),
        order_seed: reveal(2),
        schedule_seed: reveal(3),
        correctness_seed: reveal(4),
        prompt_salt: reveal(5),
        sample_seed: None,
        pass_seed: None,
    }
}

fn campaign(arrival: &str) -> Campaign {
    CampaignToml::minimal("digest")
        .set("runs", "2")
        .set("workload.arrival", &format!("\"{arrival}\""))
        .set("rate_search.min_rate_milli_rps", "1000")
        .set("rate_search.max_rate_milli_rps", "4000")
        .set("rate_search.min_probe_duration_ms", "1000")
        .set("rate_search.min_probe_requests", "10")
        .set("rate_search.warmup_requests", "2")
        .set("rate_search.rate_tolerance_bp", "2500")
        .campaign()
}

#[test]
fn fixed_seeds_give_a_fixed_digest() {
    let campaign = campaign("poisson");
    let workload = Workload::new(&campaign, &seeds(), None).unwrap();
    // 2 runs × (3 bracket + 2 + 2 bisection) probes = 14 sub-streams of 2 + 2·10 + 64 items.
    assert_eq!(workload.max_probes(), 7);
    assert_eq!(workload.sub_stream_len(), 86);
    let digest = workload.request_sequence_digest().unwrap();
    assert_eq!(
        digest.as_str(),
        "d90739172d34e114b3a4674ae40627a1bb19d8a79622c34e76bc3d32a1ddaf4e"
    );
    // Regenerated from scratch: the same.
    let again = Workload::new(&campaign, &seeds(), None).unwrap();
    assert_eq!(again.request_sequence_digest().unwrap(), digest);
    // The first items of sub-stream 0, pinned.
    let items = workload.sub_stream(0);
    let head: Vec<(u32, usize, u32, u64)> = items
        .iter()
        .take(3)
        .map(|i| {
            (
                i.item_index,
                i.prompt.len(),
                i.max_tokens,
                i.arrival_unit_ns,
            )
        })
        .collect();
    assert_eq!(
        head,
        vec![
            (17, 13, 2, 0),
            (72, 5, 8, 2_534_781_076),
            (55, 4, 5, 3_234_571_760)
        ]
    );
    assert_eq!(items[0].prompt, "one window as");
}

#[test]
fn each_seed_changes_its_own_dimension() {
    let campaign = campaign("poisson");
    let base = Workload::new(&campaign, &seeds(), None)
        .unwrap()
        .sub_stream(3);
    let with = |change: &dyn Fn(&mut RevealedSeeds)| {
        let mut s = seeds();
        change(&mut s);
        Workload::new(&campaign, &s, None).unwrap().sub_stream(3)
    };
    let reveal = |b: u8| SeedReveal::commit(Seed32([b; 32]), Seed32([0xaa; 32]));
    // scheduleSeed: same items in the same order, other arrival times.
    let other = with(&|s| s.schedule_seed = reveal(9));
    assert!(base.iter().zip(&other).all(|(a, b)| a.prompt == b.prompt));
    assert_ne!(arrivals(&base), arrivals(&other));
    // orderSeed: the same set of items, other order, same arrival times.
    let other = with(&|s| s.order_seed = reveal(9));
    assert_eq!(arrivals(&base), arrivals(&other));
    assert_eq!(indices_sorted(&base), indices_sorted(&other));
    assert_ne!(indices(&base), indices(&other));
    // promptSalt: same lengths, other text.
    let other = with(&|s| s.prompt_salt = reveal(9));
    for (a, b) in base.iter().zip(&other) {
        assert_eq!(
            (a.item_index, a.prompt.len(), a.max_tokens),
            (b.item_index, b.prompt.len(), b.max_tokens)
        );
    }
    assert!(base.iter().zip(&other).any(|(a, b)| a.prompt != b.prompt));
    // The commitment salt is not an input: only the seeds are.
    let mut s = seeds();
    s.item_seed = SeedReveal::commit(Seed32([1; 32]), Seed32([0xbb; 32]));
    assert_eq!(
        Workload::new(&campaign, &s, None).unwrap().sub_stream(3),
        base
    );
}

fn arrivals(items: &[receipts::rules::workload::Item]) -> Vec<u64> {
    items.iter().map(|i| i.arrival_unit_ns).collect()
}

fn indices(items: &[receipts::rules::workload::Item]) -> Vec<u32> {
    items.iter().map(|i| i.item_index).collect()
}

fn indices_sorted(items: &[receipts::rules::workload::Item]) -> Vec<u32> {
    let mut v = indices(items);
    v.sort_unstable();
    v
}

#[test]
fn sub_streams_and_correctness_items_never_repeat_a_prompt() {
    let campaign = campaign("poisson");
    let workload = Workload::new(&campaign, &seeds(), None).unwrap();
    let mut seen: HashSet<Sha256Hex> = HashSet::new();
    let mut total = 0;
    for sub_stream in 0..workload.runs() * workload.max_probes() {
        let items = workload.sub_stream(sub_stream);
        assert_eq!(items.len(), workload.sub_stream_len() as usize);
        for item in &items {
            // Byte-level tokenizer: the prompt is exactly the drawn length in bytes.
            assert!((4..=40).contains(&item.prompt.len()));
            assert!((1..=8).contains(&item.max_tokens));
            // Short prompts from a 64-word vocabulary may collide; count distinct ones.
            seen.insert(item.prompt_sha256);
            total += 1;
        }
        // Arrival offsets start at 0 and never decrease.
        assert_eq!(items[0].arrival_unit_ns, 0);
        assert!(
            items
                .windows(2)
                .all(|w| w[0].arrival_unit_ns <= w[1].arrival_unit_ns)
        );
    }
    assert!(
        seen.len() * 100 >= total * 95,
        "{} distinct of {total}",
        seen.len()
    );
    let correctness = workload.correctness_items();
    assert_eq!(correctness.len(), 6);
    assert!(
        correctness
            .iter()
            .all(|i| i.prompt.len() == 12 && i.max_tokens == 4)
    );
    // The correctness items depend on the campaign and seeds only.
    let again = Workload::new(&campaign, &seeds(), None).unwrap();
    assert_eq!(correctness, again.correctness_items());
}

#[test]
fn constant_arrivals_and_schedule_at_a_rate() {
    let campaign = campaign("constant");
    let workload = Workload::new(&campaign, &seeds(), None).unwrap();
    let items = workload.sub_stream(0);
    for (i, item) in items.iter().enumerate() {
        assert_eq!(item.arrival_unit_ns, i as u64 * UNIT_GAP_NS);
    }
    // At 3 req/s (3000 milli): offset ÷ 3, rounded down.
    assert_eq!(scheduled_offset_ns(UNIT_GAP_NS, 3000), 333_333_333);
    assert_eq!(scheduled_offset_ns(7 * UNIT_GAP_NS, 2500), 2_800_000_000);
}

#[test]
fn jsonl_prompts_are_verified_and_salted() {
    let dir = tempfile::tempdir().unwrap();
    let text = "{\"prompt\": \"alpha\"}\n\n{\"prompt\": \"beta gamma\"}\n";
    std::fs::write(dir.path().join("prompts.jsonl"), text).unwrap();
    let digest = Sha256Hex::digest(text.as_bytes());
    let mut campaign = campaign("poisson");
    campaign.workload.prompt_source = receipts::model::PromptSource::Jsonl {
        path: "prompts.jsonl".into(),
        sha256: digest,
    };
    assert!(Workload::new(&campaign, &seeds(), None).is_err());
    let bytes = std::fs::read(dir.path().join("prompts.jsonl")).unwrap();
    let workload = Workload::new(&campaign, &seeds(), Some(&bytes)).unwrap();
    let items = workload.sub_stream(0);
    for item in &items {
        // `[8 hex] ` then a line of the file.
        assert_eq!(item.prompt.as_bytes()[0], b'[');
        assert!(item.prompt.ends_with("] alpha") || item.prompt.ends_with("] beta gamma"));
    }
    let distinct: HashSet<&str> = items.iter().map(|i| i.prompt.as_str()).collect();
    assert_eq!(distinct.len(), items.len());
    // A changed file is refused.
    let error = Workload::new(&campaign, &seeds(), Some(b"{\"prompt\": \"x\"}\n")).unwrap_err();
    assert!(error.to_string().contains("prompts.jsonl"), "{error}");
}
