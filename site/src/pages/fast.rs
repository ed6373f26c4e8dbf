//! The s1-fast-speed section of a round page (content/s1-fast-speed.md): both gates of
//! every entry against the incumbent's scores and the cost ranking, cheapest per
//! decision first, from the round's `fastTrack` record. A page is built only from a
//! bundle that verifies, so the recomputed values (prices, costs, agreement, the seat)
//! are vouched for; the scores and resources are attested, and the page says so.

use receipts::model::{Campaign, FastEntry, FastTrackRecord, RoundRecord, Track};
use receipts::rules::agreement::agreement_passes;
use receipts::rules::capability::capability_passes;
use receipts::rules::cost::incumbent_of;
use serde::Serialize;

use super::untrusted;

/// The section: the gates' reference, the scorer, the rows ranked by cost, the seat.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FastTrackSection {
    /// The s1-pro reference image and the items compared, escaped.
    pub reference: String,
    /// The scorer's sha256 and the sealed set's commitment.
    pub scorer: String,
    /// Every entry, cheapest per decision first; entries without a cost last, by index.
    pub rows: Vec<FastRow>,
    /// Who is seated on cost, in words.
    pub cost_seat: String,
}

/// One entry of the cost ranking.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FastRow {
    /// Its place in the ranking, from 1; `None` without a cost per decision.
    pub rank: Option<usize>,
    /// `#1 challenger miner-x`, escaped.
    pub entry: String,
    /// `2 × l4, 4 cores, 32 GiB`, escaped.
    pub resources: String,
    /// `$1.720000 per hour`.
    pub price: String,
    /// `$31.374953 per million decisions`, or `—`.
    pub cost: String,
    /// `750,000 ppm`, and whether it passes against the incumbent.
    pub capability: String,
    /// `30 of 30 items (1,000,000 ppm)`, and whether it passes.
    pub agreement: String,
}

/// The section of `record`'s round; `None` when it records no `fastTrack`.
pub fn fast_track_section(record: &RoundRecord) -> Option<FastTrackSection> {
    let fast = record.fast_track.as_ref()?;
    let incumbent = incumbent_of(&record.entries, &fast.entries).map(|(_, row)| row);
    let mut ranked: Vec<&FastEntry> = fast.entries.iter().collect();
    ranked.sort_by_key(|r| {
        (
            r.cost_micro_usd_per_million.is_none(),
            r.cost_micro_usd_per_million,
            r.index,
        )
    });
    let rows = ranked
        .iter()
        .enumerate()
        .map(|(place, row)| fast_row(record, incumbent, place, row))
        .collect();
    Some(FastTrackSection {
        reference: format!(
            "agreement with {} on {} fresh items",
            untrusted(&fast.agreement_reference),
            fast.agreement_items
        ),
        scorer: format!(
            "scorer sha256 {}, sealed set {}",
            fast.scorer_sha256, fast.sealed_set_commitment
        ),
        rows,
        cost_seat: cost_seat_text(record, fast),
    })
}

