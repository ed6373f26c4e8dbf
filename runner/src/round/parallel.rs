//! A parallel round's layout (content/noise.md, Parallel passes): the GPUs it records, each pass's
//! placement drawn from the revealed `passSeed` ([`receipts::rules::placement`]), the
//! runs of a pass put in wave order, and the GPUs each run's row names.

use receipts::model::{
    Campaign, Entry, GpuDevice, HardwareFingerprint, ParallelRecord, Pass, PassSlot, RunPlacement,
    Seed32,
};
use receipts::rules::passes::ScheduledRun;
use receipts::rules::placement::{self, PlacementError};

/// A parallel campaign's layout on this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    /// What the receipt records.
    pub record: ParallelRecord,
}

impl Layout {
    /// The layout of `campaign` when it has `[parallel]`: its lanes, its `[isolation]
    /// pin`, and its GPUs — the fingerprint's `gpus[i]` by UUID where the machine has
    /// one, with the PCI bus id NVML gives that UUID (else `placeholder`), else a
    /// placeholder.
    ///
    /// Errors: [`PlacementError::TooFewLanes`] (a frozen campaign was validated, so
    /// only an edited one).
    pub(crate) fn of(
        campaign: &Campaign,
        hardware: &HardwareFingerprint,
    ) -> Result<Option<Self>, PlacementError> {
        let Some(spec) = campaign.parallel else {
            return Ok(None);
        };
        let lanes = placement::lanes(spec.gpus, spec.gpus_per_entry)?;
        let devices = (0..spec.gpus)
            .map(|index| match hardware.gpus.get(index as usize) {
                Some(gpu) => GpuDevice {
                    index,
                    uuid: gpu.uuid.clone(),
                    bus_id: (hardware.nvml.iter())
                        .flat_map(|nvml| &nvml.gpus)
                        .find(|n| {
                            n.uuid == gpu.uuid && n.bus_id != engines::telemetry::gpu::UNAVAILABLE
                        })
                        .map_or_else(|| GpuDevice::PLACEHOLDER.to_owned(), |n| n.bus_id.clone()),
                },
                None => GpuDevice::placeholder(index),
            })
            .collect();
        Ok(Some(Self {
            record: ParallelRecord {
                gpus: spec.gpus,
                gpus_per_entry: spec.gpus_per_entry,
                lanes,
                pin: campaign.pins_cpus(),
                devices,
            },
        }))
    }

    /// Pass `pass`'s placement, aligned with `order`.
    ///
    /// Errors: [`PlacementError::NoBaseline`] for an order without the baseline's runs.
    pub(crate) fn place(
        &self,
        seed: &Seed32,
        pass: u32,
        order: &[PassSlot],
    ) -> Result<Vec<RunPlacement>, PlacementError> {
        Ok(placement::place_pass(seed, pass, order, self.record.lanes)?
            .into_iter()
            .map(|p| RunPlacement {
                wave: p.wave,
                lane: p.lane,
            })
            .collect())
    }

    /// `schedule` (pass after pass) with each pass's runs in wave order, a wave's runs in
    /// the pass's order; `orders[p]` is pass `p`'s recorded order.
    ///
    /// Errors: as [`Layout::place`].
    pub(crate) fn in_waves(
        &self,
        seed: &Seed32,
        schedule: Vec<ScheduledRun>,
        orders: &[Vec<PassSlot>],
    ) -> Result<Vec<ScheduledRun>, PlacementError> {
        let mut keyed = Vec::with_capacity(schedule.len());
        for run in schedule {
            let order = orders.get(run.pass as usize).map_or(&[][..], Vec::as_slice);
            let position = order.iter().position(|s| *s == run.slot).unwrap_or(0);
            let wave = self.placed(seed, run, orders)?.map_or(0, |p| p.wave);
            keyed.push(((run.pass, wave, position), run));
        }
        keyed.sort_by_key(|(key, _)| *key);
        Ok(keyed.into_iter().map(|(_, run)| run).collect())
    }

    /// Where `run` is placed in its pass (its wave and lane); `None` for a slot its
    /// pass's order (`orders[pass]`) does not hold.
    ///
    /// Errors: as [`Layout::place`].
    pub(crate) fn placed(
        &self,
        seed: &Seed32,
        run: ScheduledRun,
        orders: &[Vec<PassSlot>],
    ) -> Result<Option<RunPlacement>, PlacementError> {
        let order = orders.get(run.pass as usize).map_or(&[][..], Vec::as_slice);
        let Some(position) = order.iter().position(|s| *s == run.slot) else {
            return Ok(None);
        };
        Ok(self.place(seed, run.pass, order)?.get(position).copied())
    }

