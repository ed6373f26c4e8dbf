//! `passes.placement` (v9; content/noise.md, Parallel passes): a parallel round's layout against its
//! campaign's `[parallel]` and `[isolation]`, each pass's placement redrawn from the
//! revealed `passSeed` with `receipts::rules::placement`, and each run's GPUs those of
//! the lane its slot was placed on. Silent for a serial round of a serial campaign, like
//! the other track- or feature-specific checks.

use receipts::model::{
    CpuPinning, FrozenCampaign, GpuDevice, ParallelRecord, ParallelSpec, PassSlot, RoundRecord,
    RunPlacement,
};
use receipts::rules::placement::{lanes, place_pass};

use crate::files::{recomputed, same};
use crate::{CheckName, FailureReason, PredicateVersion, VerifyReport};

/// The file every claim this check compares is written in.
const RECEIPT: &str = "receipt.dsse.json";

/// Runs `passes.placement` on `record` against `campaign` (when `inputs.campaign`
/// passed; else not run): `parallel` as target for the layout, `passes[i]` for each
/// pass's placement, `entries[i].passes[j]` for each run's GPUs. Nothing before v9.
pub(crate) fn check_placement(
    report: &mut VerifyReport,
    record: &RoundRecord,
    campaign: Option<&FrozenCampaign>,
    version: PredicateVersion,
) {
    if version < PredicateVersion::V9 {
        return;
    }
    let spec = campaign.and_then(|c| c.campaign.parallel);
    if spec.is_none() && record.parallel.is_none() && placed_nowhere(record) {
        return;
    }
    let Some(frozen) = campaign else {
        report.not_run(&[CheckName::PassPlacement], CheckName::InputsCampaign);
        return;
    };
    let target = Some("parallel".to_owned());
    let (spec, parallel) = match (spec, &record.parallel) {
        (Some(spec), Some(parallel)) => (spec, parallel),
        (Some(_), None) => {
            let reason = recomputed(RECEIPT, "parallel", "absent", "the campaign's [parallel]");
            report.fail(CheckName::PassPlacement, target, reason);
            return;
        }
        (None, _) => {
            let reason = recomputed(
                RECEIPT,
                "parallel",
                "a parallel layout or placement",
                "none: the campaign has no [parallel]",
            );
            report.fail(CheckName::PassPlacement, target, reason);
            return;
        }
    };
    let pin = frozen.campaign.pins_cpus();
    let layout = check_layout(record, parallel, spec, pin);
    if !report.record(CheckName::PassPlacement, target, layout) {
        return;
    }
    let Some(seed) = &record.seeds.pass_seed else {
        let reason = recomputed(RECEIPT, "seeds.passSeed", "absent", "the placement's seed");
        report.fail(CheckName::PassPlacement, Some("passes".to_owned()), reason);
        return;
    };
    for (i, pass) in record.passes.iter().enumerate() {
        let field = format!("passes[{i}].placement");
        let result = match place_pass(&seed.seed, pass.index, &pass.order, parallel.lanes) {
            Err(e) => Err(recomputed(RECEIPT, &field, "a placement", e)),
            Ok(places) => {
                let redrawn: Vec<RunPlacement> = (places.into_iter())
                    .map(|p| RunPlacement {
                        wave: p.wave,
                        lane: p.lane,
                    })
                    .collect();
                same(RECEIPT, &field, &pass.placement, &redrawn)
            }
        };
        report.record(
            CheckName::PassPlacement,
            Some(format!("passes[{i}]")),
            result,
        );
    }
    for (i, entry) in record.entries.iter().enumerate() {
        for (j, row) in entry.passes.iter().enumerate() {
            let slot = PassSlot {
                entry: entry.index,
                control: row.control,
            };
            let lane = (record.passes.iter())
                .find(|p| p.index == row.pass)
                .and_then(|p| p.placement.get(p.order.iter().position(|s| *s == slot)?))
                .map(|place| place.lane);
            let gpus = lane
                .map(|lane| lane_gpus(parallel, lane))
                .unwrap_or_default();
            let field = format!("entries[{i}].passes[{j}].gpus");
            let result = same(RECEIPT, &field, &row.gpus, &gpus);
            let target = Some(format!("entries[{i}].passes[{j}]"));
            report.record(CheckName::PassPlacement, target, result);
        }
    }
}

/// Whether no pass and no run of `record` claims a placement (a serial round).
fn placed_nowhere(record: &RoundRecord) -> bool {
    record.passes.iter().all(|p| p.placement.is_empty())
        && (record.entries.iter()).all(|e| e.passes.iter().all(|row| row.gpus.is_empty()))
}

/// The layout against the campaign: its GPUs, GPUs per entry and pinning as written, its
/// lanes `gpus / gpusPerEntry`, its devices numbered 0 to `gpus − 1`, and, unpinned, no
/// engine claiming CPUs of its own.
fn check_layout(
    record: &RoundRecord,
    parallel: &ParallelRecord,
    spec: ParallelSpec,
    pin: bool,
) -> Result<(), FailureReason> {
    same(RECEIPT, "parallel.gpus", parallel.gpus, spec.gpus)?;
    same(
        RECEIPT,
        "parallel.gpusPerEntry",
        parallel.gpus_per_entry,
        spec.gpus_per_entry,
    )?;
    same(RECEIPT, "parallel.pin", parallel.pin, pin)?;
    let lanes = lanes(spec.gpus, spec.gpus_per_entry)
        .map_err(|e| recomputed(RECEIPT, "parallel.lanes", parallel.lanes, e))?;
    same(RECEIPT, "parallel.lanes", parallel.lanes, lanes)?;
    let indices: Vec<u32> = parallel.devices.iter().map(|d| d.index).collect();
    same(
        RECEIPT,
        "parallel.devices[].index",
        indices,
        (0..spec.gpus).collect(),
    )?;
    if !pin {
        for (i, entry) in record.entries.iter().enumerate() {
            if let Some(isolation) = &entry.engine.isolation {
                same(
                    RECEIPT,
                    &format!("entries[{i}].engine.isolation.pinning"),
                    isolation.pinning,
                    CpuPinning::None,
                )?;
            }
        }
    }
    Ok(())
}

/// The GPUs of `lane`: devices `lane · gpusPerEntry` up to the next lane's first.
fn lane_gpus(parallel: &ParallelRecord, lane: u32) -> Vec<GpuDevice> {
    let per = parallel.gpus_per_entry as usize;
    (parallel.devices.iter())
        .skip((lane as usize).saturating_mul(per))
        .take(per)
        .cloned()
        .collect()
}
