//! Entries in parallel on a machine's GPUs (content/noise.md, Parallel passes): the campaign's
//! `[parallel]` and `[isolation]`, and what a round records of them (v9).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ModelError;

/// `[parallel]` of a campaign: the entries of a pass run at the same time, each on its own
/// lane of `gpus_per_entry` GPUs, placed by `receipts::rules::placement` from the round's
/// `passSeed`. Absent: one run at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ParallelSpec {
    /// The GPUs of the machine the round uses, numbered from 0 (on a host without them,
    /// placeholders: content/noise.md, Parallel passes). At most [`ParallelSpec::MAX_GPUS`].
    pub gpus: u32,
    /// GPUs each run gets (default 1); `gpus / gpus_per_entry` lanes, at least 2.
    #[serde(default = "one")]
    pub gpus_per_entry: u32,
}

fn one() -> u32 {
    1
}

impl ParallelSpec {
    /// Most GPUs `[parallel] gpus` names.
    pub const MAX_GPUS: u32 = 64;

    /// Fewest lanes a parallel round runs on: the A/A control needs GPUs other than the
    /// baseline's.
    pub const MIN_LANES: u32 = 2;

    /// Runs a wave holds at most, `gpus / gpus_per_entry`; `None` below
    /// [`Self::MIN_LANES`] (a `gpus_per_entry` of 0 included).
    pub fn lanes(&self) -> Option<u32> {
        (self.gpus.checked_div(self.gpus_per_entry)).filter(|&lanes| lanes >= Self::MIN_LANES)
    }

    /// [`Self::lanes`], checked with `gpus` at most [`Self::MAX_GPUS`].
    ///
    /// Errors: [`ModelError::InvalidField`] when `gpus` is over [`Self::MAX_GPUS`] or
    /// the lanes are fewer than [`Self::MIN_LANES`].
    pub fn validate(&self) -> Result<u32, ModelError> {
        if self.gpus > Self::MAX_GPUS {
            return Err(ModelError::InvalidField {
                field: "parallel.gpus".into(),
                value: self.gpus.to_string(),
                rule: format!("must be at most {}", Self::MAX_GPUS),
            });
        }
        self.lanes().ok_or_else(|| ModelError::InvalidField {
            field: "parallel.gpus_per_entry".into(),
            value: self.gpus_per_entry.to_string(),
            rule: format!(
                "`gpus / gpus_per_entry` ({} / {}) must give at least {} lanes",
                self.gpus,
                self.gpus_per_entry,
                Self::MIN_LANES
            ),
        })
    }
}

/// `[isolation]` of a campaign: how the runner isolates engines on the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IsolationSpec {
    /// Whether each engine and the load client get CPU sets of their own (default
    /// `true`). `false` where the host has too few CPUs for every engine of a wave and
    /// its client (CI: 2): engines and clients share every CPU, recorded as pinning
    /// `none` and in the receipt's `parallel.pin`.
    #[serde(default = "yes")]
    pub pin: bool,
}

fn yes() -> bool {
    true
}

/// One GPU a run was given (v9): its UUID and PCI bus id as the driver names them, or
/// `placeholder` for both where the host has no such device.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GpuDevice {
    /// Its number among the round's GPUs, from 0.
    pub index: u32,
    /// Its UUID (`GPU-…`), or `placeholder`.
    pub uuid: String,
    /// Its PCI bus id (`0000:17:00.0`), or `placeholder`.
    pub bus_id: String,
}

impl GpuDevice {
    /// What a device the host does not have records.
    pub const PLACEHOLDER: &'static str = "placeholder";

    /// The placeholder for GPU `index`.
    pub fn placeholder(index: u32) -> Self {
        Self {
            index,
            uuid: Self::PLACEHOLDER.to_owned(),
            bus_id: Self::PLACEHOLDER.to_owned(),
        }
    }
}

/// What a parallel round records of its layout (v9; content/noise.md, Parallel passes).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ParallelRecord {
    /// The campaign's `[parallel] gpus`.
    pub gpus: u32,
    /// The campaign's `[parallel] gpus_per_entry`.
    pub gpus_per_entry: u32,
    /// `gpus / gpusPerEntry`: runs a wave holds at most.
    pub lanes: u32,
    /// The campaign's `[isolation] pin`: whether engines got CPU sets of their own.
    pub pin: bool,
    /// The round's GPUs, by index.
    pub devices: Vec<GpuDevice>,
}

/// Where one run of a pass ran (v9): its wave and its lane, aligned with the pass's
/// `order` (`receipts::rules::placement`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunPlacement {
    /// The wave, from 0: a wave starts when the one before it ended.
    pub wave: u32,
    /// The lane, from 0: GPUs `lane · gpusPerEntry` up to the next lane's first.
    pub lane: u32,
}

#[cfg(test)]
mod tests {
    use crate::model::Campaign;

    fn campaign(extra: &str) -> Result<Campaign, crate::model::ModelError> {
        Campaign::from_toml(
            "c.toml",
            &format!(
                "id = \"p\"\n[model]\nname = \"tiny\"\n[baseline]\nrepo = \"b\"\n\
                 commit = \"0123456789abcdef0123456789abcdef01234567\"\n{extra}"
            ),
        )
    }

    #[test]
    fn parallel_needs_two_lanes_and_pin_defaults_to_true() {
        let serial = campaign("").unwrap();
        assert_eq!((serial.parallel, serial.pins_cpus()), (None, true));
        let text = serde_json::to_string(&serial).unwrap();
        assert!(
            !text.contains("parallel") && !text.contains("isolation"),
            "{text}"
        );
        let parallel = campaign("[parallel]\ngpus = 8\ngpus_per_entry = 2").unwrap();
        assert_eq!(parallel.parallel.and_then(|p| p.lanes()), Some(4));
        assert!(!campaign("[isolation]\npin = false").unwrap().pins_cpus());
        for refused in [
            "[parallel]\ngpus = 1",
            "[parallel]\ngpus = 4\ngpus_per_entry = 3",
            "[parallel]\ngpus = 4\ngpus_per_entry = 0",
            "[parallel]\ngpus = 65",
            "[parallel]\ngpus = 2\nlanes = 2",
        ] {
            assert!(campaign(refused).is_err(), "{refused}");
        }
    }
}