    /// The GPUs of `lane`: `lane · gpusPerEntry` up to the next lane's first.
    pub(crate) fn gpus_of(&self, lane: u32) -> Vec<GpuDevice> {
        let per = self.record.gpus_per_entry;
        let first = lane.saturating_mul(per) as usize;
        (self.record.devices.iter())
            .skip(first)
            .take(per as usize)
            .cloned()
            .collect()
    }

    /// Fills each pass's placement and each row's GPUs (the lane its slot was placed on).
    ///
    /// Errors: as [`Layout::place`].
    pub(crate) fn apply(
        &self,
        seed: &Seed32,
        passes: &mut [Pass],
        entries: &mut [Entry],
    ) -> Result<(), PlacementError> {
        for pass in passes.iter_mut() {
            pass.placement = self.place(seed, pass.index, &pass.order)?;
        }
        for entry in entries.iter_mut() {
            for row in &mut entry.passes {
                let slot = PassSlot {
                    entry: entry.index,
                    control: row.control,
                };
                let lane = passes
                    .iter()
                    .find(|p| p.index == row.pass)
                    .and_then(|p| {
                        let at = p.order.iter().position(|s| *s == slot)?;
                        p.placement.get(at)
                    })
                    .map(|place| place.lane);
                row.gpus = lane.map(|lane| self.gpus_of(lane)).unwrap_or_default();
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use receipts::model::PassOrder;
    use receipts::rules::passes::{pass_order, schedule};

    fn campaign(parallel: &str) -> Campaign {
        Campaign::from_toml(
            "c.toml",
            &format!(
                "id = \"p\"\n{parallel}\n[model]\nname = \"tiny\"\n[baseline]\nrepo = \"b\"\n\
                 commit = \"0123456789abcdef0123456789abcdef01234567\"\n"
            ),
        )
        .unwrap()
    }

    #[test]
    fn a_campaign_without_parallel_has_no_layout_and_placeholders_fill_missing_gpus() {
        let hardware = engines::hardware::fingerprint();
        assert_eq!(Layout::of(&campaign(""), &hardware), Ok(None));
        let layout = Layout::of(
            &campaign("[parallel]\ngpus = 4\ngpus_per_entry = 2\n[isolation]\npin = false"),
            &HardwareFingerprint {
                gpus: Vec::new(),
                ..hardware
            },
        )
        .unwrap()
        .unwrap();
        assert_eq!(layout.record.lanes, 2);
        assert!(!layout.record.pin);
        assert_eq!(
            layout.record.devices,
            (0..4).map(GpuDevice::placeholder).collect::<Vec<_>>()
        );
        assert_eq!(
            layout.gpus_of(1),
            [GpuDevice::placeholder(2), GpuDevice::placeholder(3)]
        );
    }

    /// Every pass's runs stay in their pass, the baseline's run and its control in
    /// different waves, the waves in order.
    #[test]
    fn the_schedule_runs_wave_after_wave() {
        let hardware = engines::hardware::fingerprint();
        let layout = Layout::of(&campaign("[parallel]\ngpus = 2"), &hardware)
            .unwrap()
            .unwrap();
        let seed = Seed32([7; 32]);
        let orders: Vec<Vec<PassSlot>> = (0..3).map(|p| pass_order(&seed, p, 4)).collect();
        let runs = schedule(PassOrder::Interleaved, &seed, 3, 4);
        let waved = layout.in_waves(&seed, runs.clone(), &orders).unwrap();
        assert_eq!(waved.len(), runs.len());
        // Pass 0's order `12bc3` in waves {1, 2}, {b, 3}, {c} (rules::placement).
        let letters: String = waved[..5]
            .iter()
            .map(|r| match (r.slot.entry, r.slot.control) {
                (0, false) => 'b',
                (0, true) => 'c',
                (n, _) => char::from_digit(n, 10).unwrap_or('?'),
            })
            .collect();
        assert_eq!(letters, "12b3c");
        assert!(waved.windows(2).all(|w| w[0].pass <= w[1].pass));
    }
}
