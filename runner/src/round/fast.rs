//! The s1-fast-speed track in a `decide` round (content/s1-fast-speed.md): while an
//! entry's engine answers the gate items, its declared resources are read from its tree
//! and the sealed capability scorer scores it ([`score_sealed`]); once the reference has
//! answered, each entry's agreement file is written ([`write_agreement_files`]); at seal
//! the round's `fastTrack` record is built from both ([`fast_track`]).

use std::fs;
use std::path::Path;

use receipts::canonical::from_slice_strict;
use receipts::fsutil::IoError;
use receipts::model::{
    AgreementItems, Disqualification, DisqualificationReason, Entry, EntryStatus, FastEntry,
    FastTrackRecord, NoiseCheck, ResourceRequest, RoundRecord, Track,
};
use receipts::rules::agreement::{agreement_items, recount};
use receipts::rules::cost::{
    cost_micro_usd_per_million, noise_floor_bp, price_micro_usd_per_hour, round_cost_seat,
    round_gate_failures,
};
use receipts::rules::decide::Answer;
use serde::{Deserialize, Serialize};

use super::Ctx;
use super::entry::StepError;
use super::record::{EntryResult, PlannedEntry};
use super::steps::StepRun;
use crate::sealed::{ScoredEngine, SealedError};

/// The file at the root of an entry's tree that declares what it runs on: a
/// [`ResourceRequest`] as JSON (`{"gpus": 1, "gpuClass": "h100", "cpus": 8,
/// "memoryGib": 64}`), the shape of a repository manifest's `resources`.
pub const RESOURCES_FILE: &str = "resources.json";

/// The most bytes of a [`RESOURCES_FILE`] read.
const RESOURCES_LIMIT: usize = 4_096;

/// Why an entry of an s1-fast-speed round has no capability score or declared resources.
#[derive(Debug, thiserror::Error)]
pub enum FastError {
    /// The round was started without a capability scorer.
    #[error("track s1-fast-speed needs a capability scorer (`referee round --sealed-dir <dir>`)")]
    NoScorer,
    /// The entry's tree declares no resources the campaign can price.
    #[error("the entry's `{RESOURCES_FILE}`: {0}")]
    Resources(String),
    /// The scorer gave no score.
    #[error("the capability scorer: {0}")]
    Sealed(#[from] SealedError),
}

/// What an entry's answering run adds on track s1-fast-speed, saved with its answers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FastSaved {
    /// What its tree declares it runs on.
    pub(crate) resources: ResourceRequest,
    /// The capability scorer's score of its engine, ppm.
    pub(crate) capability_ppm: u32,
}

/// Whether the round's campaign is of track s1-fast-speed.
pub(crate) fn is_fast(ctx: &Ctx<'_>) -> bool {
    ctx.frozen.campaign.track == Some(Track::S1FastSpeed)
}

/// The entry's declared resources (from `tree`) and its capability score on the sealed
/// items, its engine answering at `endpoint` with the run's `token`; `None` off the
/// track.
///
/// Errors: [`FastError`] (as [`StepError::Fast`]): no scorer, resources missing, not
/// JSON of the declared shape or of a GPU class the campaign does not price, or no score.
pub(crate) fn score_sealed(
    ctx: &Ctx<'_>,
    entry: u32,
    tree: &Path,
    (endpoint, token): (&str, &str),
) -> Result<Option<FastSaved>, StepError> {
    if !is_fast(ctx) {
        return Ok(None);
    }
    let scorer = ctx.options.capability.as_ref().ok_or(FastError::NoScorer)?;
    let path = tree.join(RESOURCES_FILE);
    let bytes = fs::read(&path).map_err(IoError::at("reading", &path))?;
    let resources: ResourceRequest = from_slice_strict(&bytes, RESOURCES_LIMIT)
        .map_err(|e| FastError::Resources(e.to_string()))?;
    if let Some(cost) = &ctx.frozen.campaign.cost {
        price_micro_usd_per_hour(&resources, &cost.price_per_hour)
            .map_err(|e| FastError::Resources(e.to_string()))?;
    }
    let capability_ppm = scorer
        .score(&ScoredEngine {
            entry,
            url: endpoint.to_owned(),
            token: Some(token.to_owned()),
        })
        .map_err(FastError::from)?;
    Ok(Some(FastSaved {
        resources,
        capability_ppm,
    }))
}

