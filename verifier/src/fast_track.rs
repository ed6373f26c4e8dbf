//! The s1-fast-speed track's record (`fastTrack`, content/s1-fast-speed.md): what the
//! bundle's own files determine is recomputed, the rest is attested
//! (`crate::ATTESTED_FIELDS`).
//!
//! - `fastTrack.costs`: one row per entry, in entry order; each entry's price from its
//!   declared resources and the frozen campaign's `[cost]` prices, its cost per decision
//!   from that price and its recorded throughput, its agreement ppm from its matched
//!   count, and the agreement reference and item count the campaign's;
//! - `fastTrack.decision`: the challenger seated on cost, recomputed from the rows — both
//!   gates against the incumbent's scores (capability, agreement), no challenger through
//!   both gates that overtakes on throughput, then `receipts::rules::cost::cost_seat` at
//!   the campaign's cost margin and the round's noise floor (`noise.aaSpreadBp`);
//! - `fastTrack.agreement` (from v9): each entry's agreement file, and its matched count
//!   recounted from the file's per-item decisions.
//! - `fastTrack.gates` (from v9): a challenger whose row fails a gate is not scored, and
//!   a gate disqualification names the gate its row fails; the outcome seated on cost is
//!   `paired.decision`'s (`crate::paired`).
//!
//! The checks run from round/v8 where the frozen campaign is of track `s1-fast-speed` or
//! the record holds `fastTrack`; no build before v8 knew the track, so an older bundle
//! never meets them.

use std::path::Path;

use receipts::model::{
    AgreementItems, Campaign, DisqualificationReason, EntryStatus, FastEntry, FastTrackRecord,
    FrozenCampaign, Role, RoundRecord, Sha256Hex, Track,
};
use receipts::rules::agreement::{agreement_ppm, recount};
use receipts::rules::capability::MAX_SCORE_PPM;
use receipts::rules::cost::{
    cost_micro_usd_per_million, gate_failure, incumbent_of, noise_floor_bp,
    price_micro_usd_per_hour, round_cost_seat,
};

use crate::files::{read_json, same};
use crate::{CheckName, FailureReason, PredicateVersion, VerifyReport};

/// Runs `fastTrack.costs` (one check per entry, `fastTrack.entries[i]` as target),
/// `fastTrack.decision` and, from v9, `fastTrack.agreement` (files read from the bundle
/// `dir`) on `record` against `campaign` (when `inputs.campaign` passed; else not run);
/// nothing before v8.
pub(crate) fn check_fast_track(
    report: &mut VerifyReport,
    dir: &Path,
    record: &RoundRecord,
    campaign: Option<&FrozenCampaign>,
    version: PredicateVersion,
) {
    if version < PredicateVersion::V8 {
        return;
    }
    let fast_campaign = campaign.is_some_and(|c| c.campaign.track == Some(Track::S1FastSpeed));
    if !fast_campaign && record.fast_track.is_none() {
        return;
    }
    let Some(frozen) = campaign else {
        report.not_run(
            &[
                CheckName::FastTrackCosts,
                CheckName::FastTrackDecision,
                CheckName::FastTrackAgreement,
                CheckName::FastTrackGates,
            ],
            CheckName::InputsCampaign,
        );
        return;
    };
    let campaign = &frozen.campaign;
    let Some(fast) = &record.fast_track else {
        report.fail(
            CheckName::FastTrackCosts,
            Some("fastTrack".to_owned()),
            fail(
                "fastTrack",
                "missing: the campaign is of track s1-fast-speed".into(),
            ),
        );
        return;
    };
    let costs_hold = check_costs(report, record, fast, campaign);
    let result = if costs_hold {
        check_decision(record, fast, campaign)
    } else {
        Err(fail(
            "fastTrack.costSeat",
            "not recomputed: a row of fastTrack.entries does not hold".into(),
        ))
    };
    report.record(
        CheckName::FastTrackDecision,
        Some("fastTrack.costSeat".to_owned()),
        result,
    );
    if version >= PredicateVersion::V9 {
        check_agreement(report, dir, record, fast, frozen);
        check_gates(report, record, fast);
    } else {
        report.not_applicable(CheckName::FastTrackAgreement, None, version.name());
        report.not_applicable(CheckName::FastTrackGates, None, version.name());
    }
}

