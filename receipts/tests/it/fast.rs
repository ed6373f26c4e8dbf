//! The s1-fast-speed track's campaign fields: `[cost]` with its prices, `[capability]`
//! naming the sealed scorer and `[agreement]` naming the s1-pro reference, their defaults
//! and what `campaign add` refuses.

use receipts::model::*;

const S1_FAST_SPEED: &str = r#"
id = "s1-fast-speed"
track = "s1-fast-speed"
workload_kind = "decide"
[model]
name = "s1-fast"
[baseline]
repo = "baseline"
commit = "0123456789abcdef0123456789abcdef01234567"
[decide]
request_template = '{"prompt": "{{prompt}}"}'
decision_pointer = "/decision"
vector_pointer = "/logprobs"
decisions = ["a", "b", "c", "d"]
[capability]
command = ["/opt/sealed/score", "--quiet"]
[agreement]
reference_image = "registry.local/s1-pro@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
[cost]
[cost.price_per_hour]
gpu = { h100 = 2_000_000, l4 = 700_000 }
cpu = 40_000
memory_gib = 5_000
"#;

fn error(text: &str) -> String {
    Campaign::from_toml("c.toml", text).unwrap_err().to_string()
}

#[test]
fn an_s1_fast_speed_campaign_gets_its_defaults() {
    let c = Campaign::from_toml("c.toml", S1_FAST_SPEED).unwrap();
    assert_eq!(c.track, Some(Track::S1FastSpeed));
    let cost = c.cost.unwrap();
    assert_eq!(cost.margin_bp, 500);
    assert_eq!(
        cost.price_per_hour,
        PricePerHour {
            gpu: [("h100".to_owned(), 2_000_000), ("l4".to_owned(), 700_000)].into(),
            cpu: 40_000,
            memory_gib: 5_000,
        }
    );
    assert_eq!(c.agreement.unwrap().items, 500);
    let capability = c.capability.unwrap();
    assert_eq!(capability.command, ["/opt/sealed/score", "--quiet"]);
    assert_eq!(capability.sha256, None);
}

#[test]
fn s1_fast_speed_fields_go_together() {
    let without_capability = S1_FAST_SPEED.replace(
        "[capability]\ncommand = [\"/opt/sealed/score\", \"--quiet\"]\n",
        "",
    );
    assert!(error(&without_capability).contains("needs [capability]"));
    let without_agreement: String = S1_FAST_SPEED
        .lines()
        .filter(|l| !l.starts_with("[agreement]") && !l.starts_with("reference_image"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(error(&without_agreement).contains("needs [agreement]"));
    let unpinned = S1_FAST_SPEED.replace("@sha256:9f86", "@sha256:9F86");
    assert!(
        error(&unpinned).contains("agreement.reference_image"),
        "{}",
        error(&unpinned)
    );
    let other_track = S1_FAST_SPEED.replace("track = \"s1-fast-speed\"\n", "");
    assert!(
        error(&other_track).contains("only a track = \"s1-fast-speed\" campaign takes [cost]"),
        "{}",
        error(&other_track)
    );
    let without_cost = S1_FAST_SPEED.split("[cost]").next().unwrap();
    assert!(error(without_cost).contains("needs [cost]"));
    let no_program = S1_FAST_SPEED.replace("[\"/opt/sealed/score\", \"--quiet\"]", "[]");
    assert!(error(&no_program).contains("capability.command"));
    let whole_margin = S1_FAST_SPEED.replace("[cost]\n", "[cost]\nmargin_bp = 10000\n");
    assert!(error(&whole_margin).contains("cost.margin_bp"));
    let whole_floor = S1_FAST_SPEED.replace("[cost]\n", "[cost]\nmin_noise_floor_bp = 10000\n");
    assert!(error(&whole_floor).contains("cost.min_noise_floor_bp"));
    // Agreement is counted on the gate's items: no more of them than the gate has.
    let beyond = S1_FAST_SPEED.replace("[agreement]\n", "[agreement]\nitems = 2001\n");
    assert!(error(&beyond).contains("agreement.items"));
    let within = S1_FAST_SPEED.replace("[agreement]\n", "[agreement]\nitems = 2000\n");
    assert!(Campaign::from_toml("c.toml", &within).is_ok());
}

#[test]
fn a_round_without_the_track_has_no_fast_track_field() {
    // The field is optional in the model: a v7 receipt reads with it absent, and a round
    // of another track writes nothing.
    let record = FastTrackRecord {
        scorer_sha256: Sha256Hex::digest(b"scorer"),
        sealed_set_commitment: Sha256Hex::digest(b"set"),
        agreement_reference: "s1-pro@sha256:00".into(),
        agreement_items: 7,
        entries: vec![FastEntry {
            index: 0,
            resources: ResourceRequest {
                gpus: 0,
                gpu_class: String::new(),
                cpus: 2,
                memory_gib: 1,
            },
            price_micro_usd_per_hour: 85_000,
            cost_micro_usd_per_million: None,
            capability_ppm: 0,
            agreement_matched: 0,
            agreement_ppm: 0,
            agreement_file: None,
        }],
        cost_seat: None,
    };
    let json = serde_json::to_value(&record).unwrap();
    assert_eq!(
        json["entries"][0]["resources"],
        serde_json::json!({"gpus": 0, "cpus": 2, "memoryGib": 1})
    );
    assert_eq!(
        json["entries"][0]["costMicroUsdPerMillion"],
        serde_json::Value::Null
    );
    let back: FastTrackRecord = serde_json::from_value(json).unwrap();
    assert_eq!(back, record);
}