/// One row: its entry, resources, price, cost and both gates against `incumbent`'s row.
fn fast_row(
    record: &RoundRecord,
    incumbent: Option<&FastEntry>,
    place: usize,
    row: &FastEntry,
) -> FastRow {
    let gate = |passes: fn(u32, u32) -> bool, own: u32, theirs: Option<u32>| match theirs {
        _ if incumbent.is_some_and(|i| i.index == row.index) => "the incumbent's",
        Some(theirs) if passes(own, theirs) => "passes",
        Some(_) => "fails",
        None => "no incumbent",
    };
    let r = &row.resources;
    let gpus = if r.gpus == 0 {
        "no GPU".to_owned()
    } else {
        format!("{} × {}", r.gpus, untrusted(&r.gpu_class))
    };
    FastRow {
        rank: row.cost_micro_usd_per_million.map(|_| place + 1),
        entry: entry_name(record, row.index),
        resources: format!("{gpus}, {} cores, {} GiB", r.cpus, r.memory_gib),
        price: format!("{} per hour", dollars(row.price_micro_usd_per_hour)),
        cost: row.cost_micro_usd_per_million.map_or_else(
            || "—".to_owned(),
            |c| format!("{} per million decisions", dollars(c)),
        ),
        capability: format!(
            "{} ppm · {}",
            thousands(u64::from(row.capability_ppm)),
            gate(
                capability_passes,
                row.capability_ppm,
                incumbent.map(|i| i.capability_ppm)
            )
        ),
        agreement: format!(
            "{} of {} items ({} ppm) · {}",
            row.agreement_matched,
            record.fast_track.as_ref().map_or(0, |f| f.agreement_items),
            thousands(u64::from(row.agreement_ppm)),
            gate(
                agreement_passes,
                row.agreement_ppm,
                incumbent.map(|i| i.agreement_ppm)
            )
        ),
    }
}

/// `#1 challenger miner-x` (`#0 baseline`), escaped.
fn entry_name(record: &RoundRecord, index: u32) -> String {
    match record.entries.iter().find(|e| e.index == index) {
        Some(e) => match &e.miner {
            Some(miner) => format!("#{index} {} {}", e.role.as_str(), untrusted(miner.as_str())),
            None => format!("#{index} {}", e.role.as_str()),
        },
        None => format!("#{index}"),
    }
}

/// Who the cost rule seats, in words.
fn cost_seat_text(record: &RoundRecord, fast: &FastTrackRecord) -> String {
    match fast.cost_seat {
        Some(index) => format!(
            "{} is seated on cost: through both gates, its throughput not below the incumbent's within the noise floor, and its cost per decision at least the margin lower",
            entry_name(record, index)
        ),
        None => "no challenger is seated on cost".to_owned(),
    }
}

/// The campaign page's rules of track s1-fast-speed (content/s1-fast-speed.md): both
/// gates and the cost rule with the campaign's prices, all quoted text escaped; none for
/// a campaign of another track.
pub fn campaign_rules(c: &Campaign) -> Vec<super::campaign::Rule> {
    let (Some(Track::S1FastSpeed), Some(agreement), Some(cost)) =
        (c.track, c.agreement.as_ref(), c.cost.as_ref())
    else {
        return Vec::new();
    };
    let prices = &cost.price_per_hour;
    let gpus: Vec<String> = prices
        .gpu
        .iter()
        .map(|(class, price)| format!("{} per {} GPU-hour", dollars(*price), untrusted(class)))
        .collect();
    vec![
        super::campaign::Rule {
            term: "Gates",
            text: format!(
                "A challenger is disqualified when its capability score on the sealed items is below the incumbent's, or its agreement with {} on {} fresh items is below the incumbent's, both scored in the same round.",
                untrusted(&agreement.reference_image),
                agreement.items
            ),
        },
        super::campaign::Rule {
            term: "Cost",
            text: format!(
                "Through both gates, a challenger also takes the seat when its cost per decision is at least {} lower than the incumbent's at a throughput not below the incumbent's within the round's noise floor (at least {}). Prices: {}, {} per core-hour, {} per GiB-hour.",
                verifier::view::format_bp_percent(u64::from(cost.margin_bp)),
                verifier::view::format_bp_percent(u64::from(cost.min_noise_floor_bp)),
                gpus.join(", "),
                dollars(prices.cpu),
                dollars(prices.memory_gib)
            ),
        },
    ]
}

/// Micro-dollars as dollars with six decimals: `$1.720000`.
fn dollars(micro: u64) -> String {
    format!("${}.{:06}", thousands(micro / 1_000_000), micro % 1_000_000)
}