/// `fastTrack.gates` (from round/v9): one check per challenger, `entries[i].status` as
/// target. Its row against the incumbent's (`receipts::rules::cost::gate_failure`; the
/// incumbent the cost rule's, `receipts::rules::cost::incumbent_of`): a gate
/// disqualification must be the gate the row fails, with both scores, and a row failing a
/// gate cannot be scored — the runner disqualifies it before the passes decide, so a
/// receipt seating it, on throughput or on cost, fails here.
fn check_gates(report: &mut VerifyReport, record: &RoundRecord, fast: &FastTrackRecord) {
    let incumbent = incumbent_of(&record.entries, &fast.entries).map(|(_, row)| row);
    for entry in record.entries.iter().filter(|e| e.role == Role::Challenger) {
        let field = format!("entries[{}].status", entry.index);
        let row = fast.entries.iter().find(|r| r.index == entry.index);
        let expected = row
            .zip(incumbent)
            .and_then(|(row, inc)| gate_failure(row, inc));
        let claimed = entry
            .disqualification
            .as_ref()
            .map(|d| d.reason)
            .filter(|reason| {
                matches!(
                    reason,
                    DisqualificationReason::CapabilityBelowIncumbent { .. }
                        | DisqualificationReason::AgreementBelowIncumbent { .. }
                )
            });
        let shown = |reason: Option<DisqualificationReason>| match reason {
            Some(DisqualificationReason::CapabilityBelowIncumbent {
                capability_ppm,
                incumbent_ppm,
            }) => format!(
                "capability_below_incumbent: {capability_ppm} ppm, the incumbent's \
                 {incumbent_ppm} ppm"
            ),
            Some(DisqualificationReason::AgreementBelowIncumbent {
                agreement_ppm,
                incumbent_ppm,
            }) => format!(
                "agreement_below_incumbent: {agreement_ppm} ppm, the incumbent's \
                 {incumbent_ppm} ppm"
            ),
            Some(other) => other.as_str().to_owned(),
            None => "no gate failed".to_owned(),
        };
        let result = match (claimed, expected) {
            (Some(claimed), expected)
                if Some(claimed) != expected || entry.status != EntryStatus::Disqualified =>
            {
                Err(fail(
                    &field,
                    format!(
                        "{} ({}), but its row against the incumbent's gives {}",
                        entry.status.as_str(),
                        shown(Some(claimed)),
                        shown(expected)
                    ),
                ))
            }
            (None, Some(expected)) if entry.status == EntryStatus::Scored => Err(fail(
                &field,
                format!(
                    "scored, but its row fails a gate against the incumbent's: {}; it \
                     cannot be seated",
                    shown(Some(expected))
                ),
            )),
            _ => Ok(()),
        };
        report.record(CheckName::FastTrackGates, Some(field), result);
    }
}

/// The reason of a failed check of this module.
fn fail(field: &str, message: String) -> FailureReason {
    FailureReason::FastTrack {
        field: field.to_owned(),
        message,
    }
}

/// `fastTrack.costs`: the round-level fields, then each row; whether all hold.
fn check_costs(
    report: &mut VerifyReport,
    record: &RoundRecord,
    fast: &FastTrackRecord,
    campaign: &Campaign,
) -> bool {
    let round_level = match (&campaign.agreement, &campaign.cost) {
        (Some(agreement), Some(_)) => {
            if fast.agreement_reference != agreement.reference_image {
                Err(fail(
                    "fastTrack.agreementReference",
                    format!(
                        "`{}`, but the campaign's reference is `{}`",
                        fast.agreement_reference, agreement.reference_image
                    ),
                ))
            } else if fast.agreement_items != agreement.items {
                Err(fail(
                    "fastTrack.agreementItems",
                    format!(
                        "{}, but the campaign compares {} items",
                        fast.agreement_items, agreement.items
                    ),
                ))
            } else if fast.entries.len() != record.entries.len() {
                Err(fail(
                    "fastTrack.entries",
                    format!(
                        "{} rows for {} entries",
                        fast.entries.len(),
                        record.entries.len()
                    ),
                ))
            } else {
                Ok(())
            }
        }
        _ => Err(fail(
            "fastTrack",
            "recorded, but the campaign is not of track s1-fast-speed".into(),
        )),
    };
    if !report.record(
        CheckName::FastTrackCosts,
        Some("fastTrack".to_owned()),
        round_level,
    ) {
        return false;
    }
    let mut all = true;
    for (position, (row, entry)) in fast.entries.iter().zip(&record.entries).enumerate() {
        let target = format!("fastTrack.entries[{position}]");
        let result = check_row(
            row,
            entry.index,
            entry.throughput_milli_rps,
            fast,
            campaign,
            &target,
        );
        all &= report.record(CheckName::FastTrackCosts, Some(target), result);
    }
    all
}