/// The bundle-relative agreement file of an entry.
fn agreement_file(planned: &PlannedEntry) -> String {
    format!("agreement/{}.json", planned.slug)
}

/// Writes the agreement file of every entry in `entries` (with its outputs' `.work`
/// path) that answered: its decision and the `reference`'s on each of the campaign's
/// first `agreement.items` gate items. Off the track, nothing. Returns whether every
/// file was written; each failure is a line of `scoring`.
pub(crate) fn write_agreement_files(
    ctx: &Ctx<'_>,
    entries: &[(PlannedEntry, String)],
    reference: &[Answer],
    scoring: &mut StepRun,
) -> bool {
    let Some(spec) = ctx
        .frozen
        .campaign
        .agreement
        .as_ref()
        .filter(|_| is_fast(ctx))
    else {
        return true;
    };
    let mut all = true;
    for (planned, outputs_rel) in entries {
        let written = ctx
            .produced
            .outputs(&ctx.work, outputs_rel)
            .and_then(|saved| {
                let file = AgreementItems {
                    entry: planned.index,
                    reference: spec.reference_image.clone(),
                    items: agreement_items(&saved.decide, reference, spec.items),
                };
                let path = ctx.bundle.join(agreement_file(planned));
                intake::store::write_json_compact(&path, &file)?;
                Ok(recount(&file.items))
            });
        match written {
            Ok(Ok(agreement)) => scoring.line(&format!(
                "{}: agreement with the reference {} of {} items, {} ppm",
                planned.group, agreement.matched, agreement.items, agreement.ppm
            )),
            Ok(Err(error)) => {
                all = false;
                scoring.line(&format!("{}: agreement: {error}", planned.group));
            }
            Err(error) => {
                all = false;
                scoring.line(&format!(
                    "{}: agreement: {}",
                    planned.group,
                    super::entry::error_chain(&error)
                ));
            }
        }
    }
    all
}

/// The scored challengers of `entries` that fail a gate against the incumbent, with the
/// typed reason (`receipts::rules::cost::round_gate_failures`: capability, then
/// agreement, on the rows [`rows`] builds); off the track, none. The passes read their
/// runs as crashed, so neither the throughput nor the cost rule seats them.
pub(crate) fn gate_failures(
    ctx: &Ctx<'_>,
    entries: &[Entry],
) -> Vec<(u32, DisqualificationReason)> {
    rows(ctx, entries).map_or_else(Vec::new, |rows| round_gate_failures(entries, &rows))
}

/// Disqualifies each entry of `entries` that [`gate_failures`] named and that is still
/// scored once its passes are settled (its entry rebuilt from its runs; a leaked key or
/// a run of its own keeps its reason), with its gate and both scores.
pub(crate) fn disqualify_by_gates(
    entries: &mut [Entry],
    failures: &[(u32, DisqualificationReason)],
) {
    for &(index, reason) in failures {
        let Some(entry) = entries
            .iter_mut()
            .find(|e| e.index == index && e.status == EntryStatus::Scored)
        else {
            continue;
        };
        let detail = match reason {
            DisqualificationReason::CapabilityBelowIncumbent {
                capability_ppm,
                incumbent_ppm,
            } => format!(
                "capability {capability_ppm} ppm on the sealed items, below the incumbent's \
                 {incumbent_ppm} ppm"
            ),
            DisqualificationReason::AgreementBelowIncumbent {
                agreement_ppm,
                incumbent_ppm,
            } => format!(
                "agreement with s1-pro {agreement_ppm} ppm, below the incumbent's \
                 {incumbent_ppm} ppm"
            ),
            other => other.as_str().to_owned(),
        };
        entry.status = EntryStatus::Disqualified;
        entry.score_ppm = None;
        entry.disqualification = Some(Disqualification {
            reason,
            detail,
            log_tail: Vec::new(),
        });
    }
}