/// `1234567` as `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// The s1-fast-speed demo's round (`verifier/tests/fixtures/v9-fast-round`).
    fn fixture() -> RoundRecord {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../verifier/tests/fixtures/v9-fast-round/receipt.dsse.json");
        let envelope: serde_json::Value =
            serde_json::from_slice(&std::fs::read(path).expect("fixture")).expect("json");
        let payload = receipts::dsse::decode_base64(envelope["payload"].as_str().expect("payload"))
            .expect("base64");
        let statement: serde_json::Value = serde_json::from_slice(&payload).expect("statement");
        serde_json::from_value(statement["predicate"].clone()).expect("round record")
    }

    #[test]
    fn the_campaign_page_states_both_gates_and_the_cost_rule_with_its_prices() {
        let text = include_str!("../../../examples/s1-fast-speed/campaign.toml");
        let campaign = Campaign::from_toml("campaign.toml", text).expect("campaign");
        let rules: Vec<(&str, String)> = campaign_rules(&campaign)
            .into_iter()
            .map(|r| (r.term, r.text))
            .collect();
        assert_eq!(
            rules,
            [
                (
                    "Gates",
                    "A challenger is disqualified when its capability score on the sealed items is below the incumbent's, or its agreement with registry.local/s1-pro@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 on 30 fresh items is below the incumbent's, both scored in the same round.".to_owned()
                ),
                (
                    "Cost",
                    "Through both gates, a challenger also takes the seat when its cost per decision is at least 5 % lower than the incumbent's at a throughput not below the incumbent's within the round's noise floor (at least 1 %). Prices: $2.000000 per h100 GPU-hour, $0.700000 per l4 GPU-hour, $0.040000 per core-hour, $0.005000 per GiB-hour.".to_owned()
                ),
            ]
        );
        let mut other = campaign;
        other.track = None;
        assert!(campaign_rules(&other).is_empty());
    }

    #[test]
    fn the_cheaper_challenger_ranks_first_and_both_gates_are_shown() {
        let record = fixture();
        let section = fast_track_section(&record).expect("fastTrack");
        let rows: Vec<(Option<usize>, &str, &str, &str, &str)> = section
            .rows
            .iter()
            .map(|r| {
                (
                    r.rank,
                    r.entry.as_str(),
                    r.resources.as_str(),
                    r.price.as_str(),
                    r.capability.as_str(),
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                (
                    Some(1),
                    "#1 challenger miner-cheap",
                    "2 × l4, 4 cores, 32 GiB",
                    "$1.720000 per hour",
                    "750,000 ppm · passes"
                ),
                (
                    Some(2),
                    "#0 baseline",
                    "1 × h100, 8 cores, 64 GiB",
                    "$2.640000 per hour",
                    "750,000 ppm · the incumbent's"
                ),
            ]
        );
        assert_eq!(
            section.rows[0].agreement,
            "30 of 30 items (1,000,000 ppm) · passes"
        );
        assert!(
            section
                .cost_seat
                .starts_with("#1 challenger miner-cheap is seated on cost")
        );
        assert!(
            section
                .reference
                .starts_with("agreement with registry.local/s1-pro@sha256:")
        );
    }

    #[test]
    fn a_lower_score_fails_its_gate_and_declared_text_is_escaped() {
        let mut record = fixture();
        let fast = record.fast_track.as_mut().expect("fastTrack");
        fast.entries[1].capability_ppm = 749_999;
        fast.entries[1].resources.gpu_class = "l4\u{202e}<b>".into();
        fast.cost_seat = None;
        let section = fast_track_section(&record).expect("fastTrack");
        assert_eq!(section.rows[0].capability, "749,999 ppm · fails");
        // Controls are escaped here; the template's autoescape takes the markup.
        assert_eq!(
            section.rows[0].resources,
            "2 × l4\\u{202e}<b>, 4 cores, 32 GiB"
        );
        assert_eq!(section.cost_seat, "no challenger is seated on cost");
        assert_eq!(dollars(31_374_953), "$31.374953");
        assert_eq!(thousands(0), "0");
    }
}