/// One row against its entry's index and throughput and the campaign's prices.
fn check_row(
    row: &FastEntry,
    index: u32,
    throughput_milli_rps: Option<u64>,
    fast: &FastTrackRecord,
    campaign: &Campaign,
    target: &str,
) -> Result<(), FailureReason> {
    let field = |name: &str| format!("{target}.{name}");
    if row.index != index {
        return Err(fail(
            &field("index"),
            format!("{}, but this row is entry {index}'s", row.index),
        ));
    }
    let prices = campaign
        .cost
        .as_ref()
        .map(|c| &c.price_per_hour)
        .ok_or_else(|| fail("fastTrack", "the campaign has no [cost]".into()))?;
    let price = price_micro_usd_per_hour(&row.resources, prices)
        .map_err(|e| fail(&field("resources"), e.to_string()))?;
    if row.price_micro_usd_per_hour != price {
        return Err(fail(
            &field("priceMicroUsdPerHour"),
            format!(
                "{}, but its resources at the campaign's prices cost {price}",
                row.price_micro_usd_per_hour
            ),
        ));
    }
    let cost = throughput_milli_rps.and_then(|t| cost_micro_usd_per_million(price, t));
    if row.cost_micro_usd_per_million != cost {
        return Err(fail(
            &field("costMicroUsdPerMillion"),
            format!(
                "{:?}, but its price over its throughput gives {cost:?}",
                row.cost_micro_usd_per_million
            ),
        ));
    }
    if row.capability_ppm > MAX_SCORE_PPM {
        return Err(fail(
            &field("capabilityPpm"),
            format!("{} is above {MAX_SCORE_PPM}", row.capability_ppm),
        ));
    }
    if row.agreement_matched > fast.agreement_items
        || row.agreement_ppm != agreement_ppm(row.agreement_matched, fast.agreement_items)
    {
        return Err(fail(
            &field("agreementPpm"),
            format!(
                "{} ppm with {} of {} items matched; that is {} ppm",
                row.agreement_ppm,
                row.agreement_matched,
                fast.agreement_items,
                agreement_ppm(row.agreement_matched, fast.agreement_items)
            ),
        ));
    }
    Ok(())
}

/// `fastTrack.decision`: the cost seat recomputed from rows that already hold.
fn check_decision(
    record: &RoundRecord,
    fast: &FastTrackRecord,
    campaign: &Campaign,
) -> Result<(), FailureReason> {
    let expected = expected_cost_seat(record, fast, campaign);
    if fast.cost_seat == expected {
        Ok(())
    } else {
        Err(fail(
            "fastTrack.costSeat",
            format!(
                "{:?}, but the gates and the cost rule seat {expected:?}",
                fast.cost_seat
            ),
        ))
    }
}

/// The challenger a round's outcome seats on cost (`paired.decision`): the cost rule over
/// `record`'s entries and `fastTrack` rows, as [`expected_cost_seat`]; `None` without a
/// `fastTrack` record or outside a campaign scoring cost.
pub(crate) fn recomputed_cost_seat(record: &RoundRecord, campaign: &Campaign) -> Option<u32> {
    (campaign.track == Some(Track::S1FastSpeed))
        .then_some(record.fast_track.as_ref())
        .flatten()
        .and_then(|fast| expected_cost_seat(record, fast, campaign))
}

/// The challenger seated on cost (`receipts::rules::cost::round_cost_seat`, the runner's
/// own rule) at the campaign's margins and the round's noise floor
/// (`receipts::rules::cost::noise_floor_bp`).
fn expected_cost_seat(
    record: &RoundRecord,
    fast: &FastTrackRecord,
    campaign: &Campaign,
) -> Option<u32> {
    let cost = campaign.cost.as_ref()?;
    round_cost_seat(
        &record.entries,
        &fast.entries,
        (campaign.overtake_margin_bp, cost.margin_bp),
        noise_floor_bp(record.noise.as_ref(), cost),
    )
}