/// The challenger the cost rule seats (`receipts::rules::cost::round_cost_seat`) among
/// `entries` (their throughputs measured) at the campaign's margins and the floor of the
/// round's `noise`; `None` off the track. The outcome acts on it.
pub(crate) fn cost_seat(
    ctx: &Ctx<'_>,
    entries: &[Entry],
    noise: Option<&NoiseCheck>,
) -> Option<u32> {
    let cost = ctx.frozen.campaign.cost.as_ref()?;
    round_cost_seat(
        entries,
        &rows(ctx, entries)?,
        (ctx.frozen.campaign.overtake_margin_bp, cost.margin_bp),
        noise_floor_bp(noise, cost),
    )
}

/// The round's `fastTrack` record, `record` otherwise complete: the scorer's identity,
/// the [`rows`], and the seat on cost. `None` off the track or without a scorer (the
/// verifier then fails the round's missing record).
pub(crate) fn fast_track(ctx: &Ctx<'_>, record: &RoundRecord) -> Option<FastTrackRecord> {
    let campaign = &ctx.frozen.campaign;
    let (Some(cost), Some(agreement)) = (&campaign.cost, &campaign.agreement) else {
        return None;
    };
    let identity = ctx.options.capability.as_ref()?.identity().clone();
    let rows = rows(ctx, &record.entries)?;
    let cost_seat = round_cost_seat(
        &record.entries,
        &rows,
        (campaign.overtake_margin_bp, cost.margin_bp),
        noise_floor_bp(record.noise.as_ref(), cost),
    );
    Some(FastTrackRecord {
        scorer_sha256: identity.scorer_sha256,
        sealed_set_commitment: identity.sealed_set_commitment,
        agreement_reference: agreement.reference_image.clone(),
        agreement_items: agreement.items,
        entries: rows,
        cost_seat,
    })
}

/// One `fastTrack` row per entry of `entries`: its resources and score as its answering
/// run saved them, its agreement recounted from its file, its price and its cost per
/// decision at its recorded throughput. `None` off the track or without a scorer.
fn rows(ctx: &Ctx<'_>, entries: &[Entry]) -> Option<Vec<FastEntry>> {
    let campaign = &ctx.frozen.campaign;
    let (Some(cost), Some(agreement), true) = (&campaign.cost, &campaign.agreement, is_fast(ctx))
    else {
        return None;
    };
    ctx.options.capability.as_ref()?;
    let planned = ctx.setup.as_ref().map_or(&[][..], |s| s.entries.as_slice());
    let rows: Vec<FastEntry> = entries
        .iter()
        .map(|entry| {
            let saved = ctx
                .journal
                .outputs_record(entry.index)
                .and_then(|run| match &run.result {
                    EntryResult::Measured {
                        outputs: Some(rel), ..
                    } => ctx.produced.outputs(&ctx.work, rel).ok(),
                    _ => None,
                })
                .and_then(|saved| saved.fast.clone());
            let file = planned
                .iter()
                .find(|p| p.index == entry.index)
                .map(agreement_file)
                .filter(|rel| ctx.bundle.join(rel).is_file());
            let matched = file
                .as_ref()
                .and_then(|rel| fs::read(ctx.bundle.join(rel)).ok())
                .and_then(|bytes| serde_json::from_slice::<AgreementItems>(&bytes).ok())
                .and_then(|items| recount(&items.items).ok())
                .map_or(0, |a| a.matched);
            let (resources, capability_ppm) = saved.map_or_else(
                || (ResourceRequest::default(), 0),
                |s| (s.resources, s.capability_ppm),
            );
            let price = price_micro_usd_per_hour(&resources, &cost.price_per_hour).unwrap_or(0);
            FastEntry {
                index: entry.index,
                resources,
                price_micro_usd_per_hour: price,
                cost_micro_usd_per_million: entry
                    .throughput_milli_rps
                    .and_then(|t| cost_micro_usd_per_million(price, t)),
                capability_ppm,
                agreement_matched: matched,
                agreement_ppm: receipts::rules::agreement::agreement_ppm(matched, agreement.items),
                agreement_file: file,
            }
        })
        .collect();
    Some(rows)
}