/// `fastTrack.agreement` (from round/v9): one check per row, `fastTrack.entries[i]` as
/// target. A row's agreement file is its entry's (`entry`), against the campaign's
/// reference, of exactly `agreementItems` items in order whose prompts are the round's
/// regenerated gate items, with the same reference decisions as every other file of the
/// round; its `agreementMatched` is recounted from the file
/// (`receipts::rules::agreement::recount`). A row without a file matched nothing and its
/// entry is not scored (a scored entry answered the items).
fn check_agreement(
    report: &mut VerifyReport,
    dir: &Path,
    record: &RoundRecord,
    fast: &FastTrackRecord,
    frozen: &FrozenCampaign,
) {
    let prompts: Result<Vec<Sha256Hex>, FailureReason> =
        crate::plan::regenerated_workload(dir, record, frozen).map(|w| {
            w.correctness_items()
                .into_iter()
                .map(|item| item.prompt_sha256)
                .collect()
        });
    let mut reference: Option<(String, Vec<String>)> = None;
    for (position, (row, entry)) in fast.entries.iter().zip(&record.entries).enumerate() {
        let target = format!("fastTrack.entries[{position}]");
        let result = match &row.agreement_file {
            None if entry.status == EntryStatus::Scored => Err(fail(
                &format!("{target}.agreementFile"),
                "absent, but the entry is scored: it answered the items".into(),
            )),
            None if row.agreement_matched != 0 => Err(fail(
                &format!("{target}.agreementMatched"),
                format!("{} with no agreement file", row.agreement_matched),
            )),
            None => Ok(()),
            Some(name) => read_json::<AgreementItems>(dir, name).and_then(|file| {
                let prompts = prompts.as_ref().map_err(Clone::clone)?;
                check_agreement_file((name, &file), row, fast, prompts, &mut reference)
            }),
        };
        report.record(CheckName::FastTrackAgreement, Some(target), result);
    }
}

/// One row's agreement file `file` (named `name`) against the row, the record, the
/// regenerated gate `prompts` and the reference decisions of the first file read.
fn check_agreement_file(
    (name, file): (&str, &AgreementItems),
    row: &FastEntry,
    fast: &FastTrackRecord,
    prompts: &[Sha256Hex],
    reference: &mut Option<(String, Vec<String>)>,
) -> Result<(), FailureReason> {
    same(name, "entry", file.entry, row.index)?;
    same(
        name,
        "reference",
        file.reference.as_str(),
        fast.agreement_reference.as_str(),
    )?;
    let count = usize::try_from(fast.agreement_items).unwrap_or(usize::MAX);
    same(
        name,
        "items.length",
        file.items.len(),
        count.min(prompts.len()),
    )?;
    for (position, (item, prompt)) in file.items.iter().zip(prompts).enumerate() {
        same(
            name,
            &format!("items[{position}].index"),
            usize::try_from(item.index).unwrap_or(usize::MAX),
            position,
        )?;
        same(
            name,
            &format!("items[{position}].promptSha256"),
            item.prompt_sha256,
            *prompt,
        )?;
    }
    let decisions: Vec<String> = file
        .items
        .iter()
        .map(|i| i.reference_decision.clone())
        .collect();
    match reference {
        Some((first, theirs)) if *theirs != decisions => {
            return Err(fail(
                &format!("{name}.items[].referenceDecision"),
                format!(
                    "not the reference decisions of {first}: one reference answers every entry"
                ),
            ));
        }
        Some(_) => {}
        None => *reference = Some((name.to_owned(), decisions)),
    }
    let counted = recount(&file.items).map_err(|e| fail(name, e.to_string()))?;
    same(
        "receipt.dsse.json",
        &format!("fastTrack.entries[{}].agreementMatched", row.index),
        row.agreement_matched,
        counted.matched,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use receipts::model::{Campaign, NoiseCheck, NoiseVerdict, ResourceRequest, Role};
    use std::path::Path;

    const CAMPAIGN: &str = r#"
id = "s1-fast"
track = "s1-fast-speed"
workload_kind = "decide"
overtake_margin_bp = 500
[model]
name = "s1-fast"
[baseline]
repo = "baseline"
commit = "0123456789abcdef0123456789abcdef01234567"
[decide]
request_template = '{"prompt": "{{prompt}}"}'
decision_pointer = "/decision"
vector_pointer = "/logprobs"
decisions = ["a", "b"]
[capability]
command = ["/opt/sealed/score"]
[agreement]
reference_image = "s1-pro@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
items = 7
[cost.price_per_hour]
gpu = { h100 = 2_000_000, l4 = 700_000 }
cpu = 40_000
memory_gib = 5_000
"#;

    fn campaign() -> FrozenCampaign {
        FrozenCampaign::freeze(Campaign::from_toml("c.toml", CAMPAIGN).expect("campaign"))
            .expect("frozen")
    }

    fn request(gpus: u32, class: &str) -> ResourceRequest {
        ResourceRequest {
            gpus,
            gpu_class: class.to_owned(),
            cpus: 8,
            memory_gib: 64,
        }
    }

    /// A round of the v8 fixture's entries made four: the baseline, the incumbent on one
    /// H100 at 100 decisions/s, a challenger on two L4s at 98 (cheaper, slightly slower),
    /// and a challenger on two L4s at 99 whose capability is below the incumbent's; the
    /// A/A noise floor 300 bp. Each row as the runner would write it.
    fn round() -> RoundRecord {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v8-round/receipt.dsse.json");
        let envelope: serde_json::Value =
            serde_json::from_slice(&std::fs::read(path).expect("fixture")).expect("json");
        let payload = receipts::dsse::decode_base64(envelope["payload"].as_str().expect("payload"))
            .expect("base64");
        let statement: serde_json::Value = serde_json::from_slice(&payload).expect("statement");
        let mut record: RoundRecord =
            serde_json::from_value(statement["predicate"].clone()).expect("round record");
        let challenger = record.entries[1].clone();
        record.entries.truncate(1);
        for (index, role, throughput) in [
            (1, Role::Incumbent, 100_000),
            (2, Role::Challenger, 98_000),
            (3, Role::Challenger, 99_000),
        ] {
            let mut entry = challenger.clone();
            entry.index = index;
            entry.role = role;
            entry.throughput_milli_rps = Some(throughput);
            record.entries.push(entry);
        }
        record.entries[0].throughput_milli_rps = Some(50_000);
        record.noise = Some(NoiseCheck {
            baseline_spread_bp: Some(100),
            aa_spread_bp: Some(300),
            drift_bound_bp: 500,
            margin_bp: 500,
            verdict: NoiseVerdict::Quiet,
        });
        let prices = &campaign().campaign.cost.expect("cost").price_per_hour;
        let row =
            |entry: &receipts::model::Entry, resources: ResourceRequest, capability, matched| {
                let price = price_micro_usd_per_hour(&resources, prices).expect("priced");
                FastEntry {
                    index: entry.index,
                    resources,
                    price_micro_usd_per_hour: price,
                    cost_micro_usd_per_million: entry
                        .throughput_milli_rps
                        .and_then(|t| cost_micro_usd_per_million(price, t)),
                    capability_ppm: capability,
                    agreement_matched: matched,
                    agreement_ppm: agreement_ppm(matched, 7),
                    agreement_file: None,
                }
            };
        // Entry 3's capability is below the incumbent's: the runner disqualified it.
        record.entries[3].status = receipts::model::EntryStatus::Disqualified;
        record.entries[3].disqualification = Some(receipts::model::Disqualification {
            reason: DisqualificationReason::CapabilityBelowIncumbent {
                capability_ppm: 799_999,
                incumbent_ppm: 800_000,
            },
            detail: "capability below the incumbent's".into(),
            log_tail: Vec::new(),
        });
        let entries = &record.entries;
        let rows = vec![
            row(&entries[0], request(1, "h100"), 700_000, 7),
            row(&entries[1], request(1, "h100"), 800_000, 6),
            row(&entries[2], request(2, "l4"), 800_000, 6),
            row(&entries[3], request(2, "l4"), 799_999, 7),
        ];
        record.fast_track = Some(FastTrackRecord {
            scorer_sha256: receipts::model::Sha256Hex::digest(b"scorer"),
            sealed_set_commitment: receipts::model::Sha256Hex::digest(b"set"),
            agreement_reference: campaign()
                .campaign
                .agreement
                .expect("agreement")
                .reference_image,
            agreement_items: 7,
            entries: rows,
            cost_seat: Some(2),
        });
        record
    }

    /// The (check, target, passed) of every check `check_fast_track` records.
    fn checks(record: &RoundRecord) -> Vec<(&'static str, String, bool)> {
        let mut report = VerifyReport::new(Path::new("bundle"));
        check_fast_track(
            &mut report,
            Path::new("bundle"),
            record,
            Some(&campaign()),
            PredicateVersion::V8,
        );
        report
            .checks
            .iter()
            .filter(|c| c.not_applicable.is_none())
            .map(|c| {
                (
                    c.name.as_str(),
                    c.target.clone().unwrap_or_default(),
                    c.passed,
                )
            })
            .collect()
    }

    fn failed(record: &RoundRecord) -> Vec<String> {
        checks(record)
            .into_iter()
            .filter(|(_, _, passed)| !passed)
            .map(|(name, target, _)| format!("{name} {target}"))
            .collect()
    }

    #[test]
    fn the_cheaper_entry_seated_on_cost_verifies_and_its_costs_are_recomputed() {
        let record = round();
        let fast = record.fast_track.as_ref().expect("fast");
        // 1 × 2 000 000 + 8 × 40 000 + 64 × 5 000 µ$/h at 100 decisions/s, and
        // 2 × 700 000 + … at 98.
        assert_eq!(
            fast.entries
                .iter()
                .map(|r| (r.price_micro_usd_per_hour, r.cost_micro_usd_per_million))
                .collect::<Vec<_>>(),
            [
                (2_640_000, Some(14_666_667)),
                (2_640_000, Some(7_333_334)),
                (2_040_000, Some(5_782_313)),
                (2_040_000, Some(5_723_906)),
            ]
        );
        assert_eq!(failed(&record), Vec::<String>::new());
        assert_eq!(checks(&record).len(), 6);
    }

    #[test]
    fn a_forged_cost_price_agreement_or_seat_fails() {
        let edit = |f: &dyn Fn(&mut FastTrackRecord)| {
            let mut record = round();
            f(record.fast_track.as_mut().expect("fast"));
            failed(&record)
        };
        assert_eq!(
            edit(&|f| f.entries[2].cost_micro_usd_per_million = Some(5_000_000)),
            [
                "fastTrack.costs fastTrack.entries[2]",
                "fastTrack.decision fastTrack.costSeat"
            ]
        );
        assert_eq!(
            edit(&|f| f.entries[2].resources.gpus = 1),
            [
                "fastTrack.costs fastTrack.entries[2]",
                "fastTrack.decision fastTrack.costSeat"
            ]
        );
        assert_eq!(
            edit(&|f| f.entries[1].agreement_ppm = 1_000_000),
            [
                "fastTrack.costs fastTrack.entries[1]",
                "fastTrack.decision fastTrack.costSeat"
            ]
        );
        assert_eq!(
            edit(&|f| f.agreement_items = 8),
            [
                "fastTrack.costs fastTrack",
                "fastTrack.decision fastTrack.costSeat"
            ]
        );
        // The challenger whose capability is below the incumbent's cannot take the seat,
        // though it is the cheapest per decision.
        assert_eq!(
            edit(&|f| f.cost_seat = Some(3)),
            ["fastTrack.decision fastTrack.costSeat"]
        );
        assert_eq!(
            edit(&|f| f.cost_seat = None),
            ["fastTrack.decision fastTrack.costSeat"]
        );
    }

    #[test]
    fn a_challenger_below_the_incumbents_capability_fails_the_gate() {
        // Raise entry 2's capability by nothing and lower it by one: the seat goes to
        // nobody (entry 3 is also below), so a record still naming entry 2 fails.
        let mut record = round();
        let fast = record.fast_track.as_mut().expect("fast");
        fast.entries[2].capability_ppm = 799_999;
        assert_eq!(failed(&record), ["fastTrack.decision fastTrack.costSeat"]);
        record.fast_track.as_mut().expect("fast").cost_seat = None;
        assert_eq!(failed(&record), Vec::<String>::new());
    }

    #[test]
    fn a_fast_campaign_without_the_record_fails_and_other_rounds_are_not_checked() {
        let mut record = round();
        record.fast_track = None;
        assert_eq!(failed(&record), ["fastTrack.costs fastTrack"]);
        let mut report = VerifyReport::new(Path::new("bundle"));
        check_fast_track(
            &mut report,
            Path::new("bundle"),
            &record,
            None,
            PredicateVersion::V8,
        );
        assert!(report.checks.is_empty());
        // Before v8 nothing is checked, the record or not.
        let mut report = VerifyReport::new(Path::new("bundle"));
        check_fast_track(
            &mut report,
            Path::new("bundle"),
            &round(),
            Some(&campaign()),
            PredicateVersion::V7,
        );
        assert!(report.checks.is_empty());
    }

    /// The `fastTrack.gates` checks of `record` at v9 as (target, passed).
    fn gates(record: &RoundRecord) -> Vec<(String, bool)> {
        let mut report = VerifyReport::new(Path::new("bundle"));
        check_fast_track(
            &mut report,
            Path::new("bundle"),
            record,
            Some(&campaign()),
            PredicateVersion::V9,
        );
        report
            .checks
            .iter()
            .filter(|c| c.name == CheckName::FastTrackGates)
            .map(|c| (c.target.clone().unwrap_or_default(), c.passed))
            .collect()
    }

    /// Only the gates' failures of `record`, with their messages.
    fn gate_failures(record: &RoundRecord) -> Vec<String> {
        let mut report = VerifyReport::new(Path::new("bundle"));
        check_fast_track(
            &mut report,
            Path::new("bundle"),
            record,
            Some(&campaign()),
            PredicateVersion::V9,
        );
        report
            .failures()
            .filter(|c| c.name == CheckName::FastTrackGates)
            .filter_map(|c| c.reason.as_ref().map(ToString::to_string))
            .collect()
    }

    #[test]
    fn a_challenger_failing_a_gate_is_disqualified_with_its_scores() {
        let record = round();
        // The cheaper challenger passes both gates; the one below the incumbent's
        // capability is disqualified for it, with both scores.
        assert_eq!(
            gates(&record),
            [
                ("entries[2].status".to_owned(), true),
                ("entries[3].status".to_owned(), true)
            ]
        );
        assert_eq!(
            receipts::rules::cost::round_gate_failures(
                &{
                    let mut scored = record.entries.clone();
                    scored[3].status = EntryStatus::Scored;
                    scored
                },
                &record.fast_track.as_ref().expect("fast").entries
            ),
            [(
                3,
                DisqualificationReason::CapabilityBelowIncumbent {
                    capability_ppm: 799_999,
                    incumbent_ppm: 800_000
                }
            )]
        );
        // Scored again, as a forger seating it would need: the gate fails.
        let mut rescored = record.clone();
        rescored.entries[3].status = EntryStatus::Scored;
        rescored.entries[3].disqualification = None;
        assert_eq!(
            gate_failures(&rescored),
            [
                "`receipt.dsse.json` entries[3].status: scored, but its row fails a gate against the \
              incumbent's: capability_below_incumbent: 799999 ppm, the incumbent's 800000 ppm; \
              it cannot be seated"
            ]
        );
        // A gate claimed with other scores, and a gate the row does not fail.
        let mut other_scores = record.clone();
        if let Some(d) = other_scores.entries[3].disqualification.as_mut() {
            d.reason = DisqualificationReason::CapabilityBelowIncumbent {
                capability_ppm: 1,
                incumbent_ppm: 800_000,
            };
        }
        assert_eq!(gate_failures(&other_scores).len(), 1);
        let mut passing = record.clone();
        passing.entries[2].status = EntryStatus::Disqualified;
        passing.entries[2].disqualification = record.entries[3].disqualification.clone();
        assert_eq!(
            gates(&passing),
            [
                ("entries[2].status".to_owned(), false),
                ("entries[3].status".to_owned(), true)
            ]
        );
        // Agreement below the incumbent's (5 of 7 against 6 of 7), left scored: the
        // second gate fails.
        let mut disagreeing = record.clone();
        let row = &mut disagreeing.fast_track.as_mut().expect("fast").entries[2];
        row.agreement_matched = 5;
        row.agreement_ppm = agreement_ppm(5, 7);
        assert_eq!(
            gate_failures(&disagreeing),
            [
                "`receipt.dsse.json` entries[2].status: scored, but its row fails a gate against the \
              incumbent's: agreement_below_incumbent: 714285 ppm, the incumbent's 857142 ppm; \
              it cannot be seated"
            ]
        );
        // Before v9 no gate is checked.
        assert!(
            checks(&rescored)
                .iter()
                .all(|(name, _, _)| *name != "fastTrack.gates")
        );
    }

    /// [`round`] with an agreement file per row in `dir`, as the runner writes them: the
    /// reference decides `a` on each of the 7 items, and each entry agrees on its first
    /// `agreementMatched` items and decides `b` on the rest.
    fn with_agreement_files(dir: &Path) -> RoundRecord {
        let mut record = round();
        let prompts: Vec<Sha256Hex> = crate::plan::regenerated_workload(dir, &record, &campaign())
            .expect("workload")
            .correctness_items()
            .into_iter()
            .map(|item| item.prompt_sha256)
            .collect();
        let fast = record.fast_track.as_mut().expect("fast");
        std::fs::create_dir_all(dir.join("agreement")).expect("mkdir");
        for row in &mut fast.entries {
            let name = format!("agreement/entry-{}.json", row.index);
            let items = (0..7u32)
                .zip(&prompts)
                .map(|(index, prompt)| receipts::model::AgreementItem {
                    index,
                    prompt_sha256: *prompt,
                    decision: Some(
                        if index < row.agreement_matched {
                            "a"
                        } else {
                            "b"
                        }
                        .into(),
                    ),
                    reference_decision: "a".into(),
                })
                .collect();
            let file = AgreementItems {
                entry: row.index,
                reference: fast.agreement_reference.clone(),
                items,
            };
            std::fs::write(dir.join(&name), serde_json::to_vec(&file).expect("json"))
                .expect("write");
            row.agreement_file = Some(name);
        }
        record
    }

    /// The failed `fastTrack.agreement` checks of `record` read from `dir`, at v9.
    fn agreement_failures(dir: &Path, record: &RoundRecord) -> Vec<String> {
        let mut report = VerifyReport::new(dir);
        check_fast_track(
            &mut report,
            dir,
            record,
            Some(&campaign()),
            PredicateVersion::V9,
        );
        report
            .failures()
            .map(|c| {
                format!(
                    "{} {}",
                    c.name.as_str(),
                    c.target.clone().unwrap_or_default()
                )
            })
            .collect()
    }

    #[test]
    fn matched_counts_are_recounted_from_the_agreement_files_and_a_forged_file_fails() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dir = dir.path();
        let record = with_agreement_files(dir);
        assert_eq!(agreement_failures(dir, &record), Vec::<String>::new());
        let mut report = VerifyReport::new(dir);
        check_fast_track(
            &mut report,
            dir,
            &record,
            Some(&campaign()),
            PredicateVersion::V9,
        );
        assert_eq!(
            report
                .checks
                .iter()
                .filter(|c| c.name == CheckName::FastTrackAgreement && c.passed)
                .count(),
            4
        );
        // A matched count raised with its ppm in the receipt (the seat does not move):
        // the file says 6.
        let mut raised = record.clone();
        let row = &mut raised.fast_track.as_mut().expect("fast").entries[2];
        row.agreement_matched = 7;
        row.agreement_ppm = 1_000_000;
        assert_eq!(
            agreement_failures(dir, &raised),
            ["fastTrack.agreement fastTrack.entries[2]"]
        );
        // Another entry's file cited, and a row with no file for a scored entry.
        let mut cited = record.clone();
        let rows = &mut cited.fast_track.as_mut().expect("fast").entries;
        rows[3].agreement_file = Some("agreement/entry-2.json".into());
        rows[1].agreement_file = None;
        assert_eq!(
            agreement_failures(dir, &cited),
            [
                "fastTrack.agreement fastTrack.entries[1]",
                "fastTrack.agreement fastTrack.entries[3]"
            ]
        );
        // One file's reference decision changed, the entry's decision with it, so its
        // count still holds: one reference answered every entry, so it fails.
        let name = "agreement/entry-3.json";
        let mut file: AgreementItems =
            serde_json::from_slice(&std::fs::read(dir.join(name)).expect("read")).expect("json");
        file.items[0].reference_decision = "b".into();
        file.items[0].decision = Some("b".into());
        std::fs::write(dir.join(name), serde_json::to_vec(&file).expect("json")).expect("write");
        assert_eq!(
            agreement_failures(dir, &record),
            ["fastTrack.agreement fastTrack.entries[3]"]
        );
    }
}
